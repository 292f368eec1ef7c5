"""What leaves gpuconf: verification of rendered documents, the writer, the override report, diffs and summaries."""

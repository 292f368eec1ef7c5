"""JSON Schemas gpuconf ships: the intent language and the upstream schemas it verifies output against."""

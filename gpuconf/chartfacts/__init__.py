"""A GPU Operator chart as gpuconf knows it: reading a chart as `helm pull` gives it (source), deriving its facts and
capabilities from its own files (derive), and the releases' upgrade rule (releases). The maintainers' derivation
(tools/derivation/charts.py) and `gpuconf chart add` run the same code, so a chart a user adds is described exactly
as a shipped one is."""

"""Adoption: draft an intent from an installation gpuconf did not render (Helm values, --set flags, ConfigMaps, a live
ClusterPolicy), with one reported outcome per values path, and the effective-values comparison that proves it."""

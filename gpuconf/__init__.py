"""gpuconf: declarative, validated configuration for the NVIDIA GPU Operator."""

__version__ = "0.1.0"

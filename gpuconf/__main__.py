"""Allow `python -m gpuconf`."""

from .entry import run

if __name__ == "__main__":
    run()

#!/usr/bin/env python3
"""Derive gpuconf's GPU catalogue, chart facts and test fixtures from the shared reference folder.

Run from the repository root (maintainers only; a user's clone has no reference folder):

    python tools/derive_reference.py [--reference ../shared/reference] [--check]

Writes profiles/gpus.json, profiles/charts/<version>.json and index.json, profiles/dcgm-metrics.json,
profiles/platforms.json and tests/fixtures/h200-mig-placements.json, one module of tools/derivation/ per source: gpus (the catalogue, checked
against the H200 readings of h200), charts (every release, read by gpuconf.chartfacts), dcgm and platforms.
The output is byte-stable (sorted keys, fixed indentation, input hashes instead of timestamps), so running
the script twice changes nothing. Any input it needs that is missing or malformed stops it with an error.
Only the standard library and ruamel.yaml are used.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from derivation import charts, dcgm, gpus, platforms  # noqa: E402 - one module per source
from derivation.common import DeriveError, Reference, arguments, run  # noqa: E402
from derivation.gpus import EXTRA_GPUS, build_extra_models, check_pci_ids  # noqa: E402
from derivation.h200 import check_h200_real, parse_h200_smi  # noqa: E402
from derivation.platforms import EC2_NODECLASS_CRD, PLATFORM_FACTS, build_platforms  # noqa: E402

#: What this script offers to the tests that load it by path, beside derive and main.
__all__ = ["EC2_NODECLASS_CRD", "EXTRA_GPUS", "PLATFORM_FACTS", "DeriveError", "Reference", "build_extra_models",
           "build_platforms", "check_h200_real", "check_pci_ids", "derive", "main", "parse_h200_smi"]


def derive(reference: Path) -> dict[str, bytes]:
    """Every output file (repository-relative path -> bytes) derived from the reference folder."""
    ref = Reference(reference)
    outputs, models = gpus.derive(ref)
    outputs.update(charts.derive(ref))
    outputs.update(dcgm.derive(ref))
    outputs.update(platforms.derive(ref, models))
    return dict(sorted(outputs.items()))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: derive, then write (or with --check, compare)."""
    args = arguments(__doc__, "exit 1 if a committed file differs; write nothing").parse_args(argv)
    return run("derive_reference", lambda: derive(args.reference), args.check)


if __name__ == "__main__":
    sys.exit(main())

"""Shared test helpers: paths and an in-process CLI runner."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
#: The examples: examples/*.yaml, then one per platform in examples/platforms/ (stems are unique: golden trees and
#: node fixtures are named after them).
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "examples" / "platforms").glob("*.yaml"))
CASES = ROOT / "tests" / "cases"


def without_queueing(example: Path, folder: Path) -> Path:
    """A copy of an example without its spec.queueing block (Kueue off: ResourceQuotas and plain probes again)."""
    text = example.read_text(encoding="utf-8")
    start = text.index("\n  queueing:\n")
    end = re.search(r"\n  [a-z]", text[start + 1:]).start() + start + 1
    path = folder / example.name
    path.write_text(text[:start] + text[end:], encoding="utf-8")
    return path


@pytest.fixture
def run():
    """Invoke the gpuconf CLI in-process; returns click's Result (stdout, stderr, exit_code)."""
    from gpuconf.cli import main

    def invoke(*args: str, input: str | bytes | None = None):
        return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False, prog_name="gpuconf")

    return invoke

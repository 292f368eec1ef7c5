"""`gpuconf --help` is served from gpuconf/help.txt without importing click (issue 32: at most 1.2x bare Python
start-up): the committed text is what click itself prints at its default width, the fast path gives way to click
wherever click would print something else, and `make docs-gen` keeps the file current."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

HELP = (ROOT / "gpuconf" / "help.txt").read_text(encoding="utf-8")
CLICK = "import sys; from gpuconf.cli import main; main(prog_name='gpuconf')"  # click's own --help, no fast path
ENTRY = "import sys; import gpuconf.entry as e; e.run(); print(sorted({'click', 'pydantic'} & set(sys.modules)), " \
        "file=sys.stderr)"


def _run(code: str, *args: str, columns: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("columns", ["80", "120", "400", None])
def test_the_committed_help_is_what_click_prints_at_its_default_width(columns):
    assert _run(CLICK, "--help", columns=columns).stdout == HELP


@pytest.mark.parametrize("option", ["--help", "-h"])
def test_gpuconf_help_is_served_without_click(option):
    done = _run(ENTRY, option, columns="100")
    assert done.returncode == 0
    assert done.stdout == HELP
    assert done.stderr == "[]\n"  # neither click nor pydantic was imported


@pytest.mark.parametrize("args, columns", [(["--help"], "60"), (["render", "--help"], "100"), (["--version"], None)])
def test_anything_else_goes_to_click(args, columns):
    done = _run(ENTRY, *args, columns=columns)
    assert done.stdout == _run(CLICK, *args, columns=columns).stdout != HELP


def test_make_docs_gen_writes_the_help_file():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docs_gen
    finally:
        sys.path.remove(str(ROOT / "tools"))
    assert docs_gen.help_text() == HELP, "gpuconf/help.txt is stale: run make docs-gen"

"""Golden negative cases: tests/cases/<name>/intent.yaml and the exact diagnostics it must produce.

expected-errors.txt holds what `gpuconf validate intent.yaml` prints on stdout (run from the case folder),
then a last line `exit: N`. A case with a before.yaml is a transition case: before.yaml is rendered into a folder and
the command is `gpuconf validate intent.yaml --against FOLDER --warnings-as-errors`. Regenerate with `make golden` and review the diff.
"""

from __future__ import annotations

import os
import re

import pytest

from conftest import CASES

REGEN = os.environ.get("GPUCONF_REGEN") == "1"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "intent.yaml").exists())
LINE = re.compile(r"^intent\.yaml:\d+:\d+: (error|warning) GC\d{3}[ :]")


def _actual(run, case, monkeypatch, tmp_path) -> str:
    monkeypatch.chdir(case)
    if (case / "before.yaml").exists():
        # A transition case (GC370-GC379): before.yaml is what the cluster runs; its rendered folder is the deployed
        # state, and the warnings about the move to intent.yaml fail the run with --warnings-as-errors.
        assert run("render", "before.yaml", "-o", str(tmp_path / "out")).exit_code == 0
        result = run("validate", "intent.yaml", "--against", str(tmp_path / "out"), "--warnings-as-errors")
    else:
        result = run("validate", "intent.yaml")
    return result.stdout + f"exit: {result.exit_code}\n"


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_case(run, case, monkeypatch, tmp_path):
    actual = _actual(run, case, monkeypatch, tmp_path)
    expected_file = case / "expected-errors.txt"
    if REGEN:
        expected_file.write_text(actual, encoding="utf-8")
    expected = expected_file.read_text(encoding="utf-8")
    assert actual == expected
    lines = expected.splitlines()
    assert lines[-1] == "exit: 1", "a negative case must fail validation"
    assert lines[:-1], "a negative case must print at least one finding"
    for line in lines[:-1]:
        assert LINE.match(line), f"not FILE:LINE:COL: severity CODE: {line}"


def test_corpus_size():
    assert len(CASE_DIRS) >= 60


def test_every_code_has_a_case():
    from gpuconf.intent.loader import TITLES as loader_codes
    from gpuconf.intent.rules import rule_codes
    from gpuconf.intent.typecheck import TITLES as type_codes

    seen = set()
    for case in CASE_DIRS:
        seen.update(re.findall(r" (GC\d{3})[ :]", (case / "expected-errors.txt").read_text(encoding="utf-8")))
    # GC110 (unreadable file) needs a permission error, which a checked-in file cannot carry; tests/test_cli covers it.
    wanted = (set(loader_codes) - {"GC110"}) | set(type_codes) | {code for code, _ in rule_codes()}
    assert sorted(wanted - seen) == []


def test_every_rule_is_explained_in_the_reference():
    """A rule's docstring is its explanation on docs/reference/findings.md (tools/docs_gen.py, `make docs-gen`)."""
    from gpuconf.intent.rules import RULES

    assert [r.code for r in RULES if not (r.check.__doc__ or "").strip()] == []
    page = (CASES.parent.parent / "docs" / "reference" / "findings.md").read_text(encoding="utf-8")
    for r in RULES:
        assert " ".join(r.check.__doc__.split()) in page, f"{r.code}: run `make docs-gen`"

"""The command line: exit codes, output formats, stdin, help speed-critical laziness."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import CASES, EXAMPLES, ROOT


def test_json_format_has_the_documented_keys(run):
    case = next(p for p in sorted(CASES.iterdir()) if (p / "intent.yaml").exists())
    result = run("validate", "--format", "json", str(case / "intent.yaml"))
    assert result.exit_code == 1
    findings = json.loads(result.stdout)
    assert findings
    for f in findings:
        assert list(f) == sorted(["file", "line", "column", "severity", "code", "path", "message", "hint"])


def test_valid_file_json_is_empty_array(run):
    result = run("validate", "--format", "json", str(EXAMPLES[0]))
    assert (result.exit_code, result.stdout) == (0, "[]\n")


def test_missing_file_is_a_usage_error(run):
    result = run("validate", "does-not-exist.yaml")
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


def test_unknown_flag_is_a_usage_error(run):
    assert run("validate", "--frobnicate", str(EXAMPLES[0])).exit_code == 2


def test_no_files_is_a_usage_error(run):
    assert run("validate").exit_code == 2


def test_stdin(run):
    text = EXAMPLES[0].read_text(encoding="utf-8")
    assert run("validate", "-", input=text).exit_code == 0
    bad = run("validate", "-", input=text.replace("gpusPerNode: ", "gpusPerNod: "))
    assert bad.exit_code == 1
    assert bad.stdout.startswith("<stdin>:") and "GC201" in bad.stdout


def test_warnings_fail_only_when_asked(run, tmp_path):
    intent = tmp_path / "w.yaml"
    text = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8")
    intent.write_text(text.replace("  pools:\n", "  sharingProfiles:\n    unused:\n      timeSlicing: {replicas: 2}\n  pools:\n"))
    assert run("validate", str(intent)).exit_code == 0
    assert run("validate", "--warnings-as-errors", str(intent)).exit_code == 1


def test_summary_of_the_reference_example(run):
    result = run("validate", "--summary", str(ROOT / "examples" / "heterogeneous.yaml"))
    assert result.exit_code == 0
    assert "ml-prod" in result.stdout
    assert "512 nvidia.com/gpu.shared" not in result.stdout  # L4 time-slicing is not renamed
    assert "96 nvidia.com/gpu" in result.stdout  # 6 nodes x 4 L4 x 4 replicas
    assert "32 nvidia.com/mig-3g.40gb" in result.stdout  # 4 nodes x 8 GPUs x 1


def test_summary_shows_an_autoscaled_pools_range_and_totals_its_maximum(run):
    result = run("validate", "--summary", str(ROOT / "examples" / "platforms" / "gke.yaml"))
    assert result.exit_code == 0
    row = next(line.split() for line in result.stdout.splitlines() if line.strip().startswith("l4-serving"))
    assert row[:4] == ["l4-serving", "L4", "0-4", "8"]  # minNodes 0, nodes 4: 4 x 2 GPUs at most
    assert "total: 2 pools, 6 nodes, 24 GPUs" in result.stdout


def test_init_refuses_to_overwrite(run, tmp_path):
    target = tmp_path / "intent.yaml"
    assert run("init", "-o", str(target)).exit_code == 0
    assert run("init", "-o", str(target)).exit_code == 2


def test_init_writes_the_schema_its_first_line_names(run, tmp_path):
    """Editors find the schema offline: the starter names a file beside it, and `init -o` writes that file."""
    import jsonschema
    from ruamel.yaml import YAML

    target = tmp_path / "clusters" / "prod.yaml"
    result = run("init", "-o", str(target))
    assert result.exit_code == 0
    first = target.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=cluster-intent.schema.json"
    schema_file = target.parent / "cluster-intent.schema.json"
    assert schema_file.read_text(encoding="utf-8") == run("schema").stdout
    assert f"and {schema_file}" in result.stderr
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    data = YAML(typ="safe").load(target.read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []
    # a second intent in the folder keeps the schema that is there (`gpuconf schema -o` refreshes it)
    schema_file.write_text("{}\n", encoding="utf-8")
    result = run("init", "-o", str(target.parent / "dev.yaml"))
    assert result.exit_code == 0 and "schema editors read" not in result.stderr
    assert schema_file.read_text(encoding="utf-8") == "{}\n"


def test_catalog_and_rules_listings(run):
    assert "H100-80GB" in run("catalog").stdout
    shown = run("catalog", "--gpu", "H200").stdout
    assert "{0,4}:4" in shown and "all-balanced" in shown
    assert run("catalog", "--gpu", "H9000").exit_code == 2
    listing = run("rules").stdout
    assert "GC101" in listing and "GC306" in listing


def test_internal_errors_are_reported_as_such(run, monkeypatch):
    import gpuconf.intent.validate

    def boom(*_a, **_k):
        raise RuntimeError("injected")

    monkeypatch.setattr(gpuconf.intent.validate, "validate_document", boom)
    from click.testing import CliRunner

    from gpuconf.cli import main

    result = CliRunner().invoke(main, ["validate", str(EXAMPLES[0])])
    assert result.exit_code == 3
    assert "internal error: RuntimeError: injected" in result.stderr


def test_help_does_not_import_heavy_modules():
    code = ("import sys; from gpuconf.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('pydantic', 'jsonschema', 'kubernetes_validate', 'jinja2', 'ruamel.yaml') "
            "if m in sys.modules)\nprint(heavy, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "[]"


def test_python_dash_m_works():
    done = subprocess.run([sys.executable, "-m", "gpuconf", "validate", str(EXAMPLES[0])], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("args, code", [(["catalog"], 0), (["validate", "missing.yaml"], 2),
                                        (["validate", "tests/cases/rule-override-value-wrong-type/intent.yaml"], 1)])
def test_the_command_keeps_exit_codes_and_flushes_everything(run, args, code):
    # gpuconf.cli:run leaves with os._exit: every byte main printed must still arrive, with main's exit code.
    done = subprocess.run([sys.executable, "-m", "gpuconf", *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == code, done.stderr
    in_process = run(*args)
    assert (done.stdout, done.stderr) == (in_process.stdout, in_process.stderr)


def test_the_command_writes_a_long_output_whole():
    schema = subprocess.run([sys.executable, "-m", "gpuconf", "schema"], capture_output=True, text=True, check=True)
    assert schema.stdout == (ROOT / "schemas" / "cluster-intent.schema.json").read_text(encoding="utf-8")


def _entry_state(monkeypatch) -> dict:
    """What gpuconf.entry.run has set when it hands over to the command line (the command itself replaced)."""
    import gc

    import gpuconf.cli
    import gpuconf.entry

    seen: dict = {}

    def command() -> None:
        seen.update(gc=gc.isenabled(), plugins=os.environ.get("PYDANTIC_DISABLE_PLUGINS"))

    monkeypatch.setattr(gpuconf.cli, "run", command)
    was = gc.isenabled()
    try:
        gpuconf.entry.run()
    finally:
        if was:
            gc.enable()
    return seen


def test_the_command_runs_without_the_cyclic_collector_and_without_pydantic_plugin_discovery(monkeypatch):
    """The console script and `python -m gpuconf` start in gpuconf.entry: the collector is off before click, pydantic
    and the models are imported, and pydantic's scan of every installed distribution's entry points is skipped
    (issue 21, item 15)."""
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    assert _entry_state(monkeypatch) == {"gc": False, "plugins": "__all__"}


@pytest.mark.parametrize("value", ["", "logfire"])
def test_a_pydantic_plugin_setting_of_the_caller_is_kept(monkeypatch, value):
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", value)
    assert _entry_state(monkeypatch) == {"gc": False, "plugins": value}


def test_both_ways_of_starting_the_command_go_through_the_entry():
    import re

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # tomllib is Python 3.11+; 3.10 is supported
    scripts = re.search(r"^\[project\.scripts\]\n((?:[^\[\n].*\n)*)", pyproject, re.M).group(1).strip()
    assert scripts == 'gpuconf = "gpuconf.entry:run"'
    code = ("import runpy, sys, gc, gpuconf.cli\n"
            "gpuconf.cli.run = lambda: print(gc.isenabled(), sorted(m for m in sys.modules if m.startswith('pydantic')))\n"
            "runpy.run_module('gpuconf', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "False []"

"""The bundled examples: each validates cleanly, each carries the schema line, together they use every section."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, ROOT


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_is_valid_without_findings(example):
    from gpuconf.intent.validate import validate_path

    result = validate_path(example)
    assert result.findings == []
    assert result.intent is not None


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_starts_with_schema_line(example):
    first = example.read_text(encoding="utf-8").splitlines()[0]
    relative = "../" * (len(example.relative_to(ROOT / "examples").parts)) + "schemas/cluster-intent.schema.json"
    assert first == f"# yaml-language-server: $schema={relative}"
    assert (example.parent / relative).resolve() == ROOT / "schemas" / "cluster-intent.schema.json"


def test_examples_validate_together(run):
    result = run("validate", *[str(p) for p in EXAMPLES])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert sorted(result.stderr.splitlines()) == sorted(f"{p}: valid" for p in EXAMPLES)


def _intents():
    from gpuconf.intent.validate import validate_path

    return {p.name: validate_path(p).intent for p in EXAMPLES}


def test_examples_cover_every_section():
    intents = _intents().values()
    specs = [i.spec for i in intents]
    sections = {name for s in specs for name in type(s).model_fields if getattr(s, name) not in (None, [], {})}
    assert sections == set(type(specs[0]).model_fields)
    kinds = {kind for i in intents for p in i.spec.pools for kind in _kinds(i, p)}
    assert {"exclusive", "time-slicing", "mps", "mig"} <= kinds


def _kinds(intent, pool):
    from gpuconf import plan

    return set(plan.sharing_kind(plan.pool_profile(intent, pool)).split("+"))


def test_required_scenarios_are_present():
    from gpuconf import plan

    intents = _intents()
    single = intents["single-pool.yaml"]
    assert len(single.spec.pools) == 1 and single.spec.pools[0].sharing == "exclusive"

    het = intents["heterogeneous.yaml"]
    by_name = {p.name: p for p in het.spec.pools}
    assert by_name["train-h100"].gpu == "H100-80GB" and by_name["train-h100"].taints
    assert len(plan.mig_layout(plan.pool_profile(het, by_name["infer-a100"]), _model("A100-80GB"))) > 1
    assert plan.pool_profile(het, by_name["notebooks-l4"]).time_slicing is not None
    assert plan.mig_strategy(het) == "mixed"

    hybrid = intents["hybrid.yaml"]
    drivers = [p.driver for p in hybrid.spec.pools if p.driver is not None]
    assert any(d.preinstalled for d in drivers) and any(d.version for d in drivers)

    air = intents["airgapped.yaml"]
    assert air.spec.operator.registry and air.spec.operator.image_pull_secrets
    assert air.spec.teams and all(t.quota for t in air.spec.teams)
    assert air.spec.access.admins and air.spec.access.developers and air.spec.access.observers
    assert air.spec.monitoring.alerts.gpu_temp_celsius == 80


def _model(model_id):
    from gpuconf import catalog

    return catalog.gpu_model(model_id)


def test_reference_example_is_the_demo():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "REFERENCE := examples/heterogeneous.yaml" in makefile


def test_starter_intent_validates(run):
    result = run("init")
    assert result.exit_code == 0
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    assert validate_document(load_text(result.stdout, "starter.yaml")).findings == []


def test_make_demo_installs_the_runtime_dependencies_only_and_make_test_the_extras(tmp_path):
    """A fresh clone's `make demo` installs what a render needs (issue 32: the extras took it to four minutes), and
    `make test` adds the test and documentation extras; the README says which does what. pip itself is brought up to
    date first (the launcher of pip 23 imports re: tests/test_package.py)."""
    import shutil
    import subprocess

    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)  # a clone without .venv: make -n lists every step it would run

    def steps(target):
        done = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stdout.splitlines() if " -m pip --disable-pip-version-check install " in line]
        # pip's output (and the build backend's warnings it passes on) goes to a log, shown only when pip fails.
        assert all(line.endswith(">> .venv/pip.log 2>&1 || { cat .venv/pip.log; exit 1; }") for line in lines)
        return [line.split(" install ", 1)[1].split(" >> ")[0] for line in lines]

    assert steps("demo") == ["--upgrade pip", "-e ."]
    assert steps("test") == ["--upgrade pip", "-e .", "-e '.[test,docs]'"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo   # bootstraps .venv, updates its pip, installs gpuconf with its runtime dependencies only" \
        in readme
    assert "make test   # bootstraps .venv, adds the test and documentation extras" in readme

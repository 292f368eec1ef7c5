"""Fuzz tests of what a stranger's pull request hands gpuconf in CI (issue 29): `import --values` of arbitrary values
files and `diff --against` of arbitrarily edited rendered folders.

Whatever the input: the exit code is 0, 1 or 2, no traceback and no internal error is printed, and a refusal
writes nothing (import: no draft, no schema, no report; diff never writes, and leaves the folder it reads as it was).
Derandomized, as the other property tests in CI (tests/test_emit.py, tests/test_report.py): the same examples
every run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import example as seed
from hypothesis import strategies as st

from conftest import ROOT

#: GPUCONF_FUZZ_EXAMPLES=2000 for a longer search (still derandomized: the first 60 are CI's).
_SETTINGS = settings(max_examples=int(os.environ.get("GPUCONF_FUZZ_EXAMPLES", "60")), deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.function_scoped_fixture])

#: Values and keys a hostile file is made of: what YAML readers disagree about, what breaks a line, a log or
#: Markdown, numbers past every type, and the chart's own keys (so that the importer goes deep, not only drops).
_TEXT = ["", " ", "on", "yes", "null", "~", "1.10", "0777", "0x1F", "1e3", "1:20", "a\nb", "1\n::error title=x::ok",
         "##[error]x", "\u2028", "\x07", "\x1b[31m", "`x` <img src=x> [a](javascript:x) <!--", "'", '"', "\\", "%",
         "{{ .Values }}", "$(id)", "-1", "9" * 30, "ünï"]
_KEYS = ["driver", "version", "enabled", "toolkit", "devicePlugin", "config", "name", "default", "mig", "strategy",
         "migManager", "dcgmExporter", "serviceMonitor", "node-feature-discovery", "worker", "gpu-operator",
         "operator", "daemonsets", "tolerations", "nodeSelector", "repository", "image", "sharing", "timeSlicing",
         "resources", "replicas", "cdi", "upgradePolicy", "maxParallelUpgrades", "kind", "apiVersion", "metadata",
         "spec", "data", "1", "true", "a.b", "x\ny"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.sampled_from([10 ** 400, -10 ** 320]),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_TEXT), st.text(max_size=12))
keys = st.one_of(st.sampled_from(_KEYS), st.text(min_size=1, max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=5)), max_leaves=30)


def _yaml(value) -> str:
    """value as YAML text: yaml.safe_dump where it can (floats, huge ints, odd strings), else JSON (which is YAML)."""
    try:
        return yaml.safe_dump(value, allow_unicode=True)
    except (yaml.YAMLError, ValueError, RecursionError):
        return json.dumps(value, default=str)


#: Texts no structure generates: broken syntax, deep nesting, YAML's features gpuconf refuses, encodings.
_RAW = [b"a: [", b"a: b: c", b"\t- x", b"[" * 3000 + b"]" * 3000, b"{a: " * 600 + b"1" + b"}" * 600,
        b"&x a: *x", b"!!python/object:os.system x", b"a: 1\n---\nb: 2", b"\xff\xfe a", b"\xef\xbb\xbfa: 1",
        b"a: 1\r\nb: 2", b"a: " + b"9" * 4400, b"a: 0x" + b"f" * 3700, b"? [a]\n: b", b"<<: {a: 1}", b"\x00"]
files = st.one_of(values.map(lambda v: _yaml(v).encode("utf-8")),
                  st.dictionaries(st.sampled_from(["gpu-operator"] + _KEYS[:12]), values, min_size=1, max_size=4)
                  .map(lambda v: _yaml(v).encode("utf-8")),
                  st.sampled_from(_RAW), st.binary(max_size=64))


def _outcome_is_clean(result) -> None:
    output = result.stdout + result.stderr
    assert result.exit_code in (0, 1, 2), output
    assert "Traceback" not in output and "internal error" not in output, output


#: Crash classes found since (issue 46), seeds of every run: a values section given as a scalar.
SCALAR_SECTIONS = (b"driver: 3\n", b"devicePlugin: x\n", b"migManager: [1]\n", b"daemonsets: true\n")


@_SETTINGS
@seed(text=SCALAR_SECTIONS[0])
@seed(text=SCALAR_SECTIONS[1])
@given(text=files)
def test_import_values_of_anything_exits_0_1_or_2_and_a_refusal_writes_nothing(run, tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("import")
    path = folder / "values.yaml"
    path.write_bytes(text)
    note(repr(text[:300]))
    result = run("import", "--values", str(path), "-o", str(folder / "intent.yaml"), "--report",
                 str(folder / "report.json"))
    _outcome_is_clean(result)
    written = sorted(p.name for p in folder.iterdir())
    if result.exit_code == 2:
        assert written == ["values.yaml"], result.stderr
    else:
        assert "intent.yaml" in written, result.stderr


NODES = ROOT / "tests" / "fixtures" / "nodes" / "airgapped-drift.json"


@settings(_SETTINGS, max_examples=max(1, _SETTINGS.max_examples // 4))
@seed(text=SCALAR_SECTIONS[0])
@seed(text=SCALAR_SECTIONS[1])
@seed(text=SCALAR_SECTIONS[2])
@seed(text=SCALAR_SECTIONS[3])
@given(text=files)
def test_import_values_with_nodes_of_anything_exits_0_1_or_2_and_a_refusal_writes_nothing(run, tmp_path_factory,
                                                                                         text):
    """The same with --nodes: the first sync's plan reads the values too (`driver: 3` was exit 3 there)."""
    folder = tmp_path_factory.mktemp("import-nodes")
    path = folder / "values.yaml"
    path.write_bytes(text)
    note(repr(text[:300]))
    result = run("import", "--values", str(path), "--nodes", str(NODES), "-o", str(folder / "intent.yaml"))
    _outcome_is_clean(result)
    if result.exit_code == 2:
        assert sorted(p.name for p in folder.iterdir()) == ["values.yaml"], result.stderr


# --- diff --against an edited folder ------------------------------------------------------------------------------

EXAMPLES = ("single-pool", "platforms/eks")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Each example rendered once: example -> (intent path, the rendered -o folder)."""
    from click.testing import CliRunner

    from gpuconf.cli import main

    out = {}
    for example in EXAMPLES:
        folder = tmp_path_factory.mktemp("rendered")
        intent = ROOT / "examples" / f"{example}.yaml"
        result = CliRunner().invoke(main, ["render", str(intent), "-o", str(folder)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        out[example] = (intent, folder)
    return out


def _paths(node, path=()):
    """Every path into a parsed document, the document itself first."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*path, i))


def _replaced(node, path, value):
    if not path:
        return value
    node[path[0]] = _replaced(node[path[0]], path[1:], value)
    return node


#: What a hand edit puts where gpuconf wrote a mapping, a list or a name: the wrong shape, most of the time.
_WRONG = st.sampled_from([True, False, None, 0, -1, "", "x", [], ["gpu-operator"], [True], {}, {"a": 1}, [{}]])


@st.composite
def edits(draw, files: list[str]):
    """A list of edits of a rendered folder: (file, how, payload); a value edit replaces the node at one path of one
    document, a shallow one (metadata, spec, resources: where shapes matter) half of the time."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        file = draw(st.sampled_from(files))
        how = draw(st.sampled_from(["value", "value", "value", "text", "delete"]))
        if how == "value":
            out.append((file, how, (draw(st.integers(0, 10 ** 6)), draw(st.booleans()),
                                    draw(st.one_of(_WRONG, values)))))
        elif how == "text":
            out.append((file, how, draw(st.one_of(st.sampled_from(_RAW), st.binary(max_size=64)))))
        else:
            out.append((file, how, None))
    return out


def _apply(folder: Path, edit) -> None:
    file, how, payload = edit
    path = folder / file
    if how == "delete":
        path.unlink(missing_ok=True)
        return
    if how == "text":
        path.write_bytes(payload)
        return
    if not path.exists():
        return
    seed, shallow, value = payload
    try:
        if path.suffix == ".json":
            documents = [json.loads(path.read_text(encoding="utf-8"))]
        else:
            documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except (ValueError, yaml.YAMLError, RecursionError):
        return
    if not documents:
        return
    index = seed % len(documents)
    targets = list(_paths(documents[index]))
    if shallow:
        targets = [p for p in targets if 1 <= len(p) <= 3] or targets
    documents[index] = _replaced(documents[index], targets[seed % len(targets)], value)
    if path.suffix == ".json":
        path.write_text(json.dumps(documents[0], default=str), encoding="utf-8")
    else:
        path.write_text("---\n".join(_yaml(d) for d in documents), encoding="utf-8")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("example", EXAMPLES)
def test_diff_against_an_edited_folder_exits_0_1_or_2_and_changes_nothing(run, rendered, tmp_path_factory, example):
    intent, base = rendered[example]
    files = sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())

    @_SETTINGS
    @seed(changes=[("report.json", "text", b'{"pools": 7}')])  # issue 46: exit 3 in the transition rules
    @seed(changes=[("report.json", "text", b'{"pools": [{"name": 7}], "cluster": []}')])
    @given(changes=edits(files))
    def check(changes):
        folder = tmp_path_factory.mktemp("against")
        shutil.copytree(base, folder, dirs_exist_ok=True)
        for edit in changes:
            _apply(folder, edit)
        note(repr(changes)[:600])
        before = _snapshot(folder)
        for fmt in ("text", "markdown"):
            result = run("diff", str(intent), "--against", str(folder), "--format", fmt)
            _outcome_is_clean(result)
        assert _snapshot(folder) == before  # diff never writes, least of all into the folder it reads

    check()

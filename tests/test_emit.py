"""Tests of gpuconf.emit, the one YAML writer: what it writes reads back as the same data in YAML 1.1 and 1.2, and
its own node building gives the bytes PyYAML's SafeRepresenter would."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuconf import emit

_SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Strings a YAML reader is tempted to read as something else, mixed with arbitrary text.
_TRICKY = ["on", "off", "yes", "No", "y", "N", "true", "False", "null", "~", "", " ", "1.10", "0777", "0x1F", "1e3",
           "1:20", "12:30:45", ".inf", "-.NaN", "2026-11-29", "- a", "a: b", "#x", "&a", "*a", "!tag", "%x", "@x",
           "`x", "|", ">", "[1]", "{a: 1}", "a\nb", "a\n", "tab\there", "\u2028", "\x07bell", "ünï", "'q'", '"q"']
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False, allow_infinity=True), st.sampled_from(_TRICKY), st.text(max_size=20))
keys = st.one_of(st.sampled_from(["apiVersion", "kind", "metadata", "spec", "data", "zz", "on", "1"]),
                 st.text(min_size=1, max_size=10))
data = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


def _reference_dump(value: Any, top: bool) -> str:
    """The emitter before gpuconf built its own nodes: PyYAML's SafeRepresenter over a key-sorted copy."""

    class Dumper(yaml.CSafeDumper):  # type: ignore[misc, name-defined]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    Dumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style=emit._style(s)))

    def ordered(v: Any, top: bool = False) -> Any:
        if isinstance(v, dict):
            return {k: ordered(v[k]) for k in (sorted(v, key=emit._top_order) if top else sorted(v))}
        if isinstance(v, list):
            return [ordered(item) for item in v]
        return v

    return yaml.dump(ordered(value, top), Dumper=Dumper, sort_keys=False, default_flow_style=False, width=4096,
                     allow_unicode=True)


@_SETTINGS
@given(data)
def test_bytes_equal_pyyamls_representer(value: Any) -> None:
    assert emit.dump(value) == _reference_dump(value, top=False)
    if isinstance(value, dict):
        assert emit.dump(value, top=True) == _reference_dump(value, top=True)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@_SETTINGS
@given(data)
def test_yaml_1_1_and_1_2_readers_read_back_the_same_data(value: Any) -> None:
    text = emit.dump(value)
    assert _same(yaml.safe_load(text), value), text  # YAML 1.1, as Helm's go-yaml v2 reads it
    assert _same(YAML(typ="safe", pure=True).load(io.StringIO(text)), value), text  # YAML 1.2


def test_documents_lead_with_the_kubernetes_keys_and_start_with_dashes() -> None:
    docs = [{"data": {"b": 1, "a": "on"}, "binaryData": None, "kind": "ConfigMap", "apiVersion": "v1",
             "metadata": {"name": "x"}}, {"kind": "Namespace", "apiVersion": "v1"}]
    assert emit.dump_all(docs) == (
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: \"on\"\n  b: 1\nbinaryData: null\n"
        "---\napiVersion: v1\nkind: Namespace\n")


@pytest.mark.parametrize("value, text", [(1e17, "1.0e+17\n"), (float("inf"), ".inf\n"),
                                         (float("-inf"), "-.inf\n"), (float("nan"), ".nan\n"),
                                         (0.5, "0.5\n"), (True, "true\n"), (None, "null\n")])
def test_scalars_at_the_top(value: Any, text: str) -> None:
    assert emit.dump(value) == text


def test_embedded_files_are_literal_blocks_and_comments_sit_above_their_keys() -> None:
    text = emit.dump({"data": {"config.yaml": "version: v1\nflags: {}\n"}, "mig": {"strategy": "single"}},
                     comments={("mig", "strategy"): "via spec.pools[0] (line 3): MIG pools"})
    assert text == ("data:\n  config.yaml: |\n    version: v1\n    flags: {}\nmig:\n"
                    "  # via spec.pools[0] (line 3): MIG pools\n  strategy: single\n")


def test_a_type_without_a_yaml_form_is_refused() -> None:
    with pytest.raises(TypeError, match="gpuconf writes no set to YAML"):
        emit.dump({"a": {1, 2}})

"""Loader refusals that golden cases cannot carry, and the positions it reports."""

from __future__ import annotations

import pytest

from gpuconf.intent.loader import MAX_BYTES, LoadError, load_bytes, load_file, load_text, locate


def _refusal(raw: bytes) -> str:
    with pytest.raises(LoadError) as info:
        load_bytes(raw, "f.yaml")
    return info.value.finding.text()


def test_alias_bomb_is_refused_before_expansion():
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)]
    assert _refusal("\n".join(lines).encode()) == (
        "f.yaml:1:5: error GC103: YAML anchors are not allowed (&a0) (hint: write the value out in full where it is needed)")


def test_deep_nesting_is_refused_without_recursion_error():
    assert "GC105" in _refusal(b"a: " + b"[" * 5000 + b"]" * 5000)


def test_size_limit_is_checked_before_parsing():
    assert "GC106" in _refusal(b"#" * (MAX_BYTES + 1))
    load_bytes(b"a: 1\n" + b"#" * (MAX_BYTES - 10) + b"\n", "f.yaml")  # just under the limit loads


def test_byte_order_mark_is_accepted():
    assert load_bytes("\ufeffa: 1\n".encode(), "f.yaml").data == {"a": 1}


def test_unreadable_path_is_a_finding(tmp_path):
    with pytest.raises(LoadError) as info:
        load_file(tmp_path, "dir.yaml")
    assert info.value.finding.code == "GC110"


def test_locate_points_at_values_keys_and_parents():
    doc = load_text("a:\n  b: [1, {c: 2}]\n  d: x\n", "f.yaml")
    assert locate(doc.data, ("a", "d")) == (3, 6)
    assert locate(doc.data, ("a", "d"), point_at_key=True) == (3, 3)
    assert locate(doc.data, ("a", "b", 1, "c")) == (2, 14)
    assert locate(doc.data, ("a", "missing", "deeper")) == (2, 3)

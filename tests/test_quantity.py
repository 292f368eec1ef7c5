"""Kubernetes quantities: the one parser (gpuconf/quantity.py) against the grammar and values of apimachinery's
resource.ParseQuantity (quantity.go, suffix.go as Kueue v0.19.2 vendors them), and where gpuconf reads quantities."""

from __future__ import annotations

import copy
from fractions import Fraction

import pytest

import nodelists as NL
from conftest import ROOT

# (text, exact value): every suffix of suffix.go's newSuffixer, the exponent form of suffixHandler.interpret, the
# number forms of the grammar comment, signs, and ParseQuantity's rounding up to whole nano units.
VALUES = [
    ("0", 0), ("8", 8), ("+8", 8), ("-8", -8), ("007", 7),
    ("1n", Fraction(1, 10 ** 9)), ("1u", Fraction(1, 10 ** 6)), ("1m", Fraction(1, 1000)), ("500m", Fraction(1, 2)),
    ("191450m", Fraction(191450, 1000)),
    ("1k", 1000), ("1M", 10 ** 6), ("1G", 10 ** 9), ("1T", 10 ** 12), ("1P", 10 ** 15), ("1E", 10 ** 18),
    ("1Ki", 1024), ("1Mi", 2 ** 20), ("1Gi", 2 ** 30), ("1Ti", 2 ** 40), ("1Pi", 2 ** 50), ("1Ei", 2 ** 60),
    ("3936978068Ki", 3936978068 * 1024),
    ("1e3", 1000), ("1E3", 1000), ("1e+3", 1000), ("1e-3", Fraction(1, 1000)), ("12e6", 12 * 10 ** 6),
    ("1.5", Fraction(3, 2)), ("1.", 1), (".5", Fraction(1, 2)), ("1.G", 10 ** 9), ("1.5e3", 1500),
    ("0.5Ki", 512), ("1.5Gi", 3 * 2 ** 29),
    ("0.1n", Fraction(1, 10 ** 9)), ("1.0000000001", 1 + Fraction(1, 10 ** 9)), ("-0.1n", -Fraction(1, 10 ** 9)),
    ("10Ei", 2 ** 63 - 1),  # a binary-SI value is capped at 2^63-1
]
REFUSED = ["", " 1", "1 ", ".", "+", "1e", "1e1.5", "1KiB", "1k5", "1M-3", "Ki", "1ki", "1K", "0x10", "1_000", "٣",
           "1e99999", "1" * 2000, "1..2", "--1"]


@pytest.mark.parametrize("text, value", VALUES)
def test_a_quantity_has_the_value_the_api_server_parses(text, value):
    from gpuconf.quantity import GRAMMAR, is_quantity, parse

    assert parse(text) == value and isinstance(parse(text), Fraction)
    assert is_quantity(text)
    import re

    assert re.fullmatch(GRAMMAR, text)


@pytest.mark.parametrize("text", REFUSED)
def test_what_the_api_server_refuses_is_no_quantity(text):
    from gpuconf.quantity import QuantityError, count, is_quantity, parse

    with pytest.raises(QuantityError):
        parse(text)
    assert not is_quantity(text) and count(text) is None


@pytest.mark.parametrize("text, units", [("8", 8), ("1k", 1000), ("2e3", 2000), ("1Ki", 1024), ("8000m", 8),
                                         ("500m", None), ("-1", None), ("1.5", None), (None, None)])
def test_count_is_a_whole_number_of_units(text, units):
    from gpuconf.quantity import count

    assert count(text) == units


def test_the_node_list_fixtures_write_quantities_canonically():
    assert [NL.canonical(n) for n in (0, 8, 1000, 1200, 12000, 250 * 4 * 1000, 10 ** 21)] == [
        "0", "8", "1k", "1200", "12k", "1M", "1000E"]


# --- where gpuconf reads quantities -------------------------------------------------------------------------------

REPLICAS_250 = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8").replace(
    "      match:", "      sharing: packed\n      match:").replace(
    "  pools:", "  sharingProfiles:\n    packed: {timeSlicing: {replicas: 250}}\n  pools:")


def test_a_pool_of_250_replicas_is_not_short_on_a_node_that_advertises_1k():
    from gpuconf.cluster.audit import audit

    plan = NL.plan_of(REPLICAS_250)
    nodes = NL.clean_nodes(plan)
    gpu_nodes = [n for n in nodes if "nvidia.com/gpu" in n["status"]["allocatable"]]
    assert {n["status"]["allocatable"]["nvidia.com/gpu"] for n in gpu_nodes} == {"1k"}  # 4 GPUs x 250, as written
    assert [(f.code, f.node, f.message) for f in audit(plan, copy.deepcopy(nodes), "t").findings] == []
    gpu_nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] = "999"
    assert [(f.code, f.message) for f in audit(plan, nodes, "t").findings] == [
        ("GA107", "nvidia.com/gpu below (999 of 1000)")]


def test_the_node_reader_takes_every_form_of_a_quantity_and_refuses_what_the_api_server_refuses():
    from gpuconf.cluster.nodefacts import check_node

    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"nvidia.com/gpu": "1k"}}}
    for good in ("1k", "1e3", "1E3", "1000", "+1000"):
        node["status"]["allocatable"]["nvidia.com/gpu"] = good
        assert check_node(node) is None, good
    for bad in ("1e1.5", "٣", "1KiB"):
        node["status"]["allocatable"]["nvidia.com/gpu"] = bad
        assert check_node(node) == f"status.allocatable['nvidia.com/gpu'] is not a Kubernetes quantity ({bad!r})"


def test_an_intent_quantity_is_one_the_api_server_accepts():
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = (ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8")
    for value, ok in (("512", True), ("5e2", True), ("512000000u", True), ("1e1.5", False), ("-512", False)):
        result = validate_document(load_text(text.replace("{cpu: 512, memory: 4Ti}", f"{{cpu: '{value}', "
                                                          "memory: 4Ti}"), "x.yaml"))
        assert result.ok == ok, (value, [f.text() for f in result.findings])


def test_the_kueue_checks_read_every_suffix(tmp_path):
    from gpuconf.pipeline import render_path

    intent = tmp_path / "x.yaml"
    intent.write_text((ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8").replace(
        "{cpu: 512, memory: 4Ti}", "{cpu: 512000000u, memory: 4Ti}"), encoding="utf-8")
    result = render_path(str(intent), str(tmp_path / "out"))
    assert result.ok, [f.text() for f in result.findings]


def test_the_importer_reads_1k_allocatable_units_of_a_250_replica_node_without_a_gpu_count_label():
    from gpuconf.cluster.importer import draft_intent
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    nodes = NL.clean_nodes(NL.plan_of(REPLICAS_250))
    for node in nodes:
        node["metadata"]["labels"].pop("nvidia.com/gpu.count", None)  # the GPUs come from allocatable / replicas
    result = validate_document(load_text(draft_intent(nodes, "test", "imported").text, "draft.yaml"))
    assert result.ok, [f.text() for f in result.findings]
    [pool] = result.intent.spec.pools
    assert (pool.gpus_per_node, result.intent.spec.sharing_profiles[pool.sharing].time_slicing.replicas) == (4, 250)

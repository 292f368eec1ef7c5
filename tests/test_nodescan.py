"""The audit of a mapped NodeList (cluster/nodescan.py) and of alike nodes judged once (cluster/auditmemo.py) gives
exactly what decoding every node and judging each gives: the same report, byte for byte, for clean and drifted
clusters, for nodes that do not fit the searches, across the split between two processes, and the same error for a
list that breaks off."""

from __future__ import annotations

import copy
import functools
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nodelists as NL
from gpuconf import parallel
from gpuconf.cluster import nodescan
from gpuconf.cluster.audit import Auditor, audit, format_json
from gpuconf.cluster.auditresult import Threshold
from gpuconf.cluster.nodesource import NodeSourceError, read_nodes_file

EXAMPLES = ("heterogeneous", "hybrid", "airgapped", "single-pool")
DRIFTED = tuple(e for e in EXAMPLES if e in NL.DRIFTS)


def _each_judged(plan, path) -> str:
    """The audit as it was: every node decoded whole, and judged on its own."""
    auditor = Auditor(plan, str(path), Threshold.parse(Threshold.DEFAULT))
    auditor.memo.on = False
    for node in read_nodes_file(str(path)):
        auditor.add(node)
    return format_json(auditor.finish())


def _mapped(plan, path) -> str:
    nodes = nodescan.read_nodes(str(path))
    try:
        return format_json(audit(plan, nodes, str(path)))
    finally:
        nodes.close()


def _write(tmp_path, nodes: list[dict], name: str = "nodes.json"):
    path = tmp_path / name
    path.write_text(NL.dumps(NL.nodelist(nodes)), encoding="utf-8")
    return path


def _renamed(node: dict, name: str) -> dict:
    node = copy.deepcopy(node)
    node["metadata"]["name"] = name
    labels = node["metadata"].get("labels", {})
    if "kubernetes.io/hostname" in labels:
        labels["kubernetes.io/hostname"] = name
    return node


def _mapped_nodes(path):
    nodes = nodescan.read_nodes(str(path))
    assert isinstance(nodes, nodescan.MappedNodes)
    return nodes


@pytest.mark.parametrize("example, drift", [(e, False) for e in EXAMPLES] + [(e, True) for e in DRIFTED])
def test_a_mapped_list_audits_as_each_node_decoded(tmp_path, example, drift):
    plan = NL.load_plan(example)
    nodes = NL.drifted_nodes(example, plan) if drift else NL.clean_nodes(plan)
    path = _write(tmp_path, nodes)
    _mapped_nodes(path).close()
    assert _mapped(plan, path) == _each_judged(plan, path)


@pytest.mark.parametrize("example", DRIFTED)
def test_alike_drifted_nodes_get_the_first_ones_findings_under_their_own_names(tmp_path, example):
    """Each drifted node three times over (the copies differ only by name): every copy has its findings, and the
    pool-level ones (counts, GA115, GA109 skew, first sync) count every copy."""
    plan = NL.load_plan(example)
    nodes = []
    for node in NL.drifted_nodes(example, plan):
        name = node["metadata"]["name"]
        nodes += [node, _renamed(node, f"{name}-b"), _renamed(node, f"{name}-c")]
    path = _write(tmp_path, nodes)
    report = json.loads(_mapped(plan, path))
    assert report == json.loads(_each_judged(plan, path))
    found = {(f["code"], f["node"]) for f in report["findings"]}
    first = {(code, node) for code, node in found if node and not node.endswith(("-b", "-c"))}
    assert first and all((code, f"{node}-b") in found and (code, f"{node}-c") in found for code, node in first)


def test_the_split_between_two_processes_audits_as_one(tmp_path, monkeypatch):
    monkeypatch.setattr(nodescan, "SPLIT", 1)
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    plan = NL.load_plan("hybrid")
    path = _write(tmp_path, NL.drifted_nodes("hybrid", plan) + NL.clean_nodes(plan, scale=3)[:40])
    nodes = _mapped_nodes(path)
    try:
        assert nodes.other is not None or not parallel.can_fork()
        got = format_json(audit(plan, nodes, str(path)))
    finally:
        nodes.close()
    assert got == _each_judged(plan, path)


def _odd(plan) -> list[dict]:
    """Nodes that do not fit the searches, or differ from their like only where the key must see it."""
    nodes = NL.clean_nodes(plan)
    base = nodes[1]
    unlabelled = _renamed(base, "node-unlabelled")
    del unlabelled["metadata"]["labels"]
    managed = _renamed(base, "node-managed")
    managed["metadata"]["managedFields"] = [{"manager": "kubelet", "operation": "Update"}]
    no_images = _renamed(base, "node-no-images")
    del no_images["status"]["images"]
    handmade = _renamed(base, "node-handmade")
    for key in ("allocatable", "capacity", "conditions"):
        del handmade["status"][key]
    other_host = _renamed(base, "node-other-host")
    other_host["metadata"]["labels"]["kubernetes.io/hostname"] = "somewhere-else"
    digits = _renamed(base, "node-digits")
    ready = next(c for c in digits["status"]["conditions"] if c["type"] == "Ready")
    ready.update(status="False", reason="KubeletNotReady2")
    digits2 = _renamed(digits, "node-digits2")
    next(c for c in digits2["status"]["conditions"] if c["type"] == "Ready")["reason"] = "KubeletNotReady3"
    unschedulable = _renamed(base, "node-cordoned")
    unschedulable["spec"]["unschedulable"] = True
    kernel = _renamed(base, "node-kernel")
    kernel["status"]["nodeInfo"]["kernelVersion"] = "6.8.0-61-generic"
    gpus = _renamed(base, "node-seven-gpus")
    for key in ("allocatable", "capacity"):
        for resource in [r for r in gpus["status"][key] if r.startswith("nvidia.com/")]:
            gpus["status"][key][resource] = "7"
    return [unlabelled, *nodes, managed, no_images, handmade, other_host, digits, digits2, unschedulable, kernel,
            gpus, _renamed(unlabelled, "node-last")]


@pytest.mark.parametrize("example", ["heterogeneous", "hybrid"])
def test_nodes_that_do_not_fit_or_differ_a_little_audit_as_each_node_decoded(tmp_path, example):
    plan = NL.load_plan(example)
    path = _write(tmp_path, _odd(plan))
    report = _mapped(plan, path)
    assert report == _each_judged(plan, path)
    messages = {f["node"]: f["message"] for f in json.loads(report)["findings"] if f["code"] == "GA113"}
    assert messages["node-digits"].endswith("KubeletNotReady2)")
    assert messages["node-digits2"].endswith("KubeletNotReady3)")


def test_what_the_key_leaves_out_is_what_differs_between_nodes_of_a_group(tmp_path):
    """The key of two nodes of one group is the same: heartbeat times, ids and the hostname label do not count."""
    plan = NL.load_plan("heterogeneous")
    nodes = NL.clean_nodes(plan)
    a, b = nodes[0], _renamed(nodes[0], nodes[0]["metadata"]["name"] + "x")
    for condition in b["status"]["conditions"]:
        condition["lastHeartbeatTime"] = "2026-12-07T10:00:01Z"
    b["status"]["nodeInfo"].update(bootID="0" * 36, machineID="1" * 32, systemUUID="2" * 36)
    b["metadata"]["annotations"]["alpha.kubernetes.io/provided-node-ip"] = "10.9.9.9"
    b["status"]["addresses"][0]["address"] = "10.9.9.9"
    b["status"]["images"] = b["status"]["images"][:2]
    path = _write(tmp_path, [a, b])
    keys = [n.key for n in _mapped_nodes(path)]
    assert keys[0] is not None and keys[0] == keys[1]


@pytest.mark.parametrize("cut, message", [
    (lambda text: text[:len(text) * 2 // 3], "item {last} does not end (no status.nodeInfo, or cut short)"),
    (lambda text: text.replace('"kind": "List"', '"kind": "PodList"'), "a list of kind 'PodList', not a NodeList"),
])
@pytest.mark.parametrize("split", [False, True])
def test_a_list_that_breaks_off_is_the_same_error_split_or_not(tmp_path, monkeypatch, cut, message, split):
    if split:
        monkeypatch.setattr(nodescan, "SPLIT", 1)
        monkeypatch.setattr(parallel, "cores", lambda: 2)
    plan = NL.load_plan("heterogeneous")
    nodes = NL.clean_nodes(plan)
    text = cut(NL.dumps(NL.nodelist(nodes)))
    path = tmp_path / "nodes.json"
    path.write_text(text, encoding="utf-8")
    last = text.count('"kind": "Node"') - 1
    mapped = _mapped_nodes(path)
    with pytest.raises(NodeSourceError) as caught:
        try:
            audit(plan, mapped, str(path))
        finally:
            mapped.close()
    expected = f"{path}: {message.format(last=last)}; expected the output of `kubectl get nodes -o json`"
    assert str(caught.value) == expected


def test_a_node_the_checks_refuse_is_refused_as_the_generic_reader_refuses_it(tmp_path):
    plan = NL.load_plan("heterogeneous")
    nodes = NL.clean_nodes(plan)
    nodes[3]["metadata"]["labels"]["nvidia.com/gpu.product"] = "not a label value"
    path = _write(tmp_path, nodes)
    with pytest.raises(NodeSourceError) as generic:
        list(read_nodes_file(str(path)))
    with pytest.raises(NodeSourceError) as mapped:
        _mapped(plan, path)
    assert str(mapped.value) == str(generic.value)
    assert "item 3 (" in str(mapped.value)


def test_standard_input_a_fifo_and_another_layout_go_to_the_streaming_reader(tmp_path):
    plan = NL.load_plan("single-pool")
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(NL.nodelist(NL.clean_nodes(plan))), encoding="utf-8")
    assert not isinstance(nodescan.read_nodes(str(compact)), nodescan.MappedNodes)
    assert not isinstance(nodescan.read_nodes("-"), nodescan.MappedNodes)
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert not isinstance(nodescan.read_nodes(str(empty)), nodescan.MappedNodes)


def test_a_pool_that_selects_by_hostname_label_judges_each_node(tmp_path):
    """The audit reads kubernetes.io/hostname where a pool selects by it: then no two nodes are alike."""
    text = (NL.ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8")
    nodes = NL.clean_nodes(NL.load_plan("heterogeneous"))
    first = next(n for n in nodes if n["metadata"]["labels"].get("eks.amazonaws.com/nodegroup") == "infer")
    selector = "          eks.amazonaws.com/nodegroup: infer\n"
    assert text.count(selector) == 1
    by_name = f"{selector}          kubernetes.io/hostname: {first['metadata']['name']}\n"
    plan = NL.plan_of(text.replace(selector, by_name))
    path = _write(tmp_path, nodes)
    assert Auditor(plan, str(path)).memo.on is False
    report = _mapped(plan, path)
    assert report == _each_judged(plan, path)
    assert '"GA101"' in report  # the pool's other nodes match no pool now


def test_no_node_text_is_read_past_16_mib(tmp_path):
    """The generic reader's bound on one value holds for a mapped list: a node of 17 MiB (an annotation no API server
    stores: it caps all of a node's annotations at 256 KiB) is refused, its text never decoded."""
    plan = NL.load_plan("single-pool")
    nodes = NL.clean_nodes(plan)
    nodes[1]["metadata"]["annotations"]["huge"] = "x" * (17 << 20)
    path = _write(tmp_path, nodes)
    with pytest.raises(NodeSourceError) as caught:
        _mapped(plan, path)
    assert str(caught.value) == (f"{path}: item 1 does not end within 16 MiB (a Node is far smaller); expected the "
                                 "output of `kubectl get nodes -o json`")


# --- a damaged list ----------------------------------------------------------------------------------------------

_DAMAGED = settings(max_examples=int(os.environ.get("GPUCONF_FUZZ_EXAMPLES", "60")), deadline=None,
                    derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                             HealthCheck.too_slow])


@functools.cache
def _small_list() -> tuple[object, list[bytes]]:
    plan = NL.load_plan("heterogeneous")
    nodes = NL.drifted_nodes("heterogeneous", plan)[:5]
    return plan, NL.dumps(NL.nodelist(nodes)).encode().split(b"\n")


_EDITS = st.lists(st.tuples(st.sampled_from(["drop", "twice", "junk", "cut", "swap"]), st.integers(0, 10_000),
                            st.binary(max_size=12)), min_size=1, max_size=4)


@_DAMAGED
@given(edits=_EDITS)
def test_a_damaged_list_in_kubectls_layout_is_read_or_refused_never_a_crash(tmp_path_factory, edits):
    """Lines dropped, doubled, swapped or cut and bytes thrown in (the head kept, so that the mapped reader takes
    it): the audit reports or refuses the list with a NodeSourceError, and when both readers accept a list they
    report the same."""
    plan, lines = _small_list()
    lines = list(lines)
    for what, at, junk in edits:
        if len(lines) <= 4:
            break
        i = 3 + at % (len(lines) - 3)  # the head (three lines) stays
        if what == "drop":
            del lines[i]
        elif what == "twice":
            lines.insert(i, lines[i])
        elif what == "junk":
            lines[i] = lines[i][:len(junk)] + junk + lines[i][len(junk):]
        elif what == "cut":
            lines = lines[:i]
        elif i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
    path = tmp_path_factory.mktemp("damaged") / "nodes.json"
    path.write_bytes(b"\n".join(lines))
    try:
        mapped = _mapped(plan, path)
    except NodeSourceError:
        mapped = None
    try:
        generic = _each_judged(plan, path)
    except NodeSourceError:
        generic = None
    if mapped is not None and generic is not None:
        assert mapped == generic

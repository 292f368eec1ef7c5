"""The audit's findings in full: the evidence each one carries and the hint it gives, at the boundaries (which
findings explain lost capacity, the cut-off of the down-node list), on one healthy cluster changed node by node."""

from __future__ import annotations

import copy

import pytest

import nodelists as NL

PLAN = None


def plan():
    global PLAN
    if PLAN is None:
        PLAN = NL.load_plan("heterogeneous")
    return PLAN


def nodes_of(pool: str) -> list[dict]:
    return [n for n in NL.clean_nodes(plan()) if n["metadata"]["labels"].get("gpuconf.dev/pool") == pool]


def audit(nodes, max_unavailable="25%"):
    from gpuconf.cluster.audit import Threshold, audit

    threshold = None if max_unavailable is None else Threshold.parse(max_unavailable)
    return audit(plan(), nodes, "test", threshold)


def findings(node: dict, *codes: str) -> list:
    """The findings on one node (of the codes given), auditing it alone (no pool-level findings)."""
    result = audit([node])
    return [f for f in result.findings if f.node and (not codes or f.code in codes)]


def labels(node: dict) -> dict:
    return node["metadata"]["labels"]


# --- GA101: which hint for a GPU node in no pool -------------------------------------------------------------------


def test_a_node_of_a_pools_model_that_its_labels_do_not_select_is_told_why():
    node = nodes_of("infer-a100")[0]
    labels(node)["eks.amazonaws.com/nodegroup"] = "batch"
    (f,) = findings(node)
    assert (f.code, f.severity, f.pool, f.message) == ("GA101", "error", "(no pool)", "GPU node matches no pool")
    assert f.hint == ("pool 'infer-a100' has this GPU model; its match (eks.amazonaws.com/nodegroup=infer) does not "
                      "select the node")
    assert f.evidence["model"] == "A100-80GB"
    assert f.evidence["nvidia.com/gpu.product"] == labels(node)["nvidia.com/gpu.product"]
    assert "gpuconf.dev/pool" in f.evidence and f.evidence["nvidia.com/gpu.present"] == "true"


def test_a_node_of_a_model_no_pool_has_and_one_gfd_has_not_named():
    node = nodes_of("train-h100")[0]
    labels(node)["nvidia.com/gpu.product"] = "NVIDIA-H200"
    (f,) = findings(node)
    assert f.code == "GA101" and f.hint == "no pool has GPU model H200: add a pool for it, or remove the node"
    assert f.evidence["model"] == "H200"
    unnamed = nodes_of("train-h100")[0]
    del labels(unnamed)["nvidia.com/gpu.product"]
    labels(unnamed)["gpuconf.dev/pool"] = "elsewhere"
    (f,) = findings(unnamed)
    assert f.code == "GA101" and f.evidence["model"] is None and "nvidia.com/gpu.product" not in f.evidence
    assert f.hint == ("GFD has not named the GPU (no gpu.product label): check that the operator's GFD runs there")


def test_a_node_in_two_pools_names_both_matches():
    node = nodes_of("infer-a100")[0]
    labels(node)["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"  # an H100 (pciDevice pool) in the A100 group
    result = audit([node])
    (f,) = [f for f in result.findings if f.node]
    assert (f.code, f.pool) == ("GA102", "(several pools)")
    assert f.message == "node matches 2 pools: train-h100, infer-a100"
    assert f.evidence["pools"] == {"train-h100": "GPU H100-80GB", "infer-a100": "eks.amazonaws.com/nodegroup=infer"}
    assert result.drifting == 1 and all(p.matched == 0 for p in result.pools)


# --- GA111 and GA112: the strategy and sharing labels ------------------------------------------------------------


def test_the_mig_strategy_finding_shows_the_label_and_the_expected_strategy():
    node = nodes_of("notebooks-l4")[0]
    labels(node)["nvidia.com/mig.strategy"] = "single"
    (f,) = findings(node, "GA111")
    assert (f.severity, f.message) == ("error", "mig.strategy is single, the cluster's is mixed")
    assert f.evidence == {"nvidia.com/mig.strategy": "single", "expected": "mixed"}
    assert f.hint == "the ClusterPolicy's mig.strategy differs from the rendered values: re-sync the chart"


def test_the_sharing_finding_shows_each_label_actual_and_expected():
    node = nodes_of("notebooks-l4")[0]
    labels(node)["nvidia.com/gpu.replicas"] = "2"
    (f,) = findings(node, "GA112")
    assert f.message == "sharing labels nvidia.com/gpu.replicas=2 (expected 4)"
    assert f.evidence == {"nvidia.com/gpu.replicas": {"actual": "2", "expected": "4"}}


# --- GA107: what explains lost capacity ---------------------------------------------------------------------------


def _short(node: dict, resource: str = "nvidia.com/gpu", value: str = "6") -> dict:
    node["status"]["allocatable"][resource] = value
    return node


def test_missing_capacity_without_a_cause_is_an_error_with_the_device_plugin_hint():
    node = _short(nodes_of("train-h100")[0])
    (f,) = findings(node, "GA107")
    assert (f.severity, f.message) == ("error", "nvidia.com/gpu below (6 of 8)")
    assert f.evidence == {"nvidia.com/gpu": {"allocatable": "6", "expected": 8},
                          "allocatable": {"nvidia.com/gpu": "6"}}
    assert f.hint == "check the device plugin pod on the node and the config its label selects"


def test_absent_and_zero_capacity_are_named_so():
    node = nodes_of("train-h100")[0]
    del node["status"]["allocatable"]["nvidia.com/gpu"]
    (f,) = findings(node, "GA107")
    assert f.message == "nvidia.com/gpu absent (0 of 8)"
    assert f.evidence["nvidia.com/gpu"] == {"allocatable": None, "expected": 8} and f.evidence["allocatable"] == {}
    (f,) = findings(_short(nodes_of("train-h100")[0], value="0"), "GA107")
    assert f.message == "nvidia.com/gpu zero (0 of 8)"


def test_more_capacity_than_promised_is_a_warning():
    (f,) = findings(_short(nodes_of("train-h100")[0], value="9"), "GA107")
    assert (f.severity, f.message) == ("warning", "nvidia.com/gpu above (9 of 8)")
    assert f.hint == "the node advertises more than the intent's sharing promises: quotas are computed from the intent"


def test_a_mig_pools_missing_slices_point_at_mig_manager():
    node = _short(nodes_of("infer-a100")[0], "nvidia.com/mig-1g.10gb", "8")
    (f,) = findings(node, "GA107")
    assert f.severity == "error" and f.message == "nvidia.com/mig-1g.10gb below (8 of 16)"
    assert f.hint.startswith("the pool's MIG layout is not in place: check nvidia.com/mig.config.state")


def test_missing_capacity_while_mig_reconfigures_is_a_warning_with_the_state():
    node = _short(nodes_of("infer-a100")[0], "nvidia.com/mig-1g.10gb", "8")
    labels(node)["nvidia.com/mig.config.state"] = "pending"
    (f,) = findings(node, "GA107")
    assert f.severity == "warning"
    assert f.evidence == {"nvidia.com/mig-1g.10gb": {"allocatable": "8", "expected": 16},
                          "allocatable": {"nvidia.com/mig-1g.10gb": "8", "nvidia.com/mig-2g.20gb": "8",
                                          "nvidia.com/mig-3g.40gb": "8"},
                          "reconfiguring": {"nvidia.com/mig.config.state": "pending"}}
    assert f.hint == "the node is being reconfigured (MIG or driver upgrade): audit again when that is done"


def test_missing_capacity_during_a_driver_upgrade_shows_the_upgrade_state():
    node = _short(nodes_of("train-h100")[0])
    labels(node)["nvidia.com/gpu-driver-upgrade-state"] = "pod-restart-required"
    (f,) = findings(node, "GA107")
    assert f.severity == "warning"
    assert f.evidence["reconfiguring"] == {"nvidia.com/gpu-driver-upgrade-state": "pod-restart-required"}
    waiting = _short(nodes_of("train-h100")[0])
    labels(waiting)["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-required"  # only waiting for its wave
    (f,) = findings(waiting, "GA107")
    assert f.severity == "error" and "reconfiguring" not in f.evidence


@pytest.mark.parametrize(("label", "value", "cause"), [
    ("nvidia.com/gpu.deploy.device-plugin", "false", "GA118"),
    ("nvidia.com/gpu.deploy.operands", "false", "GA118"),
    ("nvidia.com/gpu.deploy.device-plugin", "paused-for-mig-change", "GA119"),
    ("nvidia.com/gpu.present", None, "GA117"),
    ("nvidia.com/gpu.count", "7", "GA121"),
])
def test_an_error_on_the_node_explains_the_missing_capacity(label, value, cause):
    node = _short(nodes_of("train-h100")[0])
    if value is None:
        del labels(node)[label]
    else:
        labels(node)[label] = value
    result = findings(node)
    assert cause in [f.code for f in result if f.severity == "error"]
    (f,) = [f for f in result if f.code == "GA107"]
    assert f.severity == "error" and f.hint == f"explained by {cause} on this node"


def test_every_cause_is_named_and_a_count_during_an_upgrade_is_none():
    node = _short(nodes_of("train-h100")[0])
    labels(node).update({"nvidia.com/gpu.deploy.device-plugin": "false", "nvidia.com/gpu.count": "7"})
    (f,) = findings(node, "GA107")
    assert f.severity == "error" and f.hint == "explained by GA118, GA121 on this node"
    # While the driver is upgraded GFD's count is a warning, no cause; the switched-off operand still is one.
    labels(node)["nvidia.com/gpu-driver-upgrade-state"] = "pod-restart-required"
    (count,) = findings(node, "GA121")
    assert count.severity == "warning"
    (f,) = findings(node, "GA107")
    assert f.severity == "error" and f.hint == "explained by GA118 on this node"


@pytest.mark.parametrize(("label", "value"), [
    ("nvidia.com/gpu.deploy.dcgm-exporter", "false"),  # a monitoring operand: a warning, no capacity lost
    ("nvidia.com/gpu.deploy.dcgm-exporter", "paused-for-mig-change"),
    ("nvidia.com/gpu.count", "9"),  # more GPUs than declared: a warning
])
def test_warnings_explain_no_missing_capacity(label, value):
    node = _short(nodes_of("train-h100")[0])
    labels(node)[label] = value
    result = findings(node)
    assert any(f.severity == "warning" and f.code != "GA107" for f in result)
    (f,) = [f for f in result if f.code == "GA107"]
    assert f.hint == "check the device plugin pod on the node and the config its label selects"


def test_operands_paused_during_a_reconfiguration_are_no_finding():
    node = nodes_of("train-h100")[0]
    labels(node).update({"nvidia.com/gpu.deploy.device-plugin": "paused-for-driver-upgrade",
                         "nvidia.com/gpu-driver-upgrade-state": "pod-restart-required"})
    assert not findings(node, "GA119")
    labels(node)["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-done"
    (f,) = findings(node, "GA119")
    assert f.severity == "error" and f.message == "operand left paused: device-plugin"
    assert f.evidence == {"paused operands": {"nvidia.com/gpu.deploy.device-plugin": "paused-for-driver-upgrade"},
                          "nvidia.com/mig.config.state": "success", "nvidia.com/gpu-driver-upgrade-state": "upgrade-done"}
    assert f.hint.startswith("the driver manager pauses operands while it reconfigures")


# --- GA103/GA104/GA117/GA118: labels ----------------------------------------------------------------------------


def test_missing_and_wrong_labels_carry_what_was_expected():
    node = nodes_of("train-h100")[0]
    del labels(node)["nvidia.com/device-plugin.config"]
    labels(node)["nvidia.com/mig.config"] = "all-balanced"
    by_code = {f.code: f for f in findings(node, "GA103", "GA104")}
    key = plan().pool_by_name["train-h100"].labels["nvidia.com/device-plugin.config"]
    assert by_code["GA103"].message == "missing label nvidia.com/device-plugin.config"
    assert by_code["GA103"].evidence == {"expected": {"nvidia.com/device-plugin.config": key},
                                         "source": by_code["GA103"].evidence["source"]}
    assert by_code["GA103"].hint == "re-apply the pool's " + by_code["GA103"].evidence["source"]
    assert by_code["GA104"].message == "wrong value of nvidia.com/mig.config"
    assert by_code["GA104"].evidence == {"nvidia.com/mig.config": {"actual": "all-balanced",
                                                                   "expected": "all-disabled"}}


def test_two_missing_labels_are_named_in_the_plural():
    node = nodes_of("train-h100")[0]
    del labels(node)["nvidia.com/device-plugin.config"]
    del labels(node)["nvidia.com/mig.config"]
    (f,) = findings(node, "GA103")
    assert f.message == "missing labels nvidia.com/device-plugin.config, nvidia.com/mig.config"
    assert sorted(f.evidence["expected"]) == ["nvidia.com/device-plugin.config", "nvidia.com/mig.config"]


def test_undeclared_taints_hint_by_effect():
    node = nodes_of("notebooks-l4")[0]
    node["spec"]["taints"] = [{"key": "a", "effect": "NoExecute"}, {"key": "b", "value": "x", "effect": "NoSchedule"},
                              {"key": "c", "effect": "PreferNoSchedule"}]
    by_severity = {f.severity: f for f in findings(node, "GA120")}
    assert by_severity["error"].hint.startswith("NoExecute evicts every pod that does not tolerate it")
    assert by_severity["error"].evidence == {"undeclared": ["a:NoExecute"], "declared": []}
    assert by_severity["warning"].hint.startswith("new pods that do not tolerate it, GPU operands included")
    assert by_severity["warning"].evidence == {"undeclared": ["b=x:NoSchedule"], "declared": []}


def test_pool_level_findings_print_as_the_pool_in_text():
    from gpuconf.cluster.audit import format_text

    rows = format_text(audit(nodes_of("train-h100")[:15])).splitlines()
    at = rows.index("  (pool)  error   GA115  15 nodes match, the pool declares 16")
    assert rows[at + 1] == "          evidence: matched=15, declared=16"
    assert rows[at + 2].startswith("          hint: nodes missing from the pool are missing GPUs")


def test_an_unlabelled_node_lists_the_missing_operand_labels():
    node = nodes_of("train-h100")[0]
    for op in ("driver", "dcgm"):
        del labels(node)[f"nvidia.com/gpu.deploy.{op}"]
    (f,) = findings(node, "GA117")
    assert f.message == "the operator has not labelled the node: 2 operand labels missing"
    assert f.evidence == {"nvidia.com/gpu.present": "true",
                          "missing": ["nvidia.com/gpu.deploy.driver", "nvidia.com/gpu.deploy.dcgm"]}
    one = nodes_of("train-h100")[0]
    del labels(one)["nvidia.com/gpu.deploy.dcgm"]
    labels(one)["nvidia.com/gpu.present"] = "false"
    (f,) = findings(one, "GA117")
    assert f.message == "the operator has not labelled the node: nvidia.com/gpu.present is 'false', 1 operand label missing"


def test_switched_off_operands_by_severity():
    node = nodes_of("train-h100")[0]
    labels(node).update({"nvidia.com/gpu.deploy.driver": "false", "nvidia.com/gpu.deploy.dcgm": "false",
                         "nvidia.com/gpu.deploy.dcgm-exporter": "false"})
    by_severity = {f.severity: f for f in findings(node, "GA118")}
    assert by_severity["error"].message == "operand switched off: driver"
    assert by_severity["error"].evidence == {"nvidia.com/gpu.deploy.driver": "false"}
    assert by_severity["warning"].message == "operands switched off: dcgm, dcgm-exporter"
    assert by_severity["warning"].hint == "the GPUs work, but the node's metrics are missing: remove the labels"


# --- GA122: the list of down nodes --------------------------------------------------------------------------------


def _down(count: int) -> list[dict]:
    nodes = nodes_of("train-h100")
    for n in nodes[:count]:
        n["spec"]["unschedulable"] = True
    return nodes


@pytest.mark.parametrize(("down", "listed", "more"), [(10, 10, None), (11, 10, "... (1 more)"), (12, 10, "... (2 more)")])
def test_the_down_node_list_is_cut_after_ten(down, listed, more):
    result = audit(_down(down), max_unavailable="0")
    (f,) = [f for f in result.findings if f.code == "GA122"]
    names = sorted(n["metadata"]["name"] for n in _down(down)[:down])
    assert f.evidence["nodes"] == names[:listed] + ([more] if more else [])
    assert f.evidence["unavailable"] == down and f.evidence["declared"] == 16 and f.evidence["maxUnavailable"] == "0"
    assert f.message == f"{down} of 16 nodes are NotReady or cordoned, more than --max-unavailable 0 allows"


@pytest.mark.parametrize(("threshold", "down", "found"), [
    ("4", 4, False), ("4", 5, True), ("25%", 4, False), ("25%", 5, True), ("0%", 1, True), ("100%", 16, False),
    ("99%", 16, True), ("99%", 15, False), ("1%", 1, True)])
def test_the_threshold_is_exceeded_only_above_it(threshold, down, found):
    result = audit(_down(down), max_unavailable=threshold)
    assert any(f.code == "GA122" for f in result.findings) is found
    assert result.unavailable == down


def test_no_threshold_no_pool_finding_for_down_nodes():
    assert not [f for f in audit(_down(16), max_unavailable=None).findings if f.code == "GA122"]


@pytest.mark.parametrize(("text", "value", "percent"), [("2", 2, False), ("25%", 25, True), (" 100% ", 100, True),
                                                        ("0", 0, False)])
def test_threshold_parsing(text, value, percent):
    from gpuconf.cluster.audit import Threshold

    t = Threshold.parse(text)
    assert (t.value, t.percent) == (value, percent) and str(t) == text.strip()


@pytest.mark.parametrize("text", ["101%", "-1", "1.5", "", "x%", "1234567890"])
def test_threshold_refuses_what_is_no_count_or_percentage(text):
    from gpuconf.cluster.audit import Threshold

    with pytest.raises(ValueError, match="is not a node count or a percentage from 0% to 100%"):
        Threshold.parse(text)


# --- pool-level counts --------------------------------------------------------------------------------------------


def test_pool_counts_and_the_node_count_finding():
    nodes = nodes_of("train-h100")
    result = audit(nodes[:15] + [copy.deepcopy(nodes[0])])
    report = result.pools[0]
    assert (report.matched, report.healthy, report.drifting, report.unavailable) == (16, 16, 0, 0)
    fewer = audit(nodes[:15])
    (f,) = [f for f in fewer.findings if f.code == "GA115" and f.pool == "train-h100"]
    assert (f.severity, f.message, f.evidence) == ("error", "15 nodes match, the pool declares 16",
                                                   {"matched": 15, "declared": 16})
    one = audit(nodes[:1])
    (f,) = [f for f in one.findings if f.code == "GA115" and f.pool == "train-h100"]
    assert f.message == "1 node match, the pool declares 16"
    more = audit(nodes + [nodes[0]])
    (f,) = [f for f in more.findings if f.code == "GA115" and f.pool == "train-h100"]
    assert (f.severity, f.hint) == ("warning", "update the pool's node count: quotas and reports use it")


TWIN_GROUPS = """apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata: {name: twins}
spec:
  cluster: {kubernetesVersion: "1.33"}
  operator: {chartVersion: v26.7.0}
  pools:
    - {name: a100, gpu: A100-80GB, gpusPerNode: 8, nodes: 1, match: {nodeLabels: {group: gpu}}}
    - {name: h100, gpu: H100-80GB, gpusPerNode: 8, nodes: 1, match: {nodeLabels: {group: gpu}}}
"""


def test_the_gpu_model_decides_between_node_label_pools_that_both_select_a_node():
    from gpuconf.cluster.audit import audit

    twins = NL.plan_of(TWIN_GROUPS, "twins.yaml")
    nodes = NL.clean_nodes(twins)
    assert audit(twins, nodes, "t").findings == []  # each node in the pool of its model, none in both
    unnamed = copy.deepcopy(nodes[1])
    del unnamed["metadata"]["labels"]["nvidia.com/gpu.product"]  # no model: both pools select it
    (f,) = [f for f in audit(twins, [nodes[0], unnamed], "t").findings if f.node]
    assert (f.code, f.message) == ("GA102", "node matches 2 pools: a100, h100")


def test_gfd_count_hints_by_what_the_label_says():
    more = nodes_of("train-h100")[0]
    labels(more)["nvidia.com/gpu.count"] = "9"
    (f,) = findings(more, "GA121")
    assert (f.severity, f.hint) == ("warning", "the node has more GPUs than the pool declares: fix gpusPerNode, or the node")
    garbled = nodes_of("train-h100")[0]
    labels(garbled)["nvidia.com/gpu.count"] = "eight"
    (f,) = findings(garbled, "GA121")
    assert (f.severity, f.hint) == ("error", "GFD's label is not a number: check the gpu-feature-discovery pod")
    assert f.message == "GFD counts 'eight' GPUs, the pool expects 8"


def test_a_driver_off_its_pin_says_whether_an_upgrade_failed():
    pin = plan().pool_by_name["train-h100"].driver
    node = NL._set_driver("570.195.03")(nodes_of("train-h100")[0], plan())
    del labels(node)["nvidia.com/gpu-driver-upgrade-state"]
    (f,) = findings(node, "GA108")
    assert f.evidence == {"nvidia.com/cuda.driver-version.full": "570.195.03", "expected": pin,
                          "pinnedBy": "pool train-h100's driver"}
    assert (f.severity, f.hint) == ("error", "check the driver daemon set (or NVIDIADriver) that owns the node")
    failed = NL._set_driver("570.195.03", "upgrade-failed")(nodes_of("train-h100")[0], plan())
    (f,) = findings(failed, "GA108")
    assert f.evidence["nvidia.com/gpu-driver-upgrade-state"] == "upgrade-failed"
    assert (f.severity, f.hint) == ("error", "the driver upgrade failed (GA116)")


def test_the_text_report_counts_a_pool_without_nodes_as_advertising_nothing():
    from gpuconf.cluster.audit import format_text

    text = format_text(audit(nodes_of("train-h100")))
    assert "pool notebooks-l4: L4 x4, time-slicing; 0/6 nodes (0 healthy, 0 drifting, 0 unavailable); " \
           "nvidia.com/gpu 0/96" in text


TWO_LABELS = TWIN_GROUPS.replace("match: {nodeLabels: {group: gpu}}}\n    - {name: h100",
                                 "match: {nodeLabels: {group: gpu, zone: a}}}\n    - {name: h100")


def test_every_node_label_of_a_pool_must_match():
    from gpuconf.cluster.audit import audit as run

    twins = NL.plan_of(TWO_LABELS, "two.yaml")
    node = NL.clean_nodes(twins)[0]
    assert [f.code for f in run(twins, [node], "t").findings if f.node] == []
    labels(node)["zone"] = "b"  # the A100 node now only fits the H100 pool's labels: it is there, with the wrong GPU
    assert sorted((f.code, f.pool) for f in run(twins, [node], "t").findings if f.node) == [
        ("GA104", "h100"), ("GA106", "h100")]


def test_an_unknown_dmi_product_is_vouched_for_only_by_the_pool_label():
    from gpuconf.cluster.audit import audit as run

    text = (NL.ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8").replace(
        "        pciDevice: true", "        pciDevice: true\n        dmiProduct: PowerEdge XE9680")
    dmi = NL.plan_of(text, "dmi.yaml")
    node = NL.clean_nodes(dmi)[0]
    del labels(node)["nvidia.com/gpu.machine"]
    assert [f.code for f in run(dmi, [node], "t").findings if f.node] == []
    del labels(node)["gpuconf.dev/pool"]
    assert [f.code for f in run(dmi, [node], "t").findings if f.node] == ["GA101"]


# --- evidence, hints and counts that the mutation run (issue 33) found unchecked ------------------------------------


def test_a_failed_driver_upgrade_carries_the_drivers_version_and_what_it_paused():
    node = NL._set_driver("570.195.03", "upgrade-failed")(nodes_of("train-h100")[0], plan())
    labels(node)["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-driver-upgrade"
    (f,) = findings(node, "GA116")
    assert f.evidence == {"nvidia.com/gpu-driver-upgrade-state": "upgrade-failed",
                          "nvidia.com/cuda.driver-version.full": "570.195.03",
                          "paused operands": {"nvidia.com/gpu.deploy.device-plugin": "paused-for-driver-upgrade"}}
    for key in [k for k in labels(node) if k.startswith("nvidia.com/cuda.driver")]:
        del labels(node)[key]  # no driver reported: no version in the evidence, nothing made up
    (f,) = findings(node, "GA116")
    assert "nvidia.com/cuda.driver-version.full" not in f.evidence


def test_one_switched_off_monitoring_operand_is_named_in_the_singular():
    node = nodes_of("train-h100")[0]
    labels(node)["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"
    (f,) = findings(node, "GA118")
    assert (f.severity, f.message) == ("warning", "operand switched off: dcgm-exporter")
    assert f.hint == "the GPUs work, but the node's metrics are missing: remove the label"


def _hybrid():
    return NL.load_plan("hybrid")


def test_a_preinstalled_pools_odd_drivers_are_each_told_the_version_most_nodes_run():
    from gpuconf.cluster.audit import audit as run

    hybrid = _hybrid()
    pool = [n for n in NL.clean_nodes(hybrid) if n["metadata"]["labels"].get("gpuconf.dev/pool") == "legacy-a100"]
    assert len(pool) >= 4
    odd = [NL._set_driver("570.133.20")(pool[1], hybrid), NL._set_driver("535.247.01")(pool[2], hybrid)]
    found = [f for f in run(hybrid, pool, "t").findings if f.code == "GA109"]
    common = NL.HOST_DRIVER
    assert sorted((f.node, f.message) for f in found) == sorted(
        [(odd[0]["metadata"]["name"], f"driver 570.133.20, most of the pool runs {common}"),
         (odd[1]["metadata"]["name"], f"driver 535.247.01, most of the pool runs {common}")])
    assert found[0].evidence["pool versions"] == {"535.247.01": 1, "570.133.20": 1, common: len(pool) - 2}


def test_the_summary_line_counts_errors_and_warnings_in_the_singular_and_the_plural():
    from gpuconf.cluster.auditresult import summary_line

    every = NL.clean_nodes(plan())
    assert summary_line(audit(every)).endswith("0 errors, 0 warnings")
    one = [n for n in every if n["metadata"]["labels"].get("gpuconf.dev/pool") == "train-h100"]
    labels(one[0])["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"  # one warning
    one[1]["status"]["allocatable"]["nvidia.com/gpu"] = "0"  # one error
    assert summary_line(audit(every)).endswith("1 error, 1 warning")
    labels(one[1])["nvidia.com/gpu.deploy.dcgm"] = "false"
    one[2]["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    assert summary_line(audit(every)).endswith("2 errors, 2 warnings")


def test_a_cordoned_node_says_whether_the_driver_upgrade_cordoned_it():
    node = nodes_of("train-h100")[0]
    node["spec"]["unschedulable"] = True
    del labels(node)["nvidia.com/gpu-driver-upgrade-state"]
    (f,) = findings(node, "GA114")
    assert (f.severity, f.message, f.evidence) == ("info", "node is cordoned", {"unschedulable": True})
    labels(node)["nvidia.com/gpu-driver-upgrade-state"] = "cordon-required"
    (f,) = findings(node, "GA114")
    assert f.evidence == {"unschedulable": True, "nvidia.com/gpu-driver-upgrade-state": "cordon-required"}

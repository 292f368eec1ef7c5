"""Adoption over a running installation, on real H200 node labels (tests/fixtures/h200-real/): import, then audit.

Nothing applied yet is not drift (GA123), and the audit's judgements of such nodes name the real cause: where a
driver version comes from (GA108), a MIG layout never applied (no GA121), a GFD without a MIG strategy (GA111), the
operator's own all-disabled preset (GA104).
"""

from __future__ import annotations

import copy
import json

import pytest

import h200_real as H

REAL = H.gfd_runs()
#: The operator runs GFD with the ClusterPolicy's mig.strategy (the chart's default: single), which is GFD's
#: --mig-strategy=single run on the real node.
OPERATOR_GFD = REAL["single"]["labels"]


def _nodes(count: int = 2, gfd: dict | None = None, **kw) -> list[dict]:
    return [H.node(f"gpu-h200-{i:02d}", gfd or OPERATOR_GFD, **kw) for i in range(1, count + 1)]


def _write(tmp_path, name: str, items: list[dict]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(H.nodelist(items), indent=1), encoding="utf-8")
    return str(path)


def _import(run, tmp_path, items: list[dict]) -> str:
    nodes = _write(tmp_path, "nodes.json", items)
    result = run("import", "--nodes", nodes, "--name", "h200", "-o", str(tmp_path / "draft.yaml"))
    assert result.exit_code == 0, result.stderr
    return str(tmp_path / "draft.yaml")


def _audit(run, intent: str, tmp_path, items: list[dict], name: str = "audit-nodes.json") -> tuple[int, dict]:
    result = run("audit", intent, "--nodes", _write(tmp_path, name, items), "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def _codes(report: dict) -> list[tuple[str, str, str]]:
    return [(f["code"], f["severity"], f["node"]) for f in report["findings"]]


def test_import_then_audit_of_a_never_synced_cluster_is_one_pending_warning(run, tmp_path):
    """The draft's pool labels are on no node yet: one GA123 warning with the command, no GA103 errors."""
    items = _nodes()
    draft = _import(run, tmp_path, items)
    code, report = _audit(run, draft, tmp_path, items)
    assert code == 0
    (finding,) = report["findings"]
    key = finding["evidence"]["labels"]["nvidia.com/device-plugin.config"]
    assert finding == {
        "severity": "warning", "code": "GA123", "node": "", "pool": "h200",
        "message": "first sync pending: none of the pool's 2 nodes carries gpuconf.dev/pool, "
                   "nvidia.com/device-plugin.config, nvidia.com/mig.config yet (gpuconf's render has not been applied)",
        "evidence": {"labels": {"gpuconf.dev/pool": "h200", "nvidia.com/device-plugin.config": key,
                                "nvidia.com/mig.config": "all-disabled"},
                     "nodes": 2, "source": "NodeFeatureRule gpuconf-pool-h200",
                     "command": "kubectl label node gpu-h200-01 gpu-h200-02 --overwrite gpuconf.dev/pool=h200 "
                                f"nvidia.com/device-plugin.config={key} nvidia.com/mig.config=all-disabled"},
        "hint": "sync the rendered folder: NodeFeatureRule gpuconf-pool-h200 sets them on every node, existing ones "
                "included; to label the nodes there now: kubectl label node gpu-h200-01 gpu-h200-02 --overwrite "
                f"gpuconf.dev/pool=h200 nvidia.com/device-plugin.config={key} nvidia.com/mig.config=all-disabled"}
    assert key.startswith("exclusive-")
    # After the labels the render sets, the audit is clean.
    synced = copy.deepcopy(items)
    for item in synced:
        item["metadata"]["labels"].update(finding["evidence"]["labels"])
    code, report = _audit(run, draft, tmp_path, synced, "synced.json")
    assert (code, report["findings"]) == (0, [])
    assert report["summary"]["healthy"] == 2


def test_a_node_that_lost_labels_the_others_kept_is_still_ga103(run, tmp_path):
    items = _nodes(3)
    draft = _import(run, tmp_path, items)
    _, report = _audit(run, draft, tmp_path, items)
    labels = report["findings"][0]["evidence"]["labels"]
    for item in items:
        item["metadata"]["labels"].update(labels)
    del items[2]["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    code, report = _audit(run, draft, tmp_path, items, "lost.json")
    assert code == 1
    assert _codes(report) == [("GA103", "error", "gpu-h200-03")]
    assert report["findings"][0]["message"] == "missing label nvidia.com/device-plugin.config"


def _intent(tmp_path, pool: str = "", profiles: str = "", driver: str = "") -> str:
    path = tmp_path / "intent.yaml"
    path.write_text(f"""\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: h200
spec:
  cluster:
    kubernetesVersion: "1.33"
  operator:
    chartVersion: v26.7.0
{driver}{profiles}  pools:
    - name: h200
      gpu: H200
      gpusPerNode: 8
      nodes: 2
      match:
        pciDevice: true
{pool}""", encoding="utf-8")
    return str(path)


def _synced(items: list[dict], intent: str, **labels: str) -> list[dict]:
    """The nodes with the labels the intent's render sets (pool, device-plugin and MIG config keys), then `labels`."""
    from gpuconf import plan as P
    from gpuconf.intent.validate import validate_path

    plan = P.build(validate_path(intent, "intent.yaml").intent, "intent.yaml")
    for item in items:
        item["metadata"]["labels"].update(plan.pools[0].labels)
        item["metadata"]["labels"].update(labels)
    return items


def test_ga108_says_the_pin_is_the_charts_default_when_the_intent_pins_none(run, tmp_path):
    from gpuconf import catalog

    intent = _intent(tmp_path)
    default = catalog.chart("v26.7.0").defaults["driver"]["version"]
    code, report = _audit(run, intent, tmp_path, _synced(_nodes(), intent))
    assert code == 1
    found = [f for f in report["findings"] if f["code"] == "GA108"]
    assert [f["message"] for f in found] == [
        f"driver 580.159.04, chart v26.7.0's default driver (the intent pins none) is {default}"] * 2
    pinned = _intent(tmp_path, driver='  driver:\n    version: "595.58.03"\n')
    _, report = _audit(run, pinned, tmp_path, _synced(_nodes(), pinned), "pinned.json")
    assert {f["message"] for f in report["findings"] if f["code"] == "GA108"} == {
        "driver 580.159.04, the intent's spec.driver.version is 595.58.03"}


MIG = "  sharingProfiles:\n    sliced:\n      mig:\n        preset: all-1g.18gb\n"


def test_a_mig_layout_never_applied_is_not_a_gpu_off_the_bus(run, tmp_path):
    """Real H200 nodes with MIG disabled (8 whole GPUs, the operator's all-disabled preset) in a MIG pool: GA104
    names the operator's preset, and no GA121 claims a lost GPU."""
    intent = _intent(tmp_path, pool="      sharing: sliced\n", profiles=MIG)
    items = _synced(_nodes(), intent, **{"nvidia.com/mig.config": "all-disabled"})
    code, report = _audit(run, intent, tmp_path, items)
    assert code == 1
    codes = _codes(report)
    assert not [c for c in codes if c[0] == "GA121"]
    ga104 = [f for f in report["findings"] if f["code"] == "GA104"]
    assert len(ga104) == 2
    assert ga104[0]["hint"].startswith("all-disabled is the operator's own preset on MIG-capable nodes without a "
                                       "mig.config label, so the render's MIG config has not reached the node")
    # The same nodes once mig-manager applied the layout, but with one GPU gone: GA121 again.
    for item in items:
        item["metadata"]["labels"].update(_synced([copy.deepcopy(item)], intent)[0]["metadata"]["labels"])
        item["metadata"]["labels"]["nvidia.com/gpu.count"] = "49"  # 7 of 8 GPUs' 1g.18gb devices
    _, report = _audit(run, intent, tmp_path, items, "lost.json")
    assert [c for c in _codes(report) if c[0] == "GA121"] == [("GA121", "error", "gpu-h200-01"),
                                                              ("GA121", "error", "gpu-h200-02")]


@pytest.mark.parametrize("pool, profiles, severity", [
    ("", "", "warning"),
    ("      sharing: sliced\n", MIG, "error"),
])
def test_ga111_covers_a_gfd_without_strategy_label(run, tmp_path, pool, profiles, severity):
    """GFD's default strategy, none, publishes no mig.strategy label (gfd-labels.txt of the real node) and offers
    no MIG resources: an error on a MIG pool, a warning elsewhere."""
    assert "nvidia.com/mig.strategy" not in REAL["none"]["labels"]
    intent = _intent(tmp_path, pool=pool, profiles=profiles, driver='  driver:\n    version: "580.159.04"\n')
    items = _synced(_nodes(gfd=REAL["none"]["labels"]), intent)
    _, report = _audit(run, intent, tmp_path, items)
    found = [f for f in report["findings"] if f["code"] == "GA111"]
    assert [(f["severity"], f["node"]) for f in found] == [(severity, "gpu-h200-01"), (severity, "gpu-h200-02")]
    assert found[0]["message"] == "no mig.strategy label: GFD runs with strategy none, the cluster's is single"

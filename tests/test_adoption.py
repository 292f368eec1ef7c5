"""Adoption over a running installation, on real H200 node labels (tests/fixtures/h200-real/): import, then audit.

Nothing applied yet is not drift (GA123), and the audit's judgements of such nodes name the real cause: where a
driver version comes from (GA108), a MIG layout never applied (no GA121), a GFD without a MIG strategy (GA111), the
operator's own all-disabled preset (GA104).
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

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


# --- pools split by what the nodes run ----------------------------------------------------------------------------

A100 = {**OPERATOR_GFD, "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.memory": "81920", "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.compute.major": "8"}


def a100_node(name: str, mig: str) -> dict:
    """An A100-80GB node of 8 GPUs on mig-manager's config `mig` (all-3g.40gb applied, or all-disabled)."""
    labels = {"nvidia.com/mig.config": mig, "nvidia.com/mig.config.state": "success"}
    capacity = {"nvidia.com/gpu": "8"}
    if mig == "all-3g.40gb":
        labels.update({"nvidia.com/mig-3g.40gb.count": "16", "nvidia.com/mig-3g.40gb.replicas": "1",
                       "nvidia.com/mig-3g.40gb.sharing-strategy": "none",
                       "nvidia.com/mig-3g.40gb.product": "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb"})
        capacity = {"nvidia.com/gpu": "0", "nvidia.com/mig-3g.40gb": "16"}
    return H.node(name, A100, labels=labels, capacity=capacity)


A100_NODES = [a100_node("gpu-a100-01", "all-3g.40gb"), a100_node("gpu-a100-02", "all-3g.40gb"),
              a100_node("gpu-a100-03", "all-disabled")]
#: The installation's values and its mig-parted ConfigMap, which name both configs the nodes run.
A100_VALUES = ("mig:\n  strategy: mixed\nmigManager:\n  enabled: true\n  config:\n    name: custom-mig-config\n"
               "    default: all-disabled\n")
A100_MIG_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: custom-mig-config
  namespace: gpu-operator
data:
  config.yaml: |
    version: v1
    mig-configs:
      all-disabled:
        - devices: all
          mig-enabled: false
      all-3g.40gb:
        - devices: all
          mig-enabled: true
          mig-devices:
            "3g.40gb": 2
"""


def _a100_installation(tmp_path) -> list[str]:
    (tmp_path / "values.yaml").write_text(A100_VALUES, encoding="utf-8")
    (tmp_path / "mig.yaml").write_text(A100_MIG_CONFIGMAP, encoding="utf-8")
    return ["--values", str(tmp_path / "values.yaml"), "--configmap", str(tmp_path / "mig.yaml")]


def test_a100_nodes_in_two_mig_configs_become_two_pools_named_after_them(run, tmp_path):
    """Two nodes on all-3g.40gb, one on all-disabled, no label or name prefix to tell them apart: two pools, each
    selecting its nodes by name, said on stderr and in the report."""
    nodes = _write(tmp_path, "a100.json", A100_NODES)
    report = tmp_path / "report.json"
    result = run("import", "--nodes", nodes, *_a100_installation(tmp_path), "--report", str(report), "--name", "a100")
    assert result.exit_code == 0, result.stderr
    spec = yaml.safe_load(result.stdout)["spec"]
    assert [(p["name"], p["nodes"], p["match"], p.get("sharing")) for p in spec["pools"]] == [
        ("a100-80gb-exclusive", 1, {"pciDevice": True, "hostname": "^(?:gpu-a100-03)$"}, None),
        ("a100-80gb-mig-all-3g-40gb", 2, {"pciDevice": True, "hostname": "^(?:gpu-a100-01|gpu-a100-02)$"},
         "mig-all-3g-40gb")]
    note = ("pool 'a100-80gb-exclusive' selects its nodes by name (gpu-a100-03): other A100-80GB nodes run another "
            "configuration (MIG config, sharing, driver or taints) and no node label or name prefix tells them apart; "
            "a node added later matches no pool until you give the pool a label of its own")
    assert f"gpuconf: note: {note}\n" in result.stderr
    written = json.loads(report.read_text())
    assert note in written["notes"]
    # The plan of the draft's first sync: on stderr, and in the report; it repartitions nothing.
    assert "gpuconf: first sync: not equivalent (worst impact restart; `gpuconf diff DRAFT --against-installation` " \
        "shows the plan)\n" in result.stderr
    assert written["firstSyncEquivalent"] is False  # the device plugin restarts, the values differ
    assert {(i["kind"], i["severity"]) for i in written["firstSync"]} == {
        ("device-plugin-config-switch", "restart"), ("values-change", "restart"), ("node-relabel", "none")}
    assert run("validate", "-", input=result.stdout).exit_code == 0


# --- the plan of the first sync ----------------------------------------------------------------------------------

MERGED = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: a100
spec:
  cluster:
    kubernetesVersion: "1.33"
    migStrategy: mixed
  operator:
    chartVersion: v26.7.0
  driver:
    version: "580.159.04"
  sharingProfiles:
    mig-all-3g-40gb:
      mig:
        preset: all-3g.40gb
  pools:
    - name: a100-80gb
      gpu: A100-80GB
      gpusPerNode: 8
      nodes: 3
      match:
        pciDevice: true
      sharing: mig-all-3g-40gb
"""


def _plan(run, tmp_path, draft_text: str, items: list[dict], *extra: str):
    draft = tmp_path / "draft.yaml"
    draft.write_text(draft_text, encoding="utf-8")
    result = run("diff", str(draft), "--against-installation", "--nodes", _write(tmp_path, "live.json", items),
                 "--format", "json", *extra)
    return result.exit_code, json.loads(result.stdout) if result.stdout else None, result


def test_the_first_sync_of_a_draft_that_merged_the_pools_repartitions_that_node(run, tmp_path):
    code, plan, _ = _plan(run, tmp_path, MERGED, A100_NODES, *_a100_installation(tmp_path))
    assert code == 1 and plan["equivalent"] is False and plan["worst"] == "disruptive"
    (repartition,) = [i for i in plan["impacts"] if i["kind"] == "mig-repartition"]
    assert (repartition["severity"], repartition["pools"], repartition["nodeNames"]) == (
        "disruptive", ["a100-80gb"], ["gpu-a100-03"])
    assert repartition["message"].startswith(
        "pool a100-80gb's MIG config mig-all-3g-40gb-")
    assert repartition["message"].endswith(
        " (2 x 3g.40gb per GPU) replaces all-disabled (MIG off) at the sync: mig-manager stops the GPU clients, "
        "kills the node's GPU pods and repartitions every GPU")


def test_the_first_sync_of_the_split_draft_repartitions_nothing(run, tmp_path):
    nodes = _write(tmp_path, "a100.json", A100_NODES)
    draft = run("import", "--nodes", nodes, "--name", "a100").stdout
    code, plan, _ = _plan(run, tmp_path, draft, A100_NODES)
    assert not [i for i in plan["impacts"] if i["severity"] == "disruptive"]
    assert {i["kind"] for i in plan["impacts"]} == {"device-plugin-config-switch", "node-relabel"}


def _rendered_values(tmp_path, draft_text: str) -> str:
    """values.yaml as gpuconf renders the draft."""
    draft = tmp_path / "render.yaml"
    draft.write_text(draft_text, encoding="utf-8")
    from gpuconf.cli import main
    from click.testing import CliRunner

    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["render", str(draft), "-o", str(out)]).exit_code == 0
    return str(next(out.glob("*/values.yaml")))


def test_the_first_sync_of_a_clean_adoption_is_equivalent(run, tmp_path):
    """Values as gpuconf renders them and nodes carrying the labels it sets: nothing above none, exit 0."""
    items = _nodes()
    draft = _import(run, tmp_path, items)
    text = (tmp_path / "draft.yaml").read_text()
    synced = _synced(copy.deepcopy(items), draft)
    code, plan, result = _plan(run, tmp_path, text, synced, "--values", _rendered_values(tmp_path, text))
    assert (code, plan["equivalent"], plan["worst"]) == (0, True, "none"), result.stdout
    assert [i["kind"] for i in plan["impacts"]] == ["none"]
    text_result = run("diff", str(tmp_path / "draft.yaml"), "--against-installation", "--nodes",
                      _write(tmp_path, "synced.json", synced), "--values", _rendered_values(tmp_path, text))
    assert text_result.stdout.splitlines()[-1] == (
        f"the first sync of {tmp_path / 'draft.yaml'} is equivalent: values equal, no node impact above none")


RKE2 = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: trial
spec:
  cluster:
    kubernetesVersion: "1.33"
    distribution: rke2
    migStrategy: mixed
  operator:
    chartVersion: v26.7.0
  driver:
    version: "580.159.04"
  sharingProfiles:
    mig-3g:
      mig:
        preset: all-3g.40gb
  pools:
    - name: a100-mig
      gpu: A100-80GB
      gpusPerNode: 8
      nodes: 2
      match:
        nodeLabels:
          example.com/gpu-group: a100-mig
      sharing: mig-3g
"""


def test_the_first_sync_of_the_rke2_trial_lists_the_relabel_commands_and_the_mig_key_change(run, tmp_path):
    """Pools matched by node labels get their labels from a node template, which only new nodes read: the plan
    gives the kubectl label command for the nodes there now, and says their old MIG config key is missing."""
    items = copy.deepcopy(A100_NODES[:2])
    for item in items:
        item["metadata"]["labels"]["example.com/gpu-group"] = "a100-mig"
    code, plan, _ = _plan(run, tmp_path, RKE2, items)
    assert code == 1
    by_kind = {i["kind"]: i for i in plan["impacts"]}
    relabel = by_kind["relabel-needed"]
    assert relabel["severity"] == "pending" and relabel["nodeNames"] == ["gpu-a100-01", "gpu-a100-02"]
    command = relabel["safe"].removeprefix("right after the sync: ")
    assert command.startswith("kubectl label node gpu-a100-01 gpu-a100-02 --overwrite gpuconf.dev/pool=a100-mig ")
    assert " nvidia.com/mig.config=mig-3g-" in command and " nvidia.com/device-plugin.config=" in command
    missing = by_kind["config-key-missing"]
    assert missing["nodeNames"] == ["gpu-a100-01", "gpu-a100-02"]
    assert missing["message"].startswith("the node keeps nvidia.com/mig.config=all-3g.40gb from before gpuconf (its "
                                         "pool's node template does not relabel it), a key gpuconf's mig-parted "
                                         "ConfigMap does not have")
    assert "mig-repartition" not in by_kind  # the layout is the same: only its key changes


@pytest.mark.parametrize("content, reason", [
    ('{"kind": "PodList", "items": []}', "expected a NodeList, got kind 'PodList'"),
    ("- just\n- a list\n", "expected a JSON NodeList, the output of `kubectl get nodes -o json`"),
])
def test_a_nodelist_that_is_not_one_is_exit_2_and_writes_nothing(run, tmp_path, content, reason):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    draft = tmp_path / "draft.yaml"
    draft.write_text(MERGED, encoding="utf-8")
    result = run("diff", str(draft), "--against-installation", "--nodes", str(bad))
    assert result.exit_code == 2 and reason in result.stderr and result.stdout == ""
    out = tmp_path / "new.yaml"
    result = run("import", "--nodes", str(bad), "-o", str(out))
    assert result.exit_code == 2 and reason in result.stderr and not out.exists()


def test_a_values_file_that_is_not_one_is_exit_2_and_writes_nothing(run, tmp_path):
    bad = tmp_path / "values.yaml"
    bad.write_text("- a\n- list\n", encoding="utf-8")
    code, plan, result = _plan(run, tmp_path, MERGED, A100_NODES, "--values", str(bad))
    assert code == 2 and plan is None
    assert result.stderr.startswith(f"gpuconf: {bad}")
    out, report = tmp_path / "new.yaml", tmp_path / "report.json"
    result = run("import", "--nodes", _write(tmp_path, "a100.json", A100_NODES), "--values", str(bad), "-o", str(out),
                 "--report", str(report))
    assert result.exit_code == 2 and result.stderr.startswith(f"gpuconf: {bad}")
    assert not out.exists() and not report.exists()


# --- existing nodes get their labels -----------------------------------------------------------------------------


@pytest.mark.parametrize("distribution, folder, service", [
    ("rke2", "/etc/rancher/rke2/config.yaml.d", "rke2-agent"),
    ("k3s", "/etc/rancher/k3s/config.yaml.d", "k3s-agent"),
])
def test_rke2_and_k3s_pools_get_a_config_drop_in_and_the_checklist_labels_the_nodes_there_now(
        run, tmp_path, distribution, folder, service):
    intent = tmp_path / "trial.yaml"
    intent.write_text(RKE2.replace("distribution: rke2", f"distribution: {distribution}").replace(
        "      sharing: mig-3g\n",
        "      sharing: mig-3g\n      taints:\n        - {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"),
        encoding="utf-8")
    assert run("render", str(intent), "-o", str(tmp_path / "out")).exit_code == 0
    out = tmp_path / "out" / "trial"
    assert sorted(p.name for p in (out / "node-templates").iterdir()) == [f"a100-mig.{distribution}-config.yaml"]
    text = (out / "node-templates" / f"a100-mig.{distribution}-config.yaml").read_text()
    body = yaml.safe_load(text)
    key = [v for v in body["node-label+"] if v.startswith("nvidia.com/mig.config=")][0]
    assert body == {"node-label+": ["example.com/gpu-group=a100-mig", "gpuconf.dev/pool=a100-mig",
                                    "nvidia.com/device-plugin.config=exclusive-c0fcc874", key],
                    "node-taint+": ["nvidia.com/gpu=present:NoSchedule"]}
    assert f"# Pool a100-mig: copy to {folder}/50-gpuconf-a100-mig.yaml on the pool's nodes, then restart " \
        f"{service}\n" in text
    assert "KUBELET_EXTRA_ARGS" not in text
    steps = {s["title"]: s for s in json.loads((out / "report.json").read_text())["acceptance"]}
    title = ("Label the nodes that exist now of the pools whose node template, node-pool command or Karpenter "
             "NodePool labels only new nodes (a100-mig)")
    assert steps[title]["commands"] == [
        "kubectl label nodes -l example.com/gpu-group=a100-mig --overwrite gpuconf.dev/pool=a100-mig "
        f"nvidia.com/device-plugin.config=exclusive-c0fcc874 {key}",
        "kubectl taint nodes -l example.com/gpu-group=a100-mig --overwrite nvidia.com/gpu=present:NoSchedule"]
    assert f"kubectl label nodes -l example.com/gpu-group=a100-mig --overwrite" in (out / "REPORT.md").read_text()


def test_the_report_and_the_draft_name_an_installations_sharing_config_alike(run, tmp_path):
    """Real H200 nodes time-sliced x4 by the installation's own config key h200-ts4: the draft's profile and the
    report's configs row both call it h200-ts4."""
    items = [H.node(f"gpu-h200-{i:02d}", REAL["dp-ts4-ab3e8595"]["labels"],
                    labels={"nvidia.com/device-plugin.config": "h200-ts4"}, capacity={"nvidia.com/gpu": "32"})
             for i in (1, 2)]
    (tmp_path / "values.yaml").write_text("devicePlugin:\n  config:\n    name: plugin-config\n    default: any\n")
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plugin-config\n  namespace: gpu-operator\ndata:\n"
        "  any: |-\n    version: v1\n  h200-ts4: |-\n    version: v1\n    sharing:\n      timeSlicing:\n"
        "        resources:\n        - name: nvidia.com/gpu\n          replicas: 4\n")
    report = tmp_path / "report.json"
    result = run("import", "--nodes", _write(tmp_path, "ts.json", items), "--values", str(tmp_path / "values.yaml"),
                 "--configmap", str(tmp_path / "cm.yaml"), "--report", str(report))
    assert result.exit_code == 0, result.stderr
    spec = yaml.safe_load(result.stdout)["spec"]
    # The nodes' own key is kept, pinned to the hash of the content gpuconf renders under it (issue 41 item 3).
    assert spec["sharingProfiles"] == {"h200-ts4": {"timeSlicing": {"replicas": 4}, "keepNames": {
        "devicePlugin": {"name": "h200-ts4", "content": "ab3e8595"}}}}
    assert [p["sharing"] for p in spec["pools"]] == ["h200-ts4"]
    rows = {r["config"]: r["profile"] for r in json.loads(report.read_text())["configs"]}
    assert rows["h200-ts4"] == "h200-ts4"


def test_a_draft_whose_first_sync_repartitions_a_node_is_an_error_naming_it():
    """What import checks before it exits 0: a first sync that repartitions or re-shares a running node is an error
    line per node (the merged draft of the trial would repartition gpu-a100-03)."""
    from gpuconf.impact import installation as I

    plan = I.of_draft(MERGED, copy.deepcopy(A100_NODES))
    (line,) = I.surprises(plan)
    assert line.startswith("gpuconf: error: the draft's first sync changes node gpu-a100-03: mig-repartition (pool "
                           "a100-80gb's MIG config mig-all-3g-40gb-")
    split = I.of_draft(yaml.safe_dump(yaml.safe_load(MERGED)), copy.deepcopy(A100_NODES[:2]))
    assert I.surprises(split) == []


def test_the_first_sync_plan_reads_a_live_installation_with_get_requests_only(run, tmp_path):
    """--kubeconfig: the nodes, the gpu-operator release's values (here what gpuconf renders for the intent) and the
    ConfigMaps they name; the cluster runs what the intent renders, so the first sync is equivalent."""
    from conftest import ROOT
    from gpuconf.pipeline import render_path
    from test_adopt import _cluster, _release_secret

    intent = ROOT / "examples" / "single-pool.yaml"
    tree = render_path(str(intent), "out").tree
    values = tree.values.overrides()
    objects = {"/api/v1/secrets": {"kind": "SecretList", "apiVersion": "v1", "metadata": {},
                                   "items": [_release_secret(values, 1, version=tree.plan.chart_version)]}}
    api, kubeconfig = _cluster(tmp_path, objects)
    with api:
        result = run("diff", str(intent), "--against-installation", "--kubeconfig", kubeconfig(), "--format", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    plan = json.loads(result.stdout)
    assert (plan["equivalent"], plan["worst"], [i["kind"] for i in plan["impacts"]]) == (True, "none", ["none"])
    assert {m for m, _, _ in api.requests} == {"GET"}
    assert "/api/v1/nodes" in {p for _, p, _ in api.requests}


def test_a_changed_rke2_drop_in_is_explained_by_the_impact_plan(run, tmp_path):
    """The drop-in is YAML (a document, not a text file): changing it is node-replacement, never unclassified."""
    before = tmp_path / "trial.yaml"
    before.write_text(RKE2, encoding="utf-8")
    assert run("render", str(before), "-o", str(tmp_path / "out")).exit_code == 0
    before.write_text(RKE2.replace("      sharing: mig-3g\n", "      sharing: mig-3g\n      taints:\n"
                                   "        - {key: example.com/gpu, value: a100, effect: NoSchedule}\n"),
                      encoding="utf-8")
    result = run("diff", str(before), "--against", str(tmp_path / "out"), "--format", "json")
    kinds = {i["kind"]: i for i in json.loads(result.stdout)["impacts"]}
    assert "unclassified" not in kinds
    replaced = kinds["node-replacement"]
    assert replaced["documents"] == ["node-templates/a100-mig.rke2-config.yaml: document"]
    assert "only when its agent starts (RKE2 and k3s apply node-label at every start)" in replaced["message"]


@pytest.mark.parametrize("edit", ["new-pool", "to-rke2"])
def test_an_added_or_moved_rke2_drop_in_is_explained(run, tmp_path, edit):
    """A new pool's drop-in is capacity-change's; a pool moving from kubelet flags to the drop-in (the cluster now
    says rke2) is node-replacement's: neither is unclassified."""
    intent = tmp_path / "trial.yaml"
    before = RKE2 if edit == "new-pool" else RKE2.replace("    distribution: rke2\n", "")
    intent.write_text(before, encoding="utf-8")
    assert run("render", str(intent), "-o", str(tmp_path / "out")).exit_code == 0
    extra = ("    - name: a100-b\n      gpu: A100-80GB\n      gpusPerNode: 8\n      nodes: 1\n      match:\n"
             "        nodeLabels:\n          example.com/gpu-group: a100-b\n")
    intent.write_text(RKE2 + extra if edit == "new-pool" else RKE2, encoding="utf-8")
    result = run("diff", str(intent), "--against", str(tmp_path / "out"), "--format", "json")
    impacts = json.loads(result.stdout)["impacts"]
    assert "unclassified" not in {i["kind"] for i in impacts}, impacts
    claimed = {d for i in impacts for d in i["documents"]}
    pool = "a100-b" if edit == "new-pool" else "a100-mig"
    assert f"node-templates/{pool}.rke2-config.yaml: document" in claimed


def _driver(item: dict, version: str) -> dict:
    """The node as GFD labels it when it runs driver `version` (the real node ran 580.159.04)."""
    major, minor, rev = version.split(".")
    item["metadata"]["labels"].update({
        "nvidia.com/cuda.driver-version.full": version, "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor, "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor, "nvidia.com/cuda.driver.rev": rev})
    return item


def test_a_draft_that_would_reinstall_a_nodes_driver_is_an_error_naming_it(run, tmp_path):
    """Two H200 nodes on 580.159.04, one on 570.172.08, no values: the version the draft pins is import's own choice
    (most nodes'), and its first sync would reinstall gpu-h200-03's driver: exit 1 naming the node. When the
    installation's values pin that version, the reinstall is the installation's own decision: exit 0."""
    items = _nodes(3)
    _driver(items[2], "570.172.08")
    nodes = _write(tmp_path, "mixed.json", items)
    out = tmp_path / "draft.yaml"
    result = run("import", "--nodes", nodes, "--name", "h200", "-o", str(out))
    assert result.exit_code == 1, result.stderr
    assert out.exists()  # the draft is written: the error says what to decide before the first sync
    errors = [line for line in result.stderr.splitlines() if line.startswith("gpuconf: error:")]
    assert errors == ["gpuconf: error: the draft's first sync changes node gpu-h200-03: driver-reinstall (the driver "
                      "moves from 570.172.08 to 580.159.04: the upgrade controller drains the node and reinstalls the "
                      "driver, evicting its GPU pods)"]
    (tmp_path / "values.yaml").write_text('driver:\n  version: "580.159.04"\n', encoding="utf-8")
    pinned = run("import", "--nodes", nodes, "--values", str(tmp_path / "values.yaml"), "--name", "h200")
    assert pinned.exit_code == 0, pinned.stderr
    assert "disruptive driver-reinstall [h200] on gpu-h200-03" in pinned.stderr
    assert "gpuconf: error:" not in pinned.stderr

"""The impact plan of `gpuconf diff --against`: for each impact kind a before/after pair of intents with the exact
impacts expected, --fail-on's exit codes, the formats, live node and pod counts, and properties over random intents:
every changed document is explained by an impact, and edits that change nothing deployed give only `none`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

import strategies as S
from gpuconf import plan as P
from gpuconf.intent.loader import load_text
from gpuconf.intent.validate import validate_document
from gpuconf.impact import KINDS, ORDER, SEVERITIES, plan_impacts
from gpuconf.output.treediff import compare_trees
from gpuconf.output.writer import with_record
from gpuconf.render.tree import Command, render_tree

ROOT = Path(__file__).resolve().parent.parent


def example(name: str) -> dict:
    """An example intent as plain data."""
    path = ROOT / "examples" / name
    return S.load_plain((path if path.exists() else ROOT / "examples" / "platforms" / name).read_text("utf-8"))


def files(intent: dict | str) -> dict[str, str]:
    """The folder a valid intent renders to (relative path -> text, the record included)."""
    text = intent if isinstance(intent, str) else S.dump_yaml(intent)
    result = validate_document(load_text(text, "intent.yaml"))
    assert result.ok, [f.text() for f in result.findings]
    tree = render_tree(P.build(result.intent, "intent.yaml", result.document), Command("intent.yaml", "out"))
    return with_record(tree.files)


def impacts(before, after):
    """The impact plan of moving from the render of before to the render of after, and the document diff."""
    old, new = files(before), files(after)
    diff = compare_trees(old, new, "out/x", "new.yaml")
    return plan_impacts(old, new, diff), diff


def summary(plan) -> list[tuple]:
    """kind, severity, pools, nodes, resources of every impact, in the plan's order."""
    return [(i.kind, i.severity, i.pools, i.nodes, i.resources) for i in plan.impacts]


def assert_covered(plan, diff) -> None:
    """Every changed document is explained by some impact, and none fell through to `unclassified`."""
    covered = {id(d) for i in plan.impacts for d in i.documents}
    missing = [f"{d.file}: {d.title}" for d in diff.documents if id(d) not in covered]
    assert not missing, f"changed documents no impact explains: {missing}"
    assert "unclassified" not in {i.kind for i in plan.impacts}, [i.message for i in plan.impacts]
    if not diff.documents and not any(i.kind == "operator-upgrade" for i in plan.impacts):
        assert {i.severity for i in plan.impacts} == {"none"}  # the sync changes nothing


# --- one before/after pair per impact kind ------------------------------------------------------------------------


def _pool(spec: dict, name: str) -> dict:
    return next(p for p in spec["pools"] if p["name"] == name)


def _pair(name: str, edit) -> tuple[dict, dict]:
    """An example as before, and after: a copy that edit changed (given the copy's spec)."""
    before = example(name)
    after = copy.deepcopy(before)
    edit(after["spec"])
    return before, after


def waves_first_time():
    after = example("heterogeneous.yaml")
    before = copy.deepcopy(after)
    del before["spec"]["driver"]["upgrade"]["canaryPool"]
    return before, after


def driver_version():
    def edit(spec):
        spec.setdefault("driver", {})["version"] = "595.91.07"

    return _pair("single-pool.yaml", edit)


def driver_registry():
    """The images move to a mirror: values' driver.repository (and its manager's) change the ClusterPolicy driver's
    pod template, which the upgrade controller rolls out as a reinstall."""
    def edit(spec):
        spec["operator"]["registry"] = "registry.corp.example/nvidia"

    return _pair("single-pool.yaml", edit)


def mirror_secret():
    """A new pull secret reaches the driver pod too; the airgapped example's autoUpgrade is off."""
    def edit(spec):
        spec["operator"]["imagePullSecrets"] = ["enclave-mirror2"]

    return _pair("airgapped.yaml", edit)


def nvd_secret():
    """A pull secret reaches every per-pool NVIDIADriver (spec.imagePullSecrets), each a driver pod of its own."""
    def edit(spec):
        spec["operator"]["imagePullSecrets"] = ["corp-mirror"]

    return _pair("heterogeneous.yaml", edit)


def wave_skipped():
    before = example("heterogeneous.yaml")
    upgrade = before["spec"]["driver"]["upgrade"]
    del upgrade["canaryPool"]
    upgrade["waves"] = [["notebooks-l4"], ["infer-a100"], ["train-h100"]]
    upgrade["rollout"] = {"version": "580.126.20", "wave": 1}
    after = copy.deepcopy(before)
    after["spec"]["driver"]["upgrade"]["rollout"]["wave"] = 3
    return before, after


def time_slicing_replicas():
    def edit(spec):
        spec["sharingProfiles"]["notebooks-x4"]["timeSlicing"]["replicas"] = 2
        spec["teams"][1]["quota"]["notebooks-l4"] = 40

    return _pair("heterogeneous.yaml", edit)


def _counted_quotas(spec: dict) -> None:
    """The teams' infer-a100 quotas as counts of nvidia.com/gpu, with no per-profile Kueue limits."""
    spec["teams"][0]["quota"]["infer-a100"] = 16
    spec["teams"][1]["quota"]["infer-a100"] = 64
    for team in spec["queueing"]["kueue"]["teams"].values():
        team.pop("borrowingLimit", None)
        team.pop("lendingLimit", None)


def mig_strategy_flip():
    """The MIG pool's layout becomes one profile: the derived strategy flips from mixed to single."""
    def edit(spec):
        spec["sharingProfiles"]["infer-mixed"]["mig"]["layout"] = {"1g.10gb": 7}
        _counted_quotas(spec)

    return _pair("heterogeneous.yaml", edit)


def mig_strategy_to_default():
    """The only MIG pool moves to time-slicing: no MIG pool is left, the values set no strategy, and the chart's
    default (single) replaces the deployed mixed one."""
    def edit(spec):
        _pool(spec, "infer-a100")["sharing"] = "notebooks-x4"
        _counted_quotas(spec)

    return _pair("heterogeneous.yaml", edit)


def mig_layout():
    def edit(spec):
        spec["sharingProfiles"]["infer-mixed"]["mig"]["layout"] = {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}
        spec["teams"][1]["quota"]["infer-a100"]["1g.10gb"] = 32

    return _pair("heterogeneous.yaml", edit)


def mig_preset_on_gke():
    def edit(spec):
        spec["sharingProfiles"]["small-training"]["mig"]["preset"] = "all-3g.20gb"

    return _pair("gke.yaml", edit)


def karpenter_template():
    def edit(spec):
        spec["sharingProfiles"]["inference-x2"]["timeSlicing"]["replicas"] = 3

    return _pair("eks.yaml", edit)


def ami_version():
    def edit(spec):
        spec["cluster"]["eks"]["karpenter"]["amiVersion"] = "v20251001"

    return _pair("eks.yaml", edit)


def node_role():
    def edit(spec):
        spec["cluster"]["eks"]["karpenter"]["role"] = "KarpenterNodeRole-gpu"

    return _pair("eks.yaml", edit)


def a10g(key: str, value, setting: bool = True):
    """The EKS example, and a copy whose Karpenter pool a10g-inference has one of its karpenter settings (or, with
    setting False, one of its own keys) changed."""
    def edit(spec):
        pool = _pool(spec, "a10g-inference")
        (pool["karpenter"] if setting else pool)[key] = value

    return lambda: _pair("eks.yaml", edit)


def karpenter_pool_removed():
    def edit(spec):
        spec["pools"] = [p for p in spec["pools"] if p["name"] != "l40s-batch"]

    return _pair("eks.yaml", edit)


def argocd_on_karpenter():
    """Argo CD syncs an EKS cluster whose pools Karpenter launches: the probes are PostSync hooks."""
    before = example("eks.yaml")
    before["spec"]["delivery"] = {"tool": "argocd", "repoURL": "https://git.example.com/gitops.git",
                                  "targetRevision": "main", "path": "out"}
    for pool in before["spec"]["pools"][:2]:  # Karpenter pools probe by hand unless asked to on every sync
        pool["probe"] = "hook"
    after = copy.deepcopy(before)
    after["spec"]["access"] = {"observers": ["group:sre"]}
    return before, after


def taint_added():
    def edit(spec):
        _pool(spec, "notebooks-l4")["taints"] = [{"key": "example.com/notebooks", "effect": "NoExecute"}]

    return _pair("heterogeneous.yaml", edit)


def taint_preferred():
    def edit(spec):
        _pool(spec, "train-h100")["taints"][0]["effect"] = "PreferNoSchedule"

    return _pair("heterogeneous.yaml", edit)


def preferred_taint_on_a_template():
    def edit(spec):
        _pool(spec, "t4-dev")["taints"] = [{"key": "example.com/dev", "effect": "PreferNoSchedule"}]

    return _pair("eks.yaml", edit)


def fewer_nodes():
    """A declared node count alone changes nothing deployed: the sync adds or removes no node."""
    def edit(spec):
        _pool(spec, "train-h100")["nodes"] = 8

    return _pair("heterogeneous.yaml", edit)


def gke_node_count():
    def edit(spec):
        _pool(spec, "l4-serving")["nodes"] = 2

    return _pair("gke.yaml", edit)


def quota_drop():
    def edit(spec):
        spec["teams"][0]["quota"]["train-h100"] = 32

    return _pair("heterogeneous.yaml", edit)


def chart_move():
    def edit(spec):
        spec["operator"]["chartVersion"] = "v26.7.0"

    return _pair("single-pool.yaml", edit)


def monitoring_interval():
    def edit(spec):
        spec["monitoring"]["interval"] = "60s"

    return _pair("heterogeneous.yaml", edit)


def new_developer():
    def edit(spec):
        spec["access"]["developers"]["research"].append("group:interns")

    return _pair("heterogeneous.yaml", edit)


def pool_match():
    def edit(spec):
        _pool(spec, "notebooks-l4")["match"] = {"nodeLabels": {"node.example.com/kind": "notebooks"}}

    return _pair("heterogeneous.yaml", edit)


def comments_only():
    text = (ROOT / "examples" / "heterogeneous.yaml").read_text("utf-8")
    return text, "# reviewed by the platform team\n" + text.replace("    # no 1g.10gb slices", "    # none of 1g.10gb")


def allocation_switch():
    before = example("single-pool.yaml")
    before["spec"]["cluster"]["kubernetesVersion"] = "1.34"
    before["spec"]["operator"]["chartVersion"] = "v26.7.0"
    after = copy.deepcopy(before)
    after["spec"]["cluster"]["allocation"] = "dra"
    return before, after


def _pool_pair(name: str, pool: str, edit):
    """A before/after pair of an example where edit changed one pool (given the copy's pool)."""
    return lambda: _pair(name, lambda spec: edit(_pool(spec, pool)))


#: The L4 pool, matched by PCI device id, becomes an L40S pool: its running L4 nodes stop matching its rule.
gpu_model = _pool_pair("heterogeneous.yaml", "notebooks-l4", lambda pool: pool.update(gpu="L40S"))
single_gpu_model = _pool_pair("single-pool.yaml", "l40s", lambda pool: pool.update(gpu="L4"))
host_driver_gpu_model = _pool_pair("hybrid.yaml", "legacy-a100", lambda pool: pool.update(gpu="A100-80GB"))
gke_taint_removed = _pool_pair("gke.yaml", "l4-serving", lambda pool: pool.pop("taints"))
gke_taint_effect = _pool_pair("gke.yaml", "l4-serving", lambda pool: pool["taints"][0].update(effect="NoExecute"))
karpenter_taint_removed = _pool_pair("eks.yaml", "l40s-batch", lambda pool: pool.pop("taints"))
aks_taint_value = _pool_pair("aks.yaml", "t4", lambda pool: pool["taints"][0].update(value="gpu-t4"))
openshift_taint_removed = _pool_pair("openshift.yaml", "h100", lambda pool: pool.pop("taints"))


def pool_rename():
    def edit(spec):
        _pool(spec, "notebooks-l4")["name"] = "notebooks"
        spec["driver"]["upgrade"]["canaryPool"] = "notebooks"
        spec["teams"][1]["quota"]["notebooks"] = spec["teams"][1]["quota"].pop("notebooks-l4")

    return _pair("heterogeneous.yaml", edit)


def gke_time_slicing():
    def edit(spec):
        spec["sharingProfiles"]["serving-x3"]["timeSlicing"]["replicas"] = 2

    return _pair("gke.yaml", edit)


def team_namespace_removed():
    return _pair("heterogeneous.yaml", lambda spec: spec["teams"][0].update(namespaces=["research"]))


def _override(path: str, value):
    return lambda spec: spec.setdefault("overrides", []).append(
        {"path": path, "value": value, "why": "the platform team decided this change"})


def vm_passthrough():
    return _pair("single-pool.yaml", _override("sandboxWorkloads", {"enabled": True, "defaultWorkload": "vm-passthrough"}))


def device_plugin_off():
    return _pair("single-pool.yaml", _override("devicePlugin.enabled", False))


def new_repository():
    return _pair("heterogeneous.yaml", lambda spec: spec["delivery"].update(
        repoURL="https://git.attacker.example/gitops.git", targetRevision="HEAD"))


ALL3 = ["train-h100", "infer-a100", "notebooks-l4"]
PROBES = ("probe-run", "none", ["infer-a100", "notebooks-l4", "train-h100"], None, [])
MIG = ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]
#: What moving pool infer-a100 off the mixed MIG strategy does (to one profile, or off MIG).
MIG_FLIP = [
    ("mig-repartition", "disruptive", ["infer-a100"], 4, ["nvidia.com/gpu", *MIG]),
    ("config-key-removed", "disruptive", ["infer-a100"], 4, MIG),
    ("node-replacement", "disruptive", ["infer-a100"], 4, []),
    ("resource-rename", "pending", ["infer-a100"], 4, MIG),
    ("capacity-change", "pending", ["infer-a100"], None, MIG),
    ("operand-restart", "restart", ALL3, 26, []), PROBES,
    ("object-change", "none", [], None, [])]

#: name -> (before/after pair, the exact impacts (kind, severity, pools, nodes, resources), words each message holds)
def _mixed_mig_a100(version: str) -> dict:
    """A MIG pool and a whole-GPU pool of A100s under the mixed strategy, on one cluster driver version."""
    return {"apiVersion": "gpuconf.dev/v1alpha1", "kind": "ClusterIntent", "metadata": {"name": "lab"},
            "spec": {"cluster": {"kubernetesVersion": "1.33"}, "operator": {"chartVersion": "v26.7.0"},
                     "driver": {"version": version},
                     "sharingProfiles": {"mixed-slices": {"mig": {"layout": {
                         "3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}}},
                     "pools": [{"name": "a100-mig", "gpu": "A100-80GB", "gpusPerNode": 8, "nodes": 2,
                                "match": {"nodeLabels": {"node-type": "a100-mig"}}, "sharing": "mixed-slices"},
                               {"name": "a100-whole", "gpu": "A100-80GB", "gpusPerNode": 8, "nodes": 2,
                                "match": {"nodeLabels": {"node-type": "a100"}}}]}}


def hazard_entered():
    """A driver bump into the 570 builds that cannot schedule on nodes mixing MIG slices and whole GPUs."""
    return _mixed_mig_a100("570.172.08"), _mixed_mig_a100("570.148.08")


def hazard_left():
    """The bump out of that range, to the fixed 570.172.08."""
    return _mixed_mig_a100("570.148.08"), _mixed_mig_a100("570.172.08")


def nvlink_rack():
    """A GB200 pool becomes an NVL72 rack (pools[].nvlink): the DRA driver's release, a ComputeDomain, the Kueue
    topology."""
    before = example("nvl72.yaml")
    _pool(before["spec"], "nvl72").pop("nvlink")
    before["spec"].pop("computeDomains")
    return before, example("nvl72.yaml")


def nvlink_rack_removed():
    """The reverse: the release is pruned with its CRD and the ComputeDomain is deleted."""
    before, after = nvlink_rack()
    return after, before


CASES = {
    "compute-domains: a rack declared": (nvlink_rack, [
        ("compute-domains", "pending", ["nvl72"], None, []),
        ("compute-domains", "none", ["nvl72"], None, []), ("compute-domains", "none", ["nvl72"], None, []),
        ("probe-run", "none", ["infer-b200", "nvl72"], None, []), ("object-change", "none", [], None, [])],
        {"compute-domains": "the DRA driver's release is installed beside the operator's"}),
    "compute-domains: a rack dropped": (nvlink_rack_removed, [
        ("compute-domains", "disruptive", ["nvl72"], None, []),
        ("compute-domains", "disruptive", ["nvl72"], None, []),
        ("object-removed", "disruptive", [], None, []),  # the release's namespace, and what runs in it
        ("compute-domains", "pending", ["nvl72"], None, []),
        ("probe-run", "none", ["infer-b200", "nvl72"], None, []), ("object-change", "none", [], None, [])],
        {"compute-domains": "ComputeDomain(s) training/gpuconf-nvl72 are deleted: their IMEX daemons stop"}),
    "object-removed: a team's namespace": (team_namespace_removed, [
        ("object-removed", "disruptive", [], None, []), PROBES],
        {"object-removed": "Namespace research-batch is deleted by the sync (Argo CD prunes what leaves the folder)"}),
    "workload-mode-change": (vm_passthrough, [("workload-mode-change", "disruptive", ["l40s"], 3, [])],
                             {"workload-mode-change": "moves from container to vm-passthrough workloads"}),
    "operand-switch": (device_plugin_off, [("operand-switch", "disruptive", ["l40s"], 3, [])],
                       {"operand-switch": "devicePlugin.enabled: true -> false: the operator deletes the device plugin"}),
    "delivery-source": (new_repository, [("delivery-source", "disruptive", ALL3, None, []), PROBES],
                        {"delivery-source": "from the next sync the cluster runs whatever that source holds"}),
    "driver-mode-switch": (waves_first_time, [
        ("driver-mode-switch", "disruptive", ALL3, 26, []), PROBES,
        ("object-change", "none", [], None, [])],
        {"driver-mode-switch": "from the ClusterPolicy to per-pool NVIDIADriver objects"}),
    "allocation-switch": (allocation_switch, [
        ("allocation-switch", "disruptive", ["l40s"], 3, []),
        ("resource-rename", "pending", ["l40s"], 3, ["nvidia.com/gpu"]),
        ("probe-run", "pending", ["l40s"], None, []),  # the probe's pod template changes: a plain apply refuses it
        ("probe-run", "none", ["l40s"], None, []), ("object-change", "none", [], None, [])],
        {"allocation-switch": "from the device plugin (ClusterPolicy) to DRA (GPUCluster)"}),
    "hazard: a driver bump into a broken range": (hazard_entered, [
        ("driver-upgrade", "disruptive", ["a100-mig", "a100-whole"], 4, []),
        ("hazard", "pending", ["a100-mig"], 2, [])],
        {"hazard": "the change enters known hazard driver-570-mig-with-whole-gpus (applies to pools a100-mig): GPU "
                   "pods stay Pending forever on nodes that carry MIG slices next to full GPUs"}),
    "hazard: the bump out of it": (hazard_left, [
        ("driver-upgrade", "disruptive", ["a100-mig", "a100-whole"], 4, []),
        ("hazard", "none", ["a100-mig"], None, [])],
        {"hazard": "the change leaves known hazard driver-570-mig-with-whole-gpus (GPU pods stay Pending forever on "
                   "nodes that carry MIG slices next to full GPUs): it no longer applies"}),
    "driver-upgrade": (driver_version, [("driver-upgrade", "disruptive", ["l40s"], 3, [])],
                       {"driver-upgrade": "from 580.126.20 to 595.91.07"}),
    "driver-upgrade: the registry of a ClusterPolicy driver": (driver_registry, [
        ("driver-upgrade", "disruptive", ["l40s"], 3, []), ("probe-run", "pending", ["l40s"], None, []),
        ("operand-restart", "restart", ["l40s"], 3, []), ("probe-run", "none", ["l40s"], None, [])],
        {"driver-upgrade": "the driver pod of pool(s) l40s changes (driver.manager, driver.repository): the upgrade "
                           "controller deletes the GPU pods on each node (its GPU workloads stop) and reinstalls the "
                           "driver, 1 node(s) at a time per ClusterPolicy"}),
    "driver-upgrade: a pull secret, autoUpgrade off": (mirror_secret, [
        ("driver-upgrade", "disruptive", ["analytics-a30", "dev-t4"], 11, []),
        ("operand-restart", "restart", ["analytics-a30", "dev-t4"], 11, []),
        ("probe-run", "none", ["analytics-a30", "dev-t4"], None, [])],
        {"driver-upgrade": "changes (driver.imagePullSecrets): autoUpgrade is off, so the sync itself reinstalls "
                           "nothing; each node's driver is reinstalled, and its GPU pods stop, at the next deletion "
                           "of its driver pod"}),
    "driver-upgrade: a pull secret of the NVIDIADrivers": (nvd_secret, [
        ("driver-upgrade", "disruptive", ALL3, 26, []), ("operand-restart", "restart", ALL3, 26, []), PROBES],
        {"driver-upgrade": "the driver pod of pool(s) train-h100, infer-a100, notebooks-l4 changes "
                           "(gdrcopy.imagePullSecrets, imagePullSecrets): the upgrade controller drains each node (its "
                           "GPU workloads stop) and reinstalls the driver, 1 node(s) at a time per NVIDIADriver"}),
    "driver-upgrade, two waves at once": (wave_skipped, [
        ("driver-upgrade", "disruptive", ["train-h100", "infer-a100"], 20, []), PROBES],
        # 16 nodes of train-h100, one at a time: 16 x (10 min + 900 s drain + 300 s pod deletion) = 480 minutes
        {"driver-upgrade": "about 480 minutes by the roll-out formula; waves 2 to 3 upgrade in this one commit"}),
    "device-plugin-restart": (time_slicing_replicas, [
        ("capacity-change", "pending", ["notebooks-l4"], 6, ["nvidia.com/gpu"]),
        ("capacity-change", "pending", ["notebooks-l4"], None, ["nvidia.com/gpu"]),  # the quota, on its pool
        ("device-plugin-restart", "restart", ["notebooks-l4"], 6, ["nvidia.com/gpu"]), PROBES],
        {"device-plugin-restart": "advertises 8 nvidia.com/gpu instead of 16 nvidia.com/gpu",
         "capacity-change": "product nvidia.com/gpu on notebooks-l4 48 -> 40"}),
    "resource-rename": (mig_strategy_flip, MIG_FLIP,
        {"resource-rename": "MIG strategy flips from mixed to single; it now advertises nvidia.com/gpu): pods and Jobs "
                            "asking for the old name stay Pending, and what still asks for it stops working: team "
                            "quotas product, research; Kueue ClusterQueues gpuconf-acceptance, gpuconf-team-product, "
                            "gpuconf-team-research; probes gpuconf-probe-infer-a100"}),
    "resource-rename: the strategy falls back to the chart's default": (mig_strategy_to_default, MIG_FLIP,
        {"resource-rename": "(the cluster's MIG strategy flips from mixed to single, the chart's default now that no "
                            "MIG pool is left; it now advertises nvidia.com/gpu)"}),
    "mig-repartition": (mig_layout, [
        ("mig-repartition", "disruptive", ["infer-a100"], 4, MIG),
        ("config-key-removed", "disruptive", ["infer-a100"], 4, MIG),
        ("node-replacement", "disruptive", ["infer-a100"], 4, []),
        ("capacity-change", "pending", ["infer-a100"], 4, ["nvidia.com/mig-1g.10gb"]),
        ("capacity-change", "pending", ["infer-a100"], None, ["nvidia.com/mig-1g.10gb"]), PROBES],
        {"mig-repartition": "MIG layout changes from `infer-mixed-7582d368` (MIG 1g.10gb x2, 2g.20gb x1, "
                            "3g.40gb x1)"}),
    "mig-repartition on GKE": (mig_preset_on_gke, [
        ("mig-repartition", "disruptive", ["a100-train"], 2, [
            "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb"]),
        ("resource-rename", "pending", ["a100-train"], 2, [
            "nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb"]),
        ("probe-run", "pending", ["a100-train"], None, []),
        ("operand-restart", "restart", ["l4-serving", "a100-train"], 6, []),
        ("probe-run", "none", ["a100-train"], None, [])],
        {"mig-repartition": "mig-manager stops the GPU clients on every node of pool a100-train, kills its GPU pods "
                            "and repartitions every GPU from `small-training-68e11c76`",
         "resource-rename": "probes gpuconf-probe-a100-train"}),
    "node-replacement": (karpenter_template, [
        ("config-key-removed", "disruptive", ["a10g-inference"], 6, ["nvidia.com/gpu.shared"]),
        ("node-replacement", "disruptive", ["a10g-inference"], 6, []),
        ("capacity-change", "none", ["a10g-inference"], 6, ["nvidia.com/gpu.shared"]),
        ("object-change", "none", ["a10g-inference"], None, [])],  # its NodeOverlay (no drift) counts 12, not 8
        {"node-replacement": "Karpenter treats every node of pool a10g-inference as drifted and replaces it"}),
    "node-replacement: the AMI": (ami_version, [  # each pool has its own EC2NodeClass
        ("node-replacement", "disruptive", ["a10g-inference"], 6, []),
        ("node-replacement", "disruptive", ["l40s-batch"], 2, [])],
        {"node-replacement": "EC2NodeClass a10g changes (spec.amiSelectorTerms[0].alias)"}),
    "node-replacement: the node role, in the node class's hash": (node_role, [
        ("node-replacement", "disruptive", ["a10g-inference"], 6, []),
        ("node-replacement", "disruptive", ["l40s-batch"], 2, [])],
        {"node-replacement": "EC2NodeClass a10g changes (spec.role), so its hash (karpenter.k8s.aws/ec2nodeclass-hash) "
                             "changes: Karpenter treats the nodes of every NodePool that uses it (a10g-inference) as "
                             "drifted"}),
    "node-replacement: the root volume": (a10g("rootVolumeGiB", 300), [
        ("node-replacement", "disruptive", ["a10g-inference"], 6, [])],
        {"node-replacement": "(spec.blockDeviceMappings[0].ebs.volumeSize)"}),
    "node-replacement: a requirement widens": (a10g("capacityTypes", ["on-demand", "spot"]), [
        ("node-replacement", "none", ["a10g-inference"], 6, [])],
        {"node-replacement": "its requirements widen (karpenter.sh/capacity-type: on-demand -> on-demand, spot): "
                             "every node still meets them, so none drifts"}),
    "node-replacement: a requirement narrows": (a10g("capacityTypes", ["spot"]), [
        ("node-replacement", "disruptive", ["a10g-inference"], 6, [])],
        {"node-replacement": "the requirements of Karpenter NodePool a10g narrow: Karpenter replaces the nodes of pool "
                             "a10g-inference that no longer meet them"}),
    "node-replacement: a disruption budget": (a10g("budgets", [{"nodes": "2"}]), [
        ("node-replacement", "none", ["a10g-inference"], 6, [])],
        {"node-replacement": "(spec.disruption.budgets[0].nodes): these are not drift, so no node is replaced"}),
    "node-replacement: a Karpenter pool and its node class are removed": (karpenter_pool_removed, [
        ("node-replacement", "disruptive", ["l40s-batch"], 2, []),
        ("capacity-change", "disruptive", ["l40s-batch"], 2, ["nvidia.com/gpu"]),
        ("operand-restart", "restart", ["a10g-inference", "t4-dev"], 9, []),
        ("node-replacement", "none", ["l40s-batch"], 2, []), ("probe-run", "none", ["l40s-batch"], None, [])],
        {"node-replacement": "EC2NodeClass l40s-spot is deleted: it stays until the nodes launched from it (pools "
                             "l40s-batch) are gone, which their NodePool's deletion does"}),
    "probe-run on pools that scale": (argocd_on_karpenter, [
        ("probe-run", "none", ["a10g-inference", "l40s-batch", "t4-dev"], None, []),
        ("object-change", "none", [], None, [])],
        {"probe-run": "in pools that scale with demand (a10g-inference, l40s-batch) each launches a node"}),
    "taint-change": (taint_added, [("taint-change", "disruptive", ["notebooks-l4"], 6, []), PROBES],
                     {"taint-change": "NoExecute evicts every running pod there that does not tolerate it"}),
    "taint-change: NoSchedule to PreferNoSchedule": (taint_preferred, [
        ("taint-change", "disruptive", ["train-h100"], 16, []), PROBES],
        {"taint-change": "gets taint(s) gpuconf.dev/pool=train-h100:PreferNoSchedule: the scheduler only prefers other "
                         "nodes for new pods that do not tolerate it, so none stays Pending for it; it loses "
                         "gpuconf.dev/pool=train-h100:NoSchedule; NVIDIADriver gpuconf-train-h100 gets the new "
                         "tolerations too"}),
    "taint-change: PreferNoSchedule on a node template": (preferred_taint_on_a_template, [
        ("node-replacement", "disruptive", ["t4-dev"], 3, []), ("probe-run", "pending", ["t4-dev"], None, []),
        ("taint-change", "none", ["t4-dev"], 3, []), ("probe-run", "none", ["t4-dev"], None, [])],
        {"taint-change": "and the scheduler only prefers other nodes for new pods that do not tolerate them"}),
    "capacity-change": (quota_drop, [("capacity-change", "pending", ["train-h100"], None, ["nvidia.com/gpu"]), PROBES],
                        {"capacity-change": "research nvidia.com/gpu on train-h100 64 -> 32"}),
    "operator-upgrade": (chart_move, [
        ("driver-upgrade", "disruptive", ["l40s"], 3, []), ("probe-run", "pending", ["l40s"], None, []),
        ("operator-upgrade", "restart", ["l40s"], 3, []), ("probe-run", "none", ["l40s"], None, [])],
        {"operator-upgrade": "from chart v26.3.3 to v26.7.0", "probe-run": "a plain `kubectl apply` cannot change a Job (its pod template is immutable)"}),
    "operand-restart": (monitoring_interval, [("operand-restart", "restart", ALL3, 26, []), PROBES],
                        {"operand-restart": "(dcgmExporter)"}),
    "probe-run and object-change": (new_developer, [PROBES, ("object-change", "none", [], None, [])],
                                    {"probe-run": "an Argo CD PostSync hook, which runs on every sync"}),
    "pool-selection": (pool_match, [
        ("node-replacement", "disruptive", ["notebooks-l4"], 6, []),
        ("pool-selection", "pending", ["notebooks-l4"], 6, []), PROBES], {}),
    "capacity-change: a declared node count": (fewer_nodes, [
        ("capacity-change", "none", ["train-h100"], 8, ["nvidia.com/gpu"])],
        {"capacity-change": "declared nodes change from 16 to 8 (its capacity in REPORT.md and the quota checks "
                            "follow): the sync adds or removes no node"}),
    "capacity-change: a NodePool's limit drops": (a10g("nodes", 3, setting=False), [
        ("capacity-change", "pending", ["a10g-inference"], 3, [])],
        {"capacity-change": "(nodes 6 -> 3): Karpenter NodePool limits drop (nodes 6 -> 3): it launches no node past "
                            "them, so pods that would have scaled the pool stay Pending; running nodes stay"}),
    "capacity-change: a node-pool command's count": (gke_node_count, [
        ("capacity-change", "none", ["l4-serving"], 2, [])], {"capacity-change": "(nodes 4 -> 2)"}),
    "none: comments": (comments_only, [("none", "none", [], None, [])], {}),
    # A pool matched by PCI device id gets another GPU model: its running nodes stop matching, lose the pool label
    # (no NVIDIADriver manages them: the example deploys no default one) and the sharing label (4 GPUs, not 16).
    "pool-selection: a new GPU model": (gpu_model, [
        ("pool-selection", "disruptive", ["notebooks-l4"], 6, ["nvidia.com/gpu"]), PROBES],
        {"pool-selection": "its 6 running node(s) stop matching, so nfd-master removes gpuconf.dev/pool, "
                           "nvidia.com/device-plugin.config from them; NVIDIADriver gpuconf-notebooks-l4 selects nodes "
                           "by gpuconf.dev/pool, so it no longer manages them"}),
    # Under the ClusterPolicy the driver stays: the nodes only leave the pool (whole GPUs, as before).
    "pool-selection: a new GPU model under the ClusterPolicy": (single_gpu_model, [
        ("pool-selection", "pending", ["l40s"], 3, ["nvidia.com/gpu"])],
        {"pool-selection": "each node still advertises 4 nvidia.com/gpu; pods and Jobs that select "
                           "gpuconf.dev/pool=l40s stay Pending until L4 nodes join"}),
    "pool-selection: a new GPU model on a host driver": (host_driver_gpu_model, [
        ("pool-selection", "disruptive", ["legacy-a100"], 10, ["nvidia.com/gpu"])],
        {"pool-selection": "they lose nvidia.com/gpu.deploy.driver=false, so the operator starts its driver on nodes "
                           "that run a host driver"}),
    "capacity-change: a pool renamed": (pool_rename, [
        ("capacity-change", "disruptive", ["notebooks-l4"], 6, ["nvidia.com/gpu"]),
        ("pool-selection", "pending", ["notebooks-l4"], 6, []),  # the product team's queue row follows the pool
        ("capacity-change", "none", ["notebooks"], 6, ["nvidia.com/gpu"]),
        ("probe-run", "none", ["infer-a100", "notebooks", "train-h100"], None, []),
        ("probe-run", "none", ["notebooks-l4"], None, []), ("object-change", "none", [], None, [])],
        {"capacity-change": "its nodes move to pool notebooks with their 96 nvidia.com/gpu, so the cluster keeps its "
                            "capacity",
         "pool-selection": "nfd-master swaps their gpuconf.dev/pool=notebooks-l4 label"}),
    # The node-pool command drops the taint, the running nodes keep it, the operands stop tolerating it.
    "taint-change: a node-pool command's taint removed": (gke_taint_removed, [
        ("node-replacement", "disruptive", ["l4-serving"], 4, []),
        ("taint-change", "pending", ["l4-serving"], 4, ["nvidia.com/gpu"]),
        ("probe-run", "none", ["l4-serving"], None, [])],
        {"taint-change": "the device plugin, GFD, DCGM exporter, validator and NFD worker can no longer run on those "
                         "nodes, so each of its 4 node(s) stops advertising nvidia.com/gpu until it is replaced",
         "probe-run": "1 probe Job(s) that the sync never applied (run by hand) change"}),
    "taint-change: NoSchedule to NoExecute in a node-pool command": (gke_taint_effect, [
        ("node-replacement", "disruptive", ["l4-serving"], 4, []),
        ("taint-change", "pending", ["l4-serving"], 4, ["nvidia.com/gpu"]),
        ("probe-run", "none", ["l4-serving"], None, [])],
        {"taint-change": "only nodes that register from now on carry them (the running nodes keep their taints until "
                         "they are replaced)"}),
    "taint-change: a Karpenter NodePool's taint removed": (karpenter_taint_removed, [
        ("node-replacement", "disruptive", ["l40s-batch"], 2, []),
        ("taint-change", "pending", ["l40s-batch"], 2, ["nvidia.com/gpu"]),
        ("probe-run", "none", ["l40s-batch"], None, [])],
        {"taint-change": "pool l40s-batch's Karpenter NodePool drops taint(s) example.com/batch:NoSchedule"}),
    # One pool's taint changes; the ClusterPolicy's one toleration list reinstalls the driver on all 2 + 3 nodes.
    "taint-change: the ClusterPolicy driver of every pool": (aks_taint_value, [
        ("node-replacement", "disruptive", ["t4"], 3, []),
        ("taint-change", "disruptive", ["a100", "t4"], 5, []),
        ("taint-change", "pending", ["t4"], 3, []), ("probe-run", "pending", ["t4"], None, []),
        ("probe-run", "none", ["t4"], None, [])],
        {"taint-change": "reinstall the driver on every node the ClusterPolicy manages, in pools a100, t4"}),
    "taint-change: the rendered ClusterPolicy": (openshift_taint_removed, [
        ("taint-change", "disruptive", ["h100", "l40s"], 8, []),
        ("taint-change", "none", ["h100"], 4, []),
        ("probe-run", "none", ["h100", "l40s"], None, [])], {}),
    "config-key-removed": (gke_time_slicing, [
        ("config-key-removed", "disruptive", ["l4-serving"], 4, ["nvidia.com/gpu"]),
        ("node-replacement", "disruptive", ["l4-serving"], 4, []),
        ("capacity-change", "pending", ["l4-serving"], 4, ["nvidia.com/gpu"])],
        {"config-key-removed": "carry nvidia.com/device-plugin.config=serving-x3-7fa85220 from their node-pool "
                               "command until they are replaced, but the sync removes key serving-x3-7fa85220"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_impact_of_each_kind(name):
    pair, expected, words = CASES[name]
    plan, diff = impacts(*pair())
    assert summary(plan) == expected
    for kind, text in words.items():
        assert any(text in i.message for i in plan.impacts if i.kind == kind), \
            [i.message for i in plan.impacts if i.kind == kind]
    assert_covered(plan, diff)


def test_an_ec2nodeclass_field_outside_its_hash_drifts_nothing():
    """The capacity reservations are left out of the EC2NodeClass hash (aws@v1.14.1 ec2nodeclass.go): a folder whose
    class gains them drifts no node. gpuconf renders no such field yet, so the new side is the render, edited."""
    old = files(example("eks.yaml"))
    new = dict(old)
    role = "  role: KarpenterNodeRole-eks-inference\n"
    new["manifests/karpenter.yaml"] = old["manifests/karpenter.yaml"].replace(
        role, "  capacityReservationSelectorTerms:\n  - id: cr-0123456789abcdef0\n" + role, 1)
    assert new["manifests/karpenter.yaml"] != old["manifests/karpenter.yaml"]
    plan = plan_impacts(old, new, compare_trees(old, new, "out/x", "new.yaml"))
    assert summary(plan) == [("node-replacement", "none", ["a10g-inference"], 6, [])]
    assert plan.impacts[0].message.startswith("EC2NodeClass a10g changes in fields outside its hash that do not drift "
                                              "(spec.capacityReservationSelectorTerms)")


def test_every_kind_has_a_case():
    """Each registered kind (and `none`) appears in some pair's expected impacts."""
    seen = {impact[0] for _, expected, _ in CASES.values() for impact in expected}
    assert set(KINDS) | {"none", "operand-restart", "object-change"} <= seen
    assert sorted(ORDER) == sorted(KINDS), "every registered kind runs, in the planner's ORDER"


def test_driver_upgrade_advice_fits_the_driver_mode():
    """Without waves the advice is a maintenance window under the upgrade policy, never `rollout.wave` (declaring
    waves would itself reinstall the driver, GC372); with waves it is one wave per commit."""
    plan, _ = impacts(*driver_version())
    safe = next(i.safe for i in plan.impacts if i.kind == "driver-upgrade")
    assert safe.startswith("merge in a maintenance window of about 45 minutes; the upgrade policy "
                           "(`spec.driver.upgrade`: maxParallel, maxUnavailable, drain) bounds")
    assert "rollout.wave" not in safe and "do not declare upgrade waves in this change" in safe
    plan, _ = impacts(*wave_skipped())
    assert next(i.safe for i in plan.impacts if i.kind == "driver-upgrade").startswith(
        "one wave per commit: raise `spec.driver.upgrade.rollout.wave` by one")


def test_the_window_is_the_readmes_formula():
    """The driver-upgrade window and the Flux HelmRelease timeout come from one function (gitops.rollout_seconds)."""
    from gpuconf.impact import upgrade_window_minutes
    from gpuconf.render.gitops import rollout_seconds

    policy = {"maxParallelUpgrades": 2, "maxUnavailable": "25%", "drain": {"enable": True, "timeoutSeconds": 600},
              "podDeletion": {"timeoutSeconds": 300}}
    # 20 nodes: 25% is 5, maxParallel 2 -> waves of 2 -> 10 waves of (600 + 600 + 300) s = 250 minutes
    assert rollout_seconds(20, 2, "25%", 600, 300) == 10 * 1500
    assert upgrade_window_minutes(policy, [20], per_object=False) == 250
    assert upgrade_window_minutes(policy, [12, 8], per_object=True) == 150  # side by side: the larger pool's time


# --- the command ----------------------------------------------------------------------------------------------------


@pytest.fixture
def deployed(run, tmp_path):
    """The reference example rendered into tmp_path/out, and a writer of edited intents."""
    example = ROOT / "examples" / "heterogeneous.yaml"
    out = tmp_path / "out"
    assert run("render", str(example), "-o", str(out)).exit_code == 0

    def edited(data: dict) -> str:
        path = tmp_path / "edited.yaml"
        path.write_text(S.dump_yaml(data), encoding="utf-8")
        return str(path)

    return example, out, edited


@pytest.mark.parametrize("pair, fail_on, code", [
    (waves_first_time, "disruptive", 1), (waves_first_time, "pending", 1), (waves_first_time, "restart", 1),
    (time_slicing_replicas, "disruptive", 0), (time_slicing_replicas, "pending", 1),
    (time_slicing_replicas, "restart", 1),
    (monitoring_interval, "disruptive", 0), (monitoring_interval, "pending", 0), (monitoring_interval, "restart", 1),
    (new_developer, "disruptive", 0), (new_developer, "pending", 0), (new_developer, "restart", 0),
])
def test_fail_on_exits_1_exactly_when_an_impact_that_severe_is_present(run, tmp_path, pair, fail_on, code):
    """Documents differ in every pair (plain `--against` exits 1); --fail-on looks at the impacts alone."""
    before, after = pair()
    out = tmp_path / "out"
    (tmp_path / "before.yaml").write_text(S.dump_yaml(before), encoding="utf-8")
    (tmp_path / "after.yaml").write_text(S.dump_yaml(after), encoding="utf-8")
    assert run("render", str(tmp_path / "before.yaml"), "-o", str(out)).exit_code == 0
    assert run("diff", str(tmp_path / "after.yaml"), "--against", str(out)).exit_code == 1
    result = run("diff", str(tmp_path / "after.yaml"), "--against", str(out), "--fail-on", fail_on)
    assert result.exit_code == code, result.stdout


def test_fail_on_passes_an_unchanged_folder(run, deployed):
    example, out, _ = deployed
    result = run("diff", str(example), "--against", str(out), "--fail-on", "restart")
    assert result.exit_code == 0
    assert result.stdout.startswith(f"Impact on {out}/ml-prod: 1 impact(s), worst: none\n  NONE none\n")


def test_fail_on_and_live_counts_need_against(run, deployed):
    example, out, _ = deployed
    assert run("diff", str(example), "--fail-on", "restart").exit_code == 2
    assert run("diff", str(example), "--against", str(out), "--pods", str(example)).exit_code == 2


def test_json_leads_with_the_impacts(run, deployed):
    _, out, edited = deployed
    before, after = waves_first_time()
    assert run("render", edited(before), "-o", str(out)).exit_code == 0
    result = run("diff", edited(after), "--against", str(out), "--format", "json")
    body = json.loads(result.stdout)
    assert body["worst"] == "disruptive"
    first = body["impacts"][0]
    assert {k: first[k] for k in ("kind", "severity", "pools", "nodes", "nodesFrom", "pods", "resources")} == {
        "kind": "driver-mode-switch", "severity": "disruptive", "pools": ALL3, "nodes": 26, "nodesFrom": "intent",
        "pods": None, "resources": []}
    assert "maintenance window" in first["safe"]
    assert "manifests/nvidia-drivers.yaml: NVIDIADriver gpuconf-train-h100" in first["documents"]
    assert body["documents"]  # the document diff is still there


def test_markdown_is_a_table_then_the_folded_document_diff(run, deployed):
    _, out, edited = deployed
    before, after = time_slicing_replicas()
    result = run("diff", edited(after), "--against", str(out), "--format", "markdown")
    lines = result.stdout.splitlines()
    assert lines[0] == "## gpuconf impact plan: worst `pending`"
    assert lines[4] == "| severity | kind | pools | nodes | what happens | how to do it safely |"
    rows = [line for line in lines if line.startswith("| ") and "`" in line.split("|")[2]]
    assert [row.split("|")[2].strip() for row in rows] == [
        "`capacity-change`", "`capacity-change`", "`device-plugin-restart`", "`probe-run`"]
    assert "<details><summary>Rendered documents against" in result.stdout
    assert result.stdout.rstrip().endswith("</details>")


def _node(name: str, pool: str | None) -> dict:
    labels = {"kubernetes.io/hostname": name, **({"gpuconf.dev/pool": pool} if pool else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": {}, "allocatable": {}}}


def _pod(name: str, node: str, resources: dict, phase: str = "Running") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "research"},
            "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {"limits": resources}}]},
            "status": {"phase": phase}}


def test_live_nodes_and_pods_replace_the_declared_counts(run, deployed, tmp_path):
    _, out, edited = deployed
    nodes = [_node("l4-a", "notebooks-l4"), _node("l4-b", "notebooks-l4"), _node("h100-a", "train-h100"),
             _node("cpu-a", None)]
    pods = [_pod("nb-1", "l4-a", {"nvidia.com/gpu": "1"}), _pod("nb-2", "l4-b", {"nvidia.com/gpu": "1"}),
            _pod("done", "l4-b", {"nvidia.com/gpu": "1"}, phase="Succeeded"), _pod("web", "l4-a", {"cpu": "1"}),
            _pod("train", "h100-a", {"nvidia.com/gpu": "8"})]
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "NodeList", "items": nodes}), encoding="utf-8")
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "PodList", "items": pods}), encoding="utf-8")
    _, after = time_slicing_replicas()
    result = run("diff", edited(after), "--against", str(out), "--format", "json", "--nodes",
                 str(tmp_path / "nodes.json"), "--pods", str(tmp_path / "pods.json"))
    body = json.loads(result.stdout)
    restart = next(i for i in body["impacts"] if i["kind"] == "device-plugin-restart")
    assert (restart["nodes"], restart["nodesFrom"], restart["pods"]) == (2, "cluster", 2)
    probes = next(i for i in body["impacts"] if i["kind"] == "probe-run")
    assert (probes["nodes"], probes["pods"]) == (3, 3)  # no infer-a100 node is in the list
    assert body["nodesSource"] == str(tmp_path / "nodes.json")
    text = run("diff", edited(after), "--against", str(out), "--nodes", str(tmp_path / "nodes.json")).stdout
    assert "RESTART device-plugin-restart [notebooks-l4] (2 nodes)\n" in text


def test_a_pending_pod_that_asks_for_a_renamed_resource_is_counted_and_named(run, deployed, tmp_path):
    """Issue 27, item 5: a Pending pod no node has taken yet counts where what it asks for changes, and every impact
    names its nodes and pods (namespace/name) in JSON, the first few in text."""
    _, out, edited = deployed
    nodes = [_node(f"a100-{n}", "infer-a100") for n in range(7)] + [_node("l4-a", "notebooks-l4")]
    pending = _pod("waits-for-mig", "", {"nvidia.com/mig-2g.20gb": "1"}, phase="Pending")
    del pending["spec"]["nodeName"]
    pods = [pending, _pod("runs-mig", "a100-0", {"nvidia.com/mig-1g.10gb": "1"}),
            _pod("other", "l4-a", {"nvidia.com/mig-2g.20gb": "1"}),
            _pod("nb", "l4-a", {"nvidia.com/gpu": "1"}, phase="Pending")]
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "NodeList", "items": nodes}), encoding="utf-8")
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "PodList", "items": pods}), encoding="utf-8")
    _, after = mig_strategy_flip()
    args = ("diff", edited(after), "--against", str(out), "--nodes", str(tmp_path / "nodes.json"), "--pods",
            str(tmp_path / "pods.json"))
    body = json.loads(run(*args, "--format", "json").stdout)
    rename = next(i for i in body["impacts"] if i["kind"] == "resource-rename")
    assert rename["podNames"] == ["research/runs-mig", "research/waits-for-mig"]
    assert rename["pods"] == 2
    assert rename["nodeNames"] == [f"a100-{n}" for n in range(7)] and rename["nodes"] == 7
    text = run(*args).stdout
    assert "    nodes: a100-0, a100-1, a100-2, a100-3, a100-4 (+2 more)\n" in text
    assert "    pods: research/runs-mig, research/waits-for-mig\n" in text
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "NodeList", "items": nodes}), encoding="utf-8")
    result = run(*args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].endswith(
        "pods.json: expected a PodList, the output of `kubectl get pods -A -o json`")


def test_a_file_that_is_no_pod_list_is_a_usage_error(run, deployed, tmp_path):
    example, out, _ = deployed
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "NodeList", "items": []}), encoding="utf-8")
    (tmp_path / "pods.json").write_text("pods:\n- a\n", encoding="utf-8")
    result = run("diff", str(example), "--against", str(out), "--nodes", str(tmp_path / "nodes.json"), "--pods",
                 str(tmp_path / "pods.json"))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"gpuconf: {tmp_path / 'pods.json'}: expected a JSON PodList, the output of `kubectl get pods -A -o json` "
        "(YAML? use `kubectl get pods -A -o json`)"]
    for text, reason in ((b'{"kind": "PodList", "items": [{"kind": "Pod", "spec": []}]}', "item 0 is not a Pod"),
                         (b'{"items": [1]}', "item 0 is not a Pod"), (b'{"kind": "PodList", "items": [', "not a valid "
                                                                      "pod list (character 31)"),
                         (b'{"items": [], "kind": "ConfigMap"}', "expected a PodList, got kind 'ConfigMap'"),
                         (b'\xff', "not UTF-8 text")):
        (tmp_path / "pods.json").write_bytes(text)
        result = run("diff", str(example), "--against", str(out), "--nodes", str(tmp_path / "nodes.json"), "--pods",
                     str(tmp_path / "pods.json"))
        assert result.exit_code == 2, text
        [line] = result.stderr.strip().splitlines()
        assert reason in line and "Traceback" not in result.output, line


def _bent(path: str, value) -> dict:
    """A Pod as `kubectl get pods -A -o json` gives it, with the field at path (its keys joined by spaces, a number
    a list index) replaced by value."""
    pod = {"kind": "Pod", "metadata": {"name": "nb", "namespace": "research"},
           "spec": {"nodeName": "l4-a", "nodeSelector": {"gpuconf.dev/pool": "notebooks-l4"},
                    "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"},
                                                                  "requests": {"nvidia.com/gpu": "1"}}}]},
           "status": {"phase": "Running"}}
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(" ")]
    where = pod
    for key in parents:
        where = where[key]
    where[last] = value
    return pod


@pytest.mark.parametrize("path, value, reason", [
    ("spec containers", "main", "spec.containers is a string, not a list"),
    ("spec containers", {"main": {}}, "spec.containers is an object, not a list"),
    ("spec containers 0", None, "spec.containers[0] is null, not an object"),
    ("spec containers 0 resources", [1], "spec.containers[0].resources is a list, not an object"),
    ("spec containers 0 resources limits", ["nvidia.com/gpu"], "spec.containers[0].resources.limits is a list, not an "
                                                               "object"),
    ("spec containers 0 resources requests", "1", "spec.containers[0].resources.requests is a string, not an object"),
    ("spec nodeName", ["l4-a"], "spec.nodeName is a list, not a string"),
    ("spec nodeName", {"name": "l4-a"}, "spec.nodeName is an object, not a string"),
    ("spec nodeSelector", ["gpuconf.dev/pool"], "spec.nodeSelector is a list, not an object"),
    ("spec nodeSelector gpuconf.dev/pool", {"pool": "l4"}, "spec.nodeSelector['gpuconf.dev/pool'] is an object, "
                                                          "not a string"),
    ("metadata name", 7, "metadata.name is a number, not a string"),
    ("metadata namespace", {}, "metadata.namespace is an object, not a string"),
    ("status phase", ["Running"], "status.phase is a list, not a string"),
    ("metadata", None, "metadata is null, not an object"),
])
def test_a_pod_list_whose_pod_is_not_one_is_a_usage_error(run, deployed, tmp_path, path, value, reason):
    """Issue 27, bad input: a PodList whose item has a field the impact plan reads in another JSON type than the API
    server writes is exit 2 with one line naming the item and the field (it was exit 3, an internal error, for a
    string of containers, a null container, a list of resources or limits, a list or object as nodeName)."""
    _, out, edited = deployed
    _, after = time_slicing_replicas()
    pod = _bent(path, value)
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "NodeList", "items": [_node("l4-a", "notebooks-l4")]}),
                                         encoding="utf-8")
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "PodList", "items": [_bent("spec nodeName", "l4-a"), pod]}),
                                        encoding="utf-8")
    result = run("diff", edited(after), "--against", str(out), "--nodes", str(tmp_path / "nodes.json"), "--pods",
                 str(tmp_path / "pods.json"))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        f"gpuconf: {tmp_path / 'pods.json'}: item 1 is not a Pod ({reason}); expected `kubectl get pods -A -o json`"]
    assert result.stdout == "" and "Traceback" not in result.output


def test_a_well_formed_pod_list_with_nulls_still_counts():
    """check_pod lets through what the API server may write as null or leave out (no resources, no containers)."""
    from gpuconf.cluster.nodesource import check_pod

    assert check_pod(_bent("spec nodeName", "l4-a")) is None
    for path in ("spec containers 0 resources", "spec containers 0 resources limits", "spec nodeName",
                 "spec containers", "spec nodeSelector", "status phase", "metadata namespace"):
        assert check_pod(_bent(path, None)) is None, path
    assert check_pod({"kind": "Pod"}) is None


def test_a_pending_pod_whose_node_selector_names_the_pool_is_counted(run, deployed, tmp_path):
    """Issue 27, item 5: a Pending pod no node has taken yet, which asks for no GPU by name but whose nodeSelector
    names the impact's pool, counts there; one that names another pool does not."""
    _, out, edited = deployed
    waiting, elsewhere = _bent("spec nodeName", None), _bent("spec nodeSelector gpuconf.dev/pool", "train-h100")
    for pod, name in ((waiting, "waits-for-l4"), (elsewhere, "waits-for-h100")):
        pod["metadata"]["name"], pod["status"]["phase"], pod["spec"]["containers"] = name, "Pending", []
        del pod["spec"]["nodeName"]
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "NodeList", "items": [_node("l4-a", "notebooks-l4")]}),
                                         encoding="utf-8")
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "PodList", "items": [waiting, elsewhere]}),
                                        encoding="utf-8")
    _, after = time_slicing_replicas()
    body = json.loads(run("diff", edited(after), "--against", str(out), "--format", "json", "--nodes",
                          str(tmp_path / "nodes.json"), "--pods", str(tmp_path / "pods.json")).stdout)
    restart = next(i for i in body["impacts"] if i["kind"] == "device-plugin-restart")
    assert (restart["pools"], restart["pods"], restart["podNames"]) == (["notebooks-l4"], 1, ["research/waits-for-l4"])


def test_kubeconfig_whose_cluster_lists_a_pod_that_is_not_one_counts_nodes_and_says_so(run, deployed, tmp_path):
    """A live cluster's pod page with an item that is not a Pod: one warning naming it, the nodes still counted and
    the pods unknown (it was an internal error for a string of containers, and a silent skip for an item that is no
    object)."""
    from test_audit import FakeApiServer, _clean, _kubeconfig

    _, out, edited = deployed
    _, after = time_slicing_replicas()
    nodes = _clean("heterogeneous")
    l4 = next(n["metadata"]["name"] for n in nodes
              if n["metadata"].get("labels", {}).get("gpuconf.dev/pool") == "notebooks-l4")
    pods = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [
        _running_pod("nb-1", l4, {"nvidia.com/gpu": "1"}), _bent("spec containers", "main")]}
    with FakeApiServer(nodes, objects={"/api/v1/pods": pods}) as api:
        result = run("diff", edited(after), "--against", str(out), "--format", "json", "--kubeconfig",
                     _kubeconfig(tmp_path, api.port))
    assert result.exit_code == 1, result.output  # documents differ
    assert result.stderr.splitlines() == [
        f"gpuconf: warning: http://127.0.0.1:{api.port}/api/v1/pods: item 1 is not a Pod (spec.containers is a "
        "string, not a list); running pods are not counted"]
    restart = next(i for i in json.loads(result.stdout)["impacts"] if i["kind"] == "device-plugin-restart")
    assert restart["pods"] is None and restart["nodes"] > 0


# --- properties over random intents -----------------------------------------------------------------------------

_SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))


@_SETTINGS
@given(before=S.intents(), after=S.intents())
def test_every_changed_document_of_a_random_edit_is_explained(before, after):
    """Two random intents as before and after (the same metadata.name): whatever differs, every changed document is
    explained by some impact and nothing falls to `unclassified`."""
    first, second = S.load_plain(before.text()), S.load_plain(after.text())
    second["metadata"]["name"] = first["metadata"]["name"]
    plan, diff = impacts(first, second)
    assert_covered(plan, diff)


def _reordered(node):
    """Every mapping's keys in reverse order (YAML mappings are unordered)."""
    if isinstance(node, dict):
        return {k: _reordered(node[k]) for k in reversed(list(node))}
    if isinstance(node, list):
        return [_reordered(v) for v in node]
    return node


@_SETTINGS
@given(case=S.intents(), comment=st.sampled_from(["# reviewed\n", "# yaml-language-server: $schema=x.json\n"]))
def test_edits_that_change_nothing_deployed_give_only_none(case, comment):
    """Comments, key order and REPORT-only wording (an override's `why`, which only REPORT.md and a `# via` comment
    carry) change nothing the cluster runs: the plan is `none` alone."""
    data = S.load_plain(case.text())
    for override in data["spec"].get("overrides", []):
        override["why"] = "reworded: " + override["why"]
    plan, diff = impacts(case.text(), comment + S.dump_yaml(_reordered(data)))
    assert [(i.kind, i.severity) for i in plan.impacts] == [("none", "none")]
    assert diff.equal


def test_ci_example_posts_the_markdown_plan_and_gates_on_disruptive(tmp_path):
    """The README's CI example: its impact job runs real gpuconf commands and valid shell."""
    import re
    import shlex
    import shutil
    import subprocess

    import yaml
    from test_gitops import _command_exists

    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))
    runs = [step["run"] for step in workflow["jobs"]["gpuconf"]["steps"] if "run" in step]
    commands = [shlex.split(re.split(r"\s(?:\|\||>)\s", line.strip())[0]) for run in runs
                for line in run.splitlines() if line.strip().startswith("gpuconf diff")]
    assert [c[c.index("--format") + 1] if "--format" in c else c[c.index("--fail-on") + 1] for c in commands] == [
        "markdown", "disruptive"]
    for command in commands:
        _command_exists(command)
    assert any("gh pr comment" in run and "--body-file impact.md" in run for run in runs)
    for index, run in enumerate(runs):
        script = tmp_path / f"step{index}.sh"
        script.write_text(run, encoding="utf-8")
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0, run
        if shutil.which("shellcheck"):
            checked = subprocess.run(["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True)
            assert checked.returncode == 0, checked.stdout


def test_diff_against_leads_with_the_transition_warnings(run, tmp_path):
    """GC371 in `diff --against`: the warning line, then the impacts (in JSON: `findings`)."""
    before, after = wave_skipped()
    (tmp_path / "before.yaml").write_text(S.dump_yaml(before), encoding="utf-8")
    (tmp_path / "after.yaml").write_text(S.dump_yaml(after), encoding="utf-8")
    out = tmp_path / "out"
    assert run("render", str(tmp_path / "before.yaml"), "-o", str(out)).exit_code == 0
    text = run("diff", str(tmp_path / "after.yaml"), "--against", str(out)).stdout.splitlines()
    assert " warning GC371 spec.driver.upgrade.rollout.wave: the roll-out advances from wave 1 (deployed) to wave 3" \
        in text[0]
    assert text[1] == f"Impact on {out}/ml-prod: 2 impact(s), worst: disruptive"
    body = json.loads(run("diff", str(tmp_path / "after.yaml"), "--against", str(out), "--format", "json").stdout)
    assert [f["code"] for f in body["findings"]] == ["GC371"]
    plain = run("diff", str(tmp_path / "after.yaml")).stdout
    assert "GC371" not in plain  # no folder, no transition


@pytest.mark.parametrize("name, pools, kind", [
    ("eks.yaml", "a10g-inference, l40s-batch", "Pools launched by a Karpenter NodePool"),
    ("eks.yaml", "t4-dev", "Pools labelled by their node template"),
    ("gke.yaml", "l4-serving", "Pools created by a node-pool command"),
    ("aks.yaml", "a100, t4", "Pools created by a node-pool command"),
])
def test_the_rollback_tells_the_truth_per_platform(name, pools, kind):
    """REPORT.md's rollback: Karpenter replaces nodes on a template edit (a revert included), it does not relabel
    them; node templates and node-pool commands apply only to new nodes."""
    report = json.loads(files(example(name))["report.json"])
    step = next(s for s in report["rollback"] if s.startswith(kind))
    assert step.startswith(f"{kind} ({pools}):")
    karpenter = [s for s in report["rollback"] if "Karpenter" in s]
    assert all("replaces the nodes" in s and "does not help" in s for s in karpenter)
    assert not any("relabel them with `kubectl label" in s and "Karpenter" in s for s in report["rollback"])
    assert report["rollback"][0].startswith("Before a change (and before its revert): `gpuconf diff NEW.yaml --against")


def test_kubeconfig_counts_the_live_nodes_read_only(run, deployed, tmp_path):
    """--kubeconfig lists the nodes (GET only, test_audit's fake API server) and counts each impact's pool nodes."""
    from test_audit import FakeApiServer, _clean, _kubeconfig

    _, out, edited = deployed
    _, after = time_slicing_replicas()
    nodes = _clean("heterogeneous")
    l4 = sum(1 for n in nodes if n["metadata"].get("labels", {}).get("gpuconf.dev/pool") == "notebooks-l4")
    with FakeApiServer(nodes) as api:
        result = run("diff", edited(after), "--against", str(out), "--format", "json", "--kubeconfig",
                     _kubeconfig(tmp_path, api.port))
        assert {method for method, _, _ in api.requests} == {"GET"}
    restart = next(i for i in json.loads(result.stdout)["impacts"] if i["kind"] == "device-plugin-restart")
    assert (restart["nodes"], restart["nodesFrom"]) == (l4, "cluster") and l4 > 0


def _running_pod(name: str, node: str, resources: dict, phase: str = "Running") -> dict:
    return {"metadata": {"name": name, "namespace": "research"},
            "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {"limits": resources}}]},
            "status": {"phase": phase}}


def test_kubeconfig_counts_the_running_gpu_pods_of_each_impact_read_only(run, deployed, tmp_path):
    """With --kubeconfig and no --pods, the running pods come from the cluster too (GET /api/v1/pods with the field
    selector status.phase=Running): only those with NVIDIA requests on the impact's nodes count."""
    from test_audit import FakeApiServer, _clean, _kubeconfig

    _, out, edited = deployed
    _, after = time_slicing_replicas()
    nodes = _clean("heterogeneous")
    l4 = [n["metadata"]["name"] for n in nodes if n["metadata"].get("labels", {}).get("gpuconf.dev/pool") == "notebooks-l4"]
    other = next(n["metadata"]["name"] for n in nodes
                 if n["metadata"].get("labels", {}).get("gpuconf.dev/pool") not in (None, "notebooks-l4"))
    pods = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [
        _running_pod("nb-1", l4[0], {"nvidia.com/gpu": "1"}),
        _running_pod("nb-2", l4[-1], {"nvidia.com/gpu": "2"}),
        _running_pod("web", l4[0], {"cpu": "1"}),                      # asks for no GPU: not counted
        _running_pod("train", other, {"nvidia.com/gpu": "8"}),          # another pool's node: not counted
    ]}
    with FakeApiServer(nodes, objects={"/api/v1/pods": pods}) as api:
        result = run("diff", edited(after), "--against", str(out), "--format", "json", "--kubeconfig",
                     _kubeconfig(tmp_path, api.port))
        assert {method for method, _, _ in api.requests} == {"GET"}
        [pod_query] = [query for _, path, query in api.requests if path == "/api/v1/pods"]
    assert pod_query["fieldSelector"] == "status.phase=Running"
    body = json.loads(result.stdout)
    restart = next(i for i in body["impacts"] if i["kind"] == "device-plugin-restart")
    assert restart["pods"] == 2 and restart["nodes"] == len(l4)
    assert body["podsSource"] == body["nodesSource"]


def test_kubeconfig_whose_cluster_will_not_list_pods_still_counts_nodes_and_says_so(run, deployed, tmp_path):
    """A role that may list nodes but not pods: the nodes are counted, the pods are unknown (null), one warning."""
    from test_audit import FakeApiServer, _clean, _kubeconfig

    _, out, edited = deployed
    _, after = time_slicing_replicas()
    with FakeApiServer(_clean("heterogeneous"), pods=None) as api:  # the fake answers 404 for /api/v1/pods
        result = run("diff", edited(after), "--against", str(out), "--format", "json", "--kubeconfig",
                     _kubeconfig(tmp_path, api.port))
    assert result.exit_code == 1, result.output  # documents differ
    assert result.stderr.splitlines() == [
        f"gpuconf: warning: listing pods at http://127.0.0.1:{api.port} failed (404 Not Found): the server could not "
        "find the requested resource; running pods are not counted"]
    body = json.loads(result.stdout)
    restart = next(i for i in body["impacts"] if i["kind"] == "device-plugin-restart")
    assert restart["pods"] is None and restart["nodes"] > 0 and body["podsSource"] is None

"""What the operator and its driver upgrade controller do: a chart move, a driver moving between the ClusterPolicy,
an NVIDIADriver and the host, and a new driver pod (version, image, manager, ...) that drains the nodes it manages."""

from __future__ import annotations

import math

from .folder import Deployed
from .model import (DRAIN, UNCORDON, Change, Impact, _driver_owner, _names, _short, _template_file, each_node,
                    impact_kind)


@impact_kind("operator-upgrade", "the GPU Operator chart version changes")
def _operator_upgrade(change: Change) -> list[Impact]:
    old, new = change.old.cluster.get("chartVersion"), change.new.cluster.get("chartVersion")
    if not old or not new or old == new:
        return []
    docs = change.values_paths("") + change.documents(
        ["Application", "HelmRelease", "HelmRepository", "OCIRepository", "Subscription", "ClusterPolicy",
         "NodeFeatureDiscovery", "NVIDIADriver"])
    pools = list(change.new.pools)
    return [Impact("operator-upgrade", "restart", pools,
                   f"the GPU Operator moves from chart {old} to {new}: the operator restarts and updates every "
                   "operand DaemonSet (device plugin, toolkit, GFD, DCGM exporter, MIG manager, validator), whose pods "
                   "restart node by node; GPU workloads keep running unless the driver changes too",
                   f"read `gpuconf diff INTENT --to-chart {new}` first; make the chart move its own commit, with no "
                   "driver, sharing or pool change, and watch `kubectl get clusterpolicy` until it is ready",
                   nodes=change.pools_nodes(pools), documents=docs)]


@impact_kind("driver-mode-switch", "a pool's driver moves between the ClusterPolicy, an NVIDIADriver and the host")
def _driver_mode_switch(change: Change) -> list[Impact]:
    groups: dict[tuple[str, str], list[str]] = {}
    for name in change.both():
        before, after = _driver_owner(change.old.pools[name]), _driver_owner(change.new.pools[name])
        if before != after:
            groups.setdefault((before, after), []).append(name)
    impacts = []
    for (before, after), pools in groups.items():
        docs = change.documents(["NVIDIADriver", "NodeFeatureRule", "NodePool"], pools)
        docs += change.values_paths("driver.")
        docs += change.documents(["file", "document"], where=lambda d: any(d.file == _template_file(change, p) for p in pools))
        if "host" in (before, after):
            what = ("the operator's driver leaves nodes that must then run a host driver: its pod unloads the kernel "
                    "modules, so every GPU pod there stops" if after == "host" else
                    "the operator starts installing its driver on nodes that ran a host driver: the driver pod "
                    "fails or replaces the host's modules, and every GPU pod there stops")
            safe = ("in a maintenance window: the sync reaches every node of the pools at once, so drain them before "
                    f"it (`{each_node(pools, DRAIN)}`), then install or remove the host driver on each node (or roll "
                    "the node group to an image that has or lacks it) and uncordon each node once its driver works")
        else:
            what = (f"the driver moves from the {before} to per-pool {after} objects" if after == "NVIDIADriver" else
                    f"the driver moves from per-pool {before} objects back to the {after}")
            what += (": the operator deletes the old driver DaemonSet and starts the new one, so the driver is "
                     "unloaded and reinstalled on every node of these pools and every GPU pod there restarts")
            safe = ("make this change alone (no driver version, sharing or pool change in the same commit), in a "
                    "maintenance window; the operator replaces the driver on every node of the pools at once, so "
                    f"drain them before the sync (`{each_node(pools, DRAIN)}`) and uncordon them once `kubectl get "
                    f"pods -n {change.new.cluster.get('namespace', 'gpu-operator')} -l app=nvidia-driver-daemonset` "
                    "is ready again")
        impacts.append(Impact("driver-mode-switch", "disruptive", pools, what, safe,
                              nodes=change.pools_nodes(pools), documents=docs))
    return impacts


def upgrade_window_minutes(policy: dict, node_counts: list[int], per_object: bool) -> int:
    """Minutes the operator takes to replace the driver on pools of these node counts under policy (report.json's
    upgrade.policy): the README's formula (gitops.rollout_seconds), per NVIDIADriver side by side when per_object,
    else over all nodes at once."""
    from ..render.gitops import rollout_seconds

    drain = policy.get("drain") or {}
    args = (policy.get("maxParallelUpgrades", 1), policy.get("maxUnavailable", "25%"),
            drain.get("timeoutSeconds", 300) if drain.get("enable") else None,
            (policy.get("podDeletion") or {}).get("timeoutSeconds", 300))
    groups = node_counts if per_object else [sum(node_counts)]
    return math.ceil(max([rollout_seconds(n, *args) for n in groups] or [0]) / 60)


#: The `driver` values keys that are not the driver pod's: the upgrade controller's policy, the switch to
#: NVIDIADriver objects (driver-mode-switch's) and the driver's on/off switch. Every other `driver.*` key (repository,
#: image, version, imagePullSecrets, manager, env, probes, licensing, ...) is rendered into the ClusterPolicy's
#: spec.driver and from there into the driver DaemonSet's pod template (gpu-operator-facts §4, `driver.*` rows).
_NOT_DRIVER_POD = ("upgradePolicy", "nvidiaDriverCRD", "enabled")


#: NVIDIADriver spec fields that are not the driver pod's: its upgrade policy, the nodes it selects (pool-selection)
#: and its tolerations (taint-change), and `default` (gpu-operator-facts §8).
_NOT_NVD_POD = ("spec.upgradePolicy", "spec.nodeSelector", "spec.nodeAffinity", "spec.tolerations", "spec.default")


def _driver_pod(side: Deployed) -> dict:
    """The ClusterPolicy driver's pod settings on one side: the folder's chart defaults under its `driver` values,
    as Helm merges them, without the keys that are not the pod's."""
    from ..catalog import chart
    from ..render.values import copied, merge

    facts = chart(str(side.cluster.get("chartVersion") or ""))
    base = copied((facts.defaults.get("driver") if facts else None) or {})
    values = side.values.get("driver")
    merged = merge(base, values) if isinstance(values, dict) else base
    return {k: v for k, v in merged.items() if k not in _NOT_DRIVER_POD}


def _driver_pod_changes(change: Change) -> list[str]:
    """The `driver.*` values keys whose change gives the ClusterPolicy's driver DaemonSet a new pod template, plus the
    same fields of an OpenShift ClusterPolicy manifest (`spec.driver.*`)."""
    old, new = _driver_pod(change.old), _driver_pod(change.new)
    keys = [f"driver.{k}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    for doc in change.documents(["ClusterPolicy"]):
        keys += [c.path.removeprefix("spec.") for c in doc.changes if c.path.startswith("spec.driver.")
                 and not c.path.startswith(tuple(f"spec.driver.{k}" for k in _NOT_DRIVER_POD))
                 and not c.path.startswith("spec.driver.useNvidiaDriverCRD")]
    return sorted(k for k in set(keys) if not any(k.startswith(other + ".") for other in keys))


@impact_kind("driver-upgrade", "a pool's driver version, image or any other field of its driver pod changes")
def _driver_upgrade(change: Change) -> list[Impact]:
    # The driver DaemonSet is always OnDelete (gpu-operator-facts §4, daemonsets.updateStrategy): any change of its pod
    # template (version, repository, image, pull secrets, manager, ...), in the ClusterPolicy as in an NVIDIADriver
    # (§8), makes the upgrade controller reinstall the driver on every node it manages under the upgrade policy, or,
    # with autoUpgrade false (default true, §4), each node's driver at the next deletion of its driver pod.
    groups: dict[tuple, list[str]] = {}
    fields: dict[tuple, set[str]] = {}
    cluster_pod = _driver_pod_changes(change)
    for name in change.both():
        old, new = change.old.pools[name], change.new.pools[name]
        owner = _driver_owner(new)
        if owner != _driver_owner(old) or owner == "host":
            continue
        before, after = (old.get("driver") or {}).get("version"), (new.get("driver") or {}).get("version")
        if owner == "ClusterPolicy":
            pod = set(cluster_pod)
        else:
            pod = {c.path for d in change.documents(["NVIDIADriver"], [name]) for c in d.changes
                   if c.path.startswith("spec.") and not c.path.startswith(_NOT_NVD_POD)}
        if before != after or pod:
            key = (before, after, owner)
            groups.setdefault(key, []).append(name)
            fields.setdefault(key, set()).update(pod)
    impacts = []
    for (before, after, owner), pools in groups.items():
        docs = change.documents(["NVIDIADriver"], pools) + change.values_paths(
            "driver.version", "driver.repository", "driver.image", "driver.usePrecompiled",
            *(f for f in cluster_pod if f.startswith("driver."))) + change.documents(
            ["ClusterPolicy"], where=lambda d: owner == "ClusterPolicy" and any(
                c.path.startswith("spec.driver.") for c in d.changes))
        counts = [change.new.pools[p].get("nodes", 0) for p in pools]
        policy = change.new.policy()
        minutes = upgrade_window_minutes(policy, counts, per_object=owner == "NVIDIADriver")
        old_wave, new_wave = change.old.rollout_wave(), change.new.rollout_wave()
        waves = ""
        if old_wave is not None and new_wave is not None and new_wave - old_wave > 1:
            waves = f"; waves {old_wave + 1} to {new_wave} upgrade in this one commit"
        shown = sorted(f.removeprefix("spec.") for f in fields[(before, after, owner)]
                       if f.removeprefix("spec.") not in ("version", "driver.version"))
        what = (f"the driver of pool(s) {_names(pools)} changes from {before} to {after}" if before != after else
                f"the driver pod of pool(s) {_names(pools)} changes ({_names(_short(shown))})")
        parallel = policy.get("maxParallelUpgrades", 1)
        evicts = "drains each node" if (policy.get("drain") or {}).get("enable") else "deletes the GPU pods on each node"
        manual = policy.get("autoUpgrade") is False
        if manual:
            what += (": autoUpgrade is off, so the sync itself reinstalls nothing; each node's driver is reinstalled, "
                     "and its GPU pods stop, at the next deletion of its driver pod (by hand, or when the node is "
                     f"replaced){waves}")
        else:
            what += (f": the upgrade controller {evicts} (its GPU workloads stop) and reinstalls the driver, "
                     f"{parallel or 'all'} node(s) at a time per {owner} (maxUnavailable "
                     f"{policy.get('maxUnavailable')}), about {minutes} minutes by the roll-out formula{waves}")
        if any((change.new.pools[p].get("driver") or {}).get("mode") == "wave" for p in pools):
            safe = ("one wave per commit: raise `spec.driver.upgrade.rollout.wave` by one after every node of the "
                    "previous wave shows `upgrade-done` (`kubectl get nodes -L nvidia.com/gpu-driver-upgrade-state`); "
                    "keep a maintenance window of that length")
        elif manual:
            namespace = change.new.cluster.get("namespace", "gpu-operator")
            pod = f"-n {namespace} -l app=nvidia-driver-daemonset --field-selector spec.nodeName=\"$n\""
            loop = each_node(pools, DRAIN, f"kubectl delete pod {pod} --wait",
                             "sleep 10", f"kubectl wait pod {pod} --for=condition=Ready --timeout=30m", UNCORDON)
            safe = (f"in a maintenance window, one node at a time: `{loop}` (REPORT.md's driver upgrade steps; the "
                    "loop stops at a node whose step fails, and leaves it cordoned)")
        else:
            safe = (f"merge in a maintenance window of about {minutes} minutes; the upgrade policy "
                    "(`spec.driver.upgrade`: maxParallel, maxUnavailable, drain) bounds how many nodes are down at "
                    "once, so lower it in an earlier commit of its own to go slower")
            if owner == "ClusterPolicy":
                # Declaring waves moves the driver to per-pool NVIDIADrivers: one more reinstall (GC372).
                safe += ("; do not declare upgrade waves in this change (that moves the driver to per-pool "
                         "NVIDIADrivers, which reinstalls it once more)")
        impacts.append(Impact("driver-upgrade", "disruptive", pools, what, safe, nodes=change.pools_nodes(pools),
                              documents=docs, minutes=None if manual else minutes,
                              window=None if manual else (policy, owner == "NVIDIADriver")))
    return impacts

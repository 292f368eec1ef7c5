"""What the device plugin and the MIG manager do: the allocation stack switch, a new plugin config, resources that
disappear, a new MIG layout, config keys that nodes labelled by their platform keep."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from ..output.treediff import DocumentDiff
from .folder import Deployed
from .model import (
    DRAIN, MIG_LABEL, PLUGIN_LABEL, POOL_LABEL, UNCORDON, Change, Impact, _label_source, _labelled_by, _names, _per_node,
    each_node, impact_kind)


def _stack(side: Deployed) -> str:
    """The allocation stack a folder deploys: dra when its values deploy the GPUCluster, else devicePlugin."""
    return "dra" if (side.values.get("gpuCluster") or {}).get("deployCR") is True else "devicePlugin"


@impact_kind("allocation-switch", "the cluster's allocation stack switches between the device plugin and DRA")
def _allocation_switch(change: Change) -> list[Impact]:
    before, after = _stack(change.old), _stack(change.new)
    if before == after:
        return []
    names = {"devicePlugin": "the device plugin (ClusterPolicy)", "dra": "DRA (GPUCluster)"}
    pools = list(change.new.pools)
    # Everything the other stack's objects were: the chart's CR switch, the sharing and MIG configs, the classes and
    # claim templates, the quotas and probes that now name other resources.
    docs = change.values_paths("gpuCluster.", "clusterPolicy.", "draDriver.", "devicePlugin.config", "migManager.config",
                               "mig.strategy", "driver.nvidiaDriverCRD", "driver.upgradePolicy.autoUpgrade")
    docs += change.documents(["DeviceClass", "ResourceClaimTemplate", "ConfigMap", "NodeFeatureRule", "ResourceQuota",
                              "Job", "ClusterQueue", "ResourceFlavor", "NVIDIADriver"])
    return [Impact(
        "allocation-switch", "disruptive", pools,
        f"the cluster switches its GPU allocation stack from {names[before]} to {names[after]}: the chart deletes "
        "one custom resource and creates the other, the operator tears down the old stack's operands on every GPU "
        "node (device plugin, GFD, MIG Manager and toolkit, or the DRA driver) and relabels the nodes, so running GPU "
        "pods lose their devices and every workload must ask for GPUs the new way (claims instead of nvidia.com/gpu, "
        "or back); NVIDIA supports the DRA stack on new clusters only, with no in-place migration",
        "do not switch a running cluster: build a new cluster from this intent and move the workloads to it; keep "
        "this intent's old folder for the old cluster",
        nodes=change.pools_nodes(pools), documents=docs)]


@impact_kind("device-plugin-restart", "a pool's device-plugin config changes")
def _device_plugin_restart(change: Change) -> list[Impact]:
    if "dra" in (_stack(change.old), _stack(change.new)):
        return []  # no device plugin on the DRA stack; a switch to or from it is allocation-switch's
    pools = []
    for name in change.both():
        before = (change.old.pools[name].get("labels") or {}).get(PLUGIN_LABEL)
        after = (change.new.pools[name].get("labels") or {}).get(PLUGIN_LABEL)
        if before != after and _labelled_by(change.new.pools[name]) == "nfd":
            pools.append(name)
    claimed = set(change.values_claimed)  # an earlier kind's claims (operand-switch's devicePlugin.enabled) stay
    docs = change.values_paths("devicePlugin.")
    impacts = []
    for name in pools:
        before, after = change.old.resources(name), change.new.resources(name)
        what = (f"nodes of pool {name} switch to device-plugin config "
                f"{change.new.pools[name]['labels'].get(PLUGIN_LABEL)}: the config-manager sidecar restarts the "
                f"plugin, and each node advertises {_per_node(after)} instead of {_per_node(before)}; running pods "
                "keep their devices")
        impacts.append(Impact("device-plugin-restart", "restart", [name], what,
                              "nothing to drain: check `kubectl get nodes -l "
                              f"{POOL_LABEL}={name} -o custom-columns=NAME:.metadata.name,ALLOCATABLE:.status.allocatable`"
                              " after the sync",
                              resources=sorted(set(before) | set(after)), nodes=change.pools_nodes([name]),
                              documents=change.documents(["NodeFeatureRule"], [name]) + change.documents(
                                  ["ConfigMap"], where=_plugin_configmap(change)) + docs))
    if docs and not pools:
        change.values_claimed.difference_update(
            c.path for d in docs for c in d.changes if c.path.startswith("devicePlugin.") and c.path not in claimed)
    return impacts


def _plugin_configmap(change: Change) -> Callable[[DocumentDiff], bool]:
    names = {((side.values.get("devicePlugin") or {}).get("config") or {}).get("name")
             for side in (change.old, change.new)}
    return lambda d: d.name in names


def _mig_configmap(change: Change) -> Callable[[DocumentDiff], bool]:
    names = {((side.values.get("migManager") or {}).get("config") or {}).get("name")
             for side in (change.old, change.new)}
    return lambda d: d.name in names


def mig_strategy_after(side: Deployed) -> str | None:
    """The MIG strategy a folder runs the device plugin with, for the far side of a flip: report.json's, else the
    chart's default `single` where the folder sets none (no MIG pool left: gpu-operator-facts §4, `mig.strategy`
    default single); None on the DRA stack, which has no device plugin. The near side of a flip takes report.json's
    alone: a folder with no MIG pool named no MIG resource, so moving from it to a strategy renames nothing."""
    if _stack(side) == "dra":
        return None
    return side.cluster.get("migStrategy") or "single"


@impact_kind("resource-rename", "a resource name a pool advertises disappears")
def _resource_rename(change: Change) -> list[Impact]:
    old_strategy, new_strategy = change.old.cluster.get("migStrategy"), mig_strategy_after(change.new)
    flip = old_strategy and new_strategy and old_strategy != new_strategy
    default = flip and not change.new.cluster.get("migStrategy")  # the chart's default: no MIG pool is left
    impacts = []
    for name in change.both():
        gone = sorted(set(change.old.resources(name)) - set(change.new.resources(name)))
        if not gone:
            continue
        now = sorted(change.new.resources(name))
        askers = _askers(change.old, set(gone))
        cause = (f"the cluster's MIG strategy flips from {old_strategy} to {new_strategy}" + (
            ", the chart's default now that no MIG pool is left" if default else "") if flip and any(
            r.startswith("nvidia.com/mig-") or r == "nvidia.com/gpu" for r in gone) else "its sharing changes")
        what = (f"pool {name} stops advertising {_names(gone)} ({cause}; it now advertises {_names(now)}): pods "
                f"and Jobs asking for the old name stay Pending, and what still asks for it stops working: {askers}")
        safe = (f"pin `spec.cluster.migStrategy: {old_strategy}` to keep the names, or move every request, quota and "
                "queue to the new names in the same change and drain the pool's running jobs first" if flip and
                not default else
                "move the pods, quotas and queues that ask for the old name to the new one in the same change, and "
                "let the pool's running jobs finish first")
        values = [d for d in change.diff.documents if d.kind == "values" and change.values_changes("mig.strategy")]
        docs = values + change.documents(
            ["ResourceQuota", "ClusterQueue", "ResourceFlavor", "Job"],
            where=lambda d: _mentions(change.old.data(d), gone)) + change.documents(
            ["ConfigMap"], where=_plugin_configmap(change)) + change.documents(["NodeFeatureRule"], [name])
        impacts.append(Impact("resource-rename", "pending", [name], what, safe, resources=gone,
                              nodes=change.pools_nodes([name]), documents=docs))
    return impacts


def _mentions(data: Any, names: Iterable[str]) -> bool:
    text = json.dumps(data)
    return any(json.dumps(n) in text for n in names)


def _askers(old: Deployed, gone: set[str]) -> str:
    """The team quotas, Kueue queues and probes of the old folder that ask for these resources."""
    teams = sorted({t["name"] for t in old.report.get("teams", []) for q in t.get("quotas", [])
                    if q.get("resource") in gone and q.get("total")})
    queues = sorted({(q.get("metadata") or {}).get("name", "?") for q in old.objects("ClusterQueue")
                     if _mentions(q.get("spec"), gone)})
    probes = sorted({(j.get("metadata") or {}).get("name", "?") for j in old.objects("Job")
                     if _mentions(j.get("spec"), gone)})
    return "; ".join(f"{what} {_names(items)}" for what, items in
                     (("team quotas", teams), ("Kueue ClusterQueues", queues), ("probes", probes)) if items) or \
        "nothing gpuconf rendered (check your workloads)"


def _mig_done() -> str:
    """The step of a loop over nodes that waits until the MIG manager has applied the node's layout: `kubectl wait`
    on its state label (in a JSONPath, the dots of a label key are escaped)."""
    state = (MIG_LABEL + ".state").replace(".", "\\.")
    return f"kubectl wait node \"$n\" --for=jsonpath='{{.metadata.labels.{state}}}'=success --timeout=30m"


@impact_kind("mig-repartition", "a pool's MIG layout changes")
def _mig_repartition(change: Change) -> list[Impact]:
    # MIG manager reboots the node to apply a layout where WITH_REBOOT is set (GKE: platform-facts, NVD:gke).
    env = (change.new.values.get("migManager") or {}).get("env") or []
    reboots = any(isinstance(e, dict) and e.get("name") == "WITH_REBOOT" and str(e.get("value")).lower() == "true"
                  for e in env)
    impacts = []
    for name in change.both():
        before = (change.old.pools[name].get("labels") or {}).get(MIG_LABEL)
        after = (change.new.pools[name].get("labels") or {}).get(MIG_LABEL)
        if before == after:
            continue
        layout = lambda side: (side.pools[name].get("sharing") or {}).get("detail", "?")  # noqa: E731
        what = (f"mig-manager stops the GPU clients on every node of pool {name}, kills its GPU pods and repartitions "
                f"every GPU from `{before}` ({layout(change.old)}) to `{after}` ({layout(change.new)})")
        if _labelled_by(change.new.pools[name]) != "nfd":
            what = (f"pool {name}'s MIG layout changes from `{before}` ({layout(change.old)}) to `{after}` "
                    f"({layout(change.new)}); its nodes get `{MIG_LABEL}` from their template, so each node is "
                    "repartitioned when it is replaced or relabelled: mig-manager then stops its GPU clients and "
                    "kills its GPU pods")
        if reboots:
            what += "; the MIG manager reboots each node to apply it (WITH_REBOOT, as GKE needs)"
        if _labelled_by(change.new.pools[name]) == "nfd":
            safe = (f"the sync relabels every node of pool {name} at once (its NodeFeatureRule), so the whole pool is "
                    f"repartitioned at once: drain its nodes before the sync (`{each_node(name, DRAIN)}`), watch "
                    f"`kubectl get nodes -l {POOL_LABEL}={name} -L {MIG_LABEL}.state` reach `success` on every node, then "
                    f"`kubectl uncordon -l {POOL_LABEL}={name}`; to keep part of the pool serving, move its nodes to "
                    "the new layout in steps through a second pool instead")
        else:
            relabel = f'kubectl label node "$n" {MIG_LABEL}={after} --overwrite'
            loop = each_node(name, DRAIN, relabel, _mig_done(), UNCORDON)
            safe = f"after the sync, one node at a time: `{loop}`; then roll the node group onto the new template"
        impacts.append(Impact(
            "mig-repartition", "disruptive", [name], what, safe,
            resources=sorted(set(change.old.resources(name)) | set(change.new.resources(name))),
            nodes=change.pools_nodes([name]),
            documents=change.documents(["ConfigMap"], where=_mig_configmap(change))
            + change.documents(["NodeFeatureRule"], [name]) + change.values_paths("migManager.")))
    return impacts


def _config_keys(side: Deployed, label: str) -> set[str] | None:
    """The config names a folder's ConfigMap offers for a node label: the device-plugin ConfigMap's keys, or the
    mig-parted ConfigMap's mig-configs names (None when the folder has no such ConfigMap)."""
    section = "devicePlugin" if label == PLUGIN_LABEL else "migManager"
    name = ((side.values.get(section) or {}).get("config") or {}).get("name")
    data = next(((cm.get("data") or {}) for cm in side.objects("ConfigMap")
                 if name and (cm.get("metadata") or {}).get("name") == name), None)
    if not isinstance(data, dict):
        return None
    if label == PLUGIN_LABEL:
        return set(data)
    try:
        from ..output.treediff import _load_all

        body = (_load_all(data.get("config.yaml") or "") or [{}])[0]
    except Exception:  # noqa: BLE001 - a hand-edited folder: nothing to say
        return None
    return set((body.get("mig-configs") or {}) if isinstance(body, dict) else {})


@impact_kind("config-key-removed", "nodes labelled by their platform keep a config key the sync removes")
def _config_key_removed(change: Change) -> list[Impact]:
    if "dra" in (_stack(change.old), _stack(change.new)):
        return []  # allocation-switch's
    impacts = []
    for label, configmap in ((PLUGIN_LABEL, _plugin_configmap(change)), (MIG_LABEL, _mig_configmap(change))):
        offered = _config_keys(change.new, label)
        for name in change.both() if offered is not None else []:
            pool = change.new.pools[name]
            before = (change.old.pools[name].get("labels") or {}).get(label)
            after = (pool.get("labels") or {}).get(label)
            # A NodeFeatureRule relabels its nodes at sync; a node template, node-pool command or Karpenter NodePool
            # labels a node once, when it registers (karpenter-facts §d: a label change drifts, replacing the nodes
            # later), so the running nodes keep the old key.
            if _labelled_by(pool) == "nfd" or not before or before == after or before in offered:
                continue
            source = _label_source(pool)
            docs = change.documents(["ConfigMap"], where=configmap)
            nodes = change.pools_nodes([name])
            if label == PLUGIN_LABEL:
                # gpu-operator-facts §6: a label naming a key the ConfigMap lacks is an error; the pod stays broken.
                what = (f"pool {name}'s running nodes carry {label}={before} from their {source} until they are "
                        f"replaced, but the sync removes key {before} from ConfigMap {_names(d.name for d in docs)} "
                        f"(the profile changed, so its key is now {after}): a label naming a missing key is an error, "
                        "so the device plugin and GFD on those nodes fail at their next start (any operand restart, a "
                        f"node reboot) and the node stops advertising {_names(sorted(change.old.resources(name)))}")
                safe = (f"right after the sync relabel the running nodes (`kubectl label nodes -l {POOL_LABEL}={name} "
                        f"{label}={after} --overwrite`: the config-manager switches the plugin to the new key), then "
                        "roll the node group onto the new template (Karpenter: let drift replace the nodes, with a "
                        "disruption budget)")
            else:
                # nvidia-formats-facts §2: the label names a config under mig-configs; a missing name cannot apply.
                what = (f"pool {name}'s running nodes carry {label}={before} from their {source} until they are "
                        f"replaced, but the sync removes config {before} from the mig-configs of ConfigMap "
                        f"{_names(d.name for d in docs)} (now {after}): the MIG manager cannot apply a name that "
                        "mig-configs lacks, so on those nodes it fails at its next start "
                        f"({MIG_LABEL}.state=failed) until each node is relabelled or replaced")
                relabel = f'kubectl label node "$n" {label}={after} --overwrite'
                loop = each_node(name, DRAIN, relabel, _mig_done(), UNCORDON)
                safe = (f"right after the sync, one node at a time (the relabel repartitions it): `{loop}`; then roll "
                        "the node group onto the new template")
            impacts.append(Impact("config-key-removed", "disruptive", [name], what, safe,
                                  resources=sorted(change.old.resources(name)), nodes=nodes, documents=docs))
    return impacts

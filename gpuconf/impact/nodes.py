"""What node labels and taints do: a taint added or removed (on running nodes, in the operands' tolerations, in
the driver's pod template) and a new rule that labels a pool's nodes."""

from __future__ import annotations

from typing import Any

from ..output.treediff import DocumentDiff
from .driver import upgrade_window_minutes
from .folder import Deployed
from .model import POOL_LABEL, Change, Impact, _driver_owner, _label_source, _labelled_by, _names, _taints, impact_kind
from .quotas import _pool_left, _renames


#: The chart's operand tolerations when values set none (gpu-operator-facts §4: daemonsets.tolerations).
DEFAULT_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _parse_taint(text: str) -> tuple[str, str | None, str]:
    """key, value (None when absent) and effect of a report.json taint, `key[=value]:effect`."""
    head, _, effect = text.rpartition(":")
    key, eq, value = head.partition("=")
    return key, value if eq else None, effect


def _tolerates(tolerations: Any, taint: str) -> bool:
    """Whether a toleration list tolerates a taint (Kubernetes' rule: the effect matches or is empty, and the key
    matches with Exists, or an empty key with Exists, or key and value match with Equal, the default operator)."""
    key, value, effect = _parse_taint(taint)
    for t in tolerations if isinstance(tolerations, list) else []:
        if not isinstance(t, dict) or t.get("effect") and t.get("effect") != effect:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == key):
            return True
        if t.get("operator", "Equal") == "Equal" and t.get("key") == key and str(t.get("value") or "") == (value or ""):
            return True
    return False


def _operand_tolerations(side: Deployed) -> list:
    """The one toleration list of every operand DaemonSet (gpu-operator-facts §4: daemonsets.tolerations is global
    and replaces the chart's default): the rendered ClusterPolicy's where there is one (OpenShift), else values'."""
    for policy in side.objects("ClusterPolicy"):
        return ((policy.get("spec") or {}).get("daemonsets") or {}).get("tolerations") or DEFAULT_TOLERATIONS
    return (side.values.get("daemonsets") or {}).get("tolerations") or DEFAULT_TOLERATIONS


def _tolerations_changed(change: Change) -> bool:
    return bool(change.values_changes("daemonsets.tolerations") or change.documents(
        ["ClusterPolicy"], where=lambda d: any(c.path.startswith("spec.daemonsets.tolerations") for c in d.changes)))


def _toleration_docs(change: Change) -> list[DocumentDiff]:
    """The ClusterPolicy and NodeFeatureDiscovery documents that change only in tolerations or enableTaints."""
    prefixes = ("spec.daemonsets.tolerations", "spec.operand.workerTolerations", "spec.enableTaints")
    return change.documents(["ClusterPolicy", "NodeFeatureDiscovery"], where=lambda d: d.status == "changed" and all(
        c.path.startswith(prefixes) for c in d.changes))


@impact_kind("taint-change", "a pool taint is added or removed")
def _taint_change(change: Change) -> list[Impact]:
    impacts = []
    tolerations = _operand_tolerations(change.new)
    for name in change.both():
        pool = change.new.pools[name]
        added = sorted(_taints(pool) - _taints(change.old.pools[name]))
        removed = sorted(_taints(change.old.pools[name]) - _taints(pool))
        if not added and not removed:
            continue
        docs = change.documents(["NodeFeatureRule", "ResourceFlavor"], [name]) + change.values_paths(
            "daemonsets.tolerations", "node-feature-discovery.worker.tolerations",
            "node-feature-discovery.master.config.enableTaints") + _toleration_docs(change)
        drivers = change.documents(["NVIDIADriver"], [name], where=_driver_tolerations_only)
        docs += drivers
        nodes = change.pools_nodes([name])
        lost: list[str] = []
        if _labelled_by(pool) == "nfd":
            # nfd-master applies a NodeFeatureRule's taints to the running nodes at sync (enableTaints).
            what, severity, safe = _taints_now(name, added, removed)
        else:
            what, severity, safe, lost = _taints_later(change, name, added, removed, tolerations, nodes)
        if drivers:
            # The driver DaemonSet is always OnDelete (gpu-operator-facts §4: daemonsets.updateStrategy): a new pod
            # template (the NVIDIADriver's spec.tolerations) makes the upgrade controller replace every driver pod.
            severity = "disruptive"
            what += (f"; NVIDIADriver {_names(d.name for d in drivers)} gets the new tolerations too: the new driver "
                     "pod template makes the upgrade controller reinstall the driver on every node of the pool (drain, "
                     "under the upgrade policy)")
        impacts.append(Impact("taint-change", severity, [name], what, safe, resources=lost, nodes=nodes,
                              documents=docs))
    impacts += _driver_tolerations(change)
    return impacts


def _preferred(added: list[str]) -> bool:
    """Every added taint is PreferNoSchedule: a preference, not a ban. The scheduler tries not to place new pods that
    do not tolerate it there, and still does when nothing else fits (Kubernetes core/v1 TaintEffectPreferNoSchedule,
    k8s.io/api core/v1 types.go), so it keeps no pod Pending."""
    return bool(added) and all(t.endswith(":PreferNoSchedule") for t in added)


def _taints_now(name: str, added: list[str], removed: list[str]) -> tuple[str, str, str]:
    """A pool whose taints nfd-master applies: the running nodes get and lose them at sync."""
    if any(t.endswith(":NoExecute") for t in added):
        severity, what = "disruptive", (f"pool {name} gets taint(s) {_names(added)}: NoExecute evicts every running "
                                        "pod there that does not tolerate it")
    elif _preferred(added):
        severity, what = "none", (f"pool {name} gets taint(s) {_names(added)}: the scheduler only prefers other nodes "
                                  "for new pods that do not tolerate it, so none stays Pending for it")
    elif added:
        severity, what = "pending", (f"pool {name} gets taint(s) {_names(added)}: new pods that do not tolerate it "
                                     "stay Pending (running pods stay)")
    else:
        severity, what = "none", (f"pool {name} loses taint(s) {_names(removed)}: pods that do not tolerate them may "
                                  "now land there")
    if added and removed:
        what += f"; it loses {_names(removed)}"
    return what, severity, ("add the toleration to the workloads (and their Kueue flavor or admission policy) before "
                            "the taint lands" if added else "check that nothing else should stay off these nodes")


def _taints_later(change: Change, name: str, added: list[str], removed: list[str], tolerations: list,
                  nodes: int | None) -> tuple[str, str, str, list[str]]:
    """A pool whose nodes get their taints from the platform (a node template, a node-pool command, a Karpenter
    NodePool): the running nodes keep the old taints until they are replaced, while the operands' tolerations change
    at sync (gpu-operator-facts §4: one global list; §10.8: an untolerated taint keeps NFD's worker and every operand
    off the node, so nothing labels it or advertises its GPUs)."""
    source = _label_source(change.new.pools[name])
    parts = []
    prefer = _preferred(added)
    if added:
        parts.append(f"pool {name}'s {source} gets taint(s) {_names(added)}: only nodes that register from now on carry "
                     "them (the running nodes keep their taints until they are replaced), and " + (
                         "the scheduler only prefers other nodes for new pods that do not tolerate them" if prefer else
                         "pods that do not tolerate them do not land there"))
    if removed:
        parts.append(f"pool {name}'s {source} drops taint(s) {_names(removed)}, which its running nodes keep until "
                     "they are replaced")
    stranded = [t for t in removed if not _tolerates(tolerations, t)]
    severity = "pending" if added and not prefer or stranded else "none"
    lost = sorted(change.old.resources(name)) if stranded else []
    safe = ("add the toleration to the workloads (and their Kueue flavor or admission policy) before new nodes come "
            "up" if added else "check that nothing else should stay off the new nodes")
    if stranded:
        owner = _driver_owner(change.new.pools[name])
        each = f"each of its {nodes} node(s)" if nodes is not None else "each of its nodes"
        what = (f"the sync drops {_names(stranded)} from the operands' tolerations (daemonsets.tolerations, one list "
                "for every operand, and NFD's worker): the device plugin, GFD, DCGM exporter, validator and NFD worker "
                f"can no longer run on those nodes, so {each} stops advertising "
                f"{_names(lost)} until it is replaced (new GPU pods stay Pending)")
        if owner in ("ClusterPolicy", "NVIDIADriver"):
            severity = "disruptive"
            what += ("; the operator's driver pod cannot come back either once the upgrade controller replaces it, "
                     "so the GPU workloads there stop")
        else:
            what += "; running GPU pods keep the devices they hold"
        parts.append(what)
        safe = (f"just before the sync remove the old taint(s) from the running nodes (`kubectl taint nodes -l "
                f"{POOL_LABEL}={name} " + " ".join(_parse_taint(t)[0] + ":" + _parse_taint(t)[2] + "-" for t in stranded)
                + "`), add the new ones right after it, and update the node group so that new nodes match; or roll "
                "the pool onto the new template before the merge")
    return "; ".join(parts), severity, safe, lost


def _driver_tolerations_only(doc: DocumentDiff) -> bool:
    return doc.status == "changed" and all(c.path.startswith("spec.tolerations") for c in doc.changes)


def _driver_tolerations(change: Change) -> list[Impact]:
    """A new operand toleration list is a new pod template for the driver DaemonSet of the ClusterPolicy (the global
    list, gpu-operator-facts §4) or of an NVIDIADriver (its spec.tolerations). The driver DaemonSet is always OnDelete
    (§4: daemonsets.updateStrategy): the upgrade controller replaces every driver pod, draining under the upgrade
    policy, on every node that driver manages, not only on the tainted pool's."""
    impacts = []
    if _tolerations_changed(change):
        pools = [p for p in change.both() if _driver_owner(change.new.pools[p]) == "ClusterPolicy"]
        if pools:
            counts = [change.new.pools[p].get("nodes", 0) for p in pools]
            minutes = upgrade_window_minutes(change.new.policy(), counts, per_object=False)
            impacts.append(Impact(
                "taint-change", "disruptive", pools,
                "the operands' toleration list changes (daemonsets.tolerations is one list for every operand "
                "DaemonSet, the ClusterPolicy's driver included): the new driver pod template makes the upgrade "
                f"controller reinstall the driver on every node the ClusterPolicy manages, in pools {_names(pools)} "
                f"(drain, under the upgrade policy, about {minutes} minutes by the roll-out formula), and every other "
                "operand pod restarts there",
                "make the taint change alone, in a maintenance window long enough for the roll-out; watch `kubectl get "
                "nodes -L nvidia.com/gpu-driver-upgrade-state` until every node shows `upgrade-done`",
                nodes=change.pools_nodes(pools), documents=change.values_paths("daemonsets.tolerations")
                + _toleration_docs(change)))
    tainted = {p for p in change.both() if _taints(change.old.pools[p]) != _taints(change.new.pools[p])}
    for doc in change.documents(["NVIDIADriver"], where=_driver_tolerations_only):
        pools = [p for p in [change.pool_data(doc)] if p in change.new.pools]
        if set(pools) & tainted:
            continue  # the tainted pool's impact says so
        impacts.append(Impact(
            "taint-change", "disruptive", pools,
            f"NVIDIADriver {doc.name}'s tolerations change: the new driver pod template makes the upgrade controller "
            "reinstall the driver on every node it manages (drain, under the upgrade policy)",
            "make the taint change alone, in a maintenance window",
            nodes=change.pools_nodes(pools) if pools else None, documents=[doc]))
    return impacts


@impact_kind("pool-selection", "the rule that labels a pool's nodes changes")
def _pool_selection(change: Change) -> list[Impact]:
    impacts = []
    for doc in change.documents(["NodeFeatureRule"], where=lambda d: any(
            ".matchFeatures" in c.path or ".matchAny" in c.path for c in d.changes) or d.status != "changed"):
        pool = change.pool_data(doc) or doc.name
        if doc.status == "added" and pool not in change.old.pools:
            continue  # a new pool: capacity-change says so
        if doc.status == "changed" and pool in change.old.pools and pool in change.new.pools:
            old_ids, new_ids = _pci_devices(change.old.data(doc)), _pci_devices(change.new.data(doc))
            if old_ids and new_ids and not old_ids & new_ids:
                impacts.append(_pool_left(change, pool, doc, old_ids, new_ids))
                continue
        renamed = _renames(change)
        if doc.status == "removed" and pool in renamed:
            what = (f"NodeFeatureRule {doc.name} is deleted and pool {renamed[pool]}'s rule, with the same match, "
                    f"takes its nodes: nfd-master swaps their {POOL_LABEL}={pool} label (and the pool's other labels "
                    "and taints) "
                    "for the new pool's")
        elif doc.status == "removed" and pool not in change.new.pools:
            what = (f"NodeFeatureRule {doc.name} is deleted: nfd-master removes pool {pool}'s labels and taints from "
                    "its nodes, which fall back to the default device-plugin config")
        else:
            what = (f"the rule that labels pool {pool}'s nodes changes: nodes that stop matching lose the pool's "
                    "labels and taints (device-plugin config, MIG layout), nodes that start matching gain them")
        impacts.append(Impact("pool-selection", "pending", [pool], what,
                              f"check which nodes match before the merge (`kubectl get nodes -l {POOL_LABEL}={pool}` "
                              "against the new rule) and drain those that leave the pool",
                              nodes=change.pools_nodes([pool], new=doc.status != "removed"), documents=[doc]))
    return impacts


def _pci_devices(rule: Any) -> set[str]:
    """The PCI device ids a NodeFeatureRule's pci.device expressions match (In), over all its rules."""
    ids: set[str] = set()
    for rule in ((rule or {}).get("spec") or {}).get("rules") or []:
        for feature in (rule or {}).get("matchFeatures") or []:
            if not isinstance(feature, dict):
                continue
            device = (feature.get("matchExpressions") or {}).get("device")
            if feature.get("feature") == "pci.device" and isinstance(device, dict) and device.get("op") == "In":
                ids.update(str(v) for v in device.get("value") or [])
    return ids

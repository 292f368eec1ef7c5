"""What Kueue and quotas do: a pool's advertised capacity, its presence, its scale or a team's quota that
changes."""

from __future__ import annotations

from typing import Any

from ..output.treediff import DocumentDiff
from .folder import Deployed
from .model import (
    MIG_LABEL, PLUGIN_LABEL, POOL_LABEL, Change, Impact, _driver_owner, _labelled_by, _names, _per_node, _pool_of,
    _taints, _template_file, impact_kind)
from .nodepools import _count_line


def _rule_labels(rule: Any) -> dict:
    rules = ((rule or {}).get("spec") or {}).get("rules") or []
    return {k: v for r in rules if isinstance(r, dict) for k, v in (r.get("labels") or {}).items()}


def _default_driver(side: Deployed) -> bool:
    """Whether the cluster has a default NVIDIADriver, the fallback for GPU nodes that match no other one
    (gpu-operator-facts §8; §4: driver.nvidiaDriverCRD.deployDefaultCR defaults to true)."""
    if any(((d.get("spec") or {}).get("default") is True) for d in side.objects("NVIDIADriver")):
        return True
    crd = (side.values.get("driver") or {}).get("nvidiaDriverCRD") or {}
    return bool(crd.get("enabled")) and crd.get("deployDefaultCR", True) is not False


def _default_plugin_resources(side: Deployed, gpus: int) -> tuple[str, dict[str, int]]:
    """The device-plugin config key of nodes without the config label (devicePlugin.config.default) and what a node
    with `gpus` whole GPUs advertises under it (gpu-operator-facts §6: MPS wins over time-slicing; renameByDefault
    adds `.shared`; an absent or empty key means the plugin's defaults, whole GPUs)."""
    config = (side.values.get("devicePlugin") or {}).get("config") or {}
    key = config.get("default") or ""
    text = next((((cm.get("data") or {}).get(key)) for cm in side.objects("ConfigMap")
                 if (cm.get("metadata") or {}).get("name") == config.get("name")), None)
    try:
        from ..output.treediff import _load_all

        body = (_load_all(text) or [{}])[0] if isinstance(text, str) else {}
    except Exception:  # noqa: BLE001 - a hand-edited folder: fall back to whole GPUs
        body = {}
    sharing = (body.get("sharing") if isinstance(body, dict) else None) or {}
    spec = sharing.get("mps") or sharing.get("timeSlicing") or {}
    out: dict[str, int] = {}
    for resource in spec.get("resources") or []:
        if isinstance(resource, dict) and resource.get("name") == "nvidia.com/gpu":
            name = "nvidia.com/gpu.shared" if spec.get("renameByDefault") else "nvidia.com/gpu"
            out[name] = gpus * int(resource.get("replicas") or 1)
    return key or "the plugin's defaults", out or {"nvidia.com/gpu": gpus}


def _pool_left(change: Change, pool: str, doc: DocumentDiff, old_ids: set[str], new_ids: set[str]) -> Impact:
    """The pool's rule now matches other PCI devices (another GPU model): every running node of the pool stops
    matching, and nfd-master removes the rule's labels (and taints) from it at sync."""
    old, new = change.old.pools[pool], change.new.pools[pool]
    nodes = change.pools_nodes([pool], new=False)
    labels = _rule_labels(change.old.data(doc))
    taints = " (and the pool's taints)" if _taints(old) else ""
    what = (f"pool {pool}'s GPU model changes from {old.get('model', '?')} to {new.get('model', '?')} and its "
            f"NodeFeatureRule now matches PCI device(s) {_names(sorted(new_ids))} instead of "
            f"{_names(sorted(old_ids))}: its{'' if nodes is None else ' ' + str(nodes)} running node(s) stop matching, "
            f"so nfd-master removes {_names(sorted(labels))}{taints} from them")
    severity, driverless = "pending", False
    owner = _driver_owner(old)
    if owner == "NVIDIADriver":
        severity = "disruptive"
        driver = next(((d.get("metadata") or {}).get("name") for d in change.old.objects("NVIDIADriver")
                       if _pool_of(d) == pool), f"of pool {pool}")
        driverless = not _default_driver(change.new)
        what += (f"; NVIDIADriver {driver} selects nodes by {POOL_LABEL}, so it no longer manages them: " + (
            "no NVIDIADriver selects them any more (the cluster deploys no default one, gpu-operator-facts §8), so "
            "their driver goes and none replaces it, and their GPU workloads stop" if driverless else
            "they fall to the default NVIDIADriver (gpu-operator-facts §8), whose driver pod replaces the pool's, "
            "reinstalling the driver and stopping their GPU workloads"))
    elif labels.get("nvidia.com/gpu.deploy.driver") == "false":
        severity = "disruptive"
        what += ("; they lose nvidia.com/gpu.deploy.driver=false, so the operator starts its driver on nodes that run "
                 "a host driver (gpu-operator-facts §7), stopping their GPU workloads")
    resources = sorted(change.old.resources(pool))
    # all-disabled is what the operator presets on MIG-capable nodes without the label (gpu-operator-facts §6).
    if PLUGIN_LABEL in labels and labels.get(MIG_LABEL, "all-disabled") == "all-disabled":
        key, after = _default_plugin_resources(change.new, int(old.get("gpusPerNode") or 0))
        before = change.old.resources(pool)
        resources = sorted(set(before) | set(after))
        what += (f"; without {PLUGIN_LABEL} they get the default device-plugin config ({key}, gpu-operator-facts §6): "
                 + ("once a driver runs there again, " if driverless else "")
                 + (f"each node still advertises {_per_node(after)}" if after == before else
                    f"each node advertises {_per_node(after)} instead of {_per_node(before)}"))
        if nodes is not None and after != before:
            what += (" (" + ", ".join(f"{r} {before.get(r, 0) * nodes} -> {after.get(r, 0) * nodes}" for r in resources)
                     + " in the pool)")
    elif PLUGIN_LABEL in labels:
        what += f"; they lose {PLUGIN_LABEL} and {MIG_LABEL}, so what they advertise falls to the cluster's defaults"
    what += f"; pods and Jobs that select {POOL_LABEL}={pool} stay Pending until {new.get('model', '?')} nodes join"
    return Impact("pool-selection", severity, [pool], what,
                  "do not change a running pool's GPU model in place: add the new model as a new pool (its own name "
                  "and nodes), move the workloads to it, then remove this pool; or drain the pool's nodes before the "
                  "merge and replace them with the new model's",
                  resources=resources, nodes=nodes, documents=[doc])


@impact_kind("capacity-change", "a pool's advertised capacity, a pool's presence or a team's quota changes")
def _capacity_change(change: Change) -> list[Impact]:
    impacts = []
    renamed = _renames(change)
    for name in [*change.old.pools, *(p for p in change.new.pools if p not in change.old.pools)]:
        before, after = change.old.totals(name), change.new.totals(name)
        limits = change.documents(["NodePool"], [name], where=lambda d: any(
            c.path.startswith("spec.limits") for c in d.changes)) + change.documents(
            ["file", "document"], where=lambda d: d.status == "changed" and d.file == _template_file(change, name) and all(
                _count_line(c.old) and _count_line(c.new) for c in d.changes))
        pool_docs = limits if name in change.old.pools and name in change.new.pools else limits + change.documents(
            ["NodeFeatureRule", "NVIDIADriver", "NodePool", "ResourceFlavor", "Job"], [name],
            where=lambda d: d.status != "changed") + change.documents(
            ["file", "document"], where=lambda d: d.status != "changed" and d.file == _template_file(change, name))
        if name in renamed:
            to = renamed[name]
            what = (f"pool {name} is renamed to {to} (the same GPU model, GPUs per node and node selection): its "
                    f"nodes move to pool {to} with their {_per_node(before)}, so the cluster keeps its capacity; pods "
                    f"and Jobs that select {POOL_LABEL}={name} stay Pending, and its nodes swap the pool's labels "
                    "and configs for the new name's")
            replaced = change.documents(["NVIDIADriver", "NodePool"], [name], where=lambda d: d.status == "removed")
            if replaced:
                kinds = {d.kind for d in replaced}
                what += (f"; its {_names(sorted(kinds))} is deleted and pool {to}'s is created, which "
                         + " and ".join(w for k, w in (("NVIDIADriver", "reinstalls the driver on its nodes"),
                                                        ("NodePool", "replaces its nodes")) if k in kinds)
                         + ", stopping their GPU workloads")
            impacts.append(Impact("capacity-change", "disruptive" if replaced else "pending", [name],
                what, f"move the pods, Jobs and quotas that select pool {name} to {to} in the same change, and drain "
                "its nodes before the merge where its driver object or NodePool is replaced",
                resources=sorted(before), nodes=change.pools_nodes([name], new=False), documents=pool_docs))
            continue
        if name not in change.new.pools:
            what = (f"pool {name} is removed: its {_per_node(before)} leave the cluster's capacity; pods and Jobs "
                    "that select it stay Pending, and its nodes lose the pool's labels, configs and driver object")
            impacts.append(Impact("capacity-change", "disruptive" if change.documents(
                ["NVIDIADriver", "NodePool"], [name], where=lambda d: d.status == "removed") else "pending", [name],
                what, "move the pool's workloads elsewhere and drain its nodes before the merge",
                resources=sorted(before), nodes=change.pools_nodes([name], new=False), documents=pool_docs))
            continue
        if name not in change.old.pools:
            came = next((old for old, new in renamed.items() if new == name), None)
            impacts.append(Impact("capacity-change", "none", [name],
                                  f"pool {name} takes over pool {came}'s nodes and their {_per_node(after)}" if came
                                  else f"pool {name} is added: {_per_node(after)} join the cluster's capacity once its "
                                  "nodes are labelled", "nothing to do before the merge",
                                  resources=sorted(after), nodes=change.pools_nodes([name]), documents=pool_docs))
            continue
        # Per node: the sync changes what each node advertises, not how many nodes there are (a NodePool's limits
        # aside), so a declared node count alone changes nothing deployed.
        before, after = change.old.resources(name), change.new.resources(name)
        lower = sorted(r for r in before if after.get(r, 0) < before[r] and r in after)
        higher = sorted(r for r in after if after[r] > before.get(r, 0) and r in before)
        if not lower and not higher and not pool_docs:
            nodes_before, nodes_after = change.old.pools[name].get("nodes"), change.new.pools[name].get("nodes")
            if nodes_before != nodes_after:
                impacts.append(Impact(
                    "capacity-change", "none", [name],
                    f"pool {name}'s declared nodes change from {nodes_before} to {nodes_after} (its capacity in "
                    "REPORT.md and the quota checks follow): the sync adds or removes no node",
                    "scale the node group to match, draining the nodes that go", resources=sorted(after),
                    nodes=change.pools_nodes([name])))
            continue
        shown = ", ".join(f"{r} {before[r]} -> {after[r]} per node" for r in lower + higher)
        capped = _limits_lowered(change, name)
        what = f"pool {name}'s capacity changes ({shown or _scale(change, name)})"
        if lower:
            what += (": pods asking for more than is left stay Pending, and quotas above the new capacity no longer "
                     "hold")
        if capped:
            # Karpenter launches no node past spec.limits (karpenter-facts §b); limits are a behavioral field, not
            # drift (§d), so the nodes already running stay.
            what += (f"{'; ' if lower else ': '}Karpenter NodePool limits drop ({_names(capped)}): it launches no node "
                     "past them, so pods that would have scaled the pool stay Pending; running nodes stay")
        impacts.append(Impact(
            "capacity-change", "pending" if lower or capped else "none", [name], what,
            "lower the teams' quotas to the new capacity in the same change and let jobs finish first" if lower else
            "lower the teams' quotas to the new limit in the same change; Karpenter removes no running node for "
            "it (consolidation or a drain does)" if capped else
            "nothing to do before the merge", resources=lower + higher, nodes=change.pools_nodes([name]),
            documents=pool_docs))
    impacts += _quota_change(change)
    return impacts


def _renames(change: Change) -> dict[str, str]:
    """Old pool -> new pool, where one pool goes and one comes with the same GPU model, GPUs per node, label source
    and, for NodeFeatureRule pools, the same match: a rename, whose nodes move rather than leave."""
    def same(old: dict, new: dict) -> bool:
        if any(old.get(k) != new.get(k) for k in ("model", "gpusPerNode")) or _labelled_by(old) != _labelled_by(new):
            return False
        if _labelled_by(old) != "nfd":
            return True
        before, after = ([m.get("matchFeatures") for r in side.objects("NodeFeatureRule")
                          if _pool_of(r) == pool.get("name") for m in (r.get("spec") or {}).get("rules") or []
                          if isinstance(m, dict)] for side, pool in ((change.old, old), (change.new, new)))
        return before == after

    gone = [p for p in change.old.pools if p not in change.new.pools]
    came = [p for p in change.new.pools if p not in change.old.pools]
    pairs = {g: [c for c in came if same(change.old.pools[g], change.new.pools[c])] for g in gone}
    return {g: cs[0] for g, cs in pairs.items()
            if len(cs) == 1 and sum(cs[0] in others for others in pairs.values()) == 1}


def _limits_lowered(change: Change, pool: str) -> list[str]:
    """`key old -> new` of each limit of the pool's Karpenter NodePool that the change lowers or adds."""
    from ..quantity import parse

    out = []
    for doc in change.documents(["NodePool"], [pool], where=lambda d: d.status == "changed"):
        before = ((change.old.data(doc) or {}).get("spec") or {}).get("limits") or {}
        after = ((change.new.data(doc) or {}).get("spec") or {}).get("limits") or {}
        for key, value in sorted(after.items()):
            try:
                lowered = key not in before or parse(value) < parse(before[key])
            except ValueError:
                lowered = value != before.get(key)
            if lowered:
                out.append(f"{key} {before.get(key, 'none')} -> {value}")
    return out


def _scale(change: Change, pool: str) -> str:
    """How a pool's node count or limit changes, in words."""
    before, after = change.old.pools[pool].get("nodes"), change.new.pools[pool].get("nodes")
    return f"nodes {before} -> {after}" if before != after else "its NodePool limits"


def _quotas(side: Deployed, pools: dict[tuple[str, str], set[str]] | None = None) -> dict[tuple[str, str], int]:
    """(team, resource) -> its quota (with Kueue, (team, "resource on pool") -> the nominal quota); pools, when given,
    collects the pools each quota is on."""
    out: dict[tuple[str, str], int] = {}
    pools = {} if pools is None else pools
    queues = (side.report.get("queueing") or {}).get("teams")
    for team in [] if queues else side.report.get("teams", []):
        for quota in team.get("quotas", []):
            key = (team.get("name", "?"), quota.get("resource", "?"))
            out[key] = out.get(key, 0) + (quota.get("total") or 0)
            pools.setdefault(key, set()).update(p for p in quota.get("pools") or [] if isinstance(p, str))
    for team in queues or []:
        for row in team.get("rows", []):
            key = (team.get("name", "?"), f"{row.get('resource')} on {row.get('pool')}")
            out[key] = row.get("nominal") or 0
            if isinstance(row.get("pool"), str):
                pools.setdefault(key, set()).add(row["pool"])
    return out


def _quota_change(change: Change) -> list[Impact]:
    on: dict[tuple[str, str], set[str]] = {}
    before, after = _quotas(change.old, on), _quotas(change.new)
    for old, new in _renames(change).items():  # a renamed pool's queue rows follow it
        for (team, row), value in list(after.items()):
            if row.endswith(f" on {new}"):
                after.setdefault((team, row[: -len(new)] + old), value)
    dropped = sorted(k for k in before if after.get(k, 0) < before[k])
    if not dropped:
        return []
    teams = sorted({t for t, _ in dropped})
    docs = change.documents(["ResourceQuota", "ClusterQueue"])
    pools = [p for p in change.old.pools if any(p in on.get(k, ()) for k in dropped)]
    return [Impact("capacity-change", "pending", pools,
                   "team quota drops: " + "; ".join(f"{t} {r} {before[(t, r)]} -> {after.get((t, r), 0)}"
                                                    for t, r in dropped)
                   + ": running pods keep running, new pods and Jobs of those teams wait (Kueue) or are refused "
                   "(ResourceQuota) until usage falls under the new quota",
                   f"tell team(s) {_names(teams)} before the merge",
                   resources=sorted({r.split(' on ')[0] for _, r in dropped}), documents=docs)]

"""The planner: every impact kind over one Change, then what none of them explained (operand restarts, objects
applied in place, and what gpuconf cannot classify), sorted into one ImpactPlan.

The kinds run in ORDER; a new kind registers with `@impact_kind` in its consumer's module and takes its place in
ORDER."""

from __future__ import annotations

from typing import Callable

from ..output.treediff import DocumentDiff, TreeDiff
from . import deviceplugin, driver, fabric, hazards, nodepools, nodes, quotas, switches, workloads  # noqa: F401 (kinds)
from .chart import advise, chart_section
from .model import KINDS, SEVERITIES, Change, Impact, ImpactPlan, _names

#: The impact kinds in the order they are looked for (a kind sees what the earlier ones explained).
ORDER = ("operator-upgrade", "delivery-source", "allocation-switch", "workload-mode-change", "operand-switch",
         "driver-mode-switch", "driver-upgrade", "hazard", "device-plugin-restart", "resource-rename", "mig-repartition",
         "config-key-removed", "node-replacement", "taint-change", "pool-selection", "compute-domains", "capacity-change",
         "probe-run", "object-removed")


#: Kinds applied in place that stop or restart nothing on a GPU node: RBAC, namespaces, priorities, monitoring
#: objects, queue objects (quota drops are capacity-change's), GitOps objects that are not the chart's version.
QUIET_KINDS = frozenset({
    "Namespace", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "WorkloadPriorityClass",
    "ServiceMonitor", "PrometheusRule", "ConfigMap", "LocalQueue", "ClusterQueue", "ResourceFlavor", "ResourceQuota",
    "Kustomization", "Application", "ApplicationSet", "AppProject", "HelmRelease", "HelmRepository", "OCIRepository",
    "GitRepository", "OperatorGroup", "Subscription", "CatalogSource", "NodeOverlay", "LimitRange",
    # DRA: a DeviceClass or claim template applies to claims made from now on; allocated claims keep their devices.
    "DeviceClass", "ResourceClaimTemplate"})


def _operand_restart(change: Change) -> list[Impact]:
    values = [d for d in change.diff.documents if d.kind == "values"]
    left = [c.path for d in values for c in d.changes if c.path not in change.values_claimed]
    docs = change.documents(["ClusterPolicy", "NodeFeatureDiscovery"])
    docs = [d for d in docs if not any(d in i.documents for i in change.impacts)]
    if not left and not docs:
        return []
    shown = sorted({p.split(".")[0] for p in left}) + [d.title for d in docs]
    return [Impact("operand-restart", "restart", list(change.new.pools),
                   f"chart values change ({_names(shown)}): the operator updates its operand DaemonSets and their pods "
                   "restart node by node; GPU workloads keep running",
                   "nothing to drain; watch `kubectl get clusterpolicy` until it is ready again",
                   nodes=change.pools_nodes(list(change.new.pools)), documents=(values if left else []) + docs)]


def _object_change(change: Change) -> list[Impact]:
    covered = {id(d) for i in change.impacts for d in i.documents}
    # A removed object is deleted, never "updated in place": object-removed's, or unclassified's.
    quiet = [d for d in change.diff.documents if id(d) not in covered and d.status != "removed" and (
        d.kind in QUIET_KINDS or d.kind == "document" and d.file.endswith("kustomization.yaml"))]
    if not quiet:
        return []
    return [Impact("object-change", "none", sorted({p for d in quiet if (p := change.pool_data(d))}),
                   f"{len(quiet)} object(s) are updated in place ({_names(sorted({_title(d) for d in quiet})[:6])}"
                   f"{', ...' if len(quiet) > 6 else ''}): no GPU pod, node or operand restarts",
                   "nothing to drain", documents=quiet)]


def _title(doc: DocumentDiff) -> str:
    return doc.file if doc.kind in ("document", "file", "values", "release-values") else doc.title


def _unclassified(change: Change) -> list[Impact]:
    covered = {id(d) for i in change.impacts for d in i.documents}
    left = [d for d in change.diff.documents if id(d) not in covered]
    if not left:
        return []
    # Fails closed: what gpuconf cannot classify may take running things with it, so it is at least pending.
    return [Impact("unclassified", "pending", sorted({p for d in left if (p := change.pool_data(d))}),
                   f"unclassified: gpuconf cannot tell what {_names(f'{d.status} {_title(d)}' for d in left)} does to "
                   "the cluster (a gap in gpuconf: please report it)", "review the document diff below by hand before "
                   "merging", documents=left)]


#: Run after the kinds, in this order, on what they left.
FALLBACKS: dict[str, Callable[[Change], list[Impact]]] = {
    "operand-restart": _operand_restart, "object-change": _object_change, "unclassified": _unclassified}


def plan_impacts(old: dict[str, str], new: dict[str, str], diff: TreeDiff) -> ImpactPlan:
    """The impacts of replacing the folder `old` (relative path -> text) by the render `new`, given their diff."""
    change = Change(old, new, diff)
    for name in ORDER:
        change.impacts += KINDS[name][1](change)
    for fallback in FALLBACKS.values():
        change.impacts += fallback(change)
    if not change.impacts:
        what = "no deployed object changes"
        if diff.comments_only or any(old.get(f) != new.get(f) for f in ("REPORT.md", "report.json")):
            what += " (only REPORT.md, report.json, comments or key order differ)"
        change.impacts.append(Impact("none", "none", [], what + ": the sync changes nothing in the cluster",
                                     "nothing to do"))
    order = list(ORDER) + list(FALLBACKS) + ["none"]
    change.impacts.sort(key=lambda i: (-SEVERITIES.index(i.severity), order.index(i.kind), i.pools))
    for impact in change.impacts:
        impact.documents = list({id(d): d for d in impact.documents}.values())
        if impact.nodes is not None:
            impact.nodes_from = "intent"
    section = chart_section(change.old, change.new)
    advise(section, change.old, change.new, change.impacts)
    return ImpactPlan(change.impacts, chart=section, notes=ordering(change.impacts, order))


def ordering(impacts: list[Impact], order: list[str]) -> list[str]:
    """One note for each set of pools that two or more disruptive impacts take down: the order to do them in (the
    planner's ORDER: the driver before the MIG layout, a node's config before its replacement)."""
    disruptive = [i for i in impacts if i.severity == "disruptive" and i.pools]
    groups: list[tuple[set[str], list[Impact]]] = []
    for impact in disruptive:  # pools that share an impact fall into one group
        touching = [g for g in groups if g[0] & set(impact.pools)]
        pools, members = set(impact.pools), [impact]
        for group in touching:
            groups.remove(group)
            pools |= group[0]
            members = group[1] + members
        groups.append((pools, members))
    notes = []
    for pools, members in groups:
        kinds = list(dict.fromkeys(i.kind for i in sorted(members, key=lambda i: order.index(i.kind))))
        if len(kinds) < 2:
            continue
        steps = ", then ".join(f"{n}. {kind}" for n, kind in enumerate(kinds, 1))
        notes.append(f"{_names(kinds)} take down the same nodes (pool(s) {_names(sorted(pools))}): do them in this "
                     f"order on each node, draining it once for all of them: {steps}; where they come from separate "
                     "edits of the intent, a commit each, in that order, lets each finish on every node before the "
                     "next one starts")
    return notes

"""What the chart's on/off switches, the delivery's source and a pruned object do: a component switched off (or on)
on every GPU node, the workload mode of the nodes (container or VM), the repository and revision GitOps applies
from, and an object the sync deletes (a Namespace takes everything in it).

Facts (../shared/reference/gpu-operator-facts.md): §4, the `<operand>.enabled` switches and their defaults, and
`sandboxWorkloads.enabled` / `.defaultWorkload` (`container|vm-passthrough|vm-vgpu`); §7, `nvidia.com/gpu.workload
.config` selects which operand set a node gets, the default being `sandboxWorkloads.defaultWorkload` when sandbox
workloads are on. gpuconf's Argo CD Applications and Flux Kustomizations prune (render/gitops.py): an object that
leaves the folder is deleted by the next sync. Argo CD leaves an object annotated `argocd.argoproj.io/sync-options:
Prune=false` (Argo CD's sync options), Flux one annotated `kustomize.toolkit.fluxcd.io/prune: disabled` (Flux's
kustomize-controller)."""

from __future__ import annotations

from typing import Any

from .model import Change, Impact, _names, impact_kind

#: The operands' `enabled` switches: component -> (severity of switching it off, what goes from every GPU node).
#: Switching one on starts it on every GPU node (restart), but the driver: the operator's driver on nodes that ran
#: without it (a host driver) fails or replaces the host's modules (disruptive, as driver-mode-switch says).
OFF: dict[str, tuple[str, str]] = {
    "driver": ("disruptive", "the operator deletes its driver DaemonSet: the driver is unloaded from every GPU node it "
                             "installed it on, and the GPU workloads there stop"),
    "toolkit": ("disruptive", "the operator removes the NVIDIA container toolkit: the container runtime loses the "
                              "NVIDIA runtime on every GPU node, so GPU containers cannot start (the device plugin, "
                              "GFD and DCGM exporter need it too)"),
    "devicePlugin": ("disruptive", "the operator deletes the device plugin: every GPU node stops advertising its "
                                   "nvidia.com/* resources, GPU pods stay Pending and a restarted one loses its GPUs"),
    "gds": ("disruptive", "the driver pod loses its GPUDirect Storage container: the upgrade controller reinstalls "
                          "the driver on every node it manages"),
    "gdrcopy": ("disruptive", "the driver pod loses its GDRCopy container: the upgrade controller reinstalls the "
                              "driver on every node it manages"),
    "migManager": ("pending", "the MIG manager leaves every GPU node: nodes keep their current MIG layout and a new "
                              "nvidia.com/mig.config never reaches them"),
    "gfd": ("pending", "GPU feature discovery leaves every GPU node: its nvidia.com/gpu.* labels are no longer kept, "
                       "so new nodes get none and pods that select them stay Pending"),
    "nfd": ("pending", "the chart no longer installs node-feature-discovery: no NodeFeatureRule labels a new node "
                       "(gpuconf.dev/pool, the sharing config), so new nodes join no pool"),
    "dcgmExporter": ("restart", "the DCGM exporter leaves every GPU node: GPU metrics and the alerts on them stop"),
    "dcgm": ("restart", "the standalone DCGM host engine leaves every GPU node (the exporter's embedded one stays)"),
    "nodeStatusExporter": ("restart", "the node status exporter leaves every GPU node: its metrics stop"),
    "validator": ("restart", "the validator leaves every GPU node: nodes are no longer validated"),
}


def _effective(change: Change, side: str, section: str) -> dict:
    """A values section on one side as Helm merges it: that side's chart defaults under its values."""
    from ..catalog import chart
    from ..render.values import copied, merge

    deployed = getattr(change, side)
    facts = chart(str(deployed.cluster.get("chartVersion") or ""))
    base = (facts.defaults.get(section) if facts else None) or {}
    base = copied(base) if isinstance(base, dict) else {}
    given = deployed.values.get(section)
    return merge(base, given) if isinstance(given, dict) else base


def _enabled(change: Change, side: str, section: str) -> bool | None:
    value = _effective(change, side, section).get("enabled")
    return value if isinstance(value, bool) else None


@impact_kind("operand-switch", "a component of the GPU stack is switched off (or on) on every GPU node")
def _operand_switch(change: Change) -> list[Impact]:
    impacts = []
    pools = list(change.new.pools)
    switched = {p.split(".")[0] for p in change.values_changes("") if p.endswith(".enabled") and p.count(".") == 1}
    for name in sorted(set(OFF) | switched):
        before, after = _enabled(change, "old", name), _enabled(change, "new", name)
        if before == after or name in ("sandboxWorkloads", "cdi", "psa"):
            continue
        docs = change.values_paths(f"{name}.enabled")
        if after is False or (after is None and before):
            severity, what = OFF.get(name, ("pending", f"{name} leaves every GPU node; gpuconf does not know what "
                                                       "its absence does to running workloads"))
            what = f"{name}.enabled: {_word(before)} -> {_word(after)}: {what}"
            safe = (f"switch {name} off only with every GPU node drained, in a maintenance window; to keep it off "
                    "one pool, label those nodes `nvidia.com/gpu.deploy.<operand>=false` instead"
                    if severity == "disruptive" else f"make sure nothing depends on {name} before merging")
        elif name == "driver":
            severity = "disruptive"
            what = ("driver.enabled: false -> true: the operator starts installing its driver on every GPU node; "
                    "where a host driver runs, the driver pod fails or replaces the host's modules, and every GPU pod "
                    "there stops")
            safe = "drain the GPU nodes first, in a maintenance window, and remove the host driver where one runs"
        else:
            severity = "restart"
            what = f"{name}.enabled: {_word(before)} -> {_word(after)}: the operator starts {name} on every GPU node"
            safe = "nothing to drain; watch `kubectl get clusterpolicy` until it is ready again"
        impacts.append(Impact("operand-switch", severity, pools, what, safe, nodes=change.pools_nodes(pools),
                              documents=docs))
    return impacts


def _word(value: bool | None) -> str:
    return "(unset)" if value is None else str(value).lower()


def _mode(section: dict) -> str:
    """The workload mode of a node without its own nvidia.com/gpu.workload.config label."""
    return str(section.get("defaultWorkload") or "container") if section.get("enabled") is True else "container"


@impact_kind("workload-mode-change", "sandbox workloads or the default workload mode (container or VM) change")
def _workload_mode(change: Change) -> list[Impact]:
    old, new = _effective(change, "old", "sandboxWorkloads"), _effective(change, "new", "sandboxWorkloads")
    if old == new:
        return []
    docs = change.values_paths("sandboxWorkloads")
    pools = list(change.new.pools)
    before, after = _mode(old), _mode(new)
    if before != after:
        what = (f"every GPU node without its own nvidia.com/gpu.workload.config label moves from {before} to {after} "
                "workloads: the operator removes one operand set from it (container: driver, toolkit, device plugin, "
                "GFD, DCGM exporter, MIG manager; VM: VFIO or vGPU manager, sandbox device plugin) and deploys the "
                "other, so the GPU workloads running there stop")
        return [Impact("workload-mode-change", "disruptive", pools, what,
                       "move nodes one pool at a time: label them `nvidia.com/gpu.workload.config=...` after draining "
                       "them, and change the default only once every node is labelled",
                       nodes=change.pools_nodes(pools), documents=docs)]
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return [Impact("workload-mode-change", "pending", pools,
                   f"sandboxWorkloads changes ({_names(changed)}): nodes labelled nvidia.com/gpu.workload.config="
                   "vm-passthrough or vm-vgpu change their operand set, which gpuconf cannot see from the folder",
                   "list the labelled nodes (`kubectl get nodes -L nvidia.com/gpu.workload.config`) and drain them "
                   "before the sync", nodes=None, documents=docs)]


# --- delivery ---------------------------------------------------------------------------------------------------

#: The GitOps objects that name where the cluster's objects and the chart come from, and the fields that do.
SOURCE_KINDS = ("Application", "ApplicationSet", "Kustomization", "GitRepository", "HelmRepository",
                "OCIRepository", "HelmRelease")


def _sources(side) -> dict[tuple, Any]:
    """(kind, namespace, name) -> where that GitOps object takes its content from: repository, revision, path,
    chart repository, source reference. A chart's own version (the Argo CD chart source's targetRevision, a
    HelmRelease's chart version, an OCIRepository's tag) is operator-upgrade's, not a source."""
    out: dict[tuple, Any] = {}
    for key, (kind, name, namespace, data) in side.docs.items():
        if kind not in SOURCE_KINDS or not isinstance(data, dict) or len(key) != 4:
            continue
        spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
        if kind == "Application":
            given = spec.get("sources") if isinstance(spec.get("sources"), list) else [spec.get("source")]
            found = [{k: v for k, v in s.items() if k in ("repoURL", "path", "chart", "ref")
                      or (k == "targetRevision" and "chart" not in s)} for s in given if isinstance(s, dict)]
        elif kind == "ApplicationSet":
            template = (spec.get("template") or {}).get("spec") if isinstance(spec.get("template"), dict) else None
            found = [(template or {}).get("source"), (template or {}).get("sources")]
        elif kind == "Kustomization" and str(data.get("apiVersion", "")).startswith("kustomize.toolkit.fluxcd.io"):
            found = [spec.get("path"), spec.get("sourceRef")]
        elif kind == "GitRepository":
            found = [spec.get("url"), spec.get("ref")]
        elif kind == "HelmRepository":
            found = [spec.get("url")]
        elif kind == "OCIRepository":
            found = [spec.get("url")]
        elif kind == "HelmRelease":
            chart = ((spec.get("chart") or {}).get("spec") or {}) if isinstance(spec.get("chart"), dict) else {}
            found = [chart.get("sourceRef") if isinstance(chart, dict) else None, spec.get("chartRef")]
        else:
            continue
        out[(kind, namespace, name)] = found
    return out


def _release_part(side, key: tuple) -> bool:
    """Whether a delivery object belongs to the DRA driver's release (render/nvlink.py labels them)."""
    from ..render.nvlink import RELEASE_LABEL

    for kind, name, namespace, data in side.docs.values():
        if (kind, namespace, name) == key and isinstance(data, dict):
            labels = (data.get("metadata") or {}).get("labels") if isinstance(data.get("metadata"), dict) else None
            return isinstance(labels, dict) and RELEASE_LABEL in labels
    return False


@impact_kind("delivery-source", "the repository, revision, path or chart repository GitOps delivers from changes")
def _delivery_source(change: Change) -> list[Impact]:
    old, new = _sources(change.old), _sources(change.new)
    # The DRA driver's release coming or going whole is compute-domains' (impact/fabric.py); a source of it that
    # moves is this kind's.
    for side, other, deployed in ((old, new, change.old), (new, old, change.new)):
        for key in [k for k in side if k not in other and _release_part(deployed, k)]:
            del side[key]
    if not old or old == new or sorted(map(str, old.values())) == sorted(map(str, new.values())):
        return []
    moved = sorted({f"{kind} {ns + '/' if ns else ''}{name}" for (kind, ns, name) in set(old) | set(new)
                    if old.get((kind, ns, name)) != new.get((kind, ns, name))})
    docs = change.documents(SOURCE_KINDS, where=lambda d: (d.kind, d.namespace, d.name) in set(old) | set(new)
                            and old.get((d.kind, d.namespace, d.name)) != new.get((d.kind, d.namespace, d.name)))
    fields = sorted({c.path for d in docs for c in d.changes} | {f"{d.title} {d.status}" for d in docs
                                                                   if d.status != "changed"})
    return [Impact("delivery-source", "disruptive", list(change.new.pools),
                   f"where GitOps delivers the cluster from changes ({_names(moved)}: {_names(fields[:6])}"
                   f"{', ...' if len(fields) > 6 else ''}): from the next sync the cluster runs whatever that source "
                   "holds, which this plan did not see; what the old source delivered and the new one lacks is pruned",
                   "review the new source's content at that revision before merging, and change the source in a "
                   "commit of its own; pin targetRevision to a commit or tag, not a moving branch such as HEAD",
                   documents=docs)]


# --- objects the sync deletes -----------------------------------------------------------------------------------

#: Removed objects, by kind, other than a Namespace: the severity of their deletion and what it does.
REMOVED: dict[str, tuple[str, str]] = {
    "LocalQueue": ("pending", "new workloads submitted to it are not admitted"),
    "ClusterQueue": ("pending", "workloads of its LocalQueues are no longer admitted"),
    "ResourceFlavor": ("pending", "ClusterQueues that name it admit nothing of it"),
    "PriorityClass": ("pending", "new pods that name it are refused"),
    "WorkloadPriorityClass": ("pending", "new workloads that name it are refused"),
    "ResourceQuota": ("none", "its namespace is no longer limited"),
    "LimitRange": ("none", "its namespace gets no default limits"),
    "Role": ("none", "the access it granted ends"), "RoleBinding": ("none", "the access it granted ends"),
    "ClusterRole": ("none", "the access it granted ends"), "ClusterRoleBinding": ("none", "the access it granted ends"),
    "ServiceMonitor": ("none", "Prometheus stops scraping what it selected"),
    "PrometheusRule": ("none", "its alerts stop"),
    # gpuconf's own ConfigMaps (sharing and MIG configs, DCGM metrics): the new values name none of them any more;
    # a key that running nodes still carry is config-key-removed's.
    "ConfigMap": ("none", "nothing the folder renders names it any more"),
    "DeviceClass": ("pending", "new claims that name it are not allocated"),
    "ResourceClaimTemplate": ("pending", "new pods that use it get no claim"),
}


def _delivery(side) -> str:
    """How the folder's objects reach the cluster: argocd, flux or kubectl (apply -k, which prunes nothing)."""
    kinds = {entry[0] for entry in side.docs.values()}
    if kinds & {"Application", "ApplicationSet"}:
        return "argocd"
    if any(entry[0] == "Kustomization" and isinstance(entry[3], dict) and str(entry[3].get("apiVersion", ""))
           .startswith("kustomize.toolkit.fluxcd.io") for entry in side.docs.values()):
        return "flux"
    return "kubectl"


ORPHAN = {"argocd": "argocd.argoproj.io/sync-options=Prune=false", "flux": "kustomize.toolkit.fluxcd.io/prune=disabled"}


def _orphan(delivery: str, kind: str, name: str, namespace: str | None) -> str:
    ns = f" -n {namespace}" if namespace else ""
    return f"`kubectl annotate {kind.lower()} {name}{ns} {ORPHAN[delivery]}`"


@impact_kind("object-removed", "the sync deletes an object (a Namespace with everything in it)")
def _object_removed(change: Change) -> list[Impact]:
    covered = {id(d) for i in change.impacts for d in i.documents}
    delivery = _delivery(change.old)
    removed = [d for d in change.diff.documents if d.status == "removed" and d.kind not in ("values", "document", "file")]
    added = {(d.kind, d.namespace, d.name) for d in change.diff.documents if d.status == "added"}
    removed = [d for d in removed if (d.kind, d.namespace, d.name) not in added]  # moved to another file: re-applied
    namespaces = {d.name for d in removed if d.kind == "Namespace"}
    inside = {}  # a deleted namespace -> the removed objects that go with it
    for d in removed:
        if d.namespace in namespaces:
            inside.setdefault(d.namespace, []).append(d)
    gone = [d for d in removed if d.kind == "Namespace" or d.namespace not in namespaces and id(d) not in covered
            and d.kind in REMOVED]
    impacts = []
    operator_ns = change.old.cluster.get("namespace")
    teams = {ns: t.get("name") for t in change.old.report.get("teams") or [] if isinstance(t, dict)
             for ns in t.get("namespaces") or [] if isinstance(ns, str)}
    for doc in gone:
        if delivery == "kubectl":
            impacts.append(Impact("object-removed", "none", [], f"{doc.title} is no longer rendered: `kubectl apply "
                                  "-k` does not delete it, so it stays in the cluster as it is",
                                  f"delete it by hand once nothing needs it (`kubectl delete {doc.kind.lower()} "
                                  f"{doc.name}{' -n ' + doc.namespace if doc.namespace else ''}`)",
                                  documents=[doc, *inside.get(doc.name, [])]))
            continue
        tool = "Argo CD" if delivery == "argocd" else "Flux"
        safe = (f"orphan it first: before merging, {_orphan(delivery, doc.kind, doc.name, doc.namespace)} so that "
                f"{tool} leaves it, then delete it by hand once nothing needs it")
        if doc.kind == "Namespace":
            pools = list(change.old.pools) if doc.name == operator_ns else []
            if doc.name == operator_ns:
                holds = ("the GPU Operator and every operand it runs (driver, toolkit, device plugin, GFD, DCGM "
                         "exporter, MIG manager, validator): every GPU node loses them and its GPU workloads stop")
                safe += (" (in a maintenance window, with the GPU nodes drained: two operators must never manage the "
                         "same nodes, so uninstall the old release before the new namespace's one installs)")
            else:
                team = teams.get(doc.name)
                holds = ("every object in it" + (f", team {team}'s" if team else "") + ": its pods, Jobs, volume "
                         "claims, Secrets and ConfigMaps")
            impacts.append(Impact("object-removed", "disruptive", pools,
                                  f"{doc.title} is deleted by the sync ({tool} prunes what leaves the folder), and "
                                  f"with it {holds}", safe, nodes=change.pools_nodes(pools, new=False) if pools else
                                  None, documents=[doc, *inside.get(doc.name, [])]))
            continue
        severity, what = REMOVED[doc.kind]
        impacts.append(Impact("object-removed", severity, [], f"{doc.title} is deleted by the sync ({tool} prunes "
                              f"what leaves the folder): {what}", safe if severity != "none" else "nothing to drain",
                              documents=[doc]))
    return impacts

"""What pods and Jobs see: the acceptance-probe Jobs that run on a sync, and the running pods counted on the
nodes each impact touches (from the live cluster)."""

from __future__ import annotations

import heapq

from typing import Any, Iterable

from .model import (NAMES_LISTED, POOL_LABEL, PROBE_COMPONENT, Change, Impact, ImpactPlan, _labelled_by, _names, _pool_of,
                    impact_kind)


def _probe(job: Any) -> bool:
    labels = ((job or {}).get("metadata") or {}).get("labels") or {}
    return labels.get("app.kubernetes.io/component") == PROBE_COMPONENT


def _hook(job: dict) -> str | None:
    """How the GitOps tool treats the Job, from its annotations (gitops.md: the probes' trap and its wrapper); None for
    a plain Job, which `kubectl apply` cannot change once created (a Job's pod template is immutable)."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    if "argocd.argoproj.io/hook" in annotations:
        policy = annotations.get("argocd.argoproj.io/hook-delete-policy")
        deletes = (f"; hook-delete-policy {policy}: Argo CD deletes the previous Job before it creates this one, so a "
                   "changed Job needs nothing" if policy else "")
        return f"an Argo CD {annotations['argocd.argoproj.io/hook']} hook, which runs on every sync{deletes}"
    if "helm.sh/hook" in annotations:
        return f"a Helm {annotations['helm.sh/hook']} hook"
    if annotations.get("kustomize.toolkit.fluxcd.io/force") == "enabled":
        return ("recreated by Flux when it changes (kustomize.toolkit.fluxcd.io/force: enabled: kustomize-controller "
                "deletes and re-creates a Job it cannot patch)")
    return None


def _scales(pool: dict) -> bool:
    """A pool whose nodes come with demand: Karpenter's, or one report.json gives a minimum of 0 nodes."""
    autoscaling = pool.get("autoscaling") if isinstance(pool.get("autoscaling"), dict) else {}
    return _labelled_by(pool) == "karpenter" or 0 in (pool.get("minNodes"), autoscaling.get("minNodes"),
                                                       autoscaling.get("min"))


@impact_kind("probe-run", "probe Jobs run on this sync")
def _probe_run(change: Change) -> list[Impact]:
    applied = change.new.applied()
    changed = [d for d in change.documents(["Job"]) if d.status != "removed" and _probe(change.new.data(d))]
    runs: dict[str, tuple[str, dict]] = {}
    if change.diff.documents:  # there is a sync: hooks run whether or not they changed
        for key, (kind, name, _ns, data) in change.new.docs.items():
            if kind == "Job" and _probe(data) and key[0] in applied and _hook(data) and "on every sync" in _hook(data):
                runs[name] = (_hook(data), data)
    for doc in changed:
        data = change.new.data(doc)
        if doc.file in applied and doc.name not in runs:
            runs[doc.name] = (_hook(data) or ("a new Job" if doc.status == "added" else "a changed Job"), data)
    impacts = []
    # The API server refuses a change of a Job's spec.template (and its selector): metadata and the TTL may change.
    stuck = [d for d in changed if d.status == "changed" and d.file in applied and not _hook(change.new.data(d))
             and any(c.path.startswith(("spec.template", "spec.selector")) for c in d.changes)]
    if stuck:
        namespace = change.new.cluster.get("namespace", "gpu-operator")
        names = sorted(d.name for d in stuck)
        ttl = {(change.new.data(d).get("spec") or {}).get("ttlSecondsAfterFinished") for d in stuck} - {None}
        impacts.append(Impact(
            "probe-run", "pending", sorted({change.pool_data(d) or "?" for d in stuck}),
            f"probe Job(s) {_names(names)} change, and a plain `kubectl apply` cannot change a Job (its pod template "
            "is immutable): while the old Job exists"
            + (f" (ttlSecondsAfterFinished {_names(str(t) for t in sorted(ttl))} after it finished)" if ttl else "")
            + ", the apply fails on it (`field is immutable`) and exits non-zero",
            f"delete the old Job(s) before the apply (`kubectl delete job -n {namespace} {' '.join(names)} "
            "--ignore-not-found`); with Argo CD or Flux delivery (spec.delivery) gpuconf renders the probes as hooks "
            "or forced Jobs, which need nothing",
            documents=stuck))
    removed = change.documents(["Job"], where=lambda d: d.status == "removed" or (
        d.status == "changed" and not _probe(change.new.data(d)))) + [d for d in changed if d.file not in applied]
    if runs:
        pools = sorted({_pool_of(data) or "?" for _, data in runs.values()})
        scaling = [p for p in pools if _scales(change.new.pools.get(p, {}))]
        how = sorted({why for why, _ in runs.values()})
        what = (f"{len(runs)} probe Job(s) run on this sync ({'; '.join(how)}), each taking a GPU of its pool for up "
                "to 15 minutes")
        if scaling:
            what += f"; in pools that scale with demand ({_names(scaling)}) each launches a node when none is up"
        impacts.append(Impact("probe-run", "none", pools, what,
                              "nothing to drain; sync when the pools have a free GPU, or switch the probes off "
                              "for pools that scale to zero",
                              documents=changed + [d for d in removed if d in changed] + change.documents(
                                  ["Job"], where=lambda d: d.name in runs and d not in changed)))
    rest = [d for d in removed if d not in changed] + [d for d in changed if d.file not in applied]
    was = change.old.applied()
    for docs, what in (([d for d in rest if d.file in was], "are removed or no longer applied: nothing runs them on "
                        "sync"), ([d for d in rest if d.file not in was], "that the sync never applied (run by hand) "
                                  "change: nothing runs them on sync")):
        if docs:
            impacts.append(Impact("probe-run", "none", sorted({change.pool_data(d) or "?" for d in docs}),
                                  f"{len(docs)} probe Job(s) {what}",
                                  "run them by hand when you want the proof (the acceptance checklist in REPORT.md)",
                                  documents=docs))
    return impacts


GPU_PREFIX = "nvidia.com/"


def _retime(impact: Impact, counts: list[int]) -> None:
    """The maintenance window of an impact reckoned again on the nodes counted in the cluster, pool by pool."""
    from .driver import upgrade_window_minutes

    policy, per_object = impact.window  # type: ignore[misc]
    minutes = upgrade_window_minutes(policy, counts, per_object)
    old, new = f"about {impact.minutes} minutes", f"about {minutes} minutes"
    said = f"{new} for the {sum(counts)} node(s) counted in the cluster"
    impact.message, impact.safe = impact.message.replace(old, said), impact.safe.replace(old, new)
    impact.minutes = minutes


def count_live(plan: ImpactPlan, nodes: Iterable[dict], pods: Iterable[dict] | None, nodes_source: str,
               pods_source: str | None) -> None:
    """Replace the declared node counts by the nodes that carry each impact's pool label, and count the pods with
    NVIDIA resource requests on them (the resources' own when an impact names them), naming each node and pod
    (namespace/name). A Pending pod that no node has taken yet counts where what it asks for changes: it requests a
    resource a resource-rename removes, or its nodeSelector names a pool the impact is about."""
    by_pool: dict[str, set[str]] = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        pool = (meta.get("labels") or {}).get(POOL_LABEL)
        if pool and meta.get("name"):
            by_pool.setdefault(pool, set()).add(meta["name"])
    on_node: dict[str, list[tuple[frozenset[str], str]]] = {}  # node -> (resources asked for, namespace/name)
    waiting: list[tuple[str | None, frozenset[str], str]] = []  # (the pool its nodeSelector names, resources, name)
    shared: dict[frozenset[str], frozenset[str]] = {}  # one object per distinct set of resources asked for
    for pod in pods or []:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        phase = status.get("phase")
        node = spec.get("nodeName")
        if phase not in ("Running", "Pending") or not node and phase != "Pending":
            continue
        found: set[str] = set()
        for container in spec.get("containers") or ():
            resources = container.get("resources") or {}
            for part in (resources.get("limits"), resources.get("requests")):
                if part:
                    found.update(r for r in part if r.startswith(GPU_PREFIX))
        selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
        if not found and POOL_LABEL not in selector:
            continue
        asks = shared.setdefault(frozenset(found), frozenset(found))
        meta = pod.get("metadata") or {}
        name = f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}"
        if node:
            if asks:
                on_node.setdefault(node, []).append((asks, name))
        else:
            waiting.append((selector.get(POOL_LABEL), asks, name))
    plan.nodes_source, plan.pods_source = nodes_source, pods_source
    for impact in plan.impacts:
        if not impact.pools:
            continue
        names = set().union(*(by_pool.get(p, set()) for p in impact.pools))
        impact.nodes, impact.nodes_from = len(names), "cluster"
        impact.node_names = heapq.nsmallest(NAMES_LISTED, names)
        if impact.window is not None and impact.minutes is not None:
            _retime(impact, [len(by_pool.get(p, ())) for p in impact.pools])
        if pods is not None:
            wanted = set(impact.resources) if impact.kind == "resource-rename" else None
            counted = {name for node in names for asks, name in on_node.get(node, ())
                       if wanted is None or asks & wanted}
            counted |= {name for pool, asks, name in waiting
                        if (wanted is not None and asks & wanted) or (pool is not None and pool in impact.pools)}
            impact.pods, impact.pod_names = len(counted), heapq.nsmallest(NAMES_LISTED, counted)

"""What the NVLink side does (render/nvlink.py): the DRA driver's release beside the operator's, the teams'
ComputeDomains, and the Kueue topology of the NVLink pools' flavors.

Sources (../shared/reference/dra/facts.md keys): DRV v0.4.1 (the chart's crds/ hold ComputeDomain, whose CRD refuses
any change of a spec: CEL `self == oldSelf`; the controller runs one IMEX daemon DaemonSet per ComputeDomain and the
workload's channel is prepared by the kubelet plugin), Kueue v0.19.2 (flavorassigner/tas_flavorassigner.go: a
topology-aware flavor takes only pod sets that ask for a topology, unless their queue has only such flavors).
"""

from __future__ import annotations

from .model import Change, Impact, _names, impact_kind

DRAIN = ("let the multi-node jobs on the NVLink pools finish (or stop them) first; to keep what runs, orphan the "
         "objects before the sync (Argo CD `argocd.argoproj.io/sync-options: Prune=false`, Flux "
         "`kustomize.toolkit.fluxcd.io/prune: disabled`)")


def _linked(change: Change) -> list[str]:
    """The pools either side's ComputeDomains or flavors name."""
    return sorted({p for d in change.documents(["ComputeDomain", "Topology", "ResourceFlavor"])
                   if (p := change.pool_data(d))})


@impact_kind("compute-domains", "the DRA driver release of NVLink pools, their ComputeDomains and Kueue topology")
def _compute_domains(change: Change) -> list[Impact]:
    out: list[Impact] = []
    pools = _linked(change)
    from ..render.nvlink import RELEASE_LABEL

    def labelled(doc) -> bool:
        data = change.new.data(doc) or change.old.data(doc)
        meta = data.get("metadata") if isinstance(data, dict) else None
        return isinstance(meta, dict) and isinstance(meta.get("labels"), dict) and RELEASE_LABEL in meta["labels"]

    # The release's delivery objects (its Argo CD Application, or Flux source, HelmRelease and Kustomization) come
    # and go with it; a change of where they deliver from is delivery-source's.
    wrappers = change.documents(where=lambda d: d.status != "changed" and labelled(d))
    for doc in change.documents(["release-values"]):
        if doc.status == "added":
            out.append(Impact("compute-domains", "none", pools, "the DRA driver's release is installed beside the "
                              "operator's: its ComputeDomain controller and kubelet plugin start on the NVLink pools; "
                              "nothing running restarts", "nothing to drain",
                              documents=[doc, *(w for w in wrappers if w.status == "added")]))
        elif doc.status == "removed":
            out.append(Impact("compute-domains", "disruptive", pools, "the DRA driver's release is pruned with its "
                              "ComputeDomain CRD: every ComputeDomain goes, and with it the IMEX domain of every "
                              "running multi-node job", DRAIN,
                              documents=[doc, *(w for w in wrappers if w.status == "removed")]))
        else:
            out.append(Impact("compute-domains", "restart", pools, "the DRA driver's values change "
                              f"({_names(sorted({c.path.split('.')[0] for c in doc.changes}))}): its kubelet plugin "
                              "and controller pods restart; running jobs keep the channels they were given, new ones "
                              "wait until the plugin is back", "nothing to drain", documents=[doc]))
    domains = change.documents(["ComputeDomain"])
    for status, severity, what, safe in (
            ("added", "none", "are created: their controller makes each one's channel claim template, and starts "
                              "IMEX daemons where a pod claims the channel", "nothing to drain"),
            ("removed", "disruptive", "are deleted: their IMEX daemons stop, and the running multi-node jobs that "
                                      "claimed their channels lose GPU memory sharing across trays", DRAIN)):
        docs = [d for d in domains if d.status == status]
        if docs:
            out.append(Impact("compute-domains", severity, sorted({p for d in docs if (p := change.pool_data(d))}),
                              f"ComputeDomain(s) {_names(sorted(d.title.split(' ', 1)[1] for d in docs))} {what}",
                              safe, documents=docs))
    changed = [d for d in domains if d.status == "changed"]
    spec = [d for d in changed if any(c.path.startswith("spec") for c in d.changes)]
    if spec:
        out.append(Impact("compute-domains", "pending", sorted({p for d in spec if (p := change.pool_data(d))}),
                          f"ComputeDomain(s) {_names(sorted(d.title.split(' ', 1)[1] for d in spec))} change their "
                          "spec, which the CRD refuses (a ComputeDomain's spec is immutable): the sync fails until "
                          "they are deleted and made again", "delete them once their jobs are done, then sync",
                          documents=spec))
    if changed and len(spec) < len(changed):
        rest = [d for d in changed if d not in spec]
        out.append(Impact("compute-domains", "none", sorted({p for d in rest if (p := change.pool_data(d))}),
                          "ComputeDomain labels change in place: nothing restarts", "nothing to drain",
                          documents=rest))
    topology = [d for d in change.documents(["ResourceFlavor"])
                if any(c.path == "spec.topologyName" for c in d.changes)] + change.documents(["Topology"])
    if topology:
        gained = sorted(d.name for d in topology if d.kind == "ResourceFlavor"
                        and any(c.path == "spec.topologyName" and c.new is not None for c in d.changes))
        lost = sorted(d.name for d in topology if d.kind == "ResourceFlavor" and d.name not in gained)
        what = []
        if gained:
            what.append(f"flavor(s) {_names(gained)} become topology-aware: from now on they admit only jobs that ask "
                        "for a topology (kueue.x-k8s.io/podset-required-topology), unless their queue has only such "
                        "flavors; queued jobs that do not ask stay pending")
        if lost:
            what.append(f"flavor(s) {_names(lost)} lose their topology: queued jobs that ask for one stay pending")
        if not what:
            what.append("the NVLink topology's levels change: queued jobs are placed by the new levels")
        out.append(Impact("compute-domains", "pending", pools, "Kueue: " + "; ".join(what) + "; admitted jobs keep "
                          "running", "add or drop the annotation on the teams' multi-node jobs before the sync "
                          "(REPORT.md shows it)", documents=topology))
    return out

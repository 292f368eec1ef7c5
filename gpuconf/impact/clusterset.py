"""The set of clusters as a source of "before": the cluster folders under the deployed output that the given inputs
render, those none of them renders (`cluster-removed`: a deleted or renamed intent) and the inputs that have no folder
there yet (`cluster-added`: a new cluster, or the new name of a renamed one).

A rename is one removal plus one addition. gpuconf pairs them when the removed folder and the added cluster hold the
same pools, and says so on both; every other removal and addition stands alone.

What a removal does depends on how the folder reaches the cluster, which the folder itself says (its gitops/ files):
- Argo CD: an app-of-apps whose path is gone reports a comparison error and changes nothing; a parent that prunes
  deletes the cluster's Applications, which gpuconf renders without `resources-finalizer.argocd.argoproj.io`, so the
  GPU stack stays, with nothing keeping it in sync; a cascading delete (`argocd app delete APP --cascade`, or the
  finalizer) uninstalls the operator and deletes every object the folder delivered (Argo CD's app deletion page).
- Flux: a Kustomization whose path is gone fails with "kustomization path not found" and prunes nothing
  (fluxcd/flux2#2627, #2660); deleting that Kustomization, with `prune: true`, garbage-collects what it applied: the
  cluster's two Kustomizations (both `prune: true`) and with them the HelmRelease (helm-controller uninstalls it) and
  every object.
- A fleet's own folder (its ApplicationSet, `preserveResourcesOnDeletion: true`): the ApplicationSet's deletion
  removes the parent Applications and keeps everything they deployed (Argo CD's ApplicationSet deletion page).
Every path ends, sooner or later, in the GPU Operator's uninstall or in a GPU stack nobody manages: the impact is
disruptive either way, and its message names the objects at stake so that a reviewer knows what the cluster loses.
"""

from __future__ import annotations

from pathlib import Path

from .folder import Deployed
from .model import Impact, ImpactPlan, _names

#: How many objects of one kind a removal names before it only counts them.
NAMED_OBJECTS = 4


def delivery(files: dict[str, str]) -> str:
    """How a rendered folder reaches its cluster: argocd, flux, applicationset (a fleet's own folder) or none."""
    if "applicationset.yaml" in files:
        return "applicationset"
    if "gitops/flux-kustomizations.yaml" in files:
        return "flux"
    if any(f.startswith("gitops/application-") for f in files):
        return "argocd"
    return "none"


def renames(removed: dict[str, dict[str, str]], added: dict[str, dict[str, str]]) -> dict[str, str]:
    """Old name -> new name for each removed folder whose pools are those of exactly one added cluster (and the
    other way round): a rename's two halves."""
    def pools(files: dict[str, str]) -> frozenset[str]:
        return frozenset(Deployed(files).pools)

    by_pools: dict[frozenset, list[str]] = {}
    for name, files in added.items():
        by_pools.setdefault(pools(files), []).append(name)
    olds: dict[frozenset, list[str]] = {}
    for name, files in removed.items():
        olds.setdefault(pools(files), []).append(name)
    return {old[0]: new[0] for key, old in olds.items() if key and len(old) == 1
            and len(new := by_pools.get(key, [])) == 1}


#: The kinds a removal names first: what a GPU cluster loses (drivers, sharing and MIG configs, quotas and queues).
FIRST = ("NVIDIADriver", "ConfigMap", "ResourceQuota", "ClusterQueue", "LocalQueue", "ResourceFlavor",
         "NodeFeatureRule", "Namespace")


def _objects(deployed: Deployed) -> list[str]:
    """'3 NVIDIADriver (a, b, c)', ...: the objects the folder's manifests deliver, by kind, namespaced ones as
    namespace/name (values.yaml and the GitOps wrappers are said apart)."""
    names: dict[str, list[str]] = {}
    for key, doc in deployed.docs.items():
        kind, data = doc[0], doc[3]
        if not isinstance(data, dict) or not isinstance(kind, str) or str(key[0]).startswith("gitops/") or kind in (
                "Kustomization", "values", "release-values", "document", "file"):
            continue
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        name = str(meta.get("name"))
        names.setdefault(kind, []).append(f"{meta['namespace']}/{name}" if meta.get("namespace") else name)
    order = sorted(names, key=lambda k: (FIRST.index(k) if k in FIRST else len(FIRST), -len(names[k]), k))
    return [f"{len(names[k])} {k} ({_names(sorted(names[k])[:NAMED_OBJECTS])}"
            f"{', ...' if len(names[k]) > NAMED_OBJECTS else ''})" for k in order]


def _wrappers(deployed: Deployed, kinds: tuple[str, ...]) -> list[str]:
    """The names of the folder's GitOps objects of these kinds."""
    found = []
    for key, doc in sorted(deployed.docs.items(), key=lambda kv: str(kv[0])):
        meta = doc[3].get("metadata") if isinstance(doc[3], dict) else None
        if key[0].startswith("gitops/") and doc[0] in kinds and isinstance(meta, dict):
            found.append(str(meta.get("name")))
    return found


_UNINSTALL = ("the GPU Operator's uninstall (Helm release {release}: its ClusterPolicy and the operand DaemonSets go, "
              "so the driver, device plugin and container toolkit leave every GPU node and no new GPU pod starts "
              "there)")


def cluster_removed(name: str, files: dict[str, str], where: str, renamed_to: str | None = None) -> ImpactPlan:
    """The plan of a cluster folder under the deployed output that no given input renders."""
    deployed = Deployed(files)
    pools = list(deployed.pools)
    nodes = [p.get("nodes") for p in deployed.pools.values()]
    total = sum(n for n in nodes if isinstance(n, int)) if any(isinstance(n, int) for n in nodes) else None
    objects = _objects(deployed)
    what = f". What the folder delivered: {'; '.join(objects)}" if objects else ""
    why = (f"it looks renamed to {renamed_to} (the same pools), whose folder is new: a rename is a removal plus an "
           "addition" if renamed_to else "its intent was deleted or renamed")
    head = f"cluster {name}'s folder {where} is deployed, but no given input renders it ({why})"
    release = "gpu-operator"
    tool = delivery(files)
    if tool == "applicationset":
        sets = _wrappers(deployed, ("ApplicationSet",)) or [name]
        body = (f"the fleet's ApplicationSet {_names(sets)} has preserveResourcesOnDeletion: when a prune deletes "
                "it, the Applications it generated go (they have no resources-finalizer) and every cluster's GPU stack "
                "stays, with nothing keeping it in sync")
        safe = ("if the fleet is retired, retire each cluster's folder first (each is its own cluster-removed); if "
                "it is renamed, commit the new fleet folder in the same change so its ApplicationSet takes the "
                "clusters over")
    elif tool == "argocd":
        apps = _wrappers(deployed, ("Application",))
        body = (f"an app-of-apps whose path is gone reports a comparison error and changes nothing; a parent that "
                f"prunes deletes the Applications {_names(apps)}, which have no resources-finalizer, so the GPU "
                f"stack stays with nothing keeping it in sync; a cascading delete is {_UNINSTALL.format(release=release)} "
                "and deletes what the folder delivered")
        safe = ("retiring the cluster: move its GPU workloads off, then `argocd app delete APP --cascade` for each "
                "Application; renaming it: delete the old Applications with `--cascade=false` first, then sync the "
                "new folder's, which take the same objects over")
    elif tool == "flux":
        kustomizations = _wrappers(deployed, ("Kustomization",))
        body = (f"a Flux Kustomization whose path is gone fails (kustomization path not found) and prunes nothing; "
                f"deleting it (prune: true) garbage-collects the Kustomizations {_names(kustomizations)} and with "
                f"them the HelmRelease {release}, which is {_UNINSTALL.format(release=release)}, and what the folder "
                "delivered")
        safe = ("retiring the cluster: move its GPU workloads off, then delete the Flux Kustomization that points at "
                "the folder; renaming it: set `prune: false` on the old Kustomizations (or `kustomize.toolkit.fluxcd."
                "io/prune: disabled` on the objects) until the new folder's Kustomizations have taken them over")
    else:
        body = (f"whatever applies the folder stops applying it; a pruning apply of the set without it deletes what "
                f"the folder delivered, and `helm uninstall {release}` is {_UNINSTALL.format(release=release)}")
        safe = ("retiring the cluster: move its GPU workloads off before the prune and the uninstall; renaming it: "
                "apply the new folder before pruning the old one")
    return ImpactPlan([Impact("cluster-removed", "disruptive", pools, f"{head}: {body}{what}", safe, nodes=total,
                              nodes_from="intent" if total is not None else None)])


def cluster_added(name: str, new: dict[str, str], where: str, renamed_from: str | None = None) -> ImpactPlan:
    """The plan of a cluster that has no deployed folder yet: a new cluster (or the new name of a renamed one)."""
    pools = list(Deployed(new).pools)
    if renamed_from:
        rename = (f"It looks like the new name of {renamed_from} (the same pools), whose deployed folder no input "
                  "renders any more: a rename is a removal plus an addition, and the removal is disruptive (see "
                  f"cluster-removed of {renamed_from})")
    else:
        rename = ("A renamed cluster is a removal plus an addition: the old name's folder, which `gpuconf render "
                  "--check` names, prunes the operator from that cluster on its sync before this one installs it "
                  "again")
    return ImpactPlan([Impact(
        "cluster-added", "none", pools,
        f"cluster {name} has no folder at {where}: the first sync installs the GPU Operator and everything the new "
        f"folder holds ({len(new)} files); no workload that gpuconf knows of runs there yet. {rename}",
        "commit the new folder; if this is a rename, retire the old folder in the same maintenance window")])


def removed_folders(against: str, names: list[str]) -> dict[str, dict[str, str]]:
    """Cluster name -> the files of each folder under against that gpuconf wrote and none of names is."""
    from ..output.writer import orphans, read_tree

    return {folder.name: read_tree(folder) for folder in orphans(Path(against), names)}

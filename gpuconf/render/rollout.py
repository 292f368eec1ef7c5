"""A fleet's delivery objects: the Argo CD ApplicationSet (with a RollingSync strategy when the fleet has stages) and
the Flux entry points, each carrying the cluster's labels and stage.

Argo CD. The ApplicationSet generates each cluster's own Applications, the ones its gitops/ folder holds (the chart
and the manifests), one list element per Application: the element carries that Application's metadata and spec, and
`templatePatch` lays them over the template (the template's `project` stays: Argo CD keeps a patch off it). Generating
the Applications that deploy, not a parent per cluster that applies them, is what makes a staged rollout real:
progressive sync triggers the syncs of the Applications the ApplicationSet generates, and nothing else, while an
Application applied by a parent would keep syncing every commit on its own (Argo CD's Progressive Syncs page).

With stages, `strategy: RollingSync` has two steps per stage, the chart's Applications and then the manifests', each
selecting on the gpuconf.dev/stage and gpuconf.dev/part labels with the stage's maxUpdate; a step starts once every
Application of the steps before it is Healthy. The ApplicationSet controller then turns off automated sync on the
Applications it generates and syncs them itself, with prune as the template's automated policy says. It does so only
when progressive syncs are enabled in the controller (`applicationsetcontroller.enable.progressive.syncs`), and
"Healthy" means what Argo CD's health checks say: argocd-config.yaml states both settings (a ClusterPolicy or
NVIDIADriver is Healthy once the operator reports it ready, i.e. every GPU node runs its driver and operands).

Flux. Each cluster's Flux applies its own folder; one cluster's Flux cannot wait for another's health. A stage is
real only when its clusters read a source of their own (spec.delivery.sourceRef: a GitRepository that follows a
branch or tag the team moves once the stage before is Ready); gpuconf refuses stages whose Flux clusters share a
source with an earlier stage's (a merge would reach both at once).
"""

from __future__ import annotations

from ..findings import ERROR, Finding

PART = "gpuconf.dev/part"
STAGE = "gpuconf.dev/stage"
#: The parts of a cluster, in the order a stage syncs them: the chart (CRDs, operator), then the manifests.
PARTS = (("gitops/application-gpu-operator.yaml", "gpu-operator"),
         ("gitops/application-dra-driver.yaml", "dra-driver"),  # NVLink pools' ComputeDomains (render/nvlink.py)
         ("gitops/application-manifests.yaml", "manifests"))
#: Argo CD's ConfigMaps and the keys a staged fleet needs in them (Argo CD's Progressive Syncs and resource health
#: customisation pages).
PROGRESSIVE_SYNCS = ("argocd-cmd-params-cm", "applicationsetcontroller.enable.progressive.syncs")
HEALTH_KEY = "resource.customizations.health.nvidia.com_{kind}"
#: Health of the operator's own objects (status.state: ready, notReady or ignored; the ClusterPolicy and NVIDIADriver
#: CRDs), in Lua as Argo CD runs it: Healthy only when the operator reports the object ready.
HEALTH_LUA = """hs = {}
if obj.status ~= nil and obj.status.state == "ready" then
  hs.status = "Healthy"
  hs.message = "the GPU Operator reports {kind} ready on every node it selects"
  return hs
end
if obj.status ~= nil and obj.status.state == "ignored" then
  hs.status = "Degraded"
  hs.message = "the GPU Operator ignores this {kind}: another one is active"
  return hs
end
hs.status = "Progressing"
hs.message = "waiting for the GPU Operator to report {kind} ready (driver, toolkit, device plugin and validators)"
return hs
"""


def cluster_labels(plan) -> dict[str, str]:
    """The merged intent's metadata.labels, which reach the fleet's objects (checked by intent.stages)."""
    return dict(plan.intent.metadata.labels)


def applicationset(fleet, plans: list, trees: dict, stages: list, labels: dict) -> dict:
    """The fleet's ApplicationSet: one element per Application of each Argo CD cluster (trees: cluster -> its Tree),
    with a RollingSync over the stages (StagePlans) when there are any."""
    from ..intent.stages import stage_of
    from . import gitops

    namespace = gitops.namespace_of(plans[0])
    elements = []
    for plan in plans:
        stage = stage_of(stages, plan.name)
        for path, part in PARTS:
            for app in trees[plan.name].documents.get(path, []):
                meta = app["metadata"]
                own = {**cluster_labels(plan), **meta["labels"], PART: part,
                       **({STAGE: stage.name} if stage is not None else {})}
                patch = {"metadata": {"labels": own, **({"annotations": meta["annotations"]}
                                                        if meta.get("annotations") else {})},
                         "spec": {k: v for k, v in app["spec"].items() if k != "project"}}
                elements.append({"name": meta["name"], "cluster": plan.name, "project": app["spec"]["project"],
                                 "app": patch})
    spec: dict = {
        "goTemplate": True,
        "goTemplateOptions": ["missingkey=error"],
        "generators": [{"list": {"elements": elements}}],
        # Every Application as its cluster's gitops/ folder has it: the element's metadata and spec over this.
        "template": {"metadata": {"name": "{{.name}}", "labels": {**labels, "gpuconf.dev/cluster": "{{.cluster}}"}},
                     "spec": {"project": "{{.project}}", "destination": {}}},
        "templatePatch": "{{ toJson .app }}",
        # Deleting the ApplicationSet, or a cluster leaving the fleet, must not tear down a GPU stack: the generated
        # Applications get no resources finalizer.
        "syncPolicy": {"preserveResourcesOnDeletion": True},
    }
    if stages:
        steps = []
        for stage in stages:
            for path, part in PARTS:
                if not any(trees[c].documents.get(path) for c in stage.clusters if c in trees):
                    continue  # e.g. OpenShift's OLM clusters have no chart Application
                step: dict = {"matchExpressions": [{"key": STAGE, "operator": "In", "values": [stage.name]},
                                                   {"key": PART, "operator": "In", "values": [part]}]}
                if stage.max_update is not None:
                    step["maxUpdate"] = stage.max_update
                steps.append(step)
        spec["strategy"] = {"type": "RollingSync", "rollingSync": {"steps": steps}}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": f"{fleet.metadata.name}-gpuconf", "namespace": namespace, "labels": labels},
            "spec": spec}


def argocd_settings(plans: list, trees: dict, labels: dict) -> list[dict]:
    """The two Argo CD ConfigMaps' keys a staged rollout needs: progressive syncs on, and health checks for the
    operator's objects. Keys to merge into the installation's own ConfigMaps (applying these would replace them)."""
    from . import gitops

    namespace = gitops.namespace_of(plans[0])
    kinds = ["ClusterPolicy"]
    if any("NVIDIADriver" in tree.files.get("report.json", "") for tree in trees.values()):
        kinds.append("NVIDIADriver")
    meta = {"namespace": namespace, "labels": {"app.kubernetes.io/part-of": "argocd"}}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": PROGRESSIVE_SYNCS[0], **meta},
         "data": {PROGRESSIVE_SYNCS[1]: "true"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", **meta},
         "data": {HEALTH_KEY.format(kind=kind): HEALTH_LUA.replace("{kind}", kind) for kind in kinds}},
    ]


def flux_sources(clusters: list, plans: list, stages: list) -> list[Finding]:
    """Flux stages are real only through their sources: a stage whose Flux clusters read the source of an earlier
    stage's Flux clusters would receive a merge at the same moment. clusters: the fleet's (intent.inputs.Cluster),
    beside their plans."""
    from ..findings import dotted
    from ..intent.stages import CODE_STAGE, stage_of
    from . import gitops

    if not stages:
        return []
    first: dict[tuple, str] = {}  # a source -> the first stage whose clusters read it
    out = []
    for cluster, plan in zip(clusters, plans):
        if plan.intent.spec.delivery.tool != "flux":
            continue
        stage = stage_of(stages, plan.name)
        ref = gitops.source_ref(plan)
        key = (ref["kind"], ref.get("namespace", gitops.namespace_of(plan)), ref["name"])
        earlier = first.setdefault(key, stage.name)
        if earlier != stage.name:
            loc = ("spec", "delivery", "sourceRef")
            document = cluster.validation.document
            line, column = document.position(loc)
            out.append(Finding(document.source(loc), line, column, ERROR, CODE_STAGE, dotted(loc),
                               f"Flux cluster {plan.name} of stage {stage.name} reads {key[0]} {key[2]}, as stage "
                               f"{earlier}'s clusters do: Flux cannot wait for {earlier} to be healthy, so a merge "
                               f"would reach both stages at once",
                               "give each stage's Flux clusters a source of their own (spec.delivery.sourceRef, in a "
                               "layer per stage): a GitRepository that follows a branch or tag the team moves once "
                               "the stage before is Ready"))
    return out

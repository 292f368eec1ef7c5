"""spec.security.admission: kyverno: a Kyverno Policy that admits, in each namespace the installation runs Pods in,
only the images the installation is meant to pull.

Shape (kyverno/kyverno v1.19.0; shared/reference/provenance/facts.md §9): a namespaced `kyverno.io/v1` Policy applies
only in its own namespace; `validate.failureAction: Enforce` refuses what the pattern does not match; the pattern
checks `spec.containers[].image`, and through the conditional anchor `=(...)` the init and ephemeral containers when a
Pod has them (test/conformance/chainsaw/validate/clusterpolicy/cornercases/ephemeral-containers/policy.yaml). In a
pattern string `|` separates alternatives and `*` matches any run of characters, `/` included (ext/wildcard). With
operator.imageLock the alternatives are exactly the images the render pulls, each `<reference>@sha256:<digest>` (a
tag or another digest of the same image is refused); without one, anything under the mirror, `<registry>/*`.

Where Kyverno does not look (kyverno/kyverno v1.19.0 charts/kyverno/values.yaml, the defaults of its Helm chart):
`config.resourceFilters` skips every resource in kube-system, kube-public and kube-node-lease, and with
`config.excludeKyvernoNamespace: true` the chart prepends its own namespace to those filters and leaves it out of
its webhooks' namespaceSelector (templates/config/_helpers.tpl, templates/config/configmap.yaml). A Policy there
enforces nothing, so validation refuses such an operator namespace (GC453).

On OpenShift the operator builds the driver with the Driver Toolkit (operator.use_ocp_driver_toolkit, which gpuconf
sets there): the driver DaemonSet gets a container `openshift-driver-toolkit-ctr` whose image is the `from.name` of
the tag for the node's RHCOS version in the ImageStream `openshift/driver-toolkit` (NVIDIA/gpu-operator
controllers/clusterinfo/clusterinfo.go getOpenshiftDTKImages, controllers/object_controls.go
transformOpenShiftDriverToolkitContainer; read at a22dbf671). That ImageStream is part of the release payload: its
manifest carries a placeholder that `oc adm release new` replaces with the payload's own reference of the image
(openshift/driver-toolkit manifests/01-openshift-imagestream.yaml, docs/driver_toolkit_imagestream.md; b63b175),
which is the release repository by digest, `quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:<hex>` (README.md:
`oc adm release info ... --image-for=driver-toolkit`). A disconnected cluster pulls it through its mirror
(ImageDigestMirrorSet), but the Pod still names the release repository, and that name is what Kyverno sees. The
digest changes with every OpenShift update, outside gpuconf's render: the policy admits
`<spec.cluster.openshift.releaseRepository>@sha256:` followed by 64 characters, never a tag, with or without an
image lock (a lock that pinned it would refuse the toolkit of the next OpenShift update, and no driver would be
built). When the tag of a node's RHCOS version is missing, the operator runs the driver image instead, which the
policy admits already.

A digest change (the image lock's) must not refuse what runs while the sync moves it. The Policy is applied before
the chart (gpuconf/render/gitops.py), so the new images meet the new Policy; and with spec.security.previousImageLock
(the lock the change replaces, a file beside the intent) the Policy admits the previous digests too, so that a Pod
of the deployed digests that restarts before the chart replaces it (a node reboot, an eviction, a DaemonSet the old
operator still reconciles) is not refused. The previous digests come from that reviewed, attested input, never from
the folder being rendered over: a folder a pull request edits would otherwise carry any image through `render
--check`. The transition rule GC374 (with a deployed folder) says when a change drops digests the cluster runs
without it, and when it is no longer needed.

Every namespace the render runs Pods in has its Policy: the chart's release namespace (the operator, its operands,
NFD) and the namespace of every pod-making object under manifests/ (the probe Jobs); `problems` checks it on every
render. Kyverno applies a Pod rule to the Deployments, DaemonSets and Jobs that make the Pods as well (its autogen
rules, pkg/autogen/v1/autogen.go PodControllers), so a refused image stops the object that would create the Pod.

Kyverno deprecates the kyverno.io Policy kinds in favour of policies.kyverno.io (planned removal in 1.20); the
Policy is what its v1.19.0 CRD still serves, and what gpuconf checks against (schemas/crds/kyverno.io_policy_v1.json).
"""

from __future__ import annotations

from .. import plan as P

POLICY_NAME = "gpuconf-operator-images"
RULE_NAME = "images-from-the-mirror"
FILE = "manifests/admission.yaml"
#: The Policy of the DRA driver release's namespace (NVLink pools, render/nvlink.py): applied first by that release's
#: own delivery, which creates the namespace (the chart Application's wave -1 runs before it exists).
RELEASE_FILE = "manifests/admission-dra-driver.yaml"
#: Namespaces Kyverno's Helm chart filters out by default (config.resourceFilters, kyverno v1.19.0); its own
#: namespace (spec.security.kyvernoNamespace) is the fourth.
SKIPPED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
#: Kinds whose objects make Pods (Kyverno's autogen covers them with the Pod rule).
POD_KINDS = frozenset({"Pod", "Job", "CronJob", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"})


def skipped_namespaces(plan_or_intent) -> dict[str, str]:
    """namespace -> why Kyverno skips it by default, for the intent's Kyverno namespace."""
    intent = getattr(plan_or_intent, "intent", plan_or_intent)
    security = intent.spec.security
    kyverno = security.kyverno_namespace if security is not None else "kyverno"
    why = {ns: f"Kyverno's default resourceFilters skip every resource there ([*/*,{ns},*])"
           for ns in SKIPPED_NAMESPACES}
    why[kyverno] = ("it is Kyverno's own namespace (spec.security.kyvernoNamespace), which Kyverno's chart adds to its "
                    "resourceFilters and leaves out of its webhooks (excludeKyvernoNamespace, default true)")
    return why


def namespaces(plan: P.Plan) -> list[str]:
    """The namespaces the render runs Pods in: the chart's release namespace, the probe Jobs' (one, today) and the
    DRA driver release's."""
    from . import probes

    from . import nvlink

    jobs = [d for d in probes.render(plan) if d["kind"] in POD_KINDS]
    release = [nvlink.namespace(plan)] if nvlink.release(plan) else []  # the DRA driver's pods, IMEX daemons
    return sorted({plan.namespace, *release, *(d["metadata"]["namespace"] for d in jobs)})


def driver_toolkit(plan: P.Plan) -> str | None:
    """The pattern of OpenShift's Driver Toolkit image when the operator runs it (OpenShift, a driver the operator
    manages, operator.use_ocp_driver_toolkit on), else None: the release repository by digest."""
    cluster = plan.intent.spec.cluster
    if cluster.distribution != "openshift" or all(pool.driver == "preinstalled" for pool in plan.pools):
        return None
    from .. import hazards
    from .values import build_values

    values = hazards.planned_values(plan) or build_values(plan)
    if not values.merged_view()["operator"].get("use_ocp_driver_toolkit"):
        return None
    from ..intent.model import Openshift

    return f"{(cluster.openshift or Openshift()).release_repository}@sha256:{'?' * 64}"


def previous_images(plan: P.Plan) -> list[str]:
    """The images of spec.security.previousImageLock, each `<reference>@<digest>` as a render pins it, that the
    current lock's images are not: admitted for the sync that moves them."""
    lock = plan.previous_lock
    if lock is None or plan.image_lock is None:
        return []
    current = set(allowed_images(plan))
    return sorted({f"{ref}@{digest}" for ref, digest in lock.digests.items()} - current)


def allowed_images(plan: P.Plan) -> list[str]:
    """The images the render pulls: pinned by the lock, else the mirror's wildcard (without the Driver Toolkit and
    the previous lock's)."""
    if plan.image_lock is None:
        return [f"{plan.intent.spec.operator.registry}/*"]
    from ..output.images import images
    from . import nodes, probes
    from .values import build_values

    merged = build_values(plan).merged()
    documents = {"drivers": nodes.nvidia_drivers(plan, merged), "probes": probes.render(plan)}
    return images(plan, merged, documents).references


def render(plan: P.Plan) -> list[dict]:
    """One Policy per namespace the render runs Pods in, when spec.security.admission is kyverno (validation makes
    sure a mirror or a lock is set, and that Kyverno acts in those namespaces)."""
    if plan.intent.spec.admission != "kyverno":
        return []
    from . import metadata

    toolkit = driver_toolkit(plan)
    image = " | ".join([*allowed_images(plan), *previous_images(plan), *([toolkit] if toolkit else [])])
    containers = [{"image": image}]
    what = "pinned by digest in the image lock" if plan.image_lock is not None else \
        f"from the mirror {plan.intent.spec.operator.registry}"
    if previous_images(plan):
        what += " (and those of the lock it replaces, for the sync that moves them)"
    if toolkit:
        what += " and OpenShift's Driver Toolkit from the cluster's release images"
    return [{
        "apiVersion": "kyverno.io/v1",
        "kind": "Policy",
        "metadata": metadata(plan, POLICY_NAME, namespace),
        "spec": {
            "rules": [{
                "name": RULE_NAME,
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "validate": {
                    "failureAction": "Enforce",
                    "message": f"gpuconf admits only the GPU Operator's images {what} in namespace {namespace}",
                    "pattern": {"spec": {"containers": containers, "=(initContainers)": containers,
                                         "=(ephemeralContainers)": containers}},
                },
            }],
        },
    } for namespace in namespaces(plan)]


def problems(plan: P.Plan, documents: dict[str, list[dict]]) -> list[str]:
    """What the admission policy must cover and does not: a namespace of the render's Pods (the chart's release
    namespace, a pod-making object under manifests/) without its Policy, or a Policy where Kyverno does not look."""
    if plan.intent.spec.admission != "kyverno":
        return []
    from . import nvlink

    covered = {d["metadata"]["namespace"] for f in (FILE, RELEASE_FILE) for d in documents.get(f, [])
               if d["kind"] == "Policy"}
    release = {nvlink.namespace(plan)} if nvlink.release(plan) else set()
    running = {plan.namespace} | release | {d["metadata"]["namespace"] for path, docs in documents.items()
                                  if path.startswith("manifests/") for d in docs if d["kind"] in POD_KINDS}
    out = [f"{FILE}: no Policy in namespace {ns}, where the render runs Pods" for ns in sorted(running - covered)]
    skipped = skipped_namespaces(plan)
    out += [f"{FILE}: a Policy in namespace {ns}, which Kyverno skips" for ns in sorted(covered & set(skipped))]
    return out

"""Acceptance probes: per pool one Job that takes one unit of the pool's resource and lists what it got."""

from __future__ import annotations

import hashlib

from .. import dra
from .. import plan as P
from . import metadata
from .names import ACCEPTANCE, PROBE_PREFIX as PREFIX, PROBE_REQUESTS as REQUESTS, QUEUE_LABEL, job_name

COMPONENT_LABEL = "app.kubernetes.io/component"
PROVES_ANNOTATION = "gpuconf.dev/proves"
#: Long enough for a first image pull from a mirror and for the scheduler to find a free unit.
DEADLINE_SECONDS = 900
#: Keep the finished Job (and its log) for a day, then let the TTL controller remove it.
TTL_SECONDS = 86400
#: The unprivileged `nobody` user: the driver creates /dev/nvidia* world read/writable (0666) by default
#: (NVreg_DeviceFileMode), so nvidia-smi needs no root unless a site tightened that.
NOBODY = 65534



def _override(plan: P.Plan, path: str):
    for override in plan.intent.spec.overrides:
        if override.path == path:
            return override.value
    return None


def validator_image(plan: P.Plan) -> str:
    """The GPU Operator validator image the pinned chart runs, pulled from the mirror when one is set.

    validator.version defaults to the chart's appVersion, which equals the released chart version
    (gpu-operator-facts §2); overrides of validator.repository/image/version win, as they do in the chart.
    """
    defaults = plan.chart.shared_defaults["validator"]
    repository = _override(plan, "validator.repository") or defaults["repository"]
    image = _override(plan, "validator.image") or defaults["image"]
    version = str(_override(plan, "validator.version") or plan.chart_version)
    separator = "@" if version.startswith("sha256:") else ":"
    found = f"{plan.image_repository(repository)}/{image}{separator}{version}"
    digest = plan.image_lock.digests.get(found) if plan.image_lock is not None else None
    return f"{found}@{digest}" if digest else found


def _security(plan: P.Plan) -> tuple[dict, dict]:
    """Pod and container security contexts that meet the restricted Pod Security Standard."""
    pod: dict = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    if plan.intent.spec.cluster.distribution != "openshift":
        # OpenShift's restricted SCCs assign a UID from the namespace's range and reject others (MustRunAsRange),
        # so the UID is left to them there.
        pod.update(runAsUser=NOBODY, runAsGroup=NOBODY)
    container = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    return pod, container


def probe(plan: P.Plan, pool: P.PoolPlan) -> dict:
    """The acceptance Job of one pool; with Kueue it goes through the acceptance queue and gets the pool's
    tolerations from the pool's ResourceFlavor, so its success proves the flavor too."""
    resource = pool.resource
    claimed = dra.enabled(plan.intent)
    queued = P.kueue_settings(plan.intent) is not None
    labels = {P.POOL_LABEL: pool.name, COMPONENT_LABEL: "acceptance-probe"}
    meta = metadata(plan, job_name(pool.name), plan.namespace, labels)
    template_labels = dict(meta["labels"])  # the queue label belongs on the Job only: Kueue manages the Job
    if queued:
        meta["labels"][QUEUE_LABEL] = ACCEPTANCE
        how = (f"Kueue admits it from the {ACCEPTANCE} queue on pool {pool.name}'s ResourceFlavor, which adds the "
               f"pool's tolerations; its pod asking for 1 {resource}")
    else:
        how = f"A pod asking for 1 {resource} and tolerating only pool {pool.name}'s taints"
    if claimed:
        device_class = dra.class_of_key(resource)
        how = how.replace(f"asking for 1 {resource}", f"claiming 1 device of DeviceClass {device_class}")
        meta["annotations"] = {PROVES_ANNOTATION: (
            f"{how} is scheduled onto a {P.POOL_LABEL}={pool.name} node, so the node is labelled, the DRA driver "
            f"publishes its devices and the class selects them, and the driver prepares a working GPU: "
            "nvidia-smi -L lists it.")}
    else:
        meta["annotations"] = {PROVES_ANNOTATION: (
            f"{how} is scheduled onto a {P.POOL_LABEL}={pool.name} node, so the node is labelled and advertises the "
            "resource, and the device plugin, container toolkit and driver hand it a working GPU: nvidia-smi -L lists "
            "it.")}
    pod_security, container_security = _security(plan)
    spec: dict = {
        "restartPolicy": "Never",
        "nodeSelector": {P.POOL_LABEL: pool.name},
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": pod_security,
        "containers": [{
            "name": "probe",
            "image": validator_image(plan),
            "imagePullPolicy": "IfNotPresent",
            "command": ["nvidia-smi", "-L"],
            # nvidia-smi and NVML are injected only with the `utility` driver capability (NVIDIA Container
            # Toolkit docs, "Specialized Configurations with Docker", Driver Capabilities); set it explicitly
            # rather than trusting the image's environment.
            "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"}],
            "resources": {
                # Extended resources are requested in limits; the request defaults to the limit.
                "limits": {resource: "1", "memory": "128Mi"},
                "requests": dict(REQUESTS),
            },
            "securityContext": container_security,
        }],
    }
    if queued and pool.pool.nvlink is not None:
        # The pool's flavor is topology-aware (render/nvlink.py): Kueue v0.19.2 admits onto it only a pod set that
        # asks for a topology, and refuses one whose other resources (the probe's cpu and memory) would come from a
        # flavor without one (flavorassigner checkPodSetAndFlavorMatchForTAS). So the probe asks for one node and
        # for the GPU alone.
        from .names import HOSTNAME_LABEL, REQUIRED_TOPOLOGY

        template_annotations = {REQUIRED_TOPOLOGY: HOSTNAME_LABEL}
        spec["containers"][0]["resources"] = {"limits": {resource: "1"}}
    else:
        template_annotations = {}
    if claimed:
        # Under DRA the device comes from a claim (the pod's own, made from the pool's probe template), not from an
        # extended resource in limits.
        from .names import CLAIM_REQUEST as REQUEST, probe_template_name

        container = spec["containers"][0]
        container["resources"]["limits"] = {"memory": "128Mi"}
        container["resources"]["claims"] = [{"name": REQUEST}]
        spec["resourceClaims"] = [{"name": REQUEST, "resourceClaimTemplateName": probe_template_name(pool)}]
    from .platform import pool_tolerations

    # A queued probe gets its pool's tolerations from the Kueue flavor; the platform's taint is on every GPU node.
    tolerations = pool_tolerations(plan, pool, own=not queued)
    if tolerations:
        spec["tolerations"] = tolerations
    secrets = plan.intent.spec.operator.image_pull_secrets
    if secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in secrets]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": DEADLINE_SECONDS,
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "template": {"metadata": {"labels": template_labels,
                                      **({"annotations": template_annotations} if template_annotations else {})},
                         "spec": spec},
        },
    }


#: Where a manual probe's Job lies: outside the kustomization, so no sync applies it (`kubectl create -f`).
MANUAL_FOLDER = "probes"


def render(plan: P.Plan) -> list[dict]:
    """The probe Job of each pool whose probe runs on every sync (mode hook), in pool order of the intent."""
    return [probe(plan, pool) for pool in plan.pools if P.probe_mode(plan.intent, pool.pool) == "hook"]


def manual(plan: P.Plan) -> dict[str, dict]:
    """probes/<pool>.yaml -> the Job of each pool whose probe the user runs (mode manual): a pool that scales to
    zero would otherwise launch a node on every sync."""
    return {f"{MANUAL_FOLDER}/{pool.name}.yaml": probe(plan, pool) for pool in plan.pools
            if P.probe_mode(plan.intent, pool.pool) == "manual"}

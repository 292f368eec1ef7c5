"""Multi-node NVLink pools (pools[].nvlink): the DRA driver release that runs their ComputeDomains beside the
device plugin, a ComputeDomain per team namespace, and the Kueue topology that keeps a job inside one NVLink clique.

How the consumers read what is rendered here (keys of ../shared/reference/dra/facts.md §0):

* The DRA driver chart (DRV v0.4.1 values.yaml, templates/validation.yaml): `resources.gpus.enabled: false` keeps
  its GPU kubelet plugin off, which must not share a node with the classic device plugin (the chart refuses to render
  it otherwise); `resources.computeDomains.enabled` (default true) runs the ComputeDomain controller and kubelet
  plugin. `nvidiaDriverRoot` is /run/nvidia/driver for the operator's driver container and / (the chart's default)
  for a host driver. `kubeletPlugin.affinity` replaces the chart's NFD affinity (any NVIDIA PCI device) with the
  NVLink pools' label, and `kubeletPlugin.tolerations` replaces its toleration list, so the pools' taints are added
  to the chart's own `nvidia.com/gpu` one. The chart's crds/ hold ComputeDomain and ComputeDomainClique; Helm (and
  Argo CD, Flux) apply them before the templates.
* The controller (DRV v0.4.1 templates/compute-domain-daemon.tmpl.yaml) runs one IMEX daemon DaemonSet per
  ComputeDomain in the release's namespace, tolerating every NoSchedule, NoExecute and PreferNoSchedule taint, and
  creates in the ComputeDomain's namespace the ResourceClaimTemplate its `spec.channel.resourceClaimTemplate.name`
  names, whose one request is class compute-domain-default-channel.nvidia.com (templates/
  compute-domain-workload-claim-template.tmpl.yaml). A ComputeDomain's spec is immutable (CRD CEL `self ==
  oldSelf`); `numNodes` is deprecated and 0 is the documented value with IMEXDaemonsWithDNSNames (DRV-docs
  guides/compute-domain-workloads.md).
* Kueue v0.19.2: with KueueDRAIntegration (beta, on) a pod's claim whose class no `deviceClassMappings` entry names
  makes its workload inadmissible (pkg/dra/claims.go: "DeviceClass ... is not mapped in DRA configuration"), so the
  channel class gets a mapping and the NVLink flavors cover it. Topology-Aware Scheduling (beta, on since v0.14)
  reads a Topology's levels from node labels; a flavor names it in `spec.topologyName`, and a PodSet annotated
  `kueue.x-k8s.io/podset-required-topology: <level>` is admitted only inside one domain of that level
  (site/content/en/docs/concepts/topology_aware_scheduling.md). Its fit counts node allocatable and the pods' own
  requests (pkg/scheduler/flavorassigner/tas_flavorassigner.go), so the channel resource is quota only.
"""

from __future__ import annotations

from .. import dra
from .. import plan as P
from ..intent.fabric import DRA_DRIVER_CHART_REPOSITORY, ComputeDomains
from . import metadata
from .names import HOSTNAME_LABEL, REQUIRED_TOPOLOGY, TEAM_LABEL  # noqa: F401 - REQUIRED_TOPOLOGY: for the report

CHART = "dra-driver-nvidia-gpu"
RELEASE_NAME = "dra-driver-nvidia-gpu"
#: The driver's image as the chart pulls it by default (DRV v0.4.1 values.yaml image.repository; an empty tag is "v"
#: and the chart's appVersion).
IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"
#: The label GPU Feature Discovery (and the ComputeDomain kubelet plugin) put on a node of an NVLink fabric:
#: <cluster UUID>.<clique id> (DRV cmd/compute-domain-kubelet-plugin computedomain.go gpuCliqueLabelKey; nvlib.go).
CLIQUE_LABEL = "nvidia.com/gpu.clique"
#: The driver the ComputeDomain half publishes its devices under, and the class of a workload's channel (DRV v0.4.1
#: templates/deviceclass-compute-domain-default-channel.yaml).
CD_DRIVER = "compute-domain.nvidia.com"
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
#: The resource Kueue counts channel claims as (a deviceClassMappings name: a label key).
CHANNEL_RESOURCE = "compute-domain.nvidia.com/channels"
CD_API = "resource.nvidia.com/v1beta1"
TOPOLOGY = "gpuconf-nvlink"
VALUES_FILE = "dra-driver/values.yaml"
#: The label of the release's delivery objects (Argo CD Application, Flux source, HelmRelease, Kustomization).
RELEASE_LABEL = "gpuconf.dev/release"
#: The driver container's root on the host, where the operator installs the driver (DRV values.yaml comment).
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
#: The chart's own kubelet-plugin toleration, kept when the list is replaced (DRV v0.4.1 values.yaml).
CHART_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def pools(plan: P.Plan) -> list[P.PoolPlan]:
    """The pools whose nodes are NVLink trays."""
    return [p for p in plan.pools if p.pool.nvlink is not None]


def release(plan: P.Plan) -> bool:
    """Whether gpuconf delivers the DRA driver release (NVLink pools on the device-plugin stack)."""
    return bool(pools(plan)) and not dra.enabled(plan.intent)


def settings(plan: P.Plan) -> ComputeDomains:
    """spec.computeDomains, or its defaults."""
    return plan.intent.spec.compute_domains or ComputeDomains()


def namespace(plan: P.Plan) -> str:
    """Where the DRA driver runs: the release's namespace (device-plugin stack) or the operator's (GPUCluster)."""
    return settings(plan).namespace if release(plan) else plan.namespace


def chart_repository(plan: P.Plan) -> str:
    """spec.computeDomains.chartRepository, else the operator's mirror's charts folder, else the project's."""
    own = settings(plan).chart_repository
    if own:
        return own
    registry = plan.intent.spec.operator.registry
    return f"oci://{registry.rstrip('/')}/charts" if registry else DRA_DRIVER_CHART_REPOSITORY


#: Where GKE's own driver installer puts the driver on the host (facts §4, NV-docs-25.10: the chart's nvidiaDriverRoot
#: on GKE).
GKE_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"


def driver_root(plan: P.Plan) -> str:
    """The NVLink pools' driver root (validation GC473 keeps it one): the operator's driver container, else GKE's
    installer's folder, else the host's /."""
    if not all(p.driver == "preinstalled" for p in pools(plan)):
        return OPERATOR_DRIVER_ROOT
    return GKE_DRIVER_ROOT if plan.intent.spec.cluster.distribution == "gke" else "/"


def values(plan: P.Plan) -> dict:
    """The DRA driver chart's values: only what differs from its defaults, each for a reason REPORT.md gives."""
    names = [p.name for p in pools(plan)]
    tolerations = {(t["key"], t.get("value", ""), t["effect"]): t for p in pools(plan)
                   for t in map(P.toleration, p.pool.taints)}
    out: dict = {
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": P.POOL_LABEL, "operator": "In", "values": names}]}]}}},
            "tolerations": [CHART_TOLERATION, *(tolerations[k] for k in sorted(tolerations))],
        },
    }
    if driver_root(plan) != "/":
        out["nvidiaDriverRoot"] = driver_root(plan)
    operator = plan.intent.spec.operator
    if operator.registry:  # under the mirror as every other upstream image (plan.mirror_repository)
        out["image"] = {"repository": _repository(plan)}
    from .imagelock import pinned

    tag = f"v{_app_version(plan)}"
    locked = pinned(plan.image_lock, image(plan), tag)
    if locked != tag:  # the image lock pins it: the chart writes <repository>:<tag>, so the tag carries the digest
        out.setdefault("image", {})["tag"] = locked
    if operator.image_pull_secrets:
        out["imagePullSecrets"] = [{"name": n} for n in operator.image_pull_secrets]
    return out


def _app_version(plan: P.Plan) -> str:
    """The chart's appVersion (from its derived values facts): its default image tag is v<appVersion>."""
    from ..output.verify import _schema

    return str(_schema(f"values/{CHART}-{settings(plan).chart_version}.json")["x-chart"]["appVersion"])


def _repository(plan: P.Plan) -> str:
    return P.mirror_repository(IMAGE, plan.intent.spec.operator.registry)


def image(plan: P.Plan) -> str:
    """The driver image the release pulls, as `gpuconf images` and the image lock name it (without its digest)."""
    return f"{_repository(plan)}:v{_app_version(plan)}"


def pulled_image(plan: P.Plan) -> str:
    """The reference the release's pods pull: image(), pinned by the image lock's digest when it has one."""
    from .imagelock import pinned

    return f"{_repository(plan)}:{pinned(plan.image_lock, image(plan), f'v{_app_version(plan)}')}"


def domain_name(pool: str) -> str:
    """A team namespace's ComputeDomain on a pool, and (with -channel) the claim template its controller makes."""
    return f"gpuconf-{pool}"


def channel_template(pool: str) -> str:
    """The ResourceClaimTemplate the ComputeDomain's controller creates for its channel."""
    return f"{domain_name(pool)}-channel"


def compute_domains(plan: P.Plan) -> list[dict]:
    """In every namespace of a team with quota on an NVLink pool: a ComputeDomain whose channel the team's multi-node
    jobs on that pool claim (one IMEX domain per namespace and pool; a job that must not share it makes its own)."""
    if not pools(plan):
        return []
    linked = {p.name for p in pools(plan)}
    docs = []
    for team in plan.intent.spec.teams:
        for pool in sorted(linked & set(team.quota)):
            for ns in team.namespaces:
                meta = metadata(plan, domain_name(pool), ns, {P.POOL_LABEL: pool, TEAM_LABEL: team.name})
                docs.append({"apiVersion": CD_API, "kind": "ComputeDomain", "metadata": meta,
                             "spec": {"numNodes": 0, "channel": {"allocationMode": "Single",
                                                                 "resourceClaimTemplate": {"name": channel_template(pool)}}}})
    return docs


def topology(plan: P.Plan, api_version: str) -> list[dict]:
    """The Kueue Topology of the NVLink pools' flavors: the clique, then the node."""
    if not pools(plan):
        return []
    return [{"apiVersion": api_version, "kind": "Topology", "metadata": metadata(plan, TOPOLOGY),
             "spec": {"levels": [{"nodeLabel": CLIQUE_LABEL}, {"nodeLabel": HOSTNAME_LABEL}]}}]


def kueue_mapping(plan: P.Plan) -> list[dict]:
    """The deviceClassMappings entry Kueue needs to admit a pod that claims a channel."""
    return [{"name": CHANNEL_RESOURCE, "deviceClassNames": [CHANNEL_CLASS]}] if pools(plan) else []


# --- delivery ------------------------------------------------------------------------------------------------------


def helm_template_command(plan: P.Plan) -> str:
    """The offline `helm template` of the DRA driver release, as Argo CD or Flux renders it."""
    return (f"helm template {RELEASE_NAME} {chart_repository(plan)}/{CHART} --version {settings(plan).chart_version} "
            f"--namespace {namespace(plan)} --kube-version {plan.intent.spec.cluster.kubernetes_version} "
            "--include-crds -f dra-driver/values.yaml")


def namespace_doc(plan: P.Plan) -> list[dict]:
    """The release's namespace: its kubelet plugin and IMEX daemons are privileged (Pod Security)."""
    if not release(plan) or namespace(plan) == plan.namespace:  # the operator's is privileged already
        return []
    labels = {"pod-security.kubernetes.io/enforce": "privileged"}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(plan, namespace(plan), labels=labels)}]


def problems(plan: P.Plan, text_values: dict) -> list[str]:
    """What the DRA driver chart would not take of the rendered values: keys its values.yaml does not have, or of
    another type (schemas/values/dra-driver-nvidia-gpu-<version>.json, derived from the chart by
    tools/derive_schemas.py)."""
    from ..output.verify import _plain_validator

    validator = _plain_validator(f"values/{CHART}-{settings(plan).chart_version}.json")
    return [f"{VALUES_FILE} {'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in sorted(validator.iter_errors(text_values), key=lambda e: list(map(str, e.absolute_path)))]

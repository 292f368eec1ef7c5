"""The cluster-intent language (gpuconf.dev/v1alpha1) as strict pydantic models.

Every field is strictly typed: a quoted "4" is not an integer and "yes" is not a boolean, because Helm and the
Kubernetes API read YAML 1.1 and would disagree with a lenient reader. Unknown keys are errors. Cross-field and
catalogue rules (GPU models, MIG geometry, quotas) live in rules.py, so that one run reports all of them.
"""

import re
from typing import Annotated, Any, Dict, List, Literal, Optional, Union

from pydantic import (AfterValidator, ConfigDict, Field, PlainValidator, StringConstraints, ValidationInfo,
                      WithJsonSchema, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from .. import quantity
from .fabric import ComputeDomains, NvLink
from .fieldtypes import K8sLabelName, K8sObjectName, NonEmpty
from .kept import KeptNames
from .security import OciArtifact, Security, SignedCommits
from .strict import Strict

API_VERSION = "gpuconf.dev/v1alpha1"
KIND = "ClusterIntent"

#: Kubernetes minor versions gpuconf verifies output against (the schemas kubernetes-validate bundles).
KUBERNETES_VERSIONS = tuple(f"1.{minor}" for minor in range(25, 38))
DISTRIBUTIONS = ("vanilla", "openshift", "rke2", "k3s", "eks", "gke", "aks", "microk8s")
PRIORITY_TIERS = ("low", "normal", "high", "critical")

#: Limits on how many items the intent's lists and mappings hold (docs/reference/limits.md). They are far above what a real
#: cluster needs and bound the work a small file can cause (1 MiB of `{}` would otherwise be 340,000 pools).
MAX_ITEMS = 1000  # pools, sharing profiles, teams, overrides, waves, quota entries, subjects per role, fleet clusters
MAX_NAMESPACES = 100  # namespaces of one team
MAX_TEAM_NAMESPACES = 1000  # namespaces of all teams together (each becomes a Namespace, a quota and bindings)
MAX_LABELS = 64  # node labels, taints, Prometheus selector labels, metadata labels, pull secrets, MIG layout entries

Name = Annotated[str, Field(min_length=1, max_length=63, description="A DNS-1123 label: lower-case alphanumerics and '-'.")]
#: The integer types of the fields gpuconf's values end up in (issue 29, item 7): an intent's number is refused
#: where its consumer could not hold it, instead of rendering an object the API server or the controller refuses.
#: Kubernetes counts (an IntOrString's int, replicas, a node count) are int32; Go's `int` fields of the operator's
#: CRDs are int64; a Go time.Duration (the drain timeout the upgrade controller multiplies by time.Second, every
#: duration Karpenter and Prometheus parse) is int64 nanoseconds.
INT32_MAX = 2 ** 31 - 1
INT64_MAX = 2 ** 63 - 1
DURATION_SECONDS_MAX = INT64_MAX // 10 ** 9
_DURATION_UNITS = {"ms": 10 ** 6, "s": 10 ** 9, "m": 60 * 10 ** 9, "h": 3600 * 10 ** 9}


def _go_duration(value: str) -> str:
    """A duration such as 1h30m that a Go time.Duration holds (Karpenter's and Prometheus's parsers refuse longer)."""
    total = sum(int(n) * _DURATION_UNITS[unit] for n, unit in re.findall(r"([0-9]+)(ms|s|m|h)", value))
    if total > INT64_MAX:
        raise PydanticCustomError("duration_range", f"is longer than a Go duration holds (at most "
                                                    f"{INT64_MAX // _DURATION_UNITS['h']}h)")
    return value


GoDuration = AfterValidator(_go_duration)
Count = Annotated[int, Field(ge=1, le=INT32_MAX)]
Subject = Annotated[str, Field(
    pattern=r"^((group|user):\S+|serviceaccount:[a-z0-9]([-a-z0-9]*[a-z0-9])?:[a-z0-9]([-.a-z0-9]*[a-z0-9])?)$",
    description="An RBAC subject: group:NAME, user:NAME or serviceaccount:NAMESPACE:NAME.",
    examples=["group:gpu-platform", "user:alice@example.com", "serviceaccount:ci:deployer"],
)]


# --- cluster, operator, driver ---------------------------------------------------------------------------------


# platform-facts §0: the operator mounts the directory of each runtime path from the host (and rewrites file=<path>
# to /host<path>), so only an absolute host path works.
HostPath = Annotated[str, Field(min_length=2, max_length=4096, pattern=r"^/",
                                description="An absolute path on the host, e.g. /etc/containerd/config.toml.")]


class ContainerRuntime(Strict):
    """Where the container runtime lives on the nodes, when it is not the distribution's default."""

    name: Literal["containerd", "cri-o"] = Field("containerd", description="Runtime the toolkit configures.")
    config_path: Optional[HostPath] = Field(None, description="Runtime config file on the host, e.g. /etc/containerd/config.toml.",
                                            examples=["/etc/containerd/config.toml"])
    socket_path: Optional[HostPath] = Field(None, description="Runtime socket on the host, e.g. /run/containerd/containerd.sock.",
                                            examples=["/run/containerd/containerd.sock"])
    nri: bool = Field(False, description="NRI plugin mode (cdi.nriPluginEnabled): the toolkit leaves the runtime's "
                                         "config alone; needs containerd 1.7.30 or 2.1 and later.")


def _ec2_id(prefix: str) -> Any:
    return Annotated[str, Field(pattern=rf"^{prefix}-[0-9a-z]+$", description=f"An EC2 id, {prefix}-...")]


EC2Tags = Annotated[Dict[NonEmpty, NonEmpty], Field(min_length=1, max_length=20)]


class SubnetSelectorTerm(Strict):
    """One EC2NodeClass subnet selector term: tags or an id (terms are ORed)."""

    tags: Optional[EC2Tags] = Field(None, description="Tags the subnets carry, e.g. {karpenter.sh/discovery: my-cluster}.")
    id: Optional[_ec2_id("subnet")] = Field(None, description="A subnet id, alone.", examples=["subnet-0a1b2c3d4e5f60718"])  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _one_of(self) -> "SubnetSelectorTerm":
        if (self.tags is None) == (self.id is None):
            raise PydanticCustomError("selector_term", "give exactly one of tags and id")
        return self


class SecurityGroupSelectorTerm(Strict):
    """One EC2NodeClass security-group selector term: tags, an id or a name (terms are ORed)."""

    tags: Optional[EC2Tags] = Field(None, description="Tags the security groups carry.")
    id: Optional[_ec2_id("sg")] = Field(None, description="A security group id, alone.", examples=["sg-0a1b2c3d4e5f60718"])  # type: ignore[valid-type]
    name: Optional[NonEmpty] = Field(None, description="A security group name, alone.", examples=["my-cluster-gpu-nodes"])

    @model_validator(mode="after")
    def _one_of(self) -> "SecurityGroupSelectorTerm":
        if sum(x is not None for x in (self.tags, self.id, self.name)) != 1:
            raise PydanticCustomError("selector_term", "give exactly one of tags, id and name")
        return self


EKS_AMIS = ("al2023", "bottlerocket", "ubuntu")


class Karpenter(Strict):
    """Karpenter's AWS provider: the EC2NodeClass of the GPU NodePools gpuconf renders."""

    role: Optional[NonEmpty] = Field(None, description="IAM role of the nodes, e.g. KarpenterNodeRole-my-cluster.")
    instance_profile: Optional[NonEmpty] = Field(None, description="Instance profile instead of a role.",
                                                 examples=["KarpenterNodeInstanceProfile-my-cluster"])
    subnet_selector_terms: List[SubnetSelectorTerm] = Field(min_length=1, max_length=30,
                                                            description="Where nodes are launched.")
    security_group_selector_terms: List[SecurityGroupSelectorTerm] = Field(
        min_length=1, max_length=30, description="The nodes' security groups.")
    ami_version: Annotated[str, Field(max_length=17, pattern=r"^(latest|v[0-9][0-9A-Za-z.-]*)$")] = Field(
        "latest", description="AMI release of the alias (al2023@<version>): latest drifts with every release; "
                              "pin one such as v20240625 (al2023) or v1.10.0 (bottlerocket).")

    @model_validator(mode="after")
    def _role_or_profile(self) -> "Karpenter":
        if (self.role is None) == (self.instance_profile is None):
            raise PydanticCustomError("karpenter_identity", "give exactly one of role and instanceProfile")
        return self


class Eks(Strict):
    """Amazon EKS: the nodes' AMI and, for Karpenter-provisioned pools, the EC2NodeClass."""

    ami: Literal[EKS_AMIS] = Field(  # type: ignore[valid-type]
        "al2023", description="al2023 or bottlerocket: EKS's accelerated AMIs (driver and toolkit preinstalled; "
                              "Bottlerocket also its device plugin); ubuntu: the operator installs both.")
    karpenter: Optional[Karpenter] = Field(None, description="Render the EC2NodeClass and a NodePool per pool "
                                                             "selected by karpenter.sh/nodepool.")


class CatalogSource(Strict):
    """The OLM catalogue a Subscription installs from."""

    name: K8sObjectName = Field(description="Name of the CatalogSource, e.g. the one oc-mirror creates for a "
                                            "disconnected cluster.", examples=["cs-redhat-operator-index"])
    namespace: K8sLabelName = Field("openshift-marketplace", description="Its namespace.")


class NfdOperator(Strict):
    """Red Hat's Node Feature Discovery Operator, installed by gpuconf's output (OLM only)."""

    catalog_source: Optional[CatalogSource] = Field(
        None, description="The catalogue its Subscription installs from; default Red Hat's redhat-operators. A "
                          "disconnected cluster names the mirrored catalogue of redhat-operator-index here.")


class Openshift(Strict):
    """Red Hat OpenShift: how the operator is installed."""

    install: Literal["olm", "helm"] = Field(
        "olm", description="olm (NVIDIA's supported route): OperatorGroup, Subscription and the ClusterPolicy; helm: "
                           "the chart with platform.openshift.")
    catalog_source: Optional[CatalogSource] = Field(
        None, description="OLM only: the catalogue the Subscription installs from; default Red Hat's "
                          "certified-operators. A disconnected cluster names its mirrored catalogue here.")
    nfd_operator: Optional[NfdOperator] = Field(
        None, description="OLM only: render the Namespace, OperatorGroup and Subscription of Red Hat's NFD Operator "
                          "(openshift-nfd), so one sync installs everything. Leave it out where the NFD Operator is "
                          "installed already: a second OperatorGroup in its namespace stops OLM.")
    release_repository: Annotated[str, Field(pattern=r"^[a-z0-9][-a-z0-9.:]*(/[a-z0-9][-a-z0-9._]*)+$")] = Field(
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev", description="The repository of the cluster's release "
        "images (OKD's: quay.io/openshift/okd-content): the driver toolkit image the operator runs beside the driver "
        "comes from there by digest, and spec.security.admission admits it.")


class Dra(Strict):
    """The DRA stack's choices that the pools alone do not settle (spec.cluster.allocation: dra)."""

    mig_partitions: Optional[Literal["dynamic", "external"]] = Field(
        None, description="Who makes the MIG instances of MIG pools: dynamic (the DRA driver's DynamicMIG gate, "
                          "alpha: it creates instances per claim and destroys those it did not create) or external "
                          "(made outside the operator before the driver starts, e.g. by mig-parted; the driver only "
                          "publishes them). Required when a pool uses MIG.")
    compute_domains: bool = Field(False, description="Run the driver's ComputeDomain half (multi-node NVLink, "
                                                     "e.g. GB200/GB300 NVL72): its controller and kubelet plugin.")


class Cluster(Strict):
    """The Kubernetes cluster the output is for."""

    kubernetes_version: Literal[KUBERNETES_VERSIONS] = Field(  # type: ignore[valid-type]
        description="Kubernetes minor version (quoted, e.g. \"1.33\"); generated manifests are verified against it.")
    distribution: Literal[DISTRIBUTIONS] = Field("vanilla", description="Kubernetes distribution.")  # type: ignore[valid-type]
    container_runtime: Optional[ContainerRuntime] = Field(None, description="Container runtime paths, if not the default.")
    mig_strategy: Optional[Literal["single", "mixed"]] = Field(
        None, description="Pin the cluster-wide MIG strategy. Omit to let gpuconf derive it from the pools: single "
                          "when every MIG pool uses one uniform profile, mixed otherwise.")
    allocation: Literal["devicePlugin", "dra"] = Field(
        "devicePlugin", description="The allocation stack the operator runs, cluster-wide: devicePlugin "
                                    "(ClusterPolicy, extended resources such as nvidia.com/gpu) or dra (GPUCluster, "
                                    "experimental: the NVIDIA DRA driver, DeviceClasses and ResourceClaims; "
                                    "Kubernetes 1.34 or later, new clusters only).")
    dra: Optional[Dra] = Field(None, description="DRA settings (allocation dra only).")
    eks: Optional[Eks] = Field(None, description="EKS settings (distribution eks only).")
    openshift: Optional[Openshift] = Field(None, description="OpenShift settings (distribution openshift only).")

    @field_validator("dra")
    @classmethod
    def _belongs_to_dra(cls, value: Any, info: ValidationInfo) -> Any:
        allocation = info.data.get("allocation")
        if value is not None and allocation is not None and allocation != "dra":
            raise PydanticCustomError("allocation_setting", f"dra settings need allocation dra, but allocation is "
                                                            f"{allocation}")
        return value

    @field_validator("eks", "openshift")
    @classmethod
    def _belongs_to_distribution(cls, value: Any, info: ValidationInfo) -> Any:
        distribution = info.data.get("distribution")
        if value is not None and distribution is not None and distribution != info.field_name:
            raise PydanticCustomError("distribution_setting",
                                      f"{info.field_name} settings need distribution {info.field_name}, "
                                      f"but distribution is {distribution}")
        return value


class Operator(Strict):
    """The GPU Operator Helm release."""

    chart_version: NonEmpty = Field(description="Pinned GPU Operator chart version; one gpuconf ships base defaults for.")
    namespace: Name = Field("gpu-operator", description="Namespace of the release and its ConfigMaps.")
    registry: Optional[NonEmpty] = Field(None, description="Image registry mirror that replaces nvcr.io/nvidia for every image.")
    image_pull_secrets: List[Name] = Field(default_factory=list, max_length=MAX_LABELS, description="Names of existing pull secrets (never their content).")
    image_lock: Optional[NonEmpty] = Field(
        None, description="A YAML file (relative to this one, inside its repository: the git work tree that "
                          "holds it, else its folder) mapping each image reference the render pulls, as `gpuconf "
                          "images` prints it, to its sha256: digest; every image is then pinned by digest.",
        examples=["images.lock.yaml"])


class Drain(Strict):
    """How nodes are drained before their driver is replaced."""

    enable: bool = Field(True, description="Drain the node (evict all pods) before the driver upgrade.")
    force: bool = Field(False, description="Also evict pods not managed by a controller.")
    timeout_seconds: int = Field(300, ge=0, le=DURATION_SECONDS_MAX,
                                 description="Give up draining after this many seconds (0 = never).")
    delete_empty_dir: bool = Field(False, description="Evict pods using emptyDir volumes (their data is lost).")
    pod_selector: Optional[NonEmpty] = Field(None, description="Label selector of the pods to drain; default all.",
                                             examples=["app.kubernetes.io/component=training"])


class PodDeletion(Strict):
    """How GPU pods are removed before their driver is replaced."""

    force: bool = Field(False, description="Delete GPU pods not managed by a controller.")
    timeout_seconds: int = Field(300, ge=0, le=DURATION_SECONDS_MAX,
                                 description="Give up after this many seconds (0 = never).")
    delete_empty_dir: bool = Field(False, description="Delete GPU pods using emptyDir volumes.")


class WaitForCompletion(Strict):
    """Jobs that must finish before a node's driver is replaced."""

    pod_selector: NonEmpty = Field(description="Label selector of the pods to wait for.")
    timeout_seconds: int = Field(0, ge=0, le=DURATION_SECONDS_MAX,
                                 description="Stop waiting after this many seconds (0 = forever).")


def _max_unavailable(value: Any) -> Union[int, str]:
    # A plain validator instead of a Union keeps the error to one clear line instead of one per union member.
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX:  # an IntOrString
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit() and 0 <= int(value[:-1]) <= 100:
        return value
    raise PydanticCustomError("max_unavailable", "must be a node count (0 to 2147483647) or a percentage such as "
                                                 "\"25%\"")


MaxUnavailable = Annotated[Any, PlainValidator(_max_unavailable), WithJsonSchema({
    "oneOf": [{"type": "integer", "minimum": 0, "maximum": INT32_MAX},
              {"type": "string", "pattern": r"^(100|[1-9]?[0-9])%$"}],
    "description": "Nodes that may be unavailable at once during the upgrade: a count or a percentage such as \"25%\".",
})]


DriverVersion = Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+(\.[0-9]+)?$", description="Driver version, quoted, e.g. \"595.91.07\".")]


class Rollout(Strict):
    """A driver upgrade in progress: the target version and how many waves run it already."""

    version: DriverVersion = Field(description="The driver version the waves move to.")
    wave: int = Field(ge=0, le=INT32_MAX, description="Waves 1..wave run the target version; the later ones keep spec.driver.version. "
                                        "Raise it by one per reviewed commit; revert the commit to roll a wave back.")


class Upgrade(Strict):
    """Driver upgrade policy: how each node is upgraded, and the waves pools upgrade in."""

    auto_upgrade: bool = Field(True, description="Let the operator roll driver changes out node by node.")
    max_parallel: int = Field(1, ge=0, le=INT32_MAX, description="Nodes upgraded at once (0 = unlimited), per NVIDIADriver in "
                                                   "per-pool mode.")
    max_unavailable: MaxUnavailable = "25%"
    drain: Optional[Drain] = Field(None, description="Drain settings; omit to keep the chart default (no drain).")
    pod_deletion: Optional[PodDeletion] = Field(None, description="GPU pod deletion settings.")
    wait_for_completion: Optional[WaitForCompletion] = Field(None, description="Wait for matching pods before upgrading.")
    canary_pool: Optional[Name] = Field(None, description="Shorthand for waves: [[canaryPool]]: this pool first, "
                                                          "then every other pool.")
    waves: List[Annotated[List[Name], Field(min_length=1, max_length=MAX_ITEMS)]] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="The order pools take a new cluster driver version in: each wave is a list "
                                          "of pools; pools on the cluster driver that no wave lists form the last "
                                          "wave. Each pool gets its own NVIDIADriver.")
    rollout: Optional[Rollout] = Field(None, description="A driver upgrade in waves: the target version and the last "
                                                         "wave that runs it.")


class Driver(Strict):
    """The cluster's default GPU driver."""

    version: Optional[DriverVersion] = Field(None, description="Managed driver version; omit for the chart's default.")
    preinstalled: Optional[bool] = Field(
        None, description="Nodes bring their own host driver; the operator does not install one. Default: the "
                          "platform's (true on GKE with Google's installer and on EKS's AL2023/Bottlerocket AMIs; "
                          "false elsewhere, and whenever a version is given).", examples=[True])
    kernel_module_type: Optional[Literal["auto", "open", "proprietary"]] = Field(None, description="Kernel module flavour.")
    upgrade: Optional[Upgrade] = Field(None, description="Upgrade policy for managed drivers.")


class PoolDriver(Strict):
    """A pool's own driver, overriding the cluster default (hybrid clusters, per-pool versions)."""

    version: Optional[DriverVersion] = Field(None, description="Driver version for this pool only.")
    preinstalled: bool = Field(False, description="This pool keeps its host driver.")


# --- sharing ---------------------------------------------------------------------------------------------------


class TimeSlicing(Strict):
    """Time-slicing: each GPU is advertised replicas times; no memory or fault isolation."""

    replicas: int = Field(description="How many pods share one GPU (>= 2).")
    rename_by_default: bool = Field(False, description="Advertise as nvidia.com/gpu.shared instead of nvidia.com/gpu.")
    fail_requests_greater_than_one: bool = Field(False, description="Reject pods asking for more than one shared unit.")


class Mps(Strict):
    """CUDA MPS: full GPUs split into replicas with pinned memory and compute shares."""

    replicas: int = Field(description="How many clients share one GPU (2 to the upstream limit of 48).")
    rename_by_default: bool = Field(True, description="Advertise as nvidia.com/gpu.shared. gpuconf's default is true, so "
                                                      "that MPS shares never pass for whole GPUs in quotas and requests; "
                                                      "the device plugin's own default is false.")


MigLayout = Annotated[Dict[NonEmpty, Annotated[int, Field(ge=1, le=INT32_MAX)]], Field(max_length=MAX_LABELS)]


class Mig(Strict):
    """MIG partitioning: either an explicit layout per GPU or a preset that mig-manager names."""

    layout: Optional[MigLayout] = Field(None, description="MIG profile -> instances per GPU, e.g. {\"3g.40gb\": 1, \"1g.10gb\": 4}.")
    preset: Optional[NonEmpty] = Field(None, description="A built-in layout: all-balanced, or all-<profile> (max instances of one profile).")


class SharingProfile(Strict):
    """How a pool's GPUs are shared: exactly one of exclusive, timeSlicing, mps, mig (mig may add timeSlicing)."""

    exclusive: Optional[Dict[str, Any]] = Field(None, description="Whole GPUs, one pod each. Write `exclusive: {}`.",
                                                examples=[{}])
    time_slicing: Optional[TimeSlicing] = None
    mps: Optional[Mps] = None
    mig: Optional[Mig] = None
    keep_names: Optional[KeptNames] = Field(
        None, description="Config names the nodes carry from before gpuconf (`gpuconf import` writes them): rendered "
                          "instead of gpuconf's <profile>-<hash> keys while the content is exactly what the nodes "
                          "run, so that the first sync relabels nothing.")

    @field_validator("exclusive")
    @classmethod
    def _exclusive_empty(cls, value: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        if value:
            raise PydanticCustomError("exclusive_options", "exclusive takes no options; write `exclusive: {}`")
        return value


# --- pools -----------------------------------------------------------------------------------------------------


class Match(Strict):
    """How a pool's nodes are recognised. All given criteria must hold."""

    pci_device: bool = Field(False, description="Nodes whose GPU PCI device id is the pool's model (seen by NFD).")
    node_labels: Dict[NonEmpty, str] = Field(default_factory=dict, max_length=MAX_LABELS, description="Labels the nodes already carry (e.g. a node group's).")
    hostname: Optional[NonEmpty] = Field(None, description="Regular expression the node name must match, e.g. ^gpu-h100-.")
    dmi_product: Optional[NonEmpty] = Field(None, description="DMI product name of the machine (NFD system.dmiid.product_name).",
                                            examples=["ProLiant XL675d Gen10 Plus"])


class Taint(Strict):
    """A node taint the pool's nodes carry."""

    key: NonEmpty = Field(description="Qualified name, e.g. gpuconf.dev/pool.")
    value: str = Field("", description="Taint value (a label value).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Taint effect.")


# Karpenter's NodePool fields (karpenter-facts §d; the NodePool CRD's patterns and enums).
KarpenterDuration = Annotated[str, Field(pattern=r"^(([0-9]+(s|m|h))+|Never)$",
                                         description="A duration such as 30m, 720h or 1h30m, or Never."), GoDuration]
CAPACITY_TYPES = ("on-demand", "spot", "reserved")


class DisruptionBudget(Strict):
    """How many of the pool's nodes Karpenter may disrupt at once (for consolidation and drift, not expiry)."""

    nodes: Annotated[str, Field(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")] = Field(
        description="A node count or a percentage of the pool's nodes, e.g. \"1\" or \"10%\"; \"0\" blocks.")
    reasons: List[Literal["Underutilized", "Empty", "Drifted"]] = Field(
        default_factory=list, max_length=3, description="The disruption reasons it applies to; default all.",
        examples=[["Drifted"]])
    schedule: Optional[NonEmpty] = Field(None, description="Cron schedule when the budget starts (with duration).",
                                         examples=["0 9 * * mon-fri"])
    duration: Optional[Annotated[str, Field(pattern=r"^([0-9]+(m|h))+$"), GoDuration]] = Field(
        None, description="How long the budget lasts from each schedule, e.g. 8h (with schedule).", examples=["8h"])

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> "DisruptionBudget":
        # The NodePool CRD's CEL rule: "'schedule' must be set with 'duration'" (karpenter-facts §d).
        if (self.schedule is None) != (self.duration is None):
            raise PydanticCustomError("budget_window", "give schedule and duration together, or neither")
        return self


class CapacityReservationTerm(Strict):
    """One EC2NodeClass capacity-reservation selector term: an id alone, or tags, an owner and/or the match criteria
    (terms are ORed; the EC2NodeClass CRD's rules)."""

    id: Optional[_ec2_id("cr")] = Field(None, description="A capacity reservation id, alone.",  # type: ignore[valid-type]
                                        examples=["cr-0123456789abcdef0"])
    tags: Optional[EC2Tags] = Field(None, description="Tags the reservations carry ('*' matches any value).",
                                    examples=[{"team": "ml-training"}])
    owner_id: Optional[Annotated[str, Field(pattern=r"^[0-9]{12}$")]] = Field(
        None, alias="ownerID", description="The AWS account that owns the reservations (12 digits), with tags.",
        examples=["123456789012"])
    instance_match_criteria: Optional[Literal["open", "targeted"]] = Field(
        None, description="open or targeted reservations.", examples=["targeted"])

    @model_validator(mode="after")
    def _id_alone(self) -> "CapacityReservationTerm":
        if self.id is None and self.tags is None and self.instance_match_criteria is None:
            raise PydanticCustomError("selector_term", "give id, tags or instanceMatchCriteria")
        if self.id is not None and (self.tags is not None or self.owner_id is not None
                                    or self.instance_match_criteria is not None):
            raise PydanticCustomError("selector_term", "an id stands alone: no tags, ownerID or instanceMatchCriteria")
        return self


class KarpenterPool(Strict):
    """The lifecycle of a Karpenter pool's nodes: consolidation, expiry, capacity type and its EC2NodeClass."""

    node_overlays: bool = Field(True, description="Render NodeOverlays that add the pool's shared, MPS or MIG resources "
                                                  "to Karpenter's simulation (alpha: feature gate NodeOverlay).")
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        "WhenEmpty", description="When Karpenter removes or replaces nodes; gpuconf's default WhenEmpty never moves "
                                 "a running GPU job (Karpenter's is WhenEmptyOrUnderutilized).")
    consolidate_after: KarpenterDuration = Field("10m", description="How long a node stays empty (or underused) "
                                                                    "before consolidation; Never disables it.")
    budgets: List[DisruptionBudget] = Field(default_factory=list, max_length=50,
                                            description="Disruption budgets; default Karpenter's (10% of the nodes).")
    expire_after: KarpenterDuration = Field(
        "Never", description="Replace nodes this long after launch, forcefully (budgets and do-not-disrupt do not "
                             "hold it): gpuconf's default Never keeps long training jobs (Karpenter's is 720h).")
    termination_grace_period: Optional[Annotated[str, Field(pattern=r"^([0-9]+(s|m|h))+$"), GoDuration]] = Field(
        None, description="How long a draining node waits for its pods before Karpenter deletes it.")
    capacity_types: List[Literal[CAPACITY_TYPES]] = Field(  # type: ignore[valid-type]
        default_factory=list, max_length=3,
        description="on-demand, spot and/or reserved (karpenter.sh/capacity-type); default Karpenter's on-demand.")
    root_volume_gib: int = Field(100, ge=8, le=64000, alias="rootVolumeGiB",
                                 description="Root (Bottlerocket: data) volume of each node in GiB; AL2023's own "
                                             "20 GiB fills with GPU images.")
    instance_store_policy: Optional[Literal["RAID0"]] = Field(
        None, description="RAID0: the instance's NVMe disks become the node's ephemeral storage.")
    capacity_reservations: List[CapacityReservationTerm] = Field(
        default_factory=list, max_length=30,
        description="The EC2 capacity reservations (On-Demand Capacity Reservations, Capacity Blocks) the pool's "
                    "EC2NodeClass selects; capacity type reserved launches only into these.",
        examples=[[{"id": "cr-0123456789abcdef0"},
                   {"tags": {"team": "ml-training"}, "instanceMatchCriteria": "targeted"}]])


class Pool(Strict):
    """A set of identical GPU nodes."""

    name: Name
    gpu: NonEmpty = Field(description="GPU model id from the catalogue (gpuconf schema lists them).")
    gpus_per_node: int = Field(ge=1, le=16, description="GPUs in each node.")
    nodes: int = Field(ge=1, le=INT32_MAX, description="Number of nodes in the pool; with minNodes, the most it scales to (quotas "
                                         "and capacity count these).")
    min_nodes: Optional[int] = Field(None, ge=0, le=INT32_MAX, description="The fewest nodes an autoscaled pool keeps (0: it "
                                                              "scales to zero); absent: the pool has `nodes` nodes.")
    match: Match = Field(description="How the pool's nodes are recognised.")
    sharing: Name = Field("exclusive", description="Name of a sharing profile; `exclusive` is always defined.")
    taints: List[Taint] = Field(default_factory=list, max_length=MAX_LABELS, description="Taints that keep foreign pods off the pool.")
    driver: Optional[PoolDriver] = Field(None, description="Pool-specific driver (version or preinstalled).")
    allow_quota_oversubscription: bool = Field(False, description="Allow team quotas to add up to more than the pool holds.")
    probe: Optional[Literal["hook", "manual", "off"]] = Field(
        None, description="The acceptance probe: hook (runs on every sync), manual (probes/<pool>.yaml, applied by "
                          "you) or off; default hook, manual for a pool that scales to zero.")
    karpenter: Optional[KarpenterPool] = Field(None, description="Lifecycle of a Karpenter pool's nodes.")
    nvlink: Optional[NvLink] = Field(None, description="The nodes are trays of multi-node NVLink racks (ComputeDomains).")


# --- GPU models the catalogue lacks -----------------------------------------------------------------------------

MODEL_ID_PATTERN = r"^[A-Z0-9][A-Z0-9-]*$"
ModelId = Annotated[str, Field(min_length=1, max_length=63, pattern=MODEL_ID_PATTERN,
                               description="A GPU model id like the catalogue's: upper-case letters, digits and '-'.")]
PciDeviceId = Annotated[str, Field(
    pattern=r"^0x[0-9A-F]{4}10DE$",
    description="PCI device id in mig-parted's 0x<DEVICE><VENDOR> form, upper-case hex, NVIDIA's vendor 10DE.",
    examples=["0x233010DE"])]
PciSubsystemId = Annotated[str, Field(
    pattern=r"^0x[0-9A-F]{8}$", description="PCI subsystem in 0x<SUBDEVICE><SUBVENDOR> form, upper-case hex.",
    examples=["0x157E10DE"])]


class DeclaredGpu(Strict):
    """A GPU model the catalogue lacks, declared with the facts gpuconf needs; never MIG-capable."""

    name: Optional[NonEmpty] = Field(None, description="Marketing name, e.g. NVIDIA A800 40GB Active; default the id.")
    pci_device_ids: List[PciDeviceId] = Field(min_length=1, description="PCI device ids of the GPU (NFD matches them).")
    pci_subsystem_ids: List[PciSubsystemId] = Field(
        default_factory=list, description="Subsystem ids, when the device id is shared with another GPU (like A2/A16).",
        examples=[["0x157E10DE"]])
    memory_gib: float = Field(gt=0, alias="memoryGiB", description="Memory per GPU in GiB (nominal), e.g. 48.")
    compute_capability: Optional[Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+$")]] = Field(
        None, description="CUDA compute capability, e.g. \"8.6\" (MPS allows 48 clients from 7.5, 16 below).")
    product_labels: List[NonEmpty] = Field(
        default_factory=list, description="GFD nvidia.com/gpu.product values of the GPU, so audit and import know it.")


# --- teams, access, monitoring, overrides ----------------------------------------------------------------------


def _quota_value(value: Any) -> Union[int, Dict[str, int]]:
    if isinstance(value, bool) or not isinstance(value, (int, dict)):
        raise PydanticCustomError("quota_type", "quota must be a GPU count or a mapping of MIG profile to count")
    if isinstance(value, int):
        if value < 0:
            raise PydanticCustomError("quota_range", "quota must not be negative")
        return value
    for key, count in value.items():
        if not isinstance(key, str) or isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise PydanticCustomError("quota_type", "quota must be a GPU count or a mapping of MIG profile to count")
    return dict(value)


QuotaValue = Annotated[Any, PlainValidator(_quota_value), WithJsonSchema({
    "oneOf": [
        {"type": "integer", "minimum": 0},
        {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
    ],
    "description": "GPUs (or shared units) of the pool, or MIG profile -> instances.",
})]


class Team(Strict):
    """A team: its namespaces, its GPU quota per pool and its scheduling priority."""

    name: Name
    namespaces: List[Name] = Field(min_length=1, max_length=MAX_NAMESPACES, description="Namespaces the team owns.")
    quota: Dict[Name, QuotaValue] = Field(default_factory=dict, max_length=MAX_ITEMS, description="Per pool: units of the pool's resource the team may request.")
    priority: Literal[PRIORITY_TIERS] = Field("normal", description="Scheduling priority tier.")  # type: ignore[valid-type]


class Access(Strict):
    """Who may do what with the accelerators."""

    admins: List[Subject] = Field(default_factory=list, max_length=MAX_ITEMS, description="May change accelerator settings (ClusterPolicy, NVIDIADriver, gpuconf ConfigMaps).")
    developers: Dict[Name, Annotated[List[Subject], Field(max_length=MAX_ITEMS)]] = Field(
        default_factory=dict, max_length=MAX_ITEMS, description="Team name -> subjects working in that team's namespaces.")
    observers: List[Subject] = Field(default_factory=list, max_length=MAX_ITEMS, description="May read GPU metrics and state only.")
    auditors: List[Subject] = Field(default_factory=list, max_length=MAX_ITEMS, description="May run `gpuconf audit --kubeconfig`: list nodes, pods and events, read the operator's pod logs (the gpuconf-gpu-auditor roles), nothing else.", examples=[["serviceaccount:ci:gpuconf-audit"]])


class Alerts(Strict):
    """Alert thresholds for the PrometheusRule."""

    gpu_temp_celsius: Optional[int] = Field(85, ge=40, le=120, description="Alert when a GPU is hotter than this.")
    xid_errors: bool = Field(True, description="Alert on a new XID error: DCGM_FI_DEV_XID_ERRORS holds the code "
                                               "of the last XID, not a count, so the alert fires when it changes and "
                                               "clears 5 minutes later.")
    ecc_double_bit: bool = Field(True, description="Alert on double-bit ECC errors.")
    gpus_unavailable: bool = Field(True, description="Alert when a GPU node's allocatable GPUs drop to zero.")


class Monitoring(Strict):
    """DCGM exporter scraping and alerts."""

    service_monitor: bool = Field(True, description="Create the DCGM exporter ServiceMonitor (needs the Prometheus Operator CRDs).")
    interval: Optional[Annotated[str, Field(pattern=r"^[0-9]+(ms|s|m|h)$"), GoDuration]] = Field(
        None, description="Scrape interval, e.g. 30s.")
    prometheus_selector: Dict[NonEmpty, str] = Field(default_factory=dict, max_length=MAX_LABELS, description="Labels your Prometheus selects ServiceMonitors and rules by.")
    alerts: Optional[Alerts] = Field(None, description="Alert thresholds; omit for no PrometheusRule.")


def _plain_data(value: Any) -> Any:
    """A YAML value as plain data: the loader's positioned maps and lists (ruamel's CommentedMap and CommentedSeq,
    subclasses of dict and list) become dicts and lists, so the values, their checks and the report never meet
    those types (a CommentedMap's item view, for one, cannot be reversed). The loader bounds the depth."""
    if isinstance(value, dict):
        return {key: _plain_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_data(item) for item in value]
    return value


class Override(Strict):
    """A raw chart value, set deliberately, with the reason."""

    path: NonEmpty = Field(description="Dotted chart values path, e.g. dcgmExporter.serviceMonitor.interval.")
    value: Annotated[Any, AfterValidator(_plain_data)] = Field(description="The value to set.")
    why: Annotated[str, StringConstraints(min_length=1)] = Field(description="Why this override exists (shown in the report).")


# --- delivery --------------------------------------------------------------------------------------------------

DELIVERY_TOOLS = ("none", "argocd", "flux")
#: Defaults the renderer applies when a delivery field is omitted (docs/how-to/gitops.md).
ARGOCD_NAMESPACE = "argocd"
FLUX_NAMESPACE = "flux-system"
ARGOCD_IN_CLUSTER = "https://kubernetes.default.svc"

RepoPath = Annotated[str, Field(
    pattern=r"^(\.|[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*)$",
    description="A folder of the Git repository, relative to its root, without a leading or trailing '/': "
                "the folder `gpuconf render -o` writes to, e.g. clusters/out (or . for the root).",
    examples=["out", "gitops/gpu"])]
ChartRepository = Annotated[str, Field(
    pattern=r"^(https?|oci)://[^\s/]+(/[^\s]*)?[^\s/]$",
    description="Helm repository (https://...) or OCI registry path (oci://...) that serves the gpu-operator chart.",
    examples=["https://charts.corp.example/nvidia", "oci://registry.corp.example/nvidia/charts"])]


class ArgoDestination(Strict):
    """The cluster Argo CD deploys to: its API server URL or its name in Argo CD (one of them)."""

    server: Optional[Annotated[str, Field(pattern=r"^https?://\S+$")]] = Field(
        None, description="API server URL as registered in Argo CD; default https://kubernetes.default.svc.",
        examples=["https://eu-prod.k8s.example.com:6443"])
    name: Optional[NonEmpty] = Field(None, description="Cluster name as registered in Argo CD.", examples=["eu-prod"])

    @model_validator(mode="after")
    def _one_of(self) -> "ArgoDestination":
        if (self.server is None) == (self.name is None):
            raise PydanticCustomError("destination_one_of", "give exactly one of server and name")
        return self


class FluxSourceRef(Strict):
    """The Flux source that holds the rendered output (the Git repository Flux already syncs)."""

    kind: Literal["GitRepository", "OCIRepository", "Bucket"] = Field("GitRepository", description="Source kind.")
    name: K8sObjectName = Field("flux-system", description="Source name; flux bootstrap creates flux-system.")
    namespace: Optional[K8sLabelName] = Field(None, description="Source namespace; default the delivery namespace.",
                                              examples=["flux-system"])


_ARGOCD_ONLY = {"repoURL": "repoURL", "target_revision": "targetRevision", "project": "project",
                "destination": "destination", "signed_commits": "signedCommits"}
_FLUX_ONLY = {"source_ref": "sourceRef", "oci_artifact": "ociArtifact", "chart_digest": "chartDigest"}


class Delivery(Strict):
    """How the rendered tree reaches the cluster: Argo CD Applications or Flux objects under gitops/, or nothing."""

    model_config = ConfigDict(json_schema_extra={"allOf": [
        {"if": {"properties": {"tool": {"const": "argocd"}}, "required": ["tool"]},
         "then": {"required": ["path", "repoURL"]},
         "else": {"not": {"anyOf": [{"required": [key]} for key in _ARGOCD_ONLY.values()]}}},
        {"if": {"properties": {"tool": {"const": "flux"}}, "required": ["tool"]},
         "then": {"required": ["path"]},
         "else": {"not": {"anyOf": [{"required": [key]} for key in _FLUX_ONLY.values()]}}},
    ]})

    # `tool` comes first: the validators below read it.
    tool: Literal[DELIVERY_TOOLS] = Field(  # type: ignore[valid-type]
        "none", description="argocd: Argo CD Applications; flux: Flux objects; none: no gitops/ folder.")
    path: Optional[RepoPath] = Field(
        None, validate_default=True, description="Required for argocd and flux: the folder `gpuconf render -o` "
                                                 "writes, relative to the Git repository's root (. for the root).")
    namespace: Optional[K8sLabelName] = Field(
        None, description="Namespace of the Argo CD Applications (default argocd) or the Flux objects (default flux-system).")
    chart_repository: Optional[ChartRepository] = Field(
        None, description="Where the chart comes from; default NVIDIA's Helm repository, or oci://<operator.registry>/charts "
                          "when a registry mirror is set.")
    chart_digest: Optional[Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]] = Field(
        None, examples=["sha256:" + "0" * 64], description="Flux, an OCI chart source: the chart's manifest digest "
        "(what `helm push` printed), which the OCIRepository pins and the attestation records.")
    # Named like its key (not repo_url): pydantic reports a defaulted field's error under its Python name.
    repoURL: Optional[NonEmpty] = Field(None, validate_default=True,  # noqa: N815
                                        description="Argo CD: URL of the Git repository holding the rendered output.")
    target_revision: Optional[NonEmpty] = Field(None, description="Argo CD: branch, tag or commit to sync; default HEAD.")
    project: Optional[K8sLabelName] = Field(None, description="Argo CD: project of the Applications; default default.",
                                            examples=["gpu-platform"])
    destination: Optional[ArgoDestination] = Field(None, description="Argo CD: the target cluster; default in-cluster.")
    source_ref: Optional[FluxSourceRef] = Field(None, description="Flux: the source holding the rendered output; "
                                                                  "default GitRepository flux-system.")
    signed_commits: Optional[SignedCommits] = Field(None, description="Argo CD: sync only Git commits signed with "
        "these keys, through an AppProject of the cluster's own (<cluster>-gpu; project is then left out).")
    oci_artifact: Optional[OciArtifact] = Field(None, description="Flux: pull the cluster's folder as an OCI artifact "
        "whose cosign signature Flux verifies before applying anything (sourceRef is then left out).")

    @field_validator("path", "repoURL")
    @classmethod
    def _required_by_tool(cls, value: Any, info: ValidationInfo) -> Any:
        tool = info.data.get("tool")
        needed = {"path": ("argocd", "flux"), "repoURL": ("argocd",)}[info.field_name]
        if value is None and tool in needed:
            # The "missing" type makes the finding a GC202, positioned at spec.delivery like any missing field.
            raise PydanticCustomError("missing", "Field required")
        if value is not None and info.field_name == "repoURL" and tool not in (None, "argocd"):
            raise PydanticCustomError("delivery_tool", f"repoURL is an Argo CD setting, but tool is {tool}")
        if isinstance(value, str) and info.field_name == "path" and ".." in value.split("/"):
            raise PydanticCustomError("repo_path", "path must stay inside the repository (no '..')")
        return value

    @field_validator("target_revision", "project", "destination", "signed_commits", *_FLUX_ONLY)
    @classmethod
    def _belongs_to_tool(cls, value: Any, info: ValidationInfo) -> Any:
        tool = info.data.get("tool")
        if value is None or tool is None:
            return value
        if info.field_name in _ARGOCD_ONLY and tool != "argocd":
            raise PydanticCustomError("delivery_tool", f"{_ARGOCD_ONLY[info.field_name]} is an Argo CD setting, "
                                                       f"but tool is {tool}")
        if info.field_name in _FLUX_ONLY and tool != "flux":
            raise PydanticCustomError("delivery_tool", f"{_FLUX_ONLY[info.field_name]} is a Flux setting, "
                                                       f"but tool is {tool}")
        taken = {"signed_commits": ("project", "signedCommits renders the cluster's own AppProject (<cluster>-gpu), "
                                               "which the Applications use: leave project out"),
                 "oci_artifact": ("source_ref", "ociArtifact is the source of the rendered folder: leave sourceRef "
                                                "out")}.get(info.field_name)
        if taken is not None and info.data.get(taken[0]) is not None:
            raise PydanticCustomError("delivery_tool", taken[1])
        return value


# --- queueing (Kueue) ------------------------------------------------------------------------------------------

#: The resource.Quantity grammar without a sign (gpuconf/quantity.py, as the API server parses it; stricter than the CRDs'
#: pattern, which also lets through the fractional exponents ParseQuantity refuses): Kueue's webhook rejects negative
#: quotas (pkg/webhooks/clusterqueue_webhook.go, validateResourceQuantity).
QUANTITY = quantity.UNSIGNED


def _quantity(value: Any) -> Union[int, str]:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX:  # an IntOrString
        return value
    if isinstance(value, str) and re.fullmatch(QUANTITY, value) and quantity.is_quantity(value):
        return value  # fullmatch: `$` also matches before a newline
    raise PydanticCustomError("quantity", "must be a Kubernetes quantity such as 64, 500m or 512Gi (not negative)")


Quantity = Annotated[Any, PlainValidator(_quantity), WithJsonSchema({
    "oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": QUANTITY}],
    "description": "A Kubernetes quantity: 64, 500m, 1.5, 512Gi.",
})]


class KueuePreemption(Strict):
    """What a pending workload may preempt (every ClusterQueue gets these, stated explicitly)."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = Field(
        "LowerPriority", description="A workload over its team's nominal quota may preempt the team's own workloads "
                                     "of lower priority.")
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = Field(
        "Any", description="A workload within its team's nominal quota may preempt other teams' workloads that "
                           "borrowed it (Any: whatever their priority).")
    borrow_within_cohort: Literal["Never", "LowerPriority"] = Field(
        "Never", description="A workload that needs to borrow may preempt lower-priority workloads of other teams.")


class KueueTeam(Strict):
    """A team's ClusterQueue beyond its quota: borrowing and lending per pool, and its non-GPU resources."""

    borrowing_limit: Dict[Name, QuotaValue] = Field(
        default_factory=dict, max_length=MAX_ITEMS, description="Per pool of the team's quota (same shape as quota): units the team may "
                                          "borrow from the cohort above its quota; omitted: no limit.")
    lending_limit: Dict[Name, QuotaValue] = Field(
        default_factory=dict, max_length=MAX_ITEMS, description="Per pool of the team's quota: units of its unused quota other teams may "
                                          "borrow; omitted: all of it.")
    other_resources: Dict[NonEmpty, Quantity] = Field(
        default_factory=dict, max_length=MAX_LABELS, description="Non-GPU resources the team's ClusterQueue covers, with the team's quota "
                                          "(e.g. cpu: 256, memory: 2Ti); on no particular pool.")


class Kueue(Strict):
    """Team queueing with Kueue: a ResourceFlavor per pool, a ClusterQueue per team, a LocalQueue per namespace."""

    version: NonEmpty = Field(description="The Kueue release installed in the cluster (gpuconf has its CRDs), "
                                          "e.g. v0.19.2.")
    cohort: Optional[K8sObjectName] = Field(
        None, description="Cohort of the teams' ClusterQueues: they lend each other unused quota. Omit for no "
                          "borrowing.")
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = Field(
        "BestEffortFIFO", description="Order of each ClusterQueue's pending workloads.")
    preemption: KueuePreemption = Field(default_factory=KueuePreemption, description="Preemption policy.")
    quota_check_strategy: Literal["BlockUndeclared", "IgnoreUndeclared"] = Field(
        "BlockUndeclared", description="As your Kueue Configuration's resources.quotaCheckStrategy: "
                                       "BlockUndeclared (Kueue's default) leaves pods pending that request a resource "
                                       "their ClusterQueue does not cover.")
    exclude_resource_prefixes: Optional[List[NonEmpty]] = Field(
        None, max_length=MAX_ITEMS, examples=[["ephemeral-storage", "hugepages-"]],
        description="As your Kueue Configuration's resources.excludeResourcePrefixes: resources whose names start so "
                    "Kueue leaves out of quota accounting. Omitted: ephemeral-storage and hugepages- under "
                    "BlockUndeclared (which no queue covers: a pod requesting them would stay pending), none under "
                    "IgnoreUndeclared (Kueue refuses the two together). REPORT.md gives the Configuration.")
    resource_quotas: bool = Field(False, description="Also render the per-namespace ResourceQuotas (hard ceilings "
                                                     "for pods Kueue does not queue).")
    teams: Dict[Name, KueueTeam] = Field(default_factory=dict, max_length=MAX_ITEMS,
                                         description="Team name -> its queue settings.")


class Queueing(Strict):
    """How GPU workloads wait for quota. Without it, ResourceQuotas alone limit the teams."""

    kueue: Optional[Kueue] = Field(None, description="Queue the teams' Jobs with Kueue.")


class Spec(Strict):
    """Everything gpuconf needs to know about one cluster."""

    cluster: Cluster
    operator: Operator
    driver: Driver = Field(default_factory=Driver)
    gpu_models: Dict[ModelId, DeclaredGpu] = Field(
        default_factory=dict, max_length=MAX_ITEMS,
        description="GPU models the catalogue lacks (no MIG), by id; pools name them in `gpu`.")
    sharing_profiles: Dict[Name, SharingProfile] = Field(default_factory=dict, max_length=MAX_ITEMS, description="Named sharing profiles pools refer to.")
    pools: List[Pool] = Field(min_length=1, max_length=MAX_ITEMS, description="GPU node pools.")
    teams: List[Team] = Field(default_factory=list, max_length=MAX_ITEMS,
                              description="The teams that use the GPUs: their namespaces, quotas and priority.")
    access: Optional[Access] = None
    monitoring: Optional[Monitoring] = None
    overrides: List[Override] = Field(default_factory=list, max_length=MAX_ITEMS, description="Escape hatch: raw chart values, each with a reason.")
    delivery: Delivery = Field(default_factory=Delivery, description="GitOps delivery: Argo CD, Flux or none (default).")
    queueing: Optional[Queueing] = Field(None, description="Team queueing (Kueue); default: ResourceQuotas only.")
    security: Optional[Security] = Field(None, description="Admission policy for the operator's images.")
    compute_domains: Optional[ComputeDomains] = Field(None, description="The DRA driver release for nvlink pools "
                                                                        "(devicePlugin stack; defaults apply).")

    @property
    def admission(self) -> str | None:
        """spec.security.admission, None when there is no security block."""
        return self.security.admission if self.security is not None else None

    @field_validator("teams")
    @classmethod
    def _team_namespaces(cls, teams: List[Team]) -> List[Team]:
        count = sum(len(team.namespaces) for team in teams)
        if count > MAX_TEAM_NAMESPACES:
            raise PydanticCustomError("too_long", "the teams own {actual} namespaces together; an intent holds at most "
                                                  "{max_length}", {"actual": count, "max_length": MAX_TEAM_NAMESPACES})
        return teams


class Metadata(Strict):
    """Identity of the intent."""

    name: Name = Field(description="Cluster name; the output folder is named after it.")
    labels: Dict[NonEmpty, str] = Field(default_factory=dict, max_length=MAX_LABELS,
                                        description="Free-form labels for fleets and reports.",
                                        examples=[{"env": "prod", "region": "eu"}])


class ClusterIntent(Strict):
    """One cluster's GPU intent."""

    api_version: Literal["gpuconf.dev/v1alpha1"] = Field(description="Always gpuconf.dev/v1alpha1.")
    kind: Literal["ClusterIntent"] = Field(description="Always ClusterIntent.")
    metadata: Metadata
    spec: Spec

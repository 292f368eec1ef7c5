"""Node facts: what NFD, GPU feature discovery (GFD), the GPU Operator and the kubelet publish on a Node.

The audit and the importer read a Node object through this module only, so every label name and value format is
written down once, with where it comes from. Sources: ../shared/reference/nvidia-formats-facts.md §2 (GFD and
control labels, read from NVIDIA/k8s-device-plugin internal/lm/*.go at v0.20.0) and gpu-operator-facts.md §7 (labels
the operator sets and reads).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .. import catalog, quantity

# --- labels ------------------------------------------------------------------------------------------------------

#: NFD's PCI labels of an NVIDIA device. The GPU Operator configures NFD with `deviceLabelFields: [vendor]`, which
#: gives `pci-10de.present`; the operator also accepts the class forms (gpu-operator-facts §7, the operator's
#: gpuNodeLabels in controllers/state_manager.go), so all three count.
NFD_GPU_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)
#: Set to "true" by the operator on a node with an NVIDIA PCI label ("false" once the GPU is gone).
GPU_PRESENT = "nvidia.com/gpu.present"

# GFD labels (nvidia-formats-facts §2.1). The product is the NVML device name sanitised by GFD's sanitise(): characters
# outside [A-Za-z0-9-_. ] dropped, runs of spaces joined by "-"; "-SHARED" is appended when the resource is
# replicated and not renamed; under the single MIG strategy it is "<model>-MIG-<profile>" (or "-MIG-INVALID").
GFD_PRODUCT = "nvidia.com/gpu.product"
GFD_COUNT = "nvidia.com/gpu.count"
GFD_REPLICAS = "nvidia.com/gpu.replicas"
GFD_SHARING = "nvidia.com/gpu.sharing-strategy"  # none | time-slicing | mps
GFD_MEMORY = "nvidia.com/gpu.memory"  # MiB
GFD_MACHINE = "nvidia.com/gpu.machine"  # the sanitised DMI product name
GFD_MIG_STRATEGY = "nvidia.com/mig.strategy"  # single | mixed, only published when the strategy is not none
GFD_MIG_CAPABLE = "nvidia.com/mig.capable"
#: Driver version labels, newest first: `cuda.driver-version.*` (with `.full`) and the deprecated `cuda.driver.*`
#: (internal/lm/nvml.go newVersionLabeler writes both sets with the same values).
DRIVER_FULL = "nvidia.com/cuda.driver-version.full"
DRIVER_PARTS = (
    ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor",
     "nvidia.com/cuda.driver-version.revision"),
    ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"),
)
#: Written by the MIG manager: pending | rebooting | success | failed (nvidia-formats-facts §2.2).
MIG_STATE = "nvidia.com/mig.config.state"
MIG_IN_PROGRESS = ("pending", "rebooting")
#: The value mig-manager gives the operand deploy labels while it reconfigures MIG (mig-parted reconfigure:
#: maybeSetPaused), and puts back to "true" when it is done (maybeSetTrue); a `false` it leaves alone.
PAUSED_FOR_MIG = "paused-for-mig-change"
#: The same for a driver reload: k8s-driver-manager pauses the operands with this value, then restores them.
PAUSED_FOR_DRIVER = "paused-for-driver-upgrade"
DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
#: `nvidia.com/gpu.deploy.operands=false` is the user's switch that removes every operand from a node (§7); the
#: operator then deletes every other deploy label.
DEPLOY_OPERANDS = "nvidia.com/gpu.deploy.operands"
DEPLOY_DRIVER = "nvidia.com/gpu.deploy.driver"
#: What k8s-driver-manager writes into the driver's deploy label when it finds a driver on the host
#: (cmd/driver-manager disableContainerizedDriver): the operator's driver stays off, as with `false`.
DRIVER_PREINSTALLED = "pre-installed"
#: The operand deploy labels the operator adds to every GPU node of the container workload (controllers/
#: state_manager.go gpuStateLabels, v26.3.3 and v26.7.0; gpu-operator-facts §7): the operands the node's GPUs need,
#: then the monitoring ones, whose absence costs metrics rather than GPUs. v26.7.0 adds `client` (not judged).
GPU_OPERANDS = ("driver", "container-toolkit", "device-plugin", "gpu-feature-discovery", "operator-validator")
MONITORING_OPERANDS = ("dcgm", "dcgm-exporter", "node-status-exporter")
#: The deploy labels of the GPUCluster (DRA) stack (gpu-operator v26.7.0 controllers/state_manager.go; dra facts §4).
DRA_GPU_OPERANDS = ("driver", "dra-driver", "dra-validator")
DRA_MONITORING_OPERANDS = ("dcgm-dra", "dcgm-exporter-dra")
#: Added only on MIG-capable GPUs (state_manager.go hasMIGCapableGPU: nvidia.com/mig.capable=true).
MIG_MANAGER = "mig-manager"
#: Every deploy label mig-manager or the driver manager may pause on a container-workload node (their operand lists:
#: mig-parted pkg/mig/reconfigure, k8s-driver-manager cmd/driver-manager), read by label, not by scanning them all.
PAUSABLE = tuple(DEPLOY_PREFIX + op for op in (*GPU_OPERANDS, *MONITORING_OPERANDS, MIG_MANAGER, "client", "nvsm"))
#: The operator's driver upgrade state machine (gpu-operator-facts §7; k8s-operator-libs pkg/upgrade/consts.go):
#: "upgrade-done" when idle, "" (or no label) when the node was never processed, "upgrade-failed" after a failure.
#: In "upgrade-required" the node only waits for its wave: nothing has been done to it yet.
UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_DONE = "upgrade-done"
UPGRADE_FAILED = "upgrade-failed"
UPGRADE_REQUIRED = "upgrade-required"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
#: Taints the kubelet, the node lifecycle controller, cloud providers, autoscalers and drains set: never a pool's
#: own, and tolerated by DaemonSets or reported through other findings (NotReady, cordoned).
SYSTEM_TAINT_PREFIXES = ("node.kubernetes.io/", "node-role.kubernetes.io/", "node.cloudprovider.kubernetes.io/",
                         "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler",
                         "karpenter.sh/disrupted", "karpenter.sh/unregistered")
#: The GPU taint GKE puts on GPU node pools (value `present`) and EKS/Karpenter examples use (value `true`): the
#: chart's default operand and NFD-worker tolerations cover it (key nvidia.com/gpu, Exists, NoSchedule), and the
#: render keeps those defaults (platform-facts.md §0, §1, Karpenter).
GPU_TAINT = ("nvidia.com/gpu", "NoSchedule")
#: Labels cloud providers and node-group tools put on every node of a group: what `gpuconf import` groups pools by.
NODE_GROUP_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
    "node.cluster.x-k8s.io/machine-deployment",  # not standard everywhere; harmless when absent
    "cluster.x-k8s.io/deployment-name",
)


def mig_resource_label(profile: str, suffix: str) -> str:
    """GFD's per-profile label under the mixed strategy: nvidia.com/mig-<profile>.<suffix> ("+" becomes ".")."""
    return f"nvidia.com/mig-{profile.replace('+', '.')}.{suffix}"


# --- facts of one node -------------------------------------------------------------------------------------------


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much, for 10,000 nodes
class NodeFacts:
    """The parts of a Node object the audit and the importer read; the rest of the object is dropped."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    unschedulable: bool
    ready: str  # "True", "False", "Unknown", or "absent" when the kubelet never posted the condition
    ready_reason: str
    allocatable: Mapping[str, str]  # as the API server wrote them ("8", "191450m")
    capacity: Mapping[str, str]
    kubelet_version: str
    # status.nodeInfo, for the known hazards (gpuconf.hazards): OS image, kernel, runtime and architecture
    os_image: str = ""
    kernel_version: str = ""
    container_runtime: str = ""
    architecture: str = ""

    @property
    def gpu(self) -> bool:
        """True when NFD saw an NVIDIA PCI device, the operator marked the node, or GFD labelled a GPU product."""
        labels = self.labels
        return (any(labels.get(key) == "true" for key in NFD_GPU_LABELS) or labels.get(GPU_PRESENT) == "true"
                or GFD_PRODUCT in labels)

    @property
    def is_ready(self) -> bool:
        """True when the kubelet reports the Ready condition as True."""
        return self.ready == "True"

    @property
    def cordoned(self) -> bool:
        """True when the node takes no new pods (kubectl cordon, a drain, or the driver upgrade's cordon)."""
        return self.unschedulable or any(t[0] == UNSCHEDULABLE_TAINT for t in self.taints)

    def units(self, resource: str) -> int | None:
        """Allocatable units of a resource, read as the quantity the API server wrote ("1k" is 1000); None when
        absent or not a whole number."""
        return quantity.count(self.allocatable.get(resource))

    def capacity_units(self, resource: str) -> int | None:
        """Capacity units of a resource, read as a quantity; None when absent or not a whole number."""
        return quantity.count(self.capacity.get(resource))

    def label_int(self, key: str) -> int | None:
        """A label read as a whole number (GFD counts), or None."""
        return _count(self.labels.get(key))


def _count(value: Any) -> int | None:
    # A label's count (GFD writes digits). Bounded: a label of thousands of digits is no count (and int() refuses
    # over 4,300 digits).
    if isinstance(value, str) and len(value) <= 18 and value.isdigit():
        return int(value)
    return None


# --- the shape of a Node object ----------------------------------------------------------------------------------

#: Node names are DNS-1123 subdomains (the API server's ValidateNodeName); nothing else comes from a real cluster.
#: Checked for their characters and ends, which is what matters for printing them.
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
#: A resource.Quantity as the API server serialises it (gpuconf/quantity.py); 64 characters is far beyond any real one.
_QUANTITY = re.compile(quantity.GRAMMAR)
_MAX_QUANTITY = 64
#: What an API server accepts as a label (apimachinery validation: IsQualifiedName for keys, IsValidLabelValue for
#: values): a node that carries anything else was not read from one.
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_KEY = re.compile(rf"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_LABEL_NAME}")
_LABEL_VALUE = re.compile(rf"({_LABEL_NAME})?")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), "null" if value is None else type(value).__name__)


#: Label keys and values already found valid: the nodes of one cluster repeat them (a 5,000-node list holds a million
#: labels and a few thousand distinct ones), so a set lookup in C replaces most of the matches. Bounded.
_VALID_KEYS: set[str] = set()
_VALID_VALUES: set[str] = set()
_VALID_MAX = 1 << 16


def _label_problem(labels: Mapping[str, str]) -> str | None:
    """The first label an API server would refuse, said as a problem of the node; None when all are valid."""
    keys, values = _VALID_KEYS, _VALID_VALUES
    if keys.issuperset(labels) and values.issuperset(labels.values()):
        return None
    for k, v in labels.items():
        if k not in keys:
            if not (_LABEL_KEY.fullmatch(k) and (k.find("/") == -1 and len(k) <= 63 or
                                                  len(k.partition("/")[0]) <= 253)):
                return f"metadata.labels key {k[:80]!r} is not a label key an API server accepts"
            if len(keys) < _VALID_MAX:
                keys.add(k)
        if v not in values:
            if len(v) > 63 or not _LABEL_VALUE.fullmatch(v):
                return (f"metadata.labels[{k[:80]!r}] value {v[:80]!r} is not a label value an API server accepts "
                        "(at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)")
            if len(values) < _VALID_MAX:
                values.add(v)
    return None


def check_node(node: Mapping[str, Any]) -> str | None:
    """What makes a Node object unreadable (a field of another JSON type, a name or quantity no API server writes),
    or None. The fields checked are the ones the audit and the importer rely on; absent and null fields are fine.
    The common case runs in C where it can (str.join, map), as it runs on every node."""
    parts = {}
    for key in ("metadata", "spec", "status"):
        value = node.get(key)
        if value is not None and type(value) is not dict:
            return f"{key} is {_kind(value)}, not an object"
        parts[key] = value or _EMPTY
    meta, spec, status = parts["metadata"], parts["spec"], parts["status"]
    name = meta.get("name")
    if name is not None and not (type(name) is str and len(name) <= 253 and _NODE_NAME.fullmatch(name)):
        shown = repr(name[:80]) + ("..." if len(name) > 80 else "") if isinstance(name, str) else _kind(name)
        return f"metadata.name {shown} is not a node name (a DNS-1123 subdomain of at most 253 characters)"
    for where, parent, key in (("metadata", meta, "labels"),
                               ("status", status, "allocatable"), ("status", status, "capacity")):
        value = parent.get(key)
        if value is None:
            continue
        if type(value) is not dict:
            return f"{where}.{key} is {_kind(value)}, not an object"
        if not value:
            continue
        try:
            "".join(value.values())  # in C: a TypeError names no key, the slow path below does
        except TypeError:
            k, v = next((k, v) for k, v in value.items() if type(v) is not str)
            return f"{where}.{key}[{k[:80]!r}] is {_kind(v)}, not a string"
        if key == "labels":
            problem = _label_problem(value)
            if problem:
                return problem
        if where == "status":
            # Any quantity may be long (int() refuses 4,300 digits); the GPU resources are read, so their form too.
            bad = [k for k, v in value.items() if len(v) > _MAX_QUANTITY] if max(map(len, value.values())) > \
                _MAX_QUANTITY else [k for k in value if k.startswith("nvidia.com/") and not _QUANTITY.fullmatch(value[k])]
            if bad:
                v = value[bad[0]]
                shown = f"{len(v)} characters" if len(v) > _MAX_QUANTITY else repr(v)
                return f"status.{key}[{bad[0][:80]!r}] is not a Kubernetes quantity ({shown})"
    for where, parent, key, fields in (("spec", spec, "taints", ("key", "value", "effect")),
                                       ("status", status, "conditions", ("type", "status", "reason"))):
        value = parent.get(key)
        if value is None:
            continue
        if type(value) is not list:
            return f"{where}.{key} is {_kind(value)}, not a list"
        for i, item in enumerate(value):
            if type(item) is not dict:
                return f"{where}.{key}[{i}] is {_kind(item)}, not an object"
            for f in fields:
                if item.get(f) is not None and type(item[f]) is not str:
                    return f"{where}.{key}[{i}].{f} is {_kind(item[f])}, not a string"
    unschedulable = spec.get("unschedulable")
    if unschedulable is not None and type(unschedulable) is not bool:
        return f"spec.unschedulable is {_kind(unschedulable)}, not a boolean"
    info = status.get("nodeInfo")
    if info is not None:
        if type(info) is not dict:
            return f"status.nodeInfo is {_kind(info)}, not an object"
        if info.get("kubeletVersion") is not None and type(info["kubeletVersion"]) is not str:
            return f"status.nodeInfo.kubeletVersion is {_kind(info['kubeletVersion'])}, not a string"
    return None


def facts(node: Mapping[str, Any]) -> NodeFacts:
    """Read one Node object (as the API server or `kubectl get -o json` writes it)."""
    meta = node.get("metadata") or _EMPTY
    spec = node.get("spec") or _EMPTY
    status = node.get("status") or _EMPTY
    ready, reason = "absent", ""
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            ready, reason = str(cond.get("status", "Unknown")), str(cond.get("reason", ""))
            break
    info = status.get("nodeInfo") if isinstance(status.get("nodeInfo"), dict) else _EMPTY
    raw_taints = spec.get("taints")
    taints = tuple((str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
                   for t in raw_taints if isinstance(t, dict)) if raw_taints else ()
    return NodeFacts(
        str(meta.get("name", "")),
        _map(meta.get("labels")),
        _map(meta.get("annotations")),
        taints,
        spec.get("unschedulable") is True,
        ready,
        reason,
        _map(status.get("allocatable")),
        _map(status.get("capacity")),
        str(info.get("kubeletVersion", "")),
        str(info.get("osImage", "")),
        str(info.get("kernelVersion", "")),
        str(info.get("containerRuntimeVersion", "")),
        str(info.get("architecture", "")),
    )


_EMPTY: Mapping[str, Any] = {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else _EMPTY


def printable(text: str) -> str:
    """Text for one line of output: line breaks (U+2028 too) and control characters escaped. Label values, names and
    paths come from the user's environment, and must not start lines of their own in a report or a message."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def nvidia_resources(resources: Mapping[str, Any]) -> dict[str, Any]:
    """The nvidia.com/* entries of a resource list, sorted (evidence)."""
    return {k: resources[k] for k in sorted(resources) if k.startswith("nvidia.com/")}


# --- derived readings --------------------------------------------------------------------------------------------


def driver_version(labels: Mapping[str, str]) -> str | None:
    """The NVIDIA driver version GFD saw on the node ("595.91.07"), from the newest label set present."""
    full = labels.get(DRIVER_FULL)
    if full:
        return full
    for major, minor, rev in DRIVER_PARTS:
        if labels.get(major) and labels.get(minor):
            return ".".join(p for p in (labels[major], labels[minor], labels.get(rev, "")) if p)
    return None


def version_matches(actual: str, pinned: str) -> bool:
    """True when a driver version satisfies a pin: "595.91" pins the branch, "595.91.07" the exact build."""
    got, want = actual.split("."), pinned.split(".")
    return got[: len(want)] == want


def version_key(version: str) -> tuple:
    """Sort key for driver versions: numerically, part by part."""
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


def sanitise(text: str) -> str:
    """GFD's label-value sanitiser (internal/lm/resource.go sanitise): drop characters outside [A-Za-z0-9-_. ],
    then join whitespace-separated fields with "-"."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", text).split())


def base_product(product: str) -> str:
    """The GPU model part of a GFD product label: without "-MIG-<profile>" (single strategy) and "-SHARED"."""
    cut = product.find("-MIG-")
    if cut >= 0:
        product = product[:cut]
    return product.removesuffix("-SHARED")


def mig_profile_of_product(product: str) -> str | None:
    """The MIG profile in a single-strategy product label (NVIDIA-A100-SXM4-40GB-MIG-1g.5gb -> 1g.5gb), else None."""
    _, sep, profile = product.partition("-MIG-")
    profile = profile.removesuffix("-SHARED")
    return profile if sep and profile and profile != "INVALID" else None


# --- GFD product -> catalogue model ------------------------------------------------------------------------------
#
# GFD's product label is the NVML device name ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "Tesla T4"), not a
# PCI id, and the catalogue keys models by PCI id. The bridge is made of names: every model contributes token sets
# from its id (H100-80GB), its marketing name (NVIDIA H100 80GB), its GFD product labels where known and each of its
# pci.ids device names (H100 SXM5 80GB, H100 PCIe, H800); a model the intent declares contributes the same. Names
# are cut into upper-case alphanumeric tokens; the vendor words NVIDIA and TESLA are dropped. A model matches a product when one of its token sets is contained in the product's tokens; the model with the
# largest such set wins (so H200 NVL beats H200 for "NVIDIA-H200-NVL", and "NVIDIA-H20" never matches H200: tokens
# compare whole). When no set fits, a model whose family token (the first token with a digit: A100, H100, PG506) is
# the product's, and whose memory does not contradict a memory token of the product or GFD's gpu.memory label, is
# taken when it is the only one. Anything else is "unknown" rather than a guess.

Models = tuple  # of catalog.GpuModel: the catalogue's, plus those an intent declares (spec.gpuModels)


def _tokens(text: str) -> frozenset[str]:
    return frozenset(catalog.name_tokens(text))


@functools.cache
def _model_token_sets(models: Models) -> tuple[tuple[str, frozenset[str]], ...]:
    out = []
    for model in models:
        for name in catalog.model_names(model):
            tokens = _tokens(name)
            if tokens:
                out.append((model.id, tokens))
    return tuple(out)


@functools.cache
def _families(models: Models) -> dict[str, tuple[str, ...]]:
    out: dict[str, set[str]] = {}
    for model in models:
        family = catalog.family_token(catalog.name_tokens(model.id))
        if family:
            out.setdefault(family, set()).add(model.id)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def known_models(declared: Models = ()) -> Models:
    """The catalogue's models followed by the declared ones: what a product label may name."""
    return (*catalog.gpu_models().values(), *declared)


def product_matches(product: str, declared: Models = ()) -> dict[str, int]:
    """Model id -> the size of its largest name's token set that a product label's tokens contain."""
    tokens = _tokens(base_product(product))
    best: dict[str, int] = {}
    for model_id, model_tokens in _model_token_sets(known_models(declared)):
        if model_tokens <= tokens:
            best[model_id] = max(best.get(model_id, 0), len(model_tokens))
    return best


@functools.cache
def model_for_product(product: str, memory_mib: int | None = None, declared: Models = ()) -> str | None:
    """The model id of a GFD product label, or None when the name maps to no single model."""
    if not product:
        return None
    models = known_models(declared)
    base = base_product(product)
    tokens = _tokens(base)
    best = product_matches(product, declared)
    if best:
        top = max(best.values())
        winners = sorted(m for m, n in best.items() if n == top)
        return winners[0] if len(winners) == 1 else None
    family = catalog.family_token(catalog.name_tokens(base))
    by_id = {m.id: m for m in models}
    candidates = [m for m in _families(models).get(family or "", ()) if _memory_fits(by_id[m], tokens, memory_mib)]
    return candidates[0] if len(candidates) == 1 else None


def _memory_fits(model: catalog.GpuModel, tokens: frozenset[str], memory_mib: int | None) -> bool:
    """False when the product's NNGB token or GFD's memory label contradicts the model's memory."""
    if model.memory_gib is None:
        return True
    for token in tokens:
        m = re.fullmatch(r"(\d+)GB?", token)
        if m and abs(int(m.group(1)) - model.memory_gib) > 0.15 * model.memory_gib:
            return False
    if memory_mib is not None and abs(memory_mib / 1024 - model.memory_gib) > 0.15 * model.memory_gib:
        return False
    return True


def node_model(labels: Mapping[str, str], declared: Models = ()) -> str | None:
    """The model of a node's GPUs (catalogue or declared), from GFD's product (and memory) labels."""
    product = labels.get(GFD_PRODUCT)
    if not product:
        return None
    memory = labels.get(GFD_MEMORY)
    # Under the single MIG strategy gpu.memory is the MIG device's memory, not the GPU's: no use for the model.
    usable = memory and memory.isdigit() and "-MIG-" not in product
    return model_for_product(product, int(memory) if usable else None, declared)

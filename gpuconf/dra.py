"""Dynamic Resource Allocation (spec.cluster.allocation: dra): the facts gpuconf needs about the NVIDIA DRA driver and
the names it derives from them (DeviceClasses, quota keys, feature gates), shared by the rules, renderers and report.

Sources (keys of ../shared/reference/dra/facts.md §0): K-api (Kubernetes OpenAPI in kubernetes-validate 1.37.0), DRV
(kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 and main), GO (NVIDIA/gpu-operator v26.7.0), NV-docs, KW-quota, KUEUE.
Importing this module reads nothing; the CEL runtime (cel-python) is imported on first use.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable, Mapping

#: The driver name of the GPU half of the NVIDIA DRA driver (DRV deviceclass-gpu.yaml: device.driver).
DRIVER = "gpu.nvidia.com"
#: The attribute domain the driver publishes under (DRV cmd/gpu-kubelet-plugin/deviceinfo.go).
DOMAIN = "gpu.nvidia.com"
#: The first Kubernetes minor release serving resource.k8s.io/v1 by default (KW-setup 1.34; KW-gate: GA).
MIN_KUBERNETES = (1, 34)
#: The driver's opaque-config API (DRV api/.../api.go) and its kinds used here.
CONFIG_API = "resource.nvidia.com/v1beta1"
#: The deviceclass quota key suffix (KW-quota: `<deviceclass>.deviceclass.resource.k8s.io/devices`).
QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
#: Prefix of every DeviceClass gpuconf renders (operator's own classes are gpu.nvidia.com, mig.nvidia.com, ...).
CLASS_PREFIX = "gpuconf-"
#: Kueue v0.19.2 pkg/config/validation.go validateDeviceClassMappings: at most 16 mappings, and each name and each
#: device class name a label key (an optional DNS-subdomain prefix and a name of at most 63 characters).
KUEUE_MAX_MAPPINGS = 16
#: Kueue v0.18 renamed the alpha gate DynamicResourceAllocation to KueueDRAIntegration and made it beta, on by default
#: (KUEUE pkg/features/kube_features.go).
KUEUE_MIN_VERSION = (0, 18)

#: Attributes the driver publishes per device type, in domain gpu.nvidia.com (DRV deviceinfo.go, mig.go on main;
#: DRV-docs resourceslice-attributes.md). A selector may read only these: an unknown field aborts allocation (K-api
#: CELDeviceSelector). MIG devices carry their parent's product, architecture and version attributes.
ATTRIBUTES = {
    "gpu": ("type", "uuid", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion",
            "cudaDriverVersion", "addressingMode"),
    "mig": ("type", "uuid", "profile", "parentUUID", "productName", "brand", "architecture", "cudaComputeCapability",
            "driverVersion", "cudaDriverVersion"),
}
#: Driver feature gates each sharing strategy needs (DRV validate.go: TimeSlicing needs TimeSlicingSettings, MPS needs
#: MPSSupport; facts §2.5), and the gate of dynamic MIG (DRV-docs feature-gates.md, mig.md).
GATE_TIME_SLICING = "TimeSlicingSettings"
GATE_MPS = "MPSSupport"
GATE_DYNAMIC_MIG = "DynamicMIG"
#: Gate pairs the driver refuses at startup (DRV pkg/featuregates/featuregates.go).
EXCLUSIVE_GATES = ((GATE_DYNAMIC_MIG, GATE_MPS),)

#: The values the GPUCluster template reads (GO templates/gpucluster.yaml: draDriver.*, dcgm.*, dcgmExporter.*,
#: hostPaths.*, daemonsets). Besides these, the chart still renders the operator, NFD and the NVIDIADriver objects.
GPUCLUSTER_VALUES = ("draDriver", "dcgm", "dcgmExporter", "hostPaths", "daemonsets")
#: Top-level values only the ClusterPolicy template reads (GO templates/clusterpolicy.yaml): operands the DRA stack
#: does not run (NV-docs: the device plugin, toolkit, GFD, MIG Manager, sandbox and vGPU operands are not managed).
CLUSTERPOLICY_ONLY_VALUES = ("ccManager", "cdi", "devicePlugin", "gfd", "kataManager", "kataSandboxDevicePlugin",
                             "mig", "migManager", "nodeStatusExporter", "sandboxDevicePlugin", "sandboxWorkloads",
                             "toolkit", "validator", "vfioManager", "vgpuDeviceManager", "vgpuManager")
#: Node label prefixes GFD publishes (gpu-operator-facts: GFD outputs nvidia.com/gpu.product, gpu.count, mig.capable,
#: cuda.driver.major, ...): GFD does not run on the DRA stack, so nothing puts them on a node.
GFD_LABEL_PREFIXES = ("nvidia.com/gpu.", "nvidia.com/mig.", "nvidia.com/cuda.", "nvidia.com/gfd.")
#: Labels with those prefixes that the operator itself sets on both stacks (GO nodelabeling_controller.go).
OPERATOR_LABEL_PREFIXES = ("nvidia.com/gpu.deploy.", "nvidia.com/gpu.present")

#: productName as the driver publishes it: NVML's device name, per catalogue model, every spelling of its PCI ids.
#: Source: NVIDIA/open-gpu-kernel-modules @ df1c9a3d (595.45.04) README.md "Compatible GPUs" (the product name per
#: `device subvendor subdevice`; ../shared/reference/platforms/gpu-models-extra.md, key DRV, checks that it is NVML's
#: name). A2 and A16 share device 25B6 and differ by subsystem (157E, 14A9). The README lists Turing and newer only:
#: the Volta and T4G names are the nvidia-smi names seen on nodes (gpu-models-extra.md, OBS: GFD's product label is
#: this name with spaces turned into '-'). H100-96GB (233D) is in neither, so gpuconf has no selector for it.
PRODUCT_NAMES: Mapping[str, tuple[str, ...]] = {
    "A10": ("NVIDIA A10",),
    "A100-40GB": ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PG509-200", "NVIDIA A100-PCIE-40GB", "NVIDIA A800 40GB Active"),
    "A100-80GB": ("NVIDIA A100-SXM4-80GB", "NVIDIA PG509-210", "NVIDIA A100 80GB PCIe", "NVIDIA A800-SXM4-80GB",
                  "NVIDIA A800 80GB PCIe", "NVIDIA A800 80GB PCIe LC"),
    "A10G": ("NVIDIA A10G",),
    "A16": ("NVIDIA A16",),
    "A2": ("NVIDIA A2",),
    "A30": ("NVIDIA A30",),
    "A40": ("NVIDIA A40",),
    "B200": ("NVIDIA B200",),
    "B300": ("NVIDIA B300 SXM6 AC",),
    "GB200": ("NVIDIA GB200",),
    "GB300": ("NVIDIA GB300",),
    "GH200": ("NVIDIA GH200 120GB", "NVIDIA GH200 480GB"),
    "GH200-144GB": ("NVIDIA GH200 144G HBM3e",),
    "H100-80GB": ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H800 PCIe", "NVIDIA H800"),
    "H100-NVL": ("NVIDIA H100 NVL", "NVIDIA H800 NVL"),
    "H20": ("NVIDIA H20",),
    "H200": ("NVIDIA H200",),
    "H200-NVL": ("NVIDIA H200 NVL",),
    "L20": ("NVIDIA L20",),
    "L4": ("NVIDIA L4",),
    "L40": ("NVIDIA L40",),
    "L40S": ("NVIDIA L40S",),
    "PG506-96GB": ("NVIDIA PG506-232",),
    "RTX-6000-ADA": ("NVIDIA RTX 6000 Ada Generation",),
    "RTX-A5000": ("NVIDIA RTX A5000",),
    "RTX-A6000": ("NVIDIA RTX A6000",),
    "RTX-PRO-6000": ("NVIDIA RTX PRO 6000 Blackwell Server Edition",),
    "T4": ("Tesla T4",),
    "T4G": ("NVIDIA T4G",),
    "V100-PCIE-16GB": ("Tesla V100-PCIE-16GB",),
    "V100-PCIE-32GB": ("Tesla V100-PCIE-32GB",),
    "V100-SXM2-16GB": ("Tesla V100-SXM2-16GB",),
    "V100-SXM2-32GB": ("Tesla V100-SXM2-32GB",),
    "V100S-PCIE-32GB": ("Tesla V100S-PCIE-32GB",),
}


def enabled(intent: Any) -> bool:
    """Whether the intent runs the DRA stack."""
    return intent.spec.cluster.allocation == "dra"


def product_names(model_id: str) -> tuple[str, ...]:
    """The productName spellings of a catalogue model; () when gpuconf knows none."""
    return PRODUCT_NAMES.get(model_id, ())


def profile_word(profile: str) -> str:
    """A MIG profile as part of an object name ('+' is not allowed there: 1g.10gb+me -> 1g.10gb.me)."""
    return profile.replace("+", ".")


def class_name(pool: str, profile: str | None = None) -> str:
    """The DeviceClass of a pool (gpuconf-<pool>) or of one MIG profile of it (gpuconf-<pool>-<profile>)."""
    return CLASS_PREFIX + pool + (f"-{profile_word(profile)}" if profile else "")


def quota_key(device_class: str) -> str:
    """The ResourceQuota key that counts the devices of a class (KW-quota); also the Kueue resource name."""
    return device_class + QUOTA_SUFFIX


def class_of_key(key: str) -> str | None:
    """The class a quota key counts, or None for another resource."""
    return key[:-len(QUOTA_SUFFIX)] if key.endswith(QUOTA_SUFFIX) else None


def profile_key(per_node: Iterable[str], profile: str) -> str | None:
    """The quota key of a MIG profile among a pool's keys (exact: 1g.10gb does not match 1g.10gb+me)."""
    tail = f"-{profile_word(profile)}{QUOTA_SUFFIX}"
    found = [k for k in per_node if k.endswith(tail)]
    return found[0] if len(found) == 1 else None


def _quoted(text: str) -> str:
    """A CEL string literal (single quotes; the names here hold no quote or backslash)."""
    assert "'" not in text and "\\" not in text, text
    return f"'{text}'"


def selector(model_id: str, profile: str | Iterable[str] | None = None) -> str:
    """The CEL expression of a class: the driver, the device type, the model's productNames, the MIG profile(s)."""
    attr = f"device.attributes[{_quoted(DOMAIN)}]"
    names = ", ".join(_quoted(n) for n in product_names(model_id))
    parts = [f"device.driver == {_quoted(DRIVER)}",
             f"{attr}.type == {_quoted('mig' if profile is not None else 'gpu')}",
             f"{attr}.productName in [{names}]"]
    if isinstance(profile, str):
        parts.append(f"{attr}.profile == {_quoted(profile)}")
    elif profile is not None:
        parts.append(f"{attr}.profile in [{', '.join(_quoted(p) for p in sorted(profile))}]")
    return " && ".join(parts)


def feature_gates(kinds: Iterable[str], mig_partitions: str | None) -> dict[str, bool]:
    """The driver gates the sharing in use needs, exactly (kinds: plan.sharing_kind of every pool)."""
    kinds = set(kinds)
    gates = {}
    if "time-slicing" in kinds:
        gates[GATE_TIME_SLICING] = True
    if "mps" in kinds:
        gates[GATE_MPS] = True
    if any(k.startswith("mig") for k in kinds) and mig_partitions == "dynamic":
        gates[GATE_DYNAMIC_MIG] = True
    return dict(sorted(gates.items()))


# --- CEL --------------------------------------------------------------------------------------------------------


class SelectorError(ValueError):
    """A CEL selector that does not parse or reads an attribute the driver does not publish."""


@functools.lru_cache(maxsize=None)
def _program(expression: str) -> Any:
    import sys

    import celpy  # cel-python: pure Python, so it runs wherever gpuconf does

    # celpy.Environment() raises the process's recursion limit to 2500 for good; gpuconf's other checks (deeply
    # nested hostname regexes, GC320) rely on the interpreter's own limit, so it is put back. gpuconf's selectors
    # are flat conjunctions that need no deep recursion.
    limit = sys.getrecursionlimit()
    try:
        env = celpy.Environment()
        try:
            ast = env.compile(expression)
        except Exception as exc:  # celpy raises CELParseError (and lark errors) for text that is not CEL
            raise SelectorError(f"not CEL: {str(exc).splitlines()[0]}") from None
        return ast, env.program(ast)
    finally:
        sys.setrecursionlimit(limit)


def attributes_read(expression: str) -> set[tuple[str, str]]:
    """(domain, name) of every `device.attributes['<domain>'].<name>` the expression reads."""
    from lark import Token, Tree

    ast, _ = _program(expression)
    found = set()
    for node in ast.iter_subtrees():
        if node.data != "member_dot" or len(node.children) != 2:
            continue
        inner, name = node.children
        index = _only_child(inner, "member_index")
        if index is None or not isinstance(name, Token):
            continue
        target, key = index.children
        dotted = _only_child(target, "member_dot")
        if dotted is None or str(dotted.children[1]) != "attributes":
            continue
        literal = [t for t in key.scan_values(lambda v: isinstance(v, Token) and v.type == "STRING_LIT")]
        if isinstance(key, Tree) and len(literal) == 1:
            found.add((str(literal[0])[1:-1], str(name)))
    return found


def _only_child(node: Any, data: str) -> Any:
    """node itself when it is a `data` tree, or its only child when that is one (lark wraps `member` around it)."""
    from lark import Tree

    if isinstance(node, Tree) and node.data == data:
        return node
    if isinstance(node, Tree) and len(node.children) == 1 and isinstance(node.children[0], Tree) \
            and node.children[0].data == data:
        return node.children[0]
    return None


def check_selector(expression: str, device_type: str) -> list[str]:
    """Problems of a selector: does it parse, and does it read only attributes the driver publishes for the type."""
    try:
        read = attributes_read(expression)
    except SelectorError as exc:
        return [str(exc)]
    published = set(ATTRIBUTES[device_type])
    return [f"reads {domain}/{name}, which the driver does not publish for {device_type} devices"
            for domain, name in sorted(read) if domain != DOMAIN or name not in published]


def matches(expression: str, device: Mapping[str, Any]) -> bool:
    """Evaluate a selector on one device ({driver, attributes: {domain: {name: value}}, capacity})."""
    import celpy

    _, program = _program(expression)
    from celpy import celtypes

    result = program.evaluate({"device": celpy.json_to_cel(dict(device))})
    if not isinstance(result, celtypes.BoolType):  # celpy returns a CELEvalError value for an evaluation error
        raise SelectorError(f"evaluates to {result!r}, not a bool")
    return bool(result)


def device(model_id: str, product: str, profile: str | None = None) -> dict[str, Any]:
    """The attributes the driver publishes for a device of a model (the values a selector reads)."""
    attrs = {"type": "mig" if profile else "gpu", "uuid": "GPU-0", "productName": product, "brand": "Nvidia"}
    if profile:
        attrs.update(profile=profile, parentUUID="GPU-0", uuid="MIG-0")
    return {"driver": DRIVER, "attributes": {DOMAIN: attrs}, "capacity": {}}

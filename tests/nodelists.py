"""NodeList fixtures for `gpuconf audit` and `gpuconf import`, generated from the render plan of the examples.

`python tests/nodelists.py` rewrites tests/fixtures/nodes/; a test fails when the committed files are stale, so the
fixtures always agree with what the render sets (pool labels, device-plugin and MIG config keys, taints, capacity).

Labels are written exactly as their publishers write them (../shared/reference/nvidia-formats-facts.md §2,
gpu-operator-facts.md §7):
  - NFD: feature.node.kubernetes.io/* (the GPU Operator's NFD config labels PCI devices by vendor only:
    pci-10de.present), with the nfd.node.kubernetes.io/feature-labels annotation listing them;
  - the operator: nvidia.com/gpu.present and the nvidia.com/gpu.deploy.* operand labels (driver=false preset on
    preinstalled pools, mig-manager only on MIG-capable GPUs);
  - GFD (k8s-device-plugin v0.20 internal/lm): gpu.product (the sanitised NVML name, -SHARED when time-sliced and not
    renamed, -MIG-<profile> under the single strategy), gpu.count/replicas/sharing-strategy/memory/family/
    compute.*/machine/mode, cuda.driver-version.* and the deprecated cuda.driver.*, cuda.runtime*, mig.capable,
    mig.strategy, mps.capable, and nvidia.com/mig-<profile>.* under the mixed strategy;
  - the MIG manager: nvidia.com/mig.config.state;
  - the kubelet: status.images with the operand images a GPU node pulled, from the chart's defaults through the
    registry mirror (the validator is `<registry>/gpu-operator:<chart version>`), and NFD's worker on every node.

Drifted variants inject one problem per node (DRIFTS) and list the findings the audit must report.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "nodes"
EXAMPLES = ("heterogeneous", "hybrid", "airgapped", "single-pool")
STAMP = "2026-09-01T08:00:00Z"

# What NVML reports for each model on the nodes (sanitised by GFD), with its memory in MiB. The audit maps these
# names back to catalogue models by its own heuristic; these are the names real nodes carry.
GPUS = {
    "H100-80GB": ("NVIDIA-H100-80GB-HBM3", 81559),
    "H200": ("NVIDIA-H200", 143771),
    "A100-80GB": ("NVIDIA-A100-SXM4-80GB", 81920),
    "A100-40GB": ("NVIDIA-A100-SXM4-40GB", 40960),
    "A30": ("NVIDIA-A30", 24576),
    "L4": ("NVIDIA-L4", 23034),
    "L40S": ("NVIDIA-L40S", 46068),
    "T4": ("Tesla-T4", 15360),
    # Blackwell (examples/nvl72.yaml): NVML's names as the DRA driver's productName spells them (gpuconf/dra.py
    # PRODUCT_NAMES), sanitised; the memory is profiles/gpus.json's memoryGiB in MiB, not read off a real node.
    "B200": ("NVIDIA-B200", 180 * 1024),
    "GB200": ("NVIDIA-GB200", 186 * 1024),
}
# GFD's family from the compute capability (internal/lm/resource.go getArchFamily).
FAMILIES = {"7.5": "turing", "8.0": "ampere", "8.6": "ampere", "8.9": "ada-lovelace", "9.0": "hopper",
            "10.0": "blackwell"}
CUDA = {"595": (13, 2), "580": (13, 0), "570": (12, 8)}
HOST_DRIVER = "570.172.08"  # what preinstalled pools run
MACHINES = {"eks": "p5.48xlarge", "vanilla": "PowerEdge-XE9680", "openshift": "ProLiant-DL380a-Gen11",
            "rke2": "SYS-821GE-TNHR"}
INSTANCE = {"H100-80GB": "p5.48xlarge", "A100-80GB": "p4de.24xlarge", "A100-40GB": "p4d.24xlarge",
            "L4": "g6.12xlarge", "T4": "g4dn.12xlarge"}
CPUID = ("ADX AESNI AVX AVX2 AVX512BW AVX512CD AVX512DQ AVX512F AVX512VL AVX512VNNI CMPXCHG8 FMA3 FSRM FXSR "
         "FXSROPT GFNI IBPB LAHF MOVBE OSXSAVE SHA SPEC_CTRL_SSBD STIBP SYSCALL SYSEE VAES VMX VPCLMULQDQ X87 "
         "XGETBV1 XSAVE XSAVEC XSAVEOPT XSAVES").split()
# The operand deploy labels the operator adds to a GPU node (controllers/state_manager.go gpuStateLabels; v26.7.0 adds
# `client`), mig-manager on MIG-capable GPUs.
OPERANDS = ("container-toolkit", "dcgm", "dcgm-exporter", "device-plugin", "driver", "gpu-feature-discovery",
            "node-status-exporter", "operator-validator")


def _h(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def load_plan(example: str):
    """The render plan of examples/<example>.yaml."""
    from gpuconf import plan as P
    from gpuconf.intent.validate import validate_path

    path = ROOT / "examples" / f"{example}.yaml"
    result = validate_path(path, f"examples/{example}.yaml")
    assert result.ok, result.findings
    return P.build(result.intent, f"examples/{example}.yaml", result.document)


#: A cluster no example has: the single MIG strategy with a layout that is not a preset (4 of the H200's 7 1g.18gb
#: slices per GPU). GFD then counts MIG devices, not GPUs, and shows no per-GPU layout.
SINGLE_MIG = """apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata: {name: mig-lab}
spec:
  cluster: {kubernetesVersion: "1.33"}
  operator: {chartVersion: v26.7.0}
  sharingProfiles:
    quarter: {mig: {layout: {"1g.18gb": 4}}}
  pools:
    - {name: h200, gpu: H200, gpusPerNode: 8, nodes: 2, match: {pciDevice: true}, sharing: quarter}
"""


def plan_of(text: str, source: str = "intent.yaml"):
    """The render plan of an intent given as text."""
    from gpuconf import plan as P
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    result = validate_document(load_text(text, source))
    assert result.ok, [f.text() for f in result.findings]
    return P.build(result.intent, source, result.document)


# --- one node ----------------------------------------------------------------------------------------------------


@dataclass
class Spec:
    """What one generated node is: its name, GPU, pool (None: a plain node) and driver."""

    name: str
    model: str | None = None
    gpus: int = 0
    pool: object = None  # PoolPlan
    driver: str | None = None
    group: str | None = None  # the node group (EKS nodegroup) the node came from
    index: int = 0


def _nfd_labels(spec: Spec, plan) -> dict[str, str]:
    prefix = "feature.node.kubernetes.io/"
    labels = {f"{prefix}cpu-cpuid.{flag}": "true" for flag in CPUID}
    labels.update({
        f"{prefix}cpu-cstate.enabled": "true",
        f"{prefix}cpu-hardware_multithreading": "true",
        f"{prefix}cpu-model.family": "6",
        f"{prefix}cpu-model.id": "143",
        f"{prefix}cpu-model.vendor_id": "Intel",
        f"{prefix}cpu-pstate.scaling_governor": "performance",
        f"{prefix}cpu-pstate.status": "active",
        f"{prefix}cpu-pstate.turbo": "true",
        f"{prefix}kernel-config.NO_HZ": "true",
        f"{prefix}kernel-config.NO_HZ_IDLE": "true",
        f"{prefix}kernel-version.full": "6.8.0-1015-aws" if _dist(plan) == "eks" else "6.8.0-60-generic",
        f"{prefix}kernel-version.major": "6",
        f"{prefix}kernel-version.minor": "8",
        f"{prefix}kernel-version.revision": "0",
        f"{prefix}memory-numa": "true",
        f"{prefix}storage-nonrotationaldisk": "true",
        f"{prefix}system-os_release.ID": "ubuntu",
        f"{prefix}system-os_release.VERSION_ID": "24.04",
        f"{prefix}system-os_release.VERSION_ID.major": "24",
        f"{prefix}system-os_release.VERSION_ID.minor": "04",
        f"{prefix}pci-1d0f.present" if _dist(plan) == "eks" else f"{prefix}pci-15b3.present": "true",
    })
    if spec.model:
        labels[f"{prefix}pci-10de.present"] = "true"
    return labels


def _dist(plan) -> str:
    return plan.intent.spec.cluster.distribution


def _kubelet(plan) -> str:
    return f"v{plan.intent.spec.cluster.kubernetes_version}.4"


def _gfd_labels(spec: Spec, plan) -> dict[str, str]:
    from gpuconf import catalog
    from gpuconf import plan as P

    model = catalog.gpu_model(spec.model)
    product, memory = GPUS[spec.model]
    major, minor = model.compute_capability.split(".")
    driver = spec.driver
    d_major, d_minor, d_rev = (driver.split(".") + [""])[:3]
    c_major, c_minor = CUDA[d_major]
    strategy = plan.strategy or plan.chart.defaults["mig"]["strategy"]
    labels = {
        "nvidia.com/cuda.driver-version.full": driver,
        "nvidia.com/cuda.driver-version.major": d_major,
        "nvidia.com/cuda.driver-version.minor": d_minor,
        "nvidia.com/cuda.driver-version.revision": d_rev,
        "nvidia.com/cuda.driver.major": d_major,
        "nvidia.com/cuda.driver.minor": d_minor,
        "nvidia.com/cuda.driver.rev": d_rev,
        "nvidia.com/cuda.runtime-version.full": f"{c_major}.{c_minor}",
        "nvidia.com/cuda.runtime-version.major": str(c_major),
        "nvidia.com/cuda.runtime-version.minor": str(c_minor),
        "nvidia.com/cuda.runtime.major": str(c_major),
        "nvidia.com/cuda.runtime.minor": str(c_minor),
        "nvidia.com/gfd.timestamp": "1788249600",
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor,
        "nvidia.com/gpu.count": str(spec.gpus),
        "nvidia.com/gpu.family": FAMILIES[model.compute_capability],
        "nvidia.com/gpu.machine": MACHINES[_dist(plan)],
        "nvidia.com/gpu.memory": str(memory),
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true" if model.mig_capable else "false",
        "nvidia.com/mig.strategy": strategy,
        "nvidia.com/mps.capable": "false",
    }
    pool = spec.pool
    if pool is None:
        return labels
    profile = pool.profile
    layout = P.mig_layout(profile, model)
    if layout:
        ts = profile.time_slicing
        replicas = ts.replicas if ts else 1
        kind = "time-slicing" if ts and replicas > 1 else "none"
        if strategy == "mixed":
            # MIG-enabled full GPUs are labelled without sharing (replicas 0); each profile gets its own labels.
            labels["nvidia.com/gpu.replicas"] = "0"
            for name, count in layout.items():
                p = model.mig_profiles[name]
                key = "nvidia.com/mig-" + name.replace("+", ".")
                labels.update({
                    f"{key}.count": str(count * spec.gpus), f"{key}.replicas": str(replicas),
                    f"{key}.sharing-strategy": kind, f"{key}.product": f"{product}-MIG-{name.replace('+', '')}",
                    f"{key}.memory": str(int(memory * p.memory_slices / model.memory_slots) // 1024 * 1024),
                    f"{key}.multiprocessors": str(p.compute_slices * 14), f"{key}.slices.gi": str(p.compute_slices),
                    f"{key}.slices.ci": str(p.compute_slices), f"{key}.engines.copy": str(p.compute_slices),
                    f"{key}.engines.decoder": str(p.memory_slices // 2 or 1), f"{key}.engines.encoder": "0",
                    f"{key}.engines.jpeg": "0", f"{key}.engines.ofa": "0",
                })
        else:
            (name, count), = layout.items()
            p = model.mig_profiles[name]
            labels.update({
                "nvidia.com/gpu.product": f"{product}-MIG-{name.replace('+', '')}" + (
                    "-SHARED" if kind != "none" and not ts.rename_by_default else ""),
                "nvidia.com/gpu.count": str(count * spec.gpus),
                "nvidia.com/gpu.replicas": str(replicas),
                "nvidia.com/gpu.sharing-strategy": kind,
                "nvidia.com/gpu.memory": str(int(memory * p.memory_slices / model.memory_slots) // 1024 * 1024),
                "nvidia.com/gpu.multiprocessors": str(p.compute_slices * 16),
                "nvidia.com/gpu.slices.gi": str(p.compute_slices), "nvidia.com/gpu.slices.ci": str(p.compute_slices),
                "nvidia.com/gpu.engines.copy": "1", "nvidia.com/gpu.engines.decoder": "1",
                "nvidia.com/gpu.engines.encoder": "0", "nvidia.com/gpu.engines.jpeg": "1",
                "nvidia.com/gpu.engines.ofa": "0",
            })
        return labels
    for kind, sharing in (("mps", profile.mps), ("time-slicing", profile.time_slicing)):
        if sharing is not None:
            labels["nvidia.com/gpu.replicas"] = str(sharing.replicas)
            labels["nvidia.com/gpu.sharing-strategy"] = kind
            if not sharing.rename_by_default:
                labels["nvidia.com/gpu.product"] = product + "-SHARED"
            if kind == "mps":
                labels["nvidia.com/mps.capable"] = "true"
            break
    return labels


#: The NFD subchart each chart vendors (gpu-operator-facts §2): its worker runs on every node.
NFD_VERSION = {"v26.7.0": "v0.19.0", "v26.3.3": "v0.18.3"}
#: Images of workloads and of the cluster itself, after the operator's own.
OTHER_IMAGES = ("nvcr.io/nvidia/pytorch", "nvcr.io/nvidia/tritonserver", "registry.k8s.io/kube-proxy",
                "docker.io/calico/node", "docker.io/calico/cni", "registry.k8s.io/pause", "docker.io/library/busybox")


def _image(name: str, tag: str, seed: str) -> dict:
    digest = _h(seed, name)
    return {"names": [f"{name}@sha256:{digest}", f"{name}:{tag}"], "sizeBytes": int(digest[:7], 16) * 97}


def _images(spec: Spec, plan, count: int) -> list[dict]:
    """status.images: the operand images a GPU node pulled (the chart's defaults, through the mirror when one is
    set: the validator is `<registry>/gpu-operator:<chart version>`, the chart's appVersion), NFD's worker on every
    node, then `count` other images."""
    from gpuconf import catalog

    chart = plan.chart
    images = []

    def operand(key: str, version: str | None = None, suffix: str = "") -> None:
        values = chart.defaults[key]
        repository = plan.image_repository(values["repository"])
        images.append(_image(f"{repository}/{values['image']}", (version or values.get("version") or
                                                                 plan.chart_version) + suffix, spec.name))

    if spec.model:
        operand("validator")
        operand("toolkit")
        operand("devicePlugin")
        operand("dcgmExporter")
        if spec.pool is None or spec.pool.driver != "preinstalled":
            operand("driver", spec.driver, "-ubuntu24.04")
        if catalog.gpu_model(spec.model).mig_capable:
            operand("migManager")
    from gpuconf.render.values import NFD_IMAGE_REPOSITORY

    images.append(_image(plan.image_repository(NFD_IMAGE_REPOSITORY), NFD_VERSION[plan.chart_version], spec.name))
    for i in range(count):
        repo = OTHER_IMAGES[i % len(OTHER_IMAGES)] + ("" if i < len(OTHER_IMAGES) else f"-{i // len(OTHER_IMAGES)}")
        images.append(_image(repo, f"v{i % 7}.{i % 5}.{i % 3}", spec.name))
    return images


def node(spec: Spec, plan, images: int = 6) -> dict:
    """One Node object as `kubectl get nodes -o json` prints it."""
    from gpuconf import catalog
    from gpuconf import plan as P

    dist = _dist(plan)
    seed = _h(plan.name, spec.name)
    ip = f"10.{int(seed[0:2], 16) % 4}.{int(seed[2:4], 16)}.{int(seed[4:6], 16) % 250 + 2}"
    labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux",
    }
    annotations = {"node.alpha.kubernetes.io/ttl": "0",
                   "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    if dist == "eks":
        labels.update({
            "eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": spec.group or "system",
            "eks.amazonaws.com/nodegroup-image": "ami-0c1a2b3c4d5e6f789",
            "node.kubernetes.io/instance-type": INSTANCE.get(spec.model, "m7i.4xlarge"),
            "topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": "us-east-1a",
            "k8s.io/cloud-provider-aws": "3f0e6c0b1d3c2a1e9f8d7c6b5a493827",
        })
        annotations["alpha.kubernetes.io/provided-node-ip"] = ip
    elif dist == "openshift":
        labels.update({"node-role.kubernetes.io/worker": "", "node.openshift.io/os_id": "rhcos"})
    elif dist == "rke2":
        labels["node.kubernetes.io/instance-type"] = "rke2"
    nfd = _nfd_labels(spec, plan)
    labels.update(nfd)
    annotations["nfd.node.kubernetes.io/feature-labels"] = ",".join(
        sorted(k.removeprefix("feature.node.kubernetes.io/") for k in nfd))
    taints: list[dict] = []
    allocatable = {"cpu": "191450m", "ephemeral-storage": "3705656816868", "hugepages-1Gi": "0",
                   "hugepages-2Mi": "0", "memory": "2097152000Ki", "pods": "110"}
    capacity = {"cpu": "192", "ephemeral-storage": "3936978068Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                "memory": "2112000000Ki", "pods": "110"}
    if spec.model:
        model = catalog.gpu_model(spec.model)
        labels["nvidia.com/gpu.present"] = "true"
        for operand in OPERANDS + (("client",) if plan.chart_version == "v26.7.0" else ()):
            labels[f"nvidia.com/gpu.deploy.{operand}"] = "true"
        if model.mig_capable:
            labels["nvidia.com/gpu.deploy.mig-manager"] = "true"
        labels.update(_gfd_labels(spec, plan))
        pool = spec.pool
        managed = pool is None or pool.driver != "preinstalled"
        upgrade = plan.intent.spec.driver.upgrade
        if managed and (upgrade is None or upgrade.auto_upgrade):
            labels["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-done"
            annotations["nvidia.com/gpu-driver-upgrade-enabled"] = "true"
        if pool is not None:
            labels.update(pool.labels)
            labels.update(pool.pool.match.node_labels)
            if pool.mig_key is not None:
                labels["nvidia.com/mig.config.state"] = "success"
            if plan.per_pool_drivers and managed:
                labels["nvidia.com/gpu-operator.driver.owner"] = (
                    f"gpuconf-{pool.name}" if pool.driver not in ("cluster", "preinstalled") else "default")
            for t in pool.pool.taints:
                taints.append({"effect": t.effect, "key": t.key, **({"value": t.value} if t.value else {})})
            for resource, units in pool.capacity.per_node.items():
                allocatable[resource] = capacity[resource] = canonical(units)
        else:
            allocatable[P.GPU] = capacity[P.GPU] = canonical(spec.gpus)
    elif dist != "eks":  # a control-plane node
        labels["node-role.kubernetes.io/control-plane"] = ""
        taints.append({"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"})
    conditions = [
        {"lastHeartbeatTime": STAMP, "lastTransitionTime": STAMP, "message": f"kubelet has {msg}",
         "reason": reason, "status": "False", "type": kind}
        for kind, reason, msg in (("MemoryPressure", "KubeletHasSufficientMemory", "sufficient memory available"),
                                  ("DiskPressure", "KubeletHasNoDiskPressure", "no disk pressure"),
                                  ("PIDPressure", "KubeletHasSufficientPID", "sufficient PID available"))
    ]
    conditions.append({"lastHeartbeatTime": STAMP, "lastTransitionTime": STAMP,
                       "message": "kubelet is posting ready status", "reason": "KubeletReady", "status": "True",
                       "type": "Ready"})
    spec_ = {"podCIDR": f"192.168.{int(seed[6:8], 16)}.0/24", "podCIDRs": [f"192.168.{int(seed[6:8], 16)}.0/24"]}
    if dist == "eks":
        spec_ = {"providerID": f"aws:///us-east-1a/i-0{seed[8:24]}"}
    if taints:
        spec_["taints"] = taints
    addresses = [{"address": ip, "type": "InternalIP"}, {"address": spec.name, "type": "Hostname"}]
    if dist == "eks":
        addresses.append({"address": spec.name, "type": "InternalDNS"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"annotations": annotations, "creationTimestamp": STAMP, "labels": labels, "name": spec.name,
                     "resourceVersion": str(int(seed[:6], 16)), "uid": f"{seed[:8]}-{seed[8:12]}-{seed[12:16]}-"
                                                                       f"{seed[16:20]}-{seed[20:32]}"},
        "spec": spec_,
        "status": {
            "addresses": addresses, "allocatable": allocatable, "capacity": capacity, "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "features": {"supplementalGroupsPolicy": True},
            "images": _images(spec, plan, images),
            "nodeInfo": {"architecture": "amd64", "bootID": _h("boot", spec.name)[:36],
                         "containerRuntimeVersion": "containerd://2.0.5", "kernelVersion": "6.8.0-60-generic",
                         "kubeProxyVersion": "", "kubeletVersion": _kubelet(plan),
                         "machineID": _h("machine", spec.name)[:32], "operatingSystem": "linux",
                         "osImage": "Ubuntu 24.04.2 LTS", "systemUUID": _h("uuid", spec.name)[:36]},
            "runtimeHandlers": [{"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True},
                                 "name": handler} for handler in ("nvidia", "runc", "")],
        },
    }


# --- a cluster ---------------------------------------------------------------------------------------------------


def canonical(units: int) -> str:
    """A whole number as the API server writes a DecimalSI quantity: the largest suffix that loses nothing (1000 is
    "1k", 1200 stays "1200"; apimachinery resource.Quantity's canonical form)."""
    suffixes = ("", "k", "M", "G", "T", "P", "E")
    step = 0
    while units and units % 1000 == 0 and step < len(suffixes) - 1:
        units, step = units // 1000, step + 1
    return f"{units}{suffixes[step]}"


def node_name(plan, pool_name: str, index: int) -> str:
    """A node's name: EC2-style on EKS, <prefix><NN> for hostname pools, <pool>-<NN> elsewhere."""
    from gpuconf.intent.rules.selection import _literal_prefix

    pool = next((p for p in plan.pools if p.name == pool_name), None)
    if pool is not None and pool.pool.match.hostname:
        return f"{_literal_prefix(pool.pool.match.hostname)}{index:02d}"
    if _dist(plan) == "eks":
        seed = _h(plan.name, pool_name, index)
        return f"ip-10-{int(seed[0:2], 16) % 4}-{int(seed[2:4], 16)}-{int(seed[4:6], 16) % 250 + 2}.ec2.internal"
    return f"{pool_name}-{index:02d}"


def specs(plan, scale: int = 1) -> list[Spec]:
    """The nodes a clean cluster of the plan has: each pool's declared count (x scale) plus three plain nodes."""
    default_driver = plan.intent.spec.driver.version or plan.chart.defaults["driver"]["version"]
    out = []
    for pool in plan.pools:
        driver = HOST_DRIVER if pool.driver == "preinstalled" else (
            default_driver if pool.driver == "cluster" else pool.driver)
        group = pool.pool.match.node_labels.get("eks.amazonaws.com/nodegroup") or pool.name.split("-")[0]
        for i in range(pool.pool.nodes * scale):
            out.append(Spec(node_name(plan, pool.name, i), pool.pool.gpu, pool.pool.gpus_per_node, pool, driver,
                            group, i))
    for i in range(3):
        out.append(Spec(node_name(plan, "system", i), index=i))
    return out


def nodelist(items: list[dict]) -> dict:
    """kubectl's wrapper around `get nodes -o json` output."""
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def dumps(doc: dict) -> str:
    """kubectl's JSON layout: four-space indent."""
    return json.dumps(doc, indent=4, sort_keys=True) + "\n"


def clean_nodes(plan, images: int = 6, scale: int = 1) -> list[dict]:
    """Every node of a healthy cluster running exactly what the plan renders."""
    return [node(s, plan, images) for s in specs(plan, scale)]


# --- drift -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """One injected problem: which node (pool, index) it touches, how, and the findings it must cause."""

    pool: str
    index: int
    what: str
    change: Callable[[dict, object], dict | None]  # (node, plan) -> the node, or None to remove it
    expect: tuple[tuple[str, str], ...]  # (code, severity) on that node; GA115 and GA122 land on the pool


def _labels(n: dict) -> dict:
    return n["metadata"]["labels"]


def _set_driver(version: str, upgrade_state: str | None = None):
    def change(n: dict, plan) -> dict:
        labels = _labels(n)
        major, minor, rev = version.split(".")
        labels.update({"nvidia.com/cuda.driver-version.full": version, "nvidia.com/cuda.driver-version.major": major,
                       "nvidia.com/cuda.driver-version.minor": minor, "nvidia.com/cuda.driver-version.revision": rev,
                       "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor,
                       "nvidia.com/cuda.driver.rev": rev})
        if upgrade_state:
            labels["nvidia.com/gpu-driver-upgrade-state"] = upgrade_state
        return n
    return change


def _set(key: str, value: str | None):
    def change(n: dict, plan) -> dict:
        labels = _labels(n)
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
        return n
    return change


def _allocatable(resource: str, value: str):
    def change(n: dict, plan) -> dict:
        n["status"]["allocatable"][resource] = value
        return n
    return change


def _no_taints(n: dict, plan) -> dict:
    n["spec"].pop("taints", None)
    return n


def _not_ready(n: dict, plan) -> dict:
    ready = n["status"]["conditions"][-1]
    ready.update({"status": "Unknown", "reason": "NodeStatusUnknown",
                  "message": "Kubelet stopped posting node status."})
    return n


def _cordon(n: dict, plan) -> dict:
    n["spec"]["unschedulable"] = True
    n["spec"].setdefault("taints", []).append({"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable",
                                               "timeAdded": STAMP})
    return n


def _remove(n: dict, plan) -> None:
    return None


def _mig_pending(n: dict, plan) -> dict:
    labels = _labels(n)
    labels["nvidia.com/mig.config.state"] = "pending"
    for operand in ("device-plugin", "gpu-feature-discovery", "dcgm", "dcgm-exporter"):
        labels[f"nvidia.com/gpu.deploy.{operand}"] = "paused-for-mig-change"
    return n


def _mig_rebooting_without_gpus(n: dict, plan) -> dict:
    _labels(n)["nvidia.com/mig.config.state"] = "rebooting"
    for resource in [r for r in n["status"]["allocatable"] if r.startswith("nvidia.com/")]:
        n["status"]["allocatable"][resource] = "0"
    return n


def _wrong_gpu(model: str):
    def change(n: dict, plan) -> dict:
        product, memory = GPUS[model]
        _labels(n).update({"nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": str(memory)})
        return n
    return change


def _no_gfd(n: dict, plan) -> dict:
    labels = _labels(n)
    for key in [k for k in labels if k.startswith(("nvidia.com/gpu.", "nvidia.com/cuda.", "nvidia.com/mig",
                                                   "nvidia.com/mps.", "nvidia.com/gfd."))]:
        if not key.startswith(("nvidia.com/gpu.deploy.", "nvidia.com/gpu.present", "nvidia.com/mig.config")):
            del labels[key]
    for resource in [r for r in n["status"]["allocatable"] if r.startswith("nvidia.com/")]:
        del n["status"]["allocatable"][resource]
        del n["status"]["capacity"][resource]
    return n


def _extra(pool: str, model: str, gpus: int, group: str, like: str | None = None):
    """A node beyond the declared ones: a copy of a pool's first node (like) or a plain GPU node, regrouped."""
    def change(n: None, plan) -> dict:
        name = node_name(plan, pool, 0)  # the Drift names (pool, 0)
        template = next((p for p in plan.pools if p.name == like), None)
        default = plan.intent.spec.driver.version or plan.chart.defaults["driver"]["version"]
        out = node(Spec(name, model, gpus, template, default, group), plan)
        if plan.intent.spec.cluster.distribution == "eks":
            _labels(out)["eks.amazonaws.com/nodegroup"] = group
        return out
    return change


def _taint(key: str, value: str, effect: str):
    def change(n: dict, plan) -> dict:
        n["spec"].setdefault("taints", []).append({"effect": effect, "key": key, **({"value": value} if value else {})})
        return n
    return change


def _no_gpus(n: dict) -> None:
    """The kubelet keeps a resource whose device plugin went away at zero allocatable."""
    for resource in [r for r in n["status"]["allocatable"] if r.startswith("nvidia.com/")]:
        n["status"]["allocatable"][resource] = "0"


def _unlabelled(n: dict, plan) -> dict:
    """The operator does not reconcile the node: its operand labels are gone, so no device plugin ever ran."""
    labels = _labels(n)
    for key in [k for k in labels if k.startswith("nvidia.com/gpu.deploy.")]:
        del labels[key]
    for resource in [r for r in n["status"]["allocatable"] if r.startswith("nvidia.com/")]:
        del n["status"]["allocatable"][resource]
        del n["status"]["capacity"][resource]
    return n


def _deploy(value: str, operands: tuple[str, ...], gpus_lost: bool = True):
    """Operand deploy labels set to `false` (switched off) or a pause value; the GPUs go with the device plugin."""
    def change(n: dict, plan) -> dict:
        for operand in operands:
            _labels(n)[f"nvidia.com/gpu.deploy.{operand}"] = value
        if gpus_lost:
            _no_gpus(n)
        return n
    return change


def _upgrade_failed(n: dict, plan) -> dict:
    """The driver pod did not come back: the driver manager's pause stays, the device plugin is gone."""
    _labels(n)["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-failed"
    _deploy("paused-for-driver-upgrade", ("device-plugin", "gpu-feature-discovery"))(n, plan)
    return n


def _host_driver(n: dict, plan) -> dict:
    """The node image brings its own driver: the driver manager labels the node pre-installed and GFD sees it."""
    _labels(n)["nvidia.com/gpu.deploy.driver"] = "pre-installed"
    return _set_driver(HOST_DRIVER)(n, plan)


def _all_1g(n: dict, plan) -> dict:
    """mig-manager applied all-1g.10gb slices (the mig-parted ConfigMap edited by hand under the pool's key)."""
    labels = _labels(n)
    for key in [k for k in labels if k.startswith(("nvidia.com/mig-2g", "nvidia.com/mig-3g"))]:
        del labels[key]
    labels["nvidia.com/mig-1g.10gb.count"] = "56"
    allocatable = n["status"]["allocatable"]
    allocatable.update({"nvidia.com/mig-1g.10gb": "56", "nvidia.com/mig-2g.20gb": "0", "nvidia.com/mig-3g.40gb": "0"})
    return n


DRIFTS: dict[str, tuple[Drift, ...]] = {
    "heterogeneous": (
        Drift("misc", 0, "a T4 node no pool asks for", _extra("misc", "T4", 4, "misc"), (("GA101", "error"),)),
        Drift("infer-h100", 0, "an H100 node launched in the infer node group: PCI id says train-h100, "
              "node group says infer-a100", _extra("infer-h100", "H100-80GB", 8, "infer", like="train-h100"),
              (("GA102", "error"),)),
        Drift("train-h100", 1, "device-plugin config label removed by hand",
              _set("nvidia.com/device-plugin.config", None), (("GA103", "error"),)),
        Drift("train-h100", 2, "pool taint gone", _no_taints, (("GA105", "error"),)),
        Drift("train-h100", 3, "driver 580 on a pool pinned to 595 (upgrade idle)", _set_driver("580.126.20"),
              (("GA108", "error"),)),
        Drift("train-h100", 4, "MIG manager mid-change, operands paused", _mig_pending, (("GA110", "warning"),)),
        Drift("train-h100", 5, "kubelet stopped posting status", _not_ready, (("GA113", "info"),)),
        Drift("train-h100", 6, "cordoned for maintenance", _cordon, (("GA114", "info"),)),
        Drift("infer-a100", 1, "MIG config label set by hand to another layout",
              _set("nvidia.com/mig.config", "all-balanced"), (("GA104", "error"),)),
        Drift("infer-a100", 2, "an A100 40GB in the 80GB node group", _wrong_gpu("A100-40GB"), (("GA106", "error"),)),
        Drift("infer-a100", 3, "MIG reconfiguration failed", _set("nvidia.com/mig.config.state", "failed"),
              (("GA110", "error"),)),
        Drift("notebooks-l4", 1, "time-slicing not applied: 4 GPUs advertised, not 16",
              _allocatable("nvidia.com/gpu", "4"), (("GA107", "error"),)),
        Drift("notebooks-l4", 2, "GFD runs with another MIG strategy", _set("nvidia.com/mig.strategy", "single"),
              (("GA111", "error"),)),
        Drift("notebooks-l4", 3, "GFD saw another replica count", _set("nvidia.com/gpu.replicas", "2"),
              (("GA112", "error"),)),
        Drift("notebooks-l4", 5, "a node is gone", _remove, (("GA115", "error"),)),
        Drift("train-h100", 7, "the operator no longer labels the node: operand labels gone, no device plugin",
              _unlabelled, (("GA107", "error"), ("GA117", "error"))),
        Drift("train-h100", 8, "dcgm-exporter switched off: GPUs fine, metrics gone",
              _deploy("false", ("dcgm-exporter",), gpus_lost=False), (("GA118", "warning"),)),
        Drift("train-h100", 9, "an undeclared NoExecute taint evicts the operands",
              _taint("maintenance.example.com/reboot", "", "NoExecute"), (("GA120", "error"),)),
        Drift("train-h100", 10, "an undeclared NoSchedule taint", _taint("dedicated", "ml-research", "NoSchedule"),
              (("GA120", "warning"),)),
        Drift("train-h100", 11, "GKE's own GPU taint, which the operands' default tolerations cover: not drift",
              _taint("nvidia.com/gpu", "present", "NoSchedule"), ()),
        Drift("train-h100", 12, "a GPU fell off the bus: GFD counts 7, allocatable still says 8",
              _set("nvidia.com/gpu.count", "7"), (("GA121", "error"),)),
        Drift("train-h100", 13, "the driver upgrade failed and took the GPUs with it", _upgrade_failed,
              (("GA107", "error"), ("GA116", "error"))),
        Drift("infer-a100", 0, "all-1g slices instead of the mixed layout: surplus 1g, no 2g or 3g", _all_1g,
              (("GA107", "error"),)),
        Drift("notebooks-l4", 0, "the device plugin switched off by hand", _deploy("false", ("device-plugin",)),
              (("GA107", "error"), ("GA118", "error"))),
    ),
    "hybrid": (
        Drift("legacy-a100", 1, "the driver deploy preset is missing on a preinstalled pool",
              _set("nvidia.com/gpu.deploy.driver", None), (("GA103", "error"),)),
        Drift("legacy-a100", 2, "one host image runs an older driver", _set_driver("570.133.20"),
              (("GA109", "warning"),)),
        Drift("legacy-a100", 3, "GFD has not labelled the node yet (no product, no GPUs advertised)", _no_gfd,
              (("GA106", "warning"), ("GA107", "error"))),
        Drift("batch-h100", 1, "driver upgrade to the pinned version under way", _set_driver(
            "580.126.20", "upgrade-required"), (("GA108", "warning"),)),
        Drift("batch-h100", 2, "driver deploy label switched off on a managed pool",
              _set("nvidia.com/gpu.deploy.driver", "false"), (("GA118", "error"),)),
        Drift("new-h200", 1, "MIG manager rebooting the node, no GPUs advertised meanwhile",
              _mig_rebooting_without_gpus, (("GA107", "warning"), ("GA110", "warning"))),
        Drift("legacy-a100", 0, "the driver manager found the host driver and wrote pre-installed: what the pool "
              "wants, not drift", _set("nvidia.com/gpu.deploy.driver", "pre-installed"), ()),
        Drift("batch-h100", 3, "a node image with its own driver in a managed pool: the operator's driver is off",
              _host_driver, (("GA108", "error"), ("GA118", "error"))),
        Drift("new-h200", 0, "mig-manager reported success but left the operands paused",
              _deploy("paused-for-mig-change", ("device-plugin", "gpu-feature-discovery", "dcgm", "dcgm-exporter")),
              (("GA107", "error"), ("GA119", "error"))),
    ),
    "airgapped": (
        Drift("dev-t4", 0, "kubelet stopped posting status", _not_ready, (("GA113", "info"),)),
        Drift("dev-t4", 1, "kubelet stopped posting status", _not_ready, (("GA113", "info"),)),
        Drift("dev-t4", 2, "cordoned: three of five nodes out, more than the default --max-unavailable 25%", _cordon,
              (("GA114", "info"), ("GA122", "error"))),
        Drift("analytics-a30", 0, "a driver reload left dcgm-exporter paused (the GPUs are fine)",
              _deploy("paused-for-driver-upgrade", ("dcgm-exporter",), gpus_lost=False), (("GA119", "warning"),)),
    ),
}


def drifted_nodes(example: str, plan) -> list[dict]:
    """The clean cluster with DRIFTS[example] injected, each drift on its own node."""
    nodes = clean_nodes(plan)
    by_name = {n["metadata"]["name"]: i for i, n in enumerate(nodes)}
    for drift in DRIFTS[example]:
        name = node_name(plan, drift.pool, drift.index)
        if name in by_name:
            i = by_name[name]
            nodes[i] = drift.change(copy.deepcopy(nodes[i]), plan)
        else:
            nodes.append(drift.change(None, plan))
            by_name[name] = len(nodes) - 1
    return [n for n in nodes if n is not None]


def expected_findings(example: str, plan) -> list[tuple[str, str, str, str]]:
    """(code, severity, node, pool) for every finding the drifted fixture must produce, sorted."""
    out = []
    for drift in DRIFTS[example]:
        name = node_name(plan, drift.pool, drift.index)
        for code, severity in drift.expect:
            if code in ("GA115", "GA122"):  # pool-level findings
                out.append((code, severity, "", drift.pool))
            else:
                pool = {"GA101": "(no pool)", "GA102": "(several pools)"}.get(code, drift.pool)
                out.append((code, severity, name, pool))
    return sorted(out)


def write_nodelist(path: Path, plan, images: int = 25) -> int:
    """Write a clean cluster of the plan to path one node at a time (for large benchmarks); returns its size."""
    with open(path, "w", encoding="utf-8") as out:
        out.write('{\n    "apiVersion": "v1",\n    "items": [\n')
        for i, spec in enumerate(specs(plan)):
            text = json.dumps(node(spec, plan, images), indent=4, sort_keys=True)
            out.write((",\n" if i else "") + "\n".join("        " + line for line in text.splitlines()))
        out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    return path.stat().st_size


def write_podlist(path: Path, node_names: list[str], count: int) -> int:
    """Write a PodList of count running pods, one GPU each, spread over the nodes in turn, in the teams' namespaces
    (for large benchmarks: the fields `kubectl get pods -A -o json` gives that the impact plan reads, on one line as
    `-o json | jq -c` writes it); returns its size."""
    namespaces = ("research", "product-inference", "research-batch")
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"apiVersion":"v1","items":[')
        for i in range(count):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"train-{i:06d}-{_h(i)[:5]}", "namespace": namespaces[i % len(namespaces)]},
                   "spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"},
                                                                          "requests": {"nvidia.com/gpu": "1"}}}],
                            "nodeName": node_names[i % len(node_names)]},
                   "status": {"phase": "Running"}}
            out.write(("," if i else "") + json.dumps(pod, separators=(",", ":"), sort_keys=True))
        out.write('],"kind":"List","metadata":{"resourceVersion":""}}\n')
    return path.stat().st_size


def scaled_intent(example: str, nodes: dict[str, int]) -> str:
    """examples/<example>.yaml with its pools' node counts replaced."""
    import re

    text = (ROOT / "examples" / f"{example}.yaml").read_text(encoding="utf-8")
    for pool, count in nodes.items():
        text, n = re.subn(rf"(- name: {re.escape(pool)}\n(?:      .*\n)*?      nodes: )\d+", rf"\g<1>{count}", text)
        assert n == 1, pool
    return text


def fixtures() -> dict[str, str]:
    """File name -> content of every fixture under tests/fixtures/nodes/."""
    out = {}
    for example in EXAMPLES:
        plan = load_plan(example)
        out[f"{example}.json"] = dumps(nodelist(clean_nodes(plan)))
        if example in DRIFTS:
            out[f"{example}-drift.json"] = dumps(nodelist(drifted_nodes(example, plan)))
    return out


def main() -> None:
    """Rewrite tests/fixtures/nodes/."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, text in fixtures().items():
        (FIXTURES / name).write_text(text, encoding="utf-8")
        print(f"wrote {FIXTURES.relative_to(ROOT) / name} ({len(text) // 1024} KiB)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()

"""Platform facts: what the GPU Operator needs on GKE, EKS (+ Karpenter), AKS, OpenShift, k3s, RKE2 and MicroK8s.

The data is profiles/platforms.json, which tools/derive_reference.py derives from the platform fact sheet (each value
checked against it) and the EC2NodeClass CRD. This is the one module that reads it; renderers and rules ask here.
It is loaded on first use; importing this module reads nothing.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from . import catalog


@functools.cache
def facts() -> dict[str, Any]:
    """profiles/platforms.json, parsed."""
    data: dict[str, Any] = json.loads(catalog.data_file("platforms.json").read_text(encoding="utf-8"))
    return data


def gke() -> dict[str, Any]:
    """GKE: the two driver modes, node-pool flags, the ResourceQuota, labels, taint, the containerd 2 trap."""
    return facts()["gke"]


def eks() -> dict[str, Any]:
    """EKS: what each accelerated AMI ships and the values that follow; managed node group labels."""
    return facts()["eks"]


def karpenter() -> dict[str, Any]:
    """Karpenter's AWS provider: GPU labels, the instance families per GPU, EC2NodeClass AMI families."""
    return facts()["karpenter"]


def aks() -> dict[str, Any]:
    """AKS: the operator's driver (node pools without AKS's) or AKS's own; labels; VM series per GPU."""
    return facts()["aks"]


def openshift() -> dict[str, Any]:
    """OpenShift: the OLM route (package, catalogue source, channel per bundle), NFD operator, monitoring label."""
    return facts()["openshift"]


def runtime(distribution: str) -> dict[str, Any] | None:
    """The container toolkit's environment on k3s, RKE2 or MicroK8s, with its source; None elsewhere."""
    found: dict[str, Any] | None = facts()["runtimes"]["distributions"].get(distribution)
    return found


def nri() -> dict[str, Any]:
    """NRI plugin mode: its values, what it needs (CDI, containerd versions), the CRI-O caveat."""
    return facts()["runtimes"]["nri"]


def not_verified() -> list[str]:
    """What the fact sheet could not verify (gpuconf warns, or leaves it to an override, instead of guessing)."""
    return list(facts()["notVerified"])


#: What AKS itself gives every node of a Spot node pool (`az aks nodepool add --priority Spot`): the label
#: kubernetes.azure.com/scalesetpriority=spot and the taint kubernetes.azure.com/scalesetpriority=spot:NoSchedule.
#: The platform fact sheet lists the label among what it could not verify; this settles both. Source: Microsoft's AKS
#: documentation, MicrosoftDocs/azure-aks-docs articles/aks/spot-node-pool.md (commit 31e1f80a, ms.date 2025-04-06),
#: "Limitations" ("A Spot node pool has the ... label, the ... taint") and the `az aks nodepool show` output it quotes
#: (nodeLabels and nodeTaints of a new Spot pool). The Azure CLI adds neither (azure-cli 2.91.0 sends no taint of its
#: own for --priority Spot): the service does.
AKS_SPOT_LABEL = ("kubernetes.azure.com/scalesetpriority", "spot")
AKS_SPOT_TAINT = ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")


#: GPUs per EC2 instance type of the NVIDIA families in ec2_offers, by family and size. Source: the generated
#: instance-type reference of aws/karpenter-provider-aws v1.14.1 (website/content/en/v1.14/reference/
#: instance-types.md, commit 1d927085d), row karpenter.k8s.aws/instance-gpu-count of each type; p3 from the v1.0
#: page of the same commit (p3 is gone from the current one). The platform fact sheet lists each family's counts but
#: not which size has which; tests/test_platforms.py holds the two together.
EC2_INSTANCE_GPUS: dict[str, dict[str, int]] = {
    "g4dn": {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "metal": 8},
    "g5": {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4,
           "48xlarge": 8},
    "g5g": {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 2, "metal": 2},
    "g6": {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4,
           "48xlarge": 8},
    "g6e": {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4,
            "48xlarge": 8},
    "gr6": {"4xlarge": 1, "8xlarge": 1},
    "g7e": {"2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "12xlarge": 2, "24xlarge": 4, "48xlarge": 8},
    "p3": {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8},
    "p3dn": {"24xlarge": 8},
    "p4d": {"24xlarge": 8},
    "p4de": {"24xlarge": 8},
    "p5": {"4xlarge": 1, "48xlarge": 8},
    "p5e": {"48xlarge": 8},
    "p5en": {"48xlarge": 8},
    "p6-b200": {"48xlarge": 8},
    "p6-b300": {"48xlarge": 8},
}


def ec2_instance_gpus(instance_type: str) -> int | None:
    """The number of GPUs of an EC2 instance type (`g5.12xlarge` -> 4), or None for a type gpuconf has no count of."""
    family, _, size = instance_type.partition(".")
    return EC2_INSTANCE_GPUS.get(family, {}).get(size)


def ec2_offers(model_id: str) -> list[dict[str, Any]]:
    """The EC2 instance families whose GPU is this model (Karpenter's instance-gpu-name, families, GPU counts)."""
    return [row for row in karpenter()["instanceFamilies"] if row["model"] == model_id]


#: The machine types of GKE's accelerator-optimized series, by accelerator type and GPUs per machine: the GPUs come
#: attached, so the machine type follows from the two. Source: skypilot-org/skypilot's GCP catalogue
#: (sky/catalog/gcp_catalog.py, `_ACC_INSTANCE_TYPE_DICTS`, after https://cloud.google.com/compute/docs/gpus).
#: Attachable GPUs (N1 with T4) and A4X have no entry: their machine type is the user's choice.
GKE_MACHINE_TYPES: dict[str, dict[int, tuple[str, ...]]] = {
    "nvidia-tesla-a100": {1: ("a2-highgpu-1g",), 2: ("a2-highgpu-2g",), 4: ("a2-highgpu-4g",), 8: ("a2-highgpu-8g",),
                          16: ("a2-megagpu-16g",)},
    "nvidia-a100-80gb": {1: ("a2-ultragpu-1g",), 2: ("a2-ultragpu-2g",), 4: ("a2-ultragpu-4g",),
                         8: ("a2-ultragpu-8g",)},
    "nvidia-l4": {1: ("g2-standard-4", "g2-standard-8", "g2-standard-12", "g2-standard-16", "g2-standard-32"),
                  2: ("g2-standard-24",), 4: ("g2-standard-48",), 8: ("g2-standard-96",)},
    "nvidia-h100-80gb": {1: ("a3-highgpu-1g",), 2: ("a3-highgpu-2g",), 4: ("a3-highgpu-4g",), 8: ("a3-highgpu-8g",)},
    "nvidia-h100-mega-80gb": {8: ("a3-megagpu-8g",)},
    "nvidia-h200-141gb": {8: ("a3-ultragpu-8g",)},
    "nvidia-b200": {8: ("a4-highgpu-8g",)},
}


def gke_machine_types(accelerator: str, gpus: int) -> tuple[str, ...] | None:
    """The machine types that come with `gpus` GPUs of this GKE accelerator type: () when its series has none of that
    size, None when the machine type does not follow from the GPU (attachable GPUs, a type gpuconf has no table of)."""
    sizes = GKE_MACHINE_TYPES.get(accelerator)
    return None if sizes is None else sizes.get(gpus, ())


def gke_accelerator_models(value: str) -> list[str] | None:
    """The models a cloud.google.com/gke-accelerator value can name, or None for a value gpuconf has not seen."""
    found: list[str] | None = gke()["acceleratorModels"].get(value)
    return found


def gke_accelerators(model_id: str) -> dict[str, str]:
    """GKE's accelerator types of this model and their machine series (gke-aks-facts §a); empty when none."""
    return {value: row["machineSeries"] for value, row in gke()["accelerators"].items() if row["model"] == model_id}


def aks_series(model_id: str) -> list[dict[str, Any]]:
    """The AKS VM series that carry this model (for the report)."""
    return [row for row in aks()["vmSeries"] if row["model"] == model_id]


def olm_bundle(chart_version: str) -> dict[str, Any] | None:
    """The OLM bundle facts (package, source, channel) of a chart version, or None when gpuconf has none."""
    found: dict[str, Any] | None = openshift()["olm"].get(chart_version)
    return found

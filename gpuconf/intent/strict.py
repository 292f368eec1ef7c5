"""The base of every intent model (camelCase keys, unknown keys rejected, no type coercion, frozen) and the human
titles of its fields, which the JSON schema shows in editors.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


#: Words a field's title writes the way people do (the schema's titles are what editors show on hover).
_TITLE_WORDS = {
    "gpu": "GPU", "gpus": "GPUs", "mig": "MIG", "mps": "MPS", "ecc": "ECC", "pci": "PCI", "dmi": "DMI", "id": "ID",
    "ids": "IDs", "url": "URL", "olm": "OLM", "nri": "NRI", "eks": "EKS", "gke": "GKE", "aks": "AKS", "dcgm": "DCGM",
    "xid": "XID", "api": "API", "cdi": "CDI", "gib": "GiB", "ami": "AMI", "ec2": "EC2", "nfd": "NFD", "dra": "DRA",
    "cpu": "CPU", "repoURL": "Repository URL", "ssh": "SSH", "oci": "OCI", "tls": "TLS", "k8s": "Kubernetes", "kueue": "Kueue",
    "karpenter": "Karpenter", "openshift": "OpenShift", "argocd": "Argo CD", "flux": "Flux", "nvidia": "NVIDIA",
}


def field_title(name: str, _info: object = None) -> str:
    """A field's human title: gpus_per_node -> "GPUs per node", ecc_double_bit -> "ECC double bit"."""
    words = [_TITLE_WORDS.get(word, word) for word in name.strip("_").split("_")]
    return words[0][:1].upper() + words[0][1:] + "".join(f" {w}" for w in words[1:])


class Strict(BaseModel):
    """Base of every intent model: camelCase keys, unknown keys rejected, no type coercion."""

    model_config = ConfigDict(extra="forbid", strict=True, alias_generator=to_camel, frozen=True,
                              field_title_generator=field_title,
                              # One validator, built on first use for the root model, instead of one per class at
                              # import (issue 21, item 15).
                              defer_build=True)

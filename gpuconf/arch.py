"""CPU architectures: which catalogue GPUs sit in arm64 (Grace) nodes, and which architectures an operand image or a
driver image is published for.

The data is profiles/arch.json, which tools/derive_arch.py derives (each entry with its source): the Grace models from
the GPU Operator's platform-support page and release notes; operand images per version from each project's build
files at its release tag (NVIDIA/gpu-operator, k8s-device-plugin, nvidia-container-toolkit, mig-parted,
k8s-driver-manager, dcgm-exporter, kubernetes-sigs/node-feature-discovery and dra-driver-nvidia-gpu); driver images
per version, OS tag and architecture from NVIDIA/gpu-driver-container's NGC release jobs since 2024 (precompiled
driver images are not covered). An image the data has no entry for is one gpuconf cannot vouch for: None, never a
guess. Loaded on first use; importing this module reads nothing.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from . import catalog

ARM64 = "arm64"
#: The NFD labels the operator builds a driver image's OS tag from (gpu-operator v26.7.0
#: controllers/state_manager.go getGPUNodeOSInfo, internal/state/nodepool.go getOSTag).
OS_ID_LABEL = "feature.node.kubernetes.io/system-os_release.ID"
OS_VERSION_LABEL = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
#: The OS ids whose tag the operator builds from the major version alone, from chart v26.7.0 on (getOSTag; the
#: platform-support page: "Starting with version 26.7.0, the Operator uses the operating system major version ...").
#: Earlier releases differ by OS and release, so for these ids gpuconf knows the tag only from v26.7.0 on.
MAJOR_ONLY = ("ol", "rocky", "rhel")
MAJOR_ONLY_FROM = (26, 7, 0)


@functools.cache
def facts() -> dict[str, Any]:
    """profiles/arch.json, parsed."""
    data: dict[str, Any] = json.loads(catalog.data_file("arch.json").read_text(encoding="utf-8"))
    return data


def grace(model: str) -> bool:
    """True for a catalogue model that sits in Grace (arm64) nodes: GB200, GB300, GH200, GH200-144GB."""
    return model in facts()["graceModels"]


def grace_pools(intent) -> list[tuple[int, Any]]:
    """(index, pool) of the pools of Grace models."""
    return [(i, p) for i, p in enumerate(intent.spec.pools) if grace(p.gpu)]


def os_tag(pool, chart_version: str) -> str | None:
    """The OS tag the operator gives the pool's driver image (ubuntu24.04, rhel9), when the pool selects its nodes by
    the NFD OS labels (match.nodeLabels); None when the intent does not say which OS the nodes run."""
    labels = pool.match.node_labels
    os_id, version = labels.get(OS_ID_LABEL), labels.get(OS_VERSION_LABEL)
    if not os_id or not version:
        return None
    if os_id in MAJOR_ONLY:
        from .hazards import version_key

        if version_key(chart_version) < MAJOR_ONLY_FROM:
            return None
        version = version.split(".")[0]
    return f"{os_id}{version}"


def driver_images(version: str) -> dict[str, dict[str, Any]] | None:
    """OS tag -> {architectures, source} of the driver images NVIDIA published for a driver version; None when the
    release jobs gpuconf read never listed it."""
    return facts()["driverImages"].get(version)


def driver_arm64_os_tags(version: str) -> list[str]:
    """The OS tags the driver version has an arm64 image for (empty when none, or the version is unknown)."""
    return sorted(tag for tag, entry in (driver_images(version) or {}).items() if ARM64 in entry["architectures"])


def operand(image: str, version: str) -> dict[str, Any] | None:
    """{architectures, source} of an operand image (its name: the last part of the repository path) at a version."""
    return facts()["operandImages"].get(image, {}).get(version)


def of_reference(ref: str) -> dict[str, Any] | None:
    """{architectures, source} of an image reference as `gpuconf images` prints it, or None when gpuconf cannot vouch
    for it: a reference pinned by digest (a digest names one manifest, an index or a single platform's, which only
    the registry can tell), a driver tag without an OS part, an image or a version the data has no entry for."""
    if "@" in ref:
        return None
    path, _, tag = ref.rpartition(":")
    if not path or "/" in tag:
        return None
    name = path.rsplit("/", 1)[-1]
    if name == "driver":
        version, _, os = tag.partition("-")
        return (driver_images(version) or {}).get(os) if os else None
    return operand(name, tag)

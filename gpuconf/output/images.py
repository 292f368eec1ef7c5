"""`gpuconf images`: every image reference the rendered values and manifests make the cluster pull, for a mirror.

The chart's operands are read off the merged values the way the operator deploys them: the operator Deployment and
the validator always run; an operand runs when it is enabled (the VM operands only with sandboxWorkloads on); the
driver's tag is `<version>-<OS tag of the node>` (gpu-operator-facts §4), so driver images need the nodes' OS tags
(`--driver-os`); the NVIDIADriver objects gpuconf renders bring their own driver images; NFD runs as the chart's
subchart. gpuconf's probe Jobs use the validator image. Versions the values leave empty default to the chart's
appVersion, which is the released chart version (gpu-operator-facts §2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from ..render.imagelock import reference

#: Operands of the ClusterPolicy that pull one image each when enabled: values key -> sub-block ("" for the block).
OPERANDS = ("toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter", "gds",
            "gdrcopy")
#: Operands the operator deploys only for sandbox (VM) workloads.
SANDBOX_OPERANDS = ("vgpuManager", "vgpuDeviceManager", "vfioManager", "kataManager", "sandboxDevicePlugin",
                    "kataSandboxDevicePlugin", "ccManager")
#: Their driver-manager init containers.
SANDBOX_MANAGERS = ("vgpuManager", "vfioManager")


@dataclass
class ImageList:
    """The references (sorted, unique), where each is copied from, and what the list could not say exactly."""

    references: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: destination (what the cluster pulls) -> source (where the mirror copies it from); equal without a mirror.
    sources: dict[str, str] = field(default_factory=dict)


def _repositories(values: Any) -> Iterator[str]:
    """Every image repository a values tree names (the values of its `repository` keys)."""
    if isinstance(values, dict):
        for key, value in values.items():
            if key == "repository" and isinstance(value, str) and value:
                yield value
            else:
                yield from _repositories(value)
    elif isinstance(values, list):
        for value in values:
            yield from _repositories(value)


def image_sources(references: Iterable[str], registry: str | None, upstreams: Iterable[str]) -> dict[str, str]:
    """Each reference's source: the upstream repository whose mirror (plan.mirror_repository) the reference starts
    with, the longest such mirror first (MIRROR/k8s/x comes from nvcr.io/nvidia/k8s, not nvcr.io/nvidia/k8s/k8s); a
    reference under no mirror (none is set, or an override points elsewhere) is its own source."""
    from ..plan import mirror_repository

    mirrors = sorted({(mirror_repository(u, registry), u) for u in upstreams if registry},
                     key=lambda pair: (-len(pair[0]), pair))
    out = {}
    for ref in references:
        out[ref] = next((upstream + ref[len(mirror):] for mirror, upstream in mirrors
                         if ref.startswith(mirror) and ref[len(mirror):len(mirror) + 1] in ("/", ":", "@")), ref)
    return out


def _block(values: dict, key: str) -> dict:
    found = values.get(key)
    return found if isinstance(found, dict) else {}


def images(plan: Any, merged: dict, documents: dict[str, list[dict]], driver_os: tuple[str, ...] = ()) -> ImageList:
    """The images of a rendered tree (its plan, merged values and documents)."""
    from ..render import openshift

    out = ImageList()
    refs: set[str] = set()
    app_version = plan.chart_version

    def add(block: dict, version_default: str | None = None) -> None:
        version = block.get("version") or version_default
        if block.get("repository") and block.get("image") and version:
            refs.add(reference(str(block["repository"]), str(block["image"]), str(version)))

    if openshift.olm(plan):
        out.notes.append("the operator itself comes from OLM's catalogue (its CSV's related images): mirror the "
                         "GPU Operator's catalogue with oc-mirror (`gpuconf images --oc-mirror OPENSHIFT_VERSION` "
                         "writes its ImageSetConfiguration)")
    else:
        add(_block(merged, "operator"), app_version)
        # The CUDA base image the ClusterPolicy names for the operands' init containers, in the values of the
        # releases up to v25.10.1 (charts/versions.md §1: removed at v26.3.0); absent, or incomplete, it adds nothing.
        add(_block(_block(merged, "operator"), "initContainer"))
    add(_block(merged, "validator"), app_version)
    for key in OPERANDS:
        block = _block(merged, key)
        if block.get("enabled"):
            add(block, app_version if key == "nodeStatusExporter" else None)
    if _block(merged, "sandboxWorkloads").get("enabled"):
        for key in SANDBOX_OPERANDS:
            if _block(merged, key).get("enabled"):
                add(_block(merged, key))
        for key in SANDBOX_MANAGERS:
            if _block(merged, key).get("enabled"):
                add(_block(_block(merged, key), "driverManager"))
    driver = _block(merged, "driver")
    drivers = driver_images(merged, documents)
    pinned = [d for d in drivers if "sha256:" in d[2]]  # the operator appends no OS tag to a digest (imagelock.py)
    refs.update(reference(*d) for d in pinned)
    drivers = [d for d in drivers if d not in pinned]
    if driver.get("enabled"):
        add(_block(driver, "manager"))  # k8s-driver-manager, the driver pods' init container
        if driver.get("usePrecompiled"):
            out.notes.append("driver.usePrecompiled: precompiled driver images are tagged <branch>-<kernel>-<os>, "
                             "which gpuconf cannot list; mirror them per kernel")
        elif drivers and not driver_os:
            out.notes.append("driver images are tagged <version>-<OS tag of the node> (e.g. -ubuntu24.04): pass "
                             "--driver-os once per OS your GPU nodes run to list them: " + ", ".join(
                                 sorted({reference(r, i, v) + "-<os>" for r, i, v in drivers})))
        else:
            for repository, image, version in drivers:
                for os_tag in driver_os:
                    refs.add(reference(repository, image, f"{version}-{os_tag}"))
    if openshift.olm(plan):
        out.notes.append("NFD is Red Hat's NFD operator on OpenShift: its images come with that operator's OLM "
                         "catalogue")
    elif _block(merged, "nfd").get("enabled"):
        from ..render.values import NFD_IMAGE_REPOSITORY

        nfd = _block(_block(merged, "node-feature-discovery"), "image")
        repository = nfd.get("repository") or plan.image_repository(NFD_IMAGE_REPOSITORY)
        tag = nfd.get("tag") or plan.chart.nfd_app_version
        if tag:
            refs.add(f"{repository}:{tag}")
        else:
            out.notes.append(f"the NFD image {repository}: its default tag (the NFD {plan.chart.nfd_chart_version} "
                             f"subchart's appVersion) is not in gpuconf's facts for chart {plan.chart_version}; set "
                             "node-feature-discovery.image.tag in an override to list it")
    from ..render import nvlink

    if nvlink.release(plan):  # the DRA driver's release beside the operator's (NVLink pools)
        refs.add(nvlink.pulled_image(plan))
    for docs in documents.values():
        for doc in docs:
            if doc.get("kind") == "Job":
                for container in doc["spec"]["template"]["spec"]["containers"]:
                    refs.add(container["image"])
    out.references = sorted(refs)
    from ..render.values import NFD_IMAGE_REPOSITORY

    upstreams = {*_repositories(plan.chart.shared_defaults), NFD_IMAGE_REPOSITORY, nvlink.IMAGE}
    out.sources = image_sources(out.references, plan.intent.spec.operator.registry, upstreams)
    return out


def architectures(ref: str) -> list[str] | None:
    """The CPU architectures an image reference is built for, per gpuconf's facts (gpuconf.arch: the project's build
    files at its release tag, or the driver container's release jobs); None when gpuconf cannot vouch for it."""
    from .. import arch

    found = arch.of_reference(ref)
    return list(found["architectures"]) if found is not None else None


def arm64_notes(plan: Any, references: Iterable[str]) -> list[str]:
    """A note for an intent with Grace (arm64) pools: the images it pulls that have no arm64 build on record."""
    from .. import arch

    pools = [p.name for _, p in arch.grace_pools(plan.intent)]
    if not pools:
        return []
    amd64 = [ref for ref in references if (architectures(ref) or [arch.ARM64]) == ["amd64"]]
    pinned = [ref for ref in references if "@sha256:" in ref]
    unknown = [ref for ref in references if architectures(ref) is None and ref not in pinned]
    out = [f"pool(s) {', '.join(pools)} are arm64 (Grace), and these images are built for amd64 only: "
           + ", ".join(amd64)] if amd64 else []
    if pinned:
        out.append(f"pool(s) {', '.join(pools)} are arm64 (Grace): {len(pinned)} image(s) are pinned by digest, and "
                   "a digest names one manifest, a multi-arch index or a single platform's, which only the registry "
                   "tells: check that each is an index listing linux/arm64 (skopeo inspect --raw)")
    if unknown:
        out.append(f"pool(s) {', '.join(pools)} are arm64 (Grace): gpuconf has no build record of "
                   f"{', '.join(unknown)} (architectures null in --format json); check that each lists linux/arm64")
    if plan.intent.spec.operator.registry:
        # skopeo copy copies only the image of the machine it runs on unless --all (containers/skopeo
        # docs/skopeo-copy.1.md, --all).
        out.append(f"pool(s) {', '.join(pools)} are arm64 (Grace): the mirror needs every architecture of each image "
                   "(skopeo copy --all; without it skopeo copies the image of the machine it runs on only)")
    return out


def driver_images(merged: dict, documents: dict[str, list[dict]]) -> list[tuple[str, str, str]]:
    """(repository, image, version) of every driver the installation runs: the ClusterPolicy's (unless NVIDIADriver
    objects alone run drivers), and each NVIDIADriver's; none when the operator does not manage the driver."""
    driver = _block(merged, "driver")
    if not driver.get("enabled"):
        return []
    drivers = []
    crd = _block(driver, "nvidiaDriverCRD")
    if not crd.get("enabled") or crd.get("deployDefaultCR"):
        drivers.append((str(driver.get("repository", "")), str(driver.get("image", "")), str(driver.get("version", ""))))
    for doc in (d for docs in documents.values() for d in docs if d.get("kind") == "NVIDIADriver"):
        spec = doc["spec"]
        drivers.append((spec["repository"], spec["image"], spec["version"]))
    return drivers


def image_set_configuration(plan: Any, found: ImageList, openshift_version: str) -> dict:
    """oc-mirror's ImageSetConfiguration (mirror.openshift.io/v2alpha1) for an OpenShift cluster: the certified GPU
    Operator's bundle of the pinned chart and Red Hat's NFD Operator from their catalogues (tagged with the
    OpenShift minor), and every image gpuconf's output pulls by tag, from its source.

    Field names: openshift/oc-mirror @ 855b64a3, internal/pkg/api/v2alpha1/type_config.go and
    type_config_include.go (mirror.operators[].catalog and .packages[].name/.channels[].name/minVersion/maxVersion,
    mirror.additionalImages[].name). Catalogue images: NVIDIA's openshift/mirror-gpu-ocp-disconnected.rst @ 52dcb7b8.
    """
    from .. import platforms
    from ..render import openshift

    bundle = platforms.olm_bundle(plan.chart_version)
    version = openshift.bundle_version(plan)
    operators = [
        {"catalog": f"{openshift.CERTIFIED_CATALOG_IMAGE}:v{openshift_version}",
         "packages": [{"name": bundle["package"],
                       "channels": [{"name": bundle["channel"], "minVersion": version, "maxVersion": version}]}]},
    ]
    nfd = openshift.NFD_OPERATOR  # rendered by gpuconf or installed by hand, the NodeFeatureDiscovery needs it
    operators.append({"catalog": f"{nfd['catalogImage']}:v{openshift_version}",
                      "packages": [{"name": nfd["package"], "channels": [{"name": nfd["channel"]}]}]})
    mirror: dict = {"operators": operators}
    sources = sorted({found.sources.get(ref, ref) for ref in found.references})
    if sources:
        mirror["additionalImages"] = [{"name": ref} for ref in sources]
    return {"kind": "ImageSetConfiguration", "apiVersion": "mirror.openshift.io/v2alpha1", "mirror": mirror}

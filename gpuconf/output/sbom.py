"""`gpuconf images --format cyclonedx`: the images an installation pulls as a CycloneDX 1.6 JSON BOM, built with
cyclonedx-python-lib (the optional dependency of `pip install 'gpuconf[sbom]'`; imported only here).

Each image is a `container` component (CycloneDX/specification 1.6.2 schema/bom-1.6.schema.json) with a `pkg:oci`
purl (package-url/purl-spec types/oci-definition.json: no namespace, the name is the last path segment lowercased,
the version a `sha256:` digest, qualifiers `repository_url` and `tag`); an image pinned by digest also carries the
digest as its SHA-256 hash. The BOM has no timestamp and its serial number is derived from its content, so the same
intent gives the same bytes.
"""

from __future__ import annotations

import json
import uuid

from .. import __version__

#: The namespace of the BOM's serial number (a UUIDv5 of the images and their digests).
SERIAL_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:gpuconf:images")


class MissingLibrary(Exception):
    """cyclonedx-python-lib is not installed (exit 2)."""


def split_reference(ref: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of an image reference `repo[:tag][@sha256:hex]`."""
    repository, _, digest = ref.partition("@")
    slash = repository.rfind("/")
    colon = repository.rfind(":")
    tag = None
    if colon > slash:
        repository, tag = repository[:colon], repository[colon + 1:]
    return repository, tag, digest or None


def bom_text(images: list[tuple[str, str, list[str]]], notes: list[str]) -> str:
    """The BOM of images, each (reference the cluster pulls, where the mirror copies it from, the clusters that pull
    it); notes (what could not be listed exactly) become metadata properties `gpuconf:note`."""
    try:
        from cyclonedx.model import HashAlgorithm, HashType, Property
        from cyclonedx.model.bom import Bom, BomMetaData
        from cyclonedx.model.component import Component, ComponentType
        from cyclonedx.model.tool import ToolRepository
        from cyclonedx.output.json import JsonV1Dot6
        from packageurl import PackageURL
    except ImportError:
        raise MissingLibrary("--format cyclonedx needs gpuconf's sbom extra: pip install 'gpuconf[sbom]' "
                             "(cyclonedx-python-lib)") from None
    components = []
    for ref, source, clusters in images:
        repository, tag, digest = split_reference(ref)
        name = repository.rsplit("/", 1)[-1].lower()
        qualifiers = {"repository_url": repository, **({"tag": tag} if tag else {})}
        purl = PackageURL(type="oci", name=name, version=digest, qualifiers=qualifiers)
        properties = [Property(name="gpuconf:image", value=ref)]
        if source != ref:
            properties.append(Property(name="gpuconf:source", value=source))
        properties += [Property(name="gpuconf:cluster", value=c) for c in clusters]
        hashes = [HashType(alg=HashAlgorithm.SHA_256, content=digest.removeprefix("sha256:"))] \
            if digest and digest.startswith("sha256:") else []
        components.append(Component(type=ComponentType.CONTAINER, name=name, version=tag or digest,
                                    group=repository.rpartition("/")[0] or None, purl=purl, bom_ref=ref,
                                    hashes=hashes, properties=properties))
    tool = Component(type=ComponentType.APPLICATION, name="gpuconf", version=__version__)
    metadata = BomMetaData(tools=ToolRepository(components=[tool]),
                           properties=[Property(name="gpuconf:note", value=n) for n in notes])
    serial = uuid.uuid5(SERIAL_NAMESPACE, json.dumps([ref for ref, _, _ in images]))
    text = JsonV1Dot6(Bom(serial_number=serial, metadata=metadata, components=components)).output_as_string()
    doc = json.loads(text)
    doc["metadata"].pop("timestamp", None)  # the library stamps the time of the run: same input, same bytes
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

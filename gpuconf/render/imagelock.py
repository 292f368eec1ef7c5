"""`spec.operator.imageLock`: a file mapping each image reference the render pulls to its `sha256:` digest (as a mirror
tool prints it: `skopeo inspect --format '{{.Digest}}' docker://REF`), and the render that pins every image to it.

How the GPU Operator takes a digest (NVIDIA/gpu-operator v26.7.0 10ee5b3638b8, facts: shared/reference/provenance
facts.md §7): the chart joins `repository/image:version` with `:` for the operator Deployment, its hook Jobs and the
`DRIVER_MANAGER_IMAGE`/`VALIDATOR_IMAGE` env values (templates/_helpers.tpl:71-87), and NFD's subchart joins
`image.repository:image.tag`, so a bare `sha256:` would render `repo/img:sha256:...`; the ClusterPolicy passes a
version through as a string (api/nvidia/v1/clusterpolicy_types.go:2054 `imagePath`). gpuconf therefore writes every
pin as `<tag>@sha256:<hex>` in `version` (NFD: `image.tag`), which every one of those paths accepts. The driver's
`-<osTag>` suffix is not appended to a path that contains `sha256:` (controllers/object_controls.go:3423; NVIDIADriver
`GetImagePath`), so its pin is `<version>-<osTag>@sha256:<hex>`: one digest pins one OS variant.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from typing import Mapping

#: A digest as registries print it (sha256 only: what the operator's `sha256:` checks look for).
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
LOCK_LOC = ("spec", "operator", "imageLock")
#: The lock a change replaces, which only the admission policy reads (gpuconf/render/admission.py).
PREVIOUS_LOCK_LOC = ("spec", "security", "previousImageLock")


def reference(repository: str, image: str, version: str) -> str:
    """repository/image:version, or @sha256:... for a digest."""
    separator = "@" if version.startswith("sha256:") else ":"
    return f"{repository.rstrip('/')}/{image}{separator}{version}"


class LockError(Exception):
    """The image lock cannot be read or is not a map of image references to digests (exit 2)."""


@dataclass(frozen=True)
class Lock:
    """An image lock read: its file (as findings name it) and reference -> digest."""

    file: str
    digests: Mapping[str, str]
    sha256: str = ""  # of the file's bytes: what `render --attest` records as the lock's digest

    def driver_variants(self, reference: str) -> dict[str, str]:
        """OS tag -> digest of the lock's entries for a driver image `reference-<osTag>`."""
        prefix = reference + "-"
        return {ref[len(prefix):]: digest for ref, digest in sorted(self.digests.items())
                if ref.startswith(prefix) and "/" not in ref[len(prefix):] and ":" not in ref[len(prefix):]}


def lock_path(intent, document, loc: tuple[str, ...] = LOCK_LOC) -> str | None:
    """Where the intent's image lock (or, with PREVIOUS_LOCK_LOC, the lock it replaces) is: relative to the file that
    declares it (document: the intent's, or a fleet cluster's merged document), and inside that file's repository
    (gpuconf/repository.py). Raises LockError, at the field, for a path outside it (never opened) or an intent read
    without its document."""
    ref = intent.spec.operator.image_lock if loc == LOCK_LOC else (
        intent.spec.security.previous_image_lock if intent.spec.security is not None else None)
    if ref is None:
        return None
    if document is None:
        raise AssertionError("the image lock is read relative to the intent: give its document")
    from ..repository import outside, repository_of

    source = getattr(document, "source", None)
    declaring = source(loc) if source is not None else document.file
    why = outside(declaring, ref, repository_of(document.file))  # a fleet's: the fleet file's repository
    if why is not None:
        line, column = document.position(loc)
        raise LockError(f"{declaring}:{line}:{column}: {'.'.join(loc)}: {ref!r} {why} (keep the lock in the "
                        "intent's repository and name it relative to the intent)")
    return posixpath.normpath(posixpath.join(posixpath.dirname(declaring), ref))


def read_lock(path: str, loc: tuple[str, ...] = LOCK_LOC) -> Lock:
    """The lock in path, through the intent loader's guards (size, UTF-8, no aliases or tags, string keys); raises
    LockError naming the file (and the entry's line and column) with the reason."""
    from ..findings import dotted
    from ..intent.loader import CODE_NOT_MAPPING, LoadError, load_file

    if not os.path.isfile(path):
        raise LockError(f"{path}: the image lock ({dotted(loc)}) does not exist or is not a file")
    try:
        doc = load_file(path, path)
    except LoadError as exc:
        f = exc.finding
        message = f.message
        if f.code == CODE_NOT_MAPPING:  # the loader's wording names an intent's top-level keys, not a lock's
            message = "top level must be a map of image references to digests (REGISTRY/PATH:TAG: sha256:...), " \
                      "not a " + message.rsplit(", not a ", 1)[-1]
        raise LockError(f"{f.file}:{f.line}:{f.column}: the image lock cannot be read: {message}") from None
    digests = {}
    for key, value in doc.data.items():
        line, column = doc.position((key,), point_at_key=True)
        if not _is_reference(key):
            raise LockError(f"{path}:{line}:{column}: {key!r} is not an image reference with a tag "
                            "(REGISTRY/PATH:TAG, as `gpuconf images` prints it)")
        if not isinstance(value, str) or not DIGEST.fullmatch(value):
            line, column = doc.position((key,))
            shown = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else \
                f"a {type(value).__name__.replace('Commented', '').lower()}"
            raise LockError(f"{path}:{line}:{column}: {key}: {shown} is not a digest (sha256: and 64 lower-case hex "
                            "digits, as `skopeo inspect --format '{{.Digest}}'` prints it)")
        digests[key] = value
    return Lock(path, digests, doc.digest)


def _is_reference(key: str) -> bool:
    repository, _, tag = key.rpartition(":")
    return bool(repository) and "/" in repository and "@" not in key and bool(tag) and "/" not in tag


def pinned(lock: Lock | None, reference: str, version: str) -> str:
    """version pinned as `version@digest` when the lock has reference, else version unchanged."""
    digest = lock.digests.get(reference) if lock is not None else None
    return f"{version}@{digest}" if digest else version


def driver_pinned(lock: Lock | None, reference: str, version: str) -> str:
    """A driver version pinned as `version-<osTag>@digest` when the lock has exactly one OS variant of it."""
    variants = lock.driver_variants(reference) if lock is not None else {}
    if len(variants) != 1:
        return version
    [(os_tag, digest)] = variants.items()
    return f"{version}-{os_tag}@{digest}"


def pins(version: str, want: str) -> bool:
    """True when a driver version is want pinned by the lock (`want-<osTag>@sha256:...` or `want@sha256:...`)."""
    base, at, _ = version.partition("@")
    return bool(at) and (base == want or base.startswith(want + "-"))


#: Blocks whose empty version means the chart's appVersion (the released chart version; gpu-operator-facts §2).
APP_VERSIONED = frozenset({("operator",), ("validator",), ("nodeStatusExporter",)})

"""Release arithmetic of the GPU Operator: versions as `vYY.MM.PP`, majors as `YY.MM` (NVIDIA's versioning text:
"The first two fields, YY.MM identify a major version"), and the supported upgrade path ("Upgrades are only supported
within a major release or to the next major release", life-cycle-policy.rst, unchanged since 2024-10)."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Sequence

_VERSION = re.compile(r"v?(\d{1,4})\.(\d{1,4})\.(\d{1,6})")  # bounded: a 10k-digit "version" is none


def version_key(version: str) -> tuple[int, int, int]:
    """(YY, MM, PP) of a release; (0, 0, 0) for a string that is no release, so that it sorts first."""
    match = _VERSION.fullmatch(version.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else (0, 0, 0)


def is_version(text: str) -> bool:
    """Whether text spells a release (`v26.7.2`, `26.7.2`)."""
    return _VERSION.fullmatch(text.strip()) is not None


def major(version: str) -> tuple[int, int]:
    """The major release (YY, MM) a version belongs to."""
    return version_key(version)[:2]


def major_name(version: str) -> str:
    """`v26.7` for v26.7.2."""
    yy, mm = major(version)
    return f"v{yy}.{mm}"


def driver_key(version: str) -> tuple[int, ...]:
    """A driver version (595.91.07) as numbers, for sorting."""
    return tuple(int(p) for p in re.findall(r"\d+", version))


def in_defaults(facts: dict[str, Any], path: str) -> bool:
    """Whether a release's values.yaml (with the NFD subchart's) has a key."""
    node: Any = facts["defaults"]
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def has_path(facts: dict[str, Any], path: str) -> bool:
    """Whether a release has a values key: in its defaults, or read by its templates although values.yaml lacks it."""
    return in_defaults(facts, path) or any(path == key or path.startswith(key + ".")
                                           for key in facts["templateOnlyKeys"])


def facts_digest(data: bytes) -> str:
    """The digest the table records for a facts file, so that a changed file is noticed."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def ordered(versions: Iterable[str]) -> list[str]:
    """Versions oldest first."""
    return sorted(set(versions), key=version_key)


def upgrade_path(start: str, target: str, known: Sequence[str]) -> list[str]:
    """The releases a supported move from start to target passes through, both ends included: start, then the
    newest known patch of each major in between, then target. A move within a major, or to the next or previous
    major, is the two ends alone."""
    majors = sorted({major(v) for v in known} | {major(start), major(target)})
    lo, hi = majors.index(major(start)), majors.index(major(target))
    if abs(hi - lo) <= 1:
        return [start, target]
    step = 1 if hi > lo else -1
    path = [start]
    for index in range(lo + step, hi, step):
        patches = [v for v in known if major(v) == majors[index]]
        path.append(max(patches, key=version_key))
    path.append(target)
    return path


def skips_a_major(start: str, target: str, known: Sequence[str]) -> bool:
    """Whether a move from start to target leaves out a major release NVIDIA's rule makes it pass through."""
    return len(upgrade_path(start, target, known)) > 2

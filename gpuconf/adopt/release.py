"""The installed release: which GPU Operator chart an installation runs, decided once for every import path.

Evidence, in the words the draft's comment uses: the live Helm release (its Secret's chart metadata), the values'
own operator.version or validator.version (both the gpu-operator image, tagged with the chart's appVersion), the
gpu-operator image the GPU nodes run (the validator), and --chart-version. Adoption never moves the chart: a
--chart-version that names another release than the one the evidence shows is refused, and so is a release gpuconf
has no facts for (add it with `gpuconf chart add`, or name with --chart-version the release to take it for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .. import catalog

#: The comment of a version given on the command line.
GIVEN = "--chart-version"
#: The comment of the nodes' evidence (the importer's words since gpuconf read it first).
NODES = "the gpu-operator image (the validator) the GPU nodes run"


class ReleaseProblem(Exception):
    """The installed release cannot be told, or --chart-version would move it: a usage error (exit 2)."""


@dataclass(frozen=True)
class Evidence:
    """One source's word on the installed release."""

    version: str
    words: str


@dataclass(frozen=True)
class Release:
    """The chart the draft adopts onto, and where that came from (the draft's comment on chartVersion)."""

    version: str
    why: str
    inferred: bool = True


def normalized(tag: str) -> str:
    """A release as gpuconf spells it (NVIDIA's versions carry the v: v26.7.0)."""
    return tag if tag.startswith("v") else "v" + tag


def helm(version: str | None, where: str) -> list[Evidence]:
    """The Helm release's chart version (Secret metadata.version is the chart's SemVer, with or without a v)."""
    return [Evidence(normalized(version), f"the Helm release {where}")] if version else []


def values(merged: dict) -> list[Evidence]:
    """operator.version and validator.version the values set: the gpu-operator image's tag, which a released chart
    sets to its own version (its appVersion) when the values leave it out."""
    out = []
    for block in ("operator", "validator"):
        section = merged.get(block) if isinstance(merged, dict) else None
        tag = section.get("version") if isinstance(section, dict) else None
        if isinstance(tag, str) and tag.strip():
            out.append(Evidence(normalized(tag.strip()), f"{block}.version in the values (the gpu-operator image's tag)"))
    return out


def nodes(tags: Iterable[str]) -> list[Evidence]:
    """The gpu-operator image tags the GPU nodes pulled (the validator runs on every GPU node)."""
    seen = sorted(set(tags))
    if len(seen) == 1:
        return [Evidence(normalized(seen[0]), NODES)]
    return [Evidence(normalized(t), f"the gpu-operator image {t} on some GPU nodes") for t in seen]


def decide(given: str | None, evidence: list[Evidence]) -> Release:
    """The installed release; raises ReleaseProblem when it is unknown to gpuconf, the evidence disagrees, or
    --chart-version names another release than the one that runs."""
    known = catalog.chart_versions()
    by_version: dict[str, list[str]] = {}
    for e in evidence:
        words = by_version.setdefault(e.version, [])
        if e.words not in words:
            words.append(e.words)
    said = "; ".join(f"{v} ({' and '.join(w)})" for v, w in by_version.items())
    add = ("add it with `gpuconf chart add` (from that chart's tarball), or pass --chart-version with the release "
           "gpuconf knows that it runs as")
    if given is not None:
        if catalog.chart(given) is None:
            raise ReleaseProblem(f"gpuconf has no facts for GPU Operator chart {given!r} (known: {', '.join(known)}): "
                                 "add it with `gpuconf chart add`")
        if given in by_version:
            return Release(given, " and ".join([*by_version[given], GIVEN]))
        if any(catalog.chart(v) is not None for v in by_version):
            raise ReleaseProblem(
                f"the installation runs GPU Operator chart {said}, and --chart-version {given} names another: "
                "adoption never moves the chart. Import onto the release that runs (leave --chart-version out), "
                "then move the chart as a change of its own (edit spec.operator.chartVersion; `gpuconf diff` plans "
                "it)")
        return Release(given, f"{GIVEN} (the release that runs" + (
            f"; gpuconf has no facts for {said}" if by_version else "") + ")")
    if len(by_version) > 1:
        raise ReleaseProblem(f"the installation's evidence names several GPU Operator charts: {said} (an upgrade "
                             "under way?); pass --chart-version with the release that runs")
    if by_version:
        (version, words), = by_version.items()
        if catalog.chart(version) is None:
            raise ReleaseProblem(f"the installation runs GPU Operator chart {version} ({' and '.join(words)}), "
                                 f"which gpuconf has no facts for: {add}")
        return Release(version, " and ".join(words))
    return Release(known[-1], "not inferred: nothing read names the release that runs (no Helm release, no "
                              "operator.version in the values, no gpu-operator image on the GPU nodes): the newest "
                              "gpuconf knows; pass --chart-version with the release that runs", inferred=False)


def of_inputs(inputs: list[Any]) -> list[Evidence]:
    """The values' evidence of values inputs (adopt.sources.ValuesInput), merged as Helm merges them."""
    from . import sources as S

    if not inputs:
        return []
    merged, _ = S.merge_inputs(inputs)
    inner = merged.get(S.PARENT_KEY)
    return values(merged) + (values(inner) if isinstance(inner, dict) else [])

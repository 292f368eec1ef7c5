"""A fleet's rollout stages: which clusters a merged change reaches first, and how many at a time.

A stage selects clusters by name, by the layers they take, or by the labels of their merged intent (metadata.labels,
set by the base, a layer or the overlay); a stage that names no selector takes every cluster left. Each cluster
belongs to the first stage that selects it, so gpuconf knows every cluster's stage before Argo CD or Flux does, and
says so in the output (the `gpuconf.dev/stage` label), in the review and in the findings below.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Annotated, Any, Dict, List, Mapping, Optional, Sequence

from pydantic import Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from ..findings import ERROR, WARNING, Finding, dotted
from .model import INT32_MAX, MAX_ITEMS, MAX_LABELS, Name, NonEmpty
from .strict import Strict

CODE_STAGE = "GC407"
TITLE = ("fleet: every cluster is in exactly one rollout stage, each stage selects clusters that exist, and the "
         "labels that reach Kubernetes objects are valid label keys and values")
#: Labels gpuconf itself puts on the fleet's objects: a cluster's metadata.labels may not set them.
RESERVED_PREFIXES = ("gpuconf.dev/", "app.kubernetes.io/")


def _max_update(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX:
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit() and 0 <= int(value[:-1]) <= 100:
        return value
    raise PydanticCustomError("max_update", "must be a cluster count (0 to 2147483647) or a percentage such as \"25%\"")


MaxUpdate = Annotated[Any, PlainValidator(_max_update), WithJsonSchema({
    "oneOf": [{"type": "integer", "minimum": 0, "maximum": INT32_MAX},
              {"type": "string", "pattern": r"^(100|[1-9]?[0-9])%$"}],
    "description": "Clusters synced at once: a count or a percentage of the stage's clusters (rounded down, at least "
                   "one above 0%); 0 holds the stage until someone syncs it by hand.",
})]


class Stage(Strict):
    """One step of the fleet's rollout."""

    name: Name = Field(description="Stage name: the value of the gpuconf.dev/stage label of its clusters' objects.",
                       examples=["canary"])
    clusters: List[Name] = Field(default_factory=list, max_length=MAX_ITEMS,
                                 description="Clusters this stage takes, by name.", examples=[["eu-00"]])
    layers: List[Name] = Field(default_factory=list, max_length=MAX_ITEMS,
                               description="Takes the clusters that take any of these layers (spec.layers).",
                               examples=[["eu"]])
    match_labels: Dict[NonEmpty, str] = Field(
        default_factory=dict, max_length=MAX_LABELS,
        description="Takes the clusters whose merged metadata.labels hold all of these.",
        examples=[{"tier": "canary"}])
    max_update: Optional[MaxUpdate] = Field(None, description="Clusters synced at once; default all of the stage's.",
                                            examples=[1, "25%"])

    @property
    def catch_all(self) -> bool:
        """A stage without selectors takes every cluster no earlier stage took."""
        return not (self.clusters or self.layers or self.match_labels)


@dataclass(frozen=True)
class StagePlan:
    """A stage as rendered and reviewed: its place, its clusters (fleet order) and how many sync at once."""

    index: int  # 0-based
    name: str
    clusters: tuple[str, ...]
    max_update: int | str | None
    total: int  # stages in the fleet

    def at_once(self, count: int | None = None) -> int:
        """How many of count clusters (default: all of the stage's) sync at once, as Argo CD's RollingSync counts a
        step's maxUpdate: a percentage of the step's Applications, rounded down but at least one above 0%."""
        count = len(self.clusters) if count is None else count
        value = self.max_update
        if value is None:
            return count
        if isinstance(value, str):
            percent = int(value[:-1])
            return 0 if percent == 0 else max(1, len(self.clusters) * percent // 100)
        return value

    def describe(self) -> str:
        """`2/4 eu (10 clusters, 5 at a time)`."""
        n = len(self.clusters)
        at = self.at_once()
        pace = ("held until someone syncs it" if at == 0 else "all at once" if at >= n else f"{at} at a time")
        return f"{self.index + 1}/{self.total} {self.name} ({n} cluster{'s' if n != 1 else ''}, {pace})"


def labels_of(data: Any) -> dict[str, str]:
    meta = data.get("metadata") if isinstance(data, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(labels, dict) else {}


def label_findings(document: Any) -> list[Finding]:
    """The merged intent's metadata.labels that cannot be a Kubernetes label, or that gpuconf sets itself: they
    reach the fleet's Applications and Flux Kustomizations. document: a fleet.MergedDocument."""
    from .rules.syntax import label_value_ok, qualified_name_problem

    out = []
    for key, value in labels_of(document.data).items():
        if not key:  # the intent's own check says so (GC205)
            continue
        loc = ("metadata", "labels", key)
        problem = qualified_name_problem(key)
        if problem is None and key.startswith(RESERVED_PREFIXES):
            problem = "is one gpuconf sets on the fleet's objects itself"
            hint = f"use a key outside {' and '.join(RESERVED_PREFIXES)}"
        elif problem is not None:
            hint = "label keys are an optional DNS-subdomain prefix and a name: region, example.com/tier"
        elif not label_value_ok(value):
            problem = f"has the value {value[:80]!r}, which is not a label value"
            hint = "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        if problem is None:
            continue
        line, column = document.position(loc, point_at_key=True)
        out.append(Finding(document.source(loc), line, column, ERROR, CODE_STAGE, dotted(loc),
                           f"label {key[:80]!r} {problem}; the fleet's Applications and Flux objects carry it", hint))
    return out


def assign(doc: Any, stages: Sequence[Stage], clusters: Sequence[tuple[str, Sequence[str], Mapping[str, str]]],
           layers: Sequence[str]) -> tuple[list[StagePlan], list[Finding]]:
    """Each cluster's stage, and what is wrong with the stages. doc: the fleet file (positions); clusters: (name, the
    layers it takes, its merged labels) in fleet order; layers: the layer names spec.layers declares."""
    if not stages:
        return [], []
    findings: list[Finding] = []

    def finding(loc: tuple, message: str, hint: str, severity: str = ERROR) -> None:
        line, column = doc.position(loc)
        findings.append(Finding(doc.file, line, column, severity, CODE_STAGE, dotted(loc), message, hint))

    names = [c[0] for c in clusters]
    seen: dict[str, int] = {}
    for i, stage in enumerate(stages):
        if stage.name in seen:
            finding(("spec", "stages", i, "name"), f"stage {stage.name!r} is declared twice (first as "
                                                   f"stages[{seen[stage.name]}])", "give each stage its own name")
        seen.setdefault(stage.name, i)
        for j, name in enumerate(stage.clusters):
            if name not in names:
                close = difflib.get_close_matches(name, names, n=1)
                finding(("spec", "stages", i, "clusters", j), f"stage {stage.name} names cluster {name!r}, which "
                                                              "spec.clusters does not declare",
                        f"did you mean {close[0]!r}?" if close else "name a cluster of spec.clusters")
        for j, name in enumerate(stage.layers):
            if name not in layers:
                close = difflib.get_close_matches(name, list(layers), n=1)
                finding(("spec", "stages", i, "layers", j), f"stage {stage.name} names layer {name!r}, which "
                                                            "spec.layers does not declare",
                        f"did you mean {close[0]!r}?" if close else "name a layer of spec.layers")
    for i, stage in enumerate(stages[:-1]):
        if stage.catch_all:
            finding(("spec", "stages", i), f"stage {stage.name} has no selector, so it takes every cluster and the "
                                           f"stages after it get none", "give it clusters, layers or matchLabels, or "
                                                                        "make it the last stage")
    taken: dict[str, int] = {}
    for name, took, labels in clusters:
        for i, stage in enumerate(stages):
            if (stage.catch_all or name in stage.clusters or any(layer in stage.layers for layer in took)
                    or (stage.match_labels and all(labels.get(k) == v for k, v in stage.match_labels.items()))):
                taken[name] = i
                break
    for i, stage in enumerate(stages):
        for j, name in enumerate(stage.clusters):
            if name in taken and taken[name] < i:
                first = stages[taken[name]].name
                finding(("spec", "stages", i, "clusters", j), f"stage {stage.name} names cluster {name}, but the "
                                                              f"earlier stage {first} already takes it",
                        f"a cluster is in the first stage that selects it: remove it from {first}'s selection or "
                        f"from this stage")
    left = [n for n in names if n not in taken]
    if left:
        shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        finding(("spec", "stages"), f"cluster{'s' if len(left) != 1 else ''} {shown} {'are' if len(left) != 1 else 'is'}"
                                    f" in no stage, so no rollout would ever sync {'them' if len(left) != 1 else 'it'}",
                "end with a stage that has no selector (it takes every cluster left), or select them")
    plans = []
    for i, stage in enumerate(stages):
        members = tuple(n for n in names if taken.get(n) == i)
        if not members and not any(f.path.startswith(f"spec.stages[{i}]") for f in findings):
            finding(("spec", "stages", i, "name"), f"stage {stage.name} selects no cluster",
                    "check its clusters, layers and matchLabels against the clusters' merged labels", WARNING)
        plans.append(StagePlan(i, stage.name, members, stage.max_update, len(stages)))
    return plans, findings


def stage_of(plans: Sequence[StagePlan], cluster: str) -> Optional[StagePlan]:
    """The stage that takes cluster, or None (a fleet without stages)."""
    return next((p for p in plans if cluster in p.clusters), None)

"""`gpuconf chart add`: the facts of a chart release gpuconf does not ship, derived offline from what `helm pull` gives
and written into the user's repository (FOLDER, beside the intents, committed so that CI renders the same), with the
known release whose semantics gpuconf applies to it and every template and CRD that differs from that release's."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import releases
from .derive import derive
from .source import ChartSource, ChartSourceError, read_chart

#: The folder beside the intents where the facts of user-added charts live (one <version>.json each).
FOLDER = "gpuconf-charts"
TOOL = "gpuconf chart add"
ORIGIN = TOOL


@dataclass(frozen=True)
class Comparison:
    """How a new chart's files compare with the known release whose semantics gpuconf applies to it."""

    version: str
    semantics_of: str
    templates: int  # how many templates the new chart has
    crds: int  # how many CRDs it ships
    identical_templates: int
    changed_templates: tuple[str, ...] = ()
    added_templates: tuple[str, ...] = ()
    removed_templates: tuple[str, ...] = ()
    changed_crds: tuple[str, ...] = ()
    added_crds: tuple[str, ...] = ()
    removed_crds: tuple[str, ...] = ()
    keys_added: tuple[str, ...] = ()
    keys_removed: tuple[str, ...] = ()

    @property
    def differing_templates(self) -> list[str]:
        """Every template that is not the known release's, sorted."""
        return sorted({*self.changed_templates, *self.added_templates, *self.removed_templates})

    @property
    def differing_crds(self) -> list[str]:
        """Every CRD file that is not the known release's, sorted."""
        return sorted({*self.changed_crds, *self.added_crds, *self.removed_crds})

    @property
    def full(self) -> bool:
        """Whether the chart's templates and CRDs are all the known release's, byte for byte."""
        return not self.differing_templates and not self.differing_crds

    def _how(self, name: str, changed: tuple[str, ...], added: tuple[str, ...]) -> str:
        return "changed" if name in changed else "added" if name in added else "removed"

    def lines(self) -> list[str]:
        """The human summary: one headline, then one warning per differing template and CRD, then the values keys
        the chart adds or drops."""
        new, known = self.version, self.semantics_of
        if self.full:
            out = [f"{new}: full support: its {_count(self.templates, 'template')} and {_count(self.crds, 'CRD')} "
                   f"are {known}'s"]
        else:
            parts = []
            if self.differing_templates:
                listing = ", ".join(f"{name} ({self._how(name, self.changed_templates, self.added_templates)})"
                                    for name in self.differing_templates)
                parts.append(f"{_count(len(self.differing_templates), 'template')} "
                             f"{_verb(len(self.differing_templates))}: {listing}")
            if self.differing_crds:
                listing = ", ".join(f"{name} ({self._how(name, self.changed_crds, self.added_crds)})"
                                    for name in self.differing_crds)
                parts.append(f"{_count(len(self.differing_crds), 'CRD')} {_verb(len(self.differing_crds))}: {listing}")
            out = [f"{new}: gpuconf applies {known}'s semantics; {'; '.join(parts)} — review what it renders before "
                   f"relying on it"]
        for name in self.differing_templates:
            how = self._how(name, self.changed_templates, self.added_templates)
            out.append(f"warning: {new}: template {name} ({how}): " + {
                "changed": f"differs from {known}'s; gpuconf's checks of what it renders are {known}'s",
                "added": f"{known} has no such template; gpuconf knows nothing of what it renders",
                "removed": f"{known} renders it, this chart does not; gpuconf may expect what it rendered",
            }[how])
        for name in self.differing_crds:
            how = self._how(name, self.changed_crds, self.added_crds)
            out.append(f"warning: {new}: CRD {name} ({how}): " + {
                "changed": f"differs from {known}'s",
                "added": f"{known} ships no such CRD",
                "removed": f"{known} ships it, this chart does not",
            }[how])
        if self.keys_added:
            out.append(f"note: {new}: values keys added versus {known}: {', '.join(self.keys_added)}")
        if self.keys_removed:
            out.append(f"note: {new}: values keys removed versus {known}: {', '.join(self.keys_removed)}")
        return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _verb(n: int) -> str:
    return "differs" if n == 1 else "differ"


def _same_named(new: dict[str, Any], old: dict[str, Any]) -> tuple[list[str], list[str], list[str], list[str]]:
    """(identical, changed, added, removed) names of two name -> digest maps."""
    identical = sorted(n for n in new if n in old and new[n] == old[n])
    changed = sorted(n for n in new if n in old and new[n] != old[n])
    return identical, changed, sorted(set(new) - set(old)), sorted(set(old) - set(new))


def _tree_paths(node: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every path of a defaults tree as a tuple of keys (a key may hold dots: `openshift.io/scc`)."""
    out: set[tuple[str, ...]] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(prefix + (key,))
            out |= _tree_paths(value, prefix + (key,))
    return out


def _keys(facts: dict[str, Any]) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """(paths of a release's defaults, its template-only keys), each as tuples of keys."""
    return _tree_paths(facts["defaults"]), {tuple(k.split(".")) for k in facts["templateOnlyKeys"]}


def _has(keys: tuple[set[tuple[str, ...]], set[tuple[str, ...]]], path: tuple[str, ...]) -> bool:
    """releases.has_path for a tuple path: in the defaults, or at or below a template-only key."""
    defaults, template_only = keys
    return path in defaults or any(path[:n] in template_only for n in range(1, len(path) + 1))


def _topmost(paths_: set[tuple[str, ...]]) -> tuple[str, ...]:
    """The dotted keys without those below another of them (an added block is named once, not with each key)."""
    return tuple(sorted(".".join(p) for p in paths_ if not any(p[:n] in paths_ for n in range(1, len(p)))))


def compare(facts: dict[str, Any], known: dict[str, dict[str, Any]]) -> Comparison:
    """The known release whose semantics a new chart's facts get, and how the chart differs from it: the release
    with the most identical templates, ties broken by the same major release, then the newest."""
    version = facts["version"]
    if version in known:
        raise ChartSourceError(f"gpuconf ships chart {version} already; `chart add` is for releases it does not ship")
    if not known:
        raise ChartSourceError(f"{version}: no known release to compare the chart with")
    templates = facts["templates"]

    def rank(candidate: str) -> tuple[int, bool, tuple[int, int, int]]:
        identical = len(_same_named(templates, known[candidate]["templates"])[0])
        return identical, releases.major(candidate) == releases.major(version), releases.version_key(candidate)

    chosen = max(known, key=rank)
    base = known[chosen]
    identical, changed, added, removed = _same_named(templates, base["templates"])
    crds_new = {name: crd["sha256"] for name, crd in facts["crds"].items()}
    crds_old = {name: crd["sha256"] for name, crd in base["crds"].items()}
    _, crd_changed, crd_added, crd_removed = _same_named(crds_new, crds_old)
    keys_new, keys_old = _keys(facts), _keys(base)
    return Comparison(
        version=version, semantics_of=chosen, templates=len(templates), crds=len(facts["crds"]),
        identical_templates=len(identical), changed_templates=tuple(changed), added_templates=tuple(added),
        removed_templates=tuple(removed), changed_crds=tuple(crd_changed), added_crds=tuple(crd_added),
        removed_crds=tuple(crd_removed),
        keys_added=_topmost({k for k in set.union(*keys_new) if not _has(keys_old, k)}),
        keys_removed=_topmost({k for k in set.union(*keys_old) if not _has(keys_new, k)}))


def input_name(path: Path) -> str:
    """The name the generated header gives the input: its base name, never where it lies."""
    return path.name if path.name not in ("", ".", "..") else path.resolve().name


def input_digest(path: Path, src: ChartSource) -> str:
    """sha256 of the archive's bytes; for a folder, of the chart files read from it (sorted by path, each as its
    path, a NUL, its length, a NUL and its bytes, so that moving bytes between files changes the digest)."""
    if path.is_file():
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for rel in sorted(src.files):
        data = src.files[rel]
        digest.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode("ascii") + b"\0" + data)
    return "sha256:" + digest.hexdigest()


def dump(data: Any) -> bytes:
    """The bytes of a facts file: sorted keys, two-space indent, UTF-8, trailing newline (as the shipped ones)."""
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def add(path: Path, into: Path, known: dict[str, dict[str, Any]]) -> tuple[Path, Comparison]:
    """Derive the facts of the chart at path (a .tgz or folder as `helm pull` gives it) and write them to
    into/<version>.json; known maps each shipped release to its facts. Nothing is written when anything fails."""
    from .valuesschema import values_schema  # jsonschema behind it: only `chart add` pays for it

    src = read_chart(path)
    facts = derive(src)
    comparison = compare(facts, known)  # refuses a shipped release before the schema is built
    schema = values_schema(src, facts)
    version, base = facts["version"], comparison.semantics_of
    matrix = known[base].get("componentMatrix")
    if not isinstance(matrix, dict):
        raise ChartSourceError(f"gpuconf's facts of {base} have no componentMatrix to borrow")
    borrowed = (f"borrowed from {base} ({matrix.get('source', 'gpuconf')}); not verified for {version}: NVIDIA's "
                f"component matrix for it was not read")
    facts.update({
        "componentMatrix": {**matrix, "source": borrowed},
        "differingTemplates": comparison.differing_templates,
        "generated": {
            "command": f"{TOOL} {input_name(path)}",
            "inputs": {input_name(path): input_digest(path, src)},
            "tool": TOOL,
            "what": f"Base defaults, quirks, capabilities and values schema of GPU Operator chart {version}, read from "
                    f"the chart itself by gpuconf.chartfacts; gpuconf applies {base}'s semantics to it. Generated: do "
                    f"not edit by hand; rerun `{TOOL}` on the chart.",
        },
        "origin": ORIGIN,
        "semanticsOf": base,
        "valuesSchema": schema,
    })
    from ..output.writer import write_text_atomic  # a temporary file in the folder, then a rename

    target = into / f"{version}.json"
    write_text_atomic(target, dump(facts).decode("utf-8"))
    return target, comparison

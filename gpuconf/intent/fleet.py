"""Fleets: one base intent plus an overlay per cluster, merged strategically, validated and rendered per cluster.

A fleet file (`kind: Fleet`) names a base intent and its clusters, each with an optional overlay: a partial intent
document. Each cluster's intent is base <- overlay, merged like a Kubernetes strategic merge patch:

* mappings merge key by key, recursively; scalars and other lists (namespaces, taints, overrides, ...) replace;
* the lists of named items, spec.pools and spec.teams, merge item by item on `name` (new names are appended);
* `$patch: delete` in an overlay's pool or team removes that item; `$patch: replace` in any mapping replaces it
  instead of merging into it;
* the fleet names the cluster (metadata.name); an overlay may repeat the name, not change it.

The merged tree remembers, node by node, which file (and line and column) it came from, so every finding about a
merged cluster points into the file that holds the offending node: the base or the overlay.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Sequence

from pydantic import Field

from ..findings import ERROR, Finding, dotted, sort_findings
from .loader import Document, LoadError, load_file
from .model import MAX_ITEMS, Metadata, Name, NonEmpty
from .stages import CODE_STAGE, Stage, StagePlan
from .stages import TITLE as STAGE_TITLE
from .strict import Strict

PATCH = "$patch"
#: Lists whose items merge on `name` instead of being replaced as a whole.
NAMED_LISTS = {("spec", "pools"), ("spec", "teams")}

CODE_FILE = "GC401"
CODE_DUPLICATE_CLUSTER = "GC402"
CODE_NAME = "GC403"
CODE_DUPLICATE_ITEM = "GC404"
CODE_PATCH = "GC405"
CODE_COHERENCE = "GC406"
TITLES = {
    CODE_FILE: "fleet: the base, a layer or an overlay file does not exist or is outside the fleet's repository, or a "
               "cluster names a layer the fleet does not declare",
    CODE_DUPLICATE_CLUSTER: "fleet: cluster names are unique (each has its own output folder)",
    CODE_NAME: "fleet: an overlay's metadata.name differs from the fleet's name for the cluster (a layer names none)",
    CODE_DUPLICATE_ITEM: "fleet: an overlay names the same pool or team twice",
    CODE_PATCH: "fleet: $patch is replace (any mapping) or delete (an existing pool or team)",
    CODE_COHERENCE: "fleet: clusters agree on what they share (Argo CD namespace; output folders)",
    CODE_STAGE: STAGE_TITLE,
}


# --- the fleet file --------------------------------------------------------------------------------------------


class FleetCluster(Strict):
    """One cluster of the fleet: its name, its layers and its overlay."""

    name: Name = Field(description="Cluster name: metadata.name of the merged intent and its output folder.")
    layers: List[Name] = Field(default_factory=list, max_length=MAX_ITEMS,
                               description="Layers of spec.layers merged over the base before the overlay, in this "
                                           "order (the later wins): a region, an environment.",
                               examples=[["eu", "production"]])
    overlay: Optional[NonEmpty] = Field(None, description="Partial intent merged over the base (path relative to "
                                                          "the fleet file, inside its repository); omit for the base "
                                                          "as it is.")


class FleetSpec(Strict):
    """The base intent and the clusters built from it."""

    base: NonEmpty = Field(description="Intent every cluster starts from (path relative to the fleet file, inside its "
                                       "repository).")
    layers: Dict[Name, NonEmpty] = Field(
        default_factory=dict, max_length=MAX_ITEMS,
        description="Named partial intents between the base and the clusters' overlays (layer name -> path relative "
                    "to the fleet file): settings a group of clusters shares, such as a region's registry mirror. A "
                    "cluster lists the ones it takes in `layers`.",
        examples=[{"eu": "layers/eu.yaml", "production": "layers/production.yaml"}])
    clusters: List[FleetCluster] = Field(min_length=1, max_length=MAX_ITEMS, description="The fleet's clusters.")
    stages: List[Stage] = Field(
        default_factory=list, max_length=MAX_ITEMS,
        description="The rollout, in order: a merged change reaches the clusters of one stage, and the next stage "
                    "only once they are healthy (Argo CD's progressive sync), or when the team promotes the next "
                    "stage's source (Flux). Each cluster is in the first stage that selects it. Without stages, "
                    "every cluster syncs a change at once.",
        examples=[[{"name": "canary", "matchLabels": {"tier": "canary"}, "maxUpdate": 1},
                   {"name": "eu", "layers": ["eu"], "maxUpdate": "50%"}, {"name": "rest"}]])


class Fleet(Strict):
    """Several clusters that share a base intent."""

    api_version: Literal["gpuconf.dev/v1alpha1"] = Field(description="Always gpuconf.dev/v1alpha1.")
    kind: Literal["Fleet"] = Field(description="Always Fleet.")
    metadata: Metadata
    spec: FleetSpec


# --- positioned merge ------------------------------------------------------------------------------------------


@dataclass
class Origin:
    """Where a node of a merged intent was written."""

    file: str
    line: int
    column: int
    key: tuple[int, int] | None = None  # the key's position, for mapping entries


@dataclass
class _Node:
    value: Any  # dict[str, _Node], list[_Node] or a scalar
    origin: Origin
    loc: tuple = ()  # where it sits in its own file
    weak: bool = False  # made up by the fleet (metadata around the name): never the origin of a merged container


def _tree(doc: Document) -> _Node:
    """A document as nodes that carry their file and position (each where Document.position puts it, found in one
    walk down the document instead of one walk from the top per node)."""
    root = doc.data
    if hasattr(root, "lc"):
        return _node(doc.file, root, (), False, root.lc.line, root.lc.col, None, True)
    return _node(doc.file, root, (), False, 0, 0, None, False)


def _node(file: str, value: Any, loc: tuple, entry: bool, line: int, col: int, key: tuple[int, int] | None,
          intact: bool) -> _Node:
    """The node of value at loc, which loader.locate's walk reached at (line, col) with the key at key; intact: the
    walk found every step of loc (it stops at the first it cannot follow, and every node below keeps that place)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    at = key if intact and key is not None and value is None else (line, col)  # an empty value: its key
    at_key = key if intact and key is not None else (line, col)
    origin = Origin(file, at[0] + 1, at[1] + 1, (at_key[0] + 1, at_key[1] + 1) if entry else None)
    if isinstance(value, dict):
        follow = intact and isinstance(value, CommentedMap)
        children = {}
        for k, item in value.items():
            if follow and not isinstance(k, int):
                (kl, kc), (vl, vc) = value.lc.key(k), value.lc.value(k)
                children[k] = _node(file, item, (*loc, k), True, vl, vc, (kl, kc), True)
            else:
                children[k] = _node(file, item, (*loc, k), True, line, col, None, False)
        return _Node(children, origin, loc)
    if isinstance(value, list):
        follow = intact and isinstance(value, CommentedSeq)
        return _Node([_node(file, item, (*loc, i), False, *(value.lc.item(i) if follow else (line, col)), None, follow)
                      for i, item in enumerate(value)], origin, loc)
    return _Node(value, origin, loc)


class _Merger:
    """Merges overlay nodes into base nodes, collecting findings about the overlay itself."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def finding(self, node: _Node, code: str, message: str, hint: str | None = None, at_key: bool = False) -> None:
        o = node.origin
        line, column = o.key if at_key and o.key else (o.line, o.column)
        self.findings.append(Finding(o.file, line, column, ERROR, code, dotted(node.loc), message, hint))

    def merge(self, base: _Node | None, over: _Node, path: tuple) -> _Node:
        if base is None:
            return self.clean(over)
        if isinstance(over.value, dict) and isinstance(base.value, dict):
            directive = over.value.get(PATCH)
            if directive is not None:
                if directive.value != "replace":
                    self.finding(directive, CODE_PATCH, f"$patch: {directive.value!r} is not possible here",
                                 "use $patch: replace to replace a mapping, or $patch: delete in a pool or team")
                return self.clean(over)
            merged = dict(base.value)
            for key, node in over.value.items():
                merged[key] = self.merge(merged.get(key), node, (*path, key))
            return _Node(merged, base.origin if over.weak else over.origin, over.loc)
        if isinstance(over.value, list) and isinstance(base.value, list) and path in NAMED_LISTS:
            return _Node(self.named(base.value, over.value, path), over.origin, over.loc)
        return self.clean(over)

    def named(self, base: list[_Node], over: list[_Node], path: tuple) -> list[_Node]:
        """Merge lists of named items on `name`; `$patch: delete` removes an item."""
        result = list(base)
        seen: dict[str, _Node] = {}
        what = path[-1].rstrip("s")
        for item in over:
            name = _name(item)
            if name is None:
                result.append(self.clean(item))
                continue
            if name in seen:
                self.finding(item, CODE_DUPLICATE_ITEM, f"{what} {name!r} appears twice in this file "
                                                        f"(first on line {seen[name].origin.line})",
                             f"merge the two entries of {what} {name!r}")
                continue
            seen[name] = item
            index = next((i for i, b in enumerate(result) if _name(b) == name), None)
            directive = item.value.get(PATCH)
            if directive is not None and directive.value == "delete":
                if index is None:
                    self.finding(directive, CODE_PATCH, f"no {what} named {name!r} to delete",
                                 f"the files below this one declare no {what} {name!r}")
                else:
                    del result[index]
                continue
            if index is None:
                result.append(self.clean(item))
            else:
                result[index] = self.merge(result[index], item, (*path, index))
        return result

    def clean(self, node: _Node) -> _Node:
        """A subtree taken over as it is: its `$patch: replace` directives are moot, others are errors."""
        if isinstance(node.value, dict):
            out = {}
            for key, child in node.value.items():
                if key == PATCH:
                    if child.value != "replace":
                        self.finding(child, CODE_PATCH, f"$patch: {child.value!r} has nothing to apply to here",
                                     "$patch: delete removes a pool or team that the base declares")
                    continue
                out[key] = self.clean(child)
            return _Node(out, node.origin, node.loc)
        if isinstance(node.value, list):
            return _Node([self.clean(child) for child in node.value], node.origin, node.loc)
        return node


def _name(node: _Node) -> str | None:
    if isinstance(node.value, dict):
        name = node.value.get("name")
        if name is not None and isinstance(name.value, str):
            return name.value
    return None


class MergedDocument:
    """A merged intent that answers Document's questions (file, data, position) and says which file a node is in."""

    def __init__(self, file: str, root: _Node):
        self.file = file
        self.origins: dict[tuple, Origin] = {}
        self.data = self._flatten(root, ())

    def _flatten(self, node: _Node, loc: tuple) -> Any:
        self.origins[loc] = node.origin
        if isinstance(node.value, dict):
            return {k: self._flatten(v, (*loc, k)) for k, v in node.value.items()}
        if isinstance(node.value, list):
            return [self._flatten(v, (*loc, i)) for i, v in enumerate(node.value)]
        return node.value

    def _walk(self, loc: Sequence[str | int]) -> tuple[tuple, bool, Any]:
        """The deepest existing location along loc, whether all of loc exists, and the node there."""
        node, here = self.data, ()
        for part in loc:
            if isinstance(node, dict) and not isinstance(part, int) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                return here, False, node
            here = (*here, part)
        return here, True, node

    def position(self, loc: Sequence[str | int], point_at_key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of the deepest node along loc, in its own file (same rules as loader.locate)."""
        here, complete, node = self._walk(loc)
        origin = self.origins[here]
        if complete and origin.key is not None and (point_at_key or node is None):
            return origin.key
        return origin.line, origin.column

    def source(self, loc: Sequence[str | int]) -> str:
        """The file that holds the deepest node along loc."""
        return self.origins[self._walk(loc)[0]].file

    def attribute(self, finding: Finding) -> Finding:
        """A finding about this merged intent, moved to the file of the node it is about."""
        if finding.file != self.file:
            return finding
        return dataclasses.replace(finding, file=self.source(_parse_path(finding.path)))


_PLAIN_PART = re.compile(r"\.([^.\[]+)")
_INDEX = re.compile(r"\[([0-9]+)\]")


def _parse_path(path: str) -> tuple:
    """The location behind a findings.dotted() path (spec.pools[1].match["a.b/c"] -> ('spec', 'pools', 1, ...))."""
    parts: list[str | int] = []
    first = re.match(r"[^.\[]*", path)
    i = first.end() if first else 0
    if i:
        parts.append(path[:i])
    decoder = json.JSONDecoder()
    while i < len(path):
        plain = _PLAIN_PART.match(path, i)
        index = _INDEX.match(path, i)
        if plain:
            parts.append(plain.group(1))
            i = plain.end()
        elif index:
            parts.append(int(index.group(1)))
            i = index.end()
        elif path.startswith('["', i):
            try:
                key, end = decoder.raw_decode(path, i + 1)
            except ValueError:
                break
            parts.append(key)
            i = end + 1
        else:
            break
    return tuple(parts)


# --- the merge of a fleet's clusters ------------------------------------------------------------------------------


@dataclass
class ClusterResult:
    """One cluster of a fleet: its merged document (None when its overlay could not be read) and the files merged."""

    name: str
    document: MergedDocument | None
    sources: tuple[str, ...] = ()  # the files merged, base first


@dataclass
class FleetResult:
    """A fleet file read: its own findings (about the fleet file, its base and overlays), and each cluster merged.
    The clusters' intents are validated by gpuconf.intent.inputs, as every other intent is."""

    file: str
    fleet: Fleet | None = None
    findings: list[Finding] = field(default_factory=list)
    clusters: list[ClusterResult] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # each base and overlay read: its name -> sha256 (hex)
    roles: dict[str, str] = field(default_factory=dict)  # each file merged: base, layer or overlay
    stages: list[StagePlan] = field(default_factory=list)  # the rollout, in order (empty: all at once)


def _display(fleet_file: str, ref: str) -> tuple[Path, str]:
    """The real path of a file the fleet names (relative: repository.outside refused the others), and how findings
    show it (relative to the fleet's folder)."""
    return Path(fleet_file).parent / ref, posixpath.normpath(posixpath.join(posixpath.dirname(fleet_file), ref))


def _load(fleet_doc: Document, loc: tuple, ref: str, result: FleetResult) -> Document | None:
    from ..repository import outside

    why = outside(fleet_doc.file, ref)
    if why is not None:  # never opened: nothing of a file outside the repository reaches a message
        line, column = fleet_doc.position(loc)
        result.findings.append(Finding(fleet_doc.file, line, column, ERROR, CODE_FILE, dotted(loc),
                                       f"{ref!r} {why}", "keep the base, the layers and the overlays in the "
                                       "fleet's repository, and name them relative to the fleet file"))
        return None
    path, display = _display(fleet_doc.file, ref)
    if not path.is_file():
        line, column = fleet_doc.position(loc)
        result.findings.append(Finding(fleet_doc.file, line, column, ERROR, CODE_FILE, dotted(loc),
                                       f"{display} does not exist", "paths are relative to the fleet file"))
        return None
    try:
        loaded = load_file(path, display)
    except LoadError as exc:
        result.findings.append(exc.finding)
        return None
    result.digests[loaded.file] = loaded.digest
    return loaded


def merge_fleet(doc: Document) -> FleetResult:
    """Check a fleet file, load its base and overlays, and merge each cluster's intent document."""
    from pydantic import ValidationError

    from . import typecheck

    result = FleetResult(doc.file)
    try:
        fleet = Fleet.model_validate(doc.data)
    except ValidationError as exc:
        result.findings = [typecheck._finding(doc, Fleet, typecheck._clean_loc(e["loc"]), e) for e in exc.errors()]
        return result
    result.fleet = fleet
    _check_name(doc, fleet, result)
    names: dict[str, int] = {}
    for i, cluster in enumerate(fleet.spec.clusters):
        if cluster.name in names:
            line, column = doc.position(("spec", "clusters", i, "name"))
            result.findings.append(Finding(
                doc.file, line, column, ERROR, CODE_DUPLICATE_CLUSTER, dotted(("spec", "clusters", i, "name")),
                f"cluster {cluster.name!r} is declared twice (first as clusters[{names[cluster.name]}])",
                "each cluster renders into its own folder, named after it"))
        names.setdefault(cluster.name, i)
    if fleet.metadata.name in names:
        line, column = doc.position(("metadata", "name"))
        result.findings.append(Finding(doc.file, line, column, ERROR, CODE_COHERENCE, "metadata.name",
                                       f"the fleet and one of its clusters are both named {fleet.metadata.name!r}",
                                       "the fleet's own files go to OUTPUT/<fleet name>/: rename the fleet"))
    base = _load(doc, ("spec", "base"), fleet.spec.base, result)
    if base is None:  # the clusters are still named, so that --cluster can pick one
        result.clusters = [ClusterResult(cluster.name, None) for cluster in fleet.spec.clusters]
        result.findings = sort_findings(result.findings)
        return result
    base_tree = _tree(base)
    result.roles[base.file] = "base"
    layers: dict[str, Any] = {}  # layer name -> its tree and document, loaded once (None: it could not be)
    for i, cluster in enumerate(fleet.spec.clusters):
        merger = _Merger()
        merged, sources = base_tree, [base.file]
        broken = False
        for j, layer in enumerate(cluster.layers):
            if layer not in fleet.spec.layers:
                loc = ("spec", "clusters", i, "layers", j)
                line, column = doc.position(loc)
                close = difflib.get_close_matches(layer, list(fleet.spec.layers), n=1)
                result.findings.append(Finding(
                    doc.file, line, column, ERROR, CODE_FILE, dotted(loc),
                    f"cluster {cluster.name} takes layer {layer!r}, which spec.layers does not declare",
                    f"did you mean {close[0]!r}?" if close else
                    "declare it in spec.layers (name: path of a partial intent)"))
                broken = True
                continue
            if layer not in layers:
                loaded = _load(doc, ("spec", "layers", layer), fleet.spec.layers[layer], result)
                layers[layer] = (_tree(loaded), loaded) if loaded is not None else None
                if loaded is not None:
                    _check_overlay_name(loaded, None, result)
            if layers[layer] is None:
                broken = True
                continue
            sources.append(layers[layer][1].file)
            result.roles.setdefault(layers[layer][1].file, "layer")
            merged = merger.merge(merged, layers[layer][0], ())
        if broken:
            result.clusters.append(ClusterResult(cluster.name, None))
            continue
        if cluster.overlay is not None:
            overlay = _load(doc, ("spec", "clusters", i, "overlay"), cluster.overlay, result)
            if overlay is None:
                result.clusters.append(ClusterResult(cluster.name, None))
                continue
            sources.append(overlay.file)
            result.roles.setdefault(overlay.file, "overlay")
            merged = merger.merge(merged, _tree(overlay), ())
            _check_overlay_name(overlay, cluster.name, result)
        merged = merger.merge(merged, _name_layer(doc, i, cluster.name), ())
        result.findings += merger.findings
        result.clusters.append(ClusterResult(cluster.name, MergedDocument(f"{doc.file}[{cluster.name}]", merged),
                                             tuple(sources)))
    _stages(doc, fleet, result)
    result.findings = sort_findings(result.findings)
    return result


def _stages(doc: Document, fleet: Fleet, result: FleetResult) -> None:
    """The clusters' labels that reach the fleet's objects, and each cluster's rollout stage (when every cluster
    could be merged: a stage selects by the merged labels)."""
    from .stages import labels_of, assign, label_findings

    for cluster in result.clusters:
        data = cluster.document.data if cluster.document is not None else None
        delivery = (data.get("spec") or {}).get("delivery") if isinstance(data, dict) and \
            isinstance(data.get("spec"), dict) else None
        if isinstance(delivery, dict) and delivery.get("tool") in ("argocd", "flux"):
            result.findings += label_findings(cluster.document)
    if any(c.document is None for c in result.clusters):
        return
    clusters = [(c.name, fc.layers, labels_of(c.document.data)) for c, fc in zip(result.clusters, fleet.spec.clusters)]
    result.stages, findings = assign(doc, fleet.spec.stages, clusters, list(fleet.spec.layers))
    result.findings += findings


def _check_name(doc: Document, fleet: Fleet, result: FleetResult) -> None:
    """The fleet's name becomes a folder name and a label value: a DNS-1123 label (GC301, as for every name of an
    intent). A cluster's name is checked as metadata.name of its merged intent, at the cluster's line."""
    from .rules.syntax import DNS1123_LABEL, NAME_HINT

    if not DNS1123_LABEL.fullmatch(fleet.metadata.name):
        line, column = doc.position(("metadata", "name"))
        result.findings.append(Finding(doc.file, line, column, ERROR, "GC301", "metadata.name",
                                       f"{fleet.metadata.name!r} is not a valid name", NAME_HINT))


def _check_overlay_name(overlay: Document, name: str | None, result: FleetResult) -> None:
    """An overlay names no other cluster than its own; a layer (name None), shared by several, names none."""
    meta = overlay.data.get("metadata") if isinstance(overlay.data, dict) else None
    given = meta.get("name") if isinstance(meta, dict) else None
    if given is not None and name is None:
        line, column = overlay.position(("metadata", "name"))
        result.findings.append(Finding(overlay.file, line, column, ERROR, CODE_NAME, "metadata.name",
                                       f"a layer names a cluster ({given!r}), but several clusters take it",
                                       "remove metadata.name from the layer: the fleet names each cluster"))
    elif given is not None and given != name:
        line, column = overlay.position(("metadata", "name"))
        result.findings.append(Finding(overlay.file, line, column, ERROR, CODE_NAME, "metadata.name",
                                       f"the fleet names this cluster {name!r}, the overlay {given!r}",
                                       "remove metadata.name from the overlay, or rename the cluster in the fleet"))


def _name_layer(doc: Document, index: int, name: str) -> _Node:
    """metadata.name as the fleet sets it, positioned at the cluster's entry in the fleet file."""
    loc = ("spec", "clusters", index, "name")
    line, column = doc.position(loc)
    key = doc.position(loc, point_at_key=True)
    at = Origin(doc.file, line, column, key)
    name_node = _Node(name, at, loc)
    return _Node({"metadata": _Node({"name": name_node}, at, loc, weak=True)}, at, loc, weak=True)

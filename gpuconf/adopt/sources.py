"""The inputs of an adoption, read the way Helm reads them: values files (YAML 1.1, as sigs.k8s.io/yaml reads them),
`--set` arguments, device-plugin ConfigMaps; merged with Helm's rules (later files and --set win, maps merge, lists
and scalars replace, null deletes a chart default); each leaf remembers the file and line it came from."""

from __future__ import annotations

import base64
import json
import datetime
import math
from dataclasses import dataclass, field
from typing import Any

from ..render.values import copied, merge
from . import strvals

#: Largest input read (a values file of the GPU Operator is ~30 KB; the chart's own values.yaml ~25 KB).
MAX_BYTES = 4 * 1024 * 1024
#: Most leaves one input may hold (an alias bomb expands to millions): refused beyond this.
MAX_LEAVES = 100_000
#: The GPU Operator as a subchart: the key a parent chart nests its values under (Chart.yaml name).
PARENT_KEY = "gpu-operator"


class InputError(Exception):
    """An input that is not what the option says it is (exit 2); the message names the file."""


Path = tuple  # of str keys and int list indexes


@dataclass
class ValuesInput:
    """One values source: its tree and where each key path was written."""

    name: str  # file name, or `--set ARG`
    tree: dict
    lines: dict[Path, int] = field(default_factory=dict)
    raw: dict[Path, str] = field(default_factory=dict)  # the text of each plain scalar as written
    positions: bool = True  # False for what has no lines (a release Secret, a ClusterPolicy)

    def where(self, path: Path) -> str:
        """FILE:LINE of a path (its nearest written ancestor), or the --set argument."""
        if self.name.startswith("--set") or not self.positions:
            return self.name
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return f"{self.name}:{line}"
        return f"{self.name}:1"


def _read(path: str) -> bytes:
    import os
    import sys

    from ..intent.loader import read_limited

    if path == "-":
        return read_limited(sys.stdin.buffer.read, MAX_BYTES)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return read_limited(lambda size: os.read(fd, size), MAX_BYTES)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


NUL = b"\0"


def _text(raw: bytes, name: str) -> str:
    if len(raw) > MAX_BYTES:
        raise InputError(f"{name}: larger than {MAX_BYTES} bytes; not a values file")
    if NUL in raw:
        raise InputError(f"{name}: binary data (a NUL byte at offset {raw.index(NUL)}), not a YAML values file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start}): binary data, not a YAML values file") from None


def _documents(text: str, name: str) -> list[tuple[Any, Any]]:
    """(value, composed node) of every non-empty YAML document."""
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = []
    try:
        loader = loader_class(text)
        try:
            while loader.check_node():
                node = loader.get_node()
                if node is None:
                    continue
                _no_big_numbers(node, name)
                value = loader.construct_document(node)
                if value is not None:
                    out.append((value, node))
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise InputError(f"{name}{where}: not YAML: {exc.problem or exc.context}") from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        raise InputError(f"{name}: not YAML that Helm reads: {type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:200]}") from None
    return out


def _no_big_numbers(node: Any, name: str) -> None:
    """Refuse an integer beyond float64's range (InputError at its position): Helm reads it as a string, and Python
    neither reads nor writes one of more than 4,300 decimal digits (the loader's GC114, for values files)."""
    import yaml

    from ..intent.loader import _INTEGER, _big_number, _too_big

    todo = [node]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            todo += [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
        elif node.tag == "tag:yaml.org,2002:int" and _INTEGER.fullmatch(node.value) and _too_big(node.value):
            mark = node.start_mark
            raise InputError(f"{name}:{mark.line + 1}:{mark.column + 1}: {_big_number(node.value)}")


def _json_key(key: Any) -> str:
    """A map key as Helm has it after sigs.k8s.io/yaml's YAML-to-JSON step: always a string."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float, str)):
        return _scalar_text(key) if not isinstance(key, str) else key
    raise InputError(f"a map key is a {type(key).__name__}, which Helm's values cannot hold")


def _scalar_text(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return repr(value) if value != int(value) or abs(value) >= 1e16 else str(int(value))
    return str(value)


def _plain(value: Any, count: list[int], name: str, depth: int = 0) -> Any:
    """JSON-like data as Helm holds it: string keys, dates and binary as text, bounded size."""
    count[0] += 1
    if count[0] > MAX_LEAVES or depth > 200:
        raise InputError(f"{name}: more than {MAX_LEAVES} values or nesting deeper than 200 (aliases that expand "
                         "without end?): not a values file")
    if isinstance(value, dict):
        return {_json_key(k): _plain(v, count, name, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, count, name, depth + 1) for v in value]
    if isinstance(value, set):
        return {_json_key(k): None for k in value}
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value


def _lines(node: Any, path: Path, out: dict[Path, int], raw: dict[Path, str]) -> None:
    """Line of each key path in a composed YAML node tree, and the text of its plain scalars."""
    import yaml

    if isinstance(node, yaml.ScalarNode) and not node.style and len(raw) < MAX_LEAVES:
        raw[path] = node.value
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = key_node.value
            if key_node.tag == "tag:yaml.org,2002:null" and key in ("", "~", "null", "Null", "NULL"):
                key = "null"
            child = (*path, key)
            out.setdefault(child, key_node.start_mark.line + 1)
            if len(out) < MAX_LEAVES:
                _lines(value_node, child, out, raw)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out.setdefault((*path, i), item.start_mark.line + 1)
            if len(out) < MAX_LEAVES:
                _lines(item, (*path, i), out, raw)


def _not_values(doc: dict, name: str) -> str | None:
    """Why a mapping is a Kubernetes object rather than Helm values, or None."""
    kind, api = doc.get("kind"), doc.get("apiVersion")
    if not (isinstance(kind, str) and isinstance(api, str)):
        return None
    hints = {
        "NodeList": "nodes go to --nodes",
        "Node": "nodes go to --nodes (a NodeList: kubectl get nodes -o json)",
        "Secret": "a Helm release Secret is read from the cluster with --kubeconfig",
        "ConfigMap": "device-plugin and MIG ConfigMaps go to --configmap",
        "ClusterPolicy": "a live ClusterPolicy is read with --kubeconfig",
        "List": "a list of Kubernetes objects is no values file",
    }
    return f"{name}: a Kubernetes {kind} ({api}), not Helm values; {hints.get(kind, 'give the chart values file')}"


def read_values_file(path: str, display: str | None = None, raw: bytes | None = None) -> ValuesInput:
    """One values file (`-` reads standard input); raises InputError for what is not a values file."""
    name = display or ("<stdin>" if path == "-" else path)
    text = _text(_read(path) if raw is None else raw, name)
    docs = _documents(text, name)
    if len(docs) > 1:
        raise InputError(f"{name}: holds {len(docs)} YAML documents; a values file holds one (Kubernetes manifests?)")
    if not docs:
        return ValuesInput(name, {})
    value, node = docs[0]
    if not isinstance(value, dict):
        raise InputError(f"{name}: the document is a {_kind(value)}, not a map of values")
    problem = _not_values(value, name)
    if problem:
        raise InputError(problem)
    tree = _plain(value, [0], name)
    lines: dict[Path, int] = {}
    raw: dict[Path, str] = {}
    _lines(node, (), lines, raw)
    return ValuesInput(name, tree, lines, raw)


def _kind(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value),
                                                                                            type(value).__name__)


def read_set(argument: str, strings: bool = False) -> ValuesInput:
    """One --set (or --set-string, with strings) argument, checked, as the input merge_inputs applies in turn."""
    flag = "--set-string" if strings else "--set"
    try:
        strvals.parse_into(argument, {}, strings)
    except strvals.SetError as exc:
        raise InputError(f"{flag} {argument}: {exc}") from None
    return ValuesInput(f"{flag} {argument}", {})


# --- Helm's merge ----------------------------------------------------------------------------------------------


class PathIndex:
    """Items by values path, found by relation: related(path) gives every item whose path is path, above it or
    below it, in a few dict lookups (not a scan of every item: import relates thousands of paths; issue 29, item 6)."""

    def __init__(self) -> None:
        self._at: dict[Path, list] = {}
        self._below: dict[Path, set[Path]] = {}  # each proper prefix -> the paths under it that hold items

    def add(self, path: Path, item: Any) -> None:
        if path not in self._at:
            for k in range(len(path)):
                self._below.setdefault(path[:k], set()).add(path)
        self._at.setdefault(path, []).append(item)

    def remove(self, path: Path) -> None:
        if self._at.pop(path, None) is not None:
            for k in range(len(path)):
                self._below[path[:k]].discard(path)

    def related_paths(self, path: Path) -> list[Path]:
        """The paths with items that are path, a prefix of it, or under it, in no particular order."""
        above = [path[:k] for k in range(len(path) + 1) if path[:k] in self._at]
        return above + list(self._below.get(path, ()))

    def related(self, path: Path) -> list:
        return [item for p in self.related_paths(path) for item in self._at[p]]


def merge_inputs(inputs: list[ValuesInput]) -> tuple[dict, dict[Path, str]]:
    """The user-supplied values as Helm merges -f files and --set (MergeMaps, then strvals.ParseInto on the result),
    and where each leaf of the result came from."""
    merged: dict = {}
    sources: dict[Path, str] = {}
    index = PathIndex()
    for given in inputs:
        if given.name.startswith("--set"):
            # --set parses into the merged map: a nested key goes into the existing map, an index into the list.
            flag, _, argument = given.name.partition(" ")
            before = {p: v for p, v in leaves(merged)}
            try:
                strvals.parse_into(argument, merged, strings=flag == "--set-string")
            except strvals.SetError as exc:
                raise InputError(f"{flag} {argument}: {exc}") from None
            for p, v in leaves(merged):
                if p not in before or before[p] != v or type(before[p]) is not type(v):
                    _claim(sources, index, p, given.name)
            continue
        merge(merged, given.tree)  # Helm's loader.MergeMaps: maps merge key by key, anything else replaces
        for p, _ in leaves(given.tree):
            _claim(sources, index, p, given.where(p))
    present = {p for p, _ in leaves(merged)}
    return merged, {p: s for p, s in sources.items() if p in present}


def _claim(sources: dict[Path, str], index: PathIndex, path: Path, where: str) -> None:
    """path's leaf comes from where: it replaces what an earlier input said of path, above it or below it."""
    for other in index.related_paths(path):
        del sources[other]
        index.remove(other)
    sources[path] = where
    index.add(path, where)


def check_sections(values: dict, defaults: dict, inputs: list[ValuesInput]) -> None:
    """InputError for the first value that is not a map where the chart's defaults have a map (`driver: 3`,
    `devicePlugin: x`): Helm keeps it and the chart's templates fail on it (`.Values.driver.enabled` of a number),
    so no installation runs with such values; the input that gave it is named."""
    todo: list[tuple[Path, Any, Any]] = [((), values, defaults)]
    while todo:
        path, given, default = todo.pop()
        for key in sorted(given, key=str):
            value, base = given[key], default.get(key)
            if not isinstance(base, dict) or value is None:
                continue
            if isinstance(value, dict):
                todo.append(((*path, key), value, base))
                continue
            where = next((i.where((*path, key)) for i in reversed(inputs) if _holds(i.tree, (*path, key))),
                         inputs[-1].name if inputs else "the values")
            from ..escape import term_text

            shown = term_text(json.dumps(value, default=str)[:80])
            name = term_text(".".join(map(str, (*path, key))))
            raise InputError(f"{term_text(where)}: {name} is {shown}, not a map: the chart's {term_text(key)} is a "
                             "section of values, which its templates read key by key (Helm fails to render it), so "
                             "no installation runs with these values")


def _holds(tree: Any, path: Path) -> bool:
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return False
        tree = tree[key]
    return True


def unwrapped(values: dict, defaults: dict) -> dict:
    """Values nested under a parent chart's gpu-operator: key, unnested."""
    inner = values.get(PARENT_KEY)
    if isinstance(inner, dict) and PARENT_KEY not in defaults and not (set(values) - {PARENT_KEY}) & set(defaults):
        return inner
    return values


def coalesce(defaults: dict, user: dict) -> dict:
    """The chart's effective values: user values over the chart defaults (chartutil.CoalesceValues): maps merge,
    a user value replaces anything else, a user null deletes the default."""
    out = copied(defaults)
    _coalesce_into(out, user)
    return out


def _coalesce_into(base: dict, user: dict) -> None:
    for key, value in user.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            _coalesce_into(base[key], value)
        else:
            base[key] = _strip_nulls(copied(value))


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    return value


def leaves(tree: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Every leaf of a values tree: a scalar, a list (Helm replaces lists whole) or an empty map."""
    if isinstance(tree, dict) and tree:
        out = []
        for key, value in tree.items():
            out.extend(leaves(value, (*path, key)))
        return out
    return [(path, tree)] if path else []


def get(tree: Any, path: Path) -> tuple[bool, Any]:
    """(found, value) at a key path."""
    node = tree
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return False, None
    return True, node


# --- ConfigMaps ------------------------------------------------------------------------------------------------


@dataclass
class ConfigMapInput:
    """A ConfigMap read from a file or the cluster: its name and data (key -> text)."""

    name: str
    namespace: str | None
    data: dict[str, str]
    source: str


def read_configmaps(path: str) -> list[ConfigMapInput]:
    """The ConfigMaps of a file (one, several documents, or a v1 List); raises InputError for anything else."""
    name = "<stdin>" if path == "-" else path
    docs = _documents(_text(_read(path), name), name)
    items: list = []
    for doc, _ in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            items.extend(doc["items"])
        else:
            items.append(doc)
    if not items:
        raise InputError(f"{name}: holds no ConfigMap")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("kind") != "ConfigMap":
            kind = item.get("kind") if isinstance(item, dict) else None
            raise InputError(f"{name}: document {i + 1} is {'a ' + str(kind) if kind else 'not a Kubernetes object'}"
                             ", not a ConfigMap")
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        data = item.get("data") or {}
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise InputError(f"{name}: ConfigMap {meta.get('name')!r}: data must map keys to text")
        out.append(ConfigMapInput(str(meta.get("name", "")), meta.get("namespace"),
                                  {str(k): v for k, v in data.items()},
                                  f"{name}: ConfigMap/{meta.get('name', '')}"))
    return out

"""Emitter: the one YAML writer of gpuconf. Sorted keys, no aliases, and quoting that YAML 1.1 readers agree with.

Helm and the Kubernetes tooling read YAML 1.1 (go-yaml v2, sigs.k8s.io/yaml), where `on`, `yes`, `y`, `1:20`
and `0777` are not strings; ruamel's default YAML 1.2 dump leaves them bare. Every string that either YAML version
would resolve to something else is double-quoted.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

#: Keys that conventionally lead a Kubernetes document or a config file; the rest follow in sorted order.
K8S_TOP = ("version", "apiVersion", "kind", "metadata", "spec", "data", "rules", "roleRef", "subjects")
# go-yaml v2 also reads y/Y/n/N as booleans and base-60 numbers such as 1:20:30.
_EXTRA_QUOTE = re.compile(r"^(?:[yYnN]|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)$")


@lru_cache(maxsize=1)
def _resolvers() -> tuple:
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver(version=(1, 1)), VersionedResolver(version=(1, 2))


@lru_cache(maxsize=4096)
def needs_quotes(text: str) -> bool:
    """True when a YAML 1.1 or 1.2 reader would not read the bare text back as this string."""
    from ruamel.yaml.nodes import ScalarNode

    if _EXTRA_QUOTE.match(text):
        return True
    return any(str(r.resolve(ScalarNode, text, (True, False))) != "tag:yaml.org,2002:str" for r in _resolvers())


_STR, _INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


@lru_cache(maxsize=1)
def _dumper_class() -> Any:
    """libyaml's emitter (through PyYAML): ruamel's pure-Python emitter took 9.4 s for the 2,000 documents of a
    1,000-pool cluster, libyaml 0.8 s.

    gpuconf builds the node graph itself (see _node), so only the serializer and emitter of the class run. The
    serializer asks the resolver, twice per scalar, whether the scalar would read back with its tag; the answers
    are memoised per dump, as a document repeats its keys and values many times.
    """
    import yaml
    from yaml.nodes import ScalarNode

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._plain_tags: dict[str, str] = {}

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is not ScalarNode:
                return super().resolve(kind, value, implicit)
            if not implicit[0]:
                return _STR  # a quoted scalar is a string (no path resolvers are registered)
            tag = self._plain_tags.get(value)
            if tag is None:
                tag = self._plain_tags[value] = super().resolve(kind, value, implicit)
            return tag

    return Dumper


def _node(value: Any, top: bool = False) -> Any:
    """The YAML node graph of plain data, with keys sorted (Kubernetes-conventional keys first at the top of a
    document) and strings styled by _style; what PyYAML's SafeRepresenter would build, without its per-value
    dispatch, alias bookkeeping and a sorted copy of the data."""
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    def build(value: Any, top: bool = False) -> Any:
        if isinstance(value, str):
            return ScalarNode(_STR, value, style=_style(value))
        if isinstance(value, bool):
            return ScalarNode(_BOOL, "true" if value else "false")
        if isinstance(value, int):
            return ScalarNode(_INT, str(int(value)))
        if value is None:
            return ScalarNode(_NULL, "null")
        if isinstance(value, Mapping):
            keys = sorted(value, key=_top_order) if top else sorted(value)
            return MappingNode(_MAP, [(build(k), build(value[k])) for k in keys], flow_style=False)
        if isinstance(value, (list, tuple)):
            return SequenceNode(_SEQ, [build(item) for item in value], flow_style=False)
        if isinstance(value, float):
            return ScalarNode(_FLOAT, _float_text(float(value)))
        raise TypeError(f"gpuconf writes no {type(value).__name__} to YAML: {value!r}")

    return build(value, top)


def _top_order(key: str) -> tuple[int, str]:
    return (K8S_TOP.index(key) if key in K8S_TOP else len(K8S_TOP), key)


def _float_text(value: float) -> str:
    """A float as YAML 1.1 reads it back (.nan, .inf, and an exponent always with a fraction: 1.0e+17)."""
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


def _serialise(nodes: Iterable[Any], explicit_start: bool) -> str:
    import io

    stream = io.StringIO()
    dumper = _dumper_class()(stream, default_flow_style=False, width=4096, allow_unicode=True,
                             explicit_start=explicit_start)
    dumper.open()
    for node in nodes:
        dumper.serialize(node)
    dumper.close()
    return stream.getvalue()


def _style(text: str) -> str | None:
    """Double quotes for anything a YAML 1.1 or 1.2 reader would not read back as this string, literal blocks
    for embedded files, plain otherwise."""
    if needs_quotes(text) or not text.replace("\n", "").isprintable():
        return '"'  # control characters are escaped inside double quotes
    if "\n" in text:
        return "|"  # embedded config files (device-plugin, mig-parted) stay readable
    return None


_KEY_LINE = re.compile(r"""^( *)("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s'"#\-][^:]*?):(?: |$)""")


def _with_comments(text: str, comments: Mapping[tuple, str]) -> str:
    """Insert `# ...` lines above the mapping keys named in comments (key paths from the document root).

    libyaml writes no comments, so they are placed by reading back the key lines of its block output: a mapping key
    at depth d sits at 2*d spaces. Lines inside list items can look like keys too, but their computed paths run
    through a list and so never equal a commented path, which always runs through mappings.
    """
    out, stack = [], []
    for line in text.splitlines(keepends=True):
        match = _KEY_LINE.match(line)
        if match and len(match.group(1)) % 2 == 0:
            depth = len(match.group(1)) // 2
            raw = match.group(2)
            key = json.loads(raw) if raw.startswith('"') else raw[1:-1].replace("''", "'") if raw.startswith("'") else raw
            del stack[depth:]
            stack.extend([None] * (depth - len(stack)))
            stack.append(key)
            note = comments.get(tuple(stack))
            if note:
                out.append(f"{match.group(1)}# {note}\n")
        out.append(line)
    return "".join(out)


def dump(value: Any, comments: Mapping[tuple, str] | None = None, top: bool = False) -> str:
    """One YAML document as text; comments map key paths to comment lines placed above those keys."""
    text = _serialise([_node(value, top)], explicit_start=False)
    return _with_comments(text, comments) if comments else text


def dump_all(documents: Sequence[Mapping[str, Any]]) -> str:
    """Several Kubernetes documents, each starting with ---."""
    return _serialise((_node(d, top=True) for d in documents), explicit_start=True)


def header(lines: Iterable[str]) -> str:
    """A comment block for the top of a generated file."""
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)

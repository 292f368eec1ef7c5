"""Emitter: the one YAML writer of gpuconf. Sorted keys, no aliases, and quoting that YAML 1.1 readers agree with.

Helm and the Kubernetes tooling read YAML 1.1 (go-yaml v2, sigs.k8s.io/yaml), where `on`, `yes`, `y`, `1:20`
and `0777` are not strings; ruamel's default YAML 1.2 dump leaves them bare. Every string that either YAML version
would resolve to something else is double-quoted.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from .escape import shell_word, single_line  # noqa: F401 - the YAML comment's and the shell's escaping

#: Keys that conventionally lead a Kubernetes document or a config file; the rest follow in sorted order.
K8S_TOP = ("version", "apiVersion", "kind", "metadata", "spec", "data", "rules", "roleRef", "subjects")
# go-yaml v2 also reads y/Y/n/N as booleans and base-60 numbers such as 1:20:30.
_EXTRA_QUOTE = re.compile(r"(?:[yYnN]|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)")


@lru_cache(maxsize=1)
def _resolvers() -> tuple:
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver(version=(1, 1)), VersionedResolver(version=(1, 2))


@lru_cache(maxsize=65536)
def needs_quotes(text: str) -> bool:
    """True when a YAML 1.1 or 1.2 reader would not read the bare text back as this string."""
    from ruamel.yaml.nodes import ScalarNode

    if _EXTRA_QUOTE.fullmatch(text):
        return True
    return any(str(r.resolve(ScalarNode, text, (True, False))) != "tag:yaml.org,2002:str" for r in _resolvers())


_STR, _INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


@lru_cache(maxsize=1)
def _dumper_class() -> Any:
    """libyaml's emitter (through PyYAML): ruamel's pure-Python emitter took 9.4 s for the 2,000 documents of a
    1,000-pool cluster, libyaml 0.8 s. gpuconf hands it events (see _events), so only libyaml's emitter runs."""
    import yaml

    return getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@lru_cache(maxsize=1)
def _resolver() -> Any:
    import yaml

    return yaml.resolver.Resolver()


@lru_cache(maxsize=65536)
def _plain_tag(text: str) -> str:
    """The tag a YAML 1.1 reader (PyYAML's resolver, as libyaml's serializer asks it) gives text as a plain
    scalar."""
    from yaml.nodes import ScalarNode

    tag: str = _resolver().resolve(ScalarNode, text, (True, False))
    return tag


@lru_cache(maxsize=65536)
def _scalar_event(tag: str, text: str) -> Any:
    """The event of a scalar. libyaml's emitter only reads events, so one object serves every occurrence of a
    scalar (a document repeats its keys and many values)."""
    from yaml.events import ScalarEvent

    if tag == _STR:
        return ScalarEvent(None, _STR, (_plain_tag(text) == _STR, True), text, style=_style(text))
    return ScalarEvent(None, tag, (_plain_tag(text) == tag, False), text)


@lru_cache(maxsize=1)
def _block_events() -> tuple[Any, Any, Any, Any]:
    """The start and end events of block mappings and sequences, shared like _scalar_event's."""
    from yaml.events import MappingEndEvent, MappingStartEvent, SequenceEndEvent, SequenceStartEvent

    return (MappingStartEvent(None, _MAP, True, flow_style=False), MappingEndEvent(),
            SequenceStartEvent(None, _SEQ, True, flow_style=False), SequenceEndEvent())


def _events(value: Any, top: bool, append: Callable[[Any], None]) -> None:
    """Pass the YAML events of plain data to append: keys sorted (Kubernetes-conventional keys first at the top of
    a document), strings styled by _style, block style throughout.

    They are the events PyYAML's SafeRepresenter and serializer would produce for the data, built without their
    node graph, per-value dispatch, alias bookkeeping and two resolver calls per scalar.
    """
    map_start, map_end, seq_start, seq_end = _block_events()

    def walk(value: Any, top: bool = False) -> None:
        kind = type(value)  # the exact types of plain data first: an isinstance test of typing's Mapping is slow
        if kind is str:
            append(_scalar_event(_STR, value))
        elif kind is dict:
            mapping(value, top)
        elif kind is list or kind is tuple:
            sequence(value)
        elif kind is bool:
            append(_scalar_event(_BOOL, "true" if value else "false"))
        elif kind is int:
            append(_scalar_event(_INT, str(value)))
        elif value is None:
            append(_scalar_event(_NULL, "null"))
        elif kind is float:
            append(_scalar_event(_FLOAT, _float_text(value)))
        elif isinstance(value, str):  # subclasses, as their base types
            append(_scalar_event(_STR, value))
        elif isinstance(value, Mapping):
            mapping(value, top)
        elif isinstance(value, (list, tuple)):
            sequence(value)
        elif isinstance(value, bool):
            append(_scalar_event(_BOOL, "true" if value else "false"))
        elif isinstance(value, int):
            append(_scalar_event(_INT, str(int(value))))
        elif isinstance(value, float):
            append(_scalar_event(_FLOAT, _float_text(float(value))))
        else:
            raise TypeError(f"gpuconf writes no {type(value).__name__} to YAML: {value!r}")

    def mapping(value: Mapping, top: bool) -> None:
        append(map_start)
        for key in (sorted(value, key=_top_order) if top else sorted(value)):
            # Keys and string values are most of a document: their events are appended here, not through a call
            # of walk each (a third of the emitter's time for a fleet).
            if type(key) is str:
                append(_scalar_event(_STR, key))
            else:
                walk(key)
            item = value[key]
            if type(item) is str:
                append(_scalar_event(_STR, item))
            else:
                walk(item)
        append(map_end)

    def sequence(value: Sequence) -> None:
        append(seq_start)
        for item in value:
            if type(item) is str:
                append(_scalar_event(_STR, item))
            else:
                walk(item)
        append(seq_end)

    walk(value, top)


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


def _serialise(documents: Iterable[Any], top: bool, explicit_start: bool) -> str:
    """The documents as one YAML stream, through libyaml's emitter."""
    import io

    from yaml.events import DocumentEndEvent, DocumentStartEvent

    stream = io.StringIO()
    dumper = _dumper_class()(stream, default_flow_style=False, width=4096, allow_unicode=True)
    dumper.open()
    start, end = DocumentStartEvent(explicit=explicit_start), DocumentEndEvent(explicit=False)
    for document in documents:
        dumper.emit(start)
        _events(document, top, dumper.emit)
        dumper.emit(end)
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
                out.append(f"{match.group(1)}# {single_line(note)}\n")
        out.append(line)
    return "".join(out)


def dump(value: Any, comments: Mapping[tuple, str] | None = None, top: bool = False) -> str:
    """One YAML document as text; comments map key paths to comment lines placed above those keys."""
    text = _serialise([value], top, explicit_start=False)
    return _with_comments(text, comments) if comments else text


def dump_all(documents: Sequence[Mapping[str, Any]]) -> str:
    """Several Kubernetes documents, each starting with ---."""
    return _serialise(documents, top=True, explicit_start=True)


def header(lines: Iterable[str]) -> str:
    """A comment block for the top of a generated file, one comment line per line (see single_line)."""
    return "".join(f"# {single_line(line)}\n" if line else "#\n" for line in lines)

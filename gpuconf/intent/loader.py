"""Loader: YAML text to a positioned tree, refusing what an intent file must never contain."""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

from ..findings import ERROR, Finding
from ..gcpause import gc_paused

#: Largest intent file gpuconf reads (1 MiB). A generated 1,000-pool intent is about 250 KiB.
MAX_BYTES = 1024 * 1024
#: Deepest nesting accepted; the intent language itself needs 6.
MAX_DEPTH = 64
#: Most entries one list or mapping may hold when it is read (the model's own limits are far lower,
#: docs/reference/limits.md): the loader stops before building 340,000 empty pools from 1 MiB of `{},`.
MAX_ENTRIES = 10_000

CODE_SYNTAX = "GC101"
CODE_DUPLICATE_KEY = "GC102"
CODE_ALIAS = "GC103"
CODE_TAG = "GC104"
CODE_DEPTH = "GC105"
CODE_TOO_LARGE = "GC106"
CODE_ENCODING = "GC107"
CODE_MULTI_DOC = "GC108"
CODE_NOT_MAPPING = "GC109"
CODE_UNREADABLE = "GC110"
CODE_KEY = "GC111"
CODE_NUMBER = "GC112"
CODE_TRUNCATED = "GC113"
CODE_BIG_NUMBER = "GC114"

TITLES = {
    CODE_SYNTAX: "YAML syntax error", CODE_DUPLICATE_KEY: "duplicate key", CODE_ALIAS: "YAML anchor or alias",
    CODE_TAG: "explicit YAML tag", CODE_DEPTH: "nesting too deep",
    CODE_TOO_LARGE: "file too large, or a list or mapping with too many entries",
    CODE_ENCODING: "not UTF-8, or a forbidden character", CODE_MULTI_DOC: "more than one YAML document",
    CODE_NOT_MAPPING: "empty file, or top level not a mapping", CODE_UNREADABLE: "file cannot be read",
    CODE_KEY: "mapping key that is not a plain string (number, boolean, date, list, or a << merge key)",
    CODE_NUMBER: "integer that YAML 1.1 and 1.2 read differently (a leading zero, 0x, 0o, 0b, underscores)",
    CODE_TRUNCATED: "more findings than gpuconf reports for one intent (the rest are counted)",
    CODE_BIG_NUMBER: "integer beyond float64's range, which no reader of the rendered files (Kubernetes, Helm) holds",
}


@dataclass
class Document:
    """A loaded YAML document: the positioned tree plus where it came from."""

    file: str
    data: Any  # CommentedMap at the top for a valid intent
    digest: str = ""  # sha256 (hex) of the bytes read: what `render --attest` records as the input's digest

    def position(self, loc: Sequence[str | int], point_at_key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of the deepest node that exists along loc."""
        return locate(self.data, loc, point_at_key)


#: The kind of a fleet file (gpuconf.intent.fleet), known here so that telling a fleet from an intent imports no more.
FLEET_KIND = "Fleet"


def is_fleet(doc: Document) -> bool:
    """True when a loaded document is a fleet file."""
    return isinstance(doc.data, dict) and doc.data.get("kind") == FLEET_KIND


class LoadError(Exception):
    """The file could not be read as an intent document; carries the finding."""

    def __init__(self, finding: Finding):
        super().__init__(finding.text())
        self.finding = finding


def locate(root: Any, loc: Sequence[str | int], point_at_key: bool = False) -> tuple[int, int]:
    """Walk loc through ruamel's position info; stop at the last node that exists."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    node = root
    if not hasattr(node, "lc"):
        return 1, 1
    line, col = node.lc.line, node.lc.col
    key_pos = None
    for part in loc:
        if isinstance(node, CommentedMap) and not isinstance(part, int) and part in node:
            key_pos = node.lc.key(part)
            line, col = node.lc.value(part)
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            key_pos = None
            line, col = node.lc.item(part)
            node = node[part]
        else:
            break
    else:
        # An empty value (null) has no token of its own; ruamel reports the next token, so point at the key.
        if key_pos is not None and (point_at_key or node is None):
            line, col = key_pos
    return line + 1, col + 1


def load_file(path: str | Path, display: str | None = None) -> Document:
    """Read one intent file exactly once, at most MAX_BYTES + 1 bytes of it, and parse it; raise LoadError with a
    positioned finding. A pipe (`<(cat intent.yaml)`), a FIFO or a device is read like a file."""
    import os
    import stat

    name = display or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:  # callers check existence first; this covers races and permissions
        raise LoadError(_finding(name, 1, 1, CODE_UNREADABLE, f"cannot read file: {exc.strerror}", None)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise LoadError(_finding(name, 1, 1, CODE_UNREADABLE, "cannot read file: it is a folder", None))
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_BYTES:  # refused before a byte is read
            raise _too_large(name, info.st_size)
        raw = read_limited(lambda size: os.read(fd, size))
    except OSError as exc:
        raise LoadError(_finding(name, 1, 1, CODE_UNREADABLE, f"cannot read file: {exc.strerror}", None)) from None
    finally:
        os.close(fd)
    return load_bytes(raw, name)


def read_limited(read: Callable[[int], bytes], limit: int = MAX_BYTES) -> bytes:
    """Everything read(size) returns until the end, but never more than limit + 1 bytes (enough to tell that the
    input is too large without holding more of it: /dev/zero ends here too)."""
    chunks, total = [], 0
    while total <= limit:
        chunk = read(min(1 << 16, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _too_large(name: str, size: int | None) -> LoadError:
    told = f"file is {size} bytes" if size is not None else f"input is larger than {MAX_BYTES} bytes"
    return LoadError(_finding(name, 1, 1, CODE_TOO_LARGE, f"{told}; intent files are limited to {MAX_BYTES} bytes",
                              "split the cluster into several intents or a fleet"))


def load_bytes(raw: bytes, name: str) -> Document:
    """Parse bytes as one guarded YAML document."""
    if len(raw) > MAX_BYTES:  # read_limited stops one byte past the limit: the true size is not known then
        raise _too_large(name, len(raw) if len(raw) != MAX_BYTES + 1 else None)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise LoadError(_finding(name, line, col, CODE_ENCODING,
                                 f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                                 "save the file as UTF-8")) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return Document(name, _parse(text, name), hashlib.sha256(raw).hexdigest())


def load_text(text: str, name: str) -> Document:
    """Parse an already-decoded string (tests, stdin)."""
    return load_bytes(text.encode("utf-8"), name)


@gc_paused
def _parse(text: str, name: str) -> Any:
    """Compose the positioned tree from libyaml's event stream, refusing what an intent must not contain.

    ruamel's pure-Python parser needed about 3 s for a 1,000-pool intent (184 KiB) on a 2-core machine; libyaml
    (through PyYAML) produces the events in a fraction of that. Composition stays here, so every refusal (aliases,
    anchors, tags, merge keys, non-string keys, duplicates, depth) happens before any value is built, and the tree
    is ruamel's CommentedMap/CommentedSeq carrying the same line/column information ruamel's own loader records.
    Plain scalars are resolved with YAML 1.2 rules (ruamel's resolver), so `yes` and `on` stay strings.
    """
    import yaml

    from ruamel.yaml.comments import CommentedMap

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = _Composer(name, text).compose(yaml.parse(text, Loader=loader_class))
        if not isinstance(data, CommentedMap):
            line, col = (data.lc.line + 1, data.lc.col + 1) if hasattr(data, "lc") else (1, 1)
            raise LoadError(_finding(name, line, col, CODE_NOT_MAPPING, "top level must be a mapping (apiVersion, "
                                     f"kind, metadata, spec), not a {_kind(data)}", None))
        return data
    except _Refusal as exc:
        raise LoadError(_finding(name, exc.line, exc.col, exc.code, exc.message, exc.hint)) from None
    except yaml.reader.ReaderError as exc:
        line, col = _reader_position(text, exc.position)
        raise LoadError(_finding(name, line, col, CODE_ENCODING,
                                 f"character U+{_codepoint(exc.character):04X} is not allowed in YAML",
                                 "remove control characters from the file")) from None
    except yaml.MarkedYAMLError as exc:
        line, col = _within(text, *_mark(exc.problem_mark))
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own bound on flow nesting
            raise LoadError(_finding(name, line, col, CODE_DEPTH, f"nesting is deeper than {MAX_DEPTH} levels",
                                     None)) from None
        raise LoadError(_finding(name, line, col, CODE_SYNTAX, _problem(exc), _syntax_hint(exc, text))) from None


class _Composer:
    """Builds CommentedMap/CommentedSeq nodes from parser events, one document, with positions."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text

    def compose(self, events: Any) -> Any:
        import yaml.events as E
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        documents = 0
        root: Any = None
        stack: list[list] = []  # frames: [container, pending_key, key_mark, first_lines]
        for event in events:
            kind = type(event)
            if kind is E.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _Refusal(CODE_MULTI_DOC, event.start_mark, "file holds more than one YAML document",
                                   "keep one ClusterIntent per file; use a fleet file for several clusters")
                continue
            if kind in (E.StreamStartEvent, E.StreamEndEvent, E.DocumentEndEvent):
                continue
            if kind is E.AliasEvent:
                # Aliases are shared references: a few bytes can expand to billions of nodes downstream.
                raise _Refusal(CODE_ALIAS, event.start_mark, f"YAML aliases are not allowed (*{event.anchor})",
                               "write the value out in full")
            if kind in (E.MappingEndEvent, E.SequenceEndEvent):
                value = stack.pop()[0]  # already attached to its parent when it started
                if not stack:
                    root = value
                continue
            if event.anchor is not None:
                raise _Refusal(CODE_ALIAS, event.start_mark, f"YAML anchors are not allowed (&{event.anchor})",
                               "write the value out in full where it is needed")
            if event.tag is not None and not (kind is E.ScalarEvent and event.tag == "!"):
                # ruamel would keep even standard tags such as !!str as TaggedScalar objects, not plain values.
                raise _Refusal(CODE_TAG, event.start_mark, f"explicit YAML tags are not allowed ({event.tag})",
                               "remove the tag; to keep a value such as 1.10 a string, quote it: \"1.10\"")
            if kind is E.ScalarEvent:
                plain = not event.style  # libyaml reports plain scalars with style "" or None
                if event.value == "<<" and plain:
                    # A YAML 1.1 merge key: ruamel and PyYAML merge it, a YAML 1.2 reader sees a literal "<<" key.
                    raise _Refusal(CODE_KEY, event.start_mark, "YAML merge keys (<<) are not allowed",
                                   "write the merged keys out in full")
                if plain and _INTEGER.fullmatch(event.value) and _too_big(event.value):
                    raise _Refusal(CODE_BIG_NUMBER, event.start_mark, _big_number(event.value),
                                   "no field of an intent takes a number that large; quote it if it is text")
                if plain and _NUMBER_FORMS.fullmatch(event.value):
                    message, hint = _number_problem(event.value)
                    raise _Refusal(CODE_NUMBER, event.start_mark, message, hint)
                value = _plain_scalar(event.value) if plain else event.value
                if isinstance(value, str) and _CONTROL.search(value):
                    raise _Refusal(CODE_ENCODING, event.start_mark, "value contains a control character", "remove it")
                if not stack:
                    root = value
                    continue
                self._attach(stack[-1], value, event.start_mark)
                continue
            # Mapping or sequence start.
            if len(stack) >= MAX_DEPTH:
                raise _Refusal(CODE_DEPTH, event.start_mark, f"nesting is deeper than {MAX_DEPTH} levels", None)
            container = CommentedMap() if kind is E.MappingStartEvent else CommentedSeq()
            container._yaml_set_line_col(event.start_mark.line, event.start_mark.column)
            if stack:
                frame = stack[-1]
                if isinstance(frame[0], CommentedMap) and frame[1] is _NO_KEY:
                    raise _Refusal(CODE_KEY, event.start_mark, "mapping key is a " +
                                   ("mapping" if kind is E.MappingStartEvent else "list") + ", not a string",
                                   "keys are plain strings; quote it if it is meant as text")
                self._attach(frame, container, event.start_mark)
            stack.append([container, _NO_KEY, None, {}])
        if documents == 0 or root is None:
            raise _Refusal(CODE_NOT_MAPPING, None, "file is empty", "run `gpuconf init` for a commented starter intent")
        return root

    def _attach(self, frame: list, value: Any, mark: Any) -> None:
        """Add value to the container on top of the stack: as a key, a mapping value, or a list item."""
        from ruamel.yaml.comments import CommentedMap

        container = frame[0]
        if len(container) >= MAX_ENTRIES and (frame[1] is not _NO_KEY or not isinstance(container, CommentedMap)):
            raise _Refusal(CODE_TOO_LARGE, mark,
                           f"{'list' if isinstance(container, list) else 'mapping'} has more than {MAX_ENTRIES} "
                           "entries", "no part of an intent needs that many; see the documentation's \"Limits\"")
        if not isinstance(container, CommentedMap):
            container.append(value)
            container._yaml_set_idx_line_col(len(container) - 1, [mark.line, mark.column])
            return
        if frame[1] is _NO_KEY:
            if not isinstance(value, str):
                raise _Refusal(CODE_KEY, mark, f"mapping key is {_kind(value, with_value=True)}, not a string",
                               "keys are plain strings; quote it if it is meant as text")
            if value in frame[3]:
                raise _Refusal(CODE_DUPLICATE_KEY, mark,
                               f"duplicate key {value!r} (first defined on line {frame[3][value]})",
                               "a key may appear once per mapping; merge the two entries")
            frame[3][value] = mark.line + 1
            frame[1], frame[2] = value, mark
            return
        key, key_mark = frame[1], frame[2]
        container[key] = value
        container._yaml_set_kv_line_col(key, [key_mark.line, key_mark.column, mark.line, mark.column])
        frame[1], frame[2] = _NO_KEY, None


_NO_KEY = object()
#: C0 and C1 control characters (tab and newline excepted); other Unicode, such as NBSP, is fine.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


#: Numbers YAML readers disagree about: leading zeros (octal to YAML 1.1), 0x, 0o (a string to YAML 1.1), 0b and
#: underscores (strings to YAML 1.2's core schema, numbers to YAML 1.1 and to ruamel).
_NUMBER_FORMS = re.compile(r"[-+]?(0[0-9_]+|0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+"
                           r"|[0-9][0-9_]*_[0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?)")


#: A plain integer of any of YAML's forms (decimal, 0x, 0o, 0b, leading zeros, underscores).
_INTEGER = re.compile(r"[-+]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)")
#: The largest integer any reader of gpuconf's files holds: Helm reads its values' numbers as float64 (go-yaml's
#: ParseFloat, then JSON), and takes a larger one for a string; no Kubernetes field holds more than int64.
FLOAT64_MAX = int(sys.float_info.max)


def _integer(text: str) -> int | None:
    """The value of a plain integer in any of _INTEGER's forms, None when it has more digits than any float64 (and
    than Python converts to or from decimal text: 4,300)."""
    sign, digits = ("-" if text[0] == "-" else ""), text.lstrip("+-").replace("_", "")
    base = {"0x": 16, "0o": 8, "0b": 2}.get(digits[:2].lower(), 10)
    digits = (digits[2:] if base != 10 else digits).lstrip("0") or "0"
    if len(digits) > 1100:  # 1,024 binary digits hold a float64's range in any base
        return None
    return int(sign + digits, base)


def _too_big(text: str) -> bool:
    """True for an integer beyond float64's range."""
    value = _integer(text)
    return value is None or abs(value) > FLOAT64_MAX


def _big_number(text: str) -> str:
    """The message for an integer beyond float64: its start and its length, never its decimal digits."""
    shown = text if len(text) <= 40 else f"{text[:20]}...{text[-8:]}"
    return (f"{shown} ({len(text)} characters) is an integer beyond float64's range: Helm reads it as a string, and no "
            "Kubernetes field holds it")


def _number_problem(text: str) -> tuple[str, str]:
    """The message and hint for a number in a form YAML readers disagree about."""
    import yaml

    sign, digits = ("-" if text[0] == "-" else ""), text.lstrip("+-").replace("_", "")
    prefix = digits[:2].lower()
    base = {"0x": 16, "0o": 8, "0b": 2}.get(prefix)
    if base is not None:
        value = int(sign + digits[2:], base)
        forms = {16: "hexadecimal (0x)", 8: "octal (0o, a string to YAML 1.1 readers such as Helm's)",
                 2: "binary (0b, a string to YAML 1.2's core schema)"}
        return (f"{text} is a number written in {forms[base]}; YAML readers disagree about such forms",
                f"write the plain number {value}, or quote it if it is text")
    if "_" in text:
        return (f"{text} has underscores, which YAML 1.1 readers skip and YAML 1.2's core schema reads as text",
                f"write the plain number {sign}{digits}, or quote it if it is text")
    decimal = int(sign + digits)
    octal = yaml.safe_load(text)  # what a YAML 1.1 reader (Helm, kubectl, PyYAML) makes of it
    if isinstance(octal, str):  # 09: not octal digits
        return (f"{text} has a leading zero: YAML 1.1 readers such as Helm's read the text {text!r}, YAML 1.2 "
                f"readers the number {decimal}", f"write the plain number {decimal}, or quote it if it is text")
    if isinstance(octal, int) and octal != decimal:
        return (f"{text} has a leading zero: YAML 1.1 readers such as Helm's read the octal number {octal}, YAML 1.2 "
                f"readers the decimal {decimal}",
                f"write {decimal} (or {octal}, if octal was meant), or quote it if it is text")
    return (f"{text} has a leading zero, which YAML 1.1 readers take for octal notation",
            f"write the plain number {decimal}, or quote it if it is text")


@lru_cache(maxsize=65536)
def _plain_scalar(text: str) -> Any:
    """A plain (unquoted) scalar resolved with YAML 1.2 rules and constructed by ruamel: null, bool, int, float,
    timestamp, or the string itself."""
    from ruamel.yaml.nodes import ScalarNode

    resolver, constructor = _yaml12()
    tag = resolver.resolve(ScalarNode, text, (True, False))
    if str(tag) == "tag:yaml.org,2002:str":
        return text
    return constructor.construct_object(ScalarNode(tag, text, style=None), deep=True)


@lru_cache(maxsize=1)
def _yaml12() -> tuple:
    from ruamel.yaml import YAML
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver(version=(1, 2)), YAML(typ="safe", pure=True).constructor


def _codepoint(character: Any) -> int:
    return ord(character) if isinstance(character, str) else int(character)


class _Refusal(Exception):
    def __init__(self, code: str, mark: Any, message: str, hint: str | None):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint
        self.line, self.col = _mark(mark)


def _finding(name: str, line: int, col: int, code: str, message: str, hint: str | None) -> Finding:
    return Finding(name, line, col, ERROR, code, "", message, hint)


def _mark(mark: Any) -> tuple[int, int]:
    if mark is None:
        return 1, 1
    return mark.line + 1, mark.column + 1


def _within(text: str, line: int, col: int) -> tuple[int, int]:
    """A position clamped to the text: libyaml puts the end of a file without a final newline on the line after."""
    lines = text.splitlines() or [""]
    if line > len(lines):
        return len(lines), len(lines[-1]) + 1
    return line, col


def _reader_position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _problem(exc: Any) -> str:
    problem = (exc.problem or str(exc)).strip()
    if exc.context:
        context = exc.context.strip()
        if exc.context_mark is not None and exc.problem_mark is not None and \
                exc.context_mark.line != exc.problem_mark.line:
            context += f" (started on line {exc.context_mark.line + 1})"
        problem = f"{context}: {problem}" if problem else context
    return problem


def _syntax_hint(exc: Any, text: str = "") -> str | None:
    problem = str(exc.problem or "")
    mark = exc.problem_mark
    if "tab" in problem or (mark is not None and 0 <= mark.index < len(text) and text[mark.index] == "\t"):
        return "indent with spaces, not tabs"
    if "mapping values are not allowed" in problem:
        return "quote values that contain ': ', or fix the indentation"
    if "expected <block end>" in problem or "expected '-' indicator" in problem:
        return "this line's indentation does not fit the lines above it"
    if "expected ',' or ']'" in problem or "expected ',' or '}'" in problem:
        return "close the bracket opened there, or separate its items with commas"
    if "end of stream" in problem or "<stream end>" in problem or "unexpected end" in problem:
        return "a bracket, brace or quote opened earlier is never closed"
    return None


def _kind(data: Any, with_value: bool = False) -> str:
    import datetime

    if isinstance(data, bool):
        return f"the boolean {str(data).lower()}" if with_value else "boolean"
    if isinstance(data, (int, float)):
        return f"the number {data}" if with_value else "number"
    if isinstance(data, (datetime.date, datetime.datetime)):
        return f"the date {data.isoformat()}" if with_value else "date"
    if isinstance(data, (list, tuple)):
        return "a list" if with_value else "list"
    if isinstance(data, dict):
        return "a mapping" if with_value else "mapping"
    if isinstance(data, str):
        return "string"
    return type(data).__name__

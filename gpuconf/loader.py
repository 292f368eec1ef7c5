"""Loader: YAML text to a positioned tree, refusing what an intent file must never contain."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .findings import ERROR, Finding

#: Largest intent file gpuconf reads (1 MiB). A generated 1,000-pool intent is about 250 KiB.
MAX_BYTES = 1024 * 1024
#: Deepest nesting accepted; the intent language itself needs 6.
MAX_DEPTH = 64

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

TITLES = {
    CODE_SYNTAX: "YAML syntax error", CODE_DUPLICATE_KEY: "duplicate key", CODE_ALIAS: "YAML anchor or alias",
    CODE_TAG: "explicit YAML tag", CODE_DEPTH: "nesting too deep", CODE_TOO_LARGE: "file too large",
    CODE_ENCODING: "not UTF-8, or a forbidden character", CODE_MULTI_DOC: "more than one YAML document",
    CODE_NOT_MAPPING: "empty file, or top level not a mapping", CODE_UNREADABLE: "file cannot be read",
    CODE_KEY: "mapping key that is not a plain string (number, boolean, date, list, or a << merge key)",
}


@dataclass
class Document:
    """A loaded YAML document: the positioned tree plus where it came from."""

    file: str
    data: Any  # CommentedMap at the top for a valid intent

    def position(self, loc: Sequence[str | int], point_at_key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of the deepest node that exists along loc."""
        return locate(self.data, loc, point_at_key)


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
    """Read and parse one intent file; raise LoadError with a positioned finding."""
    name = display or str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:  # callers check existence first; this covers races and permissions
        raise LoadError(_finding(name, 1, 1, CODE_UNREADABLE, f"cannot read file: {exc.strerror}", None)) from None
    return load_bytes(raw, name)


def load_bytes(raw: bytes, name: str) -> Document:
    """Parse bytes as one guarded YAML document."""
    if len(raw) > MAX_BYTES:
        raise LoadError(_finding(name, 1, 1, CODE_TOO_LARGE,
                                 f"file is {len(raw)} bytes; intent files are limited to {MAX_BYTES} bytes",
                                 "split the cluster into several intents or a fleet"))
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
    return Document(name, _parse(text, name))


def load_text(text: str, name: str) -> Document:
    """Parse an already-decoded string (tests, stdin)."""
    return load_bytes(text.encode("utf-8"), name)


def _parse(text: str, name: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.composer import ComposerError, MaxDepthExceededError
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError
    from ruamel.yaml.reader import ReaderError

    yaml = YAML(typ="rt")
    yaml.Composer = _guarded_composer()
    yaml.max_depth = MAX_DEPTH
    yaml.allow_duplicate_keys = False
    try:
        data = yaml.load(text)
    except _Refusal as exc:
        raise LoadError(_finding(name, exc.line, exc.col, exc.code, exc.message, exc.hint)) from None
    except DuplicateKeyError as exc:
        line, col = _mark(exc.problem_mark)
        key = _duplicate_key(exc)
        first = _first_occurrence(text, exc, key)
        msg = f"duplicate key {key!r}" + (f" (first defined on line {first})" if first else "")
        raise LoadError(_finding(name, line, col, CODE_DUPLICATE_KEY, msg,
                                 "a key may appear once per mapping; merge the two entries")) from None
    except MaxDepthExceededError as exc:
        line, col = _mark(exc.problem_mark)
        raise LoadError(_finding(name, line, col, CODE_DEPTH,
                                 f"nesting is deeper than {MAX_DEPTH} levels", None)) from None
    except ComposerError as exc:
        line, col = _mark(exc.problem_mark)
        if "single document" in str(exc.context or ""):
            raise LoadError(_finding(name, line, col, CODE_MULTI_DOC,
                                     "file holds more than one YAML document",
                                     "keep one ClusterIntent per file; use a fleet file for several clusters")) from None
        raise LoadError(_finding(name, line, col, CODE_SYNTAX, _problem(exc), None)) from None
    except ReaderError as exc:
        line, col = _reader_position(text, exc.position)
        raise LoadError(_finding(name, line, col, CODE_ENCODING,
                                 f"character U+{ord(exc.character) if isinstance(exc.character, str) else exc.character:04X} is not allowed in YAML",
                                 "remove control characters from the file")) from None
    except MarkedYAMLError as exc:
        line, col = _mark(exc.problem_mark)
        raise LoadError(_finding(name, line, col, CODE_SYNTAX, _problem(exc), _syntax_hint(exc))) from None
    except RecursionError:  # defence in depth; max_depth should always trip first
        raise LoadError(_finding(name, 1, 1, CODE_DEPTH, f"nesting is deeper than {MAX_DEPTH} levels", None)) from None
    if data is None:
        raise LoadError(_finding(name, 1, 1, CODE_NOT_MAPPING, "file is empty",
                                 "run `gpuconf init` for a commented starter intent"))
    from ruamel.yaml.comments import CommentedMap

    if not isinstance(data, CommentedMap):
        line, col = (data.lc.line + 1, data.lc.col + 1) if hasattr(data, "lc") else (1, 1)
        raise LoadError(_finding(name, line, col, CODE_NOT_MAPPING,
                                 f"top level must be a mapping (apiVersion, kind, metadata, spec), not a {_kind(data)}",
                                 None))
    _check_tree(data, name)
    return data


def _check_tree(node: Any, name: str) -> None:
    """Refuse keys that are not strings and strings with control characters (reachable through escapes)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    stack = [node]
    while stack:  # iterative: depth is bounded by the composer, but a stack keeps this flat anyway
        current = stack.pop()
        if isinstance(current, CommentedMap):
            for key, value in current.items():
                line, col = current.lc.key(key)
                if not isinstance(key, str):
                    shown = _kind(key, with_value=True)
                    raise LoadError(_finding(name, line + 1, col + 1, CODE_KEY,
                                             f"mapping key is {shown}, not a string",
                                             "keys are plain strings; quote it if it is meant as text"))
                if not _printable(key):
                    raise LoadError(_finding(name, line + 1, col + 1, CODE_ENCODING,
                                             "key contains a control character", "remove it"))
                if isinstance(value, str) and not _printable(value):
                    vline, vcol = current.lc.value(key)
                    raise LoadError(_finding(name, vline + 1, vcol + 1, CODE_ENCODING,
                                             "value contains a control character", "remove it"))
                stack.append(value)
        elif isinstance(current, CommentedSeq):
            for i, value in enumerate(current):
                if isinstance(value, str) and not _printable(value):
                    vline, vcol = current.lc.item(i)
                    raise LoadError(_finding(name, vline + 1, vcol + 1, CODE_ENCODING,
                                             "value contains a control character", "remove it"))
                stack.append(value)


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(text: str) -> bool:
    """False for C0/C1 control characters (tab and newline excepted); other Unicode, such as NBSP, is fine."""
    return _CONTROL.search(text) is None


def _first_occurrence(text: str, exc: Any, key: str) -> int | None:
    """Line of the first occurrence of a duplicated key: the same column, between the mapping start and the duplicate."""
    if exc.context_mark is None or exc.problem_mark is None:
        return None
    lines = text.splitlines()
    col = exc.problem_mark.column
    forms = (key, f'"{key}"', f"'{key}'")
    for number in range(exc.context_mark.line, exc.problem_mark.line):
        rest = lines[number][col:] if number < len(lines) else ""
        if lines[number][:col].strip(" -") == "" and any(
                rest.startswith(form) and rest[len(form):].lstrip().startswith(":") for form in forms):
            return number + 1
    return None


class _Refusal(Exception):
    def __init__(self, code: str, mark: Any, message: str, hint: str | None):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint
        self.line, self.col = _mark(mark)


def _guarded_composer() -> type:
    """A Composer that refuses aliases, anchors and explicit tags before building any node."""
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent

    class GuardedComposer(Composer):
        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.parser.peek_event()
            if isinstance(event, AliasEvent):
                # Aliases are shared references: a few bytes can expand to billions of nodes downstream.
                raise _Refusal(CODE_ALIAS, event.start_mark, f"YAML aliases are not allowed (*{event.anchor})",
                               "write the value out in full")
            if isinstance(event, ScalarEvent) and event.value == "<<" and event.style is None:
                # A YAML 1.1 merge key: ruamel merges it silently, a YAML 1.2 reader sees a literal "<<" key.
                raise _Refusal(CODE_KEY, event.start_mark, "YAML merge keys (<<) are not allowed",
                               "write the merged keys out in full")
            if isinstance(event, (ScalarEvent, MappingStartEvent, SequenceStartEvent)):
                if event.anchor is not None:
                    raise _Refusal(CODE_ALIAS, event.start_mark, f"YAML anchors are not allowed (&{event.anchor})",
                                   "write the value out in full where it is needed")
                if event.tag is not None:
                    # ruamel keeps even standard tags such as !!str as TaggedScalar objects, not plain values.
                    raise _Refusal(CODE_TAG, event.start_mark, f"explicit YAML tags are not allowed ({event.tag})",
                                   "remove the tag; to keep a value such as 1.10 a string, quote it: \"1.10\"")
            return super().compose_node(parent, index)

    return GuardedComposer


def _finding(name: str, line: int, col: int, code: str, message: str, hint: str | None) -> Finding:
    return Finding(name, line, col, ERROR, code, "", message, hint)


def _mark(mark: Any) -> tuple[int, int]:
    if mark is None:
        return 1, 1
    return mark.line + 1, mark.column + 1


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


def _syntax_hint(exc: Any) -> str | None:
    problem = str(exc.problem or "")
    if "tab" in problem or "'\\t'" in problem:
        return "indent with spaces, not tabs"
    if "mapping values are not allowed" in problem:
        return "quote values that contain ': ', or fix the indentation"
    if "expected <block end>" in problem:
        return "this line's indentation does not fit the lines above it"
    if "end of stream" in problem or "<stream end>" in problem or "unexpected end" in problem:
        return "a bracket, brace or quote opened earlier is never closed"
    return None


def _duplicate_key(exc: Any) -> str:
    problem = str(exc.problem or "")
    start = problem.find('"')
    end = problem.find('"', start + 1)
    return problem[start + 1:end] if 0 <= start < end else problem


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

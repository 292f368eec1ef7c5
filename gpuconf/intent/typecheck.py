"""Type checking: pydantic's errors turned into positioned findings with stable codes and hints."""

from __future__ import annotations

import re
import typing
from typing import Any, Iterable, Sequence

from ..findings import ERROR, Finding, dotted
from .loader import Document

CODE_UNKNOWN_FIELD = "GC201"
CODE_MISSING_FIELD = "GC202"
CODE_WRONG_TYPE = "GC203"
CODE_INVALID_CHOICE = "GC204"
CODE_OUT_OF_RANGE = "GC205"
CODE_BAD_FORMAT = "GC206"
CODE_INVALID_VALUE = "GC207"

TITLES = {
    CODE_UNKNOWN_FIELD: "unknown field", CODE_MISSING_FIELD: "required field missing", CODE_WRONG_TYPE: "wrong type",
    CODE_INVALID_CHOICE: "value not one of the allowed choices", CODE_OUT_OF_RANGE: "value out of range",
    CODE_BAD_FORMAT: "value does not match the required format", CODE_INVALID_VALUE: "invalid value",
}

_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "bool_type": "a boolean (true or false)",
    "float_type": "a number",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
}
_RANGE = {"greater_than_equal", "less_than_equal", "greater_than", "less_than", "too_short", "too_long",
          "string_too_short", "string_too_long"}


def type_findings(doc: Document, errors: Iterable[dict]) -> list[Finding]:
    """Map pydantic ValidationError.errors() to findings positioned in doc."""
    from .model import ClusterIntent

    out = []
    for err in errors:
        loc = _clean_loc(err["loc"])
        out.append(_finding(doc, ClusterIntent, loc, err))
    return out


def _clean_loc(loc: Sequence[Any]) -> tuple:
    # pydantic appends '[key]' when a mapping key (not its value) is invalid; the position is the key itself.
    return tuple(part for part in loc if part != "[key]")


def _is_key_error(err: dict) -> bool:
    return "[key]" in err["loc"]


def _finding(doc: Document, root: type, loc: tuple, err: dict) -> Finding:
    etype = err["type"]
    value = err.get("input")
    path = dotted(loc)
    hint = None
    if etype == "extra_forbidden":
        line, col = doc.position(loc, point_at_key=True)
        allowed = _allowed_keys(root, loc[:-1])
        from ..catalog import suggest

        guess = suggest(str(loc[-1]), allowed) if allowed else None
        hint = f"did you mean '{guess}'?" if guess else (f"allowed keys: {', '.join(sorted(allowed))}" if allowed else None)
        return Finding(doc.file, line, col, ERROR, CODE_UNKNOWN_FIELD, path, f"unknown field '{loc[-1]}'", hint)
    if etype == "missing":
        line, col = doc.position(loc[:-1])
        parent = dotted(loc[:-1]) or "the top level"
        return Finding(doc.file, line, col, ERROR, CODE_MISSING_FIELD, path,
                       f"required field '{loc[-1]}' is missing in {parent}", _missing_hint(loc))
    line, col = doc.position(loc, point_at_key=_is_key_error(err))
    if etype in _TYPE_NAMES:
        expected = _TYPE_NAMES[etype]
        return Finding(doc.file, line, col, ERROR, CODE_WRONG_TYPE, path,
                       f"expected {expected}, got {_describe(value)}", _type_hint(etype, value))
    if etype in ("literal_error", "enum"):
        choices = _choices(err)
        from ..catalog import suggest

        versions = bool(choices) and all(re.fullmatch(r"[0-9]+\.[0-9]+", c) for c in choices)
        guess = suggest(str(value), choices) if isinstance(value, str) and not versions else None
        hint = f"did you mean '{guess}'?" if guess else None
        if versions:
            hint = f"supported: {choices[0]} to {choices[-1]}"
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                hint = f"quote it, e.g. \"{choices[-1]}\": unquoted, YAML reads 1.30 as the number 1.3"
        shown = ", ".join(repr(c) for c in choices)
        return Finding(doc.file, line, col, ERROR, CODE_INVALID_CHOICE, path,
                       f"{_describe(value)} is not one of {shown}", hint)
    if etype in _RANGE:
        hint = "gpuconf's limits are in the documentation (Reference, \"Limits\"); split the cluster into several intents or a " \
               "fleet" if etype == "too_long" else None
        return Finding(doc.file, line, col, ERROR, CODE_OUT_OF_RANGE, path, _range_message(etype, value, err), hint)
    if etype == "string_pattern_mismatch":
        pattern = (err.get("ctx") or {}).get("pattern", "")
        return Finding(doc.file, line, col, ERROR, CODE_BAD_FORMAT, path,
                       f"{_describe(value)} does not match the pattern {pattern}", _pattern_hint(loc))
    return Finding(doc.file, line, col, ERROR, CODE_INVALID_VALUE, path, f"{_describe(value)}: {_lower(err['msg'])}",
                   _type_hint("int_type", value))


def _range_message(etype: str, value: Any, err: dict) -> str:
    ctx = err.get("ctx") or {}
    bounds = {"greater_than_equal": (">=", "ge"), "less_than_equal": ("<=", "le"),
              "greater_than": (">", "gt"), "less_than": ("<", "lt")}
    if etype in bounds:
        op, key = bounds[etype]
        return f"must be {op} {ctx.get(key)}, got {value}"
    if etype in ("too_short", "string_too_short"):
        return f"must have at least {ctx.get('min_length')} item{'s' if ctx.get('min_length') != 1 else ''}" \
            if etype == "too_short" else "must not be empty"
    if etype == "too_long" and "actual_length" in ctx:
        return f"must have at most {ctx.get('max_length')} items, got {ctx.get('actual_length')}"
    return _lower(err["msg"])


def _allowed_keys(root: type, loc: Sequence[Any]) -> list[str]:
    """The keys a mapping at loc accepts, found by walking the model classes."""
    from pydantic import BaseModel

    annotation: Any = root
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = next((f for name, f in annotation.model_fields.items() if (f.alias or name) == part), None)
            if field is None:
                return []
            annotation = field.annotation
            continue
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin in (list, tuple) and args:
            annotation = args[0]
        elif origin is dict and len(args) == 2:
            annotation = args[1]
        else:
            return []
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [f.alias or name for name, f in annotation.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin is typing.Union:
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "the boolean " + ("true" if value else "false")
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f"the string {shown!r}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if value is None:
        return "null"
    import datetime

    if isinstance(value, (datetime.date, datetime.datetime)):
        return f"the date {value.isoformat()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _type_hint(etype: str, value: Any) -> str | None:
    if etype in ("int_type", "float_type") and isinstance(value, str) and re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", value.strip()):
        return "remove the quotes: numbers are written unquoted"
    if etype == "bool_type" and isinstance(value, str):
        return "write true or false, unquoted (YAML 1.1 readers such as Helm disagree about yes/no/on/off)"
    if etype == "string_type" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "quote it: versions and names are strings, and unquoted 1.10 reads as the number 1.1"
    import datetime

    if etype == "string_type" and isinstance(value, (datetime.date, datetime.datetime)):
        return "quote it: unquoted, YAML reads it as a date"
    if etype == "string_type" and isinstance(value, bool):
        return "quote it: unquoted true/false is a boolean"
    if etype == "string_type" and value is None:
        return "give a value, or remove the key"
    return None


def _missing_hint(loc: tuple) -> str | None:
    if loc and loc[-1] == "apiVersion":
        return "start the file with apiVersion: gpuconf.dev/v1alpha1"
    if loc and loc[-1] == "kind":
        return "add kind: ClusterIntent"
    return "run `gpuconf schema` or see the documentation's intent language reference for the field"


def _pattern_hint(loc: tuple) -> str | None:
    last = loc[-1] if loc else ""
    # The field a list item belongs to: admins[0] is an admin, pciDeviceIds[0] a PCI id.
    field = next((part for part in reversed(loc) if isinstance(part, str)), "")
    if last == "version":
        return "a driver version looks like \"595.91.07\" (quoted)"
    if field in ("admins", "observers", "auditors") or "developers" in loc:
        return "subjects look like group:NAME, user:NAME or serviceaccount:NAMESPACE:NAME"
    if last == "interval":
        return "a duration such as 30s or 1m"
    if field == "pciDeviceIds":
        return "PCI ids are written 0x<DEVICE>10DE in upper-case hex, e.g. 0x20F910DE (lspci -nn shows [10de:20f9])"
    if field == "pciSubsystemIds":
        return "subsystem ids are written 0x<SUBDEVICE><SUBVENDOR>, e.g. 0x157E10DE (lspci -vnn shows them)"
    if len(loc) == 3 and loc[:2] == ("spec", "gpuModels"):
        return "model ids are upper-case letters, digits and '-', like the catalogue's (A800-40GB)"
    return None


def _choices(err: dict) -> list[str]:
    expected = (err.get("ctx") or {}).get("expected", "")
    return re.findall(r"'([^']*)'", expected)


def _lower(msg: str) -> str:
    return msg[:1].lower() + msg[1:] if msg else msg

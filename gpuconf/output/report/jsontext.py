"""report.json's text: the report's plain data as indented JSON with sorted keys, byte for byte what the standard
library writes, by orjson where it can."""

from __future__ import annotations

import json
from typing import Any


def report_json(report: dict) -> str:
    """report.json: the report's facts for machines, keys sorted."""
    return dumps_json(report) + "\n"


def dumps_json(value: Any) -> str:
    """`json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)`, byte for byte; orjson writes it when it can.

    With an indent the standard library encodes in pure Python, about twenty times slower than orjson on a big
    report. orjson writes the same text for plain data: dicts, lists, strings, integers, booleans and None. It
    writes some floats its own way (0.00001 for 1e-05, null for NaN), and an override's value can be a float, so
    any other value goes to the standard library, as does one orjson refuses (an integer beyond 64 bits, a lone
    surrogate, nesting deeper than 254).
    """
    if _plain_json(value):
        import orjson

        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONEncodeError:
            pass
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


_JSON_LEAVES = frozenset({str, int, bool, type(None)})
_JSON_CONTAINERS = frozenset({dict, list, tuple})
_JSON_PLAIN = _JSON_LEAVES | _JSON_CONTAINERS


def _plain_json(value: Any) -> bool:
    """Whether value holds dicts, lists, tuples, strings, integers, booleans and None only: exactly these types,
    not subclasses of them."""
    # A loop, not recursion: a deeply nested override value must not exhaust the stack here.
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            children = item.values()
        elif kind is list or kind is tuple:
            children = item
        elif kind in _JSON_LEAVES:
            continue
        else:
            return False
        kinds = set(map(type, children))  # no Python loop over the strings and numbers that most containers hold
        if not kinds <= _JSON_PLAIN:
            return False
        if not kinds.isdisjoint(_JSON_CONTAINERS):
            stack.extend(child for child in children if type(child) in _JSON_CONTAINERS)
    return True

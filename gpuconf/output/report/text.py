"""The small text helpers the report's sections share: a value on one line as JSON, a counted noun, a compact JSON
value and a chart version's sort key."""

from __future__ import annotations

import json
from typing import Any


def plural(n: int, one: str, many: str) -> str:
    """`n` and the noun in its number: "1 value differs", "3 values differ"."""
    return f"{n} {one if n == 1 else many}"


def compact(value: Any) -> str:
    """A value as JSON on one line, keys sorted, with a space after each separator."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def version_key(v: str) -> tuple[int, ...]:
    """A chart version ("v26.7.0") as a tuple of integers that sorts as the versions do."""
    return tuple(int(p) for p in v.lstrip("v").split("."))


def show(value: Any) -> str:
    """A value on one line, as JSON (strings quoted, so "1.10" and 1.1 stay apart)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)

"""Helm's `--set` syntax, read the way Helm reads it (helm.sh/helm pkg/strvals, parser.go: key, listItem, valList,
runesUntil, typedVal), into the values tree the files were merged into.

What Helm does, and so what this does:
  * `a.b=c,d=e`: `,` ends a value and `.` nests a key; a backslash keeps the next character literal (`a\\.b` is one
    key, `a=x\\,y` one value);
  * `a={x,y}`: a list of the typed items; `a[0]=x`, `a[1].b=x`, `a[0][1]=x`: list indexes (the list grows with nulls);
  * typed scalars: `true`/`false`/`null` in any case, `0`, and decimal integers that do not start with 0 (int64);
    every other value, floats included, stays a string (`--set-string` keeps all of them strings);
  * a key that already holds a scalar cannot take a nested key or an index: Helm stops with an error, so does this.
"""

from __future__ import annotations

from typing import Any

#: Helm's limits (strvals.MaxIndex, MaxNestedNameLevel).
MAX_INDEX = 65536
MAX_NESTED = 30
_INT64 = 2 ** 63


class SetError(ValueError):
    """A --set argument Helm would refuse; the message says where."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def until(self, stop: str) -> tuple[str, str | None]:
        """Characters up to one of stop (backslash escapes the next one): (text, the stop character or None at
        the end)."""
        out = []
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            self.pos += 1
            if ch in stop:
                return "".join(out), ch
            if ch == "\\":
                if self.pos >= len(self.text):
                    return "".join(out), None
                out.append(self.text[self.pos])
                self.pos += 1
                continue
            out.append(ch)
        return "".join(out), None

    def peek(self) -> str | None:
        return self.text[self.pos] if self.pos < len(self.text) else None


def typed(text: str, strings: bool = False) -> Any:
    """strvals.typedVal: the value a --set item becomes."""
    if strings:
        return text
    lower = text.lower()
    if lower == "true":
        return True
    if lower == "false":
        return False
    if lower == "null":
        return None
    if text == "0":
        return 0
    if text and text[0] != "0":
        body = text[1:] if text[0] in "+-" else text
        # 19 digits hold every int64; longer text is ParseInt's range error, so a string, as in Helm (and Python
        # converts no more than 4,300 digits).
        if body.isascii() and body.isdigit() and len(body) <= 19:
            value = int(text)
            if -_INT64 <= value < _INT64:
                return value
    return text


def parse_into(text: str, dest: dict, strings: bool = False) -> None:
    """Apply one --set (or --set-string, with strings) argument to dest, as strvals.ParseInto does."""
    reader = _Reader(text)
    while True:
        if reader.pos >= len(reader.text):
            return
        if not _key(reader, dest, 0, strings):
            return


def _key(r: _Reader, data: dict, level: int, strings: bool) -> bool:
    """One key=value item; False at the end of the input."""
    key, last = r.until("=[,.")
    if last is None:
        if not key:
            return False
        raise SetError(f"key {key!r} has no value")
    if last == "[":
        index = _index(r)
        existing = data.get(key, [])
        if not isinstance(existing, list):
            raise SetError(f"{key!r} is not a list, so it takes no index")
        items = _list_item(list(existing), index, level, strings, r)
        if key:
            data[key] = items
        return True
    if last == "=":
        items = _value_list(r, strings)
        if items is not None:
            if key:
                data[key] = items
            return True
        value, _ = r.until(",")
        if key:
            data[key] = typed(value, strings)
        return True
    if last == ",":
        raise SetError(f"key {key!r} has no value (cannot end with ,)")
    level += 1
    if level > MAX_NESTED:
        raise SetError(f"key nesting is deeper than Helm's limit of {MAX_NESTED}")
    inner = data.get(key, {})
    if not isinstance(inner, dict):
        raise SetError(f"{key!r} holds a value, not a map, so it takes no nested key")
    inner = dict(inner)
    more = _key(r, inner, level, strings)
    if more and not inner:
        raise SetError(f"key map {key!r} has no value")
    if key and inner:
        data[key] = inner
    return more


def _index(r: _Reader) -> int:
    text, last = r.until("]")
    if last is None:
        raise SetError("an index has no closing ]")
    try:
        index = int(text.strip() if text.strip() == text else "x")
    except ValueError:
        raise SetError(f"index {text!r} is not a number") from None
    if index < 0:
        raise SetError(f"negative {index} index not allowed")
    if index > MAX_INDEX:
        raise SetError(f"index of {index} is greater than Helm's maximum of {MAX_INDEX}")
    return index


def _set_index(items: list, index: int, value: Any) -> list:
    if len(items) <= index:
        items = items + [None] * (index + 1 - len(items))
    items[index] = value
    return items


def _list_item(items: list, index: int, level: int, strings: bool, r: _Reader) -> list:
    rest, last = r.until("[.=")
    if rest:
        raise SetError(f"unexpected data at end of array index: {rest!r}")
    if last is None:
        raise SetError("an index has no value")
    if last == "=":
        values = _value_list(r, strings)
        if values is not None:
            return _set_index(items, index, values)
        value, _ = r.until(",")
        return _set_index(items, index, typed(value, strings))
    if last == "[":
        inner_index = _index(r)
        current = items[index] if len(items) > index else None
        if current is not None and not isinstance(current, list):
            raise SetError(f"item {index} is not a list, so it takes no index")
        return _set_index(items, index, _list_item(list(current or []), inner_index, level, strings, r))
    current = items[index] if len(items) > index else None
    inner = dict(current) if isinstance(current, dict) else {}
    _key(r, inner, level, strings)
    return _set_index(items, index, inner)


def _value_list(r: _Reader, strings: bool) -> list | None:
    """`{a,b}` as a list of typed items, or None (and nothing read) when the value is not a list."""
    if r.peek() != "{":
        return None
    r.pos += 1
    items = []
    while True:
        text, last = r.until(",}")
        if last is None:
            raise SetError("list must terminate with '}'")
        items.append(typed(text, strings))
        if last == "}":
            if r.peek() == ",":
                r.pos += 1
            return items

"""The syntax the rule modules check names against, and how their findings show a value: DNS-1123 names, label
keys and values, label selectors."""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
NAME_HINT = "use lower-case letters, digits and '-', starting and ending with a letter or digit"


def qualified_name_problem(key: str) -> str | None:
    """What is wrong with a qualified name (a label or taint key: an optional DNS-subdomain prefix and a
    name), or None."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return "has an empty prefix"
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return "has an invalid prefix (must be a DNS subdomain)"
    if not name or len(name) > 63 or not LABEL_NAME.fullmatch(name):
        return "has an invalid name part (at most 63 letters, digits, '-', '_' or '.')"
    return None


def label_value_ok(value: str) -> bool:
    """Whether a string is a label value: empty, or at most 63 letters, digits, '-', '_' and '.'."""
    return value == "" or (len(value) <= 63 and bool(LABEL_NAME.fullmatch(value)))


#: A label selector requirement: key, !key, key=value, key==value, key!=value, key in (...), key notin (...).
_SELECTOR_REQUIREMENT = re.compile(r"\s*(?:(!)\s*(?P<absent>[^\s=!(),]+)|(?P<key>[^\s=!(),]+)\s*"
                                   r"(?:(?P<op>==|!=|=)\s*(?P<value>[^\s=!(),]*)|\s+(?P<set>in|notin)\s*"
                                   r"\((?P<values>[^()]*)\))?)\s*")


def selector_problem(selector: str) -> str | None:
    """Why a string is not a Kubernetes label selector, or None when it is one."""
    parts, depth, current = [], 0, ""
    for ch in selector:  # split on the commas outside (...)
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    for part in parts:
        match = _SELECTOR_REQUIREMENT.fullmatch(part)
        if match is None:
            return f"{part.strip()!r} is not a requirement (key, !key, key=value, key!=value, key in (a,b))"
        key = match.group("absent") or match.group("key")
        problem = qualified_name_problem(key)
        if problem:
            return f"key {key!r} {problem}"
        values = [match.group("value")] if match.group("value") is not None else \
            [v.strip() for v in match.group("values").split(",")] if match.group("values") is not None else []
        for value in values:
            if not label_value_ok(value):
                return f"value {value!r} is not a valid label value"
    return None


def shown_text(text: str) -> str:
    """A text for a message: quoted, escaped, and cut after 60 characters (a 10,000-character key stays readable)."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def shown(value: object) -> str:
    """A value as a message quotes it: JSON, keys sorted."""
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False)

"""The YAML values of a drafted intent (import and adopt write the draft with ruamel.yaml, to keep its comments).

commented() turns plain dicts and lists into ruamel's commented containers, so that they dump in block style;
quoted() double-quotes every string that a YAML 1.1 or 1.2 reader would read as something else, gpuconf's quoting
policy (emit.needs_quotes) applied to the draft.
"""

from __future__ import annotations

from typing import Any, Mapping


def commented(value: Any) -> Any:
    """Plain dicts and lists as ruamel commented containers (so they dump in block style)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, Mapping):
        return CommentedMap((k, commented(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return CommentedSeq(commented(v) for v in value)
    return value


def quoted(value: Any) -> Any:
    """Double-quote every string a YAML 1.1 or 1.2 reader would read as something else (gpuconf's policy)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    from ..emit import needs_quotes

    if isinstance(value, CommentedMap):
        for k in list(value):
            value[k] = quoted(value[k])
        return value
    if isinstance(value, dict):
        return quoted(commented(value))
    if isinstance(value, CommentedSeq):
        for i, v in enumerate(value):
            value[i] = quoted(v)
        return value
    if isinstance(value, list):
        return quoted(commented(value))
    if isinstance(value, str) and needs_quotes(value):
        return DoubleQuotedScalarString(value)
    return value

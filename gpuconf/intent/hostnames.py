"""Hostname patterns as NFD reads them: Go's regexp (RE2) syntax, unanchored matching, overlap decided by automata.

NFD matches a NodeFeatureRule's `system.name` `nodename` with op `InRegexp` by compiling each value with Go's
`regexp.Compile` and calling `MatchString` (kubernetes-sigs/node-feature-discovery, pkg/apis/nfd/nodefeaturerule/
expression.go): RE2 syntax, so no lookarounds, backreferences or `\\Z`, and a match anywhere in the name unless the
pattern anchors itself. google-re2 (Google's RE2, the engine Go's regexp reimplements) checks the syntax; two
patterns can select one node exactly when the intersection of their automata (interegular) is not empty.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator, Optional

_OPTIONS: Any = None


def _re2() -> Any:
    global _OPTIONS
    import re2

    if _OPTIONS is None:
        _OPTIONS = re2.Options()
        _OPTIONS.log_errors = False  # RE2 would write every refusal to stderr through absl
    return re2


def re2_error(pattern: str) -> Optional[str]:
    """Why RE2 (Go's regexp syntax) refuses the pattern, or None when it compiles."""
    re2 = _re2()
    try:
        re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else str(exc)
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    except (TypeError, ValueError) as exc:  # a NUL or a pattern RE2 cannot take as text
        return str(exc)
    return _go_limits(pattern)


_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


def _go_limits(pattern: str) -> Optional[str]:
    """Go's regexp/syntax limits where C++ RE2 reads the text otherwise: a repeat count above 1000 (RE2 takes a
    count of nine digits or more for literal text, Go refuses it: ErrInvalidRepeatSize) and nesting deeper than
    1000 (Go's maxHeight: ErrNestingDepth)."""
    deepest = 0
    for i, ch, depth in _scan(pattern):
        deepest = max(deepest, depth)
        repeat = _REPEAT.match(pattern, i) if ch == "{" else None
        if repeat and any(n and int(n) > 1000 for n in (repeat.group(1), repeat.group(3))):
            return f"invalid repeat count: {repeat.group(0)}"
    return "expression nests too deeply" if deepest >= 1000 else None


@lru_cache(maxsize=4096)
def compiled(pattern: str) -> Any:
    """The pattern compiled by RE2, to search node names as NFD does (unanchored); the caller checked re2_error."""
    return _re2().compile(pattern, _OPTIONS)


def matches(pattern: str, name: str) -> bool:
    """NFD's InRegexp on a node name: RE2, unanchored (Go's MatchString)."""
    return compiled(pattern).search(name) is not None


def _scan(pattern: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, group depth) of every unescaped character outside a character class, then a last
    (len, "", depth) whose depth is not 0 when the groups do not balance (-1 for an unclosed class)."""
    depth, i = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            # A "]" right after "[" or "[^" is a member of the class, not its end.
            j = i + 1 + (pattern[i + 1:i + 2] == "^")
            j += pattern[j:j + 1] == "]"
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            if j >= len(pattern):
                yield len(pattern), "", -1
                return
            i = j + 1
            continue
        depth += (ch == "(") - (ch == ")")
        yield i, ch, depth
        i += 1
    yield len(pattern), "", depth


def _branches(pattern: str) -> Optional[list[str]]:
    """The pattern's top-level alternatives, or None when its brackets do not balance."""
    out, start = [], 0
    for i, ch, depth in _scan(pattern):
        if ch == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        elif not ch and depth:
            return None
    out.append(pattern[start:])
    return out


def _anchored(branch: str) -> str:
    """One alternative as interegular reads it: its own ^/\\A and $/\\z stripped, and `.*` where it is unanchored."""
    head = branch.startswith("^") or branch.startswith("\\A")
    if head:
        branch = branch[1:] if branch.startswith("^") else branch[2:]
    tail = False
    for anchor in ("$", "\\z"):
        if branch.endswith(anchor):
            # An even count of backslashes before the anchor leaves it an anchor, an odd one escapes it.
            cut = branch[:-len(anchor)]
            slashes = len(cut) - len(cut.rstrip("\\"))
            if anchor == "\\z" or slashes % 2 == 0:
                branch, tail = cut, True
                break
    return ("" if head else ".*") + f"(?:{branch})" + ("" if tail else ".*")


@lru_cache(maxsize=4096)
def _pattern(pattern: str) -> Any:
    """The interegular pattern of every node name the hostname pattern matches, or None when interegular cannot
    read it (an anchor inside a group, a construct it lacks)."""
    from interegular import parse_pattern

    branches = _branches(pattern)
    if branches is None:
        return None
    try:
        return parse_pattern("|".join(f"(?:{_anchored(b)})" for b in branches))
    except Exception:  # interegular's own refusals (Unsupported, InvalidSyntax) share no base class
        return None


def could_share_a_name(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """Whether some node name matches both hostname patterns (no pattern matches every name); None when the
    automata cannot be built, for the caller to fall back on a coarser test."""
    if a is None or b is None:
        return True
    if a == b:
        return True
    return _intersects(*sorted((a, b)))


@lru_cache(maxsize=8192)
def _intersects(a: str, b: str) -> Optional[bool]:
    from interegular.fsm import Alphabet
    from interegular.patterns import REFlags

    pa, pb = _pattern(a), _pattern(b)
    if pa is None or pb is None:
        return None
    try:
        alphabet = Alphabet.union(pa.get_alphabet(REFlags(0)), pb.get_alphabet(REFlags(0)))[0]
        return not (pa.to_fsm(alphabet) & pb.to_fsm(alphabet)).empty()
    except Exception:  # noqa: BLE001 - a construct interegular cannot turn into an automaton
        return None

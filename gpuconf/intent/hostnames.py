"""Hostname patterns as NFD reads them: Go's regexp (RE2) syntax, unanchored matching, overlap decided by automata.

NFD matches a NodeFeatureRule's `system.name` `nodename` with op `InRegexp` by compiling each value with Go's
`regexp.Compile` and calling `MatchString` (kubernetes-sigs/node-feature-discovery, pkg/apis/nfd/nodefeaturerule/
expression.go): RE2 syntax, so no lookarounds, backreferences or `\\Z`, and a match anywhere in the name unless the
pattern anchors itself. google-re2 (Google's RE2, the engine Go's regexp reimplements) checks the syntax; two
patterns can select one node exactly when the intersection of their automata (interegular) is not empty.

Hostile patterns make automata huge (`(a|b)*a(a|b){18}` has 2^18 states), so the work is bounded: cheap tests of
the literal text a pattern must start or end with, and of its anchors, decide most pairs before any automaton is
built; an automaton (one pattern's, or the product of two) has at most STATES states, and a validation spends at
most SECONDS on automata. Past either, `could_share_a_name` raises OverBudget: the caller says the pools *could*
overlap (a warning), rather than hang a CI job.
"""
from __future__ import annotations

import contextlib
import re
import time
from functools import lru_cache
from typing import Any, Iterator, Optional

#: The most states one automaton (a pattern's, or the product of two) may have, and the wall-clock seconds one
#: validation may spend building and intersecting them (the state bound decides; the clock only backs it up).
STATES = 20_000
SECONDS = 2.0


class OverBudget(Exception):
    """Comparing two patterns as automata would take more than the budget allows."""


class Budget:
    """The automaton work left to one validation: STATES per automaton, SECONDS in all."""

    def __init__(self, states: int = STATES, seconds: float = SECONDS) -> None:
        self.states = states
        self.deadline = time.monotonic() + seconds

    def check(self, states: int) -> None:
        """Raise OverBudget when an automaton has grown past the bound or the time is spent."""
        if states > self.states or (states & 255 == 0 and time.monotonic() > self.deadline):
            raise OverBudget

_OPTIONS: Any = None


def _re2() -> Any:
    global _OPTIONS
    import re2

    if _OPTIONS is None:
        _OPTIONS = re2.Options()
        _OPTIONS.log_errors = False  # RE2 would write every refusal to stderr through absl
    return re2


@lru_cache(maxsize=4096)
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


def could_share_a_name(a: Optional[str], b: Optional[str], budget: Optional[Budget] = None) -> Optional[bool]:
    """Whether some node name matches both hostname patterns (no pattern matches every name); None when the
    automata cannot be built, for the caller to fall back on a coarser test. Cheap tests first (the literal text
    each branch must start or end with, its anchors); automata only for what they leave open, within budget (a
    fresh one when none is given): OverBudget when that runs out."""
    if a is None or b is None:
        return True
    if a == b:
        return True
    a, b = sorted((a, b))
    cheap = _cheap(a, b)
    if cheap is not None:
        return cheap
    return _intersects(a, b, budget or Budget())


_META = set(".^$*+?{}[]\\|()")


def _shape(branch: str) -> tuple[Optional[str], Optional[str], bool]:
    """(the literal text a branch must start with when anchored at its start, else None; the same for its end;
    whether it holds an anchor anywhere but its ends, where the cheap tests do not apply)."""
    head = branch.startswith("^") or branch.startswith("\\A")
    body = branch[1:] if branch.startswith("^") else branch[2:] if head else branch
    tail = False
    for anchor in ("$", "\\z"):
        if body.endswith(anchor):
            cut = body[:-len(anchor)]
            if anchor == "\\z" or (len(cut) - len(cut.rstrip("\\"))) % 2 == 0:
                body, tail = cut, True
                break
    inner = any(ch and ch in "^$" for _, ch, _ in _scan(body)) or "\\A" in body or "\\z" in body
    prefix = None
    if head:
        prefix = ""
        for ch in body:
            if ch in _META:
                break
            prefix += ch
        if prefix and body[len(prefix):len(prefix) + 1] in ("*", "?", "{"):
            prefix = prefix[:-1]  # the last literal is optional or repeated
    suffix = None
    if tail:
        run = len(body)
        while run and body[run - 1] not in _META:
            run -= 1
        suffix = body[run:]
        if run and body[run - 1] == "\\":
            suffix = suffix[1:]  # an escape's letter (\d) is no literal
    return prefix, suffix, inner


@lru_cache(maxsize=4096)
def _shapes(pattern: str) -> Optional[tuple]:
    """The _shape of each top-level branch, or None when the brackets do not balance."""
    branches = _branches(pattern)
    return None if branches is None else tuple(map(_shape, branches))


def literal_ends(pattern: str) -> Optional[tuple[str, str]]:
    """(the literal text a one-branch pattern must start with, the text it must end with), each "" where it is not
    anchored there (or starts with a construct); None for several branches or an anchor inside: GC303's sort key."""
    shapes = _shapes(pattern)
    if shapes is None or len(shapes) != 1 or shapes[0][2]:
        return None
    prefix, suffix, _ = shapes[0]
    return prefix or "", suffix or ""


def _cheap(a: str, b: str) -> Optional[bool]:
    """The pair decided without automata, or None. Per pair of top-level branches: two start-anchored literal
    prefixes that differ before either ends select no common name (nor two end-anchored suffixes); a branch that is
    free at its end meets a branch free at its start (their matches side by side make one name)."""
    sa, sb = _shapes(a), _shapes(b)
    if sa is None or sb is None:
        return None
    open_pairs = 0
    for x in sa:
        for y in sb:
            (px, sx, ix), (py, sy, iy) = x, y
            if px is not None and py is not None and not (px.startswith(py) or py.startswith(px)):
                continue
            if sx is not None and sy is not None and not (sx.endswith(sy) or sy.endswith(sx)):
                continue
            if not ix and not iy and ((sx is None and py is None) or (sy is None and px is None)):
                return True
            open_pairs += 1
    return False if open_pairs == 0 else None
_DECIDED: dict[tuple[str, str], Optional[bool]] = {}


def _intersects(a: str, b: str, budget: Budget) -> Optional[bool]:
    """The automata's answer (cached: a pair over budget is not, and raises again)."""
    if (a, b) in _DECIDED:
        return _DECIDED[(a, b)]
    from interegular.fsm import Alphabet
    from interegular.patterns import REFlags

    if time.monotonic() > budget.deadline:
        raise OverBudget
    pa, pb = _pattern(a), _pattern(b)
    if pa is None or pb is None:
        return None
    try:
        with _bounded(budget):
            alphabet = Alphabet.union(pa.get_alphabet(REFlags(0)), pb.get_alphabet(REFlags(0)))[0]
            found = _meet(pa.to_fsm(alphabet), pb.to_fsm(alphabet), budget)
    except OverBudget:
        raise
    except Exception:  # noqa: BLE001 - a construct interegular cannot turn into an automaton
        found = None
    if len(_DECIDED) > 8192:
        _DECIDED.clear()
    _DECIDED[(a, b)] = found
    return found


def _meet(fa: Any, fb: Any, budget: Budget) -> bool:
    """Whether two automata over one alphabet accept a common string: their product, crawled only as far as needed
    (and no further than the budget)."""
    start = (fa.initial, fb.initial)
    seen, todo = {start}, [start]
    while todo:
        x, y = todo.pop()
        if x in fa.finals and y in fb.finals:
            return True
        there = fb.map.get(y) or {}
        for symbol, nx in (fa.map.get(x) or {}).items():
            ny = there.get(symbol)
            if ny is not None and (nx, ny) not in seen:
                seen.add((nx, ny))
                todo.append((nx, ny))
                budget.check(len(seen))
    return False


@contextlib.contextmanager
def _bounded(budget: Budget) -> Iterator[None]:
    """interegular's automaton construction (its fsm.crawl) bounded by the budget, and in linear time: its own
    crawl looks every new state up in a list."""
    from interegular import fsm as F

    real = F.crawl

    def crawl(alphabet: Any, initial: Any, final: Any, follow: Any) -> Any:
        def key(state: Any) -> Any:  # the crawls' states are sets, dicts and tuples; equal ones one key
            if isinstance(state, dict):
                return frozenset(state.items())
            return frozenset(state) if isinstance(state, set) else state

        states, index, finals, moves = [initial], {key(initial): 0}, set(), {}
        i = 0
        while i < len(states):
            state = states[i]
            if final(state):
                finals.add(i)
            moves[i] = {}
            for transition in alphabet.by_transition:
                try:
                    nxt = follow(state, transition)
                except F.OblivionError:
                    continue
                j = index.get(key(nxt))
                if j is None:
                    j = index[key(nxt)] = len(states)
                    states.append(nxt)
                    budget.check(len(states))
                moves[i][transition] = j
            i += 1
        return F.FSM(alphabet=alphabet, states=range(len(states)), initial=0, finals=finals, map=moves,
                     __no_validation__=True)

    F.crawl = crawl
    try:
        yield
    finally:
        F.crawl = real

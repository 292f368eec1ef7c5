"""The rule registry: what a rule sees (Context), the `rule` decorator, RULES in the order the rules run, and check.

It imports no rule module: the package's __init__ loads them, and each registers its rules here as it loads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from ... import catalog, plan
from ...findings import ERROR, Finding
from ..loader import Document
from ..model import ClusterIntent


@dataclass(frozen=True)
class Rule:
    """A domain rule: its stable code, a short title, and the check that yields findings."""

    code: str
    title: str
    check: Callable[["Context"], Iterator[Finding]]


@dataclass
class Context:
    """What a rule sees: the typed intent and the positioned document it came from."""

    intent: ClusterIntent
    doc: Document
    strategy: str | None = field(init=False)
    # The cluster's folder as deployed (an impact.Deployed, looked up by metadata.name), for the transition rules
    # GC370-GC379 of `validate --against` and `diff --against`; None: nothing to compare with.
    deployed_for: Callable[[str], object] | None = None
    _deployed: object = field(init=False, default=False)
    found: list = field(init=False, default_factory=list)  # the findings of the rules that ran before this one

    def __post_init__(self) -> None:
        self.strategy = plan.mig_strategy(self.intent)

    @property
    def deployed(self):
        """The folder as deployed, read once (None when there is none)."""
        if self._deployed is False:
            self._deployed = self.deployed_for(self.intent.metadata.name) if self.deployed_for else None
        return self._deployed

    def finding(self, code: str, loc: Sequence[str | int], message: str, hint: str | None = None,
                severity: str = ERROR, at_key: bool = False) -> Finding:
        """A finding positioned at loc in the source document."""
        from ...findings import dotted

        line, col = self.doc.position(loc, point_at_key=at_key)
        return Finding(self.doc.file, line, col, severity, code, dotted(loc), message, hint)


RULES: list[Rule] = []


def rule(code: str, title: str) -> Callable[[Callable[[Context], Iterator[Finding]]], Callable[[Context], Iterator[Finding]]]:
    """Register a rule under its code."""

    def register(fn: Callable[[Context], Iterator[Finding]]) -> Callable[[Context], Iterator[Finding]]:
        RULES.append(Rule(code, title, fn))
        return fn

    return register


def check(intent: ClusterIntent, doc: Document, deployed_for: Callable[[str], object] | None = None) -> list[Finding]:
    """Run every rule over the intent and collect all findings (with deployed_for, the transition rules too)."""
    ctx = Context(intent, doc, deployed_for)
    out: list[Finding] = ctx.found
    for r in RULES:
        out.extend(r.check(ctx))
    return out


def rule_codes() -> list[tuple[str, str]]:
    """(code, title) of every domain rule, for docs and `gpuconf rules`."""
    return sorted((r.code, r.title) for r in RULES)


def pool_loc(i: int, *rest: str | int) -> tuple:
    """Where a field of the i-th pool is."""
    return ("spec", "pools", i, *rest)


def hint_choices(word: str, choices: Sequence[str], what: str) -> str:
    """A did-you-mean hint for a word among the choices, else the choices themselves."""
    guess = catalog.suggest(word, choices)
    if guess:
        return f"did you mean '{guess}'?"
    return f"known {what}: {', '.join(sorted(choices))}" if choices else f"declare the {what.rstrip('s')} first"

"""Validation core: file -> positioned tree -> typed intent -> domain rules, collecting every finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..findings import ERROR, WARNING, Finding, has_errors, sort_findings
from ..gcpause import gc_paused
from .loader import CODE_TRUNCATED, Document, LoadError, load_file


@dataclass
class Validation:
    """The outcome of validating one file: the typed intent (when it type-checks) and all findings."""

    file: str
    intent: object | None = None  # ClusterIntent; typed loosely to keep pydantic out of this module's import
    document: Document | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not has_errors(self.findings)


def validate_path(path: str | Path, display: str | None = None) -> Validation:
    """Load, type-check and rule-check one intent file."""
    name = display or str(path)
    try:
        doc = load_file(path, name)
    except LoadError as exc:
        return Validation(name, findings=[exc.finding])
    return validate_document(doc)


def validate_document(doc: Document, deployed_for=None) -> Validation:
    """Type-check and rule-check an already-loaded document; at most MAX_FINDINGS findings, then a count.
    deployed_for (cluster name -> the folder as deployed, or None) adds the transition rules GC370-GC379."""
    result = check_document(doc, deployed_for)
    result.findings = bounded(result.findings)
    return result


@gc_paused
def check_document(doc: Document, deployed_for=None) -> Validation:
    """Type-check and rule-check an already-loaded document: every finding, sorted."""
    from pydantic import ValidationError

    from .model import ClusterIntent
    from .rules import check
    from .typecheck import type_findings

    result = Validation(doc.file, document=doc)
    try:
        intent = ClusterIntent.model_validate(doc.data)
    except ValidationError as exc:
        result.findings = sort_findings(type_findings(doc, exc.errors()))
        return result
    result.intent = intent
    result.findings = sort_findings(check(intent, doc, deployed_for))
    return result


#: Most findings reported for one intent (or one cluster of a fleet): past them, one last finding counts the rest.
MAX_FINDINGS = 100


def bounded(findings: list[Finding]) -> list[Finding]:
    """The first MAX_FINDINGS of sorted findings and, when there are more, a GC113 finding that counts the rest (an
    error when any of them is one), placed where the first of them is."""
    if len(findings) <= MAX_FINDINGS:
        return findings
    rest = findings[MAX_FINDINGS:]
    errors = sum(1 for f in rest if f.severity == ERROR)
    first = rest[0]
    counts = ", ".join(part for part in (f"{errors} error{'s' if errors != 1 else ''}" if errors else "",
                                         f"{len(rest) - errors} warning{'s' if len(rest) - errors != 1 else ''}"
                                         if len(rest) > errors else "") if part)
    summary = Finding(first.file, first.line, first.column, ERROR if errors else WARNING, CODE_TRUNCATED, "",
                      f"{len(rest)} more findings from here on are not shown ({counts}); gpuconf reports at most "
                      f"{MAX_FINDINGS} per intent", "fix the findings above and validate again")
    return [*findings[:MAX_FINDINGS], summary]

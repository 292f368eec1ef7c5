"""Validation core: file -> positioned tree -> typed intent -> domain rules, collecting every finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..findings import Finding, has_errors, sort_findings
from ..gcpause import gc_paused
from .loader import Document, LoadError, load_file


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


@gc_paused
def validate_document(doc: Document) -> Validation:
    """Type-check and rule-check an already-loaded document."""
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
    result.findings = sort_findings(check(intent, doc))
    return result

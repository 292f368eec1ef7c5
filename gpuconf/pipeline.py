"""The whole pipeline for one intent file: load, validate, plan, render, verify. No output is written here."""

from __future__ import annotations

from dataclasses import dataclass, field

from .findings import Finding


@dataclass
class Rendered:
    """Outcome of rendering one intent: findings when it is invalid, otherwise the verified tree."""

    file: str
    findings: list[Finding] = field(default_factory=list)
    tree: object = None  # gpuconf.render.tree.Tree when the intent is valid

    @property
    def ok(self) -> bool:
        """True when the intent was valid and the tree rendered."""
        return self.tree is not None


def render_command(intent: str, out: str) -> str:
    """The command line written into every generated file's header."""
    return f"gpuconf render {intent} -o {out}"


def render_path(path: str, out: str) -> Rendered:
    """Validate path and, when it has no errors, render its tree (raises VerificationError on a gpuconf bug)."""
    from . import plan as P
    from .render.tree import render_tree
    from .validate import validate_path

    result = validate_path(path)
    if not result.ok:
        return Rendered(path, result.findings)
    built = P.build(result.intent, path, result.document)
    return Rendered(path, result.findings, render_tree(built, render_command(path, out)))

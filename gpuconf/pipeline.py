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
    from .intent.validate import validate_path

    result = validate_path(path)
    if not result.ok:
        return Rendered(path, result.findings)
    built = P.build(result.intent, path, result.document)
    return Rendered(path, result.findings, render_tree(built, render_command(path, out)))


@dataclass
class RenderedSet:
    """Outcome of rendering an intent or a fleet file: findings, and every tree to write (one per cluster, plus the
    fleet's own folder)."""

    file: str
    findings: list[Finding] = field(default_factory=list)
    trees: list = field(default_factory=list)  # gpuconf.render.tree.Tree
    fleet: object = None  # gpuconf.intent.fleet.FleetResult for a fleet file

    @property
    def ok(self) -> bool:
        """True when the input was valid and its trees rendered."""
        return bool(self.trees)


def render_any(path: str, out: str) -> RenderedSet:
    """Render an intent file or a fleet file (raises VerificationError on a gpuconf bug)."""
    from .intent.fleet import is_fleet
    from .render.fleet import render_fleet
    from .intent.loader import LoadError, load_file

    try:
        doc = load_file(path, path)
    except LoadError as exc:
        return RenderedSet(path, [exc.finding])
    if is_fleet(doc):
        fleet = render_fleet(doc, out)
        return RenderedSet(path, fleet.result.all_findings, fleet.trees, fleet.result)
    from . import plan as P
    from .render.tree import render_tree
    from .intent.validate import validate_document

    result = validate_document(doc)
    if not result.ok:
        return RenderedSet(path, result.findings)
    built = P.build(result.intent, path, result.document)
    return RenderedSet(path, result.findings, [render_tree(built, render_command(path, out))])

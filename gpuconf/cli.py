"""Command line: parses arguments, calls the core, prints results, picks the exit code. No logic of its own."""

from __future__ import annotations

import sys

import click

from . import __version__

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class _Group(click.Group):
    """Turns any unexpected exception into a short internal-error message instead of a traceback."""

    def invoke(self, ctx: click.Context):  # noqa: D102 - click API
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("gpuconf: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:  # a bug in gpuconf, never the user's input
            click.echo(f"gpuconf: internal error: {type(exc).__name__}: {exc}", err=True)
            click.echo("gpuconf: this is a bug in gpuconf, not in your input; please report it with the file", err=True)
            sys.exit(EXIT_INTERNAL)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpuconf")
def main() -> None:
    """Declarative, validated configuration for the NVIDIA GPU Operator.

    Exit codes: 0 ok, 1 findings (invalid intent), 2 usage error, 3 internal error.
    """


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format of the findings.")
@click.option("--summary", is_flag=True, help="After the findings, summarise each valid intent (pools, GPUs, resources).")
@click.option("--warnings-as-errors", is_flag=True, help="Exit 1 on warnings too.")
def validate(files: tuple[str, ...], fmt: str, summary: bool, warnings_as_errors: bool) -> None:
    """Check intent FILES and report every finding as FILE:LINE:COL."""
    from .findings import format_json, format_text
    from .validate import validate_path

    results = []
    for name in files:
        if name == "-":
            from .loader import LoadError, load_bytes
            from .validate import Validation, validate_document

            try:
                results.append(validate_document(load_bytes(sys.stdin.buffer.read(), "<stdin>")))
            except LoadError as exc:
                results.append(Validation("<stdin>", findings=[exc.finding]))
        else:
            results.append(validate_path(name))
    findings = [f for r in results for f in r.findings]
    if fmt == "json":
        click.echo(format_json(findings), nl=False)
    else:
        click.echo(format_text(findings), nl=False)
        for r in results:
            click.echo(_status_line(r), err=True)
        if summary:
            from .summary import summarise

            for r in results:
                if r.ok and r.intent is not None:
                    click.echo(summarise(r.intent, r.file), nl=False)
    failed = any(not r.ok for r in results) or (warnings_as_errors and bool(findings))
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


def _status_line(result) -> str:
    errors = sum(1 for f in result.findings if f.severity == "error")
    warnings = len(result.findings) - errors
    counts = ", ".join(part for part in (_plural(errors, "error"), _plural(warnings, "warning")) if part)
    return f"{result.file}: {'valid' if result.ok else 'invalid'}" + (f" ({counts})" if counts else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}" if n else ""


@main.command()
@click.argument("intent", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(file_okay=False),
              help="Output folder; the cluster's files go to OUTPUT/<metadata.name>/.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 with a diff when OUTPUT is stale.")
def render(intent: str, out: str, check: bool) -> None:
    """Render INTENT into OUTPUT/<name>/: values, manifests, kustomization. Atomic and byte-stable."""
    from .findings import format_text
    from .pipeline import render_path
    from .render.tree import VerificationError

    try:
        rendered = render_path(intent, out)
    except VerificationError as exc:
        click.echo(f"gpuconf: internal error: generated output failed verification ({len(exc.problems)} problems):",
                   err=True)
        for problem in exc.problems:
            click.echo(f"  {problem}", err=True)
        click.echo("gpuconf: this is a bug in gpuconf; nothing was written", err=True)
        sys.exit(EXIT_INTERNAL)
    click.echo(format_text(rendered.findings), nl=False)
    if not rendered.ok:
        click.echo(f"{intent}: invalid; nothing was written", err=True)
        sys.exit(EXIT_FINDINGS)
    tree = rendered.tree
    from pathlib import Path

    from .writer import read_tree, write_tree

    target = Path(out) / tree.name
    if check:
        from .summary import tree_diff

        stale = tree_diff(read_tree(target), tree.files, str(target))
        if stale:
            click.echo(stale, nl=False)
            sys.exit(EXIT_FINDINGS)
        click.echo(f"{target}: up to date ({len(tree.files)} files)", err=True)
        sys.exit(EXIT_OK)
    write_tree(out, tree.name, tree.files)
    from .summary import render_summary

    click.echo(render_summary(tree, str(target)), nl=False)


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
def schema(output: str | None) -> None:
    """Print the JSON Schema (Draft 2020-12) of the intent language."""
    from .schema import schema_text

    text = schema_text()
    if output:
        from .writer import write_text_atomic

        write_text_atomic(output, text)
    else:
        click.echo(text, nl=False)


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the starter intent here (refuses to overwrite).")
def init(output: str | None) -> None:
    """Print a commented starter intent to edit."""
    from .starter import STARTER

    if output:
        from pathlib import Path

        if Path(output).exists():
            raise click.UsageError(f"{output} exists; gpuconf init never overwrites a file")
        from .writer import write_text_atomic

        write_text_atomic(output, STARTER)
        click.echo(f"wrote {output}; edit it, then run: gpuconf validate {output}", err=True)
    else:
        click.echo(STARTER, nl=False)


@main.command()
@click.option("--gpu", "gpu_id", help="Show one model in full, with its MIG profiles and placements.")
def catalog(gpu_id: str | None) -> None:
    """List the GPU models and chart versions gpuconf knows."""
    from .summary import catalog_text

    text = catalog_text(gpu_id)
    if text is None:
        raise click.UsageError(f"unknown GPU model {gpu_id!r}; run `gpuconf catalog` for the list")
    click.echo(text, nl=False)


@main.command()
def rules() -> None:
    """List the stable finding codes and what each checks."""
    from .summary import rules_text

    click.echo(rules_text(), nl=False)

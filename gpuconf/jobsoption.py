"""`--jobs`, the option of the commands that go over a fleet's clusters one by one (render, render --check, diff):
how many processes share the clusters (gpuconf/parallel.py). The output is the same bytes whatever it says."""

from __future__ import annotations

import click

HELP = ("Processes that share a fleet's clusters: N, or auto (one per core this process may use, once the fleet is "
        "large enough to gain). The output is the same bytes with any N; 1 does it all in gpuconf's own process.")


def _set(ctx: click.Context, param: click.Parameter, value: str) -> None:
    from .parallel import parse_jobs, set_jobs

    try:
        set_jobs(parse_jobs(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


jobs_option = click.option("-j", "--jobs", default="auto", show_default=True, metavar="N|auto", expose_value=False,
                           callback=_set, help=HELP)

"""REPORT.md and the Markdown override report: the jinja2 environment of the templates compiled into the package
(gpuconf/output/compiled_templates), its filters and globals, and the two renders."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Iterable

from ...escape import md_code, md_comment, md_text, single_line
from .diagram import mermaid
from .text import show

#: The attributes of a plain dict; any other `x.name` in a template is a key (see _environment).
DICT_ATTRIBUTES = frozenset(dir(dict))

#: The compiled templates: Python modules that tools/compile_templates.py (`make templates`) generates from
#: gpuconf/output/report/*.md.j2 at build time and that are committed and shipped in the package. gpuconf never compiles a
#: template at run time and reads no cache: jinja2's bytecode cache would unpickle whatever a writable cache folder
#: holds (issue 29, item 5). The modules depend on jinja2's code generator, hence jinja2's pinned minor version.
COMPILED = Path(__file__).parent.parent / "compiled_templates"
TEMPLATES = ("acceptance.md.j2", "admission.md.j2", "capacity.md.j2", "diagram.md.j2", "dra.md.j2", "hazards.md.j2", "nvlink.md.j2",
             "overrides.md.j2", "platform.md.j2", "pools.md.j2", "queues.md.j2", "report.md.j2", "runbook.md.j2",
             "upgrade.md.j2")


def environment(loader: Any = None):
    """A jinja2 environment with gpuconf's settings, filters and globals around `loader` (default: the compiled
    templates of the package). tools/compile_templates.py compiles the sources with the same settings."""
    import jinja2

    class Environment(jinja2.Environment):
        def getattr(self, obj: Any, attribute: str) -> Any:
            """`p.name` on the report's plain dicts: the key, as jinja2 finds it, without first failing an attribute
            lookup (an exception per table cell); dict's own attributes (`labels.items`) still come first."""
            if type(obj) is dict and attribute not in DICT_ATTRIBUTES:
                return obj[attribute] if attribute in obj else self.undefined(obj=obj, name=attribute)
            return super().getattr(obj, attribute)

    env = Environment(
        loader=loader if loader is not None else jinja2.ModuleLoader(str(COMPILED)),
        autoescape=False,  # Markdown, not HTML: free text goes through md_text (the `cell` filter)
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["line"] = single_line
    env.filters["comment"] = md_comment
    env.filters["cell"] = md_text
    env.filters["code"] = md_code
    env.filters["codes"] = md_codes
    env.filters["codelist"] = md_code_list
    env.filters["labels"] = md_labels
    env.filters["allocatable"] = md_allocatable
    env.filters["show"] = show
    env.globals["mermaid"] = mermaid
    return env


@functools.cache
def _environment():
    """The environment of the compiled templates (jinja2 is imported here, never at start-up), once per process."""
    return environment()


# A table cell that lists several values puts each on a line of its own. The filters below build such cells in
# Python: a jinja2 loop per cell that tests loop.last costs as much as the rest of the row.


def md_codes(values: Iterable, attribute: str | None = None) -> str:
    """Values (or each one's `attribute`) as inline code, one per line of a table cell; "" without values."""
    return "<br>".join([md_code(v if attribute is None else v[attribute]) for v in values])


def md_code_list(values: Iterable) -> str:
    """Values as inline code, separated by commas (in a sentence)."""
    return ", ".join(md_code(v) for v in values)


def md_labels(labels: dict) -> str:
    """Node labels as inline `key=value` code, one per line of a table cell."""
    return "<br>".join([md_code(f"{key}={value}") for key, value in labels.items()])


def md_allocatable(resources: list[dict]) -> str:
    """What a pool's node advertises per resource, `perNode (total)`, one per line of a table cell."""
    return "<br>".join([f"{x['perNode']} ({x['total']})" for x in resources])


def report_markdown(report: dict) -> str:
    """REPORT.md."""
    return _environment().get_template("report.md.j2").render(r=report)


def overrides_markdown(report: dict) -> str:
    """The override report alone, as Markdown (for a pull-request comment)."""
    return _environment().get_template("overrides.md.j2").render(r=report)

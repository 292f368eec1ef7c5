"""The reporters of an ImpactPlan: text (worst first) and a Markdown table fit for a pull-request comment."""

from __future__ import annotations

from .model import ImpactPlan, _node_count


def impacts_text(plan: ImpactPlan, where: str) -> str:
    """The impacts as text, worst first."""
    lines = [f"Impact on {where}: {len(plan.impacts)} impact(s), worst: {plan.worst}"]
    for i in plan.impacts:
        count = _node_count(i.nodes) + (f", {i.pods} GPU pod(s)" if i.pods is not None else "")
        lines.append(f"  {i.severity.upper()} {i.kind}" + (f" [{', '.join(i.pools)}]" if i.pools else "") + count)
        lines.append(f"    {i.message}")
        lines.append(f"    safe: {i.safe}")
    return "\n".join(lines) + "\n\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def impacts_markdown(plan: ImpactPlan, where: str) -> str:
    """The impacts as a short Markdown table, fit for a pull-request comment."""
    icon = {"disruptive": "🔴", "pending": "🟠", "restart": "🟡", "none": "⚪"}
    lines = [f"## gpuconf impact plan: worst `{plan.worst}`", "",
             f"What syncing this change does to `{where}` ({len(plan.impacts)} impact(s)).", "",
             "| severity | kind | pools | nodes | what happens | how to do it safely |", "|---|---|---|---|---|---|"]
    for i in plan.impacts:
        nodes = "?" if i.nodes is None else str(i.nodes) + (f" ({i.pods} GPU pods)" if i.pods is not None else "")
        lines.append(f"| {icon[i.severity]} {i.severity} | `{i.kind}` | {_cell(', '.join(i.pools)) or '-'} | {nodes} "
                     f"| {_cell(i.message)} | {_cell(i.safe)} |")
    return "\n".join(lines) + "\n\n"

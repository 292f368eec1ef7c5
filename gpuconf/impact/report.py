"""The reporters of an ImpactPlan: text (worst first) and a Markdown table fit for a pull-request comment."""

from __future__ import annotations

from typing import Any

from ..escape import md_code, md_text, term_text
from .model import NAMES_SHOWN, ImpactPlan, _node_count


def _first(names: list[str], total: int | None) -> str:
    """The first few names, and how many more."""
    more = (total or len(names)) - NAMES_SHOWN
    return ", ".join(names[:NAMES_SHOWN]) + (f" (+{more} more)" if more > 0 else "")


def chart_lines(section: dict[str, Any] | None) -> list[str]:
    """A chart move's CRDs, NFD subchart, flipped defaults and removed keys, one fact a line (none without a move)."""
    if section is None:
        return []
    lines = [f"chart move {section['from']} -> {section['to']}:"]
    if section.get("note"):
        return lines + [section["note"]]
    matrix = section.get("componentMatrix")
    if matrix:
        lines.append(f"component matrix: the driver {matrix['driver']} "
                     + (f"enters the drivers chart {section['to']} is validated with" if matrix["enters"] else
                        f"leaves the drivers chart {section['to']} is validated with "
                        f"({', '.join(matrix['validated'])})"))
    crds = section["crds"]
    lines.append(f"CRDs that differ ({len(crds)}; Helm never upgrades a chart's crds/)" + (":" if crds else ": none"))
    for c in crds:
        what = {"new": "new kind", "dropped": "no longer shipped (Helm does not delete it: it stays)"}.get(
            c["status"], "changed")
        fields = "; ".join(part for part in (
            ("fields added: " + ", ".join(c["added"])) if c["added"] else "",
            ("fields removed: " + ", ".join(c["removed"])) if c["removed"] else "") if part)
        lines.append(f"  {c['kind']} ({c['group']}, {c['file']}): {what}" + (f"; {fields}" if fields else ""))
    if section.get("crdStep"):
        lines.append(f"CRD step: {section['crdStep']}")
    if section["nfd"]:
        lines.append(f"NFD subchart {section['nfd']['from']} -> {section['nfd']['to']}: its master and worker "
                     "restart with the new version; its own crds/ are not upgraded by Helm either")
    flips = section["flippedDefaults"]
    lines.append("defaults that flip" + (":" if flips else ": none"))
    lines += [f"  {f['path']}: {str(f['old']).lower()} -> {str(f['new']).lower()} ({f['effect']}: {f['detail']})"
              for f in flips]
    removed = section["removedKeys"]
    lines.append("values keys removed or renamed" + (":" if removed else ": none"))
    lines += [f"  {r['path']}" + (f" -> {r['renamedTo']}" if r["renamedTo"] else " (removed)")
              + (" (still read by the new chart's templates)" if r.get("stillRead") else "")
              + (f": values.yaml sets it{'' if r.get('stillRead') else ', and the new chart ignores it'}"
                 + (f": {r['how']}" if r.get("how") else "") if r["setByValues"] else "") for r in removed]
    return lines


def impacts_text(plan: ImpactPlan, where: str) -> str:
    """The impacts as text, worst first."""
    lines = [f"Impact on {term_text(where)}: {len(plan.impacts)} impact(s), worst: {plan.worst}"]
    for i in plan.impacts:
        count = _node_count(i.nodes) + (f", {i.pods} GPU pod(s)" if i.pods is not None else "")
        lines.append(f"  {i.severity.upper()} {i.kind}" + (f" [{', '.join(i.pools)}]" if i.pools else "") + count)
        lines.append(f"    {term_text(i.message)}")
        lines.append(f"    safe: {term_text(i.safe)}")
        for what, names, total in (("nodes", i.node_names, i.nodes), ("pods", i.pod_names, i.pods)):
            if names:
                lines.append(f"    {what}: {term_text(_first(names, total))}")
    lines += [f"  note: {note}" for note in plan.notes]
    lines += [f"  {line}" for line in chart_lines(plan.chart)]
    return "\n".join(lines) + "\n\n"


def impacts_markdown(plan: ImpactPlan, where: str) -> str:
    """The impacts as a short Markdown table, fit for a pull-request comment."""
    icon = {"disruptive": "🔴", "pending": "🟠", "restart": "🟡", "none": "⚪"}
    lines = [f"## gpuconf impact plan: worst `{plan.worst}`", "",
             f"What syncing this change does to {md_code(where, table=False)} ({len(plan.impacts)} impact(s)).", "",
             "| severity | kind | pools | nodes | what happens | how to do it safely |", "|---|---|---|---|---|---|"]
    for i in plan.impacts:
        nodes = "?" if i.nodes is None else str(i.nodes) + (f" ({i.pods} GPU pods)" if i.pods is not None else "")
        if i.node_names:
            nodes += f": {md_text(_first(i.node_names, i.nodes))}"
        if i.pod_names:
            nodes += f"; pods {md_text(_first(i.pod_names, i.pods))}"
        lines.append(f"| {icon[i.severity]} {i.severity} | `{i.kind}` | {md_text(', '.join(i.pools)) or '-'} | {nodes} "
                     f"| {md_text(i.message)} | {md_text(i.safe)} |")
    if plan.notes:
        lines += [""] + [f"**Order:** {md_text(note)}" for note in plan.notes]
    chart = chart_lines(plan.chart)
    if chart:
        lines += ["", f"### {chart[0].rstrip(':').capitalize()}", ""]
        lines += [("  - " if line.startswith("  ") else "- ") + line.strip() for line in chart[1:]]
    return "\n".join(lines) + "\n\n"

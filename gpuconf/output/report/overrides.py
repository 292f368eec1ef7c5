"""The override report (overrides.md.j2): every values leaf that deviates from the chart's defaults, with its reason,
origin and the chart's quirks behind it, the chart defaults to know, and the override rules' findings."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

from ... import catalog
from ... import plan as P
from ...findings import Finding, dotted
from ...render.values import lookup
from .text import compact, plural, show, version_key

NFD = "node-feature-discovery"
#: The codes of the rules about overrides; their findings are part of the report (validation shows them too).
OVERRIDE_CODES = ("GC319", "GC326", "GC341", "GC342", "GC343")


@dataclass(frozen=True)
class Deviation:
    """One leaf of the rendered values that differs from the chart's base default, with its reason and origin."""

    path: tuple[str, ...]
    base: Any
    base_present: bool
    value: Any
    reason: str
    origin: tuple
    line: int
    source: str  # "override" (spec.overrides) or "derived" (gpuconf computed it from the intent)
    file: str  # the intent file the origin is in (a fleet's cluster is merged from several)
    set_at: tuple[str, ...]  # the values path that was set (a map or a list covers several leaves)
    notes: tuple[str, ...]

    def as_dict(self) -> dict:
        """The JSON form, as report.json and `gpuconf diff --format json` carry it."""
        return {
            "path": values_path(self.path),
            "base": self.base,
            "basePresent": self.base_present,
            "value": self.value,
            "reason": self.reason,
            "origin": dotted(self.origin),
            "location": f"{self.file}:{self.line}",
            "line": self.line,
            "source": self.source,
            "setAt": values_path(self.set_at),
            "notes": list(self.notes),
        }


def values_path(parts: tuple[str, ...]) -> str:
    """A dotted values path; a key that itself contains a dot is quoted (operator.nodeSelector."kubernetes.io/os")."""
    return ".".join(json.dumps(p) if "." in p else p for p in parts)


def leaves(value: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of every leaf: a scalar, a list or an empty map (Helm replaces these whole)."""
    if isinstance(value, dict) and value:
        for key in sorted(value):
            yield from leaves(value[key], (*prefix, key))
    else:
        yield prefix, value


def deviations(plan: P.Plan, values) -> list[Deviation]:
    """Every leaf the rendered values change relative to the chart's base defaults, in path order."""
    defaults = plan.chart.shared_defaults
    out = []
    for change in values.deviations():
        source = "override" if change.origin[:2] == ("spec", "overrides") else "derived"
        for path, value in leaves(change.value, change.path):
            present, base = lookup(defaults, path)
            if present and base == value:
                continue  # inside a map the chart already has this leaf: Helm's merge keeps it as it is
            out.append(Deviation(path, base, present, value, change.why, change.origin, plan.line(change.origin),
                                 source, intent_file(plan, change.origin), change.path,
                                 tuple(quirks(plan.chart, path, present, base, value, source))))
    return sorted(out, key=lambda d: d.path)


def intent_file(plan: P.Plan, origin: tuple) -> str:
    """The file an intent path comes from: the intent itself, or the fleet file that set it."""
    source = getattr(plan.document, "source", None)
    return source(origin) if callable(source) else plan.source


def _under(path: str, key: str) -> bool:
    return path == key or path.startswith(key + ".")


def _keys_above(path: str) -> set[str]:
    """Every key that path is _under: the path itself and each part of it that ends before a dot."""
    out = {path}
    dot = path.find(".")
    while dot != -1:
        out.add(path[:dot])
        dot = path.find(".", dot + 1)
    return out


def quirks(facts: catalog.ChartFacts, parts: tuple[str, ...], present: bool, base: Any, value: Any,
           source: str) -> list[str]:
    """The chart's known quirks that a reviewer of this values leaf should know (gpu-operator-facts §4, §10)."""
    path = ".".join(parts)
    above = _keys_above(path)  # a report checks every leaf against every key list: set lookups, not prefix scans
    notes = []
    for key in facts.template_only_keys:
        if key in above:
            notes.append(f"`{key}` is read by the chart's templates although its values.yaml lacks it: a real key, "
                         "not a typo")
            break
    notes += [f"no template of chart {facts.version} reads `{key}`: this value has no effect"
              for key in facts.dead_keys if key in above]
    for key in sorted(above.intersection(facts.renamed_keys)):
        field, rest = facts.renamed_keys[key], path[len(key):]
        notes.append(f"the chart renders `{key}` into the ClusterPolicy as `spec.{field}`: look for "
                     f"`spec.{field}{rest}` in `kubectl get clusterpolicy -o yaml`")
    if source == "override":
        notes += [f"`{key}` is copied verbatim (toYaml) into the ClusterPolicy: its keys must be ClusterPolicy "
                  "field names" for key in facts.verbatim_blocks if key in above]
    if present and isinstance(base, list) and base and isinstance(value, list):
        kept = [item for item in base if item in value]
        if len(kept) == len(base):
            notes.append(f"Helm replaces lists instead of merging them: this list is the whole value and repeats "
                         f"the chart's {plural(len(base), 'default entry', 'default entries')}")
        else:
            lost = [item for item in base if item not in value]
            notes.append("Helm replaces lists instead of merging them: the chart's default "
                         f"{'entry' if len(lost) == 1 else 'entries'} {compact(lost)} "
                         f"{'is' if len(lost) == 1 else 'are'} dropped")
    if parts[0] == NFD and NFD in facts.free_form_map_paths and not present:
        notes.append(f"gpuconf has no defaults of the NFD subchart {facts.nfd_chart_version} of chart "
                     f"{facts.version}, so this base value is unknown rather than absent")
    return notes


def chart_notes(plan: P.Plan) -> list[str]:
    """Defaults of the pinned chart that change the cluster although the intent never mentions them."""
    return chart_notes_for(plan.intent, plan.chart)


def chart_notes_for(intent, facts: catalog.ChartFacts) -> list[str]:
    """chart_notes for an intent on any chart version."""
    notes = []
    defaults = facts.shared_defaults
    spec = intent.spec
    overridden = any(_under(o.path, "dcgmExporter.serviceMonitor") or o.path in ("dcgmExporter", "dcgmExporter.enabled")
                     for o in spec.overrides)
    if (lookup(defaults, ("dcgmExporter", "serviceMonitor", "enabled")) == (True, True)
            and lookup(defaults, ("dcgmExporter", "enabled")) == (True, True)
            and spec.monitoring is None and not overridden):
        before = [v for v in catalog.chart_versions() if version_key(v) < version_key(facts.version)
                  and lookup(catalog.chart(v).shared_defaults, ("dcgmExporter", "serviceMonitor", "enabled")) == (True, False)]
        since = f"; it was false up to {before[-1]}" if before else ""
        notes.append(f"Chart {facts.version} creates a ServiceMonitor for the DCGM exporter by default "
                     f"(`dcgmExporter.serviceMonitor.enabled: true`{since}). It needs the Prometheus Operator's "
                     "monitoring.coreos.com CRDs in the cluster. This intent has no `monitoring` section: install "
                     "those CRDs, or add `monitoring: {serviceMonitor: false}` to the intent.")
    return notes


def override_findings(plan: P.Plan) -> list[Finding]:
    """The findings of the override rules (reasons, defaults, derived values) for the plan's intent."""
    if plan.document is None:
        return []
    from ...findings import sort_findings
    from ...intent.rules import RULES, Context

    ctx = Context(plan.intent, plan.document)
    return sort_findings(f for r in RULES if r.code in OVERRIDE_CODES for f in r.check(ctx))


def override_section(report: dict) -> dict:
    """The part of the report that `gpuconf diff INTENT` prints."""
    keys = ("apiVersion", "kind", "generated", "cluster", "overrides", "chartNotes", "findings")
    return {k: report[k] for k in keys}


def report_text(report: dict) -> str:
    """The override report as plain text, one block per values leaf."""
    c = report["cluster"]
    rows = report["overrides"]
    lines = [f"{c['name']} ({report['generated']['from']}): "
             f"{plural(len(rows), 'value differs', 'values differ')} from the defaults of GPU Operator chart "
             f"{c['chartVersion']}"]
    for row in rows:
        base = show(row["base"]) if row["basePresent"] else "(not in the chart's values.yaml)"
        lines += [f"{row['path']}", f"  default:  {base}", f"  rendered: {show(row['value'])}",
                  f"  why:      {row['reason']}", f"  from:     {row['origin']} ({row['location']}, {row['source']})"]
        lines += [f"  note:     {note}" for note in row["notes"]]
    for note in report["chartNotes"]:
        lines.append(f"chart note: {note}")
    for f in report["findings"]:
        lines.append(Finding(**f).text())
    return "\n".join(lines) + "\n"


"""`gpuconf hazards`: the known-hazards table, or how an intent stands against it, as text, JSON or Markdown."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import catalog
from .. import hazards as H

FEATURE_WORDS = {
    "mig": "MIG", "migNextToWhole": "MIG slices next to whole GPUs of the same model (mixed strategy)",
    "preinstalled": "a preinstalled driver", "managed": "an operator-managed driver",
    "dra": "the GPUCluster (DRA) stack",
    "gds": "GPUDirect Storage", "rdma": "GPUDirect RDMA", "precompiled": "precompiled driver containers",
    "nri": "the NRI plugin", "cdi": "CDI", "crio": "CRI-O", "allBalanced": "the all-balanced MIG layout",
}
CONDITION_WORDS = {
    "gpus": "GPU", "drivers": "driver", "charts": "chart", "migManager": "MIG Manager", "toolkit": "Container Toolkit",
    "distributions": "distribution", "kubernetes": "Kubernetes", "features": "with", "kernelModules": "kernel modules",
    "os": "OS", "kernels": "kernel", "arch": "architecture", "containerd": "containerd",
}
RANGE_WORDS = {"in": "", "from": "from ", "below": "below ", "upTo": "up to ", "before": "before "}
STATUSES = ("applies", "avoided", "undecided", "listed")
#: A condition the intent chose, as the report names it ("avoided by the intent's driver version").
CHOICE_WORDS = {"drivers": "driver version", "charts": "chart version", "kernelModules": "kernel modules",
                "toolkit": "Container Toolkit version (its chart's)", "migManager": "MIG Manager version (its chart's)",
                "distributions": "distribution", "kubernetes": "Kubernetes version"}


def describe(applies: dict[str, Any]) -> list[str]:
    """The entry's conditions in words: 'driver: below 575.57.08', 'with: MIG'."""
    out = []
    for name, cond in sorted(applies.items()):
        if name == "features":
            text = ", ".join(FEATURE_WORDS[f] for f in cond)
        elif name == "kernelModules":
            text = "not the open ones"
        elif isinstance(cond, list):
            text = ", ".join(cond)
        elif "outside" in cond:
            text = f"outside {cond['outside'][0]} to {cond['outside'][1]}"
        elif "notIn" in cond:
            text = "none of " + ", ".join(cond["notIn"])
        else:
            text = ", ".join(RANGE_WORDS[k] + (", ".join(v) if isinstance(v, list) else v) for k, v in cond.items())
        out.append(f"{CONDITION_WORDS[name]}: {text}")
    return out or ["any cluster (gpuconf cannot tell: it concerns what it neither renders nor reads)"]


def entry_dict(hazard: H.Hazard) -> dict[str, Any]:
    """The JSON form of one entry."""
    return {"id": hazard.id, "code": hazard.code, "severity": hazard.severity, "appliesTo": dict(hazard.applies),
            "breaks": hazard.breaks, "fix": hazard.fix, "seenBy": list(hazard.seen_by),
            "sources": [dict(s) for s in hazard.sources], "source": hazard.cite()}


@dataclass
class Standing:
    """How one entry stands against an intent: applies (to these pools), avoided (by a choice), or undecided (on
    what the intent does not say)."""

    hazard: H.Hazard
    status: str
    pools: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)  # the avoided choice, or what is not known

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"id": self.hazard.id, "status": self.status, "pools": self.pools, "conditions": self.conditions}


def standings(intent, values: dict | None = None) -> list[Standing]:
    """Every entry that concerns the intent, with its status (entries with no condition at all are left out);
    values are the chart values its render gives, when the caller has them."""
    facts = H.intent_facts(intent, values if values is not None else H.values_of(intent))
    out = []
    for hazard in H.hazards():
        if not hazard.applies:
            continue
        if hazard.pool_level:
            judged = [(p.name, H.judge(hazard, f.facts)) for p, f in zip(intent.spec.pools, facts.pools)]
        else:
            judged = [("", H.judge(hazard, facts.cluster))]
        # An entry no check sees (what gpuconf neither renders nor reads) is only listed, when all of it holds.
        tests = ((("applies", lambda v: v.applies), ("avoided", lambda v: v.avoided),
                  ("undecided", lambda v: not v.failed and v.unknown)) if hazard.seen_by else
                 (("listed", lambda v: v.applies),))
        for status, test in tests:
            hits = [(name, v) for name, v in judged if test(v)]
            if hits:
                conditions = sorted({c for _, v in hits for c in (v.failed if status == "avoided" else v.unknown)})
                out.append(Standing(hazard, status, sorted({n for n, _ in hits if n}), conditions))
                break
    return out


def table_json() -> str:
    """The whole table as JSON."""
    table = H.table()
    data = {"hazards": [entry_dict(h) for h in H.hazards()], "chartRules": table["chartRules"],
            "validatedDrivers": table["validatedDrivers"], "codes": table["codes"],
            "componentMatrix": {version: dict(matrix) for version, matrix in matrix_rows()}}
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def intent_json(name: str, found: list[Standing]) -> str:
    """An intent's standings as JSON, each with its entry."""
    data = {"cluster": name, "hazards": [{**entry_dict(s.hazard), **s.as_dict()} for s in found]}
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def table_text() -> str:
    """The whole table as text: one block per entry."""
    out = []
    for h in H.hazards():
        out.append(f"{h.id} ({h.code}, {h.severity})\n  applies to: {'; '.join(describe(dict(h.applies)))}\n"
                   f"  breaks: {h.breaks}\n  fix: {h.fix}\n"
                   f"  checked by: {', '.join(h.seen_by) or 'nothing (listed only)'}"
                   f"\n  source: {h.cite()}\n")
    out.append("component matrix (the drivers each release is validated with; GC389 warns outside them):\n" + "".join(
        f"  {version}: {', '.join(matrix['drivers'])}\n" for version, matrix in matrix_rows()))
    return "\n".join(out)


def _standing_line(s: Standing) -> str:
    if s.status == "applies":
        where = f"pools {', '.join(s.pools)}" if s.pools else "the cluster"
        return f"applies to {where}"
    if s.status == "listed":
        where = f"pools {', '.join(s.pools)}" if s.pools else "the cluster"
        return f"may concern {where}: no check sees it (gpuconf neither renders nor reads what it is about)"
    if s.status == "avoided":
        words = ", ".join(CHOICE_WORDS[c] for c in s.conditions)
        return f"avoided by the intent's {words}" + (f" (pools {', '.join(s.pools)})" if s.pools else "")
    words = ", ".join(CONDITION_WORDS[c] for c in s.conditions)
    return f"undecided: depends on the {words}, which the intent does not say" + (
        " (audit checks it on the nodes)" if "audit" in s.hazard.seen_by else "")


def intent_text(name: str, found: list[Standing]) -> str:
    """An intent's standings as text."""
    if not found:
        return f"{name}: no known hazard concerns this intent\n"
    out = [f"{name}: {sum(s.status == 'applies' for s in found)} known hazard(s) apply, "
           f"{sum(s.status == 'avoided' for s in found)} avoided, {sum(s.status == 'undecided' for s in found)} "
           f"undecided, {sum(s.status == 'listed' for s in found)} listed\n"]
    for status in STATUSES:
        for s in (s for s in found if s.status == status):
            h = s.hazard
            out.append(f"\n{h.id} ({h.code}, {h.severity}): {_standing_line(s)}\n  breaks: {h.breaks}\n"
                       f"  fix: {h.fix}\n  source: {h.cite()}\n")
    return "".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table_markdown(level: int = 1) -> str:
    """The whole table as Markdown (the docs page's body)."""
    head = "#" * level
    out = [f"{head} Known hazards\n\n",
           "Driver, chart, GPU, OS and kernel combinations NVIDIA documents as broken or unsupported, each with the "
           "lines of the GPU Operator's release notes or platform support page (NVIDIA/cloud-native-docs) it comes "
           "from. `gpuconf validate` and `render` report the ones an intent enters (the codes below), `gpuconf audit` "
           "the ones the nodes enter (GA131-GA133), the impact plan a change that enters or leaves one, and REPORT.md "
           "lists them. `gpuconf hazards` prints this table; `gpuconf hazards INTENT` what concerns one intent.\n\n",
           "An entry applies when every one of its conditions holds. A known issue of a chart version runs from the "
           "release whose notes list it to the last release before the next one whose own Known Issues section "
           "omits it.\n\n",
           f"{head}# Codes\n\n| code | class |\n|---|---|\n"]
    out += [f"| {code} | {_cell(title)} |\n" for code, title in sorted(H.codes().items())]
    out.append(f"\n{head}# Entries\n\n| id | code | severity | applies to | checked by |\n|---|---|---|---|---|\n")
    out += [f"| [{h.id}](#{h.id}) | {h.code} | {h.severity} | {_cell('; '.join(describe(dict(h.applies))))} | "
            f"{', '.join(h.seen_by) or 'listed only'} |\n" for h in H.hazards()]
    out.append("\n")
    for h in H.hazards():
        out.append(f"{head}## {h.id}\n\n- **Code:** {h.code} ({h.severity})\n"
                   f"- **Applies to:** {'; '.join(describe(dict(h.applies)))}\n- **Breaks:** {h.breaks}\n"
                   f"- **Fix:** {h.fix}\n- **Checked by:** {', '.join(h.seen_by) or 'nothing (listed only)'}\n"
                   f"- **Source:** {h.cite()}; the cited lines say "
                   + "; ".join(f"`{src['page']}:{src['line']}`: " + ", ".join(f"“{w}”" for w in src["words"])
                               for src in h.sources) + "\n\n")
    table = H.table()
    out.append(f"{head}# The chart's own fail rules\n\nValues Helm refuses to render (templates/validations.yaml of "
               "the published chart); GC468 reports a render whose values would trip one.\n\n"
               "| rule | charts | trips when | what it says |\n|---|---|---|---|\n")
    for rule in table["chartRules"]:
        when = ", ".join(f"`{c['path']}` is {json.dumps(c['is'])}" for c in rule["when"])
        if rule.get("capability"):
            when += f", and the cluster serves no {rule['capability']} API"
        lines = ", ".join(f"{v}:{n}" for v, n in rule["source"]["lines"].items())
        out.append(f"| {rule['id']} | {lines} | {_cell(when)} | {_cell(rule['breaks'])} |\n")
    out.append(f"\n{head}# Driver versions the release notes name per chart\n\nThe versions the notes of each "
               "chart's line name.\n\n| chart | versions | source |\n|---|---|---|\n")
    for chart, item in sorted(table["validatedDrivers"].items()):
        out.append(f"| {chart} | {', '.join(item['versions'])} | {_cell(H.cite(item['sources']))} |\n")
    out.append(f"\n{head}# Component matrix: the drivers each release is validated with\n\nNVIDIA's component matrix "
               "(life-cycle-policy.rst of NVIDIA/cloud-native-docs, as the branch carrying each release's column "
               "lists it now; D default, R recommended). A driver outside the pinned release's list is GC389 (a "
               "warning), and the impact plan of a chart move says when the driver enters or leaves it.\n\n"
               "| release | validated drivers | source |\n|---|---|---|\n")
    for version, matrix in matrix_rows():
        marked = [d + (" (D)" if d in matrix.get("default", ()) else "") + (" (R)" if d in matrix.get("recommended", ())
                                                                           else "") for d in matrix["drivers"]]
        out.append(f"| {version} | {', '.join(marked)} | {_cell(matrix['source'])} |\n")
    return "".join(out)


def matrix_rows() -> list[tuple[str, Mapping[str, Any]]]:
    """(release, its component matrix) of every release gpuconf knows that has one."""
    rows = []
    for version in catalog.chart_versions():
        facts = catalog.chart(version)
        if facts is not None and facts.component_matrix.get("drivers"):
            rows.append((version, facts.component_matrix))
    return rows


def intent_markdown(name: str, found: list[Standing]) -> str:
    """An intent's standings as Markdown."""
    out = [f"# Known hazards of {name}\n\n"]
    if not found:
        return out[0] + "No known hazard concerns this intent.\n"
    out.append("| hazard | severity | status | breaks | fix | source |\n|---|---|---|---|---|---|\n")
    for status in STATUSES:
        for s in (s for s in found if s.status == status):
            h = s.hazard
            out.append(f"| {h.id} ({h.code}) | {h.severity} | {_cell(_standing_line(s))} | {_cell(h.breaks)} | "
                       f"{_cell(h.fix)} | {_cell(h.cite())} |\n")
    return "".join(out)


def report_facts(intent, values: dict | None = None) -> dict[str, list[dict[str, Any]]]:
    """REPORT.md's and report.json's "Known hazards": the entries the intent runs into, those it avoids by a choice
    (and which), and those that depend on what it does not say, each with its fix and source."""
    out: dict[str, list[dict[str, Any]]] = {status: [] for status in STATUSES}
    for s in standings(intent, values):
        h = s.hazard
        out[s.status].append({"id": h.id, "code": h.code, "severity": h.severity, "pools": s.pools,
                              "conditions": s.conditions, "where": _standing_line(s), "breaks": h.breaks,
                              "fix": h.fix, "source": h.cite()})
    return out

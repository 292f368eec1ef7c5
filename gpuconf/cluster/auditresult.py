"""The audit's result and its reporters: the GA1xx codes with their titles, the --max-unavailable threshold, one
finding (Drift), one pool's figures (PoolReport), the whole result, and its text and JSON forms.

The auditor (cluster/audit.py) fills these; the command line and the summary page read them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import nodefacts as N

ERROR, WARNING, INFO = "error", "warning", "info"

#: Stable codes of the audit (listed by `gpuconf rules`).
TITLES = {
    "GA101": "a GPU node (NFD PCI label, nvidia.com/gpu.present or a GFD product) matches no pool",
    "GA102": "a node matches several pools",
    "GA103": "a pool node lacks a label the render sets (pool, device-plugin config, MIG config, driver deploy)",
    "GA104": "a pool node carries another value of a label the render sets",
    "GA105": "a pool node lacks a taint of its pool (or has its key with another value or effect)",
    "GA106": "the GPU model on a node (GFD product label) is not its pool's (warning: the product is unknown)",
    "GA107": "allocatable of a pool resource absent, zero or below what its sharing promises, per resource name, on "
             "a Ready node (warning: above, or while MIG or a driver upgrade reconfigures the node)",
    "GA108": "the node's driver (GFD driver labels) is not the pool's pinned version (warning: upgrade pending)",
    "GA109": "(warning) driver versions differ inside a pool that pins none (preinstalled drivers)",
    "GA110": "MIG reconfiguration failed (warning: pending or rebooting, which the labels cannot tell from stuck)",
    "GA111": "the GFD mig.strategy label disagrees with the cluster's MIG strategy",
    "GA112": "GFD's sharing labels (replicas, sharing-strategy) disagree with the pool's sharing profile",
    "GA113": "(info) a pool node is NotReady: reported, not drift (see GA122)",
    "GA114": "(info) a pool node is cordoned: reported, not drift (see GA122)",
    "GA115": "a pool has fewer matching nodes than it declares (warning: more)",
    "GA116": "the operator's driver upgrade failed on the node (nvidia.com/gpu-driver-upgrade-state=upgrade-failed)",
    "GA117": "the operator has not labelled a pool node (nvidia.com/gpu.present, operand deploy labels missing)",
    "GA118": "an operand is switched off on a pool node (nvidia.com/gpu.deploy.<operand>=false, the driver's "
             "pre-installed on a managed pool, gpu.deploy.operands=false; warning: monitoring operands)",
    "GA119": "operands left paused (paused-for-mig-change, paused-for-driver-upgrade) with no reconfiguration "
             "under way (warning: monitoring operands only)",
    "GA120": "a pool node carries a NoExecute taint its pool does not declare (warning: NoSchedule)",
    "GA121": "GFD's nvidia.com/gpu.count is not what the pool expects (warning: more, or while MIG is reconfigured)",
    "GA122": "more of a pool's nodes are NotReady or cordoned than --max-unavailable allows",
    "GA123": "(warning) the first sync is pending: no node of a pool carries the labels the render sets yet",
    "GA131": "a pool node runs into a known hazard through the driver or GPU it reports (gpuconf hazards)",
    "GA132": "a pool node runs into a known hazard through its OS image, kernel, architecture or Kubernetes version",
    "GA133": "a pool node runs into a known hazard through its container runtime's version",
    "GA130": "(DRA) the driver publishes fewer devices of a pool's DeviceClass on a Ready pool node than the pool "
             "promises, or none (no ResourceSlice); warning: more",
    "GA160": "(NVLink) a tray of an NVLink pool carries no NVLink clique label (nvidia.com/gpu.clique): it is in no "
             "NVLink domain (warning: no rack label where the pool names one)",
    "GA161": "(NVLink) a tray publishes no ResourceSlice of compute-domain.nvidia.com, or one without a channel "
             "device (with the ResourceSlices)",
    "GA162": "(NVLink) a clique split: a rack's trays report several NVLink cliques, a pool more cliques than it "
             "fills racks, or a clique holds more trays than a rack",
    "GA163": "(warning, NVLink) a clique holds fewer trays than a rack, in a pool of whole racks: a partial domain",
    "GA164": "(NVLink) an IMEX daemon pod of a ComputeDomain on a tray is not ready (with the pods)",
    "GA165": "(NVLink) the ComputeDomain kubelet plugin's pod is missing or not ready on a tray (with the pods; "
             "info: the pods read hold none of the DRA driver's)",
}
#: The diagnosis's codes (cluster/diagnose.py): the causes, read off the operator's pods, their logs and events.
from .diagnose import TITLES as _CAUSE_TITLES, WAITING  # noqa: E402

TITLES.update(_CAUSE_TITLES)
#: The codes the text and Markdown reports lead with: one line per cause, with the nodes it hits.
CAUSE_CODES = tuple(sorted(_CAUSE_TITLES)) 

MULTI = "(several pools)"
NONE = "(no pool)"


@dataclass(frozen=True)
class Threshold:
    """--max-unavailable: how many of a pool's declared nodes may be NotReady or cordoned before it is drift."""

    value: int
    percent: bool

    #: The default: the share of nodes the chart's driver upgrade takes out at once by default
    #: (driver.upgradePolicy.maxUnavailable: 25%), so an upgrade wave alone never fails the audit.
    DEFAULT = "25%"

    @classmethod
    def parse(cls, text: str) -> "Threshold":
        """A node count ("2") or a percentage of the pool's declared nodes ("25%", 0-100)."""
        m = re.fullmatch(r"(\d{1,9})(%?)", text.strip())
        if m is None or (m.group(2) and int(m.group(1)) > 100):
            raise ValueError(f"{text!r} is not a node count or a percentage from 0% to 100%")
        return cls(int(m.group(1)), bool(m.group(2)))

    def exceeded(self, unavailable: int, declared: int) -> bool:
        """More unavailable nodes than the threshold allows (a percentage is compared exactly, not rounded)."""
        return unavailable * 100 > self.value * declared if self.percent else unavailable > self.value

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


@dataclass(frozen=True)
class Drift:
    """One audit finding: code, severity, the node and pool it concerns, and the evidence read off the node."""

    severity: str
    code: str
    node: str  # "" for a pool-level finding
    pool: str  # the pool's name, NONE or MULTI
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    hint: str | None = None

    def as_dict(self) -> dict:
        """The JSON object documented in docs/how-to/audit.md."""
        return {"severity": self.severity, "code": self.code, "node": self.node, "pool": self.pool,
                "message": self.message, "evidence": dict(self.evidence), "hint": self.hint}


@dataclass
class PoolReport:
    """What the audit saw of one pool."""

    name: str
    gpu: str
    gpus_per_node: int
    sharing: str
    declared: int
    expected: Mapping[str, int]  # resource -> units the declared nodes should advertise
    matched: int = 0
    healthy: int = 0
    drifting: int = 0
    unavailable: int = 0
    advertised: Counter = field(default_factory=Counter)  # resource -> units on Ready, schedulable nodes

    def as_dict(self) -> dict:
        """JSON form."""
        return {"name": self.name, "gpu": self.gpu, "gpusPerNode": self.gpus_per_node, "sharing": self.sharing,
                "declared": self.declared, "matched": self.matched, "healthy": self.healthy,
                "drifting": self.drifting, "unavailable": self.unavailable,
                "expected": dict(sorted(self.expected.items())),
                "advertised": {r: self.advertised.get(r, 0) for r in sorted(self.expected)}}


@dataclass
class AuditResult:
    """Everything the audit found, ready for a reporter."""

    cluster: str
    intent: str
    source: str
    nodes_seen: int = 0
    gpu_nodes: int = 0
    healthy: int = 0
    drifting: int = 0
    unavailable: int = 0
    pools: list[PoolReport] = field(default_factory=list)
    findings: list[Drift] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity == ERROR for f in self.findings)

    def resources(self) -> dict[str, dict[str, int]]:
        """Per resource name: units the pools should advertise, and units Ready, schedulable pool nodes advertise.

        Only units of one name are added up: a 1g MIG slice is not a 3g slice, nor a time-sliced replica a GPU.
        """
        out: dict[str, dict[str, int]] = {}
        for pool in self.pools:
            for resource, expected in pool.expected.items():
                entry = out.setdefault(resource, {"advertised": 0, "expected": 0})
                entry["expected"] += expected
                entry["advertised"] += pool.advertised.get(resource, 0)
        return dict(sorted(out.items()))

    def summary(self) -> dict:
        """The counts of the summary line."""
        return {"nodesSeen": self.nodes_seen, "gpuNodes": self.gpu_nodes, "healthy": self.healthy,
                "drifting": self.drifting, "unavailable": self.unavailable, "resources": self.resources(),
                "errors": sum(1 for f in self.findings if f.severity == ERROR),
                "warnings": sum(1 for f in self.findings if f.severity == WARNING)}


# --- reporters ---------------------------------------------------------------------------------------------------


def format_json(result: AuditResult) -> str:
    """The whole result as one JSON object (stable key order)."""
    import json

    doc = {"cluster": result.cluster, "intent": result.intent, "nodes": result.source, "ok": result.ok,
           "summary": result.summary(), "pools": [p.as_dict() for p in result.pools],
           "causes": causes(result), "findings": [f.as_dict() for f in result.findings]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def summary_line(result: AuditResult) -> str:
    """nodes seen, GPU nodes, healthy, drifting; per resource name the units advertised of those expected."""
    s = result.summary()
    units = ", ".join(f"{r} {e['advertised']}/{e['expected']}" for r, e in s["resources"].items()) or "none"
    return (f"summary: {s['nodesSeen']} nodes seen, {s['gpuNodes']} GPU nodes, {s['healthy']} healthy, "
            f"{s['drifting']} drifting, {s['unavailable']} unavailable; advertised/expected: {units}; "
            f"{s['errors']} error{'s' if s['errors'] != 1 else ''}, "
            f"{s['warnings']} warning{'s' if s['warnings'] != 1 else ''}")


def causes(result: AuditResult) -> list[dict]:
    """The causes found, one entry per code and message (the nodes one cause hits the same way share a message),
    most nodes first; then the waiting work (GA150)."""
    grouped: dict[tuple[str, str], dict] = {}
    for f in result.findings:
        if f.code in CAUSE_CODES or f.code == WAITING:
            entry = grouped.setdefault((f.code, f.message), {"code": f.code, "message": f.message, "nodes": [],
                                                              "pools": [], "hint": f.hint})
            if f.node:
                entry["nodes"].append(f.node)
            if f.pool not in entry["pools"]:
                entry["pools"].append(f.pool)
    return sorted(grouped.values(), key=lambda e: (e["code"] == WAITING, -len(e["nodes"]), e["code"], e["message"]))


def cause_lines(result: AuditResult) -> list[str]:
    """One line per cause (`cause: CODE message: N nodes of pool P: a, b, c`), then the waiting work."""
    lines = []
    for entry in causes(result):
        nodes = entry["nodes"]
        where = ""
        if nodes:
            shown = ", ".join(nodes[:5]) + (f", ... ({len(nodes) - 5} more)" if len(nodes) > 5 else "")
            where = (f" ({len(nodes)} node{'s' if len(nodes) != 1 else ''} of pool"
                     f"{'s' if len(entry['pools']) > 1 else ''} {', '.join(entry['pools'])}: {shown})")
        label = "waiting" if entry["code"] == WAITING else "cause"
        lines.append(f"{label}: {entry['code']} {entry['message']}{where}")
    return lines


def format_text(result: AuditResult) -> str:
    """The causes first, one line each; then a table per pool: its health in one line, healthy nodes counted,
    problems in full; then the summary line."""
    lines = cause_lines(result) + [f"audit of {result.cluster} ({result.intent}) against {result.source}"]
    by_pool: dict[str, list[Drift]] = {}
    for f in result.findings:
        by_pool.setdefault(f.pool, []).append(f)
    for report in result.pools:
        units = ", ".join(f"{r} {report.advertised.get(r, 0)}/{n}" for r, n in sorted(report.expected.items()))
        lines.append(f"pool {report.name}: {report.gpu} x{report.gpus_per_node}, {report.sharing}; "
                     f"{report.matched}/{report.declared} nodes ({report.healthy} healthy, {report.drifting} "
                     f"drifting, {report.unavailable} unavailable); {units}")
        lines += _finding_rows(by_pool.get(report.name, []))
    for group, title in ((NONE, "GPU nodes in no pool"), (MULTI, "nodes in several pools")):
        if by_pool.get(group):
            lines.append(f"{title}:")
            lines += _finding_rows(by_pool[group])
    lines.append(summary_line(result))
    # Values read off the nodes (and the paths) may hold line breaks: each line is escaped into one line.
    return "\n".join(N.printable(line) for line in lines) + "\n"


def format_markdown(result: AuditResult) -> str:
    """The same as Markdown: the causes first, then per pool its figures and a table of findings."""
    from ..escape import md_code, md_text as cell

    out = [f"# Audit of {cell(result.cluster)}", ""]
    found = causes(result)
    if found:
        out += ["## Causes", ""]
        for entry in found:
            nodes = entry["nodes"]
            shown = ", ".join(md_code(n) for n in nodes[:10]) + (f" and {len(nodes) - 10} more"
                                                                    if len(nodes) > 10 else "")
            where = f" ({len(nodes)} node{'s' if len(nodes) != 1 else ''}: {shown})" if nodes else ""
            out.append(f"- **{entry['code']}** {cell(entry['message'])}{where}. Fix: {cell(entry['hint'] or '')}")
        out.append("")
    out += [f"Intent {md_code(result.intent)}, nodes from {md_code(result.source)}.", "", "## Pools", "",
            "| pool | GPU | nodes | healthy | drifting | unavailable | advertised / expected |",
            "|---|---|---|---|---|---|---|"]
    for r in result.pools:
        units = ", ".join(f"{md_code(r_)} {r.advertised.get(r_, 0)}/{n}" for r_, n in sorted(r.expected.items()))
        out.append(f"| {cell(r.name)} | {cell(r.gpu)} x{r.gpus_per_node} | {r.matched}/{r.declared} | {r.healthy} | "
                   f"{r.drifting} | {r.unavailable} | {units} |")
    if result.findings:
        out += ["", "## Findings", "", "| node | pool | severity | code | finding | hint |", "|---|---|---|---|---|---|"]
        for f in result.findings:
            out.append(f"| {cell(f.node or '(pool)')} | {cell(f.pool)} | {f.severity} | {f.code} | {cell(f.message)} | "
                       f"{cell(f.hint or '')} |")
    out += ["", summary_line(result)]
    return "\n".join(out) + "\n"


def _finding_rows(findings: list[Drift]) -> list[str]:
    if not findings:
        return []
    width = max(len(f.node or "(pool)") for f in findings)
    rows = []
    for f in findings:
        rows.append(f"  {(f.node or '(pool)').ljust(width)}  {f.severity:<7} {f.code}  {f.message}")
        pad = " " * (width + 4)
        if f.evidence:
            rows.append(f"{pad}evidence: {_evidence_text(f.evidence)}")
        if f.hint:
            rows.append(f"{pad}hint: {f.hint}")
    return rows


def _evidence_text(evidence: Mapping[str, Any]) -> str:
    import json

    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, sort_keys=True)}"
                     for k, v in evidence.items())

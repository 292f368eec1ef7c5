"""Audit: the intent's render plan against the live nodes. Where did the accelerators get lost?

One pass over the nodes (streamed: nothing but counters and findings is kept per node), then pool-level checks.
Every finding has a stable GA1xx code, the node, the pool and the evidence it was read from (label values,
allocatable, conditions).

How a node is placed in a pool mirrors how the render labels it:
  - a pool without nodeLabels is labelled by a NodeFeatureRule that always matches the pool's GPU PCI ids (plus the
    hostname regex and DMI product when given); the audit reads the GPU model from GFD's product label, and the DMI
    product from GFD's gpu.machine label. When GFD has not labelled the node yet, the pool label the rule itself
    set (gpuconf.dev/pool) stands in for the facts the audit cannot see;
  - a pool with nodeLabels is labelled by its node group's template: the node must carry those labels (and match
    the hostname/DMI criteria when given). The GPU model is not a selector there, so a wrong model is its own
    finding (GA106). Only when several node-label pools select a node does the model decide between them, as
    validation's GC303 assumes pools of different models are disjoint.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from . import nodefacts as N
from .. import plan as P

ERROR, WARNING, INFO = "error", "warning", "info"

#: Stable codes of the audit (listed by `gpuconf rules`).
TITLES = {
    "GA101": "a GPU node (NFD PCI label, nvidia.com/gpu.present or a GFD product) matches no pool",
    "GA102": "a node matches several pools",
    "GA103": "a pool node lacks a label the render sets (pool, device-plugin config, MIG config, driver deploy)",
    "GA104": "a pool node carries a wrong value of a label the render sets, or has its operands switched off",
    "GA105": "a pool node lacks a taint of its pool",
    "GA106": "the GPU model on a node (GFD product label) is not its pool's (warning: the product is unknown)",
    "GA107": "allocatable of the pool's resource absent, zero or below what its sharing promises, on a Ready node "
             "(warning: above, or while MIG or the driver is being reconfigured)",
    "GA108": "the node's driver (GFD driver labels) is not the pool's pinned version (warning: upgrade in progress)",
    "GA109": "(warning) driver versions differ inside a pool that pins none (preinstalled drivers)",
    "GA110": "MIG reconfiguration failed (warning: pending or rebooting, which the labels cannot tell from stuck)",
    "GA111": "the GFD mig.strategy label disagrees with the cluster's MIG strategy",
    "GA112": "GFD's sharing labels (replicas, sharing-strategy) disagree with the pool's sharing profile",
    "GA113": "(info) a pool node is NotReady: reported, not drift",
    "GA114": "(info) a pool node is cordoned: reported, not drift",
    "GA115": "a pool has fewer matching nodes than it declares (warning: more)",
}

MULTI = "(several pools)"
NONE = "(no pool)"


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
        """The JSON object documented in the README."""
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

    @property
    def expected_units(self) -> int:
        """GPU resource units the intent's pools should advertise in total."""
        return sum(sum(p.expected.values()) for p in self.pools)

    @property
    def advertised_units(self) -> int:
        """Units of the pools' resources advertised by Ready, schedulable pool nodes."""
        return sum(sum(p.advertised.get(r, 0) for r in p.expected) for p in self.pools)

    def summary(self) -> dict:
        """The counts of the summary line."""
        return {"nodesSeen": self.nodes_seen, "gpuNodes": self.gpu_nodes, "healthy": self.healthy,
                "drifting": self.drifting, "unavailable": self.unavailable,
                "gpuUnitsAdvertised": self.advertised_units, "gpuUnitsExpected": self.expected_units,
                "errors": sum(1 for f in self.findings if f.severity == ERROR),
                "warnings": sum(1 for f in self.findings if f.severity == WARNING)}


# --- what each pool expects --------------------------------------------------------------------------------------


@dataclass
class _Pool:
    """A pool's expectations, precomputed once from its render plan."""

    plan: P.PoolPlan
    report: PoolReport
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]
    resources: Mapping[str, int]
    driver_pin: str | None  # None: preinstalled (no pin; skew inside the pool is checked instead)
    sharing_labels: Mapping[str, str]
    hostname: re.Pattern | None
    machine: str | None  # the sanitised DMI product GFD publishes as gpu.machine
    node_labels: Mapping[str, str]
    drivers: dict[str, list[str]] = field(default_factory=dict)  # preinstalled pools: version -> nodes

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def nfd(self) -> bool:
        return self.plan.nfd


def _expected_sharing_labels(pool: P.PoolPlan, strategy: str | None) -> dict[str, str]:
    """GFD's replicas and sharing-strategy labels for the pool's profile (internal/lm/resource.go baseLabeler).

    replicas is the configured count (1 when not shared); the strategy is none unless replicas > 1. Under the mixed
    MIG strategy the labels are per profile (nvidia.com/mig-<profile>.*); under single, MIG devices take over
    nvidia.com/gpu.*.
    """
    profile = pool.profile
    shared = profile.mps or profile.time_slicing
    replicas = shared.replicas if shared is not None else 1
    kind = "mps" if profile.mps is not None else "time-slicing" if profile.time_slicing is not None else "none"
    if replicas <= 1:
        kind = "none"
    layout = P.mig_layout(profile, pool.model)
    if layout and strategy == "mixed":
        out = {}
        for name in layout:
            out[N.mig_resource_label(name, "replicas")] = str(replicas)
            out[N.mig_resource_label(name, "sharing-strategy")] = kind
        return out
    return {N.GFD_REPLICAS: str(replicas), N.GFD_SHARING: kind}


def _pools(plan: P.Plan) -> list[_Pool]:
    default_driver = plan.intent.spec.driver.version or plan.chart.defaults.get("driver", {}).get("version")
    out = []
    for pp in plan.pools:
        pool = pp.pool
        expected = {r: n * pool.nodes for r, n in pp.capacity.per_node.items()}
        report = PoolReport(pp.name, pool.gpu, pool.gpus_per_node, P.sharing_kind(pp.profile), pool.nodes, expected)
        pin = None if pp.driver == "preinstalled" else default_driver if pp.driver == "cluster" else pp.driver
        out.append(_Pool(
            plan=pp, report=report, labels=dict(pp.labels),
            taints=tuple((t.key, t.value, t.effect) for t in pool.taints),
            resources=dict(pp.capacity.per_node), driver_pin=pin,
            sharing_labels=_expected_sharing_labels(pp, plan.strategy),
            hostname=re.compile(pool.match.hostname) if pool.match.hostname else None,
            machine=N.sanitise(pool.match.dmi_product) if pool.match.dmi_product else None,
            node_labels=dict(pool.match.node_labels),
        ))
    return out


# --- the auditor -------------------------------------------------------------------------------------------------


class Auditor:
    """Feed nodes one at a time with add(); finish() runs the pool-level checks and returns the result."""

    def __init__(self, plan: P.Plan, source: str) -> None:
        self.plan = plan
        self.result = AuditResult(plan.name, plan.source, source)
        self.pools = _pools(plan)
        self.result.pools = [p.report for p in self.pools]
        # The MIG strategy GFD publishes: the rendered one, else the chart's default (mig.strategy: single).
        self.strategy = plan.strategy or plan.chart.defaults.get("mig", {}).get("strategy")
        self._by_name = {p.name: p for p in self.pools}
        self._nfd_by_model: dict[str, list[_Pool]] = {}
        self._label_index: dict[str, dict[str, list[_Pool]]] = {}
        for pool in self.pools:
            if pool.nfd:
                self._nfd_by_model.setdefault(pool.plan.model.id, []).append(pool)
            else:
                key = min(pool.node_labels)  # any one of a pool's labels narrows the candidates
                self._label_index.setdefault(key, {}).setdefault(pool.node_labels[key], []).append(pool)

    # -- matching -----------------------------------------------------------------------------------------------

    def _candidates(self, node: N.NodeFacts, model: str | None) -> list[_Pool]:
        labels = node.labels
        out: list[_Pool] = []
        if model is not None:
            out.extend(self._nfd_by_model.get(model, ()))
        else:
            named = self._by_name.get(labels.get(P.POOL_LABEL, ""))
            if named is not None and named.nfd:
                out.append(named)
        for key, table in self._label_index.items():
            value = labels.get(key)
            if value is not None:
                out.extend(table.get(value, ()))
        return out

    def _selects(self, pool: _Pool, node: N.NodeFacts, model: str | None) -> bool:
        """Whether the pool's selectors hold on the node; unknown facts are vouched for by the pool label."""
        labels = node.labels
        unknown = False
        if pool.nfd:
            if model is None:
                unknown = True
            elif model != pool.plan.model.id:
                return False
        elif any(labels.get(k) != v for k, v in pool.node_labels.items()):
            return False
        if pool.hostname is not None and not pool.hostname.search(node.name):
            return False
        if pool.machine is not None:
            machine = labels.get(N.GFD_MACHINE)
            if machine is None:
                unknown = True
            elif machine != pool.machine:
                return False
        return not unknown or labels.get(P.POOL_LABEL) == pool.name

    def _match(self, node: N.NodeFacts, model: str | None) -> list[_Pool]:
        matched = [p for p in self._candidates(node, model) if self._selects(p, node, model)]
        if len(matched) > 1 and model is not None and not any(p.nfd for p in matched):
            same = [p for p in matched if p.plan.model.id == model]
            if len(same) == 1:
                return same
        return matched

    # -- one node -----------------------------------------------------------------------------------------------

    def add(self, raw: Mapping[str, Any]) -> None:
        """Audit one Node object."""
        node = N.facts(raw)
        result = self.result
        result.nodes_seen += 1
        gpu = node.gpu
        if gpu:
            result.gpu_nodes += 1
        model = N.node_model(node.labels)
        matched = self._match(node, model)
        if not matched:
            if gpu:
                result.findings.append(self._unmatched(node, model))
                result.drifting += 1
            return
        if len(matched) > 1:
            names = [p.name for p in matched]
            result.findings.append(Drift(
                ERROR, "GA102", node.name, MULTI, f"node matches {len(names)} pools: {', '.join(names)}",
                {"pools": {p.name: self._why(p) for p in matched}, **self._identity(node, model)},
                "a node in two pools gets two sets of labels and drivers: make the selectors disjoint "
                "(or move the node out of the node group)"))
            result.drifting += 1  # counted in none of the pools: which one it serves is undecided
            return
        pool = matched[0]
        found = self._check(pool, node, model)
        report = pool.report
        report.matched += 1
        if any(f.severity in (ERROR, WARNING) for f in found):
            report.drifting += 1
            result.drifting += 1
        elif found:
            report.unavailable += 1
            result.unavailable += 1
        else:
            report.healthy += 1
            result.healthy += 1
        if node.is_ready and not node.cordoned:
            for resource in pool.resources:
                report.advertised[resource] += node.units(resource) or 0
        result.findings.extend(found)

    def _unmatched(self, node: N.NodeFacts, model: str | None) -> Drift:
        same_model = [p.name for p in self.pools if model is not None and p.plan.model.id == model]
        if same_model:
            hint = (f"pool {same_model[0]!r} has this GPU model; its match ({self._why(self._by_name[same_model[0]])}) "
                    "does not select the node")
        elif model is not None:
            hint = f"no pool has GPU model {model}: add a pool for it, or remove the node"
        else:
            hint = "GFD has not named the GPU (no gpu.product label): check that the operator's GFD runs there"
        return Drift(ERROR, "GA101", node.name, NONE, "GPU node matches no pool", self._identity(node, model), hint)

    @staticmethod
    def _identity(node: N.NodeFacts, model: str | None) -> dict:
        labels = node.labels
        evidence: dict[str, Any] = {}
        for key in (*N.NFD_GPU_LABELS, N.GPU_PRESENT, N.GFD_PRODUCT, P.POOL_LABEL):
            if key in labels:
                evidence[key] = labels[key]
        evidence["model"] = model
        return evidence

    @staticmethod
    def _why(pool: _Pool) -> str:
        m = pool.plan.pool.match
        parts = [f"GPU {pool.plan.model.id}"] if pool.nfd else []
        parts += [f"{k}={v}" for k, v in sorted(pool.node_labels.items())]
        if m.hostname:
            parts.append(f"hostname ~ {m.hostname}")
        if m.dmi_product:
            parts.append(f"DMI product {m.dmi_product}")
        return ", ".join(parts)

    def _check(self, pool: _Pool, node: N.NodeFacts, model: str | None) -> list[Drift]:
        """Every per-node check of a node that belongs to exactly one pool."""
        out: list[Drift] = []
        labels = node.labels
        name, pname = node.name, pool.name

        def add(severity: str, code: str, message: str, evidence: Mapping[str, Any], hint: str | None = None):
            out.append(Drift(severity, code, name, pname, message, evidence, hint))

        # Labels the render sets (NodeFeatureRule or node-group template).
        missing: dict[str, str] = {}
        wrong: dict[str, tuple[str, str]] = {}
        for k, v in pool.labels.items():
            actual = labels.get(k)
            if actual != v:
                if actual is None:
                    missing[k] = v
                else:
                    wrong[k] = (actual, v)
        if pool.driver_pin is not None and labels.get(P.DRIVER_DEPLOY_LABEL) == "false":
            wrong[P.DRIVER_DEPLOY_LABEL] = ("false", "absent or true (the operator installs this pool's driver)")
        if labels.get(N.DEPLOY_OPERANDS) == "false":
            wrong[N.DEPLOY_OPERANDS] = ("false", "absent or true (no GPU operand runs on this node)")
        if missing:
            add(ERROR, "GA103", f"missing label{'s' if len(missing) > 1 else ''} {', '.join(sorted(missing))}",
                {"expected": dict(sorted(missing.items())), "source": self._label_source(pool)},
                "re-apply the pool's " + self._label_source(pool))
        if wrong:
            add(ERROR, "GA104", f"wrong value of {', '.join(sorted(wrong))}",
                {k: {"actual": a, "expected": e} for k, (a, e) in sorted(wrong.items())},
                "a hand-set label overrides the rendered one: `kubectl label node --overwrite` it back, or fix the "
                "intent if the node is right")
        # Taints.
        lost = [t for t in pool.taints if t not in node.taints]
        if lost:
            add(ERROR, "GA105", "missing taint " + ", ".join(_taint(t) for t in lost),
                {"expected": [_taint(t) for t in lost], "actual": [_taint(t) for t in node.taints]},
                "without the taint, pods that do not tolerate it land on the pool's GPUs")
        # GPU model.
        product = labels.get(N.GFD_PRODUCT)
        if model is not None and model != pool.plan.model.id:
            add(ERROR, "GA106", f"GPU is {model}, pool {pname} is {pool.plan.model.id}",
                {N.GFD_PRODUCT: product, "model": model, "expected": pool.plan.model.id},
                "the node group holds the wrong instance type, or the pool's gpu is wrong")
        elif model is None:
            what = f"GFD product {product!r} maps to no catalogue model" if product else "no GFD product label"
            add(WARNING, "GA106", f"{what}: cannot confirm the pool's model {pool.plan.model.id}",
                {N.GFD_PRODUCT: product, "expected": pool.plan.model.id})
        # MIG state and whether an operand restart explains missing capacity.
        mig_state = labels.get(N.MIG_STATE) if pool.plan.mig_key is not None else None
        upgrading = labels.get(N.UPGRADE_STATE, N.UPGRADE_DONE) != N.UPGRADE_DONE
        in_flux = mig_state in ("pending", "rebooting") or upgrading
        # Allocatable (only meaningful while the kubelet reports).
        if node.is_ready:
            short, extra = {}, {}
            for resource, want in sorted(pool.resources.items()):
                got = node.units(resource)
                if got is None or got < want:
                    short[resource] = {"allocatable": node.allocatable.get(resource), "expected": want}
                elif got > want:
                    extra[resource] = {"allocatable": node.allocatable.get(resource), "expected": want}
            if short or extra:
                severity = ERROR if short and not in_flux else WARNING
                what = []
                for resource, e in short.items():
                    state = "absent" if e["allocatable"] is None else "zero" if node.units(resource) == 0 else "below"
                    what.append(f"{resource} {state} ({e['allocatable'] or 0} of {e['expected']})")
                what += [f"{r} above ({e['allocatable']} of {e['expected']})" for r, e in extra.items()]
                evidence = {**short, **extra, "allocatable": N.nvidia_resources(node.allocatable)}
                if in_flux:
                    evidence["reconfiguring"] = {k: labels[k] for k in (N.MIG_STATE, N.UPGRADE_STATE)
                                                 if labels.get(k) not in (None, "success", N.UPGRADE_DONE)}
                hint = ("the node is being reconfigured (MIG or driver upgrade): audit again when that is done"
                        if short and in_flux else
                        "check the device plugin pod on the node and the config its label selects" if short else
                        "the node advertises more than the intent's sharing promises: quotas are computed from the "
                        "intent")
                add(severity, "GA107", "; ".join(what), evidence, hint)
        # Driver version.
        version = N.driver_version(labels)
        if version is not None:
            if pool.driver_pin is not None and not N.version_matches(version, pool.driver_pin):
                evidence = {N.DRIVER_FULL: version, "expected": pool.driver_pin}
                if upgrading:
                    evidence[N.UPGRADE_STATE] = labels[N.UPGRADE_STATE]
                failed = labels.get(N.UPGRADE_STATE) == "upgrade-failed"
                add(WARNING if upgrading and not failed else ERROR, "GA108",
                    f"driver {version}, pool pins {pool.driver_pin}", evidence,
                    "the operator's driver upgrade is under way" if upgrading and not failed else
                    "check the driver daemon set (or NVIDIADriver) that owns the node")
            elif pool.driver_pin is None:
                pool.drivers.setdefault(version, []).append(name)
        # MIG.
        if mig_state == "failed":
            add(ERROR, "GA110", "MIG reconfiguration failed", self._mig_evidence(labels),
                "read the nvidia-mig-manager pod's log on the node; the layout or its device filter may not fit")
        elif mig_state in ("pending", "rebooting"):
            add(WARNING, "GA110", f"MIG reconfiguration {mig_state}", self._mig_evidence(labels),
                f"the labels carry no timestamp, so in progress and stuck look alike: if it is still {mig_state} on "
                "the next audit, a GPU pod probably blocks the teardown (drain the node); see the "
                "nvidia-mig-manager log")
        strategy = labels.get(N.GFD_MIG_STRATEGY)
        if strategy is not None and self.strategy is not None and strategy != self.strategy:
            add(ERROR, "GA111", f"mig.strategy is {strategy}, the cluster's is {self.strategy}",
                {N.GFD_MIG_STRATEGY: strategy, "expected": self.strategy},
                "the ClusterPolicy's mig.strategy differs from the rendered values: re-sync the chart")
        # Sharing labels GFD derived from the device-plugin config the node runs.
        off = {k: {"actual": labels[k], "expected": v} for k, v in pool.sharing_labels.items()
               if k in labels and labels[k] != v}
        if off:
            add(ERROR, "GA112", "sharing labels " + ", ".join(f"{k}={e['actual']} (expected {e['expected']})"
                                                              for k, e in off.items()),
                off, "the device plugin runs another config than the pool's: check the config label and ConfigMap")
        # Availability: reported, not drift.
        if not node.is_ready:
            reason = f", {node.ready_reason}" if node.ready_reason else ""
            add(INFO, "GA113", f"node is NotReady (Ready={node.ready}{reason})",
                {"Ready": node.ready, "reason": node.ready_reason})
        if node.cordoned:
            evidence = {"unschedulable": node.unschedulable}
            if N.UPGRADE_STATE in labels:
                evidence[N.UPGRADE_STATE] = labels[N.UPGRADE_STATE]
            add(INFO, "GA114", "node is cordoned", evidence)
        return out

    @staticmethod
    def _label_source(pool: _Pool) -> str:
        return (f"NodeFeatureRule gpuconf-pool-{pool.name}" if pool.nfd
                else f"node-group template ({pool.name}.kubelet.env / NodePool)")

    @staticmethod
    def _mig_evidence(labels: Mapping[str, str]) -> dict:
        evidence = {k: labels[k] for k in (N.MIG_STATE, P.MIG_LABEL) if k in labels}
        paused = sorted(k for k, v in labels.items() if k.startswith(N.DEPLOY_PREFIX) and v == N.PAUSED_FOR_MIG)
        if paused:
            evidence["paused operands"] = paused
        return evidence

    # -- the pools ----------------------------------------------------------------------------------------------

    def finish(self) -> AuditResult:
        """Pool-level checks (node counts, driver skew), then the findings in a stable order."""
        result = self.result
        for pool in self.pools:
            report = pool.report
            if report.matched != report.declared:
                fewer = report.matched < report.declared
                result.findings.append(Drift(
                    ERROR if fewer else WARNING, "GA115", "", pool.name,
                    f"{report.matched} node{'s' if report.matched != 1 else ''} match, the pool declares "
                    f"{report.declared}", {"matched": report.matched, "declared": report.declared},
                    "nodes missing from the pool are missing GPUs: see GA101/GA102 for nodes that match no or "
                    "several pools" if fewer else "update the pool's node count: quotas and reports use it"))
            if len(pool.drivers) > 1:
                ranked = sorted(pool.drivers, key=lambda v: (-len(pool.drivers[v]), [-x for x in N.version_key(v)]))
                common = ranked[0]
                counts = {v: len(pool.drivers[v]) for v in sorted(pool.drivers, key=N.version_key)}
                for version in ranked[1:]:
                    for node in pool.drivers[version]:
                        result.findings.append(Drift(
                            WARNING, "GA109", node, pool.name,
                            f"driver {version}, most of the pool runs {common}",
                            {N.DRIVER_FULL: version, "pool versions": counts},
                            "preinstalled drivers drift node by node: rebuild the node image, or pin a managed "
                            "driver for the pool"))
        order = {p.name: i for i, p in enumerate(self.pools)}
        result.findings.sort(key=lambda f: (order.get(f.pool, len(order) + (f.pool == MULTI)), f.node, f.code,
                                            f.message))
        return result


def _taint(t: tuple[str, str, str]) -> str:
    key, value, effect = t
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def audit(plan: P.Plan, nodes: Iterable[Mapping[str, Any]], source: str) -> AuditResult:
    """Audit a stream of Node objects against a valid intent's plan."""
    auditor = Auditor(plan, source)
    for node in nodes:
        auditor.add(node)
    return auditor.finish()


# --- reporters ---------------------------------------------------------------------------------------------------


def format_json(result: AuditResult) -> str:
    """The whole result as one JSON object (stable key order)."""
    import json

    doc = {"cluster": result.cluster, "intent": result.intent, "nodes": result.source, "ok": result.ok,
           "summary": result.summary(), "pools": [p.as_dict() for p in result.pools],
           "findings": [f.as_dict() for f in result.findings]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def summary_line(result: AuditResult) -> str:
    """nodes seen, GPU nodes, healthy, drifting, GPUs advertised vs expected."""
    s = result.summary()
    return (f"summary: {s['nodesSeen']} nodes seen, {s['gpuNodes']} GPU nodes, {s['healthy']} healthy, "
            f"{s['drifting']} drifting, {s['unavailable']} unavailable; GPU resources advertised "
            f"{s['gpuUnitsAdvertised']} of {s['gpuUnitsExpected']} expected; "
            f"{s['errors']} error{'s' if s['errors'] != 1 else ''}, "
            f"{s['warnings']} warning{'s' if s['warnings'] != 1 else ''}")


def format_text(result: AuditResult) -> str:
    """A table per pool: its health in one line, healthy nodes counted, problems in full; then the summary line."""
    lines = [f"audit of {result.cluster} ({result.intent}) against {result.source}"]
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
    return "\n".join(lines) + "\n"


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


def audit_path(intent_path: str, nodes: Iterable[Mapping[str, Any]], source: str):
    """Validate the intent file and, when it is valid, audit the nodes against its plan.

    Returns (validation, result); result is None when the intent is invalid. Raises NodeSourceError when the nodes
    cannot be read.
    """
    from ..intent.validate import validate_path

    validation = validate_path(intent_path)
    if not validation.ok:
        return validation, None
    plan = P.build(validation.intent, intent_path, validation.document)
    return validation, audit(plan, nodes, source)

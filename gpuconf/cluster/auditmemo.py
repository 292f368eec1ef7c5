"""The audit of many alike nodes: each node the audit cannot tell from one already judged, but by its name, gets that
node's verdict under its own name.

The nodes of a node group carry the same labels, taints, GPUs, conditions and node info; the audit reads nothing
else of a node but its name (cluster/nodefacts.py NodeFacts). A node's *key* is what it reads: from a mapped NodeList
the parts of its text (cluster/nodescan.py), otherwise its facts without the name and the `kubernetes.io/hostname`
label (which the audit never reads); with pools matched by hostname, whether each such pool's pattern takes the name.
The first node of a key is audited as ever, and what that changed is kept: the counts, the findings (with the node's
name replaced), the pool's per-node records (its kernel, whether it is down, its driver). Every later node of the key
gets the same, counted in when the audit finishes (settle). Not done where the audit reads more of a node than its
facts: with the operator's pods (the diagnosis), a DRA cluster's published devices, or NVLink pools (the fabric).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import nodefacts as N
from .auditresult import Drift
from .nodescan import Scanned

HOSTNAME_LABEL = "kubernetes.io/hostname"
#: Nodes judged before the memo gives up on a cluster whose nodes are nearly all different (a key costs a little).
TRIAL = 512


@dataclass(slots=True)
class _Verdict:
    """What auditing a node changed, with the node's name taken out."""

    pool: Any  # the pool the node was placed in, or None
    seen: int
    gpu: int
    drifting: int
    findings: list  # result-level findings (no pool: GA101, GA102)
    checked: list | None  # the pool's per-node findings, None when not placed
    kernel: tuple | None  # (kernel, lost GPUs)
    down: bool
    driver: str | None  # preinstalled pools: the version the node runs
    matched: int
    advertised: dict
    labelled: dict
    count: int = field(default=0)  # later nodes given the verdict, not yet counted in
    simple: bool = field(default=False)  # placed in a pool, and nothing but counts and its kernel kept


def _renamed(drifts: list, name: str) -> list:
    return [Drift(d.severity, d.code, name, d.pool, d.message, d.evidence, d.hint) for d in drifts]


class Memo:
    """The verdicts of one audit, by key."""

    def __init__(self, auditor: Any) -> None:
        self.auditor = auditor
        # Pools that select nodes by their hostname label read it: then each node is judged.
        by_hostname = any(HOSTNAME_LABEL in p.node_labels or HOSTNAME_LABEL in p.labels for p in auditor.pools)
        self.on = auditor.operands is None and auditor.slices is None and auditor.fabric is None and not by_hostname
        self.hostnames = tuple(p.hostname for p in auditor.pools if p.hostname is not None)
        self.verdicts: dict = {}  # by the facts' key
        self.texts: dict = {}  # by the key of a mapped node's text
        self.last_key: Any = None
        self.last: _Verdict | None = None
        self.judged = 0
        self.given = 0

    def add(self, raw: Any) -> None:
        """Audit one node: a Node object, or a node of a mapped NodeList (nodescan.Scanned)."""
        scanned = type(raw) is Scanned
        if not self.on:
            auditor = self.auditor
            node = N.facts(raw.node() if scanned else raw)
            auditor.judge(node, *auditor.place(node))
            return
        node = None
        if scanned and raw.key is not None:
            name, key, verdicts = raw.name, raw.key, self.texts
        else:
            node = N.facts(raw.node() if scanned else raw)
            name, key, verdicts = node.name, _facts_key(node), self.verdicts
        if self.hostnames:
            key = (key, tuple(p.search(name) is not None for p in self.hostnames))
        if key is self.last_key or key == self.last_key:
            verdict = self.last
        else:
            verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = self._judge(node if node is not None else N.facts(raw.node()))
            if self.judged >= TRIAL and self.given < self.judged:  # nearly every node differs: judge each
                self.on = False
        else:
            self._give(verdict, name)
        self.last_key, self.last = key, verdict

    def add_mapped(self, mapped: Any) -> None:
        """Audit the nodes of a mapped list (nodescan.MappedNodes), part by part: a node whose key number was
        judged in the part gets that verdict at once (the nodes of a node group, nearly all)."""
        for part in mapped.parts():
            names, ids = part.names, part.ids
            verdicts: list = [None] * len(part.keys)
            for i, kid in enumerate(ids):
                verdict = verdicts[kid] if kid >= 0 else None
                if verdict is None:
                    self.add(part.node(i))
                    mapped.release(part.spans[4 * i + 1])
                    if kid >= 0 and self.on and not self.hostnames:
                        verdicts[kid] = self.last
                elif verdict.simple:  # placed, healthy, nothing but its kernel to keep
                    verdict.count += 1
                    verdict.pool.checked.append([])
                    verdict.pool.kernels.append((names[i], *verdict.kernel))
                    self.given += 1
                else:
                    self._give(verdict, names[i])

    def _judge(self, node: N.NodeFacts) -> _Verdict:
        auditor = self.auditor
        result = auditor.result
        model, matched = auditor.place(node)
        pool = matched[0] if len(matched) == 1 else None
        before = (result.nodes_seen, result.gpu_nodes, result.drifting, len(result.findings))
        if pool is not None:
            report = pool.report
            drivers = {v: len(names) for v, names in pool.drivers.items()}
            sizes = (len(pool.kernels), len(pool.down), len(pool.checked), report.matched,
                     dict(report.advertised), dict(pool.labelled))
        auditor.judge(node, model, matched)
        self.judged += 1
        verdict = _Verdict(None, result.nodes_seen - before[0], result.gpu_nodes - before[1],
                           result.drifting - before[2], _renamed(result.findings[before[3]:], ""), None, None,
                           False, None, 0, {}, {})
        if pool is not None:
            kernels, down, checked, matched_before, advertised, labelled = sizes
            verdict.pool = pool
            if len(pool.checked) > checked:
                verdict.checked = _renamed(pool.checked[-1], "")
            if len(pool.kernels) > kernels:
                verdict.kernel = pool.kernels[-1][1:]
            verdict.down = len(pool.down) > down
            verdict.driver = next((v for v, names in pool.drivers.items() if len(names) > drivers.get(v, 0)), None)
            verdict.matched = report.matched - matched_before
            verdict.advertised = {k: n - advertised.get(k, 0) for k, n in report.advertised.items()
                                  if n != advertised.get(k, 0)}
            verdict.labelled = {k: n - labelled.get(k, 0) for k, n in pool.labelled.items()
                                if n != labelled.get(k, 0)}
            verdict.simple = (not verdict.findings and verdict.checked == [] and verdict.kernel is not None
                              and not verdict.down and verdict.driver is None)
        return verdict

    def _give(self, verdict: _Verdict, name: str) -> None:
        """A node judged like an earlier one: its findings and per-node records under its name (the counts are
        added up in settle)."""
        self.given += 1
        verdict.count += 1
        if verdict.findings:
            self.auditor.result.findings += _renamed(verdict.findings, name)
        pool = verdict.pool
        if pool is None:
            return
        if verdict.checked is not None:
            pool.checked.append(_renamed(verdict.checked, name) if verdict.checked else [])
        if verdict.kernel is not None:
            pool.kernels.append((name, *verdict.kernel))
        if verdict.down:
            pool.down.append(name)
        if verdict.driver is not None:
            pool.drivers[verdict.driver].append(name)

    def settle(self) -> None:
        """Count in the nodes given a verdict: the audit's and the pools' counters."""
        result = self.auditor.result
        for verdict in (*self.verdicts.values(), *self.texts.values()):
            times, verdict.count = verdict.count, 0
            if not times:
                continue
            result.nodes_seen += verdict.seen * times
            result.gpu_nodes += verdict.gpu * times
            result.drifting += verdict.drifting * times
            pool = verdict.pool
            if pool is None:
                continue
            pool.report.matched += verdict.matched * times
            for k, n in verdict.advertised.items():
                pool.report.advertised[k] += n * times
            for k, n in verdict.labelled.items():
                pool.labelled[k] += n * times


def _facts_key(node: N.NodeFacts) -> tuple:
    """Everything of a node's facts the audit reads, but its name."""
    labels = node.labels
    if HOSTNAME_LABEL in labels:
        labels = dict(labels)
        del labels[HOSTNAME_LABEL]
    return (tuple(labels.items()), node.taints, node.unschedulable, node.ready, node.ready_reason,
            tuple(node.allocatable.items()), tuple(node.capacity.items()), node.kubelet_version, node.os_image,
            node.kernel_version, node.container_runtime, node.architecture)

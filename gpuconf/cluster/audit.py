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

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from . import lost as L
from . import nodefacts as N
from .. import plan as P
from ..intent import hostnames
# The result's types and reporters live in auditresult; the names stay importable from here.
from .auditresult import (  # noqa: F401
    ERROR, INFO, MULTI, NONE, TITLES, WARNING, AuditResult, Drift, PoolReport, Threshold, format_json, format_text,
    summary_line,
)

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
    driver_origin: str  # where the pin comes from: the intent, the pool, or the chart's default
    sharing_labels: Mapping[str, str]
    hostname: Any  # RE2-compiled, searched as NFD's InRegexp does (gpuconf/intent/hostnames.py)
    machine: str | None  # the sanitised DMI product GFD publishes as gpu.machine
    node_labels: Mapping[str, str]
    mig: bool  # the pool's sharing has a MIG layout
    single_mig: bool  # ... and the cluster's strategy is single: GFD counts MIG devices
    gpu_count: int  # GFD's nvidia.com/gpu.count on a healthy node
    operands: tuple[str, ...]  # operands whose deploy labels the operator sets on the pool's nodes (mig-manager aside)
    operand_labels: tuple[str, ...]  # ... and those labels
    drivers: dict[str, list[str]] = field(default_factory=dict)  # preinstalled pools: version -> nodes
    kernels: list[tuple[str, str, bool]] = field(default_factory=list)  # per checked node: name, kernel, lost GPUs
    contexts: list = field(default_factory=list)  # per checked node, with the operator's pods: what the diagnosis reads
    down: list[str] = field(default_factory=list)  # nodes NotReady or cordoned
    labelled: Counter = field(default_factory=Counter)  # rendered label key -> matched nodes carrying it (any value)
    checked: list[list[Drift]] = field(default_factory=list)  # each matched node's findings, counted in finish()

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


def _pools(plan: P.Plan, strategy: str | None) -> list[_Pool]:
    default_driver = plan.intent.spec.driver.version or plan.chart.shared_defaults.get("driver", {}).get("version")
    out = []
    for pp in plan.pools:
        pool = pp.pool
        expected = {r: n * pool.nodes for r, n in pp.capacity.per_node.items()}
        report = PoolReport(pp.name, pool.gpu, pool.gpus_per_node, P.sharing_kind(pp.profile), pool.nodes, expected)
        pin = None if pp.driver == "preinstalled" else default_driver if pp.driver == "cluster" else pp.driver
        pinned_by = ("the intent's spec.driver.version" if plan.intent.spec.driver.version else
                     f"chart {plan.chart.version}'s default driver (the intent pins none)") \
            if pp.driver == "cluster" else f"pool {pp.name}'s driver"
        layout = P.mig_layout(pp.profile, pp.model) or {}
        single = bool(layout) and strategy == "single"
        if plan.intent.spec.cluster.allocation == "dra":
            # The GPUCluster stack's deploy labels (gpu-operator v26.7.0 state_manager.go; dra facts §4).
            operands = tuple(op for op in N.DRA_GPU_OPERANDS if op != "driver" or pin is not None) \
                + N.DRA_MONITORING_OPERANDS
        else:
            operands = tuple(op for op in N.GPU_OPERANDS if op != "driver" or pin is not None) + N.MONITORING_OPERANDS
        out.append(_Pool(
            plan=pp, report=report, labels=dict(pp.labels),
            taints=tuple((t.key, t.value, t.effect) for t in pool.taints),
            resources=dict(pp.capacity.per_node), driver_pin=pin, driver_origin=pinned_by,
            sharing_labels=_expected_sharing_labels(pp, plan.strategy),
            hostname=hostnames.compiled(pool.match.hostname) if pool.match.hostname else None,
            machine=N.sanitise(pool.match.dmi_product) if pool.match.dmi_product else None,
            node_labels=dict(pool.match.node_labels),
            mig=bool(layout), single_mig=single,
            # GFD counts MIG devices under the single strategy, whole GPUs otherwise (nvidia-formats-facts §2.1).
            gpu_count=sum(layout.values()) * pool.gpus_per_node if single else pool.gpus_per_node,
            operands=operands, operand_labels=tuple(N.DEPLOY_PREFIX + op for op in operands),
        ))
    return out


# --- the auditor -------------------------------------------------------------------------------------------------


class Auditor:
    """Feed nodes one at a time with add(); finish() runs the pool-level checks and returns the result."""

    def __init__(self, plan: P.Plan, source: str, max_unavailable: Threshold | None = None,
                 slices: Mapping[str, list] | None = None, operands: Any = None,
                 fabric_slices: Mapping[str, list] | None = None) -> None:
        self.plan = plan
        from .fabric import Fabric

        #: The NVLink pools' fabric (GA160-GA165): clique labels, the ComputeDomain driver's slices, its pods.
        self.fabric = Fabric.of(plan, fabric_slices)
        #: The operator's pods per node (cluster.operands.Operands), or a callable that returns them (a read running
        #: beside the nodes'): each node is diagnosed from them once every node is in (finish).
        self.operands = operands
        self._node_state: tuple = ()  # what _check read of the node for its diagnosis
        #: On a DRA cluster: the devices the driver publishes per node (cluster.slices), read instead of allocatable.
        self.slices = slices
        self.result = AuditResult(plan.name, plan.source, source)
        # The MIG strategy GFD publishes: the rendered one, else the chart's default (mig.strategy: single).
        self.strategy = plan.strategy or plan.chart.shared_defaults.get("mig", {}).get("strategy")
        self.max_unavailable = max_unavailable
        self.pools = _pools(plan, self.strategy)
        self.result.pools = [p.report for p in self.pools]
        # GPUs the intent declares (spec.gpuModels) are recognised by their product labels like catalogue models.
        self.declared_models = tuple(P.declared_models(plan.intent).values())
        self._label_sources: dict[str, str] = {}
        # What the intent says of each pool, for the known hazards the nodes' own reports complete (GA131-GA133).
        from .. import hazards as H

        self._hazard_facts = {pf.name: f.facts for pf, f in zip(plan.intent.spec.pools,
                                                                  H.intent_facts(plan.intent, H.values_of(plan.intent, plan.document))
                                                                  .pools)}
        self._hazard_cache: dict[tuple, list] = {}
        self._by_name = {p.name: p for p in self.pools}
        self._nfd_by_model: dict[str, list[_Pool]] = {}
        self._label_index: dict[str, dict[str, list[_Pool]]] = {}
        for pool in self.pools:
            if pool.nfd:
                self._nfd_by_model.setdefault(pool.plan.model.id, []).append(pool)
            else:
                key = min(pool.node_labels)  # any one of a pool's labels narrows the candidates
                self._label_index.setdefault(key, {}).setdefault(pool.node_labels[key], []).append(pool)
        from .auditmemo import Memo

        self.memo = Memo(self)

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

    def pools_of(self, node: N.NodeFacts, model: str | None) -> list[_Pool]:
        """The pools whose selectors take the node, as the audit places it (the first-sync plan reads the same)."""
        return self._match(node, model)

    def _match(self, node: N.NodeFacts, model: str | None) -> list[_Pool]:
        matched = [p for p in self._candidates(node, model) if self._selects(p, node, model)]
        if len(matched) > 1 and model is not None and not any(p.nfd for p in matched):
            same = [p for p in matched if p.plan.model.id == model]
            if len(same) == 1:
                return same
        return matched

    # -- one node -----------------------------------------------------------------------------------------------

    def add(self, raw: Any) -> None:
        """Audit one Node object, or one node of a mapped NodeList (cluster.nodescan); a node the audit cannot tell
        from one it judged but by its name gets that node's verdict (cluster.auditmemo)."""
        self.memo.add(raw)

    def place(self, node: N.NodeFacts) -> tuple[str | None, list[_Pool]]:
        """The node's GPU model and the pools that take it."""
        model = N.node_model(node.labels, self.declared_models)
        if model is None and self.slices is not None:  # no GFD on the DRA stack: the published productName tells
            model = self._published_model(node.name)
        return model, self._match(node, model)

    def judge(self, node: N.NodeFacts, model: str | None, matched: list[_Pool]) -> None:
        """Audit one node, placed."""
        result = self.result
        result.nodes_seen += 1
        gpu = node.gpu
        if gpu:
            result.gpu_nodes += 1
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
        if self.fabric is not None:
            self.fabric.add(pool.name, node, found)
        pool.kernels.append((node.name, node.kernel_version or node.labels.get(L.NFD_KERNEL, ""),
                             any(f.code in L.LOSING and f.severity == ERROR for f in found)))
        if self.operands is not None:
            pool.contexts.append(L.context(self, pool, node, *self._node_state))
        report = pool.report
        report.matched += 1
        pool.checked.append(found)  # counted healthy, drifting or unavailable in finish(), after GA123
        if node.is_ready and not node.cordoned:
            published = self._device_counts(pool, node) if self.slices is not None else {}
            for resource in pool.resources:
                report.advertised[resource] += (published.get(resource, 0) if self.slices is not None
                                                else node.units(resource) or 0)

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

    def _hazards(self, pool: _Pool, node: N.NodeFacts, model: str | None, driver: str | None, add) -> None:
        """GA131-GA133: the known hazards the node enters with what it reports (gpuconf.hazards, seen by audit)."""
        from .. import hazards as H

        base = self._hazard_facts.get(pool.name)
        if base is None:
            return
        # A node that carries MIG slices next to whole GPUs advertises both (the mixed strategy's resources).
        count = node.capacity_units if node.capacity else node.units
        resources = node.capacity or node.allocatable
        mixes = (count(P.GPU) or 0) > 0 and any(k.startswith("nvidia.com/mig-") and (count(k) or 0) > 0
                                                 for k in resources)
        # Nodes of a pool mostly report the same things: judge each combination once (10,000 nodes audit in time).
        key = (pool.name, model, driver, node.os_image, node.kernel_version, node.container_runtime,
               node.architecture, node.kubelet_version, mixes)
        found = self._hazard_cache.get(key)
        if found is None:
            facts = H.node_facts(base, gpu=model, driver=driver, os_image=node.os_image,
                                 kernel_version=node.kernel_version, container_runtime=node.container_runtime,
                                 architecture=node.architecture, kubelet_version=node.kubelet_version,
                                 mixes_mig_and_whole=mixes)
            found = self._hazard_cache[key] = [(v.hazard, facts) for v in H.matching(facts, "audit") if v.applies]
        for hazard, facts in found:
            evidence = {"driver": facts.driver, "gpu": facts.gpu, "osImage": node.os_image,
                        "kernelVersion": node.kernel_version, "containerRuntimeVersion": node.container_runtime,
                        "architecture": node.architecture, "kubeletVersion": node.kubelet_version}
            if mixes:
                evidence["capacity"] = N.nvidia_resources(node.capacity)
            add(ERROR if hazard.severity == "error" else WARNING, H.audit_code(hazard),
                f"known hazard {hazard.id}: {hazard.breaks}", {k: v for k, v in evidence.items() if v},
                f"{hazard.fix}; source: {hazard.cite()}")

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

        mig_state = labels.get(N.MIG_STATE) if pool.plan.mig_key is not None else None
        upgrade_state = labels.get(N.UPGRADE_STATE) or None  # "" is the library's "not processed yet"
        # A driver upgrade that changes the node: not when done, failed, or only waiting for its wave.
        upgrading = upgrade_state not in (None, N.UPGRADE_DONE, N.UPGRADE_FAILED, N.UPGRADE_REQUIRED)
        in_flux = mig_state in N.MIG_IN_PROGRESS or upgrading
        causes: list[str] = []  # findings that explain missing capacity, for GA107's hint

        # Labels the render sets (NodeFeatureRule or node-group template).
        missing: dict[str, str] = {}
        wrong: dict[str, tuple[str, str]] = {}
        for k, v in pool.labels.items():
            actual = labels.get(k)
            if actual is not None:
                pool.labelled[k] += 1
            if actual == v or (k == N.DEPLOY_DRIVER and actual == N.DRIVER_PREINSTALLED):
                continue  # pre-installed: what the driver manager writes on finding the host driver, same as false
            if actual is None:
                missing[k] = v
            else:
                wrong[k] = (actual, v)
        if missing:
            add(ERROR, "GA103", f"missing label{'s' if len(missing) > 1 else ''} {', '.join(sorted(missing))}",
                {"expected": dict(sorted(missing.items())), "source": self._label_source(pool)},
                "re-apply the pool's " + self._label_source(pool))
        if wrong:
            add(ERROR, "GA104", f"wrong value of {', '.join(sorted(wrong))}",
                {k: {"actual": a, "expected": e} for k, (a, e) in sorted(wrong.items())}, _wrong_hint(wrong))
        # The operator's state labels: which operands run on the node.
        causes += self._operands(pool, node, mig_state, upgrade_state, add)
        # Taints.
        self._node_state = (mig_state, upgrade_state, self._taints(pool, node, add))
        # GPU model.
        product = labels.get(N.GFD_PRODUCT)
        if model is not None and model != pool.plan.model.id:
            add(ERROR, "GA106", f"GPU is {model}, pool {pname} is {pool.plan.model.id}",
                {N.GFD_PRODUCT: product, "model": model, "expected": pool.plan.model.id},
                "the node group holds the wrong instance type, or the pool's gpu is wrong")
        elif model is None:
            what = f"GFD product {product!r} maps to no catalogue model" if product else \
                "no GFD product label, and no published device names the model" if self.slices is not None else \
                "no GFD product label"
            add(WARNING, "GA106", f"{what}: cannot confirm the pool's model {pool.plan.model.id}",
                {N.GFD_PRODUCT: product, "expected": pool.plan.model.id})
        # A failed driver upgrade: the operator stops the node's upgrade there and waits for a person.
        if upgrade_state == N.UPGRADE_FAILED:
            evidence = {N.UPGRADE_STATE: upgrade_state}
            version = N.driver_version(labels)
            if version is not None:
                evidence[N.DRIVER_FULL] = version
            evidence.update(self._paused(labels))
            add(ERROR, "GA116", "the driver upgrade failed", evidence,
                "read the driver pod's log on the node (and the upgrade controller's events); the operator leaves "
                "the state once the node's driver pod runs the wanted driver and is Ready (k8s-operator-libs "
                "ProcessUpgradeFailedNodes): fix the cause, then delete the driver pod so that it starts again")
            causes.append("GA116")
        # GFD's GPU count: GPUs the driver sees now, whatever the kubelet still advertises.
        count = labels.get(N.GFD_COUNT)
        # A MIG layout the node was never given (its mig.config is not the pool's: GA103/GA104 or the pending first
        # sync say so) leaves whole GPUs, which is no GPU lost.
        unapplied = pool.mig and labels.get(P.MIG_LABEL) != pool.plan.mig_key
        if unapplied and count == str(pool.plan.pool.gpus_per_node):
            causes.append("GA104" if P.MIG_LABEL in labels else "GA103")
        elif count is not None and count != str(pool.gpu_count):
            got = node.label_int(N.GFD_COUNT)
            severity = WARNING if (got is not None and got > pool.gpu_count) or in_flux else ERROR
            what = "MIG devices" if pool.single_mig else "GPUs"
            add(severity, "GA121", f"GFD counts {count if got is not None else repr(count)} {what}, the pool "
                f"expects {pool.gpu_count}",
                {N.GFD_COUNT: count, "expected": pool.gpu_count, "allocatable": N.nvidia_resources(node.allocatable)},
                "a GPU fell off the bus or failed (nvidia-smi and the kernel log show it; the kubelet's allocatable "
                "lags until the device plugin restarts)" if got is not None and got < pool.gpu_count else
                "the node has more GPUs than the pool declares: fix gpusPerNode, or the node" if got is not None
                else "GFD's label is not a number: check the gpu-feature-discovery pod")
            if severity == ERROR:
                causes.append("GA121")
        # Allocatable (only meaningful while the kubelet reports).
        if node.is_ready:
            if self.slices is not None:
                self._published(pool, node, causes, add)
            else:
                self._allocatable(pool, node, in_flux, causes, add)
        # Driver version.
        version = N.driver_version(labels)
        if version is not None:
            if pool.driver_pin is not None and not N.version_matches(version, pool.driver_pin):
                evidence = {N.DRIVER_FULL: version, "expected": pool.driver_pin}
                pending = upgrade_state not in (None, N.UPGRADE_DONE, N.UPGRADE_FAILED)
                if upgrade_state is not None:
                    evidence[N.UPGRADE_STATE] = upgrade_state
                evidence["pinnedBy"] = pool.driver_origin
                add(WARNING if pending else ERROR, "GA108", f"driver {version}, {pool.driver_origin} is "
                    f"{pool.driver_pin}",
                    evidence,
                    "the operator's driver upgrade is under way" if pending else
                    "the driver upgrade failed (GA116)" if upgrade_state == N.UPGRADE_FAILED else
                    "check the driver daemon set (or NVIDIADriver) that owns the node")
            elif pool.driver_pin is None:
                pool.drivers.setdefault(version, []).append(name)
        self._hazards(pool, node, model, version, add)
        # MIG.
        if mig_state == "failed":
            add(ERROR, "GA110", "MIG reconfiguration failed", self._mig_evidence(labels),
                "read the nvidia-mig-manager pod's log on the node; the layout or its device filter may not fit")
        elif mig_state in N.MIG_IN_PROGRESS:
            add(WARNING, "GA110", f"MIG reconfiguration {mig_state}", self._mig_evidence(labels),
                f"the labels carry no timestamp, so in progress and stuck look alike: if it is still {mig_state} on "
                "the next audit, a GPU pod probably blocks the teardown (drain the node); see the "
                "nvidia-mig-manager log")
        strategy = labels.get(N.GFD_MIG_STRATEGY)
        if strategy is not None and self.strategy is not None and strategy != self.strategy:
            add(ERROR, "GA111", f"mig.strategy is {strategy}, the cluster's is {self.strategy}",
                {N.GFD_MIG_STRATEGY: strategy, "expected": self.strategy},
                "the ClusterPolicy's mig.strategy differs from the rendered values: re-sync the chart")
        elif strategy is None and self.strategy not in (None, "none") and N.GFD_PRODUCT in labels:
            # GFD publishes mig.strategy under single and mixed only: no label is GFD's default, none, which
            # advertises no MIG resources (real H200: tests/fixtures/h200-real/gfd-labels.txt).
            add(ERROR if pool.mig else WARNING, "GA111",
                f"no mig.strategy label: GFD runs with strategy none, the cluster's is {self.strategy}",
                {N.GFD_MIG_STRATEGY: None, "expected": self.strategy},
                ("strategy none advertises no MIG resources, so the pool's MIG devices are never offered: "
                 if pool.mig else "") + "the node's GFD does not run with the ClusterPolicy's mig.strategy (a "
                "GFD deployed outside the operator?): re-sync the chart, then restart gpu-feature-discovery there")
        # Sharing labels GFD derived from the device-plugin config the node runs.
        off = {k: {"actual": labels[k], "expected": v} for k, v in pool.sharing_labels.items()
               if k in labels and labels[k] != v}
        if off:
            add(ERROR, "GA112", "sharing labels " + ", ".join(f"{k}={e['actual']} (expected {e['expected']})"
                                                              for k, e in off.items()),
                off, "the device plugin runs another config than the pool's: check the config label and ConfigMap")
        # Availability: reported, not drift (unless too much of the pool is out: GA122 in finish()).
        if not node.is_ready:
            reason = f", {node.ready_reason}" if node.ready_reason else ""
            add(INFO, "GA113", f"node is NotReady (Ready={node.ready}{reason})",
                {"Ready": node.ready, "reason": node.ready_reason})
        if node.cordoned:
            evidence = {"unschedulable": node.unschedulable}
            if N.UPGRADE_STATE in labels:
                evidence[N.UPGRADE_STATE] = labels[N.UPGRADE_STATE]
            add(INFO, "GA114", "node is cordoned", evidence)
        if not node.is_ready or node.cordoned:
            pool.down.append(name)
        return out

    def _operands(self, pool: _Pool, node: N.NodeFacts, mig_state: str | None, upgrade_state: str | None,
                  add: Any) -> list[str]:
        """GA117-GA119 from the operator's deploy labels; returns the codes found (causes of lost capacity)."""
        labels = node.labels
        found: list[str] = []
        if labels.get(N.DEPLOY_OPERANDS) == "false":  # the operator then removes every other deploy label
            add(ERROR, "GA118", "every GPU operand is switched off (nvidia.com/gpu.deploy.operands=false)",
                {N.DEPLOY_OPERANDS: "false"},
                "the label removes the driver, device plugin and the rest from the node: remove the label (`kubectl "
                "label node NAME nvidia.com/gpu.deploy.operands-`) unless the node is meant to be out of service")
            return ["GA118"]
        expected, keys = pool.operands, pool.operand_labels
        if self.slices is None and \
                labels.get("nvidia.com/mig.capable", "true" if pool.plan.model.mig_capable else "false") == "true":
            expected, keys = (*expected, N.MIG_MANAGER), (*keys, N.DEPLOY_PREFIX + N.MIG_MANAGER)
        values = [labels.get(k) for k in keys]
        absent = [op for op, value in zip(expected, values) if value is None] if None in values else []
        present = labels.get(N.GPU_PRESENT)
        if absent or present != "true":
            evidence: dict[str, Any] = {N.GPU_PRESENT: present}
            if absent:
                evidence["missing"] = [N.DEPLOY_PREFIX + op for op in absent]
            what = [f"{N.GPU_PRESENT} is {present!r}" if present is not None else f"no {N.GPU_PRESENT}"] \
                if present != "true" else []
            what += [f"{len(absent)} operand label{'s' if len(absent) != 1 else ''} missing"] if absent else []
            add(ERROR, "GA117", "the operator has not labelled the node: " + ", ".join(what), evidence,
                "the operator adds these labels to every node NFD reports with an NVIDIA PCI device and keeps them; "
                "missing ones mean it does not reconcile the node: check the gpu-operator pod's log, the "
                "ClusterPolicy's state and NFD's feature.node.kubernetes.io/pci-10de.present label")
            found.append("GA117")
        off_error, off_warning = {}, {}
        for op, value in zip(expected, values) if "false" in values or N.DRIVER_PREINSTALLED in values else ():
            if value == "false" or (op == "driver" and value == N.DRIVER_PREINSTALLED):
                needed = op in (*N.GPU_OPERANDS, *N.DRA_GPU_OPERANDS) or (op == N.MIG_MANAGER and pool.mig)
                (off_error if needed else off_warning)[N.DEPLOY_PREFIX + op] = value
        for severity, off in ((ERROR, off_error), (WARNING, off_warning)):
            if not off:
                continue
            names = ", ".join(k.removeprefix(N.DEPLOY_PREFIX) for k in sorted(off))
            if off.get(N.DEPLOY_DRIVER) == N.DRIVER_PREINSTALLED:
                hint = ("the driver manager found a driver on the host and switched the operator's off "
                        f"({N.DEPLOY_DRIVER}=pre-installed): use a node image without a driver, or declare the pool "
                        "driver: {preinstalled: true}")
            elif severity == ERROR:
                hint = ("a deploy label set to false keeps that operand off the node, and the operator keeps the "
                        "value: remove the label (the operator puts back true), unless the intent is wrong")
            else:
                hint = ("the GPUs work, but the node's metrics are missing: remove the label"
                        + ("s" if len(off) > 1 else ""))
            add(severity, "GA118", f"operand{'s' if len(off) > 1 else ''} switched off: {names}",
                dict(sorted(off.items())), hint)
            if severity == ERROR:
                found.append("GA118")
        # Both managers pause every operand they find deployed in one update: a paused label among the expected
        # ones shows that there are any.
        maybe = N.PAUSED_FOR_MIG in values or N.PAUSED_FOR_DRIVER in values
        paused = {k: v for k, v in (self._paused(labels).get("paused operands", {}) if maybe else {}).items()
                  if (v == N.PAUSED_FOR_MIG and mig_state not in (*N.MIG_IN_PROGRESS, "failed"))
                  or (v == N.PAUSED_FOR_DRIVER and upgrade_state in (None, N.UPGRADE_DONE))}
        if paused:
            needed = any(k.removeprefix(N.DEPLOY_PREFIX) in N.GPU_OPERANDS for k in paused)
            state = {N.MIG_STATE: mig_state} if mig_state is not None else {}
            if upgrade_state is not None:
                state[N.UPGRADE_STATE] = upgrade_state
            who = "nvidia-mig-manager" if N.PAUSED_FOR_MIG in paused.values() else "the driver manager"
            add(ERROR if needed else WARNING, "GA119",
                f"operand{'s' if len(paused) > 1 else ''} left paused: "
                + ", ".join(k.removeprefix(N.DEPLOY_PREFIX) for k in sorted(paused)),
                {"paused operands": dict(sorted(paused.items())), **state},
                f"{who} pauses operands while it reconfigures and restores them when done; its work is over, so it "
                "did not finish: read its log on the node, then set the labels back to true")
            if needed:
                found.append("GA119")
        return found

    def _taints(self, pool: _Pool, node: N.NodeFacts, add: Any) -> None:
        """GA105 (a declared taint missing or with another value) and GA120 (a taint the pool does not declare)."""
        lost = [t for t in pool.taints if t not in node.taints]
        extra = [t for t in node.taints if t not in pool.taints and not t[0].startswith(N.SYSTEM_TAINT_PREFIXES)
                 and t[2] in ("NoSchedule", "NoExecute") and (t[0], t[2]) != N.GPU_TAINT]
        lost_keys = {t[0] for t in lost}
        changed = [t for t in extra if t[0] in lost_keys]  # the declared key with another value or effect
        if lost:
            add(ERROR, "GA105", "missing taint " + ", ".join(_taint(t) for t in lost),
                {"expected": [_taint(t) for t in lost], "actual": [_taint(t) for t in node.taints]},
                "the node has the key with another value or effect: the pool's tolerations do not cover it" if changed
                else "without the taint, pods that do not tolerate it land on the pool's GPUs")
        for severity, effect in ((ERROR, "NoExecute"), (WARNING, "NoSchedule")):
            undeclared = [t for t in extra if t[2] == effect and t not in changed]
            if not undeclared:
                continue
            add(severity, "GA120", f"undeclared {effect} taint " + ", ".join(_taint(t) for t in undeclared),
                {"undeclared": [_taint(t) for t in undeclared], "declared": [_taint(t) for t in pool.taints]},
                "NoExecute evicts every pod that does not tolerate it, the GPU operands included (the rendered "
                "tolerations cover only the pools' declared taints): add it to the pool's taints, or remove it"
                if effect == "NoExecute" else
                "new pods that do not tolerate it, GPU operands included (restarted or upgraded ones too), no longer "
                "start on the node: add it to the pool's taints, or remove it")
        return [_taint(t) for t in extra]

    def _allocatable(self, pool: _Pool, node: N.NodeFacts, in_flux: bool, causes: list[str], add: Any) -> None:
        """GA107: each resource of the pool against what its sharing promises, per resource name."""
        labels = node.labels
        short, extra = {}, {}
        for resource, want in sorted(pool.resources.items()):
            got = node.units(resource)
            if got is None or got < want:
                short[resource] = {"allocatable": node.allocatable.get(resource), "expected": want}
            elif got > want:
                extra[resource] = {"allocatable": node.allocatable.get(resource), "expected": want}
        if not (short or extra):
            return
        explained = short and in_flux and not causes
        what = []
        for resource, e in short.items():
            state = "absent" if e["allocatable"] is None else "zero" if node.units(resource) == 0 else "below"
            what.append(f"{resource} {state} ({e['allocatable'] or 0} of {e['expected']})")
        what += [f"{r} above ({e['allocatable']} of {e['expected']})" for r, e in extra.items()]
        evidence = {**short, **extra, "allocatable": N.nvidia_resources(node.allocatable)}
        if in_flux:
            evidence["reconfiguring"] = {k: labels[k] for k in (N.MIG_STATE, N.UPGRADE_STATE)
                                         if labels.get(k) not in (None, "", "success", N.UPGRADE_DONE)}
        if not short:
            hint = "the node advertises more than the intent's sharing promises: quotas are computed from the intent"
        elif causes:
            hint = self._explained_by(causes)
        elif explained:
            hint = "the node is being reconfigured (MIG or driver upgrade): audit again when that is done"
        elif pool.mig:
            hint = ("the pool's MIG layout is not in place: check nvidia.com/mig.config.state and the "
                    "nvidia-mig-manager log on the node (it applies the layout; the device plugin only advertises "
                    "what exists)")
        else:
            hint = "check the device plugin pod on the node and the config its label selects"
        add(ERROR if short and not explained else WARNING, "GA107", "; ".join(what), evidence, hint)

    @staticmethod
    def _explained_by(causes: list[str]) -> str:
        """The hint of a GPU-losing finding: the findings on the node that explain it (the diagnosis puts the cause
        it found in front, in words: lost.lead_with)."""
        return f"explained by {', '.join(dict.fromkeys(causes))} on this node"

    def _published(self, pool: _Pool, node: N.NodeFacts, causes: list[str], add: Any) -> None:
        """GA130: per DeviceClass of the pool, the devices the driver publishes on the node that its selector
        selects, against what the pool promises per node."""
        from .. import dra

        devices = self.slices.get(node.name, [])
        counts = self._device_counts(pool, node)
        short, extra = {}, {}
        for resource, want in sorted(pool.resources.items()):
            name, got = dra.class_of_key(resource), counts[resource]
            if got < want:
                short[name] = {"published": got, "expected": want}
            elif got > want:
                extra[name] = {"published": got, "expected": want}
        if not (short or extra):
            return
        what = [f"{n}: {e['published']} of {e['expected']} devices" for n, e in {**short, **extra}.items()]
        if not devices:
            hint = ("the node's driver publishes no devices (no ResourceSlice of gpu.nvidia.com names the node): "
                    "check the nvidia-dra-driver kubelet plugin pod on the node and its log")
        elif causes:
            hint = self._explained_by(causes)
        elif short and pool.mig:
            hint = ("the pool's MIG instances are not all there: with migPartitions external, make the layout and "
                    "restart the driver's kubelet plugin (it publishes only instances that exist when it starts)")
        elif short:
            hint = "the class selects fewer devices than the node has GPUs: check the devices' productName in its slice"
        else:
            hint = "the node publishes more than the intent promises: quotas are computed from the intent"
        add(ERROR if short else WARNING, "GA130", "; ".join(what),
            {**short, **extra, "devices": len(devices)}, hint)

    def _device_counts(self, pool: _Pool, node: N.NodeFacts) -> dict[str, int]:
        """Per resource (quota key) of the pool: the node's published devices its class's selector selects."""
        from .. import dra
        from ..render.dra import device_classes

        cached = getattr(self, "_counted", None)
        if cached is not None and cached[0] == node.name:
            return cached[1]
        if not hasattr(self, "_selectors"):
            self._selectors = {d["metadata"]["name"]: d["spec"]["selectors"][0]["cel"]["expression"]
                               for d in device_classes(self.plan)}
        devices = self.slices.get(node.name, [])
        counts = {r: sum(1 for d in devices if dra.matches(self._selectors[dra.class_of_key(r)], d))
                  for r in pool.resources}
        self._counted = (node.name, counts)
        return counts

    def _published_model(self, node: str) -> str | None:
        """The catalogue model of the GPUs a node's devices name (productName), when they name exactly one."""
        from .. import dra

        names = {d["attributes"].get(dra.DOMAIN, {}).get("productName") for d in self.slices.get(node, [])}
        models = {m for m, spellings in dra.PRODUCT_NAMES.items() if names & set(spellings)}
        return models.pop() if len(models) == 1 else None

    def _label_source(self, pool: _Pool) -> str:
        """What puts the pool's labels on its nodes (render.nodes.label_source), computed once per pool."""
        from ..render.nodes import label_sources

        if not self._label_sources:
            self._label_sources.update(label_sources(self.plan))
        return self._label_sources[pool.name]

    @classmethod
    def _mig_evidence(cls, labels: Mapping[str, str]) -> dict:
        evidence = {k: labels[k] for k in (N.MIG_STATE, P.MIG_LABEL) if k in labels}
        evidence.update(cls._paused(labels))
        return evidence

    @staticmethod
    def _paused(labels: Mapping[str, str]) -> dict:
        """{"paused operands": {label: value}} for the deploy labels mig-manager or the driver manager paused."""
        paused = {k: labels[k] for k in N.PAUSABLE if labels.get(k) in (N.PAUSED_FOR_MIG, N.PAUSED_FOR_DRIVER)}
        return {"paused operands": dict(sorted(paused.items()))} if paused else {}

    # -- the pools ----------------------------------------------------------------------------------------------

    def _first_sync(self, pool: _Pool) -> None:
        """Labels the render sets that no node of the pool carries, gpuconf.dev/pool among them: gpuconf has not been
        applied there yet, which is not drift. One GA123 warning for the pool, with what applies them, replaces those keys in every node's
        GA103; GA103 stays for the labels some nodes carry and others lost."""
        if not pool.checked:
            return
        pending = {k: v for k, v in pool.labels.items() if not pool.labelled[k]}
        if P.POOL_LABEL not in pending:
            return  # some node carries gpuconf's own pool label: the render reached the pool, and lost labels drift
        names: list[str] = []
        for found in pool.checked:
            for i, drift in enumerate(found):
                if drift.code != "GA103":
                    continue
                names.append(drift.node)
                lost = {k: v for k, v in drift.evidence["expected"].items() if k not in pending}
                if not lost:
                    del found[i]
                else:
                    found[i] = replace(drift, message=f"missing label{'s' if len(lost) > 1 else ''} "
                                       f"{', '.join(sorted(lost))} (other nodes of the pool carry them)",
                                       evidence={**drift.evidence, "expected": dict(sorted(lost.items()))})
                break
        from ..render.nodes import kubectl_label

        source = self._label_source(pool)
        selector = dict(pool.node_labels) if not pool.nfd else None
        command = kubectl_label(pending, nodes=None if selector else sorted(names), selector=selector)
        count = len(pool.checked)
        self.result.findings.append(Drift(
            WARNING, "GA123", "", pool.name,
            f"first sync pending: none of the pool's {count} node{'s' if count != 1 else ''} carries "
            f"{', '.join(sorted(pending))} yet (gpuconf's render has not been applied)",
            {"labels": dict(sorted(pending.items())), "nodes": count, "source": source, "command": command},
            f"sync the rendered folder: {source} sets them"
            + (" on every node, existing ones included" if pool.nfd else " on nodes created from now on")
            + f"; to label the nodes there now: {command}"))

    def finish(self) -> AuditResult:
        """Pool-level checks (node counts, driver skew), then the findings in a stable order."""
        result = self.result
        self.memo.settle()
        operands = self.operands() if callable(self.operands) else self.operands
        for pool in self.pools:
            report = pool.report
            if operands is not None:
                L.diagnose_pool(self, pool, operands)
            self._first_sync(pool)
            L.kernel_skew(self, pool)
            if self.fabric is not None:
                result.findings += self.fabric.finish(pool.name, report.matched, operands)
            for found in pool.checked:
                kind = "drifting" if any(f.severity in (ERROR, WARNING) for f in found) else \
                    "unavailable" if found else "healthy"
                setattr(report, kind, getattr(report, kind) + 1)
                setattr(result, kind, getattr(result, kind) + 1)
                result.findings.extend(found)
            pool.checked = []
            if report.matched != report.declared:
                fewer = report.matched < report.declared
                result.findings.append(Drift(
                    ERROR if fewer else WARNING, "GA115", "", pool.name,
                    f"{report.matched} node{'s' if report.matched != 1 else ''} match, the pool declares "
                    f"{report.declared}", {"matched": report.matched, "declared": report.declared},
                    "nodes missing from the pool are missing GPUs: see GA101/GA102 for nodes that match no or "
                    "several pools" if fewer else "update the pool's node count: quotas and reports use it"))
            limit = self.max_unavailable
            if limit is not None and pool.down and limit.exceeded(len(pool.down), report.declared):
                result.findings.append(Drift(
                    ERROR, "GA122", "", pool.name,
                    f"{len(pool.down)} of {report.declared} nodes are NotReady or cordoned, more than "
                    f"--max-unavailable {limit} allows",
                    {"unavailable": len(pool.down), "declared": report.declared, "maxUnavailable": str(limit),
                     "nodes": sorted(pool.down)[:10] + ([f"... ({len(pool.down) - 10} more)"]
                                                         if len(pool.down) > 10 else [])},
                    "the pool has lost that much capacity: see the GA113/GA114 lines for each node (raise "
                    "--max-unavailable for planned maintenance)"))
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
        if operands is not None:
            result.findings += L.waiting_work(self, operands.waiting)
        order = {p.name: i for i, p in enumerate(self.pools)}
        result.findings.sort(key=lambda f: (order.get(f.pool, len(order) + (f.pool == MULTI)), f.node, f.code,
                                            f.message))
        return result


def _wrong_hint(wrong: Mapping[str, tuple[str, str]]) -> str:
    """GA104's hint: the operator's own preset and a config from before gpuconf explain a value as well as a hand."""
    fix = ("`kubectl label node --overwrite` it back once the render is synced, or fix the intent if the node is "
           "right (`gpuconf diff --against-installation` shows what the sync changes on the node)")
    mig = wrong.get(P.MIG_LABEL)
    if mig is not None and mig[0] == P.MIG_DISABLED:
        return (f"{P.MIG_DISABLED} is the operator's own preset on MIG-capable nodes without a mig.config label, so "
                "the render's MIG config has not reached the node (a sync labels it, and mig-manager then "
                f"repartitions the GPUs); {fix}")
    return ("a value the render does not set: a config from before gpuconf (a render not applied yet) or a hand-set "
            f"label; {fix}")


def _taint(t: tuple[str, str, str]) -> str:
    key, value, effect = t
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def audit(plan: P.Plan, nodes: Iterable[Mapping[str, Any]], source: str,
          max_unavailable: Threshold | None = Threshold.parse(Threshold.DEFAULT),
          slices: Mapping[str, list] | None = None, operands: Any = None,
          fabric_slices: Mapping[str, list] | None = None) -> AuditResult:
    """Audit a stream of Node objects against a valid intent's plan (on a DRA cluster, with the devices its
    ResourceSlices publish per node; with the operator's pods, a diagnosis of each node that lost GPUs; with NVLink
    pools, the ComputeDomain driver's devices per node)."""
    auditor = Auditor(plan, source, max_unavailable, slices, operands, fabric_slices)
    if hasattr(nodes, "parts"):  # a mapped list (cluster.nodescan): alike nodes in bulk
        auditor.memo.add_mapped(nodes)
    else:
        for node in nodes:
            auditor.add(node)
    return auditor.finish()


def audit_path(intent_path: str, nodes: Iterable[Mapping[str, Any]], source: str,
               max_unavailable: Threshold | None = Threshold.parse(Threshold.DEFAULT), slices: Any = None,
               cluster: str | None = None, operands: Any = None):
    """Validate the intent file (an intent, or a fleet with cluster naming the one the nodes belong to) and, when it
    is valid, audit the nodes against its plan.

    `operands` (a callable of the operator's namespace) gives the operator's pods (cluster.operands.Operands).
    Returns (validation, result); result is None when the intent is invalid. Raises NodeSourceError when the nodes
    cannot be read, inputs.SelectionError when cluster names no cluster of the file or a fleet has no cluster named.
    """
    from ..intent.inputs import read_input
    from ..intent.validate import Validation

    read = read_input(intent_path)
    chosen = read.one(cluster, "an audit compares one cluster's nodes with its intent")
    if not read.valid(chosen):
        return Validation(read.file, findings=read.findings_of(chosen)), None
    [picked] = chosen
    validation = picked.validation
    plan = P.build(validation.intent, picked.source, validation.document)
    if plan.intent.spec.cluster.allocation == "dra":
        from .nodesource import NodeSourceError

        if slices is None:
            raise NodeSourceError("the cluster allocates GPUs with DRA: its nodes advertise no GPU resources, so "
                                  "the audit reads the devices its ResourceSlices publish: give --resource-slices "
                                  "FILE (kubectl get resourceslices -o json) or --kubeconfig")
        slices = slices() if callable(slices) else slices
    elif slices is not None and any(p.pool.nvlink is not None for p in plan.pools):
        from ..render.nvlink import CD_DRIVER  # the ComputeDomain driver's slices, for the NVLink pools

        slices = slices(CD_DRIVER) if callable(slices) else slices
    if callable(operands):
        from ..render import nvlink

        found = operands(plan.namespace, *((nvlink.namespace(plan),) if nvlink.release(plan) else ()))
    else:
        found = operands
    return validation, audit(plan, nodes, source, max_unavailable,
                             slices if plan.intent.spec.cluster.allocation == "dra" else None, found,
                             getattr(slices, "compute_domains", None))

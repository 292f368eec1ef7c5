"""Domain rules of the known hazards (GC460-GC468): the documented breakages an intent runs into, per pool, and the
chart's own fail rules.

Registered into rules.RULES like the other domain rules (the package's __init__ loads this module). The table is
gpuconf.hazards (profiles/hazards.json, derived from tools/reference/hazards.yaml); each finding names the entry's id,
says what breaks, and its hint gives the fix and the source lines.
"""

from __future__ import annotations

from typing import Iterator

from ... import hazards as H
from ...findings import ERROR, WARNING, Finding
from .base import Context, rule

CHART = ("spec", "operator", "chartVersion")
KUBERNETES = ("spec", "cluster", "kubernetesVersion")


def _findings(ctx: Context) -> list[Finding]:
    """Every hazard finding of the intent (GC460-GC467), computed once per check."""
    cached = getattr(ctx, "_hazard_findings", None)
    if cached is not None:
        return cached
    values = H.values_of(ctx.intent, ctx.doc)
    facts = H.intent_facts(ctx.intent, values)
    out: list[Finding] = []
    seen: set[str] = set()
    for verdict in H.matching(facts.cluster, "validate", pool_level=False):
        if verdict.applies:
            out.append(_finding(ctx, verdict.hazard, _cluster_loc(verdict.hazard), ""))
    for i, pool_facts in enumerate(facts.pools):
        pool = ctx.intent.spec.pools[i]
        for verdict in H.matching(pool_facts.facts, "validate", pool_level=True):
            if not verdict.applies:
                continue
            hazard = verdict.hazard
            what = [f"pool {pool.name}", f"GPU {pool_facts.facts.gpu}"]
            if pool_facts.facts.driver and "drivers" in hazard.applies:
                what.append(f"driver {pool_facts.facts.driver}")
            out.append(_finding(ctx, hazard, _pool_loc(ctx, hazard, i, pool_facts), f" ({', '.join(what)})"))
            seen.add(hazard.id)
    setattr(ctx, "_hazard_findings", out)
    return out


def _finding(ctx: Context, hazard: H.Hazard, loc: tuple, what: str) -> Finding:
    # An intent can only approximate some conditions (H.APPROXIMATE): it says what nodes may come to run, so the
    # finding warns; the audit, which sees what a node runs, reports the entry at its own severity.
    approximate = H.APPROXIMATE & set(hazard.applies.get("features", ()))
    severity = ERROR if hazard.severity == "error" and not approximate else WARNING
    note = f" ({H.APPROXIMATE_NOTE})" if approximate else ""
    return ctx.finding(hazard.code, loc, f"known hazard {hazard.id}{what}: {hazard.breaks}{note}",
                       f"{hazard.fix}; source: {hazard.cite()}", severity=severity)


def _cluster_loc(hazard: H.Hazard) -> tuple:
    if {"crio", "nri"} & set(hazard.applies.get("features", ())):
        return ("spec", "cluster", "containerRuntime")
    if "distributions" in hazard.applies:
        return ("spec", "cluster", "distribution")
    if "kubernetes" in hazard.applies:
        return KUBERNETES
    return CHART


def _pool_loc(ctx: Context, hazard: H.Hazard, i: int, pool_facts: H.PoolFacts) -> tuple:
    pool = ("spec", "pools", i)
    if "drivers" in hazard.applies and pool_facts.driver_loc is not None:
        return pool_facts.driver_loc
    if "kernelModules" in hazard.applies and ctx.intent.spec.driver.kernel_module_type:
        return ("spec", "driver", "kernelModuleType")
    if "gpus" in hazard.applies:
        return (*pool, "gpu")
    if {"mig", "migNextToWhole", "allBalanced"} & set(hazard.applies.get("features", ())):
        return (*pool, "sharing")
    return (*pool, "name")


def _register(code: str) -> None:
    def check(ctx: Context) -> Iterator[Finding]:
        return iter([f for f in _findings(ctx) if f.code == code])

    check.__doc__ = _DOCS[code]
    rule(code, H.codes()[code])(check)


_DOCS = {
    "GC460": "A pool's driver version is one the release notes list as broken for what the pool runs (drivers "
             "570.124.06, 570.133.20, 570.148.08 and 570.158.01 on nodes with MIG slices next to whole GPUs); the "
             "hint gives the fixed version and the source lines. gpuconf gives every GPU of a node one layout, so in "
             "an intent the condition is a MIG pool and a whole-GPU pool of one model under the mixed strategy, and "
             "the finding is a warning; `gpuconf audit` reports a node that carries both. `gpuconf hazards` lists "
             "the table.",
    "GC461": "A pool's driver is below the floor of its GPU or stack: RTX PRO 6000 needs 575.57.08, HGX B200 "
             "570.133.20, the GPUCluster (DRA) stack a 580 driver.",
    "GC462": "The GPU or a feature needs the open GPU kernel modules (GH200, GPUDirect Storage), and the driver "
             "installs the proprietary ones (kernelModuleType proprietary, or auto with a driver before 570.86.15).",
    "GC463": "A feature the pool's GPU and driver do not run together: MIG on RTX PRO 6000 with 575.57.08, MIG or "
             "GPUDirect Storage on GH200/GB200 with a driver from 580.65.06 (CDMM).",
    "GC464": "A known issue of the pinned chart, one of its components (Container Toolkit, MIG Manager) or the "
             "platform for what the cluster runs (RKE2 with CDI, GKE 1.33 with chart 25.10.0, NRI with CRI-O, ...).",
    "GC467": "(warning) The Kubernetes version is outside what the pinned chart is validated with.",
}

for _code in ("GC460", "GC461", "GC462", "GC463", "GC464", "GC467"):
    _register(_code)


def _truthy(value) -> bool:
    """Go template truth: nil, false, 0, "" and empty maps and lists are false."""
    return value not in (None, False, 0, "") and value != {} and value != []


def _trips(cond: dict, values: dict) -> bool:
    value = H._get(values, cond["path"])
    if cond["is"] == "empty":
        return not _truthy(value)
    return _truthy(value) == cond["is"]


@rule("GC468", "the rendered values trip one of the chart's own fail rules")
def chart_fail_rules(ctx: Context) -> Iterator[Finding]:
    """The values a render would give (the chart's defaults, gpuconf's changes, the overrides) trip a `fail` of the
    pinned chart's templates/validations.yaml, so Helm would refuse them at sync: both the ClusterPolicy and the
    GPUCluster, a GPUCluster without the NVIDIADriver CRD, NRI without CDI or the toolkit, a device-plugin config
    created empty, a GPUCluster on a cluster that serves no DRA API."""
    chart = ctx.intent.spec.operator.chart_version
    rules = H.chart_rules(chart)
    if not rules:
        return
    values = H.values_of(ctx.intent, ctx.doc)
    if values is None:
        return
    from ... import dra

    overrides = ctx.intent.spec.overrides
    for chart_rule in rules:
        if not all(_trips(c, values) for c in chart_rule["when"]):
            continue
        if chart_rule.get("capability"):
            if dra.enabled(ctx.intent):
                continue  # GC430 refuses allocation dra below Kubernetes 1.34 first
            major, minor = (int(p) for p in ctx.intent.spec.cluster.kubernetes_version.split(".")[:2])
            if (major, minor) >= dra.MIN_KUBERNETES:  # resource.k8s.io/v1 is served by default from 1.34
                continue
        paths = [c["path"] for c in chart_rule["when"]]
        loc = next((("spec", "overrides", i, "path") for i, o in enumerate(overrides)
                    if any(p == o.path or p.startswith(o.path + ".") for p in paths)), CHART)
        source = chart_rule["source"]
        yield ctx.finding("GC468", loc, f"chart {chart} refuses these values at sync ({chart_rule['id']}: "
                          f"{chart_rule['breaks']}): {', '.join(f'{p} is {_shown(H._get(values, p))}' for p in paths)}",
                          f"change the intent or the override so that the rule holds; source: the chart's "
                          f"{source['template']}:{source['lines'][chart]} "
                          f"({source['chart'].replace('<version>', chart)})")


def _shown(value) -> str:
    import json

    return json.dumps(value) if value is not None else "unset"

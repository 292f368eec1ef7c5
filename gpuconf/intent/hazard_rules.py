"""Domain rules of the known hazards (GC460-GC468): the documented breakages an intent runs into, per pool.

Registered into rules.RULES like the other domain rules (rules.py imports this module). The table is gpuconf.hazards
(profiles/hazards.json, derived from tools/reference/hazards.yaml); each finding names the entry's id, says what
breaks, and its hint gives the fix and the source lines.
"""

from __future__ import annotations

from typing import Iterator

from .. import hazards as H
from ..findings import ERROR, WARNING, Finding
from .rules import Context, rule

CHART = ("spec", "operator", "chartVersion")
KUBERNETES = ("spec", "cluster", "kubernetesVersion")


def _findings(ctx: Context) -> list[Finding]:
    """Every hazard finding of the intent (GC460-GC467), computed once per check."""
    cached = getattr(ctx, "_hazard_findings", None)
    if cached is not None:
        return cached
    values = H.values_of(ctx.intent)
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
    return ctx.finding(hazard.code, loc, f"known hazard {hazard.id}{what}: {hazard.breaks}",
                       f"{hazard.fix}; source: {hazard.cite()}", severity=ERROR if hazard.severity == "error" else WARNING)


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
             "570.124.06, 570.133.20, 570.148.08 and 570.158.01 with MIG slices and whole GPUs of one model under the "
             "mixed strategy); the hint gives the fixed version and the source lines. `gpuconf hazards` lists the "
             "table.",
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

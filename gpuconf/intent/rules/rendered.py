"""Rules of what the rendered chart makes of the values: the single MIG strategy's one resource name (GC350), override
values that the templates' `default` replaces (GC351), upgrade pod selectors the chart prints unquoted (GC352)."""

from __future__ import annotations

from typing import Iterator

from ... import catalog, plan
from ...findings import WARNING, Finding
from ..model import ClusterIntent
from .base import Context, rule
from .syntax import selector_problem, shown


@rule("GC350", "the single MIG strategy gives different slices one resource name")
def single_strategy_ambiguity(ctx: Context) -> Iterator[Finding]:
    """(warning) under the single MIG strategy, pools whose `nvidia.com/gpu` means different things (a slice of
    one size, of another, a whole GPU) cannot be told apart by quotas or requests; `migStrategy: mixed` gives
    each profile its own resource."""
    if ctx.strategy != "single":
        return
    units: dict[str, list[str]] = {}  # what one nvidia.com/gpu is -> pools
    for pool in ctx.intent.spec.pools:
        model = catalog.gpu_model(pool.gpu)
        profile = plan.pool_profile(ctx.intent, pool)
        cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
        if model is None or profile is None or cap is None or plan.GPU not in cap.per_node:
            continue
        layout = plan.mig_layout(profile, model)
        unit = f"a {next(iter(layout))} slice of an {model.id}" if layout else f"a whole {model.id}"
        units.setdefault(unit, []).append(pool.name)
    if len(units) < 2 or not any(" slice " in unit for unit in units):
        return
    pinned = ctx.intent.spec.cluster.mig_strategy == "single"
    loc = ("spec", "cluster", "migStrategy") if pinned else ("spec", "sharingProfiles")
    told = "; ".join(f"{', '.join(pools)}: {unit}" for unit, pools in sorted(units.items()))
    yield ctx.finding("GC350", loc, f"with the single MIG strategy every pool advertises {plan.GPU}, so a quota or a "
                      f"pod's request cannot tell these apart ({told})",
                      "migStrategy: mixed gives each MIG profile its own resource (nvidia.com/mig-<profile>)"
                      + ("" if pinned else "; pin it under spec.cluster"), severity=WARNING)


@rule("GC351", "overrides set no value the chart's templates replace")
def override_helm_default(ctx: Context) -> Iterator[Finding]:
    """An override sets a value the chart's templates replace through Helm's `default`
    (`driver.upgradePolicy.maxUnavailable: 0` becomes 25%; `licensingConfig.nlsEnabled: false` in the chart's
    default NVIDIADriver becomes true)."""
    from ...render import chart as C

    facts = catalog.chart(ctx.intent.spec.operator.chart_version)
    if facts is None or not ctx.intent.spec.overrides:
        return
    default_cr = None
    for i, override in enumerate(ctx.intent.spec.overrides):
        parts = override.path.split(".")
        for path, quirk in sorted(facts.helm_defaults.items()):
            keys = path.split(".")
            if parts != keys[:len(parts)]:
                continue
            found, value = True, override.value
            for key in keys[len(parts):]:
                if not isinstance(value, dict) or key not in value:
                    found = False
                    break
                value = value[key]
            if not found or not C.empty(value) or value == quirk["becomes"]:
                continue
            if quirk["when"] == "defaultNVIDIADriver":
                if default_cr is None:
                    default_cr = _renders_default_nvidiadriver(ctx.intent, ctx.doc)
                if not default_cr:
                    continue
            inside = tuple(keys[len(parts):])
            where = " and ".join(f"templates/{name}" for name in quirk["templates"])
            hint = ('write "0%" for no node at all: the operator reads it as the same number'
                    if path.endswith("maxUnavailable") else
                    "the chart cannot render this value; leave it out" if quirk["when"] == "always" else
                    "the chart's default NVIDIADriver cannot carry it; give the pools their own driver versions, or "
                    "leave it out")
            yield ctx.finding("GC351", ("spec", "overrides", i, "value", *inside),
                              f"{path} = {shown(value)} never reaches the cluster: {where} read it as "
                              f"`{keys[-1]} | default {shown(quirk['becomes'])}`, and Helm's default replaces an "
                              f"empty value, so it becomes {shown(quirk['becomes'])}", hint, at_key=bool(inside))


def _renders_default_nvidiadriver(intent: ClusterIntent, document) -> bool:
    """Whether the chart renders its NVIDIADriver/default for this intent (False when it cannot be planned)."""
    from ...render import chart as C
    from ...render.values import build_values

    if any(catalog.gpu_model(p.gpu) is None or plan.pool_profile(intent, p) is None for p in intent.spec.pools):
        return False
    return C.default_nvidiadriver(build_values(plan.build(intent, "", document)).merged()) is not None


@rule("GC352", "upgrade pod selectors are label selectors the chart renders intact")
def upgrade_pod_selectors(ctx: Context) -> Iterator[Finding]:
    """Upgrade pod selectors (`drain.podSelector`, `waitForCompletion.podSelector`) are Kubernetes label
    selectors that the chart, which prints them unquoted, renders intact (`!key` reads back as a YAML tag)."""
    from ...render import chart as C

    up = ctx.intent.spec.driver.upgrade
    found: list[tuple[tuple, str]] = []
    if up is not None:
        if up.drain is not None and up.drain.pod_selector:
            found.append((("spec", "driver", "upgrade", "drain", "podSelector"), up.drain.pod_selector))
        if up.wait_for_completion is not None:
            found.append((("spec", "driver", "upgrade", "waitForCompletion", "podSelector"),
                          up.wait_for_completion.pod_selector))
    for i, override in enumerate(ctx.intent.spec.overrides):
        for sub in ("drain", "waitForCompletion"):
            path = f"driver.upgradePolicy.{sub}.podSelector"
            if override.path == path and isinstance(override.value, str) and override.value:
                found.append((("spec", "overrides", i, "value"), override.value))
    for loc, selector in found:
        problem = selector_problem(selector)
        if problem:
            yield ctx.finding("GC352", loc, f"{selector!r} is not a label selector: {problem}",
                              "e.g. app.kubernetes.io/component=training or 'tier in (batch,train)'")
            continue
        try:
            reads = C.unquoted(selector, "podSelector")
        except C.TemplateError:
            reads = None
        if reads != selector:
            back = (f"as {shown(reads)}" if reads is not None else
                    "as no string at all (a leading ! starts a YAML tag)")
            yield ctx.finding("GC352", loc, f"the chart prints the selector {selector!r} unquoted, and YAML reads it "
                              f"back {back}, so the operator never sees it",
                              "select on a label the pods carry (key=value) instead")

"""Rules of the driver and the container runtime: coherent driver settings, per-pool versions and the chart they
need, upgrade waves, driver tags, roll-outs forward, runtime settings the toolkit can use (GC316, GC321, GC323,
GC324, GC327, GC329, GC389, GC390)."""

from __future__ import annotations

import re
from typing import Iterator

from ... import catalog, plan
from ...findings import WARNING, Finding
from ..model import ClusterIntent, Pool
from .base import Context, hint_choices, pool_loc, rule


@rule("GC324", "driver settings are coherent")
def driver_coherent(ctx: Context) -> Iterator[Finding]:
    """Driver settings are coherent (preinstalled and a version; empty pool driver)."""
    spec = ctx.intent.spec
    if spec.driver.preinstalled and spec.driver.version:
        yield ctx.finding("GC324", ("spec", "driver", "version"),
                          "a preinstalled driver has no version for the operator to manage",
                          "remove version, or set preinstalled: false")
    for i, pool in enumerate(spec.pools):
        if pool.driver is None:
            continue
        if pool.driver.preinstalled and pool.driver.version:
            yield ctx.finding("GC324", pool_loc(i, "driver", "version"),
                              "a preinstalled driver has no version for the operator to manage",
                              "remove version, or set preinstalled: false")
        elif not pool.driver.preinstalled and not pool.driver.version:
            yield ctx.finding("GC324", pool_loc(i, "driver"), "pool driver sets neither version nor preinstalled",
                              "remove the driver block to use the cluster default", severity=WARNING)
        elif plan.cluster_preinstalled(ctx.intent) and pool.driver.preinstalled:
            yield ctx.finding("GC324", pool_loc(i, "driver", "preinstalled"),
                              "the cluster default is already preinstalled", "remove the pool's driver block",
                              severity=WARNING)


@rule("GC329", "per-pool driver versions need a chart with the NVIDIADriver fallback")
def per_pool_driver_chart(ctx: Context) -> Iterator[Finding]:
    """Per-pool driver versions and upgrade waves need a chart whose NVIDIADriver has `spec.default` (the fallback
    driver that makes the per-pool selectors provably disjoint; capability perPoolDrivers, from v26.7.0); on older
    charts the default driver's nodeSelector cannot be proven disjoint."""
    version = ctx.intent.spec.operator.chart_version
    facts = catalog.chart(version)
    if facts is None or facts.can("perPoolDrivers"):
        return
    first = catalog.first_release_with("perPoolDrivers") or "a newer release"
    for i, pool in enumerate(ctx.intent.spec.pools):
        if pool.driver is not None and pool.driver.version:
            yield ctx.finding("GC329", pool_loc(i, "driver", "version"),
                              f"per-pool driver versions need GPU Operator chart {first} or later (pinned: {version})",
                              "upgrade the chart first, or keep this pool on the cluster driver for now")
    upgrade = ctx.intent.spec.driver.upgrade
    if plan.wave_mode(ctx.intent):
        key = "waves" if upgrade.waves else "canaryPool" if upgrade.canary_pool else "rollout"
        yield ctx.finding("GC329", ("spec", "driver", "upgrade", key),
                          f"upgrade waves give each pool its own NVIDIADriver, which needs GPU Operator chart {first} "
                          f"or later (pinned: {version})",
                          "upgrade the chart first; until then a new driver.version reaches every pool at once")


@rule("GC323", "upgrade waves list pools on the cluster driver, once each")
def upgrade_waves(ctx: Context) -> Iterator[Finding]:
    """Upgrade waves (and `canaryPool`) list existing pools on the cluster driver, each once (not a pinned or
    preinstalled pool); `rollout.wave` is within the waves; a rollout to the version the pools run already
    (warning)."""
    spec = ctx.intent.spec
    upgrade = spec.driver.upgrade
    if upgrade is None:
        return
    pools = {p.name: p for p in spec.pools}
    base = ("spec", "driver", "upgrade")
    listed: list[tuple[tuple, str]] = []
    if upgrade.canary_pool is not None:
        listed.append(((*base, "canaryPool"), upgrade.canary_pool))
        if upgrade.waves:
            yield ctx.finding("GC323", (*base, "canaryPool"), "give canaryPool or waves, not both",
                              "canaryPool: X is the same as waves: [[X]]; list the canary as the first wave")
    listed += [((*base, "waves", i, j), name) for i, wave in enumerate(upgrade.waves) for j, name in enumerate(wave)]
    first: dict[str, tuple] = {}
    for loc, name in listed:
        pool = pools.get(name)
        if pool is None:
            yield ctx.finding("GC323", loc, f"{name!r} is not a pool", hint_choices(name, list(pools), "pools"))
            continue
        if name in first and loc[3] == "waves":
            line, _ = ctx.doc.position(first[name])
            yield ctx.finding("GC323", loc, f"pool {name!r} is in two waves (first on line {line})",
                              "each pool upgrades once, in one wave")
            continue
        first.setdefault(name, loc)
        kind = plan.pool_driver(ctx.intent, pool)
        if kind == "preinstalled":
            yield ctx.finding("GC323", loc, f"pool {name!r} keeps a preinstalled driver, so it never upgrades",
                              "list only pools whose driver the operator manages")
        elif kind != "cluster":
            yield ctx.finding("GC323", loc, f"pool {name!r} pins its own driver version ({kind}), so a new cluster "
                              "driver never reaches it",
                              "remove the pool's driver.version to let it follow the waves, or leave it out of them")
    rollout = upgrade.rollout
    if rollout is None:
        return
    loc = (*base, "rollout")
    if spec.driver.preinstalled:
        yield ctx.finding("GC323", loc, "the cluster driver is preinstalled: there is nothing to roll out",
                          "remove rollout, or set driver.preinstalled: false")
        return
    waves = plan.upgrade_waves(ctx.intent)
    if rollout.wave > len(waves):
        yield ctx.finding("GC323", (*loc, "wave"), f"there are {len(waves)} wave(s), rollout.wave is {rollout.wave}",
                          f"waves 1..{len(waves)}: {'; '.join(', '.join(w) for w in waves) or 'none'}")
    current = spec.driver.version
    chart = catalog.chart(spec.operator.chart_version)
    if chart is not None and rollout.version == (current or chart.defaults["driver"]["version"]):
        yield ctx.finding("GC323", (*loc, "version"), f"the pools already run {rollout.version}: the rollout changes "
                          "nothing", "set rollout.version to the new version, or remove rollout once every wave "
                          "runs it and driver.version is the new one", severity=WARNING)


#: The driver image's tags are `<version>-<os tag>` with a three-part version, `<major>.<minor>.<revision>`
#: (../shared/reference/gpu-operator-facts.md, `driver.version`: 595.91.07 tags 595.91.07-ubuntu24.04; GFD publishes
#: the same three parts as nvidia.com/cuda.driver-version.{major,minor,revision}, nvidia-formats-facts.md). A version
#: of another shape (`470.1`) names no image: the driver pods would fail to pull it. Every shipped chart's default
#: has this shape (tests/test_catalog.py).
DRIVER_TAG = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


def _driver_versions(ctx: Context) -> Iterator[tuple[tuple, str]]:
    """Every driver version the intent names, with its location."""
    spec = ctx.intent.spec
    if spec.driver.version:
        yield ("spec", "driver", "version"), spec.driver.version
    for i, pool in enumerate(spec.pools):
        if pool.driver is not None and pool.driver.version:
            yield pool_loc(i, "driver", "version"), pool.driver.version
    if spec.driver.upgrade is not None and spec.driver.upgrade.rollout is not None:
        yield ("spec", "driver", "upgrade", "rollout", "version"), spec.driver.upgrade.rollout.version


@rule("GC316", "driver versions name a tag of the chart's driver image: <major>.<minor>.<revision>")
def driver_tags(ctx: Context) -> Iterator[Finding]:
    """Driver versions (`spec.driver.version`, a pool's `driver.version`, `rollout.version`) name a tag the chart's
    driver image has: `<major>.<minor>.<revision>` (`595.91.07`, tagged `595.91.07-ubuntu24.04`); a two-part `470.1`
    names no image."""
    chart = catalog.chart(ctx.intent.spec.operator.chart_version)
    example = chart.shared_defaults["driver"]["version"] if chart is not None else "595.91.07"
    for loc, version in _driver_versions(ctx):
        if not DRIVER_TAG.fullmatch(version):
            yield ctx.finding("GC316", loc, f"no driver image has version {version}: the driver's tags are "
                              "<major>.<minor>.<revision>-<os tag>",
                              f"give all three parts, e.g. {example!r} (the chart's default)")


@rule("GC389", "driver versions are ones the pinned chart is validated with")
def driver_matrix(ctx: Context) -> Iterator[Finding]:
    """(Warning) A driver version the intent names is not in the pinned release's component matrix (the drivers
    NVIDIA validates that GPU Operator release with, life-cycle-policy.rst); the hint lists them."""
    chart = catalog.chart(ctx.intent.spec.operator.chart_version)
    if chart is None:
        return
    validated = list(chart.component_matrix.get("drivers", ()))
    for loc, version in _driver_versions(ctx):
        if validated and DRIVER_TAG.fullmatch(version) and version not in validated:
            yield ctx.finding("GC389", loc, f"driver {version} is not one GPU Operator {chart.version} is validated "
                              f"with (its component matrix)",
                              f"validated: {', '.join(validated)}; pick one, or keep {version} knowingly",
                              severity=WARNING)


@rule("GC390", "the pinned chart release has what the intent asks of it")
def chart_capabilities(ctx: Context) -> Iterator[Finding]:
    """A setting the pinned release's chart has no values key for (its capability table, read off the chart): a
    kernel module type needs `driver.kernelModuleType` (from v25.3.0; v24.9.x has only useOpenKernelModules). The
    finding names the first release that has it."""
    chart = catalog.chart(ctx.intent.spec.operator.chart_version)
    if chart is None:
        return
    kind = ctx.intent.spec.driver.kernel_module_type
    if kind is not None and not chart.can("kernelModuleType"):
        first = catalog.first_release_with("kernelModuleType") or "a newer release"
        yield ctx.finding("GC390", ("spec", "driver", "kernelModuleType"),
                          f"chart {chart.version} has no driver.kernelModuleType; it came with {first}",
                          f"pin chartVersion {first} or later; on {chart.version} the override "
                          f"driver.useOpenKernelModules: {'true' if kind == 'open' else 'false'} is the nearest",)


@rule("GC321", "a driver rollout moves to a newer version")
def rollout_forward(ctx: Context) -> Iterator[Finding]:
    """(Warning) `rollout.version` is older than the version the pools run (`spec.driver.version`, else the chart's
    default): a downgrade; undoing a wave is reverting the commit that raised `rollout.wave`."""
    spec = ctx.intent.spec
    rollout = spec.driver.upgrade.rollout if spec.driver.upgrade is not None else None
    chart = catalog.chart(spec.operator.chart_version)
    if rollout is None or chart is None or spec.driver.preinstalled:
        return
    current = spec.driver.version or chart.defaults["driver"]["version"]
    if not (DRIVER_TAG.fullmatch(current) and DRIVER_TAG.fullmatch(rollout.version)):
        return  # GC316 says what is wrong
    if tuple(map(int, rollout.version.split("."))) < tuple(map(int, current.split("."))):
        yield ctx.finding("GC321", ("spec", "driver", "upgrade", "rollout", "version"),
                          f"the rollout moves the pools from {current} down to the older {rollout.version}",
                          "a downgrade is rare: check the version; to undo a wave instead, revert the commit that "
                          "raised rollout.wave", severity=WARNING)


def _driver_preinstalled(intent: ClusterIntent, pool: Pool) -> bool:
    return plan.pool_driver(intent, pool) == "preinstalled"


@rule("GC327", "container runtime settings are ones the toolkit can use")
def runtime_paths(ctx: Context) -> Iterator[Finding]:
    """Container runtime settings the toolkit can use: (warnings) cri-o paths are not rendered, NRI mode with
    cri-o (NVIDIA's documents disagree), paths unused in NRI mode; (error) NRI mode with CDI switched off by an
    override."""
    cluster = ctx.intent.spec.cluster
    runtime = cluster.container_runtime
    loc = ("spec", "cluster", "containerRuntime")
    if runtime is None:
        return
    if runtime.name == "cri-o" and (runtime.config_path or runtime.socket_path):
        yield ctx.finding("GC327", loc,
                          "gpuconf renders runtime paths for containerd only; these cri-o paths would be ignored",
                          "remove them, or set the toolkit's environment through an override", severity=WARNING)
    if runtime.nri:
        from ... import platforms

        nri = platforms.nri()
        if runtime.name == "cri-o":
            yield ctx.finding("GC327", (*loc, "nri"),
                              "NVIDIA's own documents disagree on NRI mode with CRI-O (the v26.3.0 release notes say "
                              "it is not supported)", "use NRI mode with containerd only", severity=WARNING)
        if runtime.config_path or runtime.socket_path:
            yield ctx.finding("GC327", (*loc, "nri"),
                              "in NRI mode the toolkit leaves the runtime's config alone, so the paths are not used",
                              "remove configPath and socketPath", severity=WARNING)
        needed = nri["needs"]
        for i, override in enumerate(ctx.intent.spec.overrides):
            if override.path in needed and override.value != needed[override.path]:
                yield ctx.finding("GC327", ("spec", "overrides", i, "value"),
                                  f"NRI mode needs {override.path}={str(needed[override.path]).lower()}; the chart "
                                  "renders cdi.nriPluginEnabled only then", "remove the override, or NRI mode")

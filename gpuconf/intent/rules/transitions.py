"""Transition rules (GC370-GC379): warnings (and an error, GC373) about the change from the cluster's folder as deployed to this intent,
for the transitions users get wrong. They run only where there is a deployed folder to compare with (`validate
--against DIR`, `diff --against DIR`); the folder is read through report.json (gpuconf.impact.Deployed)."""

from __future__ import annotations

from typing import Iterator

from ...findings import ERROR, WARNING, Finding
from .base import Context, rule


@rule("GC370", "the derived MIG strategy does not flip against the deployed folder")
def mig_strategy_flip(ctx: Context) -> Iterator[Finding]:
    """With a deployed folder to compare with (`validate --against DIR`, `diff --against DIR`): the MIG strategy the
    intent derives differs from the one the cluster runs, so every MIG resource is renamed (`mixed` names a resource
    per profile, `single` calls every slice `nvidia.com/gpu`), and the pods, quotas, queues and probes that ask for
    the old names stop being served. Pin `spec.cluster.migStrategy` to the deployed strategy to keep the names. An
    intent with no MIG pool left sets no strategy: the chart's default `single` applies, and the flip from `mixed`
    is reported too."""
    deployed = ctx.deployed
    before = deployed.cluster.get("migStrategy") if deployed is not None else None
    # With no MIG pool left the intent sets no strategy and the chart's default `single` applies
    # (gpu-operator-facts §4, `mig.strategy`): a flip like any other (None only under DRA, allocation-switch's).
    after = ctx.strategy or (None if ctx.intent.spec.cluster.allocation == "dra" else "single")
    if before is None or after is None or before == after:
        return
    pinned = ctx.intent.spec.cluster.mig_strategy is not None
    loc = ("spec", "cluster", "migStrategy") if pinned else ("spec", "sharingProfiles")
    renamed = ("every MIG slice becomes nvidia.com/gpu" if after == "single" else
               "nvidia.com/gpu of the MIG pools becomes one nvidia.com/mig-<profile> resource per profile")
    if ctx.strategy is None:
        renamed = "no MIG pool is left, so the chart's default single applies and no nvidia.com/mig-* resource stays"
        keep = "move every request, quota and queue off the nvidia.com/mig-* names in this change"
    elif before == "mixed":
        keep = f"pin spec.cluster.migStrategy: {before} to keep the deployed resource names"
    else:
        keep = "the layouts now need strategy mixed: make the flip its own commit, in a maintenance window"
    yield ctx.finding("GC370", loc, f"the MIG strategy flips from {before} (deployed) to {after}: {renamed}, so "
                      "pending pods, quotas, queues and probes that ask for the old names stop working",
                      f"{keep}; gpuconf diff --against shows each renamed resource", severity=WARNING, at_key=pinned)


@rule("GC371", "a driver roll-out advances one wave per commit")
def wave_skipped(ctx: Context) -> Iterator[Finding]:
    """With a deployed folder: `spec.driver.upgrade.rollout.wave` advances by more than one wave against the
    deployed roll-out, so several waves upgrade their drivers in one commit. Raise it by one per reviewed commit,
    after the previous wave's nodes show `upgrade-done`."""
    deployed = ctx.deployed
    upgrade = ctx.intent.spec.driver.upgrade
    if deployed is None or upgrade is None or upgrade.rollout is None:
        return
    before = deployed.rollout_wave() or 0
    if upgrade.rollout.wave - before > 1:
        yield ctx.finding("GC371", ("spec", "driver", "upgrade", "rollout", "wave"),
                          f"the roll-out advances from wave {before} (deployed) to wave {upgrade.rollout.wave}: waves "
                          f"{before + 1} to {upgrade.rollout.wave} upgrade their drivers at once",
                          f"raise rollout.wave to {before + 1}, let its nodes reach upgrade-done, then commit the "
                          "next wave", severity=WARNING)


@rule("GC372", "upgrade waves are not declared for the first time silently")
def waves_first_time(ctx: Context) -> Iterator[Finding]:
    """With a deployed folder: the cluster's driver is managed by the ClusterPolicy and the intent declares upgrade
    waves (or a canary pool) for the first time, which moves the driver to per-pool NVIDIADrivers and replaces the
    driver DaemonSets: every GPU pod on those nodes restarts. Make that change alone, in a maintenance window."""
    deployed = ctx.deployed
    upgrade = ctx.intent.spec.driver.upgrade
    if deployed is None or upgrade is None or not (upgrade.waves or upgrade.canary_pool):
        return
    if (deployed.report.get("upgrade") or {}).get("mode") != "clusterpolicy":
        return
    moved = [name for name, pool in deployed.pools.items() if (pool.get("driver") or {}).get("mode") == "cluster"]
    key = "canaryPool" if upgrade.canary_pool and not upgrade.waves else "waves"
    pools = f" (pools {', '.join(moved)})" if moved else ""
    yield ctx.finding("GC372", ("spec", "driver", "upgrade", key),
                      "upgrade waves are declared for the first time: the driver moves from the ClusterPolicy to "
                      f"per-pool NVIDIADrivers{pools}, which replaces the driver DaemonSets, so every GPU pod on "
                      "those nodes restarts",
                      "make this change alone (no driver version change), in a maintenance window, with the nodes "
                      "drained pool by pool", severity=WARNING, at_key=True)


@rule("GC373", "a chart move follows NVIDIA's upgrade path")
def chart_move_path(ctx: Context) -> Iterator[Finding]:
    """With a deployed folder: `spec.operator.chartVersion` moves from the deployed release past a whole major
    release (YY.MM): NVIDIA supports upgrades "only within a major release or to the next major release"
    (life-cycle-policy.rst). The hint gives the supported path, through the newest patch of each major in between;
    plan each hop on its own (`gpuconf diff --to-chart`)."""
    from ... import catalog
    from ...chartfacts.releases import upgrade_path

    deployed = ctx.deployed
    before = deployed.cluster.get("chartVersion") if deployed is not None else None
    after = ctx.intent.spec.operator.chart_version
    if not isinstance(before, str) or before == after or catalog.chart(after) is None:
        return
    hops = upgrade_path(before, after, catalog.chart_versions())
    if len(hops) > 2:
        yield ctx.finding("GC373", ("spec", "operator", "chartVersion"),
                          f"the chart moves from {before} (deployed) to {after}, past {len(hops) - 2} major "
                          f"release(s): {catalog.chart_table()['upgradeRule']}",
                          f"supported path: {' -> '.join(hops)}; pin {hops[1]} first and plan each hop with "
                          f"`gpuconf diff INTENT --to-chart VERSION`")


@rule("GC374", "an image lock's digest change is admitted through its sync, and only through it")
def lock_transition(ctx: Context) -> Iterator[Finding]:
    """With a deployed folder and an admission policy that pins images: the image lock moves images the deployed
    folder pins to other digests, and the new policy no longer admits the deployed ones, so a Pod of the deployed
    digests that restarts before the chart replaces it (a node reboot, an eviction) is refused; keep the deployed
    lock as a file and name it in `spec.security.previousImageLock` for that change. And the other way round: the
    deployed folder pins the lock's digests already and `previousImageLock` is still set, so once that sync is done
    the policy admits the previous digests for nothing."""
    spec = ctx.intent.spec
    deployed = ctx.deployed
    before = deployed.report.get("admission") if deployed is not None else None
    if not isinstance(before, dict) or not before.get("pinned") or spec.admission is None or \
            spec.operator.image_lock is None or any(f.severity == ERROR for f in ctx.found):
        return
    running = [i for i in before.get("images") or [] if isinstance(i, str)]
    from ... import plan as P
    from ...render import admission

    plan = P.build(ctx.intent, ctx.doc.file, ctx.doc)
    current = admission.allowed_images(plan)
    dropped = sorted(set(running) - set(current) - set(admission.previous_images(plan)))
    if dropped and set(running) != set(current):
        yield ctx.finding("GC374", ("spec", "operator", "imageLock"),
                          f"the image lock moves {len(dropped)} image(s) the deployed folder pins to other digests "
                          f"(such as {dropped[0]}), and the admission policy no longer admits them: a Pod of the "
                          "deployed digests that restarts before the chart replaces it is refused",
                          "keep the deployed lock as a file (e.g. images.lock.previous.yaml) and name it in "
                          "spec.security.previousImageLock for this change; remove it once the cluster runs the new "
                          "digests", severity=WARNING)
    previous = spec.security.previous_image_lock if spec.security is not None else None
    if previous is not None and set(running) == set(current):
        yield ctx.finding("GC374", ("spec", "security", "previousImageLock"),
                          f"the deployed folder pins the lock's digests already: once its sync is done, the "
                          f"{len(admission.previous_images(plan))} image(s) of {previous} are admitted for nothing",
                          "drop spec.security.previousImageLock (and its file) once the cluster runs the lock's "
                          "digests", severity=WARNING)

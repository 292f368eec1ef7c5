"""Rules of teams: quotas name pools and their resources and fit their capacity, pools whose quotas a ResourceQuota
cannot keep apart, access names teams (GC314, GC315, GC322, GC330)."""

from __future__ import annotations

from collections import Counter
from typing import Iterator

from ... import plan
from ...findings import WARNING, Finding
from .base import Context, hint_choices, rule


@rule("GC314", "quotas refer to existing pools and use their resources")
def quota_refs(ctx: Context) -> Iterator[Finding]:
    """Quotas name existing pools and the pool's real resource names (per MIG profile under the mixed strategy)."""
    pools = {p.name: p for p in ctx.intent.spec.pools}
    # Under DRA every MIG profile has a DeviceClass of its own: quotas name profiles, as under the mixed strategy.
    strategy = "mixed" if ctx.intent.spec.cluster.allocation == "dra" else ctx.strategy
    for i, team in enumerate(ctx.intent.spec.teams):
        for pool_name, value in team.quota.items():
            loc = ("spec", "teams", i, "quota", pool_name)
            pool = pools.get(pool_name)
            if pool is None:
                yield ctx.finding("GC314", loc, f"quota names unknown pool {pool_name!r}",
                                  hint_choices(pool_name, list(pools), "pools"), at_key=True)
                continue
            layout = plan.mig_layout(plan.pool_profile(ctx.intent, pool), plan.gpu_model(ctx.intent, pool.gpu))
            if isinstance(value, dict):
                if layout is None:
                    yield ctx.finding("GC314", loc, f"pool {pool_name!r} does not use MIG; give its quota as a count",
                                      f"e.g. {pool_name}: 8")
                elif strategy == "single":
                    # Per-profile quotas say the user expects per-profile resources: when the strategy is only
                    # derived, the way back is pinning mixed, not accepting a flip that renames every
                    # nvidia.com/mig-* resource of a running cluster (GC370).
                    pinned = ctx.intent.spec.cluster.mig_strategy == "single"
                    yield ctx.finding("GC314", loc, "with MIG strategy single every MIG device is nvidia.com/gpu; "
                                      "give the quota as a count" if pinned else "with the MIG strategy single, "
                                      "derived from uniform layouts, every MIG device is nvidia.com/gpu and a "
                                      "per-profile quota names no resource", f"e.g. {pool_name}: 4" if pinned else
                                      "the strategy is derived from uniform layouts: to keep per-profile resources "
                                      "(the names a running cluster's quotas and jobs use), pin "
                                      f"spec.cluster.migStrategy: mixed; to switch, give the quota as a count "
                                      f"(e.g. {pool_name}: 4) in a maintenance window")
                else:
                    for profile_name in value:
                        if profile_name not in layout:
                            yield ctx.finding("GC314", (*loc, profile_name),
                                              f"pool {pool_name!r} has no {profile_name!r} MIG devices",
                                              hint_choices(profile_name, list(layout), "profiles"), at_key=True)
            elif layout is not None and strategy == "mixed":
                why = "a DeviceClass per MIG profile (DRA)" if strategy != ctx.strategy else \
                    "one resource per MIG profile (strategy mixed)"
                yield ctx.finding("GC314", loc, f"pool {pool_name!r} exposes {why}; give the quota per profile", "e.g. {" + ", ".join(
                                      f"\"{p}\": 1" for p in sorted(layout)) + "}")


@rule("GC315", "quotas fit the pool's capacity")
def quota_capacity(ctx: Context) -> Iterator[Finding]:
    """Quotas (x the team's namespaces when ResourceQuotas are rendered; once per team under Kueue alone) per
    pool and resource do not exceed capacity (GPUs x replicas, or MIG instances x GPUs x nodes) unless
    `allowQuotaOversubscription`."""
    names = Counter(p.name for p in ctx.intent.spec.pools)
    per_namespace = plan.resource_quotas(ctx.intent)
    how = "quota x namespaces" if per_namespace else "the teams' Kueue nominal quotas"
    for pool in ctx.intent.spec.pools:
        if pool.allow_quota_oversubscription or names[pool.name] > 1:
            continue  # a duplicated pool name is GC302's; its quotas cannot be attributed
        profile = plan.pool_profile(ctx.intent, pool)
        if profile is None or plan.sharing_kind(profile) == "exclusive" and profile.exclusive is None:
            continue  # a profile without a mode is GC311's; its capacity is unknown
        cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
        if cap is None:
            continue
        asked: dict[str, int] = {}
        last: dict[str, tuple] = {}
        for i, team in enumerate(ctx.intent.spec.teams):
            value = team.quota.get(pool.name)
            if value is None:
                continue
            loc = ("spec", "teams", i, "quota", pool.name)
            # A ResourceQuota applies to each of the team's namespaces; a Kueue ClusterQueue to the team as a whole.
            copies = len(team.namespaces) if per_namespace else 1
            if isinstance(value, dict):
                for profile_name, count in value.items():
                    resource = plan.profile_resource(cap.per_node, profile_name)
                    if resource is not None:
                        asked[resource] = asked.get(resource, 0) + count * copies
                        last[resource] = (*loc, profile_name)
            elif len(cap.per_node) == 1:
                resource = next(iter(cap.per_node))
                asked[resource] = asked.get(resource, 0) + value * copies
                last[resource] = loc
        for resource, total in sorted(asked.items()):
            if total > cap.total(resource):
                yield ctx.finding("GC315", last[resource],
                                  f"team quotas on pool {pool.name!r} add up to {total} {resource} ({how}), but the pool has "
                                  f"{cap.total(resource)} ({cap.per_node[resource]} per node x {cap.nodes} nodes)",
                                  "lower the quotas, grow the pool, or set allowQuotaOversubscription: true on the pool")


@rule("GC330", "quotas that a ResourceQuota cannot keep apart")
def quota_shared_resource(ctx: Context) -> Iterator[Finding]:
    """(warning, without Kueue) a team's quota spans pools that advertise the same resource name, which a
    ResourceQuota cannot tell apart."""
    if plan.kueue_settings(ctx.intent) is not None:
        return  # Kueue counts per pool (one flavor each): the pools are kept apart for the Jobs it queues
    caps = {p.name: plan.pool_capacity(ctx.intent, p, ctx.strategy) for p in ctx.intent.spec.pools}
    for i, team in enumerate(ctx.intent.spec.teams):
        by_resource: dict[str, list[str]] = {}
        for pool_name, value in team.quota.items():
            cap = caps.get(pool_name)
            if cap is None or isinstance(value, dict):
                continue
            for resource in cap.per_node:
                by_resource.setdefault(resource, []).append(pool_name)
        for resource, names in sorted(by_resource.items()):
            if len(names) > 1:
                yield ctx.finding("GC330", ("spec", "teams", i, "quota"),
                                  f"pools {', '.join(repr(n) for n in names)} all advertise {resource}; a ResourceQuota "
                                  f"counts per resource name, so the team's namespaces get one summed limit",
                                  "give the pools distinct resources (renameByDefault, MIG) or use a queueing layer "
                                  "such as Kueue for per-pool limits", severity=WARNING)


@rule("GC322", "access refers to existing teams")
def access_refs(ctx: Context) -> Iterator[Finding]:
    """`access.developers` names existing teams."""
    access = ctx.intent.spec.access
    if access is None:
        return
    teams = [t.name for t in ctx.intent.spec.teams]
    for team in access.developers:
        if team not in teams:
            yield ctx.finding("GC322", ("spec", "access", "developers", team), f"developers name unknown team {team!r}",
                              hint_choices(team, teams, "teams"), at_key=True)

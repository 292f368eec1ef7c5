"""Rules of team queueing with Kueue, run only with Kueue on: its version, the teams, pools and resources its settings
name, borrowing and lending, admission, preemption, excluded resources, object limits (GC331, GC332, GC336,
GC360-GC366)."""

from __future__ import annotations

from itertools import combinations
from typing import Callable, Iterator

from ... import catalog, plan
from ...findings import WARNING, Finding
from .base import Context, hint_choices, pool_loc, rule
from .syntax import qualified_name_problem


def _kueue_loc(*rest: str | int) -> tuple:
    return ("spec", "queueing", "kueue", *rest)


def kueue_rule(code: str, title: str) -> Callable[[Callable[[Context, object], Iterator[Finding]]], Callable]:
    """Register a rule that runs only with Kueue on and receives its settings (gpuconf.intent.model.Kueue)."""

    def register(fn: Callable[[Context, object], Iterator[Finding]]) -> Callable:
        def check(ctx: Context) -> Iterator[Finding]:
            kueue = plan.kueue_settings(ctx.intent)
            return iter(()) if kueue is None else fn(ctx, kueue)

        check.__doc__ = fn.__doc__
        rule(code, title)(check)
        return fn

    return register


@kueue_rule("GC360", "the Kueue version is one gpuconf has the CRDs of, on a Kubernetes it supports")
def kueue_version(ctx: Context, kueue) -> Iterator[Finding]:
    """The Kueue version is one gpuconf has the CRDs of (v0.19.2), and the cluster runs Kubernetes 1.29 or newer
    (Kueue's installation guide)."""
    from ...render.kueue import MIN_KUBERNETES, releases

    known = list(releases())
    if kueue.version not in known:
        guess = catalog.suggest(kueue.version, known)
        yield ctx.finding("GC360", _kueue_loc("version"), f"gpuconf has no CRDs of Kueue {kueue.version!r}, so it "
                          "cannot verify the queues against them",
                          f"{f'did you mean {guess!r}? ' if guess else ''}supported: {', '.join(known)}")
    version = ctx.intent.spec.cluster.kubernetes_version
    if tuple(int(p) for p in version.split(".")) < MIN_KUBERNETES:
        yield ctx.finding("GC360", ("spec", "cluster", "kubernetesVersion"),
                          f"Kueue needs Kubernetes {'.'.join(map(str, MIN_KUBERNETES))} or newer (its installation "
                          f"guide); the cluster runs {version}",
                          "upgrade the cluster first, or remove spec.queueing.kueue")


def _kueue_team(ctx: Context, name: str) -> tuple[int, object] | None:
    return next(((i, t) for i, t in enumerate(ctx.intent.spec.teams) if t.name == name), None)


@kueue_rule("GC361", "Kueue settings name teams with a queue, pools of their quota and real resources")
def kueue_refs(ctx: Context, kueue) -> Iterator[Finding]:
    """Kueue settings name existing teams (a team without a quota gets no queue: warning), limits name pools of
    the team's quota in the quota's shape and MIG profiles it names, `otherResources` are resource names and not
    GPU resources."""
    pools = {p.name: p for p in ctx.intent.spec.pools}
    caps = {name: plan.pool_capacity(ctx.intent, pool, ctx.strategy) for name, pool in pools.items()}
    gpu_resources = {r for cap in caps.values() if cap is not None for r in cap.per_node}
    teams = [t.name for t in ctx.intent.spec.teams]
    for name, settings in kueue.teams.items():
        loc = _kueue_loc("teams", name)
        found = _kueue_team(ctx, name)
        if found is None:
            yield ctx.finding("GC361", loc, f"queue settings name unknown team {name!r}",
                              hint_choices(name, teams, "teams"), at_key=True)
            continue
        i, team = found
        if not team.quota:
            yield ctx.finding("GC361", loc, f"team {name!r} has no quota, so it gets no queue: these settings have "
                              "no effect", f"give spec.teams[{i}].quota, or remove them", severity=WARNING,
                              at_key=True)
            continue
        for key, given in (("borrowingLimit", settings.borrowing_limit), ("lendingLimit", settings.lending_limit)):
            for pool_name, value in given.items():
                yield from _limit_refs(ctx, (*loc, key, pool_name), i, team, pool_name, value, pools, caps)
        for resource in settings.other_resources:
            rloc = (*loc, "otherResources", resource)
            if resource in gpu_resources or resource.startswith("nvidia.com/"):
                yield ctx.finding("GC361", rloc, f"{resource} is a GPU resource: its queue quota comes from the "
                                  "team's quota, per pool", f"set it in spec.teams[{i}].quota", at_key=True)
            elif qualified_name_problem(resource):
                yield ctx.finding("GC361", rloc, f"{resource!r} is not a resource name: it "
                                  f"{qualified_name_problem(resource)}", "e.g. cpu, memory, ephemeral-storage",
                                  at_key=True)


def _limit_refs(ctx: Context, loc: tuple, i: int, team, pool_name: str, value, pools, caps) -> Iterator[Finding]:
    """A borrowing or lending limit names a pool of the team's quota, in the quota's shape, with its resources."""
    what = loc[-2]
    if pool_name not in team.quota:
        if pool_name not in pools:
            yield ctx.finding("GC361", loc, f"{what} names unknown pool {pool_name!r}",
                              hint_choices(pool_name, list(pools), "pools"), at_key=True)
        else:
            yield ctx.finding("GC361", loc, f"{what} names pool {pool_name!r}, which the team's quota does not: its "
                              "queue lists only the pools of its quota",
                              f"add {pool_name}: 0 to spec.teams[{i}].quota to borrow there only", at_key=True)
        return
    cap, quota = caps.get(pool_name), team.quota[pool_name]
    if cap is None:
        return  # the pool's sharing cannot be resolved: other rules say why
    if isinstance(value, dict) != isinstance(quota, dict):
        shape = "a count" if isinstance(quota, int) else "a mapping of MIG profile to count"
        yield ctx.finding("GC361", loc, f"the team's quota on pool {pool_name!r} is {shape}; give the {what} the "
                          "same shape", None)
        return
    if isinstance(value, dict):
        named = plan.quota_units(cap.per_node, quota)
        for profile_name in value:
            units = plan.quota_units(cap.per_node, {profile_name: 0})
            if not units or next(iter(units)) not in named:
                yield ctx.finding("GC361", (*loc, profile_name), f"the team's quota on pool {pool_name!r} names no "
                                  f"{profile_name!r}", f"add \"{profile_name}\": 0 to its quota to borrow it only",
                                  at_key=True)


@kueue_rule("GC362", "borrowing and lending limits stay within the cohort")
def kueue_limits(ctx: Context, kueue) -> Iterator[Finding]:
    """Borrowing and lending limits need a cohort (Kueue rejects them without one); a lending limit is at most
    the nominal quota; (warning) a borrowing limit where no other team of the cohort has quota to lend."""
    rows = {t.name: plan.team_queue_rows(ctx.intent, t, ctx.strategy) for t in ctx.intent.spec.teams if t.quota}
    for name, settings in kueue.teams.items():
        found = _kueue_team(ctx, name)
        if found is None or name not in rows:
            continue  # GC361
        team = found[1]
        for key, given in (("borrowingLimit", settings.borrowing_limit), ("lendingLimit", settings.lending_limit)):
            for pool_name, value in given.items():
                loc = _kueue_loc("teams", name, key, pool_name)
                pool = next((p for p in ctx.intent.spec.pools if p.name == pool_name), None)
                if pool_name not in team.quota or pool is None:
                    continue  # GC361
                if not kueue.cohort:
                    yield ctx.finding("GC362", loc, f"{key} needs a cohort: Kueue rejects borrowing and lending "
                                      "limits on a ClusterQueue that has none", "set spec.queueing.kueue.cohort")
                    continue
                cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
                for resource, count in plan.quota_units(cap.per_node, value).items() if cap else ():
                    at = (*loc, next(p for p in value if plan.quota_units(cap.per_node, {p: 0}) == {resource: 0})) \
                        if isinstance(value, dict) else loc
                    mine = next(r for r in rows[name] if r.pool == pool_name and r.resource == resource)
                    if key == "lendingLimit" and count > mine.nominal:
                        yield ctx.finding("GC362", at, f"lendingLimit {count} exceeds the team's quota of "
                                          f"{mine.nominal} {resource} on pool {pool_name!r}: Kueue rejects it",
                                          f"at most {mine.nominal}")
                    if key == "borrowingLimit" and count > 0:
                        lendable = sum(r.nominal if r.lending_limit is None else r.lending_limit
                                       for other, theirs in rows.items() if other != name
                                       for r in theirs if r.pool == pool_name and r.resource == resource)
                        if lendable == 0:
                            yield ctx.finding("GC362", at, f"no other team in cohort {kueue.cohort!r} has quota of "
                                              f"{resource} on pool {pool_name!r} to lend, so there is nothing to "
                                              "borrow", "give another team quota there, or remove the limit",
                                              severity=WARNING)


@kueue_rule("GC336", "every quota a team's queue names can admit a workload")
def kueue_admits(ctx: Context, kueue) -> Iterator[Finding]:
    """A quota of 0 admits only what the team borrows: without a cohort, with a borrowing limit of 0, or in a cohort
    where no other team lends that pool's resource (all at 0, or a lending limit of 0), its workloads stay pending
    forever (Kueue v0.19.2 admits a workload only within nominal quota plus what its cohort lends)."""
    teams = [(i, t) for i, t in enumerate(ctx.intent.spec.teams) if t.quota]
    rows = {t.name: plan.team_queue_rows(ctx.intent, t, ctx.strategy) for _, t in teams}
    pools = {p.name: p for p in ctx.intent.spec.pools}
    for i, team in teams:
        for pool_name, value in team.quota.items():
            cap = plan.pool_capacity(ctx.intent, pools[pool_name], ctx.strategy) if pool_name in pools else None
            if cap is None:
                continue  # GC314 and the sharing rules say why
            for resource, count in plan.quota_units(cap.per_node, value).items():
                if count:
                    continue
                loc = ("spec", "teams", i, "quota", pool_name)
                if isinstance(value, dict):
                    loc = (*loc, next(p for p in value if plan.quota_units(cap.per_node, {p: 0}) == {resource: 0}))
                where = f"team {team.name!r} has a quota of 0 {resource} on pool {pool_name!r}"
                mine = next(r for r in rows[team.name] if r.pool == pool_name and r.resource == resource)
                if not kueue.cohort:
                    yield ctx.finding("GC336", loc, f"{where} and its queue is in no cohort, so it can never admit "
                                      "a workload there", "give the team quota there, set spec.queueing.kueue.cohort "
                                      "to let it borrow from other teams, or remove the pool from its quota")
                elif mine.borrowing_limit == 0:
                    yield ctx.finding("GC336", loc, f"{where} and a borrowingLimit of 0 there, so its queue can never "
                                      "admit a workload there", "raise the borrowingLimit, or give the team quota")
                elif not any(r.nominal if r.lending_limit is None else min(r.nominal, r.lending_limit)
                             for other, theirs in rows.items() if other != team.name
                             for r in theirs if r.pool == pool_name and r.resource == resource):
                    yield ctx.finding("GC336", loc, f"{where}, and no other team of cohort {kueue.cohort!r} lends it "
                                      "(each has 0 there or a lendingLimit of 0), so its queue can never admit a "
                                      "workload there unless a ClusterQueue gpuconf does not render lends it",
                                      "give a team of the cohort quota there to lend, or raise its lendingLimit",
                                      severity=WARNING)


@kueue_rule("GC363", "the preemption policy is one Kueue accepts")
def kueue_preemption(ctx: Context, kueue) -> Iterator[Finding]:
    """The preemption policy is one Kueue accepts: `borrowWithinCohort` other than Never needs
    `reclaimWithinCohort` other than Never (the ClusterQueue CRD's CEL rule)."""
    policy = kueue.preemption
    if policy.reclaim_within_cohort == "Never" and policy.borrow_within_cohort != "Never":
        # The ClusterQueue CRD's CEL rule on spec.preemption, and the webhook's validatePreemption.
        yield ctx.finding("GC363", _kueue_loc("preemption", "borrowWithinCohort"),
                          "borrowWithinCohort needs reclaimWithinCohort other than Never: Kueue rejects the "
                          "ClusterQueues", "set reclaimWithinCohort: LowerPriority or Any, or borrowWithinCohort: Never")


@kueue_rule("GC364", "team queues cover the cpu and memory their pods request")
def kueue_other_resources(ctx: Context, kueue) -> Iterator[Finding]:
    """Under `quotaCheckStrategy: BlockUndeclared` every team queue covers cpu and memory (`otherResources`), or
    Kueue leaves the team's pods pending."""
    if kueue.quota_check_strategy != "BlockUndeclared":
        return
    for i, team in enumerate(ctx.intent.spec.teams):
        if not team.quota:
            continue
        settings = kueue.teams.get(team.name)
        missing = [r for r in ("cpu", "memory") if settings is None or r not in settings.other_resources]
        if missing:
            loc = _kueue_loc("teams", team.name) if settings is not None else ("spec", "teams", i, "name")
            yield ctx.finding("GC364", loc, f"the ClusterQueue of team {team.name!r} covers no "
                              f"{' and no '.join(missing)}: under quotaCheckStrategy BlockUndeclared (Kueue's "
                              f"default) a pod that requests {' or '.join(missing)} stays pending", f"give spec.queueing.kueue.teams.{team.name}.otherResources "
                              "{cpu: ..., memory: ...}, or set quotaCheckStrategy: IgnoreUndeclared if your Kueue "
                              "runs so", at_key=settings is not None)


@kueue_rule("GC331", "excluded resource prefixes go with quotaCheckStrategy BlockUndeclared")
def kueue_excluded_with_strategy(ctx: Context, kueue) -> Iterator[Finding]:
    """`excludeResourcePrefixes` only with `quotaCheckStrategy: BlockUndeclared`: Kueue refuses a Configuration with
    both it and IgnoreUndeclared, and its manager does not start."""
    if kueue.quota_check_strategy == "IgnoreUndeclared" and kueue.exclude_resource_prefixes:
        # Kueue v0.19.2 pkg/config/validation.go validateQuotaCheckStrategy: the manager refuses the Configuration.
        yield ctx.finding("GC331", _kueue_loc("excludeResourcePrefixes"), "excludeResourcePrefixes with "
                          "quotaCheckStrategy IgnoreUndeclared: Kueue refuses such a Configuration and does not start",
                          "remove excludeResourcePrefixes (IgnoreUndeclared already ignores what no queue covers), "
                          "or set quotaCheckStrategy: BlockUndeclared", at_key=True)


@kueue_rule("GC332", "excluded resource prefixes leave the queued resources counted")
def kueue_excluded_resources(ctx: Context, kueue) -> Iterator[Finding]:
    """No excluded resource prefix matches a resource a queue counts (a pool's GPU resources, a team's
    `otherResources`): Kueue would count it against no quota."""
    counted: dict[str, str] = {}  # resource -> what counts it
    for pool in ctx.intent.spec.pools:
        cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
        for resource in cap.per_node if cap else ():
            counted.setdefault(resource, f"pool {pool.name!r}")
    for team, settings in kueue.teams.items():
        for resource in settings.other_resources:
            counted.setdefault(resource, f"the otherResources of team {team!r}")
    for j, prefix in enumerate(kueue.exclude_resource_prefixes or ()):
        hit = sorted(r for r in counted if r.startswith(prefix))  # Kueue: strings.HasPrefix (dropExcludedResources)
        if hit:
            yield ctx.finding("GC332", _kueue_loc("excludeResourcePrefixes", j), f"prefix {prefix!r} takes "
                              f"{', '.join(hit)} ({counted[hit[0]]}) out of Kueue's quota accounting: no queue would "
                              "limit it", "exclude only resources no queue covers, such as ephemeral-storage and "
                              "hugepages-")


@kueue_rule("GC365", "the queues fit Kueue's object limits")
def kueue_object_limits(ctx: Context, kueue) -> Iterator[Finding]:
    """The queues fit Kueue's limits: at most 8 tolerations (taints) per flavor, 64 flavors and 64 resources per
    resource group, 16 groups and 256 flavors per ClusterQueue."""
    from ...render import kueue as K

    for i, pool in enumerate(ctx.intent.spec.pools):
        if len(pool.taints) > K.MAX_TOLERATIONS:
            yield ctx.finding("GC365", pool_loc(i, "taints"), f"pool {pool.name!r} has {len(pool.taints)} taints, "
                              f"but a ResourceFlavor holds at most {K.MAX_TOLERATIONS} tolerations",
                              f"keep {K.MAX_TOLERATIONS} taints or fewer")
    from ...render.names import PROBE_REQUESTS as REQUESTS

    caps = {p.name: plan.pool_capacity(ctx.intent, p, ctx.strategy) for p in ctx.intent.spec.pools}
    other = {name: set(t.other_resources) for name, t in kueue.teams.items()}
    queues = [("the acceptance queue (every pool)", _kueue_loc(),
               [(p.name, set(caps[p.name].per_node)) for p in ctx.intent.spec.pools if caps[p.name]]
               + [(K.ANY_NODE_FLAVOR, set(REQUESTS))])]
    queues += [(f"team {t.name!r}'s queue", ("spec", "teams", i, "quota"),
                [(p.name, set(caps[p.name].per_node)) for p in ctx.intent.spec.pools
                 if p.name in t.quota and caps[p.name]]
                + ([(K.ANY_NODE_FLAVOR, other[t.name])] if other.get(t.name) else []))
               for i, t in enumerate(ctx.intent.spec.teams) if t.quota]
    for what, loc, flavors in queues:
        # The queue's resource groups as the renderer builds them (render.kueue.resource_groups).
        groups = K.resource_groups([(name, {r: K.Quota(0) for r in resources}) for name, resources in flavors])
        problems = []
        if len(groups) > K.MAX_GROUPS:
            problems.append(f"{len(groups)} resource groups (at most {K.MAX_GROUPS})")
        for group in groups:
            if len(group["coveredResources"]) > K.MAX_GROUP_RESOURCES:
                problems.append(f"{len(group['coveredResources'])} resources in one group (at most "
                                f"{K.MAX_GROUP_RESOURCES})")
            if len(group["flavors"]) > K.MAX_GROUP_FLAVORS:
                problems.append(f"{len(group['flavors'])} pools advertising {group['coveredResources'][0]} in one "
                                f"group (at most {K.MAX_GROUP_FLAVORS})")
            combinations = len(group["flavors"]) * len(group["coveredResources"])
            if combinations > K.MAX_GROUP_COMBINATIONS:
                problems.append(f"{combinations} flavor-resource combinations in one group (at most "
                                f"{K.MAX_GROUP_COMBINATIONS})")
        if len(flavors) > K.MAX_FLAVORS:
            problems.append(f"{len(flavors)} flavors (at most {K.MAX_FLAVORS})")
        covered = sum(len(g["coveredResources"]) for g in groups)
        if covered > K.MAX_COVERED:
            problems.append(f"{covered} covered resources (at most {K.MAX_COVERED})")
        for problem in problems:
            yield ctx.finding("GC365", loc, f"{what} would have {problem}: Kueue rejects the ClusterQueue", None)


@kueue_rule("GC366", "ResourceQuotas leave room for what a team borrows")
def kueue_quotas_and_borrowing(ctx: Context, kueue) -> Iterator[Finding]:
    """(warning) ResourceQuotas next to a cohort: a namespace's quota can refuse the pods Kueue admitted on
    borrowed quota."""
    if not kueue.resource_quotas or not kueue.cohort:
        return
    borrowing = sorted(t.name for t in ctx.intent.spec.teams if t.quota and any(
        r.borrowing_limit != 0 for r in plan.team_queue_rows(ctx.intent, t, ctx.strategy)))
    if borrowing:
        yield ctx.finding("GC366", _kueue_loc("resourceQuotas"),
                          f"teams {', '.join(borrowing)} may borrow in cohort {kueue.cohort!r}, but each namespace's "
                          "ResourceQuota holds only the team's quota: pods Kueue admits on borrowed quota can be "
                          "refused by it, and their Job then waits admitted without pods",
                          "set borrowingLimit 0 for those pools, or resourceQuotas: false", severity=WARNING)

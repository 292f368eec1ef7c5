"""Team namespaces, their GPU ResourceQuotas and the PriorityClasses of the tiers teams use."""

from __future__ import annotations

from .. import plan as P
from . import metadata
from .names import PRIORITY_LABEL, TEAM_LABEL

SUMMED_ANNOTATION = "gpuconf.dev/summed-pools"
QUOTA_NAME = "gpuconf-gpu-quota"
#: PriorityClass value of each tier; a decade apart so that tiers added later fit between them.
PRIORITY_VALUES = {"low": 1000, "normal": 10000, "high": 100000, "critical": 1000000}
# Quotas on extended resources accept only the `requests.` prefix: overcommit is impossible for them, so a
# `limits.` item would be meaningless (kubernetes/website content/en/docs/concepts/policy/resource-quotas.md,
# "Resource Quota For Extended Resources").
QUOTA_PREFIX = "requests."


def render(plan: P.Plan) -> list[dict]:
    """Namespaces, then ResourceQuotas (unless Kueue replaces them), then PriorityClasses, in a stable order."""
    teams = sorted(plan.intent.spec.teams, key=lambda t: t.name)
    quotas = _quotas(plan, teams) if P.resource_quotas(plan.intent) else []  # Kueue may replace them
    return [*_namespaces(plan, teams), *quotas, *_priority_classes(plan, teams)]


def priority_class_name(tier: str) -> str:
    """The PriorityClass a tier's pods name in priorityClassName."""
    return f"gpuconf-{tier}"


def _namespaces(plan: P.Plan, teams: list) -> list[dict]:
    docs = []
    for team in teams:
        for ns in sorted(team.namespaces):
            labels = {TEAM_LABEL: team.name, PRIORITY_LABEL: team.priority}
            docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(plan, ns, labels=labels)})
    return sorted(docs, key=lambda d: d["metadata"]["name"])


def quota_resource(pool: P.PoolPlan, profile: str | None = None) -> str:
    """The resource a team quota on this pool counts: the pool's only resource, or the one of a MIG profile.

    The names come from what the pool really advertises (PoolCapacity.per_node), so the cluster-wide MIG
    strategy and renameByDefault (`.shared`) are already applied (DESIGN, "Traps that the plan stage must get right").
    """
    names = sorted(pool.capacity.per_node)
    if profile is None:
        if len(names) != 1:
            raise ValueError(f"pool {pool.name!r} advertises {names}; a count quota needs exactly one resource")
        return names[0]
    found = P.profile_resource(pool.capacity.per_node, profile)
    if found is not None:
        return found
    raise ValueError(f"pool {pool.name!r} advertises no resource for MIG profile {profile!r} (has {names})")


def team_quota(plan: P.Plan, team) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Per resource name: units a namespace of the team may request, and the pools that were added up into it.

    A ResourceQuota counts per resource name, not per pool: two pools advertising the same name get one summed
    limit (DESIGN trap; validation warns with GC330).
    """
    pools = plan.pool_by_name
    hard: dict[str, int] = {}
    sources: dict[str, set[str]] = {}
    for pool_name, value in sorted(team.quota.items()):
        pool = pools[pool_name]  # validation (GC314) guarantees the pool exists
        entries = [(quota_resource(pool), value)] if isinstance(value, int) else [
            (quota_resource(pool, profile), count) for profile, count in sorted(value.items())]
        for resource, count in entries:
            hard[resource] = hard.get(resource, 0) + count
            sources.setdefault(resource, set()).add(pool_name)
    return dict(sorted(hard.items())), {r: sorted(s) for r, s in sorted(sources.items())}


def quota_item(resource: str) -> str:
    """The ResourceQuota key of a resource: requests.<name> for an extended resource; a DRA device-class key as is
    (`<class>.deviceclass.resource.k8s.io/devices`, KW-quota)."""
    from ..dra import class_of_key

    return resource if class_of_key(resource) is not None else QUOTA_PREFIX + resource


def _quotas(plan: P.Plan, teams: list) -> list[dict]:
    docs = []
    for team in teams:
        hard, sources = team_quota(plan, team)
        if not hard:
            continue
        summed = {r: pools for r, pools in sources.items() if len(pools) > 1}
        for ns in sorted(team.namespaces):  # a team quota is per namespace: each namespace gets all of it
            meta = metadata(plan, QUOTA_NAME, ns, labels={TEAM_LABEL: team.name})
            if summed:
                meta["annotations"] = {SUMMED_ANNOTATION: "; ".join(
                    f"{quota_item(r)}={','.join(pools)}" for r, pools in summed.items())}
            docs.append({
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": meta,
                "spec": {"hard": {quota_item(r): str(n) for r, n in hard.items()}},
            })
    return sorted(docs, key=lambda d: d["metadata"]["namespace"])


def _priority_classes(plan: P.Plan, teams: list) -> list[dict]:
    used = {t.priority for t in teams}
    docs = []
    for tier, value in PRIORITY_VALUES.items():
        if tier not in used:
            continue
        users = ", ".join(sorted(t.name for t in teams if t.priority == tier))
        docs.append({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": metadata(plan, priority_class_name(tier), labels={PRIORITY_LABEL: tier}),
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": f"gpuconf {tier} tier ({value}) for GPU workloads of teams: {users}. "
                           f"Pods opt in with priorityClassName: {priority_class_name(tier)}.",
        })
    return docs

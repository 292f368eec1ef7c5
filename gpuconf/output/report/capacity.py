"""The capacity section of REPORT.md (capacity.md.j2): team quotas against the capacity of the resources they name,
per resource name, and the caveats of quotas that count per name rather than per pool."""

from __future__ import annotations

from ... import plan as P


def capacity_facts(plan: P.Plan) -> tuple[list[dict], list[dict], list[str]]:
    """Team quotas against the capacity of the resources they name, per resource name, and the caveats."""
    from ...render.teams import team_quota

    advertised: dict[str, list[tuple[str, int]]] = {}
    for pool in plan.pools:
        for resource in sorted(pool.capacity.per_node):
            advertised.setdefault(resource, []).append((pool.name, pool.capacity.total(resource)))
    tainted = {pool.name for pool in plan.pools if pool.pool.taints}
    names = {resource: [name for name, _ in pools] for resource, pools in advertised.items()}
    teams, asked, caveats = [], {}, []
    # A ResourceQuota gives each namespace the whole quota; a Kueue ClusterQueue holds it once for the team.
    per_namespace = P.resource_quotas(plan.intent)
    for index, team in sorted(enumerate(plan.intent.spec.teams), key=lambda item: item[1].name):
        hard, sources = team_quota(plan, team)
        quotas = []
        for resource, count in hard.items():
            total = count * len(team.namespaces) if per_namespace else count
            asked.setdefault(resource, []).append((team.name, total))
            chosen = set(sources[resource])
            others = [name for name in names[resource] if name not in chosen]
            quotas.append({
                "resource": resource, "perNamespace": count, "namespaces": len(team.namespaces), "total": total,
                "pools": sources[resource],
                "poolCapacity": sum(plan.pool_by_name[name].capacity.total(resource) for name in sources[resource]),
                "alsoUsableOn": others,
            })
            if others and per_namespace:
                guarded = [n for n in others if n in tainted]
                tail = (f" Of those, {', '.join(guarded)} {'is' if len(guarded) == 1 else 'are'} tainted, so only pods "
                        "that tolerate the taint get there." if guarded else "")
                caveats.append(f"Team {team.name}: its quota on `{resource}` (from pool(s) {', '.join(sources[resource])}) "
                               f"also lets its pods use `{resource}` on {', '.join(others)}: a ResourceQuota counts per "
                               f"resource name, not per pool; a pod lands wherever its nodeSelector and tolerations "
                               f"allow.{tail}")
            if len(sources[resource]) > 1 and per_namespace:
                caveats.append(f"Team {team.name}: the quotas of pools {', '.join(sources[resource])} are summed into "
                               f"one limit of {count} `{resource}` per namespace, since they advertise the same name.")
        teams.append({"name": team.name, "namespaces": sorted(team.namespaces), "priority": team.priority,
                      "line": plan.line(("spec", "teams", index)), "quotas": quotas})
    resources = []
    for resource, pools in sorted(advertised.items()):
        capacity = sum(units for _, units in pools)
        quota = sum(total for _, total in asked.get(resource, []))
        resources.append({"resource": resource, "pools": [{"pool": n, "units": u} for n, u in pools],
                          "capacity": capacity, "quota": quota, "teams": sorted(n for n, _ in asked.get(resource, [])),
                          "unassigned": capacity - quota})
    return teams, resources, caveats

"""The team queues section of REPORT.md (queues.md.j2): Kueue's flavors, each team's ClusterQueue, the preemption
policy, Kueue's Configuration and an example Job."""

from __future__ import annotations

from ... import plan as P


def queueing_facts(plan: P.Plan) -> dict | None:
    """The Kueue queues: flavors, each team's ClusterQueue (team x pool x resource: nominal, borrowing, lending),
    the policy they all state, and what a user puts on a Job; None when Kueue is off."""
    kueue = P.kueue_settings(plan.intent)
    if kueue is None:
        return None
    from ...emit import dump
    from ...render import kueue as K
    from ...render.teams import priority_class_name

    cohort = kueue.cohort

    def limit(value: int | None, kind: str) -> str:
        if not cohort:
            return "none (no cohort)"
        if value is None:
            return "no limit" if kind == "borrow" else "all unused"
        return str(value)

    teams = []
    for team in K.queued_teams(plan):
        rows = [{"pool": r.pool, "flavor": K.flavor_name(r.pool), "resource": r.resource, "nominal": r.nominal,
                 "borrowingLimit": r.borrowing_limit, "lendingLimit": r.lending_limit,
                 "borrowing": limit(r.borrowing_limit, "borrow"), "lending": limit(r.lending_limit, "lend"),
                 "poolCapacity": plan.pool_by_name[r.pool].capacity.total(r.resource)}
                for r in P.team_queue_rows(plan.intent, team, plan.strategy)]
        settings = kueue.teams.get(team.name)
        other = settings.other_resources if settings is not None else {}
        teams.append({"name": team.name, "clusterQueue": K.cluster_queue_name(team.name),
                      "localQueue": K.LOCAL_QUEUE, "namespaces": sorted(team.namespaces),
                      "priorityClass": priority_class_name(team.priority), "rows": rows,
                      "otherResources": [{"resource": r, "nominal": q} for r, q in sorted(other.items())]})
    policy = kueue.preemption
    example = None
    if teams:
        # The first team and pool with a quota of their own (a quota of 0 only borrows).
        first, row = next(((t, r) for t in teams for r in t["rows"] if r["nominal"]),
                          (teams[0], teams[0]["rows"][0]))
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "my-job", "namespace": first["namespaces"][0],
                            "labels": {K.QUEUE_LABEL: K.LOCAL_QUEUE, K.PRIORITY_CLASS_LABEL: first["priorityClass"]}},
               "spec": {"template": {"spec": {
                   "restartPolicy": "Never",
                   "nodeSelector": {P.POOL_LABEL: row["pool"]},
                   "containers": [{"name": "main", "image": "IMAGE", "resources": {
                       "requests": {"cpu": "1", "memory": "4Gi"}, "limits": {row["resource"]: 1}}}]}}}}
        comments = {
            ("metadata", "labels", K.QUEUE_LABEL): "optional: Kueue sets it on a Job of a namespace with a "
                                                  "LocalQueue named default",
            ("metadata", "labels", K.PRIORITY_CLASS_LABEL): "required for the team's tier: without it (and without "
                                                           "a pod priorityClassName) Kueue gives the Job priority 0",
            ("spec", "template", "spec", "nodeSelector"): "optional: picks the pool (its flavor); without it Kueue "
                                                          "tries the team's pools in spec.pools order",
        }
        example = dump(job, comments, top=True)
    excluded = P.kueue_excluded_prefixes(kueue)
    resources: dict = {"quotaCheckStrategy": kueue.quota_check_strategy}
    if excluded:
        resources["excludeResourcePrefixes"] = list(excluded)
    # Kueue v0.19.2 apis/config/v1beta2/configuration_types.go (Configuration.Resources: quotaCheckStrategy,
    # excludeResourcePrefixes); config/components/manager: the file controller_manager_config.yaml of ConfigMap
    # kueue-manager-config in kueue-system; charts/kueue/values.yaml: managerConfig.controllerManagerConfigYaml.
    configuration = dump({"apiVersion": K.CONFIG_API_VERSION, "kind": "Configuration", "resources": resources},
                         {("resources",): "merge into your Kueue Configuration; the manager reads it when it starts"},
                         top=True)
    return {
        "version": kueue.version,
        "apiVersion": K.releases()[kueue.version]["ClusterQueue"],
        "excludedPrefixes": list(excluded),
        "configuration": configuration,
        "unqueuedPrefixes": list(P.UNQUEUED_RESOURCE_PREFIXES),
        "cohort": cohort,
        "queueingStrategy": kueue.queueing_strategy,
        "quotaCheckStrategy": kueue.quota_check_strategy,
        "resourceQuotas": kueue.resource_quotas,
        "preemption": {"withinClusterQueue": policy.within_cluster_queue,
                       "reclaimWithinCohort": policy.reclaim_within_cohort,
                       "borrowWithinCohort": policy.borrow_within_cohort},
        "flavors": [{"name": K.flavor_name(p.name), "pool": p.name, "nodeLabels": {P.POOL_LABEL: p.name},
                     "tolerations": [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
                                     for t in p.pool.taints]} for p in plan.pools],
        "anyNodeFlavor": K.ANY_NODE_FLAVOR,
        "acceptanceQueue": K.ACCEPTANCE,
        "teams": teams,
        "teamsWithoutQueue": sorted(t.name for t in plan.intent.spec.teams if not t.quota),
        "queueLabel": K.QUEUE_LABEL,
        "priorityClassLabel": K.PRIORITY_CLASS_LABEL,
        "jobExample": example,
    }

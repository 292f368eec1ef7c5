"""The NVLink section of REPORT.md (nvlink.md.j2): the racks, the DRA driver release that runs their ComputeDomains
(device-plugin stack) or the operator's switch (GPUCluster), each team's ComputeDomain and channel, the Kueue topology,
a multi-node job that lands inside one rack, and what the hosts need."""

from __future__ import annotations

from ... import plan as P


def job_example(plan: P.Plan, team, pool: P.PoolPlan) -> dict:
    """A multi-node job of a team on an NVLink pool: one pod per tray, each with the tray's GPUs and a channel of the
    team's ComputeDomain; with Kueue, bound to one NVLink clique."""
    from ...render import nvlink
    from ...render.names import QUEUE_LABEL

    trays = pool.pool.nvlink.trays_per_rack
    quota = team.quota.get(pool.name)
    if isinstance(quota, int):
        trays = max(1, min(trays, quota // pool.pool.gpus_per_node))
    resource = sorted(pool.capacity.per_node)[0]
    template_meta: dict = {}
    meta: dict = {"name": f"{pool.name}-allreduce", "namespace": sorted(team.namespaces)[0]}
    if P.kueue_settings(plan.intent) is not None:
        meta["labels"] = {QUEUE_LABEL: "default"}
        template_meta["annotations"] = {nvlink.REQUIRED_TOPOLOGY: nvlink.CLIQUE_LABEL}
    container = {"name": "worker", "image": "<your image>",
                 "resources": {"limits": {resource: str(pool.pool.gpus_per_node)}, "claims": [{"name": "channel"}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"completionMode": "Indexed", "completions": trays, "parallelism": trays,
                     "template": {**({"metadata": template_meta} if template_meta else {}), "spec": {
                         "restartPolicy": "Never",
                         "resourceClaims": [{"name": "channel",
                                             "resourceClaimTemplateName": nvlink.channel_template(pool.name)}],
                         "containers": [container]}}}}


def nvlink_facts(plan: P.Plan) -> dict | None:
    """The NVLink section, or None when no pool declares nvlink."""
    from ...emit import dump
    from ...render import nvlink

    pools = nvlink.pools(plan)
    if not pools:
        return None
    release = nvlink.release(plan)
    racks = []
    for pool in pools:
        link = pool.pool.nvlink
        full, rest = divmod(pool.pool.nodes, link.trays_per_rack)
        racks.append({"pool": pool.name, "gpu": pool.model.name, "trays": link.trays_per_rack,
                      "gpusPerRack": link.trays_per_rack * pool.pool.gpus_per_node, "racks": full, "partial": rest,
                      "rackLabel": link.rack_label})
    domains = [{"team": d["metadata"]["labels"]["gpuconf.dev/team"], "namespace": d["metadata"]["namespace"],
                "name": d["metadata"]["name"], "pool": d["metadata"]["labels"][P.POOL_LABEL],
                "template": d["spec"]["channel"]["resourceClaimTemplate"]["name"]} for d in nvlink.compute_domains(plan)]
    example = None
    for team in plan.intent.spec.teams:
        pool = next((p for p in pools if p.name in team.quota), None)
        if pool is not None:
            example = dump(job_example(plan, team, pool), top=True)
            break
    values = nvlink.values(plan) if release else {}
    return {
        "release": release,
        "chart": {"name": nvlink.CHART, "version": nvlink.settings(plan).chart_version,
                  "repository": nvlink.chart_repository(plan), "namespace": nvlink.namespace(plan),
                  "driverRoot": nvlink.driver_root(plan), "image": values.get("image", {}).get("repository"),
                  "command": nvlink.helm_template_command(plan)} if release else None,
        "racks": racks,
        "cliqueLabel": nvlink.CLIQUE_LABEL,
        "channelClass": nvlink.CHANNEL_CLASS,
        "domains": domains,
        "kueue": {"topology": nvlink.TOPOLOGY, "levels": [nvlink.CLIQUE_LABEL, nvlink.HOSTNAME_LABEL],
                  "mapping": nvlink.kueue_mapping(plan)[0]} if P.kueue_settings(plan.intent) is not None else None,
        "jobExample": example,
    }

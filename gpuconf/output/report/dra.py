"""The DRA section of REPORT.md (dra.md.j2): the GPUCluster stack's DeviceClasses, the claim templates per team, the
quota keys, Kueue's mappings and the driver's feature gates."""

from __future__ import annotations

from ... import plan as P


def dra_facts(plan: P.Plan, merged: dict) -> dict | None:
    """The DRA section: the classes, the claim templates per team, the quota keys, Kueue's mappings, the gates."""
    from ... import dra
    from ...render import chart as C
    from ...render import dra as R

    if not dra.enabled(plan.intent):
        return None
    settings = plan.intent.spec.cluster.dra
    partitions = settings.mig_partitions if settings is not None else None
    classes = [{"name": d["metadata"]["name"], "pool": d["metadata"]["labels"][P.POOL_LABEL],
                "selects": d["metadata"]["annotations"]["gpuconf.dev/selects"],
                "expression": d["spec"]["selectors"][0]["cel"]["expression"]} for d in R.device_classes(plan)]
    claims: dict[tuple, dict] = {}
    for doc in R.claim_templates(plan):
        meta = doc["metadata"]
        key = (meta["labels"]["gpuconf.dev/team"], meta["name"])
        devices = doc["spec"]["spec"]["devices"]
        config = devices.get("config", [{}])[0].get("opaque", {}).get("parameters", {}).get("sharing")
        row = claims.setdefault(key, {
            "team": key[0], "template": meta["name"], "namespaces": [],
            "classes": sorted({r["exactly"]["deviceClassName"] for r in devices["requests"]}),
            "sameGpu": bool(devices.get("constraints")),
            "sharing": config["strategy"] if config else "exclusive"})
        row["namespaces"].append(meta["namespace"])
    mappings = []
    if P.kueue_settings(plan.intent) is not None:
        mappings = [{"name": dra.quota_key(c["name"]), "deviceClassNames": [c["name"]]}
                    for c in classes if dra.quota_key(c["name"]) in
                    {r for pool in plan.pools for r in pool.capacity.per_node}]
    mig = None
    if any(R.layout(pool) for pool in plan.pools):
        mig = ("dynamic: the driver's DynamicMIG gate (alpha) advertises every possible placement and creates an "
               "instance when a claim is prepared, destroying instances it did not create; do not run mig-parted or "
               "nvidia-smi mig on these nodes" if partitions == "dynamic" else
               "external: the instances are made on the hosts before the DRA driver starts, by NVIDIA's "
               "nvidia-mig-manager.service at boot with node-templates/mig-parted-config.yaml and each pool's "
               "node-templates/<pool>.mig-manager.conf (the layouts below); the driver only publishes them and sees "
               "a new layout only after its plugin restarts")
    return {
        "stack": "GPUCluster",
        "gpuCluster": C.GPUCLUSTER_NAME,
        "driverVersion": str(C.get(merged, "draDriver.version")),
        "featureGates": dict(C.get(merged, "draDriver.featureGates") or {}),
        "computeDomains": bool(C.get(merged, "draDriver.computeDomains.enabled")),
        "migPartitions": mig,
        "migLayouts": [{"pool": pool.name, "layout": R.layout(pool)} for pool in plan.pools if R.layout(pool)],
        "classes": classes,
        "claims": [claims[k] for k in sorted(claims)],
        "kueueMappings": mappings,
        "helmApiVersions": "resource.k8s.io/v1/DeviceClass",
    }

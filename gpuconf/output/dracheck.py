"""The DRA stack's output read back as its consumers read it (a part of gpuconf.output.semantic).

* the chart: templates/validations.yaml must not fail for the values with the capability a 1.34+ cluster serves
  (`resource.k8s.io/v1/DeviceClass`), and the GPUCluster templates/gpucluster.yaml makes of them must fit the CRD;
* the driver: every opaque GpuConfig strategy has its gate in `draDriver.featureGates`, and no gate is on that no
  claim needs; gate pairs the driver refuses at startup are absent;
* the scheduler: every DeviceClass selector is CEL that reads only attributes the driver publishes, and it matches
  the devices of its own pool (every productName spelling of the model, each MIG profile) and of no other pool;
* the API server's quota and the claims: every claim names a rendered class; every DRA quota key counts one.
"""

from __future__ import annotations

from typing import Any, Iterator

from .. import dra
from .. import plan as P
from ..render import chart as C


def _of_kind(tree: Any, kind: str) -> list[dict]:
    return [d for docs in tree.documents.values() for d in docs if d.get("kind") == kind]


def problems(plan: P.Plan, merged: dict, tree: Any) -> Iterator[str]:
    """Every problem of the DRA stack's output, one line each."""
    from . import verify

    for failure in C.render_failures(merged, ("resource.k8s.io/v1/DeviceClass",)):
        yield f"chart: templates/validations.yaml fails: {failure}"
    cluster = C.gpucluster(merged)
    if cluster is None:
        yield "chart: gpuCluster.deployCR is off, so the chart renders no GPUCluster"
    else:
        for p in verify.verify_object(cluster, plan.intent.spec.cluster.kubernetes_version, "GPUCluster"):
            yield f"chart: GPUCluster {p.path}: {p.message}"
    classes = {d["metadata"]["name"]: d for d in _of_kind(tree, "DeviceClass")}
    yield from _gates(plan, merged, tree)
    yield from _selectors(plan, classes)
    for doc in _of_kind(tree, "ResourceClaimTemplate"):
        where = f"ResourceClaimTemplate {doc['metadata']['namespace']}/{doc['metadata']['name']}"
        for request in doc["spec"]["spec"]["devices"]["requests"]:
            if request["exactly"]["deviceClassName"] not in classes:
                yield f"{where}: request {request['name']} names no rendered DeviceClass"
    for doc in _of_kind(tree, "ResourceQuota"):
        for key in doc["spec"]["hard"]:
            name = dra.class_of_key(key)
            if name is not None and name not in classes:
                yield f"ResourceQuota {doc['metadata']['namespace']}: {key} counts no rendered DeviceClass"
    templates = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in _of_kind(tree, "ResourceClaimTemplate")}
    for job in _of_kind(tree, "Job"):
        for claim in job["spec"]["template"]["spec"].get("resourceClaims", []):
            if (job["metadata"]["namespace"], claim["resourceClaimTemplateName"]) not in templates:
                yield f"Job {job['metadata']['name']}: claim template {claim['resourceClaimTemplateName']} is missing"


def _gates(plan: P.Plan, merged: dict, tree: Any) -> Iterator[str]:
    gates = C.get(merged, "draDriver.featureGates") or {}
    needed = {}
    for doc in _of_kind(tree, "ResourceClaimTemplate"):
        for config in doc["spec"]["spec"]["devices"].get("config", []):
            strategy = config["opaque"]["parameters"]["sharing"]["strategy"]
            gate = {"TimeSlicing": dra.GATE_TIME_SLICING, "MPS": dra.GATE_MPS}[strategy]
            needed.setdefault(gate, doc["metadata"]["name"])
    settings = plan.intent.spec.cluster.dra
    if settings is not None and settings.mig_partitions == "dynamic" and any(
            P.mig_layout(p.profile, p.model) for p in plan.pools):
        needed.setdefault(dra.GATE_DYNAMIC_MIG, "the MIG pools")
    for gate, user in sorted(needed.items()):
        if gates.get(gate) is not True:
            yield f"draDriver.featureGates: {gate} is off, but {user} needs it"
    for gate in sorted(set(g for g, on in gates.items() if on) - set(needed)):
        yield f"draDriver.featureGates: {gate} is on, but nothing needs it"
    for pair in dra.EXCLUSIVE_GATES:
        if all(gates.get(g) is True for g in pair):
            yield f"draDriver.featureGates: the driver refuses {' with '.join(pair)} at startup"


def _selectors(plan: P.Plan, classes: dict[str, dict]) -> Iterator[str]:
    devices = {}  # pool -> [(profile or None, device)]
    for pool in plan.pools:
        layout = P.mig_layout(pool.profile, pool.model) or {}
        devices[pool.name] = [(profile, dra.device(pool.model.id, name, profile))
                              for name in dra.product_names(pool.model.id) for profile in (sorted(layout) or [None])]
    for name, doc in sorted(classes.items()):
        pool = doc["metadata"]["labels"][P.POOL_LABEL]
        expression = doc["spec"]["selectors"][0]["cel"]["expression"]
        own = devices.get(pool, [])
        device_type = "mig" if own and own[0][0] is not None else "gpu"
        found = dra.check_selector(expression, device_type)
        if found:
            yield from (f"DeviceClass {name}: {p}" for p in found)
            continue
        for other, devs in devices.items():
            for profile, device in devs:
                wanted = other == pool and (name == dra.class_name(pool) or name == dra.class_name(pool, profile))
                if dra.matches(expression, device) != wanted:
                    what = f"{device['attributes'][dra.DOMAIN]['productName']}" + (f" {profile}" if profile else "")
                    yield (f"DeviceClass {name}: {'misses' if wanted else 'selects'} a {what} device of pool {other}")

"""The pools section of REPORT.md (pools.md.j2): each pool's model, size, sharing, resources, taints, driver, labels
and probe, and the GPU models the intent declares."""

from __future__ import annotations

from ... import plan as P


def sharing_detail(pool: P.PoolPlan) -> str:
    """How a pool's GPUs are shared, in a few words."""
    prof = pool.profile
    parts = []
    if prof.mig is not None:
        layout = P.mig_layout(prof, pool.model) or {}
        shape = ", ".join(f"{name} x{count}" for name, count in sorted(layout.items()))
        parts.append(f"MIG {prof.mig.preset} ({shape})" if prof.mig.preset else f"MIG {shape}")
    if prof.mps is not None:
        parts.append(f"MPS x{prof.mps.replicas}" + (" (renamed .shared)" if prof.mps.rename_by_default else ""))
    if prof.time_slicing is not None:
        ts = prof.time_slicing
        extra = [w for w, on in (("renamed .shared", ts.rename_by_default),
                                 ("1 unit per pod", ts.fail_requests_greater_than_one)) if on]
        parts.append(f"time-slicing x{ts.replicas}" + (f" ({', '.join(extra)})" if extra else ""))
    return " + ".join(parts) or "whole GPUs"


def _driver_fact(plan: P.Plan, pool: P.PoolPlan) -> dict:
    cluster_version = plan.intent.spec.driver.version
    if pool.driver == "preinstalled":
        return {"mode": "preinstalled", "version": None,
                "text": f"preinstalled host driver ({P.DRIVER_DEPLOY_LABEL}=false)"}
    if pool.driver == "cluster":
        version = cluster_version or str(plan.chart.shared_defaults["driver"]["version"])
        how = "cluster default" if cluster_version else "chart default"
        return {"mode": "cluster", "version": version, "text": f"{version} ({how})"}
    if pool.wave is not None:
        return {"mode": "wave", "version": pool.driver,
                "text": f"{pool.driver} (NVIDIADriver gpuconf-{pool.name}, upgrade wave {pool.wave})"}
    return {"mode": "pool", "version": pool.driver, "text": f"{pool.driver} (NVIDIADriver gpuconf-{pool.name})"}


def pool_facts(plan: P.Plan) -> list[dict]:
    """One row per pool: model, size, sharing, what it advertises, taints, driver, labels and how they get there."""
    from ...render.nodes import label_sources
    from ...render.names import job_name

    sources = label_sources(plan)
    rows = []
    for pool in plan.pools:
        p = pool.pool
        rows.append({
            "name": pool.name,
            "line": plan.line(("spec", "pools", pool.index)),
            "model": pool.model.id,
            "modelDeclared": pool.model.declared,
            "gpusPerNode": p.gpus_per_node,
            "nodes": p.nodes,
            "minNodes": P.min_nodes(plan.intent, p),
            "gpus": p.gpus_per_node * p.nodes,
            "sharing": {"profile": p.sharing, "kind": P.sharing_kind(pool.profile), "detail": sharing_detail(pool)},
            "resources": [{"name": r, "perNode": n, "total": n * p.nodes} for r, n in sorted(pool.capacity.per_node.items())],
            "taints": [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in p.taints],
            "driver": _driver_fact(plan, pool),
            "labels": dict(pool.labels),
            "labelledBy": sources[pool.name],
            "devicePluginConfig": pool.device_plugin_key,
            "migConfig": pool.mig_key,
            "probe": job_name(pool.name),
            "probeMode": P.probe_mode(plan.intent, p),
        })
    return rows


def declared_model_facts(plan: P.Plan) -> list[dict]:
    """The GPU models the intent declares (spec.gpuModels): facts gpuconf takes on trust, not from its catalogue."""
    rows = []
    for model_id, model in sorted(P.declared_models(plan.intent).items()):
        rows.append({
            "id": model_id, "line": plan.line(("spec", "gpuModels", model_id)), "name": model.name,
            "pciDeviceIds": list(model.pci_device_ids), "pciSubsystemIds": list(model.pci_subsystem_ids),
            # A whole number of GiB as an integer: report.json stays plain data (orjson's fast path).
            "memoryGiB": int(model.memory_gib) if float(model.memory_gib).is_integer() else model.memory_gib,
            "computeCapability": model.compute_capability,
            "productLabels": list(model.product_labels),
            "pools": [p.name for p in plan.pools if p.model.id == model_id],
        })
    return rows

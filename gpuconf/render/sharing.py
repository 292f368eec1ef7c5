"""The device-plugin and mig-parted ConfigMaps that pools select by node label."""

from __future__ import annotations

from .. import plan as P
from ..emit import dump
from . import metadata


def render(plan: P.Plan) -> list[dict]:
    """The device-plugin config ConfigMap, and the mig-parted one when any pool runs on a MIG-capable model; none
    on the DRA stack, which runs neither the device plugin nor MIG Manager."""
    if plan.intent.spec.cluster.allocation == "dra":
        return []
    docs = [{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(plan, P.DEVICE_PLUGIN_CONFIGMAP, plan.namespace),
        # One key per distinct config, content-addressed; each pool's nvidia.com/device-plugin.config names one.
        "data": {key: dump(config, top=True) for key, config in plan.device_plugin_configs.items()},
    }]
    if any(p.mig_key is not None for p in plan.pools):
        docs.append({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(plan, P.MIG_CONFIGMAP, plan.namespace),
            # mig-manager reads only the key config.yaml from a custom ConfigMap (gpu-operator-facts §6).
            "data": {"config.yaml": dump(mig_parted_config(plan), top=True)},
        })
    return docs


def mig_parted_config(plan: P.Plan) -> dict:
    """The mig-parted config file: all-disabled plus one named config per MIG sharing profile."""
    return {"version": "v1", "mig-configs": dict(plan.mig_configs)}

"""Generated intents for scale tests and benchmarks: valid by construction, any number of pools."""

from __future__ import annotations

import io

MODELS = [("H100-80GB", 8), ("A100-80GB", 8), ("L4", 4), ("L40S", 4), ("H200", 8), ("T4", 2)]
PROFILES = {
    "exclusive": None,
    "ts-x4": {"timeSlicing": {"replicas": 4}},
    "mps-x8": {"mps": {"replicas": 8}},
    "mig-balanced": {"mig": {"preset": "all-balanced"}},
}


def big_intent(pools: int) -> dict:
    """An intent with `pools` pools over several models and sharing modes, and a team per ten pools."""
    pool_list, teams = [], []
    for i in range(pools):
        model, per_node = MODELS[i % len(MODELS)]
        sharing = ["exclusive", "ts-x4", "mps-x8"][i % 3]
        if model in ("A100-80GB", "H200") and i % 2 == 0:
            sharing = "mig-balanced"
        pool = {
            "name": f"pool-{i:04d}",
            "gpu": model,
            "gpusPerNode": per_node,
            "nodes": 1 + i % 7,
            "match": {"nodeLabels": {"gpuconf.dev/nodegroup": f"group-{i:04d}"}},
            "sharing": sharing,
        }
        if i % 4 == 0:
            pool["taints"] = [{"key": "gpuconf.dev/pool", "value": f"pool-{i:04d}", "effect": "NoSchedule"}]
        pool_list.append(pool)
        if sharing != "mig-balanced" and i % 10 == 0:
            teams.append({"name": f"team-{i:04d}", "namespaces": [f"ns-{i:04d}"], "quota": {pool["name"]: 1}})
    profiles = {k: v for k, v in PROFILES.items() if v is not None and any(p["sharing"] == k for p in pool_list)}
    # MPS pools need strategy single (MPS refuses mixed), and all-balanced mixes profiles: keep them apart.
    if "mps-x8" in profiles and "mig-balanced" in profiles:
        for pool in pool_list:
            if pool["sharing"] == "mig-balanced":
                pool["sharing"] = "mig-single"
        profiles.pop("mig-balanced")
        profiles["mig-single"] = {"mig": {"preset": "all-1g.10gb"}}
        for pool in pool_list:
            if pool["sharing"] == "mig-single" and pool["gpu"] == "H200":
                pool["sharing"] = "mig-single-h200"
                profiles["mig-single-h200"] = {"mig": {"preset": "all-1g.18gb"}}
    return {
        "apiVersion": "gpuconf.dev/v1alpha1",
        "kind": "ClusterIntent",
        "metadata": {"name": f"scale-{pools}"},
        "spec": {
            "cluster": {"kubernetesVersion": "1.33"},
            "operator": {"chartVersion": "v26.7.0"},
            "sharingProfiles": profiles,
            "pools": pool_list,
            "teams": teams,
        },
    }


def big_intent_text(pools: int) -> str:
    """big_intent as block YAML text."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buf = io.StringIO()
    yaml.dump(big_intent(pools), buf)
    return buf.getvalue()

"""Generated intents for scale tests and benchmarks: valid by construction, any number of pools."""

from __future__ import annotations

import io

MODELS = [("H100-80GB", 8), ("A100-80GB", 8), ("L4", 4), ("L40S", 4), ("H200", 8), ("T4", 2)]
# Uniform MIG presets keep the derived strategy `single`, which MPS pools need (the plugin refuses MPS with mixed).
MIG_PRESET = {"A100-80GB": "mig-a100", "H200": "mig-h200"}
PROFILES = {
    "ts-x4": {"timeSlicing": {"replicas": 4}},
    "mps-x8": {"mps": {"replicas": 8}},
    "mig-a100": {"mig": {"preset": "all-1g.10gb"}},
    "mig-h200": {"mig": {"preset": "all-1g.18gb"}},
}


def big_intent(pools: int) -> dict:
    """An intent with `pools` pools over several models and every sharing mode, and a team per ten pools."""
    pool_list, teams = [], []
    for i in range(pools):
        model, per_node = MODELS[i % len(MODELS)]
        sharing = ["exclusive", "ts-x4", "mps-x8"][(i // len(MODELS)) % 3]
        if model in MIG_PRESET and (i // len(MODELS)) % 2 == 0:
            sharing = MIG_PRESET[model]
        name = f"pool-{i:04d}"
        pool = {
            "name": name,
            "gpu": model,
            "gpusPerNode": per_node,
            "nodes": 1 + i % 7,
            "match": {"nodeLabels": {"gpuconf.dev/nodegroup": f"group-{i:04d}"}},
            "sharing": sharing,
        }
        if i % 4 == 0:
            pool["taints"] = [{"key": "gpuconf.dev/pool", "value": name, "effect": "NoSchedule"}]
        pool_list.append(pool)
        if i % 10 == 0:
            teams.append({"name": f"team-{i:04d}", "namespaces": [f"ns-{i:04d}"], "quota": {name: 1}})
    used = {p["sharing"] for p in pool_list}
    return {
        "apiVersion": "gpuconf.dev/v1alpha1",
        "kind": "ClusterIntent",
        "metadata": {"name": f"scale-{pools}"},
        "spec": {
            "cluster": {"kubernetesVersion": "1.33"},
            "operator": {"chartVersion": "v26.7.0"},
            "sharingProfiles": {k: v for k, v in PROFILES.items() if k in used},
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


def hostname_intent_text(pools: int, pattern: str = "^gpu-{i:04d}-") -> str:
    """An intent of `pools` whole-GPU L4 pools told apart by their hostname patterns alone (pattern.format(i=...)):
    every pair is one GPU model with no node label, so GC303 compares every pair's patterns (tools/bench.py)."""
    from ruamel.yaml import YAML

    data = {"apiVersion": "gpuconf.dev/v1alpha1", "kind": "ClusterIntent", "metadata": {"name": f"hosts-{pools}"},
            "spec": {"cluster": {"kubernetesVersion": "1.33"}, "operator": {"chartVersion": "v26.7.0"},
                     "pools": [{"name": f"pool-{i:04d}", "gpu": "L4", "gpusPerNode": 4, "nodes": 1,
                                "match": {"hostname": pattern.format(i=i)}} for i in range(pools)]}}
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()

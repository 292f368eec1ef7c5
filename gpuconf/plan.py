"""Plan: facts derived from a typed intent (MIG strategy, resource names, capacities), shared by checks and renderers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from . import catalog
from .model import ClusterIntent, Pool, SharingProfile

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
#: Profiles every intent has without declaring them.
BUILTIN_PROFILES = {"exclusive": SharingProfile.model_validate({"exclusive": {}})}


def profiles(intent: ClusterIntent) -> Mapping[str, SharingProfile]:
    """Declared sharing profiles plus the built-in `exclusive`."""
    return {**BUILTIN_PROFILES, **intent.spec.sharing_profiles}


def pool_profile(intent: ClusterIntent, pool: Pool) -> SharingProfile | None:
    """The sharing profile a pool refers to, or None when the name is unknown."""
    return profiles(intent).get(pool.sharing)


def mig_layout(profile: SharingProfile | None, model: catalog.GpuModel | None) -> dict[str, int] | None:
    """Per-GPU MIG layout of a profile on a model (presets resolved), or None when not MIG or not resolvable."""
    if profile is None or profile.mig is None or model is None or not model.mig_capable:
        return None
    if profile.mig.layout is not None:
        return dict(profile.mig.layout)
    if profile.mig.preset is not None:
        preset = catalog.mig_presets(model).get(profile.mig.preset)
        return dict(preset) if preset is not None else None
    return None


def mig_pools(intent: ClusterIntent) -> list[tuple[Pool, dict[str, int]]]:
    """Pools that partition their GPUs with MIG, with their resolved layouts."""
    out = []
    for pool in intent.spec.pools:
        layout = mig_layout(pool_profile(intent, pool), catalog.gpu_model(pool.gpu))
        if layout:
            out.append((pool, layout))
    return out


def derived_mig_strategy(intent: ClusterIntent) -> str | None:
    """single when every MIG pool uses one uniform profile, mixed otherwise; None without MIG pools."""
    layouts = [layout for _, layout in mig_pools(intent)]
    if not layouts:
        return None
    return "single" if all(len(layout) == 1 for layout in layouts) else "mixed"


def mig_strategy(intent: ClusterIntent) -> str | None:
    """The strategy in effect: the pinned one if any, else the derived one."""
    return intent.spec.cluster.mig_strategy or derived_mig_strategy(intent)


def mig_resource(profile_name: str) -> str:
    """Resource name the device plugin's mixed strategy gives a MIG profile (+ becomes .)."""
    return "nvidia.com/mig-" + profile_name.replace("+", ".")


@dataclass(frozen=True)
class PoolCapacity:
    """What a pool advertises: resource name -> allocatable units per node, and the node count."""

    per_node: Mapping[str, int]
    nodes: int

    def total(self, resource: str) -> int:
        """Units of resource across the whole pool."""
        return self.per_node.get(resource, 0) * self.nodes


def pool_capacity(intent: ClusterIntent, pool: Pool, strategy: str | None = None) -> PoolCapacity | None:
    """Resources a pool advertises under the MIG strategy in effect; None when its sharing cannot be resolved."""
    profile = pool_profile(intent, pool)
    model = catalog.gpu_model(pool.gpu)
    if profile is None or model is None:
        return None
    strategy = strategy if strategy is not None else mig_strategy(intent)
    gpus = pool.gpus_per_node
    if profile.mig is not None:
        layout = mig_layout(profile, model)
        if layout is None:
            return None
        replicas = profile.time_slicing.replicas if profile.time_slicing else 1
        if strategy == "mixed":
            suffix = ".shared" if profile.time_slicing and profile.time_slicing.rename_by_default else ""
            per_node = {mig_resource(name) + suffix: count * gpus * replicas for name, count in layout.items()}
        else:
            name = GPU_SHARED if profile.time_slicing and profile.time_slicing.rename_by_default else GPU
            per_node = {name: sum(layout.values()) * gpus * replicas}
        return PoolCapacity(per_node, pool.nodes)
    for sharing in (profile.mps, profile.time_slicing):
        if sharing is not None:
            name = GPU_SHARED if sharing.rename_by_default else GPU
            return PoolCapacity({name: gpus * sharing.replicas}, pool.nodes)
    return PoolCapacity({GPU: gpus}, pool.nodes)


def sharing_kind(profile: SharingProfile) -> str:
    """One word for a profile: exclusive, time-slicing, mps, mig or mig+time-slicing."""
    if profile.mig is not None:
        return "mig+time-slicing" if profile.time_slicing else "mig"
    if profile.mps is not None:
        return "mps"
    if profile.time_slicing is not None:
        return "time-slicing"
    return "exclusive"

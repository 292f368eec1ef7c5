"""Rules of GPU sharing and MIG: sharing profiles are declared and coherent, time-slicing and MPS replicas fit,
MIG runs on capable models with profiles that exist and layouts that fit, a pinned strategy agrees (GC305-GC313)."""

from __future__ import annotations

from typing import Iterator

from ... import catalog, plan
from ...findings import WARNING, Finding
from .base import Context, hint_choices, pool_loc, rule

#: Upstream MPS limit per GPU (k8s-device-plugin cmd/mps-control-daemon/mps/device.go): 48 clients from compute
#: capability 7.5 on, 16 below.
MPS_MAX_REPLICAS = 48
MPS_MAX_REPLICAS_PRE_VOLTA_MPS = 16

# --- sharing ----------------------------------------------------------------------------------------------------


@rule("GC312", "pools refer to declared sharing profiles")
def sharing_refs(ctx: Context) -> Iterator[Finding]:
    """Pools refer to declared sharing profiles; `exclusive` is not redefined; unused profiles (warning)."""
    known = list(plan.profiles(ctx.intent))
    used = set()
    for i, pool in enumerate(ctx.intent.spec.pools):
        used.add(pool.sharing)
        if pool.sharing not in known:
            yield ctx.finding("GC312", pool_loc(i, "sharing"), f"unknown sharing profile {pool.sharing!r}",
                              hint_choices(pool.sharing, known, "profiles"))
    if "exclusive" in ctx.intent.spec.sharing_profiles:
        yield ctx.finding("GC312", ("spec", "sharingProfiles", "exclusive"),
                          "'exclusive' is built in and cannot be redefined", "choose another name", at_key=True)
    for name in ctx.intent.spec.sharing_profiles:
        if name not in used:
            yield ctx.finding("GC312", ("spec", "sharingProfiles", name), f"sharing profile {name!r} is not used by any pool",
                              "remove it, or refer to it from a pool's sharing", severity=WARNING, at_key=True)


@rule("GC311", "a sharing profile has one coherent mode")
def profile_shape(ctx: Context) -> Iterator[Finding]:
    """A sharing profile has exactly one coherent mode."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        loc = ("spec", "sharingProfiles", name)
        modes = [m for m, v in (("exclusive", prof.exclusive), ("timeSlicing", prof.time_slicing),
                                ("mps", prof.mps), ("mig", prof.mig)) if v is not None]
        if not modes:
            raw = ctx.doc.data.get("spec", {}).get("sharingProfiles", {}).get(name)
            empty = [k for k, v in raw.items() if v is None] if isinstance(raw, dict) else []
            hint = "give one of exclusive, timeSlicing, mps or mig"
            if "exclusive" in empty:
                hint = "`exclusive:` alone is null; write `exclusive: {}`"
            elif empty:
                hint = f"`{empty[0]}:` has no settings; e.g. timeSlicing: {{replicas: 4}}"
            yield ctx.finding("GC311", loc, "profile sets no sharing mode", hint)
        elif "exclusive" in modes and len(modes) > 1:
            yield ctx.finding("GC311", (*loc, "exclusive"), f"exclusive cannot be combined with {', '.join(modes[1:])}",
                              "a GPU is either whole or shared")
        elif prof.time_slicing is not None and prof.mps is not None:
            yield ctx.finding("GC311", (*loc, "mps"), "timeSlicing and mps are mutually exclusive",
                              "the device plugin uses only the mps block when both are set")
        if prof.mig is not None and (prof.mig.layout is None) == (prof.mig.preset is None):
            yield ctx.finding("GC311", (*loc, "mig"), "mig needs exactly one of layout or preset",
                              "layout: {\"3g.40gb\": 2} or preset: all-balanced")
    yield from _kept_names(ctx)


def _kept_names(ctx: Context) -> Iterator[Finding]:
    """keepNames: a kept config name serves one profile (one content), and a MIG one is not gpuconf's own
    all-disabled; the device plugin does not reload edited content under an unchanged key, so two contents under one
    name would leave nodes on the wrong one."""
    owners: dict[tuple[str, str], str] = {}
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        kept = prof.keep_names
        if kept is None:
            continue
        for which, field in (("device_plugin", "devicePlugin"), ("mig", "mig")):
            entry = getattr(kept, which)
            if entry is None:
                continue
            loc = ("spec", "sharingProfiles", name, "keepNames", field, "name")
            if which == "mig" and entry.name == plan.MIG_DISABLED:
                yield ctx.finding("GC311", loc, f"{plan.MIG_DISABLED!r} is gpuconf's own MIG config (MIG off)",
                                  "keep only the name of a MIG layout the nodes run")
            elif which == "mig" and prof.mig is None:
                yield ctx.finding("GC311", loc, "keepNames.mig on a profile without mig", "remove it")
            elif (which, entry.name) in owners:
                yield ctx.finding("GC311", loc, f"profile {owners[(which, entry.name)]!r} keeps the name "
                                  f"{entry.name!r} too", "a kept config name serves one profile")
            else:
                owners[(which, entry.name)] = name


@rule("GC308", "time-slicing replicas are at least 2")
def time_slicing_replicas(ctx: Context) -> Iterator[Finding]:
    """Time-slicing replicas >= 2."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        if prof.time_slicing is not None and prof.time_slicing.replicas < 2:
            yield ctx.finding("GC308", ("spec", "sharingProfiles", name, "timeSlicing", "replicas"),
                              f"time-slicing needs replicas >= 2, got {prof.time_slicing.replicas}",
                              "for unshared GPUs use sharing: exclusive")


@rule("GC309", "MPS replicas are within the upstream limit")
def mps_replicas(ctx: Context) -> Iterator[Finding]:
    """MPS replicas 2..48 (16 below compute capability 7.5), the device plugin's limit."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        if prof.mps is None:
            continue
        loc = ("spec", "sharingProfiles", name, "mps", "replicas")
        replicas = prof.mps.replicas
        if replicas < 2:
            yield ctx.finding("GC309", loc, f"MPS needs replicas >= 2, got {replicas}", "for unshared GPUs use exclusive")
            continue
        limit, culprit = MPS_MAX_REPLICAS, None
        for pool in ctx.intent.spec.pools:
            model = plan.gpu_model(ctx.intent, pool.gpu)
            if pool.sharing == name and model and model.compute_capability and _cc(model.compute_capability) < (7, 5):
                limit, culprit = MPS_MAX_REPLICAS_PRE_VOLTA_MPS, pool.name
        if replicas > limit:
            why = f" on pool {culprit!r} (compute capability below 7.5)" if culprit else ""
            yield ctx.finding("GC309", loc, f"MPS allows at most {limit} replicas per GPU{why}, got {replicas}",
                              f"use {limit} or fewer")


def _cc(value: str) -> tuple[int, int]:
    major, _, minor = value.partition(".")
    return int(major), int(minor or 0)


@rule("GC310", "MPS is not combined with MIG")
def mps_not_with_mig(ctx: Context) -> Iterator[Finding]:
    """MPS combined with MIG, or MPS pools while the cluster's MIG strategy is mixed (the plugin refuses both)."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        if prof.mps is not None and prof.mig is not None:
            yield ctx.finding("GC310", ("spec", "sharingProfiles", name, "mps"),
                              "MPS cannot share MIG devices: the device plugin supports MPS on full GPUs only",
                              "use timeSlicing with mig, or a separate MPS pool")
    if ctx.strategy == "mixed":
        for i, pool in enumerate(ctx.intent.spec.pools):
            prof = plan.pool_profile(ctx.intent, pool)
            if prof is not None and prof.mps is not None and prof.mig is None:
                yield ctx.finding("GC310", pool_loc(i, "sharing"),
                                  "MPS pools cannot run while the cluster's MIG strategy is mixed: the device plugin "
                                  "refuses --mig-strategy=mixed with MPS, and the strategy is cluster-wide",
                                  "make every MIG pool use one profile (strategy single) or move MPS to another cluster")


@rule("GC307", "MIG only on MIG-capable models")
def mig_capable(ctx: Context) -> Iterator[Finding]:
    """MIG on a model that has none."""
    for i, pool in enumerate(ctx.intent.spec.pools):
        prof = plan.pool_profile(ctx.intent, pool)
        model = plan.gpu_model(ctx.intent, pool.gpu)
        if prof is not None and prof.mig is not None and model is not None and not model.mig_capable:
            mig_models = sorted(m for m, g in catalog.gpu_models().items() if g.mig_capable)
            hint = f"use timeSlicing or mps; MIG models: {', '.join(mig_models)}"
            if model.declared:
                hint = ("a model declared in spec.gpuModels has no MIG: gpuconf checks MIG layouts against the "
                        "catalogue's measured placements only; use timeSlicing or mps")
            yield ctx.finding("GC307", pool_loc(i, "sharing"),
                              f"pool uses MIG profile {pool.sharing!r} but {model.id} does not support MIG", hint)


@rule("GC305", "MIG profiles and presets exist on the pool's model")
def mig_profiles_exist(ctx: Context) -> Iterator[Finding]:
    """MIG profiles and presets exist on the pool's model (profile names are per model: `1g.10gb` is a different
    slice on A100-40GB and A100-80GB)."""
    for i, pool, prof, model in _mig_pools(ctx):
        base = ("spec", "sharingProfiles", pool.sharing, "mig")
        if prof.mig.preset is not None:
            presets = catalog.mig_presets(model)
            if prof.mig.preset not in presets:
                hint = hint_choices(prof.mig.preset, list(presets), "presets")
                if prof.mig.preset.startswith("all-"):
                    other = prof.mig.preset[4:]
                    twin = next((p for p in model.mig_profiles if p.replace("+", ".") == other), None) or \
                        _equivalent_profile(other, model)
                    if twin is not None:
                        hint = f"did you mean 'all-{twin.replace('+', '.')}'? {_profile_hint(other, model)}"
                if prof.mig.preset == "all-enabled":
                    # mig-manager generates it: MIG mode on, no instances (mig-parted generate-config on an H200).
                    hint = ("all-enabled is MIG mode on with no instances: write layout: {} for that, or a preset "
                            "with instances such as all-balanced")
                elif prof.mig.preset == "all-disabled":
                    hint = "all-disabled is MIG off: give the pool a sharing profile without mig (exclusive: {})"
                yield ctx.finding("GC305", (*base, "preset"),
                                  f"preset {prof.mig.preset!r} does not exist on {model.id} (used by pool {pool.name!r})",
                                  hint)
        for profile_name in (prof.mig.layout or {}):
            if profile_name not in model.mig_profiles:
                yield ctx.finding("GC305", (*base, "layout", profile_name),
                                  f"MIG profile {profile_name!r} does not exist on {model.id} (used by pool {pool.name!r})",
                                  _profile_hint(profile_name, model), at_key=True)


def _equivalent_profile(name: str, model: catalog.GpuModel) -> str | None:
    """The profile of `model` with the same slices and attributes as `name` has on the models that know it."""
    for other in catalog.gpu_models().values():
        theirs = other.mig_profiles.get(name)
        if theirs is None or other.id == model.id:
            continue
        suffix = name[len(name.split("+")[0].split("-")[0]):]
        for candidate, mine in model.mig_profiles.items():
            if (mine.compute_slices, mine.memory_slices) == (theirs.compute_slices, theirs.memory_slices) and \
                    candidate.endswith(suffix) and (suffix or "+" not in candidate and "-" not in candidate):
                return candidate
    return None


def _profile_hint(name: str, model: catalog.GpuModel) -> str:
    """Explain a profile name from another model: MIG names carry memory sizes, so they differ per model."""
    owners = sorted(m.id for m in catalog.gpu_models().values() if name in m.mig_profiles)
    twin = _equivalent_profile(name, model)
    if owners and twin:
        return (f"{name} is a profile of {', '.join(owners)}; the same slice on {model.id} is {twin} "
                f"(`gpuconf catalog --gpu {model.id}`)")
    return hint_choices(name, list(model.mig_profiles), "profiles")


@rule("GC306", "MIG layouts fit the GPU exactly")
def mig_layout_fits(ctx: Context) -> Iterator[Finding]:
    """A MIG layout fits one GPU exactly: max instances, a non-overlapping placement on the model's memory
    slices, and at most one media-extension (`+me`) instance of any size, since the GPU has one optical-flow
    accelerator and only a `+me` instance includes it (a `+me` instance may sit next to other 1g instances:
    `1g.18gb+me` + 6 × `1g.18gb` fills an H200); the finding points at the profile that does not fit and names
    the slots."""
    for i, pool, prof, model in _mig_pools(ctx):
        layout = prof.mig.layout
        if layout is None or any(p not in model.mig_profiles for p in layout):
            continue  # presets come from the model itself; unknown profiles are GC305
        fit = catalog.fit_mig_layout(model, layout)
        if not fit.fits:
            # Positioned at the profile the failure is about: the one over its limit, the second +me, or the one
            # that found no free start slot.
            loc = ("spec", "sharingProfiles", pool.sharing, "mig", "layout")
            yield ctx.finding("GC306", (*loc, fit.profile) if fit.profile in layout else loc,
                              f"layout does not fit one {model.id} (pool {pool.name!r}): {fit.reason}",
                              f"see `gpuconf catalog --gpu {model.id}` for the placements; 'all-balanced' always fits",
                              at_key=fit.profile in layout)


def _mig_pools(ctx: Context) -> Iterator[tuple]:
    seen: set[tuple[str, str]] = set()
    for i, pool in enumerate(ctx.intent.spec.pools):
        prof = plan.pool_profile(ctx.intent, pool)
        model = plan.gpu_model(ctx.intent, pool.gpu)
        if prof is None or prof.mig is None or model is None or not model.mig_capable:
            continue
        if (pool.sharing, model.id) in seen:
            continue  # one finding per profile and model, not per pool
        seen.add((pool.sharing, model.id))
        yield i, pool, prof, model


@rule("GC313", "a pinned MIG strategy agrees with the pools")
def mig_strategy_consistent(ctx: Context) -> Iterator[Finding]:
    """A pinned `migStrategy: single` contradicts a pool that mixes MIG profiles."""
    pinned = ctx.intent.spec.cluster.mig_strategy
    if pinned != "single":
        return
    for pool, layout in plan.mig_pools(ctx.intent):
        if len(layout) > 1:
            yield ctx.finding("GC313", ("spec", "cluster", "migStrategy"),
                              f"migStrategy single needs one uniform MIG profile per GPU, but pool {pool.name!r} "
                              f"mixes {', '.join(sorted(layout))}",
                              "remove migStrategy to let gpuconf derive 'mixed', or use one profile per pool")

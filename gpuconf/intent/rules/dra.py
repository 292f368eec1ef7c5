"""Domain rules of the DRA stack (spec.cluster.allocation: dra): what the GPUCluster stack needs and what it refuses.

Registered into rules.RULES like the other domain rules (the package's __init__ loads this module). Sources: the keys of
../shared/reference/dra/facts.md §0, through gpuconf.dra.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterator

from ... import catalog, dra, plan
from ...findings import WARNING, Finding
from .base import Context, rule

CLUSTER = ("spec", "cluster")
ALLOCATION = (*CLUSTER, "allocation")
HINT_PLUGIN = "or keep allocation: devicePlugin"


def dra_rule(code: str, title: str) -> Callable[[Callable[[Context], Iterator[Finding]]], Callable]:
    """Register a rule that runs only on intents with allocation: dra."""

    def register(fn: Callable[[Context], Iterator[Finding]]) -> Callable:
        def check(ctx: Context) -> Iterator[Finding]:
            return fn(ctx) if dra.enabled(ctx.intent) else iter(())

        check.__doc__ = fn.__doc__
        rule(code, title)(check)
        return fn

    return register


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@dra_rule("GC430", "DRA needs Kubernetes 1.34 or later")
def dra_kubernetes(ctx: Context) -> Iterator[Finding]:
    """`allocation: dra` needs Kubernetes 1.34 or later: 1.32 and 1.33 serve no `resource.k8s.io` version by
    default, and `resource.k8s.io/v1` is GA and served from 1.34 (NVIDIA asks for 1.34.2)."""
    version = ctx.intent.spec.cluster.kubernetes_version
    if _minor(version) < dra.MIN_KUBERNETES:
        # facts §1.1: 1.32/1.33 serve no resource.k8s.io version by default; v1 is GA and served from 1.34 (KW-setup),
        # and the operator's docs ask for 1.34.2 (NV-docs).
        yield ctx.finding("GC430", (*CLUSTER, "kubernetesVersion"),
                          f"allocation dra needs Kubernetes 1.34 or later (resource.k8s.io/v1 is served by default "
                          f"from 1.34), but the cluster runs {version}",
                          f"upgrade the cluster to 1.34.2 or later first, {HINT_PLUGIN}")


@dra_rule("GC431", "DRA needs a chart that ships the GPUCluster stack")
def dra_chart(ctx: Context) -> Iterator[Finding]:
    """`allocation: dra` needs a chart that ships the GPUCluster stack (capability gpuClusterStack: the GPUCluster
    CRD and the `gpuCluster` values, from v26.7.0)."""
    version = ctx.intent.spec.operator.chart_version
    facts = catalog.chart(version)
    if facts is None:
        return  # an unknown chart is GC318's
    if not facts.can("gpuClusterStack"):
        first = catalog.first_release_with("gpuClusterStack") or "a newer release"
        yield ctx.finding("GC431", ("spec", "operator", "chartVersion"),
                          f"chart {version} has no GPUCluster (DRA) stack; it ships from {first}",
                          f"pin chartVersion {first} or later, {HINT_PLUGIN}")


@dra_rule("GC432", "the platform has a DRA procedure and no device plugin of its own")
def dra_platform(ctx: Context) -> Iterator[Finding]:
    """`allocation: dra` on a platform without a documented DRA procedure (GKE), or whose nodes run a device plugin of
    their own (EKS Bottlerocket), which must not share a node with the DRA driver's GPU plugin."""
    cluster = ctx.intent.spec.cluster
    if cluster.distribution == "gke":
        yield ctx.finding("GC432", (*CLUSTER, "distribution"),
                          "the GPU Operator documents no GPUCluster (DRA) procedure for GKE (NV-docs)",
                          "keep allocation: devicePlugin on GKE")
    if plan.eks_ami(ctx.intent) == "bottlerocket":
        # platform facts: Bottlerocket ships its own device plugin; the DRA GPU kubelet plugin must not share a node
        # with a classic nvidia.com/gpu device plugin (DRV templates/validation.yaml; facts §4).
        loc = (*CLUSTER, "eks", "ami") if cluster.eks is not None else (*CLUSTER, "distribution")
        yield ctx.finding("GC432", loc, "Bottlerocket nodes run their own NVIDIA device plugin, which must not share a "
                          "node with the DRA driver's GPU plugin", f"use ami al2023 or ubuntu, {HINT_PLUGIN}")


def _gfd_label(key: str) -> bool:
    return key.startswith(dra.GFD_LABEL_PREFIXES) and not key.startswith(dra.OPERATOR_LABEL_PREFIXES)


@dra_rule("GC433", "no settings of operands the DRA stack does not run")
def dra_refused_settings(ctx: Context) -> Iterator[Finding]:
    """Under DRA, no settings of operands the DRA stack does not run (device plugin, GFD, MIG Manager, container
    toolkit): `migStrategy`, `containerRuntime`, `renameByDefault` and `failRequestsGreaterThanOne`, GFD labels in pool
    selectors, overrides of values only the ClusterPolicy template reads, and overrides of what gpuconf derives
    (`gpuCluster`, `clusterPolicy`, `draDriver.featureGates`)."""
    spec = ctx.intent.spec
    cluster = spec.cluster
    if cluster.mig_strategy is not None:
        yield ctx.finding("GC433", (*CLUSTER, "migStrategy"), "the MIG strategy is a device-plugin and GFD setting; "
                          "the DRA stack runs neither (every MIG profile gets a DeviceClass of its own)",
                          "remove migStrategy")
    if cluster.container_runtime is not None:
        yield ctx.finding("GC433", (*CLUSTER, "containerRuntime"), "the DRA stack does not run the container toolkit, "
                          "so it configures no container runtime: the runtime must have CDI on (containerd 2.0 and "
                          "CRI-O 1.27 have it by default)", "remove containerRuntime")
    for name, profile in spec.sharing_profiles.items():
        loc = ("spec", "sharingProfiles", name)
        for block, key, fields in (("timeSlicing", profile.time_slicing, ("renameByDefault", "failRequestsGreaterThanOne")),
                                   ("mps", profile.mps, ("renameByDefault",))):
            if key is None:
                continue
            for field in fields:
                python_name = "rename_by_default" if field == "renameByDefault" else "fail_requests_greater_than_one"
                if python_name in key.model_fields_set:
                    yield ctx.finding("GC433", (*loc, block, field), f"{field} is a device-plugin setting; under DRA "
                                      "a claim names its DeviceClass and there is no extended resource to rename or "
                                      "limit", f"remove {field}")
    for i, pool in enumerate(spec.pools):
        for key in pool.match.node_labels:
            if _gfd_label(key):
                yield ctx.finding("GC433", ("spec", "pools", i, "match", "nodeLabels", key),
                                  f"{key} is a GPU Feature Discovery label; GFD does not run on the DRA stack, so no "
                                  "node carries it", "match on the PCI device (pciDevice: true) or a node group's label",
                                  at_key=True)
    for i, override in enumerate(spec.overrides):
        top = override.path.split(".")[0]
        if top in dra.CLUSTERPOLICY_ONLY_VALUES:
            yield ctx.finding("GC433", ("spec", "overrides", i, "path"), f"{override.path} is read only by the "
                              "ClusterPolicy template; the DRA stack renders a GPUCluster, which ignores it",
                              f"remove the override; the GPUCluster reads {', '.join(dra.GPUCLUSTER_VALUES)}")
        elif top in ("gpuCluster", "clusterPolicy") or override.path.startswith("draDriver.featureGates"):
            yield ctx.finding("GC433", ("spec", "overrides", i, "path"), f"{override.path} is derived by gpuconf "
                              "from spec.cluster.allocation and the sharing profiles", "remove the override")


@dra_rule("GC434", "MIG pools under DRA say who makes their instances, and the driver can run that way")
def dra_mig(ctx: Context) -> Iterator[Finding]:
    """MIG pools under DRA set `spec.cluster.dra.migPartitions` (dynamic: the driver's DynamicMIG gate; external:
    instances made before the driver starts); no time-slicing on MIG (the driver ignores it); no dynamic MIG next to an
    MPS pool (the driver refuses the gate pair at startup); (warning) dynamic MIG before 1.36 needs the
    DRAPartitionableDevices gate; (warning) `migPartitions` without MIG pools."""
    settings = ctx.intent.spec.cluster.dra
    partitions = settings.mig_partitions if settings is not None else None
    mig = [(i, pool, prof) for i, pool in enumerate(ctx.intent.spec.pools)
           if (prof := plan.pool_profile(ctx.intent, pool)) is not None and prof.mig is not None]
    if mig and partitions is None:
        i, pool, _ = mig[0]
        yield ctx.finding("GC434", ("spec", "pools", i, "sharing"),
                          f"pool {pool.name!r} uses MIG, and on the DRA stack no MIG Manager partitions GPUs: say who "
                          "makes the instances", "set spec.cluster.dra.migPartitions: dynamic (the driver's "
                          "DynamicMIG gate, alpha) or external (made before the driver starts, e.g. by mig-parted)")
    for name, profile in ctx.intent.spec.sharing_profiles.items():
        if profile.mig is not None and profile.time_slicing is not None:
            yield ctx.finding("GC434", ("spec", "sharingProfiles", name, "timeSlicing"),
                              "time-slicing on MIG devices does nothing under the DRA driver (DRV-docs mig.md)",
                              "remove timeSlicing from the MIG profile")
    if partitions == "dynamic" and mig:  # the DynamicMIG gate is on only where a pool uses MIG (dra.feature_gates)
        mps = [(name, p) for name, p in ctx.intent.spec.sharing_profiles.items() if p.mps is not None]
        used = {pool.sharing for pool in ctx.intent.spec.pools}
        for name, _ in mps:
            if name in used:
                # DRV pkg/featuregates/featuregates.go: DynamicMIG and MPSSupport are refused together at startup.
                yield ctx.finding("GC434", ("spec", "sharingProfiles", name, "mps"),
                                  "the DRA driver refuses to start with both DynamicMIG and MPSSupport on",
                                  "use migPartitions: external, or share these GPUs by time-slicing")
        if _minor(ctx.intent.spec.cluster.kubernetes_version) < (1, 36):
            yield ctx.finding("GC434", (*CLUSTER, "dra", "migPartitions"),
                              "dynamic MIG needs the Kubernetes feature gate DRAPartitionableDevices on kube-apiserver "
                              "and kube-scheduler, which is off by default before 1.36", "turn the gate on in the "
                              "control plane; gpuconf cannot check it", severity=WARNING)
    if partitions is not None and not mig:
        yield ctx.finding("GC434", (*CLUSTER, "dra", "migPartitions"), "no pool uses MIG",
                          "remove migPartitions", severity=WARNING)


@dra_rule("GC435", "DRA nodes take no automatic driver upgrades")
def dra_driver_upgrade(ctx: Context) -> Iterator[Finding]:
    """DRA nodes take no automatic driver upgrades (NVIDIA's DRA install guide): no `autoUpgrade: true`, upgrade
    waves, `canaryPool` or `rollout`; gpuconf sets `autoUpgrade: false` itself."""
    up = ctx.intent.spec.driver.upgrade
    if up is None:
        return
    loc = ("spec", "driver", "upgrade")
    # NV-docs: driver auto-upgrade is not supported for DRA nodes (NVIDIADriver upgradePolicy.autoUpgrade: false).
    if up.auto_upgrade and "auto_upgrade" in up.model_fields_set:
        yield ctx.finding("GC435", (*loc, "autoUpgrade"), "the operator does not support driver auto-upgrade on DRA "
                          "nodes", "set autoUpgrade: false (gpuconf sets it for you when it is left out)")
    for key, field in (("waves", "waves"), ("canary_pool", "canaryPool"), ("rollout", "rollout")):
        if getattr(up, key):
            yield ctx.finding("GC435", (*loc, field), f"{field} orders a driver roll-out through automatic "
                              "upgrades, which DRA nodes do not take", f"remove {field}; upgrade DRA nodes by "
                              "replacing them")


@dra_rule("GC436", "each DRA pool's GPUs can be told apart by a DeviceClass")
def dra_pools_distinct(ctx: Context) -> Iterator[Finding]:
    """Each DRA pool's GPUs can be told apart by a DeviceClass, which sees device attributes and never the node: one
    pool per GPU model, on a model whose published product name gpuconf knows."""
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, pool in enumerate(ctx.intent.spec.pools):
        model = plan.gpu_model(ctx.intent, pool.gpu)
        if model is None:
            continue  # GC304's
        if not dra.product_names(model.id):
            yield ctx.finding("GC436", ("spec", "pools", i, "gpu"),
                              f"gpuconf does not know the product name the DRA driver publishes for {model.id}, so "
                              "it cannot write a selector for the pool's devices",
                              f"{HINT_PLUGIN.removeprefix('or ')}: the models gpuconf knows it for are "
                              f"{', '.join(sorted(dra.PRODUCT_NAMES)[:6])}, ...")
            continue
        by_model[model.id].append(i)
    for model_id, indexes in by_model.items():
        first = ctx.intent.spec.pools[indexes[0]].name
        for i in indexes[1:]:
            yield ctx.finding("GC436", ("spec", "pools", i, "gpu"),
                              f"pools {first!r} and {ctx.intent.spec.pools[i].name!r} both have {model_id} GPUs; a "
                              "DeviceClass selects devices by their attributes, never by node, so their classes, "
                              "claims and quotas would take either pool's GPUs", "merge the pools into one")


@dra_rule("GC437", "Kueue can account DRA claims")
def dra_kueue(ctx: Context) -> Iterator[Finding]:
    """Kueue on the DRA stack: v0.18 or later (KueueDRAIntegration on by default), at most 16 DeviceClasses (Kueue's
    `deviceClassMappings` limit) and class names of at most 63 characters."""
    kueue = plan.kueue_settings(ctx.intent)
    if kueue is None:
        return
    loc = ("spec", "queueing", "kueue")
    digits = kueue.version.lstrip("v").split(".")
    if len(digits) >= 2 and all(d.isdigit() for d in digits[:2]) \
            and (int(digits[0]), int(digits[1])) < dra.KUEUE_MIN_VERSION:
        yield ctx.finding("GC437", (*loc, "version"), f"Kueue {kueue.version} accounts DRA claims only behind an "
                          "alpha gate; KueueDRAIntegration is on by default from v0.18",
                          "use Kueue v0.18 or later")
    classes = []
    for pool in ctx.intent.spec.pools:
        cap = plan.pool_capacity(ctx.intent, pool)
        if cap is not None:
            classes += [dra.class_of_key(key) for key in cap.per_node]
    if len(classes) > dra.KUEUE_MAX_MAPPINGS:
        yield ctx.finding("GC437", loc, f"the pools have {len(classes)} DeviceClasses that quotas count, but Kueue's "
                          f"Configuration holds at most {dra.KUEUE_MAX_MAPPINGS} deviceClassMappings",
                          "use fewer MIG profiles or pools", at_key=True)
    for name in classes:
        if name is not None and len(name) > 63:
            yield ctx.finding("GC437", loc, f"DeviceClass {name} is longer than 63 characters, which Kueue's "
                              "deviceClassMappings refuse", "use a shorter pool name", at_key=True)

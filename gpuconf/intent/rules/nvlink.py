"""Domain rules of multi-node NVLink pools (pools[].nvlink) and the DRA driver release that serves their
ComputeDomains (spec.computeDomains): GC470-GC476.

Sources (keys of ../shared/reference/dra/facts.md §0): DRV-docs prerequisites.md (Kubernetes v1.34.2 or later; driver
570.158.01 or later for ComputeDomains, since the default IMEXDaemonsWithDNSNames gate needs it; GPU Feature Discovery
publishes the nvidia.com/gpu.clique label ComputeDomains need), DRV chart v0.4.1 (one nvidiaDriverRoot per release).
"""

from __future__ import annotations

from typing import Iterator

from ... import dra, plan
from ...findings import WARNING, Finding
from ...hazards import version_key
from .base import Context, pool_loc, rule
from .syntax import qualified_name_problem, shown_text

#: The oldest driver the ComputeDomain kubelet plugin starts on with its default gates (DRV-docs prerequisites.md).
MIN_DRIVER = "570.158.01"


def nvlink_pools(intent) -> list[tuple[int, object]]:
    """(index, pool) of the pools that declare an NVLink domain."""
    return [(i, p) for i, p in enumerate(intent.spec.pools) if p.nvlink is not None]


@rule("GC470", "ComputeDomains follow the pools that declare nvlink, on either allocation stack")
def compute_domains_stack(ctx: Context) -> Iterator[Finding]:
    """spec.computeDomains configures the DRA driver release gpuconf delivers beside the device plugin, so it needs a
    pool with `nvlink` and the devicePlugin stack (on the dra stack the operator runs the driver); on the dra stack,
    nvlink pools need the ComputeDomain half (`dra.computeDomains` left out or true)."""
    spec = ctx.intent.spec
    pools = nvlink_pools(ctx.intent)
    if spec.compute_domains is not None:
        if dra.enabled(ctx.intent):
            yield ctx.finding("GC470", ("spec", "computeDomains"), "on allocation dra the operator's GPUCluster runs "
                              "the DRA driver, ComputeDomains included; gpuconf delivers no second release",
                              "remove spec.computeDomains (spec.cluster.dra.computeDomains switches them)",
                              at_key=True)
        elif not pools:
            yield ctx.finding("GC470", ("spec", "computeDomains"), "no pool declares nvlink, so no node needs "
                              "ComputeDomains", "add nvlink to the pools of NVLink racks, or remove "
                              "spec.computeDomains", at_key=True)
    settings = spec.cluster.dra
    if pools and dra.enabled(ctx.intent) and settings is not None and "compute_domains" in settings.model_fields_set \
            and not settings.compute_domains:
        names = ", ".join(p.name for _, p in pools)
        yield ctx.finding("GC470", ("spec", "cluster", "dra", "computeDomains"), f"pool(s) {names} declare nvlink, "
                          "but the ComputeDomain half of the driver is switched off", "remove computeDomains: false")


@rule("GC471", "ComputeDomains need Kubernetes 1.34 or later")
def nvlink_kubernetes(ctx: Context) -> Iterator[Finding]:
    """The DRA driver serves ComputeDomain channels through resource.k8s.io/v1, served by default from 1.34; its
    docs ask for 1.34.2."""
    pools = nvlink_pools(ctx.intent)
    version = ctx.intent.spec.cluster.kubernetes_version
    if pools and version_key(version) < dra.MIN_KUBERNETES and not dra.enabled(ctx.intent):  # dra: GC430 says it
        yield ctx.finding("GC471", ("spec", "cluster", "kubernetesVersion"), f"pool {pools[0][1].name} declares "
                          f"nvlink: ComputeDomains need Kubernetes 1.34 or later (DRA's resource.k8s.io/v1), but the "
                          f"cluster runs {version}", "upgrade the cluster to 1.34.2 or later first")


@rule("GC472", "an NVLink pool's driver runs the ComputeDomain plugin")
def nvlink_driver(ctx: Context) -> Iterator[Finding]:
    """The ComputeDomain kubelet plugin does not start on a driver older than 570.158.01 (its default
    IMEXDaemonsWithDNSNames gate needs it)."""
    for i, pool in nvlink_pools(ctx.intent):
        version = plan.effective_driver(ctx.intent, pool)
        if version is None or version_key(version) >= version_key(MIN_DRIVER):
            continue
        own = pool.driver is not None and pool.driver.version
        loc = pool_loc(i, "driver", "version") if own else (
            ("spec", "driver", "version") if ctx.intent.spec.driver.version else pool_loc(i, "nvlink"))
        yield ctx.finding("GC472", loc, f"pool {pool.name} declares nvlink, but its driver {version} is older than "
                          f"{MIN_DRIVER}, the first the ComputeDomain kubelet plugin starts on",
                          f"pin driver {MIN_DRIVER} or later for the pool")


@rule("GC473", "the NVLink pools share one driver root")
def nvlink_driver_root(ctx: Context) -> Iterator[Finding]:
    """The DRA driver release has one nvidiaDriverRoot: the NVLink pools either all run the operator's driver
    (/run/nvidia/driver) or all a host driver."""
    pools = nvlink_pools(ctx.intent)
    if dra.enabled(ctx.intent) or len(pools) < 2:
        return
    host = [(i, p) for i, p in pools if plan.pool_driver(ctx.intent, p) == "preinstalled"]
    if host and len(host) < len(pools):
        hosts = {i for i, _ in host}
        managed = [p.name for j, p in pools if j not in hosts]
        i, pool = host[0]
        yield ctx.finding("GC473", pool_loc(i, "driver"), f"pool {pool.name} keeps its host driver while NVLink "
                          f"pool(s) {', '.join(managed)} run the operator's: the DRA driver release has one driver "
                          "root for all of them", "give the NVLink pools the same driver mode")


@rule("GC474", "an NVLink pool's nodes fill its racks")
def nvlink_racks(ctx: Context) -> Iterator[Finding]:
    """(warning) An NVLink pool whose node count is not a whole number of racks has a partial NVLink domain; (error)
    the rack label is a label key."""
    for i, pool in nvlink_pools(ctx.intent):
        link = pool.nvlink
        if link.rack_label is not None:
            problem = qualified_name_problem(link.rack_label)
            if problem:
                yield ctx.finding("GC474", pool_loc(i, "nvlink", "rackLabel"), f"{shown_text(link.rack_label)} is not a label "
                                  f"key: {problem}", "name the node label that holds the rack, e.g. example.com/rack")
        if pool.nodes % link.trays_per_rack:
            racks, rest = divmod(pool.nodes, link.trays_per_rack)
            yield ctx.finding("GC474", pool_loc(i, "nodes"), f"pool {pool.name} has {pool.nodes} nodes: {racks} "
                              f"full rack(s) of {link.trays_per_rack} trays and one of {rest}; a job spanning more "
                              f"than {rest} trays cannot land in that one", "count whole racks (nodes a multiple "
                              "of traysPerRack) unless the rack is partial indeed", severity=WARNING)


@rule("GC475", "a team's multi-node jobs on an NVLink pool can be queued")
def nvlink_queue(ctx: Context) -> Iterator[Finding]:
    """(warning) With Kueue, an NVLink pool's flavor is topology-aware, and Kueue v0.19.2 refuses a pod set bound to
    a topology whose cpu or memory would come from the team's `otherResources`, which sit on a flavor without one
    (pkg/scheduler/flavorassigner/tas_flavorassigner.go, checkPodSetAndFlavorMatchForTAS)."""
    kueue = ctx.intent.spec.queueing.kueue if ctx.intent.spec.queueing is not None else None
    if kueue is None:
        return
    linked = {p.name for _, p in nvlink_pools(ctx.intent)}
    for team in ctx.intent.spec.teams:
        pools = sorted(linked & set(team.quota))
        settings = kueue.teams.get(team.name)
        if pools and settings is not None and settings.other_resources:
            yield ctx.finding("GC475", ("spec", "queueing", "kueue", "teams", team.name, "otherResources"),
                              f"team {team.name} has quota on NVLink pool(s) {', '.join(pools)}, whose flavor is "
                              "topology-aware: Kueue refuses a multi-node job that asks for a topology and requests "
                              "cpu or memory, which these quotas put on a flavor without one",
                              "remove the team's otherResources and set quotaCheckStrategy: IgnoreUndeclared (as "
                              "your Kueue runs), or keep cpu and memory out of its multi-node jobs",
                              severity=WARNING, at_key=True)


@rule("GC476", "the DRA driver release has a namespace of its own")
def compute_domains_namespace(ctx: Context) -> Iterator[Finding]:
    """spec.computeDomains.namespace is neither `default` (the chart refuses to render there: templates/
    validation.yaml, allowDefaultNamespace) nor a team's namespace (the release's kubelet plugin and IMEX daemons are
    privileged, and a team's developers may edit what runs there); the operator's own namespace is fine."""
    settings = ctx.intent.spec.compute_domains
    if settings is None:
        return
    loc = ("spec", "computeDomains", "namespace")
    teams = {ns: t.name for t in ctx.intent.spec.teams for ns in t.namespaces}
    if settings.namespace == "default":
        yield ctx.finding("GC476", loc, "the DRA driver chart refuses to render into the default namespace",
                          "keep the default, dra-driver-nvidia-gpu, or name a namespace of its own")
    elif settings.namespace in teams:
        yield ctx.finding("GC476", loc, f"{settings.namespace} is team {teams[settings.namespace]}'s namespace: the "
                          "release runs privileged pods, which the team's developers could change",
                          "keep the default, dra-driver-nvidia-gpu, or the operator's namespace")

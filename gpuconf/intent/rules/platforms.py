"""Domain rules of the platforms: what GKE, EKS (+ Karpenter), AKS and OpenShift allow, from gpuconf.platforms.

Registered into rules.RULES like the other domain rules (the package's __init__ loads this module).
"""

from __future__ import annotations

from typing import Iterator

from ... import platforms, plan
from ...findings import WARNING, Finding
from .base import Context, rule

CLUSTER = ("spec", "cluster")


def _pool_loc(i: int, *rest: str | int) -> tuple:
    return ("spec", "pools", i, *rest)


def _driver_loc(ctx: Context, i: int) -> tuple:
    """Where a pool's managed driver comes from: its own driver block, else the cluster's version or driver."""
    pool = ctx.intent.spec.pools[i]
    if pool.driver is not None:
        return _pool_loc(i, "driver")
    driver = ctx.intent.spec.driver
    if driver.version:
        return ("spec", "driver", "version")
    return ("spec", "driver", "preinstalled") if driver.preinstalled is not None else (*CLUSTER, "distribution")


# --- Karpenter ------------------------------------------------------------------------------------------------


@rule("GC345", "Karpenter pools can be launched: settings given, an EC2 instance family carries the GPU")
def karpenter_pools(ctx: Context) -> Iterator[Finding]:
    """Karpenter pools (selected by `karpenter.sh/nodepool`) can be launched: an EC2 instance family carries the
    pool's model with `gpusPerNode` GPUs, the AMI has a Karpenter alias (not ubuntu), one NodePool per pool, no
    label Karpenter reserves; (warning) no `spec.cluster.eks.karpenter`, or not EKS: gpuconf renders no
    NodePool."""
    from ...render import karpenter

    cluster = ctx.intent.spec.cluster
    label = karpenter.nodepool_label()
    pools = [(i, p) for i, p in enumerate(ctx.intent.spec.pools) if label in p.match.node_labels]
    if not pools:
        return
    settings = cluster.eks.karpenter if cluster.eks is not None else None
    if cluster.distribution != "eks":
        for i, pool in pools:
            yield ctx.finding("GC345", _pool_loc(i, "match", "nodeLabels", label),
                              f"gpuconf renders Karpenter NodePools for EKS only (distribution is "
                              f"{cluster.distribution}), so nothing puts the pool's labels on the nodes",
                              "add the pool's labels and taints (REPORT.md's pool table) to your NodePool's template",
                              severity=WARNING, at_key=True)
        return
    if settings is None:
        for i, pool in pools:
            yield ctx.finding("GC345", _pool_loc(i, "match", "nodeLabels", label),
                              f"pool {pool.name!r} is Karpenter NodePool {pool.match.node_labels[label]!r}, whose "
                              "template must carry the pool's labels and taints; without spec.cluster.eks.karpenter "
                              "gpuconf does not render it", "give spec.cluster.eks.karpenter (role, "
                              "subnetSelectorTerms, securityGroupSelectorTerms), or add the labels and taints of "
                              "REPORT.md's pool table to the NodePool yourself", severity=WARNING, at_key=True)
        return
    if plan.eks_ami(ctx.intent) == "ubuntu":
        yield ctx.finding("GC345", (*CLUSTER, "eks", "ami"),
                          "Karpenter has no alias for the Ubuntu EKS AMI: its EC2NodeClass needs amiFamily Custom, "
                          "the AMI's own selector terms and user data, which gpuconf does not render",
                          "use ami: al2023 or bottlerocket for Karpenter pools (their NVIDIA variants ship the "
                          "driver), or create the EC2NodeClass yourself")
    seen: dict[str, int] = {}
    for i, pool in pools:
        name = pool.match.node_labels[label]
        if name in seen:
            yield ctx.finding("GC345", _pool_loc(i, "match", "nodeLabels", label),
                              f"NodePool {name!r} is already pool {ctx.intent.spec.pools[seen[name]].name!r}'s",
                              "one NodePool per pool: its template carries one pool's labels")
        seen.setdefault(name, i)
        for key in pool.match.node_labels:
            if karpenter.restricted(key) and not karpenter.requirement_key(key) and key != label:
                yield ctx.finding("GC345", _pool_loc(i, "match", "nodeLabels", key),
                                  f"Karpenter does not let a NodePool set {key} on its nodes",
                                  "select the pool by karpenter.sh/nodepool and labels of your own", at_key=True)
        model = plan.gpu_model(ctx.intent, pool.gpu)
        if model is None:
            continue  # GC304
        offers = platforms.ec2_offers(model.id)
        if not offers:
            known = sorted({f"{o['gpuName']} ({o['model']})" for o in platforms.karpenter()["instanceFamilies"]
                            if o["model"]})
            yield ctx.finding("GC345", _pool_loc(i, "gpu"),
                              f"no EC2 instance type carries {model.id}: Karpenter can never launch pool "
                              f"{pool.name!r}", f"EC2's GPUs by Karpenter's instance-gpu-name: {', '.join(known)}")
        elif not any(pool.gpus_per_node in o["gpuCounts"] for o in offers):
            counts = ", ".join(f"{'/'.join(o['families'])}: {', '.join(map(str, o['gpuCounts']))}" for o in offers)
            yield ctx.finding("GC345", _pool_loc(i, "gpusPerNode"),
                              f"no EC2 instance type has {pool.gpus_per_node} x {model.id} ({counts} per instance)",
                              "use a GPU count an instance size of these families has")


# --- drivers and device plugins the platform brings -----------------------------------------------------------


@rule("GC346", "the platform's own driver, toolkit and device plugin leave room for the pool's settings")
def platform_stack(ctx: Context) -> Iterator[Finding]:
    """The platform's own stack leaves room for the pool: EKS's al2023/bottlerocket AMIs ship the driver (no
    operator driver), Bottlerocket's device plugin serves exclusive GPUs only, GKE and AKS take one driver mode
    for all pools, a GKE accelerator label names the pool's model, operand tolerations keep GKE's
    `nvidia.com/gpu` taint."""
    intent = ctx.intent
    cluster = intent.spec.cluster
    pools = intent.spec.pools
    drivers = [plan.pool_driver(intent, p) for p in pools]
    managed = [i for i, d in enumerate(drivers) if d != "preinstalled"]
    ami = plan.eks_ami(intent)
    if ami in ("al2023", "bottlerocket") and managed:
        i = managed[0]
        yield ctx.finding("GC346", _driver_loc(ctx, i),
                          f"the EKS {ami} AMI ships the NVIDIA driver and toolkit, so the operator cannot install "
                          f"its driver on pool {pools[i].name!r}",
                          "use spec.cluster.eks.ami: ubuntu for operator-managed drivers (NVIDIA's EKS guide), or "
                          "keep the AMI's driver (remove the driver version)")
    if cluster.distribution in ("gke", "aks") and managed and len(managed) < len(pools):
        i = managed[0]
        why = {"gke": "the driver and toolkit install directories are cluster-wide (hostPaths.driverInstallDir, "
                      "toolkit.installDir)",
               "aks": "keeping AKS's driver switches the operator's toolkit off for the whole cluster"}
        yield ctx.finding("GC346", _driver_loc(ctx, i),
                          f"on {cluster.distribution} every pool uses the platform's driver or every pool the "
                          f"operator's: {why[cluster.distribution]}, but pool {pools[i].name!r} differs",
                          "give all pools one driver mode (spec.driver.preinstalled)")
    if ami == "bottlerocket":
        for i, pool in enumerate(pools):
            profile = plan.pool_profile(intent, pool)
            if profile is not None and plan.sharing_kind(profile) != "exclusive":
                yield ctx.finding("GC346", _pool_loc(i, "sharing"),
                                  "Bottlerocket's NVIDIA AMI runs its own device plugin (the operator's is switched "
                                  f"off), so gpuconf's {plan.sharing_kind(profile)} config would not reach it",
                                  "use exclusive GPUs on Bottlerocket, or spec.cluster.eks.ami: al2023")
    if cluster.distribution == "gke":
        yield from _gke_labels(ctx)
        yield from _gke_tolerations(ctx)


def _gke_labels(ctx: Context) -> Iterator[Finding]:
    key = platforms.gke()["labels"]["accelerator"]
    for i, pool in enumerate(ctx.intent.spec.pools):
        value = pool.match.node_labels.get(key)
        models = platforms.gke_accelerator_models(value) if value is not None else None
        if models is not None and pool.gpu not in models:
            yield ctx.finding("GC346", _pool_loc(i, "match", "nodeLabels", key),
                              f"GKE's accelerator {value} is {' or '.join(models)}, not the pool's {pool.gpu}",
                              "select the node pool of the pool's GPU model, or fix the pool's gpu")


def _gke_tolerations(ctx: Context) -> Iterator[Finding]:
    taint = platforms.gke()["gpuTaint"]
    for i, override in enumerate(ctx.intent.spec.overrides):
        if override.path not in ("daemonsets.tolerations", "node-feature-discovery.worker.tolerations"):
            continue
        items = override.value if isinstance(override.value, list) else []
        if not any(isinstance(t, dict) and t.get("key") in (taint["key"], None) and t.get("operator") == "Exists"
                   and t.get("effect") in (taint["effect"], None) for t in items):
            yield ctx.finding("GC346", ("spec", "overrides", i, "value"),
                              f"GKE taints its GPU nodes {taint['key']}:{taint['effect']}, which this list no longer "
                              "tolerates: no operand (or NFD worker) would run on them",
                              f"keep {{key: {taint['key']}, operator: Exists, effect: {taint['effect']}}} in the list")


# --- OpenShift --------------------------------------------------------------------------------------------------


@rule("GC348", "the OpenShift OLM route has what it needs")
def openshift_olm(ctx: Context) -> Iterator[Finding]:
    """The OpenShift OLM route has the pinned chart's bundle facts (v26.7.0) and is not delivered by Flux
    (gpuconf's Flux layout deploys the chart)."""
    cluster = ctx.intent.spec.cluster
    if cluster.distribution == "openshift" and cluster.openshift is not None and \
            cluster.openshift.install != "olm" and cluster.openshift.catalog_source is not None:
        yield ctx.finding("GC348", ("spec", "cluster", "openshift", "catalogSource"),
                          "catalogSource is the OLM Subscription's, but the operator is installed with Helm",
                          "remove catalogSource, or set install: olm")
    if cluster.distribution != "openshift" or (cluster.openshift is not None and cluster.openshift.install != "olm"):
        return
    version = ctx.intent.spec.operator.chart_version
    from ... import catalog

    if catalog.chart(version) is not None and platforms.olm_bundle(version) is None:
        known = ", ".join(sorted(platforms.openshift()["olm"]))
        yield ctx.finding("GC348", ("spec", "operator", "chartVersion"),
                          f"gpuconf knows the OLM bundle (package, catalogue, channel) of chart {known} only, not of "
                          f"{version}", f"pin chart {known}, or install with Helm (spec.cluster.openshift.install: helm)")
    if ctx.intent.spec.delivery.tool == "flux":
        yield ctx.finding("GC348", ("spec", "delivery", "tool"),
                          "gpuconf's Flux layout deploys the Helm chart; it has no OLM variant yet",
                          "deliver with argocd or none, or install with Helm (spec.cluster.openshift.install: helm)")


@rule("GC337", "Red Hat's NFD Operator is installed by OLM, from a catalogue the cluster has")
def openshift_nfd_operator(ctx: Context) -> Iterator[Finding]:
    """`spec.cluster.openshift.nfdOperator` (Red Hat's NFD Operator through OLM) needs `install: olm`; (warning) next
    to a mirrored `catalogSource`, it names its own mirrored catalogue, since a disconnected cluster has no
    `redhat-operators`."""
    settings = ctx.intent.spec.cluster.openshift
    if settings is None or settings.nfd_operator is None:
        return
    loc = ("spec", "cluster", "openshift", "nfdOperator")
    if settings.install != "olm":
        yield ctx.finding("GC337", loc, "nfdOperator installs Red Hat's NFD Operator through OLM, but the GPU "
                          "Operator is installed with Helm, whose chart runs NFD itself",
                          "remove nfdOperator, or set install: olm", at_key=True)
    elif settings.catalog_source is not None and settings.nfd_operator.catalog_source is None:
        from ...render.openshift import NFD_OPERATOR

        yield ctx.finding("GC337", loc, f"the GPU Operator installs from catalogue {settings.catalog_source.name!r}, "
                          f"but the NFD Operator from Red Hat's {NFD_OPERATOR['source']!r}, which a disconnected "
                          "cluster does not have", "give nfdOperator.catalogSource: the catalogue oc-mirror made of "
                          "redhat-operator-index", severity=WARNING, at_key=True)


# --- autoscaling: node ranges, Karpenter's lifecycle, node-pool scripts (issue 18) -----------------------------------


@rule("GC380", "a pool's node range is a range: minNodes at most nodes; Karpenter keeps no minimum")
def node_range(ctx: Context) -> Iterator[Finding]:
    """A pool's node range is a range: `minNodes` at most `nodes`; (warning) a Karpenter pool keeps no minimum
    (Karpenter launches nodes for pending pods only)."""
    for i, pool in enumerate(ctx.intent.spec.pools):
        if pool.min_nodes is None:
            continue
        if pool.min_nodes > pool.nodes:
            yield ctx.finding("GC380", _pool_loc(i, "minNodes"),
                              f"pool {pool.name!r} keeps at least {pool.min_nodes} nodes but has at most {pool.nodes}",
                              "nodes is the most the pool scales to: make minNodes at most nodes")
        elif pool.min_nodes > 0 and plan.karpenter_pool(ctx.intent, pool):
            yield ctx.finding("GC380", _pool_loc(i, "minNodes"),
                              f"Karpenter launches nodes for pending pods only: NodePool pools keep no minimum, so "
                              f"pool {pool.name!r} may shrink below {pool.min_nodes}",
                              "remove minNodes (a Karpenter pool scales from 0 to nodes), or keep a minimum with a "
                              "managed node group", severity=WARNING)


@rule("GC381", "Karpenter can simulate what a pool advertises: NodeOverlays for shared, MPS and MIG resources")
def karpenter_overlays(ctx: Context) -> Iterator[Finding]:
    """A Karpenter pool whose nodes advertise shared, MPS or MIG resources keeps its NodeOverlays
    (`karpenter.nodeOverlays`), else it never scales out; `karpenter` settings only on a pool that is a Karpenter
    NodePool gpuconf renders."""
    from ...render import karpenter

    for i, pool in enumerate(ctx.intent.spec.pools):
        if pool.karpenter is None:
            continue
        if not plan.karpenter_pool(ctx.intent, pool):
            yield ctx.finding("GC381", _pool_loc(i, "karpenter"),
                              f"pool {pool.name!r} is not a Karpenter NodePool gpuconf renders, so its karpenter "
                              "settings apply to nothing", "select the pool by karpenter.sh/nodepool on EKS with "
                              "spec.cluster.eks.karpenter, or remove karpenter", at_key=True)
            continue
        if pool.karpenter.node_overlays:
            continue
        capacity = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
        extra = karpenter.overlay_capacity(capacity.per_node) if capacity is not None else {}
        if extra:
            yield ctx.finding("GC381", _pool_loc(i, "karpenter", "nodeOverlays"),
                              f"Karpenter's simulation knows an instance type's nvidia.com/gpu only: a pod asking for "
                              f"{', '.join(extra)} never makes it launch a node of pool {pool.name!r}, so the pool "
                              "never scales out", "keep nodeOverlays (and run Karpenter with --feature-gates "
                              "NodeOverlay=true), or give the pool exclusive GPUs (or time-slicing without rename)")


@rule("GC382", "a Karpenter pool's requirements leave EC2 instance types to launch")
def karpenter_requirements(ctx: Context) -> Iterator[Finding]:
    """A Karpenter pool's requirements leave EC2 instance types to launch: the match's instance type, family, GPU
    name/count, architecture, OS and capacity type agree with the pool's GPU (EC2 facts) and with
    `karpenter.capacityTypes`; no capacity type twice."""
    from ...render import karpenter

    for i, pool in enumerate(ctx.intent.spec.pools):
        if not plan.karpenter_pool(ctx.intent, pool):
            continue
        model = plan.gpu_model(ctx.intent, pool.gpu)
        if model is None or not platforms.ec2_offers(model.id):
            continue  # GC304, GC345
        types = list(pool.karpenter.capacity_types) if pool.karpenter is not None else []
        if len(set(types)) != len(types):
            yield ctx.finding("GC382", _pool_loc(i, "karpenter", "capacityTypes"),
                              f"capacityTypes {types} names a capacity type twice", "name each once")
        _, conflicts = karpenter.requirements(model.id, pool.gpus_per_node, pool.match.node_labels, types)
        for key, why in conflicts.items():
            yield ctx.finding("GC382", _pool_loc(i, "match", "nodeLabels", key),
                              f"Karpenter can never launch pool {pool.name!r}: {why}",
                              "remove the label, or make it agree with the pool's gpu and gpusPerNode")


@rule("GC384", "a Karpenter pool that may launch reserved capacity selects the reservations it launches into")
def karpenter_reservations(ctx: Context) -> Iterator[Finding]:
    """Capacity type `reserved` launches only into the capacity reservations the pool's EC2NodeClass selects
    (`karpenter.capacityReservations`, its capacityReservationSelectorTerms; karpenter-facts, nodeclasses.md); (warning)
    reservations on a pool whose capacity types leave out `reserved` are never used."""
    from ...render import karpenter

    for i, pool in enumerate(ctx.intent.spec.pools):
        if not plan.karpenter_pool(ctx.intent, pool):
            continue
        settings = pool.karpenter
        types = list(settings.capacity_types) if settings is not None else []
        label = pool.match.node_labels.get(karpenter.CAPACITY_TYPE)
        reserved = "reserved" in types or label == "reserved"
        terms = settings.capacity_reservations if settings is not None else []
        if reserved and not terms:
            where = (_pool_loc(i, "karpenter", "capacityTypes") if "reserved" in types
                     else _pool_loc(i, "match", "nodeLabels", karpenter.CAPACITY_TYPE))
            yield ctx.finding("GC384", where, f"pool {pool.name!r} may launch reserved capacity, but its EC2NodeClass "
                              "selects no capacity reservation, so Karpenter has none to launch into",
                              "add karpenter.capacityReservations (an id, or tags of your reservations)")
        elif terms and not reserved:
            launches = ", ".join(types or [label]) if types or label else "on-demand (Karpenter's default)"
            yield ctx.finding("GC384", _pool_loc(i, "karpenter", "capacityReservations"),
                              f"pool {pool.name!r} selects capacity reservations but launches only {launches} "
                              "capacity, so they are never used",
                              "add reserved to karpenter.capacityTypes, or remove capacityReservations",
                              severity=WARNING, at_key=True)


@rule("GC383", "Karpenter's NodePool names are DNS-1123 subdomains that fit a label value")
def karpenter_names(ctx: Context) -> Iterator[Finding]:
    """A Karpenter NodePool name (the `karpenter.sh/nodepool` value) is a DNS-1123 subdomain of at most 63
    characters."""
    from ...render import karpenter

    label = karpenter.nodepool_label()
    for i, pool in enumerate(ctx.intent.spec.pools):
        name = pool.match.node_labels.get(label)
        if name is None or not plan.karpenter_pool(ctx.intent, pool):
            continue
        why = karpenter.name_problem(name)
        if why is not None:
            yield ctx.finding("GC383", _pool_loc(i, "match", "nodeLabels", label),
                              f"the API server refuses NodePool {name!r}: {why}",
                              "use lower-case letters, digits and '-', e.g. " + _dns_name(name))


def _dns_name(name: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:63] or "gpu"


def _taints_without_value(ctx: Context, i: int, tool: str) -> Iterator[Finding]:
    pool = ctx.intent.spec.pools[i]
    for t, taint in enumerate(pool.taints):
        if not taint.value:
            code = "GC385" if tool == "gcloud" else "GC386"
            yield ctx.finding(code, _pool_loc(i, "taints", t),
                              f"{tool} takes a node-pool taint as key=value:effect only, but taint {taint.key} of pool "
                              f"{pool.name!r} has no value", "give the taint a value, e.g. value: \"true\"")


@rule("GC385", "a GKE node pool's command matches the pool: accelerator count, spot, taints with values")
def gke_node_pools(ctx: Context) -> Iterator[Finding]:
    """A GKE node-pool command matches its pool: `cloud.google.com/gke-accelerator-count` is `gpusPerNode`,
    `cloud.google.com/gke-spot` is `true`, every taint has a value (gcloud takes `key=value:effect` only), and an
    accelerator-optimized series has a machine type with `gpusPerNode` GPUs."""
    if ctx.intent.spec.cluster.distribution != "gke":
        return
    gke = platforms.gke()
    for i, pool in enumerate(ctx.intent.spec.pools):
        labels = pool.match.node_labels
        if not any(k.startswith(gke["reservedLabelPrefix"]) for k in labels):
            continue
        count = labels.get(gke["labels"]["acceleratorCount"])
        if count is not None and count != str(pool.gpus_per_node):
            yield ctx.finding("GC385", _pool_loc(i, "match", "nodeLabels", gke["labels"]["acceleratorCount"]),
                              f"the match selects nodes with {count} GPUs but pool {pool.name!r} has "
                              f"{pool.gpus_per_node} per node", "make gpusPerNode and the accelerator count agree")
        spot = labels.get(gke["labels"]["spot"])
        if spot is not None and spot not in ("true", "false"):
            yield ctx.finding("GC385", _pool_loc(i, "match", "nodeLabels", gke["labels"]["spot"]),
                              f"GKE sets {gke['labels']['spot']} to true on Spot VMs, never to {spot!r}",
                              "use \"true\" (Spot VMs) or leave the label out")
        model = plan.gpu_model(ctx.intent, pool.gpu)
        accelerator = labels.get(gke["labels"]["accelerator"])
        if accelerator is None and model is not None and len(platforms.gke_accelerators(model.id)) == 1:
            accelerator = next(iter(platforms.gke_accelerators(model.id)))
        if accelerator is not None and platforms.gke_machine_types(accelerator, pool.gpus_per_node) == ():
            sizes = sorted(platforms.GKE_MACHINE_TYPES[accelerator])
            yield ctx.finding("GC385", _pool_loc(i, "gpusPerNode"),
                              f"GKE's {accelerator} comes attached to machine types of {', '.join(map(str, sizes))} "
                              f"GPUs, none with {pool.gpus_per_node}, so no node pool of pool {pool.name!r} can be "
                              "created", f"make gpusPerNode one of {', '.join(map(str, sizes))}")
        yield from _taints_without_value(ctx, i, "gcloud")


@rule("GC386", "an AKS node pool's command runs: its name, autoscaling range, taints with values, the spot label")
def aks_node_pools(ctx: Context) -> Iterator[Finding]:
    """An AKS node-pool command runs: the agent pool name matches `^[a-z][a-z0-9]{0,11}$`, an autoscaled pool's
    --max-count lies in the range az accepts (0 to 1000), `kubernetes.azure.com/scalesetpriority` is `spot`, every
    taint has a value (az takes `key=value:effect` only)."""
    import re

    if ctx.intent.spec.cluster.distribution != "aks":
        return
    aks = platforms.aks()
    low_count, high_count = aks["nodePoolFlags"]["countRange"]  # az's validate_nodes_count (gke-aks-facts §b)
    spot_key, spot_value = platforms.AKS_SPOT_LABEL
    for i, pool in enumerate(ctx.intent.spec.pools):
        name = pool.match.node_labels.get(aks["agentPoolLabel"])
        if name is None:
            continue
        if not re.fullmatch(aks["nodePoolName"]["pattern"], name):  # gke-aks-facts §b: the service's rule
            yield ctx.finding("GC386", _pool_loc(i, "match", "nodeLabels", aks["agentPoolLabel"]),
                              f"AKS refuses node pool name {name!r}: a Linux node pool's name is 1 to 12 lower-case "
                              "letters and digits, starting with a letter", "rename the agent pool, e.g. "
                              + (re.sub(r"[^a-z0-9]", "", name.lower()).lstrip("0123456789")[:12] or "gpu"))
        if plan.min_nodes(ctx.intent, pool) < pool.nodes and pool.nodes > high_count:
            yield ctx.finding("GC386", _pool_loc(i, "nodes"),
                              f"az refuses --max-count {pool.nodes} for autoscaled pool {pool.name!r}: the cluster "
                              f"autoscaler's bounds of an AKS node pool lie between {low_count} and {high_count}",
                              f"give nodes at most {high_count}, or split the pool into agent pools of at most "
                              f"{high_count} nodes each")
        priority = pool.match.node_labels.get(spot_key)
        if priority is not None and priority != spot_value:
            yield ctx.finding("GC386", _pool_loc(i, "match", "nodeLabels", spot_key),
                              f"AKS labels the nodes of a Spot node pool {spot_key}={spot_value} (and gpuconf's "
                              f"script creates Spot VMs for that label); {priority!r} is no value AKS gives",
                              f"use {spot_value}, or leave the label out")
        yield from _taints_without_value(ctx, i, "az")


@rule("GC388", "an AKS Spot pool lists the taint AKS puts on its nodes, so the operator's pods tolerate it")
def aks_spot_taint(ctx: Context) -> Iterator[Finding]:
    """A pool that selects AKS Spot nodes (`kubernetes.azure.com/scalesetpriority: spot`) lists the taint AKS gives
    every node of a Spot node pool, `kubernetes.azure.com/scalesetpriority=spot:NoSchedule`: the operands, NFD's
    worker and the probes tolerate only the taints the pools list, so without it nothing of the GPU stack runs
    there and the nodes never advertise a GPU."""
    if ctx.intent.spec.cluster.distribution != "aks":
        return
    spot_key, spot_value = platforms.AKS_SPOT_LABEL
    key, value, effect = platforms.AKS_SPOT_TAINT
    for i, pool in enumerate(ctx.intent.spec.pools):
        if pool.match.node_labels.get(spot_key) != spot_value:
            continue
        if any((t.key, t.value, t.effect) == (key, value, effect) for t in pool.taints):
            continue
        hint = f"add to the pool's taints: - {{key: {key}, value: {value}, effect: {effect}}}"
        other = next((t for t, taint in enumerate(pool.taints) if taint.key == key), None)
        if other is not None:
            listed = pool.taints[other]
            yield ctx.finding("GC388", _pool_loc(i, "taints", other),
                              f"pool {pool.name!r} lists {key}={listed.value}:{listed.effect}, but AKS taints every "
                              f"node of a Spot node pool {key}={value}:{effect}: the toleration gpuconf derives from "
                              "the listed taint does not tolerate AKS's, so nothing of the GPU stack would run there",
                              f"make it {{key: {key}, value: {value}, effect: {effect}}}")
            continue
        yield ctx.finding("GC388", _pool_loc(i, "match", "nodeLabels", spot_key),
                          f"pool {pool.name!r} selects AKS Spot nodes, and AKS taints every node of a Spot node pool "
                          f"{key}={value}:{effect}; the pool does not list that taint, so the driver, device plugin, "
                          "NFD worker and probes would not tolerate it and the nodes would never advertise a GPU", hint)


@rule("GC387", "a probe that runs on every sync does not keep a pool that scales to zero awake")
def probe_modes(ctx: Context) -> Iterator[Finding]:
    """(warning) A pool that scales to zero has a probe that runs on every sync (`probe: hook`), which launches a
    node each time."""
    for i, pool in enumerate(ctx.intent.spec.pools):
        if pool.probe == "hook" and plan.min_nodes(ctx.intent, pool) == 0:
            yield ctx.finding("GC387", _pool_loc(i, "probe"),
                              f"pool {pool.name!r} scales to zero, but its probe runs on every sync and so launches a "
                              "node each time", "use probe: manual (apply probes/<pool>.yaml when you want the proof)",
                              severity=WARNING)

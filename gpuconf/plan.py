"""Plan: facts derived from a typed intent (MIG strategy, resource names, capacities), shared by checks and renderers."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Mapping

from . import catalog
from .intent.model import ClusterIntent, Pool, SharingProfile

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
#: Profiles every intent has without declaring them. Built without validation, so importing the plan builds no
#: pydantic validator (SharingProfile's own would be a second one beside the root's): the object is the one
#: `SharingProfile.model_validate({"exclusive": {}})` gives, fields set included (tests/test_plan.py).
BUILTIN_PROFILES = {"exclusive": SharingProfile.model_construct(exclusive={})}


def declared_models(intent: ClusterIntent) -> Mapping[str, catalog.GpuModel]:
    """The GPU models the intent declares (spec.gpuModels), as catalogue models flagged `declared`."""
    out = {}
    for model_id, decl in intent.spec.gpu_models.items():
        out[model_id] = catalog.GpuModel(
            id=model_id, name=decl.name or model_id, pci_device_ids=tuple(decl.pci_device_ids),
            memory_gib=decl.memory_gib, compute_capability=decl.compute_capability, family="",
            mig_capable=False, memory_slots=0, mig_profiles={}, balanced_layout={},
            pci_devices={pci: decl.name or model_id for pci in decl.pci_device_ids},
            sources=("declared in the intent (spec.gpuModels)",), confidence="user-declared",
            pci_subsystem_ids=tuple(decl.pci_subsystem_ids), product_labels=tuple(decl.product_labels),
            declared=True)
    return out


def gpu_model(intent: ClusterIntent, model_id: str) -> catalog.GpuModel | None:
    """A pool's GPU model: the catalogue's, else one the intent declares; None when neither has it."""
    found = catalog.gpu_model(model_id)
    if found is not None or not intent.spec.gpu_models:
        return found
    return declared_models(intent).get(model_id)


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


#: The last intent mig_pools read and its answer: a rule asks for every pool's capacity, and each asked for the MIG
#: strategy, which reads every pool (a 1,000-pool intent spent 30 s of its validation here). Intents are frozen;
#: held weakly, so a cached intent is still forgotten with its last user.
_LAST_MIG: list = [lambda: None, None]


def mig_pools(intent: ClusterIntent) -> list[tuple[Pool, dict[str, int]]]:
    """Pools that partition their GPUs with MIG, with their resolved layouts."""
    if _LAST_MIG[0]() is intent:
        return list(_LAST_MIG[1])
    out = []
    for pool in intent.spec.pools:
        layout = mig_layout(pool_profile(intent, pool), gpu_model(intent, pool.gpu))
        if layout:
            out.append((pool, layout))
    import weakref

    _LAST_MIG[:] = [weakref.ref(intent), out]
    return list(out)


def derived_mig_strategy(intent: ClusterIntent) -> str | None:
    """single when every MIG pool uses one uniform profile, mixed otherwise; None without MIG pools."""
    layouts = [layout for _, layout in mig_pools(intent)]
    if not layouts:
        return None
    return "single" if all(len(layout) == 1 for layout in layouts) else "mixed"


def mig_strategy(intent: ClusterIntent) -> str | None:
    """The strategy in effect: the pinned one if any, else the derived one; None under DRA, which has no device
    plugin (each MIG profile gets a DeviceClass of its own, as under mixed)."""
    if intent.spec.cluster.allocation == "dra":
        return None
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
    model = gpu_model(intent, pool.gpu)
    if profile is None or model is None:
        return None
    strategy = strategy if strategy is not None else mig_strategy(intent)
    gpus = pool.gpus_per_node
    if intent.spec.cluster.allocation == "dra":
        return PoolCapacity(dra_capacity(pool, profile, model), pool.nodes)
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


def dra_capacity(pool: Pool, profile: SharingProfile, model: catalog.GpuModel) -> dict[str, int]:
    """Under DRA, the quota keys a pool's devices count under, per node: a pool's GPUs (whatever their sharing: a
    quota counts devices, KW-quota) under its class, MIG instances under the class of their profile."""
    from . import dra

    if profile.mig is not None:
        layout = mig_layout(profile, model) or {}
        return {dra.quota_key(dra.class_name(pool.name, name)): count * pool.gpus_per_node
                for name, count in layout.items()}
    return {dra.quota_key(dra.class_name(pool.name)): pool.gpus_per_node}


def profile_resource(per_node: Mapping[str, int], profile_name: str) -> str | None:
    """The resource a pool advertises for a MIG profile: nvidia.com/mig-<profile> (or .shared when renamed), or
    under DRA the quota key of the profile's class. Exact names: 1g.10gb does not match 1g.10gb+me."""
    from . import dra

    base = mig_resource(profile_name)
    found = next((r for r in (base, base + ".shared") if r in per_node), None)
    return found if found is not None else dra.profile_key(per_node, profile_name)


def sharing_kind(profile: SharingProfile) -> str:
    """One word for a profile: exclusive, time-slicing, mps, mig or mig+time-slicing."""
    if profile.mig is not None:
        return "mig+time-slicing" if profile.time_slicing else "mig"
    if profile.mps is not None:
        return "mps"
    if profile.time_slicing is not None:
        return "time-slicing"
    return "exclusive"


# --- the render plan --------------------------------------------------------------------------------------------

POOL_LABEL = "gpuconf.dev/pool"
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"
# The operator keeps a preset value of nvidia.com/gpu.deploy.<operand> (gpu-operator-facts §7), so `false` set
# before the operator first labels a node is how a pool keeps its host driver.
DRIVER_DEPLOY_LABEL = "nvidia.com/gpu.deploy.driver"
DEVICE_PLUGIN_CONFIGMAP = "gpuconf-device-plugin-config"
MIG_CONFIGMAP = "gpuconf-mig-parted-config"
MIG_DISABLED = "all-disabled"
NVIDIA_PCI_VENDOR = "10de"


def config_key(base: str, content: object) -> str:
    """A content-addressed config name, valid as a ConfigMap key and as a label value (<= 63 characters).

    The device plugin does not reload changed content under an unchanged key (k8s-device-plugin #364,
    gpu-operator #1144): a new hash means a new label value on the pool, and so a reload.
    """
    return f"{base[:54].rstrip('-._')}-{content_digest(content)}"


def content_digest(content: object) -> str:
    """The 8 hex digits of a config's content hash: the suffix of its config_key."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:8]


def kept_key(profile: SharingProfile | None, which: str, content: object) -> str | None:
    """The name the nodes carry that the profile keeps for this config (keepNames.devicePlugin or .mig), while the
    content is the one its pinned hash names; None when it keeps none, or the content changed (then the key changes,
    as the device plugin does not reload edited content under an unchanged key)."""
    names = getattr(profile, "keep_names", None) if profile is not None else None
    kept = getattr(names, which, None) if names is not None else None
    return kept.name if kept is not None and kept.content == content_digest(content) else None


@dataclass(frozen=True)
class PoolPlan:
    """Everything the renderers need to know about one pool."""

    index: int
    pool: Pool
    model: catalog.GpuModel
    profile: SharingProfile
    capacity: PoolCapacity
    device_plugin_key: str
    mig_key: str | None  # None on models without MIG
    driver: str  # "cluster", "preinstalled", or the version of the pool's own NVIDIADriver
    labels: Mapping[str, str]
    nfd: bool  # labelled by a NodeFeatureRule (facts NFD sees); otherwise by its node group's template
    wave: int | None = None  # its upgrade wave (1-based) in wave mode: its NVIDIADriver follows the cluster's version

    @property
    def name(self) -> str:
        """The pool's name."""
        return self.pool.name

    @property
    def resource(self) -> str:
        """The resource a probe requests: the pool's first advertised resource."""
        return sorted(self.capacity.per_node)[0]


@dataclass(frozen=True)
class Plan:
    """Derived facts of a valid intent: the single input of every renderer."""

    intent: ClusterIntent
    source: str
    chart: catalog.ChartFacts
    strategy: str | None
    pools: tuple[PoolPlan, ...]
    device_plugin_configs: Mapping[str, dict]
    default_device_plugin_key: str
    mig_configs: Mapping[str, list]
    per_pool_drivers: bool
    tolerations: tuple[dict, ...]
    document: object = None  # the loaded Document, for source positions in comments and reports
    image_lock: object = None  # gpuconf.render.imagelock.Lock: spec.operator.imageLock, read
    previous_lock: object = None  # the same of spec.security.previousImageLock (the admission policy's transition)

    @functools.cached_property
    def pool_by_name(self) -> Mapping[str, PoolPlan]:
        """The pools by name (computed once; the plan is immutable)."""
        return {p.name: p for p in self.pools}

    def line(self, loc: tuple) -> int:
        """1-based line in the intent file of the intent path loc (1 without a document)."""
        return self.document.position(loc)[0] if self.document is not None else 1

    @property
    def name(self) -> str:
        """The cluster's name."""
        return self.intent.metadata.name

    @property
    def namespace(self) -> str:
        """The operator's namespace."""
        return self.intent.spec.operator.namespace

    @property
    def chart_version(self) -> str:
        """The pinned chart version."""
        return self.intent.spec.operator.chart_version

    @property
    def nfd_taints(self) -> bool:
        """True when NFD must apply taints (a tainted pool is labelled by a NodeFeatureRule)."""
        return any(p.nfd and p.pool.taints for p in self.pools)

    def image_repository(self, upstream: str) -> str:
        """Where an image repository of the chart is pulled from: the mirror when one is set."""
        return mirror_repository(upstream, self.intent.spec.operator.registry)


def mirror_repository(upstream: str, registry: str | None) -> str:
    """Map an upstream repository onto the mirror: drop the registry host (and nvcr.io's `nvidia` org).

    nvcr.io/nvidia -> MIRROR; nvcr.io/nvidia/k8s -> MIRROR/k8s; registry.k8s.io/nfd/x -> MIRROR/nfd/x.
    """
    if not registry or not upstream:
        return upstream
    host, _, path = upstream.partition("/")
    if host == "nvcr.io":
        path = path.removeprefix("nvidia").lstrip("/")
    return f"{registry.rstrip('/')}/{path}" if path else registry.rstrip("/")


def device_plugin_config(profile: SharingProfile, layouts: list[dict[str, int]], strategy: str | None) -> dict:
    """The k8s-device-plugin config file (version v1) for a sharing profile; only keys the plugin knows."""
    config: dict = {"version": "v1"}
    if profile.mps is not None:
        config["sharing"] = {"mps": {
            "renameByDefault": profile.mps.rename_by_default,
            "resources": [{"name": GPU, "replicas": profile.mps.replicas}],
        }}
    elif profile.time_slicing is not None:
        ts = profile.time_slicing
        if profile.mig is not None and strategy == "mixed":
            names = sorted({mig_resource(p) for layout in layouts for p in layout})
        else:
            names = [GPU]
        config["sharing"] = {"timeSlicing": {
            "renameByDefault": ts.rename_by_default,
            "failRequestsGreaterThanOne": ts.fail_requests_greater_than_one,
            "resources": [{"name": name, "replicas": ts.replicas} for name in names],
        }}
    return config


def eks_ami(intent: ClusterIntent) -> str | None:
    """The EKS nodes' AMI (al2023 unless the intent says otherwise), or None off EKS."""
    cluster = intent.spec.cluster
    if cluster.distribution != "eks":
        return None
    return cluster.eks.ami if cluster.eks is not None else "al2023"


def karpenter_pool(intent: ClusterIntent, pool: Pool) -> bool:
    """A pool whose nodes Karpenter launches from a NodePool gpuconf renders (EKS with Karpenter settings)."""
    from . import platforms

    cluster = intent.spec.cluster
    return (cluster.distribution == "eks" and cluster.eks is not None and cluster.eks.karpenter is not None
            and platforms.karpenter()["labels"]["nodePool"] in pool.match.node_labels)


def min_nodes(intent: ClusterIntent, pool: Pool) -> int:
    """The fewest nodes the pool has: its minNodes; 0 for a Karpenter pool (it launches nodes for pending pods
    only); else its fixed size."""
    if pool.min_nodes is not None:
        return pool.min_nodes
    return 0 if karpenter_pool(intent, pool) else pool.nodes


def probe_mode(intent: ClusterIntent, pool: Pool) -> str:
    """hook (a probe Job on every sync), manual (a Job file the user applies) or off; a pool that scales to zero
    defaults to manual, since each sync's probe would launch a node."""
    if pool.probe is not None:
        return pool.probe
    return "manual" if min_nodes(intent, pool) == 0 else "hook"


def platform_preinstalled(intent: ClusterIntent) -> bool:
    """Whether the platform's nodes bring the driver: GKE's driver installer, EKS's AL2023 and Bottlerocket AMIs."""
    # platform-facts §1: Google's installer is the usual GKE setup; §2: the accelerated AMIs ship driver and toolkit.
    return intent.spec.cluster.distribution == "gke" or eks_ami(intent) in ("al2023", "bottlerocket")


def cluster_preinstalled(intent: ClusterIntent) -> bool:
    """Whether the cluster's default driver is the host's: as the intent says, else managed when it pins a version,
    else the platform's default."""
    driver = intent.spec.driver
    if driver.preinstalled is not None:
        return driver.preinstalled
    return False if driver.version else platform_preinstalled(intent)


def pool_driver(intent: ClusterIntent, pool: Pool) -> str:
    """cluster, preinstalled, or the pool's own driver version."""
    if pool.driver is not None:
        if pool.driver.preinstalled:
            return "preinstalled"
        if pool.driver.version:
            return pool.driver.version
    return "preinstalled" if cluster_preinstalled(intent) else "cluster"


def effective_driver(intent: ClusterIntent, pool: Pool) -> str | None:
    """The driver version a pool's nodes run when gpuconf manages it (the pool's, the intent's, else the chart's
    default); None for a host driver, whose version gpuconf does not know."""
    mode = pool_driver(intent, pool)
    if mode == "preinstalled":
        return None
    if mode != "cluster":
        return mode
    if intent.spec.driver.version:
        return intent.spec.driver.version
    facts = catalog.chart(intent.spec.operator.chart_version)
    return (facts.defaults.get("driver") or {}).get("version") if facts is not None else None


def wave_mode(intent: ClusterIntent) -> bool:
    """True when the intent orders a driver upgrade in waves (waves, canaryPool or a rollout): then every pool on the
    cluster driver gets its own NVIDIADriver, so that one wave's change touches only that wave's pools."""
    up = intent.spec.driver.upgrade
    return up is not None and bool(up.waves or up.canary_pool or up.rollout)


def upgrade_waves(intent: ClusterIntent) -> list[list[str]]:
    """The waves of pools on the cluster driver, in order (the pools no wave lists form the last one); [] outside
    wave mode. Pools with their own version or a preinstalled driver are in no wave (validation refuses them)."""
    if not wave_mode(intent):
        return []
    up = intent.spec.driver.upgrade
    declared = [list(w) for w in up.waves] if up.waves else ([[up.canary_pool]] if up.canary_pool else [])
    listed = {name for wave in declared for name in wave}
    rest = [p.name for p in intent.spec.pools if pool_driver(intent, p) == "cluster" and p.name not in listed]
    return declared + ([rest] if rest else [])


def wave_versions(intent: ClusterIntent, chart_default: str) -> dict[str, tuple[int, str]]:
    """Pool name -> (wave number, driver version it runs) for the pools of the waves."""
    up = intent.spec.driver.upgrade
    current = intent.spec.driver.version or chart_default
    out = {}
    for number, wave in enumerate(upgrade_waves(intent), start=1):
        version = up.rollout.version if up.rollout is not None and number <= up.rollout.wave else current
        for name in wave:
            out.setdefault(name, (number, version))
    return out


def toleration(taint) -> dict:
    """The toleration that lets operands onto nodes with this taint."""
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


def build(intent: ClusterIntent, source: str, document: object = None) -> Plan:
    """Derive the plan of a valid intent (validation must have passed: this assumes catalogue hits)."""
    strategy = mig_strategy(intent)
    chart = catalog.chart(intent.spec.operator.chart_version)
    assert chart is not None, "validation guarantees a known chart version"
    exclusive = BUILTIN_PROFILES["exclusive"]
    plain = device_plugin_config(exclusive, [], strategy)
    dp_configs: dict[str, dict] = {}
    # The whole-GPU config is one key for every pool that runs it (MIG pools included) and for nodes in no pool: a
    # name the nodes carry for that very content (a profile's keepNames pinned to its hash) is that key.
    kept_plain = [k for _, p in sorted(intent.spec.sharing_profiles.items())
                  if (k := kept_key(p, "device_plugin", plain)) is not None]
    default_key = kept_plain[0] if kept_plain else config_key("exclusive", plain)
    dp_configs[default_key] = plain

    # Layouts per MIG profile and model, so one named mig-parted config serves every model that uses the profile.
    mig_entries: dict[str, dict[str, dict]] = {}
    for pool in intent.spec.pools:
        profile = pool_profile(intent, pool)
        model = gpu_model(intent, pool.gpu)
        layout = mig_layout(profile, model)
        if layout:
            mig_entries.setdefault(pool.sharing, {})[model.id] = {
                "device-filter": list(model.pci_device_ids),
                "devices": "all",
                "mig-enabled": True,
                "mig-devices": dict(sorted(layout.items())),
            }
    mig_configs: dict[str, list] = {MIG_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    mig_keys: dict[str, str] = {}
    for profile_name, by_model in sorted(mig_entries.items()):
        entries = [by_model[m] for m in sorted(by_model)]
        kept = kept_key(intent.spec.sharing_profiles.get(profile_name), "mig", entries)
        if kept is None or kept in mig_configs:  # a kept name serves one content only (GC311)
            kept = config_key(profile_name, entries)
        mig_keys[profile_name] = kept
        mig_configs[mig_keys[profile_name]] = entries

    pools = []
    tolerations: dict[tuple, dict] = {}
    waves = wave_versions(intent, chart.shared_defaults["driver"]["version"])
    for index, pool in enumerate(intent.spec.pools):
        profile = pool_profile(intent, pool)
        model = gpu_model(intent, pool.gpu)
        layouts = [dict(e["mig-devices"]) for e in mig_entries.get(pool.sharing, {}).values()]
        content = device_plugin_config(profile, layouts, strategy)
        key = kept_key(profile, "device_plugin", content)
        if key is None or dp_configs.get(key, content) != content:  # a kept name serves one content only (GC311)
            key = default_key if content == plain else config_key(pool.sharing, content)
        dp_configs[key] = content
        mig_key = (mig_keys.get(pool.sharing, MIG_DISABLED)) if model.mig_capable else None
        driver = pool_driver(intent, pool)
        wave = None
        if driver == "cluster" and pool.name in waves:
            wave, driver = waves[pool.name]
        labels = {POOL_LABEL: pool.name}
        if intent.spec.cluster.allocation != "dra":  # no device plugin and no MIG Manager read them on DRA
            labels[DEVICE_PLUGIN_LABEL] = key
            if mig_key is not None:
                labels[MIG_LABEL] = mig_key
        if driver == "preinstalled":
            labels[DRIVER_DEPLOY_LABEL] = "false"
        for taint in pool.taints:
            tol = toleration(taint)
            tolerations[(tol["key"], tol.get("value", ""), tol["effect"])] = tol
        pools.append(PoolPlan(
            index=index, pool=pool, model=model, profile=profile,
            capacity=pool_capacity(intent, pool, strategy), device_plugin_key=key, mig_key=mig_key,
            driver=driver, labels=dict(sorted(labels.items())), nfd=not pool.match.node_labels, wave=wave,
        ))
    return Plan(
        intent=intent, source=source, chart=chart, strategy=strategy, pools=tuple(pools),
        device_plugin_configs=dict(sorted(dp_configs.items())), default_device_plugin_key=default_key,
        mig_configs=dict(sorted(mig_configs.items())),
        per_pool_drivers=any(p.driver not in ("cluster", "preinstalled") for p in pools),
        tolerations=tuple(tolerations[k] for k in sorted(tolerations)),
        document=document, image_lock=_image_lock(intent, document),
        previous_lock=_image_lock(intent, document, previous=True),
    )


def _image_lock(intent: ClusterIntent, document: object, previous: bool = False):
    """The intent's image lock (or the one it replaces), read (raises imagelock.LockError), or None without one."""
    from .render.imagelock import LOCK_LOC, PREVIOUS_LOCK_LOC, lock_path, read_lock

    loc = PREVIOUS_LOCK_LOC if previous else LOCK_LOC
    path = lock_path(intent, document, loc)
    return read_lock(path, loc) if path is not None else None


# --- team queues (Kueue): shared by the rules, the renderer and the report ----------------------------------------


def kueue_settings(intent: ClusterIntent):
    """The intent's Kueue settings (gpuconf.intent.model.Kueue), or None when Kueue is off."""
    queueing = intent.spec.queueing
    return queueing.kueue if queueing is not None else None


#: Resources a pod may request that no team queue covers: the kubelet's node-local storage and huge pages of every
#: size (hugepages-2Mi, hugepages-1Gi). Kueue compares prefixes with strings.HasPrefix (v0.19.2
#: pkg/workload/workload.go dropExcludedResources).
UNQUEUED_RESOURCE_PREFIXES = ("ephemeral-storage", "hugepages-")


def kueue_excluded_prefixes(kueue) -> tuple[str, ...]:
    """The resource prefixes Kueue leaves out of quota accounting, as the intent says Kueue's Configuration has them
    (gpuconf.intent.model.Kueue.exclude_resource_prefixes)."""
    if kueue.exclude_resource_prefixes is not None:
        return tuple(kueue.exclude_resource_prefixes)
    return UNQUEUED_RESOURCE_PREFIXES if kueue.quota_check_strategy == "BlockUndeclared" else ()


def resource_quotas(intent: ClusterIntent) -> bool:
    """Whether team quotas become per-namespace ResourceQuotas: always without Kueue, on request with it."""
    kueue = kueue_settings(intent)
    return kueue is None or kueue.resource_quotas


def quota_units(per_node: Mapping[str, int], value: int | Mapping[str, int]) -> dict[str, int]:
    """Resource name -> units of a quota value (or a Kueue limit of the same shape) on a pool advertising per_node.

    A count names the pool's only resource; a mapping names MIG profiles by the resource the pool really advertises
    for each (`nvidia.com/mig-<profile>`, with `.shared` when time-sliced and renamed). What names nothing the pool
    advertises is left out: validation reports it (GC314, GC361).
    """
    if isinstance(value, int):
        return {next(iter(per_node)): value} if len(per_node) == 1 else {}
    out = {}
    for profile_name, count in value.items():
        resource = profile_resource(per_node, profile_name)
        if resource is not None:
            out[resource] = count
    return out


@dataclass(frozen=True)
class QueueRow:
    """One flavor and resource of a team's ClusterQueue: the nominal quota and the optional Kueue limits."""

    pool: str
    resource: str
    nominal: int
    borrowing_limit: int | None  # None: no limit (in a cohort), or no borrowing at all (without one)
    lending_limit: int | None  # None: all unused quota may be lent


def team_queue_rows(intent: ClusterIntent, team, strategy: str | None = None) -> list[QueueRow]:
    """The rows of a team's ClusterQueue: every resource of every pool in its quota, in the order of spec.pools.

    A pool's flavor lists all the resources the pool advertises (a Kueue resource group's flavors cover the same
    resources); the ones the quota does not name get 0, and in a cohort a borrowing limit of 0 (only what the quota
    names may be borrowed). Pools that do not exist or cannot be resolved are skipped.
    """
    strategy = strategy if strategy is not None else mig_strategy(intent)
    kueue = kueue_settings(intent)
    settings = kueue.teams.get(team.name) if kueue is not None else None
    rows = []
    for pool in intent.spec.pools:
        value = team.quota.get(pool.name)
        if value is None:
            continue
        capacity = pool_capacity(intent, pool, strategy)
        if capacity is None:
            continue
        nominal = quota_units(capacity.per_node, value)
        limits = []
        for given in ((settings.borrowing_limit, settings.lending_limit) if settings is not None else ({}, {})):
            limits.append(quota_units(capacity.per_node, given[pool.name]) if pool.name in given else {})
        for resource in sorted(capacity.per_node):
            borrow = limits[0].get(resource)
            if resource not in nominal and borrow is None and kueue is not None and kueue.cohort:
                borrow = 0  # the quota does not name it: no borrowing of it either (name it with 0 to borrow)
            rows.append(QueueRow(pool.name, resource, nominal.get(resource, 0), borrow, limits[1].get(resource)))
    return rows

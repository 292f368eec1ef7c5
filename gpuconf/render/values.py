"""Helm values for the pinned GPU Operator chart: only the deliberate deviations from its base defaults, each traced."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, Iterator

from .. import catalog, dra
from .. import plan as P

# The NFD subchart's image repository; the v26.3.3 reference carries no subchart defaults, and NFD has published
# from this repository in both vendored versions (0.18.3 and 0.19.0, charts/node-feature-discovery/values.yaml).
NFD_IMAGE_REPOSITORY = "registry.k8s.io/nfd/node-feature-discovery"
NFD = "node-feature-discovery"


@dataclass(frozen=True)
class Change:
    """One values path gpuconf sets, the value, and why: the reason and the intent path that caused it."""

    path: tuple[str, ...]
    value: Any
    why: str
    origin: tuple  # intent path, e.g. ("spec", "pools", 0, "taints")
    default: Any = None
    has_default: bool = False


class ValuesBuilder:
    """Collects changes against a chart's defaults; later changes to a path replace earlier ones."""

    def __init__(self, defaults: dict):
        self.defaults = defaults
        self.changes: dict[tuple[str, ...], Change] = {}
        self._below: dict[tuple[str, ...], set[tuple[str, ...]]] = {}  # a proper prefix -> the change paths under it
        self._view: dict | None = None

    def set(self, path: str | tuple[str, ...], value: Any, why: str, origin: tuple) -> None:
        """Record that path takes value, for a reason rooted at an intent path."""
        parts = tuple(path.split(".")) if isinstance(path, str) else path
        found, default = lookup(self.defaults, parts)
        # A deeper or shallower earlier change on the same branch is superseded (overrides come last and win): the
        # path itself and its prefixes are looked up, the deeper ones come from the index, not a scan of every change.
        superseded = [parts[:i] for i in range(1, len(parts) + 1) if parts[:i] in self.changes]
        superseded += self._below.get(parts, ())
        for other in superseded:
            del self.changes[other]
            for i in range(1, len(other)):
                self._below[other[:i]].discard(other)
        self.changes[parts] = Change(parts, value, why, origin, default, found)
        for i in range(1, len(parts)):
            self._below.setdefault(parts[:i], set()).add(parts)
        self._view = None

    def deviations(self) -> list[Change]:
        """The changes whose value differs from the chart default, in path order."""
        return [c for p, c in sorted(self.changes.items()) if not (c.has_default and c.default == c.value)]

    def overrides(self) -> dict:
        """The values file content: a tree of the deviations only."""
        tree: dict = {}
        for change in self.deviations():
            node = tree
            for key in change.path[:-1]:
                node = node.setdefault(key, {})
            node[change.path[-1]] = copied(change.value)
        return tree

    def merged(self) -> dict:
        """Defaults with the overrides applied as Helm merges them: maps merge, everything else replaces."""
        return merge(copied(self.defaults), self.overrides())

    def merged_view(self) -> dict:
        """The merged values for readers that never modify them (the render's checks, its report, the hazard
        rules): made once until the next change, and sharing every map the overrides leave alone with the defaults
        (overlay), where merged() copies the chart's whole defaults each call."""
        if self._view is None:
            self._view = overlay(self.defaults, self.overrides())
        return self._view


_ATOMS = (str, int, float, bool, type(None))


def copied(value: Any) -> Any:
    """A deep copy of values data: plain maps and lists rebuilt, scalars shared (they are immutable), anything else
    through copy.deepcopy. Five times faster than deepcopy alone on a chart's defaults, which every render copies."""
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _ATOMS else copied(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _ATOMS else copied(item) for item in value]
    return value if kind in _ATOMS else copy.deepcopy(value)


def merge(base: dict, override: dict) -> dict:
    """Helm's coalescing of a values file onto defaults (maps merge recursively, lists and scalars replace)."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = copied(value)
    return base


def overlay(base: dict, override: dict) -> dict:
    """merge()'s result without copying base: a new map on each path the override reaches, every other value
    shared with base (and the override). Equal to merge(copied(base), override), in the same key order; for
    readers only, since changing a shared value would change base."""
    out = dict(base)
    for key, value in override.items():
        below = out.get(key)
        out[key] = overlay(below, value) if isinstance(value, dict) and isinstance(below, dict) else value
    return out


def lookup(tree: Any, parts: tuple[str, ...]) -> tuple[bool, Any]:
    """(found, value) of a key path in nested maps."""
    node = tree
    for key in parts:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _paths(tree: Any, key: str, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, value) in the defaults whose last key is `key`."""
    if isinstance(tree, dict):
        for k, v in sorted(tree.items()):
            if k == key:
                yield (*prefix, k), v
            yield from _paths(v, key, (*prefix, k))


@functools.lru_cache(maxsize=64)
def _default_paths(version: str, key: str) -> tuple[tuple[tuple, Any], ...]:
    """_paths of a chart version's defaults (as the catalog parsed them, never modified), walked once per process: a
    fleet's clusters share a few chart versions."""
    facts = catalog.chart(version)
    return tuple(_paths(facts.shared_defaults, key)) if facts is not None else ()


def build_values(plan: P.Plan) -> ValuesBuilder:
    """All of gpuconf's changes to the chart's values for this plan, intent overrides last."""
    intent = plan.intent
    spec = intent.spec
    b = ValuesBuilder(plan.chart.shared_defaults)
    _tolerations(plan, b)
    if dra.enabled(intent):
        _dra(plan, b)
    else:
        _sharing(plan, b)
    _driver(plan, b)
    _images(plan, b)
    _monitoring(plan, b)
    from .platform import settings as platform_settings

    for setting in platform_settings(plan):  # GKE, EKS, AKS, OpenShift, k3s/RKE2/MicroK8s (gpuconf.platforms)
        b.set(setting.path, setting.value, setting.why, setting.origin)
    for i, override in enumerate(spec.overrides):
        b.set(override.path, override.value, override.why, ("spec", "overrides", i))
    _pin_images(plan, b)  # last: the versions the overrides set are pinned too
    return b


_PINNED = "pinned by digest: the image lock (spec.operator.imageLock)"


def _pin_images(plan: P.Plan, b: ValuesBuilder) -> None:
    """Set every image version of the merged values that the lock has to `<tag>@<digest>` (NFD's image.tag; the
    driver's `<version>-<osTag>@<digest>`), after every other change, so an override's version is pinned too."""
    from .imagelock import APP_VERSIONED, driver_pinned, pinned, reference

    lock = plan.image_lock
    if lock is None:
        return
    origin = ("spec", "operator", "imageLock")
    merged = b.merged()
    for path, repository in _paths(merged, "repository"):
        block = merged
        for key in path[:-1]:
            block = block[key]
        if path[0] == NFD or not isinstance(repository, str) or not repository or not block.get("image"):
            continue
        version = str(block.get("version") or (plan.chart_version if path[:-1] in APP_VERSIONED else ""))
        if not version:
            continue
        ref = reference(repository, str(block["image"]), version)
        if path[:-1] == ("driver",):
            value = driver_pinned(lock, ref, version)
        else:
            value = pinned(lock, ref, version)
        if value != version:
            b.set((*path[:-1], "version"), value, _PINNED, origin)
    nfd = merged.get(NFD, {}).get("image", {}) if isinstance(merged.get(NFD), dict) else {}
    repository = nfd.get("repository") or plan.image_repository(NFD_IMAGE_REPOSITORY)
    tag = nfd.get("tag") or plan.chart.nfd_app_version
    if tag and pinned(lock, f"{repository}:{tag}", tag) != tag:
        b.set((NFD, "image", "tag"), pinned(lock, f"{repository}:{tag}", tag), _PINNED, origin)


def toleration_covers(broad: Any, narrow: Any) -> bool:
    """Whether toleration broad tolerates every taint narrow does (Kubernetes' ToleratesTaint,
    k8s.io/api/core/v1/toleration.go): equal, or operator Exists on narrow's key (an empty key: every key) and
    effect (an empty effect: every effect), with no tolerationSeconds shorter than narrow's."""
    if broad == narrow:
        return True
    if not isinstance(broad, dict) or not isinstance(narrow, dict) or broad.get("operator") != "Exists":
        return False
    if broad.get("key") not in (None, "", narrow.get("key")):
        return False
    if broad.get("effect") not in (None, "", narrow.get("effect")):
        return False
    seconds = broad.get("tolerationSeconds")
    return seconds is None or seconds == narrow.get("tolerationSeconds")


def uncovered(tolerations: Any, by: Any) -> list:
    """The tolerations no toleration of `by` covers (toleration_covers)."""
    if not isinstance(by, list):
        return list(tolerations)
    return [t for t in tolerations if not any(toleration_covers(o, t) for o in by)]


def _tolerations(plan: P.Plan, b: ValuesBuilder) -> None:
    if not plan.tolerations:
        return
    tainted = [p for p in plan.pools if p.pool.taints]
    origin = ("spec", "pools", tainted[0].index, "taints")
    names = ", ".join(p.name for p in tainted)
    defaults = plan.chart.shared_defaults
    # Operand tolerations are one global list that replaces the chart's (gpu-operator-facts §4): keep the defaults.
    # A toleration the chart's own `operator: Exists` on that key already covers is not added twice.
    ops = list(defaults["daemonsets"]["tolerations"])
    b.set("daemonsets.tolerations", ops + uncovered(plan.tolerations, ops),
          f"operands must tolerate the taints of pool(s) {names}, or no driver or plugin ever runs there", origin)
    found, worker = lookup(defaults, (NFD, "worker", "tolerations"))
    base = list(worker) if found and isinstance(worker, list) else []
    b.set((NFD, "worker", "tolerations"), base + uncovered(plan.tolerations, base),
          f"NFD's worker must run on the tainted pool(s) {names}, or nothing labels their GPUs", origin)
    if plan.nfd_taints:
        b.set((NFD, "master", "config", "enableTaints"), True,
              "NodeFeatureRules apply the pool taints, which nfd-master only does with enableTaints", origin)


def _sharing(plan: P.Plan, b: ValuesBuilder) -> None:
    origin = ("spec", "sharingProfiles") if plan.intent.spec.sharing_profiles else ("spec", "pools")
    b.set("devicePlugin.config.name", P.DEVICE_PLUGIN_CONFIGMAP,
          "pools select their device-plugin config by node label from gpuconf's ConfigMap", origin)
    b.set("devicePlugin.config.default", plan.default_device_plugin_key,
          "nodes without a pool label get whole, unshared GPUs", origin)
    if any(p.mig_key is not None for p in plan.pools):
        b.set("migManager.config.name", P.MIG_CONFIGMAP,
              "MIG layouts come from gpuconf's checked mig-parted config, not from hardware discovery", origin)
    if plan.strategy is not None:
        b.set("mig.strategy", plan.strategy,
              f"derived from the MIG pools: {plan.strategy}" if plan.intent.spec.cluster.mig_strategy is None
              else "pinned in the intent", ("spec", "cluster", "migStrategy")
              if plan.intent.spec.cluster.mig_strategy else ("spec", "sharingProfiles"))


def _dra(plan: P.Plan, b: ValuesBuilder) -> None:
    """The GPUCluster stack: one CR or the other (templates/validations.yaml fails when both are deployed), the
    driver gates the sharing in use needs, ComputeDomains as the intent says."""
    origin = ("spec", "cluster", "allocation")
    b.set("gpuCluster.deployCR", True, "the cluster allocates GPUs with DRA: the chart renders the GPUCluster", origin)
    b.set("clusterPolicy.deployCR", False, "one allocation stack per cluster: the chart refuses to render both CRs",
          origin)
    settings = plan.intent.spec.cluster.dra
    partitions = settings.mig_partitions if settings is not None else None
    gates = dra.feature_gates((P.sharing_kind(p.profile) for p in plan.pools), partitions)
    if gates:
        users = {dra.GATE_TIME_SLICING: "time-slicing", dra.GATE_MPS: "MPS", dra.GATE_DYNAMIC_MIG: "dynamic MIG"}
        b.set("draDriver.featureGates", gates, "the driver refuses the sharing settings of claims unless their gate is "
              f"on: {', '.join(f'{g} for {users[g]}' for g in gates)}", ("spec", "sharingProfiles"))
    linked = [p for p in plan.pools if p.pool.nvlink is not None]
    enabled = bool(linked) or (settings.compute_domains if settings is not None else False)
    where = ("spec", "pools", linked[0].index, "nvlink") if linked and not (settings and settings.compute_domains) \
        else ("spec", "cluster", "dra", "computeDomains") if settings is not None else origin
    b.set("draDriver.computeDomains.enabled", enabled,
          f"ComputeDomains for the NVLink pool(s) {', '.join(p.name for p in linked)}" if linked else
          "ComputeDomains (multi-node NVLink) as the intent says" if enabled else
          "no multi-node NVLink domains: the ComputeDomain controller and kubelet plugin are not run", where)


def _driver(plan: P.Plan, b: ValuesBuilder) -> None:
    spec = plan.intent.spec
    drv = spec.driver
    origin = ("spec", "driver")
    managed = [p for p in plan.pools if p.driver != "preinstalled"]
    if not managed:
        b.set("driver.enabled", False, "every pool keeps its preinstalled host driver", origin)
        return
    if drv.version:
        b.set("driver.version", drv.version, "the cluster's driver version is pinned in the intent", (*origin, "version"))
    if drv.kernel_module_type:
        b.set("driver.kernelModuleType", drv.kernel_module_type, "kernel module flavour chosen in the intent",
              (*origin, "kernelModuleType"))
    if dra.enabled(plan.intent):
        # templates/validations.yaml: a GPUCluster with an operator driver needs the NVIDIADriver CRD; NV-docs: DRA
        # nodes take no automatic driver upgrades.
        b.set("driver.nvidiaDriverCRD.enabled", True, "the GPUCluster stack installs operator drivers only through "
              "NVIDIADriver objects (the chart refuses to render otherwise)", ("spec", "cluster", "allocation"))
        b.set("driver.upgradePolicy.autoUpgrade", False, "the operator does not support automatic driver upgrades "
              "on DRA nodes", ("spec", "cluster", "allocation"))
    if plan.per_pool_drivers:
        own = [p for p in plan.pools if p.driver not in ("cluster", "preinstalled") and p.wave is None]
        if own:
            why = (f"pool(s) {', '.join(p.name for p in own)} run their own driver version through NVIDIADriver "
                   "resources")
            crd_origin = ("spec", "pools", own[0].index, "driver")
        else:
            why = "the upgrade waves give every pool on the cluster driver its own NVIDIADriver"
            crd_origin = ("spec", "driver", "upgrade")
        b.set("driver.nvidiaDriverCRD.enabled", True, why, crd_origin)
        if drv.preinstalled or not any(p.driver == "cluster" for p in plan.pools):
            b.set("driver.nvidiaDriverCRD.deployDefaultCR", False,
                  "every managed pool has its own NVIDIADriver; the chart's default one would only serve GPU nodes "
                  "of no pool", crd_origin)
    up = drv.upgrade
    if up is None:
        return
    uo = (*origin, "upgrade")
    pol = "driver.upgradePolicy."
    if not dra.enabled(plan.intent):  # under DRA it stays false (above; GC435 refuses true)
        b.set(pol + "autoUpgrade", up.auto_upgrade, "driver upgrade policy", (*uo, "autoUpgrade"))
    b.set(pol + "maxParallelUpgrades", up.max_parallel, "nodes upgraded at once", (*uo, "maxParallel"))
    if up.max_unavailable == 0 and not isinstance(up.max_unavailable, str):
        # The chart renders `maxUnavailable | default "25%"`, and Sprig's default replaces 0: "0%" means the same
        # to the operator (a percentage of the nodes, rounded up) and survives the template.
        b.set(pol + "maxUnavailable", "0%", "no node may be unavailable during an upgrade; written \"0%\" because "
              "the chart's template turns 0 into its default 25%", (*uo, "maxUnavailable"))
    else:
        b.set(pol + "maxUnavailable", up.max_unavailable, "nodes that may be unavailable during an upgrade",
              (*uo, "maxUnavailable"))
    if up.drain is not None:
        d = up.drain
        for key, value in (("enable", d.enable), ("force", d.force), ("timeoutSeconds", d.timeout_seconds),
                           ("deleteEmptyDir", d.delete_empty_dir), ("podSelector", d.pod_selector or "")):
            b.set(pol + "drain." + key, value, "node drain before the driver is replaced", (*uo, "drain"))
    if up.pod_deletion is not None:
        d = up.pod_deletion
        # The values key is gpuPodDeletion; the chart renders it into the ClusterPolicy's podDeletion (facts §4).
        for key, value in (("force", d.force), ("timeoutSeconds", d.timeout_seconds),
                           ("deleteEmptyDir", d.delete_empty_dir)):
            b.set(pol + "gpuPodDeletion." + key, value, "GPU pod deletion before the driver is replaced",
                  (*uo, "podDeletion"))
    if up.wait_for_completion is not None:
        w = up.wait_for_completion
        b.set(pol + "waitForCompletion.podSelector", w.pod_selector, "pods to wait for before upgrading",
              (*uo, "waitForCompletion"))
        b.set(pol + "waitForCompletion.timeoutSeconds", w.timeout_seconds, "how long to wait for them",
              (*uo, "waitForCompletion"))


def _images(plan: P.Plan, b: ValuesBuilder) -> None:
    op = plan.intent.spec.operator
    defaults = plan.chart.shared_defaults
    if op.registry:
        origin = ("spec", "operator", "registry")
        for path, value in _default_paths(plan.chart.version, "repository"):
            if isinstance(value, str) and value:
                b.set(path, plan.image_repository(value), "images come from the registry mirror", origin)
        if not lookup(defaults, (NFD, "image", "repository"))[0]:
            b.set((NFD, "image", "repository"), plan.image_repository(NFD_IMAGE_REPOSITORY),
                  "NFD's image comes from the registry mirror too", origin)
    if op.image_pull_secrets:
        origin = ("spec", "operator", "imagePullSecrets")
        names = list(op.image_pull_secrets)
        for path, value in _default_paths(plan.chart.version, "imagePullSecrets"):
            if path[0] != NFD and isinstance(value, list):
                b.set(path, names, "pull secrets for the mirror, by name", origin)
        # Read by the templates although values.yaml lacks them (gpu-operator-facts §4, template-only keys).
        for path in ("dcgm.imagePullSecrets", "dcgmExporter.imagePullSecrets"):
            b.set(path, names, "pull secrets for the mirror, by name", origin)
        b.set((NFD, "imagePullSecrets"), [{"name": n} for n in names],
              "the NFD subchart takes pull secrets as LocalObjectReferences", origin)


#: The label gpuconf always puts into `dcgmExporter.serviceMonitor.additionalLabels`. The chart copies the
#: serviceMonitor map verbatim (toYaml), so without it the ClusterPolicy would carry `additionalLabels: {}`
#: whenever the intent has no Prometheus selector; under server-side apply (Argo CD's ServerSideApply=true), an
#: edit from a selector to none then fails: the API server rejects the map that became empty ("must be of type
#: object: null"). A gpuconf-owned entry keeps the map non-empty in every intent, so every edit applies.
SERVICE_MONITOR_LABEL = "gpuconf.dev/cluster"


def _monitoring(plan: P.Plan, b: ValuesBuilder) -> None:
    mon = plan.intent.spec.monitoring
    sm = "dcgmExporter.serviceMonitor."
    origin = ("spec", "monitoring")
    selector = dict(mon.prometheus_selector) if mon is not None and mon.service_monitor else {}
    why = ("labels the cluster's Prometheus selects ServiceMonitors by, and gpuconf's own label, which keeps the map "
           "non-empty so that server-side apply accepts every edit" if selector else
           "gpuconf's own label: the chart copies the map as is, and server-side apply rejects it once it becomes "
           "empty (an intent that drops its Prometheus selector)")
    b.set(sm + "additionalLabels", {SERVICE_MONITOR_LABEL: plan.name, **selector}, why,
          (*origin, "prometheusSelector") if selector else ("metadata", "name"))
    if mon is None:
        return
    from .monitoring import metrics_configmap_name, metrics_shipped_off

    metrics = metrics_configmap_name(plan)
    if metrics is not None:
        off = metrics_shipped_off(plan)
        why = (f"the alerts read {', '.join(off)}, which the exporter's default file ships switched off: gpuconf's "
               f"metrics file adds {'it' if len(off) == 1 else 'them'} to the shipped rows" if off else
               "gpuconf's metrics file holds the shipped rows and every metric the alerts read, so the alerts do not "
               "depend on the file in the exporter's image")
        b.set("dcgmExporter.config.name", metrics, why, (*origin, "alerts"))
    b.set(sm + "enabled", mon.service_monitor, "DCGM exporter scraping chosen in the intent", (*origin, "serviceMonitor"))
    if mon.service_monitor and mon.interval:
        b.set(sm + "interval", mon.interval, "scrape interval chosen in the intent", (*origin, "interval"))


# --- the intent without its overrides, or on another chart (rules GC342 and `gpuconf diff --to-chart`) ---------


def without_overrides(intent):
    """The intent with its spec.overrides removed (what gpuconf derives on its own)."""
    return intent.model_copy(update={"spec": intent.spec.model_copy(update={"overrides": []})})


def with_chart(intent, version: str):
    """The intent pinned to another chart version."""
    operator = intent.spec.operator.model_copy(update={"chart_version": version})
    return intent.model_copy(update={"spec": intent.spec.model_copy(update={"operator": operator})})


def derived_changes(intent, document=None) -> dict | None:
    """The values changes gpuconf derives from an intent without its overrides (path -> Change), or None when the
    intent is too broken to plan (unknown chart, GPU model or sharing profile, a MIG layout the GPU does not have:
    other rules report those)."""
    if catalog.chart(intent.spec.operator.chart_version) is None:
        return None
    for pool in intent.spec.pools:
        if P.pool_capacity(intent, pool) is None:  # its GPU, its sharing profile and the profile's MIG layout
            return None
    return dict(build_values(P.build(without_overrides(intent), "", document)).changes)

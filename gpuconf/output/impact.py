"""The impact plan of an intent change: what syncing a fresh render does to the running cluster, read from the rendered
folder as deployed (the old state) and the new render, never from the old intent.

Both sides are read the same way (`Deployed`): report.json (pools with their labels, driver, resources, taints;
the MIG strategy; the chart; the teams' quotas; the upgrade policy), values.yaml and every manifest. The document
diff (treediff.compare_trees) says what changed; each impact kind explains some of those changes and names the
documents it explains. Every changed document is explained by at least one impact (tests/test_impact.py holds
gpuconf to it for the examples and for random intents).

Adding an impact kind (issue 22's allocation-stack switch, say): write `def _my_kind(change: Change) ->
list[Impact]`, decorate it with `@impact_kind("my-kind", "one line: what it detects")`, let each Impact name the
changed documents it explains (`change.documents(...)` finds them) and, for values.yaml, the value paths it explains
(`change.values_paths(...)`). Kinds run in registration order; what none of them explains falls to the last ones:
`operand-restart` (chart values), `object-change` (objects applied in place: RBAC, namespaces, queues, ...) and, for
anything else, `unclassified`, which is a gpuconf bug that the tests catch. Add a before/after intent pair with the
exact expected impacts to tests/test_impact.py, and a row to docs/how-to/ci-impact-plan.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .treediff import DocumentDiff, TreeDiff, _documents

#: Severities in rising order: `--fail-on S` fails on S and everything after it.
SEVERITIES = ("none", "restart", "pending", "disruptive")

POOL_LABEL = "gpuconf.dev/pool"
PLUGIN_LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"
PROBE_COMPONENT = "acceptance-probe"

#: Pool driver modes of report.json, by who installs the driver.
DRIVER_OWNER = {"cluster": "ClusterPolicy", "wave": "NVIDIADriver", "pool": "NVIDIADriver",
                "preinstalled": "host"}

#: Kinds applied in place that stop or restart nothing on a GPU node: RBAC, namespaces, priorities, monitoring
#: objects, queue objects (quota drops are capacity-change's), GitOps objects that are not the chart's version.
QUIET_KINDS = frozenset({
    "Namespace", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "WorkloadPriorityClass",
    "ServiceMonitor", "PrometheusRule", "ConfigMap", "LocalQueue", "ClusterQueue", "ResourceFlavor", "ResourceQuota",
    "Kustomization", "Application", "ApplicationSet", "AppProject", "HelmRelease", "HelmRepository", "OCIRepository",
    "GitRepository", "OperatorGroup", "Subscription", "CatalogSource", "NodeOverlay", "LimitRange",
    # DRA: a DeviceClass or claim template applies to claims made from now on; allocated claims keep their devices.
    "DeviceClass", "ResourceClaimTemplate"})


@dataclass
class Impact:
    """One thing the sync does to the running cluster."""

    kind: str
    severity: str
    pools: list[str]
    message: str
    safe: str
    resources: list[str] = field(default_factory=list)
    nodes: int | None = None
    nodes_from: str | None = None  # "intent" (declared counts) or "cluster" (nodes carrying the pool label)
    pods: int | None = None  # running pods with GPU requests on those nodes (with --pods)
    documents: list[DocumentDiff] = field(default_factory=list)  # the changed documents this explains

    def as_dict(self) -> dict:
        """The JSON form."""
        return {"kind": self.kind, "severity": self.severity, "pools": self.pools, "nodes": self.nodes,
                "nodesFrom": self.nodes_from, "pods": self.pods, "resources": self.resources,
                "message": self.message, "safe": self.safe,
                "documents": [f"{d.file}: {d.title}" for d in self.documents]}


# --- the deployed state of one folder -----------------------------------------------------------------------------


class Deployed:
    """What one rendered folder says is (or will be) in the cluster."""

    def __init__(self, files: dict[str, str], documents: dict | None = None):
        self.files = files
        try:
            report = json.loads(files.get("report.json", "{}"))
        except ValueError:
            report = {}
        self.report: dict = report if isinstance(report, dict) else {}
        self._docs = documents
        self.pools: dict[str, dict] = {p["name"]: p for p in self.report.get("pools", []) if isinstance(p, dict)}

    @property
    def docs(self) -> dict[tuple, tuple]:
        """Every document, by identity (the diff's parse when given, else parsed on first use: the transition rules
        read report.json alone)."""
        if self._docs is None:
            self._docs = {}
            for path, text in self.files.items():
                self._docs.update(_documents(path, text))
        return self._docs

    @property
    def values(self) -> dict:
        """values.yaml as data."""
        values = self.docs.get(("values.yaml", 0))
        return values[3] if values and isinstance(values[3], dict) else {}

    @property
    def cluster(self) -> dict:
        """report.json's cluster section."""
        return self.report.get("cluster") or {}

    def data(self, doc: DocumentDiff) -> Any:
        """The body of a document of the diff on this side (None when absent here)."""
        entry = self.docs.get((doc.file, doc.kind, doc.namespace, doc.name))
        return entry[3] if entry else None

    def objects(self, kind: str) -> list[dict]:
        """Every object of one kind."""
        return [d[3] for d in self.docs.values() if d[0] == kind and isinstance(d[3], dict)]

    def applied(self) -> set[str]:
        """The files `kubectl apply -k` (or the manifests Application) applies: kustomization.yaml's resources."""
        kustomization = self.docs.get(("kustomization.yaml", 0))
        resources = kustomization[3].get("resources") if kustomization and isinstance(kustomization[3], dict) else []
        return {r for r in resources or [] if isinstance(r, str)}

    def resources(self, pool: str) -> dict[str, int]:
        """Resource name -> units per node that a pool advertises."""
        return {r["name"]: r.get("perNode", 0) for r in self.pools.get(pool, {}).get("resources", [])}

    def totals(self, pool: str) -> dict[str, int]:
        """Resource name -> units of the whole pool."""
        return {r["name"]: r.get("total", 0) for r in self.pools.get(pool, {}).get("resources", [])}

    def policy(self) -> dict:
        """The driver upgrade policy (report.json's upgrade.policy)."""
        return (self.report.get("upgrade") or {}).get("policy") or {}

    def rollout_wave(self) -> int | None:
        """The wave `spec.driver.upgrade.rollout` stands at, if any."""
        rollout = (self.report.get("upgrade") or {}).get("rollout")
        return rollout.get("wave") if isinstance(rollout, dict) else None


def _pool_of(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    labels = (data.get("metadata") or {}).get("labels") or {}
    return labels.get(POOL_LABEL)


def _labelled_by(pool: dict) -> str:
    """How a pool's nodes get their labels: nfd (a NodeFeatureRule), karpenter (a NodePool template) or template
    (kubelet flags or a node-pool command, read once when a node registers)."""
    by = str(pool.get("labelledBy") or "")
    if by.startswith("NodeFeatureRule"):
        return "nfd"
    if by.startswith("Karpenter"):
        return "karpenter"
    return "template"


def _label_source(pool: dict) -> str:
    """What gives a platform-labelled pool's nodes their labels and taints, in words."""
    by = _labelled_by(pool)
    if by == "karpenter":
        return "Karpenter NodePool"
    return "node-pool command" if str(pool.get("labelledBy") or "").startswith("node-pool command") else "node template"


# --- the change ---------------------------------------------------------------------------------------------------


class Change:
    """The old and the new folder, their document diff, and what the impacts found so far explain."""

    def __init__(self, old: dict[str, str], new: dict[str, str], diff: TreeDiff):
        self.old = Deployed(old, diff.old_documents or None)
        self.new = Deployed(new, diff.new_documents or None)
        self.diff = diff
        self.values_claimed: set[str] = set()
        self.impacts: list[Impact] = []

    def pool_data(self, doc: DocumentDiff) -> str | None:
        """The pool a changed document belongs to (its gpuconf.dev/pool label), on either side."""
        return _pool_of(self.new.data(doc)) or _pool_of(self.old.data(doc))

    def documents(self, kinds: Iterable[str] | None = None, pools: Iterable[str] | None = None,
                  where: Callable[[DocumentDiff], bool] | None = None) -> list[DocumentDiff]:
        """The changed documents of these kinds, of these pools, that satisfy where."""
        kinds = set(kinds) if kinds is not None else None
        pools = set(pools) if pools is not None else None
        return [d for d in self.diff.documents
                if (kinds is None or d.kind in kinds) and (pools is None or self.pool_data(d) in pools)
                and (where is None or where(d))]

    def values_paths(self, *prefixes: str) -> list[DocumentDiff]:
        """Claim the changed values.yaml paths under these prefixes; the values document when any changed."""
        found = self.values_changes(*prefixes)
        self.values_claimed.update(found)
        return [d for d in self.diff.documents if d.kind == "values"] if found else []

    def values_changes(self, *prefixes: str) -> list[str]:
        """The changed values.yaml paths under these prefixes (or above them: a map added or removed whole)."""
        values = [d for d in self.diff.documents if d.kind == "values"]
        return [c.path for d in values for c in d.changes
                if c.path.startswith(prefixes) or any(p.startswith(c.path + ".") for p in prefixes if p)]

    def pools_nodes(self, pools: Iterable[str], new: bool = True) -> int | None:
        """Declared nodes of these pools (the side that has them)."""
        total, known = 0, False
        for name in pools:
            pool = (self.new if new else self.old).pools.get(name) or self.old.pools.get(name) or {}
            if isinstance(pool.get("nodes"), int):
                total += pool["nodes"]
                known = True
        return total if known else None

    def both(self) -> list[str]:
        """Pools in the old and the new folder, in the new one's order."""
        return [p for p in self.new.pools if p in self.old.pools]


#: The impact kinds in the order they are looked for: name -> (what it detects, detector).
KINDS: dict[str, tuple[str, Callable[[Change], list[Impact]]]] = {}


def impact_kind(name: str, detects: str):
    """Register a detector of one impact kind (see the module's docstring)."""

    def register(fn: Callable[[Change], list[Impact]]):
        KINDS[name] = (detects, fn)
        return fn

    return register


def _names(items: Iterable[str]) -> str:
    items = list(items)
    return ", ".join(items) if items else "none"


def _node_count(n: int | None) -> str:
    return "" if n is None else f" ({n} node{'s' if n != 1 else ''})"


# --- the kinds ----------------------------------------------------------------------------------------------------


@impact_kind("operator-upgrade", "the GPU Operator chart version changes")
def _operator_upgrade(change: Change) -> list[Impact]:
    old, new = change.old.cluster.get("chartVersion"), change.new.cluster.get("chartVersion")
    if not old or not new or old == new:
        return []
    docs = change.values_paths("") + change.documents(
        ["Application", "HelmRelease", "HelmRepository", "OCIRepository", "Subscription", "ClusterPolicy",
         "NodeFeatureDiscovery", "NVIDIADriver"])
    pools = list(change.new.pools)
    return [Impact("operator-upgrade", "restart", pools,
                   f"the GPU Operator moves from chart {old} to {new}: the operator restarts and updates every "
                   "operand DaemonSet (device plugin, toolkit, GFD, DCGM exporter, MIG manager, validator), whose pods "
                   "restart node by node; GPU workloads keep running unless the driver changes too",
                   f"read `gpuconf diff INTENT --to-chart {new}` first; make the chart move its own commit, with no "
                   "driver, sharing or pool change, and watch `kubectl get clusterpolicy` until it is ready",
                   nodes=change.pools_nodes(pools), documents=docs)]


def _stack(side: Deployed) -> str:
    """The allocation stack a folder deploys: dra when its values deploy the GPUCluster, else devicePlugin."""
    return "dra" if (side.values.get("gpuCluster") or {}).get("deployCR") is True else "devicePlugin"


@impact_kind("allocation-switch", "the cluster's allocation stack switches between the device plugin and DRA")
def _allocation_switch(change: Change) -> list[Impact]:
    before, after = _stack(change.old), _stack(change.new)
    if before == after:
        return []
    names = {"devicePlugin": "the device plugin (ClusterPolicy)", "dra": "DRA (GPUCluster)"}
    pools = list(change.new.pools)
    # Everything the other stack's objects were: the chart's CR switch, the sharing and MIG configs, the classes and
    # claim templates, the quotas and probes that now name other resources.
    docs = change.values_paths("gpuCluster.", "clusterPolicy.", "draDriver.", "devicePlugin.config", "migManager.config",
                               "mig.strategy", "driver.nvidiaDriverCRD", "driver.upgradePolicy.autoUpgrade")
    docs += change.documents(["DeviceClass", "ResourceClaimTemplate", "ConfigMap", "NodeFeatureRule", "ResourceQuota",
                              "Job", "ClusterQueue", "ResourceFlavor", "NVIDIADriver"])
    return [Impact(
        "allocation-switch", "disruptive", pools,
        f"the cluster switches its GPU allocation stack from {names[before]} to {names[after]}: the chart deletes "
        "one custom resource and creates the other, the operator tears down the old stack's operands on every GPU "
        "node (device plugin, GFD, MIG Manager and toolkit, or the DRA driver) and relabels the nodes, so running GPU "
        "pods lose their devices and every workload must ask for GPUs the new way (claims instead of nvidia.com/gpu, "
        "or back); NVIDIA supports the DRA stack on new clusters only, with no in-place migration",
        "do not switch a running cluster: build a new cluster from this intent and move the workloads to it; keep "
        "this intent's old folder for the old cluster",
        nodes=change.pools_nodes(pools), documents=docs)]


def _driver_owner(pool: dict) -> str:
    return DRIVER_OWNER.get((pool.get("driver") or {}).get("mode"), "unknown")


@impact_kind("driver-mode-switch", "a pool's driver moves between the ClusterPolicy, an NVIDIADriver and the host")
def _driver_mode_switch(change: Change) -> list[Impact]:
    groups: dict[tuple[str, str], list[str]] = {}
    for name in change.both():
        before, after = _driver_owner(change.old.pools[name]), _driver_owner(change.new.pools[name])
        if before != after:
            groups.setdefault((before, after), []).append(name)
    impacts = []
    for (before, after), pools in groups.items():
        docs = change.documents(["NVIDIADriver", "NodeFeatureRule", "NodePool"], pools)
        docs += change.values_paths("driver.")
        docs += change.documents(["file"], where=lambda d: any(d.file == _template_file(change, p) for p in pools))
        if "host" in (before, after):
            what = ("the operator's driver leaves nodes that must then run a host driver: its pod unloads the kernel "
                    "modules, so every GPU pod there stops" if after == "host" else
                    "the operator starts installing its driver on nodes that ran a host driver: the driver pod "
                    "fails or replaces the host's modules, and every GPU pod there stops")
            safe = ("drain the pools' nodes first, then install or remove the host driver on each node (or roll "
                    "the node group to an image that has or lacks it), one node at a time, in a maintenance window")
        else:
            what = (f"the driver moves from the {before} to per-pool {after} objects" if after == "NVIDIADriver" else
                    f"the driver moves from per-pool {before} objects back to the {after}")
            what += (": the operator deletes the old driver DaemonSet and starts the new one, so the driver is "
                     "unloaded and reinstalled on every node of these pools and every GPU pod there restarts")
            safe = ("make this change alone (no driver version, sharing or pool change in the same commit), in a "
                    "maintenance window; cordon and drain the pools' nodes first (`kubectl drain -l "
                    f"{POOL_LABEL}=POOL --ignore-daemonsets`), and uncordon them once `kubectl get pods -n "
                    f"{change.new.cluster.get('namespace', 'gpu-operator')} -l app=nvidia-driver-daemonset` is "
                    "ready again")
        impacts.append(Impact("driver-mode-switch", "disruptive", pools, what, safe,
                              nodes=change.pools_nodes(pools), documents=docs))
    return impacts


def _template_file(change: Change, pool: str) -> str | None:
    for side in (change.new, change.old):
        by = str((side.pools.get(pool) or {}).get("labelledBy") or "")
        for word in by.split():
            if word.startswith("node-templates/"):
                return word.strip("()")
    return None


def upgrade_window_minutes(policy: dict, node_counts: list[int], per_object: bool) -> int:
    """Minutes the operator takes to replace the driver on pools of these node counts under policy (report.json's
    upgrade.policy): the README's formula (gitops.rollout_seconds), per NVIDIADriver side by side when per_object,
    else over all nodes at once."""
    from ..render.gitops import rollout_seconds

    drain = policy.get("drain") or {}
    args = (policy.get("maxParallelUpgrades", 1), policy.get("maxUnavailable", "25%"),
            drain.get("timeoutSeconds", 300) if drain.get("enable") else None,
            (policy.get("podDeletion") or {}).get("timeoutSeconds", 300))
    groups = node_counts if per_object else [sum(node_counts)]
    return math.ceil(max([rollout_seconds(n, *args) for n in groups] or [0]) / 60)


#: The `driver` values keys that are not the driver pod's: the upgrade controller's policy, the switch to
#: NVIDIADriver objects (driver-mode-switch's) and the driver's on/off switch. Every other `driver.*` key (repository,
#: image, version, imagePullSecrets, manager, env, probes, licensing, ...) is rendered into the ClusterPolicy's
#: spec.driver and from there into the driver DaemonSet's pod template (gpu-operator-facts §4, `driver.*` rows).
_NOT_DRIVER_POD = ("upgradePolicy", "nvidiaDriverCRD", "enabled")

#: NVIDIADriver spec fields that are not the driver pod's: its upgrade policy, the nodes it selects (pool-selection)
#: and its tolerations (taint-change), and `default` (gpu-operator-facts §8).
_NOT_NVD_POD = ("spec.upgradePolicy", "spec.nodeSelector", "spec.nodeAffinity", "spec.tolerations", "spec.default")


def _driver_pod(side: Deployed) -> dict:
    """The ClusterPolicy driver's pod settings on one side: the folder's chart defaults under its `driver` values,
    as Helm merges them, without the keys that are not the pod's."""
    from ..catalog import chart
    from ..render.values import copied, merge

    facts = chart(str(side.cluster.get("chartVersion") or ""))
    base = copied((facts.defaults.get("driver") if facts else None) or {})
    values = side.values.get("driver")
    merged = merge(base, values) if isinstance(values, dict) else base
    return {k: v for k, v in merged.items() if k not in _NOT_DRIVER_POD}


def _driver_pod_changes(change: Change) -> list[str]:
    """The `driver.*` values keys whose change gives the ClusterPolicy's driver DaemonSet a new pod template, plus the
    same fields of an OpenShift ClusterPolicy manifest (`spec.driver.*`)."""
    old, new = _driver_pod(change.old), _driver_pod(change.new)
    keys = [f"driver.{k}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    for doc in change.documents(["ClusterPolicy"]):
        keys += [c.path.removeprefix("spec.") for c in doc.changes if c.path.startswith("spec.driver.")
                 and not c.path.startswith(tuple(f"spec.driver.{k}" for k in _NOT_DRIVER_POD))
                 and not c.path.startswith("spec.driver.useNvidiaDriverCRD")]
    return sorted(k for k in set(keys) if not any(k.startswith(other + ".") for other in keys))


@impact_kind("driver-upgrade", "a pool's driver version, image or any other field of its driver pod changes")
def _driver_upgrade(change: Change) -> list[Impact]:
    # The driver DaemonSet is always OnDelete (gpu-operator-facts §4, daemonsets.updateStrategy): any change of its pod
    # template (version, repository, image, pull secrets, manager, ...), in the ClusterPolicy as in an NVIDIADriver
    # (§8), makes the upgrade controller reinstall the driver on every node it manages under the upgrade policy, or,
    # with autoUpgrade false (default true, §4), each node's driver at the next deletion of its driver pod.
    groups: dict[tuple, list[str]] = {}
    fields: dict[tuple, set[str]] = {}
    cluster_pod = _driver_pod_changes(change)
    for name in change.both():
        old, new = change.old.pools[name], change.new.pools[name]
        owner = _driver_owner(new)
        if owner != _driver_owner(old) or owner == "host":
            continue
        before, after = (old.get("driver") or {}).get("version"), (new.get("driver") or {}).get("version")
        if owner == "ClusterPolicy":
            pod = set(cluster_pod)
        else:
            pod = {c.path for d in change.documents(["NVIDIADriver"], [name]) for c in d.changes
                   if c.path.startswith("spec.") and not c.path.startswith(_NOT_NVD_POD)}
        if before != after or pod:
            key = (before, after, owner)
            groups.setdefault(key, []).append(name)
            fields.setdefault(key, set()).update(pod)
    impacts = []
    for (before, after, owner), pools in groups.items():
        docs = change.documents(["NVIDIADriver"], pools) + change.values_paths(
            "driver.version", "driver.repository", "driver.image", "driver.usePrecompiled",
            *(f for f in cluster_pod if f.startswith("driver."))) + change.documents(
            ["ClusterPolicy"], where=lambda d: owner == "ClusterPolicy" and any(
                c.path.startswith("spec.driver.") for c in d.changes))
        counts = [change.new.pools[p].get("nodes", 0) for p in pools]
        policy = change.new.policy()
        minutes = upgrade_window_minutes(policy, counts, per_object=owner == "NVIDIADriver")
        old_wave, new_wave = change.old.rollout_wave(), change.new.rollout_wave()
        waves = ""
        if old_wave is not None and new_wave is not None and new_wave - old_wave > 1:
            waves = f"; waves {old_wave + 1} to {new_wave} upgrade in this one commit"
        shown = sorted(f.removeprefix("spec.") for f in fields[(before, after, owner)]
                       if f.removeprefix("spec.") not in ("version", "driver.version"))
        what = (f"the driver of pool(s) {_names(pools)} changes from {before} to {after}" if before != after else
                f"the driver pod of pool(s) {_names(pools)} changes ({_names(_short(shown))})")
        parallel = policy.get("maxParallelUpgrades", 1)
        evicts = "drains each node" if (policy.get("drain") or {}).get("enable") else "deletes the GPU pods on each node"
        manual = policy.get("autoUpgrade") is False
        if manual:
            what += (": autoUpgrade is off, so the sync itself reinstalls nothing; each node's driver is reinstalled, "
                     "and its GPU pods stop, at the next deletion of its driver pod (by hand, or when the node is "
                     f"replaced){waves}")
        else:
            what += (f": the upgrade controller {evicts} (its GPU workloads stop) and reinstalls the driver, "
                     f"{parallel or 'all'} node(s) at a time per {owner} (maxUnavailable "
                     f"{policy.get('maxUnavailable')}), about {minutes} minutes by the roll-out formula{waves}")
        if any((change.new.pools[p].get("driver") or {}).get("mode") == "wave" for p in pools):
            safe = ("one wave per commit: raise `spec.driver.upgrade.rollout.wave` by one after every node of the "
                    "previous wave shows `upgrade-done` (`kubectl get nodes -L nvidia.com/gpu-driver-upgrade-state`); "
                    "keep a maintenance window of that length")
        elif manual:
            safe = ("in a maintenance window, drain each node and delete its driver pod, one node at a time "
                    "(REPORT.md's driver upgrade steps), until every node shows `upgrade-done`")
        else:
            safe = (f"merge in a maintenance window of about {minutes} minutes; the upgrade policy "
                    "(`spec.driver.upgrade`: maxParallel, maxUnavailable, drain) bounds how many nodes are down at "
                    "once, so lower it in an earlier commit of its own to go slower")
            if owner == "ClusterPolicy":
                # Declaring waves moves the driver to per-pool NVIDIADrivers: one more reinstall (GC372).
                safe += ("; do not declare upgrade waves in this change (that moves the driver to per-pool "
                         "NVIDIADrivers, which reinstalls it once more)")
        impacts.append(Impact("driver-upgrade", "disruptive", pools, what, safe, nodes=change.pools_nodes(pools),
                              documents=docs))
    return impacts


def _short(paths: list[str], most: int = 4) -> list[str]:
    """The first few of a list of field paths, and how many more."""
    return paths[:most] + ([f"{len(paths) - most} more"] if len(paths) > most else [])


def _per_node(resources: dict[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(resources.items())) or "nothing"


@impact_kind("device-plugin-restart", "a pool's device-plugin config changes")
def _device_plugin_restart(change: Change) -> list[Impact]:
    if "dra" in (_stack(change.old), _stack(change.new)):
        return []  # no device plugin on the DRA stack; a switch to or from it is allocation-switch's
    pools = []
    for name in change.both():
        before = (change.old.pools[name].get("labels") or {}).get(PLUGIN_LABEL)
        after = (change.new.pools[name].get("labels") or {}).get(PLUGIN_LABEL)
        if before != after and _labelled_by(change.new.pools[name]) == "nfd":
            pools.append(name)
    docs = change.values_paths("devicePlugin.")
    impacts = []
    for name in pools:
        before, after = change.old.resources(name), change.new.resources(name)
        what = (f"nodes of pool {name} switch to device-plugin config "
                f"{change.new.pools[name]['labels'].get(PLUGIN_LABEL)}: the config-manager sidecar restarts the "
                f"plugin, and each node advertises {_per_node(after)} instead of {_per_node(before)}; running pods "
                "keep their devices")
        impacts.append(Impact("device-plugin-restart", "restart", [name], what,
                              "nothing to drain: check `kubectl get nodes -l "
                              f"{POOL_LABEL}={name} -o custom-columns=NAME:.metadata.name,ALLOCATABLE:.status.allocatable`"
                              " after the sync",
                              resources=sorted(set(before) | set(after)), nodes=change.pools_nodes([name]),
                              documents=change.documents(["NodeFeatureRule"], [name]) + change.documents(
                                  ["ConfigMap"], where=_plugin_configmap(change)) + docs))
    if docs and not pools:
        change.values_claimed.difference_update(
            c.path for d in docs for c in d.changes if c.path.startswith("devicePlugin."))
    return impacts


def _plugin_configmap(change: Change) -> Callable[[DocumentDiff], bool]:
    names = {((side.values.get("devicePlugin") or {}).get("config") or {}).get("name")
             for side in (change.old, change.new)}
    return lambda d: d.name in names


def _mig_configmap(change: Change) -> Callable[[DocumentDiff], bool]:
    names = {((side.values.get("migManager") or {}).get("config") or {}).get("name")
             for side in (change.old, change.new)}
    return lambda d: d.name in names


def mig_strategy_after(side: Deployed) -> str | None:
    """The MIG strategy a folder runs the device plugin with, for the far side of a flip: report.json's, else the
    chart's default `single` where the folder sets none (no MIG pool left: gpu-operator-facts §4, `mig.strategy`
    default single); None on the DRA stack, which has no device plugin. The near side of a flip takes report.json's
    alone: a folder with no MIG pool named no MIG resource, so moving from it to a strategy renames nothing."""
    if _stack(side) == "dra":
        return None
    return side.cluster.get("migStrategy") or "single"


@impact_kind("resource-rename", "a resource name a pool advertises disappears")
def _resource_rename(change: Change) -> list[Impact]:
    old_strategy, new_strategy = change.old.cluster.get("migStrategy"), mig_strategy_after(change.new)
    flip = old_strategy and new_strategy and old_strategy != new_strategy
    default = flip and not change.new.cluster.get("migStrategy")  # the chart's default: no MIG pool is left
    impacts = []
    for name in change.both():
        gone = sorted(set(change.old.resources(name)) - set(change.new.resources(name)))
        if not gone:
            continue
        now = sorted(change.new.resources(name))
        askers = _askers(change.old, set(gone))
        cause = (f"the cluster's MIG strategy flips from {old_strategy} to {new_strategy}" + (
            ", the chart's default now that no MIG pool is left" if default else "") if flip and any(
            r.startswith("nvidia.com/mig-") or r == "nvidia.com/gpu" for r in gone) else "its sharing changes")
        what = (f"pool {name} stops advertising {_names(gone)} ({cause}; it now advertises {_names(now)}): pods "
                f"and Jobs asking for the old name stay Pending, and what still asks for it stops working: {askers}")
        safe = (f"pin `spec.cluster.migStrategy: {old_strategy}` to keep the names, or move every request, quota and "
                "queue to the new names in the same change and drain the pool's running jobs first" if flip and
                not default else
                "move the pods, quotas and queues that ask for the old name to the new one in the same change, and "
                "let the pool's running jobs finish first")
        values = [d for d in change.diff.documents if d.kind == "values" and change.values_changes("mig.strategy")]
        docs = values + change.documents(
            ["ResourceQuota", "ClusterQueue", "ResourceFlavor", "Job"],
            where=lambda d: _mentions(change.old.data(d), gone)) + change.documents(
            ["ConfigMap"], where=_plugin_configmap(change)) + change.documents(["NodeFeatureRule"], [name])
        impacts.append(Impact("resource-rename", "pending", [name], what, safe, resources=gone,
                              nodes=change.pools_nodes([name]), documents=docs))
    return impacts


def _mentions(data: Any, names: Iterable[str]) -> bool:
    text = json.dumps(data)
    return any(json.dumps(n) in text for n in names)


def _askers(old: Deployed, gone: set[str]) -> str:
    """The team quotas, Kueue queues and probes of the old folder that ask for these resources."""
    teams = sorted({t["name"] for t in old.report.get("teams", []) for q in t.get("quotas", [])
                    if q.get("resource") in gone and q.get("total")})
    queues = sorted({(q.get("metadata") or {}).get("name", "?") for q in old.objects("ClusterQueue")
                     if _mentions(q.get("spec"), gone)})
    probes = sorted({(j.get("metadata") or {}).get("name", "?") for j in old.objects("Job")
                     if _mentions(j.get("spec"), gone)})
    return "; ".join(f"{what} {_names(items)}" for what, items in
                     (("team quotas", teams), ("Kueue ClusterQueues", queues), ("probes", probes)) if items) or \
        "nothing gpuconf rendered (check your workloads)"


@impact_kind("mig-repartition", "a pool's MIG layout changes")
def _mig_repartition(change: Change) -> list[Impact]:
    # MIG manager reboots the node to apply a layout where WITH_REBOOT is set (GKE: platform-facts, NVD:gke).
    env = (change.new.values.get("migManager") or {}).get("env") or []
    reboots = any(isinstance(e, dict) and e.get("name") == "WITH_REBOOT" and str(e.get("value")).lower() == "true"
                  for e in env)
    impacts = []
    for name in change.both():
        before = (change.old.pools[name].get("labels") or {}).get(MIG_LABEL)
        after = (change.new.pools[name].get("labels") or {}).get(MIG_LABEL)
        if before == after:
            continue
        layout = lambda side: (side.pools[name].get("sharing") or {}).get("detail", "?")  # noqa: E731
        what = (f"mig-manager stops the GPU clients on every node of pool {name}, kills its GPU pods and repartitions "
                f"every GPU from `{before}` ({layout(change.old)}) to `{after}` ({layout(change.new)})")
        if _labelled_by(change.new.pools[name]) != "nfd":
            what = (f"pool {name}'s MIG layout changes from `{before}` ({layout(change.old)}) to `{after}` "
                    f"({layout(change.new)}); its nodes get `{MIG_LABEL}` from their template, so each node is "
                    "repartitioned when it is replaced or relabelled: mig-manager then stops its GPU clients and "
                    "kills its GPU pods")
        if reboots:
            what += "; the MIG manager reboots each node to apply it (WITH_REBOOT, as GKE needs)"
        impacts.append(Impact(
            "mig-repartition", "disruptive", [name], what,
            f"drain the pool first, one node at a time (`kubectl drain -l {POOL_LABEL}={name} --ignore-daemonsets`), "
            f"and watch `kubectl get nodes -l {POOL_LABEL}={name} -L {MIG_LABEL}.state` reach `success`",
            resources=sorted(set(change.old.resources(name)) | set(change.new.resources(name))),
            nodes=change.pools_nodes([name]),
            documents=change.documents(["ConfigMap"], where=_mig_configmap(change))
            + change.documents(["NodeFeatureRule"], [name]) + change.values_paths("migManager.")))
    return impacts


def _config_keys(side: Deployed, label: str) -> set[str] | None:
    """The config names a folder's ConfigMap offers for a node label: the device-plugin ConfigMap's keys, or the
    mig-parted ConfigMap's mig-configs names (None when the folder has no such ConfigMap)."""
    section = "devicePlugin" if label == PLUGIN_LABEL else "migManager"
    name = ((side.values.get(section) or {}).get("config") or {}).get("name")
    data = next(((cm.get("data") or {}) for cm in side.objects("ConfigMap")
                 if name and (cm.get("metadata") or {}).get("name") == name), None)
    if not isinstance(data, dict):
        return None
    if label == PLUGIN_LABEL:
        return set(data)
    try:
        from .treediff import _load_all

        body = (_load_all(data.get("config.yaml") or "") or [{}])[0]
    except Exception:  # noqa: BLE001 - a hand-edited folder: nothing to say
        return None
    return set((body.get("mig-configs") or {}) if isinstance(body, dict) else {})


@impact_kind("config-key-removed", "nodes labelled by their platform keep a config key the sync removes")
def _config_key_removed(change: Change) -> list[Impact]:
    if "dra" in (_stack(change.old), _stack(change.new)):
        return []  # allocation-switch's
    impacts = []
    for label, configmap in ((PLUGIN_LABEL, _plugin_configmap(change)), (MIG_LABEL, _mig_configmap(change))):
        offered = _config_keys(change.new, label)
        for name in change.both() if offered is not None else []:
            pool = change.new.pools[name]
            before = (change.old.pools[name].get("labels") or {}).get(label)
            after = (pool.get("labels") or {}).get(label)
            # A NodeFeatureRule relabels its nodes at sync; a node template, node-pool command or Karpenter NodePool
            # labels a node once, when it registers (karpenter-facts §d: a label change drifts, replacing the nodes
            # later), so the running nodes keep the old key.
            if _labelled_by(pool) == "nfd" or not before or before == after or before in offered:
                continue
            source = _label_source(pool)
            docs = change.documents(["ConfigMap"], where=configmap)
            nodes = change.pools_nodes([name])
            if label == PLUGIN_LABEL:
                # gpu-operator-facts §6: a label naming a key the ConfigMap lacks is an error; the pod stays broken.
                what = (f"pool {name}'s running nodes carry {label}={before} from their {source} until they are "
                        f"replaced, but the sync removes key {before} from ConfigMap {_names(d.name for d in docs)} "
                        f"(the profile changed, so its key is now {after}): a label naming a missing key is an error, "
                        "so the device plugin and GFD on those nodes fail at their next start (any operand restart, a "
                        f"node reboot) and the node stops advertising {_names(sorted(change.old.resources(name)))}")
                safe = (f"right after the sync relabel the running nodes (`kubectl label nodes -l {POOL_LABEL}={name} "
                        f"{label}={after} --overwrite`: the config-manager switches the plugin to the new key), then "
                        "roll the node group onto the new template (Karpenter: let drift replace the nodes, with a "
                        "disruption budget)")
            else:
                # nvidia-formats-facts §2: the label names a config under mig-configs; a missing name cannot apply.
                what = (f"pool {name}'s running nodes carry {label}={before} from their {source} until they are "
                        f"replaced, but the sync removes config {before} from the mig-configs of ConfigMap "
                        f"{_names(d.name for d in docs)} (now {after}): the MIG manager cannot apply a name that "
                        "mig-configs lacks, so on those nodes it fails at its next start "
                        f"({MIG_LABEL}.state=failed) until each node is relabelled or replaced")
                safe = (f"drain the pool one node at a time and relabel each node right after the sync (`kubectl label "
                        f"node NODE {label}={after} --overwrite`, which repartitions it), then roll the node group "
                        "onto the new template")
            impacts.append(Impact("config-key-removed", "disruptive", [name], what, safe,
                                  resources=sorted(change.old.resources(name)), nodes=nodes, documents=docs))
    return impacts


#: EC2NodeClass fields that drift dynamically: Karpenter resolves them again and replaces the nodes whose AMI, subnet
#: or security groups no longer match (karpenter-facts §d, "EC2NodeClass drift fields"; aws@v1.14.1 docs
#: disruption.md "Special Cases on Drift").
_EC2_DYNAMIC = ("spec.amiSelectorTerms", "spec.subnetSelectorTerms", "spec.securityGroupSelectorTerms")
#: EC2NodeClass spec fields left out of its hash that do not drift: the capacity reservations and the IP prefix count
#: (`hash:"ignore"` in aws@v1.14.1 pkg/apis/v1/ec2nodeclass.go:55,67; amiFamily is hashed by its resolved value,
#: :597-609). Every other spec field (blockDeviceMappings, userData, role, instanceProfile, tags, kubelet,
#: metadataOptions, instanceStorePolicy, detailedMonitoring, ...) is in the EC2NodeClass hash, the annotation
#: karpenter.k8s.aws/ec2nodeclass-hash (karpenter-facts §d): a change drifts every node launched from the class.
_EC2_UNHASHED = ("spec.capacityReservationSelectorTerms", "spec.ipPrefixCount")


def _requirements(data: Any) -> list[dict]:
    spec = ((data or {}).get("spec") or {}).get("template", {}).get("spec") or {}
    return [r for r in spec.get("requirements") or [] if isinstance(r, dict)]


def _allows(wide: dict, narrow: dict) -> bool:
    """Every label value narrow admits is admitted by wide (both on the same key)."""
    if wide == narrow:
        return True
    if (narrow.get("minValues") or 0) < (wide.get("minValues") or 0):
        return False
    ops = (wide.get("operator"), narrow.get("operator"))
    w, n = set(map(str, wide.get("values") or [])), set(map(str, narrow.get("values") or []))
    if ops == ("In", "In"):
        return n <= w
    if ops == ("NotIn", "NotIn"):
        return w <= n
    if ops == ("NotIn", "In"):
        return not (w & n)
    if ops[0] == "Exists":
        return ops[1] in ("In", "Exists")
    return False


def _widened(old: list[dict], new: list[dict]) -> bool:
    """The new requirements admit every node the old ones admitted: each new requirement is implied by an old one on
    its key. Widening a requirement drifts no node (karpenter-facts §d: `areRequirementsDrifted` checks compatibility,
    and widening `In [m5.large]` to `In [m5.large, m5.2xlarge]` does not drift)."""
    return all(any(o.get("key") == r.get("key") and _allows(r, o) for o in old) for r in new)


def _nodepool_impact(change: Change, doc: DocumentDiff) -> Impact | None:
    """What one changed NodePool does to its nodes (karpenter-facts §d)."""
    pool = change.pool_data(doc) or doc.name
    template = [c.path for c in doc.changes if c.path.startswith("spec.template")]
    # Karpenter hashes spec.template without its requirements (karpenter-facts §d: NodePool.Hash, drift.go):
    # a hashed field drifts every node; requirements drift only the nodes that no longer meet them.
    hashed = [p for p in template if not p.startswith("spec.template.spec.requirements")]
    # spec.disruption and spec.weight are behavioral fields, not drift (karpenter-facts §d); spec.limits is
    # capacity-change's.
    behaviour = [c.path for c in doc.changes if c.path.startswith(("spec.disruption", "spec.weight"))]
    old_reqs, new_reqs = _requirements(change.old.data(doc)), _requirements(change.new.data(doc))
    wider = template and not hashed and _widened(old_reqs, new_reqs)
    nodes = change.pools_nodes([pool], new=doc.status != "removed")
    if doc.status == "removed":
        what = (f"Karpenter NodePool {doc.name} is deleted: Karpenter drains and deletes every node it "
                f"launched for pool {pool}")
    elif hashed:
        what = (f"the template of Karpenter NodePool {doc.name} changes ({_names(hashed[:3])}): Karpenter "
                f"treats every node of pool {pool} as drifted and replaces it (drain, then a new node)")
    elif template and not wider:
        what = (f"the requirements of Karpenter NodePool {doc.name} narrow: Karpenter replaces the nodes of pool "
                f"{pool} that no longer meet them")
    elif wider or behaviour:
        parts = []
        if wider:
            parts.append(f"its requirements widen ({_names(_widening(old_reqs, new_reqs))}): every node still meets "
                         "them, so none drifts, and nodes launched from now on may take the new values")
        if behaviour:
            parts.append(f"its behavioral settings change ({_names(behaviour[:3])}): these are not drift, "
                         "so no node is replaced; they govern how Karpenter disrupts nodes from now on")
        return Impact("node-replacement", "none", [pool], f"Karpenter NodePool {doc.name}: " + "; ".join(parts),
                      "nothing to drain" + ("; check that the pool's workloads may run on the newly allowed nodes"
                                            if wider else ""), nodes=nodes, documents=[doc])
    else:
        return None
    return Impact("node-replacement", "disruptive", [pool], what,
                  "merge in a maintenance window, or first add a disruption budget to the NodePool "
                  "(`spec.disruption.budgets`, e.g. nodes: \"1\") so Karpenter replaces one node at a time",
                  nodes=nodes, documents=[doc])


def _admitted(requirement: dict | None) -> str:
    """A requirement's values, or its operator when it has none."""
    requirement = requirement or {}
    return ", ".join(map(str, requirement.get("values") or [])) or str(requirement.get("operator", "-"))


def _widening(old: list[dict], new: list[dict]) -> list[str]:
    """`key: old values -> new values` of each requirement that changed."""
    out = []
    for r in new:
        before = next((o for o in old if o.get("key") == r.get("key")), None)
        if before != r:
            out.append(f"{r.get('key')}: {_admitted(before)} -> {_admitted(r)}")
    out += [f"{o.get('key')} dropped" for o in old if not any(r.get("key") == o.get("key") for r in new)]
    return out


def _class_users(side: Deployed, name: str) -> list[str]:
    """The pools whose Karpenter NodePool launches its nodes from the EC2NodeClass `name`."""
    return sorted(_pool_of(np) or "?" for np in side.objects("NodePool")
                  if ((np.get("spec") or {}).get("template", {}).get("spec", {}).get("nodeClassRef") or {}).get(
                      "name") == name)


@impact_kind("node-replacement", "a Karpenter NodePool template, its node class or a node template changes")
def _node_replacement(change: Change) -> list[Impact]:
    impacts = [i for doc in change.documents(["NodePool"]) if (i := _nodepool_impact(change, doc))]
    for doc in change.documents(["EC2NodeClass"]):
        users = _class_users(change.old if doc.status == "removed" else change.new, doc.name)
        nodes = change.pools_nodes(users, new=doc.status != "removed")
        paths = [c.path for c in doc.changes]
        dynamic = [p for p in paths if p.startswith(_EC2_DYNAMIC)]
        static = [p for p in paths if p.startswith("spec.") and not p.startswith(_EC2_DYNAMIC + _EC2_UNHASHED)]
        if doc.status == "added" or doc.status == "changed" and not dynamic and not static:
            impacts.append(Impact("node-replacement", "none", users, (
                f"EC2NodeClass {doc.name} is added: only nodes Karpenter launches from it get it ({_names(users)})"
                if doc.status == "added" else
                f"EC2NodeClass {doc.name} changes in fields outside its hash that do not drift "
                f"({_names(paths[:3])}): only nodes Karpenter launches from now on get them ({_names(users)})"),
                "nothing to drain", nodes=nodes, documents=[doc]))
            continue
        if doc.status == "removed":
            # Its termination finalizer waits until no NodeClaim uses it (aws@v1.14.1
            # pkg/controllers/nodeclass/controller.go:214-234): the class goes after its nodes.
            kept = _class_users(change.new, doc.name)
            impacts.append(Impact(
                "node-replacement", "pending" if kept else "none", users,
                f"EC2NodeClass {doc.name} is deleted: it stays until the nodes launched from it (pools "
                f"{_names(users)}) are gone, which their NodePool's deletion does" + (
                    f"; NodePools of pools {_names(kept)} still name it, so Karpenter launches no node for them"
                    if kept else ""),
                "delete the NodePools that use it in the same change" if kept else "nothing to drain beyond the "
                "NodePool's deletion", nodes=nodes, documents=[doc]))
            continue
        if static:
            what = (f"EC2NodeClass {doc.name} changes ({_names(static[:3])}), so its hash "
                    "(karpenter.k8s.aws/ec2nodeclass-hash) changes: Karpenter treats the nodes of every NodePool "
                    f"that uses it ({_names(users)}) as drifted and replaces them (drain, then a new node)")
        else:
            what = (f"EC2NodeClass {doc.name} changes ({_names(dynamic[:3])}), whose AMI, subnets and security "
                    "groups Karpenter resolves again: Karpenter treats the nodes of every NodePool that uses it "
                    f"({_names(users)}) as drifted and replaces them (drain, then a new node)")
        impacts.append(Impact("node-replacement", "disruptive", users, what,
                              "merge in a maintenance window, with disruption budgets on the NodePools",
                              nodes=nodes, documents=[doc]))
    for doc in change.documents(["file"], where=lambda d: d.file.startswith("node-templates/")):
        pool = next((p for p in {**change.old.pools, **change.new.pools} if _template_file(change, p) == doc.file),
                    None)
        if doc.status == "added" and pool not in change.old.pools:
            continue  # a new pool's template: capacity-change says so
        if doc.status == "changed" and all(_count_line(c.old) and _count_line(c.new) for c in doc.changes):
            continue  # only the node count of a node-pool command: capacity-change says so
        pools = [pool] if pool else []
        impacts.append(Impact("node-replacement", "disruptive", pools,
                              f"{doc.file} changes: the node template's settings (labels, taints, GPU driver) apply "
                              "only when a node registers, so the pool's existing nodes keep the old ones until they "
                              "are replaced",
                              "apply the new template to the node group, then roll its nodes one at a time (drain, "
                              "replace) in a maintenance window",
                              nodes=change.pools_nodes(pools) if pools else None, documents=[doc]))
    return impacts


#: The node count of a node-pool command (gcloud's --num-nodes, az's --node-count) and its autoscaling range
#: (gcloud's --total-min/max-nodes, az's --min/max-count): scaling, not a node setting.
_COUNT_FLAGS = ("--num-nodes ", "--node-count ", "--total-min-nodes ", "--total-max-nodes ", "--min-count ",
                "--max-count ")


def _count_line(line: Any) -> bool:
    return isinstance(line, str) and line.strip().startswith(_COUNT_FLAGS)


def _taints(pool: dict) -> set[str]:
    return set(pool.get("taints") or [])


#: The chart's operand tolerations when values set none (gpu-operator-facts §4: daemonsets.tolerations).
DEFAULT_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _parse_taint(text: str) -> tuple[str, str | None, str]:
    """key, value (None when absent) and effect of a report.json taint, `key[=value]:effect`."""
    head, _, effect = text.rpartition(":")
    key, eq, value = head.partition("=")
    return key, value if eq else None, effect


def _tolerates(tolerations: Any, taint: str) -> bool:
    """Whether a toleration list tolerates a taint (Kubernetes' rule: the effect matches or is empty, and the key
    matches with Exists, or an empty key with Exists, or key and value match with Equal, the default operator)."""
    key, value, effect = _parse_taint(taint)
    for t in tolerations if isinstance(tolerations, list) else []:
        if not isinstance(t, dict) or t.get("effect") and t.get("effect") != effect:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == key):
            return True
        if t.get("operator", "Equal") == "Equal" and t.get("key") == key and str(t.get("value") or "") == (value or ""):
            return True
    return False


def _operand_tolerations(side: Deployed) -> list:
    """The one toleration list of every operand DaemonSet (gpu-operator-facts §4: daemonsets.tolerations is global
    and replaces the chart's default): the rendered ClusterPolicy's where there is one (OpenShift), else values'."""
    for policy in side.objects("ClusterPolicy"):
        return ((policy.get("spec") or {}).get("daemonsets") or {}).get("tolerations") or DEFAULT_TOLERATIONS
    return (side.values.get("daemonsets") or {}).get("tolerations") or DEFAULT_TOLERATIONS


def _tolerations_changed(change: Change) -> bool:
    return bool(change.values_changes("daemonsets.tolerations") or change.documents(
        ["ClusterPolicy"], where=lambda d: any(c.path.startswith("spec.daemonsets.tolerations") for c in d.changes)))


def _toleration_docs(change: Change) -> list[DocumentDiff]:
    """The ClusterPolicy and NodeFeatureDiscovery documents that change only in tolerations or enableTaints."""
    prefixes = ("spec.daemonsets.tolerations", "spec.operand.workerTolerations", "spec.enableTaints")
    return change.documents(["ClusterPolicy", "NodeFeatureDiscovery"], where=lambda d: d.status == "changed" and all(
        c.path.startswith(prefixes) for c in d.changes))


@impact_kind("taint-change", "a pool taint is added or removed")
def _taint_change(change: Change) -> list[Impact]:
    impacts = []
    tolerations = _operand_tolerations(change.new)
    for name in change.both():
        pool = change.new.pools[name]
        added = sorted(_taints(pool) - _taints(change.old.pools[name]))
        removed = sorted(_taints(change.old.pools[name]) - _taints(pool))
        if not added and not removed:
            continue
        docs = change.documents(["NodeFeatureRule", "ResourceFlavor"], [name]) + change.values_paths(
            "daemonsets.tolerations", "node-feature-discovery.worker.tolerations",
            "node-feature-discovery.master.config.enableTaints") + _toleration_docs(change)
        drivers = change.documents(["NVIDIADriver"], [name], where=_driver_tolerations_only)
        docs += drivers
        nodes = change.pools_nodes([name])
        lost: list[str] = []
        if _labelled_by(pool) == "nfd":
            # nfd-master applies a NodeFeatureRule's taints to the running nodes at sync (enableTaints).
            what, severity, safe = _taints_now(name, added, removed)
        else:
            what, severity, safe, lost = _taints_later(change, name, added, removed, tolerations, nodes)
        if drivers:
            # The driver DaemonSet is always OnDelete (gpu-operator-facts §4: daemonsets.updateStrategy): a new pod
            # template (the NVIDIADriver's spec.tolerations) makes the upgrade controller replace every driver pod.
            severity = "disruptive"
            what += (f"; NVIDIADriver {_names(d.name for d in drivers)} gets the new tolerations too: the new driver "
                     "pod template makes the upgrade controller reinstall the driver on every node of the pool (drain, "
                     "under the upgrade policy)")
        impacts.append(Impact("taint-change", severity, [name], what, safe, resources=lost, nodes=nodes,
                              documents=docs))
    impacts += _driver_tolerations(change)
    return impacts


def _preferred(added: list[str]) -> bool:
    """Every added taint is PreferNoSchedule: a preference, not a ban. The scheduler tries not to place new pods that
    do not tolerate it there, and still does when nothing else fits (Kubernetes core/v1 TaintEffectPreferNoSchedule,
    k8s.io/api core/v1 types.go), so it keeps no pod Pending."""
    return bool(added) and all(t.endswith(":PreferNoSchedule") for t in added)


def _taints_now(name: str, added: list[str], removed: list[str]) -> tuple[str, str, str]:
    """A pool whose taints nfd-master applies: the running nodes get and lose them at sync."""
    if any(t.endswith(":NoExecute") for t in added):
        severity, what = "disruptive", (f"pool {name} gets taint(s) {_names(added)}: NoExecute evicts every running "
                                        "pod there that does not tolerate it")
    elif _preferred(added):
        severity, what = "none", (f"pool {name} gets taint(s) {_names(added)}: the scheduler only prefers other nodes "
                                  "for new pods that do not tolerate it, so none stays Pending for it")
    elif added:
        severity, what = "pending", (f"pool {name} gets taint(s) {_names(added)}: new pods that do not tolerate it "
                                     "stay Pending (running pods stay)")
    else:
        severity, what = "none", (f"pool {name} loses taint(s) {_names(removed)}: pods that do not tolerate them may "
                                  "now land there")
    if added and removed:
        what += f"; it loses {_names(removed)}"
    return what, severity, ("add the toleration to the workloads (and their Kueue flavor or admission policy) before "
                            "the taint lands" if added else "check that nothing else should stay off these nodes")


def _taints_later(change: Change, name: str, added: list[str], removed: list[str], tolerations: list,
                  nodes: int | None) -> tuple[str, str, str, list[str]]:
    """A pool whose nodes get their taints from the platform (a node template, a node-pool command, a Karpenter
    NodePool): the running nodes keep the old taints until they are replaced, while the operands' tolerations change
    at sync (gpu-operator-facts §4: one global list; §10.8: an untolerated taint keeps NFD's worker and every operand
    off the node, so nothing labels it or advertises its GPUs)."""
    source = _label_source(change.new.pools[name])
    parts = []
    prefer = _preferred(added)
    if added:
        parts.append(f"pool {name}'s {source} gets taint(s) {_names(added)}: only nodes that register from now on carry "
                     "them (the running nodes keep their taints until they are replaced), and " + (
                         "the scheduler only prefers other nodes for new pods that do not tolerate them" if prefer else
                         "pods that do not tolerate them do not land there"))
    if removed:
        parts.append(f"pool {name}'s {source} drops taint(s) {_names(removed)}, which its running nodes keep until "
                     "they are replaced")
    stranded = [t for t in removed if not _tolerates(tolerations, t)]
    severity = "pending" if added and not prefer or stranded else "none"
    lost = sorted(change.old.resources(name)) if stranded else []
    safe = ("add the toleration to the workloads (and their Kueue flavor or admission policy) before new nodes come "
            "up" if added else "check that nothing else should stay off the new nodes")
    if stranded:
        owner = _driver_owner(change.new.pools[name])
        each = f"each of its {nodes} node(s)" if nodes is not None else "each of its nodes"
        what = (f"the sync drops {_names(stranded)} from the operands' tolerations (daemonsets.tolerations, one list "
                "for every operand, and NFD's worker): the device plugin, GFD, DCGM exporter, validator and NFD worker "
                f"can no longer run on those nodes, so {each} stops advertising "
                f"{_names(lost)} until it is replaced (new GPU pods stay Pending)")
        if owner in ("ClusterPolicy", "NVIDIADriver"):
            severity = "disruptive"
            what += ("; the operator's driver pod cannot come back either once the upgrade controller replaces it, "
                     "so the GPU workloads there stop")
        else:
            what += "; running GPU pods keep the devices they hold"
        parts.append(what)
        safe = (f"just before the sync remove the old taint(s) from the running nodes (`kubectl taint nodes -l "
                f"{POOL_LABEL}={name} " + " ".join(_parse_taint(t)[0] + ":" + _parse_taint(t)[2] + "-" for t in stranded)
                + "`), add the new ones right after it, and update the node group so that new nodes match; or roll "
                "the pool onto the new template before the merge")
    return "; ".join(parts), severity, safe, lost


def _driver_tolerations_only(doc: DocumentDiff) -> bool:
    return doc.status == "changed" and all(c.path.startswith("spec.tolerations") for c in doc.changes)


def _driver_tolerations(change: Change) -> list[Impact]:
    """A new operand toleration list is a new pod template for the driver DaemonSet of the ClusterPolicy (the global
    list, gpu-operator-facts §4) or of an NVIDIADriver (its spec.tolerations). The driver DaemonSet is always OnDelete
    (§4: daemonsets.updateStrategy): the upgrade controller replaces every driver pod, draining under the upgrade
    policy, on every node that driver manages, not only on the tainted pool's."""
    impacts = []
    if _tolerations_changed(change):
        pools = [p for p in change.both() if _driver_owner(change.new.pools[p]) == "ClusterPolicy"]
        if pools:
            counts = [change.new.pools[p].get("nodes", 0) for p in pools]
            minutes = upgrade_window_minutes(change.new.policy(), counts, per_object=False)
            impacts.append(Impact(
                "taint-change", "disruptive", pools,
                "the operands' toleration list changes (daemonsets.tolerations is one list for every operand "
                "DaemonSet, the ClusterPolicy's driver included): the new driver pod template makes the upgrade "
                f"controller reinstall the driver on every node the ClusterPolicy manages, in pools {_names(pools)} "
                f"(drain, under the upgrade policy, about {minutes} minutes by the roll-out formula), and every other "
                "operand pod restarts there",
                "make the taint change alone, in a maintenance window long enough for the roll-out; watch `kubectl get "
                "nodes -L nvidia.com/gpu-driver-upgrade-state` until every node shows `upgrade-done`",
                nodes=change.pools_nodes(pools), documents=change.values_paths("daemonsets.tolerations")
                + _toleration_docs(change)))
    tainted = {p for p in change.both() if _taints(change.old.pools[p]) != _taints(change.new.pools[p])}
    for doc in change.documents(["NVIDIADriver"], where=_driver_tolerations_only):
        pools = [p for p in [change.pool_data(doc)] if p in change.new.pools]
        if set(pools) & tainted:
            continue  # the tainted pool's impact says so
        impacts.append(Impact(
            "taint-change", "disruptive", pools,
            f"NVIDIADriver {doc.name}'s tolerations change: the new driver pod template makes the upgrade controller "
            "reinstall the driver on every node it manages (drain, under the upgrade policy)",
            "make the taint change alone, in a maintenance window",
            nodes=change.pools_nodes(pools) if pools else None, documents=[doc]))
    return impacts


@impact_kind("pool-selection", "the rule that labels a pool's nodes changes")
def _pool_selection(change: Change) -> list[Impact]:
    impacts = []
    for doc in change.documents(["NodeFeatureRule"], where=lambda d: any(
            ".matchFeatures" in c.path or ".matchAny" in c.path for c in d.changes) or d.status != "changed"):
        pool = change.pool_data(doc) or doc.name
        if doc.status == "added" and pool not in change.old.pools:
            continue  # a new pool: capacity-change says so
        if doc.status == "changed" and pool in change.old.pools and pool in change.new.pools:
            old_ids, new_ids = _pci_devices(change.old.data(doc)), _pci_devices(change.new.data(doc))
            if old_ids and new_ids and not old_ids & new_ids:
                impacts.append(_pool_left(change, pool, doc, old_ids, new_ids))
                continue
        renamed = _renames(change)
        if doc.status == "removed" and pool in renamed:
            what = (f"NodeFeatureRule {doc.name} is deleted and pool {renamed[pool]}'s rule, with the same match, "
                    f"takes its nodes: nfd-master swaps their {POOL_LABEL}={pool} label (and the pool's other labels "
                    "and taints) "
                    "for the new pool's")
        elif doc.status == "removed" and pool not in change.new.pools:
            what = (f"NodeFeatureRule {doc.name} is deleted: nfd-master removes pool {pool}'s labels and taints from "
                    "its nodes, which fall back to the default device-plugin config")
        else:
            what = (f"the rule that labels pool {pool}'s nodes changes: nodes that stop matching lose the pool's "
                    "labels and taints (device-plugin config, MIG layout), nodes that start matching gain them")
        impacts.append(Impact("pool-selection", "pending", [pool], what,
                              f"check which nodes match before the merge (`kubectl get nodes -l {POOL_LABEL}={pool}` "
                              "against the new rule) and drain those that leave the pool",
                              nodes=change.pools_nodes([pool], new=doc.status != "removed"), documents=[doc]))
    return impacts


def _pci_devices(rule: Any) -> set[str]:
    """The PCI device ids a NodeFeatureRule's pci.device expressions match (In), over all its rules."""
    ids: set[str] = set()
    for rule in ((rule or {}).get("spec") or {}).get("rules") or []:
        for feature in (rule or {}).get("matchFeatures") or []:
            if not isinstance(feature, dict):
                continue
            device = (feature.get("matchExpressions") or {}).get("device")
            if feature.get("feature") == "pci.device" and isinstance(device, dict) and device.get("op") == "In":
                ids.update(str(v) for v in device.get("value") or [])
    return ids


def _rule_labels(rule: Any) -> dict:
    rules = ((rule or {}).get("spec") or {}).get("rules") or []
    return {k: v for r in rules if isinstance(r, dict) for k, v in (r.get("labels") or {}).items()}


def _default_driver(side: Deployed) -> bool:
    """Whether the cluster has a default NVIDIADriver, the fallback for GPU nodes that match no other one
    (gpu-operator-facts §8; §4: driver.nvidiaDriverCRD.deployDefaultCR defaults to true)."""
    if any(((d.get("spec") or {}).get("default") is True) for d in side.objects("NVIDIADriver")):
        return True
    crd = (side.values.get("driver") or {}).get("nvidiaDriverCRD") or {}
    return bool(crd.get("enabled")) and crd.get("deployDefaultCR", True) is not False


def _default_plugin_resources(side: Deployed, gpus: int) -> tuple[str, dict[str, int]]:
    """The device-plugin config key of nodes without the config label (devicePlugin.config.default) and what a node
    with `gpus` whole GPUs advertises under it (gpu-operator-facts §6: MPS wins over time-slicing; renameByDefault
    adds `.shared`; an absent or empty key means the plugin's defaults, whole GPUs)."""
    config = (side.values.get("devicePlugin") or {}).get("config") or {}
    key = config.get("default") or ""
    text = next((((cm.get("data") or {}).get(key)) for cm in side.objects("ConfigMap")
                 if (cm.get("metadata") or {}).get("name") == config.get("name")), None)
    try:
        from .treediff import _load_all

        body = (_load_all(text) or [{}])[0] if isinstance(text, str) else {}
    except Exception:  # noqa: BLE001 - a hand-edited folder: fall back to whole GPUs
        body = {}
    sharing = (body.get("sharing") if isinstance(body, dict) else None) or {}
    spec = sharing.get("mps") or sharing.get("timeSlicing") or {}
    out: dict[str, int] = {}
    for resource in spec.get("resources") or []:
        if isinstance(resource, dict) and resource.get("name") == "nvidia.com/gpu":
            name = "nvidia.com/gpu.shared" if spec.get("renameByDefault") else "nvidia.com/gpu"
            out[name] = gpus * int(resource.get("replicas") or 1)
    return key or "the plugin's defaults", out or {"nvidia.com/gpu": gpus}


def _pool_left(change: Change, pool: str, doc: DocumentDiff, old_ids: set[str], new_ids: set[str]) -> Impact:
    """The pool's rule now matches other PCI devices (another GPU model): every running node of the pool stops
    matching, and nfd-master removes the rule's labels (and taints) from it at sync."""
    old, new = change.old.pools[pool], change.new.pools[pool]
    nodes = change.pools_nodes([pool], new=False)
    labels = _rule_labels(change.old.data(doc))
    taints = " (and the pool's taints)" if _taints(old) else ""
    what = (f"pool {pool}'s GPU model changes from {old.get('model', '?')} to {new.get('model', '?')} and its "
            f"NodeFeatureRule now matches PCI device(s) {_names(sorted(new_ids))} instead of "
            f"{_names(sorted(old_ids))}: its{'' if nodes is None else ' ' + str(nodes)} running node(s) stop matching, "
            f"so nfd-master removes {_names(sorted(labels))}{taints} from them")
    severity, driverless = "pending", False
    owner = _driver_owner(old)
    if owner == "NVIDIADriver":
        severity = "disruptive"
        driver = next(((d.get("metadata") or {}).get("name") for d in change.old.objects("NVIDIADriver")
                       if _pool_of(d) == pool), f"of pool {pool}")
        driverless = not _default_driver(change.new)
        what += (f"; NVIDIADriver {driver} selects nodes by {POOL_LABEL}, so it no longer manages them: " + (
            "no NVIDIADriver selects them any more (the cluster deploys no default one, gpu-operator-facts §8), so "
            "their driver goes and none replaces it, and their GPU workloads stop" if driverless else
            "they fall to the default NVIDIADriver (gpu-operator-facts §8), whose driver pod replaces the pool's, "
            "reinstalling the driver and stopping their GPU workloads"))
    elif labels.get("nvidia.com/gpu.deploy.driver") == "false":
        severity = "disruptive"
        what += ("; they lose nvidia.com/gpu.deploy.driver=false, so the operator starts its driver on nodes that run "
                 "a host driver (gpu-operator-facts §7), stopping their GPU workloads")
    resources = sorted(change.old.resources(pool))
    # all-disabled is what the operator presets on MIG-capable nodes without the label (gpu-operator-facts §6).
    if PLUGIN_LABEL in labels and labels.get(MIG_LABEL, "all-disabled") == "all-disabled":
        key, after = _default_plugin_resources(change.new, int(old.get("gpusPerNode") or 0))
        before = change.old.resources(pool)
        resources = sorted(set(before) | set(after))
        what += (f"; without {PLUGIN_LABEL} they get the default device-plugin config ({key}, gpu-operator-facts §6): "
                 + ("once a driver runs there again, " if driverless else "")
                 + (f"each node still advertises {_per_node(after)}" if after == before else
                    f"each node advertises {_per_node(after)} instead of {_per_node(before)}"))
        if nodes is not None and after != before:
            what += (" (" + ", ".join(f"{r} {before.get(r, 0) * nodes} -> {after.get(r, 0) * nodes}" for r in resources)
                     + " in the pool)")
    elif PLUGIN_LABEL in labels:
        what += f"; they lose {PLUGIN_LABEL} and {MIG_LABEL}, so what they advertise falls to the cluster's defaults"
    what += f"; pods and Jobs that select {POOL_LABEL}={pool} stay Pending until {new.get('model', '?')} nodes join"
    return Impact("pool-selection", severity, [pool], what,
                  "do not change a running pool's GPU model in place: add the new model as a new pool (its own name "
                  "and nodes), move the workloads to it, then remove this pool; or drain the pool's nodes before the "
                  "merge and replace them with the new model's",
                  resources=resources, nodes=nodes, documents=[doc])


@impact_kind("capacity-change", "a pool's advertised capacity, a pool's presence or a team's quota changes")
def _capacity_change(change: Change) -> list[Impact]:
    impacts = []
    renamed = _renames(change)
    for name in [*change.old.pools, *(p for p in change.new.pools if p not in change.old.pools)]:
        before, after = change.old.totals(name), change.new.totals(name)
        limits = change.documents(["NodePool"], [name], where=lambda d: any(
            c.path.startswith("spec.limits") for c in d.changes)) + change.documents(
            ["file"], where=lambda d: d.status == "changed" and d.file == _template_file(change, name) and all(
                _count_line(c.old) and _count_line(c.new) for c in d.changes))
        pool_docs = limits if name in change.old.pools and name in change.new.pools else limits + change.documents(
            ["NodeFeatureRule", "NVIDIADriver", "NodePool", "ResourceFlavor", "Job"], [name],
            where=lambda d: d.status != "changed") + change.documents(
            ["file"], where=lambda d: d.status != "changed" and d.file == _template_file(change, name))
        if name in renamed:
            to = renamed[name]
            what = (f"pool {name} is renamed to {to} (the same GPU model, GPUs per node and node selection): its "
                    f"nodes move to pool {to} with their {_per_node(before)}, so the cluster keeps its capacity; pods "
                    f"and Jobs that select {POOL_LABEL}={name} stay Pending, and its nodes swap the pool's labels "
                    "and configs for the new name's")
            replaced = change.documents(["NVIDIADriver", "NodePool"], [name], where=lambda d: d.status == "removed")
            if replaced:
                kinds = {d.kind for d in replaced}
                what += (f"; its {_names(sorted(kinds))} is deleted and pool {to}'s is created, which "
                         + " and ".join(w for k, w in (("NVIDIADriver", "reinstalls the driver on its nodes"),
                                                        ("NodePool", "replaces its nodes")) if k in kinds)
                         + ", stopping their GPU workloads")
            impacts.append(Impact("capacity-change", "disruptive" if replaced else "pending", [name],
                what, f"move the pods, Jobs and quotas that select pool {name} to {to} in the same change, and drain "
                "its nodes before the merge where its driver object or NodePool is replaced",
                resources=sorted(before), nodes=change.pools_nodes([name], new=False), documents=pool_docs))
            continue
        if name not in change.new.pools:
            what = (f"pool {name} is removed: its {_per_node(before)} leave the cluster's capacity; pods and Jobs "
                    "that select it stay Pending, and its nodes lose the pool's labels, configs and driver object")
            impacts.append(Impact("capacity-change", "disruptive" if change.documents(
                ["NVIDIADriver", "NodePool"], [name], where=lambda d: d.status == "removed") else "pending", [name],
                what, "move the pool's workloads elsewhere and drain its nodes before the merge",
                resources=sorted(before), nodes=change.pools_nodes([name], new=False), documents=pool_docs))
            continue
        if name not in change.old.pools:
            came = next((old for old, new in renamed.items() if new == name), None)
            impacts.append(Impact("capacity-change", "none", [name],
                                  f"pool {name} takes over pool {came}'s nodes and their {_per_node(after)}" if came
                                  else f"pool {name} is added: {_per_node(after)} join the cluster's capacity once its "
                                  "nodes are labelled", "nothing to do before the merge",
                                  resources=sorted(after), nodes=change.pools_nodes([name]), documents=pool_docs))
            continue
        # Per node: the sync changes what each node advertises, not how many nodes there are (a NodePool's limits
        # aside), so a declared node count alone changes nothing deployed.
        before, after = change.old.resources(name), change.new.resources(name)
        lower = sorted(r for r in before if after.get(r, 0) < before[r] and r in after)
        higher = sorted(r for r in after if after[r] > before.get(r, 0) and r in before)
        if not lower and not higher and not pool_docs:
            nodes_before, nodes_after = change.old.pools[name].get("nodes"), change.new.pools[name].get("nodes")
            if nodes_before != nodes_after:
                impacts.append(Impact(
                    "capacity-change", "none", [name],
                    f"pool {name}'s declared nodes change from {nodes_before} to {nodes_after} (its capacity in "
                    "REPORT.md and the quota checks follow): the sync adds or removes no node",
                    "scale the node group to match, draining the nodes that go", resources=sorted(after),
                    nodes=change.pools_nodes([name])))
            continue
        shown = ", ".join(f"{r} {before[r]} -> {after[r]} per node" for r in lower + higher)
        capped = _limits_lowered(change, name)
        what = f"pool {name}'s capacity changes ({shown or _scale(change, name)})"
        if lower:
            what += (": pods asking for more than is left stay Pending, and quotas above the new capacity no longer "
                     "hold")
        if capped:
            # Karpenter launches no node past spec.limits (karpenter-facts §b); limits are a behavioral field, not
            # drift (§d), so the nodes already running stay.
            what += (f"{'; ' if lower else ': '}Karpenter NodePool limits drop ({_names(capped)}): it launches no node "
                     "past them, so pods that would have scaled the pool stay Pending; running nodes stay")
        impacts.append(Impact(
            "capacity-change", "pending" if lower or capped else "none", [name], what,
            "lower the teams' quotas to the new capacity in the same change and let jobs finish first" if lower else
            "lower the teams' quotas to the new limit in the same change; Karpenter removes no running node for "
            "it (consolidation or a drain does)" if capped else
            "nothing to do before the merge", resources=lower + higher, nodes=change.pools_nodes([name]),
            documents=pool_docs))
    impacts += _quota_change(change)
    return impacts


def _renames(change: Change) -> dict[str, str]:
    """Old pool -> new pool, where one pool goes and one comes with the same GPU model, GPUs per node, label source
    and, for NodeFeatureRule pools, the same match: a rename, whose nodes move rather than leave."""
    def same(old: dict, new: dict) -> bool:
        if any(old.get(k) != new.get(k) for k in ("model", "gpusPerNode")) or _labelled_by(old) != _labelled_by(new):
            return False
        if _labelled_by(old) != "nfd":
            return True
        before, after = ([m.get("matchFeatures") for r in side.objects("NodeFeatureRule")
                          if _pool_of(r) == pool.get("name") for m in (r.get("spec") or {}).get("rules") or []
                          if isinstance(m, dict)] for side, pool in ((change.old, old), (change.new, new)))
        return before == after

    gone = [p for p in change.old.pools if p not in change.new.pools]
    came = [p for p in change.new.pools if p not in change.old.pools]
    pairs = {g: [c for c in came if same(change.old.pools[g], change.new.pools[c])] for g in gone}
    return {g: cs[0] for g, cs in pairs.items()
            if len(cs) == 1 and sum(cs[0] in others for others in pairs.values()) == 1}


def _limits_lowered(change: Change, pool: str) -> list[str]:
    """`key old -> new` of each limit of the pool's Karpenter NodePool that the change lowers or adds."""
    from ..quantity import parse

    out = []
    for doc in change.documents(["NodePool"], [pool], where=lambda d: d.status == "changed"):
        before = ((change.old.data(doc) or {}).get("spec") or {}).get("limits") or {}
        after = ((change.new.data(doc) or {}).get("spec") or {}).get("limits") or {}
        for key, value in sorted(after.items()):
            try:
                lowered = key not in before or parse(value) < parse(before[key])
            except ValueError:
                lowered = value != before.get(key)
            if lowered:
                out.append(f"{key} {before.get(key, 'none')} -> {value}")
    return out


def _scale(change: Change, pool: str) -> str:
    """How a pool's node count or limit changes, in words."""
    before, after = change.old.pools[pool].get("nodes"), change.new.pools[pool].get("nodes")
    return f"nodes {before} -> {after}" if before != after else "its NodePool limits"


def _quotas(side: Deployed) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    queues = (side.report.get("queueing") or {}).get("teams")
    for team in [] if queues else side.report.get("teams", []):
        for quota in team.get("quotas", []):
            key = (team.get("name", "?"), quota.get("resource", "?"))
            out[key] = out.get(key, 0) + (quota.get("total") or 0)
    for team in queues or []:
        for row in team.get("rows", []):
            key = (team.get("name", "?"), f"{row.get('resource')} on {row.get('pool')}")
            out[key] = row.get("nominal") or 0
    return out


def _quota_change(change: Change) -> list[Impact]:
    before, after = _quotas(change.old), _quotas(change.new)
    for old, new in _renames(change).items():  # a renamed pool's queue rows follow it
        for (team, row), value in list(after.items()):
            if row.endswith(f" on {new}"):
                after.setdefault((team, row[: -len(new)] + old), value)
    dropped = sorted(k for k in before if after.get(k, 0) < before[k])
    if not dropped:
        return []
    teams = sorted({t for t, _ in dropped})
    docs = change.documents(["ResourceQuota", "ClusterQueue"])
    return [Impact("capacity-change", "pending", [],
                   "team quota drops: " + "; ".join(f"{t} {r} {before[(t, r)]} -> {after.get((t, r), 0)}"
                                                    for t, r in dropped)
                   + ": running pods keep running, new pods and Jobs of those teams wait (Kueue) or are refused "
                   "(ResourceQuota) until usage falls under the new quota",
                   f"tell team(s) {_names(teams)} before the merge",
                   resources=sorted({r.split(' on ')[0] for _, r in dropped}), documents=docs)]


def _probe(job: Any) -> bool:
    labels = ((job or {}).get("metadata") or {}).get("labels") or {}
    return labels.get("app.kubernetes.io/component") == PROBE_COMPONENT


def _hook(job: dict) -> str | None:
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    if "argocd.argoproj.io/hook" in annotations:
        return f"an Argo CD {annotations['argocd.argoproj.io/hook']} hook, which runs on every sync"
    if "helm.sh/hook" in annotations:
        return f"a Helm {annotations['helm.sh/hook']} hook"
    if annotations.get("kustomize.toolkit.fluxcd.io/force") == "enabled":
        return "recreated by Flux when it changes"
    return None


def _scales(pool: dict) -> bool:
    """A pool whose nodes come with demand: Karpenter's, or one report.json gives a minimum of 0 nodes."""
    autoscaling = pool.get("autoscaling") if isinstance(pool.get("autoscaling"), dict) else {}
    return _labelled_by(pool) == "karpenter" or 0 in (pool.get("minNodes"), autoscaling.get("minNodes"),
                                                       autoscaling.get("min"))


@impact_kind("probe-run", "probe Jobs run on this sync")
def _probe_run(change: Change) -> list[Impact]:
    applied = change.new.applied()
    changed = [d for d in change.documents(["Job"]) if d.status != "removed" and _probe(change.new.data(d))]
    runs: dict[str, tuple[str, dict]] = {}
    if change.diff.documents:  # there is a sync: hooks run whether or not they changed
        for key, (kind, name, _ns, data) in change.new.docs.items():
            if kind == "Job" and _probe(data) and key[0] in applied and _hook(data) and "on every sync" in _hook(data):
                runs[name] = (_hook(data), data)
    for doc in changed:
        data = change.new.data(doc)
        if doc.file in applied and doc.name not in runs:
            runs[doc.name] = (_hook(data) or ("a new Job" if doc.status == "added" else
                                             "a changed Job (Jobs are immutable: delete the old one first)"), data)
    impacts = []
    removed = change.documents(["Job"], where=lambda d: d.status == "removed" or (
        d.status == "changed" and not _probe(change.new.data(d)))) + [d for d in changed if d.file not in applied]
    if runs:
        pools = sorted({_pool_of(data) or "?" for _, data in runs.values()})
        scaling = [p for p in pools if _scales(change.new.pools.get(p, {}))]
        how = sorted({why for why, _ in runs.values()})
        what = (f"{len(runs)} probe Job(s) run on this sync ({'; '.join(how)}), each taking a GPU of its pool for up "
                "to 15 minutes")
        if scaling:
            what += f"; in pools that scale with demand ({_names(scaling)}) each launches a node when none is up"
        impacts.append(Impact("probe-run", "none", pools, what,
                              "nothing to drain; sync when the pools have a free GPU, or switch the probes off "
                              "for pools that scale to zero",
                              documents=changed + [d for d in removed if d in changed] + change.documents(
                                  ["Job"], where=lambda d: d.name in runs and d not in changed)))
    rest = [d for d in removed if d not in changed] + [d for d in changed if d.file not in applied]
    was = change.old.applied()
    for docs, what in (([d for d in rest if d.file in was], "are removed or no longer applied: nothing runs them on "
                        "sync"), ([d for d in rest if d.file not in was], "that the sync never applied (run by hand) "
                                  "change: nothing runs them on sync")):
        if docs:
            impacts.append(Impact("probe-run", "none", sorted({change.pool_data(d) or "?" for d in docs}),
                                  f"{len(docs)} probe Job(s) {what}",
                                  "run them by hand when you want the proof (the acceptance checklist in REPORT.md)",
                                  documents=docs))
    return impacts


# --- what no kind explained ---------------------------------------------------------------------------------------


def _operand_restart(change: Change) -> list[Impact]:
    values = [d for d in change.diff.documents if d.kind == "values"]
    left = [c.path for d in values for c in d.changes if c.path not in change.values_claimed]
    docs = change.documents(["ClusterPolicy", "NodeFeatureDiscovery"])
    docs = [d for d in docs if not any(d in i.documents for i in change.impacts)]
    if not left and not docs:
        return []
    shown = sorted({p.split(".")[0] for p in left}) + [d.title for d in docs]
    return [Impact("operand-restart", "restart", list(change.new.pools),
                   f"chart values change ({_names(shown)}): the operator updates its operand DaemonSets and their pods "
                   "restart node by node; GPU workloads keep running",
                   "nothing to drain; watch `kubectl get clusterpolicy` until it is ready again",
                   nodes=change.pools_nodes(list(change.new.pools)), documents=(values if left else []) + docs)]


def _object_change(change: Change) -> list[Impact]:
    covered = {id(d) for i in change.impacts for d in i.documents}
    quiet = [d for d in change.diff.documents if id(d) not in covered and (
        d.kind in QUIET_KINDS or d.kind == "document" and d.file.endswith("kustomization.yaml"))]
    if not quiet:
        return []
    return [Impact("object-change", "none", sorted({p for d in quiet if (p := change.pool_data(d))}),
                   f"{len(quiet)} object(s) are updated in place ({_names(sorted({_title(d) for d in quiet})[:6])}"
                   f"{', ...' if len(quiet) > 6 else ''}): no GPU pod, node or operand restarts",
                   "nothing to drain", documents=quiet)]


def _title(doc: DocumentDiff) -> str:
    return doc.file if doc.kind in ("document", "file", "values") else doc.title


def _unclassified(change: Change) -> list[Impact]:
    covered = {id(d) for i in change.impacts for d in i.documents}
    left = [d for d in change.diff.documents if id(d) not in covered]
    if not left:
        return []
    return [Impact("unclassified", "restart", sorted({p for d in left if (p := change.pool_data(d))}),
                   f"gpuconf cannot tell what changing {_names(_title(d) for d in left)} does to the cluster (a gap in "
                   "gpuconf: please report it)", "review the document diff below by hand", documents=left)]


#: Run after the kinds, in this order, on what they left.
FALLBACKS: dict[str, Callable[[Change], list[Impact]]] = {
    "operand-restart": _operand_restart, "object-change": _object_change, "unclassified": _unclassified}


# --- the plan -----------------------------------------------------------------------------------------------------


@dataclass
class ImpactPlan:
    """Every impact of syncing the new render over the deployed folder."""

    impacts: list[Impact]
    nodes_source: str | None = None
    pods_source: str | None = None

    @property
    def worst(self) -> str:
        """The highest severity of any impact."""
        return max((i.severity for i in self.impacts), key=SEVERITIES.index, default="none")

    def fails(self, threshold: str | None) -> bool:
        """True when an impact of threshold's severity or worse is present."""
        return threshold is not None and any(
            SEVERITIES.index(i.severity) >= SEVERITIES.index(threshold) for i in self.impacts)

    def as_list(self) -> list[dict]:
        """The JSON form of the impacts."""
        return [i.as_dict() for i in self.impacts]


def plan_impacts(old: dict[str, str], new: dict[str, str], diff: TreeDiff) -> ImpactPlan:
    """The impacts of replacing the folder `old` (relative path -> text) by the render `new`, given their diff."""
    change = Change(old, new, diff)
    for _, detector in KINDS.values():
        change.impacts += detector(change)
    for fallback in FALLBACKS.values():
        change.impacts += fallback(change)
    if not change.impacts:
        what = "no deployed object changes"
        if diff.comments_only or any(old.get(f) != new.get(f) for f in ("REPORT.md", "report.json")):
            what += " (only REPORT.md, report.json, comments or key order differ)"
        change.impacts.append(Impact("none", "none", [], what + ": the sync changes nothing in the cluster",
                                     "nothing to do"))
    order = list(KINDS) + list(FALLBACKS) + ["none"]
    change.impacts.sort(key=lambda i: (-SEVERITIES.index(i.severity), order.index(i.kind), i.pools))
    for impact in change.impacts:
        impact.documents = list({id(d): d for d in impact.documents}.values())
        if impact.nodes is not None:
            impact.nodes_from = "intent"
    return ImpactPlan(change.impacts)


# --- counting from the live cluster -------------------------------------------------------------------------------

GPU_PREFIX = "nvidia.com/"


def count_live(plan: ImpactPlan, nodes: Iterable[dict], pods: Iterable[dict] | None, nodes_source: str,
               pods_source: str | None) -> None:
    """Replace the declared node counts by the nodes that carry each impact's pool label, and count the running
    pods with NVIDIA resource requests on them (the resources' own when an impact names them)."""
    by_pool: dict[str, set[str]] = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        pool = (meta.get("labels") or {}).get(POOL_LABEL)
        if pool and meta.get("name"):
            by_pool.setdefault(pool, set()).add(meta["name"])
    running: list[tuple[str, set[str]]] = []
    for pod in pods or []:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if status.get("phase") not in ("Running", "Pending") or not spec.get("nodeName"):
            continue
        asks = {r for c in spec.get("containers") or [] for part in ("limits", "requests")
                for r in ((c.get("resources") or {}).get(part) or {}) if r.startswith(GPU_PREFIX)}
        if asks:
            running.append((spec["nodeName"], asks))
    plan.nodes_source, plan.pods_source = nodes_source, pods_source
    for impact in plan.impacts:
        if not impact.pools:
            continue
        names = set().union(*(by_pool.get(p, set()) for p in impact.pools))
        impact.nodes, impact.nodes_from = len(names), "cluster"
        if pods is not None:
            wanted = set(impact.resources) if impact.kind == "resource-rename" else None
            impact.pods = sum(1 for node, asks in running if node in names and (wanted is None or asks & wanted))


# --- reporters ----------------------------------------------------------------------------------------------------


def impacts_text(plan: ImpactPlan, where: str) -> str:
    """The impacts as text, worst first."""
    lines = [f"Impact on {where}: {len(plan.impacts)} impact(s), worst: {plan.worst}"]
    for i in plan.impacts:
        count = _node_count(i.nodes) + (f", {i.pods} GPU pod(s)" if i.pods is not None else "")
        lines.append(f"  {i.severity.upper()} {i.kind}" + (f" [{', '.join(i.pools)}]" if i.pools else "") + count)
        lines.append(f"    {i.message}")
        lines.append(f"    safe: {i.safe}")
    return "\n".join(lines) + "\n\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def impacts_markdown(plan: ImpactPlan, where: str) -> str:
    """The impacts as a short Markdown table, fit for a pull-request comment."""
    icon = {"disruptive": "🔴", "pending": "🟠", "restart": "🟡", "none": "⚪"}
    lines = [f"## gpuconf impact plan: worst `{plan.worst}`", "",
             f"What syncing this change does to `{where}` ({len(plan.impacts)} impact(s)).", "",
             "| severity | kind | pools | nodes | what happens | how to do it safely |", "|---|---|---|---|---|---|"]
    for i in plan.impacts:
        nodes = "?" if i.nodes is None else str(i.nodes) + (f" ({i.pods} GPU pods)" if i.pods is not None else "")
        lines.append(f"| {icon[i.severity]} {i.severity} | `{i.kind}` | {_cell(', '.join(i.pools)) or '-'} | {nodes} "
                     f"| {_cell(i.message)} | {_cell(i.safe)} |")
    return "\n".join(lines) + "\n\n"

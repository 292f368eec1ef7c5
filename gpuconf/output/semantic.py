"""Semantic verification: read the rendered tree back the way its consumers do, and compare it with the intent.

Schema verification proves that every document is well formed; this proves that the cluster will do what the intent
says. Each check reads the output as the consumer reads it (gpuconf.render.chart models the chart's templates and the
operator's defaults) and compares the result with facts taken from the intent and the plan, not from the renderers:

* the effective driver upgrade policy of every managed pool, from the ClusterPolicy or the pool's NVIDIADriver by
  mode, and the driver version each pool runs (per-pool pins and upgrade waves);
* the MIG strategy, the device-plugin and MIG config names, default keys and every pool label's key;
* that the operands (global list), NFD's worker, the pool's NVIDIADriver and its probe (with Kueue: through the pool's
  ResourceFlavor) tolerate every pool taint;
* that every image comes from the registry mirror when one is set;
* that quotas name resources a pool advertises (Kueue's: the pool of the flavor);
* that every metric an alert reads is in the exporter's metrics file;
* that no map gpuconf sets in a verbatim ClusterPolicy block is empty (server-side apply rejects a map that became
  empty, so an intent edit could not be applied).

A value an override sets is the user's deliberate choice (GC342 warns when it replaces a derived one): checks of such
a path are skipped, except the upgrade policy, which takes the overrides into what is expected.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable, Iterator

from .. import plan as P
from ..render import chart as C
from ..render.imagelock import pins

#: Taint effects that keep a pod off a node (PreferNoSchedule only discourages).
BLOCKING = ("NoSchedule", "NoExecute")


def check(tree: Any) -> list[str]:
    """Every semantic problem of a rendered tree (render.tree.Tree), as one line each; [] when it is true."""
    plan: P.Plan = tree.plan
    merged = tree.values.merged_view()
    reader = _Reader(plan, merged, tree)
    problems: list[str] = []
    for part in (reader.upgrade_policy, reader.driver_versions, reader.mig, reader.sharing_configs,
                 reader.tolerations, reader.images, reader.quotas, reader.metrics, reader.ssa_maps):
        try:
            problems += list(part())
        except C.TemplateError as exc:
            problems.append(f"chart values: {exc}")
    return problems


def tolerates(tolerations: Iterable[dict], taint: dict) -> bool:
    """Kubernetes' ToleratesTaint over a list: some toleration matches the taint's key, value and effect."""
    for tol in tolerations or []:
        if tol.get("effect") and tol["effect"] != taint["effect"]:
            continue
        operator = tol.get("operator", "Equal")
        if not tol.get("key"):
            if operator == "Exists":
                return True
            continue
        if tol["key"] != taint["key"]:
            continue
        if operator == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def intended_policy(intent: Any, defaults: dict) -> dict:
    """The upgrade policy the intent asks for, in the operator's field names: spec.driver.upgrade where it speaks,
    the chart's defaults where it is silent, and overrides of driver.upgradePolicy.* on top."""
    chart_policy = C.upgrade_policy(defaults) or {}
    up = intent.spec.driver.upgrade
    policy = {k: (dict(v) if isinstance(v, dict) else v) for k, v in chart_policy.items()}
    if up is not None:
        policy["autoUpgrade"] = up.auto_upgrade
        policy["maxParallelUpgrades"] = up.max_parallel
        policy["maxUnavailable"] = up.max_unavailable
        if up.drain is not None:
            policy["drain"] = {"enable": up.drain.enable, "force": up.drain.force,
                               "timeoutSeconds": up.drain.timeout_seconds, "deleteEmptyDir": up.drain.delete_empty_dir,
                               "podSelector": up.drain.pod_selector or ""}
        if up.pod_deletion is not None:
            policy["podDeletion"] = {"force": up.pod_deletion.force, "timeoutSeconds": up.pod_deletion.timeout_seconds,
                                     "deleteEmptyDir": up.pod_deletion.delete_empty_dir}
        if up.wait_for_completion is not None:
            policy["waitForCompletion"] = {"podSelector": up.wait_for_completion.pod_selector,
                                           "timeoutSeconds": up.wait_for_completion.timeout_seconds}
    if intent.spec.cluster.allocation == "dra":
        policy["autoUpgrade"] = False  # NV-docs: no automatic driver upgrades on DRA nodes
    for override in intent.spec.overrides:
        parts = override.path.split(".")
        if parts[:2] != ["driver", "upgradePolicy"]:
            continue
        rest = ["podDeletion" if p == "gpuPodDeletion" else p for p in parts[2:]]
        value = override.value
        if isinstance(value, dict) and "gpuPodDeletion" in value:
            value = {("podDeletion" if k == "gpuPodDeletion" else k): v for k, v in value.items()}
        if not rest:
            if isinstance(value, dict):
                for key, item in value.items():
                    policy[key] = {**policy.get(key, {}), **item} if isinstance(item, dict) else item
            continue
        node = policy
        for key in rest[:-1]:
            node = node.setdefault(key, {})
        node[rest[-1]] = {**node.get(rest[-1], {}), **value} if isinstance(value, dict) else value
    return policy


def _same_unavailable(a: Any, b: Any) -> bool:
    """Two maxUnavailable values mean the same number of nodes (0 and "0%" are both none)."""
    def norm(v: Any) -> Any:
        if isinstance(v, str) and v.endswith("%") and v[:-1].isdigit():
            return 0 if int(v[:-1]) == 0 else ("%", int(v[:-1]))
        return v
    return norm(a) == norm(b)


def _policy_differences(want: dict, got: dict) -> Iterator[str]:
    """Field-by-field differences between an intended and an effective policy."""
    for key in ("autoUpgrade", "maxParallelUpgrades"):
        if want.get(key) != got.get(key):
            yield f"{key} {got.get(key)!r} instead of {want.get(key)!r}"
    if not _same_unavailable(want.get("maxUnavailable"), got.get("maxUnavailable")):
        yield f"maxUnavailable {got.get('maxUnavailable')!r} instead of {want.get('maxUnavailable')!r}"
    for part in ("drain", "podDeletion", "waitForCompletion"):
        w, g = want.get(part) or {}, got.get(part) or {}
        for key in sorted(set(w) | set(g)):
            wv, gv = w.get(key), g.get(key)
            if key == "podSelector":
                wv, gv = wv or "", gv or ""
            if wv != gv:
                yield f"{part}.{key} {gv!r} instead of {wv!r}"


class _Reader:
    """The rendered tree of one plan, read the way the operator, the chart and the device plugin read it."""

    def __init__(self, plan: P.Plan, merged: dict, tree: Any) -> None:
        self.plan = plan
        self.merged = merged
        self.tree = tree
        self.docs = [d for docs in tree.documents.values() for d in docs]
        self.override_paths = [tuple(o.path.split(".")) for o in plan.intent.spec.overrides]
        self._pool_labels: dict[str, dict[str, str]] | None = None

    # --- helpers ---------------------------------------------------------------------------------------------

    def overridden(self, dotted: str) -> bool:
        """True when an override sets this values path, or a path above or below it."""
        parts = tuple(dotted.split("."))
        return any(parts[:len(o)] == o or o[:len(parts)] == parts for o in self.override_paths)

    def of_kind(self, kind: str) -> list[dict]:
        return [d for d in self.docs if d.get("kind") == kind]

    def configmap(self, name: Any) -> dict | None:
        return next((d for d in self.of_kind("ConfigMap") if d["metadata"]["name"] == name
                     and d["metadata"].get("namespace") == self.plan.namespace), None)

    def nvidia_drivers(self) -> list[dict]:
        return self.of_kind("NVIDIADriver")

    def pool_labels(self) -> dict[str, dict[str, str]]:
        """The labels each pool's nodes get: from its NodeFeatureRule, or from its node template's kubelet flags
        (read once per tree)."""
        if self._pool_labels is None:
            self._pool_labels = self._read_pool_labels()
        return self._pool_labels

    def _read_pool_labels(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for rule in self.of_kind("NodeFeatureRule"):
            for item in rule["spec"]["rules"]:
                labels = item.get("labels", {})
                if P.POOL_LABEL in labels:
                    out[labels[P.POOL_LABEL]] = dict(labels)
        for pool in self.of_kind("NodePool"):  # Karpenter: the template's labels are on every node it launches
            labels = pool["spec"]["template"]["metadata"].get("labels", {})
            out[labels.get(P.POOL_LABEL, "")] = dict(labels)
        for path, text in self.tree.files.items():
            if path.startswith("node-templates/") and path.endswith(".kubelet.env"):
                match = re.search(r"--node-labels=(\S+)", text)
                if match:
                    labels = dict(pair.split("=", 1) for pair in match.group(1).strip('"').split(","))
                    out[labels.get(P.POOL_LABEL, "")] = labels
            elif path.startswith("node-templates/") and path.endswith(("rke2-config.yaml", "k3s-config.yaml")):
                import yaml

                body = yaml.safe_load(text) or {}
                labels = dict(str(pair).split("=", 1) for pair in body.get("node-label+") or [])
                out[labels.get(P.POOL_LABEL, "")] = labels
            elif path.startswith("node-templates/") and path.endswith((".gke.sh", ".aks.sh")):
                labels = _command_labels(text, "--node-labels" if path.endswith(".gke.sh") else "--labels")
                out[labels.get(P.POOL_LABEL, "")] = labels
        return out

    def owner(self, pool: P.PoolPlan) -> dict | None:
        """The NVIDIADriver spec that owns a pool's nodes in NVIDIADriver mode (its own, else the chart's default)."""
        labels = self.pool_labels().get(pool.name, {})
        mine = [d for d in self.nvidia_drivers()
                if not d["spec"].get("default") and d["spec"].get("nodeSelector")
                and all(labels.get(k) == v for k, v in d["spec"]["nodeSelector"].items())]
        if len(mine) > 1:
            raise C.TemplateError(f"pool {pool.name}: NVIDIADrivers {[d['metadata']['name'] for d in mine]} all "
                                  "select its nodes (the operator stops on overlapping selectors)")
        if mine:
            return mine[0]["spec"]
        return C.default_nvidiadriver(self.merged)

    def nvidiadriver_mode(self) -> bool:
        return bool(C.get(self.merged, "driver.enabled") and C.get(self.merged, "driver.nvidiaDriverCRD.enabled"))

    # --- the checks ------------------------------------------------------------------------------------------

    def upgrade_policy(self) -> Iterator[str]:
        """Every managed pool's effective upgrade policy is the intended one."""
        managed = [p for p in self.plan.pools if p.driver != "preinstalled"]
        if not managed or not C.get(self.merged, "driver.enabled"):
            return
        want = intended_policy(self.plan.intent, self.plan.chart.shared_defaults)
        if self.nvidiadriver_mode():
            for pool in managed:
                spec = self.owner(pool)
                if spec is None:
                    yield f"pool {pool.name}: no NVIDIADriver serves its nodes, so they get no driver"
                    continue
                got = C.effective_nvd_policy(spec)
                for diff in _policy_differences(want, got):
                    yield (f"pool {pool.name}: the operator reads its NVIDIADriver's upgrade policy (NVIDIADriver "
                           f"mode ignores the ClusterPolicy's): {diff}")
        else:
            got = C.upgrade_policy(self.merged) or {"autoUpgrade": False}
            for diff in _policy_differences(want, got):
                yield f"ClusterPolicy spec.driver.upgradePolicy as the chart renders it: {diff}"

    def driver_versions(self) -> Iterator[str]:
        """Each managed pool runs the version the intent gives it: its pin, its wave's, or the cluster's."""
        intent = self.plan.intent
        # An override of the version or of NVIDIADriver mode is the user's choice, which GC342 warns about.
        if not C.get(self.merged, "driver.enabled") or self.overridden("driver.version") \
                or self.overridden("driver.nvidiaDriverCRD.enabled"):
            return
        chart_default = str(self.plan.chart.shared_defaults["driver"]["version"])
        cluster = intent.spec.driver.version or chart_default
        waves = P.wave_versions(intent, chart_default)
        for pool in self.plan.pools:
            kind = P.pool_driver(intent, pool.pool)
            if kind == "preinstalled":
                if self.pool_labels().get(pool.name, {}).get(P.DRIVER_DEPLOY_LABEL) != "false":
                    yield (f"pool {pool.name}: keeps its host driver, but its nodes do not get "
                           f"{P.DRIVER_DEPLOY_LABEL}=false, so the operator installs one")
                continue
            want = kind if kind != "cluster" else waves.get(pool.name, (None, cluster))[1]
            if self.nvidiadriver_mode():
                spec = self.owner(pool)
                got = spec.get("version") if spec is not None else None
                if pool.name in waves and (spec is None or spec.get("default")):
                    yield f"pool {pool.name}: is in upgrade wave {waves[pool.name][0]} but has no NVIDIADriver of its own"
            else:
                if kind != "cluster" or pool.name in waves:
                    yield f"pool {pool.name}: needs its own NVIDIADriver ({want}), but NVIDIADriver mode is off"
                    continue
                got = str(C.get(self.merged, "driver.version"))
            if str(got) != want and not pins(str(got), want):
                yield f"pool {pool.name}: runs driver {got} instead of {want}"

    def mig(self) -> Iterator[str]:
        """The MIG strategy in the values is the plan's, and single only where every MIG pool is uniform."""
        if self.overridden("mig.strategy") or self.plan.strategy is None:
            return
        got = C.get(self.merged, "mig.strategy")
        if got != self.plan.strategy:
            yield f"mig.strategy is {got!r}, the MIG pools need {self.plan.strategy!r}"
        if got == "single":
            for pool, layout in P.mig_pools(self.plan.intent):
                if len(layout) > 1:
                    yield f"pool {pool.name}: mixes MIG profiles {sorted(layout)} under the single strategy"

    def sharing_configs(self) -> Iterator[str]:
        """The device plugin and mig-manager find their ConfigMaps, the default keys and every pool's key; on the
        DRA stack, the chart renders the GPUCluster and the classes, claims and quotas fit together."""
        if self.plan.intent.spec.cluster.allocation == "dra":
            from . import dracheck

            yield from dracheck.problems(self.plan, self.merged, self.tree)
            return
        labels = self.pool_labels()
        if not self.overridden("devicePlugin.config"):
            name = C.get(self.merged, "devicePlugin.config.name")
            cm = self.configmap(name)
            if cm is None:
                yield f"devicePlugin.config.name {name!r}: no such ConfigMap in namespace {self.plan.namespace}"
            else:
                keys = cm.get("data", {})
                default = C.get(self.merged, "devicePlugin.config.default")
                if default not in keys:
                    yield f"devicePlugin.config.default {default!r} is not a key of ConfigMap {name}"
                parsed: dict[str, Any] = {}  # one parse per key: a thousand pools share a handful of configs
                for pool in self.plan.pools:
                    key = labels.get(pool.name, {}).get(P.DEVICE_PLUGIN_LABEL)
                    if key not in keys:
                        yield f"pool {pool.name}: label {P.DEVICE_PLUGIN_LABEL}={key} names no key of {name}"
                        continue
                    if key not in parsed:
                        parsed[key] = _parsed(keys[key])
                    if parsed[key] != self.plan.device_plugin_configs.get(key):
                        yield f"pool {pool.name}: config {key} is not the pool's sharing profile"
        mig_pools = [p for p in self.plan.pools if p.mig_key is not None]
        if mig_pools and not self.overridden("migManager.config"):
            name = C.get(self.merged, "migManager.config.name")
            cm = self.configmap(name)
            if cm is None or "config.yaml" not in cm.get("data", {}):
                yield f"migManager.config.name {name!r}: no ConfigMap with key config.yaml in {self.plan.namespace}"
                return
            configs = (_parsed(cm["data"]["config.yaml"]) or {}).get("mig-configs", {})
            default = C.get(self.merged, "migManager.config.default")
            if default not in ("", None) and default not in configs:
                yield f"migManager.config.default {default!r} is not a config of {name}"
            for pool in mig_pools:
                key = labels.get(pool.name, {}).get(P.MIG_LABEL)
                if key not in configs:
                    yield f"pool {pool.name}: label {P.MIG_LABEL}={key} names no config of {name}"

    def tolerations(self) -> Iterator[str]:
        """Operands, NFD's worker, the pool's NVIDIADriver and its probe all tolerate the pool's taints."""
        ops = None if self.overridden("daemonsets.tolerations") else C.get(self.merged, "daemonsets.tolerations")
        nfd_path = "node-feature-discovery.worker.tolerations"
        nfd = None if self.overridden(nfd_path) else C.get(self.merged, nfd_path)
        probes = {j["metadata"]["labels"].get(P.POOL_LABEL): j for j in self.of_kind("Job")}
        drivers = {d["spec"]["nodeSelector"].get(P.POOL_LABEL): d for d in self.nvidia_drivers()
                   if d["spec"].get("nodeSelector")}
        for pool in self.plan.pools:
            for t in pool.pool.taints:
                if t.effect not in BLOCKING:
                    continue
                taint = {"key": t.key, "value": t.value, "effect": t.effect}
                shown = f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
                where = []
                if ops is not None and not tolerates(ops, taint):
                    where.append("the operands (daemonsets.tolerations)")
                if nfd is not None and not tolerates(nfd, taint):
                    where.append("NFD's worker")
                if pool.name in drivers and not tolerates(drivers[pool.name]["spec"].get("tolerations"), taint):
                    where.append(f"NVIDIADriver {drivers[pool.name]['metadata']['name']}")
                job = probes.get(pool.name)
                if job is not None and not tolerates(self.probe_tolerations(job), taint):
                    where.append(f"probe {job['metadata']['name']}")
                if where:
                    yield f"pool {pool.name}: taint {shown} is not tolerated by {', '.join(where)}"
        if self.plan.nfd_taints and not self.overridden("node-feature-discovery.master.config.enableTaints") \
                and C.get(self.merged, "node-feature-discovery.master.config.enableTaints") is not True:
            yield "NodeFeatureRules apply taints, but nfd-master's enableTaints is off"

    def probe_tolerations(self, job: dict) -> list[dict]:
        """A probe pod's tolerations as it runs: its own, and for a Job Kueue queues those Kueue adds when it admits
        it, the tolerations of the ResourceFlavors whose nodeLabels its nodeSelector matches (kueue pkg/podset)."""
        pod = job["spec"]["template"]["spec"]
        own = list(pod.get("tolerations") or [])
        if "kueue.x-k8s.io/queue-name" not in job["metadata"].get("labels", {}):
            return own
        selector = pod.get("nodeSelector") or {}
        for flavor in self.of_kind("ResourceFlavor"):
            labels = flavor["spec"].get("nodeLabels") or {}
            if labels and all(selector.get(k) == v for k, v in labels.items()):
                own += flavor["spec"].get("tolerations") or []
        return own

    def images(self) -> Iterator[str]:
        """With a registry mirror, every image the cluster pulls for this tree comes from it."""
        registry = self.plan.intent.spec.operator.registry
        if not registry:
            return
        mirror = registry.rstrip("/")

        def behind(value: str) -> bool:
            return value == mirror or value.startswith(mirror + "/")

        for path, value in _leaves_at(self.merged, "repository"):
            if isinstance(value, str) and value and not behind(value) \
                    and not self.overridden(".".join(path)):
                yield f"values {'.'.join(path)} = {value!r} is not behind the mirror {registry}"
        for doc in self.nvidia_drivers():
            for path, value in _leaves_at(doc["spec"], "repository"):
                # An NVIDIADriver takes its repositories from the chart's driver values (gdrcopy's from gdrcopy):
                # one an override set is the user's choice, as in the values above.
                joined = ".".join(str(part) for part in path)
                if isinstance(value, str) and not behind(value) \
                        and not self.overridden(f"driver.{joined}") and not self.overridden(joined):
                    yield (f"NVIDIADriver {doc['metadata']['name']} {'.'.join(path)} = {value!r} is not behind the "
                           f"mirror {registry}")
        for doc in self.docs:
            for path, value in _leaves_at(doc, "image"):
                if "containers" in path and isinstance(value, str) \
                        and not behind(value):
                    yield f"{doc['kind']} {doc['metadata']['name']} pulls {value!r}, not from the mirror {registry}"

    def quotas(self) -> Iterator[str]:
        """Every GPU resource a ResourceQuota limits is one a pool really advertises; every one a ClusterQueue gives on
        a pool's flavor, one that pool advertises."""
        advertised = {r for pool in self.plan.pools for r in pool.capacity.per_node}
        for quota in self.of_kind("ResourceQuota"):
            for key in quota["spec"].get("hard", {}):
                resource = key.split(".", 1)[1] if key.startswith(("requests.", "limits.")) else key
                if resource.startswith("nvidia.com/") and resource not in advertised:
                    yield (f"ResourceQuota {quota['metadata']['namespace']}/{quota['metadata']['name']} limits "
                           f"{resource}, which no pool advertises")
        # Kueue counts per flavor: a nominal quota on a GPU resource is one the flavor's pool advertises.
        pools = {}
        for flavor in self.of_kind("ResourceFlavor"):
            pool = self.plan.pool_by_name.get((flavor["spec"].get("nodeLabels") or {}).get(P.POOL_LABEL))
            if pool is not None:
                pools[flavor["metadata"]["name"]] = pool
        for queue in self.of_kind("ClusterQueue"):
            for group in queue["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    pool = pools.get(flavor["name"])
                    for item in flavor["resources"] if pool is not None else ():
                        if item["nominalQuota"] not in (0, "0") and item["name"].startswith("nvidia.com/") \
                                and item["name"] not in pool.capacity.per_node:
                            yield (f"ClusterQueue {queue['metadata']['name']} gives {item['name']} on pool "
                                   f"{pool.name}, which the pool does not advertise")

    def metrics(self) -> Iterator[str]:
        """Every DCGM metric an alert reads is an enabled row of the metrics file the exporter runs with."""
        from .. import catalog

        rules = self.of_kind("PrometheusRule")
        wanted = sorted({m for rule in rules for group in rule["spec"]["groups"] for r in group["rules"]
                         for m in re.findall(r"\bDCGM_[A-Z0-9_]+\b", r["expr"])})
        if not wanted or self.overridden("dcgmExporter.config") or self.overridden("dcgmExporter.env"):
            return
        name = C.get(self.merged, "dcgmExporter.config.name")
        key = catalog.dcgm_metrics()["configMapKey"]
        if name:
            cm = self.configmap(name)
            if cm is None or key not in cm.get("data", {}):
                yield f"dcgmExporter.config.name {name!r}: no ConfigMap with key {key} in {self.plan.namespace}"
                return
            enabled = {line.split(",")[0].strip() for line in cm["data"][key].splitlines()
                       if line.strip() and not line.lstrip().startswith("#")}
            source = f"ConfigMap {name}"
        else:
            enabled = {r["field"] for r in catalog.dcgm_metrics()["rows"] if r["enabled"]}
            source = "the exporter's default metrics file"
        for metric in wanted:
            if metric not in enabled:
                yield f"an alert reads {metric}, which {source} does not collect"

    def ssa_maps(self) -> Iterator[str]:
        """No map gpuconf sets inside a block the chart copies verbatim into the ClusterPolicy is empty."""
        for block in self.plan.chart.verbatim_blocks:
            value = C.get(self.merged, block)
            for path, item in _maps(value, tuple(block.split("."))):
                dotted = ".".join(path)
                if item == {} and not self.overridden(dotted):
                    yield (f"ClusterPolicy {dotted} would be an empty map: under server-side apply an intent edit "
                           "that empties it is rejected")


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> Any:
    """A config file of a ConfigMap as the plugin and mig-manager read it (YAML 1.1), through libyaml where built;
    once per text: the clusters of a fleet share their configs. Callers only compare what it returns."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _command_labels(text: str, flag: str) -> dict[str, str]:
    """The labels a node-pool command gives its nodes: gcloud's `--node-labels k=v,...`, az's `--labels k=v ...`."""
    import shlex

    words = shlex.split(text.replace("\\\n", " "), comments=True)
    if flag not in words:
        return {}
    items: list[str] = []
    for word in words[words.index(flag) + 1:]:
        if word.startswith("--"):
            break
        items += word.split(",")
    return dict(item.split("=", 1) for item in items if "=" in item)


def _leaves_at(value: Any, key: str) -> list[tuple[tuple, Any]]:
    """Every (path, scalar) in nested maps and lists whose last key is key, depth first in the data's order (list
    items by index; anything else, a tuple too, is a scalar), without making a path for each other leaf: the mirror
    check looks for two keys among a cluster's thousands of leaves. The loader bounds the depth of what an intent
    nests, so the recursion is bounded too."""
    found: list[tuple[tuple, Any]] = []
    path: list = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for name, item in items:
            if isinstance(item, (dict, list)):
                path.append(name)
                walk(item)
                path.pop()
            elif name == key:
                found.append(((*path, name), item))

    if isinstance(value, (dict, list)):
        walk(value)
    return found


def _maps(value: Any, prefix: tuple) -> Iterator[tuple[tuple, Any]]:
    """Every map below a value (itself included), with its path."""
    if isinstance(value, dict):
        yield prefix, value
        for key, item in value.items():
            yield from _maps(item, (*prefix, key))

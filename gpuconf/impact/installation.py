"""The live installation as "before": what the first sync of a draft does to each running node.

A folder gpuconf rendered says what the cluster runs; an installation gpuconf never rendered says it only on its
nodes (their labels, taints, GFD's view of MIG and sharing, the driver) and in its Helm values and ConfigMaps. So
this source compares node by node, not document by document: each node is placed in the draft's pool the way the
audit places it (its selectors, gpuconf/cluster/audit.py), then what the pool renders is held against what the node
runs:

- `mig-repartition`: the node's MIG layout (GFD's per-profile counts, else its mig.config name read in the
  installation's mig-parted config or mig-manager's own presets) is not the pool's;
- `config-key-missing`: a node the sync does not relabel (its pool's labels come from a node template, or it is in
  no pool) keeps a device-plugin or MIG config key that gpuconf's ConfigMaps do not offer;
- `device-plugin-config-switch`: the node's sharing (GFD's replicas, sharing strategy, the renamed resource) is not
  the pool's (disruptive), or only the config key changes (restart);
- `driver-reinstall`: the operator's driver on the node runs another version than the pool's, takes over or leaves;
- `taint-change` and `operand-tolerations`: taints the sync puts on the node, and taints on it that the rendered
  operand tolerations no longer tolerate;
- `node-relabel` (NodeFeatureRule pools: labels nfd-master puts on at sync) and `relabel-needed` (pools labelled by a
  node template, which labels only nodes created from then on: the `kubectl label` command for the nodes there now);
- `values-change`: the effective Helm values (the chart's defaults merged in) differ.

"Equivalent" (the draft changes nothing that runs) means: values equal and no node impact above `none`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .. import catalog
from .. import plan as P
from ..cluster import nodefacts as N
from .model import MIG_LABEL, PLUGIN_LABEL, SEVERITIES, Impact, ImpactPlan

#: The kinds this source reports, in the order a person acts on them (worst first within a severity).
ORDER = ("mig-repartition", "config-key-missing", "driver-reinstall", "operator-upgrade",
         "device-plugin-config-switch", "operand-tolerations", "taint-change", "relabel-needed", "values-change", "node-relabel")
DEPLOY_DRIVER = "nvidia.com/gpu.deploy.driver"


def _layout_text(layout: Mapping[str, int] | None) -> str:
    if layout is None:
        return "MIG off"
    return ", ".join(f"{n} x {p}" for p, n in sorted(layout.items())) + " per GPU" if layout else "MIG on, no instances"


def _observed_layout(labels: Mapping[str, str], model: catalog.GpuModel) -> dict[str, int] | None | bool:
    """The layout GFD shows on the node (mixed: per-profile counts; single: the product's profile), per GPU; False
    when GFD shows none (whole GPUs, or no GFD)."""
    gpus = _int(labels.get(N.GFD_COUNT))
    by_label = {p.replace("+", "."): p for p in model.mig_profiles}
    counts: dict[str, int] = {}
    for key, value in labels.items():
        if key.startswith("nvidia.com/mig-") and key.endswith(".count") and value.isdigit() and int(value) > 0:
            profile = by_label.get(key[len("nvidia.com/mig-"):-len(".count")])
            if profile is not None:
                counts[profile] = int(value)
    if counts and gpus:
        return {p: n // gpus for p, n in counts.items()}
    profile = N.mig_profile_of_product(labels.get(N.GFD_PRODUCT, ""))
    if profile is not None and profile in model.mig_profiles:
        per_gpu = model.mig_profiles[profile].max_instances
        return {profile: per_gpu}  # the single strategy shows only the total: the all-<profile> preset assumed
    return False


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _named_layout(name: str | None, model: catalog.GpuModel, configs: Mapping[str, Any]) -> dict | None | bool:
    """The layout a mig.config name selects: the installation's mig-parted config, else mig-manager's own presets
    (all-disabled, all-enabled, all-balanced, all-<profile>); False when the name is unknown."""
    if name in configs:
        return configs[name]
    if name in (None, P.MIG_DISABLED):  # no label: the operator presets all-disabled (gpu-operator-facts §6)
        return None
    if name == "all-enabled":
        return {}
    presets = catalog.mig_presets(model)
    return dict(presets[name]) if name in presets else False


def _sharing_of_node(labels: Mapping[str, str], units: Mapping[str, Any]) -> tuple[str, int, bool]:
    """(strategy, replicas, renamed) as GFD and the kubelet show them."""
    replicas = _int(labels.get(N.GFD_REPLICAS)) or 1
    strategy = labels.get(N.GFD_SHARING) or ("time-slicing" if replicas > 1 else "none")
    return strategy, replicas, "nvidia.com/gpu.shared" in units


def _sharing_of_pool(profile) -> tuple[str, int, bool]:
    shared = profile.mps or profile.time_slicing
    if shared is None or shared.replicas <= 1:
        return "none", 1, False
    return ("mps" if profile.mps is not None else "time-slicing"), shared.replicas, bool(shared.rename_by_default)


def _sharing_text(sharing: tuple[str, int, bool]) -> str:
    kind, replicas, renamed = sharing
    if kind == "none":
        return "whole GPUs"
    return f"{kind} x{replicas}" + (" as nvidia.com/gpu.shared" if renamed else "")


class _Acc:
    """Impacts gathered node by node: one per (kind, pool, severity, message), with its nodes."""

    def __init__(self) -> None:
        self.found: dict[tuple, Impact] = {}

    def add(self, kind: str, severity: str, pool: str | None, node: str, message: str, safe: str,
            drafted: bool = False) -> None:
        key = (kind, pool or "", severity, message, drafted)
        impact = self.found.get(key)
        if impact is None:
            impact = self.found[key] = Impact(kind, severity, [pool] if pool else [], message, safe, nodes=0,
                                              nodes_from="cluster", drafted=drafted)
        impact.nodes += 1
        impact.node_names.append(node)

    def impacts(self) -> list[Impact]:
        out = list(self.found.values())
        out.sort(key=lambda i: (-SEVERITIES.index(i.severity), ORDER.index(i.kind), i.pools, i.message))
        return out


def first_sync(plan: P.Plan, nodes: Iterable[Mapping[str, Any]], live_values: Mapping[str, Any] | None = None,
               mig_configs: Mapping[str, Any] | None = None, plugin_keys: Iterable[str] | None = None,
               values_rows: list | None = None, installed_chart: str | None = None,
               user_values: Mapping[str, Any] | None = None,
               rendered_files: Mapping[str, str] | None = None) -> ImpactPlan:
    """The impact plan of syncing the draft's render over a live installation.

    live_values: the installation's effective Helm values (its own chart's defaults merged in), for the operand
    tolerations; mig_configs: its mig-parted config names -> per-GPU layout (None: MIG off; False: not one layout);
    plugin_keys: the keys of its device-plugin ConfigMap; values_rows: the effective values leaves that differ
    (adopt.mapping.differing), None when the values were not given; installed_chart: the chart the installation
    runs, when known: a draft on another one makes the first sync a chart move (the operator upgrade, a driver
    reinstall where the driver pod changes, the CRD step), planned from user_values (its values as given) and
    rendered_files (the draft's render)."""
    from ..cluster.audit import Auditor
    from ..render.nodes import kubectl_label, label_sources
    from ..render.values import build_values
    from .nodes import DEFAULT_TOLERATIONS, _tolerates

    auditor = Auditor(plan, "installation", None)
    sources = label_sources(plan)
    configs = dict(mig_configs or {})
    rendered = build_values(plan).overrides()
    new_tolerations = (rendered.get("daemonsets") or {}).get("tolerations") or \
        (plan.chart.shared_defaults.get("daemonsets") or {}).get("tolerations") or DEFAULT_TOLERATIONS
    old_tolerations = ((live_values or {}).get("daemonsets") or {}).get("tolerations") or DEFAULT_TOLERATIONS
    offered_plugin = set(plan.device_plugin_configs)
    offered_mig = {pp.mig_key for pp in plan.pools if pp.mig_key} | {P.MIG_DISABLED}
    default_driver = plan.intent.spec.driver.version or (plan.chart.shared_defaults.get("driver") or {}).get("version")
    # The driver the installation itself installs (its values' driver.version, else the chart's default); None
    # without values, when a version the draft pins is the draft's own choice (the one most nodes run).
    live_driver = None if values_rows is None else ((live_values or {}).get("driver") or {}).get("version")
    acc = _Acc()
    relabel: dict[str, list[str]] = {}
    managed: dict[str, list[str]] = {}  # pool -> its nodes whose driver the operator installs
    placed: dict[str, int] = {}  # pool -> its nodes
    for raw in nodes:
        node = N.facts(raw)
        if not node.gpu:
            continue
        labels = node.labels
        model_id = N.node_model(labels, auditor.declared_models)
        matched = auditor.pools_of(node, model_id)
        if len(matched) != 1:
            _unplaced(acc, node.name, labels, offered_plugin, offered_mig, len(matched))
            continue
        pool = matched[0]
        pp = pool.plan
        name = pp.name
        placed[name] = placed.get(name, 0) + 1
        nfd = pp.nfd
        when = "at the sync" if nfd else "when the relabel command below runs (its node template labels only nodes " \
            "created from now on)"
        # MIG layout.
        if pp.model.mig_capable:
            new_layout = P.mig_layout(pp.profile, pp.model)
            observed = _observed_layout(labels, pp.model)
            old_layout = observed if observed is not False else _named_layout(labels.get(MIG_LABEL), pp.model, configs)
            if observed is False and old_layout is not None and old_layout is not False and \
                    labels.get(N.MIG_STATE) != "success":
                old_layout = None  # named, never applied: the GPUs are whole
            if old_layout is False or old_layout != new_layout:
                acc.add("mig-repartition", "disruptive", name, node.name,
                        f"pool {name}'s MIG config {pp.mig_key} ({_layout_text(new_layout)}) replaces "
                        f"{labels.get(MIG_LABEL) or 'no mig.config label'} ("
                        f"{_layout_text(old_layout) if old_layout is not False else 'a layout gpuconf cannot read'}) "
                        f"{when}: mig-manager stops the GPU clients, kills the node's GPU pods and repartitions "
                        "every GPU",
                        f"drain the node first (`kubectl drain NODE --ignore-daemonsets`), or make the pool's MIG "
                        f"layout the node's own ({_layout_text(old_layout) if old_layout is not False else '?'})")
            elif labels.get(MIG_LABEL) not in (None, pp.mig_key) and not nfd and labels.get(MIG_LABEL) not in offered_mig:
                acc.add("config-key-missing", "pending", name, node.name,
                        f"the node keeps {MIG_LABEL}={labels.get(MIG_LABEL)} from before gpuconf (its pool's node "
                        f"template does not relabel it), a key gpuconf's mig-parted ConfigMap does not have: "
                        "mig-manager fails to apply it (mig.config.state=failed); the layout stays as it is",
                        "run the relabel command below right after the sync")
        # Device-plugin config and sharing.
        old_sharing = _sharing_of_node(labels, node.allocatable)
        new_sharing = _sharing_of_pool(pp.profile)
        old_key = labels.get(PLUGIN_LABEL)
        if not (pp.model.mig_capable and P.mig_layout(pp.profile, pp.model)) and old_sharing != new_sharing:
            acc.add("device-plugin-config-switch", "disruptive", name, node.name,
                    f"the device plugin switches the node from {_sharing_text(old_sharing)} to "
                    f"{_sharing_text(new_sharing)} (config {pp.device_plugin_key}) {when}: what the node advertises "
                    "changes, and pods admitted under the old count keep running beside the new ones",
                    "drain the node first, or give the pool the node's own sharing")
        elif old_key is not None and old_key != pp.device_plugin_key and not nfd and old_key not in offered_plugin:
            acc.add("config-key-missing", "disruptive", name, node.name,
                    f"the node keeps {PLUGIN_LABEL}={old_key} from before gpuconf (its pool's node template does not "
                    "relabel it), a key gpuconf's device-plugin ConfigMap does not have: the device plugin and GFD "
                    "fail at their next start and the node stops advertising its GPUs",
                    "run the relabel command below right after the sync")
        elif old_key != pp.device_plugin_key:
            acc.add("device-plugin-config-switch", "restart", name, node.name,
                    f"the device plugin moves to config {pp.device_plugin_key} (was {old_key or 'the default'}) with "
                    f"the same sharing ({_sharing_text(new_sharing)}) {when}: the plugin restarts, GPU pods keep "
                    "running", "nothing to drain")
        # Driver.
        host = labels.get(DEPLOY_DRIVER) in ("false", N.DRIVER_PREINSTALLED)
        version = N.driver_version(labels)
        pin = None if pp.driver == "preinstalled" else default_driver if pp.driver == "cluster" else pp.driver
        if pin is not None and not host:
            managed.setdefault(name, []).append(node.name)
        if pp.driver == "preinstalled" and not host:
            acc.add("driver-reinstall", "disruptive", name, node.name,
                    f"the operator's driver ({version or '?'}) leaves the node (gpu.deploy.driver=false): its GPUs "
                    "are unusable until a host driver is installed", "install the host driver first, or keep the "
                    "pool's driver managed")
        elif pin is not None and host:
            acc.add("driver-reinstall", "pending", name, node.name,
                    f"the node runs a host driver ({version or '?'}): the operator's driver {pin} does not install "
                    "there (the driver manager finds the host driver), so the pool's pin is not what runs",
                    "make the pool's driver preinstalled, or remove the host driver from the node image")
        elif pin is not None and version is not None and not N.version_matches(version, pin):
            acc.add("driver-reinstall", "disruptive", name, node.name,
                    f"the driver moves from {version} to {pin}: the upgrade controller drains the node and reinstalls "
                    "the driver, evicting its GPU pods", f"pin the driver the nodes run ({version}) to adopt without "
                    "a reinstall, or let the upgrade run with a maxUnavailable you can afford",
                    drafted=live_driver is None or not N.version_matches(str(live_driver), pin))
        # Taints and operand tolerations.
        have = {(key, value or "", effect) for key, value, effect in node.taints}
        want = {(t.key, t.value or "", t.effect) for t in pp.pool.taints}
        for key, value, effect in sorted(want - have):
            text = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
            if nfd:
                acc.add("taint-change", "disruptive" if effect == "NoExecute" else "none", name, node.name,
                        f"nfd-master puts taint {text} on the node at the sync" + (
                            ": it evicts every pod that does not tolerate it" if effect == "NoExecute" else
                            ": pods without the toleration are no longer scheduled there; running ones stay"),
                        "give the workloads the toleration first" if effect == "NoExecute" else "nothing to drain")
        for key, value, effect in sorted(have | (want if nfd else set())):
            text = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
            if _tolerates(old_tolerations, text) and not _tolerates(new_tolerations, text):
                acc.add("operand-tolerations", "disruptive", name, node.name,
                        f"the rendered operand tolerations no longer tolerate taint {text}: the operands (driver, "
                        "device plugin, GFD) "
                        + ("are evicted from the node" if effect == "NoExecute" else "are not rescheduled there"),
                        "keep the installation's tolerations (an override of daemonsets.tolerations)")
        # Labels.
        missing = {k: v for k, v in pp.labels.items() if labels.get(k) != v and not (
            k == DEPLOY_DRIVER and labels.get(k) == N.DRIVER_PREINSTALLED)}
        if missing and nfd:
            acc.add("node-relabel", "none", name, node.name,
                    f"nfd-master puts {', '.join(sorted(missing))} on the node at the sync ({sources[name]})",
                    "nothing to do")
        elif missing:
            relabel.setdefault(name, []).append(node.name)
    section = None
    if installed_chart is not None and installed_chart != plan.chart_version and catalog.chart(installed_chart):
        section = _chart_move(plan, installed_chart, user_values or {}, rendered_files, managed, placed, acc)
    out = acc.impacts()
    for pp in plan.pools:
        names = relabel.get(pp.name)
        if not names:
            continue
        command = kubectl_label(dict(pp.labels), nodes=sorted(names))
        out.append(Impact("relabel-needed", "pending", [pp.name],
                          f"pool {pp.name}'s labels come from its {sources[pp.name]}, which labels only nodes created "
                          f"from now on: the {len(names)} node(s) there now need them by hand: {command}",
                          f"right after the sync: {command}", nodes=len(names), nodes_from="cluster",
                          node_names=sorted(names)))
    if values_rows:
        from ..findings import dotted

        paths = [dotted(p) for p, _, _ in values_rows]
        out.append(Impact("values-change", "restart", [],
                          f"{len(paths)} effective Helm value(s) differ from the installation's ({', '.join(paths[:6])}"
                          f"{', ...' if len(paths) > 6 else ''}): the operator updates its operand DaemonSets and their "
                          "pods restart node by node", "review them with `gpuconf diff --against-values`"))
    out.sort(key=lambda i: (-SEVERITIES.index(i.severity), ORDER.index(i.kind), i.pools, i.message))
    if not out:
        out.append(Impact("none", "none", [], "the first sync changes nothing that runs: values equal, every node "
                          "already as its pool renders it", "nothing to do"))
    return ImpactPlan(out, chart=section)


class _Installed:
    """The installation as the before side of a chart move (impact.chart.chart_section reads these two)."""

    def __init__(self, version: str, values: Mapping[str, Any]) -> None:
        self.cluster = {"chartVersion": version}
        self.values = dict(values)


def _chart_move(plan: P.Plan, installed: str, user: Mapping[str, Any], rendered_files: Mapping[str, str] | None,
                managed: Mapping[str, list[str]], placed: Mapping[str, int], acc: _Acc) -> dict | None:
    """A first sync onto another chart than the installation runs: the operator upgrade, a driver reinstall on
    every managed node when the driver pod changes (the driver manager's version, the image, ...: the driver
    DaemonSet is OnDelete and the upgrade controller replaces each node's driver), and the chart section (CRDs, NFD,
    flipped defaults, removed keys)."""
    from ..chartfacts.releases import upgrade_path
    from ..render.values import build_values, copied, merge
    from .chart import chart_section
    from .driver import _NOT_DRIVER_POD
    from .folder import Deployed

    old = catalog.chart(installed)
    assert old is not None
    hops = upgrade_path(installed, plan.chart_version, catalog.chart_versions())
    skip = ("" if len(hops) <= 2 else f"; NVIDIA supports no such move in one step ({catalog.chart_table()['upgradeRule']}"
            f" supported path: {' -> '.join(hops)}), so pin {hops[1]} in the draft first and move on from there")
    pools = [pp.name for pp in plan.pools if placed.get(pp.name)]
    acc.found[("operator-upgrade", "", "restart", installed, False)] = Impact(
        "operator-upgrade", "restart", pools,
        f"the first sync moves the GPU Operator from chart {installed} (installed) to {plan.chart_version}: the operator "
        "restarts and updates every operand DaemonSet (device plugin, toolkit, GFD, DCGM exporter, MIG manager, "
        f"validator), whose pods restart node by node{skip}",
        f"adopt onto the release that runs (chartVersion: {installed}) and move the chart as a change of its own "
        f"(`gpuconf diff INTENT --to-chart {plan.chart_version}`)", nodes=sum(placed.values()), nodes_from="cluster")

    def pod(defaults: Mapping[str, Any], values: Mapping[str, Any]) -> dict:
        """The driver pod's settings as leaves (driver.manager.version -> v0.9.1), the version left to the nodes."""
        base = dict(defaults.get("driver") or {})
        given = values.get("driver")
        merged = merge(copied(base), given) if isinstance(given, dict) else base
        flat: dict[str, Any] = {}

        def walk(node: Any, path: str) -> None:
            if isinstance(node, dict) and node:
                for key, value in node.items():
                    walk(value, f"{path}.{key}")
            else:
                flat[path] = node
        for key, value in merged.items():
            if key not in _NOT_DRIVER_POD and key != "version":
                walk(value, f"driver.{key}")
        return flat

    rendered = build_values(plan).overrides()
    before, after = pod(old.shared_defaults, user), pod(plan.chart.shared_defaults, rendered)
    # A key one chart lacks and the other leaves empty (hostNetwork: false, new in v26.3.1) renders the same pod.
    changed = sorted(k for k in set(before) | set(after)
                     if before.get(k) != after.get(k) and (before.get(k) or after.get(k)))
    if changed:
        shown = ", ".join(k + (f" {before[k]} -> {after[k]}" if isinstance(before.get(k), str) and
                               isinstance(after.get(k), str) else "") for k in changed[:4])
        for pool, names in managed.items():
            for node in names:
                acc.add("driver-reinstall", "disruptive", pool, node,
                        f"the chart move changes the driver pod ({shown}{', ...' if len(changed) > 4 else ''}): the "
                        "upgrade controller drains the node and reinstalls the driver, evicting its GPU pods",
                        f"pin what the chart changes to the installation's ({', '.join(changed)})"
                        " with overrides to move the chart without a reinstall, or adopt onto the release that runs")
    if rendered_files is None:
        return None
    return chart_section(_Installed(installed, user), Deployed(dict(rendered_files)))


def _unplaced(acc: _Acc, node: str, labels: Mapping[str, str], plugin: set, mig: set, pools: int) -> None:
    """A GPU node in no pool (or several): it keeps its labels, which gpuconf's ConfigMaps may not offer."""
    for label, offered, ConfigMap in ((PLUGIN_LABEL, plugin, "device-plugin"), (MIG_LABEL, mig, "mig-parted")):
        value = labels.get(label)
        if value is not None and value not in offered:
            acc.add("config-key-missing", "disruptive" if label == PLUGIN_LABEL else "pending", None, node,
                    f"a GPU node in {'no pool' if not pools else 'several pools'} keeps {label}={value}, a key "
                    f"gpuconf's {ConfigMap} ConfigMap does not have: "
                    + ("the device plugin fails at its next start" if label == PLUGIN_LABEL else
                       "mig-manager fails to apply it"), "give the node a pool (or remove the label)")


def equivalent(plan: ImpactPlan) -> bool:
    """Values equal and no node impact above none."""
    return plan.worst == "none" and not any(i.kind == "values-change" for i in plan.impacts)


__all__ = ["ORDER", "equivalent", "first_sync", "of_draft", "read_installation", "report", "summary_lines"]


# --- the installation as the user gives it ---------------------------------------------------------------------


def read_installation(tree, values: Iterable[Any], configmaps: Iterable[Any], installed: str | None = None) -> dict:
    """The installation's pieces for first_sync from its values inputs (adopt.sources.ValuesInput: files, --set,
    a release's values) and ConfigMaps (adopt.sources.ConfigMapInput): effective values, the named MIG configs, the
    device-plugin ConfigMap's keys and the values leaves that differ from the draft's render (adopt.sources raises
    InputError for an input that is not what its option says). Each side's values are read on its own chart's
    defaults: the installation's on installed (the chart it runs, when known), the render's on the draft's."""
    from ..adopt import mapping as M
    from ..adopt import sources as S

    values = list(values)
    defaults = tree.plan.chart.shared_defaults
    old = catalog.chart(installed) if installed is not None else None
    old_defaults = old.shared_defaults if old is not None else defaults
    user, _ = S.merge_inputs(values) if values else ({}, {})
    user = S.unwrapped(user, old_defaults)
    S.check_sections(user, old_defaults, values)
    live = S.coalesce(old_defaults, user)
    rows = M.differing(live, S.coalesce(defaults, tree.values.overrides())) if values else None
    mig_name = ((live.get("migManager") or {}).get("config") or {}).get("name")
    plugin_name = ((live.get("devicePlugin") or {}).get("config") or {}).get("name")
    mig: dict[str, Any] = {}
    keys: set[str] = set()
    for cm in configmaps:
        if cm.name == mig_name or (not mig_name and "config.yaml" in cm.data and "mig-configs" in cm.data["config.yaml"]):
            for name, (layout, _) in M.mig_configs(cm.data.get("config.yaml") or "")[0].items():
                mig[name] = False if layout is None else (layout or None)
        elif cm.name == plugin_name or not plugin_name:
            keys.update(cm.data)
    return {"live_values": live, "mig_configs": mig, "plugin_keys": keys, "values_rows": rows,
            "installed_chart": installed if old is not None else None, "user_values": user,
            "rendered_files": getattr(tree, "files", None)}


def report(plan: ImpactPlan, where: str, fmt: str, fail_on: str | None, intent: str) -> tuple[str, bool]:
    """What `gpuconf diff --against-installation` prints (the plan as text, JSON or Markdown) and whether it fails:
    it fails when the draft is not equivalent (values equal, no node impact above none); with fail_on, exactly when
    an impact that severe is present."""
    from ..impact import impacts_markdown, impacts_text

    same = equivalent(plan)
    verdict = (f"the first sync of {intent} is equivalent: values equal, no node impact above none" if same else
               f"the first sync of {intent} is not equivalent: worst impact {plan.worst}")
    if fmt == "json":
        import json

        text = json.dumps({"against": where, "rendered": intent, "equivalent": same, "worst": plan.worst,
                           "impacts": plan.as_list(), "chartMove": plan.chart}, indent=2, sort_keys=True,
                          ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        text = impacts_markdown(plan, where) + verdict + "\n"
    else:
        text = impacts_text(plan, where) + verdict + "\n"
    return text, (plan.fails(fail_on) if fail_on else not same)


#: What an import must never draft silently: a first sync that changes a node's MIG layout or sharing, or
#: reinstalls its driver with a version the draft chose (Impact.drafted), not the installation's values.
SURPRISES = ("mig-repartition", "device-plugin-config-switch")


def surprises(plan: ImpactPlan) -> list[str]:
    """Error lines, one per node, for the impacts of an import's draft that would change the MIG layout or the
    sharing of a running node, or reinstall its driver with a version the draft chose (the one most nodes run);
    a driver the installation's values pin is the installation's decision, which the plan shows but no error."""
    return [f"gpuconf: error: the draft's first sync changes node {node}: {i.kind} ({i.message})"
            for i in plan.impacts if i.severity == "disruptive" and (i.kind in SURPRISES or i.drafted)
            for node in i.node_names]


def summary_lines(plan: ImpactPlan) -> list[str]:
    """`gpuconf import`'s lines about the first sync of its draft (stderr)."""
    lines = [f"gpuconf: first sync: {'equivalent' if equivalent(plan) else 'not equivalent'} (worst impact "
             f"{plan.worst}; `gpuconf diff DRAFT --against-installation` shows the plan)"]
    for i in plan.impacts:
        if i.severity != "none":
            names = ", ".join(i.node_names[:5]) + (f" (+{len(i.node_names) - 5} more)" if len(i.node_names) > 5 else "")
            lines.append(f"  {i.severity} {i.kind}" + (f" [{', '.join(i.pools)}]" if i.pools else "")
                         + (f" on {names}" if names else "") + f": {i.message}")
    return lines


def of_draft(text: str, nodes: list, values: Iterable[Any] = (), configmaps: Iterable[Any] = ()) -> ImpactPlan | None:
    """The first-sync plan of an import's draft (its YAML text) over the nodes it was drawn from and the
    installation's values and ConfigMaps; None when the draft does not validate."""
    from ..intent.loader import load_text
    from ..intent.validate import validate_document
    from ..render.values import build_values

    result = validate_document(load_text(text, "draft.yaml"))
    if not result.ok:
        return None
    from types import SimpleNamespace

    plan = P.build(result.intent, "draft.yaml")
    tree = SimpleNamespace(plan=plan, values=build_values(plan))  # what read_installation reads of a render
    return first_sync(plan, nodes, **read_installation(tree, values, configmaps))

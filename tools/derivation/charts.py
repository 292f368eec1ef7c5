"""The facts of each GPU Operator chart version (profiles/charts/<version>.json): its base defaults with the NFD
subchart's coalesced in, the template-only, dead, renamed and verbatim keys, Helm's `default` replacements and its
CRDs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .common import REFERENCE_SCRIPT, DeriveError, Reference, dump, header, require
from .crds import CP_CRD, chart_crds, clusterpolicy_spec


# gpu-operator-facts.md §4, "Chart-template quirks": keys the templates read although values.yaml lacks them.
# "*.args for most operands" is expanded below from the ClusterPolicy CRD (see _operand_args_keys).
TEMPLATE_ONLY_KEYS = (
    "nameOverride",
    "fullnameOverride",
    "operator.labels",
    "operator.version",
    "operator.defaultGPUMode",
    "operator.metrics",
    "validator.version",
    "validator.cuda.env",
    "validator.driver.env",
    "validator.toolkit.env",
    "validator.vfioPCI.env",
    "validator.vgpuManager.env",
    "validator.vgpuDevices.env",
    "driver.args",
    "driver.livenessProbe",
    "driver.readinessProbe",
    "driver.licensingConfig.configMapName",
    "dcgmExporter.config",
    "dcgmExporter.args",
    "dcgmExporter.hpcJobMapping",
    "dcgmExporter.podLabelAllowlistRegex",
    "dcgmExporter.imagePullSecrets",
    "dcgm.imagePullSecrets",
    "nodeStatusExporter.env",
    "nodeStatusExporter.version",
    "kataManager.repository",
    "kataManager.image",
    "kataManager.version",
    # §4 table: hostPaths.kubeletRootDir is commented out in values.yaml and rendered "only if set; new in 26.7".
    "hostPaths.kubeletRootDir",
)
# gpu-operator-facts.md §9: keys that v26.7.0 added, so v26.3.3's templates do not read them.
NEW_IN_26_7 = ("hostPaths.kubeletRootDir", "operator.metrics")

# gpu-operator-facts.md §4: in values.yaml but read by no template. driver.nvidiaDriverCRD.nodeSelector is "dead in
# 26.7" only: §9 says the default NVIDIADriver lost its nodeSelector in 26.7, so v26.3.3 still renders it.
DEAD_KEYS = {
    "v26.7.0": ("devicePlugin.mps.root", "driver.nvidiaDriverCRD.nodeSelector"),
    "v26.3.3": ("devicePlugin.mps.root",),
}
# gpu-operator-facts.md §4: values key -> the ClusterPolicy spec field it is rendered into (checked in the CRD).
RENAMED_KEYS = {"driver.upgradePolicy.gpuPodDeletion": "driver.upgradePolicy.podDeletion"}
# gpu-operator-facts.md §4: blocks copied with toYaml, so their keys must be CR field names.
VERBATIM_BLOCKS = (
    "dcgmExporter.serviceMonitor",
    "driver.certConfig",
    "driver.kernelModuleConfig",
    "driver.licensingConfig",
    "driver.repoConfig",
    "driver.virtualTopology",
    "vgpuDeviceManager.config",
)
# Values that the templates pass through Sprig's `default`, which replaces every empty value (nil, false, 0, ""):
# path -> (the value it becomes, the templates, when it matters). Read off templates/clusterpolicy.yaml and
# templates/nvidiadriver.yaml of both charts (the reference has their values and CRDs, not their templates; issue 10
# of the project lists the same facts). The `default false` / `default 0` uses are left out: they replace an empty
# value by an equal one.
HELM_DEFAULTS = {
    "driver.upgradePolicy.maxUnavailable": {
        "becomes": "25%", "templates": ["clusterpolicy.yaml", "nvidiadriver.yaml"], "when": "always"},
    "driver.licensingConfig.nlsEnabled": {
        "becomes": True, "templates": ["nvidiadriver.yaml"], "when": "defaultNVIDIADriver"},
    "driver.nvidiaDriverCRD.driverType": {
        "becomes": "gpu", "templates": ["nvidiadriver.yaml"], "when": "defaultNVIDIADriver"},
}
# Mapping keys whose children are user-chosen names (Kubernetes labels, annotations, node selectors, resource
# quantities, ConfigMap data, feature gates) or whole Kubernetes objects the chart passes through (affinity,
# security contexts), so a key below them is legitimate even though values.yaml does not list it.
FREE_FORM_MAP_KEYS = (
    "additionalLabels", "affinity", "annotations", "daemonsetAnnotations", "data", "deploymentAnnotations",
    "featureGates", "labels", "limits", "nodeSelector", "podSecurityContext", "requests", "resources",
    "securityContext",
)
# The NFD subchart's nfd-master/worker/topology-updater `config` blocks are NFD's own configuration files.
NFD_CONFIG_BLOCKS = (
    "node-feature-discovery.master.config",
    "node-feature-discovery.topologyUpdater.config",
    "node-feature-discovery.worker.config",
)


@dataclass(frozen=True)
class ChartInput:
    """Where one chart version's facts come from."""

    version: str
    values: str
    chart_yaml: str | None
    nfd_values: str | None
    nfd_chart_yaml: str | None
    nfd_chart_version: str | None  # only when no Chart.yaml is in the reference


CHARTS = (
    ChartInput("v26.3.3", "gpu-operator/v26.3.3/values.yaml", None, None, None,
               # gpu-operator-facts.md §2/§9: "In v26.3.3 it was 0.18.3"; its Chart.yaml is not in the reference.
               "0.18.3"),
    ChartInput("v26.7.0", "gpu-operator/v26.7.0/values.yaml", "gpu-operator/v26.7.0/Chart.yaml",
               "gpu-operator/v26.7.0/charts/node-feature-discovery/values.yaml",
               "gpu-operator/v26.7.0/charts/node-feature-discovery/Chart.yaml", None),
)


def _check_plain(value: Any, where: str) -> None:
    """Fail on YAML values that have no JSON form (dates, binary, tagged scalars)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise DeriveError(f"{where}: non-string key {key!r}")
            _check_plain(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
    elif not (value is None or isinstance(value, (str, bool, int, float))):
        raise DeriveError(f"{where}: {type(value).__name__} value has no JSON form")


def coalesce(parent: Any, subchart: Any) -> Any:
    """Helm's subchart coalescing: parent values win key by key, maps merge recursively, lists are replaced."""
    if isinstance(parent, dict) and isinstance(subchart, dict):
        merged = dict(subchart)
        for key, value in parent.items():
            merged[key] = coalesce(value, subchart[key]) if key in subchart else value
        return merged
    return parent


def _lookup(defaults: dict[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) for a dotted path whose keys contain no dots."""
    node: Any = defaults
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _operand_args_keys(values: dict[str, Any], crd_spec: dict[str, Any]) -> list[str]:
    """`<operand>.args` keys for operands whose ClusterPolicy spec takes args but whose values block lacks them."""
    keys = []
    for operand, schema in crd_spec.items():
        block = values.get(operand)
        if "args" in schema.get("properties", {}) and isinstance(block, dict) and "args" not in block:
            keys.append(f"{operand}.args")
    return keys


def _crd_has(crd_spec: dict[str, Any], path: str) -> bool:
    """Whether a dotted ClusterPolicy spec path exists in the CRD schema."""
    node: dict[str, Any] = {"properties": crd_spec}
    for part in path.split("."):
        props = node.get("properties", {})
        if part not in props:
            return False
        node = props[part]
    return True


def build_chart(chart: ChartInput, load: Any, crd_spec: dict[str, Any]) -> dict[str, Any]:
    """The JSON of profiles/charts/<version>.json."""
    values = load(chart.values)
    if not isinstance(values, dict):
        raise DeriveError(f"{chart.values}: not a mapping")
    _check_plain(values, chart.values)
    if chart.chart_yaml is not None:
        deps = require(load(chart.chart_yaml), "dependencies", chart.chart_yaml)
        nfd = [d for d in deps if d.get("name") == "node-feature-discovery"]
        if len(nfd) != 1:
            raise DeriveError(f"{chart.chart_yaml}: expected one node-feature-discovery dependency")
        nfd_version = str(nfd[0]["version"])
    elif chart.nfd_chart_version is not None:
        nfd_version = chart.nfd_chart_version
    else:
        raise DeriveError(f"{chart.version}: no NFD chart version")
    defaults = values
    free_form_paths = list(NFD_CONFIG_BLOCKS)
    nfd_app_version = None  # the NFD image's default tag; not in the reference for v26.3.3's subchart
    if chart.nfd_values is not None and chart.nfd_chart_yaml is not None:
        sub_version = str(require(load(chart.nfd_chart_yaml), "version", chart.nfd_chart_yaml))
        nfd_app_version = str(require(load(chart.nfd_chart_yaml), "appVersion", chart.nfd_chart_yaml))
        if sub_version != nfd_version:
            raise DeriveError(f"{chart.nfd_chart_yaml}: version {sub_version} but the parent pins {nfd_version}")
        sub_values = load(chart.nfd_values)
        _check_plain(sub_values, chart.nfd_values)
        # Helm coalesces a subchart's own values.yaml under the parent's block named after it: the parent's
        # `node-feature-discovery:` keys win, and the subchart fills in every key the parent does not set.
        defaults = dict(values)
        defaults["node-feature-discovery"] = coalesce(values.get("node-feature-discovery", {}), sub_values)
        nfd_source = (f"the parent values.yaml block coalesced over charts/node-feature-discovery/values.yaml "
                      f"{nfd_version} the way Helm does it: parent keys win, maps merge, lists are replaced")
    else:
        # Without the subchart's own defaults, gpuconf cannot tell an NFD typo from an NFD key it does not know.
        free_form_paths = ["node-feature-discovery"]
        nfd_source = (f"the parent values.yaml block only: the NFD {nfd_version} subchart's values.yaml is not in "
                      f"the reference, so every node-feature-discovery path is accepted")
    template_only = [k for k in TEMPLATE_ONLY_KEYS if chart.version == "v26.7.0" or k not in NEW_IN_26_7]
    template_only += _operand_args_keys(values, crd_spec)
    for key in template_only:
        if _lookup(defaults, key)[0]:
            raise DeriveError(f"{chart.version}: template-only key {key} is in values.yaml")
    for key in [*DEAD_KEYS[chart.version], *RENAMED_KEYS, *VERBATIM_BLOCKS, *HELM_DEFAULTS]:
        if not _lookup(defaults, key)[0]:
            raise DeriveError(f"{chart.version}: {key} is not in values.yaml")
    for field in RENAMED_KEYS.values():
        if not _crd_has(crd_spec, field):
            raise DeriveError(f"{CP_CRD}: no ClusterPolicy field spec.{field}")
    return {
        "deadKeys": sorted(DEAD_KEYS[chart.version]),
        "defaults": defaults,
        "freeFormMapKeys": sorted(FREE_FORM_MAP_KEYS),
        "freeFormMapPaths": sorted(free_form_paths),
        "helmDefaults": HELM_DEFAULTS,
        "nfdAppVersion": nfd_app_version,
        "nfdChartVersion": nfd_version,
        "nfdDefaultsSource": nfd_source,
        "renamedKeys": dict(RENAMED_KEYS),
        "templateOnlyKeys": sorted(set(template_only)),
        "verbatimBlocks": sorted(VERBATIM_BLOCKS),
        "version": chart.version,
    }


def derive(ref: Reference) -> dict[str, bytes]:
    """profiles/charts/<version>.json of every chart version."""
    crd_spec = clusterpolicy_spec(ref.yaml(CP_CRD))
    outputs: dict[str, bytes] = {}
    for chart in CHARTS:
        facts = build_chart(chart, ref.yaml, crd_spec)
        facts["crds"], facts["crdsSource"], crd_inputs = chart_crds(chart.version, ref.yaml)
        used = [chart.values, chart.chart_yaml, chart.nfd_values, chart.nfd_chart_yaml, CP_CRD, *crd_inputs]
        facts["generated"] = header(REFERENCE_SCRIPT, ref.take(*[u for u in used if u]),
                                    f"Base defaults and known quirks of GPU Operator chart {chart.version}.")
        outputs[f"profiles/charts/{chart.version}.json"] = dump(facts)
    return outputs

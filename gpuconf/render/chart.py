"""What the GPU Operator chart's templates make of values: the parts gpuconf must reproduce or check.

The chart is not run here (no Helm at render or test time). These functions model, line by line, the templates of
the supported charts where a value does not simply pass through (every release from v24.9.0 passes the same values
through Sprig's `default`: each release's facts list its own, helmDefaults, read off its templates):

* `templates/clusterpolicy.yaml` and `templates/nvidiadriver.yaml` render `driver.upgradePolicy` field by field with
  Sprig's `default`, which replaces every *empty* value (nil, false, 0, "", an empty list or map): so
  `maxUnavailable: 0` becomes "25%" (false and 0 defaults are harmless); `podSelector` and `timeoutSeconds` are
  printed unquoted, so the YAML reader decides what they become.
* `templates/nvidiadriver.yaml` renders the chart's `NVIDIADriver/default` (when `driver.nvidiaDriverCRD.enabled`
  and `.deployDefaultCR`): gpuconf's per-pool NVIDIADrivers copy its settings, so that a pool with its own driver
  version gets the same manager, probes, licensing, upgrade policy and so on as the default driver.
* In NVIDIADriver mode the operator reconciles upgrades per NVIDIADriver with that object's own policy and ignores
  the ClusterPolicy's (controllers/upgrade_controller.go); an NVIDIADriver without `upgradePolicy` gets the
  operator's built-in defaults (api/nvidia/v1alpha1 GetUpgradePolicyWithDefaults): `effective_nvd_policy`.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

#: The operator's built-in policy for an NVIDIADriver without spec.upgradePolicy (getDefaultUpgradePolicySpec and
#: the CRD defaults of its parts).
OPERATOR_DEFAULT_POLICY = {
    "autoUpgrade": True,
    "maxParallelUpgrades": 1,
    "maxUnavailable": "25%",
    "podDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
    "waitForCompletion": {"timeoutSeconds": 0},
    "drain": {"enable": False, "force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
}


class TemplateError(ValueError):
    """A value the chart prints unquoted reads back as something else (a map, a tag, a number)."""


def empty(value: Any) -> bool:
    """Sprig's `empty`, which `default` uses: nil, false, 0, 0.0, "" and empty lists and maps are empty."""
    if value is None or value is False:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, (str, list, tuple, dict)):
        return len(value) == 0
    return False


def default(value: Any, fallback: Any) -> Any:
    """`value | default fallback`."""
    return fallback if empty(value) else value


def get(values: Any, dotted: str) -> Any:
    """`.Values.<dotted>`: None where any part is missing (Helm prints nothing for it)."""
    node = values
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def printed(value: Any) -> str:
    """How Go's text/template prints a value in `{{ ... }}` (Helm prints nothing for a missing one)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@functools.lru_cache(maxsize=4096)
def _read_back(text: str) -> tuple[Any, str | None]:
    """(the value, None) that YAML 1.1 reads text as, or (None, the parser's first line) when it cannot: a fleet
    prints the same few dozen scalars for every cluster."""
    import yaml

    try:
        return yaml.safe_load(text), None
    except yaml.YAMLError as exc:
        return None, str(exc).splitlines()[0]


def unquoted(value: Any, where: str) -> Any:
    """What `key: {{ value }}` reads back as (YAML 1.1, as Helm's sigs.k8s.io/yaml reads rendered manifests)."""
    text = printed(value)
    if not text:
        return None
    parsed, error = _read_back(text)
    if error is not None:
        raise TemplateError(f"{where}: the chart prints {text!r} unquoted and YAML cannot read it back "
                            f"({error})") from None
    if isinstance(parsed, (dict, list)):
        raise TemplateError(f"{where}: the chart prints {text!r} unquoted and YAML reads it back as a "
                            f"{'map' if isinstance(parsed, dict) else 'list'}")
    return parsed


def upgrade_policy(values: dict) -> dict | None:
    """The `upgradePolicy` block the chart renders into the ClusterPolicy's `driver` and into NVIDIADriver/default,
    or None when `driver.upgradePolicy` is empty (the block is left out)."""
    policy = get(values, "driver.upgradePolicy")
    if empty(policy):
        return None
    p = "driver.upgradePolicy."
    wait = {"timeoutSeconds": unquoted(get(values, p + "waitForCompletion.timeoutSeconds"), p + "waitForCompletion")}
    if not empty(get(values, p + "waitForCompletion.podSelector")):
        wait["podSelector"] = unquoted(get(values, p + "waitForCompletion.podSelector"), p + "waitForCompletion")
    drain = {
        "enable": default(get(values, p + "drain.enable"), False),
        "force": default(get(values, p + "drain.force"), False),
    }
    if not empty(get(values, p + "drain.podSelector")):
        drain["podSelector"] = unquoted(get(values, p + "drain.podSelector"), p + "drain.podSelector")
    drain["timeoutSeconds"] = unquoted(get(values, p + "drain.timeoutSeconds"), p + "drain.timeoutSeconds")
    drain["deleteEmptyDir"] = default(get(values, p + "drain.deleteEmptyDir"), False)
    return {
        "autoUpgrade": default(get(values, p + "autoUpgrade"), False),
        "maxParallelUpgrades": default(get(values, p + "maxParallelUpgrades"), 0),
        "maxUnavailable": default(get(values, p + "maxUnavailable"), "25%"),
        "waitForCompletion": wait,
        # The values key is gpuPodDeletion; the objects call it podDeletion.
        "podDeletion": {
            "force": default(get(values, p + "gpuPodDeletion.force"), False),
            "timeoutSeconds": unquoted(get(values, p + "gpuPodDeletion.timeoutSeconds"), p + "gpuPodDeletion"),
            "deleteEmptyDir": default(get(values, p + "gpuPodDeletion.deleteEmptyDir"), False),
        },
        "drain": drain,
    }


def default_nvidiadriver(values: dict) -> dict | None:
    """The spec of the chart's NVIDIADriver/default, or None when the chart does not render it."""
    if not (get(values, "driver.enabled") and get(values, "driver.nvidiaDriverCRD.enabled")
            and get(values, "driver.nvidiaDriverCRD.deployDefaultCR")):
        return None
    return nvidiadriver_spec(values)


def nvidiadriver_spec(values: dict, read: Any = None) -> dict:
    """The spec templates/nvidiadriver.yaml renders from the driver values, whether or not the chart renders it.

    `read` turns a value the template prints unquoted into what the object holds: by default as the chart's YAML
    reader does (`unquoted`); gpuconf's own NVIDIADrivers pass the values through unchanged, since gpuconf's emitter
    quotes what needs it.
    """
    unquoted = read or globals()["unquoted"]
    d = "driver."
    spec: dict[str, Any] = {
        "default": True,
        "repository": unquoted(get(values, d + "repository"), d + "repository"),
        "image": unquoted(get(values, d + "image"), d + "image"),
        "version": printed(get(values, d + "version")),
        "kernelModuleType": unquoted(get(values, d + "kernelModuleType"), d + "kernelModuleType"),
        "usePrecompiled": unquoted(get(values, d + "usePrecompiled"), d + "usePrecompiled"),
        "driverType": unquoted(default(get(values, d + "nvidiaDriverCRD.driverType"), "gpu"), d + "driverType"),
    }
    for key, path in (("annotations", "daemonsets.annotations"), ("labels", "daemonsets.labels"),
                      ("imagePullSecrets", d + "imagePullSecrets"), ("manager", d + "manager"),
                      ("startupProbe", d + "startupProbe"), ("livenessProbe", d + "livenessProbe"),
                      ("readinessProbe", d + "readinessProbe")):
        if not empty(get(values, path)):
            spec[key] = copy.deepcopy(get(values, path))
    policy = upgrade_policy(values)
    if policy is not None:
        spec["upgradePolicy"] = policy
    spec["rdma"] = {"enabled": unquoted(get(values, d + "rdma.enabled"), d + "rdma"),
                    "useHostMofed": unquoted(get(values, d + "rdma.useHostMofed"), d + "rdma")}
    if not empty(get(values, "daemonsets.tolerations")):
        spec["tolerations"] = copy.deepcopy(get(values, "daemonsets.tolerations"))
    for key, path, field in (("repoConfig", d + "repoConfig.configMapName", "name"),
                             ("certConfig", d + "certConfig.name", "name"),
                             ("virtualTopologyConfig", d + "virtualTopology.config", "name"),
                             ("kernelModuleConfig", d + "kernelModuleConfig.name", "name")):
        if not empty(get(values, path)):
            spec[key] = {field: unquoted(get(values, path), path)}
    licensing = d + "licensingConfig."
    for field in ("secretName", "configMapName"):
        if not empty(get(values, licensing + field)):
            spec["licensingConfig"] = {
                "secretName" if field == "secretName" else "name": unquoted(get(values, licensing + field), licensing),
                "nlsEnabled": default(get(values, licensing + "nlsEnabled"), True),
            }
            break
    if not empty(get(values, d + "secretEnv")):
        spec["secretEnv"] = unquoted(get(values, d + "secretEnv"), d + "secretEnv")
    for key in ("resources", "env", "args"):
        if not empty(get(values, d + key)):
            spec[key] = copy.deepcopy(get(values, d + key))
    if not empty(get(values, d + "hostNetwork")):
        spec["hostNetwork"] = get(values, d + "hostNetwork")
    for operand in ("gds", "gdrcopy"):
        block = _side_driver(values, operand, unquoted)
        if block is not None:
            spec[operand] = block
    return spec


def _side_driver(values: dict, operand: str, unquoted: Any) -> dict | None:
    """The `gds` / `gdrcopy` block of NVIDIADriver/default."""
    if operand == "gds" and empty(get(values, "gds.enabled")):
        return None
    if operand == "gdrcopy" and empty(get(values, "gdrcopy")):
        return None
    enabled = get(values, "gds.enabled") if operand == "gds" else default(get(values, "gdrcopy.enabled"), False)
    block: dict[str, Any] = {"enabled": enabled}
    for key in ("repository", "image"):
        if not empty(get(values, f"{operand}.{key}")):
            block[key] = unquoted(get(values, f"{operand}.{key}"), f"{operand}.{key}")
    block["version"] = printed(get(values, f"{operand}.version"))
    if not empty(get(values, f"{operand}.imagePullPolicy")):
        block["imagePullPolicy"] = unquoted(get(values, f"{operand}.imagePullPolicy"), operand)
    for key in ("imagePullSecrets", "env", "args"):
        if not empty(get(values, f"{operand}.{key}")):
            block[key] = copy.deepcopy(get(values, f"{operand}.{key}"))
    return block


def effective_nvd_policy(spec: dict) -> dict:
    """The policy the operator applies for an NVIDIADriver (GetUpgradePolicyWithDefaults): its own parts where it
    has them, the built-in defaults for the parts it lacks, the built-in policy when it has none."""
    own = spec.get("upgradePolicy")
    if own is None:
        return copy.deepcopy(OPERATOR_DEFAULT_POLICY)
    out = {"autoUpgrade": bool(own.get("autoUpgrade", OPERATOR_DEFAULT_POLICY["autoUpgrade"])),
           "maxParallelUpgrades": own.get("maxParallelUpgrades", OPERATOR_DEFAULT_POLICY["maxParallelUpgrades"]),
           "maxUnavailable": own.get("maxUnavailable", OPERATOR_DEFAULT_POLICY["maxUnavailable"])}
    for part in ("podDeletion", "waitForCompletion", "drain"):
        base = OPERATOR_DEFAULT_POLICY[part]
        out[part] = {**base, **own[part]} if part in own else copy.deepcopy(base)
    return out


# --- the GPUCluster (DRA) stack: templates/validations.yaml and templates/gpucluster.yaml of v26.7.0 ---------------

#: `.Capabilities.APIVersions` entries of which one must be served for the chart to render a GPUCluster
#: (templates/validations.yaml); offline, `helm template --api-versions resource.k8s.io/v1/DeviceClass` supplies one.
DRA_CAPABILITIES = ("resource.k8s.io/v1/DeviceClass", "resource.k8s.io/v1beta2/DeviceClass",
                    "resource.k8s.io/v1beta1/DeviceClass")
#: The name templates/_helpers.tpl gives the CR (gpu-operator.gpucluster-name); the CRD's CEL rule allows no other.
GPUCLUSTER_NAME = "gpu-cluster"


def render_failures(values: dict, api_versions: tuple[str, ...] = ()) -> list[str]:
    """The `fail` calls of templates/validations.yaml that these values (and capabilities) trigger: the chart
    renders nothing when any does. Go's `and`/`not` read emptiness; `eq ... false` compares exactly."""
    failures = []
    cluster_policy, gpu_cluster = get(values, "clusterPolicy.deployCR"), get(values, "gpuCluster.deployCR")
    if not empty(cluster_policy) and not empty(gpu_cluster):
        failures.append("clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true")
    if not empty(gpu_cluster) and not empty(get(values, "driver.enabled")) \
            and empty(get(values, "driver.nvidiaDriverCRD.enabled")):
        failures.append("the NVIDIADriver CRD must be enabled when deploying a GPUCluster CR")
    if get(values, "cdi.enabled") is False and get(values, "cdi.nriPluginEnabled") is True:
        failures.append("the NRI Plugin cannot be enabled when CDI is disabled")
    if get(values, "cdi.nriPluginEnabled") is True and get(values, "toolkit.enabled") is False:
        failures.append("the NRI Plugin cannot be enabled when the Container Toolkit is disabled")
    if not empty(get(values, "devicePlugin.config.create")):
        if empty(get(values, "devicePlugin.config.data")):
            failures.append("devicePlugin.config.data cannot be empty when devicePlugin.config.create is set to true")
        if empty(get(values, "devicePlugin.config.name")):
            failures.append("devicePlugin.config.name cannot be empty when devicePlugin.config.create is set to true")
    if not empty(gpu_cluster) and not any(c in api_versions for c in DRA_CAPABILITIES):
        failures.append("gpuCluster.deployCR=true requires a cluster that serves a resource.k8s.io DeviceClass API")
    return failures


def gpucluster(values: dict) -> dict | None:
    """The GPUCluster templates/gpucluster.yaml renders, or None when gpuCluster.deployCR is off."""
    if empty(get(values, "gpuCluster.deployCR")):
        return None
    d = "draDriver."
    dra: dict[str, Any] = {}
    for key in ("repository", "image"):
        if not empty(get(values, d + key)):
            dra[key] = unquoted(get(values, d + key), d + key)
    if not empty(get(values, d + "version")):
        dra["version"] = printed(get(values, d + "version"))  # `| quote`
    if not empty(get(values, d + "imagePullPolicy")):
        dra["imagePullPolicy"] = unquoted(get(values, d + "imagePullPolicy"), d + "imagePullPolicy")
    for key in ("imagePullSecrets", "featureGates"):
        if not empty(get(values, d + key)):
            dra[key] = copy.deepcopy(get(values, d + key))  # toYaml
    if not empty(get(values, d + "gpus.kubeletPlugin")):
        dra["gpus"] = {"kubeletPlugin": copy.deepcopy(get(values, d + "gpus.kubeletPlugin"))}
    domains: dict[str, Any] = {"enabled": unquoted(get(values, d + "computeDomains.enabled"), d + "computeDomains")}
    for key in ("controller", "kubeletPlugin"):
        if not empty(get(values, f"{d}computeDomains.{key}")):
            domains[key] = copy.deepcopy(get(values, f"{d}computeDomains.{key}"))
    dra["computeDomains"] = domains
    spec: dict[str, Any] = {"draDriver": dra}
    for operand, scalars, blocks in (
            ("dcgm", ("repository", "image", "imagePullPolicy"), ("imagePullSecrets", "args", "env", "resources")),
            ("dcgmExporter", ("repository", "image", "imagePullPolicy"),
             ("imagePullSecrets", "annotations", "args", "env", "resources", "hpcJobMapping",
              "podLabelAllowlistRegex", "service", "serviceMonitor"))):
        block: dict[str, Any] = {"enabled": unquoted(get(values, f"{operand}.enabled"), f"{operand}.enabled")}
        for key in scalars:
            if not empty(get(values, f"{operand}.{key}")):
                block[key] = unquoted(get(values, f"{operand}.{key}"), f"{operand}.{key}")
        if not empty(get(values, f"{operand}.version")):
            block["version"] = printed(get(values, f"{operand}.version"))
        for key in blocks:
            if not empty(get(values, f"{operand}.{key}")):
                block[key] = copy.deepcopy(get(values, f"{operand}.{key}"))
        flags = ("hostNetwork",) if operand == "dcgm" else ("hostPID", "hostNetwork", "enablePodLabels", "enablePodUID")
        for key in flags:
            if not empty(get(values, f"{operand}.{key}")):
                block[key] = get(values, f"{operand}.{key}")
        if operand == "dcgmExporter" and not empty(get(values, "dcgmExporter.config")) \
                and not empty(get(values, "dcgmExporter.config.name")):
            block["config"] = {"name": unquoted(get(values, "dcgmExporter.config.name"), "dcgmExporter.config")}
        spec[operand] = block
    paths: dict[str, Any] = {"driverInstallDir": unquoted(get(values, "hostPaths.driverInstallDir"), "hostPaths")}
    if not empty(get(values, "hostPaths.kubeletRootDir")):
        paths["kubeletRootDir"] = unquoted(get(values, "hostPaths.kubeletRootDir"), "hostPaths")
    spec["hostPaths"] = paths
    spec["daemonsets"] = copy.deepcopy(get(values, "daemonsets"))
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": GPUCLUSTER_NAME},
            "spec": spec}

"""The ClusterPolicy the GPU Operator chart would render from a values tree, for installs without Helm (OpenShift's OLM).

This follows templates/clusterpolicy.yaml of chart v26.7.0 field by field: which values reach the ClusterPolicy, under
which `if`, with which `| default`, and how each is printed. It reads values the way gpuconf.render.chart models the
chart (Sprig's `empty` and `default`, a value printed bare read back as YAML, so "25%" stays a string and `true` a
boolean; a `| quote`d one is always a string; a `toYaml` block is copied as it is), and the `driver.upgradePolicy`
block is chart.upgrade_policy itself.

One deliberate difference: the Helm identity labels the chart puts on the operands (helm.sh/chart and
app.kubernetes.io/managed-by: gpu-operator) are left out, as no Helm release exists; `daemonsets.labels` of the values
are kept.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from . import chart as C


def truthy(value: Any) -> bool:
    """The template's `if`: Sprig's empty values (nil, false, 0, "", empty lists and maps) are false."""
    return not C.empty(value)


def plain(value: Any, where: str = "value") -> Any:
    """`{{ .Values.x }}`: printed, then read back as YAML (chart.unquoted)."""
    return C.unquoted(value, where)


def quote(value: Any, where: str = "value") -> str | None:
    """`{{ .Values.x | quote }}`: a string; nil prints nothing (sprig's quote skips it), so the field is null."""
    return None if value is None else C.printed(value)


def to_yaml(value: Any, where: str = "value") -> Any:
    """`{{ toYaml .Values.x }}`: the value as it is."""
    return copy.deepcopy(value)


# --- the template -------------------------------------------------------------------------------------------------

Rule = tuple[str, Callable[[Any, str], Any]]
#: Fields most operands render `if` set: (key, how it is printed).
IMAGE = [("repository", plain), ("image", plain), ("version", quote), ("imagePullPolicy", plain),
         ("imagePullSecrets", to_yaml)]
RUNTIME = [("resources", to_yaml), ("env", to_yaml), ("args", to_yaml)]
HOST_NETWORK = [("hostNetwork", plain)]


def _optional(block: dict, rules: list[Rule], where: str = "") -> dict:
    """The fields of rules whose value is set (the template's `if .Values.<operand>.<field>`)."""
    out = {}
    for key, printer in rules:
        value = block.get(key) if isinstance(block, dict) else None
        if truthy(value):
            out[key] = printer(value, f"{where}.{key}".lstrip("."))
    return out


def _mapping(fields: dict) -> dict | None:
    """A block the template always opens; with no field under it YAML reads it as null."""
    return fields or None


def _operand(values: dict, name: str, rules: list[Rule], enabled: bool = True) -> dict:
    block = values.get(name) or {}
    out = {"enabled": plain(block.get("enabled"))} if enabled else {}
    out.update(_optional(block, rules))
    return out


def _driver_manager(block: dict) -> dict | None:
    manager = block.get("driverManager") or {}
    return _mapping(_optional(manager, [*IMAGE[:4], ("env", to_yaml)]))


def _validator(values: dict, app_version: str) -> dict:
    block = values.get("validator") or {}
    out = _optional(block, IMAGE[:2])
    out["version"] = quote(C.default(block.get("version"), app_version))
    out.update(_optional(block, [("imagePullPolicy", plain), ("imagePullSecrets", to_yaml), *RUNTIME,
                                 *HOST_NETWORK]))
    for component in ("plugin", "cuda", "driver", "toolkit", "vfioPCI", "vgpuManager", "vgpuDevices"):
        sub = block.get(component)
        if truthy(sub):
            env = sub.get("env") if isinstance(sub, dict) else None
            out[component] = {"env": to_yaml(env) if truthy(env) else []}
    return out


def _driver(values: dict) -> dict:
    block = values.get("driver") or {}
    crd = (block.get("nvidiaDriverCRD") or {}).get("enabled")
    out = {"enabled": plain(block.get("enabled")), "useNvidiaDriverCRD": plain(crd)}
    if not truthy(crd):
        out["kernelModuleType"] = plain(block.get("kernelModuleType"))
        out["usePrecompiled"] = plain(block.get("usePrecompiled"))
        out.update(_optional(block, [*IMAGE, ("startupProbe", to_yaml), ("livenessProbe", to_yaml),
                                     ("readinessProbe", to_yaml)]))
        rdma = block.get("rdma") or {}
        out["rdma"] = {"enabled": plain(rdma.get("enabled")), "useHostMofed": plain(rdma.get("useHostMofed"))}
        out["manager"] = _mapping(_optional(block.get("manager") or {}, [*IMAGE[:4], ("env", to_yaml)]))
        out.update(_optional(block, [("repoConfig", to_yaml), ("certConfig", to_yaml), ("licensingConfig", to_yaml),
                                     ("virtualTopology", to_yaml), ("kernelModuleConfig", to_yaml),
                                     ("secretEnv", plain), *RUNTIME]))
    if truthy(block.get("upgradePolicy")):
        out["upgradePolicy"] = C.upgrade_policy(values)
    out.update(_optional(block, HOST_NETWORK))
    return out


def spec(values: dict, app_version: str) -> dict:
    """The ClusterPolicy spec chart v26.7.0 renders from merged values (defaults with the overrides applied)."""
    hosts = values.get("hostPaths") or {}
    operator = values.get("operator") or {}
    out: dict[str, Any] = {
        "hostPaths": {"rootFS": plain(hosts.get("rootFS")), "driverInstallDir": plain(hosts.get("driverInstallDir")),
                      **_optional(hosts, [("kubeletRootDir", plain)])},
    }
    op = _optional(operator, [("runtimeClass", plain), ("defaultGPUMode", plain), ("use_ocp_driver_toolkit", plain)])
    if truthy(operator.get("metrics")):
        op["metrics"] = _mapping(_optional(operator["metrics"], [("serviceMonitor", to_yaml)]))
    out["operator"] = _mapping(op)

    daemonsets = values.get("daemonsets") or {}
    ds = {}
    if truthy(daemonsets.get("labels")):
        ds["labels"] = to_yaml(daemonsets["labels"])  # without the chart's Helm identity labels (module doc)
    ds.update(_optional(daemonsets, [("annotations", to_yaml), ("tolerations", to_yaml),
                                     ("priorityClassName", plain), ("updateStrategy", plain)]))
    if truthy(daemonsets.get("rollingUpdate")):
        ds["rollingUpdate"] = {"maxUnavailable": quote(daemonsets["rollingUpdate"].get("maxUnavailable"))}
    out["daemonsets"] = _mapping(ds)
    out["validator"] = _validator(values, app_version)
    out["mig"] = _mapping(_optional(values.get("mig") or {}, [("strategy", plain)]))
    out["psa"] = {"enabled": plain(C.get(values, "psa.enabled"))}
    cdi = values.get("cdi") or {}
    out["cdi"] = {"enabled": plain(cdi.get("enabled"))}
    if truthy(cdi.get("enabled")) and truthy(cdi.get("nriPluginEnabled")):
        out["cdi"]["nriPluginEnabled"] = plain(cdi["nriPluginEnabled"])
    out["driver"] = _driver(values)

    vgpu = _operand(values, "vgpuManager", [*IMAGE, *RUNTIME, ("kernelModuleConfig", to_yaml), *HOST_NETWORK])
    vgpu["driverManager"] = _driver_manager(values.get("vgpuManager") or {})
    out["vgpuManager"] = vgpu
    out["kataManager"] = _operand(values, "kataManager", [("config", to_yaml), *IMAGE, *RUNTIME, *HOST_NETWORK])
    vfio = _operand(values, "vfioManager", [*IMAGE, *RUNTIME, *HOST_NETWORK])
    vfio["driverManager"] = _driver_manager(values.get("vfioManager") or {})
    out["vfioManager"] = vfio
    out["vgpuDeviceManager"] = _operand(values, "vgpuDeviceManager", [*IMAGE, *RUNTIME, ("config", to_yaml),
                                                                      *HOST_NETWORK])
    cc = values.get("ccManager") or {}
    out["ccManager"] = {"enabled": plain(cc.get("enabled")), "defaultMode": quote(cc.get("defaultMode")),
                        **_optional(cc, [*IMAGE, *RUNTIME, *HOST_NETWORK])}
    out["toolkit"] = _operand(values, "toolkit", [*IMAGE, ("resources", to_yaml), ("env", to_yaml),
                                                  ("installDir", plain), *HOST_NETWORK])
    plugin = _operand(values, "devicePlugin", [*IMAGE, *RUNTIME])
    config = (values.get("devicePlugin") or {}).get("config") or {}
    if truthy(config.get("name")):
        plugin["config"] = {"name": quote(config["name"]), "default": quote(config.get("default"))}
    plugin.update(_optional(values.get("devicePlugin") or {}, HOST_NETWORK))
    out["devicePlugin"] = plugin
    out["dcgm"] = _operand(values, "dcgm", [*IMAGE, *RUNTIME, *HOST_NETWORK])
    exporter = values.get("dcgmExporter") or {}
    dx = _operand(values, "dcgmExporter", [("annotations", to_yaml), *IMAGE, *RUNTIME])
    if truthy(exporter.get("config")) and truthy((exporter.get("config") or {}).get("name")):
        dx["config"] = {"name": plain(exporter["config"]["name"])}
    dx.update(_optional(exporter, [("serviceMonitor", to_yaml), ("service", to_yaml), ("hostPID", plain),
                                   *HOST_NETWORK, ("hpcJobMapping", to_yaml), ("enablePodLabels", plain),
                                   ("enablePodUID", plain), ("podLabelAllowlistRegex", to_yaml)]))
    out["dcgmExporter"] = dx
    out["gfd"] = _operand(values, "gfd", [*IMAGE, *RUNTIME, *HOST_NETWORK])
    mig = values.get("migManager") or {}
    mm = _operand(values, "migManager", [*IMAGE, *RUNTIME])
    if truthy(mig.get("config")):
        mm["config"] = {**_optional(mig["config"], [("name", plain)]), "default": quote(mig["config"].get("default"))}
    mm.update(_optional(mig, [("gpuClientsConfig", to_yaml), *HOST_NETWORK]))
    out["migManager"] = mm
    exporter_block = values.get("nodeStatusExporter") or {}
    nse = {"enabled": plain(exporter_block.get("enabled")), **_optional(exporter_block, IMAGE[:2]),
           "version": quote(C.default(exporter_block.get("version"), app_version)),
           **_optional(exporter_block, [("imagePullPolicy", plain), ("imagePullSecrets", to_yaml), *RUNTIME,
                                        *HOST_NETWORK])}
    out["nodeStatusExporter"] = nse
    for name, enabled in (("gds", plain), ("gdrcopy", lambda v, where="": plain(C.default(v, False), where))):
        block = values.get(name)
        if truthy(block):
            out[name] = {"enabled": enabled(block.get("enabled")), **_optional(block, IMAGE[:2]),
                         "version": quote(block.get("version")),
                         **_optional(block, [("imagePullPolicy", plain), ("imagePullSecrets", to_yaml),
                                             ("env", to_yaml), ("args", to_yaml)])}
    sandbox = values.get("sandboxWorkloads") or {}
    out["sandboxWorkloads"] = {"enabled": plain(sandbox.get("enabled")),
                               **_optional(sandbox, [("defaultWorkload", plain), ("mode", quote)])}
    out["sandboxDevicePlugin"] = _mapping(_optional(values.get("sandboxDevicePlugin") or {},
                                                    [("enabled", plain), *IMAGE, *RUNTIME, *HOST_NETWORK]))
    kata = values.get("kataSandboxDevicePlugin") or {}
    ksdp = {"enabled": plain(kata["enabled"])} if kata.get("enabled") is not None else {}
    ksdp.update(_optional(kata, [*IMAGE, *RUNTIME, *HOST_NETWORK]))
    out["kataSandboxDevicePlugin"] = _mapping(ksdp)
    return out


def without_nulls(value: Any) -> Any:
    """The spec as the API server stores it: a null field is as good as absent (and the CRD has no nullable ones)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value

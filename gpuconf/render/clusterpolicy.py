"""The ClusterPolicy the GPU Operator chart would render from a values tree, for installs without Helm (OpenShift's OLM).

This follows templates/clusterpolicy.yaml of chart v26.7.0 field by field: which values reach the ClusterPolicy, under
which `if`, with which `| default`, and how each is printed. A value printed bare (`{{ .Values.x }}`) is re-read as YAML
by Helm, so "25%" stays a string and `true` a boolean; a `| quote`d one is always a string; a `toYaml` block is copied
as it is. Helm reads values numbers as float64 and prints 1000000 as 1e+06, which this reproduces too.

Two deliberate differences: the Helm identity labels the chart puts on the operands (helm.sh/chart and
app.kubernetes.io/managed-by: gpu-operator) are left out, as no Helm release exists; `daemonsets.labels` of the values
are kept.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Callable

# --- Go template printing ------------------------------------------------------------------------------------------


def truthy(value: Any) -> bool:
    """Go template truth: false, 0, nil, "" and empty lists and maps are false."""
    return value not in (None, False, "") and value != 0 and value != [] and value != {}


def default(value: Any, fallback: Any) -> Any:
    """Sprig's `default`: the fallback when the value is empty."""
    return value if truthy(value) else fallback


def _go_number(value: int | float) -> str:
    """A number as Go's %v prints the float64 Helm holds it in: 300, 0.5, 1e+06, 1.5e+07.

    strconv's shortest 'g' format: the fewest digits that round-trip (Python's repr finds the same), in exponent form
    when the decimal exponent is below -4 or at least 6.
    """
    from decimal import Decimal

    number = float(value)
    if number == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    del sign
    mantissa = "".join(map(str, digits))
    exp = len(mantissa) - 1 + int(exponent)
    prefix = "-" if number < 0 else ""
    if exp < -4 or exp >= 6:
        head, tail = mantissa[0], mantissa[1:]
        return f"{prefix}{head}{'.' + tail if tail else ''}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    if exp >= len(mantissa) - 1:
        return prefix + mantissa + "0" * (exp - len(mantissa) + 1)
    if exp >= 0:
        return f"{prefix}{mantissa[:exp + 1]}.{mantissa[exp + 1:]}"
    return f"{prefix}0.{'0' * (-exp - 1)}{mantissa}"


def text_of(value: Any) -> str | None:
    """What `{{ value }}` prints, or None for nil (Helm removes "<no value>")."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _go_number(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"a {type(value).__name__} printed bare renders Go's map/slice syntax, not YAML: {value!r}")


#: strconv.ParseInt(s, 0, 64), which go-yaml v2 tries first (after dropping "_"): 0x hex, 0o/0 octal, 0b binary.
_GO_INTS = ((re.compile(r"^[-+]?0[xX][0-9a-fA-F]+$"), 16), (re.compile(r"^[-+]?0[oO]?[0-7]+$"), 8),
            (re.compile(r"^[-+]?0[bB][01]+$"), 2), (re.compile(r"^[-+]?(0|[1-9][0-9]*)$"), 10))
_GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_BOOLS = {"y": True, "Y": True, "yes": True, "Yes": True, "YES": True, "n": False, "N": False, "no": False,
             "No": False, "NO": False, "true": True, "True": True, "TRUE": True, "false": False, "False": False,
             "FALSE": False, "on": True, "On": True, "ON": True, "off": False, "Off": False, "OFF": False}


def resolve(text: str | None) -> Any:
    """A bare scalar as Helm's YAML reader (go-yaml v2, YAML 1.1 rules) reads it back."""
    if text is None or text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in _GO_BOOLS:
        return _GO_BOOLS[text]
    number = text.replace("_", "")
    for pattern, base in _GO_INTS:
        if pattern.match(number):
            sign = -1 if number.startswith("-") else 1
            digits = number.lstrip("+-")
            return sign * int(digits[2:] if base != 10 and digits[1:2].isalpha() else digits, base)
    if _GO_FLOAT.match(number):
        return float(number)  # go-yaml v2 reads 1e+06 (Helm's print of 1000000) as a float
    if text[:1] in "\"'[{" or ": " in text or " #" in text or text.startswith(("- ", "&", "*", "!", "|", ">", "%", "@")):
        raise ValueError(f"{text!r} printed bare is not a plain YAML scalar: the chart would render broken YAML")
    return text


def plain(value: Any) -> Any:
    """`{{ .Values.x }}`: printed, then read back as YAML."""
    return resolve(text_of(value))


def quote(value: Any) -> str | None:
    """`{{ .Values.x | quote }}`: a string; nil prints nothing (sprig skips it), so the field is null."""
    return text_of(value)


def to_yaml(value: Any) -> Any:
    """`{{ toYaml .Values.x }}`: the value as it is."""
    return copy.deepcopy(value)


# --- the template -------------------------------------------------------------------------------------------------

Rule = tuple[str, Callable[[Any], Any]]
#: Fields most operands render `if` set: (key, how it is printed).
IMAGE = [("repository", plain), ("image", plain), ("version", quote), ("imagePullPolicy", plain),
         ("imagePullSecrets", to_yaml)]
RUNTIME = [("resources", to_yaml), ("env", to_yaml), ("args", to_yaml)]
HOST_NETWORK = [("hostNetwork", plain)]


def _get(values: dict, path: str) -> Any:
    node: Any = values
    for key in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _optional(block: dict, rules: list[Rule]) -> dict:
    """The fields of rules whose value is set (the template's `if .Values.<operand>.<field>`)."""
    out = {}
    for key, printer in rules:
        value = block.get(key) if isinstance(block, dict) else None
        if truthy(value):
            out[key] = printer(value)
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
    out["version"] = quote(default(block.get("version"), app_version))
    out.update(_optional(block, [("imagePullPolicy", plain), ("imagePullSecrets", to_yaml), *RUNTIME,
                                 *HOST_NETWORK]))
    for component in ("plugin", "cuda", "driver", "toolkit", "vfioPCI", "vgpuManager", "vgpuDevices"):
        sub = block.get(component)
        if truthy(sub):
            env = sub.get("env") if isinstance(sub, dict) else None
            out[component] = {"env": to_yaml(env) if truthy(env) else []}
    return out


def _upgrade_policy(policy: dict) -> dict:
    wait = policy.get("waitForCompletion") or {}
    deletion = policy.get("gpuPodDeletion") or {}
    drain = policy.get("drain") or {}
    out = {
        "autoUpgrade": plain(default(policy.get("autoUpgrade"), False)),
        "maxParallelUpgrades": plain(default(policy.get("maxParallelUpgrades"), 0)),
        "maxUnavailable": plain(default(policy.get("maxUnavailable"), "25%")),
        "waitForCompletion": {"timeoutSeconds": plain(wait.get("timeoutSeconds")),
                              **_optional(wait, [("podSelector", plain)])},
        # The values key is gpuPodDeletion; the ClusterPolicy's field is podDeletion (gpu-operator-facts §4).
        "podDeletion": {"force": plain(default(deletion.get("force"), False)),
                        "timeoutSeconds": plain(deletion.get("timeoutSeconds")),
                        "deleteEmptyDir": plain(default(deletion.get("deleteEmptyDir"), False))},
        "drain": {"enable": plain(default(drain.get("enable"), False)),
                  "force": plain(default(drain.get("force"), False)),
                  **_optional(drain, [("podSelector", plain)]),
                  "timeoutSeconds": plain(drain.get("timeoutSeconds")),
                  "deleteEmptyDir": plain(default(drain.get("deleteEmptyDir"), False))},
    }
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
        out["upgradePolicy"] = _upgrade_policy(block["upgradePolicy"])
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
    out["psa"] = {"enabled": plain(_get(values, "psa.enabled"))}
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
           "version": quote(default(exporter_block.get("version"), app_version)),
           **_optional(exporter_block, [("imagePullPolicy", plain), ("imagePullSecrets", to_yaml), *RUNTIME,
                                        *HOST_NETWORK])}
    out["nodeStatusExporter"] = nse
    for name, enabled in (("gds", plain), ("gdrcopy", lambda v: plain(default(v, False)))):
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

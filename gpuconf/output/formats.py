"""gpuconf's own validators of the two NVIDIA config files it renders.

* the k8s-device-plugin / GFD config file (`version: v1`, k8s-device-plugin v0.20.0), one per key of the
  device-plugin ConfigMap, selected per node with the label `nvidia.com/device-plugin.config`;
* the mig-parted config (`version: v1`, mig-parted v0.15.0), the `config.yaml` key of the MIG manager's ConfigMap,
  whose config names are selected per node with the label `nvidia.com/mig.config`;
* config names, which are both ConfigMap keys and node-label values.

Every check takes already-parsed data (what a YAML or JSON reader returns) and returns a list of problems, each a
line `LOCATION: message` with a JSON-path-like location (`sharing.timeSlicing.resources[0].replicas`,
`mig-configs["all-1g.10gb"][0].mig-devices["1g.10gb"]`, `$` for the whole document). An empty list means valid.

Device plugin, rules of the upstream code (parse time and start-up; the plugin refuses to start on these):
  version "" or v1; sharing.timeSlicing / sharing.mps need a non-empty `resources` list; each resource needs `name`
  and `replicas` >= 2; resource names get an implicit `nvidia.com/` prefix, must then be <= 63 characters with a
  DNS-1123 subdomain after it; `devices` is "all", a count > 0 or a list of device references; the enums
  migStrategy, deviceListStrategy (a string or a list), deviceIDStrategy, sharedDevicesAllocationPolicy and
  deviceDiscoveryStrategy (exact case); sleepInterval must parse; MPS with the mixed MIG strategy is refused;
  imex.channelIDs is [] or [0]; every field has the type the Go structs decode (no "true" for a bool, no 4.0 for an
  int).
Device plugin, gpuconf's stricter policy (upstream accepts these silently, and the node then does something else
than the file says):
  * unknown keys anywhere are errors, and keys must be spelled in their exact case: upstream ignores unknown keys
    (a typo such as `timeSharing` turns sharing off) and matches some of them case-insensitively;
  * keys the v0.20.0 plugin knowingly ignores are errors with the reason: top-level `resources`, a resource's
    `rename`, a `devices` other than "all";
  * timeSlicing and mps in one file (upstream silently uses mps only);
  * MPS replicas > 48 (the MPS control daemon's per-GPU client limit; 16 on GPUs below compute capability 7.5,
    which this file-level check cannot know), and MPS on anything but `nvidia.com/gpu` (MPS works on full GPUs only);
  * `null` is not accepted for any key: write the value or leave the key out;
  * the `mig_strategy` argument (the operator's cluster-wide MIG strategy) must agree with `flags.migStrategy`
    when the file sets one, and counts as the strategy in effect for the MPS check.
  Not checked: `mpsRoot` being set when MPS is active, because the operator and the device-plugin chart both set
  it through the env `MPS_ROOT`; rules that need the GPUs (MIG devices on the node, the single strategy's one
  profile per node).

mig-parted, rules of the upstream parser:
  `version` required and v1; only `version` and `mig-configs` at the top; >= 1 config, each with >= 1 entry; entry
  keys only device-filter, devices, mig-enabled, mig-devices; `devices` "all" or a list of GPU indexes; `mig-enabled`
  a required bool; `mig-devices` required when enabled ({} allowed), absent or empty when disabled; profile names
  `<G>g.<GB>gb` or `<C>c.<G>g.<GB>gb` with `+attr[,attr...]` or `-attr`; counts >= 0, not all 0 in a non-empty map.
mig-parted, gpuconf's stricter policy:
  * a device-filter that is not `0x<8 hex>` (optionally `:0x<8 hex>`) is an error: upstream silently matches no GPU;
  * config names must pass check_config_name (they become node-label values);
  * two entries of one config must not match the same GPU (both apply, in order);
  * `null` is not accepted for any key, and config names and profile names must be strings;
  * the numbers in a profile name are positive and without leading zeros (`1g.10gb`, not `01g.10gb` or `0g.5gb`).

Imports only `re`, and compiles nothing at import time: `re` caches the patterns on first use.
"""

from __future__ import annotations

import re

__all__ = ["check_config_name", "check_device_plugin_config", "check_mig_parted_config"]

MIG_STRATEGIES = ("none", "single", "mixed")
MPS_MAX_REPLICAS = 48
RESOURCE_PREFIX = "nvidia.com/"
RESOURCE_NAME_MAX = 63
CONFIG_NAME_MAX = 63

_DNS1123_SUBDOMAIN = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
_CONFIG_NAME_CHARS = r"[A-Za-z0-9._-]"
_ALNUM = r"[A-Za-z0-9]"
# A Go duration (time.ParseDuration): optional sign, then one or more <number><unit>; a bare 0 is allowed.
_GO_DURATION = r"[-+]?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)"
# Device references in a `devices` list: "<gpu>:<mig>", GPU-<uuid>, MIG-<uuid>, MIG-GPU-<uuid>/<gi>/<ci>.
_DEVICE_REF = r"[0-9]+:[0-9]+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Fa-f-]+|MIG-GPU-[0-9A-Fa-f-]+/[0-9]+/[0-9]+"
# MIG profile names (go-nvlib): <G>g.<GB>gb or <C>c.<G>g.<GB>gb, then +attr[,attr...] or -attr. An attribute is
# alphanumerics and dots, not starting with a digit, not starting or ending with a dot.
_MIG_ATTR = r"[A-Za-z](?:[A-Za-z0-9.]*[A-Za-z0-9])?"
_MIG_PROFILE = rf"(?:[1-9][0-9]*c\.)?[1-9][0-9]*g\.[1-9][0-9]*gb(?:\+{_MIG_ATTR}(?:,{_MIG_ATTR})*|-{_MIG_ATTR})?"
# mig-parted device-filter: 0x<DEVICE><VENDOR>, optionally :0x<SUBDEVICE><SUBVENDOR> (case-insensitive hex).
_PCI_ID = r"0[xX][0-9A-Fa-f]{8}"
_DEVICE_FILTER = rf"({_PCI_ID})(?::({_PCI_ID}))?"
_PLAIN_KEY = r"[A-Za-z_][A-Za-z0-9_-]*"


# --- formatting ----------------------------------------------------------------------------------------------------


def _show(value: object) -> str:
    """A value as it would read in YAML/JSON: strings double-quoted, null, true/false, lists in brackets."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def _got(value: object) -> str:
    """`got <kind> <value>` for scalars, `got <kind>` for null and collections."""
    if value is None or isinstance(value, (dict, list)):
        return f"got {_kind(value)}"
    return f"got {_kind(value)} {_show(value)}"


def _key(path: str, key: object) -> str:
    """path.key, or path["key"] when the key is not a plain identifier (dots, spaces, non-strings)."""
    if isinstance(key, str) and re.fullmatch(_PLAIN_KEY, key):
        return f"{path}.{key}" if path else key
    return f"{path or '$'}[{_show(key)}]"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _suggest(key: object, allowed: tuple[str, ...]) -> str:
    """ (did you mean "x"?) for a key that differs in case or is a near miss, else ""."""
    if not isinstance(key, str):
        return ""
    for name in allowed:
        if name.lower() == key.lower():
            return f' (did you mean "{name}"? keys are case-sensitive)'
    import difflib  # only on the error path

    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


class _Problems:
    """Collects `location: message` lines and offers the checks shared by both formats."""

    def __init__(self, unknown_key: str) -> None:
        self.lines: list[str] = []
        self.unknown_key = unknown_key  # how an unknown key is described in this format

    def add(self, path: str, message: str) -> None:
        self.lines.append(f"{path or '$'}: {message}")

    def mapping(self, path: str, value: object) -> dict | None:
        if isinstance(value, dict):
            return value
        self.add(path, f"must be a mapping, {_got(value)}")
        return None

    def keys(self, path: str, mapping: dict, allowed: tuple[str, ...]) -> None:
        for key in mapping:
            if key not in allowed:
                self.add(_key(path, key), self.unknown_key + _suggest(key, allowed))

    def boolean(self, path: str, value: object) -> None:
        if not isinstance(value, bool):
            self.add(path, f"must be a boolean, {_got(value)}")

    def string(self, path: str, value: object) -> bool:
        if isinstance(value, str):
            return True
        self.add(path, f"must be a string, {_got(value)}")
        return False

    def integer(self, path: str, value: object) -> bool:
        if _is_int(value):
            return True
        self.add(path, f"must be an integer, {_got(value)}")
        return False

    def choice(self, path: str, value: object, choices: tuple[str, ...]) -> bool:
        if not self.string(path, value):
            return False
        if value in choices:
            return True
        options = ", ".join(choices)
        case = " (values are case-sensitive)" if value.lower() in choices else ""
        self.add(path, f"must be one of {options}, {_got(value)}{case}")
        return False


# --- config names --------------------------------------------------------------------------------------------------


def _config_name_problems(name: object) -> list[str]:
    if not isinstance(name, str):
        return [f"config name must be a string, {_got(name)}"]
    if not name:
        return ["config name must not be empty"]
    out = []
    if len(name) > CONFIG_NAME_MAX:
        out.append(f"config name is {len(name)} characters long, must be at most {CONFIG_NAME_MAX} "
                   "(it is a ConfigMap key and a node-label value)")
    bad = sorted({ch for ch in name if not re.fullmatch(_CONFIG_NAME_CHARS, ch)})
    if bad:
        out.append("config name may only contain A-Z, a-z, 0-9, \".\", \"_\" and \"-\", "
                   f"found {', '.join(_show(ch) for ch in bad)}")
    if not (re.fullmatch(_ALNUM, name[0]) and re.fullmatch(_ALNUM, name[-1])):
        out.append("config name must start and end with a letter or digit")
    return out


def check_config_name(name: str) -> list[str]:
    """Problems of a config name, valid both as a ConfigMap key and as a node-label value (location `$`).

    <= 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric. The device-plugin and mig-parted config
    names are selected by node labels, so a name that is a fine ConfigMap key can still be impossible to select.
    """
    return [f"$: {p}" for p in _config_name_problems(name)]


# --- device plugin / GFD config ------------------------------------------------------------------------------------

_BOOL, _STR, _DURATION, _DEVICE_LIST = "bool", "str", "duration", "device-list"
_DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
# flags: key -> bool/str/duration/device-list, a tuple of choices, or a nested dict of the same.
_DP_FLAGS: dict = {
    "migStrategy": MIG_STRATEGIES,
    "failOnInitError": _BOOL,
    "nvidiaDriverRoot": _STR,
    "nvidiaDevRoot": _STR,
    "mpsRoot": _STR,
    "gdrcopyEnabled": _BOOL,
    "gdsEnabled": _BOOL,
    "mofedEnabled": _BOOL,
    "useNodeFeatureAPI": _BOOL,
    "deviceDiscoveryStrategy": ("auto", "nvml", "tegra"),
    "plugin": {
        "passDeviceSpecs": _BOOL,
        "deviceListStrategy": _DEVICE_LIST,
        "deviceIDStrategy": ("uuid", "index"),
        "cdiAnnotationPrefix": _STR,
        "nvidiaCTKPath": _STR,
        "containerDriverRoot": _STR,
        "sharedDevicesAllocationPolicy": ("distributed", "packed"),
    },
    "gfd": {
        "oneshot": _BOOL,
        "noTimestamp": _BOOL,
        "sleepInterval": _DURATION,
        "outputFile": _STR,
        "machineTypeFile": _STR,
    },
}
_DP_TOP = ("version", "flags", "resources", "sharing", "imex")
_DP_SHARING = ("timeSlicing", "mps")
_DP_REPLICATED = ("renameByDefault", "failRequestsGreaterThanOne", "resources")
_DP_RESOURCE = ("name", "rename", "devices", "replicas")
_DP_IMEX = ("channelIDs", "required")
_DP_UNKNOWN = "unknown key; the device plugin would silently ignore it"
_IGNORED = "ignored by the device plugin v0.20.0"


def _dp_fields(p: _Problems, path: str, value: object, spec: dict) -> None:
    fields = p.mapping(path, value)
    if fields is None:
        return
    p.keys(path, fields, tuple(spec))
    for key, kind in spec.items():
        if key not in fields:
            continue
        where, item = _key(path, key), fields[key]
        if isinstance(kind, dict):
            _dp_fields(p, where, item, kind)
        elif isinstance(kind, tuple):
            p.choice(where, item, kind)
        elif kind == _BOOL:
            p.boolean(where, item)
        elif kind == _STR:
            p.string(where, item)
        elif kind == _DURATION:
            _dp_duration(p, where, item)
        elif kind == _DEVICE_LIST:
            _dp_device_list_strategy(p, where, item)


def _dp_duration(p: _Problems, path: str, value: object) -> None:
    if (_is_int(value) or isinstance(value, float)) or (
            isinstance(value, str) and (value == "infinite" or re.fullmatch(_GO_DURATION, value))):
        return
    p.add(path, f'must be a duration such as "60s", a number of nanoseconds or "infinite", {_got(value)}')


def _dp_device_list_strategy(p: _Problems, path: str, value: object) -> None:
    if isinstance(value, str):
        p.choice(path, value, _DEVICE_LIST_STRATEGIES)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            p.choice(f"{path}[{i}]", item, _DEVICE_LIST_STRATEGIES)
    else:
        p.add(path, f"must be a string or a list of strings, {_got(value)}")


def _resource_name_problem(name: str) -> str | None:
    """What NewResourceName refuses: the name with nvidia.com/ prepended when missing, too long or a bad tail."""
    added = not name.startswith(RESOURCE_PREFIX)
    full = RESOURCE_PREFIX + name if added else name
    if len(full) > RESOURCE_NAME_MAX:
        return (f"resource name {_show(full)}{' (nvidia.com/ added)' if added else ''} is {len(full)} characters "
                f"long, must be at most {RESOURCE_NAME_MAX}")
    tail = full[len(RESOURCE_PREFIX):]
    if not re.fullmatch(_DNS1123_SUBDOMAIN, tail):
        return (f"invalid resource name {_show(name)}: {_show(tail)} after \"nvidia.com/\" must be a DNS-1123 "
                "subdomain (lower-case letters, digits, \"-\" and \".\", starting and ending with a letter or digit)")
    return None


def _dp_devices(p: _Problems, path: str, value: object) -> None:
    ignored = f'{_IGNORED} (forced back to "all"); gpuconf rejects it: leave devices out or set "all"'
    if value == "all":
        return
    if isinstance(value, str):
        p.add(path, f'the only valid string is "all", {_got(value)}')
    elif _is_int(value):
        p.add(path, f"a device count must be > 0, {_got(value)}" if value <= 0 else ignored)
    elif isinstance(value, list):
        valid = True
        for i, item in enumerate(value):
            if not ((_is_int(item) and item >= 0) or (isinstance(item, str) and re.fullmatch(_DEVICE_REF, item))):
                valid = False
                p.add(f"{path}[{i}]", f"unsupported device reference {_show(item)}; expected a GPU index, "
                                      '"<gpu>:<mig>", "GPU-<uuid>", "MIG-<uuid>" or "MIG-GPU-<uuid>/<gi>/<ci>"')
        if valid:
            p.add(path, ignored)
    else:
        p.add(path, f'must be "all", a device count or a list of devices, {_got(value)}')


def _dp_replicated(p: _Problems, path: str, value: object, mps: bool) -> None:
    shared = p.mapping(path, value)
    if shared is None:
        return
    p.keys(path, shared, _DP_REPLICATED)
    for key in ("renameByDefault", "failRequestsGreaterThanOne"):
        if key in shared:
            p.boolean(f"{path}.{key}", shared[key])
    where = f"{path}.resources"
    if "resources" not in shared:
        p.add(where, "required: list at least one resource to share")
        return
    resources = shared["resources"]
    if not isinstance(resources, list):
        p.add(where, f"must be a list, {_got(resources)}")
        return
    if not resources:
        p.add(where, "must list at least one resource to share, got []")
    for i, item in enumerate(resources):
        _dp_resource(p, f"{where}[{i}]", item, mps)


def _dp_resource(p: _Problems, path: str, value: object, mps: bool) -> None:
    resource = p.mapping(path, value)
    if resource is None:
        return
    p.keys(path, resource, _DP_RESOURCE)
    name = resource.get("name")
    if "name" not in resource or name == "":
        p.add(f"{path}.name", "required")
    elif p.string(f"{path}.name", name):
        problem = _resource_name_problem(name)
        if problem:
            p.add(f"{path}.name", problem)
        elif mps and name not in ("gpu", "nvidia.com/gpu"):
            p.add(f"{path}.name", f'MPS shares only nvidia.com/gpu (full GPUs), {_got(name)}')
    if "replicas" not in resource:
        p.add(f"{path}.replicas", "required")
    elif p.integer(f"{path}.replicas", resource["replicas"]):
        replicas = resource["replicas"]
        if replicas < 2:
            p.add(f"{path}.replicas", f"must be >= 2, got {replicas}")
        elif mps and replicas > MPS_MAX_REPLICAS:
            p.add(f"{path}.replicas", f"must be <= {MPS_MAX_REPLICAS} with MPS (the MPS daemon's client limit per "
                                      f"GPU), got {replicas}")
    if "devices" in resource:
        _dp_devices(p, f"{path}.devices", resource["devices"])
    if "rename" in resource:
        p.add(f"{path}.rename", f"{_IGNORED} (reset with a warning); gpuconf rejects it: use renameByDefault")


def _dp_imex(p: _Problems, value: object) -> None:
    imex = p.mapping("imex", value)
    if imex is None:
        return
    p.keys("imex", imex, _DP_IMEX)
    if "required" in imex:
        p.boolean("imex.required", imex["required"])
    if "channelIDs" in imex:
        ids = imex["channelIDs"]
        if not isinstance(ids, list):
            p.add("imex.channelIDs", f"must be a list, {_got(ids)}")
        elif all([p.integer(f"imex.channelIDs[{i}]", v) for i, v in enumerate(ids)]) and ids not in ([], [0]):
            p.add("imex.channelIDs", f"must be [] or [0], got {_show(ids)}")


def check_device_plugin_config(config: object, *, mig_strategy: str | None = None) -> list[str]:
    """Problems of one k8s-device-plugin / GFD config file (`version: v1`), already parsed.

    mig_strategy is the operator's cluster-wide MIG strategy (ClusterPolicy `mig.strategy`), or None when unknown.
    """
    if mig_strategy is not None and mig_strategy not in MIG_STRATEGIES:
        raise ValueError(f"mig_strategy must be one of {', '.join(MIG_STRATEGIES)} or None, got {mig_strategy!r}")
    p = _Problems(_DP_UNKNOWN)
    root = p.mapping("", config)
    if root is None:
        return p.lines
    p.keys("", root, _DP_TOP)

    if "version" in root and p.string("version", root["version"]) and root["version"] not in ("", "v1"):
        p.add("version", f'unknown version {_show(root["version"])}; must be "v1"')

    file_strategy = None
    if "flags" in root:
        _dp_fields(p, "flags", root["flags"], _DP_FLAGS)
        flags = root["flags"]
        if isinstance(flags, dict) and flags.get("migStrategy") in MIG_STRATEGIES:
            file_strategy = flags["migStrategy"]

    if "resources" in root:
        p.add("resources", f"{_IGNORED} (\"Customizing the 'resources' field is not yet supported\"); "
                           "gpuconf rejects it")

    sharing = p.mapping("sharing", root["sharing"]) if "sharing" in root else None
    if sharing is not None:
        p.keys("sharing", sharing, _DP_SHARING)
        if "timeSlicing" in sharing and "mps" in sharing:
            p.add("sharing", "sets both timeSlicing and mps; the device plugin would silently use only mps, "
                             "so gpuconf requires one of them")
        if "timeSlicing" in sharing:
            _dp_replicated(p, "sharing.timeSlicing", sharing["timeSlicing"], mps=False)
        if "mps" in sharing:
            _dp_replicated(p, "sharing.mps", sharing["mps"], mps=True)

    if "imex" in root:
        _dp_imex(p, root["imex"])

    # The operator sets the env MIG_STRATEGY from ClusterPolicy mig.strategy (whenever that is non-empty), and in the
    # device plugin an env-set flag overrides the file's flags.migStrategy. A file that says otherwise is ignored on
    # that point, which is never what its author meant; and the strategy in effect is the operator's.
    if mig_strategy is not None and file_strategy is not None and file_strategy != mig_strategy:
        p.add("flags.migStrategy", f"{_show(file_strategy)} disagrees with the operator's MIG strategy "
                                   f"{_show(mig_strategy)}, which overrides it (env MIG_STRATEGY)")
    effective = mig_strategy if mig_strategy is not None else file_strategy
    if sharing is not None and "mps" in sharing and effective == "mixed":
        source = "the operator's MIG strategy" if mig_strategy is not None else "flags.migStrategy"
        p.add("sharing.mps", f'MPS is not supported with the mixed MIG strategy (from {source})')
    return p.lines


# --- mig-parted config ---------------------------------------------------------------------------------------------

_MP_TOP = ("version", "mig-configs")
_MP_ENTRY = ("device-filter", "devices", "mig-enabled", "mig-devices")
_MP_UNKNOWN = "unexpected field; mig-parted rejects it"


def _mp_device_filter(p: _Problems, path: str, value: object) -> list[tuple[str, str | None]] | None:
    """Check a device-filter; return its (id, subsystem) pairs lower-cased, or None when it is invalid."""
    items = [(path, value)] if isinstance(value, str) else None
    if isinstance(value, list):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    if items is None:
        p.add(path, f"must be a string or a list of strings, {_got(value)}")
        return None
    out: list[tuple[str, str | None]] = []
    for where, item in items:
        if not p.string(where, item):
            return None
        match = re.fullmatch(_DEVICE_FILTER, item)
        if match is None:
            p.add(where, f"{_show(item)} is not a PCI id 0x<DEVICE><VENDOR> (8 hex digits, e.g. 0x233010DE), "
                         "optionally followed by :0x<SUBDEVICE><SUBVENDOR>; mig-parted would silently match no GPU")
            return None
        out.append((match.group(1).lower(), match.group(2).lower() if match.group(2) else None))
    return out


def _mp_devices(p: _Problems, path: str, value: object) -> set[int] | str | None:
    """Check devices; return "all", the set of indexes, or None when invalid."""
    if value == "all":
        return "all"
    if not isinstance(value, list):
        p.add(path, f'must be "all" or a list of GPU indexes, {_got(value)}')
        return None
    valid = True
    for i, item in enumerate(value):
        if not (_is_int(item) and item >= 0):
            p.add(f"{path}[{i}]", f"must be a GPU index (an integer >= 0), {_got(item)}")
            valid = False
    return set(value) if valid else None


def _mp_mig_devices(p: _Problems, path: str, value: object, enabled: object) -> None:
    devices = p.mapping(path, value)
    if devices is None:
        return
    if enabled is False:
        if devices:
            p.add(path, "must be absent or empty when mig-enabled is false")
        return
    counts_ok = True
    for profile, count in devices.items():
        where = _key(path, profile)
        if not (isinstance(profile, str) and re.fullmatch(_MIG_PROFILE, profile)):
            p.add(where, "not a MIG profile name; expected <G>g.<GB>gb or <C>c.<G>g.<GB>gb, optionally followed "
                         "by +attr[,attr...] or -attr (e.g. 1g.10gb, 1g.10gb+me, 1g.24gb-me)")
        if not (_is_int(count) and count >= 0):
            p.add(where, f"count must be an integer >= 0, {_got(count)}")
            counts_ok = False
    if devices and counts_ok and not any(devices.values()):
        p.add(path, "all counts are 0; set at least one count > 0, or use {} for MIG enabled without devices")


def _mp_entry(p: _Problems, path: str, value: object) -> tuple | None:
    """Check one entry; return (filters or None for every GPU, "all" or index set) when both parse, else None."""
    entry = p.mapping(path, value)
    if entry is None:
        return None
    p.keys(path, entry, _MP_ENTRY)
    filters: object = "any"
    if "device-filter" in entry:
        filters = _mp_device_filter(p, f"{path}.device-filter", entry["device-filter"])
    devices = None
    if "devices" not in entry:
        p.add(f"{path}.devices", 'required: "all" or a list of GPU indexes')
    else:
        devices = _mp_devices(p, f"{path}.devices", entry["devices"])
    enabled = entry.get("mig-enabled")
    if "mig-enabled" not in entry:
        p.add(f"{path}.mig-enabled", "required: true or false")
    else:
        p.boolean(f"{path}.mig-enabled", enabled)
    if "mig-devices" in entry:
        _mp_mig_devices(p, f"{path}.mig-devices", entry["mig-devices"], enabled)
    elif enabled is True:
        p.add(f"{path}.mig-devices", "required when mig-enabled is true (use {} for MIG enabled without devices)")
    if filters is None or devices is None:
        return None
    return (None if filters == "any" else filters), devices


def _filters_overlap(a: list | None, b: list | None) -> bool:
    if a is None or b is None:
        return True
    return any(ida == idb and (suba is None or subb is None or suba == subb) for ida, suba in a for idb, subb in b)


def _entries_overlap(a: tuple, b: tuple) -> bool:
    (filters_a, devices_a), (filters_b, devices_b) = a, b
    devices_meet = devices_a == "all" or devices_b == "all" or bool(devices_a & devices_b)
    return devices_meet and _filters_overlap(filters_a, filters_b)


def check_mig_parted_config(config: object) -> list[str]:
    """Problems of one mig-parted config file (`version: v1`, the MIG manager's `config.yaml`), already parsed."""
    p = _Problems(_MP_UNKNOWN)
    root = p.mapping("", config)
    if root is None:
        return p.lines
    p.keys("", root, _MP_TOP)
    if "version" not in root:
        p.add("version", 'required: "v1"')
    elif p.string("version", root["version"]) and root["version"] != "v1":
        p.add("version", f'unknown version {_show(root["version"])}; must be "v1"')
    if "mig-configs" not in root:
        p.add("mig-configs", "required: at least one named config")
        return p.lines
    configs = p.mapping("mig-configs", root["mig-configs"])
    if configs is None:
        return p.lines
    if not configs:
        p.add("mig-configs", "must contain at least one named config")
    for name, entries in configs.items():
        path = _key("mig-configs", name)
        for problem in _config_name_problems(name):
            p.add(path, problem)
        if not isinstance(entries, list):
            p.add(path, f"must be a list of entries, {_got(entries)}")
            continue
        if not entries:
            p.add(path, "must list at least one entry")
        parsed = [(i, _mp_entry(p, f"{path}[{i}]", entry)) for i, entry in enumerate(entries)]
        # mig-parted walks the entries in order and applies each to the GPUs its device-filter and devices both
        # match: a GPU two entries match would be configured by both in turn. gpuconf keeps them disjoint.
        valid = [(i, e) for i, e in parsed if e is not None]
        for n, (j, later) in enumerate(valid):
            for i, earlier in valid[:n]:
                if _entries_overlap(earlier, later):
                    p.add(f"{path}[{j}]", f"matches GPUs that entry [{i}] matches too (device-filter and devices "
                                          "overlap); entries of one config must be disjoint")
                    break
    return p.lines

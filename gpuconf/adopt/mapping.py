"""Adopt an installation: every values path the user set ends in exactly one outcome, and the draft keeps behaviour.

Outcomes, per values path (a leaf: a scalar, a list, or an empty map):
  mapped    to a typed intent field (`to` names it); gpuconf renders the same value from it;
  override  carried in spec.overrides, `why: carried over from FILE:LINE`;
  default   equal to the target chart's default: nothing to carry;
  dropped   not a key of the target chart version, or a key no template reads: Helm ignored it, and so does gpuconf;
  changed   gpuconf renders something else there (`why` says what and why).
Paths gpuconf itself sets although the user did not (its own ConfigMaps, labels) are listed as `changed` too, with
source `gpuconf`: the report then names every leaf where the effective values of the draft differ from the user's.
That is checked, not assumed: the draft is rendered, and the two effective values trees are compared leaf by leaf.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .. import catalog
from ..escape import term_text
from ..findings import dotted
from . import sources as S

OUTCOMES = ("mapped", "override", "default", "dropped", "changed")
#: Keys of NVIDIA's k8s-device-plugin chart (its values.yaml) that people put into GPU Operator values files; the
#: operator's chart has none of them at the top level, so Helm ignored them.
DEVICE_PLUGIN_CHART_KEYS = {
    "compatWithCPUManager": "devicePlugin.env (PASS_DEVICE_SPECS)",
    "migStrategy": "mig.strategy",
    "failOnInitError": "devicePlugin.env (FAIL_ON_INIT_ERROR)",
    "deviceListStrategy": "devicePlugin.env (DEVICE_LIST_STRATEGY)",
    "deviceIDStrategy": "devicePlugin.env (DEVICE_ID_STRATEGY)",
    "nvidiaDriverRoot": "driver.enabled / the toolkit's paths",
    "gfd": "gfd (the operator runs GPU feature discovery itself)",
    "nfd": "nfd.enabled",
    "runtimeClassName": "operator.runtimeClass",
    "legacyDaemonsetAPI": None,
    "allowDefaultNamespace": None,
    "namespaceOverride": None,
    "fullnameOverride": None,
}
#: Operands of the chart (values blocks that deploy a DaemonSet): `tolerations` under one of them is a common slip.
OPERANDS = ("driver", "toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter",
            "validator", "vgpuManager", "vgpuDeviceManager", "vfioManager", "sandboxDevicePlugin", "ccManager",
            "kataManager", "gds", "gdrcopy")
TIME_SLICING = "nvidia.com/gpu"
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
#: Paths of the toolkit's containerd environment gpuconf writes from spec.cluster (render/platform.py).
RUNTIME_ENV = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG_SOURCE")
#: When no nodes tell the pools' GPU: the model a values-only draft names, marked "not inferred" (--gpu picks one).
PLACEHOLDER_GPU = "A10"


@dataclass
class Setting:
    """One values path the user set (or gpuconf sets), and what becomes of it."""

    path: tuple
    value: Any
    source: str
    outcome: str = ""
    to: str | None = None
    why: str = ""

    def as_dict(self) -> dict:
        """The JSON row of --report."""
        return {"path": dotted(self.path), "outcome": self.outcome, "to": self.to, "why": self.why,
                "source": self.source, "value": _json_safe(self.value)}


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@dataclass
class Adopted:
    """The drafted intent, the outcomes, and the validation of the draft."""

    text: str
    settings: list[Setting]
    chart_version: str
    inputs: list[str]
    findings: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parent_chart: bool = False
    configs: list[dict] = field(default_factory=list)  # each device-plugin and MIG config and what became of it
    first_sync: list | None = None  # with --nodes: the impact plan of the draft's first sync (impact/installation.py)
    first_sync_equivalent: bool | None = None  # ... and whether it is equivalent (values equal, nothing above none)

    @property
    def errors(self) -> list:
        """Validation errors of the draft (a gpuconf bug when not empty)."""
        return [f for f in self.findings if f.severity == "error"]

    def counts(self) -> dict[str, int]:
        """Settings per outcome."""
        return {o: sum(1 for s in self.settings if s.outcome == o) for o in OUTCOMES}

    def report(self) -> dict:
        """The --report JSON document."""
        return {"chartVersion": self.chart_version, "inputs": self.inputs, "parentChart": self.parent_chart,
                "counts": self.counts(), "settings": [s.as_dict() for s in self.settings],
                "configs": self.configs,
                "notes": self.notes, "draftValid": not self.errors,
                **({"firstSync": self.first_sync, "firstSyncEquivalent": self.first_sync_equivalent}
                   if self.first_sync is not None else {})}

    def summary(self) -> list[str]:
        """The text summary for stderr: counts, then every dropped and changed path; each value escaped for a
        terminal or a CI log (term_text: a line break in a value cannot start a line of its own)."""
        counts = self.counts()
        lines = [f"gpuconf: {len(self.settings)} values paths: " +
                 ", ".join(f"{counts[o]} {o}" for o in OUTCOMES) + f" (target chart {self.chart_version})"]
        for s in self.settings:
            if s.outcome in ("dropped", "changed"):
                lines.append(f"  {s.outcome} {term_text(dotted(s.path))} ({term_text(s.source)}): {term_text(s.why)}")
        lines += [f"gpuconf: note: {term_text(n)}" for n in self.notes]
        return lines


# --- the chart's keys ------------------------------------------------------------------------------------------


def path_status(facts: catalog.ChartFacts, path: tuple) -> str:
    """known, template-only, open-map, dead or unknown: what a values path is to a chart version."""
    text = ".".join(str(p) for p in path)
    if text in facts.dead_keys:
        return "dead"
    node: Any = facts.defaults
    matched: list = []
    for key in path:
        if isinstance(node, dict) and key in node:
            matched.append(key)
            node = node[key]
        else:
            break
    if len(matched) == len(path):
        return "known"
    if any(text == key or text.startswith(key + ".") for key in facts.template_only_keys):
        return "template-only"
    prefix = ".".join(matched)
    if matched and (isinstance(node, dict) or node is None) and (
            node == {} or matched[-1] in facts.free_form_map_keys
            or any(prefix == p or prefix.startswith(p + ".") for p in facts.free_form_map_paths)
            or any(prefix == p or prefix.startswith(p + ".") for p in facts.verbatim_blocks)):
        return "open-map"
    return "unknown"


def _unknown_why(facts: catalog.ChartFacts, path: tuple) -> str:
    head = path[0]
    if len(path) == 1 and head in DEVICE_PLUGIN_CHART_KEYS:
        where = DEVICE_PLUGIN_CHART_KEYS[head]
        return (f"a key of NVIDIA's k8s-device-plugin chart, not of the GPU Operator chart {facts.version}: Helm "
                "ignored it" + (f"; the operator's equivalent is {where}" if where else ""))
    if head in OPERANDS and len(path) >= 2 and path[1] in ("tolerations", "nodeSelector", "affinity"):
        return (f"the GPU Operator chart {facts.version} has no {path[1]} per operand: Helm ignored it; "
                f"daemonsets.{path[1]} applies to every operand")
    guess = catalog.suggest_path(facts.version, ".".join(str(p) for p in path))
    return (f"not a key of GPU Operator chart {facts.version}: Helm ignored it"
            + (f" (did you mean {guess}?)" if guess else ""))


# --- device-plugin configs -------------------------------------------------------------------------------------


@dataclass
class PluginConfig:
    """One device-plugin config (a key of the ConfigMap): the sharing profile it amounts to, if gpuconf can say it."""

    key: str
    source: str
    profile: dict | None  # a sharingProfiles entry, or None when not expressible
    why: str = ""  # why not expressible


def _embedded(text: str) -> tuple[Any, str]:
    """A config file held in a ConfigMap's data (YAML): (its value, "") or (None, why it is not readable): a syntax
    error, nesting deeper than the parser recurses, a number Python does not read (issue 29, item 8)."""
    import yaml

    try:
        return yaml.safe_load(text), ""
    except yaml.YAMLError as exc:
        return None, f"not YAML: {' '.join(str(exc).split())[:120]}"
    except RecursionError:
        return None, "not YAML that gpuconf reads: nested too deep"
    except (ValueError, TypeError, OverflowError) as exc:
        return None, f"not YAML that gpuconf reads: {type(exc).__name__}: {' '.join(str(exc).split())[:120]}"


def plugin_profile(text: str) -> tuple[dict | None, str]:
    """The sharing profile of a device-plugin config file (k8s-device-plugin config v1), or None and why not."""
    doc, problem = _embedded(text)
    if problem:
        return None, problem
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        return None, "not a device-plugin config (a map with version: v1)"
    extra = sorted(k for k in doc if k not in ("version", "sharing", "flags"))
    sharing = doc.get("sharing") or {}
    if not isinstance(sharing, dict):
        return None, "sharing is not a map"
    kinds = [k for k in ("timeSlicing", "mps") if sharing.get(k)]
    if not kinds:
        return {"exclusive": {}}, ""
    if len(kinds) > 1:
        return None, "both timeSlicing and mps"
    kind = kinds[0]
    body = sharing[kind]
    resources = body.get("resources") if isinstance(body, dict) else None
    if not (isinstance(resources, list) and len(resources) == 1 and isinstance(resources[0], dict)
            and resources[0].get("name") == TIME_SLICING and isinstance(resources[0].get("replicas"), int)
            and not isinstance(resources[0].get("replicas"), bool) and resources[0]["replicas"] >= 2
            and set(resources[0]) <= {"name", "replicas"}):
        return None, (f"{kind} of resources other than one {TIME_SLICING} entry with replicas >= 2 (per-resource or "
                      "MIG sharing, devices lists)")
    replicas = resources[0]["replicas"]
    rename = body.get("renameByDefault", False)
    if not isinstance(rename, bool):
        return None, "renameByDefault is not a boolean"
    if kind == "mps":
        if replicas > 48:
            return None, "MPS replicas above the device plugin's limit of 48"
        return {"mps": {"replicas": replicas, "renameByDefault": rename}}, ", ".join(extra)
    fail = body.get("failRequestsGreaterThanOne", False)
    if not isinstance(fail, bool):
        return None, "failRequestsGreaterThanOne is not a boolean"
    ts: dict = {"replicas": replicas}
    if rename:
        ts["renameByDefault"] = True
    if fail:
        ts["failRequestsGreaterThanOne"] = True
    return {"timeSlicing": ts}, ""


MIG_LABEL = "nvidia.com/mig.config"


def mig_configs(text: str) -> tuple[dict[str, tuple[dict | None, str]], str]:
    """The named configs of a mig-parted config file (version v1, mig-configs): name -> (MIG layout per GPU, or None
    and why not), and why the file itself cannot be read ("" when it can)."""
    doc, problem = _embedded(text)
    if problem:
        return {}, problem
    configs = doc.get("mig-configs") if isinstance(doc, dict) else None
    if not isinstance(configs, dict):
        return {}, "not a mig-parted config (a map with version: v1 and mig-configs)"
    out: dict[str, tuple[dict | None, str]] = {}
    for name, entries in configs.items():
        name = str(name)
        if not (isinstance(entries, list) and len(entries) == 1 and isinstance(entries[0], dict)
                and entries[0].get("devices") == "all"):
            out[name] = (None, "not one entry for all devices (per-device or per-model layouts)")
            continue
        entry = entries[0]
        if entry.get("mig-enabled") is False:
            out[name] = ({}, "")
            continue
        devices = entry.get("mig-devices")
        if entry.get("mig-enabled") is not True or not isinstance(devices, dict) or not devices or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in devices.values()):
            out[name] = (None, "mig-enabled without a mig-devices map of profile counts")
            continue
        out[name] = ({str(k): v for k, v in devices.items()}, "")
    return out, ""


def _dns(text: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return name[:63].rstrip("-") or "config"


# --- comparing effective values ----------------------------------------------------------------------------------

ABSENT = object()


def same(a: Any, b: Any) -> bool:
    """Equal as Helm's values are (JSON numbers: 1 and 1.0 are one number; true is no number)."""
    return json.dumps(_numbers(a), sort_keys=True) == json.dumps(_numbers(b), sort_keys=True)


def _numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    return value


def differing(old: dict, new: dict) -> list[tuple[tuple, Any, Any]]:
    """(path, old, new) of every leaf where two effective values trees differ (ABSENT where a side lacks it)."""
    a, b = dict(S.leaves(old)), dict(S.leaves(new))
    out = []
    for path in sorted(set(a) | set(b), key=lambda p: [str(k) for k in p]):
        left, right = a.get(path, ABSENT), b.get(path, ABSENT)
        if left is ABSENT or right is ABSENT or not same(left, right):
            out.append((path, left, right))
    return out


def shown(value: Any) -> str:
    """A value in a message."""
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(_json_safe(value), sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."

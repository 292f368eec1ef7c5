"""Nodes read back from `kubectl describe nodes` text: the GPU Operator's must-gather writes its GPU nodes only that
way (gpu_nodes.descr, from `describe nodes -l nvidia.com/gpu.present=true`), and no node YAML.

kubectl's describe layout (k8s.io/kubectl pkg/describe, describeNode): one `Title:` per line at the left margin,
value columns aligned; multi-value fields (Labels, Annotations, Taints) go on under the value column; sections
(Conditions, Capacity, Allocatable, System Info, Events) hold indented `name: value` lines or a table whose columns
are separated by two or more spaces; objects are separated by blank lines and each starts with `Name:`. The parts
the audit reads become a Node object of the API's shape; the rest is dropped.
"""

from __future__ import annotations

import re
from typing import Iterator

_SPLIT = re.compile(r"\s{2,}")
#: System Info titles -> status.nodeInfo keys.
SYSTEM_INFO = {"Kernel Version": "kernelVersion", "OS Image": "osImage", "Operating System": "operatingSystem",
               "Architecture": "architecture", "Container Runtime Version": "containerRuntimeVersion",
               "Kubelet Version": "kubeletVersion", "Kube-Proxy Version": "kubeProxyVersion"}
_TAINT = re.compile(r"(?P<key>[^=:\s]+)(?:=(?P<value>[^:\s]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)")


def nodes(text: str) -> Iterator[tuple[dict, list[tuple[str, str]]]]:
    """Each described node as (a Node object, its events as (reason, message))."""
    block: list[str] = []
    for line in text.splitlines():
        if line.startswith("Name:") and block:
            yield _node(block)
            block = []
        block.append(line)
    if any(line.startswith("Name:") for line in block):
        yield _node(block)


def _node(lines: list[str]) -> tuple[dict, list[tuple[str, str]]]:
    fields: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if not line.strip():
            continue
        if not line[0].isspace():
            title, sep, value = line.partition(":")
            if sep:
                current = title.strip()
                fields[current] = [value.strip()] if value.strip() else []
                continue
        if current is not None:
            fields[current].append(line.rstrip())
    meta: dict = {"name": (fields.get("Name") or [""])[0]}
    labels = {}
    for item in fields.get("Labels", []):
        item = item.strip()
        if item and item != "<none>":
            key, _, value = item.partition("=")
            labels[key] = value
    annotations = {}
    for item in fields.get("Annotations", []):
        item = item.strip()
        if item and item != "<none>":
            key, _, value = item.partition(": ")
            annotations[key] = value
    meta.update(labels=labels, annotations=annotations)
    spec: dict = {}
    taints = [m.groupdict() for item in fields.get("Taints", []) if (m := _TAINT.fullmatch(item.strip()))]
    if taints:
        spec["taints"] = [{k: v for k, v in t.items() if v is not None} for t in taints]
    if (fields.get("Unschedulable") or ["false"])[0] == "true":
        spec["unschedulable"] = True
    status: dict = {"conditions": [], "nodeInfo": {}}
    for row in fields.get("Conditions", []):
        cells = _SPLIT.split(row.strip())
        if len(cells) >= 2 and cells[0] not in ("Type", "----"):
            condition = {"type": cells[0], "status": cells[1]}
            if len(cells) >= 5:
                condition["reason"] = cells[4]
            if len(cells) >= 6:
                condition["message"] = cells[5]
            status["conditions"].append(condition)
    for part in ("Capacity", "Allocatable"):
        values = {}
        for row in fields.get(part, []):
            name, sep, value = row.strip().partition(":")
            if sep:
                values[name.strip()] = value.strip()
        status[part.lower()] = values
    for row in fields.get("System Info", []):
        title, sep, value = row.strip().partition(":")
        if sep and title.strip() in SYSTEM_INFO:
            status["nodeInfo"][SYSTEM_INFO[title.strip()]] = value.strip()
    found = events("Events:\n" + "\n".join(fields.get("Events", [])))
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}, found


def events(text: str) -> list[tuple[str, str]]:
    """The Warning events of one object's `kubectl describe` text (its `Events:` table), as (reason, message)."""
    out = []
    inside = False
    for line in text.splitlines():
        if line.startswith("Events:"):
            inside = True
            continue
        if inside:
            if line and not line[0].isspace():
                break
            cells = _SPLIT.split(line.strip())
            if len(cells) >= 5 and cells[0] == "Warning":
                out.append((cells[1], "  ".join(cells[4:])))
    return out

"""A real H200 node's readings (tests/fixtures/h200-real/, verbatim copies) as label maps and NodeLists.

GFD's labels are taken as the node reported them; only `nvidia.com/gpu.count` is scaled to the node's GPUs (a node
of 8 differs from the measured one of 1 only there, reference README). What GFD does not write (NFD's PCI label,
the operator's gpu.present and deploy labels, the kubelet's capacity) is added as those publishers write it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent / "fixtures" / "h200-real"
_BLOCK = re.compile(r"^##### GFD (?P<args>.+?) #####$")


def _labels(lines: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in lines if line.startswith("nvidia.com/"))


def gfd_runs() -> dict[str, dict]:
    """Every GFD run: name -> {"labels": {...}, "config": the device-plugin config text it was fed or None}.

    Names: "none" (gfd-labels.txt), "single" and "mixed" (gfd-strategies.txt), and the config file's stem for each
    run of gfd-sharing.txt (dp-ts4-ab3e8595, ...)."""
    runs = {"none": {"labels": _labels((HERE / "gfd-labels.txt").read_text().splitlines()), "config": None}}
    for name in ("gfd-strategies.txt", "gfd-sharing.txt"):
        current = None
        for line in (HERE / name).read_text().splitlines():
            head = _BLOCK.match(line)
            if head:
                config = re.search(r"--config-file (\S+)\.yaml", head["args"])
                key = config.group(1) if config else re.search(r"--mig-strategy=(\w+)", head["args"]).group(1)
                current = runs.setdefault(key, {"labels": {}, "config": [] if config else None})
            elif current is not None and line.startswith("# | "):
                current["config"].append(line[4:])
            elif current is not None and line.startswith("nvidia.com/"):
                current["labels"].update(_labels([line]))
    for run in runs.values():
        if isinstance(run["config"], list):
            run["config"] = "\n".join(run["config"]) + "\n"
    return runs


def mig_profiles() -> dict[str, dict]:
    """NVML's GPU-instance profiles by name (1g.18gb, ...), from mig.json."""
    (device,) = json.loads((HERE / "mig.json").read_text())["devices"]
    return {p["name"].removeprefix("MIG "): p for p in device["gpu_instance_profiles_by_index"] if p.get("name")}


def node(name: str, gfd: dict[str, str], gpus: int = 8, labels: dict[str, str] | None = None,
         capacity: dict[str, str] | None = None, taints: list[dict] | None = None) -> dict:
    """A Node as `kubectl get nodes -o json` prints it: the real GFD labels (gpu.count scaled), NFD's PCI label,
    the operator's gpu.present and operand deploy labels, the kubelet's capacity of whole GPUs unless given."""
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true"}
    for operand in ("container-toolkit", "dcgm", "dcgm-exporter", "device-plugin", "driver",
                    "gpu-feature-discovery", "mig-manager", "node-status-exporter", "operator-validator"):
        all_labels[f"nvidia.com/gpu.deploy.{operand}"] = "true"
    all_labels.update(gfd)
    all_labels["nvidia.com/gpu.count"] = str(gpus)
    all_labels.update(labels or {})
    resources = capacity if capacity is not None else {"nvidia.com/gpu": str(gpus)}
    base = {"cpu": "192", "memory": "2112000000Ki", "pods": "110"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": list(taints)} if taints else {},
        "status": {"capacity": {**base, **resources}, "allocatable": {**base, **resources}, "conditions": [ready],
                   "nodeInfo": {"kubeletVersion": "v1.33.4", "operatingSystem": "linux", "architecture": "amd64",
                                "osImage": "Ubuntu 24.04.2 LTS", "containerRuntimeVersion": "containerd://2.0.5",
                                "kernelVersion": "6.8.0-60-generic"}},
    }


def nodelist(items: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}

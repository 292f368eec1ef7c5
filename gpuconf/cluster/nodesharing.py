"""One node's sharing, read from GFD's labels and its allocatable resources (the importer's reading of a node).

MIG comes from the mixed strategy's nvidia.com/mig-<profile>.count labels (layout = count / GPUs) or from the single
strategy's "<model>-MIG-<profile>" product (assumed the all-<profile> preset unless the node's mig.config names a
preset); otherwise GFD's sharing-strategy and replicas labels tell time-slicing or MPS, renamed when the node advertises
nvidia.com/gpu.shared; exclusive when none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import catalog
from . import nodefacts as N

#: A DNS-1123 label (a pool or profile name the draft can keep as it is).
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True)
class Sharing:
    """A sharing profile read off a node: kind plus its parameters (hashable, so nodes group by it)."""

    kind: str  # exclusive | time-slicing | mps | mig
    replicas: int = 1
    rename: bool = False
    layout: tuple[tuple[str, int], ...] = ()
    note: str = ""  # what had to be assumed
    fail: bool = False  # time-slicing's failRequestsGreaterThanOne: on no label, only in the config key's hash

    def profile(self, model: catalog.GpuModel) -> dict:
        """The intent's sharingProfiles entry."""
        if self.kind == "time-slicing":
            return {"timeSlicing": self._time_slicing()}
        if self.kind == "mps":
            return {"mps": {"replicas": self.replicas, **({} if self.rename else {"renameByDefault": False})}}
        if self.kind == "mig":
            preset = self.preset(model)
            out: dict = {"mig": {"preset": preset} if preset else {"layout": dict(self.layout)}}
            if self.replicas > 1:
                out["timeSlicing"] = self._time_slicing()
            return out
        return {"exclusive": {}}

    def _time_slicing(self) -> dict:
        return {"replicas": self.replicas, **({"renameByDefault": True} if self.rename else {}),
                **({"failRequestsGreaterThanOne": True} if self.fail else {})}

    def preset(self, model: catalog.GpuModel) -> str | None:
        """The mig-manager preset (all-balanced, all-<profile>) the MIG layout equals, if any."""
        layout = dict(self.layout)
        return next((name for name, p in catalog.mig_presets(model).items() if dict(p) == layout), None)

    def name(self, model: catalog.GpuModel) -> str:
        """A profile name (DNS-1123 label)."""
        if self.kind == "exclusive":
            return "exclusive"
        if self.kind == "time-slicing":
            return f"ts-x{self.replicas}" + ("-shared" if self.rename else "")  # -shared: nvidia.com/gpu.shared
        if self.kind == "mps":
            return f"mps-x{self.replicas}" + ("" if self.rename else "-gpu")  # MPS renames by default
        preset = self.preset(model)
        parts = preset or "-".join(f"{n}x{p}" for p, n in self.layout)
        name = dns(f"mig-{parts}") + (f"-ts-x{self.replicas}" if self.replicas > 1 else "")
        return name[:63].rstrip("-")


def read_sharing(node: N.NodeFacts, model: catalog.GpuModel) -> tuple[Sharing, int | None]:
    """The node's sharing and GPUs per node, from GFD's labels and the allocatable resources."""
    labels = node.labels
    renamed = node.units("nvidia.com/gpu.shared") is not None
    # Mixed strategy: per-profile counts; the full-GPU count stays on nvidia.com/gpu.count.
    by_label = {p.replace("+", "."): p for p in model.mig_profiles}
    counts: dict[str, int] = {}
    replicas = 1
    for key, value in labels.items():
        if key.startswith("nvidia.com/mig-") and key.endswith(".count") and value.isdigit() and int(value) > 0:
            label_profile = key[len("nvidia.com/mig-"):-len(".count")]
            profile = by_label.get(label_profile)
            if profile is not None:
                counts[profile] = int(value)
                replicas = max(replicas, node.label_int(N.mig_resource_label(profile, "replicas")) or 1)
    gpus = node.label_int(N.GFD_COUNT)
    if counts:
        note = ""
        if not gpus or any(c % gpus for c in counts.values()):
            note = ("not inferred: the MIG counts do not divide by nvidia.com/gpu.count, so the layout is the "
                    "node's total; fix it and gpusPerNode")
            gpus = gpus or 1
        layout = tuple(sorted((p, c // gpus) for p, c in counts.items()))
        return Sharing("mig", replicas, renamed, layout, note), gpus
    product = labels.get(N.GFD_PRODUCT, "")
    single = N.mig_profile_of_product(product)
    if single is not None:
        profile = next((p for p in model.mig_profiles if N.sanitise(p) == single or p == single), None)
        replicas = node.label_int(N.GFD_REPLICAS) or 1
        if profile is None:
            return Sharing("exclusive", note=f"MIG profile {single!r} is not one of {model.id}'s"), None
        devices = node.label_int(N.GFD_COUNT) or 0
        # The MIG config label names the layout when it is one of mig-manager's presets (all-1g.10gb, ...).
        preset = catalog.mig_presets(model).get(labels.get("nvidia.com/mig.config", ""))
        if preset is not None and set(preset) == {profile}:
            per_gpu, note = preset[profile], ""
        else:
            per_gpu = model.mig_profiles[profile].max_instances
            note = f"assumed the all-{profile} layout ({per_gpu} per GPU): the single strategy shows only the total"
        gpus = devices // per_gpu if devices and devices % per_gpu == 0 else None
        return Sharing("mig", replicas, renamed, ((profile, per_gpu),), note), gpus
    replicas = node.label_int(N.GFD_REPLICAS) or 1
    strategy = labels.get(N.GFD_SHARING)
    note = ""
    if "-MIG-INVALID" in product:
        note = ("GFD reports MIG-INVALID (the single strategy with mixed profiles, or MIG enabled without "
                "instances): sharing not inferred")
    if strategy is None and replicas > 1:
        strategy, note = "time-slicing", "GFD publishes no sharing-strategy label here: time-slicing assumed"
    if gpus is None:  # no GFD count: the allocatable GPUs, divided by the replicas
        units = node.units("nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu")
        gpus = units // replicas if units and units % replicas == 0 else None
    if strategy in ("time-slicing", "mps") and replicas > 1:
        return Sharing(strategy, replicas, renamed, note=note), gpus
    return Sharing("exclusive", note=note), gpus


def pool_taints(node: N.NodeFacts) -> tuple[tuple[str, str, str], ...]:
    """The node's own taints (sorted), leaving out those Kubernetes and cloud providers set (SYSTEM_TAINT_PREFIXES)."""
    return tuple(sorted(t for t in node.taints if not t[0].startswith(N.SYSTEM_TAINT_PREFIXES)))


def dns(text: str) -> str:
    """The text as a DNS-1123 label: lower case, runs of other characters as one "-", at most 63 characters."""
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return name[:63].rstrip("-")

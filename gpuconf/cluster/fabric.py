"""The audit of the multi-node NVLink fabric (pools[].nvlink): GA160-GA165.

A pool with `nvlink` is the compute trays of NVLink racks (GB200 NVL72: 18 trays of 4 GPUs). Three sources tell
whether each tray is in its rack's NVLink domain and can take part in a ComputeDomain:

* the node's clique label, `nvidia.com/gpu.clique: <cluster UUID>.<clique id>`, which GPU Feature Discovery
  publishes on an NVLink fabric system (../shared/reference/nvidia-formats-facts.md §2.1; DRV v0.4.1
  docs/prerequisites.md) and, on the GPUCluster stack without GFD, the operator's kubelet plugin (gpu-operator v26.7.0
  manifests/state-dra-driver/0500_daemonset.yaml: GPU_CLIQUE_LABEL_ENABLED "true"), from the GPUs' fabric info, as
  the DRA driver's kubelet plugin reads it too (DRV v0.4.1 cmd/compute-domain-kubelet-plugin/nvlib.go
  getCliqueID: no clique when the fabric is not attached or its registration has not completed). The trays of one
  rack share one clique; trays of one rack that report two cliques are a split fabric;
* the ResourceSlice the ComputeDomain kubelet plugin publishes for its node (driver compute-domain.nvidia.com, pool
  and nodeName the node's name, one slice): a `channel-0` device (attributes type=channel, id=0) and a `daemon-0`
  device (type=daemon), at start (DRV v0.4.1 cmd/compute-domain-kubelet-plugin/driver.go, deviceinfo.go). A tray
  without it gets no IMEX daemon and no channel;
* with the pods (--pods, --must-gather, or read live): the kubelet plugin's pod on each tray (the chart's DaemonSet
  <release>-kubelet-plugin, pods labelled `dra-driver-nvidia-gpu-component: kubelet-plugin`, container
  compute-domains: DRV v0.4.1 templates/kubeletplugin.yaml, _helpers.tpl selectorLabels; on the GPUCluster stack the
  operator's DaemonSet nvidia-dra-driver-kubelet-plugin, app=nvidia-dra-driver-kubelet-plugin, the same container:
  gpu-operator v26.7.0 manifests/state-dra-driver/0500_daemonset.yaml) and the IMEX daemon pods
  of the ComputeDomains (labelled `resource.nvidia.com/computeDomain: <uid>`, container compute-domain-daemon:
  templates/compute-domain-daemon.tmpl.yaml). A daemon pod exists only where a ComputeDomain's workload runs, so
  only an unready one is a finding; the kubelet plugin belongs on every tray.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from . import operands as O
from .auditresult import ERROR, INFO, WARNING, Drift
from .nodefacts import GFD_PRODUCT, NodeFacts, printable
from ..dra import enabled as _dra_enabled

#: Trays named in a pool-level finding's evidence, at most.
LISTED = 20


@dataclass
class _Tray:
    """What the fabric audit keeps of one tray: its clique and rack label values, and its findings (the node's own
    list, so that pod findings added later count the node as drifting)."""

    name: str
    clique: str | None
    rack: str | None
    ready: bool
    found: list


def _label(labels: Mapping[str, Any], key: str | None) -> str | None:
    value = labels.get(key) if key else None
    return printable(value) if type(value) is str and value else None


def _names(nodes: list[str]) -> list[str]:
    ordered = sorted(nodes)
    return ordered[:LISTED] + ([f"... ({len(ordered) - LISTED} more)"] if len(ordered) > LISTED else [])


class Fabric:
    """Feed each tray of an NVLink pool with add(); finish(pool) gives the pool's fabric findings."""

    def __init__(self, plan: Any, slices: Mapping[str, list] | None) -> None:
        from ..render import nvlink

        self.plan = plan
        self.nvlink = {p.name: p.pool.nvlink for p in nvlink.pools(plan)}
        self.declared = {p.name: p.pool.nodes for p in nvlink.pools(plan)}
        #: The ComputeDomain driver's devices per node (cluster.slices.Published.compute_domains), None: not read.
        self.slices = slices
        self.namespace = nvlink.namespace(plan)
        # The kubelet plugin's DaemonSet and the label selecting its pods: the chart's (a release beside the operator,
        # templates/kubeletplugin.yaml) or the operator's own on the GPUCluster stack (operands.OPERATOR_DRA_APP).
        #: Who sets the clique label: GFD on the device-plugin stack (DRV v0.4.1 docs/prerequisites.md, install.md
        #: "Validate clique node labels"); on the GPUCluster stack, which runs no GFD, the operator's kubelet plugin
        #: (gpu-operator v26.7.0 manifests/state-dra-driver/0500_daemonset.yaml GPU_CLIQUE_LABEL_ENABLED "true").
        self.gfd = not _dra_enabled(plan.intent)
        if nvlink.release(plan):
            self.daemonset = f"{nvlink.RELEASE_NAME}-kubelet-plugin"
            self.selector = "=".join(O.DRA_COMPONENT)
        else:
            self.daemonset, self.selector = O.OPERATOR_DRA_APP, f"app={O.OPERATOR_DRA_APP}"
        self.clique_label = nvlink.CLIQUE_LABEL
        self.driver = nvlink.CD_DRIVER
        self.trays: dict[str, list[_Tray]] = {name: [] for name in self.nvlink}

    @classmethod
    def of(cls, plan: Any, slices: Mapping[str, list] | None) -> "Fabric | None":
        """The fabric audit of a plan with NVLink pools; None without."""
        return cls(plan, slices) if any(p.pool.nvlink is not None for p in plan.pools) else None

    # -- one tray -----------------------------------------------------------------------------------------------

    def add(self, pool: str, node: NodeFacts, found: list) -> None:
        """A node of one pool: GA160 and GA161 on its own, appended to `found` (the node's findings)."""
        fabric = self.nvlink.get(pool)
        if fabric is None:
            return
        labels, name = node.labels, node.name
        clique, rack = _label(labels, self.clique_label), _label(labels, fabric.rack_label)
        self.trays[pool].append(_Tray(name, clique, rack, node.is_ready and not node.cordoned, found))

        def add(severity: str, code: str, message: str, evidence: dict, hint: str) -> None:
            found.append(Drift(severity, code, name, pool, message, evidence, hint))

        if clique is None:
            evidence: dict[str, Any] = {self.clique_label: None}
            if fabric.rack_label:
                evidence[fabric.rack_label] = rack
            fabric_hint = ("on the node, `nvidia-smi -q` under Fabric must say State Completed, Status Success and "
                           "a CliqueId; if not, check the NVLink fabric (the fabric manager and the rack's NVLink "
                           "switch trays)")
            if not self.gfd:
                hint = (f"the operator's kubelet plugin ({self.daemonset}, container compute-domains) sets the "
                        f"clique label once the node's GPUs have joined the NVLink fabric: {fabric_hint}")
            elif _label(labels, GFD_PRODUCT) is None:
                evidence[GFD_PRODUCT] = None
                hint = ("GPU Feature Discovery has not labelled the node at all (no nvidia.com/gpu.product): check "
                        "its gpu-feature-discovery pod first")
            else:
                evidence[GFD_PRODUCT] = _label(labels, GFD_PRODUCT)
                hint = ("GPU Feature Discovery publishes the clique once the node's GPUs have joined the NVLink "
                        f"fabric: {fabric_hint}")
            add(ERROR, "GA160", f"no NVLink clique label {self.clique_label}: the tray is in no NVLink domain, so "
                                "no ComputeDomain can span it", evidence, hint)
        if fabric.rack_label and rack is None:
            add(WARNING, "GA160", f"no rack label {printable(fabric.rack_label)}: the tray's rack is unknown, so a "
                                  "split of its rack's NVLink domain cannot be told",
                {fabric.rack_label: None, self.clique_label: clique},
                f"label the node with its rack: pools[].nvlink.rackLabel says your provisioning sets "
                f"{printable(fabric.rack_label)}")
        if self.slices is not None:
            self._published(node, add)

    def _published(self, node: NodeFacts, add: Any) -> None:
        """GA161: the node's compute-domain.nvidia.com slice and its channel device."""
        devices = self.slices.get(node.name)
        where = (f"check the {self.daemonset} pod on the node (container compute-domains; `kubectl -n "
                 f"{self.namespace} get pods -l {self.selector} -o wide --field-selector "
                 f"spec.nodeName={printable(node.name)}`) and its log")
        if not node.is_ready:
            where += "; the node is NotReady (GA113), which stops the plugin too"
        if not devices:
            add(ERROR, "GA161", f"no ResourceSlice of {self.driver} names the node: ComputeDomains can run no IMEX "
                                "daemon and give no channel on the tray", {"driver": self.driver, "devices": 0},
                "the ComputeDomain kubelet plugin publishes the node's slice (channel-0 and daemon-0) when it "
                f"starts: {where}")
            return
        types = [d["attributes"].get(self.driver, {}).get("type") for d in devices]
        if "channel" not in types:
            add(ERROR, "GA161", f"the node's {self.driver} ResourceSlice publishes no channel device: no workload "
                                "on the tray can claim a ComputeDomain channel",
                {"driver": self.driver, "devices": [printable(d.get("name") or "?") for d in devices][:LISTED]},
                "the kubelet plugin publishes channel-0 (type=channel) beside daemon-0 (type=daemon); a slice "
                f"without it was written by something else or an older plugin: {where}")

    # -- the pool -----------------------------------------------------------------------------------------------

    def finish(self, pool: str, matched: int, operands: Any = None) -> list[Drift]:
        """The pool's clique checks (GA162, GA163), and with the pods each tray's daemons (GA164, GA165: added to
        the tray's own findings). Returns the pool-level findings."""
        fabric = self.nvlink.get(pool)
        if fabric is None:
            return []
        trays = self.trays[pool]
        out = self._cliques(pool, fabric, trays, max(matched, self.declared[pool]))
        if operands is not None:
            out += self._pods(pool, trays, operands)
        return out

    def _cliques(self, pool: str, fabric: Any, trays: list[_Tray], nodes: int) -> list[Drift]:
        per_rack = fabric.trays_per_rack
        cliques: dict[str, list[str]] = {}
        for tray in trays:
            if tray.clique is not None:
                cliques.setdefault(tray.clique, []).append(tray.name)
        out: list[Drift] = []
        split: set[str] = set()

        def count(members: dict[str, list[str]]) -> dict[str, Any]:
            return {c: {"trays": len(n), "nodes": _names(n)} for c, n in sorted(members.items())}

        if fabric.rack_label:
            racks: dict[str, dict[str, list[str]]] = {}
            for tray in trays:
                if tray.rack is not None and tray.clique is not None:
                    racks.setdefault(tray.rack, {}).setdefault(tray.clique, []).append(tray.name)
            for rack, members in sorted(racks.items()):
                if len(members) < 2:
                    continue
                split.update(members)
                main = max(sorted(members), key=lambda c: len(members[c]))
                apart = [n for c, names in members.items() if c != main for n in names]
                out.append(Drift(
                    ERROR, "GA162", "", pool,
                    f"rack {rack}: its trays report {len(members)} NVLink cliques "
                    f"({' and '.join(str(len(members[c])) for c in sorted(members, key=lambda c: -len(members[c])))}"
                    f" trays): the rack's NVLink domain is split",
                    {fabric.rack_label: rack, "cliques": count(members)},
                    f"the trays of one rack share one NVLink domain; {', '.join(_names(apart))} left the rack's "
                    f"main clique: on them, `nvidia-smi -q` under Fabric shows the CliqueId and the fabric's State "
                    f"and Status (check the fabric manager and the NVLink switch trays), or fix their "
                    f"{printable(fabric.rack_label)} label if they are in another rack"))
        else:
            racks_at_most = -(-nodes // per_rack)
            if len(cliques) > racks_at_most:
                split.update(cliques)
                out.append(Drift(
                    ERROR, "GA162", "", pool,
                    f"{len(cliques)} NVLink cliques among the pool's {len(trays)} trays, which fill at most "
                    f"{racks_at_most} rack{'s' if racks_at_most != 1 else ''} of {per_rack}: a rack's NVLink "
                    f"domain is split", {"cliques": count(cliques), "traysPerRack": per_rack},
                    "the trays of one rack share one clique; those of a small clique have left their rack's "
                    "NVLink domain (on them, `nvidia-smi -q` under Fabric shows the CliqueId, State and Status); "
                    "set pools[].nvlink.rackLabel to a label naming each node's rack, and the audit names the "
                    "split rack"))
        for clique, names in sorted(cliques.items()):
            if len(names) > per_rack:
                split.add(clique)
                out.append(Drift(
                    ERROR, "GA162", "", pool,
                    f"NVLink clique {clique} holds {len(names)} trays, a rack of the pool has {per_rack}",
                    {"clique": clique, "trays": len(names), "traysPerRack": per_rack, "nodes": _names(names)},
                    "pools[].nvlink.traysPerRack is below the trays one NVLink domain joins (18 in a GB200 or "
                    "GB300 NVL72 rack), or trays of several racks report one clique id: fix traysPerRack, or check "
                    "the fabric manager's partitions"))
        if self.declared[pool] % per_rack == 0:  # the pool counts whole racks: each clique is a whole rack
            for clique, names in sorted(cliques.items()):
                if len(names) < per_rack and clique not in split:
                    out.append(Drift(
                        WARNING, "GA163", "", pool,
                        f"NVLink clique {clique} holds {len(names)} of the {per_rack} trays of a rack: a partial "
                        f"NVLink domain", {"clique": clique, "trays": len(names), "traysPerRack": per_rack,
                                           "nodes": _names(names)},
                        "a ComputeDomain as large as a rack cannot be placed there; the rack's other trays carry no "
                        "clique label (GA160), are not in the cluster (GA115) or report another clique"))
        return out

    def _pods(self, pool: str, trays: list[_Tray], operands: Any) -> list[Drift]:
        """GA164 and GA165 for each tray, from the pods read (any namespace)."""
        by_node = getattr(operands, "by_node", None)
        if not isinstance(by_node, dict):
            return []
        plugins = any(type(pods) is dict and O.DRA_PLUGIN in pods for pods in by_node.values())
        out: list[Drift] = []
        if not plugins and trays:
            out.append(Drift(
                INFO, "GA165", "", pool,
                f"the pods read hold no pod of the DRA driver's kubelet plugin (namespace {self.namespace}): the "
                "ComputeDomain kubelet plugin and the IMEX daemons are not checked",
                {"pods": getattr(operands, "pods", 0), "namespace": self.namespace},
                f"give the pods of every namespace (`kubectl get pods -A -o json`), or at least those of "
                f"{self.namespace}"))
        for tray in trays:
            pods = by_node.get(tray.name)
            pods = pods if type(pods) is dict else {}
            down = "" if tray.ready else "; the node is NotReady or cordoned (GA113, GA114)"
            plugin = pods.get(O.DRA_PLUGIN)
            if plugins and plugin is None:
                tray.found.append(Drift(
                    ERROR, "GA165", tray.name, pool, "no pod of the ComputeDomain kubelet plugin on the tray",
                    {"namespace": self.namespace, "daemonSet": self.daemonset},
                    f"the DaemonSet {self.daemonset} places no pod there: its affinity must select the pool's nodes "
                    f"and its tolerations take the pool's taints (`kubectl -n {self.namespace} describe daemonset "
                    f"{self.daemonset}`){down}"))
            elif isinstance(plugin, O.OperandPod):
                tray.found.append(self._unready(pool, tray.name, plugin, "the ComputeDomain kubelet plugin",
                                                "GA165", "compute-domains", down))
            daemon = pods.get(O.IMEX_DAEMON)
            if isinstance(daemon, O.OperandPod):
                tray.found.append(self._unready(pool, tray.name, daemon, "the IMEX daemon of a ComputeDomain",
                                                "GA164", "compute-domain-daemon", down))
        return out

    @staticmethod
    def _unready(pool: str, node: str, pod: O.OperandPod, what: str, code: str, container: str,
                 down: str) -> Drift:
        failing = pod.failing()
        reason = next((c.reason or c.last_reason for c in failing if c.reason or c.last_reason), "") or pod.reason
        if not reason and pod.phase == "Running":
            reason = "not ready"
        how = f"{pod.phase}" + (f", {reason}" if reason else "") + (
            f" ({max(c.restarts for c in pod.containers)} restarts)" if any(c.restarts for c in pod.containers)
            else "")
        previous = " --previous" if any(c.restarts or c.last_exit_code is not None for c in failing) else ""
        hint = (f"read its log: `kubectl -n {pod.namespace} logs {pod.name} -c {container}{previous}`")
        if code == "GA164":
            hint += ("; the daemon is ready once the IMEX daemons of its ComputeDomain reach each other over the "
                     "rack's NVLink: the ComputeDomainClique of its clique (in the driver's namespace) lists each "
                     "daemon's node, address and status")
        return Drift(ERROR, code, node, pool, f"{what} is not ready: {pod.namespace}/{pod.name} {how}",
                     pod.as_dict(), hint + down)

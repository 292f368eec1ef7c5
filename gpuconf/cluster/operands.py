"""The GPU Operator's pods per node, read for the audit's diagnosis: which operand runs, waits or fails where.

A pod list (`kubectl get pods -n <operator namespace> -o json`, or `-A`) is streamed once. Each pod the operator's
DaemonSets own is recognised by its `app` label (the operator's assets/state-*/0500_daemonset.yaml) and placed on its
node; a pod that is Running with every container ready costs one dictionary entry, the others keep what the diagnosis
reads: phase, the init container it waits in, each container's waiting or terminated reason and message, restart
counts, the image of a container that cannot be pulled. Pending pods of other namespaces that request a GPU resource
are the waiting work, counted per resource.

Logs (the tail of a failing container's current and previous log) and events come later: the must-gather folder
attaches them, or the live reads fetch a container's log when the diagnosis of its node asks for it (Operands.logs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .nodefacts import _EMPTY, printable

# --- the operands ------------------------------------------------------------------------------------------------

DRIVER, TOOLKIT, DEVICE_PLUGIN, MPS, GFD, VALIDATOR, MIG_MANAGER = (
    "driver", "container-toolkit", "device-plugin", "mps-control-daemon", "gpu-feature-discovery",
    "operator-validator", "mig-manager")
DCGM, DCGM_EXPORTER, NODE_STATUS, DRA_PLUGIN = "dcgm", "dcgm-exporter", "node-status-exporter", "dra-kubelet-plugin"

OPERATOR_DRA_APP = "nvidia-dra-driver-kubelet-plugin"
#: The `app` label of each operand DaemonSet's pods -> the operand (gpu-operator assets/state-*/*_daemonset.yaml, the
#: same names from v25.3.0 to v26.7.0). Driver pods are also known by app.kubernetes.io/component=nvidia-driver,
#: which the ClusterPolicy's DaemonSet and the NVIDIADriver controller's (app=nvidia-gpu-driver-<os>-<hash>) both
#: set, and by the app prefix nvidia-driver-daemonset (OpenShift's driver toolkit names it
#: nvidia-driver-daemonset-<rhcos version>).
APP_LABELS = {
    "nvidia-driver-daemonset": DRIVER,
    "nvidia-vgpu-manager-daemonset": DRIVER,
    "nvidia-container-toolkit-daemonset": TOOLKIT,
    "nvidia-device-plugin-daemonset": DEVICE_PLUGIN,
    "nvidia-device-plugin-mps-control-daemon": MPS,
    "gpu-feature-discovery": GFD,
    "nvidia-operator-validator": VALIDATOR,
    "nvidia-mig-manager": MIG_MANAGER,
    "nvidia-dcgm": DCGM,
    "nvidia-dcgm-exporter": DCGM_EXPORTER,
    "nvidia-node-status-exporter": NODE_STATUS,
    # The operator's own DRA driver on the GPUCluster stack (v26.7.0 manifests/state-dra-driver/0500_daemonset.yaml:
    # DaemonSet nvidia-dra-driver-kubelet-plugin, containers gpus and compute-domains).
    OPERATOR_DRA_APP: DRA_PLUGIN,
}
#: The DRA driver's kubelet plugin (its chart, dra-driver-nvidia-gpu v0.4.1 templates/_helpers.tpl selectorLabels:
#: `<chart name>-component: kubelet-plugin`).
DRA_COMPONENT = ("dra-driver-nvidia-gpu-component", "kubelet-plugin")
#: A ComputeDomain's IMEX daemon: the controller runs one DaemonSet per ComputeDomain in the driver's namespace, its
#: pods labelled with the ComputeDomain's uid and no `app` label (DRV v0.4.1 templates/compute-domain-daemon.tmpl.yaml,
#: cmd/compute-domain-controller/computedomain.go computeDomainLabelKey). Its one container: compute-domain-daemon.
IMEX_DAEMON, IMEX_LABEL = "compute-domain-daemon", "resource.nvidia.com/computeDomain"
#: The operands of the DRA driver's release, which may run in a namespace of their own (beside the operator's).
DRA_OPERANDS = (DRA_PLUGIN, IMEX_DAEMON)
DRIVER_APP_PREFIXES = ("nvidia-gpu-driver-", "nvidia-driver-daemonset-")
DRIVER_COMPONENT = ("app.kubernetes.io/component", "nvidia-driver")

#: The MIG manager's one container (gpu-operator assets/state-mig-manager/0600_daemonset.yaml).
MIG_MANAGER_CONTAINER = "nvidia-mig-manager"

#: The order in which operands depend on each other: the driver first, the device plugin after the toolkit, the
#: validator's steps between. A failure earlier in the chain explains the waits after it.
CHAIN = (DRIVER, TOOLKIT, VALIDATOR, DEVICE_PLUGIN, MPS, MIG_MANAGER, GFD, DRA_PLUGIN, DCGM, DCGM_EXPORTER,
         NODE_STATUS, IMEX_DAEMON)

#: Operand -> the DaemonSet the operator names it with (for the hint's commands).
DAEMONSETS = {v: k for k, v in APP_LABELS.items() if k != "nvidia-vgpu-manager-daemonset"}

#: The most read per failing container: the tail of its log, in lines and bytes.
LOG_LINES = 60
LOG_BYTES = 64 << 10
#: The longest message kept from a container status (the kubelet caps a termination message at 4 KiB).
MESSAGE_CHARS = 2048


def operand_of(labels: Mapping[str, Any]) -> str | None:
    """The operand a pod belongs to, from its `app` label; None for any other pod."""
    if labels.get(DRA_COMPONENT[0]) == DRA_COMPONENT[1]:
        return DRA_PLUGIN
    if type(labels.get(IMEX_LABEL)) is str:
        return IMEX_DAEMON
    app = labels.get("app")
    if type(app) is not str:
        return DRIVER if labels.get(DRIVER_COMPONENT[0]) == DRIVER_COMPONENT[1] else None
    found = APP_LABELS.get(app)
    if found is None and (app.startswith(DRIVER_APP_PREFIXES)
                          or labels.get(DRIVER_COMPONENT[0]) == DRIVER_COMPONENT[1]):
        return DRIVER
    return found


# --- one pod -----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Container:
    """What the kubelet reports of one container of a pod (status.containerStatuses / initContainerStatuses)."""

    name: str
    init: bool
    state: str  # "running", "waiting", "terminated", or "unknown" (no status yet)
    ready: bool
    restarts: int
    reason: str = ""  # the waiting or terminated reason
    message: str = ""
    exit_code: int | None = None
    last_reason: str = ""  # lastState.terminated
    last_exit_code: int | None = None
    last_message: str = ""
    image: str = ""

    @property
    def failing(self) -> bool:
        """Crash-looping, exited with an error, or its image cannot be pulled."""
        return (self.state == "waiting" and self.reason not in ("", "PodInitializing", "ContainerCreating")) or \
            (self.state == "terminated" and self.exit_code not in (0, None)) or \
            (self.last_exit_code not in (0, None) and not self.ready)

    def as_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "state": self.state, "ready": self.ready,
                               "restarts": self.restarts}
        if self.init:
            out["init"] = True
        for key, value in (("reason", self.reason), ("message", self.message), ("exitCode", self.exit_code),
                           ("lastReason", self.last_reason), ("lastExitCode", self.last_exit_code),
                           ("lastMessage", self.last_message)):
            if value not in ("", None):
                out[key] = value
        return out


@dataclass(slots=True)
class OperandPod:
    """One operand pod that is not Running with every container ready."""

    name: str
    namespace: str
    node: str
    operand: str
    phase: str
    reason: str = ""  # status.reason (Evicted, NodeAffinity, ...)
    message: str = ""
    scheduled: str = ""  # the PodScheduled condition's message when it is False
    containers: list[Container] = field(default_factory=list)
    images: dict[str, str] = field(default_factory=dict)  # container -> image of the spec
    logs: dict[tuple[str, bool], list[str]] = field(default_factory=dict)  # (container, previous) -> tail lines
    events: list[str] = field(default_factory=list)
    log_of: str = ""  # another pod whose log stands for this one's (live reads: the same failure, read once)

    @property
    def waiting_in(self) -> str | None:
        """The init container the pod has not got past (the first one that is not terminated with 0)."""
        for c in self.containers:
            if c.init and not (c.state == "terminated" and c.exit_code == 0):
                return c.name
        return None

    def failing(self) -> list[Container]:
        """Its failing containers, init containers first."""
        return [c for c in self.containers if c.failing]

    def as_dict(self) -> dict:
        out: dict[str, Any] = {"pod": f"{self.namespace}/{self.name}", "operand": self.operand, "phase": self.phase}
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        if self.scheduled:
            out["unschedulable"] = self.scheduled
        waiting = self.waiting_in
        if waiting is not None:
            out["waitingIn"] = waiting
        notable = [c.as_dict() for c in self.containers if c.failing or not c.ready and c.state != "terminated"]
        if notable:
            out["containers"] = notable
        if self.events:
            out["events"] = list(self.events)
        if self.log_of:
            out["logOf"] = self.log_of
        return out


HEALTHY = "healthy"  # an operand pod Running with every container ready: nothing more is kept

_NODE_FIELD = "metadata.name"


def _text(value: Any, limit: int = MESSAGE_CHARS) -> str:
    """A string of the pod object for evidence, on one line and bounded; anything else is empty."""
    if type(value) is not str:
        return ""
    text = value if len(value) <= limit else value[:limit] + "..."
    return printable(" ".join(text.split()) if "\n" in text or "\r" in text else text)


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _node_of(spec: Mapping[str, Any]) -> str:
    """The node a DaemonSet pod is for: spec.nodeName, else the node its required affinity names (a DaemonSet pod
    that was never scheduled has no nodeName, but the controller pins it by metadata.name)."""
    name = spec.get("nodeName")
    if type(name) is str and name:
        return name
    try:
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for term in terms:
            for expr in term.get("matchFields") or ():
                if expr.get("key") == _NODE_FIELD and expr.get("operator") == "In" and len(expr.get("values")) == 1:
                    value = expr["values"][0]
                    if type(value) is str:
                        return value
    except (KeyError, TypeError, AttributeError):
        pass
    return ""


def _container(raw: Any, init: bool) -> Container | None:
    if type(raw) is not dict or type(raw.get("name")) is not str:
        return None
    state = raw.get("state") if type(raw.get("state")) is dict else _EMPTY
    kind = next((k for k in ("running", "waiting", "terminated") if type(state.get(k)) is dict), "unknown")
    detail = state.get(kind) if kind != "unknown" else _EMPTY
    last = raw.get("lastState") if type(raw.get("lastState")) is dict else _EMPTY
    last = last.get("terminated") if type(last.get("terminated")) is dict else _EMPTY
    restarts = raw.get("restartCount")
    return Container(
        name=_text(raw["name"], 253), init=init, state=kind, ready=raw.get("ready") is True,
        restarts=restarts if type(restarts) is int and restarts >= 0 else 0,
        reason=_text(detail.get("reason"), 128), message=_text(detail.get("message")),
        exit_code=_int(detail.get("exitCode")) if kind == "terminated" else None,
        last_reason=_text(last.get("reason"), 128), last_exit_code=_int(last.get("exitCode")),
        last_message=_text(last.get("message")), image=_text(raw.get("image"), 512))


def operand_pod(pod: Mapping[str, Any], operand: str, node: str) -> OperandPod:
    """The diagnosis's reading of one operand pod that is not healthy."""
    meta = pod.get("metadata") if type(pod.get("metadata")) is dict else _EMPTY
    spec = pod.get("spec") if type(pod.get("spec")) is dict else _EMPTY
    status = pod.get("status") if type(pod.get("status")) is dict else _EMPTY
    out = OperandPod(_text(meta.get("name"), 253), _text(meta.get("namespace"), 63), node, operand,
                     _text(status.get("phase"), 32) or "Unknown", _text(status.get("reason"), 128),
                     _text(status.get("message")))
    for cond in status.get("conditions") or () if type(status.get("conditions")) is list else ():
        if type(cond) is dict and cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            out.scheduled = _text(cond.get("message")) or _text(cond.get("reason"), 128)
    for key, init in (("initContainers", True), ("containers", False)):
        for c in spec.get(key) or () if type(spec.get(key)) is list else ():
            if type(c) is dict and type(c.get("name")) is str and type(c.get("image")) is str:
                out.images[_text(c["name"], 253)] = _text(c["image"], 512)
    # Spec order for init containers (the order they run in); the kubelet lists their statuses in that order too.
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        raw = status.get(key)
        for item in raw if type(raw) is list else ():
            c = _container(item, init)
            if c is not None:
                if not c.image:
                    c.image = out.images.get(c.name, "")
                out.containers.append(c)
    return out


def _healthy(status: Mapping[str, Any]) -> bool:
    """Running with every container ready (the fast path: most operand pods of a cluster)."""
    if status.get("phase") != "Running":
        return False
    statuses = status.get("containerStatuses")
    if type(statuses) is not list or not statuses:
        return False
    for c in statuses:
        if type(c) is not dict or c.get("ready") is not True:
            return False
    return True


# --- waiting work ------------------------------------------------------------------------------------------------

_GPU_PREFIX = "nvidia.com/"


def _gpu_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """The nvidia.com/* resources a pod asks for (extended resources are requested through limits; requests, when
    given, must equal them), summed over its containers; init containers count by their largest."""
    from .. import quantity

    total: dict[str, int] = {}
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        for c in containers if type(containers) is list else ():
            resources = c.get("resources") if type(c) is dict else None
            if type(resources) is not dict:
                continue
            asked: dict[str, int] = {}
            for part in ("limits", "requests"):
                values = resources.get(part)
                for name, value in values.items() if type(values) is dict else ():
                    if type(name) is str and name.startswith(_GPU_PREFIX):
                        n = quantity.count(value) if type(value) is str else value if type(value) is int else None
                        if n:
                            asked[name] = max(asked.get(name, 0), n)
            for name, n in asked.items():
                total[name] = total.get(name, 0) + n if key == "containers" else max(total.get(name, 0), n)
    return total


@dataclass(slots=True)
class WaitingPod:
    """A Pending pod of a workload that asks for GPU resources and has no node."""

    name: str
    namespace: str
    requests: dict[str, int]
    message: str  # why the scheduler left it (PodScheduled=False), or ""


# --- the index ---------------------------------------------------------------------------------------------------


@dataclass
class Operands:
    """Every operand pod's state per node, the operand pods of no node, and the waiting work.

    `by_node[node][operand]` is HEALTHY or the OperandPod (the worse one when a rollout leaves two).
    """

    source: str
    namespace: str | None = None  # the operator's namespace as the pods tell it
    by_node: dict[str, dict[str, Any]] = field(default_factory=dict)
    waiting: list[WaitingPod] = field(default_factory=list)
    pods: int = 0
    operand_pods: int = 0  # the GPU Operator's (the DRA driver's pods are not counted: they may be another release's)
    node_events: dict[str, list[str]] = field(default_factory=dict)  # node -> recent event lines
    has_logs: bool = False  # logs were read (a must-gather folder, or live)
    has_events: bool = False
    #: Live: reads the tail of one container's log on demand, (pod, container, previous) -> lines or None.
    log_reader: Any = None
    notes: list[str] = field(default_factory=list)

    def add(self, pod: Mapping[str, Any]) -> None:
        """One Pod object."""
        self.pods += 1
        meta = pod.get("metadata")
        if type(meta) is not dict:
            return
        labels = meta.get("labels")
        operand = operand_of(labels) if type(labels) is dict else None
        spec = pod.get("spec") if type(pod.get("spec")) is dict else _EMPTY
        status = pod.get("status") if type(pod.get("status")) is dict else _EMPTY
        if operand is None:
            if status.get("phase") == "Pending" and not spec.get("nodeName"):
                asked = _gpu_requests(spec)
                if asked:
                    message = ""
                    for cond in status.get("conditions") or () if type(status.get("conditions")) is list else ():
                        if type(cond) is dict and cond.get("type") == "PodScheduled":
                            message = _text(cond.get("message"))
                    self.waiting.append(WaitingPod(_text(meta.get("name"), 253), _text(meta.get("namespace"), 63),
                                                   asked, message))
            return
        self.operand_pods += operand not in DRA_OPERANDS
        namespace = meta.get("namespace")
        # The DRA driver's pods may be another release's, in a namespace of its own: the operator's is told by its own.
        if self.namespace is None and type(namespace) is str and operand not in DRA_OPERANDS:
            self.namespace = namespace
        node = _node_of(spec)
        if not node:
            return
        on_node = self.by_node.setdefault(node, {})
        # MIG manager's pod is kept when healthy too: a wedged one runs and is ready (mig-parted#485), its log says so.
        if _healthy(status) and operand != MIG_MANAGER:
            on_node.setdefault(operand, HEALTHY)
            return
        found = operand_pod(pod, operand, node)
        if found.phase == "Succeeded":  # a completed one-off, the validator's cuda workload say: no operand
            return
        on_node[operand] = found  # an unhealthy pod outranks a healthy one of a rollout

    def add_all(self, pods: Iterable[Mapping[str, Any]]) -> "Operands":
        for pod in pods:
            self.add(pod)
        return self

    def on(self, node: str) -> Mapping[str, Any] | None:
        """The operands seen on a node ({} when none runs there)."""
        return self.by_node.get(node, _EMPTY)

    def unhealthy(self) -> Iterable[OperandPod]:
        """The pods kept in full (every pod not Running and ready, and MIG manager's)."""
        for pods in self.by_node.values():
            for pod in pods.values():
                if pod is not HEALTHY:
                    yield pod

    def logs(self, pod: OperandPod, container: Container) -> list[str]:
        """The lines read of a container: its previous run's log, then the current one's (read live on first use),
        then the kubelet's termination messages."""
        if self.log_reader is not None and not any((container.name, p) in pod.logs for p in (True, False)):
            for previous in ((True, False) if container.restarts or container.last_exit_code is not None
                             else (False,)):
                lines = self.log_reader(pod, container, previous)
                if lines is not None:
                    pod.logs[(container.name, previous)] = lines
        lines = list(pod.logs.get((container.name, True), ())) + list(pod.logs.get((container.name, False), ()))
        return lines + [m for m in (container.last_message, container.message) if m]



# --- logs and events ---------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: kubectl logs --timestamps puts an RFC 3339 time (nanoseconds) before each line.
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) ")


def tail(text: str, lines: int = LOG_LINES) -> list[str]:
    """The last lines of a log, each on one printable line (colour codes and carriage returns dropped)."""
    if len(text) > LOG_BYTES:
        text = text[-LOG_BYTES:]
    out = []
    for line in text.splitlines()[-lines:]:
        line = _ANSI.sub("", line).rstrip()
        if line[:1].isdigit():
            line = _STAMP.sub("", line, count=1) if _STAMP.match(line) else line
        if line:
            out.append(printable(line[:MESSAGE_CHARS]))
    return out


def event_line(event: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    """(kind, namespace, name, "Reason: message (xN)") of a core/v1 or events.k8s.io/v1 Event, or None."""
    if type(event) is not dict:
        return None
    target = event.get("involvedObject") if type(event.get("involvedObject")) is dict else \
        event.get("regarding") if type(event.get("regarding")) is dict else None
    if target is None:
        return None
    kind, name = target.get("kind"), target.get("name")
    if type(kind) is not str or type(name) is not str:
        return None
    reason = _text(event.get("reason"), 128)
    message = _text(event.get("message") if "message" in event else event.get("note"), 512)
    count = event.get("count") if type(event.get("count")) is int else \
        (event.get("series") or {}).get("count") if type(event.get("series")) is dict else None
    text = f"{reason}: {message}" if reason else message
    if type(count) is int and count > 1:
        text += f" (x{count})"
    namespace = target.get("namespace") if type(target.get("namespace")) is str else ""
    return kind, namespace, name, text


def _stamp(event: Mapping[str, Any]) -> str:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if type(value) is str:
            return value
    series = event.get("series")
    if type(series) is dict and type(series.get("lastObservedTime")) is str:
        return series["lastObservedTime"]
    meta = event.get("metadata")
    return meta.get("creationTimestamp", "") if type(meta) is dict and type(meta.get("creationTimestamp")) is str \
        else ""


#: Events kept per pod or node: the newest ones.
EVENTS_KEPT = 5


def attach_events(operands: Operands, events: Iterable[Mapping[str, Any]]) -> None:
    """The newest Warning events of each unhealthy operand pod and of each node with operand pods, by time."""
    pods = {(p.namespace, p.name): p for p in operands.unhealthy()}
    found: dict[tuple, list[tuple[str, str]]] = {}
    for event in events:
        if type(event) is not dict or event.get("type") not in ("Warning", None):
            continue
        line = event_line(event)
        if line is None:
            continue
        kind, namespace, name, text = line
        key = ("Pod", namespace, name) if kind == "Pod" else ("Node", "", name) if kind == "Node" else None
        if key is None or (kind == "Pod" and (namespace, name) not in pods):
            continue
        found.setdefault(key, []).append((_stamp(event), text))
    for (kind, namespace, name), lines in found.items():
        newest = [text for _, text in sorted(lines)[-EVENTS_KEPT:]]
        if kind == "Pod":
            pods[(namespace, name)].events = newest
        else:
            operands.node_events[name] = newest
    operands.has_events = True

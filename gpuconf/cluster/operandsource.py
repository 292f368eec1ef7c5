"""Where the operator's pods, their events and logs come from: files (`audit --pods`, `--events`), NVIDIA's
must-gather folder (`audit --must-gather`), or the live cluster (`audit --kubeconfig`: GET requests, paged, inside
--request-timeout).

Every source fills one operands.Operands. Live, a permission the credentials lack is a NodeSourceError naming it
(exit 2); `--no-operands` audits the nodes alone.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Iterator

from . import operands as O
from .nodesource import (
    MAX_PAGE, PAGE_SIZE, ClusterNodes, NodeSourceError, PodListReader, _reason, client_configuration, deadline,
    read_all, request_timeout, status_message,
)

#: The most logs read live in one audit: a cause is the same on every node it hits, so a few pods per failure
#: (operand, container, reason, image) say it; the other pods of that failure are diagnosed with their lines.
LOGS_PER_FAILURE = 2
MAX_LOG_READS = 48
#: The largest events or must-gather file read whole (a YAML list is parsed at once).
MAX_FILE = 256 << 20


# --- files -------------------------------------------------------------------------------------------------------


def _open(path: str):
    try:
        return open(path, "rb")  # noqa: SIM115 - the callers close it
    except OSError as exc:
        raise NodeSourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _load(path: str, what: str, command: str) -> Any:
    """A JSON or YAML file read whole (bounded), for events and the must-gather's lists."""
    import yaml

    with _open(path) as stream:
        data = stream.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise NodeSourceError(f"{path}: larger than {MAX_FILE >> 20} MiB; expected {what} ({command})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NodeSourceError(f"{path}: not UTF-8 text; expected {what} ({command})") from None
    try:
        if text.lstrip().startswith("{"):
            return json.loads(text)
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (ValueError, RecursionError) as exc:
        raise NodeSourceError(f"{path}: not JSON: {str(exc).splitlines()[0]}; expected {what} ({command})") from None
    except yaml.YAMLError as exc:
        raise NodeSourceError(f"{path}: not JSON or YAML: {str(exc).splitlines()[0]}; expected {what} "
                              f"({command})") from None


def _items(data: Any, path: str, kinds: tuple[str, ...], what: str, command: str) -> list:
    """The items of a list document (a typed list, kubectl's List, or one object of the item kind)."""
    if isinstance(data, dict) and isinstance(data.get("items"), list) and data.get("kind", "List") in kinds:
        return data["items"]
    if isinstance(data, dict) and data.get("kind") == kinds[-1].removesuffix("List"):
        return [data]
    raise NodeSourceError(f"{path}: expected {what}, the output of {command}")


def read_pods(path: str, namespace: str | None) -> O.Operands:
    """The operand pods of `kubectl get pods -n NAMESPACE -o json` (or -A, or -o yaml) saved to a file (with no
    namespace, a file without operand pods is not noted: the caller does it, knowing the namespace later)."""
    operands = O.Operands(path)
    with _open(path) as stream:
        head = stream.read(64).lstrip()
        stream.seek(0)
        if head.startswith(b"{") and not _skim(stream, path, operands):
            operands = O.Operands(path)
            stream.seek(0)
            operands.add_all(PodListReader(stream, path))
        elif head.startswith(b"{"):
            pass
        else:
            data = _load(path, "a PodList", PodListReader.COMMAND)
            operands.add_all(_checked_pods(_items(data, path, ("List", "PodList"), "a PodList",
                                                  PodListReader.COMMAND), path))
    if namespace is not None:
        note_operands(operands, path, namespace)
    return operands


def _skim(stream: Any, path: str, operands: O.Operands) -> bool:
    """The pods of a PodList in kubectl's JSON layout, most of them never decoded (cluster/skim.py); False when
    the file is not in that layout."""
    from . import skim
    from .nodesource import check_pod

    def healthy(node: str, operand: str, name: Any) -> bool:
        if operands.namespace is None:
            return False  # the first one is decoded: the operator's namespace
        if operand == O.MIG_MANAGER:  # kept by name: a wedged MIG manager runs and is ready, its log tells
            named = name()
            if named is None:
                return False
            pod = O.OperandPod(named[0], named[1], node, operand, "Running",
                               containers=[O.Container(O.MIG_MANAGER_CONTAINER, False, "running", True, 0)])
            operands.by_node.setdefault(node, {})[operand] = pod
        else:
            operands.by_node.setdefault(node, {}).setdefault(operand, O.HEALTHY)
        operands.pods += 1
        operands.operand_pods += operand not in O.DRA_OPERANDS
        return True

    def other() -> None:
        operands.pods += 1

    def whole(text: bytes, index: int) -> None:
        try:
            pod = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise NodeSourceError(f"{path}: item {index} is not JSON ({str(exc).splitlines()[0]})") from None
        problem = check_pod(pod) if isinstance(pod, dict) else "not an object"
        if problem is not None:
            raise NodeSourceError(f"{path}: item {index} is not a Pod ({problem}); expected {PodListReader.COMMAND}")
        operands.add(pod)

    try:
        return skim.skim(stream, O.operand_of, healthy, other, whole)
    except ValueError as exc:
        raise NodeSourceError(f"{path}: {exc}; expected {PodListReader.COMMAND}") from None


def _checked_pods(items: list, where: str) -> Iterator[dict]:
    from .nodesource import check_pod

    for i, item in enumerate(items):
        problem = check_pod(item) if isinstance(item, dict) else "not an object"
        if problem is not None:
            raise NodeSourceError(f"{where}: item {i} is not a Pod ({problem})")
        yield item


def note_operands(operands: O.Operands, where: str, namespace: str) -> None:
    """A pod list without a single operand pod: another namespace's, or an operator that runs nothing. Said once on
    stderr; no node is then said to miss its operand pods."""
    if operands.operand_pods == 0:
        operands.notes.append(
            f"note: {where}: {operands.pods} pod{'s' if operands.pods != 1 else ''}, none of the GPU Operator's "
            f"operands (app=nvidia-driver-daemonset, app=nvidia-device-plugin-daemonset, ...): the diagnosis has no "
            f"pods to read; the operator's namespace is {namespace} (`kubectl get pods -n {namespace} -o json`)")


def read_pod_files(pods: str, events: str | None, namespace: str | None = None) -> O.Operands:
    """--pods FILE and --events FILE (a top-level function: it may run in a process of its own, beside the nodes)."""
    operands = read_pods(pods, namespace)
    if events is not None:
        read_events(events, operands)
    return operands


def read_events(path: str, operands: O.Operands) -> None:
    """Attach the events of `kubectl get events -A -o json` (core/v1 or events.k8s.io/v1) to the pods and nodes."""
    command = "`kubectl get events -A -o json`"
    data = _load(path, "an EventList", command)
    O.attach_events(operands, _items(data, path, ("List", "EventList"), "an EventList", command))


# --- NVIDIA's must-gather folder ---------------------------------------------------------------------------------

#: The files of the GPU Operator's hack/must-gather.sh this audit reads (gpu-operator hack/must-gather.sh, a flat
#: folder: the operator namespace's pods from `get pods -oyaml`, each operand pod's log and previous log from `logs
#: --all-containers --prefix --timestamps` and its `describe pod` (whose Events table is the only events it
#: collects), the GPU nodes from `describe nodes -l nvidia.com/gpu.present=true`).
MG_PODS = "gpu_operand_pods.yaml"
MG_NODES = "gpu_nodes.descr"
MG_LOG = re.compile(r"gpu_operand_pod_(?P<pod>[a-z0-9][-a-z0-9.]*?)(?P<previous>\.previous)?\.log")


def read_must_gather(folder: str, namespace: str) -> tuple[O.Operands, str | None]:
    """The operand pods of a must-gather folder with their logs (and events when collected); the path of its GPU
    node list when it holds one."""
    if not os.path.isdir(folder):
        raise NodeSourceError(f"{folder}: not a folder (expected the folder hack/must-gather.sh writes)")
    pods = os.path.join(folder, MG_PODS)
    if not os.path.isfile(pods):
        raise NodeSourceError(f"{folder}: no {MG_PODS}: not the folder of the GPU Operator's must-gather.sh")
    operands = read_pods(pods, namespace)
    operands.source = folder
    by_name = {p.name: p for p in operands.unhealthy()}
    for entry in sorted(os.listdir(folder)):
        m = MG_LOG.fullmatch(entry)
        if m is None or m.group("pod") not in by_name:
            continue
        pod = by_name[m.group("pod")]
        with _open(os.path.join(folder, entry)) as stream:
            size = os.fstat(stream.fileno()).st_size
            stream.seek(max(0, size - O.LOG_BYTES))
            text = stream.read(O.LOG_BYTES).decode("utf-8", "replace")
        _attach_log(pod, text, m.group("previous") is not None)
    operands.has_logs = True
    for pod in by_name.values():  # `kubectl describe pod` of each: its Events table
        path = os.path.join(folder, f"gpu_operand_pod_{pod.name}.descr")
        if os.path.isfile(path):
            from . import describe

            with _open(path) as stream:
                found = describe.events(stream.read(O.LOG_BYTES).decode("utf-8", "replace"))
            pod.events = [f"{r}: {m}" for r, m in found][-O.EVENTS_KEPT:]
    nodes = os.path.join(folder, MG_NODES)
    return operands, nodes if os.path.isfile(nodes) else None


#: kubectl logs --all-containers --prefix marks each line with [pod/NAME/CONTAINER].
_PREFIX = re.compile(r"\[pod/[^/\]]+/(?P<container>[^\]\s]+)\] ?")


def _attach_log(pod: O.OperandPod, text: str, previous: bool) -> None:
    """A log file's lines on the containers they came from: with kubectl's --prefix, per container; else on the
    pod's failing container (or the init container it waits in), which is what the diagnosis reads."""
    lines = O.tail(text, 4 * O.LOG_LINES)
    per: dict[str, list[str]] = {}
    target = next((c.name for c in pod.containers if c.failing and not c.init), None) or \
        next((c.name for c in pod.containers if c.failing), None) or pod.waiting_in or \
        next((c.name for c in pod.containers if not c.init), "")
    for line in lines:
        m = _PREFIX.match(line)
        name = m.group("container") if m else target
        rest = line[m.end():] if m else line
        per.setdefault(name, []).append(O._STAMP.sub("", rest, count=1) if m else rest)
    for name, got in per.items():
        pod.logs[(name, previous)] = got[-O.LOG_LINES:]


def nodes_from_file(path: str, operands: O.Operands | None = None) -> Iterator[dict]:
    """The GPU nodes a must-gather describes (gpu_nodes.descr, `kubectl describe nodes`); their Warning events go to
    `operands`."""
    from . import describe
    from .nodefacts import check_node

    with _open(path) as stream:
        data = stream.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise NodeSourceError(f"{path}: larger than {MAX_FILE >> 20} MiB")
    count = 0
    for node, events in describe.nodes(data.decode("utf-8", "replace")):
        count += 1
        problem = check_node(node)
        if problem is not None:
            raise NodeSourceError(f"{path}: node {count} is not readable ({problem})")
        if operands is not None and events:
            operands.node_events[node["metadata"]["name"]] = [f"{r}: {m}" for r, m in events][-O.EVENTS_KEPT:]
        yield node
    if count == 0:
        raise NodeSourceError(f"{path}: describes no node (expected `kubectl describe nodes` output)")


# --- a live cluster ----------------------------------------------------------------------------------------------


class ClusterOperands(ClusterNodes):
    """The operator's pods, the pending pods, Warning events and the failing containers' logs of a live cluster,
    read with GET requests only: pods of the operator's namespace and pending pods of all namespaces
    (`limit`/`continue` pages), Warning events of the namespace and of nodes, and the tail of each failing
    container's current and previous log (`pods/log`, tailLines and limitBytes)."""

    def __init__(self, kubeconfig: str, context: str | None, namespace: str, timeout: float = 30.0,
                 others: tuple[str, ...] = ()) -> None:
        super().__init__(kubeconfig, context, timeout=timeout)
        self.namespace = namespace
        #: Namespaces of the DRA driver's release beside the operator (NVLink pools): its kubelet plugin's and the
        #: IMEX daemons' pods are read there, and no other pod.
        self.others = tuple(n for n in others if n != namespace)
        self._api: Any = None
        self._shared: dict[tuple, list] = {}
        self._reads = 0

    def read(self) -> O.Operands:
        """The pods and events; the logs are read later, as the diagnosis asks (read_log). close() when done."""
        with self.captured():
            found = self._read()
        found.notes.extend(self.notes)
        self.notes.clear()
        return found

    def _read(self) -> O.Operands:
        from kubernetes import client

        configuration = client_configuration(self.kubeconfig, self.context)
        self.host = self._host = configuration.host
        api = self._api = client.ApiClient(configuration)
        core = self._core = client.CoreV1Api(api)
        self.until = deadline(self.timeout)
        ns = self.namespace
        operands = O.Operands(f"{self.host} (namespace {ns})")
        try:
            operands.add_all(self._pages(
                lambda **kw: core.list_namespaced_pod(ns, **kw), f"/api/v1/namespaces/{ns}/pods",
                ("list", "pods", f" in namespace {ns}")))
            note_operands(operands, f"{self.host}/api/v1/namespaces/{ns}/pods", ns)
            for other in self.others:
                operands.add_all(p for p in self._pages(
                    lambda other=other, **kw: core.list_namespaced_pod(other, **kw),
                    f"/api/v1/namespaces/{other}/pods", ("list", "pods", f" in namespace {other}"))
                    if _operand(p) in O.DRA_OPERANDS)
            operands.add_all(p for p in self._pages(
                lambda **kw: core.list_pod_for_all_namespaces(field_selector="status.phase=Pending", **kw),
                "/api/v1/pods?fieldSelector=status.phase=Pending", ("list", "pods", " at the cluster scope"))
                if not O.operand_of((p.get("metadata") or {}).get("labels") or {}))
            events = list(self._pages(
                lambda **kw: core.list_namespaced_event(ns, field_selector="type=Warning", **kw),
                f"/api/v1/namespaces/{ns}/events", ("list", "events", f" in namespace {ns}")))
            events += self._pages(
                lambda **kw: core.list_event_for_all_namespaces(field_selector="involvedObject.kind=Node,type=Warning",
                                                                **kw),
                "/api/v1/events?fieldSelector=involvedObject.kind=Node", ("list", "events", " at the cluster scope"))
            O.attach_events(operands, events)
        except BaseException:
            self.close()
            raise
        operands.log_reader = self.read_log
        operands.has_logs = True
        return operands

    def _late(self, permission: tuple[str, str, str]) -> str:
        what = {"pods": "the pods", "events": "the events", "pods/log": "a container's log"}[permission[1]]
        return (f"the cluster at {self.host} did not send {what}{permission[2]} within {self.timeout:g} s "
                "(--request-timeout): a stalled or very slow API server")

    def _call(self, request: Any, path: str, permission: tuple[str, str, str]) -> bytes:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        try:
            return read_all(request, self.until, self._late(permission), MAX_PAGE)
        except ApiException as exc:
            raise NodeSourceError(self._problem(exc, path, permission)) from None
        except (urllib3.exceptions.MaxRetryError, urllib3.exceptions.NewConnectionError) as exc:
            raise NodeSourceError(f"cannot reach the cluster at {self.host}: {_reason(exc)}") from None
        except urllib3.exceptions.HTTPError as exc:
            raise NodeSourceError(f"the connection to {self.host} broke while reading {path}: {_reason(exc)}") \
                from None
        except (ValueError, TypeError):
            # The request could not be built from the kubeconfig. The message is not shown: it quotes the offending
            # header, which holds the credentials.
            raise NodeSourceError(f"{self.kubeconfig}: the HTTP client refused the request to {self.host} built from "
                                  "this kubeconfig (a token or header value with a line break or a character HTTP "
                                  "does not allow?)") from None

    def _pages(self, call: Any, path: str, permission: tuple[str, str, str]) -> Iterator[dict]:
        token: str | None = None
        while True:
            def request(token: str | None = token) -> Any:
                return call(limit=PAGE_SIZE, _continue=token, _preload_content=False,
                            _request_timeout=request_timeout(self.until))

            raw = self._call(request, path, permission)
            try:
                page = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                raise NodeSourceError(f"{self.host}{path}: not JSON ({str(exc).splitlines()[0]})") from None
            items = page.get("items") if isinstance(page, dict) else None
            if not isinstance(items, list):
                raise NodeSourceError(f"{self.host}{path}: expected a list")
            yield from (i for i in items if isinstance(i, dict))
            token = (page.get("metadata") or {}).get("continue") or None
            if token is None:
                return

    def read_log(self, pod: O.OperandPod, c: O.Container, previous: bool) -> list[str] | None:
        """The tail of one container's log (the diagnosis asks, node by node). A failure already read on
        LOGS_PER_FAILURE pods (same operand, container, reason, image) is not read again: the pod gets those lines,
        and its evidence says whose they are. None when there is no such log (no previous run, the pod is gone)."""
        key = (pod.operand, c.name, c.reason, c.last_exit_code, c.image, previous)
        seen = self._shared.setdefault(key, [])
        if len(seen) >= LOGS_PER_FAILURE or self._reads >= MAX_LOG_READS:
            if not seen:
                return None
            source, lines = seen[0]
            pod.log_of = source
            return lines
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/log"

        def request() -> Any:
            return self._core.read_namespaced_pod_log(
                pod.name, pod.namespace, container=c.name, tail_lines=O.LOG_LINES, limit_bytes=O.LOG_BYTES,
                previous=previous, _preload_content=False, _request_timeout=request_timeout(self.until))

        self._reads += 1
        try:
            with self.captured():
                raw = self._call(request, path, ("get", "pods/log", f" in namespace {pod.namespace}"))
        except NodeSourceError as exc:
            if "(400 " in str(exc) or "(404 " in str(exc):
                return None
            raise
        lines = O.tail(raw.decode("utf-8", "replace"))
        seen.append((f"{pod.namespace}/{pod.name}", lines))
        return lines

    def close(self) -> None:
        if self._api is not None:
            self._api.close()
            self._api = None

    def _problem(self, exc: Any, path: str, permission: tuple[str, str, str]) -> str:
        message = status_message(exc)
        detail = f": {message}" if message else ""
        who = f"context {self.context!r}" if self.context else "the kubeconfig's current context"
        verb, resource, scope = permission
        if exc.status == 403:
            return (f"the credentials of {who} may not {verb} {resource}{scope} (403 Forbidden){detail}; the audit "
                    f"reads the operator's pods, the pending pods, their events and the failing containers' logs "
                    f"(the gpuconf-gpu-auditor role grants exactly that: docs/how-to/audit.md), or give "
                    "--no-operands to audit the nodes alone")
        if exc.status == 401:
            return f"the cluster at {self.host} rejected the credentials of {who} (401 Unauthorized){detail}"
        if not exc.status:
            return f"cannot reach the cluster at {self.host}: {str(exc.reason).splitlines()[-1]}"
        return f"reading {path} at {self.host} failed ({exc.status} {exc.reason}){detail}"


def _operand(pod: dict) -> str | None:
    meta = pod.get("metadata")
    labels = meta.get("labels") if type(meta) is dict else None
    return O.operand_of(labels) if type(labels) is dict else None


def read_cluster_operands(kubeconfig: str, context: str | None, namespace: str, timeout: float,
                          others: tuple[str, ...] = ()) -> ClusterOperands:
    """See ClusterOperands: read() them, close() when the audit is done."""
    return ClusterOperands(kubeconfig, context, namespace, timeout, others)


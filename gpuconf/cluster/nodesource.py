"""Where nodes come from: a `kubectl get nodes -o json` file (streamed), or a live cluster (listed page by page).

Both sources yield plain Node dicts one at a time and never hold the whole list: a 10,000-node cluster's JSON is
about 150 MB, its parsed form several times that. The stdlib json module has no incremental parser, so the reader
walks the top-level object itself and hands each item of `items` to json's C decoder (raw_decode) as soon as the
item's text is in the buffer; only one read chunk and the item being decoded are in memory at a time.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import logging
import re
from typing import IO, Any, Iterator

from .nodefacts import _EMPTY, _kind, check_node, printable

#: Read size; doubled while a single value does not fit, so a huge item costs amortised linear time.
CHUNK = 1 << 20
#: The largest single value (one Node, or one top-level field) the reader buffers. A real Node is 10-100 KB (the
#: kubelet reports at most 50 images); the bound is checked while reading, so an endless string, /dev/zero behind a
#: valid prefix or a FIFO that never ends a value cannot exhaust memory.
MAX_VALUE = 16 << 20
#: kubectl's chunk size for lists (`kubectl get --chunk-size`), also the page size against a live cluster.
PAGE_SIZE = 500
#: The largest body of one request gpuconf reads whole (a page of pods, a list of Secrets or custom objects).
MAX_PAGE = 512 << 20
_WS = re.compile(r"[ \t\n\r]*")
_PLAIN_NAME = re.compile(r"[a-z0-9.-]{1,253}")
_DECODER = json.JSONDecoder()


class NodeSourceError(Exception):
    """The nodes could not be read (bad file, unreachable cluster, no permission): a message for the user, on one
    line (paths and server messages are the environment's, and may hold line breaks)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


class NodeListReader:
    """Iterates over the Node objects of a NodeList (or kubectl's `List`, or a single Node) read from a byte stream.

    After iteration, `header` holds the list's other top-level fields (kind, apiVersion, metadata with `continue`).
    A subclass reads another kind's list (PodListReader).
    """

    ITEM, LIST, NOUN, COMMAND = "Node", "NodeList", "node list", "`kubectl get nodes -o json`"

    def __init__(self, stream: IO[bytes], source: str) -> None:
        self.source = source
        self.header: dict[str, Any] = {}
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._buf = ""
        self._pos = 0
        self._consumed = 0  # characters dropped from the front of the buffer so far
        self._eof = False
        self._read_size = CHUNK
        self._want = 0  # characters to have buffered before decoding a value

    # -- buffer ---------------------------------------------------------------------------------------------------

    def _more(self) -> bool:
        """Append the next chunk to the buffer; False at the end of the stream."""
        if self._eof:
            return False
        try:
            data = self._stream.read(self._read_size)
        except OSError as exc:
            raise NodeSourceError(f"{self.source}: read failed: {exc}") from None
        try:
            text = self._decoder.decode(data or b"", final=not data)
        except UnicodeDecodeError:
            raise NodeSourceError(f"{self.source}: not UTF-8 text (expected the output of {self.COMMAND})") from None
        if not data:
            self._eof = True
        if self._pos:
            self._consumed += self._pos
            self._buf = self._buf[self._pos:]
            self._pos = 0
        self._buf += text
        return True

    def _peek(self) -> str:
        """The next non-blank character, or "" at the end of the stream."""
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                return ""

    def _expect(self, chars: str, what: str) -> str:
        ch = self._peek()
        if not ch or ch not in chars:
            found = repr(ch) if ch else "the end of the input"
            raise self._error(f"expected {what}, found {found}")
        self._pos += 1
        return ch

    def _value(self) -> Any:
        """Decode the JSON value at the cursor, reading more input until it is complete."""
        self._peek()
        # Keep twice the largest value seen so far in the buffer before decoding: a value cut off at the buffer's end
        # costs a failed decode (and json builds its error message by counting every newline before the cut).
        while len(self._buf) - self._pos < self._want and self._more():
            pass
        start_size = len(self._buf) - self._pos
        while True:
            try:
                value, end = _DECODER.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                if self._grow(start_size):
                    continue
                raise self._error(exc.msg + self._too_large(), self._consumed + exc.pos) from None
            except RecursionError:  # the C decoder recurses per nesting level: a Node is a few levels deep
                raise self._error(f"JSON nested too deeply to be a {self.ITEM}") from None
            except ValueError as exc:  # int() refuses numbers of more than 4,300 digits
                raise self._error(f"a number no {self.ITEM} holds ({_one_line(str(exc)).split(';')[0]})") from None
            # A number (or literal) that ends exactly at the buffer's end may go on in the next chunk.
            if end == len(self._buf) and self._grow(start_size):
                continue
            if end - self._pos > MAX_VALUE:
                raise self._error(self._too_large().removeprefix("; "))
            self._want = max(self._want, 2 * (end - self._pos))
            self._pos = end
            return value

    def _grow(self, start_size: int) -> bool:
        """Read more for an incomplete value; False at the end of the input or beyond MAX_VALUE."""
        pending = len(self._buf) - self._pos
        if pending > MAX_VALUE:
            return False
        if pending > start_size + self._read_size:
            self._read_size = min(2 * self._read_size, MAX_VALUE)  # one value spans several chunks: read bigger ones
        return self._more()

    def _too_large(self) -> str:
        if len(self._buf) - self._pos > MAX_VALUE:
            return f"; no complete value within {MAX_VALUE >> 20} MiB (a {self.ITEM} is far smaller)"
        return ""

    def _error(self, message: str, offset: int | None = None) -> NodeSourceError:
        offset = self._consumed + self._pos if offset is None else offset
        return NodeSourceError(f"{self.source}: not a valid {self.NOUN} (character {offset + 1}): {message}")

    # -- structure ------------------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict]:
        first = self._peek()
        if first != "{":
            hint = f" (YAML? use {self.COMMAND})" if first and first not in "[" else ""
            raise NodeSourceError(f"{self.source}: expected a JSON {self.LIST}, the output of {self.COMMAND}{hint}")
        self._pos += 1
        items = False
        if self._peek() == "}":
            self._pos += 1
        else:
            while True:
                key = self._value()
                if not isinstance(key, str):
                    raise self._error("expected a field name")
                self._expect(":", "':'")
                if key == "items":
                    items = True
                    yield from self._items()
                else:
                    self.header[key] = self._value()
                if self._expect(",}", "',' or '}'") == "}":
                    break
        if self._peek():
            raise self._error(f"unexpected text after the {self.NOUN}")
        kind = self.header.get("kind")
        if not items:
            if kind == self.ITEM:  # `kubectl get node NAME -o json`
                self._check(self.header, 0)
                yield self.header
                return
            raise NodeSourceError(f"{self.source}: no `items`: expected a {self.LIST} ({self.COMMAND})"
                                  + (f", got kind {kind!r}" if kind else ""))
        if kind not in (None, "List", self.LIST):
            raise NodeSourceError(f"{self.source}: expected a {self.LIST}, got kind {kind!r}")

    def _check(self, item: dict, index: int) -> None:
        problem = check_node(item)
        if problem is not None:
            name = (item.get("metadata") or {}).get("name") if isinstance(item.get("metadata"), dict) else None
            which = f"item {index}" + (f" ({name})" if isinstance(name, str) and _PLAIN_NAME.fullmatch(name) else "")
            raise NodeSourceError(f"{self.source}: {which}: {problem}; expected the output of "
                                  "`kubectl get nodes -o json`")

    def _not_item(self, item: Any, index: int) -> NodeSourceError:
        what = item.get("kind") if isinstance(item, dict) else type(item).__name__
        return NodeSourceError(f"{self.source}: item {index} is a {what}, not a {self.ITEM}")

    def _items(self) -> Iterator[dict]:
        self._expect("[", "'[' (items is a list)")
        if self._peek() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            item = self._value()
            if not isinstance(item, dict) or item.get("kind", self.ITEM) != self.ITEM:
                raise self._not_item(item, index)
            self._check(item, index)
            yield item
            index += 1
            if self._expect(",]", "',' or ']'") == "]":
                return


def read_nodes_file(path: str, images: bool = True) -> Iterator[dict]:
    """Stream the nodes of a `kubectl get nodes -o json` file; `-` reads standard input. Without `images`, a file
    in kubectl's own layout is cut into nodes by its structure and each node's status.images is never decoded
    (cluster/skim.py: the audit reads no image)."""
    import sys

    if path == "-":
        yield from NodeListReader(sys.stdin.buffer, "<stdin>")
        return
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below, also when the consumer stops early
    except OSError as exc:
        raise NodeSourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with stream:
        if not images:
            from . import skim

            texts = skim.node_texts(stream)
            if texts is not None:
                yield from _skimmed_nodes(texts, path)
                return
            stream.seek(0)
        yield from NodeListReader(stream, path)


def _skimmed_nodes(texts: Iterator[bytes], path: str) -> Iterator[dict]:
    """Nodes decoded from their texts (skim.node_texts), checked as NodeListReader checks them."""
    reader = NodeListReader(None, path)  # type: ignore[arg-type] - for its checks and messages only
    index = 0
    try:
        for text in texts:
            yield decode_node(reader, text, index)
            index += 1
    except ValueError as exc:  # the layout broke off
        raise NodeSourceError(f"{path}: {exc}; expected the output of `kubectl get nodes -o json`") from None


def decode_node(reader: NodeListReader, text: bytes, index: int) -> dict:
    """One node's JSON text (cut out of a list in kubectl's layout) decoded and checked as NodeListReader checks
    the nodes it reads."""
    try:
        item = json.loads(text)
    except RecursionError:
        raise reader._error(f"JSON nested too deeply to be a {reader.ITEM}") from None
    except ValueError as exc:
        raise NodeSourceError(f"{reader.source}: item {index} is not JSON ({_one_line(str(exc))[:200]})") from None
    if not isinstance(item, dict) or item.get("kind", reader.ITEM) != reader.ITEM:
        raise reader._not_item(item, index)
    reader._check(item, index)
    return item


_STRING_OR_NULL = (str, type(None))


def check_pod(pod: dict) -> str | None:
    """What makes a Pod object unreadable for counting (a field the impact plan reads that is of another JSON type
    than the API server writes), or None; absent and null fields are fine, except the three objects a Pod is made of.
    The first test passes the usual pod in one expression, as it runs on every pod (200,000 of them, say)."""
    meta, spec, status = pod.get("metadata", _EMPTY), pod.get("spec", _EMPTY), pod.get("status", _EMPTY)
    if type(meta) is dict and type(spec) is dict and type(status) is dict and "nodeSelector" not in spec \
            and type(meta.get("name")) in _STRING_OR_NULL and type(meta.get("namespace")) in _STRING_OR_NULL \
            and type(spec.get("nodeName")) in _STRING_OR_NULL and type(status.get("phase")) in _STRING_OR_NULL \
            and type(containers := spec.get("containers", [])) is list:
        for container in containers:
            if type(container) is not dict or type(resources := container.get("resources", _EMPTY)) is not dict \
                    or type(resources.get("limits", _EMPTY)) is not dict \
                    or type(resources.get("requests", _EMPTY)) is not dict:
                return _pod_problem(pod)
        return None
    return _pod_problem(pod)


def _pod_problem(pod: dict) -> str | None:
    """check_pod's answer for a pod its first test did not pass."""
    for key in ("metadata", "spec", "status"):
        if type(pod.get(key, _EMPTY)) is not dict:
            return f"{key} is {_kind(pod[key])}, not an object"
    meta, spec, status = pod.get("metadata") or _EMPTY, pod.get("spec") or _EMPTY, pod.get("status") or _EMPTY
    for where, parent, key in (("metadata", meta, "name"), ("metadata", meta, "namespace"), ("spec", spec, "nodeName"),
                               ("status", status, "phase")):
        value = parent.get(key)
        if value is not None and type(value) is not str:
            return f"{where}.{key} is {_kind(value)}, not a string"
    selector = spec.get("nodeSelector")
    if selector is not None:
        if type(selector) is not dict:
            return f"spec.nodeSelector is {_kind(selector)}, not an object"
        bad = next((k for k, v in selector.items() if type(v) is not str), None)
        if bad is not None:
            return f"spec.nodeSelector[{bad[:80]!r}] is {_kind(selector[bad])}, not a string"
    containers = spec.get("containers")
    if containers is None:
        return None
    if type(containers) is not list:
        return f"spec.containers is {_kind(containers)}, not a list"
    for i, container in enumerate(containers):
        if type(container) is not dict:
            return f"spec.containers[{i}] is {_kind(container)}, not an object"
        resources = container.get("resources")
        if resources is None:
            continue
        if type(resources) is not dict:
            return f"spec.containers[{i}].resources is {_kind(resources)}, not an object"
        for key in ("limits", "requests"):
            value = resources.get(key)
            if value is not None and type(value) is not dict:
                return f"spec.containers[{i}].resources.{key} is {_kind(value)}, not an object"
    return None


class PodListReader(NodeListReader):
    """Iterates over the Pods of a PodList (`kubectl get pods -A -o json`, a PodList or kubectl's List), streamed as
    nodes are: a 200,000-pod cluster's listing is some 50 MB of JSON, and only the pods being counted are kept."""

    ITEM, LIST, NOUN, COMMAND = "Pod", "PodList", "pod list", "`kubectl get pods -A -o json`"

    def _check(self, item: dict, index: int) -> None:
        problem = check_pod(item)
        if problem is not None:
            raise NodeSourceError(f"{self.source}: item {index} is not a Pod ({problem}); expected {self.COMMAND}")

    def _not_item(self, item: Any, index: int) -> NodeSourceError:
        if isinstance(item, dict) and isinstance(item.get("kind"), str):  # another kind's list, a NodeList say
            return NodeSourceError(f"{self.source}: expected a PodList, the output of {self.COMMAND}")
        return NodeSourceError(f"{self.source}: item {index} is not a Pod; expected {self.COMMAND}")


def read_pods_file(path: str) -> Iterator[dict]:
    """Stream the pods of a `kubectl get pods -A -o json` file; raises NodeSourceError, when iterated, for a file
    that is not one."""
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below, also when the consumer stops early
    except OSError as exc:
        raise NodeSourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with stream:
        yield from PodListReader(stream, path)


# --- a live cluster ----------------------------------------------------------------------------------------------


#: The deadline every request of one command shares (--request-timeout: the node list, the pods, the ResourceSlices,
#: import's Secrets, ClusterPolicies, NVIDIADrivers and ConfigMaps, together): [deadline or None, seconds]. The
#: clock starts at the command's first request; a library caller that set none gets `timeout` per reader.
_COMMAND_DEADLINE: list = [None, None]


def start_command(timeout: float) -> None:
    """One command starts: its requests share `timeout` seconds from the first of them (the CLI calls this)."""
    _COMMAND_DEADLINE[:] = [None, timeout]


def deadline(timeout: float) -> float:
    """The time.monotonic() by which a reader's requests must be done: the command's shared deadline, started now
    if this is its first request; without a command, `timeout` from now."""
    import time

    if _COMMAND_DEADLINE[1] is None:
        return time.monotonic() + timeout
    if _COMMAND_DEADLINE[0] is None:
        _COMMAND_DEADLINE[0] = time.monotonic() + _COMMAND_DEADLINE[1]
    return _COMMAND_DEADLINE[0]


def request_timeout(until: float) -> tuple[float, float]:
    """urllib3's (connect, read) timeouts for a request that must be done by `until`."""
    import time

    left = max(0.001, until - time.monotonic())
    return (min(10.0, left), left)


def read_all(request: Any, until: float, late: str, limit: int) -> bytes:
    """The whole body of one request (request(): a response with _preload_content=False), by the deadline `until`,
    at most `limit` bytes; raises what the request raised, or NodeSourceError(late) at the deadline."""
    body = _TimedBody(request, until, late)
    chunks, size = [], 0
    try:
        while True:
            chunk = body.read(CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise NodeSourceError(f"{late.split(' did not send ')[0]} sent more than {limit >> 20} MiB")
            chunks.append(chunk)
    finally:
        body.close()


class _TimedBody:
    """One list request and its body, run on a daemon thread; read() never waits past the deadline.

    urllib3's timeouts bound each socket operation, not a request: a server that sends a byte every few seconds
    (headers or body) keeps a plain read alive forever. Here the request runs on its own thread and hands its body
    over in chunks through a small queue (so memory stays bounded); the reader waits for each chunk only until the
    deadline, and a timed-out request has its socket shut down.
    """

    def __init__(self, request: Any, deadline: float, late: str) -> None:
        import queue
        import threading

        self._queue: Any = queue.Queue(maxsize=4)
        self._deadline = deadline
        self._late = late
        self._closed = False
        self.response: Any = None
        self.started = False  # True once the server answered (status and headers)
        threading.Thread(target=self._run, args=(request,), daemon=True, name="gpuconf-list-nodes").start()

    def _run(self, request: Any) -> None:
        try:
            self.response = request()
            self.started = True
            while not self._closed:
                data = self.response.read(CHUNK)
                self._put(("data", data))
                if not data:
                    self.response.release_conn()
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread, which raises it
            self._put(("error", exc))

    def _put(self, item: tuple) -> None:
        import queue

        while not self._closed:
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def read(self, size: int = -1) -> bytes:
        """The next chunk of the body (b"" at its end); raises what the request raised, or the deadline."""
        import queue
        import time

        left = self._deadline - time.monotonic()
        try:
            if left <= 0:
                raise queue.Empty
            kind, value = self._queue.get(timeout=left)
        except queue.Empty:
            raise NodeSourceError(self._late) from None
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """Stop the helper thread; a request still under way has its socket shut down."""
        self._closed = True
        response = self.response
        if response is not None and not getattr(response, "closed", True):
            try:
                response.shutdown()
            except (AttributeError, OSError):  # urllib3 < 2.3 has no shutdown(); a finished response needs none
                pass


class _Records(logging.Handler):
    """Keeps the log records it is given."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:  # noqa: D102 - logging API
        self.records.append(record)


class ClusterNodes:
    """The nodes of a live cluster, listed with the official client: read-only, nodes only, `limit`/`continue` pages.

    Each page's body is streamed through NodeListReader instead of the client's model classes, which would build a
    typed object per field of every node. Each request, from connecting to its last byte, must finish within
    `timeout` seconds. The client's warnings (urllib3's InsecureRequestWarning and the like) are not printed:
    `notes` holds one line of gpuconf's own for each kind, for the command to print.
    """

    def __init__(self, kubeconfig: str, context: str | None = None, page_size: int | None = None,
                 timeout: float = 30.0) -> None:
        self.kubeconfig = kubeconfig
        self.context = context
        self.page_size = page_size or PAGE_SIZE
        self.timeout = timeout
        self.notes: list[str] = []
        self._host = "the cluster"

    def __iter__(self) -> Iterator[dict]:
        with self.captured():
            yield from self._list()

    @contextlib.contextmanager
    def captured(self) -> Iterator[None]:
        """The client's warnings and log lines while the block runs, turned into gpuconf's notes."""
        import warnings

        # The client logs too: kubernetes' kubeconfig loader through the root logger (an exec plugin that fails), which
        # would also make logging print urllib3's retries. A handler of our own on the root logger takes the records
        # (and keeps logging from configuring a stderr handler of its own).
        capture = _Records(logging.WARNING)
        records = capture.records
        root = logging.getLogger()
        root.addHandler(capture)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield
            finally:
                root.removeHandler(capture)
                self._note(caught)
                self._log_notes(records)

    def _log_notes(self, records: list) -> None:
        """The client's log lines of warning level and above, once each, in gpuconf's words; urllib3's retries are
        left out (the outcome of the request is what gpuconf reports)."""
        seen = set()
        for record in records:
            if record.name.startswith("urllib3") and "Retrying" in str(record.msg):
                continue
            text = _one_line(record.getMessage())
            if text and text not in seen:
                seen.add(text)
                self.notes.append(f"warning: the Kubernetes client reported: {text}")

    def _note(self, caught: list) -> None:
        """One line per kind of library warning; warnings of other code are passed on unchanged."""
        import warnings

        seen = set()
        for w in caught:
            category = w.category.__name__
            if not _library_warning(w):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            elif category not in seen:
                seen.add(category)
                if category == "InsecureRequestWarning":
                    self.notes.append(f"warning: TLS certificate verification is off for {self._host} "
                                      "(insecure-skip-tls-verify in the kubeconfig): anyone on the path can answer "
                                      "as the cluster")
                else:
                    first = str(w.message).strip().splitlines()[0] if str(w.message).strip() else category
                    self.notes.append(f"warning: the Kubernetes client warned ({category}): {_one_line(first)}")

    def _list(self) -> Iterator[dict]:
        try:
            import urllib3
            from kubernetes import client
            from kubernetes.client.exceptions import ApiException
        except ImportError:  # pragma: no cover - a declared dependency
            raise NodeSourceError("the kubernetes Python client is not installed (pip install kubernetes)") from None

        kubeconfig, context, timeout = self.kubeconfig, self.context, self.timeout
        configuration = client_configuration(kubeconfig, context)
        host = self._host = configuration.host
        api = client.ApiClient(configuration)
        core = client.CoreV1Api(api)
        token: str | None = None
        page = 0
        late = (f"the cluster at {host} did not send the node list within {timeout:g} s (--request-timeout): a "
                "stalled or very slow API server")
        # One deadline for the whole listing, every page included: a server that answers each page just in time
        # cannot stretch the audit either.
        until = deadline(timeout)
        try:
            while True:

                def request(token: str | None = token) -> Any:
                    return core.list_node(limit=self.page_size, _continue=token, _preload_content=False,
                                          _request_timeout=request_timeout(until))

                body = _TimedBody(request, until, late)
                reader = NodeListReader(body, f"{host}/api/v1/nodes (page {page + 1})")
                try:
                    yield from reader
                except ApiException as exc:
                    raise NodeSourceError(_api_problem(exc, host, context, continued=token is not None)) from None
                except urllib3.exceptions.HTTPError as exc:
                    if body.started:
                        raise NodeSourceError(f"the connection to {host} broke while reading nodes: "
                                              f"{_reason(exc)}") from None
                    raise NodeSourceError(f"cannot reach the cluster at {host}: {_reason(exc)}") from None
                except (ValueError, TypeError) as exc:
                    if body.started:
                        raise
                    # The request could not be built from the kubeconfig. The message is not shown: it quotes the
                    # offending header, which holds the credentials.
                    raise NodeSourceError(f"{kubeconfig}: the HTTP client refused the request to {host} built from "
                                          f"this kubeconfig ({type(exc).__name__}: a token or header value with a "
                                          "line break or a character HTTP does not allow?)") from None
                finally:
                    body.close()
                token = (reader.header.get("metadata") or {}).get("continue") or None
                page += 1
                if token is None:
                    return
        finally:
            api.close()


class ClusterPods(ClusterNodes):
    """The running pods of a live cluster, listed read-only with the official client (GET /api/v1/pods with the
    field selector status.phase=Running, `limit`/`continue` pages), for counting what an impact stops.

    Each page is one JSON document; the whole listing, every page included, must finish within `timeout` seconds.
    """

    def _list(self) -> Iterator[dict]:
        import json

        import urllib3
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        configuration = client_configuration(self.kubeconfig, self.context)
        host = self._host = configuration.host
        api = client.ApiClient(configuration)
        core = client.CoreV1Api(api)
        late = (f"the cluster at {host} did not send the pod list within {self.timeout:g} s (--request-timeout): a "
                "stalled or very slow API server")
        until = deadline(self.timeout)
        token: str | None = None
        seen = 0  # pods of the earlier pages
        try:
            while True:

                def request(token: str | None = token) -> Any:
                    return core.list_pod_for_all_namespaces(field_selector="status.phase=Running",
                                                            limit=self.page_size, _continue=token,
                                                            _preload_content=False,
                                                            _request_timeout=request_timeout(until))

                try:
                    raw = read_all(request, until, late, MAX_PAGE)
                except ApiException as exc:
                    raise NodeSourceError(_api_problem(exc, host, self.context, continued=token is not None,
                                                       resource="pods")) from None
                except urllib3.exceptions.HTTPError as exc:
                    raise NodeSourceError(f"the connection to {host} broke while reading pods: {_reason(exc)}") \
                        from None
                try:
                    page = json.loads(raw)
                except (ValueError, RecursionError) as exc:
                    raise NodeSourceError(f"{host}/api/v1/pods: not JSON ({exc})") from None
                items = page.get("items") if isinstance(page, dict) else None
                if not isinstance(items, list) or page.get("kind") not in (None, "List", "PodList"):
                    raise NodeSourceError(f"{host}/api/v1/pods: expected a PodList")
                for index, item in enumerate(items, start=seen):
                    problem = check_pod(item) if isinstance(item, dict) else f"{_kind(item)}, not an object"
                    if problem is not None:
                        raise NodeSourceError(f"{host}/api/v1/pods: item {index} is not a Pod ({problem})")
                    yield item
                seen += len(items)
                token = (page.get("metadata") or {}).get("continue") or None
                if token is None:
                    return
        finally:
            api.close()


#: Whether a kubeconfig may run the credential plugin its user names (users[].user.exec; a gcp auth-provider, which
#: runs its cmd-path or gcloud): yes, as kubectl does, unless the command was given --no-exec-plugins
#: (set_exec_plugins). EKS, GKE and AKS kubeconfigs get their tokens that way.
_EXEC_PLUGINS = [True]
#: The anonymous files that hold a kubeconfig's client key, certificate and CA (kept open for the process).
_MEMORY_FILES: list[int] = []


def set_exec_plugins(allowed: bool) -> None:
    """Allow or refuse the credential plugins of every kubeconfig this process reads (--no-exec-plugins)."""
    _EXEC_PLUGINS[0] = allowed


def _plugin(user: Any) -> str | None:
    """What the kubeconfig's user runs to get credentials, in words, or None (user: the client's ConfigNode)."""

    def get(node: Any, key: str) -> Any:
        try:
            return node[key] if node is not None and key in node else None
        except TypeError:  # a scalar where a mapping belongs: the client's loader says what is wrong
            return None

    exec_ = get(user, "exec")
    if exec_ is not None:
        return f"the exec credential plugin {str(get(exec_, 'command'))!r} (user.exec)"
    provider = get(user, "auth-provider")
    command = get(get(provider, "config"), "cmd-path")
    if command is not None:
        return f"the auth-provider command {str(command)!r} (user.auth-provider.config.cmd-path)"
    if provider is not None and get(provider, "name") == "gcp":
        return "the gcp auth-provider, which runs gcloud (user.auth-provider)"
    return None


def client_configuration(kubeconfig: str, context: str | None) -> Any:
    """The Kubernetes client's configuration from a kubeconfig (raises NodeSourceError when it cannot be used): one
    retry on connection errors, none on reads, so an unreachable cluster fails in seconds, not minutes.

    The kubeconfig's credential plugin runs, as with kubectl, unless set_exec_plugins(False) refused it. The client
    writes client-key-data (and the certificate and CA data) to files in $TMPDIR that only its atexit hook removes,
    which the `gpuconf` command's os._exit skips: they move into anonymous memory files here (off_disk), so no key
    is left on disk on any exit path."""
    import urllib3
    import yaml
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    where = f" (context {context!r})" if context else ""
    try:
        loader = config.kube_config._get_kube_config_loader(filename=kubeconfig, active_context=context,
                                                            persist_config=False)
        plugin = _plugin(loader._user)
        if plugin is not None and not _EXEC_PLUGINS[0]:
            raise NodeSourceError(f"{kubeconfig}{where}: this kubeconfig runs {plugin} to get its credentials, and "
                                  "--no-exec-plugins refuses that")
        try:
            loader.load_and_set(configuration)
        finally:
            off_disk(configuration)
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError, IndexError,
            yaml.YAMLError) as exc:
        raise NodeSourceError(f"{kubeconfig}{where}: cannot use this kubeconfig: {_one_line(str(exc))}") from None
    configuration.retries = urllib3.Retry(total=1, connect=1, read=0, status=0, backoff_factor=0.2, redirect=0)
    return configuration


def off_disk(configuration: Any) -> None:
    """Move the credential files the Kubernetes client wrote (kube_config's temp files) into anonymous memory files
    (Linux memfd: the kernel frees them with the process, whatever ends it), and delete them from disk. Without
    memfd they stay until remove_temp_credentials, which every exit of the `gpuconf` command calls."""
    import os

    from kubernetes.config import kube_config

    written = kube_config._temp_files
    if not hasattr(os, "memfd_create") or not written:
        return
    moved = {}
    for path in set(written.values()):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fd = os.memfd_create("gpuconf-kubeconfig")
        os.write(fd, data)
        _MEMORY_FILES.append(fd)
        moved[path] = f"/proc/self/fd/{fd}"
    for attribute in ("key_file", "cert_file", "ssl_ca_cert"):
        if getattr(configuration, attribute, None) in moved:
            setattr(configuration, attribute, moved[getattr(configuration, attribute)])
    remove_temp_credentials()


def remove_temp_credentials() -> None:
    """Delete the credential files the Kubernetes client wrote to $TMPDIR, if it was used (a no-op otherwise)."""
    import sys

    kube_config = sys.modules.get("kubernetes.config.kube_config")
    if kube_config is not None:
        kube_config._cleanup_temp_files()


def read_cluster_pods(kubeconfig: str, context: str | None = None, timeout: float = 30.0) -> ClusterPods:
    """The running pods of the cluster a kubeconfig points at (see ClusterPods)."""
    return ClusterPods(kubeconfig, context, timeout=timeout)


def read_cluster_nodes(kubeconfig: str, context: str | None = None, page_size: int | None = None,
                       timeout: float = 30.0) -> ClusterNodes:
    """The nodes of the cluster a kubeconfig points at (see ClusterNodes)."""
    return ClusterNodes(kubeconfig, context, page_size, timeout)


def _library_warning(w: Any) -> bool:
    """True for warnings raised by the HTTP and Kubernetes client libraries."""
    path = str(w.filename).replace("\\", "/")
    return any(part in path for part in ("/urllib3/", "/kubernetes/", "/ssl.py", "/certifi/")) or \
        w.category.__module__.startswith(("urllib3", "kubernetes"))


def _one_line(text: str) -> str:
    """A message on one line: the library's own messages may hold newlines."""
    return " ".join(text.split())


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    # urllib3 wraps the socket error in layers of "<connection object>: Failed to establish ...": keep the last.
    return text.rsplit(": ", 1)[-1] if "Failed to establish" in text else text


def status_message(exc: Any) -> str:
    """The message of the metav1.Status an API error carries as its body, or ""."""
    try:
        body = json.loads(exc.body) if exc.body else {}
        return body.get("message", "") if isinstance(body, dict) else ""
    except (TypeError, ValueError):
        return ""


def _api_problem(exc: Any, host: str, context: str | None, continued: bool, resource: str = "nodes") -> str:
    """A user-facing message for an API error status (the body is a metav1.Status) of a list of `resource`."""
    message = status_message(exc)
    if not exc.status:  # raised by the client itself (TLS handshake, a request it could not build)
        return f"cannot reach the cluster at {host}: {str(exc.reason).splitlines()[-1]}"
    who = f"context {context!r}" if context else "the kubeconfig's current context"
    detail = f": {message}" if message else ""
    if exc.status == 401:
        return (f"the cluster at {host} rejected the credentials of {who} (401 Unauthorized){detail}; "
                "log in again or refresh the token")
    if exc.status == 403 and resource == "pods":
        return (f"the credentials of {who} may not list pods (403 Forbidden){detail}; gpuconf diff counts running "
                "pods with the cluster-scoped `list` verb on `pods`, or reads them from --pods FILE")
    if exc.status == 403:
        return (f"the credentials of {who} may not list nodes (403 Forbidden){detail}; gpuconf audit needs the "
                "cluster-scoped `list` verb on `nodes` (a ClusterRole with apiGroups [\"\"], resources [nodes], "
                "verbs [list]) and nothing else")
    if exc.status == 410 and continued:
        return (f"the cluster at {host} expired the list's continue token before the last page was read (410 Gone)"
                f"{detail}; run the command again")
    status = f"{exc.status} {exc.reason}" if exc.status else str(exc.reason)
    return f"listing {resource} at {host} failed ({status}){detail}"

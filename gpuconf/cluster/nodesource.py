"""Where nodes come from: a `kubectl get nodes -o json` file (streamed), or a live cluster (listed page by page).

Both sources yield plain Node dicts one at a time and never hold the whole list: a 10,000-node cluster's JSON is
about 150 MB, its parsed form several times that. The stdlib json module has no incremental parser, so the reader
walks the top-level object itself and hands each item of `items` to json's C decoder (raw_decode) as soon as the
item's text is in the buffer; only one read chunk and the item being decoded are in memory at a time.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import IO, Any, Iterator

#: Read size; doubled while a single value does not fit, so a huge item costs amortised linear time.
CHUNK = 1 << 20
#: kubectl's chunk size for lists (`kubectl get --chunk-size`), also the page size against a live cluster.
PAGE_SIZE = 500
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class NodeSourceError(Exception):
    """The nodes could not be read (bad file, unreachable cluster, no permission): a message for the user."""


class NodeListReader:
    """Iterates over the Node objects of a NodeList (or kubectl's `List`, or a single Node) read from a byte stream.

    After iteration, `header` holds the list's other top-level fields (kind, apiVersion, metadata with `continue`).
    """

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
            raise NodeSourceError(f"{self.source}: not UTF-8 text (expected the output of "
                                  "`kubectl get nodes -o json`)") from None
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
                raise self._error(exc.msg, self._consumed + exc.pos) from None
            # A number (or literal) that ends exactly at the buffer's end may go on in the next chunk.
            if end == len(self._buf) and self._grow(start_size):
                continue
            self._want = max(self._want, 2 * (end - self._pos))
            self._pos = end
            return value

    def _grow(self, start_size: int) -> bool:
        if len(self._buf) - self._pos > start_size + self._read_size:
            self._read_size *= 2  # one value spans several chunks: read bigger ones
        return self._more()

    def _error(self, message: str, offset: int | None = None) -> NodeSourceError:
        offset = self._consumed + self._pos if offset is None else offset
        return NodeSourceError(f"{self.source}: not a valid node list (character {offset + 1}): {message}")

    # -- structure ------------------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict]:
        first = self._peek()
        if first != "{":
            hint = " (YAML? use `kubectl get nodes -o json`)" if first and first not in "[" else ""
            raise NodeSourceError(f"{self.source}: expected a JSON NodeList, the output of "
                                  f"`kubectl get nodes -o json`{hint}")
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
            raise self._error("unexpected text after the node list")
        kind = self.header.get("kind")
        if not items:
            if kind == "Node":  # `kubectl get node NAME -o json`
                yield self.header
                return
            raise NodeSourceError(f"{self.source}: no `items`: expected a NodeList (`kubectl get nodes -o json`)"
                                  + (f", got kind {kind!r}" if kind else ""))
        if kind not in (None, "List", "NodeList"):
            raise NodeSourceError(f"{self.source}: expected a NodeList, got kind {kind!r}")

    def _items(self) -> Iterator[dict]:
        self._expect("[", "'[' (items is a list)")
        if self._peek() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            item = self._value()
            if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
                what = item.get("kind") if isinstance(item, dict) else type(item).__name__
                raise NodeSourceError(f"{self.source}: item {index} is a {what}, not a Node")
            yield item
            index += 1
            if self._expect(",]", "',' or ']'") == "]":
                return


def read_nodes_file(path: str) -> Iterator[dict]:
    """Stream the nodes of a `kubectl get nodes -o json` file; `-` reads standard input."""
    import sys

    if path == "-":
        yield from NodeListReader(sys.stdin.buffer, "<stdin>")
        return
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below, also when the consumer stops early
    except OSError as exc:
        raise NodeSourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with stream:
        yield from NodeListReader(stream, path)


# --- a live cluster ----------------------------------------------------------------------------------------------


def read_cluster_nodes(kubeconfig: str, context: str | None = None, page_size: int | None = None,
                       timeout: float = 30.0) -> Iterator[dict]:
    """List the cluster's nodes with the official client: read-only, nodes only, `limit`/`continue` pages.

    Each page's body is streamed through NodeListReader instead of the client's model classes, which would build a
    typed object per field of every node.
    """
    try:
        import urllib3
        from kubernetes import client, config
        from kubernetes.client.exceptions import ApiException
        from kubernetes.config.config_exception import ConfigException
    except ImportError:  # pragma: no cover - a declared dependency
        raise NodeSourceError("the kubernetes Python client is not installed (pip install kubernetes)") from None

    page_size = page_size or PAGE_SIZE
    configuration = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration,
                                persist_config=False)
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = f" (context {context!r})" if context else ""
        raise NodeSourceError(f"{kubeconfig}{where}: cannot use this kubeconfig: {exc}") from None
    # One retry on connection errors, no retries on reads: an unreachable cluster fails in seconds, not minutes.
    configuration.retries = urllib3.Retry(total=1, connect=1, read=0, status=0, backoff_factor=0.2, redirect=0)
    host = configuration.host
    api = client.ApiClient(configuration)
    core = client.CoreV1Api(api)
    token: str | None = None
    page = 0
    try:
        while True:
            try:
                response = core.list_node(limit=page_size, _continue=token, _preload_content=False,
                                          _request_timeout=(min(10.0, timeout), timeout))
            except ApiException as exc:
                raise NodeSourceError(_api_problem(exc, host, context, continued=token is not None)) from None
            except urllib3.exceptions.HTTPError as exc:
                raise NodeSourceError(f"cannot reach the cluster at {host}: {_reason(exc)}") from None
            reader = NodeListReader(response, f"{host}/api/v1/nodes (page {page + 1})")
            try:
                yield from reader
            except urllib3.exceptions.HTTPError as exc:
                raise NodeSourceError(f"the connection to {host} broke while reading nodes: {_reason(exc)}") from None
            finally:
                response.release_conn()
            token = (reader.header.get("metadata") or {}).get("continue") or None
            page += 1
            if token is None:
                return
    finally:
        api.close()


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    # urllib3 wraps the socket error in layers of "<connection object>: Failed to establish ...": keep the last.
    return text.rsplit(": ", 1)[-1] if "Failed to establish" in text else text


def _api_problem(exc: Any, host: str, context: str | None, continued: bool) -> str:
    """A user-facing message for an API error status (the body is a metav1.Status)."""
    message = ""
    try:
        body = json.loads(exc.body) if exc.body else {}
        message = body.get("message", "") if isinstance(body, dict) else ""
    except (TypeError, ValueError):
        pass
    if not exc.status:  # raised by the client itself (TLS handshake, a request it could not build)
        return f"cannot reach the cluster at {host}: {str(exc.reason).splitlines()[-1]}"
    who = f"context {context!r}" if context else "the kubeconfig's current context"
    detail = f": {message}" if message else ""
    if exc.status == 401:
        return (f"the cluster at {host} rejected the credentials of {who} (401 Unauthorized){detail}; "
                "log in again or refresh the token")
    if exc.status == 403:
        return (f"the credentials of {who} may not list nodes (403 Forbidden){detail}; gpuconf audit needs the "
                "cluster-scoped `list` verb on `nodes` (a ClusterRole with apiGroups [\"\"], resources [nodes], "
                "verbs [list]) and nothing else")
    if exc.status == 410 and continued:
        return (f"the cluster at {host} expired the list's continue token before the last page was read (410 Gone)"
                f"{detail}; run the command again")
    status = f"{exc.status} {exc.reason}" if exc.status else str(exc.reason)
    return f"listing nodes at {host} failed ({status}){detail}"

"""A large PodList or NodeList in kubectl's JSON layout, read by its structure instead of decoded whole.

`kubectl get pods -n <operator namespace> -o json` of a 5,000-node cluster is 40,000 operand pods and some 400 MB of
JSON: decoding it takes longer than the whole audit of its nodes, and nearly every pod in it is Running and ready,
which the diagnosis needs as one fact per node (the operand runs there). kubectl writes JSON with a four-space indent
and sorted keys, and a JSON string holds no raw line break, so a line break and exactly N spaces before a key can only
be structure: the item, its fields (metadata, spec, status) at twelve spaces, theirs at sixteen, labels at twenty,
the containers' statuses' fields at twenty-four. A pod is read here by those keys alone: its `app` label (and
`app.kubernetes.io/component`, the DRA driver's component label, a ComputeDomain's IMEX daemon label),
`spec.nodeName`, `status.phase`, and whether any container status says
`"ready": false`. Operand pods that are Running with no container unready, and pods of other apps that are not
Pending, are counted and never decoded; every other pod is decoded whole and handed on as a dict.

A NodeList in that layout is cut into its nodes the same way, each node's status.images (half its text, nothing
the audit reads) dropped before it is decoded.

Anything that is not that layout (another indent, compact JSON, YAML) is refused before the first item is taken
(skim returns False, node_texts None) and read by the generic streaming reader instead.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

HEAD = b'{\n    "apiVersion": "v1",\n    "items": [\n'
OPEN = b"        {\n"
CLOSE = b"\n        }"
NEXT = b",\n"
DONE = b"\n    ]"
CHUNK = 8 << 20
_I16, _I20, _I24 = b"\n" + b" " * 16, b"\n" + b" " * 20, b"\n" + b" " * 24
# Needles end in a rare character (a colon), which a substring search skips over fastest; the indent is checked at
# each hit.
LABELS, LABELS_END = b'"labels":', b"\n                }"
APP, COMPONENT, DRA = b'"app":', b'"app.kubernetes.io/component":', b'"dra-driver-nvidia-gpu-component":'
IMEX = b'"resource.nvidia.com/computeDomain":'
NODE, PHASE, NAME, NAMESPACE = b'"nodeName":', b'"phase":', b'"name":', b'"namespace":'
NOT_READY = b'"ready": false'


def _key(data: Any, needle: bytes, indent: bytes, start: int, end: int) -> int:
    """The position of `needle` at exactly `indent` in data[start:end], or -1."""
    width = len(indent)
    i = data.find(needle, start, end)
    while i >= 0 and data[i - width:i] != indent:
        i = data.find(needle, i + 1, end)
    return i


def _value(data: bytes, at: int, needle: bytes) -> str | None:
    """The plain string after `needle` at `at` (`: "value"`); None when it is not a string or holds an escape."""
    i = at + len(needle)
    if data[i:i + 2] != b' "':
        return None
    j = data.find(b'"', i + 2, i + 1024)
    value = data[i + 2:j]
    if j < 0 or b"\\" in value:
        return None
    return value.decode("utf-8", "replace")


def skim(stream: Any, operand_of: Callable[[dict], str | None], healthy: Callable[..., bool],
         other: Callable[[], None], whole: Callable[[bytes, int], None]) -> bool:
    """Walk the pods of a PodList in kubectl's layout: healthy(node, operand, name) for an operand pod Running with
    every container ready (name() reads its metadata.name; False: decode it after all), other() for another app's
    pod that is not Pending, whole(text, index) for every other pod. False (having called nothing) when the stream
    does not start in kubectl's layout."""
    if stream.read(len(HEAD)) != HEAD:
        return False
    # A pod ends after its status.phase: the close at eight spaces that follows.
    for index, (buf, start, phase_at, end) in enumerate(_items(stream, PHASE, "PodList", "status.phase")):
        _pod(buf, start, phase_at, end, index, operand_of, healthy, other, whole)
    return True


def _items(stream: Any, anchor: bytes, kind: str, what: str) -> Iterator[tuple[bytearray, int, int, int]]:
    """(buffer, start, anchor's position, end) of each item of a list in kubectl's layout, read after its head: an
    item is the text from its open at eight spaces to the first close at eight spaces after `anchor` (a key at
    sixteen spaces every item has). The buffer is reused: an item's text is valid until the next one."""
    # One buffer for the whole read: fresh 8 MiB strings per chunk would each cost the page faults of new memory.
    buf = bytearray(2 * CHUNK)
    view = memoryview(buf)
    size, pos, index, eof = 0, 0, 0, False
    while True:
        at = _key(buf, anchor, _I16, pos, size)
        close = buf.find(CLOSE, at, size) if at >= 0 else -1
        tail = close + len(CLOSE)
        if close < 0 or tail + len(DONE) > size:
            if eof:
                if bytes(buf[pos:size]).strip() == b"":
                    return
                raise ValueError(f"item {index} does not end (no {what}, or cut short)")
            size -= pos
            buf[:size] = buf[pos:pos + size]
            pos = 0
            if size + CHUNK > len(buf):  # one item larger than a chunk: a bigger buffer
                view.release()
                buf.extend(bytes(size + CHUNK - len(buf)))
                view = memoryview(buf)
            got = stream.readinto(view[size:size + CHUNK])
            eof = not got
            size += got or 0
            continue
        if buf[pos:pos + len(OPEN)] != OPEN:
            raise ValueError(f"item {index} does not open at eight spaces")
        yield buf, pos, at, tail
        index += 1
        if buf.startswith(NEXT, tail):
            pos = tail + len(NEXT)
        elif buf.startswith(DONE, tail):
            _trailer(bytes(buf[tail + len(DONE):size]) + stream.read(1 << 16), kind)
            return
        else:
            raise ValueError(f"item {index - 1} is not followed by another or by the list's end")


def _pod(buf: bytes, start: int, phase_at: int, end: int, index: int, operand_of, healthy, other, whole) -> None:
    # Inlined: this runs for every pod of a cluster (tens of thousands), most of them in the first branch below.
    find = buf.find
    labels = find(LABELS, start, phase_at)
    while labels >= 0 and buf[labels - 17:labels] != _I16:
        labels = find(LABELS, labels + 1, phase_at)
    found: dict[str, str] = {}
    if labels >= 0:
        stop = find(LABELS_END, labels, phase_at)
        for needle, name in ((APP, "app"), (COMPONENT, "app.kubernetes.io/component"),
                             (DRA, "dra-driver-nvidia-gpu-component"), (IMEX, "resource.nvidia.com/computeDomain")):
            at = find(needle, labels, stop)
            while at >= 0 and buf[at - 21:at] != _I20:
                at = find(needle, at + 1, stop)
            if at >= 0:
                i = at + len(needle)
                j = find(b'"', i + 2, i + 1024)
                if buf[i:i + 2] == b' "' and j >= 0 and find(b"\\", i, j) < 0:
                    found[name] = buf[i + 2:j].decode("utf-8", "replace")
            if name == "app" and found:
                break  # the app label names the operand (the component label matters only without it)
    operand = operand_of(found)
    i = phase_at + len(PHASE)
    phase = buf[i + 2:find(b'"', i + 2, i + 64)] if buf[i:i + 2] == b' "' else None
    if operand is None and phase is not None and phase != b"Pending":
        other()
        return
    if operand is not None and phase == b"Running":
        node_at = find(NODE, labels if labels >= 0 else start, phase_at)
        while node_at >= 0 and buf[node_at - 17:node_at] != _I16:
            node_at = find(NODE, node_at + 1, phase_at)
        unready = find(NOT_READY, node_at, end) if node_at >= 0 else -1
        while unready >= 0 and buf[unready - 25:unready] != _I24:  # a container status's, not a label's text
            unready = find(NOT_READY, unready + 1, end)
        if node_at >= 0 and unready < 0:
            i = node_at + len(NODE)
            j = find(b'"', i + 2, i + 512)
            node = buf[i + 2:j] if buf[i:i + 2] == b' "' and j >= 0 else b""
            if node and b"\\" not in node and healthy(node.decode("utf-8", "replace"), operand,
                                                     lambda: _name(buf, start, end)):
                return
    whole(bytes(buf[start:end]), index)


def _trailer(text: bytes, kind: str = "PodList") -> None:
    """What follows the items must close the list as kubectl does (its kind, its metadata, the closing brace)."""
    import json

    try:
        doc = json.loads(b'{"items": []' + text)
    except ValueError:
        raise ValueError(f"the list does not end as a {kind} does (cut short?)") from None
    if doc.get("kind", "List") not in ("List", kind):
        raise ValueError(f"a list of kind {str(doc.get('kind'))[:40]!r}, not a {kind}")


def _name(buf: bytes, start: int, end: int) -> tuple[str, str] | None:
    """The pod's metadata.name and metadata.namespace (sixteen spaces, after its labels)."""
    meta_end = buf.find(b"\n            },", start, end)
    at, ns_at = _key(buf, NAME, _I16, start, meta_end), _key(buf, NAMESPACE, _I16, start, meta_end)
    name = _value(buf, at, NAME) if at >= 0 else None
    namespace = _value(buf, ns_at, NAMESPACE) if ns_at >= 0 else None
    return (name, namespace) if name and namespace else None


# --- nodes ---------------------------------------------------------------------------------------------------------

#: A node's status.images (the kubelet lists up to fifty images, each with its names and size): half a Node's text,
#: and nothing the audit reads. Cut out before the node is decoded.
IMAGES, IMAGES_END, NODE_INFO = b'"images":', b"\n                ]", b'"nodeInfo":'


def node_texts(stream: Any) -> Iterator[bytes] | None:
    """Each Node of a NodeList in kubectl's layout as its JSON text without status.images, or None (nothing read
    but the head, which the caller rewinds) when the stream is not in that layout."""
    if stream.read(len(HEAD)) != HEAD:
        return None
    return _node_texts(stream)


def _node_texts(stream: Any) -> Iterator[bytes]:
    # A node ends after its status.nodeInfo (which the kubelet always reports): the close at eight spaces.
    for buf, start, info, end in _items(stream, NODE_INFO, "NodeList", "status.nodeInfo"):
        # status.images comes right before nodeInfo (sorted keys): found backwards from there.
        images = buf.rfind(IMAGES, start, info)
        stop = info - len(_I16) - len(IMAGES_END) - 1
        if images >= 0 and buf[images - len(_I16):images] == _I16 and buf[stop:info - len(_I16)] == IMAGES_END + b",":
            yield bytes(buf[start:images - len(_I16)]) + bytes(buf[stop + len(IMAGES_END) + 1:end])
        else:
            yield bytes(buf[start:end])

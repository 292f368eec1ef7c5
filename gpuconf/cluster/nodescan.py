"""`gpuconf audit --nodes FILE` of a large cluster: the NodeList mapped into memory and read by its structure.

A 100,000-node `kubectl get nodes -o json` is some 2.6 GB: half of each node is status.images, and most of the rest
is the same from node to node of a node group (NFD's and GFD's labels, the allocatable GPUs, the kubelet's version).
Decoding it all takes ten times longer than reading it, so a regular file in kubectl's layout (cluster/skim.py:
four-space indent, sorted keys, no line break inside a string) is mapped, never read into memory, and each node is
cut by byte searches into the parts the audit reads (cluster/nodefacts.py NodeFacts):

  - metadata.labels, without the `kubernetes.io/hostname` line where that label is the node's name;
  - spec.taints and spec.unschedulable (the last keys of spec);
  - status.allocatable and status.capacity as written;
  - status.conditions without their times (the kubelet's heartbeats);
  - status.nodeInfo without bootID, machineID and systemUUID.

Those parts are the node's *key*: two nodes with one key are the same to the audit but for their names, and the
audit judges a key once (cluster/auditmemo.py). A node whose key was not seen before is decoded (without its images)
and checked exactly as the generic reader checks each node; what a later node of that key is not decoded for is text
the audit never reads (its annotations, addresses, images, ids and times). A search that ran on into the next node
(whose first keys then lie before what it found) sends the node to be decoded; the end of a node is found after its
status.nodeInfo, which the API server writes for every Node (a struct it never leaves out). A node that does not
fit the searches (no labels, managed fields between its labels and its name, an escape in its name, no conditions)
is decoded whole; no node text is read past 16 MiB, the generic reader's bound on one value. Standard input, a FIFO
and any other layout go to the generic streaming reader (cluster/nodesource.py).

A file of SPLIT bytes or more is cut in two at a node boundary: a forked process (gpuconf/parallel.py beside) reads
the larger part from the moment the command starts, while this one loads and validates the intent and then reads the
other; it hands back each node's name, key number and place in the file, and the keys.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Iterator

from . import skim

I12, I16, I20 = b"\n" + b" " * 12, b"\n" + b" " * 16, b"\n" + b" " * 20
#: An item's open and its first keys: every item of a NodeList in kubectl's layout starts so.
ITEM = b'        {\n            "apiVersion": "v1",\n            "kind": "Node",\n            "metadata": {\n'
BOUNDARY = b"\n        },\n"
# Each needle carries its indent, so that a hit is the key at that depth (no string holds a line break); where a
# character is rare in what is searched (a "}" after labels, a "]" in conditions, the I of nodeInfo after images) it
# is searched alone, a byte search that skips ten times faster, and its place checked.
NAME = I16 + b'"name"'
NAME_LINE = NAME + b': "'
LABELS_CLOSE = I16 + b"},"
LABELS = I16 + b'"labels": {\n'
LABELS_END = I16 + b"}"
SPEC = I12 + b'"spec": {'
STATUS, STATUS_KEY = I12 + b'"status": {', b'"status"'
TAINTS, UNSCHEDULABLE = I16 + b'"taints": ', I16 + b'"unschedulable": '
ALLOCATABLE = I16 + b'"allocatable": {'
CONDITIONS = I16 + b'"conditions": ['
IMAGES = I16 + b'"images": ['
INFO_AFTER_IMAGES = I16[1:] + b"]," + I16 + b'"nodeInfo"'
INFO_I = len(b'Info"')  # from the I of nodeInfo to the needle's end
INFO = I16 + b'"nodeInfo": {'
#: status.nodeInfo's ids (bootID, machineID, systemUUID) and the conditions' times: what differs from node to node.
_IDS = re.compile(rb'"(?:boot|machine|systemUU)ID": "[^"]*"')
_TIMES = re.compile(rb'Time": "[^"]*"')
HOSTNAME = b'kubernetes.io/hostname"'
HOSTNAME_LINE = I20 + b'"' + HOSTNAME + b': "'
CLOSE = I12 + b"}\n        }"
#: An item's first keys, found where only the next item could have them: a node without what was searched for.
ITEM_KEYS = b'"apiVersion": "v1",\n            "kind": "Node",\n            "metadata": {\n'
LIST_END = b"\n    ]"
#: The most labels text a key holds (a node's labels are some 8 KB; more is decoded node by node).
MOST_LABELS = 1 << 16
#: The largest node text read (the generic reader's bound on one value, cluster/nodesource.py MAX_VALUE).
MOST_NODE = 16 << 20
#: Files this large (and larger) are read by two processes where there are two cores.
SPLIT = 64 << 20
#: Bytes read before they are let go of (madvise): the file's pages count in the process's memory while mapped.
RELEASE = 8 << 20
#: The forked process's share of a split file, in percent: it starts while this one still loads the intent, and this
#: one then also gives every node its verdict, which about evens out (measured: 50 to 55 finish together).
SECOND = 50
_PLAIN_NAME = re.compile(rb"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


@dataclass(slots=True)
class Scanned:
    """One node of a mapped NodeList: its name and key (None: decode it, it did not fit), its index in the list,
    and where its text is (images cut out: status.images spans cut[0]:cut[1] when cut is not None)."""

    name: str
    key: Any
    index: int
    start: int
    end: int
    cut: tuple[int, int] | None
    source: Any  # the MappedNodes it is read from

    def text(self) -> bytes:
        """The node's JSON text without status.images."""
        m = self.source.map
        if self.cut is None:
            return m[self.start:self.end]
        return m[self.start:self.cut[0]] + m[self.cut[1]:self.end]

    def node(self) -> dict:
        """The Node object, decoded and checked as the generic reader checks it (NodeSourceError)."""
        from .nodesource import decode_node

        return decode_node(self.source.reader, self.text(), self.index)


class LayoutError(ValueError):
    """Where a list in kubectl's layout breaks off: the item's index and what is wrong with it."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"item {index} {reason}")
        self.index, self.reason = index, reason


def node_key(m: Any, s: int, limit: int, hint: list | None = None) -> tuple:
    """The node whose text starts at s (its open line): (name, key, end, images span or None), or (None, end) when
    it does not fit the searches (decode it); end is where its text ends (after its close). ValueError when no node
    ends before limit. hint: [where the hostname label was in the last node's labels], tried first."""
    find = m.find
    # metadata.labels, and the name right after them (no "}" in a label: the first one closes them); then spec and
    # status. A node without them, or with another key between, is decoded, and found to end after its nodeInfo.
    la = find(LABELS, s, limit)
    n = find(b"}", la, limit) + 2 if la >= 0 else -1
    sp = find(SPEC, n, limit) if n >= 0 else -1
    st = find(STATUS, sp, limit) if sp >= 0 else -1
    if st < 0 or m[n - len(LABELS_CLOSE):n + len(NAME_LINE)] != LABELS_CLOSE + NAME_LINE \
            or find(ITEM_KEYS, s + len(ITEM), la) >= 0 or find(ITEM_KEYS, n, st) >= 0:  # the next node's
        return None, _end(m, s, limit)
    # status.allocatable, capacity and conditions, each after the one before (searched no further than the item
    # that would follow: a node without them is decoded); then status.images and nodeInfo, which follows them.
    al = find(ALLOCATABLE, st, limit)
    co = find(CONDITIONS, al, limit) if al >= 0 else -1
    if co < 0 or find(STATUS_KEY, st + len(STATUS), co) >= 0:  # none of its own: those found are the next node's
        return None, _end(m, s, limit)
    ce = find(b"]", co + len(CONDITIONS), limit) - len(I16)  # a "]" (rare there) at sixteen spaces
    while ce >= 0 and m[ce:ce + len(I16)] != I16:
        ce = find(b"]", ce + len(I16) + 1, limit) - len(I16)
    if ce < 0:
        return None, _end(m, s, limit)
    img = find(IMAGES, ce, limit)
    if img >= 0 and find(INFO, ce, img) < 0:
        x = _after_images(m, img, limit)
        cut = (img, x + len(I16) + 1) if x >= 0 else None
        x = cut[1] if cut else -1
    else:
        x, cut = find(INFO, ce, limit), None
    ie = find(LABELS_END, x, limit) if x >= 0 else -1
    end = find(CLOSE, ie, limit) if ie >= 0 else -1
    if end < 0:
        raise ValueError("does not end (no status.nodeInfo, or cut short)")
    end += len(CLOSE)
    # The labels, the block that closes right before the name (managed fields in between: decoded).
    v = n + len(NAME_LINE)
    ne = find(b'"', v, v + 254)
    name = m[v:ne]
    if ne < 0 or n - la > MOST_LABELS or not _PLAIN_NAME.fullmatch(name):
        return None, end
    le = n - len(LABELS_CLOSE)
    line = HOSTNAME_LINE + name + b'"'
    h = la + hint[0] if hint else -1  # where the last node had it: the labels of a node group differ only there
    if m[h:h + len(line)] != line:
        h = find(HOSTNAME, la, le) - len(I20) - 1
    if h >= la and len(name) <= 63 and m[h:h + len(line)] == line:
        if hint:
            hint[0] = h - la
        labels, rest = m[la:h], m[h + len(line):le]
    else:
        labels, rest = m[la:le], b""
    t = find(TAINTS, sp, st)
    if t < 0:
        t = find(UNSCHEDULABLE, sp, st)
    key = (labels, rest, m[t:st] if t >= 0 else b"", m[al:co], _TIMES.sub(b"", m[co:ce]), _IDS.sub(b"", m[x:ie]))
    return name.decode("ascii"), key, end, cut


def _after_images(m: Any, img: int, limit: int) -> int:
    """Where status.images closes before status.nodeInfo: found by its capital I, which image names, tags and
    digests (lower case) rarely hold, so a byte search (memchr) skips the images' text; the needle after a few
    misses."""
    find, tries = m.find, 8
    at = find(b"I", img, limit)
    while at >= 0 and tries:
        x = at + INFO_I - len(INFO_AFTER_IMAGES)
        if m[x:at + INFO_I] == INFO_AFTER_IMAGES:
            return x
        at, tries = find(b"I", at + 1, limit), tries - 1
    return find(INFO_AFTER_IMAGES, img, limit) if at >= 0 else -1


def _end(m: Any, s: int, limit: int) -> int:
    """Where the node at s ends: the close at eight spaces after its status.nodeInfo."""
    x = skim._key(m, b'"nodeInfo":', I16, s, limit)
    end = m.find(CLOSE, x, limit) if x >= 0 else -1
    if end < 0:
        raise ValueError("does not end (no status.nodeInfo, or cut short)")
    return end + len(CLOSE)


def scan(m: Any, start: int, stop: int) -> Iterator[tuple]:
    """(name, key, start, end, cut) of each node from start (an item's open) to stop (the list's close): name None
    when the node is to be decoded. ValueError when the layout breaks off."""
    pos, index, kept, hint = start, 0, start - start % mmap.PAGESIZE, [0]
    while True:
        if pos - kept > RELEASE:  # what is read leaves this process's memory (the file stays cached)
            done = pos - pos % mmap.PAGESIZE
            m.madvise(mmap.MADV_DONTNEED, kept, done - kept)
            kept = done
        if m[pos:pos + 10] != b"        {\n":
            raise LayoutError(index, "does not open at eight spaces")
        limit = min(stop, pos + MOST_NODE)
        try:
            got = node_key(m, pos, limit, hint)
        except ValueError as exc:
            if limit < stop:
                raise LayoutError(index, f"does not end within {MOST_NODE >> 20} MiB (a Node is far smaller)") \
                    from None
            raise LayoutError(index, str(exc)) from None
        if got[0] is None:
            name, key, end, cut = None, None, got[1], None
        else:
            name, key, end, cut = got
        yield name, key, pos, end, cut
        index += 1
        if end == stop:
            return
        if m[end:end + 2] != b",\n":
            raise LayoutError(index - 1, "is not followed by another or by the list's end")
        pos = end + 2


@dataclass(slots=True)
class Part:
    """The nodes of one part of a mapped list: their names, key numbers (-1: decode the node) and places
    (start, end, images start, images end: 4 numbers a node, -1 where no images are cut), the keys, and the index
    of its first node in the list."""

    names: list
    ids: Any
    keys: list
    spans: Any
    base: int
    source: Any

    def node(self, i: int) -> Scanned:
        """Node i of the part."""
        kid, at, spans = self.ids[i], 4 * i, self.spans
        cut = (spans[at + 2], spans[at + 3]) if spans[at + 2] >= 0 else None
        return Scanned(self.names[i] or None, self.keys[kid] if kid >= 0 else None, self.base + i, spans[at],
                       spans[at + 1], cut, self.source)


class MappedNodes:
    """The nodes of a NodeList file in kubectl's layout, mapped (Scanned, in the list's order). A large file's second
    part is read from the start by a forked process, while the audit validates its intent and reads the first."""

    def __init__(self, path: str, m: Any) -> None:
        from .. import parallel
        from .nodesource import NodeListReader

        self.path, self.map = path, m
        self.reader = NodeListReader(None, path)  # type: ignore[arg-type] - for its checks and messages only
        self.start, size = len(skim.HEAD), len(m)
        self.tail = m.rfind(LIST_END, max(self.start - 1, size - (1 << 16)))
        self.stop = self.tail if self.tail >= 0 else size
        self.released = 0
        self.other: Any = None
        if self.stop - self.start >= SPLIT and parallel.can_fork() and parallel.cores() >= 2:
            # The forked process starts while this one is still validating the intent: it takes the larger part.
            at = self.start + (self.stop - self.start) * (100 - SECOND) // 100
            split = m.find(BOUNDARY + b"        {\n", at, self.stop)
            if split >= 0:
                self.other = parallel.beside(_part, m, split + len(BOUNDARY), self.stop)
                self.stop = split + len(BOUNDARY) - 2

    def parts(self) -> Iterator[Part]:
        """This process's part of the list, read now, then the forked process's, as it hands it back; then the
        list's trailer is checked. NodeSourceError where the layout breaks off (after the nodes before it)."""
        m, base = self.map, 0
        reads = [lambda: _part(m, self.start, self.stop) if self.stop > self.start else ([], [], [], [], None)]
        if self.other is not None:
            reads.append(self.other)
        for read in reads:
            names, ids, keys, spans, error = read()
            if read is self.other:
                self.other = None
            yield Part(names, ids, keys, spans, base, self)
            if error is not None:
                raise self._broken(base + error[0], error[1])
            base += len(names)
        if self.tail < 0:
            raise self._broken(base, "does not end (the list is cut short)")
        try:
            skim._trailer(m[self.tail + len(LIST_END):], "NodeList")
        except ValueError as exc:
            raise self._problem(str(exc)) from None

    def __iter__(self) -> Iterator[Scanned]:
        for part in self.parts():
            for i in range(len(part.names)):
                yield part.node(i)

    def release(self, upto: int) -> None:
        """Let go of the file's pages before upto (those of the nodes decoded so far), as the scan does."""
        if upto - self.released > RELEASE:
            done = upto - upto % mmap.PAGESIZE
            self.map.madvise(mmap.MADV_DONTNEED, self.released, done - self.released)
            self.released = done

    def close(self) -> None:
        """End the forked process (when the audit stopped before its part) and unmap the file."""
        if self.other is not None:
            self.other.close()
            self.other = None
        self.map.close()

    def _broken(self, index: int, reason: str) -> Exception:
        return self._problem(f"item {index} {reason}")

    def _problem(self, what: str) -> Exception:
        from .nodesource import NodeSourceError

        return NodeSourceError(f"{self.path}: {what}; expected the output of `kubectl get nodes -o json`")


def _part(m: Any, start: int, stop: int) -> tuple:
    """The nodes from start to stop (in the forked process, or this one): their names, key numbers (-1: decode the
    node), the keys, where each node is (start, end, images start, images end; -1: no images cut), and the layout's
    error (local index, reason) or None."""
    from array import array

    names: list[str] = []
    ids, spans = array("i"), array("q")
    numbers: dict = {}
    last, number = None, -1
    error = None
    try:
        for name, key, s, e, cut in scan(m, start, stop):
            names.append(name or "")
            if key is None:
                ids.append(-1)
            else:
                if key != last:
                    number = numbers.setdefault(key, len(numbers))
                    last = key
                ids.append(number)
            spans.extend((s, e, *(cut or (-1, -1))))
    except LayoutError as exc:
        error = (exc.index, exc.reason)
    return names, ids, list(numbers), spans, error


def read_nodes(path: str) -> Any:
    """`--nodes FILE` for the audit: a file in kubectl's layout mapped and cut (MappedNodes, whose close() ends
    its reading); standard input and any other layout through the generic streaming reader (Node objects, their
    status.images not decoded)."""
    from .nodesource import read_nodes_file

    m = None
    try:
        # Only a regular file is mapped: a FIFO or a process substitution is read once, by the streaming reader.
        regular = path != "-" and stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):  # not there or unreadable: the generic reader says why
        regular = False
    if regular:
        try:
            with open(path, "rb") as stream:
                m = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # unreadable (the generic reader says why), or empty
            m = None
    if m is not None and m[:len(skim.HEAD)] == skim.HEAD:
        return MappedNodes(path, m)
    if m is not None:
        m.close()
    return read_nodes_file(path, images=False)

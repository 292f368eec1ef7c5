"""Work spread over the machine's cores: processes forked once the command has loaded what they read (the chart
facts, the compiled schemas, the validated intents and their plans), so each inherits it instead of loading it
again. The command's process and its workers take the items in chunks from one queue; the results are taken in the
items' order, so a command's output is the same bytes as one process's (issue 43, item 5: `--jobs`).

Only Linux forks here (fork is what lets the workers inherit what is loaded; elsewhere everything runs in the
command's own process). A worker writes its results into a memory file of its own as it goes and exits when the
queue is empty, so nothing waits on a pipe while the command's process works: a thread reading results in that
process (as concurrent.futures' pool has) competes for its interpreter lock, and took away most of what a second
core gave. A worker that dies (killed, out of memory) or fails on an item loses nothing: what it did not hand back is
done again in the command's own process, in order, where a failure is raised exactly as one process raises it.
Nothing of gpuconf is imported here.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

#: The processes of `--jobs N`; None is the automatic choice (set_jobs, from the command line).
_jobs: int | None = None
#: True in a worker: work it is given is never spread further.
_in_worker = False
#: Where the cgroup file systems are mounted (cgroup_quota reads the CPU quota there).
CGROUP_ROOT = "/sys/fs/cgroup"
#: How many chunks the items are cut into for each process: one that finishes early takes the next chunk, so a
#: slow cluster does not leave the other cores idle; each chunk costs a 4-byte read of the queue.
CHUNKS_PER_PROCESS = 32
#: The most chunks: the queue (4 bytes a chunk) is written whole before any process reads it, so it must fit a
#: pipe's smallest buffer, one page.
MOST_CHUNKS = 1024


def parse_jobs(text: str) -> int | None:
    """A `--jobs` value: a number of processes (1 or more), or `auto` (None); ValueError for anything else."""
    word = text.strip()
    if word.lower() == "auto":
        return None
    if not (word.isascii() and word.isdigit()):
        raise ValueError(f"{text!r} is neither a number of processes (1 or more) nor auto")
    jobs = int(word)
    if jobs < 1:
        raise ValueError(f"{text!r}: give 1 or more processes (1 runs everything in one), or auto")
    return jobs


def set_jobs(jobs: int | None) -> None:
    """What `--jobs` asked for, for the rest of the command: N processes, or None for the automatic choice."""
    global _jobs
    _jobs = jobs


def cores() -> int:
    """The cores this process may use: the CPUs it may run on (its affinity), at most its cgroup's CPU quota, as a
    container's CPU limit sets it."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = cgroup_quota()
    return max(1, min(count, quota) if quota is not None else count)


def cgroup_quota(root: str | None = None, cgroups: str = "/proc/self/cgroup") -> int | None:
    """The CPUs this process's cgroup quota allows, rounded up (1.5 CPUs keep 2 processes busy): cgroup v2's cpu.max
    of its cgroup and of those above it, or v1's cpu.cfs_quota_us over cpu.cfs_period_us; the lowest wins. None when
    no quota is set or none can be read."""
    root = root or CGROUP_ROOT
    try:
        with open(cgroups, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    quotas = []
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        parts = [p for p in path.split("/") if p and p != ".."]
        if controllers == "":  # v2: "max PERIOD" (no quota) or "QUOTA PERIOD", at each level up to the root
            quotas += [_quota(os.path.join(root, *parts[:depth], "cpu.max")) for depth in range(len(parts), -1, -1)]
        elif "cpu" in controllers.split(","):  # v1: the quota is -1 where none is set
            for folder in {os.path.join(root, controllers), os.path.join(root, "cpu")}:
                for depth in range(len(parts), -1, -1):
                    base = os.path.join(folder, *parts[:depth])
                    quotas.append(_quota(os.path.join(base, "cpu.cfs_quota_us"),
                                         os.path.join(base, "cpu.cfs_period_us")))
    found = [q for q in quotas if q is not None]
    return min(found) if found else None


def _quota(path: str, period_path: str | None = None) -> int | None:
    """The CPUs one quota file allows (None: no quota, or no such file)."""
    try:
        with open(path, encoding="ascii") as f:
            words = f.read().split()
        if period_path is not None:
            with open(period_path, encoding="ascii") as f:
                words += f.read().split()
        quota, period = int(words[0]), int(words[1])
    except (OSError, ValueError, IndexError):
        return None  # "max", a file that is not there, one that does not parse
    if quota <= 0 or period <= 0:
        return None
    return max(1, -(-quota // period))


def can_fork() -> bool:
    """True where workers can be forked: Linux, outside a worker."""
    return sys.platform == "linux" and hasattr(os, "fork") and not _in_worker


def workers(count: int, least: int | None) -> int:
    """How many processes (the command's own included) share count items: `--jobs N`, at most one per item; the
    automatic choice is one per core once there are least items or more (below, forking costs more than it saves;
    None: items too small to gain at any count), else one."""
    if count < 2 or not can_fork():
        return 1
    if _jobs is not None:
        return min(_jobs, count)
    if least is None or count < least:
        return 1
    return min(cores(), count)


class _Missing:
    """What a worker hands back for an item it failed on; it unpickles as the one _MISSING."""

    def __reduce__(self) -> str:
        return "_MISSING"


_MISSING = _Missing()


def ordered(function: Callable[[Any], Any], items: Sequence[Any], least: int | None,
            pack: Callable[[Any], Any] | None = None, unpack: Callable[[Any, Any], Any] | None = None) -> list:
    """[function(item) for item in items], shared with forked workers when workers(len(items), least) says so.

    The command's process does the first item before it forks, so that what the function loads on first use (lazy
    imports, compiled schemas, templates) is loaded once and inherited. A worker hands pack(result) back (default:
    the result itself, which must pickle), turned into the result here with unpack(item, packed). Items no worker
    handed back (it failed on them, or died) are done here in order, so a failure is raised as one process raises
    it. function must depend on nothing but its item and what the command loaded before the call, and change
    nothing that outlives the call (a worker's changes die with it)."""
    items = list(items)
    count = workers(len(items), least)
    if count < 2:
        return [function(item) for item in items]
    results: list = [function(items[0])] + [_MISSING] * (len(items) - 1)
    handed = _share(function, items, pack, count, results)
    return [function(item) if got is _MISSING else unpack(item, got) if unpack is not None and i in handed else got
            for i, (item, got) in enumerate(zip(items, results))]


def _share(function: Callable[[Any], Any], items: list, pack: Callable[[Any], Any] | None, count: int,
           results: list) -> set[int]:
    """Items 1.. done by this process and count - 1 forked workers, into results (_MISSING where none came back);
    returns the indexes of the results the workers handed back (packed)."""
    total = len(items)
    size = max(1, -(-(total - 1) // min(count * CHUNKS_PER_PROCESS, MOST_CHUNKS)))
    try:
        scratch = [_scratch() for _ in range(count - 1)]
        queue, feed = os.pipe()
    except OSError:
        scratch, queue = [], -1
    if queue < 0:  # no memory file or pipe to be had: this process does it all
        results[1:] = [_run(function, item) for item in items[1:]]
        return set()
    # The whole queue is written before any worker starts (a few bytes a chunk, far below a pipe's buffer), and
    # its writing end closed: a process that reads no chunk knows the items are all taken.
    os.write(feed, b"".join(start.to_bytes(4, "little") for start in range(1, total, size)))
    os.close(feed)
    children: list[int] = []
    done = False
    try:
        for out in scratch:
            try:
                pid = os.fork()
            except OSError:  # no more processes: those started and this one share the queue
                break
            if pid == 0:
                _worker(function, items, pack, queue, size, out)  # never returns
            children.append(pid)
        for start in _chunks(queue):
            for i in range(start, min(start + size, total)):
                results[i] = _run(function, items[i])
        done = True
    finally:
        os.close(queue)
        for pid in children:  # on the way out of an interruption (Ctrl-C), the workers are ended first
            _reap(pid, ended=not done)
    handed: set[int] = set()
    for out in scratch:
        for i, packed in _handed(out):
            if 0 < i < total and packed is not _MISSING:
                results[i] = packed
                handed.add(i)
        out.close()
    return handed


def _run(function: Callable[[Any], Any], item: Any) -> Any:
    """function(item), or _MISSING when it raises (done again in order, where it raises as in one process)."""
    try:
        return function(item)
    except Exception:  # noqa: BLE001 - see the docstring
        return _MISSING


def _chunks(queue: int):
    """The chunks' first indexes, as this process takes them from the queue (4 bytes each; reads of a pipe that
    hold fewer bytes than its buffer are whole)."""
    while True:
        token = os.read(queue, 4)
        if len(token) < 4:
            return
        yield int.from_bytes(token, "little")


def _scratch():
    """A file for one worker's results: in memory (memfd) where the kernel has it, else a temporary file."""
    if hasattr(os, "memfd_create"):
        try:
            return open(os.memfd_create("gpuconf-jobs", getattr(os, "MFD_CLOEXEC", 0)), "w+b")
        except OSError:
            pass
    import tempfile

    return tempfile.TemporaryFile()


def _worker(function: Callable[[Any], Any], items: list, pack: Callable[[Any], Any] | None, queue: int, size: int,
            out) -> None:
    """In a forked worker: take chunks until the queue is empty, writing each result (index, packed) as it is done;
    then exit without the interpreter's teardown (nothing of the command's is flushed or finalised here)."""
    import pickle

    code = 1
    try:
        _forked()
        for start in _chunks(queue):
            for i in range(start, min(start + size, len(items))):
                result = _run(function, items[i])
                try:
                    data = pickle.dumps((i, result if result is _MISSING or pack is None else pack(result)), -1)
                except Exception:  # noqa: BLE001 - a result that does not pickle is done again by the command
                    data = pickle.dumps((i, _MISSING), -1)
                out.write(data)
        out.flush()
        code = 0
    finally:
        os._exit(code)


def _handed(out) -> list[tuple[int, Any]]:
    """What one worker wrote, (index, packed) each, up to the first record that cannot be read (it died writing)."""
    import pickle

    out.seek(0)
    found = []
    while True:
        try:
            found.append(pickle.load(out))
        except Exception:  # noqa: BLE001 - the end, or a record cut short
            return found


def _reap(pid: int, ended: bool = False) -> None:
    """Wait for a worker to exit (killing it first when the command is ending early, e.g. on Ctrl-C)."""
    import signal

    if ended:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def beside(function: Callable[..., Any], *args: Any) -> Any:
    """Start function(*args) in a forked process while the caller goes on (the nodes' audit takes one core, the
    operator's pods the other); returns a callable that waits for the result (raising what function raised), and
    `close` to end the process early. Runs it at once where there is no second core or no fork (a result the same
    either way); where the process dies (killed, out of memory), the caller's process runs it when it waits."""
    if not can_fork() or cores() < 2:
        result = function(*args)
        wait: Any = lambda: result  # noqa: E731
        wait.close = lambda: None
        return wait
    import pickle

    out = _scratch()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _forked()
            try:
                data = pickle.dumps((True, function(*args)), -1)
            except Exception as exc:  # noqa: BLE001 - handed to the caller, which raises it
                data = pickle.dumps((False, exc), -1)
            out.write(data)
            out.flush()
            code = 0
        finally:
            os._exit(code)
    running = [pid]

    def close() -> None:
        if running:
            _reap(running.pop(), ended=True)
        out.close()

    def wait() -> Any:
        if running:
            _reap(running.pop())
        got = _handed(out) if not out.closed else []
        out.close()
        if not got:  # the process died (or its result did not pickle): done here, as without a second core
            return function(*args)
        ok, value = got[0]
        if ok:
            return value
        raise value

    wait.close = close
    return wait


def _forked() -> None:
    """In a forked process: Ctrl-C ends it at once (the command's process says that it was interrupted); what it
    inherited stays out of the cyclic collector's passes where the collector runs (a pass would touch, and so copy,
    every inherited page); and nothing it is given spreads further."""
    import gc
    import signal

    global _in_worker
    _in_worker = True
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    gc.freeze()

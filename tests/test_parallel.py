"""The fork pool of gpuconf/parallel.py: `--jobs` values, the automatic choice (cores, a cgroup's CPU quota, enough
items), results in the items' order, failures raised as one process raises them, and `beside` (the audit's pod
files read in a process of their own)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gpuconf import parallel

forks = pytest.mark.skipif(sys.platform != "linux", reason="gpuconf forks its workers on Linux only")


@pytest.fixture(autouse=True)
def _automatic(monkeypatch):
    """Every test starts with the automatic choice, and leaves it so for the tests after it."""
    monkeypatch.setattr(parallel, "_jobs", None)


def test_jobs_values():
    assert [parallel.parse_jobs(v) for v in ("1", "16", " 4 ", "auto", "AUTO")] == [1, 16, 4, None, None]
    for bad in ("0", "-1", "x", "", "2.0", "٣"):
        with pytest.raises(ValueError):
            parallel.parse_jobs(bad)


def test_the_automatic_choice_forks_only_for_enough_items_and_cores(monkeypatch):
    monkeypatch.setattr(parallel, "cores", lambda: 4)
    linux = sys.platform == "linux"
    assert [parallel.workers(n, 8) for n in (1, 7, 8, 100)] == [1, 1, 4 if linux else 1, 4 if linux else 1]
    assert parallel.workers(100, None) == 1  # items too small to gain: only --jobs N forks for them
    monkeypatch.setattr(parallel, "_jobs", 3)
    assert [parallel.workers(n, None) for n in (1, 2, 100)] == [1, 2 if linux else 1, 3 if linux else 1]
    monkeypatch.setattr(parallel, "_jobs", 1)
    assert parallel.workers(100, 8) == 1
    monkeypatch.setattr(parallel, "_jobs", None)
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    assert parallel.workers(100, 8) == 1


def _cgroup(tmp_path: Path, lines: str, files: dict[str, str]) -> int | None:
    tmp_path.mkdir()
    (tmp_path / "self-cgroup").write_text(lines, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / "fs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fs" / name).write_text(text, encoding="ascii")
    return parallel.cgroup_quota(str(tmp_path / "fs"), str(tmp_path / "self-cgroup"))


def test_a_cgroup_cpu_quota_bounds_the_cores(tmp_path):
    assert _cgroup(tmp_path / "none", "0::/\n", {}) is None
    assert _cgroup(tmp_path / "unlimited", "0::/job\n", {"job/cpu.max": "max 100000\n"}) is None
    assert _cgroup(tmp_path / "v2", "0::/job\n", {"job/cpu.max": "150000 100000\n"}) == 2
    assert _cgroup(tmp_path / "above", "0::/a/b\n", {"a/b/cpu.max": "max 100000\n", "a/cpu.max": "100000 100000\n",
                                                     "cpu.max": "400000 100000\n"}) == 1
    assert _cgroup(tmp_path / "v1", "4:memory:/x\n2:cpu,cpuacct:/job\n",
                   {"cpu,cpuacct/job/cpu.cfs_quota_us": "300000\n", "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n"}) == 3
    assert _cgroup(tmp_path / "v1-none", "2:cpu,cpuacct:/\n",
                   {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}) is None
    assert _cgroup(tmp_path / "garbage", "nonsense\n0::/j\n", {"j/cpu.max": "lots\n"}) is None
    assert parallel.cores() >= 1


def _square(n: int) -> int:
    if n == 13:
        raise ValueError("thirteen")
    return n * n


@forks
def test_ordered_results_and_failures_are_one_processs(monkeypatch):
    monkeypatch.setattr(parallel, "_jobs", 3)
    items = list(range(13))
    assert parallel.ordered(_square, items, None) == [n * n for n in items]
    # Packed for the trip back from a worker, unpacked with the item here: the same results.
    assert parallel.ordered(_square, items, None, pack=str, unpack=lambda item, packed: int(packed)) == \
        [n * n for n in items]
    with pytest.raises(ValueError, match="thirteen"):
        parallel.ordered(_square, list(range(20)), None)
    unpicklable = parallel.ordered(lambda n: (lambda: n), items, None)  # done again here, where nothing pickles
    assert [f() for f in unpicklable] == items


@forks
def test_beside_hands_back_the_result_or_the_error(monkeypatch):
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    assert parallel.beside(_square, 7)() == 49
    wait = parallel.beside(_square, 13)
    with pytest.raises(ValueError, match="thirteen"):
        wait()
    wait.close()
    parent = os.getpid()

    def dies_beside() -> str:
        if os.getpid() != parent:
            os._exit(3)
        return "done in the caller's process"

    assert parallel.beside(dies_beside)() == "done in the caller's process"
    parallel.beside(_square, 2).close()  # ended early: nothing left running

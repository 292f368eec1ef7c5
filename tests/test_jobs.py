"""`--jobs` (issue 43, item 5): render, render --check and diff of a fleet share its clusters among forked processes
(gpuconf/parallel.py), and give the same bytes, findings and exit codes with any number of them; a worker that
dies or fails loses nothing. No timing is asserted here: tools/bench.py measures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from test_fleet_stages import thirty

from gpuconf import parallel

forks = pytest.mark.skipif(sys.platform != "linux", reason="gpuconf forks its workers on Linux only")
JOBS = ("1", "2", "3", "auto")


@pytest.fixture(autouse=True)
def _automatic(monkeypatch):
    """Every test starts with the automatic choice, and leaves it so for the tests after it."""
    monkeypatch.setattr(parallel, "_jobs", None)


@pytest.fixture
def fleet(tmp_path, monkeypatch) -> str:
    """The thirty-cluster fleet, named relative to the working folder (as a repository's CI names it)."""
    thirty(tmp_path)
    monkeypatch.chdir(tmp_path)
    return "fleet/fleet.yaml"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".gpuconf.lock"}


def _spy(monkeypatch, module, name: str, log: Path) -> dict:
    """Wrap module.name so that every call appends the calling process's id to log (a file: forked workers too),
    and count the workers forked. When workers were forked since its previous call, the command's own process waits
    (10 s at most) for a worker's first call, so that a worker surely takes a share however slowly it starts; the
    log says whether one did. Returns the counts, which _processes resets."""
    import time

    real, parent, fork = getattr(module, name), os.getpid(), os.fork
    state = {"forks": 0, "waited": False, "last": None}

    def counted() -> int:
        pid = fork()
        if pid:  # in the command's process
            state["forks"] += 1
        return pid

    def spied(*args, **kwargs):
        with open(log, "a", encoding="ascii") as f:
            f.write(f"{os.getpid()}\n")
        if os.getpid() == parent:
            if state["last"] is not None and state["forks"] > state["last"] and not state["waited"]:
                state["waited"] = True
                deadline = time.monotonic() + 10
                while len(_seen(log)) < 2 and time.monotonic() < deadline:
                    time.sleep(0.01)
            state["last"] = state["forks"]
        return real(*args, **kwargs)

    monkeypatch.setattr(os, "fork", counted)
    monkeypatch.setattr(module, name, spied)
    return state


def _seen(log: Path) -> set[int]:
    return {int(line) for line in log.read_text(encoding="ascii").split()} if log.exists() else set()


def _processes(log: Path, state: dict) -> tuple[int, int]:
    """How many processes called, and how many workers were forked, since the last look."""
    found = (len(_seen(log)), state["forks"])
    log.unlink(missing_ok=True)
    state.update(forks=0, waited=False, last=None)
    return found


def _same_with_any_jobs(run, *args: str, out: str | None = None, jobs_values: tuple = JOBS) -> tuple:
    """Run the command with each --jobs value (OUTPUT emptied before each, when given); every run's stdout, stderr,
    exit code and written tree must be the first's. Returns that result and tree."""
    import shutil

    first = None
    for jobs in jobs_values:
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        result = run(*args, "--jobs", jobs)
        got = (result.stdout, result.stderr, result.exit_code, _tree(Path(out)) if out and Path(out).is_dir() else {})
        if first is None:
            first = got
        assert got == first, f"--jobs {jobs} differs from --jobs {jobs_values[0]}: {args}"
    return first


@forks
def test_a_fleet_renders_the_same_bytes_with_any_number_of_processes(run, fleet, monkeypatch, tmp_path):
    import gpuconf.render.tree as T

    stdout, stderr, code, tree = _same_with_any_jobs(run, "render", fleet, "-o", "out", out="out")
    assert code == 0, stderr
    assert len([p for p in tree if p.endswith("/values.yaml")]) == 30 and "gpu-regions/applicationset.yaml" in tree
    assert stdout.count("wrote ") == 31
    # Such runs do share the clusters: --jobs 2 renders in two processes, --jobs 1 in the command's own, and the
    # automatic choice forks a worker for each core but the command's (30 clusters are enough to gain).
    log = tmp_path / "pids.txt"
    spied = _spy(monkeypatch, T, "render_tree", log)
    run("render", fleet, "-o", "out", "--jobs", "2")
    assert _processes(log, spied) == (2, 1)
    run("render", fleet, "-o", "out", "--jobs", "1")
    assert _processes(log, spied) == (1, 0)
    run("render", fleet, "-o", "out")
    cores = min(parallel.cores(), 30)
    processes, forked = _processes(log, spied)
    assert forked == cores - 1 and (processes >= 2 if cores > 1 else processes == 1)


@forks
def test_render_check_says_the_same_of_an_up_to_date_and_a_stale_fleet(run, fleet, monkeypatch, tmp_path):
    import gpuconf.output.summary as S

    assert run("render", fleet, "-o", "out", "--jobs", "1").exit_code == 0
    _, stderr, code, _ = _same_with_any_jobs(run, "render", fleet, "-o", "out", "--check")
    assert code == 0 and stderr.count(": up to date (") == 31
    # Stale everywhere (the base moves the driver), one folder missing a file, another holding a foreign one.
    base = Path("fleet/base.yaml")
    base.write_text(base.read_text(encoding="utf-8").replace('version: "595.91.07"', 'version: "580.126.20"'),
                    encoding="utf-8")
    Path("out/eu-03/REPORT.md").unlink()
    Path("out/us-07/notes.txt").write_text("mine\n", encoding="utf-8")
    stdout, _, code, _ = _same_with_any_jobs(run, "render", fleet, "-o", "out", "--check")
    assert code == 1
    assert "missing: out/eu-03/REPORT.md" in stdout and "foreign: out/us-07/notes.txt" in stdout
    assert stdout.count('+  version: 580.126.20\n') == 30  # in each cluster's values.yaml
    log = tmp_path / "pids.txt"
    spied = _spy(monkeypatch, S, "tree_diff", log)
    run("render", fleet, "-o", "out", "--check", "--jobs", "2")
    assert _processes(log, spied) == (2, 2)  # the trees, then the stale folders' diffs, in two processes each


@forks
@pytest.mark.parametrize("args", [(), ("--format", "json"), ("--format", "markdown")])
def test_diff_of_a_fleet_reports_the_same_with_any_number_of_processes(run, fleet, args):
    stdout, stderr, code, _ = _same_with_any_jobs(run, "diff", fleet, *args)
    assert code == 0 and stdout.count("ap-09") >= 1, stderr


@forks
def test_a_chart_move_of_a_fleet_is_the_same_with_any_number_of_processes(run, fleet):
    stdout, stderr, code, _ = _same_with_any_jobs(run, "diff", fleet, "--to-chart", "v26.3.3",
                                                  jobs_values=("1", "3"))
    assert code in (0, 1) and stdout.count("=== cluster ") == 30, stderr


@forks
@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_diff_against_a_deployed_fleet_plans_the_same_with_any_number_of_processes(run, fleet, fmt, monkeypatch,
                                                                                   tmp_path):
    import gpuconf.pipeline as PL

    assert run("render", fleet, "-o", "deployed", "--jobs", "1").exit_code == 0
    overlay = Path("fleet/overlays/eu-04.yaml")
    overlay.write_text(overlay.read_text(encoding="utf-8") + "  driver:\n    version: \"580.126.20\"\n",
                       encoding="utf-8")
    stdout, _, code, _ = _same_with_any_jobs(run, "diff", fleet, "--against", "deployed", "--format", fmt,
                                             jobs_values=JOBS if fmt == "text" else ("1", "3"))
    assert code == 1 and "eu-04" in stdout
    if fmt != "text":
        return
    _, _, code, _ = _same_with_any_jobs(run, "diff", fleet, "--against", "deployed", "--fail-on", "disruptive",
                                        jobs_values=("1", "2"))
    assert code == 1
    log = tmp_path / "pids.txt"
    spied = _spy(monkeypatch, PL, "_diff_cluster", log)
    run("diff", fleet, "--against", "deployed", "--jobs", "3")
    processes, forked = _processes(log, spied)
    assert forked == 2 + 2 and processes >= 2  # two workers for the trees, two for the impact plans


@forks
def test_findings_of_a_cluster_are_the_same_with_any_number_of_processes(run, fleet):
    """A warning about one cluster, and then an error in another: the same findings, at the same places, with the
    same exit code (the error's: nothing written)."""
    warned = Path("fleet/overlays/us-02.yaml")
    warned.write_text(warned.read_text(encoding="utf-8") + "  pools:\n    - name: train-h100\n      driver: {}\n",
                      encoding="utf-8")
    stdout, _, code, tree = _same_with_any_jobs(run, "render", fleet, "-o", "out", out="out")
    assert code == 0 and "fleet/overlays/us-02.yaml:" in stdout and "warning GC324" in stdout and tree
    broken = Path("fleet/overlays/ap-09.yaml")
    broken.write_text(broken.read_text(encoding="utf-8") + "  pools:\n    - name: train-h100\n      gpusPerNode: 0\n",
                      encoding="utf-8")
    stdout, stderr, code, tree = _same_with_any_jobs(run, "render", fleet, "-o", "fresh", out="fresh")
    assert code == 1 and "fleet/overlays/ap-09.yaml:" in stdout and "warning GC324" in stdout
    assert "nothing was written" in stderr and tree == {}
    _, _, code, _ = _same_with_any_jobs(run, "diff", fleet, "--against", "out")
    assert code == 1


@pytest.mark.parametrize("value", ["0", "-2", "many", "", "1.5"])
@pytest.mark.parametrize("command", [("render", "-o", "out"), ("render", "-o", "out", "--check"), ("diff",)])
def test_a_bad_jobs_value_is_a_usage_error(run, fleet, command, value):
    result = run(command[0], fleet, *command[1:], "--jobs", value)
    assert result.exit_code == 2, result.stdout
    assert "Invalid value for '-j' / '--jobs'" in result.stderr
    assert "1 or more" in result.stderr
    assert "Traceback" not in result.stderr and not Path("out").exists()


@forks
def test_a_worker_that_dies_loses_nothing(run, fleet, monkeypatch):
    """A worker killed in the middle (as the out-of-memory killer does): the clusters it did not hand back are
    rendered in the command's own process, and the output is the serial one."""
    import gpuconf.render.tree as T

    serial = run("render", fleet, "-o", "serial", "--jobs", "1")
    real, parent = T.render_tree, os.getpid()

    def dying(plan, command):
        if os.getpid() != parent and plan.name in ("eu-05", "us-01", "ap-06"):
            os._exit(9)
        return real(plan, command)

    monkeypatch.setattr(T, "render_tree", dying)
    result = run("render", fleet, "-o", "out", "--jobs", "3")
    assert (result.exit_code, result.stdout.replace("out/", "serial/"), result.stderr) == \
        (serial.exit_code, serial.stdout, serial.stderr)
    assert _tree(Path("out")) == _tree(Path("serial"))


@forks
def test_a_failure_in_a_worker_is_raised_as_one_process_raises_it(run, fleet, monkeypatch):
    """An exception in a worker: the item is done again in the command's process, in order. One that only a worker
    meets (its environment) leaves no trace; a bug that every process meets is reported as without workers."""
    import gpuconf.render.tree as T

    serial = run("render", fleet, "-o", "serial", "--jobs", "1")
    real, parent = T.render_tree, os.getpid()

    def failing_in_workers(plan, command):
        if os.getpid() != parent:
            raise MemoryError("a worker's own trouble")
        return real(plan, command)

    monkeypatch.setattr(T, "render_tree", failing_in_workers)
    result = run("render", fleet, "-o", "out", "--jobs", "2")
    assert (result.exit_code, result.stdout.replace("out/", "serial/")) == (serial.exit_code, serial.stdout)
    assert _tree(Path("out")) == _tree(Path("serial"))

    def buggy(plan, command):
        if plan.name in ("us-03", "ap-01"):
            raise T.VerificationError([f"{plan.name}: a document fails its schema"])
        return real(plan, command)

    monkeypatch.setattr(T, "render_tree", buggy)
    outcomes = {jobs: run("render", fleet, "-o", "bug", "--jobs", jobs) for jobs in JOBS}
    assert {(r.exit_code, r.stdout, r.stderr) for r in outcomes.values()} == {(
        3, "", "gpuconf: internal error: generated output failed verification (1 problems):\n"
               "  us-03: a document fails its schema\ngpuconf: this is a bug in gpuconf; nothing was written\n")}
    assert not Path("bug").exists()

"""Benchmarks: a whole render of the largest example against bare Python and `helm template` (`--chart DIR`, with the
helm `make bench-helm` installs, `--helm PATH` or helm on PATH), start-up cost of the CLI, validation time of generated large intents, and the audit of generated
clusters of 1,000, 10,000 and 100,000 nodes, GC303 on 1,000 pools told apart by hostname patterns, and the impact
plan of a driver change on 5,200 nodes with 200,000 pods (`make bench`; `--render-only` for the first alone,
`--impact-only NODES:PODS` for the last, `--gc303-only` and `--audit-scale-only 100000` for those parts).

Every whole process runs gpuconf as installed: a wheel of this checkout in a fresh environment (tools/installed.py),
not the checkout's editable install, whose import hook costs every process about 15 ms (`--python PATH` times
another interpreter, such as .venv/bin/python). Timings are medians of several runs on this machine; nothing here
asserts a time, it only reports.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _compile_package() -> None:
    """Byte-compile the checkout's gpuconf, as installing a wheel does: an editable install under
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module in every process (for --python)."""
    import compileall

    import gpuconf

    compileall.compile_dir(str(Path(gpuconf.__file__).parent), quiet=1)


#: The Python every whole-process figure runs: gpuconf installed from a wheel in a fresh environment
#: (tools/installed.py), as a user's `pip install` gives it, unless --python names another; set by main().
PYTHON = sys.executable
#: True when PYTHON is the environment _as_installed made (installed there with this environment's pip).
INSTALLED = False


def _as_installed(work: Path) -> str:
    """A fresh environment under work with gpuconf installed from a wheel of this checkout; returns its python. The
    checkout's own .venv has an editable install, whose import hook costs every process (see tools/installed.py)."""
    from installed import installed_python

    python = installed_python(work)
    where = subprocess.run([str(python), "-c", "import gpuconf; print(gpuconf.__file__)"], cwd=work, check=True,
                           capture_output=True, text=True).stdout.strip()
    assert Path(where).resolve().is_relative_to((work / "env").resolve()), where
    print(f"timing gpuconf as installed: a wheel of this checkout in a fresh environment ({python})")
    return str(python)


def default_helm() -> str | None:
    """The helm `make bench-helm` put next to this Python (.venv/bin/helm), else helm on PATH, else None."""
    import shutil

    beside = Path(sys.executable).parent / "helm"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("helm")


def _wall(cmd: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _interleaved(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU times (user + system, of the process and its children) of each command, run in turn (one of
    each per round), so a shared machine's load falls on all of them alike; CPU time is the steadier of the two
    when other work shares the cores."""
    import resource

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            used, start = cpu(), time.perf_counter()
            done = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            samples[name][0].append(time.perf_counter() - start)
            samples[name][1].append(cpu() - used)
            assert done.returncode == 0, (cmd, done.stderr[-2000:])
    return samples


#: What a render imports before gpuconf runs a line of its own: the interpreter and the libraries the project is
#: built on (pydantic for the intent, click for the command line, PyYAML and ruamel.yaml for reading and writing,
#: jinja2 for REPORT.md). No render can be faster than this.
LIBRARIES = "from pydantic import BaseModel; import click, jinja2, ruamel.yaml, yaml"


def render_against_helm(runs: int, chart: Path | None, helm: str | None) -> None:
    """The whole `gpuconf render` process of the largest example next to a bare `python -c pass`, a process that
    only imports the libraries gpuconf is built on (LIBRARIES) and, when a helm binary is found (`--helm`, else
    `helm` on PATH) and `--chart` names the GPU Operator chart folder, `helm template` of that chart with the
    rendered values.yaml: medians of the same interleaved rounds, and the ratios to helm."""
    import shutil

    from gpuconf.pipeline import render_path

    example = max(sorted((ROOT / "examples").glob("*.yaml")),  # the largest example: the most files
                  key=lambda p: len(render_path(str(p), "out").tree.files))
    out = Path(tempfile.mkdtemp(prefix="gpuconf-bench-out-"))
    render = [PYTHON, "-m", "gpuconf", "render", str(example), "-o", str(out)]
    subprocess.run(render, check=True, stdout=subprocess.DEVNULL)  # a first run: writes the Python bytecode caches
    commands = {"python -c pass": [PYTHON, "-c", "pass"],
                "libraries only": [PYTHON, "-c", LIBRARIES],
                "gpuconf render": render}
    helm = helm or default_helm()
    if helm and chart is not None:
        values = next(out.glob("*/values.yaml"))
        commands["helm template"] = [helm, "template", "gpu-operator", str(chart), "--namespace", "gpu-operator",
                                     "-f", str(values)]
    samples = _interleaved(commands, runs)
    wall = {name: statistics.median(times[0]) for name, times in samples.items()}
    cpu = {name: statistics.median(times[1]) for name, times in samples.items()}
    print(f"render {example.relative_to(ROOT)}, whole process, medians of {runs} interleaved runs:")
    for name in commands:
        print(f"  {name:<20} {wall[name] * 1000:8.1f} ms wall (min {min(samples[name][0]) * 1000:.1f}), "
              f"{cpu[name] * 1000:.1f} ms CPU")
    if "helm template" in wall:
        for name in ("gpuconf render", "libraries only"):
            print(f"  ratio {name} / helm template: {wall[name] / wall['helm template']:.2f} wall, "
                  f"{cpu[name] / cpu['helm template']:.2f} CPU")
    elif not helm:
        print("  helm template: no `helm` binary (--helm PATH, `make bench-helm`, or helm on PATH), so no side-by-side "
              "ratio")
    else:
        print("  helm template: give --chart DIR (the GPU Operator chart folder) for the side-by-side ratio")
    shutil.rmtree(out, ignore_errors=True)
    phases = render_breakdown(example, max(3, runs // 2))
    print(f"  gpuconf render's CPU by phase (medians of {max(3, runs // 2)} runs):")
    for label in ("interpreter", "imports", "model building", *dict.fromkeys(p[0] for p in PHASES), "other"):
        print(f"    {label:<18} {phases.get(label, 0.0) * 1000:7.1f} ms")


#: The phases of a render, each a function wrapped in the measuring process: (label, module, attribute). A phase's
#: time is its own, without the phases it calls (render_tree calls the verification and the report).
PHASES = (("load and validate", "gpuconf.intent.inputs", "read_input"), ("planning", "gpuconf.plan", "build"),
          ("rendering", "gpuconf.render.tree", "render_tree"), ("verification", "gpuconf.render.tree", "_verify"),
          ("report", "gpuconf.output.report", "build_report"), ("report", "gpuconf.output.report", "report_markdown"),
          ("report", "gpuconf.output.report", "report_json"), ("write", "gpuconf.pipeline", "_write_trees"))

_BREAKDOWN = """
import json, sys, time
start = time.process_time()  # the interpreter's start-up, site included
from gpuconf.entry import prepare
prepare()
import importlib
modules = json.loads(sys.argv[1])
for name in modules:
    try:
        importlib.import_module(name)
    except Exception:  # a module that only its package may import
        pass
imported = time.process_time()
from gpuconf.intent.model import ClusterIntent
ClusterIntent.model_rebuild()  # pydantic builds a deferred model's validator at its first use: here, on its own
built = time.process_time()
spent, stack = {}, []
def timed(label, fn):
    def run(*args, **kwargs):
        stack.append(0.0)
        begin = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            total = time.process_time() - begin
            inner = stack.pop()
            spent[label] = spent.get(label, 0.0) + total - inner
            if stack:
                stack[-1] += total
    return run
for label, module, name in json.loads(sys.argv[2]):
    owner = importlib.import_module(module)
    setattr(owner, name, timed(label, getattr(owner, name)))
from gpuconf import pipeline
outcome = pipeline.render([sys.argv[3]], sys.argv[4], False)
assert outcome.code == 0, outcome.stderr
done = time.process_time()
print(json.dumps({"interpreter": start, "imports": imported - start, "model building": built - imported,
                  **spent, "other": done - built - sum(spent.values())}))
"""


def render_breakdown(example: Path, runs: int) -> dict[str, float]:
    """Median CPU seconds of each phase of a whole render process (its own modules imported first, so that the
    phases hold no import): interpreter, imports, model building, then PHASES, and what none of them holds."""
    import json

    out = Path(tempfile.mkdtemp(prefix="gpuconf-bench-phases-"))
    probe = ("import json, sys\nfrom gpuconf import pipeline\npipeline.render([sys.argv[1]], sys.argv[2], False)\n"
             "print(json.dumps(sorted(m for m in sys.modules if not any(p.startswith('_') for p in m.split('.')))))")
    modules = subprocess.run([PYTHON, "-c", probe, str(example), str(out)], check=True,
                             capture_output=True, text=True).stdout
    phases = json.dumps([list(p) for p in PHASES])
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        done = subprocess.run([PYTHON, "-c", _BREAKDOWN, modules, phases, str(example), str(out)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        for label, seconds in json.loads(done.stdout).items():
            samples.setdefault(label, []).append(seconds)
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    return {label: statistics.median(values) for label, values in samples.items()}


def write_fleet(folder: Path, clusters: int) -> Path:
    """A fleet of CLUSTERS clusters in folder: examples/fleet's base, each cluster with one of its three overlays in
    turn, registered in Argo CD under its own name; returns the fleet file."""
    import re
    import shutil

    shutil.copy(ROOT / "examples" / "fleet" / "base.yaml", folder / "base.yaml")
    overlays = sorted((ROOT / "examples" / "fleet" / "overlays").glob("*.yaml"))
    (folder / "overlays").mkdir()
    entries = []
    for i in range(clusters):
        name = f"gpu-{i:03d}"
        text = overlays[i % len(overlays)].read_text(encoding="utf-8")
        text, found = re.subn(r"(destination:\n\s+name: )\S+", rf"\g<1>{name}", text)
        assert found == 1
        (folder / "overlays" / f"{name}.yaml").write_text(text, encoding="utf-8")
        entries.append(f"    - name: {name}\n      overlay: overlays/{name}.yaml\n")
    fleet = folder / "fleet.yaml"
    fleet.write_text("apiVersion: gpuconf.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: bench-fleet\nspec:\n"
                     "  base: base.yaml\n  clusters:\n" + "".join(entries), encoding="utf-8")
    return fleet


def fleet_bench(clusters: int, runs: int, chart: Path | None, helm: str | None) -> None:
    """One `gpuconf render` of a generated fleet of CLUSTERS clusters with `--jobs auto` and with `--jobs 1` against
    CLUSTERS `helm template` runs, each with its cluster's rendered values (issue 32: at most 0.1x; issue 43, item 5:
    on the machine's cores): whole processes, wall and CPU, in interleaved rounds (the two renders, then the helm
    runs) so that a shared machine's drift falls on all alike; medians of the rounds, with the machine's cores and
    load average (other work on the machine takes cores that `--jobs auto` counts on)."""
    import resource
    import shutil

    from gpuconf.parallel import cores
    from gpuconf.render.tree import PARALLEL_FROM

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    # The output goes to memory where there is a tmpfs: helm template writes nothing, and on an overlay file system
    # creating the fleet's 1,700 files costs more system time than gpuconf's whole render (measured here).
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    helm = helm or default_helm()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir=shm) as written:
        fleet = write_fleet(Path(tmp), clusters)
        outs = {jobs: Path(written) / f"out-{jobs}" for jobs in ("auto", "1")}
        renders = {jobs: [PYTHON, "-m", "gpuconf", "render", str(fleet), "-o", str(out), "--jobs", jobs]
                   for jobs, out in outs.items()}
        times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in ("auto", "1", "helm")}
        for round_ in range(runs):
            for jobs, render in sorted(renders.items(), reverse=round_ % 2 == 1):
                shutil.rmtree(outs[jobs], ignore_errors=True)
                used, start = cpu(), time.perf_counter()
                done = subprocess.run(render, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                times[jobs][0].append(time.perf_counter() - start)
                times[jobs][1].append(cpu() - used)
                assert done.returncode == 0, done.stderr[-2000:]
            if not (helm and chart is not None):
                continue
            values = sorted(outs["1"].glob("gpu-*/values.yaml"))
            assert len(values) == clusters
            before, start = cpu(), time.perf_counter()
            for file in values:
                subprocess.run([helm, "template", "gpu-operator", str(chart), "--namespace", "gpu-operator", "-f",
                                str(file)], check=True, stdout=subprocess.DEVNULL)
            times["helm"][0].append(time.perf_counter() - start)
            times["helm"][1].append(cpu() - before)
        medians = {name: (statistics.median(w), statistics.median(c)) for name, (w, c) in times.items() if w}
        trees = [{p.relative_to(out): p.read_bytes() for p in out.rglob("*")
                  if p.is_file() and p.name != ".gpuconf.lock"} for out in outs.values()]
        assert trees[0] == trees[1], "--jobs auto and --jobs 1 wrote different files"
    processes = min(cores(), clusters) if clusters >= PARALLEL_FROM else 1
    print(f"render a fleet of {clusters} clusters: --jobs auto runs {processes} process{'es' if processes > 1 else ''} "
          f"({cores()} core{'s' if cores() > 1 else ''}); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at "
          f"the start, {os.getloadavg()[0]:.2f} at the end; output {'on tmpfs' if shm else 'on disk'}, medians of "
          f"{runs} rounds")
    helm_wall, helm_cpu = medians.get("helm", (None, None))
    for name, label in (("auto", "gpuconf render --jobs auto"), ("1", "gpuconf render --jobs 1")):
        wall, used = medians[name]
        ratio = f"; ratio {wall / helm_wall:.3f} wall, {used / helm_cpu:.3f} CPU" if helm_wall else ""
        print(f"  {label:<28} {wall * 1000:9.1f} ms wall {used * 1000:9.1f} ms CPU{ratio}")
    if helm_wall is None:
        print(f"  {clusters} x helm template: needs --chart DIR and a helm binary, so no ratio")
        return
    print(f"  {f'{clusters} x helm template':<28} {helm_wall * 1000:9.1f} ms wall {helm_cpu * 1000:9.1f} ms CPU")


def main() -> None:
    """Print a table of timings and the scaling of validation with the number of pools."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="repetitions per measurement (median is reported)")
    parser.add_argument("--chart", type=Path, help="the GPU Operator chart folder (v26.7.0), for `helm template`")
    parser.add_argument("--helm", help="the helm binary for `helm template` (default: helm on PATH)")
    parser.add_argument("--render-only", action="store_true",
                        help="only the whole-process render against bare Python (and helm), then stop")
    parser.add_argument("--fleet-only", metavar="CLUSTERS", type=int,
                        help="only the render of a generated fleet of that many clusters (and the helm runs), then stop")
    parser.add_argument("--impact-only", metavar="NODES:PODS",
                        help="only the impact plan of a driver change on a generated cluster of that size, then stop")
    parser.add_argument("--startup-only", action="store_true",
                        help="only `gpuconf --help` against a bare `python -c pass`, then stop")
    parser.add_argument("--import-only", action="store_true",
                        help="only `gpuconf import --values` of an umbrella chart's values and of 2,000 unknown keys")
    parser.add_argument("--audit-only", metavar="NODES", type=int,
                        help="only the audit of a generated cluster of that many nodes with its operator pods")
    parser.add_argument("--gc303-only", action="store_true",
                        help="only validation (GC303) of 1,000 pools told apart by hostname patterns")
    parser.add_argument("--audit-scale-only", metavar="NODES", type=int,
                        help="only `gpuconf audit` of a generated cluster of that many nodes (e.g. 100000)")
    parser.add_argument("--python", help="time gpuconf under this Python (e.g. the checkout's .venv/bin/python) "
                                         "instead of a wheel of the checkout installed in a fresh environment")
    args = parser.parse_args()
    global PYTHON, INSTALLED
    with tempfile.TemporaryDirectory(prefix="gpuconf-bench-installed-") as work:
        if args.python:
            _compile_package()
        PYTHON = args.python or _as_installed(Path(work))
        INSTALLED = not args.python
        # `python -m gpuconf` puts the working folder first on sys.path: run from the checkout, every process would
        # import the checkout's gpuconf instead of the installed one.
        os.chdir(work)
        _benchmarks(args)


def _benchmarks(args: argparse.Namespace) -> None:
    """The benchmarks the arguments ask for, with PYTHON set."""
    if args.import_only:
        import_bench(args.runs)
        return
    if args.audit_only:
        audit_operands_bench(args.audit_only, args.runs)
        return
    if args.gc303_only:
        gc303_bench(args.runs)
        return
    if args.audit_scale_only:
        audit_bench(3, (args.audit_scale_only,))
        return
    if args.startup_only:
        startup_bench(args.runs)
        return
    if args.fleet_only:
        fleet_bench(args.fleet_only, args.runs, args.chart, args.helm)
        return
    if args.impact_only:
        nodes, _, pods = args.impact_only.partition(":")
        impact_scale_bench(int(nodes), int(pods), args.runs)
        return

    from generate import big_intent_text

    render_against_helm(max(args.runs, 10), args.chart, args.helm)
    if args.render_only:
        return
    gpuconf = [PYTHON, "-m", "gpuconf"]
    startup_bench(args.runs)
    example = ROOT / "examples" / "heterogeneous.yaml"
    print(f"{'gpuconf validate examples/heterogeneous.yaml':<44} {_wall([*gpuconf, 'validate', str(example)], args.runs) * 1000:8.1f} ms  (whole process)")

    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    with tempfile.TemporaryDirectory() as tmp:
        for pools in (10, 100, 1000):
            text = big_intent_text(pools)
            path = Path(tmp) / f"pools-{pools}.yaml"
            path.write_text(text, encoding="utf-8")
            samples = []
            for _ in range(max(3, args.runs // 2)):
                start = time.perf_counter()
                result = validate_document(load_text(text, str(path)))
                samples.append(time.perf_counter() - start)
            assert result.ok, result.findings[:3]
            in_process = statistics.median(samples)
            whole = _wall([*gpuconf, "validate", str(path)], 3)
            print(f"{f'validate {pools:>4}-pool intent ({len(text) // 1024} KiB)':<44} {in_process * 1000:8.1f} ms  "
                  f"in process, {whole * 1000:.0f} ms whole process")
        gc303_bench(args.runs)
        _render_benchmarks(gpuconf, tmp, args.runs, big_intent_text)
        impact_bench(tmp, args.runs)
    fleet_bench(100, 3, args.chart, args.helm)
    impact_scale_bench(5_200, 200_000, 3)
    import_bench(args.runs)
    audit_bench(7)
    audit_bench(3, (100_000,))
    audit_operands_bench(5_000, 5)


def startup_bench(runs: int) -> None:
    """`gpuconf --help` next to a bare `python -c pass` (issue 32, item 3: at most 1.2x): interleaved rounds, since
    the two are a few milliseconds apart and a shared machine drifts by more between separate series. Both ways of
    starting it: `python -m gpuconf` (runpy's imports come first) and, where the environment has it, the `gpuconf`
    command the installer wrote (the launcher of pip 23 imported re before gpuconf's code ran; current pip's does
    not), named with the pip that wrote it when the environment is the one this module made."""
    commands = {"bare": [PYTHON, "-c", "pass"], "python -m gpuconf --help": [PYTHON, "-m", "gpuconf", "--help"]}
    script = Path(PYTHON).parent / "gpuconf"
    if script.is_file() and os.access(script, os.X_OK):
        from importlib.metadata import version

        writer = f" (pip {version('pip')}'s launcher)" if INSTALLED else ""
        commands[f"gpuconf --help{writer}"] = [str(script), "--help"]
    started = _interleaved(commands, max(runs, 15))
    medians = {name: (statistics.median(walls), statistics.median(cpus)) for name, (walls, cpus) in started.items()}
    bare, bare_cpu = medians.pop("bare")
    print(f"{'bare python start-up':<44} {bare * 1000:8.1f} ms  ({bare_cpu * 1000:.1f} ms CPU)")
    for name, (wall, cpu) in medians.items():
        print(f"{name:<44} {wall * 1000:8.1f} ms  ({cpu * 1000:.1f} ms CPU); {wall / bare:.2f}x bare wall, "
              f"{cpu / bare_cpu:.2f}x CPU")


def umbrella_values() -> dict:
    """An umbrella chart's values: the GPU Operator chart's whole values.yaml under `gpu-operator:` with a misspelt
    twin of every leaf key beside it (what a values file carried over from older charts looks like: each needs a
    did-you-mean), and 2,000 keys of two other subcharts (the parent's own values, reported dropped)."""
    from gpuconf import catalog

    def twins(block: dict) -> dict:
        out = {}
        for key, value in block.items():
            out[key] = twins(value) if isinstance(value, dict) else value
            if not isinstance(value, dict):
                out[key[:-1] + key[-1:].upper() + "x"] = value
        return out

    def subchart(prefix: str, leaves: int) -> dict:
        return {f"section{s}": {f"{prefix}{s}x{k}": {"enabled": True, "value": f"v{k}"} for k in range(10)}
                for s in range(leaves // 20)}

    return {"global": {"imageRegistry": "harbor.internal.example"},
            "gpu-operator": twins(catalog.chart(catalog.chart_versions()[-1]).defaults),
            "kube-prometheus-stack": subchart("prom", 1500), "ingress-nginx": subchart("ing", 500)}


def import_bench(runs: int) -> None:
    """`gpuconf import --values` (whole process, the draft on stdout) of an umbrella chart's values file and of a
    values file with 2,000 keys under node-feature-discovery.worker the chart does not have (issue 29, item 6: each
    unknown key's did-you-mean took 20 ms, 11 s and 40 s; at most 1 s and 2 s)."""
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        umbrella, unknown = Path(tmp) / "umbrella.yaml", Path(tmp) / "unknown-keys.yaml"
        umbrella.write_text(yaml.safe_dump(umbrella_values()), encoding="utf-8")
        unknown.write_text(yaml.safe_dump({"node-feature-discovery": {"worker": {f"key{i}": i for i in range(2000)}}}),
                           encoding="utf-8")
        for label, path, limit in (("umbrella chart's values", umbrella, 1.0),
                                   ("2,000 unknown keys", unknown, 2.0)):
            command = [PYTHON, "-m", "gpuconf", "import", "--values", str(path)]
            subprocess.run(command, check=True, capture_output=True)  # it imports, and the byte code is warm
            keys = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if ":" in line)
            wall = _wall(command, max(3, runs // 2))
            print(f"{f'import --values {label}':<44} {wall * 1000:8.1f} ms  whole process, {keys:,} keys "
                  f"(acceptance: under {limit:g} s)")


def impact_bench(tmp: str, runs: int) -> None:
    """`gpuconf diff --against` in process, for an edit of the largest example (by rendered files) and for the
    reference example edited as tests/test_impact.py edits it: the whole command, and what the impact plan adds to it
    (issue 17: at most 20 %). The plan reuses the documents the diff parsed."""
    import io
    from contextlib import redirect_stdout

    import test_impact as T
    from gpuconf.impact import plan_impacts
    from gpuconf.output.treediff import compare_trees
    from gpuconf.output.writer import read_tree, write_tree
    from gpuconf.pipeline import deployed_reader, diff

    whole_runs: list[str] = []
    examples = sorted((ROOT / "examples").glob("*.yaml"))
    largest = max(examples, key=lambda p: len(T.files(T.S.load_plain(p.read_text(encoding="utf-8")))))

    def driver_downgrade():
        before = T.S.load_plain(largest.read_text(encoding="utf-8"))
        after = T.copy.deepcopy(before)
        after["spec"].setdefault("driver", {})["version"] = "580.126.20"
        return before, after

    pairs = [(f"driver version, {largest.name} (largest example)", driver_downgrade)]
    pairs += [(f"{name}, heterogeneous.yaml", T.CASES[name][0])
              for name in ("device-plugin-restart", "resource-rename", "driver-mode-switch")]
    for name, pair in pairs:
        before, after = pair()
        old, new = T.files(before), T.files(after)
        out = Path(tmp) / "impact" / str(len(whole_runs))
        write_tree(out, after["metadata"]["name"], {k: v for k, v in old.items() if k != ".gpuconf-files"})
        intent = Path(tmp) / f"impact-{len(whole_runs)}.yaml"
        whole_runs.append(name)
        intent.write_text(T.S.dump_yaml(after), encoding="utf-8")
        whole, alone = [], []
        for _ in range(runs):
            start = time.perf_counter()
            with redirect_stdout(io.StringIO()):
                diff(str(intent), "text", str(out), None, False)
            whole.append(time.perf_counter() - start)
            existing = read_tree(out / after["metadata"]["name"])
            result = compare_trees(existing, new, str(out), str(intent))
            start = time.perf_counter()
            plan_impacts(existing, new, result)
            deployed_reader(str(out))(after["metadata"]["name"])  # the transition rules' read of the folder
            alone.append(time.perf_counter() - start)
        w, a = statistics.median(whole), statistics.median(alone)
        print(f"{f'diff --against: {name}':<44} {w * 1000:8.1f} ms  in process, of which the impact plan and "
              "the transition rules' read "
              f"{a * 1000:.1f} ms (+{a / (w - a) * 100:.1f} % over the diff without it)")


def _render_benchmarks(gpuconf: list[str], tmp: str, runs: int, big_intent_text) -> None:
    """Full renders (validate, plan, render, verify, serialise; the write excluded in process) and their scaling."""
    from gpuconf import plan as P
    from gpuconf.intent.loader import load_text
    from gpuconf.render.tree import Command, render_tree
    from gpuconf.intent.validate import validate_document

    def render(text: str, name: str):
        result = validate_document(load_text(text, name))
        return render_tree(P.build(result.intent, name, result.document), Command(name, "bench"))

    examples = sorted((ROOT / "examples").glob("*.yaml"))
    largest = max(examples, key=lambda p: len(render(p.read_text(encoding="utf-8"), str(p)).files))
    text = largest.read_text(encoding="utf-8")
    render(text, str(largest))  # warm: schemas and validators are cached per process
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        render(text, str(largest))
        samples.append(time.perf_counter() - start)
    command = [*gpuconf, "render", str(largest), "-o", str(Path(tmp) / "out")]
    first = _wall(command, 1)  # the first process: the operating system's file cache is cold
    whole = _wall(command, runs)
    print(f"{f'render {largest.relative_to(ROOT)} (largest example)':<44} {statistics.median(samples) * 1000:8.1f} ms  "
          f"in process (warm), {whole * 1000:.0f} ms whole process with the write ({first * 1000:.0f} ms the "
          "first time)")
    for pools in (10, 100, 1000):
        text = big_intent_text(pools)
        samples = []
        for _ in range(max(3, runs // 2)):
            start = time.perf_counter()
            tree = render(text, f"pools-{pools}.yaml")
            samples.append(time.perf_counter() - start)
        size = sum(len(t) for t in tree.files.values()) // 1024
        line = (f"{f'render {pools:>4}-pool intent ({len(tree.files)} files, {size} KiB)':<44} "
                f"{statistics.median(samples) * 1000:8.1f} ms  in process")
        if pools == 1000:
            from gpuconf.output.writer import write_tree

            writes = []
            for _ in range(3):
                start = time.perf_counter()
                write_tree(Path(tmp) / "written", tree.name, tree.files)
                writes.append(time.perf_counter() - start)
            path = Path(tmp) / f"pools-{pools}.yaml"
            path.write_text(text, encoding="utf-8")
            whole = _wall([*gpuconf, 'render', str(path), '-o', str(Path(tmp) / 'out')], 3)
            line += (f", {whole * 1000:.0f} ms whole process, of which writing the files "
                     f"{statistics.median(writes) * 1000:.0f} ms")
        print(line)


def _audit_process(intent: Path, nodes: Path, runs: int) -> tuple[float, int]:
    """Median wall time and peak RSS (KiB) of a whole `gpuconf audit` process."""
    # VmHWM is this process image's own peak; ru_maxrss would also count the forking parent's pages (Linux keeps
    # the pre-exec high-water mark).
    probe = ("import atexit, resource, sys\n"
             "def peak():\n"
             "    try:\n"
             "        with open('/proc/self/status') as f:\n"
             "            return next(int(l.split()[1]) for l in f if l.startswith('VmHWM:'))\n"
             "    except (OSError, StopIteration):\n"
             "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "atexit.register(lambda: print('maxrss', peak(), file=sys.stderr))\n"
             "from gpuconf.entry import prepare\nprepare()\n"  # as the gpuconf command starts
             "from gpuconf.cli import main\nmain()")
    samples, rss = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([PYTHON, "-c", probe, "audit", str(intent), "--nodes", str(nodes)],
                              check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        samples.append(time.perf_counter() - start)
        assert done.returncode == 0, done.stderr[-2000:]
        rss = max(rss, int(done.stderr.rsplit("maxrss ", 1)[1]))
    return statistics.median(samples), rss


def _peak_process(args: list[str], runs: int, ok: tuple[int, ...] = (0,)) -> tuple[float, float, int]:
    """Median wall and CPU seconds and the peak RSS (KiB) of a whole gpuconf process with these arguments."""
    import resource

    probe = ("import atexit, resource, sys\n"
             "def peak():\n"
             "    try:\n"
             "        with open('/proc/self/status') as f:\n"
             "            return next(int(l.split()[1]) for l in f if l.startswith('VmHWM:'))\n"
             "    except (OSError, StopIteration):\n"
             "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "atexit.register(lambda: print('maxrss', peak(), file=sys.stderr))\n"
             "from gpuconf.entry import prepare\nprepare()\n"  # as the gpuconf command starts
             "from gpuconf.cli import main\nmain()")
    walls, cpus, rss = [], [], 0
    for _ in range(runs):
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([PYTHON, "-c", probe, *args], check=False, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
        assert done.returncode in ok, done.stderr[-2000:]
        rss = max(rss, int(done.stderr.rsplit("maxrss ", 1)[1]))
    return statistics.median(walls), statistics.median(cpus), rss


def impact_scale_bench(nodes: int, pods: int, runs: int) -> None:
    """`gpuconf diff --against --nodes --pods` of a driver change on a generated cluster of NODES GPU nodes with a
    PodList of PODS running GPU pods (issue 27: 5,200 nodes and 200,000 pods in at most 3 s and 300 MB)."""
    import nodelists

    from gpuconf import plan as P
    from gpuconf.intent.validate import validate_path

    with tempfile.TemporaryDirectory() as tmp:
        counts = {"train-h100": nodes * 6 // 10, "infer-a100": nodes // 5}
        counts["notebooks-l4"] = nodes - sum(counts.values())
        before = Path(tmp) / "before.yaml"
        before.write_text(nodelists.scaled_intent("heterogeneous", counts), encoding="utf-8")
        result = validate_path(before)
        plan = P.build(result.intent, str(before), result.document)
        subprocess.run([PYTHON, "-m", "gpuconf", "render", str(before), "-o", str(Path(tmp) / "out")],
                       check=True, capture_output=True)
        after = Path(tmp) / "after.yaml"
        text = before.read_text(encoding="utf-8")
        assert 'version: "595.91.07"' in text
        after.write_text(text.replace('version: "595.91.07"', 'version: "580.126.20"', 1), encoding="utf-8")
        node_file, pod_file = Path(tmp) / "nodes.json", Path(tmp) / "pods.json"
        node_size = nodelists.write_nodelist(node_file, plan, images=2)
        names = [spec.name for spec in nodelists.specs(plan) if spec.pool is not None]  # the GPU nodes
        pod_size = nodelists.write_podlist(pod_file, names, pods)
        wall, cpu, rss = _peak_process(["diff", str(after), "--against", str(Path(tmp) / "out"), "--nodes",
                                        str(node_file), "--pods", str(pod_file), "--fail-on", "disruptive"],
                                       runs, ok=(1,))
        label = f"impact plan {nodes:,} nodes, {pods:,} pods"
        print(f"{label:<44} {wall * 1000:8.1f} ms  whole process ({cpu * 1000:.0f} ms CPU), peak RSS "
              f"{rss / 1024:.0f} MiB; a driver change, NodeList {node_size / 1e6:.0f} MB, PodList "
              f"{pod_size / 1e6:.0f} MB of JSON")


def gc303_bench(runs: int) -> None:
    """Validation of 1,000 pools of one GPU model told apart by hostname patterns alone, so GC303 weighs all 499,500
    pairs (issue 46: over 120 s on 156dcf4): distinct literal prefixes, distinct suffixes, and prefixes with a
    character class after them."""
    from generate import hostname_intent_text

    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    for pattern in ("^gpu-{i:04d}-", "node-{i:04d}$", "^rack{i}-gpu[0-9]+$"):
        text = hostname_intent_text(1000, pattern)
        samples = []
        for _ in range(max(3, runs // 2)):
            start = time.perf_counter()
            result = validate_document(load_text(text, "hostnames.yaml"))
            samples.append(time.perf_counter() - start)
        assert result.ok, result.findings[:3]
        label = f"validate 1,000 pools by hostname {pattern.format(i=7)!r}"
        print(f"{label:<44} {statistics.median(samples) * 1000:8.1f} ms  in process (GC303 on 499,500 pairs)")


def audit_bench(runs: int, totals: tuple[int, ...] = (1_000, 10_000)) -> None:
    """`gpuconf audit` of generated clusters of 1,000 and 10,000 nodes (kubectl's JSON layout, realistic labels), or
    of the given sizes (100,000 nodes: issue 46 asks for under 3 s). The file is mapped and cut by its structure
    (cluster/nodescan.py; a file of 64 MB or more by two processes), nodes that read alike are judged once
    (cluster/auditmemo.py); in process, the whole audit and, run on its own, the reading of the list."""
    import nodelists

    from gpuconf import plan as P
    from gpuconf.cluster.audit import audit
    from gpuconf.cluster.nodescan import read_nodes
    from gpuconf.intent.validate import validate_path

    with tempfile.TemporaryDirectory() as tmp:
        for total in totals:
            gpu_nodes = total - 3  # plus three system nodes
            counts = {"train-h100": gpu_nodes * 6 // 10, "infer-a100": gpu_nodes // 5}
            counts["notebooks-l4"] = gpu_nodes - sum(counts.values())
            intent = Path(tmp) / f"cluster-{total}.yaml"
            intent.write_text(nodelists.scaled_intent("heterogeneous", counts), encoding="utf-8")
            result = validate_path(intent)
            plan = P.build(result.intent, str(intent), result.document)
            nodes = Path(tmp) / f"nodes-{total}.json"
            size = nodelists.write_nodelist(nodes, plan, images=25)
            parse, whole = [], []
            rounds = 1 if total >= 100_000 else max(3, runs // 2)  # 100,000 nodes are 2.6 GB of JSON
            for _ in range(rounds):
                start = time.perf_counter()
                listing = read_nodes(str(nodes))
                for _node in listing:
                    pass
                listing.close()
                parse.append(time.perf_counter() - start)
                start = time.perf_counter()
                listing = read_nodes(str(nodes))
                report = audit(plan, listing, str(nodes))
                listing.close()
                whole.append(time.perf_counter() - start)
            assert report.nodes_seen == total and report.healthy == gpu_nodes, report.summary()
            wall, rss = _audit_process(intent, nodes, 3)
            label = f"audit {total:>6,} nodes ({size / 1e6:.0f} MB of JSON)"
            print(f"{label:<44} {wall * 1000:8.1f} ms  whole process (median of 3), peak RSS {rss / 1024:.0f} MiB; "
                  f"in process {statistics.median(whole) * 1000:.0f} ms; reading the list alone "
                  f"{statistics.median(parse) * 1000:.0f} ms")


def audit_operands_bench(total: int, runs: int) -> None:
    """`gpuconf audit --nodes --pods` of a generated cluster of TOTAL nodes with every node's operator pods as
    `kubectl get pods -n gpu-operator -o json` writes them (eight operands a node; issue 42: 5,000 nodes and 40,000
    operator pods in under 2 s), six nodes of them broken: the pods are read in a process of their own beside the
    nodes, most of them by their layout (cluster/skim.py), not decoded."""
    import incidents
    import nodelists

    with tempfile.TemporaryDirectory() as tmp:
        intent = Path(tmp) / "intent.yaml"
        text = incidents.INTENT.replace("nodes: 8,", f"nodes: {total - 3},")
        intent.write_text(text, encoding="utf-8")
        plan = nodelists.plan_of(text)
        nodes = Path(tmp) / "nodes.json"
        node_size = nodelists.write_nodelist(nodes, plan, images=25)
        names = [spec.name for spec in nodelists.specs(plan) if spec.pool is not None]
        operands = incidents.OPERANDS + (("nvidia-dcgm", ("toolkit-validation",), ("nvidia-dcgm-ctr",),
                                          "nvcr.io/nvidia/cloud-native/dcgm:4.4.1-1-ubuntu22.04"),)
        pods = Path(tmp) / "pods.json"
        count = 0
        with open(pods, "w", encoding="utf-8") as out:  # kubectl's layout: four-space indent, sorted keys
            out.write('{\n    "apiVersion": "v1",\n    "items": [\n')
            for i, node in enumerate(names):
                for app, inits, containers, image in operands:
                    item = json.dumps(incidents.pod(app, inits, containers, image, node, i % 997 == 5), indent=4,
                                      sort_keys=True)
                    out.write((",\n" if count else "") + "\n".join("        " + line for line in item.splitlines()))
                    count += 1
            out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
        wall, cpu, rss = _peak_process(["audit", str(intent), "--nodes", str(nodes), "--pods", str(pods)], runs,
                                       ok=(1,))
        nodes_wall, _, _ = _peak_process(["audit", str(intent), "--nodes", str(nodes)], runs, ok=(0, 1))
        label = f"audit {total:,} nodes, {count:,} operator pods"
        print(f"{label:<44} {wall * 1000:8.1f} ms  whole process ({cpu * 1000:.0f} ms CPU, two cores), peak RSS "
              f"{rss / 1024:.0f} MiB; NodeList {node_size / 1e6:.0f} MB, PodList {pods.stat().st_size / 1e6:.0f} MB "
              f"of JSON; the nodes alone {nodes_wall * 1000:.0f} ms")


if __name__ == "__main__":
    main()

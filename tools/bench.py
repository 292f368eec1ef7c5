"""Benchmarks: start-up cost of the CLI, validation time of generated large intents, and the audit of generated
clusters of 1,000 and 10,000 nodes (`make bench`).

Timings are medians of several runs on this machine; nothing here asserts a time, it only reports.
"""

from __future__ import annotations

import argparse
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
    """Byte-compile gpuconf, as installing a wheel does: an editable install under PYTHONDONTWRITEBYTECODE=1 would
    otherwise compile every module in every process and the start-up figures would measure that."""
    import compileall

    import gpuconf

    compileall.compile_dir(str(Path(gpuconf.__file__).parent), quiet=1)


def _wall(cmd: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    """Print a table of timings and the scaling of validation with the number of pools."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="repetitions per measurement (median is reported)")
    args = parser.parse_args()

    from generate import big_intent_text

    _compile_package()
    # The template cache of the measured processes starts empty and is not the user's.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gpuconf-bench-cache-")
    gpuconf = [sys.executable, "-m", "gpuconf"]
    bare = _wall([sys.executable, "-c", "pass"], args.runs)
    help_ = _wall([*gpuconf, "--help"], args.runs)
    print(f"{'bare python start-up':<44} {bare * 1000:8.1f} ms")
    print(f"{'gpuconf --help':<44} {help_ * 1000:8.1f} ms  (+{(help_ - bare) * 1000:.1f} ms over bare)")
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
        _render_benchmarks(gpuconf, tmp, args.runs, big_intent_text)


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
    first = _wall(command, 1)  # compiles the report templates into the (empty) template cache
    whole = _wall(command, runs)
    print(f"{f'render {largest.relative_to(ROOT)} (largest example)':<44} {statistics.median(samples) * 1000:8.1f} ms  "
          f"in process (warm), {whole * 1000:.0f} ms whole process with the write ({first * 1000:.0f} ms the "
          "first time, filling the template cache)")
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
             "from gpuconf.cli import main\nmain()")
    samples, rss = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", probe, "audit", str(intent), "--nodes", str(nodes)],
                              check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        samples.append(time.perf_counter() - start)
        assert done.returncode == 0, done.stderr[-2000:]
        rss = max(rss, int(done.stderr.rsplit("maxrss ", 1)[1]))
    return statistics.median(samples), rss


def audit_bench(runs: int) -> None:
    """`gpuconf audit` of generated clusters of 1,000 and 10,000 nodes (kubectl's JSON layout, realistic labels)."""
    import nodelists

    from gpuconf import plan as P
    from gpuconf.cluster.audit import audit
    from gpuconf.cluster.nodesource import read_nodes_file
    from gpuconf.intent.validate import validate_path

    with tempfile.TemporaryDirectory() as tmp:
        for total in (1_000, 10_000):
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
            for _ in range(max(3, runs // 2)):
                start = time.process_time()
                for _node in read_nodes_file(str(nodes)):
                    pass
                parse.append(time.process_time() - start)
                start = time.process_time()
                report = audit(plan, read_nodes_file(str(nodes)), str(nodes))
                whole.append(time.process_time() - start)
            assert report.nodes_seen == total and report.healthy == gpu_nodes, report.summary()
            wall, rss = _audit_process(intent, nodes, 3)
            label = f"audit {total:>6,} nodes ({size / 1e6:.0f} MB of JSON)"
            print(f"{label:<44} {wall * 1000:8.1f} ms  whole process, peak RSS {rss / 1024:.0f} MiB; in process "
                  f"{statistics.median(whole) * 1000:.0f} ms CPU, of which reading and parsing "
                  f"{statistics.median(parse) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
    audit_bench(7)

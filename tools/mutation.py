"""Sampled mutation testing of gpuconf's core modules with cosmic-ray's operators (`make mutation`).

cosmic-ray enumerates every mutant it can make of a module (its core operators: comparisons, `and`/`or`, `not`,
numbers, True/False, binary and unary operators, break/continue, exception handlers, emptied for-loops). Its own
`exec` runs the whole test command for each one, which takes hours here, so this driver:

1. copies the working tree into .mutation/tree (the checkout is never mutated),
2. runs the fast test subset once under coverage, one coverage context per test phase, to learn which tests execute
   each line of the five modules (a line hit in a fixture's setup selects every test of that file, since a
   module-scoped fixture's result serves them all; a line run only at import selects every test that touches the
   module),
3. samples mutation sites of each module with a fixed seed (a site is a source span; one of its mutants is picked with
   the same seed, so `+` with eleven replacements weighs no more than an `if` with one),
4. applies each sampled mutant with cosmic-ray's MutationVisitor and runs exactly the tests that execute the mutated
   lines, fastest first, stopping at the first failure, under a timeout derived from those tests' own durations,
5. reports per module: killed, survived, equivalent (survivors listed in tools/mutation-equivalents.json, each with
   the reason it cannot change behaviour) and the score killed / (total - equivalent).

A survivor that no test executes is reported as "not run by any test". Usage: see `--help`; the README of the
explanation is docs/explanation/mutation-testing.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
EQUIVALENTS = ROOT / "tools" / "mutation-equivalents.json"

#: The core modules and, for each, the fast test files whose tests may execute it (the coverage run narrows each
#: mutant down to the tests that really execute its line).
_RULES = ["tests/test_cases.py", "tests/test_rule_limits.py", "tests/test_registry.py", "tests/test_loader.py",
          "tests/test_rule_edges.py"]
_AUDIT = ["tests/test_audit.py", "tests/test_audit_evidence.py", "tests/test_dra.py", "tests/test_import.py",
          "tests/test_platforms.py", "tests/test_quantity.py"]
_REPORT = ["tests/test_report.py", "tests/test_render.py", "tests/test_cases.py", "tests/test_dra.py",
           "tests/test_platforms.py", "tests/test_kueue.py", "tests/test_admission.py", "tests/test_hazards.py",
           "tests/test_hostile.py"]  # test_hostile: the committed compiled templates are what environment() compiles
_IMPACT = ["tests/test_impact.py", "tests/test_impact_advice.py", "tests/test_chart_move.py", "tests/test_cluster_set.py",
           "tests/test_adoption.py", "tests/test_fleet_commands.py", "tests/test_hazards.py",
           "tests/test_impact_edges.py"]
#: The groups a run samples from (issue 33: the rules, the audit, the plan, the report and the impact layer, each
#: a package or a module and the modules it was split into); `--sample` sites are drawn from each group as a whole.
GROUPS = {
    "rules": [f"gpuconf/intent/rules/{name}.py" for name in (
        "base", "syntax", "selection", "sharing", "teams", "kueue", "registry", "overrides", "driver", "rendered",
        "platforms", "dra", "transitions", "hazards", "locks")],
    "audit": ["gpuconf/cluster/audit.py", "gpuconf/cluster/auditresult.py"],
    "plan": ["gpuconf/plan.py"],
    "report": [f"gpuconf/output/report/{name}.py" for name in (
        "build", "overrides", "pools", "platform", "dra", "hazards", "capacity", "queues", "diagram", "upgrade",
        "admission", "acceptance", "jsontext", "markdown", "text")],
    "impact": [f"gpuconf/impact/{name}.py" for name in (
        "model", "planner", "chart", "clusterset", "deviceplugin", "driver", "folder", "hazards", "installation",
        "nodepools", "nodes", "quotas", "report", "workloads")],
    "kueue": ["gpuconf/render/kueue.py"],
    "semantic": ["gpuconf/output/semantic.py"],
}
#: What `make mutation` runs without arguments: the five groups issue 33 names.
DEFAULT_GROUPS = ["rules", "audit", "plan", "report", "impact"]
_TESTS = {"rules": _RULES, "audit": _AUDIT, "report": _REPORT, "impact": _IMPACT,
          "plan": ["tests/test_plan.py", "tests/test_render_parts.py", "tests/test_render.py", "tests/test_cases.py",
                   "tests/test_kueue.py", "tests/test_report.py", "tests/test_platforms.py"],
          "kueue": ["tests/test_kueue.py", "tests/test_kueue_problems.py", "tests/test_render_parts.py"],
          "semantic": ["tests/test_semantic.py", "tests/test_semantic_broken.py", "tests/test_render_parts.py"]}
MODULES = {module: _TESTS[group] for group, modules in GROUPS.items() for module in modules}
#: The context the coverage run records for lines run outside any test (imports at collection time).
IMPORT_CONTEXT = ""
ENV_FLAG = "GPUCONF_MUTATION_COVERAGE"


# --- the pytest plugin of the coverage run (loaded with -p tools.mutation) ----------------------------------------


class _Recorder:
    """Starts coverage before the tests import gpuconf and names the context after the running test and phase."""

    def __init__(self, data_file: str, include: list[str]):
        import coverage

        self.cov = coverage.Coverage(data_file=data_file, include=include, config_file=False)
        self.cov.start()
        self.durations: dict[str, float] = {}
        self.files: dict[str, str] = {}

    def phase(self, item, when: str):
        self.cov.switch_context(f"{item.nodeid}|{when}")

    def done(self, out: str):
        self.cov.switch_context(IMPORT_CONTEXT)
        self.cov.stop()
        self.cov.save()
        Path(out).write_text(json.dumps({"durations": self.durations, "files": self.files}), encoding="utf-8")


_RECORDER: _Recorder | None = None


def pytest_configure(config):
    global _RECORDER
    if os.environ.get(ENV_FLAG):
        spec = json.loads(os.environ[ENV_FLAG])
        _RECORDER = _Recorder(spec["data_file"], spec["include"])


def _hook(when):
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def wrapper(item):
        if _RECORDER is not None:
            _RECORDER.phase(item, when)
            _RECORDER.files[item.nodeid] = item.nodeid.split("::")[0]
        start = time.perf_counter()
        yield
        if _RECORDER is not None:
            _RECORDER.durations[item.nodeid] = _RECORDER.durations.get(item.nodeid, 0) + time.perf_counter() - start
    return wrapper


pytest_runtest_setup = _hook("setup")
pytest_runtest_call = _hook("call")
pytest_runtest_teardown = _hook("teardown")


def pytest_unconfigure(config):
    if _RECORDER is not None:
        _RECORDER.done(json.loads(os.environ[ENV_FLAG])["out"])


# --- the driver ---------------------------------------------------------------------------------------------------


@dataclass
class Mutant:
    """One sampled mutant and what became of it."""

    module: str
    operator: str
    occurrence: int
    line: int
    original: str
    mutated: str
    tests: int = 0
    outcome: str = "pending"  # killed | timeout | survived | not-run | equivalent
    reason: str = ""
    seconds: float = 0.0
    killer: str = ""
    diff: list[str] = field(default_factory=list)


def _copy_tree(dest: Path) -> None:
    """The working tree's files (tracked and untracked, not ignored) into dest, afresh."""
    if dest.exists():
        shutil.rmtree(dest)
    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    shared = ROOT.parent / "shared"  # the reference facts beside the clone, as CI has them
    if shared.exists():
        (dest.parent / "shared").unlink(missing_ok=True)
        (dest.parent / "shared").symlink_to(shared)


def _env(tree: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", ENV_FLAG)}
    env.update(PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _pytest(tree: Path, args: list[str], env: dict[str, str], timeout: float | None = None):
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args]
    return subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)


def _map_tests(tree: Path, modules: list[str]) -> tuple[dict, dict[str, float], dict[str, str]]:
    """Coverage of the modules' fast test subsets: {module: {line: {context, ...}}}, test durations, test files."""
    tests = sorted({t for m in modules for t in MODULES[m]})
    data_file = WORK / "coverage.sqlite"
    out = WORK / "durations.json"
    data_file.unlink(missing_ok=True)
    spec = {"data_file": str(data_file), "include": [str(tree / m) for m in modules], "out": str(out)}
    started = time.perf_counter()
    result = _pytest(tree, ["-p", "tools.mutation", *tests], _env(tree, **{ENV_FLAG: json.dumps(spec)}))
    if result.returncode != 0:
        sys.exit(f"the unmutated tests fail, nothing to measure:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")
    print(f"coverage run of {len(tests)} test files: {time.perf_counter() - started:.0f} s", flush=True)
    import coverage

    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    lines: dict[str, dict[int, set[str]]] = {}
    for module in modules:
        by_line = data.contexts_by_lineno(str(tree / module)) or {}
        lines[module] = {n: set(c) for n, c in by_line.items()}
    recorded = json.loads(out.read_text(encoding="utf-8"))
    return lines, recorded["durations"], recorded["files"]


#: Decorators whose function body runs once per process: its lines are attributed to the first test that calls it.
MEMOIZERS = {"cache", "lru_cache", "cached_property"}


def once_lines(source: str) -> set[int]:
    """Lines that run once per process: module and class level statements (imports, constants, def lines with their
    defaults and decorators) and the bodies of memoized functions. Coverage attributes them to whichever test ran
    first, so a mutant there is run against every test that executes the module."""
    import ast

    tree = ast.parse(source)
    every = set(range(1, len(source.splitlines()) + 1))
    per_call: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            names = {getattr(d, "attr", getattr(d, "id", None)) for d in getattr(node, "decorator_list", ())
                     for d in [d.func if isinstance(d, ast.Call) else d]}
            if names & MEMOIZERS:
                continue
            body = node.body if isinstance(node.body, list) else [node.body]
            per_call.update(range(body[0].lineno, max(b.end_lineno for b in body) + 1))
    return every - per_call


def users(source: str, first: int, last: int) -> set[int]:
    """Lines that use what the top-level statement around lines first..last defines: the body of a decorated or
    memoized function, and every line that reads a module-level name the statement assigns."""
    import ast

    tree = ast.parse(source)
    out: set[int] = set()
    for statement in tree.body:
        start = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
        if not (start <= last and first <= statement.end_lineno):
            continue
        out.update(range(start, statement.end_lineno + 1))
        names = {t.id for node in ast.walk(statement) if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            names.add(statement.name)
        out.update(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names)
    return out


def _contexts_tests(contexts: set[str], files: dict[str, str]) -> set[str]:
    """Test ids of coverage contexts: a call selects its test, a setup or teardown every test of the file."""
    selected: set[str] = set()
    for context in contexts:
        if context == IMPORT_CONTEXT:
            continue
        nodeid, _, when = context.rpartition("|")
        if when == "call":
            selected.add(nodeid)
        else:
            selected.update(t for t, f in files.items() if f == files.get(nodeid))
    return selected


def _tests_for(lines: dict[int, set[str]], first: int, last: int, files: dict[str, str], once: set[int],
               durations: dict[str, float], source: str) -> list[str]:
    """The tests that execute any of lines first..last, in the order to run them (see the module docstring)."""
    def by_time(tests):
        return sorted(tests, key=lambda t: (durations.get(t, 0), t))

    span = range(first, last + 1)
    contexts = set().union(*(lines.get(n, set()) for n in span))
    if not contexts:
        return []
    if not any(n in once for n in span):
        return by_time(_contexts_tests(contexts, files))
    # Run once per process: every test of the module, those that use what the line defines first.
    near = _contexts_tests(set().union(*(lines.get(n, set()) for n in users(source, first, last) - once)), files)
    every = _contexts_tests(set().union(*lines.values()), files)
    return by_time(near) + by_time(every - near)


def annotations(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The spans of a module's type annotations when `from __future__ import annotations` keeps Python from ever
    evaluating them (PEP 563): a mutant there (`int | None` -> `int / None`) changes no behaviour."""
    import ast

    tree = ast.parse(source)
    if not any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations"
                                                                                  for a in n.names)
               for n in tree.body):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            found += [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                      if a is not None and a.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return [((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)) for a in found]


def _sites(module: str):
    """cosmic-ray's work items of a module, grouped by the source span they mutate (annotations left out)."""
    from cosmic_ray.commands.init import _all_work_items  # cosmic-ray's own enumeration of a module's mutants

    spans = annotations(Path(module).read_text(encoding="utf-8"))
    sites: dict[tuple, list] = {}
    for item in _all_work_items([Path(module)], {}):
        mutation = item.mutations[0]
        start, end = tuple(mutation.start_pos), tuple(mutation.end_pos)
        if not any(a <= start and end <= b for a, b in spans):
            sites.setdefault((start, end), []).append(mutation)
    return sites


def _sample(sites: dict, module: str, count: int, seed: int) -> list:
    """count mutation sites of a module and one mutant of each, chosen with random.Random(seed) (stable order)."""
    rng = random.Random(f"{seed}:{module}")
    keys = sorted(sites)
    chosen = sorted(rng.sample(keys, min(count, len(keys))))
    return [rng.choice(sorted(sites[k], key=lambda m: (m.operator_name, m.occurrence))) for k in chosen]


def sample_group(group_sites: dict[str, dict], group: str, count: int, seed: int) -> dict[str, list]:
    """count mutation sites drawn from a group's modules together (each site as likely as any other, so a large
    module gets more of them), one mutant of each: module -> its sampled mutants, in module and site order."""
    rng = random.Random(f"{seed}:{group}")
    keys = sorted((module, span) for module, sites in group_sites.items() for span in sites)
    out: dict[str, list] = {module: [] for module in group_sites}
    for module, span in sorted(rng.sample(keys, min(count, len(keys)))):
        mutants = sorted(group_sites[module][span], key=lambda m: (m.operator_name, m.occurrence))
        out[module].append(rng.choice(mutants))
    return out


def _apply(source: str, mutation) -> str | None:
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    operator = cosmic_ray.plugins.get_operator(mutation.operator_name)(**(mutation.operator_args or {}))
    return mutate_code(source, operator, mutation.occurrence)


def _changed(before: str, after: str) -> tuple[int, int, str, str, list[str]]:
    import difflib

    a, b = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    first, last = ops[0][1] + 1, max(ops[-1][2], ops[0][1] + 1)
    diff = [line for line in difflib.unified_diff(a, b, lineterm="", n=1)][2:]
    return (first, last, " ".join(" ".join(a[ops[0][1]:ops[-1][2]]).split()),
            " ".join(" ".join(b[ops[0][3]:ops[-1][4]]).split()), diff)


def _equivalents() -> list[dict]:
    return json.loads(EQUIVALENTS.read_text(encoding="utf-8")) if EQUIVALENTS.exists() else []


#: Third-party modules the tests import, loaded once in the driver so that each forked mutant run starts warm.
WARM = ("pydantic", "ruamel.yaml", "yaml", "click", "click.testing", "jsonschema", "jinja2", "orjson", "pytest",
        "_pytest.python", "hypothesis")


def _warm() -> None:
    import importlib

    for name in WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    assert not any(m == "gpuconf" or m.startswith("gpuconf.") for m in sys.modules), "the driver must not load gpuconf"


def _fork_pytest(tree: Path, tests: list[str], log: Path) -> int:
    """Fork a child that runs pytest on tests inside tree (its own process group); returns the child's pid."""
    args = tree / ".mutation-tests.txt"
    args.write_text("\n".join(tests) + "\n", encoding="utf-8")
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: gpuconf and the tests are imported here, from the mutated tree
        os.setpgid(0, 0)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.chdir(tree)
        sys.path.insert(0, str(tree))
        sys.dont_write_bytecode = True
        os.environ.pop(ENV_FLAG, None)
        os.environ.update(PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")  # subprocesses import the tree too
        import pytest

        code = pytest.main(["-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=", f"@{args}"])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    except BaseException:  # noqa: BLE001 - a child never returns into the driver
        import traceback

        traceback.print_exc()
        os._exit(3)


def _hunk(diff: list[str]) -> tuple[str, ...]:
    """A mutant's diff without its line numbers: the changed lines and one line around them."""
    return tuple(line for line in diff if not line.startswith("@@"))


def survivors(results: Path) -> dict[str, set[tuple]]:
    """The survivors of an earlier run (its results.json): module -> {(operator, diff without line numbers)}."""
    out: dict[str, set[tuple]] = {}
    for m in json.loads(results.read_text(encoding="utf-8")):
        if m["outcome"] in ("survived", "not-run"):
            out.setdefault(m["module"], set()).add((m["operator"], _hunk(m["diff"])))
    return out


def at_lines(sites: dict, wanted: set[int]) -> list:
    """Every mutant of the sites that start on one of the wanted lines (all operators, not a sample)."""
    return [m for span in sorted(sites) if span[0][0] in wanted
            for m in sorted(sites[span], key=lambda m: (m.operator_name, m.occurrence))]


def _plan(groups: dict[str, list[str]], count: int, seed: int, lines: dict, durations: dict, files: dict, tree: Path,
          again: dict[str, set] | None = None, only: dict[str, set[int]] | None = None):
    """The sampled mutants of each group (or, with again, the earlier survivors found again in the modules' current
    source; with only, every mutant of the lines named) with their mutated source and ordered tests."""
    jobs = []
    for group, modules in groups.items():
        group_sites = {module: _sites(module) for module in modules}
        if only is not None:
            chosen = {module: at_lines(group_sites[module], only.get(module, set())) for module in modules}
            print(f"{group}: {sum(map(len, chosen.values()))} mutants on the lines named", flush=True)
        elif again is None:
            chosen = sample_group(group_sites, group, count, seed)
            print(f"{group}: {sum(map(len, group_sites.values()))} mutation sites in {len(modules)} "
                  f"module{'s' if len(modules) != 1 else ''}, {sum(map(len, chosen.values()))} sampled", flush=True)
        for module in modules:
            source = (tree / module).read_text(encoding="utf-8")
            once = once_lines(source)
            sites = group_sites[module]
            if again is None or only is not None:
                sampled = chosen[module]
            else:
                wanted = again.get(module, set())
                sampled = [m for ms in sites.values() for m in ms if any(m.operator_name == w[0] for w in wanted)]
                print(f"{module}: {len(sites)} mutation sites, {len(wanted)} earlier survivors", flush=True)
            for mutation in sampled:
                mutated = _apply(source, mutation)
                if mutated is None:
                    continue
                first, last, original, changed, diff = _changed(source, mutated)
                if again is not None and (mutation.operator_name, _hunk(diff)) not in wanted:
                    continue
                mutant = Mutant(module, mutation.operator_name, mutation.occurrence, first, original, changed,
                                diff=diff)
                tests = _tests_for(lines[module], first, last, files, once, durations, source)
                mutant.tests = len(tests)
                jobs.append((mutant, source, mutated, tests))
    return jobs


def run(groups: dict[str, list[str]], count: int, seed: int, workers: int = 1,
        again: dict | None = None, only: dict[str, set[int]] | None = None) -> list[Mutant]:
    WORK.mkdir(exist_ok=True)
    trees = [WORK / f"tree-{i}" for i in range(workers)]
    for tree in trees:
        _copy_tree(tree)
    if again is not None:
        groups = {g: [m for m in modules if m in again] for g, modules in groups.items()}
        groups = {g: modules for g, modules in groups.items() if modules}
    modules = [m for ms in groups.values() for m in ms]
    lines, durations, files = _map_tests(trees[0], modules)
    jobs = _plan(groups, count, seed, lines, durations, files, trees[0], again, only)
    known = _equivalents()
    _warm()
    pending = list(jobs)
    running: dict[int, tuple] = {}  # pid -> (job, tree, started, deadline)
    free = list(trees)
    while pending or running:
        while pending and free:
            job = pending.pop(0)
            mutant, source, mutated, tests = job
            if not tests:
                mutant.outcome = "not-run"
                _finish(mutant, known)
                continue
            tree = free.pop()
            (tree / mutant.module).write_text(mutated, encoding="utf-8")
            limit = 30 + 3 * sum(durations.get(t, 0) for t in tests)
            pid = _fork_pytest(tree, tests, tree.parent / f"{tree.name}.log")
            running[pid] = (job, tree, time.monotonic(), time.monotonic() + limit)
        time.sleep(0.05)
        for pid, (job, tree, started, deadline) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            timed_out = not done and time.monotonic() > deadline
            if not done and not timed_out:
                continue
            if timed_out:
                os.killpg(pid, 9)
                os.waitpid(pid, 0)
            mutant, source, _, _ = job
            code = None if timed_out else os.waitstatus_to_exitcode(status)
            log = (tree.parent / f"{tree.name}.log").read_text(encoding="utf-8", errors="replace")
            if timed_out:
                mutant.outcome = "timeout"
            elif code in (0, 1, 2) or (code == 4 and _import_broken(log)):
                # 4: the mutant broke the import of a module a conftest loads (pytest calls that a usage error).
                mutant.outcome = "survived" if code == 0 else "killed"
                mutant.killer = next((ln for ln in log.splitlines() if ln.startswith(("FAILED", "ERROR"))), "")
            else:
                _save([job[0] for job in jobs if job[0].outcome != "pending"])
                sys.exit(f"pytest exited {code} on {mutant.module}:{mutant.line}:\n{log[-3000:]}")
            mutant.seconds = round(time.monotonic() - started, 1)
            (tree / mutant.module).write_text(source, encoding="utf-8")
            del running[pid]
            free.append(tree)
            _finish(mutant, known)
    return [job[0] for job in jobs]


def _import_broken(log: str) -> bool:
    """True when pytest stopped because a test module or conftest could not be imported (a collection error)."""
    return "ERROR collecting" in log or "ImportError while loading conftest" in log


def _save(results: list[Mutant]) -> None:
    """results.json and report.txt of the mutants run so far (also when a run stops early)."""
    text, _ = summary(results)
    (WORK / "results.json").write_text(json.dumps([asdict(m) for m in results], indent=1), encoding="utf-8")
    (WORK / "report.txt").write_text(text + "\n", encoding="utf-8")


def _finish(mutant: Mutant, known: list[dict]) -> None:
    """Mark a survivor listed in tools/mutation-equivalents.json as equivalent; print the outcome."""
    if mutant.outcome in ("survived", "not-run"):
        for entry in known:
            if (entry["module"], entry["operator"], entry["line"], entry["mutated"]) == \
                    (mutant.module, mutant.operator, mutant.original, mutant.mutated):
                mutant.outcome, mutant.reason = "equivalent", entry["reason"]
    print(f"  {mutant.outcome:10} {mutant.module}:{mutant.line} {mutant.operator} ({mutant.tests} tests, "
          f"{mutant.seconds} s)", flush=True)


def _row(name: str, mine: list[Mutant]) -> tuple[str, int, int, list[Mutant]]:
    killed = sum(m.outcome in ("killed", "timeout") for m in mine)
    equivalent = sum(m.outcome == "equivalent" for m in mine)
    alive = [m for m in mine if m.outcome in ("survived", "not-run")]
    changing = len(mine) - equivalent
    return (f"{name:40} {len(mine):6} {killed:7} {len(alive):9} {equivalent:11}  "
            f"{100 * killed / changing if changing else 100:5.1f} %"), killed, changing, alive


def summary(results: list[Mutant], groups: dict[str, list[str]] | None = None) -> tuple[str, float]:
    """The per-module table (each group's total under its modules), the survivors, and the overall score (killed /
    behaviour-changing, in percent)."""
    rows = [f"{'module':40} sampled  killed  survived  equivalent  score"]
    total_killed = total_changing = 0
    survivors = []
    modules = list(dict.fromkeys(m.module for m in results))
    groups = groups or {module: [module] for module in modules}
    for group, members in groups.items():
        for module in members:
            mine = [m for m in results if m.module == module]
            if not mine:
                continue
            row, killed, changing, alive = _row(module, mine)
            rows.append(row)
            total_killed += killed
            total_changing += changing
            survivors += alive
        if len(members) > 1:
            rows.append(_row(f"  group {group}", [m for m in results if m.module in members])[0])
    score = 100 * total_killed / total_changing if total_changing else 100.0
    rows.append(f"{'all':40} {len(results):6} {total_killed:7} {len(survivors):9} "
                f"{sum(m.outcome == 'equivalent' for m in results):11}  {score:5.1f} %")
    for m in survivors:
        rows += ["", f"SURVIVED{' (not run by any test)' if m.outcome == 'not-run' else ''}: "
                     f"{m.module}:{m.line} {m.operator}", *(f"    {d}" for d in m.diff)]
    for m in (m for m in results if m.outcome == "equivalent"):
        rows += ["", f"equivalent: {m.module}:{m.line} {m.operator}: {m.reason}", *(f"    {d}" for d in m.diff)]
    return "\n".join(rows), score


def main(argv: list[str] | None = None) -> int:
    global WORK
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", default=DEFAULT_GROUPS, metavar="GROUP|MODULE",
                        help=f"groups ({', '.join(GROUPS)}) or single modules to mutate (default: "
                             f"{', '.join(DEFAULT_GROUPS)})")
    parser.add_argument("--sample", type=int, default=50,
                        help="mutation sites sampled per group, or per module named alone (default 50)")
    parser.add_argument("--seed", type=int, default=23, help="the sampling seed (default 23)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in its own tree (default 1)")
    parser.add_argument("--survivors", action="store_true",
                        help="run only the survivors of the last run (its results.json) again, after new tests")
    parser.add_argument("--lines", action="append", default=[], metavar="MODULE:LINE[,LINE...]",
                        help="run every mutant of these lines of a module instead of a sample (e.g. a survivor "
                             "another mutation tool reported); may be given more than once")
    parser.add_argument("--work", type=Path, default=WORK, help="the folder of the run's files (default .mutation)")
    parser.add_argument("--fail-under", type=float, default=None, help="exit 1 when the score is below this percent")
    args = parser.parse_args(argv)
    unknown = [t for t in args.targets if t not in GROUPS and t not in MODULES]
    if unknown:
        parser.error(f"not a group or core module: {', '.join(unknown)} (groups: {', '.join(GROUPS)}; modules: "
                     f"{', '.join(MODULES)})")
    groups = {t: GROUPS.get(t, [t]) for t in dict.fromkeys(args.targets)}
    only = None
    if args.lines:
        only = {}
        for spec in args.lines:
            module, _, numbers = spec.partition(":")
            if module not in MODULES or not numbers or not all(n.isdigit() for n in numbers.split(",")):
                parser.error(f"--lines {spec}: give MODULE:LINE[,LINE...] with a core module")
            only.setdefault(module, set()).update(int(n) for n in numbers.split(","))
        groups = {module: [module] for module in only}
    WORK = args.work.resolve()
    os.chdir(ROOT)
    again = None
    if args.survivors:
        if not (WORK / "results.json").is_file():
            parser.error(f"--survivors: no earlier run in {WORK} (results.json)")
        again = survivors(WORK / "results.json")
    results = run(groups, args.sample, args.seed, max(1, args.jobs), again, only)
    text, score = summary(results, groups)
    (WORK / "results.json").write_text(json.dumps([asdict(m) for m in results], indent=1), encoding="utf-8")
    (WORK / "report.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 1 if args.fail_under is not None and score < args.fail_under else 0


if __name__ == "__main__":
    sys.exit(main())

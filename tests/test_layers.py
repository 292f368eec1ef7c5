"""The import graph of gpuconf/, built with ast: the layers it is meant to have hold.

Issue 33: render/ shares its names through one low module (render/names.py), so no renderer imports another
renderer's private helper and no two renderers import each other, directly or around a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import gpuconf

ROOT = Path(gpuconf.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("gpuconf",) + path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[tuple[str, tuple[str, ...]]]]:
    """module -> {(imported gpuconf module, names taken from it)}, every import anywhere in the file (lazy ones too)."""
    modules = _modules()
    graph: dict[str, set[tuple[str, tuple[str, ...]]]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        graph[name].add((sub, ()))
                    elif target in modules:
                        graph[name].add((target, (alias.name,)))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        graph[name].add((alias.name, ()))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(prefix: str) -> dict[str, set[str]]:
    graph = import_graph()
    return {m: {t for t, _ in targets if t.startswith(prefix)} for m, targets in graph.items() if m.startswith(prefix)}


def test_the_cycle_finder_finds_a_circle_and_only_circles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_renderer_imports_another_in_a_circle():
    assert cycles(_within("gpuconf.render.")) == []


def test_no_renderer_takes_another_renderers_private_name():
    graph = import_graph()
    crossings = sorted((m, t, n) for m, targets in graph.items() if m.startswith("gpuconf.render.")
                       for t, names in targets if t.startswith("gpuconf.render.") and t != m
                       for n in names if n.startswith("_"))
    assert crossings == []


def test_shared_names_import_no_renderer():
    assert {t for t, _ in import_graph()["gpuconf.render.names"] if t.startswith("gpuconf.render")} == set()


def test_the_design_page_names_only_modules_and_folders_that_exist():
    """docs/explanation/design.md names files and folders of the package as it is (issue 33, item 5): a module moved
    or renamed without the page fails here; the generated modules page lists them all (tests/test_docs.py)."""
    import re

    repo = Path(__file__).resolve().parent.parent
    page = (repo / "docs" / "explanation" / "design.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(gpuconf/[A-Za-z0-9_/]+(?:\.py)?/?)`", page))
    assert len(named) > 20, named
    missing = sorted(p for p in named if not (repo / p.rstrip("/")).exists())
    assert missing == [], missing
    assert "(../reference/modules.md)" in page


def test_the_intent_layer_has_no_circle():
    """Issue 33, item 1: the rule modules import rules.base for Context and `rule`, and only the package's __init__
    imports them, so no module of gpuconf/intent/ imports itself around a circle (the rules once did)."""
    assert cycles(_within("gpuconf.intent")) == []


def test_the_rules_base_imports_no_rule_module_and_a_rule_module_no_other():
    """rules.base (Context, the decorator, the registry) imports nothing of the package; a rule module takes only the
    registry (base) and the shared syntax (syntax) from it, never another rule module or the package that loads it."""
    graph = _within("gpuconf.intent.rules")
    assert graph["gpuconf.intent.rules.base"] == set()
    assert graph["gpuconf.intent.rules.syntax"] == set()
    shared = {"gpuconf.intent.rules.base", "gpuconf.intent.rules.syntax"}
    rule_modules = sorted(set(graph) - shared - {"gpuconf.intent.rules"})
    assert len(rule_modules) >= 10, rule_modules
    assert {m: sorted(graph[m] - shared) for m in rule_modules if graph[m] - shared} == {}
    assert graph["gpuconf.intent.rules"] >= set(rule_modules)


def test_the_rules_run_in_the_order_the_package_loads_their_modules():
    """RULES holds each rule module's rules together, the modules in the order of the package's imports: the order
    of `check`'s findings (the lock rules, which read the findings before them, last). No module is over 500 lines."""
    from itertools import groupby

    from gpuconf.intent.rules import RULES

    init = ROOT / "intent" / "rules" / "__init__.py"
    loaded = [f"gpuconf.intent.rules.{node.names[0].name}" for node in ast.parse(init.read_text(encoding="utf-8")).body
              if isinstance(node, ast.ImportFrom) and node.module is None and node.level == 1]
    assert [module for module, _ in groupby(RULES, key=lambda r: r.check.__module__)] == loaded
    assert loaded[-1] == "gpuconf.intent.rules.locks"
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in init.parent.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 500} == {}


def test_the_output_and_cluster_layers_have_no_circle():
    """Issue 33, item 2: the report is a package of one module per section (gpuconf/output/report/), and the audit and
    the importer are split by job; none of their modules imports another around a circle, nor does any module of
    gpuconf/output/ or gpuconf/cluster/."""
    graph = _within("gpuconf.output")
    assert {m for m in graph if m.startswith("gpuconf.output.report.")} >= {
        "gpuconf.output.report.overrides", "gpuconf.output.report.pools", "gpuconf.output.report.capacity",
        "gpuconf.output.report.diagram", "gpuconf.output.report.upgrade", "gpuconf.output.report.acceptance"}
    assert cycles(graph) == []
    assert cycles(_within("gpuconf.cluster")) == []


def test_the_report_sections_import_not_the_package_that_loads_them():
    """A section module of the report takes what it shares from its siblings (text, pools), never from the package's
    __init__, which re-exports them all; so the package can load them in any order."""
    graph = _within("gpuconf.output")
    sections = [m for m in graph if m.startswith("gpuconf.output.report.")]
    assert {m: "gpuconf.output.report" for m in sections if "gpuconf.output.report" in graph[m]} == {}


def test_the_whole_package_has_no_circle():
    """Issue 33's acceptance: the import graph of all of gpuconf/ (every import, lazy ones inside functions too) has
    no circle, so each module can be read, and loaded, after the modules it imports."""
    graph = {m: {t for t, _ in targets} for m, targets in import_graph().items()}
    assert len(graph) > 120, len(graph)
    assert cycles(graph) == []


#: The most lines a module of gpuconf/ may hold (issue 33): a room a reader takes in at one sitting.
MAX_LINES = 900


def test_no_module_is_over_the_size_a_reader_takes_in():
    """No module under gpuconf/ is over 900 lines: the audit's result types and reporters live in
    cluster/auditresult.py, a node's sharing in cluster/nodesharing.py, the draft's YAML values in cluster/draftyaml.py
    and the models' base in intent/strict.py, beside the modules that use them."""
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in ROOT.rglob("*.py")}
    assert len(sizes) > 120, len(sizes)
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
    # The audit and the importer, which held several jobs each, are split by job.
    assert {"cluster/auditresult.py", "cluster/nodesharing.py", "cluster/draftyaml.py", "intent/strict.py"} <= set(sizes)

"""tools/mutation.py (`make mutation`): which tests a mutant runs against, how the score is counted, and that the list
of equivalent mutants names lines the core modules still have."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("gpuconf_mutation_tool", ROOT / "tools" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


SOURCE = textwrap.dedent('''\
    import functools

    LIMIT = 10


    def plain(x):
        return x > LIMIT


    @functools.cache
    def table():
        return {"a": 1}


    class Box:
        size = 3

        def grow(self):
            return self.size + 1
    ''')


def test_lines_that_run_once_per_process(tool):
    once = tool.once_lines(SOURCE)
    assert {1, 3, 6, 10, 11, 12, 15, 16, 18} <= once  # imports, constants, def lines, the memoized body, class body
    assert 7 not in once and 19 not in once  # bodies that run on each call


def test_what_uses_a_top_level_statement(tool):
    assert tool.users(SOURCE, 3, 3) == {3, 7}  # LIMIT is read in plain()
    assert tool.users(SOURCE, 10, 10) == {10, 11, 12}  # the decorator: the function it wraps
    assert 19 in tool.users(SOURCE, 16, 16)


def test_tests_for_a_line(tool):
    lines = {7: {"tests/a.py::t1|call", "tests/b.py::t3|setup"}, 12: {"tests/a.py::t2|call"},
             3: {""}, 19: set()}
    files = {"tests/a.py::t1": "tests/a.py", "tests/a.py::t2": "tests/a.py", "tests/b.py::t3": "tests/b.py",
             "tests/b.py::t4": "tests/b.py"}
    durations = {"tests/a.py::t1": 2.0, "tests/a.py::t2": 0.5, "tests/b.py::t3": 1.0, "tests/b.py::t4": 0.1}
    once = tool.once_lines(SOURCE)
    # A line run per call: the tests that ran it, and every test of a file whose fixture setup ran it; fastest first.
    assert tool._tests_for(lines, 7, 7, files, once, durations, SOURCE) == [
        "tests/b.py::t4", "tests/b.py::t3", "tests/a.py::t1"]
    # A constant: every test of the module, those that read it first.
    assert tool._tests_for(lines, 3, 3, files, once, durations, SOURCE) == [
        "tests/b.py::t4", "tests/b.py::t3", "tests/a.py::t1", "tests/a.py::t2"]
    assert tool._tests_for(lines, 19, 19, files, once, durations, SOURCE) == []  # no test runs it


def test_the_score_leaves_out_equivalent_mutants(tool):
    def mutant(outcome, module="gpuconf/plan.py"):
        return tool.Mutant(module, "core/NumberReplacer", 0, 1, "x = 1", "x = 2", outcome=outcome)

    results = [mutant("killed"), mutant("timeout"), mutant("survived"), mutant("equivalent"), mutant("not-run"),
               mutant("killed", "gpuconf/render/kueue.py")]
    text, score = tool.summary(results)
    assert score == pytest.approx(100 * 3 / 5)
    rows = text.splitlines()
    assert rows[1].split() == ["gpuconf/plan.py", "5", "2", "2", "1", "50.0", "%"]
    assert rows[2].split() == ["gpuconf/render/kueue.py", "1", "1", "0", "0", "100.0", "%"]
    assert "SURVIVED (not run by any test): gpuconf/plan.py:1 core/NumberReplacer" in text


def test_every_equivalent_mutant_names_a_line_its_module_still_has(tool):
    entries = json.loads(tool.EQUIVALENTS.read_text(encoding="utf-8"))
    for entry in entries:
        assert sorted(entry) == ["line", "module", "mutated", "operator", "reason"], entry
        assert entry["module"] in tool.MODULES and entry["reason"].strip()
        text = " ".join((ROOT / entry["module"]).read_text(encoding="utf-8").split())
        assert entry["line"] in text, f"stale entry in tools/mutation-equivalents.json: {entry['line']}"
        assert entry["line"] != entry["mutated"]


def test_the_test_subsets_exist(tool):
    for module, tests in tool.MODULES.items():
        assert (ROOT / module).is_file()
        assert all((ROOT / t).is_file() for t in tests), tests


def test_annotations_are_no_mutation_sites_when_python_never_evaluates_them(tool):
    lazy = "from __future__ import annotations\n\n\ndef f(a: int | None, *b: str) -> dict[str, int]:\n    x: int = a\n"
    assert tool.annotations(lazy) == [((4, 9), (4, 19)), ((4, 25), (4, 28)), ((4, 33), (4, 47)), ((5, 7), (5, 10))]
    assert tool.annotations(lazy.replace("from __future__ import annotations\n", "")) == []


def test_survivors_of_an_earlier_run_are_read_back(tool, tmp_path):
    diff = ["@@ -9,3 +9,3 @@", " x = 1", "-if a:", "+if not a:", "     return"]
    results = [tool.Mutant("gpuconf/plan.py", "core/AddNot", 3, 10, "if a:", "if not a:", outcome=o, diff=diff).__dict__
               for o in ("killed", "survived", "not-run", "equivalent", "timeout")]
    results[2]["diff"] = ["@@ -20,3 +20,3 @@", " y = 2", "-if a:", "+if not a:", "     return"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    # Found again by the changed line and its neighbours, wherever the lines moved to.
    assert tool.survivors(path) == {"gpuconf/plan.py": {
        ("core/AddNot", (" x = 1", "-if a:", "+if not a:", "     return")),
        ("core/AddNot", (" y = 2", "-if a:", "+if not a:", "     return"))}}


def test_a_group_is_sampled_as_a_whole_and_totalled_under_its_modules(tool):
    """Issue 33: the rules, the audit, the report and the impact layer are several modules each; `--sample` sites are
    drawn from the group together (the same seed, the same sites) and the table totals each group."""
    class Site:
        def __init__(self, name, occurrence):
            self.operator_name, self.occurrence = name, occurrence

    sites = {"a.py": {(1, 2): [Site("core/X", 0), Site("core/Y", 0)], (3, 4): [Site("core/X", 1)]},
             "b.py": {(5, 6): [Site("core/X", 0)]}}
    chosen = tool.sample_group(sites, "g", 2, 23)
    assert sum(map(len, chosen.values())) == 2
    assert [[(m.operator_name, m.occurrence) for m in ms] for ms in chosen.values()] == \
        [[(m.operator_name, m.occurrence) for m in ms] for ms in tool.sample_group(sites, "g", 2, 23).values()]
    everything = tool.sample_group(sites, "g", 10, 23)
    assert {module: len(ms) for module, ms in everything.items()} == {"a.py": 2, "b.py": 1}
    assert set(tool.DEFAULT_GROUPS) == {"rules", "audit", "plan", "report", "impact"}
    assert all(m in tool.MODULES for ms in tool.GROUPS.values() for m in ms)

    def mutant(outcome, module):
        return tool.Mutant(module, "core/NumberReplacer", 0, 1, "x = 1", "x = 2", outcome=outcome)

    results = [mutant("killed", "gpuconf/impact/model.py"), mutant("survived", "gpuconf/impact/chart.py"),
               mutant("killed", "gpuconf/plan.py")]
    text, score = tool.summary(results, {"impact": ["gpuconf/impact/model.py", "gpuconf/impact/chart.py"],
                                         "plan": ["gpuconf/plan.py"]})
    rows = [row.split() for row in text.splitlines()[1:5]]
    assert rows == [["gpuconf/impact/model.py", "1", "1", "0", "0", "100.0", "%"],
                    ["gpuconf/impact/chart.py", "1", "0", "1", "0", "0.0", "%"],
                    ["group", "impact", "2", "1", "1", "0", "50.0", "%"],
                    ["gpuconf/plan.py", "1", "1", "0", "0", "100.0", "%"]]
    assert score == pytest.approx(100 * 2 / 3)


def test_every_mutant_of_the_lines_named(tool):
    """--lines MODULE:LINE runs every mutant of a line (all operators), to check a survivor another tool reported."""
    class Site:
        def __init__(self, name, occurrence):
            self.operator_name, self.occurrence = name, occurrence

    sites = {((3, 4), (3, 9)): [Site("core/Y", 0), Site("core/X", 0)], ((3, 12), (3, 14)): [Site("core/Z", 0)],
             ((5, 0), (5, 3)): [Site("core/X", 1)]}
    assert [(m.operator_name, m.occurrence) for m in tool.at_lines(sites, {3})] == [
        ("core/X", 0), ("core/Y", 0), ("core/Z", 0)]
    assert tool.at_lines(sites, {4}) == []
    with pytest.raises(SystemExit):
        tool.main(["--lines", "gpuconf/not-a-module.py:3"])


def test_a_mutant_that_breaks_an_import_counts_as_killed_and_a_usage_error_does_not(tool):
    """pytest exits 4 when a conftest or test module cannot be imported (the mutant broke a module they load): the
    mutant is killed. Any other exit 4 is the tool's own mistake and stops the run."""
    assert tool._import_broken("ImportError while loading conftest '/t/tests/conftest.py'.")
    assert tool._import_broken("==== ERRORS ====\n____ ERROR collecting tests/test_impact.py ____")
    assert not tool._import_broken("ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --bogus")

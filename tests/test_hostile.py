"""Hostile input, round four (issue 29): what a pull request from a stranger can make gpuconf do in CI."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re

import pytest

import gpuconf


def _modules():
    for info in pkgutil.walk_packages(gpuconf.__path__, "gpuconf."):
        yield importlib.import_module(info.name)


def test_no_pattern_of_gpuconf_is_anchored_with_a_dollar_that_matches_before_a_final_newline():
    """Item 2: `$` matches before a final "\\n", so `re.match(r"^name$", "l40s\\n")` passes a pool name that breaks
    every object it names. Names, labels and taints are checked with full matches (re.fullmatch or \\Z)."""
    anchored = sorted(f"{module.__name__}.{name}" for module in _modules() for name, value in vars(module).items()
                      if isinstance(value, re.Pattern) and re.search(r"(?<!\\)\$\)*\Z", value.pattern))
    # The one left is no check: the YAML emitter's scanner of its own lines (kept ends), where `$` is the line's end.
    assert anchored == ["gpuconf.emit._KEY_LINE"]


# --- item 1: Markdown of a pull-request comment ------------------------------------------------------------------

HOSTILE_MD = "/opt` <img src=x onerror=alert(1)> [click me](https://evil.example) @octocat </details> <!--"
#: The HTML tags gpuconf's own Markdown writes: the folded diff's <details> and the cells' line breaks.
OWN_HTML = {"<details>", "<summary>", "<code>", "</code>", "</summary>", "</details>", "<br>"}


def _markdown_tokens(text: str) -> list:
    from markdown_it import MarkdownIt

    tokens = []
    for token in MarkdownIt("commonmark").enable(["table"]).parse(text):
        tokens.append(token)
        tokens += token.children or []
    return tokens


def _html_and_links(tokens: list) -> list[str]:
    """Every HTML tag or comment a reader's browser would see and every link, but gpuconf's own tags."""
    found = []
    for token in tokens:
        if token.type in ("html_inline", "html_block"):
            found += [tag for tag in re.findall(r"<[^>]*>?", token.content) if tag not in OWN_HTML]
        if token.type in ("link_open", "image"):
            found.append(token.type)
    return found


def test_a_hostile_override_value_stays_inside_its_code_span_in_diff_markdown(run, tmp_path, monkeypatch):
    """Item 1: the value closed the inline code with its backtick, and its unclosed `<!--` hid every later table of
    the comment the CI example posts. It shows as typed now, in a code span whose fence is longer than its backtick,
    and the unified diff's fence is longer than any backtick run of the files."""
    from conftest import ROOT

    monkeypatch.chdir(tmp_path)
    assert run("render", str(ROOT / "examples" / "single-pool.yaml"), "-o", "out").exit_code == 0
    intent = tmp_path / "intent.yaml"
    intent.write_text((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8") +
                      "  overrides:\n    - path: toolkit.installDir\n"
                      f"      value: {json.dumps(HOSTILE_MD)}\n"
                      "      why: the hosts keep the toolkit under /opt for the audit trail\n", encoding="utf-8")
    result = run("diff", str(intent), "--against", "out", "--format", "markdown")
    assert result.exit_code == 1, result.output  # the folder differs
    tokens = _markdown_tokens(result.stdout)
    assert _html_and_links(tokens) == []
    codes = [t.content for t in tokens if t.type == "code_inline"]
    assert f'toolkit: (absent) -> {{"installDir": {json.dumps(HOSTILE_MD)}}}' in codes
    [fence] = [t for t in tokens if t.type == "fence"]
    assert fence.info == "diff" and f"+  installDir: {HOSTILE_MD}\n" in fence.content
    assert result.stdout.rstrip("\n").endswith("</details>")


def test_the_impact_tables_cells_show_pod_names_and_messages_as_typed():
    """Item 1: the impact table's cells only had their pipes escaped; a pod name read from --pods or the cluster
    (or any text of a cell) with Markdown or HTML in it shows as typed now (md_text)."""
    from gpuconf.impact import impacts_markdown
    from gpuconf.impact.model import Impact, ImpactPlan

    impact = Impact("driver-upgrade", "disruptive", ["l40s"], HOSTILE_MD, "drain | then sync", nodes=1, pods=1,
                    node_names=["gpu-1"], pod_names=[f"ml/{HOSTILE_MD}"])
    text = impacts_markdown(ImpactPlan([impact]), "out/lab")
    tokens = _markdown_tokens(text)
    assert _html_and_links(tokens) == []
    row = [t for t in tokens if t.type == "inline"][-6:]
    shown = ["".join(c.content for c in cell.children) for cell in row]
    assert shown == ["🔴 disruptive", "driver-upgrade", "l40s", f"1 (1 GPU pods): gpu-1; pods ml/{HOSTILE_MD}",
                     HOSTILE_MD, "drain | then sync"]


# --- item 10: workflow commands in a CI log ----------------------------------------------------------------------

WORKFLOW_COMMAND = "1\n::error title=gpuconf::all checks passed, safe to merge"


def _log_commands(text: str) -> list[str]:
    """The lines a CI log reads as commands: GitHub Actions' `::name ...::` and Azure Pipelines' `##[...]`,
    `##vso[...]` after leading blanks."""
    return [line for line in text.splitlines() if line.lstrip().startswith(("::", "##"))]


def test_a_value_printed_on_stderr_cannot_start_a_workflow_command(run, tmp_path):
    """Item 10: import printed the value raw on stderr, and its second line became an annotation of the run."""
    values = tmp_path / "values.yaml"
    values.write_text(f"driver:\n  version: {json.dumps(WORKFLOW_COMMAND)}\n", encoding="utf-8")
    result = run("import", "--values", str(values), "-o", str(tmp_path / "intent.yaml"))
    assert result.exit_code == 0, result.output
    assert _log_commands(result.stderr) == []
    [line] = [line for line in result.stderr.splitlines() if line.startswith("  changed driver.version")]
    assert line == (f"  changed driver.version ({values}:2): Helm read the unquoted 1\\n::error title=gpuconf::all "
                    "checks passed, safe to merge as a number; carried over from "
                    f"{values}:2 as the string \"1\\n::error title=gpuconf::all checks passed, safe to merge\" "
                    "(the same image tag text)")


def test_a_finding_whose_file_name_is_a_workflow_command_is_escaped():
    """Item 10: a finding's line starts with its file's name, which a fleet's overlay list can give."""
    from gpuconf.findings import Finding

    finding = Finding("::error title=x::ok.yaml", 3, 5, "error", "GC301", "metadata.name", "'a\\n' is bad", "fix\nit")
    assert finding.text() == "\\x3a:error title=x::ok.yaml:3:5: error GC301 metadata.name: 'a\\n' is bad (hint: fix\\nit)"
    assert _log_commands(finding.text()) == []


# --- item 7: huge numbers -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("number, shown", [
    ("9" * 4400, "99999999999999999999...99999999 (4400 characters)"),
    ("0x" + "f" * 3700, "0xffffffffffffffffff...ffffffff (3702 characters)"),
    ("1" + "0" * 309, "10000000000000000000...00000000 (310 characters)"),
])
def test_an_integer_beyond_int64_in_a_values_file_is_an_input_error_not_a_crash(run, tmp_path, number, shown):
    """Item 7: Python converts no more than 4,300 digits to or from text, so import exited 3 (hex: when it printed
    the value); Helm reads an integer beyond float64 as a string. Exit 2, the number's position, nothing written."""
    values = tmp_path / "values.yaml"
    values.write_text(f"driver:\n  version: {number}\n", encoding="utf-8")
    result = run("import", "--values", str(values), "-o", str(tmp_path / "intent.yaml"))
    assert (result.exit_code, result.stderr) == (2, f"gpuconf: {values}:2:12: {shown} is an integer beyond float64's "
                                                    "range: Helm reads it as a string, and no Kubernetes field holds "
                                                    "it\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["values.yaml"]


def test_an_integer_helm_reads_as_a_float_is_still_imported(run, tmp_path):
    """Item 7: 2**64 + 1 is past int64 but a float64 to Helm: the bound is float64's range, not int64's."""
    values = tmp_path / "values.yaml"
    values.write_text("driver:\n  version: 18446744073709551617\n", encoding="utf-8")
    assert run("import", "--values", str(values), "-o", str(tmp_path / "intent.yaml")).exit_code == 0


def test_a_set_value_of_4400_digits_is_a_string_as_helm_has_it(run, tmp_path):
    """Item 7: --set's number past int64 is ParseInt's range error in Helm's strvals, so the string stays."""
    values = tmp_path / "values.yaml"
    values.write_text("driver: {}\n", encoding="utf-8")
    result = run("import", "--values", str(values), "--set", "driver.version=" + "9" * 4400, "--report",
                 str(tmp_path / "report.json"), "-o", str(tmp_path / "intent.yaml"))
    assert result.exit_code == 0, result.stderr
    [setting] = [s for s in json.loads((tmp_path / "report.json").read_text())["settings"]
                 if s["path"] == "driver.version"]
    assert setting["value"] == "9" * 4400


# --- item 5: no template cache ------------------------------------------------------------------------------------


def test_the_committed_compiled_templates_are_what_the_tool_generates():
    """Item 5: REPORT.md's templates are compiled into the package at build time (tools/compile_templates.py, `make
    templates`); the committed modules are what the templates compile to with the installed (pinned) jinja2."""
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("compile_templates", ROOT / "tools" / "compile_templates.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.committed() == tool.compiled()
    assert sorted(tool.compiled()) == sorted(p.name for p in (ROOT / "gpuconf" / "output" / "compiled_templates")
                                             .glob("*.py"))


def test_a_planted_template_cache_is_never_loaded_and_no_template_is_compiled(tmp_path, monkeypatch):
    """Item 5: jinja2's bytecode cache in $XDG_CACHE_HOME/gpuconf/<version>/jinja unpickled what another user had
    planted there, and ran it during render. No cache is read or written now, and nothing is compiled at run time."""
    import pickle
    import subprocess
    import sys

    import jinja2
    from jinja2.bccache import FileSystemBytecodeCache, bc_magic

    from conftest import ROOT
    from gpuconf import __version__
    from gpuconf.output import report
    from gpuconf.pipeline import render_path

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    cache = tmp_path / "xdg" / "gpuconf" / __version__ / "jinja"
    cache.mkdir(parents=True)
    keys = FileSystemBytecodeCache(str(cache))
    for name in ("overrides.md.j2", "report.md.j2"):  # main read these: the key of a template's name and source
        source = str(ROOT / "gpuconf" / "output" / "templates" / name)
        (cache / (keys.pattern % keys.get_cache_key(name, source))).write_bytes(bc_magic + pickle.dumps(Payload()))
    planted = sorted(p.name for p in cache.iterdir())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    done = subprocess.run([sys.executable, "-m", "gpuconf", "render", str(ROOT / "examples" / "heterogeneous.yaml"),
                           "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert sorted(p.name for p in cache.iterdir()) == planted  # nothing written there either

    def compiling(*args, **kwargs):
        raise AssertionError("a template was compiled at run time")

    report._environment.cache_clear()
    monkeypatch.setattr(jinja2.Environment, "compile", compiling)
    try:
        monkeypatch.chdir(ROOT)
        files = render_path("examples/heterogeneous.yaml", "out").tree.files
    finally:
        report._environment.cache_clear()
    golden = ROOT / "tests" / "golden" / "heterogeneous" / "ml-prod" / "REPORT.md"
    assert files["REPORT.md"] == golden.read_text(encoding="utf-8")

"""Free text never becomes settings: whatever a `why`, a label, a file name, `-o` or a fleet's file names hold, the
rendered output parses to the same data; only comment text differs. Every comment and header line stays one line."""

from __future__ import annotations

import json
import re
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from conftest import ROOT

AIRGAPPED = ROOT / "examples" / "airgapped.yaml"  # overrides, a registry, Flux: every kind of comment and header
YAML12 = YAML(typ="safe", pure=True)
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

#: What a hostile or careless text holds: line breaks of every kind (YAML 1.1 also breaks at U+0085, U+2028 and
#: U+2029), document markers, comment signs, quotes, YAML syntax, a BOM, a byte that is not UTF-8 (file names only).
TOKENS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\t", "\x0b", "\x0c", "---", "...", "#", "# ", "'", '"',
          ": ", "- ", "{", "}", "[", "]", "&a", "*a", "!!str", "\\", "\ufeff", "\x00", "\x1b[31m", "-->", "<!--",
          "relabelings:\n    - action: drop", "\nkey: value", "ünïcødé", "\U0001f600"]


def _free_text(extra: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    characters = st.characters(exclude_categories=("Cs",))
    return st.lists(st.one_of(st.sampled_from(TOKENS + list(extra)), characters), min_size=1, max_size=12).map(
        "".join)


def _quoted(text: str) -> str:
    """text as a YAML double-quoted scalar that every YAML reader decodes to the same string."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable() and ch != "\ufeff":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _parsed(files: dict[str, str]) -> dict[str, object]:
    """What the consumers read: every YAML file as YAML 1.1 (Helm, kubectl, PyYAML) and YAML 1.2 read it, the
    lines of env files that are not comments, report.json's shape; and every header and comment one line."""
    out: dict[str, object] = {}
    for path, text in sorted(files.items()):
        if path.endswith(".yaml"):
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            out[path] = (list(yaml.load_all(text, Loader=loader)), list(YAML12.load_all(text)))
            for line in text.split("\n"):
                assert line.isprintable(), (path, line)  # no character any reader takes as a line break
        elif path.endswith(".env"):
            out[path] = [line for line in text.split("\n") if not line.startswith("#")]
        elif path == "report.json":
            out[path] = _shape(json.loads(text))
        elif path == "REPORT.md":
            head = text.split("\n")[:2]
            assert all(line.startswith("<!-- ") and line.endswith(" -->") and line.count("-->") == 1 for line in head)
            assert all(line.isprintable() for line in head), head
    return out


def _shape(value: object) -> object:
    """JSON with every string replaced: json.dumps escapes whatever a string holds, so only the shape can differ."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return "<text>" if isinstance(value, str) else value


def _render(intent: str, out: str = "out"):
    from gpuconf.pipeline import render_any

    rendered = render_any(intent, out)
    assert rendered.ok, [f.text() for f in rendered.findings]
    return {tree.name: tree.files for tree in rendered.trees}


@pytest.fixture(scope="module")
def folder():
    """A working directory with the airgapped example as x.yaml (module-wide: hypothesis calls the test often)."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(AIRGAPPED, Path(tmp) / "x.yaml")
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(cwd)


#: A small intent for the tests of paths: headers, comments with a file's name, a Flux wrapper's notes.
SMALL = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8").replace(
    "    chartVersion: v26.3.3\n", "    chartVersion: v26.3.3\n    registry: mirror.example/nvidia\n").replace(
    "  pools:\n", "  delivery: {tool: flux, path: out}\n  pools:\n")


@pytest.fixture(scope="module")
def baseline(folder):
    (folder / "small.yaml").write_text(SMALL, encoding="utf-8")
    return {name: _parsed(files) for name, files in _render("x.yaml").items()}


@pytest.fixture(scope="module")
def small(baseline, folder):
    return {name: _parsed(files) for name, files in _render("small.yaml").items()}


def _with(folder: Path, old: str, new: str, name: str = "v.yaml") -> str:
    text = (folder / "x.yaml").read_text(encoding="utf-8")
    assert old in text
    (folder / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return name


WHY = "why: The hardened node image mounts /usr/local read-only, so the toolkit installs under /opt."


def test_a_newline_in_a_reason_does_not_add_settings(folder, baseline):
    # The reported injection: a reason whose second line reads as YAML under the override's key.
    intent = _with(folder, WHY, 'why: "The hardened node image mounts /usr/local read-only.\\n    relabelings:\\n'
                                '    - action: drop"')
    rendered = _render(intent)
    values = rendered["secure-enclave"]["values.yaml"]
    line = next(n for n, text in enumerate((folder / "x.yaml").read_text(encoding="utf-8").splitlines(), 1)
                if text.strip() == WHY) - 2  # the override's own line, two above its reason
    assert f"  # via spec.overrides[1] (line {line}): The hardened node image mounts /usr/local read-only.\\n    " \
           "relabelings:\\n    - action: drop\n" in values
    assert {n: _parsed(f) for n, f in rendered.items()} == baseline


@SETTINGS
@given(text=_free_text())
def test_a_reason_never_changes_the_parsed_output(folder, baseline, text):
    intent = _with(folder, WHY, f"why: {_quoted('The image mounts /usr/local read-only, so: ' + text)}")
    from gpuconf.intent.validate import validate_path

    assume(validate_path(intent).ok)  # control characters are refused when the intent is read (GC107)
    note(repr(text))
    assert {n: _parsed(f) for n, f in _render(intent).items()} == baseline


LABELS = "  name: secure-enclave\n  labels: {{site: {}}}\n"


@pytest.fixture(scope="module")
def labelled(folder):
    """The parsed output with a plain label (the label line shifts the lines report.json names)."""
    intent = _with(folder, "  name: secure-enclave\n", LABELS.format("plain"), "labelled.yaml")
    return {name: _parsed(files) for name, files in _render(intent).items()}


@SETTINGS
@given(text=_free_text())
def test_a_label_of_the_intent_never_changes_the_parsed_output(folder, labelled, text):
    intent = _with(folder, "  name: secure-enclave\n", LABELS.format(_quoted(text)))
    from gpuconf.intent.validate import validate_path

    assume(validate_path(intent).ok)
    assert {n: _parsed(f) for n, f in _render(intent).items()} == labelled


_PATH_TOKENS = ("\udcff", "\udc85")  # bytes of a file name that is not UTF-8


def _file_name(text: str) -> str:
    """text as one file name: no '/', no NUL, at most 200 bytes."""
    name = text.replace("/", "_").replace("\0", "_")
    while len(os.fsencode(name)) > 200:
        name = name[:-1]
    return name if name not in ("", ".", "..") else f"_{name}"


@SETTINGS
@given(text=_free_text(_PATH_TOKENS))
def test_the_intent_file_name_never_changes_the_parsed_output(folder, small, text):
    name = _file_name(text) + ".yaml"
    note(repr(name))
    shutil.copy(folder / "small.yaml", folder / name)
    try:
        rendered = _render(name)
    finally:
        os.unlink(folder / name)
    assert {n: _parsed(f) for n, f in rendered.items()} == small


@SETTINGS
@given(text=_free_text(_PATH_TOKENS))
def test_the_output_folder_name_never_changes_the_parsed_output(folder, small, text):
    out = _file_name(text)
    note(repr(out))
    assert {n: _parsed(f) for n, f in _render("small.yaml", out).items()} == small


@pytest.fixture(scope="module")
def fleet_folder():
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "examples" / "fleet", Path(tmp) / "fleet")
        cwd = os.getcwd()
        os.chdir(Path(tmp) / "fleet")
        try:
            yield Path(tmp) / "fleet", {n: _parsed(f) for n, f in _render("fleet.yaml").items()}
        finally:
            os.chdir(cwd)


@settings(SETTINGS, max_examples=6)
@given(text=_free_text(_PATH_TOKENS))
def test_a_fleets_file_names_never_change_the_parsed_output(fleet_folder, text):
    fleet_folder, baseline = fleet_folder
    name = _file_name(text) + ".yaml"
    note(repr(name))
    fleet = (fleet_folder / "fleet.yaml").read_text(encoding="utf-8")
    shutil.copy(fleet_folder / "overlays" / "eu-prod.yaml", fleet_folder / "overlays" / name)
    (fleet_folder / "weird.yaml").write_text(
        fleet.replace("overlay: overlays/eu-prod.yaml", "overlay: " + _quoted("overlays/" + name)), encoding="utf-8")
    from gpuconf.intent.inputs import read_input

    try:
        assume(all(v.ok for v in read_input("weird.yaml").validations()))  # a name with control characters cannot be written
        rendered = _render("weird.yaml")
    finally:
        os.unlink(fleet_folder / "overlays" / name)
    assert {n: _parsed(f) for n, f in rendered.items()} == baseline


def test_the_import_drafts_header_names_the_nodelist_on_one_line(tmp_path, monkeypatch):
    from gpuconf.cluster.importer import draft_intent
    from gpuconf.cluster.nodesource import read_nodes_file

    nodes = ROOT / "tests" / "fixtures" / "nodes" / "single-pool.json"
    name = tmp_path / "nodes\nspec:\n  pools: []\n\u2028x.json"
    shutil.copy(nodes, name)
    draft = draft_intent(read_nodes_file(str(name)), str(name), "lab")
    plain = draft_intent(read_nodes_file(str(nodes)), str(nodes), "lab")
    assert yaml.safe_load(draft.text) == yaml.safe_load(plain.text)
    assert YAML12.load(draft.text) == YAML12.load(plain.text)
    [line] = [line for line in draft.text.split("\n") if line.startswith("# Drafted by")]
    assert line.endswith("nodes\\nspec:\\n  pools: []\\n\\u2028x.json.")


def test_a_ten_thousand_character_label_is_refused_with_a_short_message(folder):
    from gpuconf.intent.validate import validate_path

    intent = _with(folder, "    prometheusSelector:\n", "    prometheusSelector:\n      huge: " + "x" * 10000 + "\n")
    findings = validate_path(folder / intent).findings
    assert [f.code for f in findings] == ["GC320"], [f.text() for f in findings]
    [finding] = findings
    assert finding.message == f"label value {'x' * 57 + '...'!r} is not a valid label value"


# REPORT.md (issue 21, item 13): free text shows as typed, whatever Markdown or HTML it holds. A CommonMark parser
# with GitHub's tables and strikethrough reads the rendered Markdown back.
MARKUP = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))",
          "<javascript:alert(1)>", "![i](javascript:alert(1))", "*em*", "_em_", "**b**", "`code`", "``", "~~s~~",
          "$x$", "&amp;", "&lt;", "&#x3c;", "\\*", "|", "\\|", "<br>", "[r]: /x", "http://x.example", " ", "  "]
#: The line breaks md_text turns into <br>: str.splitlines()'s (written out here, not taken from the code).
BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _markdown():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _shown(inline) -> str:
    """What a reader sees of an inline token: its text, each <br> a line break; any other markup fails."""
    out = []
    for child in inline.children:
        assert child.type == "text" or (child.type == "html_inline" and child.content == "<br>"), child
        out.append("\n" if child.type == "html_inline" else child.content)
    return "".join(out)


def _as_typed(text: str) -> str:
    """text as md_text must show it: each kind of line break a new line, what is not printable an escape."""
    from gpuconf.emit import single_line

    return "\n".join(single_line(line) for line in BREAKS.split(text))


@settings(max_examples=300, deadline=None)
@given(text=_free_text(tuple(MARKUP)))
def test_free_text_shows_as_typed_in_a_table_cell_and_a_list_item(text):
    from gpuconf.output.report import md_text

    escaped = md_text(text)
    assert escaped.isprintable(), escaped  # one line of the file, whatever line breaks the text had
    cell = [t for t in _markdown().parse(f"| a | b |\n|---|---|\n| {escaped} | z |\n") if t.type == "inline"]
    assert [_shown(t) for t in cell] == ["a", "b", _as_typed(text).strip(" "), "z"]
    item = [t for t in _markdown().parse(f"- x: {escaped}\n") if t.type == "inline"]
    assert [_shown(t) for t in item] == [("x: " + _as_typed(text)).rstrip(" ")]


@settings(max_examples=300, deadline=None)
@given(text=_free_text(tuple(MARKUP)))
def test_inline_code_shows_its_text_on_one_line_in_a_table_cell(text):
    from gpuconf.emit import single_line
    from gpuconf.output.report import md_code

    code = md_code(text)
    assert code.isprintable(), code
    cell = [t for t in _markdown().parse(f"| a |\n|---|\n| {code} |\n") if t.type == "inline"][1]
    assert [(c.type, c.content) for c in cell.children] == [("code_inline", single_line(text))]


def test_a_reason_with_html_links_and_line_separators_shows_as_typed_in_report_md(folder, monkeypatch):
    monkeypatch.chdir(folder)  # another module-wide fixture may have moved elsewhere
    why = ("Mirror <script>alert(1)</script> [docs](javascript:alert(1)) <javascript:alert(2)> *now*\u2028"
           "second line\u2029third | fourth")
    intent = _with(folder, WHY, f"why: {_quoted(why)}")
    report = _render(intent)["secure-enclave"]["REPORT.md"]
    row = next(line for line in report.split("\n") if "Mirror" in line)
    cells = [t for t in _markdown().parse(f"| {'|'.join(['x'] * 5)} |\n|{'---|' * 5}\n{row}\n") if t.type == "inline"]
    assert _shown(cells[5 + 3]) == why.replace("\u2028", "\n").replace("\u2029", "\n")
    assert "<script>" not in report and "\u2028" not in report and "\u2029" not in report

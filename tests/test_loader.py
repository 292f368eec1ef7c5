"""Loader refusals that golden cases cannot carry, and the positions it reports."""

from __future__ import annotations

import pytest

from gpuconf.intent.loader import MAX_BYTES, LoadError, load_bytes, load_file, load_text, locate


def _refusal(raw: bytes) -> str:
    with pytest.raises(LoadError) as info:
        load_bytes(raw, "f.yaml")
    return info.value.finding.text()


def test_alias_bomb_is_refused_before_expansion():
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)]
    assert _refusal("\n".join(lines).encode()) == (
        "f.yaml:1:5: error GC103: YAML anchors are not allowed (&a0) (hint: write the value out in full where it is needed)")


def test_deep_nesting_is_refused_without_recursion_error():
    assert "GC105" in _refusal(b"a: " + b"[" * 5000 + b"]" * 5000)


def test_size_limit_is_checked_before_parsing():
    assert "GC106" in _refusal(b"#" * (MAX_BYTES + 1))
    load_bytes(b"a: 1\n" + b"#" * (MAX_BYTES - 10) + b"\n", "f.yaml")  # just under the limit loads


def test_byte_order_mark_is_accepted():
    assert load_bytes("\ufeffa: 1\n".encode(), "f.yaml").data == {"a": 1}


def test_unreadable_path_is_a_finding(tmp_path):
    with pytest.raises(LoadError) as info:
        load_file(tmp_path, "dir.yaml")
    assert info.value.finding.code == "GC110"


def test_locate_points_at_values_keys_and_parents():
    doc = load_text("a:\n  b: [1, {c: 2}]\n  d: x\n", "f.yaml")
    assert locate(doc.data, ("a", "d")) == (3, 6)
    assert locate(doc.data, ("a", "d"), point_at_key=True) == (3, 3)
    assert locate(doc.data, ("a", "b", 1, "c")) == (2, 14)
    assert locate(doc.data, ("a", "missing", "deeper")) == (2, 3)


# --- every input is read once, and never more than the limit ---------------------------------------------------------


def _gpuconf(*args: str, **kwargs):
    """gpuconf as its own process, with a deadline: before the fix a FIFO made it wait for ever."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "gpuconf", *args], capture_output=True, text=True, timeout=120,
                          **kwargs)


def test_a_pipe_is_read_once(tmp_path):
    import os

    from conftest import ROOT

    intent = (ROOT / "examples" / "single-pool.yaml").read_bytes()
    read, write = os.pipe()
    os.write(write, intent)  # a small intent fits into the pipe's buffer
    os.close(write)
    try:
        done = _gpuconf("validate", f"/dev/fd/{read}", pass_fds=(read,))  # what `validate <(cat x.yaml)` passes
    finally:
        os.close(read)
    assert (done.returncode, done.stderr) == (0, f"/dev/fd/{read}: valid\n")


def test_a_fifo_is_read_once(tmp_path):
    import os
    import threading

    from conftest import ROOT

    fifo = tmp_path / "intent.fifo"
    os.mkfifo(fifo)

    def writer() -> None:  # opening a FIFO waits for its reader; a second open would wait for ever
        with open(fifo, "wb") as fh:
            fh.write((ROOT / "examples" / "fleet" / "base.yaml").read_bytes())

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    done = _gpuconf("validate", str(fifo))
    thread.join(timeout=60)
    assert done.returncode in (0, 1) and "file is empty" not in done.stdout, done.stdout
    assert f"{fifo}: " in done.stderr


def test_an_endless_input_is_refused_after_the_limit():
    done = _gpuconf("validate", "/dev/zero")
    assert (done.returncode, done.stdout) == (1, f"/dev/zero:1:1: error GC106: input is larger than {MAX_BYTES} "
                                                 f"bytes; intent files are limited to {MAX_BYTES} bytes (hint: split "
                                                 "the cluster into several intents or a fleet)\n")
    with open("/dev/zero", "rb") as zero:
        done = _gpuconf("validate", "-", stdin=zero)
    assert done.returncode == 1 and "GC106: input is larger than" in done.stdout


def test_a_large_regular_file_is_refused_before_a_byte_is_read(tmp_path, monkeypatch):
    import os

    import gpuconf.intent.loader as loader

    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(10 * 1024 ** 3)  # sparse: 10 GiB that take no space
    reads = []
    monkeypatch.setattr(os, "read", lambda *a: reads.append(a) or b"")
    with pytest.raises(LoadError) as info:
        loader.load_file(big)
    assert reads == [] and f"file is {10 * 1024 ** 3} bytes" in info.value.finding.message


def test_the_limit_is_one_byte_past_what_is_read(tmp_path):
    from gpuconf.intent.loader import read_limited

    data = iter([b"a" * 100, b"b" * 100, b"c" * 100])
    asked = []

    def read(size: int) -> bytes:
        asked.append(size)
        return next(data, b"")[:size]

    assert read_limited(read, limit=150) == b"a" * 100 + b"b" * 51 and asked == [151, 51]


# --- numbers YAML readers disagree about -----------------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("012", "012 has a leading zero: YAML 1.1 readers such as Helm's read the octal number 10, YAML 1.2 readers the "
            "decimal 12"),
    ("0x0C", "0x0C is a number written in hexadecimal (0x)"),
    ("0b1100", "0b1100 is a number written in binary (0b, a string to YAML 1.2's core schema)"),
    ("0o14", "0o14 is a number written in octal (0o, a string to YAML 1.1 readers such as Helm's)"),
    ("1_2", "1_2 has underscores"),
    ("-1_000.5", "-1_000.5 has underscores"),
    ("09", "09 has a leading zero: YAML 1.1 readers such as Helm's read the text '09', YAML 1.2 readers the number 9"),
])
def test_numbers_in_forms_yaml_readers_disagree_about_are_refused(text, message):
    refusal = _refusal(f"a:\n  b: {text}\n".encode())
    assert refusal.startswith(f"f.yaml:2:6: error GC112: {message}")
    assert "or quote it if it is text" in refusal
    assert "GC112" in _refusal(f"{text}: 1\n".encode())  # as a key too


@pytest.mark.parametrize("text", ["0", "12", "-3", "+4", "1.5", "0.5", "012.5", "1e3", "'012'", '"0x0C"', "1:20",
                                  "v012", "0x", "x_1"])
def test_plain_numbers_and_quoted_text_load(text):
    load_bytes(f"a: {text}\n".encode(), "f.yaml")


# --- bounded work ------------------------------------------------------------------------------------------------------


def test_a_mapping_with_too_many_keys_is_refused_while_reading():
    from gpuconf.intent.loader import MAX_ENTRIES

    keys = ", ".join(f"k{i}: 1" for i in range(MAX_ENTRIES + 1))
    text = f"a: {{{keys}}}\n"
    column = text.index(f"k{MAX_ENTRIES}: ") + len(f"k{MAX_ENTRIES}: ") + 1  # at the entry past the limit
    assert _refusal(text.encode()).startswith(f"f.yaml:1:{column}: error GC106: mapping has more than {MAX_ENTRIES} "
                                              "entries")


def test_the_teams_together_own_at_most_a_thousand_namespaces():
    from conftest import ROOT
    from gpuconf.intent.validate import validate_document

    base = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8")
    teams = "".join(f"    - {{name: t{t}, namespaces: [{', '.join(f't{t}-n{n}' for n in range(100))}]}}\n"
                    for t in range(11))
    result = validate_document(load_text(base + "  teams:\n" + teams, "f.yaml"))
    assert [(f.code, f.path, f.message) for f in result.findings] == [
        ("GC205", "spec.teams", "the teams own 1100 namespaces together; an intent holds at most 1000")]


def test_past_a_hundred_findings_one_finding_counts_the_rest():
    from gpuconf.intent.validate import MAX_FINDINGS, check_document, validate_document

    text = "apiVersion: gpuconf.dev/v1alpha1\nkind: ClusterIntent\nmetadata: {name: x}\nspec:\n" \
           "  cluster: {kubernetesVersion: \"1.33\"}\n  operator: {chartVersion: v26.7.0}\n  pools:\n" + \
           "".join(f"    - {{name: p{i}, gpu: L4, gpusPerNode: 1, nodes: 1, match: {{pciDevice: true}}, "
                   f"sharing: nothing{i}}}\n" for i in range(150))
    doc = load_text(text, "f.yaml")
    every = check_document(doc).findings
    findings = validate_document(doc).findings
    assert len(every) > MAX_FINDINGS + 1 and findings[:MAX_FINDINGS] == every[:MAX_FINDINGS]
    last = findings[-1]
    first_hidden = every[MAX_FINDINGS]
    assert (last.code, last.severity, last.line, last.column) == ("GC113", "error", first_hidden.line,
                                                                   first_hidden.column)
    assert last.message.startswith(f"{len(every) - MAX_FINDINGS} more findings from here on are not shown")


def test_warnings_past_the_limit_are_counted_as_warnings():
    from gpuconf.findings import Finding
    from gpuconf.intent.validate import MAX_FINDINGS, bounded

    findings = [Finding("f", i, 1, "error" if i < MAX_FINDINGS else "warning", "GC312", "", "x")
                for i in range(MAX_FINDINGS + 3)]
    [*shown, summary] = bounded(findings)
    assert shown == findings[:MAX_FINDINGS]
    assert (summary.severity, summary.message) == (
        "warning", f"3 more findings from here on are not shown (3 warnings); gpuconf reports at most {MAX_FINDINGS} "
                   "per intent")

"""Hostile input, round four (issue 29): what a pull request from a stranger can make gpuconf do in CI."""

from __future__ import annotations

import importlib
import json
import os
import sys
import pkgutil
import re

import pytest

import gpuconf


def _modules():
    for info in pkgutil.walk_packages(gpuconf.__path__, "gpuconf."):
        yield importlib.import_module(info.name)


def _text(pattern: str | bytes) -> str:
    return pattern if isinstance(pattern, str) else pattern.decode("latin-1")  # the node scanner's are bytes


def test_no_pattern_of_gpuconf_is_anchored_with_a_dollar_that_matches_before_a_final_newline():
    """Item 2: `$` matches before a final "\\n", so `re.match(r"^name$", "l40s\\n")` passes a pool name that breaks
    every object it names. Names, labels and taints are checked with full matches (re.fullmatch or \\Z)."""
    anchored = sorted(f"{module.__name__}.{name}" for module in _modules() for name, value in vars(module).items()
                      if isinstance(value, re.Pattern) and re.search(r"(?<!\\)\$\)*\Z", _text(value.pattern)))
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


def test_the_impact_plans_text_keeps_each_value_on_its_line():
    """Item 10: the impact plan's text (stdout of diff --against in a CI log) printed messages and pod names raw."""
    from gpuconf.impact import impacts_text
    from gpuconf.impact.model import Impact, ImpactPlan

    impact = Impact("driver-upgrade", "disruptive", ["l40s"], WORKFLOW_COMMAND, "drain first", nodes=1, pods=1,
                    node_names=["gpu-1"], pod_names=[f"ml/{WORKFLOW_COMMAND}"])
    text = impacts_text(ImpactPlan([impact]), "out/lab")
    assert _log_commands(text) == []
    assert "    pods: ml/1\\n::error title=gpuconf::all checks passed, safe to merge\n" in text


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


# --- items 3 and 4: what --kubeconfig runs and leaves --------------------------------------------------------------


def _port_nothing_listens_on() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exec_kubeconfig(tmp_path, marker, user: dict | None = None) -> str:
    """A kubeconfig whose user's exec plugin writes `marker` (then fails), for a server nothing answers."""
    import sys

    import yaml

    script = f"open({str(marker)!r}, 'w').close(); raise SystemExit(1)"
    user = user or {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                             "args": ["-c", script]}}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
              "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{_port_nothing_listens_on()}"}}],
              "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
              "users": [{"name": "u", "user": user}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", [("audit", "examples/single-pool.yaml"), ("import",),
                                     ("diff", "examples/single-pool.yaml", "--against", "tests/golden/single-pool")])
def test_no_exec_plugins_refuses_a_kubeconfig_that_runs_a_program(run, tmp_path, monkeypatch, command):
    """Item 3: a kubeconfig is code: audit, import and diff run its exec credential plugin, as kubectl does (their
    --help says so); --no-exec-plugins refuses such a kubeconfig with exit 2 and runs nothing."""
    from conftest import ROOT

    monkeypatch.chdir(ROOT)
    marker = tmp_path / "ran"
    config = _exec_kubeconfig(tmp_path, marker)
    result = run(*command, "--kubeconfig", config, "--no-exec-plugins")
    assert (result.exit_code, result.stderr, marker.exists()) == (
        2, f"gpuconf: {config}: this kubeconfig runs the exec credential plugin {sys.executable!r} (user.exec) to "
           "get its credentials, and --no-exec-plugins refuses that\n", False)
    result = run(*command, "--kubeconfig", config)  # without the flag it runs, as kubectl would
    assert result.exit_code == 2 and marker.exists()
    help_text = " ".join(run(command[0], "--help").stdout.split())
    assert "this runs the credential plugin the kubeconfig's user names (user.exec, a gcp auth-provider)" in help_text


def test_no_exec_plugins_refuses_an_auth_providers_command(run, tmp_path, monkeypatch):
    from conftest import ROOT

    monkeypatch.chdir(ROOT)
    config = _exec_kubeconfig(tmp_path, tmp_path / "ran", {"auth-provider": {"name": "gcp", "config": {
        "cmd-path": "/bin/touch /tmp/x", "token-key": "{.access_token}"}}})
    result = run("audit", "examples/single-pool.yaml", "--kubeconfig", config, "--no-exec-plugins")
    assert (result.exit_code, result.stderr) == (2, f"gpuconf: {config}: this kubeconfig runs the auth-provider "
                                                    "command '/bin/touch /tmp/x' (user.auth-provider.config.cmd-path) "
                                                    "to get its credentials, and --no-exec-plugins refuses that\n")


def test_the_client_key_is_not_left_in_tmpdir_by_any_command(tmp_path):
    """Item 4: the Kubernetes client writes client-key-data to a file in $TMPDIR that only its atexit hook deletes,
    and `gpuconf` ends with os._exit: every --kubeconfig run left the private key behind."""
    import base64
    import subprocess
    import sys

    import yaml

    from conftest import ROOT

    key = b"-----BEGIN PRIVATE KEY-----\nnot a real key\n-----END PRIVATE KEY-----\n"
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
              "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{_port_nothing_listens_on()}",
                                                     "certificate-authority-data": base64.b64encode(b"ca").decode()}}],
              "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
              "users": [{"name": "u", "user": {"client-certificate-data": base64.b64encode(b"cert").decode(),
                                               "client-key-data": base64.b64encode(key).decode()}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    temp = tmp_path / "tmp"
    temp.mkdir()
    for command in (["audit", "examples/single-pool.yaml"], ["import"],
                    ["diff", "examples/single-pool.yaml", "--against", "tests/golden/single-pool"]):
        done = subprocess.run([sys.executable, "-m", "gpuconf", *command, "--kubeconfig", str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, env={**os.environ, "TMPDIR": str(temp)})
        assert done.returncode == 2, done.stderr
        assert list(temp.iterdir()) == [], command


def test_a_kubeconfigs_key_and_ca_from_memory_files_make_a_verified_tls_connection(tmp_path):
    """Item 4: the client key, certificate and CA the kubeconfig holds are read from anonymous memory files: a real
    TLS connection verified against the kubeconfig's CA (not insecure) lists the nodes, and $TMPDIR stays empty."""
    import base64
    import subprocess

    import yaml

    import shutil

    from conftest import ROOT
    from test_audit import FakeApiServer, _clean

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", key, "-out", cert], check=True,
                   capture_output=True)
    data = {name: base64.b64encode(open(path, "rb").read()).decode() for name, path in (("cert", cert), ("key", key))}
    temp = tmp_path / "tmp"
    temp.mkdir()
    with FakeApiServer(_clean("single-pool"), tls=(cert, key)) as api:
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
                  "clusters": [{"name": "c", "cluster": {"server": f"https://localhost:{api.port}",
                                                         "certificate-authority-data": data["cert"]}}],
                  "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
                  "users": [{"name": "u", "user": {"token": FakeApiServer.TOKEN,
                                                   "client-certificate-data": data["cert"],
                                                   "client-key-data": data["key"]}}]}
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "gpuconf", "audit", "examples/single-pool.yaml", "--kubeconfig",
                               str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "TMPDIR": str(temp)})
    assert done.returncode == 0, done.stderr
    assert list(temp.iterdir()) == []


# --- items 8 and 9: a hostile API server --------------------------------------------------------------------------


class _RawApiServer:
    """An API server that answers each path with fixed bytes, optionally one byte every `drip` seconds; the node
    list is single-pool's, at once."""

    def __init__(self, bodies: dict[str, bytes], drip: dict[str, float] | None = None) -> None:
        import threading
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from test_audit import _clean

        nodes = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {},
                            "items": _clean("single-pool")}).encode()
        bodies = {"/api/v1/nodes": nodes, **bodies}
        drip = drip or {}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server API
                path = self.path.split("?")[0]
                body = bodies.get(path)
                if body is None:
                    body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}'
                    self.send_response(404)
                else:
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if path in drip:
                        for i in range(len(body)):
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                            time.sleep(drip[path])
                    else:
                        self.wfile.write(body)
                except OSError:  # the client gave up
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "_RawApiServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_installation_reads_share_the_commands_one_deadline(tmp_path):
    """Item 9: an API server dripping one byte every 2 s kept `import --kubeconfig --request-timeout 5` running for
    134 s: the Secrets, ClusterPolicy and ConfigMap reads had a timeout per socket read only. They share the
    command's deadline with the node list now: the import stops at it (exit 2) and says which read was late."""
    import subprocess

    from conftest import ROOT
    from test_audit import _kubeconfig

    secrets = json.dumps({"kind": "SecretList", "apiVersion": "v1", "metadata": {}, "items": []}).encode()
    with _RawApiServer({"/api/v1/secrets": secrets}, drip={"/api/v1/secrets": 1.0}) as api:
        done = subprocess.run([sys.executable, "-m", "gpuconf", "import", "--kubeconfig",
                               _kubeconfig(tmp_path, api.port), "--request-timeout", "3", "-o",
                               str(tmp_path / "intent.yaml")], cwd=ROOT, capture_output=True, text=True, timeout=50)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        2, f"gpuconf: the cluster at http://127.0.0.1:{api.port} did not send Helm release Secrets (owner=helm) "
           "within 3 s (--request-timeout)")
    assert not (tmp_path / "intent.yaml").exists()


@pytest.mark.parametrize("path, body, problem", [
    ("/api/v1/secrets", json.dumps({"kind": "SecretList", "items": ["x"]}).encode(),
     "note: Helm release Secrets (owner=helm): 1 item(s) that are not objects (the first: item 0); not read"),
    ("/api/v1/secrets", json.dumps({"kind": "SecretList", "items": "x"}).encode(),
     "Helm release Secrets (owner=helm): the answer is not a list of objects"),
    ("/api/v1/secrets", b"[" * 100_000 + b"]" * 100_000,
     "reading Helm release Secrets (owner=helm) from http://127.0.0.1:{port} failed: JSON nested too deep"),
    ("/apis/nvidia.com/v1/clusterpolicies", json.dumps({"items": [{"metadata": ["x"], "spec": True}]}).encode(), None),
])
def test_a_hostile_api_servers_answers_are_an_input_error_or_a_note_not_exit_3(run, tmp_path, path, body, problem):
    """Item 8: a SecretList of strings, 100,000-deep JSON, a ClusterPolicy of the wrong shapes gave exit 3."""
    from test_audit import _kubeconfig

    with _RawApiServer({path: body}) as api:
        result = run("import", "--kubeconfig", _kubeconfig(tmp_path, api.port), "-o", str(tmp_path / "intent.yaml"))
    assert result.exit_code in (0, 1, 2) and "internal error" not in result.stderr, result.stderr
    if problem is not None:
        assert f"gpuconf: {problem.format(port=api.port)}" in result.stderr.splitlines()


def test_the_security_notes_name_only_tests_that_exist():
    """docs/explanation/security.md lists each guarantee with the tests that hold it: each must exist."""
    import ast

    from conftest import ROOT

    page = (ROOT / "docs" / "explanation" / "security.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(test_[a-z_]+\.py)::(test_[a-z0-9_]+)(?:\[[^\]]*\])?`", page))
    assert len(named) >= 20
    missing = []
    for file, name in sorted(named):
        tree = ast.parse((ROOT / "tests" / file).read_text(encoding="utf-8"))
        if name not in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}:
            missing.append(f"{file}::{name}")
    assert missing == []
    cases = set(re.findall(r"`test_cases\.py::test_case\[([a-z0-9-]+)\]`", page))
    assert cases and all((ROOT / "tests" / "cases" / case / "intent.yaml").is_file() for case in cases)


# --- item 6: slow input -------------------------------------------------------------------------------------------


def test_each_unknown_values_key_is_compared_with_a_handful_of_keys_not_every_path(run, tmp_path, monkeypatch):
    """Item 6: import searched every values path of the chart (642) for each unknown key's did-you-mean, 20 ms a
    key: 2,000 unknown keys under node-feature-discovery.worker took 40 s. The paths are indexed once per chart; a
    key is compared with the child keys of its longest known prefix (`make bench` times it: tools/bench.py)."""
    import difflib

    compared = []  # each string a did-you-mean compares a key with
    real = difflib.SequenceMatcher.set_seq1

    def counting(self, a):
        compared.append(a)
        return real(self, a)

    monkeypatch.setattr(difflib.SequenceMatcher, "set_seq1", counting)
    values = tmp_path / "values.yaml"
    values.write_text("node-feature-discovery:\n  worker:\n" + "".join(f"    key{i}: {i}\n" for i in range(2000)) +
                      "    tolerationz: []\n", encoding="utf-8")
    result = run("import", "--values", str(values), "--report", str(tmp_path / "report.json"))
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    dropped = [s for s in report["settings"] if s["outcome"] == "dropped"]
    assert len(dropped) == 2001
    # About the 28 child keys of node-feature-discovery.worker per unknown key, not the chart's 642 paths.
    assert len(compared) < 2001 * 64, len(compared)
    [typo] = [s for s in dropped if s["path"] == "node-feature-discovery.worker.tolerationz"]
    assert typo["why"].endswith("(did you mean node-feature-discovery.worker.tolerations?)")


# --- item 8: exit 3 on bad input ----------------------------------------------------------------------------------


def _edit_folder(root, file: str, old: str, new: str, count: int = 1) -> None:
    path = root / file
    text = path.read_text(encoding="utf-8")
    assert old in text, (file, old)
    path.write_text(text.replace(old, new, count), encoding="utf-8")


@pytest.mark.parametrize("file, old, new, problem", [
    ("kustomization.yaml", "resources:\n", "resources: true\nold:\n", "kustomization.yaml: resources is a list, not bool"),
    ("manifests/sharing-configs.yaml", "namespace: gpu-operator", "namespace: [gpu-operator]",
     "manifests/sharing-configs.yaml: ConfigMap/gpuconf-device-plugin-config: $.metadata.namespace: ['gpu-operator'] "
     "is not of type 'string', 'null'"),
    ("manifests/karpenter.yaml", None, None, None),  # the NodePool's spec replaced by `spec: true`, below
])
def test_a_hand_edited_folder_diff_against_reads_is_exit_2_naming_the_file(run, tmp_path, monkeypatch, file, old, new,
                                                                          problem):
    """Item 8: `diff --against` a folder whose kustomization.yaml has `resources: true`, a manifest with
    `namespace: [gpu-operator]`, a NodePool with `spec: true` gave exit 3. Exit 2 now, naming the file and field."""
    from conftest import ROOT

    monkeypatch.chdir(tmp_path)
    example = str(ROOT / "examples" / "platforms" / "eks.yaml")
    assert run("render", example, "-o", "out").exit_code == 0
    folder = tmp_path / "out" / "eks-inference"
    if file == "manifests/karpenter.yaml":  # the NodePool's own spec: the last key of its document
        text = (folder / file).read_text(encoding="utf-8")
        start = text.index("kind: NodePool")
        spec = text.index("\nspec:\n", start)
        end = text.find("\n---", spec)
        (folder / file).write_text(text[:spec] + "\nspec: true\n" + (text[end + 1:] if end != -1 else ""),
                                   encoding="utf-8")
        problem = "manifests/karpenter.yaml (document 2): NodePool/a10g: $.spec: True is not of type 'object'"
    else:
        _edit_folder(folder, file, old, new)
    result = run("diff", example, "--against", "out")
    assert (result.exit_code, result.stderr) == (2, f"gpuconf: out/eks-inference: {problem}: not what gpuconf wrote "
                                                    "there (edited by hand?); restore the folder or render it "
                                                    "again\n")


def test_a_configmaps_config_nested_5000_deep_is_a_note_not_exit_3(run, tmp_path):
    """Item 8: a --configmap whose device-plugin config nests 5,000 flow levels deep gave exit 3 (RecursionError)."""
    values = tmp_path / "values.yaml"
    values.write_text("devicePlugin:\n  config:\n    name: deep\n", encoding="utf-8")
    configmap = tmp_path / "configmap.yaml"
    configmap.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep, namespace: gpu-operator}\ndata:\n"
                         f"  any: {json.dumps('[' * 5000 + ']' * 5000)}\n", encoding="utf-8")
    result = run("import", "--values", str(values), "--configmap", str(configmap), "--report",
                 str(tmp_path / "report.json"), "-o", str(tmp_path / "intent.yaml"))
    assert result.exit_code == 0, result.stderr
    configs = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["configs"]
    assert [c["why"] for c in configs if c["config"] == "any"] == [
        "not expressible as a sharing profile (not YAML that gpuconf reads: nested too deep): its nodes get whole GPUs "
        "unless you declare the sharing yourself"]

"""`gpuconf audit`: the intent's render plan against live nodes (fixtures, a fake API server, the streaming reader)."""

from __future__ import annotations

import base64
import copy
import io
import json
import socket
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import nodelists as NL
from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "nodes"
CLEAN = ("heterogeneous", "hybrid", "airgapped", "single-pool")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    """Paths in the expected output are relative to the repository, as a user would type them."""
    monkeypatch.chdir(ROOT)


def _audit(example: str, nodes: list[dict]):
    from gpuconf.cluster.audit import audit

    return audit(NL.load_plan(example), nodes, "test")


def _clean(example: str) -> list[dict]:
    return json.loads((FIXTURES / f"{example}.json").read_text(encoding="utf-8"))["items"]


# --- fixtures ----------------------------------------------------------------------------------------------------


def test_committed_fixtures_are_current():
    fresh = NL.fixtures()
    committed = {p.name: p.read_text(encoding="utf-8") for p in FIXTURES.glob("*.json")}
    assert sorted(committed) == sorted(fresh)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"stale node fixtures {stale}: run `python tests/nodelists.py`"


@pytest.mark.parametrize("example", CLEAN)
def test_clean_cluster_audits_clean(run, example):
    result = run("audit", f"examples/{example}.yaml", "--nodes", str(FIXTURES / f"{example}.json"))
    assert result.exit_code == 0, result.stdout
    last = result.stdout.splitlines()[-1]
    assert last.startswith("summary: ") and " 0 drifting, 0 unavailable" in last and "0 errors, 0 warnings" in last
    expected, = {line.split("advertised ")[1].split(" expected")[0] for line in [last]}
    advertised, _, total = expected.partition(" of ")
    assert advertised == total


@pytest.mark.parametrize("example", sorted(NL.DRIFTS))
def test_each_injected_drift_is_found_once_with_evidence(example):
    plan = NL.load_plan(example)
    result = _audit(example, NL.drifted_nodes(example, plan))
    found = sorted((f.code, f.severity, f.node, f.pool) for f in result.findings)
    assert found == NL.expected_findings(example, plan)
    assert all(f.evidence for f in result.findings)
    assert not result.ok


def test_drift_codes_cover_the_issue():
    codes = {code for drifts in NL.DRIFTS.values() for d in drifts for code, _ in d.expect}
    from gpuconf.cluster.audit import TITLES

    assert codes == set(TITLES), "every audit code has a drift fixture"


def test_drift_cli_text_and_json(run):
    nodes = str(FIXTURES / "heterogeneous-drift.json")
    text = run("audit", "examples/heterogeneous.yaml", "--nodes", nodes)
    assert text.exit_code == 1
    lines = text.stdout.splitlines()
    assert lines[0] == f"audit of ml-prod (examples/heterogeneous.yaml) against {nodes}"
    assert lines[1].startswith("pool train-h100: H100-80GB x8, exclusive; 16/16 nodes (10 healthy, 4 drifting, "
                               "2 unavailable); nvidia.com/gpu 112/128")
    assert any(line.startswith("GPU nodes in no pool:") for line in lines)
    assert any(line.startswith("nodes in several pools:") for line in lines)
    assert lines[-1] == ("summary: 30 nodes seen, 27 GPU nodes, 13 healthy, 12 drifting, 2 unavailable; GPU resources "
                         "advertised 308 of 352 expected; 12 errors, 1 warning")
    assert "evidence: nvidia.com/mig.config={\"actual\": \"all-balanced\"" in text.stdout

    as_json = run("audit", "examples/heterogeneous.yaml", "--nodes", nodes, "--format", "json")
    assert as_json.exit_code == 1
    doc = json.loads(as_json.stdout)
    assert doc["ok"] is False and doc["cluster"] == "ml-prod"
    assert doc["summary"] == {"nodesSeen": 30, "gpuNodes": 27, "healthy": 13, "drifting": 12, "unavailable": 2,
                              "gpuUnitsAdvertised": 308, "gpuUnitsExpected": 352, "errors": 12, "warnings": 1}
    assert [p["name"] for p in doc["pools"]] == ["train-h100", "infer-a100", "notebooks-l4"]
    for f in doc["findings"]:
        assert sorted(f) == ["code", "evidence", "hint", "message", "node", "pool", "severity"]
    mig = next(f for f in doc["findings"] if f["code"] == "GA110" and f["severity"] == "error")
    assert mig["evidence"]["nvidia.com/mig.config.state"] == "failed"


def test_stdin_and_usage_errors(run, tmp_path):
    text = (FIXTURES / "single-pool.json").read_text(encoding="utf-8")
    assert run("audit", "examples/single-pool.yaml", "--nodes", "-", input=text).exit_code == 0
    assert run("audit", "examples/single-pool.yaml").exit_code == 2  # no node source
    both = run("audit", "examples/single-pool.yaml", "--nodes", "-", "--kubeconfig", str(FIXTURES / "lab.json"))
    assert both.exit_code == 2
    assert run("audit", "examples/single-pool.yaml", "--nodes", str(tmp_path / "missing.json")).exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "List", "items": [{"kind": "Node", "metadata": {', encoding="utf-8")
    result = run("audit", "examples/single-pool.yaml", "--nodes", str(bad))
    assert result.exit_code == 2 and "not a valid node list" in result.stderr
    yaml_file = tmp_path / "nodes.yaml"
    yaml_file.write_text("apiVersion: v1\nkind: List\nitems: []\n", encoding="utf-8")
    result = run("audit", "examples/single-pool.yaml", "--nodes", str(yaml_file))
    assert result.exit_code == 2 and "kubectl get nodes -o json" in result.stderr


def test_invalid_intent_is_reported_before_any_audit(run, tmp_path):
    intent = tmp_path / "bad.yaml"
    intent.write_text((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8").replace(
        "gpusPerNode: 4", "gpusPerNode: 0"), encoding="utf-8")
    result = run("audit", str(intent), "--nodes", str(FIXTURES / "single-pool.json"))
    assert result.exit_code == 1
    assert "GC205" in result.stderr and "fix it before auditing" in result.stderr
    assert result.stdout == ""


def test_rules_lists_the_audit_codes(run):
    listing = run("rules").stdout
    from gpuconf.cluster.audit import TITLES

    for code in TITLES:
        assert f"\n{code}  " in listing


def test_help_imports_neither_the_audit_nor_the_kubernetes_client():
    code = ("import sys; from gpuconf.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes' or m in "
            "('gpuconf.cluster.audit', 'gpuconf.cluster.importer', 'gpuconf.cluster.nodesource')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "[]"


# --- single checks on hand-made nodes -----------------------------------------------------------------------------


def _node(example: str, pool: str, index: int = 0) -> dict:
    plan = NL.load_plan(example)
    name = NL.node_name(plan, pool, index)
    return copy.deepcopy(next(n for n in _clean(example) if n["metadata"]["name"] == name))


def _codes(example: str, *nodes: dict) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity, f.message) for f in _audit(example, list(nodes)).findings if f.code != "GA115"]


def test_allocatable_absent_zero_and_above():
    node = _node("single-pool", "l40s")
    del node["status"]["allocatable"]["nvidia.com/gpu"]
    assert _codes("single-pool", node) == [("GA107", "error", "nvidia.com/gpu absent (0 of 4)")]
    node["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    assert _codes("single-pool", node) == [("GA107", "error", "nvidia.com/gpu zero (0 of 4)")]
    node["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    assert _codes("single-pool", node) == [("GA107", "warning", "nvidia.com/gpu above (8 of 4)")]
    node["status"]["conditions"][-1]["status"] = "False"  # NotReady: capacity is not judged
    assert [c for c, *_ in _codes("single-pool", node)] == ["GA113"]


def test_operands_switched_off_and_unknown_product():
    node = _node("single-pool", "l40s")
    node["metadata"]["labels"]["nvidia.com/gpu.deploy.operands"] = "false"
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-L40S-Turbo"  # still maps by name: L40S
    assert _codes("single-pool", node) == [("GA104", "error", "wrong value of nvidia.com/gpu.deploy.operands")]
    # A product name the catalogue does not know: the pool label NFD set from the PCI id still places the node.
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-GeForce-RTX-4090"
    assert [c for c, *_ in _codes("single-pool", node)] == ["GA104", "GA106"]
    assert _codes("single-pool", node)[1][1] == "warning"
    del node["metadata"]["labels"]["gpuconf.dev/pool"]  # nothing vouches for it any more
    found = _audit("single-pool", [node]).findings
    assert [(f.code, f.severity, f.node) for f in found] == [("GA115", "error", ""), ("GA101", "error", "l40s-00")]


def test_node_label_pools_are_told_apart_by_model_only_among_themselves():
    # infer-a100 selects its node group; a second node-label pool on the same group with another model is
    # disjoint for validation (GC303), so the GPU model decides; an NFD pool of the node's model does not give way.
    node = _node("heterogeneous", "infer-a100")
    found = _audit("heterogeneous", [node]).findings
    assert [f.code for f in found if f.node] == []
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
    multi = [f for f in _audit("heterogeneous", [node]).findings if f.code == "GA102"]
    assert len(multi) == 1 and set(multi[0].evidence["pools"]) == {"train-h100", "infer-a100"}


def test_nfd_pool_without_gfd_labels_is_placed_by_its_pool_label():
    node = _node("hybrid", "batch-h100")
    labels = node["metadata"]["labels"]
    del labels["nvidia.com/gpu.product"]
    codes = _codes("hybrid", node)
    assert ("GA106", "warning", "no GFD product label: cannot confirm the pool's model H100-80GB") in codes
    labels["gpuconf.dev/pool"] = "legacy-a100"  # the pool label now vouches for another pool
    found = _audit("hybrid", [node]).findings
    assert any(f.code == "GA106" and f.pool == "legacy-a100" for f in found)
    del labels["gpuconf.dev/pool"]  # no model, no pool label: GPU node in no pool
    unmatched = [f for f in _audit("hybrid", [node]).findings if f.node]
    assert [f.code for f in unmatched] == ["GA101"]
    assert unmatched[0].hint.startswith("GFD has not named the GPU")


def test_hostname_and_dmi_product_selectors(tmp_path):
    from gpuconf.cluster.audit import audit
    from gpuconf.intent.loader import load_text
    from gpuconf import plan as P
    from gpuconf.intent.validate import validate_document

    text = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8").replace(
        "        pciDevice: true", "        pciDevice: true\n        hostname: ^l40s-0\n"
        "        dmiProduct: PowerEdge XE9680")
    result = validate_document(load_text(text, "dmi.yaml"))
    assert result.ok, result.findings
    plan = P.build(result.intent, "dmi.yaml", result.document)
    nodes = _clean("single-pool")[:3]
    assert [f.code for f in audit(plan, copy.deepcopy(nodes), "t").findings] == []
    moved = copy.deepcopy(nodes)
    moved[0]["metadata"]["name"] = "other-00"  # the hostname regex no longer selects it
    moved[1]["metadata"]["labels"]["nvidia.com/gpu.machine"] = "ProLiant-DL380a-Gen11"  # nor the DMI product
    found = audit(plan, moved, "t").findings
    assert sorted((f.code, f.node) for f in found) == [("GA101", "l40s-01"), ("GA101", "other-00"), ("GA115", "")]


def test_more_nodes_than_declared_is_a_warning():
    nodes = _clean("single-pool")
    extra = copy.deepcopy(nodes[0])
    extra["metadata"]["name"] = "l40s-99"
    found = _audit("single-pool", nodes + [extra]).findings
    assert [(f.code, f.severity) for f in found] == [("GA115", "warning")]


def test_driver_branch_pin_and_version_labels():
    from gpuconf.cluster import nodefacts as N

    assert N.version_matches("595.91.07", "595.91") and N.version_matches("595.91.07", "595.91.07")
    assert not N.version_matches("595.910.07", "595.91") and not N.version_matches("580.126.20", "595.91.07")
    old_only = {"nvidia.com/cuda.driver.major": "550", "nvidia.com/cuda.driver.minor": "107",
                "nvidia.com/cuda.driver.rev": "02"}
    assert N.driver_version(old_only) == "550.107.02"
    assert N.driver_version({"nvidia.com/cuda.driver-version.full": "595.91.07", **old_only}) == "595.91.07"


@pytest.mark.parametrize("product, model", [
    ("NVIDIA-A100-SXM4-80GB", "A100-80GB"), ("NVIDIA-A100-80GB-PCIe", "A100-80GB"),
    ("NVIDIA-A100-PCIE-40GB", "A100-40GB"), ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB"),
    ("NVIDIA-A800-SXM4-80GB", "A100-80GB"), ("NVIDIA-H100-80GB-HBM3", "H100-80GB"), ("NVIDIA-H100-PCIe", "H100-80GB"),
    ("NVIDIA-H800", "H100-80GB"), ("NVIDIA-H100-NVL", "H100-NVL"), ("NVIDIA-H100-96GB-HBM3", "H100-96GB"),
    ("NVIDIA-H200", "H200"), ("NVIDIA-H200-NVL", "H200-NVL"), ("NVIDIA-H20", "H20"),
    ("NVIDIA-GH200-480GB", "GH200"), ("NVIDIA-GH200-144G-HBM3e", "GH200-144GB"), ("NVIDIA-B200", "B200"),
    ("NVIDIA-L4", "L4"), ("NVIDIA-L4-SHARED", "L4"), ("NVIDIA-L40S", "L40S"), ("Tesla-T4", "T4"),
    ("Tesla-T4-SHARED", "T4"), ("NVIDIA-A30", "A30"), ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTX-PRO-6000"),
    ("NVIDIA-PG506-232", "PG506-96GB"), ("NVIDIA-A100-SXM4-80GB-MIG-INVALID", "A100-80GB"),
    ("NVIDIA-A10", None), ("NVIDIA-A100", None), ("NVIDIA-GeForce-RTX-4090", None), ("", None),
])
def test_gfd_product_names_map_to_catalogue_models(product, model):
    from gpuconf.cluster.nodefacts import model_for_product

    assert model_for_product(product) == model


def test_gpu_memory_breaks_a_tie_between_models():
    from gpuconf.cluster.nodefacts import model_for_product, node_model

    assert model_for_product("NVIDIA-A100", 40960) == "A100-40GB"
    assert model_for_product("NVIDIA-A100", 81920) == "A100-80GB"
    # Under the single MIG strategy gpu.memory is a MIG device's: it must not decide the model.
    assert node_model({"nvidia.com/gpu.product": "NVIDIA-A100-MIG-1g.10gb", "nvidia.com/gpu.memory": "9984"}) is None


# --- the streaming reader -----------------------------------------------------------------------------------------


def _read(text: str | bytes, chunk: int | None = None, monkeypatch=None) -> tuple[list, dict]:
    from gpuconf.cluster import nodesource

    if chunk is not None:
        monkeypatch.setattr(nodesource, "CHUNK", chunk)
    reader = nodesource.NodeListReader(io.BytesIO(text.encode() if isinstance(text, str) else text), "t")
    return list(reader), reader.header


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_reader_is_exact_at_every_chunk_size(monkeypatch, chunk):
    items = [{"kind": "Node", "metadata": {"name": f"n{i}", "labels": {"x": "é" * i, "n": str(10 ** i)}},
              "status": {"allocatable": {"nvidia.com/gpu": "8"}}, "n": 12345678901234567890, "f": -1.5e3,
              "t": [True, False, None]} for i in range(5)]
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    for text in (json.dumps(doc), json.dumps(doc, indent=4), json.dumps(doc, separators=(",", ":"))):
        got, header = _read(text, chunk, monkeypatch)
        assert got == items
        assert header == {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}


def test_reader_header_after_items_and_single_node(monkeypatch):
    got, header = _read('{"items": [], "metadata": {"continue": "abc"}, "kind": "NodeList"}', 2, monkeypatch)
    assert got == [] and header["metadata"]["continue"] == "abc"
    got, _ = _read('{"kind": "Node", "metadata": {"name": "a"}}')
    assert got == [{"kind": "Node", "metadata": {"name": "a"}}]


@pytest.mark.parametrize("text, message", [
    ("", "expected a JSON NodeList"),
    ("[]", "expected a JSON NodeList"),
    ("apiVersion: v1\nkind: List\n", "YAML?"),
    ('{"kind": "PodList", "items": []}', "got kind 'PodList'"),
    ('{"kind": "List", "items": [{"kind": "Pod"}]}', "item 0 is a Pod, not a Node"),
    ('{"kind": "List", "items": [1]}', "item 0 is a int, not a Node"),
    ('{"kind": "List", "items": [{"kind": "Node"}', "expected ',' or ']'"),
    ('{"kind": "List", "items": [{"kind": "Node", ]}', "not a valid node list"),
    ('{"kind": "List"}', "no `items`"),
    ('{"items": []} {"items": []}', "unexpected text after the node list"),
    (b'{"items": ["\xff"]}', "not UTF-8"),
])
def test_reader_refuses_what_is_not_a_node_list(text, message):
    from gpuconf.cluster.nodesource import NodeSourceError

    with pytest.raises(NodeSourceError, match=None) as caught:
        _read(text)
    assert message in str(caught.value)


def test_reader_memory_stays_flat(tmp_path):
    """Peak memory while streaming 1,200 generated nodes (19 MB of JSON) stays under a few MB."""
    import tracemalloc

    from gpuconf.cluster.nodesource import read_nodes_file

    plan = NL.load_plan("heterogeneous")
    path = tmp_path / "nodes.json"
    nodes = NL.clean_nodes(plan, images=10, scale=45)
    path.write_text(NL.dumps(NL.nodelist(nodes)), encoding="utf-8")
    size = path.stat().st_size
    del nodes
    tracemalloc.start()
    count = sum(1 for _ in read_nodes_file(str(path)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 26 * 45 + 3
    assert size > 15_000_000 and peak < 8_000_000, (size, peak)


# --- the live path: a fake API server speaking the list-nodes protocol ---------------------------------------------


class FakeApiServer:
    """GET /api/v1/nodes with limit/continue paging, bearer-token auth and a forbidden mode, on 127.0.0.1."""

    TOKEN = "test-token"

    def __init__(self, nodes: list[dict], forbidden: bool = False) -> None:
        self.nodes = nodes
        self.forbidden = forbidden
        self.requests: list[tuple[str, str, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: dict) -> None:
                raw = json.dumps(body, separators=(",", ":")).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _status(self, code: int, reason: str, message: str) -> None:
                self._send(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": message, "reason": reason, "code": code})

            def do_GET(self):  # noqa: N802 - http.server API
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                server.requests.append(("GET", url.path, query))
                if self.headers.get("Authorization") != f"Bearer {server.TOKEN}":
                    return self._status(401, "Unauthorized", "Unauthorized")
                if url.path != "/api/v1/nodes":
                    return self._status(404, "NotFound", "the server could not find the requested resource")
                if server.forbidden:
                    return self._status(403, "Forbidden", 'nodes is forbidden: User "system:serviceaccount:ci:'
                                        'auditor" cannot list resource "nodes" in API group "" at the cluster scope')
                start = int(base64.b64decode(query["continue"]).decode()) if "continue" in query else 0
                limit = int(query.get("limit", len(server.nodes) or 1))
                page = server.nodes[start:start + limit]
                meta = {"resourceVersion": "4242"}
                if start + limit < len(server.nodes):
                    meta["continue"] = base64.b64encode(str(start + limit).encode()).decode()
                    meta["remainingItemCount"] = len(server.nodes) - start - limit
                # The API server's list items carry no kind/apiVersion; the list does.
                items = [{k: v for k, v in n.items() if k not in ("kind", "apiVersion")} for n in page]
                self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": items})

            def do_POST(self):  # noqa: N802 - anything but GET is a failure of the read-only promise
                server.requests.append(("POST", self.path, {}))
                self._status(405, "MethodNotAllowed", "read-only fake")

            do_PUT = do_PATCH = do_DELETE = do_POST

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeApiServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _kubeconfig(tmp_path, port: int, token: str = FakeApiServer.TOKEN) -> str:
    import yaml

    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "auditor", "user": {"token": token}}, {"name": "stranger", "user": {"token": "nope"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "auditor"}},
                     {"name": "stranger", "context": {"cluster": "fake", "user": "stranger"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


def test_live_cluster_is_listed_page_by_page(run, tmp_path, monkeypatch):
    from gpuconf.cluster import nodesource

    nodes = _clean("heterogeneous")
    monkeypatch.setattr(nodesource, "PAGE_SIZE", 7)
    with FakeApiServer(nodes) as api:
        config = _kubeconfig(tmp_path, api.port)
        result = run("audit", "examples/heterogeneous.yaml", "--kubeconfig", config, "--format", "json")
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        assert doc["summary"]["nodesSeen"] == len(nodes) == 29 and doc["summary"]["healthy"] == 26
        assert doc["nodes"] == config
        pages = [(method, path, query.get("limit"), "continue" in query) for method, path, query in api.requests]
        assert pages == [("GET", "/api/v1/nodes", "7", i > 0) for i in range(5)]  # 29 nodes in pages of 7
        # The same through `import`, and with an explicit context.
        api.requests.clear()
        imported = run("import", "--kubeconfig", config, "--context", "fake")
        assert imported.exit_code == 0 and "name: train-h100" in imported.stdout
        assert all(method == "GET" and path == "/api/v1/nodes" for method, path, _ in api.requests)


def test_live_cluster_drift_is_found(run, tmp_path):
    plan = NL.load_plan("hybrid")
    with FakeApiServer(NL.drifted_nodes("hybrid", plan)) as api:
        result = run("audit", "examples/hybrid.yaml", "--kubeconfig", _kubeconfig(tmp_path, api.port))
    assert result.exit_code == 1
    assert "GA109" in result.stdout and "GA103" in result.stdout


def test_live_cluster_forbidden_and_unauthorized(run, tmp_path):
    with FakeApiServer(_clean("single-pool"), forbidden=True) as api:
        result = run("audit", "examples/single-pool.yaml", "--kubeconfig", _kubeconfig(tmp_path, api.port))
        assert result.exit_code == 2 and result.stdout == ""
        assert "may not list nodes (403 Forbidden)" in result.stderr
        assert 'cannot list resource "nodes"' in result.stderr and "verbs [list]" in result.stderr
    with FakeApiServer(_clean("single-pool")) as api:
        config = _kubeconfig(tmp_path, api.port)
        result = run("audit", "examples/single-pool.yaml", "--kubeconfig", config, "--context", "stranger")
        assert result.exit_code == 2 and "rejected the credentials of context 'stranger' (401 Unauthorized)" in \
            result.stderr


def test_live_cluster_unreachable_and_bad_kubeconfig(run, tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = _kubeconfig(tmp_path, port)
    result = run("audit", "examples/single-pool.yaml", "--kubeconfig", config)
    assert result.exit_code == 2 and f"cannot reach the cluster at http://127.0.0.1:{port}" in result.stderr
    result = run("audit", "examples/single-pool.yaml", "--kubeconfig", config, "--context", "nope")
    assert result.exit_code == 2 and "cannot use this kubeconfig" in result.stderr
    assert run("audit", "examples/single-pool.yaml", "--context", "fake", "--nodes", "-").exit_code == 2

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
import time
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
    assert " GA1" not in result.stdout, result.stdout  # no finding at all, not even info
    last = result.stdout.splitlines()[-1]
    assert last.startswith("summary: ") and " 0 drifting, 0 unavailable" in last and last.endswith("0 errors, 0 warnings")
    units = last.split("advertised/expected: ")[1].split("; ")[0].split(", ")
    assert units and all(len(set(u.rpartition(" ")[2].split("/"))) == 1 for u in units), units


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

    # GA130 reads ResourceSlices of a DRA cluster: tests/test_dra.py injects its drift. GA123 concerns every node of
    # a pool at once (a cluster gpuconf has not synced yet): tests/test_adoption.py audits real H200 nodes for it.
    # GA131-GA133 (known hazards): tests/test_hazards.py gives nodes a hazard's driver, kernel or runtime.
    # GA140-GA150 (the diagnosis from the operator's pods): tests/test_diagnose.py has a case per code.
    # GA160-GA165 (the NVLink fabric of examples/nvl72.yaml): tests/test_audit_fabric.py has a case per code.
    from gpuconf.cluster.diagnose import TITLES as CAUSES

    fabric = {"GA160", "GA161", "GA162", "GA163", "GA164", "GA165"}
    assert codes | {"GA130", "GA123", "GA131", "GA132", "GA133"} | set(CAUSES) | fabric == set(TITLES), \
        "every audit code has a drift fixture"


def test_drift_cli_text_and_json(run):
    nodes = str(FIXTURES / "heterogeneous-drift.json")
    text = run("audit", "examples/heterogeneous.yaml", "--nodes", nodes)
    assert text.exit_code == 1
    lines = text.stdout.splitlines()
    assert lines[0] == f"audit of ml-prod (examples/heterogeneous.yaml) against {nodes}"
    assert lines[1] == ("pool train-h100: H100-80GB x8, exclusive; 16/16 nodes (4 healthy, 10 drifting, "
                        "2 unavailable); nvidia.com/gpu 96/128")
    assert any(line.startswith("GPU nodes in no pool:") for line in lines)
    assert any(line.startswith("nodes in several pools:") for line in lines)
    # Units are added up per resource name only: surplus 1g slices do not hide the missing 2g and 3g ones.
    assert lines[-1] == ("summary: 30 nodes seen, 27 GPU nodes, 5 healthy, 20 drifting, 2 unavailable; "
                         "advertised/expected: nvidia.com/gpu 148/224, nvidia.com/mig-1g.10gb 104/64, "
                         "nvidia.com/mig-2g.20gb 24/32, nvidia.com/mig-3g.40gb 24/32; 21 errors, 3 warnings")
    assert "evidence: nvidia.com/mig.config={\"actual\": \"all-balanced\"" in text.stdout

    as_json = run("audit", "examples/heterogeneous.yaml", "--nodes", nodes, "--format", "json")
    assert as_json.exit_code == 1
    doc = json.loads(as_json.stdout)
    assert doc["ok"] is False and doc["cluster"] == "ml-prod"
    assert doc["summary"] == {
        "nodesSeen": 30, "gpuNodes": 27, "healthy": 5, "drifting": 20, "unavailable": 2, "errors": 21, "warnings": 3,
        "resources": {"nvidia.com/gpu": {"advertised": 148, "expected": 224},
                      "nvidia.com/mig-1g.10gb": {"advertised": 104, "expected": 64},
                      "nvidia.com/mig-2g.20gb": {"advertised": 24, "expected": 32},
                      "nvidia.com/mig-3g.40gb": {"advertised": 24, "expected": 32}}}
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


_NODE = {"kind": "Node", "metadata": {"name": "gpu-01", "labels": {"nvidia.com/gpu.present": "true"}},
         "status": {"allocatable": {"nvidia.com/gpu": "4"}}}


def _shaped(**parts) -> dict:
    node = copy.deepcopy(_NODE)
    for path, value in parts.items():
        where = node
        *parents, last = path.split("__")
        for key in parents:
            where = where.setdefault(key, {})
        where[last] = value
    return {"kind": "List", "items": [node]}


@pytest.mark.parametrize("doc, problem", [
    (_shaped(status="Ready"), "item 0 (gpu-01): status is a string, not an object"),
    (_shaped(metadata=["gpu-01"]), "item 0: metadata is a list, not an object"),
    (_shaped(spec=7), "item 0 (gpu-01): spec is a number, not an object"),
    (_shaped(metadata__labels="gpu"), "item 0 (gpu-01): metadata.labels is a string, not an object"),
    (_shaped(metadata__labels={"nvidia.com/gpu.count": 8}),
     "item 0 (gpu-01): metadata.labels['nvidia.com/gpu.count'] is a number, not a string"),
    (_shaped(status__allocatable=[]), "item 0 (gpu-01): status.allocatable is a list, not an object"),
    (_shaped(status__allocatable={"nvidia.com/gpu": "9" * 5000}),
     "item 0 (gpu-01): status.allocatable['nvidia.com/gpu'] is not a Kubernetes quantity (5000 characters)"),
    (_shaped(status__capacity={"nvidia.com/gpu": "eight"}),
     "item 0 (gpu-01): status.capacity['nvidia.com/gpu'] is not a Kubernetes quantity ('eight')"),
    (_shaped(spec__taints={"key": "a"}), "item 0 (gpu-01): spec.taints is an object, not a list"),
    (_shaped(spec__taints=[{"key": "a", "effect": 1}]), "item 0 (gpu-01): spec.taints[0].effect is a number, "
                                                         "not a string"),
    (_shaped(spec__unschedulable="yes"), "item 0 (gpu-01): spec.unschedulable is a string, not a boolean"),
    (_shaped(status__conditions=["Ready"]), "item 0 (gpu-01): status.conditions[0] is a string, not an object"),
    (_shaped(status__nodeInfo={"kubeletVersion": 1.31}),
     "item 0 (gpu-01): status.nodeInfo.kubeletVersion is a number, not a string"),
    (_shaped(metadata__name="gpu-01\n# forged"), "item 0: metadata.name 'gpu-01\\n# forged' is not a node name "
                                                  "(a DNS-1123 subdomain of at most 253 characters)"),
])
def test_a_node_list_of_another_shape_is_a_usage_error(run, tmp_path, doc, problem):
    """Environment problems exit 2 with one line naming the file and the cause, for audit and import alike."""
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    for command in (["audit", "examples/single-pool.yaml"], ["import"]):
        result = run(*command, "--nodes", str(path))
        assert result.exit_code == 2, result.stderr
        assert result.stdout == ""
        assert result.stderr.splitlines() == [
            f"gpuconf: {path}: {problem}; expected the output of `kubectl get nodes -o json`"]


def test_json_nested_100000_deep_is_a_usage_error(run, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"kind": "List", "items": [' + "[" * 100_000 + "]" * 100_000 + "]}", encoding="utf-8")
    for command in (["audit", "examples/single-pool.yaml"], ["import"]):
        result = run(*command, "--nodes", str(path))
        assert result.exit_code == 2
        assert result.stderr.splitlines() == [
            f"gpuconf: {path}: not a valid node list (character 28): JSON nested too deeply to be a Node"]


class _Endless(io.RawIOBase):
    """A stream of one repeated byte after a prefix, like `{"items": ["` followed by /dev/zero or a FIFO that never
    ends a value; it fails the test instead of growing forever once `limit` bytes were read."""

    def __init__(self, prefix: bytes, byte: bytes, limit: int) -> None:
        self.prefix, self.byte, self.limit, self.sent = prefix, byte, limit, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert self.sent < self.limit, f"read {self.sent} bytes of a value that never ends: the size bound failed"
        size = 1 << 16 if size is None or size < 0 else size
        data = (self.prefix + self.byte * size)[:size]
        self.prefix = self.prefix[len(data):]
        self.sent += len(data)
        return data


@pytest.mark.parametrize("prefix, byte, message", [
    (b'{"items": ["', b"a", "no complete value within 1 MiB (a Node is far smaller)"),
    (b'{"items": [1', b"0", "a number no Node holds (Exceeds the limit (4300 digits)"),
    (b'{"kind": "List", "metadata": {"a": "', b"x", "no complete value within 1 MiB (a Node is far smaller)"),
    (b'{"items": [{"a": [', b" ", "no complete value within 1 MiB (a Node is far smaller)"),
    (b'{"items": [[', b"[", "JSON nested too deeply to be a Node"),
])
def test_the_size_bound_holds_while_reading(monkeypatch, prefix, byte, message):
    """The bound is checked as the value grows, not after the whole input was read (memory stays bounded)."""
    from gpuconf.cluster import nodesource

    monkeypatch.setattr(nodesource, "MAX_VALUE", 1 << 20)
    reader = nodesource.NodeListReader(_Endless(prefix, byte, 64 << 20), "endless")
    with pytest.raises(nodesource.NodeSourceError) as caught:
        list(reader)
    assert message in str(caught.value)


def test_nodes_from_a_fifo_process_substitution_and_stdin_are_read_once(tmp_path):
    """`--nodes` reads its input exactly once, as a stream: a FIFO, bash's <(...), standard input."""
    import os
    import shutil

    fixture = FIFO_SOURCE = str(FIXTURES / "single-pool.json")
    fifo = tmp_path / "nodes.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes((FIXTURES / "single-pool.json").read_bytes()))
    writer.start()
    done = subprocess.run([sys.executable, "-m", "gpuconf", "audit", "examples/single-pool.yaml", "--nodes",
                           str(fifo)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    writer.join()
    assert done.returncode == 0, done.stderr
    bash = shutil.which("bash")
    if bash is not None:
        done = subprocess.run([bash, "-c", f'"{sys.executable}" -m gpuconf audit examples/single-pool.yaml '
                               f'--nodes <(cat "{FIFO_SOURCE}")'], capture_output=True, text=True, timeout=60,
                              cwd=ROOT)
        assert done.returncode == 0, done.stderr
    with open(fixture, "rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "gpuconf", "import", "--nodes", "-"], stdin=stdin,
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and "name: l40s" in done.stdout, done.stderr


@pytest.mark.parametrize("text, cause", [
    ("apiVersion: v1\nclusters: [\n  - {", "while parsing a flow node"),
    ("- a\n- b\n", "cannot use this kubeconfig"),
    ("contexts: 5\ncurrent-context: x\n", "cannot use this kubeconfig"),
    ("", "file is empty"),
])
def test_an_unparseable_kubeconfig_is_a_usage_error(run, tmp_path, text, cause):
    path = tmp_path / "kubeconfig"
    path.write_text(text, encoding="utf-8")
    for command in (["audit", "examples/single-pool.yaml"], ["import"]):
        result = run(*command, "--kubeconfig", str(path))
        assert result.exit_code == 2 and result.stdout == ""
        line, = result.stderr.splitlines()
        assert line.startswith(f"gpuconf: {path}: cannot use this kubeconfig: ") and cause in line


def test_a_kubeconfig_whose_request_http_refuses_is_a_usage_error_that_hides_the_token(run, tmp_path):
    path = _kubeconfig(tmp_path, 1, token="secret\nX-Injected: 1")
    result = run("audit", "examples/single-pool.yaml", "--kubeconfig", path)
    assert result.exit_code == 2
    line, = result.stderr.splitlines()
    assert line.startswith(f"gpuconf: {path}: the HTTP client refused the request to http://127.0.0.1:1")
    assert "secret" not in result.stderr


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
    return [(f.code, f.severity, f.message) for f in _audit(example, list(nodes)).findings if f.node]


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
    assert _codes("single-pool", node) == [
        ("GA118", "error", "every GPU operand is switched off (nvidia.com/gpu.deploy.operands=false)")]
    # A product name the catalogue does not know: the pool label NFD set from the PCI id still places the node.
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-GeForce-RTX-4090"
    assert [c for c, *_ in _codes("single-pool", node)] == ["GA106", "GA118"]
    assert _codes("single-pool", node)[0][1] == "warning"
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


def test_a_declared_gpu_model_is_recognised_by_its_product_label():
    from gpuconf.cluster.audit import audit
    from gpuconf.intent.loader import load_text
    from gpuconf import plan as P
    from gpuconf.intent.validate import validate_document

    text = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8").replace(
        "      gpu: L40S", "      gpu: LAB-GPU").replace(
        "  pools:", "  gpuModels:\n    LAB-GPU:\n      name: Lab GPU 40GB\n      pciDeviceIds: [\"0x20F910DE\"]\n"
        "      memoryGiB: 40\n      productLabels: [Lab-GPU-40GB]\n  pools:")
    result = validate_document(load_text(text, "declared.yaml"))
    assert result.ok, result.findings
    plan = P.build(result.intent, "declared.yaml", result.document)
    nodes = [n for n in copy.deepcopy(_clean("single-pool")) if "nvidia.com/gpu.product" in n["metadata"]["labels"]]
    for node in nodes:
        node["metadata"]["labels"]["nvidia.com/gpu.product"] = "Lab-GPU-40GB"
    assert [f.code for f in audit(plan, copy.deepcopy(nodes), "t").findings] == []
    # An L40S is the catalogue's model, not the declared one: the pool's NodeFeatureRule (PCI id) does not select it.
    nodes[0]["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-L40S"
    found = audit(plan, nodes, "t").findings
    assert sorted((f.code, f.node) for f in found) == [("GA101", nodes[0]["metadata"]["name"]), ("GA115", "")]


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
    # gpu-models-extra.md: the product labels seen on nodes or derived from the driver's names.
    ("NVIDIA-A10", "A10"), ("NVIDIA-A10G", "A10G"), ("NVIDIA-A10G-SHARED", "A10G"), ("NVIDIA-A16", "A16"),
    ("NVIDIA-A2", "A2"), ("NVIDIA-A40", "A40"), ("NVIDIA-L40", "L40"), ("NVIDIA-L20", "L20"),
    ("Tesla-V100-SXM2-16GB", "V100-SXM2-16GB"), ("Tesla-V100-SXM2-32GB", "V100-SXM2-32GB"),
    ("Tesla-V100-PCIE-16GB", "V100-PCIE-16GB"), ("Tesla-V100-PCIE-32GB", "V100-PCIE-32GB"),
    ("Tesla-V100S-PCIE-32GB", "V100S-PCIE-32GB"), ("NVIDIA-T4G", "T4G"), ("NVIDIA-RTX-A6000", "RTX-A6000"),
    ("NVIDIA-RTX-A5000", "RTX-A5000"), ("NVIDIA-RTX-6000-Ada-Generation", "RTX-6000-ADA"),
    # Ambiguous or unknown: no guess. (Tesla-V100-SXM2 without a size is one of two V100 SXM2 models.)
    ("NVIDIA-A100", None), ("Tesla-V100-SXM2", None), ("NVIDIA-GeForce-RTX-4090", None), ("", None),
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
    # Multi-byte text in an annotation (labels are checked: an API server accepts no "é" there).
    items = [{"kind": "Node", "metadata": {"name": f"n{i}", "annotations": {"x": "é" * i},
                                           "labels": {"n": str(10 ** i)}},
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
    """GET /api/v1/nodes with limit/continue paging, bearer-token auth and a forbidden mode, on 127.0.0.1.

    drip="headers" or "body" sends that part one byte every `interval` seconds (a stalled API server); tls=(cert,
    key) serves HTTPS.
    """

    TOKEN = "test-token"

    def __init__(self, nodes: list[dict], forbidden: bool = False, drip: str | None = None, interval: float = 0.2,
                 tls: tuple[str, str] | None = None, page_delay: float = 0.0, objects: dict | None = None,
                 pods: list[dict] | None = (), events: list[dict] | None = None, logs: dict | None = None,
                 forbid: tuple[str, ...] = ()) -> None:
        self.nodes = nodes
        # The operator's pods and the pending pods (GET .../pods, paged, with the phase field selector), events, and
        # container logs by (pod, container, previous); `forbid`: paths answered 403 (a role without the permission).
        # pods=None: no pod list is served at all (404), as from a server that does not know the path.
        self.serve_pods = pods is not None
        self.pods = list(pods or [])
        self.events = events or []
        self.logs = logs or {}
        self.forbid = forbid
        self.objects = objects or {}  # other paths the fake answers (GET), path -> body
        self.forbidden = forbidden
        self.requests: list[tuple[str, str, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: dict) -> None:
                raw = json.dumps(body, separators=(",", ":")).encode()
                if drip is None:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                head = (f"HTTP/1.0 {code} OK\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(raw)}\r\n\r\n").encode()
                dripped = head + raw if drip == "headers" else raw
                if drip == "body":
                    self.wfile.write(head)
                try:
                    for i in range(len(dripped)):
                        self.wfile.write(dripped[i:i + 1])
                        self.wfile.flush()
                        time.sleep(interval)
                except OSError:  # the client gave up: what the test wants
                    pass

            def _status(self, code: int, reason: str, message: str) -> None:
                self._send(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": message, "reason": reason, "code": code})

            def do_GET(self):  # noqa: N802 - http.server API
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                server.requests.append(("GET", url.path, query))
                if self.headers.get("Authorization") != f"Bearer {server.TOKEN}":
                    return self._status(401, "Unauthorized", "Unauthorized")
                if url.path in server.objects:
                    return self._send(200, server.objects[url.path])
                if any(url.path.startswith(f) for f in server.forbid):
                    resource = "pods/log" if url.path.endswith("/log") else url.path.rsplit("/", 1)[-1]
                    return self._status(403, "Forbidden", f'{resource} is forbidden: User "system:serviceaccount:ci:'
                                        f'auditor" cannot list resource "{resource}" in API group ""')
                if url.path.endswith("/log"):
                    parts = url.path.split("/")  # /api/v1/namespaces/NS/pods/NAME/log
                    key = (parts[6], query.get("container"), query.get("previous") == "true")
                    if key not in server.logs:
                        return self._status(400, "BadRequest", f'previous terminated container "{key[1]}" in pod '
                                            f'"{key[0]}" not found')
                    raw = server.logs[key].encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                if url.path.endswith(("/pods", "/events")) and server.serve_pods:
                    kind = "PodList" if url.path.endswith("/pods") else "EventList"
                    items = server.pods if kind == "PodList" else server.events
                    if "/namespaces/" in url.path:
                        ns = url.path.split("/")[4]
                        items = [i for i in items if (i.get("metadata") or {}).get("namespace") == ns]
                    selector = query.get("fieldSelector", "")
                    if "status.phase=Pending" in selector:
                        items = [i for i in items if i["status"].get("phase") == "Pending"]
                    if "involvedObject.kind=Node" in selector:
                        items = [i for i in items if i["involvedObject"]["kind"] == "Node"]
                    start = int(base64.b64decode(query["continue"]).decode()) if "continue" in query else 0
                    limit = int(query.get("limit", len(items) or 1))
                    meta = {"resourceVersion": "4242"}
                    if start + limit < len(items):
                        meta["continue"] = base64.b64encode(str(start + limit).encode()).decode()
                    return self._send(200, {"kind": kind, "apiVersion": "v1", "metadata": meta,
                                            "items": items[start:start + limit]})
                if url.path != "/api/v1/nodes":
                    return self._status(404, "NotFound", "the server could not find the requested resource")
                if server.forbidden:
                    return self._status(403, "Forbidden", 'nodes is forbidden: User "system:serviceaccount:ci:'
                                        'auditor" cannot list resource "nodes" in API group "" at the cluster scope')
                time.sleep(page_delay)  # every page answered in time, the listing as a whole slow
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
        self.httpd.daemon_threads = True
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.scheme = "https" if tls else "http"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeApiServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _kubeconfig(tmp_path, port: int, token: str = FakeApiServer.TOKEN, scheme: str = "http",
                insecure: bool = False) -> str:
    import yaml

    cluster = {"server": f"{scheme}://127.0.0.1:{port}", **({"insecure-skip-tls-verify": True} if insecure else {})}
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": cluster}],
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
        pages = [(method, path, query.get("limit"), "continue" in query) for method, path, query in api.requests
                 if path == "/api/v1/nodes"]
        assert pages == [("GET", "/api/v1/nodes", "7", i > 0) for i in range(5)]  # 29 nodes in pages of 7
        # Before them, the operator's pods, the pending pods and the Warning events (one page each here).
        assert [path for _, path, _ in api.requests[:4]] == [
            "/api/v1/namespaces/gpu-operator/pods", "/api/v1/pods", "/api/v1/namespaces/gpu-operator/events",
            "/api/v1/events"]
        # The same through `import`, and with an explicit context.
        api.requests.clear()
        imported = run("import", "--kubeconfig", config, "--context", "fake")
        assert imported.exit_code == 0 and "name: train-h100" in imported.stdout
        # Read-only: GET requests alone (import also asks for the installation: a release, a ClusterPolicy).
        assert all(method == "GET" for method, path, _ in api.requests)
        assert [p for _, p, _ in api.requests if p == "/api/v1/nodes"] == ["/api/v1/nodes"] * 5


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


@pytest.mark.parametrize("drip", ["headers", "body"])
def test_a_dripping_api_server_meets_the_request_timeout(tmp_path, drip):
    """A server that sends one byte at a time, each well within urllib3's socket timeouts, still fails the audit
    (exit 2, one line) once --request-timeout has passed; without a deadline on the whole request it would drip
    the list for hours (the subprocess bound below fails the test instead of hanging it)."""
    with FakeApiServer(_clean("single-pool"), drip=drip, interval=0.2) as api:
        config = _kubeconfig(tmp_path, api.port)
        # The audit reads the operator's pods first (the diagnosis of each node needs them), import the nodes.
        for command, what in ((["audit", "examples/single-pool.yaml"], "the pods in namespace gpu-operator"),
                              (["import"], "the node list")):
            done = subprocess.run([sys.executable, "-m", "gpuconf", *command, "--kubeconfig", config,
                                   "--request-timeout", "1.5"], capture_output=True, text=True, timeout=60,
                                  cwd=ROOT)
            assert done.returncode == 2, done.stderr
            assert done.stdout == ""
            assert done.stderr.splitlines() == [
                f"gpuconf: the cluster at http://127.0.0.1:{api.port} did not send {what} within 1.5 s "
                "(--request-timeout): a stalled or very slow API server"]


def test_the_request_timeout_bounds_the_whole_listing_not_each_page(tmp_path, monkeypatch):
    """Pages that each arrive well within --request-timeout still fail once the listing as a whole has taken longer:
    the deadline is one for all pages (issue 11, item 11: an overall deadline)."""
    nodes = _clean("single-pool")
    with FakeApiServer(nodes, page_delay=0.4) as api:
        config = _kubeconfig(tmp_path, api.port)
        done = subprocess.run([sys.executable, "-c", "import sys; from gpuconf.cluster import nodesource; "
                               "nodesource.PAGE_SIZE = 1; from gpuconf.cli import run; sys.argv[0] = 'gpuconf'; run()",
                               "import", "--kubeconfig", config, "--request-timeout", "1.5"],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert len(nodes) >= 5  # five pages of 0.4 s: each in time, 2 s in all
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines()[-1] == (
            f"gpuconf: the cluster at http://127.0.0.1:{api.port} did not send the node list within 1.5 s "
            "(--request-timeout): a stalled or very slow API server")
        assert 2 <= len([r for r in api.requests if r[1] == "/api/v1/nodes"]) < len(nodes)


def test_request_timeout_must_be_positive(run, tmp_path):
    result = run("audit", "examples/single-pool.yaml", "--kubeconfig", _kubeconfig(tmp_path, 1),
                 "--request-timeout", "0")
    assert result.exit_code == 2 and "--request-timeout" in result.stderr


def _self_signed(tmp_path) -> tuple[str, str]:
    import shutil

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=fake",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


def test_tls_warnings_become_one_line_of_gpuconf(run, tmp_path, monkeypatch):
    """insecure-skip-tls-verify makes urllib3 warn on every request (here: five pages); gpuconf says it once, in its
    own words, and prints no library warning."""
    from gpuconf.cluster import nodesource

    monkeypatch.setattr(nodesource, "PAGE_SIZE", 7)
    nodes = _clean("heterogeneous")
    with FakeApiServer(nodes, tls=_self_signed(tmp_path)) as api:
        config = _kubeconfig(tmp_path, api.port, scheme="https", insecure=True)
        for command in (["audit", "examples/heterogeneous.yaml"], ["import"]):
            result = run(*command, "--kubeconfig", config)
            assert result.exit_code == 0, result.stderr
            lines = [line for line in result.stderr.splitlines() if "warning" in line.lower()]
            assert lines == [f"gpuconf: warning: TLS certificate verification is off for https://127.0.0.1:{api.port} "
                             "(insecure-skip-tls-verify in the kubeconfig): anyone on the path can answer as the "
                             "cluster"]
            assert "urllib3" not in result.stderr and "InsecureRequestWarning" not in result.stderr


# --- the drift picture: upgrade state, operator state, taints, GPU count, capacity --------------------------------


@pytest.mark.parametrize("state, severity", [
    ("upgrade-failed", "error"),  # an error everywhere, never "reconfiguring"
    ("upgrade-required", "error"),  # only waiting for its wave: nothing explains lost GPUs
    ("", "error"),  # never processed by the upgrade controller
    ("pod-restart-required", "warning"),  # the driver pod is being replaced right now
    ("validation-required", "warning"),
])
def test_lost_gpus_are_excused_only_while_an_upgrade_changes_the_node(state, severity):
    node = _node("heterogeneous", "train-h100", 0)
    node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = state
    node["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    found = {c: (s, m) for c, s, m in _codes("heterogeneous", node)}
    assert found["GA107"] == (severity, "nvidia.com/gpu zero (0 of 8)")
    assert ("GA116" in found) == (state == "upgrade-failed")
    if state == "upgrade-failed":
        assert found["GA116"] == ("error", "the driver upgrade failed")
        assert not _audit("heterogeneous", [node]).ok


def test_the_driver_managers_pre_installed_is_false_on_a_preinstalled_pool_and_named_on_a_managed_one():
    legacy = _node("hybrid", "legacy-a100", 0)
    legacy["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "pre-installed"
    assert _codes("hybrid", legacy) == []
    batch = _node("hybrid", "batch-h100", 0)
    batch["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "pre-installed"
    off, = [f for f in _audit("hybrid", [batch]).findings if f.node]
    assert (off.code, off.severity, off.message) == ("GA118", "error", "operand switched off: driver")
    assert off.hint.startswith("the driver manager found a driver on the host") and "hand-set" not in off.hint


def test_undeclared_taints_and_a_declared_key_with_another_value():
    node = _node("heterogeneous", "train-h100", 0)
    taints = node["spec"]["taints"]
    taints.append({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"})  # EKS/Karpenter docs' taint
    taints.append({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"})  # the node controller's
    taints.append({"key": "soft", "effect": "PreferNoSchedule"})  # no hard constraint
    assert _codes("heterogeneous", node) == []
    taints[0]["value"] = "infer"  # gpuconf.dev/pool=infer: the pool's key, another value
    found = _codes("heterogeneous", node)
    assert [(c, s) for c, s, _ in found] == [("GA105", "error")]
    node["spec"]["taints"] = [{"key": "gpuconf.dev/pool", "value": "train-h100", "effect": "NoExecute"}]
    assert [(c, s) for c, s, _ in _codes("heterogeneous", node)] == [("GA105", "error")]  # other effect: GA105 only
    node["spec"]["taints"] += [{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoSchedule"}]
    assert [(c, s, m) for c, s, m in _codes("heterogeneous", node) if c == "GA120"] == [
        ("GA120", "error", "undeclared NoExecute taint a:NoExecute"),
        ("GA120", "warning", "undeclared NoSchedule taint b:NoSchedule")]


def test_gfd_gpu_count_is_judged_as_gfd_counts():
    from gpuconf.cluster.audit import audit

    plan = NL.plan_of(NL.SINGLE_MIG)
    assert plan.strategy == "single"
    node = NL.clean_nodes(plan)[0]
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.count"] == "32" and not [f for f in audit(plan, [node], "t").findings if f.node]
    labels["nvidia.com/gpu.count"] = "28"
    found = [(f.code, f.severity, f.message) for f in audit(plan, [node], "t").findings if f.node]
    assert found == [("GA121", "error", "GFD counts 28 MIG devices, the pool expects 32")]
    labels["nvidia.com/mig.config.state"] = "pending"  # GFD's labels lag a reconfiguration
    assert ("GA121", "warning") in [(f.code, f.severity) for f in audit(plan, [node], "t").findings]
    train = _node("heterogeneous", "train-h100", 0)  # the mixed strategy: whole GPUs
    assert train["metadata"]["labels"]["nvidia.com/gpu.count"] == "8"
    train["metadata"]["labels"]["nvidia.com/gpu.count"] = "9" * 5000  # no count at all, and no crash
    assert [(c, s) for c, s, _ in _codes("heterogeneous", train)] == [("GA121", "error")]


def test_max_unavailable_turns_lost_capacity_into_drift(run):
    nodes = str(FIXTURES / "airgapped-drift.json")
    default = run("audit", "examples/airgapped.yaml", "--nodes", nodes, "--format", "json")
    assert default.exit_code == 1
    lost, = [f for f in json.loads(default.stdout)["findings"] if f["code"] == "GA122"]
    assert lost["pool"] == "dev-t4" and lost["node"] == ""
    assert lost["message"] == "3 of 5 nodes are NotReady or cordoned, more than --max-unavailable 25% allows"
    assert lost["evidence"] == {"unavailable": 3, "declared": 5, "maxUnavailable": "25%",
                                "nodes": ["dev-t4-00", "dev-t4-01", "dev-t4-02"]}
    for value, code in (("60%", 0), ("59%", 1), ("3", 0), ("2", 1), ("100%", 0), ("0", 1)):
        assert run("audit", "examples/airgapped.yaml", "--nodes", nodes, "--max-unavailable", value).exit_code == code
    from gpuconf.cli import audit as command
    from gpuconf.cluster.audit import Threshold

    option, = [o for o in command.params if o.name == "max_unavailable"]
    assert option.default == Threshold.DEFAULT  # the documented default is the one the CLI uses
    for bad in ("101%", "-1", "a lot", "2.5"):
        result = run("audit", "examples/airgapped.yaml", "--nodes", nodes, "--max-unavailable", bad)
        assert result.exit_code == 2 and "--max-unavailable" in result.stderr
    # Half of a small pool out is drift by default: one of two new-h200 nodes.
    node = _node("hybrid", "new-h200", 0)
    node["spec"]["unschedulable"] = True
    other = _node("hybrid", "new-h200", 1)
    found = [(f.code, f.severity) for f in _audit("hybrid", [node, other]).findings if f.pool == "new-h200"]
    assert ("GA122", "error") in found


def test_mig_capacity_names_the_mig_manager_not_the_device_plugin():
    plan = NL.load_plan("heterogeneous")
    found = [f for f in _audit("heterogeneous", NL.drifted_nodes("heterogeneous", plan)).findings
             if f.code == "GA107" and f.node == NL.node_name(plan, "infer-a100", 0)]
    assert len(found) == 1 and "nvidia-mig-manager" in found[0].hint and "device plugin pod" not in found[0].hint


def test_text_output_escapes_what_the_nodes_say(tmp_path):
    """A label value with a line break (or U+2028) cannot start a line of its own in the text report."""
    from gpuconf.cluster.audit import format_text

    node = _node("single-pool", "l40s")
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "X\nsummary: 0 errors\u2028GA999"
    node["metadata"]["labels"]["nvidia.com/mig.strategy"] = "mixed\r\nforged"
    text = format_text(_audit("single-pool", [node]))
    assert "\u2028" not in text and "\r" not in text
    assert [line for line in text.splitlines() if line.startswith("summary:")] == [text.splitlines()[-1]]
    assert "X\\nsummary: 0 errors\\u2028GA999" in text


def test_messages_about_a_node_source_stay_on_one_line(run, tmp_path):
    path = tmp_path / "nodes\nforged: line\u2028.json"
    path.write_text("[]", encoding="utf-8")
    result = run("audit", "examples/single-pool.yaml", "--nodes", str(path))
    assert result.exit_code == 2
    line, = result.stderr.splitlines()
    assert "nodes\\nforged: line\\u2028.json" in line
    path.write_text((FIXTURES / "single-pool.json").read_text(encoding="utf-8"), encoding="utf-8")
    result = run("audit", "examples/single-pool.yaml", "--nodes", str(path))
    assert result.exit_code == 0 and result.stdout.splitlines()[0].endswith("nodes\\nforged: line\\u2028.json")


def test_the_clients_log_lines_become_gpuconf_lines(tmp_path):
    """The kubeconfig loader logs a failed exec credential plugin through the root logger, which also makes logging
    print urllib3's retries; a real process (not the in-process runner, whose logging pytest captures) prints
    neither, only gpuconf's own lines."""
    import yaml

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
              "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
              "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
              "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                        "command": sys.executable,
                                                        "args": ["-c", "raise SystemExit(1)"]}}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "gpuconf", "audit", "examples/single-pool.yaml", "--kubeconfig",
                           str(path)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    note, error = done.stderr.splitlines()
    assert note == "gpuconf: warning: the Kubernetes client reported: exec: process returned 1"
    assert error.startswith(f"gpuconf: cannot reach the cluster at http://127.0.0.1:{port}: ")

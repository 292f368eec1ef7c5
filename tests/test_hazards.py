"""The known-hazards table (profiles/hazards.json) and the checks that read it (issue 30)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from gpuconf import hazards as H

REPO_ROOT = Path(__file__).resolve().parent.parent
CURATED = REPO_ROOT / "tools" / "reference" / "hazards.yaml"


def _derive():
    spec = importlib.util.spec_from_file_location("derive_hazards", REPO_ROOT / "tools" / "derive_hazards.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# --- the table -----------------------------------------------------------------------------------------------


def test_committed_table_is_what_the_script_derives_from_the_curated_file() -> None:
    derive = _derive()
    data = derive.derive_bytes(CURATED)
    assert data == derive.derive_bytes(CURATED)  # byte-stable
    assert (REPO_ROOT / "profiles" / "hazards.json").read_bytes() == data, \
        "profiles/hazards.json is stale: run python tools/derive_hazards.py"


def test_the_table_has_at_least_25_cited_entries() -> None:
    table = H.table()
    assert len(table["hazards"]) >= 25
    for entry in table["hazards"]:
        assert entry["sources"], entry["id"]
        for src in entry["sources"]:
            assert src["page"] in ("release-notes.rst", "platform-support.rst") and src["line"] > 0 and src["words"]
    assert table["generated"]["inputs"]["tools/reference/hazards.yaml"].startswith("sha256:")


def _reference(tmp_path: Path) -> Path:
    """A reference folder holding the two pages as the curated file saw them, rebuilt from its own citations:
    each cited line holds its words, so verify() passes; the hashes are made to match."""
    derive = _derive()
    curated, _ = derive.load_curated(CURATED)
    pages: dict[str, dict[int, str]] = {}
    for entry in curated["hazards"]:
        for src in entry["sources"]:
            line = pages.setdefault(src["page"], {}).setdefault(src["line"], "")
            pages[src["page"]][src["line"]] = line + " " + " ".join(str(w) for w in src["words"])
    for value in curated["validatedDrivers"].values():
        for src in value["sources"]:
            pages.setdefault(src["page"], {})[src["line"]] = " ".join(src["words"])
    docs = tmp_path / "gpu-operator" / "docs"
    docs.mkdir(parents=True)
    for page, lines in pages.items():
        text = "".join((lines.get(n, "") + "\n") for n in range(1, max(lines) + 1))
        (docs / page).write_text(text, encoding="utf-8")
    return tmp_path


def test_verify_accepts_lines_that_hold_their_words_and_names_one_that_does_not(tmp_path: Path) -> None:
    import hashlib

    derive = _derive()
    curated, _ = derive.load_curated(CURATED)
    ref = _reference(tmp_path)
    for page in curated["pages"]:
        curated["pages"][page] = "sha256:" + hashlib.sha256((ref / "gpu-operator/docs" / page).read_bytes()).hexdigest()
    assert derive.verify(curated, ref, None) == ["chart rules (no --charts folder given)"]
    notes = ref / "gpu-operator/docs/release-notes.rst"
    lines = notes.read_text(encoding="utf-8").splitlines()
    lines[818] = "For drivers 570.124.06 and 570.133.20"  # line 819 loses two of its versions
    notes.write_text("\n".join(lines) + "\n", encoding="utf-8")
    curated["pages"]["release-notes.rst"] = "sha256:" + hashlib.sha256(notes.read_bytes()).hexdigest()
    with pytest.raises(derive.DeriveError, match=r"hazard driver-570-mig-with-whole-gpus: release-notes.rst:819 "
                                                 r"does not say '570.148.08'"):
        derive.verify(curated, ref, None)
    curated["pages"]["release-notes.rst"] = "sha256:" + "0" * 64
    with pytest.raises(derive.DeriveError, match="the page changed; re-check every line cited from it"):
        derive.verify(curated, ref, None)


def test_verify_checks_each_chart_rule_against_the_chart_template(tmp_path: Path) -> None:
    derive = _derive()
    curated, _ = derive.load_curated(CURATED)
    curated["hazards"], curated["validatedDrivers"], curated["pages"] = [], {}, {}
    rule = curated["chartRules"][0]
    folder = tmp_path / "v26.7.0" / "gpu-operator" / "templates"
    folder.mkdir(parents=True)
    template = folder / "validations.yaml"
    template.write_text('{{- if and .Values.clusterPolicy.deployCR .Values.gpuCluster.deployCR }}\n'
                        '{{ fail "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true" }}\n', "utf-8")
    curated["chartRules"] = [rule]
    assert derive.verify(curated, tmp_path, tmp_path) == []
    template.write_text('{{- if .Values.clusterPolicy.deployCR }}\n'
                        '{{ fail "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true" }}\n', "utf-8")
    with pytest.raises(derive.DeriveError, match="does not read gpuCluster.deployCR"):
        derive.verify(curated, tmp_path, tmp_path)


def test_build_refuses_an_unknown_condition_and_a_short_table() -> None:
    derive = _derive()
    curated, digest = derive.load_curated(CURATED)
    curated["hazards"][0]["appliesTo"]["gpu"] = ["A100-80GB"]
    with pytest.raises(derive.DeriveError, match=r"unknown condition 'gpu' \(known: arch, charts"):
        derive.build(curated, digest)
    curated, digest = derive.load_curated(CURATED)
    curated["hazards"] = curated["hazards"][:24]
    with pytest.raises(derive.DeriveError, match="the table has 24 hazards; the issue asks for at least 25"):
        derive.build(curated, digest)


def test_script_stops_when_a_page_does_not_hash_as_the_curated_file_says(tmp_path: Path, capsys) -> None:
    derive = _derive()
    ref = _reference(tmp_path)
    # The committed hashes are of the real pages; against the stand-in pages the check must say the page changed.
    assert derive.main(["--reference", str(ref), "--check"]) == 2
    assert "the page changed" in capsys.readouterr().err


# --- matching ----------------------------------------------------------------------------------------------------


def test_version_ranges_compare_numerically() -> None:
    assert H.version_key("570.148.08") < H.version_key("570.172.08") < H.version_key("580")
    assert H.version_key("v1.17.0-ubuntu20.04") == (1, 17, 0)
    hazard = next(h for h in H.hazards() if h.id == "rtx-pro-6000-driver-floor")
    assert H.judge(hazard, H.Facts(gpu="RTX-PRO-6000", driver="570.172.08")).applies
    assert not H.judge(hazard, H.Facts(gpu="RTX-PRO-6000", driver="575.57.08")).applies
    undecided = H.judge(hazard, H.Facts(gpu="RTX-PRO-6000"))
    assert not undecided.applies and undecided.unknown == ("drivers",)


def test_an_entry_of_the_table_is_judged_once_per_facts_and_any_other_entry_afresh() -> None:
    """judge keeps the table's verdicts per distinct facts (a fleet's pools mostly share theirs); an entry that is not
    the table's own object, even an equal one, is judged on its own and its verdict names it."""
    import dataclasses

    facts = H.Facts(chart="v26.7.0", gpu="RTX-PRO-6000", driver="570.172.08", features=frozenset({"managed"}))
    for entry in H.hazards():
        first = H.judge(entry, facts)
        assert H.judge(entry, H.Facts(**dataclasses.asdict(facts))) is first  # equal facts share the verdict
        stranger = dataclasses.replace(entry, applies={**entry.applies})
        verdict = H.judge(stranger, facts)
        assert verdict.hazard is stranger and (verdict.failed, verdict.unknown) == (first.failed, first.unknown)
    changed = dataclasses.replace(next(h for h in H.hazards() if h.id == "rtx-pro-6000-driver-floor"),
                                  applies={"gpus": ["H200"]})
    assert H.judge(changed, facts).failed == ("gpus",)  # its own conditions, not the table entry's verdict


# --- validate: the hazards an intent enters, per pool ----------------------------------------------------------


def _intent(tmp_path: Path, pools: str, driver: str = "", extra: str = "", chart: str = "v26.7.0",
            kubernetes: str = "1.33") -> Path:
    path = tmp_path / "intent.yaml"
    path.write_text(f"""apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: lab
spec:
  cluster:
    kubernetesVersion: "{kubernetes}"
  operator:
    chartVersion: {chart}
{driver}{extra}  pools:
{pools}""", encoding="utf-8")
    return path


A100_MIXED = """    - name: a100-mig
      gpu: A100-80GB
      gpusPerNode: 8
      nodes: 2
      match: {nodeLabels: {node-type: a100-mig}}
      sharing: mixed-slices
    - name: a100-whole
      gpu: A100-80GB
      gpusPerNode: 8
      nodes: 2
      match: {nodeLabels: {node-type: a100}}
"""
MIXED_PROFILE = """  sharingProfiles:
    mixed-slices: {mig: {layout: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}}
"""


def test_a_mixed_mig_a100_pool_next_to_whole_a100s_on_driver_570_148_08_enters_the_hazard(run, tmp_path):
    path = _intent(tmp_path, A100_MIXED, '  driver: {version: "570.148.08"}\n', MIXED_PROFILE)
    result = run("validate", "--format", "json", str(path))
    findings = json.loads(result.stdout)
    hazard = [f for f in findings if f["code"] == "GC460"]
    assert [(f["severity"], f["path"], f["line"]) for f in hazard] == [("warning", "spec.driver.version", 10)]
    assert hazard[0]["message"] == (
        "known hazard driver-570-mig-with-whole-gpus (pool a100-mig, GPU A100-80GB, driver 570.148.08): GPU pods stay "
        "Pending forever on nodes that carry MIG slices next to full GPUs (in the intent: MIG and whole GPUs of one "
        "model under the mixed strategy; a node that carries both is what breaks)")
    assert hazard[0]["hint"] == ("run driver 570.172.08 (or a later branch) on these nodes; source: "
                                 "gpu-operator/release-notes.rst:819,820,822,885 (NVIDIA/cloud-native-docs)")
    assert result.exit_code == 0  # a warning: the audit reports the node that carries both (test_audit_... below)
    fixed = _intent(tmp_path, A100_MIXED, '  driver: {version: "570.172.08"}\n', MIXED_PROFILE)
    findings = json.loads(run("validate", "--format", "json", str(fixed)).stdout)
    assert [f for f in findings if f["code"] == "GC460"] == []


def test_rtx_pro_6000_below_its_floor_and_with_mig_on_its_first_driver_is_refused(run, tmp_path):
    pools = """    - name: rtx
      gpu: RTX-PRO-6000
      gpusPerNode: 4
      nodes: 1
      match: {pciDevice: true}
      driver: {version: "570.172.08"}
"""
    findings = json.loads(run("validate", "--format", "json", str(_intent(tmp_path, pools))).stdout)
    assert [(f["code"], f["severity"], f["path"]) for f in findings if f["code"] == "GC461"] == [
        ("GC461", "error", "spec.pools[0].driver.version")]
    assert "rtx-pro-6000-driver-floor" in next(f["message"] for f in findings if f["code"] == "GC461")
    mig = pools.replace('      driver: {version: "570.172.08"}\n',
                        '      driver: {version: "575.57.08"}\n      sharing: halves\n')
    profile = '  sharingProfiles:\n    halves: {mig: {preset: all-balanced}}\n'
    findings = json.loads(run("validate", "--format", "json", str(_intent(tmp_path, mig, extra=profile))).stdout)
    assert [(f["code"], f["path"]) for f in findings if f["code"] in ("GC461", "GC463")] == [
        ("GC463", "spec.pools[0].driver.version")]
    assert "rtx-pro-6000-mig-driver" in next(f["message"] for f in findings if f["code"] == "GC463")
    below = mig.replace("575.57.08", "570.172.08")
    findings = json.loads(run("validate", "--format", "json", str(_intent(tmp_path, below, extra=profile))).stdout)
    assert sorted((f["code"], f["path"]) for f in findings if f["code"] in ("GC461", "GC463")) == [
        ("GC461", "spec.pools[0].driver.version"), ("GC463", "spec.pools[0].driver.version")]


def test_a_b200_pool_below_570_133_20_is_refused(run, tmp_path):
    pools = """    - name: b200
      gpu: B200
      gpusPerNode: 8
      nodes: 1
      match: {pciDevice: true}
      driver: {version: "570.124.06"}
"""
    findings = json.loads(run("validate", "--format", "json", str(_intent(tmp_path, pools))).stdout)
    assert [(f["code"], f["severity"], f["path"]) for f in findings if f["code"] == "GC461"] == [
        ("GC461", "error", "spec.pools[0].driver.version")]
    hint = next(f["hint"] for f in findings if f["code"] == "GC461")
    assert hint == "run driver 570.133.20 or later on the pool; source: gpu-operator/platform-support.rst:216 " \
                   "(NVIDIA/cloud-native-docs)"
    ok = pools.replace("570.124.06", "570.133.20")
    findings = json.loads(run("validate", "--format", "json", str(_intent(tmp_path, ok))).stdout)
    assert [f for f in findings if f["code"] == "GC461"] == []


def test_gh200_without_open_kernel_modules_is_refused(run, tmp_path):
    pools = """    - name: gh200
      gpu: GH200
      gpusPerNode: 1
      nodes: 2
      match: {pciDevice: true}
"""
    path = _intent(tmp_path, pools, "  driver: {kernelModuleType: proprietary}\n")
    result = run("validate", "--format", "json", str(path))
    findings = json.loads(result.stdout)
    assert [(f["code"], f["severity"], f["path"]) for f in findings if f["code"] == "GC462"] == [
        ("GC462", "error", "spec.driver.kernelModuleType")]
    assert result.exit_code == 1
    for modules in ("open", "auto"):  # auto installs the open modules with the chart's 595 driver
        path = _intent(tmp_path, pools, f"  driver: {{kernelModuleType: {modules}}}\n")
        assert [f for f in json.loads(run("validate", "--format", "json", str(path)).stdout)
                if f["code"] == "GC462"] == []


# --- gpuconf hazards and the docs page ---------------------------------------------------------------------------


def test_hazards_json_lists_every_entry_with_its_source(run):
    result = run("hazards", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [h["id"] for h in data["hazards"]] == sorted(h["id"] for h in H.table()["hazards"])
    assert len(data["hazards"]) >= 25
    for entry in data["hazards"]:
        assert entry["sources"] and entry["source"].endswith("(NVIDIA/cloud-native-docs)"), entry["id"]
    mixed = next(h for h in data["hazards"] if h["id"] == "driver-570-mig-with-whole-gpus")
    assert mixed["source"] == "gpu-operator/release-notes.rst:819,820,822,885 (NVIDIA/cloud-native-docs)"
    assert [r["id"] for r in data["chartRules"]][:2] == ["one-allocation-cr", "gpucluster-needs-nvidiadriver-crd"]


def test_hazards_of_an_intent_say_what_applies_what_it_avoids_and_what_depends_on_the_nodes(run, tmp_path):
    path = _intent(tmp_path, A100_MIXED, '  driver: {version: "570.172.08"}\n', MIXED_PROFILE)
    result = run("hazards", "--format", "json", str(path))
    assert result.exit_code == 0
    found = {h["id"]: (h["status"], h["pools"], h["conditions"]) for h in json.loads(result.stdout)["hazards"]}
    assert found["driver-570-mig-with-whole-gpus"] == ("avoided", ["a100-mig"], ["drivers"])
    assert found["ubuntu-2204-kernels"] == ("undecided", ["a100-mig", "a100-whole"], ["kernels", "os"])
    assert "os-kubernetes-ubuntu2204" not in found  # Kubernetes 1.33 is in its range: it cannot apply
    broken = _intent(tmp_path, A100_MIXED, '  driver: {version: "570.148.08"}\n', MIXED_PROFILE)
    result = run("hazards", str(broken))
    assert result.exit_code == 1
    assert ("driver-570-mig-with-whole-gpus (GC460, error): applies to pools a100-mig\n  breaks: GPU pods stay Pending "
            "forever on nodes that carry MIG slices next to full GPUs\n") in result.stdout
    markdown = run("hazards", "--format", "markdown", str(broken)).stdout
    assert markdown.startswith("# Known hazards of lab\n\n| hazard | severity | status |")


def test_the_docs_page_of_the_hazards_is_the_generated_table():
    from gpuconf.output.hazards import table_markdown

    page = (REPO_ROOT / "docs" / "reference" / "hazards.md").read_text(encoding="utf-8")
    assert page.endswith(table_markdown()), "docs/reference/hazards.md is stale: run `make docs-gen`"
    for hazard in H.hazards():
        assert f"## {hazard.id}\n" in page


# --- audit: the hazards the nodes enter with what they report ----------------------------------------------------


def _nodes_with(tmp_path: Path, edit) -> Path:
    data = json.loads((REPO_ROOT / "tests" / "fixtures" / "nodes" / "heterogeneous.json").read_text("utf-8"))
    edit(data["items"])
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _pool_node(items: list, pool: str) -> dict:
    return next(n for n in items if n["metadata"]["labels"].get("gpuconf.dev/pool") == pool)


def test_audit_reports_a_node_that_mixes_mig_and_whole_gpus_on_a_broken_570_driver(run, tmp_path):
    def edit(items):
        node = _pool_node(items, "infer-a100")
        labels = node["metadata"]["labels"]
        for key, value in (("full", "570.148.08"), ("major", "570"), ("minor", "148"), ("revision", "08")):
            labels[f"nvidia.com/cuda.driver-version.{key}"] = value
        node["status"]["capacity"]["nvidia.com/gpu"] = "2"  # two of its GPUs left whole next to the slices

    result = run("audit", "examples/heterogeneous.yaml", "--nodes", str(_nodes_with(tmp_path, edit)), "--format",
                 "json")
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"].startswith("GA13")]
    assert [(f["severity"], f["code"], f["pool"], f["message"]) for f in findings] == [
        ("error", "GA131", "infer-a100", "known hazard driver-570-mig-with-whole-gpus: GPU pods stay Pending forever "
                                         "on nodes that carry MIG slices next to full GPUs")]
    assert findings[0]["evidence"]["driver"] == "570.148.08"
    assert findings[0]["hint"].endswith("source: gpu-operator/release-notes.rst:819,820,822,885 "
                                        "(NVIDIA/cloud-native-docs)")
    assert result.exit_code == 1


def test_audit_reports_a_kernel_the_ubuntu_2204_driver_containers_do_not_support(run, tmp_path):
    def edit(items):
        info = _pool_node(items, "train-h100")["status"]["nodeInfo"]
        info["osImage"], info["kernelVersion"] = "Ubuntu 22.04.5 LTS", "6.2.0-39-generic"

    result = run("audit", "examples/heterogeneous.yaml", "--nodes", str(_nodes_with(tmp_path, edit)), "--format",
                 "json")
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"].startswith("GA13")]
    assert [(f["severity"], f["code"], f["pool"], f["message"]) for f in findings] == [
        ("warning", "GA132", "train-h100", "known hazard ubuntu-2204-kernels: the driver containers on Ubuntu 22.04 "
                                           "support the 5.15, 6.5 and 6.8 kernels only")]
    assert findings[0]["evidence"]["kernelVersion"] == "6.2.0-39-generic"
    clean = run("audit", "examples/heterogeneous.yaml", "--nodes",
                str(REPO_ROOT / "tests" / "fixtures" / "nodes" / "heterogeneous.json"), "--format", "json")
    assert [f for f in json.loads(clean.stdout)["findings"] if f["code"].startswith("GA13")] == []


# --- the chart's own fail rules ----------------------------------------------------------------------------------


def test_values_a_chart_fail_rule_refuses_are_an_intent_finding(run, tmp_path):
    pools = """    - name: l4
      gpu: L4
      gpusPerNode: 1
      nodes: 1
      match: {pciDevice: true}
"""
    extra = """  overrides:
    - path: gpuCluster.deployCR
      value: true
      why: The GPUCluster is deployed next to the policy to try the DRA stack on this cluster.
"""
    findings = json.loads(run("validate", "--format", "json", str(_intent(tmp_path, pools, extra=extra))).stdout)
    refused = [f for f in findings if f["code"] == "GC468"]
    assert [(f["severity"], f["path"]) for f in refused] == [("error", "spec.overrides[0].path")] * 3
    assert [f["message"].split(" (")[1].split(":")[0] for f in refused] == [
        "gpucluster-needs-dra-api", "gpucluster-needs-nvidiadriver-crd", "one-allocation-cr"]  # Kubernetes 1.33
    assert refused[2]["message"].startswith("chart v26.7.0 refuses these values at sync (one-allocation-cr: the chart "
                                            "deploys either the ClusterPolicy or the GPUCluster, never both): "
                                            "clusterPolicy.deployCR is true, gpuCluster.deployCR is true")
    assert refused[2]["hint"].endswith("source: the chart's templates/validations.yaml:2 (NVIDIA/gpu-operator gh-pages "
                                       "stable/gpu-operator-v26.7.0.tgz)")
    on_134 = _intent(tmp_path, pools, extra=extra, kubernetes="1.34")
    findings = json.loads(run("validate", "--format", "json", str(on_134)).stdout)
    assert len([f for f in findings if f["code"] == "GC468"]) == 2  # 1.34 serves resource.k8s.io/v1


# --- REPORT.md and report.json ----------------------------------------------------------------------------------


def test_the_report_lists_the_hazards_that_apply_and_those_a_choice_avoids(tmp_path):
    from gpuconf.pipeline import render_path

    broken = _intent(tmp_path, A100_MIXED, '  driver: {version: "570.148.08"}\n', MIXED_PROFILE)
    files = render_path(str(broken), str(tmp_path / "out")).tree.files
    hazards = json.loads(files["report.json"])["hazards"]
    assert [(h["id"], h["pools"]) for h in hazards["applies"]] == [("driver-570-mig-with-whole-gpus", ["a100-mig"])]
    assert ("| `driver-570-mig-with-whole-gpus` (GC460) | error | applies to pools a100-mig | GPU pods stay Pending "
            "forever on nodes that carry MIG slices next to full GPUs | run driver 570.172.08 (or a later branch) on "
            "these nodes | gpu-operator/release-notes.rst:819,820,822,885 (NVIDIA/cloud-native-docs) |") \
        in files["REPORT.md"]
    fixed = _intent(tmp_path, A100_MIXED, '  driver: {version: "570.172.08"}\n', MIXED_PROFILE)
    files = render_path(str(fixed), str(tmp_path / "out")).tree.files
    hazards = json.loads(files["report.json"])["hazards"]
    assert hazards["applies"] == []
    avoided = {h["id"]: h["where"] for h in hazards["avoided"]}
    assert avoided["driver-570-mig-with-whole-gpus"] == "avoided by the intent's driver version (pools a100-mig)"
    assert "| `driver-570-mig-with-whole-gpus` (GC460) | avoided by the intent's driver version (pools a100-mig) |" \
        in files["REPORT.md"]


def test_a_chart_move_onto_a_version_with_a_known_issue_for_the_cluster_is_a_hazard_impact(run, tmp_path):
    pools = """    - name: l4
      gpu: L4
      gpusPerNode: 1
      nodes: 1
      match: {pciDevice: true}
"""
    onto = json.loads(run("diff", str(_intent(tmp_path, pools, kubernetes="1.37")), "--to-chart", "v26.3.3",
                          "--format", "json").stdout)
    assert [(i["severity"], i["message"]) for i in onto["impacts"] if i["kind"] == "hazard"] == [
        ("pending", "the change enters known hazard chart-v26-3-kubernetes (applies to the cluster): the 26.3 charts "
                    "are validated up to Kubernetes 1.36 (added in v26.3.2)")]
    back = _intent(tmp_path, pools, chart="v26.3.3", kubernetes="1.37")
    off = json.loads(run("diff", str(back), "--to-chart", "v26.7.0", "--format", "json").stdout)
    assert [(i["severity"], i["message"].split(" (")[0]) for i in off["impacts"] if i["kind"] == "hazard"] == [
        ("none", "the change leaves known hazard chart-v26-3-kubernetes")]


def test_a_render_takes_over_the_values_the_hazard_rules_planned_for_its_intent_and_document() -> None:
    """Validation's hazard rules plan the intent's values from its document; a render of that intent from that
    document takes the builder over, one from another document plans its own, and both write the same bytes."""
    import gc

    from gpuconf import plan as P
    from gpuconf.intent.loader import load_file
    from gpuconf.intent.validate import validate_document
    from gpuconf.render.tree import Command, render_tree

    path = str(REPO_ROOT / "examples" / "heterogeneous.yaml")
    validation = validate_document(load_file(path, "heterogeneous.yaml"))
    assert validation.ok
    plan = P.build(validation.intent, "heterogeneous.yaml", validation.document)
    shared = H.planned_values(plan)
    assert shared is not None
    tree = render_tree(plan, Command("heterogeneous.yaml", "out"))
    assert tree.values is shared
    elsewhere = P.build(validation.intent, "heterogeneous.yaml", load_file(path, "heterogeneous.yaml"))
    assert H.planned_values(elsewhere) is None
    again = render_tree(elsewhere, Command("heterogeneous.yaml", "out"))
    assert again.values is not shared and again.files == tree.files
    key = id(validation.intent)
    del validation, plan, elsewhere, tree, again, shared
    gc.collect()
    assert key not in H._PLANNED  # forgotten with its intent

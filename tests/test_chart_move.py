"""A chart move through the impact plan (issue 27, item 2): `diff --to-chart` leads with the plan of the move (the
intent rendered on the new chart against its render on the current one), its CRD section, the NFD subchart move,
the defaults that flip and the values keys that go; `diff --against` of a chartVersion edit says the same; the
advice is possible (the pins it names keep the driver out of the move)."""

from __future__ import annotations

import json
from pathlib import Path

from gpuconf import catalog

ROOT = Path(__file__).resolve().parent.parent
SINGLE = ROOT / "examples" / "single-pool.yaml"
CRDS_26_7 = {"ClusterPolicy": "changed", "NVIDIADriver": "changed", "GPUCluster": "new", "ComputeDomain": "new",
             "ComputeDomainClique": "new"}


def _pinned(tmp_path: Path, driver: str, manager: str | None) -> Path:
    """examples/single-pool.yaml with the driver (and, when given, the driver manager) pinned."""
    text = SINGLE.read_text(encoding="utf-8")
    assert "  operator:\n    chartVersion: v26.3.3\n" in text
    pins = f"  driver:\n    version: \"{driver}\"\n"
    if manager is not None:
        pins += (f"  overrides:\n    - path: driver.manager.version\n      value: {manager}\n"
                 "      why: keep the driver pod through the chart move\n")
    path = tmp_path / "single-pool.yaml"
    path.write_text(text.replace("  operator:\n", pins + "  operator:\n", 1), encoding="utf-8")
    return path


def test_to_chart_json_holds_the_driver_upgrade_the_crds_the_nfd_move_and_the_flipped_defaults(run):
    result = run("diff", str(SINGLE), "--to-chart", "v26.7.0", "--format", "json")
    assert result.exit_code == 0, result.stdout
    move = json.loads(result.stdout)
    assert move["worst"] == "disruptive"
    driver = [i for i in move["impacts"] if i["kind"] == "driver-upgrade"]
    assert [(i["severity"], i["pools"], i["nodes"]) for i in driver] == [("disruptive", ["l40s"], 3)]
    assert "changes from 580.126.20 to 595.91.07" in driver[0]["message"]
    chart = move["chartMove"]
    assert {c["kind"]: c["status"] for c in chart["crds"]} == CRDS_26_7
    fields = {c["kind"]: c["added"] for c in chart["crds"] if c["status"] == "changed"}
    assert fields == {"ClusterPolicy": ["spec.dcgmExporter.serviceMonitor.scrapeTimeout",
                                        "spec.hostPaths.kubeletRootDir", "spec.operator.metrics"],
                      "NVIDIADriver": ["spec.default", "spec.upgradePolicy"]}
    assert "kubectl apply --server-side -f gpu-operator/crds/" in chart["crdStep"]
    assert chart["nfd"] == {"from": "0.18.3", "to": "0.19.0"}
    assert [(f["path"], f["old"], f["new"], f["effect"]) for f in chart["flippedDefaults"]] == [
        ("dcgmExporter.serviceMonitor.enabled", False, True, "applies")]
    # charts/versions.md §3 lists no parent key removed at v26.7.0; NFD 0.19.0's own values.yaml drops three of
    # 0.18.3's, which the intent does not set
    assert [(r["path"], r["renamedTo"], r["setByValues"]) for r in chart["removedKeys"]] == [
        ("node-feature-discovery.featureGates.NodeFeatureGroupAPI", None, False),
        ("node-feature-discovery.master.livenessProbe", None, False),
        ("node-feature-discovery.worker.updateStrategy", None, False)]
    upgrade = next(i for i in move["impacts"] if i["kind"] == "operator-upgrade")
    # The move itself reinstalls the driver: no advice to make it "its own commit, with no driver change".
    assert "no driver, sharing or pool change" not in upgrade["safe"]
    assert "this move reinstalls the driver of pool(s) l40s itself" in upgrade["safe"]
    assert '`spec.driver.version: "580.126.20"`, override `driver.manager.version: v0.11.0`' in upgrade["safe"]


def test_to_chart_text_leads_with_the_plan_and_the_chart_section(run):
    result = run("diff", str(SINGLE), "--to-chart", "v26.7.0")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[1] == "Impact on lab when it moves to chart v26.7.0: 4 impact(s), worst: disruptive"
    assert lines[2] == "  DISRUPTIVE driver-upgrade [l40s] (3 nodes)"
    at = {name: next(n for n, line in enumerate(lines) if line.startswith(name)) for name in (
        "  CRDs that differ (5; Helm never upgrades a chart's crds/):", "  NFD subchart 0.18.3 -> 0.19.0",
        "    dcgmExporter.serviceMonitor.enabled: false -> true (applies", "Base defaults that changed")}
    assert list(at.values()) == sorted(at.values())
    markdown = run("diff", str(SINGLE), "--to-chart", "v26.7.0", "--format", "markdown").stdout
    assert "### Chart move v26.3.3 -> v26.7.0" in markdown
    assert "  - GPUCluster (nvidia.com, nvidia.com_gpuclusters.yaml): new kind" in markdown


def test_to_chart_fail_on_disruptive_and_the_pins_the_advice_names_keep_the_driver(run, tmp_path):
    assert run("diff", str(SINGLE), "--to-chart", "v26.7.0", "--fail-on", "disruptive").exit_code == 1
    assert run("diff", str(SINGLE), "--to-chart", "v26.7.0", "--fail-on", "restart").exit_code == 1
    pinned = _pinned(tmp_path, "580.126.20", "v0.11.0")
    result = run("diff", str(pinned), "--to-chart", "v26.7.0", "--fail-on", "disruptive", "--format", "json")
    assert result.exit_code == 0, result.stdout
    move = json.loads(result.stdout)
    assert "driver-upgrade" not in {i["kind"] for i in move["impacts"]}
    assert move["worst"] == "pending"  # the probe Job's image moves with the chart: a plain apply refuses it
    assert [(i["kind"], i["severity"]) for i in move["impacts"]][0] == ("probe-run", "pending")
    only_driver = _pinned(tmp_path, "580.126.20", None)  # the manager still moves: the driver pod changes
    result = run("diff", str(only_driver), "--to-chart", "v26.7.0", "--fail-on", "disruptive", "--format", "json")
    assert result.exit_code == 1
    assert [i["kind"] for i in json.loads(result.stdout)["impacts"]][0] == "driver-upgrade"
    assert run("diff", str(SINGLE), "--fail-on", "disruptive").exit_code == 2  # neither --against nor --to-chart


def test_against_a_chart_version_edit_has_the_same_chart_section_and_says_the_driver_stays(run, tmp_path):
    pinned = _pinned(tmp_path, "595.91.07", None)  # v26.7.0's default driver, pinned on v26.3.3
    out = tmp_path / "out"
    assert run("render", str(pinned), "-o", str(out)).exit_code == 0
    assert "  version: 595.91.07\n" in (out / "lab" / "values.yaml").read_text(encoding="utf-8")
    pinned.write_text(pinned.read_text(encoding="utf-8").replace("chartVersion: v26.3.3", "chartVersion: v26.7.0"),
                      encoding="utf-8")
    result = run("diff", str(pinned), "--against", str(out), "--format", "json")
    body = json.loads(result.stdout)
    move = run("diff", str(SINGLE), "--to-chart", "v26.7.0", "--format", "json")
    assert body["chartMove"] == json.loads(move.stdout)["chartMove"]
    upgrade = next(i for i in body["impacts"] if i["kind"] == "operator-upgrade")
    assert "the driver stays 595.91.07 (now the chart's default, so values.yaml drops the pin)" in upgrade["message"]
    text = run("diff", str(pinned), "--against", str(out)).stdout
    assert "  CRD step: before `helm upgrade`, apply the new CRDs" in text


def test_the_chart_facts_hold_each_versions_crds():
    old, new = catalog.chart("v26.3.3"), catalog.chart("v26.7.0")
    assert sorted(c["kind"] for c in new.crds.values()) == sorted(CRDS_26_7)
    assert sorted(c["kind"] for c in old.crds.values()) == ["ClusterPolicy", "NVIDIADriver"]
    policy = "nvidia.com_clusterpolicies.yaml"
    assert "spec.driver.upgradePolicy.podDeletion" in old.crds[policy]["fields"]
    assert "spec.hostPaths.kubeletRootDir" in new.crds[policy]["fields"]
    assert "spec.hostPaths.kubeletRootDir" not in old.crds[policy]["fields"]


def test_the_readme_links_the_chart_move_section_and_the_review_page_says_what_it_holds():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/how-to/review.md#moving-to-another-chart-version)" in readme
    review = (ROOT / "docs" / "how-to" / "review.md").read_text(encoding="utf-8")
    assert "## Moving to another chart version\n" in review
    for words in ("**CRDs that differ**", "kubectl apply\n  --server-side", "**The NFD subchart move**",
                  "**Defaults that flip**", "**Values keys removed or renamed**", "the driver stays X"):
        assert words in review, words

"""Every GPU Operator chart release from v24.9.0 to v26.7.0 (issue 41): each release's facts are read off its own chart
(tools/derivation/charts.py runs gpuconf.chartfacts on NVIDIA's tarballs); a representative intent renders on every
release (golden values.yaml where a release's differs from its neighbour's); what a release cannot do is refused
naming the first release that can; a move that skips a major release is refused with NVIDIA's supported path; a
driver outside the pinned release's component matrix is a warning; a values key a release removed names its
replacement. Tests read gpuconf's derived facts, never the charts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpuconf import catalog
from gpuconf.chartfacts import releases

ROOT = Path(__file__).resolve().parent.parent
SINGLE = ROOT / "examples" / "single-pool.yaml"
GOLDEN = ROOT / "tests" / "golden" / "releases"
RELEASES = catalog.chart_versions()
#: charts/versions.md §1 (the reference's table of the 15 tarballs): every release from v24.9.0 to v26.7.0.
SHIPPED = ("v24.9.0", "v24.9.1", "v24.9.2", "v25.3.0", "v25.3.1", "v25.3.2", "v25.3.3", "v25.3.4", "v25.10.0",
           "v25.10.1", "v26.3.0", "v26.3.1", "v26.3.2", "v26.3.3", "v26.7.0")


def _on(tmp_path: Path, version: str, text: str | None = None, name: str = "intent.yaml") -> Path:
    """examples/single-pool.yaml (or text) pinned to a release."""
    body = (text if text is not None else SINGLE.read_text(encoding="utf-8"))
    assert "chartVersion: v26.3.3" in body
    path = tmp_path / name
    path.write_text(body.replace("chartVersion: v26.3.3", f"chartVersion: {version}", 1), encoding="utf-8")
    return path


def test_gpuconf_ships_the_facts_of_every_release_since_v24_9_0_and_a_row_for_each():
    assert RELEASES == SHIPPED
    table = catalog.chart_table()
    assert releases.ordered(table["releases"]) == list(SHIPPED)  # JSON keys sort as strings
    for version in SHIPPED:
        facts = catalog.chart(version)
        assert facts is not None and facts.version == version
        # charts/versions.md §1: the chart's own driver default; the index row repeats it
        assert table["releases"][version]["defaultDriver"] == facts.shared_defaults["driver"]["version"]
        assert table["releases"][version]["capabilities"] == dict(facts.capabilities)
        # component-matrix.md §3: each release's default driver is one its matrix lists, marked D
        assert facts.shared_defaults["driver"]["version"] in facts.component_matrix["default"]
        assert facts.shared_defaults["driver"]["version"] in facts.component_matrix["drivers"]


@pytest.mark.parametrize(("capability", "first"), [
    # charts/versions.md §2: the NVIDIADriver CRD gained spec.default and the GPUCluster stack came with v26.7.0;
    # driver.kernelModuleType replaced useOpenKernelModules at v25.3.0; cdi.nriPluginEnabled came with v26.3.0;
    # cdi.enabled became true at v25.10.0; the ServiceMonitor default flipped at v26.7.0; hostNetwork per operand
    # came with v26.3.1.
    ("perPoolDrivers", "v26.7.0"), ("gpuClusterStack", "v26.7.0"), ("kernelModuleType", "v25.3.0"),
    ("nriPlugin", "v26.3.0"), ("cdiDefaultEnabled", "v25.10.0"), ("serviceMonitorDefault", "v26.7.0"),
    ("operandHostNetwork", "v26.3.1"), ("renderValidations", "v26.3.0"), ("mps", "v24.9.0"),
])
def test_the_capability_table_says_where_each_capability_starts(capability, first):
    assert catalog.first_release_with(capability) == first
    for version in SHIPPED:
        assert catalog.chart(version).can(capability) is (releases.version_key(version) >= releases.version_key(first))


def test_facts_read_off_the_templates_hold_the_changes_versions_md_lists():
    v24 = catalog.chart("v24.9.2")
    v25 = catalog.chart("v25.3.0")
    v26 = catalog.chart("v26.7.0")
    # §3: useOpenKernelModules left values.yaml at v25.3.0, and no template reads it any more
    assert catalog.chart_path_status("v24.9.2", "driver.useOpenKernelModules")[0] == "known"
    assert catalog.chart_path_status("v25.3.0", "driver.useOpenKernelModules")[0] == "unknown"
    assert "driver.kernelModuleType" in v25.values_read and "driver.kernelModuleType" not in v24.values_read
    # §3/§4: operator.initContainer left values.yaml at v26.3.0 while the templates read it up to v26.3.3
    assert catalog.chart_path_status("v26.3.3", "operator.initContainer.image")[0] == "template-only"
    assert catalog.chart_path_status("v26.7.0", "operator.initContainer.image")[0] == "unknown"
    # §2: devicePlugin.mps.root is dead in every release; driver.nvidiaDriverCRD.nodeSelector only in v26.7.0
    assert all("devicePlugin.mps.root" in catalog.chart(v).dead_keys for v in SHIPPED)
    assert [v for v in SHIPPED if "driver.nvidiaDriverCRD.nodeSelector" in catalog.chart(v).dead_keys] == ["v26.7.0"]
    # §2 CRD table: the ClusterPolicy CRD of v25.3.1-v25.3.4 is one file; v26.7.0 ships five CRDs
    digests = {catalog.chart(v).crds["nvidia.com_clusterpolicies.yaml"]["sha256"] for v in
               ("v25.3.1", "v25.3.2", "v25.3.3", "v25.3.4")}
    assert digests == {"sha256:f48526f9826712c3ed6e79c25deb01e08acb6e7dd8a947ffacc74dc8e3e8f106"}
    assert len(v26.crds) == 5 and len(v24.crds) == 2
    # §1: the NFD subchart each release pins
    assert [catalog.chart(v).nfd_chart_version for v in ("v24.9.0", "v25.3.0", "v25.3.1", "v25.10.0", "v26.3.0",
                                                         "v26.7.0")] == ["0.16.6", "0.17.2", "0.17.3", "0.18.2",
                                                                         "0.18.3", "0.19.0"]
    # templates/clusterpolicy.yaml: cdi.default is server-defaulted once the chart stops rendering it (v25.10.0 and
    # later: absent from values.yaml), hostPaths.kubeletRootDir in v26.7.0 where it is rendered only when set
    assert catalog.chart("v24.9.2").server_defaulted == ()
    assert v26.server_defaulted == ("/spec/cdi/default", "/spec/hostPaths/kubeletRootDir")


#: profiles/hazards.json toolkit-1-18-0-imports (release-notes.rst:540,705): v25.10.0's toolkit default, v1.18.0,
#: loses containerd's imports; gpuconf refuses the release's defaults until the toolkit is pinned past it.
TOOLKIT_PIN = ("  overrides:\n    - path: toolkit.version\n      value: v1.18.1\n"
               "      why: toolkit 1.18.0 drops containerd's imports (known issue of chart v25.10.0)\n")
#: The representative intents: a small vanilla cluster, and an air-gapped OpenShift one (registry mirror, pull
#: secrets, ServiceMonitor, toolkit path, overrides) whose values meet more of what changed between releases.
REPRESENTATIVE = {"single-pool": (SINGLE, "v26.3.3"), "airgapped": (ROOT / "examples" / "airgapped.yaml", "v26.7.0")}


def test_v25_10_0_is_refused_for_its_toolkit_until_the_toolkit_is_pinned(run, tmp_path):
    result = run("render", str(_on(tmp_path, "v25.10.0")), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "error GC464 spec.operator.chartVersion: known hazard toolkit-1-18-0-imports" in result.stdout
    assert not (tmp_path / "out").exists()


def _representative(tmp_path: Path, example: str, version: str) -> Path:
    source, pinned = REPRESENTATIVE[example]
    text = source.read_text(encoding="utf-8")
    if version == "v25.10.0":
        text = text.replace("  overrides:\n", TOOLKIT_PIN, 1) if "  overrides:\n" in text else text + TOOLKIT_PIN
    assert f"chartVersion: {pinned}" in text
    path = tmp_path / f"{example}.yaml"
    path.write_text(text.replace(f"chartVersion: {pinned}", f"chartVersion: {version}", 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("example", sorted(REPRESENTATIVE))
@pytest.mark.parametrize("version", SHIPPED)
def test_a_representative_intent_renders_on_every_release(run, tmp_path, version, example):
    intent = _representative(tmp_path, example, version)
    result = run("render", str(intent), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.stdout + result.stderr
    (values_file,) = (tmp_path / "out").glob("*/values.yaml")
    values = values_file.read_text(encoding="utf-8")
    assert f"for GPU Operator chart {version}" in values
    body = "\n".join(line for line in values.splitlines() if not line.startswith("#"))
    # The golden of the nearest release at or before this one that has its own file: a release whose values
    # equal its neighbour's has none.
    own = GOLDEN / example / version / "values.yaml"
    if os.environ.get("GPUCONF_REGEN"):
        previous = _golden_before(example, version)
        if previous is None or previous.read_text(encoding="utf-8") != body + "\n":
            own.parent.mkdir(parents=True, exist_ok=True)
            own.write_text(body + "\n", encoding="utf-8")
        elif own.exists():
            own.unlink()
    golden = own if own.exists() else _golden_before(example, version)
    assert golden is not None, f"no golden values for {version}: run make golden"
    assert body + "\n" == golden.read_text(encoding="utf-8")


def _golden_before(example: str, version: str) -> Path | None:
    earlier = [v for v in SHIPPED if releases.version_key(v) < releases.version_key(version)]
    for v in reversed(earlier):
        if (GOLDEN / example / v / "values.yaml").exists():
            return GOLDEN / example / v / "values.yaml"
    return None


@pytest.mark.parametrize("example", sorted(REPRESENTATIVE))
def test_the_golden_values_differ_from_their_neighbours(example):
    files = sorted((GOLDEN / example).glob("*/values.yaml"), key=lambda p: releases.version_key(p.parent.name))
    assert files and files[0].parent.name == SHIPPED[0]
    texts = [p.read_text(encoding="utf-8") for p in files]
    assert all(a != b for a, b in zip(texts, texts[1:]))


PER_POOL = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: lab
spec:
  cluster:
    kubernetesVersion: "1.32"
  operator:
    chartVersion: v26.3.3
  driver:
    kernelModuleType: open
  pools:
    - name: l40s
      gpu: L40S
      gpusPerNode: 4
      nodes: 3
      match:
        pciDevice: true
      driver:
        version: "580.126.20"
"""


@pytest.mark.parametrize(("version", "expected"), [
    ("v26.3.3", ["GC329 spec.pools[0].driver.version: per-pool driver versions need GPU Operator chart v26.7.0 or "
                 "later (pinned: v26.3.3)"]),
    ("v24.9.2", ["GC329 spec.pools[0].driver.version: per-pool driver versions need GPU Operator chart v26.7.0 or "
                 "later (pinned: v24.9.2)",
                 "GC390 spec.driver.kernelModuleType: chart v24.9.2 has no driver.kernelModuleType; it came with "
                 "v25.3.0"]),
])
def test_an_intent_that_needs_a_newer_release_is_refused_naming_it(run, tmp_path, version, expected):
    intent = _on(tmp_path, version, PER_POOL)
    result = run("validate", str(intent), "--format", "json")
    assert result.exit_code == 1
    found = [f"{f['code']} {f['path']}: {f['message']}" for f in json.loads(result.stdout)
             if f["severity"] == "error"]
    assert sorted(found) == expected


def test_a_driver_outside_the_component_matrix_is_a_warning_listing_the_validated_ones(run, tmp_path):
    text = SINGLE.read_text(encoding="utf-8").replace("  operator:\n", '  driver:\n    version: "550.90.07"\n'
                                                       "  operator:\n", 1)
    intent = _on(tmp_path, "v26.7.0", text)
    result = run("validate", str(intent), "--format", "json")
    findings = [f for f in json.loads(result.stdout) if f["code"] == "GC389"]
    assert [(f["severity"], f["message"], f["hint"]) for f in findings] == [
        ("warning", "driver 550.90.07 is not one GPU Operator v26.7.0 is validated with (its component matrix)",
         "validated: 610.57.04, 595.91.07, 580.173.02, 535.309.01; pick one, or keep 550.90.07 knowingly")]


def test_a_move_that_skips_a_major_release_is_refused_with_the_supported_path(run, tmp_path):
    intent = _on(tmp_path, "v24.9.2")
    result = run("diff", str(intent), "--to-chart", "v26.7.0")
    assert result.exit_code == 1
    assert "refused: chart v24.9.2 -> v26.7.0 skips 3 major release(s)" in result.stdout
    assert "Supported path: v24.9.2 -> v25.3.4 -> v25.10.1 -> v26.3.3 -> v26.7.0." in result.stdout
    data = json.loads(run("diff", str(intent), "--to-chart", "v26.7.0", "--format", "json").stdout)
    assert data["upgradePath"] == ["v24.9.2", "v25.3.4", "v25.10.1", "v26.3.3", "v26.7.0"]
    assert data["impacts"] is None
    # each hop plans on its own
    hop = json.loads(run("diff", str(intent), "--to-chart", "v25.3.4", "--format", "json").stdout)
    assert hop["refused"] is None and hop["upgradePath"] == ["v24.9.2", "v25.3.4"]
    assert hop["worst"] == "disruptive"
    assert [i["kind"] for i in hop["impacts"] if i["severity"] == "disruptive"] == ["driver-upgrade"]


def test_upgrade_paths_follow_nvidias_rule():
    known = list(SHIPPED)
    assert releases.upgrade_path("v25.10.1", "v26.7.0", known) == ["v25.10.1", "v26.3.3", "v26.7.0"]
    assert releases.upgrade_path("v26.3.0", "v26.3.3", known) == ["v26.3.0", "v26.3.3"]
    assert releases.upgrade_path("v26.3.3", "v26.7.0", known) == ["v26.3.3", "v26.7.0"]
    assert releases.upgrade_path("v26.7.0", "v25.3.4", known) == ["v26.7.0", "v26.3.3", "v25.10.1", "v25.3.4"]
    # a patch release gpuconf learns of (gpuconf chart add) is its major's newest stop
    assert releases.upgrade_path("v25.10.1", "v26.7.2", [*known, "v26.3.9"]) == ["v25.10.1", "v26.3.9", "v26.7.2"]


def test_a_removed_values_key_names_its_replacement(run, tmp_path):
    text = SINGLE.read_text(encoding="utf-8") + (
        "  overrides:\n    - path: driver.useOpenKernelModules\n      value: true\n"
        "      why: the L40S nodes run the open kernel modules (ticket GPU-112)\n")
    old = _on(tmp_path, "v24.9.2", text, "old.yaml")
    assert run("validate", str(old)).exit_code == 0
    new = _on(tmp_path, "v25.3.0", text, "new.yaml")
    result = run("validate", str(new), "--format", "json")
    assert result.exit_code == 1
    (finding,) = [f for f in json.loads(result.stdout) if f["code"] == "GC319"]
    assert finding["hint"].startswith("driver.useOpenKernelModules was removed at chart v25.3.0 (use "
                                      "driver.kernelModuleType instead: useOpenKernelModules: true is "
                                      "kernelModuleType: open")
    move = json.loads(run("diff", str(old), "--to-chart", "v25.3.0", "--format", "json").stdout)
    assert [(o["path"], o["status"]) for o in move["overrides"]] == [("driver.useOpenKernelModules", "invalid")]
    assert "removed at chart v25.3.0" in move["overrides"][0]["detail"]


def test_catalog_lists_the_releases_with_their_capabilities(run):
    result = run("catalog")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    start = lines.index("GPU Operator chart releases (gpuconf chart add FILE adds one gpuconf does not ship):")
    rows = [line.split() for line in lines[start + 2:start + 2 + len(SHIPPED)]]
    assert [r[0] for r in rows] == list(SHIPPED)
    assert rows[0][:3] == ["v24.9.0", "gpuconf", "550.127.05"]
    assert rows[-1][:3] == ["v26.7.0", "gpuconf", "595.91.07"]
    assert "upgrade rule: Upgrades are only supported within a major release or to the next major release." in \
        result.stdout


def test_the_plan_of_a_move_says_when_the_driver_leaves_the_component_matrix(run, tmp_path):
    # component-matrix.md: v26.3.3 is validated with 580.126.20 (its default), v26.7.0 is not.
    text = SINGLE.read_text(encoding="utf-8").replace("  operator:\n", '  driver:\n    version: "580.126.20"\n'
                                                       "  operator:\n", 1)
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(text, encoding="utf-8")
    move = json.loads(run("diff", str(pinned), "--to-chart", "v26.7.0", "--format", "json").stdout)
    assert move["chartMove"]["componentMatrix"] == {
        "driver": "580.126.20", "enters": False, "validated": ["610.57.04", "595.91.07", "580.173.02", "535.309.01"]}
    assert "component matrix: the driver 580.126.20 leaves the drivers chart v26.7.0 is validated with" in \
        run("diff", str(pinned), "--to-chart", "v26.7.0").stdout
    # The chart's own default driver moves with the chart, from one validated driver to another: no line.
    follows = json.loads(run("diff", str(SINGLE), "--to-chart", "v26.7.0", "--format", "json").stdout)
    assert follows["chartMove"]["componentMatrix"] is None


@pytest.mark.parametrize(("version", "cuda"), [
    # charts/versions.md §1: operator.initContainer (the CUDA base image) is in values.yaml up to v25.10.1
    ("v24.9.2", "nvcr.io/nvidia/cuda:12.6.3-base-ubi9"), ("v25.10.1", "nvcr.io/nvidia/cuda:13.0.1-base-ubi9"),
    ("v26.3.3", None)])
def test_images_follow_each_releases_defaults(run, tmp_path, version, cuda):
    refs = run("images", str(_on(tmp_path, version))).stdout.splitlines()
    assert f"nvcr.io/nvidia/gpu-operator:{version}" in refs
    facts = catalog.chart(version)
    plugin = facts.shared_defaults["devicePlugin"]
    assert f"{plugin['repository']}/{plugin['image']}:{plugin['version']}" in refs
    assert f"registry.k8s.io/nfd/node-feature-discovery:{facts.nfd_app_version}" in refs
    assert [r for r in refs if "/cuda:" in r] == ([cuda] if cuda else [])


def test_a_chart_version_of_ten_thousand_digits_is_a_finding_not_a_crash(run, tmp_path):
    """A release's parts are bounded (int() refuses 4,300 digits and more): GC318, not an internal error."""
    intent = _on(tmp_path, "v26.7." + "9" * 10000)
    result = run("validate", str(intent))
    assert result.exit_code == 1
    assert "error GC318 spec.operator.chartVersion: gpuconf has no base defaults" in result.stdout
    assert run("diff", str(SINGLE), "--to-chart", "v26.7." + "9" * 10000).exit_code == 2

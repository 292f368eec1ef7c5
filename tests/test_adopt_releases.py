"""Issue 41 item 3: import adopts onto what runs.

Values written for GPU Operator 24.9, 25.3 and 25.10 (the keys those releases' values.yaml had: 24.9's
driver.useOpenKernelModules and operator.defaultRuntime, 25.3's cdi.default and driver.kernelModuleType), with nodes
that run that release's operator image and carry the installation's own config names: the draft stays on that
release and says where it came from, its first sync moves no node, and the audit before it has no error.
"""

from __future__ import annotations

import json

import pytest
import yaml

import h200_real as H

GFD = H.gfd_runs()["single"]["labels"]
NODES_WORDS = "the gpu-operator image (the validator) the GPU nodes run"
#: Values as `helm get values -o yaml` prints them (the user-supplied values), one per release line.
VALUES = {
    "v24.9.2": {"operator": {"defaultRuntime": "containerd"}, "driver": {"useOpenKernelModules": True},
                "cdi": {"enabled": True, "default": False},
                "devicePlugin": {"config": {"name": "device-plugin-config", "default": "default"}}},
    "v25.3.4": {"operator": {"defaultRuntime": "containerd"}, "cdi": {"enabled": True, "default": True},
                "driver": {"kernelModuleType": "open"},
                "devicePlugin": {"config": {"name": "device-plugin-config", "default": "default"}}},
    "v25.10.1": {"cdi": {"enabled": True}, "driver": {"kernelModuleType": "open"},
                 "devicePlugin": {"config": {"name": "device-plugin-config", "default": "default"}}},
}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "device-plugin-config", "namespace": "gpu-operator"},
             "data": {"default": "version: v1\nflags:\n  migStrategy: single\n"}}


def _node(name: str, release: str) -> dict:
    """An H200 node of the installation: real GFD labels, the config names the installation's ConfigMaps use, and
    the images the kubelet lists (the validator is <registry>/gpu-operator:<chart version>)."""
    node = H.node(name, GFD, labels={"nvidia.com/device-plugin.config": "default",
                                     "nvidia.com/mig.config": "all-disabled"})
    node["status"]["images"] = [
        {"names": [f"nvcr.io/nvidia/gpu-operator@sha256:{'1' * 64}", f"nvcr.io/nvidia/gpu-operator:{release}"],
         "sizeBytes": 183742118},
        {"names": [f"nvcr.io/nvidia/k8s-device-plugin@sha256:{'2' * 64}", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"],
         "sizeBytes": 142511238}]
    return node


def _files(tmp_path, release: str) -> dict[str, str]:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(H.nodelist([_node(f"gpu-h200-{i:02d}", release) for i in (1, 2)]), indent=1))
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES.get(release, VALUES["v25.10.1"])))
    configmap = tmp_path / "configmap.yaml"
    configmap.write_text(yaml.safe_dump(CONFIGMAP))
    return {"nodes": str(nodes), "values": str(values), "configmap": str(configmap)}


def _chart_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith("chartVersion:"))


@pytest.mark.parametrize("release", sorted(VALUES))
def test_adoption_stays_on_the_release_that_runs_and_its_first_sync_moves_no_node(run, tmp_path, release):
    f = _files(tmp_path, release)
    draft = tmp_path / "draft.yaml"
    result = run("import", "--nodes", f["nodes"], "--values", f["values"], "--configmap", f["configmap"],
                 "-o", str(draft))
    assert result.exit_code == 0, result.stderr
    text = draft.read_text()
    assert _chart_line(text) == f"chartVersion: {release}  # {NODES_WORDS}"
    # Every path that reads the same evidence says the same, in the same words.
    alone = run("import", "--nodes", f["nodes"])
    assert alone.exit_code == 0, alone.stderr
    assert _chart_line(alone.stdout) == _chart_line(text)
    # The nodes' config names are kept, pinned to the hash of the content gpuconf renders under them.
    profiles = yaml.safe_load(text)["spec"]["sharingProfiles"]
    assert profiles["default"]["exclusive"] == {}
    kept = profiles["default"]["keepNames"]["devicePlugin"]
    assert kept["name"] == "default" and len(kept["content"]) == 8
    # The first sync's plan: no node impact above none.
    diff = run("diff", str(draft), "--against-installation", "--nodes", f["nodes"], "--values", f["values"],
               "--configmap", f["configmap"], "--format", "json")
    plan = json.loads(diff.stdout)
    moved = [(i["kind"], i["severity"]) for i in plan["impacts"] if i.get("nodeNames") and i["severity"] != "none"]
    assert moved == [], diff.stdout
    # The audit of the draft on the unchanged nodes: no error, the one pending label per pool is a GA123 warning.
    audit = run("audit", str(draft), "--nodes", f["nodes"], "--format", "json")
    findings = json.loads(audit.stdout)["findings"]
    assert audit.exit_code == 0, audit.stdout
    assert [(x["code"], x["severity"]) for x in findings] == [("GA123", "warning")]
    assert set(findings[0]["evidence"]["labels"]) == {"gpuconf.dev/pool"}


def test_a_chart_version_other_than_the_one_that_runs_is_refused(run, tmp_path):
    f = _files(tmp_path, "v25.10.1")
    for extra in ((), ("--values", f["values"])):
        result = run("import", "--nodes", f["nodes"], *extra, "--chart-version", "v26.7.0")
        assert result.exit_code == 2
        assert "runs GPU Operator chart v25.10.1 (" + NODES_WORDS + "), and --chart-version v26.7.0 names another: " \
               "adoption never moves the chart" in result.stderr
    result = run("import", "--nodes", f["nodes"], "--chart-version", "v25.10.1")
    assert result.exit_code == 0
    assert _chart_line(result.stdout) == f"chartVersion: v25.10.1  # {NODES_WORDS} and --chart-version"


def test_a_release_gpuconf_does_not_know_is_exit_2_naming_chart_add(run, tmp_path):
    f = _files(tmp_path, "v99.1.0")
    for extra in ((), ("--values", f["values"], "--configmap", f["configmap"])):
        result = run("import", "--nodes", f["nodes"], *extra)
        assert result.exit_code == 2 and result.stdout == ""
        assert "the installation runs GPU Operator chart v99.1.0 (" + NODES_WORDS + "), which gpuconf has no facts " \
               "for: add it with `gpuconf chart add`" in result.stderr
    # --chart-version says which release gpuconf takes it for.
    result = run("import", "--nodes", f["nodes"], "--chart-version", "v26.7.0")
    assert result.exit_code == 0, result.stderr
    assert _chart_line(result.stdout) == ("chartVersion: v26.7.0  # --chart-version (the release that runs; gpuconf "
                                          f"has no facts for v99.1.0 ({NODES_WORDS}))")


def test_the_values_own_operator_version_names_the_release(run, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"operator": {"version": "v25.3.4"}, "cdi": {"default": True}}))
    result = run("import", "--values", str(values))
    assert result.exit_code == 0, result.stderr
    assert _chart_line(result.stdout) == ("chartVersion: v25.3.4  # operator.version in the values (the "
                                          "gpu-operator image's tag)")


def test_a_draft_moved_to_another_chart_makes_the_first_sync_a_chart_move(run, tmp_path):
    """Issue 41 item 4: the first sync under --against-installation of a draft edited onto v26.3.3 over a v25.10.1
    installation is the move itself: the operator upgrade, the driver reinstall the driver manager's new version
    brings (charts/versions.md §1: v0.9.1 -> v0.11.0), the CRD step; the values are each read on their own chart."""
    f = _files(tmp_path, "v25.10.1")
    draft = tmp_path / "draft.yaml"
    assert run("import", "--nodes", f["nodes"], "--values", f["values"], "--configmap", f["configmap"],
               "-o", str(draft)).exit_code == 0
    same = json.loads(run("diff", str(draft), "--against-installation", "--nodes", f["nodes"], "--values",
                          f["values"], "--configmap", f["configmap"], "--format", "json").stdout)
    assert same["chartMove"] is None
    text = draft.read_text()
    draft.write_text(text.replace("chartVersion: v25.10.1", "chartVersion: v26.3.3", 1))
    result = run("diff", str(draft), "--against-installation", "--nodes", f["nodes"], "--values", f["values"],
                 "--configmap", f["configmap"], "--format", "json")
    plan = json.loads(result.stdout)
    kinds = {i["kind"]: i for i in plan["impacts"]}
    assert kinds["operator-upgrade"]["severity"] == "restart"
    assert "from chart v25.10.1 (installed) to v26.3.3" in kinds["operator-upgrade"]["message"]
    reinstall = [i for i in plan["impacts"] if i["kind"] == "driver-reinstall" and "chart move" in i["message"]]
    assert [(i["severity"], i["nodes"]) for i in reinstall] == [("disruptive", 2)]
    assert "driver.manager.version v0.9.1 -> v0.11.0" in reinstall[0]["message"]
    assert plan["chartMove"]["from"] == "v25.10.1" and plan["chartMove"]["to"] == "v26.3.3"
    assert {c["kind"] for c in plan["chartMove"]["crds"]} == {"ClusterPolicy", "NVIDIADriver"}
    assert plan["worst"] == "disruptive"
    # A move past a major is said to be one NVIDIA does not support in one step, with the path.
    draft.write_text(text.replace("chartVersion: v25.10.1", "chartVersion: v26.7.0", 1))
    far = json.loads(run("diff", str(draft), "--against-installation", "--nodes", f["nodes"], "--values",
                         f["values"], "--configmap", f["configmap"], "--format", "json").stdout)
    upgrade = next(i for i in far["impacts"] if i["kind"] == "operator-upgrade")
    assert "supported path: v25.10.1 -> v26.3.3 -> v26.7.0" in upgrade["message"]


def test_against_values_reads_each_side_on_its_own_chart(run, tmp_path):
    """--against-values: values written for v25.10.1 (their operator.version says so) against an intent on v26.3.3
    show the defaults that changed between the two charts, which reading both on v26.3.3's hid."""
    f = _files(tmp_path, "v25.10.1")
    draft = tmp_path / "draft.yaml"
    assert run("import", "--nodes", f["nodes"], "--values", f["values"], "--configmap", f["configmap"],
               "-o", str(draft)).exit_code == 0
    draft.write_text(draft.read_text().replace("chartVersion: v25.10.1", "chartVersion: v26.3.3", 1))
    values = tmp_path / "old.yaml"
    values.write_text(yaml.safe_dump({**VALUES["v25.10.1"], "operator": {"version": "v25.10.1"}}))
    result = run("diff", str(draft), "--against-values", str(values), "--format", "json")
    data = json.loads(result.stdout)
    assert data["against"] == f"{values} (chart v25.10.1)"
    paths = {r["path"] for r in data["leaves"]}
    # charts/versions.md §1 and §3: the driver manager and ccManager's default changed between the two releases
    assert "driver.manager.version" in paths and "ccManager.enabled" in paths
    same = run("diff", str(draft), "--against-values", str(values), "--installed-chart", "v26.3.3", "--format",
               "json")
    same_paths = {r["path"] for r in json.loads(same.stdout)["leaves"]}
    assert "driver.manager.version" not in same_paths


def test_foreign_mig_and_whole_gpu_config_names_are_kept_across_pools(run, tmp_path):
    """The issue's adoption: MIG mixed with a custom mig-parted ConfigMap (`inference-mixed`) and whole-GPU pools on
    the device plugin's `default` key, which the MIG pool's nodes carry too (a MIG pool's device-plugin config is the
    whole-GPU one). The draft keeps both names: the whole-GPU key once, for every pool of that content, so the audit
    before the first sync has no error and the first sync relabels no config."""
    from conftest import ROOT

    nodes = json.loads((ROOT / "tests" / "fixtures" / "nodes" / "heterogeneous.json").read_text())
    foreign = {"infer-mixed-7582d368": "inference-mixed", "exclusive-c0fcc874": "default",
               "notebooks-x4-ab3e8595": "ts4"}
    for node in nodes["items"]:
        labels = node["metadata"]["labels"]
        for key in ("nvidia.com/mig.config", "nvidia.com/device-plugin.config"):
            if labels.get(key) in foreign:
                labels[key] = foreign[labels[key]]
        for key in [k for k in labels if k.startswith("gpuconf.dev/")]:
            del labels[key]
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    layout = {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}
    mig = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mig-config", "namespace": "gpu-operator"},
           "data": {"config.yaml": yaml.safe_dump({"version": "v1", "mig-configs": {
               "all-disabled": [{"devices": "all", "mig-enabled": False}],
               "inference-mixed": [{"devices": "all", "mig-enabled": True, "mig-devices": layout}]}})}}
    plugin = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dp-config", "namespace": "gpu-operator"},
              "data": {"default": "version: v1\nflags:\n  migStrategy: mixed\n",
                       "ts4": "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n    resources:\n"
                              "    - name: nvidia.com/gpu\n      replicas: 4\n"}}
    (tmp_path / "cms.yaml").write_text(yaml.safe_dump_all([mig, plugin]))
    (tmp_path / "values.yaml").write_text(yaml.safe_dump({
        "mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": "dp-config", "default": "default"}},
        "migManager": {"config": {"name": "mig-config", "default": "all-disabled"}}}))
    draft = tmp_path / "draft.yaml"
    args = ("--nodes", str(tmp_path / "nodes.json"), "--values", str(tmp_path / "values.yaml"), "--configmap",
            str(tmp_path / "cms.yaml"))
    result = run("import", *args, "-o", str(draft))
    assert result.exit_code == 0, result.stderr
    kept = {name: p.get("keepNames") for name, p in yaml.safe_load(draft.read_text())["spec"]["sharingProfiles"].items()}
    assert sorted((name, field, k["name"]) for name, names in kept.items() if names
                  for field, k in names.items()) == [
        ("default", "devicePlugin", "default"), ("mig-all-balanced", "mig", "inference-mixed"),
        ("ts4", "devicePlugin", "ts4")]
    audit = run("audit", str(draft), "--nodes", str(tmp_path / "nodes.json"), "--format", "json")
    assert audit.exit_code == 0, audit.stdout
    assert {(f["code"], f["severity"]) for f in json.loads(audit.stdout)["findings"]} == {("GA123", "warning")}
    plan = json.loads(run("diff", str(draft), "--against-installation", *args, "--format", "json").stdout)
    assert [i for i in plan["impacts"] if i["severity"] == "disruptive"] == []
    relabels = [i["message"] for i in plan["impacts"] if i["kind"] == "relabel-needed"]
    # The EKS node templates label only new nodes: the command sets the pool label, and the config labels the nodes
    # already carry (their own names, not gpuconf's content-addressed keys).
    assert relabels and all("exclusive-c0fcc874" not in m and "mig-all-balanced-" not in m for m in relabels)
    assert any("nvidia.com/device-plugin.config=default nvidia.com/mig.config=inference-mixed" in m for m in relabels)


def test_an_installed_chart_that_spells_no_release_is_a_usage_error(run, tmp_path):
    f = _files(tmp_path, "v25.10.1")
    draft = tmp_path / "draft.yaml"
    assert run("import", "--nodes", f["nodes"], "-o", str(draft)).exit_code == 0
    for args in (("--against-values", f["values"]), ("--against-installation", "--nodes", f["nodes"])):
        result = run("diff", str(draft), *args, "--installed-chart", "v1\n::error::x")
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr == "gpuconf: --installed-chart 'v1\\n::error::x' is not a GPU Operator release (vYY.MM.PP)\n"

"""Hostile input, round five (issue 46, items 4 and 5): no exit 3 on a values section that is a scalar or a deployed
report.json of the wrong shape, paths printed through one escaping (escape.show_path), large node lists bounded,
and an unreadable device-plugin config said in the draft and the summary."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

NODES = str(ROOT / "tests" / "fixtures" / "nodes" / "airgapped-drift.json")


def _problem(where: str, key: str, shown: str) -> str:
    return (f"gpuconf: {where}: {key} is {shown}, not a map: the chart's {key.split('.')[-1]} is a section of values, "
            "which its templates read key by key (Helm fails to render it), so no installation runs with these values")


@pytest.mark.parametrize("text, key, shown", [("driver: 3\n", "driver", "3"), ("devicePlugin: x\n", "devicePlugin",
                                                                              '"x"')])
def test_a_scalar_values_section_in_import_with_nodes_is_exit_2_and_writes_nothing(run, tmp_path, text, key, shown):
    """Exit 3 on 156dcf4 (AttributeError in the first-sync plan)."""
    values = tmp_path / "values.yaml"
    values.write_text(text, encoding="utf-8")
    result = run("import", "--values", str(values), "--nodes", NODES, "-o", str(tmp_path / "intent.yaml"), "--report",
                 str(tmp_path / "report.json"))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines()[-1] == _problem(f"{values}:1", key, shown) + "; nothing was written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["values.yaml"]


def test_a_scalar_values_section_in_diff_against_installation_is_exit_2(run, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("devicePlugin: x\n", encoding="utf-8")
    result = run("diff", str(ROOT / "examples" / "airgapped.yaml"), "--against-installation", "--values", str(values),
                 "--nodes", NODES)
    assert (result.exit_code, result.stderr) == (2, _problem(f"{values}:1", "devicePlugin", '"x"') + "\n")


def test_a_hostile_api_servers_release_with_a_scalar_section_is_exit_2(run, tmp_path):
    from test_adopt import _cluster, _release_secret

    objects = {"/api/v1/secrets": {"kind": "SecretList", "apiVersion": "v1", "metadata": {},
                                   "items": [_release_secret({"driver": 3})]}}
    api, kubeconfig = _cluster(tmp_path, objects)
    with api:
        result = run("import", "--kubeconfig", kubeconfig(), "-o", str(tmp_path / "intent.yaml"))
    source = "Secret gpu-operator/sh.helm.release.v1.gpu-operator.v2 (release gpu-operator revision 2)"
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines()[-1] == _problem(source, "driver", "3") + "; nothing was written"
    assert not (tmp_path / "intent.yaml").exists()


def test_a_deployed_report_json_whose_pools_are_a_number_is_exit_2(run, tmp_path, monkeypatch):
    """Exit 3 on 156dcf4: the transition rules read the deployed folder before diff checked its report.json."""
    monkeypatch.chdir(tmp_path)
    example = str(ROOT / "examples" / "single-pool.yaml")
    assert run("render", example, "-o", "out").exit_code == 0
    report = tmp_path / "out" / "lab" / "report.json"
    data = json.loads(report.read_text(encoding="utf-8"))
    data["pools"] = 7
    report.write_text(json.dumps(data), encoding="utf-8")
    result = run("diff", example, "--against", "out")
    assert (result.exit_code, result.stderr) == (
        2, "gpuconf: out/lab: report.json: pools is a list: not what gpuconf wrote there (edited by hand?); restore "
           "the folder or render it again\n")


# --- workflow-command injection through a file name ---------------------------------------------------------------

HOSTILE_NAME = "x\n::error title=gpuconf::all checks passed"


def _planted(run, tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    example = str(ROOT / "examples" / "single-pool.yaml")
    assert run("render", example, "-o", "out").exit_code == 0
    (tmp_path / "out" / "lab" / HOSTILE_NAME).write_text("planted\n", encoding="utf-8")
    return example


def _no_command(text: str) -> None:
    assert not any(line.lstrip().startswith(("::", "##")) for line in text.splitlines()), text


def test_render_check_prints_a_hostile_file_name_escaped(run, tmp_path, monkeypatch):
    example = _planted(run, tmp_path, monkeypatch)
    result = run("render", "--check", example, "-o", "out")
    assert result.exit_code == 1
    _no_command(result.stdout + result.stderr)
    assert "foreign: out/lab/x\\n::error title=gpuconf::all checks passed (gpuconf did not write it" in result.stdout


def test_render_refusing_a_hostile_file_name_prints_it_escaped(run, tmp_path, monkeypatch):
    example = _planted(run, tmp_path, monkeypatch)
    result = run("render", example, "-o", "out")
    assert result.exit_code == 2
    _no_command(result.stdout + result.stderr)
    assert ("gpuconf: out/lab/ holds what gpuconf did not write: x\\n::error title=gpuconf::all checks passed"
            in result.stderr.splitlines())
    deleted = run("render", example, "-o", "out", "--delete-foreign")
    assert deleted.exit_code == 0
    _no_command(deleted.stdout + deleted.stderr)


def test_show_path_is_the_one_escaping_of_paths():
    from gpuconf.escape import show_path

    assert show_path(HOSTILE_NAME) == "x\\n::error title=gpuconf::all checks passed"
    assert show_path("::add-mask::x") == "\\x3a:add-mask::x"
    assert show_path("a`b|c", "md-table") == "``a`b\\|c``"
    assert show_path("a`b", "md") == "``a`b``"
    with pytest.raises(ValueError):
        show_path("x", "html")


# --- item 5: a device-plugin config that cannot be read -----------------------------------------------------------


def test_a_5000_deep_device_plugin_config_is_said_unreadable_in_the_draft_and_the_summary(run, tmp_path):
    """On 156dcf4 the draft said "no sharing config in the values: whole GPUs" (the values name one: it could not be
    read), and only --report said why."""
    values = tmp_path / "values.yaml"
    values.write_text("devicePlugin:\n  config:\n    name: deep\n", encoding="utf-8")
    configmap = tmp_path / "configmap.yaml"
    configmap.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep, namespace: gpu-operator}\ndata:\n"
                         f"  any: {json.dumps('[' * 5000 + ']' * 5000)}\n", encoding="utf-8")
    result = run("import", "--values", str(values), "--configmap", str(configmap))
    assert result.exit_code == 0, result.stderr
    why = "not expressible as a sharing profile (not YAML that gpuconf reads: nested too deep)"
    assert (f"gpuconf: note: device-plugin config 'any' ({configmap}: ConfigMap/deep key any) could not be read: "
            f"{why}: its nodes get whole GPUs unless you declare the sharing yourself") in result.stderr.splitlines()
    assert "no sharing config in the values" not in result.stdout
    assert (f"# the values name device-plugin config(s) that could not be read ('any': {why}): their sharing is "
            "unknown, so this pool shares nothing until you declare it.") in result.stdout


# --- large node lists -----------------------------------------------------------------------------------------------


def test_import_keeps_only_what_the_first_sync_reads_of_each_gpu_node(monkeypatch):
    """On 156dcf4 import kept every GPU Node whole (its image list is half its size): a 1 GB NodeList took 4 GB."""
    from gpuconf.cluster import importer

    items = json.loads(open(NODES, encoding="utf-8").read())["items"]
    for item in items:
        item.setdefault("status", {})["images"] = [{"names": ["nvcr.io/nvidia/k8s-device-plugin:v0.17.1"],
                                                    "sizeBytes": 1}]
        item["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    draft = importer.draft_intent(iter(items), "nodes.json")
    assert draft.gpu_node_objects
    for kept in draft.gpu_node_objects:
        assert "images" not in kept["status"] and "managedFields" not in kept["metadata"]
        assert set(kept["metadata"]) >= {"name", "labels"} and "allocatable" in kept["status"]


def test_import_of_more_gpu_nodes_than_its_bound_is_exit_2_and_writes_nothing(run, tmp_path, monkeypatch):
    from gpuconf.cluster import importer

    monkeypatch.setattr(importer, "MAX_GPU_NODES", 2)
    gpu = sum(1 for n in json.loads(open(NODES, encoding="utf-8").read())["items"]
              if any(k.startswith("nvidia.com/gpu") for k in (n["status"].get("capacity") or {})))
    assert gpu > 2
    result = run("import", "--nodes", NODES, "-o", str(tmp_path / "intent.yaml"))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"gpuconf: {NODES}: more than 2 GPU nodes: import drafts an intent for one cluster, and keeps each GPU node's "
        "facts for its first-sync plan; split the list by node group (kubectl get nodes -l ...) and import each")
    assert not (tmp_path / "intent.yaml").exists()


def test_a_hand_edit_with_an_integer_past_pythons_digit_limit_is_shown_not_exit_3(run, tmp_path, monkeypatch):
    """Found by the fuzz test once it had issue 46's seeds: `a: 0xfff...` (3,700 hex digits) in kustomization.yaml
    gave exit 3 when the document diff printed the value (int to str past 4,300 digits)."""
    monkeypatch.chdir(tmp_path)
    example = str(ROOT / "examples" / "single-pool.yaml")
    assert run("render", example, "-o", "out").exit_code == 0
    (tmp_path / "out" / "lab" / "kustomization.yaml").write_text("a: 0x" + "f" * 3700 + "\n", encoding="utf-8")
    for fmt in ("text", "markdown"):
        result = run("diff", example, "--against", "out", "--format", fmt)
        assert result.exit_code in (1, 2) and "internal error" not in result.stderr, result.stderr
    assert "<an integer of 14800 bits>" in run("diff", example, "--against", "out").stdout


def test_verify_prints_a_hostile_file_name_escaped(run, tmp_path, monkeypatch):
    """A file planted in an attested folder: verify names it as not in the statement, on its line, starting no
    workflow command (issue 46: render --check, render and verify)."""
    monkeypatch.chdir(tmp_path)
    example = str(ROOT / "examples" / "single-pool.yaml")
    assert run("render", example, "-o", "out", "--attest").exit_code == 0
    (tmp_path / "out" / "lab" / HOSTILE_NAME).write_text("planted\n", encoding="utf-8")
    result = run("verify", "out/lab", "--skip-signature")
    assert result.exit_code == 1
    _no_command(result.stdout + result.stderr)
    assert "x\\n::error title=gpuconf::all checks passed" in result.stdout + result.stderr

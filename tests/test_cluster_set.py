"""Renamed and deleted clusters (issue 27, item 3): `render --check` names every cluster folder under the output
folder that carries gpuconf's file record but that no given input renders, and deletes nothing; the CI example
fails the job on an exit code of 2 or more."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _two(run, tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tmp_path / "out"
    single, hetero = tmp_path / "single-pool.yaml", tmp_path / "heterogeneous.yaml"
    single.write_text((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    hetero.write_text((ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    assert run("render", str(single), str(hetero), "-o", str(out)).exit_code == 0
    return out, single, hetero


def test_render_check_names_the_folder_of_a_renamed_intent_and_keeps_it(run, tmp_path):
    out, single, hetero = _two(run, tmp_path)
    assert run("render", str(single), str(hetero), "-o", str(out), "--check").exit_code == 0
    text = hetero.read_text(encoding="utf-8")
    assert "  name: ml-prod\n" in text
    hetero.write_text(text.replace("  name: ml-prod\n", "  name: ml-prod-eu\n", 1), encoding="utf-8")
    assert run("render", str(hetero), "-o", str(out)).exit_code == 0  # the new folder; the old one stays
    result = run("render", str(single), str(hetero), "-o", str(out), "--check")
    assert result.exit_code == 1
    assert f"{out / 'ml-prod'}/: gpuconf wrote it (its .gpuconf-files is there), but no given input renders " \
           "cluster ml-prod" in result.stdout
    assert (out / "ml-prod" / "values.yaml").is_file()  # --check deletes nothing


def test_render_check_names_the_folder_of_a_deleted_intent_not_a_foreign_one(run, tmp_path):
    out, single, _ = _two(run, tmp_path)
    (out / "notes").mkdir()
    (out / "notes" / "README.md").write_text("not gpuconf's\n", encoding="utf-8")
    result = run("render", str(single), "-o", str(out), "--check")
    assert result.exit_code == 1
    named = re.findall(r"^(\S+)/: gpuconf wrote it", result.stdout, re.M)
    assert named == [str(out / "ml-prod")]


def _ci_steps() -> dict[str, str]:
    import yaml

    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))
    steps = [step["run"] for step in workflow["jobs"]["gpuconf"]["steps"] if "run" in step]
    return {"plan": next(r for r in steps if "> impact.md" in r), "gate": next(r for r in steps if "--fail-on" in r)}


@pytest.mark.parametrize("code, fails", [(0, False), (1, False), (2, True), (3, True)])
def test_the_ci_examples_steps_fail_the_job_on_exit_2_or_more(tmp_path, code, fails):
    """Both impact steps run under bash with a stand-in gpuconf that exits CODE: the plan step passes on 0 and 1
    (documents differ) and fails on 2 or more; the gate fails on everything but 0, with one annotation."""
    import os
    import subprocess

    fake = tmp_path / "bin" / "gpuconf"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho '=== cluster lab: removed (out/lab) ==='\nexit {code}\n", encoding="utf-8")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    steps = _ci_steps()
    plan = subprocess.run(["bash", "-e", "-c", steps["plan"]], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert (plan.returncode != 0) == fails, plan.stderr
    gate = subprocess.run(["bash", "-e", "-c", steps["gate"]], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert gate.returncode == (0 if code == 0 else 1)
    annotations = [line for line in gate.stdout.splitlines() if line.startswith("::error")]
    assert annotations == ([] if code == 0 else [
        "::error::disruptive impact: merge it in a maintenance window, with the label maintenance" if code == 1 else
        f"::error::gpuconf could not compare the inputs with the deployed output (exit {code}): see the step's log"])


def _renamed(hetero: Path) -> None:
    text = hetero.read_text(encoding="utf-8")
    hetero.write_text(text.replace("  name: ml-prod\n", "  name: ml-prod-eu\n", 1), encoding="utf-8")


def test_a_rename_is_a_removal_plus_an_addition_and_says_so(run, tmp_path):
    out, single, hetero = _two(run, tmp_path)
    _renamed(hetero)
    result = run("diff", str(single), str(hetero), "--against", str(out), "--fail-on", "disruptive", "--format",
                 "json")
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    assert sorted(body) == ["inputs", "removedClusters"]
    added = body["inputs"][str(hetero)]["impacts"]
    assert [(i["kind"], i["severity"]) for i in added] == [("cluster-added", "none")]
    assert "It looks like the new name of ml-prod (the same pools)" in added[0]["message"]
    [removed] = body["removedClusters"]["ml-prod"]["impacts"]
    assert (removed["kind"], removed["severity"], removed["nodes"], removed["pools"]) == (
        "cluster-removed", "disruptive", 26, ["train-h100", "infer-a100", "notebooks-l4"])
    assert removed["message"].startswith(
        f"cluster ml-prod's folder {out / 'ml-prod'} is deployed, but no given input renders it (it looks renamed "
        "to ml-prod-eu (the same pools), whose folder is new: a rename is a removal plus an addition): ")
    assert "3 NVIDIADriver (gpuconf-infer-a100, gpuconf-notebooks-l4, gpuconf-train-h100); 3 ConfigMap" in \
        removed["message"]
    assert "renaming it: delete the old Applications with `--cascade=false` first" in removed["safe"]
    assert body["removedClusters"]["ml-prod"]["folder"] == str(out / "ml-prod")
    text = run("diff", str(single), str(hetero), "--against", str(out), "--fail-on", "disruptive").stdout
    assert f"=== cluster ml-prod: removed ({out / 'ml-prod'}) ===\n" \
           f"Impact on {out / 'ml-prod'}: 1 impact(s), worst: disruptive\n" \
           "  DISRUPTIVE cluster-removed [train-h100, infer-a100, notebooks-l4] (26 nodes)\n" in text
    assert text.index(f"=== {single} ===") < text.index(f"=== {hetero} ===") < text.index("=== cluster ml-prod")


def test_a_deleted_intent_is_cluster_removed(run, tmp_path):
    out, single, _ = _two(run, tmp_path)
    result = run("diff", str(single), "--against", str(out), "--fail-on", "disruptive", "--format", "json")
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    assert [i["kind"] for i in body["impacts"]] == ["none"]  # the intent left is unchanged
    assert sorted(body["removedClusters"]) == ["ml-prod"]
    assert "(its intent was deleted or renamed)" in body["removedClusters"]["ml-prod"]["impacts"][0]["message"]
    # every intent deleted: no input at all, every folder is removed
    result = run("diff", "--against", str(out), "--format", "json")
    assert result.exit_code == 1
    assert sorted(json.loads(result.stdout)["removedClusters"]) == ["lab", "ml-prod"]
    # nothing removed: the key is there, empty, and the exit code is the plan's
    both = run("diff", str(single), str(tmp_path / "heterogeneous.yaml"), "--against", str(out), "--fail-on",
               "disruptive", "--format", "json")
    assert both.exit_code == 0 and json.loads(both.stdout)["removedClusters"] == {}


def test_what_a_removal_does_follows_the_folders_delivery(run, tmp_path):
    """Flux (examples/airgapped.yaml) and a fleet's own folder (its ApplicationSet) say what their tool does."""
    out = tmp_path / "out"
    assert run("render", str(ROOT / "examples" / "airgapped.yaml"), str(ROOT / "examples" / "fleet" / "fleet.yaml"),
               "-o", str(out)).exit_code == 0
    body = json.loads(run("diff", "--against", str(out), "--format", "json").stdout)["removedClusters"]
    flux = next(v for v in body.values() if "Flux Kustomization" in v["impacts"][0]["message"])
    assert "fails (kustomization path not found) and prunes nothing; deleting it (prune: true) garbage-collects" in \
        flux["impacts"][0]["message"]
    assert "set `prune: false` on the old Kustomizations" in flux["impacts"][0]["safe"]
    [fleet] = [v for v in body.values() if "ApplicationSet" in v["impacts"][0]["message"]]
    assert fleet["folder"] == str(out / "ml-fleet")
    assert "has preserveResourcesOnDeletion" in fleet["impacts"][0]["message"]
    assert all(v["worst"] == "disruptive" for v in body.values())


def test_an_invalid_input_does_not_make_every_folder_removed(run, tmp_path):
    out, single, hetero = _two(run, tmp_path)
    hetero.write_text("apiVersion: gpuconf.dev/v1alpha1\nkind: ClusterIntent\n", encoding="utf-8")
    result = run("diff", str(single), str(hetero), "--against", str(out), "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["removedClusters"] == {}
    assert (f"gpuconf: an input is invalid, so the cluster folders under {out} that no input renders are not looked "
            "for") in result.stderr


def test_diff_against_an_input_with_no_folder_is_cluster_added_not_a_usage_error(run, tmp_path):
    out, single, hetero = _two(run, tmp_path)
    _renamed(hetero)
    result = run("diff", str(hetero), "--against", str(out), "--format", "json")
    assert result.exit_code == 1, result.stderr  # documents differ: every one is new
    body = json.loads(result.stdout)
    assert [(i["kind"], i["severity"]) for i in body["impacts"]] == [("cluster-added", "none")]
    assert "It looks like the new name of ml-prod" in body["impacts"][0]["message"]
    assert sorted(body["removedClusters"]) == ["lab", "ml-prod"]  # the input given is the whole set
    assert run("diff", str(single), str(hetero), "--against", str(out), "--fail-on", "restart").exit_code == 1
    new = tmp_path / "new"
    assert run("render", str(single), "-o", str(new)).exit_code == 0
    lonely = run("diff", str(single), str(hetero), "--against", str(new), "--fail-on", "disruptive", "--format", "json")
    assert lonely.exit_code == 0, lonely.stdout  # a new cluster alone is no disruption
    added = json.loads(lonely.stdout)["inputs"][str(hetero)]["impacts"][0]
    assert "A renamed cluster is a removal plus an addition" in added["message"]


@pytest.mark.parametrize("args, reason", [
    ([], "give an INPUT (only --against DIR takes none"),
    (["A", "A", "--against", "OUT", "--cluster", "x"], "--cluster, --nodes, --kubeconfig and --pods are about one "
                                                       "cluster: give one INPUT"),
    (["A", "A", "--against-values", "A"], "--against-values compares one INPUT's render"),
])
def test_diff_usage_errors_of_the_set(run, tmp_path, args, reason):
    out, single, _ = _two(run, tmp_path)
    result = run("diff", *[{"A": str(single), "OUT": str(out)}.get(a, a) for a in args])
    assert result.exit_code == 2
    assert reason in result.stderr


def test_diff_against_a_folder_gpuconf_did_not_write_is_exit_2(run, tmp_path):
    _, single, _ = _two(run, tmp_path)
    foreign = tmp_path / "foreign" / "lab"
    foreign.mkdir(parents=True)
    (foreign / "notes.yaml").write_text("x: 1\n", encoding="utf-8")
    result = run("diff", str(single), "--against", str(tmp_path / "foreign"))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"gpuconf: {foreign} was not written by gpuconf (it has no .gpuconf-files): DIR must hold the cluster folders "
        "`gpuconf render -o DIR` wrote, or a Helm release's values.yaml to compare as values"]
    assert "Traceback" not in result.output

"""Fleets everywhere (issue 27 item 4): diff, audit and images read a Fleet file through the one input loader
(gpuconf/intent/inputs.py) and work on each of its clusters, or on the one --cluster names."""

from __future__ import annotations

import json
import shutil

import pytest

import nodelists as NL
from conftest import ROOT

FLEET = "examples/fleet/fleet.yaml"
CLUSTERS = ["edge-lab", "eu-prod", "us-prod"]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def fleet_render():
    """The fleet example rendered: {cluster name: its tree}."""
    from gpuconf.pipeline import render_any

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        rendered = render_any(FLEET, "out")
    assert rendered.ok and rendered.fleet
    return {cluster.name: tree for cluster, tree in rendered.clusters}


@pytest.fixture
def deployed(tmp_path, run):
    """The fleet rendered into tmp_path/out, as a GitOps repository holds it."""
    out = tmp_path / "out"
    assert run("render", FLEET, "-o", str(out)).exit_code == 0
    return out


def _one_line_exit_2(result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuconf: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


# --- the loader ------------------------------------------------------------------------------------------------


def test_one_loader_gives_every_cluster_of_either_kind_with_its_origins():
    from gpuconf.intent.inputs import read_input

    fleet = read_input(FLEET)
    assert fleet.is_fleet and fleet.valid()
    assert [c.name for c in fleet.clusters] == ["eu-prod", "us-prod", "edge-lab"]
    eu = fleet.clusters[0]
    assert eu.files == ("examples/fleet/base.yaml", "examples/fleet/overlays/eu-prod.yaml")
    # Every value remembers its file: the pools come from the base, the name from the fleet file.
    doc = eu.validation.document
    assert doc.source(("spec", "pools", 0, "gpu")) == "examples/fleet/base.yaml"
    assert doc.source(("metadata", "name")) == FLEET
    assert eu.validation.intent.metadata.name == "eu-prod"
    single = read_input("examples/single-pool.yaml")
    assert not single.is_fleet and single.valid()
    assert [c.name for c in single.clusters] == [single.clusters[0].validation.intent.metadata.name]


def test_a_finding_about_one_cluster_keeps_its_overlays_file_line_and_column(run, tmp_path):
    from gpuconf.pipeline import display_path

    shutil.copytree(ROOT / "examples" / "fleet", tmp_path / "fleet")
    overlay = tmp_path / "fleet" / "overlays" / "us-prod.yaml"
    text = overlay.read_text(encoding="utf-8")
    lines = text.splitlines()
    [index] = [i for i, line in enumerate(lines) if "gpusPerNode:" in line][:1]
    column = lines[index].index("gpusPerNode:") + len("gpusPerNode: ") + 1
    lines[index] = lines[index][:column - 1] + "0"
    overlay.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fleet = str(tmp_path / "fleet" / "fleet.yaml")
    for command in (("diff", fleet), ("images", fleet), ("diff", fleet, "--cluster", "us-prod")):
        result = run(*command)
        assert result.exit_code == 1, command
        # Findings name a file as render does: relative to the working directory, wherever the test runs.
        where = f"{display_path(str(overlay))}:{index + 1}:{column}: error"
        assert any(line.startswith(where) for line in result.stdout.splitlines()), (command, result.stdout)


# --- diff ------------------------------------------------------------------------------------------------------


def test_diff_against_a_fleet_gives_one_plan_per_cluster(run, deployed, fleet_render):
    values = deployed / "eu-prod" / "values.yaml"
    text = values.read_text(encoding="utf-8")
    assert "maxParallelUpgrades: 2" in text
    values.write_text(text.replace("maxParallelUpgrades: 2", "maxParallelUpgrades: 1"), encoding="utf-8")
    result = run("diff", FLEET, "--against", str(deployed), "--format", "json")
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert doc["kind"] == "Fleet" and doc["file"] == FLEET
    assert sorted(doc["clusters"]) == CLUSTERS
    for name, plan in doc["clusters"].items():
        assert set(plan) >= {"impacts", "worst", "equal"}, name
        assert plan["equal"] is (name != "eu-prod"), name
    assert doc["clusters"]["us-prod"]["worst"] == "none"
    assert doc["clusters"]["eu-prod"]["worst"] != "none"
    # --cluster: that cluster's plan alone, in the same shape.
    one = json.loads(run("diff", FLEET, "--against", str(deployed), "--format", "json", "--cluster",
                         "us-prod").stdout)
    assert list(one["clusters"]) == ["us-prod"] and one["clusters"]["us-prod"] == doc["clusters"]["us-prod"]
    # Text: each cluster's plan under a line that names it.
    text = run("diff", FLEET, "--against", str(deployed)).stdout
    assert [line for line in text.splitlines() if line.startswith("=== cluster")] == \
        [f"=== cluster {name} ({FLEET}) ===" for name in ("eu-prod", "us-prod", "edge-lab")]
    assert f"Impact on {deployed / 'eu-prod'}" in text


def test_diff_fail_on_covers_every_cluster_of_the_fleet(run, deployed):
    assert run("diff", FLEET, "--against", str(deployed), "--fail-on", "restart").exit_code == 0
    values = deployed / "edge-lab" / "values.yaml"
    text = values.read_text(encoding="utf-8")
    values.write_text(text.replace("maxParallelUpgrades: 2", "maxParallelUpgrades: 1"), encoding="utf-8")
    failing = run("diff", FLEET, "--against", str(deployed), "--fail-on", "restart")
    assert failing.exit_code == 1
    assert run("diff", FLEET, "--against", str(deployed), "--fail-on", "restart", "--cluster",
               "eu-prod").exit_code == 0


def test_diff_override_report_and_chart_move_of_a_fleet(run, fleet_render):
    result = run("diff", FLEET, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert sorted(doc["clusters"]) == CLUSTERS
    for name, tree in fleet_render.items():
        from gpuconf.output.report import override_section

        report = json.loads(tree.files["report.json"])
        assert doc["clusters"][name] == json.loads(json.dumps(override_section(report))), name
    moved = run("diff", FLEET, "--to-chart", "v26.7.0", "--format", "json", "--cluster", "eu-prod")
    assert moved.exit_code == 0, moved.stderr
    assert list(json.loads(moved.stdout)["clusters"]) == ["eu-prod"]
    every = json.loads(run("diff", FLEET, "--to-chart", "v26.7.0", "--format", "json").stdout)
    assert sorted(every["clusters"]) == CLUSTERS


def test_diff_with_nodes_of_a_fleet_needs_its_cluster(run, deployed, tmp_path, fleet_render):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(NL.dumps(NL.nodelist(NL.clean_nodes(fleet_render["eu-prod"].plan))), encoding="utf-8")
    line = _one_line_exit_2(run("diff", FLEET, "--against", str(deployed), "--nodes", str(nodes)))
    assert line == (f"gpuconf: {FLEET} is a fleet of 3 clusters (edge-lab, eu-prod, us-prod): --nodes, --kubeconfig "
                    "and --pods are one cluster's; give --cluster NAME")
    counted = run("diff", FLEET, "--against", str(deployed), "--nodes", str(nodes), "--cluster", "eu-prod",
                  "--format", "json")
    assert counted.exit_code == 0, counted.stderr
    assert json.loads(counted.stdout)["clusters"]["eu-prod"]["nodesSource"] == str(nodes)


# --- audit -----------------------------------------------------------------------------------------------------


def test_audit_of_a_fleet_audits_the_cluster_named(run, tmp_path, fleet_render):
    nodes = tmp_path / "eu-nodes.json"
    nodes.write_text(NL.dumps(NL.nodelist(NL.clean_nodes(fleet_render["eu-prod"].plan))), encoding="utf-8")
    result = run("audit", FLEET, "--cluster", "eu-prod", "--nodes", str(nodes), "--format", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["cluster"] == "eu-prod"
    assert sorted(p["name"] for p in report["pools"]) == sorted(p.name for p in fleet_render["eu-prod"].plan.pools)
    # The same nodes against another cluster of the fleet: drift, so the audit really used that cluster's intent.
    other = run("audit", FLEET, "--cluster", "us-prod", "--nodes", str(nodes))
    assert other.exit_code == 1
    assert "audit of us-prod" in other.stdout


def test_audit_of_a_fleet_needs_cluster(run, tmp_path, fleet_render):
    nodes = tmp_path / "eu-nodes.json"
    nodes.write_text(NL.dumps(NL.nodelist(NL.clean_nodes(fleet_render["eu-prod"].plan))), encoding="utf-8")
    line = _one_line_exit_2(run("audit", FLEET, "--nodes", str(nodes)))
    assert line == (f"gpuconf: {FLEET} is a fleet of 3 clusters (edge-lab, eu-prod, us-prod): an audit compares one "
                    "cluster's nodes with its intent; give --cluster NAME")
    # --cluster alone is not enough either: the nodes are still needed.
    assert run("audit", FLEET, "--cluster", "eu-prod").exit_code == 2


# --- images ----------------------------------------------------------------------------------------------------


def _images_of(trees: dict) -> dict[str, list[str]]:
    from gpuconf.output.images import images

    return {name: images(tree.plan, tree.values.merged(), tree.documents).references for name, tree in trees.items()}


def test_images_of_a_fleet_lists_the_union(run, fleet_render):
    each = _images_of(fleet_render)
    union = sorted({ref for refs in each.values() for ref in refs})
    result = run("images", FLEET)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == union
    assert run("images", FLEET, "--cluster", "edge-lab").stdout.splitlines() == each["edge-lab"]
    doc = json.loads(run("images", FLEET, "--format", "json").stdout)
    assert [i["image"] for i in doc["images"]] == union
    for item in doc["images"]:
        assert item["clusters"] == sorted(name for name, refs in each.items() if item["image"] in refs)
    assert any(item["source"] != item["image"] for item in doc["images"])  # edge-lab pulls through its mirror
    pairs = run("images", FLEET, "--pairs").stdout.splitlines()
    assert [p.split(" ")[1] for p in pairs] == union


def test_images_that_clusters_share_are_listed_once(run, tmp_path, monkeypatch):
    from gpuconf.pipeline import render_any

    shutil.copytree(ROOT / "examples" / "fleet", tmp_path / "fleet")
    overlay = tmp_path / "fleet" / "overlays" / "us-prod.yaml"
    overlay.write_text(overlay.read_text(encoding="utf-8").replace("chartVersion: v26.3.3", "chartVersion: v26.7.0"),
                       encoding="utf-8")
    monkeypatch.chdir(tmp_path / "fleet")
    each = _images_of({c.name: tree for c, tree in render_any("fleet.yaml", "out").clusters})
    assert set(each["eu-prod"]) & set(each["us-prod"])  # both clusters pull the same operator images
    listed = run("images", "fleet.yaml").stdout.splitlines()
    assert listed == sorted({ref for refs in each.values() for ref in refs})
    assert len(listed) == len(set(listed)) < sum(len(refs) for refs in each.values())
    shared = [i for i in json.loads(run("images", "fleet.yaml", "--format", "json").stdout)["images"]
              if i["clusters"] == ["eu-prod", "us-prod"]]
    assert sorted(i["image"] for i in shared) == sorted(set(each["eu-prod"]) & set(each["us-prod"]))


def test_images_json_of_a_single_intent(run):
    doc = json.loads(run("images", "examples/single-pool.yaml", "--format", "json").stdout)
    listed = run("images", "examples/single-pool.yaml").stdout.splitlines()
    assert [i["image"] for i in doc["images"]] == listed
    assert {tuple(i["clusters"]) for i in doc["images"]} == {("lab",)}
    assert doc["notes"]


# --- bad --cluster ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ("diff", FLEET), ("diff", FLEET, "--against", "{out}"), ("diff", FLEET, "--to-chart", "v26.7.0"),
    ("images", FLEET), ("audit", FLEET, "--nodes", "{nodes}"),
])
def test_a_cluster_the_fleet_does_not_have_is_exit_2_with_a_did_you_mean(run, deployed, tmp_path, command):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}), encoding="utf-8")
    args = [a.format(out=deployed, nodes=nodes) for a in command]
    line = _one_line_exit_2(run(*args, "--cluster", "eu-prd"))
    assert line == (f"gpuconf: {FLEET} has no cluster 'eu-prd' (did you mean 'eu-prod'?); its 3 clusters: edge-lab, "
                    "eu-prod, us-prod")
    far = _one_line_exit_2(run(*args, "--cluster", "zzzz"))
    assert far == f"gpuconf: {FLEET} has no cluster 'zzzz'; its 3 clusters: edge-lab, eu-prod, us-prod"


def test_oc_mirror_of_a_fleet_needs_one_cluster(run):
    line = _one_line_exit_2(run("images", FLEET, "--oc-mirror", "4.20"))
    assert "--oc-mirror is about one of them; give --cluster NAME" in line


# --- the CI example ----------------------------------------------------------------------------------------------


def test_the_ci_examples_impact_steps_cover_every_cluster_of_a_fleet(tmp_path):
    """examples/ci/github-actions.yml's impact steps, run with bash in a repository laid out as its header says: a
    disruptive change in a fleet's base is posted for each cluster and fails the maintenance gate."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    repo, deployed = tmp_path / "repo", tmp_path / "deployed"
    (repo / "intents").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "single-pool.yaml", repo / "intents" / "lab.yaml")
    shutil.copytree(ROOT / "examples" / "fleet", repo / "fleets" / "ml-fleet")
    gpuconf = Path(sys.executable).parent / "gpuconf"
    env = {**os.environ, "PATH": f"{gpuconf.parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([str(gpuconf), "render", "intents/lab.yaml", "fleets/ml-fleet/fleet.yaml", "-o",
                    str(deployed / "out")], cwd=repo, check=True, capture_output=True, env=env)
    base = repo / "fleets" / "ml-fleet" / "base.yaml"
    base.write_text(base.read_text(encoding="utf-8").replace('version: "595.91.07"', 'version: "580.95.05"'),
                    encoding="utf-8")
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))
    steps = {step["name"]: step["run"] for step in workflow["jobs"]["gpuconf"]["steps"] if "run" in step}
    [plan] = [run for run in steps.values() if "> impact.md" in run]
    [gate] = [run for run in steps.values() if "--fail-on disruptive" in run]

    done = subprocess.run(["bash", "-e", "-c", plan], cwd=repo, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    posted = (repo / "impact.md").read_text(encoding="utf-8")
    # The summary first; the fleet's clusters in detail, the untouched intent in one line; no folder is removed.
    assert posted.startswith("# gpuconf review: 3 of 4 clusters affected, worst impact: disruptive\n")
    for name in CLUSTERS:
        assert f"\n## {name} (`fleets/ml-fleet/fleet.yaml`)\n" in posted
    assert "Unchanged: 1 cluster (lab)." in posted and "removed" not in posted
    assert not (repo / "impact-full.md").exists()  # it fits: no rest to upload
    gated = subprocess.run(["bash", "-e", "-c", gate], cwd=repo, capture_output=True, text=True, env=env)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    lines = gated.stdout.splitlines()
    assert lines[-1] == "::error::disruptive impact: merge it in a maintenance window, with the label maintenance"
    assert "=== fleets/ml-fleet/fleet.yaml ===" in lines and any(
        line.startswith("  DISRUPTIVE driver-upgrade") for line in lines), lines

    # The intent deleted: one call with every input left names its deployed folder, and the gate fails on it.
    base.write_text(base.read_text(encoding="utf-8").replace('version: "580.95.05"', 'version: "595.91.07"'),
                    encoding="utf-8")
    (repo / "intents" / "lab.yaml").unlink()
    done = subprocess.run(["bash", "-e", "-c", plan], cwd=repo, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    posted = (repo / "impact.md").read_text(encoding="utf-8")
    assert posted.startswith("# gpuconf review: 1 of 4 clusters affected, worst impact: disruptive\n")
    assert "| lab (removed) | `../deployed/out/lab` | **disruptive** |" in posted
    assert "\n## lab: removed (`../deployed/out/lab`)\n" in posted
    gated = subprocess.run(["bash", "-e", "-c", gate], cwd=repo, capture_output=True, text=True, env=env)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert gated.stdout.splitlines()[-3:] == [
        "=== cluster lab: removed (../deployed/out/lab) ===", "  DISRUPTIVE cluster-removed [l40s] (3 nodes)",
        "::error::disruptive impact: merge it in a maintenance window, with the label maintenance"]


def test_a_fleet_whose_base_is_missing_still_names_its_clusters(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fleet.yaml").write_text("apiVersion: gpuconf.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\n"
                                         "spec: {base: nope.yaml, clusters: [{name: lab}]}\n", encoding="utf-8")
    assert _one_line_exit_2(run("images", "fleet.yaml", "--cluster", "lap")) == \
        "gpuconf: fleet.yaml has no cluster 'lap' (did you mean 'lab'?); its one cluster: lab"
    named = run("diff", "fleet.yaml", "--cluster", "lab")
    assert named.exit_code == 1
    assert named.stdout == ("fleet.yaml:4:14: error GC401 spec.base: nope.yaml does not exist (hint: paths are "
                            "relative to the fleet file)\n")


def test_transition_warnings_of_a_fleet_cluster_point_into_its_overlay(run, deployed, tmp_path, monkeypatch):
    """validate --against and diff --against judge each cluster's transition from its own deployed folder (GC372),
    at the overlay's line."""
    shutil.copytree(ROOT / "examples" / "fleet", tmp_path / "fleet")
    overlay = tmp_path / "fleet" / "overlays" / "edge-lab.yaml"
    text = overlay.read_text(encoding="utf-8")
    overlay.write_text(text + "  driver:\n    upgrade:\n      waves: [[lab-l4]]\n", encoding="utf-8")
    line = len(text.splitlines()) + 3
    monkeypatch.chdir(tmp_path / "fleet")
    checked = run("validate", "fleet.yaml", "--against", str(deployed))
    assert checked.exit_code == 0
    assert checked.stdout.startswith(f"overlays/edge-lab.yaml:{line}:7: warning GC372 spec.driver.upgrade.waves: ")
    assert checked.stdout.count("GC372") == 1  # eu-prod and us-prod declare no waves
    plans = json.loads(run("diff", "fleet.yaml", "--against", str(deployed), "--format", "json").stdout)["clusters"]
    assert [(f["code"], f["file"], f["line"]) for f in plans["edge-lab"]["findings"]] == \
        [("GC372", "overlays/edge-lab.yaml", line)]
    assert plans["eu-prod"]["findings"] == plans["us-prod"]["findings"] == []


def test_against_values_of_a_fleet_compares_the_cluster_named(run, deployed):
    values = str(deployed / "eu-prod" / "values.yaml")
    line = _one_line_exit_2(run("diff", FLEET, "--against-values", values))
    assert line.endswith(": --against-values is about one of them; give --cluster NAME")
    same = run("diff", FLEET, "--against-values", values, "--cluster", "eu-prod")
    assert same.exit_code == 0 and "no leaf differs" in same.stdout
    other = run("diff", FLEET, "--against-values", values, "--cluster", "us-prod")
    assert other.exit_code == 1 and "leaves differ" in other.stdout


# --- the review of a 30-cluster fleet (issue 43, item 3) ------------------------------------------------------------


def test_a_thirty_cluster_review_fits_a_comment_and_leads_with_the_summary(run, tmp_path):
    """examples/regions without its stages (tests/test_fleet_stages.py has it with them)."""
    from gpuconf.output.review import COMMENT_LIMIT
    from test_fleet_stages import _bump, thirty

    fleet = thirty(tmp_path, stages="")
    deployed = tmp_path / "deployed"
    assert run("render", str(fleet / "fleet.yaml"), "-o", str(deployed)).exit_code == 0
    _bump(fleet)
    rest = tmp_path / "review-full.md"
    result = run("diff", str(fleet / "fleet.yaml"), "--against", str(deployed), "--format", "markdown",
                 "--markdown-rest", str(rest))
    assert result.exit_code == 1, result.stderr
    review = result.stdout
    assert len(review) <= COMMENT_LIMIT
    lines = review.splitlines()
    assert lines[0] == "# gpuconf review: 30 of 30 clusters affected, worst impact: disruptive"
    assert lines[2] == "| cluster | input | worst impact | impacts | documents changed |"
    assert len([line for line in lines if line.startswith("| ") and "**disruptive**" in line]) == 30
    full = rest.read_text(encoding="utf-8")
    assert len(full) > COMMENT_LIMIT and full.count("\n## ") >= 30  # every cluster's details
    assert f"the complete review is in `{rest}`" in review
    # Without the option the review still fits, and says how to get the rest.
    bare = run("diff", str(fleet / "fleet.yaml"), "--against", str(deployed), "--format", "markdown").stdout
    assert len(bare) <= COMMENT_LIMIT and "give `--markdown-rest FILE`" in bare

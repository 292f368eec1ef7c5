"""spec.security.admission: kyverno (issue 31, item 5): the Policy validates against Kyverno's own CRD (v1.19.0,
derived into schemas/crds by tools/derive_schemas.py), and its pattern admits every image the render uses and
refuses others, evaluated the way Kyverno's documentation says patterns work:

- a map in the pattern: each of its keys must be in the resource and match, except a key written `=(key)`, the
  conditional anchor, which is checked only when the resource has that key;
- a list in the pattern with one element: every element of the resource's list must match that element;
- a string: `|` separates alternatives, each trimmed of spaces; an alternative matches with wildcards, where `*`
  matches any run of characters (`/` included) and `?` one character (Kyverno uses IGLOU-EU/go-wildcard, a Minio
  fork: ext/wildcard/match.go), and the string matches when some alternative does.

(shared/reference/provenance/facts.md §9, from kyverno/kyverno v1.19.0.)
"""

from __future__ import annotations

import hashlib
from pathlib import Path
import json
import re
import shutil

import pytest
import yaml

from conftest import ROOT

AIRGAPPED = ROOT / "examples" / "airgapped.yaml"


def _wildcard(pattern: str, value: str) -> bool:
    regex = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, value, re.S) is not None


def matches(pattern, resource) -> bool:
    """Kyverno's pattern semantics as the module docstring states them."""
    if isinstance(pattern, dict):
        if not isinstance(resource, dict):
            return False
        for key, sub in pattern.items():
            anchored = re.fullmatch(r"=\((.+)\)", key)
            name = anchored.group(1) if anchored else key
            if name not in resource:
                if anchored:
                    continue
                return False
            if not matches(sub, resource[name]):
                return False
        return True
    if isinstance(pattern, list):
        [element] = pattern
        return isinstance(resource, list) and all(matches(element, item) for item in resource)
    if isinstance(pattern, str):
        return isinstance(resource, str) and any(_wildcard(alt.strip(), resource) for alt in pattern.split("|"))
    return pattern == resource


def _pod(image: str, init: str | None = None, ephemeral: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": image}]}
    if init is not None:
        spec["initContainers"] = [{"name": "i", "image": init}]
    if ephemeral is not None:
        spec["ephemeralContainers"] = [{"name": "e", "image": ephemeral}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_the_semantics_above_are_what_the_test_evaluates():
    assert matches("a/* | b/c:1", "a/x/y:2") and matches("a/* | b/c:1", "b/c:1") and not matches("a/*", "b/a/x")
    assert matches("v?.1", "v0.1") and not matches("v?.1", "v10.1")
    assert matches({"=(x)": [{"k": "v"}]}, {}) and not matches({"=(x)": [{"k": "v"}]}, {"x": [{"k": "w"}]})
    assert not matches({"x": [{"k": "v"}]}, {}) and not matches({"x": [{"k": "v"}]}, {"x": [{"k": "v"}, {"k": "w"}]})


def _render(run, intent, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("render", intent.name, "-o", "out")
    assert result.exit_code == 0, result.stdout + result.stderr
    folder = next(p for p in (tmp_path / "out").iterdir() if p.is_dir())
    docs = list(yaml.safe_load_all((folder / "manifests" / "admission.yaml").read_text(encoding="utf-8")))
    [policy] = [d for d in docs if d]
    return folder, policy


def _with_admission(source, folder, lock: bool = False):
    text = source.read_text(encoding="utf-8")
    assert "\n  security:\n    admission: kyverno " in text  # the example has the policy
    if lock:
        text = text.replace("    imagePullSecrets: [enclave-mirror]\n",
                            "    imagePullSecrets: [enclave-mirror]\n    imageLock: images.lock.yaml\n", 1)
    path = folder / "intent.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _policy_schema() -> dict:
    return json.loads((ROOT / "schemas" / "crds" / "kyverno.io_policy_v1.json").read_text(encoding="utf-8"))


def test_the_policy_validates_against_kyvernos_crd_and_admits_the_mirror_only(run, tmp_path, monkeypatch):
    import jsonschema

    intent = _with_admission(AIRGAPPED, tmp_path)
    folder, policy = _render(run, intent, tmp_path, monkeypatch)
    schema = _policy_schema()
    jsonschema.validate(policy, schema)  # the CRD's openAPIV3Schema, converted strict (unknown fields are errors)
    broken = json.loads(json.dumps(policy))
    broken["spec"]["rules"][0]["validate"]["failureAction"] = "Deny"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    index = json.loads((ROOT / "schemas" / "crds" / "index.json").read_text(encoding="utf-8"))
    assert index["kinds"]["kyverno.io/v1/Policy"]["file"] == "crds/kyverno.io_policy_v1.json"
    assert policy["metadata"]["namespace"] == "nvidia-gpu-operator"
    pattern = policy["spec"]["rules"][0]["validate"]["pattern"]
    used = run("images", intent.name, "--driver-os", "rhel9.6").stdout.split()
    assert used
    for image in used:
        assert matches(pattern, _pod(image)), image
        assert matches(pattern, _pod(used[0], init=image, ephemeral=image)), image
    for foreign in ("docker.io/library/busybox:1.36", "nvcr.io/nvidia/gpu-operator:v26.7.0",
                    "evil.example/registry.enclave.internal/nvidia/x:1"):
        assert not matches(pattern, _pod(foreign))
        assert not matches(pattern, _pod(used[0], init=foreign))
        assert not matches(pattern, _pod(used[0], ephemeral=foreign))
    report = (folder / "REPORT.md").read_text(encoding="utf-8")
    assert "## Admission policy (Kyverno)" in report
    assert "anything under the mirror (`registry.enclave.internal/nvidia/*`; `*` also matches `/`)" in report
    assert json.loads((folder / "report.json").read_text())["admission"]["images"] == [
        "registry.enclave.internal/nvidia/*"]


def test_with_a_lock_the_policy_admits_exactly_the_pinned_images(run, tmp_path, monkeypatch):
    refs = run("images", str(AIRGAPPED), "--driver-os", "rhel9.6").stdout.split()
    lock = {ref: "sha256:" + hashlib.sha256(ref.encode()).hexdigest() for ref in refs}
    (tmp_path / "images.lock.yaml").write_text(yaml.safe_dump(lock), encoding="utf-8")
    intent = _with_admission(AIRGAPPED, tmp_path, lock=True)
    folder, policy = _render(run, intent, tmp_path, monkeypatch)
    import jsonschema

    jsonschema.validate(policy, _policy_schema())
    pattern = policy["spec"]["rules"][0]["validate"]["pattern"]
    used = run("images", intent.name).stdout.split()
    assert used == sorted(f"{ref}@{digest}" for ref, digest in lock.items())
    for image in used:
        assert matches(pattern, _pod(image, init=image, ephemeral=image)), image
    for ref, digest in lock.items():
        assert not matches(pattern, _pod(ref))  # the tag alone
        assert not matches(pattern, _pod(f"{ref}@sha256:{'0' * 64}"))  # another digest
    assert not matches(pattern, _pod("docker.io/library/busybox:1.36"))
    report = json.loads((folder / "report.json").read_text())["admission"]
    assert report["pinned"] is True and report["images"] == used and report["lock"] == "images.lock.yaml"


def test_an_admission_policy_needs_a_mirror_or_a_lock(run, tmp_path, monkeypatch):
    shutil.copy(ROOT / "tests" / "cases" / "admission-without-mirror" / "intent.yaml", tmp_path / "intent.yaml")
    monkeypatch.chdir(tmp_path)
    result = run("render", "intent.yaml", "-o", "out")
    assert result.exit_code == 1 and "GC452" in result.stdout
    assert not (tmp_path / "out").exists()


# --- where the policy applies ----------------------------------------------------------------------------------

def test_the_policy_covers_every_namespace_the_render_runs_pods_in(tmp_path, monkeypatch):
    """Every pod-making object the render writes (the probe Jobs), and the chart's release namespace, have a Policy
    in their namespace, and REPORT.md names those namespaces and what Kyverno skips."""
    from gpuconf.pipeline import render_path
    from gpuconf.render import admission

    intent = _with_admission(AIRGAPPED, tmp_path)
    monkeypatch.chdir(tmp_path)
    tree = render_path(intent.name, "out").tree
    policies = {d["metadata"]["namespace"] for d in tree.documents[admission.FILE]}
    pods = {d["metadata"]["namespace"] for path, docs in tree.documents.items() if path.startswith("manifests/")
            for d in docs if d["kind"] in ("Job", "Deployment", "DaemonSet", "Pod")}
    [release] = [d for d in tree.documents["gitops/release/helm-release.yaml"] if d["kind"] == "HelmRelease"]
    assert pods and policies == pods | {release["spec"]["targetNamespace"]} == {"nvidia-gpu-operator"}
    report = tree.files["REPORT.md"]
    assert ("(`kyverno.io/v1`, namespaced) in `nvidia-gpu-operator`, every namespace this folder runs Pods in"
            in report)
    assert ("its chart's defaults skip every resource in `kube-node-lease`, `kube-public`, `kube-system`, `kyverno` "
            in report)
    assert json.loads(tree.files["report.json"])["admission"]["skipped"] == [
        "kube-node-lease", "kube-public", "kube-system", "kyverno"]


def test_a_pod_making_object_outside_the_policys_namespaces_is_a_verification_problem(tmp_path, monkeypatch):
    from gpuconf.pipeline import render_path
    from gpuconf.render import admission

    intent = _with_admission(AIRGAPPED, tmp_path)
    monkeypatch.chdir(tmp_path)
    tree = render_path(intent.name, "out").tree
    documents = json.loads(json.dumps(tree.documents))
    assert admission.problems(tree.plan, documents) == []
    documents["manifests/probes.yaml"][0]["metadata"]["namespace"] = "elsewhere"
    documents[admission.FILE].append(json.loads(json.dumps(documents[admission.FILE][0])))
    documents[admission.FILE][-1]["metadata"]["namespace"] = "kube-system"
    assert admission.problems(tree.plan, documents) == [
        "manifests/admission.yaml: no Policy in namespace elsewhere, where the render runs Pods",
        "manifests/admission.yaml: a Policy in namespace kube-system, which Kyverno skips"]


@pytest.mark.parametrize("namespace, kyverno, where, expected", [
    ("kube-public", None, "spec.operator.namespace", "Kyverno's default resourceFilters skip every resource there "
                                                     "([*/*,kube-public,*])"),
    ("kube-node-lease", None, "spec.operator.namespace", "([*/*,kube-node-lease,*])"),
    ("policy-engine", "policy-engine", "spec.operator.namespace", "it is Kyverno's own namespace"),
    (None, "gpu-operator", "spec.security.kyvernoNamespace", "it is Kyverno's own namespace"),
])
def test_namespaces_kyverno_skips_are_refused_where_they_are_set(run, tmp_path, namespace, kyverno, where, expected):
    text = (ROOT / "tests" / "cases" / "admission-kube-system" / "intent.yaml").read_text(encoding="utf-8")
    text = text.replace("    namespace: kube-system\n", f"    namespace: {namespace}\n" if namespace else "")
    if kyverno:
        text = text.replace("    admission: kyverno\n", f"    admission: kyverno\n    kyvernoNamespace: {kyverno}\n")
    (tmp_path / "intent.yaml").write_text(text, encoding="utf-8")
    result = run("validate", str(tmp_path / "intent.yaml"))
    assert result.exit_code == 1
    [line] = [line for line in result.stdout.splitlines() if " GC453 " in line]
    assert f" GC453 {where}: admission: kyverno would enforce nothing in the operator's namespace " in line
    assert expected in line
    (tmp_path / "intent.yaml").write_text(text.replace("    admission: kyverno\n", ""), encoding="utf-8")
    assert run("validate", str(tmp_path / "intent.yaml")).exit_code == 0  # without the policy, any namespace


# --- OpenShift's Driver Toolkit ------------------------------------------------------------------------------

#: What the operator puts into the driver DaemonSet's `openshift-driver-toolkit-ctr` container: the ImageStream
#: openshift/driver-toolkit's tag for the node's RHCOS version, as a release payload names it (the release repository
#: by digest, the form `oc adm release info --image-for=driver-toolkit` prints; the digest here is made up).
DTK = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + hashlib.sha256(b"driver-toolkit").hexdigest()


def _driver_pod(driver: str, manager: str, toolkit: str) -> dict:
    """A Pod of the driver DaemonSet the operator makes on OpenShift with the Driver Toolkit: the driver container
    and the toolkit beside it, the driver manager as init container."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nvidia-driver-daemonset-418.94-x"},
            "spec": {"initContainers": [{"name": "k8s-driver-manager", "image": manager}],
                     "containers": [{"name": "nvidia-driver-ctr", "image": driver},
                                    {"name": "openshift-driver-toolkit-ctr", "image": toolkit}]}}


def test_the_openshift_driver_toolkit_is_admitted_by_digest_in_the_release_repository(run, tmp_path, monkeypatch):
    """examples/airgapped.yaml: OpenShift, the chart with operator.use_ocp_driver_toolkit; the driver DaemonSet runs
    the toolkit image from the release payload, which is neither under the mirror nor in `gpuconf images`."""
    intent = _with_admission(AIRGAPPED, tmp_path)
    folder, policy = _render(run, intent, tmp_path, monkeypatch)
    pattern = policy["spec"]["rules"][0]["validate"]["pattern"]
    used = run("images", intent.name, "--driver-os", "rhel9.6").stdout.split()
    [driver] = [i for i in used if "/driver:" in i]
    [manager] = [i for i in used if "k8s-driver-manager" in i]
    assert DTK not in used
    assert matches(pattern, _driver_pod(driver, manager, DTK))
    for refused in ("quay.io/openshift-release-dev/ocp-v4.0-art-dev:latest",  # a tag
                    DTK[:-1],  # 63 characters of digest
                    DTK.replace("ocp-v4.0-art-dev@", "ocp-v4.0-art-dev-x@"),  # another repository
                    "quay.io/openshift/okd-content@" + DTK.split("@")[1]):  # OKD's, unless the intent names it
        assert not matches(pattern, _driver_pod(driver, manager, refused)), refused
    facts = json.loads((folder / "report.json").read_text())["admission"]
    assert facts["driverToolkit"] == "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "?" * 64
    assert "OpenShift's Driver Toolkit, which the operator runs beside the driver" in (folder / "REPORT.md").read_text()


def test_the_toolkit_follows_the_release_repository_and_the_lock(run, tmp_path, monkeypatch):
    refs = run("images", str(AIRGAPPED), "--driver-os", "rhel9.6").stdout.split()
    (tmp_path / "images.lock.yaml").write_text(yaml.safe_dump(
        {ref: "sha256:" + hashlib.sha256(ref.encode()).hexdigest() for ref in refs}), encoding="utf-8")
    intent = _with_admission(AIRGAPPED, tmp_path, lock=True)
    text = intent.read_text(encoding="utf-8").replace(
        "      install: helm\n", "      install: helm\n      releaseRepository: quay.io/openshift/okd-content\n")
    intent.write_text(text, encoding="utf-8")
    _, policy = _render(run, intent, tmp_path, monkeypatch)
    pattern = policy["spec"]["rules"][0]["validate"]["pattern"]
    pinned = run("images", intent.name).stdout.split()
    [driver] = [i for i in pinned if "/driver:" in i]
    [manager] = [i for i in pinned if "k8s-driver-manager" in i]
    okd = "quay.io/openshift/okd-content@" + DTK.split("@")[1]
    assert matches(pattern, _driver_pod(driver, manager, okd))  # the lock cannot pin it: an OpenShift update moves it
    assert not matches(pattern, _driver_pod(driver, manager, DTK))


def test_without_the_toolkit_nothing_of_the_release_is_admitted(run, tmp_path, monkeypatch):
    """A cluster that is not OpenShift runs no Driver Toolkit, and its policy admits no release image."""
    intent = _with_admission(AIRGAPPED, tmp_path)
    text = intent.read_text(encoding="utf-8").replace(
        "    distribution: openshift\n    openshift:\n      install: helm\n", "")
    intent.write_text(text, encoding="utf-8")
    folder, policy = _render(run, intent, tmp_path, monkeypatch)
    assert "quay.io" not in json.dumps(policy)
    assert json.loads((folder / "report.json").read_text())["admission"]["driverToolkit"] is None


# --- the Policy before the chart it guards ---------------------------------------------------------------------

def _tree(intent, tmp_path, monkeypatch):
    from gpuconf.pipeline import render_path

    monkeypatch.chdir(tmp_path)
    rendered = render_path(intent.name, "out")
    assert rendered.tree is not None, [f.text() for f in rendered.findings]
    return rendered.tree


def _gitops_objects(tree) -> list[dict]:
    return [d for path, docs in tree.documents.items() if path.startswith("gitops/") for d in docs]


def _check_crds(tree) -> None:
    """Every gitops/ object passes its CRD's schema and CEL rules (tests/cel.py)."""
    import cel
    from gpuconf.output import verify

    version = tree.plan.intent.spec.cluster.kubernetes_version
    for doc in _gitops_objects(tree):
        assert verify.verify_object(doc, version, doc["kind"]) == [], doc["metadata"]["name"]
        assert cel.violations(doc) == [], doc["metadata"]["name"]


def _kustomization_files(tree, folder: str) -> list[str]:
    """The manifest files a kustomization under gitops/ names, relative to the cluster folder."""
    import posixpath

    config = yaml.safe_load(tree.files[f"{folder}/kustomization.yaml"])
    return [posixpath.normpath(posixpath.join(folder, ref)) for ref in config.get("resources", [])
            if ref.startswith("../")]


def test_flux_applies_the_policy_and_its_namespace_before_the_release_it_guards(tmp_path, monkeypatch):
    """examples/airgapped.yaml (Flux): the admission Kustomization applies the namespaces and the Policy and waits
    for them; the release Kustomization, which applies the HelmRelease, dependsOn it (kustomize-controller holds a
    dependent until its dependency is Ready at the same source revision), and the manifests follow the release."""
    tree = _tree(_with_admission(AIRGAPPED, tmp_path), tmp_path, monkeypatch)
    _check_crds(tree)
    kustomizations = {d["metadata"]["name"]: d for d in _gitops_objects(tree) if d["kind"] == "Kustomization"}
    by_path = {k["spec"]["path"].rsplit("/gitops/", 1)[1]: k for k in kustomizations.values()}
    admission_ks, release_ks, manifests_ks = by_path["admission"], by_path["release"], by_path["manifests"]
    applies = {folder: _kustomization_files(tree, f"gitops/{folder}") for folder in by_path}
    assert applies["admission"] == ["manifests/namespaces.yaml", "manifests/admission.yaml"]
    assert "manifests/admission.yaml" not in applies["release"] + applies["manifests"]
    assert "manifests/namespaces.yaml" not in applies["release"]  # one owner per object
    assert "helm-release.yaml" in yaml.safe_load(tree.files["gitops/release/kustomization.yaml"])["resources"]
    # The order the dependencies make: admission, then the release, then the manifests.
    order, done = [], set()
    while len(order) < len(kustomizations):
        ready = sorted(name for name, k in kustomizations.items() if name not in done
                       and all(dep["name"] in done for dep in k["spec"].get("dependsOn", [])))
        assert ready, "a dependency cycle"
        order.append(ready[0])
        done.add(ready[0])
    names = [k["metadata"]["name"] for k in (admission_ks, release_ks, manifests_ks)]
    assert order == names == ["secure-enclave-gpu-admission", "secure-enclave-gpu-operator",
                              "secure-enclave-gpu-manifests"]
    assert admission_ks["spec"]["wait"] is True  # Ready only once Kyverno reports the Policy Ready
    assert admission_ks["spec"]["sourceRef"] == release_ks["spec"]["sourceRef"]  # the same revision, each commit
    assert "Flux applies it first: the Kustomization `secure-enclave-gpu-admission`" in tree.files["REPORT.md"]


def _argocd_with_admission(tmp_path) -> Path:
    text = (ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8")
    assert "    tool: argocd\n" in text
    text = text.replace("    namespace: gpu-operator\n",
                        "    namespace: gpu-operator\n    registry: registry.corp.example/nvidia\n", 1)
    text = text.replace("\n  pools:\n", "\n  security:\n    admission: kyverno\n  pools:\n", 1)
    path = tmp_path / "intent.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_argocd_applies_the_policy_in_the_chart_applications_wave_before_the_chart(tmp_path, monkeypatch):
    """Argo CD orders sync waves within one Application's sync, and each Application syncs a new commit on its own:
    the Policy is a source of the chart Application, in wave -1 (the chart's resources are in wave 0), and no other
    Application applies it."""
    import fnmatch

    tree = _tree(_argocd_with_admission(tmp_path), tmp_path, monkeypatch)
    _check_crds(tree)
    apps = {d["metadata"]["name"]: d for d in _gitops_objects(tree) if d["kind"] == "Application"}
    chart = apps["ml-prod-gpu-operator"]
    directories = [s for s in chart["spec"]["sources"] if "directory" in s]
    [source] = directories
    assert source["repoURL"] == chart["spec"]["sources"][1]["repoURL"]
    assert source["targetRevision"] == chart["spec"]["sources"][1]["targetRevision"]
    # What Argo CD's directory source reads: the files of its path that match `include` (recurse off).
    folder = source["path"].removeprefix("out/ml-prod/")
    listed = sorted(p.removeprefix(folder + "/") for p in tree.files if p.startswith(folder + "/")
                    and "/" not in p.removeprefix(folder + "/"))
    assert [p for p in listed if fnmatch.fnmatch(p, source["directory"]["include"])] == ["admission.yaml"]
    [policy] = tree.documents["manifests/admission.yaml"]
    assert policy["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-1"
    assert int(policy["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) < 0  # the chart's default wave
    # The manifests Application (the folder's kustomization.yaml) does not apply it.
    assert "manifests/admission.yaml" not in yaml.safe_load(tree.files["kustomization.yaml"])["resources"]
    assert "CreateNamespace=true" in chart["spec"]["syncPolicy"]["syncOptions"]  # its namespace comes first
    assert "Argo CD applies it first: it is a source of the chart Application `ml-prod-gpu-operator`" in \
        tree.files["REPORT.md"]


def test_by_hand_the_policy_is_applied_and_ready_before_the_chart(tmp_path, monkeypatch):
    intent = _with_admission(AIRGAPPED, tmp_path)
    text = intent.read_text(encoding="utf-8")
    intent.write_text(re.sub(r"\n  delivery:.*?\n(?=  overrides:)", "\n", text, flags=re.S), encoding="utf-8")
    tree = _tree(intent, tmp_path, monkeypatch)
    assert tree.plan.intent.spec.delivery.tool == "none"
    steps = json.loads(tree.files["report.json"])["acceptance"]
    commands = [c for step in steps for c in step["commands"]]
    policy = commands.index("kubectl apply -f manifests/namespaces.yaml -f manifests/admission.yaml")
    wait = commands.index("kubectl -n nvidia-gpu-operator wait policies.kyverno.io/gpuconf-operator-images "
                          "--for=condition=Ready --timeout=5m")
    helm = next(i for i, c in enumerate(commands) if c.startswith("helm upgrade --install"))
    assert policy < wait < helm
    assert "manifests/admission.yaml" in yaml.safe_load(tree.files["kustomization.yaml"])["resources"]


# --- a digest change: the lock it replaces, for one sync -----------------------------------------------------

def _lock(refs: list[str], salt: str) -> dict[str, str]:
    return {ref: "sha256:" + hashlib.sha256(f"{salt}:{ref}".encode()).hexdigest() for ref in refs}


def _policy_of(folder: Path) -> dict:
    [policy] = [d for d in yaml.safe_load_all((folder / "manifests" / "admission.yaml").read_text()) if d]
    return policy["spec"]["rules"][0]["validate"]["pattern"]


def test_a_digest_change_admits_the_deployed_digests_through_its_sync_and_no_longer(run, tmp_path, monkeypatch):
    """The transition: lock A is deployed; the change to lock B keeps A as spec.security.previousImageLock, so the
    Policy (applied before the chart) admits A's Pods that restart while the sync replaces them and B's new ones;
    the next change drops it. `validate --against` says when the change lacks it, and when it is no longer needed."""
    refs = run("images", str(AIRGAPPED), "--driver-os", "rhel9.6").stdout.split()
    old, new = _lock(refs, "a"), _lock(refs, "b")
    (tmp_path / "images.lock.yaml").write_text(yaml.safe_dump(old), encoding="utf-8")
    intent = _with_admission(AIRGAPPED, tmp_path, lock=True)
    monkeypatch.chdir(tmp_path)
    assert run("render", intent.name, "-o", "out").exit_code == 0
    deployed = tmp_path / "out" / "secure-enclave"
    [operator] = [r for r in refs if "/gpu-operator:" in r]
    a, b = f"{operator}@{old[operator]}", f"{operator}@{new[operator]}"
    assert matches(_policy_of(deployed), _pod(a)) and not matches(_policy_of(deployed), _pod(b))

    # The change to lock B alone: the new Policy would refuse a Pod of the deployed digests that restarts.
    (tmp_path / "images.lock.previous.yaml").write_text(yaml.safe_dump(old), encoding="utf-8")
    (tmp_path / "images.lock.yaml").write_text(yaml.safe_dump(new), encoding="utf-8")
    result = run("validate", intent.name, "--against", "out")
    assert result.exit_code == 0
    [warning] = [line for line in result.stdout.splitlines() if " GC374 " in line]
    assert warning.startswith("intent.yaml:") and " warning GC374 spec.operator.imageLock: the image lock moves " \
        f"{len(refs)} image(s) the deployed folder pins to other digests (such as " in warning
    assert "name it in spec.security.previousImageLock for this change" in warning

    # With the lock it replaces: both admitted, nothing else; the Policy does not depend on the folder it is
    # rendered over.
    text = intent.read_text(encoding="utf-8").replace(
        "    admission: kyverno", "    admission: kyverno\n    previousImageLock: images.lock.previous.yaml", 1)
    intent.write_text(text, encoding="utf-8")
    assert [line for line in run("validate", intent.name, "--against", "out").stdout.splitlines()
            if " GC374 " in line] == []
    assert run("render", intent.name, "-o", "fresh").exit_code == 0
    assert run("render", intent.name, "-o", "out").exit_code == 0
    moving = _policy_of(deployed)
    assert (deployed / "manifests" / "admission.yaml").read_bytes() == \
        (tmp_path / "fresh" / "secure-enclave" / "manifests" / "admission.yaml").read_bytes()
    for image in (a, b):
        assert matches(moving, _pod(image, init=image)), image
    assert not matches(moving, _pod(f"{operator}@sha256:{'0' * 64}"))
    assert not matches(moving, _pod(operator))
    facts = json.loads((deployed / "report.json").read_text())["admission"]
    assert facts["previousLock"] == "images.lock.previous.yaml"
    assert facts["previous"] == sorted(f"{ref}@{digest}" for ref, digest in old.items())
    assert facts["images"] == sorted(f"{ref}@{digest}" for ref, digest in new.items())
    assert f"it also admits the {len(refs)} digests of `images.lock.previous.yaml`" in \
        (deployed / "REPORT.md").read_text()
    # The flux admission Kustomization applies this Policy before the release that moves the digests.
    assert "../../manifests/admission.yaml" in (deployed / "gitops" / "admission" / "kustomization.yaml").read_text()

    # Deployed with B: the previous lock is admitted for nothing once that sync is done.
    result = run("validate", intent.name, "--against", "out")
    [warning] = [line for line in result.stdout.splitlines() if " GC374 " in line]
    assert " warning GC374 spec.security.previousImageLock: the deployed folder pins the lock's digests already: " \
        f"once its sync is done, the {len(refs)} image(s) of images.lock.previous.yaml are admitted for nothing" \
        in warning
    intent.write_text(text.replace("\n    previousImageLock: images.lock.previous.yaml", ""), encoding="utf-8")
    assert [line for line in run("validate", intent.name, "--against", "out").stdout.splitlines()
            if " GC374 " in line] == []
    assert run("render", intent.name, "-o", "out").exit_code == 0
    settled = _policy_of(deployed)
    assert matches(settled, _pod(b)) and not matches(settled, _pod(a))


@pytest.mark.parametrize("edit, expected", [
    (("    imageLock: images.lock.yaml\n", ""),
     "error GC454 spec.security.previousImageLock: previousImageLock is read only by an admission policy that pins "
     "images, but spec.operator.imageLock is not set (hint: drop previousImageLock)"),
    (("images.lock.previous.yaml", "./images.lock.yaml"),
     "error GC454 spec.security.previousImageLock: previousImageLock names the image lock itself "
     "(./images.lock.yaml) (hint: keep the lock the change replaces as a file of its own (e.g. "
     "images.lock.previous.yaml) and name that one)"),
])
def test_a_previous_lock_needs_a_policy_that_pins(run, tmp_path, monkeypatch, edit, expected):
    refs = run("images", str(AIRGAPPED), "--driver-os", "rhel9.6").stdout.split()
    for name, salt in (("images.lock.yaml", "b"), ("images.lock.previous.yaml", "a")):
        (tmp_path / name).write_text(yaml.safe_dump(_lock(refs, salt)), encoding="utf-8")
    intent = _with_admission(AIRGAPPED, tmp_path, lock=True)
    text = intent.read_text(encoding="utf-8").replace(
        "    admission: kyverno", "    admission: kyverno\n    previousImageLock: images.lock.previous.yaml", 1)
    intent.write_text(text.replace(*edit), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run("validate", intent.name)
    assert result.exit_code == 1
    assert [line.split(": ", 1)[1] for line in result.stdout.splitlines() if " GC454 " in line] == [expected]


def test_an_unreadable_previous_lock_is_exit_2_and_writes_nothing(run, tmp_path, monkeypatch):
    refs = run("images", str(AIRGAPPED), "--driver-os", "rhel9.6").stdout.split()
    (tmp_path / "images.lock.yaml").write_text(yaml.safe_dump(_lock(refs, "b")), encoding="utf-8")
    intent = _with_admission(AIRGAPPED, tmp_path, lock=True)
    intent.write_text(intent.read_text(encoding="utf-8").replace(
        "    admission: kyverno", "    admission: kyverno\n    previousImageLock: gone.yaml", 1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run("render", intent.name, "-o", "out")
    assert result.exit_code == 2
    assert "gone.yaml: the image lock (spec.security.previousImageLock) does not exist or is not a file" \
        in result.stderr
    assert "Traceback" not in result.stdout + result.stderr and not (tmp_path / "out").exists()

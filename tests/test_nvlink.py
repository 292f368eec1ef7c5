"""NVLink racks (pools[].nvlink, issue 44 items 1 and 2): the DRA driver's release beside the operator's for
ComputeDomains, its delivery and order, each team's ComputeDomain, and a multi-node job Kueue admits inside one clique.

Facts (../shared/reference/dra/facts.md keys): the chart dra-driver-nvidia-gpu v0.4.1 (values.yaml, templates/
validation.yaml, crds/), its ComputeDomain CRD; Kueue v0.19.2 (pkg/dra/claims.go, flavorassigner/tas_flavorassigner.go)
as modelled by tests/test_kueue.py's _admit.
"""

from __future__ import annotations

import copy
import textwrap

import pytest
from ruamel.yaml import YAML

from conftest import ROOT
from test_kueue import _admit, build, kinds

EXAMPLE = ROOT / "examples" / "nvl72.yaml"
YAML11 = YAML(typ="safe", pure=True)


def _tree(path):
    from gpuconf.render.tree import Command, render_tree

    plan = build(path)
    return plan, render_tree(plan, Command("x", "out"))


@pytest.fixture(scope="module")
def nvl72():
    return _tree(EXAMPLE)


def _variant(tmp_path, *edits, name="intent.yaml"):
    text = EXAMPLE.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _docs(tree, path):
    return [d for d in YAML11.load_all(tree.files[path]) if d is not None]


def test_the_dra_driver_release_keeps_the_device_plugin_and_runs_compute_domains_on_the_nvlink_pool_only(nvl72):
    plan, tree = nvl72
    values = YAML11.load(tree.files["dra-driver/values.yaml"])
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "gpuconf.dev/pool", "operator": "In", "values": ["nvl72"]}]}]}
    # The chart's own toleration stays; the pool's taint is added (the list replaces the chart's).
    assert values["kubeletPlugin"]["tolerations"] == [
        {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
        {"effect": "NoSchedule", "key": "gpuconf.dev/pool", "operator": "Equal", "value": "nvl72"}]
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver"  # the operator's driver container
    # The operator keeps the device plugin: its values are the device-plugin stack's, no GPUCluster.
    operator_values = YAML11.load(tree.files["values.yaml"]) or {}
    assert "gpuCluster" not in operator_values and "clusterPolicy" not in operator_values


def test_the_values_are_checked_against_the_charts_own_keys(nvl72):
    from gpuconf.render import nvlink

    plan, _ = nvl72
    assert nvlink.problems(plan, nvlink.values(plan)) == []
    wrong = copy.deepcopy(nvlink.values(plan))
    wrong["kubeletPlugin"]["tolerationz"] = []
    wrong["resources"]["gpus"]["enabled"] = "false"
    assert nvlink.problems(plan, wrong) == [
        "dra-driver/values.yaml kubeletPlugin: Additional properties are not allowed ('tolerationz' was unexpected)",
        "dra-driver/values.yaml resources.gpus.enabled: 'false' is not of type 'boolean'"]


def test_both_releases_pass_their_crds_and_sync_in_order_under_argo_cd(nvl72):
    from gpuconf.output.verify import verify_object

    plan, tree = nvl72
    apps = {}
    for path in ("gitops/application-gpu-operator.yaml", "gitops/application-dra-driver.yaml",
                 "gitops/application-manifests.yaml"):
        (app,) = _docs(tree, path)
        assert verify_object(app, "1.34", path) == []
        apps[path] = app
    waves = [int(a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) for a in apps.values()]
    assert waves == [0, 1, 2]  # operator (driver, GFD's clique label), then the DRA driver (CRDs), then manifests
    dra = apps["gitops/application-dra-driver.yaml"]["spec"]
    assert dra["destination"]["namespace"] == "dra-driver-nvidia-gpu"
    assert dra["sources"][0] == {
        "repoURL": "registry.k8s.io/dra-driver-nvidia/charts", "chart": "dra-driver-nvidia-gpu",
        "targetRevision": "0.4.1",
        "helm": {"releaseName": "dra-driver-nvidia-gpu", "valueFiles": ["$values/out/nvl72-prod/dra-driver/values.yaml"],
                 "kubeVersion": "1.34", "skipCrds": False}}
    assert "CreateNamespace=true" in dra["syncPolicy"]["syncOptions"]
    assert dra["syncPolicy"]["managedNamespaceMetadata"]["labels"]["pod-security.kubernetes.io/enforce"] == \
        "privileged"
    kustomization = YAML11.load(tree.files["gitops/kustomization.yaml"])
    assert "application-dra-driver.yaml" in kustomization["resources"]
    for doc in _docs(tree, "manifests/compute-domains.yaml"):
        assert verify_object(doc, "1.34", "compute-domains.yaml") == []


def test_flux_applies_the_dra_driver_after_the_operator_and_before_the_manifests(tmp_path):
    from gpuconf.output.verify import verify_object

    path = _variant(tmp_path, ("tool: argocd", "tool: flux"),
                    ("    repoURL: https://git.example.com/platform/gpu-gitops.git\n", ""),
                    ("    targetRevision: main\n", ""))
    plan, tree = _tree(path)
    ks = {d["metadata"]["name"]: d for d in _docs(tree, "gitops/flux-kustomizations.yaml")}
    assert ks["nvl72-prod-dra-driver-nvidia-gpu"]["spec"]["dependsOn"] == [{"name": "nvl72-prod-gpu-operator"}]
    assert ks["nvl72-prod-gpu-manifests"]["spec"]["dependsOn"] == [
        {"name": "nvl72-prod-gpu-operator"}, {"name": "nvl72-prod-dra-driver-nvidia-gpu"}]
    assert ks["nvl72-prod-dra-driver-nvidia-gpu"]["spec"]["path"] == "./out/nvl72-prod/gitops/dra-driver"
    (release,) = _docs(tree, "gitops/dra-driver/helm-release.yaml")
    (source,) = _docs(tree, "gitops/dra-driver/chart-source.yaml")
    for doc in [*ks.values(), release, source]:
        assert verify_object(doc, "1.34", "flux") == []
    assert release["spec"]["targetNamespace"] == "dra-driver-nvidia-gpu"
    assert release["spec"]["install"]["crds"] == "CreateReplace"  # the ComputeDomain CRDs come with the chart
    assert source["spec"]["url"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert source["spec"]["ref"] == {"tag": "0.4.1"}
    config = YAML11.load(tree.files["gitops/dra-driver/kustomization.yaml"])
    assert config["configMapGenerator"][0]["files"] == ["values.yaml=../../dra-driver/values.yaml"]
    assert "dra-driver/values.yaml" in tree.files
    # The release's namespace, privileged, is applied with the operator's early manifests, before the release.
    namespaces = {d["metadata"]["name"]: d for d in _docs(tree, "manifests/namespaces.yaml")}
    assert namespaces["dra-driver-nvidia-gpu"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == \
        "privileged"


def test_a_mirror_and_a_host_driver_reach_the_values(tmp_path):
    path = _variant(tmp_path, ("    namespace: gpu-operator\n",
                               "    namespace: gpu-operator\n    registry: registry.corp.example/nvidia\n"
                               "    imagePullSecrets: [corp-mirror]\n"),
                    ("      gpusPerNode: 4            # a compute tray",
                     "      driver:\n        preinstalled: true\n      gpusPerNode: 4            # a compute tray"))
    plan, tree = _tree(path)
    values = YAML11.load(tree.files["dra-driver/values.yaml"])
    assert values["image"] == {"repository": "registry.corp.example/nvidia/dra-driver-nvidia/dra-driver-nvidia-gpu"}
    assert values["imagePullSecrets"] == [{"name": "corp-mirror"}]
    assert "nvidiaDriverRoot" not in values  # the chart's default, /: the host's driver
    (app,) = _docs(tree, "gitops/application-dra-driver.yaml")
    assert app["spec"]["sources"][0]["repoURL"] == "registry.corp.example/nvidia/charts"


def test_each_team_namespace_on_an_nvlink_pool_gets_a_compute_domain_and_its_channel(nvl72):
    plan, tree = nvl72
    (domain,) = _docs(tree, "manifests/compute-domains.yaml")
    assert domain["metadata"]["namespace"] == "training" and domain["metadata"]["name"] == "gpuconf-nvl72"
    assert domain["spec"] == {"numNodes": 0, "channel": {"allocationMode": "Single",
                                                          "resourceClaimTemplate": {"name": "gpuconf-nvl72-channel"}}}
    resources = YAML11.load(tree.files["kustomization.yaml"])["resources"]
    assert "manifests/compute-domains.yaml" in resources


def _queues(tree):
    docs = [d for p, t in tree.files.items() if p.startswith("manifests/") for d in YAML11.load_all(t) if d]
    flavors = {d["metadata"]["name"]: d["spec"] for d in kinds(docs, "ResourceFlavor")}
    queues = {d["metadata"]["name"]: d for d in kinds(docs, "ClusterQueue")}
    topologies = {d["metadata"]["name"]: d["spec"] for d in kinds(docs, "Topology")}
    return flavors, queues, topologies


def _kueue_config(tree) -> dict:
    """The Kueue Configuration's resources as REPORT.md asks for them, with the channel template's class."""
    import json

    report = json.loads(tree.files["report.json"])
    return {"quotaCheckStrategy": "IgnoreUndeclared",
            "deviceClassMappings": [report["nvlink"]["kueue"]["mapping"]],
            "claims": {"gpuconf-nvl72-channel": "compute-domain-default-channel.nvidia.com"}}


def _fits_one_clique(pod: dict, job: dict, nodes: dict[str, dict]) -> bool:
    """Kueue TAS at the required level: all the job's pods inside one domain of the level, each pod on a node with
    room for its GPUs (nodes: name -> labels and allocatable GPUs)."""
    level = job["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"]
    gpus = int(job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
    domains: dict[str, int] = {}
    for node in nodes.values():
        if all(node["labels"].get(k) == v for k, v in pod["nodeSelector"].items()) and level in node["labels"]:
            domains[node["labels"][level]] = domains.get(node["labels"][level], 0) + node["gpus"] // gpus
    return any(n >= job["spec"]["parallelism"] for n in domains.values())


def test_the_reports_multi_node_job_is_admitted_inside_one_clique(nvl72):
    import json

    plan, tree = nvl72
    flavors, queues, topologies = _queues(tree)
    job = YAML11.load(json.loads(tree.files["report.json"])["nvlink"]["jobExample"])
    assert job["spec"]["parallelism"] == 18
    queue = queues["gpuconf-team-training"]
    pod = _admit(job, queue, flavors, _kueue_config(tree))
    assert set(pod["assignedFlavors"]) == {"gpuconf-pool-nvl72"}  # the GPUs and the channels
    flavor = flavors["gpuconf-pool-nvl72"]
    assert topologies[flavor["topologyName"]]["levels"] == [{"nodeLabel": "nvidia.com/gpu.clique"},
                                                           {"nodeLabel": "kubernetes.io/hostname"}]
    rack = {f"tray-{i}": {"labels": {"gpuconf.dev/pool": "nvl72", "nvidia.com/gpu.clique": "c1e5.7"}, "gpus": 4}
            for i in range(18)}
    assert _fits_one_clique(pod, job, rack)
    # A rack split in two cliques (a failed NVLink switch tray) cannot hold the 18-tray job.
    split = copy.deepcopy(rack)
    for i in range(9):
        split[f"tray-{i}"]["labels"]["nvidia.com/gpu.clique"] = "c1e5.8"
    assert not _fits_one_clique(pod, job, split)
    # Without the mapping REPORT.md asks for, Kueue refuses the channel claim.
    with pytest.raises(AssertionError, match="compute-domain-default-channel.nvidia.com is not mapped"):
        _admit(job, queue, flavors, {**_kueue_config(tree), "deviceClassMappings": []})
    # More channels than the quota gives: 73 pods of one GPU each do not fit the team's 72.
    big = copy.deepcopy(job)
    big["spec"]["parallelism"] = 73
    big["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    with pytest.raises(AssertionError, match="no flavor fits"):
        _admit(big, queue, flavors, _kueue_config(tree))


def test_a_topology_bound_job_taking_cpu_from_the_plain_flavor_is_refused(tmp_path):
    """What GC475 warns about: with otherResources the team's cpu sits on gpuconf-any-node, which has no topology."""
    path = _variant(tmp_path, ("      teams:\n        inference:",
                               "      teams:\n        training:\n          otherResources: {cpu: 2000, memory: 16Ti}\n"
                               "        inference:"))
    plan, tree = _tree(path)
    flavors, queues, _ = _queues(tree)
    job = YAML11.load(__import__("json").loads(tree.files["report.json"])["nvlink"]["jobExample"])
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "8"}
    with pytest.raises(AssertionError, match="no flavor fits cpu"):
        _admit(job, queues["gpuconf-team-training"], flavors, _kueue_config(tree))


def test_on_the_gpucluster_stack_the_operator_runs_compute_domains_and_no_second_release(tmp_path):
    path = _variant(tmp_path, ("    distribution: vanilla\n", "    distribution: vanilla\n    allocation: dra\n"),
                    ("  computeDomains:               # the DRA driver release beside the operator (these are the "
                     "defaults)\n    chartVersion: \"0.4.1\"\n    namespace: dra-driver-nvidia-gpu\n", ""),
                    ("      sharing: infer-mig\n", ""),
                    ("        infer-b200:\n          \"3g.90gb\": 32\n          \"2g.45gb\": 32\n          \"1g.23gb\": 64\n",
                     "        infer-b200: 32\n"))
    plan, tree = _tree(path)
    assert "dra-driver/values.yaml" not in tree.files and "gitops/application-dra-driver.yaml" not in tree.files
    from gpuconf.render.chart import get

    assert get(tree.values.merged_view(), "draDriver.computeDomains.enabled") is True
    assert _docs(tree, "manifests/compute-domains.yaml")[0]["metadata"]["name"] == "gpuconf-nvl72"


def test_the_intent_without_nvlink_renders_no_dra_driver(tmp_path):
    path = _variant(tmp_path, ("      nvlink:\n        traysPerRack: 18        # one NVL72 rack is one NVLink domain "
                               "of 72 GPUs\n        rackLabel: example.com/rack\n", ""),
                    ("  computeDomains:               # the DRA driver release beside the operator (these are the "
                     "defaults)\n    chartVersion: \"0.4.1\"\n    namespace: dra-driver-nvidia-gpu\n", ""))
    plan, tree = _tree(path)
    assert not any(p.startswith(("dra-driver/", "gitops/application-dra")) for p in tree.files)
    assert "manifests/compute-domains.yaml" not in tree.files
    (app,) = _docs(tree, "gitops/application-manifests.yaml")
    assert app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "1"  # unchanged for other clusters
    assert "## NVLink racks" not in tree.files["REPORT.md"]


def test_a_staged_fleet_syncs_each_stages_dra_driver_after_its_charts_and_before_its_manifests(tmp_path, run):
    """The fleet's RollingSync (render/rollout.py) has a step for the DRA driver Applications of each stage, between
    the chart's and the manifests', so no Application is left out of the rollout (RollingSync never syncs one that no
    step selects)."""
    (tmp_path / "base.yaml").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "canary.yaml").write_text("metadata:\n  labels: {tier: canary}\n", encoding="utf-8")
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent("""\
        apiVersion: gpuconf.dev/v1alpha1
        kind: Fleet
        metadata:
          name: racks
        spec:
          base: base.yaml
          clusters:
            - name: rack-a
              overlay: canary.yaml
            - name: rack-b
          stages:
            - name: canary
              matchLabels: {tier: canary}
            - name: rest
        """), encoding="utf-8")
    result = run("render", str(tmp_path / "fleet.yaml"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    (appset,) = [d for d in YAML11.load_all((tmp_path / "out" / "racks" / "applicationset.yaml").read_text())
                 if d is not None]
    steps = [{e["key"]: e["values"][0] for e in s["matchExpressions"]}
             for s in appset["spec"]["strategy"]["rollingSync"]["steps"]]
    assert steps == [{"gpuconf.dev/stage": stage, "gpuconf.dev/part": part} for stage in ("canary", "rest")
                     for part in ("gpu-operator", "dra-driver", "manifests")]
    elements = appset["spec"]["generators"][0]["list"]["elements"]
    parts = sorted((e["cluster"], e["app"]["metadata"]["labels"]["gpuconf.dev/part"]) for e in elements)
    assert parts == [(c, p) for c in ("rack-a", "rack-b") for p in ("dra-driver", "gpu-operator", "manifests")]


def test_on_gke_the_release_finds_the_driver_where_gkes_installer_puts_it(tmp_path):
    """GKE's nodes keep their own driver (gpuconf's platform default), under /home/kubernetes/bin/nvidia (facts §4)."""
    path = _variant(tmp_path, ("    distribution: vanilla", "    distribution: gke"),
                    ("  driver:\n    version: \"595.91.07\"        # ComputeDomains need 570.158.01 or later\n", ""))
    plan, tree = _tree(path)
    assert YAML11.load(tree.files["dra-driver/values.yaml"])["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"
    assert "`nvidiaDriverRoot` `/home/kubernetes/bin/nvidia`: where GKE installs the driver" in tree.files["REPORT.md"]


def test_images_lists_the_dra_driver_for_the_mirror(tmp_path, run):
    """`gpuconf images` names the release's image (the chart's appVersion, v0.4.1), and under a mirror where the mirror
    copies it from."""
    result = run("images", str(EXAMPLE), "--driver-os", "ubuntu24.04")
    assert result.exit_code == 0, result.output
    assert "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1" in result.stdout.splitlines()
    path = _variant(tmp_path, ("    namespace: gpu-operator\n",
                               "    namespace: gpu-operator\n    registry: registry.corp.example/nvidia\n"))
    result = run("images", str(path), "--driver-os", "ubuntu24.04", "--pairs")
    assert result.exit_code == 0, result.output
    assert ("registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1 "
            "registry.corp.example/nvidia/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1") in result.stdout.splitlines()


def test_the_image_lock_pins_the_dra_driver_image_too(tmp_path, run):
    """With spec.operator.imageLock, the lock must hold the release's image (GC450 names it), and its digest reaches
    the chart's image.tag, which the chart writes after the repository (templates/_helpers.tpl fullimage)."""
    images = run("images", str(EXAMPLE), "--driver-os", "ubuntu24.04")
    assert images.exit_code == 0
    digest = "sha256:" + "ab" * 32
    lock = {ref: digest for ref in images.stdout.split()}
    ref = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"
    path = _variant(tmp_path, ("    namespace: gpu-operator\n", "    namespace: gpu-operator\n"
                                                             "    imageLock: images.lock.yaml\n"))
    (tmp_path / "images.lock.yaml").write_text("".join(f"{r}: {d}\n" for r, d in lock.items() if r != ref))
    result = run("validate", str(path))
    assert result.exit_code == 1 and f"images.lock.yaml has no digest for {ref}" in result.stdout, result.stdout
    (tmp_path / "images.lock.yaml").write_text("".join(f"{r}: {d}\n" for r, d in lock.items()))
    plan, tree = _tree(path)
    assert YAML11.load(tree.files["dra-driver/values.yaml"])["image"] == {"tag": f"v0.4.1@{digest}"}


def test_the_release_may_share_the_operators_namespace(tmp_path):
    """As on the GPUCluster stack: no second Namespace document, and the operator's Application keeps creating it."""
    path = _variant(tmp_path, ("    namespace: dra-driver-nvidia-gpu", "    namespace: gpu-operator"))
    plan, tree = _tree(path)
    names = [d["metadata"]["name"] for d in _docs(tree, "manifests/namespaces.yaml")]
    assert sorted(names) == ["gpu-operator", "inference", "training"]
    (app,) = _docs(tree, "gitops/application-dra-driver.yaml")
    assert app["spec"]["destination"]["namespace"] == "gpu-operator"
    assert "managedNamespaceMetadata" not in app["spec"]["syncPolicy"]
    assert "CreateNamespace=true" not in app["spec"]["syncPolicy"]["syncOptions"]


def test_admission_guards_the_dra_driver_namespace_first(tmp_path):
    """spec.security.admission: kyverno covers every namespace the render runs Pods in, the DRA driver release's too
    (its kubelet plugin, controller and IMEX daemons). That Policy is applied by the release's own delivery before its
    chart: Argo CD's DRA Application creates the namespace and applies it in wave -1; Flux's admission Kustomization
    applies it with the namespaces before anything else."""
    registry = ("    namespace: gpu-operator\n", "    namespace: gpu-operator\n    registry: registry.corp.example/nvidia\n")
    security = ("  delivery:\n", "  security:\n    admission: kyverno\n  delivery:\n")
    plan, tree = _tree(_variant(tmp_path, registry, security))
    (policy,) = _docs(tree, "manifests/admission-dra-driver.yaml")
    assert policy["metadata"]["namespace"] == "dra-driver-nvidia-gpu"
    assert policy["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-1"
    pattern = policy["spec"]["rules"][0]["validate"]["pattern"]["spec"]["containers"][0]["image"]
    assert pattern == "registry.corp.example/nvidia/*"
    assert "manifests/admission-dra-driver.yaml" not in YAML11.load(tree.files["kustomization.yaml"])["resources"]
    (app,) = _docs(tree, "gitops/application-dra-driver.yaml")
    assert app["spec"]["sources"][-1]["directory"] == {"include": "admission-dra-driver.yaml"}
    assert "CreateNamespace=true" in app["spec"]["syncPolicy"]["syncOptions"]

    flux = _variant(tmp_path, registry, security, ("tool: argocd", "tool: flux"),
                    ("    repoURL: https://git.example.com/platform/gpu-gitops.git\n", ""),
                    ("    targetRevision: main\n", ""), name="flux.yaml")
    plan, tree = _tree(flux)
    first = YAML11.load(tree.files["gitops/admission/kustomization.yaml"])["resources"]
    assert first == ["../../manifests/namespaces.yaml", "../../manifests/admission.yaml",
                     "../../manifests/admission-dra-driver.yaml"]
    ks = {d["metadata"]["name"]: d for d in _docs(tree, "gitops/flux-kustomizations.yaml")}
    assert ks["nvl72-prod-gpu-operator"]["spec"]["dependsOn"] == [{"name": "nvl72-prod-gpu-admission"}]
    assert ks["nvl72-prod-dra-driver-nvidia-gpu"]["spec"]["dependsOn"] == [{"name": "nvl72-prod-gpu-operator"}]


def test_the_clusters_appproject_admits_the_dra_driver_application(tmp_path):
    """spec.delivery.signedCommits: the cluster's AppProject lists the DRA chart's repository and the release's
    namespace, or Argo CD would refuse the DRA Application (the render checks the project admits every Application
    that names it)."""
    path = _variant(tmp_path, ("    path: out\n", "    path: out\n    signedCommits:\n      keys: [\"0123456789ABCDEF\"]\n"))
    plan, tree = _tree(path)
    (project,) = _docs(tree, "gitops/appproject.yaml")
    assert "registry.k8s.io/dra-driver-nvidia/charts" in project["spec"]["sourceRepos"]
    assert {"server": "https://kubernetes.default.svc", "namespace": "dra-driver-nvidia-gpu"} in \
        project["spec"]["destinations"]
    (app,) = _docs(tree, "gitops/application-dra-driver.yaml")
    assert app["spec"]["project"] == project["metadata"]["name"]


def test_credentials_in_the_dra_chart_repository_are_refused_masked(run, tmp_path):
    """GC354 covers spec.computeDomains.chartRepository too: it reaches the Application and the OCIRepository."""
    path = _variant(tmp_path, ("    chartVersion: \"0.4.1\"\n", "    chartVersion: \"0.4.1\"\n    chartRepository: "
                                                             "oci://user:secret@registry.corp.example/charts\n"))
    result = run("validate", str(path))
    assert result.exit_code == 1
    assert "error GC354 spec.computeDomains.chartRepository" in result.stdout
    assert "user:secret" not in result.stdout and "oci://***@registry.corp.example/charts" in result.stdout


def test_a_10k_character_rack_label_is_cut_in_its_finding(run, tmp_path):
    path = _variant(tmp_path, ("rackLabel: example.com/rack", "rackLabel: " + "x" * 10000))
    result = run("validate", str(path))
    assert result.exit_code == 1
    (line,) = [t for t in result.stdout.splitlines() if "GC474" in t]
    assert f"rackLabel: '{'x' * 57}...' is not a label key" in line and len(line) < 400

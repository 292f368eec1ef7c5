"""Platforms and GPUs: what each distribution renders, checked on the output the way its consumer reads it."""

from __future__ import annotations

import json
import subprocess
import textwrap

import re

import pytest
import yaml
from ruamel.yaml import YAML

YAML11 = YAML(typ="safe", pure=True)


def _validate(tmp_path, text: str, name: str = "intent.yaml"):
    from gpuconf.intent.validate import validate_path

    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return validate_path(path)


def _render(tmp_path, text: str, name: str = "intent.yaml"):
    from gpuconf.pipeline import render_path

    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    rendered = render_path(str(path), "out")
    assert rendered.ok, [str(f) for f in rendered.findings]
    return rendered.tree


def _docs(text: str) -> list[dict]:
    return [d for d in YAML11.load_all(text) if d is not None]


def _codes(result) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity, f.path) for f in result.findings]


# --- GPUs that share a PCI device id ------------------------------------------------------------------------------

A2_A16 = """\
    apiVersion: gpuconf.dev/v1alpha1
    kind: ClusterIntent
    metadata: {name: vdi}
    spec:
      cluster: {kubernetesVersion: "1.33"}
      operator: {chartVersion: v26.7.0}
      pools:
        - {name: a2, gpu: A2, gpusPerNode: 1, nodes: 4, match: {pciDevice: true}}
        - {name: a16, gpu: A16, gpusPerNode: 4, nodes: 2, match: {pciDevice: true}}
    """


def test_a2_and_a16_pools_are_disjoint_and_their_rules_match_the_subsystem(tmp_path):
    result = _validate(tmp_path, A2_A16)
    assert result.findings == []  # no GC303: the subsystem ids tell the two GPUs apart
    tree = _render(tmp_path, A2_A16)
    rules = {d["metadata"]["name"]: d for d in _docs(tree.files["manifests/node-feature-rules.yaml"])}
    for pool, subdevice in (("a2", "157e"), ("a16", "14a9")):
        [feature] = rules[f"gpuconf-pool-{pool}"]["spec"]["rules"][0]["matchFeatures"]
        assert feature["feature"] == "pci.device"
        assert feature["matchExpressions"] == {
            "vendor": {"op": "In", "value": ["10de"]}, "device": {"op": "In", "value": ["25b6"]},
            "subsystem_vendor": {"op": "In", "value": ["10de"]}, "subsystem_device": {"op": "In", "value": [subdevice]}}


def test_a_declared_model_on_a_shared_device_id_needs_its_own_subsystem(tmp_path):
    # Without a subsystem id a node with an A2 would be both A2 and X1: GC344 refuses the declaration.
    text = A2_A16.replace("      pools:", """      gpuModels:
            X1: {pciDeviceIds: ["0x25B610DE"], memoryGiB: 16}
      pools:""").replace("gpu: A16", "gpu: X1")
    assert _codes(_validate(tmp_path, text)) == [("GC344", "error", "spec.gpuModels.X1.pciDeviceIds")]
    with_subsystem = text.replace('memoryGiB: 16}', 'memoryGiB: 16, pciSubsystemIds: ["0x000110DE"]}')
    assert _validate(tmp_path, with_subsystem).findings == []


def _values(tree) -> dict:
    return YAML11.load(tree.files["values.yaml"]) or {}


def _merged(tree) -> dict:
    return tree.values.merged()


def _policy(tree) -> dict:
    """The ClusterPolicy spec the chart renders from the tree's values (the operator's view of them)."""
    from gpuconf.render.clusterpolicy import spec, without_nulls

    return without_nulls(spec(_merged(tree), tree.plan.chart_version))


def _verified(tree) -> None:
    """Every document of the tree passes gpuconf's own verification again, and what is written is what it checked."""
    from gpuconf.output import verify

    version = tree.plan.intent.spec.cluster.kubernetes_version
    for path, docs in tree.documents.items():
        for doc in docs:
            assert verify.verify_object(doc, version, path) == [], (path, doc["kind"])
            assert doc in _docs(tree.files[path])


def _intent(cluster: str, pools: str, extra: str = "") -> str:
    """An intent with the given cluster, pools (YAML list items) and other spec sections (YAML lines)."""
    return ("apiVersion: gpuconf.dev/v1alpha1\nkind: ClusterIntent\nmetadata: {name: lab}\nspec:\n"
            f"  cluster: {cluster}\n  operator: {{chartVersion: v26.7.0}}\n{extra}  pools:\n{pools}")


L4_POOL = "    - {name: l4, gpu: L4, gpusPerNode: 2, nodes: 3, match: {pciDevice: true}}\n"


# --- GKE ------------------------------------------------------------------------------------------------------------


def test_gke_with_googles_installer_points_the_operator_at_googles_driver(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: gke}', L4_POOL))
    values = _values(tree)
    assert values["driver"]["enabled"] is False
    assert values["hostPaths"]["driverInstallDir"] == values["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    # GKE 1.33+ runs containerd 2: the toolkit must read containerd's config from the file.
    assert {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"} in values["toolkit"]["env"]
    # The operator reads the ClusterPolicy: the chart renders these values into it, CDI on as NVIDIA documents.
    policy = _policy(tree)
    assert policy["hostPaths"]["driverInstallDir"] == policy["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    assert policy["driver"]["enabled"] is False and policy["cdi"]["enabled"] is True
    assert {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"} in policy["toolkit"]["env"]
    # The quota GKE needs for system-node-critical pods outside kube-system, in the operator namespace.
    [quota] = _docs(tree.files["manifests/platform.yaml"])
    assert quota["kind"] == "ResourceQuota" and quota["metadata"]["namespace"] == "gpu-operator"
    assert quota["spec"]["scopeSelector"]["matchExpressions"] == [
        {"operator": "In", "scopeName": "PriorityClass", "values": ["system-node-critical", "system-cluster-critical"]}]
    assert _merged(tree)["daemonsets"]["priorityClassName"] == "system-node-critical"
    # The GKE GPU taint: the operands (chart default kept) and the probes tolerate it.
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert gpu in policy["daemonsets"]["tolerations"]
    assert gpu in _merged(tree)["node-feature-discovery"]["worker"]["tolerations"]
    for job in _docs(tree.files["manifests/probes.yaml"]):
        assert gpu in job["spec"]["template"]["spec"]["tolerations"]
    _verified(tree)
    # kustomize applies the quota right after the namespaces, before anything that creates pods.
    kustomization = YAML11.load(tree.files["kustomization.yaml"])
    assert kustomization["resources"][:2] == ["manifests/namespaces.yaml", "manifests/platform.yaml"]


def test_gke_before_1_33_keeps_the_toolkits_config_source(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.32", distribution: gke}', L4_POOL))
    assert "env" not in _values(tree).get("toolkit", {})


def test_gke_with_the_operators_driver_keeps_the_chart_paths_and_says_how_to_create_the_pool(tmp_path):
    pools = ("    - {name: l4, gpu: L4, gpusPerNode: 2, nodes: 3, match: {nodeLabels: "
             "{cloud.google.com/gke-nodepool: gpu-l4}}, taints: [{key: example.com/l4, value: x, effect: NoSchedule}]}\n")
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: gke}', pools,
                                     "  driver: {preinstalled: false}\n"))
    values = _values(tree)
    assert "hostPaths" not in values and "enabled" not in values.get("driver", {})
    assert _policy(tree)["hostPaths"]["driverInstallDir"] == "/run/nvidia/driver"
    script = tree.files["node-templates/l4.gke.sh"]
    assert "gcloud container node-pools create gpu-l4" in script
    # GKE has one accelerator type for L4 (gke-aks-facts §a): the script names it, and the one G2 machine type
    # with 2 x L4.
    assert "--accelerator type=nvidia-l4,count=2,gpu-driver-version=disabled" in script
    assert "ACCELERATOR" not in script and "MACHINE_TYPE" not in script and "--machine-type g2-standard-24" in script
    assert "gke-no-default-nvidia-gpu-device-plugin=true" in script and "gpuconf.dev/pool=l4" in script
    assert "cloud.google.com" not in script.split("--node-labels", 1)[1]  # GKE sets its own labels
    assert "--node-taints example.com/l4=x:NoSchedule" in script
    report = json.loads(tree.files["report.json"])
    assert any(n["title"] == "Driver: the operator's" for n in report["platform"])


def test_gke_migmanager_reboots_to_apply_a_layout(tmp_path):
    pools = "    - {name: a100, gpu: A100-40GB, gpusPerNode: 8, nodes: 1, match: {pciDevice: true}, sharing: mig}\n"
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: gke}', pools,
                                     "  sharingProfiles: {mig: {mig: {preset: all-balanced}}}\n"))
    assert {"name": "WITH_REBOOT", "value": "true"} in _policy(tree)["migManager"]["env"]


# --- EKS ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ami", "expected"), [
    ("al2023", {"driver.enabled": False, "toolkit.enabled": False}),
    ("bottlerocket", {"driver.enabled": False, "toolkit.enabled": False, "devicePlugin.enabled": False}),
    ("ubuntu", {}),
])
def test_eks_amis_switch_off_what_they_ship(tmp_path, ami, expected):
    tree = _render(tmp_path, _intent(f'{{kubernetesVersion: "1.33", distribution: eks, eks: {{ami: {ami}}}}}', L4_POOL))
    policy = _policy(tree)
    for path, value in expected.items():
        operand, key = path.split(".")
        assert policy[operand][key] is value, path
    if not expected:
        assert policy["driver"]["enabled"] is True and policy["toolkit"]["enabled"] is True
    assert policy["devicePlugin"]["enabled"] is (ami != "bottlerocket")


KARPENTER = ('{kubernetesVersion: "1.33", distribution: eks, eks: {karpenter: {role: NodeRole, '
             'subnetSelectorTerms: [{tags: {karpenter.sh/discovery: lab}}], '
             'securityGroupSelectorTerms: [{id: sg-0abc}, {name: gpu-nodes}]}}}')


def test_karpenter_pools_get_a_nodepool_with_their_gpu_labels_taints_and_size(tmp_path):
    pools = ("    - {name: infer, gpu: A10G, gpusPerNode: 4, nodes: 3, match: {nodeLabels: "
             "{karpenter.sh/nodepool: a10g, team: infer}}, taints: [{key: example.com/gpu, value: a10g, "
             "effect: NoSchedule}]}\n"
             "    - {name: train, gpu: A100-80GB, gpusPerNode: 8, nodes: 2, match: {nodeLabels: "
             "{karpenter.sh/nodepool: a100, karpenter.sh/capacity-type: on-demand}}}\n")
    tree = _render(tmp_path, _intent(KARPENTER, pools))
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _docs(tree.files["manifests/karpenter.yaml"])}
    a10g, a100 = docs[("NodePool", "a10g")]["spec"], docs[("NodePool", "a100")]["spec"]
    requirements = {r["key"]: r["values"] for r in a10g["template"]["spec"]["requirements"]}
    assert requirements == {"karpenter.k8s.aws/instance-gpu-name": ["a10g"], "karpenter.k8s.aws/instance-gpu-count": ["4"],
                            "kubernetes.io/os": ["linux"]}
    # a100 names A100-40GB (p4d) and A100-80GB (p4de): the family keeps the 40 GB instances out.
    requirements = {r["key"]: r["values"] for r in a100["template"]["spec"]["requirements"]}
    assert requirements["karpenter.k8s.aws/instance-family"] == ["p4de"]
    assert requirements["karpenter.sh/capacity-type"] == ["on-demand"]  # a Karpenter label: a requirement
    labels = a10g["template"]["metadata"]["labels"]
    assert labels["team"] == "infer" and labels["gpuconf.dev/pool"] == "infer"
    assert labels["nvidia.com/device-plugin.config"].startswith("exclusive-")
    assert labels["nvidia.com/gpu.deploy.driver"] == "false"  # the AL2023 NVIDIA AMI brings the driver
    assert not any(k.startswith("karpenter.") for k in labels)
    assert a10g["template"]["spec"]["taints"] == [{"key": "example.com/gpu", "value": "a10g", "effect": "NoSchedule"}]
    # Karpenter counts nvidia.com/gpu by instance type before a node initializes and by Node capacity after
    # (replicas included, 0 when renamed): the limit is in nodes, which count the same both ways.
    assert a10g["limits"] == {"nodes": "3"}
    assert a10g["disruption"] == {"consolidateAfter": "10m", "consolidationPolicy": "WhenEmpty"}
    assert a10g["template"]["spec"]["expireAfter"] == "Never"
    assert a10g["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                       "name": "a10g"}
    node_class = docs[("EC2NodeClass", "a10g")]["spec"]
    assert node_class == {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "NodeRole",
                          "blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
                              "encrypted": True, "volumeSize": "100Gi", "volumeType": "gp3"}}],
                          "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "lab"}}],
                          "securityGroupSelectorTerms": [{"id": "sg-0abc"}, {"name": "gpu-nodes"}]}
    assert ("NodeOverlay", "a10g") not in docs  # exclusive GPUs: the instance type's nvidia.com/gpu is the truth
    _verified(tree)  # the NodePool and EC2NodeClass CRDs (schemas/crds)
    from gpuconf.render import karpenter

    assert karpenter.problems(list(docs.values())) == []  # the CRDs' CEL rules gpuconf checks
    probes = [p for p in tree.files if p.startswith("probes/")]
    assert probes == ["probes/infer.yaml", "probes/train.yaml"]  # Karpenter pools scale to zero: manual probes
    assert "manifests/probes.yaml" not in tree.files
    # No kubelet flags for Karpenter's pools: the NodePool is their template.
    assert not [p for p in tree.files if p.startswith("node-templates/")]


def test_karpenters_cel_rules_are_checked():
    from gpuconf.render import karpenter

    pool = {"kind": "NodePool", "metadata": {"name": "x"}, "spec": {"template": {
        "metadata": {"labels": {"karpenter.k8s.aws/instance-gpu-name": "a10g", "kubernetes.io/hostname": "n"}},
        "spec": {"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]},
                                  {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["a"]},
                                  {"key": "team", "operator": "In", "values": []}]}}}}
    node_class = {"kind": "EC2NodeClass", "metadata": {"name": "c"}, "spec": {
        "amiSelectorTerms": [{"alias": "ubuntu@latest"}, {"id": "ami-1"}], "role": "r", "instanceProfile": "p",
        "subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}], "securityGroupSelectorTerms": [{"tags": {"": "x"}}]}}
    problems = karpenter.problems([pool, node_class])
    for text in ("label karpenter.k8s.aws/instance-gpu-name is restricted", "label kubernetes.io/hostname is restricted",
                 "key karpenter.sh/nodepool is restricted", "Gt needs one integer", "team In needs values",
                 "exactly one of role and instanceProfile", "alias term must be the only term",
                 "alias 'ubuntu@latest'", "subnetSelectorTerms term", "securityGroupSelectorTerms term"):
        assert sum(text in p for p in problems) == 1, (text, problems)
    assert len(problems) == 10


def test_a_gpu_no_ec2_instance_carries_is_a_finding(tmp_path):
    pools = "    - {name: lab, gpu: A40, gpusPerNode: 1, nodes: 1, match: {nodeLabels: {karpenter.sh/nodepool: a40}}}\n"
    result = _validate(tmp_path, _intent(KARPENTER, pools))
    assert _codes(result) == [("GC345", "error", "spec.pools[0].gpu")]


# --- AKS ------------------------------------------------------------------------------------------------------------

AKS_POOL = ("    - {name: t4, gpu: T4, gpusPerNode: 4, nodes: 2, match: {nodeLabels: "
            "{kubernetes.azure.com/agentpool: gput4}}, taints: [{key: sku, value: gpu, effect: NoSchedule}]}\n")


def test_aks_pools_without_aks_driver_get_the_operators(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.32", distribution: aks}', AKS_POOL))
    policy = _policy(tree)
    assert policy["driver"]["enabled"] is True and policy["toolkit"]["enabled"] is True
    script = tree.files["node-templates/t4.aks.sh"]
    assert "az aks nodepool add" in script and "--name gput4" in script and script.rstrip().endswith("--gpu-driver none")
    assert "--node-taints sku=gpu:NoSchedule" in script and "kubernetes.azure.com" not in script.split("--labels")[1]
    # Microsoft's sku=gpu taint is tolerated by the operands and NFD (the chart's defaults alone would not).
    sku = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    assert sku in policy["daemonsets"]["tolerations"]
    assert sku in _merged(tree)["node-feature-discovery"]["worker"]["tolerations"]
    notes = {n["title"]: n["text"] for n in json.loads(tree.files["report.json"])["platform"]}
    assert "NCasT4_v3" in notes["VM sizes for t4"] and "--gpu-driver none" in notes["Driver: the operator's"]


def test_aks_with_its_own_driver_switches_the_operators_off(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.32", distribution: aks}', AKS_POOL,
                                     "  driver: {preinstalled: true}\n"))
    policy = _policy(tree)
    assert policy["driver"]["enabled"] is False and policy["toolkit"]["enabled"] is False
    assert policy["operator"]["runtimeClass"] == "nvidia-container-runtime"
    assert "--gpu-driver" not in tree.files["node-templates/t4.aks.sh"]


# --- OpenShift ------------------------------------------------------------------------------------------------------


def test_openshift_installs_through_olm_with_the_charts_clusterpolicy(tmp_path):
    pools = "    - {name: h100, gpu: H100-80GB, gpusPerNode: 8, nodes: 2, match: {pciDevice: true}, taints: " \
            "[{key: example.com/train, effect: NoSchedule}]}\n"
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.31", distribution: openshift}', pools))
    objects = {d["kind"]: d for d in _docs(tree.files["manifests/platform.yaml"])}
    assert objects["Subscription"]["metadata"]["namespace"] == "gpu-operator"
    assert objects["Subscription"]["spec"] == {"channel": "v26.7", "installPlanApproval": "Manual",
                                               "name": "gpu-operator-certified", "source": "certified-operators",
                                               "sourceNamespace": "openshift-marketplace",
                                               # the bundle CSV of chart v26.7.0, not the channel head (issue 21)
                                               "startingCSV": "gpu-operator-certified.v26.7.0"}
    assert objects["OperatorGroup"]["spec"] == {"targetNamespaces": ["gpu-operator"]}
    nfd = objects["NodeFeatureDiscovery"]
    assert nfd["metadata"]["namespace"] == "openshift-nfd" and nfd["spec"]["enableTaints"] is True
    taint = {"key": "example.com/train", "operator": "Exists", "effect": "NoSchedule"}
    assert taint in nfd["spec"]["operand"]["workerTolerations"]
    assert set(nfd["spec"]["extraLabelNs"]) >= {"gpuconf.dev", "nvidia.com"}
    [policy] = _docs(tree.files["manifests/cluster-policy.yaml"])
    assert policy["kind"] == "ClusterPolicy" and policy["spec"] == _policy(tree)
    assert policy["spec"]["operator"]["use_ocp_driver_toolkit"] is True
    assert taint in policy["spec"]["daemonsets"]["tolerations"]
    assert policy["spec"]["devicePlugin"]["config"]["name"] == "gpuconf-device-plugin-config"
    namespace = next(d for d in _docs(tree.files["manifests/namespaces.yaml"]) if d["metadata"]["name"] == "gpu-operator")
    assert namespace["metadata"]["labels"]["openshift.io/cluster-monitoring"] == "true"
    _verified(tree)  # ClusterPolicy against its CRD; OLM and NFD-operator kinds against their documented fields
    kustomization = YAML11.load(tree.files["kustomization.yaml"])["resources"]
    assert kustomization.index("manifests/platform.yaml") < kustomization.index("manifests/cluster-policy.yaml")
    report = tree.files["REPORT.md"]
    assert "approve the InstallPlan" in report and "kubectl wait clusterpolicy/gpu-cluster-policy" in report
    assert "helm upgrade" not in report


def test_openshift_with_helm_keeps_the_chart_route(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.31", distribution: openshift, openshift: {install: helm}}',
                                     L4_POOL))
    assert _values(tree)["platform"]["openshift"] is True
    assert "manifests/cluster-policy.yaml" not in tree.files and "manifests/platform.yaml" not in tree.files
    assert "helm upgrade --install gpu-operator" in tree.files["REPORT.md"]


def test_openshift_olm_with_argocd_has_no_chart_application(tmp_path):
    text = _intent('{kubernetesVersion: "1.31", distribution: openshift}', L4_POOL,
                   "  delivery: {tool: argocd, repoURL: https://git.example.com/x.git, path: out}\n")
    tree = _render(tmp_path, text)
    gitops = [p for p in tree.files if p.startswith("gitops/")]
    assert sorted(gitops) == ["gitops/application-manifests.yaml", "gitops/kustomization.yaml"]
    [app] = _docs(tree.files["gitops/application-manifests.yaml"])
    assert app["spec"]["ignoreDifferences"][0]["kind"] == "ClusterPolicy"
    assert "SkipDryRunOnMissingResource=true" in app["spec"]["syncPolicy"]["syncOptions"]


# --- k3s, RKE2, MicroK8s --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("distribution", "env"), [
    ("rke2", {"CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock"}),
    ("k3s", {"CONTAINERD_CONFIG": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
             "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock"}),
    ("microk8s", {"CONTAINERD_CONFIG": "/var/snap/microk8s/current/args/containerd-template.toml",
                  "CONTAINERD_SOCKET": "/var/snap/microk8s/common/run/containerd.sock",
                  "RUNTIME_CONFIG_SOURCE": "file=/var/snap/microk8s/current/args/containerd.toml"}),
])
def test_the_toolkit_finds_each_distributions_containerd(tmp_path, distribution, env):
    tree = _render(tmp_path, _intent(f'{{kubernetesVersion: "1.33", distribution: {distribution}}}', L4_POOL))
    policy = _policy(tree)
    assert {e["name"]: e["value"] for e in policy["toolkit"]["env"]} == env
    # The intent's own path wins over the derived one.
    own = _render(tmp_path, _intent(f'{{kubernetesVersion: "1.33", distribution: {distribution}, containerRuntime: '
                                    '{socketPath: /run/containerd/containerd.sock}}', L4_POOL), "own.yaml")
    assert {e["name"]: e["value"] for e in _policy(own)["toolkit"]["env"]}["CONTAINERD_SOCKET"] == \
        "/run/containerd/containerd.sock"


def test_nri_mode_needs_no_containerd_paths(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: rke2, containerRuntime: {nri: true}}',
                                     L4_POOL))
    policy = _policy(tree)
    assert policy["cdi"] == {"enabled": True, "nriPluginEnabled": True}
    assert "env" not in policy["toolkit"]
    notes = {n["title"]: n["text"] for n in json.loads(tree.files["report.json"])["platform"]}
    assert "v1.31.13" in notes["NRI plugin mode"]  # RKE2 releases with containerd 2.1


def test_karpenter_role_and_instance_profile_exclude_each_other(tmp_path):
    cluster = KARPENTER.replace("role: NodeRole,", "role: NodeRole, instanceProfile: Profile,")
    result = _validate(tmp_path, _intent(cluster, L4_POOL))
    assert [(f.code, f.path) for f in result.findings] == [("GC207", "spec.cluster.eks.karpenter")]


# --- the chart's ClusterPolicy template, as gpuconf reproduces it ---------------------------------------------------


def _chart_spec(**changes):
    """The ClusterPolicy spec of chart v26.7.0's defaults with some values changed (dotted path -> value)."""
    import copy

    from gpuconf import catalog
    from gpuconf.render.clusterpolicy import spec

    values = copy.deepcopy(catalog.chart("v26.7.0").defaults)
    for path, value in changes.items():
        node = values
        *parents, last = path.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return spec(values, "v26.7.0")


def test_clusterpolicy_follows_the_templates_ifs_and_defaults():
    base = _chart_spec()
    # `version: {{ .Values.validator.version | default .Chart.AppVersion | quote }}`
    assert base["validator"]["version"] == "v26.7.0" and base["nodeStatusExporter"]["version"] == "v26.7.0"
    # `maxUnavailable: {{ ... | quote }}`: the values' "1" stays a string; the upgrade policy's is printed bare.
    assert base["daemonsets"]["rollingUpdate"] == {"maxUnavailable": "1"}
    assert base["driver"]["upgradePolicy"]["maxUnavailable"] == "25%"
    # `| default "25%"` also replaces 0, which Go templates count as empty.
    assert _chart_spec(driver__upgradePolicy__maxUnavailable=0)["driver"]["upgradePolicy"]["maxUnavailable"] == "25%"
    assert _chart_spec(driver__upgradePolicy__maxUnavailable=2)["driver"]["upgradePolicy"]["maxUnavailable"] == 2
    # The values key gpuPodDeletion is the ClusterPolicy's podDeletion.
    assert base["driver"]["upgradePolicy"]["podDeletion"] == {"force": False, "timeoutSeconds": 300,
                                                              "deleteEmptyDir": False}
    # nriPluginEnabled only with CDI on; the driver's image fields only without NVIDIADriver resources.
    assert "nriPluginEnabled" not in _chart_spec(cdi__nriPluginEnabled=True, cdi__enabled=False)["cdi"]
    assert _chart_spec(cdi__nriPluginEnabled=True)["cdi"]["nriPluginEnabled"] is True
    crd = _chart_spec(driver__nvidiaDriverCRD__enabled=True)["driver"]
    assert crd["useNvidiaDriverCRD"] is True and "repository" not in crd and "upgradePolicy" in crd
    # devicePlugin.config only with a name; its default is quoted.
    assert "config" not in base["devicePlugin"]
    assert _chart_spec(devicePlugin__config__name="c")["devicePlugin"]["config"] == {"name": "c", "default": ""}
    # Empty values (repository: "" of vgpuManager, imagePullSecrets: []) are left out, like `if` does.
    assert "repository" not in base["vgpuManager"] and "imagePullSecrets" not in base["toolkit"]
    # A selector printed bare that YAML reads back as something else fails, as the chart's render would.
    from gpuconf.render.chart import TemplateError

    with pytest.raises(TemplateError):
        _chart_spec(driver__upgradePolicy__drain__podSelector="!app")


def test_clusterpolicy_of_the_chart_defaults_verifies_against_the_crd():
    from gpuconf.output import verify
    from gpuconf.render.clusterpolicy import without_nulls

    doc = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
           "spec": without_nulls(_chart_spec())}
    assert verify.verify_object(doc, "1.33", "test") == []


def test_bare_printing_reads_back_like_helm():
    from gpuconf.render.clusterpolicy import plain, quote

    assert plain("25%") == "25%" and plain("true") is True and plain("yes") is True
    assert plain("01") == 1 and plain("0x1f") == 31 and plain("1_000") == 1000  # YAML 1.1 integers
    assert plain("app=x,tier in (a,b)") == "app=x,tier in (a,b)" and plain(None) is None and quote(None) is None
    assert quote(True) == "true" and quote(5) == "5" and plain(0.5) == 0.5
    with pytest.raises(ValueError):
        plain("key: value")  # the chart would render broken YAML
    with pytest.raises(ValueError):
        plain({"a": 1})


# --- gpuconf images -------------------------------------------------------------------------------------------------


def test_images_lists_what_the_cluster_pulls_and_a_mirror_holds_all_of_it(run):
    from conftest import ROOT

    result = run("images", str(ROOT / "examples" / "airgapped.yaml"), "--driver-os", "rhel9.6")
    assert result.exit_code == 0, result.stderr
    refs = result.stdout.splitlines()
    assert refs == sorted(set(refs)) and refs
    assert all(ref.startswith("registry.enclave.internal/nvidia/") for ref in refs)
    assert "registry.enclave.internal/nvidia/driver:595.91.07-rhel9.6" in refs
    assert "registry.enclave.internal/nvidia/gpu-operator:v26.7.0" in refs  # the operator, the validator, the probes
    assert "registry.enclave.internal/nvidia/nfd/node-feature-discovery:v0.19.0" in refs
    assert any("/k8s-device-plugin:" in r for r in refs) and any("/k8s-driver-manager:" in r for r in refs)
    assert all(":" in ref.rsplit("/", 1)[1] for ref in refs)  # repository:tag, never a bare repository
    # Without the nodes' OS the driver images cannot be named: stderr says so, stdout leaves them out.
    plain = run("images", str(ROOT / "examples" / "airgapped.yaml"))
    assert "--driver-os" in plain.stderr and not any("/driver:" in r for r in plain.stdout.splitlines())


def test_images_follow_the_values_and_the_manifests(run):
    from conftest import ROOT

    # hybrid: per-pool NVIDIADriver images next to the cluster default; no mirror, so NVIDIA's registry.
    refs = run("images", str(ROOT / "examples" / "hybrid.yaml"), "--driver-os", "ubuntu24.04").stdout.splitlines()
    assert "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04" in refs and "nvcr.io/nvidia/driver:580.173.02-ubuntu24.04" in refs
    # EKS's AL2023 AMI brings driver and toolkit: their images are not pulled.
    refs = run("images", str(ROOT / "examples" / "platforms" / "eks.yaml"), "--driver-os", "x").stdout.splitlines()
    assert not any("/driver:" in r or "container-toolkit" in r or "k8s-driver-manager" in r for r in refs)
    assert any("k8s-device-plugin" in r for r in refs)
    # An invalid intent prints its findings and exits 1.
    bad = run("images", str(ROOT / "tests" / "cases" / "rule-unknown-gpu-typo" / "intent.yaml"))
    assert bad.exit_code == 1 and "GC304" in bad.stdout


def test_images_pairs_name_the_source_of_each_mirrored_image(run):
    from conftest import ROOT

    intent = str(ROOT / "examples" / "airgapped.yaml")
    plain = run("images", intent, "--driver-os", "rhel9.6").stdout.splitlines()
    result = run("images", intent, "--driver-os", "rhel9.6", "--pairs")
    assert result.exit_code == 0, result.stderr
    pairs = [tuple(line.split(" ")) for line in result.stdout.splitlines()]
    assert all(len(pair) == 2 for pair in pairs) and [dst for _, dst in pairs] == plain
    sources = dict((dst, src) for src, dst in pairs)
    mirror = "registry.enclave.internal/nvidia"
    assert sources[f"{mirror}/driver:595.91.07-rhel9.6"] == "nvcr.io/nvidia/driver:595.91.07-rhel9.6"
    assert sources[f"{mirror}/nfd/node-feature-discovery:v0.19.0"] == "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"
    assert sources[f"{mirror}/cloud-native/k8s-driver-manager:v0.12.0"] == \
        "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    assert all(src.startswith(("nvcr.io/nvidia/", "registry.k8s.io/")) for src, _ in pairs)
    # Without a mirror every image is pulled from where it comes from.
    hybrid = run("images", str(ROOT / "examples" / "hybrid.yaml"), "--pairs").stdout.splitlines()
    assert hybrid and all(line.split(" ")[0] == line.split(" ")[1] for line in hybrid)


#: The fields of oc-mirror's ImageSetConfiguration that gpuconf writes (openshift/oc-mirror @ 855b64a3,
#: internal/pkg/api/v2alpha1/type_config.go, type_config_include.go), by where they sit.
OC_MIRROR_FIELDS = {(): {"kind", "apiVersion", "mirror"}, ("mirror",): {"operators", "additionalImages"},
                    ("mirror", "operators"): {"catalog", "packages"},
                    ("mirror", "operators", "packages"): {"name", "channels"},
                    ("mirror", "operators", "packages", "channels"): {"name", "minVersion", "maxVersion"},
                    ("mirror", "additionalImages"): {"name"}}


def _oc_mirror_keys(value, path=()):
    """(path, key) of every mapping key, list positions left out of the path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key
            yield from _oc_mirror_keys(item, (*path, key))
    elif isinstance(value, list):
        for item in value:
            yield from _oc_mirror_keys(item, path)


def test_images_writes_oc_mirrors_image_set_for_openshift(run):
    from conftest import ROOT

    intent = str(ROOT / "examples" / "platforms" / "openshift.yaml")
    result = run("images", intent, "--driver-os", "rhel9.6", "--oc-mirror", "4.20")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("# Generated by gpuconf ")
    isc = YAML11.load(result.stdout)
    assert (isc["kind"], isc["apiVersion"]) == ("ImageSetConfiguration", "mirror.openshift.io/v2alpha1")
    assert isc["mirror"]["operators"] == [
        {"catalog": "registry.redhat.io/redhat/certified-operator-index:v4.20",
         "packages": [{"name": "gpu-operator-certified",  # the pinned chart's bundle only, not the channel
                       "channels": [{"name": "v26.7", "minVersion": "26.7.0", "maxVersion": "26.7.0"}]}]},
        {"catalog": "registry.redhat.io/redhat/redhat-operator-index:v4.20",
         "packages": [{"name": "nfd", "channels": [{"name": "stable"}]}]}]
    pairs = run("images", intent, "--driver-os", "rhel9.6", "--pairs").stdout.splitlines()
    assert [i["name"] for i in isc["mirror"]["additionalImages"]] == sorted({p.split(" ")[0] for p in pairs})
    assert "nvcr.io/nvidia/driver:595.91.07-rhel9.6" in [i["name"] for i in isc["mirror"]["additionalImages"]]
    assert all(key in OC_MIRROR_FIELDS[path] for path, key in _oc_mirror_keys(isc))


@pytest.mark.parametrize("intent, arguments, error", [
    ("platforms/openshift.yaml", ["--oc-mirror", "4.12"], "supports from v4.18-v4.22"),
    ("platforms/openshift.yaml", ["--oc-mirror", "latest"], "OpenShift minor version"),
    ("airgapped.yaml", ["--oc-mirror", "4.20"], "OpenShift's OLM route"),
    ("platforms/openshift.yaml", ["--oc-mirror", "4.20", "--pairs"], "not both"),
])
def test_images_refuses_an_oc_mirror_it_cannot_write(run, intent, arguments, error):
    from conftest import ROOT

    result = run("images", str(ROOT / "examples" / intent), *arguments)
    assert result.exit_code == 2 and error in result.stderr and result.stdout == ""


def test_report_installs_the_chart_from_the_mirror(tmp_path):
    from conftest import ROOT
    from gpuconf.pipeline import render_path

    tree = render_path(str(ROOT / "examples" / "airgapped.yaml"), "out").tree
    assert ("helm upgrade --install gpu-operator oci://registry.enclave.internal/nvidia/charts/gpu-operator "
            "--version v26.7.0") in tree.files["REPORT.md"]
    plain = render_path(str(ROOT / "examples" / "single-pool.yaml"), "out").tree
    assert "gpu-operator --repo https://helm.ngc.nvidia.com/nvidia --version v26.3.3" in plain.files["REPORT.md"]


def test_catalog_lists_every_added_model_with_its_pci_ids(run):
    text = run("catalog").stdout
    from test_catalog import EXTRA_MODELS

    for model_id, (pci, subsystems, *_) in EXTRA_MODELS.items():
        line = next(line for line in text.splitlines() if line.split()[0] == model_id)
        assert all(p in line for p in [*pci, *subsystems]), line


def test_eks_report_says_what_karpenter_and_managed_node_groups_need():
    from conftest import ROOT
    from gpuconf.pipeline import render_path

    tree = render_path(str(ROOT / "examples" / "platforms" / "eks.yaml"), "out").tree
    notes = {n["title"]: n["text"] for n in json.loads(tree.files["report.json"])["platform"]}
    assert "--install-nvidia-plugin=false" in notes["Managed node groups"]  # next to Karpenter pools too
    assert "NodePool (a10g, l40s-spot)" in notes["Karpenter"] and "al2023@v20250920" in notes["Karpenter"]
    assert "Runtime handler" in notes  # the AMI's toolkit: not verified, said so


def test_what_the_fact_sheet_could_not_verify_is_said_in_the_report(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: eks}', L4_POOL))
    notes = {n["title"]: n["text"] for n in json.loads(tree.files["report.json"])["platform"]}
    assert "runtime handler names on the AL2023 NVIDIA and Bottlerocket AMIs" in notes["Not verified"]
    assert "Not verified" not in {n["title"] for n in json.loads(
        _render(tmp_path, _intent('{kubernetesVersion: "1.33"}', L4_POOL), "vanilla.yaml").files["report.json"])["platform"]}


def test_report_and_audit_name_what_labels_a_platforms_pool(tmp_path):
    from conftest import ROOT
    from gpuconf.cluster.audit import audit
    from gpuconf.pipeline import render_path

    tree = render_path(str(ROOT / "examples" / "platforms" / "eks.yaml"), "out").tree
    rows = {p["name"]: p["labelledBy"] for p in json.loads(tree.files["report.json"])["pools"]}
    assert rows == {"a10g-inference": "Karpenter NodePool a10g (manifests/karpenter.yaml)",
                    "l40s-batch": "Karpenter NodePool l40s-spot (manifests/karpenter.yaml)",
                    "t4-dev": "node template node-templates/t4-dev.kubelet.env"}
    node = {"metadata": {"name": "ip-10-0-0-1", "labels": {
        "karpenter.sh/nodepool": "a10g", "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A10G",
        "gpuconf.dev/pool": "a10g-inference"}},  # synced once (no pool label at all is GA123's first sync pending)
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    [missing] = [f for f in audit(tree.plan, [node], "t").findings if f.code == "GA103"]
    assert missing.hint == "re-apply the pool's Karpenter NodePool a10g (manifests/karpenter.yaml)"


def test_catalog_names_the_spellings_of_an_unknown_model(run):
    assert "did you mean A10G?" in run("catalog", "--gpu", "nvidia-a10g").stderr
    result = run("catalog", "--gpu", "A10X")
    assert result.exit_code == 2 and "did you mean" not in result.stderr


def test_openshift_olm_brings_the_charts_default_nvidiadriver_when_pools_use_it(tmp_path):
    pools = ("    - {name: l4, gpu: L4, gpusPerNode: 2, nodes: 3, match: {pciDevice: true}}\n"
             "    - {name: h100, gpu: H100-80GB, gpusPerNode: 8, nodes: 2, match: {pciDevice: true}, "
             "driver: {version: \"595.91.07\"}}\n")
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.31", distribution: openshift}', pools,
                                     '  driver: {version: "580.126.20"}\n'))
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _docs(tree.files["manifests/cluster-policy.yaml"])}
    from gpuconf.render import chart

    default = docs[("NVIDIADriver", "default")]["spec"]
    assert default["default"] is True and default["version"] == "580.126.20"
    assert default == chart.default_nvidiadriver(_merged(tree))
    assert docs[("ClusterPolicy", "gpu-cluster-policy")]["spec"]["driver"]["useNvidiaDriverCRD"] is True
    own = [d for d in _docs(tree.files["manifests/nvidia-drivers.yaml"]) if d["spec"]["version"] == "595.91.07"]
    assert own and not own[0]["spec"]["default"]
    _verified(tree)


def test_a_disconnected_openshift_subscribes_from_its_mirrored_catalogue(tmp_path):
    cluster = ('{kubernetesVersion: "1.31", distribution: openshift, openshift: {catalogSource: '
               '{name: cs-redhat-operator-index, namespace: openshift-marketplace}}}')
    tree = _render(tmp_path, _intent(cluster, L4_POOL))
    subscription = next(d for d in _docs(tree.files["manifests/platform.yaml"]) if d["kind"] == "Subscription")
    assert (subscription["spec"]["source"], subscription["spec"]["sourceNamespace"]) == \
        ("cs-redhat-operator-index", "openshift-marketplace")
    assert subscription["spec"]["name"] == "gpu-operator-certified"  # the mirrored catalogue carries the same package
    _verified(tree)
    # REPORT.md names the catalogue the Subscription really uses (issue 21, item 10).
    report = tree.files["REPORT.md"]
    assert "catalogue cs-redhat-operator-index in openshift-marketplace" in report
    assert "certified-operators" not in report


def _ocp_report_steps(report: str) -> list[str]:
    """The titles of REPORT.md's acceptance steps."""
    return re.findall(r"^\d+\. \*\*(.*)\*\*$", report.split("## Acceptance checklist")[1], re.M)


def test_openshift_without_the_nfd_operator_makes_it_the_first_acceptance_step(tmp_path):
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.31", distribution: openshift}', L4_POOL))
    kinds = [(d["kind"], d["metadata"]["namespace"]) for d in _docs(tree.files["manifests/platform.yaml"])]
    assert ("Subscription", "openshift-nfd") not in kinds and ("NodeFeatureDiscovery", "openshift-nfd") in kinds
    steps = _ocp_report_steps(tree.files["REPORT.md"])
    assert steps[0].startswith("Prerequisite: install Red Hat's Node Feature Discovery Operator")
    assert "kubectl get crd nodefeaturediscoveries.nfd.openshift.io" in tree.files["REPORT.md"]


def test_openshift_renders_the_nfd_operator_so_one_sync_installs_everything(tmp_path):
    cluster = ('{kubernetesVersion: "1.31", distribution: openshift, openshift: {catalogSource: {name: cs-certified}, '
               'nfdOperator: {catalogSource: {name: cs-redhat}}}}')
    tree = _render(tmp_path, _intent(cluster, L4_POOL))
    docs = _docs(tree.files["manifests/platform.yaml"])
    nfd = {d["kind"]: d for d in docs if d["metadata"].get("namespace") == "openshift-nfd"
           or d["metadata"]["name"] == "openshift-nfd"}
    assert nfd["Namespace"]["metadata"]["labels"]["openshift.io/cluster-monitoring"] == "true"
    assert nfd["OperatorGroup"]["spec"] == {"targetNamespaces": ["openshift-nfd"]}
    assert nfd["Subscription"]["spec"] == {"channel": "stable", "installPlanApproval": "Automatic", "name": "nfd",
                                           "source": "cs-redhat", "sourceNamespace": "openshift-marketplace"}
    # One namespace, one OperatorGroup each: OLM stops at a second OperatorGroup in a namespace.
    groups = [d["metadata"]["namespace"] for d in docs if d["kind"] == "OperatorGroup"]
    assert sorted(groups) == ["gpu-operator", "openshift-nfd"]
    # Applied in one go: the NFD instance after its operator's Subscription (Argo CD skips the dry run of a kind
    # whose CRD is still arriving).
    order = [(d["kind"], d["metadata"].get("namespace")) for d in docs]
    assert order.index(("Subscription", "openshift-nfd")) < order.index(("NodeFeatureDiscovery", "openshift-nfd"))
    _verified(tree)
    report = tree.files["REPORT.md"]
    assert not any(s.startswith("Prerequisite") for s in _ocp_report_steps(report))
    assert "installs Red Hat's Node Feature Discovery Operator (namespace openshift-nfd, package nfd, channel " \
           "stable, catalogue cs-redhat in openshift-marketplace" in report


@pytest.mark.parametrize("openshift, finding", [
    ("{install: helm, nfdOperator: {}}", "error GC337"),
    ("{catalogSource: {name: cs-certified}, nfdOperator: {}}", "warning GC337"),
])
def test_the_nfd_operator_needs_olm_and_a_catalogue_the_cluster_has(openshift, finding):
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = _intent(f'{{kubernetesVersion: "1.31", distribution: openshift, openshift: {openshift}}}', L4_POOL)
    findings = validate_document(load_text(text, "x.yaml")).findings
    assert [f"{f.severity} {f.code}" for f in findings] == [finding]
    assert findings[0].path == "spec.cluster.openshift.nfdOperator"


def test_a_catalogue_source_without_olm_is_a_finding():
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = _intent('{kubernetesVersion: "1.31", distribution: openshift, openshift: {install: helm, catalogSource: '
                   '{name: mirror}}}', L4_POOL)
    findings = validate_document(load_text(text, "x.yaml")).findings
    assert [(f.code, f.path) for f in findings] == [("GC348", "spec.cluster.openshift.catalogSource")]


def test_karpenter_pools_with_shared_or_mig_resources_get_nodeoverlays_and_their_lifecycle(tmp_path):
    pools = ("    - {name: infer, gpu: A10G, gpusPerNode: 4, nodes: 6, sharing: shared, match: {nodeLabels: "
             "{karpenter.sh/nodepool: a10g}}, karpenter: {consolidationPolicy: WhenEmptyOrUnderutilized, "
             "consolidateAfter: 1h, budgets: [{nodes: '1', reasons: [Drifted], schedule: '0 9 * * 1-5', "
             "duration: 8h}], capacityTypes: [spot, on-demand], expireAfter: 720h, terminationGracePeriod: 2h, "
             "rootVolumeGiB: 300, instanceStorePolicy: RAID0}, probe: hook}\n"
             "    - {name: mig, gpu: A100-80GB, gpusPerNode: 8, nodes: 2, sharing: halves, match: {nodeLabels: "
             "{karpenter.sh/nodepool: a100}}}\n")
    extra = ("  sharingProfiles:\n    shared: {timeSlicing: {replicas: 4, renameByDefault: true}}\n"
             "    halves: {mig: {layout: {\"3g.40gb\": 2}}}\n")
    cluster = KARPENTER.replace("distribution: eks,", "distribution: eks, migStrategy: mixed,")
    tree = _render(tmp_path, _intent(cluster, pools, extra))
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _docs(tree.files["manifests/karpenter.yaml"])}
    assert docs[("NodeOverlay", "a10g")]["spec"] == {
        "capacity": {"nvidia.com/gpu.shared": "16"},
        "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a10g"]}]}
    assert docs[("NodeOverlay", "a100")]["spec"]["capacity"] == {"nvidia.com/mig-3g.40gb": "16"}
    a10g = docs[("NodePool", "a10g")]["spec"]
    assert a10g["disruption"] == {"consolidateAfter": "1h", "consolidationPolicy": "WhenEmptyOrUnderutilized",
                                  "budgets": [{"nodes": "1", "reasons": ["Drifted"], "schedule": "0 9 * * 1-5",
                                               "duration": "8h"}]}
    template = a10g["template"]["spec"]
    assert (template["expireAfter"], template["terminationGracePeriod"]) == ("720h", "2h")
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]} in \
        template["requirements"]
    node_class = docs[("EC2NodeClass", "a10g")]["spec"]
    assert node_class["instanceStorePolicy"] == "RAID0"
    assert node_class["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "300Gi"
    _verified(tree)  # NodeOverlay's CRD (karpenter.sh/v1alpha1) too
    from gpuconf.render import karpenter

    assert karpenter.problems(list(docs.values())) == []
    notes = {n["title"]: n["text"] for n in json.loads(tree.files["report.json"])["platform"]}
    assert "--feature-gates NodeOverlay=true" in notes["Karpenter NodeOverlays"]
    assert "expireAfter 720h (expiry is forceful" in notes["Lifecycle of infer"]
    assert "manifests/probes.yaml" in tree.files and "probes/mig.yaml" in tree.files  # infer: hook; mig: manual


def test_bottlerocket_karpenter_pools_size_the_data_volume(tmp_path):
    cluster = KARPENTER.replace("eks: {karpenter:", "eks: {ami: bottlerocket, karpenter:")
    pools = ("    - {name: t4, gpu: T4, gpusPerNode: 1, nodes: 2, match: {nodeLabels: {karpenter.sh/nodepool: t4}}, "
             "karpenter: {rootVolumeGiB: 80}}\n")
    tree = _render(tmp_path, _intent(cluster, pools))
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _docs(tree.files["manifests/karpenter.yaml"])}
    assert docs[("EC2NodeClass", "t4")]["spec"]["blockDeviceMappings"] == [
        {"deviceName": "/dev/xvda", "ebs": {"encrypted": True, "volumeSize": "4Gi", "volumeType": "gp3"}},
        {"deviceName": "/dev/xvdb", "ebs": {"encrypted": True, "volumeSize": "80Gi", "volumeType": "gp3"}}]


def test_gke_autoscaled_spot_pool_script_and_a_model_with_two_accelerator_types(tmp_path):
    pools = ("    - {name: h100, gpu: H100-80GB, gpusPerNode: 8, nodes: 4, minNodes: 1, match: {nodeLabels: "
             "{cloud.google.com/gke-nodepool: h100, cloud.google.com/gke-spot: 'true', "
             "cloud.google.com/gke-accelerator-count: '8'}}, taints: [{key: nvidia.com/gpu, value: present, "
             "effect: NoSchedule}]}\n")
    extra = "  sharingProfiles:\n    mig: {mig: {preset: all-balanced}}\n"
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: gke}', pools, extra))
    script = tree.files["node-templates/h100.gke.sh"]
    # A3 High and A3 Mega both carry H100 80GB: the user names the type.
    assert "(nvidia-h100-80gb or nvidia-h100-mega-80gb)" in script
    assert "--num-nodes 1 \\\n  --enable-autoscaling \\\n  --total-min-nodes 1 \\\n  --total-max-nodes 4" in script
    assert script.rstrip().endswith("--spot")
    # GKE's Exists toleration covers the pool's own nvidia.com/gpu taint: the probe tolerates it once.
    probe = _docs(tree.files["manifests/probes.yaml"])[0]
    assert probe["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_gke_kueue_flavors_tolerate_the_gpu_taint(tmp_path):
    pools = ("    - {name: a100, gpu: A100-40GB, gpusPerNode: 8, nodes: 2, sharing: mig, match: {pciDevice: true}}\n")
    extra = ("  sharingProfiles:\n    mig: {mig: {preset: all-balanced}}\n"
             "  queueing: {kueue: {version: v0.19.2, quotaCheckStrategy: IgnoreUndeclared}}\n"
             "  teams:\n    - {name: ml, namespaces: [ml], quota: {a100: {1g.5gb: 4}}}\n")
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: gke, migStrategy: mixed}', pools,
                                     extra))
    flavors = [d for d in _docs(tree.files["manifests/queues.yaml"]) if d["kind"] == "ResourceFlavor"
               and d["spec"].get("nodeLabels")]
    # A pod asking for nvidia.com/mig-1g.5gb gets no nvidia.com/gpu toleration from ExtendedResourceToleration.
    assert flavors[0]["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_aks_autoscaled_spot_pool_script(tmp_path):
    pools = ("    - {name: t4, gpu: T4, gpusPerNode: 4, nodes: 5, minNodes: 0, match: {nodeLabels: "
             "{kubernetes.azure.com/agentpool: gput4, kubernetes.azure.com/scalesetpriority: spot}}, "
             "taints: [{key: sku, value: gpu, effect: NoSchedule}, "
             "{key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}]}\n")
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.32", distribution: aks}', pools))
    script = tree.files["node-templates/t4.aks.sh"]
    assert "--node-count 0 \\\n  --enable-cluster-autoscaler \\\n  --min-count 0 \\\n  --max-count 5" in script
    assert "--priority Spot --eviction-policy Delete" in script
    # AKS's own label and taint: AKS puts them on the nodes of a Spot pool; the command sets neither.
    assert "scalesetpriority" not in script.split("--labels", 1)[1].replace("--priority Spot", "")
    assert "  --node-taints sku=gpu:NoSchedule \\\n" in script
    # ... and everything gpuconf deploys onto the pool's nodes tolerates it (GC388 makes the pool list it).
    spot = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
    values = yaml.safe_load(tree.files["values.yaml"])
    assert spot in values["daemonsets"]["tolerations"]
    assert spot in values["node-feature-discovery"]["worker"]["tolerations"]
    probe = yaml.safe_load(tree.files["probes/t4.yaml"])
    assert spot in probe["spec"]["template"]["spec"]["tolerations"]
    assert "probes/t4.yaml" in tree.files and "manifests/probes.yaml" not in tree.files  # scales to zero
    report = tree.files["REPORT.md"]
    assert "0 to 5 (autoscaled; capacity and quotas count 5)" in report
    assert "kubectl create -f probes/t4.yaml" in report


def test_a_budget_window_needs_schedule_and_duration(tmp_path):
    pools = ("    - {name: t4, gpu: T4, gpusPerNode: 1, nodes: 2, match: {nodeLabels: {karpenter.sh/nodepool: t4}}, "
             "karpenter: {budgets: [{nodes: '0', schedule: '0 9 * * mon-fri'}]}}\n")
    result = _validate(tmp_path, _intent(KARPENTER, pools))
    assert [(f.code, f.path, f.message) for f in result.findings] == [
        ("GC207", "spec.pools[0].karpenter.budgets[0]", "a mapping: give schedule and duration together, or neither")]
    from gpuconf.render import karpenter

    broken = {"kind": "NodePool", "metadata": {"name": "t4"}, "spec": {
        "disruption": {"budgets": [{"nodes": "0", "schedule": "@daily"}]},
        "template": {"metadata": {}, "spec": {"requirements": []}}}}
    assert karpenter.problems([broken]) == ["NodePool/t4: a budget's schedule must be set with its duration"]


def test_ec2_instance_sizes_agree_with_the_fact_sheets_gpu_counts():
    """The cited size table (platforms.EC2_INSTANCE_GPUS) has, per GPU model, exactly the GPU counts the platform fact
    sheet gives its families, and a size for every family gpuconf offers."""
    from gpuconf import platforms

    for offer in platforms.karpenter()["instanceFamilies"]:
        if offer["model"] is None:  # fractional L4 (g6f, gr6f): no whole GPU, nothing to launch
            continue
        counts = {n for family in offer["families"] for n in platforms.EC2_INSTANCE_GPUS[family].values()}
        assert counts == set(offer["gpuCounts"]), offer
    assert platforms.ec2_instance_gpus("g5.xlarge") == 1
    assert platforms.ec2_instance_gpus("g5.12xlarge") == 4
    assert platforms.ec2_instance_gpus("p5.4xlarge") == 1
    assert platforms.ec2_instance_gpus("g5.9xlarge") is None and platforms.ec2_instance_gpus("m5.large") is None


def test_gke_scripts_name_the_machine_type_where_the_gpus_fix_it(tmp_path):
    """An accelerator-optimized series attaches its GPUs: 2 x A100 80GB is a2-ultragpu-2g, written into the script;
    1 x L4 fits five G2 machine types, so MACHINE_TYPE stays the user's, with the five named; a T4 (attached to N1)
    leaves it to the user."""
    pools = ("    - {name: a100, gpu: A100-80GB, gpusPerNode: 2, nodes: 2, match: {nodeLabels: "
             "{cloud.google.com/gke-nodepool: a100}}}\n"
             "    - {name: l4, gpu: L4, gpusPerNode: 1, nodes: 3, match: {nodeLabels: {cloud.google.com/gke-nodepool: l4}}}\n"
             "    - {name: t4, gpu: T4, gpusPerNode: 1, nodes: 3, match: {nodeLabels: {cloud.google.com/gke-nodepool: t4}}}\n")
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.33", distribution: gke}', pools))
    a100 = tree.files["node-templates/a100.gke.sh"]
    assert "  --machine-type a2-ultragpu-2g \\\n" in a100 and "MACHINE_TYPE" not in a100
    l4 = tree.files["node-templates/l4.gke.sh"]
    assert "'set MACHINE_TYPE to a machine type of the G2 series with 1 x L4 (g2-standard-4, g2-standard-8, " \
           "g2-standard-12, g2-standard-16, g2-standard-32)'" in l4
    assert '  --machine-type "${MACHINE_TYPE}" \\\n' in l4
    t4 = tree.files["node-templates/t4.gke.sh"]
    assert "'set MACHINE_TYPE to a machine type of the N1 (attachable) series with 1 x T4'" in t4
    from gpuconf import platforms

    assert platforms.gke_machine_types("nvidia-h200-141gb", 8) == ("a3-ultragpu-8g",)
    assert platforms.gke_machine_types("nvidia-h200-141gb", 4) == ()
    assert platforms.gke_machine_types("nvidia-tesla-t4", 1) is None
    assert set(platforms.GKE_MACHINE_TYPES) <= set(platforms.gke()["accelerators"])  # names the fact sheet knows


def test_the_aks_spot_label_gpuconf_derives_is_the_one_microsoft_documents():
    """The fact sheet's Spot label (profiles/platforms.json, derived, marked unverified there) and the label and taint
    gpuconf takes from Microsoft's AKS documentation (platforms.AKS_SPOT_*) are one fact: GC386, GC388 and the
    node-pool script read both."""
    from gpuconf import platforms

    derived = platforms.aks()["spotLabel"]
    assert (derived["key"], derived["value"]) == platforms.AKS_SPOT_LABEL
    assert platforms.AKS_SPOT_TAINT == (*platforms.AKS_SPOT_LABEL, "NoSchedule")
    assert platforms.aks()["nodePoolFlags"]["countRange"] == [0, 1000]


@pytest.mark.parametrize("key, settable", [
    ("gpuconf.dev/pool", True), ("example.com/role", True), ("plain", True),
    ("kubernetes.io/os", True), ("topology.kubernetes.io/zone", True), ("node.kubernetes.io/instance-type", True),
    ("node.kubernetes.io/exclude-from-external-load-balancers", True), ("kubelet.kubernetes.io/anything", True),
    ("team.node.kubernetes.io/x", True),
    ("node-role.kubernetes.io/gpu", False), ("app.kubernetes.io/name", False), ("k8s.io/x", False),
    ("kubernetes.io/role", False), ("sub.k8s.io/x", False), ("topology.kubernetes.io/rack", False)])
def test_which_labels_a_kubelet_may_set_on_its_own_node(key, settable):
    from gpuconf.render.nodes import kubelet_may_set

    assert kubelet_may_set(key) is settable


def test_a_node_template_leaves_out_labels_the_kubelet_may_not_set(tmp_path):
    """A pool recognised by `node-role.kubernetes.io/gpu` (set with kubectl label, as people do): a kubelet given it
    in --node-labels refuses to start, so the template leaves it to a label after the node joins and says how."""
    pools = ('    - {name: l4, gpu: L4, gpusPerNode: 2, nodes: 3, match: {nodeLabels: '
             '{node-role.kubernetes.io/gpu: "", kubernetes.io/os: linux, topology.kubernetes.io/zone: rack-a}}}\n')
    tree = _render(tmp_path, _intent('{kubernetesVersion: "1.32"}', pools))
    body = [line for line in tree.files["node-templates/l4.kubelet.env"].splitlines()
            if not line.startswith("# Generated by") and not line.startswith("# Do not edit")]
    assert body == [
        "# node-role.kubernetes.io/gpu=: a kubelet refuses to start with it in --node-labels, so it is not there; "
        "once the node has joined: kubectl label node NODE node-role.kubernetes.io/gpu=",
        'KUBELET_EXTRA_ARGS="--node-labels=gpuconf.dev/pool=l4,kubernetes.io/os=linux,'
        'nvidia.com/device-plugin.config=exclusive-c0fcc874,topology.kubernetes.io/zone=rack-a"']
    # Its consumer: the kubelet's unit reads the file as an environment file (bash's sourcing has the same rules for
    # comments and quotes) and splits $KUBELET_EXTRA_ARGS into flags. Every label the kubelet then gets is one it
    # accepts: outside kubernetes.io and k8s.io, or in the set a kubelet's "unknown labels" error names.
    env = tmp_path / "l4.kubelet.env"
    env.write_text(tree.files["node-templates/l4.kubelet.env"], encoding="utf-8")
    done = subprocess.run(["bash", "-c", 'set -eu; . "$1"; printf "%s\\n" $KUBELET_EXTRA_ARGS', "-", str(env)],
                          capture_output=True, text=True, check=True)
    [flag] = done.stdout.splitlines()
    labels = dict(item.split("=", 1) for item in flag.removeprefix("--node-labels=").split(","))
    accepted = {"kubernetes.io/os", "kubernetes.io/arch", "kubernetes.io/hostname", "topology.kubernetes.io/zone",
                "topology.kubernetes.io/region", "node.kubernetes.io/instance-type"}
    assert all(key in accepted or not re.search(r"(^|\.)(kubernetes|k8s)\.io/", key) for key in labels), labels
    assert labels["topology.kubernetes.io/zone"] == "rack-a" and "node-role.kubernetes.io/gpu" not in labels

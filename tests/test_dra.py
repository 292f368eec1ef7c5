"""The DRA stack: DeviceClass selectors (CEL) against every catalogued model, the chart model of the GPUCluster
templates, the feature gates, quota keys and claims of examples/dra.yaml."""

from __future__ import annotations

import copy

import pytest

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "dra.yaml"


def _devices(model_id):
    """The devices a selector of model_id is evaluated on: every device of its own model (each productName
    spelling, as a full GPU and as an instance of each MIG profile), and of every other catalogued model the full GPU
    and each MIG profile under its first spelling (the spellings of a model differ only in the productName list,
    which the own-model devices cover; cel-python takes about 2 ms per evaluation)."""
    from gpuconf import catalog, dra

    out = []
    for model in catalog.gpu_models().values():
        names = dra.product_names(model.id)
        for name in names if model.id == model_id else names[:1]:
            out.append((model.id, None, dra.device(model.id, name)))
            for profile in model.mig_profiles:
                out.append((model.id, profile, dra.device(model.id, name, profile)))
    return out


def _models():
    from gpuconf import catalog, dra

    return [m for m in catalog.gpu_models() if dra.product_names(m)]


def test_every_catalogued_model_but_one_has_a_product_name():
    from gpuconf import catalog, dra

    assert sorted(set(catalog.gpu_models()) - set(dra.PRODUCT_NAMES)) == ["H100-96GB"]
    assert set(dra.PRODUCT_NAMES) <= set(catalog.gpu_models())
    names = [n for names in dra.PRODUCT_NAMES.values() for n in names]
    assert len(names) == len(set(names)), "one productName must belong to one model"


@pytest.mark.parametrize("model_id", _models())
def test_selectors_match_their_pool_only(model_id):
    """A pool on this model: its whole-GPU class and the class of each MIG profile match their own devices and no
    device of any other catalogued model (nor another profile)."""
    from gpuconf import catalog, dra

    devices = _devices(model_id)
    for profile in [None, *catalog.gpu_model(model_id).mig_profiles]:
        expression = dra.selector(model_id, profile)
        assert dra.check_selector(expression, "mig" if profile else "gpu") == []
        for other, other_profile, device in devices:
            assert dra.matches(expression, device) == (other == model_id and other_profile == profile), \
                (expression, other, other_profile)


def test_pool_class_of_a_mig_pool_matches_its_profiles_only():
    from gpuconf import dra

    expression = dra.selector("A100-80GB", ["1g.10gb", "3g.40gb"])
    hits = {(m, p) for m, p, device in _devices("A100-80GB") if dra.matches(expression, device)}
    assert hits == {("A100-80GB", "1g.10gb"), ("A100-80GB", "3g.40gb")}


def test_check_selector_refuses_bad_cel_and_unpublished_attributes():
    from gpuconf import dra

    assert dra.check_selector("device.attributes['gpu.nvidia.com'].productName ==", "gpu")[0].startswith("not CEL")
    assert dra.check_selector("device.attributes['gpu.nvidia.com'].memory == 1", "gpu") == [
        "reads gpu.nvidia.com/memory, which the driver does not publish for gpu devices"]
    assert dra.check_selector("device.attributes['gpu.nvidia.com'].profile == '1g.5gb'", "gpu") == [
        "reads gpu.nvidia.com/profile, which the driver does not publish for gpu devices"]
    assert dra.check_selector("device.attributes['gpu.nvidia.com'].profile == '1g.5gb'", "mig") == []
    assert dra.check_selector("device.attributes['example.com'].productName == 'x'", "gpu") == [
        "reads example.com/productName, which the driver does not publish for gpu devices"]


def test_feature_gates_are_exactly_what_the_sharing_needs():
    from gpuconf import dra

    assert dra.feature_gates(["exclusive"], None) == {}
    assert dra.feature_gates(["time-slicing", "exclusive"], None) == {"TimeSlicingSettings": True}
    assert dra.feature_gates(["mps", "mig"], "external") == {"MPSSupport": True}
    assert dra.feature_gates(["mig"], "dynamic") == {"DynamicMIG": True}


# --- the chart model (templates/validations.yaml, templates/gpucluster.yaml of v26.7.0) ---------------------------


@pytest.fixture(scope="module")
def tree():
    from gpuconf.pipeline import render_path

    rendered = render_path(str(EXAMPLE), "out")
    assert rendered.ok, rendered.findings
    return rendered.tree


def test_chart_renders_the_example_with_the_deviceclass_capability(tree):
    from gpuconf.render import chart as C

    merged = tree.values.merged()
    assert C.render_failures(merged, ("resource.k8s.io/v1/DeviceClass",)) == []
    # Without the capability (offline `helm template` without --api-versions) the chart refuses to render.
    assert C.render_failures(merged) == [
        "gpuCluster.deployCR=true requires a cluster that serves a resource.k8s.io DeviceClass API"]


def test_chart_refuses_both_crs_and_a_driver_without_nvidiadriver(tree):
    from gpuconf.render import chart as C

    merged = copy.deepcopy(tree.values.merged())
    merged["clusterPolicy"]["deployCR"] = True
    merged["driver"]["nvidiaDriverCRD"]["enabled"] = False
    assert C.render_failures(merged, C.DRA_CAPABILITIES[:1]) == [
        "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true",
        "the NVIDIADriver CRD must be enabled when deploying a GPUCluster CR"]
    merged["driver"]["enabled"] = False  # a host driver needs no NVIDIADriver
    assert C.render_failures(merged, C.DRA_CAPABILITIES[2:]) == [
        "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true"]


def test_default_values_render_no_gpucluster():
    from gpuconf import catalog
    from gpuconf.render import chart as C

    defaults = catalog.chart("v26.7.0").defaults
    assert C.gpucluster(defaults) is None
    assert C.render_failures(defaults) == []


def test_gpucluster_carries_gates_mirror_and_secrets_and_fits_its_crd(tree):
    from gpuconf.output.verify import verify_object
    from gpuconf.render import chart as C

    cluster = C.gpucluster(tree.values.merged())
    dra = cluster["spec"]["draDriver"]
    assert cluster["metadata"]["name"] == "gpu-cluster"
    assert dra["featureGates"] == {"TimeSlicingSettings": True}
    assert dra["repository"] == "registry.corp.example/nvidia"
    assert dra["imagePullSecrets"] == ["corp-mirror"]
    assert dra["computeDomains"] == {"enabled": False}
    assert verify_object(cluster, "1.34", "GPUCluster") == []
    broken = copy.deepcopy(cluster)
    broken["spec"]["draDriver"]["computeDomains"]["enabled"] = "no"
    assert [p.path for p in verify_object(broken, "1.34", "GPUCluster")] == ["$.spec.draDriver.computeDomains.enabled"]


def test_values_validate_against_the_chart_schema(tree):
    from gpuconf.output.verify import verify_values

    merged = tree.values.merged()
    assert merged["gpuCluster"] == {"deployCR": True} and merged["clusterPolicy"] == {"deployCR": False}
    assert verify_values(merged, "v26.7.0") == []


def test_every_resource_k8s_io_object_passes_kubernetes_validate_at_134(tree):
    from gpuconf.output.verify import verify_object

    found = [d for docs in tree.documents.values() for d in docs if d["apiVersion"] == "resource.k8s.io/v1"]
    assert {d["kind"] for d in found} == {"DeviceClass", "ResourceClaimTemplate"}
    for doc in found:
        assert verify_object(doc, "1.34", "t") == []
        assert verify_object(doc, "1.33", "t")[0].message.startswith("no schema for")


def test_quota_keys_count_the_pool_classes(tree):
    quotas = {d["metadata"]["namespace"]: d["spec"]["hard"] for d in tree.documents["manifests/quotas.yaml"]
              if d["kind"] == "ResourceQuota"}
    assert quotas["nb-alice"] == {"gpuconf-h100.deviceclass.resource.k8s.io/devices": "4"}
    assert quotas["serving"] == {
        "gpuconf-a100-1g.10gb.deviceclass.resource.k8s.io/devices": "8",
        "gpuconf-a100-2g.20gb.deviceclass.resource.k8s.io/devices": "4",
        "gpuconf-a100-3g.40gb.deviceclass.resource.k8s.io/devices": "4"}


def test_probes_claim_one_device_and_list_it(tree):
    jobs = {d["metadata"]["name"]: d for d in tree.documents["manifests/probes.yaml"]}
    pod = jobs["gpuconf-probe-a100"]["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpuconf-probe-a100"}]
    assert pod["containers"][0]["command"] == ["nvidia-smi", "-L"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"]


def test_semantic_check_catches_a_missing_gate(tree):
    from gpuconf.output import dracheck

    merged = copy.deepcopy(tree.values.merged())
    merged["draDriver"]["featureGates"] = {"MPSSupport": True}
    assert list(dracheck._gates(tree.plan, merged, tree)) == [
        "draDriver.featureGates: TimeSlicingSettings is off, but gpuconf-probe-h100 needs it",
        "draDriver.featureGates: MPSSupport is on, but nothing needs it"]


# --- the audit of a DRA cluster: ResourceSlices instead of allocatable --------------------------------------------


def _dra_nodes(plan):
    """The example's nodes as the DRA stack leaves them: the GPUCluster stack's deploy labels, no GPU allocatable."""
    import dataclasses

    import nodelists as NL

    # The fixture builder writes GFD's labels by MIG strategy; GFD does not run on the DRA stack, so they go again.
    nodes = NL.clean_nodes(dataclasses.replace(plan, strategy="mixed"))
    for node in nodes:
        labels = node["metadata"]["labels"]
        for key in [k for k in labels if k.startswith(("nvidia.com/gpu.", "nvidia.com/mig", "nvidia.com/cuda."))
                    and not k.startswith(("nvidia.com/gpu.deploy.", "nvidia.com/gpu.present"))]:
            del labels[key]
        if labels.get("gpuconf.dev/pool"):
            for op in ("driver", "dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra"):
                labels[f"nvidia.com/gpu.deploy.{op}"] = "true"
        for key in [k for k in node["status"]["allocatable"]
                    if k.startswith("nvidia.com/") or k.endswith(".deviceclass.resource.k8s.io/devices")]:
            del node["status"]["allocatable"][key]
    return nodes


def _slice(node: str, devices: list[dict]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpu.nvidia.com-abcde"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                             "resourceSliceCount": 1},
                     "devices": devices}}


def _published(plan, skip: str | None = None, drop: int = 0) -> dict:
    """A ResourceSliceList with what every pool node publishes; `skip` publishes nothing, `drop` devices fewer on the
    first a100 node."""
    from gpuconf.render.dra import layout

    items = []
    for node in _dra_nodes(plan):
        name = node["metadata"]["name"]
        pool = plan.pool_by_name.get(node["metadata"]["labels"].get("gpuconf.dev/pool", ""))
        if pool is None or name == skip:
            continue
        product = {"H100-80GB": "NVIDIA H100 80GB HBM3", "A100-80GB": "NVIDIA A100-SXM4-80GB"}[pool.model.id]
        devices = []
        for gpu in range(pool.pool.gpus_per_node):
            base = {"productName": {"string": product}, "uuid": {"string": f"GPU-{gpu}"},
                    "resource.kubernetes.io/pciBusID": {"string": f"0000:{gpu:02x}:00.0"}}
            profiles = [p for p, n in sorted(layout(pool).items()) for _ in range(n)]
            if not profiles:
                devices.append({"name": f"gpu-{gpu}", "attributes": {**base, "type": {"string": "gpu"}}})
            for i, profile in enumerate(profiles):
                devices.append({"name": f"gpu-{gpu}-mig-{i}", "attributes": {
                    **base, "type": {"string": "mig"}, "profile": {"string": profile},
                    "gpu.nvidia.com/parentUUID": {"string": f"GPU-{gpu}"}}})
        if drop and pool.name == "a100" and name.endswith("0"):
            devices = devices[drop:]
        items.append(_slice(name, devices))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def test_audit_of_a_dra_cluster_reads_resource_slices(run, tmp_path):
    import json

    import nodelists as NL

    plan = NL.load_plan("dra")
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(NL.nodelist(_dra_nodes(plan))), encoding="utf-8")
    slices = tmp_path / "slices.json"
    slices.write_text(json.dumps(_published(plan)), encoding="utf-8")
    clean = run("audit", str(EXAMPLE), "--nodes", str(nodes), "--resource-slices", str(slices))
    assert clean.exit_code == 0, clean.stdout
    assert " GA1" not in clean.stdout, clean.stdout
    # Without the slices the audit cannot see a DRA cluster's GPUs: a usage error, not a clean bill.
    missing = run("audit", str(EXAMPLE), "--nodes", str(nodes))
    assert missing.exit_code == 2 and "--resource-slices" in missing.stderr
    names = [n["metadata"]["name"] for n in _dra_nodes(plan) if n["metadata"]["labels"].get("gpuconf.dev/pool")]
    h100 = next(n for n in names if "h100" in n)
    slices.write_text(json.dumps(_published(plan, skip=h100, drop=3)), encoding="utf-8")
    drift = run("audit", str(EXAMPLE), "--nodes", str(nodes), "--resource-slices", str(slices), "--format", "json")
    assert drift.exit_code == 1
    found = [(f["code"], f["severity"], f["node"], f["message"]) for f in json.loads(drift.stdout)["findings"]]
    a100 = next(n for n in names if "a100" in n and n.endswith("0"))
    assert sorted(found) == [
        ("GA106", "warning", h100, "no GFD product label, and no published device names the model: cannot confirm "
                                   "the pool's model H100-80GB"),
        ("GA130", "error", a100, "gpuconf-a100-1g.10gb: 14 of 16 devices; gpuconf-a100-2g.20gb: 7 of 8 devices"),
        ("GA130", "error", h100, "gpuconf-h100: 0 of 8 devices")]


def test_resource_slice_attributes_become_what_a_selector_reads():
    from gpuconf import dra
    from gpuconf.cluster.slices import devices_by_node

    found = devices_by_node([_slice("n1", [{"name": "gpu-0", "attributes": {
        "type": {"string": "gpu"}, "productName": {"string": "NVIDIA L4"},
        "cudaComputeCapability": {"version": "8.9.0"}}}]),
        {"kind": "ResourceSlice", "spec": {"driver": "compute-domain.nvidia.com", "nodeName": "n1", "devices": []}}],
        "test")
    assert found == {"n1": [{"driver": "gpu.nvidia.com", "capacity": {}, "attributes": {"gpu.nvidia.com": {
        "type": "gpu", "productName": "NVIDIA L4", "cudaComputeCapability": "8.9.0"}}}]}
    assert dra.matches(dra.selector("L4"), found["n1"][0])


def test_no_allocatable_alert_on_the_dra_stack(tree):
    rules = [r["alert"] for d in tree.documents["manifests/monitoring.yaml"] if d["kind"] == "PrometheusRule"
             for g in d["spec"]["groups"] for r in g["rules"]]
    # The DCGM alerts only: the nodes advertise no GPU resource that GpuconfGPUsUnavailable could read.
    assert rules == ["GpuconfGPUTemperatureHigh", "GpuconfGPUXidError", "GpuconfGPUEccDoubleBitError"]


def test_kueue_queues_cover_the_names_of_the_device_class_mappings(tmp_path):
    """With Kueue, the ClusterQueues cover the quota keys, which are the names of the deviceClassMappings that
    REPORT.md gives for Kueue's Configuration, one class each."""
    from ruamel.yaml import YAML

    from gpuconf.pipeline import render_path

    intent = YAML(typ="safe").load(EXAMPLE.read_text(encoding="utf-8"))
    other = {"otherResources": {"cpu": 64, "memory": "256Gi"}}
    teams = {"notebooks": other, "serving": dict(other, otherResources=dict(other["otherResources"]))}
    intent["spec"]["queueing"] = {"kueue": {"version": "v0.19.2", "teams": teams}}
    path = tmp_path / "dra-kueue.yaml"
    with path.open("w", encoding="utf-8") as stream:
        YAML(typ="safe").dump(intent, stream)
    rendered = render_path(str(path), str(tmp_path / "out"))
    assert rendered.ok, rendered.findings
    tree = rendered.tree
    covered = {r for d in tree.documents["manifests/queues.yaml"] if d["kind"] == "ClusterQueue"
               for g in d["spec"]["resourceGroups"] for r in g["coveredResources"]}
    import json

    mappings = json.loads(tree.files["report.json"])["dra"]["kueueMappings"]
    assert {m["name"] for m in mappings} == {r for r in covered if r.endswith(".deviceclass.resource.k8s.io/devices")}
    assert all(m["deviceClassNames"] == [m["name"].split(".deviceclass.")[0]] for m in mappings)
    assert len(mappings) == 4
    assert "deviceClassMappings" in tree.files["REPORT.md"]


def test_the_reports_steps_follow_the_dra_stack(tree):
    """REPORT.md on DRA: no ClusterPolicy, no device-plugin ConfigMaps, no mig-manager and no waves (GC435)."""
    import json

    report = json.loads(tree.files["report.json"])
    rollback = report["rollback"]
    assert rollback[1].startswith("Revert the commit")  # the revert itself is kept
    assert not [s for s in rollback if "ClusterPolicy" in s or "config-manager" in s or "mig-manager re" in s]
    assert [s for s in rollback if s.startswith("Node labels:")] == [
        "Node labels: nfd-master re-applies the previous NodeFeatureRules, so the nodes get back their previous "
        "`gpuconf.dev/pool` values (the DRA stack reads no device-plugin or MIG label)."]
    assert sum(s.startswith("Chart values") for s in rollback) == 1
    text = tree.files["REPORT.md"]
    assert "declare `spec.driver.upgrade.waves`" not in text
    assert "Proves: namespaces, DeviceClasses, claim templates, node labelling rules" in text
    assert "its CRDs (GPUCluster, NVIDIADriver, NodeFeatureRule)" in text
    assert "sharing ConfigMaps" not in text


def test_mig_partitions_without_a_mig_pool_only_warns_even_next_to_mps(run, tmp_path):
    """`migPartitions: dynamic` with no MIG pool: the driver runs without the DynamicMIG gate (dra.feature_gates), so
    an MPS pool is no conflict (no GC434 error) and the setting itself is a warning."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(INTENT_NO_MIG, encoding="utf-8")
    result = run("validate", str(intent))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"{intent}:9:26: warning GC434 spec.cluster.dra.migPartitions: no pool uses MIG (hint: remove migPartitions)"]


INTENT_NO_MIG = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: dra-nomig
spec:
  cluster:
    kubernetesVersion: "1.34"
    allocation: dra
    dra: {migPartitions: dynamic}
  operator:
    chartVersion: v26.7.0
  pools:
    - name: l40s
      gpu: L40S
      gpusPerNode: 4
      nodes: 2
      match: {pciDevice: true}
      sharing: shared
  sharingProfiles:
    shared:
      mps: {replicas: 2}
"""


def test_the_dra_stacks_driver_label_is_expected_where_the_operator_manages_the_driver(tmp_path):
    """On the GPUCluster stack the operator labels a node for its driver only where it installs one (a managed pool):
    a node of such a pool without nvidia.com/gpu.deploy.driver is one the operator does not reconcile (GA117)."""
    import json

    import nodelists as NL

    from gpuconf.cluster.audit import audit
    from gpuconf.cluster.slices import read_slices_file

    plan = NL.load_plan("dra")
    nodes = _dra_nodes(plan)
    pooled = [n for n in nodes if n["metadata"]["labels"].get("gpuconf.dev/pool")]
    assert all(plan.pool_by_name[n["metadata"]["labels"]["gpuconf.dev/pool"]].driver != "preinstalled"
               for n in pooled)
    del pooled[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"]
    slices_file = tmp_path / "slices.json"
    slices_file.write_text(json.dumps(_published(plan)), encoding="utf-8")
    slices = read_slices_file(str(slices_file))
    found = [(f.code, f.node, f.evidence.get("missing")) for f in audit(plan, nodes, "t", None, slices).findings
             if f.node]
    assert found == [("GA117", pooled[0]["metadata"]["name"], ["nvidia.com/gpu.deploy.driver"])]


def test_a_crash_looping_kubelet_plugin_is_why_a_dra_node_publishes_nothing(run, tmp_path):
    """The DRA driver's kubelet plugin (its chart's selector label `dra-driver-nvidia-gpu-component: kubelet-plugin`,
    dra-driver-nvidia-gpu v0.4.1 _helpers.tpl) crash-loops on the node whose slice is missing: GA145 names it, and
    GA130's hint names GA145."""
    import json

    import incidents as I
    import nodelists as NL

    plan = NL.load_plan("dra")
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(NL.nodelist(_dra_nodes(plan))), encoding="utf-8")
    names = [n["metadata"]["name"] for n in _dra_nodes(plan) if n["metadata"]["labels"].get("gpuconf.dev/pool")]
    h100 = next(n for n in names if "h100" in n)
    slices = tmp_path / "slices.json"
    slices.write_text(json.dumps(_published(plan, skip=h100)), encoding="utf-8")
    items = []
    for name in names:
        plugin = I.pod("nvidia-dra-driver-gpu-kubelet-plugin", ("init",), ("gpus",),
                       "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0", name, False)
        labels = plugin["metadata"]["labels"]
        del labels["app"]
        labels["dra-driver-nvidia-gpu-component"] = "kubelet-plugin"
        if name == h100:
            I.crash(plugin, "gpus", exit_code=1)
        # The driver, from an NVIDIADriver (its DaemonSet's app label is nvidia-gpu-driver-<os>-<hash>).
        driver = I.pod("nvidia-gpu-driver-ubuntu22.04-646cdfdb96", ("k8s-driver-manager",), ("nvidia-driver-ctr",),
                       "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04", name, False)
        driver["metadata"]["labels"]["app.kubernetes.io/component"] = "nvidia-driver"
        items += [plugin, driver]
    pods = tmp_path / "pods.json"
    pods.write_text(NL.dumps(I.podlist(items)), encoding="utf-8")
    doc = json.loads(run("audit", str(EXAMPLE), "--nodes", str(nodes), "--resource-slices", str(slices), "--pods",
                         str(pods), "--format", "json").stdout)
    [cause] = [f for f in doc["findings"] if f["code"] == "GA145"]
    assert cause["node"] == h100
    assert cause["message"] == "dra-kubelet-plugin fails on the node: CrashLoopBackOff (exit 1, 9 restarts)"
    [lost] = [f for f in doc["findings"] if f["code"] == "GA130"]
    assert lost["hint"].startswith("explained by GA145 on this node: dra-kubelet-plugin fails")


def test_external_mig_layouts_get_the_host_files_mig_parted_reads(tree):
    """migPartitions: external (issue 44, item 4): the mig-parted config the device-plugin stack's MIG Manager reads,
    for the hosts, and per MIG pool the nvidia-mig-manager.service drop-in that selects its layout (NVIDIA/mig-parted
    deployments/systemd: service.sh takes MIG_PARTED_CONFIG_FILE and MIG_PARTED_SELECTED_CONFIG from the
    environment)."""
    from ruamel.yaml import YAML

    from gpuconf.output import formats
    from gpuconf.render.sharing import mig_parted_config

    files = tree.files
    assert sorted(f for f in files if f.startswith("node-templates/")) == [
        "node-templates/a100.kubelet.env", "node-templates/a100.mig-manager.conf",
        "node-templates/mig-parted-config.yaml"]
    config = YAML(typ="safe", pure=True).load(files["node-templates/mig-parted-config.yaml"])
    assert config == mig_parted_config(tree.plan)  # the same file the MIG Manager would read on the other stack
    assert formats.check_mig_parted_config(config) == []  # as mig-parted parses it
    [a100] = [p for p in tree.plan.pools if p.name == "a100"]
    assert a100.mig_key in config["mig-configs"]
    assert config["mig-configs"][a100.mig_key][0]["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    drop_in = [line for line in files["node-templates/a100.mig-manager.conf"].splitlines()
               if not line.startswith("#")]
    assert drop_in == ["[Service]",
                       'Environment="MIG_PARTED_CONFIG_FILE=/etc/nvidia-mig-manager/gpuconf-config.yaml"',
                       f'Environment="MIG_PARTED_SELECTED_CONFIG={a100.mig_key}"']
    assert "node-templates/mig-parted-config.yaml and each pool's node-templates/<pool>.mig-manager.conf" in \
        files["REPORT.md"]


def test_dynamic_mig_layouts_get_no_host_files():
    from gpuconf.render.dra import host_mig_files

    text = (ROOT / "examples" / "dra.yaml").read_text(encoding="utf-8")
    assert "migPartitions: external" in text
    from gpuconf import plan as P
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    validation = validate_document(load_text(text.replace("migPartitions: external", "migPartitions: dynamic"),
                                             "dra.yaml"))
    assert validation.intent is not None
    assert host_mig_files(P.build(validation.intent, "dra.yaml", validation.document)) == {}

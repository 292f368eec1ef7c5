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

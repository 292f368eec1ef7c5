"""Every NodePool, NodeOverlay and EC2NodeClass gpuconf renders passes its CRD's CEL rules (evaluated by cel-python,
tests/cel.py), and the evaluator catches what the API server would refuse."""

from __future__ import annotations

import copy

import pytest
from ruamel.yaml import YAML

from cel import rule_count, schema, violations
from conftest import ROOT

YAML11 = YAML(typ="safe", pure=True)
KARPENTER_KINDS = {("karpenter.sh/v1", "NodePool"), ("karpenter.sh/v1alpha1", "NodeOverlay"),
                   ("karpenter.k8s.aws/v1", "EC2NodeClass")}


def _rendered() -> list[dict]:
    """The Karpenter objects of every golden tree (the examples as rendered and compared byte for byte)."""
    out = []
    for path in sorted((ROOT / "tests" / "golden").glob("*/*/manifests/karpenter.yaml")):
        out += [d for d in YAML11.load_all(path.read_text(encoding="utf-8")) if d is not None]
    return out


def test_the_karpenter_schemas_keep_their_cel_rules():
    # The counts of the CRDs in ../shared/reference/crds (AWS provider v1.14.1), kept by tools/derive_schemas.py.
    counts = {kind: rule_count(schema(api, kind)) for api, kind in KARPENTER_KINDS}
    assert counts["NodePool"] >= 20 and counts["NodeOverlay"] >= 8 and counts["EC2NodeClass"] >= 30, counts


def test_the_golden_trees_have_every_karpenter_kind():
    assert {(d["apiVersion"], d["kind"]) for d in _rendered()} == KARPENTER_KINDS


@pytest.mark.parametrize("doc", _rendered(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_every_rendered_karpenter_object_passes_its_cel_rules(doc):
    assert violations(doc) == []


def test_the_lifecycle_test_intents_pass_the_cel_rules(tmp_path):
    """The objects of tests/test_platforms.py's richest Karpenter intent (budgets, capacity types, MIG overlays)."""
    import test_platforms as T

    pools = ("    - {name: infer, gpu: A10G, gpusPerNode: 4, nodes: 6, sharing: shared, match: {nodeLabels: "
             "{karpenter.sh/nodepool: a10g, karpenter.k8s.aws/instance-family: g5}}, karpenter: {budgets: "
             "[{nodes: '1', reasons: [Drifted], schedule: '0 9 * * 1-5', duration: 8h}], capacityTypes: [spot, "
             "reserved], instanceStorePolicy: RAID0, capacityReservations: [{id: cr-0123456789abcdef0}, "
             "{tags: {team: ml}, ownerID: '123456789012', instanceMatchCriteria: targeted}]}}\n"
             "    - {name: mig, gpu: A100-80GB, gpusPerNode: 8, nodes: 2, sharing: halves, match: {nodeLabels: "
             "{karpenter.sh/nodepool: a100}}}\n")
    extra = ("  sharingProfiles:\n    shared: {timeSlicing: {replicas: 4, renameByDefault: true}}\n"
             "    halves: {mig: {layout: {\"3g.40gb\": 2}}}\n")
    cluster = T.KARPENTER.replace("distribution: eks,", "distribution: eks, migStrategy: mixed,")
    tree = T._render(tmp_path, T._intent(cluster, pools, extra))
    docs = T._docs(tree.files["manifests/karpenter.yaml"])
    assert {d["kind"] for d in docs} == {"NodePool", "NodeOverlay", "EC2NodeClass"}
    for doc in docs:
        assert violations(doc) == [], doc["kind"]
    [node_class] = [d for d in docs if d["kind"] == "EC2NodeClass" and d["metadata"]["name"] == "a10g"]
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"instanceMatchCriteria": "targeted", "ownerID": "123456789012", "tags": {"team": "ml"}}]


def _one(kind: str) -> dict:
    return copy.deepcopy(next(d for d in _rendered() if d["kind"] == kind))


def test_the_rules_catch_what_the_api_server_refuses():
    pool = _one("NodePool")
    template = pool["spec"]["template"]
    template["metadata"]["labels"]["karpenter.k8s.aws/owner"] = "me"  # outside the AWS provider's allow-list
    template["spec"]["requirements"] += [
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["-1"]},
        {"key": "team", "operator": "In", "values": []}]
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "1", "schedule": "0 9 * * *"}]
    found = violations(pool)
    assert sorted(found) == sorted([
        "NodePool.spec.disruption.budgets: 'schedule' must be set with 'duration'",
        "NodePool.spec.template.spec.requirements: requirements with operator 'In' must have a value defined",
        "NodePool.spec.template.spec.requirements: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a "
        "single positive integer value",
        f"NodePool.spec.template.spec.requirements[{len(template['spec']['requirements']) - 3}].key: label "
        "\"karpenter.sh/nodepool\" is restricted",
        "NodePool.spec.template.metadata.labels: label domain \"karpenter.k8s.aws\" is restricted"]), found

    overlay = _one("NodeOverlay")
    overlay["spec"]["capacity"]["cpu"] = "4"
    overlay["spec"]["requirements"].append({"key": "kubernetes.io/hostname", "operator": "In", "values": ["n"]})
    overlay["spec"]["price"], overlay["spec"]["priceAdjustment"] = "1.0", "+5%"
    assert violations(overlay) == [
        "NodeOverlay.spec: cannot set both 'price' and 'priceAdjustment'",
        "NodeOverlay.spec.capacity: invalid resource restricted",
        "NodeOverlay.spec.requirements[1].key: label \"kubernetes.io/hostname\" is restricted"]

    node_class = _one("EC2NodeClass")
    node_class["spec"]["instanceProfile"] = "p"  # next to role
    node_class["spec"]["amiSelectorTerms"].append({"id": "ami-1"})
    node_class["spec"]["blockDeviceMappings"].append({"deviceName": "/dev/xvdb", "rootVolume": True,
                                                      "ebs": {"volumeSize": "1Gi"}})
    assert violations(node_class) == [
        "EC2NodeClass.spec: must specify exactly one of ['role', 'instanceProfile']",
        "EC2NodeClass.spec.amiSelectorTerms: 'alias' is mutually exclusive, cannot be set with a combination of "
        "other amiSelectorTerms",
        "EC2NodeClass.spec.blockDeviceMappings: must have only one blockDeviceMappings with rootVolume"]


# --- Flux: the objects of gitops/ -----------------------------------------------------------------------------

FLUX_KINDS = {("helm.toolkit.fluxcd.io/v2", "HelmRelease"), ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
              ("source.toolkit.fluxcd.io/v1", "OCIRepository"), ("source.toolkit.fluxcd.io/v1", "HelmRepository")}


def _flux_rendered() -> list[dict]:
    """The Flux objects of every golden tree."""
    out = []
    for path in sorted((ROOT / "tests" / "golden").glob("*/*/gitops/**/*.yaml")):
        out += [d for d in YAML11.load_all(path.read_text(encoding="utf-8"))
                if isinstance(d, dict) and (d.get("apiVersion"), d.get("kind")) in FLUX_KINDS]
    return out


def test_the_flux_schemas_keep_their_cel_rules():
    # The CRDs of ../shared/reference/crds (helm-controller v1.6.3, kustomize-controller v1.9.4, source-controller
    # v1.9.1): the HelmRelease has 5 rules, the Kustomization 2, the sources none (their schema is all there is).
    counts = {kind: rule_count(schema(api, kind)) for api, kind in FLUX_KINDS}
    assert counts == {"HelmRelease": 5, "Kustomization": 2, "OCIRepository": 0, "HelmRepository": 0}, counts


@pytest.mark.parametrize("doc", _flux_rendered(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_every_rendered_flux_object_passes_its_cel_rules(doc):
    assert violations(doc) == []


def test_the_flux_rules_catch_what_the_api_server_refuses():
    [release] = [copy.deepcopy(d) for d in _flux_rendered() if d["kind"] == "HelmRelease"][:1]
    release["spec"]["chartRef"] = {"kind": "OCIRepository", "name": "x"}
    release["spec"]["chart"] = {"spec": {"chart": "x", "sourceRef": {"kind": "HelmRepository", "name": "x"}}}
    release["spec"]["upgrade"]["strategy"] = {"name": "RemediateOnFailure", "retryInterval": "1m"}
    assert violations(release) == [
        "HelmRelease.spec: either chart or chartRef must be set",
        "HelmRelease.spec.upgrade.strategy: .retryInterval can only be set when .name is 'RetryOnFailure'"]
    [kustomization] = [copy.deepcopy(d) for d in _flux_rendered() if d["kind"] == "Kustomization"][:1]
    kustomization["spec"]["kubeConfig"] = {}
    assert violations(kustomization) == [
        "Kustomization.spec.kubeConfig: exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must "
        "be specified"]

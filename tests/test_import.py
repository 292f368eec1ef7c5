"""`gpuconf import`: a draft intent from a cluster's nodes, which validates and has the example's pools."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

import nodelists as NL
from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "nodes"


def _nodes(example: str) -> list[dict]:
    return json.loads((FIXTURES / f"{example}.json").read_text(encoding="utf-8"))["items"]


def _draft(nodes: list[dict], name: str = "imported"):
    from gpuconf.cluster.importer import draft_intent

    return draft_intent(nodes, "test", name)


def _validated(text: str):
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    result = validate_document(load_text(text, "draft.yaml"))
    assert result.ok, [f.text() for f in result.findings]
    return result


def _pools(intent) -> Counter:
    """(model, GPUs per node, node count, sharing kind) of every pool."""
    from gpuconf import plan as P

    return Counter((p.gpu, p.gpus_per_node, p.nodes, P.sharing_kind(P.pool_profile(intent, p)))
                   for p in intent.spec.pools)


@pytest.mark.parametrize("example", NL.EXAMPLES)
def test_import_of_a_clean_cluster_has_the_examples_pools(run, example):
    result = run("import", "--nodes", str(FIXTURES / f"{example}.json"), "--name", example)
    assert result.exit_code == 0, result.stderr
    assert "the draft validates" in result.stderr
    draft = _validated(result.stdout)
    expected = NL.load_plan(example).intent
    assert _pools(draft.intent) == _pools(expected)
    assert draft.intent.metadata.name == example
    # MIG layouts and sharing parameters come back exactly, not just their kind.
    from gpuconf import catalog
    from gpuconf import plan as P

    def layouts(intent):
        return sorted((p.gpu, sorted((P.mig_layout(P.pool_profile(intent, p), catalog.gpu_model(p.gpu)) or {}).items()))
                      for p in intent.spec.pools)

    assert layouts(draft.intent) == layouts(expected)
    # Pool names come from the gpuconf.dev/pool label a previous render left on the nodes.
    assert sorted(p.name for p in draft.intent.spec.pools) == sorted(p.name for p in expected.spec.pools)


def test_draft_reads_what_the_nodes_tell(run):
    text = run("import", "--nodes", str(FIXTURES / "hybrid.json")).stdout
    intent = _validated(text).intent
    pools = {p.name: p for p in intent.spec.pools}
    assert intent.spec.cluster.kubernetes_version == "1.31" and intent.spec.cluster.distribution == "rke2"
    assert pools["legacy-a100"].driver.preinstalled is True
    # Wave mode gives every managed pool its own NVIDIADriver: each keeps its version.
    assert {name: pool.driver.version for name, pool in pools.items() if name != "legacy-a100"} == {
        "batch-h100": "595.91.07", "new-h200": "580.173.02", "viz-l40s": "580.173.02"}
    assert 'version: "580.173.02"' in text and 'version: "595.91.07"' in text  # quoted: a version is no number
    assert [(t.key, t.effect) for t in pools["batch-h100"].taints] == [("hpc.example.com/batch", "NoExecute")]
    assert intent.spec.sharing_profiles[pools["new-h200"].sharing].mig.preset == "all-1g.18gb"
    # What cannot be read off a node is said so.
    assert "# containerd's paths for this distribution come with gpuconf" in text
    assert "chartVersion: v26.7.0  # the gpu-operator image (the validator) the GPU nodes run" in text
    # The mixed strategy's per-profile resources tell the layout exactly: nothing is assumed.
    assert "migStrategy: mixed # the nodes' GFD mig.strategy" in text and "# assumed" not in text
    hetero = _validated(run("import", "--nodes", str(FIXTURES / "heterogeneous.json")).stdout).intent
    infer = next(p for p in hetero.spec.pools if p.name == "infer-a100")
    assert dict(infer.match.node_labels) == {"eks.amazonaws.com/nodegroup": "infer"}
    assert hetero.spec.cluster.distribution == "eks"


def test_output_file_is_never_overwritten(run, tmp_path):
    target = tmp_path / "draft.yaml"
    first = run("import", "--nodes", str(FIXTURES / "single-pool.json"), "-o", str(target))
    assert first.exit_code == 0 and target.exists()
    assert run("validate", str(target)).exit_code == 0
    # the draft's first line names the schema beside it, which import wrote there (editors work offline)
    assert target.read_text(encoding="utf-8").splitlines()[0] == \
        "# yaml-language-server: $schema=cluster-intent.schema.json"
    assert (tmp_path / "cluster-intent.schema.json").read_text(encoding="utf-8") == run("schema").stdout
    assert run("import", "--nodes", str(FIXTURES / "single-pool.json"), "-o", str(target)).exit_code == 2
    assert run("import").exit_code == 2


def test_unknown_gpus_without_a_pci_label_are_left_out_with_a_comment():
    nodes = _nodes("single-pool")
    odd = copy.deepcopy(nodes[0])
    odd["metadata"]["name"] = "workstation-01"
    odd["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-GeForce-RTX-4090"
    draft = _draft(nodes + [odd])
    why = ("GPU product 'NVIDIA-GeForce-RTX-4090' is not in gpuconf's catalogue and no NFD label names its PCI device "
           "id (NFD's deviceLabelFields lacks `device`): declare it under spec.gpuModels")
    assert draft.skipped == [("workstation-01", why)]
    assert "#   workstation-01: GPU product 'NVIDIA-GeForce-RTX-4090'" in draft.text
    assert "1 GPU nodes skipped" in draft.describe()
    _validated(draft.text)


def test_unknown_gpus_with_a_pci_label_become_gpu_models_entries():
    nodes = _nodes("single-pool")
    odd = []
    for i in range(2):
        n = copy.deepcopy(nodes[0])
        n["metadata"]["name"] = f"workstation-{i:02d}"
        labels = n["metadata"]["labels"]
        labels.pop("gpuconf.dev/pool", None)
        labels.update({"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090", "nvidia.com/gpu.memory": "24564",
                       "nvidia.com/gpu.count": "2", "feature.node.kubernetes.io/pci-0300_10de_2684.present": "true"})
        odd.append(n)
    draft = _draft(nodes + odd)
    assert draft.skipped == []
    intent = _validated(draft.text).intent
    declared = intent.spec.gpu_models["GEFORCE-RTX-4090"]
    assert declared.pci_device_ids == ["0x268410DE"] and declared.memory_gib == 24.0
    assert declared.product_labels == ["NVIDIA-GeForce-RTX-4090"]
    (pool,) = [p for p in intent.spec.pools if p.gpu == "GEFORCE-RTX-4090"]
    assert (pool.nodes, pool.gpus_per_node) == (2, 2)


def test_same_model_pools_without_node_groups_are_told_apart_by_name():
    nodes = _nodes("single-pool")[:3]
    shared = []
    for i, n in enumerate(copy.deepcopy(nodes)):  # three more L40S nodes, time-sliced, named differently
        n["metadata"]["name"] = f"lab-ts-{i:02d}"
        labels = n["metadata"]["labels"]
        labels.pop("gpuconf.dev/pool")
        labels.update({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing",
                       "nvidia.com/gpu.product": "NVIDIA-L40S-SHARED"})
        n["status"]["allocatable"]["nvidia.com/gpu"] = "16"
        shared.append(n)
    for n in nodes:
        n["metadata"]["labels"].pop("gpuconf.dev/pool")
    intent = _validated(_draft(nodes + shared).text).intent
    matches = sorted((p.match.hostname, p.sharing, p.nodes) for p in intent.spec.pools)
    assert matches == [("^l40s-", "exclusive", 3), ("^lab-ts-", "ts-x4", 3)]


def test_pools_of_one_model_in_other_configurations_are_split_and_selected_by_name():
    """Same model, same name prefix, other sharing: no label or prefix tells them apart, so each pool lists its
    nodes' names (one pool for both would switch three nodes' sharing on the first sync) and the draft says so."""
    nodes = _nodes("single-pool")[:3]
    twin = copy.deepcopy(nodes)
    for n in nodes + twin:
        n["metadata"]["labels"].pop("gpuconf.dev/pool")
    for i, n in enumerate(twin):
        n["metadata"]["name"] = f"l40s-0{i + 3}"
        n["metadata"]["labels"].update({"nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.sharing-strategy": "mps"})
    draft = _draft(nodes + twin)
    intent = _validated(draft.text).intent
    assert [(p.name, p.nodes, p.match.hostname) for p in intent.spec.pools] == [
        ("l40s-exclusive", 3, "^(?:l40s-00|l40s-01|l40s-02)$"),
        ("l40s-mps-x2-gpu", 3, "^(?:l40s-03|l40s-04|l40s-05)$")]
    assert "merged here" not in draft.text
    assert draft.notes == [
        "pool 'l40s-exclusive' selects its nodes by name (l40s-00, l40s-01, l40s-02): other L40S nodes run another "
        "configuration (MIG config, sharing, driver or taints) and no node label or name prefix tells them apart; a "
        "node added later matches no pool until you give the pool a label of its own",
        "pool 'l40s-mps-x2-gpu' selects its nodes by name (l40s-03, l40s-04, l40s-05): other L40S nodes run another "
        "configuration (MIG config, sharing, driver or taints) and no node label or name prefix tells them apart; a "
        "node added later matches no pool until you give the pool a label of its own"]


def test_no_gpu_nodes_at_all(run, tmp_path):
    draft = _draft(_nodes("single-pool")[3:])  # the three control-plane nodes only
    assert draft.pools == [] and draft.gpu_nodes == 0
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(NL.nodelist(_nodes("single-pool")[3:])), encoding="utf-8")
    result = run("import", "--nodes", str(path))
    assert result.exit_code == 1 and result.stdout == ""
    assert "none of the 3 nodes has an NVIDIA GPU" in result.stderr


def test_pools_of_one_model_are_selected_by_a_node_group_key_they_all_carry():
    nodes = _nodes("heterogeneous")
    train = [copy.deepcopy(n) for n in nodes if n["metadata"]["labels"].get("gpuconf.dev/pool") == "train-h100"]
    for i, n in enumerate(train):
        labels = n["metadata"]["labels"]
        labels.pop("gpuconf.dev/pool")
        labels["karpenter.sh/nodepool"] = "h100-a" if i < 10 else "h100-b"
        if i >= 10:  # Karpenter's nodes carry no EKS node-group label
            labels.pop("eks.amazonaws.com/nodegroup")
    intent = _validated(_draft(train).text).intent
    assert sorted((sorted(p.match.node_labels.items()), p.nodes) for p in intent.spec.pools) == [
        ([("karpenter.sh/nodepool", "h100-a")], 10), ([("karpenter.sh/nodepool", "h100-b")], 6)]
    assert sorted(p.name for p in intent.spec.pools) == ["h100-a", "h100-b"]


def test_single_strategy_layout_comes_from_a_preset_mig_config_label():
    nodes = [n for n in _nodes("hybrid") if n["metadata"]["labels"].get("gpuconf.dev/pool") == "new-h200"]
    for n in nodes:
        n["metadata"]["labels"]["nvidia.com/mig.config"] = "all-1g.18gb"
    draft = _draft(nodes)
    assert "assumed the all-" not in draft.text
    intent = _validated(draft.text).intent
    pool, = intent.spec.pools
    assert (pool.gpus_per_node, intent.spec.sharing_profiles[pool.sharing].mig.preset) == (8, "all-1g.18gb")


# --- round trip: a draft audits its own cluster clean, and renders the nodes' own config keys -----------------------


@pytest.mark.parametrize("example", NL.EXAMPLES)
def test_import_then_audit_of_the_same_cluster_is_clean(run, tmp_path, example):
    """`gpuconf import` of a healthy cluster, then `gpuconf audit DRAFT` against the same nodes: no finding at all.
    The draft names its sharing profiles after the nodes' content-addressed config keys and reproduces their
    content (failRequestsGreaterThanOne and single-strategy MIG layouts are on no label: the key's hash decides), so
    its render selects exactly the keys the nodes carry and applying it relabels no node."""
    from gpuconf import plan as P

    nodes = str(FIXTURES / f"{example}.json")
    draft = tmp_path / "draft.yaml"
    assert run("import", "--nodes", nodes, "--name", example, "-o", str(draft)).exit_code == 0
    audited = run("audit", str(draft), "--nodes", nodes, "--format", "json")
    assert audited.exit_code == 0, audited.stdout
    doc = json.loads(audited.stdout)
    assert doc["findings"] == [] and doc["summary"]["errors"] == doc["summary"]["warnings"] == 0
    # The same keys as the example renders: the profile names and contents came back.
    result = _validated(draft.read_text(encoding="utf-8"))
    mine = P.build(result.intent, "draft.yaml")
    original = NL.load_plan(example)
    assert sorted(mine.device_plugin_configs) == sorted(original.device_plugin_configs)
    assert sorted(mine.mig_configs) == sorted(original.mig_configs)
    assert sorted(mine.intent.spec.sharing_profiles) == sorted(original.intent.spec.sharing_profiles)
    assert {p.name: p.labels for p in mine.pools} == {p.name: p.labels for p in original.pools}


def test_config_keys_of_another_content_are_named_but_said_to_change():
    """A profile whose nodes' key does not hash to anything the labels allow keeps the name, says it will relabel."""
    nodes = _nodes("heterogeneous")
    for n in nodes:
        labels = n["metadata"]["labels"]
        if labels.get("gpuconf.dev/pool") == "notebooks-l4":
            labels["nvidia.com/device-plugin.config"] = "notebooks-x4-00000000"
    draft = _draft(nodes)
    intent = _validated(draft.text).intent
    pool = next(p for p in intent.spec.pools if p.name == "notebooks-l4")
    assert pool.sharing == "notebooks-x4"
    assert "whose content this draft does not reproduce: rendering it gives new keys" in draft.text


def test_chart_version_and_registry_come_from_the_validator_image():
    def draft_with(images: list[str]):
        nodes = _nodes("single-pool")
        for n in nodes:
            n["status"]["images"] = [{"names": [name], "sizeBytes": 1} for name in images]
        return _draft(nodes)

    text = draft_with(["nvcr.io/nvidia/gpu-operator:v26.3.3"]).text
    assert "chartVersion: v26.3.3  # the gpu-operator image (the validator) the GPU nodes run" in text
    assert "registry:" not in text
    text = draft_with(["mirror.example:5000/nvidia/gpu-operator:v26.7.0",
                       "mirror.example:5000/nvidia/gpu-operator@sha256:" + "0" * 64]).text
    intent = _validated(text).intent
    assert intent.spec.operator.chart_version == "v26.7.0"
    assert intent.spec.operator.registry == "mirror.example:5000/nvidia"
    assert "# not inferred: imagePullSecrets" in text
    text = draft_with(["nvcr.io/nvidia/gpu-operator:v25.10.1"]).text
    assert "chartVersion: v25.10.1  # the gpu-operator image (the validator) the GPU nodes run" in text
    # A release gpuconf has no facts for, or two at once, is no guess: the import refuses (exit 2 in the CLI).
    from gpuconf.adopt.release import ReleaseProblem

    with pytest.raises(ReleaseProblem, match=r"v99\.1\.0 \(the gpu-operator image \(the validator\) the GPU nodes "
                       r"run\), which gpuconf has no facts for: add it with `gpuconf chart add`"):
        draft_with(["nvcr.io/nvidia/gpu-operator:v99.1.0"])
    with pytest.raises(ReleaseProblem, match=r"several GPU Operator charts: v26.3.3 \(the gpu-operator image v26.3.3 "
                       r"on some GPU nodes\); v26.7.0 .*an upgrade under way"):
        draft_with(["nvcr.io/nvidia/gpu-operator:v26.3.3", "nvcr.io/nvidia/gpu-operator:v26.7.0"])
    # A tag no registry accepts never reaches the draft (here it would end the comment and add a key).
    text = draft_with(["nvcr.io/nvidia/gpu-operator:v26.3.3\nspec: {}"]).text
    assert "not inferred: nothing read names the release that runs" in text and "spec: {}" not in text
    _validated(text)


def test_hostname_patterns_are_drafted_only_to_tell_pools_of_one_model_apart():
    """The only pool of its model selects by PCI device alone (a node of any name joins it later); two pools of one
    model are told apart by their nodes' name prefixes, cut back to the last "-" only where that stays disjoint."""
    hybrid = _validated(_draft(_nodes("hybrid")).text).intent
    assert all(p.match.hostname is None for p in hybrid.spec.pools)
    hetero = _validated(_draft(_nodes("heterogeneous")).text).intent
    assert all(p.match.hostname is None for p in hetero.spec.pools)
    nodes = _nodes("single-pool")
    odd = copy.deepcopy(nodes[0])
    odd["metadata"]["name"] = "l40s-spare"
    odd["metadata"]["labels"].update({"nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.sharing-strategy": "mps"})
    for n in (*nodes, odd):
        n["metadata"]["labels"].pop("gpuconf.dev/pool", None)
    pools = {p.name: p.match.hostname for p in _validated(_draft(nodes + [odd]).text).intent.spec.pools}
    assert pools == {"l40s-exclusive": "^l40s-0", "l40s-mps-x2-gpu": "^l40s-spare"}  # ^l40s- would take in l40s-spare


def test_the_clusters_driver_is_what_nodes_without_their_own_nvidiadriver_run():
    """Only batch-h100 has an NVIDIADriver of its own (595.91.07, 8 nodes); the 5 nodes of the chart's default
    NVIDIADriver run 580.173.02: that is the cluster's version, though fewer nodes run it."""
    nodes = _nodes("hybrid")
    for n in nodes:
        labels = n["metadata"]["labels"]
        if labels.get("gpuconf.dev/pool") in ("new-h200", "viz-l40s"):
            labels["nvidia.com/gpu-operator.driver.owner"] = "default"
    draft = _draft(nodes)
    intent = _validated(draft.text).intent
    pools = {p.name: p for p in intent.spec.pools}
    assert intent.spec.driver.version == "580.173.02"
    assert pools["batch-h100"].driver.version == "595.91.07"
    assert pools["new-h200"].driver is None and pools["viz-l40s"].driver is None
    assert "the version most managed GPU nodes run without a pool's own NVIDIADriver" in draft.text


def test_images_of_another_shape_are_ignored():
    """The audit never reads status.images, so the reader does not check them: the importer takes only what has the
    shape of an image reference."""
    nodes = _nodes("single-pool")
    nodes[0]["status"]["images"] = [{"names": "nvcr.io/nvidia/gpu-operator:v26.3.3"}, 7, {"names": [1, None]}]
    nodes[1]["status"]["images"] = {"names": []}
    draft = _draft(nodes)
    assert "chartVersion: v26.3.3  # the gpu-operator image" in draft.text  # from the third node
    _validated(draft.text)


def test_a_single_strategy_mig_layout_comes_back_from_the_config_keys_hash():
    """Under the single strategy GFD shows 32 MIG devices per node and nothing per GPU: 4 slices on 8 GPUs and 8 on 4
    look alike (and 7 per GPU, the all-1g.18gb guess, does not divide 32). The nodes' nvidia.com/mig.config key
    decides: only 4 per GPU hashes to it."""
    from gpuconf.cluster.audit import audit

    plan = NL.plan_of(NL.SINGLE_MIG)
    nodes = NL.clean_nodes(plan)
    draft = _draft(nodes, "mig-lab")
    result = _validated(draft.text)
    pool, = result.intent.spec.pools
    profile = result.intent.spec.sharing_profiles[pool.sharing]
    assert (pool.sharing, pool.gpus_per_node, dict(profile.mig.layout)) == ("quarter", 8, {"1g.18gb": 4})
    assert "the layout (4 x 1g.18gb per GPU) is the one the nodes' nvidia.com/mig.config key was made from" in draft.text
    mine = NL.plan_of(draft.text, "draft.yaml")
    assert audit(mine, nodes, "t").findings == []


def test_an_unprefixed_taint_selects_the_pool_by_its_gfd_product(run, tmp_path):
    nodes = _nodes("single-pool")
    for n in nodes:
        n["metadata"]["labels"].pop("gpuconf.dev/pool", None)
        n["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    draft = _draft(nodes)
    intent = _validated(draft.text).intent
    (pool,) = intent.spec.pools
    product = nodes[0]["metadata"]["labels"]["nvidia.com/gpu.product"]
    assert pool.match.node_labels == {"nvidia.com/gpu.product": product} and not pool.match.pci_device
    assert [(t.key, t.value, t.effect) for t in pool.taints] == [("dedicated", "gpu", "NoSchedule")]
    assert "the taint key(s) dedicated have no prefix, which NFD cannot apply" in draft.text
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": nodes}))
    assert run("import", "--nodes", str(path)).exit_code == 0


def test_a_draft_that_does_not_validate_exits_1(run, tmp_path, monkeypatch):
    from gpuconf.cluster import importer
    from gpuconf.findings import Finding

    real = importer.Importer.draft

    def broken(self):
        draft = real(self)
        draft.findings.append(Finding("<draft>", 1, 1, "error", "GC303", "spec.pools", "pools overlap"))
        return draft

    monkeypatch.setattr(importer.Importer, "draft", broken)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": _nodes("single-pool")}))
    result = run("import", "--nodes", str(path))
    assert result.exit_code == 1
    assert "the draft does NOT validate (1 errors: a gpuconf bug, please report)" in result.stderr


@pytest.mark.parametrize("labels, problem", [
    ({"team": "gpu nodes"}, "metadata.labels['team'] value 'gpu nodes' is not a label value an API server accepts"),
    ({"-bad": "x"}, "metadata.labels key '-bad' is not a label key an API server accepts"),
    ({"team": "x" * 64}, "is not a label value an API server accepts"),
])
def test_labels_an_api_server_refuses_are_an_input_error(run, tmp_path, labels, problem):
    nodes = _nodes("single-pool")
    nodes[0]["metadata"]["labels"].update(labels)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": nodes}))
    result = run("import", "--nodes", str(path))
    assert result.exit_code == 2 and problem in result.stderr


def _aks_node(name: str, pool: str, spot: bool) -> dict:
    """An AKS T4 node as `kubectl get nodes -o json` shows it: AKS's labels, GFD's, NFD's; AKS's Spot taint."""
    labels = {"kubernetes.azure.com/agentpool": pool, "kubernetes.azure.com/cluster": "MC_rg-gpu_aks-research_westeurope",
              "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "Standard_NC4as_T4_v3",
              "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.present": "true",
              "feature.node.kubernetes.io/pci-10de.present": "true"}
    taints = []
    if spot:
        labels["kubernetes.azure.com/scalesetpriority"] = "spot"
        taints.append({"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"},
                       "nodeInfo": {"kubeletVersion": "v1.32.4", "osImage": "Ubuntu 22.04.5 LTS",
                                    "containerRuntimeVersion": "containerd://1.7.27"}}}


def test_an_aks_spot_pool_is_drafted_as_a_spot_pool_with_the_taint_aks_gives_it():
    """The nodes of an AKS Spot node pool carry AKS's Spot taint: the draft lists it (so the operands tolerate it,
    GC388) and its match names the Spot label, so the pool's node-pool script recreates Spot VMs; a regular pool
    beside it gets neither."""
    nodes = [_aks_node(f"aks-t4spot-26431-vmss00000{i}", "t4spot", True) for i in range(2)]
    nodes += [_aks_node(f"aks-t4reg-26431-vmss00000{i}", "t4reg", False) for i in range(3)]
    intent = _validated(_draft(nodes).text).intent
    pools = {p.name: p for p in intent.spec.pools}
    assert sorted(pools) == ["t4reg", "t4spot"]
    assert pools["t4spot"].match.node_labels == {"kubernetes.azure.com/agentpool": "t4spot",
                                                 "kubernetes.azure.com/scalesetpriority": "spot"}
    assert [(t.key, t.value, t.effect) for t in pools["t4spot"].taints] == [
        ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")]
    assert pools["t4reg"].match.node_labels == {"kubernetes.azure.com/agentpool": "t4reg"}
    assert pools["t4reg"].taints == []

"""The catalogue against a real H200 node (tests/fixtures/h200-real/: GFD v0.20.0 labels, NVML's MIG table)."""

from __future__ import annotations

import pytest
import yaml

import h200_real as H


def _h200():
    from gpuconf import catalog

    return catalog.gpu_model("H200")


def test_the_h200_is_named_and_sized_as_the_gpu_reports():
    """Name as NVML says it, memory as GFD's gpu.memory (MiB) in GiB, product label as GFD writes it."""
    labels = H.gfd_runs()["none"]["labels"]
    model = _h200()
    assert model.name == "NVIDIA H200"
    assert labels["nvidia.com/gpu.memory"] == "143771"
    assert model.memory_gib == round(143771 / 1024, 1) == 140.4
    assert model.product_labels == (labels["nvidia.com/gpu.product"],) == ("NVIDIA-H200",)


def test_the_h200_mig_profiles_are_nvmls():
    model = _h200()
    table = H.mig_profiles()
    assert sorted(table) == sorted(model.mig_profiles)
    for name, hw in table.items():
        profile = model.mig_profiles[name]
        assert (profile.max_instances, list(profile.starts)) == (hw["instanceCount"], [s for s, _ in hw["placements"]])
        assert {profile.size} == {size for _, size in hw["placements"]}


def test_the_whole_gpu_instance_holds_the_optical_flow_accelerator_too():
    from gpuconf import catalog

    assert sorted(n for n, p in H.mig_profiles().items() if p["ofaCount"]) == ["1g.18gb+me", "7g.141gb"]
    assert "the whole-GPU instance holds" in catalog.MEDIA_RULE


@pytest.mark.parametrize("run", sorted(H.gfd_runs()))
def test_gfd_product_labels_follow_gfds_naming_on_the_real_node(run):
    """Each GFD run of the real node: the product label gpuconf derives for that sharing is the one GFD wrote."""
    from gpuconf import catalog

    seen = H.gfd_runs()[run]
    sharing = (yaml.safe_load(seen["config"]) or {}).get("sharing", {}) if seen["config"] else {}
    kind = next(iter(sharing), None)
    replicas = sharing[kind]["resources"][0]["replicas"] if kind else 1
    renamed = bool(sharing[kind].get("renameByDefault")) if kind else False
    assert int(seen["labels"]["nvidia.com/gpu.replicas"]) == replicas
    assert catalog.gfd_product(_h200().product_labels[0], replicas, renamed) == seen["labels"]["nvidia.com/gpu.product"]


def test_every_models_product_labels_by_gfds_naming():
    from gpuconf import catalog

    assert catalog.gfd_products(_h200()) == [
        ("NVIDIA-H200", "whole GPUs, or shared under the renamed resource"),
        ("NVIDIA-H200-SHARED", "time-slicing or MPS without renameByDefault"),
        ("NVIDIA-H200-MIG-<profile>", "the single MIG strategy")]
    assert catalog.gfd_product("NVIDIA-H200", mig_profile="1g.18gb") == "NVIDIA-H200-MIG-1g.18gb"
    for model in catalog.gpu_models().values():
        labels = [label for label, _ in catalog.gfd_products(model)]
        assert labels[:2] == [*model.product_labels[:1], *(f"{p}-SHARED" for p in model.product_labels[:1])]


def test_catalog_shows_the_h200_as_measured(run):
    result = run("catalog", "--gpu", "H200")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[:4] == [
        "H200: NVIDIA H200",
        "  PCI device ids: 0x233510DE",
        "  memory: 140.4 GiB, compute capability 9.0, family hopper",
        "  GFD product labels: NVIDIA-H200 (whole GPUs, or shared under the renamed resource); NVIDIA-H200-SHARED "
        "(time-slicing or MPS without renameByDefault); NVIDIA-H200-MIG-<profile> (the single MIG strategy)"]


def test_preset_all_enabled_is_explained(tmp_path):
    """mig-manager generates all-enabled (MIG on, no instances): the hint says how to write that."""
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: h200
spec:
  cluster:
    kubernetesVersion: "1.33"
  operator:
    chartVersion: v26.7.0
  sharingProfiles:
    mig-on:
      mig:
        preset: all-enabled
  pools:
    - name: a
      gpu: H200
      gpusPerNode: 8
      nodes: 2
      sharing: mig-on
      match:
        pciDevice: true
"""
    findings = [f.text() for f in validate_document(load_text(text, "intent.yaml")).findings]
    assert findings == [
        "intent.yaml:13:17: error GC305 spec.sharingProfiles.mig-on.mig.preset: preset 'all-enabled' does not exist "
        "on H200 (used by pool 'a') (hint: all-enabled is MIG mode on with no instances: write layout: {} for that, "
        "or a preset with instances such as all-balanced)"]
    written = text.replace("preset: all-enabled", "layout: {}")
    assert validate_document(load_text(written, "intent.yaml")).findings == []


REFERENCE = H.HERE.parents[2].parent / "shared" / "reference" / "gpu" / "h200-real"


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is absent (a user's clone)")
@pytest.mark.parametrize("name", ["gfd-labels.txt", "gfd-strategies.txt", "gfd-sharing.txt", "mig.json"])
def test_the_fixtures_are_the_reference_files_verbatim(name):
    assert (H.HERE / name).read_bytes() == (REFERENCE / name).read_bytes()


SMI = "    Product Name                          : NVIDIA H200\n    FB Memory Usage\n        Total        : 143771 MiB\n"


@pytest.mark.parametrize("old, new, error", [
    (None, None, None),
    ("NVIDIA H200\n", "NVIDIA H200 141GB\n", "name"),
    ("143771 MiB", "144384 MiB", "memory"),
])
def test_the_derivation_checks_the_h200_against_the_real_node(old, new, error):
    import importlib.util
    import json
    import sys

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("derive_reference", ROOT / "tools" / "derive_reference.py")
    derive = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = derive
    spec.loader.exec_module(derive)
    models = json.loads((ROOT / "profiles" / "gpus.json").read_text(encoding="utf-8"))["models"]
    gfd = (H.HERE / "gfd-labels.txt").read_text()
    mig = json.loads((H.HERE / "mig.json").read_text())
    smi = SMI if old is None else SMI.replace(old, new)
    if error is None:
        derive.check_h200_real(smi, gfd, mig, models)
    else:
        with pytest.raises(derive.DeriveError, match=error):
            derive.check_h200_real(smi, gfd, mig, models)

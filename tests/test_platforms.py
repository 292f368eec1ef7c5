"""Platforms and GPUs: what each distribution renders, checked on the output the way its consumer reads it."""

from __future__ import annotations

import textwrap

import pytest
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

"""`gpuconf images --format cyclonedx`: a CycloneDX 1.6 BOM of the images (issue 31, item 3), checked against the
1.6 schema that cyclonedx-python-lib ships (its JsonStrictValidator, measured in shared/reference/provenance)."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT

AIRGAPPED = ROOT / "examples" / "airgapped.yaml"


def _valid(text: str) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    assert error is None, str(error)


def test_the_airgapped_example_bom_validates_against_cyclonedx_1_6(run):
    result = run("images", str(AIRGAPPED), "--format", "cyclonedx", "--driver-os", "rhel9.6")
    assert result.exit_code == 0, result.stderr
    _valid(result.stdout)
    bom = json.loads(result.stdout)
    assert (bom["bomFormat"], bom["specVersion"]) == ("CycloneDX", "1.6")
    listed = run("images", str(AIRGAPPED), "--driver-os", "rhel9.6").stdout.splitlines()
    refs = [next(p["value"] for p in c["properties"] if p["name"] == "gpuconf:image") for c in bom["components"]]
    assert sorted(refs) == listed  # every image the text list names, once
    assert {c["type"] for c in bom["components"]} == {"container"}
    from packageurl import PackageURL

    driver = next(c for c in bom["components"] if c["name"] == "driver")
    assert driver["bom-ref"] == "registry.enclave.internal/nvidia/driver:595.91.07-rhel9.6"
    assert driver["group"] == "registry.enclave.internal/nvidia" and driver["version"] == "595.91.07-rhel9.6"
    purl = PackageURL.from_string(driver["purl"])
    assert (purl.type, purl.namespace, purl.name, purl.version) == ("oci", None, "driver", None)
    assert purl.qualifiers == {"repository_url": "registry.enclave.internal/nvidia/driver", "tag": "595.91.07-rhel9.6"}
    props = {p["name"]: p["value"] for p in driver["properties"]}
    assert props == {"gpuconf:image": driver["bom-ref"], "gpuconf:source": "nvcr.io/nvidia/driver:595.91.07-rhel9.6",
                     "gpuconf:cluster": "secure-enclave"}
    assert "timestamp" not in bom["metadata"]
    assert bom["metadata"]["tools"]["components"][0]["name"] == "gpuconf"
    again = run("images", str(AIRGAPPED), "--format", "cyclonedx", "--driver-os", "rhel9.6").stdout
    assert again == result.stdout  # same intent, same bytes (the serial number comes from the content)


def test_without_driver_os_the_bom_says_what_it_could_not_list(run):
    result = run("images", str(AIRGAPPED), "--format", "cyclonedx")
    assert result.exit_code == 0
    _valid(result.stdout)
    bom = json.loads(result.stdout)
    assert not [c for c in bom["components"] if c["name"] == "driver"]
    [note] = [p["value"] for p in bom["metadata"]["properties"] if p["name"] == "gpuconf:note"]
    assert note.startswith("driver images are tagged <version>-<OS tag of the node>")
    assert "gpuconf: note: driver images are tagged" in result.stderr


def test_a_pinned_image_carries_its_digest_as_purl_version_and_hash():
    from gpuconf.output.sbom import bom_text, split_reference

    digest = "sha256:" + "ab" * 32
    ref = f"mirror.example/nvidia/k8s-device-plugin:v0.20.0@{digest}"
    assert split_reference(ref) == ("mirror.example/nvidia/k8s-device-plugin", "v0.20.0", digest)
    assert split_reference("host:5000/a/b") == ("host:5000/a/b", None, None)
    text = bom_text([(ref, ref, ["lab"])], [])
    _valid(text)
    [component] = json.loads(text)["components"]
    assert component["purl"] == f"pkg:oci/k8s-device-plugin@{digest}?repository_url=mirror.example/nvidia/" \
                                "k8s-device-plugin&tag=v0.20.0"
    assert component["hashes"] == [{"alg": "SHA-256", "content": "ab" * 32}]


def test_cyclonedx_goes_with_neither_pairs_nor_oc_mirror_and_needs_its_library(run, monkeypatch):
    result = run("images", str(AIRGAPPED), "--format", "cyclonedx", "--pairs")
    assert result.exit_code == 2
    assert "--format cyclonedx lists every image with its source: not with --pairs or --oc-mirror" in result.stderr
    for name in [m for m in sys.modules if m == "cyclonedx" or m.startswith("cyclonedx.")] + ["cyclonedx"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if gpuconf[sbom] were not installed
    result = run("images", str(AIRGAPPED), "--format", "cyclonedx")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "gpuconf: --format cyclonedx needs gpuconf's sbom extra: pip install 'gpuconf[sbom]' " \
                            "(cyclonedx-python-lib)\n"


def test_a_fleet_bom_names_the_clusters_of_each_image(run):
    fleet = str(ROOT / "examples" / "fleet" / "fleet.yaml")
    result = run("images", fleet, "--format", "cyclonedx")
    assert result.exit_code == 0
    _valid(result.stdout)
    listed = {i["image"]: i["clusters"] for i in json.loads(run("images", fleet, "--format", "json").stdout)["images"]}
    found = {c["bom-ref"]: sorted(p["value"] for p in c["properties"] if p["name"] == "gpuconf:cluster")
             for c in json.loads(result.stdout)["components"]}
    assert found == listed
    assert {c for clusters in found.values() for c in clusters} == {"edge-lab", "eu-prod", "us-prod"}

"""Pools of Grace systems are arm64 nodes (issue 44, item 5): the driver image and the operand images they pull must
exist for arm64 (GC480, GC481), and `gpuconf images` says which architectures each image is built for.

The facts are profiles/arch.json (tools/derive_arch.py, from NVIDIA/gpu-driver-container's release jobs and each
operand project's build files); the cases below use real entries of it: driver 580.178.04 was never published for
ubuntu26.04 (.common-ci.yml excludes it), and 550.54.15-centos7 was built for amd64 only (multi-arch.mk
`build-centos7%: DOCKER_BUILD_PLATFORM_OPTIONS = --platform=linux/amd64`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT

NVL72 = (ROOT / "examples" / "nvl72.yaml").read_text(encoding="utf-8")
OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
OS_VERSION = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
TRAY = """      gpusPerNode: 4            # a compute tray: two Grace CPUs, four Blackwell GPUs
      nodes: 18
      match:
        pciDevice: true
"""
B200 = """      gpusPerNode: 8
      nodes: 4
      match:
        pciDevice: true
"""


def _intent(tmp_path: Path, driver: str = "595.91.07", os: tuple[str, str] | None = None, on: str = TRAY,
            overrides: str = "") -> Path:
    """examples/nvl72.yaml with another driver, NFD OS labels on one pool (the GB200 trays by default), overrides."""
    text = NVL72.replace('version: "595.91.07"', f'version: "{driver}"')
    assert text != NVL72 or driver == "595.91.07"
    if os is not None:
        labels = f'        nodeLabels:\n          {OS_ID}: {os[0]}\n          {OS_VERSION}: "{os[1]}"\n'
        assert on in text
        text = text.replace(on, on + labels)
    if overrides:
        text = text.replace("  delivery:\n", f"  overrides:\n{overrides}  delivery:\n")
    path = tmp_path / "intent.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _at(path: Path, line: str) -> str:
    """`LINE:COL` of the value on the first line of the file that reads `line` (stripped, comments aside), as findings
    position a scalar: the example this file edits may move, the diagnostics' text may not."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text.split("#")[0].strip() == line:
            key = line.split(": ", 1)[0]
            return f"{number}:{text.index(key) + len(key) + 3}"
    raise AssertionError(f"{line!r} not in {path}")


def _codes(run, path: Path, *codes: str) -> list[str]:
    result = run("validate", str(path), "--format", "json")
    findings = json.loads(result.stdout)
    return [f"{f['line']}:{f['column']}: {f['severity']} {f['code']} {f['path']}: {f['message']} (hint: {f['hint']})"
            for f in findings if f["code"] in codes]


def test_the_grace_models_are_the_catalogue_s_gb_and_gh_parts():
    from gpuconf import arch, catalog

    grace = sorted(m for m in catalog.gpu_models() if arch.grace(m))
    assert grace == ["GB200", "GB300", "GH200", "GH200-144GB"]
    assert not arch.grace("B200") and not arch.grace("H100-80GB")


def test_a_driver_never_published_for_the_pools_os_is_an_error(run, tmp_path):
    path = _intent(tmp_path, "580.178.04", ("ubuntu", "26.04"))
    at = _at(path, 'version: "580.178.04"')
    assert _codes(run, path, "GC480", "GC481") == [
        f"{at}: error GC480 spec.driver.version: pool nvl72 runs GB200 (Grace: arm64 nodes) on ubuntu26.04, but driver "
        "580.178.04 has no image for ubuntu26.04 at all (hint: pin driver 610.57.04 (it has an arm64 image for "
        "ubuntu26.04))"]


def test_a_driver_built_for_amd64_only_on_the_pools_os_is_an_error(run, tmp_path):
    path = _intent(tmp_path, "550.54.15", ("centos", "7"))
    at = _at(path, 'version: "550.54.15"')
    assert _codes(run, path, "GC480") == [
        f"{at}: error GC480 spec.driver.version: pool nvl72 runs GB200 (Grace: arm64 nodes) on centos7, but the driver "
        "image 550.54.15-centos7 is built for amd64 only (NVIDIA/gpu-driver-container@98948f68b6aa (2024-03-18): "
        ".nvidia-ci.yml job release:ngc-centos7, multi-arch.mk) (hint: run an OS the driver has an arm64 image for: "
        "ubuntu22.04, ubuntu20.04, rhel9.3, rhel9.2, rhel9.1, rhel9.0 and 11 more)"]


@pytest.mark.parametrize("driver, os", [("595.91.07", None), ("580.178.04", ("ubuntu", "24.04")),
                                        ("595.91.07", ("ubuntu", "26.04")), ("595.91.07", ("rhel", "9.6"))])
def test_a_driver_with_an_arm64_image_for_the_os_is_no_finding(run, tmp_path, driver, os):
    assert _codes(run, _intent(tmp_path, driver, os), "GC480", "GC481") == []


def test_an_x86_pool_is_never_flagged(run, tmp_path):
    """The amd64-only driver of the error above, and an image override gpuconf has no record of, on the B200 pool of
    an intent without Grace pools: nothing to say."""
    text = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8")
    text = text.replace("        pciDevice: true\n", f'        pciDevice: true\n        nodeLabels:\n'
                        f'          {OS_ID}: centos\n          {OS_VERSION}: "7"\n') + \
        '  driver:\n    version: "550.54.15"\n  overrides:\n    - path: devicePlugin.version\n      value: v0.20.1\n' \
        '      why: a patched build\n'
    path = tmp_path / "x86.yaml"
    path.write_text(text, encoding="utf-8")
    assert _codes(run, path, "GC480", "GC481") == []
    # the same driver and labels on the x86 pool of the NVL72 intent: the GB200 pool alone is checked, and it has
    # no labels, so 550.54.15 counts for the OSes it has arm64 images for
    assert _codes(run, _intent(tmp_path, "550.54.15", ("centos", "7"), on=B200), "GC480") == []


def test_a_driver_gpuconf_has_no_record_of_is_a_warning(run, tmp_path):
    path = _intent(tmp_path, "580.178.05")
    at = _at(path, 'version: "580.178.05"')
    assert _codes(run, path, "GC480") == [
        f"{at}: warning GC480 spec.driver.version: pool nvl72 runs GB200 (Grace: arm64 nodes), but gpuconf has no "
        "record of driver 580.178.05's images: NVIDIA/gpu-driver-container's NGC release jobs since 2024 do not list "
        "it, so its arm64 build is not established (hint: pin a listed driver with an arm64 image, e.g. 580.178.04)"]


def test_the_target_of_a_rollout_is_checked_for_the_pools_its_waves_move(run, tmp_path):
    """595.91.07 has an arm64 image for Ubuntu 26.04; the roll-out's 580.178.04, which wave 1 (the GB200 trays)
    moves to, has none."""
    path = _intent(tmp_path, "595.91.07", ("ubuntu", "26.04"))
    rollout = '    upgrade:\n      waves: [[nvl72]]\n      rollout:\n        version: "580.178.04"\n        wave: 1\n'
    text = path.read_text(encoding="utf-8").replace('    version: "595.91.07"        # ComputeDomains need 570.158.01 '
                                                    'or later\n', '    version: "595.91.07"\n' + rollout)
    path.write_text(text, encoding="utf-8")
    at = _at(path, 'version: "580.178.04"')
    assert _codes(run, path, "GC480") == [
        f"{at}: error GC480 spec.driver.upgrade.rollout.version: pool nvl72 runs GB200 (Grace: arm64 nodes) on "
        "ubuntu26.04, but driver 580.178.04 has no image for ubuntu26.04 at all (hint: pin driver 610.57.04 (it has an "
        "arm64 image for ubuntu26.04))"]
    # wave 0: nothing moves yet, and the pool's current driver fits
    path.write_text(text.replace("        wave: 1\n", "        wave: 0\n"), encoding="utf-8")
    assert _codes(run, path, "GC480") == []


def test_a_host_driver_is_not_checked(run, tmp_path):
    path = _intent(tmp_path, "580.178.04", ("ubuntu", "26.04"))
    path.write_text(path.read_text(encoding="utf-8").replace('    version: "580.178.04"', "    preinstalled: true"),
                    encoding="utf-8")
    assert _codes(run, path, "GC480") == []


OVERRIDE = "    - path: devicePlugin.version\n      value: {version}\n      why: a patched build\n"


def test_an_override_image_without_a_build_record_is_a_warning(run, tmp_path):
    path = _intent(tmp_path, overrides=OVERRIDE.format(version="v0.20.1"))
    at = _at(path, "value: v0.20.1")
    assert _codes(run, path, "GC481") == [
        f"{at}: warning GC481 spec.overrides[0].value: nvcr.io/nvidia/k8s-device-plugin:v0.20.1 runs on every GPU "
        "node, and pool(s) nvl72 are arm64 (Grace): gpuconf has no build record of k8s-device-plugin v0.20.1, so it "
        "cannot vouch that an arm64 variant exists (hint: check that `docker manifest inspect "
        "nvcr.io/nvidia/k8s-device-plugin:v0.20.1` lists linux/arm64, or keep the chart's default)"]
    # an older release the project built for both architectures (its v0.18.1 tag's build files) is vouched for
    assert _codes(run, _intent(tmp_path, overrides=OVERRIDE.format(version="v0.18.1")), "GC481") == []


def test_an_image_built_for_amd64_only_is_an_error(run, tmp_path, monkeypatch):
    """No operand release in the facts is amd64-only today; an entry that says so (as a future derivation could) is
    an error at the override that picks it."""
    from gpuconf import arch

    real = arch.facts()
    facts = {**real, "operandImages": {**real["operandImages"], "k8s-device-plugin": {
        **real["operandImages"]["k8s-device-plugin"],
        "v0.20.1": {"architectures": ["amd64"], "source": "a build record for this test"}}}}
    monkeypatch.setattr(arch, "facts", lambda: facts)
    path = _intent(tmp_path, overrides=OVERRIDE.format(version="v0.20.1"))
    at = _at(path, "value: v0.20.1")
    assert _codes(run, path, "GC481") == [
        f"{at}: error GC481 spec.overrides[0].value: nvcr.io/nvidia/k8s-device-plugin:v0.20.1 runs on every GPU node, "
        "and pool(s) nvl72 are arm64 (Grace), but it is built for amd64 only (a build record for this test) (hint: "
        "use a version built for arm64 too, e.g. the chart's default v0.20.0)"]


def test_images_lists_the_architectures_of_each_image(run):
    result = run("images", "examples/nvl72.yaml", "--format", "json", "--driver-os", "ubuntu24.04")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    arches = {item["image"]: item["architectures"] for item in doc["images"]}
    assert arches["nvcr.io/nvidia/k8s-device-plugin:v0.20.0"] == ["amd64", "arm64"]
    assert arches["nvcr.io/nvidia/driver:595.91.07-ubuntu24.04"] == ["amd64", "arm64"]
    assert arches["registry.k8s.io/nfd/node-feature-discovery:v0.19.0"] == ["amd64", "arm64", "ppc64le", "s390x"]
    # the chart's DCGM Exporter is newer than the mirrored project's tags: no record, so null
    assert arches["nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"] is None
    assert [ref for ref, found in arches.items() if found is None] == [
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"]
    assert doc["notes"] == [
        "pool(s) nvl72 are arm64 (Grace): gpuconf has no build record of "
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless (architectures null in --format json); check that "
        "each lists linux/arm64"]
    text = run("images", "examples/nvl72.yaml", "--driver-os", "ubuntu24.04")
    assert text.stdout.splitlines() == sorted(arches)
    # an intent without Grace pools gets no such note
    assert not any("arm64" in n for n in json.loads(run("images", "examples/single-pool.yaml", "--format",
                                                          "json").stdout)["notes"])


def test_a_mirror_for_grace_pools_needs_every_architecture(run, tmp_path):
    path = tmp_path / "mirrored.yaml"
    path.write_text(NVL72.replace("    namespace: gpu-operator\n", "    namespace: gpu-operator\n"
                                  "    registry: registry.corp.example/nvidia\n", 1), encoding="utf-8")
    result = run("images", str(path), "--pairs")
    assert result.exit_code == 0, result.stderr
    assert "registry.corp.example/nvidia/k8s-device-plugin:v0.20.0" in result.stdout
    assert "gpuconf: note: pool(s) nvl72 are arm64 (Grace): the mirror needs every architecture of each image " \
        "(skopeo copy --all; without it skopeo copies the image of the machine it runs on only)" in result.stderr
    # the architectures of a mirrored image are its source's
    doc = json.loads(run("images", str(path), "--format", "json").stdout)
    assert {i["image"]: i["architectures"] for i in doc["images"]}[
        "registry.corp.example/nvidia/k8s-device-plugin:v0.20.0"] == ["amd64", "arm64"]


def test_images_pinned_by_digest_are_not_vouched_for(run, tmp_path):
    """A lock pins each image by one digest, which may name a single platform's manifest: gpuconf says so for Grace
    pools instead of taking the tag's architectures."""
    path = tmp_path / "intent.yaml"
    path.write_text(NVL72, encoding="utf-8")
    refs = run("images", str(path), "--driver-os", "ubuntu24.04").stdout.splitlines()
    (tmp_path / "images.lock.yaml").write_text("".join(f"{ref}: sha256:{'a' * 64}\n" for ref in refs),
                                               encoding="utf-8")
    path.write_text(NVL72.replace("    namespace: gpu-operator\n", "    namespace: gpu-operator\n"
                                  "    imageLock: images.lock.yaml\n", 1), encoding="utf-8")
    doc = json.loads(run("images", str(path), "--format", "json").stdout)
    pinned = [i for i in doc["images"] if "@sha256:" in i["image"]]
    assert len(pinned) == len(refs)  # the driver's too: its one OS variant's digest
    assert all(i["architectures"] is None for i in pinned)
    assert f"pool(s) nvl72 are arm64 (Grace): {len(pinned)} image(s) are pinned by digest, and a digest names one " \
        "manifest, a multi-arch index or a single platform's, which only the registry tells: check that each is an " \
        "index listing linux/arm64 (skopeo inspect --raw)" in doc["notes"]


def test_a_reference_gpuconf_cannot_vouch_for_has_no_architectures():
    from gpuconf import arch

    assert arch.of_reference("nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:" + "0" * 64) is None
    assert arch.of_reference("nvcr.io/nvidia/driver:595.91.07") is None  # no OS tag: no image of that name
    assert arch.of_reference("mirror.local:5000/nvidia/driver:550.54.15-centos7")["architectures"] == ["amd64"]


def test_os_tags_follow_the_operator_s_rule():
    """Ubuntu keeps its VERSION_ID; RHEL, Rocky and Oracle Linux use the major version from chart v26.7.0 on
    (gpu-operator v26.7.0 getOSTag); before that gpuconf does not claim to know."""
    from gpuconf import arch
    from gpuconf.intent.model import Match

    class Pool:
        def __init__(self, os_id: str, version: str) -> None:
            self.match = Match(nodeLabels={OS_ID: os_id, OS_VERSION: version})

    assert arch.os_tag(Pool("ubuntu", "24.04"), "v26.3.3") == "ubuntu24.04"
    assert arch.os_tag(Pool("rhel", "9.6"), "v26.7.0") == "rhel9"
    assert arch.os_tag(Pool("rhel", "9.6"), "v26.3.3") is None

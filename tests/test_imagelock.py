"""spec.operator.imageLock: every image pinned by digest in the form the operator accepts, validate refusing an
incomplete lock, exit 2 for a lock that is not a map of digests (issue 31, item 4).

The forms (NVIDIA/gpu-operator v26.7.0, shared/reference/provenance/facts.md §7): the chart joins version with `:`
(operator, validator and driver-manager env, NFD's image.tag), so a pin is `<tag>@sha256:<hex>`, never a bare
`sha256:`; a driver's `-<osTag>` is not appended to a path holding `sha256:`, so its pin is
`<version>-<osTag>@sha256:<hex>`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _digest(ref: str) -> str:
    return "sha256:" + hashlib.sha256(ref.encode()).hexdigest()


def _locked(run, example: Path, folder: Path, os_tag: str = "ubuntu24.04", drop: str | None = None) -> Path:
    """A copy of example with an image lock for every image `gpuconf images` lists (made-up digests), less drop."""
    refs = run("images", str(example), "--driver-os", os_tag).stdout.split()
    lock = {ref: _digest(ref) for ref in refs if ref != drop}
    (folder / "images.lock.yaml").write_text(yaml.safe_dump(lock), encoding="utf-8")
    text = example.read_text(encoding="utf-8")
    text = re.sub(r"(\n  operator:\n(?:    .*\n)*?    chartVersion: .*\n)", r"\1    imageLock: images.lock.yaml\n", text)
    intent = folder / example.name
    intent.write_text(text, encoding="utf-8")
    return intent


def _images_in(folder: Path) -> list[str]:
    """Every container image of the rendered manifests (an NVIDIADriver's `image:` is a name, without a `/`)."""
    return sorted({m for p in folder.rglob("*.yaml") for m in re.findall(r"^\s+image: (\S+/\S+)$", p.read_text(),
                                                                          re.M)})


@pytest.mark.parametrize("example", ["airgapped.yaml", "hybrid.yaml"])
def test_with_a_lock_every_image_carries_its_digest(run, tmp_path, monkeypatch, example):
    intent = _locked(run, ROOT / "examples" / example, tmp_path)
    lock = yaml.safe_load((tmp_path / "images.lock.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    result = run("render", intent.name, "-o", "out")
    assert result.exit_code == 0, result.stdout + result.stderr
    pulled = run("images", intent.name).stdout.split()
    assert pulled == sorted(f"{ref}@{digest}" for ref, digest in lock.items())  # every image pinned, none twice
    folder = next((tmp_path / "out").iterdir())
    assert _images_in(folder) and all(DIGEST.search(ref) for ref in _images_in(folder))
    values = yaml.safe_load((folder / "values.yaml").read_text())
    versions = [(path, value) for path, value in _leaves(values) if path[-1] in ("version", "tag")]
    assert versions and not [v for _, v in versions if str(v).startswith("sha256:")]  # a bare digest breaks `:` joins
    assert values["operator"]["version"] == f"v26.7.0@{lock[next(r for r in lock if '/gpu-operator:' in r)]}"
    nfd = next(r for r in lock if "node-feature-discovery" in r)
    assert values["node-feature-discovery"]["image"]["tag"] == f"v0.19.0@{lock[nfd]}"
    drivers = [r for r in lock if "/driver:" in r]
    for ref in drivers:
        version = ref.rsplit(":", 1)[1]
        assert f"{version}@{lock[ref]}" in [str(v) for _, v in versions] + _driver_specs(folder)
    assert run("images", intent.name, "--format", "cyclonedx").exit_code == 0


def _leaves(tree, path=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, (*path, key))
    else:
        yield path, tree


def _driver_specs(folder: Path) -> list[str]:
    path = folder / "manifests" / "nvidia-drivers.yaml"
    if not path.exists():
        return []
    return [str(doc["spec"]["version"]) for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_a_lock_missing_an_image_is_a_finding_and_nothing_is_written(run, tmp_path, monkeypatch):
    example = ROOT / "examples" / "airgapped.yaml"
    drop = "registry.enclave.internal/nvidia/k8s-device-plugin:v0.20.0"
    intent = _locked(run, example, tmp_path, "rhel9.6", drop=drop)
    monkeypatch.chdir(tmp_path)
    line = next(i for i, text in enumerate(intent.read_text().splitlines(), 1) if "imageLock" in text)
    result = run("validate", intent.name)
    assert result.exit_code == 1
    assert result.stdout == (
        f"airgapped.yaml:{line}:16: error GC450 spec.operator.imageLock: images.lock.yaml has no digest for {drop}, "
        f"which the render pulls (hint: add `{drop}: sha256:...` (skopeo inspect --format '{{{{.Digest}}}}' "
        f"docker://{drop}))\n")
    assert run("render", intent.name, "-o", "out").exit_code == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("lock, reason", [
    ("- a\n- b\n", "images.lock.yaml:1:1: the image lock cannot be read: top level must be a map of image references "
                  "to digests (REGISTRY/PATH:TAG: sha256:...), not a list"),
    ("x\n", "images.lock.yaml:1:1: the image lock cannot be read: top level must be a map of image references to "
            "digests (REGISTRY/PATH:TAG: sha256:...), not a string"),
    ("mirror.example/nvidia/gpu-operator:v26.7.0: sha256:abc\n",
     "images.lock.yaml:1:45: mirror.example/nvidia/gpu-operator:v26.7.0: 'sha256:abc' is not a digest (sha256: and 64 "
     "lower-case hex digits, as `skopeo inspect --format '{{.Digest}}'` prints it)"),
    ("mirror.example/nvidia/gpu-operator:v26.7.0:\n  digest: x\n",
     "images.lock.yaml:2:3: mirror.example/nvidia/gpu-operator:v26.7.0: a map is not a digest"),
    ("gpu-operator: sha256:" + "0" * 64 + "\n",
     "images.lock.yaml:1:1: 'gpu-operator' is not an image reference with a tag (REGISTRY/PATH:TAG, as `gpuconf "
     "images` prints it)"),
    (None, "images.lock.yaml: the image lock (spec.operator.imageLock) does not exist or is not a file"),
])
def test_a_lock_that_is_not_a_map_of_digests_is_exit_2(run, tmp_path, monkeypatch, lock, reason):
    shutil.copy(ROOT / "tests" / "cases" / "image-lock-incomplete" / "intent.yaml", tmp_path / "intent.yaml")
    if lock is not None:
        (tmp_path / "images.lock.yaml").write_text(lock, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for command in (("render", "intent.yaml", "-o", "out"), ("validate", "intent.yaml"), ("images", "intent.yaml")):
        result = run(*command)
        assert result.exit_code == 2, command
        assert result.stderr.startswith(f"gpuconf: {reason}"), result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_lock_path_is_relative_to_the_file_that_names_it(run, tmp_path, monkeypatch):
    case = ROOT / "tests" / "cases" / "image-lock-incomplete"
    shutil.copytree(case, tmp_path / "case")
    monkeypatch.chdir(tmp_path)
    result = run("validate", "case/intent.yaml")
    assert result.exit_code == 1
    assert "case/images.lock.yaml has no digest for mirror.example.internal/nvidia/k8s-device-plugin" in result.stdout

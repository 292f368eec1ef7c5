"""Every path an intent or a fleet names is read beside it and inside its repository (issue 45 item 3, issue 46
"Reads outside the repository"): the image lock is found from any working folder; an absolute path, a `..` out of
the repository or a symbolic link out of it is refused at the field that names it, and the file is never read, so
nothing of it reaches a message."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

#: What a file outside the repository holds: no message may show any of it.
SECRET = "hunter2-never-shown"
#: Why a path is refused (gpuconf/repository.py).
_REPOSITORY = "the repository (the git work tree that holds the file, else the file's own folder)"
ABSOLUTE = f"is an absolute path; paths are relative to the file that names them, inside {_REPOSITORY}"
DOTDOT = f"leaves {_REPOSITORY} through `..`"
LINK = f"is, or passes through, a symbolic link to a place outside {_REPOSITORY}"


def _repository(tmp_path: Path) -> Path:
    """tmp_path/repo, a git work tree (its .git folder is what marks it), and a file outside it."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "outside.yaml").write_text(f"{SECRET}: {SECRET}\nspec:\n  {SECRET}: 1\n", encoding="utf-8")
    return repo


def _with_lock(run, repo: Path, lock: str) -> Path:
    """examples/airgapped.yaml as repo/clusters/airgapped.yaml, naming lock as its imageLock, and a complete lock
    clusters/images.lock.yaml beside it (made-up digests)."""
    folder = repo / "clusters"
    folder.mkdir()
    refs = run("images", str(ROOT / "examples" / "airgapped.yaml"), "--driver-os", "rhel9.6").stdout.split()
    (folder / "images.lock.yaml").write_text(
        yaml.safe_dump({ref: "sha256:" + hashlib.sha256(ref.encode()).hexdigest() for ref in refs}), encoding="utf-8")
    text = (ROOT / "examples" / "airgapped.yaml").read_text(encoding="utf-8")
    text, n = re.subn(r"(\n    chartVersion: .*\n)", rf"\1    imageLock: {lock}\n", text, count=1)
    assert n == 1
    intent = folder / "airgapped.yaml"
    intent.write_text(text, encoding="utf-8")
    return intent


def test_render_from_the_repository_root_finds_the_lock_beside_the_intent(run, tmp_path, monkeypatch):
    """examples/airgapped.yaml has overrides: a rule planned it without its document and looked for the lock in the
    working folder."""
    repo = _repository(tmp_path)
    _with_lock(run, repo, "images.lock.yaml")
    for cwd, intent in ((repo, "clusters/airgapped.yaml"), (tmp_path, "repo/clusters/airgapped.yaml"),
                        (Path("/"), str(repo / "clusters" / "airgapped.yaml"))):
        monkeypatch.chdir(cwd)
        for command in (("validate", intent), ("images", intent),
                        ("render", intent, "-o", str(tmp_path / "out"))):
            result = run(*command)
            assert result.exit_code == 0, (cwd, command, result.stdout + result.stderr)
    values = (tmp_path / "out" / "secure-enclave" / "values.yaml").read_text(encoding="utf-8")
    assert "@sha256:" in values


@pytest.mark.parametrize("lock, why", [("{outside}", ABSOLUTE), ("../../outside.yaml", DOTDOT), ("link.yaml", LINK),
                                       ("linked/outside.yaml", LINK)])
def test_an_image_lock_outside_the_repository_is_refused_unread(run, tmp_path, monkeypatch, lock, why):
    repo = _repository(tmp_path)
    outside = tmp_path / "outside.yaml"
    lock = lock.format(outside=outside)
    intent = _with_lock(run, repo, lock)
    os.symlink(outside, repo / "clusters" / "link.yaml")
    os.symlink(tmp_path, repo / "clusters" / "linked")
    monkeypatch.chdir(repo)
    line = next(i for i, text in enumerate(intent.read_text().splitlines(), 1) if "imageLock:" in text)
    for command in (("validate", "clusters/airgapped.yaml"), ("images", "clusters/airgapped.yaml"),
                    ("render", "clusters/airgapped.yaml", "-o", "out")):
        result = run(*command)
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr.startswith(f"gpuconf: clusters/airgapped.yaml:{line}:16: spec.operator.imageLock: "
                                        f"{lock!r} {why} (keep the lock in the intent's repository and name it "
                                        "relative to the intent)"), result.stderr
        assert SECRET not in result.output
    assert not (repo / "out").exists()


def test_a_lock_elsewhere_inside_the_git_work_tree_is_read(run, tmp_path, monkeypatch):
    """`..` is fine while it stays inside the work tree: the repository is the work tree, not the intent's folder."""
    repo = _repository(tmp_path)
    _with_lock(run, repo, "../locks/images.lock.yaml")
    (repo / "locks").mkdir()
    shutil.move(repo / "clusters" / "images.lock.yaml", repo / "locks" / "images.lock.yaml")
    monkeypatch.chdir(repo)
    result = run("render", "clusters/airgapped.yaml", "-o", "out")
    assert result.exit_code == 0, result.output


def _fleet(repo: Path, overlay: str) -> Path:
    """examples/fleet as repo/fleet, its eu-prod cluster's overlay replaced by overlay."""
    shutil.copytree(ROOT / "examples" / "fleet", repo / "fleet")
    fleet = repo / "fleet" / "fleet.yaml"
    text = fleet.read_text(encoding="utf-8")
    fleet.write_text(text.replace("overlay: overlays/eu-prod.yaml", f"overlay: {overlay}"), encoding="utf-8")
    return fleet


@pytest.mark.parametrize("overlay, why", [("{outside}", ABSOLUTE), ("../../outside.yaml", DOTDOT),
                                          ("overlays/link.yaml", LINK)])
def test_a_fleet_file_outside_the_repository_is_a_finding_unread(run, tmp_path, monkeypatch, overlay, why):
    repo = _repository(tmp_path)
    overlay = overlay.format(outside=tmp_path / "outside.yaml")
    fleet = _fleet(repo, overlay)
    os.symlink(tmp_path / "outside.yaml", repo / "fleet" / "overlays" / "link.yaml")
    monkeypatch.chdir(repo)
    line = next(i for i, text in enumerate(fleet.read_text().splitlines(), 1) if f"overlay: {overlay}" in text)
    for command in (("validate", "fleet/fleet.yaml"), ("render", "fleet/fleet.yaml", "-o", "out")):
        result = run(*command)
        assert result.exit_code == 1, (command, result.output)
        assert f"fleet/fleet.yaml:{line}:16: error GC401 spec.clusters[0].overlay: {overlay!r} {why}" \
            in result.stdout, result.stdout
        assert "hint: keep the base, the layers and the overlays in the fleet's repository, and name them relative " \
               "to the fleet file" in result.stdout
        assert SECRET not in result.output
    assert not (repo / "out").exists()


def test_a_fleet_overlay_elsewhere_in_its_work_tree_is_read(run, tmp_path, monkeypatch):
    repo = _repository(tmp_path)
    (repo / "shared").mkdir()
    _fleet(repo, "../shared/eu-prod.yaml")
    shutil.copy(ROOT / "examples" / "fleet" / "overlays" / "eu-prod.yaml", repo / "shared" / "eu-prod.yaml")
    monkeypatch.chdir(repo)
    result = run("validate", "fleet/fleet.yaml")
    assert result.exit_code == 0, result.output

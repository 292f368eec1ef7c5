"""examples/ci/signing.yml, the worked pipeline of issue 45 (item 7), checked as github-actions.yml is: its steps run
under bash with the real gpuconf in a repository laid out as its header says; flux and cosign, which cannot run
here, are stand-ins that record what they were asked and answer as `flux push artifact --output json` does."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from test_attest import _keys

WORKFLOW = ROOT / "examples" / "ci" / "signing.yml"
GPUCONF = Path(sys.executable).parent / "gpuconf"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(job: str) -> dict[str, str]:
    return {step["name"]: step["run"] for step in _workflow()["jobs"][job]["steps"] if "run" in step}


def _repository(tmp_path: Path) -> Path:
    """A GitOps repository: intents/lab.yaml, fleets/ml-fleet/, out/ rendered with its unsigned statements."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "intents").mkdir()
    shutil.copy(ROOT / "examples" / "single-pool.yaml", repo / "intents" / "lab.yaml")
    shutil.copytree(ROOT / "examples" / "fleet", repo / "fleets" / "ml-fleet")
    done = subprocess.run([str(GPUCONF), "render", "intents/lab.yaml", "fleets/ml-fleet/fleet.yaml", "-o", "out",
                           "--attest"], cwd=repo, capture_output=True, text=True, env=_env())
    assert done.returncode == 0, done.stderr
    return repo


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{GPUCONF.parent}{os.pathsep}{os.environ['PATH']}", **extra}


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def test_pull_requests_get_no_key_and_the_merge_job_alone_the_signing_environment():
    workflow = _workflow()
    check, sign = workflow["jobs"]["check"], workflow["jobs"]["sign"]
    assert check["if"] == "github.event_name == 'pull_request'" and sign["if"] == "github.event_name == 'push'"
    assert "secrets." not in yaml.safe_dump(check) and "environment" not in check
    assert sign["environment"] == "gitops-signing"
    assert workflow["permissions"] == {"contents": "read"}
    assert sign["permissions"] == {"contents": "read", "packages": "write"}
    # The public key and its pin come from repository variables, never from a file of the tree.
    verify = next(step for step in sign["steps"] if step.get("name", "").startswith("Verify"))
    assert verify["env"] == {"GPUCONF_PUBLIC_KEY": "${{ vars.GPUCONF_PUBLIC_KEY }}",
                             "GPUCONF_KEY_FINGERPRINT": "${{ vars.GPUCONF_KEY_FINGERPRINT }}"}


def test_a_pull_request_check_passes_when_the_statements_are_current_and_fails_when_not(tmp_path):
    repo = _repository(tmp_path)
    [check] = [run for name, run in _steps("check").items() if "--check --attest" in run]
    done = _bash(check, repo, _env())
    assert done.returncode == 0, done.stdout + done.stderr
    overlay = repo / "fleets" / "ml-fleet" / "overlays" / "eu-prod.yaml"
    overlay.write_text(overlay.read_text(encoding="utf-8") + "# reviewed\n", encoding="utf-8")
    done = _bash(check, repo, _env())
    assert done.returncode == 1
    assert "stale: out/eu-prod/attestation.intoto.json" in done.stdout


FLUX = """#!/usr/bin/env bash
echo "flux $*" >> "$CALLS"
if [ "$1 $2" = "push artifact" ]; then
  repo=${3#oci://}; repo=${repo%:*}
  digest=$(cd "${4#--path=}" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-64)
  printf '{"repository":"%s","digest":"sha256:%s"}\\n' "$repo" "$digest"
fi
"""
COSIGN = """#!/usr/bin/env bash
echo "cosign $* key=$(head -c 29 "$4")" >> "$CALLS"
"""


@pytest.fixture
def merge(tmp_path):
    """The repository, the keys, and the environment the sign job's steps run in (flux and cosign stand-ins)."""
    repo = _repository(tmp_path)
    private, public = _keys(tmp_path, "ecdsa")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("flux", FLUX), ("cosign", COSIGN)):
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    from cryptography.hazmat.primitives import serialization

    der = serialization.load_pem_public_key(public.read_bytes()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    runner = tmp_path / "runner"
    runner.mkdir()
    env = _env(PATH=f"{bin_dir}{os.pathsep}{GPUCONF.parent}{os.pathsep}{os.environ['PATH']}",
               RUNNER_TEMP=str(runner), CALLS=str(tmp_path / "calls.txt"), GITHUB_SHA="0123abcd" * 5,
               REGISTRY="ghcr.io/your-org/gitops", SOURCE="https://github.com/your-org/gitops",
               GPUCONF_SIGNING_KEY=private.read_text(encoding="utf-8"),
               GPUCONF_PUBLIC_KEY=public.read_text(encoding="utf-8"),
               GPUCONF_KEY_FINGERPRINT="SHA256:" + hashlib.sha256(der).hexdigest(),
               COSIGN_KEY="-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n...\n", COSIGN_PASSWORD="pw")
    return repo, runner, public, env


def test_the_merge_signs_verifies_and_pushes_each_cluster_folder(merge, tmp_path):
    repo, runner, public, env = merge
    steps = _steps("sign")
    order = [name for name in steps if not name.startswith("Install")]
    assert order == ["Render and sign every folder with the CI-held key",
                     "Verify each signed folder with the pinned public key",
                     "Push each folder as an OCI artifact, sign its digest, then tag it main"]
    for name in order:
        done = _bash(steps[name], repo, env)
        assert done.returncode == 0, (name, done.stdout, done.stderr)
        if name.startswith("Verify"):
            assert done.stderr.count("(signature checked)") == 5, done.stderr
    assert not (runner / "attest.key").exists() and not (runner / "cosign.key").exists()  # no key left behind
    clusters = sorted(p.name for p in (runner / "signed").iterdir())
    assert clusters == ["edge-lab", "eu-prod", "lab", "ml-fleet", "us-prod"]
    for cluster in clusters:
        envelope = json.loads((runner / "signed" / cluster / "attestation.intoto.json").read_text(encoding="utf-8"))
        assert sorted(envelope) == ["payload", "payloadType", "signatures"]
        # What is signed is what pull requests checked: the committed unsigned statement is the envelope's payload.
        committed = (repo / "out" / cluster / "attestation.intoto.json").read_bytes()
        assert base64.b64decode(envelope["payload"]) == committed
    calls = (tmp_path / "calls.txt").read_text(encoding="utf-8").splitlines()
    sha = "0123abcd" * 5
    assert len(calls) == 15
    for i, cluster in enumerate(clusters):
        push, sign, tag = calls[3 * i:3 * i + 3]
        assert push == f"flux push artifact oci://ghcr.io/your-org/gitops/{cluster}:{sha} " \
                       f"--path={runner}/signed/{cluster}/ --source=https://github.com/your-org/gitops " \
                       f"--revision=main@sha1:{sha} --reproducible --output json"
        # The digest flux answered for the folder, signed with the secret written for the step only.
        assert re.fullmatch(f"cosign sign --yes --key {runner}/cosign.key ghcr.io/your-org/gitops/{cluster}"
                            "@sha256:[0-9a-f]{64} key=-----BEGIN ENCRYPTED SIGSTORE", sign), sign
        assert tag == f"flux tag artifact oci://ghcr.io/your-org/gitops/{cluster}:{sha} --tag main"  # signed first


def test_the_merge_stops_before_pushing_when_the_pin_does_not_match(merge, tmp_path):
    repo, runner, _, env = merge
    steps = _steps("sign")
    assert _bash(steps["Render and sign every folder with the CI-held key"], repo, env).returncode == 0
    env = {**env, "GPUCONF_KEY_FINGERPRINT": "SHA256:" + "0" * 64}
    done = _bash(steps["Verify each signed folder with the pinned public key"], repo, env)
    assert done.returncode == 2
    assert "the key's fingerprint is SHA256:" in done.stderr and f"not the pinned SHA256:{'0' * 64}" in done.stderr
    assert not (tmp_path / "calls.txt").exists()

"""The attacks on the chain from CI to the cluster (issue 45, items 1-4; issue 46's exit-3 and unbounded-read
classes): a swapped or rolled-back folder, a junk signature, malformed and deep envelopes, a huge file, a key taken
from the tree under review, an attestation that depends on where it was made, a record line that claims a foreign
file. Each test fails on 156dcf4."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from conftest import ROOT
from test_attest import GIVE_KEY, _keys

SINGLE = ROOT / "examples" / "single-pool.yaml"


def _intent(folder: Path, name: str, nodes: int = 3) -> Path:
    """The single-pool example as folder/<name>.yaml, its cluster named name."""
    text = SINGLE.read_text(encoding="utf-8").replace("  name: lab\n", f"  name: {name}\n", 1)
    path = folder / f"{name}.yaml"
    path.write_text(text.replace("nodes: 3", f"nodes: {nodes}", 1), encoding="utf-8")
    return path


@pytest.fixture
def signed(run, tmp_path, monkeypatch):
    """prod.yaml and staging.yaml rendered and signed into out/ (Ed25519); the public key outside the work tree."""
    monkeypatch.chdir(tmp_path)
    _intent(tmp_path, "prod")
    _intent(tmp_path, "staging")
    private, public = _keys(tmp_path, "ed25519")
    result = run("render", "prod.yaml", "staging.yaml", "-o", "out", "--attest", "--sign-key", str(private))
    assert result.exit_code == 0, result.output
    return tmp_path, private, public


def test_a_folder_copied_over_another_fails(run, signed):
    """Copy staging's signed folder over out/prod: every digest and the signature hold, the cluster does not."""
    here, _, public = signed
    shutil.rmtree(here / "out" / "prod")
    shutil.copytree(here / "out" / "staging", here / "out" / "prod")
    result = run("verify", "out/prod", "--key", str(public))
    assert result.exit_code == 1
    assert result.stdout == "out/prod/attestation.intoto.json: the statement is of cluster 'staging', but this " \
                            "folder is 'prod' (a folder copied over another, or renamed)\n"
    assert result.stderr == "out/prod: FAILED: 1 problem (signature checked)\n"
    assert run("verify", "out/staging", "--key", str(public)).exit_code == 0


def test_a_rolled_back_folder_fails_against_the_intent(run, signed):
    """Restore an older signed render of prod (3 nodes) after the intent moved on (4 nodes): given the intent, the
    statement's input digest gives it away."""
    here, private, public = signed
    shutil.copytree(here / "out" / "prod", here / "older")
    before = hashlib.sha256((here / "prod.yaml").read_bytes()).hexdigest()
    _intent(here, "prod", nodes=4)
    assert run("render", "prod.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    assert run("verify", "out/prod", "--key", str(public), "--intent", "prod.yaml").exit_code == 0
    shutil.rmtree(here / "out" / "prod")
    shutil.copytree(here / "older", here / "out" / "prod")
    result = run("verify", "out/prod", "--key", str(public), "--intent", "prod.yaml")
    now = hashlib.sha256((here / "prod.yaml").read_bytes()).hexdigest()
    assert result.exit_code == 1
    assert result.stdout == f"out/prod/attestation.intoto.json: prod.yaml (intent): the statement was made from " \
                            f"sha256 {before}, the given file is sha256 {now} (an older or a newer render)\n"
    assert result.stderr == "out/prod: FAILED: 1 problem (signature checked, inputs checked)\n"
    other = run("verify", "out/prod", "--key", str(public), "--intent", "staging.yaml")
    assert (other.exit_code, other.stderr) == (1, "gpuconf: staging.yaml renders no cluster 'prod' (it renders "
                                                  "staging): name the folder's own input\n")


def _rewrite(folder: Path, change) -> None:
    path = folder / "attestation.intoto.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_junk_signature_without_a_key_fails(run, signed):
    here, _, public = signed
    _rewrite(here / "out" / "prod", lambda d: d["signatures"][0].update(sig=base64.b64encode(b"junk").decode()))
    result = run("verify", "out/prod")
    assert result.exit_code == 1
    assert result.stdout == f"out/prod/attestation.intoto.json: signature not checked: {GIVE_KEY}\n"
    assert result.stderr == "out/prod: FAILED: 1 problem (signature not checked)\n"
    keyed = run("verify", "out/prod", "--key", str(public))
    assert keyed.exit_code == 1 and "the signature does not verify with the given key" in keyed.stdout
    # render --check compares the statement; it says that it did not check the signature.
    check = run("render", "prod.yaml", "staging.yaml", "-o", "out", "--attest", "--check")
    assert check.exit_code == 0
    assert "gpuconf: note: out/prod/attestation.intoto.json: its payload is the fresh statement; its signature was " \
           "not checked (gpuconf verify --key checks it)\n" in check.stderr


@pytest.mark.parametrize("change, reason", [
    (lambda d: d.update(payload=123), "the payload is a int, not a base64 string"),
    (lambda d: d.update(payload={"a": 1}), "the payload is a dict, not a base64 string"),
    (lambda d: d.update(payloadType=["x"]), "payloadType is a list, not 'application/vnd.in-toto+json'"),
    (lambda d: d.update(signatures="x"), "signatures is a str, not a list"),
    (lambda d: d.update(signatures=[]), "the envelope has no signatures"),
    (lambda d: d.update(signatures=[7]), "signatures[0] is a int, not an object"),
    (lambda d: d["signatures"][0].update(sig=5), "signatures[0].sig is a int, not a base64 string"),
    (lambda d: d["signatures"][0].update(sig=None), "signatures[0].sig is a NoneType, not a base64 string"),
    (lambda d: d["signatures"][0].update(keyid=7), "signatures[0].keyid is a int, not a string"),
    (lambda d: d["signatures"][0].update(keyid={"k": []}), "signatures[0].keyid is a dict, not a string"),
    (lambda d: d.update(signatures=d["signatures"] * 17), "the envelope has 17 signatures; gpuconf reads at most 16"),
])
def test_a_malformed_envelope_is_exit_1_with_the_reason(run, signed, change, reason):
    here, _, public = signed
    _rewrite(here / "out" / "prod", change)
    for extra in (("--key", str(public)), ("--skip-signature",), ()):
        result = run("verify", "out/prod", *extra)
        assert result.exit_code == 1, (extra, result.output)
        assert result.stdout == f"out/prod/attestation.intoto.json: not a DSSE envelope gpuconf reads: {reason}\n"
        assert result.stderr == "out/prod: FAILED: 1 problem (attestation unreadable)\n"
    check = run("render", "prod.yaml", "staging.yaml", "-o", "out", "--attest", "--check")
    assert check.exit_code == 1 and "stale: out/prod/attestation.intoto.json" in check.stdout


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize("content, reason", [
    (DEEP, "nested deeper than 32 levels; not an attestation gpuconf wrote"),
    (b'{"a": "' + b"x" * (16 * 1024 * 1024) + b'"}', "larger than 16777216 bytes; not an attestation gpuconf wrote"),
    (json.dumps({"payloadType": "application/vnd.in-toto+json", "payload": base64.b64encode(DEEP).decode(),
                 "signatures": [{"sig": "AA=="}]}).encode(),
     "the payload is nested deeper than 32 levels; not an attestation gpuconf wrote"),
])
def test_a_deep_or_huge_attestation_is_refused_with_the_reason(run, signed, content, reason):
    here, _, _ = signed
    (here / "out" / "prod" / "attestation.intoto.json").write_bytes(content)
    result = run("verify", "out/prod", "--skip-signature")
    assert result.exit_code == 1, result.output
    assert result.stdout == f"out/prod/attestation.intoto.json: {reason}\n"
    check = run("render", "prod.yaml", "staging.yaml", "-o", "out", "--attest", "--check")
    assert check.exit_code == 1 and "internal error" not in check.output


def test_a_huge_file_in_a_verified_folder_is_hashed_a_chunk_at_a_time(run, signed):
    """A 1 GiB file (sparse: no disk) is hashed in a megabyte of memory, not read whole."""
    here, _, public = signed
    with open(here / "out" / "prod" / "big.bin", "wb") as fh:
        fh.truncate(1 << 30)
    tracemalloc.start()
    try:
        result = run("verify", "out/prod", "--key", str(public))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 1
    assert result.stdout == "big.bin: not in the attestation (a file added after the render)\n"
    assert peak < 64 * 1024 * 1024, peak


def test_the_key_comes_from_outside_the_tree_under_review_or_is_pinned(run, tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    _intent(tmp_path, "prod")
    private, public = _keys(tmp_path, "ecdsa")  # committed beside the intents: a pull request can replace it
    assert run("render", "prod.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    result = run("verify", "out/prod", "--key", str(public))
    assert result.exit_code == 2
    assert result.stderr == f"gpuconf: {public}: the public key is inside the repository (the git work tree that " \
                            "holds the folder, else the folder's own folder) that is under review: a change to it " \
                            "can replace the key. Read the key from a CI secret, or pin it with --key-fingerprint " \
                            "SHA256:<hex>\n"
    from cryptography.hazmat.primitives import serialization

    der = serialization.load_pem_public_key(public.read_bytes()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pinned = "SHA256:" + hashlib.sha256(der).hexdigest()
    result = run("verify", "out/prod", "--key", str(public), "--key-fingerprint", pinned)
    assert result.exit_code == 0, result.output
    assert result.stderr.endswith("(signature checked)\n")
    _, other = _keys(tmp_path, "ed25519")  # the file replaced by another key: the pin refuses it
    shutil.copy(other, public)
    result = run("verify", "out/prod", "--key", str(public), "--key-fingerprint", pinned)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"gpuconf: {public}: the key's fingerprint is SHA256:")
    assert result.stderr.endswith(f", not the pinned {pinned} (openssl pkey -pubin -in KEY -outform DER | "
                                  "sha256sum)\n")
    usage = run("verify", "out/prod", "--key-fingerprint", pinned)
    assert usage.exit_code == 2 and "--key-fingerprint pins the key --key reads: give --key too" in usage.stderr
    usage = run("verify", "out/prod", "--key", str(public), "--skip-signature")
    assert usage.exit_code == 2 and "--skip-signature and --key contradict each other" in usage.stderr


def test_the_same_inputs_attest_the_same_from_any_working_folder_into_any_folder(run, tmp_path, monkeypatch):
    """The input is named relative to its repository's top, never to the working folder."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "intents").mkdir()
    _intent(repo / "intents", "prod")
    monkeypatch.chdir(repo)
    assert run("render", "intents/prod.yaml", "-o", "out", "--attest").exit_code == 0
    monkeypatch.chdir(repo / "intents")
    assert run("render", "prod.yaml", "-o", str(tmp_path / "elsewhere"), "--attest").exit_code == 0
    monkeypatch.chdir(tmp_path)
    assert run("render", "repo/intents/prod.yaml", "-o", "third", "--attest").exit_code == 0
    trees = [{str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
             for root in (repo / "out" / "prod", tmp_path / "elsewhere" / "prod", tmp_path / "third" / "prod")]
    assert trees[0] == trees[1] == trees[2]
    statement = json.loads(trees[0]["attestation.intoto.json"])
    assert statement["predicate"]["buildDefinition"]["externalParameters"]["inputs"] == ["intents/prod.yaml"]
    assert b"gpuconf render intents/prod.yaml -o DIR" in trees[0]["values.yaml"]


def test_an_appended_record_line_does_not_make_gpuconf_delete_a_foreign_file(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _intent(tmp_path, "prod")
    assert run("render", "prod.yaml", "-o", "out", "--attest").exit_code == 0
    folder = tmp_path / "out" / "prod"
    notes = folder / "notes.txt"
    notes.write_text("keep me\n", encoding="utf-8")
    record = folder / ".gpuconf-files"
    original = record.read_text(encoding="utf-8")
    for digest in ("0" * 64, hashlib.sha256(b"keep me\n").hexdigest()):
        # A junk digest is no ownership; a right one is a record the attestation does not list.
        record.write_text(original + f"{digest}  notes.txt\n", encoding="utf-8")
        result = run("render", "prod.yaml", "-o", "out", "--attest")
        assert result.exit_code == 2, result.output
        assert "gpuconf: out/prod/ holds what gpuconf did not write: notes.txt\n" in result.stderr
        assert notes.read_text(encoding="utf-8") == "keep me\n"
    # A file gpuconf wrote and someone changed since is not gpuconf's to replace either.
    record.write_text(original, encoding="utf-8")
    notes.unlink()
    values = folder / "values.yaml"
    values.write_text(values.read_text(encoding="utf-8") + "# tuned by hand\n", encoding="utf-8")
    result = run("render", "prod.yaml", "-o", "out", "--attest")
    assert result.exit_code == 2
    assert "gpuconf: out/prod/ holds what gpuconf did not write: values.yaml (changed since gpuconf wrote it)\n" \
        in result.stderr
    assert values.read_text(encoding="utf-8").endswith("# tuned by hand\n")
    assert run("render", "prod.yaml", "-o", "out", "--attest", "--delete-foreign").exit_code == 0
    assert not values.read_text(encoding="utf-8").endswith("# tuned by hand\n")

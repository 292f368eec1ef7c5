"""`render --attest [--sign-key]` and `gpuconf verify`: the attestation of every rendered folder (issue 31, items 1-2).

The signed envelopes are checked with securesystemslib's own DSSE verifier and with cryptography over the PAE the DSSE
spec defines (secure-systems-lab/dsse v1.0.2 protocol.md), never with gpuconf's code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT

SINGLE = ROOT / "examples" / "single-pool.yaml"
FLEET = ROOT / "examples" / "fleet"
#: What verify asks for when no signature was checked (gpuconf/output/attestcheck.py).
GIVE_KEY = "give --key PUBLIC_KEY (from a CI secret, or pinned with --key-fingerprint), or --skip-signature to check " \
           "the digests only"


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A working folder holding a copy of the single-pool example as intent.yaml (paths in the statement are
    relative to it)."""
    shutil.copy(SINGLE, tmp_path / "intent.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _keys(folder: Path, kind: str) -> tuple[Path, Path]:
    """A fresh private key (PEM, PKCS#8) and its public key (SPKI PEM) of kind ed25519 or ecdsa (P-256)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    key = ed25519.Ed25519PrivateKey.generate() if kind == "ed25519" else ec.generate_private_key(ec.SECP256R1())
    private, public = folder / f"{kind}.pem", folder / f"{kind}.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def _attestation(folder: Path) -> dict:
    return json.loads((folder / "attestation.intoto.json").read_text(encoding="utf-8"))


def _statement(folder: Path) -> dict:
    doc = _attestation(folder)
    return json.loads(base64.b64decode(doc["payload"])) if "payload" in doc else doc


def test_unsigned_attestation_lists_every_file_and_the_inputs(run, here):
    result = run("render", "intent.yaml", "-o", "out", "--attest")
    assert result.exit_code == 0, result.stderr
    folder = here / "out" / "lab"
    doc = _attestation(folder)
    assert doc["_type"] == "https://in-toto.io/Statement/v1"
    assert doc["predicateType"] == "https://slsa.dev/provenance/v1"
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert ".gpuconf-files" in written and "attestation.intoto.json" in written
    # Every file, the record of them included (issue 45, item 4); the attestation cannot list itself.
    assert [s["name"] for s in doc["subject"]] == [p for p in written if p != "attestation.intoto.json"]
    for subject in doc["subject"]:
        assert subject["digest"] == {"sha256": hashlib.sha256((folder / subject["name"]).read_bytes()).hexdigest()}
    build = doc["predicate"]["buildDefinition"]
    assert build["buildType"] == "urn:gpuconf:buildType:render:v2"
    # Nothing of the output folder: the same inputs attest the same wherever they are rendered.
    assert build["externalParameters"] == {"cluster": "lab", "command": "gpuconf render intent.yaml --attest -o DIR "
                                                                     "(DIR: the folder that holds lab/)",
                                           "inputs": ["intent.yaml"]}
    deps = {d["name"]: d for d in build["resolvedDependencies"]}
    assert deps["intent.yaml"]["digest"]["sha256"] == hashlib.sha256((here / "intent.yaml").read_bytes()).hexdigest()
    assert deps["intent.yaml"]["annotations"] == {"gpuconf_role": "intent"}
    chart = (ROOT / "profiles" / "charts" / "v26.3.3.json").read_bytes()
    assert deps["profiles/charts/v26.3.3.json"]["digest"]["sha256"] == hashlib.sha256(chart).hexdigest()
    assert deps["profiles/charts/v26.3.3.json"]["annotations"] == {"gpuconf_role": "chart-facts"}
    # The chart archive those facts were read from, by the digest NVIDIA's Helm index records for it
    # (shared/reference/gpu-operator/charts/SOURCES.md: v26.3.3's sha256, equal to the index digest).
    assert deps["gpu-operator-v26.3.3.tgz"] == {
        "name": "gpu-operator-v26.3.3.tgz", "downloadLocation": "https://helm.ngc.nvidia.com/nvidia",
        "digest": {"sha256": "59abb5852a24b3ae0ef757bfea3051f419acbf559ee5efd72f0672d28af56a68"},
        "annotations": {"gpuconf_role": "chart", "chartVersion": "v26.3.3"}}
    catalogue = (ROOT / "profiles" / "gpus.json").read_bytes()
    assert deps["profiles/gpus.json"]["digest"]["sha256"] == hashlib.sha256(catalogue).hexdigest()
    assert "pkg:pypi" not in json.dumps(doc)  # no made-up package URI (gpuconf is not on PyPI)
    from gpuconf import __commit__, __dirty__, __version__

    assert doc["predicate"]["runDetails"] == {"builder": {"id": "urn:gpuconf:builder:cli", "version": {
        "gpuconf": __version__, **({"commit": __commit__} if __commit__ else {}),
        **({"uncommittedChanges": "true"} if __dirty__ else {})}}}
    assert "startedOn" not in json.dumps(doc)  # no time: same inputs, same bytes
    record = (folder / ".gpuconf-files").read_text(encoding="utf-8")
    assert "attestation.intoto.json" not in record  # the attestation lists the record, so the record cannot list it
    # Fail closed: an unsigned statement proves nothing about who made it.
    result = run("verify", "out/lab")
    assert result.exit_code == 1
    assert result.stdout == f"out/lab/attestation.intoto.json: unsigned: nothing shows who made it; {GIVE_KEY}\n"
    assert result.stderr == "out/lab: FAILED: 1 problem (unsigned)\n"
    verified = run("verify", "out/lab", "--skip-signature")
    assert verified.exit_code == 0
    assert verified.stderr == f"out/lab: verified: {len(doc['subject'])} files match attestation.intoto.json " \
                              "(unsigned)\n"


def test_a_render_without_attest_writes_none(run, here):
    assert run("render", "intent.yaml", "-o", "out").exit_code == 0
    assert not (here / "out" / "lab" / "attestation.intoto.json").exists()
    result = run("verify", "out/lab")
    assert result.exit_code == 2
    assert result.stderr == "gpuconf: out/lab: has no attestation.intoto.json (render it with `gpuconf render " \
                            "--attest`)\n"
    assert run("verify", "out/missing").stderr == "gpuconf: out/missing: does not exist\n"


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa"])
def test_signed_attestation_verifies_and_names_every_change(run, here, kind):
    private, public = _keys(here, kind)
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    folder = here / "out" / "lab"
    first = (folder / "attestation.intoto.json").read_bytes()
    result = run("verify", "out/lab", "--key", str(public))
    assert result.exit_code == 0, result.output
    assert result.stderr.endswith("(signature checked)\n") and result.stdout == ""
    # The same inputs and key give the same bytes (Ed25519, and ECDSA made deterministic).
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    assert (folder / "attestation.intoto.json").read_bytes() == first

    values = folder / "values.yaml"
    values.write_bytes(values.read_bytes().replace(b"#", b"%", 1))
    (folder / "manifests" / "extra.yaml").write_text("kind: ConfigMap\n", encoding="utf-8")
    (folder / "REPORT.md").unlink()
    result = run("verify", "out/lab", "--key", str(public))
    assert result.exit_code == 1
    changed = hashlib.sha256(values.read_bytes()).hexdigest()
    attested = next(s["digest"]["sha256"] for s in _statement(folder)["subject"] if s["name"] == "values.yaml")
    assert result.stdout.splitlines() == [
        "REPORT.md: attested but missing",
        "manifests/extra.yaml: not in the attestation (a file added after the render)",
        f"values.yaml: changed since the render (sha256 {changed}, attested {attested})",
    ]
    assert result.stderr == "out/lab: FAILED: 3 problems (signature checked)\n"


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa"])
def test_the_envelope_verifies_with_securesystemslib_and_the_dsse_pae(run, here, kind):
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    private, public = _keys(here, kind)
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    doc = _attestation(here / "out" / "lab")
    assert sorted(doc) == ["payload", "payloadType", "signatures"]
    assert doc["payloadType"] == "application/vnd.in-toto+json"
    crypto_key = serialization.load_pem_public_key(public.read_bytes())
    key = SSlibKey.from_crypto(crypto_key)
    envelope = Envelope.from_dict(json.loads(json.dumps(doc)))
    assert envelope.verify([key], 1) == {key.keyid: key}
    statement = json.loads(envelope.payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://slsa.dev/provenance/v1"
    assert {"buildDefinition", "runDetails"} <= set(statement["predicate"])
    # DSSE v1: SIGNATURE = Sign(PAE(type, body)), PAE = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.
    body = base64.b64decode(doc["payload"])
    kind_bytes = doc["payloadType"].encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(kind_bytes), kind_bytes, len(body), body)
    [signature] = doc["signatures"]
    sig = base64.b64decode(signature["sig"])
    if kind == "ecdsa":
        crypto_key.verify(sig, pae, ec.ECDSA(hashes.SHA256()))  # raises InvalidSignature when it does not verify
    else:
        crypto_key.verify(sig, pae)
    # A changed payload no longer verifies with the library either.
    forged = dict(doc, payload=base64.b64encode(body.replace(b'"lab"', b'"bal"')).decode())
    from securesystemslib.exceptions import VerificationError

    with pytest.raises(VerificationError):
        Envelope.from_dict(forged).verify([key], 1)


def test_verify_refuses_wrong_keys_forgeries_and_unsigned_statements(run, here):
    private, public = _keys(here, "ed25519")
    _, other = _keys(here, "ecdsa")
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    result = run("verify", "out/lab", "--key", str(other))
    assert (result.exit_code, result.stdout) == (1, "out/lab/attestation.intoto.json: the signature does not verify "
                                                    "with the given key (signed with another key, or changed)\n")
    # A payload re-encoded by hand (a tampered subject) fails the signature, even though every file matches it.
    path = here / "out" / "lab" / "attestation.intoto.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    statement = json.loads(base64.b64decode(doc["payload"]))
    statement["subject"] = statement["subject"][1:]
    doc["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = run("verify", "out/lab", "--key", str(public))
    assert result.exit_code == 1 and "the signature does not verify" in result.stdout
    # Without --key the signature is not checked: that alone fails, unless asked for the digests only.
    result = run("verify", "out/lab")
    assert result.exit_code == 1
    assert result.stdout == f"out/lab/attestation.intoto.json: signature not checked: {GIVE_KEY}\n" \
                            ".gpuconf-files: not in the attestation (a file added after the render)\n"
    assert result.stderr == "out/lab: FAILED: 2 problems (signature not checked)\n"
    result = run("verify", "out/lab", "--skip-signature")
    assert (result.exit_code, result.stderr) == (1, "out/lab: FAILED: 1 problem (signature not checked)\n")
    assert run("render", "intent.yaml", "-o", "out", "--attest").exit_code == 0
    result = run("verify", "out/lab", "--key", str(public))
    assert (result.exit_code, result.stdout) == (1, "out/lab/attestation.intoto.json: unsigned (a plain statement, "
                                                    "not a DSSE envelope), but --key expects a signature; render it "
                                                    "with --sign-key\n")
    path.write_text("{not json", encoding="utf-8")
    result = run("verify", "out/lab")
    assert result.exit_code == 1 and result.stdout.startswith("out/lab/attestation.intoto.json: not JSON (")
    assert result.stderr == "out/lab: FAILED: 1 problem (attestation unreadable)\n"


def _write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "absent.pem", "{p}: cannot read the key: No such file or directory"),
    (lambda d: _write_text(d / "junk.pem", "hello\n"), "{p}: not a PEM private key ("),
    (lambda d: _keys(d, "ed25519")[1], "{p}: a public key; --sign-key needs the private key (verify takes the "
                                        "public one)"),
    (lambda d: _rsa(d), "{p}: an RSA key (2048 bits); gpuconf signs with Ed25519 or ECDSA P-256 keys"),
    (lambda d: _p384(d), "{p}: an ECDSA secp384r1 key; gpuconf signs with Ed25519 or ECDSA P-256 keys"),
    (lambda d: _encrypted(d), "{p}: an encrypted private key; gpuconf reads unencrypted PEM keys only"),
])
def test_a_bad_signing_key_is_exit_2_and_writes_nothing(run, here, make, message):
    path = make(here)
    result = run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith("gpuconf: " + message.format(p=path))
    assert result.stderr.endswith("; nothing was written\n")
    assert not (here / "out").exists()


def test_a_bad_public_key_is_exit_2(run, here):
    private, _ = _keys(here, "ed25519")
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    result = run("verify", "out/lab", "--key", str(private))
    assert (result.exit_code, result.stderr) == (2, f"gpuconf: {private}: a private key; --key takes the public key "
                                                    "(openssl pkey -in KEY -pubout)\n")
    junk = _write_text(here / "junk.pub", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    result = run("verify", "out/lab", "--key", str(junk))
    assert result.exit_code == 2 and result.stderr.startswith(f"gpuconf: {junk}: not a PEM public key (")
    result = run("render", "intent.yaml", "-o", "out", "--sign-key", str(private))
    assert result.exit_code == 2 and "--sign-key signs the attestation: give --attest too" in result.stderr


def _rsa(folder: Path) -> Path:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _write_bytes(folder / "rsa.pem", key.private_bytes(serialization.Encoding.PEM,
                                                              serialization.PrivateFormat.PKCS8,
                                                              serialization.NoEncryption()))


def _p384(folder: Path) -> Path:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP384R1())
    return _write_bytes(folder / "p384.pem", key.private_bytes(serialization.Encoding.PEM,
                                                               serialization.PrivateFormat.TraditionalOpenSSL,
                                                               serialization.NoEncryption()))


def _encrypted(folder: Path) -> Path:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    return _write_bytes(folder / "enc.pem", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_render_check_checks_the_attestation(run, here):
    private, _ = _keys(here, "ecdsa")
    assert run("render", "intent.yaml", "-o", "out", "--attest").exit_code == 0
    result = run("render", "intent.yaml", "-o", "out", "--attest", "--check")
    assert result.exit_code == 0 and "out/lab: up to date" in result.stderr
    # A folder rendered with --attest is stale for a check without it (its attestation is extra), and vice versa.
    stale = run("render", "intent.yaml", "-o", "out", "--check")
    assert stale.exit_code == 1 and "attestation.intoto.json" in stale.stdout
    path = here / "out" / "lab" / "attestation.intoto.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"lab"', '"bal"'), encoding="utf-8")
    stale = run("render", "intent.yaml", "-o", "out", "--attest", "--check")
    assert stale.exit_code == 1 and "attestation.intoto.json" in stale.stdout
    # Signed: a check with the key compares the bytes; one without it compares the envelope's payload.
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(private)).exit_code == 0
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--sign-key", str(private), "--check").exit_code == 0
    assert run("render", "intent.yaml", "-o", "out", "--attest", "--check").exit_code == 0
    (here / "intent.yaml").write_text(SINGLE.read_text(encoding="utf-8").replace("nodes: 3", "nodes: 4"),
                                      encoding="utf-8")
    stale = run("render", "intent.yaml", "-o", "out", "--attest", "--check")
    assert stale.exit_code == 1 and "attestation.intoto.json" in stale.stdout


def test_a_fleet_attests_each_cluster_with_its_base_and_overlay(run, tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()  # a git work tree: inputs are named relative to its top
    shutil.copytree(FLEET, tmp_path / "fleet")
    monkeypatch.chdir(tmp_path / "fleet" / "overlays")  # from any working folder, the same names
    assert run("render", "../fleet.yaml", "-o", "../../out", "--attest").exit_code == 0
    monkeypatch.chdir(tmp_path)
    for name in ("eu-prod", "us-prod", "edge-lab", "ml-fleet"):
        result = run("verify", f"out/{name}", "--skip-signature", "--intent", "fleet/fleet.yaml")
        assert result.exit_code == 0, result.output
        assert result.stderr.endswith("(unsigned, inputs checked)\n")
    build = _statement(tmp_path / "out" / "eu-prod")["predicate"]["buildDefinition"]
    assert build["externalParameters"]["fleet"] == "ml-fleet" and build["externalParameters"]["cluster"] == "eu-prod"
    deps = build["resolvedDependencies"]
    roles = ("fleet", "base", "layer", "overlay", "intent", "image-lock")
    inputs = [(d["annotations"]["gpuconf_role"], d["name"]) for d in deps if d["annotations"]["gpuconf_role"] in roles]
    assert inputs == [("fleet", "fleet/fleet.yaml"), ("base", "fleet/base.yaml"),
                      ("overlay", "fleet/overlays/eu-prod.yaml")]
    for role, name in inputs:
        digest = next(d["digest"]["sha256"] for d in deps if d["name"] == name)
        assert digest == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
    own = _statement(tmp_path / "out" / "ml-fleet")["predicate"]["buildDefinition"]["resolvedDependencies"]
    assert [d["name"] for d in own if d["annotations"]["gpuconf_role"] in roles] == [
        "fleet/fleet.yaml", "fleet/base.yaml", "fleet/overlays/edge-lab.yaml", "fleet/overlays/eu-prod.yaml",
        "fleet/overlays/us-prod.yaml"]
    # Another cluster's input is not this folder's: an overlay changed since is an older render.
    overlay = tmp_path / "fleet" / "overlays" / "eu-prod.yaml"
    overlay.write_text(overlay.read_text(encoding="utf-8") + "# reviewed since\n", encoding="utf-8")
    result = run("verify", "out/eu-prod", "--skip-signature", "--intent", "fleet/fleet.yaml")
    assert result.exit_code == 1
    recorded = next(d["digest"]["sha256"] for d in deps if d["name"] == "fleet/overlays/eu-prod.yaml")
    now = hashlib.sha256(overlay.read_bytes()).hexdigest()
    assert result.stdout == f"out/eu-prod/attestation.intoto.json: fleet/overlays/eu-prod.yaml (overlay): the " \
                            f"statement was made from sha256 {recorded}, the given file is sha256 {now} (an older or " \
                            "a newer render)\n"
    assert run("verify", "out/us-prod", "--skip-signature", "--intent", "fleet/fleet.yaml").exit_code == 0


def test_diff_against_an_attested_folder_sees_no_change(run, here):
    """The attestation is derived from the other files and never applied: `diff --against` leaves it out, as it does
    the file record and the reports."""
    assert run("render", "intent.yaml", "-o", "out", "--attest").exit_code == 0
    result = run("diff", "intent.yaml", "--against", "out")
    assert result.exit_code == 0, result.stdout
    assert "no deployed object changes" in result.stdout and "attestation.intoto.json" not in result.stdout

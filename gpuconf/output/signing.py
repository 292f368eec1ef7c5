"""Signing and checking attestations as DSSE envelopes, through securesystemslib's Envelope and signer API with
cryptography's keys (the optional dependencies of `pip install 'gpuconf[sign]'`; imported only here).

Keys are PEM files: an unencrypted private key (PKCS#8, or SEC1 for ECDSA) to sign, its public key (SPKI) to
verify; Ed25519 or ECDSA P-256 (with SHA-256, ASN.1 DER signatures: what cosign's `--key` verifies, facts §5).
Ed25519 signatures are deterministic by definition; ECDSA signatures are made deterministic (RFC 6979, cryptography's
`deterministic_signing`), so the same statement and key give the same envelope bytes and `render --check` can
compare them. Any verifier checks such signatures as ordinary ECDSA ones.
"""

from __future__ import annotations

import copy

#: A key file larger than this is not a PEM key.
MAX_KEY_BYTES = 64 * 1024


class KeyProblem(Exception):
    """A key file cannot be used: unreadable, not a PEM key of the right kind, or the library is missing (exit 2)."""


def _libraries():
    try:
        import cryptography  # noqa: F401
        import securesystemslib.dsse  # noqa: F401
        import securesystemslib.signer  # noqa: F401
    except ImportError:
        raise KeyProblem("signing and checking signatures needs gpuconf's sign extra: "
                         "pip install 'gpuconf[sign]' (securesystemslib, cryptography)") from None


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise KeyProblem(f"{path}: cannot read the key: {exc.strerror or exc}") from None
    if len(data) > MAX_KEY_BYTES:
        raise KeyProblem(f"{path}: larger than {MAX_KEY_BYTES} bytes; not a PEM key")
    return data


def _kind(key) -> str | None:
    """'ed25519', 'ecdsa' (P-256), or None for a key gpuconf does not sign with."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return "ed25519"
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)) and key.curve.name == "secp256r1":
        return "ecdsa"
    return None


def _describe(key) -> str:
    curve = getattr(key, "curve", None)
    if curve is not None:
        return f"an ECDSA {curve.name} key"
    name = type(key).__name__.removeprefix("_").replace("PrivateKey", "").replace("PublicKey", "")
    size = getattr(key, "key_size", None)
    return f"{'an' if name in ('RSA', 'Ed448', 'X25519', 'X448') else 'a'} {name} key" + (f" ({size} bits)" if size else "")


WANTED = "gpuconf signs with Ed25519 or ECDSA P-256 keys"


def load_signer(path: str):
    """A securesystemslib Signer for the private key in path; raises KeyProblem with the reason."""
    _libraries()
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    data = _read(path)
    if b"-----BEGIN PUBLIC KEY-----" in data:
        raise KeyProblem(f"{path}: a public key; --sign-key needs the private key (verify takes the public one)")
    if b"ENCRYPTED" in data:
        raise KeyProblem(f"{path}: an encrypted private key; gpuconf reads unencrypted PEM keys only (keep the "
                         "key in your CI's secret store and write it to a file only for the render)")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise KeyProblem(f"{path}: not a PEM private key ({_reason(exc)})") from None
    if _kind(key) is None:
        raise KeyProblem(f"{path}: {_describe(key)}; {WANTED}")
    return _signer(key)


def _reason(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text.rstrip(".")


def _signer(key):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from securesystemslib.signer import CryptoSigner, Signature

    class DeterministicSigner(CryptoSigner):
        """securesystemslib's CryptoSigner, whose ECDSA signatures are deterministic (RFC 6979)."""

        def sign(self, payload: bytes) -> Signature:  # noqa: D102 - securesystemslib's Signer API
            if isinstance(key, ec.EllipticCurvePrivateKey):
                signature = key.sign(payload, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
                return Signature(self.public_key.keyid, signature.hex())
            return super().sign(payload)

    return DeterministicSigner(key)


def load_public_key(path: str):
    """A securesystemslib Key for the public key in path; raises KeyProblem with the reason."""
    _libraries()
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from securesystemslib.signer import SSlibKey

    data = _read(path)
    if b"PRIVATE KEY-----" in data:
        raise KeyProblem(f"{path}: a private key; --key takes the public key (openssl pkey -in KEY -pubout)")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise KeyProblem(f"{path}: not a PEM public key ({_reason(exc)})") from None
    if _kind(key) is None:
        raise KeyProblem(f"{path}: {_describe(key)}; {WANTED}")
    return SSlibKey.from_crypto(key)


def fingerprint_of(path: str) -> str:
    """The sha256 (hex) of the public key's DER SubjectPublicKeyInfo in path: what `openssl pkey -pubin -in KEY
    -outform DER | sha256sum` prints, and `verify --key-fingerprint` pins. Raises KeyProblem."""
    import hashlib

    from cryptography.hazmat.primitives import serialization

    load_public_key(path)  # the same checks and messages
    key = serialization.load_pem_public_key(_read(path))
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def envelope(payload: bytes, payload_type: str, signer) -> dict:
    """The DSSE envelope of payload signed by signer: {payload, payloadType, signatures[{keyid, sig}]}."""
    from securesystemslib.dsse import Envelope

    signed = Envelope(payload, payload_type, {})
    signed.sign(signer)
    return signed.to_dict()


def verified_payload(doc: dict, key) -> tuple[bytes | None, str | None]:
    """(the payload, None) when some signature of the envelope doc verifies with key, else (None, why).

    The keyid is an unauthenticated hint (DSSE envelope.md): securesystemslib tries only keys whose keyid equals the
    signature's (its issue #416), so each signature is tried with the key under that signature's keyid."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import FormatError, VerificationError
    from securesystemslib.signer import SSlibKey

    signatures = doc.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        return None, "the envelope has no signatures"
    shaped = copy.deepcopy(doc)
    for signature in shaped["signatures"]:
        if isinstance(signature, dict):
            signature.setdefault("keyid", "")
    try:
        signed = Envelope.from_dict(shaped)
    except (KeyError, ValueError, TypeError, FormatError) as exc:
        return None, f"not a DSSE envelope ({_reason(exc)})"
    keys = [SSlibKey(keyid, key.keytype, key.scheme, key.keyval) for keyid in signed.signatures]
    try:
        signed.verify(keys, 1)
    except VerificationError:
        return None, "the signature does not verify with the given key (signed with another key, or changed)"
    return signed.payload, None

"""Fuzz tests of the attestation a stranger's pull request can put in a folder (issue 46's crash classes of `verify`
and `render --check --attest`: a payload, signature or key id that is not a string, a 100,000-deep document), with
tests/test_fuzz.py's strategies and settings: whatever the attestation holds, `verify` (with and without a key) and
`render --check --attest` exit 0, 1 or 2, print no traceback and no internal error, and change nothing."""

from __future__ import annotations

import base64
import json
import shutil

import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

from conftest import ROOT
from test_attest import _keys
from test_fuzz import _RAW, _SETTINGS, _outcome_is_clean, values

_TYPE = "application/vnd.in-toto+json"
_DEEP = b"[" * 100_000 + b"]" * 100_000

#: Envelopes whose fields are anything (a string where one belongs, often enough to go deep), and raw documents.
_fields = st.one_of(values, st.text(max_size=20), st.just(base64.b64encode(b'{"_type": 1}').decode()))
envelopes = st.fixed_dictionaries({}, optional={
    "payload": _fields, "payloadType": st.one_of(st.just(_TYPE), values),
    "signatures": st.one_of(values, st.lists(st.fixed_dictionaries({}, optional={"sig": _fields, "keyid": _fields}),
                                             max_size=3))}).map(lambda d: json.dumps(d).encode("utf-8"))
attestations = st.one_of(envelopes, values.map(lambda v: json.dumps(v, default=str).encode("utf-8")),
                         st.sampled_from(_RAW), st.binary(max_size=64))


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """A folder rendered and signed once; each example replaces its attestation."""
    from click.testing import CliRunner

    from gpuconf.cli import main

    here = tmp_path_factory.mktemp("attested")
    shutil.copy(ROOT / "examples" / "single-pool.yaml", here / "intent.yaml")
    private, public = _keys(here, "ed25519")
    result = CliRunner().invoke(main, ["render", str(here / "intent.yaml"), "-o", str(here / "out"), "--attest",
                                       "--sign-key", str(private)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return here, public


@_SETTINGS
@given(text=attestations)
@example(text=json.dumps({"payloadType": _TYPE, "payload": 7, "signatures": [{"sig": "AA=="}]}).encode())
@example(text=json.dumps({"payloadType": _TYPE, "payload": "e30=", "signatures": [{"sig": ["x"]}]}).encode())
@example(text=json.dumps({"payloadType": _TYPE, "payload": "e30=", "signatures": [{"sig": "AA==", "keyid": 3}]}).encode())
@example(text=_DEEP)
@example(text=json.dumps({"payloadType": _TYPE, "payload": base64.b64encode(_DEEP).decode(),
                          "signatures": [{"sig": "AA=="}]}).encode())
def test_any_attestation_is_verified_or_refused_with_a_reason(run, signed, text):
    here, public = signed
    folder = here / "out" / "lab"
    (folder / "attestation.intoto.json").write_bytes(text)
    note(repr(text[:300]))
    before = sorted((p.name, p.read_bytes()) for p in folder.rglob("*") if p.is_file())
    for extra in (("--key", str(public)), ("--skip-signature",), ()):
        _outcome_is_clean(run("verify", str(folder), *extra))
    _outcome_is_clean(run("render", str(here / "intent.yaml"), "-o", str(here / "out"), "--attest", "--check"))
    assert sorted((p.name, p.read_bytes()) for p in folder.rglob("*") if p.is_file()) == before

"""`render --attest`: an in-toto Statement v1 with the SLSA provenance v1 predicate for every folder gpuconf writes,
optionally signed as a DSSE envelope; and the bounded reading of an attestation that `gpuconf verify` and
`render --check --attest` share (gpuconf/output/attestcheck.py checks a folder against it).

Field names and URIs: in-toto/attestation v1.2.0 spec/v1/statement.md and envelope.md; slsa-framework/slsa v1.2
docs/spec/v1.2/build-provenance.md (facts: shared/reference/provenance/facts.md, sections 1-3). The statement has no
time in it and nothing of the machine or of the folder it was written to, so the same inputs give the same bytes.

What binds a statement (issue 45, item 1): its subjects are every file of the folder, the file record included (so
the record is attested: ownership of a file rests on it), the attestation itself aside; externalParameters name the
cluster (and the fleet) the folder is of; resolvedDependencies hold the digest of every input file (intent; fleet,
base, layers, overlay; image lock), each named relative to its repository's top, of gpuconf's data (the catalogue,
the chart's facts) and of the chart archive those facts were read from; runDetails.builder names gpuconf's version
and the commit it was built from.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re

from .. import __commit__, __dirty__, __version__
from .jsonbound import MAX_ATTESTATION_BYTES, Unreadable, bounded_json
from .writer import ATTESTATION, RECORD

__all__ = ["ATTESTATION", "MAX_ATTESTATION_BYTES", "RECORD", "Unreadable", "bounded_json"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
#: The payloadType cosign requires exactly (pkg/cosign/verify.go, facts §5), and in-toto's envelope layer allows.
PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: What a gpuconf render is; its parameters are the externalParameters below (docs/how-to/provenance.md). v2: the
#: record among the subjects, the fleet, the image lock and the chart archive among the dependencies.
BUILD_TYPE = "urn:gpuconf:buildType:render:v2"
BUILDER_ID = "urn:gpuconf:builder:cli"
#: gpuconf's data files a render reads, each named by its role (profiles/).
DATA_FILES = (("catalogue", "gpus.json"), ("platforms", "platforms.json"), ("dcgm-metrics", "dcgm-metrics.json"),
              ("hazards", "hazards.json"))
#: The roles of the files a render was made from (what `verify --intent` compares).
INPUT_ROLES = ("intent", "fleet", "base", "layer", "overlay", "image-lock")
#: Not a subject: the attestation cannot list its own digest.
UNATTESTED = frozenset({ATTESTATION})

#: The most signatures an envelope may carry (gpuconf writes one).
MAX_SIGNATURES = 16
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def sha256(data: bytes) -> str:
    """Lowercase hex sha256, as in-toto's DigestSet writes it."""
    return hashlib.sha256(data).hexdigest()


def builder() -> dict:
    """runDetails.builder: gpuconf, by the version it was built as and the commit it was built from (both from git:
    setuptools-scm at build time; docs/getting-started/install.md)."""
    version = {"gpuconf": __version__}
    if __commit__:
        version["commit"] = __commit__
    if __dirty__:
        version["uncommittedChanges"] = "true"
    return {"id": BUILDER_ID, "version": version}


def _chart_dependencies(chart_versions: list[str], chart_location: str | None,
                        chart_digest: str | None = None) -> list[dict]:
    """The chart facts of each chart version the render used, the chart archive they were read from (its sha256:
    the `digest` the Helm repository index records for it), and the OCI manifest the delivery pins
    (spec.delivery.chartDigest)."""
    from .. import catalog

    out = []
    for version in sorted(set(chart_versions)):
        found = catalog.chart_facts_file(version)
        if found is None:
            continue
        name, text, _ = found
        out.append({"name": name, "digest": {"sha256": sha256(text.encode("utf-8"))},
                    "annotations": {"gpuconf_role": "chart-facts"}})
        inputs = json.loads(text).get("generated", {}).get("inputs", {})
        archives = sorted((k, v) for k, v in inputs.items() if k.endswith((".tgz", ".tar.gz"))
                          and isinstance(v, str) and v.startswith("sha256:"))
        for archive, digest in archives[:1]:
            entry = {"name": archive.rsplit("/", 1)[-1], "digest": {"sha256": digest.removeprefix("sha256:")},
                     "annotations": {"gpuconf_role": "chart", "chartVersion": version}}
            if chart_location:
                entry["downloadLocation"] = chart_location
            out.append(entry)
        if chart_digest:
            out.append({"name": f"{chart_location}/gpu-operator:{version}" if chart_location else "gpu-operator",
                        "digest": {"sha256": chart_digest.removeprefix("sha256:")},
                        "annotations": {"gpuconf_role": "chart-manifest", "chartVersion": version}})
    return out


def _data_dependencies() -> list[dict]:
    """The digests of gpuconf's own facts a render used (the GPU catalogue, platforms, metrics, hazards)."""
    from .. import catalog

    out = []
    for role, name in DATA_FILES:
        entry = catalog.data_file(name)
        if not entry.is_file():  # a profile this build does not have
            continue
        out.append({"name": f"profiles/{name}", "digest": {"sha256": sha256(entry.read_bytes())},
                    "annotations": {"gpuconf_role": role}})
    return out


def statement(name: str, files: dict[str, str], command: str, inputs: list[tuple[str, str, str]],
              chart_versions: list[str], fleet: str | None = None, chart_location: str | None = None,
              chart_digest: str | None = None) -> dict:
    """The Statement of one folder: its files (relative path -> text as written, the record included), the command
    that renders it, its input files as (role, name, sha256), the chart versions whose defaults it used, the fleet
    it belongs to and where its chart is fetched from."""
    subjects = [{"name": rel, "digest": {"sha256": sha256(text.encode("utf-8"))}}
                for rel, text in sorted(files.items()) if rel not in UNATTESTED]
    dependencies = [{"name": file, "digest": {"sha256": digest}, "annotations": {"gpuconf_role": role}}
                    for role, file, digest in inputs]
    parameters = {"command": command, "cluster": name, "inputs": [file for _, file, _ in inputs]}
    if fleet is not None:
        parameters["fleet"] = fleet
    build = {"buildType": BUILD_TYPE, "externalParameters": parameters,
             "resolvedDependencies": dependencies + _chart_dependencies(chart_versions, chart_location, chart_digest)
             + _data_dependencies()}
    if chart_versions:
        build["internalParameters"] = {"chartVersions": sorted(set(chart_versions))}
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE,
            "predicate": {"buildDefinition": build, "runDetails": {"builder": builder()}}}


def serialise(document: dict) -> str:
    """A statement or envelope as gpuconf writes it: indented, keys sorted, one final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def attestation_text(statement_doc: dict, signer=None) -> str:
    """The attestation file: the statement itself, or with a signer (signing.load_signer) a DSSE envelope whose
    payload is the statement's bytes."""
    body = serialise(statement_doc)
    if signer is None:
        return body
    from .signing import envelope

    return serialise(envelope(body.encode("utf-8"), PAYLOAD_TYPE, signer))


# --- reading an attestation, bounded -----------------------------------------------------------------------------


def b64(text: str) -> bytes:
    """Standard or URL-safe base64, as DSSE verifiers must accept (protocol.md); raises Unreadable."""
    try:
        return base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
    except (ValueError, binascii.Error):
        raise Unreadable("the payload is not base64") from None


def is_envelope(doc: dict) -> bool:
    """True for a document that means to be a DSSE envelope (not a plain statement)."""
    return "payloadType" in doc or "signatures" in doc or "payload" in doc


def envelope_problem(doc: dict) -> str | None:
    """What makes doc no DSSE envelope gpuconf reads (types, counts), or None."""
    if doc.get("payloadType") != PAYLOAD_TYPE:
        shown = doc.get("payloadType")
        shown = repr(shown) if isinstance(shown, str) and len(shown) <= 80 else f"a {type(shown).__name__}"
        return f"payloadType is {shown}, not {PAYLOAD_TYPE!r}"
    if not isinstance(doc.get("payload"), str):
        return f"the payload is a {type(doc.get('payload')).__name__}, not a base64 string"
    signatures = doc.get("signatures")
    if not isinstance(signatures, list):
        return f"signatures is a {type(signatures).__name__}, not a list"
    if not signatures:
        return "the envelope has no signatures"
    if len(signatures) > MAX_SIGNATURES:
        return f"the envelope has {len(signatures)} signatures; gpuconf reads at most {MAX_SIGNATURES}"
    for i, signature in enumerate(signatures):
        if not isinstance(signature, dict):
            return f"signatures[{i}] is a {type(signature).__name__}, not an object"
        if not isinstance(signature.get("sig"), str) or not signature["sig"]:
            return f"signatures[{i}].sig is a {type(signature.get('sig')).__name__}, not a base64 string"
        if "keyid" in signature and not isinstance(signature["keyid"], str):
            return f"signatures[{i}].keyid is a {type(signature['keyid']).__name__}, not a string"
    return None


def envelope_payload(data: bytes) -> bytes | None:
    """The payload of an attestation file that is a DSSE envelope gpuconf reads (not verified), or None for anything
    else (a plain statement, or a file that is not one: render --check then finds it stale)."""
    try:
        doc = bounded_json(data)
        if isinstance(doc, dict) and is_envelope(doc) and envelope_problem(doc) is None:
            return b64(doc["payload"])
    except Unreadable:
        pass
    return None


def is_sha256(value: object) -> bool:
    """True for a lowercase hex sha256."""
    return isinstance(value, str) and bool(_HEX64.match(value))

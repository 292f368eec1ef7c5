"""`render --attest` and `gpuconf verify`: an in-toto Statement v1 with the SLSA provenance v1 predicate for every
folder gpuconf writes, optionally signed as a DSSE envelope, and the closed-world check of a folder against it.

Field names and URIs: in-toto/attestation v1.2.0 spec/v1/statement.md and envelope.md; slsa-framework/slsa v1.2
docs/spec/v1.2/build-provenance.md (facts: shared/reference/provenance/facts.md, sections 1-3). The statement has no
time in it, so the same inputs give the same bytes; the subjects are every file gpuconf wrote into the folder except
its file record (which lists the attestation's own digest) and the attestation itself, with the sha256 of the bytes
the writer writes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field

from .. import __commit__, __dirty__, __version__
from .writer import RECORD

#: The attestation's file name in each cluster folder (a stand-alone envelope SHOULD end .json: DSSE envelope.md).
ATTESTATION = "attestation.intoto.json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
#: The payloadType cosign requires exactly (pkg/cosign/verify.go, facts §5), and in-toto's envelope layer allows.
PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: What a gpuconf render is; its parameters are the externalParameters below (docs/reference/attestation.md).
BUILD_TYPE = "urn:gpuconf:buildType:render:v1"
BUILDER_ID = "urn:gpuconf:builder:cli"
#: gpuconf's data files a render reads, each named by its role (profiles/; the chart's by version).
DATA_FILES = (("catalogue", "gpus.json"), ("platforms", "platforms.json"), ("dcgm-metrics", "dcgm-metrics.json"),
              ("hazards", "hazards.json"))
#: Not subjects: the record lists the attestation's digest, and the attestation cannot list its own.
UNATTESTED = frozenset({RECORD, ATTESTATION})


def sha256(data: bytes) -> str:
    """Lowercase hex sha256, as in-toto's DigestSet writes it."""
    return hashlib.sha256(data).hexdigest()


def _data_dependencies(chart_versions: list[str]) -> list[dict]:
    """The digests of the profiles a render used: the GPU catalogue and the other facts, and the chart defaults of
    each pinned chart version."""
    from .. import catalog

    files = [(role, name) for role, name in DATA_FILES]
    files += [("chart-defaults", f"charts/{version}.json") for version in sorted(set(chart_versions))]
    out = []
    for role, name in files:
        first, *rest = name.split("/")
        entry = catalog.data_file(first)
        for part in rest:
            entry = entry.joinpath(part)
        if not entry.is_file():  # a profile this build does not have (hazards.json before it was derived)
            continue
        out.append({"name": f"profiles/{name}", "uri": f"pkg:pypi/gpuconf@{__version__}#profiles/{name}",
                    "digest": {"sha256": sha256(entry.read_bytes())}, "annotations": {"gpuconf_role": role}})
    return out


def statement(name: str, files: dict[str, str], command: str, inputs: list[tuple[str, str, str]],
              chart_versions: list[str]) -> dict:
    """The Statement of one folder: its files (relative path -> text as written), the command that renders it,
    its input files as (role, name, sha256), and the chart versions whose defaults it used."""
    subjects = [{"name": rel, "digest": {"sha256": sha256(text.encode("utf-8"))}}
                for rel, text in sorted(files.items()) if rel not in UNATTESTED]
    dependencies = [{"name": file, "digest": {"sha256": digest}, "annotations": {"gpuconf_role": role}}
                    for role, file, digest in inputs]
    build = {"buildType": BUILD_TYPE,
             "externalParameters": {"command": command, "cluster": name,
                                    "inputs": [file for _, file, _ in inputs]},
             "resolvedDependencies": dependencies + _data_dependencies(chart_versions)}
    if chart_versions:
        build["internalParameters"] = {"chartVersions": sorted(set(chart_versions))}
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE,
            "predicate": {"buildDefinition": build, "runDetails": {"builder": builder()}}}


def builder() -> dict:
    """runDetails.builder: gpuconf, by the version it was built as and the commit it was built from (both from git:
    setuptools-scm at build time; docs/getting-started/install.md)."""
    version = {"gpuconf": __version__}
    if __commit__:
        version["commit"] = __commit__
    if __dirty__:
        version["uncommittedChanges"] = "true"
    return {"id": BUILDER_ID, "version": version}


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


def envelope_payload(text: str) -> bytes | None:
    """The payload of an attestation file that is a DSSE envelope (not verified), or None for anything else."""
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and "payloadType" in doc and isinstance(doc.get("payload"), str):
            return _b64(doc["payload"])
    except (ValueError, binascii.Error):
        pass
    return None


def _b64(text: str) -> bytes:
    """Standard or URL-safe base64, as DSSE verifiers must accept (protocol.md)."""
    return base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)


# --- gpuconf verify --------------------------------------------------------------------------------------------------


class NoAttestation(Exception):
    """The folder has no attestation, or cannot be read (exit 2)."""


@dataclass
class Verdict:
    """What `gpuconf verify` found: each problem names a file (or the attestation) and what is wrong."""

    folder: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    subjects: int = 0
    signed: bool = False

    @property
    def ok(self) -> bool:
        """True when every file matches the attestation and nothing is wrong with it."""
        return not self.problems


def verify_folder(path: str, key=None) -> Verdict:
    """Check a rendered folder against its attestation: every file matches its subject, no file is unlisted, no
    subject is missing; with key (signing.load_public_key), the envelope's signature verifies with it. Raises
    NoAttestation when the folder or its attestation is missing or unreadable."""
    from .writer import OutputError, inspect

    try:
        folder = inspect(path)
    except OutputError as exc:
        raise NoAttestation(str(exc)) from None
    where = f"{path.rstrip('/')}/{ATTESTATION}"
    if folder.kind != "folder":
        raise NoAttestation(f"{path}: " + ("does not exist" if folder.kind == "missing" else "not a folder"))
    if ATTESTATION not in folder.files:
        raise NoAttestation(f"{path}: has no {ATTESTATION} (render it with `gpuconf render --attest`)")
    verdict = Verdict(path)
    raw = folder.files[ATTESTATION] or b""
    payload = _statement_bytes(raw, key, where, verdict)
    if payload is None:
        return verdict
    try:
        doc = json.loads(payload)
    except ValueError as exc:
        verdict.problems.append(f"{where}: the statement is not JSON ({exc})")
        return verdict
    subjects = _subjects(doc, where, verdict)
    if subjects is None:
        return verdict
    verdict.subjects = len(subjects)
    found: list[tuple[str, str]] = []  # (file, what is wrong), said in the order of the files
    for rel in set(folder.files) - UNATTESTED:
        data = folder.files[rel] or b""
        if rel not in subjects:
            found.append((rel, "not in the attestation (a file added after the render)"))
        elif sha256(data) != subjects[rel]:
            found.append((rel, f"changed since the render (sha256 {sha256(data)}, attested {subjects[rel]})"))
    found += [(rel, "attested but missing") for rel in set(subjects) - set(folder.files)]
    found += [(rel, "not a regular file (gpuconf writes only files)") for rel in folder.others]
    verdict.problems += [f"{rel}: {what}" for rel, what in sorted(found)]
    return verdict


def _statement_bytes(raw: bytes, key, where: str, verdict: Verdict) -> bytes | None:
    """The statement's bytes: the file itself, or a DSSE envelope's payload (its signature verified when key is
    given); None, with the problem said, when there is none to check."""
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        verdict.problems.append(f"{where}: not JSON ({exc})")
        return None
    if not isinstance(doc, dict):
        verdict.problems.append(f"{where}: not a JSON object")
        return None
    if "payloadType" not in doc and "signatures" not in doc:
        if key is not None:
            verdict.problems.append(f"{where}: not signed (a plain statement, not a DSSE envelope); render it with "
                                    "--sign-key")
            return None
        return raw
    verdict.signed = True
    if doc.get("payloadType") != PAYLOAD_TYPE:
        verdict.problems.append(f"{where}: payloadType is {doc.get('payloadType')!r}, not {PAYLOAD_TYPE!r}")
        return None
    if key is None:
        verdict.notes.append(f"{where}: the signature was not checked (give --key PUBLIC_KEY)")
        try:
            return _b64(str(doc.get("payload", "")))
        except (ValueError, binascii.Error):
            verdict.problems.append(f"{where}: the payload is not base64")
            return None
    from .signing import verified_payload

    payload, problem = verified_payload(doc, key)
    if problem:
        verdict.problems.append(f"{where}: {problem}")
    return payload


def _subjects(doc, where: str, verdict: Verdict) -> dict[str, str] | None:
    """name -> sha256 of a statement's subjects; None, with the problem said, for a statement that is not gpuconf's."""
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT_TYPE:
        verdict.problems.append(f"{where}: not an in-toto Statement v1 (_type must be {STATEMENT_TYPE})")
        return None
    if doc.get("predicateType") != PREDICATE_TYPE:
        verdict.problems.append(f"{where}: predicateType is {doc.get('predicateType')!r}, not {PREDICATE_TYPE}")
        return None
    out: dict[str, str] = {}
    subjects = doc.get("subject")
    for i, subject in enumerate(subjects if isinstance(subjects, list) else [None]):
        name = subject.get("name") if isinstance(subject, dict) else None
        digest = subject.get("digest") if isinstance(subject, dict) else None
        value = digest.get("sha256") if isinstance(digest, dict) else None
        if not isinstance(name, str) or not isinstance(value, str) or name in out:
            verdict.problems.append(f"{where}: subject[{i}] needs a unique name and a sha256 digest")
            return None
        out[name] = value
    return out


def verdict_lines(verdict: Verdict) -> list[str]:
    """The problems, then the summary line."""
    what = "a signed envelope" if verdict.signed else "an unsigned statement"
    if verdict.ok:
        return [f"{verdict.folder}: verified: {verdict.subjects} files match {ATTESTATION} ({what})"]
    return verdict.problems + [f"{verdict.folder}: FAILED: {len(verdict.problems)} "
                               f"problem{'s' if len(verdict.problems) != 1 else ''}"]


"""`gpuconf verify`: a rendered folder checked against its attestation, closed-world and failing closed.

Every file matches its subject's digest (hashed a chunk at a time: a file of any size takes a megabyte of memory),
no file is there that the statement does not list, no subject is missing; the statement is of this folder's cluster;
given the inputs (`--intent`), it was made from exactly those files. The signature decides the rest, and every
verdict says which of three it is (SIGNATURE_STATES): with a public key the envelope's signature must verify; without
one, a signed envelope is "signature not checked" and an unsigned statement "unsigned", and both fail unless the user
asks for a check of the digests only (skip_signature). The attestation is read within a size and a depth bound
(gpuconf/output/attest.py); whatever it holds of the wrong type is a problem with the reason, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..escape import show_path, term_text
from .attest import (ATTESTATION, INPUT_ROLES, MAX_ATTESTATION_BYTES, PREDICATE_TYPE, STATEMENT_TYPE, UNATTESTED,
                     Unreadable, b64, bounded_json, envelope_problem, is_envelope, is_sha256)

SIGNATURE_CHECKED = "signature checked"
SIGNATURE_NOT_CHECKED = "signature not checked"
UNSIGNED = "unsigned"
SIGNATURE_STATES = (SIGNATURE_CHECKED, SIGNATURE_NOT_CHECKED, UNSIGNED)
#: What a problem about the signature tells the user to do (docs/how-to/provenance.md says where the key comes from).
_GIVE_KEY = ("give --key PUBLIC_KEY (from a CI secret, or pinned with --key-fingerprint), or --skip-signature to "
             "check the digests only")


class NoAttestation(Exception):
    """The folder has no attestation, or cannot be read (exit 2)."""


@dataclass
class Verdict:
    """What `gpuconf verify` found: each problem names a file (or the attestation) and what is wrong."""

    folder: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    subjects: int = 0
    signature: str | None = None  # one of SIGNATURE_STATES, once the attestation was read that far
    inputs_checked: bool = False

    @property
    def ok(self) -> bool:
        """True when every file matches the attestation and nothing is wrong with it."""
        return not self.problems


def verify_folder(path: str, key=None, skip_signature: bool = False,
                  expected_inputs: list[tuple[str, str, str]] | None = None) -> Verdict:
    """Check a rendered folder against its attestation (see the module's docstring). key: signing.load_public_key's;
    expected_inputs: the (role, name, sha256) of the files the folder must have been rendered from. Raises
    NoAttestation when the folder or its attestation is missing or unreadable."""
    from .writer import OutputError, file_sha256, inspect

    try:
        folder = inspect(path, contents=False)
    except OutputError as exc:
        raise NoAttestation(str(exc)) from None
    shown = show_path(path.rstrip("/") or path)
    if folder.kind != "folder":
        raise NoAttestation(f"{shown}: " + ("does not exist" if folder.kind == "missing" else "not a folder"))
    if ATTESTATION not in folder.files:
        raise NoAttestation(f"{shown}: has no {ATTESTATION} (render it with `gpuconf render --attest`)")
    verdict = Verdict(shown)
    where = f"{shown}/{ATTESTATION}"
    doc = _statement(Path(path) / ATTESTATION, key, skip_signature, where, verdict)
    if doc is None:
        return verdict
    subjects = _subjects(doc, where, verdict)
    if subjects is None:
        return verdict
    _bound_to(doc, Path(path), where, verdict, expected_inputs)
    verdict.subjects = len(subjects)
    found: list[tuple[str, str]] = []  # (file, what is wrong), said in the order of the files
    for rel in set(folder.files) - UNATTESTED:
        if rel not in subjects:
            found.append((rel, "not in the attestation (a file added after the render)"))
            continue
        try:
            digest = file_sha256(Path(path) / rel)
        except OutputError as exc:
            raise NoAttestation(str(exc)) from None
        if digest != subjects[rel]:
            found.append((rel, f"changed since the render (sha256 {digest}, attested {subjects[rel]})"))
    found += [(rel, "attested but missing") for rel in set(subjects) - set(folder.files)]
    found += [(rel, "not a regular file (gpuconf writes only files)") for rel in folder.others]
    verdict.problems += [f"{show_path(rel)}: {what}" for rel, what in sorted(found)]
    return verdict


def _read(path: Path, where: str) -> bytes:
    """The attestation's bytes, read no further than the size bound (one byte more tells it is over)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ATTESTATION_BYTES + 1)
    except OSError as exc:
        raise NoAttestation(f"{where}: {exc.strerror or exc}") from None
    return data


def _statement(path: Path, key, skip_signature: bool, where: str, verdict: Verdict) -> dict | None:
    """The statement: the file itself, or a DSSE envelope's payload (its signature verified when key is given); the
    verdict's signature state set; None, with the problem said, when there is none to check."""
    doc = _object(_read(path, where), f"{where}: ", verdict)
    if doc is None:
        return None
    if not is_envelope(doc):
        verdict.signature = UNSIGNED
        if key is not None:
            verdict.problems.append(f"{where}: unsigned (a plain statement, not a DSSE envelope), but --key expects "
                                    "a signature; render it with --sign-key")
        elif not skip_signature:
            verdict.problems.append(f"{where}: unsigned: nothing shows who made it; {_GIVE_KEY}")
        return doc
    problem = envelope_problem(doc)
    if problem is not None:
        verdict.problems.append(f"{where}: not a DSSE envelope gpuconf reads: {problem}")
        return None
    if key is None:
        verdict.signature = SIGNATURE_NOT_CHECKED
        if not skip_signature:
            verdict.problems.append(f"{where}: signature not checked: {_GIVE_KEY}")
        try:
            payload = b64(doc["payload"])
        except Unreadable as exc:
            verdict.problems.append(f"{where}: {exc}")
            return None
    else:
        from .signing import verified_payload

        payload, problem = verified_payload(doc, key)
        if problem or payload is None:
            verdict.problems.append(f"{where}: {problem}")
            return None
        verdict.signature = SIGNATURE_CHECKED
    return _object(payload, f"{where}: the payload is ", verdict)


def _object(data: bytes, said: str, verdict: Verdict) -> dict | None:
    """data as a JSON object, read within the bounds; None, with the problem said after said, when it is not one."""
    try:
        doc = bounded_json(data)
    except Unreadable as exc:
        verdict.problems.append(f"{said}{exc}")
        return None
    if not isinstance(doc, dict):
        verdict.problems.append(f"{said}not a JSON object")
        return None
    return doc


def _subjects(doc: dict, where: str, verdict: Verdict) -> dict[str, str] | None:
    """name -> sha256 of a statement's subjects; None, with the problem said, for a statement that is not gpuconf's."""
    if doc.get("_type") != STATEMENT_TYPE:
        verdict.problems.append(f"{where}: not an in-toto Statement v1 (_type must be {STATEMENT_TYPE})")
        return None
    if doc.get("predicateType") != PREDICATE_TYPE:
        verdict.problems.append(f"{where}: predicateType is not {PREDICATE_TYPE}")
        return None
    out: dict[str, str] = {}
    subjects = doc.get("subject")
    for i, subject in enumerate(subjects if isinstance(subjects, list) and subjects else [None]):
        name = subject.get("name") if isinstance(subject, dict) else None
        digest = subject.get("digest") if isinstance(subject, dict) else None
        value = digest.get("sha256") if isinstance(digest, dict) else None
        if not isinstance(name, str) or not is_sha256(value) or name in out:
            verdict.problems.append(f"{where}: subject[{i}] needs a unique name and a sha256 digest")
            return None
        out[name] = value
    return out


def _dig(doc: object, *keys: str) -> object:
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _bound_to(doc: dict, folder: Path, where: str, verdict: Verdict,
              expected: list[tuple[str, str, str]] | None) -> None:
    """The statement is of this folder's cluster (a folder copied over another's fails) and, given the inputs, was
    made from exactly them (an older render, a rollback, fails)."""
    build = _dig(doc, "predicate", "buildDefinition")
    cluster = _dig(build, "externalParameters", "cluster")
    name = folder.resolve().name
    if cluster != name:
        said = repr(term_text(cluster)) if isinstance(cluster, str) else "not named"
        verdict.problems.append(f"{where}: the statement is of cluster {said}, but this folder is {term_text(name)!r}"
                                " (a folder copied over another, or renamed)")
    if expected is None:
        return
    verdict.inputs_checked = True
    recorded: dict[tuple[str, str], str] = {}
    for dependency in _dig(build, "resolvedDependencies") or []:
        role = _dig(dependency, "annotations", "gpuconf_role")
        file, digest = _dig(dependency, "name"), _dig(dependency, "digest", "sha256")
        if role in INPUT_ROLES and isinstance(file, str) and isinstance(digest, str):
            recorded[(role, file)] = digest
    given = {(role, file): digest for role, file, digest in expected}
    for (role, file), digest in sorted(given.items()):
        label = f"{where}: {show_path(file)} ({role})"
        if (role, file) not in recorded:
            verdict.problems.append(f"{label}: not among the inputs the statement was made from")
        elif recorded[(role, file)] != digest:
            verdict.problems.append(f"{label}: the statement was made from sha256 {term_text(recorded[(role, file)])},"
                                    f" the given file is sha256 {digest} (an older or a newer render)")
    for role, file in sorted(set(recorded) - set(given)):
        verdict.problems.append(f"{where}: {show_path(file)} ({term_text(role)}): the statement was made from it, "
                                "but the given inputs do not name it")


def verdict_lines(verdict: Verdict) -> list[str]:
    """The problems, then the summary line, which says which of SIGNATURE_STATES applies."""
    state = verdict.signature or "attestation unreadable"
    inputs = ", inputs checked" if verdict.inputs_checked else ""
    if verdict.ok:
        return [f"{verdict.folder}: verified: {verdict.subjects} files match {ATTESTATION} ({state}{inputs})"]
    return verdict.problems + [f"{verdict.folder}: FAILED: {len(verdict.problems)} "
                               f"problem{'s' if len(verdict.problems) != 1 else ''} ({state}{inputs})"]


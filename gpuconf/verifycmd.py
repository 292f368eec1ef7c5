"""`gpuconf verify`'s command: the public key (pinned by its fingerprint, and never one the folder's own repository
holds unless pinned), the inputs the folder must have been made from, and the verdict (gpuconf/output/attestcheck.py).
"""

from __future__ import annotations

from pathlib import Path

from .escape import term_text
from .outcome import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Outcome, UsageProblem


def verify(folder: str, key_file: str | None, fingerprint: str | None, skip_signature: bool,
           intent: str | None) -> Outcome:
    """Check FOLDER against its attestation: exit 0 verified, 1 with each problem, 2 when it cannot be checked."""
    from .output.attestcheck import NoAttestation, verdict_lines, verify_folder

    if fingerprint is not None and key_file is None:
        raise UsageProblem("--key-fingerprint pins the key --key reads: give --key too")
    if skip_signature and key_file is not None:
        raise UsageProblem("--skip-signature and --key contradict each other: a key asks for the signature")
    try:
        key = _key(folder, key_file, fingerprint) if key_file is not None else None
    except _Refused as exc:
        return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
    expected = None
    if intent is not None:
        expected, failed = _expected_inputs(intent, Path(folder).resolve().name)
        if failed is not None:
            return failed
    try:
        verdict = verify_folder(folder, key, skip_signature, expected)
    except NoAttestation as exc:
        return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
    *problems, summary = verdict_lines(verdict)
    return Outcome("".join(line + "\n" for line in problems),
                   [*(f"gpuconf: note: {note}" for note in verdict.notes), summary],
                   EXIT_OK if verdict.ok else EXIT_FINDINGS)


class _Refused(Exception):
    """The key cannot be used (exit 2)."""


def _key(folder: str, path: str, fingerprint: str | None):
    """The public key in path; _Refused when it cannot be read, does not have the pinned fingerprint, or lies in
    the repository under review without a pin (a pull request could have replaced it)."""
    from .output.signing import KeyProblem, fingerprint_of, load_public_key
    from .repository import REPOSITORY, top_of

    try:
        key = load_public_key(path)
        actual = fingerprint_of(path)
    except KeyProblem as exc:
        raise _Refused(str(exc)) from None
    if fingerprint is not None:
        wanted = fingerprint.strip().lower().removeprefix("sha256:")
        if wanted != actual:
            raise _Refused(f"{term_text(path)}: the key's fingerprint is SHA256:{actual}, not the pinned {fingerprint} "
                               "(openssl pkey -pubin -in KEY -outform DER | sha256sum)")
        return key
    top = top_of(Path(folder).resolve())
    real = Path(path).resolve()
    if real == top or top in real.parents:
        raise _Refused(f"{term_text(path)}: the public key is inside {REPOSITORY.replace('the file', 'the folder')} that is "
                           "under review: a change to it can replace the key. Read the key from a CI secret, or pin "
                           "it with --key-fingerprint SHA256:<hex>")
    return key


def _expected_inputs(intent: str, cluster: str) -> tuple[list | None, Outcome | None]:
    """The (role, name, sha256) of the files that render cluster from intent (an intent or a fleet file), or the
    Outcome that says why there are none."""
    from .findings import format_text
    from .pipeline import render_any
    from .render.tree import VerificationError

    try:
        rendered = render_any(intent, ".")
    except VerificationError as exc:
        return None, Outcome(stderr=[f"gpuconf: internal error: generated output failed verification "
                                     f"({len(exc.problems)} problems)"], code=EXIT_INTERNAL)
    if not rendered.ok:
        return None, Outcome(format_text(rendered.findings), [f"{rendered.file}: invalid; the folder cannot be "
                                                              "checked against it"], EXIT_FINDINGS)
    if cluster not in rendered.inputs:
        return None, Outcome(stderr=[f"gpuconf: {term_text(rendered.file)} renders no cluster {term_text(cluster)!r} "
                                     f"(it renders {', '.join(sorted(rendered.inputs))}): name the folder's own "
                                     "input"],
                             code=EXIT_FINDINGS)
    return rendered.inputs[cluster], None

"""The reader, error, output format and command line that every derive script under tools/ shares."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_REFERENCE = REPO_ROOT.parent / "shared" / "reference"
#: The script that writes profiles/ and tests/fixtures/ (each file's header names it).
REFERENCE_SCRIPT = "tools/derive_reference.py"


class DeriveError(Exception):
    """An input is missing, malformed or disagrees with another input, a citation does not hold, or a schema uses a
    construct the converter does not translate."""


def sha256(data: bytes) -> str:
    """The digest a generated file records for one of its inputs."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_input(path: Path) -> bytes:
    """The bytes of one required input file, failing when it is missing."""
    if not path.is_file():
        raise DeriveError(f"required input {path} is missing")
    return path.read_bytes()


def load_yaml(data: Any, where: str, loader: YAML | None = None, every: bool = False) -> Any:
    """One YAML 1.2 document (or with every, the list of its non-empty documents) of UTF-8 bytes or a stream,
    failing with where when it is malformed."""
    try:
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        yaml = loader or YAML(typ="safe", pure=True)
        return [doc for doc in yaml.load_all(data) if doc is not None] if every else yaml.load(data)
    except Exception as exc:  # ruamel raises several unrelated types; all mean the input is malformed
        raise DeriveError(f"{where}: not valid YAML: {exc}") from exc


class Reference:
    """Read access to the reference folder that records the hash of what was read."""

    def __init__(self, root: Path) -> None:
        """Open the folder, failing when it does not exist."""
        if not root.is_dir():
            raise DeriveError(f"reference folder {root} does not exist (pass --reference)")
        self.root = root
        self.hashes: dict[str, str] = {}
        self._yaml = YAML(typ="safe", pure=True)

    def bytes(self, rel: str) -> bytes:
        """The bytes of one input file, its hash recorded."""
        data = read_input(self.root / rel)
        self.hashes[rel] = sha256(data)
        return data

    def text(self, rel: str) -> str:
        """The text of one input file."""
        return self.bytes(rel).decode("utf-8")

    def yaml(self, rel: str) -> Any:
        """One input file parsed as YAML 1.2."""
        return load_yaml(self.bytes(rel), rel, self._yaml)

    def yaml_all(self, rel: str) -> list[Any]:
        """Every non-empty YAML document of one input file."""
        return load_yaml(self.bytes(rel), rel, self._yaml, every=True)

    def json(self, rel: str) -> Any:
        """One input file parsed as JSON."""
        data = self.bytes(rel)
        try:
            return json.loads(data)
        except ValueError as exc:
            raise DeriveError(f"{rel}: not valid JSON: {exc}") from exc

    def take(self, *rels: str) -> dict[str, str]:
        """The recorded hashes of the given inputs."""
        return {rel: self.hashes[rel] for rel in rels if rel in self.hashes}


def require(mapping: dict[str, Any], key: str, where: str) -> Any:
    """mapping[key], or a DeriveError naming where the key was expected."""
    if not isinstance(mapping, dict) or key not in mapping:
        raise DeriveError(f"{where}: missing key {key!r}")
    return mapping[key]


def markdown_tables(text: str, where: str) -> list[list[list[str]]]:
    """Every pipe table of a Markdown text as rows of stripped cells (header first, the |---| line dropped)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|") and line.rstrip().endswith("|"):
            cells = [cell.strip() for cell in line.strip()[1:-1].split("|")]
            if all(re.fullmatch(r":?-+:?", cell) for cell in cells):
                continue
            if current and len(cells) != len(current[0]):
                raise DeriveError(f"{where}: table row {line!r} has {len(cells)} cells, the header {len(current[0])}")
            current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def markdown_table(text: str, where: str, first_header: str) -> list[dict[str, str]]:
    """The rows (header cell -> cell) of the one table whose first header cell is first_header."""
    found = [t for t in markdown_tables(text, where) if t[0][0] == first_header]
    if len(found) != 1:
        raise DeriveError(f"{where}: expected one table headed {first_header!r}, found {len(found)}")
    header, *rows = found[0]
    return [dict(zip(header, row)) for row in rows]


def dump(data: Any, indent: int = 2) -> bytes:
    """Stable JSON bytes: sorted keys, fixed indent, trailing newline."""
    return (json.dumps(data, indent=indent, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def header(script: str, inputs: dict[str, str], what: str, change: str = "the script or its inputs") -> dict[str, Any]:
    """The self-description every generated file carries (tool, inputs and their hashes, how to regenerate)."""
    return {"command": f"python {script}", "inputs": dict(sorted(inputs.items())), "tool": script,
            "what": f"{what} Generated: do not edit by hand; change {change} and rerun."}


def write(path: Path, data: bytes) -> None:
    """Replace a file atomically, so an interrupted run never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; these files are committed and read by everyone
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def arguments(doc: str | None, check_help: str,
              more: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.ArgumentParser:
    """A derive script's command line: --reference, the script's own options, --check."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE,
                        help="the shared reference folder (default: ../shared/reference next to the repository)")
    if more is not None:
        more(parser)
    parser.add_argument("--check", action="store_true", help=check_help)
    return parser


def settle(outputs: dict[str, bytes], check: bool, leftovers: list[str] | None = None) -> int:
    """Write the outputs that differ from the committed files (with check, name them and write nothing); leftovers
    are committed files nobody derives any more, removed (or named). Returns the exit status."""
    leftovers = leftovers or []
    stale = [rel for rel, data in outputs.items()
             if not (REPO_ROOT / rel).is_file() or (REPO_ROOT / rel).read_bytes() != data]
    if check:
        for rel in stale:
            print(f"stale: {rel}", file=sys.stderr)
        for rel in leftovers:
            print(f"not derived any more: {rel}", file=sys.stderr)
        return 1 if stale or leftovers else 0
    for rel in stale:
        write(REPO_ROOT / rel, outputs[rel])
        print(f"wrote {rel}")
    for rel in leftovers:
        (REPO_ROOT / rel).unlink()
        print(f"removed {rel}")
    if not stale and not leftovers:
        print("up to date")
    return 0


def run(name: str, derive: Callable[[], dict[str, bytes]], check: bool,
        leftovers: Callable[[dict[str, bytes]], list[str]] | None = None) -> int:
    """derive, then settle its outputs; a DeriveError is printed as the script name's error and exits 2."""
    try:
        outputs = derive()
    except DeriveError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    return settle(outputs, check, leftovers(outputs) if leftovers else None)

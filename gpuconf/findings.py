"""Findings: the data every check returns, and the reporters that print them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, order=True)
class Finding:
    """One problem in one file, positioned and explained."""

    file: str
    line: int
    column: int
    severity: str
    code: str
    path: str
    message: str
    hint: str | None = field(default=None, compare=False)

    def text(self) -> str:
        """Render as one line: FILE:LINE:COL: severity CODE path: message (hint: ...), escaped for a terminal or a
        CI log (term_text: a file name or a value cannot break the line or start a workflow command)."""
        from .escape import term_text

        where = f" {self.path}:" if self.path else ":"
        tail = f" (hint: {self.hint})" if self.hint else ""
        return term_text(f"{self.file}:{self.line}:{self.column}: {self.severity} {self.code}{where} {self.message}"
                         f"{tail}")

    def as_dict(self) -> dict:
        """Render as the JSON object documented in docs/reference/findings.md."""
        return asdict(self)


def has_errors(findings: Iterable[Finding]) -> bool:
    """True when any finding is an error (warnings alone do not fail a run)."""
    return any(f.severity == ERROR for f in findings)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Order findings by file and position, then code, so output is stable."""
    return sorted(set(findings), key=lambda f: (f.file, f.line, f.column, f.code, f.path, f.message))


def format_text(findings: Sequence[Finding]) -> str:
    """All findings as text lines, one per finding."""
    return "".join(f.text() + "\n" for f in findings)


def format_json(findings: Sequence[Finding]) -> str:
    """All findings as a JSON array with stable key order."""
    return json.dumps([f.as_dict() for f in findings], indent=2, sort_keys=True) + "\n"


def dotted(loc: Sequence[str | int]) -> str:
    """Turn a location tuple into a field path such as spec.pools[1].gpusPerNode."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}" if _plain(part) else f"[{json.dumps(part)}]"
        else:
            out = str(part)
    return out


def _plain(key: str) -> bool:
    return key.replace("-", "").replace("_", "").isalnum()

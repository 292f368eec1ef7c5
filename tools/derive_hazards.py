#!/usr/bin/env python3
"""Derive gpuconf's known-hazards table (profiles/hazards.json) from the curated tools/reference/hazards.yaml.

Run from the repository root (maintainers only; a user's clone has no reference folder):

    python tools/derive_hazards.py [--reference ../shared/reference] [--charts DIR] [--check]

Before writing, every cited line is checked against the page it cites: the page must hash as the curated file says
(a changed page means its line numbers must be re-checked) and the line must hold each of the entry's words. With
--charts DIR (a folder holding gpu-operator-<version>.tgz of each published chart, or <version>/gpu-operator/
extracted), each chart rule's line must be a `fail` of that chart's templates/validations.yaml whose condition reads
the rule's values paths. The table itself is built from the curated file alone, so tests rebuild it without the
reference. Output is byte-stable. Only the standard library and ruamel.yaml are used.
"""

from __future__ import annotations

import io
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from derivation.common import (  # noqa: E402 - what every derive script shares
    REPO_ROOT, DeriveError, arguments, dump, header, load_yaml, read_input, run, sha256,
)

CURATED = "tools/reference/hazards.yaml"
OUT = "profiles/hazards.json"
SCRIPT = "tools/derive_hazards.py"
DOCS = "gpu-operator/docs"
#: Where each page lives upstream (the reference copies it from NVIDIA/cloud-native-docs).
UPSTREAM = "NVIDIA/cloud-native-docs gpu-operator/"

#: Finding codes of the hazard classes (GC460-GC479 are the hazards' range).
CODES = {
    "GC460": "a pool's driver is one with a known issue for what the pool runs",
    "GC461": "a pool's driver is below what its GPU or stack needs",
    "GC462": "a GPU or feature needs the open GPU kernel modules",
    "GC463": "a feature the pool's GPU and driver do not support together",
    "GC464": "a known issue of the chart, its components or the platform for what the cluster runs",
    "GC467": "(warning) a Kubernetes version outside what the chart and OS are validated with",
    "GC468": "the rendered values trip one of the chart's own fail rules",
}
SEVERITIES = ("error", "warning")
SEEN_BY = ("validate", "audit")
FEATURES = ("mig", "migNextToWhole", "preinstalled", "managed", "dra", "gds", "rdma", "precompiled", "nri", "cdi",
            "crio", "allBalanced")
VERSION_KEYS = ("in", "from", "below", "upTo")
CONDITIONS = {
    "gpus": "list", "drivers": VERSION_KEYS, "charts": ("from", "before"), "migManager": ("from",),
    "toolkit": ("in",), "distributions": "list", "kubernetes": ("from", "outside"), "features": "list",
    "kernelModules": ("notOpen",), "os": "list", "kernels": ("notIn",), "arch": "list", "containerd": ("below",),
}
ENTRY_KEYS = {"id", "code", "severity", "appliesTo", "breaks", "fix", "seenBy", "sources"}
RULE_KEYS = {"id", "when", "capability", "breaks", "source"}
ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
CHART = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DeriveError(f"{where}: needs a non-empty text")
    return " ".join(value.split())


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise DeriveError(f"{where}: needs a non-empty list")
    return [_text(str(v), where) for v in value]


def _keys(mapping: Any, allowed: set[str] | tuple[str, ...], where: str, required: tuple[str, ...] = ()) -> dict:
    if not isinstance(mapping, dict):
        raise DeriveError(f"{where}: needs a mapping")
    extra = sorted(set(mapping) - set(allowed))
    if extra:
        raise DeriveError(f"{where}: unknown key {extra[0]!r} (known: {', '.join(sorted(allowed))})")
    for key in required:
        if key not in mapping:
            raise DeriveError(f"{where}: lacks {key!r}")
    return mapping


def _source(raw: Any, pages: dict[str, str], where: str) -> dict[str, Any]:
    src = _keys(raw, ("page", "line", "words"), where, ("page", "line", "words"))
    if src["page"] not in pages:
        raise DeriveError(f"{where}: page {src['page']!r} is not under `pages`")
    if not isinstance(src["line"], int) or src["line"] < 1:
        raise DeriveError(f"{where}: line must be a positive number")
    return {"page": src["page"], "line": src["line"], "words": _strings(src["words"], f"{where}.words"),
            "upstream": UPSTREAM + src["page"]}


def _condition(name: str, raw: Any, where: str) -> Any:
    shape = CONDITIONS.get(name)
    if shape is None:
        raise DeriveError(f"{where}: unknown condition {name!r} (known: {', '.join(sorted(CONDITIONS))})")
    if name == "kernelModules":
        if raw != "notOpen":
            raise DeriveError(f"{where}: takes notOpen")
        return raw
    if shape == "list":
        values = _strings(raw, where)
        if name == "features":
            unknown = [v for v in values if v not in FEATURES]
            if unknown:
                raise DeriveError(f"{where}: unknown feature {unknown[0]!r} (known: {', '.join(FEATURES)})")
        return values
    cond = _keys(raw, shape, where)
    if not cond:
        raise DeriveError(f"{where}: needs one of {', '.join(shape)}")
    out: dict[str, Any] = {}
    for key, value in cond.items():
        if key in ("in", "notIn"):
            out[key] = _strings(value, f"{where}.{key}")
        elif key == "outside":
            pair = _strings(value, f"{where}.{key}")
            if len(pair) != 2:
                raise DeriveError(f"{where}.outside: needs [lowest, highest]")
            out[key] = pair
        else:
            out[key] = _text(str(value), f"{where}.{key}")
    return out


def build(curated: dict[str, Any], curated_hash: str) -> dict[str, Any]:
    """The table, from the curated file's parsed content (no reference needed)."""
    top = _keys(curated, ("pages", "hazards", "validatedDrivers", "chartRules"), CURATED,
                ("pages", "hazards", "validatedDrivers", "chartRules"))
    pages = {str(k): str(v) for k, v in _keys(top["pages"], ("release-notes.rst", "platform-support.rst"),
                                                    "pages").items()}
    hazards = []
    seen: set[str] = set()
    for n, raw in enumerate(top["hazards"] or []):
        where = f"hazards[{n}]"
        entry = _keys(raw, ENTRY_KEYS, where, tuple(sorted(ENTRY_KEYS)))
        hid = str(entry["id"])
        if not ID.match(hid) or hid in seen:
            raise DeriveError(f"{where}: id {hid!r} is not a new lower-case-dashed id")
        seen.add(hid)
        where = f"hazard {hid}"
        if entry["code"] not in CODES or entry["code"] == "GC468":
            raise DeriveError(f"{where}: code {entry['code']!r} is not a hazard class")
        if entry["severity"] not in SEVERITIES:
            raise DeriveError(f"{where}: severity must be one of {', '.join(SEVERITIES)}")
        seen_by = [str(s) for s in (entry["seenBy"] or [])]
        if any(s not in SEEN_BY for s in seen_by):
            raise DeriveError(f"{where}: seenBy takes {', '.join(SEEN_BY)}")
        applies = {name: _condition(name, value, f"{where}.appliesTo.{name}")
                   for name, value in sorted((entry["appliesTo"] or {}).items())}
        if not isinstance(entry["sources"], list) or not entry["sources"]:
            raise DeriveError(f"{where}: needs sources")
        hazards.append({
            "id": hid, "code": entry["code"], "severity": entry["severity"], "appliesTo": applies,
            "breaks": _text(entry["breaks"], f"{where}.breaks"), "fix": _text(entry["fix"], f"{where}.fix"),
            "seenBy": seen_by,
            "sources": [_source(s, pages, f"{where}.sources[{i}]") for i, s in enumerate(entry["sources"])],
        })
    validated = {}
    for chart, raw in sorted((top["validatedDrivers"] or {}).items()):
        where = f"validatedDrivers.{chart}"
        if not CHART.match(str(chart)):
            raise DeriveError(f"{where}: not a chart version")
        item = _keys(raw, ("versions", "sources"), where, ("versions", "sources"))
        validated[str(chart)] = {"versions": _strings(item["versions"], f"{where}.versions"),
                                 "sources": [_source(s, pages, f"{where}.sources[{i}]")
                                             for i, s in enumerate(item["sources"])]}
    rules = []
    for n, raw in enumerate(top["chartRules"] or []):
        where = f"chartRules[{n}]"
        rule = _keys(raw, RULE_KEYS, where, ("id", "when", "breaks", "source"))
        when = []
        for i, cond in enumerate(rule["when"] or []):
            c = _keys(cond, ("path", "is"), f"{where}.when[{i}]", ("path", "is"))
            if c["is"] not in (True, False, "empty"):
                raise DeriveError(f"{where}.when[{i}]: `is` takes true, false or empty")
            when.append({"path": _text(c["path"], f"{where}.when[{i}].path"), "is": c["is"]})
        src = _keys(rule["source"], ("template", "lines", "words"), f"{where}.source", ("template", "lines", "words"))
        lines = {str(k): v for k, v in sorted(_keys(src["lines"], set(map(str, src["lines"] or {})),
                                                    f"{where}.source.lines").items())}
        if not lines or any(not CHART.match(k) or not isinstance(v, int) or v < 1 for k, v in lines.items()):
            raise DeriveError(f"{where}.source.lines: chart version -> positive line number")
        rules.append({"id": _text(rule["id"], f"{where}.id"), "charts": sorted(lines), "when": when,
                      "capability": rule.get("capability"), "breaks": _text(rule["breaks"], f"{where}.breaks"),
                      "source": {"template": _text(src["template"], f"{where}.source.template"), "lines": lines,
                                 "words": _strings(src["words"], f"{where}.source.words"),
                                 "chart": "NVIDIA/gpu-operator gh-pages stable/gpu-operator-<version>.tgz"}})
    if len(hazards) < 25:
        raise DeriveError(f"the table has {len(hazards)} hazards; the issue asks for at least 25")
    return {
        "generated": header(SCRIPT, {CURATED: curated_hash, **{f"{DOCS}/{k}": v for k, v in pages.items()}},
                            "Known hazards of the GPU Operator: driver, chart, GPU, OS and kernel combinations NVIDIA "
                            "documents as broken, each with its source line.", change=CURATED),
        "codes": CODES,
        "hazards": sorted(hazards, key=lambda h: h["id"]),
        "validatedDrivers": validated,
        "chartRules": rules,
    }


def _norm(text: str) -> str:
    return " ".join(text.split())


def verify(curated: dict[str, Any], reference: Path, charts: Path | None) -> list[str]:
    """Check every citation against its page (and, with charts, every chart rule); returns what was not checked."""
    pages: dict[str, list[str]] = {}
    for name, digest in (curated.get("pages") or {}).items():
        data = read_input(reference / DOCS / name)
        got = sha256(data)
        if got != digest:
            raise DeriveError(f"{DOCS}/{name} hashes {got}, the curated file says {digest}: the page changed; "
                              "re-check every line cited from it, then update `pages`")
        pages[name] = data.decode("utf-8").splitlines()
    cited = [(f"hazard {h.get('id')}", s) for h in curated.get("hazards") or [] for s in h.get("sources") or []]
    cited += [(f"validatedDrivers.{c}", s) for c, v in (curated.get("validatedDrivers") or {}).items()
              for s in v.get("sources") or []]
    for where, src in cited:
        lines = pages.get(src.get("page"), [])
        line = src.get("line")
        if not isinstance(line, int) or not 1 <= line <= len(lines):
            raise DeriveError(f"{where}: {src.get('page')} has no line {line}")
        text = _norm(lines[line - 1])
        for word in src.get("words") or []:
            if _norm(str(word)) not in text:
                raise DeriveError(f"{where}: {src['page']}:{line} does not say {str(word)!r} (it reads {text!r})")
    if charts is None:
        return ["chart rules (no --charts folder given)"]
    for rule in curated.get("chartRules") or []:
        src = rule["source"]
        for version, line in src["lines"].items():
            lines = _template(charts, str(version), src["template"])
            if not 1 <= line <= len(lines) or "fail" not in lines[line - 1]:
                raise DeriveError(f"chart rule {rule['id']}: {version} {src['template']}:{line} is no fail")
            for word in src["words"]:
                if _norm(word) not in _norm(lines[line - 1]):
                    raise DeriveError(f"chart rule {rule['id']}: {version} {src['template']}:{line} does not say "
                                      f"{word!r}")
            condition = _norm(" ".join(lines[max(0, line - 4):line - 1]))
            for cond in rule["when"]:
                if f".Values.{cond['path']}" not in condition:
                    raise DeriveError(f"chart rule {rule['id']}: the condition above {version} {src['template']}:"
                                      f"{line} does not read {cond['path']}")
    return []


def _template(charts: Path, version: str, template: str) -> list[str]:
    """One template of a published chart, from an extracted folder or the chart's .tgz."""
    folder = charts / version / "gpu-operator" / template
    if folder.is_file():
        return folder.read_text(encoding="utf-8").splitlines()
    archive = charts / f"gpu-operator-{version}.tgz"
    if not archive.is_file():
        raise DeriveError(f"chart {version}: neither {folder} nor {archive} exists")
    with tarfile.open(archive) as tar:
        member = tar.extractfile(f"gpu-operator/{template}")
        if member is None:
            raise DeriveError(f"{archive} has no gpu-operator/{template}")
        return member.read().decode("utf-8").splitlines()


def load_curated(path: Path) -> tuple[dict[str, Any], str]:
    """The curated file parsed, and its hash."""
    data = path.read_bytes()
    return load_yaml(io.BytesIO(data), CURATED), sha256(data)


def derive_bytes(curated_path: Path) -> bytes:
    """profiles/hazards.json's bytes, from the curated file alone."""
    curated, digest = load_curated(curated_path)
    return dump(build(curated, digest))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: verify the citations, then write (or with --check, compare)."""
    parser = arguments(__doc__, "exit 1 if the committed table differs; write nothing", lambda p: p.add_argument(
        "--charts", type=Path, help="a folder of published chart .tgz files (or extracted charts)"))
    args = parser.parse_args(argv)

    def derive() -> dict[str, bytes]:
        curated, _ = load_curated(REPO_ROOT / CURATED)
        skipped = verify(curated, args.reference, args.charts)
        data = derive_bytes(REPO_ROOT / CURATED)
        for what in skipped:
            print(f"not checked: {what}", file=sys.stderr)
        return {OUT: data}

    return run("derive_hazards", derive, args.check)


if __name__ == "__main__":
    sys.exit(main())

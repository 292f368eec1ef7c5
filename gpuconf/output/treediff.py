"""Semantic diff of two rendered cluster folders, document by document: which documents were added, removed or
changed, and within a changed one the exact paths with old and new values; plus a unified diff of those files.

YAML is read with PyYAML's safe loader. Comments are not semantics: a header or a `# via` line that changed alone
does not make two trees differ (`gpuconf render --check` is the byte-for-byte comparison).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from ..escape import md_code, md_fence, md_html, md_text, show_path, term_text
from ..findings import dotted
from .attest import ATTESTATION
from .writer import RECORD

#: Derived from the other files; they change whenever those do and are not applied to the cluster (the record of
#: what gpuconf wrote and the attestation of `render --attest` neither).
REPORT_FILES = ("REPORT.md", "report.json", RECORD, ATTESTATION)


@dataclass(frozen=True)
class PathChange:
    """One changed path inside a document."""

    path: str
    op: str  # "changed", "added", "removed", "renamed" (a map key: old and new are the key names)
    old: Any = None
    new: Any = None

    def as_dict(self) -> dict:
        """The JSON form."""
        return {"path": self.path, "op": self.op, "old": self.old, "new": self.new}

    def text(self) -> str:
        """One line: path: old -> new."""
        if self.op == "renamed":
            return f"{self.path}: key {self.old} -> {self.new}"
        if self.op == "added":
            return f"{self.path}: (absent) -> {_show(self.new)}"
        if self.op == "removed":
            return f"{self.path}: {_show(self.old)} -> (absent)"
        return f"{self.path}: {_show(self.old)} -> {_show(self.new)}"


@dataclass
class DocumentDiff:
    """One document of the tree that was added, removed or changed."""

    file: str
    kind: str
    name: str
    namespace: str | None
    status: str  # "added", "removed", "changed"
    changes: list[PathChange] = field(default_factory=list)

    @property
    def title(self) -> str:
        """`Kind namespace/name` of the document (or the file for values and text files)."""
        if self.kind in ("values", "release-values", "document", "file"):
            return {"values": "Helm values", "release-values": "the DRA driver's Helm values", "document": "document",
                    "file": "text file"}[self.kind]
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {ns}{self.name}"

    def as_dict(self) -> dict:
        """The JSON form."""
        return {"file": self.file, "kind": self.kind, "name": self.name, "namespace": self.namespace,
                "status": self.status, "changes": [c.as_dict() for c in self.changes]}


@dataclass
class TreeDiff:
    """Every difference between an existing tree (old) and a fresh render (new)."""

    old_root: str
    new_source: str
    documents: list[DocumentDiff] = field(default_factory=list)
    comments_only: list[str] = field(default_factory=list)  # files whose text differs in comments alone
    unified: str = ""
    # Every document of both trees as parsed here (identity -> kind, name, namespace, data), for the impact plan.
    old_documents: dict = field(default_factory=dict, repr=False)
    new_documents: dict = field(default_factory=dict, repr=False)

    @property
    def equal(self) -> bool:
        """True when no document differs."""
        return not self.documents

    def as_dict(self) -> dict:
        """The JSON form of `gpuconf diff --against --format json`."""
        return {"against": self.old_root, "rendered": self.new_source, "equal": self.equal,
                "documents": [d.as_dict() for d in self.documents], "commentsOnly": self.comments_only}


def _show(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except ValueError:  # an integer past Python's 4,300 digits (a hand edit's `a: 0xfff...`): not printed whole
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str,
                          cls=_BigInts) if isinstance(value, (dict, list)) else _big(value)


def _big(value: Any) -> str:
    return f"<an integer of {value.bit_length()} bits>" if isinstance(value, int) else repr(type(value))


class _BigInts(json.JSONEncoder):
    """JSON whose integers past Python's digit limit show as <an integer of N bits>."""

    def iterencode(self, o: Any, _one_shot: bool = False):  # noqa: D102 - json API
        return super().iterencode(_shrunk(o), _one_shot)


def _shrunk(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _shrunk(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_shrunk(v) for v in node]
    if isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > 14_000:
        return _big(node)
    return node


def _load_all(text: str) -> list:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(text, Loader=loader) if d is not None]


def _documents(path: str, text: str) -> dict[tuple, tuple[str, str, str | None, Any]]:
    """Identity -> (kind, name, namespace, data) of every document of one file."""
    if not path.endswith((".yaml", ".yml")):
        lines = [line for line in text.splitlines() if not line.startswith("#")]
        return {(path,): ("file", path, None, lines)}
    try:
        docs = _load_all(text)
    except Exception as exc:  # noqa: BLE001 - an edited file may hold anything; the diff says so
        return {(path,): ("file", path, None, f"<not YAML: {type(exc).__name__}>")}
    out = {}
    for index, doc in enumerate(docs):
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and isinstance(meta, dict) and "name" in meta:
            key = (path, doc["kind"], meta.get("namespace"), str(meta["name"]))
            out[key] = (doc["kind"], str(meta["name"]), meta.get("namespace"), doc)
        else:
            # The DRA driver's release has values of its own (render/nvlink.py): not the operator chart's.
            kind = "release-values" if path.endswith("dra-driver/values.yaml") else \
                "values" if path.endswith("values.yaml") else "document"
            out[(path, index)] = (kind, path, None, doc)
    return out


def diff_values(old: Any, new: Any, path: tuple = ()) -> list[PathChange]:
    """The paths where new differs from old: maps key by key, lists item by item when their lengths agree."""
    where = dotted(path) or "(document)"
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[PathChange] = []
        removed = sorted(k for k in old if k not in new)
        added = sorted(k for k in new if k not in old)
        if len(removed) == 1 and len(added) == 1 and type(old[removed[0]]) is type(new[added[0]]):
            # One key swapped for another: a content-addressed config key that changed with its content.
            out.append(PathChange(where, "renamed", removed[0], added[0]))
            out += diff_values(old[removed[0]], new[added[0]], (*path, added[0]))
            removed = added = []
        out += [PathChange(dotted((*path, k)), "removed", old[k], None) for k in removed]
        out += [PathChange(dotted((*path, k)), "added", None, new[k]) for k in added]
        for key in sorted(k for k in old if k in new):
            out += diff_values(old[key], new[key], (*path, key))
        return sorted(out, key=lambda c: (c.path, c.op))
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [c for i, (a, b) in enumerate(zip(old, new)) for c in diff_values(a, b, (*path, i))]
    if isinstance(old, str) and isinstance(new, str) and "\n" in old and "\n" in new and old != new:
        inner = _embedded(old, new)
        if inner is not None:
            # A config file inside a ConfigMap: diff its content, not its lines.
            return [PathChange(f"{where} > {c.path}", c.op, c.old, c.new) for c in inner]
    if old != new or type(old) is not type(new):
        return [PathChange(where, "changed", old, new)]
    return []


def _embedded(old: str, new: str) -> list[PathChange] | None:
    try:
        a, b = _load_all(old), _load_all(new)
    except Exception:  # noqa: BLE001 - not YAML after all: compared as strings
        return None
    if len(a) != 1 or len(b) != 1 or not isinstance(a[0], (dict, list)) or not isinstance(b[0], (dict, list)):
        return None
    return diff_values(a[0], b[0])


def compare_trees(old: dict[str, str], new: dict[str, str], old_root: str, new_source: str) -> TreeDiff:
    """Compare an existing tree with a fresh render (relative path -> text), documents and paths."""
    result = TreeDiff(old_root, new_source)
    differing: set[str] = set()
    for path in sorted((set(old) | set(new)) - set(REPORT_FILES)):
        before = _documents(path, old[path]) if path in old else {}
        after = _documents(path, new[path]) if path in new else {}
        result.old_documents.update(before)
        result.new_documents.update(after)
        found = False
        for key in sorted(set(before) | set(after), key=str):
            if key not in after:
                kind, name, ns, _ = before[key]
                result.documents.append(DocumentDiff(path, kind, name, ns, "removed"))
            elif key not in before:
                kind, name, ns, _ = after[key]
                result.documents.append(DocumentDiff(path, kind, name, ns, "added"))
            else:
                kind, name, ns, data = after[key]
                changes = diff_values(before[key][3], data)
                if changes:
                    result.documents.append(DocumentDiff(path, kind, name, ns, "changed", changes))
                else:
                    continue
            found = True
        if found:
            differing.add(path)
        elif old.get(path) != new.get(path):
            result.comments_only.append(path)
    for path in sorted(differing):
        result.unified += "".join(difflib.unified_diff(
            old.get(path, "").splitlines(keepends=True), new.get(path, "").splitlines(keepends=True),
            fromfile=f"{old_root}/{path} (existing)", tofile=f"{old_root}/{path} (rendered from {new_source})"))
    return result


def diff_text(diff: TreeDiff) -> str:
    """The semantic diff, then the unified diff; every value and line of the folder's files is escaped for a
    terminal or a CI log (term_text)."""
    lines = []
    for doc in diff.documents:
        lines.append(f"{doc.status} {show_path(doc.file)}: {term_text(doc.title)}")
        lines += [f"  {term_text(c.text())}" for c in doc.changes]
    if diff.comments_only:
        lines.append(f"comments only (headers, `# via` lines): {', '.join(map(show_path, diff.comments_only))}")
    counts = {s: sum(1 for d in diff.documents if d.status == s) for s in ("added", "removed", "changed")}
    if diff.equal:
        lines.append(f"{term_text(diff.old_root)}: no document differs from a fresh render of "
                     f"{term_text(diff.new_source)}")
    else:
        lines.append(f"{len(diff.documents)} document(s) differ: {counts['added']} added, {counts['removed']} removed, "
                     f"{counts['changed']} changed")
    unified = "".join(term_text(line) + "\n" for line in diff.unified.splitlines())
    return "\n".join(lines) + "\n" + unified


def diff_markdown(diff: TreeDiff, folded: bool = False) -> str:
    """The semantic diff as Markdown (for a pull-request comment), with the unified diff in a fenced block; folded
    puts it all in a <details> block (under the impact plan's table). Every value is escaped (md_code, md_text)."""
    lines = [f"## Rendered output against {md_code(diff.old_root, table=False)}", ""]
    if folded:
        lines = [f"<details><summary>Rendered documents against <code>{md_html(diff.old_root)}</code></summary>", ""]
    if diff.equal:
        lines.append(f"No document differs from a fresh render of {md_code(diff.new_source, table=False)}.")
    for doc in diff.documents:
        lines.append(f"- **{doc.status}** {show_path(doc.file, 'md')}: {md_text(doc.title)}")
        lines += [f"  - {md_code(c.text(), table=False)}" for c in doc.changes]
    if diff.comments_only:
        lines.append("- comments only (headers, `# via` lines): "
                     + ", ".join(show_path(p, "md") for p in diff.comments_only))
    if diff.unified:
        fence = md_fence(diff.unified)
        lines += ["", f"{fence}diff", diff.unified.rstrip("\n"), fence]
    if folded:
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"

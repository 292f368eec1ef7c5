"""The CEL rules (`x-kubernetes-validations`) of a CRD's schema, evaluated on a document as the API server does on
create, with cel-python and the Kubernetes CEL library functions the Karpenter CRDs use (`find`, `split`).

The rules come from schemas/crds (tools/derive_schemas.py keeps them for the CRDs in CEL_KEPT_GROUPS). A rule is
evaluated where its schema node has a value in the document, with `self` bound to that value; transition rules
(those that read `oldSelf`) apply to updates only and are skipped, as the API server skips them on create.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Iterator

import celpy
from celpy import celtypes

RULES = "x-kubernetes-validations"


def _find(text: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.StringType:
    """Kubernetes' strings library: the first match of the regular expression, or ''."""
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    """Kubernetes' strings library: the parts between the separator."""
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


FUNCTIONS = {"find": _find, "split": _split}
# celpy.Environment() raises the process's recursion limit to 2500 for good; put it back, or gpuconf's checks that
# rely on the interpreter's own limit (deeply nested hostname regexes, GC320) behave differently in later tests.
_LIMIT = sys.getrecursionlimit()
_ENV = celpy.Environment()
sys.setrecursionlimit(_LIMIT)
_PROGRAMS: dict[str, Any] = {}


def schema(api_version: str, kind: str) -> dict[str, Any]:
    """The converted schema of a kind, from schemas/crds (index.json names the file)."""
    from gpuconf.output.verify import _crd_index, _schemas_dir

    entry = _crd_index()["kinds"][f"{api_version}/{kind}"]
    return json.loads(_schemas_dir().joinpath(*entry["file"].split("/")).read_bytes())


def rule_count(node: Any) -> int:
    """How many CEL rules a schema carries."""
    if isinstance(node, dict):
        return len(node.get(RULES, [])) + sum(rule_count(v) for v in node.values())
    if isinstance(node, list):
        return sum(rule_count(v) for v in node)
    return 0


def _evaluate(rule: str, value: Any) -> bool:
    program = _PROGRAMS.get(rule)
    if program is None:
        program = _PROGRAMS[rule] = _ENV.program(_ENV.compile(rule), functions=FUNCTIONS)
    result = program.evaluate({"self": celpy.json_to_cel(value)})
    if isinstance(result, Exception):
        raise result
    return bool(result)


def _walk(node: dict[str, Any], value: Any, path: str) -> Iterator[str]:
    for item in node.get(RULES, []):
        if "oldSelf" in item["rule"]:
            continue
        if not _evaluate(item["rule"], value):
            yield f"{path}: {item.get('message') or item['rule']}"
    if isinstance(value, dict):
        properties = node.get("properties", {})
        extra = node.get("additionalProperties")
        for key, sub in value.items():
            child = properties.get(key, extra if isinstance(extra, dict) else None)
            if child is not None:
                yield from _walk(child, sub, f"{path}.{key}")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, sub in enumerate(value):
            yield from _walk(node["items"], sub, f"{path}[{i}]")


def violations(doc: dict[str, Any]) -> list[str]:
    """The CEL rules of the document's CRD it breaks (path: message); empty when the API server would admit it."""
    return list(_walk(schema(doc["apiVersion"], doc["kind"]), doc, doc["kind"]))

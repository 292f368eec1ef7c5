"""Is a rendered folder still in the shape gpuconf wrote it? `diff --against` reads a folder that anyone may have
edited (a pull request's, a hand-fixed one): when reading it fails, this says which file and field is not what
gpuconf writes there, so that the command exits 2 naming it instead of 3 (issue 29, item 8).

The checks are those of the render's own verification: every Kubernetes object against its kind's schema (the
built-in kinds of the cluster's Kubernetes version, the custom resources' CRDs), kustomization.yaml's resources a
list of file names, values.yaml against the chart's values schema, report.json an object whose pools are objects
with a name.
"""

from __future__ import annotations

import json
from typing import Any


def folder_problem(files: dict[str, str], kubernetes_version: str, chart_version: str) -> str | None:
    """The first thing in a rendered folder (relative path -> text) that gpuconf would not have written, in words,
    or None when the folder has the shape gpuconf writes (for the Kubernetes and chart versions it was rendered
    for)."""
    import yaml

    from .verify import UnsupportedKubernetesVersion, verify_object, verify_values

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    problem = report_problem(files)
    if problem is not None:
        return problem
    for path in sorted(files):
        text = files[path]
        if path == "report.json":
            continue  # report_problem
        if not path.endswith((".yaml", ".yml")):
            continue
        try:
            documents = [d for d in yaml.load_all(text, Loader=loader) if d is not None]
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            return f"{path}: not YAML ({type(exc).__name__})"
        for index, document in enumerate(documents):
            where = f"{path} (document {index + 1})" if len(documents) > 1 else path
            if path in ("kustomization.yaml", "values.yaml"):
                problem = _plain_problem(path, document)
                if problem:
                    return f"{where}: {problem}"
                if path == "values.yaml":
                    problems = verify_values(document, chart_version)
                    if problems:
                        return f"values.yaml: {problems[0].path}: {problems[0].message}"
                continue
            try:
                problems = verify_object(document, kubernetes_version, where)
            except UnsupportedKubernetesVersion:
                return None
            if problems:
                first = problems[0]
                return f"{first.document}: {first.path}: {first.message}"
    return None


def _plain_problem(path: str, document: Any) -> str | None:
    if not isinstance(document, dict):
        return f"a mapping, not {type(document).__name__}"
    if path == "kustomization.yaml":
        for key in ("resources", "components", "patches"):
            value = document.get(key)
            if value is not None and not isinstance(value, list):
                return f"{key} is a list, not {type(value).__name__}"
        if any(not isinstance(r, str) for r in document.get("resources") or []):
            return "resources is a list of file names"
    return None


def report_problem(files: dict[str, str]) -> str | None:
    """What in the folder's report.json the impact plan cannot read, or None (a folder without one is a legacy
    folder: the impact plan reads its documents alone)."""
    if "report.json" not in files:
        return None
    problem = _report_problem(files["report.json"])
    return f"report.json: {problem}" if problem else None


def _report_problem(text: str) -> str | None:
    try:
        report = json.loads(text)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(report, dict):
        return "a JSON object, not " + type(report).__name__
    for key, kind in (("pools", list), ("cluster", dict), ("upgrade", dict)):
        if key in report and not isinstance(report[key], kind):
            return f"{key} is a{'n' if kind is dict else ''} {'object' if kind is dict else 'list'}"
    for i, pool in enumerate(report.get("pools") or []):
        if not isinstance(pool, dict) or not isinstance(pool.get("name"), str):
            return f"pools[{i}] is an object with a name"
        if not isinstance(pool.get("resources", []), list) or \
                any(not isinstance(r, dict) or not isinstance(r.get("name"), str) for r in pool.get("resources", [])):
            return f"pools[{i}].resources is a list of objects with a name"
    return None

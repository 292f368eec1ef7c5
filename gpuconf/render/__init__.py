"""Renderers: pure functions from a Plan to documents. Nothing here reads files or writes them.

Contract of a manifest renderer: `render(plan: Plan) -> list[dict]`, returning complete Kubernetes objects as plain
data (apiVersion, kind, metadata.name, metadata.namespace when namespaced, ...), with no YAML text and no I/O.
Every object carries the labels from `common_labels(plan)`. The orchestrator (gpuconf.render.tree) places them in
files, verifies them and hands them to the writer.
"""

from __future__ import annotations

from typing import Mapping

MANAGED_BY = "gpuconf"


def common_labels(plan) -> dict[str, str]:
    """Labels on every object gpuconf renders, so `kubectl get -l` finds them and GitOps tools can prune them."""
    return {"app.kubernetes.io/managed-by": MANAGED_BY, "gpuconf.dev/cluster": plan.name}


def metadata(plan, name: str, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> dict:
    """Standard metadata: name, optional namespace, common labels plus extra ones."""
    meta: dict = {"name": name, "labels": {**common_labels(plan), **(labels or {})}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta

"""The "before" of a rendered folder: what one folder gpuconf wrote says is (or will be) in the cluster."""

from __future__ import annotations

import json
from typing import Any

from ..output.treediff import DocumentDiff, _documents


class Deployed:
    """What one rendered folder says is (or will be) in the cluster."""

    def __init__(self, files: dict[str, str], documents: dict | None = None):
        self.files = files
        try:
            report = json.loads(files.get("report.json", "{}"))
        except ValueError:
            report = {}
        self.report: dict = report if isinstance(report, dict) else {}
        self._docs = documents
        pools = self.report.get("pools")
        self.pools: dict[str, dict] = {p["name"]: p for p in (pools if isinstance(pools, list) else [])
                                       if isinstance(p, dict) and isinstance(p.get("name"), str)}

    @property
    def docs(self) -> dict[tuple, tuple]:
        """Every document, by identity (the diff's parse when given, else parsed on first use: the transition rules
        read report.json alone)."""
        if self._docs is None:
            self._docs = {}
            for path, text in self.files.items():
                self._docs.update(_documents(path, text))
        return self._docs

    @property
    def values(self) -> dict:
        """values.yaml as data."""
        values = self.docs.get(("values.yaml", 0))
        return values[3] if values and isinstance(values[3], dict) else {}

    @property
    def cluster(self) -> dict:
        """report.json's cluster section."""
        return self.report.get("cluster") or {}

    def data(self, doc: DocumentDiff) -> Any:
        """The body of a document of the diff on this side (None when absent here)."""
        entry = self.docs.get((doc.file, doc.kind, doc.namespace, doc.name))
        return entry[3] if entry else None

    def objects(self, kind: str) -> list[dict]:
        """Every object of one kind."""
        return [d[3] for d in self.docs.values() if d[0] == kind and isinstance(d[3], dict)]

    def applied(self) -> set[str]:
        """The files `kubectl apply -k` (or the manifests Application) applies: kustomization.yaml's resources."""
        kustomization = self.docs.get(("kustomization.yaml", 0))
        resources = kustomization[3].get("resources") if kustomization and isinstance(kustomization[3], dict) else []
        return {r for r in resources or [] if isinstance(r, str)}

    def resources(self, pool: str) -> dict[str, int]:
        """Resource name -> units per node that a pool advertises."""
        return {r["name"]: r.get("perNode", 0) for r in self.pools.get(pool, {}).get("resources", [])}

    def totals(self, pool: str) -> dict[str, int]:
        """Resource name -> units of the whole pool."""
        return {r["name"]: r.get("total", 0) for r in self.pools.get(pool, {}).get("resources", [])}

    def policy(self) -> dict:
        """The driver upgrade policy (report.json's upgrade.policy)."""
        return (self.report.get("upgrade") or {}).get("policy") or {}

    def rollout_wave(self) -> int | None:
        """The wave `spec.driver.upgrade.rollout` stands at, if any."""
        rollout = (self.report.get("upgrade") or {}).get("rollout")
        return rollout.get("wave") if isinstance(rollout, dict) else None

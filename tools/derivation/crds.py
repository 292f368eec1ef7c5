"""The custom resource definitions each GPU Operator chart ships in its crds/ folder, as the chart facts carry them, and
the ClusterPolicy spec that the chart facts are checked against."""

from __future__ import annotations

from typing import Any

from .common import DeriveError, require

CP_CRD = "gpu-operator/v26.7.0/crds/nvidia.com_clusterpolicies.yaml"


# The CRDs a chart ships in its crds/ folder, which `helm upgrade` never upgrades (a chart move must apply them first).
# v26.7.0's crds/ is in the reference. v26.3.3's is not: its set is v26.7.0's without what gpu-operator-facts.md §9
# says 26.7 added ("Three CRDs are new (gpuclusters, computedomains, computedomaincliques)"; "The CRDs add
# hostPaths.kubeletRootDir, operator.metrics.serviceMonitor and dcgmExporter.serviceMonitor.scrapeTimeout
# (ClusterPolicy), and default plus upgradePolicy (NVIDIADriver)"), so only those differences are known.
CRDS_26_7 = ("nvidia.com_clusterpolicies.yaml", "nvidia.com_gpuclusters.yaml", "nvidia.com_nvidiadrivers.yaml",
             "resource.nvidia.com_computedomaincliques.yaml", "resource.nvidia.com_computedomains.yaml")
NEW_CRDS_IN_26_7 = ("nvidia.com_gpuclusters.yaml", "resource.nvidia.com_computedomaincliques.yaml",
                    "resource.nvidia.com_computedomains.yaml")
NEW_CRD_FIELDS_IN_26_7 = {
    "nvidia.com_clusterpolicies.yaml": ("spec.dcgmExporter.serviceMonitor.scrapeTimeout",
                                        "spec.hostPaths.kubeletRootDir", "spec.operator.metrics.serviceMonitor"),
    "nvidia.com_nvidiadrivers.yaml": ("spec.default", "spec.upgradePolicy"),
}


def _schema_fields(node: dict[str, Any], prefix: str = "") -> list[str]:
    """Every field path of an OpenAPI schema (`[]` for a list's items), parents before children."""
    out: list[str] = []
    for key, child in sorted((node.get("properties") or {}).items()):
        path = f"{prefix}.{key}" if prefix else key
        out.append(path)
        out += _schema_fields(child, path)
    items = node.get("items")
    if isinstance(items, dict):
        out += _schema_fields(items, prefix + "[]")
    return out


def chart_crds(version: str, load: Any) -> tuple[dict[str, Any], str, list[str]]:
    """(file name -> {group, kind, scope, versions, fields}, how they are known, the inputs) of one chart's crds/."""
    crds: dict[str, Any] = {}
    inputs = [f"gpu-operator/v26.7.0/crds/{name}" for name in CRDS_26_7]
    for name, rel in zip(CRDS_26_7, inputs):
        crd = load(rel)
        spec = require(crd, "spec", rel)
        versions = require(spec, "versions", rel)
        fields = sorted({f for v in versions for f in _schema_fields(
            require(require(v, "schema", rel), "openAPIV3Schema", rel))})
        crds[name] = {"group": spec["group"], "kind": spec["names"]["kind"], "scope": spec["scope"],
                      "versions": [v["name"] for v in versions], "fields": fields}
    if version == "v26.7.0":
        return crds, "the chart's crds/ folder", inputs
    if version != "v26.3.3":
        raise DeriveError(f"{version}: no CRD facts")
    for name, added in NEW_CRD_FIELDS_IN_26_7.items():
        for path in added:
            if path not in crds[name]["fields"]:
                raise DeriveError(f"{name}: gpu-operator-facts.md §9 names {path}, which v26.7.0's CRD lacks")
        crds[name]["fields"] = [f for f in crds[name]["fields"]
                                if not any(f == a or f.startswith((a + ".", a + "[]")) for a in added)]
    for name in NEW_CRDS_IN_26_7:
        del crds[name]
    return crds, ("v26.7.0's crds/ without the CRDs and fields gpu-operator-facts.md §9 says 26.7 added (v26.3.3's "
                  "crds/ is not in the reference: other differences are not known)"), inputs


def clusterpolicy_spec(crd: dict[str, Any]) -> dict[str, Any]:
    """The properties of the ClusterPolicy spec in its (single) served version."""
    versions = require(require(crd, "spec", CP_CRD), "versions", CP_CRD)
    schema = require(require(versions[0], "schema", CP_CRD), "openAPIV3Schema", CP_CRD)
    return require(require(require(schema, "properties", CP_CRD), "spec", CP_CRD), "properties", CP_CRD)

"""The facts of every GPU Operator chart release in the reference (profiles/charts/<version>.json) and the table of
them all (profiles/charts/index.json): each release read from its own tarball by gpuconf.chartfacts (the code
`gpuconf chart add` runs on a user's chart), with the validated drivers of the docs' component matrix, the renamed
values keys and NVIDIA's upgrade rule."""

from __future__ import annotations

import sys
from typing import Any

from .common import REFERENCE_SCRIPT, REPO_ROOT, DeriveError, Reference, dump, header, require

sys.path.insert(0, str(REPO_ROOT))
from gpuconf.chartfacts import releases  # noqa: E402 - the runtime derivation, shared with `gpuconf chart add`
from gpuconf.chartfacts.derive import derive as derive_chart  # noqa: E402
from gpuconf.chartfacts.source import ChartSourceError, read_chart  # noqa: E402

CHARTS_DIR = "gpu-operator/charts"
VERSIONS_MD = "gpu-operator/charts/versions.md"
MATRIX = "gpu-operator/component-matrix.json"
MATRIX_MD = "gpu-operator/component-matrix.md"
#: component-matrix.md §1: the note above the support-status table, unchanged from 2024-10-23 to 2026-08-21.
UPGRADE_RULE = "Upgrades are only supported within a major release or to the next major release."
DRIVER_ROW = "NVIDIA GPU Driver"
#: charts/versions.md §3, "Renames and replacements visible in these diffs": values keys that stopped working at a
#: release, with what replaced them. Each is checked below against the two releases' own facts.
RENAMES = (
    {"key": "driver.useOpenKernelModules", "at": "v25.3.0", "replacement": "driver.kernelModuleType",
     "how": "useOpenKernelModules: true is kernelModuleType: open; false is kernelModuleType: proprietary (the "
            "new default `auto` picks per GPU and driver branch)"},
    {"key": "driver.licensingConfig.configMapName", "at": "v25.10.0", "replacement": "driver.licensingConfig.secretName",
     "how": "the NLS client configuration moves from a ConfigMap to a Secret of the same keys"},
    {"key": "operator.defaultRuntime", "at": "v25.3.0", "replacement": None,
     "how": "the toolkit detects the container runtime itself; remove the key"},
    {"key": "operator.initContainer", "at": "v26.3.0", "replacement": None,
     "how": "the operator no longer runs a CUDA init container; remove the block"},
    {"key": "cdi.default", "at": "v25.10.0", "replacement": None,
     "how": "CDI is on by default (cdi.enabled: true) and the operator picks the mode itself; remove the key"},
    {"key": "node-feature-discovery.enableNodeFeatureApi", "at": "v25.3.1", "replacement": None,
     "how": "NFD 0.17 always uses the NodeFeature API; remove the key"},
)


def _tarballs(ref: Reference) -> list[tuple[str, str]]:
    """(version, reference path) of every chart tarball, oldest release first."""
    folder = ref.root / CHARTS_DIR
    found = []
    for entry in sorted(folder.glob("gpu-operator-v*.tgz")):
        version = entry.name.removeprefix("gpu-operator-").removesuffix(".tgz")
        found.append((version, f"{CHARTS_DIR}/{entry.name}"))
    if not found:
        raise DeriveError(f"{folder}: no chart tarballs")
    return sorted(found, key=lambda item: releases.version_key(item[0]))


def _matrix(ref: Reference, version: str) -> dict[str, Any]:
    """The validated drivers of one release, as the docs' component matrix lists them now (the newest state of the
    branch that carries its column), with the default (D) and recommended (R) ones marked."""
    versions = require(ref.json(MATRIX), "versions", MATRIX)
    entry = require(versions, version, MATRIX)
    latest = require(entry, "latest", f"{MATRIX} {version}")
    if not latest:
        raise DeriveError(f"{MATRIX} {version}: no current column")
    column = latest[0]
    rows = require(require(column, "components", f"{MATRIX} {version}"), DRIVER_ROW, f"{MATRIX} {version}")
    # A driver the column listed when the release came out stays validated for it, though later edits of the
    # docs dropped some (v25.3.0 shipped defaulting to 570.124.06, which its column lists no more).
    first = require(require(require(entry, "at_release", f"{MATRIX} {version}"), "components", MATRIX),
                    DRIVER_ROW, f"{MATRIX} {version}")
    drivers = sorted({row["version"] for row in [*rows, *first]}, key=releases.driver_key, reverse=True)
    where = column["where"][0]
    return {"drivers": drivers,
            "default": sorted({row["version"] for row in [*rows, *first] if "D" in row["markers"]},
                              key=releases.driver_key, reverse=True),
            "recommended": [row["version"] for row in rows if "R" in row["markers"]],
            "source": f"NVIDIA/cloud-native-docs gpu-operator/life-cycle-policy.rst: the column at release "
                      f"({entry['at_release']['commit'][:12]}) and as {where['ref']}@{where['commit'][:12]} lists it "
                      f"(component-matrix.md)"}


def _check_renames(all_facts: dict[str, dict[str, Any]]) -> None:
    """Each rename names a key the release before `at` has and `at` itself does not."""
    order = list(all_facts)
    for rename in RENAMES:
        at = rename["at"]
        before = order[order.index(at) - 1]
        old, new = all_facts[before], all_facts[at]
        # Removed from values.yaml at `at`; whether the templates still read it is each release's own fact.
        if not releases.in_defaults(old, rename["key"]) or releases.in_defaults(new, rename["key"]):
            raise DeriveError(f"{VERSIONS_MD}: {rename['key']} is not removed at {at} ({before} -> {at})")
        if rename["replacement"] and not releases.has_path(new, rename["replacement"]):
            raise DeriveError(f"{VERSIONS_MD}: {rename['replacement']} is not in {at}")


def derive(ref: Reference) -> dict[str, bytes]:
    """profiles/charts/<version>.json of every release and profiles/charts/index.json."""
    matrix_text = ref.text(MATRIX_MD)
    if UPGRADE_RULE not in matrix_text:
        raise DeriveError(f"{MATRIX_MD}: the upgrade rule {UPGRADE_RULE!r} is not quoted there any more")
    ref.text(VERSIONS_MD)
    outputs: dict[str, bytes] = {}
    all_facts: dict[str, dict[str, Any]] = {}
    for version, rel in _tarballs(ref):
        ref.bytes(rel)
        try:
            facts = derive_chart(read_chart(ref.root / rel))
        except ChartSourceError as exc:
            raise DeriveError(str(exc)) from exc
        if facts["version"] != version:
            raise DeriveError(f"{rel}: Chart.yaml says {facts['version']}")
        facts["componentMatrix"] = _matrix(ref, version)
        all_facts[version] = facts
    _check_renames(all_facts)
    for version, facts in all_facts.items():
        rel = f"{CHARTS_DIR}/gpu-operator-{version}.tgz"
        facts["generated"] = header(REFERENCE_SCRIPT, ref.take(rel, MATRIX),
                                    f"Base defaults, quirks and capabilities of GPU Operator chart {version}, read "
                                    f"from the chart itself by gpuconf.chartfacts.")
        outputs[f"profiles/charts/{version}.json"] = dump(facts)
    index = {
        "generated": header(REFERENCE_SCRIPT, ref.take(MATRIX, MATRIX_MD, VERSIONS_MD),
                            "The GPU Operator chart releases gpuconf ships facts for: one row each (its capabilities "
                            "and validated drivers), the values keys renamed or removed between them, and NVIDIA's "
                            "upgrade rule."),
        "releases": {version: {"capabilities": facts["capabilities"],
                               "digest": releases.facts_digest(outputs[f"profiles/charts/{version}.json"]),
                               "drivers": facts["componentMatrix"]["drivers"],
                               "defaultDriver": facts["defaults"]["driver"]["version"]}
                     for version, facts in all_facts.items()},
        "renames": list(RENAMES),
        "upgradeRule": UPGRADE_RULE,
        "upgradeRuleSource": "NVIDIA/cloud-native-docs gpu-operator/life-cycle-policy.rst (component-matrix.md §1)",
    }
    outputs["profiles/charts/index.json"] = dump(index)
    return outputs


def stale(outputs: dict[str, bytes]) -> list[str]:
    """Committed chart facts no release derives any more."""
    folder = REPO_ROOT / "profiles" / "charts"
    return [f"profiles/charts/{p.name}" for p in folder.glob("*.json") if f"profiles/charts/{p.name}" not in outputs]

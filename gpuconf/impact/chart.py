"""The "before" of a chart move: the same intent rendered on its current chart, beside its render on another; and
what a move of the chart does besides its operands: the chart's CRDs that differ (Helm installs a chart's crds/ on the
first install only and never upgrades them), the NFD subchart's move, defaults that flip and values keys that go.

The facts come from profiles/charts/<version>.json (tools/derive_reference.py); the planner adds this section to
every plan whose two sides name different charts, so `diff --to-chart` and `diff --against` of a chartVersion edit
say the same."""

from __future__ import annotations

from typing import Any

from .. import catalog
from ..output.report import leaves, values_path
from ..render.values import lookup
from .folder import Deployed
from .model import Impact, _names

#: Where the chart comes from (the REPORT.md install command's --repo).
CHART_REPO = "https://helm.ngc.nvidia.com/nvidia"


def rendered_on_both(plan, moved_plan) -> tuple[dict[str, str], dict[str, str]]:
    """The output folders (relative path -> text) of the intent on its chart and on the moved plan's chart."""
    from ..render.tree import Command, render_tree

    command = Command(plan.source, "out")
    return render_tree(plan, command).files, render_tree(moved_plan, command).files


def delivery(side: Deployed) -> str:
    """Who applies the chart of a folder: argocd (an Application), flux (a HelmRelease), olm (a Subscription) or
    helm (`helm upgrade` by hand)."""
    kinds = {d[0] for d in side.docs.values()}
    for kind, tool in (("Application", "argocd"), ("HelmRelease", "flux"), ("Subscription", "olm")):
        if kind in kinds:
            return tool
    return "helm"


def _roots(paths: set[str]) -> list[str]:
    """The paths whose parent is not in the set (a field added with its whole subtree is named once)."""
    def parent(path: str) -> str:
        return path.rpartition(".")[0].removesuffix("[]")

    return sorted(p for p in paths if parent(p) not in paths)


def crd_changes(old, new) -> list[dict[str, Any]]:
    """The CRDs of two charts' crds/ that differ: new or dropped kinds, fields added or removed, versions served."""
    rows = []
    for name in sorted(set(old.crds) | set(new.crds)):
        a, b = old.crds.get(name), new.crds.get(name)
        crd = b or a
        row = {"file": name, "kind": crd["kind"], "group": crd["group"], "added": [], "removed": [],
               "versions": list(crd["versions"])}
        if a is None:
            row["status"] = "new"
        elif b is None:
            row["status"] = "dropped"
        else:
            row["added"] = _roots(set(b["fields"]) - set(a["fields"]))
            row["removed"] = _roots(set(a["fields"]) - set(b["fields"]))
            if not row["added"] and not row["removed"] and a["versions"] == b["versions"]:
                continue
            row["status"] = "changed"
        rows.append(row)
    return rows


def crd_step(tool: str, version: str, nfd: bool) -> str:
    """What applies the new chart's CRDs before its objects need them, for the tool that delivers the chart."""
    folders = "-f gpu-operator/crds/" + (" -f gpu-operator/charts/node-feature-discovery/crds/" if nfd else "")
    manual = (f"`helm pull gpu-operator --repo {CHART_REPO} --version {version} --untar && kubectl apply "
              f"--server-side {folders}`")
    if tool == "argocd":
        return ("Argo CD applies the chart's crds/ itself, server-side, before the chart's other objects (the chart "
                f"Application has ServerSideApply=true); to have them in place before the merge: {manual}")
    if tool == "flux":
        return ("Flux replaces the chart's CRDs on the upgrade (the HelmRelease's upgrade.crds: CreateReplace); to "
                f"have them in place before the merge: {manual}")
    if tool == "olm":
        return "OLM installs the new bundle's CRDs with the operator's new version (Subscription): nothing to apply"
    return (f"before `helm upgrade`, apply the new CRDs: {manual} (Helm installs crds/ on the first install only and "
            "never upgrades them: the new operator would meet the old schemas, which drop its new fields)")


def chart_section(old_side: Deployed, new_side: Deployed) -> dict[str, Any] | None:
    """What the move between the two sides' charts does besides its operands (None when the chart stays)."""
    from .. import catalog

    before, after = old_side.cluster.get("chartVersion"), new_side.cluster.get("chartVersion")
    if not before or not after or before == after:
        return None
    old, new = catalog.chart(str(before)), catalog.chart(str(after))
    if old is None or new is None:
        return {"from": before, "to": after, "crds": [], "crdStep": None, "nfd": None, "flippedDefaults": [],
                "removedKeys": [], "delivery": delivery(new_side),
                "note": f"gpuconf has no facts for chart {before if old is None else after}: its CRDs and defaults "
                        "are not compared"}
    crds = crd_changes(old, new)
    tool = delivery(new_side)
    nfd_moves = old.nfd_chart_version != new.nfd_chart_version
    a, b = dict(leaves(old.defaults)), dict(leaves(new.defaults))
    partial = [p for f in (old, new) for p in f.free_form_map_paths if p == "node-feature-discovery"]
    flips = []
    for path in sorted(set(a) & set(b)):
        if isinstance(a[path], bool) and isinstance(b[path], bool) and a[path] != b[path]:
            found, value = lookup(new_side.values, path)
            flips.append({"path": values_path(path), "old": a[path], "new": b[path],
                          "effect": "masked" if found else "applies",
                          "detail": (f"values.yaml keeps {str(value).lower()}" if found else
                                     "the intent does not set it: the cluster gets the new default")})
    removed = []
    renames = catalog.renamed_between(str(before), str(after))
    for path in sorted(set(a) - set(b)):
        if partial and path[0] == "node-feature-discovery":
            continue  # one side's subchart defaults are unknown
        dotted = values_path(path)
        rename = next((r for r in renames if dotted == r["key"] or dotted.startswith(r["key"] + ".")), None)
        removed.append({"path": dotted, "renamedTo": rename["replacement"] if rename else None,
                        "how": rename["how"] if rename else None,
                        # removed from values.yaml, but the new release's templates still read it (cdi.default)
                        "stillRead": catalog.chart_path_status(str(after), dotted)[0] != "unknown",
                        "setByValues": lookup(old_side.values, path)[0]})
    return {"from": before, "to": after, "crds": crds, "crdsSource": new.crds_source,
            "crdStep": crd_step(tool, str(after), nfd_moves) if crds or nfd_moves else None, "delivery": tool,
            "nfd": {"from": old.nfd_chart_version, "to": new.nfd_chart_version} if nfd_moves else None,
            "flippedDefaults": flips, "removedKeys": removed, "componentMatrix": matrix_move(old, new, old_side, new_side)}


def matrix_move(old, new, old_side, new_side) -> dict[str, Any] | None:
    """Whether the cluster's driver enters or leaves the drivers NVIDIA validates the chart with (the component
    matrix), or None when it stays in (or out of) it, or the driver is not the operator's."""
    from .. import catalog

    def driver(facts, side) -> str | None:
        values = side.values.get("driver") if isinstance(side.values.get("driver"), dict) else {}
        if values.get("enabled") is False:
            return None
        return str(values.get("version") or facts.shared_defaults["driver"]["version"])

    before, after = driver(old, old_side), driver(new, new_side)
    if before is None or after is None:
        return None
    was, now = catalog.driver_validated(old, before), catalog.driver_validated(new, after)
    if was == now:
        return None
    return {"driver": after, "enters": now, "validated": list(new.component_matrix.get("drivers", ()))}


def advise(section: dict[str, Any] | None, old_side: Deployed, new_side: Deployed, impacts: list[Impact]) -> None:
    """Make a chart move's advice possible: when the move itself reinstalls the driver (the chart's default driver
    or driver manager moves), say so and how to keep the reinstall out of the move; name the CRD step; say which
    pins stay what they were because the new chart's default equals them (values.yaml drops them)."""
    if section is None:
        return
    drivers = [i for i in impacts if i.kind in ("driver-upgrade", "driver-mode-switch") and i.severity == "disruptive"]
    kept = _now_default(section, old_side, new_side)
    for impact in (i for i in impacts if i.kind == "operator-upgrade"):
        if drivers:
            pins = _default_pins(section, new_side)
            keep = (f"; to keep the reinstall out of the move, first pin what the chart changes, in a commit of its "
                    f"own that changes nothing in the cluster ({pins}), then move the chart" if pins else
                    "; the intent pins the driver already, so the reinstall is the intent's")
            pools = sorted({p for i in drivers for p in i.pools})
            impact.safe = impact.safe.replace(
                "make the chart move its own commit, with no driver, sharing or pool change",
                f"this move reinstalls the driver of pool(s) {_names(pools)} itself (driver-upgrade), so merge it in "
                f"that impact's maintenance window{keep}")
        if section.get("crdStep") and section["delivery"] == "helm":
            impact.safe += "; apply the new chart's CRDs before the sync (the chart move's CRD step)"
        if kept:
            impact.message += "; " + "; ".join(kept)


def _now_default(section: dict[str, Any], old_side: Deployed, new_side: Deployed) -> list[str]:
    """`the driver stays X (now the chart's default)` for each value the old values.yaml pins and the new one drops
    because the new chart's default equals it."""
    from .. import catalog

    new = catalog.chart(str(section["to"]))
    if new is None:
        return []
    out = []
    for path, value in leaves(old_side.values):
        if path and not lookup(new_side.values, path)[0] and lookup(new.defaults, path) == (True, value):
            shown = f"\"{value}\"" if isinstance(value, str) else str(value).lower()
            out.append(f"the driver stays {value} (now the chart's default, so values.yaml drops the pin)"
                       if path == ("driver", "version") else
                       f"{values_path(path)} stays {shown} (now the chart's default, so values.yaml drops it)")
    return out


def _default_pins(section: dict[str, Any], side: Deployed) -> str:
    """The intent settings that keep the old chart's driver pod through a move: `spec.driver.version` and an
    override per driver field whose chart default moves, where values.yaml does not set it."""
    from .. import catalog

    old, new = catalog.chart(str(section["from"])), catalog.chart(str(section["to"]))
    if old is None or new is None:
        return ""
    a = dict(leaves(old.defaults.get("driver") or {}, ("driver",)))
    b = dict(leaves(new.defaults.get("driver") or {}, ("driver",)))
    pins = []
    for path in sorted(set(a) & set(b)):
        if a[path] == b[path] or lookup(side.values, path)[0] or path[1] in ("upgradePolicy", "nvidiaDriverCRD"):
            continue
        if path == ("driver", "version"):
            pins.insert(0, f"`spec.driver.version: \"{a[path]}\"`")
        else:
            pins.append(f"override `{values_path(path)}: {a[path]}`")
    return ", ".join(pins)

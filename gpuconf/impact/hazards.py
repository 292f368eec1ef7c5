"""Known hazards (gpuconf.hazards): a change that enters one of the table's entries (a driver bump into a broken
range, a chart move onto a version with a known issue for the cluster's GPUs or platform), or leaves one, read from
the hazards each side's report.json records."""

from __future__ import annotations

from .model import Change, Impact, impact_kind


def _applies(report: dict) -> dict[str, dict] | None:
    """The entries a render's report.json says apply, by id; None for a folder rendered before gpuconf recorded them."""
    hazards = report.get("hazards")
    if not isinstance(hazards, dict):
        return None
    return {h["id"]: h for h in hazards.get("applies", []) if isinstance(h, dict) and "id" in h}


@impact_kind("hazard", "the change enters a known hazard of `gpuconf hazards`, or leaves one")
def _hazard(change: Change) -> list[Impact]:
    old, new = _applies(change.old.report), _applies(change.new.report)
    if new is None:
        return []
    impacts = []
    for hid in sorted(set(new) - set(old or {})):
        entry = new[hid]
        pools = list(entry.get("pools") or change.new.pools)
        impacts.append(Impact(
            # pending, not disruptive: the sync itself stops nothing, what breaks waits on the nodes (and disruptive
            # impacts are steps of a drain, which the planner orders)
            "hazard", "pending", pools,
            f"the change enters known hazard {hid} ({entry['where']}): {entry['breaks']}",
            f"{entry['fix']}; source: {entry['source']}", nodes=change.pools_nodes(pools)))
    for hid in sorted(set(old or {}) - set(new)):
        entry = old[hid]  # type: ignore[index]
        pools = [p for p in entry.get("pools") or [] if p in change.new.pools]
        impacts.append(Impact(
            "hazard", "none", pools, f"the change leaves known hazard {hid} ({entry['breaks']}): it no longer applies",
            "nothing to do"))
    return impacts

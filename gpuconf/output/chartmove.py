"""What moving an intent to another pinned chart version changes: base defaults that changed (only those that
matter to this intent), overrides that become unnecessary or invalid, new defaults to know, new findings, and the
rendered output that changes (`gpuconf diff INTENT --to-chart VERSION`)."""

from __future__ import annotations

from typing import Any

from .. import catalog
from .. import plan as P
from ..chartfacts.releases import upgrade_path
from ..findings import dotted
from ..render.values import with_chart
from .report import NFD, chart_notes_for, leaves, lookup, show, values_path

#: Top-level values that serve VM (KubeVirt, Kata, vGPU, confidential computing) or DRA clusters only: gpuconf renders
#: container workloads on the ClusterPolicy, so their defaults do not touch its clusters.
NOT_USED = {
    "sandboxWorkloads": "VM workloads", "sandboxDevicePlugin": "VM workloads", "kataSandboxDevicePlugin": "VM workloads",
    "kataManager": "VM workloads", "vfioManager": "VM workloads", "vgpuManager": "vGPU", "vgpuDeviceManager": "vGPU",
    "ccManager": "confidential computing (VM workloads)", "gpuCluster": "the DRA stack", "draDriver": "the DRA stack",
}


def _relevant(key: str, merged_old: dict, merged_new: dict, plan: P.Plan) -> str | None:
    """Why a top-level values key matters to the intent, or None when it does not."""
    if key in NOT_USED:
        return None
    if key == "driver" and all(p.driver == "preinstalled" for p in plan.pools):
        return None
    if key == "migManager" and all(p.mig_key is None for p in plan.pools):
        return None
    nodes = [m.get(key) for m in (merged_old, merged_new) if isinstance(m.get(key), dict)]
    if nodes and all(n.get("enabled") is False for n in nodes):
        return None  # disabled with the intent's values on both charts
    return key


def _setting(changes: dict, parts: tuple) -> tuple[Any, Any]:
    """The change of the intent that covers a values leaf, and the intent's value at that leaf."""
    for path, change in changes.items():
        if parts[:len(path)] == path:
            found, value = lookup(change.value, parts[len(path):]) if parts != path else (True, change.value)
            return change, value if found else None
        if path[:len(parts)] == parts:
            return change, None
    return None, None


def chart_move(plan: P.Plan, target: str) -> dict:
    """Every fact of a move from the plan's chart to the target chart version, for this intent only."""
    from ..findings import has_errors
    from ..render.values import build_values
    from ..intent.rules import check

    old, new = plan.chart, catalog.chart(target)
    assert new is not None, "the CLI checks the version"
    intent = plan.intent
    hops = upgrade_path(old.version, target, catalog.chart_versions())
    if len(hops) > 2:
        return refused_move(plan, old.version, target, hops)
    moved = with_chart(intent, target)
    doc = plan.document
    # A finding is new when the intent did not have it on its own chart, or had it as a warning only (an override
    # its chart still reads and the target no longer does: GC319's warning becomes an error).
    before = {(f.code, f.path, f.severity) for f in check(intent, doc)} if doc is not None else set()
    after = check(moved, doc) if doc is not None else []
    findings = [f for f in after if (f.code, f.path, f.severity) not in before]
    old_values = build_values(plan)
    changes = dict(old_values.changes)
    new_plan = P.build(moved, plan.source, doc)
    new_values = build_values(new_plan)
    merged_old, merged_new = old_values.merged(), new_values.merged()
    partial_nfd = NFD in old.free_form_map_paths or NFD in new.free_form_map_paths

    defaults, skipped = [], {}
    for key in sorted(set(old.defaults) | set(new.defaults)):
        a = dict(leaves(old.defaults[key], (key,))) if key in old.defaults else {}
        b = dict(leaves(new.defaults[key], (key,))) if key in new.defaults else {}
        differing = [p for p in sorted(set(a) | set(b)) if p not in a or p not in b or a[p] != b[p]]
        if key == NFD and partial_nfd:
            differing = [p for p in differing if p in a and p in b]  # one side's subchart defaults are unknown
        if not differing:
            continue
        if _relevant(key, merged_old, merged_new, plan) is None:
            skipped[key] = len(differing)
            continue
        for path in differing:
            change, value = _setting(changes, path)
            entry = {"path": values_path(path), "old": a.get(path), "new": b.get(path),
                     "oldPresent": path in a, "newPresent": path in b}
            if change is None:
                entry["effect"] = "applies"
                entry["detail"] = "the intent does not set it: the cluster gets the new default"
            else:
                where = f"{dotted(change.origin)}, line {plan.line(change.origin)}"
                if path in b and value == b[path]:
                    entry["effect"] = "unnecessary"
                    entry["detail"] = (f"the intent's {show(value)} ({where}) equals the new default: values.yaml "
                                       "drops it")
                elif path in a and value == a[path]:
                    entry["effect"] = "now needed"
                    entry["detail"] = f"values.yaml now carries the intent's {show(value)} ({where})"
                else:
                    entry["effect"] = "masked"
                    entry["detail"] = f"the intent keeps {show(value)} ({where})"
            entry["origin"] = None if change is None else list(change.origin)
            defaults.append(entry)

    overrides = []
    # Every key a release removed from its values.yaml: the templates of the releases after may still read it for a
    # while (cdi.default from v25.10.0 to v26.3.3), so the move that stops reading it may be a later one.
    renamed = catalog.chart_table()["renames"]
    for i, override in enumerate(intent.spec.overrides):
        status, guess = catalog.chart_path_status(target, override.path)
        parts = tuple(override.path.split("."))
        found, default = lookup(new.defaults, parts)
        old_found, old_default = lookup(old.defaults, parts)
        line = plan.line(("spec", "overrides", i))
        row = {"path": override.path, "line": line, "value": override.value}
        gone = next((r for r in renamed if override.path == r["key"] or override.path.startswith(r["key"] + ".")),
                    None)
        if gone is not None and status == "unknown":
            row["status"] = "invalid"
            row["detail"] = catalog.rename_text(gone, target)
        elif gone is not None and status == "template-only":
            row["status"] = "deprecated"
            row["detail"] = (f"removed from values.yaml at {gone['at']}; chart {target}'s templates still read it. "
                             + catalog.rename_text(gone, target))
        elif status == "unknown":
            row["status"] = "invalid"
            row["detail"] = f"not a value of chart {target}" + (f"; did you mean {guess}?" if guess else "")
        elif override.path in new.dead_keys:
            row["status"] = "no effect"
            row["detail"] = f"no template of chart {target} reads it"
        elif found and default == override.value:
            row["status"] = "unnecessary"
            row["detail"] = f"equals the default of chart {target}: remove it"
        elif old_found and old_default == override.value:
            row["status"] = "now effective"
            row["detail"] = f"it equalled the default of {old.version}; chart {target}'s default is {show(default)}"
        else:
            row["status"] = "still needed"
            row["detail"] = (f"the default of chart {target} is {show(default)}" if found
                             else f"{status} key in chart {target}")
        overrides.append(row)

    notes = [n for n in chart_notes_for(moved, new) if n not in chart_notes_for(intent, old)]
    if partial_nfd:
        missing = [f.version for f in (old, new) if NFD in f.free_form_map_paths]
        notes.append(f"gpuconf has no defaults of the NFD subchart of chart {', '.join(missing)}: NFD keys that only "
                     f"one chart's facts hold are not compared (NFD {old.nfd_chart_version} -> {new.nfd_chart_version})")
    output = impacts = None
    if not has_errors(findings):
        from ..impact import plan_impacts
        from ..impact.chart import rendered_on_both
        from .treediff import compare_trees

        before, after = rendered_on_both(plan, new_plan)
        output = compare_trees(before, after, f"chart {old.version}", f"chart {target}")
        impacts = plan_impacts(before, after, output)
    return {
        "cluster": plan.name, "source": plan.source, "from": old.version, "to": target,
        "upgradePath": hops, "refused": None,
        "defaults": defaults,
        "otherDefaults": [{"key": k, "changes": n, "why": NOT_USED.get(k, "disabled or unused by this intent")}
                          for k, n in sorted(skipped.items())],
        "overrides": overrides,
        "notes": notes,
        "findings": [f.as_dict() for f in findings],
        "output": output.as_dict() if output is not None else None,
        "impacts": impacts.as_list() if impacts is not None else None,
        "worst": impacts.worst if impacts is not None else None,
        "chartMove": impacts.chart if impacts is not None else None,
        "impactNotes": impacts.notes if impacts is not None else [],
        "_output": output,
        "_impacts": impacts,
    }


def refused_move(plan: P.Plan, start: str, target: str, path: list[str]) -> dict:
    """A move NVIDIA does not support in one step: the path it supports instead, each hop to plan on its own."""
    hops = " -> ".join(path)
    reason = (f"chart {start} -> {target} skips {len(path) - 2} major release(s): {catalog.chart_table()['upgradeRule']} "
              f"Supported path: {hops}. Plan each hop on its own (`gpuconf diff INTENT --to-chart {path[1]}`, then "
              f"pin it, sync, and go on from there).")
    return {"cluster": plan.name, "source": plan.source, "from": start, "to": target, "upgradePath": path,
            "refused": reason, "defaults": [], "otherDefaults": [], "overrides": [],
            "notes": [], "findings": [], "output": None, "impacts": None, "worst": None, "chartMove": None,
            "impactNotes": [], "_output": None, "_impacts": None}


def failed(move: dict, fail_on: str | None = None) -> bool:
    """True when the move is refused (it skips a major release), the intent would be invalid on the target chart,
    an override path is unknown there, or (with fail_on) the move has an impact that severe."""
    return bool(move["refused"]) or any(f["severity"] == "error" for f in move["findings"]) or any(
        o["status"] == "invalid" for o in move["overrides"]) or (
        move["_impacts"] is not None and move["_impacts"].fails(fail_on))


def move_json(move: dict) -> str:
    """The JSON form, keys sorted."""
    import json

    return json.dumps({k: v for k, v in move.items() if not k.startswith("_")}, indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"


def move_text(move: dict, markdown: bool = False) -> str:
    """The move as text (or Markdown: the same lines as a list under headings)."""
    from ..findings import Finding

    h = (lambda t: f"\n## {t}\n") if markdown else (lambda t: f"{t}:")
    item = "- " if markdown else "  "
    sub = "  - " if markdown else "      "
    lines = [("# " if markdown else "") + f"{move['cluster']} ({move['source']}): GPU Operator chart {move['from']} -> "
             f"{move['to']}"]
    if move["from"] == move["to"]:
        lines.append(f"{item}the intent is on chart {move['to']} already: nothing to compare. Name the chart to move to; "
                     "`gpuconf catalog` lists the versions gpuconf has facts for.")
        return "\n".join(lines) + "\n"
    if move["refused"]:
        lines.append(f"{item}refused: {move['refused']}")
        return "\n".join(lines) + "\n"
    if move["_impacts"] is not None:
        from ..impact import impacts_markdown, impacts_text

        where = f"{move['cluster']} when it moves to chart {move['to']}"
        lines.append(impacts_markdown(move["_impacts"], where).rstrip("\n") if markdown else
                     impacts_text(move["_impacts"], where).rstrip("\n"))
    lines.append(h(f"Base defaults that changed and matter to this intent ({len(move['defaults'])})"))
    for d in move["defaults"]:
        old = show(d["old"]) if d["oldPresent"] else "(absent)"
        new = show(d["new"]) if d["newPresent"] else "(absent)"
        lines.append(f"{item}{d['path']}: {old} -> {new}")
        lines.append(f"{sub}{d['effect']}: {d['detail']}")
    if not move["defaults"]:
        lines.append(f"{item}none")
    if move["otherDefaults"]:
        lines.append(item + "not listed: " + ", ".join(f"{o['key']} ({o['changes']}, {o['why']})"
                                                         for o in move["otherDefaults"]))
    lines.append(h(f"Overrides ({len(move['overrides'])})"))
    for o in move["overrides"]:
        lines.append(f"{item}{o['path']} (line {o['line']}): {o['status']}: {o['detail']}")
    if not move["overrides"]:
        lines.append(f"{item}none")
    if move["notes"]:
        lines.append(h("New defaults and facts to know"))
        lines += [f"{item}{n}" for n in move["notes"]]
    lines.append(h(f"Validation against chart {move['to']}"))
    lines += [f"{item}{Finding(**f).text()}" for f in move["findings"]] or [f"{item}no new findings"]
    lines.append(h("Rendered output that changes"))
    output = move["_output"]
    if output is None:
        lines.append(f"{item}not rendered: the intent is invalid on chart {move['to']}")
    elif output.equal:
        lines.append(f"{item}nothing")
    else:
        for doc in output.documents:
            lines.append(f"{item}{doc.status} {doc.file}: {doc.title}")
            lines += [f"{sub}{c.text()}" for c in doc.changes]
    return "\n".join(lines) + "\n"

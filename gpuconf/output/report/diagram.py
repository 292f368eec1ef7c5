"""The diagram section of REPORT.md (diagram.md.j2): the path from the intent to the device, pools to node labels to
device-plugin and MIG configs to resources to teams, as a Mermaid flowchart with escaped labels."""

from __future__ import annotations

import re

from ... import plan as P
from .pools import sharing_detail


def flow_facts(plan: P.Plan) -> dict:
    """Nodes and edges of pools -> node labels -> device-plugin/MIG configs -> resources -> teams."""
    from ...render.teams import team_quota

    groups: dict[str, list[dict]] = {"pools": [], "labels": [], "configs": [], "resources": [], "teams": []}
    edges: list[dict] = []
    ids: dict[tuple[str, str], str] = {}
    totals: dict[str, int] = {}
    for pool in plan.pools:
        for resource in pool.capacity.per_node:
            totals[resource] = totals.get(resource, 0) + pool.capacity.total(resource)

    counts: dict[str, int] = {}

    def node(group: str, kind: str, key: str, lines: list[str]) -> str:
        if (kind, key) not in ids:
            ids[(kind, key)] = f"{kind}{counts.get(kind, 0)}"
            counts[kind] = counts.get(kind, 0) + 1
            groups[group].append({"id": ids[(kind, key)], "lines": lines})
        return ids[(kind, key)]

    for pool in plan.pools:
        p = pool.pool
        pid = node("pools", "pool", pool.name, [pool.name, f"{p.nodes} nodes x {p.gpus_per_node} {pool.model.id}"])
        lid = node("labels", "labels", pool.name, [f"{k}={v}" for k, v in pool.labels.items()])
        edges.append({"from": pid, "to": lid, "label": "NodeFeatureRule" if pool.nfd else "node template"})
        config = plan.device_plugin_configs[pool.device_plugin_key]
        kind = "whole GPUs" if "sharing" not in config else sharing_detail(pool) if pool.profile.mig is None else \
            "time-slicing" if pool.profile.time_slicing else "whole devices"
        did = node("configs", "dp", pool.device_plugin_key, ["device-plugin config", pool.device_plugin_key, kind])
        edges.append({"from": lid, "to": did, "label": P.DEVICE_PLUGIN_LABEL})
        source = did
        if pool.mig_key is not None:
            layout = P.mig_layout(pool.profile, pool.model)
            shape = ", ".join(f"{n} x{c}" for n, c in sorted(layout.items())) if layout else "MIG off"
            mid = node("configs", "mig", pool.mig_key, ["MIG config", pool.mig_key, shape])
            edges.append({"from": lid, "to": mid, "label": P.MIG_LABEL})
            if layout:
                source = mid
        for resource, units in sorted(pool.capacity.per_node.items()):
            rid = node("resources", "res", resource, [resource, f"{totals[resource]} units"])
            edges.append({"from": source, "to": rid, "label": f"{pool.name}: {units}/node x {p.nodes}"})
    queued = P.kueue_settings(plan.intent) is not None
    for team in sorted(plan.intent.spec.teams, key=lambda t: t.name):
        hard, _ = team_quota(plan, team)
        if not hard:
            continue
        tid = node("teams", "team", team.name, [f"team {team.name}", ", ".join(sorted(team.namespaces))])
        if queued:  # Kueue counts per pool (a flavor each), ResourceQuotas per resource name
            for row in P.team_queue_rows(plan.intent, team, plan.strategy):
                if row.nominal:
                    edges.append({"from": ids[("res", row.resource)], "to": tid,
                                  "label": f"{row.pool}: nominal {row.nominal}"})
            continue
        for resource, count in hard.items():
            edges.append({"from": ids[("res", resource)], "to": tid, "label": f"quota {count}/namespace"})
    titles = {"pools": "Pools (intent)", "labels": "Node labels", "configs": "Device-plugin and MIG configs",
              "resources": "Resources", "teams": "Teams (Kueue ClusterQueue)" if queued else "Teams (ResourceQuota)"}
    return {"direction": "LR",
            "groups": [{"id": f"g_{name}", "title": titles[name], "nodes": nodes} for name, nodes in groups.items()
                       if nodes],
            "edges": edges}


#: Every character that could end or break a quoted Mermaid string, and what replaces it (mostly entity codes).
MERMAID_CODES = {'"': "#34;", "#": "#35;", "&": "#38;", "<": "#60;", ">": "#62;", "|": "#124;", "`": "#96;",
                 "\n": " ", "\r": " "}
# One regex pass per label: str.translate with multi-character replacements goes character by character.
_MERMAID_SPECIAL = re.compile("[" + re.escape("".join(MERMAID_CODES)) + "]")


def mermaid_text(label: str) -> str:
    """A label line for a quoted Mermaid string: every character that could end or break it as an entity code."""
    return _MERMAID_SPECIAL.sub(lambda m: MERMAID_CODES[m.group()], label)


def mermaid(flow: dict) -> str:
    """The flowchart as Mermaid source: quoted, escaped labels; ids are generated, so unique and keyword-free."""
    lines = [f"flowchart {flow['direction']}"]
    for group in flow["groups"]:
        lines.append(f'  subgraph {group["id"]}["{mermaid_text(group["title"])}"]')
        for item in group["nodes"]:
            text = "<br/>".join(mermaid_text(line) for line in item["lines"])
            lines.append(f'    {item["id"]}["{text}"]')
        lines.append("  end")
    for edge in flow["edges"]:
        lines.append(f'  {edge["from"]} -->|"{mermaid_text(edge["label"])}"| {edge["to"]}')
    return "\n".join(lines) + "\n"

"""The override report and the hand-over facts of one cluster: what deviates from the chart's defaults and why,
the pools, capacity against quotas, the path from intent to device, driver upgrade waves, rollback, acceptance.

`build_report` returns plain data (report.json is exactly it, with sorted keys); the Markdown of REPORT.md and of
`gpuconf diff --format markdown` comes from the jinja2 templates in gpuconf/output/templates, imported only when needed.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from .. import __version__, catalog
from .. import plan as P
from ..escape import md_code, md_comment, md_text, single_line
from ..findings import Finding, dotted
from ..render.values import lookup

API_VERSION = "gpuconf.dev/v1alpha1"
KIND = "ClusterReport"
NFD = "node-feature-discovery"
#: The codes of the rules about overrides; their findings are part of the report (validation shows them too).
OVERRIDE_CODES = ("GC319", "GC326", "GC341", "GC342", "GC343")
#: The attributes of a plain dict; any other `x.name` in a template is a key (see _environment).
DICT_ATTRIBUTES = frozenset(dir(dict))


# --- the override report ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deviation:
    """One leaf of the rendered values that differs from the chart's base default, with its reason and origin."""

    path: tuple[str, ...]
    base: Any
    base_present: bool
    value: Any
    reason: str
    origin: tuple
    line: int
    source: str  # "override" (spec.overrides) or "derived" (gpuconf computed it from the intent)
    file: str  # the intent file the origin is in (a fleet's cluster is merged from several)
    set_at: tuple[str, ...]  # the values path that was set (a map or a list covers several leaves)
    notes: tuple[str, ...]

    def as_dict(self) -> dict:
        """The JSON form, as report.json and `gpuconf diff --format json` carry it."""
        return {
            "path": values_path(self.path),
            "base": self.base,
            "basePresent": self.base_present,
            "value": self.value,
            "reason": self.reason,
            "origin": dotted(self.origin),
            "location": f"{self.file}:{self.line}",
            "line": self.line,
            "source": self.source,
            "setAt": values_path(self.set_at),
            "notes": list(self.notes),
        }


def values_path(parts: tuple[str, ...]) -> str:
    """A dotted values path; a key that itself contains a dot is quoted (operator.nodeSelector."kubernetes.io/os")."""
    return ".".join(json.dumps(p) if "." in p else p for p in parts)


def leaves(value: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of every leaf: a scalar, a list or an empty map (Helm replaces these whole)."""
    if isinstance(value, dict) and value:
        for key in sorted(value):
            yield from leaves(value[key], (*prefix, key))
    else:
        yield prefix, value


def deviations(plan: P.Plan, values) -> list[Deviation]:
    """Every leaf the rendered values change relative to the chart's base defaults, in path order."""
    defaults = plan.chart.defaults
    out = []
    for change in values.deviations():
        source = "override" if change.origin[:2] == ("spec", "overrides") else "derived"
        for path, value in leaves(change.value, change.path):
            present, base = lookup(defaults, path)
            if present and base == value:
                continue  # inside a map the chart already has this leaf: Helm's merge keeps it as it is
            out.append(Deviation(path, base, present, value, change.why, change.origin, plan.line(change.origin),
                                 source, intent_file(plan, change.origin), change.path,
                                 tuple(quirks(plan.chart, path, present, base, value, source))))
    return sorted(out, key=lambda d: d.path)


def intent_file(plan: P.Plan, origin: tuple) -> str:
    """The file an intent path comes from: the intent itself, or the fleet file that set it."""
    source = getattr(plan.document, "source", None)
    return source(origin) if callable(source) else plan.source


def _under(path: str, key: str) -> bool:
    return path == key or path.startswith(key + ".")


def quirks(facts: catalog.ChartFacts, parts: tuple[str, ...], present: bool, base: Any, value: Any,
           source: str) -> list[str]:
    """The chart's known quirks that a reviewer of this values leaf should know (gpu-operator-facts §4, §10)."""
    path = ".".join(parts)
    notes = []
    for key in facts.template_only_keys:
        if _under(path, key):
            notes.append(f"`{key}` is read by the chart's templates although its values.yaml lacks it: a real key, "
                         "not a typo")
            break
    for key in facts.dead_keys:
        if _under(path, key):
            notes.append(f"no template of chart {facts.version} reads `{key}`: this value has no effect")
    for key, field in sorted(facts.renamed_keys.items()):
        if _under(path, key):
            rest = path[len(key):]
            notes.append(f"the chart renders `{key}` into the ClusterPolicy as `spec.{field}`: look for "
                         f"`spec.{field}{rest}` in `kubectl get clusterpolicy -o yaml`")
    if source == "override":
        for key in facts.verbatim_blocks:
            if _under(path, key):
                notes.append(f"`{key}` is copied verbatim (toYaml) into the ClusterPolicy: its keys must be "
                             "ClusterPolicy field names")
    if present and isinstance(base, list) and base and isinstance(value, list):
        kept = [item for item in base if item in value]
        if len(kept) == len(base):
            notes.append(f"Helm replaces lists instead of merging them: this list is the whole value and repeats "
                         f"the chart's {_plural(len(base), 'default entry', 'default entries')}")
        else:
            lost = [item for item in base if item not in value]
            notes.append("Helm replaces lists instead of merging them: the chart's default "
                         f"{'entry' if len(lost) == 1 else 'entries'} {_compact(lost)} "
                         f"{'is' if len(lost) == 1 else 'are'} dropped")
    if parts[0] == NFD and NFD in facts.free_form_map_paths and not present:
        notes.append(f"gpuconf has no defaults of the NFD subchart {facts.nfd_chart_version} of chart "
                     f"{facts.version}, so this base value is unknown rather than absent")
    return notes


def chart_notes(plan: P.Plan) -> list[str]:
    """Defaults of the pinned chart that change the cluster although the intent never mentions them."""
    return chart_notes_for(plan.intent, plan.chart)


def chart_notes_for(intent, facts: catalog.ChartFacts) -> list[str]:
    """chart_notes for an intent on any chart version."""
    notes = []
    defaults = facts.defaults
    spec = intent.spec
    overridden = any(_under(o.path, "dcgmExporter.serviceMonitor") or o.path in ("dcgmExporter", "dcgmExporter.enabled")
                     for o in spec.overrides)
    if (lookup(defaults, ("dcgmExporter", "serviceMonitor", "enabled")) == (True, True)
            and lookup(defaults, ("dcgmExporter", "enabled")) == (True, True)
            and spec.monitoring is None and not overridden):
        before = [v for v in catalog.chart_versions() if _version(v) < _version(facts.version)
                  and lookup(catalog.chart(v).defaults, ("dcgmExporter", "serviceMonitor", "enabled")) == (True, False)]
        since = f"; it was false up to {before[-1]}" if before else ""
        notes.append(f"Chart {facts.version} creates a ServiceMonitor for the DCGM exporter by default "
                     f"(`dcgmExporter.serviceMonitor.enabled: true`{since}). It needs the Prometheus Operator's "
                     "monitoring.coreos.com CRDs in the cluster. This intent has no `monitoring` section: install "
                     "those CRDs, or add `monitoring: {serviceMonitor: false}` to the intent.")
    return notes


def override_findings(plan: P.Plan) -> list[Finding]:
    """The findings of the override rules (reasons, defaults, derived values) for the plan's intent."""
    if plan.document is None:
        return []
    from ..findings import sort_findings
    from ..intent.rules import RULES, Context

    ctx = Context(plan.intent, plan.document)
    return sort_findings(f for r in RULES if r.code in OVERRIDE_CODES for f in r.check(ctx))


# --- the hand-over facts ---------------------------------------------------------------------------------------


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.lstrip("v").split("."))


def sharing_detail(pool: P.PoolPlan) -> str:
    """How a pool's GPUs are shared, in a few words."""
    prof = pool.profile
    parts = []
    if prof.mig is not None:
        layout = P.mig_layout(prof, pool.model) or {}
        shape = ", ".join(f"{name} x{count}" for name, count in sorted(layout.items()))
        parts.append(f"MIG {prof.mig.preset} ({shape})" if prof.mig.preset else f"MIG {shape}")
    if prof.mps is not None:
        parts.append(f"MPS x{prof.mps.replicas}" + (" (renamed .shared)" if prof.mps.rename_by_default else ""))
    if prof.time_slicing is not None:
        ts = prof.time_slicing
        extra = [w for w, on in (("renamed .shared", ts.rename_by_default),
                                 ("1 unit per pod", ts.fail_requests_greater_than_one)) if on]
        parts.append(f"time-slicing x{ts.replicas}" + (f" ({', '.join(extra)})" if extra else ""))
    return " + ".join(parts) or "whole GPUs"


def _driver_fact(plan: P.Plan, pool: P.PoolPlan) -> dict:
    cluster_version = plan.intent.spec.driver.version
    if pool.driver == "preinstalled":
        return {"mode": "preinstalled", "version": None,
                "text": f"preinstalled host driver ({P.DRIVER_DEPLOY_LABEL}=false)"}
    if pool.driver == "cluster":
        version = cluster_version or str(plan.chart.defaults["driver"]["version"])
        how = "cluster default" if cluster_version else "chart default"
        return {"mode": "cluster", "version": version, "text": f"{version} ({how})"}
    if pool.wave is not None:
        return {"mode": "wave", "version": pool.driver,
                "text": f"{pool.driver} (NVIDIADriver gpuconf-{pool.name}, upgrade wave {pool.wave})"}
    return {"mode": "pool", "version": pool.driver, "text": f"{pool.driver} (NVIDIADriver gpuconf-{pool.name})"}


def pool_facts(plan: P.Plan) -> list[dict]:
    """One row per pool: model, size, sharing, what it advertises, taints, driver, labels and how they get there."""
    from ..render.nodes import label_sources
    from ..render.names import job_name

    sources = label_sources(plan)
    rows = []
    for pool in plan.pools:
        p = pool.pool
        rows.append({
            "name": pool.name,
            "line": plan.line(("spec", "pools", pool.index)),
            "model": pool.model.id,
            "modelDeclared": pool.model.declared,
            "gpusPerNode": p.gpus_per_node,
            "nodes": p.nodes,
            "minNodes": P.min_nodes(plan.intent, p),
            "gpus": p.gpus_per_node * p.nodes,
            "sharing": {"profile": p.sharing, "kind": P.sharing_kind(pool.profile), "detail": sharing_detail(pool)},
            "resources": [{"name": r, "perNode": n, "total": n * p.nodes} for r, n in sorted(pool.capacity.per_node.items())],
            "taints": [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in p.taints],
            "driver": _driver_fact(plan, pool),
            "labels": dict(pool.labels),
            "labelledBy": sources[pool.name],
            "devicePluginConfig": pool.device_plugin_key,
            "migConfig": pool.mig_key,
            "probe": job_name(pool.name),
            "probeMode": P.probe_mode(plan.intent, p),
        })
    return rows


def platform_notes(plan: P.Plan) -> list[dict]:
    """What gpuconf set for the cluster's platform, what to do outside gpuconf, and what is not verified."""
    from ..render.platform import notes

    return notes(plan)


def declared_model_facts(plan: P.Plan) -> list[dict]:
    """The GPU models the intent declares (spec.gpuModels): facts gpuconf takes on trust, not from its catalogue."""
    rows = []
    for model_id, model in sorted(P.declared_models(plan.intent).items()):
        rows.append({
            "id": model_id, "line": plan.line(("spec", "gpuModels", model_id)), "name": model.name,
            "pciDeviceIds": list(model.pci_device_ids), "pciSubsystemIds": list(model.pci_subsystem_ids),
            # A whole number of GiB as an integer: report.json stays plain data (orjson's fast path).
            "memoryGiB": int(model.memory_gib) if float(model.memory_gib).is_integer() else model.memory_gib,
            "computeCapability": model.compute_capability,
            "productLabels": list(model.product_labels),
            "pools": [p.name for p in plan.pools if p.model.id == model_id],
        })
    return rows


def capacity_facts(plan: P.Plan) -> tuple[list[dict], list[dict], list[str]]:
    """Team quotas against the capacity of the resources they name, per resource name, and the caveats."""
    from ..render.teams import team_quota

    advertised: dict[str, list[tuple[str, int]]] = {}
    for pool in plan.pools:
        for resource in sorted(pool.capacity.per_node):
            advertised.setdefault(resource, []).append((pool.name, pool.capacity.total(resource)))
    tainted = {pool.name for pool in plan.pools if pool.pool.taints}
    names = {resource: [name for name, _ in pools] for resource, pools in advertised.items()}
    teams, asked, caveats = [], {}, []
    # A ResourceQuota gives each namespace the whole quota; a Kueue ClusterQueue holds it once for the team.
    per_namespace = P.resource_quotas(plan.intent)
    for index, team in sorted(enumerate(plan.intent.spec.teams), key=lambda item: item[1].name):
        hard, sources = team_quota(plan, team)
        quotas = []
        for resource, count in hard.items():
            total = count * len(team.namespaces) if per_namespace else count
            asked.setdefault(resource, []).append((team.name, total))
            chosen = set(sources[resource])
            others = [name for name in names[resource] if name not in chosen]
            quotas.append({
                "resource": resource, "perNamespace": count, "namespaces": len(team.namespaces), "total": total,
                "pools": sources[resource],
                "poolCapacity": sum(plan.pool_by_name[name].capacity.total(resource) for name in sources[resource]),
                "alsoUsableOn": others,
            })
            if others and per_namespace:
                guarded = [n for n in others if n in tainted]
                tail = (f" Of those, {', '.join(guarded)} {'is' if len(guarded) == 1 else 'are'} tainted, so only pods "
                        "that tolerate the taint get there." if guarded else "")
                caveats.append(f"Team {team.name}: its quota on `{resource}` (from pool(s) {', '.join(sources[resource])}) "
                               f"also lets its pods use `{resource}` on {', '.join(others)}: a ResourceQuota counts per "
                               f"resource name, not per pool; a pod lands wherever its nodeSelector and tolerations "
                               f"allow.{tail}")
            if len(sources[resource]) > 1 and per_namespace:
                caveats.append(f"Team {team.name}: the quotas of pools {', '.join(sources[resource])} are summed into "
                               f"one limit of {count} `{resource}` per namespace, since they advertise the same name.")
        teams.append({"name": team.name, "namespaces": sorted(team.namespaces), "priority": team.priority,
                      "line": plan.line(("spec", "teams", index)), "quotas": quotas})
    resources = []
    for resource, pools in sorted(advertised.items()):
        capacity = sum(units for _, units in pools)
        quota = sum(total for _, total in asked.get(resource, []))
        resources.append({"resource": resource, "pools": [{"pool": n, "units": u} for n, u in pools],
                          "capacity": capacity, "quota": quota, "teams": sorted(n for n, _ in asked.get(resource, [])),
                          "unassigned": capacity - quota})
    return teams, resources, caveats


# --- team queues (Kueue) ---------------------------------------------------------------------------------------


def queueing_facts(plan: P.Plan) -> dict | None:
    """The Kueue queues: flavors, each team's ClusterQueue (team x pool x resource: nominal, borrowing, lending),
    the policy they all state, and what a user puts on a Job; None when Kueue is off."""
    kueue = P.kueue_settings(plan.intent)
    if kueue is None:
        return None
    from ..emit import dump
    from ..render import kueue as K
    from ..render.teams import priority_class_name

    cohort = kueue.cohort

    def limit(value: int | None, kind: str) -> str:
        if not cohort:
            return "none (no cohort)"
        if value is None:
            return "no limit" if kind == "borrow" else "all unused"
        return str(value)

    teams = []
    for team in K.queued_teams(plan):
        rows = [{"pool": r.pool, "flavor": K.flavor_name(r.pool), "resource": r.resource, "nominal": r.nominal,
                 "borrowingLimit": r.borrowing_limit, "lendingLimit": r.lending_limit,
                 "borrowing": limit(r.borrowing_limit, "borrow"), "lending": limit(r.lending_limit, "lend"),
                 "poolCapacity": plan.pool_by_name[r.pool].capacity.total(r.resource)}
                for r in P.team_queue_rows(plan.intent, team, plan.strategy)]
        settings = kueue.teams.get(team.name)
        other = settings.other_resources if settings is not None else {}
        teams.append({"name": team.name, "clusterQueue": K.cluster_queue_name(team.name),
                      "localQueue": K.LOCAL_QUEUE, "namespaces": sorted(team.namespaces),
                      "priorityClass": priority_class_name(team.priority), "rows": rows,
                      "otherResources": [{"resource": r, "nominal": q} for r, q in sorted(other.items())]})
    policy = kueue.preemption
    example = None
    if teams:
        # The first team and pool with a quota of their own (a quota of 0 only borrows).
        first, row = next(((t, r) for t in teams for r in t["rows"] if r["nominal"]),
                          (teams[0], teams[0]["rows"][0]))
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "my-job", "namespace": first["namespaces"][0],
                            "labels": {K.QUEUE_LABEL: K.LOCAL_QUEUE, K.PRIORITY_CLASS_LABEL: first["priorityClass"]}},
               "spec": {"template": {"spec": {
                   "restartPolicy": "Never",
                   "nodeSelector": {P.POOL_LABEL: row["pool"]},
                   "containers": [{"name": "main", "image": "IMAGE", "resources": {
                       "requests": {"cpu": "1", "memory": "4Gi"}, "limits": {row["resource"]: 1}}}]}}}}
        comments = {
            ("metadata", "labels", K.QUEUE_LABEL): "optional: Kueue sets it on a Job of a namespace with a "
                                                  "LocalQueue named default",
            ("metadata", "labels", K.PRIORITY_CLASS_LABEL): "required for the team's tier: without it (and without "
                                                           "a pod priorityClassName) Kueue gives the Job priority 0",
            ("spec", "template", "spec", "nodeSelector"): "optional: picks the pool (its flavor); without it Kueue "
                                                          "tries the team's pools in spec.pools order",
        }
        example = dump(job, comments, top=True)
    excluded = P.kueue_excluded_prefixes(kueue)
    resources: dict = {"quotaCheckStrategy": kueue.quota_check_strategy}
    if excluded:
        resources["excludeResourcePrefixes"] = list(excluded)
    # Kueue v0.19.2 apis/config/v1beta2/configuration_types.go (Configuration.Resources: quotaCheckStrategy,
    # excludeResourcePrefixes); config/components/manager: the file controller_manager_config.yaml of ConfigMap
    # kueue-manager-config in kueue-system; charts/kueue/values.yaml: managerConfig.controllerManagerConfigYaml.
    configuration = dump({"apiVersion": K.CONFIG_API_VERSION, "kind": "Configuration", "resources": resources},
                         {("resources",): "merge into your Kueue Configuration; the manager reads it when it starts"},
                         top=True)
    return {
        "version": kueue.version,
        "apiVersion": K.releases()[kueue.version]["ClusterQueue"],
        "excludedPrefixes": list(excluded),
        "configuration": configuration,
        "unqueuedPrefixes": list(P.UNQUEUED_RESOURCE_PREFIXES),
        "cohort": cohort,
        "queueingStrategy": kueue.queueing_strategy,
        "quotaCheckStrategy": kueue.quota_check_strategy,
        "resourceQuotas": kueue.resource_quotas,
        "preemption": {"withinClusterQueue": policy.within_cluster_queue,
                       "reclaimWithinCohort": policy.reclaim_within_cohort,
                       "borrowWithinCohort": policy.borrow_within_cohort},
        "flavors": [{"name": K.flavor_name(p.name), "pool": p.name, "nodeLabels": {P.POOL_LABEL: p.name},
                     "tolerations": [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
                                     for t in p.pool.taints]} for p in plan.pools],
        "anyNodeFlavor": K.ANY_NODE_FLAVOR,
        "acceptanceQueue": K.ACCEPTANCE,
        "teams": teams,
        "teamsWithoutQueue": sorted(t.name for t in plan.intent.spec.teams if not t.quota),
        "queueLabel": K.QUEUE_LABEL,
        "priorityClassLabel": K.PRIORITY_CLASS_LABEL,
        "jobExample": example,
    }


# --- the path from the intent to the device (a Mermaid flowchart) -----------------------------------------------


def flow_facts(plan: P.Plan) -> dict:
    """Nodes and edges of pools -> node labels -> device-plugin/MIG configs -> resources -> teams."""
    from ..render.teams import team_quota

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


# --- driver upgrade waves, rollback, acceptance -----------------------------------------------------------------


def upgrade_facts(plan: P.Plan, merged: dict) -> dict:
    """Where the driver upgrade policy lives and what the operator reads there, and the upgrade as waves of commits."""
    from ..render import chart as C
    from ..render.nodes import nvidia_drivers

    spec = plan.intent.spec
    managed = [p for p in plan.pools if p.driver != "preinstalled"]
    preinstalled = [p.name for p in plan.pools if p.driver == "preinstalled"]
    own = [p for p in plan.pools if p.driver not in ("cluster", "preinstalled") and p.wave is None]
    drivers = {d["spec"]["nodeSelector"][P.POOL_LABEL]: d for d in nvidia_drivers(plan, merged)}
    default_cr = C.default_nvidiadriver(merged)
    if drivers:
        # NVIDIADriver mode: each object's own policy, with the operator's defaults for what it lacks.
        policy = C.effective_nvd_policy(next(iter(drivers.values()))["spec"])
        where = ("NVIDIADriver mode: the operator reconciles each NVIDIADriver's own `spec.upgradePolicy` and ignores "
                 "the ClusterPolicy's. gpuconf writes the policy below into every NVIDIADriver it renders ("
                 + ", ".join(f"`{d['metadata']['name']}`" for d in drivers.values()) + ")"
                 + ("; the chart's `NVIDIADriver/default` (GPU nodes of no pool) gets it from the values"
                    if default_cr is not None else "") +
                 ". `maxParallelUpgrades` and `maxUnavailable` count per NVIDIADriver: pools whose NVIDIADrivers "
                 "change in one commit upgrade side by side.")
    elif default_cr is not None and plan.intent.spec.cluster.allocation == "dra":
        # The GPUCluster stack installs operator drivers only through NVIDIADrivers: the chart's default one.
        policy = C.effective_nvd_policy(default_cr)
        where = ("NVIDIADriver mode (the DRA stack has no ClusterPolicy): the operator reconciles the chart's "
                 "`NVIDIADriver/default`, whose `spec.upgradePolicy` the chart renders from the values' "
                 "`driver.upgradePolicy`; it applies to every managed node at once. DRA nodes take no automatic "
                 "upgrades, so `autoUpgrade` is false.")
    else:
        policy = C.upgrade_policy(merged) or C.OPERATOR_DEFAULT_POLICY
        where = ("ClusterPolicy mode: the operator reads the ClusterPolicy's `spec.driver.upgradePolicy`, which the "
                 "chart renders from the values' `driver.upgradePolicy`; it applies to every managed node at once.")
    notes = []
    up = spec.driver.upgrade
    if up is not None and up.max_unavailable == 0 and not isinstance(up.max_unavailable, str):
        notes.append("`maxUnavailable: 0` is rendered as `\"0%\"`: the chart's template reads `maxUnavailable | "
                     "default \"25%\"`, and Helm's `default` would turn 0 into 25%.")
    facts: dict[str, Any] = {
        "managedPools": [p.name for p in managed], "preinstalledPools": preinstalled,
        "ownVersionPools": [p.name for p in own],
        "mode": "nvidiadriver" if drivers else "clusterpolicy",
        "where": where,
        "policy": {
            "autoUpgrade": policy["autoUpgrade"],
            "maxParallelUpgrades": policy["maxParallelUpgrades"],
            "maxUnavailable": policy["maxUnavailable"],
            "drain": policy["drain"],
            "podDeletion": policy["podDeletion"],
            "waitForCompletion": policy["waitForCompletion"],
            "source": "spec.driver.upgrade" if up else f"chart {plan.chart_version} defaults",
        },
        "notes": notes,
        "waves": [], "rollout": None, "finish": None, "ownVersionSteps": [],
        "perPoolDrivers": _version(plan.chart_version) >= (26, 7, 0),
    }
    if not managed:
        return facts
    limits = _limits(facts["policy"])
    watch = ("watch `kubectl get nodes -l {sel} -L nvidia.com/gpu-driver-upgrade-state` until every node shows "
             "`upgrade-done` (`upgrade-failed` stops the wave: revert the commit)")
    manual = ([] if facts["policy"]["autoUpgrade"] else [
        "`autoUpgrade` is false: the operator does not replace running driver pods. For each node of the wave, "
        f"drain it, then delete its driver pod (`kubectl -n {plan.namespace} delete pod -l app=nvidia-driver-daemonset "
        "--field-selector spec.nodeName=NODE`)"])
    current = spec.driver.version or str(plan.chart.defaults["driver"]["version"])
    cluster_ref = (f"`spec.driver.version` (line {plan.line(('spec', 'driver', 'version'))})" if spec.driver.version
                   else f"`spec.driver.version` (absent: the chart default {current} applies today)")
    waved = [p for p in plan.pools if p.wave is not None]
    if not waved:
        steps = [f"set {cluster_ref} to the new version, render, commit, sync: every pool on the cluster driver "
                 f"({', '.join(p.name for p in managed if p.driver == 'cluster') or 'none'}) takes it at once",
                 *manual, watch.format(sel="nvidia.com/gpu.present=true"), "run every pool's probe again"]
        if plan.intent.spec.cluster.allocation == "dra":
            pass  # no waves on the DRA stack (GC435): its nodes take no automatic upgrades
        elif facts["perPoolDrivers"]:
            steps.append("to upgrade pool by pool instead, declare `spec.driver.upgrade.waves` first (in a commit of "
                         "its own: it moves every pool to its own NVIDIADriver, which replaces the driver "
                         "DaemonSets, so do it in a maintenance window), then roll out with "
                         "`spec.driver.upgrade.rollout`")
        else:
            steps.insert(0, f"chart {plan.chart_version} has no per-pool NVIDIADriver fallback (GC329): a new version "
                            "reaches every managed pool at once; move to chart v26.7.0 or later for waves")
        if any(p.driver == "cluster" for p in managed):
            facts["waves"] = [{"number": 1, "name": "all pools on the cluster driver",
                               "pools": [p.name for p in managed if p.driver == "cluster"],
                               "nodes": sum(p.pool.nodes for p in managed if p.driver == "cluster"),
                               "status": "", "limits": limits, "steps": steps}]
    else:
        rollout = up.rollout
        target = rollout.version if rollout is not None else None
        reached = rollout.wave if rollout is not None else 0
        line = plan.line(("spec", "driver", "upgrade", "rollout")) if rollout is not None else None
        facts["rollout"] = {"from": current, "to": target, "wave": reached,
                            "line": line} if rollout is not None else None
        numbers = sorted({p.wave for p in waved})
        for number in numbers:
            pools = [p for p in waved if p.wave == number]
            names = ", ".join(f"`gpuconf-{p.name}`" for p in pools)
            if rollout is None:
                status = f"runs {current}"
                edit = (f"add `rollout: {{version: NEW, wave: {number}}}` under `spec.driver.upgrade`" if number == 1
                        else f"raise `spec.driver.upgrade.rollout.wave` to {number}")
            elif number <= reached:
                status = f"runs {target} (done)"
                edit = None
            else:
                status = f"runs {current}" + (" (next)" if number == reached + 1 else "")
                edit = f"raise `spec.driver.upgrade.rollout.wave` (line {line}) to {number}"
            sel = (f"{P.POOL_LABEL}={pools[0].name}" if len(pools) == 1
                   else f"'{P.POOL_LABEL} in ({','.join(p.name for p in pools)})'")
            steps = []
            if edit is not None:
                steps += [f"{edit}, render, commit, sync: the rendered diff changes only the version of {names}",
                          *manual, watch.format(sel=sel),
                          "run the probe(s) " + ", ".join(f"`gpuconf-probe-{p.name}`" for p in pools)
                          + " again (acceptance checklist) and let real workloads run before the next wave",
                          "to roll this wave back, revert its commit: the NVIDIADriver(s) get the previous version "
                          "back and the operator downgrades those nodes under the same policy"]
            facts["waves"].append({"number": number, "name": "canary" if number == 1 and len(numbers) > 1 else "",
                                   "pools": [p.name for p in pools], "nodes": sum(p.pool.nodes for p in pools),
                                   "status": status, "limits": _limits(facts["policy"], len(pools)), "steps": steps})
        finish = ("when every wave runs the new version: set " + cluster_ref + " to it and remove `rollout`; the "
                  "NVIDIADrivers already carry that version, so nothing changes on the nodes")
        facts["finish"] = finish
    if own:
        facts["ownVersionSteps"] = [f"pools with their own `driver.version` ({', '.join(p.name for p in own)}) are in "
                                    "no wave: change one pool's version per commit; the diff touches only its "
                                    "NVIDIADriver"]
    return facts


def _limits(policy: dict, drivers: int = 1) -> str:
    """The policy's limits in words; `drivers` NVIDIADrivers changing together each apply them to their own nodes."""
    drain = policy["drain"] or {}
    parallel, unavailable = policy["maxParallelUpgrades"], policy["maxUnavailable"]
    if drivers > 1:
        parts = [f"at most {parallel} node(s) at once per NVIDIADriver, so up to {parallel * drivers if parallel else 'all'} "
                 f"in this wave of {drivers} (maxParallelUpgrades; 0 = no limit)",
                 f"at most {unavailable} of each pool unavailable (maxUnavailable)"]
    else:
        parts = [f"at most {parallel} node(s) at once (maxParallelUpgrades; 0 = no limit)",
                 f"at most {unavailable} unavailable (maxUnavailable)"]
    if drain.get("enable"):
        parts.append(f"each node drained first (timeout {drain.get('timeoutSeconds')} s, force {show(drain.get('force'))}, "
                     f"deleteEmptyDir {show(drain.get('deleteEmptyDir'))})")
    else:
        pod_deletion = policy["podDeletion"] or {}
        parts.append(f"no drain: only GPU pods are deleted (timeout {pod_deletion.get('timeoutSeconds')} s, "
                     f"force {show(pod_deletion.get('force'))}, deleteEmptyDir {show(pod_deletion.get('deleteEmptyDir'))})")
    wait = policy["waitForCompletion"] or {}
    if wait.get("podSelector"):
        parts.append(f"waits for pods `{wait['podSelector']}` to finish (timeout {wait.get('timeoutSeconds')} s, "
                     "0 = forever)")
    return "; ".join(parts)


def helm_install_command(plan: P.Plan, values_file: str) -> str:
    """`helm upgrade --install` of the pinned chart from where it comes from: the intent's chart repository, the
    registry mirror's chart folder (oci://<registry>/charts), else NVIDIA's Helm repository."""
    from ..render.gitops import CHART, RELEASE_NAME, chart_source

    source = chart_source(plan)
    chart = source.chart_url if source.oci else f"{CHART} --repo {source.url}"
    return (f"helm upgrade --install {RELEASE_NAME} {chart} --version {plan.chart_version} "
            f"--namespace {plan.namespace} --create-namespace -f {values_file}")


def dra_class_of(resource: str) -> str | None:
    """The DeviceClass a DRA quota key counts."""
    from ..dra import class_of_key

    return class_of_key(resource)


def acceptance_facts(plan: P.Plan, out: str, tree_files: Iterable[str] = ()) -> list[dict]:
    """The acceptance checklist: apply, wait for the operator, then one probe Job per pool and what it proves."""
    from ..render import kueue as K
    from ..render import openshift, platform
    from ..render.names import job_name

    ns = plan.namespace
    spec = plan.intent.spec
    from ..emit import shell_word

    folder = f"{out.rstrip('/') or '.'}/{plan.name}"
    files = set(tree_files or ())
    values_file = shell_word(f"{folder}/values.yaml")
    steps = []
    early = [shell_word(f"{folder}/{path}") for path in ("manifests/namespaces.yaml", platform.PLATFORM_FILE) if path in files]
    if openshift.olm(plan):
        from .. import platforms

        nfd_ns = shell_word(platforms.openshift()["nfd"]["namespace"])
        csv = openshift.starting_csv(plan)
        if not openshift.nfd_operator_rendered(plan):
            steps.append(
                {"title": f"Prerequisite: install Red Hat's Node Feature Discovery Operator (OperatorHub, namespace "
                          f"{nfd_ns}); gpuconf's output does not install it unless spec.cluster.openshift.nfdOperator "
                          "is set",
                 "commands": [f"kubectl -n {nfd_ns} get csv", f"kubectl get crd {openshift.NFD_CRD}"],
                 "proves": "the NFD Operator's CSV is Succeeded and its NodeFeatureDiscovery CRD exists, so "
                           f"{platform.PLATFORM_FILE}, which holds a NodeFeatureDiscovery, applies"})
        nfd = (f"{platform.PLATFORM_FILE} installs Red Hat's NFD Operator (automatic approval) and subscribes to "
               if openshift.nfd_operator_rendered(plan) else "Subscribe to ")
        steps.append(
            {"title": f"{nfd}the certified GPU Operator (OLM), then approve the InstallPlan of CSV {csv} "
                      "(INSTALL_PLAN: its name in the list)",
             "commands": ["kubectl apply " + " ".join(f"-f {path}" for path in early),
                          f"kubectl -n {ns} get installplan",
                          f'kubectl -n {ns} patch installplan "$INSTALL_PLAN" --type merge '
                          "-p '{\"spec\":{\"approved\":true}}'",
                          f"kubectl -n {ns} get csv",
                          *([f"kubectl -n {nfd_ns} get csv"] if openshift.nfd_operator_rendered(plan) else [])],
             "proves": f"OLM installs CSV {csv} (phase Succeeded), the chart version the intent pins, and with it "
                       "the ClusterPolicy and NVIDIADriver CRDs; "
                       + ("the NFD Operator's CSV is Succeeded and " if openshift.nfd_operator_rendered(plan) else "")
                       + "the NFD Operator's NodeFeatureDiscovery instance starts labelling nodes"})
    else:
        if platform.PLATFORM_FILE in files:
            steps.append({"title": "Apply what the platform needs before the chart",
                          "commands": ["kubectl apply " + " ".join(f"-f {path}" for path in early)],
                          "proves": "the operator namespace and the platform's objects (GKE's ResourceQuota for "
                                    "system-node-critical pods) exist before the chart's pods are created"})
        steps.append(
            {"title": "Install or upgrade the GPU Operator chart with the rendered values",
             "commands": [helm_install_command(plan, values_file)],
             "proves": "the chart accepts the values (Helm validates the NFD subchart's values against its schema) "
                       f"and its CRDs ({'GPUCluster' if plan.intent.spec.cluster.allocation == 'dra' else 'ClusterPolicy'}"
                       ", NVIDIADriver, NodeFeatureRule) exist before the manifests use them"})
    queued = P.kueue_settings(plan.intent) is not None
    if queued:
        steps.append({"title": f"Install Kueue {P.kueue_settings(plan.intent).version} once (gpuconf does not install it)",
                      "commands": ["kubectl apply --server-side -f https://github.com/kubernetes-sigs/kueue/releases/"
                                   f"download/{P.kueue_settings(plan.intent).version}/manifests.yaml",
                                   "kubectl wait deploy/kueue-controller-manager -n kueue-system "
                                   "--for=condition=available --timeout=5m"],
                      "proves": "Kueue's CRDs and webhooks are in place before the queues are applied (Kueue's "
                                "installation guide; its Helm chart works as well)"})
    policy = openshift.CLUSTER_POLICY_NAME if openshift.olm(plan) else "cluster-policy"
    raw_folder, folder = folder, shell_word(folder)
    steps += [
        {"title": "Apply the manifests (or let Argo CD / Flux sync the folder)",
         "commands": [f"kubectl apply -k {folder}"],
         "proves": "namespaces, "
                   + ("DeviceClasses, claim templates" if plan.intent.spec.cluster.allocation == "dra"
                      else "sharing ConfigMaps")
                   + ", node labelling rules, quotas, RBAC and the probe Jobs are accepted "
                   "by the API server" + ("; the ClusterPolicy is the chart's, from values.yaml"
                                         if openshift.olm(plan) else "")},
        *_relabel_steps(plan),
        *([{"title": "Check that Kueue accepted the queues",
            "commands": ["kubectl wait clusterqueue --all --for=condition=Active --timeout=5m",
                         "kubectl get localqueues -A"],
            "proves": "Kueue's webhooks validated every ClusterQueue and each one found its ResourceFlavors (a "
                      "ClusterQueue is Active only then); every team namespace has the LocalQueue `default`"}]
          if queued else []),
        {"title": "Wait for the operator to finish",
         "commands": [f"kubectl wait clusterpolicy/{policy} --for=jsonpath='{{.status.state}}'=ready --timeout=30m"],
         "proves": "every operand the ClusterPolicy enables is running on every GPU node"},
    ]
    dra = plan.intent.spec.cluster.allocation == "dra"
    if dra:  # the GPUCluster instead of the ClusterPolicy; no mig-manager; devices in ResourceSlices
        from ..render.chart import GPUCLUSTER_NAME

        steps[-1] = {"title": "Wait for the operator to finish",
                     "commands": [f"kubectl wait gpucluster/{GPUCLUSTER_NAME} --for=jsonpath='{{.status.state}}'=ready "
                                  "--timeout=30m",
                                  "kubectl get resourceslices --field-selector spec.driver=gpu.nvidia.com"],
                     "proves": "the DRA driver, DCGM and the validator run on every GPU node (a ClusterPolicy left "
                               "over keeps the GPUCluster notReady with PrerequisiteNotMet), and the driver publishes "
                               "each node's devices in a ResourceSlice"}
    if not dra and any(p.mig_key is not None and P.mig_layout(p.profile, p.model) for p in plan.pools):
        steps.append({"title": "Check that MIG reconfiguration succeeded",
                      "commands": [f"kubectl get nodes -l {P.POOL_LABEL}={p.name} -L {P.MIG_LABEL}.state"
                                   for p in plan.pools if p.mig_key is not None and P.mig_layout(p.profile, p.model)],
                      "proves": f"mig-manager applied the layout: `{P.MIG_LABEL}.state` is `success` on every node "
                                "(`failed` or a stuck `pending` means the layout did not apply)"})
    for pool in plan.pools:
        mode = P.probe_mode(plan.intent, pool.pool)
        if mode == "off":
            continue
        job = job_name(pool.name)
        resource = pool.resource
        units = ", ".join(f"{n} {r}" for r, n in sorted(pool.capacity.per_node.items()))
        # A manual probe lies outside the kustomization (a pool that scales to zero would launch a node on every
        # sync): create it when the proof is wanted; it launches a node if the pool has none.
        create = ([f"kubectl -n {ns} delete job/{job} --ignore-not-found",
                   f"kubectl create -f {shell_word(f'{raw_folder}/probes/{pool.name}.yaml')}"] if mode == "manual" else [])
        steps.append({
            "title": f"Probe pool {pool.name}" + (" (manual: the pool scales to zero, or its probe is manual)"
                                                   if mode == "manual" else ""),
            "commands": [*create, f"kubectl -n {ns} wait job/{job} --for=condition=complete --timeout=15m",
                         f"kubectl -n {ns} logs job/{job}",
                         *([f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide | grep {job}"] if queued else []),
                         f"kubectl get nodes -l {P.POOL_LABEL}={pool.name} "
                         "-o custom-columns=NAME:.metadata.name,ALLOCATABLE:.status.allocatable"] if not dra else
                        [f"kubectl -n {ns} wait job/{job} --for=condition=complete --timeout=15m",
                         f"kubectl -n {ns} logs job/{job}",
                         *([f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide | grep {job}"] if queued else []),
                         f"kubectl -n {ns} get resourceclaims -l {P.POOL_LABEL}={pool.name} -o wide"],
            "proves": (f"a pod claiming 1 device of DeviceClass `{dra_class_of(resource)}` (claim template `{job}`) "
                       f"and tolerating only this pool's taints is scheduled onto a `{P.POOL_LABEL}={pool.name}` "
                       "node, so the node is labelled, the driver publishes its devices and the class selects them; "
                       "the DRA driver prepares a working device (`nvidia-smi -L` lists it in the log). The node's "
                       f"ResourceSlice should list what the pool promises per node: {units}"
                       + (f"; Kueue admitted the Job from queue `{K.ACCEPTANCE}`" if queued else "")) if dra else
                      ((f"Kueue admitted the Job from queue `{K.ACCEPTANCE}` on flavor `{K.flavor_name(pool.name)}` "
                        "(its Workload shows ADMITTED True; a Job that ran without a Workload was not queued: "
                        "Kueue's webhook is missing), and the flavor's tolerations took its pod, asking for "
                        f"1 `{resource}`, onto a " if queued else
                        f"a pod asking for 1 `{resource}` and tolerating only this pool's taints is scheduled onto a ")
                       + f"`{P.POOL_LABEL}={pool.name}` node, so the node is labelled and advertises the resource; the "
                       "device plugin, container toolkit and driver hand it a working device (`nvidia-smi -L` lists "
                       f"it in the log). Each node should show {units} allocatable"),
        })
    for team in sorted(spec.teams, key=lambda t: t.name):
        if team.quota:
            commands = [f"kubectl describe clusterqueue {K.cluster_queue_name(team.name)}"] if queued else []
            if P.resource_quotas(plan.intent):
                commands += [f"kubectl -n {ns_} describe resourcequota gpuconf-gpu-quota"
                             for ns_ in sorted(team.namespaces)]
            steps.append({"title": f"Check the quota of team {team.name}", "commands": commands,
                          "proves": "the team's namespaces are limited to the GPU units of the intent"
                                    + (", per pool (the ClusterQueue's flavors)" if queued else "")})
    if spec.monitoring is not None and spec.monitoring.service_monitor:
        steps.append({"title": "Check that Prometheus scrapes the DCGM exporter",
                      "commands": [f"kubectl -n {ns} get servicemonitor"],
                      "proves": "the ServiceMonitor exists; the Prometheus targets page should list the exporter pods"})
    steps.append({"title": "If a probe failed or timed out (the Jobs start as soon as they are applied)",
                  "commands": [f"kubectl -n {ns} delete job -l app.kubernetes.io/component=acceptance-probe",
                               f"kubectl apply -k {folder}"],
                  "proves": "a probe that ran before the operator was ready is run again"})
    return steps


def _relabel_steps(plan: P.Plan) -> list[dict]:
    """The checklist step for pools labelled by a node template, node-pool command or Karpenter NodePool: those
    label a node once, when it registers, so the nodes there now get the pool's labels and taints by hand."""
    from ..render.nodes import kubectl_label

    pools = [p for p in plan.pools if not p.nfd and p.pool.match.node_labels]
    if not pools:
        return []
    commands = []
    for pool in pools:
        selector = dict(pool.pool.match.node_labels)
        commands.append(kubectl_label(dict(pool.labels), selector=selector))
        commands += [f"kubectl taint nodes -l {','.join(f'{k}={v}' for k, v in sorted(selector.items()))} "
                     f"--overwrite {t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in pool.pool.taints]
    return [{"title": "Label the nodes that exist now of the pools whose node template, node-pool command or "
                      f"Karpenter NodePool labels only new nodes ({', '.join(p.name for p in pools)})",
             "commands": commands,
             "proves": "the running nodes carry the pool's labels and taints, which their template or NodePool gives "
                       "only to nodes created from now on; a changed nvidia.com/mig.config makes mig-manager "
                       "repartition the node, so drain it first where its layout changes (`gpuconf diff "
                       "--against-installation` lists those nodes)"}]


def rollback_steps(plan: P.Plan) -> list[str]:
    """What reverting the commit does, and what the operator then does on the nodes."""
    from ..render.openshift import olm

    from ..render.karpenter import karpenter_pools
    from ..render.nodes import node_templates

    karpenter = [p.name for p in karpenter_pools(plan)]
    scripts = {name.rsplit(".", 2)[0] for name in node_templates(plan) if name.endswith(".sh")}
    node_pools = [p.name for p in plan.pools if not p.nfd and p.name not in karpenter and p.name in scripts]
    template_pools = [p.name for p in plan.pools if not p.nfd and p.name not in karpenter and p.name not in scripts]
    manual = ("`kubectl apply -k` the previous folder (its ClusterPolicy included: OLM installed the operator)"
              if olm(plan) else "`helm upgrade` with the previous values.yaml and `kubectl apply -k` the previous folder")
    steps = [
        "Before a change (and before its revert): `gpuconf diff NEW.yaml --against <the rendered folder>` prints what "
        "the sync does to running nodes and jobs, worst first (drained or replaced nodes, restarts, renamed "
        "resources).",
        "Revert the commit (`git revert <sha>`), render with `gpuconf render` (CI's `--check` proves the output is "
        f"the previous one) and let Argo CD / Flux sync; or {manual}.",
        "Node labels: nfd-master re-applies the previous NodeFeatureRules, so the nodes get back their previous "
        f"`{P.DEVICE_PLUGIN_LABEL}` and `{P.MIG_LABEL}` values.",
        "Device-plugin configs: config keys are content-addressed, so the previous key comes back in the ConfigMap "
        "and the label points at it again; the config-manager sidecar switches the plugin to it and the node "
        "advertises the previous units. Running pods keep their devices.",
        f"MIG: a changed `{P.MIG_LABEL}` makes mig-manager repartition the GPUs; it pauses the GPU operands on the "
        f"node meanwhile and reports `{P.MIG_LABEL}.state` (pending, then success). GPU pods on the node must be "
        "gone first.",
        "Driver: the previous version returns to the ClusterPolicy (or the pool's NVIDIADriver) and the upgrade "
        "controller rolls it out like any upgrade, in the same waves and under the same limits (watch "
        "`kubectl get nodes -L nvidia.com/gpu-driver-upgrade-state`).",
        "Chart values (tolerations, images, monitoring): the operator updates the ClusterPolicy's DaemonSets; pods "
        "restart node by node.",
    ]
    if plan.intent.spec.cluster.allocation == "dra":
        # The revert and the node labels stay; device-plugin configs, mig-manager, the ClusterPolicy's driver and its
        # DaemonSets are the device-plugin stack's.
        steps[2] = (f"Node labels: nfd-master re-applies the previous NodeFeatureRules, so the nodes get back their "
                    f"previous `{P.POOL_LABEL}` values (the DRA stack reads no device-plugin or MIG label).")
        steps[3:7] = [
            "DeviceClasses and claim templates: the previous ones are applied in place; they apply to claims made from "
            "then on, and allocated claims keep their devices until their pods end.",
            "MIG: the DRA stack runs no mig-manager: instances made outside the operator (migPartitions external) "
            "must be remade with the previous layout by whatever made them, then the driver's kubelet plugin "
            "restarted; dynamic MIG makes instances per claim and needs nothing.",
            "Driver: the previous version returns to the NVIDIADriver objects; DRA nodes take no automatic "
            "upgrades, so replace each node's driver pod (drain first) or the nodes themselves.",
            "Chart values (tolerations, images, feature gates, monitoring): the operator updates the GPUCluster's "
            "DaemonSets; pods restart node by node. The allocation stack itself is no rollback: reverting a switch "
            "of spec.cluster.allocation is a switch again (new clusters only).",
        ]
    from ..render.nodes import RANCHER_CONFIG

    distribution = plan.intent.spec.cluster.distribution
    if template_pools and distribution in RANCHER_CONFIG:
        steps.insert(3, f"Pools labelled by their node template ({', '.join(template_pools)}): "
                        f"{distribution.upper()}'s agent applies its config file's node-label at every start, so put "
                        f"the previous drop-in back and restart {RANCHER_CONFIG[distribution][1]}, or relabel the "
                        "nodes with `kubectl label --overwrite` (values in the pool table).")
    elif template_pools:
        steps.insert(3, f"Pools labelled by their node template ({', '.join(template_pools)}): the kubelet applies "
                        "`--node-labels` only when a node registers, so existing nodes keep their labels until they "
                        "are replaced; relabel them with `kubectl label --overwrite` (values in the pool table) or "
                        "roll the node group.")
    if node_pools:
        steps.insert(3, f"Pools created by a node-pool command ({', '.join(node_pools)}): its labels and taints are "
                        "set when a node is created, so existing nodes keep theirs; relabel them with `kubectl label "
                        "--overwrite` (values in the pool table) and update the node pool's labels with the "
                        "provider's CLI so that new nodes get them, or recreate the node pool.")
    if karpenter:
        # Karpenter hashes the NodePool's spec.template (labels, taints, ...): any edit of it is drift (karpenter-facts
        # §d), and Karpenter replaces nodes rather than relabelling them.
        steps.insert(3, f"Pools launched by a Karpenter NodePool ({', '.join(karpenter)}): their labels and taints "
                        "live in the NodePool's `spec.template`, and every edit of it, a revert included, is drift: "
                        "Karpenter replaces the nodes (drain, then a new node) instead of relabelling them. Reverting "
                        "restores the previous template, so nodes still launched from it are left alone and the "
                        "nodes launched since are replaced; give the NodePool a disruption budget "
                        "(`spec.disruption.budgets`) to replace one node at a time. Relabelling with kubectl does not "
                        "help: Karpenter compares the template, not the node's labels.")
    if not any(p.nfd for p in plan.pools):
        steps.remove(next(s for s in steps if s.startswith("Node labels: nfd-master")))
    return steps


# --- the whole report ------------------------------------------------------------------------------------------


def dra_facts(plan: P.Plan, merged: dict) -> dict | None:
    """The DRA section: the classes, the claim templates per team, the quota keys, Kueue's mappings, the gates."""
    from .. import dra
    from ..render import chart as C
    from ..render import dra as R

    if not dra.enabled(plan.intent):
        return None
    settings = plan.intent.spec.cluster.dra
    partitions = settings.mig_partitions if settings is not None else None
    classes = [{"name": d["metadata"]["name"], "pool": d["metadata"]["labels"][P.POOL_LABEL],
                "selects": d["metadata"]["annotations"]["gpuconf.dev/selects"],
                "expression": d["spec"]["selectors"][0]["cel"]["expression"]} for d in R.device_classes(plan)]
    claims: dict[tuple, dict] = {}
    for doc in R.claim_templates(plan):
        meta = doc["metadata"]
        key = (meta["labels"]["gpuconf.dev/team"], meta["name"])
        devices = doc["spec"]["spec"]["devices"]
        config = devices.get("config", [{}])[0].get("opaque", {}).get("parameters", {}).get("sharing")
        row = claims.setdefault(key, {
            "team": key[0], "template": meta["name"], "namespaces": [],
            "classes": sorted({r["exactly"]["deviceClassName"] for r in devices["requests"]}),
            "sameGpu": bool(devices.get("constraints")),
            "sharing": config["strategy"] if config else "exclusive"})
        row["namespaces"].append(meta["namespace"])
    mappings = []
    if P.kueue_settings(plan.intent) is not None:
        mappings = [{"name": dra.quota_key(c["name"]), "deviceClassNames": [c["name"]]}
                    for c in classes if dra.quota_key(c["name"]) in
                    {r for pool in plan.pools for r in pool.capacity.per_node}]
    mig = None
    if any(R.layout(pool) for pool in plan.pools):
        mig = ("dynamic: the driver's DynamicMIG gate (alpha) advertises every possible placement and creates an "
               "instance when a claim is prepared, destroying instances it did not create; do not run mig-parted or "
               "nvidia-smi mig on these nodes" if partitions == "dynamic" else
               "external: the instances are made outside the operator before the DRA driver starts (e.g. by a "
               "mig-parted systemd unit at boot, with the layouts below); the driver only publishes them and sees "
               "a new layout only after its plugin restarts")
    return {
        "stack": "GPUCluster",
        "gpuCluster": C.GPUCLUSTER_NAME,
        "driverVersion": str(C.get(merged, "draDriver.version")),
        "featureGates": dict(C.get(merged, "draDriver.featureGates") or {}),
        "computeDomains": bool(C.get(merged, "draDriver.computeDomains.enabled")),
        "migPartitions": mig,
        "migLayouts": [{"pool": pool.name, "layout": R.layout(pool)} for pool in plan.pools if R.layout(pool)],
        "classes": classes,
        "claims": [claims[k] for k in sorted(claims)],
        "kueueMappings": mappings,
        "helmApiVersions": "resource.k8s.io/v1/DeviceClass",
    }


def hazard_facts(intent, merged: dict) -> dict:
    """The known hazards that concern the cluster (gpuconf.output.hazards): applies, avoided, undecided."""
    from .hazards import report_facts

    return report_facts(intent, merged)


def build_report(plan: P.Plan, values, command, files: Iterable[str] = ()) -> dict:
    """Every fact of REPORT.md and report.json for a rendered plan; plain data, deterministic."""
    merged = values.merged()
    file = plan.source
    teams, resources, caveats = capacity_facts(plan)
    spec = plan.intent.spec
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "generated": {"by": f"gpuconf {__version__}", "from": file, "command": str(command)},
        "cluster": {
            "name": plan.name, "chartVersion": plan.chart_version, "namespace": plan.namespace,
            "kubernetesVersion": spec.cluster.kubernetes_version, "distribution": spec.cluster.distribution,
            "migStrategy": plan.strategy,
        },
        "overrides": [d.as_dict() for d in deviations(plan, values)],
        "chartNotes": chart_notes(plan),
        "findings": [f.as_dict() for f in override_findings(plan)],
        "pools": pool_facts(plan),
        "hazards": hazard_facts(plan.intent, merged),
        "gpuModels": declared_model_facts(plan),
        "platform": platform_notes(plan),
        "teams": teams,
        "capacity": resources,
        "quotaCaveats": caveats,
        "queueing": queueing_facts(plan),
        "flow": flow_facts(plan),
        "upgrade": upgrade_facts(plan, merged),
        "rollback": rollback_steps(plan),
        # The output folder is the render command's (a render.tree.Command), so commands can be pasted.
        "acceptance": acceptance_facts(plan, command.out, files),
        # Only on the DRA stack, so that the reports of device-plugin clusters keep their shape.
        **({"dra": dra_facts(plan, merged)} if plan.intent.spec.cluster.allocation == "dra" else {}),
        **({"admission": admission_facts(plan)} if plan.intent.spec.admission else {}),
    }


def admission_facts(plan: P.Plan) -> dict:
    """The admission policy (render/admission.py): where it is and which images it admits."""
    from ..render import admission

    return {"kind": "Policy", "name": admission.POLICY_NAME, "namespace": plan.namespace,
            "file": "manifests/admission.yaml", "images": admission.allowed_images(plan),
            "pinned": plan.image_lock is not None,
            "lock": plan.image_lock.file if plan.image_lock is not None else None}


def report_json(report: dict) -> str:
    """report.json: the report's facts for machines, keys sorted."""
    return dumps_json(report) + "\n"


def dumps_json(value: Any) -> str:
    """`json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)`, byte for byte; orjson writes it when it can.

    With an indent the standard library encodes in pure Python, about twenty times slower than orjson on a big
    report. orjson writes the same text for plain data: dicts, lists, strings, integers, booleans and None. It
    writes some floats its own way (0.00001 for 1e-05, null for NaN), and an override's value can be a float, so
    any other value goes to the standard library, as does one orjson refuses (an integer beyond 64 bits, a lone
    surrogate, nesting deeper than 254).
    """
    if _plain_json(value):
        import orjson

        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONEncodeError:
            pass
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


_JSON_LEAVES = frozenset({str, int, bool, type(None)})
_JSON_CONTAINERS = frozenset({dict, list, tuple})
_JSON_PLAIN = _JSON_LEAVES | _JSON_CONTAINERS


def _plain_json(value: Any) -> bool:
    """Whether value holds dicts, lists, tuples, strings, integers, booleans and None only: exactly these types,
    not subclasses of them."""
    # A loop, not recursion: a deeply nested override value must not exhaust the stack here.
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            children = item.values()
        elif kind is list or kind is tuple:
            children = item
        elif kind in _JSON_LEAVES:
            continue
        else:
            return False
        kinds = set(map(type, children))  # no Python loop over the strings and numbers that most containers hold
        if not kinds <= _JSON_PLAIN:
            return False
        if not kinds.isdisjoint(_JSON_CONTAINERS):
            stack.extend(child for child in children if type(child) in _JSON_CONTAINERS)
    return True


def override_section(report: dict) -> dict:
    """The part of the report that `gpuconf diff INTENT` prints."""
    keys = ("apiVersion", "kind", "generated", "cluster", "overrides", "chartNotes", "findings")
    return {k: report[k] for k in keys}


# --- text and Markdown -----------------------------------------------------------------------------------------


def show(value: Any) -> str:
    """A value on one line, as JSON (strings quoted, so "1.10" and 1.1 stay apart)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def report_text(report: dict) -> str:
    """The override report as plain text, one block per values leaf."""
    c = report["cluster"]
    rows = report["overrides"]
    lines = [f"{c['name']} ({report['generated']['from']}): "
             f"{_plural(len(rows), 'value differs', 'values differ')} from the defaults of GPU Operator chart "
             f"{c['chartVersion']}"]
    for row in rows:
        base = show(row["base"]) if row["basePresent"] else "(not in the chart's values.yaml)"
        lines += [f"{row['path']}", f"  default:  {base}", f"  rendered: {show(row['value'])}",
                  f"  why:      {row['reason']}", f"  from:     {row['origin']} ({row['location']}, {row['source']})"]
        lines += [f"  note:     {note}" for note in row["notes"]]
    for note in report["chartNotes"]:
        lines.append(f"chart note: {note}")
    for f in report["findings"]:
        lines.append(Finding(**f).text())
    return "\n".join(lines) + "\n"


#: The compiled templates: Python modules that tools/compile_templates.py (`make templates`) generates from
#: gpuconf/output/templates at build time and that are committed and shipped in the package. gpuconf never compiles a
#: template at run time and reads no cache: jinja2's bytecode cache would unpickle whatever a writable cache folder
#: holds (issue 29, item 5). The modules depend on jinja2's code generator, hence jinja2's pinned minor version.
COMPILED = Path(__file__).parent / "compiled_templates"
TEMPLATES = ("overrides.md.j2", "report.md.j2")


def environment(loader: Any = None):
    """A jinja2 environment with gpuconf's settings, filters and globals around `loader` (default: the compiled
    templates of the package). tools/compile_templates.py compiles the sources with the same settings."""
    import jinja2

    class Environment(jinja2.Environment):
        def getattr(self, obj: Any, attribute: str) -> Any:
            """`p.name` on the report's plain dicts: the key, as jinja2 finds it, without first failing an attribute
            lookup (an exception per table cell); dict's own attributes (`labels.items`) still come first."""
            if type(obj) is dict and attribute not in DICT_ATTRIBUTES:
                return obj[attribute] if attribute in obj else self.undefined(obj=obj, name=attribute)
            return super().getattr(obj, attribute)

    env = Environment(
        loader=loader if loader is not None else jinja2.ModuleLoader(str(COMPILED)),
        autoescape=False,  # Markdown, not HTML: free text goes through md_text (the `cell` filter)
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["line"] = single_line
    env.filters["comment"] = md_comment
    env.filters["cell"] = md_text
    env.filters["code"] = md_code
    env.filters["codes"] = md_codes
    env.filters["labels"] = md_labels
    env.filters["allocatable"] = md_allocatable
    env.filters["show"] = show
    env.globals["mermaid"] = mermaid
    return env


@functools.cache
def _environment():
    """The environment of the compiled templates (jinja2 is imported here, never at start-up), once per process."""
    return environment()


# A table cell that lists several values puts each on a line of its own. The filters below build such cells in
# Python: a jinja2 loop per cell that tests loop.last costs as much as the rest of the row.


def md_codes(values: Iterable, attribute: str | None = None) -> str:
    """Values (or each one's `attribute`) as inline code, one per line of a table cell; "" without values."""
    return "<br>".join([md_code(v if attribute is None else v[attribute]) for v in values])


def md_labels(labels: dict) -> str:
    """Node labels as inline `key=value` code, one per line of a table cell."""
    return "<br>".join([md_code(f"{key}={value}") for key, value in labels.items()])


def md_allocatable(resources: list[dict]) -> str:
    """What a pool's node advertises per resource, `perNode (total)`, one per line of a table cell."""
    return "<br>".join([f"{x['perNode']} ({x['total']})" for x in resources])


def report_markdown(report: dict) -> str:
    """REPORT.md."""
    return _environment().get_template("report.md.j2").render(r=report)


def overrides_markdown(report: dict) -> str:
    """The override report alone, as Markdown (for a pull-request comment)."""
    return _environment().get_template("overrides.md.j2").render(r=report)

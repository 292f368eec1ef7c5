"""Team queueing with Kueue: a ResourceFlavor per pool, a ClusterQueue per team, LocalQueues, WorkloadPriorityClasses.

A ResourceQuota counts per resource name, so a team's quota on `nvidia.com/gpu` from one pool admits its pods to
every pool that advertises `nvidia.com/gpu`. Kueue counts per flavor: a flavor per pool whose nodeLabels pin the
pool (`gpuconf.dev/pool`), so a workload admitted on a flavor gets that nodeSelector (and the flavor's tolerations)
injected into its pods when Kueue starts it (kubernetes-sigs/kueue v0.19.2 pkg/podset/podset.go, FromAssignment).

How Kueue reads what is rendered here (v0.19.2):

* ClusterQueue `resourceGroups`: a resource name and a flavor may each appear in only one group, and every flavor of
  a group lists every covered resource in the order of `coveredResources` (CRD: "Each resource and each flavor can
  only form part of one resource group"; CEL: same number of resources; webhook validateResourceGroups: duplicates,
  names in order). Groups here are the connected components of "pool advertises resource", so the structure is valid
  by construction; `problems` checks it again on the documents.
* A workload requesting a resource no group covers is inadmissible ("resource X unavailable in ClusterQueue",
  pkg/scheduler/flavorassigner) under Kueue's default quotaCheckStrategy BlockUndeclared, which is why cpu and
  memory need a group of their own (a flavor without node labels) unless Kueue ignores undeclared resources.
* Flavors of a group are tried in order for a workload that does not pin one with its nodeSelector; a flavor is
  only considered when the pod's nodeSelector agrees with the flavor's own label keys (checkFlavorForPodSets).
* borrowingLimit and lendingLimit must be absent without a cohort (CEL and webhook validateLimit), and a
  lendingLimit may not exceed the nominal quota (webhook validateLendingLimit). Only [flavor, resource] pairs a
  ClusterQueue lists can be borrowed (CRD, cohortName).
* `namespaceSelector` absent selects no namespace at all (CRD): every ClusterQueue here names its namespaces.
* A LocalQueue named `default` is what Kueue gives every Job of its namespace that names no queue
  (LocalQueueDefaulting, stable since v0.17), so a team's Jobs cannot bypass the queue by leaving the label out.
* Jobs need no `suspend: true`: Kueue's Job webhook suspends a Job that names a queue when it is created
  (jobframework.ApplyDefaultForSuspend; site docs tasks/run/jobs.md). A manifest that set it would also have Flux,
  which re-applies manifests, suspend a probe again after Kueue started it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction

from .. import plan as P
from .. import quantity
from . import metadata
from .names import ACCEPTANCE, PRIORITY_CLASS_LABEL, PRIORITY_LABEL, PROBE_REQUESTS, QUEUE_LABEL, TEAM_LABEL
from .teams import PRIORITY_VALUES, priority_class_name

GROUP = "kueue.x-k8s.io"
#: The API of Kueue's own Configuration file (v0.19.2 config/components/manager/controller_manager_config.yaml).
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
#: Kueue labels Jobs without a queue name with the LocalQueue of this name in their namespace.
LOCAL_QUEUE = "default"
#: The flavor of the non-GPU resources (cpu, memory): no node labels, so it pins nothing.
ANY_NODE_FLAVOR = "gpuconf-any-node"
#: Kueue v0.19.2's installation page: "A Kubernetes cluster with version 1.29 or newer".
MIN_KUBERNETES = (1, 29)
#: The kinds rendered here, in apply order (flavors and priority classes before the queues that name them).
KINDS = ("ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")
#: Limits of the v1beta2 CRDs and of the ClusterQueue webhook (validateTotalFlavors, ...TotalCoveredResources,
#: ...FlavorResourceCombinations).
MAX_GROUPS = 16
MAX_GROUP_RESOURCES = 64
MAX_GROUP_FLAVORS = 64
MAX_FLAVORS = 256
MAX_COVERED = 256
MAX_GROUP_COMBINATIONS = 512
MAX_TOLERATIONS = 8
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def flavor_name(pool: str) -> str:
    """The ResourceFlavor of a pool."""
    return f"gpuconf-pool-{pool}"


def cluster_queue_name(team: str) -> str:
    """The ClusterQueue of a team."""
    return f"gpuconf-team-{team}"


@functools.cache
def releases() -> dict[str, dict[str, str]]:
    """Kueue release -> kind -> the apiVersion rendered: the served storage version, never a deprecated one.

    From schemas/crds/index.json, derived from the release's CRDs (v0.19.2 serves v1beta1, deprecated, and v1beta2).
    """
    from ..output.verify import custom_kinds

    out: dict[str, dict[str, str]] = {}
    for key, entry in custom_kinds().items():
        api_version, _, kind = key.rpartition("/")
        if api_version.startswith(GROUP + "/") and entry["storage"] and not entry["deprecated"]:
            out.setdefault(entry["release"]["tag"], {})[kind] = api_version
    return {tag: kinds for tag, kinds in sorted(out.items()) if set(kinds) >= set(KINDS)}


# --- resource groups --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quota:
    """One [flavor, resource] of a ClusterQueue."""

    nominal: int | str
    borrowing_limit: int | str | None = None
    lending_limit: int | str | None = None

    def as_dict(self, resource: str) -> dict:
        """The ResourceQuota item of the flavor (Kueue's, not the core kind)."""
        out: dict = {"name": resource, "nominalQuota": self.nominal}
        if self.borrowing_limit is not None:
            out["borrowingLimit"] = self.borrowing_limit
        if self.lending_limit is not None:
            out["lendingLimit"] = self.lending_limit
        return out


def resource_groups(flavors: list[tuple[str, dict[str, Quota]]]) -> list[dict]:
    """Resource groups for flavors (in preference order) and the quotas each gives its resources.

    Flavors that share a resource name land in one group (the connected components), so every resource and every
    flavor is in exactly one group; each flavor lists all of its group's resources, 0 for those it lacks.
    """
    groups: list[tuple[set[str], list[int]]] = []
    for index, (_, quotas) in enumerate(flavors):
        names = set(quotas)
        joined = [g for g in groups if g[0] & names]
        groups = [g for g in groups if not g[0] & names]
        groups.append((names.union(*(g[0] for g in joined)), sorted([index, *(i for g in joined for i in g[1])])))
    out = []
    for covered, members in sorted(groups, key=lambda g: g[1][0]):
        resources = sorted(covered)
        out.append({"coveredResources": resources, "flavors": [
            {"name": flavors[i][0],
             "resources": [flavors[i][1].get(r, Quota(0)).as_dict(r) for r in resources]} for i in members]})
    return out


# --- the objects ------------------------------------------------------------------------------------------------


def render(plan: P.Plan) -> list[dict]:
    """Every Kueue object of the intent (none when Kueue is off)."""
    kueue = P.kueue_settings(plan.intent)
    if kueue is None:
        return []
    api = releases()[kueue.version]
    teams = queued_teams(plan)
    from . import nvlink

    return [*nvlink.topology(plan, api.get("Topology", "")), *_flavors(plan, api), *_priority_classes(plan, api, teams), *_cluster_queues(plan, api, teams),
            *_local_queues(plan, api, teams)]


def queued_teams(plan: P.Plan) -> list:
    """The teams that get a queue (those with a quota), by name."""
    return sorted((t for t in plan.intent.spec.teams if t.quota), key=lambda t: t.name)


def _flavors(plan: P.Plan, api: dict[str, str]) -> list[dict]:
    docs = []
    for pool in plan.pools:
        spec: dict = {"nodeLabels": {P.POOL_LABEL: pool.name}}
        # GKE's GPU taint too: a pod asking for a MIG or shared resource gets no toleration for nvidia.com/gpu from
        # ExtendedResourceToleration (it tolerates each requested resource's own name; gke-aks-facts §a).
        from .platform import pool_tolerations

        tolerations = pool_tolerations(plan, pool)
        if tolerations:
            spec["tolerations"] = tolerations
        if pool.pool.nvlink is not None:  # a job that asks for it lands inside one NVLink clique (render/nvlink.py)
            from .nvlink import TOPOLOGY

            spec["topologyName"] = TOPOLOGY
        docs.append({"apiVersion": api["ResourceFlavor"], "kind": "ResourceFlavor",
                     "metadata": metadata(plan, flavor_name(pool.name), labels={P.POOL_LABEL: pool.name}),
                     "spec": spec})
    docs.append({"apiVersion": api["ResourceFlavor"], "kind": "ResourceFlavor",
                 "metadata": metadata(plan, ANY_NODE_FLAVOR), "spec": {}})
    return docs


def _priority_classes(plan: P.Plan, api: dict[str, str], teams: list) -> list[dict]:
    used = {t.priority for t in teams}
    return [{"apiVersion": api["WorkloadPriorityClass"], "kind": "WorkloadPriorityClass",
             "metadata": metadata(plan, priority_class_name(tier), labels={PRIORITY_LABEL: tier}),
             "value": value,
             "description": f"gpuconf {tier} tier ({value}), the priority Kueue gives a workload that carries "
                            f"{PRIORITY_CLASS_LABEL}: {priority_class_name(tier)}; used by teams: "
                            f"{', '.join(t.name for t in teams if t.priority == tier)}."}
            for tier, value in PRIORITY_VALUES.items() if tier in used]


def team_flavors(plan: P.Plan, team) -> list[tuple[str, dict[str, Quota]]]:
    """The flavors of a team's ClusterQueue with their quotas: its pools (in spec.pools order), then cpu/memory."""
    by_pool: dict[str, dict[str, Quota]] = {}
    for row in P.team_queue_rows(plan.intent, team, plan.strategy):
        by_pool.setdefault(row.pool, {})[row.resource] = Quota(row.nominal, row.borrowing_limit, row.lending_limit)
    from .nvlink import CHANNEL_RESOURCE

    for pool, quotas in by_pool.items():
        # A pod on an NVLink pool may claim its ComputeDomain's channel, which Kueue counts once it is mapped
        # (render/nvlink.py): at most one channel per GPU of the team's quota.
        gpus = [q.nominal for q in quotas.values()]
        if plan.pool_by_name[pool].pool.nvlink is not None and all(isinstance(n, int) for n in gpus):
            quotas[CHANNEL_RESOURCE] = Quota(sum(gpus))
    flavors = [(flavor_name(pool), quotas) for pool, quotas in by_pool.items()]
    settings = P.kueue_settings(plan.intent).teams.get(team.name)
    if settings is not None and settings.other_resources:
        flavors.append((ANY_NODE_FLAVOR, {r: Quota(q) for r, q in settings.other_resources.items()}))
    return flavors


def acceptance_flavors(plan: P.Plan) -> list[tuple[str, dict[str, Quota]]]:
    """The acceptance queue: 1 unit of each pool's probe resource, and the probes' cpu and memory."""
    flavors = [(flavor_name(pool.name), {r: Quota(1 if r == pool.resource else 0) for r in pool.capacity.per_node})
               for pool in plan.pools]
    flavors.append((ANY_NODE_FLAVOR, {r: Quota(times(q, len(plan.pools))) for r, q in PROBE_REQUESTS.items()}))
    return flavors


def times(quantity: str, n: int) -> str:
    """n times a quantity written as an integer and a suffix ("10m" x 3 = "30m")."""
    match = re.fullmatch(r"([0-9]+)([A-Za-z]*)", quantity)
    assert match, f"{quantity!r} is not an integer quantity"
    return f"{int(match[1]) * n}{match[2]}"


def _cluster_queues(plan: P.Plan, api: dict[str, str], teams: list) -> list[dict]:
    kueue = P.kueue_settings(plan.intent)
    policy = kueue.preemption
    docs = []
    for team in teams:
        spec: dict = {}
        if kueue.cohort:
            spec["cohortName"] = kueue.cohort
        spec.update({
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: team.name}},
            "preemption": {"borrowWithinCohort": {"policy": policy.borrow_within_cohort},
                           "reclaimWithinCohort": policy.reclaim_within_cohort,
                           "withinClusterQueue": policy.within_cluster_queue},
            "queueingStrategy": kueue.queueing_strategy,
            "resourceGroups": resource_groups(team_flavors(plan, team)),
        })
        docs.append({"apiVersion": api["ClusterQueue"], "kind": "ClusterQueue",
                     "metadata": metadata(plan, cluster_queue_name(team.name), labels={TEAM_LABEL: team.name}),
                     "spec": spec})
    # The probes' own queue: outside the cohort (it neither lends nor borrows), preempting nothing.
    docs.append({"apiVersion": api["ClusterQueue"], "kind": "ClusterQueue",
                 "metadata": metadata(plan, ACCEPTANCE, labels={"app.kubernetes.io/component": "acceptance-probe"}),
                 "spec": {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: plan.namespace}},
                          "preemption": {"borrowWithinCohort": {"policy": "Never"}, "reclaimWithinCohort": "Never",
                                         "withinClusterQueue": "Never"},
                          "queueingStrategy": "BestEffortFIFO",
                          "resourceGroups": resource_groups(acceptance_flavors(plan))}})
    return docs


def _local_queues(plan: P.Plan, api: dict[str, str], teams: list) -> list[dict]:
    docs = [{"apiVersion": api["LocalQueue"], "kind": "LocalQueue",
             "metadata": metadata(plan, LOCAL_QUEUE, ns, labels={TEAM_LABEL: team.name}),
             "spec": {"clusterQueue": cluster_queue_name(team.name)}}
            for team in teams for ns in sorted(team.namespaces)]
    docs.append({"apiVersion": api["LocalQueue"], "kind": "LocalQueue",
                 "metadata": metadata(plan, ACCEPTANCE, plan.namespace,
                                      labels={"app.kubernetes.io/component": "acceptance-probe"}),
                 "spec": {"clusterQueue": ACCEPTANCE}})
    return docs


# --- what JSON Schema cannot check ------------------------------------------------------------------------------


def problems(documents: list[dict]) -> list[str]:
    """Kueue's CEL rules and webhook checks that the converted CRD schemas cannot express, and gpuconf's own
    promises: every name a queue refers to exists, every LocalQueue's namespace is one its ClusterQueue selects, and
    every probe Job can be admitted."""
    by_kind: dict[str, list[dict]] = {}
    for doc in documents:
        by_kind.setdefault(doc["kind"], []).append(doc)
    flavors = {d["metadata"]["name"]: d for d in by_kind.get("ResourceFlavor", [])}
    queues = {d["metadata"]["name"]: d for d in by_kind.get("ClusterQueue", [])}
    namespaces = {d["metadata"]["name"]: d["metadata"].get("labels", {}) for d in by_kind.get("Namespace", [])}
    out = []
    for name, flavor in flavors.items():
        out += [f"ResourceFlavor/{name}: {m}" for m in _toleration_problems(flavor["spec"].get("tolerations", []))]
    for name, queue in queues.items():
        out += [f"ClusterQueue/{name}: {m}" for m in _queue_problems(queue["spec"], flavors)]
    local = {}
    for lq in by_kind.get("LocalQueue", []):
        ns, name = lq["metadata"]["namespace"], lq["metadata"]["name"]
        local[(ns, name)] = lq
        target = queues.get(lq["spec"]["clusterQueue"])
        where = f"LocalQueue {ns}/{name}"
        if target is None:
            out.append(f"{where}: ClusterQueue {lq['spec']['clusterQueue']} is not rendered")
            continue
        labels = namespaces.get(ns, {NAMESPACE_NAME_LABEL: ns})  # the operator namespace may be Helm's
        selected = {**labels, NAMESPACE_NAME_LABEL: ns}
        if any(selected.get(k) != v for k, v in target["spec"]["namespaceSelector"].get("matchLabels", {}).items()):
            out.append(f"{where}: its ClusterQueue's namespaceSelector does not select namespace {ns}")
    for job in by_kind.get("Job", []):
        queue_name = job["metadata"].get("labels", {}).get(QUEUE_LABEL)
        if queue_name is not None:
            out += [f"Job {job['metadata']['namespace']}/{job['metadata']['name']}: {m}"
                    for m in _admission_problems(job, local, queues, flavors, queue_name)]
    return out


def _toleration_problems(tolerations: list[dict]) -> list[str]:
    out = []
    for t in tolerations:  # the ResourceFlavor CRD's CEL rules on spec.tolerations
        if "key" not in t and t.get("operator") != "Exists":
            out.append("a toleration without key must use operator Exists")
        if t.get("operator", "Equal") not in ("Equal", "Exists"):
            out.append(f"toleration operator {t.get('operator')!r} is not Equal or Exists")
        if t.get("operator") == "Exists" and "value" in t:
            out.append("a toleration with operator Exists has no value")
        if "tolerationSeconds" in t and t.get("effect") != "NoExecute":
            out.append("tolerationSeconds needs effect NoExecute")
    return out


def _queue_problems(spec: dict, flavors: dict[str, dict]) -> list[str]:
    out = []
    cohort = bool(spec.get("cohortName"))
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_covered = 0
    if "namespaceSelector" not in spec:
        out.append("no namespaceSelector: the ClusterQueue would admit from no namespace")
    preemption = spec.get("preemption", {})
    if preemption.get("reclaimWithinCohort") == "Never" and \
            preemption.get("borrowWithinCohort", {}).get("policy", "Never") != "Never":
        out.append("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
    for i, group in enumerate(spec.get("resourceGroups", [])):
        covered = group["coveredResources"]
        total_covered += len(covered)
        total_flavors += len(group["flavors"])
        for resource in covered:
            if resource in seen_resources:
                out.append(f"resourceGroups[{i}]: resource {resource} is in another group too")
            seen_resources.add(resource)
        if sum(len(f["resources"]) for f in group["flavors"]) > MAX_GROUP_COMBINATIONS:
            out.append(f"resourceGroups[{i}]: more than {MAX_GROUP_COMBINATIONS} flavor-resource combinations")
        for flavor in group["flavors"]:
            where = f"resourceGroups[{i}] flavor {flavor['name']}"
            if flavor["name"] in seen_flavors:
                out.append(f"{where}: the flavor is in another group too")
            seen_flavors.add(flavor["name"])
            if flavor["name"] not in flavors:
                out.append(f"{where}: no such ResourceFlavor is rendered")
            names = [r["name"] for r in flavor["resources"]]
            if names != covered:
                out.append(f"{where}: resources {names} are not coveredResources {covered} in order")
            for quota in flavor["resources"]:
                nominal = quantity.parse(quota["nominalQuota"])
                for limit in ("borrowingLimit", "lendingLimit"):
                    if limit in quota and not cohort:
                        out.append(f"{where}: {limit} of {quota['name']} without a cohort")
                if "lendingLimit" in quota and quantity.parse(quota["lendingLimit"]) > nominal:
                    out.append(f"{where}: lendingLimit of {quota['name']} exceeds its nominalQuota")
                if nominal < 0:
                    out.append(f"{where}: negative nominalQuota of {quota['name']}")
    if total_flavors > MAX_FLAVORS:
        out.append(f"{total_flavors} flavors, more than Kueue's {MAX_FLAVORS}")
    if total_covered > MAX_COVERED:
        out.append(f"{total_covered} covered resources, more than Kueue's {MAX_COVERED}")
    return out


def _admission_problems(job: dict, local: dict, queues: dict, flavors: dict, queue_name: str) -> list[str]:
    """Why Kueue could not admit a probe Job through its LocalQueue, if anything (a flavor its nodeSelector agrees
    with must cover every resource it requests, with quota for it)."""
    ns = job["metadata"]["namespace"]
    lq = local.get((ns, queue_name))
    if lq is None:
        return [f"LocalQueue {queue_name} is not rendered in namespace {ns}"]
    pod = job["spec"]["template"]["spec"]
    requests: dict[str, Fraction] = {}
    for container in pod["containers"]:
        resources = container.get("resources", {})
        # Kueue counts requests and takes a limit as the request when none is given (site docs, workload).
        for name, value in {**resources.get("limits", {}), **resources.get("requests", {})}.items():
            requests[name] = requests.get(name, 0) + quantity.parse(value)
    out = []
    selector = pod.get("nodeSelector", {})
    for group in queues[lq["spec"]["clusterQueue"]]["spec"]["resourceGroups"]:
        wanted = {r: n for r, n in requests.items() if r in group["coveredResources"]}
        if not wanted:
            continue
        fits = False
        for flavor in group["flavors"]:
            labels = flavors[flavor["name"]]["spec"].get("nodeLabels", {})
            if any(k in selector and selector[k] != v for k, v in labels.items()):
                continue
            quota = {r["name"]: quantity.parse(r["nominalQuota"]) for r in flavor["resources"]}
            if all(quota[r] >= n for r, n in wanted.items()):
                fits = True
                break
        if not fits:
            out.append(f"no flavor of its ClusterQueue fits {sorted(wanted)} on nodeSelector {selector}")
    uncovered = [r for r in requests if not any(r in g["coveredResources"]
                                                for g in queues[lq["spec"]["clusterQueue"]]["spec"]["resourceGroups"])]
    if uncovered:
        out.append(f"its ClusterQueue covers no {', '.join(sorted(uncovered))}")
    return out

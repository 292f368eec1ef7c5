"""Team queueing with Kueue: the rendered ResourceFlavors, ClusterQueues, LocalQueues and WorkloadPriorityClasses,
read the way Kueue v0.19.2 reads them (its CRDs, CEL rules, webhook and flavor assignment)."""

from __future__ import annotations

import copy
import json
import textwrap

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLES, ROOT

YAML11 = YAML(typ="safe", pure=True)


def quantity(value):
    """A Kubernetes quantity as Kueue parses it (resource.ParseQuantity): gpuconf's one parser, tested on its own in
    tests/test_quantity.py."""
    from gpuconf.quantity import parse

    return parse(value)


def build(path):
    from gpuconf import plan as P
    from gpuconf.intent.validate import validate_path

    result = validate_path(path)
    assert result.ok, result.findings
    return P.build(result.intent, str(path), result.document)


def build_text(tmp_path, text: str):
    path = tmp_path / "intent.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return build(path)


def queued_examples():
    return [p for p in EXAMPLES if "\n  queueing:\n" in p.read_text(encoding="utf-8")]


@pytest.fixture(scope="module", params=queued_examples(), ids=lambda p: p.name)
def rendered(request):
    """A Kueue example: its plan and the documents of its rendered tree, as YAML readers see them."""
    from gpuconf.render.tree import Command, render_tree

    plan = build(request.param)
    tree = render_tree(plan, Command("x", "out"))
    docs = [d for path, text in tree.files.items() if path.startswith("manifests/")
            for d in YAML11.load_all(text) if d is not None]
    return plan, docs


def kinds(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def test_the_reference_example_uses_kueue():
    assert ROOT / "examples" / "heterogeneous.yaml" in queued_examples()


# --- the acceptance points: a flavor per pool, a queue per team with exactly the intent's quotas ------------------


def test_one_flavor_per_pool_pins_the_pool_and_carries_its_taints(rendered):
    from gpuconf import plan as P

    plan, docs = rendered
    flavors = {d["metadata"]["name"]: d["spec"] for d in kinds(docs, "ResourceFlavor")}
    assert set(flavors) == {f"gpuconf-pool-{p.name}" for p in plan.pools} | {"gpuconf-any-node"}
    for pool in plan.pools:
        spec = flavors[f"gpuconf-pool-{pool.name}"]
        assert spec["nodeLabels"] == {"gpuconf.dev/pool": pool.name}
        assert pool.labels["gpuconf.dev/pool"] == pool.name  # the label the pool's nodes really get
        assert spec.get("tolerations", []) == [P.toleration(t) for t in pool.pool.taints]
    assert flavors["gpuconf-any-node"] == {}


def _nominal(queue: dict) -> dict[tuple[str, str], float]:
    """(flavor, resource) -> nominal quota, read from the resource groups as Kueue's cache does."""
    out = {}
    for group in queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                key = (flavor["name"], resource["name"])
                assert key not in out
                out[key] = quantity(resource["nominalQuota"])
    return out


def test_one_cluster_queue_per_team_with_exactly_the_intents_quotas(rendered):
    from gpuconf import plan as P

    plan, docs = rendered
    queues = {d["metadata"]["name"]: d for d in kinds(docs, "ClusterQueue")}
    teams = [t for t in plan.intent.spec.teams if t.quota]
    assert set(queues) == {f"gpuconf-team-{t.name}" for t in teams} | {"gpuconf-acceptance"}
    kueue = P.kueue_settings(plan.intent)
    for team in teams:
        nominal = _nominal(queues[f"gpuconf-team-{team.name}"])
        want = {}
        for pool_name, value in team.quota.items():
            pool = plan.pool_by_name[pool_name]
            if isinstance(value, int):
                (resource,) = pool.capacity.per_node
                named = {resource: value}
            else:  # per MIG profile, by the resource name the pool advertises for it
                named = {next(r for r in (P.mig_resource(p), P.mig_resource(p) + ".shared")
                              if r in pool.capacity.per_node): n for p, n in value.items()}
            for resource in pool.capacity.per_node:  # a flavor lists every resource of its group: 0 if unnamed
                want[(f"gpuconf-pool-{pool_name}", resource)] = named.get(resource, 0)
            if pool.pool.nvlink is not None:  # one ComputeDomain channel per GPU of the quota (render/nvlink.py)
                want[(f"gpuconf-pool-{pool_name}", "compute-domain.nvidia.com/channels")] = sum(named.values())
        other = kueue.teams[team.name].other_resources if team.name in kueue.teams else {}
        want.update({("gpuconf-any-node", r): quantity(q) for r, q in other.items()})
        assert nominal == want
        assert queues[f"gpuconf-team-{team.name}"]["spec"]["namespaceSelector"] == {
            "matchLabels": {"gpuconf.dev/team": team.name}}


def test_a_local_queue_in_every_team_namespace(rendered):
    plan, docs = rendered
    local = {(d["metadata"]["namespace"], d["metadata"]["name"]): d["spec"]["clusterQueue"]
             for d in kinds(docs, "LocalQueue")}
    want = {(ns, "default"): f"gpuconf-team-{t.name}" for t in plan.intent.spec.teams if t.quota
            for ns in t.namespaces}
    want[(plan.namespace, "gpuconf-acceptance")] = "gpuconf-acceptance"
    assert local == want
    # The team's ClusterQueue selects the namespace by the label gpuconf puts on it.
    labels = {d["metadata"]["name"]: d["metadata"]["labels"] for d in kinds(docs, "Namespace")}
    for (ns, _), queue in local.items():
        if queue != "gpuconf-acceptance":
            assert labels[ns]["gpuconf.dev/team"] == queue.removeprefix("gpuconf-team-")


def test_workload_priority_classes_of_the_queued_teams_tiers(rendered):
    from gpuconf.render.teams import PRIORITY_VALUES

    plan, docs = rendered
    classes = {d["metadata"]["name"]: d["value"] for d in kinds(docs, "WorkloadPriorityClass")}
    tiers = {t.priority for t in plan.intent.spec.teams if t.quota}
    assert classes == {f"gpuconf-{tier}": PRIORITY_VALUES[tier] for tier in tiers}
    # The same values as the PriorityClasses, which Kueue falls back to for a pod's priorityClassName.
    assert {d["metadata"]["name"]: d["value"] for d in kinds(docs, "PriorityClass")} == classes


def test_every_kueue_object_verifies_against_the_non_deprecated_crd_version(rendered):
    from gpuconf.output.verify import custom_kinds, verify_object

    plan, docs = rendered
    index = custom_kinds()
    queued = [d for d in docs if d["apiVersion"].startswith("kueue.x-k8s.io/")]
    nvlink = {"Topology"} if any(p.pool.nvlink for p in plan.pools) else set()  # NVLink pools' flavors name one
    assert {d["kind"] for d in queued} == {"ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue",
                                           *nvlink}
    for doc in queued:
        entry = index[f"{doc['apiVersion']}/{doc['kind']}"]
        assert doc["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        assert entry["storage"] and not entry["deprecated"]
        assert entry["release"] == {"repository": "kubernetes-sigs/kueue", "tag": "v0.19.2"}
        assert verify_object(doc, plan.intent.spec.cluster.kubernetes_version, "queues.yaml") == []
    # v1beta1 is served too, but deprecated: gpuconf has its schema and never renders it.
    assert index["kueue.x-k8s.io/v1beta1/ClusterQueue"]["deprecated"] is True


# --- resource groups: valid by construction ----------------------------------------------------------------------


def _check_groups(spec: dict) -> None:
    """The ClusterQueue webhook's validateResourceGroups and the CRD's CEL rule, re-implemented from their text."""
    seen_resources, seen_flavors = set(), set()
    for group in spec["resourceGroups"]:
        for resource in group["coveredResources"]:
            assert resource not in seen_resources, f"{resource} in two groups"
            seen_resources.add(resource)
        for flavor in group["flavors"]:
            assert flavor["name"] not in seen_flavors, f"{flavor['name']} in two groups"
            seen_flavors.add(flavor["name"])
            assert len(flavor["resources"]) == len(group["coveredResources"])  # CEL
            assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]  # webhook: same order
            for r in flavor["resources"]:
                if not spec.get("cohortName"):
                    assert "borrowingLimit" not in r and "lendingLimit" not in r
                if "lendingLimit" in r:
                    assert quantity(r["lendingLimit"]) <= quantity(r["nominalQuota"])


def test_resource_groups_are_valid_in_every_rendered_queue(rendered):
    _, docs = rendered
    for queue in kinds(docs, "ClusterQueue"):
        _check_groups(queue["spec"])


def test_resource_groups_join_flavors_that_share_a_resource():
    from gpuconf.render.kueue import Quota, resource_groups

    groups = resource_groups([
        ("a", {"nvidia.com/gpu": Quota(4)}),
        ("b", {"nvidia.com/mig-1g.10gb": Quota(2), "nvidia.com/mig-2g.20gb": Quota(1)}),
        ("c", {"nvidia.com/mig-2g.20gb": Quota(3), "nvidia.com/mig-3g.40gb": Quota(1)}),
        ("d", {"nvidia.com/gpu": Quota(8)}),
    ])
    assert [g["coveredResources"] for g in groups] == [
        ["nvidia.com/gpu"], ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]]
    assert [[f["name"] for f in g["flavors"]] for g in groups] == [["a", "d"], ["b", "c"]]
    c = groups[1]["flavors"][1]["resources"]
    assert c == [{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 0},
                 {"name": "nvidia.com/mig-2g.20gb", "nominalQuota": 3},
                 {"name": "nvidia.com/mig-3g.40gb", "nominalQuota": 1}]
    _check_groups({"resourceGroups": groups})


def test_a_flavor_that_bridges_two_groups_merges_them():
    from gpuconf.render.kueue import Quota, resource_groups

    groups = resource_groups([("a", {"x": Quota(1)}), ("b", {"y": Quota(1)}), ("c", {"x": Quota(1), "y": Quota(1)})])
    assert [(g["coveredResources"], [f["name"] for f in g["flavors"]]) for g in groups] == [(["x", "y"], ["a", "b", "c"])]


BROKEN = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"},
          "spec": {"namespaceSelector": {}, "resourceGroups": [
              {"coveredResources": ["nvidia.com/gpu", "cpu"],
               "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1},
                                                       {"name": "nvidia.com/gpu", "nominalQuota": 1,
                                                        "borrowingLimit": 2}]}]},
              {"coveredResources": ["nvidia.com/gpu"],
               "flavors": [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 1,
                                                        "lendingLimit": 2}]}]}]}}


def test_problems_finds_what_kueue_would_reject():
    from gpuconf.render.kueue import problems

    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
              "spec": {"tolerations": [{"operator": "Exists", "value": "x"}, {"effect": "NoSchedule"}]}}
    found = problems([flavor, BROKEN])
    text = "\n".join(found)
    for wanted in ("resource nvidia.com/gpu is in another group too", "the flavor is in another group too",
                   "are not coveredResources", "borrowingLimit of nvidia.com/gpu without a cohort",
                   "lendingLimit of nvidia.com/gpu without a cohort", "lendingLimit of nvidia.com/gpu exceeds",
                   "a toleration with operator Exists has no value", "a toleration without key must use operator Exists"):
        assert wanted in text, wanted
    unselective = copy.deepcopy(BROKEN)
    del unselective["spec"]["namespaceSelector"]
    assert any("no namespaceSelector" in p for p in problems([unselective]))
    lost = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "default", "namespace": "a"}, "spec": {"clusterQueue": "nowhere"}}
    assert problems([lost]) == ["LocalQueue a/default: ClusterQueue nowhere is not rendered"]


def test_problems_of_every_rendered_example_are_none(rendered):
    from gpuconf.render.kueue import problems

    _, docs = rendered
    assert problems(docs) == []


def test_a_local_queue_outside_its_queues_namespaces_is_a_problem(rendered):
    from gpuconf.render.kueue import problems

    _, docs = rendered
    moved = copy.deepcopy(docs)
    lq = next(d for d in moved if d["kind"] == "LocalQueue" and d["metadata"]["name"] == "default")
    other = next(d for d in moved if d["kind"] == "Namespace" and d["metadata"]["name"] != lq["metadata"]["namespace"]
                 and d["metadata"]["labels"].get("gpuconf.dev/team") not in (None, lq["metadata"]["labels"]["gpuconf.dev/team"]))
    lq["metadata"]["namespace"] = other["metadata"]["name"]
    assert any("does not select namespace" in p for p in problems(moved))


# --- admission, as Kueue's flavor assigner and the scheduler see it ----------------------------------------------


def _tolerates(tolerations: list[dict], taint) -> bool:
    """kube-scheduler's TaintToleration: some toleration matches key, effect and (for Equal) the value."""
    for t in tolerations:
        if t.get("effect") not in (None, "", taint.effect) or t.get("key") not in (None, taint.key):
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.value:
            return True
    return False


#: Kueue's pod-template annotations that ask for Topology-Aware Scheduling (v0.19.2 apis/kueue/v1beta2/topology_types.go).
TAS_ANNOTATIONS = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology")


def _tas_skips(job: dict, queue: dict, flavors: dict, flavor: str, covered: list, requests: dict) -> bool:
    """Whether Kueue skips a flavor for the pod set on Topology-Aware Scheduling grounds (v0.19.2
    pkg/scheduler/flavorassigner/tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS): a pod set that asks for a
    topology (or whose queue has topology-aware flavors only) takes no flavor without one for the resources it
    requests; one that does not ask takes no topology-aware flavor."""
    annotations = job["spec"]["template"].get("metadata", {}).get("annotations", {})
    names = [f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]]
    tas_only = all(flavors[n].get("topologyName") for n in names)
    explicit = any(a in annotations for a in TAS_ANNOTATIONS)
    if explicit or tas_only:
        if tas_only and not explicit:
            return False
        return not flavors[flavor].get("topologyName") and any(r in covered for r in requests)
    return bool(flavors[flavor].get("topologyName"))


def _admit(job: dict, queue: dict, flavors: dict, resources: dict | None = None) -> dict:
    """Kueue's flavor assignment for a one-pod Job, then the pod as Kueue starts it: the assigned flavors' nodeLabels
    merged into its nodeSelector and their tolerations appended (pkg/scheduler/flavorassigner, pkg/podset).

    resources is the `resources` block of Kueue's Configuration (default: Kueue's defaults, BlockUndeclared and no
    exclusions): requests whose names start with an excluded prefix are dropped before quota accounting
    (pkg/workload/workload.go dropExcludedResources); under IgnoreUndeclared a resource no group covers is skipped
    (pkg/scheduler/flavorassigner IgnoreUndeclaredResources)."""
    resources = resources or {}
    excluded = resources.get("excludeResourcePrefixes", [])
    ignore_undeclared = resources.get("quotaCheckStrategy") == "IgnoreUndeclared"
    pod = copy.deepcopy(job["spec"]["template"]["spec"])
    pods = job["spec"].get("parallelism", 1)
    requests: dict[str, float] = {}
    for container in pod["containers"]:
        res = container["resources"]
        for name, value in {**res.get("limits", {}), **res.get("requests", {})}.items():
            if not any(name.startswith(prefix) for prefix in excluded):
                requests[name] = requests.get(name, 0) + quantity(value) * pods
    # Claims count through the Configuration's deviceClassMappings (pkg/dra/claims.go: an unmapped class makes the
    # workload inadmissible); `claims` maps each template a pod names to its device class.
    mapped = {c: m["name"] for m in resources.get("deviceClassMappings", []) for c in m["deviceClassNames"]}
    for claim in pod.get("resourceClaims", []):
        device_class = resources.get("claims", {})[claim["resourceClaimTemplateName"]]
        assert device_class in mapped, f"DeviceClass {device_class} is not mapped in DRA configuration"
        requests[mapped[device_class]] = requests.get(mapped[device_class], 0) + pods
    chosen = []
    for name, amount in requests.items():
        group = next((g for g in queue["spec"]["resourceGroups"] if name in g["coveredResources"]), None)
        if group is None and ignore_undeclared:
            continue
        assert group is not None, f"resource {name} unavailable in ClusterQueue"
        for flavor in group["flavors"]:
            labels = flavors[flavor["name"]].get("nodeLabels", {})
            selector = {k: v for k, v in pod.get("nodeSelector", {}).items() if k in labels}
            if any(labels[k] != v for k, v in selector.items()):
                continue  # "flavor doesn't match node affinity"
            if _tas_skips(job, queue, flavors, flavor["name"], group["coveredResources"], requests):
                continue
            quota = {r["name"]: quantity(r["nominalQuota"]) for r in flavor["resources"]}
            if all(quota[r] >= n for r, n in requests.items() if r in group["coveredResources"]):
                chosen.append(flavor["name"])
                break
        else:
            raise AssertionError(f"no flavor fits {name}")
    for name in dict.fromkeys(chosen):
        spec = flavors[name]
        pod.setdefault("nodeSelector", {}).update(spec.get("nodeLabels", {}))
        pod["tolerations"] = pod.get("tolerations", []) + [t for t in spec.get("tolerations", [])
                                                          if t not in pod.get("tolerations", [])]
    pod["assignedFlavors"] = chosen
    return pod


def test_every_probe_is_admitted_on_its_pools_flavor_and_lands_on_the_pool(rendered):
    plan, docs = rendered
    flavors = {d["metadata"]["name"]: d["spec"] for d in kinds(docs, "ResourceFlavor")}
    queue = next(d for d in kinds(docs, "ClusterQueue") if d["metadata"]["name"] == "gpuconf-acceptance")
    local = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in kinds(docs, "LocalQueue")}
    jobs = kinds(docs, "Job")
    assert len(jobs) == len(plan.pools)
    for job in jobs:
        pool = plan.pool_by_name[job["metadata"]["labels"]["gpuconf.dev/pool"]]
        name = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        assert local[(job["metadata"]["namespace"], name)]["spec"]["clusterQueue"] == "gpuconf-acceptance"
        assert "suspend" not in job["spec"]  # Kueue's webhook suspends it on creation
        assert "tolerations" not in job["spec"]["template"]["spec"]  # only the flavor can let it onto the pool
        pod = _admit(job, queue, flavors)
        assert f"gpuconf-pool-{pool.name}" in pod["assignedFlavors"]
        # The pod now fits the pool's nodes: their labels match its selector, it tolerates every taint.
        assert all(pool.labels.get(k) == v for k, v in pod["nodeSelector"].items())
        assert all(_tolerates(pod.get("tolerations", []), t) for t in pool.pool.taints)
        if pool.pool.taints:  # the flavor's tolerations are what lets it there: without them it would not fit
            bare = {**flavors, f"gpuconf-pool-{pool.name}": {k: v for k, v in flavors[f"gpuconf-pool-{pool.name}"].items()
                                                             if k != "tolerations"}}
            assert not all(_tolerates(_admit(job, queue, bare).get("tolerations", []), t) for t in pool.pool.taints)


def test_the_acceptance_queue_covers_one_probe_per_pool(rendered):
    plan, docs = rendered
    queue = next(d for d in kinds(docs, "ClusterQueue") if d["metadata"]["name"] == "gpuconf-acceptance")
    nominal = _nominal(queue)
    for pool in plan.pools:
        for resource in pool.capacity.per_node:
            assert nominal[(f"gpuconf-pool-{pool.name}", resource)] == (1 if resource == pool.resource else 0)
    assert nominal[("gpuconf-any-node", "cpu")] == pytest.approx(0.010 * len(plan.pools))
    assert nominal[("gpuconf-any-node", "memory")] == 64 * 2 ** 20 * len(plan.pools)
    assert "cohortName" not in queue["spec"]  # it neither lends nor borrows


def test_the_reports_job_example_is_admitted_by_its_teams_queue():
    from gpuconf.pipeline import render_path

    tree = render_path(str(ROOT / "examples" / "heterogeneous.yaml"), "out").tree
    report = json.loads(tree.files["report.json"])
    job = YAML11.load(report["queueing"]["jobExample"])
    docs = [d for p, t in tree.files.items() if p.startswith("manifests/") for d in YAML11.load_all(t) if d]
    ns = job["metadata"]["namespace"]
    lq = next(d for d in kinds(docs, "LocalQueue") if d["metadata"]["namespace"] == ns
              and d["metadata"]["name"] == job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"])
    queue = next(d for d in kinds(docs, "ClusterQueue") if d["metadata"]["name"] == lq["spec"]["clusterQueue"])
    flavors = {d["metadata"]["name"]: d["spec"] for d in kinds(docs, "ResourceFlavor")}
    pod = _admit(job, queue, flavors)
    assert pod["nodeSelector"]["gpuconf.dev/pool"] == job["spec"]["template"]["spec"]["nodeSelector"]["gpuconf.dev/pool"]
    classes = {d["metadata"]["name"] for d in kinds(docs, "WorkloadPriorityClass")}
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] in classes


#: The fields of Kueue v0.19.2's Configuration.resources (apis/config/v1beta2/configuration_types.go, type Resources).
CONFIGURATION_RESOURCES = {"quotaCheckStrategy", "excludeResourcePrefixes", "transformations", "deviceClassMappings"}


def _job_example_and_queue(path):
    from gpuconf.pipeline import render_path

    tree = render_path(str(path), "out").tree
    report = json.loads(tree.files["report.json"])["queueing"]
    job = YAML11.load(report["jobExample"])
    docs = [d for p, t in tree.files.items() if p.startswith("manifests/") for d in YAML11.load_all(t) if d]
    lq = next(d for d in kinds(docs, "LocalQueue") if d["metadata"]["namespace"] == job["metadata"]["namespace"])
    queue = next(d for d in kinds(docs, "ClusterQueue") if d["metadata"]["name"] == lq["spec"]["clusterQueue"])
    flavors = {d["metadata"]["name"]: d["spec"] for d in kinds(docs, "ResourceFlavor")}
    return report, tree, job, queue, flavors


def test_a_job_requesting_ephemeral_storage_and_hugepages_is_admitted_under_the_reports_configuration():
    report, tree, job, queue, flavors = _job_example_and_queue(ROOT / "examples" / "heterogeneous.yaml")
    config = YAML11.load(report["configuration"])
    assert (config["apiVersion"], config["kind"]) == ("config.kueue.x-k8s.io/v1beta2", "Configuration")
    assert set(config) == {"apiVersion", "kind", "resources"} and set(config["resources"]) <= CONFIGURATION_RESOURCES
    assert config["resources"] == {"quotaCheckStrategy": "BlockUndeclared",
                                   "excludeResourcePrefixes": ["ephemeral-storage", "hugepages-"]}
    assert report["configuration"] in tree.files["REPORT.md"]
    container = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    container["requests"].update({"ephemeral-storage": "20Gi", "hugepages-2Mi": "512Mi"})
    container["limits"]["hugepages-1Gi"] = "2Gi"
    _admit(job, queue, flavors, config["resources"])
    with pytest.raises(AssertionError, match="resource (ephemeral-storage|hugepages-.*) unavailable"):
        _admit(job, queue, flavors)  # Kueue's own defaults: the Job would stay pending for ever


def test_under_ignore_undeclared_the_configuration_says_so_and_excludes_nothing(tmp_path):
    text = (ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8").replace(
        "      cohort: ml-prod", "      cohort: ml-prod\n      quotaCheckStrategy: IgnoreUndeclared")
    (tmp_path / "x.yaml").write_text(text, encoding="utf-8")
    report, tree, job, queue, flavors = _job_example_and_queue(tmp_path / "x.yaml")
    config = YAML11.load(report["configuration"])
    assert config["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "20Gi"
    _admit(job, queue, flavors, config["resources"])


def test_the_report_says_plainly_which_priority_label_every_job_must_carry():
    report, tree, job, queue, flavors = _job_example_and_queue(ROOT / "examples" / "heterogeneous.yaml")
    text = tree.files["REPORT.md"]
    assert "It does not read the namespaces' `gpuconf.dev/priority` label" in text
    assert "or it runs at priority 0 and is the first preempted" in text
    for team in report["teams"]:
        row = (f"| `{team['name']}` | {'<br>'.join(f'`{ns}`' for ns in team['namespaces'])} | "
               f"`kueue.x-k8s.io/priority-class: {team['priorityClass']}` |")
        assert row in text
    assert "# required for the team's tier: without it (and without a pod priorityClassName) Kueue gives the Job " \
           "priority 0" in report["jobExample"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == next(
        t["priorityClass"] for t in report["teams"] if job["metadata"]["namespace"] in t["namespaces"])


def test_an_unpinned_gpu_job_takes_the_first_pool_of_the_team_with_quota():
    """Without a nodeSelector Kueue tries the flavors in order: the team's pools in spec.pools order. A team with
    H100 quota and no L4 quota never lands on the L4 pool, although both advertise nvidia.com/gpu (what a
    ResourceQuota cannot do)."""
    from gpuconf.render import kueue

    plan = build(ROOT / "examples" / "heterogeneous.yaml")
    docs = kueue.render(plan)
    flavors = {d["metadata"]["name"]: d["spec"] for d in kinds(docs, "ResourceFlavor")}
    research = next(d for d in kinds(docs, "ClusterQueue") if d["metadata"]["name"] == "gpuconf-team-research")
    job = {"spec": {"template": {"spec": {"containers": [{"resources": {
        "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 8}}}]}}}}
    pod = _admit(job, research, flavors)
    assert pod["nodeSelector"] == {"gpuconf.dev/pool": "train-h100"}
    assert pod["tolerations"] == [{"key": "gpuconf.dev/pool", "operator": "Equal", "value": "train-h100",
                                   "effect": "NoSchedule"}]
    job["spec"]["template"]["spec"]["nodeSelector"] = {"gpuconf.dev/pool": "notebooks-l4"}
    with pytest.raises(AssertionError, match="no flavor fits"):
        _admit(job, research, flavors)


# --- borrowing, lending, cohort ----------------------------------------------------------------------------------


def _row(queue, flavor, resource):
    for group in queue["spec"]["resourceGroups"]:
        for f in group["flavors"]:
            if f["name"] == flavor:
                return next(r for r in f["resources"] if r["name"] == resource)
    raise KeyError(flavor)


def test_limits_and_cohort_reach_the_cluster_queues():
    from gpuconf.render import kueue

    plan = build(ROOT / "examples" / "heterogeneous.yaml")
    queues = {d["metadata"]["name"]: d for d in kinds(kueue.render(plan), "ClusterQueue")}
    research, product = queues["gpuconf-team-research"], queues["gpuconf-team-product"]
    assert research["spec"]["cohortName"] == product["spec"]["cohortName"] == "ml-prod"
    a100 = "gpuconf-pool-infer-a100"
    # research names 1g.10gb with 0 to borrow up to 16; product lends at most 16 of its 64.
    assert _row(research, a100, "nvidia.com/mig-1g.10gb") == {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 0,
                                                              "borrowingLimit": 16}
    assert _row(product, a100, "nvidia.com/mig-1g.10gb") == {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 64,
                                                             "lendingLimit": 16}
    # What the quota does not name is listed (the group needs it) with nothing to borrow.
    assert _row(research, a100, "nvidia.com/mig-2g.20gb") == {"name": "nvidia.com/mig-2g.20gb", "nominalQuota": 0,
                                                              "borrowingLimit": 0}
    # Named without a limit: Kueue's default, no limit inside the cohort.
    assert "borrowingLimit" not in _row(research, "gpuconf-pool-train-h100", "nvidia.com/gpu")
    assert research["spec"]["preemption"] == {"borrowWithinCohort": {"policy": "Never"},
                                              "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


QUEUED = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata: {name: q}
spec:
  cluster: {kubernetesVersion: "1.33"}
  operator: {chartVersion: v26.7.0}
  pools:
    - {name: h100, gpu: H100-80GB, gpusPerNode: 8, nodes: 2, match: {pciDevice: true}}
  teams:
    - {name: a, namespaces: [a1, a2], quota: {h100: 8}}
    - {name: idle, namespaces: [idle]}
  queueing:
    kueue:
      version: v0.19.2
      QUOTAS
      quotaCheckStrategy: IgnoreUndeclared
"""


def test_without_a_cohort_no_limit_is_rendered_and_without_quota_no_queue(tmp_path):
    from gpuconf.render import kueue, teams

    plan = build_text(tmp_path, QUEUED.replace("QUOTAS", "resourceQuotas: false"))
    docs = kueue.render(plan)
    (queue,) = [d for d in kinds(docs, "ClusterQueue") if d["metadata"]["name"] != "gpuconf-acceptance"]
    assert queue["metadata"]["name"] == "gpuconf-team-a" and "cohortName" not in queue["spec"]
    _check_groups(queue["spec"])
    # IgnoreUndeclared: no cpu/memory group for a team that gives none.
    assert [g["coveredResources"] for g in queue["spec"]["resourceGroups"]] == [["nvidia.com/gpu"]]
    assert {(d["metadata"]["namespace"]) for d in kinds(docs, "LocalQueue")} == {"a1", "a2", "gpu-operator"}
    assert kinds(teams.render(plan), "ResourceQuota") == []


def test_resource_quotas_can_stay_as_hard_ceilings(tmp_path):
    from gpuconf.render import teams

    plan = build_text(tmp_path, QUEUED.replace("QUOTAS", "resourceQuotas: true"))
    quotas = kinds(teams.render(plan), "ResourceQuota")
    assert {q["metadata"]["namespace"]: q["spec"]["hard"] for q in quotas} == {
        "a1": {"requests.nvidia.com/gpu": "8"}, "a2": {"requests.nvidia.com/gpu": "8"}}


def test_kueue_off_renders_nothing_of_it():
    from gpuconf.render import access, kueue, probes

    plan = build(ROOT / "examples" / "airgapped.yaml")
    assert kueue.render(plan) == []
    groups = {g for d in access.render(plan) for r in d.get("rules", []) for g in r["apiGroups"]}
    assert "kueue.x-k8s.io" not in groups
    assert all("kueue.x-k8s.io/queue-name" not in j["metadata"]["labels"] for j in probes.render(plan))


# --- RBAC -------------------------------------------------------------------------------------------------------


def test_developers_see_their_queue_and_workloads_and_observers_read_the_queues():
    from gpuconf.render import access

    plan = build(ROOT / "examples" / "heterogeneous.yaml")
    docs = access.render(plan)
    for role in (d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "gpuconf-gpu-developer"):
        rules = [r for r in role["rules"] if r["apiGroups"] == ["kueue.x-k8s.io"]]
        assert {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues", "workloads"],
                "verbs": ["get", "list", "watch"]} in rules
        assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in rules)  # Kueue creates the Workloads
        assert {"apiGroups": ["batch"], "resources": ["cronjobs", "jobs"],
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]} in role["rules"]
    observer = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gpuconf-gpu-observer")
    read = {res for r in observer["rules"] if r["apiGroups"] == ["kueue.x-k8s.io"] for res in r["resources"]}
    assert {"clusterqueues", "localqueues", "resourceflavors", "workloadpriorityclasses"} <= read
    assert "workloads" not in read  # they carry the teams' pod templates
    for doc in docs:
        for rule in doc.get("rules", []):
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]


# --- facts checked against the CRDs -----------------------------------------------------------------------------


def _crd(kind: str) -> dict:
    from gpuconf.output.verify import _schema, custom_kinds

    return _schema(custom_kinds()[f"kueue.x-k8s.io/v1beta2/{kind}"]["file"])


def test_the_intents_choices_are_the_crds_enums():
    import typing

    from gpuconf.intent.model import Kueue, KueuePreemption

    spec = _crd("ClusterQueue")["properties"]["spec"]["properties"]
    preemption = spec["preemption"]["properties"]
    for field, enum in (("within_cluster_queue", preemption["withinClusterQueue"]["enum"]),
                        ("reclaim_within_cohort", preemption["reclaimWithinCohort"]["enum"]),
                        ("borrow_within_cohort", preemption["borrowWithinCohort"]["properties"]["policy"]["enum"])):
        assert set(typing.get_args(KueuePreemption.model_fields[field].annotation)) == set(enum)
    assert set(typing.get_args(Kueue.model_fields["queueing_strategy"].annotation)) == set(
        spec["queueingStrategy"]["enum"])


def test_the_quantity_grammar_is_the_crds_without_a_sign_and_what_parse_quantity_refuses():
    import re

    from test_quantity import VALUES

    from gpuconf.intent.model import QUANTITY
    from gpuconf.output.verify import _crd_index

    crd = _crd_index()["quantityPattern"]
    for text, value in VALUES:  # everything the parser reads the CRDs' pattern lets through; unsigned ones the intent
        assert re.fullmatch(crd, text), text
        assert bool(re.fullmatch(QUANTITY, text)) == (text[0] not in "+-"), text
    # The CRDs' pattern takes a fractional exponent, which resource.ParseQuantity refuses (its exponent is a ParseInt).
    assert re.fullmatch(crd, "1e1.5") and not re.fullmatch(QUANTITY, "1e1.5")
    nominal = _crd("ClusterQueue")["properties"]["spec"]["properties"]["resourceGroups"]["items"]["properties"][
        "flavors"]["items"]["properties"]["resources"]["items"]["properties"]["nominalQuota"]
    assert nominal["pattern"] == _crd_index()["quantityPattern"]


def test_the_limits_gpuconf_checks_are_the_crds():
    from gpuconf.render import kueue

    groups = _crd("ClusterQueue")["properties"]["spec"]["properties"]["resourceGroups"]
    group = groups["items"]["properties"]
    assert groups["maxItems"] == kueue.MAX_GROUPS
    assert group["coveredResources"]["maxItems"] == kueue.MAX_GROUP_RESOURCES
    assert group["flavors"]["maxItems"] == kueue.MAX_GROUP_FLAVORS
    assert _crd("ResourceFlavor")["properties"]["spec"]["properties"]["tolerations"]["maxItems"] == \
        kueue.MAX_TOLERATIONS


def test_too_many_pools_sharing_a_resource_is_a_finding(tmp_path):
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    pools = "".join(f"    - {{name: p{i}, gpu: L4, gpusPerNode: 1, nodes: 1, match: {{hostname: ^p{i}-}}}}\n"
                    for i in range(65))
    text = QUEUED.replace("QUOTAS", "resourceQuotas: false").replace(
        "    - {name: h100, gpu: H100-80GB, gpusPerNode: 8, nodes: 2, match: {pciDevice: true}}\n", pools).replace(
        "quota: {h100: 8}", "quota: {p0: 1}")
    findings = validate_document(load_text(text, "many.yaml")).findings
    (finding,) = [f for f in findings if f.code == "GC365"]
    assert "65 pools advertising nvidia.com/gpu in one group (at most 64)" in finding.message
    assert finding.path == "spec.queueing.kueue"


def test_the_starters_commented_queueing_block_validates_once_uncommented(run):
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = run("init").stdout
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("  # queueing:")))
    uncommented = lines[:start] + [line.replace("  # ", "  ", 1) for line in lines[start:]]
    result = validate_document(load_text("\n".join(uncommented) + "\n", "starter.yaml"))
    assert result.findings == [] and result.intent.spec.queueing.kueue.version == "v0.19.2"


def test_the_acceptance_checklist_installs_kueue_and_shows_admission():
    from gpuconf.pipeline import render_path

    report = json.loads(render_path(str(ROOT / "examples" / "heterogeneous.yaml"), "out").tree.files["report.json"])
    titles = [s["title"] for s in report["acceptance"]]
    install = titles.index("Install Kueue v0.19.2 once (gpuconf does not install it)")
    assert install < titles.index("Apply the manifests (or let Argo CD / Flux sync the folder)") < titles.index(
        "Check that Kueue accepted the queues")
    steps = {s["title"]: s for s in report["acceptance"]}
    assert "releases/download/v0.19.2/manifests.yaml" in steps[titles[install]]["commands"][0]
    probe = steps["Probe pool train-h100"]
    assert "kubectl -n gpu-operator get workloads.kueue.x-k8s.io -o wide | grep gpuconf-probe-train-h100" in \
        probe["commands"]
    assert "gpuconf-acceptance" in probe["proves"] and "gpuconf-pool-train-h100" in probe["proves"]
    assert steps["Check the quota of team research"]["commands"] == ["kubectl describe clusterqueue gpuconf-team-research"]
    queueing = report["queueing"]
    assert queueing["version"] == "v0.19.2" and queueing["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    rows = {(t["name"], r["pool"], r["resource"]): (r["nominal"], r["borrowing"], r["lending"])
            for t in queueing["teams"] for r in t["rows"]}
    assert rows[("research", "infer-a100", "nvidia.com/mig-1g.10gb")] == (0, "16", "all unused")
    assert rows[("product", "infer-a100", "nvidia.com/mig-1g.10gb")] == (64, "no limit", "16")
    markdown = render_path(str(ROOT / "examples" / "heterogeneous.yaml"), "out").tree.files["REPORT.md"]
    assert "## Team queues (Kueue)" in markdown
    assert "| `research` | `gpuconf-team-research` | infer-a100 | `nvidia.com/mig-1g.10gb` | 0 | 16 | all unused | 64 |" \
        in markdown


@pytest.mark.parametrize("value", ["64\n", "-1", "+1", "1Ki ", "4 TB", "1.2.3", "", True, -1, 1.5])
def test_other_resources_take_only_non_negative_quantities(value):
    from pydantic import ValidationError

    from gpuconf.intent.model import KueueTeam

    with pytest.raises(ValidationError):
        KueueTeam.model_validate({"otherResources": {"cpu": value}})


@pytest.mark.parametrize("value", [0, 64, "500m", "2.5", ".5", "1e3", "4Ti", "512Mi"])
def test_other_resources_accept_kubernetes_quantities(value):
    from gpuconf.intent.model import KueueTeam

    assert KueueTeam.model_validate({"otherResources": {"cpu": value}}).other_resources == {"cpu": value}

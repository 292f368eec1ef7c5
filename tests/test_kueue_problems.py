"""render/kueue.py's own reading of Kueue objects, exactly: the quantity table behind every quota comparison, the
CEL and webhook rules `problems` re-checks (each at its boundary), and the admission of probe Jobs, with the exact
line each problem prints."""

from __future__ import annotations

import copy

from fractions import Fraction

import pytest

API = "kueue.x-k8s.io/v1beta2"


def flavor(name, labels=None, tolerations=None) -> dict:
    spec: dict = {}
    if labels is not None:
        spec["nodeLabels"] = labels
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def group(covered, *flavors) -> dict:
    """A resource group: flavors are (name, {resource: nominal or a quota dict}) in covered order."""
    return {"coveredResources": list(covered),
            "flavors": [{"name": name, "resources": [q if isinstance(q, dict) else {"name": r, "nominalQuota": q}
                                                     for r, q in quotas.items()]} for name, quotas in flavors]}


def queue(name, *groups, cohort=None, team="a", preemption=None) -> dict:
    spec: dict = {"namespaceSelector": {"matchLabels": {"gpuconf.dev/team": team}}, "resourceGroups": list(groups)}
    if cohort:
        spec["cohortName"] = cohort
    if preemption is not None:
        spec["preemption"] = preemption
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local(ns, name, cluster_queue) -> dict:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterQueue": cluster_queue}}


def namespace(name, **labels) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def job(ns, *containers, queue_name="default", selector=None) -> dict:
    pod: dict = {"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(containers)]}
    if selector is not None:
        pod["nodeSelector"] = selector
    labels = {} if queue_name is None else {"kueue.x-k8s.io/queue-name": queue_name}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "probe", "namespace": ns, "labels": labels},
            "spec": {"template": {"spec": pod}}}


def problems(*docs):
    from gpuconf.render.kueue import problems

    return problems(list(docs))


# --- the quantity table ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("suffix", "factor"), [
    ("", 1), ("n", Fraction(1, 10 ** 9)), ("u", Fraction(1, 10 ** 6)), ("m", Fraction(1, 1000)), ("k", 10 ** 3),
    ("M", 10 ** 6), ("G", 10 ** 9), ("T", 10 ** 12), ("P", 10 ** 15), ("E", 10 ** 18), ("Ki", 1024),
    ("Mi", 1024 ** 2), ("Gi", 1024 ** 3), ("Ti", 1024 ** 4), ("Pi", 1024 ** 5), ("Ei", 1024 ** 6)])
def test_every_suffix_of_the_quantity_table_has_its_kubernetes_factor(suffix, factor):
    from gpuconf.quantity import parse  # the one parser the Kueue checks read quotas and requests with

    assert parse(f"3{suffix}") == 3 * factor
    # ParseQuantity rounds up to whole nano units: 1.5n is 2n.
    assert parse(f"1.5{suffix}") == (2 * factor if suffix == "n" else Fraction(3, 2) * factor)


def test_the_table_has_exactly_the_kubernetes_suffixes_gpuconf_reads():
    from gpuconf.quantity import _BINARY, _DECIMAL

    assert sorted([*_DECIMAL, *_BINARY]) == sorted(["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi",
                                                    "Ti", "Pi", "Ei"])


def test_quantities_read_integers_exponents_and_refuse_the_rest():
    from gpuconf.quantity import QuantityError, parse

    assert parse(7) == 7 and parse(0) == 0 and parse("-1") == -1  # a negative quota is the checks' own problem
    assert parse("2e3") == 2000 and parse("2E-3") == Fraction(2, 1000) and parse("1.5e+2") == 150
    assert parse("500m") == Fraction(1, 2) and parse("512Mi") == 512 * 2 ** 20
    for bad in ("3X", "3ki", "1 Gi", "", "Gi", "3mi"):
        with pytest.raises(QuantityError, match=f"{bad!r} is not a Kubernetes quantity"):
            parse(bad)


def test_times_multiplies_the_number_and_keeps_the_suffix():
    from gpuconf.render.kueue import times

    assert times("10m", 3) == "30m" and times("256Mi", 2) == "512Mi" and times("7", 0) == "0"
    assert times("1", 1) == "1"
    with pytest.raises(AssertionError, match="'1.5Gi' is not an integer quantity"):
        times("1.5Gi", 2)


def test_a_quota_item_carries_its_limits_only_when_set():
    import dataclasses

    from gpuconf.render.kueue import Quota

    with pytest.raises(dataclasses.FrozenInstanceError):  # a value, like the quantities it holds
        Quota(4).nominal = 5

    assert Quota(4).as_dict("r") == {"name": "r", "nominalQuota": 4}
    assert Quota(4, 2).as_dict("r") == {"name": "r", "nominalQuota": 4, "borrowingLimit": 2}
    assert Quota(4, None, 0).as_dict("r") == {"name": "r", "nominalQuota": 4, "lendingLimit": 0}
    assert Quota("1Gi", 0, 1).as_dict("r") == {"name": "r", "nominalQuota": "1Gi", "borrowingLimit": 0,
                                               "lendingLimit": 1}


# --- the ResourceFlavor's CEL rules on tolerations -------------------------------------------------------------


@pytest.mark.parametrize(("toleration", "expected"), [
    ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, []),
    ({"key": "k", "value": "v"}, []),
    ({"operator": "Exists"}, []),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}, []),
    ({"effect": "NoSchedule"}, ["a toleration without key must use operator Exists"]),
    ({"operator": "Equal", "value": "v"}, ["a toleration without key must use operator Exists"]),
    ({"key": "k", "operator": "Lt", "value": "3"}, ["toleration operator 'Lt' is not Equal or Exists"]),
    ({"key": "k", "operator": "Exists", "value": ""}, ["a toleration with operator Exists has no value"]),
    ({"key": "k", "tolerationSeconds": 30}, ["tolerationSeconds needs effect NoExecute"]),
    ({"key": "k", "effect": "NoSchedule", "tolerationSeconds": 30}, ["tolerationSeconds needs effect NoExecute"]),
])
def test_each_toleration_rule_of_the_flavor_crd(toleration, expected):
    assert problems(flavor("f", tolerations=[toleration])) == [f"ResourceFlavor/f: {m}" for m in expected]


def test_tolerations_read_back_from_yaml_are_compared_by_value():
    """The documents problems() reads may come from YAML text (a rendered folder read back): its strings are new
    objects, equal to the code's constants but not the same objects."""
    from ruamel.yaml import YAML

    text = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
spec:
  tolerations:
    - {operator: Exists}
    - {key: k, operator: Exists, effect: NoSchedule}
    - {key: k, operator: Equal, value: v, effect: NoExecute, tolerationSeconds: 30}
"""
    assert problems(YAML(typ="safe", pure=True).load(text)) == []


# --- ClusterQueue rules ----------------------------------------------------------------------------------------


def test_a_valid_queue_has_no_problem_and_a_queue_without_selector_admits_nothing():
    good = queue("q", group(["cpu", "nvidia.com/gpu"], ("f", {"cpu": "4", "nvidia.com/gpu": 2})))
    assert problems(flavor("f"), good) == []
    blind = copy.deepcopy(good)
    del blind["spec"]["namespaceSelector"]
    assert problems(flavor("f"), blind) == [
        "ClusterQueue/q: no namespaceSelector: the ClusterQueue would admit from no namespace"]


@pytest.mark.parametrize(("preemption", "bad"), [
    ({"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}, True),
    ({"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"}}, False),
    ({"reclaimWithinCohort": "Never", "borrowWithinCohort": {}}, False),
    ({"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}, False),
    ({"borrowWithinCohort": {"policy": "LowerPriority"}}, False),
])
def test_borrowing_within_the_cohort_needs_reclaiming(preemption, bad):
    found = problems(flavor("f"), queue("q", group(["cpu"], ("f", {"cpu": 1})), preemption=preemption))
    assert found == (["ClusterQueue/q: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"] if bad else [])


def test_limits_need_a_cohort_and_lending_may_equal_but_not_exceed_the_nominal_quota():
    def limited(**limits):
        return group(["nvidia.com/gpu"], ("f", {"nvidia.com/gpu": {"name": "nvidia.com/gpu", "nominalQuota": 4,
                                                                    **limits}}))

    assert problems(flavor("f"), queue("q", limited(borrowingLimit=2, lendingLimit=4), cohort="c")) == []
    assert problems(flavor("f"), queue("q", limited(lendingLimit=5), cohort="c")) == [
        "ClusterQueue/q: resourceGroups[0] flavor f: lendingLimit of nvidia.com/gpu exceeds its nominalQuota"]
    assert problems(flavor("f"), queue("q", limited(lendingLimit="4500m"), cohort="c")) == [
        "ClusterQueue/q: resourceGroups[0] flavor f: lendingLimit of nvidia.com/gpu exceeds its nominalQuota"]
    assert problems(flavor("f"), queue("q", limited(borrowingLimit=2))) == [
        "ClusterQueue/q: resourceGroups[0] flavor f: borrowingLimit of nvidia.com/gpu without a cohort"]
    assert problems(flavor("f"), queue("q", limited(borrowingLimit=2, lendingLimit=1))) == [
        "ClusterQueue/q: resourceGroups[0] flavor f: borrowingLimit of nvidia.com/gpu without a cohort",
        "ClusterQueue/q: resourceGroups[0] flavor f: lendingLimit of nvidia.com/gpu without a cohort"]
    assert problems(flavor("f"), queue("q", limited(), cohort="")) == []


def test_negative_and_zero_nominal_quotas():
    assert problems(flavor("f"), queue("q", group(["cpu"], ("f", {"cpu": 0})))) == []
    assert problems(flavor("f"), queue("q", group(["cpu"], ("f", {"cpu": -1})))) == [
        "ClusterQueue/q: resourceGroups[0] flavor f: negative nominalQuota of cpu"]


def test_groups_may_share_neither_resources_nor_flavors_and_list_resources_in_order():
    docs = [flavor("f"), flavor("g"), queue("q", group(["a", "b"], ("f", {"a": 1, "b": 1})),
                                            group(["b"], ("f", {"b": 1})), group(["c", "d"], ("g", {"d": 1, "c": 1})),
                                            group(["e"], ("h", {"e": 1})))]
    assert problems(*docs) == [
        "ClusterQueue/q: resourceGroups[1]: resource b is in another group too",
        "ClusterQueue/q: resourceGroups[1] flavor f: the flavor is in another group too",
        "ClusterQueue/q: resourceGroups[2] flavor g: resources ['d', 'c'] are not coveredResources ['c', 'd'] in order",
        "ClusterQueue/q: resourceGroups[3] flavor h: no such ResourceFlavor is rendered"]


def _wide(resources: int, flavors: int) -> dict:
    names = [f"example.com/r{i}" for i in range(resources)]
    return group(names, *((f"f{i}", {r: 1 for r in names}) for i in range(flavors)))


def test_flavor_resource_combinations_of_a_group_at_kueues_limit_of_512():
    from gpuconf.render.kueue import MAX_GROUP_COMBINATIONS

    assert MAX_GROUP_COMBINATIONS == 512
    flavors = [flavor(f"f{i}") for i in range(9)]
    assert problems(*flavors, queue("q", _wide(64, 8))) == []  # exactly 512
    over = _wide(64, 8)
    over["flavors"].append({"name": "f8", "resources": over["flavors"][0]["resources"][:1]})
    assert problems(*flavors, queue("q", over))[0] == \
        "ClusterQueue/q: resourceGroups[0]: more than 512 flavor-resource combinations"


def test_flavors_and_covered_resources_of_a_queue_at_kueues_limit_of_256():
    from gpuconf.render.kueue import MAX_COVERED, MAX_FLAVORS

    assert (MAX_FLAVORS, MAX_COVERED) == (256, 256)
    flavors = [flavor(f"f{i}") for i in range(257)]
    at_limit = [group([f"r{i}"], (f"f{i}", {f"r{i}": 1})) for i in range(256)]
    assert problems(*flavors, queue("q", *at_limit)) == []
    over = [*at_limit, group(["r256"], ("f256", {"r256": 1}))]
    assert problems(*flavors, queue("q", *over)) == [
        "ClusterQueue/q: 257 flavors, more than Kueue's 256", "ClusterQueue/q: 257 covered resources, more than Kueue's 256"]
    # Flavors and covered resources are counted apart: 257 flavors over 1 resource break only the flavor limit.
    many = group(["r"], *((f"f{i}", {"r": 1}) for i in range(257)))
    assert problems(*flavors, queue("q", many)) == ["ClusterQueue/q: 257 flavors, more than Kueue's 256"]


# --- LocalQueues and namespaces --------------------------------------------------------------------------------


def test_a_local_queue_needs_its_cluster_queue_and_a_namespace_it_selects():
    cq = queue("q", group(["cpu"], ("f", {"cpu": 1})), team="a")
    assert problems(flavor("f"), cq, namespace("ns1", **{"gpuconf.dev/team": "a"}), local("ns1", "default", "q")) == []
    assert problems(flavor("f"), cq, namespace("ns1", **{"gpuconf.dev/team": "b"}), local("ns1", "default", "q")) == [
        "LocalQueue ns1/default: its ClusterQueue's namespaceSelector does not select namespace ns1"]
    # A namespace gpuconf does not render (the operator's, Helm's) is known only by its name label.
    assert problems(flavor("f"), cq, local("ns2", "default", "q")) == [
        "LocalQueue ns2/default: its ClusterQueue's namespaceSelector does not select namespace ns2"]
    by_name = queue("q", group(["cpu"], ("f", {"cpu": 1})))
    by_name["spec"]["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": "ns2"}}
    assert problems(flavor("f"), by_name, local("ns2", "default", "q")) == []
    # The name label is the namespace's own even where a Namespace document claims another.
    assert problems(flavor("f"), by_name, namespace("ns2", **{"kubernetes.io/metadata.name": "x"}),
                    local("ns2", "default", "q")) == []
    everything = queue("q", group(["cpu"], ("f", {"cpu": 1})))
    everything["spec"]["namespaceSelector"] = {}
    assert problems(flavor("f"), everything, local("ns3", "default", "q")) == []
    assert problems(local("ns1", "default", "nowhere"), local("ns1", "other", "q"), flavor("f"), cq,
                    namespace("ns1", **{"gpuconf.dev/team": "a"})) == [
        "LocalQueue ns1/default: ClusterQueue nowhere is not rendered"]


# --- admission of probe Jobs -----------------------------------------------------------------------------------


def _admission(*jobs, quota_gpu=1, cpu="1", selector_labels=None):
    labels = {"gpuconf.dev/pool": "p"} if selector_labels is None else selector_labels
    return problems(flavor("pool-p", labels), flavor("any"), namespace("ops", **{"gpuconf.dev/team": "a"}),
                    queue("q", group(["nvidia.com/gpu"], ("pool-p", {"nvidia.com/gpu": quota_gpu})),
                          group(["cpu", "memory"], ("any", {"cpu": cpu, "memory": "1Gi"}))),
                    local("ops", "default", "q"), *jobs)


GPU = {"limits": {"nvidia.com/gpu": 1}, "requests": {"cpu": "500m", "memory": "512Mi"}}


def test_a_probe_that_fits_its_flavor_is_admitted():
    assert _admission(job("ops", GPU, selector={"gpuconf.dev/pool": "p"})) == []
    assert _admission(job("ops", GPU)) == []  # no selector: every flavor agrees
    assert _admission(job("ops", GPU, GPU, selector={"gpuconf.dev/pool": "p"}), quota_gpu=2) == []
    assert _admission(job("ops", GPU, selector={"other": "x"})) == []  # a label the flavor does not pin
    assert _admission(job("ops", {"limits": {"nvidia.com/gpu": 5}}, queue_name=None)) == []  # not queued


def test_a_probe_on_another_pools_nodes_is_not_admitted():
    assert _admission(job("ops", GPU, selector={"gpuconf.dev/pool": "other"})) == [
        "Job ops/probe: no flavor of its ClusterQueue fits ['nvidia.com/gpu'] on nodeSelector "
        "{'gpuconf.dev/pool': 'other'}"]


def test_requests_add_up_over_containers_and_a_limit_counts_as_the_request():
    # Two containers of one GPU each need 2; the quota is 1.
    assert _admission(job("ops", GPU, GPU)) == [
        "Job ops/probe: no flavor of its ClusterQueue fits ['nvidia.com/gpu'] on nodeSelector {}"]
    # cpu: 500m + 500m = 1 fits a quota of exactly 1, 1100m does not.
    half = {"requests": {"cpu": "500m"}}
    assert _admission(job("ops", half, half)) == []
    assert _admission(job("ops", half, {"requests": {"cpu": "600m"}})) == [
        "Job ops/probe: no flavor of its ClusterQueue fits ['cpu'] on nodeSelector {}"]
    # The request wins over the limit when both are given.
    assert _admission(job("ops", {"limits": {"cpu": "4"}, "requests": {"cpu": "1"}})) == []
    assert _admission(job("ops", {"limits": {"cpu": "2"}})) == [
        "Job ops/probe: no flavor of its ClusterQueue fits ['cpu'] on nodeSelector {}"]
    assert _admission(job("ops", {"limits": {"memory": "1Gi"}, "requests": {"memory": "1025Mi"}})) == [
        "Job ops/probe: no flavor of its ClusterQueue fits ['memory'] on nodeSelector {}"]


def test_the_first_flavor_that_fits_admits_and_all_must_fail_for_a_problem():
    docs = [flavor("small", {"gpuconf.dev/pool": "s"}), flavor("big", {"gpuconf.dev/pool": "b"}),
            namespace("ops", **{"gpuconf.dev/team": "a"}), local("ops", "default", "q"),
            queue("q", group(["nvidia.com/gpu"], ("small", {"nvidia.com/gpu": 1}), ("big", {"nvidia.com/gpu": 4})))]
    assert problems(*docs, job("ops", {"limits": {"nvidia.com/gpu": 4}})) == []
    assert problems(*docs, job("ops", {"limits": {"nvidia.com/gpu": 4}}, selector={"gpuconf.dev/pool": "s"})) == [
        "Job ops/probe: no flavor of its ClusterQueue fits ['nvidia.com/gpu'] on nodeSelector {'gpuconf.dev/pool': 's'}"]
    assert problems(*docs, job("ops", {"limits": {"nvidia.com/gpu": 1}}, selector={"gpuconf.dev/pool": "s"})) == []


def test_a_resource_no_group_covers_makes_the_job_inadmissible():
    assert _admission(job("ops", {"limits": {"nvidia.com/gpu": 1, "example.com/fpga": 1, "hugepages-2Mi": "2Mi"}},
                          selector={"gpuconf.dev/pool": "p"})) == [
        "Job ops/probe: its ClusterQueue covers no example.com/fpga, hugepages-2Mi"]


def test_a_probe_whose_local_queue_is_missing_or_elsewhere():
    assert _admission(job("ops", GPU, queue_name="nightly")) == [
        "Job ops/probe: LocalQueue nightly is not rendered in namespace ops"]
    assert _admission(job("dev", GPU)) == ["Job dev/probe: LocalQueue default is not rendered in namespace dev"]


def test_every_problem_of_a_tree_is_reported_together():
    found = problems(flavor("f", tolerations=[{"effect": "NoSchedule"}]),
                     queue("q", group(["cpu"], ("f", {"cpu": -1})), group(["cpu"], ("g", {"cpu": 1}))),
                     local("ns", "default", "missing"), job("ns", GPU, queue_name="none"))
    assert found == [
        "ResourceFlavor/f: a toleration without key must use operator Exists",
        "ClusterQueue/q: resourceGroups[0] flavor f: negative nominalQuota of cpu",
        "ClusterQueue/q: resourceGroups[1]: resource cpu is in another group too",
        "ClusterQueue/q: resourceGroups[1] flavor g: no such ResourceFlavor is rendered",
        "LocalQueue ns/default: ClusterQueue missing is not rendered",
        "Job ns/probe: LocalQueue none is not rendered in namespace ns"]

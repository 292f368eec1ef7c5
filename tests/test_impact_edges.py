"""The impact layer's small parts at their edges, which the mutation run (`make mutation`, issue 33) found no test
for: the node loop's selector for one pool, the CRD rows of a chart move, the config names a folder offers, the
operand tolerations an OpenShift ClusterPolicy carries, the count a time-sliced default advertises, the grouping of
the first sync's impacts per pool, a node in no pool, and the "+N more" of a name list."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest


def _side(values: dict | None = None, **objects: list[dict]):
    """A deployed side as the impact layer reads it: Helm values and the objects of each kind."""
    return SimpleNamespace(values=values or {}, objects=lambda kind: objects.get(kind, []))


def test_the_node_loop_selects_one_pool_by_its_label_and_several_by_a_set():
    from gpuconf.impact.model import DRAIN, UNCORDON, each_node

    assert each_node("a100", DRAIN, UNCORDON) == (
        "for n in $(kubectl get nodes -l gpuconf.dev/pool=a100 -o jsonpath='{.items[*].metadata.name}'); do "
        'kubectl drain "$n" --ignore-daemonsets --delete-emptydir-data && kubectl uncordon "$n" || break; done')
    assert each_node(["a100"], DRAIN).startswith("for n in $(kubectl get nodes -l gpuconf.dev/pool=a100 -o ")
    assert each_node(["a100", "h100"], DRAIN).startswith(
        "for n in $(kubectl get nodes -l 'gpuconf.dev/pool in (a100,h100)' -o ")


def _crd(fields, versions=("v1",)):
    return {"kind": "ClusterPolicy", "group": "nvidia.com", "fields": list(fields), "versions": list(versions)}


def test_a_crd_that_changes_neither_fields_nor_versions_is_no_row_of_the_chart_move():
    from gpuconf.impact.chart import crd_changes

    old = SimpleNamespace(crds={"a.yaml": _crd(["spec.x"]), "b.yaml": _crd(["spec.x"]), "c.yaml": _crd(["spec.x"]),
                                "d.yaml": _crd(["spec.x"], ("v1alpha1",))})
    new = SimpleNamespace(crds={"a.yaml": _crd(["spec.x"]), "b.yaml": _crd(["spec.x", "spec.y"]),
                                "d.yaml": _crd(["spec.x"], ("v1",)), "e.yaml": _crd(["spec.z"])})
    rows = {r["file"]: (r["status"], r["added"], r["removed"]) for r in crd_changes(old, new)}
    assert rows == {"b.yaml": ("changed", ["spec.y"], []), "c.yaml": ("dropped", [], []),
                    "d.yaml": ("changed", [], []), "e.yaml": ("new", [], [])}


def test_the_config_names_a_folder_offers_are_the_mig_configs_of_its_mig_parted_configmap():
    from gpuconf.impact.deviceplugin import _config_keys
    from gpuconf.impact.model import MIG_LABEL, PLUGIN_LABEL

    values = {"migManager": {"config": {"name": "mig-cm"}}, "devicePlugin": {"config": {"name": "dp-cm"}}}
    mig = {"metadata": {"name": "mig-cm"}, "data": {"config.yaml": "version: v1\nmig-configs:\n  all-disabled: []\n"
                                                                   "  mig-3g-0a1b2c3d: []\n"}}
    plugin = {"metadata": {"name": "dp-cm"}, "data": {"exclusive-c0fcc874": "version: v1\n", "ts-x4-1a2b3c4d": "x"}}
    side = _side(values, ConfigMap=[mig, plugin])
    assert _config_keys(side, MIG_LABEL) == {"all-disabled", "mig-3g-0a1b2c3d"}
    assert _config_keys(side, PLUGIN_LABEL) == {"exclusive-c0fcc874", "ts-x4-1a2b3c4d"}
    mig["data"]["config.yaml"] = "- not a map\n"
    assert _config_keys(side, MIG_LABEL) == set()
    assert _config_keys(_side(values), MIG_LABEL) is None  # no such ConfigMap in the folder


def test_the_operand_tolerations_are_the_cluster_policys_where_the_folder_renders_one():
    from gpuconf.impact.nodes import DEFAULT_TOLERATIONS, _operand_tolerations

    mine = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    policy = {"spec": {"daemonsets": {"tolerations": mine}}}
    assert _operand_tolerations(_side({"daemonsets": {"tolerations": []}}, ClusterPolicy=[policy])) == mine
    assert _operand_tolerations(_side({}, ClusterPolicy=[{"spec": None}])) == DEFAULT_TOLERATIONS
    assert _operand_tolerations(_side({"daemonsets": {"tolerations": mine}})) == mine


@pytest.mark.parametrize("body, advertised", [
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
     {"nvidia.com/gpu": 32}),
    ("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
     "    - name: nvidia.com/gpu\n      replicas: 2\n", {"nvidia.com/gpu.shared": 16}),
    ("version: v1\n", {"nvidia.com/gpu": 8}),
])
def test_what_a_node_without_the_config_label_advertises_under_the_default_key(body, advertised):
    from gpuconf.impact.quotas import _default_plugin_resources

    values = {"devicePlugin": {"config": {"name": "dp-cm", "default": "shared"}}}
    side = _side(values, ConfigMap=[{"metadata": {"name": "dp-cm"}, "data": {"shared": body}}])
    assert _default_plugin_resources(side, 8) == ("shared", advertised)


def test_the_first_syncs_impacts_are_one_per_pool_even_when_their_messages_match():
    from gpuconf.impact.installation import _Acc

    acc = _Acc()
    for pool, node in (("a", "a-1"), ("b", "b-1"), ("a", "a-2")):
        acc.add("driver-reinstall", "disruptive", pool, node, "the driver moves from 570 to 580", "pin 570")
    found = sorted((i.pools, i.nodes, i.node_names) for i in acc.impacts())
    assert found == [(["a"], 2, ["a-1", "a-2"]), (["b"], 1, ["b-1"])]


@pytest.mark.parametrize("pools, where", [(0, "no pool"), (2, "several pools")])
def test_a_node_outside_one_pool_that_keeps_a_key_gpuconf_does_not_offer(pools, where):
    from gpuconf.impact.installation import _Acc, _unplaced
    from gpuconf.impact.model import MIG_LABEL, PLUGIN_LABEL

    acc = _Acc()
    _unplaced(acc, "gpu-9", {MIG_LABEL: "custom-layout", PLUGIN_LABEL: "offered"}, {"offered"}, {"all-disabled"},
              pools)
    (impact,) = acc.impacts()
    assert (impact.kind, impact.severity, impact.pools, impact.node_names) == (
        "config-key-missing", "pending", [], ["gpu-9"])
    assert impact.message == (f"a GPU node in {where} keeps nvidia.com/mig.config=custom-layout, a key gpuconf's "
                              "mig-parted ConfigMap does not have: mig-manager fails to apply it")


def test_a_list_of_exactly_as_many_names_as_are_shown_has_no_more():
    from gpuconf.impact.model import NAMES_SHOWN
    from gpuconf.impact.report import _first

    names = [f"n{i}" for i in range(NAMES_SHOWN)]
    assert _first(names, None) == ", ".join(names)
    assert _first(names, NAMES_SHOWN + 2) == ", ".join(names) + " (+2 more)"


def test_a_driver_move_to_the_host_and_back_says_which_way_the_nodes_lose_their_gpu_pods():
    import copy

    import test_impact as T

    managed = T.example("single-pool.yaml")
    host = copy.deepcopy(managed)
    host["spec"]["pools"][0]["driver"] = {"preinstalled": True}
    messages = {}
    for name, (before, after) in {"to the host": (managed, host), "from the host": (host, managed)}.items():
        plan, _ = T.impacts(before, after)
        (impact,) = [i for i in plan.impacts if i.kind == "driver-mode-switch"]
        messages[name] = impact.message
    assert messages["to the host"].startswith(
        "the operator's driver leaves nodes that must then run a host driver: its pod unloads the kernel modules, so "
        "every GPU pod there stops")
    assert messages["from the host"].startswith(
        "the operator starts installing its driver on nodes that ran a host driver: the driver pod fails or replaces "
        "the host's modules, and every GPU pod there stops")

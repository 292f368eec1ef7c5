"""Issue 46, items 1 and 2: the impact plan never calls a deletion harmless, and its fallback fails closed.

A Namespace the sync deletes (a team's, or the operator's) takes everything in it: gpuconf's Argo CD and Flux objects
prune. Switches that remove a component or change the workload mode are what they do, a new delivery source is its
own kind, anything unclassified is at least pending, and the driver's window follows the counted nodes."""

from __future__ import annotations

import json

import pytest

import strategies as S
from gpuconf.impact import plan_impacts
from gpuconf.impact.planner import FALLBACKS
from gpuconf.output.treediff import DocumentDiff, TreeDiff
from test_impact import _pair, assert_covered, deployed, example, files, impacts, summary  # noqa: F401 (fixture)

ALL3 = ["train-h100", "infer-a100", "notebooks-l4"]


def _drop_namespace(spec):
    spec["teams"][0]["namespaces"] = ["research"]


def _drop_team(spec):
    spec["teams"].pop(1)
    spec["queueing"]["kueue"]["teams"].pop("product")
    spec["access"]["developers"].pop("product")


def _operator_namespace(spec):
    spec["operator"]["namespace"] = "nvidia-gpu"


def _removed(plan) -> list[tuple]:
    return [(i.severity, i.message) for i in plan.impacts if i.kind == "object-removed"]


def test_a_team_namespace_removed_is_disruptive_and_says_how_to_orphan_it():
    plan, diff = impacts(*_pair("heterogeneous.yaml", _drop_namespace))
    assert_covered(plan, diff)
    [namespace] = [i for i in plan.impacts if i.kind == "object-removed" and i.severity == "disruptive"]
    assert namespace.message == (
        "Namespace research-batch is deleted by the sync (Argo CD prunes what leaves the folder), and with it every "
        "object in it, team research's: its pods, Jobs, volume claims, Secrets and ConfigMaps")
    assert namespace.safe == (
        "orphan it first: before merging, `kubectl annotate namespace research-batch "
        "argocd.argoproj.io/sync-options=Prune=false` so that Argo CD leaves it, then delete it by hand once nothing "
        "needs it")
    # What went with it is in that impact; nothing removed is "updated in place".
    assert [d.title for d in namespace.documents] == [
        "Namespace research-batch", "LocalQueue research-batch/default", "Role research-batch/gpuconf-gpu-developer",
        "RoleBinding research-batch/gpuconf-gpu-developer"]
    assert not any(i.kind == "object-change" for i in plan.impacts)
    assert plan.worst == "disruptive" and plan.fails("disruptive")


def test_a_removed_team_is_disruptive_and_its_cluster_wide_objects_say_they_are_deleted():
    plan, diff = impacts(*_pair("heterogeneous.yaml", _drop_team))
    assert_covered(plan, diff)
    assert _removed(plan) == [
        ("disruptive", "Namespace product-inference is deleted by the sync (Argo CD prunes what leaves the folder), "
                       "and with it every object in it, team product's: its pods, Jobs, volume claims, Secrets and "
                       "ConfigMaps"),
        ("pending", "PriorityClass gpuconf-normal is deleted by the sync (Argo CD prunes what leaves the folder): new "
                    "pods that name it are refused"),
        ("pending", "WorkloadPriorityClass gpuconf-normal is deleted by the sync (Argo CD prunes what leaves the "
                    "folder): new workloads that name it are refused")]
    assert "updated in place" not in " ".join(i.message for i in plan.impacts)


def test_a_new_operator_namespace_deletes_the_old_one_with_the_whole_gpu_stack():
    plan, diff = impacts(*_pair("heterogeneous.yaml", _operator_namespace))
    assert_covered(plan, diff)
    first = plan.impacts[0]
    assert (first.kind, first.severity, first.pools, first.nodes) == ("object-removed", "disruptive", ALL3, 26)
    assert first.message == (
        "Namespace gpu-operator is deleted by the sync (Argo CD prunes what leaves the folder), and with it the GPU "
        "Operator and every operand it runs (driver, toolkit, device plugin, GFD, DCGM exporter, MIG manager, "
        "validator): every GPU node loses them and its GPU workloads stop")
    assert "argocd.argoproj.io/sync-options=Prune=false" in first.safe
    removed = [d for d in diff.documents if d.status == "removed"]
    assert all(any(d in i.documents for i in plan.impacts if i.kind in ("object-removed", "probe-run"))
               for d in removed)
    assert not any(d in i.documents for i in plan.impacts if i.kind == "object-change" for d in removed)


def _flux(spec):
    spec["delivery"] = {"tool": "flux", "path": "out"}


def test_under_flux_the_orphan_annotation_is_fluxs():
    before, after = _pair("heterogeneous.yaml", _drop_namespace)
    _flux(before["spec"])
    _flux(after["spec"])
    plan, _ = impacts(before, after)
    namespace = next(i for i in plan.impacts if i.kind == "object-removed" and i.severity == "disruptive")
    assert "(Flux prunes what leaves the folder)" in namespace.message
    assert "`kubectl annotate namespace research-batch kustomize.toolkit.fluxcd.io/prune=disabled`" in namespace.safe


def test_without_gitops_a_removed_namespace_stays_and_is_said_to():
    before = example("single-pool.yaml")
    before["spec"]["teams"] = [{"name": "ml", "namespaces": ["ml", "ml-serve"]}]
    after = json.loads(json.dumps(before))
    after["spec"]["teams"][0]["namespaces"] = ["ml"]
    plan, _ = impacts(before, after)
    assert ("none", "Namespace ml-serve is no longer rendered: `kubectl apply -k` does not delete it, so it stays in "
                    "the cluster as it is") in _removed(plan)


def _override(path, value):
    return lambda spec: spec.setdefault("overrides", []).append(
        {"path": path, "value": value, "why": "the platform team decided this change"})


@pytest.mark.parametrize("path, value, kind, severity, words", [
    ("sandboxWorkloads", {"enabled": True, "defaultWorkload": "vm-passthrough"}, "workload-mode-change", "disruptive",
     "moves from container to vm-passthrough workloads"),
    ("sandboxWorkloads", {"enabled": True}, "workload-mode-change", "pending", "sandboxWorkloads changes (enabled)"),
    ("driver.enabled", False, "operand-switch", "disruptive", "driver.enabled: true -> false: the operator deletes"),
    ("toolkit.enabled", False, "operand-switch", "disruptive", "toolkit.enabled: true -> false"),
    ("devicePlugin.enabled", False, "operand-switch", "disruptive", "stops advertising its nvidia.com/* resources"),
    ("migManager.enabled", False, "operand-switch", "pending", "nodes keep their current MIG layout"),
    ("dcgmExporter.enabled", False, "operand-switch", "restart", "GPU metrics and the alerts on them stop"),
    ("dcgm.enabled", True, "operand-switch", "restart", "dcgm.enabled: false -> true: the operator starts dcgm"),
])
def test_a_switch_is_classified_as_what_it_does(path, value, kind, severity, words):
    """Each was `RESTART operand-restart ... GPU workloads keep running` on 156dcf4."""
    plan, diff = impacts(*_pair("single-pool.yaml", _override(path, value)))
    assert_covered(plan, diff)
    assert [(i.kind, i.severity) for i in plan.impacts] == [(kind, severity)]
    assert words in plan.impacts[0].message


def test_a_new_delivery_source_is_its_own_kind_that_fail_on_gates(run, deployed):
    ex, out, edited = deployed
    after = example("heterogeneous.yaml")
    after["spec"]["delivery"].update(repoURL="https://git.attacker.example/gitops.git", targetRevision="HEAD")
    result = run("diff", edited(after), "--against", str(out), "--fail-on", "disruptive", "--format", "json")
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    [source] = [i for i in body["impacts"] if i["kind"] == "delivery-source"]
    assert source["severity"] == "disruptive"
    assert source["message"].startswith(
        "where GitOps delivers the cluster from changes (Application argocd/ml-prod-gpu-manifests, Application "
        "argocd/ml-prod-gpu-operator: spec.source.repoURL, spec.source.targetRevision, spec.sources[1].repoURL, "
        "spec.sources[1].targetRevision)")
    assert "pin targetRevision to a commit or tag" in source["safe"]


def test_a_chart_move_is_no_delivery_source_change():
    def edit(spec):
        spec["operator"]["chartVersion"] = "v26.7.0"

    before, after = _pair("single-pool.yaml", edit)
    for side in (before, after):
        side["spec"]["delivery"] = {"tool": "argocd", "repoURL": "https://git.example.com/gitops.git", "path": "out"}
    plan, _ = impacts(before, after)
    assert "operator-upgrade" in {i.kind for i in plan.impacts}
    assert "delivery-source" not in {i.kind for i in plan.impacts}


def test_an_unclassified_change_is_pending_and_says_so():
    """On 156dcf4 the fallback called anything it could not classify `restart`."""
    doc = DocumentDiff("manifests/extra.yaml", "Widget", "w", "default", "changed")
    diff = TreeDiff("out/x", "new.yaml", documents=[doc])
    plan = plan_impacts({}, {}, diff)
    [impact] = plan.impacts
    assert (impact.kind, impact.severity) == ("unclassified", "pending")
    assert impact.message.startswith("unclassified: gpuconf cannot tell what changed Widget default/w does")
    assert plan.fails("pending")
    assert list(FALLBACKS) == ["operand-restart", "object-change", "unclassified"]


def test_the_driver_window_uses_the_counted_nodes(run, deployed, tmp_path):
    """With --nodes counting 400 nodes of train-h100 the window is theirs, not the 16 declared ones'."""
    _, out, edited = deployed
    after = example("heterogeneous.yaml")
    after["spec"]["driver"]["version"] = "580.126.20"
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"h100-{n:03d}", "labels": {
        "gpuconf.dev/pool": "train-h100"}}, "status": {}} for n in range(400)]
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "NodeList", "items": nodes}), encoding="utf-8")
    declared = json.loads(run("diff", edited(after), "--against", str(out), "--format", "json").stdout)
    counted = json.loads(run("diff", edited(after), "--against", str(out), "--format", "json", "--nodes",
                             str(tmp_path / "nodes.json")).stdout)

    def window(body):
        [upgrade] = [i for i in body["impacts"] if i["kind"] == "driver-upgrade" and "train-h100" in i["pools"]]
        return upgrade

    assert "about 480 minutes by the roll-out formula" in window(declared)["message"]
    # 400 nodes one at a time: 400 x (10 min + 900 s drain + 300 s pod deletion) = 12,000 minutes.
    assert "about 12000 minutes for the 400 node(s) counted in the cluster by the roll-out formula" in \
        window(counted)["message"]

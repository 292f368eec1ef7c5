"""Advice that works (issue 27, item 6): one node at a time is a loop over the pool's nodes (never `kubectl drain -l`,
which cordons them all), run here under bash with a stand-in kubectl and with the real kubectl's argument parser;
disruptive impacts on the same nodes get one note that orders them; a changed probe Job says what each delivery does
with it; a quota drop names its pools."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_impact as T

KUBECTL = Path(sys.executable).parent / "kubectl"


def _loops(text: str) -> list[str]:
    """The shell loops an advice gives, in backticks."""
    return re.findall(r"`(for n in [^`]+)`", text)


def _advice(pair, kind: str) -> str:
    plan, _ = T.impacts(*pair())
    [impact] = [i for i in plan.impacts if i.kind == kind]
    return impact.safe


def _driver_mode_switch_to_host():
    before = T.example("single-pool.yaml")
    after = copy.deepcopy(before)
    after["spec"]["pools"][0]["driver"] = {"preinstalled": True}
    return before, after


LOOPS = {  # case -> (the impact kind, how many loops its advice gives, the steps each node goes through)
    "mig-repartition, node template": (T.mig_layout, "mig-repartition", ["drain", "label", "wait", "uncordon"]),
    "config-key-removed, MIG": (T.mig_layout, "config-key-removed", ["drain", "label", "wait", "uncordon"]),
    "driver-mode-switch": (T.waves_first_time, "driver-mode-switch", ["drain"]),
    "driver-mode-switch to the host": (_driver_mode_switch_to_host, "driver-mode-switch", ["drain"]),
    "driver-upgrade, autoUpgrade off": (T.mirror_secret, "driver-upgrade", ["drain", "delete", "sleep", "wait",
                                                                             "uncordon"]),
}


def _stand_in(tmp_path: Path, fail: str | None = None) -> dict[str, str]:
    """A kubectl on PATH that logs its arguments, lists two nodes, and fails `fail` (a 'verb node') when asked."""
    fake = tmp_path / "bin" / "kubectl"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text("#!/bin/sh\n"
                    f'echo "$*" >> {tmp_path}/calls\n'
                    'case "$1" in get) echo "gpu-a gpu-b";; esac\n'
                    + (f'case "$*" in *"{fail}"*) exit 1;; esac\n' if fail else "")
                    + "exit 0\n", encoding="utf-8")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize("case", sorted(LOOPS))
def test_one_node_at_a_time_is_a_loop_over_the_pools_nodes(case, tmp_path):
    pair, kind, steps = LOOPS[case]
    safe = _advice(pair, kind)
    assert "drain -l" not in safe
    [loop] = _loops(safe)
    script = tmp_path / "loop.sh"
    script.write_text(loop + "\n", encoding="utf-8")
    if shutil.which("shellcheck"):
        checked = subprocess.run(["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=_stand_in(tmp_path))
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "calls").read_text(encoding="utf-8").splitlines()
    assert calls[0].startswith("get nodes -l gpuconf.dev/pool")
    verbs = [c.split()[0] if not c.startswith("sleep") else "sleep" for c in calls[1:]]
    assert verbs == [v for v in steps if v != "sleep"] * 2, calls  # node by node, every step, in order
    assert all("gpu-a" in c for c in calls[1:len(calls) // 2 + 1] if not c.startswith("sleep"))
    # A step that fails stops the loop there: the second node is never touched, the first stays as it is.
    (tmp_path / "calls").unlink()
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                          env=_stand_in(tmp_path, fail="drain gpu-a"))
    assert (tmp_path / "calls").read_text(encoding="utf-8").splitlines()[1:] == [
        "drain gpu-a --ignore-daemonsets --delete-emptydir-data"]


@pytest.mark.skipif(not KUBECTL.exists(), reason="the test extra's kubectl is not installed")
@pytest.mark.parametrize("case", sorted(LOOPS))
def test_every_kubectl_command_of_a_loop_parses(case, tmp_path):
    """The real kubectl reads each command's arguments: against a server that is not there, it fails on the
    connection, never on a flag or an argument."""
    pair, kind, _ = LOOPS[case]
    [loop] = _loops(_advice(pair, kind))
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {"token": "t"}}]}),
        encoding="utf-8")
    body = loop.split("; do ", 1)[1].rsplit(" || break; done", 1)[0]
    commands = [loop.split("$(", 1)[1].split("); do ", 1)[0]] + [c for c in body.split(" && ") if c.startswith("kubectl")]
    for command in commands:
        script = f'n=gpu-a; {command.replace("kubectl ", f"{KUBECTL} --kubeconfig {config} --request-timeout 2s ", 1)}'
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert "connection refused" in done.stderr or "127.0.0.1:9" in done.stderr, (command, done.stderr)
        assert "unknown flag" not in done.stderr and "Usage:" not in done.stderr, (command, done.stderr)


def test_disruptive_impacts_on_the_same_nodes_get_one_note_that_orders_them(run, tmp_path):
    plan, _ = T.impacts(*T.mig_layout())
    assert plan.notes == [
        "mig-repartition, config-key-removed, node-replacement take down the same nodes (pool(s) infer-a100): do "
        "them in this order on each node, draining it once for all of them: 1. mig-repartition, then 2. "
        "config-key-removed, then 3. node-replacement; where they come from separate edits of the intent, a commit "
        "each, in that order, lets each finish on every node before the next one starts"]
    plan, _ = T.impacts(*T.taint_added())  # one disruptive impact: nothing to order
    assert plan.notes == []
    before, after = T.mig_layout()
    (tmp_path / "before.yaml").write_text(T.S.dump_yaml(before), encoding="utf-8")
    (tmp_path / "after.yaml").write_text(T.S.dump_yaml(after), encoding="utf-8")
    assert run("render", str(tmp_path / "before.yaml"), "-o", str(tmp_path / "out")).exit_code == 0
    args = ("diff", str(tmp_path / "after.yaml"), "--against", str(tmp_path / "out"))
    body = json.loads(run(*args, "--format", "json").stdout)
    assert body["notes"] == plan_notes(T.mig_layout)
    text = run(*args).stdout
    assert f"  note: {body['notes'][0]}\n" in text
    assert "**Order:** mig-repartition, config-key-removed, node-replacement take down" in run(
        *args, "--format", "markdown").stdout


def plan_notes(pair) -> list[str]:
    plan, _ = T.impacts(*pair())
    return plan.notes


def _probe_image(name: str, delivery: dict | None = None):
    before = T.example(name)
    if delivery is not None:
        before["spec"]["delivery"] = delivery
    after = copy.deepcopy(before)
    after["spec"]["operator"]["registry"] = "registry.corp.example/nvidia"  # the probes run the operator's image
    return before, after


@pytest.mark.parametrize("name, delivery, severity, says", [
    ("single-pool.yaml", None, "pending",
     "probe Job(s) gpuconf-probe-l40s change, and a plain `kubectl apply` cannot change a Job (its pod template is "
     "immutable): while the old Job exists (ttlSecondsAfterFinished 86400 after it finished), the apply fails on it"),
    ("single-pool.yaml", {"tool": "argocd", "repoURL": "https://git.example.com/gitops.git", "path": "out"}, "none",
     "an Argo CD PostSync hook, which runs on every sync; hook-delete-policy BeforeHookCreation: Argo CD deletes the "
     "previous Job before it creates this one, so a changed Job needs nothing"),
    ("single-pool.yaml", {"tool": "flux", "path": "out"}, "none",
     "recreated by Flux when it changes (kustomize.toolkit.fluxcd.io/force: enabled: kustomize-controller deletes "
     "and re-creates a Job it cannot patch)"),
])
def test_a_changed_probe_job_says_what_its_delivery_does_with_it(name, delivery, severity, says):
    plan, _ = T.impacts(*_probe_image(name, delivery))
    probes = [i for i in plan.impacts if i.kind == "probe-run"]
    assert max(i.severity for i in probes) == severity if severity == "pending" else \
        {i.severity for i in probes} == {"none"}
    assert any(says in i.message for i in probes), [i.message for i in probes]
    if severity == "pending":
        [stuck] = [i for i in probes if i.severity == "pending"]
        assert stuck.pools == ["l40s"]
        assert "`kubectl delete job -n gpu-operator gpuconf-probe-l40s --ignore-not-found`" in stuck.safe


def test_a_probe_job_whose_metadata_alone_changes_is_no_pending_apply():
    """A Job's labels and annotations may change in place: only its pod template (and selector) are immutable."""
    before = T.example("single-pool.yaml")
    after = copy.deepcopy(before)
    after["metadata"].setdefault("labels", {})["team"] = "platform"
    plan, _ = T.impacts(before, after)
    assert "pending" not in {i.severity for i in plan.impacts if i.kind == "probe-run"}


RKE2 = """apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata: {name: rk}
spec:
  cluster: {kubernetesVersion: "1.33", distribution: rke2}
  operator: {chartVersion: v26.7.0}
  pools:
    - {name: l4, gpu: L4, gpusPerNode: 2, nodes: 3, match: {nodeLabels: {node.example/gpu: l4}}}
"""


def test_an_rke2_node_templates_config_drop_in_is_explained_like_any_node_template():
    """RKE2 and k3s pools get a YAML config drop-in (node-templates/<pool>.rke2-config.yaml), which the diff reads as
    a document, not a text file: a changed one replaces nodes, a new pool's is capacity, never `unclassified`."""
    before = T.S.load_plain(RKE2)
    tainted = copy.deepcopy(before)
    tainted["spec"]["pools"][0]["taints"] = [{"key": "example.com/l4", "effect": "NoSchedule"}]
    plan, _ = T.impacts(before, tainted)
    replaced = [i for i in plan.impacts if i.kind == "node-replacement"]
    assert [(i.pools, [d.file for d in i.documents]) for i in replaced] == [
        (["l4"], ["node-templates/l4.rke2-config.yaml"])]
    more = copy.deepcopy(before)
    more["spec"]["pools"].append({"name": "l40s", "gpu": "L40S", "gpusPerNode": 4, "nodes": 2,
                                  "match": {"nodeLabels": {"node.example/gpu": "l40s"}}})
    for pair in ((before, more), (more, before)):
        plan, _ = T.impacts(*pair)
        assert "unclassified" not in {i.kind for i in plan.impacts}, [(i.kind, i.message) for i in plan.impacts]

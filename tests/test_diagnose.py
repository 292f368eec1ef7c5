"""Why a node lost its GPUs: the audit's diagnosis from the operator's pods, their logs and events (issue 42).

Every scenario starts from the kernel incident's cluster (tests/incidents.py: pods, logs and nodes shaped as kubectl,
the kubelet and NVIDIA's components write them, each shape's source cited there) and changes what one cause changes.
Each cause is checked for its finding, its evidence and its hint; the incident itself from a must-gather folder, from
a PodList alone and from the NodeList alone.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import incidents as I  # noqa: E402
import nodelists as NL  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
INCIDENT = ROOT / "tests" / "fixtures" / "incidents" / "kernel-update"
POOL = [f"h100-{i:02d}" for i in range(8)]


@pytest.fixture(scope="module")
def plan():
    return I.plan()


def test_committed_incident_is_what_the_module_writes(tmp_path):
    I.write(tmp_path)
    committed = sorted(p.relative_to(INCIDENT) for p in INCIDENT.rglob("*") if p.is_file())
    assert committed == sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    for rel in committed:
        assert (INCIDENT / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


# --- the kernel incident -------------------------------------------------------------------------------------------


def test_incident_from_the_must_gather_folder_names_kernel_and_log_first(run):
    result = run("audit", str(INCIDENT / "intent.yaml"), "--must-gather", str(INCIDENT / "must-gather"))
    assert result.exit_code == 1, result.stderr
    first = result.stdout.splitlines()[0]
    assert first == ("cause: GA140 the driver cannot be built for kernel 5.15.0-151-generic: E: Unable to locate "
                     "package linux-headers-5.15.0-151-generic (3 nodes of pool h100: h100-05, h100-06, h100-07)")
    doc = json.loads(run("audit", str(INCIDENT / "intent.yaml"), "--must-gather", str(INCIDENT / "must-gather"),
                         "--format", "json").stdout)
    [cause] = doc["causes"]
    assert cause["code"] == "GA140" and cause["nodes"] == ["h100-05", "h100-06", "h100-07"]
    ga140 = [f for f in doc["findings"] if f["code"] == "GA140"]
    evidence = ga140[0]["evidence"]
    assert evidence["kind"] == "headers" and evidence["kernelVersion"] == "5.15.0-151-generic"
    assert evidence["healthyKernels"] == {"5.15.0-143-generic": 5} and evidence["nodesLostOnKernel"] == 3
    assert evidence["pod"]["containers"][0]["reason"] == "CrashLoopBackOff"
    assert evidence["pod"]["events"][0].startswith("BackOff: Back-off restarting failed container nvidia-driver-ctr")
    assert evidence["waiting behind it"] == ["container-toolkit", "operator-validator", "device-plugin",
                                             "mig-manager", "gpu-feature-discovery", "dcgm-exporter"]
    assert evidence["confirm"][1].startswith("kubectl logs -n gpu-operator nvidia-driver-daemonset-")
    assert ga140[0]["hint"].startswith("Make the node's kernel one the driver can be built for")
    # GA107 names the cause, never the device plugin; no validator or plugin finding for the waits it explains.
    ga107 = [f for f in doc["findings"] if f["code"] == "GA107"]
    assert len(ga107) == 3 and all(f["hint"].startswith("explained by GA140 on this node: the driver cannot be "
                                                        "built for kernel 5.15.0-151-generic") for f in ga107)
    assert not {f["code"] for f in doc["findings"]} & {"GA142", "GA143", "GA144", "GA145", "GA147", "GA149"}


def test_incident_from_a_podlist_alone_names_the_crash_looping_driver_and_the_kernel(run):
    result = run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(INCIDENT / "nodes.json"), "--pods",
                 str(INCIDENT / "pods.json"))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "cause: GA142 kernel 5.15.0-151-generic, which none of the pool's 5 healthy nodes runs (they run "
        "5.15.0-143-generic); 3 nodes lost GPUs on it; its driver pod fails there: CrashLoopBackOff (exit 1, 14 "
        "restarts) (3 nodes of pool h100: h100-05, h100-06, h100-07)")
    # The waiting work, tied to the missing capacity.
    assert lines[1] == ("waiting: GA150 7 pods wait for nvidia.com/gpu (28 requested); 24 GPUs of pool h100 are "
                        "missing on 3 nodes")
    doc = json.loads(run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(INCIDENT / "nodes.json"), "--pods",
                         str(INCIDENT / "pods.json"), "--format", "json").stdout)
    ga142 = [f for f in doc["findings"] if f["code"] == "GA142"]
    assert ga142[0]["evidence"]["driverPod"]["pod"].startswith("gpu-operator/nvidia-driver-daemonset-")
    assert not [f for f in doc["findings"] if f["code"] == "GA143"]  # folded into GA142
    assert all(f["hint"].startswith("explained by GA142 on this node: kernel 5.15.0-151-generic")
               for f in doc["findings"] if f["code"] == "GA107")
    [waiting] = [f for f in doc["findings"] if f["code"] == "GA150"]
    assert waiting["evidence"]["missing"] == {"h100": {"nodes": ["h100-05", "h100-06", "h100-07"], "units": 24}}
    assert waiting["evidence"]["scheduler"].startswith("0/11 nodes are available: ")
    assert waiting["severity"] == "error" and waiting["pool"] == "h100"


def test_incident_from_the_nodelist_alone_names_the_kernel_no_healthy_node_runs(run):
    doc = json.loads(run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(INCIDENT / "nodes.json"),
                         "--format", "json").stdout)
    ga142 = [f for f in doc["findings"] if f["code"] == "GA142"]
    assert [f["node"] for f in ga142] == ["h100-05", "h100-06", "h100-07"]
    assert ga142[0]["message"] == ("kernel 5.15.0-151-generic, which none of the pool's 5 healthy nodes runs (they "
                                   "run 5.15.0-143-generic); 3 nodes lost GPUs on it")
    assert ga142[0]["hint"].startswith("Read the driver pod's log on the node")
    ga107 = [f for f in doc["findings"] if f["code"] == "GA107"]
    assert ga107 and not any("device plugin" in f["hint"] for f in ga107)
    assert all(f["hint"].startswith("explained by GA142") for f in ga107)


def test_a_kernel_every_node_runs_is_no_cause(run, tmp_path, plan):
    """All eight on the new kernel, three without GPUs: no healthy node runs another kernel, so no GA142."""
    items = I.nodes(plan)
    for n in items:
        if n["metadata"]["name"] in POOL:
            I._kernel(n, I.NEW)
    path = tmp_path / "nodes.json"
    path.write_text(NL.dumps(NL.nodelist(items)), encoding="utf-8")
    doc = json.loads(run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(path), "--format", "json").stdout)
    assert not [f for f in doc["findings"] if f["code"] == "GA142"]
    assert [f["hint"] for f in doc["findings"] if f["code"] == "GA107"][0] == \
        "check the device plugin pod on the node and the config its label selects"


# --- one cause at a time ----------------------------------------------------------------------------------------------


def _scenario(run, tmp_path, plan, change, logs=None, node_change=None, events=None, fmt="json"):
    """The incident's cluster made healthy, then `change(pods_by_node)` applied; audited from a must-gather folder."""
    node_items = I.nodes(plan)
    for n in node_items:
        if n["metadata"]["name"] in POOL:
            I._kernel(n, I.OLD)
            for part in ("capacity", "allocatable"):
                n["status"][part]["nvidia.com/gpu"] = "8"
    if node_change is not None:
        node_change({n["metadata"]["name"]: n for n in node_items})
    by_node = {node: {p["metadata"]["labels"]["app"]: p for p in I.healthy_pods(plan, [node])} for node in POOL}
    change(by_node)
    items = [p for pods in by_node.values() for p in pods.values()]
    folder = I.gather(tmp_path / "mg", node_items, items, logs or {})
    args = ["audit", str(INCIDENT / "intent.yaml"), "--must-gather", str(folder), "--format", fmt]
    if events is not None:
        path = tmp_path / "events.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": events}), encoding="utf-8")
        args = ["audit", str(INCIDENT / "intent.yaml"), "--must-gather", str(folder), "--events", str(path),
                "--format", fmt]
    result = run(*args)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout) if fmt == "json" else result.stdout


def _only(doc, code):
    found = [f for f in doc["findings"] if f["code"] == code]
    assert len(found) == 1, [(f["code"], f["node"], f["message"]) for f in doc["findings"]]
    return found[0]


def _lose_gpus(node: str):
    def change(nodes):
        for part in ("capacity", "allocatable"):
            nodes[node]["status"][part]["nvidia.com/gpu"] = "0"
    return change


def _name(by_node, node, app):
    return by_node[node][app]["metadata"]["name"]


def test_ga140_no_precompiled_image_for_the_kernel(run, tmp_path, plan):
    image = "nvcr.io/nvidia/driver:580-5.15.0-151-generic-ubuntu22.04"
    doc = _scenario(run, tmp_path, plan, lambda pods: I.pull_failure(pods["h100-02"]["nvidia-driver-daemonset"],
                                                                     "nvidia-driver-ctr", image),
                    node_change=_lose_gpus("h100-02"))
    f = _only(doc, "GA140")
    assert f["message"] == (f"no precompiled driver image for kernel 5.15.0-151-generic: {image} cannot be pulled "
                            "(ImagePullBackOff)")
    assert f["evidence"]["kind"] == "precompiled" and f["evidence"]["image"] == image
    assert _only(doc, "GA107")["hint"].startswith("explained by GA140 on this node: no precompiled driver image")


def test_ga140_could_not_resolve_the_kernel_version(run, tmp_path, plan):
    logs = {}

    def change(pods):
        I.crash(pods["h100-03"]["nvidia-driver-daemonset"], "nvidia-driver-ctr")
        logs[_name(pods, "h100-03", "nvidia-driver-daemonset")] = {("nvidia-driver-ctr", True): [
            "Resolving Linux kernel version...", "Could not resolve Linux kernel version",
            "Unloading NVIDIA driver kernel modules...", "Unmounting NVIDIA driver rootfs..."]}
    doc = _scenario(run, tmp_path, plan, change, logs, node_change=_lose_gpus("h100-03"))
    f = _only(doc, "GA140")
    assert f["message"] == ("the driver cannot be built for kernel 5.15.0-143-generic: Could not resolve Linux "
                            "kernel version")
    assert f["node"] == "h100-03" and f["evidence"]["log"] == "Could not resolve Linux kernel version"


@pytest.mark.parametrize("line, kind", [
    ("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service", "secure-boot"),
    ("Could not unload NVIDIA driver kernel modules, driver is in use", "in-use"),
    ("ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most frequently when this kernel module was "
     "built against the wrong or improperly configured kernel sources", "load"),
])
def test_ga141_the_module_fails_to_load(run, tmp_path, plan, line, kind):
    logs = {}

    def change(pods):
        I.crash(pods["h100-01"]["nvidia-driver-daemonset"], "nvidia-driver-ctr")
        logs[_name(pods, "h100-01", "nvidia-driver-daemonset")] = {("nvidia-driver-ctr", True): [
            "Loading NVIDIA driver kernel modules...", "+ modprobe nvidia", line]}
    doc = _scenario(run, tmp_path, plan, change, logs)
    f = _only(doc, "GA141")
    assert f["evidence"]["kind"] == kind and f["evidence"]["log"] == line
    assert f["message"].startswith(f"the driver's kernel module fails on kernel 5.15.0-143-generic ({kind}): ")
    assert f["hint"].startswith("Fix what the log names")


def test_ga141_nouveau_from_the_driver_manager(run, tmp_path, plan):
    logs = {}

    def change(pods):
        I.crash(pods["h100-01"]["nvidia-driver-daemonset"], "k8s-driver-manager")
        logs[_name(pods, "h100-01", "nvidia-driver-daemonset")] = {("k8s-driver-manager", True): [
            'time="2026-12-06T09:10:30Z" level=info msg="Unloading nouveau driver"',
            'time="2026-12-06T09:10:30Z" level=fatal msg="failed to unload nouveau driver: exit status 1"']}
    f = _only(_scenario(run, tmp_path, plan, change, logs), "GA141")
    assert f["evidence"]["kind"] == "nouveau" and f["evidence"]["log"] == "failed to unload nouveau driver: exit status 1"


def test_ga143_image_pull_names_the_image(run, tmp_path, plan):
    image = "registry.corp.example/nvidia/driver:580.105.08-ubuntu22.04"
    doc = _scenario(run, tmp_path, plan, lambda pods: I.pull_failure(pods["h100-04"]["nvidia-driver-daemonset"],
                                                                     "nvidia-driver-ctr", image, "ErrImagePull"))
    f = _only(doc, "GA143")
    assert f["message"] == f"the driver image {image} cannot be pulled (ErrImagePull)"
    assert f["evidence"]["kind"] == "pull"
    assert f["evidence"]["confirm"][0] == f"kubectl describe pod -n gpu-operator {f['evidence']['pod']['pod'][13:]}"
    assert f["hint"].startswith("Make the image pullable from the node")


def test_ga143_a_crash_without_a_log_says_where_to_read_it(run, tmp_path, plan):
    items = I.healthy_pods(plan, POOL)
    I.crash(items[0], "nvidia-driver-ctr", exit_code=2)
    path = tmp_path / "pods.json"
    path.write_text(NL.dumps(I.podlist(items)), encoding="utf-8")
    nodes = tmp_path / "nodes.json"
    healthy = I.nodes(plan)
    for n in healthy:
        if n["metadata"]["name"] in POOL:
            I._kernel(n, I.OLD)
            for part in ("capacity", "allocatable"):
                n["status"][part]["nvidia.com/gpu"] = "8"
    nodes.write_text(NL.dumps(NL.nodelist(healthy)), encoding="utf-8")
    doc = json.loads(run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(nodes), "--pods", str(path),
                         "--format", "json").stdout)
    f = _only(doc, "GA143")
    assert f["message"] == ("the driver container nvidia-driver-ctr fails: CrashLoopBackOff (exit 2, 9 restarts); its "
                            "log was not read")
    assert f["hint"].endswith("(the pod list holds no log: give --must-gather DIR, or audit with --kubeconfig)")


def test_ga144_the_toolkit_cannot_restart_containerd(run, tmp_path, plan):
    logs = {}
    line = ('time="2026-12-06T09:10:30Z" level=error msg="error running nvidia-ctk-installer: unable to setup '
            'runtime: unable to restart containerd: unable to dial: dial unix /run/containerd/containerd.sock: '
            'connect: no such file or directory"')

    def change(pods):
        I.crash(pods["h100-06"]["nvidia-container-toolkit-daemonset"], "nvidia-container-toolkit-ctr")
        for app in ("nvidia-device-plugin-daemonset", "gpu-feature-discovery"):
            I.waiting_in(pods["h100-06"][app], "toolkit-validation")
        logs[_name(pods, "h100-06", "nvidia-container-toolkit-daemonset")] = {
            ("nvidia-container-toolkit-ctr", True): ["Starting nvidia-ctk-installer", line]}
    doc = _scenario(run, tmp_path, plan, change, logs, node_change=_lose_gpus("h100-06"))
    f = _only(doc, "GA144")
    message = line[line.index("error running"):-1]  # logrus's msg="..."
    assert f["message"] == f"container-toolkit fails on the node: {message}"
    assert f["evidence"]["log"] == message
    assert not [x for x in doc["findings"] if x["code"] == "GA145"]  # the plugin's wait is the toolkit's doing
    assert f["hint"].startswith("Fix the toolkit's runtime settings")
    assert _only(doc, "GA107")["hint"].startswith("explained by GA144 on this node")


def test_ga145_the_config_key_is_missing_from_the_configmap(run, tmp_path, plan):
    logs = {}

    def change(pods):
        I.crash(pods["h100-02"]["nvidia-device-plugin-daemonset"], "config-manager-init")
        logs[_name(pods, "h100-02", "nvidia-device-plugin-daemonset")] = {("config-manager-init", True): [
            "I1206 09:10:30.000000       1 main.go:246] Waiting for change to 'nvidia.com/device-plugin.config' label",
            "E1206 09:10:30.000000       1 main.go:209] specified config h100-ts4 does not exist"]}
    doc = _scenario(run, tmp_path, plan, change, logs, node_change=_lose_gpus("h100-02"))
    f = _only(doc, "GA145")
    assert f["message"] == "device-plugin fails on its config: specified config h100-ts4 does not exist"
    assert f["evidence"]["kind"] == "config"
    assert f["hint"].startswith("Give the plugin what it waits for")
    assert _only(doc, "GA107")["hint"].startswith("explained by GA145 on this node: device-plugin fails on its config")


def test_ga145_the_mps_daemon_is_not_ready(run, tmp_path, plan):
    logs = {}

    def change(pods):
        I.crash(pods["h100-02"]["nvidia-device-plugin-daemonset"], "nvidia-device-plugin")
        logs[_name(pods, "h100-02", "nvidia-device-plugin-daemonset")] = {("nvidia-device-plugin", True): [
            "E1206 09:10:30.000000       1 main.go:302] Failed to start plugin: error waiting for MPS daemon: error "
            "checking MPS daemon health: failed to send command to MPS daemon: exit status 1",
            "I1206 09:10:30.000000       1 main.go:409] Failed to start one or more plugins. Retrying in 30s..."]}
    f = _only(_scenario(run, tmp_path, plan, change, logs), "GA145")
    assert f["evidence"]["kind"] == "mps" and f["message"] == (
        "device-plugin fails on the MPS control daemon: Failed to start plugin: error waiting for MPS daemon: error "
        "checking MPS daemon health: failed to send command to MPS daemon: exit status 1")


def test_ga149_operand_pods_never_scheduled_on_a_tainted_node(run, tmp_path, plan):
    def taint(nodes):
        nodes["h100-07"]["spec"]["taints"] = [{"key": "maintenance", "value": "bios", "effect": "NoSchedule"}]
        _lose_gpus("h100-07")(nodes)

    def change(pods):
        for app in ("nvidia-device-plugin-daemonset", "gpu-feature-discovery"):
            del pods["h100-07"][app]
    doc = _scenario(run, tmp_path, plan, change, node_change=taint)
    f = _only(doc, "GA149")
    assert f["message"] == ("no device-plugin, gpu-feature-discovery pod on the node: the node's taint "
                            "maintenance=bios:NoSchedule is not tolerated")
    assert f["evidence"]["untolerated taints"] == ["maintenance=bios:NoSchedule"]
    assert f["hint"].startswith("Let the operands onto the node: declare the node's taint in the pool")
    assert _only(doc, "GA107")["hint"].startswith("explained by GA149 on this node")


def test_ga147_the_validator_waits_in_a_step_nothing_earlier_explains(run, tmp_path, plan):
    logs = {}

    def change(pods):
        I.waiting_in(pods["h100-05"]["nvidia-operator-validator"], "cuda-validation")
        logs[_name(pods, "h100-05", "nvidia-operator-validator")] = {("cuda-validation", False): [
            "pod nvidia-cuda-validator-x2mpl is curently in Pending phase",
            "gave up waiting for pod nvidia-cuda-validator-x2mpl to be available"]}
    f = _only(_scenario(run, tmp_path, plan, change, logs), "GA147")
    assert f["message"] == ("the operator validator waits in cuda-validation: gave up waiting for pod "
                            "nvidia-cuda-validator-x2mpl to be available")
    assert f["hint"].startswith("Fix the component the step waits for")


def test_ga148_a_driver_upgrade_stuck_behind_a_failing_driver_pod(run, tmp_path, plan):
    logs = {}

    def state(nodes):
        nodes["h100-04"]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "pod-restart-required"

    def change(pods):
        I.crash(pods["h100-04"]["nvidia-driver-daemonset"], "nvidia-driver-ctr")
        logs[_name(pods, "h100-04", "nvidia-driver-daemonset")] = {("nvidia-driver-ctr", True): [
            "Could not unload NVIDIA driver kernel modules, driver is in use"]}
    doc = _scenario(run, tmp_path, plan, change, logs, node_change=state)
    f = _only(doc, "GA148")
    assert f["message"] == "the driver upgrade is stuck in pod-restart-required: driver fails on the node (GA141)"
    assert f["evidence"]["blocking"] == "driver"
    assert f["hint"].startswith("Unblock the step the node waits in")


def test_ga148_a_drain_that_fails_reads_the_upgrade_controllers_event(run, tmp_path, plan):
    def state(nodes):
        nodes["h100-04"]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "drain-required"

    events = [{"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "GPUDriverUpgrade", "count": 4,
               "message": "Failed to drain the node, cannot evict pod as it would violate the pod's disruption budget",
               "involvedObject": {"kind": "Node", "name": "h100-04", "uid": "h100-04"},
               "lastTimestamp": "2026-12-06T09:11:00Z", "metadata": {"name": "h100-04.18a2", "namespace": "default"},
               "source": {"component": "nvidia-gpu-operator"}}]
    doc = _scenario(run, tmp_path, plan, lambda pods: None, node_change=state, events=events)
    f = _only(doc, "GA148")
    assert f["message"] == ("the driver upgrade is stuck in drain-required: GPUDriverUpgrade: Failed to drain the node, "
                            "cannot evict pod as it would violate the pod's disruption budget (x4)")


MIG_INTENT = NL.SINGLE_MIG  # two H200 nodes, each GPU in four 1g.18gb instances


def test_ga146_the_mig_manager_wedge(run, tmp_path):
    """mig-parted#485: the clients' shutdown timed out, the state stays pending, the manager waits for a label change
    that never comes; its pod runs and is ready, so only its log tells."""
    p = NL.plan_of(MIG_INTENT)
    intent = tmp_path / "intent.yaml"
    intent.write_text(MIG_INTENT, encoding="utf-8")
    node_items = NL.clean_nodes(p)
    pool = [n for n in node_items if n["metadata"]["labels"].get("gpuconf.dev/pool") == "h200"]
    wedged = pool[0]
    labels = wedged["metadata"]["labels"]
    labels["nvidia.com/mig.config.state"] = "pending"
    for key in [k for k in labels if k.startswith("nvidia.com/mig-") and k.endswith(".count")]:
        labels[key] = "0"
    for key in [k for k in wedged["status"]["allocatable"] if k.startswith("nvidia.com/")]:
        wedged["status"]["allocatable"][key] = "0"
        wedged["status"]["capacity"][key] = "0"
    items = I.healthy_pods(p, [n["metadata"]["name"] for n in pool])
    mig = next(x for x in items if x["metadata"]["labels"]["app"] == "nvidia-mig-manager"
               and x["spec"]["nodeName"] == wedged["metadata"]["name"])
    logs = {mig["metadata"]["name"]: {("nvidia-mig-manager", False): [
        'time="2026-12-06T09:00:01Z" level=info msg="Updating to MIG config: h200-quarter"',
        'time="2026-12-06T09:05:01Z" level=error msg="Error: failed to wait for pods to be deleted: device-plugin pod '
        'did not shutdown: timed out waiting for the condition"',
        'time="2026-12-06T09:05:01Z" level=info msg="Waiting for change to \'nvidia.com/mig.config\' label"']}}
    folder = I.gather(tmp_path / "mg", node_items, items, logs)
    doc = json.loads(run("audit", str(intent), "--must-gather", str(folder), "--format", "json").stdout)
    f = _only(doc, "GA146")
    assert f["message"] == ("MIG manager is wedged in pending (mig-parted#485): Error: failed to wait for pods to be "
                            "deleted: device-plugin pod did not shutdown: timed out waiting for the condition")
    assert f["hint"].startswith("Read the MIG manager's error") and "waits for a label change" in f["hint"]
    assert f["evidence"]["nvidia.com/mig.config.state"] == "pending"


def test_ga150_pending_pods_for_a_resource_no_pool_offers(run, tmp_path, plan):
    items = I.healthy_pods(plan, POOL) + I.training_pods()
    for item in items[-7:]:
        for c in item["spec"]["containers"]:
            c["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    path = tmp_path / "pods.json"
    path.write_text(NL.dumps(I.podlist(items)), encoding="utf-8")
    doc = json.loads(run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(INCIDENT / "nodes.json"), "--pods",
                         str(path), "--format", "json").stdout)
    [f] = [x for x in doc["findings"] if x["code"] == "GA150"]
    assert f["message"] == "7 pods wait for nvidia.com/mig-1g.10gb (7 requested); no pool offers it"
    assert f["severity"] == "warning" and f["hint"].startswith("Add a pool that offers nvidia.com/mig-1g.10gb")


def test_a_pod_list_without_operands_is_said_once(run, tmp_path):
    path = tmp_path / "pods.json"
    path.write_text(NL.dumps(I.podlist(I.training_pods())), encoding="utf-8")
    result = run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(INCIDENT / "nodes.json"), "--pods", str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"gpuconf: note: {path}: 7 pods, none of the GPU Operator's operands")
    assert "GA149" not in result.stdout  # no pod is missing where none was read


def test_markdown_leads_with_the_causes(run):
    result = run("audit", str(INCIDENT / "intent.yaml"), "--must-gather", str(INCIDENT / "must-gather"), "--format",
                 "markdown")
    lines = result.stdout.splitlines()
    assert lines[:3] == ["# Audit of ml-train", "", "## Causes"]
    assert lines[4].startswith("- **GA140** the driver cannot be built for kernel 5.15.0-151-generic: E: Unable to "
                               "locate package linux-headers-5.15.0-151-generic (3 nodes: `h100-05`, `h100-06`, "
                               "`h100-07`). Fix: Make the node's kernel")


@pytest.mark.parametrize("bad, message", [
    ("not yaml: [", "not JSON or YAML"),
    ("kind: NodeList\nitems: []\n", "expected a PodList"),
    ("{\"kind\": \"List\", \"items\": [{\"metadata\": 3}]}", "item 0 is not a Pod (metadata is a number, not an object)"),
])
def test_a_pod_file_that_is_no_podlist_is_exit_2(run, tmp_path, bad, message):
    path = tmp_path / "pods.json"
    path.write_text(bad, encoding="utf-8")
    result = run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(INCIDENT / "nodes.json"), "--pods", str(path))
    assert result.exit_code == 2 and result.stdout == ""
    assert message in result.stderr, result.stderr


def test_usage_errors(run, tmp_path):
    intent = str(INCIDENT / "intent.yaml")
    assert run("audit", intent, "--must-gather", str(INCIDENT / "must-gather"), "--pods",
               str(INCIDENT / "pods.json")).exit_code == 2
    assert run("audit", intent, "--events", str(INCIDENT / "pods.json"), "--nodes",
               str(INCIDENT / "nodes.json")).exit_code == 2
    assert run("audit", intent).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("audit", intent, "--must-gather", str(empty))
    assert result.exit_code == 2
    assert result.stderr == (f"gpuconf: {empty}: no gpu_operand_pods.yaml: not the folder of the GPU Operator's "
                             "must-gather.sh\n")


# --- live: the same read from a (fake) API server ----------------------------------------------------------------------


def _live(plan):
    from test_audit import FakeApiServer

    node_items = I.nodes(plan)
    items = I.pods(plan)
    driver_pods = [p["metadata"]["name"] for p in items if p["metadata"]["labels"].get("app") ==
                   "nvidia-driver-daemonset" and p["status"]["containerStatuses"][0]["restartCount"]]
    log = "".join(f"{t} {line}\n" for t, line in I.driver_log(I.NEW))
    logs = {(name, "nvidia-driver-ctr", True): log for name in driver_pods}
    logs.update({(name, "nvidia-driver-ctr", False): "" for name in driver_pods})
    return FakeApiServer(node_items, pods=items, logs=logs), driver_pods


def test_live_reads_pods_paged_and_only_the_logs_a_cause_needs(run, tmp_path, plan, monkeypatch):
    from gpuconf.cluster import operandsource
    from test_audit import _kubeconfig

    monkeypatch.setattr(operandsource, "PAGE_SIZE", 20)
    server, driver_pods = _live(plan)
    with server as api:
        result = run("audit", str(INCIDENT / "intent.yaml"), "--kubeconfig", _kubeconfig(tmp_path, api.port),
                     "--format", "json")
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert [c["code"] for c in doc["causes"]] == ["GA140", "GA150"]
    assert doc["causes"][0]["message"] == ("the driver cannot be built for kernel 5.15.0-151-generic: E: Unable to "
                                           "locate package linux-headers-5.15.0-151-generic")
    assert all(method == "GET" for method, _, _ in api.requests)
    pods = [q for _, path, q in api.requests if path == "/api/v1/namespaces/gpu-operator/pods"]
    assert [q.get("limit") for q in pods] == ["20"] * 3 and ["continue" in q for q in pods] == [False, True, True]
    assert {q.get("fieldSelector") for _, path, q in api.requests if path == "/api/v1/pods"} == \
        {"status.phase=Pending"}
    logs = [(path.split("/")[6], q.get("container"), q.get("previous"), q.get("tailLines"), q.get("limitBytes"))
            for _, path, q in api.requests if path.endswith("/log")]
    # Two pods of the one failure are read (previous and current run), each bounded; the third shares their lines.
    assert len(logs) == 4 and {entry[3:] for entry in logs} == {("60", "65536")}
    assert {entry[0] for entry in logs} < set(driver_pods)
    shared = [f for f in doc["findings"] if f["code"] == "GA140" and "logOf" in f["evidence"]["pod"]]
    assert len(shared) == 1


def test_live_without_permission_to_list_pods_is_exit_2_naming_it(run, tmp_path, plan):
    from test_audit import _kubeconfig

    server, _ = _live(plan)
    server.forbid = ("/api/v1/namespaces/gpu-operator/pods",)
    with server as api:
        config = _kubeconfig(tmp_path, api.port)
        result = run("audit", str(INCIDENT / "intent.yaml"), "--kubeconfig", config)
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.startswith(
            "gpuconf: the credentials of the kubeconfig's current context may not list pods in namespace gpu-operator "
            "(403 Forbidden): pods is forbidden: ")
        assert "the gpuconf-gpu-auditor role grants exactly that" in result.stderr
        assert "--no-operands to audit the nodes alone" in result.stderr
        # The nodes alone still audit (and read no pod).
        api.requests.clear()
        alone = run("audit", str(INCIDENT / "intent.yaml"), "--kubeconfig", config, "--no-operands")
        assert alone.exit_code == 1 and alone.stdout.startswith("cause: GA142 kernel 5.15.0-151-generic")
        assert {path for _, path, _ in api.requests} == {"/api/v1/nodes"}


def test_live_without_permission_to_read_logs_is_exit_2_naming_it(run, tmp_path, plan):
    from test_audit import _kubeconfig

    server, _ = _live(plan)
    server.forbid = ("/api/v1/namespaces/gpu-operator/pods/",)
    with server as api:
        result = run("audit", str(INCIDENT / "intent.yaml"), "--kubeconfig", _kubeconfig(tmp_path, api.port))
    assert result.exit_code == 2
    assert "may not get pods/log in namespace gpu-operator (403 Forbidden)" in result.stderr


# --- the PodList read by its layout ----------------------------------------------------------------------------------


def _operands_both_ways(path):
    """The Operands of a pod file read by the skim, and by the generic reader (the file's layout hidden from it)."""
    from gpuconf.cluster import operandsource as S

    skimmed = S.read_pods(str(path), "gpu-operator")
    compact = path.with_name("compact.json")
    compact.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8"))), encoding="utf-8")
    whole = S.read_pods(str(compact), "gpu-operator")
    return skimmed, whole


def _shape(operands):
    """What the diagnosis reads of the pods (a healthy MIG manager is kept by name and main container alone)."""
    def pod(p):
        if p == "healthy":
            return p
        containers = [c.as_dict() for c in p.containers if not (p.operand == "mig-manager" and c.init)]
        return p.name, p.namespace, p.phase, p.waiting_in if p.operand != "mig-manager" else None, containers

    return ({node: {op: pod(p) for op, p in pods.items()} for node, pods in operands.by_node.items()},
            [(w.name, w.requests, w.message) for w in operands.waiting], operands.pods, operands.operand_pods,
            operands.namespace)


def test_the_skim_reads_what_the_whole_decode_reads(tmp_path):
    path = tmp_path / "pods.json"
    path.write_text((INCIDENT / "pods.json").read_text(encoding="utf-8"), encoding="utf-8")
    skimmed, whole = _operands_both_ways(path)
    assert _shape(skimmed) == _shape(whole)
    assert skimmed.operand_pods == 56 and len(skimmed.waiting) == 7


def test_a_pod_larger_than_the_read_chunk_grows_the_buffer(tmp_path, monkeypatch):
    from gpuconf.cluster import skim

    monkeypatch.setattr(skim, "CHUNK", 4096)  # every pod is larger
    path = tmp_path / "pods.json"
    path.write_text((INCIDENT / "pods.json").read_text(encoding="utf-8"), encoding="utf-8")
    skimmed, whole = _operands_both_ways(path)
    assert _shape(skimmed) == _shape(whole)


def test_the_skim_is_not_fooled_by_keys_in_labels_and_annotations(tmp_path, plan):
    """Keys named like the ones the skim reads, at other depths (a label `phase`, an annotation `app`, a label value
    with `"ready": false` in it), change nothing."""
    items = I.healthy_pods(plan, POOL[:2]) + I.training_pods()[:1]
    for item in items:
        item["metadata"]["annotations"] = {"app": "not-an-operand", "nodeName": "elsewhere"}
        item["metadata"]["labels"]["phase"] = "Pending"
        item["metadata"]["labels"]["note"] = 'ready-false'
    I.crash(items[3], items[3]["spec"]["containers"][0]["name"])  # one unhealthy: decoded whole
    path = tmp_path / "pods.json"
    path.write_text(NL.dumps(I.podlist(items)), encoding="utf-8")
    skimmed, whole = _operands_both_ways(path)
    assert _shape(skimmed) == _shape(whole)
    assert sum(1 for pods in skimmed.by_node.values() for p in pods.values() if p != "healthy") == 3  # 2 MIG managers


@pytest.mark.parametrize("cut", [200, 5000, -40])
def test_a_pod_file_cut_short_is_exit_2(run, tmp_path, cut):
    text = (INCIDENT / "pods.json").read_text(encoding="utf-8")
    path = tmp_path / "pods.json"
    path.write_text(text[:cut], encoding="utf-8")
    result = run("audit", str(INCIDENT / "intent.yaml"), "--nodes", str(INCIDENT / "nodes.json"), "--pods", str(path))
    assert result.exit_code == 2 and result.stdout == "", result.stderr
    assert result.stderr.startswith(f"gpuconf: {path}: ")


def test_the_rendered_auditor_role_grants_exactly_the_live_audits_requests(run, tmp_path, plan):
    """Each request of a live audit is one the gpuconf-gpu-auditor roles allow, and each of their grants is used."""
    from gpuconf.render import access
    from test_audit import _kubeconfig

    text = I.INTENT + "  access: {auditors: [serviceaccount:ci:gpuconf-audit]}\n"
    intent = tmp_path / "intent.yaml"
    intent.write_text(text, encoding="utf-8")
    docs = {(d["kind"], d["metadata"]["name"]): d for d in access.render(NL.plan_of(text))}
    granted = {(verb, resource, None) for r in docs[("ClusterRole", "gpuconf-gpu-auditor")]["rules"]
               for resource in r["resources"] for verb in r["verbs"]}
    granted |= {(verb, resource, "gpu-operator") for r in docs[("Role", "gpuconf-gpu-auditor")]["rules"]
                for resource in r["resources"] for verb in r["verbs"]}
    server, _ = _live(plan)
    with server as api:
        assert run("audit", str(intent), "--kubeconfig", _kubeconfig(tmp_path, api.port)).exit_code == 1
    used = set()
    for method, path, _ in api.requests:
        parts = path.strip("/").split("/")  # api v1 [namespaces NS] RESOURCE [NAME [SUB]]
        namespace = parts[3] if parts[2] == "namespaces" else None
        rest = parts[4:] if namespace else parts[2:]
        resource, verb = (f"{rest[0]}/{rest[2]}", "get") if len(rest) == 3 else (rest[0], "list")
        assert method == "GET"
        assert (verb, resource, None) in granted or (verb, resource, namespace) in granted, path
        used.add((verb, resource, None) if (verb, resource, None) in granted else (verb, resource, namespace))
    assert used == granted


@pytest.mark.parametrize("example", ["heterogeneous", "hybrid", "airgapped", "single-pool"])
def test_nodes_read_by_their_layout_are_the_nodes_without_their_images(example):
    from gpuconf.cluster.nodesource import read_nodes_file

    path = str(ROOT / "tests" / "fixtures" / "nodes" / f"{example}.json")
    whole = list(read_nodes_file(path))
    for node in whole:
        assert node["status"].pop("images")  # the fixtures list the kubelet's images
    assert list(read_nodes_file(path, images=False)) == whole

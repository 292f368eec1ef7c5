"""The kernel-update incident as the real tools record it: eight H100 nodes synced by gpuconf, three of them patched
from kernel 5.15.0-143-generic to 5.15.0-151-generic, whose driver pods crash-loop because the driver container finds
no headers for the new kernel; the operands behind the driver wait in their init containers, seven training pods
are Pending with "Insufficient nvidia.com/gpu".

Shapes and messages, and where each comes from:
  - Nodes: tests/nodelists.py (kubectl's NodeList). A node whose device plugin never registered after the reboot
    reports nvidia.com/gpu 0 in capacity and allocatable (the kubelet's device manager keeps the resource at 0).
  - Pods: `kubectl get pods -n gpu-operator -o json` (a List, four-space indent). DaemonSet names, `app` labels,
    init containers and containers: gpu-operator assets/state-*/0500_daemonset.yaml (driver: init k8s-driver-manager,
    container nvidia-driver-ctr, label app.kubernetes.io/component=nvidia-driver; toolkit: init driver-validation;
    device plugin and GFD: init toolkit-validation; validator: driver-validation, toolkit-validation,
    cuda-validation, plugin-validation). No operand sets terminationMessagePolicy, so lastState.terminated holds no
    message. The CrashLoopBackOff message is the kubelet's ("back-off 5m0s restarting failed container=%s pod=%s",
    kuberuntime_manager.go; format.Pod is name_namespace(uid)); a pod waiting in an init container is Pending with
    Initialized=False "containers with incomplete status: [driver-validation]" (kubelet status/generate.go) and its
    containers waiting in PodInitializing.
  - The driver's log: gpu-driver-container ubuntu22.04/nvidia-driver (the banner "Starting installation of NVIDIA
    driver version ... for Linux kernel version ...", "Installing Linux kernel headers...", then apt-get's
    "E: Unable to locate package linux-headers-<kernel>" as users posted it, then the EXIT trap's "Unloading NVIDIA
    driver kernel modules..." and "Unmounting NVIDIA driver rootfs...").
  - The validator's driver-validation: cmd/nvidia-validator ("running command sh with args [-c stat
    /run/nvidia/validations/.driver-ctr-ready]", coreutils' stat error, "command failed, retrying after 5 seconds").
  - Toolkit-validation of the other operands: the shell loop "waiting for nvidia container stack to be setup".
  - Pending pods: PodScheduled False, reason Unschedulable, message as the scheduler writes it (framework/types.go:
    "0/%v nodes are available: ..." with sorted "<count> <reason>", then "preemption: ...").
  - The must-gather folder: gpu-operator hack/must-gather.sh (flat; gpu_operand_pods.yaml from `get pods -oyaml`,
    a `kind: List`; gpu_operand_pod_<pod>.log and .previous.log from `logs --all-containers --prefix --timestamps`;
    gpu_operand_pod_<pod>.descr from `describe pod`, whose Events table holds the kubelet's "Back-off restarting
    failed container <c> in pod <pod>_<ns>(<uid>)";
    gpu_nodes.descr from `describe nodes -l nvidia.com/gpu.present=true`; gpu_nodes.status from `get nodes -o wide`).

`python tests/incidents.py` writes tests/fixtures/incidents/kernel-update/; a test holds it equal to this module.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nodelists as NL  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "tests" / "fixtures" / "incidents" / "kernel-update"
NS = "gpu-operator"
OLD, NEW = "5.15.0-143-generic", "5.15.0-151-generic"
BROKEN = (5, 6, 7)  # the pool's nodes patched to the new kernel
STAMP = "2026-12-06T09:12:41Z"

INTENT = """apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata: {name: ml-train}
spec:
  cluster: {kubernetesVersion: "1.33"}
  operator: {chartVersion: v26.7.0}
  driver: {version: "580.105.08"}
  pools:
    - {name: h100, gpu: H100-80GB, gpusPerNode: 8, nodes: 8, match: {pciDevice: true}}
"""


def plan():
    return NL.plan_of(INTENT, "intent.yaml")


def _uid(*parts: object) -> str:
    h = NL._h(*parts)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def nodes(p=None) -> list[dict]:
    """The cluster's nodes: the pool's eight and three plain ones; the broken three on the new kernel, no GPUs."""
    p = p or plan()
    out = NL.clean_nodes(p)
    pool = [n for n in out if n["metadata"]["labels"].get("gpuconf.dev/pool") == "h100"]
    for n in pool:
        _kernel(n, OLD)
    for i in BROKEN:
        n = pool[i]
        _kernel(n, NEW)
        for part in ("capacity", "allocatable"):
            n["status"][part]["nvidia.com/gpu"] = "0"
    return out


def _kernel(n: dict, kernel: str) -> None:
    n["status"]["nodeInfo"]["kernelVersion"] = kernel
    n["status"]["nodeInfo"]["osImage"] = "Ubuntu 22.04.5 LTS"  # the 5.15 kernels are 22.04's
    labels = n["metadata"]["labels"]
    prefix = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
    labels.update({prefix: "22.04", f"{prefix}.major": "22", f"{prefix}.minor": "04"})
    major, minor, rest = kernel.split(".", 2)
    labels["feature.node.kubernetes.io/kernel-version.full"] = kernel
    labels["feature.node.kubernetes.io/kernel-version.major"] = major
    labels["feature.node.kubernetes.io/kernel-version.minor"] = minor
    labels["feature.node.kubernetes.io/kernel-version.revision"] = rest.split("-")[0]


# --- pods ---------------------------------------------------------------------------------------------------------

VALIDATOR_IMAGE = "nvcr.io/nvidia/gpu-operator:v26.7.0"
OPERANDS = (
    # app label / DaemonSet, init containers, containers, image of the main container
    ("nvidia-driver-daemonset", ("k8s-driver-manager",), ("nvidia-driver-ctr",),
     "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04"),
    ("nvidia-container-toolkit-daemonset", ("driver-validation",), ("nvidia-container-toolkit-ctr",),
     "nvcr.io/nvidia/k8s/container-toolkit:v1.18.0"),
    ("nvidia-operator-validator", ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"),
     ("nvidia-operator-validator",), VALIDATOR_IMAGE),
    ("nvidia-device-plugin-daemonset", ("toolkit-validation", "config-manager-init"),
     ("nvidia-device-plugin", "config-manager"), "nvcr.io/nvidia/k8s-device-plugin:v0.18.0"),
    ("gpu-feature-discovery", ("toolkit-validation", "config-manager-init"), ("gpu-feature-discovery", "config-manager"),
     "nvcr.io/nvidia/k8s-device-plugin:v0.18.0"),
    ("nvidia-mig-manager", ("toolkit-validation",), ("nvidia-mig-manager",), "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.13.0"),
    ("nvidia-dcgm-exporter", ("toolkit-validation",), ("nvidia-dcgm-exporter",),
     "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.1-4.6.0-ubuntu22.04"),
)


def _cid(*parts: object) -> str:
    return "containerd://" + NL._h(*parts) + NL._h(*parts, "2")


def _done(name: str, image: str, node: str, app: str) -> dict:
    return {"containerID": _cid(node, app, name), "image": image, "imageID": image.split(":")[0] + "@sha256:"
            + NL._h(image) + NL._h(image, 1), "lastState": {}, "name": name, "ready": True, "restartCount": 0,
            "started": False, "state": {"terminated": {"containerID": _cid(node, app, name), "exitCode": 0,
                                                       "finishedAt": "2026-12-06T08:01:10Z", "reason": "Completed",
                                                       "startedAt": "2026-12-06T08:01:02Z"}}}


def _running(name: str, image: str, node: str, app: str, ready: bool = True) -> dict:
    return {"containerID": _cid(node, app, name), "image": image, "imageID": image.split(":")[0] + "@sha256:"
            + NL._h(image) + NL._h(image, 1), "lastState": {}, "name": name, "ready": ready, "restartCount": 0,
            "started": True, "state": {"running": {"startedAt": "2026-12-06T08:01:12Z"}}}


def _pending(name: str, image: str) -> dict:
    return {"image": image, "imageID": "", "lastState": {}, "name": name, "ready": False, "restartCount": 0,
            "started": False, "state": {"waiting": {"reason": "PodInitializing"}}}


def pod(app: str, inits: tuple, containers: tuple, image: str, node: str, broken: bool) -> dict:
    name = f"{app}-{NL._h(app, node)[:5]}"
    uid = _uid(app, node)
    init_images = {c: (image if app == "nvidia-driver-daemonset" and c != "k8s-driver-manager" else
                       "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.9.0" if c == "k8s-driver-manager" else
                       image if c == "config-manager-init" else VALIDATOR_IMAGE) for c in inits}
    images = {c: image for c in containers}
    spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
        "containers": [{"image": images[c], "imagePullPolicy": "IfNotPresent", "name": c, "resources": {},
                        "securityContext": {"privileged": True}, "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"} for c in containers],
        "initContainers": [{"image": init_images[c], "imagePullPolicy": "IfNotPresent", "name": c, "resources": {},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
                           for c in inits],
        "nodeName": node, "priorityClassName": "system-node-critical", "restartPolicy": "Always",
        "schedulerName": "default-scheduler", "serviceAccountName": app.removesuffix("-daemonset"),
        "tolerations": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]
        + [{"effect": "NoExecute", "key": f"node.kubernetes.io/{k}", "operator": "Exists"}
           for k in ("not-ready", "unreachable")]
        + [{"effect": "NoSchedule", "key": f"node.kubernetes.io/{k}", "operator": "Exists"}
           for k in ("disk-pressure", "memory-pressure", "pid-pressure", "unschedulable")],
    }
    labels = {"app": app, "app.kubernetes.io/managed-by": "gpu-operator", "controller-revision-hash":
              NL._h(app)[:10], "helm.sh/chart": "gpu-operator-v26.7.0", "pod-template-generation": "1"}
    if app == "nvidia-driver-daemonset":
        labels.update({"app.kubernetes.io/component": "nvidia-driver", "nvidia.com/precompiled": "false"})
    meta = {"creationTimestamp": "2026-12-06T08:00:58Z", "generateName": f"{app}-", "labels": labels, "name": name,
            "namespace": NS, "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True,
                                                  "controller": True, "kind": "DaemonSet", "name": app,
                                                  "uid": _uid(app)}],
            "resourceVersion": str(int(NL._h(app, node)[:6], 16)), "uid": uid}
    conditions = [{"lastProbeTime": None, "lastTransitionTime": "2026-12-06T08:00:58Z", "status": "True",
                   "type": "PodScheduled"}]
    if not broken:
        status = {"phase": "Running",
                  "initContainerStatuses": [_done(c, init_images[c], node, app) for c in inits],
                  "containerStatuses": [_running(c, images[c], node, app) for c in containers]}
        conditions += [{"lastProbeTime": None, "lastTransitionTime": "2026-12-06T08:01:20Z", "status": "True",
                        "type": t} for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")]
    elif app == "nvidia-driver-daemonset":
        c = containers[0]
        status = {"phase": "Running",
                  "initContainerStatuses": [_done(i, init_images[i], node, app) for i in inits],
                  "containerStatuses": [{
                      "containerID": _cid(node, app, c, 14), "image": image, "imageID": image.split(":")[0]
                      + "@sha256:" + NL._h(image) + NL._h(image, 1),
                      "lastState": {"terminated": {"containerID": _cid(node, app, c, 14), "exitCode": 1,
                                                   "finishedAt": "2026-12-06T09:10:31Z", "reason": "Error",
                                                   "startedAt": "2026-12-06T09:09:58Z"}},
                      "name": c, "ready": False, "restartCount": 14, "started": False,
                      "state": {"waiting": {"message": f"back-off 5m0s restarting failed container={c} pod={name}_"
                                                       f"{NS}({uid})", "reason": "CrashLoopBackOff"}}}]}
        conditions += [{"lastProbeTime": None, "lastTransitionTime": "2026-12-06T08:01:20Z", "status": "True",
                        "type": "Initialized"}]
        conditions += [{"lastProbeTime": None, "lastTransitionTime": "2026-12-06T08:01:20Z",
                        "message": f"containers with unready status: [{c}]", "reason": "ContainersNotReady",
                        "status": "False", "type": t} for t in ("Ready", "ContainersReady")]
    else:  # waiting in the first init container that needs the driver (or the toolkit) ready
        statuses = []
        for i, c in enumerate(inits):
            statuses.append(_running(c, init_images[c], node, app, ready=False) if i == 0 else
                            _pending(c, init_images[c]))
        status = {"phase": "Pending", "initContainerStatuses": statuses,
                  "containerStatuses": [_pending(c, images[c]) for c in containers]}
        conditions += [{"lastProbeTime": None, "lastTransitionTime": "2026-12-06T08:00:58Z",
                        "message": f"containers with incomplete status: [{' '.join(inits)}]",
                        "reason": "ContainersNotInitialized", "status": "False", "type": "Initialized"}]
    status.update({"conditions": conditions, "hostIP": "10.0.8.1", "qosClass": "BestEffort",
                   "startTime": "2026-12-06T08:00:58Z"})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def training_pods() -> list[dict]:
    """Seven Pending training pods of team research, four GPUs each (the scheduler's message, framework/types.go)."""
    out = []
    message = ("0/11 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 8 Insufficient "
               "nvidia.com/gpu. preemption: 0/11 nodes are available: 3 Preemption is not helpful for scheduling, "
               "8 No preemption victims found for incoming pod.")
    for i in range(7):
        name = f"llama-finetune-worker-{i}"
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"creationTimestamp": "2026-12-06T09:00:00Z", "labels": {"job-name": "llama-finetune"},
                                 "name": name, "namespace": "research", "uid": _uid(name)},
                    "spec": {"containers": [{"image": "nvcr.io/nvidia/pytorch:25.11-py3", "name": "trainer",
                                             "resources": {"limits": {"nvidia.com/gpu": "4"},
                                                           "requests": {"cpu": "16", "nvidia.com/gpu": "4"}}}],
                             "restartPolicy": "Never", "schedulerName": "default-scheduler"},
                    "status": {"conditions": [{"lastProbeTime": None, "lastTransitionTime": "2026-12-06T09:00:01Z",
                                               "message": message, "reason": "Unschedulable", "status": "False",
                                               "type": "PodScheduled"}],
                               "phase": "Pending", "qosClass": "Burstable"}})
    return out


def pods(p=None, workloads: bool = True) -> list[dict]:
    """The operator's pods on the pool's nodes (and, with `workloads`, the Pending training pods)."""
    p = p or plan()
    pool = [n["metadata"]["name"] for n in nodes(p) if n["metadata"]["labels"].get("gpuconf.dev/pool") == "h100"]
    out = []
    for i, node in enumerate(pool):
        for app, inits, containers, image in OPERANDS:
            out.append(pod(app, inits, containers, image, node, i in BROKEN))
    return out + (training_pods() if workloads else [])


def podlist(items: list[dict]) -> dict:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


# --- logs ---------------------------------------------------------------------------------------------------------


def driver_log(kernel: str) -> list[tuple[str, str]]:
    """(time, line) of one failed run of the Ubuntu driver container on a kernel whose headers are missing."""
    lines = ["DRIVER_ARCH is x86_64", "", "========== NVIDIA Software Installer ==========", "",
             f"Starting installation of NVIDIA driver version 580.105.08 for Linux kernel version {kernel}", "",
             "Stopping NVIDIA persistence daemon...", "Unloading NVIDIA driver kernel modules...",
             "Unmounting NVIDIA driver rootfs...", "Checking NVIDIA driver packages...", "Updating the package cache...",
             "Resolving Linux kernel version...", f"Proceeding with Linux kernel version {kernel}",
             "Installing Linux kernel headers...", f"E: Unable to locate package linux-headers-{kernel}",
             f"E: Couldn't find any package by glob 'linux-headers-{kernel}'",
             f"E: Couldn't find any package by regex 'linux-headers-{kernel}'",
             "Stopping NVIDIA persistence daemon...", "Unloading NVIDIA driver kernel modules...",
             "Unmounting NVIDIA driver rootfs..."]
    return [(f"2026-12-06T09:09:{58 + i // 10:02d}.{(i * 137) % 1000:03d}512000Z", line) for i, line in
            enumerate(lines)]


def validator_log() -> list[str]:
    return ['time="2026-12-06T08:01:05Z" level=info msg="version: v26.7.0"',
            "Attempting to validate a pre-installed driver on the host",
            "No pre-installed driver detected on the host: failed to find an executable 'nvidia-smi' on the host",
            "Validating containerized driver installation",
            "Driver is not pre-installed on the host and is managed by GPU Operator. Checking driver container status.",
            "running command sh with args [-c stat /run/nvidia/validations/.driver-ctr-ready]",
            "stat: cannot statx '/run/nvidia/validations/.driver-ctr-ready': No such file or directory",
            'time="2026-12-06T09:12:40Z" level=warning msg="error running command: exit status 1"',
            "command failed, retrying after 5 seconds"]


def _prefixed(pod_name: str, container: str, lines: list[tuple[str, str]]) -> str:
    return "".join(f"[pod/{pod_name}/{container}] {t} {line}\n" for t, line in lines)


# --- the must-gather folder ---------------------------------------------------------------------------------------


def _describe(n: dict) -> str:
    """`kubectl describe node` of one node (the parts the audit reads, in kubectl's layout)."""
    meta, spec, status = n["metadata"], n.get("spec", {}), n["status"]

    def block(title: str, items: list[str]) -> list[str]:
        if not items:
            return [f"{title + ':':<20}<none>"]
        return [f"{title + ':':<20}{items[0]}"] + [" " * 20 + i for i in items[1:]]

    out = [f"{'Name:':<20}{meta['name']}", f"{'Roles:':<20}<none>"]
    out += block("Labels", [f"{k}={v}" for k, v in sorted(meta["labels"].items())])
    out += block("Annotations", [f"{k}: {v}" for k, v in sorted(meta.get("annotations", {}).items())])
    out.append(f"{'CreationTimestamp:':<20}Tue, 01 Sep 2026 08:00:00 +0000")
    out += block("Taints", [f"{t['key']}={t['value']}:{t['effect']}" if t.get("value") else
                            f"{t['key']}:{t['effect']}" for t in spec.get("taints", [])])
    out.append(f"{'Unschedulable:':<20}{'true' if spec.get('unschedulable') else 'false'}")
    out += ["Conditions:",
            "  Type             Status  LastHeartbeatTime                 LastTransitionTime                Reason"
            "                       Message",
            "  ----             ------  -----------------                 ------------------                ------"
            "                       -------"]
    for c in status.get("conditions", []):
        out.append(f"  {c['type']:<16} {c['status']:<7} Sun, 06 Dec 2026 09:12:00 +0000   Tue, 01 Sep 2026 08:00:00 "
                   f"+0000   {c.get('reason', ''):<28} {c.get('message', '')}")
    out += ["Addresses:", f"  InternalIP:  {status['addresses'][0]['address']}" if status.get("addresses") else
            "  InternalIP:  10.0.0.1", f"  Hostname:    {meta['name']}"]
    for part in ("Capacity", "Allocatable"):
        out.append(f"{part}:")
        values = status.get(part.lower(), {})
        width = max(len(k) for k in values) + 2
        out += [f"  {k + ':':<{width}}{values[k]}" for k in sorted(values)]
    info = status["nodeInfo"]
    out.append("System Info:")
    for title, key in (("Machine ID", "machineID"), ("System UUID", "systemUUID"), ("Boot ID", "bootID"),
                       ("Kernel Version", "kernelVersion"), ("OS Image", "osImage"),
                       ("Operating System", "operatingSystem"), ("Architecture", "architecture"),
                       ("Container Runtime Version", "containerRuntimeVersion"), ("Kubelet Version", "kubeletVersion"),
                       ("Kube-Proxy Version", "kubeProxyVersion")):
        out.append(f"  {title + ':':<28}{info.get(key, '')}")
    out += ["Events:              <none>"]
    return "\n".join(out) + "\n"


def must_gather(folder: Path, p=None) -> None:
    """The folder hack/must-gather.sh writes, with the files the audit reads and the ones beside them."""
    import yaml

    p = p or plan()
    folder.mkdir(parents=True, exist_ok=True)
    gpu_nodes = [n for n in nodes(p) if n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true"]
    items = pods(p, workloads=False)
    (folder / "gpu_operand_pods.yaml").write_text(yaml.safe_dump(podlist(items), sort_keys=True), encoding="utf-8")
    (folder / "gpu_nodes.descr").write_text("\n\n".join(_describe(n) for n in gpu_nodes), encoding="utf-8")
    status = ["NAME          STATUS   ROLES    AGE   VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE             "
              "KERNEL-VERSION       CONTAINER-RUNTIME"]
    for n in gpu_nodes:
        info = n["status"]["nodeInfo"]
        status.append(f"{n['metadata']['name']:<13} Ready    <none>   96d   {info['kubeletVersion']}   10.0.0.1      "
                      f"<none>        {info['osImage']:<20} {info['kernelVersion']:<20} "
                      f"{info['containerRuntimeVersion']}")
    (folder / "gpu_nodes.status").write_text("\n".join(status) + "\n", encoding="utf-8")
    for item in items:
        name = item["metadata"]["name"]
        node = item["spec"]["nodeName"]
        app = item["metadata"]["labels"]["app"]
        broken = node in {n["metadata"]["name"] for n in gpu_nodes if n["status"]["nodeInfo"]["kernelVersion"] == NEW}
        if app == "nvidia-driver-daemonset" and broken:
            manager = [("2026-12-06T08:01:03.101000000Z", 'time="2026-12-06T08:01:03Z" level=info msg="Auto eviction '
                        'of GPU pods on node is disabled by the upgrade policy"')]
            current = _prefixed(name, "k8s-driver-manager", manager)
            previous = _prefixed(name, "nvidia-driver-ctr", driver_log(NEW))
        elif app in ("nvidia-operator-validator", "nvidia-container-toolkit-daemonset") and broken:
            current = _prefixed(name, "driver-validation", [("2026-12-06T09:12:40.000000000Z", line)
                                                            for line in validator_log()])
            previous = ""
        elif broken:
            step = "toolkit-validation"
            current = _prefixed(name, step, [("2026-12-06T09:12:40.000000000Z",
                                              "waiting for nvidia container stack to be setup")] * 3)
            previous = ""
        else:
            current = _prefixed(name, item["spec"]["containers"][0]["name"],
                                [("2026-12-06T08:01:20.000000000Z", "Done, now waiting for signal" if
                                  app == "nvidia-driver-daemonset" else "started")])
            previous = ""
        if app == "nvidia-driver-daemonset" and broken:  # `kubectl describe pod`: its Events table (kubelet's BackOff)
            uid = item["metadata"]["uid"]
            (folder / f"gpu_operand_pod_{name}.descr").write_text(
                f"Name:             {name}\nNamespace:        {NS}\nNode:             {node}/10.0.8.1\n"
                "Status:           Running\nEvents:\n"
                "  Type     Reason   Age                  From     Message\n"
                "  ----     ------   ----                 ----     -------\n"
                "  Normal   Pulled   13m (x15 over 71m)   kubelet  Container image \"nvcr.io/nvidia/driver:580.105.08-"
                "ubuntu22.04\" already present on machine\n"
                f"  Warning  BackOff  2m41s (x302 over 71m)  kubelet  Back-off restarting failed container "
                f"nvidia-driver-ctr in pod {name}_{NS}({uid})\n", encoding="utf-8")
        (folder / f"gpu_operand_pod_{name}.log").write_text(current, encoding="utf-8")
        (folder / f"gpu_operand_pod_{name}.previous.log").write_text(previous, encoding="utf-8")
    (folder / "must-gather.log").write_text("Using ARTIFACT_DIR=/tmp/nvidia-gpu-operator_20261206_0913\n",
                                            encoding="utf-8")


# --- other failures, on the same pods (each as the kubelet reports it) ---------------------------------------------


def crash(item: dict, container: str, exit_code: int = 1, restarts: int = 9) -> dict:
    """The container crash-loops (kubelet: waiting CrashLoopBackOff, lastState.terminated with the exit code)."""
    meta, status = item["metadata"], item["status"]
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(key, []):
            if c["name"] == container:
                c.update(ready=False, started=False, restartCount=restarts, lastState={"terminated": {
                    "containerID": c.get("containerID", _cid(container)), "exitCode": exit_code,
                    "finishedAt": "2026-12-06T09:10:31Z", "reason": "Error", "startedAt": "2026-12-06T09:10:01Z"}},
                    state={"waiting": {"reason": "CrashLoopBackOff", "message": f"back-off 5m0s restarting failed "
                                       f"container={container} pod={meta['name']}_{NS}({meta['uid']})"}})
                if key == "initContainerStatuses":
                    status["phase"] = "Pending"
                    for other in status.get("containerStatuses", []):
                        other.update(ready=False, started=False, state={"waiting": {"reason": "PodInitializing"}})
                return item
    raise KeyError(container)


def pull_failure(item: dict, container: str, image: str, reason: str = "ImagePullBackOff") -> dict:
    """The container's image cannot be pulled (kubelet: waiting ErrImagePull / ImagePullBackOff)."""
    for c in item["spec"]["containers"] + item["spec"].get("initContainers", []):
        if c["name"] == container:
            c["image"] = image
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in item["status"].get(key, []):
            if c["name"] == container:
                c.update(image=image, imageID="", ready=False, started=False, restartCount=0, lastState={},
                         state={"waiting": {"reason": reason, "message": f'Back-off pulling image "{image}"'}})
                return item
    raise KeyError(container)


def waiting_in(item: dict, step: str) -> dict:
    """The pod waits in one of its init containers (running, not done); the ones before it completed."""
    status = item["status"]
    status["phase"] = "Pending"
    seen = False
    for c in status["initContainerStatuses"]:
        if c["name"] == step:
            c.update(ready=False, started=True, state={"running": {"startedAt": "2026-12-06T08:01:12Z"}})
            seen = True
        elif seen:
            c.update(ready=False, started=False, state={"waiting": {"reason": "PodInitializing"}}, lastState={})
    for c in status["containerStatuses"]:
        c.update(ready=False, started=False, state={"waiting": {"reason": "PodInitializing"}}, lastState={})
    assert seen, step
    return item


def healthy_pods(p, node_names: list[str], operands=OPERANDS) -> list[dict]:
    """Every operand's pod, Running and ready, on each node."""
    return [pod(app, inits, containers, image, node, False) for node in node_names
            for app, inits, containers, image in operands]


def gather(folder: Path, node_items: list[dict], items: list[dict], logs: dict) -> Path:
    """A must-gather folder of these nodes and pods; logs: pod name -> {(container, previous): [lines]}."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    gpu = [n for n in node_items if n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true"]
    (folder / "gpu_operand_pods.yaml").write_text(yaml.safe_dump(podlist(items), sort_keys=True), encoding="utf-8")
    (folder / "gpu_nodes.descr").write_text("\n\n".join(_describe(n) for n in gpu), encoding="utf-8")
    for item in items:
        name = item["metadata"]["name"]
        for previous in (False, True):
            lines = [(c, line) for (c, prev), got in logs.get(name, {}).items() if prev == previous for line in got]
            text = "".join(f"[pod/{name}/{c}] 2026-12-06T09:10:30.000000000Z {line}\n" for c, line in lines)
            (folder / f"gpu_operand_pod_{name}{'.previous' if previous else ''}.log").write_text(text,
                                                                                                 encoding="utf-8")
    return folder


def write(folder: Path = FOLDER) -> None:
    p = plan()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "intent.yaml").write_text(INTENT, encoding="utf-8")
    (folder / "nodes.json").write_text(NL.dumps(NL.nodelist(nodes(p))), encoding="utf-8")
    (folder / "pods.json").write_text(NL.dumps(podlist(pods(p))), encoding="utf-8")
    must_gather(folder / "must-gather", p)


if __name__ == "__main__":
    write()
    print(f"wrote {FOLDER.relative_to(ROOT)}")

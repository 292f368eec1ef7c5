"""Why a node lost its GPUs: from the symptom the audit sees (GA107, GA121, GA130) to the cause, read off the
operator's pods, their logs and events, and the node itself.

The operands depend on each other in one chain (operands.CHAIN): the driver, then the container toolkit, the
validator's steps, the device plugin, MIG manager and GFD. A pod that fails explains the waits of every pod after it,
so each node gets its causes ranked by how early in the chain they sit and by how strongly the evidence says so (a
log line beats a pod state, which beats what the node alone tells). Each cause is one finding code with the evidence
read, the commands that confirm it and a hint whose first words are the fix (CAUSES; the runbook of REPORT.md is
built from the same table).

The facts behind the patterns (the messages each component prints) are cited per pattern; tests/fixtures/operands
holds pods and logs shaped as the real tools write them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import operands as O
from ..plan import DEVICE_PLUGIN_CONFIGMAP

# --- the causes --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CauseKind:
    """One finding code of the diagnosis: its title, how to confirm it and how to fix it (for the runbook too)."""

    code: str
    title: str
    confirm: tuple[str, ...]  # commands, with {ns}, {node}, {pod}, {container}, {ds} filled in
    fix: str


CAUSES = {c.code: c for c in (
    CauseKind("GA140", "the driver cannot be built for the node's kernel: no kernel headers, or no precompiled "
                       "driver image, for that kernel",
              ("kubectl get pods -n {ns} -l app.kubernetes.io/component=nvidia-driver --field-selector spec.nodeName={node}",
               "kubectl logs -n {ns} {pod} -c {container} --previous --tail 50"),
              "make the node's kernel one the driver can be built for: install its headers where the driver "
              "container's package manager finds them (a package mirror that carries them), or publish a "
              "precompiled driver image for it; or roll the node back to the kernel the pool's healthy nodes run, "
              "and hold the kernel package so that unattended upgrades do not move it again"),
    CauseKind("GA141", "the driver's kernel module failed to build or load on the node",
              ("kubectl logs -n {ns} {pod} -c {container} --previous --tail 80",
               "kubectl debug node/{node} -it --image=busybox -- chroot /host sh -c 'dmesg | tail -50; "
               "mokutil --sb-state; lsmod | grep -e nvidia -e nouveau'"),
              "fix what the log names: sign the module or turn secure boot off for an unsigned build, blacklist "
              "nouveau and reboot, stop the processes holding the old module, or use a driver branch that builds on "
              "this kernel"),
    CauseKind("GA142", "the node runs a kernel that no healthy node of its pool runs, and lost its GPUs",
              ("kubectl get nodes -L feature.node.kubernetes.io/kernel-version.full -o wide",
               "kubectl get pods -n {ns} -l app.kubernetes.io/component=nvidia-driver --field-selector spec.nodeName={node}"),
              "read the driver pod's log on the node (the kernel update is the likely cause: the driver container "
              "must be built for the new kernel); roll the kernel back or provide headers or a precompiled image "
              "for it, and hold the kernel package on the pool's nodes"),
    CauseKind("GA143", "the driver pod cannot start on the node (image pull, the node's OS, or a crash whose log "
                       "says no more)",
              ("kubectl describe pod -n {ns} {pod}", "kubectl logs -n {ns} {pod} -c {container} --previous --tail 80"),
              "make the image pullable from the node (the registry mirror holds the tag, the pull secret is in "
              "the namespace), or run an OS the driver images are published for; for a crash, read the log the "
              "confirm command prints"),
    CauseKind("GA144", "the container toolkit did not set up the node's container runtime",
              ("kubectl logs -n {ns} {pod} -c {container} --tail 80", "kubectl get runtimeclass nvidia"),
              "fix the toolkit's runtime settings (toolkit.env CONTAINERD_CONFIG and CONTAINERD_SOCKET, or the "
              "RuntimeClass) so that it can write the runtime's config and restart it; then delete the toolkit pod"),
    CauseKind("GA145", "the device plugin does not advertise the node's GPUs",
              ("kubectl logs -n {ns} {pod} --all-containers --tail 40",
               "kubectl get node {node} -L nvidia.com/device-plugin.config",
               "kubectl describe configmap -n {ns} {configmap}"),
              "give the plugin what it waits for: the config key its node label names in the device-plugin "
              "ConfigMap, a running MPS control daemon, or a pod on the node at all; then delete the plugin pod"),
    CauseKind("GA146", "MIG manager failed, or is stuck, applying the node's MIG layout",
              ("kubectl logs -n {ns} {pod} -c {container} --tail 80",
               "kubectl get node {node} -L nvidia.com/mig.config,nvidia.com/mig.config.state"),
              "read the MIG manager's error, drain the GPU workloads that hold the GPUs, and restart the MIG "
              "manager pod on the node; a layout the GPU cannot hold needs another config"),
    CauseKind("GA147", "the operator validator is stuck in one of its steps on the node",
              ("kubectl logs -n {ns} {pod} -c {container} --tail 50",),
              "fix the component the step waits for (its name says which: driver, toolkit, cuda, plugin), then "
              "delete the validator pod to run the steps again"),
    CauseKind("GA148", "the driver upgrade is stuck on the node",
              ("kubectl get node {node} -L nvidia.com/gpu-driver-upgrade-state",
               "kubectl get pods -n {ns} -l app.kubernetes.io/component=nvidia-driver --field-selector spec.nodeName={node}"),
              "unblock the step the node waits in (the blocking pod is named in the evidence); once the driver pod "
              "on the node is Ready the upgrade controller moves on"),
    CauseKind("GA149", "operand pods the node needs were never scheduled there",
              ("kubectl get pods -n {ns} -o wide --field-selector spec.nodeName={node}",
               "kubectl describe node {node}"),
              "let the operands onto the node: declare the node's taint in the pool (the render tolerates declared "
              "taints) or remove it, and check the operand DaemonSets' node selectors (nvidia.com/gpu.deploy.*)"),
)}

#: Pool-level: pending work tied to the missing capacity.
WAITING = "GA150"
WAITING_TITLE = "pending pods that request a pool's GPU resource, tied to the capacity the pools are missing"

#: Every code of the diagnosis, for `gpuconf rules` and the docs.
TITLES = {code: kind.title for code, kind in CAUSES.items()} | {WAITING: WAITING_TITLE}


# --- what the logs say -------------------------------------------------------------------------------------------

#: Driver log lines, in the order they are tried: (code, reason key, pattern). The first pattern that matches a line
#: of the failing container's log (previous run first, then current) names the cause; its line is the evidence.
#: Sources: NVIDIA/gpu-driver-container ubuntu22.04/nvidia-driver and rhel9/nvidia-driver (_resolve_kernel_version
#: prints "Could not resolve Linux kernel version" when the running kernel's headers are in no repository; apt-get
#: install prints "E: Unable to locate package linux-headers-<kernel>"; dnf "No match for argument"; the precompiled
#: image's apt packages linux-objects-nvidia-*, gpu-operator#557; _load_driver's modprobe "could not insert 'nvidia':
#: Key was rejected by service" under secure boot; _unload_driver "Could not unload NVIDIA driver kernel modules,
#: driver is in use"; nvidia-installer "ERROR: Unable to load the kernel module 'nvidia.ko'", gpu-operator#266) and
#: NVIDIA/k8s-driver-manager (init container k8s-driver-manager: "failed to unload nouveau driver", "Failed to drain
#: node of GPU pods", "cannot proceed until all GPU pods are drained from the node").
DRIVER_PATTERNS: tuple[tuple[str, str, re.Pattern], ...] = tuple((code, key, re.compile(p)) for code, key, p in (
    ("GA140", "headers", r"(Unable to locate package linux-(?:headers|image|modules|objects|signatures)[-\w.+]*)"),
    ("GA140", "headers", r"(Couldn't find any package by (?:glob|regex) 'linux-[^']*')"),
    ("GA140", "headers", r"((?:No match for argument|Unable to find a match): kernel-(?:headers|devel)[-\w.+]*)"),
    ("GA140", "headers", r"(Could not resolve Linux kernel version)"),
    ("GA140", "headers", r"(Could not locate Linux kernel version string)"),
    ("GA140", "headers", r"(Unable to resolve RHEL version from kernel version)"),
    ("GA141", "secure-boot", r"(could not insert '?nvidia[\w-]*'?: (?:Key was rejected by service|Required key not "
                             r"available))"),
    ("GA141", "secure-boot", r"(Key was rejected by service|Required key not available)"),
    ("GA141", "nouveau", r"((?i:failed to unload nouveau driver)[^\n]*)"),
    ("GA141", "in-use", r"(Could not unload NVIDIA driver kernel modules, driver is in use)"),
    ("GA141", "load", r"(could not insert '?nvidia[\w-]*'?[^\n]*)"),
    ("GA141", "load", r"(ERROR: Unable to load the kernel module[^\n]*)"),
    ("GA141", "load", r"(Kernel module load error[^\n]*)"),
    ("GA141", "build", r"(ERROR: Unable to build the (?:NVIDIA )?kernel module[^\n]*)"),
    ("GA141", "build", r"(ERROR: Failed to update the NVIDIA driver)"),
    ("GA141", "build", r"(make\[\d+\]: \*\*\* [^\n]*Error \d+)"),
    ("GA143", "drain", r"((?i:cannot proceed until all GPU pods are drained from the node)[^\n]*)"),
    ("GA143", "drain", r"(Failed to drain node of GPU pods)"),
    ("GA143", "network", r"((?:ERROR|FATAL): [Ff]ailed to (?:update (?:the )?(?:package|dnf metadata) cache|reach RHEL "
                         r"package repositories)[^\n]*)"),
))

#: Device plugin, GFD and MPS (NVIDIA/k8s-device-plugin: cmd/config-manager "specified config <name> does not exist",
#: "no configuration files available"; internal/plugin "Failed to initialize NVML: <ret>."; the MPS health check
#: "error waiting for MPS daemon"; cmd/mps-control-daemon "Failed to start MPS daemon").
PLUGIN_PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple((key, re.compile(p)) for key, p in (
    ("config", r"(specified config [^\n]*does not exist)"),
    ("config", r"(no configuration files available)"),
    ("config", r"(no config was set, no default was provided, and all fallbacks failed)"),
    ("mps", r"(error waiting for MPS daemon[^\n]*)"),
    ("mps", r"(Failed to start MPS daemon[^\n]*)"),
    ("nvml", r"(Failed to initialize NVML[^\n]*)"),
    ("nvml", r"(nvml init failed[^\n]*)"),
    ("nvml", r"(could not load NVML library[^\n]*)"),
))

#: MIG manager (NVIDIA/mig-parted cmd/nvidia-mig-manager and pkg/mig/reconfigure, bash reconfigure-mig.sh before
#: v0.13.0). "failed to wait for pods to be deleted" is the known wedge (mig-parted#485): the state stays pending,
#: the clients stay paused, and the manager waits for a label change that never comes.
MIG_WEDGE = re.compile(r"(failed to wait for pods to be deleted[^\n]*)")
MIG_PATTERNS: tuple[re.Pattern, ...] = tuple(re.compile(p) for p in (
    r"(Error applying MIG configuration[^\n]*)",
    r"(Error: failed to [^\n]*)",
    r"(MIG mode change did not take effect after rebooting)",
    r"(Unable to validate the selected MIG configuration)",
    r"(Unable to tear down GPU client pods[^\n]*)",
    r"(Changing the 'nvidia.com/mig.config.state' node label to 'failed')",
))

#: The toolkit (NVIDIA/nvidia-container-toolkit cmd/nvidia-ctk-installer: "unable to restart containerd: ...",
#: "unable to configure containerd", the cri-o and docker forms, "error running nvidia-ctk-installer").
TOOLKIT_PATTERNS: tuple[re.Pattern, ...] = tuple(re.compile(p) for p in (
    r"(unable to (?:restart|configure|load config for|setup runtime)[^\n]*)",
    r"(Max retries reached[^\n]*)",
    r"(error restarting [^\n]* using systemd[^\n]*)",
    r"(error running nvidia-ctk-installer[^\n]*)",
))

#: The validator's steps waiting on what comes before them (gpu-operator cmd/nvidia-validator: driver-validation
#: stats /run/nvidia/validations/.driver-ctr-ready; "toolkit is not ready"; the cuda workload's "gave up waiting";
#: plugin-validation "GPU resources are not discovered by the node").
VALIDATOR_PATTERNS: tuple[re.Pattern, ...] = tuple(re.compile(p) for p in (
    r"(GPU resources are not (?:yet )?discovered by the node[^\n]*)",
    r"(gave up waiting for pod[^\n]*)",
    r"(toolkit is not ready)",
    r"(driver is not ready[^\n]*)",
    r"(failed to validate the driver[^\n]*)",
    r"(cannot stat[^\n]*\.driver-ctr-ready[^\n]*)",
))

#: A precompiled driver image's tag: <branch>-<kernel>-<os> (gpu-operator controllers/object_controls.go
#: resolveDriverTag; gpu-operator#682, #910: the tag exists only for kernels NVIDIA has built).
PRECOMPILED_TAG = re.compile(r":(\d{3})(?:\.\d+)*-(\d+\.\d+\.\d+-[\w.-]+?)-(ubuntu\d{2}\.\d{2}|rhel\d+(?:\.\d+)?|rhcos[\d.]+)\Z")


def first_match(lines: list[str], patterns) -> tuple[Any, str] | None:
    """(the pattern's tag, the line's message) of the first pattern any line matches, trying patterns in order."""
    for tag, pattern in patterns:
        for line in lines:
            if pattern.search(line) is not None:
                return tag, excerpt(line)
    return None


#: logrus's text format (time=... level=... msg="...") and klog's header (E1206 09:10:30.000000 1 main.go:209]).
_LOGFMT = re.compile(r'(?:^|\s)msg="((?:[^"\\]|\\.)*)"')
_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")


def excerpt(line: str) -> str:
    """A log line's message without its logger's wrapping (logrus's msg="...", klog's header)."""
    m = _LOGFMT.search(line)
    if m is not None:
        return m.group(1).replace('\\"', '"').replace("\\n", "").strip()
    return _KLOG.sub("", line).strip()


# --- one node ----------------------------------------------------------------------------------------------------


@dataclass
class Cause:
    """One cause found on a node: its code, a message that is the same for every node it hits the same way (so the
    summary can group them), the evidence, the hint and the rank (lower is more probable)."""

    code: str
    message: str
    evidence: dict
    hint: str
    rank: int


def _state(c: O.Container) -> str:
    """A container's state in a few words: `CrashLoopBackOff (exit 1, 14 restarts)`."""
    extra = []
    code = c.exit_code if c.exit_code is not None else c.last_exit_code
    if code not in (None, 0):
        extra.append(f"exit {code}")
    if c.restarts:
        extra.append(f"{c.restarts} restart{'s' if c.restarts != 1 else ''}")
    return (c.reason or c.state) + (f" ({', '.join(extra)})" if extra else "")


def _pull_failed(c: O.Container) -> bool:
    return c.state == "waiting" and c.reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName")


def _fix(code: str) -> str:
    fix = CAUSES[code].fix
    return fix[:1].upper() + fix[1:]


@dataclass(slots=True)
class Context:
    """What the diagnosis of one node reads besides its pods."""

    node: str
    namespace: str
    kernel: str
    os_image: str
    pool: str
    managed_driver: bool
    mig: bool
    upgrade_state: str | None
    mig_state: str | None
    expected: tuple[str, ...]  # operands that should run on the node (their deploy labels are true)
    undeclared_taints: tuple[str, ...]  # NoSchedule/NoExecute taints the operands do not tolerate
    node_events: list[str]
    operands: Any  # the Operands, which read the logs (on demand when live)
    any_operands: bool = True  # the pods read hold operand pods at all (else a missing one proves nothing)
    #: The DRA driver's kubelet plugin publishes the node's GPUs (allocation: dra); on the device-plugin stack it
    #: runs ComputeDomains only, and the fabric audit judges it (cluster/fabric.py GA165).
    dra: bool = True

    def logs(self, pod: O.OperandPod, container: O.Container) -> list[str]:
        return self.operands.logs(pod, container)


class _Found:
    """The causes of one node as they are found, and the operands that failed (for the waits they explain)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.causes: list[Cause] = []
        self.failed: dict[str, str] = {}

    def add(self, code: str, message: str, evidence: dict, operand: str, pod: O.OperandPod | None, container: str,
            rank: int, detail: str = "") -> None:
        ctx = self.ctx
        fill = {"ns": ctx.namespace, "node": ctx.node, "pod": pod.name if pod else "POD", "container": container,
                "ds": O.DAEMONSETS.get(operand, operand), "configmap": DEVICE_PLUGIN_CONFIGMAP}
        evidence = {**evidence, "confirm": [c.format(**fill) for c in CAUSES[code].confirm]}
        if pod is not None and "pod" in evidence:
            evidence["pod"] = pod.as_dict()  # as it is once its logs are read (whose lines they are)
        self.causes.append(Cause(code, message, evidence, _fix(code) + (f" ({detail})" if detail else ""), rank))
        self.failed.setdefault(operand, code)


def diagnose(ctx: Context, pods: Mapping[str, Any]) -> list[Cause]:
    """The causes of a node's trouble, most probable first, from the operand pods on it (operands.Operands.on)."""
    found = _Found(ctx)
    failed = found.failed
    driver = pods.get(O.DRIVER)
    if ctx.managed_driver and isinstance(driver, O.OperandPod):
        _driver(ctx, driver, found)
    toolkit = pods.get(O.TOOLKIT)
    if isinstance(toolkit, O.OperandPod) and O.DRIVER not in failed:
        _component(ctx, toolkit, "GA144", TOOLKIT_PATTERNS, 30, found)
    validator = pods.get(O.VALIDATOR)
    if isinstance(validator, O.OperandPod):
        _validator(ctx, validator, found)
    for operand in (O.MPS, O.DEVICE_PLUGIN, O.DRA_PLUGIN) if ctx.dra else (O.MPS, O.DEVICE_PLUGIN):
        pod = pods.get(operand)
        if isinstance(pod, O.OperandPod) and not {O.DRIVER, O.TOOLKIT} & failed.keys() \
                and not _explained(pod.waiting_in or "", failed):
            _plugin(ctx, pod, found)
    mig = pods.get(O.MIG_MANAGER)
    if ctx.mig and isinstance(mig, O.OperandPod) and not {O.DRIVER, O.TOOLKIT} & failed.keys():
        _mig(ctx, mig, found)
    causes = found.causes
    if ctx.upgrade_state in UPGRADE_STEPS and failed:
        blocking = next(iter(failed))
        causes.append(Cause(
            "GA148", f"the driver upgrade is stuck in {ctx.upgrade_state}: {blocking} fails on the node "
            f"({failed[blocking]})",
            {"nvidia.com/gpu-driver-upgrade-state": ctx.upgrade_state, "blocking": blocking,
             "confirm": [c.format(ns=ctx.namespace, node=ctx.node, ds=O.DAEMONSETS[O.DRIVER], pod="POD",
                                  container="", configmap="") for c in CAUSES["GA148"].confirm]}, _fix("GA148"), 60))
    elif ctx.upgrade_state in UPGRADE_STEPS:
        upgrade = [e for e in ctx.node_events if e.startswith(UPGRADE_EVENT) and "Failed" in e]
        if upgrade:
            causes.append(Cause(
                "GA148", f"the driver upgrade is stuck in {ctx.upgrade_state}: {upgrade[-1]}",
                {"nvidia.com/gpu-driver-upgrade-state": ctx.upgrade_state, "events": upgrade[-3:]},
                _fix("GA148"), 25))
    missing = [op for op in ctx.expected if op not in pods] if ctx.any_operands else []
    if missing:
        evidence: dict[str, Any] = {"missing": missing}
        taints = ctx.undeclared_taints
        if taints:
            evidence["untolerated taints"] = list(taints)
        if ctx.node_events:
            evidence["events"] = ctx.node_events[-3:]
        why = (f": the node's taint{'s' if len(taints) > 1 else ''} {', '.join(taints)} "
               f"{'are' if len(taints) > 1 else 'is'} not tolerated") if taints else ""
        rank = 5 if O.DRIVER in missing or O.DEVICE_PLUGIN in missing or O.TOOLKIT in missing else 70
        causes.append(Cause("GA149", f"no {', '.join(missing)} pod on the node{why}", evidence, _fix("GA149"),
                            rank))
    # What each early cause holds up: the pods waiting behind it.
    waiting = sorted({p.operand for p in pods.values() if isinstance(p, O.OperandPod) and p.operand not in failed
                      and p.waiting_in is not None}, key=O.CHAIN.index)
    for cause in causes:
        if cause.rank < 30 and waiting:
            cause.evidence["waiting behind it"] = waiting
    causes.sort(key=lambda c: c.rank)
    return causes


#: The driver upgrade's steps between upgrade-required and upgrade-done (k8s-operator-libs pkg/upgrade/consts.go).
UPGRADE_STEPS = frozenset(("cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required",
                           "node-maintenance-required", "post-maintenance-required", "pod-restart-required",
                           "validation-required", "uncordon-required"))
#: The node events the upgrade controller writes (reason GPUDriverUpgrade: "Failed to drain the node, ...").
UPGRADE_EVENT = "GPUDriverUpgrade:"


def _explained(step: str, failed: Mapping[str, str]) -> bool:
    """Whether an init container's wait (driver-validation, toolkit-validation, ...) is explained by a failure
    found earlier in the chain."""
    if step.startswith("driver") or step == "k8s-driver-manager":
        return O.DRIVER in failed
    if step.startswith(("toolkit", "config-manager", "mps-control-daemon")):
        return bool({O.DRIVER, O.TOOLKIT} & failed.keys())
    if step.startswith(("cuda", "plugin")):
        return bool({O.DRIVER, O.TOOLKIT, O.DEVICE_PLUGIN} & failed.keys())
    return False


def _driver(ctx: Context, pod: O.OperandPod, found: _Found) -> None:
    """GA140, GA141 or GA143 for a failing driver pod; nothing for a driver pod that only starts up."""
    failing = pod.failing()
    if not failing:
        return
    c = next((x for x in failing if not x.init), failing[0])  # the driver container's failure before the manager's
    evidence: dict[str, Any] = {"pod": pod.as_dict(), "kernelVersion": ctx.kernel, "osImage": ctx.os_image}
    if _pull_failed(c):
        image = c.image or pod.images.get(c.name, "")
        evidence["image"] = image
        tag = PRECOMPILED_TAG.search(image)
        if tag is not None:
            evidence["kind"] = "precompiled"
            found.add("GA140", f"no precompiled driver image for kernel {tag.group(2)}: {image} cannot be pulled "
                      f"({c.reason})", evidence, O.DRIVER, pod, c.name, 10)
        else:
            evidence["kind"] = "pull"
            if c.message:
                evidence["message"] = c.message
            found.add("GA143", f"the driver image {image} cannot be pulled ({c.reason})", evidence, O.DRIVER, pod,
                      c.name, 15)
        return
    lines = ctx.logs(pod, c)
    match = first_match(lines, [((code, key), p) for code, key, p in DRIVER_PATTERNS])
    if match is not None:
        (code, key), line = match
        evidence.update(log=line, kind=key)
        if code == "GA140":
            message = f"the driver cannot be built for kernel {ctx.kernel or '(unknown)'}: {line}"
            found.add(code, message, evidence, O.DRIVER, pod, c.name, 10)
        elif code == "GA141":
            found.add(code, f"the driver's kernel module fails on kernel {ctx.kernel or '(unknown)'} ({key}): {line}",
                      evidence, O.DRIVER, pod, c.name, 11)
        else:
            what = "the driver manager cannot drain the node's GPU pods" if key == "drain" else \
                "the driver container cannot reach its package repositories"
            found.add(code, f"{what}: {line}", evidence, O.DRIVER, pod, c.name, 15)
        return
    read = any(key[0] == c.name for key in pod.logs)
    if read:
        evidence["log"] = [excerpt(line) for line in lines[-3:]]
    evidence["kind"] = "crash"
    read = read or ctx.operands.has_logs
    found.add("GA143", f"the driver container {c.name} fails: {_state(c)}" + ("" if read else "; its log was not read"),
              evidence, O.DRIVER, pod, c.name, 20,
              "" if read else "the pod list holds no log: give --must-gather DIR, or audit with --kubeconfig")


def _component(ctx: Context, pod: O.OperandPod, code: str, patterns, rank: int, found: _Found) -> None:
    """A failing operand pod (the toolkit's): its log's error, else its state."""
    failing = pod.failing()
    if not failing:
        return
    c = failing[0]
    match = first_match(ctx.logs(pod, c), [(None, p) for p in patterns])
    evidence: dict[str, Any] = {"pod": pod.as_dict()}
    if match:
        evidence["log"] = match[1]
    found.add(code, f"{pod.operand} fails on the node: {match[1] if match else _state(c)}", evidence, pod.operand,
              pod, c.name, rank)


def _validator(ctx: Context, pod: O.OperandPod, found: _Found) -> None:
    """GA147: the validator stuck in a step that no earlier failure explains."""
    step = pod.waiting_in
    if step is None or _explained(step, found.failed):
        return
    c = next(x for x in pod.containers if x.name == step)
    match = first_match(ctx.logs(pod, c), [(None, p) for p in VALIDATOR_PATTERNS])
    evidence: dict[str, Any] = {"pod": pod.as_dict()}
    if match:
        evidence["log"] = match[1]
    what = f": {match[1]}" if match else f" ({_state(c)})" if c.failing else ""
    found.add("GA147", f"the operator validator waits in {step}{what}", evidence, O.VALIDATOR, pod, step, 40)


def _plugin(ctx: Context, pod: O.OperandPod, found: _Found) -> None:
    """GA145: the device plugin (or the MPS daemon) fails: its config, the MPS daemon, NVML."""
    failing = pod.failing()
    step = pod.waiting_in
    c = failing[0] if failing else next((x for x in pod.containers if x.name == step), None) if step else None
    if c is None:
        return
    lines = ctx.logs(pod, c)
    for other in pod.containers:
        if other is not c and (other.failing or other.name == "config-manager"):
            lines += ctx.logs(pod, other)
    match = first_match(lines, PLUGIN_PATTERNS)
    evidence: dict[str, Any] = {"pod": pod.as_dict()}
    if match is not None:
        key, line = match
        evidence.update(log=line, kind=key)
        what = {"config": "its config", "mps": "the MPS control daemon", "nvml": "NVML"}[key]
        found.add("GA145", f"{pod.operand} fails on {what}: {line}", evidence, pod.operand, pod, c.name, 35)
        return
    found.add("GA145", f"{pod.operand} fails on the node: {_state(c) if failing else f'waits in {step}'}", evidence,
              pod.operand, pod, c.name, 36)


def _mig(ctx: Context, pod: O.OperandPod, found: _Found) -> None:
    """GA146: MIG manager failed (its pod, or its log's error), or wedged in pending (mig-parted#485)."""
    c = next(iter(pod.failing()), None) or next((x for x in pod.containers if not x.init), None)
    if c is None:
        return
    if not c.failing and ctx.mig_state not in ("pending", "failed"):
        return  # a healthy manager with nothing to do: its log is not read
    lines = ctx.logs(pod, c)
    evidence: dict[str, Any] = {"pod": pod.as_dict(), "nvidia.com/mig.config.state": ctx.mig_state}
    wedge = first_match(lines, [(None, MIG_WEDGE)]) if ctx.mig_state == "pending" else None
    if wedge is not None:
        evidence["log"] = wedge[1]
        found.add("GA146", f"MIG manager is wedged in pending (mig-parted#485): {wedge[1]}",
                  evidence, O.MIG_MANAGER, pod, c.name, 45,
                  "set the paused nvidia.com/gpu.deploy.* labels back to true and change nvidia.com/mig.config "
                  "to start it again: the manager waits for a label change that never comes")
        return
    match = first_match(lines, [(None, p) for p in MIG_PATTERNS])
    if match is None and not c.failing:
        return
    if match:
        evidence["log"] = match[1]
    found.add("GA146", f"MIG manager fails on the node: {match[1] if match else _state(c)}", evidence,
              O.MIG_MANAGER, pod, c.name, 50)

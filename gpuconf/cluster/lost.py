"""Where the audit meets the diagnosis: the causes a node's operand pods show (diagnose.py), the kernel that the
nodes which lost their GPUs share and no healthy node of their pool runs (GA142, from the nodes alone), and the
pending work tied to the missing capacity (GA150).

The auditor (audit.py) calls these at three points: per node while it checks the node, per pool when every node is
in, and once at the end.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from . import diagnose as D
from . import nodefacts as N
from . import operands as O
from .auditresult import ERROR, NONE, WARNING, Drift

#: The findings that say a node lost GPUs (on a Ready node: GA107 and GA130 short, GA121 below the pool's count).
LOSING = ("GA107", "GA121", "GA130")
#: NFD's kernel label (feature.node.kubernetes.io/kernel-version.full), read where status.nodeInfo has no kernel.
NFD_KERNEL = "feature.node.kubernetes.io/kernel-version.full"

#: Operand -> its deploy label's name (nvidia.com/gpu.deploy.<name>): the pods a node must run when that label is
#: true. Monitoring operands are left out: their absence costs no GPU.
_NEEDED = ((O.DRIVER, "driver"), (O.TOOLKIT, "container-toolkit"), (O.VALIDATOR, "operator-validator"),
           (O.DEVICE_PLUGIN, "device-plugin"), (O.GFD, "gpu-feature-discovery"))


def context(auditor: Any, pool: Any, node: N.NodeFacts, mig_state: str | None, upgrade_state: str | None,
            undeclared: list[str]) -> D.Context:
    """What the diagnosis reads of one node, kept while the nodes stream by (the pods may still be read beside)."""
    labels = node.labels
    dra = auditor.slices is not None
    needed = ((O.DRIVER, "driver"),) if dra else _NEEDED + (((O.MIG_MANAGER, "mig-manager"),) if pool.mig else ())
    expected = tuple(op for op, deploy in needed if labels.get(N.DEPLOY_PREFIX + deploy) == "true"
                     and (op != O.DRIVER or pool.driver_pin is not None))
    return D.Context(
        node=node.name, namespace=auditor.plan.namespace, kernel=node.kernel_version or labels.get(NFD_KERNEL, ""),
        os_image=node.os_image, pool=pool.name, managed_driver=pool.driver_pin is not None, mig=pool.mig,
        upgrade_state=upgrade_state, mig_state=mig_state, expected=expected, undeclared_taints=tuple(undeclared),
        node_events=[], operands=None, dra=dra)


def diagnose_pool(auditor: Any, pool: Any, operands: O.Operands) -> None:
    """Each node of the pool diagnosed from its operand pods: the causes found go first among its findings, and its
    GPU-losing findings name the first of them."""
    for i, ctx in enumerate(pool.contexts):
        ctx.operands = operands
        ctx.namespace = operands.namespace or ctx.namespace
        ctx.node_events = operands.node_events.get(ctx.node, [])
        ctx.any_operands = operands.operand_pods > 0
        causes = D.diagnose(ctx, operands.on(ctx.node))
        if not causes:
            continue
        found = pool.checked[i]
        found[:0] = [Drift(ERROR, c.code, ctx.node, pool.name, c.message, c.evidence, c.hint) for c in causes]
        lead_with(found, causes[0].code, causes[0].message, also=[c.code for c in causes[1:]])
        if any(f.code in LOSING and f.severity == ERROR for f in found):
            name, kernel, _ = pool.kernels[i]
            pool.kernels[i] = (name, kernel, True)
    pool.contexts = []


def lead_with(found: list[Drift], code: str, message: str, also: list[str] = (), replaced: tuple[str, ...] = ()) \
        -> None:
    """The GPU-losing findings of a node name this cause first (the codes they named before follow, unless the cause
    replaces them)."""
    for j, f in enumerate(found):
        if f.code not in LOSING or f.severity != ERROR:
            continue
        hint = f.hint or ""
        before = hint.removeprefix("explained by ").removesuffix(" on this node").split(", ") \
            if hint.startswith("explained by ") and hint.endswith(" on this node") else []
        if hint.startswith("explained by GA14") and hint.split(" ")[2] not in replaced:
            continue  # named by an earlier cause already
        others = [c for c in dict.fromkeys([*also, *before]) if c != code and c not in replaced]
        found[j] = replace(f, hint=f"explained by {code} on this node: {message}"
                           + (f" (also {', '.join(others)})" if others else ""))


def kernel_skew(auditor: Any, pool: Any) -> None:
    """GA142: nodes that lost GPUs on a kernel no healthy node of the pool runs. A driver cause the pods showed
    (GA140, GA141) gets the comparison as evidence instead; a driver pod that crash-loops with no log read is folded
    into GA142, which then names both."""
    entries = pool.kernels
    healthy = Counter(kernel for _, kernel, lost in entries if not lost and kernel)
    if not healthy or not any(lost for _, _, lost in entries):
        return
    lost_on = Counter(kernel for _, kernel, lost in entries if lost and kernel)
    healthy_count = sum(healthy.values())
    runs = ", ".join(f"{k} ({n})" if len(healthy) > 1 else k for k, n in healthy.most_common(3))
    for i, (name, kernel, lost) in enumerate(entries):
        if not lost or not kernel or kernel in healthy:
            continue
        found = pool.checked[i]
        comparison = {"kernelVersion": kernel, "healthyKernels": dict(healthy.most_common()),
                      "nodesLostOnKernel": lost_on[kernel]}
        root = next((j for j, f in enumerate(found) if f.code in ("GA140", "GA141")), None)
        if root is not None:
            found[root] = replace(found[root], evidence={**found[root].evidence, **comparison})
            continue
        message = (f"kernel {kernel}, which none of the pool's {healthy_count} healthy node"
                   f"{'s' if healthy_count != 1 else ''} runs (they run {runs}); {lost_on[kernel]} node"
                   f"{'s' if lost_on[kernel] != 1 else ''} lost GPUs on it")
        evidence: dict[str, Any] = dict(comparison)
        crash = next((j for j, f in enumerate(found) if f.code == "GA143" and f.evidence.get("kind") == "crash"), None)
        replaced = ("GA143",) if crash is not None else ()
        if crash is not None:
            pod = found[crash].evidence.get("pod", {})
            state = found[crash].message.split(": ", 1)[-1].split(";")[0]
            message += f"; its driver pod fails there: {state}"
            evidence["driverPod"] = pod
            evidence["confirm"] = found[crash].evidence.get("confirm")
            del found[crash]
        else:
            evidence["confirm"] = [c.format(ns=auditor.plan.namespace, node=name, ds=O.DAEMONSETS[O.DRIVER],
                                            pod="POD", container="nvidia-driver-ctr", configmap="")
                                   for c in D.CAUSES["GA142"].confirm]
        fix = D.CAUSES["GA142"].fix
        found.insert(0, Drift(ERROR, "GA142", name, pool.name, message, evidence, fix[:1].upper() + fix[1:]))
        lead_with(found, "GA142", message, replaced=replaced)


def _units(resource: str, sharing: str) -> str:
    if resource.startswith("nvidia.com/mig-"):
        return "MIG devices"
    return "GPUs" if sharing in ("exclusive", "none") else "shares"


def waiting_work(auditor: Any, waiting: list[O.WaitingPod]) -> list[Drift]:
    """GA150 per resource the pending pods ask for: how many wait, and what the pools offering it are missing."""
    by_resource: dict[str, list[O.WaitingPod]] = {}
    for pod in waiting:
        for resource in pod.requests:
            by_resource.setdefault(resource, []).append(pod)
    out = []
    for resource, pods in sorted(by_resource.items()):
        asked = sum(p.requests[resource] for p in pods)
        offering = [p for p in auditor.pools if resource in p.resources]
        missing = {}
        for pool in offering:
            gap = pool.report.expected.get(resource, 0) - pool.report.advertised.get(resource, 0)
            if gap > 0:
                nodes = sorted({n for n, _, lost in pool.kernels if lost} | set(pool.down))
                missing[pool.name] = (gap, nodes, _units(resource, pool.report.sharing))
        message = f"{len(pods)} pod{'s' if len(pods) != 1 else ''} wait{'' if len(pods) != 1 else 's'} for " \
                  f"{resource} ({asked} requested)"
        if missing:
            message += "; " + "; ".join(
                f"{gap} {unit} of pool {name} are missing" + (f" on {len(nodes)} node{'s' if len(nodes) != 1 else ''}"
                                                               if nodes else "")
                for name, (gap, nodes, unit) in missing.items())
            hint = ("Bring the missing capacity back: the causes on the pools' nodes (listed first) say why each "
                    "node lost its GPUs; the pods are scheduled once the device plugin advertises them again")
        elif offering:
            message += f"; the pools offering it ({', '.join(p.name for p in offering)}) advertise all they promise"
            hint = ("Add nodes to the pools, or check the pods' requests and the teams' quotas: no GPU the pools "
                    "promise is missing, so the pods wait for room")
        else:
            message += "; no pool offers it"
            hint = f"Add a pool that offers {resource}, or fix the pods' requests (no pool of the intent offers it)"
        reasons = Counter(p.message for p in pods if p.message)
        evidence: dict[str, Any] = {"resource": resource, "pods": len(pods), "requested": asked,
                                    "waiting": [f"{p.namespace}/{p.name}" for p in pods[:10]]
                                    + ([f"... ({len(pods) - 10} more)"] if len(pods) > 10 else [])}
        if reasons:
            evidence["scheduler"] = reasons.most_common(1)[0][0]
        if missing:
            evidence["missing"] = {name: {"units": gap, "nodes": nodes[:10] + ([f"... ({len(nodes) - 10} more)"]
                                                                             if len(nodes) > 10 else [])}
                                   for name, (gap, nodes, _) in missing.items()}
        pool = next(iter(missing), None) or (offering[0].name if offering else NONE)
        out.append(Drift(ERROR if missing else WARNING, D.WAITING, "", pool, message, evidence, hint))
    return out

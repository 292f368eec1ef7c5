"""REPORT.md's runbook for lost GPUs (runbook.md.j2): per cause `gpuconf audit` names (cluster/diagnose.py), what it
is, the commands that confirm it on this cluster (its operator namespace, the operands' DaemonSets) and the fix."""

from __future__ import annotations

from ... import plan as P


def runbook_facts(plan: P.Plan) -> dict:
    """The audit command to run, and one entry per cause code: title, confirming commands, fix."""
    from ...cluster import diagnose as D
    from ...cluster import operands as O
    from ...emit import shell_word

    ns = shell_word(plan.namespace)
    intent = shell_word(plan.source)
    operand = {"GA140": O.DRIVER, "GA141": O.DRIVER, "GA142": O.DRIVER, "GA143": O.DRIVER, "GA144": O.TOOLKIT,
               "GA145": O.DEVICE_PLUGIN, "GA146": O.MIG_MANAGER, "GA147": O.VALIDATOR, "GA148": O.DRIVER,
               "GA149": O.DEVICE_PLUGIN}
    container = {O.DRIVER: "nvidia-driver-ctr", O.TOOLKIT: "nvidia-container-toolkit-ctr",
                 O.DEVICE_PLUGIN: "nvidia-device-plugin", O.MIG_MANAGER: O.MIG_MANAGER_CONTAINER,
                 O.VALIDATOR: "driver-validation"}
    entries = []
    for code, kind in sorted(D.CAUSES.items()):
        if code == "GA146" and not any(p.mig_key is not None for p in plan.pools):
            continue  # no MIG pool: MIG manager costs no GPU here
        op = operand[code]
        fill = {"ns": ns, "node": "NODE", "pod": "POD", "container": container.get(op, ""),
                "ds": O.DAEMONSETS.get(op, op), "configmap": shell_word(P.DEVICE_PLUGIN_CONFIGMAP)}
        entries.append({"code": code, "title": kind.title, "confirm": [c.format(**fill) for c in kind.confirm],
                        "fix": kind.fix[:1].upper() + kind.fix[1:]})
    return {
        "audit": [f"kubectl get nodes -o json > nodes.json && kubectl get pods -n {ns} -o json > pods.json",
                  f"gpuconf audit {intent} --nodes nodes.json --pods pods.json",
                  f"gpuconf audit {intent} --kubeconfig ~/.kube/config   # the same, live (role gpuconf-gpu-auditor)"],
        "causes": entries,
    }

"""The driver upgrade and rollback section of REPORT.md (upgrade.md.j2): where the upgrade policy lives, the upgrade
as waves of commits with their limits, and what reverting a commit does on the nodes."""

from __future__ import annotations

from typing import Any

from ... import catalog
from ... import plan as P
from .text import show


def upgrade_facts(plan: P.Plan, merged: dict) -> dict:
    """Where the driver upgrade policy lives and what the operator reads there, and the upgrade as waves of commits."""
    from ...render import chart as C
    from ...render.nodes import nvidia_drivers

    spec = plan.intent.spec
    managed = [p for p in plan.pools if p.driver != "preinstalled"]
    preinstalled = [p.name for p in plan.pools if p.driver == "preinstalled"]
    own = [p for p in plan.pools if p.driver not in ("cluster", "preinstalled") and p.wave is None]
    drivers = {d["spec"]["nodeSelector"][P.POOL_LABEL]: d for d in nvidia_drivers(plan, merged)}
    default_cr = C.default_nvidiadriver(merged)
    if drivers:
        # NVIDIADriver mode: each object's own policy, with the operator's defaults for what it lacks.
        policy = C.effective_nvd_policy(next(iter(drivers.values()))["spec"])
        where = ("NVIDIADriver mode: the operator reconciles each NVIDIADriver's own `spec.upgradePolicy` and ignores "
                 "the ClusterPolicy's. gpuconf writes the policy below into every NVIDIADriver it renders ("
                 + ", ".join(f"`{d['metadata']['name']}`" for d in drivers.values()) + ")"
                 + ("; the chart's `NVIDIADriver/default` (GPU nodes of no pool) gets it from the values"
                    if default_cr is not None else "") +
                 ". `maxParallelUpgrades` and `maxUnavailable` count per NVIDIADriver: pools whose NVIDIADrivers "
                 "change in one commit upgrade side by side.")
    elif default_cr is not None and plan.intent.spec.cluster.allocation == "dra":
        # The GPUCluster stack installs operator drivers only through NVIDIADrivers: the chart's default one.
        policy = C.effective_nvd_policy(default_cr)
        where = ("NVIDIADriver mode (the DRA stack has no ClusterPolicy): the operator reconciles the chart's "
                 "`NVIDIADriver/default`, whose `spec.upgradePolicy` the chart renders from the values' "
                 "`driver.upgradePolicy`; it applies to every managed node at once. DRA nodes take no automatic "
                 "upgrades, so `autoUpgrade` is false.")
    else:
        policy = C.upgrade_policy(merged) or C.OPERATOR_DEFAULT_POLICY
        where = ("ClusterPolicy mode: the operator reads the ClusterPolicy's `spec.driver.upgradePolicy`, which the "
                 "chart renders from the values' `driver.upgradePolicy`; it applies to every managed node at once.")
    notes = []
    up = spec.driver.upgrade
    if up is not None and up.max_unavailable == 0 and not isinstance(up.max_unavailable, str):
        notes.append("`maxUnavailable: 0` is rendered as `\"0%\"`: the chart's template reads `maxUnavailable | "
                     "default \"25%\"`, and Helm's `default` would turn 0 into 25%.")
    facts: dict[str, Any] = {
        "managedPools": [p.name for p in managed], "preinstalledPools": preinstalled,
        "ownVersionPools": [p.name for p in own],
        "mode": "nvidiadriver" if drivers else "clusterpolicy",
        "where": where,
        "policy": {
            "autoUpgrade": policy["autoUpgrade"],
            "maxParallelUpgrades": policy["maxParallelUpgrades"],
            "maxUnavailable": policy["maxUnavailable"],
            "drain": policy["drain"],
            "podDeletion": policy["podDeletion"],
            "waitForCompletion": policy["waitForCompletion"],
            "source": "spec.driver.upgrade" if up else f"chart {plan.chart_version} defaults",
        },
        "notes": notes,
        "waves": [], "rollout": None, "finish": None, "ownVersionSteps": [],
        "perPoolDrivers": plan.chart.can("perPoolDrivers"),
    }
    if not managed:
        return facts
    limits = _limits(facts["policy"])
    watch = ("watch `kubectl get nodes -l {sel} -L nvidia.com/gpu-driver-upgrade-state` until every node shows "
             "`upgrade-done` (`upgrade-failed` stops the wave: revert the commit)")
    manual = ([] if facts["policy"]["autoUpgrade"] else [
        "`autoUpgrade` is false: the operator does not replace running driver pods. For each node of the wave, "
        f"drain it, then delete its driver pod (`kubectl -n {plan.namespace} delete pod -l app=nvidia-driver-daemonset "
        "--field-selector spec.nodeName=NODE`)"])
    current = spec.driver.version or str(plan.chart.shared_defaults["driver"]["version"])
    cluster_ref = (f"`spec.driver.version` (line {plan.line(('spec', 'driver', 'version'))})" if spec.driver.version
                   else f"`spec.driver.version` (absent: the chart default {current} applies today)")
    waved = [p for p in plan.pools if p.wave is not None]
    if not waved:
        steps = [f"set {cluster_ref} to the new version, render, commit, sync: every pool on the cluster driver "
                 f"({', '.join(p.name for p in managed if p.driver == 'cluster') or 'none'}) takes it at once",
                 *manual, watch.format(sel="nvidia.com/gpu.present=true"), "run every pool's probe again"]
        if plan.intent.spec.cluster.allocation == "dra":
            pass  # no waves on the DRA stack (GC435): its nodes take no automatic upgrades
        elif facts["perPoolDrivers"]:
            steps.append("to upgrade pool by pool instead, declare `spec.driver.upgrade.waves` first (in a commit of "
                         "its own: it moves every pool to its own NVIDIADriver, which replaces the driver "
                         "DaemonSets, so do it in a maintenance window), then roll out with "
                         "`spec.driver.upgrade.rollout`")
        else:
            steps.insert(0, f"chart {plan.chart_version} has no per-pool NVIDIADriver fallback (GC329): a new version "
                            "reaches every managed pool at once; move to chart "
                            f"{catalog.first_release_with('perPoolDrivers') or 'a newer release'} or later for waves")
        if any(p.driver == "cluster" for p in managed):
            facts["waves"] = [{"number": 1, "name": "all pools on the cluster driver",
                               "pools": [p.name for p in managed if p.driver == "cluster"],
                               "nodes": sum(p.pool.nodes for p in managed if p.driver == "cluster"),
                               "status": "", "limits": limits, "steps": steps}]
    else:
        rollout = up.rollout
        target = rollout.version if rollout is not None else None
        reached = rollout.wave if rollout is not None else 0
        line = plan.line(("spec", "driver", "upgrade", "rollout")) if rollout is not None else None
        facts["rollout"] = {"from": current, "to": target, "wave": reached,
                            "line": line} if rollout is not None else None
        numbers = sorted({p.wave for p in waved})
        for number in numbers:
            pools = [p for p in waved if p.wave == number]
            names = ", ".join(f"`gpuconf-{p.name}`" for p in pools)
            if rollout is None:
                status = f"runs {current}"
                edit = (f"add `rollout: {{version: NEW, wave: {number}}}` under `spec.driver.upgrade`" if number == 1
                        else f"raise `spec.driver.upgrade.rollout.wave` to {number}")
            elif number <= reached:
                status = f"runs {target} (done)"
                edit = None
            else:
                status = f"runs {current}" + (" (next)" if number == reached + 1 else "")
                edit = f"raise `spec.driver.upgrade.rollout.wave` (line {line}) to {number}"
            sel = (f"{P.POOL_LABEL}={pools[0].name}" if len(pools) == 1
                   else f"'{P.POOL_LABEL} in ({','.join(p.name for p in pools)})'")
            steps = []
            if edit is not None:
                steps += [f"{edit}, render, commit, sync: the rendered diff changes only the version of {names}",
                          *manual, watch.format(sel=sel),
                          "run the probe(s) " + ", ".join(f"`gpuconf-probe-{p.name}`" for p in pools)
                          + " again (acceptance checklist) and let real workloads run before the next wave",
                          "to roll this wave back, revert its commit: the NVIDIADriver(s) get the previous version "
                          "back and the operator downgrades those nodes under the same policy"]
            facts["waves"].append({"number": number, "name": "canary" if number == 1 and len(numbers) > 1 else "",
                                   "pools": [p.name for p in pools], "nodes": sum(p.pool.nodes for p in pools),
                                   "status": status, "limits": _limits(facts["policy"], len(pools)), "steps": steps})
        finish = ("when every wave runs the new version: set " + cluster_ref + " to it and remove `rollout`; the "
                  "NVIDIADrivers already carry that version, so nothing changes on the nodes")
        facts["finish"] = finish
    if own:
        facts["ownVersionSteps"] = [f"pools with their own `driver.version` ({', '.join(p.name for p in own)}) are in "
                                    "no wave: change one pool's version per commit; the diff touches only its "
                                    "NVIDIADriver"]
    return facts


def _limits(policy: dict, drivers: int = 1) -> str:
    """The policy's limits in words; `drivers` NVIDIADrivers changing together each apply them to their own nodes."""
    drain = policy["drain"] or {}
    parallel, unavailable = policy["maxParallelUpgrades"], policy["maxUnavailable"]
    if drivers > 1:
        parts = [f"at most {parallel} node(s) at once per NVIDIADriver, so up to {parallel * drivers if parallel else 'all'} "
                 f"in this wave of {drivers} (maxParallelUpgrades; 0 = no limit)",
                 f"at most {unavailable} of each pool unavailable (maxUnavailable)"]
    else:
        parts = [f"at most {parallel} node(s) at once (maxParallelUpgrades; 0 = no limit)",
                 f"at most {unavailable} unavailable (maxUnavailable)"]
    if drain.get("enable"):
        parts.append(f"each node drained first (timeout {drain.get('timeoutSeconds')} s, force {show(drain.get('force'))}, "
                     f"deleteEmptyDir {show(drain.get('deleteEmptyDir'))})")
    else:
        pod_deletion = policy["podDeletion"] or {}
        parts.append(f"no drain: only GPU pods are deleted (timeout {pod_deletion.get('timeoutSeconds')} s, "
                     f"force {show(pod_deletion.get('force'))}, deleteEmptyDir {show(pod_deletion.get('deleteEmptyDir'))})")
    wait = policy["waitForCompletion"] or {}
    if wait.get("podSelector"):
        parts.append(f"waits for pods `{wait['podSelector']}` to finish (timeout {wait.get('timeoutSeconds')} s, "
                     "0 = forever)")
    return "; ".join(parts)


def rollback_steps(plan: P.Plan) -> list[str]:
    """What reverting the commit does, and what the operator then does on the nodes."""
    from ...render.openshift import olm

    from ...render.karpenter import karpenter_pools
    from ...render.nodes import node_templates

    karpenter = [p.name for p in karpenter_pools(plan)]
    scripts = {name.rsplit(".", 2)[0] for name in node_templates(plan) if name.endswith(".sh")}
    node_pools = [p.name for p in plan.pools if not p.nfd and p.name not in karpenter and p.name in scripts]
    template_pools = [p.name for p in plan.pools if not p.nfd and p.name not in karpenter and p.name not in scripts]
    manual = ("`kubectl apply -k` the previous folder (its ClusterPolicy included: OLM installed the operator)"
              if olm(plan) else "`helm upgrade` with the previous values.yaml and `kubectl apply -k` the previous folder")
    steps = [
        "Before a change (and before its revert): `gpuconf diff NEW.yaml --against <the rendered folder>` prints what "
        "the sync does to running nodes and jobs, worst first (drained or replaced nodes, restarts, renamed "
        "resources).",
        "Revert the commit (`git revert <sha>`), render with `gpuconf render` (CI's `--check` proves the output is "
        f"the previous one) and let Argo CD / Flux sync; or {manual}.",
        "Node labels: nfd-master re-applies the previous NodeFeatureRules, so the nodes get back their previous "
        f"`{P.DEVICE_PLUGIN_LABEL}` and `{P.MIG_LABEL}` values.",
        "Device-plugin configs: config keys are content-addressed, so the previous key comes back in the ConfigMap "
        "and the label points at it again; the config-manager sidecar switches the plugin to it and the node "
        "advertises the previous units. Running pods keep their devices.",
        f"MIG: a changed `{P.MIG_LABEL}` makes mig-manager repartition the GPUs; it pauses the GPU operands on the "
        f"node meanwhile and reports `{P.MIG_LABEL}.state` (pending, then success). GPU pods on the node must be "
        "gone first.",
        "Driver: the previous version returns to the ClusterPolicy (or the pool's NVIDIADriver) and the upgrade "
        "controller rolls it out like any upgrade, in the same waves and under the same limits (watch "
        "`kubectl get nodes -L nvidia.com/gpu-driver-upgrade-state`).",
        "Chart values (tolerations, images, monitoring): the operator updates the ClusterPolicy's DaemonSets; pods "
        "restart node by node.",
    ]
    if plan.intent.spec.cluster.allocation == "dra":
        # The revert and the node labels stay; device-plugin configs, mig-manager, the ClusterPolicy's driver and its
        # DaemonSets are the device-plugin stack's.
        steps[2] = (f"Node labels: nfd-master re-applies the previous NodeFeatureRules, so the nodes get back their "
                    f"previous `{P.POOL_LABEL}` values (the DRA stack reads no device-plugin or MIG label).")
        steps[3:7] = [
            "DeviceClasses and claim templates: the previous ones are applied in place; they apply to claims made from "
            "then on, and allocated claims keep their devices until their pods end.",
            "MIG: the DRA stack runs no mig-manager: instances made outside the operator (migPartitions external) "
            "must be remade with the previous layout by whatever made them, then the driver's kubelet plugin "
            "restarted; dynamic MIG makes instances per claim and needs nothing.",
            "Driver: the previous version returns to the NVIDIADriver objects; DRA nodes take no automatic "
            "upgrades, so replace each node's driver pod (drain first) or the nodes themselves.",
            "Chart values (tolerations, images, feature gates, monitoring): the operator updates the GPUCluster's "
            "DaemonSets; pods restart node by node. The allocation stack itself is no rollback: reverting a switch "
            "of spec.cluster.allocation is a switch again (new clusters only).",
        ]
    from ...render.nodes import RANCHER_CONFIG

    distribution = plan.intent.spec.cluster.distribution
    if template_pools and distribution in RANCHER_CONFIG:
        steps.insert(3, f"Pools labelled by their node template ({', '.join(template_pools)}): "
                        f"{distribution.upper()}'s agent applies its config file's node-label at every start, so put "
                        f"the previous drop-in back and restart {RANCHER_CONFIG[distribution][1]}, or relabel the "
                        "nodes with `kubectl label --overwrite` (values in the pool table).")
    elif template_pools:
        steps.insert(3, f"Pools labelled by their node template ({', '.join(template_pools)}): the kubelet applies "
                        "`--node-labels` only when a node registers, so existing nodes keep their labels until they "
                        "are replaced; relabel them with `kubectl label --overwrite` (values in the pool table) or "
                        "roll the node group.")
    if node_pools:
        steps.insert(3, f"Pools created by a node-pool command ({', '.join(node_pools)}): its labels and taints are "
                        "set when a node is created, so existing nodes keep theirs; relabel them with `kubectl label "
                        "--overwrite` (values in the pool table) and update the node pool's labels with the "
                        "provider's CLI so that new nodes get them, or recreate the node pool.")
    if karpenter:
        # Karpenter hashes the NodePool's spec.template (labels, taints, ...): any edit of it is drift (karpenter-facts
        # §d), and Karpenter replaces nodes rather than relabelling them.
        steps.insert(3, f"Pools launched by a Karpenter NodePool ({', '.join(karpenter)}): their labels and taints "
                        "live in the NodePool's `spec.template`, and every edit of it, a revert included, is drift: "
                        "Karpenter replaces the nodes (drain, then a new node) instead of relabelling them. Reverting "
                        "restores the previous template, so nodes still launched from it are left alone and the "
                        "nodes launched since are replaced; give the NodePool a disruption budget "
                        "(`spec.disruption.budgets`) to replace one node at a time. Relabelling with kubectl does not "
                        "help: Karpenter compares the template, not the node's labels.")
    if not any(p.nfd for p in plan.pools):
        steps.remove(next(s for s in steps if s.startswith("Node labels: nfd-master")))
    return steps

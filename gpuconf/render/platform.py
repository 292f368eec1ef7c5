"""What the cluster's platform needs: chart values, objects and node-pool commands for GKE, EKS, AKS, OpenShift,
k3s, RKE2 and MicroK8s. Every fact comes from gpuconf.platforms (profiles/platforms.json, derived from the platform
fact sheet); this module decides which of them apply to a plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .. import plan as P
from .. import platforms
from ..escape import shell_word
from . import metadata

#: Objects the platform needs before the chart installs (GKE's ResourceQuota, the OLM subscription); applied right
#: after the namespaces, and by Flux together with the release.
PLATFORM_FILE = "manifests/platform.yaml"
DISTRIBUTION = ("spec", "cluster", "distribution")
RUNTIME = ("spec", "cluster", "containerRuntime")
#: The toolkit's environment variables gpuconf sets, in the order the chart's list keeps them.
TOOLKIT_ENV_ORDER = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG_SOURCE")


@dataclass(frozen=True)
class Setting:
    """One chart value the platform needs, why, and the intent path it follows from."""

    path: str
    value: Any
    why: str
    origin: tuple


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.lstrip("v").split("."))


def driver_mode(plan: P.Plan) -> str:
    """preinstalled when every pool keeps the host's (or platform's) driver, managed when none does, else mixed."""
    kinds = {"preinstalled" if p.driver == "preinstalled" else "managed" for p in plan.pools}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def settings(plan: P.Plan) -> list[Setting]:
    """The chart values the platform needs, in the order they are applied (before the intent's overrides)."""
    intent = plan.intent
    cluster = intent.spec.cluster
    out: list[Setting] = []
    env: dict[str, tuple[str, str, tuple]] = {}  # toolkit env name -> (value, why, origin)
    preinstalled = driver_mode(plan) == "preinstalled"
    if cluster.distribution == "gke":
        gke = platforms.gke()
        if preinstalled:
            for path, value in sorted(gke["googleDriver"]["values"].items()):
                why = ("NVIDIA's GKE guide runs the operator with Google's driver installer and CDI on" if
                       path.startswith("cdi.") else "GKE with Google's driver installer: the driver lives in "
                       "/home/kubernetes/bin/nvidia, writable and persistent on GKE nodes (NVIDIA's GKE guide)")
                out.append(Setting(path, value, why, DISTRIBUTION))
        containerd2 = gke["containerd2"]
        if _version(cluster.kubernetes_version) >= _version(containerd2["fromKubernetes"]):
            for name, value in containerd2["toolkitEnv"].items():
                env[name] = (value, f"GKE {containerd2['fromKubernetes']}+ runs containerd 2, whose config.toml the "
                             "toolkit corrupts unless it reads the file (NVIDIA's GKE guide)",
                             ("spec", "cluster", "kubernetesVersion"))
        if any(p.mig_key is not None and P.mig_layout(p.profile, p.model) for p in plan.pools):
            out.append(Setting("migManager.env", [{"name": k, "value": v} for k, v in gke["migManagerEnv"].items()],
                               "MIG Manager on GKE must reboot the node to apply a MIG layout (NVIDIA's GKE guide)",
                               ("spec", "sharingProfiles")))
    elif cluster.distribution == "eks" and preinstalled:
        ami = P.eks_ami(intent)
        facts = platforms.eks()["amis"][ami]
        for path, value in sorted(facts["values"].items()):
            out.append(Setting(path, value, f"the EKS {ami} AMI ships {_plain(facts['ships'])} (AWS's EKS AMI guide)",
                               ("spec", "cluster", "eks") if cluster.eks is not None else DISTRIBUTION))
    elif cluster.distribution == "aks" and preinstalled:
        for path, value in sorted(platforms.aks()["preinstalled"]["values"].items()):
            out.append(Setting(path, value, "AKS's GPU node image keeps its driver and toolkit, whose runtime handler "
                               "is nvidia-container-runtime (NVIDIA's AKS guide)", ("spec", "driver")))
    elif cluster.distribution == "openshift":
        out.append(Setting("platform.openshift", True, "the cluster runs OpenShift (the chart adds its SCC objects)",
                           DISTRIBUTION))
        for path, value in sorted(platforms.openshift()["clusterPolicy"]["operator"].items()):
            out.append(Setting(f"operator.{path}", value, "RHCOS drivers are built with OpenShift's Driver Toolkit, "
                               "entitlement-free (NVIDIA's OpenShift guide; the bundle's example ClusterPolicy)",
                               DISTRIBUTION))
    runtime = cluster.container_runtime
    nri = runtime is not None and runtime.nri
    facts = platforms.runtime(cluster.distribution)
    if facts is not None and not nri:
        for name, value in facts["toolkitEnv"].items():
            env[name] = (value, f"{cluster.distribution} keeps containerd in its own place ({_source(facts)})",
                         DISTRIBUTION)
    if runtime is not None and runtime.name == "containerd" and not nri:
        for name, value in (("CONTAINERD_CONFIG", runtime.config_path), ("CONTAINERD_SOCKET", runtime.socket_path)):
            if value:
                env[name] = (value, "the container toolkit must find this distribution's containerd config and "
                             "socket", RUNTIME)
    if nri:
        for path, value in sorted(platforms.nri()["values"].items()):
            out.append(Setting(path, value, "NRI plugin mode: the toolkit injects devices through containerd's NRI "
                               "and leaves its config alone (NVIDIA's CDI guide)", (*RUNTIME, "nri")))
    if env:
        names = [n for n in TOOLKIT_ENV_ORDER if n in env]
        origin = env[names[0]][2]
        why = "; ".join(dict.fromkeys(env[n][1] for n in names))
        out.append(Setting("toolkit.env", [{"name": n, "value": env[n][0]} for n in names], why, origin))
    return out


def _plain(markdown: str) -> str:
    """A fact-sheet cell without its Markdown emphasis."""
    return markdown.replace("**", "").replace("`", "")


def _source(facts: dict) -> str:
    return ("community reports: " if facts["community"] else "") + facts["source"]


# --- objects --------------------------------------------------------------------------------------------------


def gke_resource_quota(plan: P.Plan) -> dict:
    """GKE admits system-node-critical pods outside kube-system only under a ResourceQuota that names the class."""
    quota = platforms.gke()["resourceQuota"]
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": metadata(plan, quota["name"], plan.namespace),
        "spec": {
            "hard": {"pods": str(quota["pods"])},
            "scopeSelector": {"matchExpressions": [
                {"operator": "In", "scopeName": "PriorityClass", "values": list(quota["priorityClasses"])}]},
        },
    }


def manifest_files(plan: P.Plan, merged_values: dict) -> dict[str, list[dict]]:
    """The platform's manifest files and their objects, in apply order; files without objects are left out."""
    from . import karpenter, openshift

    files: dict[str, list[dict]] = {PLATFORM_FILE: [], karpenter.KARPENTER_FILE: karpenter.render(plan)}
    if plan.intent.spec.cluster.distribution == "gke":
        files[PLATFORM_FILE].append(gke_resource_quota(plan))
    if openshift.olm(plan):
        worker = merged_values.get("node-feature-discovery", {}).get("worker", {}).get("tolerations", [])
        files[PLATFORM_FILE] += [*openshift.nfd_operator_objects(plan), *openshift.subscription_objects(plan),
                                 openshift.nfd_instance(plan, worker)]
        files[openshift.CLUSTER_POLICY_FILE] = openshift.cluster_policy(plan, merged_values)
    return {path: docs for path, docs in files.items() if docs}


def file_order(order: list[str]) -> list[str]:
    """The manifest files in apply order with the platform's: its objects right after the namespaces, the
    ClusterPolicy after the ConfigMaps it names, Karpenter's NodePools after the node-feature rules (both label
    nodes)."""
    from . import karpenter, openshift

    out = list(order)
    out.insert(out.index("manifests/namespaces.yaml") + 1, PLATFORM_FILE)
    out.insert(out.index("manifests/sharing-configs.yaml") + 1, openshift.CLUSTER_POLICY_FILE)
    out.insert(out.index("manifests/node-feature-rules.yaml") + 1, karpenter.KARPENTER_FILE)
    return out


def namespace_labels(plan: P.Plan) -> dict[str, str]:
    """Labels the platform wants on the operator namespace: OpenShift's monitoring stack scrapes only labelled ones
    (other than nvidia-gpu-operator, platform-facts §4)."""
    if plan.intent.spec.cluster.distribution != "openshift":
        return {}
    label = platforms.openshift()["monitoringLabel"]
    return {label["key"]: label["value"]}


def probe_tolerations(plan: P.Plan) -> list[dict]:
    """Tolerations every probe needs on this platform: GKE taints its GPU nodes with nvidia.com/gpu.

    GKE's ExtendedResourceToleration adds that toleration only to pods requesting nvidia.com/gpu itself, not to a
    probe of nvidia.com/gpu.shared or a MIG resource (platform-facts §1).
    """
    if plan.intent.spec.cluster.distribution != "gke":
        return []
    taint = platforms.gke()["gpuTaint"]
    return [{"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}]


def pool_tolerations(plan: P.Plan, pool: P.PoolPlan, own: bool = True) -> list[dict]:
    """What a pod on the pool's nodes must tolerate: the platform's GPU taint (GKE) and, with own, the pool's
    taints; a taint the platform's Exists toleration already covers is not tolerated twice."""
    out = probe_tolerations(plan)
    covered = {(t["key"], t["effect"]) for t in out}
    for taint in pool.pool.taints if own else ():
        if (taint.key, taint.effect) not in covered:
            out.append(P.toleration(taint))
    return out


# --- node-pool commands ---------------------------------------------------------------------------------------


def _settable(labels: dict[str, str], reserved: str) -> dict[str, str]:
    """Labels a node-pool command may set: not the provider's reserved prefix (it sets those itself)."""
    return {k: v for k, v in sorted(labels.items()) if not k.startswith(reserved)}


def _taint_flag(taints: Iterable[Any]) -> str:
    """gcloud's and az's taint list: key=value:effect, comma-separated (both refuse a taint without a value)."""
    return ",".join(f"{t.key}={t.value}:{t.effect}" for t in taints)


@dataclass(frozen=True)
class Env:
    """A word (or part of one) the script takes from an environment variable the user sets."""

    name: str


def quote(text: str) -> str:
    """One literal shell word (gpuconf.escape.shell_word: the one shell quoting of gpuconf)."""
    return shell_word(text)


def _word(word: Any) -> str:
    """One shell word: literal parts quoted, variables expanded inside double quotes (never re-split)."""
    parts = word if isinstance(word, tuple) else (word,)
    return "".join(f'"${{{p.name}}}"' if isinstance(p, Env) else quote(p) for p in parts)


def _comment(text: str) -> str:
    """A comment line: free text never leaves it (a line break would start a command)."""
    return "# " + " ".join(text.split())


def shell_script(comments: list[str], required: dict[str, str], command: list[list[Any]]) -> str:
    """A bash script: shebang, comments, a check of each variable the user must set, one command.

    command is a list of lines, each a list of words (literal text, Env, or a tuple of both); every literal is
    quoted for the shell, so no label, taint or name can break the script or run something of its own.
    """
    out = ["#!/usr/bin/env bash", *(_comment(c) for c in comments)]
    out.append("set -eu")
    for name, why in required.items():
        # printf '%s', not echo: the text may be a $'...' word, whose escapes echo may expand (shellcheck SC2028).
        out.append(f'if [ -z "${{{name}:-}}" ]; then printf \'%s\\n\' {quote(why)} >&2; exit 2; fi')
    out.append(" \\\n  ".join(" ".join(_word(w) for w in line) for line in command))
    return "\n".join(out) + "\n"


def gke_node_pool(plan: P.Plan, pool: P.PoolPlan) -> str | None:
    """`gcloud container node-pools create` for a pool selected by GKE node-pool labels: its accelerator (from the
    match, else the one GKE type of the model), size or autoscaling range, Spot VMs when the match asks for them."""
    gke = platforms.gke()
    flags = gke["nodePoolFlags"]
    labels = pool.pool.match.node_labels
    if not any(k.startswith(gke["reservedLabelPrefix"]) for k in labels):
        return None
    name = labels.get(gke["labels"]["nodePool"], pool.name)
    accelerator: Any = labels.get(gke["labels"]["accelerator"])
    types = platforms.gke_accelerators(pool.model.id)
    if accelerator is None and len(types) == 1:
        accelerator = next(iter(types))
    series = types.get(accelerator) if isinstance(accelerator, str) else None
    required = {"CLUSTER": "set CLUSTER to the GKE cluster", "LOCATION": "set LOCATION to its region or zone"}
    machines = platforms.gke_machine_types(accelerator, pool.pool.gpus_per_node) if isinstance(accelerator, str) \
        else None
    machine: Any = Env("MACHINE_TYPE")
    if machines and len(machines) == 1:  # the accelerator-optimized series attaches the GPUs: one machine fits
        machine = machines[0]
    else:
        of_series = f" of the {series} series" if series else ""
        required["MACHINE_TYPE"] = (f"set MACHINE_TYPE to a machine type{of_series} with {pool.pool.gpus_per_node} x "
                                    f"{pool.model.id}"
                                    + (f" ({', '.join(machines)})" if machines else ""))
    if accelerator is None:
        required["ACCELERATOR"] = (f"set ACCELERATOR to the GKE accelerator type of {pool.model.id}" +
                                   (f" ({' or '.join(sorted(types))})" if types else ""))
        accelerator = Env("ACCELERATOR")
    own = {**_settable({**labels, **pool.labels}, gke["reservedLabelPrefix"]),
           gke["nodePoolLabel"]["key"]: gke["nodePoolLabel"]["value"]}
    command: list[list[Any]] = [
        ["gcloud", "container", "node-pools", "create", name],
        ["--cluster", Env("CLUSTER")], ["--location", Env("LOCATION")], ["--machine-type", machine]]
    low = P.min_nodes(plan.intent, pool.pool)
    if low < pool.pool.nodes:
        command += [["--num-nodes", str(low)], [flags["autoscaling"]], [flags["totalMin"], str(low)],
                    [flags["totalMax"], str(pool.pool.nodes)]]
    else:
        command.append(["--num-nodes", str(pool.pool.nodes)])
    command += [
        ["--accelerator", ("type=", accelerator, f",count={pool.pool.gpus_per_node},{gke['acceleratorOption']}")],
        ["--node-labels", ",".join(f"{k}={v}" for k, v in sorted(own.items()))]]
    if pool.pool.taints:
        command.append(["--node-taints", _taint_flag(pool.pool.taints)])
    if labels.get(gke["labels"]["spot"]) == "true":
        command.append([flags["spot"]])
    return shell_script([
        f"GKE node pool for gpuconf pool {pool.name}: {pool.pool.gpus_per_node} x {pool.model.id} per node, "
        + (f"{low} to {pool.pool.nodes} nodes (cluster autoscaler)." if low < pool.pool.nodes
           else f"{pool.pool.nodes} nodes."),
        f"{gke['nodePoolLabel']['key']} removes GKE's own device plugin and {gke['acceleratorOption']} its "
        "automatic driver install, in either driver mode (NVIDIA's GKE guide); the pool's labels and taints are the "
        "ones gpuconf's configs and probes expect.",
    ], required, command)


def aks_node_pool(plan: P.Plan, pool: P.PoolPlan) -> str | None:
    """`az aks nodepool add` for a pool selected by its AKS agent pool: size or autoscaling range, Spot priority
    when the match asks for Spot nodes, no AKS driver when the operator installs it."""
    aks = platforms.aks()
    flags = aks["nodePoolFlags"]
    labels = pool.pool.match.node_labels
    agent_pool = labels.get(aks["agentPoolLabel"])
    if agent_pool is None:
        return None
    required = {"RESOURCE_GROUP": "set RESOURCE_GROUP to the resource group of the cluster",
                "CLUSTER": "set CLUSTER to the AKS cluster", "VM_SIZE": "set VM_SIZE to a GPU VM size"}
    own = _settable({**labels, **pool.labels}, aks["reservedLabelPrefix"])
    low = P.min_nodes(plan.intent, pool.pool)
    command: list[list[Any]] = [
        ["az", "aks", "nodepool", "add", "--resource-group", Env("RESOURCE_GROUP"), "--cluster-name", Env("CLUSTER")],
        ["--name", agent_pool], ["--node-vm-size", Env("VM_SIZE")]]
    if low < pool.pool.nodes:
        command += [["--node-count", str(low)], [flags["autoscaler"]], [flags["min"], str(low)],
                    [flags["max"], str(pool.pool.nodes)]]
    else:
        command.append(["--node-count", str(pool.pool.nodes)])
    command.append(["--labels", *(f"{k}={v}" for k, v in sorted(own.items()))])
    # The pool lists AKS's own Spot taint (GC388) so the operands tolerate it; AKS puts it on the nodes itself, as it
    # sets its own labels, so the command leaves out every taint under the provider's reserved prefix.
    settable = [t for t in pool.pool.taints if not t.key.startswith(aks["reservedLabelPrefix"])]
    if settable:
        command.append(["--node-taints", _taint_flag(settable)])
    if labels.get(aks["spotLabel"]["key"]) == aks["spotLabel"]["value"]:
        command.append([*flags["priority"].split(), *flags["evictionPolicy"].split()])
    lines = [f"AKS node pool for gpuconf pool {pool.name}: {pool.pool.gpus_per_node} x {pool.model.id} per node, "
             + (f"{low} to {pool.pool.nodes} nodes (cluster autoscaler)." if low < pool.pool.nodes
                else f"{pool.pool.nodes} nodes.")]
    if pool.driver != "preinstalled":
        command.append(aks["operatorDriver"]["nodePoolFlag"].split())
        lines += [f"{aks['operatorDriver']['nodePoolFlag']} ({aks['operatorDriver']['cli']}) leaves the driver to "
                  "the operator; it applies only when the pool is created (NVIDIA's AKS guide)."]
    return shell_script(lines, required, command)


def node_pool_scripts(plan: P.Plan) -> dict[str, str]:
    """node-templates/<pool>.<platform>.sh for the pools of a GKE or AKS node pool."""
    render = {"gke": (gke_node_pool, "gke"), "aks": (aks_node_pool, "aks")}.get(plan.intent.spec.cluster.distribution)
    if render is None:
        return {}
    function, suffix = render
    out = {}
    for pool in plan.pools:
        if pool.nfd:
            continue
        text = function(plan, pool)
        if text is not None:
            out[f"{pool.name}.{suffix}.sh"] = text
    return out


# --- what the report says about the platform -----------------------------------------------------------------------


def notes(plan: P.Plan) -> list[dict[str, str]]:
    """What gpuconf set for the platform and why, what to do outside gpuconf, and what could not be verified."""
    from . import karpenter, openshift

    intent = plan.intent
    cluster = intent.spec.cluster
    mode = driver_mode(plan)
    out: list[dict[str, str]] = []

    def note(title: str, text: str, source: str) -> None:
        out.append({"title": title, "text": text, "source": source})

    if cluster.distribution == "gke":
        gke = platforms.gke()
        if mode == "preinstalled":
            note("Driver: Google's installer", "gpuconf sets driver.enabled=false and points hostPaths.driverInstallDir "
                 "and toolkit.installDir at /home/kubernetes/bin/nvidia. Install the driver with " +
                 _plain(gke["googleDriver"]["installer"]) + ".", gke["source"])
        else:
            note("Driver: the operator's", "The operator installs the driver: this works on node pools with the "
                 f"{gke['operatorDriver']['nodeOs']} image; hostPaths stay the chart's.", gke["source"])
        note("Node pools", f"Create every GPU node pool with the node label {gke['nodePoolLabel']['key']}="
             f"{gke['nodePoolLabel']['value']} (no GKE device plugin) and --accelerator "
             f"type=...,{gke['acceleratorOption']} (no automatic driver); node-templates/<pool>.gke.sh has the command "
             "for pools selected by GKE node-pool labels.", gke["source"])
        note("ResourceQuota", f"GKE admits system-node-critical pods outside kube-system only under a ResourceQuota "
             f"naming that class: manifests/platform.yaml holds {gke['resourceQuota']['name']} for {plan.namespace}; "
             "apply it before the chart.", gke["resourceQuota"]["source"])
        note("GPU taint", f"GKE taints GPU nodes {gke['gpuTaint']['key']}:{gke['gpuTaint']['effect']}; the chart's "
             "operand and NFD tolerations cover it and gpuconf's probes tolerate it.", gke["source"])
    elif cluster.distribution == "eks":
        eks = platforms.eks()
        ami = P.eks_ami(intent)
        facts = eks["amis"][ami]
        set_ = ", ".join(f"{k}={str(v).lower()}" for k, v in sorted(facts["values"].items()))
        note(f"AMI: {ami}", f"The AMI ships {_plain(facts['ships'])}." + (f" gpuconf sets {set_}." if set_ else ""),
             facts["source"])
        if facts["values"].get("toolkit.enabled") is False:
            note("Runtime handler", "With the AMI's toolkit the operator's RuntimeClass handler (operator.runtimeClass, "
                 "chart default nvidia) must already exist in the node's containerd config. Not verified: the handler "
                 "name on the AMI, and CDI with the AMI's toolkit; override operator.runtimeClass if it differs.",
                 "platform-facts §0 and §6")
        if any(eks["nodeGroupLabel"] in p.pool.match.node_labels for p in plan.pools):
            note("Managed node groups", f"eksctl installs its own NVIDIA device plugin on GPU node groups: create them "
                 f"with {eks['eksctlDevicePlugin']}.", "docs.aws.amazon.com/eks/latest/eksctl/gpu-support.html")
        pools = karpenter.karpenter_pools(plan)
        if pools:
            names = ", ".join(p.pool.match.node_labels[karpenter.nodepool_label()] for p in pools)
            note("Karpenter", f"manifests/karpenter.yaml holds per pool an EC2NodeClass and a NodePool ({names}) of "
                 f"the same name: the pool's GPU, labels, taints, lifecycle and `limits.nodes` (its maximum), AMI "
                 f"alias {karpenter.ami_alias(plan)}. Karpenter counts a node as initialized once the resources its "
                 "pods requested are registered, so the driver, toolkit and device plugin must come up first." + (
                     " The alias latest moves with every AMI release (drift): pin amiVersion in production."
                     if karpenter.ami_alias(plan).endswith("@latest") else ""),
                 platforms.karpenter()["source"])
            overlays = [p for p in pools if karpenter.nodeoverlay(plan, p) is not None]
            if overlays:
                note("Karpenter NodeOverlays", "Karpenter's scheduling simulation knows an instance type's "
                     "nvidia.com/gpu only: the NodeOverlays of " + ", ".join(p.name for p in overlays) +
                     " add the shared, MPS or MIG resources their nodes advertise, so a pod asking for them makes "
                     "Karpenter launch a node. NodeOverlay is alpha (Karpenter v1.7+): run the controller with "
                     f"--feature-gates {karpenter.FEATURE_GATE}=true (or FEATURE_GATES), else the overlays do "
                     "nothing and these pools never scale out.", "karpenter-facts §a")
            for pool in pools:
                life = karpenter.settings(pool)
                note(f"Lifecycle of {pool.name}", f"consolidation {life.consolidation_policy} after "
                     f"{life.consolidate_after}; expireAfter {life.expire_after}" +
                     (" (expiry is forceful: budgets and karpenter.sh/do-not-disrupt do not hold it)"
                      if life.expire_after != "Never" else " (gpuconf's default: nodes are never replaced for age; "
                      "AMI and template changes still replace them by drift)") +
                     f"; capacity {', '.join(karpenter.capacity_types(pool)) or 'on-demand (Karpenter default)'}; "
                     f"volume {life.root_volume_gib} GiB" +
                     (f"; instance store {life.instance_store_policy}" if life.instance_store_policy else "") +
                     f"; at most {pool.pool.nodes} nodes.", "karpenter-facts §d, §e")
    elif cluster.distribution == "aks":
        aks = platforms.aks()
        if mode == "preinstalled":
            set_ = ", ".join(f"{k}={str(v).lower()}" for k, v in sorted(aks["preinstalled"]["values"].items()))
            note("Driver: AKS's", f"AKS's GPU image keeps its driver and toolkit: gpuconf sets {set_}. Not verified: CDI "
                 "with AKS's toolkit.", aks["source"])
        else:
            driver = aks["operatorDriver"]
            note("Driver: the operator's", f"Create the GPU node pools with {driver['nodePoolFlag']} ({driver['cli']}; "
                 f"earlier {driver['olderFlag']}): the setting applies only when a pool is created, so scale an "
                 "existing pool to zero and back. node-templates/<pool>.aks.sh has the command for pools selected by "
                 "agent pool.", aks["source"])
        for pool in plan.pools:
            series = platforms.aks_series(pool.model.id)
            if series:
                note(f"VM sizes for {pool.name}", "; ".join(
                    f"{s['series']}: {_plain(s['gpu'])}, {s['perGpu']} per GPU, {s['gpusPerVm']} per VM ({s['source']})"
                    for s in series) + ".", "platform-facts §3 (MS-VM)")
    elif cluster.distribution == "openshift":
        ocp = platforms.openshift()
        if openshift.olm(plan):
            bundle = platforms.olm_bundle(plan.chart_version)
            source, source_ns = openshift.catalog_source(plan)
            note("OLM", f"manifests/platform.yaml subscribes {plan.namespace} to {bundle['package']} (channel "
                 f"{bundle['channel']}, catalogue {source} in {source_ns}) with manual approval, starting at "
                 f"{openshift.starting_csv(plan)}: approve that InstallPlan. manifests/cluster-policy.yaml is the "
                 f"ClusterPolicy the chart would render from values.yaml; it applies once the CSV has installed its "
                 f"CRD. OpenShift {bundle['openshiftVersions']}.", ocp["source"])
            if openshift.nfd_operator_rendered(plan):
                nfd_source, nfd_source_ns = openshift.nfd_catalog_source(plan)
                note("NFD", f"manifests/platform.yaml installs Red Hat's Node Feature Discovery Operator (namespace "
                     f"{ocp['nfd']['namespace']}, package {openshift.NFD_OPERATOR['package']}, channel "
                     f"{openshift.NFD_OPERATOR['channel']}, catalogue {nfd_source} in {nfd_source_ns}, automatic "
                     f"approval) and its NodeFeatureDiscovery {openshift.NFD_INSTANCE_NAME}, which applies once the "
                     f"operator's CSV has installed its CRD; GPU nodes then carry {ocp['nfd']['presentLabel']}=true.",
                     "NVD:ocp-install-nfd; Red Hat OCP 4.20 NFD Operator (CLI)")
            else:
                note("NFD", f"Install Red Hat's Node Feature Discovery Operator ({ocp['nfd']['namespace']}) first "
                     "(the first acceptance step), or set spec.cluster.openshift.nfdOperator to have "
                     f"manifests/platform.yaml install it; manifests/platform.yaml holds its NodeFeatureDiscovery "
                     f"{openshift.NFD_INSTANCE_NAME}, and GPU nodes then carry {ocp['nfd']['presentLabel']}=true.",
                     "NVD:ocp-install-nfd")
        else:
            note("Helm on OpenShift", "NVIDIA documents only the OLM route for OpenShift; the chart's "
                 "platform.openshift is set for this Helm install.", ocp["source"])
        if plan.namespace != ocp["suggestedNamespace"]:
            label = ocp["monitoringLabel"]
            note("Monitoring", f"The namespace carries {label['key']}={label['value']}, which OpenShift's monitoring "
                 f"needs outside {ocp['suggestedNamespace']}.", ocp["source"])
    facts = platforms.runtime(cluster.distribution)
    runtime = cluster.container_runtime
    if runtime is not None and runtime.nri:
        nri = platforms.nri()
        note("NRI plugin mode", f"cdi.nriPluginEnabled=true: the toolkit does not touch containerd's config and no "
             f"nvidia RuntimeClass is created. Needs {nri['containerd']}" +
             (f" (RKE2 {nri['rke2']})" if cluster.distribution == "rke2" else "") + ".", nri["source"])
    elif facts is not None:
        env = ", ".join(f"{k}={v}" for k, v in facts["toolkitEnv"].items())
        note("Container runtime", f"gpuconf sets the toolkit's {env}" + (
            "; these paths come from community reports, not NVIDIA's documents" if facts["community"] else "") +
             ". NRI plugin mode (containerRuntime.nri) needs none of them.", _source(facts))
    words = {"gke": ("GKE",), "eks": ("EKS", "AL2023", "Bottlerocket"), "aks": ("AKS",), "k3s": ("k3s",),
             "rke2": ("RKE2",)}.get(cluster.distribution, ())
    unverified = [item for item in platforms.not_verified() if any(w in item for w in words)]
    if unverified:
        note("Not verified", " ".join(_plain(item) for item in unverified) +
             " gpuconf's output rests on none of them (an override can add what they would settle).",
             "platform-facts §6")
    return out

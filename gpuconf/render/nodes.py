"""Pools on the nodes: NodeFeatureRules, node-group templates, and per-pool NVIDIADriver resources."""

from __future__ import annotations

from .. import plan as P
from . import metadata
from .names import pool_taints

NFD_API = "nfd.k8s-sigs.io/v1alpha1"

# What a kubelet may set on its own Node with --node-labels: in the kubernetes.io and k8s.io namespaces only labels
# under kubelet.kubernetes.io and node.kubernetes.io and this set; with any other, the kubelet refuses to start
# ("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels"). Source: kubernetes/kubernetes,
# pkg/kubelet/apis/well_known_labels.go (IsKubeletLabel) and cmd/kubelet/app/options/options.go
# (ValidateKubeletFlags); the set as a current kubelet prints it in that error.
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_LABELS = frozenset((
    "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone", "kubernetes.io/arch",
    "kubernetes.io/hostname", "kubernetes.io/os", "node.kubernetes.io/instance-type", "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone"))


def kubelet_may_set(key: str) -> bool:
    """True when a kubelet may set label key on its own Node (--node-labels); see KUBELET_LABELS."""
    prefix, slash, _ = key.partition("/")
    if not slash or not any(prefix == d or prefix.endswith("." + d) for d in ("kubernetes.io", "k8s.io")):
        return True
    return key in KUBELET_LABELS or any(prefix == ns or prefix.endswith("." + ns) for ns in KUBELET_LABEL_NAMESPACES)



def node_feature_rules(plan: P.Plan) -> list[dict]:
    """A NodeFeatureRule per pool whose nodes NFD can recognise (GPU PCI id, hostname, DMI product)."""
    docs = []
    for pool in plan.pools:
        if not pool.nfd:
            continue
        # The PCI device is always part of the rule: a pool's nodes carry its GPU model, which is also what keeps
        # the rules of different models disjoint (validation rule GC303 assumes the same).
        device = {
            "vendor": {"op": "In", "value": [P.NVIDIA_PCI_VENDOR]},
            "device": {"op": "In", "value": list(pool.model.nfd_device_ids())},
        }
        vendors, subdevices = pool.model.nfd_subsystems()
        if subdevices:
            # A2 and A16 share one device id: only the subsystem (an attribute of NFD's pci.device feature,
            # nvidia-formats-facts §5) tells them apart.
            device["subsystem_vendor"] = {"op": "In", "value": list(vendors)}
            device["subsystem_device"] = {"op": "In", "value": list(subdevices)}
        features = [{"feature": "pci.device", "matchExpressions": device}]
        match = pool.pool.match
        if match.hostname:
            features.append({"feature": "system.name",
                             "matchExpressions": {"nodename": {"op": "InRegexp", "value": [match.hostname]}}})
        if match.dmi_product:
            features.append({"feature": "system.dmiid",
                             "matchExpressions": {"product_name": {"op": "In", "value": [match.dmi_product]}}})
        rule = {"name": f"gpuconf pool {pool.name}", "labels": dict(pool.labels), "matchFeatures": features}
        if pool.pool.taints:
            rule["taints"] = pool_taints(pool)  # applied only with nfd-master enableTaints, which the values set
        docs.append({
            "apiVersion": NFD_API,
            "kind": "NodeFeatureRule",
            "metadata": metadata(plan, f"gpuconf-pool-{pool.name}", labels={P.POOL_LABEL: pool.name}),
            "spec": {"rules": [rule]},
        })
    return docs


def nvidia_drivers(plan: P.Plan, values: dict) -> list[dict]:
    """One non-default NVIDIADriver per pool with its own driver version, selected by the pool label.

    Each one carries what the chart's NVIDIADriver/default carries (the same template, read from the merged chart
    values: repository, manager, probes, licensing, upgrade policy, ...), with the pool's version, selector and
    tolerations: in NVIDIADriver mode the operator applies each object's own settings and upgrade policy and ignores
    the ClusterPolicy's, so anything left out here would silently fall back to the operator's built-in defaults.
    The pool label has one value per node, so these selectors are disjoint by construction; the operator's own
    nvidia.com/gpu-operator.driver.owner label is never used (it is reserved, gpu-operator-facts §8).
    """
    if not plan.per_pool_drivers:
        return []
    from .chart import nvidiadriver_spec

    base = nvidiadriver_spec(values, read=lambda value, where: value)
    docs = []
    for pool in plan.pools:
        if pool.driver in ("cluster", "preinstalled"):
            continue
        body = {**base, "default": False, "version": _driver_version(plan, base, pool.driver),
                "nodeSelector": {P.POOL_LABEL: pool.name},
                # An NVIDIADriver's daemon set takes its own tolerations: the chart's defaults and this pool's taints.
                "tolerations": [*(dict(t) for t in plan.chart.shared_defaults["daemonsets"]["tolerations"]),
                                *(P.toleration(t) for t in pool.pool.taints)]}
        docs.append({
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "NVIDIADriver",
            "metadata": metadata(plan, f"gpuconf-{pool.name}", labels={P.POOL_LABEL: pool.name}),
            "spec": body,
        })
    return docs


def _driver_version(plan: P.Plan, spec: dict, version: str) -> str:
    """A pool's driver version, pinned as `<version>-<osTag>@<digest>` when the image lock has its one OS variant."""
    from .imagelock import driver_pinned, reference

    return driver_pinned(plan.image_lock, reference(spec["repository"], spec["image"], version), version)


def node_templates(plan: P.Plan) -> dict[str, dict | str]:
    """For pools recognised by node-group labels: the command that creates a GKE or AKS node pool with the pool's
    labels and taints, else the kubelet flags. Karpenter's pools get their labels from their NodePool
    (manifests/karpenter.yaml).

    Returns file name -> document (dict) or text.
    """
    from .karpenter import karpenter_pools
    from .platform import node_pool_scripts

    out: dict[str, dict | str] = {}
    scripts = node_pool_scripts(plan)
    by_pool = {name.rsplit(".", 2)[0]: name for name in scripts}
    karpenter = {p.name for p in karpenter_pools(plan)}
    for pool in plan.pools:
        if pool.nfd or pool.name in karpenter:
            continue
        script = by_pool.get(pool.name)
        if script is not None:
            out[script] = scripts[script]
            continue
        labels = {**pool.pool.match.node_labels, **pool.labels}
        settable = {k: v for k, v in sorted(labels.items()) if kubelet_may_set(k)}
        distribution = plan.intent.spec.cluster.distribution
        if distribution in RANCHER_CONFIG:
            out[f"{pool.name}.{distribution}-config.yaml"] = _rancher_config(pool, distribution, labels, settable)
            continue
        flags = ["--node-labels=" + ",".join(f"{k}={v}" for k, v in settable.items())]
        if pool.pool.taints:
            flags.append("--register-with-taints=" + ",".join(
                f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in pool.pool.taints))
        # A label the kubelet may not set would stop it from starting: it is left to a label after the node joins.
        after = [f"# {k}={v}: a kubelet refuses to start with it in --node-labels, so it is not there; once the "
                 f"node has joined: kubectl label node NODE {k}={v}\n" for k, v in sorted(labels.items())
                 if k not in settable]
        out[f"{pool.name}.kubelet.env"] = "".join(after) + f'KUBELET_EXTRA_ARGS="{" ".join(flags)}"\n'
    from .dra import host_mig_files

    out.update(host_mig_files(plan))  # MIG layouts made on the hosts (DRA, migPartitions: external)
    return out


#: RKE2 and k3s read node labels and taints from their own config file, not from KUBELET_EXTRA_ARGS: `node-label` and
#: `node-taint` in /etc/rancher/<dist>/config.yaml or a drop-in of config.yaml.d, where a key ending in "+" appends
#: to what earlier files set (docs.rke2.io/install/configuration, docs.k3s.io/installation/configuration; the agent
#: options --node-label/--node-taint: docs.rke2.io/reference/linux_agent_config). The agent applies the
#: --node-label values again after the kubelet starts (k3s-io/k3s pkg/agent/run.go), so a restart of the agent
#: labels a node that exists already.
RANCHER_CONFIG = {"rke2": ("/etc/rancher/rke2/config.yaml.d", "rke2-agent"),
                  "k3s": ("/etc/rancher/k3s/config.yaml.d", "k3s-agent")}


def _rancher_config(pool: P.PoolPlan, distribution: str, labels: dict[str, str], settable: dict[str, str]) -> str:
    """A pool's node labels and taints as an RKE2 or k3s config drop-in."""
    import json

    folder, service = RANCHER_CONFIG[distribution]
    head = (f"# Pool {pool.name}: copy to {folder}/50-gpuconf-{pool.name}.yaml on the pool's nodes, then restart "
            f"{service}\n# ({distribution.upper()} reads node-label and node-taint from its config file; the agent "
            "applies the labels again at every start, so nodes that exist already get them too).\n")
    body = head + "".join(
        f"# {k}={v}: a node may not set this label on itself (NodeRestriction), so it is not here; once the node has "
        f"joined: kubectl label node NODE {k}={v}\n" for k, v in sorted(labels.items()) if k not in settable)
    body += "node-label+:\n" + "".join(f"  - {json.dumps(f'{k}={v}')}\n" for k, v in settable.items())
    if pool.pool.taints:
        body += "node-taint+:\n" + "".join(
            f"  - {json.dumps(f'{t.key}={t.value}:{t.effect}' if t.value else f'{t.key}:{t.effect}')}\n"
            for t in pool.pool.taints)
    return body


def kubectl_label(labels: dict[str, str], nodes: list[str] | None = None, selector: dict[str, str] | None = None,
                  shown: int = 10) -> str:
    """The `kubectl label` command that puts labels on existing nodes now: by name (the first `shown`, then
    `...`), or by the label selector the nodes share; --overwrite so a value set by hand gives way."""
    import shlex

    if selector:
        target = ["nodes", "-l", ",".join(f"{k}={v}" for k, v in sorted(selector.items()))]
    else:
        names = list(nodes or ())
        target = ["node", *names[:shown]] + ([f"...({len(names) - shown} more)"] if len(names) > shown else [])
    pairs = [f"{k}={v}" for k, v in sorted(labels.items())]
    return " ".join(shlex.quote(word) if not word.startswith("...(") else word
                    for word in ["kubectl", "label", *target, "--overwrite", *pairs])


def label_sources(plan: P.Plan) -> dict[str, str]:
    """Pool name -> what puts the pool's labels on its nodes, as REPORT.md and the audit name it (all pools at
    once: the node templates are rendered one time, not once per pool)."""
    from .karpenter import KARPENTER_FILE, karpenter_pools, nodepool_label

    karpenter = {p.name for p in karpenter_pools(plan)}
    scripts = {name.rsplit(".", 2)[0]: name for name in node_templates(plan) if name.endswith(".sh")}
    out = {}
    for pool in plan.pools:
        if pool.nfd:
            out[pool.name] = f"NodeFeatureRule gpuconf-pool-{pool.name}"
        elif pool.name in karpenter:
            out[pool.name] = f"Karpenter NodePool {pool.pool.match.node_labels[nodepool_label()]} ({KARPENTER_FILE})"
        elif pool.name in scripts:
            out[pool.name] = f"node-pool command node-templates/{scripts[pool.name]}"
        elif plan.intent.spec.cluster.distribution in RANCHER_CONFIG:
            distribution = plan.intent.spec.cluster.distribution
            out[pool.name] = f"node template node-templates/{pool.name}.{distribution}-config.yaml"
        else:
            out[pool.name] = f"node template node-templates/{pool.name}.kubelet.env"
    return out


def label_source(plan: P.Plan, pool: P.PoolPlan) -> str:
    """What puts one pool's labels on its nodes (label_sources, for one pool)."""
    return label_sources(plan)[pool.name]

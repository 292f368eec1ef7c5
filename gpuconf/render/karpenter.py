"""Karpenter on EKS: a NodePool per pool selected by karpenter.sh/nodepool, and the EC2NodeClass they launch with.

A pool selected by `karpenter.sh/nodepool: NAME` is Karpenter's NodePool NAME: Karpenter sets that label on every node
it launches, and the NodePool's template carries the pool's other labels and its taints, so the nodes arrive with
everything gpuconf's NodeFeatureRules would otherwise add. The GPU comes from the instance type: the requirements name
the pool's model the way Karpenter's AWS provider labels instance types (karpenter.k8s.aws/instance-gpu-name and
-count, and the family where one GPU name covers several models). All facts come from gpuconf.platforms.
"""

from __future__ import annotations

import re
from typing import Any

from .. import platforms
from .. import plan as P
from ..intent.model import KarpenterPool
from . import metadata
from .names import pool_taints

KARPENTER_FILE = "manifests/karpenter.yaml"
NODEPOOL_API = "karpenter.sh/v1"
#: NodeOverlay: alpha since Karpenter v1.7, behind the feature gate NodeOverlay (karpenter-facts §a).
OVERLAY_API = "karpenter.sh/v1alpha1"
FEATURE_GATE = "NodeOverlay"
#: Labels Karpenter sets from the instance type or the NodePool (platform-facts §2a, the NodePool CRD's CEL rules):
#: a pool that selects on one becomes a requirement, never a template label.
CAPACITY_TYPE = "karpenter.sh/capacity-type"
REQUIREMENT_KEYS = (CAPACITY_TYPE, "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
                    "kubernetes.io/arch", "kubernetes.io/os")


def nodepool_label() -> str:
    """karpenter.sh/nodepool: the label Karpenter sets to the NodePool's name on its nodes."""
    return str(platforms.karpenter()["labels"]["nodePool"])


def karpenter_pools(plan: P.Plan) -> list[P.PoolPlan]:
    """The pools whose nodes a Karpenter NodePool gpuconf renders launches (EKS with Karpenter settings)."""
    return [p for p in plan.pools if P.karpenter_pool(plan.intent, p.pool)]


def restricted(key: str) -> bool:
    """A label a NodePool template may not set (karpenter.sh, karpenter.k8s.aws, kubernetes.io/hostname)."""
    domain = key.split("/", 1)[0] if "/" in key else ""
    return (domain.endswith("karpenter.sh") or domain in platforms.karpenter()["restrictedLabelDomains"]
            or key == "kubernetes.io/hostname")


def requirement_key(key: str) -> bool:
    """A match label Karpenter derives from the instance (it becomes a requirement of the NodePool)."""
    return key in REQUIREMENT_KEYS or key.startswith(tuple(f"{d}/" for d in platforms.karpenter()["restrictedLabelDomains"]))


def gpu_requirements(model_id: str, gpus: int) -> list[dict[str, Any]] | None:
    """Requirements that select instance types with `gpus` GPUs of the model, or None when EC2 has none."""
    facts = platforms.karpenter()
    labels = facts["labels"]
    offers = [o for o in platforms.ec2_offers(model_id) if gpus in o["gpuCounts"]]
    if not offers:
        return None
    names = sorted({o["gpuName"] for o in offers})
    out = [{"key": labels["gpuName"], "operator": "In", "values": names},
           {"key": labels["gpuCount"], "operator": "In", "values": [str(gpus)]}]
    # One GPU name for several models (a100 is A100-40GB on p4d and A100-80GB on p4de; v100 on p3 and p3dn): the
    # instance family tells them apart (platform-facts §2a, "Traps").
    shared = any(row["gpuName"] in names and row["model"] not in (model_id, None) for row in facts["instanceFamilies"])
    if shared:
        families = sorted(f for o in offers for f in o["families"])
        out.insert(1, {"key": labels["instanceFamily"], "operator": "In", "values": families})
    return out


#: Well-known labels and what EC2's GPU families allow for them (karpenter-facts §e; platform-facts §2: the AL2023
#: NVIDIA AMI lists g5g as its one arm64 GPU family of the instance-type table).
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
ARM64_FAMILIES = ("g5g",)


def requirements(model_id: str, gpus: int, match: dict[str, str],
                 capacity_types: list[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The NodePool's requirements: the GPU's, intersected with the Karpenter labels of the match and the capacity
    types; and the conflicts (match key -> why no EC2 instance type can satisfy it), empty when it can launch."""
    facts = platforms.karpenter()
    labels = facts["labels"]
    offers = [o for o in platforms.ec2_offers(model_id) if gpus in o["gpuCounts"]]
    families = sorted(f for o in offers for f in o["families"])
    out = gpu_requirements(model_id, gpus) or []
    by_key = {r["key"]: r for r in out}
    conflicts: dict[str, str] = {}
    for key, value in sorted(match.items()):
        if not requirement_key(key) or key == nodepool_label():
            continue
        if key in by_key:
            if value not in by_key[key]["values"]:
                conflicts[key] = (f"{key}: {value} contradicts the {model_id} x {gpus} requirement {key} In "
                                  f"[{', '.join(by_key[key]['values'])}]")
            else:
                by_key[key]["values"] = [value]
            continue
        if key == labels["instanceFamily"] and value not in families:
            conflicts[key] = f"{key}: {value} has no instance with {gpus} x {model_id} (families: {', '.join(families)})"
        elif key == INSTANCE_TYPE and value.split(".", 1)[0] not in families:
            conflicts[key] = (f"{key}: {value} is of family {value.split('.', 1)[0]}, which has no instance with "
                              f"{gpus} x {model_id} (families: {', '.join(families)})")
        elif key == INSTANCE_TYPE and platforms.ec2_instance_gpus(value) not in (None, gpus):
            sizes = sorted(f"{value.split('.', 1)[0]}.{size}" for size, count in
                           platforms.EC2_INSTANCE_GPUS[value.split(".", 1)[0]].items() if count == gpus)
            conflicts[key] = (f"{key}: {value} has {platforms.ec2_instance_gpus(value)} x {model_id}, the pool needs "
                              f"{gpus} per node (instance types with {gpus}: {', '.join(sizes)})")
        elif key == ARCH and families and not any((f in ARM64_FAMILIES) == (value == "arm64") for f in families):
            conflicts[key] = f"{key}: {value} is not the architecture of {', '.join(families)}"
        elif key == OS and value != "linux":
            conflicts[key] = f"{key}: {value}: the GPU Operator runs on Linux nodes only"
        elif key == CAPACITY_TYPE and value not in CAPACITY_TYPES:
            conflicts[key] = f"{key}: {value} is not a capacity type ({', '.join(CAPACITY_TYPES)})"
        elif key == CAPACITY_TYPE and capacity_types and value not in capacity_types:
            conflicts[key] = f"{key}: {value} contradicts the pool's karpenter.capacityTypes {capacity_types}"
        item = {"key": key, "operator": "In", "values": [value]}
        out.append(item)
        by_key[key] = item
    if capacity_types and CAPACITY_TYPE not in by_key:
        out.append({"key": CAPACITY_TYPE, "operator": "In", "values": sorted(capacity_types)})
    if OS not in by_key:
        out.append({"key": OS, "operator": "In", "values": ["linux"]})
    return out, conflicts


CAPACITY_TYPES = ("on-demand", "spot", "reserved")
#: A NodePool's name is a DNS-1123 subdomain that is also the value of karpenter.sh/nodepool on its nodes (a label
#: value: at most 63 characters); its EC2NodeClass and NodeOverlay share it.
NAME_PATTERN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def name_problem(name: str) -> str | None:
    """Why Karpenter (the API server) refuses this NodePool name, or None."""
    if len(name) > 63 or not NAME_PATTERN.fullmatch(name):
        return ("a NodePool name is a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.') of at most 63 "
                "characters, since it is also the karpenter.sh/nodepool label value of its nodes")
    return None


def settings(pool: P.PoolPlan) -> KarpenterPool:
    """The pool's Karpenter lifecycle settings (gpuconf's defaults when the pool has none)."""
    return pool.pool.karpenter if pool.pool.karpenter is not None else KarpenterPool()


def capacity_types(pool: P.PoolPlan) -> list[str]:
    """The capacity types the pool's nodes may have: its karpenter.capacityTypes, else its match's label."""
    match = pool.pool.match.node_labels
    return list(settings(pool).capacity_types) or ([match[CAPACITY_TYPE]] if CAPACITY_TYPE in match else [])


def overlay_capacity(per_node: dict[str, int]) -> dict[str, int]:
    """What the pool's nodes advertise that Karpenter's simulation does not know from the instance type: every
    resource but nvidia.com/gpu (renamed shared GPUs, MPS, MIG profiles). An overlay that replaced nvidia.com/gpu
    is undefined (karpenter-facts §a), so a replicated nvidia.com/gpu is left to the instance's count."""
    return {r: n for r, n in sorted(per_node.items()) if r != P.GPU}


def nodepool(plan: P.Plan, pool: P.PoolPlan) -> dict:
    """The NodePool of one pool: its labels and taints on every node, instance types with its GPU model, limits in
    nodes, and the lifecycle of its nodes."""
    match = pool.pool.match.node_labels
    name = match[nodepool_label()]
    lifecycle = settings(pool)
    labels = {k: v for k, v in match.items() if not restricted(k) and not requirement_key(k)}
    labels.update(pool.labels)
    reqs, _ = requirements(pool.model.id, pool.pool.gpus_per_node, match, list(lifecycle.capacity_types))
    node_class = platforms.karpenter()["nodeClass"]
    spec: dict[str, Any] = {
        "expireAfter": lifecycle.expire_after,
        "nodeClassRef": {"group": node_class["group"], "kind": node_class["kind"], "name": name},
        "requirements": reqs,
    }
    if lifecycle.termination_grace_period is not None:
        spec["terminationGracePeriod"] = lifecycle.termination_grace_period
    if pool.pool.taints:
        spec["taints"] = pool_taints(pool)
    disruption: dict[str, Any] = {"consolidateAfter": lifecycle.consolidate_after,
                                  "consolidationPolicy": lifecycle.consolidation_policy}
    if lifecycle.budgets:
        disruption["budgets"] = [b.model_dump(exclude_none=True, exclude_defaults=False, by_alias=True)
                                 for b in lifecycle.budgets]
        for budget in disruption["budgets"]:
            if not budget["reasons"]:
                del budget["reasons"]
    return {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": metadata(plan, name, labels={P.POOL_LABEL: pool.name}),
        "spec": {
            "disruption": disruption,
            # Karpenter counts a node by its Node capacity once initialized (time-slicing replicas included, 0 GPUs
            # under renameByDefault) but by the instance type's before (karpenter-facts §b): only nodes count the same
            # way in both, so the pool's maximum is a node count.
            "limits": {"nodes": str(pool.pool.nodes)},
            "template": {"metadata": {"labels": dict(sorted(labels.items()))}, "spec": spec},
        },
    }


def nodeoverlay(plan: P.Plan, pool: P.PoolPlan) -> dict | None:
    """The NodeOverlay that adds the pool's shared, MPS or MIG resources to its instance types in Karpenter's
    simulation, so a pod asking for them makes the NodePool launch a node; None when there is nothing to add."""
    capacity = overlay_capacity(pool.capacity.per_node)
    if not capacity or not settings(pool).node_overlays:
        return None
    name = pool.pool.match.node_labels[nodepool_label()]
    return {
        "apiVersion": OVERLAY_API,
        "kind": "NodeOverlay",
        "metadata": metadata(plan, name, labels={P.POOL_LABEL: pool.name}),
        "spec": {
            "capacity": {r: str(n) for r, n in capacity.items()},
            "requirements": [{"key": nodepool_label(), "operator": "In", "values": [name]}],
        },
    }


def ami_alias(plan: P.Plan) -> str:
    """al2023@latest, bottlerocket@v1.10.0, ...: Karpenter resolves the NVIDIA variant for GPU instance types."""
    eks = plan.intent.spec.cluster.eks
    return f"{P.eks_ami(plan.intent)}@{eks.karpenter.ami_version}"


def block_devices(plan: P.Plan, pool: P.PoolPlan) -> list[dict[str, Any]]:
    """The volumes of the pool's nodes: AL2023's root volume (default 20 GiB) or Bottlerocket's data volume (root
    4 GiB, data 20 GiB) at the pool's size, gp3 and encrypted like Karpenter's defaults (karpenter-facts §e)."""
    size = f"{settings(pool).root_volume_gib}Gi"
    if P.eks_ami(plan.intent) == "bottlerocket":
        return [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True, "volumeSize": "4Gi", "volumeType": "gp3"}},
                {"deviceName": "/dev/xvdb", "ebs": {"encrypted": True, "volumeSize": size, "volumeType": "gp3"}}]
    return [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True, "volumeSize": size, "volumeType": "gp3"},
             "rootVolume": True}]


def node_class(plan: P.Plan, pool: P.PoolPlan) -> dict:
    """The EC2NodeClass of one pool: AMI alias, node role, where to launch, its volumes and instance store."""
    settings_ = plan.intent.spec.cluster.eks.karpenter
    facts = platforms.karpenter()["nodeClass"]
    spec: dict[str, Any] = {"amiSelectorTerms": [{"alias": ami_alias(plan)}],
                            "blockDeviceMappings": block_devices(plan, pool)}
    if settings(pool).instance_store_policy is not None:
        spec["instanceStorePolicy"] = settings(pool).instance_store_policy
    if settings(pool).capacity_reservations:
        spec["capacityReservationSelectorTerms"] = [term.model_dump(by_alias=True, exclude_none=True)
                                                    for term in settings(pool).capacity_reservations]
    if settings_.role is not None:
        spec["role"] = settings_.role
    else:
        spec["instanceProfile"] = settings_.instance_profile
    spec["subnetSelectorTerms"] = [term.model_dump(exclude_none=True) for term in settings_.subnet_selector_terms]
    spec["securityGroupSelectorTerms"] = [term.model_dump(exclude_none=True)
                                          for term in settings_.security_group_selector_terms]
    return {
        "apiVersion": f"{facts['group']}/{facts['version']}",
        "kind": facts["kind"],
        "metadata": metadata(plan, pool.pool.match.node_labels[nodepool_label()], labels={P.POOL_LABEL: pool.name}),
        "spec": spec,
    }


def render(plan: P.Plan) -> list[dict]:
    """Per Karpenter pool its EC2NodeClass, NodePool and (for shared, MPS or MIG resources) NodeOverlay."""
    out: list[dict] = []
    for pool in karpenter_pools(plan):
        overlay = nodeoverlay(plan, pool)
        out += [node_class(plan, pool), nodepool(plan, pool), *([overlay] if overlay else [])]
    return out


# --- what the CRDs' CEL rules say, which their JSON Schemas cannot -----------------------------------------------


def problems(docs: list[dict]) -> list[str]:
    """The CEL rules of the NodePool and EC2NodeClass CRDs that gpuconf's output could break (platform-facts §2a-2b)."""
    out = []
    facts = platforms.karpenter()
    for doc in docs:
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        spec = doc["spec"]
        if doc["kind"] == "NodePool":
            for budget in spec.get("disruption", {}).get("budgets", []):
                if ("schedule" in budget) != ("duration" in budget):
                    out.append(f"{where}: a budget's schedule must be set with its duration")
            template = spec["template"]
            for key in template["metadata"].get("labels", {}):
                if restricted(key):
                    out.append(f"{where}: template label {key} is restricted")
            requirements = template["spec"]["requirements"]
            if len(requirements) > facts["maxRequirements"]:
                out.append(f"{where}: more than {facts['maxRequirements']} requirements")
            for req in requirements:
                if req["key"] in (nodepool_label(), "kubernetes.io/hostname") or (
                        req["key"].split("/")[0].endswith("karpenter.sh") and req["key"] != CAPACITY_TYPE):
                    out.append(f"{where}: requirement key {req['key']} is restricted")
                if req["operator"] == "In" and not req["values"]:
                    out.append(f"{where}: requirement {req['key']} In needs values")
                if req["operator"] in ("Gt", "Lt", "Gte", "Lte") and (
                        len(req["values"]) != 1 or not req["values"][0].isdigit()):
                    out.append(f"{where}: requirement {req['key']} {req['operator']} needs one integer >= 0")
        elif doc["kind"] == "NodeOverlay":
            for key in spec.get("capacity", {}):
                if key in ("cpu", "memory", "ephemeral-storage", "pods"):
                    out.append(f"{where}: capacity {key} is restricted (overlays add extended resources only)")
            for req in spec["requirements"]:
                if req["key"] == "kubernetes.io/hostname" or (
                        req["key"].split("/")[0].endswith("karpenter.sh") and req["key"] not in (CAPACITY_TYPE,
                                                                                                  nodepool_label())):
                    out.append(f"{where}: requirement key {req['key']} is restricted")
        elif doc["kind"] == facts["nodeClass"]["kind"]:
            if ("role" in spec) == ("instanceProfile" in spec):
                out.append(f"{where}: exactly one of role and instanceProfile")
            terms = spec["amiSelectorTerms"]
            aliases = [t["alias"] for t in terms if "alias" in t]
            if aliases and (len(terms) != 1 or len(terms[0]) != 1):
                out.append(f"{where}: an alias term must be the only term and have no other field")
            for alias in aliases:
                family, _, version = alias.partition("@")
                if family not in facts["amiAliasFamilies"] or not version or len(alias) > facts["aliasMaxLength"]:
                    out.append(f"{where}: alias {alias!r} is not family@version of at most "
                               f"{facts['aliasMaxLength']} characters")
            for field in ("subnetSelectorTerms", "securityGroupSelectorTerms"):
                for term in spec[field]:
                    if len(term) != 1 or any(not k or not v for k, v in term.get("tags", {}).items()):
                        out.append(f"{where}: {field} term {term} needs exactly one of its fields, tags non-empty")
    return out

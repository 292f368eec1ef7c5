"""Karpenter on EKS: a NodePool per pool selected by karpenter.sh/nodepool, and the EC2NodeClass they launch with.

A pool selected by `karpenter.sh/nodepool: NAME` is Karpenter's NodePool NAME: Karpenter sets that label on every node
it launches, and the NodePool's template carries the pool's other labels and its taints, so the nodes arrive with
everything gpuconf's NodeFeatureRules would otherwise add. The GPU comes from the instance type: the requirements name
the pool's model the way Karpenter's AWS provider labels instance types (karpenter.k8s.aws/instance-gpu-name and
-count, and the family where one GPU name covers several models). All facts come from gpuconf.platforms.
"""

from __future__ import annotations

from typing import Any

from .. import platforms
from .. import plan as P
from . import metadata
from .nodes import _taints

KARPENTER_FILE = "manifests/karpenter.yaml"
NODE_CLASS_NAME = "gpuconf-gpu"
NODEPOOL_API = "karpenter.sh/v1"
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
    cluster = plan.intent.spec.cluster
    if cluster.distribution != "eks" or cluster.eks is None or cluster.eks.karpenter is None:
        return []
    return [p for p in plan.pools if nodepool_label() in p.pool.match.node_labels]


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


def nodepool(plan: P.Plan, pool: P.PoolPlan) -> dict:
    """The NodePool of one pool: its labels and taints on every node, instance types with its GPU model."""
    match = pool.pool.match.node_labels
    name = match[nodepool_label()]
    labels = {k: v for k, v in match.items() if not restricted(k) and not requirement_key(k)}
    labels.update(pool.labels)
    requirements = gpu_requirements(pool.model.id, pool.pool.gpus_per_node) or []
    requirements += [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(match.items())
                     if requirement_key(k) and k != nodepool_label()]
    if not any(r["key"] == "kubernetes.io/os" for r in requirements):
        requirements.append({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]})
    node_class = platforms.karpenter()["nodeClass"]
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": node_class["group"], "kind": node_class["kind"], "name": NODE_CLASS_NAME},
        "requirements": requirements,
    }
    if pool.pool.taints:
        spec["taints"] = _taints(pool)
    return {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": metadata(plan, name, labels={P.POOL_LABEL: pool.name}),
        "spec": {
            "template": {"metadata": {"labels": dict(sorted(labels.items()))}, "spec": spec},
            # The pool's declared size: quotas, probes and the report count on it (platform-facts §2a, limits).
            "limits": {P.GPU: str(pool.pool.gpus_per_node * pool.pool.nodes)},
        },
    }


def ami_alias(plan: P.Plan) -> str:
    """al2023@latest, bottlerocket@v1.10.0, ...: Karpenter resolves the NVIDIA variant for GPU instance types."""
    eks = plan.intent.spec.cluster.eks
    return f"{P.eks_ami(plan.intent)}@{eks.karpenter.ami_version}"


def node_class(plan: P.Plan) -> dict:
    """The EC2NodeClass every GPU NodePool launches with: AMI alias, node role and where to launch."""
    settings = plan.intent.spec.cluster.eks.karpenter
    facts = platforms.karpenter()["nodeClass"]
    spec: dict[str, Any] = {"amiSelectorTerms": [{"alias": ami_alias(plan)}]}
    if settings.role is not None:
        spec["role"] = settings.role
    else:
        spec["instanceProfile"] = settings.instance_profile
    spec["subnetSelectorTerms"] = [term.model_dump(exclude_none=True) for term in settings.subnet_selector_terms]
    spec["securityGroupSelectorTerms"] = [term.model_dump(exclude_none=True)
                                          for term in settings.security_group_selector_terms]
    return {
        "apiVersion": f"{facts['group']}/{facts['version']}",
        "kind": facts["kind"],
        "metadata": metadata(plan, NODE_CLASS_NAME),
        "spec": spec,
    }


def render(plan: P.Plan) -> list[dict]:
    """The EC2NodeClass and one NodePool per Karpenter pool; nothing when no pool is Karpenter's."""
    pools = karpenter_pools(plan)
    if not pools:
        return []
    return [node_class(plan), *(nodepool(plan, pool) for pool in pools)]


# --- what the CRDs' CEL rules say, which their JSON Schemas cannot -----------------------------------------------


def problems(docs: list[dict]) -> list[str]:
    """The CEL rules of the NodePool and EC2NodeClass CRDs that gpuconf's output could break (platform-facts §2a-2b)."""
    out = []
    facts = platforms.karpenter()
    for doc in docs:
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        spec = doc["spec"]
        if doc["kind"] == "NodePool":
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

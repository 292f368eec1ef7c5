"""What Karpenter and the platforms' node pools do: a NodePool template, its node class or a node template that
changes replaces (drifts) the pool's nodes."""

from __future__ import annotations

from typing import Any

from ..output.treediff import DocumentDiff
from .folder import Deployed
from .model import Change, Impact, _names, _pool_of, _template_file, impact_kind


#: EC2NodeClass fields that drift dynamically: Karpenter resolves them again and replaces the nodes whose AMI, subnet
#: or security groups no longer match (karpenter-facts §d, "EC2NodeClass drift fields"; aws@v1.14.1 docs
#: disruption.md "Special Cases on Drift").
_EC2_DYNAMIC = ("spec.amiSelectorTerms", "spec.subnetSelectorTerms", "spec.securityGroupSelectorTerms")


#: EC2NodeClass spec fields left out of its hash that do not drift: the capacity reservations and the IP prefix count
#: (`hash:"ignore"` in aws@v1.14.1 pkg/apis/v1/ec2nodeclass.go:55,67; amiFamily is hashed by its resolved value,
#: :597-609). Every other spec field (blockDeviceMappings, userData, role, instanceProfile, tags, kubelet,
#: metadataOptions, instanceStorePolicy, detailedMonitoring, ...) is in the EC2NodeClass hash, the annotation
#: karpenter.k8s.aws/ec2nodeclass-hash (karpenter-facts §d): a change drifts every node launched from the class.
_EC2_UNHASHED = ("spec.capacityReservationSelectorTerms", "spec.ipPrefixCount")


def _requirements(data: Any) -> list[dict]:
    spec = ((data or {}).get("spec") or {}).get("template", {}).get("spec") or {}
    return [r for r in spec.get("requirements") or [] if isinstance(r, dict)]


def _allows(wide: dict, narrow: dict) -> bool:
    """Every label value narrow admits is admitted by wide (both on the same key)."""
    if wide == narrow:
        return True
    if (narrow.get("minValues") or 0) < (wide.get("minValues") or 0):
        return False
    ops = (wide.get("operator"), narrow.get("operator"))
    w, n = set(map(str, wide.get("values") or [])), set(map(str, narrow.get("values") or []))
    if ops == ("In", "In"):
        return n <= w
    if ops == ("NotIn", "NotIn"):
        return w <= n
    if ops == ("NotIn", "In"):
        return not (w & n)
    if ops[0] == "Exists":
        return ops[1] in ("In", "Exists")
    return False


def _widened(old: list[dict], new: list[dict]) -> bool:
    """The new requirements admit every node the old ones admitted: each new requirement is implied by an old one on
    its key. Widening a requirement drifts no node (karpenter-facts §d: `areRequirementsDrifted` checks compatibility,
    and widening `In [m5.large]` to `In [m5.large, m5.2xlarge]` does not drift)."""
    return all(any(o.get("key") == r.get("key") and _allows(r, o) for o in old) for r in new)


def _nodepool_impact(change: Change, doc: DocumentDiff) -> Impact | None:
    """What one changed NodePool does to its nodes (karpenter-facts §d)."""
    pool = change.pool_data(doc) or doc.name
    template = [c.path for c in doc.changes if c.path.startswith("spec.template")]
    # Karpenter hashes spec.template without its requirements (karpenter-facts §d: NodePool.Hash, drift.go):
    # a hashed field drifts every node; requirements drift only the nodes that no longer meet them.
    hashed = [p for p in template if not p.startswith("spec.template.spec.requirements")]
    # spec.disruption and spec.weight are behavioral fields, not drift (karpenter-facts §d); spec.limits is
    # capacity-change's.
    behaviour = [c.path for c in doc.changes if c.path.startswith(("spec.disruption", "spec.weight"))]
    old_reqs, new_reqs = _requirements(change.old.data(doc)), _requirements(change.new.data(doc))
    wider = template and not hashed and _widened(old_reqs, new_reqs)
    nodes = change.pools_nodes([pool], new=doc.status != "removed")
    if doc.status == "removed":
        what = (f"Karpenter NodePool {doc.name} is deleted: Karpenter drains and deletes every node it "
                f"launched for pool {pool}")
    elif hashed:
        what = (f"the template of Karpenter NodePool {doc.name} changes ({_names(hashed[:3])}): Karpenter "
                f"treats every node of pool {pool} as drifted and replaces it (drain, then a new node)")
    elif template and not wider:
        what = (f"the requirements of Karpenter NodePool {doc.name} narrow: Karpenter replaces the nodes of pool "
                f"{pool} that no longer meet them")
    elif wider or behaviour:
        parts = []
        if wider:
            parts.append(f"its requirements widen ({_names(_widening(old_reqs, new_reqs))}): every node still meets "
                         "them, so none drifts, and nodes launched from now on may take the new values")
        if behaviour:
            parts.append(f"its behavioral settings change ({_names(behaviour[:3])}): these are not drift, "
                         "so no node is replaced; they govern how Karpenter disrupts nodes from now on")
        return Impact("node-replacement", "none", [pool], f"Karpenter NodePool {doc.name}: " + "; ".join(parts),
                      "nothing to drain" + ("; check that the pool's workloads may run on the newly allowed nodes"
                                            if wider else ""), nodes=nodes, documents=[doc])
    else:
        return None
    return Impact("node-replacement", "disruptive", [pool], what,
                  "merge in a maintenance window, or first add a disruption budget to the NodePool "
                  "(`spec.disruption.budgets`, e.g. nodes: \"1\") so Karpenter replaces one node at a time",
                  nodes=nodes, documents=[doc])


def _admitted(requirement: dict | None) -> str:
    """A requirement's values, or its operator when it has none."""
    requirement = requirement or {}
    return ", ".join(map(str, requirement.get("values") or [])) or str(requirement.get("operator", "-"))


def _widening(old: list[dict], new: list[dict]) -> list[str]:
    """`key: old values -> new values` of each requirement that changed."""
    out = []
    for r in new:
        before = next((o for o in old if o.get("key") == r.get("key")), None)
        if before != r:
            out.append(f"{r.get('key')}: {_admitted(before)} -> {_admitted(r)}")
    out += [f"{o.get('key')} dropped" for o in old if not any(r.get("key") == o.get("key") for r in new)]
    return out


def _class_users(side: Deployed, name: str) -> list[str]:
    """The pools whose Karpenter NodePool launches its nodes from the EC2NodeClass `name`."""
    return sorted(_pool_of(np) or "?" for np in side.objects("NodePool")
                  if ((np.get("spec") or {}).get("template", {}).get("spec", {}).get("nodeClassRef") or {}).get(
                      "name") == name)


@impact_kind("node-replacement", "a Karpenter NodePool template, its node class or a node template changes")
def _node_replacement(change: Change) -> list[Impact]:
    impacts = [i for doc in change.documents(["NodePool"]) if (i := _nodepool_impact(change, doc))]
    for doc in change.documents(["EC2NodeClass"]):
        users = _class_users(change.old if doc.status == "removed" else change.new, doc.name)
        nodes = change.pools_nodes(users, new=doc.status != "removed")
        paths = [c.path for c in doc.changes]
        dynamic = [p for p in paths if p.startswith(_EC2_DYNAMIC)]
        static = [p for p in paths if p.startswith("spec.") and not p.startswith(_EC2_DYNAMIC + _EC2_UNHASHED)]
        if doc.status == "added" or doc.status == "changed" and not dynamic and not static:
            impacts.append(Impact("node-replacement", "none", users, (
                f"EC2NodeClass {doc.name} is added: only nodes Karpenter launches from it get it ({_names(users)})"
                if doc.status == "added" else
                f"EC2NodeClass {doc.name} changes in fields outside its hash that do not drift "
                f"({_names(paths[:3])}): only nodes Karpenter launches from now on get them ({_names(users)})"),
                "nothing to drain", nodes=nodes, documents=[doc]))
            continue
        if doc.status == "removed":
            # Its termination finalizer waits until no NodeClaim uses it (aws@v1.14.1
            # pkg/controllers/nodeclass/controller.go:214-234): the class goes after its nodes.
            kept = _class_users(change.new, doc.name)
            impacts.append(Impact(
                "node-replacement", "pending" if kept else "none", users,
                f"EC2NodeClass {doc.name} is deleted: it stays until the nodes launched from it (pools "
                f"{_names(users)}) are gone, which their NodePool's deletion does" + (
                    f"; NodePools of pools {_names(kept)} still name it, so Karpenter launches no node for them"
                    if kept else ""),
                "delete the NodePools that use it in the same change" if kept else "nothing to drain beyond the "
                "NodePool's deletion", nodes=nodes, documents=[doc]))
            continue
        if static:
            what = (f"EC2NodeClass {doc.name} changes ({_names(static[:3])}), so its hash "
                    "(karpenter.k8s.aws/ec2nodeclass-hash) changes: Karpenter treats the nodes of every NodePool "
                    f"that uses it ({_names(users)}) as drifted and replaces them (drain, then a new node)")
        else:
            what = (f"EC2NodeClass {doc.name} changes ({_names(dynamic[:3])}), whose AMI, subnets and security "
                    "groups Karpenter resolves again: Karpenter treats the nodes of every NodePool that uses it "
                    f"({_names(users)}) as drifted and replaces them (drain, then a new node)")
        impacts.append(Impact("node-replacement", "disruptive", users, what,
                              "merge in a maintenance window, with disruption budgets on the NodePools",
                              nodes=nodes, documents=[doc]))
    # Text templates (kubelet flags, node-pool commands) and YAML ones (RKE2's and k3s's config drop-ins).
    for doc in change.documents(["file", "document"], where=lambda d: d.file.startswith("node-templates/")):
        pool = next((p for p in {**change.old.pools, **change.new.pools} if _template_file(change, p) == doc.file),
                    None)
        if doc.status == "added" and pool not in change.old.pools:
            continue  # a new pool's template: capacity-change says so
        if doc.status == "changed" and all(_count_line(c.old) and _count_line(c.new) for c in doc.changes):
            continue  # only the node count of a node-pool command: capacity-change says so
        pools = [pool] if pool else []
        when = ("only when its agent starts (RKE2 and k3s apply node-label at every start), so the pool's existing "
                "nodes keep the old ones until the drop-in is copied and the agent restarted, or they are replaced"
                if doc.kind == "document" else "only when a node registers, so the pool's existing nodes keep the "
                "old ones until they are replaced")
        impacts.append(Impact("node-replacement", "disruptive", pools,
                              f"{doc.file} changes: the node template's settings (labels, taints, GPU driver) apply "
                              + when,
                              "apply the new template to the node group, then roll its nodes one at a time (drain, "
                              "replace) in a maintenance window",
                              nodes=change.pools_nodes(pools) if pools else None, documents=[doc]))
    return impacts


#: The node count of a node-pool command (gcloud's --num-nodes, az's --node-count) and its autoscaling range
#: (gcloud's --total-min/max-nodes, az's --min/max-count): scaling, not a node setting.
_COUNT_FLAGS = ("--num-nodes ", "--node-count ", "--total-min-nodes ", "--total-max-nodes ", "--min-count ",
                "--max-count ")


def _count_line(line: Any) -> bool:
    return isinstance(line, str) and line.strip().startswith(_COUNT_FLAGS)

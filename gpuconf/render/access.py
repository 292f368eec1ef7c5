"""RBAC for the intent's roles: GPU admins, team developers, observers, and the auditors `gpuconf audit` runs as.

Every verb, resource and API group is listed explicitly: `*` never appears, so a new resource type or verb
never widens a grant silently.
"""

from __future__ import annotations

from .. import plan as P
from . import metadata
from .names import ROLE_LABEL, TEAM_LABEL

RBAC_GROUP = "rbac.authorization.k8s.io"

ADMIN = "gpuconf-gpu-admin"
DEVELOPER = "gpuconf-gpu-developer"
OBSERVER = "gpuconf-gpu-observer"
AUDITOR = "gpuconf-gpu-auditor"

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
EDIT = ("create", "delete", "get", "list", "patch", "update", "watch")


def rule(groups: tuple[str, ...], resources: tuple[str, ...], verbs: tuple[str, ...],
         names: tuple[str, ...] = ()) -> dict:
    """One PolicyRule with sorted lists."""
    out: dict = {"apiGroups": sorted(groups), "resources": sorted(resources), "verbs": sorted(set(verbs))}
    if names:
        out["resourceNames"] = sorted(names)
    return out


#: Cluster-wide accelerator settings: the ClusterPolicy, per-pool NVIDIADrivers, NFD rules that label the pools,
#: and node labels (pool, device-plugin and MIG config selection are node labels, gpu-operator-facts §7).
ADMIN_CLUSTER_RULES = (
    rule(("",), ("nodes",), ("get", "list", "patch", "update", "watch")),
    rule(("nfd.k8s-sigs.io",), ("nodefeaturerules",), WRITE),
    rule(("nvidia.com",), ("clusterpolicies", "nvidiadrivers"), WRITE),
)

#: Running GPU workloads in the team's own namespaces. exec and port-forward are granted (a team debugging its
#: own notebooks and jobs), with both verbs: WebSocket requests were authorized as `get` before Kubernetes 1.35 and
#: need `create` since (kubernetes/kubernetes#134577, feature gate AuthorizePodWebsocketUpgradeCreatePermission).
#: Not granted: secrets, roles and bindings, resourcequotas/limitranges writes, networkpolicies, pods/attach,
#: persistentvolumeclaims (storage is provisioned by the platform team).
DEVELOPER_RULES = (
    rule(("",), ("configmaps", "services"), EDIT),
    rule(("",), ("events",), READ),
    rule(("",), ("limitranges", "resourcequotas"), READ),
    rule(("",), ("pods",), WRITE),
    rule(("",), ("pods/exec", "pods/portforward"), ("create", "get")),
    rule(("",), ("pods/log",), READ),
    rule(("apps",), ("deployments", "statefulsets"), EDIT),
    rule(("apps",), ("deployments/scale", "statefulsets/scale"), ("get", "patch", "update")),
    rule(("apps",), ("replicasets",), READ),
    rule(("batch",), ("cronjobs", "jobs"), EDIT),
    rule(("events.k8s.io",), ("events",), READ),
)

#: Read-only view of accelerator state across the cluster.
OBSERVER_CLUSTER_RULES = (
    rule(("",), ("nodes",), READ),
    rule(("nfd.k8s-sigs.io",), ("nodefeaturerules",), READ),
    rule(("nvidia.com",), ("clusterpolicies", "nvidiadrivers"), READ),
)

#: Read-only view of the operator's namespace: its pods (operands, validators, probes), the DCGM exporter's
#: Service and endpoints, and the scrape and alert objects. No pods/log, no secrets, no configmaps.
OBSERVER_NAMESPACE_RULES = (
    rule(("",), ("endpoints", "pods", "services"), READ),
    rule(("discovery.k8s.io",), ("endpointslices",), READ),
    rule(("monitoring.coreos.com",), ("prometheusrules", "servicemonitors"), READ),
)


#: What `gpuconf audit --kubeconfig` reads, and nothing more (cluster/nodesource.py, slices.py, operandsource.py): it
#: lists the nodes, the pods (the operator's, the DRA driver release's where NVLink pools run it beside the
#: operator, and the Pending ones of every namespace), the Warning events (the operator namespace's and the nodes',
#: which live in `default`), on a DRA cluster or with NVLink pools the ResourceSlices; and it reads
#: the log of an operand's failing container, in the operator's namespace only. `list` alone: the audit never asks
#: for one object by name, and watches nothing.
AUDITOR_CLUSTER_RULES = (
    rule(("",), ("events", "nodes", "pods"), ("list",)),
)
AUDITOR_DRA_RULES = (rule(("resource.k8s.io",), ("resourceslices",), ("list",)),)
AUDITOR_NAMESPACE_RULES = (rule(("",), ("pods/log",), ("get",)),)


#: With Kueue: what Kueue's own batch-user role grants (config/components/rbac, localqueue- and workload-viewer):
#: developers see their namespace's LocalQueue and the Workloads Kueue creates for their Jobs. A Job names its queue
#: with a label (RBAC cannot restrict label values): it reaches only a LocalQueue of its own namespace, and the
#: team's ClusterQueue selects only the team's namespaces.
DEVELOPER_KUEUE_RULES = (
    rule(("kueue.x-k8s.io",), ("localqueues", "workloads"), READ),
    rule(("kueue.x-k8s.io",), ("localqueues/status", "workloads/status"), ("get",)),
)

#: With Kueue: observers read the queues (quotas, pending and admitted counts), the flavors and the priority
#: classes; not the Workloads, which carry the teams' pod templates.
OBSERVER_KUEUE_RULES = (
    rule(("kueue.x-k8s.io",), ("clusterqueues", "localqueues", "resourceflavors", "workloadpriorityclasses"), READ),
    rule(("kueue.x-k8s.io",), ("clusterqueues/status", "localqueues/status"), ("get",)),
)


def subject(text: str, namespace: str | None = None) -> dict:
    """An RBAC subject from `group:NAME`, `user:NAME` or `serviceaccount:[NAMESPACE:]NAME`.

    A service account without a namespace lives in the binding's namespace; a cluster-wide binding has none to
    offer, so it needs the namespace spelled out.
    """
    kind, _, rest = text.partition(":")
    if kind == "group":
        return {"apiGroup": RBAC_GROUP, "kind": "Group", "name": rest}
    if kind == "user":
        return {"apiGroup": RBAC_GROUP, "kind": "User", "name": rest}
    if kind == "serviceaccount":
        ns, sep, name = rest.partition(":")
        if not sep:
            ns, name = namespace, rest
        if not ns:
            raise ValueError(f"subject {text!r}: a cluster-wide binding needs serviceaccount:NAMESPACE:NAME")
        return {"kind": "ServiceAccount", "name": name, "namespace": ns}
    raise ValueError(f"unknown subject kind in {text!r}")


def subjects(texts, namespace: str | None = None) -> list[dict]:
    """Subjects, deduplicated and in a stable order."""
    unique = {}
    for text in texts:
        s = subject(text, namespace)
        unique[(s["kind"], s.get("namespace", ""), s["name"])] = s
    return [unique[k] for k in sorted(unique)]


def render(plan: P.Plan) -> list[dict]:
    """Roles whenever the intent has an access section; a binding only where it has subjects."""
    access = plan.intent.spec.access
    if access is None:
        return []
    docs: list[dict] = []
    docs += _admins(plan, access.admins)
    docs += _developers(plan, access.developers)
    docs += _observers(plan, access.observers)
    docs += _auditors(plan, access.auditors)
    return docs


def _role(plan: P.Plan, kind: str, name: str, rules, namespace: str | None = None, labels=None) -> dict:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": kind,
        "metadata": metadata(plan, name, namespace, labels),
        "rules": [dict(r) for r in rules],
    }


def _binding(plan: P.Plan, kind: str, name: str, role_kind: str, who: list[dict], namespace: str | None = None,
             labels=None) -> dict:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": kind,
        "metadata": metadata(plan, name, namespace, labels),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": name},
        "subjects": who,
    }


def _admins(plan: P.Plan, admins) -> list[dict]:
    labels = {ROLE_LABEL: "admin"}
    # Only gpuconf's own ConfigMaps, by name. resourceNames cannot restrict create, so there is none: the
    # ConfigMaps come from the GitOps repo. list/watch by name need a metadata.name field selector.
    names = [P.DEVICE_PLUGIN_CONFIGMAP]
    if any(p.mig_key is not None for p in plan.pools):
        names.append(P.MIG_CONFIGMAP)  # rendered only when a pool runs on a MIG-capable model
    config_rules = (rule(("",), ("configmaps",), ("get", "list", "patch", "update", "watch"), tuple(names)),)
    return _cluster_and_operator_roles(plan, ADMIN, ADMIN_CLUSTER_RULES, config_rules, admins, labels)


def _developers(plan: P.Plan, developers) -> list[dict]:
    """Per team and namespace a Role and, with subjects, a RoleBinding; never a cluster-wide grant."""
    docs = []
    rules = DEVELOPER_RULES + (DEVELOPER_KUEUE_RULES if P.kueue_settings(plan.intent) is not None else ())
    for team in sorted(plan.intent.spec.teams, key=lambda t: t.name):
        labels = {ROLE_LABEL: "developer", TEAM_LABEL: team.name}
        who = developers.get(team.name, [])
        for ns in sorted(team.namespaces):
            docs.append(_role(plan, "Role", DEVELOPER, rules, ns, labels))
            if who:
                docs.append(_binding(plan, "RoleBinding", DEVELOPER, "Role", subjects(who, ns), ns, labels))
    return docs


def _observers(plan: P.Plan, observers) -> list[dict]:
    cluster_rules = OBSERVER_CLUSTER_RULES + (OBSERVER_KUEUE_RULES if P.kueue_settings(plan.intent) is not None
                                              else ())
    return _cluster_and_operator_roles(plan, OBSERVER, cluster_rules, OBSERVER_NAMESPACE_RULES, observers,
                                       {ROLE_LABEL: "observer"})


def _auditors(plan: P.Plan, auditors) -> list[dict]:
    # ResourceSlices: the GPU driver's on a DRA cluster, the ComputeDomain driver's where pools are NVLink trays.
    slices = plan.intent.spec.cluster.allocation == "dra" or any(p.pool.nvlink is not None for p in plan.pools)
    cluster_rules = AUDITOR_CLUSTER_RULES + (AUDITOR_DRA_RULES if slices else ())
    return _cluster_and_operator_roles(plan, AUDITOR, cluster_rules, AUDITOR_NAMESPACE_RULES, auditors,
                                       {ROLE_LABEL: "auditor"})


def _cluster_and_operator_roles(plan: P.Plan, name: str, cluster_rules, namespace_rules, who, labels) -> list[dict]:
    """A ClusterRole and a Role in the operator namespace under one name, both bound to `who` when there is anyone."""
    docs = [
        _role(plan, "ClusterRole", name, cluster_rules, labels=labels),
        _role(plan, "Role", name, namespace_rules, plan.namespace, labels),
    ]
    if who:
        docs.append(_binding(plan, "ClusterRoleBinding", name, "ClusterRole", subjects(who), labels=labels))
        docs.append(_binding(plan, "RoleBinding", name, "Role", subjects(who, plan.namespace), plan.namespace, labels))
    return docs

"""Names the renderers share: labels, queue, probe and claim names, and a pool's taints as node objects.

The lowest module of render/: it imports no renderer, so the renderers that agree on a name (the probe Job that
Kueue admits and DRA gives a claim, the NodePool and the node template that carry a pool's taints) import it from
here instead of from each other.
"""

from __future__ import annotations

import hashlib

from .. import plan as P

#: The namespace label that says which team owns a namespace (quotas, roles and queues select on it).
TEAM_LABEL = "gpuconf.dev/team"
#: The label of a ClusterRole or RoleBinding that says which access role it serves.
ROLE_LABEL = "gpuconf.dev/role"
#: The namespace label that carries a team's priority tier.
PRIORITY_LABEL = "gpuconf.dev/priority"

#: The label a Job names its Kueue LocalQueue with.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: The label a Job names its Kueue WorkloadPriorityClass with.
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
#: The ClusterQueue and LocalQueue of the acceptance probes (no team can be named so: team queues carry a prefix).
ACCEPTANCE = "gpuconf-acceptance"

#: The prefix of every acceptance probe Job.
PROBE_PREFIX = "gpuconf-probe-"
#: What the probe's container requests besides its unit of the pool's resource (the acceptance queue of Kueue
#: covers exactly this much per pool).
PROBE_REQUESTS = {"cpu": "10m", "memory": "64Mi"}
#: The request name of a DRA ResourceClaim (template) gpuconf renders.
CLAIM_REQUEST = "gpu"


def job_name(pool: str) -> str:
    """gpuconf-probe-<pool>, shortened with a hash when longer than a DNS-1123 label (63)."""
    name = PROBE_PREFIX + pool
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(pool.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-')}-{digest}"


def probe_template_name(pool: P.PoolPlan) -> str:
    """The claim template of a pool's acceptance probe (in the operator's namespace)."""
    return job_name(pool.name)


def pool_taints(pool: P.PoolPlan) -> list[dict]:
    """The pool's taints as node taint objects (key, effect, value when set), in the intent's order."""
    out = []
    for t in pool.pool.taints:
        taint = {"key": t.key, "effect": t.effect}
        if t.value:
            taint["value"] = t.value
        out.append(taint)
    return out

#: The pod-template annotation that binds a Kueue pod set to one domain of a topology level (Kueue v0.19.2
#: apis/kueue/v1beta2/topology_types.go PodSetRequiredTopologyAnnotation), and the node level of a topology.
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
HOSTNAME_LABEL = "kubernetes.io/hostname"

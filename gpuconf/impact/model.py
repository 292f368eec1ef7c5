"""The impact layer's common ground: severities, the labels it reads, one Impact, the Change every consumer
reads (the two sides and their document diff), the plan object and the registry of impact kinds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..output.treediff import DocumentDiff, TreeDiff
from .folder import Deployed

#: Severities in rising order: `--fail-on S` fails on S and everything after it.
SEVERITIES = ("none", "restart", "pending", "disruptive")

POOL_LABEL = "gpuconf.dev/pool"
PLUGIN_LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"
PROBE_COMPONENT = "acceptance-probe"

#: How many node and pod names an impact's JSON lists (its nodes and pods give the totals); text shows NAMES_SHOWN.
NAMES_LISTED = 50
NAMES_SHOWN = 5

#: Pool driver modes of report.json, by who installs the driver.
DRIVER_OWNER = {"cluster": "ClusterPolicy", "wave": "NVIDIADriver", "pool": "NVIDIADriver",
                "preinstalled": "host"}


@dataclass
class Impact:
    """One thing the sync does to the running cluster."""

    kind: str
    severity: str
    pools: list[str]
    message: str
    safe: str
    resources: list[str] = field(default_factory=list)
    nodes: int | None = None
    nodes_from: str | None = None  # "intent" (declared counts) or "cluster" (nodes carrying the pool label)
    pods: int | None = None  # running pods with GPU requests on those nodes (with --pods)
    documents: list[DocumentDiff] = field(default_factory=list)  # the changed documents this explains
    node_names: list[str] = field(default_factory=list)  # the nodes counted in the cluster (with --nodes)
    pod_names: list[str] = field(default_factory=list)  # the pods counted, namespace/name (with --pods)
    #: a first-sync change that an import's draft chose itself, not the installation (impact.installation.surprises)
    drafted: bool = False
    #: the maintenance window this impact needs, by the roll-out formula (a driver upgrade), or None
    minutes: int | None = None
    #: how minutes was reckoned (the upgrade policy, per object or over all nodes), for the counted nodes to reckon
    #: it again (impact.workloads.count_live)
    window: tuple[dict, bool] | None = None

    def as_dict(self) -> dict:
        """The JSON form: nodes and pods are the totals, nodeNames and podNames the first NAMES_LISTED of them."""
        return {"kind": self.kind, "severity": self.severity, "pools": self.pools, "nodes": self.nodes,
                "nodesFrom": self.nodes_from, "pods": self.pods, "resources": self.resources,
                "nodeNames": self.node_names[:NAMES_LISTED], "podNames": self.pod_names[:NAMES_LISTED],
                "message": self.message, "safe": self.safe,
                "documents": [f"{d.file}: {d.title}" for d in self.documents]}


def _pool_of(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    labels = (data.get("metadata") or {}).get("labels") or {}
    return labels.get(POOL_LABEL)


def _labelled_by(pool: dict) -> str:
    """How a pool's nodes get their labels: nfd (a NodeFeatureRule), karpenter (a NodePool template) or template
    (kubelet flags or a node-pool command, read once when a node registers)."""
    by = str(pool.get("labelledBy") or "")
    if by.startswith("NodeFeatureRule"):
        return "nfd"
    if by.startswith("Karpenter"):
        return "karpenter"
    return "template"


def _label_source(pool: dict) -> str:
    """What gives a platform-labelled pool's nodes their labels and taints, in words."""
    by = _labelled_by(pool)
    if by == "karpenter":
        return "Karpenter NodePool"
    return "node-pool command" if str(pool.get("labelledBy") or "").startswith("node-pool command") else "node template"


class Change:
    """The old and the new folder, their document diff, and what the impacts found so far explain."""

    def __init__(self, old: dict[str, str], new: dict[str, str], diff: TreeDiff):
        self.old = Deployed(old, diff.old_documents or None)
        self.new = Deployed(new, diff.new_documents or None)
        self.diff = diff
        self.values_claimed: set[str] = set()
        self.impacts: list[Impact] = []

    def pool_data(self, doc: DocumentDiff) -> str | None:
        """The pool a changed document belongs to (its gpuconf.dev/pool label), on either side."""
        return _pool_of(self.new.data(doc)) or _pool_of(self.old.data(doc))

    def documents(self, kinds: Iterable[str] | None = None, pools: Iterable[str] | None = None,
                  where: Callable[[DocumentDiff], bool] | None = None) -> list[DocumentDiff]:
        """The changed documents of these kinds, of these pools, that satisfy where."""
        kinds = set(kinds) if kinds is not None else None
        pools = set(pools) if pools is not None else None
        return [d for d in self.diff.documents
                if (kinds is None or d.kind in kinds) and (pools is None or self.pool_data(d) in pools)
                and (where is None or where(d))]

    def values_paths(self, *prefixes: str) -> list[DocumentDiff]:
        """Claim the changed values.yaml paths under these prefixes; the values document when any changed."""
        found = self.values_changes(*prefixes)
        self.values_claimed.update(found)
        return [d for d in self.diff.documents if d.kind == "values"] if found else []

    def values_changes(self, *prefixes: str) -> list[str]:
        """The changed values.yaml paths under these prefixes (or above them: a map added or removed whole)."""
        values = [d for d in self.diff.documents if d.kind == "values"]
        return [c.path for d in values for c in d.changes
                if c.path.startswith(prefixes) or any(p.startswith(c.path + ".") for p in prefixes if p)]

    def pools_nodes(self, pools: Iterable[str], new: bool = True) -> int | None:
        """Declared nodes of these pools (the side that has them)."""
        total, known = 0, False
        for name in pools:
            pool = (self.new if new else self.old).pools.get(name) or self.old.pools.get(name) or {}
            if isinstance(pool.get("nodes"), int):
                total += pool["nodes"]
                known = True
        return total if known else None

    def both(self) -> list[str]:
        """Pools in the old and the new folder, in the new one's order."""
        return [p for p in self.new.pools if p in self.old.pools]


#: The impact kinds the consumers register: name -> (what it detects, detector); planner.ORDER runs them.
KINDS: dict[str, tuple[str, Callable[[Change], list[Impact]]]] = {}


def impact_kind(name: str, detects: str):
    """Register a detector of one impact kind (see the package's docstring); the planner runs it in its ORDER."""

    def register(fn: Callable[[Change], list[Impact]]):
        KINDS[name] = (detects, fn)
        return fn

    return register


def _names(items: Iterable[str]) -> str:
    items = list(items)
    return ", ".join(items) if items else "none"


def each_node(pools: str | list[str], *steps: str) -> str:
    """A shell loop that runs steps on the nodes of one or more pools one at a time (each step may use "$n", the
    node's name): the way to take a pool's nodes down one by one (`kubectl drain -l` cordons all of them at once).
    The loop stops at the first step that fails, leaving that node as it is (cordoned) for a look."""
    names = [pools] if isinstance(pools, str) else list(pools)
    selector = f"{POOL_LABEL}={names[0]}" if len(names) == 1 else f"'{POOL_LABEL} in ({','.join(names)})'"
    return (f"for n in $(kubectl get nodes -l {selector} -o jsonpath='{{.items[*].metadata.name}}'); do "
            + " && ".join(steps) + " || break; done")


#: The drain step of a loop over nodes: the operator's DaemonSets stay, emptyDir volumes go with their pods.
DRAIN = 'kubectl drain "$n" --ignore-daemonsets --delete-emptydir-data'
UNCORDON = 'kubectl uncordon "$n"'


def _node_count(n: int | None) -> str:
    return "" if n is None else f" ({n} node{'s' if n != 1 else ''})"


def _driver_owner(pool: dict) -> str:
    return DRIVER_OWNER.get((pool.get("driver") or {}).get("mode"), "unknown")


def _template_file(change: Change, pool: str) -> str | None:
    for side in (change.new, change.old):
        by = str((side.pools.get(pool) or {}).get("labelledBy") or "")
        for word in by.split():
            if word.startswith("node-templates/"):
                return word.strip("()")
    return None


def _short(paths: list[str], most: int = 4) -> list[str]:
    """The first few of a list of field paths, and how many more."""
    return paths[:most] + ([f"{len(paths) - most} more"] if len(paths) > most else [])


def _per_node(resources: dict[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(resources.items())) or "nothing"


def _taints(pool: dict) -> set[str]:
    return set(pool.get("taints") or [])


@dataclass
class ImpactPlan:
    """Every impact of syncing the new render over the deployed folder."""

    impacts: list[Impact]
    nodes_source: str | None = None
    pods_source: str | None = None
    #: a chart move's CRDs, NFD subchart, flipped defaults and removed keys (impact.chart.chart_section), or None
    chart: dict[str, Any] | None = None
    #: notes about the plan as a whole: the order of disruptive impacts that take down the same nodes
    notes: list[str] = field(default_factory=list)

    @property
    def worst(self) -> str:
        """The highest severity of any impact."""
        return max((i.severity for i in self.impacts), key=SEVERITIES.index, default="none")

    def fails(self, threshold: str | None) -> bool:
        """True when an impact of threshold's severity or worse is present."""
        return threshold is not None and any(
            SEVERITIES.index(i.severity) >= SEVERITIES.index(threshold) for i in self.impacts)

    def as_list(self) -> list[dict]:
        """The JSON form of the impacts."""
        return [i.as_dict() for i in self.impacts]

"""Import: draft an intent from the nodes of a cluster that runs the GPU Operator without gpuconf (or with it).

What the nodes tell, and how it is read:
  - pools: GPU nodes grouped by GPU model (GFD product label, mapped to the catalogue by nodefacts.model_for_product),
    GPUs per node, sharing, taints and driver kind; a group's name is its gpuconf.dev/pool label when a previous
    render set one, else its node group (NODE_GROUP_LABELS: EKS, GKE, AKS, Karpenter, Cluster API), else its model;
  - match: the node-group label when there is one, else `pciDevice: true`; two groups of one model without a node
    group are told apart by their node names' common prefix (`hostname: ^prefix`), or merged with a comment;
  - sharing: MIG from the mixed strategy's nvidia.com/mig-<profile>.count labels (layout = count / GPUs) or from the
    single strategy's "<model>-MIG-<profile>" product (assumed the all-<profile> preset: count / max instances);
    otherwise GFD's sharing-strategy and replicas labels (time-slicing or MPS), renamed when the node advertises
    nvidia.com/gpu.shared; exclusive when none;
  - driver: preinstalled where the operator's driver is switched off (gpu.deploy.driver=false), else the version
    GFD reports (the most common one for the cluster, a pool's own when it differs);
  - cluster: Kubernetes minor from the kubelets, distribution from provider labels.
Everything else (chart version, teams, access, monitoring) is not on a node: the draft says so in comments.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .. import catalog
from . import nodefacts as N
from ..intent.model import KUBERNETES_VERSIONS

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: Taints the kubelet, the control plane, autoscalers and drains set: never a pool's own.
SYSTEM_TAINT_PREFIXES = ("node.kubernetes.io/", "node-role.kubernetes.io/", "node.cloudprovider.kubernetes.io/",
                         "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler",
                         "karpenter.sh/disrupted", "karpenter.sh/unregistered")


@dataclass(frozen=True)
class Sharing:
    """A sharing profile read off a node: kind plus its parameters (hashable, so nodes group by it)."""

    kind: str  # exclusive | time-slicing | mps | mig
    replicas: int = 1
    rename: bool = False
    layout: tuple[tuple[str, int], ...] = ()
    note: str = ""  # what had to be assumed

    def profile(self, model: catalog.GpuModel) -> dict:
        """The intent's sharingProfiles entry."""
        if self.kind == "time-slicing":
            return {"timeSlicing": {"replicas": self.replicas, **({"renameByDefault": True} if self.rename else {})}}
        if self.kind == "mps":
            return {"mps": {"replicas": self.replicas, **({} if self.rename else {"renameByDefault": False})}}
        if self.kind == "mig":
            preset = self.preset(model)
            out: dict = {"mig": {"preset": preset} if preset else {"layout": dict(self.layout)}}
            if self.replicas > 1:
                out["timeSlicing"] = {"replicas": self.replicas, **({"renameByDefault": True} if self.rename else {})}
            return out
        return {"exclusive": {}}

    def preset(self, model: catalog.GpuModel) -> str | None:
        """The mig-manager preset (all-balanced, all-<profile>) the MIG layout equals, if any."""
        layout = dict(self.layout)
        return next((name for name, p in catalog.mig_presets(model).items() if dict(p) == layout), None)

    def name(self, model: catalog.GpuModel) -> str:
        """A profile name (DNS-1123 label)."""
        if self.kind == "exclusive":
            return "exclusive"
        if self.kind == "time-slicing":
            return f"ts-x{self.replicas}" + ("-shared" if self.rename else "")  # -shared: nvidia.com/gpu.shared
        if self.kind == "mps":
            return f"mps-x{self.replicas}" + ("" if self.rename else "-gpu")  # MPS renames by default
        preset = self.preset(model)
        parts = preset or "-".join(f"{n}x{p}" for p, n in self.layout)
        name = _dns(f"mig-{parts}") + (f"-ts-x{self.replicas}" if self.replicas > 1 else "")
        return name[:63].rstrip("-")


@dataclass
class Group:
    """GPU nodes that look alike: a pool of the draft."""

    model: str
    gpus: int | None
    sharing: Sharing
    preinstalled: bool
    taints: tuple[tuple[str, str, str], ...]
    pool_label: str | None
    group_labels: tuple[tuple[str, str], ...]  # every node-group label the nodes carry (NODE_GROUP_LABELS)
    plugin_config: str | None  # the nvidia.com/device-plugin.config the nodes select (a ConfigMap key)
    node_group: tuple[str, str] | None = None  # the one chosen to select the pool
    nodes: list[str] = field(default_factory=list)
    drivers: Counter = field(default_factory=Counter)
    name: str = ""
    match: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class Draft:
    """The drafted intent (YAML text), what it was drawn from, and how its validation went."""

    text: str
    source: str
    nodes_seen: int
    gpu_nodes: int
    pools: list[Group]
    skipped: list[tuple[str, str]]
    findings: list = field(default_factory=list)  # validation findings of the draft (warnings only, normally)

    def describe(self) -> str:
        """One line for stderr."""
        nodes = sum(len(g.nodes) for g in self.pools)
        skipped = f", {len(self.skipped)} GPU nodes skipped (see the comments)" if self.skipped else ""
        errors = sum(1 for f in self.findings if f.severity == "error")
        state = "validates" if not errors else f"does NOT validate ({errors} errors: a gpuconf bug, please report)"
        return (f"drafted {len(self.pools)} pool{'s' if len(self.pools) != 1 else ''} from {nodes} of "
                f"{self.gpu_nodes} GPU nodes ({self.nodes_seen} nodes seen){skipped}; the draft {state}")


# --- reading one node --------------------------------------------------------------------------------------------


def read_sharing(node: N.NodeFacts, model: catalog.GpuModel) -> tuple[Sharing, int | None]:
    """The node's sharing and GPUs per node, from GFD's labels and the allocatable resources."""
    labels = node.labels
    renamed = node.units("nvidia.com/gpu.shared") is not None
    # Mixed strategy: per-profile counts; the full-GPU count stays on nvidia.com/gpu.count.
    by_label = {p.replace("+", "."): p for p in model.mig_profiles}
    counts: dict[str, int] = {}
    replicas = 1
    for key, value in labels.items():
        if key.startswith("nvidia.com/mig-") and key.endswith(".count") and value.isdigit() and int(value) > 0:
            label_profile = key[len("nvidia.com/mig-"):-len(".count")]
            profile = by_label.get(label_profile)
            if profile is not None:
                counts[profile] = int(value)
                replicas = max(replicas, node.label_int(N.mig_resource_label(profile, "replicas")) or 1)
    gpus = node.label_int(N.GFD_COUNT)
    if counts:
        note = ""
        if not gpus or any(c % gpus for c in counts.values()):
            note = ("not inferred: the MIG counts do not divide by nvidia.com/gpu.count, so the layout is the "
                    "node's total; fix it and gpusPerNode")
            gpus = gpus or 1
        layout = tuple(sorted((p, c // gpus) for p, c in counts.items()))
        return Sharing("mig", replicas, renamed, layout, note), gpus
    product = labels.get(N.GFD_PRODUCT, "")
    single = N.mig_profile_of_product(product)
    if single is not None:
        profile = next((p for p in model.mig_profiles if N.sanitise(p) == single or p == single), None)
        replicas = node.label_int(N.GFD_REPLICAS) or 1
        if profile is None:
            return Sharing("exclusive", note=f"MIG profile {single!r} is not one of {model.id}'s"), None
        devices = node.label_int(N.GFD_COUNT) or 0
        # The MIG config label names the layout when it is one of mig-manager's presets (all-1g.10gb, ...).
        preset = catalog.mig_presets(model).get(labels.get("nvidia.com/mig.config", ""))
        if preset is not None and set(preset) == {profile}:
            per_gpu, note = preset[profile], ""
        else:
            per_gpu = model.mig_profiles[profile].max_instances
            note = f"assumed the all-{profile} layout ({per_gpu} per GPU): the single strategy shows only the total"
        gpus = devices // per_gpu if devices and devices % per_gpu == 0 else None
        return Sharing("mig", replicas, renamed, ((profile, per_gpu),), note), gpus
    replicas = node.label_int(N.GFD_REPLICAS) or 1
    strategy = labels.get(N.GFD_SHARING)
    note = ""
    if "-MIG-INVALID" in product:
        note = ("GFD reports MIG-INVALID (the single strategy with mixed profiles, or MIG enabled without "
                "instances): sharing not inferred")
    if strategy is None and replicas > 1:
        strategy, note = "time-slicing", "GFD publishes no sharing-strategy label here: time-slicing assumed"
    if gpus is None:  # no GFD count: the allocatable GPUs, divided by the replicas
        units = node.units("nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu")
        gpus = units // replicas if units and units % replicas == 0 else None
    if strategy in ("time-slicing", "mps") and replicas > 1:
        return Sharing(strategy, replicas, renamed, note=note), gpus
    return Sharing("exclusive", note=note), gpus


def _pool_taints(node: N.NodeFacts) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted(t for t in node.taints if not t[0].startswith(SYSTEM_TAINT_PREFIXES)))


# --- grouping ----------------------------------------------------------------------------------------------------


class Importer:
    """Feed nodes with add(); draft() builds the intent."""

    def __init__(self, source: str, name: str) -> None:
        self.source = source
        self.name = name
        self.groups: dict[tuple, Group] = {}
        self.skipped: list[tuple[str, str]] = []
        self.nodes_seen = 0
        self.gpu_nodes = 0
        self.kubelets: Counter = Counter()
        self.distributions: Counter = Counter()
        self.strategies: Counter = Counter()
        self.node_names: dict[str, list[str]] = {}

    def add(self, raw: Mapping[str, Any]) -> None:
        """Read one Node object."""
        node = N.facts(raw)
        self.nodes_seen += 1
        if node.kubelet_version:
            self.kubelets[node.kubelet_version] += 1
        self.distributions[_distribution(node, raw)] += 1
        if not node.gpu:
            return
        self.gpu_nodes += 1
        labels = node.labels
        model_id = N.node_model(labels)
        if model_id is None:
            product = labels.get(N.GFD_PRODUCT)
            self.skipped.append((node.name, f"GPU product {product!r} is not in gpuconf's catalogue" if product
                                 else "no GFD product label (GPU feature discovery has not run there)"))
            return
        model = catalog.gpu_model(model_id)
        sharing, gpus = read_sharing(node, model)
        if N.GFD_MIG_STRATEGY in labels:
            self.strategies[labels[N.GFD_MIG_STRATEGY]] += 1
        preinstalled = labels.get("nvidia.com/gpu.deploy.driver") == "false"
        group_labels = tuple((k, labels[k]) for k in N.NODE_GROUP_LABELS if labels.get(k))
        pool_label = labels.get("gpuconf.dev/pool")
        plugin_config = labels.get("nvidia.com/device-plugin.config")
        key = (pool_label, group_labels, plugin_config, model_id, gpus, sharing, _pool_taints(node), preinstalled)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(model_id, gpus, sharing, preinstalled, _pool_taints(node), pool_label,
                                             group_labels, plugin_config)
        group.nodes.append(node.name)
        version = N.driver_version(labels)
        if version:
            group.drivers[version] += 1

    # -- the draft ----------------------------------------------------------------------------------------------

    def draft(self) -> Draft:
        """Name and match the pools, then write and validate the intent."""
        groups = list(self.groups.values())
        self._node_groups(groups)
        groups = self._merged(groups)
        self._name(groups)
        self._match(groups)
        text = self._render(groups)
        from ..intent.loader import LoadError, load_text
        from ..intent.validate import validate_document

        try:
            findings = validate_document(load_text(text, "<draft>")).findings
        except LoadError as exc:  # pragma: no cover - the emitter writes plain YAML
            findings = [exc.finding]
        return Draft(text, self.source, self.nodes_seen, self.gpu_nodes, groups, self.skipped, findings)

    @staticmethod
    def _node_groups(groups: list[Group]) -> None:
        """Per GPU model, the node-group label key every group of that model carries (first in NODE_GROUP_LABELS):
        pools of one model selected by different keys could overlap, which validation (GC303) refuses."""
        by_model: dict[str, list[Group]] = {}
        for g in groups:
            by_model.setdefault(g.model, []).append(g)
        for members in by_model.values():
            common = set.intersection(*(set(k for k, _ in g.group_labels) for g in members))
            key = next((k for k in N.NODE_GROUP_LABELS if k in common), None)
            for g in members:
                g.node_group = (key, dict(g.group_labels)[key]) if key else None

    @staticmethod
    def _merged(groups: list[Group]) -> list[Group]:
        """Merge groups no selector can tell apart (one node group, or one gpuconf pool label, and one model): the
        largest group's values win, and the draft says what differed."""
        by_identity: dict[tuple, list[Group]] = {}
        for g in groups:
            if g.node_group:
                by_identity.setdefault(("group", g.node_group, g.model), []).append(g)
            elif g.pool_label:
                by_identity.setdefault(("pool", g.pool_label, g.model), []).append(g)
            else:
                by_identity.setdefault((id(g),), []).append(g)
        out = []
        for members in by_identity.values():
            members.sort(key=lambda g: (-len(g.nodes), g.nodes[0]))
            head = members[0]
            for other in members[1:]:
                diffs = [what for what, a, b in (("device-plugin config", head.plugin_config, other.plugin_config),
                                                  ("GPUs per node", head.gpus, other.gpus),
                                                  ("sharing", head.sharing, other.sharing),
                                                  ("taints", head.taints, other.taints),
                                                  ("driver", head.preinstalled, other.preinstalled)) if a != b]
                head.notes.append(f"{len(other.nodes)} node(s) differ in {', '.join(diffs)} "
                                  f"({', '.join(sorted(other.nodes)[:3])}{', ...' if len(other.nodes) > 3 else ''}); "
                                  "counted here")
                head.nodes.extend(other.nodes)
                head.drivers.update(other.drivers)
            out.append(head)
        return sorted(out, key=lambda g: (g.name or "", sorted(g.nodes)[0]))

    @staticmethod
    def _name(groups: list[Group]) -> None:
        used: set[str] = set()
        for g in sorted(groups, key=lambda g: (-len(g.nodes), sorted(g.nodes)[0])):
            candidates = []
            if g.pool_label and DNS_LABEL.match(g.pool_label) and len(g.pool_label) <= 63:
                candidates.append(g.pool_label)
            if g.node_group:
                candidates.append(_dns(g.node_group[1]))
                candidates.append(_dns(f"{g.node_group[1]}-{g.model}"))
            candidates.append(_dns(g.model))
            name = next((c for c in candidates if c and c not in used), None)
            if name is None:
                base = candidates[-1] or "pool"
                n = 2
                while f"{base}-{n}" in used:
                    n += 1
                name = f"{base}-{n}"
            g.name = name
            used.add(name)
        groups.sort(key=lambda g: g.name)

    @staticmethod
    def _match(groups: list[Group]) -> None:
        by_model: dict[str, list[Group]] = {}
        for g in groups:
            if g.node_group:
                g.match = {"nodeLabels": {g.node_group[0]: g.node_group[1]}}
            else:
                g.match = {"pciDevice": True}
                by_model.setdefault(g.model, []).append(g)
        for members in by_model.values():
            if len(members) < 2:
                continue
            # Node names are DNS subdomains: the prefix stops before the first "." so it needs no escaping, which
            # keeps it a literal prefix that validation (GC303) can prove disjoint.
            prefixes = [os.path.commonprefix(sorted(g.nodes)).split(".")[0] for g in members]
            distinct = all(p and not any(q.startswith(p) or p.startswith(q)
                                         for j, q in enumerate(prefixes) if j != i) for i, p in enumerate(prefixes))
            if distinct:
                for g, prefix in zip(members, prefixes):
                    g.match = {"pciDevice": True, "hostname": "^" + prefix}
                    g.notes.append("told apart from other pools of this model by the node names' common prefix")
            else:
                head = members[0]
                for other in members[1:]:
                    head.notes.append(f"pool {other.name!r} ({len(other.nodes)} nodes) has the same GPU and no "
                                      "node group or name prefix to tell it apart: merged here; split it by hand "
                                      "with node labels")
                    head.nodes.extend(other.nodes)
                    head.drivers.update(other.drivers)
                    groups.remove(other)

    # -- writing ------------------------------------------------------------------------------------------------

    def _render(self, groups: list[Group]) -> str:
        from ruamel.yaml import YAML
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        from ..catalog import chart_versions

        comments_before: list[tuple[Any, Any, str, int]] = []

        def note(mapping: Any, key: Any, text: str, indent: int) -> None:
            comments_before.append((mapping, key, text, indent))

        kube = self._kubernetes_version()
        distribution = self.distributions.most_common(1)[0][0] if self.distributions else "vanilla"
        cluster = CommentedMap([("kubernetesVersion", kube[0]), ("distribution", distribution)])
        if kube[1]:
            cluster.yaml_add_eol_comment(kube[1], "kubernetesVersion")
        strategy = self._strategy(groups)
        if strategy:
            cluster["migStrategy"] = strategy
            cluster.yaml_add_eol_comment("the nodes' GFD mig.strategy; the pools alone would derive another",
                                         "migStrategy")
        if distribution in ("rke2", "k3s", "microk8s"):
            note(cluster, "distribution", "not inferred: containerd's config and socket paths "
                 "(spec.cluster.containerRuntime) for this distribution", 4)
        operator = CommentedMap([("chartVersion", chart_versions()[-1])])
        operator.yaml_add_eol_comment("not inferred: the chart version you run (`gpuconf catalog` lists them)",
                                      "chartVersion")

        managed = Counter()
        for g in groups:
            if not g.preinstalled:
                managed.update(g.drivers)
        all_preinstalled = all(g.preinstalled for g in groups) and groups
        driver = CommentedMap()
        cluster_version = None
        if all_preinstalled:
            driver["preinstalled"] = True
            driver.yaml_add_eol_comment("every GPU node has the operator's driver switched off", "preinstalled")
        elif managed:
            cluster_version = _valid_version(_most_common(managed))
            if cluster_version:
                driver["version"] = cluster_version
                driver.yaml_add_eol_comment("the version most managed GPU nodes run", "version")

        profiles = CommentedMap()
        pools = CommentedSeq()
        for g in groups:
            model = catalog.gpu_model(g.model)
            profile_name = g.sharing.name(model)
            if g.sharing.kind != "exclusive" and profile_name not in profiles:
                profiles[profile_name] = _plain(g.sharing.profile(model))
            pool = CommentedMap([("name", g.name), ("gpu", g.model)])
            pool["gpusPerNode"] = g.gpus if g.gpus and 1 <= g.gpus <= 16 else 1
            pool["nodes"] = len(g.nodes)
            pool["match"] = _plain(g.match)
            if profile_name != "exclusive":
                pool["sharing"] = profile_name
            if g.taints:
                pool["taints"] = [dict([("key", k), *([("value", v)] if v else []), ("effect", e)])
                                  for k, v, e in g.taints]
            version = _valid_version(_most_common(g.drivers)) if g.drivers else None
            if g.preinstalled and not all_preinstalled:
                pool["driver"] = {"preinstalled": True}
            elif not g.preinstalled and version and cluster_version and version != cluster_version:
                pool["driver"] = {"version": version}
            lines = [f"{len(g.nodes)} nodes: {_names(g.nodes)}"]
            if not (g.gpus and 1 <= g.gpus <= 16):
                lines.append("not inferred: GPUs per node (no GFD gpu.count label); 1 is a placeholder")
            if g.match.get("pciDevice") and not g.match.get("hostname"):
                lines.append(f"match: no node-group label; pciDevice selects every {g.model} node")
            if g.sharing.note:
                lines.append(g.sharing.note)
            if g.plugin_config and not g.pool_label:
                lines.append(f"the nodes select device-plugin config {g.plugin_config!r}: gpuconf renders its own "
                             "(the sharing above), under a new key")
            if len(g.drivers) > 1:
                lines.append("driver versions seen: " + ", ".join(f"{v} x{n}" for v, n in sorted(g.drivers.items())))
            lines += g.notes
            pools.append(pool)
            note(pools, len(pools) - 1, "\n".join(lines), 4)

        spec = CommentedMap([("cluster", cluster), ("operator", operator)])
        if driver:
            spec["driver"] = driver
        if profiles:
            spec["sharingProfiles"] = profiles
        spec["pools"] = pools
        skipped = "".join(f"\n  {name}: {why}" for name, why in self.skipped)
        if skipped:
            note(spec, "pools", "GPU nodes left out:" + skipped, 2)
        note(spec, "pools", "one pool per group of alike GPU nodes; pools' sharing comes from GFD and the device "
             "plugin's labels", 2)
        doc = CommentedMap([("apiVersion", "gpuconf.dev/v1alpha1"), ("kind", "ClusterIntent"),
                            ("metadata", CommentedMap([("name", self.name)])), ("spec", spec)])
        for mapping, key, text, indent in comments_before:
            mapping.yaml_set_comment_before_after_key(key, before=text, indent=indent)

        yaml = YAML()
        yaml.indent(mapping=2, sequence=4, offset=2)
        yaml.width = 4096
        buf = io.StringIO()
        yaml.dump(_quoted(doc), buf)
        header = (
            "# yaml-language-server: $schema=https://gpuconf.dev/schemas/cluster-intent.schema.json\n"
            f"# Drafted by `gpuconf import` from {self.nodes_seen} nodes ({self.gpu_nodes} with GPUs) of "
            f"{self.source}.\n"
            "# Review it: every `not inferred` comment needs a decision. Not visible on nodes at all: teams and\n"
            "# quotas, access, monitoring, overrides, the driver upgrade policy. Then: gpuconf validate THIS-FILE\n")
        return header + buf.getvalue()

    def _kubernetes_version(self) -> tuple[str, str]:
        if not self.kubelets:
            return KUBERNETES_VERSIONS[-1], "not inferred: no kubelet version on the nodes"
        minors = Counter()
        for version, n in self.kubelets.items():
            m = re.match(r"v?(\d+)\.(\d+)", version)
            if m:
                minors[f"{m.group(1)}.{m.group(2)}"] += n
        if not minors:
            return KUBERNETES_VERSIONS[-1], "not inferred: unreadable kubelet versions"
        minor = _most_common(minors)
        if minor not in KUBERNETES_VERSIONS:
            return KUBERNETES_VERSIONS[-1], f"the kubelets run {minor}, which gpuconf cannot verify against"
        return minor, "from the kubelets" + (" (mixed: " + ", ".join(sorted(minors)) + ")" if len(minors) > 1 else "")

    def _strategy(self, groups: list[Group]) -> str | None:
        """The MIG strategy to pin: only when the nodes' label differs from what the pools would derive."""
        layouts = [g.sharing.layout for g in groups if g.sharing.kind == "mig"]
        if not layouts or not self.strategies:
            return None
        derived = "single" if all(len(layout) == 1 for layout in layouts) else "mixed"
        seen = _most_common(self.strategies)
        return seen if seen in ("single", "mixed") and seen != derived else None


def _most_common(counter: Counter) -> Any:
    """The most frequent value; ties go to the highest (newest) value."""
    return max(counter, key=lambda v: (counter[v], str(v)))


def _valid_version(version: str | None) -> str | None:
    return version if version and re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?", version) else None


def _dns(text: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return name[:63].rstrip("-")


def _names(nodes: list[str]) -> str:
    ordered = sorted(nodes)
    return ", ".join(ordered[:3]) + (f", ... ({len(ordered) - 3} more)" if len(ordered) > 3 else "")


def _distribution(node: N.NodeFacts, raw: Mapping[str, Any]) -> str:
    labels = node.labels
    provider = str((raw.get("spec") or {}).get("providerID", ""))
    version = node.kubelet_version
    if any(k.startswith("eks.amazonaws.com/") for k in labels) or provider.startswith("aws://"):
        return "eks"
    if any(k.startswith("cloud.google.com/gke") for k in labels) or provider.startswith("gce://"):
        return "gke"
    if any(k.startswith("kubernetes.azure.com/") for k in labels) or provider.startswith("azure://"):
        return "aks"
    if "node.openshift.io/os_id" in labels:
        return "openshift"
    if "+rke2" in version or labels.get("node.kubernetes.io/instance-type") == "rke2":
        return "rke2"
    if "+k3s" in version or labels.get("node.kubernetes.io/instance-type") == "k3s":
        return "k3s"
    if "microk8s.io/cluster" in labels:
        return "microk8s"
    return "vanilla"


def _plain(value: Any) -> Any:
    """Plain dicts and lists as ruamel commented containers (so they dump in block style)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, Mapping):
        return CommentedMap((k, _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return CommentedSeq(_plain(v) for v in value)
    return value


def _quoted(value: Any) -> Any:
    """Double-quote every string a YAML 1.1 or 1.2 reader would read as something else (gpuconf's policy)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    from ..emit import needs_quotes

    if isinstance(value, CommentedMap):
        for k in list(value):
            value[k] = _quoted(value[k])
        return value
    if isinstance(value, dict):
        return _quoted(_plain(value))
    if isinstance(value, CommentedSeq):
        for i, v in enumerate(value):
            value[i] = _quoted(v)
        return value
    if isinstance(value, list):
        return _quoted(_plain(value))
    if isinstance(value, str) and needs_quotes(value):
        return DoubleQuotedScalarString(value)
    return value


def draft_intent(nodes: Iterable[Mapping[str, Any]], source: str, name: str = "imported") -> Draft:
    """Draft an intent from a stream of Node objects."""
    importer = Importer(source, _dns(name) or "imported")
    for node in nodes:
        importer.add(node)
    return importer.draft()

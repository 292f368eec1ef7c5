"""Import: draft an intent from the nodes of a cluster that runs the GPU Operator without gpuconf (or with it).

What the nodes tell, and how it is read:
  - pools: GPU nodes grouped by GPU model (GFD product label, mapped to the catalogue by nodefacts.model_for_product),
    GPUs per node, sharing, taints and driver kind; a group's name is its gpuconf.dev/pool label when a previous
    render set one, else its node group (NODE_GROUP_LABELS: EKS, GKE, AKS, Karpenter, Cluster API), else its model;
  - match: the node-group label when there is one, else `pciDevice: true`; groups of one model are told apart by
    their nodes' name prefixes (`hostname: ^prefix`), else by their names (`hostname: ^(?:a|b)$`, said on stderr
    and in the report). Nodes in different configurations (MIG config, device-plugin config and sharing, driver,
    taints) never share a pool: its sync would change some of them; each pool is named after its configuration;
  - sharing: MIG from the mixed strategy's nvidia.com/mig-<profile>.count labels (layout = count / GPUs) or from the
    single strategy's "<model>-MIG-<profile>" product (assumed the all-<profile> preset: count / max instances);
    otherwise GFD's sharing-strategy and replicas labels (time-slicing or MPS), renamed when the node advertises
    nvidia.com/gpu.shared; exclusive when none. Profiles are named after gpuconf's config keys on the nodes
    (<profile>-<hash>), and what no label shows is settled by which value reproduces the key;
  - driver: preinstalled where the operator's driver is switched off (gpu.deploy.driver false or pre-installed),
    else the version GFD reports (the cluster's: the most common one on nodes without a pool's own NVIDIADriver);
  - operator: chart version and registry from the gpu-operator (validator) image in the nodes' status.images;
  - cluster: Kubernetes minor from the kubelets, distribution from provider labels.
Everything else (teams, access, monitoring, the upgrade policy) is not on a node: the draft says so in comments.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from .. import catalog, platforms
from .. import plan as P
from ..emit import single_line
from .draftyaml import commented, quoted
from . import nodefacts as N
from ..intent.model import KUBERNETES_VERSIONS
from ..intent.starter import SCHEMA_FILE
# How one node's labels read as sharing lives in nodesharing; the names stay importable from here.
from .nodesharing import DNS_LABEL, Sharing, dns, pool_taints, read_sharing  # noqa: F401

#: NFD's PCI label with the device field (deviceLabelFields [class, vendor, device] or [vendor, device]).
_NFD_DEVICE = re.compile(r"feature\.node\.kubernetes\.io/pci-(?:[0-9a-f]{4}_)?10de_([0-9a-f]{4})\.present")
#: The operator's record of which NVIDIADriver drives a node (gpu-operator-facts §7): `default` is the chart's own,
#: any other name a pool's (gpuconf renders one per pool with its own driver version).
DRIVER_OWNER = "nvidia.com/gpu-operator.driver.owner"
#: gpuconf's content-addressed config names (plan.config_key): <profile name>-<8 hex digits of the content's hash>.
CONFIG_KEY = re.compile(r"(?P<base>[a-z0-9]([-a-z0-9]*[a-z0-9])?)-[0-9a-f]{8}")
#: An image reference's parts as registries accept them (the distribution spec's grammar, simplified): what is read
#: off a node goes into the draft only when it has this shape.
_IMAGE_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_IMAGE_REPOSITORY = re.compile(r"[a-z0-9]([a-z0-9._:/-]{0,250}[a-z0-9])?")


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
    mig_config: str | None = None  # the nvidia.com/mig.config they select (a mig-parted config name)
    mig_devices: int | None = None  # single MIG strategy: GFD's count of MIG devices per node
    node_group: tuple[str, str] | None = None  # the one chosen to select the pool
    nodes: list[str] = field(default_factory=list)
    drivers: Counter = field(default_factory=Counter)
    owners: Counter = field(default_factory=Counter)  # nvidia.com/gpu-operator.driver.owner values
    products: Counter = field(default_factory=Counter)  # GFD nvidia.com/gpu.product values
    name: str = ""
    profile: str = ""  # the sharing profile's name in the draft
    by_name: bool = False  # its selector cannot tell it from a group of another configuration: hostname lists names

    def configuration(self) -> tuple:
        """What a sync would change on the nodes if they shared a pool with others: MIG config and layout,
        device-plugin config and sharing, driver kind, taints."""
        return (self.sharing, self.mig_config, self.plugin_config, self.preinstalled, self.taints)
    keys_kept: bool = False  # the draft renders the nodes' config keys (the content hashes matched)
    names_kept: bool = False  # ... because its profile keeps the names the nodes carry (keepNames)
    match: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def labels_keys(self) -> tuple[str | None, str | None]:
        """The device-plugin and MIG config keys the nodes select (what a render must reproduce)."""
        return self.plugin_config, self.mig_config


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
    notes: list[str] = field(default_factory=list)  # what to know before the first sync (pools selected by name)
    gpu_node_objects: list = field(default_factory=list)  # the GPU nodes read, for the first sync's plan
    release: Any = None  # the installed release (adopt.release.Release) the draft adopts onto

    def describe(self) -> str:
        """One line for stderr."""
        nodes = sum(len(g.nodes) for g in self.pools)
        skipped = f", {len(self.skipped)} GPU nodes skipped (see the comments)" if self.skipped else ""
        errors = sum(1 for f in self.findings if f.severity == "error")
        state = "validates" if not errors else f"does NOT validate ({errors} errors: a gpuconf bug, please report)"
        return (f"drafted {len(self.pools)} pool{'s' if len(self.pools) != 1 else ''} from {nodes} of "
                f"{self.gpu_nodes} GPU nodes ({self.nodes_seen} nodes seen){skipped}; the draft {state}")


# --- grouping ----------------------------------------------------------------------------------------------------


class Importer:
    """Feed nodes with add(); draft() builds the intent."""

    def __init__(self, source: str, name: str, decide: Any = None) -> None:
        self.source = source
        # The installed release from the nodes' evidence (and what the caller adds): adopt/release.py decides.
        self.decide = decide
        self.name = name
        self.groups: dict[tuple, Group] = {}
        self.skipped: list[tuple[str, str]] = []
        self.nodes_seen = 0
        self.gpu_nodes = 0
        self.kubelets: Counter = Counter()
        self.distributions: Counter = Counter()
        self.strategies: Counter = Counter()
        self.notes: list[str] = []  # what the user must know before the first sync (stderr and the report)
        self.raw: list[Mapping[str, Any]] = []  # the GPU nodes as read
        self.operator_images: Counter = Counter()  # (repository, tag) of gpu-operator images -> GPU nodes
        self.amis: Counter = Counter()  # EKS node AMIs of the GPU nodes, read off their OS image
        self.declared: dict[str, tuple[catalog.GpuModel, dict]] = {}  # models the catalogue lacks: spec.gpuModels
        self.kept: dict[str, dict] = {}  # profile -> keepNames (the config names the nodes carry, kept)

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
        if self.gpu_nodes > MAX_GPU_NODES:
            from .nodesource import NodeSourceError

            raise NodeSourceError(f"{self.source}: more than {MAX_GPU_NODES:,} GPU nodes: import drafts an intent for "
                                  "one cluster, and keeps each GPU node's facts for its first-sync plan; split the "
                                  "list by node group (kubectl get nodes -l ...) and import each")
        self.raw.append(_slim(raw))  # for the plan of the draft's first sync (gpuconf/impact/installation.py)
        self.operator_images.update(_operator_images(raw))
        labels = node.labels
        self.amis[_eks_ami(raw)] += 1
        model_id = N.node_model(labels, tuple(m for m, _ in self.declared.values()))
        if model_id is None:
            product = labels.get(N.GFD_PRODUCT)
            model_id, why = self._declare(labels) if product else (None, "")
            if model_id is None:
                self.skipped.append((node.name, f"GPU product {product!r} is not in gpuconf's catalogue{why}"
                                     if product else "no GFD product label (GPU feature discovery has not run there)"))
                return
        model = self._model(model_id)
        sharing, gpus = read_sharing(node, model)
        if N.GFD_MIG_STRATEGY in labels:
            self.strategies[labels[N.GFD_MIG_STRATEGY]] += 1
        # The operator's driver is off: preset false, or pre-installed (the driver manager found the host's driver).
        preinstalled = labels.get(N.DEPLOY_DRIVER) in ("false", N.DRIVER_PREINSTALLED)
        group_labels = tuple((k, labels[k]) for k in N.NODE_GROUP_LABELS if labels.get(k))
        pool_label = labels.get(P.POOL_LABEL)
        plugin_config = labels.get(P.DEVICE_PLUGIN_LABEL)
        mig_config = labels.get(P.MIG_LABEL)
        key = (pool_label, group_labels, plugin_config, mig_config, model_id, gpus, sharing, pool_taints(node),
               preinstalled)
        group = self.groups.get(key)
        if group is None:
            single = sharing.kind == "mig" and N.mig_profile_of_product(labels.get(N.GFD_PRODUCT, "")) is not None
            group = self.groups[key] = Group(model_id, gpus, sharing, preinstalled, pool_taints(node), pool_label,
                                             group_labels, plugin_config, mig_config,
                                             node.label_int(N.GFD_COUNT) if single else None)
        group.nodes.append(node.name)
        version = N.driver_version(labels)
        if version:
            group.drivers[version] += 1
        group.owners[labels.get(DRIVER_OWNER)] += 1
        group.products[labels.get(N.GFD_PRODUCT)] += 1

    def _model(self, model_id: str) -> catalog.GpuModel:
        """A model of the catalogue, or one the draft declares."""
        found = catalog.gpu_model(model_id)
        return found if found is not None else self.declared[model_id][0]

    def _declare(self, labels: Mapping[str, str]) -> tuple[str | None, str]:
        """Declare the GPU of a node the catalogue lacks (spec.gpuModels) from what its labels prove: the product
        (GFD), the memory (GFD, MiB) and the PCI device id (an NFD label with the device field, pci-<class>_10de_
        <device>.present); (model id, "") or (None, why not)."""
        product = labels[N.GFD_PRODUCT]
        memory = labels.get(N.GFD_MEMORY, "")
        devices = sorted({m.group(1).upper() for key in labels for m in [_NFD_DEVICE.fullmatch(key)] if m})
        if N.mig_profile_of_product(product) is not None or "-MIG-" in product:
            return None, " (a MIG product: the GPU's own name is not on the node)"
        if not devices:
            return None, (" and no NFD label names its PCI device id (NFD's deviceLabelFields lacks `device`): "
                          "declare it under spec.gpuModels")
        if not (memory.isdigit() and int(memory) > 0):
            return None, " and no GFD gpu.memory label tells its memory: declare it under spec.gpuModels"
        name = product.removesuffix("-SHARED")
        model_id = dns(name.removeprefix("NVIDIA-")).upper()[:63].rstrip("-") or "GPU"
        if catalog.gpu_model(model_id) is not None or not re.fullmatch(r"[A-Z0-9][A-Z0-9-]*", model_id):
            return None, f" (its id {model_id!r} is taken or unusable): declare it under spec.gpuModels"
        entry = {"name": name.replace("-", " "), "pciDeviceIds": [f"0x{d}10DE" for d in devices],
                 "memoryGiB": round(int(memory) / 1024, 1), "productLabels": sorted({name, product})}
        if model_id in self.declared and self.declared[model_id][1] != entry:
            return None, f" (another node declares {model_id} differently): declare it under spec.gpuModels"
        model = catalog.GpuModel(
            id=model_id, name=entry["name"], pci_device_ids=tuple(entry["pciDeviceIds"]), memory_gib=entry["memoryGiB"],
            compute_capability=None, family="", mig_capable=False, memory_slots=0, mig_profiles={},
            balanced_layout={}, pci_devices={p: entry["name"] for p in entry["pciDeviceIds"]},
            sources=("declared in the intent (spec.gpuModels)",), confidence="user-declared",
            pci_subsystem_ids=(), product_labels=tuple(entry["productLabels"]), declared=True)
        self.declared[model_id] = (model, entry)
        return model_id, ""

    # -- the draft ----------------------------------------------------------------------------------------------

    def draft(self) -> Draft:
        """Name and match the pools, then write and validate the intent."""
        from ..adopt import release as R

        tags = {tag for _, tag in self.operator_images}
        self.release = (self.decide or (lambda ev: R.decide(None, ev)))(R.nodes(tags))
        groups = list(self.groups.values())
        self._node_groups(groups)
        groups = self._merged(groups)
        self._name(groups)
        self._match(groups)
        self._by_name(groups)
        self._unprefixed_taints(groups)
        self._profiles(groups)
        self._keep_names(groups)
        text = self._render(groups)
        findings = _validated(text)[0].findings
        return Draft(text, self.source, self.nodes_seen, self.gpu_nodes, groups, self.skipped, findings, self.notes,
                     self.raw, self.release)

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
        """Merge the groups no selector can tell apart (one node group, or one gpuconf pool label, and one model)
        that run one configuration (Group.configuration): the largest group's values win, and the draft says what
        differed (GPUs per node). Groups of another configuration stay pools of their own, selected by name
        (_match): one pool for both would change the MIG layout, sharing or driver of some of its nodes."""
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
            heads: dict[tuple, Group] = {}
            for g in members:
                head = heads.setdefault(g.configuration(), g)
                if head is g:
                    continue
                head.notes.append(f"{len(g.nodes)} node(s) differ in GPUs per node "
                                  f"({', '.join(sorted(g.nodes)[:3])}{', ...' if len(g.nodes) > 3 else ''}); "
                                  "counted here")
                head.nodes.extend(g.nodes)
                head.drivers.update(g.drivers)
                head.owners.update(g.owners)
            if len(heads) > 1 and members[0].node_group:
                for head in heads.values():
                    head.by_name = True
            out.extend(heads.values())
        return sorted(out, key=lambda g: (g.name or "", sorted(g.nodes)[0]))

    def _name(self, groups: list[Group]) -> None:
        """Pool names: a previous render's pool label, else the node group, else the model; groups of one model (or
        node group) in different configurations are named after their configuration (a100-80gb-mig-all-3g-40gb)."""
        used: set[str] = set()
        configs: dict[tuple, set] = {}
        for g in groups:
            configs.setdefault((g.model, g.node_group), set()).add(g.configuration())
        for g in sorted(groups, key=lambda g: (-len(g.nodes), sorted(g.nodes)[0])):
            candidates = []
            if g.pool_label and DNS_LABEL.fullmatch(g.pool_label) and len(g.pool_label) <= 63:
                candidates.append(g.pool_label)
            own = len(configs[(g.model, g.node_group)]) > 1
            config = dns(g.sharing.name(self._model(g.model)) + ("-preinstalled" if g.preinstalled else ""))
            if g.node_group:
                if own:
                    candidates.append(dns(f"{g.node_group[1]}-{config}"))
                candidates.append(dns(g.node_group[1]))
                candidates.append(dns(f"{g.node_group[1]}-{g.model}"))
            if own:
                candidates.append(dns(f"{g.model}-{config}"))
            candidates.append(dns(g.model))
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

    def _match(self, groups: list[Group]) -> None:
        by_model: dict[str, list[Group]] = {}
        spot_key, spot_value = platforms.AKS_SPOT_LABEL
        for g in groups:
            if g.node_group:
                g.match = {"nodeLabels": {g.node_group[0]: g.node_group[1]}}
                if g.node_group[0] == platforms.aks()["agentPoolLabel"] and platforms.AKS_SPOT_TAINT in g.taints:
                    # AKS taints the nodes of a Spot node pool, and only those: the pool's script must recreate
                    # Spot VMs, so the match names the label AKS gives them (and the taint stays listed, GC388).
                    g.match["nodeLabels"][spot_key] = spot_value
            else:
                g.match = {"pciDevice": True}
                by_model.setdefault(g.model, []).append(g)
        for members in by_model.values():
            if len(members) < 2:
                continue  # pciDevice alone: the only pool of its model, which also takes in nodes added later
            # Node names are DNS subdomains: the prefix stops before the first "." so it needs no escaping. Cut back
            # to the last "-" when that still tells the pools apart (l40s-00..l40s-09 gives ^l40s-, which also takes
            # in l40s-10).
            for prefixes in ([_cut(_common_prefix(g.nodes)) for g in members],
                             [_common_prefix(g.nodes) for g in members]):
                distinct = all(p and not any(q.startswith(p) or p.startswith(q)
                                             for j, q in enumerate(prefixes) if j != i) for i, p in enumerate(prefixes))
                if distinct:
                    break
            for g, prefix in zip(members, prefixes):
                if distinct:
                    g.match = {"pciDevice": True, "hostname": "^" + prefix}
                    g.notes.append("told apart from other pools of this model by the node names' common prefix")
                else:
                    g.by_name = True

    def _by_name(self, groups: list[Group]) -> None:
        """Groups no label or name prefix tells from a group of the same model in another configuration: the pool
        lists its nodes' names (hostname ^(?:a|b)$, which validation proves disjoint as automata), and the draft
        says so, on stderr and in the report too."""
        for g in groups:
            if not g.by_name:
                continue
            names = sorted(g.nodes)
            g.match["hostname"] = "^(?:" + "|".join(n.replace(".", "\\.") for n in names) + ")$"
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            note = (f"pool {g.name!r} selects its nodes by name ({shown}): other {g.model} nodes"
                    + (f" of node group {g.node_group[1]}" if g.node_group else "")
                    + " run another configuration (MIG config, sharing, driver or taints) and no node label or name "
                    "prefix tells them apart; a node added later matches no pool until you give the pool a label "
                    "of its own")
            g.notes.append(note)
            self.notes.append(note)

    @staticmethod
    def _unprefixed_taints(groups: list[Group]) -> None:
        """A taint key without a prefix (dedicated=gpu:NoSchedule) is one NFD cannot apply (GC317), so a pool that
        has one is not selected through NFD: by the GFD product label its nodes carry instead, when they all carry
        the same one (the nodes have the taint already; nothing needs to apply it)."""
        for g in groups:
            bare = sorted({k for k, _, _ in g.taints if "/" not in k})
            if not bare or not g.match.get("pciDevice"):
                continue
            products = [p for p in g.products if p]
            if len(products) != 1 or len(g.products) != 1:
                g.notes.append(f"taint key(s) {', '.join(bare)} have no prefix, which NFD cannot apply, and the nodes "
                               "share no GFD product label to select them by: give the pool a node label")
                continue
            g.match = {"nodeLabels": {N.GFD_PRODUCT: products[0]},
                       **({"hostname": g.match["hostname"]} if g.match.get("hostname") else {})}
            g.notes.append(f"match: the taint key(s) {', '.join(bare)} have no prefix, which NFD cannot apply, so the "
                           f"pool selects its nodes by their GFD product label (they carry the taint already)")

    def _profiles(self, groups: list[Group]) -> None:
        """Name each sharing profile after the config keys its nodes carry, and settle what only a key's hash says.

        gpuconf's keys are <profile>-<hash of the content> (plan.config_key): the profile name comes back from the
        label, and a draft that renders the same content renders the same key, so applying it changes no node.
        What GFD does not publish (failRequestsGreaterThanOne; the per-GPU layout under the single MIG strategy) is
        chosen among the few possible values by which one gives the nodes' key.
        """
        used: dict[str, dict] = {}
        for g in sorted(groups, key=lambda g: (-len(g.nodes), g.name)):
            model = self._model(g.model)
            if g.sharing.kind == "exclusive":
                g.profile = "exclusive"
                continue
            content = g.sharing.profile(model)
            base = _key_base(g.mig_config if g.sharing.kind == "mig" else g.plugin_config)
            # A device-plugin config of the installation (not gpuconf's <profile>-<hash>) names the profile as the
            # import's report names it (adopt/draft.py: the config key, DNS-1123).
            own = dns(g.plugin_config) if g.plugin_config and not CONFIG_KEY.fullmatch(g.plugin_config) and \
                g.sharing.kind != "mig" else None
            for name in (base, own, g.sharing.name(model), f"{g.sharing.name(model)}-{g.name}"[:63].rstrip("-")):
                if name and name != "exclusive" and used.get(name, content) == content:
                    break
            g.profile = name
            used[name] = content
        if not any(_key_base(g.plugin_config) or _key_base(g.mig_config) for g in groups):
            return  # no gpuconf keys on the nodes: nothing to keep
        keys = self._keys(groups)
        for name in sorted({g.profile for g in groups}):
            members = [g for g in groups if g.profile == name]
            if keys is None or all(keys.get(g.name) == g.labels_keys for g in members):
                continue
            original = [(g.sharing, g.gpus) for g in members]
            for variant in _variants(members):
                for g, (sharing, gpus) in zip(members, variant):
                    g.sharing, g.gpus = sharing, gpus
                found = self._keys(groups)
                if found is not None and all(found.get(g.name) == g.labels_keys for g in members):
                    keys = found
                    break
            else:
                for g, (sharing, gpus) in zip(members, original):
                    g.sharing, g.gpus = sharing, gpus
        for g in groups:
            g.keys_kept = keys is not None and keys.get(g.name) == g.labels_keys
            if g.keys_kept and g.mig_devices and g.sharing.note.startswith("assumed"):
                (profile, n), = g.sharing.layout
                g.sharing = replace(g.sharing, note=_proven_layout(profile, n))

    def _keep_names(self, groups: list[Group]) -> None:
        """Keep the config names the nodes carry where the draft renders the content they run (keepNames), so that
        the first sync relabels no node and the audit before it finds the labels right.

        The nodes' sharing is what GFD publishes (sharing strategy, replicas, MIG devices), and the profile is
        drawn from it: the content gpuconf renders is the content the nodes run. The name is pinned to the hash of
        that content, so an edit later gives a new key (the device plugin does not reload edited content under an
        unchanged key). A name the nodes use for two contents is not kept."""
        todo = [g for g in groups if not g.keys_kept and any(v and not CONFIG_KEY.fullmatch(v)
                                                             for v in (g.plugin_config, g.mig_config))]
        if not todo:
            return
        taken = {g.profile for g in groups}
        for g in todo:
            label = g.plugin_config
            if g.profile == "exclusive" and label and _LABEL_VALUE.fullmatch(label) and not CONFIG_KEY.fullmatch(label):
                name = dns(label)[:63].rstrip("-")
                if name and name != "exclusive" and name not in taken:
                    g.profile = name  # a profile of its own, named after the nodes' config, to carry the name
                    taken.add(name)
        keys = self._keys(groups, digests=True)
        if keys is None:
            return
        by_label: dict[tuple[str, str], set] = {}
        for g in groups:
            dp, mig = keys.get(g.name, (None, None))
            if g.plugin_config:
                by_label.setdefault(("devicePlugin", g.plugin_config), set()).add((g.profile, dp))
            if g.mig_config:
                by_label.setdefault(("mig", g.mig_config), set()).add((g.profile, mig))
        kept: dict[str, dict] = {}
        claimed: set[tuple[str, str]] = set()
        for g in sorted(todo, key=lambda g: -len(g.nodes)):
            if g.profile == "exclusive":
                continue
            for field_name, label in (("devicePlugin", g.plugin_config), ("mig", g.mig_config)):
                owners = by_label.get((field_name, label or ""), set())
                digests = {d for _, d in owners}
                # Profiles that render one content under the name (a MIG pool's whole-GPU device-plugin config is
                # the exclusive pools'): the largest group's profile keeps it, and every pool of that content gets
                # it (gpuconf.plan: the whole-GPU config has one key).
                profile, digest = (g.profile, digests.pop()) if len(digests) == 1 and \
                    (field_name, label or "") not in claimed else (None, None)
                if profile != g.profile or not digest or not _LABEL_VALUE.fullmatch(label or "") or \
                        (field_name == "mig" and (g.sharing.kind != "mig" or label == P.MIG_DISABLED)) or \
                        CONFIG_KEY.fullmatch(label or ""):
                    # One of gpuconf's keys whose hash is not this content: the ConfigMap keeps its name at the
                    # sync, so the device plugin would not reload the new content under it. A new key, then.
                    continue
                kept.setdefault(g.profile, {}).setdefault(field_name, {"name": label, "content": digest})
                claimed.add((field_name, label or ""))
        if not kept:
            return
        self.kept = kept
        found = self._keys(groups)
        for g in groups:
            if found is not None and found.get(g.name) == g.labels_keys and not g.keys_kept:
                g.keys_kept = g.names_kept = True

    def _keys(self, groups: list[Group], digests: bool = False) -> dict[str, tuple] | None:
        """Pool name -> (device-plugin key, MIG key) as the draft renders them (digests: the 8 hex digits of each
        content's hash instead, None for gpuconf's all-disabled); None if the draft is invalid."""
        result, plan = _validated(self._render(groups))
        if plan is None:
            return None
        if digests:
            return {pp.name: (pp.device_plugin_key[-8:], pp.mig_key[-8:] if pp.mig_key not in (None, P.MIG_DISABLED)
                              else None) for pp in plan.pools}
        return {pp.name: (pp.device_plugin_key, pp.mig_key) for pp in plan.pools}

    # -- writing ------------------------------------------------------------------------------------------------

    def _render(self, groups: list[Group]) -> str:
        from ruamel.yaml import YAML
        from ruamel.yaml.comments import CommentedMap, CommentedSeq
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString

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
            note(cluster, "distribution", "containerd's paths for this distribution come with gpuconf (REPORT.md says "
                 "which); spec.cluster.containerRuntime overrides them", 4)
        if distribution == "eks":
            ami = self._eks_ami(groups)
            cluster["eks"] = CommentedMap([("ami", ami[0])])
            cluster["eks"].yaml_add_eol_comment(ami[1], "ami")
        operator = self._operator(note)

        # The cluster's driver: what most managed nodes run that no pool pins. A pool with its own NVIDIADriver
        # shows as a driver owner other than the chart's `default`.
        pinned = {id(g) for g in groups if _own_driver(g)}
        managed, unpinned = Counter(), Counter()
        for g in groups:
            if not g.preinstalled:
                managed.update(g.drivers)
                if id(g) not in pinned:
                    unpinned.update(g.drivers)
        all_preinstalled = all(g.preinstalled for g in groups) and groups
        driver = CommentedMap()
        cluster_version = None
        if all_preinstalled:
            driver["preinstalled"] = True
            driver.yaml_add_eol_comment("every GPU node has the operator's driver switched off", "preinstalled")
        elif managed:
            cluster_version = _valid_version(_most_common(unpinned or managed))
            if cluster_version:
                driver["version"] = DoubleQuotedScalarString(cluster_version)
                chart = catalog.chart(operator["chartVersion"])
                default = chart.defaults.get("driver", {}).get("version") if chart else None
                driver.yaml_add_eol_comment("the version most managed GPU nodes run" + (
                    " without a pool's own NVIDIADriver" if pinned and unpinned else
                    " (every pool has its own NVIDIADriver)" if pinned else "") + (
                    f" (the default of chart {operator['chartVersion']}: without it the driver follows the chart)"
                    if cluster_version == default else ""), "version")

        profiles = CommentedMap()
        pools = CommentedSeq()
        for g in groups:
            model = self._model(g.model)
            profile_name = g.profile or g.sharing.name(model)
            if profile_name != "exclusive" and profile_name not in profiles:
                profiles[profile_name] = commented(g.sharing.profile(model))
                if profile_name in self.kept:
                    profiles[profile_name]["keepNames"] = commented(self.kept[profile_name])
                    note(profiles[profile_name], "keepNames", "the config names the nodes carry, kept while the "
                         "content is the one they run (its hash): the first sync relabels no node", 6)
            pool = CommentedMap([("name", g.name), ("gpu", g.model)])
            pool["gpusPerNode"] = g.gpus if g.gpus and 1 <= g.gpus <= 16 else 1
            pool["nodes"] = len(g.nodes)
            pool["match"] = commented(g.match)
            if profile_name != "exclusive":
                pool["sharing"] = profile_name
            if g.taints:
                pool["taints"] = [dict([("key", k), *([("value", v)] if v else []), ("effect", e)])
                                  for k, v, e in g.taints]
            version = _valid_version(_most_common(g.drivers)) if g.drivers else None
            if g.preinstalled and not all_preinstalled:
                pool["driver"] = {"preinstalled": True}
            elif not g.preinstalled and version and cluster_version and (version != cluster_version or
                                                                         id(g) in pinned):
                pool["driver"] = {"version": DoubleQuotedScalarString(version)}
            lines = [f"{len(g.nodes)} nodes: {_names(g.nodes)}"]
            if not (g.gpus and 1 <= g.gpus <= 16):
                lines.append("not inferred: GPUs per node (no GFD gpu.count label); 1 is a placeholder")
            if g.match.get("pciDevice") and not g.match.get("hostname"):
                lines.append(f"match: no node-group label; pciDevice selects every {g.model} node")
            if g.sharing.note:
                lines.append(g.sharing.note)
            if g.names_kept:
                lines.append(f"the nodes' config names are kept ({_names_of(g)}): the first sync relabels none")
            elif (_key_base(g.plugin_config) or _key_base(g.mig_config)) and not g.keys_kept:
                lines.append(f"the nodes select the configs {g.plugin_config!r} and {g.mig_config!r}, whose content "
                             "this draft does not reproduce: rendering it gives new keys, and the nodes are relabelled")
            elif g.plugin_config and not CONFIG_KEY.fullmatch(g.plugin_config) and not g.keys_kept:
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
        if self.declared:
            spec["gpuModels"] = commented({k: e for k, (_, e) in sorted(self.declared.items())})
            note(spec, "gpuModels", "GPUs the catalogue lacks, declared from the nodes' GFD product and memory and "
                 "NFD's PCI device label: check the name and memory", 2)
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
        yaml.dump(quoted(doc), buf)
        header = (
            f"# yaml-language-server: $schema={SCHEMA_FILE}\n"
            f"# Drafted by `gpuconf import` from {self.nodes_seen} nodes ({self.gpu_nodes} with GPUs) of "
            f"{single_line(self.source)}.\n"
            "# Review it: every `not inferred` comment needs a decision. Not visible on nodes at all: teams and\n"
            "# quotas, access, monitoring, overrides, the driver upgrade policy. Then: gpuconf validate THIS-FILE\n")
        return header + buf.getvalue()

    def _operator(self, note: Any) -> Any:
        """spec.operator: the installed release (adopt/release.py: the evidence, nodes' included) and the registry
        the GPU nodes pull the gpu-operator image from."""
        from ruamel.yaml.comments import CommentedMap

        registries = sorted({repo.removesuffix("/gpu-operator") for repo, _ in self.operator_images
                             if repo.endswith("/gpu-operator")})
        operator = CommentedMap([("chartVersion", self.release.version)])
        operator.yaml_add_eol_comment(self.release.why, "chartVersion")
        if len(registries) == 1 and registries[0] != "nvcr.io/nvidia":
            operator["registry"] = registries[0]
            operator.yaml_add_eol_comment("the registry the GPU nodes pull the gpu-operator image from", "registry")
            note(operator, "registry", "not inferred: imagePullSecrets (by name), if the mirror needs credentials", 4)
        return operator

    def _eks_ami(self, groups: list) -> tuple[str, str]:
        """The EKS AMI of the draft and the comment that says where it comes from."""
        seen = [ami for ami, _ in self.amis.most_common() if ami is not None]
        if seen:
            return seen[0], "the GPU nodes' OS image"
        if any(not g.preinstalled for g in groups):
            return "ubuntu", "not inferred: the operator installs the driver, which EKS's NVIDIA AMIs ship themselves"
        return "al2023", "not inferred: EKS's AL2023 NVIDIA AMI assumed (bottlerocket if the nodes run it)"

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


def _validated(text: str) -> tuple[Any, P.Plan | None]:
    """The draft's validation, and its render plan when it is valid."""
    from ..intent.loader import LoadError, load_text
    from ..intent.validate import Validation, validate_document

    try:
        result = validate_document(load_text(text, "<draft>"))
    except LoadError as exc:  # pragma: no cover - the emitter writes plain YAML
        return Validation("<draft>", findings=[exc.finding]), None
    return result, (P.build(result.intent, "<draft>", result.document) if result.ok else None)


#: A label value (the names the nodes' config labels carry), which is also a valid ConfigMap key.
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def _names_of(g: Group) -> str:
    return ", ".join(f"{k}={v}" for k, v in ((P.DEVICE_PLUGIN_LABEL, g.plugin_config), (P.MIG_LABEL, g.mig_config))
                     if v)


def _key_base(value: str | None) -> str | None:
    """The profile name in one of gpuconf's config keys (notebooks-x4-1a2b3c4d -> notebooks-x4), else None."""
    m = CONFIG_KEY.fullmatch(value or "")
    return m.group("base") if m and m.group("base") != "exclusive" else None


def _common_prefix(names: list[str]) -> str:
    """The node names' common prefix, up to the first "." (a literal that needs no escaping in a regex)."""
    return os.path.commonprefix(sorted(names)).split(".")[0]


def _cut(prefix: str) -> str:
    """The prefix up to and including its last "-" (gpu-h200-0 -> gpu-h200-), or "" when that leaves no name."""
    cut = prefix[:prefix.rfind("-") + 1]
    return cut if any(ch.isalnum() for ch in cut) else ""


def _proven_layout(profile: str, n: int) -> str:
    return f"the layout ({n} x {profile} per GPU) is the one the nodes' {P.MIG_LABEL} key was made from (its hash)"


def _variants(members: list[Group]):
    """Other readings of what GFD does not publish, for all groups of one profile at once: lists of (sharing, GPUs
    per node), one per group. failRequestsGreaterThanOne is on no label; under the single MIG strategy only the
    number of MIG devices is, not how many each GPU holds."""
    head = members[0].sharing
    shared = head.kind == "time-slicing" or (head.kind == "mig" and head.replicas > 1)
    fails = (False, True) if shared else (head.fail,)
    per_gpu: list[int | None] = [None]
    models = {g.model for g in members}
    if head.kind == "mig" and len(head.layout) == 1 and len(models) == 1 and all(g.mig_devices for g in members):
        profile = head.layout[0][0]
        most = catalog.gpu_model(models.pop()).mig_profiles[profile].max_instances
        per_gpu = [n for n in range(1, most + 1)
                   if all(g.mig_devices % n == 0 and 1 <= g.mig_devices // n <= 16 for g in members)]
    for fail in fails:
        for n in per_gpu:
            variant = []
            for g in members:
                sharing, gpus = replace(g.sharing, fail=fail), g.gpus
                if n is not None:
                    profile = g.sharing.layout[0][0]
                    sharing = replace(sharing, layout=((profile, n),), note=_proven_layout(profile, n))
                    gpus = g.mig_devices // n
                variant.append((sharing, gpus))
            yield variant


def _own_driver(group: Group) -> bool:
    """True when most of the group's nodes are driven by an NVIDIADriver of their own (not the chart's default)."""
    owner = _most_common(group.owners) if group.owners else None
    return owner not in (None, "default")


def operator_image_tags(raw: Mapping[str, Any]) -> set[str]:
    """The tags of the gpu-operator images a node pulled: the chart release its validator came with."""
    return {tag for _, tag in _operator_images(raw)}


#: The most GPU nodes one import reads (docs/reference/limits.md): it keeps each one's facts for the first-sync plan,
#: about 4 KB apiece once slimmed (_slim), where the whole Node, its image list above all, is 10-100 KB.
MAX_GPU_NODES = 100_000


def _slim(raw: Mapping[str, Any]) -> dict:
    """The fields of a Node that the first-sync plan reads (nodefacts.facts): name, labels, annotations, taints and
    unschedulable, capacity, allocatable, conditions and nodeInfo; not its images or managedFields."""
    def part(value: Any, keys: tuple[str, ...]) -> dict:
        return {k: value[k] for k in keys if k in value} if isinstance(value, Mapping) else {}

    return {"kind": "Node", "metadata": part(raw.get("metadata"), ("name", "labels", "annotations")),
            "spec": part(raw.get("spec"), ("taints", "unschedulable")),
            "status": part(raw.get("status"), ("capacity", "allocatable", "conditions", "nodeInfo"))}


def _operator_images(raw: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(repository, tag) of the node's gpu-operator images: the validator runs on every GPU node, from
    `<registry>/gpu-operator:<chart appVersion>` (values validator.repository/image/version), and a released chart's
    appVersion is its version."""
    out = set()
    images = (raw.get("status") or {}).get("images")
    for image in images if isinstance(images, list) else ():
        names = image.get("names") if isinstance(image, dict) else None
        for ref in names if isinstance(names, list) else ():
            if not isinstance(ref, str):
                continue
            repository, sep, tag = ref.rpartition(":")
            if sep and _IMAGE_TAG.fullmatch(tag) and _IMAGE_REPOSITORY.fullmatch(repository) and \
                    repository.endswith(("/gpu-operator", "/gpu-operator-validator")):
                out.add((repository, tag))
    return out


def _most_common(counter: Counter) -> Any:
    """The most frequent value; ties go to the highest (newest) value."""
    return max(counter, key=lambda v: (counter[v], str(v)))


def _valid_version(version: str | None) -> str | None:
    return version if version and re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?", version) else None


def _eks_ami(raw: Mapping[str, Any]) -> str | None:
    """The EKS AMI a node runs, from its OS image (Amazon Linux 2023, Bottlerocket OS, Ubuntu), or None."""
    image = str(((raw.get("status") or {}).get("nodeInfo") or {}).get("osImage", ""))
    for word, ami in (("Bottlerocket", "bottlerocket"), ("Amazon Linux 2023", "al2023"), ("Ubuntu", "ubuntu")):
        if word in image:
            return ami
    return None


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


def draft_intent(nodes: Iterable[Mapping[str, Any]], source: str, name: str = "imported", decide: Any = None) -> Draft:
    """Draft an intent from a stream of Node objects; decide(node evidence) -> adopt.release.Release settles the
    installed release (default: from the nodes alone; raises adopt.release.ReleaseProblem)."""
    importer = Importer(source, dns(name) or "imported", decide)
    for node in nodes:
        importer.add(node)
    return importer.draft()

"""Hypothesis strategies for gpuconf: cluster intents that are valid by construction, and mutations of YAML.

`intents()` draws an IntentCase: the intent as plain data (dicts, lists, scalars) plus the set of features it
exercises, so tests can check that the strategy really reaches MIG, MPS, time-slicing, quotas and so on.

The generator keeps its own, independent model of the rules it must respect (docs/reference/findings.md): pool selectors
disjoint, names DNS-1123 labels and unique, MPS never under the mixed MIG strategy, quotas in the shape the strategy
requires and within capacity. Only MIG geometry is taken from the catalogue (`fit_mig_layout`, `mig_presets`), as
the facts it encodes are data, not rules.
"""

from __future__ import annotations

import json

import copy
import io
import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from gpuconf import catalog
from gpuconf.chartfacts import releases
from gpuconf.intent.model import DISTRIBUTIONS, KUBERNETES_VERSIONS, PRIORITY_TIERS

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"

MODELS = tuple(catalog.gpu_models())
#: The releases the strategy pins: the supported and the deprecated major (component-matrix.md §2: 26.7.x supported,
#: 26.3.x deprecated). Older releases fail intents that are valid today by construction (their default drivers
#: predate GPUs and features the strategy draws: the known hazards, GC46x); tests/test_chart_releases.py renders
#: on every release.
CHARTS = tuple(v for v in catalog.chart_versions() if releases.version_key(v) >= (26, 3, 0))

# --- YAML ------------------------------------------------------------------------------------------------------


def dump_yaml(data: Any) -> str:
    """Plain data as block-style YAML (ruamel safe dumper), keeping the mappings' insertion order."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def load_plain(text: str) -> Any:
    """YAML text as plain data (ruamel safe loader)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)


def plain(node: Any) -> Any:
    """ruamel's CommentedMap/CommentedSeq tree as plain dicts and lists."""
    if isinstance(node, dict):
        return {k: plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node


# --- names and small values ------------------------------------------------------------------------------------

# Names come from vocabularies built once with a fixed seed: drawing one index is far cheaper than drawing a string
# (generation is the hot path of these tests), and a vocabulary can hold the awkward cases on purpose: words YAML
# would read as null, booleans or numbers if unquoted, digits only, and the 63-character maximum.
_LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_ALNUM = _LOWER_ALNUM + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_TRICKY = ["null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf", "0x1f", "0o17", "1e3", "0",
           "123", "08", "1-0", "exclusive", "gpu", "a-b", "a--b", "x" * 63, "0" * 63, "a" + "-" * 61 + "z"]


def _vocabulary(seed: int, size: int, alphabet: str, inner: str, edges: str, longest: int, tricky=()) -> tuple[str, ...]:
    """Distinct random strings: first and last character from edges, the rest from edges + inner; tricky ones first."""
    import random

    rng = random.Random(seed)
    words = list(tricky)
    while len(words) < size:
        n = rng.choice([1, 2, 3, 5, 8, 12, 20, longest]) if longest else rng.randint(1, 12)
        middle = "".join(rng.choice(alphabet + inner) for _ in range(max(0, n - 2)))
        word = rng.choice(edges) + middle + (rng.choice(edges) if n > 1 else "")
        words.append(word)
    return tuple(dict.fromkeys(words))


#: DNS-1123 labels, up to the 63-character limit.
DNS_LABELS = _vocabulary(1, 400, _LOWER_ALNUM, "-", _LOWER_ALNUM, 63, _TRICKY)
#: The name part of a qualified name (label keys, taint keys) and label values: at most 63 characters.
LABEL_NAMES = _vocabulary(2, 300, _ALNUM, "-_.", _ALNUM, 63, [w for w in _TRICKY if len(w) <= 63] + ["A.b_c-D"])
dns_labels = st.sampled_from(DNS_LABELS)
dns_subdomains = st.lists(st.sampled_from(DNS_LABELS[:200]), min_size=1, max_size=3).map(".".join).filter(
    lambda s: len(s) <= 253)
label_names = st.sampled_from(LABEL_NAMES)
label_values = st.one_of(st.just(""), label_names)
prefixed_keys = st.builds(lambda prefix, name: f"{prefix}/{name}", dns_subdomains, label_names)
label_keys = st.one_of(prefixed_keys, label_names)
#: RBAC subjects: group:NAME and user:NAME (any non-blank name), serviceaccount:NAMESPACE:NAME.
subjects = st.one_of(
    st.builds(lambda kind, name: f"{kind}:{name}", st.sampled_from(["group", "user"]),
              st.sampled_from(LABEL_NAMES + ("alice@example.com", "oidc:alice", "system:masters", "CN=x,O=y"))),
    st.builds(lambda ns, name: f"serviceaccount:{ns}:{name}", dns_labels, st.one_of(dns_labels, dns_subdomains)),
)
#: Free text that a YAML round trip keeps exactly (no control characters, no surrogates).
free_text = st.one_of(st.sampled_from(_TRICKY + ["ProLiant DL380 Gen11", " lead", "trail ", "a: b", "#x", "- x",
                                                 "été", "漢字", "'q'", '"q"', "%p", "@at", "`b`"]),
                      st.text(st.characters(categories=("L", "N", "P", "S", "Zs")), min_size=1, max_size=16))
_paths = st.sampled_from(["/etc/containerd/config.toml", "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
                          "/etc/crio/crio.conf", "/run/containerd/containerd.sock", "/run/k3s/containerd/containerd.sock",
                          "/x", "/a b/c"])
def _reads_back(registry: str) -> bool:
    """The chart prints repositories unquoted (GC353): a registry such as `null` or `1e5` would not survive."""
    import yaml

    try:
        return yaml.safe_load(registry) == registry
    except yaml.YAMLError:
        return False


_registries = st.builds(lambda host, port, path: host + port + path, dns_subdomains,
                        st.sampled_from(["", ":5000", ":443"]),
                        st.sampled_from(["", "/nvidia", "/mirror/nvidia"])).filter(_reads_back)
_profile_names = dns_labels.filter(lambda s: s != "exclusive")
words = st.sampled_from(LABEL_NAMES[:100])
sentences = st.lists(words, min_size=3, max_size=9).map(lambda ws: " ".join(ws) + ".")
#: Driver image tags have three parts (GC316); from branch 580 on, so that no generated pool falls below a GPU's or
#: the DRA stack's driver floor (the known hazards GC461) or into the broken 570 builds (GC460).
driver_versions = st.builds(lambda a, b, c: f"{a}.{b}.{c:02d}", st.integers(580, 700), st.integers(0, 200),
                            st.integers(0, 99))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 10**6),
              st.text(st.characters(categories=("L", "N", "P", "S"), include_characters=" "), max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(_ALNUM, min_size=1, max_size=8), inner, max_size=3)),
    max_leaves=6,
)


def override_values(version: str, path: str) -> st.SearchStrategy[Any]:
    """Values for an override of a chart leaf that its values schema accepts (GC343): the default, or a value of the
    default's type, or any JSON value, kept when the schema agrees."""
    from gpuconf.output import verify
    from gpuconf.render.values import ValuesBuilder

    defaults = catalog.chart(version).defaults
    if path.endswith(".podSelector"):
        # An upgrade pod selector is a label selector the chart prints unquoted: one YAML reads back as a string of
        # the same text (GC352), never `0` or `true`.
        return st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["app", "tier", "team"]),
                         st.text(_ALNUM, min_size=1, max_size=8).filter(lambda v: not v.isdigit()))
    node: Any = defaults
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None  # a key with a dot in it is not addressable
    typed = {bool: st.booleans(), int: st.integers(0, 10**6), str: st.text(_ALNUM, min_size=1, max_size=12),
             list: st.just([]), dict: st.just({})}.get(type(node), json_values)

    # A template that reads the value through Helm's `default` replaces an empty one (GC351): never drawn.
    defaulted = path in catalog.chart(version).helm_defaults

    def fits(value: Any) -> bool:
        if defaulted and value in (False, 0, "", [], {}, None):
            return False
        builder = ValuesBuilder(defaults)
        builder.set(path, value, "", ())
        return not verify.values_failures(builder.merged(), version)

    return st.one_of(st.just(copy.deepcopy(node)), typed, json_values).filter(fits)


def _distinct(values: list[str], rename) -> list[str]:
    """values with each repeat renamed by rename(value, index) (cheaper than a unique list's retries)."""
    out: list[str] = []
    for i, value in enumerate(values):
        candidate, k = value, i
        while candidate in out:
            candidate, k = rename(value, k), k + len(values)
        out.append(candidate)
    return out


def _pick(draw, choices):
    """One of choices; like st.sampled_from, without building a strategy per call (generation is hot)."""
    choices = tuple(choices)
    return choices[draw(st.integers(0, len(choices) - 1))]


def _maybe(draw, out: dict, key: str, strategy: st.SearchStrategy) -> None:
    """Set out[key] to a drawn value, or leave the key out (the field's default)."""
    if draw(st.booleans()):
        out[key] = draw(strategy)


# --- catalogue helpers -----------------------------------------------------------------------------------------


def chart_leaf_paths(version: str) -> tuple[str, ...]:
    """Dotted paths of every leaf of a chart's defaults (a list, a scalar or an empty map)."""
    out: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, f"{prefix}.{key}" if prefix else key)
        else:
            out.append(prefix)

    walk(catalog.chart(version).defaults, "")
    dead = set(catalog.chart(version).dead_keys)  # overrides of dead keys are warnings (GC319)
    # The keys the chart's own `fail` rules read (profiles/hazards.json chartRules): an override of one can make the
    # chart refuse the values at sync, which GC468 says; a random override stays clear of them.
    rules = json.loads(catalog.data_file("hazards.json").read_text(encoding="utf-8"))["chartRules"]
    guarded = {condition["path"] for rule in rules for condition in rule["when"]}
    return tuple(p for p in out if p and "" not in p.split(".") and p not in dead and p not in guarded)


_LEAVES = {version: chart_leaf_paths(version) for version in CHARTS}


@st.composite
def mig_layouts(draw, model: catalog.GpuModel, uniform: bool) -> dict[str, int]:
    """A MIG layout of model that fit_mig_layout accepts; one profile only when uniform."""
    names = sorted(model.mig_profiles)
    if uniform:
        name = _pick(draw, names)
        count = draw(st.integers(1, model.mig_profiles[name].max_instances))
        while count > 1 and not catalog.fit_mig_layout(model, {name: count}).fits:
            count -= 1
        layout = {name: count}
    else:
        layout = {}
        for name, count in draw(st.lists(st.tuples(st.sampled_from(names), st.integers(1, 7)), min_size=1, max_size=6)):
            trial = dict(layout)
            trial[name] = trial.get(name, 0) + min(count, model.mig_profiles[name].max_instances)
            if catalog.fit_mig_layout(model, trial).fits:
                layout = trial
        if not layout:
            layout = {names[0]: 1}
    assert catalog.fit_mig_layout(model, layout).fits, (model.id, layout)
    return layout


# --- the intent ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IntentCase:
    """A generated intent (plain data) and the features it exercises."""

    data: dict
    features: frozenset

    def text(self) -> str:
        return dump_yaml(self.data)


@dataclass
class _Profile:
    """The generator's view of one sharing profile."""

    name: str | None  # None: the built-in exclusive
    kind: str  # exclusive, timeSlicing, mps, mig
    body: dict
    ts_replicas: int = 1
    rename: bool = False  # advertised as nvidia.com/gpu.shared (or with a .shared suffix under MIG mixed)
    layout_spec: dict | None = None  # the mig block: {"layout": ...} or {"preset": ...}
    model_id: str | None = None


def _resolved_layout(profile: _Profile, model: catalog.GpuModel) -> dict[str, int] | None:
    """The per-GPU MIG layout of a MIG profile on a model, or None when it is not valid there."""
    spec = profile.layout_spec
    if spec is None or not model.mig_capable:
        return None
    if "preset" in spec:
        preset = catalog.mig_presets(model).get(spec["preset"])
        return dict(preset) if preset is not None else None
    layout = spec["layout"]
    if any(name not in model.mig_profiles for name in layout) or not catalog.fit_mig_layout(model, layout).fits:
        return None
    return dict(layout)


def _mps_limit(model: catalog.GpuModel) -> int:
    """The device plugin's MPS replicas limit: 48 from compute capability 7.5 on, 16 below (GC309)."""
    major, _, minor = (model.compute_capability or "0.0").partition(".")
    return 48 if (int(major), int(minor or 0)) >= (7, 5) else 16


@st.composite
def _new_profile(draw, model: catalog.GpuModel, mixed_ok: bool, features: set, kind: str | None = None) -> _Profile:
    kinds = ["exclusive-named", "timeSlicing"] + ([] if mixed_ok else ["mps", "mps"])
    if model.mig_capable:
        kinds += ["mig", "mig", "mig+ts"]
    kind = kind or _pick(draw, kinds)
    if kind == "exclusive-named":
        features.add("exclusive-named")
        return _Profile(None, "exclusive", {"exclusive": {}})
    ts = None
    if kind in ("timeSlicing", "mig+ts"):
        ts = {"replicas": draw(st.integers(2, 16))}
        _maybe(draw, ts, "renameByDefault", st.booleans())
        _maybe(draw, ts, "failRequestsGreaterThanOne", st.booleans())
        features.add("ts-rename" if ts.get("renameByDefault") else "ts")
    if kind == "timeSlicing":
        return _Profile(None, "timeSlicing", {"timeSlicing": ts}, ts["replicas"], ts.get("renameByDefault", False))
    if kind == "mps":
        mps = {"replicas": draw(st.integers(2, _mps_limit(model)))}
        _maybe(draw, mps, "renameByDefault", st.booleans())
        features.add("mps")
        return _Profile(None, "mps", {"mps": mps}, mps["replicas"], mps.get("renameByDefault", True))
    presets = sorted(name for name, layout in catalog.mig_presets(model).items() if mixed_ok or len(layout) == 1)
    if draw(st.booleans()):
        spec = {"preset": _pick(draw, presets)}
        features.add("mig-preset")
    else:
        spec = {"layout": draw(mig_layouts(model, uniform=not mixed_ok))}
        features.add("mig-layout")
    features.add("mig+ts" if ts else "mig")
    body = {"mig": spec} if ts is None else dict(draw(st.permutations([("mig", spec), ("timeSlicing", ts)])))
    return _Profile(None, "mig", body, ts["replicas"] if ts else 1, bool(ts and ts.get("renameByDefault")), spec, model.id)


def _pool_resources(profile: _Profile, model: catalog.GpuModel, gpus: int, strategy: str | None) -> tuple[str, dict]:
    """("count", {resource: units per node}) or ("mig", {profile: (resource, units per node)}) for a pool."""
    if profile.kind == "mig":
        layout = _resolved_layout(profile, model)
        if strategy == "mixed":
            suffix = ".shared" if profile.rename else ""
            return "mig", {p: ("nvidia.com/mig-" + p.replace("+", ".") + suffix, n * gpus * profile.ts_replicas)
                           for p, n in layout.items()}
        return "count", {GPU_SHARED if profile.rename else GPU: sum(layout.values()) * gpus * profile.ts_replicas}
    if profile.kind in ("timeSlicing", "mps"):
        return "count", {GPU_SHARED if profile.rename else GPU: gpus * profile.ts_replicas}
    return "count", {GPU: gpus}


@st.composite
def intents(draw, max_pools: int = 5, max_teams: int = 4) -> IntentCase:
    """A cluster intent that is valid by construction (see the module docstring)."""
    features: set[str] = set()
    chart = _pick(draw, CHARTS)
    per_pool_versions = catalog.chart(chart).can("perPoolDrivers")
    n = draw(st.integers(1, max_pools))
    pool_names = draw(st.lists(dns_labels, min_size=n, max_size=n, unique=True))
    models = [catalog.gpu_model(_pick(draw, MODELS)) for _ in range(n)]
    # Half of the intents force their first pool's sharing mode, so that every run sees each mode many times
    # (Hypothesis' examples within a run are correlated, and MPS otherwise needs two lucky draws).
    forced = _pick(draw, [None, None, None, "mps", "mig", "timeSlicing"])
    if forced == "mig" and not models[0].mig_capable:
        models[0] = catalog.gpu_model(_pick(draw, [m for m in MODELS if catalog.gpu_model(m).mig_capable]))

    # MIG strategy: either MPS may appear (layouts uniform, strategy single), or mixed layouts may (no MPS).
    mixed_ok = forced != "mps" and draw(st.booleans())
    pinned = _pick(draw, [None, "mixed"] if mixed_ok else [None, "single"])

    # --- sharing profiles
    profile_names = iter(draw(st.lists(_profile_names, min_size=n, max_size=n, unique=True)))
    declared: list[_Profile] = []
    pool_profiles: list[_Profile] = []
    for index, model in enumerate(models):
        reusable = [p for p in declared if p.kind == "mig" and _resolved_layout(p, model) is not None
                    and (mixed_ok or len(_resolved_layout(p, model)) == 1)
                    or p.kind == "mps" and p.ts_replicas <= _mps_limit(model) or p.kind in ("exclusive", "timeSlicing")]
        choices = ["builtin", "new", "new", "new"] + (["reuse"] if reusable else [])
        choice = "new" if index == 0 and forced else _pick(draw, choices)
        if choice == "builtin":
            pool_profiles.append(_Profile(None, "exclusive", {}))
            features.add("exclusive")
            continue
        if choice == "reuse":
            prof = _pick(draw, reusable)
            features.add("reuse-mig-other-model" if prof.kind == "mig" and prof.model_id != model.id else "reuse")
        else:
            prof = draw(_new_profile(model, mixed_ok, features, forced if index == 0 else None))
            prof.name = next(profile_names)
            declared.append(prof)
        pool_profiles.append(prof)

    layouts = [_resolved_layout(p, m) for p, m in zip(pool_profiles, models) if p.kind == "mig"]
    strategy = pinned or (None if not layouts else "single" if all(len(lay) == 1 for lay in layouts) else "mixed")
    assert not (strategy == "mixed" and any(p.kind == "mps" for p in pool_profiles))
    features.add(f"strategy-{strategy}")
    if pinned:
        features.add(f"pinned-{pinned}")

    # --- cluster, operator, driver
    cluster: dict[str, Any] = {"kubernetesVersion": _pick(draw, KUBERNETES_VERSIONS)}
    # GKE and AKS take one driver mode for every pool and EKS's accelerated AMIs ship the driver (GC346), OpenShift's
    # OLM route knows one chart's bundle (GC348): tests/test_platforms.py covers those; here EKS runs Ubuntu nodes
    # (the operator's driver) and OpenShift installs with Helm, as any other distribution.
    _maybe(draw, cluster, "distribution", st.sampled_from([d for d in DISTRIBUTIONS if d not in ("gke", "aks")]))
    if cluster.get("distribution") == "eks":
        cluster["eks"] = {"ami": "ubuntu"}
    elif cluster.get("distribution") == "openshift":
        cluster["openshift"] = {"install": "helm"}
    # gpuconf derives containerd's paths on rke2, k3s and microk8s; the intent's paths win (GC327 warns about cri-o's).
    relocated = cluster.get("distribution") in ("rke2", "k3s", "microk8s")
    if relocated or draw(st.booleans()):
        runtime: dict[str, Any] = {}
        if relocated:
            _maybe(draw, runtime, "name", st.just("containerd"))
            runtime["configPath"], runtime["socketPath"] = draw(_paths), draw(_paths)
        elif draw(st.booleans()):
            runtime["name"] = "cri-o"
        else:
            _maybe(draw, runtime, "name", st.just("containerd"))
            _maybe(draw, runtime, "configPath", _paths)
            _maybe(draw, runtime, "socketPath", _paths)
        cluster["containerRuntime"] = dict(draw(st.permutations(list(runtime.items()))))
    if pinned:
        cluster["migStrategy"] = pinned

    operator: dict[str, Any] = {"chartVersion": chart}
    _maybe(draw, operator, "namespace", dns_labels)
    _maybe(draw, operator, "registry", _registries)
    _maybe(draw, operator, "imagePullSecrets", st.lists(dns_labels, max_size=3, unique=True))

    cluster_preinstalled = draw(st.booleans())
    driver: dict[str, Any] = {}
    if cluster_preinstalled:
        driver["preinstalled"] = True
    else:
        _maybe(draw, driver, "preinstalled", st.just(False))
        _maybe(draw, driver, "version", driver_versions)
    # GH200 needs the open kernel modules (the known hazard GC462): no proprietary ones on a cluster with one.
    grace = any(m.id.startswith("GH200") for m in models)
    _maybe(draw, driver, "kernelModuleType", st.sampled_from(["auto", "open"] + ([] if grace else ["proprietary"])))

    # --- pools
    mode = _pick(draw, ["labels", "hostname", "dmi"])
    features.add(f"disjoint-{mode}")
    separator_key = draw(prefixed_keys)
    label_vals = _distinct(draw(st.lists(label_values, min_size=n, max_size=n)), lambda v, i: f"{v[:58] or 'v'}-{i}")
    dmi_vals = _distinct(draw(st.lists(free_text, min_size=n, max_size=n)), lambda v, i: f"{v} #{i}")
    host_tag = draw(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6))
    pci_sets = [set(m.pci_device_ids) for m in models]
    pools: list[dict] = []
    managed: list[str] = []
    following: list[str] = []
    for i, (name, model, prof) in enumerate(zip(pool_names, models, pool_profiles)):
        unique_model = all(not (pci_sets[i] & pci_sets[j]) for j in range(n) if j != i)
        match: dict[str, Any] = {}
        if unique_model and draw(st.booleans()):
            match["pciDevice"] = True  # the model alone keeps this pool apart
            features.add("disjoint-pci")
        elif mode == "labels":
            match["nodeLabels"] = {separator_key: label_vals[i]}
        elif mode == "hostname":
            match["hostname"] = f"^{host_tag}{i:02d}-" + _pick(draw, ["", "[0-9]+$", "gpu-.*", "[ab]"])
        else:
            match["dmiProduct"] = dmi_vals[i]
        # Extra criteria only narrow a pool, so they never make two disjoint pools overlap.
        if "pciDevice" not in match:
            _maybe(draw, match, "pciDevice", st.booleans())
        if draw(st.booleans()):
            extra = draw(st.dictionaries(label_keys, label_values, max_size=2))
            extra.pop(separator_key, None)
            match["nodeLabels"] = {**match.get("nodeLabels", {}), **extra}
        if "hostname" not in match:
            _maybe(draw, match, "hostname", st.sampled_from([f"^{name}-", "^gpu-[0-9]+$", ".*", "node-(a|b)-\\d{2}"]))
        if "dmiProduct" not in match:
            _maybe(draw, match, "dmiProduct", free_text)
        match = dict(draw(st.permutations(list(match.items()))))

        pool: dict[str, Any] = {"name": name, "gpu": model.id, "gpusPerNode": draw(st.integers(1, 16)),
                                "nodes": draw(st.integers(1, 50)), "match": match}
        if prof.name is not None:
            pool["sharing"] = prof.name
        elif draw(st.booleans()):
            pool["sharing"] = "exclusive"
        taints = draw(st.lists(st.fixed_dictionaries({"key": prefixed_keys, "effect": st.sampled_from(
            ["NoSchedule", "PreferNoSchedule", "NoExecute"])}, optional={"value": label_values}),
            max_size=3, unique_by=lambda t: (t["key"], t["effect"])))
        if taints:
            pool["taints"] = taints
            features.add("taints")
        # Per-pool driver versions need chart v26.7.0 or later (GC329); a preinstalled pool driver under a
        # preinstalled cluster default is a warning (GC324).
        pool_driver = _pick(draw, ["none", "none"] + (["version"] if per_pool_versions else [])
                            + ([] if cluster_preinstalled else ["preinstalled"]))
        if pool_driver == "version":
            pool["driver"] = {"version": draw(driver_versions)}
            _maybe(draw, pool["driver"], "preinstalled", st.just(False))
            features.add("pool-driver-version")
        elif pool_driver == "preinstalled":
            pool["driver"] = {"preinstalled": True}
            features.add("pool-driver-preinstalled")
        if pool_driver == "version" or (pool_driver == "none" and not cluster_preinstalled):
            managed.append(name)
        if pool_driver == "none" and not cluster_preinstalled:
            following.append(name)  # on the cluster driver: what upgrade waves may list (GC323)
        if draw(st.integers(0, 4)) == 0:
            pool["allowQuotaOversubscription"] = True
        pools.append(pool)

    if draw(st.booleans()):
        upgrade: dict[str, Any] = {}
        _maybe(draw, upgrade, "autoUpgrade", st.booleans())
        _maybe(draw, upgrade, "maxParallel", st.integers(0, 20))
        _maybe(draw, upgrade, "maxUnavailable", st.one_of(st.integers(0, 100), st.integers(0, 100).map(lambda p: f"{p}%")))
        _maybe(draw, upgrade, "drain", st.fixed_dictionaries({}, optional={
            "enable": st.booleans(), "force": st.booleans(), "timeoutSeconds": st.integers(0, 3600),
            "deleteEmptyDir": st.booleans(), "podSelector": st.just("app=batch")}))
        _maybe(draw, upgrade, "podDeletion", st.fixed_dictionaries({}, optional={
            "force": st.booleans(), "timeoutSeconds": st.integers(0, 3600), "deleteEmptyDir": st.booleans()}))
        _maybe(draw, upgrade, "waitForCompletion", st.fixed_dictionaries(
            {"podSelector": st.just("app.kubernetes.io/component=training")},
            optional={"timeoutSeconds": st.integers(0, 7200)}))
        # Waves give each pool its own NVIDIADriver, which needs chart v26.7.0 or later (GC329).
        wave_kind = _pick(draw, ["none", "canary", "waves"]) if following and per_pool_versions else "none"
        if wave_kind == "canary":
            upgrade["canaryPool"] = _pick(draw, following)
            features.add("canary")
        elif wave_kind == "waves":
            order = draw(st.permutations(following))
            cuts = sorted(set(draw(st.lists(st.integers(1, len(order)), max_size=3))) - {len(order)})
            listed = order[:len(order) - draw(st.integers(0, len(order) - 1))]
            bounds = [0, *[c for c in cuts if c < len(listed)], len(listed)]
            upgrade["waves"] = [list(listed[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]
            features.add("waves")
        if wave_kind != "none" and draw(st.booleans()):
            if wave_kind == "canary":
                count = 1 + (len(following) > 1)
            else:
                count = len(upgrade["waves"]) + (sum(map(len, upgrade["waves"])) < len(following))
            upgrade["rollout"] = {"version": "600.10.01", "wave": draw(st.integers(0, count))}
            features.add("rollout")
        driver["upgrade"] = upgrade

    # --- teams and quotas
    t = draw(st.integers(0, max_teams))
    team_names = draw(st.lists(dns_labels, min_size=t, max_size=t, unique=True))
    # A team never owns the operator's namespace (GC302).
    operator_ns = operator.get("namespace", "gpu-operator")
    namespaces = iter(draw(st.lists(dns_labels.filter(lambda ns: ns != operator_ns), min_size=3 * t, max_size=3 * t,
                                    unique=True)))
    shapes = [_pool_resources(p, m, pool["gpusPerNode"], strategy) for p, m, pool in zip(pool_profiles, models, pools)]
    left: dict[tuple[int, str], int] = {}
    for i, (shape, per_node) in enumerate(shapes):
        for key, value in per_node.items():
            left[(i, key)] = (value[1] if shape == "mig" else value) * pools[i]["nodes"]
    teams = []
    for team_name in team_names:
        team: dict[str, Any] = {"name": team_name,
                                "namespaces": [next(namespaces) for _ in range(draw(st.integers(1, 3)))]}
        quota: dict[str, Any] = {}
        counted: set[str] = set()  # resources this team already has a count quota on (GC330 otherwise)
        for i in draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)):
            shape, per_node = shapes[i]
            oversubscribe = pools[i].get("allowQuotaOversubscription", False)

            def amount(key: tuple[int, str]) -> int:
                # A quota applies to each of the team's namespaces (GC315).
                copies = len(team["namespaces"])
                most = left[key] * 2 + 3 if oversubscribe else left[key] // copies
                value = draw(st.integers(0, most))
                left[key] = max(0, left[key] - value * copies)
                return value

            if shape == "count":
                (resource,) = per_node
                if resource in counted:
                    continue
                counted.add(resource)
                quota[pools[i]["name"]] = amount((i, resource))
                features.add("quota-count")
            else:
                profiles = draw(st.lists(st.sampled_from(sorted(per_node)), min_size=1, unique=True))
                quota[pools[i]["name"]] = {p: amount((i, p)) for p in profiles}
                features.add("quota-mig")
            if oversubscribe:
                features.add("quota-oversubscribed")
        if quota:
            team["quota"] = quota
        _maybe(draw, team, "priority", st.sampled_from(PRIORITY_TIERS))
        teams.append(team)

    spec: dict[str, Any] = {"cluster": cluster, "operator": operator}
    if driver or draw(st.booleans()):
        spec["driver"] = driver
    if declared:
        spec["sharingProfiles"] = {p.name: p.body for p in declared}
    spec["pools"] = pools
    if teams:
        spec["teams"] = teams
        features.add("teams")
    queued = [team for team in teams if team.get("quota")]
    minor = tuple(int(p) for p in cluster["kubernetesVersion"].split("."))
    if queued and minor >= (1, 29) and draw(st.booleans()):  # Kueue v0.19.2 needs Kubernetes 1.29
        kueue: dict[str, Any] = {"version": "v0.19.2"}
        if draw(st.booleans()):
            kueue["cohort"] = draw(dns_labels)
            features.add("kueue-cohort")
        elif draw(st.booleans()):
            kueue["resourceQuotas"] = True  # (with a cohort it would warn, GC366)
            features.add("kueue-resource-quotas")
        for team in queued:  # under Kueue a quota of 0 only borrows, which needs a lender (GC336): leave it out
            for pool_name, value in list(team["quota"].items()):
                value = value if isinstance(value, int) else {p: c for p, c in value.items() if c} or 0
                if value:
                    team["quota"][pool_name] = value
                else:
                    del team["quota"][pool_name]
            if not team["quota"]:
                del team["quota"]
        queued = [team for team in queued if team.get("quota")]
        queue_teams: dict[str, Any] = {}
        for team in queued:
            entry: dict[str, Any] = {"otherResources": {"cpu": draw(st.sampled_from([1, 64, "500m", "2.5"])),
                                                        "memory": draw(st.sampled_from(["512Mi", "64Gi", "1Ti"]))}}
            if "cohort" in kueue and draw(st.booleans()):
                # A lending limit within the nominal quota (GC362); borrowing is left out: it needs a lender.
                pool_name = draw(st.sampled_from(sorted(team["quota"])))
                value = team["quota"][pool_name]
                entry["lendingLimit"] = {pool_name: draw(st.integers(0, value)) if isinstance(value, int) else
                                         {p: draw(st.integers(0, c)) for p, c in value.items()}}
                features.add("kueue-limits")
            queue_teams[team["name"]] = entry
        kueue["teams"] = queue_teams
        spec["queueing"] = {"kueue": kueue}
        features.add("kueue")
    if draw(st.booleans()):
        access: dict[str, Any] = {}
        _maybe(draw, access, "admins", st.lists(subjects, max_size=3))
        if team_names:
            devs = draw(st.lists(st.sampled_from(team_names), unique=True))
            if devs:
                access["developers"] = {name: draw(st.lists(subjects, max_size=3)) for name in devs}
                features.add("access-developers")
        _maybe(draw, access, "observers", st.lists(subjects, max_size=3))
        spec["access"] = access
    if draw(st.booleans()):
        monitoring: dict[str, Any] = {}
        _maybe(draw, monitoring, "serviceMonitor", st.booleans())
        _maybe(draw, monitoring, "interval", st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, 999),
                                                       st.sampled_from(["ms", "s", "m", "h"])))
        _maybe(draw, monitoring, "prometheusSelector", st.dictionaries(label_keys, label_values, max_size=2))
        _maybe(draw, monitoring, "alerts", st.fixed_dictionaries({}, optional={
            "gpuTempCelsius": st.one_of(st.none(), st.integers(40, 120)), "xidErrors": st.booleans(),
            "eccDoubleBit": st.booleans(), "gpusUnavailable": st.booleans()}))
        spec["monitoring"] = monitoring
        features.add("monitoring")
    paths = draw(st.lists(st.sampled_from(_LEAVES[chart]), unique=True, max_size=3))
    if paths:
        spec["overrides"] = [{"path": p, "value": draw(override_values(chart, p)), "why": draw(sentences)}
                             for p in paths]
        features.add("overrides")
        # GPUDirect Storage on needs the open kernel modules (the known hazard gds-open-kernel-modules, GC462).
        if any(o["path"] == "gds.enabled" and o["value"] is True for o in spec["overrides"]):
            spec.setdefault("driver", driver)["kernelModuleType"] = "open"

    metadata: dict[str, Any] = {"name": draw(dns_labels)}
    _maybe(draw, metadata, "labels",
           st.dictionaries(free_text, st.text(st.characters(categories=("L", "N")), max_size=10), max_size=3))
    data = {"apiVersion": "gpuconf.dev/v1alpha1", "kind": "ClusterIntent", "metadata": metadata, "spec": spec}
    return IntentCase(data, frozenset(features))


# --- mutations -------------------------------------------------------------------------------------------------

#: Strings that are hard on whoever reads them: regexes that do not compile (or overflow), YAML-ish words, paths.
NASTY_STRINGS = ("", " ", "\t", "x\ny", "a{4294967296}", "^gpu-a{99999999999}", "(" * 1000 + ")" * 1000, "(", "[",
                 "\\", "(?P<a>x)(?P<a>y)",
                 "(?<=a+)b", "^", "^$", ".*", "a" * 300, "0", "-1", "1.10", "yes", "null", "~", "*", "|", "-", ".",
                 "..", "a..b", "a.", "/", "a/", "/a", "{{ .Values }}", "${HOME}", "%", "\u202eevil", "\u00e9",
                 "v26.7.0", "v0.0.0", "v99999999999999999999.0.0", "26.7.0", "vX", "1.33", "all-", "all-balanced",
                 "all-1g.10gb.me", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "group:", "serviceaccount:a",
                 "user:a b", "100%", "101%", "-5%", "%", "25 %")
#: Words the rules look up: models, MIG profiles and presets of every model, chart versions, built-in names.
DOMAIN_WORDS = tuple(sorted(set(MODELS) | {p for m in catalog.gpu_models().values() for p in m.mig_profiles}
                            | {p for m in catalog.gpu_models().values() for p in catalog.mig_presets(m)}
                            | set(CHARTS) | {"exclusive", "single", "mixed", "containerd", "cri-o", "NoSchedule"}))

scalars_by_type = {
    "str": st.one_of(st.text(max_size=20), st.sampled_from(["", "yes", "1.10", "0x1f", "~", "exclusive", "A100-80GB"])),
    "int": st.one_of(st.integers(-5, 100), st.sampled_from([-1, 0, 2**31, 2**63, 10**30, -(10**30)])),
    "float": st.floats(allow_nan=True, allow_infinity=True),
    "bool": st.booleans(),
    "none": st.none(),
}
_leaf = st.one_of(*scalars_by_type.values())
_key = st.one_of(st.text(min_size=1, max_size=12), st.integers(-3, 3), st.floats(allow_nan=False), st.booleans(), st.none())
values_by_type = {
    **scalars_by_type,
    "list": st.lists(_leaf, max_size=3),
    "dict": st.dictionaries(_key, _leaf, max_size=3),
}


def type_name(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    for name, kind in (("int", int), ("float", float), ("str", str), ("list", list), ("dict", dict)):
        if isinstance(value, kind):
            return name
    return "other"


def _slots(node: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every value below node (not the root)."""
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out.append(path + (key,))
        out.extend(_slots(value, path + (key,)))
    return out


def _get(root: Any, path: tuple) -> Any:
    for part in path:
        root = root[part]
    return root


def _set(root: Any, path: tuple, value: Any) -> None:
    _get(root, path[:-1])[path[-1]] = value


def _names_in(tree: Any) -> list[str]:
    """Names declared in an intent tree (pools, teams, profiles), for mutations that refer to them."""
    spec = tree.get("spec") if isinstance(tree, dict) else None
    if not isinstance(spec, dict):
        return []
    out = []
    for section in ("pools", "teams"):
        items = spec.get(section)
        if isinstance(items, list):
            out += [item["name"] for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)]
    profiles = spec.get("sharingProfiles")
    if isinstance(profiles, dict):
        out += [k for k in profiles if isinstance(k, str)]
    return out


def mutate_structure(data: st.DataObject, tree: dict, steps: int) -> tuple[dict, list[str]]:
    """Apply `steps` random structural mutations to a deep copy of tree; returns it and a log of what was done."""
    tree = copy.deepcopy(tree)
    log: list[str] = []
    for _ in range(steps):
        slots = _slots(tree)
        dicts = [()] + [p for p in slots if isinstance(_get(tree, p), dict)]
        lists = [p for p in slots if isinstance(_get(tree, p), list) and _get(tree, p)]
        ints = [p for p in slots if type_name(_get(tree, p)) == "int"]
        spec = tree.get("spec")
        pools = spec.get("pools") if isinstance(spec, dict) else None
        pool_names = isinstance(pools, list) and len(pools) >= 2 and all(isinstance(p, dict) and "name" in p for p in pools)
        ops = ["insert-key"] + (["delete", "retype", "swap"] if slots else []) + (["duplicate"] if lists else [])
        ops += (["number"] if ints else []) + (["rename-pool"] if pool_names else [])
        ops += ["nasty-string", "domain-word", "rename-key"] if slots else []
        op = data.draw(st.sampled_from(ops), label="op")
        path: Any = ()
        if op == "delete":
            path = data.draw(st.sampled_from(slots), label="path")
            del _get(tree, path[:-1])[path[-1]]
        elif op == "insert-key":
            path = data.draw(st.sampled_from(dicts), label="path")
            key = data.draw(_key, label="key")
            if isinstance(key, float) and math.isnan(key):
                key = "nan"
            value = data.draw(st.one_of(*values_by_type.values()), label="value")
            _get(tree, path)[key] = value
        elif op == "retype":
            path = data.draw(st.sampled_from(slots), label="path")
            other = [t for t in values_by_type if t != type_name(_get(tree, path))]
            kind = data.draw(st.sampled_from(other), label="type")
            _set(tree, path, data.draw(values_by_type[kind], label="value"))
        elif op == "swap":
            a = data.draw(st.sampled_from(slots), label="a")
            unrelated = [p for p in slots if p[:len(a)] != a and a[:len(p)] != p]
            if not unrelated:
                continue
            b = data.draw(st.sampled_from(unrelated), label="b")
            va, vb = _get(tree, a), _get(tree, b)
            _set(tree, a, vb)
            _set(tree, b, va)
            path = (a, b)
        elif op == "duplicate":
            path = data.draw(st.sampled_from(lists), label="path")
            items = _get(tree, path)
            i = data.draw(st.integers(0, len(items) - 1), label="index")
            items.insert(i, copy.deepcopy(items[i]))
        elif op == "number":
            path = data.draw(st.sampled_from(ints), label="path")
            old = _get(tree, path)
            _set(tree, path, data.draw(st.sampled_from([-old, -1, 0, 2**31, 2**63, 10**30, -(10**30)]), label="value"))
        elif op == "rename-pool":
            i, j = data.draw(st.lists(st.integers(0, len(pools) - 1), min_size=2, max_size=2, unique=True), label="pools")
            pools[i]["name"] = pools[j]["name"]
            path = (i, j)
        elif op in ("nasty-string", "domain-word"):
            path = data.draw(st.sampled_from(slots), label="path")
            words = NASTY_STRINGS if op == "nasty-string" else DOMAIN_WORDS + tuple(_names_in(tree))
            _set(tree, path, data.draw(st.sampled_from(words), label="word"))
        elif op == "rename-key":
            keyed = [p for p in slots if isinstance(_get(tree, p[:-1]), dict)]
            path = data.draw(st.sampled_from(keyed), label="path")
            parent = _get(tree, path[:-1])
            new = data.draw(st.sampled_from(NASTY_STRINGS + DOMAIN_WORDS + tuple(_names_in(tree))), label="key")
            # Keep the key's place: rebuild the mapping in order with the key renamed (a duplicate just merges).
            items = [(new if k == path[-1] else k, v) for k, v in parent.items()]
            parent.clear()
            parent.update(items)
        log.append(f"{op} {path!r}")
    return tree, log


_SNIPPETS = ["&a ", "*a", "!!str ", "!!binary ", "? ", "- ", ": ", "{", "}", "[", "]", "#", "%YAML 1.2\n", "---\n",
             "...\n", "|", ">", "'", '"', "\\", "@", "`", "\t", "\n", " ", "\r", "\r\n", "\ufeff", "\u2028", "\x85"]
_CONTROL = [chr(c) for c in list(range(0, 9)) + [11, 12] + list(range(14, 32)) + [127]] + ["\x80", "\x9f", "\ufffe", "\uffff"]
_BAD_BYTES = [b"\x80", b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf"]


def mutate_text(data: st.DataObject, text: str, steps: int) -> tuple[bytes, list[str]]:
    """Apply `steps` random character/line mutations to YAML text; returns the bytes (maybe not UTF-8) and a log."""
    log: list[str] = []
    raw_bad: tuple[int, bytes] | None = None
    for _ in range(steps):
        op = data.draw(st.sampled_from(["delete-char", "insert", "replace-char", "dup-line", "drop-line", "tab",
                                        "control", "snippet", "bad-byte"]), label="text-op")
        pos = data.draw(st.integers(0, len(text)), label="pos")
        if op == "delete-char" and text:
            text = text[:pos] + text[pos + 1:]
        elif op == "insert":
            text = text[:pos] + data.draw(st.characters(exclude_categories=("Cs",)), label="char") + text[pos:]
        elif op == "replace-char" and text:
            text = text[:pos] + data.draw(st.sampled_from(_SNIPPETS + _CONTROL), label="char") + text[pos + 1:]
        elif op in ("dup-line", "drop-line"):
            lines = text.splitlines(keepends=True)
            if lines:
                i = data.draw(st.integers(0, len(lines) - 1), label="line")
                lines[i:i + 1] = [lines[i]] * (2 if op == "dup-line" else 0)
                text = "".join(lines)
        elif op == "tab":
            text = text[:pos] + "\t" + text[pos:]
        elif op == "control":
            text = text[:pos] + data.draw(st.sampled_from(_CONTROL), label="control") + text[pos:]
        elif op == "snippet":
            text = text[:pos] + data.draw(st.sampled_from(_SNIPPETS), label="snippet") + text[pos:]
        elif op == "bad-byte":
            raw_bad = (pos, data.draw(st.sampled_from(_BAD_BYTES), label="byte"))
        log.append(f"{op}@{pos}")
    raw = text.encode("utf-8")
    if raw_bad is not None:
        at = len(text[:raw_bad[0]].encode("utf-8")) if raw_bad[0] <= len(text) else len(raw)
        raw = raw[:at] + raw_bad[1] + raw[at:]
    return raw, log

"""Known hazards (profiles/hazards.json): which documented breakages a pool, a cluster or a node runs into.

The table is derived by tools/derive_hazards.py from tools/reference/hazards.yaml, each entry citing the lines of
the GPU Operator's release notes or platform support page it comes from. An entry applies when every one of its
conditions holds; a condition on something not known (a preinstalled driver's version, the OS of an intent's nodes)
leaves the entry undecided, never applied.
"""

from __future__ import annotations

import functools
import json
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from . import catalog

#: Conditions that are about one pool (or node): an entry without any is about the whole cluster.
POOL_CONDITIONS = frozenset({"gpus", "drivers", "kernelModules", "os", "kernels", "arch", "containerd"})
POOL_FEATURES = frozenset({"mig", "migNextToWhole", "preinstalled", "managed", "allBalanced"})
#: Conditions the intent chooses (a hazard it avoids by one of them is worth saying in the report); not using a
#: feature is no such choice.
CHOSEN = frozenset({"drivers", "charts", "kernelModules", "toolkit", "migManager", "distributions", "kubernetes"})
#: Features an intent can only approximate: gpuconf gives every GPU of a node the same MIG layout, so "MIG slices
#: next to whole GPUs" means, in an intent, a MIG pool and a whole-GPU pool of one model under the mixed strategy.
APPROXIMATE = frozenset({"migNextToWhole"})
APPROXIMATE_NOTE = ("in the intent: MIG and whole GPUs of one model under the mixed strategy; a node that carries "
                    "both is what breaks")
OPEN_AUTO_FROM = "570.86.15"  # driver.kernelModuleType=auto installs the open modules from here on (PS:696)


@dataclass(frozen=True)
class Hazard:
    """One entry of the table."""

    id: str
    code: str
    severity: str
    applies: Mapping[str, Any]
    breaks: str
    fix: str
    seen_by: tuple[str, ...]
    sources: tuple[Mapping[str, Any], ...]

    @functools.cached_property
    def pool_level(self) -> bool:
        """True when a condition is about one pool or node (worked out once per entry)."""
        return bool(POOL_CONDITIONS & set(self.applies)) or bool(POOL_FEATURES & set(self.applies.get("features", ())))

    def cite(self) -> str:
        """Where the entry comes from: page:lines, per page."""
        return cite(self.sources)


def cite(sources: Iterable[Mapping[str, Any]]) -> str:
    """Source lines grouped by page: gpu-operator/release-notes.rst:819,822 (NVIDIA/cloud-native-docs)."""
    by_page: dict[str, list[int]] = {}
    for src in sources:
        by_page.setdefault(src["page"], []).append(src["line"])
    pages = "; ".join(f"gpu-operator/{page}:{','.join(str(n) for n in sorted(set(lines)))}"
                      for page, lines in sorted(by_page.items()))
    return f"{pages} (NVIDIA/cloud-native-docs)"


@functools.cache
def table() -> dict[str, Any]:
    """profiles/hazards.json, parsed."""
    data: dict[str, Any] = json.loads(catalog.data_file("hazards.json").read_text(encoding="utf-8"))
    return data


@functools.cache
def hazards() -> tuple[Hazard, ...]:
    """Every entry, by id."""
    return tuple(Hazard(h["id"], h["code"], h["severity"], h["appliesTo"], h["breaks"], h["fix"],
                        tuple(h["seenBy"]), tuple(h["sources"])) for h in table()["hazards"])


def codes() -> Mapping[str, str]:
    """The hazard classes' finding codes and titles."""
    return table()["codes"]


def validated_drivers(chart: str) -> Mapping[str, Any] | None:
    """The driver versions the release notes name for a chart, with their sources; None when not tabled."""
    return table()["validatedDrivers"].get(chart)


def chart_rules(chart: str) -> list[Mapping[str, Any]]:
    """The chart's own fail rules."""
    return [r for r in table()["chartRules"] if chart in r["charts"]]


# --- versions ----------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def version_key(text: str) -> tuple[int, ...]:
    """v0.13.1, 570.148.08, 1.33 -> numbers; a suffix (-ubuntu22.04, +build) and a leading v are ignored. Cached:
    every pool of every cluster of a fleet compares the same few versions with the whole table."""
    core = text.strip().lstrip("vV").split("-")[0].split("+")[0]
    out = []
    for part in core.split("."):
        digits = "".join(c for c in part if c.isdigit())
        if not digits or len(digits) > 12:  # no version has a longer part; int() refuses 4,300 digits and more
            break
        out.append(int(digits))
    return tuple(out)


def _in_range(value: str, cond: Mapping[str, Any]) -> bool:
    key = version_key(value)
    if "in" in cond and key not in {version_key(v) for v in cond["in"]}:
        return False
    if "from" in cond and key < version_key(cond["from"]):
        return False
    if "below" in cond and not key < version_key(cond["below"]):
        return False
    if "upTo" in cond and key > version_key(cond["upTo"]):
        return False
    if "before" in cond and not key < version_key(cond["before"]):
        return False
    if "outside" in cond:
        low, high = (version_key(v) for v in cond["outside"])
        return key[:2] < low or key[:2] > high
    return True


# --- facts and matching ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What is known of one pool, node or cluster; None: not known."""

    chart: str | None = None
    distribution: str | None = None
    kubernetes: str | None = None
    mig_manager: str | None = None
    toolkit: str | None = None
    features: frozenset[str] = frozenset()
    gpu: str | None = None
    driver: str | None = None
    kernel_modules: str | None = None  # open, proprietary
    os: str | None = None  # ubuntu22.04, rhel8, rocky9, ...
    kernel: str | None = None  # <major>.<minor>
    arch: str | None = None
    containerd: str | None = None  # its version; "" when the runtime is not containerd


#: The Facts field each condition is about ("features" is tested on its own).
_FIELD = {"gpus": "gpu", "drivers": "driver", "charts": "chart", "migManager": "mig_manager", "toolkit": "toolkit",
          "distributions": "distribution", "kubernetes": "kubernetes", "kernelModules": "kernel_modules", "os": "os",
          "kernels": "kernel", "arch": "arch", "containerd": "containerd"}


def _holds(name: str, cond: Any, facts: Facts) -> bool | None:
    """Whether one condition holds: True, False, or None when the facts do not say."""
    if name == "features":
        return all(f in facts.features for f in cond)
    value = getattr(facts, _FIELD[name])
    if value is None:
        return None
    if name == "kernelModules":
        return value != "open"
    if isinstance(cond, list):
        return value in cond
    if name == "kernels":
        return value not in cond["notIn"]
    if value == "":
        return False  # e.g. containerd conditions on a cri-o node
    return _in_range(value, cond)


@dataclass(frozen=True)
class Verdict:
    """How an entry stands against some facts."""

    hazard: Hazard
    failed: tuple[str, ...] = ()  # conditions that do not hold
    unknown: tuple[str, ...] = ()  # conditions the facts do not decide

    @property
    def applies(self) -> bool:
        """Every condition holds."""
        return not self.failed and not self.unknown

    @property
    def avoided(self) -> bool:
        """Exactly one condition fails, one the intent chose, and every other holds."""
        return len(self.failed) == 1 and not self.unknown and self.failed[0] in CHOSEN


def judge(hazard: Hazard, facts: Facts) -> Verdict:
    """The entry against the facts. An entry of the table is judged once per distinct facts: validation and the
    report judge every pool's, and the pools of a fleet's clusters mostly share theirs."""
    verdict = _table_verdicts(facts).get(hazard.id)
    return verdict if verdict is not None and verdict.hazard is hazard else _judge(hazard, facts)


@functools.lru_cache(maxsize=4096)
def _table_verdicts(facts: Facts) -> Mapping[str, Verdict]:
    """Every entry of the table against the facts, by id (Verdicts are frozen: callers share them)."""
    return {h.id: _judge(h, facts) for h in hazards()}


def _judge(hazard: Hazard, facts: Facts) -> Verdict:
    failed, unknown = [], []
    for name, cond in sorted(hazard.applies.items()):
        held = _holds(name, cond, facts)
        if held is None:
            unknown.append(name)
        elif not held:
            failed.append(name)
    return Verdict(hazard, tuple(failed), tuple(unknown))


def matching(facts: Facts, where: str, pool_level: bool | None = None) -> list[Verdict]:
    """Verdicts of the entries a check (validate or audit) sees, at one level (pool or cluster; None: both)."""
    return [judge(h, facts) for h in hazards()
            if where in h.seen_by and (pool_level is None or h.pool_level == pool_level)]


# --- facts of an intent -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolFacts:
    """The facts of one pool, and where in the intent its driver version comes from."""

    facts: Facts
    driver_loc: tuple | None = None


@dataclass
class IntentFacts:
    """The facts of an intent: the cluster's, and each pool's."""

    cluster: Facts
    pools: list[PoolFacts] = field(default_factory=list)


#: What a render plans of each intent the hazard rules looked at, by the intent's identity while it lives: the
#: document it came from and the values builder (never the plan, which would keep the intent alive), or None when
#: it cannot be planned. The rules of one validation ask for the same (frozen) intent twice, and a render of that
#: intent from that document takes the builder over instead of planning the values again (render_tree: a fleet
#: validates all its clusters before it renders any).
_PLANNED: dict[int, tuple[weakref.ref, Any, Any]] = {}


def values_of(intent, document: Any = None) -> dict | None:
    """The chart values a render of the intent from document gives (defaults, gpuconf's changes, overrides), or
    None when the intent is too broken to plan. Callers read them and never modify them (they are shared)."""
    builder = _planned(intent, document)
    return builder.merged_view() if builder is not None else None


def planned_values(plan) -> Any:
    """The values builder values_of made for the plan's intent and document (a ValuesBuilder), or None."""
    hit = _PLANNED.get(id(plan.intent))
    if hit is None or hit[0]() is not plan.intent or hit[1] is not plan.document or hit[2] is None:
        return None
    return hit[2]


def _planned(intent, document: Any) -> Any:
    key = id(intent)
    hit = _PLANNED.get(key)
    if hit is not None and hit[0]() is intent and hit[1] is document:
        return hit[2]
    planned = _plan(intent, document)
    _PLANNED[key] = (weakref.ref(intent, functools.partial(_forget, key)), document, planned)
    return planned


def _forget(key: int, ref: weakref.ref, planned: dict = _PLANNED) -> None:
    """An intent values_of planned is gone: so is what it planned (another object may take its id). The table is
    bound here: at the interpreter's teardown the module's globals are gone before the last intents."""
    if key in planned and planned[key][0] is ref:
        del planned[key]


def _plan(intent, document: Any) -> Any:
    from . import plan as P
    from .render.values import build_values

    if catalog.chart(intent.spec.operator.chart_version) is None:
        return None
    for pool in intent.spec.pools:
        if P.gpu_model(intent, pool.gpu) is None or P.pool_profile(intent, pool) is None:
            return None
    try:
        return build_values(P.build(intent, getattr(document, "file", ""), document))
    except Exception:  # noqa: BLE001 - a plan of an intent other rules refuse; those rules say why
        return None


def _get(values: Mapping[str, Any] | None, path: str) -> Any:
    node: Any = values or {}
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def intent_facts(intent, values: Mapping[str, Any] | None = None) -> IntentFacts:
    """What the intent says about each pool and the cluster."""
    from . import dra, plan as P

    spec = intent.spec
    chart = catalog.chart(spec.operator.chart_version)
    default_driver = chart.shared_defaults["driver"]["version"] if chart is not None else None
    features = set()
    if dra.enabled(intent):
        features.add("dra")
    for name, path in (("gds", "gds.enabled"), ("rdma", "driver.rdma.enabled"),
                       ("precompiled", "driver.usePrecompiled"), ("nri", "cdi.nriPluginEnabled"),
                       ("cdi", "cdi.enabled")):
        if _get(values, path) is True:
            features.add(name)
    runtime = spec.cluster.container_runtime
    if runtime is not None and runtime.name == "cri-o":
        features.add("crio")
    cluster = Facts(chart=spec.operator.chart_version, distribution=spec.cluster.distribution,
                    kubernetes=spec.cluster.kubernetes_version,
                    mig_manager=_string(_get(values, "migManager.version")),
                    toolkit=_string(_get(values, "toolkit.version")), features=frozenset(features))
    strategy = P.mig_strategy(intent)
    models = [(pool, P.gpu_model(intent, pool.gpu)) for pool in spec.pools]
    layouts = [P.mig_layout(P.pool_profile(intent, pool), model) for pool, model in models]
    whole_models = {pool.gpu for (pool, _), layout in zip(models, layouts) if not layout}
    waves = P.wave_versions(intent, default_driver) if default_driver and P.wave_mode(intent) else {}
    out = IntentFacts(cluster)
    for i, ((pool, model), layout) in enumerate(zip(models, layouts)):
        kind = P.pool_driver(intent, pool)
        loc: tuple | None = None
        if kind == "preinstalled":
            driver = None
        elif kind == "cluster":
            if pool.name in waves and spec.driver.upgrade is not None and spec.driver.upgrade.rollout is not None \
                    and waves[pool.name][1] == spec.driver.upgrade.rollout.version:
                driver, loc = waves[pool.name][1], ("spec", "driver", "upgrade", "rollout", "version")
            else:
                driver = spec.driver.version or default_driver
                loc = ("spec", "driver", "version") if spec.driver.version else None
        else:
            driver, loc = kind, ("spec", "pools", i, "driver", "version")
        own = set(features)
        own.add("preinstalled" if kind == "preinstalled" else "managed")
        profile = P.pool_profile(intent, pool)
        if layout:
            own.add("mig")
            if strategy == "mixed" and pool.gpu in whole_models:
                own.add("migNextToWhole")
            if profile is not None and profile.mig is not None and profile.mig.preset == "all-balanced":
                own.add("allBalanced")
        facts = Facts(chart=cluster.chart, distribution=cluster.distribution, kubernetes=cluster.kubernetes,
                      mig_manager=cluster.mig_manager, toolkit=cluster.toolkit, features=frozenset(own),
                      gpu=model.id if model is not None else pool.gpu, driver=driver,
                      kernel_modules=_modules(values, driver, kind == "preinstalled"),
                      containerd=None if runtime is None or runtime.name == "containerd" else "")
        out.pools.append(PoolFacts(facts, loc))
    return out


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _modules(values: Mapping[str, Any] | None, driver: str | None, preinstalled: bool) -> str | None:
    """open or proprietary: the kernel modules the driver container installs (None for a host's driver)."""
    if preinstalled or values is None:
        return None
    if _get(values, "driver.useOpenKernelModules") is True:
        return "open"
    kind = _get(values, "driver.kernelModuleType")
    if kind == "open":
        return "open"
    if kind == "auto" and driver is not None and version_key(driver) >= version_key(OPEN_AUTO_FROM):
        return "open"
    return "proprietary"


# --- facts of a node (audit) ------------------------------------------------------------------------------------

_OS_NAMES = (("Ubuntu", "ubuntu", 2), ("Red Hat Enterprise Linux CoreOS", "rhcos", 1),
             ("Red Hat Enterprise Linux", "rhel", 1), ("Rocky Linux", "rocky", 1))


def os_id(os_image: str) -> str | None:
    """The table's OS id of a node's status.nodeInfo.osImage: "Ubuntu 22.04.5 LTS" -> ubuntu22.04, "Red Hat
    Enterprise Linux 8.10 (Ootpa)" -> rhel8, "Rocky Linux 9.4 (Blue Onyx)" -> rocky9; None for another OS."""
    for prefix, name, parts in _OS_NAMES:
        if os_image.startswith(prefix + " "):
            version = version_key(os_image[len(prefix) + 1:].split(" ")[0])
            if len(version) >= parts:
                return name + ".".join(f"{v:02d}" if i else str(v) for i, v in enumerate(version[:parts]))
    return None


def kernel_minor(kernel_version: str) -> str | None:
    """<major>.<minor> of status.nodeInfo.kernelVersion ("6.8.0-60-generic" -> 6.8)."""
    key = version_key(kernel_version)
    return f"{key[0]}.{key[1]}" if len(key) >= 2 else None


def containerd_version(runtime: str) -> str | None:
    """The containerd version of status.nodeInfo.containerRuntimeVersion ("containerd://1.7.27" -> 1.7.27); "" for
    another runtime; None when the node does not say."""
    if not runtime:
        return None
    scheme, _, version = runtime.partition("://")
    return version if scheme == "containerd" else ""


def node_facts(base: Facts, *, gpu: str | None, driver: str | None, os_image: str, kernel_version: str,
               container_runtime: str, architecture: str, kubelet_version: str, mixes_mig_and_whole: bool) -> Facts:
    """A pool's facts with what one of its nodes reports instead: the GPU GFD sees, the driver it runs, its OS image,
    kernel, runtime, architecture and Kubernetes version, and whether it carries MIG slices next to whole GPUs."""
    from dataclasses import replace

    features = set(base.features) - {"migNextToWhole"}
    if mixes_mig_and_whole:
        features.add("migNextToWhole")
    minor = version_key(kubelet_version)
    return replace(base, gpu=gpu or base.gpu, driver=driver or base.driver, os=os_id(os_image),
                   kernel=kernel_minor(kernel_version), arch=architecture or None,
                   containerd=containerd_version(container_runtime),
                   kubernetes=f"{minor[0]}.{minor[1]}" if len(minor) >= 2 else base.kubernetes,
                   features=frozenset(features))


def audit_code(hazard: Hazard) -> str:
    """GA133 for a container runtime's hazard, GA132 for an OS, kernel, architecture or Kubernetes one, GA131 for
    the rest (the driver and GPU a node reports)."""
    if "containerd" in hazard.applies:
        return "GA133"
    if {"os", "kernels", "arch", "kubernetes"} & set(hazard.applies):
        return "GA132"
    return "GA131"

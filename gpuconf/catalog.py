"""GPU models, MIG geometry and chart facts: the one place gpuconf reads its domain knowledge from.

The data is the JSON that tools/derive_reference.py derives from the reference material into profiles/ (installed
as the package gpuconf.profiles). It is loaded on first use and cached; importing this module reads nothing.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

PathStatus = str  # "known" | "template-only" | "open-map" | "unknown"


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile of one GPU model, with the start slots nvidia-smi -lgipp lists for it."""

    name: str
    compute_slices: int
    memory_slices: int
    max_instances: int
    starts: tuple[int, ...]
    size: int


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as users name it in an intent (`gpu: H100-80GB`)."""

    id: str
    name: str
    pci_device_ids: tuple[str, ...]
    memory_gib: float | None
    compute_capability: str | None
    family: str
    mig_capable: bool
    memory_slots: int  # memory slices of a MIG GPU; 0 for non-MIG models
    mig_profiles: Mapping[str, MigProfile] = field(hash=False)
    balanced_layout: Mapping[str, int] = field(hash=False)
    compute_slots: int = 0  # compute slices of a MIG GPU; 0 for non-MIG models
    pci_devices: Mapping[str, str] = field(default_factory=dict, hash=False)
    legacy_profile_names: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    confidence: str = ""
    pci_subsystem_ids: tuple[str, ...] = ()  # 0x<SUBDEVICE><SUBVENDOR>; empty: any subsystem
    product_labels: tuple[str, ...] = ()  # GFD nvidia.com/gpu.product values, where known
    declared: bool = False  # declared by the intent (spec.gpuModels), not a catalogue model

    def nfd_device_ids(self) -> tuple[str, ...]:
        """The PCI device ids in NFD's pci.device form: "0x233010DE" -> "2330"."""
        # mig-parted's filter is 0x<DEVICE><VENDOR>; NFD matches lower-case hex without 0x (facts §5).
        return tuple(f"{int(pci, 16) >> 16:04x}" for pci in self.pci_device_ids)

    def nfd_subsystems(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(subsystem vendors, subsystem devices) in NFD's pci.device form, both empty for any subsystem."""
        vendors = sorted({f"{int(sub, 16) & 0xFFFF:04x}" for sub in self.pci_subsystem_ids})
        devices = sorted({f"{int(sub, 16) >> 16:04x}" for sub in self.pci_subsystem_ids})
        return tuple(vendors), tuple(devices)

    def pci_identities(self) -> str:
        """The PCI ids as `gpuconf catalog` shows them: `0x25B610DE (subsystem 0x157E10DE)`."""
        ids = " ".join(self.pci_device_ids)
        return f"{ids} (subsystem {' '.join(self.pci_subsystem_ids)})" if self.pci_subsystem_ids else ids

    def disjoint_from(self, other: "GpuModel") -> bool:
        """True when no GPU can be both models: no shared device id, or shared ids told apart by subsystem ids."""
        if not set(self.pci_device_ids) & set(other.pci_device_ids):
            return True
        return bool(self.pci_subsystem_ids and other.pci_subsystem_ids
                    and not set(self.pci_subsystem_ids) & set(other.pci_subsystem_ids))


@dataclass(frozen=True)
class MigFit:
    """Whether a MIG layout fits one GPU, why not, and where each instance goes when it does."""

    fits: bool
    reason: str
    placement: tuple[tuple[str, int], ...]  # (profile, start slot) per instance, by start slot
    profile: str | None = None  # the profile a failure is about (its count, its name, or the one that found no room)


@dataclass(frozen=True)
class ChartFacts:
    """Base defaults and known quirks of one GPU Operator chart version."""

    version: str
    #: the process-wide parsed defaults, never handed out: `defaults` copies them on first use
    shared_defaults: Mapping[str, Any] = field(hash=False, repr=False, compare=False)
    template_only_keys: tuple[str, ...]
    dead_keys: tuple[str, ...]
    renamed_keys: Mapping[str, str] = field(hash=False)
    verbatim_blocks: tuple[str, ...]
    nfd_chart_version: str
    free_form_map_keys: tuple[str, ...] = ()
    free_form_map_paths: tuple[str, ...] = ()
    nfd_defaults_source: str = ""
    #: values path -> {becomes, templates, when}: values the templates' `| default` replaces when empty
    helm_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)
    nfd_app_version: str | None = None  # the NFD subchart's appVersion (its image's default tag), where known
    #: crds/ file name -> {group, kind, scope, versions, fields}: the CRDs the chart ships (Helm never upgrades them)
    crds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)
    crds_source: str = ""  # how the CRD facts are known
    #: what the release can do (gpuconf.chartfacts.derive.capabilities): rules and renderers ask this, never the version
    capabilities: Mapping[str, Any] = field(default_factory=dict, hash=False)
    #: ClusterPolicy fields the API server fills in although the chart renders no value (JSON pointers)
    server_defaulted: tuple[str, ...] = ()
    #: templates/ file name -> sha256: what `gpuconf chart add` compares a new chart with
    templates: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: every values path the chart's templates read
    values_read: tuple[str, ...] = ()
    #: the docs' component matrix for the release: validated drivers, default and recommended ones, source
    component_matrix: Mapping[str, Any] = field(default_factory=dict, hash=False)
    app_version: str = ""
    #: where the facts come from: "gpuconf" (shipped) or the user's facts file (`gpuconf chart add`)
    origin: str = "gpuconf"
    #: for a chart gpuconf does not ship: the known release whose semantics it applies, and the templates that differ
    semantics_of: str | None = None
    differing_templates: tuple[str, ...] = ()

    def can(self, capability: str) -> bool:
        """Whether the release has a capability (gpuconf.chartfacts.derive.capabilities)."""
        return bool(self.capabilities.get(capability))

    @functools.cached_property
    def defaults(self) -> dict[str, Any]:
        """The chart's values defaults: a fresh copy per chart() call (made when first read: most callers only want
        the other facts), so callers may modify it."""
        return orjson.loads(orjson.dumps(self.shared_defaults))  # a deep copy, in C


# --- loading ---------------------------------------------------------------------------------------------------


def _data_dir() -> Path:
    """The directory holding gpus.json and charts/: the gpuconf.profiles package's own folder (read as files:
    a plain folder in a wheel and in a checkout alike)."""
    try:
        import gpuconf.profiles as package
    except ModuleNotFoundError:
        # setuptools maps the repository's profiles/ to gpuconf.profiles only when the project is installed;
        # a bare source checkout on PYTHONPATH keeps the data next to the package directory instead.
        return Path(__file__).resolve().parent.parent / "profiles"
    return Path(package.__file__).parent


def data_file(name: str) -> Path:
    """A file of profiles/ (gpus.json, platforms.json, charts/...), for the modules that read gpuconf's facts."""
    return _data_dir().joinpath(name)


@functools.cache
def _gpus_json() -> dict[str, Any]:
    """profiles/gpus.json, parsed."""
    data: dict[str, Any] = json.loads(_data_dir().joinpath("gpus.json").read_text(encoding="utf-8"))
    return data


@functools.cache
def _chart_text(version: str) -> str | None:
    """The text of profiles/charts/<version>.json (or of the user's facts file of a chart added with `gpuconf chart
    add`), or None when gpuconf has no facts for it."""
    if version not in chart_versions():
        return None
    if version in _USER_CHARTS:
        return _USER_CHARTS[version][1]
    return str(_data_dir().joinpath("charts", f"{version}.json").read_text(encoding="utf-8"))


# --- charts a user added (gpuconf chart add) -------------------------------------------------------------------

#: The folder beside the intents where `gpuconf chart add` writes the facts of a chart gpuconf does not ship.
USER_CHART_FOLDER = "gpuconf-charts"
#: The largest facts file read from it (a shipped one is 70-180 KB with its values schema).
MAX_USER_FACTS_BYTES = 4 * 1024 * 1024
#: version -> (its facts file, its text), of the folder in use; empty when none is.
_USER_CHARTS: dict[str, tuple[Path, str]] = {}
_USER_FOLDER: list[Path] = []
#: The keys every facts file has (chart() reads them all), with the JSON type each must have.
_FACT_KEYS = {"appVersion": str, "capabilities": dict, "crds": dict, "crdsSource": str, "deadKeys": list,
              "defaults": dict, "freeFormMapKeys": list, "freeFormMapPaths": list, "helmDefaults": dict,
              "nfdAppVersion": (str, type(None)), "nfdChartVersion": str, "nfdDefaultsSource": str,
              "renamedKeys": dict, "serverDefaulted": list, "templateOnlyKeys": list, "templates": dict,
              "valuesRead": list, "verbatimBlocks": list, "version": str, "semanticsOf": str, "valuesSchema": dict}


class ChartFactsError(Exception):
    """A facts file under gpuconf-charts/ cannot be used: unreadable, not what `gpuconf chart add` writes, or a
    release gpuconf ships itself."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def chart_folder_near(start: Path) -> Path | None:
    """The gpuconf-charts folder that serves an input: in its own folder, else, inside a git repository, in the
    nearest folder above it up to the repository's top (the first folder holding .git) and no further. Outside a
    repository only the input's own folder counts (no facts file of a shared /tmp is picked up)."""
    from .repository import top_of

    folder = (start if start.is_dir() else start.parent).resolve()
    top = top_of(folder)
    chain = [folder, *folder.parents]
    for candidate in chain[:chain.index(top) + 1]:
        if (candidate / USER_CHART_FOLDER).is_dir():
            return candidate / USER_CHART_FOLDER
    return None


def use_chart_folder(folder: Path | None) -> None:
    """Make the charts a user added under folder (gpuconf chart add) known beside the shipped ones, instead of any
    other folder's; None: the shipped releases only. Raises ChartFactsError for a file that cannot be used."""
    if _USER_FOLDER == ([folder] if folder is not None else []):
        return
    found: dict[str, tuple[Path, str]] = {}
    if folder is not None:
        shipped = _shipped_versions()
        for path in sorted(folder.glob("*.json")):
            try:
                if path.stat().st_size > MAX_USER_FACTS_BYTES:
                    raise ChartFactsError(path, f"larger than {MAX_USER_FACTS_BYTES} bytes; not a facts file")
                text = path.read_text(encoding="utf-8")
                data = json.loads(text)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                raise ChartFactsError(path, f"not readable as the JSON `gpuconf chart add` writes ({exc})") from None
            missing = [k for k in _FACT_KEYS if not isinstance(data, dict) or k not in data]
            if missing:
                raise ChartFactsError(path, f"not a facts file `gpuconf chart add` wrote (no {', '.join(missing[:3])})")
            wrong = [k for k, kind in _FACT_KEYS.items() if not isinstance(data[k], kind)]
            if wrong or not isinstance(data["defaults"].get("driver"), dict):
                raise ChartFactsError(path, "not a facts file `gpuconf chart add` wrote (wrong type of "
                                            f"{', '.join(wrong[:3]) or 'defaults.driver'})")
            version = data["version"]
            if not isinstance(version, str) or path.stem != version:
                raise ChartFactsError(path, f"holds the facts of {version!r}, not of {path.stem}")
            if version in shipped:
                raise ChartFactsError(path, f"gpuconf ships chart {version} itself; remove this file")
            found[version] = (path, text)
    _USER_CHARTS.clear()
    _USER_CHARTS.update(found)
    _USER_FOLDER[:] = [folder] if folder is not None else []
    for cached in (chart_versions, _chart_text, _chart_data, _chart_fields, _chart_index, _path_index):
        cached.cache_clear()


def chart_facts_file(version: str) -> tuple[str, str, bool] | None:
    """(how an attestation names it, its text, whether gpuconf ships it) of the facts of a chart version:
    profiles/charts/<version>.json, or the facts file `gpuconf chart add` wrote under gpuconf-charts/ (named
    relative to its repository). None when gpuconf has no facts for the version."""
    text = _chart_text(version)
    if text is None:
        return None
    if version in _USER_CHARTS:
        from .repository import relative_name

        return relative_name(_USER_CHARTS[version][0]), text, False
    return f"profiles/charts/{version}.json", text, True


def user_values_schema(version: str) -> Mapping[str, Any] | None:
    """The values schema `gpuconf chart add` derived for a chart it added, or None for a shipped release."""
    if version not in _USER_CHARTS:
        return None
    data = _chart_data(version)
    return None if data is None else data["valuesSchema"]


def _model(model_id: str, raw: dict[str, Any]) -> GpuModel:
    """A GpuModel from its JSON entry."""
    profiles = {
        name: MigProfile(name, p["computeSlices"], p["memorySlices"], p["maxInstances"], tuple(p["starts"]), p["size"])
        for name, p in sorted(raw["migProfiles"].items())
    }
    geometry = raw["migGeometry"] or {"computeSlices": 0, "memorySlices": 0}
    return GpuModel(
        id=model_id,
        name=raw["name"],
        pci_device_ids=tuple(raw["pciDeviceIds"]),
        memory_gib=None if raw["memoryGiB"] is None else float(raw["memoryGiB"]),
        compute_capability=raw["computeCapability"],
        family=raw["family"],
        mig_capable=raw["migCapable"],
        memory_slots=geometry["memorySlices"],
        mig_profiles=MappingProxyType(profiles),
        balanced_layout=MappingProxyType(dict(sorted(raw["balancedLayout"].items()))),
        compute_slots=geometry["computeSlices"],
        pci_devices=MappingProxyType(dict(raw["pciDevices"])),
        legacy_profile_names=tuple(raw["legacyProfileNames"]),
        sources=tuple(raw["sources"]),
        confidence=raw["confidence"],
        pci_subsystem_ids=tuple(raw["pciSubsystemIds"]),
        product_labels=tuple(raw["productLabels"]),
    )


@functools.cache
def gpu_models() -> Mapping[str, GpuModel]:
    """Every GPU model of the catalogue, by id, sorted."""
    models = _gpus_json()["models"]
    return MappingProxyType({mid: _model(mid, models[mid]) for mid in sorted(models)})


def gpu_model(model_id: str) -> GpuModel | None:
    """The model with this exact id, or None."""
    return gpu_models().get(model_id)


# --- MIG -------------------------------------------------------------------------------------------------------


def _attributes(profile: str) -> tuple[str, ...]:
    """The `+attr` attributes of a profile name (`1g.10gb+me` -> ("me",)); `-me` is not an attribute."""
    _, plus, attrs = profile.partition("+")
    return tuple(attrs.split(",")) if plus else ()


def media_extended(profile: str) -> bool:
    """Whether an instance of the profile claims the GPU's media extensions (`+me`, `+me.all`)."""
    return any(attr == "me" or attr.startswith("me.") for attr in _attributes(profile))


def _plural(count: int, word: str) -> str:
    """`1 instance`, `2 instances`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _slot_ranges(slots: Iterable[int]) -> str:
    """`0-3,6` for the slots {0,1,2,3,6}."""
    ordered = sorted(set(slots))
    parts = []
    for _, run in itertools.groupby(enumerate(ordered), key=lambda pair: pair[1] - pair[0]):
        block = [slot for _, slot in run]
        parts.append(str(block[0]) if len(block) == 1 else f"{block[0]}-{block[-1]}")
    return ",".join(parts)


def _slots_phrase(slots: Iterable[int]) -> str:
    """`slot 7` or `slots 0-3,6`."""
    slots = set(slots)
    return ("slot " if len(slots) == 1 else "slots ") + _slot_ranges(slots)


def _counted(layout: Mapping[str, int], names: Iterable[str]) -> str:
    """`1g.10gb x2, 1g.20gb x1` for the given profiles of a layout."""
    return ", ".join(f"{name} x{layout[name]}" for name in sorted(names))


#: The media-extension rule, as `gpuconf catalog --gpu` and GC306 explain it. A GPU has one optical-flow accelerator
#: (OFA); of the instances smaller than the whole GPU only a `+me` one includes it (NVML's GPU-instance profiles on a
#: real H200, tests/fixtures/h200-real/mig.json: ofaCount 1 for 1g.18gb+me and for the whole-GPU 7g.141gb, 0 for the
#: rest), and NVIDIA's MIG guide says of each +me profile that a single instance per GPU can include the media
#: extensions. So a +me instance of any size may sit next to any other instances the placements allow (1g.18gb+me +
#: 6 x 1g.18gb fills an H200 exactly), but only one per GPU. `+me.all` (RTX PRO 6000) also claims the media engines
#: and counts as one.
MEDIA_RULE = ("at most one media-extension instance (+me, +me.all) per GPU: the GPU has one optical-flow "
              "accelerator, which the whole-GPU instance holds and, of the smaller ones, only a +me instance; "
              "otherwise +me instances place like the rest")


def _media_rule_violation(layout: Mapping[str, int]) -> tuple[str, str] | None:
    """(profile, why) when a layout asks for more than one media-extension instance, else None."""
    media = sorted(name for name in layout if media_extended(name))
    wanted = sum(layout[name] for name in media)
    if wanted > 1:
        return media[-1], (f"at most one media-extension instance (+me) fits one GPU, layout asks for {wanted} "
                           f"({_counted(layout, media)}): the GPU has one optical-flow accelerator")
    return None


def _largest_first(model: GpuModel) -> Callable[[str], tuple[int, int, str]]:
    """Sort key putting the instances with the most memory slices (then compute slices) first."""
    return lambda name: (-model.mig_profiles[name].size, -model.mig_profiles[name].compute_slices, name)


def _place(model: GpuModel, layout: Mapping[str, int]) -> tuple[list[tuple[str, int]] | None, list[tuple[str, int]]]:
    """Backtracking placement: (placement, []) when the layout fits, else (None, the deepest partial placement)."""
    # Largest instances first, lowest start first: big instances have the fewest start slots, so placing them first
    # prunes the search early, and a fixed order keeps the placement found (and a failure's reason) deterministic.
    instances = sorted((name for name, count in layout.items() for _ in range(count)), key=_largest_first(model))
    placed: list[tuple[str, int]] = []
    deepest: list[tuple[str, int]] = []

    def search(index: int, used: int) -> bool:
        nonlocal deepest
        if len(placed) > len(deepest):
            deepest = list(placed)
        if index == len(instances):
            return True
        name = instances[index]
        profile = model.mig_profiles[name]
        # Identical instances are interchangeable: trying them in non-decreasing start order skips permutations.
        lowest = placed[-1][1] if placed and placed[-1][0] == name else -1
        for start in profile.starts:
            mask = ((1 << profile.size) - 1) << start
            if start < lowest or used & mask:
                continue
            placed.append((name, start))
            if search(index + 1, used | mask):
                return True
            placed.pop()
        return False

    if search(0, 0):
        return placed, []
    return None, deepest


def _no_room_reason(model: GpuModel, layout: Mapping[str, int], deepest: list[tuple[str, int]]) -> tuple[str, str]:
    """(the profile that found no room, why): a failed placement explained from the deepest partial placement."""
    groups: dict[str, list[int]] = {}
    for name, start in deepest:
        size = model.mig_profiles[name].size
        groups.setdefault(name, []).extend(range(start, start + size))
    occupied = {slot for slots in groups.values() for slot in slots}
    placed_counts = {name: sum(1 for n, _ in deepest if n == name) for name in groups}
    # The search places instances in _largest_first order, so the first profile short of its count is the one
    # that found no room.
    stuck = next(name for name in sorted(layout, key=_largest_first(model))
                 if placed_counts.get(name, 0) < layout[name])
    profile = model.mig_profiles[stuck]
    starts = ",".join(str(s) for s in profile.starts)
    reason = f"{stuck} x{layout[stuck] - placed_counts.get(stuck, 0)} has no free start slot among {{{starts}}}"
    free = set(range(model.memory_slots)) - occupied
    if free:
        reason += f" (free: {_slots_phrase(free)})"
    if groups:
        taken = ", ".join(f"{name} x{placed_counts[name]} occupies {_slots_phrase(slots)}"
                          for name, slots in groups.items())
        reason = f"{taken}; {reason}"
    return stuck, reason


def fit_mig_layout(model: GpuModel, layout: Mapping[str, int]) -> MigFit:
    """Check exactly whether a layout (profile -> instances per GPU) fits one GPU of the model."""
    if not model.mig_capable:
        return MigFit(False, f"{model.id} is not MIG-capable", ())
    for name in sorted(layout):
        count = layout[name]
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            return MigFit(False, f"profile {name} needs a whole number of instances >= 0, got {count!r}", (), name)
        if name not in model.mig_profiles:
            known = ", ".join(model.mig_profiles)
            legacy = (" (a name older drivers used; current drivers name its profiles differently)"
                      if name in model.legacy_profile_names else "")
            return MigFit(False, f"profile {name} does not exist on {model.id}{legacy} (known: {known})", (), name)
        limit = model.mig_profiles[name].max_instances
        if count > limit:
            return MigFit(False, f"profile {name} allows at most {_plural(limit, 'instance')}, layout asks for "
                                 f"{count}", (), name)
    wanted = {name: count for name, count in layout.items() if count > 0}
    if not wanted:
        if layout:
            # mig-parted rejects a non-empty mig-devices map whose counts are all 0 (facts §3.1).
            return MigFit(False, "all counts are 0: give at least one profile a count, or use an empty layout", ())
        return MigFit(True, "empty layout: MIG enabled with no instances", ())
    violation = _media_rule_violation(wanted)
    if violation:
        return MigFit(False, violation[1], (), violation[0])
    placement, deepest = _place(model, wanted)
    if placement is None:
        stuck, reason = _no_room_reason(model, wanted, deepest)
        return MigFit(False, reason, (), stuck)
    ordered = tuple(sorted(placement, key=lambda item: (item[1], item[0])))
    used = sum(model.mig_profiles[name].size for name, _ in ordered)
    return MigFit(True, f"fits: {used} of {model.memory_slots} memory slices used", ordered)


@functools.cache
def mig_presets(model: GpuModel) -> Mapping[str, Mapping[str, int]]:
    """The layouts mig-manager generates for a model: all-balanced and all-<profile> at its maximum count."""
    # mig-manager v0.15 names them `all-<profile>` with "+" replaced by "." (facts §3.2); all-disabled and
    # all-enabled are not layouts (MIG off, and MIG on with no instances) and are left out.
    if not model.mig_capable:
        return MappingProxyType({})
    presets: dict[str, Mapping[str, int]] = {"all-balanced": model.balanced_layout}
    for name, profile in model.mig_profiles.items():
        presets["all-" + name.replace("+", ".")] = MappingProxyType({name: profile.max_instances})
    return MappingProxyType(dict(sorted(presets.items())))


# --- charts ----------------------------------------------------------------------------------------------------


@functools.cache
def dcgm_metrics() -> Mapping[str, Any]:
    """profiles/dcgm-metrics.json: the rows of the exporter's default metrics file (enabled and shipped off)."""
    data: dict[str, Any] = json.loads(_data_dir().joinpath("dcgm-metrics.json").read_text(encoding="utf-8"))
    return MappingProxyType(data)


def shipped_versions() -> tuple[str, ...]:
    """The releases gpuconf ships facts for, oldest first."""
    from .chartfacts.releases import ordered

    return tuple(ordered(_shipped_versions()))


def release_data(version: str) -> dict[str, Any]:
    """The facts file of a release as data (shared: never modify it); KeyError for one gpuconf has no facts of."""
    data = _chart_data(version)
    if data is None:
        raise KeyError(version)
    return data


@functools.cache
def _shipped_versions() -> tuple[str, ...]:
    """The GPU Operator chart versions gpuconf ships facts for."""
    names = [entry.name for entry in _data_dir().joinpath("charts").iterdir()
             if entry.name.endswith(".json") and entry.name != "index.json"]
    return tuple(name.removesuffix(".json") for name in names)


@functools.cache
def chart_versions() -> tuple[str, ...]:
    """The GPU Operator chart versions gpuconf has facts for (shipped, and added by the user with `gpuconf chart
    add` in the gpuconf-charts folder in use), sorted by version."""
    from .chartfacts.releases import version_key

    return tuple(sorted({*_shipped_versions(), *_USER_CHARTS}, key=version_key))


@functools.cache
def chart_table() -> Mapping[str, Any]:
    """profiles/charts/index.json: one row per shipped release (capabilities, validated drivers, default driver),
    the values keys renamed or removed between releases, and NVIDIA's upgrade rule. Small, so that asking which
    release first can do something reads no release's facts."""
    data: dict[str, Any] = json.loads(_data_dir().joinpath("charts", "index.json").read_text(encoding="utf-8"))
    return MappingProxyType(data)


def first_release_with(capability: str) -> str | None:
    """The oldest shipped release that has a capability (for a finding's "needs chart X or later"), or None."""
    rows = chart_table()["releases"]
    for version in chart_versions():
        if version in rows and rows[version]["capabilities"].get(capability):
            return str(version)
    return None


def renamed_between(start: str, target: str) -> list[Mapping[str, Any]]:
    """The values keys removed or renamed by a release after start up to and including target (in either direction:
    a move back crosses the same releases), each {key, at, replacement, how}."""
    from .chartfacts.releases import version_key

    low, high = sorted((version_key(start), version_key(target)))
    return [r for r in chart_table()["renames"] if low < version_key(r["at"]) <= high]


def rename_text(rename: Mapping[str, Any], target: str) -> str:
    """What a finding says of a values key that a release removed or renamed."""
    replacement = f"use {rename['replacement']} instead" if rename["replacement"] else "it has no replacement"
    return f"{rename['key']} was removed at chart {rename['at']} ({replacement}: {rename['how']})"


def driver_validated(facts: ChartFacts, driver: str) -> bool:
    """Whether a driver version is one the release's component matrix lists (a release without a matrix: True, as
    gpuconf cannot tell)."""
    drivers = facts.component_matrix.get("drivers")
    return not drivers or driver in drivers


@functools.cache
def _chart_data(version: str) -> dict[str, Any] | None:
    """profiles/charts/VERSION.json as data, parsed once per process (a render asks for it a dozen times, a fleet's
    render that many times per cluster), or None when unknown."""
    text = _chart_text(version)
    return None if text is None else json.loads(text)


def chart(version: str) -> ChartFacts | None:
    """The facts of one chart version (defaults as a fresh, modifiable copy), or None when unknown."""
    fields = _chart_fields(version)
    return None if fields is None else ChartFacts(**fields)


@functools.cache
def _chart_fields(version: str) -> dict[str, Any] | None:
    """ChartFacts' fields of a version, made once per process (all of them immutable or read-only): chart() makes a
    new ChartFacts of them each call, so that each has its own copy of the defaults."""
    raw = _chart_data(version)
    if raw is None:
        return None
    return dict(
        version=raw["version"],
        shared_defaults=raw["defaults"],
        template_only_keys=tuple(raw["templateOnlyKeys"]),
        dead_keys=tuple(raw["deadKeys"]),
        renamed_keys=MappingProxyType(raw["renamedKeys"]),
        verbatim_blocks=tuple(raw["verbatimBlocks"]),
        nfd_chart_version=raw["nfdChartVersion"],
        free_form_map_keys=tuple(raw["freeFormMapKeys"]),
        free_form_map_paths=tuple(raw["freeFormMapPaths"]),
        nfd_defaults_source=raw["nfdDefaultsSource"],
        helm_defaults=MappingProxyType(raw["helmDefaults"]),
        nfd_app_version=raw["nfdAppVersion"],
        crds=MappingProxyType(raw["crds"]),
        crds_source=raw["crdsSource"],
        capabilities=MappingProxyType(raw["capabilities"]),
        server_defaulted=tuple(raw["serverDefaulted"]),
        templates=MappingProxyType(raw["templates"]),
        values_read=tuple(raw["valuesRead"]),
        component_matrix=MappingProxyType(raw.get("componentMatrix") or {}),
        app_version=raw["appVersion"],
        origin=raw.get("origin", "gpuconf"),
        semantics_of=raw.get("semanticsOf"),
        differing_templates=tuple(raw.get("differingTemplates", ())),
    )


def _known_paths(node: Any, prefix: str = "") -> Iterable[str]:
    """Every dotted path of a defaults tree: maps and their keys; a list is a leaf."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from _known_paths(value, path)


@functools.cache
def _chart_index(version: str) -> tuple[ChartFacts, frozenset[str], tuple[str, ...]]:
    """The facts of a version with its known dotted paths and the suggestion candidates (known + template-only)."""
    facts = chart(version)
    if facts is None:
        known = chart_versions()
        guess = suggest(version, known)
        hint = f"; did you mean {guess}?" if guess else ""
        raise ValueError(f"no facts for GPU Operator chart {version!r} (known: {', '.join(known)}){hint}")
    known_paths = frozenset(_known_paths(facts.defaults))
    return facts, known_paths, tuple(sorted(known_paths | set(facts.template_only_keys)))


def _walk(defaults: dict[str, Any], parts: list[str]) -> tuple[list[str], Any, list[str]]:
    """Follow path segments as far as the defaults go: (matched keys, node reached, unmatched segments)."""
    # Keys may contain dots below the top level (operator.nodeSelector."kubernetes.io/os"), so at each level the
    # longest run of segments that names an existing key wins.
    node: Any = defaults
    matched: list[str] = []
    i = 0
    while i < len(parts) and isinstance(node, dict):
        for end in range(len(parts), i, -1):
            key = ".".join(parts[i:end])
            if key in node:
                matched.append(key)
                node = node[key]
                i = end
                break
        else:
            break
    return matched, node, parts[i:]


def chart_path_status(version: str, path: str) -> tuple[PathStatus, str | None]:
    """Classify a dotted values path of a chart version, with a did-you-mean for an unknown one."""
    facts = _chart_index(version)[0]
    parts = path.split(".")
    if not path or any(not part for part in parts):
        return "unknown", suggest_path(version, path) if path else None
    matched, node, rest = _walk(facts.defaults, parts)
    if not rest:
        return "known", None
    # Keys the templates read although values.yaml lacks them, and anything below them (operator.metrics.*).
    if any(path == key or path.startswith(key + ".") for key in facts.template_only_keys):
        return "template-only", None
    prefix = ".".join(matched)
    # Below an empty map, a map of user-chosen names (labels, nodeSelector, data, ...) or a block that is another
    # program's configuration file, any key is legitimate. A list (daemonsets.tolerations) is set as a whole: its
    # items have no dotted paths.
    if matched and (isinstance(node, dict) or node is None) and (
        node == {} or matched[-1] in facts.free_form_map_keys
        or any(prefix == p or prefix.startswith(p + ".") for p in facts.free_form_map_paths)
    ):
        return "open-map", None
    return "unknown", suggest_path(version, path)


@functools.cache
def _path_index(version: str) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, list[str]]]:
    """The did-you-mean index of a chart version's values paths, built once: each path by its lower-case spelling,
    the child keys of each path ("" for the top level) by theirs, and the paths by their last key's."""
    _, _, candidates = _chart_index(version)
    lower: dict[str, str] = {}
    children: dict[str, dict[str, str]] = {}
    leaves: dict[str, list[str]] = {}
    for path in candidates:  # sorted: the first spelling of a key in another case wins, as in suggest
        lower.setdefault(path.lower(), path)
        parent, _, key = path.rpartition(".")
        children.setdefault(parent, {}).setdefault(key.lower(), key)
        leaves.setdefault(key.lower(), []).append(path)
    return lower, children, leaves


def suggest_path(version: str, path: str) -> str | None:
    """The values path of a chart version a misspelt one most likely meant, or None: its spelling in another case,
    else the sibling of the first unknown key (a child key of the longest known prefix) that difflib ranks closest
    to the whole path, with the rest of the path kept when that path exists; without one, the closest of the paths
    that end in the same key (operator.metrics.serviceMonitor.interval: dcgmExporter.serviceMonitor.interval).

    The paths are indexed once per version, and a key is compared with its siblings only (import compares thousands
    of unknown keys; each searched all 642 paths: issue 29, item 6). Siblings share the prefix, so difflib's ratio of
    the whole paths is computed from the keys' own matching characters: 2 (P + M) / (2 P + a + b), P the shared
    prefix and its dot, M the matches of the two keys, a and b their lengths; at least 0.6, as in suggest."""
    import difflib  # only needed on the error path

    lower, children, leaves = _path_index(version)
    if path.lower() in lower:
        return lower[path.lower()]
    parts = path.split(".")
    known = 0
    while known < len(parts) and ".".join(parts[:known + 1]) in children:
        known += 1
    if known == len(parts):
        return None
    head = parts[:known]
    shared = len(".".join(head)) + (1 if known else 0)
    tail = [p.lower() for p in parts[known + 1:]]
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(".".join([parts[known].lower()] + tail))
    length = len(matcher.b)
    best: tuple[float, str] | None = None
    for key_lower, key in children.get(".".join(head), {}).items():
        other = key_lower
        if tail:  # the keys after the unknown one are compared too, where the sibling has them
            candidate = lower.get(".".join([*head, key, *parts[known + 1:]]).lower())
            other = candidate[shared:].lower() if candidate else key_lower
        total = 2 * shared + len(other) + length
        if 2 * (shared + min(len(other), length)) < 0.6 * total:
            continue  # cannot reach the cutoff
        matcher.set_seq1(other)
        if 2 * shared + matcher.quick_ratio() * (len(other) + length) < 0.6 * total:
            continue  # the characters they share cannot reach it either
        score = 2 * (shared + sum(block.size for block in matcher.get_matching_blocks())) / total
        if score >= 0.6:
            found = lower.get(".".join([*head, key, *parts[known + 1:]]).lower()) if tail else None
            found = found or ".".join([*head, key])
            if best is None or (score, found) > best:
                best = (score, found)
    if best is None:
        same_leaf = leaves.get(parts[-1].lower(), [])
        close = difflib.get_close_matches(path.lower(), [p.lower() for p in same_leaf], n=1, cutoff=0.6)
        return lower[close[0]] if close else None
    return best[1]


# --- model names -----------------------------------------------------------------------------------------------

#: Words that name the vendor or a product line, not the GPU: "NVIDIA A10G", "Tesla T4", "Tesla-V100-SXM2-16GB".
VENDOR_WORDS = frozenset({"NVIDIA", "TESLA"})


def name_tokens(text: str) -> list[str]:
    """A GPU name cut into upper-case alphanumeric tokens, vendor words dropped: "NVIDIA-H100-80GB" -> H100, 80GB."""
    import re

    return [t for t in re.split(r"[^A-Z0-9]+", text.upper()) if t and t not in VENDOR_WORDS]


def family_token(tokens: Iterable[str]) -> str | None:
    """The first token with a digit in it: the GPU's model number (A100, H100, L40S, V100S, 6000)."""
    return next((t for t in tokens if any(ch.isdigit() for ch in t)), None)


def gfd_product(label: str, replicas: int = 1, renamed: bool = False, mig_profile: str | None = None) -> str:
    """The nvidia.com/gpu.product GFD sets, from the model's own label (the NVML name with spaces joined by "-"):
    "-MIG-<profile>" under the single MIG strategy, then "-SHARED" when the resource is replicated (time-slicing or
    MPS) under its own name (GFD internal/lm/resource.go; measured on a real H200, tests/fixtures/h200-real/:
    NVIDIA-H200, NVIDIA-H200-SHARED for time-slicing x4, NVIDIA-H200 again with renameByDefault)."""
    parts = [label, *(("MIG", mig_profile) if mig_profile else ())]
    if replicas > 1 and not renamed:
        parts.append("SHARED")
    return "-".join(parts)


def gfd_products(model: GpuModel) -> list[tuple[str, str]]:
    """(label, when) for every product label GFD gives the model's nodes, from its known labels."""
    out: list[tuple[str, str]] = []
    for label in model.product_labels:
        out.append((label, "whole GPUs, or shared under the renamed resource"))
        out.append((gfd_product(label, replicas=2), "time-slicing or MPS without renameByDefault"))
        if model.mig_capable:
            out.append((gfd_product(label, mig_profile="<profile>"), "the single MIG strategy"))
    return out


def model_names(model: GpuModel) -> tuple[str, ...]:
    """Every name a model goes by: its id, marketing name, GFD product labels and pci.ids/driver device names."""
    return (model.id, model.name, *model.product_labels, *model.pci_devices.values())


def _spelling(tokens: Iterable[str]) -> list[str]:
    """Tokens with memory sizes spelt one way (80G, 80GIB -> 80GB), so spellings of one size compare equal."""
    import re

    return [re.sub(r"^(\d+)G(?:I?B)?$", r"\1GB", t) for t in tokens]


def model_suggestions(word: str, models: Iterable[GpuModel]) -> list[str]:
    """Models that `word` is a spelling of, never another GPU: ids sorted, empty when none fits.

    A spelling keeps the model number: the tokens of `word` joined equal one of a model's names joined ("a10g",
    "NVIDIA A10G", "Tesla V100-SXM2-16GB"), or they are all tokens of one of its names with the same model number
    ("H100" names the three H100 models, "V100 32GB" the two 32 GB V100s). A100 is never offered for A10G, nor
    L40S for L40: their model numbers differ, and the catalogue cannot know which GPU a typo meant.
    """
    wanted = _spelling(name_tokens(word))
    family = family_token(wanted)
    if not wanted or family is None:
        return []
    exact, partial = set(), set()
    for model in models:
        for name in model_names(model):
            tokens = _spelling(name_tokens(name))
            if "".join(tokens) == "".join(wanted):
                exact.add(model.id)
            elif family_token(tokens) == family and set(wanted) <= set(tokens):
                partial.add(model.id)
    return sorted(exact) if exact else sorted(partial)


# --- did-you-mean ----------------------------------------------------------------------------------------------


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to a misspelt word (case-insensitive), or None when nothing is close."""
    import difflib  # only needed on the error path

    by_lower: dict[str, str] = {}
    for choice in sorted(choices):
        by_lower.setdefault(choice.lower(), choice)
    if word.lower() in by_lower:
        return by_lower[word.lower()]
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None

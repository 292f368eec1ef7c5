"""gpuconf's GPU catalogue (profiles/gpus.json): the hand-checked model facts, merged with the curated MIG catalogue and
the extra models' fact sheet, and checked against mig-parted's shipped config and the H200's own readings."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from . import h200
from .common import REFERENCE_SCRIPT, DeriveError, Reference, dump, header, markdown_table, require
from .h200 import H200_REAL_GFD, H200_REAL_SMI, parse_placements

# Input files, relative to the reference folder.
CURATED_MIG = "nvidia-formats/mig-catalog.curated.yaml"
MIG_PARTED_DEFAULT = "nvidia-formats/mig-parted/config-default.yaml"
# Output file, relative to the repository root.
GPUS_OUT = "profiles/gpus.json"


@dataclass(frozen=True)
class ModelSpec:
    """Hand-checked facts of one GPU model id that the curated MIG catalogue does not carry."""

    name: str
    pci_ids: tuple[str, ...]
    memory_gib: float | None
    compute_capability: str | None
    cc_evidence: str
    confidence: str = "medium"
    family: str | None = None  # only needed when compute_capability is unknown
    products: tuple[str, ...] = ()  # GFD nvidia.com/gpu.product values read on real nodes


# MIG-capable models. The PCI ids select one group of the curated catalogue (every id of a model must sit in the
# same group; A800/H800 variants are folded into the A100/H100 model they share MIG names with, and their names
# stay visible in each model's pciDevices map). Memory is the nominal board size the reference names in the group
# or the MIG guide line (A100-40GB, "H100 NVL (94GB)", "B200 180GB", "GB200 186GB", ...).
#
# Compute capabilities were confirmed with the search tool on `nvidia-smi --query-gpu=name,compute_cap` or
# deviceQuery output from real cards in public repositories, or, where no such output was found, from the chip
# name in the pci.ids database (github.com/pciutils/pciids, pci.ids at 006181e2): GA100* parts are 8.0 like the
# measured A100, GH100* parts 9.0 like the measured H100/H200/GH200.
#
# confidence: "high" where the MIG placements were read off hardware or NVIDIA's own A100/A30 tables, "medium"
# where only names and counts come from mig-parted's config-default.yaml and placements are inferred by analogy.
MIG_MODELS: dict[str, ModelSpec] = {
    "A100-40GB": ModelSpec(
        "NVIDIA A100 40GB", ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"), 40, "8.0",
        "nvidia-smi compute_cap 'NVIDIA A100-SXM4-40GB, 8.0'", "high"),
    "A100-80GB": ModelSpec(
        "NVIDIA A100 80GB", ("0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"), 80, "8.0",
        "nvidia-smi compute_cap 'NVIDIA A100 80GB PCIe, 8.0'", "high"),
    "H100-80GB": ModelSpec(
        "NVIDIA H100 80GB", ("0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"), 80, "9.0",
        "nvidia-smi compute_cap 'NVIDIA H100 80GB HBM3, 9.0'"),
    "H100-NVL": ModelSpec(
        "NVIDIA H100 NVL", ("0x232110DE", "0x233A10DE"), 94, "9.0",
        "nvidia-smi compute_cap 'NVIDIA H100 NVL, 9.0'"),
    "H100-96GB": ModelSpec(
        "NVIDIA H100 96GB", ("0x233D10DE",), 96, "9.0",
        "pci.ids names 0x233D 'GH100 [H100 96GB]': the GH100 chip, 9.0 as measured on H100/H200/GH200"),
    "GH200": ModelSpec(
        "NVIDIA GH200 96GB", ("0x234210DE",), 96, "9.0",
        "deviceQuery 'NVIDIA GH200 480GB' / 'NVIDIA GH200 120GB': CUDA capability 9.0"),
    "H20": ModelSpec(
        "NVIDIA H20", ("0x232910DE",), 96, "9.0",
        "nvidia-smi compute_cap 'NVIDIA H20, 9.0'"),
    "PG506-96GB": ModelSpec(
        "NVIDIA PG506-232 96GB", ("0x20B610DE",), 96, "8.0",
        "pci.ids names 0x20B6 'GA100GL [PG506-232]': the GA100 chip, 8.0 as measured on A100"),
    # Name, memory (143771 MiB) and product label as a real H200 reports them: h200.check_h200_real reads them back.
    "H200": ModelSpec(
        "NVIDIA H200", ("0x233510DE",), 140.4, "9.0",
        "nvidia-smi compute_cap 'NVIDIA H200, 9.0, 143771' (the memory total of gpu/h200-nvidia-smi-mig.txt)",
        "high", products=("NVIDIA-H200",)),
    "H200-NVL": ModelSpec(
        "NVIDIA H200 NVL", ("0x233B10DE",), 141, "9.0",
        "pci.ids names 0x233B 'GH100 [H200 NVL]': the GH100 chip, 9.0 as measured on H200"),
    "GH200-144GB": ModelSpec(
        "NVIDIA GH200 144GB HBM3e", ("0x234810DE",), 144, "9.0",
        "pci.ids names 0x2348 'GH100 [GH200 144G HBM3e]': the GH100 chip, 9.0 as measured on GH200"),
    "B200": ModelSpec(
        "NVIDIA B200", ("0x290110DE",), 180, "10.0",
        "nvidia-smi compute_cap 'NVIDIA B200, 10.0, 183359'"),
    "GB200": ModelSpec(
        "NVIDIA GB200", ("0x294110DE",), 186, "10.0",
        "nvidia-smi compute_cap 'NVIDIA GB200, 10.0'"),
    # B300 memory: docs.nvidia.com NIM release notes ("B300 ... 288GB HBM3e memory per GPU").
    "B300": ModelSpec(
        "NVIDIA B300", ("0x318210DE",), 288, "10.3",
        "nvidia-smi compute_cap 'NVIDIA B300 SXM6 AC, 10.3'"),
    # GB300 memory: no NVIDIA figure found, so it stays unknown (the 7g profile name says 278 GB usable).
    "GB300": ModelSpec(
        "NVIDIA GB300", ("0x31C210DE",), None, "10.3",
        "nvidia-smi compute_cap 'NVIDIA GB300, 10.3'"),
    "A30": ModelSpec(
        "NVIDIA A30", ("0x20B710DE",), 24, "8.0",
        "pci.ids names 0x20B7 'GA100GL [A30 PCIe]' (GA100 chip) and the CUDA GPU table lists A30 under 8.0", "high"),
    "RTX-PRO-6000": ModelSpec(
        "NVIDIA RTX PRO 6000 Blackwell", ("0x2BB510DE",), 96, "12.0",
        "nvidia-smi compute_cap 'NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 97887 MiB'"),
}

# Models without MIG. They are not in the curated catalogue, so each fact was checked with the search tool:
# - PCI ids and names: pci.ids database (github.com/pciutils/pciids, pci.ids at 006181e2), vendor 10de:
#   1eb8 "TU104GL [Tesla T4]", 26b9 "AD102GL [L40S]", 27b8 "AD104GL [L4]".
# - Compute capability and memory: nvidia-smi/deviceQuery output on real cards in public repositories:
#   "NVIDIA L4, 8.9, 23034 MiB", "NVIDIA L40S, 8.9, 46068 MiB", deviceQuery "Tesla T4" capability 7.5 with
#   15110 MBytes; the nominal board sizes are 24, 48 and 16 GB.
NON_MIG_MODELS: dict[str, tuple[ModelSpec, dict[str, str]]] = {
    "L4": (ModelSpec("NVIDIA L4", ("0x27B810DE",), 24, "8.9", "nvidia-smi compute_cap 'NVIDIA L4, 8.9, 23034 MiB'",
                     "high"),
           {"0x27B810DE": "AD104GL [L4]"}),
    "L40S": (ModelSpec("NVIDIA L40S", ("0x26B910DE",), 48, "8.9",
                       "nvidia-smi compute_cap 'NVIDIA L40S, 8.9, 46068 MiB'", "high"),
             {"0x26B910DE": "AD102GL [L40S]"}),
    "T4": (ModelSpec("NVIDIA T4", ("0x1EB810DE",), 16, "7.5",
                     "deviceQuery 'Tesla T4': CUDA capability 7.5, 15110 MBytes", "high"),
           {"0x1EB810DE": "TU104GL [Tesla T4]"}),
}
NON_MIG_SOURCES = (
    "pci.ids database (github.com/pciutils/pciids, pci.ids at 006181e2)",
    "nvidia-smi --query-gpu=name,compute_cap and deviceQuery output on real cards (public repositories)",
)

# Models of platforms/gpu-models-extra.md §1, none of them MIG-capable. Each spec names its table row; the script
# checks every fact below against that row (PCI ids, subsystem, memory, compute capability, MIG, GFD product label,
# device names), so a changed fact sheet fails the derivation instead of drifting from it. Confidence: "medium"
# where PCI id, memory and compute capability all have a source in the row, "low" where the row says the memory
# (or, for T4G/A10G/L20, the compute capability) could not be verified offline (gpu-models-extra.md §4).
EXTRA_GPUS = "platforms/gpu-models-extra.md"


@dataclass(frozen=True)
class ExtraSpec:
    """One row of gpu-models-extra.md §1 as a catalogue model."""

    row: str  # the table's model cell
    pci_devices: dict[str, str]  # device id -> the name the row quotes for it (driver or pci.ids)
    memory_gib: float
    compute_capability: str
    products: tuple[str, ...]  # GFD nvidia.com/gpu.product labels, observed or derived (see the row)
    confidence: str
    subsystem_ids: tuple[str, ...] = ()  # 0x<SUBDEVICE><SUBVENDOR>, for device ids that two models share


EXTRA_MODELS: dict[str, ExtraSpec] = {
    "A10G": ExtraSpec("NVIDIA A10G", {"0x223710DE": "NVIDIA A10G"}, 24, "8.6", ("NVIDIA-A10G",), "low"),
    "A10": ExtraSpec("NVIDIA A10", {"0x223610DE": "NVIDIA A10"}, 24, "8.6", ("NVIDIA-A10",), "medium"),
    "A16": ExtraSpec("NVIDIA A16", {"0x25B610DE": "NVIDIA A16"}, 16, "8.6", ("NVIDIA-A16",), "low",
                     ("0x14A910DE",)),
    "A2": ExtraSpec("NVIDIA A2", {"0x25B610DE": "NVIDIA A2"}, 16, "8.6", ("NVIDIA-A2",), "low", ("0x157E10DE",)),
    "A40": ExtraSpec("NVIDIA A40", {"0x223510DE": "NVIDIA A40"}, 48, "8.6", ("NVIDIA-A40",), "low"),
    "L40": ExtraSpec("NVIDIA L40", {"0x26B510DE": "NVIDIA L40"}, 48, "8.9", ("NVIDIA-L40",), "low"),
    # Both pci.ids device ids are an L20; the driver's list names only 0x26BA (the row says so).
    "L20": ExtraSpec("NVIDIA L20", {"0x26BA10DE": "L20", "0x26B710DE": "L20"}, 48, "8.9", ("NVIDIA-L20",), "low"),
    "V100-SXM2-16GB": ExtraSpec("Tesla V100 SXM2 16GB", {"0x1DB110DE": "Tesla V100 SXM2 16GB",
                                                         "0x1DF510DE": "Tesla V100 SXM2 16GB"},
                                16, "7.0", ("Tesla-V100-SXM2-16GB",), "medium"),
    "V100-SXM2-32GB": ExtraSpec("Tesla V100 SXM2 32GB", {"0x1DB510DE": "Tesla V100 SXM2 32GB"}, 32, "7.0",
                                ("Tesla-V100-SXM2-32GB",), "medium"),
    "V100-PCIE-16GB": ExtraSpec("Tesla V100 PCIe 16GB", {"0x1DB410DE": "Tesla V100 PCIe 16GB"}, 16, "7.0",
                                ("Tesla-V100-PCIE-16GB",), "medium"),
    "V100-PCIE-32GB": ExtraSpec("Tesla V100 PCIe 32GB", {"0x1DB610DE": "Tesla V100 PCIe 32GB"}, 32, "7.0",
                                ("Tesla-V100-PCIE-32GB",), "medium"),
    "V100S-PCIE-32GB": ExtraSpec("Tesla V100S PCIe 32GB", {"0x1DF610DE": "Tesla V100S PCIe 32GB"}, 32, "7.0",
                                 ("Tesla-V100S-PCIE-32GB",), "medium"),
    "T4G": ExtraSpec("NVIDIA T4G", {"0x1EB410DE": "T4G"}, 16, "7.5", ("NVIDIA-T4G",), "low"),
    "RTX-A6000": ExtraSpec("NVIDIA RTX A6000", {"0x223010DE": "NVIDIA RTX A6000"}, 48, "8.6",
                           ("NVIDIA-RTX-A6000",), "medium"),
    "RTX-6000-ADA": ExtraSpec("NVIDIA RTX 6000 Ada Generation", {"0x26B110DE": "NVIDIA RTX 6000 Ada Generation"},
                              48, "8.9", ("NVIDIA-RTX-6000-Ada-Generation",), "medium"),
    "RTX-A5000": ExtraSpec("NVIDIA RTX A5000", {"0x223110DE": "NVIDIA RTX A5000"}, 24, "8.6",
                           ("NVIDIA-RTX-A5000",), "low"),
}
EXTRA_HEADER = "model (marketing name)"


def build_extra_models(text: str) -> dict[str, dict[str, Any]]:
    """Catalogue JSON of the extra models, each checked against its row of gpu-models-extra.md §1."""
    rows = {row[EXTRA_HEADER]: row for row in markdown_table(text, EXTRA_GPUS, EXTRA_HEADER)}
    models: dict[str, dict[str, Any]] = {}
    for model_id, spec in EXTRA_MODELS.items():
        row = rows.get(spec.row)
        where = f"{EXTRA_GPUS} row {spec.row!r}"
        if row is None:
            raise DeriveError(f"{where}: not in the table (rows: {', '.join(sorted(rows))})")
        ids_cell = row["PCI device id(s)"].upper()
        listed = set(re.findall(r"(?<!:)0X([0-9A-F]{4})10DE\b", ids_cell))  # not the :0x<SUB> of a filter
        if listed != {pci[2:6] for pci in spec.pci_devices}:
            raise DeriveError(f"{where}: the row lists device ids {sorted(listed)}, the spec {sorted(spec.pci_devices)}")
        for sub in spec.subsystem_ids:  # the row quotes a subsystem as 0x<SUBDEVICE>
            if f"SUBSYSTEM {sub[:6].upper()}" not in ids_cell:
                raise DeriveError(f"{where}: subsystem {sub[:6]} is not in the row's ids ({row['PCI device id(s)']})")
        if "SUBSYSTEM" in ids_cell and not spec.subsystem_ids:
            raise DeriveError(f"{where}: the row names a subsystem id, the spec none")
        memory = re.match(r"(\d+(?:\.\d+)?)", row["mem GiB"])
        if memory is None or float(memory.group(1)) != spec.memory_gib:
            raise DeriveError(f"{where}: memory {row['mem GiB']!r} is not {spec.memory_gib}")
        if row["CC"] != spec.compute_capability:
            raise DeriveError(f"{where}: compute capability {row['CC']!r} is not {spec.compute_capability}")
        if row["MIG"] != "no":
            raise DeriveError(f"{where}: MIG is {row['MIG']!r}; only non-MIG models are derived from this table")
        label_cell = row["`nvidia.com/gpu.product`"]
        if list(spec.products) != re.findall(r"`([^`]+)`", label_cell)[:1]:
            raise DeriveError(f"{where}: product label {label_cell!r} is not {list(spec.products)}")
        for name in spec.pci_devices.values():
            if name != spec.row and f'"{name}"' not in row["sources"]:
                raise DeriveError(f"{where}: the device name {name!r} is quoted nowhere in the row")
        _confidence_rank(spec.confidence)  # raises for an unknown word
        label_origin = "observed on nodes" if "OBS" in label_cell else "derived from the driver name"
        models[model_id] = {
            "balancedLayout": {}, "computeCapability": spec.compute_capability, "confidence": spec.confidence,
            "family": family_for_cc(spec.compute_capability), "legacyProfileNames": [],
            "memoryGiB": spec.memory_gib, "migCapable": False, "migGeometry": None, "migProfiles": {},
            "name": spec.row, "pciDeviceIds": sorted(spec.pci_devices),
            "pciDevices": dict(sorted(spec.pci_devices.items())), "pciSubsystemIds": list(spec.subsystem_ids),
            "productLabels": list(spec.products),
            "sources": [f"{EXTRA_GPUS} §1, GFD product label {label_origin}: {row['sources']}"],
        }
    return models


MODEL_ID_RE = re.compile(r"^[A-Z0-9][A-Z0-9-]*$")
PCI_ID_RE = re.compile(r"^0x[0-9A-F]{4}10DE$")
SUBSYSTEM_ID_RE = re.compile(r"^0x[0-9A-F]{8}$")
PROFILE_RE = re.compile(r"^(\d+)g\.(\d+)gb")


def family_for_cc(cc: str) -> str:
    """GFD's gpu.family label for a compute capability (nvidia-formats-facts.md §2.1)."""
    major, minor = (int(part) for part in cc.split("."))
    if major == 7:
        return "turing" if minor >= 5 else "volta"
    if major == 8:
        return "ada-lovelace" if minor == 9 else "ampere"
    if major == 9:
        return "hopper"
    if major in (10, 12):
        return "blackwell"
    if major == 13:
        return "rubin"
    raise DeriveError(f"no GFD family known for compute capability {cc}")


def _confidence_rank(word: str) -> int:
    """Order of the confidence words used by the curated catalogue."""
    ranks = {"low": 0, "medium": 1, "high": 2}
    if word not in ranks:
        raise DeriveError(f"unknown confidence word {word!r}")
    return ranks[word]


def _profile(entry: dict[str, Any], group: str, geometry: tuple[int, int]) -> tuple[str, dict[str, Any]]:
    """One curated profile entry as (name, catalogue JSON), checked against the group's geometry."""
    where = f"{CURATED_MIG} {group}"
    name = require(entry, "name", where)
    where = f"{where} profile {name}"
    starts, size = parse_placements(require(entry, "placements", where), where)
    compute = int(require(entry, "compute_slices", where))
    memory = int(require(entry, "memory_slices", where))
    max_instances = int(require(entry, "max_instances", where))
    match = PROFILE_RE.match(name)
    if not match or int(match.group(1)) != compute:
        raise DeriveError(f"{where}: name does not start with {compute}g.<GB>gb")
    if memory != size:
        raise DeriveError(f"{where}: memory_slices {memory} differs from placement size {size}")
    if starts[-1] + size > geometry[1]:
        raise DeriveError(f"{where}: placement {starts[-1]}+{size} runs past {geometry[1]} memory slices")
    if not 1 <= max_instances <= len(starts):
        raise DeriveError(f"{where}: max_instances {max_instances} does not fit {len(starts)} start slots")
    return name, {"computeSlices": compute, "memorySlices": memory, "maxInstances": max_instances,
                  "starts": starts, "size": size}


def _mig_model(model_id: str, spec: ModelSpec, group: dict[str, Any]) -> dict[str, Any]:
    """Catalogue JSON for a MIG model from its curated group."""
    where = f"{CURATED_MIG} {group.get('model')}"
    geometry = (int(require(group, "compute_slices", where)), int(require(group, "memory_slices", where)))
    profiles = dict(_profile(entry, str(group["model"]), geometry) for entry in require(group, "profiles", where))
    balanced = {str(k): int(v) for k, v in require(group, "all_balanced", where).items()}
    for name in balanced:
        if name not in profiles:
            raise DeriveError(f"{where}: all_balanced names unknown profile {name}")
    names = require(group, "pci_device_ids", where)
    confidence_word = str(require(group, "confidence", where)).split()[0]
    if _confidence_rank(spec.confidence) > _confidence_rank(confidence_word):
        raise DeriveError(f"{model_id}: confidence {spec.confidence} is above the curated {confidence_word}")
    # go-nvlib names profiles after the memory the driver reports, so the full-GPU profile says how much a
    # model has at least; a nominal size below it means the constant above is wrong.
    full = [n for n, p in profiles.items() if p["computeSlices"] == geometry[0] and not re.search(r"[+-]", n)]
    if len(full) != 1:
        raise DeriveError(f"{where}: expected one plain full-GPU profile, found {full}")
    full_gb = int(full[0].split(".")[1].removesuffix("gb"))
    if spec.memory_gib is not None and math.ceil(spec.memory_gib) < full_gb:  # 140.4 GiB names a 141gb profile
        raise DeriveError(f"{model_id}: memory {spec.memory_gib} GiB is below its full-GPU profile ({full_gb} GB)")
    legacy = [str(item).split()[0] for item in group.get("legacy_profile_names", [])]
    return {
        "balancedLayout": balanced,
        "computeCapability": spec.compute_capability,
        "confidence": spec.confidence,
        "family": _family(model_id, spec),
        "legacyProfileNames": legacy,
        "memoryGiB": spec.memory_gib,
        "migCapable": True,
        "migGeometry": {"computeSlices": geometry[0], "memorySlices": geometry[1]},
        "migProfiles": profiles,
        "name": spec.name,
        "pciDeviceIds": list(spec.pci_ids),
        "pciDevices": {pci: str(names[pci]) for pci in spec.pci_ids},
        "pciSubsystemIds": [],
        "productLabels": list(spec.products),
        "sources": [str(s) for s in require(group, "sources", where)]
        + [f"compute capability: {spec.cc_evidence}"]
        + ([f"name, memory and product label: {H200_REAL_SMI} (Product Name, FB Memory Total) and {H200_REAL_GFD} "
            "(GFD v0.20.0 nvidia.com/gpu.product)"] if spec.products else []),
    }


def _family(model_id: str, spec: ModelSpec) -> str:
    """The GFD family of a model, derived from its compute capability when known."""
    if spec.compute_capability is None:
        if spec.family is None:
            raise DeriveError(f"{model_id}: neither compute capability nor family is known")
        return spec.family
    family = family_for_cc(spec.compute_capability)
    if spec.family is not None and spec.family != family:
        raise DeriveError(f"{model_id}: family {spec.family} disagrees with compute capability")
    return family


def _entry_filters(entry: dict[str, Any]) -> set[str] | None:
    """The upper-cased device-filter ids of a mig-parted entry, or None when it applies to all GPUs."""
    raw = entry.get("device-filter")
    if raw is None:
        return None
    items = [raw] if isinstance(raw, str) else list(raw)
    return {str(item).upper().replace("0X", "0x") for item in items}


def _check_against_mig_parted(models: dict[str, dict[str, Any]], config: dict[str, Any]) -> None:
    """Fail when mig-parted's shipped config disagrees with the catalogue on counts or balanced layouts."""
    configs = require(config, "mig-configs", MIG_PARTED_DEFAULT)
    for model_id, model in models.items():
        if not model["migCapable"]:
            continue
        ids = set(model["pciDeviceIds"])
        wanted = {"all-balanced": model["balancedLayout"]}
        wanted.update({"all-" + name.replace("+", "."): {name: p["maxInstances"]}
                       for name, p in model["migProfiles"].items()})
        for config_name, layout in wanted.items():
            for entry in configs.get(config_name) or []:
                filters = _entry_filters(entry)
                if filters is not None and not filters & ids:
                    continue
                found = {str(k): int(v) for k, v in (entry.get("mig-devices") or {}).items()}
                if found != layout:
                    raise DeriveError(f"{model_id}: {MIG_PARTED_DEFAULT} {config_name} has {found}, "
                                      f"the catalogue says {layout}")


def check_pci_ids(models: dict[str, dict[str, Any]]) -> None:
    """Fail on malformed ids, and on a device id two models share unless disjoint subsystem ids separate them."""
    owners: dict[str, list[str]] = {}
    for model_id, model in models.items():
        if not MODEL_ID_RE.match(model_id):
            raise DeriveError(f"model id {model_id!r} does not match {MODEL_ID_RE.pattern}")
        for sub in model["pciSubsystemIds"]:
            if not SUBSYSTEM_ID_RE.match(sub):
                raise DeriveError(f"{model_id}: subsystem id {sub!r} is not in 0x<SUBDEVICE><SUBVENDOR> form")
        for pci in model["pciDeviceIds"]:
            if not PCI_ID_RE.match(pci):
                raise DeriveError(f"{model_id}: PCI id {pci!r} is not in 0x<DEVICE>10DE form")
            owners.setdefault(pci, []).append(model_id)
    for pci, ids in owners.items():
        # A device id that several models share (A2 and A16) must be told apart by disjoint subsystem ids.
        subsystems = [set(models[m]["pciSubsystemIds"]) for m in ids]
        if len(ids) > 1 and (not all(subsystems) or sum(map(len, subsystems)) != len(set().union(*subsystems))):
            raise DeriveError(f"PCI id {pci} belongs to {', '.join(ids)}, and no subsystem id tells them apart")


def build_gpus(curated: dict[str, Any], mig_parted: dict[str, Any], extra: str) -> dict[str, Any]:
    """The models map of profiles/gpus.json."""
    groups = require(curated, "gpus", CURATED_MIG)
    by_pci: dict[str, dict[str, Any]] = {}
    for group in groups:
        for pci in require(group, "pci_device_ids", f"{CURATED_MIG} {group.get('model')}"):
            if not PCI_ID_RE.match(str(pci)):
                raise DeriveError(f"{CURATED_MIG}: PCI id {pci!r} is not in 0x<DEVICE>10DE form")
            if str(pci) in by_pci:
                raise DeriveError(f"{CURATED_MIG}: PCI id {pci} appears in two groups")
            by_pci[str(pci)] = group
    models: dict[str, dict[str, Any]] = {}
    assigned: set[str] = set()
    for model_id, spec in MIG_MODELS.items():
        missing = [pci for pci in spec.pci_ids if pci not in by_pci]
        if missing:
            raise DeriveError(f"{model_id}: PCI ids {missing} are not in {CURATED_MIG}")
        group_ids = {id(by_pci[pci]) for pci in spec.pci_ids}
        if len(group_ids) != 1:
            raise DeriveError(f"{model_id}: its PCI ids span several curated groups")
        models[model_id] = _mig_model(model_id, spec, by_pci[spec.pci_ids[0]])
        assigned.update(spec.pci_ids)
    unassigned = sorted(set(by_pci) - assigned)
    if unassigned:
        raise DeriveError(f"curated PCI ids {unassigned} belong to no model id: add them to MIG_MODELS")
    for model_id, (spec, names) in NON_MIG_MODELS.items():
        if set(names) != set(spec.pci_ids):
            raise DeriveError(f"{model_id}: PCI names do not match its PCI ids")
        models[model_id] = {
            "balancedLayout": {}, "computeCapability": spec.compute_capability, "confidence": spec.confidence,
            "family": _family(model_id, spec), "legacyProfileNames": [], "memoryGiB": spec.memory_gib,
            "migCapable": False, "migGeometry": None, "migProfiles": {}, "name": spec.name,
            "pciDeviceIds": list(spec.pci_ids), "pciDevices": dict(names), "pciSubsystemIds": [], "productLabels": [],
            "sources": [*NON_MIG_SOURCES, f"compute capability: {spec.cc_evidence}"],
        }
    for model_id, entry in build_extra_models(extra).items():
        if model_id in models:
            raise DeriveError(f"{EXTRA_GPUS}: model id {model_id} is already in the catalogue")
        models[model_id] = entry
    check_pci_ids(models)
    _check_against_mig_parted(models, mig_parted)
    return dict(sorted(models.items()))


#: What the catalogue's fields mean (the file carries it for its readers).
NOTES = {
    "memoryGiB": "nominal board memory as NVIDIA names the part (80 for an 80GB part); nvidia-smi reports "
                 "slightly less; null where no figure was confirmed",
    "migProfiles": "per model: the same profile name has a different geometry on another model. starts are "
                   "the memory slices an instance may begin at, size the slices it occupies (nvidia-smi mig "
                   "-lgipp notation {starts}:size)",
    "pciDeviceIds": "mig-parted device-filter form 0x<DEVICE><VENDOR>; NFD's pci.device uses the lower-case "
                    "device part only (gpuconf.catalog.GpuModel.nfd_device_ids)",
    "pciDevices": "the pci.ids (or driver) name of each device id; A800/H800 variants are folded into the "
                  "A100/H100 model whose MIG profiles they share",
    "pciSubsystemIds": "0x<SUBDEVICE><SUBVENDOR>: the model is its device ids with one of these subsystems "
                       "(A2 and A16 share device 0x25B6); empty: any subsystem",
    "productLabels": "GFD nvidia.com/gpu.product values of the model (the NVML name, sanitised), where the "
                     "reference gives them",
}


def derive(ref: Reference) -> tuple[dict[str, bytes], dict[str, dict[str, Any]]]:
    """profiles/gpus.json and the H200 fixture, and the catalogue's models (the platform facts are checked against
    them)."""
    models = build_gpus(ref.yaml(CURATED_MIG), ref.yaml(MIG_PARTED_DEFAULT), ref.text(EXTRA_GPUS))
    outputs = h200.derive(ref, models)
    outputs[GPUS_OUT] = dump({
        "generated": header(REFERENCE_SCRIPT, ref.take(CURATED_MIG, MIG_PARTED_DEFAULT, *h200.INPUTS, EXTRA_GPUS),
                            "gpuconf's GPU catalogue, keyed by the model ids users write in an intent."),
        "notes": NOTES,
        "models": models,
    })
    return outputs, models

#!/usr/bin/env python3
"""Derive gpuconf's GPU catalogue, chart facts and test fixtures from the shared reference folder.

Run from the repository root (maintainers only; a user's clone has no reference folder):

    python tools/derive_reference.py [--reference ../shared/reference] [--check]

Writes profiles/gpus.json, profiles/charts/<version>.json, profiles/dcgm-metrics.json and
tests/fixtures/h200-mig-placements.json.
The output is byte-stable (sorted keys, fixed indentation, input hashes instead of timestamps), so running
the script twice changes nothing. Any input it needs that is missing or malformed stops it with an error.
Only the standard library and ruamel.yaml are used.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from derivation.common import (  # noqa: E402 - what every derive script shares
    REFERENCE_SCRIPT, DeriveError, Reference, arguments, dump, header, markdown_table, require, run,
)

# Input files, relative to the reference folder.
CURATED_MIG = "nvidia-formats/mig-catalog.curated.yaml"
MIG_PARTED_DEFAULT = "nvidia-formats/mig-parted/config-default.yaml"
H200_SMI = "gpu/h200-nvidia-smi-mig.txt"
#: A real H200 node (gpu/h200-real/README.md): nvidia-smi -q, GFD v0.20.0's labels, NVML's GPU-instance profiles.
H200_REAL_SMI = "gpu/h200-real/nvidia-smi-q.txt"
H200_REAL_GFD = "gpu/h200-real/gfd-labels.txt"
H200_REAL_MIG = "gpu/h200-real/mig.json"
CP_CRD = "gpu-operator/v26.7.0/crds/nvidia.com_clusterpolicies.yaml"
DCGM_METRICS = "dcgm-exporter/dcp-metrics-included.csv"

# Output files, relative to the repository root.
GPUS_OUT = "profiles/gpus.json"
H200_FIXTURE_OUT = "tests/fixtures/h200-mig-placements.json"
DCGM_OUT = "profiles/dcgm-metrics.json"


# --------------------------------------------------------------------------------------------------------------
# GPU models
# --------------------------------------------------------------------------------------------------------------


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
    # Name, memory (143771 MiB) and product label as a real H200 reports them: _check_h200_real reads them back.
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
PLACEMENTS_RE = re.compile(r"^\{(\d+(?:,\d+)*)\}:(\d+)$")
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


def parse_placements(text: str, where: str) -> tuple[list[int], int]:
    """Parse nvidia-smi's `{0,2,4}:2` placement notation into (starts, size)."""
    match = PLACEMENTS_RE.match(text.strip())
    if not match:
        raise DeriveError(f"{where}: cannot parse placements {text!r} (expected '{{starts}}:size')")
    starts = [int(s) for s in match.group(1).split(",")]
    if starts != sorted(set(starts)):
        raise DeriveError(f"{where}: placement starts {starts} are not sorted and unique")
    return starts, int(match.group(2))


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


# --------------------------------------------------------------------------------------------------------------
# The H200 nvidia-smi table
# --------------------------------------------------------------------------------------------------------------

SMI_HEADER_RE = re.compile(r"PCI device id (0x[0-9A-Fa-f]{8}), (\d+) MiB, driver ([\d.]+)")
SMI_SLICES_RE = re.compile(r"\((\d+) slices in all\)")
SMI_ROW_RE = re.compile(
    r"^\|\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s+([\d.]+)\s+(Yes|No)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|$")
SMI_ROW2_RE = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+\|$")
SMI_PLACEMENT_RE = re.compile(r"^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*(\{[\d,]+\}:\d+)\s*$")


def parse_h200_smi(text: str) -> dict[str, Any]:
    """Parse `nvidia-smi mig -lgip` and `-lgipp` output into the fixture's JSON."""
    header = SMI_HEADER_RE.search(text)
    slices = SMI_SLICES_RE.search(text)
    if not header or not slices:
        raise DeriveError(f"{H200_SMI}: header with PCI id, memory and slice count not found")
    lines = text.splitlines()
    profiles: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        row = SMI_ROW_RE.match(line)
        if not row:
            continue
        row2 = SMI_ROW2_RE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not row2:
            raise DeriveError(f"{H200_SMI}: line {i + 2} should hold CE/JPEG/OFA for profile {row.group(2)}")
        profiles.append({
            "name": row.group(2), "profileId": int(row.group(3)), "instancesFree": int(row.group(4)),
            "instancesTotal": int(row.group(5)), "memoryGiB": float(row.group(6)), "p2p": row.group(7) == "Yes",
            "sm": int(row.group(8)), "dec": int(row.group(9)), "enc": int(row.group(10)),
            "ce": int(row2.group(1)), "jpeg": int(row2.group(2)), "ofa": int(row2.group(3)),
        })
    placements: dict[int, tuple[list[int], int]] = {}
    for line in lines:
        match = SMI_PLACEMENT_RE.match(line.strip())
        if match:
            placements[int(match.group(2))] = parse_placements(match.group(3), H200_SMI)
    if not profiles:
        raise DeriveError(f"{H200_SMI}: no GPU instance profile rows found")
    if {p["profileId"] for p in profiles} != set(placements):
        raise DeriveError(f"{H200_SMI}: profile ids of the -lgip table and the -lgipp lines differ")
    for profile in profiles:
        profile["starts"], profile["size"] = placements[profile["profileId"]]
    return {
        "source": H200_SMI,
        "pciDeviceId": header.group(1)[:2] + header.group(1)[2:].upper(),
        "totalMemoryMiB": int(header.group(2)),
        "driverVersion": header.group(3),
        "memorySlices": int(slices.group(1)),
        "profiles": profiles,
    }


def _check_h200(fixture: dict[str, Any], models: dict[str, dict[str, Any]]) -> None:
    """Fail when the curated H200 profiles disagree with the hardware table."""
    owner = next((mid for mid, m in models.items() if fixture["pciDeviceId"] in m["pciDeviceIds"]), None)
    if owner is None:
        raise DeriveError(f"{H200_SMI}: PCI id {fixture['pciDeviceId']} belongs to no model id")
    model = models[owner]
    if model["migGeometry"]["memorySlices"] != fixture["memorySlices"]:
        raise DeriveError(f"{owner}: memory slices disagree with {H200_SMI}")
    table = {p["name"]: p for p in fixture["profiles"]}
    if set(table) != set(model["migProfiles"]):
        raise DeriveError(f"{owner}: profile names {sorted(model['migProfiles'])} disagree with {sorted(table)}")
    for name, hw in table.items():
        cat = model["migProfiles"][name]
        if (cat["maxInstances"], cat["starts"], cat["size"]) != (hw["instancesTotal"], hw["starts"], hw["size"]):
            raise DeriveError(f"{owner} {name}: catalogue {cat} disagrees with {H200_SMI} {hw}")


def _check_h200_real(smi: str, gfd: str, mig: dict[str, Any], models: dict[str, dict[str, Any]]) -> None:
    """Fail when the H200's name, memory, product label or MIG table disagree with the real node's readings."""
    model = models["H200"]
    name = re.search(r"^\s*Product Name\s*:\s*(.+?)\s*$", smi, re.M)
    total = re.search(r"FB Memory Usage\s*\n\s*Total\s*:\s*(\d+) MiB", smi)
    labels = dict(line.split("=", 1) for line in gfd.splitlines() if "=" in line)
    if not name or not total:
        raise DeriveError(f"{H200_REAL_SMI}: Product Name or FB Memory Total not found")
    if model["name"] != name.group(1):
        raise DeriveError(f"H200: name {model['name']!r} is not the GPU's own {name.group(1)!r} ({H200_REAL_SMI})")
    if model["memoryGiB"] != round(int(total.group(1)) / 1024, 1) or labels.get("nvidia.com/gpu.memory") != total.group(1):
        raise DeriveError(f"H200: memory {model['memoryGiB']} GiB is not {total.group(1)} MiB ({H200_REAL_SMI}, "
                          f"{H200_REAL_GFD})")
    # GFD's product label is the NVML name with spaces joined by "-" (internal/lm/resource.go).
    if model["productLabels"] != [labels.get("nvidia.com/gpu.product")] or \
            labels.get("nvidia.com/gpu.product") != "-".join(name.group(1).split()):
        raise DeriveError(f"H200: product labels {model['productLabels']} are not GFD's "
                          f"{labels.get('nvidia.com/gpu.product')!r} ({H200_REAL_GFD})")
    (device,) = mig["devices"]
    table = {p["name"].removeprefix("MIG "): p for p in device["gpu_instance_profiles_by_index"] if p.get("name")}
    if set(table) != set(model["migProfiles"]):
        raise DeriveError(f"H200: profiles {sorted(model['migProfiles'])} are not NVML's {sorted(table)} "
                          f"({H200_REAL_MIG})")
    for profile, hw in table.items():
        cat = model["migProfiles"][profile]
        starts = [start for start, _ in hw["placements"]]
        sizes = {size for _, size in hw["placements"]}
        if (cat["maxInstances"], cat["starts"], {cat["size"]}) != (hw["instanceCount"], starts, sizes):
            raise DeriveError(f"H200 {profile}: catalogue {cat} disagrees with NVML ({H200_REAL_MIG}) {hw}")
    with_ofa = sorted(p for p, hw in table.items() if hw["ofaCount"])
    if with_ofa != ["1g.18gb+me", "7g.141gb"]:  # gpuconf/catalog.py MEDIA_RULE says which instances hold the OFA
        raise DeriveError(f"H200: the instances with an optical-flow accelerator are {with_ofa} ({H200_REAL_MIG})")


# --------------------------------------------------------------------------------------------------------------
# Chart versions
# --------------------------------------------------------------------------------------------------------------

# gpu-operator-facts.md §4, "Chart-template quirks": keys the templates read although values.yaml lacks them.
# "*.args for most operands" is expanded below from the ClusterPolicy CRD (see _operand_args_keys).
TEMPLATE_ONLY_KEYS = (
    "nameOverride",
    "fullnameOverride",
    "operator.labels",
    "operator.version",
    "operator.defaultGPUMode",
    "operator.metrics",
    "validator.version",
    "validator.cuda.env",
    "validator.driver.env",
    "validator.toolkit.env",
    "validator.vfioPCI.env",
    "validator.vgpuManager.env",
    "validator.vgpuDevices.env",
    "driver.args",
    "driver.livenessProbe",
    "driver.readinessProbe",
    "driver.licensingConfig.configMapName",
    "dcgmExporter.config",
    "dcgmExporter.args",
    "dcgmExporter.hpcJobMapping",
    "dcgmExporter.podLabelAllowlistRegex",
    "dcgmExporter.imagePullSecrets",
    "dcgm.imagePullSecrets",
    "nodeStatusExporter.env",
    "nodeStatusExporter.version",
    "kataManager.repository",
    "kataManager.image",
    "kataManager.version",
    # §4 table: hostPaths.kubeletRootDir is commented out in values.yaml and rendered "only if set; new in 26.7".
    "hostPaths.kubeletRootDir",
)
# gpu-operator-facts.md §9: keys that v26.7.0 added, so v26.3.3's templates do not read them.
NEW_IN_26_7 = ("hostPaths.kubeletRootDir", "operator.metrics")

# gpu-operator-facts.md §4: in values.yaml but read by no template. driver.nvidiaDriverCRD.nodeSelector is "dead in
# 26.7" only: §9 says the default NVIDIADriver lost its nodeSelector in 26.7, so v26.3.3 still renders it.
DEAD_KEYS = {
    "v26.7.0": ("devicePlugin.mps.root", "driver.nvidiaDriverCRD.nodeSelector"),
    "v26.3.3": ("devicePlugin.mps.root",),
}
# gpu-operator-facts.md §4: values key -> the ClusterPolicy spec field it is rendered into (checked in the CRD).
RENAMED_KEYS = {"driver.upgradePolicy.gpuPodDeletion": "driver.upgradePolicy.podDeletion"}
# gpu-operator-facts.md §4: blocks copied with toYaml, so their keys must be CR field names.
VERBATIM_BLOCKS = (
    "dcgmExporter.serviceMonitor",
    "driver.certConfig",
    "driver.kernelModuleConfig",
    "driver.licensingConfig",
    "driver.repoConfig",
    "driver.virtualTopology",
    "vgpuDeviceManager.config",
)
# Values that the templates pass through Sprig's `default`, which replaces every empty value (nil, false, 0, ""):
# path -> (the value it becomes, the templates, when it matters). Read off templates/clusterpolicy.yaml and
# templates/nvidiadriver.yaml of both charts (the reference has their values and CRDs, not their templates; issue 10
# of the project lists the same facts). The `default false` / `default 0` uses are left out: they replace an empty
# value by an equal one.
HELM_DEFAULTS = {
    "driver.upgradePolicy.maxUnavailable": {
        "becomes": "25%", "templates": ["clusterpolicy.yaml", "nvidiadriver.yaml"], "when": "always"},
    "driver.licensingConfig.nlsEnabled": {
        "becomes": True, "templates": ["nvidiadriver.yaml"], "when": "defaultNVIDIADriver"},
    "driver.nvidiaDriverCRD.driverType": {
        "becomes": "gpu", "templates": ["nvidiadriver.yaml"], "when": "defaultNVIDIADriver"},
}
# Mapping keys whose children are user-chosen names (Kubernetes labels, annotations, node selectors, resource
# quantities, ConfigMap data, feature gates) or whole Kubernetes objects the chart passes through (affinity,
# security contexts), so a key below them is legitimate even though values.yaml does not list it.
FREE_FORM_MAP_KEYS = (
    "additionalLabels", "affinity", "annotations", "daemonsetAnnotations", "data", "deploymentAnnotations",
    "featureGates", "labels", "limits", "nodeSelector", "podSecurityContext", "requests", "resources",
    "securityContext",
)
# The NFD subchart's nfd-master/worker/topology-updater `config` blocks are NFD's own configuration files.
NFD_CONFIG_BLOCKS = (
    "node-feature-discovery.master.config",
    "node-feature-discovery.topologyUpdater.config",
    "node-feature-discovery.worker.config",
)


# The CRDs a chart ships in its crds/ folder, which `helm upgrade` never upgrades (a chart move must apply them first).
# v26.7.0's crds/ is in the reference. v26.3.3's is not: its set is v26.7.0's without what gpu-operator-facts.md §9
# says 26.7 added ("Three CRDs are new (gpuclusters, computedomains, computedomaincliques)"; "The CRDs add
# hostPaths.kubeletRootDir, operator.metrics.serviceMonitor and dcgmExporter.serviceMonitor.scrapeTimeout
# (ClusterPolicy), and default plus upgradePolicy (NVIDIADriver)"), so only those differences are known.
CRDS_26_7 = ("nvidia.com_clusterpolicies.yaml", "nvidia.com_gpuclusters.yaml", "nvidia.com_nvidiadrivers.yaml",
             "resource.nvidia.com_computedomaincliques.yaml", "resource.nvidia.com_computedomains.yaml")
NEW_CRDS_IN_26_7 = ("nvidia.com_gpuclusters.yaml", "resource.nvidia.com_computedomaincliques.yaml",
                    "resource.nvidia.com_computedomains.yaml")
NEW_CRD_FIELDS_IN_26_7 = {
    "nvidia.com_clusterpolicies.yaml": ("spec.dcgmExporter.serviceMonitor.scrapeTimeout",
                                        "spec.hostPaths.kubeletRootDir", "spec.operator.metrics.serviceMonitor"),
    "nvidia.com_nvidiadrivers.yaml": ("spec.default", "spec.upgradePolicy"),
}


def _schema_fields(node: dict[str, Any], prefix: str = "") -> list[str]:
    """Every field path of an OpenAPI schema (`[]` for a list's items), parents before children."""
    out: list[str] = []
    for key, child in sorted((node.get("properties") or {}).items()):
        path = f"{prefix}.{key}" if prefix else key
        out.append(path)
        out += _schema_fields(child, path)
    items = node.get("items")
    if isinstance(items, dict):
        out += _schema_fields(items, prefix + "[]")
    return out


def chart_crds(version: str, load: Any) -> tuple[dict[str, Any], str, list[str]]:
    """(file name -> {group, kind, scope, versions, fields}, how they are known, the inputs) of one chart's crds/."""
    crds: dict[str, Any] = {}
    inputs = [f"gpu-operator/v26.7.0/crds/{name}" for name in CRDS_26_7]
    for name, rel in zip(CRDS_26_7, inputs):
        crd = load(rel)
        spec = require(crd, "spec", rel)
        versions = require(spec, "versions", rel)
        fields = sorted({f for v in versions for f in _schema_fields(
            require(require(v, "schema", rel), "openAPIV3Schema", rel))})
        crds[name] = {"group": spec["group"], "kind": spec["names"]["kind"], "scope": spec["scope"],
                      "versions": [v["name"] for v in versions], "fields": fields}
    if version == "v26.7.0":
        return crds, "the chart's crds/ folder", inputs
    if version != "v26.3.3":
        raise DeriveError(f"{version}: no CRD facts")
    for name, added in NEW_CRD_FIELDS_IN_26_7.items():
        for path in added:
            if path not in crds[name]["fields"]:
                raise DeriveError(f"{name}: gpu-operator-facts.md §9 names {path}, which v26.7.0's CRD lacks")
        crds[name]["fields"] = [f for f in crds[name]["fields"]
                                if not any(f == a or f.startswith((a + ".", a + "[]")) for a in added)]
    for name in NEW_CRDS_IN_26_7:
        del crds[name]
    return crds, ("v26.7.0's crds/ without the CRDs and fields gpu-operator-facts.md §9 says 26.7 added (v26.3.3's "
                  "crds/ is not in the reference: other differences are not known)"), inputs


@dataclass(frozen=True)
class ChartInput:
    """Where one chart version's facts come from."""

    version: str
    values: str
    chart_yaml: str | None
    nfd_values: str | None
    nfd_chart_yaml: str | None
    nfd_chart_version: str | None  # only when no Chart.yaml is in the reference


CHARTS = (
    ChartInput("v26.3.3", "gpu-operator/v26.3.3/values.yaml", None, None, None,
               # gpu-operator-facts.md §2/§9: "In v26.3.3 it was 0.18.3"; its Chart.yaml is not in the reference.
               "0.18.3"),
    ChartInput("v26.7.0", "gpu-operator/v26.7.0/values.yaml", "gpu-operator/v26.7.0/Chart.yaml",
               "gpu-operator/v26.7.0/charts/node-feature-discovery/values.yaml",
               "gpu-operator/v26.7.0/charts/node-feature-discovery/Chart.yaml", None),
)


def _check_plain(value: Any, where: str) -> None:
    """Fail on YAML values that have no JSON form (dates, binary, tagged scalars)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise DeriveError(f"{where}: non-string key {key!r}")
            _check_plain(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
    elif not (value is None or isinstance(value, (str, bool, int, float))):
        raise DeriveError(f"{where}: {type(value).__name__} value has no JSON form")


def coalesce(parent: Any, subchart: Any) -> Any:
    """Helm's subchart coalescing: parent values win key by key, maps merge recursively, lists are replaced."""
    if isinstance(parent, dict) and isinstance(subchart, dict):
        merged = dict(subchart)
        for key, value in parent.items():
            merged[key] = coalesce(value, subchart[key]) if key in subchart else value
        return merged
    return parent


def _lookup(defaults: dict[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) for a dotted path whose keys contain no dots."""
    node: Any = defaults
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _crd_spec(crd: dict[str, Any]) -> dict[str, Any]:
    """The properties of the ClusterPolicy spec in its (single) served version."""
    versions = require(require(crd, "spec", CP_CRD), "versions", CP_CRD)
    schema = require(require(versions[0], "schema", CP_CRD), "openAPIV3Schema", CP_CRD)
    return require(require(require(schema, "properties", CP_CRD), "spec", CP_CRD), "properties", CP_CRD)


def _operand_args_keys(values: dict[str, Any], crd_spec: dict[str, Any]) -> list[str]:
    """`<operand>.args` keys for operands whose ClusterPolicy spec takes args but whose values block lacks them."""
    keys = []
    for operand, schema in crd_spec.items():
        block = values.get(operand)
        if "args" in schema.get("properties", {}) and isinstance(block, dict) and "args" not in block:
            keys.append(f"{operand}.args")
    return keys


def _crd_has(crd_spec: dict[str, Any], path: str) -> bool:
    """Whether a dotted ClusterPolicy spec path exists in the CRD schema."""
    node: dict[str, Any] = {"properties": crd_spec}
    for part in path.split("."):
        props = node.get("properties", {})
        if part not in props:
            return False
        node = props[part]
    return True


def build_chart(chart: ChartInput, load: Any, crd_spec: dict[str, Any]) -> dict[str, Any]:
    """The JSON of profiles/charts/<version>.json."""
    values = load(chart.values)
    if not isinstance(values, dict):
        raise DeriveError(f"{chart.values}: not a mapping")
    _check_plain(values, chart.values)
    if chart.chart_yaml is not None:
        deps = require(load(chart.chart_yaml), "dependencies", chart.chart_yaml)
        nfd = [d for d in deps if d.get("name") == "node-feature-discovery"]
        if len(nfd) != 1:
            raise DeriveError(f"{chart.chart_yaml}: expected one node-feature-discovery dependency")
        nfd_version = str(nfd[0]["version"])
    elif chart.nfd_chart_version is not None:
        nfd_version = chart.nfd_chart_version
    else:
        raise DeriveError(f"{chart.version}: no NFD chart version")
    defaults = values
    free_form_paths = list(NFD_CONFIG_BLOCKS)
    nfd_app_version = None  # the NFD image's default tag; not in the reference for v26.3.3's subchart
    if chart.nfd_values is not None and chart.nfd_chart_yaml is not None:
        sub_version = str(require(load(chart.nfd_chart_yaml), "version", chart.nfd_chart_yaml))
        nfd_app_version = str(require(load(chart.nfd_chart_yaml), "appVersion", chart.nfd_chart_yaml))
        if sub_version != nfd_version:
            raise DeriveError(f"{chart.nfd_chart_yaml}: version {sub_version} but the parent pins {nfd_version}")
        sub_values = load(chart.nfd_values)
        _check_plain(sub_values, chart.nfd_values)
        # Helm coalesces a subchart's own values.yaml under the parent's block named after it: the parent's
        # `node-feature-discovery:` keys win, and the subchart fills in every key the parent does not set.
        defaults = dict(values)
        defaults["node-feature-discovery"] = coalesce(values.get("node-feature-discovery", {}), sub_values)
        nfd_source = (f"the parent values.yaml block coalesced over charts/node-feature-discovery/values.yaml "
                      f"{nfd_version} the way Helm does it: parent keys win, maps merge, lists are replaced")
    else:
        # Without the subchart's own defaults, gpuconf cannot tell an NFD typo from an NFD key it does not know.
        free_form_paths = ["node-feature-discovery"]
        nfd_source = (f"the parent values.yaml block only: the NFD {nfd_version} subchart's values.yaml is not in "
                      f"the reference, so every node-feature-discovery path is accepted")
    template_only = [k for k in TEMPLATE_ONLY_KEYS if chart.version == "v26.7.0" or k not in NEW_IN_26_7]
    template_only += _operand_args_keys(values, crd_spec)
    for key in template_only:
        if _lookup(defaults, key)[0]:
            raise DeriveError(f"{chart.version}: template-only key {key} is in values.yaml")
    for key in [*DEAD_KEYS[chart.version], *RENAMED_KEYS, *VERBATIM_BLOCKS, *HELM_DEFAULTS]:
        if not _lookup(defaults, key)[0]:
            raise DeriveError(f"{chart.version}: {key} is not in values.yaml")
    for field in RENAMED_KEYS.values():
        if not _crd_has(crd_spec, field):
            raise DeriveError(f"{CP_CRD}: no ClusterPolicy field spec.{field}")
    return {
        "deadKeys": sorted(DEAD_KEYS[chart.version]),
        "defaults": defaults,
        "freeFormMapKeys": sorted(FREE_FORM_MAP_KEYS),
        "freeFormMapPaths": sorted(free_form_paths),
        "helmDefaults": HELM_DEFAULTS,
        "nfdAppVersion": nfd_app_version,
        "nfdChartVersion": nfd_version,
        "nfdDefaultsSource": nfd_source,
        "renamedKeys": dict(RENAMED_KEYS),
        "templateOnlyKeys": sorted(set(template_only)),
        "verbatimBlocks": sorted(VERBATIM_BLOCKS),
        "version": chart.version,
    }


# --------------------------------------------------------------------------------------------------------------
# dcgm-exporter's metrics file
# --------------------------------------------------------------------------------------------------------------

#: dcgm-exporter's CSV row types (dcgm-exporter facts §1).
DCGM_TYPES = ("gauge", "counter", "label")


def parse_dcgm_csv(text: str, where: str) -> list[dict[str, Any]]:
    """The metric rows of a dcgm-exporter CSV, in file order: field, type, help, and whether the row is enabled
    (a row behind `# ` is shipped switched off). Comment lines that are not rows are skipped."""
    rows: list[dict[str, Any]] = []
    row = re.compile(r"^(#\s*)?(DCGM_[A-Z0-9_]+)\s*,\s*([a-z]+)\s*,\s*(.*?)\s*$")
    for number, line in enumerate(text.splitlines(), start=1):
        match = row.match(line)
        if match is None:
            if line.strip() and not line.lstrip().startswith("#"):
                raise DeriveError(f"{where}:{number}: not a metric row: {line!r}")
            continue
        commented, field, kind, help_text = match.groups()
        if kind not in DCGM_TYPES:
            raise DeriveError(f"{where}:{number}: unknown metric type {kind!r}")
        rows.append({"field": field, "type": kind, "help": help_text, "enabled": commented is None})
    enabled = [r["field"] for r in rows if r["enabled"]]
    if len(enabled) != len(set(enabled)):
        raise DeriveError(f"{where}: an enabled field is listed twice")
    return rows


def build_dcgm_metrics(text: str) -> dict[str, Any]:
    """profiles/dcgm-metrics.json: the GPU Operator's default metrics file (its rows, on and off)."""
    rows = parse_dcgm_csv(text, DCGM_METRICS)
    if sum(r["enabled"] for r in rows) != 26:  # facts §2: the operator's default enables exactly 26 rows
        raise DeriveError(f"{DCGM_METRICS}: expected 26 enabled rows")
    return {
        "configMapKey": "dcgm-metrics.csv",
        "operatorDefault": "/etc/dcgm-exporter/dcp-metrics-included.csv",
        "rows": rows,
    }


# --------------------------------------------------------------------------------------------------------------
# Platforms
# --------------------------------------------------------------------------------------------------------------

PLATFORM_FACTS = "platforms/platform-facts.md"
EC2_NODECLASS_CRD = "crds/karpenter.k8s.aws/karpenter.k8s.aws_ec2nodeclasses.yaml"
PLATFORMS_OUT = "profiles/platforms.json"

# The catalogue model of each GPU cell of the Karpenter instance-type table (§2a). The V100 rows are the SXM2 parts:
# gpu-models-extra.md §1 cites these very EC2 rows (p3 16384 MiB, p3dn 32768 MiB) for V100 SXM2 16GB and 32GB.
# "fractional L4" (g6f/gr6f, instance-gpu-count 0) is no whole GPU of any model and maps to none.
KARPENTER_GPUS = {
    "B300": "B300", "B200": "B200", "H200": "H200", "H100": "H100-80GB", "A100-80GB": "A100-80GB",
    "A100-40GB": "A100-40GB", "V100 32GB": "V100-SXM2-32GB", "V100 16GB": "V100-SXM2-16GB",
    "RTX PRO 6000 Server": "RTX-PRO-6000", "L40S": "L40S", "L4": "L4", "fractional L4": None, "A10G": "A10G",
    "T4G (arm64)": "T4G", "T4": "T4",
}
# The catalogue model of each AKS VM series (§3 table): series -> (model, the words of the GPU cell that name it).
AKS_SERIES = {
    "NC A100 v4": ("A100-80GB", "A100"), "ND H100 v5": ("H100-80GB", "H100"),
    "NCads H100 v5": ("H100-NVL", "H100 NVL"), "NVads A10 v5": ("A10", "A10"), "NCasT4_v3": ("T4", "T4"),
}
# GKE accelerator label values the fact sheet lists as observed (§1, "values not an exhaustive list"), and the
# catalogue models each can name. nvidia-tesla-a100 names an A100 without its memory, so either A100 model fits.
GKE_ACCELERATORS = {
    "nvidia-tesla-t4": ["T4"], "nvidia-l4": ["L4"], "nvidia-tesla-a100": ["A100-40GB", "A100-80GB"],
    "nvidia-h100-80gb": ["H100-80GB"],
}
# gke-aks-facts.md §a: the catalogue model of each GKE accelerator type whose GPU cell names one exactly. V100 (which
# V100?), P100, P4 and K80 (not in the catalogue), GB300 and RTX PRO 6000 (one unofficial source) map to none.
GKE_AKS_FACTS = "platforms/gke-aks-facts.md"
GKE_ACCELERATOR_TYPES = {
    "nvidia-tesla-t4": ("NVIDIA T4", "T4"), "nvidia-tesla-a100": ("NVIDIA A100 40GB", "A100-40GB"),
    "nvidia-a100-80gb": ("NVIDIA A100 80GB", "A100-80GB"), "nvidia-l4": ("NVIDIA L4", "L4"),
    "nvidia-h100-80gb": ("NVIDIA H100 80GB", "H100-80GB"), "nvidia-h100-mega-80gb": ("NVIDIA H100 80GB Mega", "H100-80GB"),
    "nvidia-h200-141gb": ("NVIDIA H200 141GB", "H200"), "nvidia-b200": ("NVIDIA B200", "B200"),
    "nvidia-gb200": ("NVIDIA GB200", "GB200"),
}
# Runtime rows of the §5 table gpuconf renders (the others are the vanilla defaults and the superseded RKE2 text).
RUNTIME_ROWS = {"rke2": "RKE2, operator v25.10+/v26.3", "k3s": "k3s", "microk8s": "MicroK8s"}


class FactSheet:
    """The platform fact sheet, cut into its numbered sections, with checked quotes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sections: dict[str, str] = {}
        current = None
        for line in text.splitlines(keepends=True):
            match = re.match(r"^## (\d+)\. ", line)
            if match:
                current = match.group(1)
                self.sections[current] = ""
            if current is not None:
                self.sections[current] += line
        if sorted(self.sections) != [str(n) for n in range(7)]:
            raise DeriveError(f"{PLATFORM_FACTS}: expected sections 0-6, found {sorted(self.sections)}")

    def quote(self, section: str, literal: str) -> str:
        """literal, after checking that section §N of the sheet says it (line breaks count as spaces)."""
        if literal not in re.sub(r"\s+", " ", self.sections[section]):
            raise DeriveError(f"{PLATFORM_FACTS} §{section} no longer says {literal!r}")
        return literal

    def table(self, section: str, first_header: str) -> dict[str, dict[str, str]]:
        """A table of one section, keyed by its first column."""
        rows = markdown_table(self.sections[section], f"{PLATFORM_FACTS} §{section}", first_header)
        return {row[first_header]: row for row in rows}


def _typed(value: str) -> Any:
    """A values setting as the chart reads it: true/false are booleans, digits an integer, the rest a string."""
    if value in ("true", "false"):
        return value == "true"
    return int(value) if value.isdigit() else value


def chart_settings(text: str) -> dict[str, Any]:
    """The `key.path=value` settings quoted in a cell or line of the sheet."""
    return {key: _typed(value) for key, value in re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)=([^`]*)`", text)}


def _row(table: dict[str, dict[str, str]], prefix: str, where: str) -> dict[str, str]:
    """The one row whose first cell starts with prefix."""
    found = [row for key, row in table.items() if key.startswith(prefix)]
    if len(found) != 1:
        raise DeriveError(f"{where}: expected one row starting {prefix!r}, found {len(found)}")
    return found[0]


def _gke(sheet: FactSheet) -> dict[str, Any]:
    modes = sheet.table("1", "mode")
    google, operator = _row(modes, "Google driver installer", "§1"), _row(modes, "NVIDIA driver manager", "§1")
    values = chart_settings(google["operator values"])
    # cdi.default: "ignored, see §0" (deprecated; chart v26.7.0 no longer renders it).
    if values.pop("cdi.default", None) is None or "ignored" not in google["operator values"]:
        raise DeriveError(f"{PLATFORM_FACTS} §1: the installer row no longer calls cdi.default ignored")
    if chart_settings(operator["operator values"]) or "chart defaults" not in operator["operator values"]:
        raise DeriveError(f"{PLATFORM_FACTS} §1: the driver-manager row no longer keeps the chart defaults")
    sheet.quote("1", "taints GPU nodes with key `nvidia.com/gpu`, effect NoSchedule")
    accelerators = {}
    for value, models in GKE_ACCELERATORS.items():
        accelerators[sheet.quote("1", value)] = models
    return {
        "source": "NVD:gke (NVIDIA/cloud-native-docs gpu-operator/google-gke.rst)",
        "googleDriver": {"values": values, "nodeOs": google["node OS"], "installer": google["who installs the driver"]},
        "operatorDriver": {"values": {}, "nodeOs": sheet.quote("1", operator["node OS"])},
        "nodePoolLabel": dict(zip(("key", "value"), sheet.quote(
            "1", "gke-no-default-nvidia-gpu-device-plugin=true").split("="))),
        "acceleratorOption": sheet.quote("1", "gpu-driver-version=disabled"),
        "containerd2": {"fromKubernetes": sheet.quote("1", "GKE 1.33+").split()[1].rstrip("+"),
                        "toolkitEnv": {"RUNTIME_CONFIG_SOURCE": sheet.quote("1", "RUNTIME_CONFIG_SOURCE=file").split("=")[1]},
                        "source": "NVD:gke note; NVIDIA/cloud-native-docs PR #312; NVIDIA/nvidia-container-toolkit #1222"},
        "migManagerEnv": {"WITH_REBOOT": "true"} if sheet.quote(
            "1", '`migManager.env` `WITH_REBOOT` = `"true"` (string)') else {},
        "resourceQuota": {
            "name": sheet.quote("1", "gpu-operator-quota"),
            "pods": int(sheet.quote("1", "spec.hard.pods: 100").rsplit(" ", 1)[1]),
            "priorityClasses": [sheet.quote("1", "system-node-critical"), sheet.quote("1", "system-cluster-critical")],
            "source": "NVD gpu-operator/manifests/input/google-gke-gpu-operator-quota.yaml; gpu-operator#660",
        },
        "labels": {"nodePool": sheet.quote("1", "cloud.google.com/gke-nodepool"),
                   "accelerator": sheet.quote("1", "cloud.google.com/gke-accelerator"),
                   "acceleratorCount": sheet.quote("1", "cloud.google.com/gke-accelerator-count")},
        "acceleratorModels": accelerators,
        "gpuTaint": {"key": sheet.quote("1", "nvidia.com/gpu"), "effect": "NoSchedule"},
        "reservedLabelPrefix": "cloud.google.com/",
    }


def _quote(text: str, literal: str, where: str) -> str:
    """literal, after checking that text says it (line breaks count as spaces)."""
    if literal not in re.sub(r"\s+", " ", text):
        raise DeriveError(f"{where} no longer says {literal!r}")
    return literal


def gke_aks_facts(text: str, gke: dict[str, Any], aks: dict[str, Any]) -> None:
    """Add the node-pool facts of gke-aks-facts.md to the GKE and AKS facts: accelerator types per model, the
    autoscaling and spot flags, AKS's node-pool name rule."""
    where = GKE_AKS_FACTS
    rows = markdown_table(text, where, "accelerator type (`--accelerator type=` and the "
                                       "`cloud.google.com/gke-accelerator` value)")
    table = {row[next(iter(row))].strip("`"): row for row in rows}
    accelerators: dict[str, dict[str, Any]] = {}
    for value, (gpu, model) in GKE_ACCELERATOR_TYPES.items():
        row = table.get(value)
        if row is None or not row["GPU"].replace("*", "").startswith(gpu):
            raise DeriveError(f"{where} §a: accelerator {value} is no longer {gpu}")
        accelerators[value] = {"model": model, "machineSeries": row["machine series"]}
    gke["acceleratorModels"] = {value: [a["model"]] for value, a in sorted(accelerators.items())}
    gke["accelerators"] = dict(sorted(accelerators.items()))
    gke["labels"]["spot"] = _quote(text, "cloud.google.com/gke-spot", where)
    gke["nodePoolFlags"] = {
        "autoscaling": _quote(text, "--enable-autoscaling", where),
        "totalMin": _quote(text, "--total-min-nodes", where), "totalMax": _quote(text, "--total-max-nodes", where),
        "spot": _quote(text, "--spot", where),
        "source": "gcloud 578.0.0 lib/googlecloudsdk/command_lib/container/flags.py (gke-aks-facts §a)",
    }
    aks["nodePoolName"] = {"pattern": _quote(text, "^[a-z][a-z0-9]{0,11}$", where),
                           "source": "gke-aks-facts §b (AKS's Linux node-pool rule; az checks 12 alphanumerics)"}
    counts = re.search(r"accepts \*\*(\d+)[–-](\d+)\*\* for both", text)
    if counts is None:
        raise DeriveError(f"{where} §b: the autoscaler's count range is no longer stated")
    aks["nodePoolFlags"] = {
        "autoscaler": _quote(text, "--enable-cluster-autoscaler", where),
        "min": _quote(text, "--min-count", where), "max": _quote(text, "--max-count", where),
        "countRange": [int(counts.group(1)), int(counts.group(2))],
        "priority": _quote(text, "--priority Spot", where), "evictionPolicy": _quote(text, "--eviction-policy Delete", where),
        "source": "Azure/azure-cli acs/_params.py and _validators.py (gke-aks-facts §b)",
    }
    # The label AKS puts on Spot nodes: the fact sheet names it among what it could not verify, so gpuconf reads it
    # only from a match that names it, and the report says so.
    aks["spotLabel"] = {"key": _quote(text, "kubernetes.azure.com/scalesetpriority", where),
                        "value": _quote(text, "scalesetpriority=spot", where).split("=")[1], "verified": False}


def _eks(sheet: FactSheet) -> dict[str, Any]:
    amis = sheet.table("2", "AMI")
    out = {}
    for name, prefix in (("al2023", "EKS AL2023 NVIDIA"), ("bottlerocket", "EKS Bottlerocket"),
                         ("ubuntu", "Ubuntu EKS AMI")):
        row = _row(amis, prefix, "§2")
        out[name] = {"values": chart_settings(row["operator values"]), "ships": row["ships"], "source": row["source"]}
    if out["ubuntu"]["values"] or "operator manages driver + toolkit" not in amis[next(k for k in amis if k.startswith(
            "Ubuntu"))]["operator values"]:
        raise DeriveError(f"{PLATFORM_FACTS} §2: the Ubuntu AMI row no longer keeps the operator's driver")
    return {
        "source": "AWS (docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html); NVD:eks",
        "amis": out,
        "nodeGroupLabel": sheet.quote("2", "eks.amazonaws.com/nodegroup"),
        "eksctlDevicePlugin": sheet.quote("2", "--install-nvidia-plugin=false"),
    }


def _karpenter(sheet: FactSheet, crd: dict[str, Any], models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    table = markdown_table(sheet.sections["2"], f"{PLATFORM_FACTS} §2a", "instance family")
    families = []
    for row in table:
        gpu = row["GPU"]
        if gpu not in KARPENTER_GPUS:
            raise DeriveError(f"{PLATFORM_FACTS} §2a: GPU {gpu!r} has no catalogue model in KARPENTER_GPUS")
        counts = [int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", re.sub(r"\([^)]*\)", "", row["GPUs per size"]))]
        model_id = KARPENTER_GPUS[gpu]
        mib = row["per-GPU MiB (EC2)"]
        if model_id is not None:
            model = models.get(model_id)
            if model is None:
                raise DeriveError(f"{PLATFORM_FACTS} §2a: {gpu} maps to {model_id}, which is not in the catalogue")
            # EC2 reports a little less than the nominal size (B300: 275040 MiB of 288 GiB).
            if not mib.isdigit() or abs(int(mib) / 1024 - model["memoryGiB"]) > 0.1 * model["memoryGiB"]:
                raise DeriveError(f"{PLATFORM_FACTS} §2a: {gpu} has {mib} MiB per GPU, {model_id} {model['memoryGiB']} GiB")
        families.append({
            "families": [f.strip() for f in row["instance family"].split(",")],
            "gpuName": row["`instance-gpu-name`"].strip("`"),
            "model": model_id,
            "gpuMemoryMiB": int(mib) if mib.isdigit() else mib,
            "gpuCounts": counts if "= 0" not in row["GPUs per size"] else [0],
        })
    versions = require(crd, "spec", EC2_NODECLASS_CRD)["versions"]
    spec = versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    ami_families = spec["properties"]["amiFamily"]["enum"]
    alias = spec["properties"]["amiSelectorTerms"]["items"]["properties"]["alias"]
    alias_rule = next(r["rule"] for r in alias["x-kubernetes-validations"] if "split('@')[0] in" in r["rule"])
    alias_families = re.findall(r"'([a-z0-9]+)'", alias_rule.split(" in ", 1)[1])
    for family in ("al2023", "bottlerocket"):
        if family not in alias_families:
            raise DeriveError(f"{EC2_NODECLASS_CRD}: alias family {family} is gone")
    return {
        "source": "KP (aws/karpenter-provider-aws v1.14.1 website/content/en/docs/reference/instance-types.md)",
        "labels": {"gpuName": "karpenter.k8s.aws/" + sheet.quote("2", "instance-gpu-name"),
                   "gpuCount": "karpenter.k8s.aws/" + sheet.quote("2", "instance-gpu-count"),
                   "instanceFamily": "karpenter.k8s.aws/" + sheet.quote("2", "instance-family"),
                   "nodePool": sheet.quote("2", "karpenter.sh/nodepool")},
        "restrictedLabelDomains": [sheet.quote("2", "All live under the restricted domain `karpenter.k8s.aws`")
                                   .rsplit("`", 2)[1]],
        "instanceFamilies": families,
        "amiAliasFamilies": alias_families,
        "aliasMaxLength": alias["maxLength"],
        "amiFamilies": ami_families,
        "nodeClass": {"group": crd["spec"]["group"], "kind": crd["spec"]["names"]["kind"],
                      "version": versions[0]["name"]},
        "maxRequirements": int(sheet.quote("2", "at most 100 requirements").split()[2]),
    }


def _aks(sheet: FactSheet) -> dict[str, Any]:
    keep = re.search(r"Keep AKS's driver and toolkit: (.*?)\(NVD:aks\)", re.sub(r"\s+", " ", sheet.sections["3"]))
    if keep is None:
        raise DeriveError(f"{PLATFORM_FACTS} §3: the keep-AKS's-driver option is no longer stated")
    keep = keep.group(1)
    series = []
    for name, row in sheet.table("3", "VM series").items():
        model, words = AKS_SERIES.get(name, (None, None))
        if model is None or words not in row["GPU"]:
            raise DeriveError(f"{PLATFORM_FACTS} §3: VM series {name!r} ({row['GPU']}) has no model in AKS_SERIES")
        series.append({"series": name, "model": model, "gpu": row["GPU"], "perGpu": row["per GPU"],
                       "gpusPerVm": row["GPUs/VM"], "source": row["source"]})
    return {
        "source": "NVD:aks; MS-OP (learn.microsoft.com/azure/aks/nvidia-gpu-operator)",
        "agentPoolLabel": sheet.quote("3", "kubernetes.azure.com/agentpool"),
        "reservedLabelPrefix": sheet.quote("3", "kubernetes.azure.com/"),
        "operatorDriver": {"values": {}, "nodePoolFlag": sheet.quote("3", "--gpu-driver none"),
                           "cli": sheet.quote("3", "Azure CLI >= 2.72.2"),
                           "olderFlag": sheet.quote("3", "--skip-gpu-driver-install")},
        "preinstalled": {"values": chart_settings(keep)},
        "vmSeries": series,
    }


def _openshift(sheet: FactSheet) -> dict[str, Any]:
    channel = re.search(r"Bundle (v[\d.]+): channels `stable`, `(v[\d.]+)` \(default `(v[\d.]+)`\)",
                        sheet.sections["4"])
    if channel is None:
        raise DeriveError(f"{PLATFORM_FACTS} §4: the bundle's channels are no longer stated")
    return {
        "source": "NVD:ocp-install-gpu-ocp; GO bundle/metadata/annotations.yaml",
        "olm": {channel.group(1): {
            "package": sheet.quote("4", "gpu-operator-certified"),
            "source": sheet.quote("4", "certified-operators"),
            "sourceNamespace": sheet.quote("4", "openshift-marketplace"),
            "channel": channel.group(3),
            "installModes": ["OwnNamespace", "SingleNamespace"] if sheet.quote(
                "4", "install modes OwnNamespace/SingleNamespace only") else [],
            "openshiftVersions": sheet.quote("4", "v4.18-v4.22"),
        }},
        "suggestedNamespace": sheet.quote("4", "nvidia-gpu-operator"),
        "monitoringLabel": dict(zip(("key", "value"), sheet.quote("4", "openshift.io/cluster-monitoring=true").split("="))),
        "clusterPolicy": {"operator": {sheet.quote("4", "use_ocp_driver_toolkit"): True}},
        "nfd": {"namespace": sheet.quote("4", "openshift-nfd"),
                "presentLabel": sheet.quote("4", "feature.node.kubernetes.io/pci-10de.present=true").split("=")[0]},
    }


def _runtimes(sheet: FactSheet) -> dict[str, Any]:
    table = sheet.table("5", "platform")
    out = {}
    for name, key in RUNTIME_ROWS.items():
        row = table[key]
        env, community = {}, False
        for var in ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG_SOURCE"):
            quoted = re.findall(r"`([^`]+)`", row[var])
            if quoted:
                env[var] = quoted[0]
                community = community or row[var].startswith("community")
        out[name] = {"toolkitEnv": env, "source": row["source"], "community": community}
    nri = sheet.sections["0"]
    return {
        "distributions": out,
        "nri": {
            "values": chart_settings(sheet.quote("0", "`cdi.nriPluginEnabled=true`")),
            "needs": chart_settings(sheet.quote("0", "`cdi.enabled=true`")),
            "containerd": sheet.quote("0", "containerd 1.7.30, 2.1.x, 2.2.x or 2.3.x"),
            "rke2": sheet.quote("5", "v1.31.13, v1.32.9, v1.33.5, v1.34.1 and later"),
            "crioConflict": "NRI is not supported with CRI-O" in nri,
            "source": "NVD:cdi; NVD:rn v26.3.0",
        },
    }


def build_platforms(text: str, crd: dict[str, Any], models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The platform facts gpuconf renders from, each checked against the fact sheet (and the EC2NodeClass CRD)."""
    sheet = FactSheet(text)
    unverified = [line[2:].strip() for line in sheet.sections["6"].splitlines() if line.startswith("- ")]
    return {
        "aks": _aks(sheet), "eks": _eks(sheet), "gke": _gke(sheet), "karpenter": _karpenter(sheet, crd, models),
        "openshift": _openshift(sheet), "runtimes": _runtimes(sheet), "notVerified": unverified,
    }


# --------------------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------------------


def derive(reference: Path) -> dict[str, bytes]:
    """Every output file (repository-relative path -> bytes) derived from the reference folder."""
    ref = Reference(reference)
    models = build_gpus(ref.yaml(CURATED_MIG), ref.yaml(MIG_PARTED_DEFAULT), ref.text(EXTRA_GPUS))
    fixture = parse_h200_smi(ref.text(H200_SMI))
    _check_h200(fixture, models)
    _check_h200_real(ref.text(H200_REAL_SMI), ref.text(H200_REAL_GFD), json.loads(ref.text(H200_REAL_MIG)), models)
    crd_spec = _crd_spec(ref.yaml(CP_CRD))
    outputs: dict[str, bytes] = {}
    gpus = {
        "generated": _header(ref.take(CURATED_MIG, MIG_PARTED_DEFAULT, H200_SMI, H200_REAL_SMI, H200_REAL_GFD,
                                      H200_REAL_MIG, EXTRA_GPUS),
                             "gpuconf's GPU catalogue, keyed by the model ids users write in an intent."),
        "notes": {
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
        },
        "models": models,
    }
    outputs[GPUS_OUT] = dump(gpus)
    outputs[H200_FIXTURE_OUT] = dump({"generated": _header(ref.take(H200_SMI),
                                                            "The H200 MIG table parsed from nvidia-smi output."),
                                       **fixture})
    dcgm = build_dcgm_metrics(ref.text(DCGM_METRICS))
    outputs[DCGM_OUT] = dump({
        "generated": _header(ref.take(DCGM_METRICS),
                             "dcgm-exporter's metrics file as the GPU Operator runs it by default (dcp-metrics-"
                             "included.csv from the exporter image): every row, enabled or shipped commented out."),
        **dcgm})
    platforms = build_platforms(ref.text(PLATFORM_FACTS), ref.yaml(EC2_NODECLASS_CRD), models)
    gke_aks_facts(ref.text(GKE_AKS_FACTS), platforms["gke"], platforms["aks"])
    outputs[PLATFORMS_OUT] = dump({
        "generated": _header(ref.take(PLATFORM_FACTS, EC2_NODECLASS_CRD, GKE_AKS_FACTS),
                             "What gpuconf sets on each platform, each fact checked against the platform fact sheet."),
        **platforms,
    })
    for chart in CHARTS:
        facts = build_chart(chart, ref.yaml, crd_spec)
        facts["crds"], facts["crdsSource"], crd_inputs = chart_crds(chart.version, ref.yaml)
        used = [chart.values, chart.chart_yaml, chart.nfd_values, chart.nfd_chart_yaml, CP_CRD, *crd_inputs]
        facts["generated"] = _header(ref.take(*[u for u in used if u]),
                                     f"Base defaults and known quirks of GPU Operator chart {chart.version}.")
        outputs[f"profiles/charts/{chart.version}.json"] = dump(facts)
    return dict(sorted(outputs.items()))


def _header(inputs: dict[str, str], what: str) -> dict[str, Any]:
    """The self-description every file this script writes carries."""
    return header(REFERENCE_SCRIPT, inputs, what)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: derive, then write (or with --check, compare)."""
    args = arguments(__doc__, "exit 1 if a committed file differs; write nothing").parse_args(argv)
    return run("derive_reference", lambda: derive(args.reference), args.check)


if __name__ == "__main__":
    sys.exit(main())

"""Tests of gpuconf.catalog: the GPU catalogue, exact MIG fitting, chart facts and the derived data files."""

from __future__ import annotations

import collections
import importlib.util
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuconf import catalog

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "h200-mig-placements.json"
REFERENCE = REPO_ROOT.parent / "shared" / "reference"

REQUIRED_MODELS = {
    # id: (compute capability, nominal memory GiB, MIG-capable)
    "A100-40GB": ("8.0", 40, True),
    "A100-80GB": ("8.0", 80, True),
    "H100-80GB": ("9.0", 80, True),
    "H100-NVL": ("9.0", 94, True),
    "H200": ("9.0", 140.4, True),
    "GH200": ("9.0", 96, True),
    "GH200-144GB": ("9.0", 144, True),
    "B200": ("10.0", 180, True),
    "A30": ("8.0", 24, True),
    "RTX-PRO-6000": ("12.0", 96, True),
    "L4": ("8.9", 24, False),
    "L40S": ("8.9", 48, False),
    "T4": ("7.5", 16, False),
}


def model(model_id: str) -> catalog.GpuModel:
    """A model that must exist."""
    found = catalog.gpu_model(model_id)
    assert found is not None, model_id
    return found


# --- the catalogue ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", sorted(REQUIRED_MODELS))
def test_required_model_has_ids_memory_and_capability(model_id: str) -> None:
    cc, memory, mig = REQUIRED_MODELS[model_id]
    m = model(model_id)
    assert m.id == model_id and m.name
    assert m.pci_device_ids and all(re.fullmatch(r"0x[0-9A-F]{4}10DE", pci) for pci in m.pci_device_ids)
    assert set(m.pci_devices) == set(m.pci_device_ids)
    assert m.memory_gib == memory
    assert m.compute_capability == cc
    assert m.mig_capable is mig


def test_catalogue_also_carries_the_other_curated_models() -> None:
    ids = set(catalog.gpu_models())
    assert {"H100-96GB", "H20", "H200-NVL", "GB200", "B300", "GB300", "PG506-96GB"} <= ids
    assert all(re.fullmatch(r"[A-Z0-9][A-Z0-9-]*", mid) for mid in ids)
    assert list(catalog.gpu_models()) == sorted(ids)


def test_pci_ids_are_unique_across_models_and_a800_h800_are_folded() -> None:
    owners = collections.Counter(pci for m in catalog.gpu_models().values() for pci in m.pci_device_ids)
    # A2 and A16 share one device id; only their subsystem ids tell them apart (gpu-models-extra.md §1).
    assert {pci for pci, n in owners.items() if n > 1} == {"0x25B610DE"}
    for a, b in itertools.combinations(catalog.gpu_models().values(), 2):
        assert a.disjoint_from(b) and b.disjoint_from(a), (a.id, b.id)
    assert "0x20F610DE" in model("A100-40GB").pci_device_ids  # A800 40GB PCIe
    assert "0x232410DE" in model("H100-80GB").pci_device_ids  # H800
    assert model("H100-80GB").pci_devices["0x232410DE"] == "H800"


# gpu-models-extra.md §1: id -> (PCI device ids, subsystem ids, GiB, compute capability, GFD product label).
EXTRA_MODELS = {
    "A10G": (["0x223710DE"], [], 24, "8.6", "NVIDIA-A10G"),
    "A10": (["0x223610DE"], [], 24, "8.6", "NVIDIA-A10"),
    "A16": (["0x25B610DE"], ["0x14A910DE"], 16, "8.6", "NVIDIA-A16"),
    "A2": (["0x25B610DE"], ["0x157E10DE"], 16, "8.6", "NVIDIA-A2"),
    "A40": (["0x223510DE"], [], 48, "8.6", "NVIDIA-A40"),
    "L40": (["0x26B510DE"], [], 48, "8.9", "NVIDIA-L40"),
    "L20": (["0x26B710DE", "0x26BA10DE"], [], 48, "8.9", "NVIDIA-L20"),
    "V100-SXM2-16GB": (["0x1DB110DE", "0x1DF510DE"], [], 16, "7.0", "Tesla-V100-SXM2-16GB"),
    "V100-SXM2-32GB": (["0x1DB510DE"], [], 32, "7.0", "Tesla-V100-SXM2-32GB"),
    "V100-PCIE-16GB": (["0x1DB410DE"], [], 16, "7.0", "Tesla-V100-PCIE-16GB"),
    "V100-PCIE-32GB": (["0x1DB610DE"], [], 32, "7.0", "Tesla-V100-PCIE-32GB"),
    "V100S-PCIE-32GB": (["0x1DF610DE"], [], 32, "7.0", "Tesla-V100S-PCIE-32GB"),
    "T4G": (["0x1EB410DE"], [], 16, "7.5", "NVIDIA-T4G"),
    "RTX-A6000": (["0x223010DE"], [], 48, "8.6", "NVIDIA-RTX-A6000"),
    "RTX-6000-ADA": (["0x26B110DE"], [], 48, "8.9", "NVIDIA-RTX-6000-Ada-Generation"),
    "RTX-A5000": (["0x223110DE"], [], 24, "8.6", "NVIDIA-RTX-A5000"),
}


@pytest.mark.parametrize("model_id", sorted(EXTRA_MODELS))
def test_extra_models_carry_the_fact_sheet(model_id: str) -> None:
    pci, subsystems, memory, cc, product = EXTRA_MODELS[model_id]
    m = model(model_id)
    assert list(m.pci_device_ids) == pci and list(m.pci_subsystem_ids) == subsystems
    assert (m.memory_gib, m.compute_capability, m.product_labels) == (memory, cc, (product,))
    assert not m.mig_capable and not m.mig_profiles and catalog.mig_presets(m) == {}
    assert m.confidence in ("low", "medium") and m.sources


def test_a2_and_a16_are_told_apart_by_their_subsystem() -> None:
    a2, a16, a10 = model("A2"), model("A16"), model("A10")
    assert a2.nfd_device_ids() == a16.nfd_device_ids() == ("25b6",)
    assert a2.nfd_subsystems() == (("10de",), ("157e",)) and a16.nfd_subsystems() == (("10de",), ("14a9",))
    assert a2.disjoint_from(a16) and a2.disjoint_from(a10) and not a2.disjoint_from(a2)
    assert a2.pci_identities() == "0x25B610DE (subsystem 0x157E10DE)"
    assert a10.nfd_subsystems() == ((), ())


@pytest.mark.parametrize(("word", "expected"), [
    # Spellings of one model: case, separators, vendor words, GFD labels, memory written 80G or 80GB.
    ("a10g", ["A10G"]), ("NVIDIA A10G", ["A10G"]), ("nvidia-l40", ["L40"]), ("Tesla T4", ["T4"]),
    ("Tesla-V100-SXM2-16GB", ["V100-SXM2-16GB"]), ("h100 80g", ["H100-80GB"]), ("rtx6000ada", ["RTX-6000-ADA"]),
    ("NVIDIA-RTX-6000-Ada-Generation", ["RTX-6000-ADA"]), ("A6000", ["RTX-A6000"]),
    # A model number alone names every model that carries it.
    ("H100", ["H100-80GB", "H100-96GB", "H100-NVL"]), ("A100", ["A100-40GB", "A100-80GB"]),
    ("V100 32GB", ["V100-PCIE-32GB", "V100-SXM2-32GB"]),
    # Never another GPU: A10G is not an A100, L40 not an L40S, a typo is not guessed.
    ("A10X", []), ("L40X", []), ("H10-80GB", []), ("GeForce RTX 4090", []), ("", []), ("NVIDIA", []),
])
def test_model_suggestions_are_spellings_of_the_same_model(word: str, expected: list[str]) -> None:
    assert catalog.model_suggestions(word, catalog.gpu_models().values()) == expected


def test_model_suggestions_never_steer_to_another_model_number() -> None:
    # Without A10G and L40 in the catalogue (as before gpu-models-extra.md), nothing is offered for them.
    without = [m for m in catalog.gpu_models().values() if m.id not in ("A10G", "L40")]
    assert catalog.model_suggestions("A10G", without) == []
    assert catalog.model_suggestions("L40", without) == []
    for m in catalog.gpu_models().values():
        for name in catalog.model_names(m):
            offered = catalog.model_suggestions(name, catalog.gpu_models().values())
            number = catalog.family_token(catalog.name_tokens(name))
            assert all(catalog.family_token(catalog.name_tokens(o)) == number or o == m.id for o in offered), name


@pytest.mark.parametrize(("model_id", "family"), [
    ("T4", "turing"), ("A100-80GB", "ampere"), ("A30", "ampere"), ("L4", "ada-lovelace"), ("L40S", "ada-lovelace"),
    ("H100-80GB", "hopper"), ("GH200", "hopper"), ("B200", "blackwell"), ("B300", "blackwell"),
    ("RTX-PRO-6000", "blackwell"), ("V100-SXM2-16GB", "volta"), ("T4G", "turing"), ("A10G", "ampere"),
    ("L40", "ada-lovelace"), ("RTX-6000-ADA", "ada-lovelace"),
])
def test_family_follows_gfd_naming(model_id: str, family: str) -> None:
    assert model(model_id).family == family


def test_nfd_device_ids_are_lower_case_device_parts() -> None:
    assert model("H100-80GB").nfd_device_ids() == ("2330", "2331", "2322", "2324")
    assert model("H100-NVL").nfd_device_ids() == ("2321", "233a")
    assert model("L4").nfd_device_ids() == ("27b8",)


def test_unknown_model_is_none() -> None:
    assert catalog.gpu_model("h100-80gb") is None
    assert catalog.gpu_model("H300") is None


@pytest.mark.parametrize("model_id", sorted(m.id for m in catalog.gpu_models().values() if m.mig_capable))
def test_every_mig_model_has_placed_profiles_and_its_presets_fit(model_id: str) -> None:
    m = model(model_id)
    assert m.memory_slots in (4, 8) and m.compute_slots == (7 if m.memory_slots == 8 else 4)
    assert m.mig_profiles
    for name, p in m.mig_profiles.items():
        assert p.name == name and p.size == p.memory_slices
        assert p.starts and all(start + p.size <= m.memory_slots for start in p.starts)
        assert 1 <= p.max_instances <= len(p.starts)
        assert name.startswith(f"{p.compute_slices}g.")
    presets = catalog.mig_presets(m)
    assert presets["all-balanced"] == m.balanced_layout
    assert set(presets) == {"all-balanced"} | {"all-" + n.replace("+", ".") for n in m.mig_profiles}
    for name, layout in presets.items():
        assert catalog.fit_mig_layout(m, layout).fits, (model_id, name)


@pytest.mark.parametrize("model_id", ["L4", "L40S", "T4"])
def test_non_mig_models_have_no_profiles(model_id: str) -> None:
    m = model(model_id)
    assert not m.mig_profiles and not m.balanced_layout and m.memory_slots == 0
    assert catalog.mig_presets(m) == {}
    fit = catalog.fit_mig_layout(m, {"1g.10gb": 1})
    assert not fit.fits and fit.reason == f"{model_id} is not MIG-capable"


def test_same_profile_name_has_per_model_geometry() -> None:
    single = model("A100-80GB").mig_profiles["1g.10gb"]
    double = model("A100-40GB").mig_profiles["1g.10gb"]
    assert (single.memory_slices, single.max_instances) == (1, 7)
    assert (double.memory_slices, double.max_instances) == (2, 4)
    assert model("H200").mig_profiles["1g.35gb"].max_instances == 4
    assert model("GB300").mig_profiles["1g.35gb"].max_instances == 7


# --- the H200 hardware table -----------------------------------------------------------------------------------


def h200_table() -> dict[str, dict]:
    """The fixture's profiles by name."""
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert data["pciDeviceId"] in model("H200").pci_device_ids
    assert data["memorySlices"] == model("H200").memory_slots
    return {p["name"]: p for p in data["profiles"]}


def test_h200_catalogue_matches_the_hardware_table() -> None:
    table = h200_table()
    h200 = model("H200")
    assert set(table) == set(h200.mig_profiles)
    for name, hw in table.items():
        p = h200.mig_profiles[name]
        assert (p.max_instances, list(p.starts), p.size) == (hw["instancesTotal"], hw["starts"], hw["size"])
        assert p.compute_slices == int(name.split("g.")[0])


def oracle_fits(layout: dict[str, int], table: dict[str, dict], compute_slots: int = 7) -> bool:
    """Decide a layout on a profile table alone: counts, compute slices, the one-+me rule, then every reachable
    occupancy (sets of occupied-slot bitmasks), independent of the module's backtracking and instance order."""
    if any(count > table[name]["instancesTotal"] for name, count in layout.items()):
        return False
    if sum(int(name.split("g.")[0]) * count for name, count in layout.items()) > compute_slots:
        return False
    # The media-extension rule (catalog.MEDIA_RULE): one optical-flow accelerator per GPU, so one +me instance.
    if sum(count for name, count in layout.items() if "+me" in name) > 1:
        return False
    masks = {0}
    for name in sorted(layout):
        for _ in range(layout[name]):
            bits = (1 << table[name]["size"]) - 1
            masks = {m | (bits << s) for m in masks for s in table[name]["starts"] if not m & (bits << s)}
    return bool(masks)


def _check_every_layout(m: catalog.GpuModel, table: dict[str, dict]) -> tuple[int, int]:
    """fit_mig_layout agrees with the oracle on every multiset of profiles up to the GPU's memory slots; a fitting
    layout comes with a real placement. Returns (accepted, rejected)."""
    accepted = rejected = 0
    for size in range(m.memory_slots + 1):
        for combo in itertools.combinations_with_replacement(sorted(table), size):
            layout = dict(collections.Counter(combo))
            fit = catalog.fit_mig_layout(m, layout)
            assert fit.fits == oracle_fits(layout, table, m.compute_slots), (m.id, layout, fit.reason)
            if fit.fits:
                accepted += 1
                assert collections.Counter(name for name, _ in fit.placement) == collections.Counter(layout)
                used = 0
                for name, start in fit.placement:
                    assert start in table[name]["starts"]
                    bits = ((1 << table[name]["size"]) - 1) << start
                    assert not used & bits, (layout, fit.placement)
                    used |= bits
            else:
                rejected += 1
                assert fit.reason and not fit.placement
                assert fit.profile in layout, (m.id, layout, fit.reason)  # GC306 points at this profile
    return accepted, rejected


def test_every_h200_layout_agrees_with_the_hardware_table() -> None:
    accepted, rejected = _check_every_layout(model("H200"), h200_table())
    assert accepted + rejected == 6435  # C(7 + 8, 8) multisets of the 7 profiles with at most 8 instances
    assert accepted > 50


def test_h200_media_extension_next_to_six_1g_instances_fits_exactly() -> None:
    # nvidia-smi's engine counts: 7 NVDEC/NVJPG and 1 OFA in all; only the +me instance takes the OFA.
    fit = catalog.fit_mig_layout(model("H200"), {"1g.18gb+me": 1, "1g.18gb": 6})
    assert fit.fits and fit.reason == "fits: 7 of 8 memory slices used"


@pytest.mark.parametrize("model_id", sorted(m.id for m in catalog.gpu_models().values() if m.mig_capable))
def test_every_layout_of_every_mig_model_agrees_with_the_oracle(model_id: str) -> None:
    m = model(model_id)
    table = {name: {"instancesTotal": p.max_instances, "starts": list(p.starts), "size": p.size}
             for name, p in m.mig_profiles.items()}
    accepted, rejected = _check_every_layout(m, table)
    assert accepted > 10 and rejected > 10


def test_media_extensions_fit_next_to_other_1g_instances() -> None:
    """The layouts mig-parted's enumeration happens to leave out, which the hardware allows (issue 10)."""
    for model_id, layout in [("A100-80GB", {"1g.10gb+me": 1, "1g.10gb": 2, "3g.40gb": 1}),
                             ("A100-80GB", {"1g.10gb+me": 1, "1g.20gb": 1}),
                             ("A100-40GB", {"1g.5gb+me": 1, "1g.5gb": 6}),
                             ("H100-80GB", {"1g.10gb+me": 1, "1g.10gb": 6}),
                             ("A30", {"1g.6gb+me": 1, "1g.6gb": 3}),
                             ("B200", {"1g.23gb+me": 1, "1g.45gb": 3})]:
        assert catalog.fit_mig_layout(model(model_id), layout).fits, (model_id, layout)


# --- named layouts ---------------------------------------------------------------------------------------------

FITS, NO = True, False
NAMED_LAYOUTS = [
    # facts §4.1, on an 80GB part
    ("A100-80GB", {"4g.40gb": 1, "3g.40gb": 1}, FITS, None),
    ("A100-80GB", {"3g.40gb": 1, "2g.20gb": 2}, FITS, None),
    ("A100-80GB", {"2g.20gb": 3, "1g.10gb": 1}, FITS, None),
    ("A100-80GB", {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}, FITS, None),
    ("A100-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, FITS, None),
    ("A100-80GB", {"3g.40gb": 2, "1g.10gb": 1}, NO,
     "3g.40gb x2 occupies slots 0-7; 1g.10gb x1 has no free start slot among {0,1,2,3,4,5,6}"),
    ("A100-80GB", {"1g.20gb": 4, "1g.10gb": 1}, NO,
     "1g.20gb x4 occupies slots 0-7; 1g.10gb x1 has no free start slot among {0,1,2,3,4,5,6}"),
    ("A100-80GB", {"4g.40gb": 1, "2g.20gb": 2}, NO,
     "4g.40gb x1 occupies slots 0-3, 2g.20gb x1 occupies slots 4-5; "
     "2g.20gb x1 has no free start slot among {0,2,4} (free: slots 6-7)"),
    ("A100-80GB", {"7g.80gb": 1, "1g.10gb": 1}, NO,
     "7g.80gb x1 occupies slots 0-7; 1g.10gb x1 has no free start slot among {0,1,2,3,4,5,6}"),
    ("A100-80GB", {"7g.80gb": 1, "4g.40gb": 1}, NO, "7g.80gb x1 occupies slots 0-7; 4g.40gb x1 has no free"),
    ("A100-80GB", {"7g.80gb": 1}, FITS, None),
    ("A100-80GB", {"1g.10gb": 7}, FITS, None),
    ("A100-80GB", {"1g.10gb": 8}, NO, "profile 1g.10gb allows at most 7 instances, layout asks for 8"),
    ("A100-80GB", {"1g.10gb+me": 2}, NO, "profile 1g.10gb+me allows at most 1 instance, layout asks for 2"),
    ("A100-80GB", {"1g.5gb": 1}, NO,
     "profile 1g.5gb does not exist on A100-80GB (known: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, "
     "4g.40gb, 7g.80gb)"),
    ("A100-80GB", {"1g.10gb+me": 1, "1g.20gb": 1}, FITS, None),
    ("A100-80GB", {"1g.10gb+me": 1, "1g.10gb": 7}, NO,
     "1g.10gb x7 occupies slots 0-6; 1g.10gb+me x1 has no free start slot among {0,1,2,3,4,5,6} (free: slot 7)"),
    ("A100-80GB", {"1g.10gb+me": 1, "2g.20gb": 3}, FITS, None),
    ("A100-80GB", {"1g.10gb": 0, "2g.20gb": 0}, NO, "all counts are 0"),
    ("A100-80GB", {}, FITS, None),
    # A100-40GB: 1g.10gb is the double-memory profile here
    ("A100-40GB", {"1g.10gb": 4}, FITS, None),
    ("A100-40GB", {"1g.10gb": 5}, NO, "profile 1g.10gb allows at most 4 instances, layout asks for 5"),
    ("A100-40GB", {"1g.5gb": 7}, FITS, None),
    ("A100-40GB", {"4g.20gb": 1, "3g.20gb": 1}, FITS, None),
    ("A100-40GB", {"2g.10gb": 3, "1g.5gb": 1}, FITS, None),
    ("A100-40GB", {"1g.10gb": 3, "1g.5gb": 2}, FITS, None),  # 1g.10gb at 0, 2, 6 leaves 4 and 5 for the 1g.5gb
    ("A100-40GB", {"1g.10gb": 3, "1g.5gb": 3}, NO,
     "1g.10gb x3 occupies slots 0-3,6-7, 1g.5gb x2 occupies slots 4-5; "
     "1g.5gb x1 has no free start slot among {0,1,2,3,4,5,6}"),
    ("A100-80GB", {"2g.20gb": 3, "1g.10gb": 2}, NO,
     "2g.20gb x3 occupies slots 0-5, 1g.10gb x1 occupies slot 6; "
     "1g.10gb x1 has no free start slot among {0,1,2,3,4,5,6} (free: slot 7)"),
    # H100-80GB
    ("H100-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, FITS, None),
    ("H100-80GB", {"2g.20gb": 2, "3g.40gb": 1}, FITS, None),
    ("H100-80GB", {"4g.40gb": 2}, NO, "profile 4g.40gb allows at most 1 instance, layout asks for 2"),
    ("H100-80GB", {"3g.40gb": 1, "2g.20gb": 1, "1g.20gb": 1}, FITS, None),
    # A30: 4 slices
    ("A30", {"4g.24gb": 1}, FITS, None),
    ("A30", {"2g.12gb": 2}, FITS, None),
    ("A30", {"2g.12gb": 1, "1g.6gb": 2}, FITS, None),
    ("A30", {"2g.12gb+me": 2}, NO, "profile 2g.12gb+me allows at most 1 instance, layout asks for 2"),
    ("A30", {"2g.12gb+me": 1, "1g.6gb+me": 1}, NO, "at most one media-extension instance (+me) fits one GPU"),
    ("A30", {"2g.12gb+me": 1, "2g.12gb": 1}, FITS, None),
    ("A30", {"4g.24gb": 1, "1g.6gb": 1}, NO, "4g.24gb x1 occupies slots 0-3; 1g.6gb x1 has no free start slot"),
    ("A30", {"1g.6gb": 5}, NO, "profile 1g.6gb allows at most 4 instances, layout asks for 5"),
    ("A30", {"3g.12gb": 1}, NO, "profile 3g.12gb does not exist on A30"),
    # B200
    ("B200", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}, FITS, None),
    ("B200", {"7g.180gb": 1}, FITS, None),
    ("B200", {"1g.45gb": 4}, FITS, None),
    ("B200", {"1g.45gb": 4, "1g.23gb": 1}, NO, "1g.45gb x4 occupies slots 0-7"),
    ("B200", {"4g.90gb": 1, "3g.90gb": 1}, FITS, None),
    ("B200", {"1g.10gb": 1}, NO, "profile 1g.10gb does not exist on B200"),
    # RTX PRO 6000 Blackwell: 4 slices, +gfx / -me / +me.all variants
    ("RTX-PRO-6000", {"1g.24gb": 2, "2g.48gb": 1}, FITS, None),
    ("RTX-PRO-6000", {"4g.96gb": 1}, FITS, None),
    ("RTX-PRO-6000", {"4g.96gb+gfx": 1, "1g.24gb": 1}, NO, "4g.96gb+gfx x1 occupies slots 0-3"),
    ("RTX-PRO-6000", {"1g.24gb+gfx": 4}, FITS, None),
    ("RTX-PRO-6000", {"2g.48gb-me": 2}, FITS, None),
    ("RTX-PRO-6000", {"1g.24gb+me.all": 1, "1g.24gb-me": 3}, FITS, None),
    ("RTX-PRO-6000", {"1g.24gb+me.all": 1, "2g.48gb+me.all": 1}, NO,
     "at most one media-extension instance (+me) fits one GPU, layout asks for 2"),
    ("RTX-PRO-6000", {"1g.24gb": 5}, NO, "profile 1g.24gb allows at most 4 instances, layout asks for 5"),
    # GB200: a legacy name from older drivers is reported as such
    ("GB200", {"3g.95gb": 1}, NO, "profile 3g.95gb does not exist on GB200 (a name older drivers used"),
]


@pytest.mark.parametrize(("model_id", "layout", "fits", "reason"), NAMED_LAYOUTS,
                         ids=[f"{m}:{'+'.join(f'{k}x{v}' for k, v in lay.items()) or 'empty'}"
                              for m, lay, _, _ in NAMED_LAYOUTS])
def test_named_layout(model_id: str, layout: dict[str, int], fits: bool, reason: str | None) -> None:
    fit = catalog.fit_mig_layout(model(model_id), layout)
    assert fit.fits is fits, fit.reason
    if reason is not None:
        assert fit.reason.startswith(reason), fit.reason
    if fits:
        assert sorted(collections.Counter(n for n, _ in fit.placement).items()) == \
            sorted((k, v) for k, v in layout.items() if v)
    else:
        assert fit.placement == ()


def test_balanced_placement_is_the_known_one() -> None:
    fit = catalog.fit_mig_layout(model("A100-80GB"), {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})
    # The 3g cannot start at 0: 2g + 1g x2 would then need slot 7, which no 1g may start at.
    assert fit.placement == (("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4))


@pytest.mark.parametrize("count", [-1, True, 1.5, "2"])
def test_bad_counts_are_rejected(count: object) -> None:
    fit = catalog.fit_mig_layout(model("A100-80GB"), {"1g.10gb": count})  # type: ignore[dict-item]
    assert not fit.fits and "needs a whole number of instances" in fit.reason


def test_named_layouts_cover_the_required_models() -> None:
    assert len(NAMED_LAYOUTS) >= 30
    assert {"A100-40GB", "A100-80GB", "H100-80GB", "A30", "B200", "RTX-PRO-6000"} <= {m for m, *_ in NAMED_LAYOUTS}


# --- charts ----------------------------------------------------------------------------------------------------


def test_chart_versions() -> None:
    # charts/versions.md §1: every release from v24.9.0 to v26.7.0, oldest first (v25.10 after v25.3)
    assert catalog.chart_versions() == (
        "v24.9.0", "v24.9.1", "v24.9.2", "v25.3.0", "v25.3.1", "v25.3.2", "v25.3.3", "v25.3.4", "v25.10.0",
        "v25.10.1", "v26.3.0", "v26.3.1", "v26.3.2", "v26.3.3", "v26.7.0")
    assert catalog.chart("v26.5.0") is None


def test_chart_defaults_facts() -> None:
    new, old = catalog.chart("v26.7.0"), catalog.chart("v26.3.3")
    assert new is not None and old is not None
    assert new.version == "v26.7.0" and old.version == "v26.3.3"
    assert new.defaults["driver"]["version"] == "595.91.07"
    assert old.defaults["driver"]["version"] == "580.126.20"
    assert new.defaults["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    assert old.defaults["dcgmExporter"]["serviceMonitor"]["enabled"] is False
    assert new.defaults["dcgmExporter"]["serviceMonitor"]["scrapeTimeout"] == "10s"
    assert "scrapeTimeout" not in old.defaults["dcgmExporter"]["serviceMonitor"]
    assert new.defaults["daemonsets"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                          "effect": "NoSchedule"}]
    assert (new.nfd_chart_version, old.nfd_chart_version) == ("0.19.0", "0.18.3")


def test_nfd_subchart_defaults_are_folded_under_the_parent_block() -> None:
    new, old = catalog.chart("v26.7.0"), catalog.chart("v26.3.3")
    assert new is not None and old is not None
    nfd = new.defaults["node-feature-discovery"]
    assert nfd["priorityClassName"] == "system-node-critical"  # the parent's value wins over the subchart's ""
    assert nfd["master"]["config"] == {"extraLabelNs": ["nvidia.com"]}
    assert [t["key"] for t in nfd["worker"]["tolerations"]] == ["node-role.kubernetes.io/control-plane",
                                                                "nvidia.com/gpu"]
    assert nfd["master"]["enableTaints"] is False  # only the subchart's values.yaml has it
    assert nfd["image"]["repository"] == "registry.k8s.io/nfd/node-feature-discovery"
    # v26.3.3's tarball carries its NFD 0.18.3 subchart too: its defaults are folded in the same way
    assert old.defaults["node-feature-discovery"]["image"]["repository"] == "registry.k8s.io/nfd/node-feature-discovery"
    assert old.nfd_app_version == "v0.18.3"


def test_chart_quirk_lists() -> None:
    new, old = catalog.chart("v26.7.0"), catalog.chart("v26.3.3")
    assert new is not None and old is not None
    assert set(new.dead_keys) == {"driver.nvidiaDriverCRD.nodeSelector", "devicePlugin.mps.root"}
    assert old.dead_keys == ("devicePlugin.mps.root",)
    assert dict(new.renamed_keys) == {"driver.upgradePolicy.gpuPodDeletion": "driver.upgradePolicy.podDeletion"}
    assert "dcgmExporter.serviceMonitor" in new.verbatim_blocks and "driver.repoConfig" in new.verbatim_blocks
    assert {"operator.version", "operator.metrics", "hostPaths.kubeletRootDir", "gfd.args"} <= \
        set(new.template_only_keys)
    assert "operator.version" in old.template_only_keys
    assert not {"hostPaths.kubeletRootDir", "operator.metrics"} & set(old.template_only_keys)
    for facts in (new, old):
        for path in (*facts.dead_keys, *facts.renamed_keys, *facts.verbatim_blocks):
            assert catalog.chart_path_status(facts.version, path) == ("known", None), path
        for path in facts.template_only_keys:
            assert catalog.chart_path_status(facts.version, path) == ("template-only", None), path


def test_chart_defaults_are_a_fresh_copy_per_call() -> None:
    first = catalog.chart("v26.7.0")
    assert first is not None
    first.defaults["driver"]["version"] = "changed"
    again = catalog.chart("v26.7.0")
    assert again is not None and again.defaults["driver"]["version"] == "595.91.07"


@pytest.mark.parametrize(("version", "path", "expected"), [
    ("v26.7.0", "driver.version", ("known", None)),
    ("v26.7.0", "dcgmExporter.serviceMonitor", ("known", None)),
    ("v26.7.0", "dcgmExporter.serviceMonitor.interval", ("known", None)),
    ("v26.7.0", "daemonsets.tolerations", ("known", None)),
    ("v26.7.0", "operator.nodeSelector.kubernetes.io/os", ("known", None)),
    ("v26.7.0", "operator.annotations.openshift.io/scc", ("known", None)),
    ("v26.7.0", "node-feature-discovery.master.enableTaints", ("known", None)),
    ("v26.7.0", "operator.version", ("template-only", None)),
    ("v26.7.0", "operator.metrics.serviceMonitor.interval", ("template-only", None)),
    ("v26.7.0", "dcgmExporter.config.name", ("template-only", None)),
    ("v26.7.0", "hostPaths.kubeletRootDir", ("template-only", None)),
    ("v26.7.0", "daemonsets.labels.team", ("open-map", None)),
    ("v26.7.0", "devicePlugin.config.data.a100-ts4", ("open-map", None)),
    ("v26.7.0", "operator.resources.limits.ephemeral-storage", ("open-map", None)),
    ("v26.7.0", "node-feature-discovery.worker.config.sources.usb", ("open-map", None)),
    ("v26.7.0", "dcgmExporter.serviceMonitr.interval", ("unknown", "dcgmExporter.serviceMonitor.interval")),
    ("v26.7.0", "driver.verison", ("unknown", "driver.version")),
    ("v26.7.0", "devicePlugin.config.nmae", ("unknown", "devicePlugin.config.name")),
    ("v26.7.0", "daemonsets.tolerations.0.key", ("unknown", "daemonsets.tolerations")),
    ("v26.7.0", "driver.version.major", ("unknown", "driver.version")),
    ("v26.7.0", "driver..version", ("unknown", "driver.version")),
    ("v26.3.3", "hostPaths.kubeletRootDir", ("unknown", "hostPaths.rootFS")),
    ("v26.3.3", "operator.metrics.serviceMonitor.interval", ("unknown", "dcgmExporter.serviceMonitor.interval")),
    ("v26.3.3", "node-feature-discovery.master.enableTaints", ("known", None)),
    ("v24.9.2", "driver.useOpenKernelModules", ("known", None)),
    ("v25.3.0", "driver.useOpenKernelModules", ("unknown", "driver.kernelModuleType")),
])
def test_chart_path_status(version: str, path: str, expected: tuple[str, str | None]) -> None:
    assert catalog.chart_path_status(version, path) == expected


def test_chart_path_status_of_an_unknown_version_says_which_exist() -> None:
    with pytest.raises(ValueError, match=r"v26\.7\.0"):
        catalog.chart_path_status("v26.7.1", "driver.version")


def test_suggest() -> None:
    ids = list(catalog.gpu_models())
    assert catalog.suggest("h100-80gb", ids) == "H100-80GB"
    assert catalog.suggest("H100-80G", ids) == "H100-80GB"
    assert catalog.suggest("v26.7", catalog.chart_versions()) == "v26.7.0"
    assert catalog.suggest("quantum-annealer", ids) is None
    assert catalog.suggest("anything", []) is None


# --- how the module loads --------------------------------------------------------------------------------------


def test_import_reads_nothing_and_pulls_no_heavy_modules() -> None:
    heavy = ["click", "difflib", "jinja2", "jsonschema", "kubernetes_validate", "pydantic", "ruamel", "yaml"]
    code = ("import sys, gpuconf.catalog as c; "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})); "
            "print(c._gpus_json.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "0"


# --- the derived files -----------------------------------------------------------------------------------------


def _derive_module():
    """tools/derive_reference.py as a module."""
    spec = importlib.util.spec_from_file_location("derive_reference", REPO_ROOT / "tools" / "derive_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not REFERENCE.is_dir(),
                    reason="../shared/reference is absent (a user's clone): the committed profiles/ are the source")
def test_committed_data_is_what_the_script_derives() -> None:
    derive = _derive_module()
    first = derive.derive(REFERENCE)
    assert first == derive.derive(REFERENCE)  # idempotent: same bytes on every run
    assert set(first) == {"profiles/gpus.json", "profiles/charts/index.json",
                          *(f"profiles/charts/{v}.json" for v in catalog.chart_versions()),
                          "profiles/dcgm-metrics.json", "profiles/platforms.json",
                          "tests/fixtures/h200-mig-placements.json"}
    for rel, data in first.items():
        assert (REPO_ROOT / rel).read_bytes() == data, f"{rel} is stale: run python tools/derive_reference.py"


def test_derived_files_announce_how_to_regenerate_them() -> None:
    for rel in ("profiles/gpus.json", "profiles/charts/v26.7.0.json", "profiles/platforms.json",
                "tests/fixtures/h200-mig-placements.json"):
        header = json.loads((REPO_ROOT / rel).read_text(encoding="utf-8"))["generated"]
        assert header["command"] == "python tools/derive_reference.py"
        assert header["inputs"] and all(v.startswith("sha256:") for v in header["inputs"].values())


def test_script_fails_loudly_on_a_missing_input(tmp_path: Path) -> None:
    derive = _derive_module()
    with pytest.raises(derive.DeriveError, match="missing"):
        derive.derive(tmp_path)  # an empty folder: the first input is missing
    with pytest.raises(derive.DeriveError, match="does not exist"):
        derive.derive(tmp_path / "nowhere")


def test_script_parses_nvidia_smi_text() -> None:
    derive = _derive_module()
    text = ("# Read off one NVIDIA X (PCI device id 0x233510de, 1000 MiB, driver 1.2.3)\n"
            "# Placements: {start slots}:size  (8 slices in all).\n"
            "|   0  MIG 2g.35gb         14     3/3        32.50      No     32     2     0   |\n"
            "|                                                               2     2     0   |\n"
            "GPU  0 Profile ID 14 Placements: {0,2,4}:2\n")
    parsed = derive.parse_h200_smi(text)
    assert parsed["pciDeviceId"] == "0x233510DE" and parsed["memorySlices"] == 8
    assert parsed["profiles"] == [{"name": "2g.35gb", "profileId": 14, "instancesFree": 3, "instancesTotal": 3,
                                   "memoryGiB": 32.5, "p2p": False, "sm": 32, "dec": 2, "enc": 0, "ce": 2,
                                   "jpeg": 2, "ofa": 0, "starts": [0, 2, 4], "size": 2}]
    with pytest.raises(derive.DeriveError):
        derive.parse_h200_smi(text.replace("GPU  0 Profile ID 14", "GPU  0 Profile ID 15"))


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is absent (a user's clone)")
@pytest.mark.parametrize(("old", "new", "error"), [
    ("| NVIDIA A10G | 0x223710DE | 24 |", "| NVIDIA A10G | 0x223710DE | 23 |", "memory"),
    ("| NVIDIA A10G | 0x223710DE |", "| NVIDIA A10G | 0x223810DE |", "device ids"),
    ("| NVIDIA L40 | 0x26B510DE | 48 | Ada Lovelace (AD102GL) | 8.9 | no |",
     "| NVIDIA L40 | 0x26B510DE | 48 | Ada Lovelace (AD102GL) | 8.9 | yes |", "MIG"),
    ("`NVIDIA-T4G`", "`NVIDIA-T4-G`", "product label"),
    ("**+ subsystem 0x157E**", "", "subsystem"),
])
def test_extra_models_fail_when_the_fact_sheet_disagrees(old: str, new: str, error: str) -> None:
    derive = _derive_module()
    text = (REFERENCE / derive.EXTRA_GPUS).read_text(encoding="utf-8")
    assert old in text
    with pytest.raises(derive.DeriveError, match=error):
        derive.build_extra_models(text.replace(old, new))


def test_a_device_id_shared_without_subsystems_fails_the_derivation() -> None:
    derive = _derive_module()
    models = json.loads((REPO_ROOT / "profiles" / "gpus.json").read_text(encoding="utf-8"))["models"]
    derive.check_pci_ids(models)  # the committed catalogue passes
    models["A2"] = {**models["A2"], "pciSubsystemIds": []}
    with pytest.raises(derive.DeriveError, match="0x25B610DE belongs to A16, A2, and no subsystem id tells them apart"):
        derive.check_pci_ids(models)
    models["A2"] = {**models["A2"], "pciSubsystemIds": list(models["A16"]["pciSubsystemIds"])}
    with pytest.raises(derive.DeriveError, match="no subsystem id tells them apart"):
        derive.check_pci_ids(models)


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is absent (a user's clone)")
@pytest.mark.parametrize(("old", "new", "error"), [
    ("set `toolkit.env`\n  `RUNTIME_CONFIG_SOURCE=file`", "set `toolkit.env`\n  `RUNTIME_CONFIG_SOURCE=command`",
     "RUNTIME_CONFIG_SOURCE=file"),
    ("| g5 | `a10g` | A10G | 22888 |", "| g5 | `a10g` | A10G | 2288 |", "MiB per GPU"),
    ("| g5 | `a10g` | A10G |", "| g5 | `a10g` | A10 |", "no catalogue model"),
    ("(default `v26.7`)", "(default v26.7)", "channels"),
    ("`driver.enabled=false`, `toolkit.enabled=false`, `devicePlugin.enabled=false`",
     "`driver.enabled=false`, `toolkit.enabled=false`", None),
])
def test_platform_facts_follow_the_fact_sheet(old: str, new: str, error: str | None) -> None:
    derive = _derive_module()
    text = (REFERENCE / derive.PLATFORM_FACTS).read_text(encoding="utf-8")
    crd = derive.Reference(REFERENCE).yaml(derive.EC2_NODECLASS_CRD)
    models = json.loads((REPO_ROOT / "profiles" / "gpus.json").read_text(encoding="utf-8"))["models"]
    assert old in text
    if error is None:  # a changed value changes the derived data
        before = derive.build_platforms(text, crd, models)["eks"]["amis"]["bottlerocket"]["values"]
        after = derive.build_platforms(text.replace(old, new), crd, models)["eks"]["amis"]["bottlerocket"]["values"]
        assert before["devicePlugin.enabled"] is False and "devicePlugin.enabled" not in after
        return
    with pytest.raises(derive.DeriveError, match=error):
        derive.build_platforms(text.replace(old, new), crd, models)


def test_every_chart_default_driver_version_is_a_driver_tag() -> None:
    """GC316's pattern fits what the charts ship: a chart whose default driver version it refused could not render."""
    from gpuconf import catalog
    from gpuconf.intent.rules.driver import DRIVER_TAG

    versions = {v: catalog.chart(v).defaults["driver"]["version"] for v in catalog.chart_versions()}
    assert len(versions) >= 2 and all(DRIVER_TAG.fullmatch(d) for d in versions.values()), versions

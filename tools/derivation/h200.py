"""The H200's MIG table as nvidia-smi prints it (the fixture tests/fixtures/h200-mig-placements.json), and the checks of
the catalogue's H200 against that table and against a real H200 node's nvidia-smi, GFD labels and NVML profiles."""

from __future__ import annotations

import json
import re
from typing import Any

from .common import REFERENCE_SCRIPT, DeriveError, Reference, dump, header

H200_SMI = "gpu/h200-nvidia-smi-mig.txt"
#: A real H200 node (gpu/h200-real/README.md): nvidia-smi -q, GFD v0.20.0's labels, NVML's GPU-instance profiles.
H200_REAL_SMI = "gpu/h200-real/nvidia-smi-q.txt"
H200_REAL_GFD = "gpu/h200-real/gfd-labels.txt"
H200_REAL_MIG = "gpu/h200-real/mig.json"
#: Every input this module reads (the catalogue is checked against each of them).
INPUTS = (H200_SMI, H200_REAL_SMI, H200_REAL_GFD, H200_REAL_MIG)
H200_FIXTURE_OUT = "tests/fixtures/h200-mig-placements.json"

PLACEMENTS_RE = re.compile(r"^\{(\d+(?:,\d+)*)\}:(\d+)$")


def parse_placements(text: str, where: str) -> tuple[list[int], int]:
    """Parse nvidia-smi's `{0,2,4}:2` placement notation into (starts, size)."""
    match = PLACEMENTS_RE.match(text.strip())
    if not match:
        raise DeriveError(f"{where}: cannot parse placements {text!r} (expected '{{starts}}:size')")
    starts = [int(s) for s in match.group(1).split(",")]
    if starts != sorted(set(starts)):
        raise DeriveError(f"{where}: placement starts {starts} are not sorted and unique")
    return starts, int(match.group(2))


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


def check_h200(fixture: dict[str, Any], models: dict[str, dict[str, Any]]) -> None:
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


def check_h200_real(smi: str, gfd: str, mig: dict[str, Any], models: dict[str, dict[str, Any]]) -> None:
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


def derive(ref: Reference, models: dict[str, dict[str, Any]]) -> dict[str, bytes]:
    """The H200 fixture, after checking the catalogue's H200 against the table and the real node."""
    fixture = parse_h200_smi(ref.text(H200_SMI))
    check_h200(fixture, models)
    check_h200_real(ref.text(H200_REAL_SMI), ref.text(H200_REAL_GFD), json.loads(ref.text(H200_REAL_MIG)), models)
    return {H200_FIXTURE_OUT: dump({"generated": header(REFERENCE_SCRIPT, ref.take(H200_SMI),
                                                        "The H200 MIG table parsed from nvidia-smi output."),
                                    **fixture})}

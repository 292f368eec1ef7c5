"""dcgm-exporter's metrics file as the GPU Operator runs it by default (profiles/dcgm-metrics.json): every row, enabled
or shipped commented out."""

from __future__ import annotations

import re
from typing import Any

from .common import REFERENCE_SCRIPT, DeriveError, Reference, dump, header

DCGM_METRICS = "dcgm-exporter/dcp-metrics-included.csv"
DCGM_OUT = "profiles/dcgm-metrics.json"

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


def derive(ref: Reference) -> dict[str, bytes]:
    """profiles/dcgm-metrics.json."""
    dcgm = build_dcgm_metrics(ref.text(DCGM_METRICS))
    return {DCGM_OUT: dump({
        "generated": header(REFERENCE_SCRIPT, ref.take(DCGM_METRICS),
                            "dcgm-exporter's metrics file as the GPU Operator runs it by default (dcp-metrics-"
                            "included.csv from the exporter image): every row, enabled or shipped commented out."),
        **dcgm})}

"""The known-hazards section of REPORT.md (hazards.md.j2): the entries of gpuconf's hazard table that concern the
cluster, as gpuconf.output.hazards sorts them."""

from __future__ import annotations


def hazard_facts(intent, merged: dict) -> dict:
    """The known hazards that concern the cluster (gpuconf.output.hazards): applies, avoided, undecided."""
    from ..hazards import report_facts

    return report_facts(intent, merged)

"""The platform section of REPORT.md (platform.md.j2): what gpuconf set for the cluster's distribution, what to do
outside gpuconf, and what is not verified."""

from __future__ import annotations

from ... import plan as P


def platform_notes(plan: P.Plan) -> list[dict]:
    """What gpuconf set for the cluster's platform, what to do outside gpuconf, and what is not verified."""
    from ...render.platform import notes

    return notes(plan)

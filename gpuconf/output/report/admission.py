"""The admission policy section of REPORT.md (admission.md.j2): where the Kyverno policy is, which images it
admits, and where Kyverno does not look."""

from __future__ import annotations

from ... import plan as P


def admission_facts(plan: P.Plan) -> dict:
    """The admission policy (render/admission.py): where it is, which images it admits, what Kyverno skips."""
    from ...render import admission

    return {"kind": "Policy", "name": admission.POLICY_NAME, "namespace": plan.namespace,
            "namespaces": admission.namespaces(plan), "file": admission.FILE,
            "images": admission.allowed_images(plan), "driverToolkit": admission.driver_toolkit(plan),
            "pinned": plan.image_lock is not None,
            "lock": plan.image_lock.file if plan.image_lock is not None else None,
            "skipped": sorted(admission.skipped_namespaces(plan))}

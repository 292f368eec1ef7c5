"""The admission policy section of REPORT.md (admission.md.j2): where the Kyverno policy is and which images it
admits."""

from __future__ import annotations

from ... import plan as P


def admission_facts(plan: P.Plan) -> dict:
    """The admission policy (render/admission.py): where it is and which images it admits."""
    from ...render import admission

    return {"kind": "Policy", "name": admission.POLICY_NAME, "namespace": plan.namespace,
            "file": "manifests/admission.yaml", "images": admission.allowed_images(plan),
            "pinned": plan.image_lock is not None,
            "lock": plan.image_lock.file if plan.image_lock is not None else None}

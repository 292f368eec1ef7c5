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
            "previous": admission.previous_images(plan),
            "previousLock": plan.previous_lock.file if plan.previous_lock is not None else None,
            "pinned": plan.image_lock is not None,
            "lock": plan.image_lock.file if plan.image_lock is not None else None,
            "skipped": sorted(admission.skipped_namespaces(plan)), "order": _order(plan)}


def _order(plan: P.Plan) -> str:
    """How the Policy gets ahead of the chart it guards, with the delivery tool of the intent."""
    from ...render.gitops import object_name

    tool = plan.intent.spec.delivery.tool
    if tool == "argocd":
        return (f"Argo CD applies it first: it is a source of the chart Application "
                f"`{object_name(plan.name, 'gpu-operator')}`, in sync wave -1, and Argo CD waits for it to be Ready "
                "before the chart's resources (kustomization.yaml leaves it out, so that the manifests Application "
                "does not manage it too).")
    if tool == "flux":
        return (f"Flux applies it first: the Kustomization `{object_name(plan.name, 'gpu-admission')}` applies the "
                "namespaces and the Policy and waits for them, and the release Kustomization depends on it at the "
                "same source revision.")
    return "Apply it before the chart, on every change: the first step of the acceptance checklist."

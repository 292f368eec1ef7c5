"""The whole report of one rendered cluster: every section's facts in one plain, deterministic dict, which report.json
is and REPORT.md's templates read."""

from __future__ import annotations

from typing import Iterable

from ... import plan as P
from .acceptance import acceptance_facts
from .admission import admission_facts
from .capacity import capacity_facts
from .diagram import flow_facts
from .dra import dra_facts
from .nvlink import nvlink_facts
from .hazards import hazard_facts
from .overrides import chart_notes, deviations, override_findings
from .platform import platform_notes
from .pools import declared_model_facts, pool_facts
from .queues import queueing_facts
from .runbook import runbook_facts
from .upgrade import rollback_steps, upgrade_facts
from ...render.command import regenerate

API_VERSION = "gpuconf.dev/v1alpha1"
KIND = "ClusterReport"


def build_report(plan: P.Plan, values, command, files: Iterable[str] = ()) -> dict:
    """Every fact of REPORT.md and report.json for a rendered plan; plain data, deterministic."""
    merged = values.merged_view()
    file = plan.source
    teams, resources, caveats = capacity_facts(plan)
    spec = plan.intent.spec
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "generated": {"by": "gpuconf", "from": file, "command": regenerate(plan, command)},
        "cluster": {
            "name": plan.name, "chartVersion": plan.chart_version, "namespace": plan.namespace,
            "kubernetesVersion": spec.cluster.kubernetes_version, "distribution": spec.cluster.distribution,
            "migStrategy": plan.strategy,
        },
        "overrides": [d.as_dict() for d in deviations(plan, values)],
        "chartNotes": chart_notes(plan),
        "findings": [f.as_dict() for f in override_findings(plan)],
        "pools": pool_facts(plan),
        "hazards": hazard_facts(plan.intent, merged),
        "gpuModels": declared_model_facts(plan),
        "platform": platform_notes(plan),
        "teams": teams,
        "capacity": resources,
        "quotaCaveats": caveats,
        "queueing": queueing_facts(plan),
        "flow": flow_facts(plan),
        "upgrade": upgrade_facts(plan, merged),
        "rollback": rollback_steps(plan),
        "runbook": runbook_facts(plan),
        # Paths relative to the cluster's own folder: the report does not depend on where it was written.
        "acceptance": acceptance_facts(plan, files),
        # Only on the DRA stack, so that the reports of device-plugin clusters keep their shape.
        **({"dra": dra_facts(plan, merged)} if plan.intent.spec.cluster.allocation == "dra" else {}),
        **({"admission": admission_facts(plan)} if plan.intent.spec.admission else {}),
        # Only with NVLink pools, likewise.
        **({"nvlink": nvlink_facts(plan)} if any(p.pool.nvlink is not None for p in plan.pools) else {}),
    }

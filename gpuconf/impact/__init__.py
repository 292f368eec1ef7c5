"""The impact plan of a change: what syncing a fresh render does to the running cluster, read from a "before" (a
source) and the new render, never from the old intent.

Sources of "before", each read the same way (`Deployed`: report.json with the pools, their labels, driver,
resources and taints, the MIG strategy, the chart, the teams' quotas, the upgrade policy; values.yaml; every
manifest): `folder` (a rendered folder as deployed), `chart` (the same intent rendered on its current chart, for a
chart move) and `clusterset` (the folders of the deployed output as a set: a folder no input renders is
`cluster-removed`, an input with no folder `cluster-added`). A new source (the live installation, say) produces the files of one folder and hands them to the planner.

Consumers, one module each, predict how one part of the cluster reacts: `driver` (the operator and its driver upgrade
controller), `deviceplugin` (the device plugin and the MIG manager), `nodes` (node labels and taints), `nodepools`
(Karpenter and the platforms' node pools), `quotas` (Kueue and quotas), `workloads` (pods and Jobs), `switches` (the
chart's on/off switches and workload mode, the delivery's source, objects the sync deletes). The `planner`
runs them over one `Change` into one `ImpactPlan`; `report` prints it as text or Markdown (`ImpactPlan.as_list` is
the JSON form).

The document diff (treediff.compare_trees) says what changed; each impact kind explains some of those changes and
names the documents it explains. Every changed document is explained by at least one impact (tests/test_impact.py
holds gpuconf to it for the examples and for random intents).

Adding an impact kind (issue 22's allocation-stack switch, say): in its consumer's module write `def _my_kind(change:
Change) -> list[Impact]`, decorate it with `@impact_kind("my-kind", "one line: what it detects")`, give it its place
in planner.ORDER, let each Impact name the changed documents it explains (`change.documents(...)` finds them) and, for
values.yaml, the value paths it explains (`change.values_paths(...)`). What no kind explains falls to the planner's
fallbacks: `operand-restart` (chart values), `object-change` (objects added or applied in place: RBAC, namespaces,
queues, ...; never a removed one, which `object-removed` deletes) and, for anything else, `unclassified` (pending:
it fails closed), which is a gpuconf bug that the tests catch. Add a before/after intent
pair with the exact expected impacts to tests/test_impact.py, and a row to docs/how-to/ci-impact-plan.md.
"""

from .driver import upgrade_window_minutes
from .folder import Deployed
from .model import KINDS, SEVERITIES, Impact, ImpactPlan
from .planner import ORDER, plan_impacts
from .report import impacts_markdown, impacts_text
from .workloads import count_live

__all__ = ["KINDS", "ORDER", "SEVERITIES", "Deployed", "Impact", "ImpactPlan", "count_live", "impacts_markdown",
           "impacts_text", "plan_impacts", "upgrade_window_minutes"]

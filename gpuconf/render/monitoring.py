"""The PrometheusRule with the GPU alerts the intent enables.

Metric facts:
* DCGM exporter fields DCGM_FI_DEV_GPU_TEMP (gauge, C), DCGM_FI_DEV_XID_ERRORS (gauge, "value of the last XID
  error encountered") and DCGM_FI_DEV_ECC_DBE_VOL_TOTAL (counter, double-bit volatile ECC errors):
  NVIDIA/dcgm-exporter etc/default-counters.csv and etc/dcp-metrics-included.csv. The GPU Operator's exporter
  uses dcp-metrics-included.csv (DCGM_EXPORTER_COLLECTORS in assets/state-dcgm-exporter of NVIDIA/gpu-operator),
  where the ECC lines are COMMENTED OUT: the ECC alert only works with a custom dcgmExporter.config that lists
  the field, hence the companion "metric missing" alert.
* The exporter's `Hostname` label is the NODE_NAME environment variable when set, else the container's hostname
  (NVIDIA/dcgm-exporter internal/pkg/hostname/hostname.go), so the join to the node is best effort.
* kube-state-metrics: kube_node_status_allocatable{node, resource, unit} reports an extended resource with
  `resource` = the name with every character outside [a-zA-Z0-9_] replaced by `_` (nvidia.com/gpu ->
  nvidia_com_gpu) and unit="integer"; kube_node_labels{node, label_<sanitised key>} carries only labels named
  in --metric-labels-allowlist (kubernetes/kube-state-metrics internal/store/utils.go SanitizeLabelName and
  docs/metrics/cluster/node-metrics.md).
"""

from __future__ import annotations

import re

from .. import plan as P
from . import metadata

RULE_NAME = "gpuconf-gpu-alerts"
GROUP_NAME = "gpuconf.gpu"
#: kube-state-metrics' name for the gpuconf pool label on kube_node_labels.
POOL_METRIC_LABEL = "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", P.POOL_LABEL)
KSM_REQUIREMENT = (f"kube-state-metrics must export the node label {P.POOL_LABEL} "
                   f"(--metric-labels-allowlist=nodes=[{P.POOL_LABEL}]); without it kube_node_labels has no "
                   f"{POOL_METRIC_LABEL} and the pool alerts never fire")
ECC_REQUIREMENT = ("the DCGM exporter must collect DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: the GPU Operator's default "
                   "metrics file (dcp-metrics-included.csv) has it commented out, so set dcgmExporter.config")
# One series per gpuconf node with its pool; max() drops kube-state-metrics' own target labels and duplicates.
POOL_NODES = f'max by (node, {POOL_METRIC_LABEL}) (kube_node_labels{{{POOL_METRIC_LABEL}!=""}})'


def ksm_resource(resource: str) -> str:
    """The `resource` label kube-state-metrics gives an extended resource (SanitizeLabelName)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def with_pool(selector: str) -> str:
    """A DCGM series selector with a `node` label from Hostname and, when the node is in a pool, the pool label.

    The `unless` half keeps GPUs whose node cannot be joined (Hostname is not the node name, or
    kube-state-metrics does not export the pool label), so a missing join never silences an alert.
    """
    series = f'label_replace({selector}, "node", "$1", "Hostname", "(.+)")'
    return (f"({series} * on (node) group_left ({POOL_METRIC_LABEL}) {POOL_NODES})"
            f" or ({series} unless on (node) {POOL_NODES})")


WHERE = ("GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on node {{ $labels.Hostname }}"
         "{{ with $labels." + POOL_METRIC_LABEL + " }} in pool {{ . }}{{ end }}")


def _alert(name: str, expr: str, duration: str, severity: str, summary: str, description: str,
           extra_labels: dict | None = None, extra_annotations: dict | None = None) -> dict:
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, **(extra_labels or {})},
        "annotations": {"summary": summary, "description": description, **(extra_annotations or {})},
    }


def alert_rules(plan: P.Plan) -> list[dict]:
    """The alerting rules the intent enables, in a fixed order."""
    monitoring = plan.intent.spec.monitoring
    alerts = monitoring.alerts if monitoring is not None else None
    if alerts is None:
        return []
    rules = []
    if alerts.gpu_temp_celsius is not None:
        t = alerts.gpu_temp_celsius
        rules.append(_alert(
            "GpuconfGPUTemperatureHigh", with_pool(f"DCGM_FI_DEV_GPU_TEMP > {t}"), "5m", "warning",
            f"GPU hotter than {t} C on {{{{ $labels.Hostname }}}}",
            f"{WHERE} has been above {t} C for 5 minutes ({{{{ $value }}}} C); expect clock throttling.",
        ))
    if alerts.xid_errors:
        rules.append(_alert(
            "GpuconfGPUXidError", with_pool("DCGM_FI_DEV_XID_ERRORS > 0"), "1m", "warning",
            "GPU XID error {{ $value }} on {{ $labels.Hostname }}",
            f"{WHERE} reported XID {{{{ $value }}}} (the last XID the driver logged); look it up in NVIDIA's XID "
            "catalogue: some need only the application restarted, others a GPU reset or a drained node.",
        ))
    if alerts.ecc_double_bit:
        rules.append(_alert(
            "GpuconfGPUEccDoubleBitError", with_pool("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0"), "1m", "critical",
            "Uncorrectable ECC errors on a GPU of {{ $labels.Hostname }}",
            f"{WHERE} counted {{{{ $value }}}} double-bit (uncorrectable) ECC errors since the driver loaded; "
            "drain the node and reset the GPU.",
            extra_annotations={"requires": ECC_REQUIREMENT},
        ))
        rules.append(_alert(
            "GpuconfGPUEccMetricMissing",
            "absent(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL) and on () (count(DCGM_FI_DEV_GPU_TEMP) > 0)", "1h", "warning",
            "The ECC alert cannot fire: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL is not collected",
            "The DCGM exporter reports GPUs but no double-bit ECC counter, so GpuconfGPUEccDoubleBitError is blind; "
            "add DCGM_FI_DEV_ECC_DBE_VOL_TOTAL to the exporter's metrics file (dcgmExporter.config).",
            extra_annotations={"requires": ECC_REQUIREMENT},
        ))
    if alerts.gpus_unavailable:
        for pool in plan.pools:
            rules.append(_gpus_unavailable(pool))
    return rules


def _gpus_unavailable(pool: P.PoolPlan) -> dict:
    """A node of the pool with no allocatable unit of any resource the pool advertises (zero or absent)."""
    names = sorted(ksm_resource(r) for r in pool.capacity.per_node)
    matcher = f'resource="{names[0]}"' if len(names) == 1 else f'resource=~"{"|".join(names)}"'
    expr = (f'max by (node, {POOL_METRIC_LABEL}) (kube_node_labels{{{POOL_METRIC_LABEL}="{pool.name}"}})'
            f" unless on (node) (sum by (node) (kube_node_status_allocatable{{{matcher}}}) > 0)")
    resources = ", ".join(sorted(pool.capacity.per_node))
    causes = "the driver, toolkit or device plugin is not ready there"
    causes += ", MIG reconfiguration failed," if pool.profile.mig is not None else ","
    return _alert(
        "GpuconfGPUsUnavailable", expr, "15m", "critical",
        f"Node {{{{ $labels.node }}}} of pool {pool.name} offers no GPUs",
        f"Node {{{{ $labels.node }}}} of pool {pool.name} has had no allocatable {resources} for 15 minutes: "
        f"{causes} or a driver upgrade is taking long. Check the GPU Operator pods on the node.",
        extra_labels={"pool": pool.name},
        extra_annotations={"requires": KSM_REQUIREMENT},
    )


def render(plan: P.Plan) -> list[dict]:
    """One PrometheusRule in the operator namespace, labelled for the user's Prometheus; none without alerts."""
    rules = alert_rules(plan)
    if not rules:
        return []
    selector = dict(plan.intent.spec.monitoring.prometheus_selector)
    meta = metadata(plan, RULE_NAME, plan.namespace, labels=selector)
    requires = [KSM_REQUIREMENT] if any(r["alert"] == "GpuconfGPUsUnavailable" for r in rules) else []
    if any(r["alert"] == "GpuconfGPUEccDoubleBitError" for r in rules):
        requires.append(ECC_REQUIREMENT)
    requires.append(f"pool names on DCGM alerts need {POOL_METRIC_LABEL} from kube-state-metrics and the exporter's "
                    "Hostname label to be the node name (NODE_NAME); without them the alerts still fire, unlabelled")
    meta["annotations"] = {"gpuconf.dev/requires": "; ".join(requires)}
    return [{
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": meta,
        "spec": {"groups": [{"name": GROUP_NAME, "rules": rules}]},
    }]

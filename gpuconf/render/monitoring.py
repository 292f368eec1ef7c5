"""The PrometheusRule with the GPU alerts the intent enables, and the exporter metrics file those alerts need.

Metric facts:
* DCGM exporter fields DCGM_FI_DEV_GPU_TEMP (gauge, C: compared with the threshold), DCGM_FI_DEV_XID_ERRORS (gauge,
  "value of the last XID error encountered", not a count: alerted on a change) and DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
  (counter, double-bit volatile ECC errors since the driver loaded: any is an alert until a reset). The GPU
  Operator runs the exporter with dcp-metrics-included.csv, where the ECC rows are shipped commented out
  (dcgm-exporter facts §2-3): so with alerts gpuconf renders its own metrics file, the shipped rows plus every
  metric an alert reads (profiles/dcgm-metrics.json), as a ConfigMap with the key `dcgm-metrics.csv` in the
  operator namespace, named by its content (a changed file gets a new name, so the ClusterPolicy changes and the
  exporter pods restart to read it), and points `dcgmExporter.config.name` at it (facts §4).
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
#: The metrics ConfigMap's name before its content hash.
METRICS_CONFIGMAP = "gpuconf-dcgm-metrics"
DCGM_FIELD = re.compile(r"\bDCGM_[A-Z0-9_]+\b")
XID = "DCGM_FI_DEV_XID_ERRORS"
#: How long after a new XID its alert holds: the exporter's own XID count window (DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE,
#: default 5 min; dcgm-exporter facts §3, §5), many scrapes at any usual interval.
XID_WINDOW = "5m"
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
        # The gauge holds the code of the last XID, not a count: `> 0` would fire for ever after one XID. A change of
        # its value within the window is a new XID; `and` keeps the code itself as the alert's value.
        rules.append(_alert(
            "GpuconfGPUXidError", with_pool(f"{XID} and changes({XID}[{XID_WINDOW}]) > 0"), "1m", "warning",
            "GPU XID error {{ $value }} on {{ $labels.Hostname }}",
            f"{WHERE} reported a new XID within the last {XID_WINDOW}: XID {{{{ $value }}}}. "
            f"{XID} holds the code of the last XID the driver logged, not a count, so this alert fires when that "
            f"code changes and clears {XID_WINDOW} later; the same XID again is no change and goes unseen here "
            "(the driver's kernel log shows every one). Look the code up in NVIDIA's XID catalogue: some need only "
            "the application restarted, others a GPU reset or a drained node.",
        ))
    if alerts.ecc_double_bit:
        rules.append(_alert(
            "GpuconfGPUEccDoubleBitError", with_pool("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0"), "1m", "critical",
            "Uncorrectable ECC errors on a GPU of {{ $labels.Hostname }}",
            f"{WHERE} counted {{{{ $value }}}} double-bit (uncorrectable) ECC errors since the driver loaded "
            "(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL is a volatile counter: it returns to 0 only when the driver reloads or "
            "the GPU is reset, so the alert holds until then); drain the node and reset the GPU.",
        ))
    # On the DRA stack nodes advertise no GPU resource (kube_node_status_allocatable has none to read): the devices
    # are in ResourceSlices, which `gpuconf audit --resource-slices` reads (GA130).
    if alerts.gpus_unavailable and plan.intent.spec.cluster.allocation != "dra":
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
    requires.append(f"pool names on DCGM alerts need {POOL_METRIC_LABEL} from kube-state-metrics and the exporter's "
                    "Hostname label to be the node name (NODE_NAME); without them the alerts still fire, unlabelled")
    meta["annotations"] = {"gpuconf.dev/requires": "; ".join(requires)}
    return [{
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": meta,
        "spec": {"groups": [{"name": GROUP_NAME, "rules": rules}]},
    }, metrics_configmap(plan)]


def alert_metrics(plan: P.Plan) -> list[str]:
    """The DCGM fields the alerting rules read, sorted."""
    return sorted({m for rule in alert_rules(plan) for m in DCGM_FIELD.findall(rule["expr"])})


def _extra_rows(plan: P.Plan) -> list[dict]:
    """The rows of the metrics the alerts read that the exporter's default file ships commented out."""
    from .. import catalog

    rows = catalog.dcgm_metrics()["rows"]
    have = {r["field"] for r in rows if r["enabled"]}
    extra = []
    for field in alert_metrics(plan):
        if field in have:
            continue
        row = next((r for r in rows if r["field"] == field), None)
        if row is None:
            raise ValueError(f"an alert reads {field}, which dcgm-exporter's metrics file does not know")
        extra.append(row)
    return extra


def metrics_shipped_off(plan: P.Plan) -> list[str]:
    """The fields the alerts read that the exporter's default file ships switched off."""
    return [r["field"] for r in _extra_rows(plan)]


def metrics_csv(plan: P.Plan) -> str:
    """The exporter's metrics file: every row it ships enabled, then the rows an alert needs that it ships off."""
    from .. import catalog

    enabled = [r for r in catalog.dcgm_metrics()["rows"] if r["enabled"]]
    extra = _extra_rows(plan)
    lines = ["# Generated by gpuconf: the rows dcgm-exporter ships enabled (dcp-metrics-included.csv),",
             "# then the ones gpuconf's alerts read that it ships commented out.",
             "# DCGM FIELD, Prometheus metric type, help message"]
    lines += [f"{r['field']}, {r['type']}, {r['help']}" for r in enabled + extra]
    return "\n".join(lines) + "\n"


def metrics_configmap_name(plan: P.Plan) -> str | None:
    """The metrics ConfigMap's content-addressed name, or None when the intent has no alerts."""
    if not alert_rules(plan):
        return None
    return P.config_key(METRICS_CONFIGMAP, metrics_csv(plan))


def metrics_configmap(plan: P.Plan) -> dict:
    """The ConfigMap dcgmExporter.config.name points at: the key must be dcgm-metrics.csv (facts §4)."""
    from .. import catalog

    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": metadata(plan, metrics_configmap_name(plan), plan.namespace),
            "data": {catalog.dcgm_metrics()["configMapKey"]: metrics_csv(plan)}}

"""OpenShift's supported install route: OLM instead of Helm (NVIDIA's OpenShift guide, platform-facts §4).

The OperatorGroup and Subscription install the certified operator into the operator namespace; the ClusterPolicy is
the one the chart would render from the same values (gpuconf.render.clusterpolicy), applied once the operator's CSV
has brought its CRD; Red Hat's NFD operator labels the nodes through a NodeFeatureDiscovery instance. The values file
stays in the output: it is the ClusterPolicy's source, and the Helm route for clusters that use it.
"""

from __future__ import annotations

from .. import platforms
from .. import plan as P
from . import clusterpolicy, metadata

CLUSTER_POLICY_FILE = "manifests/cluster-policy.yaml"
#: The name NVIDIA's OpenShift guide and the bundle's example give the ClusterPolicy.
CLUSTER_POLICY_NAME = "gpu-cluster-policy"
OPERATOR_GROUP_NAME = "gpuconf-gpu-operator"
NFD_INSTANCE_NAME = "nfd-instance"
#: Label namespaces gpuconf's NodeFeatureRules write (the pool label, nvidia.com/* config labels); the chart's own
#: NFD values allow nvidia.com the same way (nvidia-formats-facts §5).
NFD_LABEL_NAMESPACES = ["gpuconf.dev", "nvidia.com"]
NFD_SERVICE_PORT = 12000  # the NFD operator's sample NodeFeatureDiscovery


def olm(plan: P.Plan) -> bool:
    """True when the operator is installed through OLM: OpenShift, unless the intent asks for Helm."""
    cluster = plan.intent.spec.cluster
    return cluster.distribution == "openshift" and (cluster.openshift is None or cluster.openshift.install == "olm")


def subscription_objects(plan: P.Plan) -> list[dict]:
    """OperatorGroup and Subscription of the certified GPU Operator in the operator namespace."""
    bundle = platforms.olm_bundle(plan.chart_version)
    assert bundle is not None, "validation (GC348) guarantees bundle facts for the chart"
    ns = plan.namespace
    settings = plan.intent.spec.cluster.openshift
    catalog = settings.catalog_source if settings is not None else None
    # A disconnected cluster installs from its mirrored catalogue (oc-mirror makes one); the package is the same.
    source = (catalog.name, catalog.namespace) if catalog is not None else (bundle["source"], bundle["sourceNamespace"])
    return [
        {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
         "metadata": metadata(plan, OPERATOR_GROUP_NAME, ns), "spec": {"targetNamespaces": [ns]}},
        {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
         "metadata": metadata(plan, bundle["package"], ns),
         "spec": {
             "channel": bundle["channel"],
             # Manual: OLM installs nothing until the InstallPlan of the pinned version is approved (REPORT.md), so
             # a newer release in the channel never arrives unreviewed.
             "installPlanApproval": "Manual",
             "name": bundle["package"],
             "source": source[0],
             "sourceNamespace": source[1],
         }},
    ]


def nfd_instance(plan: P.Plan, worker_tolerations: list[dict]) -> dict:
    """The NodeFeatureDiscovery instance of Red Hat's NFD operator: gpuconf's rules, their labels and taints."""
    spec: dict = {"operand": {"servicePort": NFD_SERVICE_PORT}, "extraLabelNs": list(NFD_LABEL_NAMESPACES)}
    if plan.tolerations:
        spec["operand"]["workerTolerations"] = worker_tolerations
    if plan.nfd_taints:
        spec["enableTaints"] = True  # NodeFeatureRules apply the pool taints only then
    return {"apiVersion": "nfd.openshift.io/v1", "kind": "NodeFeatureDiscovery",
            "metadata": metadata(plan, NFD_INSTANCE_NAME, platforms.openshift()["nfd"]["namespace"]), "spec": spec}


def cluster_policy(plan: P.Plan, merged_values: dict) -> list[dict]:
    """The ClusterPolicy the chart would render from the merged values, and its NVIDIADriver/default where the chart
    renders that one (NVIDIADriver mode with deployDefaultCR): without Helm, nothing else would create it."""
    from . import chart

    docs = [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
             "metadata": metadata(plan, CLUSTER_POLICY_NAME),
             "spec": clusterpolicy.without_nulls(clusterpolicy.spec(merged_values, plan.chart_version))}]
    default = chart.default_nvidiadriver(merged_values)
    if default is not None:
        docs.append({"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": metadata(plan, "default"),
                     "spec": clusterpolicy.without_nulls(default)})
    return docs

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
#: The CRD of NodeFeatureDiscovery (openshift/cluster-nfd-operator config/crd/bases/nfd.openshift.io_nodefeaturediscoveries.yaml).
NFD_CRD = "nodefeaturediscoveries.nfd.openshift.io"
#: Label namespaces gpuconf's NodeFeatureRules write (the pool label, nvidia.com/* config labels); the chart's own
#: NFD values allow nvidia.com the same way (nvidia-formats-facts §5).
NFD_LABEL_NAMESPACES = ["gpuconf.dev", "nvidia.com"]
NFD_SERVICE_PORT = 12000  # the NFD operator's sample NodeFeatureDiscovery
#: Red Hat's NFD Operator on OLM: package `nfd`, default (and only) channel `stable`, install modes OwnNamespace and
#: SingleNamespace, suggested namespace openshift-nfd (openshift/cluster-nfd-operator @ 0e25cc10,
#: manifests/nfd.package.yaml and manifests/stable/manifests/nfd.clusterserviceversion.yaml), shipped in the
#: `redhat-operators` catalogue of openshift-marketplace, whose image is registry.redhat.io/redhat/redhat-operator-index
#: tagged with the OpenShift minor (Red Hat's OCP 4.20 docs, "Installing the NFD Operator using the CLI"; NVIDIA's
#: openshift/mirror-gpu-ocp-disconnected.rst @ 52dcb7b8). Red Hat's procedure subscribes with automatic approval.
NFD_OPERATOR = {"package": "nfd", "channel": "stable", "source": "redhat-operators",
                "sourceNamespace": "openshift-marketplace", "catalogImage": "registry.redhat.io/redhat/redhat-operator-index"}
NFD_OPERATOR_GROUP_NAME = "gpuconf-nfd"
#: The image of the catalogue that holds the certified GPU Operator (the same NVIDIA page lists it).
CERTIFIED_CATALOG_IMAGE = "registry.redhat.io/redhat/certified-operator-index"


def olm(plan: P.Plan) -> bool:
    """True when the operator is installed through OLM: OpenShift, unless the intent asks for Helm."""
    cluster = plan.intent.spec.cluster
    return cluster.distribution == "openshift" and (cluster.openshift is None or cluster.openshift.install == "olm")


def starting_csv(plan: P.Plan) -> str:
    """The ClusterServiceVersion of the pinned chart's bundle: `<package>.<chart version>`
    (gpu-operator-certified.v26.7.0 is the bundle CSV's metadata.name at NVIDIA/gpu-operator v26.7.0, 10ee5b36,
    bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml; it replaces gpu-operator-certified.v26.3.3)."""
    bundle = platforms.olm_bundle(plan.chart_version)
    assert bundle is not None, "validation (GC348) guarantees bundle facts for the chart"
    return f"{bundle['package']}.{plan.chart_version}"


def bundle_version(plan: P.Plan) -> str:
    """The bundle's version, the CSV's spec.version: the chart version without its `v` (26.7.0 at v26.7.0, same file
    as starting_csv)."""
    return plan.chart_version.removeprefix("v")


def catalog_source(plan: P.Plan) -> tuple[str, str]:
    """The name and namespace of the CatalogSource the GPU Operator's Subscription installs from."""
    bundle = platforms.olm_bundle(plan.chart_version)
    assert bundle is not None, "validation (GC348) guarantees bundle facts for the chart"
    settings = plan.intent.spec.cluster.openshift
    catalog = settings.catalog_source if settings is not None else None
    # A disconnected cluster installs from its mirrored catalogue (oc-mirror makes one); the package is the same.
    return (catalog.name, catalog.namespace) if catalog is not None else (bundle["source"], bundle["sourceNamespace"])


def nfd_operator_rendered(plan: P.Plan) -> bool:
    """True when the output installs Red Hat's NFD Operator itself (spec.cluster.openshift.nfdOperator)."""
    settings = plan.intent.spec.cluster.openshift
    return olm(plan) and settings is not None and settings.nfd_operator is not None


def nfd_catalog_source(plan: P.Plan) -> tuple[str, str]:
    """The name and namespace of the CatalogSource the NFD Operator's Subscription installs from."""
    settings = plan.intent.spec.cluster.openshift
    catalog = settings.nfd_operator.catalog_source if settings is not None and settings.nfd_operator else None
    return (catalog.name, catalog.namespace) if catalog is not None else \
        (NFD_OPERATOR["source"], NFD_OPERATOR["sourceNamespace"])


def nfd_operator_objects(plan: P.Plan) -> list[dict]:
    """Namespace, OperatorGroup and Subscription of Red Hat's NFD Operator, when the intent asks for them."""
    if not nfd_operator_rendered(plan):
        return []
    ns = platforms.openshift()["nfd"]["namespace"]
    label = platforms.openshift()["monitoringLabel"]  # Red Hat's procedure labels openshift-nfd for monitoring
    source = nfd_catalog_source(plan)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(plan, ns, labels={label["key"]: label["value"]})},
        {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
         "metadata": metadata(plan, NFD_OPERATOR_GROUP_NAME, ns), "spec": {"targetNamespaces": [ns]}},
        {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
         "metadata": metadata(plan, NFD_OPERATOR["package"], ns),
         "spec": {"channel": NFD_OPERATOR["channel"], "installPlanApproval": "Automatic",
                  "name": NFD_OPERATOR["package"], "source": source[0], "sourceNamespace": source[1]}},
    ]


def subscription_objects(plan: P.Plan) -> list[dict]:
    """OperatorGroup and Subscription of the certified GPU Operator in the operator namespace."""
    bundle = platforms.olm_bundle(plan.chart_version)
    assert bundle is not None, "validation (GC348) guarantees bundle facts for the chart"
    ns = plan.namespace
    source = catalog_source(plan)
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
             # Without it OLM's first InstallPlan is for the channel head, not the chart version the intent pins.
             # OLM reads it only when it first installs: on a cluster already subscribed it changes nothing.
             "startingCSV": starting_csv(plan),
         }},
    ]


def nfd_instance(plan: P.Plan, worker_tolerations: list[dict]) -> dict:
    """The NodeFeatureDiscovery instance of Red Hat's NFD operator: gpuconf's rules, their labels and taints."""
    spec: dict = {"operand": {"servicePort": NFD_SERVICE_PORT}, "extraLabelNs": list(NFD_LABEL_NAMESPACES)}
    if plan.tolerations:
        spec["operand"]["workerTolerations"] = [dict(t) for t in worker_tolerations]
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

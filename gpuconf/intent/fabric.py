"""The intent's multi-node NVLink fabric: which pools are compute trays of NVLink racks (GB200/GB300 NVL72), and the
DRA driver release that runs ComputeDomains for them beside the device plugin.

Sources (keys of ../shared/reference/dra/facts.md §0): DRV (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1: chart
values, ComputeDomain CRD; main: site/content/docs/prerequisites.md and guides/compute-domain-workloads.md), NV-docs.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from .strict import Strict

#: The DRA driver chart releases gpuconf knows the values of (DRV tag v0.4.1, Chart.yaml `version: "0.4.1"`: strict
#: SemVer, no "v").
DRA_DRIVER_CHARTS = ("0.4.1",)
#: Where the project publishes the chart (DRV README and install docs: `helm install ... oci://registry.k8s.io/
#: dra-driver-nvidia/charts/dra-driver-nvidia-gpu`).
DRA_DRIVER_CHART_REPOSITORY = "oci://registry.k8s.io/dra-driver-nvidia/charts"
#: The namespace the project's install docs use.
DRA_DRIVER_NAMESPACE = "dra-driver-nvidia-gpu"


class NvLink(Strict):
    """The pool's nodes are the compute trays of multi-node NVLink racks (e.g. GB200/GB300 NVL72: 18 trays of 4 GPUs):
    multi-node jobs share GPU memory across trays through ComputeDomains (IMEX channels of NVIDIA's DRA driver)."""

    trays_per_rack: int = Field(ge=2, le=72, description="Compute trays (nodes) one NVLink domain joins: 18 in a "
                                                         "GB200 or GB300 NVL72 rack. A rack's GPUs are trays x "
                                                         "gpusPerNode.")
    rack_label: Optional[str] = Field(
        None, min_length=1,
        description="A node label your provisioning sets that names each node's physical rack (e.g. "
                    "example.com/rack). Optional: with it, the audit tells a rack whose trays report two NVLink "
                    "cliques (a split fabric) from two racks; without it, each clique that GPU Feature Discovery "
                    "publishes (nvidia.com/gpu.clique) counts as a rack.")


class ComputeDomains(Strict):
    """The DRA driver release gpuconf delivers beside the GPU Operator on the device-plugin stack, for the pools that
    declare `nvlink`: its GPU half off (the device plugin keeps the GPUs), its ComputeDomain half on."""

    chart_version: Literal[DRA_DRIVER_CHARTS] = Field(  # type: ignore[valid-type]
        DRA_DRIVER_CHARTS[-1], description="The dra-driver-nvidia-gpu chart release (gpuconf knows its values).")
    namespace: str = Field(DRA_DRIVER_NAMESPACE, min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                           description="The namespace of the DRA driver release (its controller, kubelet plugin, "
                                       "and the IMEX daemons of every ComputeDomain).")
    chart_repository: Optional[str] = Field(
        None, pattern=r"^oci://[^\s/]+(/[^\s/]+)*$", examples=["oci://registry.corp.example/dra/charts"],
        description="The OCI repository that serves the chart. Default: <spec.operator.registry>/charts when the "
                    "operator's images come from a mirror, else the project's " + DRA_DRIVER_CHART_REPOSITORY + ".")

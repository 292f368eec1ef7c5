"""ResourceSlices: the devices the NVIDIA DRA driver publishes per node, for the audit of a DRA cluster.

A ResourceSlice (resource.k8s.io/v1, cluster-scoped) is written by a driver's kubelet plugin: `spec.driver`,
`spec.nodeName`, `spec.devices[]` with `attributes` (a qualified name -> one of bool, int, string, version; an
unqualified name is in the driver's own domain) and `capacity` (K-api, facts §1.2). The audit turns each device into
the `device` a CEL selector sees, so a pool's DeviceClass selector counts the devices of a node exactly as the
scheduler would.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .. import dra
from .nodesource import NodeSourceError

VALUE_KEYS = ("string", "int", "bool", "version")


def device(driver: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """A published device as a CEL selector sees it: {driver, attributes: {domain: {name: value}}, capacity}."""
    attributes: dict[str, dict[str, Any]] = {}
    given = raw.get("attributes")
    for name, value in given.items() if isinstance(given, dict) else ():
        domain, _, short = name.rpartition("/")
        typed = next((value[k] for k in VALUE_KEYS if isinstance(value, dict) and k in value), None)
        if typed is not None:
            attributes.setdefault(domain or driver, {})[short] = typed
    return {"driver": driver, "attributes": attributes, "capacity": {}}


class Published(dict):
    """The NVIDIA GPU driver's devices per node name (the mapping), and in `compute_domains` the devices the
    ComputeDomain half of the DRA driver publishes per node (driver compute-domain.nvidia.com: its channel and daemon
    devices, for the audit of the NVLink fabric)."""

    def __init__(self) -> None:
        super().__init__()
        self.compute_domains: dict[str, list[dict[str, Any]]] = {}


def devices_by_node(items: Iterable[Mapping[str, Any]], where: str) -> Published:
    """The NVIDIA GPU driver's devices per node name, from ResourceSlice objects, and the ComputeDomain driver's
    (other drivers' are left out)."""
    from ..render.nvlink import CD_DRIVER

    out = Published()
    for i, item in enumerate(items):
        spec = item.get("spec") if isinstance(item, dict) else None
        if not isinstance(spec, dict) or item.get("kind", "ResourceSlice") != "ResourceSlice":
            raise NodeSourceError(f"{where}: item {i} is not a ResourceSlice")
        driver, node = spec.get("driver"), spec.get("nodeName")
        if driver not in (dra.DRIVER, CD_DRIVER) or not node or not isinstance(node, str):
            continue
        published = spec.get("devices")
        found = (out if driver == dra.DRIVER else out.compute_domains).setdefault(node, [])
        for d in published if isinstance(published, list) else ():
            if isinstance(d, dict):
                found.append(device(driver, d) if driver == dra.DRIVER else
                             {**device(driver, d), "name": d["name"] if isinstance(d.get("name"), str) else ""})
    return out


def read_slices_file(path: str) -> Published:
    """The devices per node of `kubectl get resourceslices -o json` (or -o yaml) saved to a file."""
    import yaml

    try:
        with open(path, "rb") as stream:
            data = yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as exc:
        raise NodeSourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise NodeSourceError(f"{path}: not JSON or YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise NodeSourceError(f"{path}: not a ResourceSliceList (kubectl get resourceslices -o json)")
    return devices_by_node(data["items"], path)


def read_cluster_slices(kubeconfig: str, context: str | None, timeout: float, driver: str | None = None) -> Published:
    """The devices per node of a live cluster's ResourceSlices (one read-only LIST of resource.k8s.io/v1), within the
    command's shared deadline (nodesource.deadline); `driver`: only that driver's slices (the field selector
    spec.driver, which the API server supports for ResourceSlices)."""
    import json

    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from .nodesource import MAX_PAGE, _reason, client_configuration, deadline, read_all, request_timeout

    configuration = client_configuration(kubeconfig, context)
    where = f"{configuration.host}/apis/resource.k8s.io/v1/resourceslices"
    api = client.ApiClient(configuration)
    until = deadline(timeout)

    def request() -> Any:
        return client.CustomObjectsApi(api).list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices", _preload_content=False, _request_timeout=request_timeout(until),
            **({"field_selector": f"spec.driver={driver}"} if driver else {}))

    try:
        raw = read_all(request, until, f"the cluster at {configuration.host} did not send the ResourceSlices within "
                                       f"{timeout:g} s (--request-timeout)", MAX_PAGE)
    except ApiException as exc:
        raise NodeSourceError(f"cannot list ResourceSlices at {configuration.host}: {exc.status} {exc.reason}") \
            from None
    except NodeSourceError:
        raise
    except Exception as exc:  # urllib3's connection errors and timeouts
        raise NodeSourceError(f"cannot list ResourceSlices at {configuration.host}: {_reason(exc)}") from None
    finally:
        api.close()
    try:
        listed = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise NodeSourceError(f"{where}: not JSON ({' '.join(str(exc).split())[:200]})") from None
    if not isinstance(listed, dict) or not isinstance(listed.get("items"), list):
        raise NodeSourceError(f"{where}: not a ResourceSliceList")
    return devices_by_node(listed["items"], where)

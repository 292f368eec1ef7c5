"""What a live cluster says about its GPU Operator installation, read-only: the Helm release's values (its release
Secret), the ClusterPolicy, the NVIDIADrivers and the device-plugin and MIG ConfigMaps they name.

Helm 3 keeps each release revision in a Secret of type helm.sh/release.v1 labelled owner=helm, name=<release>,
status, version; its `release` field is the release as JSON, gzipped and base64-encoded by Helm (pkg/storage/driver
util.go encodeRelease), and base64-encoded once more by the API like any Secret data. The release's `config` is what
the user supplied (-f files and --set, merged): the values to adopt.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from . import sources as S

#: Largest decompressed release read (a gpu-operator release with its chart is ~1 MB; a gzip bomb stops here).
MAX_RELEASE = 32 * 1024 * 1024
CHART = "gpu-operator"


@dataclass
class ClusterConfig:
    """The installation as the cluster has it; notes say what could not be read."""

    values: list[S.ValuesInput] = field(default_factory=list)
    configmaps: list[S.ConfigMapInput] = field(default_factory=list)
    chart_version: str | None = None
    release: str = ""  # <namespace>/<name> of the Helm release read
    notes: list[str] = field(default_factory=list)


def decode_release(data: str) -> dict:
    """A release Secret's data.release (as the API returns it) as the release JSON; raises ValueError."""
    try:
        inner = base64.b64decode(data, validate=True)
        raw = base64.b64decode(inner, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("its release field is not base64 text of Helm's encoding") from None
    if raw[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            raw = inflater.decompress(raw, MAX_RELEASE)
        except zlib.error as exc:
            raise ValueError(f"its release field is not gzip data Helm wrote ({exc})") from None
        if inflater.unconsumed_tail:
            raise ValueError(f"its release is larger than {MAX_RELEASE} bytes once decompressed")
    try:
        release = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("its release is not JSON (or nested deeper than JSON readers go)") from None
    if not isinstance(release, dict):
        raise ValueError("its release is not a JSON object")
    return release


def release_values(secret: dict) -> tuple[dict, str, str | None, str] | None:
    """(user values, release name, chart version, namespace) of a gpu-operator release Secret, else None; raises
    ValueError for a Secret of Helm's type that does not decode."""
    data = _dict(secret.get("data"))
    if secret.get("type") != "helm.sh/release.v1" or not isinstance(data.get("release"), str):
        return None
    release = decode_release(data["release"])
    chart = release.get("chart") if isinstance(release.get("chart"), dict) else {}
    meta = chart.get("metadata") if isinstance(chart.get("metadata"), dict) else {}
    if meta.get("name") != CHART:
        return None
    config = release.get("config") or {}
    if not isinstance(config, dict):
        raise ValueError("its release's config is not a map of values")
    version = meta.get("version")
    version = version if isinstance(version, str) else None
    if version and not version.startswith("v"):
        version = "v" + version
    return config, str(release.get("name", "")), version, str(release.get("namespace", ""))


def read_cluster_config(kubeconfig: str, context: str | None, timeout: float) -> ClusterConfig:
    """The release's values (else the ClusterPolicy's spec), the NVIDIADrivers and the named device-plugin
    ConfigMap, with GET requests only; what the credentials may not read is a note, not a failure."""
    import urllib3
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from ..cluster.nodesource import (MAX_PAGE, NodeSourceError, client_configuration, deadline, read_all,
                                      request_timeout)

    out = ClusterConfig()
    try:
        configuration = client_configuration(kubeconfig, context)
    except NodeSourceError as exc:
        raise S.InputError(str(exc)) from None
    api = client.ApiClient(configuration)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    # Every read shares the command's one deadline (--request-timeout), the node list's included: a server that
    # drips its answers one byte at a time cannot stretch the import.
    until = deadline(timeout)

    def get(what: str, call, *args, **kwargs) -> Any:
        late = f"the cluster at {configuration.host} did not send {what} within {timeout:g} s (--request-timeout)"
        try:
            raw = read_all(lambda: call(*args, _preload_content=False, _request_timeout=request_timeout(until),
                                        **kwargs), until, late, MAX_PAGE)
            return json.loads(raw)
        except NodeSourceError as exc:
            raise S.InputError(str(exc)) from None
        except RecursionError:
            raise S.InputError(f"reading {what} from {configuration.host} failed: JSON nested too deep") from None
        except ApiException as exc:
            if exc.status in (403, 404):
                out.notes.append(f"{what}: not read ({exc.status} {'Forbidden' if exc.status == 403 else 'Not Found'})")
                return None
            raise S.InputError(f"reading {what} from {configuration.host} failed ({exc.status} {exc.reason})") from None
        except (urllib3.exceptions.HTTPError, ValueError) as exc:
            raise S.InputError(f"reading {what} from {configuration.host} failed: "
                               f"{' '.join(str(exc).split())[:200]}") from None

    import warnings

    # The node listing has said what the client warns about (TLS verification off, once): not again here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        try:
            _read(out, core, custom, get)
        finally:
            api.close()
    return out


def _dict(value: Any) -> dict:
    """value when it is a JSON object, else {} (a hostile or broken API server answers anything)."""
    return value if isinstance(value, dict) else {}


def _items(out: ClusterConfig, listed: Any, what: str) -> list[dict]:
    """The objects of a list the API server answered (none when it was not read); what is not an object is a
    note, not a crash."""
    if listed is None:
        return []
    items = _dict(listed).get("items")
    if not isinstance(items, list):
        raise S.InputError(f"{what}: the answer is not a list of objects")
    bad = [i for i, item in enumerate(items) if not isinstance(item, dict)]
    if bad:
        out.notes.append(f"{what}: {len(bad)} item(s) that are not objects (the first: item {bad[0]}); not read")
    return [item for item in items if isinstance(item, dict)]


def _read(out: ClusterConfig, core: Any, custom: Any, get: Any) -> None:
    """The reads of read_cluster_config, in order: release Secrets, ClusterPolicy, NVIDIADrivers, the device-plugin
    and MIG ConfigMaps the values name."""
    namespace = "gpu-operator"
    secrets = get("Helm release Secrets (owner=helm)", core.list_secret_for_all_namespaces,
                  label_selector="owner=helm,status=deployed")
    releases = []
    for secret in _items(out, secrets, "Helm release Secrets (owner=helm)"):
        meta = _dict(secret.get("metadata"))
        where = f"Secret {meta.get('namespace')}/{meta.get('name')}"
        try:
            found = release_values(secret)
        except ValueError as exc:
            out.notes.append(f"{where}: {exc}; not read")
            continue
        if found is not None:
            labels = _dict(meta.get("labels"))
            revision = int(labels["version"]) if str(labels.get("version", "")).isdigit() else 0
            releases.append((found[3], found[1], revision, where, found))
    if releases:
        releases.sort(key=lambda r: (r[0], r[1], -r[2]))
        ns, name, revision, where, (values, _, version, _) = releases[0]
        if len({(r[0], r[1]) for r in releases}) > 1:
            out.notes.append("several gpu-operator releases: read " + f"{ns}/{name}; the others: " +
                             ", ".join(sorted({f"{r[0]}/{r[1]}" for r in releases} - {f"{ns}/{name}"})))
        out.values.append(S.ValuesInput(f"{where} (release {name} revision {revision})",
                                        S._plain(values, [0], where), positions=False))
        out.chart_version = version
        out.release = f"{ns}/{name}"
        namespace = ns or namespace
    policies = get("ClusterPolicies (nvidia.com/v1)", custom.list_cluster_custom_object, "nvidia.com", "v1",
                   "clusterpolicies")
    items = _items(out, policies, "ClusterPolicies (nvidia.com/v1)")
    if items:
        policy = items[0]
        name = str(_dict(policy.get("metadata")).get("name", ""))
        spec = policy.get("spec") if isinstance(policy.get("spec"), dict) else {}
        if not out.values:
            # No release (an OLM install): the ClusterPolicy's spec mirrors the chart's operand values.
            out.values.append(S.ValuesInput(f"ClusterPolicy/{name}", S._plain(spec, [0], name), positions=False))
            out.notes.append(f"no Helm release: ClusterPolicy/{name}'s spec is read as values (the chart's "
                             "operand values have its shape; keys only a ClusterPolicy has are reported dropped)")
    drivers = get("NVIDIADrivers (nvidia.com/v1alpha1)", custom.list_cluster_custom_object, "nvidia.com",
                  "v1alpha1", "nvidiadrivers")
    for item in _items(out, drivers, "NVIDIADrivers (nvidia.com/v1alpha1)"):
        spec = _dict(item.get("spec"))
        out.notes.append(f"NVIDIADriver/{_dict(item.get('metadata')).get('name')}: driver "
                         f"{spec.get('version')} for nodeSelector {json.dumps(spec.get('nodeSelector') or {})}: "
                         "gpuconf renders one per pool with its own driver (spec.pools[].driver.version)")
    merged, _ = S.merge_inputs(out.values) if out.values else ({}, {})
    for operand in ("devicePlugin", "migManager"):
        block = merged.get(operand)
        config = block.get("config") if isinstance(block, dict) else None
        name = config.get("name") if isinstance(config, dict) else None
        if isinstance(name, str) and name:
            cm = get(f"ConfigMap {namespace}/{name}", core.read_namespaced_config_map, name, namespace)
            if cm is not None:
                data = _dict(_dict(cm).get("data"))
                out.configmaps.append(S.ConfigMapInput(name, namespace, {str(k): str(v) for k, v in data.items()},
                                                       f"ConfigMap {namespace}/{name}"))

"""The facts of one GPU Operator chart, derived from its own files: the base defaults with the NFD subchart's
coalesced in, the values keys its templates read (and so the template-only and dead keys), the blocks it copies
verbatim, Helm `default` replacements, the CRDs it ships, the ClusterPolicy fields the API server fills in, the
digests of its templates, and its capabilities (what the release can do, asked by rules and renderers instead of
comparing version strings)."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Iterator

from . import releases
from .source import ChartSource, ChartSourceError

#: Mapping keys whose children are user-chosen names (Kubernetes labels, annotations, node selectors, resource
#: quantities, ConfigMap data, feature gates) or whole Kubernetes objects the chart passes through (affinity,
#: security contexts), so a key below them is legitimate even though values.yaml does not list it.
FREE_FORM_MAP_KEYS = (
    "additionalLabels", "affinity", "annotations", "daemonsetAnnotations", "data", "deploymentAnnotations",
    "featureGates", "labels", "limits", "nodeSelector", "podSecurityContext", "requests", "resources",
    "securityContext",
)
#: The NFD subchart's nfd-master/worker/topology-updater `config` blocks are NFD's own configuration files.
NFD_CONFIG_BLOCKS = (
    "node-feature-discovery.master.config",
    "node-feature-discovery.topologyUpdater.config",
    "node-feature-discovery.worker.config",
)
NFD_KEY = "node-feature-discovery"
#: Values keys rendered into a ClusterPolicy field of another name (templates/clusterpolicy.yaml of every release
#: from v24.9.0: `podDeletion:` is filled from `.Values.driver.upgradePolicy.gpuPodDeletion`); checked per chart.
RENAMED_KEYS = {"driver.upgradePolicy.gpuPodDeletion": "driver.upgradePolicy.podDeletion"}
#: Keys below a verbatim candidate that make it a Kubernetes object rather than a ClusterPolicy block of the
#: operator's own (probes are corev1.Probe, copied as they are).
PROBE_SUFFIX = "Probe"
#: The templates whose `default` replacements matter to gpuconf: the ClusterPolicy is always rendered, the default
#: NVIDIADriver only with driver.nvidiaDriverCRD.enabled and deployDefaultCR.
CR_TEMPLATES = ("templates/clusterpolicy.yaml", "templates/nvidiadriver.yaml")

_REF = re.compile(r"(?<![\w$])\$?\.Values\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)")
_TOYAML = re.compile(r"toYaml\s+\$?\.Values\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)")
_DEFAULT = re.compile(r"\$?\.Values\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\s*\|\s*default\s+(\"[^\"]*\"|[^\s}|]+)")
_IF_SET = re.compile(r"\{\{-?\s*if\s+\$?\.Values\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\s*-?\}\}")
def sha256(data: bytes) -> str:
    """The digest the facts record for a file of the chart."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _check_plain(value: Any, where: str) -> None:
    """Fail on YAML values that have no JSON form (dates, binary, tagged scalars)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ChartSourceError(f"{where}: non-string key {key!r}")
            _check_plain(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
    elif not (value is None or isinstance(value, (str, bool, int, float))):
        raise ChartSourceError(f"{where}: {type(value).__name__} value has no JSON form")


def coalesce(parent: Any, subchart: Any) -> Any:
    """Helm's subchart coalescing: parent values win key by key, maps merge recursively, lists are replaced."""
    if isinstance(parent, dict) and isinstance(subchart, dict):
        merged = dict(subchart)
        for key, value in parent.items():
            merged[key] = coalesce(value, subchart[key]) if key in subchart else value
        return merged
    return parent


def paths(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every (dotted path, value) of a defaults tree, parents first; a list is a leaf."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path, value
            yield from paths(value, path)


def lookup(tree: Any, path: str) -> tuple[bool, Any]:
    """(found, value) for a dotted path whose keys contain no dots."""
    node = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _below(path: str, prefixes: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def template_refs(src: ChartSource) -> dict[str, list[str]]:
    """Every `.Values.<path>` a template of the chart names -> the templates that name it."""
    refs: dict[str, set[str]] = {}
    for rel in src.under("templates/"):
        for match in _REF.finditer(src.text(rel)):
            refs.setdefault(match[1], set()).add(rel.removeprefix("templates/"))
    return {path: sorted(names) for path, names in sorted(refs.items())}


def _crd_fields(node: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every field path of an OpenAPI schema (`[]` for a list's items) with its schema, parents first."""
    for key, child in sorted((node.get("properties") or {}).items()):
        path = f"{prefix}.{key}" if prefix else key
        yield path, child
        yield from _crd_fields(child, path)
    items = node.get("items")
    if isinstance(items, dict):
        yield from _crd_fields(items, prefix + "[]")


def chart_crds(src: ChartSource) -> dict[str, dict[str, Any]]:
    """The CRDs of the chart's crds/ folder: file name -> {group, kind, scope, versions, fields, sha256}."""
    crds: dict[str, dict[str, Any]] = {}
    for rel in src.under("crds/"):
        if not rel.endswith((".yaml", ".yml")):
            continue
        docs = src.yaml(rel, every=True)
        if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != "CustomResourceDefinition":
            raise ChartSourceError(f"{src.name}: {rel} is not one CustomResourceDefinition")
        spec = docs[0].get("spec") or {}
        try:
            versions = spec["versions"]
            fields = sorted({f for v in versions for f, _ in _crd_fields(v["schema"]["openAPIV3Schema"])})
            crds[rel.removeprefix("crds/")] = {
                "group": spec["group"], "kind": spec["names"]["kind"], "scope": spec["scope"],
                "versions": [v["name"] for v in versions], "fields": fields, "sha256": sha256(src.files[rel])}
        except (KeyError, TypeError) as exc:
            raise ChartSourceError(f"{src.name}: {rel} lacks {exc} of a CustomResourceDefinition") from None
    return crds


def _clusterpolicy_schema(src: ChartSource) -> dict[str, Any]:
    """The ClusterPolicy CRD's spec schema (its one served version)."""
    for rel in src.under("crds/"):
        doc = src.yaml(rel)
        if isinstance(doc, dict) and (doc.get("spec") or {}).get("names", {}).get("kind") == "ClusterPolicy":
            version = doc["spec"]["versions"][0]
            return dict(version["schema"]["openAPIV3Schema"]["properties"]["spec"])
    raise ChartSourceError(f"{src.name}: no ClusterPolicy CRD in crds/; not a GPU Operator chart")


def _rendered_as(path: str) -> str:
    """The ClusterPolicy spec path a values path is rendered into (renamed keys and everything below them)."""
    for key, field in RENAMED_KEYS.items():
        if path == key or path.startswith(key + "."):
            return field + path[len(key):]
    return path


def server_defaulted(cp_spec: dict[str, Any], refs: dict[str, list[str]], guarded: set[str],
                     defaults: dict[str, Any]) -> list[str]:
    """JSON pointers of ClusterPolicy fields the API server fills from the CRD's `default:` although the chart, with
    its own defaults, renders no value for them (the template never names the field, or names it only inside
    `if .Values.<path>` and the chart's default there is empty): the live object has a field the rendered one lacks,
    which Argo CD must be told to ignore."""
    rendered: dict[str, str] = {}
    for path, names in refs.items():
        if "clusterpolicy.yaml" in names:
            rendered[_rendered_as(path)] = path
    # What the template writes with the chart's defaults: a field inside `if .Values.<path>` only when set.
    written = [f for f, path in rendered.items() if path not in guarded or lookup(defaults, path)[1]]
    out = []
    for field, schema in _crd_fields(cp_spec):
        if "default" not in schema or "[]" in field:
            continue
        if any(field == w or field.startswith(w + ".") for w in written):
            continue
        # The API server defaults a missing field only inside an object that is there.
        parent = field.rpartition(".")[0]
        if parent and not any(w == parent or w.startswith(parent + ".") or parent.startswith(w + ".")
                              for w in written):
            continue
        out.append("/spec/" + field.replace(".", "/"))
    # A field below another defaulted one that is ignored already needs no pointer of its own.
    return sorted(p for p in out if not any(p.startswith(q + "/") for q in out))


def derive(src: ChartSource) -> dict[str, Any]:
    """The facts of one chart (the body of profiles/charts/<version>.json, without its generated header)."""
    chart = src.yaml("Chart.yaml")
    name = chart.get("name") if isinstance(chart, dict) else None
    if not isinstance(chart, dict) or name != "gpu-operator":
        raise ChartSourceError(f"{src.name}: Chart.yaml names chart {name!r}, not gpu-operator")
    version = str(chart.get("version", ""))
    if version != version.strip() or not releases.is_version(version):  # it names the facts file: exactly
        raise ChartSourceError(f"{src.name}: Chart.yaml's version {version!r} is not a GPU Operator release "
                               f"(vYY.MM.PP)")
    if not version.startswith("v"):
        version = "v" + version  # NVIDIA's releases carry the v (Chart.yaml `version: v26.7.0`); keep one spelling
    values = src.yaml("values.yaml")
    if not isinstance(values, dict):
        raise ChartSourceError(f"{src.name}: values.yaml is not a mapping")
    _check_plain(values, "values.yaml")
    nfd = [d for d in chart.get("dependencies") or [] if isinstance(d, dict) and d.get("name") == NFD_KEY]
    if len(nfd) != 1:
        raise ChartSourceError(f"{src.name}: Chart.yaml has no node-feature-discovery dependency")
    nfd_version = str(nfd[0].get("version", "")).lstrip("v")
    defaults = dict(values)
    free_form_paths = list(NFD_CONFIG_BLOCKS)
    nfd_app_version = None
    if f"charts/{NFD_KEY}/values.yaml" in src.files:
        sub_chart = src.yaml(f"charts/{NFD_KEY}/Chart.yaml")
        sub_values = src.yaml(f"charts/{NFD_KEY}/values.yaml")
        if not isinstance(sub_chart, dict) or not isinstance(sub_values, dict):
            raise ChartSourceError(f"{src.name}: the node-feature-discovery subchart is malformed")
        _check_plain(sub_values, f"charts/{NFD_KEY}/values.yaml")
        if str(sub_chart.get("version", "")).lstrip("v") != nfd_version:
            raise ChartSourceError(f"{src.name}: the node-feature-discovery subchart is {sub_chart.get('version')} "
                                   f"but Chart.yaml pins {nfd_version}")
        nfd_app_version = str(sub_chart.get("appVersion")) if sub_chart.get("appVersion") else None
        # Helm coalesces a subchart's own values.yaml under the parent's block named after it: the parent's keys
        # win, and the subchart fills in every key the parent does not set.
        defaults[NFD_KEY] = coalesce(values.get(NFD_KEY, {}), sub_values)
        nfd_source = (f"the parent values.yaml block coalesced over charts/node-feature-discovery/values.yaml "
                      f"{nfd_version} the way Helm does it: parent keys win, maps merge, lists are replaced")
    else:
        free_form_paths = [NFD_KEY]  # without the subchart's defaults an NFD typo cannot be told from an NFD key
        nfd_source = (f"the parent values.yaml block only: the chart carries no node-feature-discovery "
                      f"{nfd_version} subchart, so every node-feature-discovery path is accepted")

    refs = template_refs(src)
    own = {path: value for path, value in paths(values) if not _below(path, [NFD_KEY])}
    template_only: list[str] = []
    for path in refs:
        if _below(path, [NFD_KEY]) or path in own or _below(path, template_only):
            continue
        parent = path.rpartition(".")[0]
        while parent and parent not in own:
            parent = parent.rpartition(".")[0]
        # Below a known list or scalar nothing is a key; below a free-form map every key is legitimate already.
        if parent and (not isinstance(own[parent], dict) or parent.rpartition(".")[2] in FREE_FORM_MAP_KEYS):
            continue
        template_only.append(path)
    leaves = [path for path, value in own.items() if not isinstance(value, dict) or value == {}]
    dead = [leaf for leaf in leaves
            if not any(ref == leaf or leaf.startswith(ref + ".") or ref.startswith(leaf + ".") for ref in refs)]

    cp_text = src.text("templates/clusterpolicy.yaml") if "templates/clusterpolicy.yaml" in src.files else ""
    verbatim = sorted({
        m[1] for m in _TOYAML.finditer(cp_text)
        if isinstance(own.get(m[1]), dict) and own[m[1]]
        and m[1].rpartition(".")[2] not in FREE_FORM_MAP_KEYS and not m[1].endswith(PROBE_SUFFIX)
        and not _below(m[1], ["operator", "daemonsets"])})
    helm_defaults: dict[str, Any] = {}
    for rel in CR_TEMPLATES:
        if rel not in src.files:
            continue
        for m in _DEFAULT.finditer(src.text(rel)):
            raw = m[2]
            if raw.startswith(".") or raw in ("false", "0", '""'):
                continue  # .Chart.AppVersion is the image tag rule; false/0/"" replace an empty value by an equal one
            value: Any = raw[1:-1] if raw.startswith('"') else {"true": True}.get(raw, raw)
            entry = helm_defaults.setdefault(m[1], {"becomes": value, "templates": []})
            name = rel.removeprefix("templates/")
            if name not in entry["templates"]:
                entry["templates"].append(name)
    for entry in helm_defaults.values():
        entry["templates"].sort()
        entry["when"] = "always" if "clusterpolicy.yaml" in entry["templates"] else "defaultNVIDIADriver"
    for key, field in RENAMED_KEYS.items():
        if key in own and not re.search(rf"{field.rpartition('.')[2]}:.*\n?.*\.Values\.{re.escape(key)}", cp_text):
            raise ChartSourceError(f"{src.name}: {key} is no longer rendered into spec.{field}")
    renamed = {k: v for k, v in RENAMED_KEYS.items() if k in own}
    crds = chart_crds(src)
    cp_spec = _clusterpolicy_schema(src)
    guarded = {m[1] for m in _IF_SET.finditer(cp_text)}
    facts = {
        "appVersion": str(chart.get("appVersion", "")),
        "crds": crds,
        "crdsSource": "the chart's crds/ folder",
        "deadKeys": sorted(dead),
        "defaults": defaults,
        "freeFormMapKeys": sorted(FREE_FORM_MAP_KEYS),
        "freeFormMapPaths": sorted(free_form_paths),
        "helmDefaults": dict(sorted(helm_defaults.items())),
        "nfdAppVersion": nfd_app_version,
        "nfdChartVersion": nfd_version,
        "nfdDefaultsSource": nfd_source,
        "renamedKeys": renamed,
        "serverDefaulted": server_defaulted(cp_spec, refs, guarded, defaults),
        "templateOnlyKeys": sorted(template_only),
        "templates": {rel.removeprefix("templates/"): sha256(src.files[rel]) for rel in src.under("templates/")},
        "valuesRead": sorted(p for p in refs if not _below(p, [NFD_KEY])),
        "verbatimBlocks": verbatim,
        "version": version,
    }
    facts["capabilities"] = capabilities(facts)
    return facts


def _known(facts: dict[str, Any], path: str) -> bool:
    return lookup(facts["defaults"], path)[0] or _below(path, facts["templateOnlyKeys"])


def _crd_field(facts: dict[str, Any], kind: str, field: str) -> bool:
    return any(c["kind"] == kind and field in c["fields"] for c in facts["crds"].values())


def capabilities(facts: dict[str, Any]) -> dict[str, Any]:
    """What a release can do, each read off its own files: the one row of the capability table the rules,
    renderers, report, `images` and the impact plan consult."""
    defaults = facts["defaults"]
    kinds = {c["kind"] for c in facts["crds"].values()}
    device_plugin = lookup(defaults, "devicePlugin.version")[1]
    mps = False
    if isinstance(device_plugin, str) and (m := re.match(r"v?(\d+)\.(\d+)", device_plugin)):
        mps = (int(m[1]), int(m[2])) >= (0, 15)  # the device plugin's `sharing.mps` came with v0.15.0
    return {
        # NVIDIADriver `spec.default` (the fallback driver for nodes no other NVIDIADriver selects) makes per-pool
        # selectors provably disjoint; its upgradePolicy gives each pool its own wave.
        "perPoolDrivers": _crd_field(facts, "NVIDIADriver", "spec.default"),
        "nvidiaDriverUpgradePolicy": _crd_field(facts, "NVIDIADriver", "spec.upgradePolicy"),
        "gpuClusterStack": "GPUCluster" in kinds and _known(facts, "gpuCluster.deployCR"),
        "computeDomains": "ComputeDomain" in kinds,
        "kernelModuleType": _known(facts, "driver.kernelModuleType"),
        "cdiDefaultEnabled": lookup(defaults, "cdi.enabled")[1] is True,
        "nriPlugin": _known(facts, "cdi.nriPluginEnabled"),
        "serviceMonitorDefault": lookup(defaults, "dcgmExporter.serviceMonitor.enabled")[1] is True,
        "serviceMonitorScrapeTimeout": _known(facts, "dcgmExporter.serviceMonitor.scrapeTimeout"),
        "mps": mps,
        "operandHostNetwork": _known(facts, "driver.hostNetwork"),
        "driverSecretEnv": _known(facts, "driver.secretEnv"),
        "kubeletRootDir": "hostPaths.kubeletRootDir" in facts["valuesRead"],
        "operatorMetrics": "operator.metrics" in facts["valuesRead"],
        "renderValidations": "validations.yaml" in facts["templates"],
        "clusterPolicyDeployCR": _known(facts, "clusterPolicy.deployCR"),
        "nfdNodeFeatureApi": lookup(defaults, "node-feature-discovery.enableNodeFeatureApi")[0],
    }

"""The JSON Schema of a GPU Operator chart's values, built from the chart itself: its ClusterPolicy and NVIDIADriver
CRDs (openAPIV3Schema converted to Draft 2020-12) type every values key rendered into them, the defaults close every
other mapping. tools/derive_schemas.py writes the shipped releases' schemas/values/ with this code, and
`gpuconf chart add` computes a user's chart's schema with it, so both are built the same way. jsonschema is
imported only where a schema is checked."""

from __future__ import annotations

import copy
import re
from typing import Any

from .source import ChartSource, ChartSourceError

DRAFT = "https://json-schema.org/draft/2020-12/schema"
#: The kinds whose CRDs type the chart's values: the ClusterPolicy the chart renders, the NVIDIADriver it renders
#: with driver.nvidiaDriverCRD.deployDefaultCR.
SPEC_KINDS = ("ClusterPolicy", "NVIDIADriver")

# --------------------------------------------------------------------------------------------------------------
# CRD openAPIV3Schema -> JSON Schema
# --------------------------------------------------------------------------------------------------------------

# Keywords that carry no validation (documentation, defaulting, server-side-apply merge semantics) or that JSON
# Schema cannot evaluate (CEL rules: counted per version in index.json so the gap stays visible).
_DROPPED = frozenset({"description", "default", "example", "externalDocs", "title", "x-kubernetes-map-type",
                      "x-kubernetes-validations"})
# Keywords whose meaning is the same in OpenAPI v3 (as Kubernetes structural schemas use it) and Draft 2020-12.
_SAME = frozenset({"type", "format", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "multipleOf",
                   "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "required"})
# Keywords translated below.
_TRANSLATED = frozenset({"properties", "items", "additionalProperties", "allOf", "anyOf", "oneOf", "not", "nullable",
                         "exclusiveMinimum", "exclusiveMaximum", "x-kubernetes-int-or-string",
                         "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type",
                         "x-kubernetes-list-map-keys"})
_INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]
# Go RE2 accepts an inline flag group anywhere; Python's re only at the very start ("global flags not at the start
# of the expression"). prometheus-operator's PrometheusRule uses `^(?i)(abort|warn)?$`: moving the flag group in
# front of the anchor keeps the meaning.
_LATE_FLAGS = re.compile(r"^\^\(\?([a-zA-Z]+)\)")
# The custom keyword that carries x-kubernetes-list-map-keys into the JSON Schema; gpuconf.output.verify checks it.
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
# The CRDs whose CEL rules (`x-kubernetes-validations`, rule and message) stay in the converted schema, where JSON
# Schema ignores them and tests/cel.py evaluates them: Karpenter's, whose rules carry facts the schema lacks (the
# restricted label domains, one of role/instanceProfile, alias terms), and Flux's, whose objects gitops/ holds
# (HelmRelease: chart or chartRef, the retry strategies; Kustomization: one kubeConfig reference; OCIRepository has
# none, so its schema is the whole of what the API server checks).
CEL_KEPT_GROUPS = frozenset({"karpenter.sh", "karpenter.k8s.aws", "helm.toolkit.fluxcd.io",
                             "kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io"})
CEL_RULES = "x-kubernetes-validations"


def python_pattern(pattern: str, where: str) -> str:
    """A CRD (Go RE2) pattern rewritten so that Python's re accepts it with the same meaning; fails otherwise."""
    fixed = _LATE_FLAGS.sub(r"(?\1)^", pattern)
    try:
        re.compile(fixed)
    except re.error as exc:
        raise ChartSourceError(f"{where}: pattern {pattern!r} does not compile in Python: {exc}") from exc
    return fixed


class Converter:
    """Converts one CRD version's openAPIV3Schema, counting the CEL rules it has to drop."""

    def __init__(self, where: str, keep_cel: bool = False) -> None:
        self.where = where
        self.cel_rules = 0
        self.keep_cel = keep_cel

    def convert(self, node: Any, path: str = "$") -> dict[str, Any]:
        """The JSON Schema of one structural-schema node."""
        if not isinstance(node, dict):
            raise ChartSourceError(f"{self.where}: {path}: a schema must be a mapping, got {type(node).__name__}")
        unknown = set(node) - _DROPPED - _SAME - _TRANSLATED
        if unknown:
            raise ChartSourceError(f"{self.where}: {path}: schema keyword(s) the converter does not know: "
                              f"{', '.join(sorted(unknown))}")
        self.cel_rules += len(node.get("x-kubernetes-validations", []))
        out: dict[str, Any] = {key: copy.deepcopy(node[key]) for key in _SAME if key in node}
        if self.keep_cel and node.get(CEL_RULES):
            out[CEL_RULES] = [{k: rule[k] for k in ("rule", "message") if k in rule} for rule in node[CEL_RULES]]
        if "pattern" in out:
            out["pattern"] = python_pattern(out["pattern"], f"{self.where}: {path}")
        if "properties" in node:
            out["properties"] = {name: self.convert(sub, f"{path}.{name}") for name, sub in node["properties"].items()}
        if "items" in node:
            out["items"] = self.convert(node["items"], f"{path}[]")
        if "additionalProperties" in node:
            extra = node["additionalProperties"]
            out["additionalProperties"] = extra if isinstance(extra, bool) else self.convert(extra, f"{path}.*")
        for key in ("allOf", "anyOf", "oneOf"):
            if key in node:
                out[key] = [self.convert(sub, f"{path}|{key}[{i}]") for i, sub in enumerate(node[key])]
        if "not" in node:
            out["not"] = self.convert(node["not"], f"{path}!")
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            # OpenAPI 3.0: a boolean that makes `minimum`/`maximum` exclusive; Draft 2020-12: the bound itself.
            if node.get(bound) is True:
                if limit not in node:
                    raise ChartSourceError(f"{self.where}: {path}: {bound} without {limit}")
                out[bound] = out.pop(limit)
        if node.get("x-kubernetes-int-or-string"):
            out["type"] = ["integer", "string"]
            if out.get("anyOf") == _INT_OR_STRING_ANYOF:
                del out["anyOf"]  # the structural-schema spelling of the same type union
        if node.get("nullable"):
            if "type" in out:
                kinds = out["type"] if isinstance(out["type"], list) else [out["type"]]
                out["type"] = [*kinds, "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "set":
            out["uniqueItems"] = True  # the API server rejects duplicate items of a set list
        elif list_type == "map":
            keys = node.get("x-kubernetes-list-map-keys")
            if not keys:
                raise ChartSourceError(f"{self.where}: {path}: list-type map without x-kubernetes-list-map-keys")
            out[LIST_MAP_KEYS] = list(keys)  # the API server rejects two items with the same key values
        elif list_type not in (None, "atomic"):
            raise ChartSourceError(f"{self.where}: {path}: unknown x-kubernetes-list-type {list_type!r}")
        # Strict: the API server prunes (and kubectl's strict field validation rejects) any field an object schema
        # does not list, unless the schema preserves unknown fields or declares a map of additional properties.
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out


def _metadata_schema() -> dict[str, Any]:
    """The metadata part of a custom resource: a name is required; the rest is Kubernetes ObjectMeta.

    gpuconf.output.verify checks the whole of metadata against the strict ObjectMeta schema of the target Kubernetes
    version, so the CRD schema stays open here instead of repeating a version-specific field list.
    """
    return {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}}}


def crd_version_schema(crd: dict[str, Any], version: dict[str, Any], where: str) -> tuple[dict[str, Any], int]:
    """(standalone JSON Schema of one CRD version, number of CEL rules it could not translate)."""
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    try:
        raw = version["schema"]["openAPIV3Schema"]
    except (KeyError, TypeError) as exc:
        raise ChartSourceError(f"{where}: version {version.get('name')} has no openAPIV3Schema") from exc
    converter = Converter(f"{where} {version['name']}", keep_cel=group in CEL_KEPT_GROUPS)
    schema = converter.convert(raw)
    if schema.get("type") != "object" or "properties" not in schema:
        raise ChartSourceError(f"{where}: the top of the {version['name']} schema is not an object with properties")
    schema["properties"]["apiVersion"] = {"type": "string", "const": f"{group}/{version['name']}"}
    schema["properties"]["kind"] = {"type": "string", "const": kind}
    schema["properties"]["metadata"] = _metadata_schema()
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    schema["additionalProperties"] = False
    schema["$schema"] = DRAFT
    schema["title"] = f"{kind} {group}/{version['name']}"
    return schema, converter.cel_rules


# --------------------------------------------------------------------------------------------------------------
# Chart values
# --------------------------------------------------------------------------------------------------------------

# gpu-operator-facts.md §4: values keys that share a ClusterPolicy field's path but are chart-only (the chart uses
# operator.annotations for the operator pod and operator.labels for its own objects), so the CRD must not type them.
CHART_ONLY_SAME_PATH = ("operator.annotations", "operator.labels")
# Values keys the chart renders into its NVIDIADriver/default rather than the ClusterPolicy, and gpuconf into every
# NVIDIADriver it writes: they take that CRD field's type and enum (chart v26.7.0 templates/nvidiadriver.yaml:
# `driverType: {{ .Values.driver.nvidiaDriverCRD.driverType | default "gpu" }}`).
NVIDIADRIVER_RENDERED = {"driver.nvidiaDriverCRD.driverType": "driverType"}
# Template-only keys (no default in values.yaml) accepted without a type. The others are typed by the ClusterPolicy
# field of the same path when there is one (facts §4: `*.args`, driver probes, validator.*.env, ... are rendered
# into the CR as they are). dcgmExporter.config holds {name, create, data} of which only name reaches the CR;
# operator.metrics is only a commented-out block in values.yaml, so its values shape is not documented.
TEMPLATE_ONLY_UNTYPED = ("dcgmExporter.config", "operator.metrics")
# Kubernetes string maps: ObjectMeta labels/annotations, PodSpec nodeSelector, ConfigMap data (devicePlugin and
# migManager `config.data` become the data of a ConfigMap). A free-form map with one of these names that no CRD
# field types still holds only strings.
STRING_MAP_KEYS = ("additionalLabels", "annotations", "daemonsetAnnotations", "data", "deploymentAnnotations",
                   "labels", "nodeSelector")


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _under(path: str, prefixes: Any) -> bool:
    """Whether a dotted path equals or lies below one of the prefixes."""
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def default_type(default: Any) -> dict[str, Any] | None:
    """The JSON Schema type a values default gives its key ({} for null, which says nothing); None for a mapping or
    a value YAML does not make."""
    if default is None:
        return {}
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array")):
        if isinstance(default, kind):
            return {"type": name}
    return None


class ValuesSchemaBuilder:
    """Builds the JSON Schema of one chart version's values from its defaults and the ClusterPolicy CRD."""

    def __init__(self, facts: dict[str, Any], cp_spec: dict[str, Any], nvd_spec: dict[str, Any]) -> None:
        self.version = facts["version"]
        self.facts = facts
        self.cp_spec = cp_spec
        self.nvd_spec = nvd_spec
        self.renamed = {tuple(k.split(".")): tuple(v.split(".")) for k, v in facts["renamedKeys"].items()}
        self.free_keys = frozenset(facts["freeFormMapKeys"])
        self.free_paths = tuple(facts["freeFormMapPaths"])
        self.verbatim = frozenset(facts["verbatimBlocks"])
        # The template-only keys as a tree, so that `validator.cuda.env` creates `validator.cuda` on the way.
        self.overlay: dict[str, Any] = {}
        for key in facts["templateOnlyKeys"]:
            node = self.overlay
            parts = key.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = None  # a leaf: the template-only key itself

    def cr_field(self, path: tuple[str, ...]) -> dict[str, Any] | None:
        """The converted ClusterPolicy (or NVIDIADriver) schema of the spec field a values path is rendered into, or
        None."""
        dotted = _dotted(path)
        if dotted in NVIDIADRIVER_RENDERED:
            return copy.deepcopy(self.nvd_spec["properties"][NVIDIADRIVER_RENDERED[dotted]])
        if _under(dotted, CHART_ONLY_SAME_PATH):
            return None
        for old, new in self.renamed.items():
            if path[:len(old)] == old:
                path = new + path[len(old):]
        node: dict[str, Any] = self.cp_spec
        for part in path:
            props = node.get("properties")
            if not isinstance(props, dict) or part not in props:
                return None
            node = props[part]
        return copy.deepcopy(node)

    def template_only(self, path: tuple[str, ...]) -> dict[str, Any]:
        """The schema of a template-only key."""
        dotted = _dotted(path)
        if _under(dotted, TEMPLATE_ONLY_UNTYPED):
            return {}
        return self.cr_field(path) or {}

    def _overlay_object(self, overlay: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        """A closed object made only of template-only keys (an intermediate level values.yaml lacks)."""
        props = {key: (self.template_only(path + (key,)) if sub is None else
                       self._overlay_object(sub, path + (key,))) for key, sub in overlay.items()}
        return {"type": "object", "properties": props, "additionalProperties": False}

    def _open_map(self, default: Any, path: tuple[str, ...]) -> bool:
        """Whether any key is legitimate below this mapping (gpuconf.catalog.chart_path_status's open-map rule)."""
        dotted = _dotted(path)
        return bool(path) and (default == {} or path[-1] in self.free_keys or _under(dotted, self.free_paths))

    def node(self, default: Any, path: tuple[str, ...], overlay: dict[str, Any] | None) -> dict[str, Any]:
        """The schema of the values node at `path` whose default is `default`."""
        dotted = _dotted(path)
        cr = self.cr_field(path) if path else None
        if dotted in self.verbatim:
            # Copied into the ClusterPolicy with toYaml (facts §4): its keys are CR field names, all of them.
            if cr is None or "properties" not in cr:
                raise ChartSourceError(f"{self.version}: verbatim block {dotted} has no ClusterPolicy object field")
            extra = [k for k in [*default, *(overlay or {})] if k not in cr["properties"]]
            if extra:
                raise ChartSourceError(f"{self.version}: {dotted} keys {extra} are not ClusterPolicy fields")
            return cr
        if isinstance(default, dict):
            if self._open_map(default, path):
                if cr is not None:
                    return cr
                schema: dict[str, Any] = {"type": "object"}
                if path[-1] in STRING_MAP_KEYS:
                    schema["additionalProperties"] = {"type": "string"}
                return schema
            props = {key: self.node(value, path + (key,), (overlay or {}).get(key)) for key, value in default.items()}
            for key, sub in (overlay or {}).items():
                if key in default:
                    continue
                props[key] = self.template_only(path + (key,)) if sub is None else \
                    self._overlay_object(sub, path + (key,))
            return {"type": "object", "properties": props, "additionalProperties": False}
        if overlay:
            raise ChartSourceError(f"{self.version}: template-only keys below {dotted}, whose default is not a mapping")
        if cr is not None:
            return cr
        found = default_type(default)  # None: in v26.7.0 NFD keys, typed by the NFD subchart's own schema
        if found is None:
            raise ChartSourceError(f"{self.version}: {dotted}: default of type {type(default).__name__}")
        return found

    def build(self) -> dict[str, Any]:
        """The whole values schema."""
        schema = self.node(self.facts["defaults"], (), self.overlay)
        schema["$schema"] = DRAFT
        schema["title"] = f"GPU Operator chart {self.version} values"
        return schema


# --------------------------------------------------------------------------------------------------------------
# One chart
# --------------------------------------------------------------------------------------------------------------


def chart_spec_schemas(src: ChartSource, where: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The converted spec schemas of the chart's own ClusterPolicy and NVIDIADriver CRDs (crds/), each of its last
    served version."""
    where = where or src.name
    specs: dict[str, dict[str, Any]] = {}
    for name in src.under("crds/"):
        if not name.endswith((".yaml", ".yml")):
            continue
        crd = src.yaml(name)
        try:
            kind = crd["spec"]["names"]["kind"]
            if kind not in SPEC_KINDS:
                continue
            served = [v for v in crd["spec"]["versions"] if v.get("served")]
            if not served:
                raise ChartSourceError(f"{where}:{name}: {kind} serves no version")
            specs[kind] = crd_version_schema(crd, served[-1], f"{where}:{name}")[0]["properties"]["spec"]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ChartSourceError(f"{where}:{name}: lacks {exc} of a CustomResourceDefinition with a spec") from None
    if set(specs) != set(SPEC_KINDS):
        raise ChartSourceError(f"{where}: crds/ lacks the ClusterPolicy or the NVIDIADriver CRD")
    return specs["ClusterPolicy"], specs["NVIDIADriver"]


def values_schema(src: ChartSource, facts: dict[str, Any]) -> dict[str, Any]:
    """The values schema of one chart (facts as gpuconf.chartfacts.derive gives them for it), checked: a valid
    Draft 2020-12 schema that the chart's own defaults validate against."""
    import jsonschema  # only `chart add` and the maintainer script pay for it

    cp_spec, nvd_spec = chart_spec_schemas(src)
    schema = ValuesSchemaBuilder(facts, cp_spec, nvd_spec).build()
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ChartSourceError(f"{src.name}: the values schema is not valid Draft 2020-12: {exc.message}") from None
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(facts["defaults"]), key=lambda e: e.json_path)
    if errors:
        listing = "; ".join(f"{e.json_path}: {e.message}" for e in errors[:10])
        raise ChartSourceError(f"{src.name}: the chart's own defaults do not validate against the values schema "
                               f"built from its CRDs ({len(errors)} errors): {listing}")
    return schema

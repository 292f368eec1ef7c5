"""Schema verification of every generated document before anything is written.

Built-in kinds are checked against the strict Kubernetes schemas that kubernetes-validate bundles for the target
minor version, through a cached wrapper over its schema files (its own `validate()` re-reads a 1.8 MB definitions
file on every call and stops at the first error). For the kinds gpuconf writes (EMITTED_BUILTIN_KINDS), the same
schemas with the definitions they reach are kept in schemas/kubernetes by tools/derive_schemas.py (tested equal to
what the bundle gives), so a render reads a few small files instead of that definitions file. Custom resources are
checked against the schemas that tools/derive_schemas.py converted from their CRDs into schemas/crds (installed as
gpuconf.schemas), chart values against schemas/values. Every failure is reported, sorted by path.

Each document is first checked by jsonschema-rs, a compiled validator (pure-Python jsonschema spent 0.7 s on the
2,200 documents of a 1,000-pool cluster). Only a document it rejects, which means a bug in gpuconf, goes through
jsonschema, whose errors carry the schema context the messages below are written from.

Importing this module is free: the validators and the schema files are loaded on first use and cached.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson  # the schema files decode a quarter faster than with json, to the same data (tests/test_verify.py)

if TYPE_CHECKING:
    import jsonschema


@dataclass(frozen=True)
class Problem:
    """One verification failure."""

    document: str  # e.g. "manifests/rbac.yaml: ClusterRole/gpuconf-admin" or "values.yaml"
    path: str  # JSON path like $.spec.rules[0].verbs
    message: str


class UnsupportedKubernetesVersion(ValueError):
    """A Kubernetes version that kubernetes-validate bundles no schemas for."""


# The custom keyword tools/derive_schemas.py writes for x-kubernetes-list-type: map lists.
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
_QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_OBJECT_META_DEF = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_OBJECT_META_REF = "https://kubernetes.io/api/_definitions.json#/$defs/" + _OBJECT_META_DEF
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*\Z")
_API_VERSION = re.compile(r"(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?\Z")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_VERSION = re.compile(r"v?([0-9]+)\.([0-9]+)(?:\.[0-9]+)?\Z")
# Strings a YAML 1.1 reader (Helm, kubectl, go-yaml v2) turns into booleans when they are not quoted.
_YAML11_BOOLS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false"})

# Scope of the built-in kinds, by (API group, kind): the NAMESPACED column of `kubectl api-resources` on a cluster
# of the supported versions. kubernetes-validate's schemas do not carry it, and kustomize/kubectl cannot know it
# offline. A built-in kind in neither set has no known scope (scope() returns None).
_CLUSTER_SCOPED = frozenset({
    ("", "ComponentStatus"), ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"), ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "SelfSubjectReview"), ("authentication.k8s.io", "TokenReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"), ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("certificates.k8s.io", "CertificateSigningRequest"), ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"), ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("networking.k8s.io", "IPAddress"), ("networking.k8s.io", "IngressClass"), ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("resource.k8s.io", "DeviceClass"), ("resource.k8s.io", "ResourceSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "CSIDriver"), ("storage.k8s.io", "CSINode"), ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"), ("storage.k8s.io", "VolumeAttributesClass"),
})
_NAMESPACED = frozenset({
    ("", "ConfigMap"), ("", "Endpoints"), ("", "Event"), ("", "LimitRange"), ("", "PersistentVolumeClaim"),
    ("", "Pod"), ("", "PodTemplate"), ("", "ReplicationController"), ("", "ResourceQuota"), ("", "Secret"),
    ("", "Service"), ("", "ServiceAccount"),
    ("apps", "ControllerRevision"), ("apps", "DaemonSet"), ("apps", "Deployment"), ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("authorization.k8s.io", "LocalSubjectAccessReview"), ("autoscaling", "HorizontalPodAutoscaler"),
    ("batch", "CronJob"), ("batch", "Job"), ("coordination.k8s.io", "Lease"),
    ("discovery.k8s.io", "EndpointSlice"), ("events.k8s.io", "Event"),
    ("networking.k8s.io", "Ingress"), ("networking.k8s.io", "NetworkPolicy"), ("policy", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding"),
    ("resource.k8s.io", "ResourceClaim"), ("resource.k8s.io", "ResourceClaimTemplate"),
    ("storage.k8s.io", "CSIStorageCapacity"),
})


# --- schema files ----------------------------------------------------------------------------------------------


def _schemas_dir() -> Path:
    """The directory holding crds/ and values/: the gpuconf.schemas package's own folder."""
    try:
        import gpuconf.schemas as package
    except ModuleNotFoundError:
        # setuptools maps the repository's schemas/ to gpuconf.schemas only when the project is installed; a bare
        # source checkout on PYTHONPATH keeps the data next to the package directory instead.
        return Path(__file__).resolve().parent.parent.parent / "schemas"
    return Path(package.__file__).parent


@functools.cache
def _crd_index() -> dict[str, Any]:
    """schemas/crds/index.json, parsed."""
    data: dict[str, Any] = json.loads(_schemas_dir().joinpath("crds", "index.json").read_bytes())
    return data


@functools.cache
def _kubernetes_schema_root() -> Path:
    """kubernetes-validate's kubernetes-json-schema folder, found without importing the package."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("kubernetes-validate is not installed (gpuconf depends on kubernetes-validate==1.37.*)")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@functools.cache
def supported_kubernetes_versions() -> tuple[str, ...]:
    """The minor versions ("1.25", ...) kubernetes-validate bundles strict schemas for, oldest first."""
    found = []
    for entry in _kubernetes_schema_root().iterdir():
        match = re.fullmatch(r"v([0-9]+)\.([0-9]+)\.0-local-strict", entry.name)
        if match and (entry / "_definitions.json").is_file():
            found.append((int(match[1]), int(match[2])))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


@functools.cache
def _minor(kubernetes_version: str) -> str:
    """The bundled minor version for "1.33", "v1.33" or "1.33.2"; raises UnsupportedKubernetesVersion."""
    supported = supported_kubernetes_versions()
    match = _VERSION.fullmatch(str(kubernetes_version).strip())
    if not match:
        raise UnsupportedKubernetesVersion(
            f"Kubernetes version {kubernetes_version!r} is not a version like 1.33 (supported: "
            f"{supported[0]} to {supported[-1]})")
    minor = f"{int(match[1])}.{int(match[2])}"
    if minor not in supported:
        raise UnsupportedKubernetesVersion(
            f"Kubernetes {minor} is not supported: kubernetes-validate bundles strict schemas for "
            f"{supported[0]} to {supported[-1]} only")
    return minor


# --- built-in kinds --------------------------------------------------------------------------------------------


def _kubernetes_dir(minor: str) -> Path:
    return _kubernetes_schema_root() / f"v{minor}.0-local-strict"


@functools.cache
def _kubernetes_definitions(minor: str) -> dict[str, Any]:
    """The definitions every built-in schema of one version refers to, parsed once."""
    definitions = orjson.loads((_kubernetes_dir(minor) / "_definitions.json").read_bytes())
    # Kubernetes' OpenAPI types a Quantity as "string or number" without its grammar, so `nvidia.com/gpu: 1x` in a
    # ResourceQuota would pass; the API server rejects it. The grammar comes from the CRDs (index.json).
    definitions["$defs"][_QUANTITY_DEF] = {
        "anyOf": [{"type": "string", "pattern": _crd_index()["quantityPattern"]}, {"type": "number"}]}
    return definitions


@functools.cache
def _kubernetes_registry(minor: str) -> Any:
    """The definitions as a referencing registry, for the references _inline leaves in place (recursive types)."""
    from referencing import Registry, Resource

    return Resource.from_contents(_kubernetes_definitions(minor)) @ Registry()


_DEFINITIONS_REF = "/api/_definitions.json#/$defs/"
_ANNOTATIONS = frozenset({"description", "default", "format", "x-kubernetes-patch-strategy",
                          "x-kubernetes-patch-merge-key", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
                          "x-kubernetes-map-type"})


def _inline(node: Any, defs: dict[str, Any], memo: dict[str, Any], path: tuple[str, ...] = ()) -> Any:
    """The schema with its references to the definitions replaced by the definitions themselves.

    jsonschema resolves every $ref through `referencing` on every validation, which was a quarter of the time of
    verifying a 1,000-pool cluster. Recursive types (a definition that reaches itself) keep an absolute reference.
    """
    if isinstance(node, list):
        return [_inline(item, defs, memo, path) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and "#/$defs/" in ref:
        name = ref.rsplit("/", 1)[1]
        if name in path or name not in defs:
            return {**{k: _inline(v, defs, memo, path) for k, v in node.items()}, "$ref": _DEFINITIONS_REF + name}
        if name not in memo:
            memo[name] = _inline(defs[name], defs, memo, (*path, name))
        target = memo[name]
        siblings = {k: _inline(v, defs, memo, path) for k, v in node.items() if k != "$ref"}
        if not siblings:
            return target
        if set(siblings) <= _ANNOTATIONS:
            return {**target, **siblings}
        return {"allOf": [target], **siblings}
    return {k: _inline(v, defs, memo, path) for k, v in node.items()}


def _schema_file(api_version: str, kind: str) -> str:
    """kubernetes-validate's file name for a kind: rbac.authorization.k8s.io/v1 ClusterRole -> clusterrole-rbac-v1."""
    group, _, version = api_version.rpartition("/")
    return f"{kind.lower()}-{group.split('.')[0]}-{version}.json" if group else f"{kind.lower()}-{version}.json"


@functools.cache
def _builtin_schema(minor: str, api_version: str, kind: str) -> dict[str, Any] | None:
    """kubernetes-validate's strict schema of a built-in kind, or None when the version has no such kind."""
    path = _kubernetes_dir(minor) / _schema_file(api_version, kind)
    if not path.is_file():
        return None
    schema: dict[str, Any] = orjson.loads(path.read_bytes())
    group, _, version = api_version.rpartition("/")
    # The file name drops the group's domain (apps.example.com/v1 would also map to deployment-apps-v1): the
    # schema's own group-version-kind must match.
    if not any(gvk.get("group", "") == group and gvk.get("version") == version and gvk.get("kind") == kind
               for gvk in schema.get("x-kubernetes-group-version-kind", [])):
        return None
    return schema


@functools.cache
def _builtin_validator(minor: str, api_version: str, kind: str) -> jsonschema.Validator | None:
    """The strict jsonschema validator of a built-in kind (explains what the fast check rejected), or None."""
    schema = _builtin_schema(minor, api_version, kind)
    if schema is None:
        return None
    import jsonschema

    schema = _inline(schema, _kubernetes_definitions(minor)["$defs"], {})
    return jsonschema.Draft202012Validator(schema, registry=_kubernetes_registry(minor))


#: The built-in kinds gpuconf writes (apiVersion, kind). tools/derive_schemas.py keeps each one's self-contained
#: strict schema of every supported version in schemas/kubernetes (a few KB each, without descriptions), so that a
#: render reads those instead of the 1.8 MB definitions file of a version; any other kind is read from
#: kubernetes-validate's bundle as before.
EMITTED_BUILTIN_KINDS = (
    ("v1", "ConfigMap"), ("v1", "Namespace"), ("v1", "ResourceQuota"), ("batch/v1", "Job"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("resource.k8s.io/v1", "DeviceClass"), ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
)
#: The key of a version's ObjectMeta (the metadata of custom resources) in schemas/kubernetes/index.json.
OBJECT_META = "ObjectMeta"


def builtin_subset_key(minor: str, api_version: str, kind: str) -> str:
    """The key of a kind's derived schema in schemas/kubernetes/index.json: 1.33/batch/v1/Job, 1.33/ObjectMeta."""
    return f"{minor}/{kind}" if kind == OBJECT_META else f"{minor}/{api_version}/{kind}"


def builtin_subset(minor: str, api_version: str, kind: str) -> dict[str, Any] | None:
    """What schemas/kubernetes keeps for a built-in kind (kind OBJECT_META: the version's ObjectMeta), built from
    kubernetes-validate's bundle: the kind's strict schema with the definitions it reaches, without descriptions
    (no check reads them). None when the version has no such kind."""
    if kind == OBJECT_META:
        schema: dict[str, Any] | None = {"$ref": _DEFINITIONS_REF + _OBJECT_META_DEF}
    else:
        schema = _builtin_schema(minor, api_version, kind)
    if schema is None:
        return None
    return _without_descriptions(_self_contained(schema, _kubernetes_definitions(minor)["$defs"]))


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items()
                if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [_without_descriptions(item) for item in node]
    return node


@functools.cache
def _subsets() -> dict[str, str]:
    """schemas/kubernetes/index.json's kinds (key -> file relative to gpuconf.schemas); {} without the folder."""
    try:
        data = orjson.loads(_schemas_dir().joinpath("kubernetes", "index.json").read_bytes())
    except FileNotFoundError:
        return {}
    return {key: f"kubernetes/{file}" for key, file in data["kinds"].items()}


@functools.cache
def _builtin_fast(minor: str, api_version: str, kind: str) -> Any:
    """The compiled check of a built-in kind, or None when the version has no such kind."""
    derived = _subsets().get(builtin_subset_key(minor, api_version, kind))
    if derived is not None:
        return _fast(_schema(derived))
    schema = _builtin_schema(minor, api_version, kind)
    return None if schema is None else _fast(_self_contained(schema, _kubernetes_definitions(minor)["$defs"]))


@functools.cache
def _object_meta_validator(minor: str) -> jsonschema.Validator:
    """The strict ObjectMeta of one version, for the metadata of custom resources."""
    import jsonschema

    return jsonschema.Draft202012Validator({"$ref": _OBJECT_META_REF}, registry=_kubernetes_registry(minor))


@functools.cache
def _object_meta_fast(minor: str) -> Any:
    """The compiled check of one version's strict ObjectMeta."""
    derived = _subsets().get(builtin_subset_key(minor, "", OBJECT_META))
    if derived is not None:
        return _fast(_schema(derived))
    meta = {"$ref": _DEFINITIONS_REF + _OBJECT_META_DEF}
    return _fast(_self_contained(meta, _kubernetes_definitions(minor)["$defs"]))


def _localized(node: Any, refs: list[str]) -> Any:
    """node with its references to definitions made local (#/$defs/NAME); the names referred to are added to refs."""
    if isinstance(node, list):
        return [_localized(item, refs) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _localized(v, refs) for k, v in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str) and "#/$defs/" in ref:  # /api/_definitions.json#/$defs/... or, inside it, #/$defs/...
        name = ref.rsplit("/", 1)[1]
        if name not in refs:
            refs.append(name)
        out["$ref"] = "#/$defs/" + name
    return out


#: id(definitions) -> definition name -> (the definition localized, the names it refers to). The definitions are
#: those of _kubernetes_definitions, cached for the process, so their ids stay theirs; every kind of a render shares
#: the localized ObjectMeta and the rest instead of rebuilding them (issue 21, item 15).
_LOCALIZED: dict[int, dict[str, tuple[Any, list[str]]]] = {}


def _self_contained(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The schema with the definitions it reaches (transitively) under its own $defs, references made local.

    The compiled validator then needs no registry of all 700 definitions of a version.
    """
    cache = _LOCALIZED.setdefault(id(defs), {})
    wanted: list[str] = []
    root = _localized(schema, wanted)
    local_defs: dict[str, Any] = {}
    while len(local_defs) < len(wanted):
        name = wanted[len(local_defs)]
        if name not in cache:
            refs: list[str] = []
            cache[name] = (_localized(defs[name], refs), refs)
        local_defs[name], refs = cache[name]
        wanted += [ref for ref in refs if ref not in wanted]
    return {**root, "$defs": local_defs} if local_defs else root


# --- custom resources ------------------------------------------------------------------------------------------


def _map_key_duplicates(keys: list[str], items: list[Any]) -> Iterator[tuple[int, int]]:
    """x-kubernetes-list-type: map: (index, index of the first item with the same key values) of each item that
    repeats an earlier one's values for the list's key fields."""
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        identity = json.dumps([item.get(key) for key in keys], sort_keys=True)
        if identity in seen:
            yield index, seen[identity]
        else:
            seen[identity] = index


def _unique_map_keys(validator: Any, keys: list[str], instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """The list-map keyword for jsonschema: no two items may have the same values for the list's key fields."""
    from jsonschema import ValidationError

    if not validator.is_type(instance, "array"):
        return
    for index, first in _map_key_duplicates(keys, instance):
        described = ", ".join(f"{key}={instance[index].get(key)!r}" for key in keys)
        yield ValidationError(f"duplicate entry ({described}): item {first} has the same key", path=(index,))


@functools.cache
def _cr_validator_class() -> Any:
    """Draft 2020-12 plus the list-map uniqueness keyword."""
    import jsonschema

    return jsonschema.validators.extend(jsonschema.Draft202012Validator, {LIST_MAP_KEYS: _unique_map_keys})


@functools.cache
def _schema(file: str) -> dict[str, Any]:
    """A schema file of gpuconf.schemas (path relative to it), parsed once; `user:<version>:<digest>` is the values
    schema `gpuconf chart add` derived for a chart the user added."""
    if file.startswith(USER_SCHEMA):
        from gpuconf.catalog import user_values_schema

        found = user_values_schema(file.split(":")[1])
        assert found is not None, "_values_schema names only charts with a schema"
        return orjson.loads(orjson.dumps(found))
    schema: dict[str, Any] = orjson.loads(_schemas_dir().joinpath(*file.split("/")).read_bytes())
    return schema


@functools.cache
def _cr_validator(file: str) -> jsonschema.Validator:
    """The validator of one converted CRD version (file relative to gpuconf.schemas)."""
    validator: jsonschema.Validator = _cr_validator_class()(_schema(file))
    return validator


class _ListMapKeysCheck:
    """x-kubernetes-list-map-keys for jsonschema-rs (its keyword protocol: built per schema location)."""

    def __init__(self, parent_schema: dict[str, Any], value: list[str], schema_path: list[Any]) -> None:
        self.keys = value

    def validate(self, instance: Any) -> None:
        if isinstance(instance, list) and next(_map_key_duplicates(self.keys, instance), None) is not None:
            raise ValueError(f"duplicate entry for keys {self.keys}")


def _fast(schema: dict[str, Any]) -> Any:
    """A compiled Draft 2020-12 check of schema; like jsonschema's, it treats formats as annotations."""
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(schema, validate_formats=False,
                                              keywords={LIST_MAP_KEYS: _ListMapKeysCheck})


@functools.cache
def _file_fast(file: str) -> Any:
    """The compiled check of a schema file of gpuconf.schemas."""
    return _fast(_schema(file))


# --- errors -> problems ----------------------------------------------------------------------------------------


def _json_path(parts: Iterable[str | int]) -> str:
    """$.spec.rules[0].verbs; keys that are not plain names in brackets: $.metadata.labels['nvidia.com/gpu']."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += "." + part
        else:
            out += "['" + part.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out


def _sort_key(parts: tuple[str | int, ...]) -> tuple[tuple[int, Any], ...]:
    """Order paths naturally: [2] before [10]."""
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in parts)


def _explain(error: Any, prefix: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(path, message) pairs for one jsonschema error, in the wording of the API server where it helps."""
    path = (*prefix, *error.absolute_path)
    validator, value, instance = error.validator, error.validator_value, error.instance
    if validator == "additionalProperties" and value is False and isinstance(instance, dict):
        from gpuconf.catalog import suggest

        known = error.schema.get("properties", {})
        patterns = error.schema.get("patternProperties", {})
        for key in sorted(instance):
            if key in known or any(re.search(p, key) for p in patterns):
                continue
            guess = suggest(key, known) if known else None
            hint = f" (did you mean {guess!r}?)" if guess else ""
            yield (*path, key), f"unknown field {key!r}{hint}"
        return
    if validator == "required" and isinstance(instance, dict):
        for name in value:
            if name not in instance and error.message == f"{name!r} is a required property":
                yield (*path, name), f"required field {name!r} is missing"
                return
    if validator in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match

        # Prefer a branch whose type fits the instance: for a Quantity "1x" the pattern failure, not "not a number".
        fitting = [e for e in error.context if e.validator != "type"] or error.context
        deepest = best_match(fitting)
        if deepest is not None:
            yield from _explain(deepest, prefix)
            return
    message = error.message
    if validator == "pattern" and value == _crd_index()["quantityPattern"]:
        message = f"{instance!r} is not a Kubernetes quantity (such as 2, 500m, 1.5Gi, 1e3)"
    if validator == "enum" and isinstance(instance, bool) and any(
            isinstance(v, str) and v.lower() in _YAML11_BOOLS for v in value):
        message += " (an unquoted on/off/yes/no is a boolean to YAML 1.1 readers such as Helm: quote it)"
    yield path, message


def _collect(errors: Iterable[Any], prefix: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    found = []
    for error in errors:
        found.extend(_explain(error, prefix))
    return found


def _check(fast: Any, explained: Callable[[], Any], instance: Any,
           prefix: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """The failures of instance: none when the compiled check accepts it, otherwise jsonschema's explained errors
    (explained() builds that validator only then)."""
    if fast.is_valid(instance):
        return []
    found = _collect(explained().iter_errors(instance), prefix)
    if not found:
        # The two engines disagree about this instance: report what the compiled one saw rather than nothing.
        found = [((*prefix, *error.instance_path), error.message) for error in fast.iter_errors(instance)]
    return found


def _problems(document: str, found: Iterable[tuple[tuple[str | int, ...], str]]) -> list[Problem]:
    """Deduplicated problems, sorted by path then message."""
    return [Problem(document, _json_path(path), message) for path, message in _cleaned(found)]


def _cleaned(found: Iterable[tuple[tuple[str | int, ...], str]]) -> list[tuple[tuple[str | int, ...], str]]:
    """Deduplicated (path, message) pairs, sorted by path then message."""
    unique = sorted(set(found), key=lambda item: (_sort_key(item[0]), item[1]))
    # A value outside an enum is often of the wrong type too (True for "on"): the enum message says more.
    enums = {path for path, message in unique if " is not one of " in message}
    return [(path, message) for path, message in unique if not (path in enums and " is not of type " in message)]


def _document(where: str, obj: dict[str, Any]) -> str:
    """'manifests/rbac.yaml: ClusterRole/gpuconf-admin'."""
    kind = obj.get("kind")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    label = f"{kind}/{name}" if isinstance(kind, str) and isinstance(name, str) else \
        (kind if isinstance(kind, str) else "")
    return f"{where}: {label}" if label else where


# --- kinds without a CRD in gpuconf's reference -----------------------------------------------------------------

#: OLM's OperatorGroup and Subscription and the OpenShift NFD operator's NodeFeatureDiscovery: their CRDs are not in
#: the reference gpuconf derives its schemas from, so these objects are checked against the fields gpuconf writes, as
#: NVIDIA's OpenShift guide (Subscription, OperatorGroup) and the NFD operator's API describe them: closed field
#: sets with their types, required fields, and strict ObjectMeta. This is gpuconf's own check, not the kind's schema.
_STR, _STRS, _BOOL, _MAP = "string", "list of strings", "boolean", "mapping"
DOCUMENTED_KINDS: dict[str, dict[str, Any]] = {
    "operators.coreos.com/v1/OperatorGroup": {
        "scope": "Namespaced", "required": ["targetNamespaces"], "spec": {"targetNamespaces": _STRS}},
    "operators.coreos.com/v1alpha1/Subscription": {
        "scope": "Namespaced", "required": ["channel", "name", "source", "sourceNamespace"],
        # startingCSV: OLM's SubscriptionSpec (operator-framework/api pkg/operators/v1alpha1/subscription_types.go).
        "spec": {"channel": _STR, "installPlanApproval": ("Automatic", "Manual"), "name": _STR, "source": _STR,
                 "sourceNamespace": _STR, "startingCSV": _STR}},
    "nfd.openshift.io/v1/NodeFeatureDiscovery": {
        "scope": "Namespaced", "required": [],
        "spec": {"operand": _MAP, "extraLabelNs": _STRS, "enableTaints": _BOOL}},
}
_KINDS_OF = {_STR: str, _BOOL: bool, _MAP: dict}


def _documented_problems(obj: dict[str, Any], rules: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    found: list[tuple[tuple[str | int, ...], str]] = []
    for key in obj:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            found.append(((key,), f"unknown field {key!r}"))
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [*found, (("spec",), "spec must be a mapping")]
    for key in rules["required"]:
        if key not in spec:
            found.append((("spec", key), f"required field {key!r} is missing"))
    for key, value in spec.items():
        kind = rules["spec"].get(key)
        if kind is None:
            found.append((("spec", key), f"unknown field {key!r} (gpuconf checks the documented fields only)"))
        elif isinstance(kind, tuple):
            if value not in kind:
                found.append((("spec", key), f"{value!r} is not one of {list(kind)}"))
        elif kind == _STRS:
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                found.append((("spec", key), "must be a list of non-empty strings"))
        elif not isinstance(value, _KINDS_OF[kind]) or value in ("", {}):
            found.append((("spec", key), f"must be a non-empty {kind}"))
    return found


# --- public API ------------------------------------------------------------------------------------------------


def custom_kinds() -> dict[str, dict[str, Any]]:
    """Every custom resource gpuconf has a schema for: "<apiVersion>/<kind>" -> its index entry (file, scope,
    deprecated, storage, uncheckedCelRules and, for other projects' CRDs, the release they come from)."""
    kinds: dict[str, dict[str, Any]] = _crd_index()["kinds"]
    return kinds


def scope(api_version: str, kind: str) -> str | None:
    """"Namespaced" or "Cluster" for a built-in kind or a custom resource gpuconf knows; None otherwise."""
    entry = _crd_index()["kinds"].get(f"{api_version}/{kind}") or DOCUMENTED_KINDS.get(f"{api_version}/{kind}")
    if entry is not None:
        return str(entry["scope"])
    group = api_version.rpartition("/")[0]
    if (group, kind) in _CLUSTER_SCOPED:
        return "Cluster"
    if (group, kind) in _NAMESPACED:
        return "Namespaced"
    return None


def verify_object(obj: dict[str, Any], kubernetes_version: str, where: str) -> list[Problem]:
    """Every schema failure of one Kubernetes object for a Kubernetes version; raises for an unsupported version."""
    minor = _minor(kubernetes_version)
    if not isinstance(obj, dict):
        return [Problem(where, "$", f"a Kubernetes object is a mapping, not {type(obj).__name__}")]
    document = _document(where, obj)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    found: list[tuple[tuple[str | int, ...], str]] = []
    if not isinstance(api_version, str) or not _API_VERSION.match(api_version):
        found.append((("apiVersion",), f"apiVersion must be group/version or a core version, got {api_version!r}"))
    if not isinstance(kind, str) or not _KIND.match(kind):
        found.append((("kind",), f"kind must be a CamelCase name, got {kind!r}"))
    if found:
        return _problems(document, found)
    assert isinstance(api_version, str) and isinstance(kind, str)
    entry = _crd_index()["kinds"].get(f"{api_version}/{kind}")
    documented = DOCUMENTED_KINDS.get(f"{api_version}/{kind}")
    if documented is not None:
        found = _documented_problems(obj, documented)
        metadata = obj.get("metadata")
        found += _check(_object_meta_fast(minor), lambda: _object_meta_validator(minor), metadata, ("metadata",)) \
            if isinstance(metadata, dict) else [(("metadata",), "metadata must be a mapping")]
    elif entry is not None:
        file = entry["file"]
        found = _check(_file_fast(file), lambda: _cr_validator(file), obj)
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            reported = {path for path, _ in found}
            found += [item for item in _check(_object_meta_fast(minor), lambda: _object_meta_validator(minor),
                                              metadata, ("metadata",))
                      if item[0] not in reported]
    else:
        fast = _builtin_fast(minor, api_version, kind)
        if fast is None:
            return _problems(document, [(("kind",), f"no schema for {kind} {api_version}: it is not a built-in kind "
                                                    f"of Kubernetes {minor}, and gpuconf has no CRD schema for it")])
        found = _check(fast, lambda: _builtin_validator(minor, api_version, kind), obj)
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and metadata.get("namespace") and scope(api_version, kind) == "Cluster":
        # The API server's ObjectMeta validation: "not allowed on this type".
        found.append((("metadata", "namespace"), f"{kind} is cluster-scoped: a namespace is not allowed"))
    return _problems(document, found)


#: The prefix of a values schema that `gpuconf chart add` derived (kept in the user's facts file, not a file here).
USER_SCHEMA = "user:"


def _values_schema(chart_version: str) -> str:
    """The chart's values schema (a file of gpuconf.schemas, or for a chart the user added, `user:<version>:<digest
    of its schema>`, so that another folder's chart of the same version is never taken for it); raises ValueError
    for a chart gpuconf has none of."""
    from gpuconf.catalog import user_values_schema

    user = user_values_schema(chart_version)
    if user is not None:
        import hashlib

        digest = hashlib.sha256(orjson.dumps(user, option=orjson.OPT_SORT_KEYS)).hexdigest()
        return f"{USER_SCHEMA}{chart_version}:{digest}"
    return _shipped_values_schema(chart_version)


@functools.cache
def _shipped_values_schema(chart_version: str) -> str:
    """The values schema file of a release gpuconf ships; ValueError for one it has none of."""
    file = _schemas_dir().joinpath("values", f"gpu-operator-{chart_version}.json")
    if not file.is_file():
        known = sorted(entry.name.removeprefix("gpu-operator-").removesuffix(".json")
                       for entry in _schemas_dir().joinpath("values").iterdir()
                       if entry.name.startswith("gpu-operator-") and entry.name.endswith(".json"))
        raise ValueError(f"no values schema for GPU Operator chart {chart_version!r} (known: {', '.join(known)})")
    return f"values/gpu-operator-{chart_version}.json"


@functools.cache
def _nfd_schema(chart_version: str) -> str | None:
    """The NFD subchart's own values schema (a file of gpuconf.schemas), or None when its chart version shipped
    none."""
    from gpuconf.catalog import chart

    facts = chart(chart_version)
    if facts is None:
        return None
    file = f"values/node-feature-discovery-{facts.nfd_chart_version}.json"
    if not _schemas_dir().joinpath(*file.split("/")).is_file():
        return None  # NFD 0.18.3 (chart v26.3.3) had no values.schema.json: Helm checks nothing there either
    return file


@functools.cache
def _plain_validator(file: str) -> jsonschema.Validator:
    """The jsonschema validator of a schema file of gpuconf.schemas."""
    import jsonschema

    return jsonschema.Draft202012Validator(_schema(file))


def verify_values(values: dict[str, Any], chart_version: str) -> list[Problem]:
    """Every schema failure of the full merged chart values (defaults + overrides) for a chart version.

    The node-feature-discovery block is checked as well against the NFD subchart's own values schema, as Helm does
    at render, where the subchart ships one (v26.7.0: NFD 0.19.0; v26.3.3's NFD 0.18.3 has none).
    """
    return [Problem("values.yaml", _json_path(path), message)
            for path, message in values_failures(values, chart_version)]


def values_failures(values: dict[str, Any], chart_version: str) -> list[tuple[tuple[str | int, ...], str]]:
    """verify_values's failures as (key path, message) pairs, sorted by path."""
    file = _values_schema(chart_version)
    found = _check(_file_fast(file), lambda: _plain_validator(file), values)
    nfd = _nfd_schema(chart_version)
    block = values.get("node-feature-discovery") if isinstance(values, dict) else None
    if nfd is not None and isinstance(block, dict):
        reported = {path for path, _ in found}
        found += [item for item in _check(_file_fast(nfd), lambda: _plain_validator(nfd), block,
                                          ("node-feature-discovery",))
                  if item[0] not in reported]
    return _cleaned(found)

#!/usr/bin/env python3
"""Derive the JSON Schemas gpuconf verifies its generated documents against from the shared reference folder.

Run from the repository root (maintainers only; a user's clone has no reference folder), after
tools/derive_reference.py (the values schemas start from the chart defaults that script writes to profiles/):

    python tools/derive_schemas.py [--reference ../shared/reference] [--check]

Writes
  schemas/crds/<group>_<kind>_<version>.json   one Draft 2020-12 schema per custom-resource version gpuconf emits
  schemas/crds/index.json                      "<apiVersion>/<kind>" -> schema file, scope, deprecation, CEL count
  schemas/values/gpu-operator-<version>.json   the GPU Operator chart's values, closed, typed by the ClusterPolicy CRD
  schemas/values/node-feature-discovery-<version>.json   the NFD subchart's own values schema
  schemas/kubernetes/<kind>-<digest>.json      the strict schema of a built-in kind gpuconf writes, per version
  schemas/kubernetes/index.json                "<minor>/<apiVersion>/<kind>" -> schema file

The output is byte-stable (sorted keys, fixed indentation, input hashes instead of timestamps): running the script
twice changes nothing. Any input that is missing, malformed or uses a schema construct the converter does not know
stops it with an error. Reads YAML with ruamel.yaml; checks every result with jsonschema (a gpuconf dependency).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from derivation.common import (  # noqa: E402 - what every derive script shares
    REFERENCE_SCRIPT, REPO_ROOT, DeriveError, Reference, arguments, dump, header, run, sha256,
)

sys.path.insert(0, str(REPO_ROOT))
from gpuconf.chartfacts.source import ChartSourceError, read_chart  # noqa: E402 - the chart reader `chart add` uses
# The CRD converter and the values schema builder live in gpuconf (`chart add` runs them on a user's chart); they
# raise ChartSourceError, which this script reports as a DeriveError. Converter and python_pattern stay reachable
# here for the tests that load this script as a module.
from gpuconf.chartfacts.valuesschema import (  # noqa: E402,F401
    CEL_KEPT_GROUPS, CEL_RULES, LIST_MAP_KEYS, Converter, ValuesSchemaBuilder, chart_spec_schemas, crd_version_schema,
    default_type, python_pattern,
)

SCRIPT = "tools/derive_schemas.py"

# CRD files (relative to the reference folder) whose served versions gpuconf's output may contain. Every served
# version of each is converted (Kueue serves the deprecated v1beta1 next to v1beta2). GPUCluster is the DRA stack's
# CR, which the chart renders from the values under spec.cluster.allocation: dra (gpuconf checks the chart model's
# object against it); ComputeDomain is the driver's newer copy (dra/SOURCES.md: numNodes optional from v0.4.0). Left
# out on purpose: ComputeDomainClique (written by the driver) and NFD's NodeFeature/NodeFeatureGroup (written by NFD
# and GFD themselves, never by a user).
CRD_INPUTS = (
    "gpu-operator/v26.7.0/crds/nvidia.com_clusterpolicies.yaml",
    "gpu-operator/v26.7.0/crds/nvidia.com_nvidiadrivers.yaml",
    "gpu-operator/v26.7.0/crds/nvidia.com_gpuclusters.yaml",
    "dra/crds/resource.nvidia.com_computedomains.yaml",
    "nvidia-formats/nfd/nodefeaturerule-crd.yaml",
    "crds/monitoring.coreos.com/monitoring.coreos.com_servicemonitors.yaml",
    "crds/monitoring.coreos.com/monitoring.coreos.com_prometheusrules.yaml",
    "crds/karpenter.sh/karpenter.sh_nodepools.yaml",
    "crds/karpenter.sh/karpenter.sh_nodeoverlays.yaml",
    "crds/karpenter.k8s.aws/karpenter.k8s.aws_ec2nodeclasses.yaml",
    "crds/argoproj.io/application-crd.yaml",
    "crds/argoproj.io/applicationset-crd.yaml",
    # The AppProject gpuconf renders when spec.delivery.signedCommits asks Argo CD to sync signed commits only
    # (crds/SOURCES.md: argo-cd v3.5.1 manifests/crds/appproject-crd.yaml; it has no CEL rules).
    "crds/argoproj.io/appproject-crd.yaml",
    "crds/helm.toolkit.fluxcd.io/helm.toolkit.fluxcd.io_helmreleases.yaml",
    "crds/source.toolkit.fluxcd.io/source.toolkit.fluxcd.io_helmrepositories.yaml",
    "crds/source.toolkit.fluxcd.io/source.toolkit.fluxcd.io_ocirepositories.yaml",
    "crds/kustomize.toolkit.fluxcd.io/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    "crds/kueue.x-k8s.io/kueue.x-k8s.io_resourceflavors.yaml",
    "crds/kueue.x-k8s.io/kueue.x-k8s.io_clusterqueues.yaml",
    "crds/kueue.x-k8s.io/kueue.x-k8s.io_localqueues.yaml",
    "crds/kueue.x-k8s.io/kueue.x-k8s.io_workloadpriorityclasses.yaml",
    # Topology-Aware Scheduling levels of NVLink pools (pools[].nvlink): a job lands inside one NVLink clique.
    "crds/kueue.x-k8s.io/kueue.x-k8s.io_topologies.yaml",
    # The admission policy of spec.security.admission: kyverno, a namespaced Policy in the operator's namespace
    # (provenance/crds/SOURCES.md: kyverno/kyverno v1.19.0 config/crds/kyverno/kyverno.io_policies.yaml).
    "provenance/crds/kyverno.io/kyverno.io_policies.yaml",
)
CP_CRD = CRD_INPUTS[0]
NVD_CRD = CRD_INPUTS[1]
#: The table of crds/SOURCES.md says which upstream release each file under crds/ was copied from; index.json
#: carries it per kind, so that gpuconf can check the release an intent pins (spec.queueing.kueue.version).
CRD_SOURCES = "crds/SOURCES.md"
PROVENANCE_SOURCES = "provenance/crds/SOURCES.md"  # the admission policies' CRDs (Kyverno, Sigstore)
_SOURCE_ROW = re.compile(r"^\| (?P<file>[^|]+?) \| (?P<repository>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+) \| "
                         r"(?P<tag>v[0-9][^ |]*) \(")
_FOLDER_SOURCE_ROW = re.compile(r"^\| (?P<file>[^|]+?) \| (?P<repository>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+) \| "
                                r"(?P<tag>v[0-9][^ |]*) \|")

NFD_SCHEMA = "gpu-operator/v26.7.0/charts/node-feature-discovery/values.schema.json"
NFD_CHART = "gpu-operator/v26.7.0/charts/node-feature-discovery/Chart.yaml"


# --------------------------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------------------------


def _patterns(node: Any) -> list[str]:
    """Every `pattern` and `patternProperties` key of a schema."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                found.append(value)
            elif key == "patternProperties" and isinstance(value, dict):
                found.extend(value)
            if key not in ("enum", "const", "required"):
                found.extend(_patterns(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_patterns(item))
    return found


def check_schema(schema: dict[str, Any], where: str) -> None:
    """Fail unless the schema is valid Draft 2020-12 and all its patterns compile in Python."""
    import jsonschema  # only the maintainer script and the tests pay for it

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise DeriveError(f"{where}: not a valid Draft 2020-12 schema: {exc.message}") from exc
    for pattern in _patterns(schema):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise DeriveError(f"{where}: pattern {pattern!r} does not compile: {exc}") from exc


def _local_refs(node: Any, root: dict[str, Any], where: str) -> int:
    """Check that every $ref is a JSON pointer into the document itself that resolves; return how many."""
    count = 0
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                if not isinstance(value, str) or not value.startswith("#/"):
                    raise DeriveError(f"{where}: $ref {value!r} leaves the document (it would need the network)")
                target: Any = root
                for token in value[2:].split("/"):
                    token = token.replace("~1", "/").replace("~0", "~")
                    if not isinstance(target, dict) or token not in target:
                        raise DeriveError(f"{where}: $ref {value!r} does not resolve")
                    target = target[token]
                count += 1
            else:
                count += _local_refs(value, root, where)
    elif isinstance(node, list):
        for item in node:
            count += _local_refs(item, root, where)
    return count


def check_instance(schema: dict[str, Any], instance: Any, where: str) -> None:
    """Fail unless the instance (chart defaults) validates against the schema derived for it."""
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(instance), key=lambda e: e.json_path)
    if errors:
        listing = "; ".join(f"{e.json_path}: {e.message}" for e in errors[:10])
        raise DeriveError(f"{where}: the chart's own defaults do not validate ({len(errors)} errors): {listing}")


# --------------------------------------------------------------------------------------------------------------
# Inputs and output
# --------------------------------------------------------------------------------------------------------------


# Sub-schema positions of Draft 2020-12: maps of schemas, single schemas and lists of schemas.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "unevaluatedProperties", "unevaluatedItems")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
#: A sub-schema of at least this many bytes (as canonical JSON) that a schema repeats is written once under $defs.
SHARED_MIN_BYTES = 1000
#: Groups whose files keep every sub-schema in place: the operator's own CRDs (the values schemas are built from
#: them, and readers walk their properties) and the CRDs whose CEL rules tests/cel.py finds by walking them.
UNSHARED_GROUPS = frozenset({"nvidia.com"}) | CEL_KEPT_GROUPS


def _subschemas(node: Any, visit: Any) -> Any:
    """node with visit applied to each of its direct sub-schemas (a copy; node itself is unchanged)."""
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: visit(item) for name, item in value.items()}
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = visit(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [visit(item) for item in value]
        else:
            out[key] = value
    return out


def _canonical(node: Any) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def shared_subschemas(schema: dict[str, Any], min_bytes: int = SHARED_MIN_BYTES) -> dict[str, Any]:
    """The schema with every sub-schema it repeats (at least min_bytes of canonical JSON) written once, under $defs,
    and referred to by a local $ref: the same constraints at every place, far less to load and compile. Argo CD's
    ApplicationSet repeats the Application template in each of its generators: 382 KB compact, 24 KB shared, and
    jsonschema-rs compiles it in 2 ms instead of 36 ms. Each shared definition is named by the digest of its
    content, so the names do not depend on where the repetitions sit."""
    import hashlib

    counts: dict[str, int] = {}

    def count(node: Any) -> Any:
        if isinstance(node, dict):
            text = _canonical(node)
            counts[text] = counts.get(text, 0) + 1
            _subschemas(node, count)
        return node

    _subschemas(schema, count)
    shared: dict[str, Any] = {}

    def share(node: Any) -> Any:
        if isinstance(node, dict):
            text = _canonical(node)
            if counts.get(text, 0) > 1 and len(text.encode("utf-8")) >= min_bytes:
                name = "shared-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
                if name not in shared:
                    shared[name] = {}  # taken before its content is built: a definition cannot contain itself
                    shared[name] = _subschemas(node, share)
                return {"$ref": f"#/$defs/{name}"}
        return _subschemas(node, share)

    out = _subschemas(schema, share)
    # A repetition that sits only inside a larger shared part is left with one reference: put it back in place.
    text = _canonical([out, shared])
    once = {name for name in shared if text.count(f'"#/$defs/{name}"') == 1}

    def inline(node: Any) -> Any:
        if isinstance(node, dict) and set(node) == {"$ref"} and node["$ref"].removeprefix("#/$defs/") in once:
            return inline(shared[node["$ref"].removeprefix("#/$defs/")])
        return _subschemas(node, inline)

    out = _subschemas(out, inline)
    shared = {name: _subschemas(body, inline) for name, body in shared.items() if name not in once}
    if shared:
        if "$defs" in out and set(out["$defs"]) & set(shared):
            raise DeriveError("a shared sub-schema's name is already a definition")
        out["$defs"] = {**out.get("$defs", {}), **shared}
    return out


def _dump(data: Any) -> bytes:
    """Stable JSON bytes with a one-space indent (the CRD schemas nest deeply)."""
    return dump(data, indent=1)


def _generated(inputs: dict[str, str], what: str) -> dict[str, Any]:
    """The self-description every file this script writes carries."""
    return header(SCRIPT, inputs, what)


def _crds(ref: Reference, rel: str) -> list[dict[str, Any]]:
    docs = ref.yaml_all(rel)
    crds = [d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    if not crds:
        raise DeriveError(f"{rel}: no CustomResourceDefinition in it")
    return crds


def crd_releases(ref: Reference) -> dict[str, dict[str, str]]:
    """CRD file under crds/ or dra/ (reference-relative) -> {repository, tag} of the release it was copied from."""
    releases: dict[str, dict[str, str]] = {}
    for sources in (CRD_SOURCES, PROVENANCE_SOURCES):  # the same table, each naming files relative to its folder
        folder = sources.rsplit("/", 1)[0]
        for line in ref.bytes(sources).decode("utf-8").splitlines():
            match = _SOURCE_ROW.match(line)
            if match:
                releases[f"{folder}/{match['file']}"] = {"repository": match["repository"], "tag": match["tag"]}
    # A group folder may carry its own SOURCES.md (crds/karpenter.k8s.aws/): | file | repo | tag | ... with the file
    # named relative to that folder.
    for rel in CRD_INPUTS:
        folder = rel.rsplit("/", 1)[0]
        if not rel.startswith("crds/") or rel in releases or not (ref.root / folder / "SOURCES.md").is_file():
            continue
        for line in ref.bytes(f"{folder}/SOURCES.md").decode("utf-8").splitlines():
            match = _FOLDER_SOURCE_ROW.match(line)
            if match and f"{folder}/{match['file']}" == rel:
                releases[rel] = {"repository": match["repository"], "tag": match["tag"]}
    missing = [rel for rel in CRD_INPUTS if rel.startswith("crds/") and rel not in releases]
    if missing:
        raise DeriveError(f"{CRD_SOURCES}: no release row for {', '.join(missing)}")
    # dra/SOURCES.md names one repository and tag for every file it lists (`Repository: **owner/name**`, `Tag **vX**`).
    for rel in CRD_INPUTS:
        if rel.startswith("dra/") and rel not in releases:
            text = ref.bytes("dra/SOURCES.md").decode("utf-8")
            repository = re.search(r"^Repository: \*\*([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)\*\*", text, re.M)
            tag = re.search(r"^Tag \*\*(v[0-9][^*]*)\*\*", text, re.M)
            if repository is None or tag is None or f"| {rel.removeprefix('dra/')} |" not in text:
                raise DeriveError(f"dra/SOURCES.md: no repository, tag or row for {rel}")
            releases[rel] = {"repository": repository[1], "tag": tag[1]}
    return releases


def derive_crds(ref: Reference, check: bool = True) -> tuple[dict[str, bytes], dict[str, Any], dict[str, Any]]:
    """The CR schema files and the index; plus the converted ClusterPolicy and NVIDIADriver specs for the values
    schemas."""
    outputs: dict[str, bytes] = {}
    index: dict[str, Any] = {}
    cp_spec: dict[str, Any] | None = None
    nvd_spec: dict[str, Any] | None = None
    releases = crd_releases(ref)
    for rel in CRD_INPUTS:
        for crd in _crds(ref, rel):
            spec = crd["spec"]
            group, kind, scope = spec["group"], spec["names"]["kind"], spec["scope"]
            if scope not in ("Namespaced", "Cluster"):
                raise DeriveError(f"{rel}: scope {scope!r}")
            served = [v for v in spec["versions"] if v.get("served")]
            if not served:
                raise DeriveError(f"{rel}: {kind} serves no version")
            for version in served:
                try:
                    schema, cel = crd_version_schema(crd, version, rel)
                except ChartSourceError as exc:
                    raise DeriveError(str(exc)) from exc
                name = f"{group}_{kind.lower()}_{version['name']}.json"
                written = schema if group in UNSHARED_GROUPS else shared_subschemas(schema)
                sharing = (f" Each sub-schema it repeats ({SHARED_MIN_BYTES} bytes or more) is written once under "
                           "$defs (shared-<digest>) and referred to by $ref." if written != schema else "")
                written["x-gpuconf-generated"] = _generated(
                    {rel: ref.hashes[rel]},
                    f"JSON Schema (Draft 2020-12) of {kind} {group}/{version['name']}, converted from the CRD's "
                    f"openAPIV3Schema: strict (unlisted fields are errors), int-or-string and nullable translated, "
                    f"RE2 patterns made Python-compatible; `{LIST_MAP_KEYS}` lists the keys that must be unique "
                    f"in a map-type list (checked by gpuconf.output.verify). " + (
                        f"`{CEL_RULES}` keeps the CEL rules (tests/cel.py evaluates them)." if group in CEL_KEPT_GROUPS
                        else "CEL rules are not checked.") + sharing)
                if check:
                    check_schema(written, name)
                    _local_refs(written, written, name)
                outputs[f"schemas/crds/{name}"] = _dump(written)
                index[f"{group}/{version['name']}/{kind}"] = {
                    "deprecated": bool(version.get("deprecated", False)),
                    "file": f"crds/{name}",
                    "scope": scope,
                    "storage": bool(version.get("storage", False)),
                    "uncheckedCelRules": cel,
                    **({"release": releases[rel]} if rel in releases else {}),
                }
                if rel == CP_CRD:
                    cp_spec = schema["properties"]["spec"]
                if rel == NVD_CRD:
                    nvd_spec = schema["properties"]["spec"]
    if cp_spec is None:
        raise DeriveError(f"{CP_CRD}: no ClusterPolicy version")
    if nvd_spec is None:
        raise DeriveError(f"{NVD_CRD}: no NVIDIADriver version")
    try:
        # controller-gen writes the grammar of a resource.Quantity as this pattern; Kubernetes' own OpenAPI has
        # none, so gpuconf.output.verify adds it to the built-in schemas (ResourceQuota `hard`, container resources).
        quantity = cp_spec["properties"]["driver"]["properties"]["resources"]["properties"]["limits"][
            "additionalProperties"]["pattern"]
    except KeyError as exc:
        raise DeriveError(f"{CP_CRD}: no quantity pattern at spec.driver.resources.limits") from exc
    outputs["schemas/crds/index.json"] = _dump({
        "generated": _generated({rel: ref.hashes[rel] for rel in (*CRD_INPUTS, CRD_SOURCES,
                                                                  *(r for r in ref.hashes if r.endswith("/SOURCES.md")))},
                                "Custom resources gpuconf has a schema for, keyed by <apiVersion>/<kind>: the "
                                "schema file (relative to the gpuconf.schemas package), the scope (kustomize and "
                                "kubectl cannot know it offline), whether the version is deprecated or the storage "
                                "version, how many CEL rules the JSON Schema cannot check, and for the CRDs of "
                                "other projects the upstream release they come from (crds/SOURCES.md); "
                                "quantityPattern is the resource.Quantity grammar as the ClusterPolicy CRD spells it."),
        "kinds": dict(sorted(index.items())),
        "quantityPattern": quantity,
    })
    return outputs, cp_spec, nvd_spec


def _chart_facts(version: str, ref: Reference) -> tuple[dict[str, Any], str]:
    """profiles/charts/<version>.json (from tools/derive_reference.py) and its hash, checked against the reference."""
    rel = f"profiles/charts/{version}.json"
    path = REPO_ROOT / rel
    if not path.is_file():
        raise DeriveError(f"{rel} is missing: run python {REFERENCE_SCRIPT} first")
    data = path.read_bytes()
    facts = json.loads(data)
    for source, digest in facts["generated"]["inputs"].items():
        actual = sha256((ref.root / source).read_bytes()) if (ref.root / source).is_file() else None
        if actual != digest:
            raise DeriveError(f"{rel} was derived from another {source}: run python {REFERENCE_SCRIPT} first")
    return facts, sha256(data)


def chart_specs(ref: Reference, version: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The converted ClusterPolicy and NVIDIADriver spec schemas of one release, read from its own tarball's crds/,
    and the tarball's reference path."""
    rel = f"gpu-operator/charts/gpu-operator-{version}.tgz"
    ref.bytes(rel)
    try:
        return (*chart_spec_schemas(read_chart(ref.root / rel), rel), rel)
    except ChartSourceError as exc:
        raise DeriveError(str(exc)) from exc


def chart_releases() -> list[str]:
    """The releases tools/derive_reference.py wrote facts for, oldest first."""
    names = [p.stem for p in (REPO_ROOT / "profiles" / "charts").glob("v*.json")]
    return sorted(names, key=lambda v: tuple(int(x) for x in v.lstrip("v").split(".")))


def derive_values(ref: Reference, check: bool = True) -> dict[str, bytes]:
    """The values schemas of the chart versions and the NFD subchart."""
    outputs: dict[str, bytes] = {}
    for version in chart_releases():
        facts, digest = _chart_facts(version, ref)
        cp_spec, nvd_spec, tarball = chart_specs(ref, version)
        try:
            schema = ValuesSchemaBuilder(facts, cp_spec, nvd_spec).build()
        except ChartSourceError as exc:
            raise DeriveError(str(exc)) from exc
        rel = f"schemas/values/gpu-operator-{version}.json"
        if check:
            check_schema(schema, rel)
        check_instance(schema, facts["defaults"], rel)
        schema["x-gpuconf-generated"] = _generated(
            {f"profiles/charts/{version}.json": digest, tarball: ref.hashes[tarball]},
            f"JSON Schema (Draft 2020-12) of the GPU Operator chart {version} values: every mapping of the defaults "
            f"is closed except free-form maps (labels, resources, ConfigMap data, NFD config files, ...), template-"
            f"only keys are allowed, and keys rendered into the ClusterPolicy (or the NVIDIADriver) take the CRD "
            f"field's type and enum.")
        outputs[rel] = _dump(schema)

    nfd_chart = ref.yaml_all(NFD_CHART)[0]
    nfd_version = str(nfd_chart["version"])
    nfd = ref.json(NFD_SCHEMA)
    refs = _local_refs(nfd, nfd, NFD_SCHEMA)
    if refs == 0:
        raise DeriveError(f"{NFD_SCHEMA}: expected the bundled Kubernetes definitions to be referenced")
    if check:
        check_schema(nfd, NFD_SCHEMA)
    v26_7 = json.loads((REPO_ROOT / "profiles/charts/v26.7.0.json").read_bytes())
    if v26_7["nfdChartVersion"] != nfd_version:
        raise DeriveError(f"{NFD_CHART}: version {nfd_version}, but chart v26.7.0 pins {v26_7['nfdChartVersion']}")
    check_instance(nfd, v26_7["defaults"]["node-feature-discovery"], NFD_SCHEMA)
    from gpuconf.output import verify

    # Two thirds of the file are descriptions, which no validator reads: each render parsed and compiled them.
    nfd = verify._without_descriptions(nfd)
    check_instance(nfd, v26_7["defaults"]["node-feature-discovery"], NFD_SCHEMA)
    nfd["x-gpuconf-generated"] = _generated(
        {NFD_SCHEMA: ref.hashes[NFD_SCHEMA], NFD_CHART: ref.hashes[NFD_CHART]},
        f"The node-feature-discovery {nfd_version} subchart's own values.schema.json, which Helm enforces at render, "
        f"unchanged but for this key, the key order and its descriptions (strings no validator reads). Its {refs} $refs all point into its own "
        f"$defs/_definitions.json (a bundled copy of the Kubernetes definitions), so it validates offline.")
    outputs[f"schemas/values/node-feature-discovery-{nfd_version}.json"] = _dump(nfd)
    return outputs


def derive_kubernetes() -> dict[str, bytes]:
    """schemas/kubernetes: for each built-in kind gpuconf writes (gpuconf.output.verify.EMITTED_BUILTIN_KINDS) and
    each Kubernetes version kubernetes-validate bundles, the kind's strict schema with the definitions it reaches
    and without descriptions, as gpuconf.output.verify builds it from the bundle (Quantity grammar from
    schemas/crds/index.json included: run after the CRDs are derived); one file per distinct content, named by its
    digest, and an index from "<minor>/<apiVersion>/<kind>" (and "<minor>/ObjectMeta") to the file."""
    import hashlib
    import importlib.metadata

    from gpuconf.output import verify

    outputs: dict[str, bytes] = {}
    kinds: dict[str, str] = {}
    wanted = [*verify.EMITTED_BUILTIN_KINDS, ("", verify.OBJECT_META)]
    for minor in verify.supported_kubernetes_versions():
        for api_version, kind in wanted:
            schema = verify.builtin_subset(minor, api_version, kind)
            if schema is None:
                continue  # e.g. resource.k8s.io/v1 before Kubernetes 1.34
            data = _dump(schema)
            group, _, version = api_version.rpartition("/")
            stem = kind.lower() if kind == verify.OBJECT_META else \
                f"{kind.lower()}-{group.split('.')[0] or 'core'}-{version}"
            file = f"{stem}-{hashlib.sha256(data).hexdigest()[:12]}.json"
            outputs[f"schemas/kubernetes/{file}"] = data
            kinds[verify.builtin_subset_key(minor, api_version, kind)] = file
    release = importlib.metadata.version("kubernetes-validate")
    outputs["schemas/kubernetes/index.json"] = _dump({
        "generated": header(SCRIPT, {f"kubernetes-validate {release}": "the installed package (gpuconf depends on "
                                                                        "kubernetes-validate==1.37.*)"},
                            "The strict schemas of the built-in kinds gpuconf writes, one per Kubernetes version "
                            "kubernetes-validate bundles, each with the definitions it reaches and without "
                            "descriptions: what gpuconf.output.verify would build from the bundle's 1.8 MB "
                            "definitions file in every process. Keyed by <minor>/<apiVersion>/<kind> and "
                            "<minor>/ObjectMeta; files named by their content's digest, shared between versions."),
        "kinds": dict(sorted(kinds.items())),
    })
    return outputs


#: The DRA driver chart gpuconf delivers beside the operator for NVLink pools (pools[].nvlink; dra/SOURCES.md: the
#: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 release's chart).
DRA_CHART = "dra/chart/dra-driver-nvidia-gpu-v0.4.1.tgz"
#: Values of that chart whose defaults are Kubernetes objects or maps a user fills freely (affinity, selectors,
#: annotations, security contexts, container resources): any mapping is accepted there.
DRA_FREE_FORM = ("affinity", "nodeSelector", "podAnnotations", "podSecurityContext", "securityContext",
                 "resources", "selectorLabelsOverride", "featureGates", "annotations", "strategy")


def _shape(value: Any, key: str, path: str) -> dict[str, Any]:
    """A JSON Schema of a default value: its type, and for a mapping its keys (closed unless free-form)."""
    if isinstance(value, dict):
        if key in DRA_FREE_FORM and path != ".resources":  # the top-level resources: gpus, computeDomains
            return {"type": "object"}
        return {"type": "object", "additionalProperties": False,
                "properties": {k: _shape(v, k, f"{path}.{k}") for k, v in sorted(value.items())}}
    found = default_type(value)
    if found is None:
        raise DeriveError(f"{DRA_CHART}: values.yaml {path}: unexpected {type(value).__name__}")
    return found


def derive_dra_chart(ref: Reference, check: bool = True) -> dict[str, bytes]:
    """The values shape of the DRA driver chart: what gpuconf's dra-driver/values.yaml may set."""
    ref.bytes(DRA_CHART)
    chart = read_chart(ref.root / DRA_CHART)
    meta = chart.yaml("Chart.yaml")
    defaults = chart.yaml("values.yaml")
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **_shape(defaults, "", "")}
    if check:
        check_schema(schema, DRA_CHART)
    check_instance(schema, defaults, DRA_CHART)
    version = str(meta["version"])
    schema["x-gpuconf-generated"] = _generated(
        {DRA_CHART: ref.hashes[DRA_CHART]},
        f"The values of the {meta['name']} chart {version} (no values.schema.json of its own), as JSON Schema: each "
        f"key its defaults have, with the default's type; mappings are closed except free-form ones "
        f"({', '.join(DRA_FREE_FORM)}).")
    schema["x-chart"] = {"name": meta["name"], "version": version, "appVersion": str(meta.get("appVersion", "")),
                         "kubeVersion": str(meta.get("kubeVersion", ""))}
    return {f"schemas/values/{meta['name']}-{version}.json": _dump(schema)}


def derive(reference: Path, check: bool = True) -> dict[str, bytes]:
    """Every output file (repository-relative path -> bytes) derived from the reference folder.

    check=False skips the metaschema check of each result (the slow part after parsing); the tests run it on the
    committed files instead of twice.
    """
    ref = Reference(reference)
    outputs = derive_crds(ref, check)[0]
    outputs.update(derive_values(ref, check))
    outputs.update(derive_dra_chart(ref, check))
    outputs.update(derive_kubernetes())
    return dict(sorted(outputs.items()))


def _leftovers(outputs: dict[str, bytes]) -> list[str]:
    """Committed schema files nobody derives any more (a dropped CRD version)."""
    return sorted(str(p.relative_to(REPO_ROOT)) for sub in ("schemas/crds", "schemas/values", "schemas/kubernetes")
                  for p in (REPO_ROOT / sub).glob("*.json") if str(p.relative_to(REPO_ROOT)) not in outputs)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: derive, then write (or with --check, compare)."""
    args = arguments(__doc__, "exit 1 if a committed file differs; write nothing").parse_args(argv)
    return run("derive_schemas", lambda: derive(args.reference), args.check, _leftovers)


if __name__ == "__main__":
    sys.exit(main())

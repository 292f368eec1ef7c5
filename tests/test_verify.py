"""Tests of gpuconf.output.verify and of the schemas tools/derive_schemas.py derives into schemas/."""

from __future__ import annotations

import copy
import importlib.resources
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gpuconf import catalog
from gpuconf.output import verify
from gpuconf.output.verify import Problem, scope, verify_object, verify_values

REPO_ROOT = Path(__file__).resolve().parent.parent
REFERENCE = REPO_ROOT.parent / "shared" / "reference"
K8S = "1.33"
CHARTS = ("v26.3.3", "v26.7.0")


def schemas_dir() -> Any:
    return importlib.resources.files("gpuconf.schemas")


def load_schema(rel: str) -> dict[str, Any]:
    return json.loads(schemas_dir().joinpath(*rel.split("/")).read_bytes())


def index() -> dict[str, Any]:
    return load_schema("crds/index.json")


def derive_module() -> Any:
    """tools/derive_schemas.py as a module."""
    spec = importlib.util.spec_from_file_location("derive_schemas", REPO_ROOT / "tools" / "derive_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def merged(overrides: dict[str, Any], version: str = "v26.7.0") -> dict[str, Any]:
    """Chart defaults with overrides coalesced over them the way Helm does (maps merge, lists are replaced)."""
    facts = catalog.chart(version)
    assert facts is not None

    def coalesce(base: Any, over: Any) -> Any:
        if isinstance(base, dict) and isinstance(over, dict):
            out = dict(base)
            for key, value in over.items():
                out[key] = coalesce(base[key], value) if key in base else value
            return out
        return over

    result: dict[str, Any] = coalesce(facts.defaults, overrides)
    return result


def paths(problems: list[Problem]) -> list[str]:
    return [p.path for p in problems]


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, problems
    return problems[0]


# --- objects ---------------------------------------------------------------------------------------------------

GPU_TAINT = {"key": "gpuconf.dev/pool", "operator": "Equal", "value": "train-h100", "effect": "NoSchedule"}


def cluster_policy() -> dict[str, Any]:
    """A ClusterPolicy as the chart renders it for a MIG-mixed cluster with a device-plugin config."""
    image = {"repository": "registry.corp.example/nvidia", "imagePullPolicy": "IfNotPresent",
             "imagePullSecrets": ["corp-mirror"]}
    return {
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
        "spec": {
            "operator": {"defaultRuntime": "containerd", "runtimeClass": "nvidia"},
            "daemonsets": {"priorityClassName": "system-node-critical", "updateStrategy": "RollingUpdate",
                           "rollingUpdate": {"maxUnavailable": "1"},
                           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                                           GPU_TAINT]},
            "driver": {"enabled": True, "version": "595.91.07", "image": "driver", "kernelModuleType": "auto",
                       "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%",
                                         "podDeletion": {"force": False, "timeoutSeconds": 300},
                                         "drain": {"enable": True, "timeoutSeconds": 300}},
                       "resources": {"limits": {"memory": "2Gi"}}, **image},
            "toolkit": {"enabled": True, "version": "v1.20.0", "image": "container-toolkit", **image},
            "devicePlugin": {"enabled": True, "version": "v0.20.0", "image": "k8s-device-plugin",
                             "config": {"name": "device-plugin-config", "default": "default"}, **image},
            "dcgmExporter": {"enabled": True, "version": "4.6.0-4.8.3-distroless", "image": "dcgm-exporter",
                             "serviceMonitor": {"enabled": True, "interval": "30s",
                                                "additionalLabels": {"release": "kube-prometheus"}}},
            "dcgm": {"enabled": False},
            "gfd": {"enabled": True},
            "nodeStatusExporter": {"enabled": False},
            "mig": {"strategy": "mixed"},
            "migManager": {"enabled": True, "config": {"name": "custom-mig-parted-config",
                                                       "default": "all-disabled"}},
            "ccManager": {"enabled": True, "defaultMode": "on"},
        },
    }


def nvidia_driver() -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "train-h100"},
        "spec": {"driverType": "gpu", "default": False, "image": "driver", "repository": "nvcr.io/nvidia",
                 "version": "595.91.07", "kernelModuleType": "open",
                 "nodeSelector": {"gpuconf.dev/pool": "train-h100"},
                 "tolerations": [GPU_TAINT],
                 "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%"}},
    }


def node_feature_rule() -> dict[str, Any]:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "gpuconf-pools"},
        "spec": {"rules": [{
            "name": "pool train-h100",
            "labels": {"gpuconf.dev/pool": "train-h100"},
            "taints": [{"key": "gpuconf.dev/pool", "value": "train-h100", "effect": "NoSchedule"}],
            "matchFeatures": [{"feature": "pci.device",
                               "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]},
                                                    "device": {"op": "In", "value": ["2330", "2331"]}}}],
        }]},
    }


def prometheus_rule() -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "gpuconf-gpu-alerts", "namespace": "gpu-operator",
                     "labels": {"release": "kube-prometheus"}},
        "spec": {"groups": [{"name": "gpu", "interval": "1m", "partial_response_strategy": "WARN", "rules": [
            {"alert": "GpuTooHot", "expr": "DCGM_FI_DEV_GPU_TEMP > 85", "for": "5m",
             "labels": {"severity": "warning"}, "annotations": {"summary": "GPU above 85 C"}},
            {"record": "gpuconf:gpu_util:avg", "expr": "avg(DCGM_FI_DEV_GPU_UTIL)"},
        ]}]},
    }


def service_monitor() -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator",
                     "labels": {"release": "kube-prometheus"}},
        "spec": {"selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
                 "namespaceSelector": {"matchNames": ["gpu-operator"]},
                 "endpoints": [{"port": "gpu-metrics", "interval": "30s", "scrapeTimeout": "10s",
                                "relabelings": [{"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                                                 "targetLabel": "node"}]}]},
    }


def node_pool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "train-h100"},
        "spec": {
            "template": {
                "metadata": {"labels": {"gpuconf.dev/pool": "train-h100"}},
                "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                         "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                           "values": ["p5.48xlarge"]}],
                         "taints": [{"key": "gpuconf.dev/pool", "value": "train-h100", "effect": "NoSchedule"}],
                         "expireAfter": "720h"}},
            "limits": {"nvidia.com/gpu": 128, "cpu": "3000"},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
        },
    }


BUILTINS: dict[str, dict[str, Any]] = {
    "Namespace": {"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "research", "labels": {"gpuconf.dev/team": "research"}}},
    "ResourceQuota": {"apiVersion": "v1", "kind": "ResourceQuota",
                      "metadata": {"name": "gpu-quota", "namespace": "research"},
                      "spec": {"hard": {"requests.nvidia.com/gpu": "64", "requests.nvidia.com/mig-3g.40gb": 4,
                                        "limits.memory": "512Gi"}}},
    "PriorityClass": {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": {"name": "gpuconf-high"}, "value": 100000, "globalDefault": False,
                      "preemptionPolicy": "PreemptLowerPriority", "description": "research training"},
    "ClusterRole": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": "gpuconf-admin"},
                    "rules": [{"apiGroups": ["nvidia.com"], "resources": ["clusterpolicies", "nvidiadrivers"],
                               "verbs": ["get", "list", "watch", "update", "patch"]}]},
    "RoleBinding": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "gpuconf-developers", "namespace": "research"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                  "name": "research-eng"}]},
    "Job": {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "gpuconf-probe-train-h100", "namespace": "gpu-operator"},
            "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 600, "template": {"spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"gpuconf.dev/pool": "train-h100"},
                "tolerations": [GPU_TAINT],
                "containers": [{"name": "probe", "image": "nvcr.io/nvidia/cuda:12.9.0-base-ubuntu24.04",
                                "command": ["nvidia-smi", "-L"],
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}},
    "ConfigMap": {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "device-plugin-config", "namespace": "gpu-operator"},
                  "data": {"default": "version: v1\nflags:\n  migStrategy: none\n"}},
}

CUSTOM: dict[str, Any] = {
    "ClusterPolicy": cluster_policy, "NVIDIADriver": nvidia_driver, "NodeFeatureRule": node_feature_rule,
    "PrometheusRule": prometheus_rule, "ServiceMonitor": service_monitor, "NodePool": node_pool,
}


# --- the derived schemas ---------------------------------------------------------------------------------------

EXPECTED_KINDS = {
    "nvidia.com/v1/ClusterPolicy", "nvidia.com/v1alpha1/NVIDIADriver", "nfd.k8s-sigs.io/v1alpha1/NodeFeatureRule",
    "nvidia.com/v1alpha1/GPUCluster", "resource.nvidia.com/v1beta1/ComputeDomain",
    "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule", "karpenter.sh/v1/NodePool",
    "karpenter.sh/v1alpha1/NodeOverlay", "karpenter.k8s.aws/v1/EC2NodeClass",
    "argoproj.io/v1alpha1/Application", "argoproj.io/v1alpha1/ApplicationSet", "argoproj.io/v1alpha1/AppProject",
    "helm.toolkit.fluxcd.io/v2/HelmRelease", "source.toolkit.fluxcd.io/v1/HelmRepository",
    "source.toolkit.fluxcd.io/v1/OCIRepository", "kustomize.toolkit.fluxcd.io/v1/Kustomization",
    *(f"kueue.x-k8s.io/{v}/{k}" for v in ("v1beta1", "v1beta2")
      for k in ("ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Topology")),
    "kyverno.io/v1/Policy", "kyverno.io/v2beta1/Policy",
}


def all_patterns(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                found.append(value)
            elif key == "patternProperties":
                found.extend(value)
            if key not in ("enum", "const", "required", "x-gpuconf-generated"):
                found.extend(all_patterns(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(all_patterns(item))
    return found


def test_index_lists_the_expected_kinds_with_scope_and_files() -> None:
    kinds = index()["kinds"]
    assert set(kinds) == EXPECTED_KINDS
    for key, entry in kinds.items():
        group_version, _, kind = key.rpartition("/")
        group, _, version = group_version.partition("/")
        assert entry["file"] == f"crds/{group}_{kind.lower()}_{version}.json"
        assert entry["scope"] in ("Namespaced", "Cluster")
    assert kinds["nvidia.com/v1/ClusterPolicy"]["scope"] == "Cluster"
    assert kinds["nfd.k8s-sigs.io/v1alpha1/NodeFeatureRule"]["scope"] == "Cluster"
    assert kinds["monitoring.coreos.com/v1/ServiceMonitor"]["scope"] == "Namespaced"
    assert kinds["kueue.x-k8s.io/v1beta1/LocalQueue"]["deprecated"] is True
    assert kinds["kueue.x-k8s.io/v1beta2/LocalQueue"]["storage"] is True
    assert kinds["nvidia.com/v1alpha1/NVIDIADriver"]["uncheckedCelRules"] == 3  # the facts sheet counts 3


@pytest.mark.parametrize("key", sorted(EXPECTED_KINDS))
def test_crd_schema_is_valid_draft_2020_12_with_compiling_patterns(key: str) -> None:
    entry = index()["kinds"][key]
    schema = load_schema(entry["file"])
    jsonschema.Draft202012Validator.check_schema(schema)
    for pattern in all_patterns(schema):
        re.compile(pattern)
    group_version, _, kind = key.rpartition("/")
    assert schema["properties"]["apiVersion"]["const"] == group_version
    assert schema["properties"]["kind"]["const"] == kind
    assert {"apiVersion", "kind", "metadata"} <= set(schema["required"])
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("rel", ["values/gpu-operator-v26.3.3.json", "values/gpu-operator-v26.7.0.json",
                                 "values/node-feature-discovery-0.19.0.json"])
def test_values_schema_is_valid_draft_2020_12(rel: str) -> None:
    schema = load_schema(rel)
    jsonschema.Draft202012Validator.check_schema(schema)
    for pattern in all_patterns(schema):
        re.compile(pattern)


def test_re2_flag_group_is_moved_for_python() -> None:
    schema = load_schema(index()["kinds"]["monitoring.coreos.com/v1/PrometheusRule"]["file"])
    assert "(?i)^(abort|warn)?$" in all_patterns(schema)
    assert not any(p.startswith("^(?i)") for p in all_patterns(schema))


def test_nfd_schema_keeps_no_descriptions() -> None:
    """The NFD subchart's schema is committed without its descriptions (two thirds of the upstream file, read by no
    validator): a render parses and compiles it; a property named description is still there."""
    text = (REPO_ROOT / "schemas" / "values" / "node-feature-discovery-0.19.0.json").read_text(encoding="utf-8")
    assert len(text) < 100_000
    found = []

    def walk(node, in_properties=False):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "description" and not in_properties:
                    found.append(value)
                walk(value, key in ("properties", "$defs"))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(text))
    assert found == []


def test_nfd_schema_refs_stay_inside_the_file() -> None:
    schema = load_schema("values/node-feature-discovery-0.19.0.json")
    refs = re.findall(r'"\$ref": "([^"]*)"', json.dumps(schema))
    assert refs and all(ref.startswith("#/$defs/_definitions.json/") for ref in refs)


@pytest.mark.skipif(not REFERENCE.is_dir(),
                    reason="../shared/reference is absent (a user's clone): the committed schemas/ are the source")
def test_committed_schemas_are_what_the_script_derives() -> None:
    derive = derive_module()
    outputs = derive.derive(REFERENCE, check=False)  # the metaschema checks run on the committed files above
    committed = {str(p.relative_to(REPO_ROOT)) for sub in ("schemas/crds", "schemas/values", "schemas/kubernetes")
                 for p in (REPO_ROOT / sub).glob("*.json")}
    assert set(outputs) == committed
    for rel, data in outputs.items():
        assert (REPO_ROOT / rel).read_bytes() == data, f"{rel} is stale: run python tools/derive_schemas.py"


def test_generated_files_announce_how_to_regenerate_them() -> None:
    for rel in ("crds/nvidia.com_clusterpolicy_v1.json", "values/gpu-operator-v26.7.0.json",
                "values/node-feature-discovery-0.19.0.json"):
        header = load_schema(rel)["x-gpuconf-generated"]
        assert header["command"] == "python tools/derive_schemas.py"
        assert header["inputs"] and all(v.startswith("sha256:") for v in header["inputs"].values())
    assert index()["generated"]["command"] == "python tools/derive_schemas.py"


def test_script_fails_loudly_without_a_reference(tmp_path: Path) -> None:
    derive = derive_module()
    with pytest.raises(derive.DeriveError, match="does not exist"):
        derive.derive(tmp_path / "nowhere")
    with pytest.raises(derive.DeriveError, match="missing"):
        derive.derive(tmp_path)
    assert derive.main(["--check", "--reference", str(tmp_path / "nowhere")]) == 2


# --- the converter ---------------------------------------------------------------------------------------------


def test_converter_translates_the_kubernetes_extensions() -> None:
    derive = derive_module()
    crd_node = {
        "type": "object",
        "properties": {
            "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "mode": {"type": "string", "enum": ["a", "b"], "nullable": True},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "policy": {"type": "string", "pattern": "^(?i)(abort|warn)?$", "description": "dropped",
                       "default": "warn"},
            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        },
        "x-kubernetes-validations": [{"rule": "true"}],
    }
    converter = derive.Converter("test")
    out = converter.convert(crd_node)
    props = out["properties"]
    assert out["additionalProperties"] is False
    assert props["port"] == {"type": ["integer", "string"]}
    assert props["mode"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert "additionalProperties" not in props["raw"]
    assert props["tags"]["uniqueItems"] is True
    assert props["ports"]["x-kubernetes-list-map-keys"] == ["name"]
    assert props["policy"] == {"type": "string", "pattern": "(?i)^(abort|warn)?$"}
    assert props["ratio"] == {"type": "number", "exclusiveMinimum": 0}
    assert converter.cel_rules == 1


def test_converter_rejects_what_it_cannot_translate() -> None:
    from gpuconf.chartfacts import valuesschema
    from gpuconf.chartfacts.source import ChartSourceError

    with pytest.raises(ChartSourceError, match="x-kubernetes-embedded-resource"):
        valuesschema.Converter("test").convert({"type": "object", "x-kubernetes-embedded-resource": True})
    with pytest.raises(ChartSourceError, match="does not compile"):
        valuesschema.python_pattern(r"^a\z", "test")


# --- built-in kinds --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BUILTINS))
def test_builtin_object_validates(kind: str) -> None:
    assert verify_object(copy.deepcopy(BUILTINS[kind]), K8S, "manifests/x.yaml") == []


@pytest.mark.parametrize("version", ["1.25", "1.37", "v1.30", "1.33.4"])
def test_oldest_and_newest_bundled_versions_work(version: str) -> None:
    assert verify_object(copy.deepcopy(BUILTINS["Namespace"]), version, "ns.yaml") == []
    bad = copy.deepcopy(BUILTINS["Namespace"])
    bad["metadata"]["lables"] = {}
    assert paths(verify_object(bad, version, "ns.yaml")) == ["$.metadata.lables"]


@pytest.mark.parametrize("version", ["1.24", "1.38", "1.4", "2.0", "latest", ""])
def test_unsupported_kubernetes_versions_raise(version: str) -> None:
    with pytest.raises(verify.UnsupportedKubernetesVersion, match=r"1\.25 to 1\.37"):
        verify_object(copy.deepcopy(BUILTINS["Namespace"]), version, "ns.yaml")


def test_builtin_typo_is_an_unknown_field_at_its_own_path() -> None:
    job = copy.deepcopy(BUILTINS["Job"])
    job["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    problem = only(verify_object(job, K8S, "manifests/probes.yaml"))
    assert problem == Problem("manifests/probes.yaml: Job/gpuconf-probe-train-h100",
                              "$.spec.template.spec.containers[0].imagePullPolcy",
                              "unknown field 'imagePullPolcy' (did you mean 'imagePullPolicy'?)")


def test_all_errors_are_reported_sorted() -> None:
    role = copy.deepcopy(BUILTINS["ClusterRole"])
    role["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]} for _ in range(11)]
    role["rules"][10]["verbs"] = "get"
    role["rules"][2]["verbs"] = 7
    role["aggregationRule"] = "x"
    assert paths(verify_object(role, K8S, "rbac.yaml")) == [
        "$.aggregationRule", "$.rules[2].verbs", "$.rules[10].verbs"]


def test_missing_required_field_points_at_the_field() -> None:
    binding = copy.deepcopy(BUILTINS["RoleBinding"])
    del binding["roleRef"]
    assert only(verify_object(binding, K8S, "rbac.yaml")).path == "$.roleRef"
    job = copy.deepcopy(BUILTINS["Job"])
    del job["spec"]["template"]["spec"]["containers"][0]["name"]
    problem = only(verify_object(job, K8S, "probes.yaml"))
    assert (problem.path, problem.message) == ("$.spec.template.spec.containers[0].name",
                                               "required field 'name' is missing")


def test_builtin_quantity_grammar_is_checked() -> None:
    quota = copy.deepcopy(BUILTINS["ResourceQuota"])
    quota["spec"]["hard"]["requests.nvidia.com/gpu"] = "1x"
    problem = only(verify_object(quota, K8S, "quota.yaml"))
    assert problem.path == "$.spec.hard['requests.nvidia.com/gpu']"
    assert "not a Kubernetes quantity" in problem.message


def test_namespace_on_a_cluster_scoped_object_is_a_problem() -> None:
    for obj in (copy.deepcopy(BUILTINS["PriorityClass"]), cluster_policy()):
        obj["metadata"]["namespace"] = "gpu-operator"
        problem = only(verify_object(obj, K8S, "x.yaml"))
        assert problem.path == "$.metadata.namespace" and "cluster-scoped" in problem.message


def test_wrong_group_with_a_builtin_file_name_is_unknown() -> None:
    # deployment-apps-v1.json would match by file name; the schema's own group-version-kind does not.
    obj = {"apiVersion": "apps.example.com/v1", "kind": "Deployment", "metadata": {"name": "x"}}
    assert "no schema for Deployment apps.example.com/v1" in only(verify_object(obj, K8S, "x.yaml")).message


@pytest.mark.parametrize("obj, path", [
    ({"apiVersion": "gpuconf.dev/v1alpha1", "kind": "ClusterIntent", "metadata": {"name": "x"}}, "$.kind"),
    ({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicyy", "metadata": {"name": "x"}}, "$.kind"),
    ({"apiVersion": "v1", "kind": "List", "items": []}, "$.kind"),
    ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "$.apiVersion"),
    ({"apiVersion": "v1", "metadata": {"name": "x"}}, "$.kind"),
])
def test_an_object_without_a_schema_is_a_problem(obj: dict[str, Any], path: str) -> None:
    assert paths(verify_object(obj, K8S, "x.yaml")) == [path]


def test_non_mapping_is_a_problem() -> None:
    assert verify_object(["not", "an", "object"], K8S, "x.yaml") == [  # type: ignore[arg-type]
        Problem("x.yaml", "$", "a Kubernetes object is a mapping, not list")]


# --- custom resources ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(CUSTOM))
def test_custom_resource_validates(kind: str) -> None:
    assert verify_object(CUSTOM[kind](), K8S, "manifests/x.yaml") == []


def test_cr_typo_is_caught_strictly_with_a_suggestion() -> None:
    policy = cluster_policy()
    policy["spec"]["driver"]["enabeld"] = True
    problem = only(verify_object(policy, K8S, "values"))
    assert (problem.path, problem.message) == ("$.spec.driver.enabeld",
                                               "unknown field 'enabeld' (did you mean 'enabled'?)")


def test_cr_metadata_is_checked_against_kubernetes_object_meta() -> None:
    driver = nvidia_driver()
    driver["metadata"]["lables"] = {"a": "b"}
    driver["metadata"]["annotations"] = {"a": 1}
    assert paths(verify_object(driver, K8S, "d.yaml")) == ["$.metadata.annotations.a", "$.metadata.lables"]
    del driver["metadata"]["name"]
    assert "$.metadata.name" in paths(verify_object(driver, K8S, "d.yaml"))


@pytest.mark.parametrize("field, value, path, fragment", [
    ("mig", {"strategy": "mixd"}, "$.spec.mig.strategy", "'mixd' is not one of ['none', 'single', 'mixed']"),
    ("ccManager", {"defaultMode": True}, "$.spec.ccManager.defaultMode", "quote it"),
    ("daemonsets", {"updateStrategy": "Rolling"}, "$.spec.daemonsets.updateStrategy", "is not one of"),
])
def test_cr_enum_violations(field: str, value: dict[str, Any], path: str, fragment: str) -> None:
    policy = cluster_policy()
    policy["spec"][field].update(value)
    problem = only(verify_object(policy, K8S, "cp.yaml"))
    assert problem.path == path and fragment in problem.message


def test_bad_node_feature_rule_op() -> None:
    rule = node_feature_rule()
    rule["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"]["device"]["op"] = "in"
    problem = only(verify_object(rule, K8S, "nfr.yaml"))
    assert problem.path == "$.spec.rules[0].matchFeatures[0].matchExpressions.device.op"
    assert "is not one of" in problem.message


def test_cr_missing_required_field() -> None:
    rule = node_feature_rule()
    del rule["spec"]["rules"][0]["taints"][0]["effect"]
    assert paths(verify_object(rule, K8S, "nfr.yaml")) == ["$.spec.rules[0].taints[0].effect"]
    driver = nvidia_driver()
    del driver["spec"]["driverType"]
    assert paths(verify_object(driver, K8S, "d.yaml")) == ["$.spec.driverType"]


@pytest.mark.parametrize("make, where, bad", [
    (node_pool, ("spec", "limits", "nvidia.com/gpu"), "1x"),
    (nvidia_driver, ("spec", "resources"), {"limits": {"memory": "1 GB"}}),
])
def test_cr_quantity_pattern_violation(make: Any, where: tuple[str, ...], bad: Any) -> None:
    obj = make()
    node = obj
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = bad
    problem = only(verify_object(obj, K8S, "x.yaml"))
    assert "not a Kubernetes quantity" in problem.message


def test_cr_int_or_string_and_re2_flag_pattern() -> None:
    driver = nvidia_driver()
    driver["spec"]["upgradePolicy"]["maxUnavailable"] = 2
    assert verify_object(driver, K8S, "d.yaml") == []
    driver["spec"]["upgradePolicy"]["maxUnavailable"] = 2.5
    assert paths(verify_object(driver, K8S, "d.yaml")) == ["$.spec.upgradePolicy.maxUnavailable"]
    rule = prometheus_rule()
    rule["spec"]["groups"][0]["partial_response_strategy"] = "Abort"  # case-insensitive upstream
    assert verify_object(rule, K8S, "r.yaml") == []
    rule["spec"]["groups"][0]["partial_response_strategy"] = "ignore"
    assert paths(verify_object(rule, K8S, "r.yaml")) == ["$.spec.groups[0].partial_response_strategy"]


def test_duplicate_keys_of_a_map_list_are_caught() -> None:
    monitor = service_monitor()
    # scrapeProtocols is a set list in the CRD (uniqueItems): duplicates are rejected.
    monitor["spec"]["scrapeProtocols"] = ["PrometheusProto", "PrometheusProto"]
    assert paths(verify_object(monitor, K8S, "sm.yaml")) == ["$.spec.scrapeProtocols"]
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "research"},
             # flavors is a map list keyed by name (x-kubernetes-list-map-keys, checked by gpuconf.output.verify).
             "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                 {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]},
                 {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}}
    problem = only(verify_object(queue, K8S, "q.yaml"))
    assert problem.path == "$.spec.resourceGroups[0].flavors[1]" and "duplicate entry (name='h100')" in problem.message


def test_scope_of_builtins_and_custom_resources() -> None:
    assert scope("v1", "Namespace") == "Cluster"
    assert scope("v1", "ResourceQuota") == "Namespaced"
    assert scope("scheduling.k8s.io/v1", "PriorityClass") == "Cluster"
    assert scope("rbac.authorization.k8s.io/v1", "ClusterRole") == "Cluster"
    assert scope("rbac.authorization.k8s.io/v1", "RoleBinding") == "Namespaced"
    assert scope("batch/v1", "Job") == "Namespaced"
    assert scope("nvidia.com/v1", "ClusterPolicy") == "Cluster"
    assert scope("nvidia.com/v1alpha1", "NVIDIADriver") == "Cluster"
    assert scope("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule") == "Cluster"
    assert scope("karpenter.sh/v1", "NodePool") == "Cluster"
    assert scope("monitoring.coreos.com/v1", "PrometheusRule") == "Namespaced"
    assert scope("kueue.x-k8s.io/v1beta2", "LocalQueue") == "Namespaced"
    assert scope("example.com/v1", "Widget") is None


def test_every_scoped_builtin_has_a_schema_in_the_newest_version() -> None:
    # The scope table names real kinds: each exists in kubernetes-validate's 1.37 schemas under some version.
    root = verify._kubernetes_dir("1.37")
    names = {p.name for p in root.iterdir()}
    for group, kind in verify._CLUSTER_SCOPED | verify._NAMESPACED:
        prefix = f"{kind.lower()}-{group.split('.')[0]}-v" if group else f"{kind.lower()}-v"
        assert any(name.startswith(prefix) for name in names), (group, kind)


def test_validators_and_definitions_are_built_once() -> None:
    bad = copy.deepcopy(BUILTINS["ConfigMap"])
    bad["metadata"]["nmae"] = "typo"
    for _ in range(3):
        verify_object(copy.deepcopy(BUILTINS["ConfigMap"]), "1.29", "cm.yaml")
        verify_object(bad, "1.29", "cm.yaml")  # rejected: explained by jsonschema
        verify_object(cluster_policy(), "1.29", "cp.yaml")
    caches = (verify._builtin_fast, verify._builtin_validator, verify._kubernetes_definitions,
              verify._kubernetes_registry)
    misses = [cache.cache_info().misses for cache in caches]
    verify_object(copy.deepcopy(BUILTINS["ConfigMap"]), "1.29", "cm.yaml")
    verify_object(bad, "1.29", "cm.yaml")
    assert [cache.cache_info().misses for cache in caches] == misses


def test_a_valid_document_never_builds_the_explaining_validator() -> None:
    code = ("import sys\n"
            "from gpuconf.output.verify import verify_object\n"
            "cm = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'namespace': 'y'}, "
            "'data': {'k': 'v'}}\n"
            "assert verify_object(cm, '1.33', 'cm.yaml') == []\n"
            "print('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_importing_verify_loads_no_validator() -> None:
    code = ("import sys, gpuconf.output.verify\n"
            "print(sorted(m for m in ('jsonschema', 'jsonschema_rs', 'kubernetes_validate', 'referencing') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_schema_file_decodes_as_json_does() -> None:
    """verify reads its schema files with orjson for speed (issue 21, item 15): the same data as the json module's,
    for every file it can read (gpuconf's CRD and values schemas, and Kubernetes' of each supported version)."""
    import glob
    import orjson

    from gpuconf.intent.model import KUBERNETES_VERSIONS

    files = glob.glob(str(verify._schemas_dir()) + "/**/*.json", recursive=True)
    for version in KUBERNETES_VERSIONS:
        files += glob.glob(str(verify._kubernetes_dir(version)) + "/*.json")
    assert len(files) > 1000
    for file in files:
        data = Path(file).read_bytes()
        assert orjson.loads(data) == json.loads(data), file


def test_a_render_builds_the_intent_validator_once_and_reads_no_fleet_code() -> None:
    """Importing the intent models builds no pydantic validator (defer_build): a render builds the root model's
    validator on first use, once, instead of one per model class at import; an intent that is no fleet file imports
    no fleet code (issue 21, item 15)."""
    code = ("import sys\n"
            "from pydantic import BaseModel\n"
            "import gpuconf.intent.model as M\n"
            "models = [v for v in vars(M).values() if isinstance(v, type) and issubclass(v, BaseModel)]\n"
            "built = [m.__name__ for m in models if m.__pydantic_complete__]\n"
            "from gpuconf.pipeline import render_any\n"
            f"assert render_any({str(REPO_ROOT / 'examples' / 'airgapped.yaml')!r}, 'out').ok\n"
            "after = [m.__name__ for m in models if m.__pydantic_complete__]\n"
            "print(built, after, sorted(m for m in sys.modules if 'fleet' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # Only the root's validator: the plan's built-in `exclusive` profile builds none of its own (it was a second
    # validator, SharingProfile's, built at import of gpuconf.plan).
    assert out.strip() == "[] ['ClusterIntent'] []"


def test_self_contained_schemas_are_the_same_whatever_was_built_before() -> None:
    """The localized definitions are shared between kinds (issue 21, item 15): each kind's self-contained schema is
    still exactly the one built from scratch, whichever kinds were built before it."""
    import copy

    defs = copy.deepcopy(verify._kubernetes_definitions("1.33")["$defs"])  # a fresh cache for these definitions

    def scratch(schema):
        wanted, done = [], {}

        def local(node):
            if isinstance(node, list):
                return [local(item) for item in node]
            if not isinstance(node, dict):
                return node
            out = {k: local(v) for k, v in node.items()}
            if isinstance(node.get("$ref"), str) and "#/$defs/" in node["$ref"]:
                name = node["$ref"].rsplit("/", 1)[1]
                wanted.extend([] if name in wanted else [name])
                out["$ref"] = "#/$defs/" + name
            return out

        root = local(schema)
        while len(done) < len(wanted):
            done[wanted[len(done)]] = local(defs[wanted[len(done)]])
        return {**root, "$defs": done} if done else root

    names = sorted(defs)[::7]
    for name in names + names[::-1]:  # every schema built twice: after others, and with its parts cached
        schema = {"$ref": "/api/_definitions.json#/$defs/" + name}
        built = verify._self_contained(schema, defs)
        assert built == scratch(schema) and list(built.get("$defs", {})) == list(scratch(schema).get("$defs", {}))


# --- chart values ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", CHARTS)
def test_chart_defaults_validate(version: str) -> None:
    facts = catalog.chart(version)
    assert facts is not None
    assert verify_values(facts.defaults, version) == []


def test_realistic_values_validate() -> None:
    values = merged({
        "operator": {"repository": "registry.corp.example/nvidia", "imagePullSecrets": ["corp-mirror"],
                     "version": "v26.7.0"},
        "mig": {"strategy": "mixed"},
        "driver": {"version": "595.91.07", "repository": "registry.corp.example/nvidia",
                   "upgradePolicy": {"maxUnavailable": 2, "drain": {"enable": True},
                                     "gpuPodDeletion": {"force": True, "timeoutSeconds": 600}},
                   "resources": {"limits": {"memory": "2Gi"}}},
        "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                                       GPU_TAINT],
                       "labels": {"team": "gpu-platform"}},
        "devicePlugin": {"config": {"name": "device-plugin-config", "create": True, "default": "default",
                                    "data": {"default": "version: v1\n", "ts4": "version: v1\nsharing: {}\n"}},
                         "env": [{"name": "FAIL_ON_INIT_ERROR", "value": "false"}]},
        "migManager": {"config": {"name": "custom-mig-parted-config", "create": True, "default": "all-disabled",
                                  "data": {"config.yaml": "version: v1\nmig-configs: {}\n"}}},
        "dcgmExporter": {"serviceMonitor": {"interval": "30s", "additionalLabels": {"release": "kube-prometheus"}}},
        "ccManager": {"defaultMode": "off"},
        "node-feature-discovery": {"worker": {"tolerations": [GPU_TAINT]},
                                   "master": {"config": {"enableTaints": True}}},
    })
    assert verify_values(values, "v26.7.0") == []


def test_unknown_values_key_is_rejected_with_a_suggestion() -> None:
    problems = verify_values(merged({"driver": {"upgradePolicy": {"maxParalelUpgrades": 2}}, "migManger": {}}),
                             "v26.7.0")
    assert [(p.path, p.message) for p in problems] == [
        ("$.driver.upgradePolicy.maxParalelUpgrades", "unknown field 'maxParalelUpgrades' (did you mean "
                                                      "'maxParallelUpgrades'?)"),
        ("$.migManger", "unknown field 'migManger' (did you mean 'migManager'?)"),
    ]
    assert all(p.document == "values.yaml" for p in problems)


@pytest.mark.parametrize("overrides, path, fragment", [
    ({"mig": {"strategy": "mixd"}}, "$.mig.strategy", "is not one of"),
    ({"ccManager": {"defaultMode": True}}, "$.ccManager.defaultMode", "quote it"),
    ({"migManager": {"config": {"default": "all-balanced"}}}, "$.migManager.config.default", "is not one of"),
    ({"daemonsets": {"updateStrategy": "Recreate"}}, "$.daemonsets.updateStrategy", "is not one of"),
    ({"driver": {"kernelModuleType": "closed"}}, "$.driver.kernelModuleType", "is not one of"),
    ({"driver": {"upgradePolicy": {"gpuPodDeletion": {"timeoutSeconds": -1}}}},
     "$.driver.upgradePolicy.gpuPodDeletion.timeoutSeconds", "less than the minimum"),
    ({"driver": {"upgradePolicy": {"gpuPodDeletion": {"podSelector": "x"}}}},
     "$.driver.upgradePolicy.gpuPodDeletion.podSelector", "unknown field"),
    ({"devicePlugin": {"config": {"data": {"default": {"version": "v1"}}}}},
     "$.devicePlugin.config.data.default", "is not of type 'string'"),
    ({"driver": {"resources": {"limits": {"cpu": "1 core"}}}}, "$.driver.resources.limits.cpu",
     "not a Kubernetes quantity"),
    ({"nfd": {"enabled": "yes"}}, "$.nfd.enabled", "is not of type 'boolean'"),
    ({"node-feature-discovery": {"gc": {"replicaCount": "one"}}}, "$.node-feature-discovery.gc.replicaCount",
     "is not of type 'integer'"),
])
def test_values_type_and_enum_violations(overrides: dict[str, Any], path: str, fragment: str) -> None:
    problem = only(verify_values(merged(overrides), "v26.7.0"))
    assert problem.path == path and fragment in problem.message


def test_template_only_and_free_form_keys_are_accepted() -> None:
    values = merged({
        "operator": {"version": "v26.7.0", "labels": {"team": "gpu"}, "nodeSelector": {"node-role": "infra"},
                     "annotations": {"example.com/owner": "platform"}},
        "validator": {"version": "v26.7.0", "cuda": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}},
        "daemonsets": {"labels": {"team": "gpu-platform"}},
        "dcgmExporter": {"config": {"name": "metrics", "create": True, "data": "DCGM_FI_DEV_GPU_TEMP, gauge, t\n"}},
        "driver": {"livenessProbe": {"periodSeconds": 30}},
        "hostPaths": {"kubeletRootDir": "/var/lib/k0s/kubelet"},
        "node-feature-discovery": {"worker": {"config": {"sources": {"custom": [{"name": "x"}]}}}},
    })
    assert verify_values(values, "v26.7.0") == []


def test_template_only_keys_are_typed_by_the_cluster_policy() -> None:
    problem = only(verify_values(merged({"driver": {"livenessProbe": {"periodSecond": 30}}}), "v26.7.0"))
    assert problem.path == "$.driver.livenessProbe.periodSecond"


def test_free_form_string_maps_hold_strings() -> None:
    problem = only(verify_values(merged({"daemonsets": {"labels": {"team": 7}}}), "v26.7.0"))
    assert problem.path == "$.daemonsets.labels.team"


def test_nfd_subchart_schema_applies_in_v26_7_0_only() -> None:
    # worker.tolerations items are Kubernetes Tolerations in the NFD schema (not typed by the parent's defaults).
    bad = {"node-feature-discovery": {"worker": {"tolerations": [{"key": "a", "tolerationSeconds": "ten"}]}}}
    problem = only(verify_values(merged(bad), "v26.7.0"))
    assert problem.path == "$.node-feature-discovery.worker.tolerations[0].tolerationSeconds"
    # v26.3.3 pins NFD 0.18.3, which shipped no values schema; the parent schema leaves the block open.
    assert catalog.chart("v26.3.3").nfd_chart_version == "0.18.3"  # type: ignore[union-attr]
    assert verify_values(merged(bad, "v26.3.3"), "v26.3.3") == []


def test_keys_new_in_26_7_are_unknown_to_26_3_3() -> None:
    for overrides, path in (({"hostPaths": {"kubeletRootDir": "/var/lib/kubelet"}}, "$.hostPaths.kubeletRootDir"),
                            ({"dcgmExporter": {"serviceMonitor": {"scrapeTimeout": "10s"}}},
                             "$.dcgmExporter.serviceMonitor.scrapeTimeout"),
                            ({"clusterPolicy": {"deployCR": True}}, "$.clusterPolicy")):
        assert verify_values(merged(overrides, "v26.7.0"), "v26.7.0") == []
        assert paths(verify_values(merged(overrides, "v26.3.3"), "v26.3.3")) == [path]


def test_unknown_chart_version_raises() -> None:
    with pytest.raises(ValueError, match=r"known: v24\.9\.0, .*, v26\.7\.0\)"):
        verify_values({}, "v23.9.0")


@pytest.mark.parametrize("version", CHARTS)
def test_values_schema_is_at_least_as_strict_as_the_override_paths(version: str) -> None:
    # Wherever gpuconf.catalog calls a new key below a mapping of the defaults unknown, the schema rejects it.
    facts = catalog.chart(version)
    assert facts is not None

    def mappings(node: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        found = [prefix] if isinstance(node, dict) else []
        if isinstance(node, dict):
            for key, value in node.items():
                found += mappings(value, (*prefix, key))
        return found

    checked = 0
    for path in mappings(facts.defaults, ()):
        if any("." in part for part in path):
            continue  # dotted keys (label names) cannot be spelled as a catalog path unambiguously
        dotted = ".".join(path)
        if set(path) & set(facts.free_form_map_keys) or any(
                dotted == p or dotted.startswith(p + ".") for p in facts.free_form_map_paths):
            continue  # the schema opens a free-form map's whole subtree (a passed-through Kubernetes object)
        status, _ = catalog.chart_path_status(version, ".".join((*path, "zzUnknownKey")))
        if status != "unknown":
            continue
        values = copy.deepcopy(facts.defaults)
        node = values
        for key in path:
            node = node[key]
        node["zzUnknownKey"] = 1
        expected = verify._json_path((*path, "zzUnknownKey"))
        assert expected in paths(verify_values(values, version)), expected
        checked += 1
    assert checked > 50


# --- the compiled check agrees with jsonschema -----------------------------------------------------------------
# verify_object and verify_values trust jsonschema-rs's verdict on a document and only ask jsonschema (the
# explaining engine) about a document it rejects. These tests hold the two engines to the same verdict on the
# documents gpuconf renders and on mutations of them.

GOLDEN = REPO_ROOT / "tests" / "golden"


def _golden_documents() -> list[tuple[str, str, dict[str, Any]]]:
    """(Kubernetes minor, file, document) for every Kubernetes object of the example golden trees."""
    import yaml

    versions = {"airgapped": "1.30", "heterogeneous": "1.33", "hybrid": "1.31", "single-pool": "1.32"}
    found = []
    for example, minor in sorted(versions.items()):
        for path in sorted((GOLDEN / example).rglob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if isinstance(doc, dict) and "apiVersion" in doc and "metadata" in doc:
                    found.append((minor, str(path.relative_to(GOLDEN)), doc))
    return found


GOLDEN_DOCUMENTS = _golden_documents()


def _engines(obj: dict[str, Any], minor: str) -> list[tuple[Any, Any, Any]]:
    """(compiled check, jsonschema validator, instance) pairs verify_object consults for obj."""
    entry = verify._crd_index()["kinds"].get(f"{obj['apiVersion']}/{obj['kind']}")
    if entry is None:
        return [(verify._builtin_fast(minor, obj["apiVersion"], obj["kind"]),
                 verify._builtin_validator(minor, obj["apiVersion"], obj["kind"]), obj)]
    pairs = [(verify._file_fast(entry["file"]), verify._cr_validator(entry["file"]), obj)]
    if isinstance(obj.get("metadata"), dict):
        pairs.append((verify._object_meta_fast(minor), verify._object_meta_validator(minor), obj["metadata"]))
    return pairs


def _agree(fast: Any, slow: Any, instance: Any) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in slow.iter_errors(instance)]
    assert fast.is_valid(instance) == (not errors), (errors, [e.message for e in fast.iter_errors(instance)])


def test_golden_documents_cover_every_kind_gpuconf_renders() -> None:
    kinds = {doc["kind"] for _, _, doc in GOLDEN_DOCUMENTS}
    assert {"Namespace", "ConfigMap", "Job", "ClusterRole", "RoleBinding", "ResourceQuota", "NodeFeatureRule",
            "NVIDIADriver", "PrometheusRule", "Application", "Kustomization", "HelmRelease"} <= kinds, kinds


def test_both_engines_accept_every_golden_document() -> None:
    for minor, _, doc in GOLDEN_DOCUMENTS:
        for fast, slow, instance in _engines(doc, minor):
            _agree(fast, slow, instance)


_REPLACEMENTS = (None, True, 0, -1, 1.5, "", "1x", "zz", "ON", [], [{}], {}, {"zz": 1})


def _mutate(doc: Any, data: Any) -> Any:
    """doc with one change at a random place: a key removed or added, a value replaced, a list item duplicated."""
    from hypothesis import strategies as st

    node = doc
    while True:
        containers = [v for v in (node.values() if isinstance(node, dict) else node)
                      if isinstance(v, (dict, list)) and v]
        if not containers or data.draw(st.integers(0, 3)) == 0:
            break
        node = data.draw(st.sampled_from(containers))
    action = data.draw(st.sampled_from(["remove", "add", "replace", "duplicate"]))
    if isinstance(node, dict):
        if action == "add" or not node:
            node[data.draw(st.sampled_from(["zz", "name", "key", "value", "effect", "operator"]))] = \
                data.draw(st.sampled_from(_REPLACEMENTS))
        elif action == "remove":
            del node[data.draw(st.sampled_from(sorted(node)))]
        else:
            node[data.draw(st.sampled_from(sorted(node)))] = copy.deepcopy(data.draw(st.sampled_from(_REPLACEMENTS)))
    elif isinstance(node, list) and node:
        index = data.draw(st.integers(0, len(node) - 1))
        if action == "remove":
            del node[index]
        elif action == "duplicate":
            node.append(copy.deepcopy(node[index]))
        else:
            node[index] = copy.deepcopy(data.draw(st.sampled_from(_REPLACEMENTS)))
    return doc


def test_engines_agree_on_mutated_documents() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=400, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def check(data: Any) -> None:
        minor, _, doc = data.draw(st.sampled_from(GOLDEN_DOCUMENTS))
        mutated = _mutate(copy.deepcopy(doc), data)
        for fast, slow, instance in _engines(doc, minor):
            _agree(fast, slow, mutated if instance is doc else mutated.get("metadata", {}))

    check()


@pytest.mark.parametrize("version", CHARTS)
def test_engines_agree_on_mutated_values(version: str) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    file = verify._values_schema(version)
    fast, slow = verify._file_fast(file), verify._plain_validator(file)
    _agree(fast, slow, merged({}, version))

    @settings(max_examples=150, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def check(data: Any) -> None:
        _agree(fast, slow, _mutate(merged({}, version), data))

    check()


def test_a_rejected_document_is_explained_even_where_the_engines_disagree() -> None:
    # Rust's `$` matches only at the very end of the text (as Go's RE2 does, which the API server uses); Python's
    # also before a final newline. The stricter verdict stands, in jsonschema-rs's words.
    pattern = verify._fast({"type": "string", "pattern": "^a$"})
    assert not pattern.is_valid("a\n")
    found = verify._check(pattern, lambda: jsonschema.Draft202012Validator({"type": "string", "pattern": "^a$"}),
                          "a\n", ("spec",))
    assert found == [(("spec",), '"a\\n" does not match "^a$"')]


@pytest.mark.skipif(not REFERENCE.is_dir(),
                    reason="../shared/reference is absent (a user's clone): the committed schemas/ are the source")
def test_the_release_of_each_crd_comes_from_the_sources_table(tmp_path: Path) -> None:
    derive = derive_module()
    releases = derive.crd_releases(derive.Reference(REFERENCE))
    assert releases["crds/kueue.x-k8s.io/kueue.x-k8s.io_clusterqueues.yaml"] == {
        "repository": "kubernetes-sigs/kueue", "tag": "v0.19.2"}
    # The EC2NodeClass CRD's row is in its own folder's SOURCES.md.
    assert releases["crds/karpenter.k8s.aws/karpenter.k8s.aws_ec2nodeclasses.yaml"] == {
        "repository": "aws/karpenter-provider-aws", "tag": "v1.14.1"}
    assert set(releases) >= {rel for rel in derive.CRD_INPUTS if rel.startswith("crds/")}
    # The DRA driver's ComputeDomain CRD: dra/SOURCES.md names one repository and tag for its files.
    assert releases["dra/crds/resource.nvidia.com_computedomains.yaml"] == {
        "repository": "kubernetes-sigs/dra-driver-nvidia-gpu", "tag": "v0.4.1"}
    # A CRD file without its row in the table stops the derivation instead of losing its release.
    (tmp_path / "crds").mkdir()
    sources = (REFERENCE / "crds" / "SOURCES.md").read_text(encoding="utf-8")
    (tmp_path / "crds" / "SOURCES.md").write_text(
        "\n".join(line for line in sources.splitlines() if "clusterqueues" not in line), encoding="utf-8")
    (tmp_path / "provenance" / "crds").mkdir(parents=True)  # the admission policies' table, read beside it
    shutil.copyfile(REFERENCE / "provenance" / "crds" / "SOURCES.md", tmp_path / "provenance" / "crds" / "SOURCES.md")
    with pytest.raises(derive.DeriveError, match="no release row for .*crds/kueue.x-k8s.io/kueue.x-k8s.io_clusterq"):
        derive.crd_releases(derive.Reference(tmp_path))


def test_index_names_the_release_of_other_projects_crds() -> None:
    kinds = index()["kinds"]
    assert kinds["kueue.x-k8s.io/v1beta2/LocalQueue"]["release"] == {"repository": "kubernetes-sigs/kueue",
                                                                      "tag": "v0.19.2"}
    assert "release" not in kinds["nvidia.com/v1/ClusterPolicy"]  # the chart's own CRDs: the chart version says it


# --- repeated sub-schemas written once (issue 32: compact derived schemas) ---------------------------------------


def _repeating_schema() -> dict[str, Any]:
    template = {"type": "object", "additionalProperties": False, "required": ["name"],
                "properties": {"name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 40},
                               "replicas": {"type": "integer", "minimum": 0, "maximum": 9},
                               "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                               "note": {"type": "string", "enum": ["x" * 600, "y"]}}}
    generator = {"type": "object", "additionalProperties": False, "properties": {"template": template}}
    return {"type": "object", "additionalProperties": False, "properties": {
        "list": generator, "git": generator,
        "matrix": {"type": "array", "items": {"anyOf": [generator, {"type": "null"}]}},
        "small": {"type": "string", "minLength": 1}, "other": {"type": "string", "minLength": 1}}}


def test_a_repeated_sub_schema_is_written_once_under_defs_and_checks_the_same():
    import jsonschema_rs

    derive = derive_module()
    schema = _repeating_schema()
    shared = derive.shared_subschemas(schema, min_bytes=500)
    assert schema == _repeating_schema()  # the input is left as it was
    assert all(re.fullmatch(r"shared-[0-9a-f]{16}", name) for name in shared["$defs"])
    # The generator (and the template inside it) repeat; the small string schemas stay where they are.
    assert shared["properties"]["list"] == shared["properties"]["git"] == shared["properties"]["matrix"]["items"][
        "anyOf"][0]
    assert set(shared["properties"]["list"]) == {"$ref"}
    assert shared["properties"]["small"] == {"type": "string", "minLength": 1}
    # The template repeats only inside the generator, which is written once: it stays in place there.
    assert len(shared["$defs"]) == 1
    [generator] = shared["$defs"].values()
    assert generator["properties"]["template"]["properties"]["name"]["pattern"] == "^[a-z]+$"
    assert derive.shared_subschemas(_repeating_schema(), min_bytes=500) == shared  # the same names every time
    assert derive._local_refs(shared, shared, "test") == 3
    good = {"list": {"template": {"name": "abc", "replicas": 3}}, "matrix": [None, {"template": {"name": "q"}}]}
    bad = [{"list": {"template": {"name": "ABC"}}}, {"git": {"template": {"replicas": 3}}},
           {"matrix": [{"template": {"name": "a", "extra": 1}}]}, {"list": {"template": {"name": "a", "replicas": 10}}},
           {"git": {"template": {"name": "a", "labels": {"k": 1}}}}, {"small": ""}]
    for engine in (lambda s: jsonschema.Draft202012Validator(s).is_valid,
                   lambda s: jsonschema_rs.Draft202012Validator(s).is_valid):
        assert engine(schema)(good) and engine(shared)(good)
        assert [engine(schema)(b) for b in bad] == [engine(shared)(b) for b in bad] == [False] * len(bad)
    # The errors name the same instance paths and say the same.
    for instance in bad:
        def found(s):
            return sorted((e.json_path, e.message) for e in jsonschema.Draft202012Validator(s).iter_errors(instance))
        assert found(schema) == found(shared)


def test_every_shared_definition_of_a_committed_schema_is_used_more_than_once():
    for file in sorted({entry["file"] for entry in index()["kinds"].values()}):
        schema = load_schema(file)
        text = json.dumps(schema)
        for name in schema.get("$defs", {}):
            if name.startswith("shared-"):
                assert text.count(f'"#/$defs/{name}"') >= 2, (file, name)


def test_a_mistake_inside_a_shared_part_of_the_application_set_is_reported_at_its_place(tmp_path):
    from gpuconf.pipeline import render_any

    fleet = render_any(str(REPO_ROOT / "examples" / "fleet" / "fleet.yaml"), str(tmp_path))
    [appset] = [doc for tree in fleet.trees for doc in tree.documents.get("applicationset.yaml", [])]
    assert verify.verify_object(appset, "1.33", "applicationset.yaml") == []
    assert len(load_schema("crds/argoproj.io_applicationset_v1alpha1.json")["$defs"]) > 0
    broken = json.loads(json.dumps(appset))
    broken["spec"]["template"]["spec"]["destination"]["server"] = 5
    broken["spec"]["syncPolicy"]["preserveResourcesOnDeletion"] = "yes"
    problems = verify.verify_object(broken, "1.33", "applicationset.yaml")
    assert [(p.path, p.message) for p in problems] == [
        ("$.spec.syncPolicy.preserveResourcesOnDeletion", "'yes' is not of type 'boolean'"),
        ("$.spec.template.spec.destination.server", "5 is not of type 'string'")]


# --- the built-in kinds' schemas kept in schemas/kubernetes (issue 32: compact derived subsets) -------------------


def test_each_kept_builtin_schema_is_what_the_installed_bundle_gives():
    kept = load_schema("kubernetes/index.json")["kinds"]
    expected = {}
    for minor in verify.supported_kubernetes_versions():
        for api_version, kind in [*verify.EMITTED_BUILTIN_KINDS, ("", verify.OBJECT_META)]:
            schema = verify.builtin_subset(minor, api_version, kind)
            if schema is not None:
                expected[verify.builtin_subset_key(minor, api_version, kind)] = schema
    assert sorted(kept) == sorted(expected)
    assert len(expected) > 13 * 10  # every version, nearly every kind (resource.k8s.io/v1 came in 1.34)
    for key, file in kept.items():
        assert load_schema(f"kubernetes/{file}") == expected[key], key
    files = {path.name for path in schemas_dir().joinpath("kubernetes").iterdir()} - {"index.json"}
    assert files == set(kept.values())  # no file left over, the files shared between versions by content


def test_every_builtin_kind_of_the_golden_trees_is_kept():
    import yaml

    crds = index()["kinds"]
    seen = set()
    for path in (REPO_ROOT / "tests" / "golden").rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and {"apiVersion", "kind", "metadata"} <= set(doc):
                key = f"{doc['apiVersion']}/{doc['kind']}"
                if key not in crds and key not in verify.DOCUMENTED_KINDS:
                    seen.add((doc["apiVersion"], doc["kind"]))
    assert seen and seen <= set(verify.EMITTED_BUILTIN_KINDS)


def test_a_kept_schema_and_the_bundle_give_the_same_problems(monkeypatch):
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "probe", "namespace": "gpu-operator"},
           "spec": {"backoffLimit": "two", "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1x"}}, "bogus": 1}]}}}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "t", "labelz": {}},
             "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}}
    kept = [(p.path, p.message) for doc in (job, quota) for p in verify.verify_object(doc, "1.33", "x.yaml")]
    assert kept == [
        ("$.spec.backoffLimit", "'two' is not of type 'integer', 'null'"),
        ("$.spec.template.spec.containers[0].bogus", "unknown field 'bogus'"),
        ("$.spec.template.spec.containers[0].resources.limits['nvidia.com/gpu']",
         "'1x' is not a Kubernetes quantity (such as 2, 500m, 1.5Gi, 1e3)"),
        ("$.metadata.labelz", "unknown field 'labelz' (did you mean 'labels'?)")]
    monkeypatch.setattr(verify, "_subsets", lambda: {})
    verify._builtin_fast.cache_clear()
    try:
        bundled = [(p.path, p.message) for doc in (job, quota) for p in verify.verify_object(doc, "1.33", "x.yaml")]
    finally:
        verify._builtin_fast.cache_clear()
    assert bundled == kept

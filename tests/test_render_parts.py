"""Renderers for teams, access, monitoring and probes, checked on their output for every example."""

from __future__ import annotations

import re
import textwrap

import pytest

from conftest import EXAMPLES, ROOT
from gpuconf import catalog

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
BUILTIN_GROUPS = ("v1", "batch/v1", "rbac.authorization.k8s.io/v1", "scheduling.k8s.io/v1")


def build(path):
    from gpuconf import plan as P
    from gpuconf.intent.validate import validate_path

    result = validate_path(path)
    assert result.intent is not None, result.findings
    assert not [f for f in result.findings if f.severity == "error"], result.findings
    return P.build(result.intent, str(path))


def children(node) -> list:
    """The sub-expressions of a promql-parser syntax tree node."""
    import promql_parser as pp

    if isinstance(node, pp.MatrixSelector):
        return [node.vector_selector]
    if isinstance(node, pp.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, pp.Call):
        return list(node.args)
    if isinstance(node, pp.AggregateExpr):
        return [node.expr] + ([node.param] if node.param is not None else [])
    if isinstance(node, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
        return [node.expr]
    return []


def metric_names(expr: str) -> set[str]:
    """Every metric a PromQL expression selects, read from promql-parser's syntax tree (not from the text)."""
    import promql_parser as pp

    names: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, pp.VectorSelector) and node.name:
            names.add(node.name)
        for child in children(node):
            walk(child)

    walk(pp.parse(expr))
    return names


def dcgm_metrics(expr: str) -> set[str]:
    """The DCGM exporter metrics an expression reads."""
    return {name for name in metric_names(expr) if name.startswith("DCGM_")}


def values_of(plan) -> dict:
    """The values.yaml content gpuconf renders for a plan."""
    from gpuconf.render.values import build_values

    return build_values(plan).overrides()


def build_text(tmp_path, text: str):
    path = tmp_path / "intent.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return build(path)


def render_all(plan) -> list[dict]:
    from gpuconf.render import access, monitoring, probes, teams

    return [*teams.render(plan), *access.render(plan), *monitoring.render(plan), *probes.render(plan)]


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


@pytest.fixture(scope="module", params=EXAMPLES, ids=lambda p: p.name)
def plan(request):
    return build(request.param)


@pytest.fixture(scope="module")
def heterogeneous():
    return build(ROOT / "examples" / "heterogeneous.yaml")


@pytest.fixture(scope="module")
def heterogeneous_without_kueue(tmp_path_factory):
    from conftest import without_queueing

    return build(without_queueing(ROOT / "examples" / "heterogeneous.yaml", tmp_path_factory.mktemp("plain")))


@pytest.fixture(scope="module")
def airgapped():
    return build(ROOT / "examples" / "airgapped.yaml")


# --- every object -----------------------------------------------------------------------------------------------


def test_every_object_has_common_labels_and_dns_names(plan):
    from gpuconf.render import common_labels

    docs = render_all(plan)
    assert docs
    for doc in docs:
        meta = doc["metadata"]
        assert common_labels(plan).items() <= meta["labels"].items(), meta
        # Namespaces, Jobs (their name becomes a pod label) and namespaced names are labels; the rest subdomains.
        pattern = DNS1123_LABEL if doc["kind"] in ("Namespace", "Job") else DNS1123_SUBDOMAIN
        assert pattern.match(meta["name"]) and len(meta["name"]) <= 63, meta["name"]
        if "namespace" in meta:
            assert DNS1123_LABEL.match(meta["namespace"])


def test_render_is_deterministic(plan):
    from gpuconf.emit import dump

    first, second = render_all(plan), render_all(plan)
    assert first == second
    assert [dump(d) for d in first] == [dump(d) for d in second]


@pytest.mark.parametrize("version", ["1.33", None], ids=["1.33", "intent-version"])
def test_builtin_kinds_are_valid_kubernetes(plan, version):
    import kubernetes_validate

    version = version or plan.intent.spec.cluster.kubernetes_version
    for doc in render_all(plan):
        if doc["apiVersion"] in BUILTIN_GROUPS:
            kubernetes_validate.validate(doc, version, strict=True)


# --- teams ------------------------------------------------------------------------------------------------------


def expected_quota(plan, team) -> dict[str, int]:
    """The hard limits a team's namespaces should get, derived independently from the pools' capacities."""
    from gpuconf import plan as P

    pools = {p.name: p for p in plan.pools}
    want: dict[str, int] = {}
    for pool_name, value in team.quota.items():
        names = set(pools[pool_name].capacity.per_node)
        if isinstance(value, int):
            (resource,) = names
            want[resource] = want.get(resource, 0) + value
            continue
        for profile, count in value.items():
            dra_key = f"gpuconf-{pool_name}-{profile.replace('+', '.')}.deviceclass.resource.k8s.io/devices"
            (resource,) = {n for n in names
                           if n in (P.mig_resource(profile), P.mig_resource(profile) + ".shared", dra_key)}
            want[resource] = want.get(resource, 0) + count
    # DRA quota keys (<class>.deviceclass.resource.k8s.io/devices) take no requests. prefix.
    return {(r if r.endswith(".deviceclass.resource.k8s.io/devices") else "requests." + r): str(n)
            for r, n in want.items()}


def test_quotas_use_the_pools_real_resource_names(plan):
    from gpuconf.render import teams

    from gpuconf import plan as P

    quotas = by_kind(teams.render(plan), "ResourceQuota")
    if not P.resource_quotas(plan.intent):
        assert quotas == []  # Kueue's ClusterQueues hold the quotas (tests/test_kueue.py)
        return
    advertised = {name for p in plan.pools for name in p.capacity.per_node}
    for team in plan.intent.spec.teams:
        want = expected_quota(plan, team)
        mine = [q for q in quotas if q["metadata"]["labels"]["gpuconf.dev/team"] == team.name]
        # A team quota is per namespace: every namespace of the team gets the whole of it.
        assert sorted(q["metadata"]["namespace"] for q in mine) == (sorted(team.namespaces) if want else [])
        for quota in mine:
            assert quota["spec"]["hard"] == want
            for key in quota["spec"]["hard"]:
                resource = key if key.endswith(".deviceclass.resource.k8s.io/devices") else key.removeprefix("requests.")
                assert (key != resource or resource.endswith("/devices")) and resource in advertised


def test_heterogeneous_research_quota_is_per_mig_profile(heterogeneous_without_kueue):
    from gpuconf.render import teams

    heterogeneous = heterogeneous_without_kueue
    research = next(t for t in heterogeneous.intent.spec.teams if t.name == "research")
    for quota in by_kind(teams.render(heterogeneous), "ResourceQuota"):
        if quota["metadata"]["namespace"] in research.namespaces:
            hard = quota["spec"]["hard"]
            assert hard["requests.nvidia.com/mig-3g.40gb"] == str(research.quota["infer-a100"]["3g.40gb"])
            assert hard["requests.nvidia.com/gpu"] == str(research.quota["train-h100"])
            assert not any(k.startswith("limits.") for k in hard)


def test_airgapped_mps_pool_quota_is_shared_resource(airgapped):
    from gpuconf.render import teams

    a30 = next(p for p in airgapped.pools if p.name == "analytics-a30")
    assert set(a30.capacity.per_node) == {"nvidia.com/gpu.shared"}  # MPS renames by default
    quotas = by_kind(teams.render(airgapped), "ResourceQuota")
    for team in airgapped.intent.spec.teams:
        if "analytics-a30" in team.quota:
            for quota in (q for q in quotas if q["metadata"]["namespace"] in team.namespaces):
                assert quota["spec"]["hard"]["requests.nvidia.com/gpu.shared"] == str(team.quota["analytics-a30"])


SUMMED = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata: {name: summed}
spec:
  cluster: {kubernetesVersion: "1.33"}
  operator: {chartVersion: v26.7.0}
  sharingProfiles:
    notebooks-x4: {timeSlicing: {replicas: 4}}
  pools:
    - name: train-h100
      gpu: H100-80GB
      gpusPerNode: 8
      nodes: 16
      match: {pciDevice: true}
      taints: [{key: gpuconf.dev/pool, value: train-h100, effect: NoSchedule}]
    - name: notebooks-l4
      gpu: L4
      gpusPerNode: 4
      nodes: 6
      match: {pciDevice: true}
      sharing: notebooks-x4
  teams:
    - name: research
      namespaces: [research, research-batch]
      priority: high
      quota: {train-h100: 32, notebooks-l4: 8}
    - name: product
      namespaces: [product]
      quota: {notebooks-l4: 16}
"""


def test_quota_sums_pools_that_share_a_resource_name(tmp_path):
    from gpuconf.render import teams

    plan = build_text(tmp_path, SUMMED)
    quotas = {q["metadata"]["namespace"]: q for q in by_kind(teams.render(plan), "ResourceQuota")}
    assert sorted(quotas) == ["product", "research", "research-batch"]
    for ns in ("research", "research-batch"):
        assert quotas[ns]["spec"]["hard"] == {"requests.nvidia.com/gpu": "40"}  # 32 H100 + 8 L4 units
        assert quotas[ns]["metadata"]["annotations"] == {
            "gpuconf.dev/summed-pools": "requests.nvidia.com/gpu=notebooks-l4,train-h100"}
    assert quotas["product"]["spec"]["hard"] == {"requests.nvidia.com/gpu": "16"}
    assert "annotations" not in quotas["product"]["metadata"]  # nothing was summed


def test_priority_classes_for_used_tiers_and_namespace_labels(plan):
    from gpuconf.render import teams

    docs = teams.render(plan)
    values = {"low": 1000, "normal": 10000, "high": 100000, "critical": 1000000}
    used = {t.priority for t in plan.intent.spec.teams}
    classes = by_kind(docs, "PriorityClass")
    assert {c["metadata"]["name"] for c in classes} == {f"gpuconf-{t}" for t in used}
    for c in classes:
        tier = c["metadata"]["name"].removeprefix("gpuconf-")
        assert c["value"] == values[tier]
        assert c["preemptionPolicy"] == "PreemptLowerPriority" and c["globalDefault"] is False and c["description"]
    namespaces = {n["metadata"]["name"]: n["metadata"]["labels"] for n in by_kind(docs, "Namespace")}
    assert sorted(namespaces) == sorted(ns for t in plan.intent.spec.teams for ns in t.namespaces)
    for team in plan.intent.spec.teams:
        for ns in team.namespaces:
            assert namespaces[ns]["gpuconf.dev/team"] == team.name
            assert namespaces[ns]["gpuconf.dev/priority"] == team.priority


# --- access -----------------------------------------------------------------------------------------------------


def test_no_rbac_wildcards(plan):
    from gpuconf.render import access

    for doc in access.render(plan):
        for rule in doc.get("rules", []):
            for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert not any("*" in item for item in rule.get(key, [])), (doc["metadata"]["name"], rule)
            assert rule["verbs"] == sorted(rule["verbs"])


def test_every_subject_is_bound(plan):
    from gpuconf.render import access

    spec = plan.intent.spec
    if spec.access is None:
        assert access.render(plan) == []
        return
    docs = access.render(plan)

    def bound(kind, name, namespace=None):
        out = set()
        for b in by_kind(docs, kind):
            if b["metadata"]["name"] == name and b["metadata"].get("namespace") == namespace:
                for s in b["subjects"]:
                    prefix = {"Group": "group", "User": "user", "ServiceAccount": "serviceaccount"}[s["kind"]]
                    out.add(f"{prefix}:{s['namespace']}:{s['name']}" if "namespace" in s else f"{prefix}:{s['name']}")
        return out

    assert bound("ClusterRoleBinding", "gpuconf-gpu-admin") == set(spec.access.admins)
    assert bound("RoleBinding", "gpuconf-gpu-admin", plan.namespace) == set(spec.access.admins)
    assert bound("ClusterRoleBinding", "gpuconf-gpu-observer") == set(spec.access.observers)
    assert bound("RoleBinding", "gpuconf-gpu-observer", plan.namespace) == set(spec.access.observers)
    assert bound("ClusterRoleBinding", "gpuconf-gpu-auditor") == set(spec.access.auditors)
    assert bound("RoleBinding", "gpuconf-gpu-auditor", plan.namespace) == set(spec.access.auditors)
    for team in spec.teams:
        for ns in team.namespaces:
            assert bound("RoleBinding", "gpuconf-gpu-developer", ns) == set(spec.access.developers.get(team.name, []))
    for b in by_kind(docs, "RoleBinding") + by_kind(docs, "ClusterRoleBinding"):
        assert b["subjects"], "bindings without subjects are omitted"


def test_developer_roles_are_namespaced_only(plan):
    from gpuconf.render import access

    docs = access.render(plan)
    team_namespaces = {ns for t in plan.intent.spec.teams for ns in t.namespaces}
    for doc in docs:
        role = doc["metadata"]["labels"].get("gpuconf.dev/role")
        if role == "developer":
            assert doc["kind"] in ("Role", "RoleBinding")
            assert doc["metadata"]["namespace"] in team_namespaces
            if doc["kind"] == "RoleBinding":
                assert doc["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                          "name": "gpuconf-gpu-developer"}
        if doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            assert role in ("admin", "observer", "auditor")
    if plan.intent.spec.access is not None:
        roles = [d for d in by_kind(docs, "Role") if d["metadata"]["name"] == "gpuconf-gpu-developer"]
        assert sorted(r["metadata"]["namespace"] for r in roles) == sorted(team_namespaces)


def test_admin_and_observer_grants(heterogeneous):
    from gpuconf import plan as P
    from gpuconf.render import access

    docs = {(d["kind"], d["metadata"]["name"]): d for d in access.render(heterogeneous)}
    admin = docs[("ClusterRole", "gpuconf-gpu-admin")]["rules"]
    assert {"apiGroups": ["nvidia.com"], "resources": ["clusterpolicies", "nvidiadrivers"],
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]} in admin
    assert any(r["apiGroups"] == ["nfd.k8s-sigs.io"] and r["resources"] == ["nodefeaturerules"] for r in admin)
    assert {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "update", "watch"]} in admin
    (config,) = docs[("Role", "gpuconf-gpu-admin")]["rules"]
    assert config["resources"] == ["configmaps"]
    assert config["resourceNames"] == sorted([P.DEVICE_PLUGIN_CONFIGMAP, P.MIG_CONFIGMAP])
    assert "create" not in config["verbs"]  # create cannot be restricted by resourceNames
    for kind in ("ClusterRole", "Role"):
        for rule in docs[(kind, "gpuconf-gpu-observer")]["rules"]:
            # Read only; a status subresource is read with get alone.
            assert rule["verbs"] == (["get"] if all(r.endswith("/status") for r in rule["resources"])
                                     else ["get", "list", "watch"])
    observed = {res for r in docs[("Role", "gpuconf-gpu-observer")]["rules"] for res in r["resources"]}
    assert {"pods", "services", "endpoints", "servicemonitors", "prometheusrules"} <= observed
    assert docs[("Role", "gpuconf-gpu-observer")]["metadata"]["namespace"] == heterogeneous.namespace


def test_the_auditor_gets_exactly_what_the_audit_reads(heterogeneous):
    """gpuconf audit --kubeconfig lists nodes, pods and events and reads operand logs in the operator's namespace
    (tests/test_diagnose.py runs it against a server that forbids each of them); the role grants that and no more."""
    from gpuconf.render import access

    docs = {(d["kind"], d["metadata"]["name"]): d for d in access.render(heterogeneous)}
    assert docs[("ClusterRole", "gpuconf-gpu-auditor")]["rules"] == [
        {"apiGroups": [""], "resources": ["events", "nodes", "pods"], "verbs": ["list"]}]
    assert docs[("Role", "gpuconf-gpu-auditor")]["rules"] == [
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}]
    assert docs[("Role", "gpuconf-gpu-auditor")]["metadata"]["namespace"] == heterogeneous.namespace
    assert docs[("ClusterRoleBinding", "gpuconf-gpu-auditor")]["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpuconf-audit", "namespace": "ci"}]


def test_subjects():
    from gpuconf.render.access import subject

    assert subject("group:sre") == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "sre"}
    assert subject("user:oncall@example.com")["kind"] == "User"
    assert subject("serviceaccount:ci:runner") == {"kind": "ServiceAccount", "name": "runner", "namespace": "ci"}
    assert subject("serviceaccount:runner", "team-a")["namespace"] == "team-a"
    with pytest.raises(ValueError):
        subject("serviceaccount:runner")  # a cluster-wide binding cannot guess the namespace


# --- probes -----------------------------------------------------------------------------------------------------


def test_probe_per_pool(plan):
    from gpuconf import plan as P
    from gpuconf.render import probes

    jobs = probes.render(plan)
    manual = probes.manual(plan)
    # Each pool's probe runs on every sync, or (a pool that scales to zero, probe: manual) lies in probes/<pool>.yaml.
    modes = {pool.name: P.probe_mode(plan.intent, pool.pool) for pool in plan.pools}
    assert [j["metadata"]["name"] for j in jobs] == [probes.job_name(p.name) for p in plan.pools
                                                      if modes[p.name] == "hook"]
    assert sorted(manual) == sorted(f"probes/{n}.yaml" for n, m in modes.items() if m == "manual")
    by_name = {j["metadata"]["name"]: j for j in [*jobs, *manual.values()]}
    for pool in plan.pools:
        job = by_name[probes.job_name(pool.name)]
        assert job["metadata"]["name"] == probes.job_name(pool.name)
        if len(pool.name) <= 63 - len("gpuconf-probe-"):
            assert job["metadata"]["name"] == f"gpuconf-probe-{pool.name}"
        assert job["metadata"]["namespace"] == plan.namespace
        assert job["metadata"]["annotations"]["gpuconf.dev/proves"]
        spec = job["spec"]
        assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] > 0 and spec["ttlSecondsAfterFinished"] > 0
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] == "Never"
        assert pod["nodeSelector"] == {"gpuconf.dev/pool": pool.name}
        # The pool's taints, after what the platform taints every GPU node with (GKE's nvidia.com/gpu).
        from gpuconf.render.platform import probe_tolerations

        if P.kueue_settings(plan.intent) is None:
            platform = probe_tolerations(plan)
            covered = {(t["key"], t["effect"]) for t in platform}  # a taint the platform's Exists covers, once
            assert pod.get("tolerations", []) == [*platform, *(P.toleration(t) for t in pool.pool.taints
                                                               if (t.key, t.effect) not in covered)]
            assert "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]
        else:  # admitted by Kueue, which adds the tolerations of the pool's flavor (tests/test_kueue.py)
            assert pod.get("tolerations", []) == probe_tolerations(plan)
            assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpuconf-acceptance"
        assert "kueue.x-k8s.io/queue-name" not in job["spec"]["template"]["metadata"]["labels"]
        assert "suspend" not in spec  # Kueue's webhook suspends a queued Job when it is created
        (container,) = pod["containers"]
        assert container["command"] == ["nvidia-smi", "-L"]
        assert {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"} in container["env"]
        # An NVLink pool's queued probe asks for the GPU alone (render/probes.py: Kueue's topology-aware flavor).
        limits, requests = container["resources"]["limits"], container["resources"].get("requests", {})
        if pool.pool.nvlink is not None and P.kueue_settings(plan.intent) is not None:
            assert container["resources"] == {"limits": {pool.resource: "1"}}
            assert job["spec"]["template"]["metadata"]["annotations"] == {
                "kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
        if plan.intent.spec.cluster.allocation == "dra":  # a claim on the class that counts the resource
            template = pod["resourceClaims"][0]["resourceClaimTemplateName"]
            assert container["resources"]["claims"] == [{"name": pod["resourceClaims"][0]["name"]}]
            assert template == f"gpuconf-probe-{pool.name}"
            limits = {**limits, pool.resource: "1"}
        assert limits[pool.resource] == "1"
        assert pool.resource in pool.capacity.per_node
        others = {name for p in plan.pools for name in p.capacity.per_node} - {pool.resource}
        assert not others & (set(limits) | set(requests))
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        tag = container["image"].rpartition(":")[2]
        assert tag == plan.chart_version
        repository = plan.image_repository(plan.chart.defaults["validator"]["repository"])
        assert container["image"] == f"{repository}/{plan.chart.defaults['validator']['image']}:{tag}"
        secrets = plan.intent.spec.operator.image_pull_secrets
        assert pod.get("imagePullSecrets", []) == [{"name": s} for s in secrets]


def test_h100_probe_tolerates_its_pool_taint(heterogeneous_without_kueue):
    from gpuconf.render import probes

    heterogeneous = heterogeneous_without_kueue

    job = next(j for j in probes.render(heterogeneous) if j["metadata"]["name"] == "gpuconf-probe-train-h100")
    pod = job["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "gpuconf.dev/pool", "operator": "Equal", "value": "train-h100",
                                   "effect": "NoSchedule"}]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    untainted = next(j for j in probes.render(heterogeneous) if j["metadata"]["name"] == "gpuconf-probe-notebooks-l4")
    assert "tolerations" not in untainted["spec"]["template"]["spec"]


def test_airgapped_probe_uses_mirror_and_pull_secret(airgapped):
    from gpuconf.render import probes

    registry = airgapped.intent.spec.operator.registry
    for job in probes.render(airgapped):
        pod = job["spec"]["template"]["spec"]
        assert pod["containers"][0]["image"].startswith(registry.rstrip("/") + "/")
        assert "nvcr.io" not in pod["containers"][0]["image"]
        assert pod["imagePullSecrets"] == [{"name": "enclave-mirror"}]
        assert "runAsUser" not in pod["securityContext"]  # OpenShift's SCC assigns the UID
    mps = next(j for j in probes.render(airgapped) if j["metadata"]["name"] == "gpuconf-probe-analytics-a30")
    assert mps["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"


def test_probe_name_is_bounded():
    from gpuconf.render.probes import job_name

    long = "p" * 63
    name = job_name(long)
    assert len(name) <= 63 and DNS1123_LABEL.match(name)
    assert job_name(long) == name and job_name("q" * 63) != name


# --- monitoring -------------------------------------------------------------------------------------------------


def test_prometheus_rule(plan):
    import promql_parser

    from gpuconf.render import monitoring

    docs = monitoring.render(plan)
    monitoring_spec = plan.intent.spec.monitoring
    if monitoring_spec is None or monitoring_spec.alerts is None:
        assert docs == []
        return
    rule, metrics = docs
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    # The exporter's metrics file: every expression's DCGM metrics are enabled rows of it (issue 10, defect 6).
    assert metrics["kind"] == "ConfigMap" and metrics["metadata"]["namespace"] == plan.namespace
    assert metrics["metadata"]["name"] == values_of(plan)["dcgmExporter"]["config"]["name"]
    rows = [line for line in metrics["data"]["dcgm-metrics.csv"].splitlines() if not line.startswith("#")]
    collected = {row.split(",")[0] for row in rows}
    for alert in [r for g in rule["spec"]["groups"] for r in g["rules"]]:
        assert dcgm_metrics(alert["expr"]) <= collected, alert["alert"]
    shipped = [r for r in catalog.dcgm_metrics()["rows"] if r["enabled"]]
    assert rows[:len(shipped)] == [f"{r['field']}, {r['type']}, {r['help']}" for r in shipped]
    assert rule["metadata"]["namespace"] == plan.namespace
    assert monitoring_spec.prometheus_selector.items() <= rule["metadata"]["labels"].items()
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert alerts
    for alert in alerts:
        assert set(alert) == {"alert", "expr", "for", "labels", "annotations"}
        promql_parser.parse(alert["expr"])
        assert re.fullmatch(r"[0-9]+[smh]", alert["for"])
        assert alert["labels"]["severity"] in ("warning", "critical")
        assert alert["annotations"]["summary"] and alert["annotations"]["description"]
    names = {a["alert"] for a in alerts}
    settings = monitoring_spec.alerts
    assert ("GpuconfGPUTemperatureHigh" in names) == (settings.gpu_temp_celsius is not None)
    assert ("GpuconfGPUXidError" in names) == settings.xid_errors
    assert ("GpuconfGPUEccDoubleBitError" in names) == settings.ecc_double_bit
    # Under DRA nodes advertise no GPU resource for the allocatable alert to read (it is not rendered there).
    assert ("GpuconfGPUsUnavailable" in names) == (settings.gpus_unavailable
                                                   and plan.intent.spec.cluster.allocation != "dra")
    if settings.gpu_temp_celsius is not None:
        temp = next(a for a in alerts if a["alert"] == "GpuconfGPUTemperatureHigh")
        assert f"DCGM_FI_DEV_GPU_TEMP > {settings.gpu_temp_celsius}" in temp["expr"]
        assert dcgm_metrics(temp["expr"]) == {"DCGM_FI_DEV_GPU_TEMP"}  # the tree walk sees the selector
        assert str(settings.gpu_temp_celsius) in temp["annotations"]["summary"]
    if settings.xid_errors:
        assert "DCGM_FI_DEV_XID_ERRORS" in next(a for a in alerts if a["alert"] == "GpuconfGPUXidError")["expr"]
    if settings.ecc_double_bit:
        ecc = next(a for a in alerts if a["alert"] == "GpuconfGPUEccDoubleBitError")
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in ecc["expr"]
    if settings.gpus_unavailable and plan.intent.spec.cluster.allocation != "dra":
        unavailable = [a for a in alerts if a["alert"] == "GpuconfGPUsUnavailable"]
        assert sorted(a["labels"]["pool"] for a in unavailable) == sorted(p.name for p in plan.pools)
        for alert, pool in zip(unavailable, plan.pools):
            expr = alert["expr"]
            assert "kube_node_status_allocatable" in expr and "kube_node_labels" in expr
            assert f'label_gpuconf_dev_pool="{pool.name}"' in expr
            for resource in pool.capacity.per_node:  # kube-state-metrics' sanitised resource label
                assert re.sub(r"[^a-zA-Z0-9_]", "_", resource) in expr
            assert "metric-labels-allowlist" in alert["annotations"]["requires"]


#: What each DCGM field an alert reads means, and so how an alert must read it: (Prometheus type, meaning), from
#: profiles/dcgm-metrics.json (the exporter's CSV rows and help texts) and dcgm-exporter facts §3.
METRIC_MEANINGS = {
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "level"),  # GPU temperature (in C): its value against a threshold
    "DCGM_FI_DEV_XID_ERRORS": ("gauge", "last value"),  # value of the last XID error: not a count, a change is news
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("counter", "volatile total"),  # double-bit errors since the driver loaded
}
COMPARISONS = {">", "<", ">=", "<=", "==", "!="}


def compared_metrics(expr: str) -> list[tuple[str, str]]:
    """(metric, how) for every DCGM selector a comparison reads: "bare", or the range function applied to it."""
    import promql_parser as pp

    found: list[tuple[str, str]] = []

    def operand(node) -> None:
        while isinstance(node, pp.ParenExpr):
            node = node.expr
        if isinstance(node, pp.VectorSelector) and (node.name or "").startswith("DCGM_"):
            found.append((node.name, "bare"))
        elif isinstance(node, pp.Call) and node.args and isinstance(node.args[0], pp.MatrixSelector):
            found.append((node.args[0].vector_selector.name, node.func.name))
        else:
            walk(node)

    def walk(node) -> None:
        if isinstance(node, pp.BinaryExpr) and str(node.op) in COMPARISONS:
            operand(node.lhs)
            operand(node.rhs)
            return
        for child in children(node):
            walk(child)

    walk(pp.parse(expr))
    return found


def test_every_alert_reads_its_metrics_as_what_they_mean():
    from gpuconf.render import monitoring

    rows = {r["field"]: r for r in catalog.dcgm_metrics()["rows"]}
    alerts = monitoring.alert_rules(build(ROOT / "examples" / "heterogeneous.yaml"))
    assert {a["alert"] for a in alerts} >= {"GpuconfGPUTemperatureHigh", "GpuconfGPUXidError",
                                            "GpuconfGPUEccDoubleBitError"}
    for alert in alerts:
        for metric in dcgm_metrics(alert["expr"]):
            kind, meaning = METRIC_MEANINGS[metric]  # a new metric in an alert: say here what it means
            assert rows[metric]["type"] == kind, metric
            readings = {how for name, how in compared_metrics(alert["expr"]) if name == metric}
            assert readings, (alert["alert"], metric, "never compared")
            if meaning == "last value":  # its value is an XID code: only a change within a window is a new one
                assert readings == {"changes"}, (alert["alert"], readings)
                assert "not a count" in alert["annotations"]["description"]
            elif meaning == "volatile total":  # any is an error until the driver reloads: say so, or count a window
                assert readings <= {"bare", "increase", "rate"}, (alert["alert"], readings)
                if "bare" in readings:
                    assert "since the driver loaded" in alert["annotations"]["description"]
            else:
                assert readings == {"bare"}, (alert["alert"], readings)


def test_only_enabled_alerts(tmp_path):
    from gpuconf.render import monitoring

    def sub(text, old, new):
        assert old in text
        return text.replace(old, new)

    text = (ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8")
    text = sub(text, "xidErrors: true", "xidErrors: false")
    text = sub(text, "gpusUnavailable: true", "gpusUnavailable: false")
    text = sub(text, "gpuTempCelsius: 85", "gpuTempCelsius: 77")
    rule, metrics = monitoring.render(build_text(tmp_path, text))
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert {a["alert"] for a in alerts} == {"GpuconfGPUTemperatureHigh", "GpuconfGPUEccDoubleBitError"}
    assert "> 77" in alerts[0]["expr"]
    # The double-bit ECC counter is shipped commented out: gpuconf's file adds it after the shipped rows.
    assert metrics["data"]["dcgm-metrics.csv"].endswith(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.\n")

    no_ecc = sub(text, "eccDoubleBit: true", "eccDoubleBit: false")
    rule, metrics = monitoring.render(build_text(tmp_path, no_ecc))
    assert "ECC" not in metrics["data"]["dcgm-metrics.csv"]

    text = sub(text, "eccDoubleBit: true", "eccDoubleBit: false")
    text = sub(text, "gpuTempCelsius: 77", "gpuTempCelsius: null")
    assert monitoring.render(build_text(tmp_path, text)) == []


# --- the read-only merged values and the report's key lookups (issue 32) -----------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEYS = st.sampled_from(["a", "b", "c", "d.e", "driver", "version"])
_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
                       max_leaves=12)
_MAPS = st.dictionaries(_KEYS, _VALUES, max_size=5)


@settings(max_examples=300, deadline=None)
@given(_MAPS, _MAPS)
def test_the_read_only_view_equals_helms_merge_in_key_order_and_leaves_the_defaults_alone(base, override):
    from gpuconf.render.values import copied, merge, overlay

    before = copied(base)
    merged, view = merge(copied(base), override), overlay(base, override)
    assert view == merged
    assert repr(view) == repr(merged)  # the same key order at every level: the emitter and the report walk it
    assert base == before and repr(base) == repr(before)


def test_the_read_only_view_shares_what_the_overrides_leave_alone():
    from gpuconf.render.values import overlay

    base = {"driver": {"version": "570", "repository": {"r": 1}}, "toolkit": {"env": [1]}}
    view = overlay(base, {"driver": {"version": "580"}})
    assert view["toolkit"] is base["toolkit"] and view["driver"]["repository"] is base["driver"]["repository"]
    assert view["driver"] is not base["driver"] and base["driver"]["version"] == "570"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "a.b", "nvidia.com", "x"]), min_size=1, max_size=4),
       st.sampled_from(["a", "b", "a.b", "a.b.x", "nvidia", "nvidia.com", "x", "a.bx", ""]))
def test_the_keys_above_a_values_path_are_those_it_is_under(parts, key):
    from gpuconf.output.report.overrides import _keys_above, _under

    path = ".".join(parts)
    assert (key in _keys_above(path)) == _under(path, key)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4).map(tuple), max_size=25))
def test_a_change_supersedes_every_earlier_change_on_its_branch_as_a_scan_of_all_of_them_would(paths):
    from gpuconf.render.values import ValuesBuilder

    builder, scanned = ValuesBuilder({"a": {"b": 1}}), {}
    for n, parts in enumerate(paths):
        builder.set(parts, n, "why", ("spec",))
        for other in [p for p in scanned if p[:len(parts)] == parts or parts[:len(p)] == p]:
            del scanned[other]
        scanned[parts] = n
    assert [(p, c.value) for p, c in builder.changes.items()] == list(scanned.items())  # the same, in the same order


def test_no_reader_of_the_chart_defaults_a_render_shares_changes_them(tmp_path):
    """A render reads the chart's defaults where the process keeps them, uncopied (the values builder, the read-only
    merged view, the renderers, the checks, the report, the hazard rules): after whole renders of every example
    and of the fleet, in one process, those defaults are still what the chart's facts file says."""
    import json

    from gpuconf.pipeline import render_any

    rendered, versions = 0, set()
    for example in [*EXAMPLES, ROOT / "examples" / "fleet" / "fleet.yaml"]:
        result = render_any(str(example), str(tmp_path / example.stem))
        for tree in result.trees:
            if tree.values is None:
                continue
            assert tree.values.merged_view() == tree.values.merged()
            assert tree.values.defaults is catalog.chart(tree.plan.chart_version).shared_defaults, example.name
            versions.add(tree.plan.chart_version)
            rendered += 1
    assert rendered >= 10
    for version in sorted(versions):
        pristine = json.loads(catalog.data_file(f"charts/{version}.json").read_text(encoding="utf-8"))["defaults"]
        assert catalog.chart(version).shared_defaults == pristine, version


def test_an_override_with_a_map_the_chart_does_not_have_renders(tmp_path, run):
    """An override whose value is a map written inline (`{}`) or as a block, at a path the chart's defaults do not
    hold, renders like any other with a registry mirror too (found by the impact suite's Hypothesis strategies: the
    loader's positioned maps reached the mirror check's walk of the values, which could not reverse their item
    views: an internal error)."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(textwrap.dedent("""\
        apiVersion: gpuconf.dev/v1alpha1
        kind: ClusterIntent
        metadata:
          name: maps
        spec:
          cluster:
            kubernetesVersion: "1.33"
          operator:
            chartVersion: v26.7.0
            registry: registry.corp.example/nvidia
          pools:
            - name: a10
              gpu: A10
              gpusPerNode: 1
              nodes: 1
              match:
                nodeLabels:
                  node.kubernetes.io/instance-type: g5.xlarge
          overrides:
            - path: operator.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution
              value: {}
              why: an empty map, written inline
            - path: operator.resources
              value:
                limits: {cpu: 500m, memory: 350Mi}
              why: a block map holding an inline one
        """), encoding="utf-8")
    result = run("render", str(intent), "-o", str(tmp_path / "out"))
    assert result.exit_code in (0, 1), result.output
    assert "internal error" not in result.output
    values = (tmp_path / "out" / "maps" / "values.yaml").read_text(encoding="utf-8")
    assert "preferredDuringSchedulingIgnoredDuringExecution: {}" in values
    from gpuconf.intent.model import ClusterIntent
    from gpuconf.intent.loader import load_file

    overrides = ClusterIntent.model_validate(load_file(intent, "intent.yaml").data).spec.overrides
    assert [type(o.value) for o in overrides] == [dict, dict]
    assert type(overrides[1].value["limits"]) is dict

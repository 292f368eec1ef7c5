"""`gpuconf import --values/--set/--configmap` (issue 19): Helm's --set syntax, one outcome per values path, the
draft's behaviour proven by the effective values of its render, input errors, and `diff --against-values`.

Each folder of tests/fixtures/adopt is one shape of values file people commit, with the import's report and draft as
golden files (GPUCONF_REGEN=1 rewrites them; review the diff).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from gpuconf.adopt import mapping as M
from gpuconf.adopt import sources as S
from gpuconf.adopt import strvals
from gpuconf.findings import dotted

FIXTURES = Path(__file__).parent / "fixtures" / "adopt"
SHAPES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
REGEN = os.environ.get("GPUCONF_REGEN") == "1"


# --- Helm's --set ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argument, expected", [
    ("a.b=c,d=e", {"a": {"b": "c"}, "d": "e"}),
    (r"nodeSelector.nvidia\.com/gpu\.present=true", {"nodeSelector": {"nvidia.com/gpu.present": True}}),
    ("a={x,2,true}", {"a": ["x", 2, True]}),
    ("a[0]=x,a[2].b=3", {"a": ["x", None, {"b": 3}]}),
    ("a[0][1]=x", {"a": [[None, "x"]]}),
    # typedVal: only true/false/null (any case), 0 and decimal integers without a leading 0 are typed.
    ("a=01,b=1.5,c=NULL,d=-3,e=TRUE,f=0,g=1e3,h=", {"a": "01", "b": "1.5", "c": None, "d": -3, "e": True, "f": 0,
                                                   "g": "1e3", "h": ""}),
    (r"x=a\,b", {"x": "a,b"}),
    ("version=590", {"version": 590}),
    ("a=9223372036854775808", {"a": "9223372036854775808"}),  # beyond int64: ParseInt fails, a string
])
def test_set_follows_helms_strvals(argument, expected):
    found: dict = {}
    strvals.parse_into(argument, found)
    assert found == expected


def test_set_string_keeps_every_value_a_string():
    found: dict = {}
    strvals.parse_into("a=true,b=5", found, strings=True)
    assert found == {"a": "true", "b": "5"}


@pytest.mark.parametrize("argument, message", [
    ("a", "key 'a' has no value"),
    ("a,b=c", "key 'a' has no value (cannot end with ,)"),
    ("a={x,y", "list must terminate with '}'"),
    ("a[-1]=x", "negative -1 index not allowed"),
    ("a[x]=1", "index 'x' is not a number"),
    ("a[70000]=1", "greater than Helm's maximum of 65536"),
])
def test_set_refuses_what_helm_refuses(argument, message):
    with pytest.raises(strvals.SetError, match=None) as caught:
        strvals.parse_into(argument, {})
    assert message in str(caught.value)


def test_set_into_merged_values_nests_into_existing_maps_and_refuses_a_scalar():
    merged, sources = S.merge_inputs([S.ValuesInput("v.yaml", {"driver": {"enabled": True}}, {("driver",): 1}),
                                      S.ValuesInput("--set driver.version=580.95.05", {})])
    assert merged == {"driver": {"enabled": True, "version": "580.95.05"}}
    assert sources == {("driver", "enabled"): "v.yaml:1", ("driver", "version"): "--set driver.version=580.95.05"}
    with pytest.raises(S.InputError, match="holds a value, not a map"):
        S.merge_inputs([S.ValuesInput("v.yaml", {"driver": 5}), S.ValuesInput("--set driver.version=1", {})])


def test_later_files_win_maps_merge_lists_replace_and_null_deletes_a_default():
    first = S.ValuesInput("a.yaml", {"x": {"a": 1, "b": [1, 2]}, "y": 1})
    second = S.ValuesInput("b.yaml", {"x": {"b": [3]}, "y": None})
    merged, _ = S.merge_inputs([first, second])
    assert merged == {"x": {"a": 1, "b": [3]}, "y": None}
    assert S.coalesce({"y": 5, "z": {"k": 1}}, merged) == {"x": {"a": 1, "b": [3]}, "z": {"k": 1}}


# --- the shapes --------------------------------------------------------------------------------------------------


def _args(shape: str) -> list[str]:
    folder = FIXTURES / shape
    extra = json.loads((folder / "args.json").read_text()) if (folder / "args.json").exists() else []
    files = sorted(p.name for p in folder.glob("values*.yaml"))
    return [a for name in files for a in ("--values", name)] + extra


def _import(run, shape: str, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(FIXTURES / shape)
    draft, report = tmp_path / "intent.yaml", tmp_path / "report.json"
    result = run("import", *_args(shape), "-o", str(draft), "--report", str(report))
    return result, draft, report


def _golden(path: Path, text: str) -> None:
    if REGEN:
        path.write_text(text)
    assert path.exists(), f"{path} is missing: GPUCONF_REGEN=1 writes it"
    assert text == path.read_text(), f"{path} differs (GPUCONF_REGEN=1 rewrites it; review the diff)"


@pytest.mark.parametrize("shape", SHAPES)
def test_import_shape_matches_its_golden_report_and_draft(run, shape, tmp_path, monkeypatch):
    result, draft, report = _import(run, shape, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.stderr
    beside = draft.parent / "cluster-intent.schema.json"  # the schema the draft's first line names, for editors
    assert result.stderr.splitlines()[-1] == f"wrote {draft} and {beside} (the schema editors read): the draft " \
                                             f"validates; review it, then run: gpuconf validate {draft}"
    data = json.loads(report.read_text())
    assert {row["outcome"] for row in data["settings"]} <= set(M.OUTCOMES)
    assert data["draftValid"] is True
    paths = [row["path"] for row in data["settings"]]
    assert len(paths) == len(set(paths)), "every values path has exactly one outcome"
    _golden(FIXTURES / shape / "expected-report.json", report.read_text())
    _golden(FIXTURES / shape / "expected-intent.yaml", draft.read_text())
    assert run("validate", str(draft)).exit_code == 0


def _user_values(shape: str) -> dict:
    """What Helm merged from the shape's files and --set arguments (the installation's own values)."""
    folder = FIXTURES / shape
    inputs = [S.read_values_file(str(folder / name), name) for name in sorted(p.name for p in
                                                                             folder.glob("values*.yaml"))]
    args = _args(shape)
    inputs += [S.ValuesInput(f"--set {args[i + 1]}", {}) for i, a in enumerate(args) if a == "--set"]
    merged, _ = S.merge_inputs(inputs)
    inner = merged.get(S.PARENT_KEY)
    return inner if isinstance(inner, dict) and "global" in merged else merged


@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip_differs_only_where_the_report_says_changed_or_dropped(run, shape, tmp_path, monkeypatch):
    result, draft, report = _import(run, shape, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "out"
    rendered = run("render", str(draft), "-o", str(out))
    assert rendered.exit_code == 0, rendered.stderr
    data = json.loads(report.read_text())
    version = data["chartVersion"]
    from gpuconf import catalog

    defaults = catalog.chart(version).defaults
    values = yaml.safe_load((out / "imported" / "values.yaml").read_text()) or {}
    rows = M.differing(S.coalesce(defaults, _user_values(shape)), S.coalesce(defaults, values))
    settled = {row["path"] for row in data["settings"] if row["outcome"] in ("changed", "dropped")}
    assert rows, "gpuconf always sets its own device-plugin ConfigMap: some leaf differs"
    for path, old, new in rows:
        covering = {dotted(path[:n]) for n in range(1, len(path) + 1)}
        below = {p for p in settled if p.startswith(dotted(path))}
        assert covering & settled or below, f"{dotted(path)}: {M.shown(old)} -> {M.shown(new)} is not reported"
    # Every reported change or drop is a leaf that really differs (no false alarms either).
    differing = {dotted(p[:n]) for p, _, _ in rows for n in range(1, len(p) + 1)}
    outside = {row["path"] for row in data["settings"] if row["why"].startswith("a value of the parent chart")}
    for path in settled - outside:
        assert path in differing or any(d.startswith(path) for d in differing), path


@pytest.mark.parametrize("shape", [s for s in SHAPES if "--set" not in _args(s)])
def test_diff_against_values_lists_exactly_the_reported_leaves(run, shape, tmp_path, monkeypatch):
    result, draft, report = _import(run, shape, tmp_path, monkeypatch)
    diff = run("diff", str(draft), "--against-values", "values.yaml", "--format", "json")
    assert diff.exit_code == 1
    leaves = json.loads(diff.stdout)["leaves"]
    settled = {row["path"] for row in json.loads(report.read_text())["settings"]
               if row["outcome"] in ("changed", "dropped")}
    for leaf in leaves:
        path = leaf["path"]
        assert any(path == p or path.startswith(p + ".") or path.startswith(p + "[") or p.startswith(path)
                   for p in settled), path


def test_the_default_sharing_config_stays_the_default_of_every_gpu_node(run, tmp_path, monkeypatch):
    result, draft, _ = _import(run, "timeslicing-default", tmp_path, monkeypatch)
    intent = yaml.safe_load(draft.read_text())
    (pool,) = intent["spec"]["pools"]
    assert pool["match"] == {"pciDevice": True} and pool["sharing"] == "any"
    assert intent["spec"]["sharingProfiles"]["any"] == {"timeSlicing": {"replicas": 4}}
    assert "# the default device-plugin config 'any' applied to every GPU node" in draft.read_text()


def test_named_configs_stay_selectable_by_their_label_values(run, tmp_path, monkeypatch):
    result, draft, _ = _import(run, "named-configs", tmp_path, monkeypatch)
    pools = {p["name"]: p for p in yaml.safe_load(draft.read_text())["spec"]["pools"]}
    assert {n: (p["match"], p["sharing"]) for n, p in pools.items()} == {
        name: ({"nodeLabels": {"nvidia.com/device-plugin.config": name}}, name)
        for name in ("tesla-t4", "a10-x2", "mps-l4")}
    profiles = yaml.safe_load(draft.read_text())["spec"]["sharingProfiles"]
    assert profiles["tesla-t4"] == {"timeSlicing": {"replicas": 4, "renameByDefault": True}}
    assert profiles["a10-x2"] == {"timeSlicing": {"replicas": 2, "failRequestsGreaterThanOne": True}}
    assert profiles["mps-l4"] == {"mps": {"replicas": 8, "renameByDefault": False}}


def test_operand_tolerations_and_node_selectors_are_kept(run, tmp_path, monkeypatch):
    result, draft, report = _import(run, "timeslicing-default", tmp_path, monkeypatch)
    rows = {row["path"]: row for row in json.loads(report.read_text())["settings"]}
    assert rows["daemonsets.tolerations"]["outcome"] == "override"
    assert rows["daemonsets.tolerations"]["why"] == "carried over from values.yaml:25"
    assert rows['node-feature-discovery.worker.nodeSelector["nvidia.com/gpu.present"]']["outcome"] == "override"
    assert rows["dcgmExporter.tolerations"]["outcome"] == "dropped"


# --- inputs that are not values ----------------------------------------------------------------------------------


NOT_VALUES = {
    "nodelist.json": (json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": []}),
                      "a Kubernetes NodeList (v1), not Helm values; nodes go to --nodes"),
    "secret.yaml": ("apiVersion: v1\nkind: Secret\nmetadata: {name: sh.helm.release.v1.gpu-operator.v3}\n"
                    "type: helm.sh/release.v1\ndata: {release: SDRzSUFBQUFBQUFBLw==}\n",
                    "a Kubernetes Secret (v1), not Helm values; a Helm release Secret is read from the cluster"),
    "binary.bin": (b"\x1f\x8b\x08\x08\xd2\x9e\x81\x66\xff\x03", "not UTF-8 text (byte 1): binary data"),
    "nul.yaml": (b"driver:\n  enabled: true\x00\n", "binary data (a NUL byte at offset 23)"),
    "manifests.yaml": ("a: 1\n---\nb: 2\n", "holds 2 YAML documents; a values file holds one"),
    "list.yaml": ("- a\n- b\n", "the document is a list, not a map of values"),
    "broken.yaml": ("driver:\n  version: [590\n", "not YAML"),
}


@pytest.mark.parametrize("name", sorted(NOT_VALUES))
def test_a_file_that_is_not_values_is_an_input_error(run, tmp_path, name):
    content, message = NOT_VALUES[name]
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = run("import", "--values", str(path), "-o", str(tmp_path / "intent.yaml"))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"gpuconf: {path}") and message in result.stderr
    assert not (tmp_path / "intent.yaml").exists()


def test_a_bad_set_argument_and_an_unknown_chart_are_usage_errors(run, tmp_path):
    result = run("import", "--set", "driver.version")
    assert result.exit_code == 2 and result.stderr == "gpuconf: --set driver.version: key 'version' has no value\n"
    result = run("import", "--set", "a=1", "--chart-version", "v1.0.0")
    assert result.exit_code == 2 and "no facts for GPU Operator chart 'v1.0.0'" in result.stderr


# --- no input makes import fail with an internal error ------------------------------------------------------------

_KEYS = st.sampled_from(["driver", "version", "enabled", "devicePlugin", "config", "name", "default", "data",
                         "toolkit", "env", "daemonsets", "tolerations", "mig", "strategy", "gpu-operator",
                         "dcgmExporter", "serviceMonitor", "additionalLabels", "interval", "nvidia.com/gpu",
                         "upgradePolicy", "drain", "maxUnavailable", "x", "0"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2 ** 40), st.floats(allow_nan=True),
                     st.text(max_size=12), st.sampled_from(["590", "570.10", "single", "mixed", "cdi", "30s", "25%",
                                                            "version: v1\nsharing: {timeSlicing: {resources: "
                                                            "[{name: nvidia.com/gpu, replicas: 3}]}}"]))
_TREES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(tree=st.dictionaries(_KEYS, _TREES, max_size=5),
       sets=st.lists(st.text(alphabet="ab.=,{}[]0\\x1-", max_size=12), max_size=2))
def test_no_values_make_import_fail_internally(run, tmp_path, tree, sets):
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(tree))
    args = [a for s in sets for a in ("--set", s)]
    draft, report = tmp_path / "intent.yaml", tmp_path / "report.json"
    draft.unlink(missing_ok=True)
    result = run("import", "--values", str(path), *args, "-o", str(draft), "--report", str(report))
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        return
    assert "the draft validates" in result.stderr
    # The proof holds for any input: every leaf where the render's effective values differ is reported.
    from gpuconf import catalog
    from gpuconf.pipeline import render_path

    data = json.loads(report.read_text())
    defaults = catalog.chart(data["chartVersion"]).defaults
    user, _ = S.merge_inputs([S.read_values_file(str(path))] + [S.ValuesInput(f"--set {s}", {}) for s in sets])
    rendered = render_path(str(draft), str(tmp_path / "out")).tree.values.overrides()
    settled = {row["path"] for row in data["settings"] if row["outcome"] in ("changed", "dropped")}
    for leaf, old, new in M.differing(S.coalesce(defaults, S.unwrapped(user, defaults)),
                                      S.coalesce(defaults, rendered)):
        assert any(dotted(leaf[:n]) in settled for n in range(1, len(leaf) + 1)) or any(
            p.startswith(dotted(leaf)) for p in settled), (dotted(leaf), old, new)


def test_the_migration_guides_two_commands_pass(run, tmp_path, monkeypatch):
    import re
    import shlex

    root = Path(__file__).parent.parent
    guide = (root / "docs" / "how-to" / "migrate.md").read_text()
    block = re.search(r"## From hand-written values\n\n```sh\n(.*?)```", guide, re.DOTALL).group(1)
    first, second = [shlex.split(line) for line in block.strip().splitlines()]
    assert first[:2] == ["gpuconf", "import"] and second[:2] == ["gpuconf", "diff"]
    monkeypatch.chdir(tmp_path)
    absolute = [str(root / a) if a.startswith("tests/") else a for a in first[1:]]
    imported = run(*absolute)
    assert imported.exit_code == 0
    assert (tmp_path / "intent.yaml").exists() and (tmp_path / "import-report.json").exists()
    compared = run(*[str(root / a) if a.startswith("tests/") else a for a in second[1:]])
    assert compared.exit_code == 1  # the reported leaves differ
    reported = {r["path"] for r in json.loads((tmp_path / "import-report.json").read_text())["settings"]
                if r["outcome"] in ("changed", "dropped")}
    for line in compared.stdout.splitlines()[:-1]:
        assert any(line.startswith(p + ":") or line.startswith(p + "[") for p in reported), line


# --- a live cluster: the Helm release Secret, the ClusterPolicy, NVIDIADrivers, the named ConfigMap --------------


def _release_secret(values: dict, revision: int = 2, chart: str = "gpu-operator", version: str = "v26.3.3") -> dict:
    """A release Secret as the API returns it: Helm's base64(gzip(JSON)), base64-encoded again as Secret data."""
    import base64
    import gzip

    release = {"name": "gpu-operator", "namespace": "gpu-operator", "version": revision, "config": values,
               "chart": {"metadata": {"name": chart, "version": version}}, "info": {"status": "deployed"}}
    helm = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    return {"metadata": {"name": f"sh.helm.release.v1.gpu-operator.v{revision}", "namespace": "gpu-operator",
                         "labels": {"owner": "helm", "name": "gpu-operator", "status": "deployed",
                                    "version": str(revision)}},
            "type": "helm.sh/release.v1", "data": {"release": base64.b64encode(helm.encode()).decode()}}


def _cluster(tmp_path, objects: dict):
    from test_audit import FakeApiServer, _clean, _kubeconfig

    api = FakeApiServer(_clean("single-pool"), objects=objects)
    return api, lambda: _kubeconfig(tmp_path, api.port)


def test_import_from_a_live_cluster_reads_the_release_values_and_their_configmap(run, tmp_path):
    values = yaml.safe_load((FIXTURES / "timeslicing-default" / "values.yaml").read_text())
    configmap = yaml.safe_load((FIXTURES / "timeslicing-default" / "configmap.yaml").read_text())
    objects = {
        "/api/v1/secrets": {"kind": "SecretList", "apiVersion": "v1", "metadata": {},
                            "items": [_release_secret(values, 1), _release_secret(values, 2),
                                      _release_secret({"x": 1}, 1, chart="cert-manager")]},
        "/api/v1/namespaces/gpu-operator/configmaps/time-slicing-config": configmap,
        "/apis/nvidia.com/v1alpha1/nvidiadrivers": {"items": [
            {"metadata": {"name": "l40s"}, "spec": {"version": "580.95.05", "nodeSelector": {"pool": "l40s"}}}]},
    }
    api, kubeconfig = _cluster(tmp_path, objects)
    with api:
        report = tmp_path / "report.json"
        result = run("import", "--kubeconfig", kubeconfig(), "--report", str(report))
    assert result.exit_code == 0, result.stderr
    assert {m for m, _, _ in api.requests} == {"GET"}
    paths = {p for _, p, _ in api.requests}
    assert {"/api/v1/nodes", "/api/v1/secrets", "/apis/nvidia.com/v1/clusterpolicies",
            "/apis/nvidia.com/v1alpha1/nvidiadrivers",
            "/api/v1/namespaces/gpu-operator/configmaps/time-slicing-config"} == paths
    data = json.loads(report.read_text())
    assert data["chartVersion"] == "v26.3.3"  # the release's chart
    source = "Secret gpu-operator/sh.helm.release.v1.gpu-operator.v2 (release gpu-operator revision 2)"
    rows = {r["path"]: r for r in data["settings"]}
    assert rows["daemonsets.tolerations"]["why"] == f"carried over from {source}"
    assert rows["compatWithCPUManager"]["outcome"] == "dropped"
    assert "NVIDIADriver/l40s: driver 580.95.05 for nodeSelector {\"pool\": \"l40s\"}" in data["notes"][1]
    assert data["notes"][0] == "ClusterPolicies (nvidia.com/v1): not read (404 Not Found)"
    # The nodes drafted the pools; the release's values the rest.
    intent = yaml.safe_load(result.stdout)
    assert intent["spec"]["pools"][0]["gpu"] == "L40S"
    assert [o["path"] for o in intent["spec"]["overrides"]] == [
        "driver.version", "daemonsets.tolerations", "node-feature-discovery.worker.nodeSelector"]


def test_import_from_a_cluster_without_a_release_reads_the_cluster_policy(run, tmp_path):
    policy = {"metadata": {"name": "cluster-policy"},
              "spec": {"driver": {"enabled": False}, "mig": {"strategy": "single"},
                       "migManager": {"config": {"name": "custom-mig-config", "default": "all-disabled"}},
                       "toolkit": {"env": [{"name": "CONTAINERD_SOCKET",
                                            "value": "/run/k3s/containerd/containerd.sock"},
                                           {"name": "CONTAINERD_CONFIG",
                                            "value": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"}]}}}
    mig = yaml.safe_load((FIXTURES / "mig-configs" / "configmap.yaml").read_text())
    objects = {"/api/v1/secrets": {"items": []}, "/apis/nvidia.com/v1/clusterpolicies": {"items": [policy]},
               "/api/v1/namespaces/gpu-operator/configmaps/custom-mig-config": mig}
    api, kubeconfig = _cluster(tmp_path, objects)
    with api:
        report = tmp_path / "report.json"
        result = run("import", "--kubeconfig", kubeconfig(), "--report", str(report))
    assert result.exit_code == 0, result.stderr
    # No Helm release: the installed release is the one the GPU nodes run, in the words of every import path.
    assert "chartVersion: v26.3.3  # the gpu-operator image (the validator) the GPU nodes run" in result.stdout
    rows = {r["path"]: r for r in json.loads(report.read_text())["settings"]}
    assert rows["driver.enabled"]["outcome"] == "mapped" and rows["driver.enabled"]["source"] == \
        "ClusterPolicy/cluster-policy"
    assert rows["toolkit.env"]["to"] == "spec.cluster.distribution"
    assert yaml.safe_load(result.stdout)["spec"]["cluster"]["distribution"] == "k3s"
    assert ("GET", "/api/v1/namespaces/gpu-operator/configmaps/custom-mig-config") in {
        (m, p) for m, p, _ in api.requests}
    assert rows["migManager.config.name"]["why"].startswith("gpuconf sets migManager.config itself")


@pytest.mark.parametrize("secret, why", [
    ({"type": "helm.sh/release.v1", "data": {"release": "Ym05MElHcHpiMjQ9"}}, "its release is not JSON"),
    ({"type": "helm.sh/release.v1", "data": {"release": "!!"}}, "not base64 text of Helm's encoding"),
])
def test_a_release_secret_that_does_not_decode_is_said_and_skipped(secret, why):
    from gpuconf.adopt.cluster import release_values

    with pytest.raises(ValueError, match=why):
        release_values(secret)


def test_what_the_intent_field_refuses_is_carried_and_what_the_chart_refuses_is_not(run, tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("driver:\n  upgradePolicy:\n    maxUnavailable: 101%\n    maxParallelUpgrades: -1\n")
    report = tmp_path / "report.json"
    result = run("import", "--values", str(path), "--report", str(report))
    assert result.exit_code == 0, result.stderr
    rows = {r["path"]: r for r in json.loads(report.read_text())["settings"]}
    assert rows["driver.upgradePolicy.maxUnavailable"]["outcome"] == "override"
    assert rows["driver.upgradePolicy.maxUnavailable"]["why"] == (
        f"carried over from {path}:3 (GC207: the intent field spec.driver.upgrade.maxUnavailable refuses it)")
    assert rows["driver.upgradePolicy.maxParallelUpgrades"] == {
        "path": "driver.upgradePolicy.maxParallelUpgrades", "outcome": "changed", "to": None, "source": f"{path}:4",
        "value": -1, "why": "not carried: GC343 -1 is less than the minimum of 0 (chart value "
                            "driver.upgradePolicy.maxParallelUpgrades)"}


def test_values_no_intent_file_can_hold_are_reported_not_carried(run, tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text('driver:\n  repository: "nvcr.io/nvidia\\x1f"\ntoolkit:\n  env:\n  - {name: CONTAINERD_SOCKET, '
                    'value: "/run/\\x1fcontainerd.sock"}\ndcgmExporter:\n  serviceMonitor:\n    additionalLabels:\n'
                    '      "team\\x01": ml\n')
    report = tmp_path / "report.json"
    result = run("import", "--values", str(path), "--report", str(report))
    assert result.exit_code == 0, result.stderr
    rows = {r["path"]: r for r in json.loads(report.read_text())["settings"]}
    refused = "not carried: an intent file cannot hold this value (value contains a control character)"
    for key in ("driver.repository", "toolkit.env", 'dcgmExporter.serviceMonitor.additionalLabels["team\\u0001"]'):
        assert rows[key]["outcome"] == "changed" and rows[key]["why"] == refused, key


def test_values_with_nodes_take_the_pools_from_the_nodes(run, tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES / "timeslicing-default")
    nodes = Path(__file__).parent / "fixtures" / "nodes" / "heterogeneous.json"
    report = tmp_path / "report.json"
    result = run("import", "--nodes", str(nodes), "--values", "values.yaml", "--configmap", "configmap.yaml",
                 "--report", str(report))
    assert result.exit_code == 0, result.stderr
    intent = yaml.safe_load(result.stdout)
    assert sorted(p["name"] for p in intent["spec"]["pools"]) == ["infer-a100", "notebooks-l4", "train-h100"]
    assert 'version: "595.91.07"' in result.stdout  # the nodes' draft keeps its quoting
    assert [o["path"] for o in intent["spec"]["overrides"]] == [
        "driver.version", "daemonsets.tolerations", "node-feature-discovery.worker.nodeSelector"]
    rows = {r["path"]: r for r in json.loads(report.read_text())["settings"]}
    assert rows["devicePlugin.config.default"]["why"].startswith(
        "gpuconf renders its own device-plugin ConfigMap (gpuconf-device-plugin-config) with content-addressed keys; "
        "the pools' sharing comes from the nodes' GFD labels")
    assert run("validate", "-", input=result.stdout).exit_code == 0


def test_diff_against_a_folder_gpuconf_did_not_render_compares_effective_values(run, tmp_path, monkeypatch):
    result, draft, report = _import(run, "k3s", tmp_path, monkeypatch)
    hand = tmp_path / "hand" / "imported"
    hand.mkdir(parents=True)
    # A hand-made folder: the values as committed, with keys equal to the chart's defaults written out.
    committed = (FIXTURES / "k3s" / "values.yaml").read_text()
    (hand / "values.yaml").write_text(committed.replace("driver:\n", "driver:\n  enabled: true\n"))
    (hand / "configmap.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    diff = run("diff", str(draft), "--against", str(tmp_path / "hand"))
    assert diff.exit_code == 1
    lines = diff.stdout.splitlines()
    assert not any(line.startswith("driver.enabled") for line in lines)  # a default is no loss
    assert lines[-1] == (f"effective values: 5 leaves differ between {hand}/values.yaml and {draft} "
                         "(chart v26.7.0)")
    settled = {r["path"] for r in json.loads(report.read_text())["settings"] if r["outcome"] in ("changed", "dropped")}
    for line in lines[:-1]:
        assert any(line.startswith(p + ":") or line.startswith(p + "[") for p in settled), line
    assert diff.stderr == (f"gpuconf: {hand} was not rendered by gpuconf (no .gpuconf-files): its values.yaml is "
                           "compared as effective values (the chart's defaults merged in); its other files are not "
                           "compared\n")


def test_named_mig_configs_become_mig_pools_selected_by_their_label(run, tmp_path, monkeypatch):
    result, draft, report = _import(run, "mig-configs", tmp_path, monkeypatch)
    spec = yaml.safe_load(draft.read_text())["spec"]
    assert {p["name"]: p["match"] for p in spec["pools"]} == {
        "inference-7x1g": {"nodeLabels": {"nvidia.com/mig.config": "inference-7x1g"}},
        "train-2x3g": {"nodeLabels": {"nvidia.com/mig.config": "train-2x3g"}}}
    assert spec["sharingProfiles"]["train-2x3g"] == {"mig": {"layout": {"3g.40gb": 2}}}
    configs = {c["config"]: c for c in json.loads(report.read_text())["configs"]}
    assert configs["half-and-half"]["why"] == ("not expressible as a MIG layout (not one entry for all devices "
                                               "(per-device or per-model layouts))")
    assert configs["all-disabled"]["outcome"] == "changed"


def test_set_string_comes_after_every_set_and_keeps_its_values_strings(run, tmp_path):
    report = tmp_path / "report.json"
    result = run("import", "--set-string", "driver.version=580.95.05,toolkit.env[0].name=X,toolkit.env[0].value=1",
                 "--set", "driver.version=1,toolkit.env[0].name=Y", "--report", str(report))
    assert result.exit_code == 0, result.stderr
    rows = {r["path"]: r for r in json.loads(report.read_text())["settings"]}
    assert rows["driver.version"]["value"] == "580.95.05" and rows["driver.version"]["outcome"] == "mapped"
    assert rows["driver.version"]["source"] == ("--set-string driver.version=580.95.05,toolkit.env[0].name=X,"
                                                "toolkit.env[0].value=1")
    assert rows["toolkit.env"]["value"] == [{"name": "X", "value": "1"}]
    bad = run("import", "--set-string", "a")
    assert bad.exit_code == 2 and bad.stderr == "gpuconf: --set-string a: key 'a' has no value\n"


def test_a_named_configmap_that_was_not_given_is_not_called_whole_gpus(run, tmp_path):
    """Values that name a device-plugin ConfigMap the import did not get: the draft's pool says its sharing is
    unknown, not that the values have no sharing config."""
    values = tmp_path / "values.yaml"
    values.write_text("devicePlugin:\n  config:\n    name: time-slicing-config\n    default: any\n", encoding="utf-8")
    result = run("import", "--values", str(values), "-o", str(tmp_path / "draft.yaml"))
    assert result.exit_code == 0, result.output
    draft = (tmp_path / "draft.yaml").read_text(encoding="utf-8")
    assert ("# the values name the device-plugin ConfigMap 'time-slicing-config', which was not given (--configmap "
            "FILE): its sharing is unknown, so this pool shares nothing until you import it.") in draft
    assert "no sharing config in the values" not in draft


def test_a_configmap_name_with_a_line_break_stays_in_its_comment(run, tmp_path):
    """The pool's note quotes the ConfigMap name the values give; a line break in it cannot start YAML of its own."""
    values = tmp_path / "values.yaml"
    values.write_text('devicePlugin:\n  config:\n    name: "cfg\\nnodes: 999"\n    default: any\n', encoding="utf-8")
    result = run("import", "--values", str(values), "-o", str(tmp_path / "draft.yaml"))
    assert result.exit_code in (0, 1), result.output
    text = (tmp_path / "draft.yaml").read_text(encoding="utf-8")
    assert "# the values name the device-plugin ConfigMap 'cfg\\nnodes: 999', which was not given" in text
    assert not any(line.strip() == "nodes: 999" or line.startswith("nodes: 999") for line in text.splitlines())
    from ruamel.yaml import YAML

    assert YAML(typ="safe").load(text)["spec"]["pools"][0]["nodes"] == 1

"""The intent is what the cluster does (issue 10): the output read the way the chart, the operator, server-side
apply and the exporter read it, and the semantic check that fails (exit 3, nothing written) when a fix regresses."""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from conftest import EXAMPLES, ROOT

YAML11 = YAML(typ="safe", pure=True)
HYBRID = ROOT / "examples" / "hybrid.yaml"
HETEROGENEOUS = ROOT / "examples" / "heterogeneous.yaml"


def _docs(text):
    return [d for d in YAML11.load_all(text) if d is not None]


def _tree(path: Path | str):
    from gpuconf.pipeline import render_path

    rendered = render_path(str(path), "out")
    assert rendered.ok, rendered.findings
    return rendered.tree


def _edited(tmp_path, source: Path, *pairs: tuple[str, str], name: str = "intent.yaml") -> Path:
    text = source.read_text(encoding="utf-8")
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    out = tmp_path / name
    out.write_text(text, encoding="utf-8")
    return out


# --- the chart's templates, modelled -----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "empty"), [(None, True), (False, True), (0, True), (0.0, True), ("", True),
                                              ([], True), ({}, True), (True, False), (1, False), ("0", False),
                                              ("0%", False), ([0], False), ({"a": None}, False)])
def test_helm_default_replaces_exactly_the_empty_values(value, empty):
    from gpuconf.render import chart

    assert chart.empty(value) is empty
    assert chart.default(value, "25%") == ("25%" if empty else value)


def test_the_chart_turns_max_unavailable_zero_into_25_percent():
    from gpuconf import catalog
    from gpuconf.render import chart
    from gpuconf.render.values import merge

    defaults = catalog.chart("v26.7.0").defaults
    zero = merge(copy.deepcopy(defaults), {"driver": {"upgradePolicy": {"maxUnavailable": 0}}})
    assert chart.upgrade_policy(zero)["maxUnavailable"] == "25%"
    percent = merge(copy.deepcopy(defaults), {"driver": {"upgradePolicy": {"maxUnavailable": "0%"}}})
    assert chart.upgrade_policy(percent)["maxUnavailable"] == "0%"


def test_unquoted_selectors_read_back_as_yaml_does():
    from gpuconf.render import chart

    assert chart.unquoted("app in (a,b)", "x") == "app in (a,b)"
    assert chart.unquoted("true", "x") is True
    with pytest.raises(chart.TemplateError, match="YAML cannot read it back"):
        chart.unquoted("!batch", "x")
    with pytest.raises(chart.TemplateError, match="as a map"):
        chart.unquoted("a: b", "x")


# --- defect 1: per-pool drivers carry the intent's upgrade policy --------------------------------------------------


def _nvd_schema_fields(node: dict, prefix: str = "") -> set[str]:
    out = set()
    for key, sub in (node.get("properties") or {}).items():
        out.add(prefix + key)
        out |= _nvd_schema_fields(sub, prefix + key + ".")
    return out


def test_every_nvidiadriver_carries_the_intents_policy_with_the_crds_field_names():
    from gpuconf.render import chart

    tree = _tree(HYBRID)
    intent = tree.plan.intent.spec.driver.upgrade
    schema = json.loads((ROOT / "schemas" / "crds" / "nvidia.com_nvidiadriver_v1alpha1.json").read_text())
    allowed = _nvd_schema_fields(schema["properties"]["spec"]["properties"]["upgradePolicy"])
    drivers = _docs(tree.files["manifests/nvidia-drivers.yaml"])
    assert len(drivers) == 3
    for driver in drivers:
        policy = driver["spec"]["upgradePolicy"]
        fields = {f"{k}.{s}" if isinstance(v, dict) else k for k, v in policy.items()
                  for s in (v if isinstance(v, dict) else [None])}
        assert fields <= allowed, fields - allowed
        effective = chart.effective_nvd_policy(driver["spec"])
        assert (effective["autoUpgrade"], effective["maxParallelUpgrades"], effective["maxUnavailable"]) == \
            (intent.auto_upgrade, intent.max_parallel, intent.max_unavailable)
        assert effective["podDeletion"]["timeoutSeconds"] == intent.pod_deletion.timeout_seconds == 600
        assert effective["waitForCompletion"] == {"podSelector": "app.kubernetes.io/component=training",
                                                  "timeoutSeconds": 3600}
        # The pool's NVIDIADriver also carries what the chart's default one would: manager, probes, precompiled.
        assert driver["spec"]["manager"]["image"] == "k8s-driver-manager" and "startupProbe" in driver["spec"]


def test_autoupgrade_off_and_drain_reach_every_nvidiadriver(tmp_path):
    intent = _edited(tmp_path, HYBRID, ("      autoUpgrade: true\n", "      autoUpgrade: false\n      drain:\n"
                                        "        enable: true\n        timeoutSeconds: 1200\n"))
    for driver in _docs(_tree(intent).files["manifests/nvidia-drivers.yaml"]):
        policy = driver["spec"]["upgradePolicy"]
        assert policy["autoUpgrade"] is False and policy["drain"]["enable"] is True
        assert policy["drain"]["timeoutSeconds"] == 1200


def test_report_says_where_the_policy_lives():
    report = json.loads(_tree(HYBRID).files["report.json"])["upgrade"]
    assert report["mode"] == "nvidiadriver"
    assert "`gpuconf-batch-h100`, `gpuconf-new-h200`, `gpuconf-viz-l40s`" in report["where"]
    single = json.loads(_tree(ROOT / "examples" / "single-pool.yaml").files["report.json"])["upgrade"]
    assert single["mode"] == "clusterpolicy"


# --- defect 2: maxUnavailable 0 -------------------------------------------------------------------------------------


def test_max_unavailable_zero_is_rendered_as_zero_percent(tmp_path):
    intent = _edited(tmp_path, HETEROGENEOUS, ('      maxUnavailable: "25%"\n', "      maxUnavailable: 0\n"))
    tree = _tree(intent)
    values = YAML11.load(tree.files["values.yaml"])
    assert values["driver"]["upgradePolicy"]["maxUnavailable"] == "0%"
    assert '"0%" because the chart\'s template turns 0 into its default 25%' in tree.files["values.yaml"]
    for driver in _docs(tree.files["manifests/nvidia-drivers.yaml"]):
        assert driver["spec"]["upgradePolicy"]["maxUnavailable"] == "0%"
    report = json.loads(tree.files["report.json"])["upgrade"]
    assert report["policy"]["maxUnavailable"] == "0%"
    assert any("rendered as `\"0%\"`" in note for note in report["notes"])
    assert "rendered as `\"0%\"`" in tree.files["REPORT.md"]


MINIMAL = """apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: lab
spec:
  cluster:
    kubernetesVersion: "1.33"
  operator:
    chartVersion: v26.7.0
  pools:
    - name: train
      gpu: H100-80GB
      gpusPerNode: 8
      nodes: 2
      match:
        pciDevice: true
"""


@pytest.mark.parametrize(("path", "value", "refused"), [
    ("driver.upgradePolicy.maxUnavailable", "0", True),
    ("driver.upgradePolicy.maxUnavailable", '"0%"', False),
    ("driver.upgradePolicy.maxUnavailable", "1", False),
    ("driver.upgradePolicy", "{maxUnavailable: 0}", True),
    # nlsEnabled: false passes through the ClusterPolicy verbatim; only the chart's default NVIDIADriver loses it.
    ("driver.licensingConfig", "{secretName: lic, nlsEnabled: false}", False),
])
def test_an_override_the_chart_replaces_is_refused(path, value, refused):
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = MINIMAL + (f"  overrides:\n    - path: {path}\n      value: {value}\n"
                      "      why: the lab's nodes must all stay up during upgrades\n")
    codes = [f.code for f in validate_document(load_text(text, "x.yaml")).findings]
    assert ("GC351" in codes) is refused, codes


# --- defect 4: server-side apply and maps that become empty -----------------------------------------------------------


def _service_monitor(tree) -> dict:
    """The ClusterPolicy's spec.dcgmExporter.serviceMonitor: the chart copies the merged values' map verbatim."""
    return tree.values.merged()["dcgmExporter"]["serviceMonitor"]


def _emptied_maps(old: dict, new: dict, path: tuple = ()) -> list[str]:
    """Server-side apply's failure: a map the last apply set non-empty is applied empty ("must be of type object:
    null" on a real API server with the v26.7.0 CRD)."""
    out = []
    for key, value in old.items():
        if isinstance(value, dict):
            after = new.get(key)
            if value and after == {}:
                out.append(".".join((*path, key)))
            elif isinstance(after, dict):
                out += _emptied_maps(value, after, (*path, key))
    return out


def test_every_edit_between_monitoring_settings_applies_under_server_side_apply(tmp_path):
    with_selector = _tree(HETEROGENEOUS)
    no_selector = _tree(_edited(tmp_path, HETEROGENEOUS, ("    prometheusSelector:\n      release: kube-prometheus\n",
                                                          ""), name="a.yaml"))
    no_monitoring = _tree(ROOT / "examples" / "hybrid.yaml")
    variants = [with_selector, no_selector, no_monitoring]
    for old in variants:
        for new in variants:
            assert _emptied_maps(_service_monitor(old), _service_monitor(new)) == []
    # The model is not vacuous: today's map without gpuconf's own label would be the failing edit.
    bare = {**_service_monitor(no_selector), "additionalLabels": {}}
    assert _emptied_maps(_service_monitor(with_selector), bare) == ["additionalLabels"]
    assert _service_monitor(no_selector)["additionalLabels"] == {"gpuconf.dev/cluster": "ml-prod"}


# --- defect 5: upgrade waves are commits ----------------------------------------------------------------------------


def test_a_wave_commit_changes_only_that_waves_nvidiadriver(run, tmp_path):
    out = tmp_path / "out"
    before = _edited(tmp_path, HYBRID, ("", ""), name="before.yaml")
    assert run("render", str(before), "-o", str(out)).exit_code == 0
    after = _edited(tmp_path, HYBRID, ("        wave: 1\n", "        wave: 2\n"), name="after.yaml")
    result = run("diff", str(after), "--against", str(out), "--format", "json")
    assert result.exit_code == 1
    changed = [d for d in json.loads(result.stdout)["documents"]]
    assert [(d["kind"], d["name"]) for d in changed] == [("NVIDIADriver", "gpuconf-new-h200")]
    assert [(c["path"], c["old"], c["new"]) for c in changed[0]["changes"]] == \
        [("spec.version", "580.173.02", "595.91.07")]
    # Rolling the wave back is reverting the commit: the previous render again, byte for byte.
    assert run("render", str(before), "-o", str(out), "--check").exit_code == 0


def test_finishing_a_rollout_changes_no_nvidiadriver(run, tmp_path):
    out = tmp_path / "out"
    done = _edited(tmp_path, HYBRID, ("        wave: 1\n", "        wave: 2\n"), name="done.yaml")
    assert run("render", str(done), "-o", str(out)).exit_code == 0
    finished = _edited(tmp_path, HYBRID, ('    version: "580.173.02"\n    kernelModuleType', '    version: "595.91.07"\n'
                                          '    kernelModuleType'),
                       ('      rollout:\n        version: "595.91.07"\n        wave: 1\n', ""), name="finished.yaml")
    result = json.loads(run("diff", str(finished), "--against", str(out), "--format", "json").stdout)
    assert [d["kind"] for d in result["documents"]] == ["values"]  # driver.version only; no node changes


# --- defect 6: alerts on metrics that are collected ----------------------------------------------------------------


@pytest.mark.parametrize("example", [e for e in EXAMPLES if "alerts" in e.read_text(encoding="utf-8")],
                         ids=lambda p: p.stem)
def test_every_alert_metric_is_in_the_exporters_metrics_file(example):
    import promql_parser  # noqa: F401 - the test extra; test_render_parts reads the expressions with it

    from test_render_parts import dcgm_metrics

    tree = _tree(example)
    values = YAML11.load(tree.files["values.yaml"])
    docs = _docs(tree.files["manifests/monitoring.yaml"])
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert cm["metadata"]["name"] == values["dcgmExporter"]["config"]["name"]
    assert cm["metadata"]["namespace"] == tree.plan.namespace
    collected = {line.split(",")[0] for line in cm["data"]["dcgm-metrics.csv"].splitlines()
                 if line and not line.startswith("#")}
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    used = set()
    for alert in rule["spec"]["groups"][0]["rules"]:
        used |= dcgm_metrics(alert["expr"])
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in used and used <= collected


# --- defect 7: smaller truths ---------------------------------------------------------------------------------------


def test_mps_rename_default_is_described_truthfully():
    schema = json.loads((ROOT / "schemas" / "cluster-intent.schema.json").read_text(encoding="utf-8"))
    text = json.dumps(schema)
    assert "upstream MPS default" not in text
    description = schema["$defs"]["Mps"]["properties"]["renameByDefault"]["description"]
    assert "device plugin's own default is false" in description


# --- the semantic check catches each defect when its fix is reverted -------------------------------------------------


def _fails(run, tmp_path, intent: Path, expected: str):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    (out / "keep.txt").write_text("untouched", encoding="utf-8")
    result = run("render", str(intent), "-o", str(out))
    assert result.exit_code == 3, result.stdout + result.stderr
    assert expected in result.stderr and "nothing was written" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_semantic_check_catches_nvidiadrivers_without_policy(run, tmp_path, monkeypatch):
    from gpuconf.render import nodes

    real = nodes.nvidia_drivers

    def without_policy(plan, values):
        docs = real(plan, values)
        for doc in docs:
            doc["spec"].pop("upgradePolicy", None)
        return docs

    monkeypatch.setattr(nodes, "nvidia_drivers", without_policy)
    _fails(run, tmp_path, HYBRID, "the operator reads its NVIDIADriver's upgrade policy")


def test_semantic_check_catches_max_unavailable_zero(run, tmp_path, monkeypatch):
    from gpuconf.render import values

    real = values.ValuesBuilder.set

    def as_before(self, path, value, why, origin):
        real(self, path, 0 if value == "0%" else value, why, origin)

    monkeypatch.setattr(values.ValuesBuilder, "set", as_before)
    intent = _edited(tmp_path, ROOT / "examples" / "single-pool.yaml", ("kubernetesVersion", "kubernetesVersion"))
    text = intent.read_text(encoding="utf-8")
    if "upgrade:" not in text:
        text = text.replace("  pools:\n", "  driver:\n    upgrade:\n      maxUnavailable: 0\n  pools:\n", 1)
    intent.write_text(text, encoding="utf-8")
    _fails(run, tmp_path, intent, "maxUnavailable '25%' instead of 0")


def test_semantic_check_catches_an_empty_service_monitor_map(run, tmp_path, monkeypatch):
    from gpuconf.render import values

    real = values.ValuesBuilder.set

    def as_before(self, path, value, why, origin):
        if path == "dcgmExporter.serviceMonitor.additionalLabels" and list(value) == [values.SERVICE_MONITOR_LABEL]:
            return
        real(self, path, value, why, origin)

    monkeypatch.setattr(values.ValuesBuilder, "set", as_before)
    _fails(run, tmp_path, HYBRID, "additionalLabels would be an empty map")


def test_semantic_check_catches_waves_without_their_nvidiadrivers(run, tmp_path, monkeypatch):
    from gpuconf.render import nodes

    real = nodes.nvidia_drivers

    def pinned_only(plan, values):
        waves = {p.name for p in plan.pools if p.wave is not None}
        return [d for d in real(plan, values) if d["spec"]["nodeSelector"]["gpuconf.dev/pool"] not in waves]

    monkeypatch.setattr(nodes, "nvidia_drivers", pinned_only)
    _fails(run, tmp_path, HYBRID, "is in upgrade wave 1 but has no NVIDIADriver of its own")


def test_semantic_check_catches_alerts_on_metrics_nobody_collects(run, tmp_path, monkeypatch):
    from gpuconf.render import monitoring, tree

    real = monitoring.render
    monkeypatch.setattr(monitoring, "metrics_configmap_name", lambda plan: None)
    monkeypatch.setattr(monitoring, "metrics_configmap", lambda plan: None)
    renderers = tuple((lambda plan: [d for d in real(plan) if d is not None]) if r is real else r
                      for r in tree.MANIFEST_RENDERERS)
    monkeypatch.setattr(tree, "MANIFEST_RENDERERS", renderers)
    _fails(run, tmp_path, HETEROGENEOUS, "an alert reads DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")


# --- the semantic check on hand-broken trees -----------------------------------------------------------------------


def _broken(tree, values_edit=None, docs_edit=None):
    """A copy of a tree whose merged values and documents are edited, for semantic.check."""
    merged = copy.deepcopy(tree.values.merged())
    if values_edit:
        values_edit(merged)
    documents = copy.deepcopy(tree.documents)
    if docs_edit:
        docs_edit(documents)
    return types.SimpleNamespace(plan=tree.plan, values=types.SimpleNamespace(merged_view=lambda: merged),
                                 documents=documents, files=tree.files)


def _problems(tree, **edits):
    from gpuconf.output import semantic

    return semantic.check(_broken(tree, **edits))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_is_semantically_true(example):
    assert _problems(_tree(example)) == []


def test_semantic_check_reads_tolerations_the_way_the_scheduler_does(tmp_path):
    from conftest import without_queueing

    tree = _tree(HETEROGENEOUS)
    plain = _tree(without_queueing(HETEROGENEOUS, tmp_path))  # probes that carry their own tolerations
    drop = {"key": "gpuconf.dev/pool", "operator": "Equal", "value": "train-h100", "effect": "NoSchedule"}

    def ops(m):
        m["daemonsets"]["tolerations"].remove(drop)

    def nfd(m):
        m["node-feature-discovery"]["worker"]["tolerations"].remove(drop)

    def probe(docs):
        for doc in docs["manifests/probes.yaml"]:
            doc["spec"]["template"]["spec"].pop("tolerations", None)

    assert _problems(tree, values_edit=ops) == [
        "pool train-h100: taint gpuconf.dev/pool=train-h100:NoSchedule is not tolerated by the operands "
        "(daemonsets.tolerations)"]
    assert "NFD's worker" in _problems(tree, values_edit=nfd)[0]
    assert "probe gpuconf-probe-train-h100" in _problems(plain, docs_edit=probe)[0]

    def flavor(docs):  # with Kueue the probe gets the pool's tolerations from the pool's ResourceFlavor
        for doc in docs["manifests/queues.yaml"]:
            if doc["kind"] == "ResourceFlavor":
                doc["spec"].pop("tolerations", None)

    assert "tolerations" not in next(d for d in tree.documents["manifests/probes.yaml"]
                                     if d["metadata"]["name"] == "gpuconf-probe-train-h100")["spec"]["template"]["spec"]
    assert _problems(tree, docs_edit=probe) == []
    assert "probe gpuconf-probe-train-h100" in _problems(tree, docs_edit=flavor)[0]

    def wildcard(m):
        m["daemonsets"]["tolerations"] = [{"operator": "Exists"}]  # tolerates everything: no problem

    assert not [p for p in _problems(tree, values_edit=wildcard) if "operands" in p]


def test_semantic_check_finds_configs_strategy_images_and_quotas(tmp_path):
    from conftest import without_queueing

    tree = _tree(HETEROGENEOUS)
    plain = _tree(without_queueing(HETEROGENEOUS, tmp_path))  # ResourceQuotas instead of Kueue's ClusterQueues

    def default_key(m):
        m["devicePlugin"]["config"]["default"] = "missing"

    def strategy(m):
        m["mig"]["strategy"] = "single"

    def quota(docs):
        docs["manifests/quotas.yaml"][0]["spec"]["hard"]["requests.nvidia.com/mig-9g.99gb"] = 1

    assert _problems(tree, values_edit=default_key) == [
        "devicePlugin.config.default 'missing' is not a key of ConfigMap gpuconf-device-plugin-config"]
    assert "mig.strategy is 'single', the MIG pools need 'mixed'" in _problems(tree, values_edit=strategy)
    assert "limits nvidia.com/mig-9g.99gb, which no pool advertises" in _problems(plain, docs_edit=quota)[0]

    def queue(docs):  # the H100 flavor of research's queue gets a MIG resource the H100 pool does not advertise
        research = next(d for d in docs["manifests/queues.yaml"] if d["metadata"]["name"] == "gpuconf-team-research")
        research["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = "nvidia.com/mig-1g.10gb"

    assert _problems(tree, docs_edit=queue) == [
        "ClusterQueue gpuconf-team-research gives nvidia.com/mig-1g.10gb on pool train-h100, which the pool does not "
        "advertise"]

    air = _tree(ROOT / "examples" / "airgapped.yaml")

    def upstream(m):
        m["toolkit"]["repository"] = "nvcr.io/nvidia/k8s"

    assert _problems(air, values_edit=upstream) == [
        "values toolkit.repository = 'nvcr.io/nvidia/k8s' is not behind the mirror registry.enclave.internal/nvidia"]


def test_semantic_check_refuses_overlapping_nvidiadrivers():
    tree = _tree(HYBRID)

    def overlap(docs):
        docs["manifests/nvidia-drivers.yaml"][1]["spec"]["nodeSelector"] = {"gpuconf.dev/pool": "batch-h100"}

    problems = _problems(tree, docs_edit=overlap)
    assert any("all select its nodes (the operator stops on overlapping selectors)" in p for p in problems)


def test_catalog_explains_the_media_extension_rule(run):
    result = run("catalog", "--gpu", "H200")
    assert result.exit_code == 0
    assert ("media extensions (1g.18gb+me): at most one media-extension instance (+me, +me.all) per GPU"
            in result.stdout)
    assert "media extensions" not in run("catalog", "--gpu", "L4").stdout


def test_an_overridden_driver_repository_is_the_users_choice_in_nvidiadrivers_too():
    """With a mirror, an override of driver.manager.repository reaches every NVIDIADriver: like the same override in
    the values, it is no image that escapes the mirror (found by tests/test_impact.py's random edits)."""
    import copy

    from test_impact import example, files

    intent = copy.deepcopy(example("heterogeneous.yaml"))
    intent["spec"]["operator"]["registry"] = "registry.example.com/nvidia"
    intent["spec"]["overrides"] = [{"path": "driver.manager.repository", "value": "tools.example.com/nvidia",
                                    "why": "the driver manager comes from the tools mirror"}]
    rendered = files(intent)
    assert "repository: tools.example.com/nvidia" in rendered["manifests/nvidia-drivers.yaml"]


def test_an_override_that_turns_nvidiadriver_mode_off_is_the_users_choice_not_a_crash(run, tmp_path):
    """A pool with its own driver version needs NVIDIADriver mode; an override that turns it off is warned about
    (GC342 names what is lost) and rendered, not an internal error (found by test_impact's random edits)."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(
        "apiVersion: gpuconf.dev/v1alpha1\nkind: ClusterIntent\nmetadata: {name: lab}\nspec:\n"
        "  cluster: {kubernetesVersion: \"1.33\"}\n  operator: {chartVersion: v26.7.0}\n"
        "  driver: {preinstalled: true}\n"
        "  pools:\n    - {name: lab, gpu: A10, gpusPerNode: 1, nodes: 1, match: {pciDevice: true}, "
        "driver: {version: \"580.126.20\"}}\n"
        "  overrides:\n    - {path: driver.nvidiaDriverCRD.enabled, value: false, why: we manage drivers by hand}\n",
        encoding="utf-8")
    result = run("render", str(intent), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "warning GC342 spec.overrides[0].path: replaces what gpuconf derives for driver.nvidiaDriverCRD.enabled" \
        in result.output


def _leaves_by_recursion(value, prefix=()):
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves_by_recursion(item, (*prefix, key))]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in _leaves_by_recursion(item, (*prefix, i))]
    return [(prefix, value)]


_KEYS = st.sampled_from(["repository", "image", "containers", "spec", "name", "x"])
_DATA = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3), st.tuples(st.integers())),
                     lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
                     max_leaves=30)


@given(_DATA, st.sampled_from(["repository", "image"]))
@settings(max_examples=300, deadline=None)
def test_the_mirror_checks_walk_finds_the_leaves_at_a_key_in_the_datas_order(data, key):
    from gpuconf.output.semantic import _leaves_at

    assert _leaves_at(data, key) == [(p, v) for p, v in _leaves_by_recursion(data, ()) if p and p[-1] == key]

"""The override report, REPORT.md / report.json and `gpuconf diff` (report, --against, --to-chart)."""

from __future__ import annotations

import enum
import json
from pathlib import Path
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from conftest import EXAMPLES, ROOT

YAML11 = YAML(typ="safe", pure=True)
LAB = """apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: lab
spec:
  cluster:
    kubernetesVersion: "1.32"
  operator:
    chartVersion: v26.7.0
  pools:
    - name: l40s
      gpu: L40S
      gpusPerNode: 4
      nodes: 3
      match:
        pciDevice: true
      taints:
        - key: gpuconf.dev/pool
          value: l40s
          effect: NoSchedule
"""


@pytest.fixture(scope="module")
def trees():
    from gpuconf.pipeline import render_path

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return {p.stem: render_path(str(p.relative_to(ROOT)), "out").tree for p in EXAMPLES}
    finally:
        os.chdir(cwd)


def _report(tree) -> dict:
    return json.loads(tree.files["report.json"])


def _leaves(node, prefix=()):
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, (*prefix, key))
    else:
        yield prefix, node


def _path(parts) -> str:
    return ".".join(json.dumps(p) if "." in p else p for p in parts)


# --- every deviation is reported, with a reason and an intent location --------------------------------------------


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES])
def test_every_leaf_that_differs_from_the_defaults_is_in_the_report(example, trees):
    from gpuconf import catalog

    tree = trees[example]
    values = YAML11.load(tree.files["values.yaml"]) or {}
    defaults = catalog.chart(tree.plan.chart_version).defaults
    report = {row["path"]: row for row in _report(tree)["overrides"]}
    intent_lines = (ROOT / tree.plan.source).read_text(encoding="utf-8").splitlines()
    differing = []
    for parts, value in _leaves(values):
        node, present = defaults, True
        for key in parts:
            if not isinstance(node, dict) or key not in node:
                present = False
                break
            node = node[key]
        if present and node == value:
            continue
        differing.append(_path(parts))
        row = report.get(_path(parts))
        assert row is not None, f"{_path(parts)} differs from the chart default but is not in the report"
        assert row["value"] == value and row["basePresent"] == present
        if present:
            assert row["base"] == node
        assert len(row["reason"].split()) >= 2, row
        assert re.fullmatch(rf"{re.escape(tree.plan.source)}:\d+", row["location"]), row
        assert 1 <= row["line"] <= len(intent_lines) and intent_lines[row["line"] - 1].strip(), row
        assert row["origin"].startswith(("spec.", "metadata.")), row
    assert sorted(differing) == sorted(report), "the report lists exactly the deviating leaves"
    assert differing, "every example deviates somewhere"


def test_report_locations_point_at_the_causing_part_of_the_intent(trees):
    rows = {r["path"]: r for r in _report(trees["heterogeneous"])["overrides"]}
    lines = (ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8").splitlines()
    assert rows["daemonsets.tolerations"]["origin"] == "spec.pools[0].taints"
    assert lines[rows["daemonsets.tolerations"]["line"] - 1].strip() == "- key: gpuconf.dev/pool"
    assert lines[rows["dcgmExporter.serviceMonitor.interval"]["line"] - 1].strip() == "interval: 30s"
    airgapped = {r["path"]: r for r in _report(trees["airgapped"])["overrides"]}
    assert airgapped["toolkit.installDir"]["source"] == "override"
    assert airgapped["toolkit.installDir"]["reason"].startswith("The hardened node image")


def test_known_chart_quirks_are_explained(trees):
    def notes(example, path):
        return " ".join(next(r for r in _report(trees[example])["overrides"] if r["path"] == path)["notes"])

    assert "ClusterPolicy as `spec.driver.upgradePolicy.podDeletion`" in notes(
        "hybrid", "driver.upgradePolicy.gpuPodDeletion.timeoutSeconds")
    assert "values.yaml lacks it" in notes("airgapped", "dcgm.imagePullSecrets")  # template-only key
    assert "Helm replaces lists" in notes("heterogeneous", "daemonsets.tolerations")
    assert "copied verbatim" in notes("airgapped", "dcgmExporter.serviceMonitor.honorLabels")
    # The v26.7.0 ServiceMonitor default is explained where the intent says nothing about monitoring.
    assert "monitoring.coreos.com" in " ".join(_report(trees["hybrid"])["chartNotes"])
    assert _report(trees["heterogeneous"])["chartNotes"] == []
    assert _report(trees["single-pool"])["chartNotes"] == []  # v26.3.3: no ServiceMonitor by default


def test_report_json_is_sorted_and_carries_the_markdown_facts(trees):
    for tree in trees.values():
        text = tree.files["report.json"]
        data = json.loads(text)
        assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        md = tree.files["REPORT.md"]
        for pool in data["pools"]:
            assert f"`{pool['name']}` (line {pool['line']})" in md
        for row in data["overrides"]:
            assert f"`{row['path']}`" in md


# --- findings: no traceable reason, equal to the default, replacing what gpuconf derives --------------------------


def _intent(tmp_path, overrides: str, name="intent.yaml"):
    path = tmp_path / name
    path.write_text(LAB + "  overrides:\n" + overrides, encoding="utf-8")
    return path


def test_override_without_a_traceable_reason_is_a_finding(run, tmp_path):
    for why in ("TODO", "TODO: ask the image team", "set toolkit installDir to /opt/nvidia"):
        intent = _intent(tmp_path, f"    - path: toolkit.installDir\n      value: /opt/nvidia\n      why: \"{why}\"\n")
        result = run("diff", str(intent))
        assert result.exit_code == 1, why
        assert "error GC326 spec.overrides[0].why" in result.stdout, why


def test_override_equal_to_the_default_is_a_finding_in_the_report(run, tmp_path):
    intent = _intent(tmp_path, "    - path: driver.upgradePolicy.maxUnavailable\n      value: \"25%\"\n"
                               "      why: Keep three quarters of the nodes in service while the driver rolls.\n")
    result = run("diff", str(intent), "--format", "json")
    assert result.exit_code == 0  # a warning: the override is harmless, and pins the value across chart upgrades
    findings = json.loads(result.stdout)["findings"]
    assert [(f["code"], f["severity"], f["path"]) for f in findings] == [
        ("GC341", "warning", "spec.overrides[0].value")]
    assert run("diff", str(intent), "--warnings-as-errors").exit_code == 1
    # The rendered REPORT.md carries it too.
    out = tmp_path / "out"
    assert run("render", str(intent), "-o", str(out)).exit_code == 0
    assert "warning GC341" in (out / "lab" / "REPORT.md").read_text(encoding="utf-8")


def test_override_replacing_a_derived_value_names_what_is_lost(run, tmp_path):
    intent = _intent(tmp_path, "    - path: daemonsets.tolerations\n"
                               "      value: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule},"
                               " {key: example.com/maintenance, operator: Exists, effect: NoSchedule}]\n"
                               "      why: Operands must also run on nodes in maintenance, which carry a taint.\n")
    result = run("diff", str(intent))
    assert result.exit_code == 0
    line = next(line for line in result.stdout.splitlines() if "GC342" in line)
    assert "daemonsets.tolerations from spec.pools[0].taints" in line
    assert 'lost: [{"effect": "NoSchedule", "key": "gpuconf.dev/pool", "operator": "Equal", "value": "l40s"}]' in line
    # The report shows what the override really renders: the maintenance toleration, and the lost one is gone.
    rows = {r["path"]: r for r in json.loads(run("diff", str(intent), "--format", "json").stdout)["overrides"]}
    assert rows["daemonsets.tolerations"]["source"] == "override"
    assert "gpuconf.dev/pool" not in json.dumps(rows["daemonsets.tolerations"]["value"])


def test_diff_report_formats(run):
    example = str(ROOT / "examples" / "airgapped.yaml")
    text = run("diff", example)
    assert text.exit_code == 0
    assert "toolkit.installDir\n  default:  \"/usr/local/nvidia\"\n  rendered: \"/opt/nvidia/toolkit\"" in text.stdout
    markdown = run("diff", example, "--format", "markdown").stdout
    assert markdown.startswith("## Overrides of the chart's defaults")
    assert "| `toolkit.installDir` | `\"/usr/local/nvidia\"` | `\"/opt/nvidia/toolkit\"` |" in markdown
    data = json.loads(run("diff", example, "--format", "json").stdout)
    assert sorted(data) == ["apiVersion", "chartNotes", "cluster", "findings", "generated", "kind", "overrides"]


def test_diff_usage_errors(run, tmp_path):
    example = str(ROOT / "examples" / "heterogeneous.yaml")
    assert run("diff", example, "--to-chart", "v9.9.9").exit_code == 2
    assert run("diff", example, "--to-chart", "v26.3.3", "--against", str(tmp_path)).exit_code == 2
    assert run("diff", example, "--against", str(tmp_path)).exit_code == 1  # no tmp_path/ml-prod: cluster-added
    assert run("diff", example, "--format", "yaml").exit_code == 2


# --- diff --against: document by document ------------------------------------------------------------------------


def test_diff_against_names_exactly_the_documents_and_paths_that_change(run, tmp_path):
    example = ROOT / "examples" / "heterogeneous.yaml"
    out = tmp_path / "out"
    assert run("render", str(example), "-o", str(out)).exit_code == 0
    same = run("diff", str(example), "--against", str(out))
    assert same.exit_code == 0, same.stdout
    assert "no document differs" in same.stdout

    text = example.read_text(encoding="utf-8")
    assert text.count("replicas: 4") == 1
    changed = tmp_path / "heterogeneous.yaml"
    changed.write_text(text.replace("replicas: 4", "replicas: 8"), encoding="utf-8")
    result = run("diff", str(changed), "--against", str(out), "--format", "json")
    assert result.exit_code == 1
    diff = json.loads(result.stdout)
    got = {(d["file"], d["kind"], d["name"], d["status"]): [(c["path"], c["op"]) for c in d["changes"]]
           for d in diff["documents"]}
    old_key = next(k for k in YAML11.load_all((out / "ml-prod" / "manifests" / "sharing-configs.yaml").read_text())
                   if k)["data"]
    old = next(k for k in old_key if k.startswith("notebooks-x4-"))
    new = next(c for d in diff["documents"] for c in d["changes"] if c["op"] == "renamed")["new"]
    assert new.startswith("notebooks-x4-") and new != old
    assert got == {
        ("manifests/node-feature-rules.yaml", "NodeFeatureRule", "gpuconf-pool-notebooks-l4", "changed"):
            [('spec.rules[0].labels["nvidia.com/device-plugin.config"]', "changed")],
        ("manifests/sharing-configs.yaml", "ConfigMap", "gpuconf-device-plugin-config", "changed"):
            [("data", "renamed"), (f"data.{new} > sharing.timeSlicing.resources[0].replicas", "changed")],
    }
    changes = {c["path"]: c for d in diff["documents"] for c in d["changes"]}
    assert changes[f"data.{new} > sharing.timeSlicing.resources[0].replicas"]["old"] == 4
    assert changes[f"data.{new} > sharing.timeSlicing.resources[0].replicas"]["new"] == 8
    label = changes['spec.rules[0].labels["nvidia.com/device-plugin.config"]']
    assert (label["old"], label["new"]) == (old, new)
    # The text form adds a unified diff of exactly those files.
    plain = run("diff", str(changed), "--against", str(out)).stdout
    assert "-          replicas: 4\n+          replicas: 8\n" in plain
    assert sorted(re.findall(r"^\+\+\+ (\S+)", plain, re.M)) == [
        f"{out}/ml-prod/manifests/node-feature-rules.yaml", f"{out}/ml-prod/manifests/sharing-configs.yaml"]
    assert "2 document(s) differ: 0 added, 0 removed, 2 changed" in plain


def test_diff_against_reports_added_and_removed_documents():
    from gpuconf.output.treediff import compare_trees

    old = {"manifests/a.yaml": "---\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: x, namespace: n}\ndata: {k: v}\n"}
    new = {"manifests/a.yaml": "---\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: y, namespace: n}\ndata: {k: v}\n"}
    diff = compare_trees(old, new, "old", "new")
    assert [(d.status, d.name) for d in diff.documents] == [("removed", "x"), ("added", "y")]
    assert not diff.equal
    comments = compare_trees({"values.yaml": "# a\nx: 1\n"}, {"values.yaml": "# b\nx: 1\n"}, "old", "new")
    assert comments.equal and comments.comments_only == ["values.yaml"]


# --- the Mermaid diagram ------------------------------------------------------------------------------------------


def _mermaid(tree) -> str:
    blocks = re.findall(r"^```mermaid\n(.*?)^```$", tree.files["REPORT.md"], re.S | re.M)
    assert len(blocks) == 1
    return blocks[0]


NODE = re.compile(r'^    ([A-Za-z][A-Za-z0-9_]*)\["((?:[^"#]|#\d+;)*)"\]$')
SUBGRAPH = re.compile(r'^  subgraph ([A-Za-z][A-Za-z0-9_]*)\["((?:[^"#]|#\d+;)*)"\]$')
EDGE = re.compile(r'^  ([A-Za-z][A-Za-z0-9_]*) -->\|"((?:[^"#|]|#\d+;)*)"\| ([A-Za-z][A-Za-z0-9_]*)$')


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES])
def test_mermaid_block_is_structurally_valid_and_shows_the_real_pools(example, trees):
    """Structure, line by line: declared node ids unique, every edge between declared nodes, labels quoted with
    every quote, hash, pipe and angle bracket escaped as an entity code."""
    lines = _mermaid(trees[example]).splitlines()
    assert lines[0] == "flowchart LR"
    declared, groups, edges, depth = {}, [], [], 0
    for line in lines[1:]:
        if m := SUBGRAPH.match(line):
            groups.append(m.group(1))
            depth += 1
        elif line == "  end":
            depth -= 1
        elif m := NODE.match(line):
            assert depth == 1 and m.group(1) not in declared, line
            declared[m.group(1)] = m.group(2)
        elif m := EDGE.match(line):
            edges.append((m.group(1), m.group(3)))
        else:
            raise AssertionError(f"unexpected line: {line!r}")
    assert depth == 0 and len(groups) == len(set(groups)) and not set(groups) & set(declared)
    assert all(a in declared and b in declared for a, b in edges)
    keywords = {"end", "graph", "flowchart", "subgraph", "style", "class", "classDef", "click", "linkStyle", "default"}
    assert not set(declared) & keywords
    pools = [p.name for p in trees[example].plan.pools]
    labels = [declared[n].split("<br/>")[0] for n in declared if n.startswith("pool")]
    assert labels == pools
    for pool in trees[example].plan.pools:
        text = declared[f"labels{pool.index}"]
        assert f"gpuconf.dev/pool={pool.name}" in text
        # Under DRA no device plugin reads a config label, so the pool carries none.
        assert (f"={pool.device_plugin_key}" in text) == (trees[example].plan.intent.spec.cluster.allocation != "dra")


def test_mermaid_escapes_what_would_break_a_label():
    from gpuconf.output.report import mermaid

    flow = {"direction": "LR", "groups": [{"id": "g", "title": 'a "b" | <c> #d;', "nodes": [
        {"id": "n0", "lines": ['x"y', "a|b"]}, {"id": "n1", "lines": ["&"]}]}],
        "edges": [{"from": "n0", "to": "n1", "label": 'q"|#'}]}
    text = mermaid(flow)
    assert '"a #34;b#34; #124; #60;c#62; #35;d;"' in text
    assert 'n0 -->|"q#34;#124;#35;"| n1' in text


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES])
def test_mermaid_block_parses_with_mermaids_own_parser(example, trees):
    """Mermaid 11's flowchart grammar (mermaid-parser-py runs the real mermaid package under PythonMonkey)."""
    parser = pytest.importorskip("mermaid_parser", reason="mermaid-parser-py (a test dependency) is not installed")
    graph = parser.MermaidParser().parse(_mermaid(trees[example]))
    assert graph["graph_type"] == "flowchart-v2"
    data = graph["graph_data"]
    tree = trees[example]
    vertices = data["vertices"]
    for pool in tree.plan.pools:
        assert vertices[f"pool{pool.index}"]["text"].startswith(f"{pool.name}<br/>")
    flow = _report(tree)["flow"]
    assert sorted(vertices) == sorted(n["id"] for g in flow["groups"] for n in g["nodes"])
    assert [(e["start"], e["end"]) for e in data["edges"]] == [(e["from"], e["to"]) for e in flow["edges"]]
    assert [s["id"] for s in data["subGraphs"]] == [g["id"] for g in flow["groups"]]


def test_mermaids_parser_rejects_a_broken_diagram():
    """The parser test above is not vacuous: an unescaped quote in a label is a parse error."""
    parser = pytest.importorskip("mermaid_parser", reason="mermaid-parser-py (a test dependency) is not installed")
    with pytest.raises(Exception, match="Parse error"):
        parser.MermaidParser().parse('flowchart LR\n  a["un"quoted"] --> b\n')


# --- the rest of REPORT.md ----------------------------------------------------------------------------------------


def test_upgrade_waves_put_the_canary_first(trees):
    upgrade = _report(trees["heterogeneous"])["upgrade"]
    waves = upgrade["waves"]
    assert [(w["name"], w["pools"]) for w in waves] == [("canary", ["notebooks-l4"]), ("", ["train-h100", "infer-a100"])]
    assert "at most 1 node(s) at once" in waves[0]["limits"] and "timeout 900 s" in waves[0]["limits"]
    # Two pools upgrade side by side in wave 2: maxParallelUpgrades counts per NVIDIADriver.
    assert "at most 1 node(s) at once per NVIDIADriver, so up to 2 in this wave of 2" in waves[1]["limits"]
    assert upgrade["mode"] == "nvidiadriver" and "ignores the ClusterPolicy's" in upgrade["where"]
    assert "add `rollout: {version: NEW, wave: 1}`" in waves[0]["steps"][0]
    hybrid = _report(trees["hybrid"])["upgrade"]
    assert hybrid["rollout"] == {"from": "580.173.02", "to": "595.91.07", "wave": 1, "line": 41}
    assert [(w["pools"], w["status"]) for w in hybrid["waves"]] == [
        (["batch-h100"], "runs 595.91.07 (done)"), (["new-h200"], "runs 580.173.02 (next)")]
    assert hybrid["waves"][0]["steps"] == [] and "raise `spec.driver.upgrade.rollout.wave` (line 41) to 2" in \
        hybrid["waves"][1]["steps"][0]
    assert hybrid["preinstalledPools"] == ["legacy-a100"] and hybrid["ownVersionPools"] == ["viz-l40s"]
    single = _report(trees["single-pool"])["upgrade"]
    assert single["mode"] == "clusterpolicy" and "ClusterPolicy's `spec.driver.upgradePolicy`" in single["where"]
    assert len(single["waves"]) == 1 and single["rollout"] is None
    md = trees["heterogeneous"].files["REPORT.md"]
    assert "**Wave 1: canary** (notebooks-l4; 6 nodes)" in md and "### Rollback" in md


def test_acceptance_checklist_waits_for_every_probe(trees):
    for tree in trees.values():
        steps = _report(tree)["acceptance"]
        commands = [c for s in steps for c in s["commands"]]
        for pool in tree.plan.pools:
            assert f"kubectl -n {tree.plan.namespace} wait job/gpuconf-probe-{pool.name} --for=condition=complete " \
                   "--timeout=15m" in commands
        assert "kubectl apply -k ." in commands  # in the cluster's folder, wherever it was written


def test_quota_caveat_names_the_other_pools_a_quota_reaches(tmp_path):
    from conftest import without_queueing
    from gpuconf.pipeline import render_path

    plain = render_path(str(without_queueing(ROOT / "examples" / "heterogeneous.yaml", tmp_path)), "out").tree
    caveats = _report(plain)["quotaCaveats"]
    assert any(c.startswith("Team research: its quota on `nvidia.com/gpu`") and "notebooks-l4" in c for c in caveats)
    capacity = {c["resource"]: c for c in _report(plain)["capacity"]}
    assert capacity["nvidia.com/gpu"]["capacity"] == 16 * 8 + 6 * 4 * 4
    assert capacity["nvidia.com/gpu"]["quota"] == 64 * 2 + 48  # a ResourceQuota per namespace: research has two


def test_kueue_quotas_are_per_team_and_need_no_caveat(trees):
    report = _report(trees["heterogeneous"])
    assert report["quotaCaveats"] == []  # a flavor per pool: the quota on nvidia.com/gpu reaches no other pool
    capacity = {c["resource"]: c for c in report["capacity"]}
    assert capacity["nvidia.com/gpu"]["quota"] == 64 + 48  # one ClusterQueue per team, whatever its namespaces


# --- diff --to-chart ----------------------------------------------------------------------------------------------


def test_to_chart_lists_the_changed_defaults_that_matter(run, tmp_path):
    # Without its upgrade waves (per-pool NVIDIADrivers need v26.7.0, GC329), the reference example can move back.
    text = (ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8")
    assert "      canaryPool: notebooks-l4\n" in text
    example = str(tmp_path / "heterogeneous.yaml")
    Path(example).write_text(text.replace("      canaryPool: notebooks-l4\n", ""), encoding="utf-8")
    assert run("diff", str(ROOT / "examples" / "heterogeneous.yaml"), "--to-chart", "v26.3.3").exit_code == 1
    result = run("diff", example, "--to-chart", "v26.3.3", "--format", "json")
    assert result.exit_code == 0, result.stdout
    move = json.loads(result.stdout)
    assert (move["from"], move["to"]) == ("v26.7.0", "v26.3.3")
    effects = {d["path"]: (d["old"], d["new"], d["effect"]) for d in move["defaults"]}
    assert effects["dcgmExporter.serviceMonitor.enabled"] == (True, False, "now needed")  # the intent asks for it
    assert effects["driver.version"] == ("595.91.07", "580.126.20", "now needed")  # the intent pins 595.91.07
    assert effects["devicePlugin.version"] == ("v0.20.0", "v0.19.3", "applies")
    assert effects["migManager.version"] == ("v0.15.0", "v0.14.2", "applies")  # a MIG pool uses it
    assert effects["toolkit.version"] == ("v1.20.0", "v1.19.1", "applies")
    # Only what matters: operands for VMs, vGPU and DRA are counted, not listed.
    assert not [p for p in effects if p.split(".")[0] in ("vgpuManager", "draDriver", "sandboxDevicePlugin", "gds")]
    assert {o["key"] for o in move["otherDefaults"]} >= {"draDriver", "vgpuManager"}
    output = {(d["file"], d["name"]): d for d in move["output"]["documents"]}
    values = output[("values.yaml", "values.yaml")]["changes"]
    assert {c["path"] for c in values} == {"dcgmExporter.serviceMonitor.enabled", "driver.version"}
    text = run("diff", example, "--to-chart", "v26.3.3").stdout
    assert "dcgmExporter.serviceMonitor.enabled: true -> false" in text


def test_to_chart_of_the_intents_own_chart_says_there_is_nothing_to_compare(run):
    single = str(ROOT / "examples" / "single-pool.yaml")  # on v26.3.3
    result = run("diff", single, "--to-chart", "v26.3.3")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1:] == [
        "  the intent is on chart v26.3.3 already: nothing to compare. Name the chart to move to; `gpuconf catalog` "
        "lists the versions gpuconf has facts for."]


def test_to_chart_reports_the_servicemonitor_default_and_broken_moves(run, tmp_path):
    single = str(ROOT / "examples" / "single-pool.yaml")  # v26.3.3, no monitoring section
    move = json.loads(run("diff", single, "--to-chart", "v26.7.0", "--format", "json").stdout)
    assert any("monitoring.coreos.com" in n for n in move["notes"])
    enabled = next(d for d in move["defaults"] if d["path"] == "dcgmExporter.serviceMonitor.enabled")
    assert (enabled["old"], enabled["new"], enabled["effect"]) == (False, True, "applies")
    # Per-pool drivers need v26.7.0 (GC329): moving the hybrid example back breaks it, exit 1.
    hybrid = run("diff", str(ROOT / "examples" / "hybrid.yaml"), "--to-chart", "v26.3.3")
    assert hybrid.exit_code == 1 and "GC329" in hybrid.stdout
    # An override that equals the new default becomes unnecessary; one of a key the target lacks is invalid.
    intent = tmp_path / "i.yaml"
    intent.write_text(LAB + "  overrides:\n"
                            "    - path: dcgmExporter.serviceMonitor.enabled\n      value: false\n"
                            "      why: This cluster runs no Prometheus Operator, so there is nothing to scrape.\n"
                            "    - path: dcgmExporter.serviceMonitor.scrapeTimeout\n      value: 20s\n"
                            "      why: Scrapes of sixteen GPUs take longer than ten seconds here.\n", encoding="utf-8")
    result = run("diff", str(intent), "--to-chart", "v26.3.3", "--format", "json")
    overrides = {o["path"]: o["status"] for o in json.loads(result.stdout)["overrides"]}
    assert overrides == {"dcgmExporter.serviceMonitor.enabled": "unnecessary",
                         "dcgmExporter.serviceMonitor.scrapeTimeout": "invalid"}
    assert result.exit_code == 1


# --- report.json's encoder; the templates' bytecode cache and attribute lookup ------------------------------------

_JSON_SETTINGS = settings(max_examples=400, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_ALL_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)  # lone surrogates included
_PLAIN_TEXT = st.text(max_size=12)
# Plain data, which orjson must write exactly as json.dumps does, and anything the standard library can encode.
_plain_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), _PLAIN_TEXT,
              st.sampled_from(["\x00\x1f\x7f\x80\x9f", "\u2028\u2029", "\ufeff\uffff", "😀𝄞", 'a"b\\c/d', "", "é"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(_PLAIN_TEXT, inner, max_size=4)),
    max_leaves=30)
_any_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), _ALL_TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(_ALL_TEXT, inner, max_size=4)),
    max_leaves=30)


class _Text(str):
    pass


class _Number(float):
    pass


class _Colour(enum.Enum):
    RED = 1


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"a": [value]}
    return value


# What trips a JSON encoder up: escapes, line separators, text beyond the BMP, key order, empty containers, floats
# that orjson writes its own way, integers beyond 64 bits, lone surrogates, keys that are not strings, subclasses,
# values json cannot encode, and nesting deeper than orjson goes.
_TRICKY_JSON = [
    "".join(map(chr, range(0x20))) + "\x7f\x80\x9f", "\u2028\u2029\ufeff\uffff", "😀𝄞", 'q"b\\s/</script>', "\ud800",
    {"b": 1, "a": {"d": [], "c": {}}, "é": [{}], "😀": [[]], "\uffff": (), "": None, "Z": True},
    1e-05, 1e-7, 1e16, 1e22, -0.0, 0.1, 5e-324, float("inf"), float("-inf"), float("nan"), [1.0, {"x": 2.5e-10}],
    2**63 - 1, -2**63, 2**64, -2**64 - 1, True, False, None, {}, [], (), (1, "a"),
    {1: "a", 2: "b", 10: "c"}, {1.5: "x"}, {None: 1}, {1: "a", "b": 2}, {_Text("k"): _Text("v")}, _Number(0.5),
    {"x": enum.IntEnum("Level", "LOW")(1)}, {"x": _Colour.RED}, {"x": object()}, {"x": b"bytes"}, _nested(200),
]


def _stdlib(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _outcome(encode, value: object) -> object:
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc)


@_JSON_SETTINGS
@given(_plain_values)
def test_orjson_writes_plain_data_exactly_as_json_dumps(value):
    """What report.dumps_json rests on: for plain data its fast path gives json.dumps's text."""
    import orjson

    from gpuconf.output.report import _plain_json

    assert _plain_json(value)
    assert orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() == _stdlib(value)


@_JSON_SETTINGS
@given(_any_values)
def test_dumps_json_is_json_dumps_byte_for_byte(value):
    from gpuconf.output.report import dumps_json

    assert _outcome(dumps_json, value) == _outcome(_stdlib, value)


@pytest.mark.parametrize("index", range(len(_TRICKY_JSON)))
def test_dumps_json_on_tricky_values(index):
    from gpuconf.output.report import dumps_json

    value = _TRICKY_JSON[index]
    assert _outcome(dumps_json, value) == _outcome(_stdlib, value)


def test_report_json_takes_the_fast_path_and_keeps_floats_of_overrides(trees, tmp_path):
    from gpuconf.pipeline import render_path
    from gpuconf.output.report import _plain_json

    assert all(_plain_json(_report(tree)) for tree in trees.values())  # the examples are plain data: orjson writes them
    intent = tmp_path / "floats.yaml"
    intent.write_text(LAB + "  overrides:\n"
                            "    - path: node-feature-discovery.worker.config\n"
                            "      value: {small: 1.0e-5, big: 12345678901234567890123, inf: .inf, nan: [.nan]}\n"
                            "      why: The worker's configuration holds numbers that orjson would write otherwise.\n",
                      encoding="utf-8")
    text = render_path(str(intent), "out").tree.files["report.json"]
    for literal in ("1e-05", "12345678901234567890123", "Infinity", "NaN"):
        assert literal in text
    assert text == _stdlib(json.loads(text)) + "\n"


def test_templates_look_up_dict_keys_as_stock_jinja2_does():
    import jinja2

    from gpuconf.output.report import _environment

    source = "{{ d.name }} {{ d.missing is defined }} {{ d.items()|list|length }} {{ d.values is callable }}"
    source += " {{ n.real }}"
    context = {"d": {"name": "x", "items": 1, "values": 2}, "n": 3}
    stock = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(source).render(**context)
    assert _environment().from_string(source).render(**context) == stock == "x False 3 True 3"
    with pytest.raises(jinja2.UndefinedError):
        _environment().from_string("{{ d.missing }}").render(d={})


def test_a_declared_gpu_model_is_flagged_and_rendered_like_a_catalogue_one(tmp_path):
    from gpuconf.pipeline import render_path

    declared = LAB.replace("      gpu: L40S", "      gpu: LAB-GPU").replace("  pools:", """  gpuModels:
    LAB-GPU:
      name: Lab GPU 40GB
      pciDeviceIds: ["0x20F910DE"]
      memoryGiB: 40
      computeCapability: "8.0"
  pools:""")
    path = tmp_path / "declared.yaml"
    path.write_text(declared, encoding="utf-8")
    tree = render_path(str(path), "out").tree
    report = json.loads(tree.files["report.json"])
    [row] = report["gpuModels"]
    assert (row["id"], row["pciDeviceIds"], row["memoryGiB"], row["pools"]) == ("LAB-GPU", ["0x20F910DE"], 40, ["l40s"])
    assert report["pools"][0]["modelDeclared"] is True
    markdown = tree.files["REPORT.md"]
    assert "| LAB-GPU (user-declared) |" in markdown and "`spec.gpuModels`" in markdown
    # NFD recognises the pool by the declared PCI id, as it would a catalogue model's.
    [rule] = [d for d in YAML11.load_all(tree.files["manifests/node-feature-rules.yaml"]) if d]
    device = rule["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"]["device"]
    assert device == {"op": "In", "value": ["20f9"]}
    # A catalogue model is not flagged.
    (tmp_path / "plain.yaml").write_text(LAB, encoding="utf-8")
    plain = render_path(str(tmp_path / "plain.yaml"), "out").tree
    assert json.loads(plain.files["report.json"])["gpuModels"] == []
    assert "user-declared" not in plain.files["REPORT.md"]


def test_the_text_report_notes_a_dead_key_and_the_charts_own_notes(run, tmp_path):
    """`gpuconf diff INTENT` in text: an override on a key no template reads carries its note, and the chart's notes
    (v26.7.0's ServiceMonitor) close the list (issue 33's mutation run found neither checked in text)."""
    text = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8")
    intent = tmp_path / "lab.yaml"
    intent.write_text(text.replace("chartVersion: v26.3.3", "chartVersion: v26.7.0") + (
        "  overrides:\n    - path: devicePlugin.mps.root\n      value: /run/nvidia/mps-custom\n"
        "      why: the MPS root of our node images lives under /run/nvidia (ticket OPS-1234)\n"), encoding="utf-8")
    result = run("diff", str(intent))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("devicePlugin.mps.root")
    assert lines[at + 5] == ("  note:     no template of chart v26.7.0 reads `devicePlugin.mps.root`: this value has "
                             "no effect")
    notes = [line for line in lines if line.startswith("chart note: ")]
    assert notes == ["chart note: Chart v26.7.0 creates a ServiceMonitor for the DCGM exporter by default "
                     "(`dcgmExporter.serviceMonitor.enabled: true`; it was false up to v26.3.3). It needs the "
                     "Prometheus Operator's monitoring.coreos.com CRDs in the cluster. This intent has no "
                     "`monitoring` section: install those CRDs, or add `monitoring: {serviceMonitor: false}` to the "
                     "intent."]

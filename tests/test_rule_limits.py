"""Rules at their limits: GC365's count of Kueue flavors and group members exactly at Kueue's maximum and one past it,
and the taints a ResourceFlavor can carry."""

from __future__ import annotations

import pytest

HEAD = """apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: big-lab
spec:
  cluster:
    kubernetesVersion: "1.33"
    migStrategy: mixed
  operator:
    chartVersion: v26.7.0
  sharingProfiles:
    shared-x2: {timeSlicing: {replicas: 2, renameByDefault: true}}
    small: {mig: {layout: {"1g.10gb": 7}}}
    half: {mig: {layout: {"3g.40gb": 2}}}
  queueing:
    kueue:
      version: v0.19.2
  pools:
"""
#: Four kinds of pool, each advertising its own resource name: four resource groups of the acceptance queue.
KINDS = (("L4", "exclusive"), ("L4", "shared-x2"), ("H100-80GB", "small"), ("H100-80GB", "half"))


def _intent(per_kind: tuple[int, ...], taints: int = 0) -> str:
    pools = []
    for (gpu, sharing), count in zip(KINDS, per_kind):
        for i in range(count):
            name = f"{sharing}-{i}"
            taint = "".join(f"\n        - {{key: t{t}.example.com/x, effect: NoSchedule}}" for t in range(taints))
            pools.append(f"    - name: {name}\n      gpu: {gpu}\n      gpusPerNode: 1\n      nodes: 1\n"
                         f"      sharing: {sharing}\n      match:\n        nodeLabels: {{pool: {name}}}\n"
                         + (f"      taints:{taint}\n" if taints else ""))
    return HEAD + "".join(pools)


def _gc365(text: str) -> list[str]:
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    findings = validate_document(load_text(text, "big.yaml")).findings
    # Unused profiles (GC312, a warning) aside, GC365 is all there is.
    assert all(f.code in ("GC365", "GC312") for f in findings), [f.text() for f in findings]
    return [f"{f.path}: {f.message}" for f in findings if f.code == "GC365"]


def test_256_flavors_fit_the_acceptance_queue():
    # 255 pools and the flavor of cpu and memory: exactly Kueue's 256.
    assert _gc365(_intent((64, 64, 64, 63))) == []


def test_257_flavors_do_not():
    assert _gc365(_intent((64, 64, 64, 64))) == [
        "spec.queueing.kueue: the acceptance queue (every pool) would have 257 flavors (at most 256): Kueue rejects "
        "the ClusterQueue"]


def test_64_pools_sharing_a_resource_fit_one_group_and_65_do_not():
    assert _gc365(_intent((64,))) == []
    assert _gc365(_intent((65,))) == [
        "spec.queueing.kueue: the acceptance queue (every pool) would have 65 pools advertising nvidia.com/gpu in one "
        "group (at most 64): Kueue rejects the ClusterQueue"]


@pytest.mark.parametrize(("taints", "found"), [(8, False), (9, True)])
def test_a_flavor_holds_eight_tolerations(taints, found):
    expected = ["spec.pools[0].taints: pool 'exclusive-0' has 9 taints, but a ResourceFlavor holds at most 8 "
                "tolerations"] if found else []
    assert _gc365(_intent((1,), taints=taints)) == expected


@pytest.mark.parametrize(("pattern", "prefix"), [
    ("^gpu-h100-", "gpu-h100-"), ("^gpu-h100-[0-9]+$", "gpu-h100-"), ("^ab*c", "a"), ("^ab?", "a"), ("^ab{2}", "a"),
    ("^ab+c", "ab"), ("^abc.*", "abc"), ("^a*", None), ("^(a|b)", None), ("^a|^b", None), ("gpu", None), ("^", None),
    ("", None), (None, None), ("^x\\.y", "x"),
])
def test_the_literal_prefix_an_anchored_hostname_pattern_starts_with(pattern, prefix):
    """GC303 compares hostname patterns of pools by the literal text they must start with."""
    from gpuconf.intent.rules.selection import _literal_prefix

    assert _literal_prefix(pattern) == prefix


NAME_PART = "has an invalid name part (at most 63 letters, digits, '-', '_' or '.')"
PREFIX = "has an invalid prefix (must be a DNS subdomain)"
SUBDOMAIN = ".".join(["a" * 63] * 3) + "." + "b" * 61  # 253 characters


@pytest.mark.parametrize(("key", "problem"), [
    ("a" * 63, None), ("a" * 64, NAME_PART), ("example.com/" + "a" * 63, None), ("example.com/" + "a" * 64, NAME_PART),
    (SUBDOMAIN + "/x", None), (SUBDOMAIN + "b/x", PREFIX), ("/x", "has an empty prefix"), ("example.com/", NAME_PART),
    ("Example.com/x", PREFIX), ("example.com/-x", NAME_PART), ("a.b_c-d", None), ("", NAME_PART),
])
def test_qualified_names_at_kubernetes_limits(key, problem):
    """Label keys, taint keys and resource names: an optional DNS-subdomain prefix of at most 253 characters and a
    name of at most 63 (k8s.io/apimachinery validation.IsQualifiedName)."""
    from gpuconf.intent.rules.syntax import qualified_name_problem as _qualified_name_problem

    assert len(SUBDOMAIN) == 253
    assert _qualified_name_problem(key) == problem


@pytest.mark.parametrize(("value", "ok"), [("", True), ("a" * 63, True), ("a" * 64, False), ("a-b_c.d", True),
                                           ("-a", False), ("a b", False)])
def test_label_values_at_kubernetes_limits(value, ok):
    from gpuconf.intent.rules.syntax import label_value_ok as _label_value_ok

    assert _label_value_ok(value) is ok


@pytest.mark.parametrize(("why", "short"), [("Prometheus overload mitigation", False), ("Prometheus overload", True),
                                            ("fixes", True)])
def test_an_override_reason_needs_three_words(why, short):
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = HEAD.replace("  queueing:\n    kueue:\n      version: v0.19.2\n", "") + (
        "    - {name: a, gpu: L4, gpusPerNode: 1, nodes: 1, match: {pciDevice: true}}\n"
        f"  overrides:\n    - path: dcgmExporter.serviceMonitor.interval\n      value: 30s\n      why: {why}\n")
    found = [f.message for f in validate_document(load_text(text, "why.yaml")).findings if f.code == "GC326"]
    assert found == (["the reason is too short to tell a reviewer why the override exists"] if short else [])


@pytest.mark.parametrize(("selector", "problem"), [
    ("app=train", None), ("a=1,b=2", None), ("tier in (a,b),!legacy", None), ("a notin (x, y), b!=c", None),
    ("a==b", None), ("a", None), ("!a", None), ("a in (x,y),b in (z)", None),
    ("a in (x,y", "'a in (x,y' is not a requirement (key, !key, key=value, key!=value, key in (a,b))"),
    ("a=b,=c", "'=c' is not a requirement (key, !key, key=value, key!=value, key in (a,b))"),
    ("a=b c", "'a=b c' is not a requirement (key, !key, key=value, key!=value, key in (a,b))"),
    ("-a=b", "key '-a' has an invalid name part (at most 63 letters, digits, '-', '_' or '.')"),
    ("a in (x,-y)", "value '-y' is not a valid label value"),
])
def test_label_selectors_split_on_commas_outside_parentheses(selector, problem):
    from gpuconf.intent.rules.syntax import selector_problem

    assert selector_problem(selector) == problem


def test_every_mps_profile_is_checked_after_profiles_of_other_kinds():
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = HEAD.replace("  queueing:\n    kueue:\n      version: v0.19.2\n", "").replace(
        "  pools:\n", "    mps-one: {mps: {replicas: 1}}\n  pools:\n") + \
        "    - {name: a, gpu: L4, gpusPerNode: 1, nodes: 1, sharing: mps-one, match: {pciDevice: true}}\n"
    found = [(f.code, f.path, f.message) for f in validate_document(load_text(text, "mps.yaml")).findings
             if f.code == "GC309"]
    assert found == [("GC309", "spec.sharingProfiles.mps-one.mps.replicas", "MPS needs replicas >= 2, got 1")]


def test_pools_of_an_unknown_and_a_known_model_are_compared_by_their_other_criteria():
    from gpuconf import catalog
    from gpuconf.intent.model import Pool
    from gpuconf.intent.rules.selection import _could_overlap

    def pool(name, **match):
        return Pool.model_validate({"name": name, "gpu": "H100-80GB", "gpusPerNode": 8, "nodes": 1, "match": match})

    h100, l4 = catalog.gpu_model("H100-80GB"), catalog.gpu_model("L4")
    a, b = pool("a", nodeLabels={"group": "x"}), pool("b", nodeLabels={"group": "y"})
    assert _could_overlap(a, b, None, h100) is False and _could_overlap(a, a, None, h100) is True
    assert _could_overlap(a, a, h100, l4) is False and _could_overlap(a, a, h100, h100) is True


def test_a_zero_quota_is_checked_after_a_quota_on_an_unknown_pool():
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = HEAD.replace("      version: v0.19.2\n", "      version: v0.19.2\n      quotaCheckStrategy: IgnoreUndeclared\n") + \
        "    - {name: a, gpu: L4, gpusPerNode: 1, nodes: 1, match: {pciDevice: true}}\n" \
        "  teams:\n    - {name: research, namespaces: [research], quota: {ghost: 4, a: 0}}\n"
    findings = validate_document(load_text(text, "zero.yaml")).findings
    assert "GC314" in {f.code for f in findings}  # the unknown pool
    assert [f.path for f in findings if f.code == "GC336"] == ["spec.teams[0].quota.a"]


def test_pools_advertising_a_renamed_resource_are_no_unit_of_nvidia_com_gpu():
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = HEAD.replace("    migStrategy: mixed\n", "").replace("  queueing:\n    kueue:\n      version: v0.19.2\n", "") + \
        "    - {name: mig, gpu: H100-80GB, gpusPerNode: 8, nodes: 1, sharing: small, match: {pciDevice: true}}\n" \
        "    - {name: l4, gpu: L4, gpusPerNode: 1, nodes: 1, sharing: shared-x2, match: {pciDevice: true}}\n"
    codes = [f.code for f in validate_document(load_text(text, "gc350.yaml")).findings]
    assert "GC350" not in codes  # the L4 pool advertises nvidia.com/gpu.shared: one meaning of nvidia.com/gpu left
    whole = text.replace("sharing: shared-x2, ", "")
    assert "GC350" in [f.code for f in validate_document(load_text(whole, "gc350.yaml")).findings]

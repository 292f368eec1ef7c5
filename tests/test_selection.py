"""Selection truth: hostname patterns as NFD reads them (Go's RE2, unanchored) and tolerations an `Exists` covers."""

from __future__ import annotations

import pytest

HEAD = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: train
spec:
  cluster:
    kubernetesVersion: "1.33"
  operator:
    chartVersion: v26.7.0
  pools:
    - name: a
      gpu: A100-80GB
      gpusPerNode: 8
      nodes: 2
      match:
        pciDevice: true
"""
INTENT = HEAD + """\
        hostname: {a}
    - name: b
      gpu: A100-80GB
      gpusPerNode: 8
      nodes: 1
      match:
        pciDevice: true
        hostname: {b}
"""


def _findings(text: str) -> list[str]:
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    return [f.text() for f in validate_document(load_text(text, "intent.yaml")).findings]


def test_hostname_patterns_disjoint_as_automata_validate():
    """^gpu-a100-0[12]$ and ^gpu-a100-03$ share the literal prefix gpu-a100-0 but no node name."""
    assert _findings(INTENT.format(a="^gpu-a100-0[12]$", b="^gpu-a100-03$")) == []


@pytest.mark.parametrize("a, b, shared", [
    ("^gpu-a100-0[12]$", "^gpu-a100-03$", False),
    ("^gpu-a100-0[12]$", "gpu-a100-0[2-9]", True),   # unanchored: matches anywhere, gpu-a100-02 is both
    ("^gpu-a100-", "^gpu-a100-big-", True),
    ("^gpu-a100-", "^gpu-h100-", False),
    ("^gpu-(a|b)-", "^gpu-c-", False),
    ("^gpu-a$|^gpu-b$", "^gpu-b$", True),
    ("^gpu-a$|^gpu-b$", "^gpu-c$", False),
    ("-01$", "^node-01$", True),
    ("-01$", "^node-02$", False),
    (r"^gpu\$", "^gpu$", False),                       # an escaped $ is a literal dollar, no anchor
    (r"^gpu-[0-9]+\z", "^gpu-1x$", False),
])
def test_two_hostname_patterns_share_a_name_exactly_when_their_automata_intersect(a, b, shared):
    from gpuconf.intent.hostnames import could_share_a_name

    assert could_share_a_name(a, b) is shared
    assert could_share_a_name(b, a) is shared


def test_overlapping_hostname_patterns_are_gc303():
    assert _findings(INTENT.format(a="^gpu-a100-0[12]$", b="gpu-a100-0[2-9]")) == [
        "intent.yaml:23:9: error GC303 spec.pools[1].match: pools 'a' and 'b' could select the same node (hint: give "
        "one of them a node label with a different value, a disjoint hostname prefix or a different dmiProduct; a "
        "node in two pools gets conflicting configs and drivers)"]


@pytest.mark.parametrize("pattern, reason", [
    ("^gpu-(?!old-)", "invalid perl operator: (?!"),
    ("^gpu-(?<=a)", "invalid perl operator: (?<="),
    (r"^(gpu)-\1$", r"invalid escape sequence: \1"),
    (r"^gpu-03\Z", r"invalid escape sequence: \Z"),
])
def test_hostname_patterns_re2_refuses_are_refused(pattern, reason):
    """Python's re takes these; NFD (Go's regexp, RE2) does not, so no node would ever match."""
    assert _findings(INTENT.format(a="^gpu-a100-0[12]$", b=pattern)) == [
        f"intent.yaml:24:19: error GC320 spec.pools[1].match.hostname: hostname pattern is not a regular expression "
        f"NFD accepts (Go's RE2 syntax): {reason} (hint: RE2 has no lookarounds, backreferences or \\Z (use \\z or "
        "$); NFD matches anywhere in the name unless the pattern starts with ^)"]


@pytest.mark.parametrize("pattern, reason", [
    ("^gpu-a{4294967296}", "invalid repeat count: {4294967296}"),  # C++ RE2 reads it as literal text, Go refuses
    ("^gpu-a{2,1001}", "invalid repetition size: {2,1001}"),
    ("(" * 1000 + "a" + ")" * 1000, "expression nests too deeply"),
    ("^gpu-a{2,1000}", None),
    (r"^gpu-\{1001}", None),  # an escaped brace is literal text
    (r"^gpu-[0-9]+\z", None),  # RE2's end of text; Python's re (before 3.14) refuses it
])
def test_hostname_patterns_are_checked_as_gos_regexp_would(pattern, reason):
    from gpuconf.intent.hostnames import re2_error

    assert re2_error(pattern) == reason


def test_the_audit_matches_hostnames_as_nfd_does():
    """RE2 syntax Python's re lacks (\\z) selects nodes in the audit as NFD would."""
    from gpuconf.intent.hostnames import matches

    assert matches(r"^gpu-a100-0[12]\z", "gpu-a100-02")
    assert not matches(r"^gpu-a100-0[12]\z", "gpu-a100-021")
    assert matches("a100-0", "gpu-a100-01")  # unanchored, like Go's MatchString


TAINTED = HEAD + """\
      taints:
        - key: nvidia.com/gpu
          value: present
          effect: NoSchedule
{overrides}"""

EXISTS = """\
  overrides:
    - path: daemonsets.tolerations
      value:
        - key: nvidia.com/gpu
          operator: Exists
      why: the installation tolerates every nvidia.com/gpu taint
"""


def _values(text: str) -> dict:
    from gpuconf import plan as P
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document
    from gpuconf.render.values import build_values

    return build_values(P.build(validate_document(load_text(text, "intent.yaml")).intent, "")).overrides()


def test_an_exists_toleration_covers_the_pool_taints_toleration():
    """GC342 is silent: {key: nvidia.com/gpu, operator: Exists} tolerates nvidia.com/gpu=present:NoSchedule, and
    the values carry that one toleration, not both."""
    text = TAINTED.format(overrides=EXISTS)
    assert _findings(text) == []
    assert _values(text)["daemonsets"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def test_the_charts_own_exists_toleration_is_not_doubled():
    """Without overrides, the chart's default {nvidia.com/gpu Exists NoSchedule} already tolerates the pool's taint:
    the values leave daemonsets.tolerations and NFD's worker tolerations at the chart default."""
    values = _values(TAINTED.format(overrides=""))
    assert "tolerations" not in values.get("daemonsets", {})
    assert "worker" not in values["node-feature-discovery"]


def test_an_override_that_drops_a_needed_toleration_is_still_gc342():
    text = TAINTED.format(overrides=EXISTS.replace("nvidia.com/gpu\n          operator: Exists",
                                                   "other.example/x\n          operator: Exists"))
    (finding,) = _findings(text)
    assert "GC342" in finding
    assert finding.endswith('lost: [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}] (hint: '
                            'express it in the intent instead, or make the override keep what is lost)')


@pytest.mark.parametrize("broad, narrow, covered", [
    ({"key": "k", "operator": "Exists"}, {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoExecute"},
     False),
    ({"operator": "Exists"}, {"key": "any", "value": "v", "effect": "NoExecute"}, True),
    ({"key": "k", "operator": "Equal", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
    ({"key": "k", "operator": "Exists", "tolerationSeconds": 30}, {"key": "k", "effect": "NoExecute"}, False),
])
def test_toleration_covers_as_kubernetes_tolerates(broad, narrow, covered):
    from gpuconf.render.values import toleration_covers

    assert toleration_covers(broad, narrow) is covered

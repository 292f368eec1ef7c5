"""Large generated intents: they validate, and the bucketed overlap check still finds a collision among 1,000 pools."""

from __future__ import annotations

from generate import big_intent, big_intent_text


def _validate(text: str):
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    return validate_document(load_text(text, "big.yaml"))


def _without_single_strategy_note(findings):
    """The findings less the one GC350 warning the generated intent earns: its MPS pools need the single MIG
    strategy (tests/generate.py), under which its 1g slices and whole GPUs share the name nvidia.com/gpu."""
    assert [f.code for f in findings if f.code == "GC350"] == ["GC350"]
    return [f for f in findings if f.code != "GC350"]


def test_thousand_pools_validate_cleanly():
    result = _validate(big_intent_text(1000))
    assert _without_single_strategy_note(result.findings) == []
    assert result.ok and len(result.intent.spec.pools) == 1000


def test_one_collision_among_a_thousand_pools_is_found():
    from ruamel.yaml import YAML
    import io

    data = big_intent(1000)
    # pool 6 and pool 996 are both H100-80GB; give them the same node group.
    data["spec"]["pools"][996]["match"]["nodeLabels"] = dict(data["spec"]["pools"][6]["match"]["nodeLabels"])
    buf = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, buf)
    findings = _without_single_strategy_note(_validate(buf.getvalue()).findings)
    assert [(f.code, f.path) for f in findings] == [("GC303", "spec.pools[996].match")]
    assert "'pool-0006' and 'pool-0996'" in findings[0].message


def test_unlabelled_pool_is_compared_with_every_labelled_one():
    data = big_intent(60)
    data["spec"]["pools"][30]["match"] = {"pciDevice": True}  # pool 30 is H100-80GB; so are 0, 6, 12, ...
    from ruamel.yaml import YAML
    import io

    buf = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, buf)
    findings = _validate(buf.getvalue()).findings
    h100 = [i for i in range(60) if i % 6 == 0 and i != 30]
    assert sorted(f.path for f in findings if f.code == "GC303") == sorted(
        f"spec.pools[{max(i, 30)}].match" for i in h100)


def test_rendering_many_pools_renders_the_node_templates_a_fixed_number_of_times(monkeypatch):
    """Not a timing: the count of whole-plan passes. REPORT.md's pool table once asked for the node templates pool
    by pool, which made a 1,000-pool render quadratic (7 s instead of under one)."""
    from gpuconf import plan as P
    from gpuconf.render import nodes
    from gpuconf.render.tree import Command, render_tree

    calls = []
    real = nodes.node_templates
    monkeypatch.setattr(nodes, "node_templates", lambda plan: calls.append(1) or real(plan))
    result = _validate(big_intent_text(200))
    render_tree(P.build(result.intent, "big.yaml", result.document), Command("big.yaml", "out"))
    assert 1 <= len(calls) <= 3


# --- issue 46, item 3: GC303 does bounded work on hostile hostname patterns --------------------------------------


def test_a_thousand_pools_told_apart_by_hostname_prefixes_compare_no_pair_by_automata(monkeypatch):
    """On 156dcf4 GC303 compared all 499,500 pairs of 1,000 distinct hostname patterns as automata (over 120 s). The
    patterns' literal prefixes are sorted now: no pair reaches an automaton, and only pairs whose prefixes nest are
    compared at all (here none)."""
    from generate import hostname_intent_text

    from gpuconf.intent import hostnames
    from gpuconf.intent.rules import selection

    compared, automata = [], []
    real = selection._could_overlap
    monkeypatch.setattr(selection, "_could_overlap", lambda *a, **k: compared.append(1) or real(*a, **k))
    monkeypatch.setattr(hostnames, "_intersects", lambda *a: automata.append(a))
    for pattern in ("^gpu-{i:04d}-", "node-{i:04d}$", "^rack{i}-gpu[0-9]+$"):
        result = _validate(hostname_intent_text(1000, pattern))
        assert [f.code for f in result.findings] == [], pattern
    assert automata == [] and len(compared) == 0


def test_nested_prefixes_are_still_compared_and_found():
    from generate import hostname_intent_text

    text = hostname_intent_text(3, "^gpu-{i}").replace("^gpu-2", "^gpu-1[0-9]")
    findings = _validate(text).findings
    assert [(f.code, f.severity, f.path) for f in findings] == [("GC303", "error", "spec.pools[2].match")]
    assert "'pool-0001' and 'pool-0002' could select the same node" in findings[0].message


HOSTILE = "^(a|b)*a(a|b){18}" + "c" * 380 + "$"


def test_patterns_too_complex_to_compare_are_a_could_overlap_warning_within_the_budget():
    """Two ~400-byte patterns whose automata have 2^18 states took over 120 s on 156dcf4; the automaton stops at
    hostnames.STATES states and GC303 says the pools could overlap (a warning), in about a second."""
    import time

    from generate import hostname_intent_text

    text = hostname_intent_text(2, "{i}").replace("'0'", repr(HOSTILE)).replace("'1'", repr(HOSTILE.replace(
        "a(a|b){18}", "b(a|b){18}")))
    start = time.perf_counter()
    findings = _validate(text).findings
    assert time.perf_counter() - start < 30
    assert [(f.code, f.severity, f.path) for f in findings] == [("GC303", "warning", "spec.pools[1].match")]
    assert findings[0].message == ("pools 'pool-0000' and 'pool-0001' could select the same node: their hostname "
                                   "patterns are too complex to compare within gpuconf's budget")


def test_the_cheap_tests_decide_what_they_can_and_agree_with_the_automata():
    from gpuconf.intent.hostnames import _cheap, _intersects, Budget

    cases = [("^gpu-a-", "^gpu-b-", False), ("gpu", "node", True), ("x$", "y$", False), ("^a[0-9]+$", "^b", False),
             ("^a.$", "^.b$", None), ("^gpu-", "^gpu-h100-", None), ("^a|^b", "^c", False), ("a$", "^b", True)]
    for a, b, cheap in cases:
        assert _cheap(*sorted((a, b))) is cheap, (a, b)
        assert _intersects(*sorted((a, b)), Budget()) is (cheap if cheap is not None else True), (a, b)

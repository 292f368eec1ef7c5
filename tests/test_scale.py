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

"""Rules at the edges the mutation run (`make mutation`, issue 33) found no test for: each test here fails when the
rule's code is wrong in the way the mutant was (a second bad selector unreported, a hint's name cut at another
length, ...)."""

from __future__ import annotations

import pytest

from conftest import CASES


def _findings(text: str, code: str) -> list:
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    return [f for f in validate_document(load_text(text, "intent.yaml")).findings if f.code == code]


def _case(name: str) -> str:
    return (CASES / name / "intent.yaml").read_text(encoding="utf-8")


def test_every_pod_selector_that_is_no_label_selector_is_reported_not_only_the_first():
    text = _case("rule-upgrade-pod-selector-unquoted").replace('"!batch"', '"tier batch"')
    found = _findings(text, "GC352")
    assert [(f.path, f.message) for f in found] == [
        ("spec.driver.upgrade.drain.podSelector",
         "'tier batch' is not a label selector: 'tier batch' is not a requirement (key, !key, key=value, key!=value, "
         "key in (a,b))"),
        ("spec.driver.upgrade.waitForCompletion.podSelector",
         "'app training' is not a label selector: 'app training' is not a requirement (key, !key, key=value, "
         "key!=value, key in (a,b))")]


def test_the_nodepool_name_a_hint_suggests_is_cut_to_63_characters():
    name = "L40S_Batch_" + "X" * 70
    (f,) = _findings(_case("rule-karpenter-cannot-launch").replace("L40S_Batch", name), "GC383")
    suggested = f.hint.rpartition("e.g. ")[2]
    assert suggested == ("l40s-batch-" + "x" * 70)[:63] and len(suggested) == 63


def test_overrides_on_a_chart_gpuconf_has_no_defaults_for_are_only_that_error():
    """The override rules compare with the pinned chart's defaults; on a chart gpuconf does not know (GC318) they
    have nothing to compare with and say nothing, instead of failing the run."""
    from conftest import ROOT
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = (ROOT / "examples" / "airgapped.yaml").read_text(encoding="utf-8")
    text = text.replace("chartVersion: v26.7.0", "chartVersion: v9.9.9")
    assert "chartVersion: v9.9.9" in text and "overrides:" in text
    found = validate_document(load_text(text, "intent.yaml")).findings
    assert [(f.code, f.path) for f in found if f.severity == "error"] == [("GC318", "spec.operator.chartVersion")]


@pytest.mark.parametrize("version, too_old", [
    ("v0.17", True),  # two parts are enough to tell
    ("v0.17.rc1", True),  # only major and minor are read
    ("v0.18", False),
    ("v0", False),  # too short to tell: GC360 alone says the version is unknown
    ("v0.x", False),  # no number where the minor goes
    ("0.16.2", True),  # no leading v
])
def test_the_dra_stacks_kueue_version_is_read_by_major_and_minor_only(version, too_old):
    text = _case("rule-under-dra-kueue-too-old").replace("version: v0.17.1", f'version: "{version}"')
    assert f'version: "{version}"' in text
    codes = [f.code for f in _findings(text, "GC437") if "alpha gate" in f.message]
    assert codes == (["GC437"] if too_old else [])
    assert [f.code for f in _findings(text, "GC360")] == ["GC360"]

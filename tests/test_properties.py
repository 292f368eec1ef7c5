"""Property-based tests of `gpuconf validate`.

1. Random intents that are valid by construction (tests/strategies.py) validate without errors, and the generator
   demonstrably reaches every sharing mode, both MIG strategies, quotas of both shapes and the other sections.
2. Random structural and text-level mutations of the bundled examples never crash validation: every outcome is a
   list of well-formed, positioned findings (load errors included), and the CLI exits 0 or 1 without a traceback.
   test_every_field_survives_odd_values adds the exhaustive variant: each field of each example, one odd value
   at a time.
3. Validation is deterministic.

Bugs these properties found have a reproducer here: xfail(strict=True) while open, a plain regression test once
fixed; the property tests `assume` away exactly the open bug's shape so that they keep running.

Settings: the profile `gpuconf` (the default: derandomize=False, no deadline) or the one named by the environment
variable GPUCONF_HYPOTHESIS_PROFILE: `gpuconf-ci` (derandomized, for reproducible CI runs) or `gpuconf-thorough`
(ten times the examples). The example counts keep this file well under 30 s on two cores.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, event, find, given, note, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import strategies as S
from conftest import EXAMPLES
from gpuconf import catalog
from gpuconf.intent import loader, typecheck
from gpuconf.findings import ERROR, WARNING, Finding
from gpuconf.intent.loader import LoadError, load_bytes, load_text
from gpuconf.intent.rules import rule_codes
from gpuconf.intent.validate import Validation, validate_document, validate_path

# --- settings --------------------------------------------------------------------------------------------------

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile("gpuconf", derandomize=False, deadline=None, suppress_health_check=_HEALTH)
settings.register_profile("gpuconf-ci", settings.get_profile("gpuconf"), derandomize=True, print_blob=True)
settings.register_profile("gpuconf-thorough", settings.get_profile("gpuconf"))
_PROFILE_NAME = os.environ.get("GPUCONF_HYPOTHESIS_PROFILE", "gpuconf")
_PROFILE = settings.get_profile(_PROFILE_NAME)
_SCALE = 10 if _PROFILE_NAME == "gpuconf-thorough" else 1


def _settings(examples: int) -> settings:
    """The chosen profile with this test's example count (scaled by the thorough profile)."""
    return settings(_PROFILE, max_examples=examples * _SCALE, deadline=None, suppress_health_check=_HEALTH)


# --- helpers ---------------------------------------------------------------------------------------------------

NAME = "m.yaml"
CODE = re.compile(r"GC\d{3}")
KNOWN_CODES = set(loader.TITLES) | set(typecheck.TITLES) | {code for code, _ in rule_codes()}
LOAD_AND_TYPE_CODES = set(loader.TITLES) | set(typecheck.TITLES)
_LINE_BREAKS = re.compile("\r\n|[\r\n\x85\u2028\u2029]")

EXAMPLE_TEXT = {p.name: p.read_text(encoding="utf-8") for p in EXAMPLES}
EXAMPLE_DATA = {name: S.load_plain(text) for name, text in EXAMPLE_TEXT.items()}


def validate_bytes(raw: bytes, name: str = NAME) -> Validation:
    """Validate raw file content the way validate_path (and `validate -`) do: a LoadError becomes a finding."""
    try:
        doc = load_bytes(raw, name)
    except LoadError as exc:
        return Validation(name, findings=[exc.finding])
    return validate_document(doc)


def shown(findings: list[Finding]) -> str:
    return "\n".join(f.text() for f in findings) or "(no findings)"


def check_findings(result: Validation, raw: bytes, name: str = NAME, in_hypothesis: bool = True) -> None:
    """Every finding is well formed and points inside the file; the outcome is coherent."""
    text = raw.decode("utf-8", errors="replace")
    # Generous bounds, as readers disagree on what breaks a line (\r, U+0085, U+2028 and U+2029 may or may not) and
    # columns count characters except in the UTF-8 decoding error, which counts bytes.
    max_line = len(_LINE_BREAKS.split(text))
    max_col = max(len(line.encode("utf-8")) for line in text.split("\n")) + 1
    for f in result.findings:
        assert isinstance(f, Finding), f
        assert f.file == name, f.text()
        assert isinstance(f.line, int) and 1 <= f.line <= max_line, f"line out of the file ({max_line} lines): {f.text()}"
        assert isinstance(f.column, int) and 1 <= f.column <= max_col, f"column out of the file: {f.text()}"
        assert CODE.fullmatch(f.code) and f.code in KNOWN_CODES, f.text()
        assert f.severity in (ERROR, WARNING), f.text()
        assert isinstance(f.message, str) and f.message.strip(), f.text()
        assert isinstance(f.path, str) and (f.hint is None or isinstance(f.hint, str)), f.text()
    assert len(set(result.findings)) == len(result.findings), shown(result.findings)
    key = [(f.file, f.line, f.column, f.code, f.path, f.message) for f in result.findings]
    assert key == sorted(key), "findings are not in position order:\n" + shown(result.findings)
    if result.intent is None:
        assert not result.ok, "no intent, yet no error explains why"
    else:
        assert not {f.code for f in result.findings} & LOAD_AND_TYPE_CODES, shown(result.findings)
    if result.ok:
        assert result.intent is not None
    if in_hypothesis:
        event("outcome: " + ("valid" if result.ok else "load error" if result.document is None else
                             "type errors" if result.intent is None else "rule errors"))


# --- 1. random valid intents validate --------------------------------------------------------------------------


@_settings(40)
@given(case=S.intents())
def test_random_valid_intents_validate(case):
    """A valid-by-construction intent has no error findings (warnings are allowed; the strategy avoids them too).

    Coverage is test_valid_intent_strategy_reaches_every_feature's job: one run's mix varies a lot, as Hypothesis'
    examples are correlated (--hypothesis-show-statistics shows the features of a run)."""
    for feature in sorted(case.features):
        event(feature)
    text = case.text()
    note(text)
    doc = load_text(text, "r.yaml")
    assert S.plain(doc.data) == case.data, "the YAML dump does not read back as the generated intent"
    result = validate_document(doc)
    errors = [f for f in result.findings if f.severity == ERROR]
    assert not errors, "a valid intent was rejected:\n" + shown(result.findings)
    assert result.intent is not None
    for f in result.findings:
        event(f"warning {f.code}")


@_settings(25)
@given(case=S.intents())
def test_random_valid_intents_render_and_verify(case):
    """Every valid intent renders: the values and every manifest pass their schemas (render_tree raises
    VerificationError otherwise, a gpuconf bug), and nothing crashes on odd but valid values such as overrides."""
    from gpuconf import plan as P
    from gpuconf.render.tree import Command, render_tree

    result = validate_document(load_text(case.text(), "r.yaml"))
    assert result.ok, shown(result.findings)
    tree = render_tree(P.build(result.intent, "r.yaml", result.document), Command("r.yaml", "out"))
    assert {"values.yaml", "kustomization.yaml", "REPORT.md", "report.json"} <= set(tree.files)


@_settings(15)
@given(case=S.intents(), release=st.sampled_from(catalog.chart_versions()))
def test_a_valid_intent_moved_to_any_release_is_refused_or_renders_and_verifies(case, release):
    """Issue 41: an intent valid today, pinned to any release gpuconf knows, is either refused with findings (what
    the release cannot do: GC329, GC390, GC319, its known hazards) or renders with values that pass that release's
    own schema: gpuconf never writes a key the release's chart lacks without saying so."""
    from gpuconf import plan as P
    from gpuconf.render.tree import Command, render_tree

    text = re.sub(r"chartVersion: \S+", f"chartVersion: {release}", case.text(), count=1)
    result = validate_document(load_text(text, "r.yaml"))
    if not result.ok:
        assert any(f.severity == "error" for f in result.findings)
        return
    tree = render_tree(P.build(result.intent, "r.yaml", result.document), Command("r.yaml", "out"))
    assert f"for GPU Operator chart {release}" in tree.files["values.yaml"]


FEATURES = ["mig-layout", "mig-preset", "mig+ts", "mps", "ts", "ts-rename", "exclusive", "exclusive-named",
            "strategy-mixed", "strategy-single", "pinned-mixed", "pinned-single", "quota-count", "quota-mig",
            "quota-oversubscribed", "reuse", "taints", "canary", "waves", "rollout", "pool-driver-version", "pool-driver-preinstalled",
            "access-developers", "monitoring", "overrides", "disjoint-labels", "disjoint-hostname", "disjoint-dmi",
            "disjoint-pci", "kueue", "kueue-cohort", "kueue-limits", "kueue-resource-quotas"]


def test_valid_intent_strategy_reaches_every_feature():
    """Not vacuous: the strategy produces every feature (all sharing modes, both MIG strategies, quotas of both
    shapes, ...), and the intents it produced them in validate. Generation stops once all were seen."""
    first: dict[str, S.IntentCase] = {}

    def all_seen(case: S.IntentCase) -> bool:
        for feature in case.features:
            first.setdefault(feature, case)
        return set(FEATURES) <= set(first)

    try:
        find(S.intents(), all_seen, settings=settings(_PROFILE, max_examples=2000, phases=[Phase.generate],
                                                      database=None, suppress_health_check=_HEALTH))
    except NoSuchExample:
        pytest.fail(f"2000 intents and never {sorted(set(FEATURES) - set(first))}")
    for case in {id(c): c for c in first.values()}.values():
        result = validate_document(load_text(case.text(), "r.yaml"))
        assert result.ok, case.text() + "\n" + shown(result.findings)


NBSP_REPRO = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: lab
  labels:
    site: "Paris\u00a0Nord"
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
"""


@pytest.mark.parametrize("space", ["\u00a0", "\u2009", "\u3000"], ids=["no-break", "thin", "ideographic"])
def test_loader_accepts_unicode_spaces(space):
    """Regression (found by the valid-intent property, fixed after c1fca89): the loader's control-character check
    used str.isprintable and refused Unicode spaces with GC107 "value contains a control character"."""
    text = NBSP_REPRO.replace("\u00a0", space)
    assert S.load_plain(text)["metadata"]["labels"]["site"] == f"Paris{space}Nord"
    result = validate_bytes(text.encode("utf-8"))
    assert result.findings == [], shown(result.findings)


HOSTNAME_OVERFLOW_REPRO = """\
apiVersion: gpuconf.dev/v1alpha1
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
        hostname: "^gpu-a{4294967296}"
"""


DEEP_GROUPS = "(" * 1000 + "a" + ")" * 1000


@pytest.mark.parametrize("pattern", ["a{4294967296}", DEEP_GROUPS], ids=["huge-repeat", "deep-groups"])
def test_hostname_regex_that_does_not_compile_is_a_finding(pattern):
    text = HOSTNAME_OVERFLOW_REPRO.replace("a{4294967296}", pattern)
    assert pattern in text
    result = validate_bytes(text.encode("utf-8"))
    assert [(f.code, f.path) for f in result.findings] == [("GC320", "spec.pools[0].match.hostname")], \
        shown(result.findings)



def test_chart_leaves_are_known_override_paths():
    """The override paths the strategy draws from are what GC319 accepts (the strategy's premise)."""
    for version in catalog.chart_versions():
        leaves = S.chart_leaf_paths(version)
        assert len(leaves) > 100
        assert {catalog.chart_path_status(version, p)[0] for p in leaves} == {"known"}, version


GC315_PREFIX_REPRO = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: viz
spec:
  cluster:
    kubernetesVersion: "1.33"
  operator:
    chartVersion: v26.7.0
  sharingProfiles:
    infer-mig:
      mig:
        layout:
          "1g.24gb+gfx": 3
          "1g.24gb": 1
  pools:
    - name: infer
      gpu: RTX-PRO-6000
      gpusPerNode: 8
      nodes: 4
      match:
        pciDevice: true
      sharing: infer-mig
  teams:
    - name: research
      namespaces: [research]
      quota:
        infer: {"1g.24gb": 32, "1g.24gb+gfx": 96}
"""


def test_gc315_counts_each_mig_profile_on_its_own_resource():
    """Regression: GC315 used to count a profile's quota on the first resource starting with its name, so 1g.24gb
    landed on nvidia.com/mig-1g.24gb.gfx (fixed in c1fca89). 32 x 1g.24gb = 1 per GPU x 8 GPUs x 4 nodes and
    96 x 1g.24gb+gfx = 3 x 8 x 4 both fit exactly; one more 1g.24gb does not."""
    result = validate_document(load_text(GC315_PREFIX_REPRO, "r.yaml"))
    assert result.findings == [], shown(result.findings)
    over = validate_document(load_text(GC315_PREFIX_REPRO.replace('"1g.24gb": 32', '"1g.24gb": 33'), "r.yaml"))
    assert [(f.code, f.path) for f in over.findings] == [("GC315", 'spec.teams[0].quota.infer["1g.24gb"]')], \
        shown(over.findings)


# --- 2. mutations of the examples never crash ------------------------------------------------------------------


@_settings(40)
@given(name=st.sampled_from(sorted(EXAMPLE_DATA)), steps=st.integers(1, 4), data=st.data())
def test_structural_mutations_never_crash(name, steps, data):
    tree, log = S.mutate_structure(data, EXAMPLE_DATA[name], steps)
    note(f"{name}: {log}")
    raw = S.dump_yaml(tree).encode("utf-8")
    note(raw.decode("utf-8"))
    check_findings(validate_bytes(raw), raw)


@_settings(60)
@given(name=st.sampled_from(sorted(EXAMPLE_TEXT)), steps=st.integers(1, 4), data=st.data())
def test_text_mutations_never_crash(name, steps, data):
    raw, log = S.mutate_text(data, EXAMPLE_TEXT[name], steps)
    note(f"{name}: {log}")
    note(repr(raw))
    check_findings(validate_bytes(raw), raw)


def _mutated(data: st.DataObject, kind: str, name: str) -> bytes:
    if kind == "text":
        return S.mutate_text(data, EXAMPLE_TEXT[name], data.draw(st.integers(1, 3)))[0]
    return S.dump_yaml(S.mutate_structure(data, EXAMPLE_DATA[name], data.draw(st.integers(1, 3)))[0]).encode()


@_settings(12)
@given(name=st.sampled_from(sorted(EXAMPLE_TEXT)), kind=st.sampled_from(["text", "structure", "none"]),
       fmt=st.sampled_from(["text", "json"]), data=st.data())
def test_cli_exits_0_or_1_without_traceback(name, kind, fmt, data):
    from gpuconf.cli import main

    raw = EXAMPLE_TEXT[name].encode() if kind == "none" else _mutated(data, kind, name)
    note(repr(raw))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "intent.yaml"
        path.write_bytes(raw)
        result = CliRunner().invoke(main, ["validate", str(path)] + (["--format", "json"] if fmt == "json" else []))
        expected = validate_path(path)
    everything = result.output + result.stdout + result.stderr
    assert "Traceback" not in everything and "internal error" not in everything, everything
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1), everything
    assert result.exit_code == (0 if expected.ok else 1), everything
    if fmt == "json":
        assert json.loads(result.stdout) == [f.as_dict() for f in expected.findings]
    else:
        assert result.stdout == "".join(f.text() + "\n" for f in expected.findings)
    check_findings(expected, raw, str(path))


#: The subset of S.NASTY_STRINGS tried in every string field of every example (and numbers in every int field).
FIELD_STRINGS = ("", " ", "x\ny", "a{4294967296}", "(", "\\", "a" * 300, "..", "a.", "/", "101%", "-5%", "%",
                 "v99999999999999999999.0.0", "all-", "all-balanced", "nvidia.com/gpu", "\u202eevil", "null", "exclusive",
                 "(" * 1000 + "a" + ")" * 1000)
FIELD_INTS = (-1, 0, 1, 2**63, -(10**30))


def _leaves(node, path=()):
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from _leaves(value, path + (key,))
        elif isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            yield path + (key,), value


def test_every_field_survives_odd_values():
    """Every string field of every example set to each of FIELD_STRINGS (numbers: FIELD_INTS), one at a time, gives
    well-formed findings. Exhaustive where the random mutations above are sparse (one field in a hundred, one odd
    string in seventy); the tree is changed in place and re-validated without YAML, which keeps this fast."""
    from gpuconf.intent.loader import Document

    done, problems = set(), []
    for name, text in sorted(EXAMPLE_TEXT.items()):
        raw = text.encode("utf-8")
        doc = load_bytes(raw, NAME)
        for path, original in list(_leaves(doc.data)):
            shape = (tuple("*" if isinstance(p, int) else p for p in path), type(original))
            if shape in done:
                continue
            done.add(shape)
            parent = doc.data
            for part in path[:-1]:
                parent = parent[part]
            for odd in FIELD_STRINGS + FIELD_INTS:
                parent[path[-1]] = odd
                try:
                    check_findings(validate_document(Document(NAME, doc.data)), raw, in_hypothesis=False)
                except Exception as exc:  # noqa: BLE001 - every kind of failure is reported together
                    problems.append(f"{name} {'.'.join(map(str, path))} = {odd!r}: {type(exc).__name__}: {exc}")
                finally:
                    parent[path[-1]] = original
    assert len(done) > 50
    assert not problems, "\n".join(problems)


# --- 3. determinism --------------------------------------------------------------------------------------------


@_settings(20)
@given(name=st.sampled_from(sorted(EXAMPLE_TEXT)), kind=st.sampled_from(["valid", "text", "structure"]),
       data=st.data())
def test_validation_is_deterministic(name, kind, data):
    raw = data.draw(S.intents(max_pools=3)).text().encode() if kind == "valid" else _mutated(data, kind, name)
    note(repr(raw))
    first, second = validate_bytes(raw), validate_bytes(raw)
    as_dicts = [f.as_dict() for f in first.findings]  # as_dict includes the hint, which Finding equality ignores
    assert as_dicts == [f.as_dict() for f in second.findings]
    assert (first.intent is None) == (second.intent is None)
    if first.intent is not None:
        assert first.intent == second.intent

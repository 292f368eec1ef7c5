"""Tests of `gpuconf chart add`'s core (gpuconf.chartfacts.add) and of the values schema it builds from a chart's own
CRDs (gpuconf.chartfacts.valuesschema). The charts are synthetic but real-shaped (Chart.yaml with the NFD
dependency, values.yaml, templates/, the ClusterPolicy and NVIDIADriver CRDs): a user's clone has no reference
folder, and gpuconf stores no chart templates. The known releases are derived from variants of the same chart."""

from __future__ import annotations

import io
import json
import shutil
import stat
import tarfile
from pathlib import Path
from typing import Any

import pytest

from gpuconf.chartfacts import add as chart_add
from gpuconf.chartfacts import valuesschema
from gpuconf.chartfacts.derive import derive
from gpuconf.chartfacts.source import ChartSourceError, read_chart

CHART_YAML = """\
apiVersion: v2
name: gpu-operator
version: {version}
appVersion: {version}
kubeVersion: '>= 1.16.0-0'
dependencies:
  - name: node-feature-discovery
    version: 0.19.0
    repository: https://kubernetes-sigs.github.io/node-feature-discovery/charts
    condition: nfd.enabled
"""

VALUES_YAML = """\
nfd:
  enabled: true
cdi:
  enabled: true
operator:
  repository: nvcr.io/nvidia
  image: gpu-operator
  version: {version}
  annotations:
    openshift.io/scc: restricted-readonly  # a key with dots: not a path of two keys
driver:
  enabled: true
  version: "595.91.07"
  nvidiaDriverCRD:
    enabled: false
    driverType: gpu
devicePlugin:
  enabled: true
  version: v0.19.0
node-feature-discovery:
  enableNodeFeatureApi: true
{extra}"""

TEMPLATES = {
    "_helpers.tpl": '{{- define "gpu-operator.fullname" -}}gpu-operator{{- end }}\n',
    "clusterpolicy.yaml": """\
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
spec:
  operator:
    defaultRuntime: containerd
  cdi:
    enabled: {{ .Values.cdi.enabled }}
  driver:
    enabled: {{ .Values.driver.enabled }}
    version: {{ .Values.driver.version | quote }}
  devicePlugin:
    enabled: {{ .Values.devicePlugin.enabled }}
    version: {{ .Values.devicePlugin.version | quote }}
""",
    "operator.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-operator
  annotations: {{ toYaml .Values.operator.annotations | nindent 4 }}
spec:
  template:
    spec:
      containers:
        - image: "{{ .Values.operator.repository }}/{{ .Values.operator.image }}:{{ .Values.operator.version }}"
""",
    "nvidiadriver.yaml": """\
{{- if .Values.driver.nvidiaDriverCRD.enabled }}
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata:
  name: default
spec:
  driverType: {{ .Values.driver.nvidiaDriverCRD.driverType | default "gpu" }}
{{- end }}
""",
}

CLUSTERPOLICY_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusterpolicies.nvidia.com
spec:
  group: nvidia.com
  names:
    kind: ClusterPolicy
    plural: clusterpolicies
  scope: Cluster
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          description: ClusterPolicy is the Schema for the clusterpolicies API
          properties:
            apiVersion:
              type: string
            kind:
              type: string
            metadata:
              type: object
            spec:
              type: object
              properties:
                operator:
                  type: object
                  properties:
                    defaultRuntime:
                      type: string
                      enum: [docker, crio, containerd]
                    annotations:
                      type: object
                      additionalProperties:
                        type: string
                cdi:
                  type: object
                  properties:
                    enabled:
                      type: boolean
                      default: true
                driver:
                  type: object
                  properties:
                    enabled:
                      type: boolean
                    version:
                      type: string
                devicePlugin:
                  type: object
                  properties:
                    enabled:
                      type: boolean
                    version:
                      type: string
                      pattern: '^v?[0-9]+\\.[0-9]+'
{extra}"""

NVIDIADRIVER_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: nvidiadrivers.nvidia.com
spec:
  group: nvidia.com
  names:
    kind: NVIDIADriver
    plural: nvidiadrivers
  scope: Cluster
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion:
              type: string
            kind:
              type: string
            metadata:
              type: object
            spec:
              type: object
              properties:
                driverType:
                  type: string
                  enum: [gpu, vgpu, vgpu-host-manager]
                default:
                  type: boolean
"""

MATRIX = {"default": ["595.91.07"], "drivers": ["595.91.07", "580.173.02"], "recommended": ["595.91.07"],
          "source": "NVIDIA/cloud-native-docs main@000000000000 gpu-operator/life-cycle-policy.rst"}


def write_chart(root: Path, version: str, templates: dict[str, str] | None = None, values_extra: str = "",
                crd_extra: str = "", chart_yaml: str | None = None) -> Path:
    """A chart folder as `helm pull --untar` leaves it: <root>/gpu-operator/{Chart.yaml,values.yaml,templates,crds}."""
    folder = root / "gpu-operator"
    (folder / "templates").mkdir(parents=True)
    (folder / "crds").mkdir()
    (folder / "Chart.yaml").write_text(chart_yaml or CHART_YAML.format(version=version), encoding="utf-8")
    (folder / "values.yaml").write_text(VALUES_YAML.format(version=version, extra=values_extra), encoding="utf-8")
    (folder / "README.md").write_text("not part of the facts\n", encoding="utf-8")
    for name, text in (TEMPLATES if templates is None else templates).items():
        (folder / "templates" / name).write_text(text, encoding="utf-8")
    (folder / "crds" / "nvidia.com_clusterpolicies.yaml").write_text(CLUSTERPOLICY_CRD.format(extra=crd_extra),
                                                                     encoding="utf-8")
    (folder / "crds" / "nvidia.com_nvidiadrivers.yaml").write_text(NVIDIADRIVER_CRD, encoding="utf-8")
    return folder


def known_release(tmp_path: Path, version: str, **kwargs: Any) -> dict[str, Any]:
    """The facts of a synthetic shipped release, derived as tools/derivation/charts.py derives a real one."""
    facts = derive(read_chart(write_chart(tmp_path / f"known-{version}", version, **kwargs)))
    facts["componentMatrix"] = dict(MATRIX)
    return facts


@pytest.fixture
def known(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Two synthetic shipped releases: v26.7.0 (the templates above) and v26.3.0 (another clusterpolicy.yaml)."""
    older = dict(TEMPLATES, **{"clusterpolicy.yaml": TEMPLATES["clusterpolicy.yaml"] + "  # v26.3\n"})
    return {"v26.3.0": known_release(tmp_path, "v26.3.0", templates=older),
            "v26.7.0": known_release(tmp_path, "v26.7.0")}


def test_identical_templates_are_full_support(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    written, comparison = chart_add.add(write_chart(tmp_path / "new", "v26.7.9"), tmp_path / "out", known)
    assert written == tmp_path / "out" / "v26.7.9.json"
    assert comparison.semantics_of == "v26.7.0" and comparison.full
    assert comparison.identical_templates == 4 and comparison.differing_templates == []
    assert comparison.lines() == ["v26.7.9: full support: its 4 templates and 2 CRDs are v26.7.0's"]
    facts = json.loads(written.read_text(encoding="utf-8"))
    assert facts["origin"] == "gpuconf chart add" and facts["semanticsOf"] == "v26.7.0"
    assert facts["version"] == "v26.7.9" and facts["differingTemplates"] == []
    assert facts["defaults"]["operator"]["version"] == "v26.7.9"
    assert facts["componentMatrix"]["drivers"] == MATRIX["drivers"]
    assert "borrowed from v26.7.0" in facts["componentMatrix"]["source"]
    assert "not verified for v26.7.9" in facts["componentMatrix"]["source"]
    header = facts["generated"]
    assert header["tool"] == "gpuconf chart add" and list(header["inputs"]) == ["gpu-operator"]
    assert header["inputs"]["gpu-operator"].startswith("sha256:") and header["what"]
    assert str(tmp_path) not in written.read_text(encoding="utf-8")
    assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~_umask()  # as every file gpuconf writes
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["v26.7.9.json"]  # no temporary file left


def test_values_schema_types_keys_by_the_chart_crds(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    written, _ = chart_add.add(write_chart(tmp_path / "new", "v26.7.9"), tmp_path / "out", known)
    schema = json.loads(written.read_text(encoding="utf-8"))["valuesSchema"]
    assert schema["title"] == "GPU Operator chart v26.7.9 values"
    assert schema["$schema"] == valuesschema.DRAFT
    props = schema["properties"]
    assert props["driver"]["properties"]["enabled"] == {"type": "boolean"}
    assert props["driver"]["additionalProperties"] is False
    assert props["devicePlugin"]["properties"]["version"]["pattern"] == "^v?[0-9]+\\.[0-9]+"
    # Rendered into the default NVIDIADriver: the NVIDIADriver CRD's field types it.
    assert props["driver"]["properties"]["nvidiaDriverCRD"]["properties"]["driverType"]["enum"] == \
        ["gpu", "vgpu", "vgpu-host-manager"]
    assert props["operator"]["properties"]["annotations"] == {"type": "object",
                                                              "additionalProperties": {"type": "string"}}


def test_values_schema_refuses_defaults_its_crds_reject(tmp_path: Path) -> None:
    folder = write_chart(tmp_path / "new", "v26.7.9")
    values = folder / "values.yaml"
    values.write_text(values.read_text(encoding="utf-8").replace('version: "595.91.07"', "version: 595"),
                      encoding="utf-8")
    src = read_chart(folder)
    with pytest.raises(ChartSourceError, match=r"defaults do not validate .*\$\.driver\.version"):
        valuesschema.values_schema(src, derive(src))


def test_converter_raises_chart_source_errors() -> None:
    with pytest.raises(ChartSourceError, match="x-kubernetes-embedded-resource"):
        valuesschema.Converter("test").convert({"type": "object", "x-kubernetes-embedded-resource": True})
    with pytest.raises(ChartSourceError, match="does not compile"):
        valuesschema.python_pattern(r"^a\z", "test")


def test_chart_without_nvidiadriver_crd_is_refused(tmp_path: Path) -> None:
    folder = write_chart(tmp_path / "new", "v26.7.9")
    (folder / "crds" / "nvidia.com_nvidiadrivers.yaml").unlink()
    src = read_chart(folder)
    with pytest.raises(ChartSourceError, match="lacks the ClusterPolicy or the NVIDIADriver CRD"):
        valuesschema.values_schema(src, derive(src))


def test_changed_template_is_named_with_the_release(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    templates = dict(TEMPLATES, **{"clusterpolicy.yaml": TEMPLATES["clusterpolicy.yaml"] + "  # patched\n"})
    written, comparison = chart_add.add(write_chart(tmp_path / "new", "v26.7.9", templates=templates),
                                        tmp_path / "out", known)
    # v26.3.0 and v26.7.0 have three identical templates each: the same major wins.
    assert comparison.semantics_of == "v26.7.0" and not comparison.full
    assert comparison.identical_templates == 3 and comparison.changed_templates == ("clusterpolicy.yaml",)
    lines = comparison.lines()
    assert lines[0] == ("v26.7.9: gpuconf applies v26.7.0's semantics; 1 template differs: clusterpolicy.yaml "
                        "(changed) — review what it renders before relying on it")
    assert len(lines) == 2 and lines[1].startswith("warning: v26.7.9: template clusterpolicy.yaml (changed): ")
    assert "v26.7.0" in lines[1]
    assert json.loads(written.read_text(encoding="utf-8"))["differingTemplates"] == ["clusterpolicy.yaml"]


def test_most_identical_templates_win_over_the_major(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    older = dict(TEMPLATES, **{"clusterpolicy.yaml": TEMPLATES["clusterpolicy.yaml"] + "  # v26.3\n"})
    _, comparison = chart_add.add(write_chart(tmp_path / "new", "v26.7.9", templates=older), tmp_path / "out", known)
    assert comparison.semantics_of == "v26.3.0" and comparison.full
    assert comparison.lines() == ["v26.7.9: full support: its 4 templates and 2 CRDs are v26.3.0's"]


def test_ties_go_to_the_newest_of_the_same_major(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    known = dict(known, **{"v26.7.1": dict(known["v26.7.0"], version="v26.7.1")})
    _, comparison = chart_add.add(write_chart(tmp_path / "new", "v26.7.9"), tmp_path / "out", known)
    assert comparison.semantics_of == "v26.7.1"
    other = dict(known["v26.7.0"], version="v27.1.0")
    _, comparison = chart_add.add(write_chart(tmp_path / "new2", "v26.3.9"), tmp_path / "out2",
                                  {"v26.7.0": known["v26.7.0"], "v27.1.0": other})
    assert comparison.semantics_of == "v27.1.0"  # neither shares the major: the newest


def test_added_and_removed_templates(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    templates = {name: text for name, text in TEMPLATES.items() if name != "nvidiadriver.yaml"}
    templates["gpucluster.yaml"] = "apiVersion: nvidia.com/v1alpha1\nkind: GPUCluster\n"
    _, comparison = chart_add.add(write_chart(tmp_path / "new", "v26.7.9", templates=templates),
                                  tmp_path / "out", known)
    assert comparison.added_templates == ("gpucluster.yaml",)
    assert comparison.removed_templates == ("nvidiadriver.yaml",)
    lines = comparison.lines()
    assert lines[0] == ("v26.7.9: gpuconf applies v26.7.0's semantics; 2 templates differ: gpucluster.yaml (added), "
                        "nvidiadriver.yaml (removed) — review what it renders before relying on it")
    assert lines[1].startswith("warning: v26.7.9: template gpucluster.yaml (added): v26.7.0 has no such template")
    assert lines[2].startswith("warning: v26.7.9: template nvidiadriver.yaml (removed): v26.7.0 renders it")
    assert len(lines) == 3


def test_crd_change_is_not_full_support(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    extra = "                mig:\n                  type: object\n"
    _, comparison = chart_add.add(write_chart(tmp_path / "new", "v26.7.9", crd_extra=extra), tmp_path / "out", known)
    assert comparison.differing_templates == [] and not comparison.full
    assert comparison.changed_crds == ("nvidia.com_clusterpolicies.yaml",)
    lines = comparison.lines()
    assert lines[0] == ("v26.7.9: gpuconf applies v26.7.0's semantics; 1 CRD differs: nvidia.com_clusterpolicies.yaml "
                        "(changed) — review what it renders before relying on it")
    assert lines[1] == "warning: v26.7.9: CRD nvidia.com_clusterpolicies.yaml (changed): differs from v26.7.0's"


def test_values_keys_added_and_removed(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    folder = write_chart(tmp_path / "new", "v26.7.9", values_extra="gdrcopy:\n  enabled: false\n  version: v2.5\n")
    values = folder / "values.yaml"
    values.write_text(values.read_text(encoding="utf-8").replace("nfd:\n  enabled: true\n", ""), encoding="utf-8")
    _, comparison = chart_add.add(folder, tmp_path / "out", known)
    assert comparison.keys_added == ("gdrcopy",)  # the block once, not each of its keys
    assert comparison.keys_removed == ("nfd",)
    assert "note: v26.7.9: values keys added versus v26.7.0: gdrcopy" in comparison.lines()
    assert "note: v26.7.9: values keys removed versus v26.7.0: nfd" in comparison.lines()


def test_shipped_version_is_refused(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    with pytest.raises(ChartSourceError, match="gpuconf ships chart v26.7.0 already"):
        chart_add.add(write_chart(tmp_path / "new", "v26.7.0"), tmp_path / "out", known)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ChartSourceError, match="gpuconf ships chart v26.3.0 already"):
        chart_add.compare(known["v26.3.0"], known)


def test_tarball_with_parent_member_is_refused(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    archive = tmp_path / "gpu-operator-v26.7.9.tgz"
    folder = write_chart(tmp_path / "new", "v26.7.9")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="gpu-operator")
        data = b"owned\n"
        member = tarfile.TarInfo("gpu-operator/../../evil.yaml")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    with pytest.raises(ChartSourceError, match="outside the chart folder"):
        chart_add.add(archive, tmp_path / "out", known)
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.yaml").exists()


def test_tarball_is_read_and_named_by_its_base_name(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    archive = tmp_path / "gpu-operator-v26.7.9.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(write_chart(tmp_path / "new", "v26.7.9"), arcname="gpu-operator")
    written, comparison = chart_add.add(archive, tmp_path / "out", known)
    assert comparison.full
    header = json.loads(written.read_text(encoding="utf-8"))["generated"]
    assert header["inputs"] == {"gpu-operator-v26.7.9.tgz": chart_add.input_digest(archive, read_chart(archive))}
    assert header["command"] == "gpuconf chart add gpu-operator-v26.7.9.tgz"


def test_same_input_same_bytes(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    first = write_chart(tmp_path / "a", "v26.7.9")
    second = tmp_path / "elsewhere" / "deeper" / "gpu-operator"
    shutil.copytree(first, second)
    one, _ = chart_add.add(first, tmp_path / "out1", known)
    two, _ = chart_add.add(second, tmp_path / "x" / "out2", known)
    again, _ = chart_add.add(first, tmp_path / "out1", known)  # rewriting leaves the same file
    assert one.read_bytes() == two.read_bytes() == again.read_bytes()
    assert one.read_bytes().endswith(b"}\n")
    text = one.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_failure_writes_nothing(tmp_path: Path, known: dict[str, dict[str, Any]]) -> None:
    bad = write_chart(tmp_path / "bad", "v26.7.9", chart_yaml="name: gpu-operator\nversion: [oops\n")
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(ChartSourceError, match="Chart.yaml is not valid YAML"):
        chart_add.add(bad, into, known)
    assert list(into.iterdir()) == []
    not_ours = write_chart(tmp_path / "other", "v26.7.9", chart_yaml=CHART_YAML.format(version="v26.7.9").replace(
        "name: gpu-operator", "name: something-else"))
    with pytest.raises(ChartSourceError, match="not gpu-operator"):
        chart_add.add(not_ours, into, known)
    assert list(into.iterdir()) == []


def test_folder_constant() -> None:
    assert chart_add.FOLDER == "gpuconf-charts"


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- the command, and a chart added in the user's repository ---------------------------------------------------


def _relabelled_copy(folder: Path, shipped: str, version: str) -> Path:
    """The facts file `gpuconf chart add` writes for a byte-identical copy of a shipped release relabelled version
    (its templates and CRDs are the shipped one's, so the semantics are its own): the shipped facts, renamed, with
    the values schema gpuconf ships for that release. Tests hold no chart of NVIDIA's."""
    from gpuconf import catalog
    from gpuconf.output import verify

    facts = json.loads(catalog.data_file(f"charts/{shipped}.json").read_text(encoding="utf-8"))
    schema = json.loads(verify._schemas_dir().joinpath("values", f"gpu-operator-{shipped}.json").read_text())
    schema.pop("x-gpuconf-generated", None)
    facts.update({"version": version, "appVersion": version, "origin": chart_add.ORIGIN, "semanticsOf": shipped,
                  "differingTemplates": [], "valuesSchema": schema})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{version}.json"
    path.write_bytes(chart_add.dump(facts))
    return path


@pytest.fixture
def shipped_charts_only():
    """Every test leaves gpuconf with the shipped releases alone, as a new process starts."""
    from gpuconf import catalog

    yield
    catalog.use_chart_folder(None)


def test_the_command_writes_the_facts_and_says_what_it_vouches_for(run, tmp_path: Path, shipped_charts_only) -> None:
    chart = write_chart(tmp_path / "chart", "v26.7.9")
    into = tmp_path / "repo" / chart_add.FOLDER
    result = run("chart", "add", str(chart), "--into", str(into))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    # The synthetic chart shares no template with a shipped release: it gets the nearest one's semantics, warned.
    assert lines[0].startswith("v26.7.9: gpuconf applies v26.7.0's semantics; ")
    assert any(line.startswith("warning: v26.7.9: template clusterpolicy.yaml (changed)") for line in lines)
    assert lines[-1].startswith(f"wrote {into / 'v26.7.9.json'}: commit it beside the intents")
    assert json.loads((into / "v26.7.9.json").read_text())["semanticsOf"] == "v26.7.0"
    again = run("chart", "add", str(chart), "--into", str(into))
    assert again.exit_code == 0 and again.stdout == result.stdout
    shipped = write_chart(tmp_path / "shipped", "v26.7.0")
    refused = run("chart", "add", str(shipped), "--into", str(into))
    assert refused.exit_code == 2 and "gpuconf ships chart v26.7.0 already" in refused.stderr
    missing = run("chart", "add", str(tmp_path / "nowhere.tgz"), "--into", str(into))
    assert missing.exit_code == 2 and "no such file or folder" in missing.stderr


SINGLE = Path(__file__).resolve().parent.parent / "examples" / "single-pool.yaml"


def test_an_added_release_is_found_beside_the_intent_and_renders_as_its_twin(run, tmp_path: Path,
                                                                              shipped_charts_only) -> None:
    """A patch release added with full support renders what its twin renders, but for its name."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    _relabelled_copy(repo / chart_add.FOLDER, "v26.7.0", "v26.7.9")
    clusters = repo / "clusters"
    clusters.mkdir()
    text = SINGLE.read_text(encoding="utf-8")
    (clusters / "twin.yaml").write_text(text.replace("chartVersion: v26.3.3", "chartVersion: v26.7.0"))
    (clusters / "patch.yaml").write_text(text.replace("chartVersion: v26.3.3", "chartVersion: v26.7.9"))
    assert run("validate", str(clusters / "patch.yaml")).exit_code == 0
    for name in ("twin", "patch"):
        result = run("render", str(clusters / f"{name}.yaml"), "-o", str(tmp_path / name))
        assert result.exit_code == 0, result.stdout + result.stderr
    twin = (tmp_path / "twin" / "lab" / "values.yaml").read_text()
    patch = (tmp_path / "patch" / "lab" / "values.yaml").read_text()
    assert patch == twin.replace("v26.7.0", "v26.7.9").replace("twin.yaml", "patch.yaml").replace(
        str(tmp_path / "twin"), str(tmp_path / "patch"))
    listed = run("catalog").stdout
    assert any(line.split()[:4] == ["v26.7.9", "added", "(v26.7.0", "semantics)"] for line in listed.splitlines())
    # The move to the twin is within a major: planned, and only the operator restarts.
    move = json.loads(run("diff", str(clusters / "patch.yaml"), "--to-chart", "v26.7.0", "--format", "json").stdout)
    assert move["refused"] is None and move["upgradePath"] == ["v26.7.9", "v26.7.0"]
    # Outside the repository (no .git above the intent's folder up to here) the facts are not found.
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text(text.replace("chartVersion: v26.3.3", "chartVersion: v26.7.9"))
    result = run("validate", str(outside))
    assert result.exit_code == 1 and "GC318" in result.stdout
    # Outside any repository only the intent's own folder counts: a gpuconf-charts above it is not read.
    loose = tmp_path / "loose"
    _relabelled_copy(loose / chart_add.FOLDER, "v26.7.0", "v26.7.9")
    (loose / "sub").mkdir()
    (loose / "sub" / "lab.yaml").write_text(outside.read_text())
    (loose / "lab.yaml").write_text(outside.read_text())
    assert run("validate", str(loose / "sub" / "lab.yaml")).exit_code == 1
    assert run("validate", str(loose / "lab.yaml")).exit_code == 0


def test_a_template_that_differs_is_a_warning_of_every_intent_that_pins_the_release(run, tmp_path: Path,
                                                                                    shipped_charts_only) -> None:
    folder = tmp_path / chart_add.FOLDER
    path = _relabelled_copy(folder, "v26.7.0", "v26.7.9")
    facts = json.loads(path.read_text())
    facts["differingTemplates"] = ["clusterpolicy.yaml"]
    path.write_bytes(chart_add.dump(facts))
    intent = tmp_path / "lab.yaml"
    intent.write_text(SINGLE.read_text(encoding="utf-8").replace("chartVersion: v26.3.3", "chartVersion: v26.7.9"))
    result = run("validate", str(intent), "--format", "json")
    assert result.exit_code == 0
    (warning,) = [f for f in json.loads(result.stdout) if f["code"] == "GC318"]
    assert warning["severity"] == "warning"
    assert warning["message"] == ("chart v26.7.9 (added with gpuconf chart add) has a templates/clusterpolicy.yaml "
                                  "that differs from v26.7.0's, whose semantics gpuconf applies to it")


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not readable as the JSON `gpuconf chart add` writes"),
    ('{"version": "v26.7.9"}', "not a facts file `gpuconf chart add` wrote (no appVersion, capabilities, crds)"),
    ("x" * 100, "not readable as the JSON `gpuconf chart add` writes"),
    ("TYPES", "not a facts file `gpuconf chart add` wrote (wrong type of capabilities, defaults)"),
])
def test_a_facts_file_that_cannot_be_used_is_a_finding_that_names_it(run, tmp_path: Path, shipped_charts_only,
                                                                    content: str, message: str) -> None:
    folder = tmp_path / chart_add.FOLDER
    if content == "TYPES":  # every key there, of the wrong type: no internal error later on
        path = _relabelled_copy(folder, "v26.7.0", "v26.7.9")
        facts = json.loads(path.read_text())
        facts.update({"capabilities": ["perPoolDrivers"], "defaults": 5})
        content = json.dumps(facts)
    folder.mkdir(exist_ok=True)
    (folder / "v26.7.9.json").write_text(content)
    intent = tmp_path / "lab.yaml"
    intent.write_text(SINGLE.read_text(encoding="utf-8"))
    result = run("validate", str(intent), "--format", "json")
    assert result.exit_code == 1
    (finding,) = json.loads(result.stdout)
    assert finding["code"] == "GC318" and finding["file"].endswith("gpuconf-charts/v26.7.9.json")
    assert message in finding["message"]


def test_a_facts_file_of_a_shipped_release_is_refused(run, tmp_path: Path, shipped_charts_only) -> None:
    _relabelled_copy(tmp_path / chart_add.FOLDER, "v26.3.3", "v26.7.0")
    intent = tmp_path / "lab.yaml"
    intent.write_text(SINGLE.read_text(encoding="utf-8"))
    result = run("validate", str(intent))
    assert result.exit_code == 1
    assert "gpuconf ships chart v26.7.0 itself; remove this file" in result.stdout


@pytest.mark.parametrize("version", ['"v26.7.9\\n"', '"../v26.7.9"', '"v26.7.9' + "9" * 10000 + '"', '"v26.7"'])
def test_a_version_that_is_no_release_names_no_file(tmp_path: Path, known: dict[str, dict[str, Any]],
                                                    version: str) -> None:
    """Chart.yaml's version names the facts file: a newline, a path, 10k characters or a short version are
    refused before anything is written."""
    chart = write_chart(tmp_path / "chart", "v26.7.9",
                        chart_yaml=CHART_YAML.replace("version: {version}\nappVersion", "version: " + version +
                                                      "\nappVersion").format(version="v26.7.9"))
    into = tmp_path / "into"
    with pytest.raises(ChartSourceError, match="is not a GPU Operator release"):
        chart_add.add(chart, into, known)
    assert not into.exists()

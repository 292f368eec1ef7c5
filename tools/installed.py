"""gpuconf as a user's `pip install` gives it, beside this checkout: a wheel built offline from a copy of the sources
and a fresh virtual environment holding only that wheel. tests/test_package.py runs the installed command there, and
tools/bench.py times it there ("whole process, as installed", issue 32).

A checkout's editable install is not what users run: its import hook (setuptools' __editable__ finder, set up by a
.pth file when Python starts) costs every process, even `python -c pass`, about 15 ms on a 2-core machine. The
environment made here gets the dependencies from the environment running this module through a .pth file naming
that environment's site-packages; Python does not process .pth files inside a folder a .pth file adds, so the
checkout's editable install stays out of sight.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the wheel is built from (pyproject.toml names the packages and their data).
SOURCES = ("pyproject.toml", "README.md", "gpuconf", "profiles", "schemas")


def build_wheel(work: Path) -> Path:
    """The wheel, built offline (no build isolation: setuptools from this environment) from a copy of the sources
    in work/src (the checkout itself stays untouched); returns its path in work/dist."""
    source = work / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                           "--disable-pip-version-check", "-w", str(work / "dist"), str(source)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"pip wheel failed:\n{done.stdout}{done.stderr}")
    [built] = (work / "dist").glob("gpuconf-*.whl")
    return built


def install(wheel: Path, env: Path) -> Path:
    """A fresh virtual environment at env with the wheel installed (byte-compiled, as pip does) and this
    environment's site-packages for the dependencies; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet",
                           "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{done.stdout}{done.stderr}")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "gpuconf-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n",
                                                            encoding="utf-8")
    return python


def installed_python(work: Path) -> Path:
    """build_wheel then install, under work: the python of an environment where gpuconf is installed."""
    return install(build_wheel(work), work / "env")

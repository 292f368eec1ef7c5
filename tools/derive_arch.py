#!/usr/bin/env python3
"""Derive profiles/arch.json: which GPU models sit in arm64 (Grace) nodes, which CPU architectures the GPU Operator's
operand images are built for, and which driver images NVIDIA publishes per driver version, OS tag and architecture.

Run from the repository root (maintainers only; the project never reads the mirrors or ../shared at run or test time):

    python tools/derive_arch.py [--mirrors /work/.mirror] [--reference ../shared/reference] [--check]

Sources:
- Grace models: ../shared/reference/gpu-operator/docs/platform-support.rst (the "Supported ARM Based Platforms" table,
  and GH200's architecture "NVIDIA Grace Hopper") and release-notes.rst (CDMM "applies only to Grace-based systems
  such as GH200 and GB200").
- Driver images: NVIDIA/gpu-driver-container, every commit of `main` since 2024-01-01 that touched its CI or build
  files. At each one, the NGC release jobs of .nvidia-ci.yml (`release:ngc-<tag>`, with .common-ci.yml's templates,
  GitLab `extends` resolved) give the driver versions and the published OS tag (OUT_DIST, else DIST); the platforms
  are multi-arch.mk's (`DOCKER_BUILD_PLATFORM_OPTIONS`, with its `build-<dist>%` overrides) when the CI sets
  BUILD_MULTI_ARCH_IMAGES "true", else native-only.mk's. Precompiled jobs (tags <branch>-<kernel>-<os>) are left out.
- Operand images: for every operand version a committed chart profile (profiles/charts/*.json) defaults to, the
  project's repository at that tag: its CI's BUILD_MULTI_ARCH_IMAGES "true" and the platforms of its multi-arch build
  file (NFD and DCGM Exporter: the one line of their publishing script or Makefile that names the platforms). An
  image whose project is not mirrored here (DCGM, the sandbox and vGPU operands, ...) or whose tag is missing has no
  entry: gpuconf cannot vouch for it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from derivation.common import REPO_ROOT, DeriveError, Reference, arguments, dump, header, run, sha256  # noqa: E402

from ruamel.yaml import YAML  # noqa: E402

SCRIPT = "tools/derive_arch.py"
OUTPUT = "profiles/arch.json"
SINCE = "2024-01-01"
DRIVER_REPO = "NVIDIA/gpu-driver-container"
DRIVER_FILES = (".nvidia-ci.yml", ".common-ci.yml", "multi-arch.mk", "native-only.mk", "Makefile")

#: Operand image name (chart values `image`) -> the project that builds it.
OPERAND_REPOS = {
    "gpu-operator": "NVIDIA/gpu-operator",
    "gpu-operator-validator": "NVIDIA/gpu-operator",
    "k8s-device-plugin": "NVIDIA/k8s-device-plugin",
    "container-toolkit": "NVIDIA/nvidia-container-toolkit",
    "k8s-mig-manager": "NVIDIA/mig-parted",
    "k8s-driver-manager": "NVIDIA/k8s-driver-manager",
    "dra-driver-nvidia-gpu": "kubernetes-sigs/dra-driver-nvidia-gpu",
}
#: Projects whose release build names its platforms in one line of one file at the tag: image -> (repository, file,
#: the line's pattern, how a values version names the tag). NFD: cloudbuild.yaml runs
#: scripts/test-infra/push-image.sh, which runs `IMAGE_ALL_PLATFORMS=... make push-all`. DCGM Exporter: the Makefile's
#: `push` target builds every flavour with `--platform $(PLATFORMS)`, set once as `PLATFORMS := ...`; its tags are
#: <dcgm>-<exporter> and the values' versions add a flavour (-ubuntu22.04, -ubi9, -distroless).
LINE_RULES = {
    "node-feature-discovery": ("kubernetes-sigs/node-feature-discovery", "scripts/test-infra/push-image.sh",
                               r"^IMAGE_ALL_PLATFORMS=(\S+) make push-all", lambda v: [v]),
    "dcgm-exporter": ("NVIDIA/dcgm-exporter", "Makefile", r"^PLATFORMS\s*:=\s*(\S+)\s*$",
                      lambda v: [v, v.rsplit("-", 1)[0]]),
}
#: Where each project keeps its multi-arch platform list, and where its CI switches the multi-arch build on.
PLATFORM_FILES = ("multi-arch.mk", "deployments/container/multi-arch.mk", "deployments/container/Makefile")
CI_FILES = (".common-ci.yml", ".github/workflows/image.yaml", ".github/workflows/image-builds.yaml",
            ".github/workflows/ci.yaml", "hack/build-and-publish-image.sh")
#: How a CI file switches the multi-arch build on: GitLab's variable, the publishing script's make argument
#: (kubernetes-sigs: cloudbuild.yaml runs hack/build-and-publish-image.sh), or (GitHub Actions, newer releases) the
#: image workflow's input set for main and release-* branches, which releases are tagged on.
MULTI_ARCH_ON = re.compile(r"BUILD_MULTI_ARCH_IMAGES[:=]\s*\"?true\"?"
                           r"|build_multi_arch_images:\s*\$\{\{\s*github\.ref_name == 'main' "
                           r"\|\| startsWith\(github\.ref_name, 'release-'\)")

#: Catalogue models in Grace (arm64) nodes, with the reference lines that say so.
GRACE = {
    "GB200": ["gpu-operator/docs/platform-support.rst: 'Supported ARM Based Platforms' lists NVIDIA HGX GB200 NVL72",
              "gpu-operator/docs/release-notes.rst: CDMM 'applies only to Grace-based systems such as GH200 and "
              "GB200'"],
    "GB300": ["gpu-operator/docs/platform-support.rst: 'Supported ARM Based Platforms' lists NVIDIA HGX GB300 NVL72"],
    "GH200": ["gpu-operator/docs/platform-support.rst: GH-series products, NVIDIA GH200, architecture 'NVIDIA Grace "
              "Hopper'", "gpu-operator/docs/release-notes.rst: CDMM 'applies only to Grace-based systems such as "
              "GH200 and GB200'"],
    "GH200-144GB": ["gpu-operator/docs/release-notes.rst: 'MIG profiles with GH200 NVL2 144GB HBM3e' (a GH200, "
                    "Grace-based as above)"],
}
GRACE_CHECKS = {"GB200": ("platform-support.rst", "NVIDIA HGX GB200 NVL72"),
                "GB300": ("platform-support.rst", "NVIDIA HGX GB300 NVL72"),
                "GH200": ("platform-support.rst", "NVIDIA Grace Hopper"),
                "GH200-144GB": ("release-notes.rst", "GH200 NVL2 144GB HBM3e")}


class Mirrors:
    """Read access to the local git mirrors (/work/.mirror/<owner>+<name>/repo), each read cited by commit. Objects
    are read through one `git cat-file --batch` process per repository (hundreds of reads take seconds)."""

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise DeriveError(f"mirror folder {root} does not exist (pass --mirrors)")
        self.root = root
        self.inputs: dict[str, str] = {}
        self._batches: dict[str, subprocess.Popen] = {}

    def _git_dir(self, repo: str) -> Path:
        git_dir = self.root / repo.replace("/", "+") / "repo"
        if not git_dir.is_dir():
            raise DeriveError(f"{repo} is not mirrored at {git_dir}")
        return git_dir

    def git(self, repo: str, *args: str) -> bytes | None:
        done = subprocess.run(["git", f"--git-dir={self._git_dir(repo)}", *args], capture_output=True)
        return done.stdout if done.returncode == 0 else None

    def _object(self, repo: str, name: str) -> tuple[str, bytes] | None:
        """(object id, content) of `<rev>:<path>` or `<rev>^{commit}`, or None when it does not exist."""
        batch = self._batches.get(repo)
        if batch is None:
            batch = subprocess.Popen(["git", f"--git-dir={self._git_dir(repo)}", "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self._batches[repo] = batch
        assert batch.stdin is not None and batch.stdout is not None
        batch.stdin.write(name.encode() + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if len(header) != 3:  # "<name> missing" (or ambiguous)
            return None
        content = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)  # the newline after the content
        return header[0].decode(), content

    def close(self) -> None:
        for batch in self._batches.values():
            assert batch.stdin is not None
            batch.stdin.close()
            batch.wait()
        self._batches.clear()

    def commit(self, repo: str, ref: str) -> str | None:
        found = self._object(repo, f"{ref}^{{commit}}")
        return found[0] if found else None

    def show(self, repo: str, commit: str, path: str, record: bool = True) -> str | None:
        found = self._object(repo, f"{commit}:{path}")
        if found is None:
            return None
        if record:
            self.inputs[f"{repo}@{commit[:12]}:{path}"] = sha256(found[1])
        return found[1].decode("utf-8")


def _yaml() -> YAML:
    """A safe loader (libyaml's, where ruamel.yaml.clib is installed) that reads GitLab's `!reference [...]` tags as
    plain lists."""
    yaml = YAML(typ="safe")
    yaml.constructor.add_constructor("!reference", lambda loader, node: loader.construct_sequence(node))
    return yaml


def _merge(base: Any, over: Any) -> Any:
    """GitLab's `extends` merge: maps deep-merged, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = _merge(base[key], value) if key in base else value
        return out
    return over


def _resolve(jobs: dict, name: str, seen: tuple = ()) -> dict:
    if name in seen:
        raise DeriveError(f"extends loop at {name}")
    job = jobs.get(name)
    if not isinstance(job, dict):
        raise DeriveError(f"extends names {name!r}, which the CI files do not define")
    parents = job.get("extends") or []
    parents = [parents] if isinstance(parents, str) else parents
    out: dict = {}
    for parent in parents:
        out = _merge(out, _resolve(jobs, parent, (*seen, name)))
    return _merge(out, {k: v for k, v in job.items() if k != "extends"})


def _platforms(text: str, target: str | None, where: str) -> list[str]:
    """The platforms a build file gives target (build-<dist>-<version>; None: the file's default): the unconditional
    `DOCKER_BUILD_PLATFORM_OPTIONS` assignment, or with target a matching `build-<pattern>%:` override outside any
    ifeq block (conditional overrides concern precompiled flavours only)."""
    default, depth, chosen = None, 0, None
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"^(ifeq|ifneq|ifdef|ifndef)\b", stripped):
            depth += 1
            continue
        if stripped == "endif":
            depth -= 1
            continue
        m = re.match(r"^(?:([\w.%-]+):\s*)?DOCKER_BUILD_PLATFORM_OPTIONS\s*[?:]?=\s*--platform=(\S+)", stripped)
        if not m:
            continue
        pattern, value = m.group(1), [p.removeprefix("linux/") for p in m.group(2).split(",")]
        if pattern is None and depth == 0:
            default = value
        elif pattern is not None and target is not None and depth == 0:
            regex = re.escape(pattern).replace("%", ".*")
            if re.fullmatch(regex, target):
                chosen = value
    result = chosen or default
    if result is None:
        raise DeriveError(f"{where}: no DOCKER_BUILD_PLATFORM_OPTIONS")
    if any("$" in p for p in result):
        raise DeriveError(f"{where}: platform list {result} is not literal")
    return sorted(result)


def derive_drivers(mirrors: Mirrors) -> dict[str, dict[str, dict[str, Any]]]:
    """driver version -> OS tag -> {architectures, source}: every non-precompiled driver image the NGC release jobs
    of NVIDIA/gpu-driver-container's `main` published since SINCE."""
    log = mirrors.git(DRIVER_REPO, "log", "--format=%H %ad", "--date=short", f"--since={SINCE}", "main", "--",
                      *DRIVER_FILES)
    if log is None:
        raise DeriveError(f"{DRIVER_REPO}: cannot read the history of main")
    commits = [line.split() for line in log.decode().splitlines()][::-1]  # oldest first: the first source is cited
    if not commits:
        raise DeriveError(f"{DRIVER_REPO}: no commit since {SINCE}")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    yaml = _yaml()
    parsed: dict[str, Any] = {}  # a file unchanged between commits is parsed once
    for commit, date in commits:
        ci = mirrors.show(DRIVER_REPO, commit, ".nvidia-ci.yml")
        common = mirrors.show(DRIVER_REPO, commit, ".common-ci.yml")
        if ci is None or common is None:
            continue
        for text in (ci, common):
            if text not in parsed:
                parsed[text] = yaml.load(text)
        jobs = _merge(parsed[common], parsed[ci])  # the include's global variables merge, as GitLab's do
        variables = jobs.get("variables") or {}
        multi = str(variables.get("BUILD_MULTI_ARCH_IMAGES", "")).lower() == "true"
        build_file = "multi-arch.mk" if multi else "native-only.mk"
        build_text = mirrors.show(DRIVER_REPO, commit, build_file)
        if build_text is None:
            raise DeriveError(f"{DRIVER_REPO}@{commit[:12]}: {build_file} is missing")
        for name in sorted(jobs):
            if not name.startswith("release:ngc-"):
                continue
            job = _resolve(jobs, name)
            job_vars = {**variables, **(job.get("variables") or {})}
            if str(job_vars.get("PRECOMPILED", "")).lower() == "true" or "DIST" not in job_vars:
                continue
            dist = str(job_vars["DIST"])
            tag = str(job_vars.get("OUT_DIST") or dist)
            if "$" in tag:
                tag = dist
            if dist.startswith("signed_") or "$" in dist:
                continue
            matrix = ((job.get("parallel") or {}).get("matrix") or [{}])
            versions = [w for row in matrix for v in (row.get("DRIVER_VERSION") or []) for w in str(v).split()]
            if not versions:
                versions = str(job_vars.get("DRIVER_VERSIONS", "")).split()
            for version in versions:
                where = f"{DRIVER_REPO}@{commit[:12]}:{build_file}"
                arches = _platforms(build_text, f"build-{dist}-{version}", where)
                entry = out.setdefault(version, {}).setdefault(tag, {"architectures": [], "source": (
                    f"{DRIVER_REPO}@{commit[:12]} ({date}): .nvidia-ci.yml job {name}, {build_file}")})
                entry["architectures"] = sorted(set(entry["architectures"]) | set(arches))
    return out


def _operand_versions(charts_dir: Path) -> set[tuple[str, str]]:
    """(image, version) of every operand a committed chart profile defaults to, for the mirrored projects."""
    found = set()
    for path in sorted(charts_dir.glob("v*.json")):
        facts = json.loads(path.read_text(encoding="utf-8"))
        stack = [facts.get("defaults") or {}]
        while stack:
            block = stack.pop()
            if isinstance(block, dict):
                image, version = block.get("image"), block.get("version")
                if isinstance(image, str) and image in OPERAND_REPOS:
                    found.add((image, str(version) if version else facts["appVersion"]))
                stack.extend(v for v in block.values() if isinstance(v, (dict, list)))
            elif isinstance(block, list):
                stack.extend(block)
    return found


#: Newer releases build each architecture natively (a job matrix over `arch`) and join them into one image with
#: `docker manifest create` (e.g. NVIDIA/k8s-device-plugin v0.20.0).
MANIFEST_WORKFLOW = ".github/workflows/image.yaml"


def _manifest_arches(mirrors: Mirrors, repo: str, commit: str) -> list[str] | None:
    """The architectures of a release workflow that builds per `arch` and joins them with a manifest, else None."""
    text = mirrors.show(repo, commit, MANIFEST_WORKFLOW, record=False)
    if not text or "docker manifest create" not in text:
        return None
    workflow = _yaml().load(text)
    arches = {str(a) for job in (workflow.get("jobs") or {}).values() if isinstance(job, dict)
              for a in (((job.get("strategy") or {}).get("matrix") or {}).get("arch") or [])}
    if not arches:
        return None
    for arch in arches:
        if f"-{arch}" not in text.split("docker manifest create", 1)[1]:
            raise DeriveError(f"{repo}@{commit[:12]}:{MANIFEST_WORKFLOW}: the manifest does not join the {arch} build")
    mirrors.show(repo, commit, MANIFEST_WORKFLOW)
    return sorted(arches)


def _dra_driver_versions() -> set[tuple[str, str]]:
    """The DRA driver images of the chart releases gpuconf delivers (gpuconf/intent/fabric.py DRA_DRIVER_CHARTS; the
    chart's image tag is "v" + its appVersion, which equals its version for v0.4.1)."""
    text = (REPO_ROOT / "gpuconf" / "intent" / "fabric.py").read_text(encoding="utf-8")
    m = re.search(r"^DRA_DRIVER_CHARTS = \(([^)]*)\)", text, re.M)
    if not m:
        raise DeriveError("gpuconf/intent/fabric.py: DRA_DRIVER_CHARTS not found")
    return {("dra-driver-nvidia-gpu", "v" + v) for v in re.findall(r'"([^"]+)"', m.group(1))}


def _release_tags(mirrors: Mirrors) -> set[tuple[str, str]]:
    """(image, tag) of every release tag (vX.Y.Z, no pre-release) of each mirrored project, so that an override to
    another version than the chart's default is known too."""
    out = set()
    for image, repo in OPERAND_REPOS.items():
        tags = (mirrors.git(repo, "tag", "--list", "v*") or b"").decode().split()
        out |= {(image, tag) for tag in tags if re.fullmatch(r"v\d+\.\d+\.\d+", tag)}
    return out


def derive_line_rules(mirrors: Mirrors, charts_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """image -> version -> {architectures, source} for LINE_RULES' projects, at the versions the chart profiles
    default to (NFD: each chart's nfdAppVersion) and at every release tag."""
    wanted: dict[str, set[str]] = {image: set() for image in LINE_RULES}
    for path in sorted(charts_dir.glob("v*.json")):
        facts = json.loads(path.read_text(encoding="utf-8"))
        if facts.get("nfdAppVersion"):
            wanted["node-feature-discovery"].add(facts["nfdAppVersion"])
        exporter = (facts.get("defaults") or {}).get("dcgmExporter") or {}
        if exporter.get("version"):
            wanted["dcgm-exporter"].add(str(exporter["version"]))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for image, (repo, path, pattern, tags_of) in LINE_RULES.items():
        tags = (mirrors.git(repo, "tag", "--list") or b"").decode().split()
        wanted[image] |= {t for t in tags if re.fullmatch(r"v?\d+\.\d+\.\d+(-\d+\.\d+\.\d+)?", t)}
        for version in sorted(wanted[image]):
            tag = next((t for t in tags_of(version) if mirrors.commit(repo, t)), None)
            if tag is None:
                continue
            commit = mirrors.commit(repo, tag)
            text = mirrors.show(repo, commit, path, record=False)
            m = re.search(pattern, text or "", re.M)
            if not m:
                continue
            mirrors.show(repo, commit, path)
            out.setdefault(image, {})[version] = {
                "architectures": sorted(p.removeprefix("linux/") for p in m.group(1).split(",")),
                "source": f"{repo}@{tag} ({commit[:12]}): {path}"}
    return out


def derive_operands(mirrors: Mirrors, versions: set[tuple[str, str]]) -> dict[str, dict[str, dict[str, Any]]]:
    """image -> version -> {architectures, source} from the project's build files at the version's tag."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for image, version in sorted(versions):
        repo = OPERAND_REPOS[image]
        tag = version if version.startswith("v") else f"v{version}"
        # Chart values of older releases carry an OS suffix (v1.17.0-ubuntu20.04): the tag is the part before it.
        candidates = [tag, tag.split("-")[0]]
        commit = next((c for c in (mirrors.commit(repo, t) for t in candidates) if c), None)
        if commit is None:
            continue  # no such tag mirrored: gpuconf cannot vouch for the image
        used_tag = next(t for t in candidates if mirrors.commit(repo, t) == commit)
        multi = None
        for path in CI_FILES:
            text = mirrors.show(repo, commit, path, record=False)
            if text and MULTI_ARCH_ON.search(text):
                mirrors.show(repo, commit, path)
                multi = path
                break
        manifest = _manifest_arches(mirrors, repo, commit)
        if manifest is not None:
            out.setdefault(image, {})[version] = {
                "architectures": manifest,
                "source": f"{repo}@{used_tag} ({commit[:12]}): {MANIFEST_WORKFLOW} (one native build per arch "
                          "joined by docker manifest create)"}
            continue
        for path in PLATFORM_FILES:
            text = mirrors.show(repo, commit, path, record=False)
            if text is None or "DOCKER_BUILD_PLATFORM_OPTIONS" not in text:
                continue
            mirrors.show(repo, commit, path)
            where = f"{repo}@{used_tag}:{path}"
            if path.endswith("Makefile"):
                # The Makefile's `ifeq ($(BUILD_MULTI_ARCH_IMAGES),true)` branch holds the multi-arch platforms.
                m = re.search(r"ifeq \(\$\(BUILD_MULTI_ARCH_IMAGES\),true\)(.*?)(?:else|endif)", text, re.S)
                if not m:
                    continue
                arches = _platforms(m.group(1), None, where)
            else:
                arches = _platforms(text, None, where)
            if multi is None:
                arches = ["amd64"]  # the release CI builds natively: what gpuconf can vouch for is amd64
            out.setdefault(image, {})[version] = {
                "architectures": arches,
                "source": f"{repo}@{used_tag} ({commit[:12]}): {path}" + (f", {multi} sets "
                                                                          "BUILD_MULTI_ARCH_IMAGES" if multi else "")}
            break
    return out


def derive_grace(ref: Reference) -> dict[str, list[str]]:
    """The Grace models, each checked against the reference text it cites."""
    texts = {name: ref.text(f"gpu-operator/docs/{name}") for name in ("platform-support.rst", "release-notes.rst")}
    for model, (name, needle) in GRACE_CHECKS.items():
        if needle not in texts[name]:
            raise DeriveError(f"gpu-operator/docs/{name} no longer says {needle!r} (the source of {model})")
    if "Grace-based systems** such as **GH200** and **GB200**" not in texts["release-notes.rst"]:
        raise DeriveError("gpu-operator/docs/release-notes.rst no longer names the Grace-based systems")
    return GRACE


def derive(reference: Path, mirrors_root: Path) -> dict[str, bytes]:
    mirrors = Mirrors(mirrors_root)
    try:
        return _derive(Reference(reference), mirrors)
    finally:
        mirrors.close()


def _derive(ref: Reference, mirrors: Mirrors) -> dict[str, bytes]:
    grace = derive_grace(ref)
    drivers = derive_drivers(mirrors)
    operands = derive_operands(mirrors, _operand_versions(REPO_ROOT / "profiles" / "charts") | _dra_driver_versions()
                               | _release_tags(mirrors))
    operands.update(derive_line_rules(mirrors, REPO_ROOT / "profiles" / "charts"))
    # The inputs of the commits that a source cites (the driver repository's history is read whole, but only the
    # commits that first published an image are cited).
    cited = json.dumps([drivers, operands])
    inputs = {**ref.take("gpu-operator/docs/platform-support.rst", "gpu-operator/docs/release-notes.rst"),
              **{f"mirror:{k}": v for k, v in mirrors.inputs.items() if k.split(":")[0].split("@")[1] in cited}}
    data = {
        "generated": header(SCRIPT, inputs, "CPU architectures: Grace (arm64) GPU models, operand images per "
                                            "version, driver images per version and OS tag."),
        "graceModels": grace,
        "operandImages": operands,
        "driverImages": drivers,
        "notes": [
            "gpu-operator/docs/platform-support.rst (v26.7.0) says non-precompiled RHEL 9.2-9.8 driver containers "
            "are x86 only, while NVIDIA/gpu-driver-container's release jobs copy the multi-arch rhel9 build to the "
            "rhel9.x tags; driverImages records the build files.",
        ],
    }
    return {OUTPUT: dump(data)}


def _more(parser) -> None:
    default = next((p for p in (REPO_ROOT.parent / ".mirror", REPO_ROOT.parent.parent / ".mirror") if p.is_dir()),
                   REPO_ROOT.parent / ".mirror")
    parser.add_argument("--mirrors", type=Path, default=default,
                        help="the folder of git mirrors, <owner>+<name>/repo each (default: ../.mirror)")


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, "exit 1 if profiles/arch.json differs; write nothing", _more).parse_args(argv)
    return run("derive_arch", lambda: derive(args.reference, args.mirrors), args.check)


if __name__ == "__main__":
    sys.exit(main())

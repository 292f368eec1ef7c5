"""The files of one GPU Operator chart, read offline from what `helm pull` writes: the .tgz archive or the folder
`helm pull --untar` leaves (`gpu-operator/Chart.yaml`, `values.yaml`, `templates/`, `crds/`,
`charts/node-feature-discovery/`)."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

#: A chart archive is tens of kilobytes (v26.7.0: 128 KiB packed); these bounds refuse a hostile one before it fills
#: memory, with room for a chart ten times larger.
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_FILES = 4000
#: The parts of a chart its facts come from; every other file (README, LICENSE, the subchart's templates) is skipped.
WANTED_TOP = ("Chart.yaml", "values.yaml", "templates/", "crds/")
NFD = "charts/node-feature-discovery/"
WANTED_NFD = ("Chart.yaml", "values.yaml", "values.schema.json")


class ChartSourceError(Exception):
    """The chart cannot be read: missing, not a chart, or beyond the bounds a chart stays within."""


@dataclass(frozen=True)
class ChartSource:
    """A chart's files by their path inside the chart folder (`values.yaml`, `templates/clusterpolicy.yaml`,
    `charts/node-feature-discovery/values.yaml`), as bytes."""

    name: str  # what the user gave, for messages
    files: Mapping[str, bytes]

    def text(self, rel: str) -> str:
        """One file as UTF-8 text, or a ChartSourceError naming it."""
        if rel not in self.files:
            raise ChartSourceError(f"{self.name}: the chart has no {rel}")
        try:
            return self.files[rel].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ChartSourceError(f"{self.name}: {rel} is not UTF-8 text ({exc.reason})") from None

    def yaml(self, rel: str, every: bool = False) -> Any:
        """One file parsed as YAML 1.2 (with every, the list of its non-empty documents)."""
        from ruamel.yaml import YAML

        try:
            loader = YAML(typ="safe", pure=True)
            text = self.text(rel)
            return [d for d in loader.load_all(text) if d is not None] if every else loader.load(text)
        except ChartSourceError:
            raise
        except Exception as exc:  # ruamel raises several unrelated types; all mean the file is malformed
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ChartSourceError(f"{self.name}: {rel} is not valid YAML: {first}") from None

    def under(self, folder: str) -> list[str]:
        """The files below a folder of the chart (`templates/`), sorted."""
        return sorted(rel for rel in self.files if rel.startswith(folder))


def _wanted(rel: str) -> bool:
    if rel.startswith(NFD):
        return rel[len(NFD):] in WANTED_NFD
    return any(rel == w or (w.endswith("/") and rel.startswith(w) and "/" not in rel[len(w):]) for w in WANTED_TOP)


def _inner(path: str, where: str) -> str | None:
    """The path inside the chart folder of an archive member (`gpu-operator/values.yaml` -> `values.yaml`), or None
    for the folder itself; members outside one top folder, absolute or with `..` are refused."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise ChartSourceError(f"{where}: the archive holds {path!r}, outside the chart folder")
    parts = pure.parts
    return "/".join(parts[1:]) if len(parts) > 1 else None


def _from_tar(path: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    tops: set[str] = set()
    total = 0
    try:
        with tarfile.open(path, mode="r:*") as archive:
            for count, member in enumerate(archive):
                if count >= MAX_FILES:
                    raise ChartSourceError(f"{path}: more than {MAX_FILES} entries; not a chart archive")
                inner = _inner(member.name, str(path))
                tops.add(PurePosixPath(member.name).parts[0] if member.name else "")
                if inner is None or not member.isfile() or not _wanted(inner):
                    continue
                if member.size > MAX_FILE_BYTES or total + member.size > MAX_TOTAL_BYTES:
                    raise ChartSourceError(f"{path}: {member.name} is {member.size} bytes; a chart's files are "
                                           f"far smaller")
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                data = handle.read(MAX_FILE_BYTES + 1)
                total += len(data)
                files[inner] = data
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ChartSourceError(f"{path}: not a readable chart archive ({exc})") from None
    if len(tops) > 1:
        raise ChartSourceError(f"{path}: the archive holds several top folders ({', '.join(sorted(tops))}); "
                               f"`helm pull` writes one")
    return files


def _from_folder(root: Path) -> dict[str, bytes]:
    if not (root / "Chart.yaml").is_file() and len([p for p in root.iterdir() if (p / "Chart.yaml").is_file()]) == 1:
        root = next(p for p in root.iterdir() if (p / "Chart.yaml").is_file())  # the folder `helm pull --untar` made
    files: dict[str, bytes] = {}
    total = 0
    for rel in [*WANTED_TOP[:2], *(NFD + n for n in WANTED_NFD)]:
        files.update(_read(root, rel))
    for folder in ("templates", "crds"):
        if (root / folder).is_dir():
            for entry in sorted((root / folder).iterdir()):
                if entry.is_file() and not entry.is_symlink():
                    files.update(_read(root, f"{folder}/{entry.name}"))
    for data in files.values():
        total += len(data)
    if total > MAX_TOTAL_BYTES:
        raise ChartSourceError(f"{root}: {total} bytes of chart files; a chart's files are far smaller")
    return files


def _read(root: Path, rel: str) -> dict[str, bytes]:
    path = root / rel
    if not path.is_file() or path.is_symlink():
        return {}
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ChartSourceError(f"{path}: {path.stat().st_size} bytes; a chart's files are far smaller")
    return {rel: path.read_bytes()}


def read_chart(path: Path) -> ChartSource:
    """The chart at path: a .tgz as `helm pull` writes it, or its unpacked folder."""
    if path.is_dir():
        files = _from_folder(path)
    elif path.is_file():
        files = _from_tar(path)
    else:
        raise ChartSourceError(f"{path}: no such file or folder")
    if "Chart.yaml" not in files or "values.yaml" not in files:
        raise ChartSourceError(f"{path}: not a Helm chart (no Chart.yaml and values.yaml in its chart folder)")
    return ChartSource(str(path), dict(sorted(files.items())))

"""Writer: files replaced atomically, so a failed run never leaves half-written output."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write text to path through a temporary file in the same folder and an atomic rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_tree(out_dir: str | Path, name: str, files: dict[str, str]) -> None:
    """Replace out_dir/name with exactly these files, atomically: readers see the old tree or the new one.

    The new tree is written next to the old one and swapped in by two renames, so an error at any point leaves
    the existing output as it was; files the new render no longer produces disappear with the old tree.
    """
    import shutil

    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / name
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.new-", dir=root))
    retired = root / f".{name}.old-{os.getpid()}"
    try:
        folders = {staging}
        for rel, text in sorted(files.items()):
            target = staging / rel
            if target.parent not in folders:  # a 1,000-pool cluster has 1,000 node templates in one folder
                target.parent.mkdir(parents=True, exist_ok=True)
                folders.add(target.parent)
            with open(target, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        os.chmod(staging, 0o755)
        if final.exists():
            os.replace(final, retired)
        os.replace(staging, final)
    except BaseException:
        if retired.exists() and not final.exists():
            os.replace(retired, final)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def read_tree(path: str | Path) -> dict[str, str]:
    """Every file below path (relative path -> text); empty when path does not exist."""
    root = Path(path)
    if not root.is_dir():
        return {}
    out = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            out[file.relative_to(root).as_posix()] = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            out[file.relative_to(root).as_posix()] = "<binary file>"
    return out

"""The repository an input file lives in, and which of the paths it names gpuconf reads.

The repository of an intent or a fleet file is the git work tree that holds it: the nearest folder at or above the
file's own folder (symbolic links resolved) that holds `.git` (a folder, or the `.git` file of a worktree or a
submodule). A file in no git work tree has its own folder as its repository. gpuconf reads a file that an input
names (a fleet's base, layers and overlays; spec.operator.imageLock) only when it is inside that repository: the
path is relative (to the naming file's folder), does not leave the repository through `..`, and, with every
symbolic link resolved, still ends inside it. A path that is not is refused where it is written, and the file is
never opened, so nothing of its content reaches a message.

The same repository names the inputs in what gpuconf generates (relative_name): paths relative to its top, so that
the same repository renders the same bytes wherever it is checked out and whichever folder gpuconf runs in.
"""

from __future__ import annotations

import os
from pathlib import Path

#: How the messages name the repository (a machine's absolute path is never printed).
REPOSITORY = "the repository (the git work tree that holds the file, else the file's own folder)"


def _folder_of(file: str | Path) -> Path:
    """The folder of an input file, resolved; the working folder for standard input."""
    if str(file) in ("-", "<stdin>"):
        return Path.cwd().resolve()
    return Path(os.path.abspath(file)).parent.resolve()


def repository_of(file: str | Path) -> Path:
    """The top of the repository that holds file (see the module's docstring)."""
    return top_of(_folder_of(file))


def top_of(folder: Path) -> Path:
    """The top of the git work tree that holds a resolved folder, else the folder itself."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def _within(path: str, root: Path) -> bool:
    try:
        return os.path.commonpath([path, str(root)]) == str(root)
    except ValueError:  # different drives
        return False


def outside(file: str | Path, ref: str, root: Path | None = None) -> str | None:
    """Why the path ref, written in file, is not a file gpuconf reads; None when it is inside the repository: root,
    or file's own (a fleet's layer names files inside the fleet's repository)."""
    if os.path.isabs(ref) or ref.startswith("\\"):
        return "is an absolute path; paths are relative to the file that names them, inside " + REPOSITORY
    root = root if root is not None else repository_of(file)
    lexical = os.path.normpath(os.path.join(_folder_of(file), ref))
    if not _within(lexical, root):
        return "leaves " + REPOSITORY + " through `..`"
    if not _within(os.path.realpath(lexical), root):
        return "is, or passes through, a symbolic link to a place outside " + REPOSITORY
    return None


def relative_name(file: str | Path, input_file: str | Path | None = None) -> str:
    """file's path relative to the top of the repository of input_file (the intent or fleet file given on the
    command line; file itself by default), with `/` separators: how generated files name an input (the same in
    every checkout, from every working folder). Standard input is `<stdin>`."""
    if str(file) in ("-", "<stdin>"):
        return "<stdin>"
    path = Path(os.path.abspath(file))
    root = repository_of(input_file if input_file is not None else path)
    try:
        return path.parent.resolve().relative_to(root).joinpath(path.name).as_posix()
    except ValueError:  # not below its own repository's top: cannot happen, but never a machine's path
        return path.name

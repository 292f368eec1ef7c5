"""The `gpuconf` process: settings made before anything heavy is imported, then the command line.

Both are about a short-lived process and are not made when gpuconf is imported as a library:

- The cyclic garbage collector stays off for the whole command. Importing click, pydantic, jinja2 and the intent
  models allocates a few hundred thousand objects that live until the process ends, and every collection pass walked
  all of them again (19 ms of a 0.26 s render of the largest example, measured with tools/bench.py). Nearly all of
  what a command allocates is acyclic and freed by reference counting; the few cycles (classes, modules) live to
  the end anyway, and the command exits without the interpreter's teardown.
- pydantic's plugin discovery is skipped unless the caller asked for it: it scans the entry points of every
  installed distribution at the first validation (8 ms in the same render, more in a large environment), and gpuconf
  validates only its own intent models. A `PYDANTIC_DISABLE_PLUGINS` the caller set is left as it is.

No `from __future__ import annotations` here: it imports the __future__ module, and `gpuconf --help` as installed
imports nothing but this package and this module beyond a bare Python start-up (tests/test_package.py).
"""


def prepare() -> None:
    """The process settings above; to be called before click, pydantic or the models are imported."""
    import gc
    import os

    gc.disable()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


#: `gpuconf --help` as click prints it at its default width (a terminal of 80 columns or more, or none), written by
#: `make docs-gen` (tools/docs_gen.py) from the click group; tests/test_entry.py holds it to click's own output.
HELP_FILE = "help.txt"


def _help_text() -> str | None:
    """The committed top-level help when the command is just `gpuconf --help` (or -h) and click would print it at
    its default width, else None. Importing click and every command's options was most of what `gpuconf --help`
    cost (issue 32: at most 1.2x bare Python start-up); click formats to min(columns, 80) - 2, where columns is what
    shutil.get_terminal_size says (COLUMNS, then the terminal, else 80), so 80 or more gives the same bytes."""
    import os
    import sys

    if sys.argv[1:] not in (["--help"], ["-h"]):
        return None
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    if columns < 80:
        return None
    try:
        with open(os.path.join(os.path.dirname(__file__), HELP_FILE), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def run() -> None:
    """The `gpuconf` console script and `python -m gpuconf`."""
    text = _help_text()
    if text is not None:
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()
        return
    prepare()
    from .cli import run as command

    command()

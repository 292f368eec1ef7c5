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
"""

from __future__ import annotations


def prepare() -> None:
    """The process settings above; to be called before click, pydantic or the models are imported."""
    import gc
    import os

    gc.disable()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def run() -> None:
    """The `gpuconf` console script and `python -m gpuconf`."""
    prepare()
    from .cli import run as command

    command()

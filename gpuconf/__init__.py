"""gpuconf: declarative, validated configuration for the NVIDIA GPU Operator."""

#: The names gpuconf/_version.py (written by setuptools-scm from git when gpuconf is built) provides, read on first
#: use: `gpuconf --help` as installed imports nothing but this package and its entry (tests/test_package.py).
_BUILD = ("__version__", "__commit__", "__dirty__")


def _build() -> dict:
    """__version__; __commit__, the commit gpuconf was built from, abbreviated as `git describe` writes it ("" when
    unknown); __dirty__, whether the tree it was built from had uncommitted changes."""
    try:
        from ._version import __dirty__ as dirty, __node__ as node, __version__ as version
    except ImportError:  # a source tree no build ran on: no version to claim
        version, node, dirty = "0+unknown", "", "False"
    return {"__version__": version, "__commit__": node[1:] if node.startswith("g") else "",
            "__dirty__": dirty == "True"}


def __getattr__(name: str):
    if name in _BUILD:
        globals().update(_build())
        return globals()[name]
    raise AttributeError(f"module 'gpuconf' has no attribute {name!r}")


def build_text() -> str:
    """What `gpuconf --version` says after the name: the version and, when known, the commit it was built from."""
    from . import __commit__, __dirty__, __version__

    if not __commit__:
        return __version__
    return f"{__version__} (commit {__commit__}{', with uncommitted changes' if __dirty__ else ''})"

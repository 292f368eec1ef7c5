"""Emitter: the one YAML writer of gpuconf. Sorted keys, no aliases, and quoting that YAML 1.1 readers agree with.

Helm and the Kubernetes tooling read YAML 1.1 (go-yaml v2, sigs.k8s.io/yaml), where `on`, `yes`, `y`, `1:20`
and `0777` are not strings; ruamel's default YAML 1.2 dump leaves them bare. Every string that either YAML version
would resolve to something else is double-quoted.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

#: Keys that conventionally lead a Kubernetes document or a config file; the rest follow in sorted order.
K8S_TOP = ("version", "apiVersion", "kind", "metadata", "spec", "data", "rules", "roleRef", "subjects")
# go-yaml v2 also reads y/Y/n/N as booleans and base-60 numbers such as 1:20:30.
_EXTRA_QUOTE = re.compile(r"^(?:[yYnN]|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)$")


@lru_cache(maxsize=1)
def _resolvers() -> tuple:
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver(version=(1, 1)), VersionedResolver(version=(1, 2))


@lru_cache(maxsize=4096)
def needs_quotes(text: str) -> bool:
    """True when a YAML 1.1 or 1.2 reader would not read the bare text back as this string."""
    from ruamel.yaml.nodes import ScalarNode

    if _EXTRA_QUOTE.match(text):
        return True
    return any(str(r.resolve(ScalarNode, text, (True, False))) != "tag:yaml.org,2002:str" for r in _resolvers())


@lru_cache(maxsize=1)
def _fast_dumper() -> Any:
    """libyaml's emitter (through PyYAML): ruamel's pure-Python emitter took 9.4 s for the 2,000 documents of a
    1,000-pool cluster, libyaml 0.8 s."""
    import yaml

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[misc, valid-type]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def represent_str(dumper: Any, data: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=_style(data))

    Dumper.add_representer(str, represent_str)
    return Dumper


def _style(text: str) -> str | None:
    """Double quotes for anything a YAML 1.1 or 1.2 reader would not read back as this string, literal blocks
    for embedded files, plain otherwise."""
    if needs_quotes(text) or not text.replace("\n", "").isprintable():
        return '"'  # control characters are escaped inside double quotes
    if "\n" in text:
        return "|"  # embedded config files (device-plugin, mig-parted) stay readable
    return None


def canonical(value: Any, top: bool = False) -> Any:
    """Plain data with keys sorted (Kubernetes-conventional keys first at the top of a document)."""
    if isinstance(value, Mapping):
        if top:
            keys = sorted(value, key=lambda k: (K8S_TOP.index(k) if k in K8S_TOP else len(K8S_TOP), k))
        else:
            keys = sorted(value)
        return {k: canonical(value[k]) for k in keys}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


_KEY_LINE = re.compile(r"""^( *)("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s'"#\-][^:]*?):(?: |$)""")


def _with_comments(text: str, comments: Mapping[tuple, str]) -> str:
    """Insert `# ...` lines above the mapping keys named in comments (key paths from the document root).

    libyaml writes no comments, so they are placed by reading back the key lines of its block output: a mapping key
    at depth d sits at 2*d spaces. Lines inside list items can look like keys too, but their computed paths run
    through a list and so never equal a commented path, which always runs through mappings.
    """
    out, stack = [], []
    for line in text.splitlines(keepends=True):
        match = _KEY_LINE.match(line)
        if match and len(match.group(1)) % 2 == 0:
            depth = len(match.group(1)) // 2
            raw = match.group(2)
            key = json.loads(raw) if raw.startswith('"') else raw[1:-1].replace("''", "'") if raw.startswith("'") else raw
            del stack[depth:]
            stack.extend([None] * (depth - len(stack)))
            stack.append(key)
            note = comments.get(tuple(stack))
            if note:
                out.append(f"{match.group(1)}# {note}\n")
        out.append(line)
    return "".join(out)


def dump(value: Any, comments: Mapping[tuple, str] | None = None, top: bool = False) -> str:
    """One YAML document as text; comments map key paths to comment lines placed above those keys."""
    import yaml

    text = yaml.dump(canonical(value, top=top), Dumper=_fast_dumper(), sort_keys=False, default_flow_style=False,
                     width=4096, allow_unicode=True)
    return _with_comments(text, comments) if comments else text


def dump_all(documents: Sequence[Mapping[str, Any]]) -> str:
    """Several Kubernetes documents, each starting with ---."""
    import yaml

    return yaml.dump_all([canonical(d, top=True) for d in documents], Dumper=_fast_dumper(), sort_keys=False,
                         default_flow_style=False, width=4096, allow_unicode=True, explicit_start=True)


def header(lines: Iterable[str]) -> str:
    """A comment block for the top of a generated file."""
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)

"""Emitter: the one YAML writer of gpuconf. Sorted keys, no aliases, and quoting that YAML 1.1 readers agree with.

Helm and the Kubernetes tooling read YAML 1.1 (go-yaml v2, sigs.k8s.io/yaml), where `on`, `yes`, `y`, `1:20`
and `0777` are not strings; ruamel's default YAML 1.2 dump leaves them bare. Every string that either YAML version
would resolve to something else is double-quoted.
"""

from __future__ import annotations

import io
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
def _yaml() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # never &id001/*id001: every reader must see plain data

        def represent_str(self, data: str) -> Any:
            if needs_quotes(data) or not data.replace("\n", "").isprintable():
                return self.represent_scalar("tag:yaml.org,2002:str", data, style='"')
            if "\n" in data:
                # Embedded config files (device-plugin, mig-parted) stay readable as literal blocks.
                return self.represent_scalar("tag:yaml.org,2002:str", data, style="|")
            return super().represent_str(data)

    Representer.add_representer(str, Representer.represent_str)
    yaml = YAML(typ="rt")
    yaml.Representer = Representer
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.default_flow_style = False
    return yaml


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


def _commented(value: Any, comments: Mapping[tuple, str], path: tuple = ()) -> Any:
    """Convert canonical data to ruamel containers, attaching `# ...` lines above the keys named in comments."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        out = CommentedMap()
        for key, item in value.items():
            out[key] = _commented(item, comments, (*path, key))
            note = comments.get((*path, key))
            if note:
                out.yaml_set_comment_before_after_key(key, before=note, indent=2 * len(path))
        return out
    if isinstance(value, list):
        return CommentedSeq(_commented(item, comments, (*path, i)) for i, item in enumerate(value))
    return value


def dump(value: Any, comments: Mapping[tuple, str] | None = None, top: bool = False) -> str:
    """One YAML document as text; comments map key paths to comment lines placed above those keys."""
    buf = io.StringIO()
    _yaml().dump(_commented(canonical(value, top=top), comments or {}), buf)
    return buf.getvalue()


def dump_all(documents: Sequence[Mapping[str, Any]]) -> str:
    """Several Kubernetes documents, each starting with ---."""
    return "".join("---\n" + dump(doc, top=True) for doc in documents)


def header(lines: Iterable[str]) -> str:
    """A comment block for the top of a generated file."""
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)

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
def _commented_yaml() -> Any:
    """ruamel's round-trip dumper: the only one that writes comments (the `# via` lines of values.yaml)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # never &id001/*id001: every reader must see plain data

        def represent_str(self, data: str) -> Any:
            return self.represent_scalar("tag:yaml.org,2002:str", data, style=_style(data))

    Representer.add_representer(str, Representer.represent_str)
    yaml = YAML(typ="rt")
    yaml.Representer = Representer
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=2, offset=0)  # the same layout libyaml writes below
    yaml.default_flow_style = False
    return yaml


@lru_cache(maxsize=1)
def _fast_dumper() -> Any:
    """libyaml's emitter (through PyYAML) for documents without comments: ruamel's pure-Python emitter took
    9.4 s for the 2,000 documents of a 1,000-pool cluster, libyaml 0.8 s. The quoting policy is the same."""
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
    data = canonical(value, top=top)
    if comments:
        buf = io.StringIO()
        _commented_yaml().dump(_commented(data, comments), buf)
        return buf.getvalue()
    import yaml

    return yaml.dump(data, Dumper=_fast_dumper(), sort_keys=False, default_flow_style=False, width=4096,
                     allow_unicode=True)


def dump_all(documents: Sequence[Mapping[str, Any]]) -> str:
    """Several Kubernetes documents, each starting with ---."""
    import yaml

    return yaml.dump_all([canonical(d, top=True) for d in documents], Dumper=_fast_dumper(), sort_keys=False,
                         default_flow_style=False, width=4096, allow_unicode=True, explicit_start=True)


def header(lines: Iterable[str]) -> str:
    """A comment block for the top of a generated file."""
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)

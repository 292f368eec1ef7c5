"""The registry mirror and the URLs of an intent: image names that container runtimes can pull, and no credentials
written into the output (GC353, GC354)."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from conftest import ROOT
from gpuconf.intent.loader import load_text
from gpuconf.intent.validate import validate_document

BASE = (ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8")

# An image reference as container runtimes parse it (distribution/reference's grammar), written out independently.
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])"
_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REFERENCE = re.compile(rf"^(?:{_HOST}(?::[0-9]+)?/)?{_PART}(?:/{_PART})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?$")


def _intent(registry: str | None = None, delivery: str = "") -> str:
    text = BASE
    if registry is not None:
        text = text.replace("    chartVersion: v26.3.3\n", f"    chartVersion: v26.3.3\n    registry: {registry}\n")
    return text + delivery


def _findings(text: str) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity, f.path) for f in validate_document(load_text(text, "r.yaml")).findings]


@pytest.mark.parametrize("registry, expected", [
    ("registry.corp.example/nvidia", []),
    ("mirror.local:5000/nvidia/gpu", []),
    ("localhost:5000/nvidia", []),
    # distribution/reference allows a bracketed IPv6 host, but the chart prints the repository unquoted and YAML
    # reads `[::1]:5000/nvidia` as a flow sequence: the chart could not render it.
    ("'[::1]:5000/nvidia'", [("GC353", "error")]),
    ("Registry.Corp.Example/nvidia", []),  # hosts may be upper-case, paths may not
    ("registry.corp.example", []),
    ("https://mirror.corp.example/nvidia/", [("GC353", "error")]),
    ("oci://mirror.corp.example/nvidia", [("GC353", "error")]),
    ('"mirror.corp.example/nvidia "', [("GC353", "error")]),
    ('"mirror.corp.example/nv idia"', [("GC353", "error")]),
    ('"mirror.corp.example/\\u2028nvidia"', [("GC353", "error")]),
    ("mirror.corp.example/nvidia/", [("GC353", "error")]),
    ("mirror.corp.example/NVIDIA", [("GC353", "error")]),
    ("mirror.corp.example/nvidia:v1", [("GC353", "error")]),
    ("mirror.corp.example//nvidia", [("GC353", "error")]),
    ("mirror/nvidia", [("GC353", "warning")]),  # docker.io/mirror/nvidia to a container runtime
    # The chart prints `repository: {{ ... }}` unquoted: these would reach the ClusterPolicy as null, true, 1.5.
    ('"null"', [("GC353", "error")]),
    ('"true"', [("GC353", "error")]),
    ('"1.5"', [("GC353", "error")]),
    ("robot:s3cret@mirror.corp.example/nvidia", [("GC354", "error")]),
    ("token@mirror.corp.example/nvidia", [("GC354", "error")]),
    # An '@' outside the host part is no credential and no registry path either (found by the property below).
    ('"/@"', [("GC353", "error")]),
    ("mirror.corp.example/nv@idia", [("GC353", "error")]),
])
def test_the_registry_is_a_path_image_names_can_start_with(registry, expected):
    assert [(c, s) for c, s, _ in _findings(_intent(registry))] == expected


@pytest.mark.parametrize("field, value, refused", [
    ("repoURL", "https://git.corp.example/platform/gitops.git", False),
    ("repoURL", "git@github.com:corp/gitops.git", False),  # the SSH user, no secret
    ("repoURL", "ssh://git@git.corp.example:2222/corp/gitops.git", False),
    ("repoURL", "https://deploy:ghp_x@git.corp.example/gitops.git", True),
    ("repoURL", "https://ghp_token@github.com/corp/gitops.git", True),  # a token as the user name
    ("repoURL", "ssh://git:pw@git.corp.example/gitops.git", True),
    ("repoURL", "deploy:pw@git.corp.example:corp/gitops.git", True),
    ("repoURL", "https://git.corp.example/a@b/gitops.git", False),  # '@' in the path is no credential
    ("chartRepository", "oci://mirror.corp.example/nvidia/charts", False),
    ("chartRepository", "oci://u:p@mirror.corp.example/nvidia/charts", True),
    ("chartRepository", "https://u@charts.corp.example/nvidia", True),
])
def test_urls_carry_no_credentials(field, value, refused):
    delivery = "  delivery:\n    tool: argocd\n    path: out\n    repoURL: https://git.corp.example/g.git\n"
    delivery = delivery.replace("    repoURL: https://git.corp.example/g.git\n", "") if field == "repoURL" else delivery
    delivery += f"    {field}: {value!r}\n"
    found = [c for c, _, p in _findings(_intent(delivery=delivery)) if c == "GC354"]
    assert found == (["GC354"] if refused else [])


def test_a_credential_never_appears_in_the_finding():
    [finding] = validate_document(load_text(_intent("robot:s3cret@mirror.corp.example/nvidia"), "r.yaml")).findings
    assert "s3cret" not in finding.text() and "robot" not in finding.text()


_ODD = st.text(alphabet=st.sampled_from(list("abcXYZ019.-_:/@ \t[]") + ["\u2028", "\ufeff", "é"]), min_size=1,
               max_size=24)
_PLAUSIBLE = st.from_regex(r"[a-zA-Z][a-z0-9-]{0,5}(\.[a-z]{2,4})?(:[0-9]{2,4})?(/[a-z0-9]{1,5}([._-]{1,2}[a-z0-9]{1,3})?){0,3}",
                           fullmatch=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(registry=st.one_of(_ODD, _PLAUSIBLE))
def test_any_registry_is_refused_or_names_images_that_can_be_pulled(registry):
    from gpuconf.pipeline import render_any

    text = _intent('"' + registry.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"')
    doc = load_text(text, "r.yaml")
    result = validate_document(doc)
    note(repr(registry))
    event("refused" if not result.ok else "rendered")
    if not result.ok:
        assert {f.code for f in result.findings if f.severity == "error"} <= {"GC353", "GC354"}
        return
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        [tree] = render_any(path, os.path.join(tmp, "out")).trees
    values = yaml.safe_load(tree.files["values.yaml"])
    repositories = [node["repository"] for node in _mappings(values) if isinstance(node.get("repository"), str)]
    assert repositories and all(r == registry or r.startswith(registry + "/") for r in repositories)
    for node in _mappings(values):
        if isinstance(node.get("repository"), str) and isinstance(node.get("image"), str):
            assert REFERENCE.match(f"{node['repository']}/{node['image']}:v1"), node
    for doc in yaml.safe_load_all(tree.files["manifests/probes.yaml"]):
        for container in doc["spec"]["template"]["spec"]["containers"]:
            assert REFERENCE.match(container["image"]) and container["image"].startswith(registry + "/"), container


def _mappings(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _mappings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _mappings(item)

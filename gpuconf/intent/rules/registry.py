"""Rules of what lands in image names, wrappers and the report: the registry mirror is a registry path, and no
credentials sit in the registry or in URLs (GC353, GC354), a chart digest pins an OCI chart (GC455)."""

from __future__ import annotations

import re
from typing import Iterator

from ...findings import WARNING, Finding
from .base import Context, rule
from .syntax import shown, shown_text


#: An image name's grammar (github.com/distribution/reference, reference.go): `domain/path`, where the domain is a
#: host with an optional port, or a bracketed IPv6 address, and the path's components are lower-case alphanumerics
#: joined by `.`, `_`, `__` or dashes.
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_PREFIX = re.compile(rf"{_DOMAIN}(?::[0-9]+)?(?:/{_PATH_COMPONENT})*")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@rule("GC353", "the registry mirror is a registry path that image names can start with")
def registry_path(ctx: Context) -> Iterator[Finding]:
    """`spec.operator.registry` is a registry path that image names can start with (distribution/reference's
    grammar: a host with an optional port, then lower-case path parts): no scheme (`https://`), no whitespace,
    no trailing `/`, no tag, and nothing YAML reads as another type when the chart prints it unquoted (`null`,
    `1.5`, a bracketed IPv6 host); a warning when its first part has no `.` or `:` and is not `localhost`, which
    container runtimes read as a Docker Hub namespace (`mirror/nvidia` is `docker.io/mirror/nvidia`)."""
    registry = ctx.intent.spec.operator.registry
    if registry is None:
        return
    loc = ("spec", "operator", "registry")
    example = "registry.corp.example/nvidia"
    if _SCHEME.match(registry):
        yield ctx.finding("GC353", loc, f"{_masked(registry)} has a scheme; image names have none (the mirror's chart "
                          "folder gets oci:// by itself)", f"write the host and path alone, e.g. {example}")
    elif not registry.isprintable() or any(ch.isspace() for ch in registry):
        yield ctx.finding("GC353", loc, f"{shown_text(registry)} contains whitespace or an unprintable character",
                          f"remove it: images would be named {shown_text(registry + '/gpu-operator')}")
    elif registry.endswith("/"):
        yield ctx.finding("GC353", loc, f"{registry!r} ends with '/'", f"remove it: gpuconf adds '/' and the image's "
                          f"name (write {registry.rstrip('/')})")
    elif _credentials(registry, registry=True):
        return  # credentials: GC354 says so, and what the rest of the path is does not matter then
    elif not IMAGE_PREFIX.fullmatch(registry):
        yield ctx.finding("GC353", loc, f"{shown_text(registry)} is not a registry path: a host with an optional "
                          "port, then lower-case path parts of letters, digits and . _ -",
                          f"e.g. {example} or mirror.local:5000/nvidia")
    else:
        from ...render import chart as C

        try:
            reads = C.unquoted(registry, "registry")
        except C.TemplateError:
            reads = None
        if reads != registry:
            # The chart prints every `repository: {{ ... }}` unquoted (templates/clusterpolicy.yaml).
            yield ctx.finding("GC353", loc, f"the chart prints image repositories unquoted, and YAML reads "
                              f"{registry!r} back as {shown(reads)}, not as the registry's name",
                              f"add the registry's path, e.g. {registry}/nvidia")
            return
        host = registry.split("/", 1)[0]
        if "." not in host and ":" not in host and host != "localhost" and host == host.lower():
            # distribution/reference (normalize.go) takes a first part without '.' or ':' for a Docker Hub namespace.
            yield ctx.finding("GC353", loc, f"container runtimes read {registry!r} as docker.io/{registry}: its first "
                              f"part {host!r} has no '.' or ':' and is not localhost",
                              f"name the registry's host in full, e.g. {host}.corp.example/...", severity=WARNING)


#: Where credentials must never be written (gpuconf writes these into values, wrappers, probes and REPORT.md), and
#: where they belong instead.
_CREDENTIAL_HOMES = {
    ("spec", "operator", "registry"): "give the pull secret's name in spec.operator.imagePullSecrets (a Secret of "
                                      "type kubernetes.io/dockerconfigjson)",
    ("spec", "delivery", "repoURL"): "register the repository's credentials with Argo CD (a Secret labelled "
                                     "argocd.argoproj.io/secret-type: repository)",
    ("spec", "delivery", "chartRepository"): "keep them in a Secret: Argo CD's repository Secret, or the Flux "
                                             "source's secretRef",
    ("spec", "delivery", "destination", "server"): "register the cluster with Argo CD (a Secret labelled "
                                                   "argocd.argoproj.io/secret-type: cluster)",
    ("spec", "delivery", "ociArtifact", "url"): "give the registry's credentials to Flux in a docker-registry Secret "
                                                "(spec.delivery.ociArtifact.pullSecret)",
    ("spec", "computeDomains", "chartRepository"): "keep them in a Secret: Argo CD's repository Secret, or the Flux "
                                                   "OCIRepository's secretRef",
}


@rule("GC354", "no credentials in the registry or in URLs")
def no_credentials(ctx: Context) -> Iterator[Finding]:
    """No credentials in `spec.operator.registry`, `spec.delivery.repoURL`, `spec.delivery.chartRepository`,
    `spec.delivery.destination.server`, `spec.delivery.ociArtifact.url` or `spec.computeDomains.chartRepository` (`user:password@`, or a token before `@`
    in an `https`/`oci` URL; `git@host:repo` and `ssh://git@host/...` name the SSH user and pass): gpuconf writes
    these values into values, wrappers, probes and REPORT.md; the hint names the Secret they belong in, and the
    finding masks them."""
    delivery = ctx.intent.spec.delivery
    values = {("spec", "operator", "registry"): ctx.intent.spec.operator.registry,
              ("spec", "delivery", "repoURL"): delivery.repoURL,
              ("spec", "delivery", "chartRepository"): delivery.chart_repository,
              ("spec", "delivery", "destination", "server"): delivery.destination.server
              if delivery.destination is not None else None,
              ("spec", "delivery", "ociArtifact", "url"): delivery.oci_artifact.url
              if delivery.oci_artifact is not None else None,
              ("spec", "computeDomains", "chartRepository"): ctx.intent.spec.compute_domains.chart_repository
              if ctx.intent.spec.compute_domains is not None else None}
    for loc, value in values.items():
        if value is not None and _credentials(value, loc[-1] == "registry"):
            yield ctx.finding("GC354", loc, f"{_masked(value)} carries credentials (the part before '@'); gpuconf "
                              "would write them into values, wrappers and REPORT.md", _CREDENTIAL_HOMES[loc])


def _userinfo(value: str) -> tuple[str | None, str]:
    """The part of a URL (or of git's user@host:path form) before '@', if any, and the scheme."""
    scheme = _SCHEME.match(value)
    rest = value[scheme.end():] if scheme else value
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0] if scheme else rest.split("/", 1)[0]
    if "@" not in authority:
        return None, scheme.group(0)[:-3].lower() if scheme else ""
    return authority.rpartition("@")[0], scheme.group(0)[:-3].lower() if scheme else ""


def _credentials(value: str, registry: bool) -> bool:
    """A password (user:password@), or any user part where a user is a token (http, https, oci, a registry)."""
    user, scheme = _userinfo(value)
    if user is None:
        return False
    # ssh://git@host/... and git@host:org/repo name the SSH user, not a secret; a password after it is one.
    return registry or ":" in user or scheme in ("http", "https", "oci")


def _masked(value: str) -> str:
    """value for a message, with what stands before '@' in its authority replaced: findings end up in CI logs."""
    user, _ = _userinfo(value)
    if user is None:
        return shown_text(value)
    return shown_text(value.replace(user + "@", "***@", 1))


@rule("GC455", "a chart digest pins an OCI chart source")
def chart_digest(ctx: Context) -> Iterator[Finding]:
    """`spec.delivery.chartDigest` pins the chart's OCI manifest in Flux's OCIRepository (`spec.ref.digest`); a
    classic Helm repository (https) has no digest Flux's HelmRepository can pin (the attestation records the chart
    archive's digest there instead)."""
    spec = ctx.intent.spec
    if spec.delivery.chart_digest is None:
        return
    from ...render.gitops import intent_chart_source

    source = intent_chart_source(ctx.intent).url
    if not source.startswith("oci://"):
        yield ctx.finding("GC455", ("spec", "delivery", "chartDigest"), f"the chart comes from the Helm repository "
                          f"{shown(source)}, which Flux cannot pin by digest: chartDigest pins an OCI chart's "
                          "manifest", "remove chartDigest (the attestation records the chart archive's digest), or "
                          "serve the chart from an OCI registry (spec.delivery.chartRepository: oci://...)")

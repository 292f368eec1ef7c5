"""The image lock's rules (GC450-GC451: the lock pins every image the render pulls, and a driver digest can pin it)
and the admission policy's (GC452: it has the images it admits; GC453: Kyverno acts where it applies; GC454: the lock
a change replaces is read for a policy that pins).

A lock that cannot be read, or that is not a map of image references to digests, is not a finding: it is bad input
(gpuconf/render/imagelock.py raises LockError, exit 2 with the reason)."""

from __future__ import annotations

import dataclasses
from typing import Iterator

from ...findings import ERROR, Finding
from ...render.imagelock import LOCK_LOC
from .base import Context, rule


def _checked(ctx: Context) -> bool:
    """True when the intent has a lock and no error of another rule (the plan of an invalid intent is not built)."""
    return ctx.intent.spec.operator.image_lock is not None and not any(
        f.severity == ERROR and f.code not in ("GC450", "GC451") for f in ctx.found)


def _unpinned(ctx: Context):
    """The lock, the merged values and what the render pulls without the lock: (lock, merged, ImageList, drivers)."""
    from ... import plan as P
    from ...output.images import driver_images, images
    from ...render import nodes, probes
    from ...render.values import build_values

    plan = P.build(ctx.intent, ctx.doc.file, ctx.doc)  # reads the lock: LockError (exit 2) when it is not one
    bare = dataclasses.replace(plan, image_lock=None)
    merged = build_values(bare).merged()
    documents = {"drivers": nodes.nvidia_drivers(bare, merged), "probes": probes.render(bare)}
    return plan.image_lock, merged, images(bare, merged, documents), driver_images(merged, documents)


@rule("GC450", "the image lock has a digest for every image the render pulls")
def lock_is_complete(ctx: Context) -> Iterator[Finding]:
    """`spec.operator.imageLock` names a file that maps every image reference the render pulls (what `gpuconf images`
    lists: the operator, its operands, NFD, gpuconf's probe Jobs) to its `sha256:` digest, and every driver image to
    one OS variant (`<repository>/driver:<version>-<osTag>`); an image the lock does not have would be pulled by tag.
    Checked once the intent has no other error."""
    if not _checked(ctx):
        return
    lock, _, listed, drivers = _unpinned(ctx)
    for ref in listed.references:
        if ref not in lock.digests:
            yield ctx.finding("GC450", LOCK_LOC, f"{lock.file} has no digest for {ref}, which the render pulls",
                              f"add `{ref}: sha256:...` (skopeo inspect --format '{{{{.Digest}}}}' docker://{ref})")
    from ...output.images import reference

    for repository, image, version in sorted(set(drivers)):
        ref = reference(repository, image, version)
        if not lock.driver_variants(ref):
            yield ctx.finding("GC450", LOCK_LOC, f"{lock.file} has no digest for the driver image {ref}-<osTag>",
                              f"add `{ref}-<osTag>: sha256:...` for the OS of the GPU nodes (e.g. -ubuntu24.04)")


@rule("GC451", "a driver digest pins one OS variant, and never a precompiled driver")
def lock_driver_pins(ctx: Context) -> Iterator[Finding]:
    """A driver digest pins one image, and so one OS variant: the operator appends no `-<osTag>` to a path that
    holds `sha256:` (gpu-operator controllers/object_controls.go), so a lock with digests for several OS variants of
    one driver cannot pin it for every node. With `driver.usePrecompiled` the operator joins `:<version>-<kernel>`
    and the NVIDIADriver refuses digests ("specifying image digest is not supported when precompiled is enabled")."""
    if not _checked(ctx):
        return
    lock, merged, _, drivers = _unpinned(ctx)
    from ...output.images import reference

    for repository, image, version in sorted(set(drivers)):
        ref = reference(repository, image, version)
        variants = lock.driver_variants(ref)
        if len(variants) > 1:
            yield ctx.finding("GC451", LOCK_LOC, f"{lock.file} has digests for {len(variants)} OS variants of the "
                              f"driver {ref} ({', '.join(variants)}): one digest pins one OS variant",
                              "keep the OS your GPU nodes run, or give the pools of another OS their own driver "
                              "version (an NVIDIADriver each)")
    if drivers and merged["driver"].get("usePrecompiled"):
        yield ctx.finding("GC451", LOCK_LOC, "the driver is precompiled (driver.usePrecompiled), which cannot be "
                          "pinned by digest", "drop the override of driver.usePrecompiled, or the image lock")


@rule("GC452", "an admission policy has the images it admits")
def admission_has_images(ctx: Context) -> Iterator[Finding]:
    """`spec.security.admission: kyverno` admits, in the operator's namespace, only the images of
    `spec.operator.imageLock` (pinned by digest), else anything under `spec.operator.registry`: one of them must be
    set. On OpenShift with `install: olm` the operator's own images come from OLM's catalogue, which gpuconf cannot
    list, so the policy would refuse the operator."""
    spec = ctx.intent.spec
    if spec.admission is None:
        return
    loc = ("spec", "security", "admission")
    if spec.operator.registry is None and spec.operator.image_lock is None:
        yield ctx.finding("GC452", loc, f"admission: {spec.admission} admits the mirror's images or the "
                          "lock's, but neither spec.operator.registry nor spec.operator.imageLock is set",
                          "set spec.operator.registry to the mirror the nodes pull from, or an imageLock")
    openshift = spec.cluster.openshift
    if spec.cluster.distribution == "openshift" and (openshift is None or openshift.install == "olm"):
        yield ctx.finding("GC452", loc, "OLM installs the operator from its catalogue, whose images gpuconf cannot "
                          "list: the policy would refuse the operator's own pods",
                          "install with Helm (spec.cluster.openshift.install: helm), or drop the admission policy")


@rule("GC453", "the admission policy applies where Kyverno acts")
def admission_where_kyverno_acts(ctx: Context) -> Iterator[Finding]:
    """`spec.security.admission: kyverno` puts its Policy in the operator's namespace, where the chart runs the
    operator and its operands. Kyverno's Helm chart (v1.19.0) skips every resource in kube-system, kube-public and
    kube-node-lease (its default `config.resourceFilters`) and in its own namespace (`config.excludeKyvernoNamespace`,
    default true; `spec.security.kyvernoNamespace`, default kyverno): a Policy there enforces nothing, so the
    operator's namespace may not be one of them."""
    spec = ctx.intent.spec
    if spec.admission is None:
        return
    from ...render.admission import SKIPPED_NAMESPACES, skipped_namespaces

    why = skipped_namespaces(ctx.intent).get(spec.operator.namespace)
    if why is None:
        return
    # The operator's namespace as written, else (the default) the Kyverno namespace that made it one Kyverno skips.
    explicit = "namespace" in spec.operator.model_fields_set
    loc = ("spec", "operator", "namespace") if explicit else ("spec", "security", "kyvernoNamespace")
    yield ctx.finding("GC453", loc, f"admission: {spec.admission} would enforce nothing in the operator's namespace "
                      f"{spec.operator.namespace}: {why}",
                      "give the operator a namespace of its own (spec.operator.namespace)" + (
                          ", or set spec.security.kyvernoNamespace to the namespace Kyverno runs in"
                          if spec.operator.namespace not in SKIPPED_NAMESPACES else ", e.g. gpu-operator"))


@rule("GC454", "a previous image lock belongs to an admission policy with an image lock")
def previous_lock_has_a_use(ctx: Context) -> Iterator[Finding]:
    """`spec.security.previousImageLock` names the image lock a change replaces, whose digests the admission policy
    admits as well for the sync that moves them: it needs `spec.security.admission` and `spec.operator.imageLock`
    (without a lock the policy admits the whole mirror, old digests included), and it must not be the lock itself."""
    spec = ctx.intent.spec
    previous = spec.security.previous_image_lock if spec.security is not None else None
    if previous is None:
        return
    loc = ("spec", "security", "previousImageLock")
    if spec.admission is None or spec.operator.image_lock is None:
        missing = " and ".join(name for name, value in (("spec.security.admission", spec.admission),
                                                         ("spec.operator.imageLock", spec.operator.image_lock))
                               if value is None)
        yield ctx.finding("GC454", loc, f"previousImageLock is read only by an admission policy that pins images, "
                          f"but {missing} is not set", "drop previousImageLock")
        return
    from ...render.imagelock import LOCK_LOC, PREVIOUS_LOCK_LOC, lock_path

    if lock_path(ctx.intent, ctx.doc, PREVIOUS_LOCK_LOC) == lock_path(ctx.intent, ctx.doc, LOCK_LOC):
        yield ctx.finding("GC454", loc, f"previousImageLock names the image lock itself ({previous})",
                          "keep the lock the change replaces as a file of its own (e.g. images.lock.previous.yaml) "
                          "and name that one")

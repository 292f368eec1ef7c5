"""Domain rules of CPU architecture (GC480, GC481): pools of Grace systems (GB200, GB300, GH200) are arm64 nodes, so
the driver image and the operand images they pull must exist for arm64.

The facts are gpuconf.arch's (profiles/arch.json, derived by tools/derive_arch.py with a source per entry): driver
images per version, OS tag and architecture from NVIDIA/gpu-driver-container's NGC release jobs since 2024, and
operand images per version from each project's build files at its release tag.

What the intent does not say is not guessed: the nodes' OS is known only when a pool selects its nodes by the NFD OS
labels the operator itself reads (match.nodeLabels feature.node.kubernetes.io/system-os_release.ID and .VERSION_ID);
without them, GC480 checks that the driver has an arm64 image for some OS. Precompiled drivers (tagged per kernel)
and digests of an image lock (a digest names one manifest, which only the registry can tell apart) are not checked.
"""

from __future__ import annotations

from typing import Iterator

from ... import arch, catalog, plan
from ...findings import WARNING, Finding
from ...hazards import values_of, version_key
from .base import Context, rule

CHART = ("spec", "operator", "chartVersion")


def _driver_loc(ctx: Context, i: int, pool) -> tuple:
    """Where the pool's driver version is set: its own, the intent's, else the chart's default (the chart version)."""
    if pool.driver is not None and pool.driver.version:
        return ("spec", "pools", i, "driver", "version")
    return ("spec", "driver", "version") if ctx.intent.spec.driver.version else CHART


def _newest(ctx: Context, version: str, os_tag: str | None) -> str | None:
    """A driver with an arm64 image (for os_tag when given) to suggest: the newest of the version's branch, else the
    newest the pinned chart is validated with (its component matrix), else the newest of all."""
    branch = version.split(".")[0]
    fits = [v for v, images in arch.facts()["driverImages"].items()
            if any(arch.ARM64 in e["architectures"] for t, e in images.items() if os_tag is None or t == os_tag)]
    chart = catalog.chart(ctx.intent.spec.operator.chart_version)
    validated = set(chart.component_matrix.get("drivers", ())) if chart is not None else set()
    same = [v for v in fits if v.split(".")[0] == branch]
    return max(same or [v for v in fits if v in validated] or fits, key=version_key, default=None)


def _some(tags: list[str], most: int = 6) -> str:
    """A list of OS tags for a hint, the newest-looking first, cut at most."""
    def key(tag: str) -> tuple:
        name = tag.rstrip("0123456789.")
        return name, version_key(tag[len(name):] or "0")

    tags = sorted(tags, key=key, reverse=True)
    return ", ".join(tags[:most]) + (f" and {len(tags) - most} more" if len(tags) > most else "")


def _versions(ctx: Context, i: int, pool) -> list[tuple[str, tuple]]:
    """(driver version, where it is set) of each driver the operator installs on the pool: the one it runs, and the
    target of a roll-out whose waves move the pool (spec.driver.upgrade.rollout, plan.wave_versions)."""
    version = plan.effective_driver(ctx.intent, pool)
    if version is None:
        return []  # a host driver: the nodes bring their own
    out = [(version, _driver_loc(ctx, i, pool))]
    upgrade = ctx.intent.spec.driver.upgrade
    if upgrade is not None and upgrade.rollout is not None and plan.pool_driver(ctx.intent, pool) == "cluster":
        moved = plan.wave_versions(ctx.intent, version).get(pool.name)
        if moved is not None and moved[1] == upgrade.rollout.version != version:
            out.append((upgrade.rollout.version, ("spec", "driver", "upgrade", "rollout", "version")))
    return out


@rule("GC480", "a Grace (arm64) pool's driver has an arm64 image for the nodes' OS")
def grace_driver(ctx: Context) -> Iterator[Finding]:
    """A pool of Grace systems (GB200, GB300, GH200: arm64 nodes) whose driver the operator installs needs the driver
    image `<version>-<OS tag>` built for arm64. With the OS known from the pool's NFD OS labels: an error when NVIDIA
    published no image of the version for that OS, or one for amd64 only; without them: an error when the version
    has no arm64 image for any OS. (warning) A version the release jobs gpuconf read never listed. The target of a
    driver roll-out (spec.driver.upgrade.rollout) is checked for the pools its waves move."""
    chart_version = ctx.intent.spec.operator.chart_version
    for i, pool, version, loc in ((i, p, v, loc) for i, p in arch.grace_pools(ctx.intent)
                                  for v, loc in _versions(ctx, i, p)):
        images = arch.driver_images(version)
        what = f"pool {pool.name} runs {pool.gpu} (Grace: arm64 nodes)"
        if images is None:
            newest = _newest(ctx, version, None)
            yield ctx.finding("GC480", loc, f"{what}, but gpuconf has no record of driver {version}'s images: "
                              "NVIDIA/gpu-driver-container's NGC release jobs since 2024 do not list it, so its "
                              "arm64 build is not established", f"pin a listed driver with an arm64 image, e.g. "
                              f"{newest}" if newest else None, severity=WARNING)
            continue
        os_tag = arch.os_tag(pool, chart_version)
        arm = arch.driver_arm64_os_tags(version)
        if os_tag is not None:
            entry = images.get(os_tag)
            if entry is not None and arch.ARM64 in entry["architectures"]:
                continue
            newest = _newest(ctx, version, os_tag)
            fix = f"pin driver {newest} (it has an arm64 image for {os_tag})" if newest else \
                f"run an OS the driver has an arm64 image for: {_some(arm)}" if arm else None
            if entry is None:
                message = f"{what} on {os_tag}, but driver {version} has no image for {os_tag} at all"
            else:
                message = (f"{what} on {os_tag}, but the driver image {version}-{os_tag} is built for "
                           f"{', '.join(entry['architectures'])} only ({entry['source']})")
            yield ctx.finding("GC480", loc, message, fix)
        elif not arm:
            newest = _newest(ctx, version, None)
            yield ctx.finding("GC480", loc, f"{what}, but driver {version} has no arm64 image for any OS (built for "
                              f"amd64 only: {_some(list(images))})",
                              f"pin driver {newest} (it has arm64 images)" if newest else None)


#: Operand value blocks whose images run on every GPU node (DaemonSets), with the versions the chart leaves to its
#: appVersion; the driver is GC480's. Sandbox (VM) operands are not listed: gpuconf has no facts on their images.
_NODE_OPERANDS = ("validator", "toolkit", "devicePlugin", "gfd", "dcgm", "dcgmExporter", "migManager",
                  "nodeStatusExporter", "gds", "gdrcopy")
_APP_VERSION = ("validator", "nodeStatusExporter")


def _override_loc(ctx: Context, key: str) -> tuple | None:
    """The override that sets a block's image (its last one), if any."""
    found = None
    for j, override in enumerate(ctx.intent.spec.overrides):
        if override.path in (key, f"{key}.image", f"{key}.version", f"{key}.repository", f"{key}.tag"):
            found = ("spec", "overrides", j, "value")
    return found


@rule("GC481", "the images a Grace (arm64) pool pulls are built for arm64")
def grace_images(ctx: Context) -> Iterator[Finding]:
    """Every operand the GPU nodes run (validator, toolkit, device plugin, GFD, DCGM, DCGM Exporter, MIG manager, node
    status exporter, GDS, GDRCopy, the driver manager) and NFD's worker pull their image on the Grace pools' arm64
    nodes too: an error for an image its project builds for amd64 only; (warning) an image an override sets (version
    or name) that gpuconf has no build record of, so it cannot vouch for an arm64 variant. The chart's own default
    images are built for arm64 where gpuconf has their sources (`gpuconf images` shows each image's architectures)."""
    pools = arch.grace_pools(ctx.intent)
    if not pools:
        return
    values = values_of(ctx.intent, ctx.doc)
    chart = catalog.chart(ctx.intent.spec.operator.chart_version)
    if values is None or chart is None:
        return
    defaults = chart.shared_defaults
    names = ", ".join(p.name for _, p in pools)

    def block(tree, *keys) -> dict:
        for key in keys:
            tree = tree.get(key) if isinstance(tree, dict) else None
        return tree if isinstance(tree, dict) else {}

    checked: list[tuple[str, dict, dict, str | None]] = []  # (key, block, default block, app version default)
    for key in _NODE_OPERANDS:
        if block(values, key).get("enabled", key == "validator"):
            checked.append((key, block(values, key), block(defaults, key),
                            chart.app_version if key in _APP_VERSION else None))
    if block(values, "driver").get("enabled") and not plan.cluster_preinstalled(ctx.intent):
        checked.append(("driver.manager", block(values, "driver", "manager"), block(defaults, "driver", "manager"),
                        None))
    if block(values, "nfd").get("enabled"):
        nfd = block(values, "node-feature-discovery", "image")
        checked.append(("node-feature-discovery.image",
                        {"image": "node-feature-discovery", "version": nfd.get("tag") or chart.nfd_app_version},
                        {"image": "node-feature-discovery", "version": chart.nfd_app_version}, None))
    for key, current, default, app_version in checked:
        image, version = current.get("image"), str(current.get("version") or app_version or "")
        if not image or not version:
            continue
        pinned = "sha256:" in version
        facts = None if pinned else arch.operand(str(image), version)
        where = f"{current.get('repository', '')}/{image}:{version}".lstrip("/") if not pinned else \
            f"{current.get('repository', '')}/{image}@{version}".lstrip("/")
        if facts is not None and arch.ARM64 not in facts["architectures"]:
            loc = _override_loc(ctx, key) or CHART
            yield ctx.finding("GC481", loc, f"{where} runs on every GPU node, and pool(s) {names} are arm64 "
                              f"(Grace), but it is built for {', '.join(facts['architectures'])} only "
                              f"({facts['source']})", "use a version built for arm64 too, e.g. the chart's default "
                              f"{default.get('version') or app_version}")
        elif facts is None and not pinned and (image, version) != (default.get("image"),
                                                                    str(default.get("version") or app_version)):
            loc = _override_loc(ctx, key) or CHART
            yield ctx.finding("GC481", loc, f"{where} runs on every GPU node, and pool(s) {names} are arm64 "
                              f"(Grace): gpuconf has no build record of {image} {version}, so it cannot vouch that "
                              "an arm64 variant exists", f"check that `docker manifest inspect {where}` lists "
                              "linux/arm64, or keep the chart's default", severity=WARNING)

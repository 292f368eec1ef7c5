"""Plain-text reporters: the intent summary, the catalogue listing and the rule list."""

from __future__ import annotations

from .. import catalog, plan


def summarise(intent, file: str) -> str:
    """A short, stable description of a valid intent: pools, GPUs, resources, teams."""
    spec = intent.spec
    strategy = plan.mig_strategy(intent)
    lines = [f"{intent.metadata.name} ({file}): GPU Operator {spec.operator.chart_version}, "
             f"Kubernetes {spec.cluster.kubernetes_version} ({spec.cluster.distribution}), "
             + ("allocation DRA" if spec.cluster.allocation == "dra" else f"MIG strategy {strategy or 'n/a (no MIG pools)'}")]
    rows = [("pool", "gpu", "nodes", "gpus", "sharing", "advertises")]
    total_gpus = total_nodes = 0
    for pool in spec.pools:
        prof = plan.pool_profile(intent, pool)
        cap = plan.pool_capacity(intent, pool, strategy)
        gpus = pool.gpus_per_node * pool.nodes
        total_gpus += gpus
        total_nodes += pool.nodes
        ads = ", ".join(f"{cap.total(r)} {r}" for r in sorted(cap.per_node)) if cap else "?"
        kind = plan.sharing_kind(prof) if prof else "?"
        low = plan.min_nodes(intent, pool)  # an autoscaled pool: its range; the totals count the maximum
        nodes = str(pool.nodes) if low == pool.nodes else f"{low}-{pool.nodes}"
        rows.append((pool.name, pool.gpu, nodes, str(gpus), f"{pool.sharing} ({kind})", ads))
    lines += _table(rows)
    counts = [_count(len(spec.pools), "pool"), _count(total_nodes, "node"), _count(total_gpus, "GPU")]
    lines.append(f"total: {', '.join(counts)}; {_count(len(spec.teams), 'team')}, "
                 f"{_count(len(spec.overrides), 'override')}")
    return "\n".join(lines) + "\n"


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


#: The capabilities `gpuconf catalog` shows per release, with their column titles.
CAPABILITY_COLUMNS = (("perPoolDrivers", "per-pool drivers"), ("gpuClusterStack", "DRA stack"),
                      ("kernelModuleType", "kernelModuleType"), ("nriPlugin", "NRI"),
                      ("cdiDefaultEnabled", "CDI on"), ("serviceMonitorDefault", "ServiceMonitor on"))


def releases_table() -> list[str]:
    """One row per chart release gpuconf knows: its origin, default driver, validated drivers and capabilities."""
    rows = [("release", "from", "default driver", "validated drivers", *(t for _, t in CAPABILITY_COLUMNS))]
    for version in catalog.chart_versions():
        facts = catalog.chart(version)
        assert facts is not None
        drivers = facts.component_matrix.get("drivers", ())
        origin = "gpuconf" if facts.origin == "gpuconf" else f"added ({facts.semantics_of} semantics)"
        rows.append((version, origin, str(facts.shared_defaults["driver"]["version"]),
                     str(len(drivers)) if drivers else "-",
                     *("yes" if facts.can(c) else "-" for c, _ in CAPABILITY_COLUMNS)))
    return _table(rows)


def catalog_text(gpu_id: str | None) -> str | None:
    """The GPU models and chart versions, or one model in full; None for an unknown model."""
    models = catalog.gpu_models()
    if gpu_id is None:
        rows = [("model", "name", "memory", "MIG", "PCI device ids")]
        for mid in sorted(models):
            m = models[mid]
            mem = f"{m.memory_gib:g} GiB" if m.memory_gib else "?"
            mig = f"{len(m.mig_profiles)} profiles" if m.mig_capable else "no"
            rows.append((mid, m.name, mem, mig, m.pci_identities()))
        lines = _table(rows)
        lines.append("chart versions: " + ", ".join(catalog.chart_versions()))
        lines += ["", "GPU Operator chart releases (gpuconf chart add FILE adds one gpuconf does not ship):"]
        lines += releases_table()
        table = catalog.chart_table()
        lines.append(f"upgrade rule: {table['upgradeRule']} ({table['upgradeRuleSource']})")
        return "\n".join(lines) + "\n"
    model = models.get(gpu_id)
    if model is None:
        return None
    lines = [f"{model.id}: {model.name}", f"  PCI device ids: {', '.join(model.pci_device_ids)}"]
    if model.pci_subsystem_ids:
        lines.append(f"  PCI subsystem ids: {', '.join(model.pci_subsystem_ids)} (the device id alone is shared)")
    lines.append(f"  memory: {f'{model.memory_gib:g}' if model.memory_gib is not None else '?'} GiB, "
                 f"compute capability {model.compute_capability or '?'}, family {model.family}")
    if model.product_labels:
        lines.append("  GFD product labels: " + "; ".join(f"{label} ({when})" for label, when in catalog.gfd_products(model)))
    lines.append(f"  confidence: {model.confidence}")
    if model.mig_capable:
        rows = [("profile", "slices", "max", "placements")]
        for name, p in sorted(model.mig_profiles.items(), key=lambda kv: (kv[1].memory_slices, kv[1].compute_slices, kv[0])):
            starts = ",".join(str(s) for s in p.starts)
            rows.append((name, f"{p.compute_slices}c/{p.memory_slices}m", str(p.max_instances), f"{{{starts}}}:{p.size}"))
        lines += _table(rows)
        lines.append("  presets: " + ", ".join(sorted(catalog.mig_presets(model))))
        media = sorted(name for name in model.mig_profiles if catalog.media_extended(name))
        if media:
            lines.append(f"  media extensions ({', '.join(media)}): {catalog.MEDIA_RULE}")
    else:
        lines.append("  MIG: not supported")
    return "\n".join(lines) + "\n"


def unknown_model(gpu_id: str) -> str:
    """Why `gpuconf catalog --gpu` has nothing to show, with the spellings of the same model it does know."""
    offered = catalog.model_suggestions(gpu_id, catalog.gpu_models().values())
    hint = f"; did you mean {' or '.join(offered)}?" if offered else ""
    return f"unknown GPU model {gpu_id!r}{hint} (`gpuconf catalog` lists them)"


def rules_text() -> str:
    """Every stable finding code with its title."""
    return "".join(f"{code}  {title}\n" for code, title in rule_rows())


def rule_rows() -> list[tuple[str, str]]:
    """(code, title) of every stable finding code, in `gpuconf rules` order (the docs' reference reads it too)."""
    from ..cluster.auditresult import TITLES as audit_titles
    from ..intent.fleet import TITLES as fleet_titles
    from ..intent.loader import TITLES as loader_titles
    from ..intent.rules import rule_codes
    from ..intent.typecheck import TITLES as type_titles

    return sorted([*loader_titles.items(), *type_titles.items(), *rule_codes(), *fleet_titles.items()]) + \
        sorted(audit_titles.items())


def render_summary(tree, target: str) -> str:
    """What a render wrote: the intent summary (a cluster's), then the files, the record of them included."""
    from .writer import with_record

    from ..escape import show_path

    files = sorted(with_record(tree.files))
    lines = [summarise(tree.plan.intent, tree.plan.source).rstrip("\n")] if tree.plan is not None else []
    lines.append(f"wrote {len(files)} files to {show_path(target)}/:")
    lines += [f"  {show_path(path)}" for path in files]
    return "\n".join(lines) + "\n"


def tree_diff(folder, new: dict[str, str], root: str) -> str:
    """Stale, missing, extra and foreign files of a folder (writer.Folder) against a fresh render, byte for byte,
    with a unified diff of the files gpuconf owns."""
    import difflib

    from ..escape import show_path

    if folder.kind in ("symlink", "file"):
        what = "a symbolic link" if folder.kind == "symlink" else "not a folder"
        return f"foreign: {show_path(root)} ({what}; gpuconf writes real folders only and does not replace this)\n"
    old = folder.files
    expected = {path: text.encode("utf-8") for path, text in new.items()}
    foreign = set(folder.foreign) - folder.changed  # a file gpuconf wrote and someone changed is stale, not foreign
    out = []
    for path in sorted(set(old) | set(expected) | foreign):
        shown = show_path(f"{root}/{path}")
        if path in foreign:
            out.append(f"foreign: {shown} (gpuconf did not write it: a render refuses to delete it)")
        elif path not in old:
            out.append(f"missing: {shown}")
        elif path not in expected:
            out.append(f"extra: {shown}")
        elif old[path] != expected[path]:
            out.append(f"stale: {shown}{_why_stale(folder, path, expected[path])}")
    if not out:
        return ""
    text = "\n".join(out) + "\n"
    for path in sorted((set(old) | set(expected)) - foreign):
        if old.get(path) != expected.get(path):
            text += "".join(difflib.unified_diff(
                _shown_lines(old.get(path)), _shown_lines(expected.get(path)),
                fromfile=f"{show_path(f'{root}/{path}')} (committed)",
                tofile=f"{show_path(f'{root}/{path}')} (rendered)"))
    return text


def unchanged(folder, new: dict[str, str]) -> bool:
    """True when a folder (writer.Folder) holds exactly the files of a fresh render, byte for byte, and nothing
    else: tree_diff finds nothing to say (a cheap test, before the diffs are made)."""
    return folder.kind == "folder" and not folder.foreign and folder.files.keys() == new.keys() and all(
        folder.files[path] == text.encode("utf-8") for path, text in new.items())


def _why_stale(folder, path: str, expected: bytes) -> str:
    """What a reader of the stale line should know beyond the diff: hand edits, line endings, encoding."""
    data = folder.files[path] or b""
    notes = []
    if folder.edited(path):
        notes.append("edited after gpuconf wrote it")
    if b"\r" in data and b"\r" not in expected:
        notes.append("carriage returns: CRLF or \\r line endings, gpuconf writes \\n")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        notes.append("not UTF-8")
    return f" ({'; '.join(notes)})" if notes else ""


def _shown_lines(data: bytes | None) -> list[str]:
    """A file's lines for the unified diff, split at \\n only, carriage returns made visible."""
    if not data:
        return []
    text = data.decode("utf-8", "replace").replace("\r", "\\r")
    lines = [line + "\n" for line in text.split("\n")]
    return lines[:-1] if text.endswith("\n") else lines


def status_line(result) -> str:
    """`FILE: valid` or `FILE: invalid`, with the counts of errors and warnings shown (validate's last line)."""
    from ..intent.loader import CODE_TRUNCATED

    shown = [f for f in result.findings if f.code != CODE_TRUNCATED]
    errors = sum(1 for f in shown if f.severity == "error")
    warnings = len(shown) - errors
    more = ["more not shown"] if len(shown) < len(result.findings) else []
    counts = ", ".join(part for part in (_count(errors, "error") if errors else "",
                                         _count(warnings, "warning") if warnings else "", *more) if part)
    return f"{result.file}: {'valid' if result.ok else 'invalid'}" + (f" ({counts})" if counts else "")

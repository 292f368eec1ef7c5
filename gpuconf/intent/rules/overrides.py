"""Rules of the chart and its overrides: the chart version is one gpuconf ships defaults for, and each override
exists in the chart, says why, differs from the default, keeps what gpuconf derives and fits the values schema
(GC318, GC319, GC326, GC341-GC343)."""

from __future__ import annotations

import re
from typing import Iterator

from ... import catalog
from ...findings import WARNING, Finding
from .base import Context, rule
from .syntax import shown


@rule("GC318", "chart version is one gpuconf ships defaults for")
def chart_version_known(ctx: Context) -> Iterator[Finding]:
    """The chart version is one gpuconf ships base defaults for."""
    version = ctx.intent.spec.operator.chart_version
    facts = catalog.chart(version)
    if facts is not None and facts.semantics_of is not None:
        # A chart the user added (gpuconf chart add): each template that is not the known release's is a warning.
        for template in facts.differing_templates:
            yield ctx.finding("GC318", ("spec", "operator", "chartVersion"),
                              f"chart {version} (added with gpuconf chart add) has a templates/{template} that differs "
                              f"from {facts.semantics_of}'s, whose semantics gpuconf applies to it",
                              f"review what the chart renders from it (`helm template`) before relying on gpuconf's "
                              f"checks of it", severity=WARNING)
    if facts is None:
        known = catalog.chart_versions()
        guess = catalog.suggest(version, known)
        hint = f"did you mean '{guess}'? " if guess else ""
        from ...chartfacts.releases import is_version

        add = (f"; a release gpuconf does not ship: `helm pull gpu-operator --repo https://helm.ngc.nvidia.com/nvidia "
               f"--version {version}`, then `gpuconf chart add` the .tgz" if is_version(version) and version.startswith("v")
               else "")
        yield ctx.finding("GC318", ("spec", "operator", "chartVersion"),
                          f"gpuconf has no base defaults for GPU Operator chart {version!r}",
                          f"{hint}known: {', '.join(known)}{add}")


@rule("GC319", "override paths exist in the chart")
def override_paths(ctx: Context) -> Iterator[Finding]:
    """Override paths exist in the pinned chart's values, are template-only keys, or sit under a free-form map."""
    version = ctx.intent.spec.operator.chart_version
    if catalog.chart(version) is None:
        return  # GC318 reports the version; paths cannot be checked without it
    for i, override in enumerate(ctx.intent.spec.overrides):
        status, guess = catalog.chart_path_status(version, override.path)
        if override.path in catalog.chart(version).dead_keys:
            yield ctx.finding("GC319", ("spec", "overrides", i, "path"),
                              f"{override.path!r} is in the chart's values but no template of chart {version} reads it",
                              "the override has no effect; remove it", severity=WARNING)
        gone = [r for r in catalog.chart_table()["renames"]
                if override.path == r["key"] or override.path.startswith(r["key"] + ".")]
        if status == "unknown" and gone:
            yield ctx.finding("GC319", ("spec", "overrides", i, "path"),
                              f"{override.path!r} is not a value of GPU Operator chart {version}",
                              catalog.rename_text(gone[0], version))
        elif status == "unknown":
            hint = f"did you mean '{guess}'?" if guess else "see the chart's values.yaml for the key"
            yield ctx.finding("GC319", ("spec", "overrides", i, "path"),
                              f"{override.path!r} is not a value of GPU Operator chart {version}", hint)
        elif gone and not catalog.chart_path_status(version, gone[0]["key"])[0] == "known":
            yield ctx.finding("GC319", ("spec", "overrides", i, "path"),
                              f"{override.path!r} is read by chart {version}'s templates but no longer in its "
                              f"values.yaml", catalog.rename_text(gone[0], version), severity=WARNING)


#: Reasons that hold no reason: placeholders left for later (the report shows every override's reason to reviewers).
PLACEHOLDER_REASON = re.compile(r"^\W*(todo|tbd|tba|fixme|wip|n/?a|none|unknown|temp|temporary|test|testing|"
                                r"see (above|below))\b", re.IGNORECASE)
#: Words that carry no reason of their own when a `why` merely restates its override ("set x.y to 5 as required").
FILLER_WORDS = frozenset("a an and as at be because by for from has have in is it need needed needs of on override "
                         "overrides overridden required requires set sets so that the this to value was we which "
                         "with".split())
#: A reason made of these words alone says only that the override is wanted ("overridden because required").
EMPTY_WORDS = frozenset("because must necessary need needed needs override overridden overrides required requires "
                        "set".split())


@rule("GC326", "every override says why")
def override_reasons(ctx: Context) -> Iterator[Finding]:
    """Every override's `why` is a sentence: not too short, not a placeholder (`TODO`, `n/a`, ...), not a
    restatement of the override's path and value."""
    hint = "write a sentence: what breaks without it, or which ticket asked for it"
    for i, override in enumerate(ctx.intent.spec.overrides):
        loc = ("spec", "overrides", i, "why")
        if len(override.why.split()) < 3:
            yield ctx.finding("GC326", loc, "the reason is too short to tell a reviewer why the override exists", hint)
        elif PLACEHOLDER_REASON.match(override.why) or set(_words(override.why)) <= EMPTY_WORDS:
            yield ctx.finding("GC326", loc, "the reason is a placeholder, not a reason a reviewer can trace", hint)
        elif _restates(override.why, override.path, override.value):
            yield ctx.finding("GC326", loc, "the reason only restates the override's path and value", hint)


def _words(text: str) -> list[str]:
    return [w.lower() for w in re.split(r"[^A-Za-z0-9_-]+", text) if w]


def _restates(why: str, path: str, value: object) -> bool:
    """True when a reason names the override's path and adds nothing but its value and filler words."""
    import json

    keys = set(_words(path.replace(".", " ")))
    echo = keys | set(_words(f"{json.dumps(value)} {value}")) | FILLER_WORDS
    words = _words(why)
    return bool(keys & set(words)) and all(w in echo for w in words)


@rule("GC341", "an override differs from the chart default")
def override_not_default(ctx: Context) -> Iterator[Finding]:
    """(warning) an override equals the pinned chart's default, so it renders nothing (kept deliberately, it
    pins the value across chart upgrades)."""
    facts = catalog.chart(ctx.intent.spec.operator.chart_version)
    if facts is None:
        return
    for i, override in enumerate(ctx.intent.spec.overrides):
        # The same lookup as the values builder's: an override equal to the default renders nothing.
        node, found = facts.defaults, True
        for key in override.path.split("."):
            if not isinstance(node, dict) or key not in node:
                found = False
                break
            node = node[key]
        if found and node == override.value:
            yield ctx.finding("GC341", ("spec", "overrides", i, "value"),
                              f"{override.path} is already {shown(node)} by default in chart {facts.version}: the "
                              "override renders nothing (values.yaml holds only deviations)",
                              "remove it; keep it only to pin the value across chart upgrades (`gpuconf diff "
                              "--to-chart` shows when it starts to matter)", severity=WARNING)


@rule("GC342", "an override does not replace a value gpuconf derives")
def override_keeps_derived(ctx: Context) -> Iterator[Finding]:
    """(warning) an override replaces a value gpuconf derives from the intent (tolerations, `mig.strategy`,
    `devicePlugin.config.*`, ...); the finding names what is lost."""
    overrides = ctx.intent.spec.overrides
    if not overrides:
        return
    from ...render.values import derived_changes

    derived = derived_changes(ctx.intent, ctx.doc)  # the document: the image lock is read beside the intent
    if not derived:
        return
    for i, override in enumerate(overrides):
        parts = tuple(override.path.split("."))
        for path, change in sorted(derived.items()):
            if path[:len(parts)] != parts and parts[:len(path)] != path:
                continue
            line, _ = ctx.doc.position(change.origin)
            from ...findings import dotted

            where = f"{'.'.join(path)} from {dotted(change.origin)} (line {line})"
            lost = _lost(path, parts, change.value, override.value)
            if lost is None:
                continue
            yield ctx.finding("GC342", ("spec", "overrides", i, "path"),
                              f"replaces what gpuconf derives for {where}: {change.why}; {lost}",
                              "express it in the intent instead, or make the override keep what is lost",
                              severity=WARNING)


def _lost(derived: tuple, override: tuple, derived_value: object, value: object) -> str | None:
    """What an override loses of a derived value, or, when it loses nothing today, what it freezes; None when the
    override's tolerations cover the derived ones with `operator: Exists` (it tolerates every taint of those keys,
    today's and later ones)."""
    frozen = "nothing is lost today, but the override freezes it: later changes of the intent no longer reach it"
    if len(override) < len(derived):
        node, rest = value, derived[len(override):]
        for key in rest:
            if not isinstance(node, dict) or key not in node:
                return (f"lost: {'.'.join(derived)} = {shown(derived_value)} (the override's map leaves it out, so "
                        "the chart default applies)")
            node = node[key]
        if node == derived_value:
            return frozen
        return f"lost: {'.'.join(derived)} = {shown(derived_value)} (the override sets {shown(node)})"
    if len(override) > len(derived):
        return f"lost: {'.'.join(derived)} = {shown(derived_value)} (gpuconf no longer sets it at all)"
    if isinstance(derived_value, list) and isinstance(value, list):
        from ...render.values import uncovered

        if derived[-1] == "tolerations":
            missing = uncovered(derived_value, value)
            if not missing and derived_value != value:
                return None
        else:
            missing = [item for item in derived_value if item not in value]
        return f"lost: {shown(missing)}" if missing else frozen
    return frozen if derived_value == value else f"lost: {shown(derived_value)}"


@rule("GC343", "override values fit the chart's values schema")
def override_values_typed(ctx: Context) -> Iterator[Finding]:
    """An override's value has the shape the pinned chart's values schema gives its key (a string for
    `validator.image`, a boolean for `*.enabled`, only known keys inside a map), checked before anything
    renders."""
    overrides = ctx.intent.spec.overrides
    version = ctx.intent.spec.operator.chart_version
    facts = catalog.chart(version)
    if not overrides or facts is None:
        return
    from ...output import verify
    from ...findings import dotted
    from ...render.values import ValuesBuilder

    # The chart's defaults with the overrides applied as the values builder applies them: the defaults alone are
    # valid, so every failure lies under an override's path. Paths the chart does not have are GC319's.
    known = [i for i, o in enumerate(overrides) if catalog.chart_path_status(version, o.path)[0] != "unknown"]
    if not known:
        return
    builder = ValuesBuilder(facts.shared_defaults)  # read, never changed: merged_view shares what it leaves alone
    for i in known:
        builder.set(overrides[i].path, overrides[i].value, overrides[i].why, ("spec", "overrides", i))
    keys = {i: tuple(overrides[i].path.split(".")) for i in known}
    for path, message in verify.values_failures(builder.merged_view(), version):
        owner = next((i for i in reversed(known) if tuple(path[:len(keys[i])]) == keys[i]), None)
        if owner is None:
            continue  # under no override: a default gpuconf's derived schema rejects, checked by its own tests
        inside = path[len(keys[owner]):]  # where in the override's value, when the value is a map or list
        yield ctx.finding("GC343", ("spec", "overrides", owner, "value", *inside),
                          f"{message} (chart value {dotted(path)})",
                          f"chart {version}'s values schema (from its values.yaml and the ClusterPolicy and "
                          "NVIDIADriver CRDs) types this key; give a value of that shape", at_key=bool(inside))

"""Rules of names and of pool selection: names are DNS-1123 labels and unique, GPU models are known or declared
well, pool selectors are disjoint, labels, selectors and taints are well formed (GC301-GC304, GC317, GC320, GC344)."""

from __future__ import annotations

import types
from typing import Iterator, Sequence

from ... import catalog, plan
from ...findings import WARNING, Finding
from ..model import Pool
from .base import Context, pool_loc, rule
from .syntax import (DNS1123_LABEL, DNS1123_SUBDOMAIN, NAME_HINT, label_value_ok, qualified_name_problem,
                     shown_text)


# --- names ------------------------------------------------------------------------------------------------------


@rule("GC301", "names are DNS-1123 labels")
def names_are_dns_labels(ctx: Context) -> Iterator[Finding]:
    """Names (cluster, pools, teams, namespaces, profiles, pull secrets, and a fleet's name) are DNS-1123
    labels: each becomes a folder, an object name or a label value."""
    spec = ctx.intent.spec
    named: list[tuple[tuple, str, bool]] = [(("metadata", "name"), ctx.intent.metadata.name, False),
                                           (("spec", "operator", "namespace"), spec.operator.namespace, False)]
    named += [(("spec", "sharingProfiles", n), n, True) for n in spec.sharing_profiles]
    named += [(pool_loc(i, "name"), p.name, False) for i, p in enumerate(spec.pools)]
    for i, team in enumerate(spec.teams):
        named.append((("spec", "teams", i, "name"), team.name, False))
        named += [(("spec", "teams", i, "namespaces", j), ns, False) for j, ns in enumerate(team.namespaces)]
    for loc, name, at_key in named:
        if not DNS1123_LABEL.fullmatch(name):
            yield ctx.finding("GC301", loc, f"{name!r} is not a valid name", NAME_HINT, at_key=at_key)
    for i, secret in enumerate(spec.operator.image_pull_secrets):
        # Secret names are DNS subdomains (dots allowed), unlike namespaces.
        if len(secret) > 253 or not DNS1123_SUBDOMAIN.fullmatch(secret):
            yield ctx.finding("GC301", ("spec", "operator", "imagePullSecrets", i), f"{secret!r} is not a valid "
                              "secret name", "use lower-case letters, digits, '-' and '.'")


@rule("GC302", "names are unique")
def names_are_unique(ctx: Context) -> Iterator[Finding]:
    """Pool, team, namespace, override-path and pull-secret names are unique; no team owns the operator's
    namespace."""
    spec = ctx.intent.spec
    groups = {
        "pool": [(pool_loc(i, "name"), p.name) for i, p in enumerate(spec.pools)],
        "team": [(("spec", "teams", i, "name"), t.name) for i, t in enumerate(spec.teams)],
        "namespace": [(("spec", "teams", i, "namespaces", j), ns)
                      for i, t in enumerate(spec.teams) for j, ns in enumerate(t.namespaces)],
        "override path": [(("spec", "overrides", i, "path"), o.path) for i, o in enumerate(spec.overrides)],
        # The pull secrets land in list-map fields keyed by name (the probes' imagePullSecrets): no repeats.
        "pull secret": [(("spec", "operator", "imagePullSecrets", i), s)
                        for i, s in enumerate(spec.operator.image_pull_secrets)],
    }
    for i, team in enumerate(spec.teams):
        for j, ns in enumerate(team.namespaces):
            if ns == spec.operator.namespace:
                # Two Namespace objects of one name: kustomize refuses the folder, and the team's quota would limit
                # the operator's own pods.
                yield ctx.finding("GC302", ("spec", "teams", i, "namespaces", j),
                                  f"namespace {ns!r} is the GPU Operator's own (spec.operator.namespace)",
                                  "give the team a namespace of its own")
    for what, items in groups.items():
        first: dict[str, tuple] = {}
        for loc, name in items:
            if name in first:
                line, _ = ctx.doc.position(first[name])
                yield ctx.finding("GC302", loc, f"{what} {name!r} is declared twice (first on line {line})",
                                  f"each {what} must be unique")
            else:
                first[name] = loc


# --- pools ------------------------------------------------------------------------------------------------------


@rule("GC304", "GPU model is in the catalogue")
def gpu_model_known(ctx: Context) -> Iterator[Finding]:
    """The GPU model is in the catalogue (with did-you-mean)."""
    models = [*catalog.gpu_models().values(), *plan.declared_models(ctx.intent).values()]
    for i, pool in enumerate(ctx.intent.spec.pools):
        if plan.gpu_model(ctx.intent, pool.gpu) is not None:
            continue
        offered = catalog.model_suggestions(pool.gpu, models)
        if len(offered) == 1:
            hint = f"did you mean '{offered[0]}'?"
        elif offered:
            hint = f"did you mean one of {', '.join(offered)}?"
        else:
            hint = ("`gpuconf catalog` lists the models; declare a GPU the catalogue lacks under spec.gpuModels "
                    "(PCI device ids, memory)")
        yield ctx.finding("GC304", pool_loc(i, "gpu"), f"unknown GPU model {pool.gpu!r}", hint)


@rule("GC344", "declared GPU models are new and tell themselves apart")
def declared_models_valid(ctx: Context) -> Iterator[Finding]:
    """A GPU model declared in `spec.gpuModels` is new: not a catalogue id, no PCI id a catalogue (or another
    declared) model owns unless subsystem ids tell them apart, no id or product label twice; its product labels name
    it alone (none the catalogue reads as one of its GPUs, none another declared model has, not vendor words alone),
    and neither they nor its name take a name by which the audit and import know a catalogue or earlier declared GPU;
    (warning) one no pool uses."""
    declared = plan.declared_models(ctx.intent)
    used = {pool.gpu for pool in ctx.intent.spec.pools}
    seen: list[catalog.GpuModel] = []
    for model_id, model in declared.items():
        loc = ("spec", "gpuModels", model_id)
        builtin = catalog.gpu_model(model_id)
        if builtin is not None:
            yield ctx.finding("GC344", loc, f"{model_id} is already in gpuconf's catalogue ({builtin.name})",
                              f"remove the declaration; `gpuconf catalog --gpu {model_id}` shows the catalogue's facts",
                              at_key=True)
            continue
        decl = ctx.intent.spec.gpu_models[model_id]
        for key, values in (("pciDeviceIds", decl.pci_device_ids), ("pciSubsystemIds", decl.pci_subsystem_ids)):
            for j, value in enumerate(values):
                if value in values[:j]:
                    yield ctx.finding("GC344", (*loc, key, j), f"{value} is listed twice", None)
        clash = next((m for m in [*catalog.gpu_models().values(), *seen] if not model.disjoint_from(m)), None)
        if clash is not None:
            shared = sorted(set(model.pci_device_ids) & set(clash.pci_device_ids))
            where = "gpuconf's catalogue" if not clash.declared else "spec.gpuModels"
            hint = (f"use gpu: {clash.id}" if not clash.declared else "declare one model per GPU")
            if not model.pci_subsystem_ids:
                hint += "; a GPU that shares its device id with another is told apart by pciSubsystemIds"
            yield ctx.finding("GC344", (*loc, "pciDeviceIds"),
                              f"PCI id {', '.join(shared)} is {clash.id} in {where}: a node with that GPU would be "
                              f"both {clash.id} and {model_id}", hint)
        yield from _product_label_claims(ctx, loc, model, seen)
        seen.append(model)
        if model_id not in used:
            yield ctx.finding("GC344", loc, f"declared GPU model {model_id} is used by no pool",
                              "remove it, or name it in a pool's gpu", severity=WARNING, at_key=True)


def _product_label_claims(ctx: Context, loc: tuple, model: catalog.GpuModel,
                          earlier: list[catalog.GpuModel]) -> Iterator[Finding]:
    """A declared model's GFD product labels name it alone: none is a name the catalogue reads as one of its models
    or that an earlier declaration claims, and with it declared every name read before reads as before (the audit and
    the importer place nodes by these names, gpuconf/cluster/nodefacts.py model_for_product)."""
    from ...cluster.nodefacts import model_for_product, product_matches

    before, after = tuple(earlier), (*earlier, model)
    labels = model.product_labels
    flagged: set[int] = set()
    for j, label in enumerate(labels):
        at = (*loc, "productLabels", j)
        builtin = model_for_product(label)
        owner = model_for_product(label, None, after)
        matches = product_matches(label, after)
        rivals = sorted(m for m, n in matches.items() if m != model.id and n == max(matches.values(), default=0))
        if label in labels[:j]:
            yield ctx.finding("GC344", at, f"{label} is listed twice", None)
        elif builtin is not None:
            yield ctx.finding("GC344", at, f"product label {label} names {builtin} in gpuconf's catalogue: the audit "
                              f"and import would take {builtin} nodes for {model.id}",
                              f"use gpu: {builtin}, or leave the label out")
        elif owner == model.id:
            continue
        elif owner is None and not rivals:
            yield ctx.finding("GC344", at, f"product label {label} holds no GPU name (vendor words alone)",
                              "write the whole nvidia.com/gpu.product value GFD sets on such nodes")
        else:
            yield ctx.finding("GC344", at, f"product label {label} is also {', '.join(rivals or [owner])}'s in "
                              "spec.gpuModels: the audit could not tell the models apart", "declare one model per GPU")
        flagged.add(j)
    known = [(m.id, name) for m in catalog.gpu_models().values() for name in catalog.model_names(m)]
    known += [(m.id, label) for m in earlier for label in m.product_labels]
    for owner, name in known:
        if model_for_product(name, None, before) != owner or model_for_product(name, None, after) == owner:
            continue
        taken = set(catalog.name_tokens(name))
        culprit = next((j for j, label in enumerate(labels) if set(catalog.name_tokens(label)) <= taken), None)
        if culprit in flagged:
            continue
        at = (*loc, "productLabels", culprit) if culprit is not None else \
            (*loc, "name") if ctx.intent.spec.gpu_models[model.id].name and set(
                catalog.name_tokens(model.name)) <= taken else loc
        yield ctx.finding("GC344", at, f"{model.id} takes the GPU name {name!r} from {owner}: the audit and import "
                          f"would no longer know {owner} nodes by it",
                          "give the declared model a name and product labels as GFD writes them in full",
                          at_key=at == loc)
        return  # one is enough to show: the others have the same cause


@rule("GC303", "pool selectors are disjoint")
def pools_disjoint(ctx: Context) -> Iterator[Finding]:
    """Two pools' selectors could match the same node (GPU model, node labels, hostname pattern, DMI product are
    all considered). Hostname patterns overlap when some node name matches both as NFD matches them (Go's RE2,
    anywhere in the name unless anchored): their automata intersect. (warning) Two patterns too complex to compare
    within the budget (docs/reference/limits.md: 20,000 automaton states, 2 s) could select the same node."""
    from ..hostnames import Budget, OverBudget

    pools = ctx.intent.spec.pools
    models = [plan.gpu_model(ctx.intent, pool.gpu) for pool in pools]
    budget = Budget()  # the automata of this validation's hostname patterns, all pairs together
    for i, j in sorted(set(_overlap_candidates(pools, models))):
        a, b = pools[i], pools[j]
        if a.name == b.name:
            continue  # same names are GC302's business
        try:
            overlap = _could_overlap(a, b, models[i], models[j], budget)
        except OverBudget:
            yield ctx.finding("GC303", pool_loc(j, "match"),
                              f"pools {a.name!r} and {b.name!r} could select the same node: their hostname patterns "
                              "are too complex to compare within gpuconf's budget",
                              "give their hostname patterns different literal prefixes after ^ (^gpu-a-, ^gpu-b-), "
                              "which gpuconf compares without automata, or tell the pools apart by a node label",
                              severity=WARNING)
            continue
        if overlap:
            yield ctx.finding("GC303", pool_loc(j, "match"),
                              f"pools {a.name!r} and {b.name!r} could select the same node",
                              "give one of them a node label with a different value, a disjoint hostname prefix or a "
                              "different dmiProduct; a node in two pools gets conflicting configs and drivers")


def _overlap_candidates(pools: Sequence[Pool], models: Sequence[catalog.GpuModel | None]) -> Iterator[tuple[int, int]]:
    """Index pairs worth comparing: same GPU model, and not told apart by the group's most common label key.

    Comparing every pair is quadratic; a 1,000-pool intent has half a million pairs but, bucketed like this, only the
    pairs that could really collide.
    """
    by_model: dict[str, list[int]] = {}
    for i, pool in enumerate(pools):
        model = models[i]
        # Two catalogue models never match one GPU (ids, or subsystem ids, differ), so the model id stands for its
        # id set; a declared model clashing with another is GC344's. Unknown models (GC304) are compared with
        # everything of their own name only.
        by_model.setdefault(model.id if model else "?" + pool.gpu, []).append(i)
    for members in by_model.values():
        counts: dict[str, int] = {}
        for i in members:
            for key in pools[i].match.node_labels:
                counts[key] = counts.get(key, 0) + 1
        key = max(sorted(counts), key=counts.__getitem__) if counts else None
        buckets: dict[str, list[int]] = {}
        unlabelled: list[int] = []
        for i in members:
            value = pools[i].match.node_labels.get(key) if key else None
            (buckets.setdefault(value, []) if value is not None else unlabelled).append(i)
        for bucket in buckets.values():
            yield from _hostname_pairs(pools, bucket)
        yield from _hostname_pairs(pools, unlabelled)
        lone = set(unlabelled)
        for bucket in buckets.values():
            yield from ((i, j) for i, j in _hostname_pairs(pools, unlabelled + bucket) if (i in lone) != (j in lone))


def _hostname_pairs(pools: Sequence[Pool], members: list[int]) -> Iterator[tuple[int, int]]:
    """The pairs of members (i < j) whose hostname patterns could share a name by their literal text alone: two
    patterns anchored at their start (one branch each) need one literal prefix to begin the other, two anchored at
    their end one suffix to end the other. Sorted, the patterns whose prefix begins with p follow p's own place, so
    distinct prefixes cost a sort, not a comparison per pair; a pattern without such text is paired with all."""
    from ..hostnames import literal_ends

    heads: list[tuple[str, int]] = []
    tails: list[tuple[str, int]] = []
    rest: list[int] = []
    for i in members:
        ends = literal_ends(pools[i].match.hostname) if pools[i].match.hostname else None
        if ends is not None and ends[0]:
            heads.append((ends[0], i))
        elif ends is not None and ends[1]:
            tails.append((ends[1][::-1], i))
        else:
            rest.append(i)
    for keyed in (sorted(heads), sorted(tails)):
        for k, (text, i) in enumerate(keyed):
            for other, j in keyed[k + 1:]:
                if not other.startswith(text):
                    break
                yield min(i, j), max(i, j)
    for i, j in ((i, j) for _, i in heads for _, j in tails):
        yield min(i, j), max(i, j)
    for n, i in enumerate(rest):
        for j in [*rest[n + 1:], *(x for _, x in heads), *(x for _, x in tails)]:
            yield min(i, j), max(i, j)


def _could_overlap(a: Pool, b: Pool, ma: catalog.GpuModel | None, mb: catalog.GpuModel | None,
                   budget=None) -> bool:
    """False only when no node can satisfy both pools' criteria (GPU model included)."""
    if ma is not None and mb is not None and ma.disjoint_from(mb):
        return False  # a node's GPUs are one model; drift from that is the audit's business
    la, lb = a.match.node_labels, b.match.node_labels
    if any(k in lb and lb[k] != v for k, v in la.items()):
        return False
    if a.match.dmi_product and b.match.dmi_product and a.match.dmi_product != b.match.dmi_product:
        return False
    from ..hostnames import could_share_a_name, re2_error

    if any(p and re2_error(p) for p in (a.match.hostname, b.match.hostname)):
        return False  # a pattern NFD cannot compile selects nothing; GC320 says so
    shared = could_share_a_name(a.match.hostname, b.match.hostname, budget)
    if shared is not None:
        return shared  # NFD's RE2 patterns as automata: some node name matches both, or none does
    pa, pb = _literal_prefix(a.match.hostname), _literal_prefix(b.match.hostname)
    if pa is not None and pb is not None and not (pa.startswith(pb) or pb.startswith(pa)):
        return False
    return True


def _literal_prefix(pattern: str | None) -> str | None:
    """The literal text an anchored regex must start with, or None when it is not anchored."""
    if not pattern or not pattern.startswith("^") or "|" in pattern:
        return None  # unanchored, or an alternation whose branches may start anywhere
    prefix = ""
    for ch in pattern[1:]:
        if ch in ".^$*+?{}[]\\|()":
            break
        prefix += ch
    if prefix and pattern[1 + len(prefix):2 + len(prefix)] in ("*", "?", "{"):
        prefix = prefix[:-1]  # the last literal is optional or repeated
    return prefix or None


@rule("GC320", "labels, taints, selectors and hostname patterns are well formed")
def selectors_well_formed(ctx: Context) -> Iterator[Finding]:
    """Node-label selectors, the Prometheus selector's labels (they land on the PrometheusRule and the
    ServiceMonitor), hostname regexes (Go's RE2 syntax, which NFD compiles them with) and `match` itself are well
    formed: label keys and values by Kubernetes' own rules; the Prometheus selector may not take over gpuconf's own labels (`app.kubernetes.io/managed-by`,
    `gpuconf.dev/cluster`)."""
    for i, pool in enumerate(ctx.intent.spec.pools):
        yield from _label_findings(ctx, pool_loc(i, "match", "nodeLabels"), pool.match.node_labels,
                                   "node.kubernetes.io/instance-type")
        if pool.match.hostname is not None:
            from ..hostnames import re2_error

            reason = re2_error(pool.match.hostname)
            if reason is not None:
                yield ctx.finding("GC320", pool_loc(i, "match", "hostname"),
                                  f"hostname pattern is not a regular expression NFD accepts (Go's RE2 syntax): "
                                  f"{reason}", "RE2 has no lookarounds, backreferences or \\Z (use \\z or $); "
                                  "NFD matches anywhere in the name unless the pattern starts with ^")
        if not (pool.match.pci_device or pool.match.node_labels or pool.match.hostname or pool.match.dmi_product):
            yield ctx.finding("GC320", pool_loc(i, "match"), "match selects no nodes: give at least one criterion",
                              "pciDevice: true selects the nodes whose GPU is the pool's model")
    monitoring = ctx.intent.spec.monitoring
    if monitoring is not None:
        # The PrometheusRule's labels and the ServiceMonitor's additionalLabels: the API server refuses bad ones.
        yield from _label_findings(ctx, ("spec", "monitoring", "prometheusSelector"), monitoring.prometheus_selector,
                                   "app.kubernetes.io/part-of")
        from ...render import common_labels

        # The selector's labels go onto gpuconf's PrometheusRule beside gpuconf's own, which GitOps tools prune by
        # and `kubectl get -l` finds them by: a selector may not take them over.
        own = common_labels(types.SimpleNamespace(name=ctx.intent.metadata.name))
        for key in monitoring.prometheus_selector:
            if key in own:
                yield ctx.finding("GC320", ("spec", "monitoring", "prometheusSelector", key),
                                  f"label {key!r} is gpuconf's own label on everything it renders",
                                  "select your Prometheus by another label", at_key=True)


def _label_findings(ctx: Context, loc: tuple, labels: dict[str, str], example: str) -> Iterator[Finding]:
    """GC320 for every key that is not a qualified name and every value that is not a label value (Kubernetes'
    rules: apimachinery's IsQualifiedName and IsValidLabelValue)."""
    for key, value in labels.items():
        problem = qualified_name_problem(key)
        if problem:
            yield ctx.finding("GC320", (*loc, key), f"label key {shown_text(key)} {problem}",
                              f"keys look like prefix/name, e.g. {example}", at_key=True)
        if not label_value_ok(value):
            yield ctx.finding("GC320", (*loc, key), f"label value {shown_text(value)} is not a valid label value",
                              "at most 63 characters: letters, digits, '-', '_' and '.', starting and ending "
                              "with a letter or digit")


@rule("GC317", "taints are valid")
def taints_valid(ctx: Context) -> Iterator[Finding]:
    """Taint keys, values and effects are valid; NFD-applied taints need a prefixed key."""
    for i, pool in enumerate(ctx.intent.spec.pools):
        seen: set[tuple[str, str]] = set()
        for j, taint in enumerate(pool.taints):
            loc = pool_loc(i, "taints", j)
            problem = qualified_name_problem(taint.key)
            if problem:
                yield ctx.finding("GC317", (*loc, "key"), f"taint key {taint.key!r} {problem}",
                                  "taint keys look like gpuconf.dev/pool")
            elif "/" not in taint.key and pool.match.pci_device:
                yield ctx.finding("GC317", (*loc, "key"),
                                  f"taint key {taint.key!r} needs a prefix: NFD only applies prefixed taint keys",
                                  "e.g. gpuconf.dev/" + taint.key)
            if taint.value and not label_value_ok(taint.value):
                yield ctx.finding("GC317", (*loc, "value"), f"taint value {taint.value!r} is not a valid label value",
                                  "at most 63 characters: letters, digits, '-', '_' and '.'")
            if (taint.key, taint.effect) in seen:
                yield ctx.finding("GC317", loc, f"taint {taint.key}:{taint.effect} is listed twice", None)
            seen.add((taint.key, taint.effect))

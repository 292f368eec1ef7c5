"""Domain rules: checks over the whole typed intent, each with a stable code, run together so all findings show."""

from __future__ import annotations

import re
import types
from collections import Counter
from itertools import combinations
from typing import Callable, Iterator, Sequence

from ... import catalog, plan
from ...findings import ERROR, WARNING, Finding
from ..model import ClusterIntent, Pool
from .base import RULES, Context, Rule, check, rule, rule_codes  # noqa: F401  - the registry, as gpuconf.intent.rules

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
NAME_HINT = "use lower-case letters, digits and '-', starting and ending with a letter or digit"
#: Upstream MPS limit per GPU (k8s-device-plugin cmd/mps-control-daemon/mps/device.go): 48 clients from compute
#: capability 7.5 on, 16 below.
MPS_MAX_REPLICAS = 48
MPS_MAX_REPLICAS_PRE_VOLTA_MPS = 16


def _pool_loc(i: int, *rest: str | int) -> tuple:
    return ("spec", "pools", i, *rest)


def _hint_choices(word: str, choices: Sequence[str], what: str) -> str:
    guess = catalog.suggest(word, choices)
    if guess:
        return f"did you mean '{guess}'?"
    return f"known {what}: {', '.join(sorted(choices))}" if choices else f"declare the {what.rstrip('s')} first"


# --- names ------------------------------------------------------------------------------------------------------


@rule("GC301", "names are DNS-1123 labels")
def names_are_dns_labels(ctx: Context) -> Iterator[Finding]:
    """Names (cluster, pools, teams, namespaces, profiles, pull secrets, and a fleet's name) are DNS-1123
    labels: each becomes a folder, an object name or a label value."""
    spec = ctx.intent.spec
    named: list[tuple[tuple, str, bool]] = [(("metadata", "name"), ctx.intent.metadata.name, False),
                                           (("spec", "operator", "namespace"), spec.operator.namespace, False)]
    named += [(("spec", "sharingProfiles", n), n, True) for n in spec.sharing_profiles]
    named += [(_pool_loc(i, "name"), p.name, False) for i, p in enumerate(spec.pools)]
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
        "pool": [(_pool_loc(i, "name"), p.name) for i, p in enumerate(spec.pools)],
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
        yield ctx.finding("GC304", _pool_loc(i, "gpu"), f"unknown GPU model {pool.gpu!r}", hint)


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
    anywhere in the name unless anchored): their automata intersect."""
    pools = ctx.intent.spec.pools
    models = [plan.gpu_model(ctx.intent, pool.gpu) for pool in pools]
    for i, j in sorted(_overlap_candidates(pools, models)):
        a, b = pools[i], pools[j]
        if a.name != b.name and _could_overlap(a, b, models[i], models[j]):  # same names are GC302's business
            yield ctx.finding("GC303", _pool_loc(j, "match"),
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
            yield from combinations(bucket, 2)
        for n, i in enumerate(unlabelled):
            yield from ((min(i, j), max(i, j)) for j in unlabelled[n + 1:])
            for bucket in buckets.values():
                yield from ((min(i, j), max(i, j)) for j in bucket)


def _could_overlap(a: Pool, b: Pool, ma: catalog.GpuModel | None, mb: catalog.GpuModel | None) -> bool:
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
    shared = could_share_a_name(a.match.hostname, b.match.hostname)
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
        yield from _label_findings(ctx, _pool_loc(i, "match", "nodeLabels"), pool.match.node_labels,
                                   "node.kubernetes.io/instance-type")
        if pool.match.hostname is not None:
            from ..hostnames import re2_error

            reason = re2_error(pool.match.hostname)
            if reason is not None:
                yield ctx.finding("GC320", _pool_loc(i, "match", "hostname"),
                                  f"hostname pattern is not a regular expression NFD accepts (Go's RE2 syntax): "
                                  f"{reason}", "RE2 has no lookarounds, backreferences or \\Z (use \\z or $); "
                                  "NFD matches anywhere in the name unless the pattern starts with ^")
        if not (pool.match.pci_device or pool.match.node_labels or pool.match.hostname or pool.match.dmi_product):
            yield ctx.finding("GC320", _pool_loc(i, "match"), "match selects no nodes: give at least one criterion",
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
        problem = _qualified_name_problem(key)
        if problem:
            yield ctx.finding("GC320", (*loc, key), f"label key {_shown_text(key)} {problem}",
                              f"keys look like prefix/name, e.g. {example}", at_key=True)
        if not _label_value_ok(value):
            yield ctx.finding("GC320", (*loc, key), f"label value {_shown_text(value)} is not a valid label value",
                              "at most 63 characters: letters, digits, '-', '_' and '.', starting and ending "
                              "with a letter or digit")


def _shown_text(text: str) -> str:
    """A text for a message: quoted, escaped, and cut after 60 characters (a 10,000-character key stays readable)."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


@rule("GC317", "taints are valid")
def taints_valid(ctx: Context) -> Iterator[Finding]:
    """Taint keys, values and effects are valid; NFD-applied taints need a prefixed key."""
    for i, pool in enumerate(ctx.intent.spec.pools):
        seen: set[tuple[str, str]] = set()
        for j, taint in enumerate(pool.taints):
            loc = _pool_loc(i, "taints", j)
            problem = _qualified_name_problem(taint.key)
            if problem:
                yield ctx.finding("GC317", (*loc, "key"), f"taint key {taint.key!r} {problem}",
                                  "taint keys look like gpuconf.dev/pool")
            elif "/" not in taint.key and pool.match.pci_device:
                yield ctx.finding("GC317", (*loc, "key"),
                                  f"taint key {taint.key!r} needs a prefix: NFD only applies prefixed taint keys",
                                  "e.g. gpuconf.dev/" + taint.key)
            if taint.value and not _label_value_ok(taint.value):
                yield ctx.finding("GC317", (*loc, "value"), f"taint value {taint.value!r} is not a valid label value",
                                  "at most 63 characters: letters, digits, '-', '_' and '.'")
            if (taint.key, taint.effect) in seen:
                yield ctx.finding("GC317", loc, f"taint {taint.key}:{taint.effect} is listed twice", None)
            seen.add((taint.key, taint.effect))


def _qualified_name_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return "has an empty prefix"
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return "has an invalid prefix (must be a DNS subdomain)"
    if not name or len(name) > 63 or not LABEL_NAME.fullmatch(name):
        return "has an invalid name part (at most 63 letters, digits, '-', '_' or '.')"
    return None


def _label_value_ok(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(LABEL_NAME.fullmatch(value)))


# --- sharing ----------------------------------------------------------------------------------------------------


@rule("GC312", "pools refer to declared sharing profiles")
def sharing_refs(ctx: Context) -> Iterator[Finding]:
    """Pools refer to declared sharing profiles; `exclusive` is not redefined; unused profiles (warning)."""
    known = list(plan.profiles(ctx.intent))
    used = set()
    for i, pool in enumerate(ctx.intent.spec.pools):
        used.add(pool.sharing)
        if pool.sharing not in known:
            yield ctx.finding("GC312", _pool_loc(i, "sharing"), f"unknown sharing profile {pool.sharing!r}",
                              _hint_choices(pool.sharing, known, "profiles"))
    if "exclusive" in ctx.intent.spec.sharing_profiles:
        yield ctx.finding("GC312", ("spec", "sharingProfiles", "exclusive"),
                          "'exclusive' is built in and cannot be redefined", "choose another name", at_key=True)
    for name in ctx.intent.spec.sharing_profiles:
        if name not in used:
            yield ctx.finding("GC312", ("spec", "sharingProfiles", name), f"sharing profile {name!r} is not used by any pool",
                              "remove it, or refer to it from a pool's sharing", severity=WARNING, at_key=True)


@rule("GC311", "a sharing profile has one coherent mode")
def profile_shape(ctx: Context) -> Iterator[Finding]:
    """A sharing profile has exactly one coherent mode."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        loc = ("spec", "sharingProfiles", name)
        modes = [m for m, v in (("exclusive", prof.exclusive), ("timeSlicing", prof.time_slicing),
                                ("mps", prof.mps), ("mig", prof.mig)) if v is not None]
        if not modes:
            raw = ctx.doc.data.get("spec", {}).get("sharingProfiles", {}).get(name)
            empty = [k for k, v in raw.items() if v is None] if isinstance(raw, dict) else []
            hint = "give one of exclusive, timeSlicing, mps or mig"
            if "exclusive" in empty:
                hint = "`exclusive:` alone is null; write `exclusive: {}`"
            elif empty:
                hint = f"`{empty[0]}:` has no settings; e.g. timeSlicing: {{replicas: 4}}"
            yield ctx.finding("GC311", loc, "profile sets no sharing mode", hint)
        elif "exclusive" in modes and len(modes) > 1:
            yield ctx.finding("GC311", (*loc, "exclusive"), f"exclusive cannot be combined with {', '.join(modes[1:])}",
                              "a GPU is either whole or shared")
        elif prof.time_slicing is not None and prof.mps is not None:
            yield ctx.finding("GC311", (*loc, "mps"), "timeSlicing and mps are mutually exclusive",
                              "the device plugin uses only the mps block when both are set")
        if prof.mig is not None and (prof.mig.layout is None) == (prof.mig.preset is None):
            yield ctx.finding("GC311", (*loc, "mig"), "mig needs exactly one of layout or preset",
                              "layout: {\"3g.40gb\": 2} or preset: all-balanced")


@rule("GC308", "time-slicing replicas are at least 2")
def time_slicing_replicas(ctx: Context) -> Iterator[Finding]:
    """Time-slicing replicas >= 2."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        if prof.time_slicing is not None and prof.time_slicing.replicas < 2:
            yield ctx.finding("GC308", ("spec", "sharingProfiles", name, "timeSlicing", "replicas"),
                              f"time-slicing needs replicas >= 2, got {prof.time_slicing.replicas}",
                              "for unshared GPUs use sharing: exclusive")


@rule("GC309", "MPS replicas are within the upstream limit")
def mps_replicas(ctx: Context) -> Iterator[Finding]:
    """MPS replicas 2..48 (16 below compute capability 7.5), the device plugin's limit."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        if prof.mps is None:
            continue
        loc = ("spec", "sharingProfiles", name, "mps", "replicas")
        replicas = prof.mps.replicas
        if replicas < 2:
            yield ctx.finding("GC309", loc, f"MPS needs replicas >= 2, got {replicas}", "for unshared GPUs use exclusive")
            continue
        limit, culprit = MPS_MAX_REPLICAS, None
        for pool in ctx.intent.spec.pools:
            model = plan.gpu_model(ctx.intent, pool.gpu)
            if pool.sharing == name and model and model.compute_capability and _cc(model.compute_capability) < (7, 5):
                limit, culprit = MPS_MAX_REPLICAS_PRE_VOLTA_MPS, pool.name
        if replicas > limit:
            why = f" on pool {culprit!r} (compute capability below 7.5)" if culprit else ""
            yield ctx.finding("GC309", loc, f"MPS allows at most {limit} replicas per GPU{why}, got {replicas}",
                              f"use {limit} or fewer")


def _cc(value: str) -> tuple[int, int]:
    major, _, minor = value.partition(".")
    return int(major), int(minor or 0)


@rule("GC310", "MPS is not combined with MIG")
def mps_not_with_mig(ctx: Context) -> Iterator[Finding]:
    """MPS combined with MIG, or MPS pools while the cluster's MIG strategy is mixed (the plugin refuses both)."""
    for name, prof in ctx.intent.spec.sharing_profiles.items():
        if prof.mps is not None and prof.mig is not None:
            yield ctx.finding("GC310", ("spec", "sharingProfiles", name, "mps"),
                              "MPS cannot share MIG devices: the device plugin supports MPS on full GPUs only",
                              "use timeSlicing with mig, or a separate MPS pool")
    if ctx.strategy == "mixed":
        for i, pool in enumerate(ctx.intent.spec.pools):
            prof = plan.pool_profile(ctx.intent, pool)
            if prof is not None and prof.mps is not None and prof.mig is None:
                yield ctx.finding("GC310", _pool_loc(i, "sharing"),
                                  "MPS pools cannot run while the cluster's MIG strategy is mixed: the device plugin "
                                  "refuses --mig-strategy=mixed with MPS, and the strategy is cluster-wide",
                                  "make every MIG pool use one profile (strategy single) or move MPS to another cluster")


@rule("GC307", "MIG only on MIG-capable models")
def mig_capable(ctx: Context) -> Iterator[Finding]:
    """MIG on a model that has none."""
    for i, pool in enumerate(ctx.intent.spec.pools):
        prof = plan.pool_profile(ctx.intent, pool)
        model = plan.gpu_model(ctx.intent, pool.gpu)
        if prof is not None and prof.mig is not None and model is not None and not model.mig_capable:
            mig_models = sorted(m for m, g in catalog.gpu_models().items() if g.mig_capable)
            hint = f"use timeSlicing or mps; MIG models: {', '.join(mig_models)}"
            if model.declared:
                hint = ("a model declared in spec.gpuModels has no MIG: gpuconf checks MIG layouts against the "
                        "catalogue's measured placements only; use timeSlicing or mps")
            yield ctx.finding("GC307", _pool_loc(i, "sharing"),
                              f"pool uses MIG profile {pool.sharing!r} but {model.id} does not support MIG", hint)


@rule("GC305", "MIG profiles and presets exist on the pool's model")
def mig_profiles_exist(ctx: Context) -> Iterator[Finding]:
    """MIG profiles and presets exist on the pool's model (profile names are per model: `1g.10gb` is a different
    slice on A100-40GB and A100-80GB)."""
    for i, pool, prof, model in _mig_pools(ctx):
        base = ("spec", "sharingProfiles", pool.sharing, "mig")
        if prof.mig.preset is not None:
            presets = catalog.mig_presets(model)
            if prof.mig.preset not in presets:
                hint = _hint_choices(prof.mig.preset, list(presets), "presets")
                if prof.mig.preset.startswith("all-"):
                    other = prof.mig.preset[4:]
                    twin = next((p for p in model.mig_profiles if p.replace("+", ".") == other), None) or \
                        _equivalent_profile(other, model)
                    if twin is not None:
                        hint = f"did you mean 'all-{twin.replace('+', '.')}'? {_profile_hint(other, model)}"
                if prof.mig.preset == "all-enabled":
                    # mig-manager generates it: MIG mode on, no instances (mig-parted generate-config on an H200).
                    hint = ("all-enabled is MIG mode on with no instances: write layout: {} for that, or a preset "
                            "with instances such as all-balanced")
                elif prof.mig.preset == "all-disabled":
                    hint = "all-disabled is MIG off: give the pool a sharing profile without mig (exclusive: {})"
                yield ctx.finding("GC305", (*base, "preset"),
                                  f"preset {prof.mig.preset!r} does not exist on {model.id} (used by pool {pool.name!r})",
                                  hint)
        for profile_name in (prof.mig.layout or {}):
            if profile_name not in model.mig_profiles:
                yield ctx.finding("GC305", (*base, "layout", profile_name),
                                  f"MIG profile {profile_name!r} does not exist on {model.id} (used by pool {pool.name!r})",
                                  _profile_hint(profile_name, model), at_key=True)


def _equivalent_profile(name: str, model: catalog.GpuModel) -> str | None:
    """The profile of `model` with the same slices and attributes as `name` has on the models that know it."""
    for other in catalog.gpu_models().values():
        theirs = other.mig_profiles.get(name)
        if theirs is None or other.id == model.id:
            continue
        suffix = name[len(name.split("+")[0].split("-")[0]):]
        for candidate, mine in model.mig_profiles.items():
            if (mine.compute_slices, mine.memory_slices) == (theirs.compute_slices, theirs.memory_slices) and \
                    candidate.endswith(suffix) and (suffix or "+" not in candidate and "-" not in candidate):
                return candidate
    return None


def _profile_hint(name: str, model: catalog.GpuModel) -> str:
    """Explain a profile name from another model: MIG names carry memory sizes, so they differ per model."""
    owners = sorted(m.id for m in catalog.gpu_models().values() if name in m.mig_profiles)
    twin = _equivalent_profile(name, model)
    if owners and twin:
        return (f"{name} is a profile of {', '.join(owners)}; the same slice on {model.id} is {twin} "
                f"(`gpuconf catalog --gpu {model.id}`)")
    return _hint_choices(name, list(model.mig_profiles), "profiles")


@rule("GC306", "MIG layouts fit the GPU exactly")
def mig_layout_fits(ctx: Context) -> Iterator[Finding]:
    """A MIG layout fits one GPU exactly: max instances, a non-overlapping placement on the model's memory
    slices, and at most one media-extension (`+me`) instance of any size, since the GPU has one optical-flow
    accelerator and only a `+me` instance includes it (a `+me` instance may sit next to other 1g instances:
    `1g.18gb+me` + 6 × `1g.18gb` fills an H200); the finding points at the profile that does not fit and names
    the slots."""
    for i, pool, prof, model in _mig_pools(ctx):
        layout = prof.mig.layout
        if layout is None or any(p not in model.mig_profiles for p in layout):
            continue  # presets come from the model itself; unknown profiles are GC305
        fit = catalog.fit_mig_layout(model, layout)
        if not fit.fits:
            # Positioned at the profile the failure is about: the one over its limit, the second +me, or the one
            # that found no free start slot.
            loc = ("spec", "sharingProfiles", pool.sharing, "mig", "layout")
            yield ctx.finding("GC306", (*loc, fit.profile) if fit.profile in layout else loc,
                              f"layout does not fit one {model.id} (pool {pool.name!r}): {fit.reason}",
                              f"see `gpuconf catalog --gpu {model.id}` for the placements; 'all-balanced' always fits",
                              at_key=fit.profile in layout)


def _mig_pools(ctx: Context) -> Iterator[tuple]:
    seen: set[tuple[str, str]] = set()
    for i, pool in enumerate(ctx.intent.spec.pools):
        prof = plan.pool_profile(ctx.intent, pool)
        model = plan.gpu_model(ctx.intent, pool.gpu)
        if prof is None or prof.mig is None or model is None or not model.mig_capable:
            continue
        if (pool.sharing, model.id) in seen:
            continue  # one finding per profile and model, not per pool
        seen.add((pool.sharing, model.id))
        yield i, pool, prof, model


@rule("GC313", "a pinned MIG strategy agrees with the pools")
def mig_strategy_consistent(ctx: Context) -> Iterator[Finding]:
    """A pinned `migStrategy: single` contradicts a pool that mixes MIG profiles."""
    pinned = ctx.intent.spec.cluster.mig_strategy
    if pinned != "single":
        return
    for pool, layout in plan.mig_pools(ctx.intent):
        if len(layout) > 1:
            yield ctx.finding("GC313", ("spec", "cluster", "migStrategy"),
                              f"migStrategy single needs one uniform MIG profile per GPU, but pool {pool.name!r} "
                              f"mixes {', '.join(sorted(layout))}",
                              "remove migStrategy to let gpuconf derive 'mixed', or use one profile per pool")


# --- teams and quotas -------------------------------------------------------------------------------------------


@rule("GC314", "quotas refer to existing pools and use their resources")
def quota_refs(ctx: Context) -> Iterator[Finding]:
    """Quotas name existing pools and the pool's real resource names (per MIG profile under the mixed strategy)."""
    pools = {p.name: p for p in ctx.intent.spec.pools}
    # Under DRA every MIG profile has a DeviceClass of its own: quotas name profiles, as under the mixed strategy.
    strategy = "mixed" if ctx.intent.spec.cluster.allocation == "dra" else ctx.strategy
    for i, team in enumerate(ctx.intent.spec.teams):
        for pool_name, value in team.quota.items():
            loc = ("spec", "teams", i, "quota", pool_name)
            pool = pools.get(pool_name)
            if pool is None:
                yield ctx.finding("GC314", loc, f"quota names unknown pool {pool_name!r}",
                                  _hint_choices(pool_name, list(pools), "pools"), at_key=True)
                continue
            layout = plan.mig_layout(plan.pool_profile(ctx.intent, pool), plan.gpu_model(ctx.intent, pool.gpu))
            if isinstance(value, dict):
                if layout is None:
                    yield ctx.finding("GC314", loc, f"pool {pool_name!r} does not use MIG; give its quota as a count",
                                      f"e.g. {pool_name}: 8")
                elif strategy == "single":
                    # Per-profile quotas say the user expects per-profile resources: when the strategy is only
                    # derived, the way back is pinning mixed, not accepting a flip that renames every
                    # nvidia.com/mig-* resource of a running cluster (GC370).
                    pinned = ctx.intent.spec.cluster.mig_strategy == "single"
                    yield ctx.finding("GC314", loc, "with MIG strategy single every MIG device is nvidia.com/gpu; "
                                      "give the quota as a count" if pinned else "with the MIG strategy single, "
                                      "derived from uniform layouts, every MIG device is nvidia.com/gpu and a "
                                      "per-profile quota names no resource", f"e.g. {pool_name}: 4" if pinned else
                                      "the strategy is derived from uniform layouts: to keep per-profile resources "
                                      "(the names a running cluster's quotas and jobs use), pin "
                                      f"spec.cluster.migStrategy: mixed; to switch, give the quota as a count "
                                      f"(e.g. {pool_name}: 4) in a maintenance window")
                else:
                    for profile_name in value:
                        if profile_name not in layout:
                            yield ctx.finding("GC314", (*loc, profile_name),
                                              f"pool {pool_name!r} has no {profile_name!r} MIG devices",
                                              _hint_choices(profile_name, list(layout), "profiles"), at_key=True)
            elif layout is not None and strategy == "mixed":
                why = "a DeviceClass per MIG profile (DRA)" if strategy != ctx.strategy else \
                    "one resource per MIG profile (strategy mixed)"
                yield ctx.finding("GC314", loc, f"pool {pool_name!r} exposes {why}; give the quota per profile", "e.g. {" + ", ".join(
                                      f"\"{p}\": 1" for p in sorted(layout)) + "}")


@rule("GC315", "quotas fit the pool's capacity")
def quota_capacity(ctx: Context) -> Iterator[Finding]:
    """Quotas (x the team's namespaces when ResourceQuotas are rendered; once per team under Kueue alone) per
    pool and resource do not exceed capacity (GPUs x replicas, or MIG instances x GPUs x nodes) unless
    `allowQuotaOversubscription`."""
    names = Counter(p.name for p in ctx.intent.spec.pools)
    per_namespace = plan.resource_quotas(ctx.intent)
    how = "quota x namespaces" if per_namespace else "the teams' Kueue nominal quotas"
    for pool in ctx.intent.spec.pools:
        if pool.allow_quota_oversubscription or names[pool.name] > 1:
            continue  # a duplicated pool name is GC302's; its quotas cannot be attributed
        profile = plan.pool_profile(ctx.intent, pool)
        if profile is None or plan.sharing_kind(profile) == "exclusive" and profile.exclusive is None:
            continue  # a profile without a mode is GC311's; its capacity is unknown
        cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
        if cap is None:
            continue
        asked: dict[str, int] = {}
        last: dict[str, tuple] = {}
        for i, team in enumerate(ctx.intent.spec.teams):
            value = team.quota.get(pool.name)
            if value is None:
                continue
            loc = ("spec", "teams", i, "quota", pool.name)
            # A ResourceQuota applies to each of the team's namespaces; a Kueue ClusterQueue to the team as a whole.
            copies = len(team.namespaces) if per_namespace else 1
            if isinstance(value, dict):
                for profile_name, count in value.items():
                    resource = plan.profile_resource(cap.per_node, profile_name)
                    if resource is not None:
                        asked[resource] = asked.get(resource, 0) + count * copies
                        last[resource] = (*loc, profile_name)
            elif len(cap.per_node) == 1:
                resource = next(iter(cap.per_node))
                asked[resource] = asked.get(resource, 0) + value * copies
                last[resource] = loc
        for resource, total in sorted(asked.items()):
            if total > cap.total(resource):
                yield ctx.finding("GC315", last[resource],
                                  f"team quotas on pool {pool.name!r} add up to {total} {resource} ({how}), but the pool has "
                                  f"{cap.total(resource)} ({cap.per_node[resource]} per node x {cap.nodes} nodes)",
                                  "lower the quotas, grow the pool, or set allowQuotaOversubscription: true on the pool")


@rule("GC330", "quotas that a ResourceQuota cannot keep apart")
def quota_shared_resource(ctx: Context) -> Iterator[Finding]:
    """(warning, without Kueue) a team's quota spans pools that advertise the same resource name, which a
    ResourceQuota cannot tell apart."""
    if plan.kueue_settings(ctx.intent) is not None:
        return  # Kueue counts per pool (one flavor each): the pools are kept apart for the Jobs it queues
    caps = {p.name: plan.pool_capacity(ctx.intent, p, ctx.strategy) for p in ctx.intent.spec.pools}
    for i, team in enumerate(ctx.intent.spec.teams):
        by_resource: dict[str, list[str]] = {}
        for pool_name, value in team.quota.items():
            cap = caps.get(pool_name)
            if cap is None or isinstance(value, dict):
                continue
            for resource in cap.per_node:
                by_resource.setdefault(resource, []).append(pool_name)
        for resource, names in sorted(by_resource.items()):
            if len(names) > 1:
                yield ctx.finding("GC330", ("spec", "teams", i, "quota"),
                                  f"pools {', '.join(repr(n) for n in names)} all advertise {resource}; a ResourceQuota "
                                  f"counts per resource name, so the team's namespaces get one summed limit",
                                  "give the pools distinct resources (renameByDefault, MIG) or use a queueing layer "
                                  "such as Kueue for per-pool limits", severity=WARNING)


@rule("GC322", "access refers to existing teams")
def access_refs(ctx: Context) -> Iterator[Finding]:
    """`access.developers` names existing teams."""
    access = ctx.intent.spec.access
    if access is None:
        return
    teams = [t.name for t in ctx.intent.spec.teams]
    for team in access.developers:
        if team not in teams:
            yield ctx.finding("GC322", ("spec", "access", "developers", team), f"developers name unknown team {team!r}",
                              _hint_choices(team, teams, "teams"), at_key=True)


# --- team queueing (Kueue) --------------------------------------------------------------------------------------


def _kueue_loc(*rest: str | int) -> tuple:
    return ("spec", "queueing", "kueue", *rest)


def kueue_rule(code: str, title: str) -> Callable[[Callable[[Context, object], Iterator[Finding]]], Callable]:
    """Register a rule that runs only with Kueue on and receives its settings (gpuconf.intent.model.Kueue)."""

    def register(fn: Callable[[Context, object], Iterator[Finding]]) -> Callable:
        def check(ctx: Context) -> Iterator[Finding]:
            kueue = plan.kueue_settings(ctx.intent)
            return iter(()) if kueue is None else fn(ctx, kueue)

        check.__doc__ = fn.__doc__
        rule(code, title)(check)
        return fn

    return register


@kueue_rule("GC360", "the Kueue version is one gpuconf has the CRDs of, on a Kubernetes it supports")
def kueue_version(ctx: Context, kueue) -> Iterator[Finding]:
    """The Kueue version is one gpuconf has the CRDs of (v0.19.2), and the cluster runs Kubernetes 1.29 or newer
    (Kueue's installation guide)."""
    from ...render.kueue import MIN_KUBERNETES, releases

    known = list(releases())
    if kueue.version not in known:
        guess = catalog.suggest(kueue.version, known)
        yield ctx.finding("GC360", _kueue_loc("version"), f"gpuconf has no CRDs of Kueue {kueue.version!r}, so it "
                          "cannot verify the queues against them",
                          f"{f'did you mean {guess!r}? ' if guess else ''}supported: {', '.join(known)}")
    version = ctx.intent.spec.cluster.kubernetes_version
    if tuple(int(p) for p in version.split(".")) < MIN_KUBERNETES:
        yield ctx.finding("GC360", ("spec", "cluster", "kubernetesVersion"),
                          f"Kueue needs Kubernetes {'.'.join(map(str, MIN_KUBERNETES))} or newer (its installation "
                          f"guide); the cluster runs {version}",
                          "upgrade the cluster first, or remove spec.queueing.kueue")


def _kueue_team(ctx: Context, name: str) -> tuple[int, object] | None:
    return next(((i, t) for i, t in enumerate(ctx.intent.spec.teams) if t.name == name), None)


@kueue_rule("GC361", "Kueue settings name teams with a queue, pools of their quota and real resources")
def kueue_refs(ctx: Context, kueue) -> Iterator[Finding]:
    """Kueue settings name existing teams (a team without a quota gets no queue: warning), limits name pools of
    the team's quota in the quota's shape and MIG profiles it names, `otherResources` are resource names and not
    GPU resources."""
    pools = {p.name: p for p in ctx.intent.spec.pools}
    caps = {name: plan.pool_capacity(ctx.intent, pool, ctx.strategy) for name, pool in pools.items()}
    gpu_resources = {r for cap in caps.values() if cap is not None for r in cap.per_node}
    teams = [t.name for t in ctx.intent.spec.teams]
    for name, settings in kueue.teams.items():
        loc = _kueue_loc("teams", name)
        found = _kueue_team(ctx, name)
        if found is None:
            yield ctx.finding("GC361", loc, f"queue settings name unknown team {name!r}",
                              _hint_choices(name, teams, "teams"), at_key=True)
            continue
        i, team = found
        if not team.quota:
            yield ctx.finding("GC361", loc, f"team {name!r} has no quota, so it gets no queue: these settings have "
                              "no effect", f"give spec.teams[{i}].quota, or remove them", severity=WARNING,
                              at_key=True)
            continue
        for key, given in (("borrowingLimit", settings.borrowing_limit), ("lendingLimit", settings.lending_limit)):
            for pool_name, value in given.items():
                yield from _limit_refs(ctx, (*loc, key, pool_name), i, team, pool_name, value, pools, caps)
        for resource in settings.other_resources:
            rloc = (*loc, "otherResources", resource)
            if resource in gpu_resources or resource.startswith("nvidia.com/"):
                yield ctx.finding("GC361", rloc, f"{resource} is a GPU resource: its queue quota comes from the "
                                  "team's quota, per pool", f"set it in spec.teams[{i}].quota", at_key=True)
            elif _qualified_name_problem(resource):
                yield ctx.finding("GC361", rloc, f"{resource!r} is not a resource name: it "
                                  f"{_qualified_name_problem(resource)}", "e.g. cpu, memory, ephemeral-storage",
                                  at_key=True)


def _limit_refs(ctx: Context, loc: tuple, i: int, team, pool_name: str, value, pools, caps) -> Iterator[Finding]:
    """A borrowing or lending limit names a pool of the team's quota, in the quota's shape, with its resources."""
    what = loc[-2]
    if pool_name not in team.quota:
        if pool_name not in pools:
            yield ctx.finding("GC361", loc, f"{what} names unknown pool {pool_name!r}",
                              _hint_choices(pool_name, list(pools), "pools"), at_key=True)
        else:
            yield ctx.finding("GC361", loc, f"{what} names pool {pool_name!r}, which the team's quota does not: its "
                              "queue lists only the pools of its quota",
                              f"add {pool_name}: 0 to spec.teams[{i}].quota to borrow there only", at_key=True)
        return
    cap, quota = caps.get(pool_name), team.quota[pool_name]
    if cap is None:
        return  # the pool's sharing cannot be resolved: other rules say why
    if isinstance(value, dict) != isinstance(quota, dict):
        shape = "a count" if isinstance(quota, int) else "a mapping of MIG profile to count"
        yield ctx.finding("GC361", loc, f"the team's quota on pool {pool_name!r} is {shape}; give the {what} the "
                          "same shape", None)
        return
    if isinstance(value, dict):
        named = plan.quota_units(cap.per_node, quota)
        for profile_name in value:
            units = plan.quota_units(cap.per_node, {profile_name: 0})
            if not units or next(iter(units)) not in named:
                yield ctx.finding("GC361", (*loc, profile_name), f"the team's quota on pool {pool_name!r} names no "
                                  f"{profile_name!r}", f"add \"{profile_name}\": 0 to its quota to borrow it only",
                                  at_key=True)


@kueue_rule("GC362", "borrowing and lending limits stay within the cohort")
def kueue_limits(ctx: Context, kueue) -> Iterator[Finding]:
    """Borrowing and lending limits need a cohort (Kueue rejects them without one); a lending limit is at most
    the nominal quota; (warning) a borrowing limit where no other team of the cohort has quota to lend."""
    rows = {t.name: plan.team_queue_rows(ctx.intent, t, ctx.strategy) for t in ctx.intent.spec.teams if t.quota}
    for name, settings in kueue.teams.items():
        found = _kueue_team(ctx, name)
        if found is None or name not in rows:
            continue  # GC361
        team = found[1]
        for key, given in (("borrowingLimit", settings.borrowing_limit), ("lendingLimit", settings.lending_limit)):
            for pool_name, value in given.items():
                loc = _kueue_loc("teams", name, key, pool_name)
                pool = next((p for p in ctx.intent.spec.pools if p.name == pool_name), None)
                if pool_name not in team.quota or pool is None:
                    continue  # GC361
                if not kueue.cohort:
                    yield ctx.finding("GC362", loc, f"{key} needs a cohort: Kueue rejects borrowing and lending "
                                      "limits on a ClusterQueue that has none", "set spec.queueing.kueue.cohort")
                    continue
                cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
                for resource, count in plan.quota_units(cap.per_node, value).items() if cap else ():
                    at = (*loc, next(p for p in value if plan.quota_units(cap.per_node, {p: 0}) == {resource: 0})) \
                        if isinstance(value, dict) else loc
                    mine = next(r for r in rows[name] if r.pool == pool_name and r.resource == resource)
                    if key == "lendingLimit" and count > mine.nominal:
                        yield ctx.finding("GC362", at, f"lendingLimit {count} exceeds the team's quota of "
                                          f"{mine.nominal} {resource} on pool {pool_name!r}: Kueue rejects it",
                                          f"at most {mine.nominal}")
                    if key == "borrowingLimit" and count > 0:
                        lendable = sum(r.nominal if r.lending_limit is None else r.lending_limit
                                       for other, theirs in rows.items() if other != name
                                       for r in theirs if r.pool == pool_name and r.resource == resource)
                        if lendable == 0:
                            yield ctx.finding("GC362", at, f"no other team in cohort {kueue.cohort!r} has quota of "
                                              f"{resource} on pool {pool_name!r} to lend, so there is nothing to "
                                              "borrow", "give another team quota there, or remove the limit",
                                              severity=WARNING)


@kueue_rule("GC336", "every quota a team's queue names can admit a workload")
def kueue_admits(ctx: Context, kueue) -> Iterator[Finding]:
    """A quota of 0 admits only what the team borrows: without a cohort, with a borrowing limit of 0, or in a cohort
    where no other team lends that pool's resource (all at 0, or a lending limit of 0), its workloads stay pending
    forever (Kueue v0.19.2 admits a workload only within nominal quota plus what its cohort lends)."""
    teams = [(i, t) for i, t in enumerate(ctx.intent.spec.teams) if t.quota]
    rows = {t.name: plan.team_queue_rows(ctx.intent, t, ctx.strategy) for _, t in teams}
    pools = {p.name: p for p in ctx.intent.spec.pools}
    for i, team in teams:
        for pool_name, value in team.quota.items():
            cap = plan.pool_capacity(ctx.intent, pools[pool_name], ctx.strategy) if pool_name in pools else None
            if cap is None:
                continue  # GC314 and the sharing rules say why
            for resource, count in plan.quota_units(cap.per_node, value).items():
                if count:
                    continue
                loc = ("spec", "teams", i, "quota", pool_name)
                if isinstance(value, dict):
                    loc = (*loc, next(p for p in value if plan.quota_units(cap.per_node, {p: 0}) == {resource: 0}))
                where = f"team {team.name!r} has a quota of 0 {resource} on pool {pool_name!r}"
                mine = next(r for r in rows[team.name] if r.pool == pool_name and r.resource == resource)
                if not kueue.cohort:
                    yield ctx.finding("GC336", loc, f"{where} and its queue is in no cohort, so it can never admit "
                                      "a workload there", "give the team quota there, set spec.queueing.kueue.cohort "
                                      "to let it borrow from other teams, or remove the pool from its quota")
                elif mine.borrowing_limit == 0:
                    yield ctx.finding("GC336", loc, f"{where} and a borrowingLimit of 0 there, so its queue can never "
                                      "admit a workload there", "raise the borrowingLimit, or give the team quota")
                elif not any(r.nominal if r.lending_limit is None else min(r.nominal, r.lending_limit)
                             for other, theirs in rows.items() if other != team.name
                             for r in theirs if r.pool == pool_name and r.resource == resource):
                    yield ctx.finding("GC336", loc, f"{where}, and no other team of cohort {kueue.cohort!r} lends it "
                                      "(each has 0 there or a lendingLimit of 0), so its queue can never admit a "
                                      "workload there unless a ClusterQueue gpuconf does not render lends it",
                                      "give a team of the cohort quota there to lend, or raise its lendingLimit",
                                      severity=WARNING)


@kueue_rule("GC363", "the preemption policy is one Kueue accepts")
def kueue_preemption(ctx: Context, kueue) -> Iterator[Finding]:
    """The preemption policy is one Kueue accepts: `borrowWithinCohort` other than Never needs
    `reclaimWithinCohort` other than Never (the ClusterQueue CRD's CEL rule)."""
    policy = kueue.preemption
    if policy.reclaim_within_cohort == "Never" and policy.borrow_within_cohort != "Never":
        # The ClusterQueue CRD's CEL rule on spec.preemption, and the webhook's validatePreemption.
        yield ctx.finding("GC363", _kueue_loc("preemption", "borrowWithinCohort"),
                          "borrowWithinCohort needs reclaimWithinCohort other than Never: Kueue rejects the "
                          "ClusterQueues", "set reclaimWithinCohort: LowerPriority or Any, or borrowWithinCohort: Never")


@kueue_rule("GC364", "team queues cover the cpu and memory their pods request")
def kueue_other_resources(ctx: Context, kueue) -> Iterator[Finding]:
    """Under `quotaCheckStrategy: BlockUndeclared` every team queue covers cpu and memory (`otherResources`), or
    Kueue leaves the team's pods pending."""
    if kueue.quota_check_strategy != "BlockUndeclared":
        return
    for i, team in enumerate(ctx.intent.spec.teams):
        if not team.quota:
            continue
        settings = kueue.teams.get(team.name)
        missing = [r for r in ("cpu", "memory") if settings is None or r not in settings.other_resources]
        if missing:
            loc = _kueue_loc("teams", team.name) if settings is not None else ("spec", "teams", i, "name")
            yield ctx.finding("GC364", loc, f"the ClusterQueue of team {team.name!r} covers no "
                              f"{' and no '.join(missing)}: under quotaCheckStrategy BlockUndeclared (Kueue's "
                              f"default) a pod that requests {' or '.join(missing)} stays pending", f"give spec.queueing.kueue.teams.{team.name}.otherResources "
                              "{cpu: ..., memory: ...}, or set quotaCheckStrategy: IgnoreUndeclared if your Kueue "
                              "runs so", at_key=settings is not None)


@kueue_rule("GC331", "excluded resource prefixes go with quotaCheckStrategy BlockUndeclared")
def kueue_excluded_with_strategy(ctx: Context, kueue) -> Iterator[Finding]:
    """`excludeResourcePrefixes` only with `quotaCheckStrategy: BlockUndeclared`: Kueue refuses a Configuration with
    both it and IgnoreUndeclared, and its manager does not start."""
    if kueue.quota_check_strategy == "IgnoreUndeclared" and kueue.exclude_resource_prefixes:
        # Kueue v0.19.2 pkg/config/validation.go validateQuotaCheckStrategy: the manager refuses the Configuration.
        yield ctx.finding("GC331", _kueue_loc("excludeResourcePrefixes"), "excludeResourcePrefixes with "
                          "quotaCheckStrategy IgnoreUndeclared: Kueue refuses such a Configuration and does not start",
                          "remove excludeResourcePrefixes (IgnoreUndeclared already ignores what no queue covers), "
                          "or set quotaCheckStrategy: BlockUndeclared", at_key=True)


@kueue_rule("GC332", "excluded resource prefixes leave the queued resources counted")
def kueue_excluded_resources(ctx: Context, kueue) -> Iterator[Finding]:
    """No excluded resource prefix matches a resource a queue counts (a pool's GPU resources, a team's
    `otherResources`): Kueue would count it against no quota."""
    counted: dict[str, str] = {}  # resource -> what counts it
    for pool in ctx.intent.spec.pools:
        cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
        for resource in cap.per_node if cap else ():
            counted.setdefault(resource, f"pool {pool.name!r}")
    for team, settings in kueue.teams.items():
        for resource in settings.other_resources:
            counted.setdefault(resource, f"the otherResources of team {team!r}")
    for j, prefix in enumerate(kueue.exclude_resource_prefixes or ()):
        hit = sorted(r for r in counted if r.startswith(prefix))  # Kueue: strings.HasPrefix (dropExcludedResources)
        if hit:
            yield ctx.finding("GC332", _kueue_loc("excludeResourcePrefixes", j), f"prefix {prefix!r} takes "
                              f"{', '.join(hit)} ({counted[hit[0]]}) out of Kueue's quota accounting: no queue would "
                              "limit it", "exclude only resources no queue covers, such as ephemeral-storage and "
                              "hugepages-")


@kueue_rule("GC365", "the queues fit Kueue's object limits")
def kueue_object_limits(ctx: Context, kueue) -> Iterator[Finding]:
    """The queues fit Kueue's limits: at most 8 tolerations (taints) per flavor, 64 flavors and 64 resources per
    resource group, 16 groups and 256 flavors per ClusterQueue."""
    from ...render import kueue as K

    for i, pool in enumerate(ctx.intent.spec.pools):
        if len(pool.taints) > K.MAX_TOLERATIONS:
            yield ctx.finding("GC365", _pool_loc(i, "taints"), f"pool {pool.name!r} has {len(pool.taints)} taints, "
                              f"but a ResourceFlavor holds at most {K.MAX_TOLERATIONS} tolerations",
                              f"keep {K.MAX_TOLERATIONS} taints or fewer")
    from ...render.names import PROBE_REQUESTS as REQUESTS

    caps = {p.name: plan.pool_capacity(ctx.intent, p, ctx.strategy) for p in ctx.intent.spec.pools}
    other = {name: set(t.other_resources) for name, t in kueue.teams.items()}
    queues = [("the acceptance queue (every pool)", _kueue_loc(),
               [(p.name, set(caps[p.name].per_node)) for p in ctx.intent.spec.pools if caps[p.name]]
               + [(K.ANY_NODE_FLAVOR, set(REQUESTS))])]
    queues += [(f"team {t.name!r}'s queue", ("spec", "teams", i, "quota"),
                [(p.name, set(caps[p.name].per_node)) for p in ctx.intent.spec.pools
                 if p.name in t.quota and caps[p.name]]
                + ([(K.ANY_NODE_FLAVOR, other[t.name])] if other.get(t.name) else []))
               for i, t in enumerate(ctx.intent.spec.teams) if t.quota]
    for what, loc, flavors in queues:
        # The queue's resource groups as the renderer builds them (render.kueue.resource_groups).
        groups = K.resource_groups([(name, {r: K.Quota(0) for r in resources}) for name, resources in flavors])
        problems = []
        if len(groups) > K.MAX_GROUPS:
            problems.append(f"{len(groups)} resource groups (at most {K.MAX_GROUPS})")
        for group in groups:
            if len(group["coveredResources"]) > K.MAX_GROUP_RESOURCES:
                problems.append(f"{len(group['coveredResources'])} resources in one group (at most "
                                f"{K.MAX_GROUP_RESOURCES})")
            if len(group["flavors"]) > K.MAX_GROUP_FLAVORS:
                problems.append(f"{len(group['flavors'])} pools advertising {group['coveredResources'][0]} in one "
                                f"group (at most {K.MAX_GROUP_FLAVORS})")
            combinations = len(group["flavors"]) * len(group["coveredResources"])
            if combinations > K.MAX_GROUP_COMBINATIONS:
                problems.append(f"{combinations} flavor-resource combinations in one group (at most "
                                f"{K.MAX_GROUP_COMBINATIONS})")
        if len(flavors) > K.MAX_FLAVORS:
            problems.append(f"{len(flavors)} flavors (at most {K.MAX_FLAVORS})")
        covered = sum(len(g["coveredResources"]) for g in groups)
        if covered > K.MAX_COVERED:
            problems.append(f"{covered} covered resources (at most {K.MAX_COVERED})")
        for problem in problems:
            yield ctx.finding("GC365", loc, f"{what} would have {problem}: Kueue rejects the ClusterQueue", None)


@kueue_rule("GC366", "ResourceQuotas leave room for what a team borrows")
def kueue_quotas_and_borrowing(ctx: Context, kueue) -> Iterator[Finding]:
    """(warning) ResourceQuotas next to a cohort: a namespace's quota can refuse the pods Kueue admitted on
    borrowed quota."""
    if not kueue.resource_quotas or not kueue.cohort:
        return
    borrowing = sorted(t.name for t in ctx.intent.spec.teams if t.quota and any(
        r.borrowing_limit != 0 for r in plan.team_queue_rows(ctx.intent, t, ctx.strategy)))
    if borrowing:
        yield ctx.finding("GC366", _kueue_loc("resourceQuotas"),
                          f"teams {', '.join(borrowing)} may borrow in cohort {kueue.cohort!r}, but each namespace's "
                          "ResourceQuota holds only the team's quota: pods Kueue admits on borrowed quota can be "
                          "refused by it, and their Job then waits admitted without pods",
                          "set borrowingLimit 0 for those pools, or resourceQuotas: false", severity=WARNING)


# --- image registry and URLs: what lands in image names, wrappers and the report ---------------------------------

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
        yield ctx.finding("GC353", loc, f"{_shown_text(registry)} contains whitespace or an unprintable character",
                          f"remove it: images would be named {_shown_text(registry + '/gpu-operator')}")
    elif registry.endswith("/"):
        yield ctx.finding("GC353", loc, f"{registry!r} ends with '/'", f"remove it: gpuconf adds '/' and the image's "
                          f"name (write {registry.rstrip('/')})")
    elif _credentials(registry, registry=True):
        return  # credentials: GC354 says so, and what the rest of the path is does not matter then
    elif not IMAGE_PREFIX.fullmatch(registry):
        yield ctx.finding("GC353", loc, f"{_shown_text(registry)} is not a registry path: a host with an optional "
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
                              f"{registry!r} back as {_shown(reads)}, not as the registry's name",
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
}


@rule("GC354", "no credentials in the registry or in URLs")
def no_credentials(ctx: Context) -> Iterator[Finding]:
    """No credentials in `spec.operator.registry`, `spec.delivery.repoURL`, `spec.delivery.chartRepository` or
    `spec.delivery.destination.server` (`user:password@`, or a token before `@` in an `https`/`oci` URL;
    `git@host:repo` and `ssh://git@host/...` name the SSH user and pass): gpuconf writes these values into
    values, wrappers, probes and REPORT.md; the hint names the Secret they belong in, and the finding masks
    them."""
    delivery = ctx.intent.spec.delivery
    values = {("spec", "operator", "registry"): ctx.intent.spec.operator.registry,
              ("spec", "delivery", "repoURL"): delivery.repoURL,
              ("spec", "delivery", "chartRepository"): delivery.chart_repository,
              ("spec", "delivery", "destination", "server"): delivery.destination.server
              if delivery.destination is not None else None}
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
        return _shown_text(value)
    return _shown_text(value.replace(user + "@", "***@", 1))


# --- operator, driver, overrides --------------------------------------------------------------------------------


@rule("GC318", "chart version is one gpuconf ships defaults for")
def chart_version_known(ctx: Context) -> Iterator[Finding]:
    """The chart version is one gpuconf ships base defaults for."""
    version = ctx.intent.spec.operator.chart_version
    if catalog.chart(version) is None:
        known = catalog.chart_versions()
        guess = catalog.suggest(version, known)
        hint = f"did you mean '{guess}'? " if guess else ""
        yield ctx.finding("GC318", ("spec", "operator", "chartVersion"),
                          f"gpuconf has no base defaults for GPU Operator chart {version!r}",
                          f"{hint}supported: {', '.join(known)}")


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
        if status == "unknown":
            hint = f"did you mean '{guess}'?" if guess else "see the chart's values.yaml for the key"
            yield ctx.finding("GC319", ("spec", "overrides", i, "path"),
                              f"{override.path!r} is not a value of GPU Operator chart {version}", hint)


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
                              f"{override.path} is already {_shown(node)} by default in chart {facts.version}: the "
                              "override renders nothing (values.yaml holds only deviations)",
                              "remove it; keep it only to pin the value across chart upgrades (`gpuconf diff "
                              "--to-chart` shows when it starts to matter)", severity=WARNING)


def _shown(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@rule("GC342", "an override does not replace a value gpuconf derives")
def override_keeps_derived(ctx: Context) -> Iterator[Finding]:
    """(warning) an override replaces a value gpuconf derives from the intent (tolerations, `mig.strategy`,
    `devicePlugin.config.*`, ...); the finding names what is lost."""
    overrides = ctx.intent.spec.overrides
    if not overrides:
        return
    from ...render.values import derived_changes

    derived = derived_changes(ctx.intent)
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
                return (f"lost: {'.'.join(derived)} = {_shown(derived_value)} (the override's map leaves it out, so "
                        "the chart default applies)")
            node = node[key]
        if node == derived_value:
            return frozen
        return f"lost: {'.'.join(derived)} = {_shown(derived_value)} (the override sets {_shown(node)})"
    if len(override) > len(derived):
        return f"lost: {'.'.join(derived)} = {_shown(derived_value)} (gpuconf no longer sets it at all)"
    if isinstance(derived_value, list) and isinstance(value, list):
        from ...render.values import uncovered

        if derived[-1] == "tolerations":
            missing = uncovered(derived_value, value)
            if not missing and derived_value != value:
                return None
        else:
            missing = [item for item in derived_value if item not in value]
        return f"lost: {_shown(missing)}" if missing else frozen
    return frozen if derived_value == value else f"lost: {_shown(derived_value)}"


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
    builder = ValuesBuilder(facts.defaults)
    for i in known:
        builder.set(overrides[i].path, overrides[i].value, overrides[i].why, ("spec", "overrides", i))
    keys = {i: tuple(overrides[i].path.split(".")) for i in known}
    for path, message in verify.values_failures(builder.merged(), version):
        owner = next((i for i in reversed(known) if tuple(path[:len(keys[i])]) == keys[i]), None)
        if owner is None:
            continue  # under no override: a default gpuconf's derived schema rejects, checked by its own tests
        inside = path[len(keys[owner]):]  # where in the override's value, when the value is a map or list
        yield ctx.finding("GC343", ("spec", "overrides", owner, "value", *inside),
                          f"{message} (chart value {dotted(path)})",
                          f"chart {version}'s values schema (from its values.yaml and the ClusterPolicy and "
                          "NVIDIADriver CRDs) types this key; give a value of that shape", at_key=bool(inside))


@rule("GC324", "driver settings are coherent")
def driver_coherent(ctx: Context) -> Iterator[Finding]:
    """Driver settings are coherent (preinstalled and a version; empty pool driver)."""
    spec = ctx.intent.spec
    if spec.driver.preinstalled and spec.driver.version:
        yield ctx.finding("GC324", ("spec", "driver", "version"),
                          "a preinstalled driver has no version for the operator to manage",
                          "remove version, or set preinstalled: false")
    for i, pool in enumerate(spec.pools):
        if pool.driver is None:
            continue
        if pool.driver.preinstalled and pool.driver.version:
            yield ctx.finding("GC324", _pool_loc(i, "driver", "version"),
                              "a preinstalled driver has no version for the operator to manage",
                              "remove version, or set preinstalled: false")
        elif not pool.driver.preinstalled and not pool.driver.version:
            yield ctx.finding("GC324", _pool_loc(i, "driver"), "pool driver sets neither version nor preinstalled",
                              "remove the driver block to use the cluster default", severity=WARNING)
        elif plan.cluster_preinstalled(ctx.intent) and pool.driver.preinstalled:
            yield ctx.finding("GC324", _pool_loc(i, "driver", "preinstalled"),
                              "the cluster default is already preinstalled", "remove the pool's driver block",
                              severity=WARNING)


#: First chart whose NVIDIADriver CRD gpuconf ships (and verifies against): `spec.default` and the fallback driver
#: came with v26.7.0 (gpu-operator-facts §8-9); per-pool drivers on older charts would need the default driver's
#: nodeSelector, which gpuconf cannot prove disjoint.
PER_POOL_DRIVER_MIN_CHART = (26, 7, 0)


@rule("GC329", "per-pool driver versions need a chart with the NVIDIADriver fallback")
def per_pool_driver_chart(ctx: Context) -> Iterator[Finding]:
    """Per-pool driver versions and upgrade waves need chart v26.7.0 or later (its NVIDIADriver fallback makes
    the per-pool selectors provably disjoint)."""
    version = ctx.intent.spec.operator.chart_version
    if catalog.chart(version) is None:
        return
    if tuple(int(p) for p in version.lstrip("v").split(".")) >= PER_POOL_DRIVER_MIN_CHART:
        return
    for i, pool in enumerate(ctx.intent.spec.pools):
        if pool.driver is not None and pool.driver.version:
            yield ctx.finding("GC329", _pool_loc(i, "driver", "version"),
                              f"per-pool driver versions need GPU Operator chart v26.7.0 or later (pinned: {version})",
                              "upgrade the chart first, or keep this pool on the cluster driver for now")
    upgrade = ctx.intent.spec.driver.upgrade
    if plan.wave_mode(ctx.intent):
        key = "waves" if upgrade.waves else "canaryPool" if upgrade.canary_pool else "rollout"
        yield ctx.finding("GC329", ("spec", "driver", "upgrade", key),
                          f"upgrade waves give each pool its own NVIDIADriver, which needs GPU Operator chart v26.7.0 "
                          f"or later (pinned: {version})",
                          "upgrade the chart first; until then a new driver.version reaches every pool at once")


@rule("GC323", "upgrade waves list pools on the cluster driver, once each")
def upgrade_waves(ctx: Context) -> Iterator[Finding]:
    """Upgrade waves (and `canaryPool`) list existing pools on the cluster driver, each once (not a pinned or
    preinstalled pool); `rollout.wave` is within the waves; a rollout to the version the pools run already
    (warning)."""
    spec = ctx.intent.spec
    upgrade = spec.driver.upgrade
    if upgrade is None:
        return
    pools = {p.name: p for p in spec.pools}
    base = ("spec", "driver", "upgrade")
    listed: list[tuple[tuple, str]] = []
    if upgrade.canary_pool is not None:
        listed.append(((*base, "canaryPool"), upgrade.canary_pool))
        if upgrade.waves:
            yield ctx.finding("GC323", (*base, "canaryPool"), "give canaryPool or waves, not both",
                              "canaryPool: X is the same as waves: [[X]]; list the canary as the first wave")
    listed += [((*base, "waves", i, j), name) for i, wave in enumerate(upgrade.waves) for j, name in enumerate(wave)]
    first: dict[str, tuple] = {}
    for loc, name in listed:
        pool = pools.get(name)
        if pool is None:
            yield ctx.finding("GC323", loc, f"{name!r} is not a pool", _hint_choices(name, list(pools), "pools"))
            continue
        if name in first and loc[3] == "waves":
            line, _ = ctx.doc.position(first[name])
            yield ctx.finding("GC323", loc, f"pool {name!r} is in two waves (first on line {line})",
                              "each pool upgrades once, in one wave")
            continue
        first.setdefault(name, loc)
        kind = plan.pool_driver(ctx.intent, pool)
        if kind == "preinstalled":
            yield ctx.finding("GC323", loc, f"pool {name!r} keeps a preinstalled driver, so it never upgrades",
                              "list only pools whose driver the operator manages")
        elif kind != "cluster":
            yield ctx.finding("GC323", loc, f"pool {name!r} pins its own driver version ({kind}), so a new cluster "
                              "driver never reaches it",
                              "remove the pool's driver.version to let it follow the waves, or leave it out of them")
    rollout = upgrade.rollout
    if rollout is None:
        return
    loc = (*base, "rollout")
    if spec.driver.preinstalled:
        yield ctx.finding("GC323", loc, "the cluster driver is preinstalled: there is nothing to roll out",
                          "remove rollout, or set driver.preinstalled: false")
        return
    waves = plan.upgrade_waves(ctx.intent)
    if rollout.wave > len(waves):
        yield ctx.finding("GC323", (*loc, "wave"), f"there are {len(waves)} wave(s), rollout.wave is {rollout.wave}",
                          f"waves 1..{len(waves)}: {'; '.join(', '.join(w) for w in waves) or 'none'}")
    current = spec.driver.version
    chart = catalog.chart(spec.operator.chart_version)
    if chart is not None and rollout.version == (current or chart.defaults["driver"]["version"]):
        yield ctx.finding("GC323", (*loc, "version"), f"the pools already run {rollout.version}: the rollout changes "
                          "nothing", "set rollout.version to the new version, or remove rollout once every wave "
                          "runs it and driver.version is the new one", severity=WARNING)


#: The driver image's tags are `<version>-<os tag>` with a three-part version, `<major>.<minor>.<revision>`
#: (../shared/reference/gpu-operator-facts.md, `driver.version`: 595.91.07 tags 595.91.07-ubuntu24.04; GFD publishes
#: the same three parts as nvidia.com/cuda.driver-version.{major,minor,revision}, nvidia-formats-facts.md). A version
#: of another shape (`470.1`) names no image: the driver pods would fail to pull it. Every shipped chart's default
#: has this shape (tests/test_catalog.py).
DRIVER_TAG = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


def _driver_versions(ctx: Context) -> Iterator[tuple[tuple, str]]:
    """Every driver version the intent names, with its location."""
    spec = ctx.intent.spec
    if spec.driver.version:
        yield ("spec", "driver", "version"), spec.driver.version
    for i, pool in enumerate(spec.pools):
        if pool.driver is not None and pool.driver.version:
            yield _pool_loc(i, "driver", "version"), pool.driver.version
    if spec.driver.upgrade is not None and spec.driver.upgrade.rollout is not None:
        yield ("spec", "driver", "upgrade", "rollout", "version"), spec.driver.upgrade.rollout.version


@rule("GC316", "driver versions name a tag of the chart's driver image: <major>.<minor>.<revision>")
def driver_tags(ctx: Context) -> Iterator[Finding]:
    """Driver versions (`spec.driver.version`, a pool's `driver.version`, `rollout.version`) name a tag the chart's
    driver image has: `<major>.<minor>.<revision>` (`595.91.07`, tagged `595.91.07-ubuntu24.04`); a two-part `470.1`
    names no image."""
    chart = catalog.chart(ctx.intent.spec.operator.chart_version)
    example = chart.defaults["driver"]["version"] if chart is not None else "595.91.07"
    for loc, version in _driver_versions(ctx):
        if not DRIVER_TAG.fullmatch(version):
            yield ctx.finding("GC316", loc, f"no driver image has version {version}: the driver's tags are "
                              "<major>.<minor>.<revision>-<os tag>",
                              f"give all three parts, e.g. {example!r} (the chart's default)")


@rule("GC321", "a driver rollout moves to a newer version")
def rollout_forward(ctx: Context) -> Iterator[Finding]:
    """(Warning) `rollout.version` is older than the version the pools run (`spec.driver.version`, else the chart's
    default): a downgrade; undoing a wave is reverting the commit that raised `rollout.wave`."""
    spec = ctx.intent.spec
    rollout = spec.driver.upgrade.rollout if spec.driver.upgrade is not None else None
    chart = catalog.chart(spec.operator.chart_version)
    if rollout is None or chart is None or spec.driver.preinstalled:
        return
    current = spec.driver.version or chart.defaults["driver"]["version"]
    if not (DRIVER_TAG.fullmatch(current) and DRIVER_TAG.fullmatch(rollout.version)):
        return  # GC316 says what is wrong
    if tuple(map(int, rollout.version.split("."))) < tuple(map(int, current.split("."))):
        yield ctx.finding("GC321", ("spec", "driver", "upgrade", "rollout", "version"),
                          f"the rollout moves the pools from {current} down to the older {rollout.version}",
                          "a downgrade is rare: check the version; to undo a wave instead, revert the commit that "
                          "raised rollout.wave", severity=WARNING)


def _driver_preinstalled(intent: ClusterIntent, pool: Pool) -> bool:
    return plan.pool_driver(intent, pool) == "preinstalled"


@rule("GC327", "container runtime settings are ones the toolkit can use")
def runtime_paths(ctx: Context) -> Iterator[Finding]:
    """Container runtime settings the toolkit can use: (warnings) cri-o paths are not rendered, NRI mode with
    cri-o (NVIDIA's documents disagree), paths unused in NRI mode; (error) NRI mode with CDI switched off by an
    override."""
    cluster = ctx.intent.spec.cluster
    runtime = cluster.container_runtime
    loc = ("spec", "cluster", "containerRuntime")
    if runtime is None:
        return
    if runtime.name == "cri-o" and (runtime.config_path or runtime.socket_path):
        yield ctx.finding("GC327", loc,
                          "gpuconf renders runtime paths for containerd only; these cri-o paths would be ignored",
                          "remove them, or set the toolkit's environment through an override", severity=WARNING)
    if runtime.nri:
        from ... import platforms

        nri = platforms.nri()
        if runtime.name == "cri-o":
            yield ctx.finding("GC327", (*loc, "nri"),
                              "NVIDIA's own documents disagree on NRI mode with CRI-O (the v26.3.0 release notes say "
                              "it is not supported)", "use NRI mode with containerd only", severity=WARNING)
        if runtime.config_path or runtime.socket_path:
            yield ctx.finding("GC327", (*loc, "nri"),
                              "in NRI mode the toolkit leaves the runtime's config alone, so the paths are not used",
                              "remove configPath and socketPath", severity=WARNING)
        needed = nri["needs"]
        for i, override in enumerate(ctx.intent.spec.overrides):
            if override.path in needed and override.value != needed[override.path]:
                yield ctx.finding("GC327", ("spec", "overrides", i, "value"),
                                  f"NRI mode needs {override.path}={str(needed[override.path]).lower()}; the chart "
                                  "renders cdi.nriPluginEnabled only then", "remove the override, or NRI mode")


@rule("GC350", "the single MIG strategy gives different slices one resource name")
def single_strategy_ambiguity(ctx: Context) -> Iterator[Finding]:
    """(warning) under the single MIG strategy, pools whose `nvidia.com/gpu` means different things (a slice of
    one size, of another, a whole GPU) cannot be told apart by quotas or requests; `migStrategy: mixed` gives
    each profile its own resource."""
    if ctx.strategy != "single":
        return
    units: dict[str, list[str]] = {}  # what one nvidia.com/gpu is -> pools
    for pool in ctx.intent.spec.pools:
        model = catalog.gpu_model(pool.gpu)
        profile = plan.pool_profile(ctx.intent, pool)
        cap = plan.pool_capacity(ctx.intent, pool, ctx.strategy)
        if model is None or profile is None or cap is None or plan.GPU not in cap.per_node:
            continue
        layout = plan.mig_layout(profile, model)
        unit = f"a {next(iter(layout))} slice of an {model.id}" if layout else f"a whole {model.id}"
        units.setdefault(unit, []).append(pool.name)
    if len(units) < 2 or not any(" slice " in unit for unit in units):
        return
    pinned = ctx.intent.spec.cluster.mig_strategy == "single"
    loc = ("spec", "cluster", "migStrategy") if pinned else ("spec", "sharingProfiles")
    told = "; ".join(f"{', '.join(pools)}: {unit}" for unit, pools in sorted(units.items()))
    yield ctx.finding("GC350", loc, f"with the single MIG strategy every pool advertises {plan.GPU}, so a quota or a "
                      f"pod's request cannot tell these apart ({told})",
                      "migStrategy: mixed gives each MIG profile its own resource (nvidia.com/mig-<profile>)"
                      + ("" if pinned else "; pin it under spec.cluster"), severity=WARNING)


@rule("GC351", "overrides set no value the chart's templates replace")
def override_helm_default(ctx: Context) -> Iterator[Finding]:
    """An override sets a value the chart's templates replace through Helm's `default`
    (`driver.upgradePolicy.maxUnavailable: 0` becomes 25%; `licensingConfig.nlsEnabled: false` in the chart's
    default NVIDIADriver becomes true)."""
    from ...render import chart as C

    facts = catalog.chart(ctx.intent.spec.operator.chart_version)
    if facts is None or not ctx.intent.spec.overrides:
        return
    default_cr = None
    for i, override in enumerate(ctx.intent.spec.overrides):
        parts = override.path.split(".")
        for path, quirk in sorted(facts.helm_defaults.items()):
            keys = path.split(".")
            if parts != keys[:len(parts)]:
                continue
            found, value = True, override.value
            for key in keys[len(parts):]:
                if not isinstance(value, dict) or key not in value:
                    found = False
                    break
                value = value[key]
            if not found or not C.empty(value) or value == quirk["becomes"]:
                continue
            if quirk["when"] == "defaultNVIDIADriver":
                if default_cr is None:
                    default_cr = _renders_default_nvidiadriver(ctx.intent)
                if not default_cr:
                    continue
            inside = tuple(keys[len(parts):])
            where = " and ".join(f"templates/{name}" for name in quirk["templates"])
            hint = ('write "0%" for no node at all: the operator reads it as the same number'
                    if path.endswith("maxUnavailable") else
                    "the chart cannot render this value; leave it out" if quirk["when"] == "always" else
                    "the chart's default NVIDIADriver cannot carry it; give the pools their own driver versions, or "
                    "leave it out")
            yield ctx.finding("GC351", ("spec", "overrides", i, "value", *inside),
                              f"{path} = {_shown(value)} never reaches the cluster: {where} read it as "
                              f"`{keys[-1]} | default {_shown(quirk['becomes'])}`, and Helm's default replaces an "
                              f"empty value, so it becomes {_shown(quirk['becomes'])}", hint, at_key=bool(inside))


def _renders_default_nvidiadriver(intent: ClusterIntent) -> bool:
    """Whether the chart renders its NVIDIADriver/default for this intent (False when it cannot be planned)."""
    from ...render import chart as C
    from ...render.values import build_values

    if any(catalog.gpu_model(p.gpu) is None or plan.pool_profile(intent, p) is None for p in intent.spec.pools):
        return False
    return C.default_nvidiadriver(build_values(plan.build(intent, "")).merged()) is not None


#: A label selector requirement: key, !key, key=value, key==value, key!=value, key in (...), key notin (...).
_SELECTOR_REQUIREMENT = re.compile(r"\s*(?:(!)\s*(?P<absent>[^\s=!(),]+)|(?P<key>[^\s=!(),]+)\s*"
                                   r"(?:(?P<op>==|!=|=)\s*(?P<value>[^\s=!(),]*)|\s+(?P<set>in|notin)\s*"
                                   r"\((?P<values>[^()]*)\))?)\s*")


def selector_problem(selector: str) -> str | None:
    """Why a string is not a Kubernetes label selector, or None when it is one."""
    parts, depth, current = [], 0, ""
    for ch in selector:  # split on the commas outside (...)
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    for part in parts:
        match = _SELECTOR_REQUIREMENT.fullmatch(part)
        if match is None:
            return f"{part.strip()!r} is not a requirement (key, !key, key=value, key!=value, key in (a,b))"
        key = match.group("absent") or match.group("key")
        problem = _qualified_name_problem(key)
        if problem:
            return f"key {key!r} {problem}"
        values = [match.group("value")] if match.group("value") is not None else \
            [v.strip() for v in match.group("values").split(",")] if match.group("values") is not None else []
        for value in values:
            if not _label_value_ok(value):
                return f"value {value!r} is not a valid label value"
    return None


@rule("GC352", "upgrade pod selectors are label selectors the chart renders intact")
def upgrade_pod_selectors(ctx: Context) -> Iterator[Finding]:
    """Upgrade pod selectors (`drain.podSelector`, `waitForCompletion.podSelector`) are Kubernetes label
    selectors that the chart, which prints them unquoted, renders intact (`!key` reads back as a YAML tag)."""
    from ...render import chart as C

    up = ctx.intent.spec.driver.upgrade
    found: list[tuple[tuple, str]] = []
    if up is not None:
        if up.drain is not None and up.drain.pod_selector:
            found.append((("spec", "driver", "upgrade", "drain", "podSelector"), up.drain.pod_selector))
        if up.wait_for_completion is not None:
            found.append((("spec", "driver", "upgrade", "waitForCompletion", "podSelector"),
                          up.wait_for_completion.pod_selector))
    for i, override in enumerate(ctx.intent.spec.overrides):
        for sub in ("drain", "waitForCompletion"):
            path = f"driver.upgradePolicy.{sub}.podSelector"
            if override.path == path and isinstance(override.value, str) and override.value:
                found.append((("spec", "overrides", i, "value"), override.value))
    for loc, selector in found:
        problem = selector_problem(selector)
        if problem:
            yield ctx.finding("GC352", loc, f"{selector!r} is not a label selector: {problem}",
                              "e.g. app.kubernetes.io/component=training or 'tier in (batch,train)'")
            continue
        try:
            reads = C.unquoted(selector, "podSelector")
        except C.TemplateError:
            reads = None
        if reads != selector:
            back = (f"as {_shown(reads)}" if reads is not None else
                    "as no string at all (a leading ! starts a YAML tag)")
            yield ctx.finding("GC352", loc, f"the chart prints the selector {selector!r} unquoted, and YAML reads it "
                              f"back {back}, so the operator never sees it",
                              "select on a label the pods carry (key=value) instead")



from . import platforms  # noqa: E402,F401  - registers the platform rules (GC345-GC348) into RULES
from . import dra  # noqa: E402,F401  - registers the DRA rules (GC430-GC438) into RULES
from . import transitions  # noqa: E402,F401  - registers the transition rules (GC370-GC379) into RULES
from . import hazards  # noqa: E402,F401  - registers the known-hazard rules (GC460-GC467) into RULES
from . import locks  # noqa: E402,F401  - registers the image lock and admission rules (GC450-GC452) into RULES, last

"""The whole pipeline for one intent file: load, validate, plan, render, verify. No output is written here."""

from __future__ import annotations

from dataclasses import dataclass, field

from .findings import Finding, sort_findings

from .outcome import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Outcome, UsageProblem  # noqa: F401

#: The transition rules' codes (gpuconf/intent/rules/transitions.py): `diff --against` prints their warnings.
TRANSITION_CODES = frozenset(f"GC{n}" for n in range(370, 380))
#: The fewest stale folders whose diffs `render --check` makes, and clusters `diff --against` or `--to-chart` works
#: on, in forked workers with the automatic --jobs (gpuconf/parallel.py; their trees are rendered so from
#: render.tree.PARALLEL_FROM on). Measured on 2 cores, against one process: a stale folder's diff takes 10 to 20
#: ms, and 8 of them take 0.8x the time; a cluster's impact plan about 25 ms, 4 of them 0.8x the time (3: 1.2x),
#: its chart move 60 ms (4: 0.9x). An override report takes under a millisecond: it is never worth a fork.
CHECK_PARALLEL_FROM = 8
DIFF_PARALLEL_FROM = 6


@dataclass
class Rendered:
    """Outcome of rendering one intent: findings when it is invalid, otherwise the verified tree."""

    file: str
    findings: list[Finding] = field(default_factory=list)
    tree: object = None  # gpuconf.render.tree.Tree when the intent is valid

    @property
    def ok(self) -> bool:
        """True when the intent was valid and the tree rendered."""
        return self.tree is not None


def display_path(path: str) -> str:
    """A path as render prints it and records it in the generated files, however it was spelled: relative to the
    working directory (`out/`, `./out` and `$PWD/out` are all `out`), so headers do not change with the spelling."""
    import os

    try:
        return os.path.relpath(os.path.abspath(path))
    except (OSError, ValueError):  # no working directory any more
        return os.path.normpath(path)


def render_command(intent: str, out: str):
    """The command line written into every generated file's header (a gpuconf.render.tree.Command): the input named
    relative to its repository's top (gpuconf/repository.py), the same from every working folder and checkout."""
    from .render.tree import Command
    from .repository import relative_name

    return Command(relative_name(intent), display_path(out))


def render_path(path: str, out: str, deployed_for=None) -> Rendered:
    """Validate an intent file and, when it has no errors, render its tree (raises VerificationError on a gpuconf
    bug). deployed_for (cluster name -> its folder as deployed) adds the transition rules."""
    rendered = render_any(path, out, deployed_for=deployed_for)
    return Rendered(rendered.file, rendered.findings, rendered.trees[0] if rendered.trees else None)


@dataclass
class RenderedSet:
    """Outcome of rendering an intent or a fleet file: findings, and every tree to write (one per cluster, plus the
    fleet's own folder)."""

    file: str
    findings: list[Finding] = field(default_factory=list)
    trees: list = field(default_factory=list)  # gpuconf.render.tree.Tree
    clusters: list = field(default_factory=list)  # (gpuconf.intent.inputs.Cluster, its Tree) of the chosen clusters
    fleet: bool = False  # the input is a Fleet file
    #: tree name -> the files it was rendered from, each (role, name, sha256): what `render --attest` records
    inputs: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    stages: list = field(default_factory=list)  # a fleet's rollout (gpuconf.intent.stages.StagePlan)
    name: str | None = None  # a fleet's metadata.name

    @property
    def ok(self) -> bool:
        """True when the input was valid and its trees rendered."""
        return bool(self.trees)


def render_any(path: str, out: str, deployed_for=None, cluster: str | None = None) -> RenderedSet:
    """Render an intent or a fleet file, read once; findings and headers name it as display_path does (raises
    VerificationError on a gpuconf bug). cluster picks one cluster (SelectionError when the file has none of that
    name); its tree is rendered with the whole fleet's, which must be valid as a whole."""
    from .intent.inputs import read_input

    name = display_path(path)
    command = render_command(path, out)
    read = read_input(path, name, deployed_for)
    chosen = read.select(cluster)
    findings = read.findings_of()
    if not read.valid():
        return RenderedSet(name, findings, fleet=read.is_fleet)
    from . import plan as P
    from .render.tree import render_tree

    if read.is_fleet:
        from .render.fleet import render_fleet

        fleet = render_fleet(read, command)
        trees = fleet.trees
        findings = sort_findings([*findings, *fleet.findings])
    else:
        [only] = read.clusters
        trees = [render_tree(P.build(only.validation.intent, only.source, only.validation.document), command)]
    by_name = {tree.name: tree for tree in trees}
    return RenderedSet(name, findings, trees, [(c, by_name[c.name]) for c in chosen if trees], read.is_fleet,
                       _inputs(read, trees), read.stages, read.fleet.metadata.name if read.is_fleet else None)


def _inputs(read, trees: list) -> dict[str, list[tuple[str, str, str]]]:
    """Each tree's input files as (role, name, sha256), each named relative to its repository's top: an intent; or
    a fleet file with the base, layers and overlay of the cluster (the fleet's own folder: with every one); then
    the image lock the cluster's plan read, if any."""
    from .repository import relative_name

    def named(file: str) -> str:
        return relative_name(file, read.file)

    def lock(tree) -> list[tuple[str, str, str]]:
        found = tree.plan.image_lock if tree.plan is not None else None
        return [("image-lock", named(found.file), found.sha256)] if found is not None else []

    if not read.is_fleet:
        return {tree.name: [("intent", named(read.file), read.digests[read.file]), *lock(tree)] for tree in trees}
    fleet = [("fleet", named(read.file), read.digests[read.file])]
    layers = {c.name: [(read.roles.get(f) or ("base" if i == 0 else "overlay"), named(f), read.digests[f])
                       for i, f in enumerate(c.files)] for c in read.clusters}
    every = sorted({layer for files in layers.values() for layer in files}, key=lambda layer: layer[1])
    return {tree.name: fleet + layers.get(tree.name, every) + lock(tree) for tree in trees}


def render(intents: tuple[str, ...] | list[str], out: str, check: bool, delete_foreign: bool = False,
           attest: bool = False, signer=None) -> Outcome:
    """`gpuconf render`: every input rendered and verified; then, when all are valid and no two write the same
    folder, either compared with OUTPUT (--check) or written into it (refused when a folder holds files gpuconf did
    not write, unless delete_foreign). attest adds each folder's attestation (signed with signer when given)."""
    from pathlib import Path

    from .findings import format_text
    from .render.tree import VerificationError

    try:
        rendered = [render_any(intent, out) for intent in intents]
    except VerificationError as exc:
        return Outcome(stderr=[f"gpuconf: internal error: generated output failed verification "
                               f"({len(exc.problems)} problems):", *(f"  {problem}" for problem in exc.problems),
                               "gpuconf: this is a bug in gpuconf; nothing was written"], code=EXIT_INTERNAL)
    findings = format_text([f for r in rendered for f in r.findings])
    if not all(r.ok for r in rendered):
        return Outcome(findings, [f"{r.file}: invalid; nothing was written" for r in rendered if not r.ok],
                       EXIT_FINDINGS)
    owners: dict[str, str] = {}
    for r in rendered:
        for tree in r.trees:
            if tree.name in owners:
                return Outcome(findings, [f"gpuconf: {owners[tree.name]} and {r.file} both render "
                                          f"{Path(out) / tree.name}/; nothing was written"], EXIT_FINDINGS)
            owners[tree.name] = r.file
    if attest or signer is not None:
        _attest(intents, rendered, out, signer)
    trees = [tree for r in rendered for tree in r.trees]
    from .output.writer import OutputError

    try:
        if check:
            return _check_trees(trees, out, findings, unsigned=(attest or signer is not None) and signer is None)
        return _write_trees(trees, out, findings, delete_foreign)
    except OutputError as exc:
        return Outcome(findings, [*_foreign_lines(exc), f"gpuconf: {exc}; nothing was written"], EXIT_USAGE)


def _attest(intents, rendered: list, out: str, signer) -> None:
    """Add each tree's attestation (gpuconf/output/attest.py) to its files."""
    from .output.attest import ATTESTATION, attestation_text, statement
    from .output.writer import with_record
    from .render.command import regenerate
    from .render.gitops import chart_source

    for intent, r in zip(intents, rendered):
        command = render_command(intent, out)
        for tree in r.trees:
            versions = [tree.plan.chart_version] if tree.plan is not None else []
            # What the files name, nothing of the folder they were written to: the same inputs attest the same.
            text = regenerate(tree.plan, command, "--attest") if tree.plan is not None else \
                f"gpuconf render {command.input} --attest"
            doc = statement(tree.name, with_record(tree.files), text, r.inputs[tree.name], versions,
                            r.name if r.fleet else None, chart_source(tree.plan).url if tree.plan is not None else None,
                            tree.plan.intent.spec.delivery.chart_digest if tree.plan is not None else None)
            tree.files[ATTESTATION] = attestation_text(doc, signer)


def _check_trees(trees: list, out: str, stdout: str, unsigned: bool = False) -> Outcome:
    """render --check: each folder compared byte for byte with a fresh render; exit 1 with the differences when
    any is stale or holds files gpuconf did not write. unsigned (--attest without a key): a folder's signed
    attestation is up to date when its payload is the fresh statement (the signature is `gpuconf verify`'s)."""
    from pathlib import Path

    from .escape import term_text
    from .output.attest import ATTESTATION, envelope_payload
    from .output.summary import tree_diff, unchanged
    from .output.writer import RECORD, inspect, orphans, with_record
    from .parallel import ordered

    def read(tree) -> tuple:
        """The folder as it is, the files of its fresh render, and whether they are the same."""
        folder = inspect(Path(out) / tree.name)
        files = tree.files
        present = folder.files.get(ATTESTATION)
        if unsigned and present and envelope_payload(present) == files[ATTESTATION].encode("utf-8"):
            files = {**files, ATTESTATION: present.decode("utf-8")}
            outcome.stderr.append(f"gpuconf: note: {term_text(Path(out) / tree.name / ATTESTATION)}: its payload is "
                                  "the fresh statement; its signature was not checked (gpuconf verify --key checks it)")
        expected = with_record(files)
        return Path(out) / tree.name, folder, expected, unchanged(folder, expected)

    outcome = Outcome(stdout)
    compared = [read(tree) for tree in trees]
    stale = [c for c in compared if not c[3]]  # their diffs on the cores (--jobs), in order
    differences = iter(ordered(lambda c: tree_diff(c[1], c[2], str(c[0])), stale, CHECK_PARALLEL_FROM))
    for target, folder, expected, same in compared:
        difference = "" if same else next(differences)
        if difference:
            outcome.stdout += difference
            outcome.code = EXIT_FINDINGS
        else:
            outcome.stderr.append(f"{target}: up to date ({len(expected)} files)")
    for folder in orphans(out, [tree.name for tree in trees]):
        outcome.stdout += (f"{folder}/: gpuconf wrote it (its {RECORD} is there), but no given input renders "
                           f"cluster {folder.name} (a renamed or deleted intent?): its next sync prunes what it "
                           "delivered from that cluster; --check deletes nothing, remove the folder in the commit that "
                           "retires the cluster\n")
        outcome.code = EXIT_FINDINGS
    return outcome


def _write_trees(trees: list, out: str, stdout: str, delete_foreign: bool) -> Outcome:
    """render: every folder replaced under the output folder's lock; the summary of what was written."""
    from .escape import show_path
    from .output.summary import render_summary
    from .output.writer import entries, write_trees

    outcome = Outcome(stdout)
    written = write_trees(out, [(tree.name, tree.files) for tree in trees], delete_foreign)
    for tree, done in zip(trees, written):
        if done.deleted:
            outcome.stderr.append(f"gpuconf: deleted from {show_path(done.path)}/ what gpuconf had not written "
                                  f"(--delete-foreign): {entries(done.deleted)}")
        outcome.stdout += render_summary(tree, str(done.path))
    return outcome


#: How many foreign entries a refusal names before it counts the rest.
SHOWN_FOREIGN = 20


def _foreign_lines(exc: Exception) -> list[str]:
    """The folders that hold files gpuconf did not write, each with those files (folders of them collapsed)."""
    from .escape import show_path
    from .output.writer import ForeignFiles, entries

    if not isinstance(exc, ForeignFiles):
        return []
    lines = []
    for folder, foreign in sorted(exc.foreign.items()):
        if foreign == [""]:
            lines.append(f"gpuconf: {show_path(folder)} is not a folder gpuconf wrote")
            continue
        more = f" and {len(foreign) - SHOWN_FOREIGN} more" if len(foreign) > SHOWN_FOREIGN else ""
        lines.append(f"gpuconf: {show_path(folder)}/ holds what gpuconf did not write: "
                     f"{entries(foreign[:SHOWN_FOREIGN])}{more}")
    lines.append("gpuconf: move those files out of the cluster folder (gpuconf replaces it whole), or pass "
                 "--delete-foreign to delete them")
    return lines


@dataclass
class Live:
    """What the running cluster says for `diff --against`: its nodes, and optionally its pods (each a stream of
    objects, as `kubectl get nodes -o json` / `kubectl get pods -A -o json` list them) and where they came from."""

    nodes: object
    nodes_source: str
    pods: object = None
    pods_source: str | None = None
    pods_optional: bool = False  # listed from the cluster unasked: a cluster that will not list them is a warning


def diff(intents: list[str] | tuple[str, ...] | str, fmt: str, against: str | None, to_chart: str | None,
         warnings_as_errors: bool, fail_on: str | None = None, live: Live | None = None,
         cluster: str | None = None, rest: str | None = None) -> Outcome:
    """`gpuconf diff`: the override report, a comparison with a rendered folder (--against) led by the impact plan,
    or a chart move (--to-chart); of each cluster of each input (intents and fleets), or the one cluster named.

    With --against, the inputs are the set of clusters the deployed output holds: a cluster folder there that no
    input renders is `cluster-removed`, an input with no folder `cluster-added` (paired when they look like one
    rename). Raises UsageProblem for arguments that cannot work together, SelectionError for a cluster the file does
    not have."""
    from . import catalog
    from .render.tree import VerificationError

    intents = [intents] if isinstance(intents, str) else list(intents)
    if against is not None and to_chart is not None:
        raise UsageProblem("--against and --to-chart exclude each other")
    if against is None and live is not None:
        raise UsageProblem("--nodes, --kubeconfig and --pods need --against DIR")
    if against is None and to_chart is None and fail_on is not None:
        raise UsageProblem("--fail-on needs --against DIR or --to-chart VERSION")
    if not intents and against is None:
        raise UsageProblem("give an INPUT (only --against DIR takes none: then every cluster folder under DIR is "
                           "one that no input renders)")
    if len(intents) > 1 and (live is not None or cluster is not None):
        raise UsageProblem("--cluster, --nodes, --kubeconfig and --pods are about one cluster: give one INPUT")
    if to_chart is not None and catalog.chart(to_chart) is None:
        raise UsageProblem(f"gpuconf has no facts for GPU Operator chart {to_chart!r} "
                           f"(known: {', '.join(catalog.chart_versions())})")
    try:
        rendered = [(intent, render_any(intent, against if against else "out",
                                        deployed_for=deployed_reader(against) if against else None, cluster=cluster))
                    for intent in intents]
    except VerificationError as exc:
        return Outcome(stderr=[f"gpuconf: internal error: generated output failed verification: {exc}"],
                       code=EXIT_INTERNAL)
    removed, renamed, notes = {}, {}, []
    if against is not None:
        from pathlib import Path

        from .impact.clusterset import removed_folders, renames
        from .output.writer import OutputError

        if all(r.ok for _, r in rendered):
            try:
                removed = removed_folders(against, sorted({t.name for _, r in rendered for t in r.trees}))
            except OutputError as exc:
                return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
            added = {t.name: t.files for _, r in rendered for _, t in r.clusters if not (Path(against) / t.name).is_dir()}
            renamed = renames(removed, added)
        else:
            notes.append(f"gpuconf: an input is invalid, so the cluster folders under {against} that no input renders "
                         "are not looked for")
    renamed_from = {new: old for old, new in renamed.items()}
    outcomes = [(intent, _diff_input(intent, r, fmt, against, to_chart, warnings_as_errors, fail_on, live,
                                     renamed_from)) for intent, r in rendered]
    if against is None and len(outcomes) == 1:
        return outcomes[0][1]
    from .output.review import diff_set

    return diff_set(outcomes, removed, renamed, fmt, against, fail_on, notes, rest)


def _diff_input(intent: str, rendered, fmt: str, against: str | None, to_chart: str | None,
                warnings_as_errors: bool, fail_on: str | None, live: Live | None,
                renamed_from: dict[str, str]) -> Outcome:
    """`gpuconf diff` of one input (an intent, or each cluster of a fleet)."""
    if not rendered.ok:
        from .findings import format_json, format_text

        text = format_json(rendered.findings) if fmt == "json" else format_text(rendered.findings)
        return Outcome(text, [f"{intent}: invalid; no report"], EXIT_FINDINGS)
    if live is not None and len(rendered.clusters) > 1:
        from .intent.inputs import needs_one

        raise needs_one(intent, [c.name for c, _ in rendered.clusters],
                        "--nodes, --kubeconfig and --pods are one cluster's")
    from .parallel import ordered

    def one(pair) -> tuple[str, Outcome]:
        chosen, tree = pair
        name = f"{intent}[{chosen.name}]" if rendered.fleet else intent
        return chosen.name, _diff_cluster(tree, name, fmt, against, to_chart, warnings_as_errors, fail_on, live,
                                          chosen.validation.findings, renamed_from.get(chosen.name))

    least = DIFF_PARALLEL_FROM if against is not None or to_chart is not None else None  # None: --jobs N only
    outcomes = ordered(one, rendered.clusters, least)  # on the cores (--jobs), in the clusters' order
    if not rendered.fleet:
        return outcomes[0][1]
    from .output.rollout import fleet_rollout

    return by_cluster(outcomes, fmt, intent, fleet_rollout(rendered, against, [o for _, o in outcomes]))


def _diff_cluster(tree, intent: str, fmt: str, against: str | None, to_chart: str | None, warnings_as_errors: bool,
                  fail_on: str | None, live: Live | None, findings: list, renamed_from: str | None = None) -> Outcome:
    """`gpuconf diff` of one cluster's fresh render."""
    if against is not None:
        return _diff_against(tree, intent, against, fmt, fail_on, live, findings, renamed_from)
    if to_chart is not None:
        from .output.chartmove import chart_move, failed, move_json, move_text

        move = chart_move(tree.plan, to_chart)
        text = move_json(move) if fmt == "json" else move_text(move, markdown=fmt == "markdown")
        return Outcome(text, code=EXIT_FINDINGS if failed(move, fail_on) else EXIT_OK)
    import json

    from .output.report import override_section, overrides_markdown, report_json, report_text

    report = json.loads(tree.files["report.json"])  # the same facts as the rendered report.json
    if fmt == "json":
        text = report_json(override_section(report))
    elif fmt == "markdown":
        text = overrides_markdown(report)
    else:
        text = report_text(report)
    failing = any(f["severity"] == "error" or warnings_as_errors for f in report["findings"])
    return Outcome(text, code=EXIT_FINDINGS if failing else EXIT_OK)


def by_cluster(outcomes: list[tuple[str, Outcome]], fmt: str, file: str, rollout=None) -> Outcome:
    """The outcomes of one command for each cluster of a fleet, as one: JSON is an object with each cluster's
    document under clusters.<name>; text and Markdown give each cluster's output under a heading that names it. The
    exit code is the highest; stderr lines are said once. rollout (an output.rollout.Rollout, diff --against of a
    fleet) leads: the stages and what merging does."""
    import json

    code = max(o.code for _, o in outcomes)
    stderr = list(dict.fromkeys(line for _, o in outcomes for line in o.stderr))
    reviews = [r for _, o in outcomes for r in o.reviews]
    if fmt == "json":
        clusters = {name: json.loads(o.stdout) if o.stdout else None for name, o in outcomes}
        body = {"file": file, "kind": "Fleet", "clusters": clusters}
        if rollout is not None:
            body["rollout"] = rollout.as_dict(reviews)
        text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        text = "\n".join(f"## Cluster {name} ({file})\n\n{o.stdout}" for name, o in outcomes)
        if rollout is not None:
            text = rollout.markdown(reviews) + "\n" + text
    else:
        stages = {r.cluster: f", stage {r.stage.describe()}" for r in reviews if r.stage is not None}
        text = "\n".join(f"=== cluster {name} ({file}){stages.get(name, '')} ===\n{o.stdout}" for name, o in outcomes)
        if rollout is not None:
            text = rollout.text(reviews) + "\n" + text
    return Outcome(text, stderr, code, [r for r in reviews if fmt == "markdown"],
                   [rollout] if rollout is not None else [])


def deployed_reader(against: str):
    """cluster name -> its folder under AGAINST as deployed (an impact.Deployed), or None when there is none."""

    def read(name: str):
        from pathlib import Path

        from .impact import Deployed
        from .output.writer import OutputError, read_tree

        from .output.foldercheck import report_problem

        folder = Path(against) / name
        try:
            files = read_tree(folder) if folder.is_dir() else None
        except (OutputError, OSError):
            return None  # _diff_against says why the folder cannot be read
        if files is None or report_problem(files) is not None:
            return None  # a report.json gpuconf did not write (`pools: 7`): _diff_against says so, exit 2
        return Deployed(files)

    return read


def _diff_against(tree, intent: str, against: str, fmt: str, fail_on: str | None = None,
                  live: Live | None = None, findings: list | None = None, renamed_from: str | None = None) -> Outcome:
    """A fresh render compared with the rendered folder AGAINST/<name>/: the impact plan, then the documents.

    Exit 1 when documents differ; with fail_on, exit 1 exactly when an impact of that severity or worse is present.
    """
    from pathlib import Path

    from .impact import count_live, impacts_markdown, impacts_text, plan_impacts
    from .output.treediff import compare_trees, diff_markdown, diff_text
    from .output.writer import OutputError, read_tree

    foreign = _diff_foreign(tree, intent, against, fmt)
    if foreign is not None:
        return foreign
    target = Path(against) / tree.name
    if not target.is_dir():
        from .impact.clusterset import cluster_added

        result = compare_trees({}, tree.files, str(target), intent)
        impacts = cluster_added(tree.name, tree.files, str(target), renamed_from)
    else:
        from .output.writer import RECORD

        if not (target / RECORD).is_file():
            return Outcome(stderr=[f"gpuconf: {target} was not written by gpuconf (it has no {RECORD}): DIR must hold "
                                   "the cluster folders `gpuconf render -o DIR` wrote, or a Helm release's "
                                   "values.yaml to compare as values"], code=EXIT_USAGE)
        try:
            existing = read_tree(target)
        except OutputError as exc:
            return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
        from .escape import term_text
        from .output.foldercheck import folder_problem, report_problem

        # An edited folder may hold anything; where it is not what gpuconf wrote, say where (exit 2): report.json's
        # pools, which the impact plan reads as they are, first; the documents when reading them fails. A folder
        # in gpuconf's shape that still fails is a bug in gpuconf (exit 3).
        problem = report_problem(existing)
        if problem is None:
            try:
                result = compare_trees(existing, tree.files, str(target), intent)
                impacts = plan_impacts(existing, tree.files, result)
            except (TypeError, AttributeError, KeyError, ValueError, IndexError, RecursionError):
                spec = tree.plan.intent.spec
                problem = folder_problem(existing, spec.cluster.kubernetes_version, spec.operator.chart_version)
                if problem is None:
                    raise
        if problem is not None:
            return Outcome(stderr=[f"gpuconf: {target}: {term_text(problem)}: not what gpuconf wrote there (edited by "
                                   "hand?); restore the folder or render it again"], code=EXIT_USAGE)
    transitions = [f for f in findings or [] if f.code in TRANSITION_CODES]
    notes: list[str] = []
    if live is not None:
        from .cluster.nodesource import NodeSourceError

        pods, pods_source = live.pods, live.pods_source
        if pods is not None and live.pods_optional:
            try:
                pods = list(pods)
            except NodeSourceError as exc:  # e.g. a role that may list nodes but not pods: nodes still count
                pods, pods_source = None, None
                notes.append(f"gpuconf: warning: {exc}; running pods are not counted")
        try:
            count_live(impacts, live.nodes, pods, live.nodes_source, pods_source)
        except NodeSourceError as exc:
            return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
    if fmt == "json":
        import json

        body = {**result.as_dict(), "impacts": impacts.as_list(), "worst": impacts.worst, "chartMove": impacts.chart,
                "notes": impacts.notes,
                "nodesSource": impacts.nodes_source, "podsSource": impacts.pods_source,
                "findings": [f.as_dict() for f in transitions]}
        text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        warned = "".join(f"- **{f.code}** {f.message} (hint: {f.hint})\n" for f in transitions)
        text = impacts_markdown(impacts, str(target)) + (warned + "\n" if warned else "") + diff_markdown(
            result, folded=True)
    else:
        from .findings import format_text

        text = format_text(transitions) + impacts_text(impacts, str(target)) + diff_text(result)
    from .output.review import ClusterReview

    reviews = [ClusterReview(intent.split("[")[0], tree.name, impacts.worst, len(impacts.impacts),
                             len(result.documents), text,
                             minutes=max((i.minutes for i in impacts.impacts if i.minutes), default=None))]
    if fail_on is not None:
        return Outcome(text, notes, EXIT_FINDINGS if impacts.fails(fail_on) else EXIT_OK, reviews)
    return Outcome(text, notes, EXIT_OK if result.equal else EXIT_FINDINGS, reviews)


def _valid_trees(intent: str, instead: str, cluster: str | None = None,
                 one: str | None = None) -> tuple[list, Outcome | None]:
    """([(cluster, its rendered tree)...], None) of a valid intent or fleet (its cluster named cluster, else all), or
    ([], the Outcome that says why there is none). one (what needs it) asks for a single cluster: a fleet of several
    without cluster raises SelectionError."""
    from .render.tree import VerificationError

    try:
        rendered = render_any(intent, "out", cluster=cluster)
    except VerificationError as exc:
        return [], Outcome(stderr=[f"gpuconf: internal error: generated output failed verification: {exc}"],
                           code=EXIT_INTERNAL)
    if not rendered.ok:
        from .findings import format_text

        return [], Outcome(format_text(rendered.findings), [f"{intent}: invalid; {instead}"], EXIT_FINDINGS)
    if one is not None and len(rendered.clusters) > 1:
        from .intent.inputs import needs_one

        raise needs_one(intent, [c.name for c, _ in rendered.clusters], f"{one} is about one of them")
    return rendered.clusters, None


def _valid_tree(intent: str, instead: str, cluster: str | None = None,
                one: str = "this") -> tuple[object, Outcome | None]:
    """(the rendered tree, None) of a valid intent or one cluster of a fleet, or (None, the Outcome that says why
    there is none)."""
    chosen, failed = _valid_trees(intent, instead, cluster, one)
    return (chosen[0][1] if chosen else None), failed


# --- adoption: import from values, and the effective-values comparison (issue 19) ---------------------------------


def import_values(values: tuple[str, ...], sets: tuple[str, ...], configmaps: tuple[str, ...],
                  chart_version: str | None, name: str, nodes_text: str | None = None, gpu: str | None = None,
                  release=None, cluster=None, set_strings: tuple[str, ...] = (), inputs: list | None = None):
    """`gpuconf import --values/--set/--configmap`: the Adopted draft, onto the installed release (`release`, an
    adopt.release.Release the nodes' draft settled, else decided here from the cluster and the values; raises
    adopt.sources.InputError for an input that is not what its option says, UsageProblem for a release that cannot
    be told or an unknown GPU)."""
    from . import catalog
    from .adopt import release as R
    from .adopt import sources as S
    from .adopt.draft import Adopter
    from .adopt.installed import import_inputs, release_evidence

    if gpu is not None and catalog.gpu_model(gpu) is None:
        raise UsageProblem(f"--gpu {gpu!r} is not in gpuconf's catalogue (`gpuconf catalog` lists the models)")
    if inputs is None:
        inputs = import_inputs(values, sets, set_strings, cluster)
    if release is None:
        try:
            release = R.decide(chart_version, release_evidence(cluster, inputs))
        except R.ReleaseProblem as exc:
            raise UsageProblem(str(exc)) from None
    maps = (list(cluster.configmaps) if cluster is not None else []) + \
        [cm for path in configmaps for cm in S.read_configmaps(path)]
    adopted = Adopter(inputs, maps, release.version, name, nodes_text, gpu, release.why).run()
    if not release.inferred:
        adopted.notes.insert(0, f"chart {release.version}: {release.why}")
    if cluster is not None:
        adopted.notes[:0] = cluster.notes
    return adopted


def diff_against_installation(intent: str, values: tuple[str, ...], sets: tuple[str, ...],
                              configmaps: tuple[str, ...], nodes, nodes_source: str, fmt: str,
                              fail_on: str | None = None, cluster: str | None = None, installation=None,
                              installed_chart: str | None = None) -> Outcome:
    """`gpuconf diff DRAFT --against-installation`: the first sync's impact plan with the live installation (its
    values, --set flags and ConfigMaps, or what --kubeconfig read, and its nodes) as "before"
    (gpuconf/impact/installation.py). The chart the installation runs comes from --installed-chart, else the live
    Helm release, the values' operator.version, or the gpu-operator image the GPU nodes run: a draft on another
    chart makes the first sync a chart move, planned as one."""
    from .adopt import sources as S
    from .cluster.nodesource import NodeSourceError
    from .impact import installation as I

    if (bad := _not_a_release(installed_chart)) is not None:
        return bad
    tree, failed = _valid_tree(intent, "no first-sync plan", cluster, "--against-installation")
    if failed is not None:
        return failed
    try:
        inputs = list(installation.values) if installation is not None else []
        inputs += [S.read_values_file(p) for p in values] + [S.read_set(a) for a in sets]
        maps = (list(installation.configmaps) if installation is not None else []) + \
            [cm for path in configmaps for cm in S.read_configmaps(path)]
        installed, nodes = _installed_chart(installed_chart, installation, inputs, nodes)
        pieces = I.read_installation(tree, inputs, maps, installed)
        plan = I.first_sync(tree.plan, nodes, **pieces)
    except (S.InputError, NodeSourceError) as exc:
        return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
    text, failed = I.report(plan, nodes_source, fmt, fail_on, intent)
    notes = []
    if installed is None:
        notes.append("gpuconf: note: nothing read names the chart the installation runs (no Helm release, no "
                     "operator.version in its values, no single gpu-operator image on its GPU nodes): its values are "
                     f"read on the draft's chart {tree.plan.chart_version}; --installed-chart names the one it runs")
    elif _chart(installed) is None:
        notes.append(f"gpuconf: note: the installation runs chart {installed}, which gpuconf has no facts for "
                     "(`gpuconf chart add` it): its values are read on the draft's chart and the move is not planned")
    return Outcome(text, notes, code=EXIT_FINDINGS if failed else EXIT_OK)


def _chart(version: str):
    from .catalog import chart

    return chart(version)


def _not_a_release(version: str | None) -> Outcome | None:
    """The usage error of an --installed-chart that spells no release, else None."""
    from .chartfacts.releases import is_version

    if version is None or is_version(version):
        return None
    return Outcome(stderr=[f"gpuconf: --installed-chart {version!r} is not a GPU Operator release (vYY.MM.PP)"],
                   code=EXIT_USAGE)


def _installed_chart(given: str | None, installation, inputs: list, nodes) -> tuple[str | None, object]:
    """The chart an installation runs (--installed-chart, the live Helm release, the values' operator.version, else
    the one gpu-operator image tag of its GPU nodes) and the nodes (read into a list when their images had to be
    looked at)."""
    from .adopt import release as R
    from .adopt.installed import release_evidence
    from .chartfacts.releases import is_version

    if given is not None:
        return given, nodes
    # What a cluster says is only taken when it spells a release (a hostile value never reaches a message).
    evidence = release_evidence(installation, inputs)
    versions = {e.version for e in evidence if is_version(e.version)}
    if len(versions) == 1:
        return versions.pop(), nodes
    if versions:
        return None, nodes  # the evidence disagrees (an upgrade under way): the note says nothing is known
    from .cluster.importer import operator_image_tags

    nodes = list(nodes)
    tags = {R.normalized(tag) for raw in nodes for tag in operator_image_tags(raw) if is_version(tag)}
    return (tags.pop() if len(tags) == 1 else None), nodes


def diff_against_values(intent: str, against: tuple[str, ...], values: tuple[str, ...], fmt: str,
                        cluster: str | None = None, installed_chart: str | None = None) -> Outcome:
    """`gpuconf diff INTENT --against-values FILE`: the effective values compared leaf by leaf, each side on its own
    chart's defaults; side one is the values files, on the chart they were written for (--installed-chart, else
    their operator.version, else INTENT's chart), side two INTENT's render plus any --values files layered on it, on
    INTENT's chart. Every default that changed between the two charts shows as a difference."""
    from . import catalog
    from .adopt import mapping as M
    from .adopt import release as R
    from .adopt import sources as S
    from .chartfacts.releases import is_version
    from .render import values as V

    if (bad := _not_a_release(installed_chart)) is not None:
        return bad
    tree, failed = _valid_tree(intent, "nothing to compare", cluster, "--against-values")
    if failed is not None:
        return failed
    defaults = tree.plan.chart.shared_defaults
    try:
        inputs = [S.read_values_file(p) for p in against]
        old, _ = S.merge_inputs(inputs)
        extra, _ = S.merge_inputs([S.read_values_file(p) for p in values])
    except S.InputError as exc:
        return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
    said = {e.version for e in R.of_inputs(inputs) if is_version(e.version)}
    version = installed_chart or (said.pop() if len(said) == 1 else tree.plan.chart_version)
    facts = catalog.chart(version)
    if facts is None:
        return Outcome(stderr=[f"gpuconf: the values files are for GPU Operator chart {version}, which gpuconf has no "
                               f"facts for: `gpuconf chart add` it, or name another with --installed-chart"],
                       code=EXIT_USAGE)
    old = S.unwrapped(old, facts.shared_defaults)
    new_user = tree.values.overrides()
    V.merge(new_user, extra)
    rows = M.differing(S.coalesce(facts.shared_defaults, old), S.coalesce(defaults, new_user))
    return _values_diff_outcome(rows, f"{' '.join(against)} (chart {version})",
                                f"{intent} (chart {tree.plan.chart_version})", fmt)


def _diff_foreign(tree, intent: str, against: str, fmt: str) -> Outcome | None:
    """`diff --against` a folder gpuconf did not render (no record of its files, a values.yaml): its values and the
    render's compared as effective values, so that keys equal to the chart's defaults are no losses; None for a
    folder gpuconf rendered."""
    from pathlib import Path

    from .adopt import mapping as M
    from .adopt import sources as S
    from .output.writer import RECORD

    for folder in (Path(against) / tree.name, Path(against)):
        values = folder / "values.yaml"
        if folder.is_dir() and not (folder / RECORD).exists() and values.is_file():
            try:
                old, _ = S.merge_inputs([S.read_values_file(str(values))])
            except S.InputError as exc:
                return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
            defaults = tree.plan.chart.shared_defaults
            rows = M.differing(S.coalesce(defaults, S.unwrapped(old, defaults)),
                               S.coalesce(defaults, tree.values.overrides()))
            outcome = _values_diff_outcome(rows, str(values), f"{intent} (chart {tree.plan.chart_version})", fmt
                                           if fmt == "json" else "text")
            outcome.stderr.append(f"gpuconf: {folder} was not rendered by gpuconf (no {RECORD}): its values.yaml is "
                                  "compared as effective values (the chart's defaults merged in); its other files "
                                  "are not compared")
            return outcome
    return None


def _values_diff_outcome(rows: list, old_name: str, new_name: str, fmt: str) -> Outcome:
    """The leaf-by-leaf comparison of two effective values trees as text or JSON; exit 1 when any leaf differs."""
    from .adopt import mapping as M
    from .findings import dotted

    if fmt == "json":
        import json

        doc = {"against": old_name, "rendered": new_name, "equal": not rows,
               "leaves": [{"path": dotted(p), "old": None if a is M.ABSENT else a, "new": None if b is M.ABSENT else b,
                           "op": "added" if a is M.ABSENT else "removed" if b is M.ABSENT else "changed"}
                          for p, a, b in rows]}
        text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    else:
        lines = [f"{dotted(p)}: {M.shown(a)} -> {M.shown(b)}" for p, a, b in rows]
        lines.append(f"effective values: {len(rows)} leaves differ between {old_name} and {new_name}" if rows else
                     f"effective values: no leaf differs between {old_name} and {new_name}")
        text = "\n".join(lines) + "\n"
    return Outcome(text, code=EXIT_FINDINGS if rows else EXIT_OK)


def hazards(intent: str | None, fmt: str) -> Outcome:
    """`gpuconf hazards`: the known-hazards table, or (with an intent or fleet) the entries that concern each cluster:
    those it runs into, those it avoids by a choice, and those that depend on what it does not say. Exit 0; 1 when an
    error-level hazard applies; an intent whose types do not check is exit 1 with its findings."""
    from .output import hazards as V

    if intent is None:
        text = V.table_json() if fmt == "json" else V.table_markdown() if fmt == "markdown" else V.table_text()
        return Outcome(text)
    from .findings import format_json, format_text
    from .intent.inputs import read_input

    read = read_input(intent)
    broken = [f for c in read.clusters if c.validation.intent is None for f in c.validation.findings] + read.findings
    if broken or not read.clusters:
        text = format_json(broken) if fmt == "json" else format_text(broken)
        return Outcome(text, [f"{intent}: invalid; no hazards"], EXIT_FINDINGS)
    outcomes = []
    for cluster in read.clusters:
        found = V.standings(cluster.validation.intent)
        name = cluster.name or intent
        text = (V.intent_json(name, found) if fmt == "json" else V.intent_markdown(name, found) if fmt == "markdown"
                else V.intent_text(name, found))
        failing = any(s.status == "applies" and s.hazard.severity == "error" for s in found)
        outcomes.append((name, Outcome(text, code=EXIT_FINDINGS if failing else EXIT_OK)))
    return by_cluster(outcomes, fmt, intent) if read.kind != "ClusterIntent" else outcomes[0][1]


def chart_add(source: str, into: str | None) -> Outcome:
    """`gpuconf chart add`: derive the facts of a chart gpuconf does not ship from what `helm pull` gives (a .tgz or
    its folder) into the user's gpuconf-charts folder, and say which known release's semantics gpuconf applies and
    which of its templates and CRDs differ. Exit 0 when written (differences are warnings); 2 when the chart cannot
    be read or is one gpuconf ships."""
    from pathlib import Path

    from . import catalog
    from .chartfacts.add import add
    from .chartfacts.source import ChartSourceError
    from .output.writer import OutputError

    folder = Path(into) if into is not None else Path(catalog.USER_CHART_FOLDER)
    known = {version: catalog.release_data(version) for version in catalog.shipped_versions()}
    try:
        written, comparison = add(Path(source), folder, known)
    except ChartSourceError as exc:
        return Outcome("", [f"gpuconf: {exc}"], EXIT_USAGE)
    except (OSError, OutputError) as exc:
        return Outcome("", [f"gpuconf: {folder}: cannot write the facts ({exc})"], EXIT_USAGE)
    lines = comparison.lines()
    lines.append(f"wrote {written}: commit it beside the intents; validate, render, diff, audit and import read it "
                 f"from there (the folder of the intent or the nearest one above it in the repository)")
    return Outcome("\n".join(lines) + "\n")

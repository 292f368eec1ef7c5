"""The Markdown review of `gpuconf diff --against` over several clusters (a fleet, or several inputs): one summary
table first, details only for the clusters that change, the untouched ones in one line, and the whole under the
65,536 characters a GitHub pull-request comment holds. What does not fit goes to a file the CI uploads
(`--markdown-rest FILE`); the comment says where. `--format json` keeps everything.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The most characters of a GitHub issue or pull-request comment (its API refuses a longer body).
COMMENT_LIMIT = 65_536
SEVERITIES = ("none", "restart", "pending", "disruptive")


@dataclass
class ClusterReview:
    """One cluster's part of the review: where it comes from, what its comparison found, and its Markdown."""

    input: str
    cluster: str
    worst: str  # the worst impact: none, restart, pending, disruptive
    impacts: int
    documents: int  # documents that differ
    markdown: str  # its part of the review (the text of the chosen format)
    removed: bool = False
    minutes: int | None = None  # the longest maintenance window its impacts need, by the roll-out formula
    stage: object = None  # its fleet's rollout stage (gpuconf.intent.stages.StagePlan), or None

    @property
    def changed(self) -> bool:
        """Removed, a document differs, or syncing does something (impacts of severity none alone, such as the
        probe Jobs an Argo CD hook runs on every sync, are no change)."""
        return self.removed or bool(self.documents) or self.worst != "none"


def _demote(text: str) -> str:
    """A cluster's own Markdown one heading level down (its sections sit under the cluster's), code blocks aside."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        out.append("#" + line if line.startswith("#") and not fenced else line)
    return "\n".join(out)


def markdown(reviews: list[ClusterReview], rest: str | None, limit: int = COMMENT_LIMIT,
             rollouts: list | None = None) -> tuple[str, str | None]:
    """(the review, the full text for the rest file or None). The review leads with the summary and stays under
    `limit` characters; when details had to be left out, the rest file holds the complete review."""
    from ..escape import md_code, md_text

    changed = [r for r in reviews if r.changed]
    untouched = [r for r in reviews if not r.changed]
    worst = max((r.worst for r in changed), key=SEVERITIES.index, default="none")
    head = [f"# gpuconf review: {len(changed)} of {len(reviews)} cluster{'s' if len(reviews) != 1 else ''} "
            f"affected, worst impact: {worst}", ""]
    staged = any(r.stage is not None for r in reviews)
    if changed:
        head += [f"| cluster | input{' | stage' if staged else ''} | worst impact | impacts | documents changed |",
                 f"|---|---|---|---|---|{'---|' if staged else ''}"]
        head += [f"| {md_text(r.cluster)}{' (removed)' if r.removed else ''} | {md_code(r.input)} | "
                 + (f"{md_text(r.stage.name) if r.stage is not None else '-'} | " if staged else "")
                 + f"**{r.worst}** | {r.impacts} | {r.documents} |" for r in changed]
        head.append("")
    if untouched:
        names = ", ".join(md_text(r.cluster) for r in untouched)
        head += [f"Unchanged: {len(untouched)} cluster{'s' if len(untouched) != 1 else ''} ({names}).", ""]
    for rollout in rollouts or []:
        head += [rollout.markdown(reviews)]
    sections = [f"## {md_text(r.cluster)}{': removed' if r.removed else ''} ({md_code(r.input)})"
                f"{f', stage {md_text(r.stage.describe())}' if r.stage is not None else ''}\n\n"
                f"{_demote(r.markdown).rstrip()}\n" for r in changed]
    full = "\n".join(head) + "\n" + "\n".join(sections)
    if len(full) <= limit:
        return full, None
    # Details in table order while they fit, with room kept for the line that says where the rest is.
    text = "\n".join(head) + "\n"
    kept = 0
    for section in sections:
        if len(text) + len(section) + 1 + 600 > limit:
            break
        text += section + "\n"
        kept += 1
    left = [r.cluster for r in changed[kept:]]
    shown = ", ".join(md_text(n) for n in left[:20]) + (f" and {len(left) - 20} more" if len(left) > 20 else "")
    where = (f"the complete review is in {md_code(rest)} (the CI uploads it)" if rest else
             "give `--markdown-rest FILE` to write the complete review there, or use `--format json`")
    text += (f"_The details of {len(left)} more cluster{'s' if len(left) != 1 else ''} ({shown}) do not fit in a "
             f"comment of {limit:,} characters: {where}._\n")
    if len(text) > limit:  # a summary table of thousands of clusters: cut at a line
        text = text[:limit - 200].rsplit("\n", 1)[0] + f"\n\n_The review is cut at {limit:,} characters: {where}._\n"
    return text, full if rest else None


def diff_set(outcomes: list[tuple[str, Outcome]], removed: dict[str, dict[str, str]], renamed: dict[str, str],
              fmt: str, against: str | None, fail_on: str | None, notes: list[str], rest: str | None = None) -> Outcome:
    """The outcomes of several inputs, and the plan of each removed cluster folder, as one: JSON is the one input's
    document (or {"inputs": {file: document}} of several) with `removedClusters` beside it; text and Markdown give
    each input under a heading when there are several, then each removed cluster. The exit code is the highest."""
    import json
    from pathlib import Path

    from ..impact import impacts_markdown, impacts_text
    from ..impact.clusterset import cluster_removed
    from ..outcome import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, Outcome

    plans = {name: (str(Path(against) / name), cluster_removed(name, files, str(Path(against) / name),
                                                               renamed.get(name)))
             for name, files in sorted(removed.items())} if against is not None else {}
    code = max([o.code for _, o in outcomes] + [
        (EXIT_FINDINGS if plan.fails(fail_on) else EXIT_OK) if fail_on else EXIT_FINDINGS for _, plan in plans.values()])
    stderr = list(dict.fromkeys([*notes, *(line for _, o in outcomes for line in o.stderr)]))
    several = len(outcomes) != 1
    if fmt == "json":
        docs = {intent: json.loads(o.stdout) if o.stdout else None for intent, o in outcomes}
        gone = {name: {"folder": where, "impacts": plan.as_list(), "worst": plan.worst}
                for name, (where, plan) in plans.items()}
        if several:
            body = {"inputs": docs, "removedClusters": gone}
        else:
            body = next(iter(docs.values()))
            if not isinstance(body, dict):  # an invalid input's findings: nothing was compared
                return Outcome(outcomes[0][1].stdout, stderr, code)
            body = {**body, "removedClusters": gone}
        return Outcome(json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n", stderr, code)
    if fmt == "markdown" and against is not None and all(o.reviews for _, o in outcomes):
        reviews = [r for _, o in outcomes for r in o.reviews] + [
            ClusterReview(where, name, plan.worst, len(plan.impacts), 0, impacts_markdown(plan, where), removed=True)
            for name, (where, plan) in plans.items()]
        if len(reviews) > 1:
            text, complete = markdown(reviews, rest, rollouts=[r for _, o in outcomes for r in o.rollouts])
            if complete is not None:
                from .writer import OutputError, write_text_atomic

                try:
                    write_text_atomic(rest, complete)
                except OutputError as exc:
                    return Outcome(stderr=[f"gpuconf: {exc}"], code=EXIT_USAGE)
            return Outcome(text, stderr, code)
    if fmt == "markdown":
        parts = [f"## {intent}\n\n{o.stdout}" if several else o.stdout for intent, o in outcomes]
        parts += [f"## Cluster {name}: removed (`{where}`)\n\n{impacts_markdown(plan, where)}"
                  for name, (where, plan) in plans.items()]
    else:
        parts = [f"=== {intent} ===\n{o.stdout}" if several else o.stdout for intent, o in outcomes]
        parts += [f"=== cluster {name}: removed ({where}) ===\n{impacts_text(plan, where)}"
                  for name, (where, plan) in plans.items()]
    return Outcome("\n".join(p for p in parts if p), stderr, code)

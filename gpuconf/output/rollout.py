"""The rollout part of a fleet's review (`gpuconf diff FLEET --against`): which stage each changing cluster is in, what
each stage does when the change merges, and how long the whole takes by the roll-out formula, as the delivery tool
will really run it (gpuconf.render.rollout says how the objects bring that about).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Rollout:
    """One fleet's rollout as a change meets it."""

    fleet: str
    clusters: frozenset  # the names of its clusters
    tools: tuple[str, ...]  # the delivery tools of its clusters: argocd, flux
    stages: list = field(default_factory=list)  # gpuconf.intent.stages.StagePlan, in order
    notes: list[str] = field(default_factory=list)  # what changing the fleet's own folder does

    def rows(self, reviews: list) -> list[dict]:
        """Each stage with its changing clusters, how many sync at once and its time (reviews: the fleet's
        ClusterReviews). A stage's time: its batches (changing clusters over maxUpdate) times its slowest cluster's
        window; stages run one after another."""
        changed = {r.cluster: r for r in self.own(reviews) if r.changed}
        out = []
        for stage in self.stages:
            members = [changed[c] for c in stage.clusters if c in changed]
            at = stage.at_once()
            slowest = max((r.minutes or 0 for r in members), default=0)
            batches = math.ceil(len(members) / at) if at else 0
            out.append({"stage": stage.name, "index": stage.index + 1, "clusters": len(stage.clusters),
                        "changing": [r.cluster for r in members], "atOnce": at,
                        "minutes": batches * slowest if members and at else None,
                        "held": bool(members) and at == 0})
        return out

    def own(self, reviews: list) -> list:
        """The reviews of this fleet's clusters among those of several inputs."""
        return [r for r in reviews if r.cluster in self.clusters and not r.removed]

    def as_dict(self, reviews: list) -> dict:
        """The JSON form."""
        return {"fleet": self.fleet, "tools": list(self.tools), "stages": self.rows(reviews), "notes": self.notes,
                "advice": self.advice(reviews)}

    def advice(self, reviews: list) -> str:
        """What merging does, in the order it happens."""
        changed = [r for r in self.own(reviews) if r.changed]
        if not changed:
            return "no cluster of the fleet changes"
        slowest = max((r.minutes or 0 for r in changed), default=0)
        if not self.stages:
            text = (f"no stages: merging syncs all {len(changed)} changing cluster(s) at once" if len(changed) > 1
                    else "no stages: merging syncs the one changing cluster")
            if len(changed) > 1 and slowest:
                text += (f", each needing about {slowest} minutes; declare spec.stages in the fleet to reach a "
                         "canary first")
            return text
        rows = self.rows(reviews)
        first = next(row for row in rows if row["changing"])
        parts = []
        if "argocd" in self.tools:
            parts.append(f"merging starts stage {first['stage']} only (Argo CD progressive sync: each stage's chart "
                         "Applications, then its manifests Applications; the next stage starts once every "
                         "Application of this one is Healthy, the ClusterPolicy reporting ready on every GPU node; "
                         "an Application that does not become Healthy stops the rollout there)")
        if "flux" in self.tools:
            parts.append(f"Flux clusters take the change when their stage's source moves: promote stage "
                         f"{first['stage']}'s source first, then each next stage's once the one before is Ready")
        held = [row["stage"] for row in rows if row["held"]]
        if held:
            parts.append(f"stage(s) {', '.join(held)} wait for someone to sync them (maxUpdate 0)")
        total = sum(row["minutes"] or 0 for row in rows)
        if total and len(changed) > 1:
            parts.append(f"about {total} minutes in all if no stage stops, against about {slowest} for one cluster")
        elif total:
            parts.append(f"about {total} minutes")
        return "; ".join(parts)

    def markdown(self, reviews: list) -> str:
        """The section that follows the summary table."""
        from ..escape import md_text

        rows = self.rows(reviews)
        lines = [f"## Rollout of fleet {md_text(self.fleet)}", ""]
        if rows:
            lines += ["| stage | clusters | changing | at once | about |", "|---|---|---|---|---|"]
            for row in rows:
                shown = ", ".join(md_text(c) for c in row["changing"][:10]) + \
                    (f" and {len(row['changing']) - 10} more" if len(row["changing"]) > 10 else "")
                changing = f"{len(row['changing'])} ({shown})" if row["changing"] else "0"
                at = "by hand" if row["atOnce"] == 0 else str(min(row["atOnce"], row["clusters"]))
                about = f"{row['minutes']} min" if row["minutes"] else "-"
                lines.append(f"| {row['index']}/{len(rows)} {md_text(row['stage'])} | {row['clusters']} | "
                             f"{changing} | {at} | {about} |")
            lines.append("")
        lines += [md_text(self.advice(reviews)[:1].upper() + self.advice(reviews)[1:]) + ".", ""]
        lines += [f"- {md_text(note)}" for note in self.notes]
        return "\n".join(lines).rstrip("\n") + "\n"

    def text(self, reviews: list) -> str:
        """The same for a terminal."""
        lines = [f"=== rollout of fleet {self.fleet} ==="]
        for row in self.rows(reviews):
            at = "by hand" if row["atOnce"] == 0 else f"{min(row['atOnce'], row['clusters'])} at once"
            about = f", about {row['minutes']} min" if row["minutes"] else ""
            changing = f": {', '.join(row['changing'][:10])}" if row["changing"] else ""
            lines.append(f"  {row['index']}/{len(self.stages)} {row['stage']}: {len(row['changing'])} of "
                         f"{row['clusters']} cluster(s) change{changing} ({at}{about})")
        lines.append(f"  {self.advice(reviews)}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines) + "\n"


def fleet_rollout(rendered, against: str | None, outcomes: list) -> Rollout | None:
    """The rollout of a fleet's diff --against (rendered: a pipeline.RenderedSet of a Fleet; outcomes: its clusters'),
    each ClusterReview given its stage; None without --against, or when there is nothing to say: no stages, no
    change to the fleet's own objects and at most one cluster changing."""
    from ..intent.stages import stage_of

    if against is None or not rendered.ok:
        return None
    reviews = [r for o in outcomes for r in o.reviews]
    for review in reviews:
        review.stage = stage_of(rendered.stages, review.cluster)
    tools = tuple(sorted({t.plan.intent.spec.delivery.tool for _, t in rendered.clusters} - {"none"}))
    own = next((t for t in rendered.trees if t.name == rendered.name), None)
    notes = folder_notes(against, rendered.name, own.files) if own is not None else []
    if not (rendered.stages or notes or sum(r.changed for r in reviews) > 1):
        return None
    return Rollout(rendered.name, frozenset(c.name for c, _ in rendered.clusters), tools, list(rendered.stages), notes)


def folder_notes(against: str, fleet: str, files: dict[str, str]) -> list[str]:
    """What syncing the fleet's own folder changes (files: its fresh render), read against the deployed one: the
    ApplicationSet taking over each cluster's Applications from the parents of an earlier gpuconf, and stages that
    come or go (automated sync goes off or comes back on every generated Application)."""
    from pathlib import Path

    from ruamel.yaml import YAML

    def appset(text: str | None) -> dict | None:
        if not text:
            return None
        try:
            docs = [d for d in YAML(typ="safe", pure=True).load_all(text) if isinstance(d, dict)]
        except Exception:  # noqa: BLE001 - a deployed file gpuconf cannot read says nothing about the rollout
            return None
        return next((d for d in docs if d.get("kind") == "ApplicationSet"), None)

    path = Path(against) / fleet / "applicationset.yaml"
    try:
        old = appset(path.read_text(encoding="utf-8")) if path.is_file() and path.stat().st_size < (64 << 20) else None
    except (OSError, UnicodeDecodeError):
        old = None
    new = appset(files.get("applicationset.yaml"))
    if old is None or new is None:
        return []
    notes = []

    def spec(doc: dict) -> dict:
        return doc.get("spec") if isinstance(doc.get("spec"), dict) else {}

    def elements(doc: dict) -> list:
        generators = spec(doc).get("generators")
        first = generators[0] if isinstance(generators, list) and generators and isinstance(generators[0], dict) \
            else {}
        found = (first.get("list") or {}).get("elements") if isinstance(first.get("list"), dict) else None
        return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []

    from ..intent.rules.syntax import DNS1123_SUBDOMAIN

    # The parents by the names an earlier gpuconf gave them (Application names): anything else in a file gpuconf did
    # not write (aliased structures, other types, newlines) is neither printed nor taken for a parent.
    parents = sorted(e["name"] for e in elements(old) if "app" not in e and isinstance(e.get("name"), str)
                     and len(e["name"]) <= 253 and DNS1123_SUBDOMAIN.fullmatch(e["name"]))
    if parents and not any("app" in e for e in elements(old)):
        notes.append(f"the ApplicationSet now generates each cluster's chart and manifests Applications itself: it "
                     f"takes over the existing ones of the same names and deletes the parent Applications "
                     f"({', '.join(parents[:5])}{' ...' if len(parents) > 5 else ''}) without deleting anything they "
                     "deployed (preserveResourcesOnDeletion); commit it with no other change")
    had, has = "strategy" in spec(old), "strategy" in spec(new)
    if has and not had:
        notes.append("stages start with this change: the ApplicationSet controller turns automated sync off on "
                     "every generated Application and syncs them stage by stage, once progressive syncs are enabled "
                     "(argocd-config.yaml); until then every Application syncs at once")
    elif had and not has:
        notes.append("stages end with this change: the generated Applications sync on their own again, every "
                     "cluster at once")
    return notes

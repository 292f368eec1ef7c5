"""Input, read once: a file of either kind (a ClusterIntent, or a Fleet with its base and overlays) as its clusters.

Every command that takes an intent file reads it here and iterates over the clusters it gets: each one a validated
intent whose document remembers, node by node, the file, line and column it came from (for a fleet, the base, an
overlay or the fleet file itself), so a finding about any cluster points into the file to fix. Nothing downstream
asks which kind of file it was, except where a fleet has files of its own (the ApplicationSet of `render`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from ..findings import ERROR, Finding, sort_findings
from .loader import FLEET_KIND, Document, LoadError, is_fleet, load_bytes, load_file, read_limited
from .validate import Validation


class SelectionError(Exception):
    """--cluster names no cluster of the file, or a command needs one cluster of a fleet and got none (exit 2)."""


@dataclass
class Cluster:
    """One cluster of an input file: its name, its validated intent (and findings), where it came from."""

    name: str | None  # metadata.name; None when an intent is too broken to have one
    validation: Validation
    source: str  # how plans, headers and reports name its origin
    files: tuple[str, ...] = ()  # the files it was built from (a fleet's: base first, then the overlay)

    @property
    def ok(self) -> bool:
        """True when the cluster's intent is valid."""
        return self.validation.ok and self.validation.intent is not None


@dataclass
class Input:
    """An input file read: its own findings (a fleet file's, its base's and overlays'; a file that cannot be read) and
    its clusters (one for an intent file, one per entry for a fleet)."""

    file: str
    kind: str = "ClusterIntent"
    findings: list[Finding] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    fleet: object = None  # gpuconf.intent.fleet.Fleet, the fleet file's model
    digests: dict[str, str] = field(default_factory=dict)  # every file read (the input, a fleet's base and overlays)
    roles: dict[str, str] = field(default_factory=dict)  # a fleet's files: base, layer or overlay
    stages: list = field(default_factory=list)  # a fleet's rollout: gpuconf.intent.stages.StagePlan, in order

    @property
    def is_fleet(self) -> bool:
        """True for a Fleet file."""
        return self.kind == FLEET_KIND

    def findings_of(self, clusters: list[Cluster] | None = None) -> list[Finding]:
        """The file's own findings and those of clusters (default: all), sorted and without repeats."""
        chosen = self.clusters if clusters is None else clusters
        return sort_findings([*self.findings, *(f for c in chosen for f in c.validation.findings)])

    def valid(self, clusters: list[Cluster] | None = None) -> bool:
        """True when neither the file nor any of clusters (default: all) has an error."""
        chosen = self.clusters if clusters is None else clusters
        return bool(chosen) and all(c.ok for c in chosen) and not any(f.severity == ERROR for f in self.findings)

    def validations(self) -> list[Validation]:
        """What `validate` reports: for a fleet, the fleet file's own findings first, then one per cluster."""
        own = [Validation(self.file, findings=self.findings)] if self.is_fleet or not self.clusters else []
        return own + [c.validation for c in self.clusters if c.validation.document is not None]

    def names(self) -> list[str]:
        """The names of the clusters, as the file declares them."""
        return [c.name for c in self.clusters if c.name is not None]

    def select(self, name: str | None) -> list[Cluster]:
        """The cluster called name (all of them when name is None); SelectionError when there is none of that name."""
        if name is None:
            return self.clusters
        chosen = [c for c in self.clusters if c.name == name]
        if chosen:
            return chosen
        names = self.names()
        if not names:  # a file too broken to name its clusters: its findings say why
            return []
        from ..catalog import suggest

        guess = suggest(name, names)
        what = f"{len(names)} clusters" if len(names) > 1 else "one cluster"
        raise SelectionError(f"{self.file} has no cluster {name!r}" + (f" (did you mean {guess!r}?)" if guess else "")
                             + f"; its {what}: {', '.join(sorted(names))}")

    def one(self, name: str | None, why: str) -> list[Cluster]:
        """The one cluster a command works on: --cluster NAME, or the only cluster there is (SelectionError for a
        fleet of several clusters without --cluster; why says what needs one)."""
        chosen = self.select(name)
        if len(chosen) > 1:
            raise needs_one(self.file, [c.name for c in chosen], why)
        return chosen


def needs_one(file: str, names: list, why: str) -> SelectionError:
    """The error for a fleet of several clusters where a command works on one of them (why says what needs one)."""
    return SelectionError(f"{file} is a fleet of {len(names)} clusters ({', '.join(sorted(names))}): {why}; give "
                          "--cluster NAME")


def read_input(path: str, display: str | None = None, deployed_for=None) -> Input:
    """Read an intent or a fleet file once (`-` is standard input; a pipe can be read only once) and validate each
    of its clusters. deployed_for (cluster name -> its folder as deployed, or None) adds the transition rules."""
    from ..repository import relative_name
    from .validate import bounded, check_document, validate_document

    name = display or path
    broken = use_charts_near(path)
    if broken is not None:
        return Input(name, findings=[broken])
    try:
        doc = load_bytes(read_limited(sys.stdin.buffer.read), "<stdin>") if path == "-" else load_file(path, name)
    except LoadError as exc:
        return Input(exc.finding.file, findings=[exc.finding])
    if not is_fleet(doc):
        validation = validate_document(doc, deployed_for)
        return Input(doc.file, clusters=[Cluster(_intent_name(validation, doc), validation, relative_name(doc.file),
                                                 (doc.file,))],
                     digests={doc.file: doc.digest})
    from .fleet import merge_fleet

    merged = merge_fleet(doc)
    read = Input(doc.file, FLEET_KIND, merged.findings, fleet=merged.fleet,
                 digests={doc.file: doc.digest, **merged.digests}, roles=dict(merged.roles),
                 stages=list(merged.stages))
    for cluster in merged.clusters:
        document = cluster.document
        source = f"{relative_name(doc.file)}, cluster {cluster.name} " \
                 f"({' + '.join(relative_name(file, doc.file) for file in cluster.sources)})"
        if document is None:  # its overlay could not be read: the fleet's findings say so
            read.clusters.append(Cluster(cluster.name, Validation(f"{doc.file}[{cluster.name}]"), source))
            continue
        validation = check_document(document, deployed_for)
        validation.findings = bounded(sort_findings(document.attribute(f) for f in validation.findings))
        read.clusters.append(Cluster(cluster.name, validation, source, cluster.sources))
    return read


def use_charts_near(path: str) -> Finding | None:
    """Make the charts the user added beside an input (its folder's gpuconf-charts/, or the nearest one above it in
    the repository; the working folder's for standard input) known; a facts file there that cannot be used is a
    finding that names it."""
    from pathlib import Path

    from .. import catalog

    try:
        catalog.use_chart_folder(catalog.chart_folder_near(Path.cwd() if path == "-" else Path(path)))
    except catalog.ChartFactsError as exc:
        return Finding(str(exc.path), 1, 1, ERROR, "GC318", catalog.USER_CHART_FOLDER, exc.message,
                       "run `gpuconf chart add` on the chart again, or remove the file")
    except OSError:
        return None  # an unreadable input is the loader's to report
    return None


def _intent_name(validation: Validation, doc: Document) -> str | None:
    if validation.intent is not None:
        return validation.intent.metadata.name
    meta = doc.data.get("metadata") if isinstance(doc.data, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None

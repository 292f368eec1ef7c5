"""`gpuconf audit`: its inputs put together (the nodes; on a DRA cluster the ResourceSlices; the operator's pods,
their events and logs), the audit run, and what it prints. The command line only parses the options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..outcome import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, Outcome, UsageProblem


@dataclass
class AuditInputs:
    """The options of one audit."""

    intent: str
    nodes_file: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    timeout: float = 30.0
    slices_file: str | None = None
    pods_file: str | None = None
    events_file: str | None = None
    must_gather: str | None = None
    no_operands: bool = False
    fmt: str = "text"
    cluster: str | None = None
    max_unavailable: Any = None


def check(inputs: AuditInputs) -> None:
    """The combinations of options that cannot work (exit 2 before anything is read)."""
    sources = [x for x in (inputs.nodes_file, inputs.kubeconfig) if x is not None]
    if len(sources) > 1 or (not sources and inputs.must_gather is None):
        raise UsageProblem("give the nodes with exactly one of --nodes FILE or --kubeconfig PATH (or a --must-gather "
                           "folder that holds them)")
    if inputs.context is not None and inputs.kubeconfig is None:
        raise UsageProblem("--context needs --kubeconfig")
    if inputs.must_gather is not None and inputs.pods_file is not None:
        raise UsageProblem("--must-gather holds the operator's pods: give it or --pods, not both")
    if inputs.no_operands and (inputs.pods_file or inputs.events_file or inputs.must_gather):
        raise UsageProblem("--no-operands audits the nodes alone: it goes with no --pods, --events or --must-gather")
    if inputs.events_file is not None and inputs.pods_file is None and inputs.must_gather is None \
            and inputs.kubeconfig is None:
        raise UsageProblem("--events needs the pods they concern: give --pods FILE too")


def run(inputs: AuditInputs) -> Outcome:
    """Read, audit, report. Exit 0 without errors, 1 with drift, 2 when an input cannot be read."""
    check(inputs)
    if inputs.nodes_file is not None:
        # First: a large node list's second part is read by a process of its own from here on (cluster/nodescan.py),
        # while this one loads the intent.
        from .nodescan import read_nodes

        nodes: Any = read_nodes(inputs.nodes_file)
    from .audit import audit_path
    from .auditresult import format_json, format_markdown, format_text
    from ..findings import format_text as findings_text
    from .nodesource import NodeSourceError, read_cluster_nodes
    from . import operandsource as S
    from ..parallel import beside

    # The pod files are read in a process of their own from the start: beside the intent's validation and the
    # nodes' audit, each on a core (the pods of a 5,000-node cluster are some 400 MB of JSON).
    pod_files = beside(S.read_pod_files, inputs.pods_file, inputs.events_file) \
        if inputs.pods_file is not None else None
    nodes_from_folder: list[str | None] = [None]
    live: list = []  # the live reader of the pods (or the process reading the pod files), closed when done
    notes: list[str] = []

    read: list = []  # the operands read, for the must-gather's node events

    def operands(namespace: str, *others: str):
        """The operator's pods, read once the intent is known valid (it names the namespace; `others`: the DRA
        driver's release namespace beside it, whose pods are read live too)."""
        if inputs.must_gather is not None:
            found, nodes_from_folder[0] = S.read_must_gather(inputs.must_gather, namespace)
        elif pod_files is not None:  # being read beside: the audit takes them once every node is in

            def done():
                found = pod_files()
                S.note_operands(found, inputs.pods_file, namespace)
                notes.extend(found.notes)
                return found
            return done
        elif inputs.kubeconfig is not None and not inputs.no_operands:
            live.append(S.read_cluster_operands(inputs.kubeconfig, inputs.context, namespace, inputs.timeout,
                                                others))
            found = live[0].read()
            notes.extend(found.notes)
            return found
        else:
            return None
        if inputs.events_file is not None:
            S.read_events(inputs.events_file, found)
        notes.extend(found.notes)
        read.append(found)
        return found

    if inputs.nodes_file is not None:
        source = "<stdin>" if inputs.nodes_file == "-" else inputs.nodes_file
    elif inputs.kubeconfig is not None:
        nodes = read_cluster_nodes(inputs.kubeconfig, inputs.context, timeout=inputs.timeout)
        source = inputs.kubeconfig + (f" (context {inputs.context})" if inputs.context else "")
    else:  # the must-gather's node list, found once the folder is read
        def folder_nodes():
            if nodes_from_folder[0] is None:
                raise NodeSourceError(f"{inputs.must_gather}: holds no {S.MG_NODES} (the GPU nodes it describes): "
                                      "give --nodes FILE or --kubeconfig")
            yield from S.nodes_from_file(nodes_from_folder[0], read[0] if read else None)

        nodes, source = folder_nodes(), inputs.must_gather
    slices: Any = None
    if inputs.slices_file is not None:
        def slices(driver: str | None = None):
            from .slices import read_slices_file

            return read_slices_file(inputs.slices_file)
    elif inputs.kubeconfig is not None:
        def slices(driver: str | None = None):  # driver: only its slices are listed
            from .slices import read_cluster_slices

            return read_cluster_slices(inputs.kubeconfig, inputs.context, inputs.timeout, driver)
    stderr: list[str] = []
    try:
        try:
            validation, result = audit_path(inputs.intent, nodes, source, inputs.max_unavailable, slices,
                                            inputs.cluster, operands)
        finally:
            for reader in (*live, *([pod_files] if pod_files is not None else []), nodes):
                if hasattr(reader, "close"):
                    reader.close()
            # Each reader says its notes once; two readers of one cluster say the same ones (TLS verification off).
            stderr += [f"gpuconf: {note}" for note in dict.fromkeys((*notes, *getattr(nodes, "notes", ()),
                                                                      *(n for r in live for n in getattr(r, "notes", ()))))]
    except NodeSourceError as exc:
        return Outcome("", stderr + [f"gpuconf: {exc}"], EXIT_USAGE)
    if result is None:
        text = findings_text(validation.findings).rstrip("\n").split("\n") if validation.findings else []
        return Outcome("", stderr + text + [f"{inputs.intent}: invalid; fix it before auditing (gpuconf validate "
                                            f"{inputs.intent})"], EXIT_FINDINGS)
    formats = {"json": format_json, "markdown": format_markdown, "text": format_text}
    return Outcome(formats[inputs.fmt](result), stderr, EXIT_OK if result.ok else EXIT_FINDINGS)

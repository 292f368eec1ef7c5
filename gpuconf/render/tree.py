"""The output tree of one cluster: every file as text, verified before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .. import plan as P
from ..emit import dump, dump_all, header, shell_word
from ..findings import dotted
from ..gcpause import gc_paused
from . import access, admission, dra, gitops, kueue, monitoring, nodes, nvlink, platform, probes, sharing, teams
from .values import ValuesBuilder, build_values
from .command import Command, regenerate  # noqa: F401 - the names stay importable from here

#: Which manifest file each kind goes to; files are applied in kustomization order (namespaces first).
KIND_FILES = {
    "Namespace": "manifests/namespaces.yaml",
    "Policy": "manifests/admission.yaml",  # Kyverno's, before any object that makes the operator start pods
    "PriorityClass": "manifests/priority-classes.yaml",
    "ConfigMap": "manifests/sharing-configs.yaml",
    "NodeFeatureRule": "manifests/node-feature-rules.yaml",
    "DeviceClass": "manifests/device-classes.yaml",
    "ResourceClaimTemplate": "manifests/claims.yaml",
    "ComputeDomain": "manifests/compute-domains.yaml",  # its CRD comes with the DRA driver's release
    "NVIDIADriver": "manifests/nvidia-drivers.yaml",
    "ResourceQuota": "manifests/quotas.yaml",
    "Topology": "manifests/queues.yaml",  # before the flavors that name it
    "ResourceFlavor": "manifests/queues.yaml",
    "WorkloadPriorityClass": "manifests/queues.yaml",
    "ClusterQueue": "manifests/queues.yaml",
    "LocalQueue": "manifests/queues.yaml",
    "ClusterRole": "manifests/rbac.yaml",
    "ClusterRoleBinding": "manifests/rbac.yaml",
    "Role": "manifests/rbac.yaml",
    "RoleBinding": "manifests/rbac.yaml",
    "PrometheusRule": "manifests/monitoring.yaml",
    "Job": "manifests/probes.yaml",
}
#: Documents that go to another file than their kind's, by name prefix (the exporter's metrics file belongs with
#: the alerts that need it, not with the sharing configs).
NAMED_FILES = {monitoring.METRICS_CONFIGMAP: "manifests/monitoring.yaml"}
MANIFEST_RENDERERS: tuple[Callable[[P.Plan], list[dict]], ...] = (
    lambda plan: [operator_namespace(plan)],
    nvlink.namespace_doc,
    admission.render,
    sharing.render,
    nodes.node_feature_rules,
    dra.render,
    teams.render,
    nvlink.compute_domains,
    kueue.render,
    access.render,
    monitoring.render,
    probes.render,
)


class VerificationError(Exception):
    """Generated output failed its own verification: a bug in gpuconf, never the user's input."""

    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s) in generated output: " + "; ".join(problems[:5]))
        self.problems = problems


@dataclass
class Tree:
    """The rendered files of one cluster (relative path -> text), plus what produced them."""

    name: str
    files: dict[str, str] = field(default_factory=dict)
    plan: P.Plan | None = None
    values: ValuesBuilder | None = None
    documents: dict[str, list[dict]] = field(default_factory=dict)


def operator_namespace(plan: P.Plan) -> dict:
    """The operator's namespace, created ahead of the chart so the config ConfigMaps can land in it."""
    from . import metadata

    # Operands are privileged daemon sets; with Pod Security Admission enforced they need a privileged namespace.
    labels = {"pod-security.kubernetes.io/enforce": "privileged", **platform.namespace_labels(plan)}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(plan, plan.namespace, labels=labels)}


@gc_paused
def render_tree(plan: P.Plan, command: Command) -> Tree:
    """Render, verify and serialise everything for one cluster; raises VerificationError on a gpuconf bug."""
    tree = Tree(plan.name, plan=plan)
    head = _header(plan, command)
    from .. import hazards

    values = hazards.planned_values(plan) or build_values(plan)  # validation's hazard rules planned them already
    tree.values = values
    tree.files["values.yaml"] = head + _values_text(plan, values)
    if nvlink.release(plan):  # the DRA driver's chart, a second release beside the operator's
        tree.files[nvlink.VALUES_FILE] = head + header([f"Values of the DRA driver chart {nvlink.CHART} "
                                                        f"{nvlink.settings(plan).chart_version}: ComputeDomains for "
                                                        "the NVLink pools; REPORT.md says why each is set."]) \
            + dump(nvlink.values(plan), top=True)

    merged = values.merged_view()  # read-only: the renderers copy what they put into documents
    by_file: dict[str, list[dict]] = {}
    renderers = [*MANIFEST_RENDERERS, lambda plan: nodes.nvidia_drivers(plan, merged)]
    for renderer in renderers:
        for doc in renderer(plan):
            gitops.annotate(plan, doc)  # the delivery tool's sync annotations (probe Jobs)
            name = doc["metadata"]["name"]
            path = next((f for prefix, f in NAMED_FILES.items() if name.startswith(prefix)), KIND_FILES.get(doc["kind"]))
            if doc["kind"] == "Policy" and nvlink.release(plan) and \
                    doc["metadata"]["namespace"] == nvlink.namespace(plan) != plan.namespace:
                path = admission.RELEASE_FILE  # applied first by the DRA driver's release, which makes its namespace
            if path is None:
                raise VerificationError([f"no manifest file for kind {doc['kind']}"])
            by_file.setdefault(path, []).append(doc)
    for path, docs in platform.manifest_files(plan, merged).items():  # GKE quota, NodePools, OLM objects
        by_file.setdefault(path, []).extend(docs)
    order = platform.file_order(list(dict.fromkeys(KIND_FILES.values())))
    order.insert(order.index(admission.FILE) + 1, admission.RELEASE_FILE)
    for path in sorted(by_file, key=order.index):
        docs = sorted(by_file[path], key=lambda d: (order_of_kind(d["kind"]), d["metadata"].get("namespace", ""),
                                                   d["metadata"]["name"]))
        tree.documents[path] = docs
        tree.files[path] = head + dump_all(docs)
    for name, content in sorted(nodes.node_templates(plan).items()):
        path = f"node-templates/{name}"
        if isinstance(content, dict):
            tree.documents[path] = [content]
            tree.files[path] = head + dump_all([content])
        elif content.startswith("#!"):  # a script: its interpreter line comes first, then the header
            shebang, _, rest = content.partition("\n")
            tree.files[path] = f"{shebang}\n{head}{rest}"
        else:
            tree.files[path] = head + content
    for path, job in sorted(probes.manual(plan).items()):  # applied by hand: no sync annotations, not kustomized
        tree.documents[path] = [job]
        tree.files[path] = head + dump_all([job])
    manifest_files = sorted(by_file, key=order.index)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": gitops.folder_resources(plan, manifest_files),
    }
    tree.files["kustomization.yaml"] = head + dump(kustomization, top=True)
    namespace_labels = operator_namespace(plan)["metadata"]["labels"]
    namespaces = sorted({plan.namespace, *([nvlink.namespace(plan)] if nvlink.release(plan) else [])}
                        | {d["metadata"]["namespace"] for docs in by_file.values() for d in docs
                           if d["metadata"].get("namespace")})
    for file in gitops.render(plan, manifest_files, namespace_labels, namespaces):
        notes = header(file.notes) if file.notes else ""
        if file.documents is not None:
            tree.documents[file.path] = file.documents
            tree.files[file.path] = head + notes + dump_all(file.documents)
        else:
            tree.files[file.path] = head + notes + dump(file.config, top=True)
    _verify(tree)
    from ..output.report import build_report, report_json, report_markdown

    report = build_report(plan, values, command, tree.files)
    tree.files["REPORT.md"] = report_markdown(report)
    tree.files["report.json"] = report_json(report)
    return tree


#: The fewest clusters whose trees the automatic --jobs renders in forked workers (gpuconf/parallel.py). Measured
#: on a 2-core machine with tools/bench.py's fleet (a tree takes about 10 ms): forking, the pages the two processes
#: then copy and the trees handed back cost some 35 ms of CPU, so 6 trees take 1.05x the time of one process, 8 of
#: them 0.8x, 16 of them 0.55x.
PARALLEL_FROM = 8


def render_trees(plans: list, command: Command) -> list[Tree]:
    """render_tree of each plan, in order; spread over the cores when there are enough plans (gpuconf/parallel.py).
    A worker hands back what it rendered (the files, the documents, the values it built); the plan is the caller's
    own, so the trees are the same as one process's."""
    from ..parallel import ordered

    return ordered(lambda plan: render_tree(plan, command), plans, PARALLEL_FROM, _parts, _tree_of)


def _parts(tree: Tree) -> tuple:
    """What a worker hands back of a tree (its plan stays in the command's process, which has its own)."""
    from .. import hazards

    planned = hazards.planned_values(tree.plan) is tree.values  # the caller's process has them already
    return tree.files, tree.documents, None if planned else tree.values


def _tree_of(plan: P.Plan, parts: tuple) -> Tree:
    """The tree a worker rendered, on the caller's plan."""
    from .. import hazards

    files, documents, values = parts
    return Tree(plan.name, files, plan, values if values is not None else hazards.planned_values(plan), documents)


def order_of_kind(kind: str) -> int:
    """Position of a kind in apply order (cluster-wide roles before the bindings that use them)."""
    kinds = list(KIND_FILES)
    return kinds.index(kind) if kind in kinds else len(kinds)


def _header(plan: P.Plan, command: Command) -> str:
    return header([
        f"Generated by gpuconf from {plan.source} for GPU Operator chart {plan.chart_version}.",
        f"Do not edit: change the intent, then run: {regenerate(plan, command)}",
    ])


def _values_text(plan: P.Plan, values: ValuesBuilder) -> str:
    comments = {}
    for change in values.deviations():
        where = dotted(change.origin)
        line = plan.line(change.origin)
        # A fleet cluster's intent is merged from several files: say which one.
        source = getattr(plan.document, "source", None)
        at = f"{source(change.origin)} line {line}" if source is not None else f"line {line}"
        comments[change.path] = f"via {where} ({at}): {change.why}"
    overrides = values.overrides()
    if not overrides:
        return "{}\n"
    return dump(overrides, comments)


def _verify(tree: Tree) -> None:
    """Check every document against its schema, the values against the chart's, configs against upstream rules."""
    from ..output import formats, verify

    plan = tree.plan
    k8s = plan.intent.spec.cluster.kubernetes_version
    problems: list[str] = []
    for path, docs in tree.documents.items():
        for doc in docs:
            where = path
            problems += [f"{p.document} {p.path}: {p.message}" for p in verify.verify_object(doc, k8s, where)]
    problems += [f"{p.document} {p.path}: {p.message}" for p in verify.verify_values(tree.values.merged_view(), plan.chart_version)]
    for key, config in plan.device_plugin_configs.items():
        problems += [f"device-plugin config {key}: {m}" for m in formats.check_config_name(key)]
        problems += [f"device-plugin config {key}: {m}"
                     for m in formats.check_device_plugin_config(config, mig_strategy=plan.strategy)]
    if any(p.mig_key is not None for p in plan.pools):
        problems += [f"mig-parted config: {m}" for m in formats.check_mig_parted_config(sharing.mig_parted_config(plan))]
    problems += _referential(plan)
    if nvlink.release(plan):
        problems += nvlink.problems(plan, nvlink.values(plan))
    problems += admission.problems(plan, tree.documents)
    problems += gitops.problems({path: docs for path, docs in tree.documents.items() if path.startswith("gitops/")})
    problems += kueue.problems([doc for path, docs in tree.documents.items() if path.startswith("manifests/")
                                for doc in docs])
    from . import karpenter

    problems += karpenter.problems(tree.documents.get(karpenter.KARPENTER_FILE, []))
    if not problems:  # the semantic check reads documents that passed their schemas
        from ..output import semantic

        problems += [f"semantic: {p}" for p in semantic.check(tree)]
    if problems:
        raise VerificationError(problems)


def _referential(plan: P.Plan) -> list[str]:
    """Every label value a pool uses names an existing config key (the device plugin fails on a missing one)."""
    problems = []
    for pool in plan.pools:
        if pool.device_plugin_key not in plan.device_plugin_configs:
            problems.append(f"pool {pool.name}: device-plugin config {pool.device_plugin_key} does not exist")
        if pool.mig_key is not None and pool.mig_key not in plan.mig_configs:
            problems.append(f"pool {pool.name}: MIG config {pool.mig_key} does not exist")
    if plan.default_device_plugin_key not in plan.device_plugin_configs:
        problems.append(f"default device-plugin config {plan.default_device_plugin_key} does not exist")
    return problems

"""Delivery wrappers under gitops/: Argo CD Applications or Flux objects that deploy the rendered tree.

Every choice here answers a failure GPU Operator users hit when a GitOps tool syncs the stack (the traps of
../shared/reference/user-pain-points.md, section A6, cited as A6.16 to A6.20), plus two traps of the probe Jobs:

* CRDs (A6.16, A6.18): the chart's crds/ are applied by the tool itself, never client-side (Argo CD
  `ServerSideApply=true`; Flux `install.crds`/`upgrade.crds: CreateReplace`), so new ClusterPolicy fields exist
  before the new chart's ClusterPolicy is applied, and the 0.3 MB ClusterPolicy CRD never meets the 256 KiB
  last-applied annotation limit of client-side apply.
* Order: namespaces and the CRD-bearing chart come first. Argo CD: the chart Application (sync wave 0) creates its
  namespace with the Pod Security label the operands need (CreateNamespace + managedNamespaceMetadata), the
  manifests Application follows (wave 1) and tolerates CRDs that are still arriving (SkipDryRunOnMissingResource,
  retries with backoff). Flux: a release Kustomization applies the namespaces, the device-plugin/MIG ConfigMaps, the
  chart source and the HelmRelease and waits for the release; the manifests Kustomization dependsOn it.
* Admission first (spec.security.admission): the Kyverno Policy that guards the operator's namespace is applied, and
  Ready, before the chart it guards, on every sync, so a changed image (an image lock's digests) is never refused
  by the Policy of the commit before. Argo CD: the Policy is a source of the chart Application itself, in sync wave
  -1 (Argo CD orders waves within one Application's sync and waits for each to be healthy; its built-in health
  check of kyverno.io/Policy is the Policy's Ready condition, resource_customizations/kyverno.io/Policy). Separate
  Applications would not do: after the first sync each one syncs a new commit on its own. The cluster folder's
  kustomization.yaml then leaves the Policy out, so that the manifests Application does not manage it too. Flux:
  an admission Kustomization applies the namespaces and the Policy and waits for them; the release Kustomization
  dependsOn it, which kustomize-controller holds until the dependency is Ready at the same source revision
  (checkDependencies). A namespace that moves there from the release Kustomization is not pruned by it: its
  garbage collection deletes only objects that still carry its own owner labels (deleteObjects' Inclusions).
* Verification at sync (spec.delivery.signedCommits, spec.delivery.ociArtifact; shared/reference/provenance
  facts.md §6). Argo CD: an AppProject of the cluster's own (<cluster>-gpu) that the Applications use, limited to
  the repositories and destinations they need, requiring GnuPG-signed commits of the Git sources: `signatureKeys`
  (mode head, Argo CD's legacy field, which v3.5 turns into a head policy for every repository) or
  `sourceIntegrity.git.policies` (mode strict, v3.5). Helm and OCI sources are never verified (the chart). Flux:
  an OCIRepository that pulls the cluster's folder as an OCI artifact (`flux push artifact`) and verifies its
  cosign signature with the public keys of a Secret (`verify.provider: cosign`, `secretRef`) before the
  Kustomizations, whose source it becomes, apply anything; their paths are then relative to the folder.
* ClusterPolicy drift (A6.17): Argo CD diffs server-side (`ServerSideDiff=true`) and ignores, with
  RespectIgnoreDifferences, the fields the API server fills from CRD defaults that the chart does not render
  (SERVER_DEFAULTED).
* Offline render (A6.19): the Argo CD chart source pins `kubeVersion` to the intent's Kubernetes version, and the
  file header prints the `helm template` command that renders the same thing offline.
* Flux rollbacks (A6.20): the HelmRelease waits as long as a driver roll-out takes (rollout_minutes) and never
  remediates a failed upgrade by rolling back (`upgrade.remediation.retries: 0`).
* Probe Jobs are immutable once created and are deleted by their TTL: under Argo CD they run as PostSync hooks
  (replaced before each run, never OutOfSync once the TTL removes them); under Flux they carry
  `kustomize.toolkit.fluxcd.io/force: enabled`, so a changed Job is recreated instead of failing the apply.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from .. import plan as P
from ..intent.model import ARGOCD_IN_CLUSTER, ARGOCD_NAMESPACE, FLUX_NAMESPACE
from . import common_labels, metadata, nvlink, probes

NVIDIA_HELM_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
CHART = "gpu-operator"
RELEASE_NAME = "gpu-operator"
#: The folder under a registry mirror that serves the chart: `helm push gpu-operator-<v>.tgz oci://<mirror>/charts`.
#: Not the mirror itself, where the operator image <mirror>/gpu-operator:<v> already uses the chart's name and tag.
MIRROR_CHART_FOLDER = "charts"
HELM_CHART_MEDIA_TYPE = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
VALUES_CONFIGMAP = "gpu-operator-values"
VALUES_KEY = "values.yaml"

#: Manifests the chart needs before it starts: the namespaces (the release's own, Pod-Security-labelled), the platform's
#: objects (GKE admits the operator's system-node-critical pods only under its ResourceQuota) and the
#: device-plugin and MIG ConfigMaps the operands mount at their first start. Flux applies them with the release.
EARLY_MANIFESTS = ("manifests/namespaces.yaml", "manifests/platform.yaml", "manifests/sharing-configs.yaml")


ARGOCD_HOOK = {"argocd.argoproj.io/hook": "PostSync", "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}
#: The admission Policy's wave in the chart Application: before the chart's resources (wave 0).
ARGOCD_POLICY_WAVE = {"argocd.argoproj.io/sync-wave": "-1"}
#: Files the Flux admission Kustomization applies, before the release Kustomization (which then leaves them out).
ADMISSION_MANIFESTS = ("manifests/namespaces.yaml", "manifests/admission.yaml", "manifests/admission-dra-driver.yaml")
FLUX_FORCE = {"kustomize.toolkit.fluxcd.io/force": "enabled"}

#: Time budget of one wave of a driver roll-out, before drain and pod-deletion timeouts: pulling the driver image,
#: building or loading the kernel module, and the validator passing on the node.
DRIVER_INSTALL_MINUTES = 10
#: Shortest HelmRelease timeout: a first install (every node at once) plus the chart's own hooks.
MIN_RELEASE_MINUTES = 30
#: Slack added to a Flux Kustomization's timeout over what it waits for.
SLACK_MINUTES = 5
RETRY = {"limit": 10, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"}}


@dataclass(frozen=True)
class ChartSource:
    """Where the pinned chart comes from: a classic Helm repository (https) or an OCI registry path."""

    url: str  # https://... or oci://... (the repository, without the chart name)

    @property
    def oci(self) -> bool:
        """True for an OCI registry."""
        return self.url.startswith("oci://")

    @property
    def argocd_repo_url(self) -> str:
        """Argo CD names OCI Helm repositories without the scheme (and needs them registered with enableOCI)."""
        return self.url.removeprefix("oci://")

    @property
    def chart_url(self) -> str:
        """The OCI artifact of the chart itself."""
        return f"{self.url}/{CHART}"


@dataclass
class GitopsFile:
    """One file under gitops/: Kubernetes objects (verified against their CRDs) or a kustomize config."""

    path: str
    documents: list[dict] | None = None
    config: dict | None = None  # a kustomization.yaml or kustomizeconfig.yaml (not a Kubernetes object)
    notes: list[str] = field(default_factory=list)  # extra header lines


def chart_source(plan: P.Plan) -> ChartSource:
    """The intent's chartRepository, else the registry mirror's chart folder, else NVIDIA's Helm repository."""
    return intent_chart_source(plan.intent)


def intent_chart_source(intent) -> ChartSource:
    """chart_source of an intent (validation asks it before there is a plan)."""
    spec = intent.spec
    if spec.delivery.chart_repository:
        return ChartSource(spec.delivery.chart_repository.rstrip("/"))
    if spec.operator.registry:
        return ChartSource(f"oci://{spec.operator.registry.rstrip('/')}/{MIRROR_CHART_FOLDER}")
    return ChartSource(NVIDIA_HELM_REPOSITORY)


def namespace_of(plan: P.Plan) -> str:
    """Namespace of the Argo CD Applications or Flux objects."""
    delivery = plan.intent.spec.delivery
    return delivery.namespace or (ARGOCD_NAMESPACE if delivery.tool == "argocd" else FLUX_NAMESPACE)


def repo_folder(plan: P.Plan) -> str:
    """The cluster's folder in the Git repository: <delivery.path>/<cluster>."""
    path = plan.intent.spec.delivery.path
    return plan.name if path in (None, ".") else f"{path}/{plan.name}"


def object_name(cluster: str, suffix: str) -> str:
    """<cluster>-<suffix>, shortened with a hash to a DNS-1123 label (Argo CD puts app names in a label)."""
    name = f"{cluster}-{suffix}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
    return f"{cluster[:63 - len(suffix) - 10].rstrip('-')}-{digest}-{suffix}"


def annotate(plan: P.Plan, doc: dict) -> None:
    """Add the delivery tool's annotations to a manifest: the probe Jobs, and under Argo CD the admission Policy's
    sync wave."""
    tool = plan.intent.spec.delivery.tool
    if doc.get("kind") == "Policy" and tool == "argocd":
        doc["metadata"].setdefault("annotations", {}).update(ARGOCD_POLICY_WAVE)
    if doc.get("kind") != "Job" or tool == "none":
        return
    doc["metadata"].setdefault("annotations", {}).update(ARGOCD_HOOK if tool == "argocd" else FLUX_FORCE)


def admission_first(plan: P.Plan) -> bool:
    """True when the delivery tool applies the admission Policy ahead of the chart (an admission policy under Argo
    CD or Flux; OpenShift's OLM route has no admission policy)."""
    return plan.intent.spec.admission is not None and plan.intent.spec.delivery.tool in ("argocd", "flux")


def folder_resources(plan: P.Plan, files: list[str]) -> list[str]:
    """The cluster folder's kustomization.yaml resources: every manifest file, but under Argo CD not the admission
    Policy, which the chart Application applies first (and two Applications must not manage one object)."""
    from .admission import FILE, RELEASE_FILE

    if admission_first(plan) and plan.intent.spec.delivery.tool == "argocd":
        return [f for f in files if f not in (FILE, RELEASE_FILE)]
    return list(files)


def render(plan: P.Plan, manifest_files: list[str], namespace_labels: dict[str, str],
           namespaces: list[str] = ()) -> list[GitopsFile]:
    """The gitops/ files of the intent's delivery tool (none for `tool: none`); namespaces: those the manifests
    and the chart deploy into (an AppProject's destinations)."""
    tool = plan.intent.spec.delivery.tool
    if tool == "argocd":
        return _argocd(plan, namespace_labels, list(namespaces))
    if tool == "flux":
        return _flux(plan, manifest_files)
    return []


# --- Argo CD ---------------------------------------------------------------------------------------------------


def _destination(plan: P.Plan, namespace: str | None) -> dict:
    dest = plan.intent.spec.delivery.destination
    out = {"name": dest.name} if dest is not None and dest.name else \
        {"server": dest.server if dest is not None and dest.server else ARGOCD_IN_CLUSTER}
    if namespace is not None:
        out["namespace"] = namespace
    return out


def helm_template_command(plan: P.Plan, source: ChartSource) -> str:
    """The offline `helm template` that renders what the GitOps tool renders in the cluster (A6.19)."""
    chart = source.chart_url if source.oci else f"{CHART} --repo {source.url}"
    return (f"helm template {RELEASE_NAME} {chart} --version {plan.chart_version} --namespace {plan.namespace} "
            f"--kube-version {plan.intent.spec.cluster.kubernetes_version} --include-crds -f values.yaml")


def _argocd(plan: P.Plan, namespace_labels: dict[str, str], namespaces: list[str]) -> list[GitopsFile]:
    from .admission import FILE as admission_file

    delivery = plan.intent.spec.delivery
    source = chart_source(plan)
    namespace = namespace_of(plan)
    revision = delivery.target_revision or "HEAD"
    project = project_name(plan)
    folder = repo_folder(plan)
    ignore = [{"group": "nvidia.com", "kind": "ClusterPolicy",
               # ClusterPolicy fields the API server fills from the CRD's `default:` although the chart renders no
               # value (the pinned release's facts: serverDefaulted), so the live object always has a field the
               # desired one lacks and Argo CD would show it OutOfSync forever.
               "jsonPointers": list(plan.chart.server_defaulted)}]
    chart_meta = metadata(plan, object_name(plan.name, "gpu-operator"), namespace)
    chart_meta["annotations"] = {
        "argocd.argoproj.io/sync-wave": "0",
        # Diff against a server-side dry run, so CRD defaulting and the API server's pruning show as they will be.
        "argocd.argoproj.io/compare-options": "ServerSideDiff=true",
    }
    chart_app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": chart_meta,
        "spec": {
            "project": project,
            "destination": _destination(plan, plan.namespace),
            "sources": [
                {
                    "repoURL": source.argocd_repo_url,
                    "chart": CHART,
                    "targetRevision": plan.chart_version,
                    "helm": {
                        "releaseName": RELEASE_NAME,
                        "valueFiles": [f"$values/{folder}/values.yaml"],
                        "kubeVersion": plan.intent.spec.cluster.kubernetes_version,
                        "skipCrds": False,
                    },
                },
                {"repoURL": delivery.repoURL, "targetRevision": revision, "ref": "values"},
                # The admission Policy, in sync wave -1 of this Application: Ready before the chart's resources.
                *([{"repoURL": delivery.repoURL, "targetRevision": revision, "path": f"{folder}/manifests",
                    "directory": {"include": admission_file.removeprefix("manifests/")}}]
                  if admission_first(plan) else []),
            ],
            **({"ignoreDifferences": ignore} if plan.chart.server_defaulted else {}),
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                # The same labels as manifests/namespaces.yaml: the operands are privileged and the namespace must
                # admit them before the chart's NFD DaemonSets start.
                "managedNamespaceMetadata": {"labels": dict(namespace_labels)},
                "syncOptions": ["CreateNamespace=true", "ServerSideApply=true", "RespectIgnoreDifferences=true"],
                "retry": RETRY,
            },
        },
    }
    manifests_meta = metadata(plan, object_name(plan.name, "gpu-manifests"), namespace)
    manifests_meta["annotations"] = {"argocd.argoproj.io/sync-wave": "1"}
    manifests_app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": manifests_meta,
        "spec": {
            "project": project,
            "destination": _destination(plan, None),
            "source": {"repoURL": delivery.repoURL, "targetRevision": revision, "path": folder},
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "syncOptions": ["ServerSideApply=true", "SkipDryRunOnMissingResource=true", "PruneLast=true"],
                "retry": RETRY,
            },
        },
    }
    from .openshift import olm

    if olm(plan):
        # OpenShift's OLM route has no chart: the manifests Application applies the Subscription, then (retrying
        # until the CSV brings the CRD) the ClusterPolicy, whose server-defaulted fields it must ignore likewise.
        manifests_meta["annotations"].update({"argocd.argoproj.io/sync-wave": "0",
                                              "argocd.argoproj.io/compare-options": "ServerSideDiff=true"})
        if plan.chart.server_defaulted:
            manifests_app["spec"]["ignoreDifferences"] = ignore
        manifests_app["spec"]["syncPolicy"]["syncOptions"].append("RespectIgnoreDifferences=true")
        files = [GitopsFile("gitops/application-manifests.yaml", [manifests_app])]
    else:
        notes = [f"Argo CD renders the chart like: {helm_template_command(plan, source)}"]
        if admission_first(plan):
            notes.append(f"The third source is {admission_file}: Argo CD applies the Kyverno Policy in sync wave -1 "
                         "and waits for it to be Ready before the chart.")
        if source.oci:
            notes.append(f"Register {source.argocd_repo_url} in Argo CD as a Helm repository with enableOCI: \"true\".")
        files = [
            GitopsFile("gitops/application-gpu-operator.yaml", [chart_app], notes=notes),
            GitopsFile("gitops/application-manifests.yaml", [manifests_app]),
        ]
    if nvlink.release(plan):  # the DRA driver's release beside the operator's: after it, before the manifests
        manifests_meta["annotations"]["argocd.argoproj.io/sync-wave"] = "2"
        files[-1:-1] = dra_argocd_files(plan, project, revision, folder)
    if delivery.signed_commits is not None:
        files.insert(0, _appproject(plan, source, namespaces))
    files.append(GitopsFile("gitops/kustomization.yaml", config=_kustomization([f.path.removeprefix("gitops/")
                                                                               for f in files])))
    return files


# --- Flux --------------------------------------------------------------------------------------------------------


def rollout_seconds(nodes: int, max_parallel: int, max_unavailable: int | str | None, drain_seconds: int | None,
                    pod_deletion_seconds: int) -> int:
    """How long the operator takes to replace the driver on `nodes` nodes under one upgrade policy (the README's
    formula, said once here: the HelmRelease timeout and `gpuconf diff --against`'s driver-upgrade window use it).

    The upgrade controller replaces drivers in waves of min(maxParallel, maxUnavailable) nodes (0 = no limit; a
    percentage counts the nodes); each wave drains (drain_seconds, None when drain is off), deletes GPU pods and
    installs: waves x (DRIVER_INSTALL_MINUTES + drain timeout + pod-deletion timeout).
    """
    if nodes <= 0:
        return 0
    if isinstance(max_unavailable, str):
        max_unavailable = math.ceil(nodes * int(max_unavailable.rstrip("%")) / 100)
    per_wave_nodes = max(1, min(max_parallel or nodes, max_unavailable or nodes, nodes))
    waves = math.ceil(nodes / per_wave_nodes)
    return waves * (DRIVER_INSTALL_MINUTES * 60 + (drain_seconds or 0) + pod_deletion_seconds)


def rollout_minutes(plan: P.Plan) -> int:
    """How long a HelmRelease upgrade may take: until the ClusterPolicy is ready again after a driver roll-out.

    helm-controller waits (kstatus) for every object of the release, the ClusterPolicy included, which is ready only
    when every node runs its driver: rollout_seconds over every node with a managed driver, plus SLACK_MINUTES, at
    least MIN_RELEASE_MINUTES.
    """
    from ..intent.model import Upgrade

    managed = sum(p.pool.nodes for p in plan.pools if p.driver != "preinstalled")
    upgrade = plan.intent.spec.driver.upgrade or Upgrade()  # the model's defaults are the chart's
    if managed == 0 or not upgrade.auto_upgrade:
        return MIN_RELEASE_MINUTES
    drain = upgrade.drain.timeout_seconds if upgrade.drain is not None and upgrade.drain.enable else None
    pod_deletion = upgrade.pod_deletion.timeout_seconds if upgrade.pod_deletion is not None else 300
    seconds = rollout_seconds(managed, upgrade.max_parallel, upgrade.max_unavailable, drain, pod_deletion)
    return max(MIN_RELEASE_MINUTES, math.ceil(seconds / 60) + SLACK_MINUTES)


def source_ref(plan: P.Plan) -> dict:
    """The Flux source of the rendered output: the intent's sourceRef, or the GitRepository flux bootstrap makes.
    gitops/ itself (the entry point) is applied from there."""
    ref = plan.intent.spec.delivery.source_ref
    out = {"kind": ref.kind if ref else "GitRepository", "name": ref.name if ref else "flux-system"}
    if ref is not None and ref.namespace:
        out["namespace"] = ref.namespace
    return out


def folder_source(plan: P.Plan) -> dict:
    """The source the Flux Kustomizations read the cluster's folder from: the verified OCIRepository of
    spec.delivery.ociArtifact, else source_ref."""
    if plan.intent.spec.delivery.oci_artifact is not None:
        return {"kind": "OCIRepository", "name": object_name(plan.name, "gpu-folder")}
    return source_ref(plan)


def _flux_path(plan: P.Plan, sub: str) -> str:
    """A Kustomization's path: in the Git repository (./<path>/<cluster>/<sub>), or in the artifact, which holds
    the cluster's folder alone (./<sub>)."""
    if plan.intent.spec.delivery.oci_artifact is not None:
        return f"./{sub}"
    return f"./{repo_folder(plan)}/{sub}"


def _oci_folder(plan: P.Plan) -> GitopsFile:
    """The OCIRepository of spec.delivery.ociArtifact: the cluster's folder, verified with cosign's public keys."""
    from ..emit import shell_word

    artifact = plan.intent.spec.delivery.oci_artifact
    doc = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "OCIRepository",
        "metadata": metadata(plan, object_name(plan.name, "gpu-folder"), namespace_of(plan)),
        "spec": {
            "interval": "10m",
            "url": artifact.url,
            "ref": {"tag": artifact.tag},
            **({"secretRef": {"name": artifact.pull_secret}} if artifact.pull_secret else {}),
            "verify": {"provider": "cosign", "secretRef": {"name": artifact.cosign_key_secret}},
        },
    }
    folder = shell_word(repo_folder(plan))
    notes = ["CI pushes this cluster's folder and signs the artifact, after `gpuconf render --check` (and verify):",
             f"  flux push artifact {shell_word(f'{artifact.url}:{artifact.tag}')} --path={folder} "
             '--source="$REPO_URL" --revision="$BRANCH@sha1:$COMMIT" --reproducible --output json | '
             """jq -r '.repository + "@" + .digest' | xargs cosign sign --key cosign.key""",
             f"Flux verifies the signature with the .pub keys of Secret {artifact.cosign_key_secret} before the "
             "Kustomizations apply anything (condition SourceVerified); apply this file from a source you trust (the "
             "Flux bootstrap repository), as it says which keys count."]
    return GitopsFile("gitops/oci-repository.yaml", [doc], notes=notes)


def project_name(plan: P.Plan) -> str:
    """The Argo CD project of the Applications: the cluster's own with signed commits, else the intent's, else
    default."""
    delivery = plan.intent.spec.delivery
    if delivery.signed_commits is not None:
        return object_name(plan.name, "gpu")
    return delivery.project or "default"


def _appproject(plan: P.Plan, source: ChartSource, namespaces: list[str]) -> GitopsFile:
    """The AppProject of spec.delivery.signedCommits: the repositories and destinations the cluster's Applications
    use, and the GnuPG keys their Git sources' commits must be signed with."""
    delivery = plan.intent.spec.delivery
    signed = delivery.signed_commits
    meta = metadata(plan, project_name(plan), namespace_of(plan))
    meta["annotations"] = {"argocd.argoproj.io/sync-wave": "-1"}  # before the Applications that use it
    where = {k: v for k, v in _destination(plan, None).items()}
    if signed.mode == "head":
        integrity = {"signatureKeys": [{"keyID": key} for key in signed.keys]}
    else:
        integrity = {"sourceIntegrity": {"git": {"policies": [
            {"repos": [{"url": delivery.repoURL}], "gpg": {"mode": signed.mode, "keys": list(signed.keys)}}]}}}
    doc = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": meta,
        "spec": {
            "description": f"gpuconf: the GPU stack of cluster {plan.name}, synced from commits signed by CI"[:255],
            "sourceRepos": sorted({delivery.repoURL, source.argocd_repo_url,
                                   *([nvlink.chart_repository(plan).removeprefix("oci://")]
                                     if nvlink.release(plan) else [])}),
            # The namespaces the Applications deploy into; the manifests Application's own destination has none.
            "destinations": [where, *({**where, "namespace": ns} for ns in namespaces)],
            # The chart brings CRDs, cluster roles and the ClusterPolicy; the project limits where, not what.
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            **integrity,
        },
    }
    keys = ", ".join(signed.keys)
    which = "the synced commit" if signed.mode == "head" else "the synced commit and its history, to a seal commit"
    notes = [f"Argo CD syncs the Git sources of this cluster's Applications only at commits signed with {keys} "
             f"({which}); their public keys go into the ConfigMap argocd-gpg-keys-cm. The chart (a Helm source) is "
             "not verified.",
             "Apply this file from a source whose commits need the same keys, or once by hand: whoever can change "
             "it can drop the requirement."]
    return GitopsFile("gitops/appproject.yaml", [doc], notes=notes)


def _flux(plan: P.Plan, manifest_files: list[str]) -> list[GitopsFile]:
    source = chart_source(plan)
    namespace = namespace_of(plan)
    release_minutes = rollout_minutes(plan)
    labels = common_labels(plan)
    if source.oci:
        chart_source_doc = {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "OCIRepository",
            "metadata": metadata(plan, CHART, namespace),
            "spec": {
                "interval": "12h",
                "url": source.chart_url,
                # spec.delivery.chartDigest pins the manifest (Flux: a digest wins over the tag, which stays
                # for readers).
                "ref": {"tag": plan.chart_version, **({"digest": plan.intent.spec.delivery.chart_digest}
                                                      if plan.intent.spec.delivery.chart_digest else {})},
                "layerSelector": {"mediaType": HELM_CHART_MEDIA_TYPE, "operation": "copy"},
            },
        }
        chart = {"chartRef": {"kind": "OCIRepository", "name": CHART, "namespace": namespace}}
    else:
        chart_source_doc = {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmRepository",
            "metadata": metadata(plan, "nvidia" if source.url == NVIDIA_HELM_REPOSITORY else CHART, namespace),
            "spec": {"interval": "12h", "url": source.url},
        }
        chart = {"chart": {"spec": {
            "chart": CHART, "version": plan.chart_version, "interval": "12h",
            "sourceRef": {"kind": "HelmRepository", "name": chart_source_doc["metadata"]["name"],
                          "namespace": namespace},
        }}}
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": metadata(plan, RELEASE_NAME, namespace),
        "spec": {
            **chart,
            "interval": "10m",
            "releaseName": RELEASE_NAME,
            "targetNamespace": plan.namespace,
            "storageNamespace": plan.namespace,
            "valuesFrom": [{"kind": "ConfigMap", "name": VALUES_CONFIGMAP, "valuesKey": VALUES_KEY}],
            "timeout": f"{release_minutes}m",
            "install": {"crds": "CreateReplace", "remediation": {"retries": 3}},
            "upgrade": {"crds": "CreateReplace", "remediation": {"retries": 0, "remediateLastFailure": False}},
        },
    }
    first = [f for f in ADMISSION_MANIFESTS if f in manifest_files] if admission_first(plan) else []
    early = [f for f in EARLY_MANIFESTS if f in manifest_files and f not in first]
    late = [f for f in manifest_files if f not in early and f not in first]
    admission_kustomization = _flux_kustomization(
        # wait: Ready once the namespaces exist and Kyverno reports the Policy Ready (in its webhook).
        plan, "gpu-admission", "gitops/admission", SLACK_MINUTES, retry="1m")
    release_kustomization = _flux_kustomization(
        plan, "gpu-operator", "gitops/release", release_minutes + SLACK_MINUTES,
        after=admission_kustomization if first else None)
    manifests_kustomization = _flux_kustomization(
        # wait: ready once every probe Job has proven its pool (they give up after DEADLINE_SECONDS).
        plan, "gpu-manifests", "gitops/manifests", math.ceil(probes.DEADLINE_SECONDS / 60) + SLACK_MINUTES,
        after=release_kustomization)
    release_config = _kustomization(
        [f"../../{f}" for f in early] + ["chart-source.yaml", "helm-release.yaml"],
        configMapGenerator=[{
            "name": VALUES_CONFIGMAP,
            "namespace": namespace,
            # Outside the kustomization's folder: Flux allows it (it confines loads to the source artifact), plain
            # `kubectl kustomize` needs --load-restrictor=LoadRestrictionsNone.
            "files": [f"{VALUES_KEY}=../../values.yaml"],
            "options": {"labels": dict(labels)},
        }],
        # The hash suffix kustomize gives the ConfigMap reaches the HelmRelease, so changed values change the release.
        configurations=["kustomizeconfig.yaml"],
    )
    name_reference = {"nameReference": [{
        "kind": "ConfigMap", "version": "v1",
        "fieldSpecs": [{"path": "spec/valuesFrom/name", "kind": "HelmRelease"}],
    }]}
    notes = [f"Flux renders the chart like: {helm_template_command(plan, source)}",
             f"timeout {release_minutes}m: helm-controller waits for the ClusterPolicy, i.e. for the driver roll-out "
             "(see rollout_minutes in gpuconf/render/gitops.py)."]
    extra: list[GitopsFile] = []
    kustomizations = [*([admission_kustomization] if first else []), release_kustomization, manifests_kustomization]
    if nvlink.release(plan):  # the DRA driver's release after the operator's, before the manifests
        dra_kustomization, extra = dra_flux_files(plan, release_kustomization)
        manifests_kustomization["spec"]["dependsOn"].append({"name": dra_kustomization["metadata"]["name"]})
        kustomizations.insert(kustomizations.index(manifests_kustomization), dra_kustomization)
    verified = [_oci_folder(plan)] if plan.intent.spec.delivery.oci_artifact is not None else []
    return [
        *verified,
        GitopsFile("gitops/flux-kustomizations.yaml", kustomizations),
        GitopsFile("gitops/kustomization.yaml", config=_kustomization(
            [f.path.removeprefix("gitops/") for f in verified] + ["flux-kustomizations.yaml"])),
        *([GitopsFile("gitops/admission/kustomization.yaml", config=_kustomization([f"../../{f}" for f in first]))]
          if first else []),
        *extra,
        GitopsFile("gitops/release/chart-source.yaml", [chart_source_doc]),
        GitopsFile("gitops/release/helm-release.yaml", [release], notes=notes),
        GitopsFile("gitops/release/kustomization.yaml", config=release_config),
        GitopsFile("gitops/release/kustomizeconfig.yaml", config=name_reference),
        GitopsFile("gitops/manifests/kustomization.yaml", config=_kustomization([f"../../{f}" for f in late])),
    ]


# --- the DRA driver's release beside the operator's (NVLink pools: render/nvlink.py) -----------------------


def dra_argocd_files(plan: P.Plan, project: str, revision: str, folder: str) -> list:
    """The Argo CD Application of the DRA driver release (sync wave 1: after the operator's chart, whose driver and GPU
    Feature Discovery its plugin needs, before the manifests, whose ComputeDomains need its CRD)."""
    from .admission import RELEASE_FILE

    delivery = plan.intent.spec.delivery
    repo = nvlink.chart_repository(plan).removeprefix("oci://")
    meta = metadata(plan, object_name(plan.name, nvlink.CHART), namespace_of(plan), {nvlink.RELEASE_LABEL: nvlink.CHART})
    meta["annotations"] = {"argocd.argoproj.io/sync-wave": "1",
                           "argocd.argoproj.io/compare-options": "ServerSideDiff=true"}
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, "spec": {
        "project": project,
        "destination": _destination(plan, nvlink.namespace(plan)),
        "sources": [
            {"repoURL": repo, "chart": nvlink.CHART, "targetRevision": nvlink.settings(plan).chart_version,
             "helm": {"releaseName": nvlink.RELEASE_NAME, "valueFiles": [f"$values/{folder}/dra-driver/values.yaml"],
                      "kubeVersion": plan.intent.spec.cluster.kubernetes_version, "skipCrds": False}},
            {"repoURL": delivery.repoURL, "targetRevision": revision, "ref": "values"},
            # The admission Policy of the release's namespace, in sync wave -1: Ready before the chart's pods.
            *([{"repoURL": delivery.repoURL, "targetRevision": revision, "path": f"{folder}/manifests",
                "directory": {"include": RELEASE_FILE.removeprefix("manifests/")}}]
              if admission_first(plan) and nvlink.namespace(plan) != plan.namespace else []),
        ],
        "syncPolicy": {
            "automated": {"prune": True, "selfHeal": True},
            "managedNamespaceMetadata": {"labels": {**common_labels(plan),
                                                    "pod-security.kubernetes.io/enforce": "privileged"}},
            "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"],
            "retry": RETRY,
        },
    }}
    if nvlink.namespace(plan) == plan.namespace:  # the operator's Application creates and labels it
        del app["spec"]["syncPolicy"]["managedNamespaceMetadata"]
        app["spec"]["syncPolicy"]["syncOptions"].remove("CreateNamespace=true")
    notes = [f"Argo CD renders the chart like: {nvlink.helm_template_command(plan)}",
             f"Register {repo} in Argo CD as a Helm repository with enableOCI: \"true\"."]
    return [GitopsFile("gitops/application-dra-driver.yaml", [app], notes=notes)]


def dra_flux_files(plan: P.Plan, release_kustomization: dict) -> tuple[dict, list]:
    """The Flux Kustomization of the DRA driver release (dependsOn the operator's), and its folder: the chart's
    OCIRepository, the HelmRelease, the values ConfigMap."""
    ns = namespace_of(plan)
    part = {nvlink.RELEASE_LABEL: nvlink.CHART}
    name = f"{nvlink.CHART}-chart"
    source = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
              "metadata": metadata(plan, name, ns, part),
              "spec": {"interval": "12h", "url": f"{nvlink.chart_repository(plan)}/{nvlink.CHART}",
                       "ref": {"tag": nvlink.settings(plan).chart_version},
                       "layerSelector": {"mediaType": HELM_CHART_MEDIA_TYPE, "operation": "copy"}}}
    values_map = f"{nvlink.CHART}-values"
    helm_release = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                    "metadata": metadata(plan, nvlink.RELEASE_NAME, ns, part),
                    "spec": {"chartRef": {"kind": "OCIRepository", "name": name, "namespace": ns},
                             "interval": "10m", "releaseName": nvlink.RELEASE_NAME,
                             "targetNamespace": nvlink.namespace(plan), "storageNamespace": nvlink.namespace(plan),
                             "valuesFrom": [{"kind": "ConfigMap", "name": values_map, "valuesKey": "values.yaml"}],
                             "timeout": "10m",
                             "install": {"crds": "CreateReplace", "remediation": {"retries": 3}},
                             "upgrade": {"crds": "CreateReplace",
                                         "remediation": {"retries": 0, "remediateLastFailure": False}}}}
    kustomization = _flux_kustomization(plan, nvlink.CHART, "gitops/dra-driver", 10 + SLACK_MINUTES,
                                        after=release_kustomization)
    kustomization["metadata"]["labels"].update(part)
    config = _kustomization(["chart-source.yaml", "helm-release.yaml"], configMapGenerator=[{
        "name": values_map, "namespace": ns, "files": ["values.yaml=../../dra-driver/values.yaml"],
        "options": {"labels": common_labels(plan)}}], configurations=["kustomizeconfig.yaml"])
    name_reference = {"nameReference": [{"kind": "ConfigMap", "version": "v1",
                                         "fieldSpecs": [{"path": "spec/valuesFrom/name", "kind": "HelmRelease"}]}]}
    notes = [f"Flux renders the chart like: {nvlink.helm_template_command(plan)}"]
    return kustomization, [
        GitopsFile("gitops/dra-driver/chart-source.yaml", [source]),
        GitopsFile("gitops/dra-driver/helm-release.yaml", [helm_release], notes=notes),
        GitopsFile("gitops/dra-driver/kustomization.yaml", config=config),
        GitopsFile("gitops/dra-driver/kustomizeconfig.yaml", config=name_reference),
    ]


def _flux_kustomization(plan: P.Plan, suffix: str, sub: str, timeout_minutes: int, retry: str = "2m",
                        after: dict | None = None) -> dict:
    """A Flux Kustomization <cluster>-<suffix> that applies the folder's <sub> and waits for it, after another."""
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": metadata(plan, object_name(plan.name, suffix), namespace_of(plan)),
        "spec": {
            **({"dependsOn": [{"name": after["metadata"]["name"]}]} if after is not None else {}),
            "interval": "10m",
            "retryInterval": retry,
            "timeout": f"{timeout_minutes}m",
            "path": _flux_path(plan, sub),
            "prune": True,
            "wait": True,
            "sourceRef": folder_source(plan),
        },
    }


def _kustomization(resources: list[str], **extra: object) -> dict:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources,
            **extra}


# --- checks the CRD schemas cannot make ---------------------------------------------------------------------------


def problems(documents: dict[str, list[dict]]) -> list[str]:
    """The CEL rules of the Flux CRDs that JSON Schema cannot express, and gpuconf's own promises (path -> docs)."""
    out = _project_problems(documents)
    for path, docs in documents.items():
        for doc in docs:
            spec = doc.get("spec", {})
            where = f"{path}: {doc['kind']}/{doc['metadata']['name']}"
            if doc["kind"] == "HelmRelease":
                if ("chart" in spec) == ("chartRef" in spec):
                    out.append(f"{where}: either chart or chartRef must be set")  # the CRD's CEL rule
                if spec.get("upgrade", {}).get("remediation", {}).get("retries") != 0:
                    out.append(f"{where}: a failed upgrade must not be rolled back (A6.20)")
            if doc["kind"] == "Application" and "ServerSideApply=true" not in spec["syncPolicy"]["syncOptions"]:
                out.append(f"{where}: Applications apply server-side (A6.18)")
    return out


def _project_problems(documents: dict[str, list[dict]]) -> list[str]:
    """An AppProject gpuconf renders admits every Application that names it, as Argo CD decides (argo-cd v3.5.1
    app_project_types.go: ValidateProject refuses repeated destinations and repositories; IsSourcePermitted and
    isDestinationMatched match each source's repoURL and the destination's server or name and namespace): gpuconf
    writes exact values, no globs, so each must be listed as it is."""
    projects = {d["metadata"]["name"]: (path, d) for path, docs in documents.items() for d in docs
                if d["kind"] == "AppProject"}
    out = []
    for name, (path, project) in projects.items():
        spec = project["spec"]
        keys = [(d.get("server") or d.get("name"), d.get("namespace", "")) for d in spec["destinations"]]
        if len(set(keys)) != len(keys) or len(set(spec["sourceRepos"])) != len(spec["sourceRepos"]):
            out.append(f"{path}: AppProject/{name}: a destination or repository is listed twice")
    for path, docs in documents.items():
        for app in docs:
            if app["kind"] != "Application" or app["spec"]["project"] not in projects:
                continue
            where = f"{path}: Application/{app['metadata']['name']}"
            spec = projects[app["spec"]["project"]][1]["spec"]
            sources = app["spec"].get("sources") or [app["spec"]["source"]]
            out += [f"{where}: project {app['spec']['project']} does not admit repository {s['repoURL']}"
                    for s in sources if s["repoURL"] not in spec["sourceRepos"]]
            dest = app["spec"]["destination"]
            if {k: v for k, v in dest.items()} not in spec["destinations"]:
                out.append(f"{where}: project {app['spec']['project']} does not admit destination {dest}")
    return out

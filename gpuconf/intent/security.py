"""The intent's supply-chain settings: the admission policy rendered with the cluster's files (spec.security), and
what the GitOps engine verifies before it syncs (spec.delivery.signedCommits for Argo CD, spec.delivery.ociArtifact
for Flux).

Split from gpuconf/intent/model.py, which imports these models from here (their names stay importable from there)."""

from typing import Annotated, List, Literal, Optional

from pydantic import Field

from .fieldtypes import K8sLabelName, K8sObjectName, NonEmpty
from .strict import Strict

#: The most keys an intent names for signed commits.
MAX_KEYS = 64


class Security(Strict):
    """Supply-chain controls rendered with the cluster's files."""

    admission: Optional[Literal["kyverno"]] = Field(
        None, description="Render a Kyverno Policy (kyverno.io/v1) that admits, in the operator's namespace, only "
                          "Pods whose images come from operator.registry, or exactly the images of operator.imageLock "
                          "pinned by digest when a lock is given.", examples=["kyverno"])
    kyverno_namespace: K8sLabelName = Field(
        "kyverno", description="The namespace Kyverno runs in (its chart's README installs it into kyverno). Kyverno "
                               "skips its own namespace, so the operator's namespace may not be this one.",
        examples=["kyverno"])
    previous_image_lock: Optional[NonEmpty] = Field(
        None, description="The image lock this change replaces, kept as a file (relative to this one) for one sync: "
                          "the policy admits its digests as well as operator.imageLock's, so that Pods of the "
                          "deployed digests that restart while the sync moves them are not refused. Remove it once "
                          "the cluster runs the new digests.", examples=["images.lock.previous.yaml"])


# --- verification at sync time (spec.delivery) ----------------------------------------------------------------

GpgKeyId = Annotated[str, Field(
    pattern=r"^([0-9A-Fa-f]{16}|[0-9A-Fa-f]{40})$",
    description="A GnuPG key ID (16 hexadecimal digits) or fingerprint (40), as `gpg --list-keys` prints it.",
    examples=["4AEE18F83AFDEB23"])]


class SignedCommits(Strict):
    """Argo CD syncs only Git commits signed with one of these GnuPG keys (an AppProject of the cluster's own)."""

    keys: List[GpgKeyId] = Field(
        min_length=1, max_length=MAX_KEYS, description="The IDs of the keys CI signs its commits with; their public "
        "keys go into Argo CD's ConfigMap argocd-gpg-keys-cm.", examples=[["4AEE18F83AFDEB23"]])
    mode: Literal["head", "strict"] = Field(
        "head", description="head: the commit (or annotated tag) synced must be signed, as the AppProject's "
                            "spec.signatureKeys requires (any Argo CD since 1.7); strict: it and every commit before "
                            "it, back to a seal commit (spec.sourceIntegrity, Argo CD 3.5 or later).")


class OciArtifact(Strict):
    """Flux pulls the cluster's folder as an OCI artifact and verifies its cosign signature before applying it."""

    url: Annotated[str, Field(pattern=r"^oci://[^\s/]+(/[^\s]*)?[^\s/]$")] = Field(
        description="The artifact's repository, without a tag: CI pushes the cluster's folder there "
                    "(flux push artifact) and signs it (cosign sign).",
        examples=["oci://registry.enclave.internal/gitops/secure-enclave"])
    tag: Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")] = Field(
        "latest", description="The tag Flux follows.", examples=["main"])
    cosign_key_secret: K8sObjectName = Field(
        description="The Secret in the Flux namespace whose keys ending in .pub hold the cosign public keys the "
                    "artifact must be signed with.", examples=["cosign-public-keys"])
    pull_secret: Optional[K8sObjectName] = Field(
        None, description="A docker-registry Secret in the Flux namespace with the registry's credentials, if it "
                          "needs them.", examples=["gitops-registry"])

"""The intent's supply-chain settings (spec.security): the admission policy rendered with the cluster's files.

Split from gpuconf/intent/model.py, which imports Security from here (its names stay importable from there)."""

from typing import Literal, Optional

from pydantic import Field

from .fieldtypes import K8sLabelName, NonEmpty
from .strict import Strict


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

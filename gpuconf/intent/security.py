"""The intent's supply-chain settings (spec.security): the admission policy rendered with the cluster's files.

Split from gpuconf/intent/model.py, which imports Security from here (its names stay importable from there)."""

from typing import Literal, Optional

from pydantic import Field

from .strict import Strict


class Security(Strict):
    """Supply-chain controls rendered with the cluster's files."""

    admission: Optional[Literal["kyverno"]] = Field(
        None, description="Render a Kyverno Policy (kyverno.io/v1) that admits, in the operator's namespace, only "
                          "Pods whose images come from operator.registry, or exactly the images of operator.imageLock "
                          "pinned by digest when a lock is given.", examples=["kyverno"])

"""String types the intent's models share (gpuconf/intent/model.py and the modules it is split into)."""

from typing import Annotated

from pydantic import Field, StringConstraints

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
K8sLabelName = Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                                    description="A DNS-1123 label: lower-case alphanumerics and '-'.")]
K8sObjectName = Annotated[str, Field(
    min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    description="A DNS-1123 subdomain: lower-case alphanumerics, '-' and '.'.")]

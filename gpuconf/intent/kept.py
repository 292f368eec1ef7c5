"""The config names an adopted installation keeps (`sharingProfiles.<name>.keepNames`, written by `gpuconf import`):
the device-plugin config key and the mig-parted config name its nodes' labels select, kept while gpuconf renders
exactly the content the nodes run, so that the first sync relabels no node."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from .strict import Strict


class KeptName(Strict):
    """A config name the nodes already carry, kept while gpuconf's content for it is the content the nodes run."""

    name: str = Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
                      description="The name the nodes' label selects (a ConfigMap key and a label value).",
                      examples=["default"])
    content: str = Field(pattern=r"^[0-9a-f]{8}$",
                         description="The 8 hex digits of the hash of the content gpuconf renders for it (the suffix of "
                                     "the key gpuconf would use). While the rendered content hashes to it, the name is "
                                     "kept; once the content changes, the key changes too, because the device plugin "
                                     "does not reload edited content under an unchanged key.",
                         examples=["c0fcc874"])


class KeptNames(Strict):
    """Config names of an adopted installation, kept so that the first sync relabels no node."""

    device_plugin: Optional[KeptName] = Field(None, description="The device-plugin config key "
                                                                "(nvidia.com/device-plugin.config) of the profile's pools.")
    mig: Optional[KeptName] = Field(None, description="The mig-parted config name (nvidia.com/mig.config) of the "
                                                      "profile's MIG layout.")

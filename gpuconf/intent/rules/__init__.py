"""Domain rules: checks over the whole typed intent, each with a stable code, run together so all findings show.

Each module of the package registers its domain's rules into base.RULES as it loads, and the rules run in that order:
the order below is the order of the findings that `check` returns (the lock rules read the findings before them, so
they come last). base imports no rule module.
"""

from __future__ import annotations

from .base import RULES, Context, Rule, check, rule, rule_codes  # noqa: F401  - the registry, as gpuconf.intent.rules

from . import selection  # noqa: F401  - names and pool selection (GC301-GC304, GC317, GC320, GC344)
from . import sharing  # noqa: F401  - sharing profiles and MIG (GC305-GC313)
from . import teams  # noqa: F401  - quotas and access (GC314, GC315, GC322, GC330)
from . import kueue  # noqa: F401  - team queueing with Kueue (GC331, GC332, GC336, GC360-GC366)
from . import registry  # noqa: F401  - the registry mirror and URLs (GC353, GC354)
from . import overrides  # noqa: F401  - the chart version and the overrides (GC318, GC319, GC326, GC341-GC343)
from . import driver  # noqa: F401  - the driver and the container runtime (GC316, GC321, GC323, GC324, GC327, GC329)
from . import rendered  # noqa: F401  - what the rendered chart makes of the values (GC350-GC352)
from . import platforms  # noqa: F401  - GKE, EKS and Karpenter, AKS, OpenShift (GC337, GC345-GC348, GC380-GC388)
from . import dra  # noqa: F401  - the DRA stack (GC430-GC437)
from . import nvlink  # noqa: F401  - NVLink pools and their ComputeDomains (GC470-GC476)
from . import arch  # noqa: F401  - arm64 (Grace) pools: driver and operand images for arm64 (GC480, GC481)
from . import transitions  # noqa: F401  - against the deployed folder (GC370-GC372)
from . import hazards  # noqa: F401  - the known hazards and the chart's fail rules (GC460-GC468)
from . import locks  # noqa: F401  - the image lock and admission, last: they read the earlier findings (GC450-GC452)

"""spec.security.admission: kyverno: a Kyverno Policy that admits, in the operator's namespace, only the images the
installation is meant to pull.

Shape (kyverno/kyverno v1.19.0; shared/reference/provenance/facts.md §9): a namespaced `kyverno.io/v1` Policy applies
only in its own namespace; `validate.failureAction: Enforce` refuses what the pattern does not match; the pattern
checks `spec.containers[].image`, and through the conditional anchor `=(...)` the init and ephemeral containers when a
Pod has them (test/conformance/chainsaw/validate/clusterpolicy/cornercases/ephemeral-containers/policy.yaml). In a
pattern string `|` separates alternatives and `*` matches any run of characters, `/` included (ext/wildcard). With
operator.imageLock the alternatives are exactly the images the render pulls, each `<reference>@sha256:<digest>` (a
tag or another digest of the same image is refused); without one, anything under the mirror, `<registry>/*`.

Kyverno deprecates the kyverno.io Policy kinds in favour of policies.kyverno.io (planned removal in 1.20); the
Policy is what its v1.19.0 CRD still serves, and what gpuconf checks against (schemas/crds/kyverno.io_policy_v1.json).
"""

from __future__ import annotations

from .. import plan as P

POLICY_NAME = "gpuconf-operator-images"
RULE_NAME = "images-from-the-mirror"


def allowed_images(plan: P.Plan) -> list[str]:
    """The pattern's alternatives: every image the render pulls pinned by the lock, else the mirror's wildcard."""
    if plan.image_lock is None:
        return [f"{plan.intent.spec.operator.registry}/*"]
    from ..output.images import images
    from . import nodes, probes
    from .values import build_values

    merged = build_values(plan).merged()
    documents = {"drivers": nodes.nvidia_drivers(plan, merged), "probes": probes.render(plan)}
    return images(plan, merged, documents).references


def render(plan: P.Plan) -> list[dict]:
    """The Policy, when spec.security.admission is kyverno (validation makes sure a mirror or a lock is set)."""
    if plan.intent.spec.admission != "kyverno":
        return []
    from . import metadata

    image = " | ".join(allowed_images(plan))
    containers = [{"image": image}]
    what = "pinned by digest in the image lock" if plan.image_lock is not None else \
        f"from the mirror {plan.intent.spec.operator.registry}"
    return [{
        "apiVersion": "kyverno.io/v1",
        "kind": "Policy",
        "metadata": metadata(plan, POLICY_NAME, plan.namespace),
        "spec": {
            "rules": [{
                "name": RULE_NAME,
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "validate": {
                    "failureAction": "Enforce",
                    "message": f"gpuconf admits only the GPU Operator's images {what} in namespace {plan.namespace}",
                    "pattern": {"spec": {"containers": containers, "=(initContainers)": containers,
                                         "=(ephemeralContainers)": containers}},
                },
            }],
        },
    }]

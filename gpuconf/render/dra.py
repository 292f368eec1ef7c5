"""The DRA stack's objects (spec.cluster.allocation: dra): a DeviceClass per pool and per MIG profile, and the
ResourceClaimTemplates teams (and the acceptance probes) claim devices with.

Shapes (resource.k8s.io/v1, facts §1.2, K-api): a request is `name` plus `exactly{deviceClassName, allocationMode,
count}`; vendor settings go to `devices.config[].opaque{driver, parameters}`, which the API server does not check, so
gpuconf writes only the GpuConfig fields the driver knows (DRV api/.../sharing.go): `sharing.strategy` TimeSlicing or
MPS, MPS with `mpsConfig.defaultActiveThreadPercentage`.
"""

from __future__ import annotations

from .. import dra
from .. import plan as P
from . import metadata
from .names import CLAIM_REQUEST as REQUEST, TEAM_LABEL, probe_template_name

API = "resource.k8s.io/v1"
#: The request names of a claim on several MIG devices of one GPU are the profiles, as object-name words.
SAME_GPU_SUFFIX = "-same-gpu"


def layout(pool: P.PoolPlan) -> dict[str, int]:
    """The pool's MIG layout per GPU ({} when the pool does not use MIG)."""
    return P.mig_layout(pool.profile, pool.model) or {}


def device_classes(plan: P.Plan) -> list[dict]:
    """Per pool gpuconf-<pool>; per MIG profile of a MIG pool gpuconf-<pool>-<profile>."""
    docs = []
    for pool in plan.pools:
        profiles = layout(pool)
        docs.append(_device_class(plan, pool, dra.class_name(pool.name),
                                  dra.selector(pool.model.id, profiles if profiles else None), None))
        for profile in sorted(profiles):
            docs.append(_device_class(plan, pool, dra.class_name(pool.name, profile),
                                      dra.selector(pool.model.id, profile), profile))
    return docs


def _device_class(plan: P.Plan, pool: P.PoolPlan, name: str, expression: str, profile: str | None) -> dict:
    what = f"MIG {profile} instances" if profile else ("MIG instances" if layout(pool) else "GPUs")
    meta = metadata(plan, name, labels={P.POOL_LABEL: pool.name})
    meta["annotations"] = {"gpuconf.dev/selects": f"the {what} of pool {pool.name} ({pool.model.name})"}
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": meta,
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def sharing_config(profile) -> dict | None:
    """The driver's GpuConfig for a time-slicing or MPS profile, None for whole GPUs and MIG."""
    if profile.mig is not None:
        return None
    if profile.mps is not None:
        # k8s-device-plugin gives each of N MPS clients 100/N % of the threads (nvidia-formats-facts: MPS); the DRA
        # driver's default for every client of a claim is the same knob.
        sharing = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 100 // profile.mps.replicas}}
    elif profile.time_slicing is not None:
        sharing = {"strategy": "TimeSlicing"}
    else:
        return None
    return {"apiVersion": dra.CONFIG_API, "kind": "GpuConfig", "sharing": sharing}


def _exactly(device_class: str, count: int = 1) -> dict:
    return {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}


def claim_spec(pool: P.PoolPlan, profile: str | None = None, device_class: str | None = None) -> dict:
    """`spec` of a ResourceClaim for one device of the pool (or of one of its MIG profiles), with its sharing."""
    device_class = device_class or dra.class_name(pool.name, profile)
    devices: dict = {"requests": [{"name": REQUEST, "exactly": _exactly(device_class)}]}
    config = sharing_config(pool.profile)
    if config is not None:
        devices["config"] = [{"requests": [REQUEST], "opaque": {"driver": dra.DRIVER, "parameters": config}}]
    return {"devices": devices}


def same_gpu_spec(pool: P.PoolPlan, profiles: list[str]) -> dict:
    """`spec` of a claim on one instance of each profile, all on one GPU (matchAttribute on the parent's UUID)."""
    requests = [{"name": dra.profile_word(p).replace(".", "-"), "exactly": _exactly(dra.class_name(pool.name, p))}
                for p in profiles]
    return {"devices": {"requests": requests,
                        "constraints": [{"requests": [r["name"] for r in requests],
                                         "matchAttribute": f"{dra.DOMAIN}/parentUUID"}]}}


def _template(plan: P.Plan, name: str, namespace: str, pool: str, spec: dict, labels: dict | None = None) -> dict:
    meta = metadata(plan, name, namespace, {P.POOL_LABEL: pool, **(labels or {})})
    # The claims made from the template carry the pool label (ResourceClaimTemplateSpec.metadata is copied into
    # each ResourceClaim), so `kubectl get resourceclaims -l gpuconf.dev/pool=POOL` finds a pool's claims.
    return {"apiVersion": API, "kind": "ResourceClaimTemplate", "metadata": meta,
            "spec": {"metadata": {"labels": {P.POOL_LABEL: pool}}, "spec": spec}}


def claim_templates(plan: P.Plan) -> list[dict]:
    """In every namespace of a team, per pool of its quota: one device of the pool (of each MIG profile its quota
    names, and those profiles on one GPU when it names several)."""
    docs = []
    for team in plan.intent.spec.teams:
        for pool_name, value in team.quota.items():
            pool = plan.pool_by_name[pool_name]
            named = sorted(p for p in value if p in layout(pool)) if isinstance(value, dict) else []
            specs = {dra.class_name(pool.name): claim_spec(pool)} if not layout(pool) else {
                dra.class_name(pool.name, p): claim_spec(pool, p) for p in named}
            if len(named) > 1:
                specs[dra.class_name(pool.name) + SAME_GPU_SUFFIX] = same_gpu_spec(pool, named)
            for ns in team.namespaces:
                docs += [_template(plan, name, ns, pool.name, spec, {TEAM_LABEL: team.name})
                         for name, spec in specs.items()]
    return docs


def probe_templates(plan: P.Plan) -> list[dict]:
    """Per pool, in the operator's namespace: the probe's claim on one device of the class that counts the pool's
    first resource (what the Kueue acceptance queue covers for the pool)."""
    return [_template(plan, probe_template_name(pool), plan.namespace, pool.name,
                      claim_spec(pool, device_class=dra.class_of_key(pool.resource))) for pool in plan.pools]


def render(plan: P.Plan) -> list[dict]:
    """Every DRA object, or none when the intent keeps the device plugin."""
    if not dra.enabled(plan.intent):
        return []
    return [*device_classes(plan), *claim_templates(plan), *probe_templates(plan)]


#: Where NVIDIA's nvidia-mig-manager.service (NVIDIA/mig-parted, deployments/systemd) finds its files: its service.sh
#: reads the config file from MIG_PARTED_CONFIG_FILE (default: a config.yaml it regenerates from the hardware on every
#: boot) and the config to apply from MIG_PARTED_SELECTED_CONFIG, both settable in a systemd drop-in as its
#: override.conf does.
HOST_MIG_CONFIG = "/etc/nvidia-mig-manager/gpuconf-config.yaml"
HOST_MIG_DROP_IN = "/etc/systemd/system/nvidia-mig-manager.service.d/gpuconf.conf"


def host_mig_files(plan: P.Plan) -> dict[str, str]:
    """`migPartitions: external`: the mig-parted config the device-plugin stack's MIG Manager would read (the same
    file), for the hosts, and per MIG pool the nvidia-mig-manager.service drop-in that applies the pool's layout at
    boot, before the kubelet and so before the DRA driver's plugin publishes the instances. Empty otherwise."""
    from ..emit import dump
    from .sharing import mig_parted_config

    settings = plan.intent.spec.cluster.dra
    if not dra.enabled(plan.intent) or settings is None or settings.mig_partitions != "external":
        return {}
    pools = [p for p in plan.pools if layout(p)]
    if not pools:
        return {}
    out = {"mig-parted-config.yaml": (f"# Copy to {HOST_MIG_CONFIG} on every node of pool(s) "
                                      f"{', '.join(p.name for p in pools)}; the pool's <pool>.mig-manager.conf "
                                      "selects its layout.\n" + dump(mig_parted_config(plan), top=True))}
    for pool in pools:
        out[f"{pool.name}.mig-manager.conf"] = (
            f"# nvidia-mig-manager.service drop-in for pool {pool.name}: copy to {HOST_MIG_DROP_IN}, with\n"
            f"# mig-parted-config.yaml at {HOST_MIG_CONFIG}, then `systemctl daemon-reload && systemctl restart "
            "nvidia-mig-manager` (or reboot).\n"
            "# The service (NVIDIA/mig-parted deployments/systemd) applies the layout at boot; the DRA driver publishes\n"
            "# the instances it finds when its plugin starts, so restart the plugin's pod after a change.\n"
            "[Service]\n"
            f'Environment="MIG_PARTED_CONFIG_FILE={HOST_MIG_CONFIG}"\n'
            f'Environment="MIG_PARTED_SELECTED_CONFIG={pool.mig_key}"\n')
    return out

"""plan.py's derived facts, exactly: the resource names and counts each kind of sharing advertises under each MIG
strategy, the device-plugin config, labels, tolerations, drivers, upgrade waves and team queue rows."""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest

HEAD = """\
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: lab
spec:
  cluster:
    kubernetesVersion: "1.33"
{cluster}  operator:
    chartVersion: v26.7.0
{rest}"""


def intent(rest: str, cluster: str = ""):
    """A validated intent: `rest` is the text of spec after operator (driver, sharingProfiles, pools, ...)."""
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = HEAD.format(cluster=textwrap.indent(cluster, "    "), rest=textwrap.indent(rest, "  "))
    result = validate_document(load_text(text, "lab.yaml"))
    assert result.ok, [str(f) for f in result.findings]
    return result.intent


def plan_of(rest: str, cluster: str = ""):
    from gpuconf import plan as P

    return P.build(intent(rest, cluster), "lab.yaml")


def pool(name: str, gpu: str = "H100-80GB", sharing: str | None = None, gpus: int = 8, nodes: int = 2,
         extra: str = "") -> str:
    lines = [f"- name: {name}", f"  gpu: {gpu}", f"  gpusPerNode: {gpus}", f"  nodes: {nodes}",
             "  match:", f"    hostname: ^{name}-"]
    if sharing:
        lines.append(f"  sharing: {sharing}")
    return "\n".join(lines) + ("\n" + textwrap.indent(textwrap.dedent(extra), "  ") if extra else "") + "\n"


def pools(*items: str) -> str:
    return "pools:\n" + textwrap.indent("".join(items), "  ")


MIG_TS = """\
sharingProfiles:
  sliced:
    mig:
      layout: {"3g.40gb": 1, "1g.10gb": 4}
    timeSlicing:
      replicas: 3
      renameByDefault: %s
  uniform:
    mig:
      layout: {"1g.10gb": 7}
    timeSlicing:
      replicas: 2
      renameByDefault: %s
"""


# --- what a pool advertises ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rename", [False, True])
def test_mig_with_time_slicing_under_the_mixed_strategy_advertises_each_profile_times_the_replicas(rename):
    plan = plan_of(MIG_TS % (str(rename).lower(), "false") + pools(pool("a", sharing="sliced")),
                   cluster="migStrategy: mixed\n")
    assert plan.strategy == "mixed"
    suffix = ".shared" if rename else ""
    (a,) = plan.pools
    assert dict(a.capacity.per_node) == {f"nvidia.com/mig-3g.40gb{suffix}": 1 * 8 * 3,
                                         f"nvidia.com/mig-1g.10gb{suffix}": 4 * 8 * 3}
    assert a.capacity.nodes == 2 and a.capacity.total(f"nvidia.com/mig-1g.10gb{suffix}") == 4 * 8 * 3 * 2
    assert a.capacity.total("nvidia.com/gpu") == 0
    config = plan.device_plugin_configs[a.device_plugin_key]
    assert config == {"version": "v1", "sharing": {"timeSlicing": {
        "renameByDefault": rename, "failRequestsGreaterThanOne": False,
        "resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 3},
                      {"name": "nvidia.com/mig-3g.40gb", "replicas": 3}]}}}


@pytest.mark.parametrize("rename", [False, True])
def test_mig_with_time_slicing_under_the_single_strategy_advertises_whole_gpu_names(rename):
    plan = plan_of(MIG_TS % ("false", str(rename).lower()) + pools(pool("u", sharing="uniform", gpus=4, nodes=3)))
    assert plan.strategy == "single"
    (u,) = plan.pools
    name = "nvidia.com/gpu.shared" if rename else "nvidia.com/gpu"
    assert dict(u.capacity.per_node) == {name: 7 * 4 * 2}
    assert u.resource == name
    config = plan.device_plugin_configs[u.device_plugin_key]
    assert config["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]


def test_plain_mig_under_both_strategies():
    text = textwrap.dedent("""\
    sharingProfiles:
      mixed-layout:
        mig:
          layout: {"3g.40gb": 1, "1g.10gb": 2}
    """) + pools(pool("m", sharing="mixed-layout", gpus=2))
    mixed = plan_of(text)
    assert mixed.strategy == "mixed"
    assert dict(mixed.pools[0].capacity.per_node) == {"nvidia.com/mig-3g.40gb": 2, "nvidia.com/mig-1g.10gb": 4}
    assert mixed.pools[0].resource == "nvidia.com/mig-1g.10gb"  # the first name in sorted order
    assert mixed.device_plugin_configs[mixed.pools[0].device_plugin_key] == {"version": "v1"}
    from gpuconf import plan as P

    it = mixed.intent  # validation refuses single for this layout (GC313); the capacity it would mean:
    assert dict(P.pool_capacity(it, it.spec.pools[0], "single").per_node) == {"nvidia.com/gpu": 6}
    assert dict(P.pool_capacity(it, it.spec.pools[0]).per_node) == dict(mixed.pools[0].capacity.per_node)


@pytest.mark.parametrize(("profile", "per_node"), [
    ("mps:\n  replicas: 4\n", {"nvidia.com/gpu.shared": 32}),
    ("mps:\n  replicas: 4\n  renameByDefault: false\n", {"nvidia.com/gpu": 32}),
    ("timeSlicing:\n  replicas: 3\n", {"nvidia.com/gpu": 24}),
    ("timeSlicing:\n  replicas: 3\n  renameByDefault: true\n", {"nvidia.com/gpu.shared": 24}),
    ("exclusive: {}\n", {"nvidia.com/gpu": 8}),
])
def test_whole_gpu_sharing_advertises_gpus_times_replicas(profile, per_node):
    text = "sharingProfiles:\n  p:\n" + textwrap.indent(profile, "    ") + pools(pool("a", sharing="p"))
    plan = plan_of(text)
    assert dict(plan.pools[0].capacity.per_node) == per_node
    assert plan.strategy is None


def test_the_device_plugin_config_of_each_sharing_kind():
    from gpuconf import plan as P
    from gpuconf.intent.model import SharingProfile

    mps = SharingProfile.model_validate({"mps": {"replicas": 5}})
    assert P.device_plugin_config(mps, [], None) == {"version": "v1", "sharing": {"mps": {
        "renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 5}]}}}
    ts = SharingProfile.model_validate({"timeSlicing": {"replicas": 2, "failRequestsGreaterThanOne": True}})
    assert P.device_plugin_config(ts, [{"1g.10gb": 1}], "mixed") == {"version": "v1", "sharing": {"timeSlicing": {
        "renameByDefault": False, "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}
    mig_ts = SharingProfile.model_validate({"mig": {"layout": {"1g.10gb+me": 1}}, "timeSlicing": {"replicas": 2}})
    names = [r["name"] for r in P.device_plugin_config(mig_ts, [{"2g.20gb": 1, "1g.10gb+me": 1}, {"1g.12gb": 2}],
                                                       "mixed")["sharing"]["timeSlicing"]["resources"]]
    assert names == ["nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-1g.12gb", "nvidia.com/mig-2g.20gb"]
    assert P.device_plugin_config(SharingProfile.model_validate({"exclusive": {}}), [], "mixed") == {"version": "v1"}


@pytest.mark.parametrize(("body", "kind"), [
    ({"exclusive": {}}, "exclusive"), ({"mps": {"replicas": 2}}, "mps"), ({"timeSlicing": {"replicas": 2}}, "time-slicing"),
    ({"mig": {"preset": "all-balanced"}}, "mig"),
    ({"mig": {"preset": "all-balanced"}, "timeSlicing": {"replicas": 2}}, "mig+time-slicing")])
def test_sharing_kind_names_each_profile(body, kind):
    from gpuconf import plan as P
    from gpuconf.intent.model import SharingProfile

    assert P.sharing_kind(SharingProfile.model_validate(body)) == kind


def test_mig_layouts_resolve_presets_and_only_on_mig_capable_models():
    from gpuconf import catalog
    from gpuconf import plan as P
    from gpuconf.intent.model import SharingProfile

    h100, l4 = catalog.gpu_model("H100-80GB"), catalog.gpu_model("L4")
    layout = SharingProfile.model_validate({"mig": {"layout": {"2g.20gb": 3}}})
    assert P.mig_layout(layout, h100) == {"2g.20gb": 3}
    assert P.mig_layout(layout, l4) is None and P.mig_layout(layout, None) is None and P.mig_layout(None, h100) is None
    assert P.mig_layout(SharingProfile.model_validate({"timeSlicing": {"replicas": 2}}), h100) is None
    preset = SharingProfile.model_validate({"mig": {"preset": "all-1g.10gb"}})
    assert P.mig_layout(preset, h100) == dict(catalog.mig_presets(h100)["all-1g.10gb"]) == {"1g.10gb": 7}
    assert P.mig_layout(SharingProfile.model_validate({"mig": {"preset": "all-9g.99gb"}}), h100) is None


def test_the_derived_strategy_is_single_only_when_every_mig_pool_is_uniform():
    base = textwrap.dedent("""\
    sharingProfiles:
      one: {mig: {layout: {"1g.10gb": 7}}}
      two: {mig: {layout: {"2g.20gb": 3}}}
      many: {mig: {layout: {"3g.40gb": 1, "1g.10gb": 4}}}
    """)
    assert plan_of(base + pools(pool("a", sharing="one"), pool("b", sharing="two"))).strategy == "single"
    assert plan_of(base + pools(pool("a", sharing="one"), pool("b", sharing="many"))).strategy == "mixed"
    assert plan_of(base + pools(pool("a", gpu="L4", sharing=None))).strategy is None
    assert plan_of(base + pools(pool("a", sharing="one")), cluster="migStrategy: mixed\n").strategy == "mixed"


# --- labels, config keys, tolerations, drivers -----------------------------------------------------------------


def test_config_keys_are_the_base_and_a_content_hash_within_63_characters():
    from gpuconf import plan as P

    content = {"version": "v1", "b": [1, 2]}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:8]
    assert P.config_key("ts-x4", content) == f"ts-x4-{digest}"
    assert P.config_key("ts-x4", {"b": [1, 2], "version": "v1"}) == f"ts-x4-{digest}"  # key order is no content
    assert P.config_key("a" * 53 + "-b" + "c" * 10, content) == "a" * 53 + "-" + digest  # cut at 54, "-" dropped
    assert len(P.config_key("x" * 80, content)) == 63


def test_pool_labels_and_mig_keys():
    from gpuconf import plan as P

    plan = plan_of(textwrap.dedent("""\
    sharingProfiles:
      sliced: {mig: {layout: {"1g.10gb": 7}}}
      x4: {timeSlicing: {replicas: 4}}
    """) + pools(pool("mig", sharing="sliced"), pool("ts", sharing="x4"), pool("l4", gpu="L4"),
                pool("whole", extra="driver:\n  preinstalled: true\n")))
    mig, ts, l4, whole = plan.pools
    assert mig.labels == {P.DEVICE_PLUGIN_LABEL: plan.default_device_plugin_key, P.MIG_LABEL: mig.mig_key,
                          P.POOL_LABEL: "mig"}
    assert list(mig.labels) == sorted(mig.labels)
    assert mig.mig_key.startswith("sliced-") and plan.mig_configs[mig.mig_key] == [{
        "device-filter": list(mig.model.pci_device_ids), "devices": "all", "mig-enabled": True,
        "mig-devices": {"1g.10gb": 7}}]
    assert plan.mig_configs[P.MIG_DISABLED] == [{"devices": "all", "mig-enabled": False}]
    assert ts.labels[P.DEVICE_PLUGIN_LABEL].startswith("x4-") and ts.mig_key == P.MIG_DISABLED
    assert l4.mig_key is None and P.MIG_LABEL not in l4.labels
    assert whole.driver == "preinstalled" and whole.labels[P.DRIVER_DEPLOY_LABEL] == "false"
    assert P.DRIVER_DEPLOY_LABEL not in mig.labels
    assert [p.index for p in plan.pools] == [0, 1, 2, 3]
    assert plan.per_pool_drivers is False and plan.pool_by_name["ts"] is ts


def test_tolerations_are_one_per_distinct_taint_in_sorted_order():
    from gpuconf import plan as P

    taints = "taints:\n  - {key: b.example/x, effect: NoSchedule}\n  - {key: a.example/y, value: v, effect: NoExecute}\n"
    plan = plan_of(pools(pool("a", extra=taints), pool("b", extra=taints),
                         pool("c", gpu="L4", extra="taints:\n  - {key: a.example/y, value: w, effect: NoExecute}\n")))
    assert plan.tolerations == (
        {"key": "a.example/y", "operator": "Equal", "value": "v", "effect": "NoExecute"},
        {"key": "a.example/y", "operator": "Equal", "value": "w", "effect": "NoExecute"},
        {"key": "b.example/x", "operator": "Exists", "effect": "NoSchedule"})
    assert plan.nfd_taints is True
    labelled = plan_of(pools(pool("a", extra="taints:\n  - {key: k, effect: NoSchedule}\n")).replace(
        "hostname: ^a-", "nodeLabels: {group: a}"))
    assert labelled.pools[0].nfd is False and labelled.nfd_taints is False
    assert P.toleration(labelled.pools[0].pool.taints[0]) == {"key": "k", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(("upstream", "registry", "expected"), [
    ("nvcr.io/nvidia", "mirror.example/nv/", "mirror.example/nv"),
    ("nvcr.io/nvidia/k8s", "mirror.example/nv", "mirror.example/nv/k8s"),
    ("nvcr.io/nvidia-other/x", "m.example", "m.example/-other/x"),
    ("registry.k8s.io/nfd/node-feature-discovery", "m.example", "m.example/nfd/node-feature-discovery"),
    ("nvcr.io/nvidia/k8s", None, "nvcr.io/nvidia/k8s"),
    ("nvcr.io/nvidia/k8s", "", "nvcr.io/nvidia/k8s"),
    ("", "m.example", ""),
])
def test_mirror_repository(upstream, registry, expected):
    from gpuconf import plan as P

    assert P.mirror_repository(upstream, registry) == expected


@pytest.mark.parametrize(("cluster", "driver", "preinstalled"), [
    ("distribution: gke\n", "", True),
    ("distribution: eks\n", "", True),
    ("distribution: eks\neks: {ami: bottlerocket}\n", "", True),
    ("distribution: eks\neks: {ami: ubuntu}\n", "", False),
    ("", "", False),
    ("distribution: gke\n", 'driver:\n  version: "580.126.20"\n', False),
    ("", "driver:\n  preinstalled: true\n", True),
    ("distribution: gke\n", "driver:\n  preinstalled: false\n", False),
])
def test_the_cluster_driver_is_preinstalled_as_said_else_by_version_else_by_platform(cluster, driver, preinstalled):
    from gpuconf import plan as P

    it = intent(driver + pools(pool("a")), cluster=cluster)
    assert P.cluster_preinstalled(it) is preinstalled
    assert P.pool_driver(it, it.spec.pools[0]) == ("preinstalled" if preinstalled else "cluster")


def test_eks_ami_defaults_to_al2023_and_is_none_off_eks():
    from gpuconf import plan as P

    assert P.eks_ami(intent(pools(pool("a")), cluster="distribution: eks\n")) == "al2023"
    assert P.eks_ami(intent(pools(pool("a")), cluster="distribution: eks\neks: {ami: ubuntu}\n")) == "ubuntu"
    assert P.eks_ami(intent(pools(pool("a")), cluster="distribution: gke\n")) is None


def test_a_pool_driver_is_its_pin_its_preinstalled_host_driver_or_the_clusters():
    from gpuconf import plan as P

    it = intent('driver:\n  version: "580.126.20"\n' + pools(
        pool("pinned", extra='driver:\n  version: "570.195.03"\n'), pool("host", extra="driver:\n  preinstalled: true\n"),
        pool("plain"), pool("empty", extra="driver:\n  preinstalled: false\n")))
    assert [P.pool_driver(it, p) for p in it.spec.pools] == ["570.195.03", "preinstalled", "cluster", "cluster"]
    plan = P.build(it, "lab.yaml")
    assert plan.per_pool_drivers is True


# --- upgrade waves ---------------------------------------------------------------------------------------------


WAVES = """\
driver:
  version: "580.126.20"
  upgrade:
%s
""" + pools(pool("a"), pool("b"), pool("c"), pool("d", extra='driver:\n  version: "570.195.03"\n'),
            pool("e", extra="driver:\n  preinstalled: true\n"))


def _waves(upgrade: str):
    from gpuconf import plan as P

    it = intent(WAVES % textwrap.indent(textwrap.dedent(upgrade), "    "))
    return it, P.upgrade_waves(it), P.wave_versions(it, "575.57.08")


def test_waves_in_order_then_the_rest_of_the_cluster_driver_pools():
    it, waves, versions = _waves("waves:\n  - [b]\n  - [a]\n")
    assert waves == [["b"], ["a"], ["c"]]
    assert versions == {"b": (1, "580.126.20"), "a": (2, "580.126.20"), "c": (3, "580.126.20")}
    _, canary, _ = _waves("canaryPool: c\n")
    assert canary == [["c"], ["a", "b"]]
    _, everything, _ = _waves("waves:\n  - [a, b, c]\n")
    assert everything == [["a", "b", "c"]]
    _, none, none_versions = _waves("maxParallel: 2\n")
    assert none == [] and none_versions == {}


def test_a_rollout_gives_its_version_to_the_waves_up_to_and_including_its_wave():
    _, _, versions = _waves('waves:\n  - [a]\n  - [b]\nrollout:\n  version: "595.91.07"\n  wave: 2\n')
    assert versions == {"a": (1, "595.91.07"), "b": (2, "595.91.07"), "c": (3, "580.126.20")}
    _, _, first = _waves('waves:\n  - [a]\n  - [b]\nrollout:\n  version: "595.91.07"\n  wave: 1\n')
    assert first == {"a": (1, "595.91.07"), "b": (2, "580.126.20"), "c": (3, "580.126.20")}


def test_wave_pools_get_their_wave_and_version_in_the_plan():
    from gpuconf import plan as P

    it = intent(WAVES % '    waves:\n      - [a]\n    rollout:\n      version: "595.91.07"\n      wave: 1\n')
    plan = P.build(it, "lab.yaml")
    got = {p.name: (p.wave, p.driver) for p in plan.pools}
    assert got == {"a": (1, "595.91.07"), "b": (2, "580.126.20"), "c": (2, "580.126.20"), "d": (None, "570.195.03"),
                   "e": (None, "preinstalled")}
    assert plan.per_pool_drivers is True


# --- team quotas -------------------------------------------------------------------------------------------------


def test_quota_units_name_the_resources_a_pool_really_advertises():
    from gpuconf import plan as P

    assert P.quota_units({"nvidia.com/gpu": 8}, 4) == {"nvidia.com/gpu": 4}
    assert P.quota_units({"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-3g.40gb": 2}, 4) == {}
    per_node = {"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-1g.10gb.me.shared": 2, "nvidia.com/mig-3g.40gb": 2}
    assert P.quota_units(per_node, {"1g.10gb": 3, "1g.10gb+me": 1, "2g.20gb": 5}) == {
        "nvidia.com/mig-1g.10gb": 3, "nvidia.com/mig-1g.10gb.me.shared": 1}


def test_team_queue_rows_give_zero_to_unnamed_resources_and_no_borrowing_of_them_in_a_cohort():
    from gpuconf import plan as P

    body = textwrap.dedent("""\
    sharingProfiles:
      mixed: {mig: {layout: {"3g.40gb": 1, "1g.10gb": 4}}}
    """) + pools(pool("m", sharing="mixed"), pool("g", gpu="L4"), pool("x", gpu="L40S")) + textwrap.dedent("""\
    teams:
      - name: research
        namespaces: [research]
        quota: {m: {"1g.10gb": 8}, g: 4}
      - name: ops
        namespaces: [ops]
        quota: {g: 2}
    queueing:
      kueue:
        version: v0.19.2
        quotaCheckStrategy: IgnoreUndeclared
        %s
    """)
    limits = 'cohort: lab\n    teams:\n      research:\n        borrowingLimit: {g: 2}\n' \
             '        lendingLimit: {m: {"1g.10gb": 3}}'

    def rows(cohort):
        it = intent(body % cohort)
        return [(r.pool, r.resource, r.nominal, r.borrowing_limit, r.lending_limit)
                for r in P.team_queue_rows(it, it.spec.teams[0])]

    assert rows(limits) == [
        ("m", "nvidia.com/mig-1g.10gb", 8, None, 3), ("m", "nvidia.com/mig-3g.40gb", 0, 0, None),
        ("g", "nvidia.com/gpu", 4, 2, None)]
    assert rows("cohort: lab") == [
        ("m", "nvidia.com/mig-1g.10gb", 8, None, None), ("m", "nvidia.com/mig-3g.40gb", 0, 0, None),
        ("g", "nvidia.com/gpu", 4, None, None)]
    # Under a strategy the caller gives (the plan's), not one derived again.
    it = intent(body % "")
    single = [(r.pool, r.resource, r.nominal) for r in P.team_queue_rows(it, it.spec.teams[0], "single")]
    assert single == [("m", "nvidia.com/gpu", 0), ("g", "nvidia.com/gpu", 4)]
    assert rows("") == [
        ("m", "nvidia.com/mig-1g.10gb", 8, None, None), ("m", "nvidia.com/mig-3g.40gb", 0, None, None),
        ("g", "nvidia.com/gpu", 4, None, None)]


# --- declared GPU models ---------------------------------------------------------------------------------------------


def test_declared_models_carry_their_name_or_their_id_for_each_pci_device():
    from gpuconf import plan as P

    it = intent("""\
gpuModels:
  A800-ACTIVE:
    name: NVIDIA A800 40GB Active
    pciDeviceIds: ["0x20F910DE", "0x20F810DE"]
    memoryGiB: 40
    productLabels: [NVIDIA-A800-40GB-Active]
  LAB-GPU:
    pciDeviceIds: ["0x2B8510DE"]
    pciSubsystemIds: ["0x20F910DE"]
    memoryGiB: 48
    computeCapability: "8.9"
""" + pools(pool("a", gpu="A800-ACTIVE"), pool("b", gpu="LAB-GPU")))
    models = P.declared_models(it)
    a800, lab = models["A800-ACTIVE"], models["LAB-GPU"]
    assert (a800.name, a800.pci_devices) == ("NVIDIA A800 40GB Active", {"0x20F910DE": "NVIDIA A800 40GB Active",
                                                                         "0x20F810DE": "NVIDIA A800 40GB Active"})
    assert (lab.name, lab.pci_devices) == ("LAB-GPU", {"0x2B8510DE": "LAB-GPU"})
    assert a800.pci_device_ids == ("0x20F910DE", "0x20F810DE") and lab.pci_subsystem_ids == ("0x20F910DE",)
    assert a800.product_labels == ("NVIDIA-A800-40GB-Active",) and lab.compute_capability == "8.9"
    assert (a800.declared, a800.mig_capable, a800.memory_gib, a800.confidence) == (True, False, 40, "user-declared")
    assert P.gpu_model(it, "LAB-GPU") is not None and P.gpu_model(it, "LAB-GPU").name == "LAB-GPU"
    assert P.gpu_model(it, "H100-80GB").declared is False and P.gpu_model(it, "NOPE") is None
    bare = intent(pools(pool("a")))
    assert P.declared_models(bare) == {} and P.gpu_model(bare, "LAB-GPU") is None


def test_the_plan_is_immutable():
    """Renderers share one plan and Plan.pool_by_name is computed once: no part of it may be reassigned."""
    import dataclasses

    from gpuconf import plan as P

    plan = plan_of(pools(pool("a")))
    pool_plan = plan.pools[0]
    row = P.QueueRow("a", "nvidia.com/gpu", 1, None, None)
    for obj, field in ((plan, "strategy"), (pool_plan, "driver"), (pool_plan.capacity, "nodes"), (row, "nominal")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, None)


def test_the_builtin_exclusive_profile_is_what_validation_gives():
    """BUILTIN_PROFILES is built without a validator of its own (issue 21, item 15); it must be the very object
    validation makes of `exclusive: {}`, the fields the intent set included."""
    from gpuconf import plan as P
    from gpuconf.intent.model import SharingProfile

    validated = SharingProfile.model_validate({"exclusive": {}})
    builtin = P.BUILTIN_PROFILES["exclusive"]
    assert builtin == validated
    assert builtin.model_fields_set == validated.model_fields_set == {"exclusive"}
    assert builtin.model_dump(by_alias=True, exclude_unset=True) == {"exclusive": {}}
    assert P.sharing_kind(builtin) == "exclusive"


def test_a_plans_line_is_the_line_of_the_path_in_the_intent_file_and_1_without_a_file():
    """The report and the deviation table cite `line N` of the intent (Plan.line): the line, not the column, of the
    path's node; a plan built without the document (a library caller) cites line 1."""
    from gpuconf import plan as P
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document

    text = HEAD.format(cluster="", rest=textwrap.indent("pools:\n" + pool("alpha") + "\n" + pool("beta"), "  "))
    result = validate_document(load_text(text, "lab.yaml"))
    lines = text.splitlines()
    beta = next(i for i, line in enumerate(lines, 1) if "name: beta" in line)
    assert lines[beta - 1].index("- name: beta") + 1 != beta  # its column differs from its line
    built = P.build(result.intent, "lab.yaml", result.document)
    assert built.line(("spec", "pools", 1)) == beta
    assert P.build(result.intent, "lab.yaml").line(("spec", "pools", 1)) == 1

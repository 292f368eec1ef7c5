"""The semantic self-check against deliberately broken trees, one break per check, each with the exact line it
must print; and its readers (the upgrade policy the intent asks for, tolerations, node-pool commands) on their own."""

from __future__ import annotations

import functools

import pytest

from test_semantic import HETEROGENEOUS, HYBRID, MINIMAL, ROOT, _edited, _problems, _tree

SINGLE = ROOT / "examples" / "single-pool.yaml"
AIRGAPPED = ROOT / "examples" / "airgapped.yaml"


@functools.cache
def tree(path):
    return _tree(path)


def _docs_of(documents, kind):
    return [d for docs in documents.values() for d in docs if d.get("kind") == kind]


# --- the upgrade policy ---------------------------------------------------------------------------------------------


def test_a_clusterpolicy_upgrade_policy_that_differs_field_by_field():
    def edit(m):
        policy = m["driver"]["upgradePolicy"]
        policy.update(autoUpgrade=False, maxParallelUpgrades=3, maxUnavailable="50%")
        policy["drain"]["enable"] = True
        policy["gpuPodDeletion"]["timeoutSeconds"] = 30
        policy["waitForCompletion"]["podSelector"] = "app=x"

    where = "ClusterPolicy spec.driver.upgradePolicy as the chart renders it: "
    assert _problems(tree(SINGLE), values_edit=edit) == [where + m for m in (
        "autoUpgrade False instead of True", "maxParallelUpgrades 3 instead of 1",
        "maxUnavailable '50%' instead of '25%'", "drain.enable True instead of False",
        "podDeletion.timeoutSeconds 30 instead of 300", "waitForCompletion.podSelector 'app=x' instead of ''")]


def test_a_clusterpolicy_without_an_upgrade_policy_reads_as_no_auto_upgrade():
    def edit(m):
        m["driver"]["upgradePolicy"] = None

    problems = _problems(tree(SINGLE), values_edit=edit)
    assert problems[0] == ("ClusterPolicy spec.driver.upgradePolicy as the chart renders it: autoUpgrade False "
                           "instead of True")


def test_a_pools_nvidiadriver_with_another_policy_is_named_with_the_pool():
    def edit(docs):
        for doc in docs["manifests/nvidia-drivers.yaml"]:
            if doc["metadata"]["name"] == "gpuconf-viz-l40s":  # the drivers share one policy map: replace it
                doc["spec"]["upgradePolicy"] = {**doc["spec"]["upgradePolicy"], "maxParallelUpgrades": 7}

    assert _problems(tree(HYBRID), docs_edit=edit) == [
        "pool viz-l40s: the operator reads its NVIDIADriver's upgrade policy (NVIDIADriver mode ignores the "
        "ClusterPolicy's): maxParallelUpgrades 7 instead of 2"]


def test_a_managed_pool_that_no_nvidiadriver_serves():
    def edit(docs):
        docs["manifests/nvidia-drivers.yaml"] = [d for d in docs["manifests/nvidia-drivers.yaml"]
                                                 if d["metadata"]["name"] != "gpuconf-viz-l40s"]

    assert _problems(tree(HYBRID), docs_edit=edit) == [
        "pool viz-l40s: no NVIDIADriver serves its nodes, so they get no driver",
        "pool viz-l40s: runs driver None instead of 580.173.02"]


def test_every_pool_is_checked_after_one_without_a_driver():
    def edit(docs):
        drivers = docs["manifests/nvidia-drivers.yaml"]
        docs["manifests/nvidia-drivers.yaml"] = [d for d in drivers if d["metadata"]["name"] != "gpuconf-batch-h100"]
        for doc in docs["manifests/nvidia-drivers.yaml"]:
            if doc["metadata"]["name"] == "gpuconf-viz-l40s":
                doc["spec"]["upgradePolicy"] = {**doc["spec"]["upgradePolicy"], "autoUpgrade": False}

    problems = _problems(tree(HYBRID), docs_edit=edit)
    assert "pool batch-h100: no NVIDIADriver serves its nodes, so they get no driver" in problems
    assert ("pool viz-l40s: the operator reads its NVIDIADriver's upgrade policy (NVIDIADriver mode ignores the "
            "ClusterPolicy's): autoUpgrade False instead of True") in problems


def test_the_policy_check_is_off_without_managed_drivers_or_with_the_driver_disabled():
    def edit(m):
        m["driver"]["upgradePolicy"]["maxParallelUpgrades"] = 9
        m["driver"]["enabled"] = False

    assert _problems(tree(SINGLE), values_edit=edit) == []


# --- the upgrade policy the intent asks for -------------------------------------------------------------------------


def _intended(upgrade: str = "", overrides: tuple[tuple[str, str], ...] = ()):
    from gpuconf import catalog
    from gpuconf.intent.loader import load_text
    from gpuconf.intent.validate import validate_document
    from gpuconf.output.semantic import intended_policy

    rest = "".join(f"    - path: {p}\n      value: {v}\n      why: the lab tests its upgrade policy\n"
                   for p, v in overrides)
    text = MINIMAL.replace("  pools:\n", '  driver:\n    version: "580.126.20"\n' + upgrade + "  pools:\n") + \
        ("  overrides:\n" + rest if rest else "")
    result = validate_document(load_text(text, "lab.yaml"))
    assert result.intent is not None, [f.text() for f in result.findings]
    return intended_policy(result.intent, catalog.chart("v26.7.0").defaults)


def test_without_an_upgrade_block_the_intended_policy_is_the_charts():
    assert _intended() == {
        "autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%",
        "drain": {"deleteEmptyDir": False, "enable": False, "force": False, "timeoutSeconds": 300},
        "podDeletion": {"deleteEmptyDir": False, "force": False, "timeoutSeconds": 300},
        "waitForCompletion": {"timeoutSeconds": 0}}


def test_the_intents_upgrade_block_speaks_field_by_field():
    policy = _intended("""    upgrade:
      autoUpgrade: false
      maxParallel: 3
      maxUnavailable: 2
      drain:
        enable: true
        force: true
        timeoutSeconds: 120
        deleteEmptyDir: true
        podSelector: app=batch
      podDeletion:
        force: true
        timeoutSeconds: 60
        deleteEmptyDir: true
      waitForCompletion:
        podSelector: app=train
        timeoutSeconds: 900
""")
    assert policy == {
        "autoUpgrade": False, "maxParallelUpgrades": 3, "maxUnavailable": 2,
        "drain": {"enable": True, "force": True, "timeoutSeconds": 120, "deleteEmptyDir": True,
                  "podSelector": "app=batch"},
        "podDeletion": {"force": True, "timeoutSeconds": 60, "deleteEmptyDir": True},
        "waitForCompletion": {"podSelector": "app=train", "timeoutSeconds": 900}}


def test_overrides_of_the_upgrade_policy_land_under_the_operators_names():
    policy = _intended(overrides=(("driver.upgradePolicy.gpuPodDeletion.timeoutSeconds", "45"),
                                  ("driver.upgradePolicy.maxParallelUpgrades", "4"),
                                  ("driver.upgradePolicy.drain", "{enable: true}"),
                                  ("driver.repository", "registry.example/nvidia")))
    assert policy["podDeletion"] == {"deleteEmptyDir": False, "force": False, "timeoutSeconds": 45}
    assert "gpuPodDeletion" not in policy
    assert policy["maxParallelUpgrades"] == 4
    assert policy["drain"] == {"deleteEmptyDir": False, "enable": True, "force": False, "timeoutSeconds": 300}
    assert policy["autoUpgrade"] is True and policy["maxUnavailable"] == "25%"


def test_a_replaced_policy_merges_its_maps_and_renames_gpu_pod_deletion():
    policy = _intended(overrides=(("driver.upgradePolicy",
                                   "{autoUpgrade: false, gpuPodDeletion: {force: true}, drain: {timeoutSeconds: 60}}"),))
    assert policy["autoUpgrade"] is False
    assert policy["podDeletion"] == {"deleteEmptyDir": False, "force": True, "timeoutSeconds": 300}
    assert policy["drain"]["timeoutSeconds"] == 60 and policy["drain"]["enable"] is False
    assert "gpuPodDeletion" not in policy and policy["maxParallelUpgrades"] == 1


def test_policy_overrides_after_other_overrides_still_apply():
    policy = _intended(overrides=(("driver.repository", "registry.example/nvidia"),
                                  ("driver.upgradePolicy.maxParallelUpgrades", "4")))
    assert policy["maxParallelUpgrades"] == 4


def test_overrides_after_a_replaced_policy_still_apply():
    policy = _intended(overrides=(("driver.upgradePolicy", "{autoUpgrade: false}"),
                                  ("driver.upgradePolicy.maxParallelUpgrades", "5")))
    assert (policy["autoUpgrade"], policy["maxParallelUpgrades"]) == (False, 5)


def test_a_new_map_under_the_policy_is_created_by_its_override():
    policy = _intended(overrides=(("driver.upgradePolicy.gpuPodDeletion", "{force: true}"),))
    assert policy["podDeletion"] == {"deleteEmptyDir": False, "force": True, "timeoutSeconds": 300}


def test_an_overridden_policy_is_what_the_check_expects(tmp_path):
    intent = _edited(tmp_path, SINGLE, ("spec:\n", "spec:\n  overrides:\n"
                                        "    - path: driver.upgradePolicy.gpuPodDeletion.timeoutSeconds\n"
                                        "      value: 45\n      why: pods of this lab stop fast\n"))
    rendered = _tree(intent)
    assert rendered.values.merged()["driver"]["upgradePolicy"]["gpuPodDeletion"]["timeoutSeconds"] == 45
    assert _problems(rendered) == []

    def back(m):
        m["driver"]["upgradePolicy"]["gpuPodDeletion"]["timeoutSeconds"] = 300

    assert _problems(rendered, values_edit=back) == [
        "ClusterPolicy spec.driver.upgradePolicy as the chart renders it: podDeletion.timeoutSeconds 300 instead of 45"]


@pytest.mark.parametrize(("want", "got", "same"), [
    (0, "0%", True), ("0%", 0, True), ("0%", "0%", True), ("25%", "25%", True), (1, 1, True), ("25%", 25, False),
    (1, "1%", False), ("10%", "1%", False), ("x%", "x%", True), ("x%", "0%", False), (None, None, True),
    # Kubernetes reads a percentage's digits as a number (intstr, strconv.Atoi): "05%" is 5 %, "00%" none.
    ("05%", "5%", True), ("05%", 0, False), ("00%", 0, True)])
def test_max_unavailable_zero_and_zero_percent_are_the_same(want, got, same):
    from gpuconf.output.semantic import _same_unavailable

    assert _same_unavailable(want, got) is same


def test_policy_differences_read_missing_selectors_as_empty():
    from gpuconf.output.semantic import _policy_differences

    want = {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": 0,
            "drain": {"podSelector": "", "enable": False}, "waitForCompletion": {"podSelector": None}}
    got = {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "0%", "drain": {"enable": False},
           "waitForCompletion": {}}
    assert list(_policy_differences(want, got)) == []
    got["drain"] = {"enable": True, "force": True}
    assert list(_policy_differences(want, got)) == ["drain.enable True instead of False", "drain.force True instead of None"]
    assert list(_policy_differences({}, {"podDeletion": {"force": False}})) == [
        "podDeletion.force False instead of None"]


# --- driver versions --------------------------------------------------------------------------------------------------


def test_a_preinstalled_pool_whose_nodes_do_not_opt_out_of_the_driver():
    def edit(docs):
        for rule in docs["manifests/node-feature-rules.yaml"]:
            for item in rule["spec"]["rules"]:
                item.get("labels", {}).pop("nvidia.com/gpu.deploy.driver", None)

    assert _problems(tree(HYBRID), docs_edit=edit) == [
        "pool legacy-a100: keeps its host driver, but its nodes do not get nvidia.com/gpu.deploy.driver=false, so "
        "the operator installs one"]


def test_a_pool_running_another_version_than_its_pin():
    def edit(docs):
        for doc in docs["manifests/nvidia-drivers.yaml"]:
            if doc["metadata"]["name"] == "gpuconf-batch-h100":
                doc["spec"]["version"] = "580.126.20"

    assert _problems(tree(HYBRID), docs_edit=edit) == ["pool batch-h100: runs driver 580.126.20 instead of 595.91.07"]


def test_the_cluster_driver_version_in_clusterpolicy_mode():
    def edit(m):
        m["driver"]["version"] = "570.195.03"

    assert _problems(tree(SINGLE), values_edit=edit) == ["pool l40s: runs driver 570.195.03 instead of 580.126.20"]


def test_pools_that_need_their_own_nvidiadriver_when_nvidiadriver_mode_is_off():
    def edit(m):
        m["driver"]["nvidiaDriverCRD"]["enabled"] = False

    problems = [p for p in _problems(tree(HYBRID), values_edit=edit) if "NVIDIADriver mode is off" in p]
    assert problems == ["pool batch-h100: needs its own NVIDIADriver (595.91.07), but NVIDIADriver mode is off",
                        "pool new-h200: needs its own NVIDIADriver (580.173.02), but NVIDIADriver mode is off",
                        "pool viz-l40s: needs its own NVIDIADriver (580.173.02), but NVIDIADriver mode is off"]


def test_an_overridden_driver_version_is_the_users_and_not_checked(tmp_path):
    intent = _edited(tmp_path, SINGLE, ("spec:\n", "spec:\n  overrides:\n    - path: driver.version\n"
                                        '      value: "570.195.03"\n      why: the lab certifies this branch\n'))
    rendered = _tree(intent)
    assert rendered.values.merged()["driver"]["version"] == "570.195.03"
    assert rendered.plan.intent.spec.driver.version != "570.195.03"
    assert _problems(rendered) == []


# --- MIG strategy and configs ---------------------------------------------------------------------------------------


def test_the_single_strategy_with_pools_that_mix_profiles():
    def edit(m):
        m["mig"]["strategy"] = "single"

    assert _problems(tree(HETEROGENEOUS), values_edit=edit) == [
        "mig.strategy is 'single', the MIG pools need 'mixed'",
        "pool infer-a100: mixes MIG profiles ['1g.10gb', '2g.20gb', '3g.40gb'] under the single strategy"]


def test_a_pool_of_two_profiles_under_the_single_strategy(tmp_path):
    two = _tree(_edited(tmp_path, HETEROGENEOUS, ('          "3g.40gb": 1\n          "2g.20gb": 1\n          "1g.10gb": 2\n',
                                                  '          "3g.40gb": 1\n          "1g.10gb": 3\n'),
                        ('          "2g.20gb": 32\n', "")))

    def edit(m):
        m["mig"]["strategy"] = "single"

    assert _problems(two, values_edit=edit) == [
        "mig.strategy is 'single', the MIG pools need 'mixed'",
        "pool infer-a100: mixes MIG profiles ['1g.10gb', '3g.40gb'] under the single strategy"]


def test_a_strategy_override_is_not_second_guessed(tmp_path):
    intent = _edited(tmp_path, HETEROGENEOUS, ("\nspec:\n", "\nspec:\n  overrides:\n    - path: mig.strategy\n"
                                               "      value: mixed\n      why: pinned by the platform team\n"))
    rendered = _tree(intent)

    def edit(m):
        m["mig"]["strategy"] = "single"

    assert _problems(rendered, values_edit=edit) == []


def test_no_mig_pool_no_strategy_check():
    def edit(m):
        m["mig"]["strategy"] = "mixed"

    assert tree(SINGLE).plan.strategy is None
    assert _problems(tree(SINGLE), values_edit=edit) == []


def _mig_label(docs, pool: str, value):
    for rule in docs["manifests/node-feature-rules.yaml"]:
        for item in rule["spec"]["rules"]:
            labels = item.get("labels", {})
            if labels.get("gpuconf.dev/pool") == pool:
                if value is None:
                    labels.pop("nvidia.com/mig.config")
                else:
                    labels["nvidia.com/mig.config"] = value


def test_a_mig_label_naming_no_config():
    assert _problems(tree(HETEROGENEOUS), docs_edit=lambda d: _mig_label(d, "train-h100", "all-balanced")) == [
        "pool train-h100: label nvidia.com/mig.config=all-balanced names no config of gpuconf-mig-parted-config"]
    assert _problems(tree(HETEROGENEOUS), docs_edit=lambda d: _mig_label(d, "train-h100", None)) == [
        "pool train-h100: label nvidia.com/mig.config=None names no config of gpuconf-mig-parted-config"]


def test_mig_managers_configmap_and_default():
    def no_key(docs):
        for doc in docs["manifests/sharing-configs.yaml"]:
            if doc["metadata"]["name"] == "gpuconf-mig-parted-config":
                doc["data"] = {"other.yaml": doc["data"]["config.yaml"]}

    assert _problems(tree(HETEROGENEOUS), docs_edit=no_key) == [
        "migManager.config.name 'gpuconf-mig-parted-config': no ConfigMap with key config.yaml in gpu-operator"]

    def renamed(m):
        m["migManager"]["config"]["name"] = "missing"

    assert _problems(tree(HETEROGENEOUS), values_edit=renamed) == [
        "migManager.config.name 'missing': no ConfigMap with key config.yaml in gpu-operator"]

    def default(m):
        m["migManager"]["config"]["default"] = "all-balanced"

    assert _problems(tree(HETEROGENEOUS), values_edit=default) == [
        "migManager.config.default 'all-balanced' is not a config of gpuconf-mig-parted-config"]

    def empty_default(m):
        m["migManager"]["config"]["default"] = ""

    assert _problems(tree(HETEROGENEOUS), values_edit=empty_default) == []


def test_device_plugin_configs():
    def renamed(m):
        m["devicePlugin"]["config"]["name"] = "missing"

    assert _problems(tree(HETEROGENEOUS), values_edit=renamed) == [
        "devicePlugin.config.name 'missing': no such ConfigMap in namespace gpu-operator"]

    def label(docs):
        for rule in docs["manifests/node-feature-rules.yaml"]:
            for item in rule["spec"]["rules"]:
                if item.get("labels", {}).get("gpuconf.dev/pool") == "notebooks-l4":
                    item["labels"]["nvidia.com/device-plugin.config"] = "nope"

    assert _problems(tree(HETEROGENEOUS), docs_edit=label) == [
        "pool notebooks-l4: label nvidia.com/device-plugin.config=nope names no key of gpuconf-device-plugin-config"]

    def swapped(docs):
        for doc in docs["manifests/sharing-configs.yaml"]:
            if doc["metadata"]["name"] == "gpuconf-device-plugin-config":
                key = next(k for k in doc["data"] if k.startswith("notebooks-x4-"))
                doc["data"][key] = doc["data"][key].replace("replicas: 4", "replicas: 2")

    problems = _problems(tree(HETEROGENEOUS), docs_edit=swapped)
    assert problems == [f"pool notebooks-l4: config {tree(HETEROGENEOUS).plan.pools[2].device_plugin_key} is not the "
                        "pool's sharing profile"]


def test_every_pools_device_plugin_config_is_checked_after_one_that_names_no_key():
    def edit(docs):
        for rule in docs["manifests/node-feature-rules.yaml"]:
            for item in rule["spec"]["rules"]:
                if item.get("labels", {}).get("gpuconf.dev/pool") == "train-h100":
                    item["labels"]["nvidia.com/device-plugin.config"] = "nope"
        for doc in docs["manifests/sharing-configs.yaml"]:
            if doc["metadata"]["name"] == "gpuconf-device-plugin-config":
                key = next(k for k in doc["data"] if k.startswith("notebooks-x4-"))
                doc["data"][key] = doc["data"][key].replace("replicas: 4", "replicas: 2")

    key = tree(HETEROGENEOUS).plan.pools[2].device_plugin_key
    assert _problems(tree(HETEROGENEOUS), docs_edit=edit) == [
        "pool train-h100: label nvidia.com/device-plugin.config=nope names no key of gpuconf-device-plugin-config",
        f"pool notebooks-l4: config {key} is not the pool's sharing profile"]


# --- tolerations, images, quotas, metrics ---------------------------------------------------------------------------


def test_a_pools_nvidiadriver_without_the_pools_toleration():
    def edit(docs):
        for doc in docs["manifests/nvidia-drivers.yaml"]:
            if doc["metadata"]["name"] == "gpuconf-batch-h100":
                doc["spec"]["tolerations"] = []

    assert _problems(tree(HYBRID), docs_edit=edit) == [
        "pool batch-h100: taint hpc.example.com/batch:NoExecute is not tolerated by NVIDIADriver gpuconf-batch-h100"]


def test_taints_that_only_discourage_are_skipped_and_the_next_ones_checked(tmp_path):
    soft = _tree(_edited(tmp_path, HETEROGENEOUS, (
        "      taints:\n        - key: gpuconf.dev/pool\n          value: train-h100\n          effect: NoSchedule\n",
        "      taints:\n        - key: example.com/soft\n          effect: PreferNoSchedule\n"
        "        - key: gpuconf.dev/pool\n          value: train-h100\n          effect: NoSchedule\n")))
    assert _problems(soft) == []

    def edit(m):
        m["daemonsets"]["tolerations"] = [t for t in m["daemonsets"]["tolerations"] if t.get("value") != "train-h100"]

    assert _problems(soft, values_edit=edit) == [
        "pool train-h100: taint gpuconf.dev/pool=train-h100:NoSchedule is not tolerated by the operands "
        "(daemonsets.tolerations)"]


def test_nfd_must_apply_the_taints_its_rules_carry():
    rendered = tree(HETEROGENEOUS)
    assert rendered.plan.nfd_taints

    def edit(m):
        m["node-feature-discovery"]["master"]["config"]["enableTaints"] = False

    assert _problems(rendered, values_edit=edit) == ["NodeFeatureRules apply taints, but nfd-master's enableTaints is off"]


def test_images_of_nvidiadrivers_and_containers_come_from_the_mirror(tmp_path):
    mirrored = _tree(_edited(tmp_path, HYBRID, ("    chartVersion: v26.7.0\n",
                                                "    chartVersion: v26.7.0\n    registry: mirror.example/nv\n")))
    assert _problems(mirrored) == []

    def driver(docs):
        docs["manifests/nvidia-drivers.yaml"][0]["spec"]["repository"] = "nvcr.io/nvidia"

    name = mirrored.documents["manifests/nvidia-drivers.yaml"][0]["metadata"]["name"]
    assert _problems(mirrored, docs_edit=driver) == [
        f"NVIDIADriver {name} repository = 'nvcr.io/nvidia' is not behind the mirror mirror.example/nv"]

    air = tree(AIRGAPPED)

    def probe(docs):
        docs["manifests/probes.yaml"][0]["spec"]["template"]["spec"]["containers"][0]["image"] = "docker.io/busybox"

    job = air.documents["manifests/probes.yaml"][0]
    assert _problems(air, docs_edit=probe) == [
        f"Job {job['metadata']['name']} pulls 'docker.io/busybox', not from the mirror registry.enclave.internal/nvidia"]

    def prefix(m):  # a repository that merely starts with the mirror's text is not behind it
        m["toolkit"]["repository"] = "registry.enclave.internal/nvidia-other"

    assert _problems(air, values_edit=prefix) == [
        "values toolkit.repository = 'registry.enclave.internal/nvidia-other' is not behind the mirror "
        "registry.enclave.internal/nvidia"]

    def exact(m):
        m["toolkit"]["repository"] = "registry.enclave.internal/nvidia"

    assert _problems(air, values_edit=exact) == []


def test_without_a_mirror_no_image_is_checked():
    def edit(m):
        m["toolkit"]["repository"] = "docker.io/someone"

    assert tree(HETEROGENEOUS).plan.intent.spec.operator.registry is None
    assert _problems(tree(HETEROGENEOUS), values_edit=edit) == []


def test_metrics_an_alert_reads_must_be_collected():
    def no_cm(docs):
        docs["manifests/monitoring.yaml"] = [d for d in docs["manifests/monitoring.yaml"] if d["kind"] != "ConfigMap"]

    name = tree(HETEROGENEOUS).values.merged()["dcgmExporter"]["config"]["name"]
    assert _problems(tree(HETEROGENEOUS), docs_edit=no_cm) == [
        f"dcgmExporter.config.name {name!r}: no ConfigMap with key dcgm-metrics.csv in gpu-operator"]

    def dropped(docs):
        cm = next(d for d in docs["manifests/monitoring.yaml"] if d["kind"] == "ConfigMap")
        cm["data"]["dcgm-metrics.csv"] = "\n".join(
            line if not line.startswith("DCGM_FI_DEV_GPU_TEMP,") else "# " + line
            for line in cm["data"]["dcgm-metrics.csv"].splitlines())

    assert _problems(tree(HETEROGENEOUS), docs_edit=dropped) == [
        f"an alert reads DCGM_FI_DEV_GPU_TEMP, which ConfigMap {name} does not collect"]


def test_quotas_of_a_flavor_with_zero_or_a_non_gpu_resource_are_fine():
    def edit(docs):
        research = next(d for d in docs["manifests/queues.yaml"] if d["metadata"]["name"] == "gpuconf-team-research")
        first = research["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        first["name"] = "nvidia.com/mig-1g.10gb"
        first["nominalQuota"] = 0

    assert _problems(tree(HETEROGENEOUS), docs_edit=edit) == []


# --- readers on their own ---------------------------------------------------------------------------------------------


TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}


@pytest.mark.parametrize(("tolerations", "tolerated"), [
    ([{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}], True),
    ([{"key": "k", "value": "v"}], True),
    ([{"key": "k", "operator": "Exists"}], True),
    ([{"operator": "Exists"}], True),
    ([{"operator": "Exists", "effect": "NoExecute"}], False),
    ([{"key": "", "operator": "Equal", "value": "v"}], False),
    ([{"key": "k", "value": "w"}], False),
    ([{"key": "k", "value": "v", "effect": "NoExecute"}], False),
    ([{"key": "other", "operator": "Exists"}], False),
    ([{"key": "other", "operator": "Exists"}, {"key": "k", "value": "v"}], True),
    ([], False), (None, False),
])
def test_tolerates_is_kubernetes_tolerates_taint(tolerations, tolerated):
    from gpuconf.output.semantic import tolerates

    assert tolerates(tolerations, TAINT) is tolerated


def test_a_keyless_toleration_that_is_not_exists_does_not_end_the_search():
    from gpuconf.output.semantic import tolerates

    assert tolerates([{"operator": "Equal", "value": "v"}, {"key": "k", "value": "v"}], TAINT) is True


def test_a_taint_without_value_is_tolerated_by_an_empty_value():
    from gpuconf.output.semantic import tolerates

    assert tolerates([{"key": "k"}], {"key": "k", "effect": "NoSchedule"}) is True
    assert tolerates([{"key": "k", "value": "v"}], {"key": "k", "effect": "NoSchedule"}) is False


def test_node_pool_command_labels():
    from gpuconf.output.semantic import _command_labels

    gke = "gcloud container node-pools create a \\\n  --node-labels=a=1,b=2 \\\n  --num-nodes 3  # c=3\n"
    assert _command_labels(gke.replace("--node-labels=", "--node-labels "), "--node-labels") == {"a": "1", "b": "2"}
    aks = "az aks nodepool add --labels a=1 b=x=y novalue --node-count 2\n"
    assert _command_labels(aks, "--labels") == {"a": "1", "b": "x=y"}
    assert _command_labels(aks, "--node-labels") == {}
    assert _command_labels("az aks nodepool add --labels a=1", "--labels") == {"a": "1"}

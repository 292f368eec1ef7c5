"""gpuconf.output.formats: the validators of the device-plugin/GFD config and of the mig-parted config.

1. Known-good files pass: small inline cases written from the reference facts (the snippets the facts list as passing
   the upstream parsers, and the shapes of the upstream example files), and, when the reference directory is on this
   machine, the real upstream files themselves.
2. One negative case per rule, with the exact message: the upstream rules, then gpuconf's stricter policy.
3. Everything gpuconf generates validates: the plans of every bundled example and of random valid intents.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import strategies as S
from conftest import EXAMPLES, ROOT
from gpuconf.output.formats import check_config_name, check_device_plugin_config, check_mig_parted_config


def load(text: str):
    """YAML as plain data, like the readers the validators are meant to sit behind."""
    return S.plain(S.load_plain(text))


def ts(*resources: dict, **extra) -> dict:
    """A device-plugin config that time-slices the given resources."""
    return {"version": "v1", "sharing": {"timeSlicing": {"resources": list(resources), **extra}}}


def mps(*resources: dict, **extra) -> dict:
    """A device-plugin config that shares the given resources with MPS."""
    return {"version": "v1", "sharing": {"mps": {"resources": list(resources), **extra}}}


GPU4 = {"name": "nvidia.com/gpu", "replicas": 4}


def mig(*entries: dict, name: str = "cfg") -> dict:
    """A mig-parted config with one named config."""
    return {"version": "v1", "mig-configs": {name: list(entries)}}


ENABLED = {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}
DISABLED = {"devices": "all", "mig-enabled": False}


def entry(**changes) -> dict:
    """ENABLED with some keys replaced (a value of None removes the key)."""
    out = {**ENABLED, **changes}
    return {k: v for k, v in out.items() if v is not None}


# --- 1. known-good files -------------------------------------------------------------------------------------------

# Device-plugin configs that pass k8s-device-plugin v0.20.0: the snippets of the formats facts (section 6), the
# shapes of the upstream README and GPU Operator CI files, and the ConfigMap data of gpu-operator-facts section 6.
VALID_DEVICE_PLUGIN = {
    "facts-time-slicing": """
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
""",
    "facts-mps": """
version: v1
sharing:
  mps:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 7
""",
    "facts-mixed-mig-time-slicing": """
version: v1
flags:
  migStrategy: mixed
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
    - name: nvidia.com/mig-3g.40gb
      replicas: 3
""",
    "readme-flags": """
version: v1
flags:
  migStrategy: "none"
  failOnInitError: true
  nvidiaDriverRoot: "/"
  plugin:
    passDeviceSpecs: false
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
""",
    "readme-mps-unset-rename": "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n"
                               "      replicas: 10\n",
    "operator-default": "version: v1\nflags:\n  migStrategy: none\n",
    "empty-version-means-v1": 'version: ""\n',
    "no-version": "flags:\n  migStrategy: single\n",
    "every-flag": """
version: v1
flags:
  migStrategy: single
  failOnInitError: false
  nvidiaDriverRoot: /run/nvidia/driver
  nvidiaDevRoot: /
  mpsRoot: /run/nvidia/mps
  gdrcopyEnabled: true
  gdsEnabled: false
  mofedEnabled: false
  useNodeFeatureAPI: true
  deviceDiscoveryStrategy: nvml
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, volume-mounts, cdi-annotations, cdi-cri]
    deviceIDStrategy: index
    cdiAnnotationPrefix: cdi.k8s.io/
    nvidiaCTKPath: /usr/bin/nvidia-ctk
    containerDriverRoot: /driver-root
    sharedDevicesAllocationPolicy: packed
  gfd:
    oneshot: false
    noTimestamp: true
    sleepInterval: 1m30s
    outputFile: /etc/kubernetes/node-feature-discovery/features.d/gfd
    machineTypeFile: /sys/class/dmi/id/product_name
imex:
  channelIDs: [0]
  required: true
""",
    "sleep-interval-infinite": "flags:\n  gfd:\n    sleepInterval: infinite\n",
    "sleep-interval-nanoseconds": "flags:\n  gfd:\n    sleepInterval: 60000000000\n",
    "sleep-interval-fraction": "flags:\n  gfd:\n    sleepInterval: 1.5h\n",
    "imex-no-channels": "imex:\n  channelIDs: []\n",
    "name-without-prefix": "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n",
    "mig-me-resource": "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.24gb.me.all\n"
                       "      replicas: 2\n    - name: nvidia.com/mig-1g.24gb-me\n      replicas: 2\n",
    "devices-all": "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      devices: all\n"
                   "      replicas: 2\n",
    "mps-max-replicas": "sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 48\n",
    "name-63-characters": "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/" + "a" * 52 + "\n"
                          "      replicas: 2\n",
}


@pytest.mark.parametrize("name", sorted(VALID_DEVICE_PLUGIN))
def test_valid_device_plugin_config(name):
    assert check_device_plugin_config(load(VALID_DEVICE_PLUGIN[name])) == []


VALID_MIG_PARTED = {
    "facts-snippet": """
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  h100-pool-mixed:
    - device-filter: ["0x233010DE", "0x233110DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
  split-node:
    - devices: [0, 1, 2, 3]
      mig-enabled: false
    - devices: [4, 5, 6, 7]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
""",
    # the shapes of config-default.yaml: empty mig-devices when enabled, every attribute form, filters per model
    "config-default-shapes": """
version: v1
mig-configs:
  all-enabled:
    - devices: all
      mig-enabled: true
      mig-devices: {}
  all-1g.5gb.me:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb+me": 1
  all-1g.24gb.me.all:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.24gb+me.all": 1
  all-1g.24gb-me:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.24gb-me": 4
  all-2g.48gb.gfx:
    - devices: all
      mig-enabled: true
      mig-devices:
        "2g.48gb+gfx": 2
  all-1g.10gb:
    - device-filter: ["0x233010DE", "0x20B210DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - device-filter: ["0x20B010DE", "0x20B110DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4
  all-balanced:
    - device-filter: "0x20B710DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.6gb": 2
        "2g.12gb": 1
""",
    # the shapes of the dgx-station example: disabled entries with mig-devices: {}, index lists per filter
    "dgx-station-shapes": """
version: v1
mig-configs:
  balanced-k8s-dgx-station-80:
    - device-filter: "0x20B210DE"
      devices: [0]
      mig-enabled: false
      mig-devices: {}
    - device-filter: "0x20B210DE"
      devices: [1]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
    - device-filter: "0x1FB010DE"
      devices: [3]
      mig-enabled: false
      mig-devices: {}
""",
    "compute-instance-profile-and-zero-count": """
version: v1
mig-configs:
  ci:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1c.3g.40gb": 3
        "3g.40gb": 0
        "1g.10gb+me,gfx": 1
""",
    "subsystem-filter-and-lower-case": """
version: v1
mig-configs:
  sub:
    - device-filter: ["0x20b210de:0x147f10de", "0X233010DE"]
      devices: all
      mig-enabled: false
""",
    "disjoint-subsystems": """
version: v1
mig-configs:
  sub:
    - device-filter: "0x20B210DE:0x147F10DE"
      devices: all
      mig-enabled: false
    - device-filter: "0x20B210DE:0x151010DE"
      devices: all
      mig-enabled: true
      mig-devices: {}
""",
}


@pytest.mark.parametrize("name", sorted(VALID_MIG_PARTED))
def test_valid_mig_parted_config(name):
    assert check_mig_parted_config(load(VALID_MIG_PARTED[name])) == []


@pytest.mark.parametrize("name", ["default", "a", "7", "all-1g.10gb", "A_b.c-9", "x" * 63, "exclusive-c0fcc874"])
def test_valid_config_name(name):
    assert check_config_name(name) == []


# The real upstream files, where this machine has them (beside the checkout, as the other reference tests look for
# them: the development machines and CI have ../shared/reference; a user's clone does not).
REFERENCE = Path(os.environ.get("GPUCONF_REFERENCE",
                                Path(__file__).resolve().parent.parent.parent / "shared" / "reference"))
FORMATS = REFERENCE / "nvidia-formats"
# Every upstream device-plugin config file there, and the problems gpuconf's stricter policy finds in it: none, since
# none of them uses a key the plugin ignores, `rename`, non-"all" devices or both sharing modes. Should a future
# copy do so, the expected problems go here, exactly. helm-chart-values.yaml is the device-plugin chart's values
# file, not a plugin config file, so it is not checked as one.
UPSTREAM_DEVICE_PLUGIN = {
    "readme_config-file-flags.yaml": [],
    "readme_dp-example-config0.yaml": [],
    "readme_dp-example-config1.yaml": [],
    "readme_mps.yaml": [],
    "readme_time-slicing.yaml": [],
    "time-slicing_gpu-operator-tests_plugin-config.yaml": [],
}
NOT_A_PLUGIN_CONFIG = {"helm-chart-values.yaml"}
UPSTREAM_MIG_PARTED = {
    "config-default.yaml": [],
    "examples_config.yaml": [],
    "examples_dgx-station-80gb-config.yaml": [],
}
needs_reference = pytest.mark.skipif(
    not FORMATS.is_dir(), reason=f"the upstream files are not on this machine ({FORMATS} is absent; "
                                 "set GPUCONF_REFERENCE to the reference directory to run this test)")


@needs_reference
def test_real_upstream_files():
    dp_dir, mp_dir = FORMATS / "device-plugin", FORMATS / "mig-parted"
    assert {p.name for p in dp_dir.glob("*.yaml")} == set(UPSTREAM_DEVICE_PLUGIN) | NOT_A_PLUGIN_CONFIG
    assert {p.name for p in mp_dir.glob("*.yaml")} == set(UPSTREAM_MIG_PARTED)
    for name, expected in UPSTREAM_DEVICE_PLUGIN.items():
        assert check_device_plugin_config(load((dp_dir / name).read_text(encoding="utf-8"))) == expected, name
    for name, expected in UPSTREAM_MIG_PARTED.items():
        data = load((mp_dir / name).read_text(encoding="utf-8"))
        assert check_mig_parted_config(data) == expected, name
        if name == "config-default.yaml":
            assert len(data["mig-configs"]) == 81  # all of it was checked (SOURCES.md: 81 config names)
    # the cross-file rules on real files: MPS under the operator's mixed strategy, a file strategy the operator's
    # overrides
    readme_mps = load((dp_dir / "readme_mps.yaml").read_text(encoding="utf-8"))
    assert check_device_plugin_config(readme_mps, mig_strategy="mixed") == [
        "sharing.mps: MPS is not supported with the mixed MIG strategy (from the operator's MIG strategy)"]
    config1 = load((dp_dir / "readme_dp-example-config1.yaml").read_text(encoding="utf-8"))
    assert check_device_plugin_config(config1, mig_strategy="mixed") == []
    assert check_device_plugin_config(config1, mig_strategy="single") == [
        'flags.migStrategy: "mixed" disagrees with the operator\'s MIG strategy "single", which overrides it '
        "(env MIG_STRATEGY)"]


# --- 2. one negative case per rule ---------------------------------------------------------------------------------

UNKNOWN = "unknown key; the device plugin would silently ignore it"
IGNORED = "ignored by the device plugin v0.20.0"
NAME_RULE = ('must be a DNS-1123 subdomain (lower-case letters, digits, "-" and ".", starting and ending with a '
             "letter or digit)")
R0 = "sharing.timeSlicing.resources[0]"
M0 = "sharing.mps.resources[0]"
LIST_STRATEGIES = "must be one of envvar, volume-mounts, cdi-annotations, cdi-cri"

# (config, mig_strategy argument, the exact problems)
DEVICE_PLUGIN_UPSTREAM_RULES = {
    "root-not-a-mapping": ([GPU4], None, ["$: must be a mapping, got list"]),
    "root-empty": (None, None, ["$: must be a mapping, got null"]),
    "version-unknown": ({"version": "v2"}, None, ['version: unknown version "v2"; must be "v1"']),
    "version-not-a-string": ({"version": 1}, None, ["version: must be a string, got integer 1"]),
    "flags-not-a-mapping": ({"flags": "none"}, None, ['flags: must be a mapping, got string "none"']),
    "sharing-not-a-mapping": ({"sharing": []}, None, ["sharing: must be a mapping, got list"]),
    "time-slicing-not-a-mapping": ({"sharing": {"timeSlicing": None}}, None,
                                   ["sharing.timeSlicing: must be a mapping, got null"]),
    "time-slicing-without-resources": ({"sharing": {"timeSlicing": {"renameByDefault": True}}}, None, [
        "sharing.timeSlicing.resources: required: list at least one resource to share"]),
    "time-slicing-empty-resources": (ts(), None, [
        "sharing.timeSlicing.resources: must list at least one resource to share, got []"]),
    "mps-without-resources": ({"sharing": {"mps": {}}}, None,
                              ["sharing.mps.resources: required: list at least one resource to share"]),
    "resources-not-a-list": ({"sharing": {"timeSlicing": {"resources": GPU4}}}, None,
                             ["sharing.timeSlicing.resources: must be a list, got mapping"]),
    "resource-not-a-mapping": (ts("nvidia.com/gpu"), None, [f'{R0}: must be a mapping, got string "nvidia.com/gpu"']),
    "rename-by-default-not-a-bool": (ts(GPU4, renameByDefault="true"), None,
                                     ['sharing.timeSlicing.renameByDefault: must be a boolean, got string "true"']),
    "fail-requests-not-a-bool": (mps(GPU4, failRequestsGreaterThanOne=1), None,
                                 ["sharing.mps.failRequestsGreaterThanOne: must be a boolean, got integer 1"]),
    "name-missing": (ts({"replicas": 2}), None, [f"{R0}.name: required"]),
    "name-empty": (ts({"name": "", "replicas": 2}), None, [f"{R0}.name: required"]),
    "name-not-a-string": (ts({"name": 5, "replicas": 2}), None, [f"{R0}.name: must be a string, got integer 5"]),
    "name-upper-case-and-underscore": (ts({"name": "nvidia.com/GPU_shared", "replicas": 2}), None, [
        f'{R0}.name: invalid resource name "nvidia.com/GPU_shared": "GPU_shared" after "nvidia.com/" {NAME_RULE}']),
    "name-without-prefix-invalid": (ts({"name": "gpu.", "replicas": 2}), None, [
        f'{R0}.name: invalid resource name "gpu.": "gpu." after "nvidia.com/" {NAME_RULE}']),
    "name-foreign-prefix": (ts({"name": "example.com/gpu", "replicas": 2}), None, [
        f'{R0}.name: invalid resource name "example.com/gpu": "example.com/gpu" after "nvidia.com/" {NAME_RULE}']),
    "name-too-long-with-implicit-prefix": (ts({"name": "a" * 53, "replicas": 2}), None, [
        f'{R0}.name: resource name "nvidia.com/{"a" * 53}" (nvidia.com/ added) is 64 characters long, '
        "must be at most 63"]),
    "name-too-long": (ts({"name": "nvidia.com/" + "a" * 53, "replicas": 2}), None, [
        f'{R0}.name: resource name "nvidia.com/{"a" * 53}" is 64 characters long, must be at most 63']),
    "replicas-missing": (ts({"name": "nvidia.com/gpu"}), None, [f"{R0}.replicas: required"]),
    "replicas-one": (ts({"name": "nvidia.com/gpu", "replicas": 1}), None, [f"{R0}.replicas: must be >= 2, got 1"]),
    "replicas-negative": (mps({"name": "nvidia.com/gpu", "replicas": -3}), None,
                          [f"{M0}.replicas: must be >= 2, got -3"]),
    "replicas-string": (ts({"name": "nvidia.com/gpu", "replicas": "4"}), None,
                        [f'{R0}.replicas: must be an integer, got string "4"']),
    "replicas-float": (ts({"name": "nvidia.com/gpu", "replicas": 4.0}), None,
                       [f"{R0}.replicas: must be an integer, got number 4.0"]),
    "replicas-bool": (ts({"name": "nvidia.com/gpu", "replicas": True}), None,
                      [f"{R0}.replicas: must be an integer, got boolean true"]),
    "devices-other-string": (ts({**GPU4, "devices": "first"}), None,
                             [f'{R0}.devices: the only valid string is "all", got string "first"']),
    "devices-count-zero": (ts({**GPU4, "devices": 0}), None,
                           [f"{R0}.devices: a device count must be > 0, got integer 0"]),
    "devices-bad-reference": (ts({**GPU4, "devices": [0, True, "GPU-x"]}), None, [
        f'{R0}.devices[1]: unsupported device reference true; expected a GPU index, "<gpu>:<mig>", "GPU-<uuid>", '
        '"MIG-<uuid>" or "MIG-GPU-<uuid>/<gi>/<ci>"',
        f'{R0}.devices[2]: unsupported device reference "GPU-x"; expected a GPU index, "<gpu>:<mig>", "GPU-<uuid>", '
        '"MIG-<uuid>" or "MIG-GPU-<uuid>/<gi>/<ci>"']),
    "devices-mapping": (ts({**GPU4, "devices": {}}), None,
                        [f'{R0}.devices: must be "all", a device count or a list of devices, got mapping']),
    "mig-strategy-wrong-case": ({"flags": {"migStrategy": "Mixed"}}, None, [
        'flags.migStrategy: must be one of none, single, mixed, got string "Mixed" (values are case-sensitive)']),
    "mig-strategy-unknown": ({"flags": {"migStrategy": "both"}}, None,
                             ['flags.migStrategy: must be one of none, single, mixed, got string "both"']),
    "device-list-strategy-unknown": ({"flags": {"plugin": {"deviceListStrategy": "cdi"}}}, None,
                                     [f'flags.plugin.deviceListStrategy: {LIST_STRATEGIES}, got string "cdi"']),
    "device-list-strategy-unknown-in-list": (
        {"flags": {"plugin": {"deviceListStrategy": ["envvar", "volume-mount"]}}}, None,
        [f'flags.plugin.deviceListStrategy[1]: {LIST_STRATEGIES}, got string "volume-mount"']),
    "device-list-strategy-not-a-string": ({"flags": {"plugin": {"deviceListStrategy": [1]}}}, None,
                                          ["flags.plugin.deviceListStrategy[0]: must be a string, got integer 1"]),
    "device-list-strategy-mapping": ({"flags": {"plugin": {"deviceListStrategy": {"envvar": True}}}}, None,
                                     ["flags.plugin.deviceListStrategy: must be a string or a list of strings, "
                                      "got mapping"]),
    "device-id-strategy": ({"flags": {"plugin": {"deviceIDStrategy": "serial"}}}, None,
                           ['flags.plugin.deviceIDStrategy: must be one of uuid, index, got string "serial"']),
    "shared-devices-allocation-policy": (
        {"flags": {"plugin": {"sharedDevicesAllocationPolicy": "spread"}}}, None,
        ['flags.plugin.sharedDevicesAllocationPolicy: must be one of distributed, packed, got string "spread"']),
    "device-discovery-strategy": ({"flags": {"deviceDiscoveryStrategy": "cuda"}}, None, [
        'flags.deviceDiscoveryStrategy: must be one of auto, nvml, tegra, got string "cuda"']),
    "bool-flag-as-string": ({"flags": {"failOnInitError": "true"}}, None,
                            ['flags.failOnInitError: must be a boolean, got string "true"']),
    "string-flag-as-number": ({"flags": {"nvidiaDriverRoot": 1}}, None,
                              ["flags.nvidiaDriverRoot: must be a string, got integer 1"]),
    "plugin-flags-not-a-mapping": ({"flags": {"plugin": ["envvar"]}}, None,
                                   ["flags.plugin: must be a mapping, got list"]),
    "sleep-interval-unparsable": ({"flags": {"gfd": {"sleepInterval": "60 seconds"}}}, None, [
        'flags.gfd.sleepInterval: must be a duration such as "60s", a number of nanoseconds or "infinite", '
        'got string "60 seconds"']),
    "sleep-interval-no-unit": ({"flags": {"gfd": {"sleepInterval": "60"}}}, None, [
        'flags.gfd.sleepInterval: must be a duration such as "60s", a number of nanoseconds or "infinite", '
        'got string "60"']),
    "mps-with-mixed-strategy-in-file": ({**mps(GPU4), "flags": {"migStrategy": "mixed"}}, None,
                                        ["sharing.mps: MPS is not supported with the mixed MIG strategy "
                                         "(from flags.migStrategy)"]),
    "imex-channel-ids": ({"imex": {"channelIDs": [1]}}, None, ["imex.channelIDs: must be [] or [0], got [1]"]),
    "imex-two-channel-ids": ({"imex": {"channelIDs": [0, 1]}}, None,
                             ["imex.channelIDs: must be [] or [0], got [0, 1]"]),
    "imex-channel-ids-not-a-list": ({"imex": {"channelIDs": 0}}, None,
                                    ["imex.channelIDs: must be a list, got integer 0"]),
    "imex-channel-id-string": ({"imex": {"channelIDs": ["0"]}}, None,
                               ['imex.channelIDs[0]: must be an integer, got string "0"']),
    "imex-required-not-a-bool": ({"imex": {"required": "yes"}}, None,
                                 ['imex.required: must be a boolean, got string "yes"']),
}

DEVICE_PLUGIN_STRICTER_RULES = {
    "unknown-key-typo": ({"version": "v1", "sharing": {"timeSharing": {"resources": [GPU4]}}}, None,
                         [f'sharing.timeSharing: {UNKNOWN} (did you mean "timeSlicing"?)']),
    "unknown-key-wrong-case": ({"sharing": {"timeslicing": {"resources": [GPU4]}}}, None, [
        f'sharing.timeslicing: {UNKNOWN} (did you mean "timeSlicing"? keys are case-sensitive)']),
    "unknown-key-top-level": ({"version": "v1", "extra": 1}, None, [f"extra: {UNKNOWN}"]),
    "unknown-key-in-resource": (ts({"name": "nvidia.com/gpu", "Replicas": 4}), None, [
        f'{R0}.Replicas: {UNKNOWN} (did you mean "replicas"? keys are case-sensitive)', f"{R0}.replicas: required"]),
    "unknown-key-in-flags": ({"flags": {"plugin": {"passDeviceSpec": True}}}, None,
                             [f'flags.plugin.passDeviceSpec: {UNKNOWN} (did you mean "passDeviceSpecs"?)']),
    "unknown-key-in-imex": ({"imex": {"channels": [0]}}, None,
                            [f'imex.channels: {UNKNOWN} (did you mean "channelIDs"?)']),
    "unknown-key-not-a-string": ({"version": "v1", 1: True}, None, [f"$[1]: {UNKNOWN}"]),
    "top-level-resources": ({"version": "v1", "resources": {"gpus": [{"pattern": "*", "name": "gpu"}]}}, None, [
        f"resources: {IGNORED} (\"Customizing the 'resources' field is not yet supported\"); gpuconf rejects it"]),
    "rename": (ts({**GPU4, "rename": "nvidia.com/gpu.ts"}), None,
               [f"{R0}.rename: {IGNORED} (reset with a warning); gpuconf rejects it: use renameByDefault"]),
    "devices-count": (ts({**GPU4, "devices": 2}), None,
                      [f'{R0}.devices: {IGNORED} (forced back to "all"); gpuconf rejects it: leave devices out or '
                       'set "all"']),
    "devices-list": (ts({**GPU4, "devices": [0, "1:0", "GPU-5b6c2a3e-1f7d-4e3a-9c1b-0d2e3f4a5b6c",
                                             "MIG-GPU-5b6c2a3e-1f7d-4e3a-9c1b-0d2e3f4a5b6c/1/0"]}), None,
                     [f'{R0}.devices: {IGNORED} (forced back to "all"); gpuconf rejects it: leave devices out or '
                      'set "all"']),
    "time-slicing-and-mps": ({"sharing": {"timeSlicing": {"resources": [GPU4]}, "mps": {"resources": [GPU4]}}}, None,
                             ["sharing: sets both timeSlicing and mps; the device plugin would silently use only mps, "
                              "so gpuconf requires one of them"]),
    "mps-replicas-49": (mps({"name": "nvidia.com/gpu", "replicas": 49}), None, [
        f"{M0}.replicas: must be <= 48 with MPS (the MPS daemon's client limit per GPU), got 49"]),
    "mps-on-a-mig-resource": (mps({"name": "nvidia.com/mig-1g.10gb", "replicas": 2}), None, [
        f'{M0}.name: MPS shares only nvidia.com/gpu (full GPUs), got string "nvidia.com/mig-1g.10gb"']),
    "null-flag": ({"flags": {"migStrategy": None}}, None, ["flags.migStrategy: must be a string, got null"]),
    "operator-strategy-disagrees": ({"flags": {"migStrategy": "single"}}, "mixed", [
        'flags.migStrategy: "single" disagrees with the operator\'s MIG strategy "mixed", which overrides it '
        "(env MIG_STRATEGY)"]),
    "mps-under-operator-mixed-strategy": (mps(GPU4), "mixed", [
        "sharing.mps: MPS is not supported with the mixed MIG strategy (from the operator's MIG strategy)"]),
    # the operator's strategy wins over the file's, so MPS is fine here, but the file is wrong
    "mps-file-mixed-operator-single": ({**mps(GPU4), "flags": {"migStrategy": "mixed"}}, "single", [
        'flags.migStrategy: "mixed" disagrees with the operator\'s MIG strategy "single", which overrides it '
        "(env MIG_STRATEGY)"]),
}


@pytest.mark.parametrize("name", sorted(DEVICE_PLUGIN_UPSTREAM_RULES))
def test_device_plugin_upstream_rule(name):
    config, strategy, expected = DEVICE_PLUGIN_UPSTREAM_RULES[name]
    assert check_device_plugin_config(config, mig_strategy=strategy) == expected


@pytest.mark.parametrize("name", sorted(DEVICE_PLUGIN_STRICTER_RULES))
def test_device_plugin_stricter_rule(name):
    config, strategy, expected = DEVICE_PLUGIN_STRICTER_RULES[name]
    assert check_device_plugin_config(config, mig_strategy=strategy) == expected


@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
def test_operator_strategy_that_agrees_or_file_without_strategy(strategy):
    assert check_device_plugin_config({"flags": {"migStrategy": strategy}}, mig_strategy=strategy) == []
    assert check_device_plugin_config(ts(GPU4), mig_strategy=strategy) == []


def test_operator_strategy_must_be_a_strategy():
    with pytest.raises(ValueError, match="mig_strategy must be one of none, single, mixed or None, got 'Mixed'"):
        check_device_plugin_config({}, mig_strategy="Mixed")


def test_several_problems_are_all_reported_in_document_order():
    config = {"version": "v0", "flags": {"migStrategy": "auto"},
              "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1},
                                                        {"name": "Bad", "replicas": 2}]}}}
    assert check_device_plugin_config(config) == [
        'version: unknown version "v0"; must be "v1"',
        'flags.migStrategy: must be one of none, single, mixed, got string "auto"',
        f"{R0}.replicas: must be >= 2, got 1",
        f'sharing.timeSlicing.resources[1].name: invalid resource name "Bad": "Bad" after "nvidia.com/" {NAME_RULE}',
    ]


C0 = "mig-configs.cfg[0]"
C1 = "mig-configs.cfg[1]"
PROFILE_GRAMMAR = ("not a MIG profile name; expected <G>g.<GB>gb or <C>c.<G>g.<GB>gb, optionally followed by "
                   "+attr[,attr...] or -attr (e.g. 1g.10gb, 1g.10gb+me, 1g.24gb-me)")
BAD_FILTER = ("is not a PCI id 0x<DEVICE><VENDOR> (8 hex digits, e.g. 0x233010DE), optionally followed by "
              ":0x<SUBDEVICE><SUBVENDOR>; mig-parted would silently match no GPU")
OVERLAP = "(device-filter and devices overlap); entries of one config must be disjoint"
MP_UNKNOWN = "unexpected field; mig-parted rejects it"

MIG_PARTED_UPSTREAM_RULES = {
    "root-not-a-mapping": ([], ["$: must be a mapping, got list"]),
    "root-empty": (None, ["$: must be a mapping, got null"]),
    "version-missing": ({"mig-configs": {"cfg": [DISABLED]}}, ['version: required: "v1"']),
    "version-unknown": ({"version": "v2", "mig-configs": {"cfg": [DISABLED]}},
                        ['version: unknown version "v2"; must be "v1"']),
    "version-empty": ({"version": "", "mig-configs": {"cfg": [DISABLED]}},
                      ['version: unknown version ""; must be "v1"']),
    "version-not-a-string": ({"version": 1.0, "mig-configs": {"cfg": [DISABLED]}},
                             ["version: must be a string, got number 1.0"]),
    "unknown-top-level-key": ({**mig(DISABLED), "mig-config": {}},
                              [f'mig-config: {MP_UNKNOWN} (did you mean "mig-configs"?)']),
    "mig-configs-missing": ({"version": "v1"}, ["mig-configs: required: at least one named config"]),
    "mig-configs-not-a-mapping": ({"version": "v1", "mig-configs": [DISABLED]},
                                  ["mig-configs: must be a mapping, got list"]),
    "mig-configs-empty": ({"version": "v1", "mig-configs": {}},
                          ["mig-configs: must contain at least one named config"]),
    "config-not-a-list": ({"version": "v1", "mig-configs": {"cfg": DISABLED}},
                          ["mig-configs.cfg: must be a list of entries, got mapping"]),
    "config-without-entries": (mig(), ["mig-configs.cfg: must list at least one entry"]),
    "entry-not-a-mapping": (mig("all"), [f'{C0}: must be a mapping, got string "all"']),
    "entry-unknown-key": (mig(entry(**{"mig-device": {}})),
                          [f'{C0}.mig-device: {MP_UNKNOWN} (did you mean "mig-devices"?)']),
    "devices-missing": (mig(entry(devices=None)), [f'{C0}.devices: required: "all" or a list of GPU indexes']),
    "devices-other-string": (mig(entry(devices="0-3")),
                             [f'{C0}.devices: must be "all" or a list of GPU indexes, got string "0-3"']),
    "devices-count": (mig(entry(devices=2)), [f'{C0}.devices: must be "all" or a list of GPU indexes, got integer 2']),
    "devices-negative-index": (mig(entry(devices=[0, -1])),
                               [f"{C0}.devices[1]: must be a GPU index (an integer >= 0), got integer -1"]),
    "devices-string-index": (mig(entry(devices=["0"])),
                             [f'{C0}.devices[0]: must be a GPU index (an integer >= 0), got string "0"']),
    "mig-enabled-missing": (mig({"devices": "all"}), [f"{C0}.mig-enabled: required: true or false"]),
    "mig-enabled-not-a-bool": (mig({"devices": "all", "mig-enabled": "true", "mig-devices": {}}),
                               [f'{C0}.mig-enabled: must be a boolean, got string "true"']),
    "mig-devices-missing-when-enabled": (mig(entry(**{"mig-devices": None})), [
        f"{C0}.mig-devices: required when mig-enabled is true (use {{}} for MIG enabled without devices)"]),
    "mig-devices-when-disabled": (mig({**DISABLED, "mig-devices": {"1g.10gb": 7}}),
                                  [f"{C0}.mig-devices: must be absent or empty when mig-enabled is false"]),
    "mig-devices-not-a-mapping": (mig(entry(**{"mig-devices": ["1g.10gb"]})),
                                  [f"{C0}.mig-devices: must be a mapping, got list"]),
    "profile-without-dot": (mig(entry(**{"mig-devices": {"1g10gb": 1}})),
                            [f'{C0}.mig-devices["1g10gb"]: {PROFILE_GRAMMAR}']),
    "profile-plus-and-minus": (mig(entry(**{"mig-devices": {"1g.10gb+me-gfx": 1}})),
                               [f'{C0}.mig-devices["1g.10gb+me-gfx"]: {PROFILE_GRAMMAR}']),
    "profile-minus-list": (mig(entry(**{"mig-devices": {"1g.24gb-me,gfx": 1}})),
                           [f'{C0}.mig-devices["1g.24gb-me,gfx"]: {PROFILE_GRAMMAR}']),
    "profile-attribute-starts-with-digit": (mig(entry(**{"mig-devices": {"1g.10gb+1me": 1}})),
                                            [f'{C0}.mig-devices["1g.10gb+1me"]: {PROFILE_GRAMMAR}']),
    "profile-attribute-starts-with-dot": (mig(entry(**{"mig-devices": {"1g.10gb+.me": 1}})),
                                          [f'{C0}.mig-devices["1g.10gb+.me"]: {PROFILE_GRAMMAR}']),
    "profile-attribute-ends-with-dot": (mig(entry(**{"mig-devices": {"1g.24gb+me.": 1}})),
                                        [f'{C0}.mig-devices["1g.24gb+me."]: {PROFILE_GRAMMAR}']),
    "profile-upper-case": (mig(entry(**{"mig-devices": {"1G.10GB": 1}})),
                           [f'{C0}.mig-devices["1G.10GB"]: {PROFILE_GRAMMAR}']),
    "profile-not-a-string": (mig(entry(**{"mig-devices": {7: 1}})), [f"{C0}.mig-devices[7]: {PROFILE_GRAMMAR}"]),
    "count-negative": (mig(entry(**{"mig-devices": {"1g.10gb": -1}})),
                       [f'{C0}.mig-devices["1g.10gb"]: count must be an integer >= 0, got integer -1']),
    "count-string": (mig(entry(**{"mig-devices": {"1g.10gb": "2"}})),
                     [f'{C0}.mig-devices["1g.10gb"]: count must be an integer >= 0, got string "2"']),
    "count-bool": (mig(entry(**{"mig-devices": {"1g.10gb": True}})),
                   [f'{C0}.mig-devices["1g.10gb"]: count must be an integer >= 0, got boolean true']),
    "counts-all-zero": (mig(entry(**{"mig-devices": {"1g.10gb": 0, "2g.20gb": 0}})), [
        f"{C0}.mig-devices: all counts are 0; set at least one count > 0, or use {{}} for MIG enabled without "
        "devices"]),
}

MIG_PARTED_STRICTER_RULES = {
    "device-filter-too-short": (mig(entry(**{"device-filter": "0x20B2"})),
                                [f'{C0}.device-filter: "0x20B2" {BAD_FILTER}']),
    "device-filter-without-0x": (mig(entry(**{"device-filter": ["20B210DE"]})),
                                 [f'{C0}.device-filter[0]: "20B210DE" {BAD_FILTER}']),
    "device-filter-nfd-form": (mig(entry(**{"device-filter": ["0x233010DE", "2330"]})),
                               [f'{C0}.device-filter[1]: "2330" {BAD_FILTER}']),
    "device-filter-short-subsystem": (mig(entry(**{"device-filter": "0x20B210DE:0x147F"})),
                                      [f'{C0}.device-filter: "0x20B210DE:0x147F" {BAD_FILTER}']),
    "device-filter-unquoted-hex": (mig(entry(**{"device-filter": 0x20B210DE})), [
        f"{C0}.device-filter: must be a string or a list of strings, got integer 548540638"]),
    "device-filter-item-not-a-string": (mig(entry(**{"device-filter": [0x20B210DE]})),
                                        [f"{C0}.device-filter[0]: must be a string, got integer 548540638"]),
    "config-name-invalid-characters": (mig(DISABLED, name="all disabled/x"), [
        'mig-configs["all disabled/x"]: config name may only contain A-Z, a-z, 0-9, ".", "_" and "-", '
        'found " ", "/"']),
    "config-name-too-long": (mig(DISABLED, name="a" * 64), [
        f"mig-configs.{'a' * 64}: config name is 64 characters long, must be at most 63 "
        "(it is a ConfigMap key and a node-label value)"]),
    "config-name-ends-badly": (mig(DISABLED, name="all-disabled-"),
                               ["mig-configs.all-disabled-: config name must start and end with a letter or digit"]),
    "config-name-not-a-string": ({"version": "v1", "mig-configs": {1: [DISABLED]}},
                                 ["mig-configs[1]: config name must be a string, got integer 1"]),
    "mig-devices-null": (mig({**DISABLED, "mig-devices": None}), [f"{C0}.mig-devices: must be a mapping, got null"]),
    "overlap-all-and-all": (mig(DISABLED, ENABLED), [f"{C1}: matches GPUs that entry [0] matches too {OVERLAP}"]),
    "overlap-same-filter-shared-index": (
        mig(entry(devices=[0, 1], **{"device-filter": "0x20B210DE"}),
            entry(devices=[1, 2], **{"device-filter": ["0x1FB010DE", "0x20b210de"]})),
        [f"{C1}: matches GPUs that entry [0] matches too {OVERLAP}"]),
    "overlap-filter-and-no-filter": (mig(entry(**{"device-filter": "0x20B210DE"}), {**DISABLED, "devices": [3]}),
                                     [f"{C1}: matches GPUs that entry [0] matches too {OVERLAP}"]),
    "overlap-subsystem-and-plain-id": (mig(entry(**{"device-filter": "0x20B210DE:0x147F10DE"}),
                                           entry(**{"device-filter": "0x20B210DE"})),
                                       [f"{C1}: matches GPUs that entry [0] matches too {OVERLAP}"]),
    "overlap-reported-once-per-entry": (mig(DISABLED, DISABLED, DISABLED), [
        f"{C1}: matches GPUs that entry [0] matches too {OVERLAP}",
        f"mig-configs.cfg[2]: matches GPUs that entry [0] matches too {OVERLAP}"]),
}


@pytest.mark.parametrize("name", sorted(MIG_PARTED_UPSTREAM_RULES))
def test_mig_parted_upstream_rule(name):
    config, expected = MIG_PARTED_UPSTREAM_RULES[name]
    assert check_mig_parted_config(config) == expected


@pytest.mark.parametrize("name", sorted(MIG_PARTED_STRICTER_RULES))
def test_mig_parted_stricter_rule(name):
    config, expected = MIG_PARTED_STRICTER_RULES[name]
    assert check_mig_parted_config(config) == expected


def test_disjoint_entries_do_not_overlap():
    config = mig(entry(devices=[0, 1], **{"device-filter": "0x20B210DE"}),
                 entry(devices=[2, 3], **{"device-filter": "0x20B210DE"}),
                 entry(**{"device-filter": ["0x233010DE", "0x233110DE"]}),
                 {**DISABLED, "device-filter": "0x1FB010DE"})
    assert check_mig_parted_config(config) == []


def test_invalid_entries_are_left_out_of_the_overlap_check():
    config = mig(entry(**{"device-filter": "bogus"}), entry(devices=None), ENABLED)
    assert check_mig_parted_config(config) == [
        f'{C0}.device-filter: "bogus" {BAD_FILTER}', f'{C1}.devices: required: "all" or a list of GPU indexes']


CONFIG_NAME_RULES = {
    "empty": ("", ["$: config name must not be empty"]),
    "too-long": ("x" * 64, ["$: config name is 64 characters long, must be at most 63 "
                            "(it is a ConfigMap key and a node-label value)"]),
    "starts-with-dash": ("-a", ["$: config name must start and end with a letter or digit"]),
    "ends-with-dot": ("a.", ["$: config name must start and end with a letter or digit"]),
    "underscore-at-start": ("_a", ["$: config name must start and end with a letter or digit"]),
    "slash": ("a/b", ['$: config name may only contain A-Z, a-z, 0-9, ".", "_" and "-", found "/"']),
    "colon-and-space": ("a: b", ['$: config name may only contain A-Z, a-z, 0-9, ".", "_" and "-", found " ", ":"']),
    "non-ascii": ("caf\u00e9", ['$: config name may only contain A-Z, a-z, 0-9, ".", "_" and "-", found "\u00e9"',
                                "$: config name must start and end with a letter or digit"]),
    "not-a-string": (12, ["$: config name must be a string, got integer 12"]),
}


@pytest.mark.parametrize("name", sorted(CONFIG_NAME_RULES))
def test_config_name_rule(name):
    value, expected = CONFIG_NAME_RULES[name]
    assert check_config_name(value) == expected


def test_formats_imports_only_the_standard_library():
    code = ("import sys; before = set(sys.modules); import gpuconf.output.formats; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    loaded = set(out.split())
    assert {"gpuconf", "gpuconf.output.formats"} <= loaded
    foreign = {m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "gpuconf"}
    assert foreign == set()
    # Its package's __init__ holds only a docstring: nothing else of gpuconf comes along.
    assert {m for m in loaded if m.startswith("gpuconf.")} == {"gpuconf.output", "gpuconf.output.formats"}


# --- 3. what gpuconf generates -------------------------------------------------------------------------------------


def check_plan(p) -> list[str]:
    """Every problem of every config a plan renders, prefixed with the config's key."""
    problems = []
    for key, config in p.device_plugin_configs.items():
        problems += [f"device-plugin key {key}: {m}" for m in check_config_name(key)]
        problems += [f"device-plugin {key}: {m}" for m in check_device_plugin_config(config, mig_strategy=p.strategy)]
    problems += [f"mig-parted: {m}" for m in check_mig_parted_config({"version": "v1", "mig-configs": p.mig_configs})]
    problems += [f"mig-parted key {key}: {m}" for key in p.mig_configs for m in check_config_name(key)]
    for pool in p.pools:  # the labels that select the configs name existing keys
        assert pool.device_plugin_key in p.device_plugin_configs
        assert pool.mig_key is None or pool.mig_key in p.mig_configs
    assert p.default_device_plugin_key in p.device_plugin_configs
    return problems


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_generated_configs_of_examples_validate(example):
    from gpuconf import plan
    from gpuconf.intent.validate import validate_path

    p = plan.build(validate_path(example).intent, str(example))
    assert check_plan(p) == []
    assert p.device_plugin_configs and p.mig_configs


def test_examples_generate_every_kind_of_config():
    """Not vacuous: the examples' plans hold MPS, time-slicing, MIG and plain configs."""
    from gpuconf import plan
    from gpuconf.intent.validate import validate_path

    seen = set()
    for example in EXAMPLES:
        p = plan.build(validate_path(example).intent, str(example))
        for config in p.device_plugin_configs.values():
            seen |= set(config.get("sharing", {"plain": None}))
        seen |= {"mig-enabled" for entries in p.mig_configs.values() for e in entries if e["mig-enabled"]}
    assert seen == {"plain", "timeSlicing", "mps", "mig-enabled"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=S.intents())
def test_generated_configs_of_random_valid_intents_validate(case):
    from gpuconf import plan
    from gpuconf.intent.loader import LoadError, load_text
    from gpuconf.intent.validate import validate_document

    # plan.build expects an intent that passed validation. The generator means its intents to be valid; where
    # gpuconf validate disagrees, that is test_properties' business, not this test's.
    try:
        result = validate_document(load_text(case.text(), "r.yaml"))
    except LoadError:
        return
    if result.ok:
        assert check_plan(plan.build(result.intent, "r.yaml")) == []

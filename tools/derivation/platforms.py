"""What gpuconf sets on each platform (profiles/platforms.json): AKS, EKS, GKE, Karpenter, OpenShift and the container
runtimes of RKE2, k3s and MicroK8s, each fact checked against the platform fact sheets (and the EC2NodeClass CRD)."""

from __future__ import annotations

import re
from typing import Any

from .common import REFERENCE_SCRIPT, DeriveError, Reference, dump, header, markdown_table, require

PLATFORM_FACTS = "platforms/platform-facts.md"
EC2_NODECLASS_CRD = "crds/karpenter.k8s.aws/karpenter.k8s.aws_ec2nodeclasses.yaml"
PLATFORMS_OUT = "profiles/platforms.json"

# The catalogue model of each GPU cell of the Karpenter instance-type table (§2a). The V100 rows are the SXM2 parts:
# gpu-models-extra.md §1 cites these very EC2 rows (p3 16384 MiB, p3dn 32768 MiB) for V100 SXM2 16GB and 32GB.
# "fractional L4" (g6f/gr6f, instance-gpu-count 0) is no whole GPU of any model and maps to none.
KARPENTER_GPUS = {
    "B300": "B300", "B200": "B200", "H200": "H200", "H100": "H100-80GB", "A100-80GB": "A100-80GB",
    "A100-40GB": "A100-40GB", "V100 32GB": "V100-SXM2-32GB", "V100 16GB": "V100-SXM2-16GB",
    "RTX PRO 6000 Server": "RTX-PRO-6000", "L40S": "L40S", "L4": "L4", "fractional L4": None, "A10G": "A10G",
    "T4G (arm64)": "T4G", "T4": "T4",
}
# The catalogue model of each AKS VM series (§3 table): series -> (model, the words of the GPU cell that name it).
AKS_SERIES = {
    "NC A100 v4": ("A100-80GB", "A100"), "ND H100 v5": ("H100-80GB", "H100"),
    "NCads H100 v5": ("H100-NVL", "H100 NVL"), "NVads A10 v5": ("A10", "A10"), "NCasT4_v3": ("T4", "T4"),
}
# GKE accelerator label values the fact sheet lists as observed (§1, "values not an exhaustive list"), and the
# catalogue models each can name. nvidia-tesla-a100 names an A100 without its memory, so either A100 model fits.
GKE_ACCELERATORS = {
    "nvidia-tesla-t4": ["T4"], "nvidia-l4": ["L4"], "nvidia-tesla-a100": ["A100-40GB", "A100-80GB"],
    "nvidia-h100-80gb": ["H100-80GB"],
}
# gke-aks-facts.md §a: the catalogue model of each GKE accelerator type whose GPU cell names one exactly. V100 (which
# V100?), P100, P4 and K80 (not in the catalogue), GB300 and RTX PRO 6000 (one unofficial source) map to none.
GKE_AKS_FACTS = "platforms/gke-aks-facts.md"
GKE_ACCELERATOR_TYPES = {
    "nvidia-tesla-t4": ("NVIDIA T4", "T4"), "nvidia-tesla-a100": ("NVIDIA A100 40GB", "A100-40GB"),
    "nvidia-a100-80gb": ("NVIDIA A100 80GB", "A100-80GB"), "nvidia-l4": ("NVIDIA L4", "L4"),
    "nvidia-h100-80gb": ("NVIDIA H100 80GB", "H100-80GB"), "nvidia-h100-mega-80gb": ("NVIDIA H100 80GB Mega", "H100-80GB"),
    "nvidia-h200-141gb": ("NVIDIA H200 141GB", "H200"), "nvidia-b200": ("NVIDIA B200", "B200"),
    "nvidia-gb200": ("NVIDIA GB200", "GB200"),
}
# Runtime rows of the §5 table gpuconf renders (the others are the vanilla defaults and the superseded RKE2 text).
RUNTIME_ROWS = {"rke2": "RKE2, operator v25.10+/v26.3", "k3s": "k3s", "microk8s": "MicroK8s"}


class FactSheet:
    """The platform fact sheet, cut into its numbered sections, with checked quotes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sections: dict[str, str] = {}
        current = None
        for line in text.splitlines(keepends=True):
            match = re.match(r"^## (\d+)\. ", line)
            if match:
                current = match.group(1)
                self.sections[current] = ""
            if current is not None:
                self.sections[current] += line
        if sorted(self.sections) != [str(n) for n in range(7)]:
            raise DeriveError(f"{PLATFORM_FACTS}: expected sections 0-6, found {sorted(self.sections)}")

    def quote(self, section: str, literal: str) -> str:
        """literal, after checking that section §N of the sheet says it (line breaks count as spaces)."""
        return _quote(self.sections[section], literal, f"{PLATFORM_FACTS} §{section}")

    def table(self, section: str, first_header: str) -> dict[str, dict[str, str]]:
        """A table of one section, keyed by its first column."""
        rows = markdown_table(self.sections[section], f"{PLATFORM_FACTS} §{section}", first_header)
        return {row[first_header]: row for row in rows}


def _typed(value: str) -> Any:
    """A values setting as the chart reads it: true/false are booleans, digits an integer, the rest a string."""
    if value in ("true", "false"):
        return value == "true"
    return int(value) if value.isdigit() else value


def chart_settings(text: str) -> dict[str, Any]:
    """The `key.path=value` settings quoted in a cell or line of the sheet."""
    return {key: _typed(value) for key, value in re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)=([^`]*)`", text)}


def _row(table: dict[str, dict[str, str]], prefix: str, where: str) -> dict[str, str]:
    """The one row whose first cell starts with prefix."""
    found = [row for key, row in table.items() if key.startswith(prefix)]
    if len(found) != 1:
        raise DeriveError(f"{where}: expected one row starting {prefix!r}, found {len(found)}")
    return found[0]


def _gke(sheet: FactSheet) -> dict[str, Any]:
    modes = sheet.table("1", "mode")
    google, operator = _row(modes, "Google driver installer", "§1"), _row(modes, "NVIDIA driver manager", "§1")
    values = chart_settings(google["operator values"])
    # cdi.default: "ignored, see §0" (deprecated; chart v26.7.0 no longer renders it).
    if values.pop("cdi.default", None) is None or "ignored" not in google["operator values"]:
        raise DeriveError(f"{PLATFORM_FACTS} §1: the installer row no longer calls cdi.default ignored")
    if chart_settings(operator["operator values"]) or "chart defaults" not in operator["operator values"]:
        raise DeriveError(f"{PLATFORM_FACTS} §1: the driver-manager row no longer keeps the chart defaults")
    sheet.quote("1", "taints GPU nodes with key `nvidia.com/gpu`, effect NoSchedule")
    accelerators = {}
    for value, models in GKE_ACCELERATORS.items():
        accelerators[sheet.quote("1", value)] = models
    return {
        "source": "NVD:gke (NVIDIA/cloud-native-docs gpu-operator/google-gke.rst)",
        "googleDriver": {"values": values, "nodeOs": google["node OS"], "installer": google["who installs the driver"]},
        "operatorDriver": {"values": {}, "nodeOs": sheet.quote("1", operator["node OS"])},
        "nodePoolLabel": dict(zip(("key", "value"), sheet.quote(
            "1", "gke-no-default-nvidia-gpu-device-plugin=true").split("="))),
        "acceleratorOption": sheet.quote("1", "gpu-driver-version=disabled"),
        "containerd2": {"fromKubernetes": sheet.quote("1", "GKE 1.33+").split()[1].rstrip("+"),
                        "toolkitEnv": {"RUNTIME_CONFIG_SOURCE": sheet.quote("1", "RUNTIME_CONFIG_SOURCE=file").split("=")[1]},
                        "source": "NVD:gke note; NVIDIA/cloud-native-docs PR #312; NVIDIA/nvidia-container-toolkit #1222"},
        "migManagerEnv": {"WITH_REBOOT": "true"} if sheet.quote(
            "1", '`migManager.env` `WITH_REBOOT` = `"true"` (string)') else {},
        "resourceQuota": {
            "name": sheet.quote("1", "gpu-operator-quota"),
            "pods": int(sheet.quote("1", "spec.hard.pods: 100").rsplit(" ", 1)[1]),
            "priorityClasses": [sheet.quote("1", "system-node-critical"), sheet.quote("1", "system-cluster-critical")],
            "source": "NVD gpu-operator/manifests/input/google-gke-gpu-operator-quota.yaml; gpu-operator#660",
        },
        "labels": {"nodePool": sheet.quote("1", "cloud.google.com/gke-nodepool"),
                   "accelerator": sheet.quote("1", "cloud.google.com/gke-accelerator"),
                   "acceleratorCount": sheet.quote("1", "cloud.google.com/gke-accelerator-count")},
        "acceleratorModels": accelerators,
        "gpuTaint": {"key": sheet.quote("1", "nvidia.com/gpu"), "effect": "NoSchedule"},
        "reservedLabelPrefix": "cloud.google.com/",
    }


def _quote(text: str, literal: str, where: str) -> str:
    """literal, after checking that text says it (line breaks count as spaces)."""
    if literal not in re.sub(r"\s+", " ", text):
        raise DeriveError(f"{where} no longer says {literal!r}")
    return literal


def gke_aks_facts(text: str, gke: dict[str, Any], aks: dict[str, Any]) -> None:
    """Add the node-pool facts of gke-aks-facts.md to the GKE and AKS facts: accelerator types per model, the
    autoscaling and spot flags, AKS's node-pool name rule."""
    where = GKE_AKS_FACTS
    rows = markdown_table(text, where, "accelerator type (`--accelerator type=` and the "
                                       "`cloud.google.com/gke-accelerator` value)")
    table = {row[next(iter(row))].strip("`"): row for row in rows}
    accelerators: dict[str, dict[str, Any]] = {}
    for value, (gpu, model) in GKE_ACCELERATOR_TYPES.items():
        row = table.get(value)
        if row is None or not row["GPU"].replace("*", "").startswith(gpu):
            raise DeriveError(f"{where} §a: accelerator {value} is no longer {gpu}")
        accelerators[value] = {"model": model, "machineSeries": row["machine series"]}
    gke["acceleratorModels"] = {value: [a["model"]] for value, a in sorted(accelerators.items())}
    gke["accelerators"] = dict(sorted(accelerators.items()))
    gke["labels"]["spot"] = _quote(text, "cloud.google.com/gke-spot", where)
    gke["nodePoolFlags"] = {
        "autoscaling": _quote(text, "--enable-autoscaling", where),
        "totalMin": _quote(text, "--total-min-nodes", where), "totalMax": _quote(text, "--total-max-nodes", where),
        "spot": _quote(text, "--spot", where),
        "source": "gcloud 578.0.0 lib/googlecloudsdk/command_lib/container/flags.py (gke-aks-facts §a)",
    }
    aks["nodePoolName"] = {"pattern": _quote(text, "^[a-z][a-z0-9]{0,11}$", where),
                           "source": "gke-aks-facts §b (AKS's Linux node-pool rule; az checks 12 alphanumerics)"}
    counts = re.search(r"accepts \*\*(\d+)[–-](\d+)\*\* for both", text)
    if counts is None:
        raise DeriveError(f"{where} §b: the autoscaler's count range is no longer stated")
    aks["nodePoolFlags"] = {
        "autoscaler": _quote(text, "--enable-cluster-autoscaler", where),
        "min": _quote(text, "--min-count", where), "max": _quote(text, "--max-count", where),
        "countRange": [int(counts.group(1)), int(counts.group(2))],
        "priority": _quote(text, "--priority Spot", where), "evictionPolicy": _quote(text, "--eviction-policy Delete", where),
        "source": "Azure/azure-cli acs/_params.py and _validators.py (gke-aks-facts §b)",
    }
    # The label AKS puts on Spot nodes: the fact sheet names it among what it could not verify, so gpuconf reads it
    # only from a match that names it, and the report says so.
    aks["spotLabel"] = {"key": _quote(text, "kubernetes.azure.com/scalesetpriority", where),
                        "value": _quote(text, "scalesetpriority=spot", where).split("=")[1], "verified": False}


def _eks(sheet: FactSheet) -> dict[str, Any]:
    amis = sheet.table("2", "AMI")
    out = {}
    for name, prefix in (("al2023", "EKS AL2023 NVIDIA"), ("bottlerocket", "EKS Bottlerocket"),
                         ("ubuntu", "Ubuntu EKS AMI")):
        row = _row(amis, prefix, "§2")
        out[name] = {"values": chart_settings(row["operator values"]), "ships": row["ships"], "source": row["source"]}
    if out["ubuntu"]["values"] or "operator manages driver + toolkit" not in amis[next(k for k in amis if k.startswith(
            "Ubuntu"))]["operator values"]:
        raise DeriveError(f"{PLATFORM_FACTS} §2: the Ubuntu AMI row no longer keeps the operator's driver")
    return {
        "source": "AWS (docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html); NVD:eks",
        "amis": out,
        "nodeGroupLabel": sheet.quote("2", "eks.amazonaws.com/nodegroup"),
        "eksctlDevicePlugin": sheet.quote("2", "--install-nvidia-plugin=false"),
    }


def _karpenter(sheet: FactSheet, crd: dict[str, Any], models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    table = markdown_table(sheet.sections["2"], f"{PLATFORM_FACTS} §2a", "instance family")
    families = []
    for row in table:
        gpu = row["GPU"]
        if gpu not in KARPENTER_GPUS:
            raise DeriveError(f"{PLATFORM_FACTS} §2a: GPU {gpu!r} has no catalogue model in KARPENTER_GPUS")
        counts = [int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", re.sub(r"\([^)]*\)", "", row["GPUs per size"]))]
        model_id = KARPENTER_GPUS[gpu]
        mib = row["per-GPU MiB (EC2)"]
        if model_id is not None:
            model = models.get(model_id)
            if model is None:
                raise DeriveError(f"{PLATFORM_FACTS} §2a: {gpu} maps to {model_id}, which is not in the catalogue")
            # EC2 reports a little less than the nominal size (B300: 275040 MiB of 288 GiB).
            if not mib.isdigit() or abs(int(mib) / 1024 - model["memoryGiB"]) > 0.1 * model["memoryGiB"]:
                raise DeriveError(f"{PLATFORM_FACTS} §2a: {gpu} has {mib} MiB per GPU, {model_id} {model['memoryGiB']} GiB")
        families.append({
            "families": [f.strip() for f in row["instance family"].split(",")],
            "gpuName": row["`instance-gpu-name`"].strip("`"),
            "model": model_id,
            "gpuMemoryMiB": int(mib) if mib.isdigit() else mib,
            "gpuCounts": counts if "= 0" not in row["GPUs per size"] else [0],
        })
    versions = require(crd, "spec", EC2_NODECLASS_CRD)["versions"]
    spec = versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    ami_families = spec["properties"]["amiFamily"]["enum"]
    alias = spec["properties"]["amiSelectorTerms"]["items"]["properties"]["alias"]
    alias_rule = next(r["rule"] for r in alias["x-kubernetes-validations"] if "split('@')[0] in" in r["rule"])
    alias_families = re.findall(r"'([a-z0-9]+)'", alias_rule.split(" in ", 1)[1])
    for family in ("al2023", "bottlerocket"):
        if family not in alias_families:
            raise DeriveError(f"{EC2_NODECLASS_CRD}: alias family {family} is gone")
    return {
        "source": "KP (aws/karpenter-provider-aws v1.14.1 website/content/en/docs/reference/instance-types.md)",
        "labels": {"gpuName": "karpenter.k8s.aws/" + sheet.quote("2", "instance-gpu-name"),
                   "gpuCount": "karpenter.k8s.aws/" + sheet.quote("2", "instance-gpu-count"),
                   "instanceFamily": "karpenter.k8s.aws/" + sheet.quote("2", "instance-family"),
                   "nodePool": sheet.quote("2", "karpenter.sh/nodepool")},
        "restrictedLabelDomains": [sheet.quote("2", "All live under the restricted domain `karpenter.k8s.aws`")
                                   .rsplit("`", 2)[1]],
        "instanceFamilies": families,
        "amiAliasFamilies": alias_families,
        "aliasMaxLength": alias["maxLength"],
        "amiFamilies": ami_families,
        "nodeClass": {"group": crd["spec"]["group"], "kind": crd["spec"]["names"]["kind"],
                      "version": versions[0]["name"]},
        "maxRequirements": int(sheet.quote("2", "at most 100 requirements").split()[2]),
    }


def _aks(sheet: FactSheet) -> dict[str, Any]:
    keep = re.search(r"Keep AKS's driver and toolkit: (.*?)\(NVD:aks\)", re.sub(r"\s+", " ", sheet.sections["3"]))
    if keep is None:
        raise DeriveError(f"{PLATFORM_FACTS} §3: the keep-AKS's-driver option is no longer stated")
    keep = keep.group(1)
    series = []
    for name, row in sheet.table("3", "VM series").items():
        model, words = AKS_SERIES.get(name, (None, None))
        if model is None or words not in row["GPU"]:
            raise DeriveError(f"{PLATFORM_FACTS} §3: VM series {name!r} ({row['GPU']}) has no model in AKS_SERIES")
        series.append({"series": name, "model": model, "gpu": row["GPU"], "perGpu": row["per GPU"],
                       "gpusPerVm": row["GPUs/VM"], "source": row["source"]})
    return {
        "source": "NVD:aks; MS-OP (learn.microsoft.com/azure/aks/nvidia-gpu-operator)",
        "agentPoolLabel": sheet.quote("3", "kubernetes.azure.com/agentpool"),
        "reservedLabelPrefix": sheet.quote("3", "kubernetes.azure.com/"),
        "operatorDriver": {"values": {}, "nodePoolFlag": sheet.quote("3", "--gpu-driver none"),
                           "cli": sheet.quote("3", "Azure CLI >= 2.72.2"),
                           "olderFlag": sheet.quote("3", "--skip-gpu-driver-install")},
        "preinstalled": {"values": chart_settings(keep)},
        "vmSeries": series,
    }


def _openshift(sheet: FactSheet) -> dict[str, Any]:
    channel = re.search(r"Bundle (v[\d.]+): channels `stable`, `(v[\d.]+)` \(default `(v[\d.]+)`\)",
                        sheet.sections["4"])
    if channel is None:
        raise DeriveError(f"{PLATFORM_FACTS} §4: the bundle's channels are no longer stated")
    return {
        "source": "NVD:ocp-install-gpu-ocp; GO bundle/metadata/annotations.yaml",
        "olm": {channel.group(1): {
            "package": sheet.quote("4", "gpu-operator-certified"),
            "source": sheet.quote("4", "certified-operators"),
            "sourceNamespace": sheet.quote("4", "openshift-marketplace"),
            "channel": channel.group(3),
            "installModes": ["OwnNamespace", "SingleNamespace"] if sheet.quote(
                "4", "install modes OwnNamespace/SingleNamespace only") else [],
            "openshiftVersions": sheet.quote("4", "v4.18-v4.22"),
        }},
        "suggestedNamespace": sheet.quote("4", "nvidia-gpu-operator"),
        "monitoringLabel": dict(zip(("key", "value"), sheet.quote("4", "openshift.io/cluster-monitoring=true").split("="))),
        "clusterPolicy": {"operator": {sheet.quote("4", "use_ocp_driver_toolkit"): True}},
        "nfd": {"namespace": sheet.quote("4", "openshift-nfd"),
                "presentLabel": sheet.quote("4", "feature.node.kubernetes.io/pci-10de.present=true").split("=")[0]},
    }


def _runtimes(sheet: FactSheet) -> dict[str, Any]:
    table = sheet.table("5", "platform")
    out = {}
    for name, key in RUNTIME_ROWS.items():
        row = table[key]
        env, community = {}, False
        for var in ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG_SOURCE"):
            quoted = re.findall(r"`([^`]+)`", row[var])
            if quoted:
                env[var] = quoted[0]
                community = community or row[var].startswith("community")
        out[name] = {"toolkitEnv": env, "source": row["source"], "community": community}
    nri = sheet.sections["0"]
    return {
        "distributions": out,
        "nri": {
            "values": chart_settings(sheet.quote("0", "`cdi.nriPluginEnabled=true`")),
            "needs": chart_settings(sheet.quote("0", "`cdi.enabled=true`")),
            "containerd": sheet.quote("0", "containerd 1.7.30, 2.1.x, 2.2.x or 2.3.x"),
            "rke2": sheet.quote("5", "v1.31.13, v1.32.9, v1.33.5, v1.34.1 and later"),
            "crioConflict": "NRI is not supported with CRI-O" in nri,
            "source": "NVD:cdi; NVD:rn v26.3.0",
        },
    }


def build_platforms(text: str, crd: dict[str, Any], models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The platform facts gpuconf renders from, each checked against the fact sheet (and the EC2NodeClass CRD)."""
    sheet = FactSheet(text)
    unverified = [line[2:].strip() for line in sheet.sections["6"].splitlines() if line.startswith("- ")]
    return {
        "aks": _aks(sheet), "eks": _eks(sheet), "gke": _gke(sheet), "karpenter": _karpenter(sheet, crd, models),
        "openshift": _openshift(sheet), "runtimes": _runtimes(sheet), "notVerified": unverified,
    }


def derive(ref: Reference, models: dict[str, dict[str, Any]]) -> dict[str, bytes]:
    """profiles/platforms.json, checked against the catalogue's models."""
    platforms = build_platforms(ref.text(PLATFORM_FACTS), ref.yaml(EC2_NODECLASS_CRD), models)
    gke_aks_facts(ref.text(GKE_AKS_FACTS), platforms["gke"], platforms["aks"])
    return {PLATFORMS_OUT: dump({
        "generated": header(REFERENCE_SCRIPT, ref.take(PLATFORM_FACTS, EC2_NODECLASS_CRD, GKE_AKS_FACTS),
                            "What gpuconf sets on each platform, each fact checked against the platform fact sheet."),
        **platforms,
    })}

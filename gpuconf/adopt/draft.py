"""The Adopter: classifies every values path the user set, writes the draft intent, renders it and proves the
outcomes against the effective values (mapping.py says what each outcome means)."""

from __future__ import annotations

import io
import re
from typing import Any

from .. import catalog
from ..findings import dotted
from . import mapping as M
from . import sources as S
from .mapping import Setting

#: A driver version the intent takes (GC316: a driver image tag, <major>.<minor>.<revision>); others are carried.
DRIVER_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
#: values leaf under driver.upgradePolicy -> the intent's spec.driver.upgrade field.
UPGRADE_FIELDS = {
    ("autoUpgrade",): ("autoUpgrade",), ("maxParallelUpgrades",): ("maxParallel",),
    ("maxUnavailable",): ("maxUnavailable",),
    **{("drain", k): ("drain", k) for k in ("enable", "force", "timeoutSeconds", "deleteEmptyDir", "podSelector")},
    **{("gpuPodDeletion", k): ("podDeletion", k) for k in ("force", "timeoutSeconds", "deleteEmptyDir")},
    **{("waitForCompletion", k): ("waitForCompletion", k) for k in ("podSelector", "timeoutSeconds")},
}
MAX_ROUNDS = 20


class Adopter:
    """Feed it the inputs; run() returns the Adopted draft."""

    def __init__(self, inputs: list[S.ValuesInput], configmaps: list[S.ConfigMapInput], chart_version: str,
                 name: str = "imported", nodes_text: str | None = None, gpu: str | None = None,
                 why: str = "--chart-version") -> None:
        self.inputs = inputs
        self.configmaps = configmaps
        self.facts = catalog.chart(chart_version)
        assert self.facts is not None, "the command checks the chart version"
        self.version = chart_version
        self.why = why  # where the installed release came from (adopt/release.py): the chartVersion comment
        self.name = name
        self.nodes_text = nodes_text
        self.gpu = gpu or M.PLACEHOLDER_GPU
        self.settings: list[Setting] = []
        self.notes: list[str] = []
        self.parent = False
        # Pieces of the draft (plain data; the nodes' draft, when there is one, supplies what is left out here).
        self.cluster: dict = {}
        self.driver: dict = {}
        self.upgrade: dict = {}
        self.monitoring: dict = {}
        self.profiles: dict = {}
        self.pools: list = []
        self.pool_notes: dict[int, str] = {}
        self.overrides: dict[tuple, dict] = {}
        self.configs: list[dict] = []  # the device-plugin configs and what became of each
        self.refused: dict[tuple, str] = {}  # override paths whose value no intent file can hold, and why

    # -- reading ------------------------------------------------------------------------------------------------

    def run(self) -> M.Adopted:
        """Classify, draft, render, prove."""
        merged, where = S.merge_inputs(self.inputs)
        user = self._unwrap(merged, where)
        self.user = user
        self.effective = S.coalesce(self.facts.defaults, user)
        for path, value in S.leaves(user):
            self.settings.append(Setting(path, value, where.get(((S.PARENT_KEY,) if self.parent else ()) + path, "?")))
        for s in self.settings:
            self._classify(s)
        self._sharing()
        self._pools_without_nodes()
        text, findings = self._settle()
        names = [i.name for i in self.inputs] + [c.source for c in self.configmaps]
        return M.Adopted(text, self.settings, self.version, names, findings, self.notes, self.parent, self.configs)

    def _unwrap(self, merged: dict, where: dict) -> dict:
        """The GPU Operator's values, also when a parent chart nests them under `gpu-operator:`."""
        inner = merged.get(S.PARENT_KEY)
        chart_keys = set(self.facts.defaults)
        if not isinstance(inner, dict) or S.PARENT_KEY in chart_keys or (set(merged) - {S.PARENT_KEY}) & chart_keys:
            return merged
        self.parent = True
        for key, value in merged.items():
            if key == S.PARENT_KEY:
                continue
            for path, leaf in S.leaves({key: value}):
                self.settings.append(Setting(path, leaf, where.get(path, "?"), "dropped", None,
                                             "a value of the parent chart, not under its gpu-operator: key"))
        self.notes.append("the values nest the GPU Operator under a parent chart's gpu-operator: key; paths below "
                          "are relative to it")
        return inner

    # -- one path -----------------------------------------------------------------------------------------------

    def _classify(self, s: Setting) -> None:
        if s.outcome:
            return
        status = M.path_status(self.facts, s.path)
        if status == "dead":
            s.outcome, s.why = "dropped", (f"in chart {self.version}'s values.yaml, but no template reads it: Helm "
                                           "ignored it")
            return
        if status == "unknown":
            s.outcome, s.why = "dropped", M._unknown_why(self.facts, s.path)
            if self.parent and s.path == ("enabled",):
                s.why = ("the parent chart's switch for the subchart (its Chart.yaml condition gpu-operator.enabled), "
                         "not a value of the GPU Operator chart")
            return
        found, default = S.get(self.facts.defaults, s.path)
        if found and M.same(default, s.value):
            s.outcome, s.why = "default", f"equal to chart {self.version}'s default"
            return
        problem = _unloadable([s.value, [k for k in s.path if isinstance(k, str)]])
        if problem:
            s.outcome, s.why = "changed", f"not carried: {problem}"
            return
        head = s.path[:2]
        if s.path[:1] == ("driver",):
            if self._driver(s):
                return
        elif head == ("mig", "strategy") and s.value in ("single", "mixed") and len(s.path) == 2:
            self.cluster["migStrategy"] = s.value
            self._mapped(s, "spec.cluster.migStrategy")
            return
        elif s.path == ("toolkit", "env"):
            if self._toolkit_env(s):
                return
        elif s.path[:2] == ("dcgmExporter", "serviceMonitor") and self._service_monitor(s):
            return
        elif s.path[:2] in (("devicePlugin", "config"), ("migManager", "config")):
            s.outcome = "changed"  # _sharing says why
            return
        self._override(s)

    def _mapped(self, s: Setting, to: str, why: str = "") -> None:
        s.outcome, s.to, s.why = "mapped", to, why or f"expressed as {to} in the intent"

    def _override(self, s: Setting) -> None:
        """Carry the path in spec.overrides (at the nearest ancestor whose keys hold no dot: override paths are
        dotted, so a key like nvidia.com/gpu.present is carried inside its parent map)."""
        cut = next((i for i, k in enumerate(s.path) if not isinstance(k, str) or "." in k or not k), len(s.path))
        where = s.path[:max(cut, 1)]
        found, value = S.get(self.user, where)
        problem = self.refused.get(where) or _unloadable(value)
        if problem:
            self.refused[where] = problem
            s.outcome, s.to, s.why = "changed", None, f"not carried: {problem}"
            return
        if where not in self.overrides:
            self.overrides[where] = {"path": ".".join(where), "value": value, "why": f"carried over from {s.source}",
                                     "settings": []}
        self.overrides[where]["settings"].append(s)
        s.outcome, s.to = "override", f"spec.overrides[{'.'.join(where)}]"
        s.why = f"carried over from {s.source}" + ("" if where == s.path else f" (inside {'.'.join(where)}: its "
                                                                              "keys hold dots)")

    def _driver(self, s: Setting) -> bool:
        path, value = s.path, s.value
        if path == ("driver", "enabled") and value is False:
            self.driver["preinstalled"] = True
            self._mapped(s, "spec.driver.preinstalled", "the nodes keep their host driver: spec.driver.preinstalled")
            return True
        if path == ("driver", "version"):
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            text = value if isinstance(value, str) else self._raw(s.path, value) if number else None
            if text is not None and DRIVER_VERSION.fullmatch(text):
                self.driver["version"] = text
                if isinstance(value, str):
                    self._mapped(s, "spec.driver.version")
                else:
                    s.outcome, s.to = "changed", "spec.driver.version"
                    s.why = _number_why(text, value, "gpuconf pins")
                return True
            if text is not None:
                self.overrides[("driver", "version")] = {"path": "driver.version", "value": text,
                                                         "why": f"carried over from {s.source}, quoted",
                                                         "settings": [s]}
                s.outcome, s.to = "changed", "spec.overrides[driver.version]"
                s.why = _number_why(text, value, f"carried over from {s.source} as")
                return True
            return False
        if path == ("driver", "kernelModuleType") and value in ("auto", "open", "proprietary"):
            self.driver["kernelModuleType"] = value
            self._mapped(s, "spec.driver.kernelModuleType")
            return True
        sub = path[2:]
        if path[:2] == ("driver", "upgradePolicy") and sub in UPGRADE_FIELDS and not _unloadable(value):
            target = UPGRADE_FIELDS[sub]
            node = self.upgrade
            for key in target[:-1]:
                node = node.setdefault(key, {})
            node[target[-1]] = value
            self._mapped(s, "spec.driver.upgrade." + ".".join(target))
            return True
        return False

    def _raw(self, path: tuple, value: Any) -> str:
        """A number's text as written in the values file that set it (570.10, not 570.1)."""
        for given in reversed(self.inputs):
            prefix = (S.PARENT_KEY,) if self.parent else ()
            raw = given.raw.get((*prefix, *path))
            if raw is not None:
                return raw
        return S._scalar_text(value)

    def _toolkit_env(self, s: Setting) -> bool:
        """The toolkit's containerd paths: a distribution gpuconf knows (k3s, RKE2, MicroK8s), or explicit paths."""
        from .. import platforms

        env = s.value
        if not isinstance(env, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str)
                                                and isinstance(e.get("value"), str) and set(e) == {"name", "value"}
                                                for e in env):
            return False
        values = {e["name"]: e["value"] for e in env}
        distribution = None
        for name in ("microk8s", "k3s", "rke2"):
            facts = platforms.runtime(name)
            if facts and all(values.get(k) == v for k, v in facts["toolkitEnv"].items()):
                config = values.get("CONTAINERD_CONFIG", "")
                if name == "rke2" and "/k3s/" in config:
                    continue
                distribution = name
                break
        runtime = {}
        if distribution is None:
            for key, field_name in (("CONTAINERD_CONFIG", "configPath"), ("CONTAINERD_SOCKET", "socketPath")):
                if values.get(key, "").startswith("/") and len(values[key]) >= 2:
                    runtime[field_name] = values[key]
        if distribution:
            self.cluster["distribution"] = distribution
            to = "spec.cluster.distribution"
        elif runtime:
            self.cluster["containerRuntime"] = runtime
            to = "spec.cluster.containerRuntime"
        else:
            return False
        if set(values) <= set(M.RUNTIME_ENV) and (distribution or set(values) <= {"CONTAINERD_CONFIG",
                                                                                   "CONTAINERD_SOCKET"}):
            self._mapped(s, to, f"containerd's paths: {to} " + (f"{distribution}" if distribution else "(explicit)"))
            return True
        self._override(s)
        s.why += f"; its containerd paths also set {to}" + (f": {distribution}" if distribution else "")
        return True

    def _service_monitor(self, s: Setting) -> bool:
        rest = s.path[2:]
        if rest == ("enabled",) and isinstance(s.value, bool):
            self.monitoring["serviceMonitor"] = s.value
            self._mapped(s, "spec.monitoring.serviceMonitor")
            return True
        if rest == ("interval",) and isinstance(s.value, str) and re.fullmatch(r"[0-9]+(ms|s|m|h)", s.value):
            self.monitoring["interval"] = s.value
            self._mapped(s, "spec.monitoring.interval")
            return True
        if len(rest) == 2 and rest[0] == "additionalLabels" and isinstance(s.value, str) \
                and LABEL_KEY.fullmatch(rest[1]) and LABEL_VALUE.fullmatch(s.value) \
                and not rest[1].startswith("gpuconf.dev/") and not rest[1].startswith("app.kubernetes.io/"):
            self.monitoring.setdefault("prometheusSelector", {})[rest[1]] = s.value
            self._mapped(s, f"spec.monitoring.prometheusSelector[{rest[1]}]")
            return True
        return False

    # -- sharing ------------------------------------------------------------------------------------------------

    def _sharing(self) -> None:
        """The device-plugin configs the values name (inline data or --configmap): sharing profiles and pools."""
        config = self.effective.get("devicePlugin", {}).get("config", {}) if isinstance(
            self.effective.get("devicePlugin"), dict) else {}
        config = config if isinstance(config, dict) else {}
        name = config.get("name") if isinstance(config.get("name"), str) else ""
        default = config.get("default") if isinstance(config.get("default"), str) else ""
        found: dict[str, M.PluginConfig] = {}
        data = config.get("data")
        if isinstance(data, dict) and config.get("create") is True:
            for key, text in data.items():
                found[key] = self._plugin_config(key, text, f"devicePlugin.config.data[{key}]")
        mig = self.effective.get("migManager", {}).get("config", {}) if isinstance(
            self.effective.get("migManager"), dict) else {}
        mig = mig if isinstance(mig, dict) else {}
        mig_name = mig.get("name") if isinstance(mig.get("name"), str) else ""
        self.mig_default = mig.get("default") if isinstance(mig.get("default"), str) else ""
        self.mig_configs: dict[str, tuple[dict | None, str, str]] = {}
        if mig.get("create") is True and isinstance(mig.get("data"), dict):
            for key, text in mig["data"].items():
                self._read_mig(text, f"migManager.config.data[{key}]")
        for cm in self.configmaps:
            if name and cm.name == name:
                for key, text in cm.data.items():
                    found[key] = self._plugin_config(key, text, f"{cm.source} key {key}")
            elif mig_name and cm.name == mig_name:
                for key, text in cm.data.items():
                    self._read_mig(text, f"{cm.source} key {key}")
            else:
                named = " or ".join(repr(n) for n in (name, mig_name) if n)
                self.notes.append(f"{cm.source}: not a ConfigMap the values name (devicePlugin.config.name, "
                                  f"migManager.config.name{': ' + named if named else ' are not set'}): not read")
        self.values_config_name = name
        if name and not found:
            self.notes.append(f"the values name the device-plugin ConfigMap {name!r}, which was not given "
                              "(--configmap FILE): its sharing is not imported")
        self.plugin_configs = found
        self.default_key = default
        used: set[str] = set()
        for key, pc in found.items():
            row = {"config": key, "source": pc.source, "profile": None, "outcome": "changed", "why": pc.why}
            if pc.profile is not None and "exclusive" not in pc.profile:
                profile_name = _unique(M._dns(key), used | {"exclusive"})
                used.add(profile_name)
                self.profiles[profile_name] = pc.profile
                row.update(profile=profile_name, outcome="mapped", why="")
            elif pc.profile is not None:
                row.update(profile="exclusive", outcome="mapped", why="")
            else:
                row["why"] = (f"not expressible as a sharing profile ({pc.why}): its nodes get whole GPUs unless you "
                              "declare the sharing yourself")
                # Said on stderr too, not only in --report: the draft's whole GPUs are gpuconf's fallback, not the
                # installation's sharing.
                self.notes.append(f"device-plugin config {key!r} ({pc.source}) could not be read: {row['why']}")
            self.configs.append(row)
        what = ", ".join(f"{r['config']} -> {r['profile']}" for r in self.configs if r["profile"])
        for s in self.settings:
            if s.outcome != "changed" or s.why or s.path[:2] not in (("devicePlugin", "config"),
                                                                     ("migManager", "config")):
                continue
            if s.path[0] == "migManager":
                s.why = ("gpuconf sets migManager.config itself: its own mig-parted config (gpuconf-mig-parted-config) "
                         "when pools have MIG layouts (declare this config's layouts as sharing profiles), else the "
                         "chart's default")
            elif self.nodes_text is not None:
                s.why = ("gpuconf renders its own device-plugin ConfigMap (gpuconf-device-plugin-config) with "
                         "content-addressed keys; the pools' sharing comes from the nodes' GFD labels")
            else:
                s.to = "spec.sharingProfiles"
                s.why = ("gpuconf renders its own device-plugin ConfigMap (gpuconf-device-plugin-config) with "
                         "content-addressed keys, selected per pool" + (f"; configs became profiles: {what}"
                                                                        if what else ""))

    def _read_mig(self, text: Any, source: str) -> None:
        """The named MIG configs of one mig-parted file: name -> (layout or None, why not, source)."""
        if not isinstance(text, str):
            self.notes.append(f"{source}: its content is not text: not read")
            return
        configs, why = M.mig_configs(text)
        if why:
            self.notes.append(f"{source}: {why}: not read")
        for config_name, (layout, reason) in configs.items():
            self.mig_configs[config_name] = (layout, reason, source)

    def _mig_pools(self, names: set, gpu_comment: str) -> None:
        """A pool per named MIG config the nodes pick by the nvidia.com/mig.config label (the default excepted), when
        --gpu names a model whose GPUs the layout fits."""
        model = catalog.gpu_model(self.gpu)
        for config_name, (layout, reason, source) in sorted(self.mig_configs.items()):
            row = {"config": config_name, "source": source, "profile": None, "outcome": "changed", "why": reason}
            self.configs.append(row)
            if config_name == self.mig_default or layout == {}:
                row["why"] = ("the default MIG config" if config_name == self.mig_default else "MIG disabled") + \
                    ": gpuconf's own all-disabled config serves nodes of no MIG pool"
                continue
            if layout is None:
                row["why"] = f"not expressible as a MIG layout ({reason})"
                continue
            fit = catalog.fit_mig_layout(model, layout) if model is not None else None
            if fit is None or not fit.fits:
                row["why"] = (f"not imported: the layout does not fit {self.gpu} ({fit.reason if fit else ''}); "
                              "give --gpu the MIG model of the nodes that use it")
                continue
            if not (len(config_name) <= 63 and LABEL_VALUE.fullmatch(config_name)):
                row["why"] = "its name is no label value, so no node selected it: no pool"
                continue
            profile = _unique(M._dns(config_name), set(self.profiles) | {"exclusive"})
            self.profiles[profile] = {"mig": {"layout": dict(sorted(layout.items()))}}
            row.update(profile=profile, outcome="mapped", why="")
            self._pool(_unique(M._dns(config_name), names), {"nodeLabels": {M.MIG_LABEL: config_name}}, profile,
                       names, f"the nodes labelled {M.MIG_LABEL}={config_name} used this MIG layout: the pool "
                       "selects the same label value, which gpuconf then replaces with its own key; give the pool a "
                       "label of its own before the first sync. " + gpu_comment)

    def _plugin_config(self, key: str, text: Any, source: str) -> M.PluginConfig:
        if not isinstance(text, str):
            return M.PluginConfig(key, source, None, "its content is not text")
        profile, why = M.plugin_profile(text)
        return M.PluginConfig(key, source, profile, why if profile is None else "")

    def _pools_without_nodes(self) -> None:
        """Without nodes: one pool for the default config (every GPU node of the model), one per named config
        (selected by the label value the nodes carry), or one exclusive pool."""
        if self.nodes_text is not None:
            return
        gpu_comment = (f"not inferred: values do not say which GPU the nodes have ({self.gpu} is "
                       + ("what --gpu said" if self.gpu != M.PLACEHOLDER_GPU else "a placeholder: give --gpu MODEL,"
                          " or --nodes to draft the pools from the nodes") + "); gpusPerNode and nodes neither")
        default = self.plugin_configs.get(self.default_key)
        names: set[str] = set()
        row_by_config = {r["config"]: r for r in self.configs}
        if default is not None and default.profile is not None:
            profile = row_by_config[self.default_key]["profile"]
            self._pool("gpu-nodes", {"pciDevice": True}, profile, names,
                       f"the default device-plugin config {self.default_key!r} applied to every GPU node; this pool "
                       f"keeps it for every {self.gpu} node. " + gpu_comment)
        for key, pc in self.plugin_configs.items():
            if key == self.default_key or pc.profile is None:
                continue
            profile = row_by_config[key]["profile"]
            if not (key and len(key) <= 63 and LABEL_VALUE.fullmatch(key)):
                self.notes.append(f"device-plugin config {key!r} is no label value, so no node selected it: no pool")
                continue
            self._pool(_unique(M._dns(key), names), {"nodeLabels": {M.DEVICE_PLUGIN_LABEL: key}}, profile, names,
                       f"the nodes labelled {M.DEVICE_PLUGIN_LABEL}={key} used this config: the pool selects the "
                       "same label value. gpuconf relabels them with its own key, so give the pool a label of its "
                       "own (a node group's) before the first sync. " + gpu_comment)
        self._mig_pools(names, gpu_comment)
        if not self.pools:
            named = getattr(self, "values_config_name", None)
            unread = [r for r in self.configs if r["profile"] is None]
            if named and not self.plugin_configs:
                why = (f"the values name the device-plugin ConfigMap {named!r}, which was not given (--configmap "
                       "FILE): its sharing is unknown, so this pool shares nothing until you import it")
            elif unread:
                why = ("the values name device-plugin config(s) that could not be read ("
                       + "; ".join(f"{r['config']!r}: {r['why'].split(': its nodes')[0]}" for r in unread)
                       + "): their sharing is unknown, so this pool shares nothing until you declare it")
            else:
                why = "no sharing config in the values: whole GPUs"
            self._pool("gpu-nodes", {"pciDevice": True}, "exclusive", names, f"{why}. " + gpu_comment)

    def _pool(self, name: str, match: dict, profile: str | None, names: set, note: str) -> None:
        names.add(name)
        pool = {"name": name, "gpu": self.gpu, "gpusPerNode": 1, "nodes": 1, "match": match}
        if profile and profile != "exclusive":
            pool["sharing"] = profile
        self.pool_notes[len(self.pools)] = note
        self.pools.append(pool)

    # -- the draft ----------------------------------------------------------------------------------------------

    def _settle(self) -> tuple[str, list]:
        """Write the draft, drop what it cannot carry until it validates and its values pass the chart's schema,
        then prove the outcomes against the effective values of its render."""
        for _ in range(MAX_ROUNDS):
            text = self._text()
            result, plan, problems = _check(text, self.version)
            culprits = self._culprits(result, problems)
            if not culprits and self._unmapped(result):
                continue
            if not culprits:
                break
            for where, why in culprits:
                carried = self.overrides.pop(where)
                for s in carried["settings"]:
                    s.outcome, s.to = "changed", None
                    s.why = f"not carried: {why}"
        else:  # pragma: no cover - each round removes an override, and there are fewer than MAX_ROUNDS left
            text = self._text()
            result, plan, problems = _check(text, self.version)
        if plan is not None:
            self._prove(plan)
        else:
            self.notes.append("the draft does not validate (a gpuconf bug: please report it with the values): "
                              + "; ".join(f.text() for f in result.findings if f.severity == "error")[:400])
        return text, list(result.findings)

    def _unmapped(self, result) -> bool:
        """Carry as overrides the mapped settings whose intent field the draft's validation refuses (a rule newer
        than this mapping); True when one was."""
        done = False
        for f in result.findings:
            if f.severity != "error":
                continue
            for s in self.settings:
                if s.outcome == "mapped" and s.to and f.path and (s.to == f.path or s.to.startswith(f.path + ".")
                                                                  or f.path.startswith(s.to + ".")):
                    field_path = s.to
                    self._unmap(field_path)
                    self._override(s)
                    s.why += f" ({f.code}: the intent field {field_path} refuses it)"
                    done = True
        return done

    def _unmap(self, to: str) -> None:
        """Remove a mapped value from the draft's pieces."""
        parts = re.findall(r"[^.\[\]]+", to)[1:]
        pieces = {"driver": self.driver, "cluster": self.cluster, "monitoring": self.monitoring}
        node = self.upgrade if parts[:2] == ["driver", "upgrade"] else pieces.get(parts[0])
        keys = parts[2:] if parts[:2] == ["driver", "upgrade"] else parts[1:]
        for key in keys[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and keys:
            node.pop(keys[-1], None)
        if parts[0] == "monitoring" and not self.monitoring.get("prometheusSelector", True):
            self.monitoring.pop("prometheusSelector")

    def _culprits(self, result, problems: list[tuple[tuple, str]]) -> list[tuple[tuple, str]]:
        """The overrides that make the draft invalid or its values fail the chart's schema, with the reason."""
        out: dict[tuple, str] = {}
        order = list(self.overrides)
        for f in result.findings:
            if f.severity != "error":
                continue
            m = re.match(r"spec\.overrides\[(\d+)\]", f.path or "")
            if m and int(m.group(1)) < len(order):
                out.setdefault(order[int(m.group(1))], f"{f.code} {f.message}")
        for path, message in problems:
            for where in order:
                if path[:len(where)] == where or where[:len(path)] == path:
                    out.setdefault(where, f"chart {self.version}'s values schema refuses it at "
                                          f"{dotted(path) or '(top)'}: {message}")
        return sorted(out.items(), key=lambda kv: [str(k) for k in kv[0]])

    def _prove(self, plan) -> None:
        """Compare the effective values of the user's installation and of the draft's render, leaf by leaf: every
        difference becomes (or already is) a changed or dropped outcome, with gpuconf's reason."""
        from ..render.values import build_values

        built = build_values(plan)
        rendered = S.coalesce(self.facts.defaults, built.overrides())
        self.rendered_values = built.overrides()
        changes = sorted(built.changes.items())
        settings = S.PathIndex()
        for s in self.settings:
            settings.add(s.path, s)
        order = {id(s): i for i, s in enumerate(self.settings)}
        for path, old, new in M.differing(self.effective, rendered):
            change = next((c for p, c in changes if p[:len(path)] == path or path[:len(p)] == p), None)
            reason = change.why if change is not None else "the chart's default"
            related = sorted(settings.related(path), key=lambda s: order[id(s)])  # in the settings' order
            if not related:
                found, value = S.get(rendered, path)
                new = value if found else M.ABSENT
                found, value = S.get(self.facts.defaults, path)
                self.settings.append(Setting(path, None if new is M.ABSENT else new, "gpuconf", "changed", None,
                                             f"gpuconf renders {M.shown(new)} (chart default "
                                             f"{M.shown(value if found else M.ABSENT)}): {reason}"))
                settings.add(path, self.settings[-1])
                order[id(self.settings[-1])] = len(self.settings) - 1
                continue
            for s in related:
                if s.outcome in ("changed", "dropped"):
                    continue
                s.outcome = "changed"
                s.why = f"gpuconf renders {M.shown(new)} at {dotted(path)}: {reason} (was {s.why})"
        self.settings.sort(key=lambda s: [str(k) for k in s.path])

    def _text(self) -> str:
        """The draft intent as YAML text, with comments."""
        from ruamel.yaml import YAML
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        from ..cluster.draftyaml import commented, quoted
        from ..emit import single_line
        from ..intent.model import KUBERNETES_VERSIONS

        yaml = YAML()
        yaml.indent(mapping=2, sequence=4, offset=2)
        yaml.width = 4096
        if self.nodes_text is not None:
            yaml.preserve_quotes = True
            doc = yaml.load(self.nodes_text)
            spec = doc["spec"]
            spec["operator"]["chartVersion"] = self.version
        else:
            cluster = CommentedMap([("kubernetesVersion", KUBERNETES_VERSIONS[-1]), ("distribution", "vanilla")])
            cluster.yaml_add_eol_comment("not inferred: values do not say (`kubectl version`)", "kubernetesVersion")
            spec = CommentedMap([("cluster", cluster), ("operator", CommentedMap([("chartVersion", self.version)]))])
            doc = CommentedMap([("apiVersion", "gpuconf.dev/v1alpha1"), ("kind", "ClusterIntent"),
                                ("metadata", CommentedMap([("name", self.name)])), ("spec", spec)])
        spec["operator"].yaml_add_eol_comment(self.why, "chartVersion")
        for key, value in self.cluster.items():
            spec["cluster"][key] = commented(value)
        driver = dict(self.driver)
        if self.upgrade:
            driver["upgrade"] = self.upgrade
        if driver:
            node = spec.setdefault("driver", CommentedMap())
            if driver.get("preinstalled"):
                node.pop("version", None)
            for key, value in driver.items():
                node[key] = commented(value)
        if self.nodes_text is None:
            if self.profiles:
                spec["sharingProfiles"] = commented(self.profiles)
            pools = CommentedSeq()
            for i, pool in enumerate(self.pools):
                pools.append(commented(pool))
                # The note quotes names from the values (ConfigMap, config keys): it stays on its comment line.
                pools.yaml_set_comment_before_after_key(i, before=single_line(self.pool_notes[i]), indent=4)
            spec["pools"] = pools
        if self.monitoring:
            monitoring = dict(self.monitoring)
            found, enabled = S.get(self.effective, ("dcgmExporter", "serviceMonitor", "enabled"))
            monitoring.setdefault("serviceMonitor", enabled is True)
            spec["monitoring"] = commented(monitoring)
        if self.overrides:
            spec["overrides"] = commented([{"path": o["path"], "value": o["value"], "why": o["why"]}
                                        for o in self.overrides.values()])
        buf = io.StringIO()
        yaml.dump(quoted(doc), buf)
        body = buf.getvalue()
        if self.nodes_text is None:
            from ..emit import single_line
            from ..intent.starter import SCHEMA_FILE

            sources = ", ".join(single_line(i.name) for i in self.inputs)
            header = (f"# yaml-language-server: $schema={SCHEMA_FILE}\n"
                      f"# Drafted by `gpuconf import` from {sources} (chart {self.version}).\n"
                      "# Review it: every `not inferred` comment needs a decision, and the import's report says "
                      "what\n# became of each value. Then: gpuconf validate THIS-FILE\n")
            return header + body
        return body


def _unloadable(value: Any) -> str | None:
    """Why a value cannot be written into an intent file (gpuconf's loader refuses control characters and numbers
    in forms YAML readers disagree about), or None."""
    from ruamel.yaml import YAML

    from ..cluster.draftyaml import quoted
    from ..intent.loader import LoadError, load_text

    yaml = YAML()
    yaml.width = 4096
    buf = io.StringIO()
    yaml.dump(quoted({"value": value}), buf)
    try:
        load_text(buf.getvalue(), "<value>")
    except LoadError as exc:
        return f"an intent file cannot hold this value ({exc.finding.message})"
    return None


def _number_why(text: str, value: Any, what: str) -> str:
    """Why an unquoted version is a change: its type always, its text when YAML read it as another number."""
    shown = S._scalar_text(value)
    if shown == text:
        return f"Helm read the unquoted {text} as a number; {what} the string \"{text}\" (the same image tag text)"
    return (f"Helm read the unquoted {text} as the number {shown}, so the chart asked for driver {shown}; {what} the "
            f"string \"{text}\" as written: check which driver the nodes run before the first sync")


def _unique(name: str, used: set[str]) -> str:
    if name not in used:
        return name
    n = 2
    while f"{name[:60]}-{n}" in used:
        n += 1
    return f"{name[:60]}-{n}"


def _check(text: str, version: str):
    """(validation, plan or None, values-schema failures of the draft's render)."""
    from .. import plan as P
    from ..intent.loader import LoadError, load_text
    from ..intent.validate import Validation, validate_document
    from ..output.verify import values_failures
    from ..render.values import build_values

    try:
        result = validate_document(load_text(text, "<draft>"))
    except LoadError as exc:  # pragma: no cover - the emitter writes plain YAML
        return Validation("<draft>", findings=[exc.finding]), None, []
    if not result.ok:
        return result, None, []
    plan = P.build(result.intent, "<draft>", result.document)
    merged = build_values(plan).merged()
    return result, plan, values_failures(merged, version)

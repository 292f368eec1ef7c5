"""The audit of the NVLink fabric (GA160-GA165) on examples/nvl72.yaml: one GB200 NVL72 rack (18 trays of 4 GPUs)
beside four B200 nodes.

The fixtures are what the real tools write:
  - the nodes: tests/nodelists.py's nodes (kubectl get nodes -o json, labels as NFD, the operator and GFD write them),
    the trays adapted to what a Grace tray reports: arm64 (kubernetes.io/arch, status.nodeInfo.architecture), no x86
    CPUID labels, GFD's clique label `nvidia.com/gpu.clique: <cluster UUID>.<clique id>`
    (../shared/reference/nvidia-formats-facts.md §2.1) and the rack label the intent names (example.com/rack);
  - the ResourceSlices (kubectl get resourceslices -o json, resource.k8s.io/v1): per tray the one slice the
    ComputeDomain kubelet plugin publishes, pool and nodeName the node, devices channel-0 (type=channel, id=0) and
    daemon-0 (type=daemon, id=0) (DRA driver v0.4.1 cmd/compute-domain-kubelet-plugin/driver.go and deviceinfo.go);
    the name is the resourceslice controller's generateName, <node>-<driver>-, plus five characters;
  - the pods (kubectl get pods -A -o json): the operator's operands (tests/incidents.py), the DRA driver's kubelet
    plugin (DaemonSet dra-driver-nvidia-gpu-kubelet-plugin, labels of the chart's _helpers.tpl templateLabels and
    selectorLabels, init container init-container, container compute-domains: templates/kubeletplugin.yaml) and the
    IMEX daemons of a ComputeDomain (label resource.nvidia.com/computeDomain=<uid>, container compute-domain-daemon:
    templates/compute-domain-daemon.tmpl.yaml).
"""

from __future__ import annotations

import copy
import json

import pytest

import incidents as I
import nodelists as NL
from conftest import ROOT

EXAMPLE = "examples/nvl72.yaml"
CLIQUE, RACK = "nvidia.com/gpu.clique", "example.com/rack"
FABRIC = "3f6e0c8a-52d1-4c0e-9b7a-8d2e61f4a0c5"  # the rack's NVLink cluster UUID
DRA_NS, RELEASE = "dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu"
DRA_IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"
CD_UID = "6a0e1f53-9c2b-4d8e-a1f7-3b5c9e2d8f41"  # a ComputeDomain's uid
#: A Grace CPU's x86 CPUID labels do not exist: NFD's cpu-cpuid.* on arm64 name other features, which the audit
#: does not read, so the trays carry none.
X86 = "feature.node.kubernetes.io/cpu-"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def plan():
    return NL.load_plan("nvl72")


def trays(plan) -> list[str]:
    return [NL.node_name(plan, "nvl72", i) for i in range(18)]


def _tray(node: dict, clique: str | None, rack: str | None) -> dict:
    """A node of the NVLink pool as a Grace tray reports it."""
    meta = node["metadata"]
    labels = meta["labels"]
    for key in [k for k in labels if k.startswith(X86)]:
        del labels[key]
    meta["annotations"]["nfd.node.kubernetes.io/feature-labels"] = ",".join(
        k.removeprefix("feature.node.kubernetes.io/") for k in sorted(labels) if k.startswith("feature.node."))
    labels["kubernetes.io/arch"] = labels["beta.kubernetes.io/arch"] = "arm64"
    node["status"]["nodeInfo"]["architecture"] = "arm64"
    if clique is not None:
        labels[CLIQUE] = clique
    if rack is not None:
        labels[RACK] = rack
    return node


def nodes(plan, cliques: dict[str, str | None] | None = None, racks: dict[str, str | None] | None = None) -> list:
    """The cluster: the B200 nodes, the 18 trays of rack-a in clique 1 (unless `cliques` or `racks` say otherwise
    for a tray; None: no label), three system nodes."""
    cliques, racks = cliques or {}, racks or {}
    out = []
    for node in NL.clean_nodes(plan):
        name = node["metadata"]["name"]
        if node["metadata"]["labels"].get("gpuconf.dev/pool") == "nvl72":
            node = _tray(node, cliques.get(name, f"{FABRIC}.1"), racks.get(name, "rack-a"))
        out.append(node)
    return out


def _slice(node: str, devices: list[dict]) -> dict:
    seed = NL._h("slice", node)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"creationTimestamp": "2026-12-06T08:02:11Z",
                         "generateName": f"{node}-compute-domain.nvidia.com-", "generation": 1,
                         "name": f"{node}-compute-domain.nvidia.com-{seed[:5]}",
                         "ownerReferences": [{"apiVersion": "v1", "controller": True, "kind": "Node", "name": node,
                                              "uid": f"{seed[:8]}-{seed[8:12]}-{seed[12:16]}-{seed[16:20]}-"
                                                     f"{seed[20:32]}"}],
                         "resourceVersion": str(int(seed[:6], 16)), "uid": I._uid("slice", node)},
            "spec": {"devices": devices, "driver": "compute-domain.nvidia.com", "nodeName": node,
                     "pool": {"generation": 1, "name": node, "resourceSliceCount": 1}}}


CHANNEL = {"attributes": {"id": {"int": 0}, "type": {"string": "channel"}}, "name": "channel-0"}
DAEMON = {"attributes": {"id": {"int": 0}, "type": {"string": "daemon"}}, "name": "daemon-0"}


def slices(plan, skip: tuple[str, ...] = (), daemon_only: tuple[str, ...] = ()) -> dict:
    """Every tray's compute-domain slice (none for `skip`, without its channel for `daemon_only`)."""
    items = [_slice(n, copy.deepcopy([DAEMON] if n in daemon_only else [CHANNEL, DAEMON])) for n in trays(plan)
             if n not in skip]
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def plugin_pod(node: str) -> dict:
    """The DRA driver's kubelet plugin pod on a tray, Running and ready."""
    item = I.pod(f"{RELEASE}-kubelet-plugin", ("init-container",), ("compute-domains",), DRA_IMAGE, node, False)
    meta = item["metadata"]
    meta["namespace"] = DRA_NS
    meta["labels"] = {"app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/name": RELEASE,
                      "controller-revision-hash": NL._h("kubelet-plugin")[:10],
                      "dra-driver-nvidia-gpu-component": "kubelet-plugin", "pod-template-generation": "1"}
    item["spec"]["serviceAccountName"] = f"{RELEASE}-service-account-kubeletplugin"
    for c in item["status"]["initContainerStatuses"]:
        c["image"] = DRA_IMAGE
    item["spec"]["initContainers"][0]["image"] = DRA_IMAGE
    return item


def daemon_pod(node: str, domain: str = "training-nvl72") -> dict:
    """An IMEX daemon of a ComputeDomain on a tray, Running and ready (no init container)."""
    item = I.pod(f"{domain}-{CD_UID[:5]}", (), ("compute-domain-daemon",), DRA_IMAGE, node, False)
    meta = item["metadata"]
    meta["namespace"] = DRA_NS
    meta["labels"] = {"controller-revision-hash": NL._h(domain)[:10], "pod-template-generation": "1",
                      "resource.nvidia.com/computeDomain": CD_UID}
    item["spec"]["serviceAccountName"] = "compute-domain-daemon-service-account"
    return item


def pods(plan, plugins: dict | None = None, daemons: dict | None = None) -> dict:
    """kubectl get pods -A -o json: the operator's operands on every GPU node, the kubelet plugin on each tray and
    the IMEX daemons of one ComputeDomain on the first four trays (`plugins`, `daemons`: node -> a replacement pod,
    or None for none)."""
    plugins, daemons = plugins or {}, daemons or {}
    gpu = [n["metadata"]["name"] for n in NL.clean_nodes(plan) if n["metadata"]["labels"].get("gpuconf.dev/pool")]
    items = I.healthy_pods(plan, gpu)
    for node in trays(plan):
        item = plugins.get(node, plugin_pod(node))
        if item is not None:
            items.append(item)
    for node in trays(plan)[:4]:
        item = daemons.get(node, daemon_pod(node))
        if item is not None:
            items.append(item)
    items.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    return I.podlist(items)


def _write(tmp_path, name: str, doc: dict, layout: bool = True) -> str:
    path = tmp_path / name
    path.write_text(NL.dumps(doc) if layout else json.dumps(doc), encoding="utf-8")
    return str(path)


def audit(run, tmp_path, node_items, slice_doc=None, pod_doc=None, intent: str = EXAMPLE, layout: bool = True):
    args = ["audit", intent, "--nodes", _write(tmp_path, "nodes.json", NL.nodelist(node_items)), "--format", "json"]
    if slice_doc is not None:
        args += ["--resource-slices", _write(tmp_path, "slices.json", slice_doc)]
    if pod_doc is not None:
        args += ["--pods", _write(tmp_path, "pods.json", pod_doc, layout)]
    result = run(*args)
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    return result, json.loads(result.stdout)["findings"]


def found(findings, *codes) -> list[tuple]:
    return sorted((f["code"], f["severity"], f["node"], f["message"]) for f in findings
                  if not codes or f["code"] in codes)


# --- a clean rack ----------------------------------------------------------------------------------------------


def test_a_whole_rack_audits_clean(run, tmp_path, plan):
    result, findings = audit(run, tmp_path, nodes(plan), slices(plan), pods(plan))
    assert findings == [] and result.exit_code == 0, found(findings)


# --- a tray missing from its rack's domain -----------------------------------------------------------------------


def test_a_tray_missing_from_its_rack_domain(run, tmp_path, plan):
    t = trays(plan)
    result, findings = audit(run, tmp_path, nodes(plan, cliques={t[3]: None}, racks={t[4]: None}),
                             slices(plan, skip=(t[7],), daemon_only=(t[9],)))
    assert result.exit_code == 1
    assert found(findings) == [
        ("GA160", "error", t[3], "no NVLink clique label nvidia.com/gpu.clique: the tray is in no NVLink domain, so "
                                 "no ComputeDomain can span it"),
        ("GA160", "warning", t[4], "no rack label example.com/rack: the tray's rack is unknown, so a split of its "
                                   "rack's NVLink domain cannot be told"),
        ("GA161", "error", t[7], "no ResourceSlice of compute-domain.nvidia.com names the node: ComputeDomains can "
                                 "run no IMEX daemon and give no channel on the tray"),
        ("GA161", "error", t[9], "the node's compute-domain.nvidia.com ResourceSlice publishes no channel device: no "
                                 "workload on the tray can claim a ComputeDomain channel"),
        ("GA163", "warning", "", f"NVLink clique {FABRIC}.1 holds 17 of the 18 trays of a rack: a partial NVLink "
                                 "domain"),
    ]
    by = {(f["code"], f["node"]): f for f in findings}
    assert by[("GA160", t[3])]["evidence"] == {CLIQUE: None, RACK: "rack-a", "nvidia.com/gpu.product": "NVIDIA-GB200"}
    assert "Fabric must say State Completed" in by[("GA160", t[3])]["hint"]
    assert by[("GA161", t[9])]["evidence"] == {"driver": "compute-domain.nvidia.com", "devices": ["daemon-0"]}
    assert f"--field-selector spec.nodeName={t[7]}" in by[("GA161", t[7])]["hint"]
    assert by[("GA163", "")]["pool"] == "nvl72" and by[("GA163", "")]["evidence"]["trays"] == 17
    # Without --resource-slices the slices are not judged: the clique label alone.
    _, without = audit(run, tmp_path, nodes(plan, cliques={t[3]: None}))
    assert [f[0] for f in found(without)] == ["GA160", "GA163"]


def test_a_tray_without_gfd_labels_is_told_to_check_gfd(plan):
    from gpuconf.cluster.audit import audit as run_audit

    items = nodes(plan)
    tray = next(n for n in items if n["metadata"]["name"] == trays(plan)[0])
    for key in [k for k in tray["metadata"]["labels"] if k.startswith("nvidia.com/") and "deploy" not in k
                and k not in ("nvidia.com/gpu.present", "nvidia.com/device-plugin.config", "nvidia.com/mig.config")]:
        del tray["metadata"]["labels"][key]
    ga160 = [f for f in run_audit(plan, items, "t").findings if f.code == "GA160"]
    assert [(f.node, f.severity) for f in ga160] == [(trays(plan)[0], "error")]
    assert ga160[0].hint.startswith("GPU Feature Discovery has not labelled the node at all")


# --- a split clique ----------------------------------------------------------------------------------------------


def test_a_rack_whose_trays_report_two_cliques_is_split(run, tmp_path, plan):
    t = trays(plan)
    apart = {n: f"{FABRIC}.2" for n in t[15:]}
    result, findings = audit(run, tmp_path, nodes(plan, cliques=apart), slices(plan))
    assert result.exit_code == 1
    assert found(findings) == [("GA162", "error", "", "rack rack-a: its trays report 2 NVLink cliques (15 and 3 "
                                                       "trays): the rack's NVLink domain is split")]
    [split] = findings
    assert split["evidence"] == {RACK: "rack-a", "cliques": {
        f"{FABRIC}.1": {"trays": 15, "nodes": t[:15]}, f"{FABRIC}.2": {"trays": 3, "nodes": t[15:]}}}
    assert f"{', '.join(t[15:])} left the rack's main clique" in split["hint"]


def test_without_a_rack_label_more_cliques_than_racks_is_a_split(run, tmp_path, plan):
    text = (ROOT / EXAMPLE).read_text(encoding="utf-8")
    assert "        rackLabel: example.com/rack\n" in text
    intent = tmp_path / "nvl72.yaml"
    intent.write_text(text.replace("        rackLabel: example.com/rack\n", ""), encoding="utf-8")
    t = trays(plan)
    _, findings = audit(run, tmp_path, nodes(plan, cliques={n: f"{FABRIC}.2" for n in t[15:]}), intent=str(intent))
    assert found(findings) == [("GA162", "error", "", "2 NVLink cliques among the pool's 18 trays, which fill at most "
                                                       "1 rack of 18: a rack's NVLink domain is split")]
    assert "set pools[].nvlink.rackLabel" in findings[0]["hint"]
    # One clique over more trays than a rack holds: traysPerRack is wrong (or racks share a clique id).
    intent.write_text(text.replace("traysPerRack: 18 ", "traysPerRack: 9  "), encoding="utf-8")
    _, findings = audit(run, tmp_path, nodes(plan), intent=str(intent))
    assert found(findings) == [("GA162", "error", "", f"NVLink clique {FABRIC}.1 holds 18 trays, a rack of the pool "
                                                       "has 9")]


# --- daemons not ready -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", [True, False], ids=["kubectl-layout", "compact"])
def test_daemons_not_ready(run, tmp_path, plan, layout):
    t = trays(plan)
    crashing = I.crash(plugin_pod(t[2]), "compute-domains", exit_code=1, restarts=7)
    waiting = crashing["status"]["containerStatuses"][0]["state"]["waiting"]
    waiting["message"] = waiting["message"].replace(f"_{I.NS}(", f"_{DRA_NS}(")
    unready = daemon_pod(t[1])
    unready["status"]["containerStatuses"][0]["ready"] = False
    for cond in unready["status"]["conditions"]:
        if cond["type"] in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="ContainersNotReady",
                        message="containers with unready status: [compute-domain-daemon]")
    result, findings = audit(run, tmp_path, nodes(plan), slices(plan),
                             pods(plan, plugins={t[2]: crashing, t[5]: None}, daemons={t[1]: unready}), layout=layout)
    assert result.exit_code == 1
    plugin, daemon = crashing["metadata"]["name"], unready["metadata"]["name"]
    assert found(findings) == [
        ("GA164", "error", t[1], f"the IMEX daemon of a ComputeDomain is not ready: {DRA_NS}/{daemon} Running, not "
                                 "ready"),
        ("GA165", "error", t[2], f"the ComputeDomain kubelet plugin is not ready: {DRA_NS}/{plugin} Running, "
                                 "CrashLoopBackOff (7 restarts)"),
        ("GA165", "error", t[5], "no pod of the ComputeDomain kubelet plugin on the tray"),
    ]
    by = {(f["code"], f["node"]): f for f in findings}
    assert by[("GA165", t[2])]["hint"].startswith(f"read its log: `kubectl -n {DRA_NS} logs {plugin} -c "
                                                  "compute-domains --previous`")
    assert by[("GA165", t[2])]["evidence"]["containers"][0]["reason"] == "CrashLoopBackOff"
    assert "ComputeDomainClique" in by[("GA164", t[1])]["hint"]
    assert f"describe daemonset {RELEASE}-kubelet-plugin" in by[("GA165", t[5])]["hint"]


def test_pods_of_the_operator_namespace_alone_leave_the_daemons_unchecked(run, tmp_path, plan):
    doc = pods(plan)
    doc["items"] = [p for p in doc["items"] if p["metadata"]["namespace"] == "gpu-operator"]
    result, findings = audit(run, tmp_path, nodes(plan), slices(plan), doc)
    assert result.exit_code == 0
    assert found(findings) == [("GA165", "info", "", "the pods read hold no pod of the DRA driver's kubelet plugin "
                                                     "(namespace dra-driver-nvidia-gpu): the ComputeDomain kubelet "
                                                     "plugin and the IMEX daemons are not checked")]


def test_operand_recognition_of_the_dra_pods(plan):
    from gpuconf.cluster import operands as O

    t = trays(plan)
    assert O.operand_of(plugin_pod(t[0])["metadata"]["labels"]) == O.DRA_PLUGIN
    assert O.operand_of(daemon_pod(t[0])["metadata"]["labels"]) == O.IMEX_DAEMON
    assert O.operand_of({"resource.nvidia.com/computeDomain": 5}) is None
    # The operator's namespace is told by its own pods, not by the DRA driver's (which -A lists first).
    found_ = O.Operands("t").add_all([plugin_pod(t[0]), daemon_pod(t[0]), *I.healthy_pods(plan, [t[0]])])
    assert found_.namespace == "gpu-operator"
    assert found_.by_node[t[0]][O.DRA_PLUGIN] is O.HEALTHY and found_.by_node[t[0]][O.IMEX_DAEMON] is O.HEALTHY


# --- hostile input -----------------------------------------------------------------------------------------------


def test_hostile_slices_and_pods_never_traceback(run, tmp_path, plan):
    t = trays(plan)
    doc = slices(plan)
    items = doc["items"]
    items[0]["spec"]["devices"] = "channel-0"  # not a list
    items[1]["spec"]["devices"] = [7, None, {"name": 3, "attributes": ["type"]}]
    items[2]["spec"]["nodeName"] = 42
    items[3]["spec"]["devices"][0]["attributes"] = {"type": "channel", "id": {"int": "zero"}}
    items[4]["spec"]["driver"] = ["compute-domain.nvidia.com"]
    pod_doc = pods(plan)
    bad = pod_doc["items"]
    bad.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": DRA_NS, "labels": {
        "resource.nvidia.com/computeDomain": CD_UID}}, "spec": {"nodeName": t[6]},
        "status": {"phase": "Running", "containerStatuses": "ready"}})
    bad.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "y", "namespace": DRA_NS, "labels": {
        "dra-driver-nvidia-gpu-component": ["kubelet-plugin"], "resource.nvidia.com/computeDomain": None}},
        "spec": {"nodeName": t[7], "affinity": "any"}, "status": {"phase": "Running", "conditions": "none",
                                                                "containerStatuses": [3]}})
    bad.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "z", "namespace": DRA_NS, "labels": {
        "dra-driver-nvidia-gpu-component": "kubelet-plugin"}}, "spec": {"affinity": {"nodeAffinity": 1}},
        "status": {"phase": "Pending", "initContainerStatuses": [None, {"name": 5}]}})
    result, findings = audit(run, tmp_path, nodes(plan), doc, pod_doc, layout=False)
    assert result.exit_code == 1
    assert found(findings) == [
        ("GA161", "error", t[0], "no ResourceSlice of compute-domain.nvidia.com names the node: ComputeDomains can "
                                 "run no IMEX daemon and give no channel on the tray"),
        ("GA161", "error", t[1], "the node's compute-domain.nvidia.com ResourceSlice publishes no channel device: no "
                                 "workload on the tray can claim a ComputeDomain channel"),
        ("GA161", "error", t[2], "no ResourceSlice of compute-domain.nvidia.com names the node: ComputeDomains can "
                                 "run no IMEX daemon and give no channel on the tray"),
        ("GA161", "error", t[3], "the node's compute-domain.nvidia.com ResourceSlice publishes no channel device: no "
                                 "workload on the tray can claim a ComputeDomain channel"),
        ("GA161", "error", t[4], "no ResourceSlice of compute-domain.nvidia.com names the node: ComputeDomains can "
                                 "run no IMEX daemon and give no channel on the tray"),
        ("GA164", "error", t[6], f"the IMEX daemon of a ComputeDomain is not ready: {DRA_NS}/x Running, not ready"),
    ]
    # A pod whose status is no object, items that are no ResourceSlice at all: usage errors (exit 2), no traceback.
    bad.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": DRA_NS}, "status": []})
    refused = run("audit", EXAMPLE, "--nodes", _write(tmp_path, "n.json", NL.nodelist(nodes(plan))),
                  "--pods", _write(tmp_path, "p.json", pod_doc, layout=False))
    assert refused.exit_code == 2 and "is not a Pod (status is a list, not an object)" in refused.stderr
    doc["items"].append("a string")
    listed = run("audit", EXAMPLE, "--nodes", _write(tmp_path, "n.json", NL.nodelist(nodes(plan))),
                 "--resource-slices", _write(tmp_path, "s.json", doc))
    assert listed.exit_code == 2 and "is not a ResourceSlice" in listed.stderr


def test_hostile_node_labels_count_as_absent(plan):
    from gpuconf.cluster.audit import audit as run_audit

    items = nodes(plan)
    t = trays(plan)
    for node in items:
        if node["metadata"]["name"] == t[0]:
            node["metadata"]["labels"][CLIQUE] = 7
            node["metadata"]["labels"][RACK] = ["rack-a"]
    found_ = sorted((f.code, f.severity, f.node) for f in run_audit(plan, copy.deepcopy(items), "t").findings
                    if f.code.startswith("GA16"))
    assert found_ == [("GA160", "error", t[0]), ("GA160", "warning", t[0]), ("GA163", "warning", "")]


# --- live --------------------------------------------------------------------------------------------------------


def test_live_audit_reads_the_dra_release_pods_and_slices_the_auditor_role_grants(run, tmp_path, plan):
    from gpuconf.render import access
    from test_audit import FakeApiServer, _kubeconfig

    text = (ROOT / EXAMPLE).read_text(encoding="utf-8")
    assert "\n  access:\n" in text
    text = text.replace("\n  access:\n", "\n  access:\n    auditors: [serviceaccount:ci:gpuconf-audit]\n")
    intent = tmp_path / "nvl72.yaml"
    intent.write_text(text, encoding="utf-8")
    docs = {(d["kind"], d["metadata"]["name"]): d for d in access.render(NL.plan_of(text))}
    granted = {(verb, group, resource, None) for r in docs[("ClusterRole", "gpuconf-gpu-auditor")]["rules"]
               for group in r["apiGroups"] for resource in r["resources"] for verb in r["verbs"]}
    granted |= {(verb, group, resource, "gpu-operator") for r in docs[("Role", "gpuconf-gpu-auditor")]["rules"]
                for group in r["apiGroups"] for resource in r["resources"] for verb in r["verbs"]}
    t = trays(plan)
    listed = slices(plan, skip=(t[7],))
    listed["kind"] = "ResourceSliceList"
    listed["apiVersion"] = "resource.k8s.io/v1"
    server = FakeApiServer(nodes(plan), pods=pods(plan, plugins={t[5]: None})["items"],
                           objects={"/apis/resource.k8s.io/v1/resourceslices": listed})
    with server as api:
        result = run("audit", str(intent), "--kubeconfig", _kubeconfig(tmp_path, api.port), "--format", "json")
    assert result.exit_code == 1, result.stderr
    assert [(f[0], f[2]) for f in found(json.loads(result.stdout)["findings"])] == [("GA161", t[7]), ("GA165", t[5])]
    paths = [path for _, path, _ in api.requests]
    assert f"/api/v1/namespaces/{DRA_NS}/pods" in paths and "/apis/resource.k8s.io/v1/resourceslices" in paths
    # On the device-plugin stack only the ComputeDomain driver's slices are asked for.
    assert [q.get("fieldSelector") for _, path, q in api.requests if path.endswith("/resourceslices")] == \
        ["spec.driver=compute-domain.nvidia.com"]
    for method, path, _ in api.requests:
        parts = path.strip("/").split("/")  # api v1 ... | apis GROUP v1 ...
        group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
        namespace = rest[1] if rest[0] == "namespaces" else None
        rest = rest[2:] if namespace else rest
        assert method == "GET" and len(rest) == 1, path
        assert ("list", group, rest[0], None) in granted or ("list", group, rest[0], namespace) in granted, path


def _paths(value, prefix=()):
    """Every path into a JSON value (dict keys, list indexes), the value itself first."""
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, prefix + (key,))


def _replaced(doc, path, new):
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return doc


def test_every_field_of_a_slice_and_a_dra_pod_of_another_type_never_tracebacks(plan):
    """Each field of a tray's ResourceSlice and of its kubelet plugin and IMEX daemon pods, replaced by a value of
    every other JSON type: the slice reader refuses it (NodeSourceError, exit 2) or the audit runs to its end."""
    from gpuconf.cluster import operands as O
    from gpuconf.cluster.audit import audit as run_audit
    from gpuconf.cluster.nodesource import NodeSourceError
    from gpuconf.cluster.slices import devices_by_node

    t = trays(plan)
    items = [n for n in nodes(plan) if n["metadata"]["name"] in t]
    base = slices(plan)["items"]
    others = (None, 7, "x", [], {}, True, [{}], {"string": 1})
    runs = 0
    for path in list(_paths(base[0]))[1:]:
        for new in others:
            listed = [_replaced(base[0], path, new), *base[1:]]
            try:
                published = devices_by_node(listed, "slices.json")
            except NodeSourceError:
                continue
            run_audit(plan, items, "t", fabric_slices=published.compute_domains)
            runs += 1
    healthy = pods(plan)["items"]
    for pod in (plugin_pod(t[0]), daemon_pod(t[0])):
        for path in list(_paths(pod))[1:]:
            for new in others:
                operands = O.Operands("pods.json").add_all([_replaced(pod, path, new), *healthy])
                run_audit(plan, items, "t", operands=operands)
                runs += 1
    assert runs > 1000


@pytest.mark.parametrize("layout", [True, False], ids=["kubectl-layout", "compact"])
def test_pods_of_the_dra_namespace_alone_are_no_operator_operands(run, tmp_path, plan, layout):
    """`kubectl get pods -n dra-driver-nvidia-gpu`: the fabric is checked, and no node is said to miss the operator's
    operands (GA149), which the file cannot show."""
    t = trays(plan)
    doc = pods(plan, plugins={t[5]: None})
    doc["items"] = [p for p in doc["items"] if p["metadata"]["namespace"] == DRA_NS]
    result, findings = audit(run, tmp_path, nodes(plan), slices(plan), doc, layout=layout)
    assert found(findings) == [("GA165", "error", t[5], "no pod of the ComputeDomain kubelet plugin on the tray")]
    assert "21 pods, none of the GPU Operator's operands" in result.stderr


# --- the GPUCluster stack ----------------------------------------------------------------------------------------


def test_on_the_gpucluster_stack_the_operators_kubelet_plugin_is_judged(run, tmp_path):
    """allocation: dra with an NVLink pool: no GFD runs, the operator's own kubelet plugin (DaemonSet
    nvidia-dra-driver-kubelet-plugin, app label of the same name, containers gpus and compute-domains: gpu-operator
    v26.7.0 manifests/state-dra-driver/0500_daemonset.yaml) sets the clique label and publishes both drivers' slices in
    the operator's namespace."""
    from test_dra import _dra_nodes, _published

    text = (ROOT / "examples" / "dra.yaml").read_text(encoding="utf-8")
    text = text.replace("      migPartitions: external\n", "      migPartitions: external\n      computeDomains: true\n")
    text = text.replace("      sharing: notebooks\n", "      sharing: notebooks\n      nvlink: {traysPerRack: 2}\n", 1)
    intent = tmp_path / "dra-nvl.yaml"
    intent.write_text(text, encoding="utf-8")
    plan = NL.plan_of(text)
    node_items = _dra_nodes(plan)
    h100 = [n["metadata"]["name"] for n in node_items if n["metadata"]["labels"].get("gpuconf.dev/pool") == "h100"]
    assert len(h100) == 2
    for node in node_items:
        if node["metadata"]["name"] == h100[0]:
            node["metadata"]["labels"][CLIQUE] = f"{FABRIC}.1"
    listed = _published(plan)
    listed["items"] += [_slice(n, copy.deepcopy([CHANNEL, DAEMON])) for n in h100]
    items = []
    for name in h100:
        item = I.pod("nvidia-dra-driver-kubelet-plugin", ("driver-validation",), ("gpus", "compute-domains"),
                      "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0", name, False)
        item["metadata"]["labels"].update({"app.kubernetes.io/name": "nvidia-dra-driver",
                                           "app.kubernetes.io/component": "nvidia-dra-driver-kubelet-plugin"})
        items.append(item)
    I.crash(items[1], "compute-domains", exit_code=1, restarts=3)
    result = run("audit", str(intent), "--nodes", _write(tmp_path, "nodes.json", NL.nodelist(node_items)),
                 "--resource-slices", _write(tmp_path, "slices.json", listed),
                 "--pods", _write(tmp_path, "pods.json", I.podlist(items)), "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    fabric = {(f["code"], f["node"]): f for f in findings if f["code"].startswith("GA16")}
    assert sorted(fabric) == [("GA160", h100[1]), ("GA163", ""), ("GA165", h100[1])]
    assert fabric[("GA160", h100[1])]["hint"].startswith("the operator's kubelet plugin (nvidia-dra-driver-kubelet-"
                                                         "plugin, container compute-domains) sets the clique label")
    assert fabric[("GA160", h100[1])]["evidence"] == {CLIQUE: None}
    assert fabric[("GA165", h100[1])]["message"].startswith("the ComputeDomain kubelet plugin is not ready: "
                                                            "gpu-operator/nvidia-dra-driver-kubelet-plugin-")
    # On the GPUCluster stack the plugin publishes the GPUs too: the diagnosis names it as their cause as well.
    assert ("GA145", h100[1]) in {(f["code"], f["node"]) for f in findings}

"""The acceptance checklist of REPORT.md (acceptance.md.j2): install, apply, wait for the operator, then one probe
Job per pool and the quota checks, each step with its commands and what it proves."""

from __future__ import annotations

from typing import Iterable

from ... import plan as P


def helm_install_command(plan: P.Plan, values_file: str) -> str:
    """`helm upgrade --install` of the pinned chart from where it comes from: the intent's chart repository, the
    registry mirror's chart folder (oci://<registry>/charts), else NVIDIA's Helm repository."""
    from ...render.gitops import CHART, RELEASE_NAME, chart_source

    source = chart_source(plan)
    chart = source.chart_url if source.oci else f"{CHART} --repo {source.url}"
    return (f"helm upgrade --install {RELEASE_NAME} {chart} --version {plan.chart_version} "
            f"--namespace {plan.namespace} --create-namespace -f {values_file}")


def dra_class_of(resource: str) -> str | None:
    """The DeviceClass a DRA quota key counts."""
    from ...dra import class_of_key

    return class_of_key(resource)


def acceptance_facts(plan: P.Plan, tree_files: Iterable[str] = ()) -> list[dict]:
    """The acceptance checklist: apply, wait for the operator, then one probe Job per pool and what it proves."""
    from ...render import kueue as K
    from ...render import openshift, platform
    from ...render.names import job_name

    ns = plan.namespace
    spec = plan.intent.spec
    from ...emit import shell_word

    folder = "."  # the commands run in the cluster's folder (the one REPORT.md is in), wherever it was written
    files = set(tree_files or ())
    values_file = "values.yaml"
    steps = []
    early = [shell_word(path) for path in ("manifests/namespaces.yaml", platform.PLATFORM_FILE) if path in files]
    if openshift.olm(plan):
        from ... import platforms

        nfd_ns = shell_word(platforms.openshift()["nfd"]["namespace"])
        csv = openshift.starting_csv(plan)
        if not openshift.nfd_operator_rendered(plan):
            steps.append(
                {"title": f"Prerequisite: install Red Hat's Node Feature Discovery Operator (OperatorHub, namespace "
                          f"{nfd_ns}); gpuconf's output does not install it unless spec.cluster.openshift.nfdOperator "
                          "is set",
                 "commands": [f"kubectl -n {nfd_ns} get csv", f"kubectl get crd {openshift.NFD_CRD}"],
                 "proves": "the NFD Operator's CSV is Succeeded and its NodeFeatureDiscovery CRD exists, so "
                           f"{platform.PLATFORM_FILE}, which holds a NodeFeatureDiscovery, applies"})
        nfd = (f"{platform.PLATFORM_FILE} installs Red Hat's NFD Operator (automatic approval) and subscribes to "
               if openshift.nfd_operator_rendered(plan) else "Subscribe to ")
        steps.append(
            {"title": f"{nfd}the certified GPU Operator (OLM), then approve the InstallPlan of CSV {csv} "
                      "(INSTALL_PLAN: its name in the list)",
             "commands": ["kubectl apply " + " ".join(f"-f {path}" for path in early),
                          f"kubectl -n {ns} get installplan",
                          f'kubectl -n {ns} patch installplan "$INSTALL_PLAN" --type merge '
                          "-p '{\"spec\":{\"approved\":true}}'",
                          f"kubectl -n {ns} get csv",
                          *([f"kubectl -n {nfd_ns} get csv"] if openshift.nfd_operator_rendered(plan) else [])],
             "proves": f"OLM installs CSV {csv} (phase Succeeded), the chart version the intent pins, and with it "
                       "the ClusterPolicy and NVIDIADriver CRDs; "
                       + ("the NFD Operator's CSV is Succeeded and " if openshift.nfd_operator_rendered(plan) else "")
                       + "the NFD Operator's NodeFeatureDiscovery instance starts labelling nodes"})
    else:
        from ...render import admission

        policies = admission.FILE if admission.FILE in files else None
        if policies is not None:
            early.append(shell_word(policies))
            waits = [f"kubectl -n {shell_word(namespace)} wait policies.kyverno.io/{admission.POLICY_NAME} "
                     "--for=condition=Ready --timeout=5m" for namespace in admission.namespaces(plan)]
            steps.append({"title": "Apply the namespaces" + (", the platform's objects" if platform.PLATFORM_FILE in
                                                             files else "") + " and the admission policy before the "
                                   "chart, on every change",
                          "commands": ["kubectl apply " + " ".join(f"-f {path}" for path in early), *waits],
                          "proves": "Kyverno holds the Policy (Ready) before the chart creates a Pod, so the "
                                    "operator's first Pods are checked already, and a changed image meets the Policy "
                                    "of this change, not the previous one's"})
        elif platform.PLATFORM_FILE in files:
            steps.append({"title": "Apply what the platform needs before the chart",
                          "commands": ["kubectl apply " + " ".join(f"-f {path}" for path in early)],
                          "proves": "the operator namespace and the platform's objects (GKE's ResourceQuota for "
                                    "system-node-critical pods) exist before the chart's pods are created"})
        steps.append(
            {"title": "Install or upgrade the GPU Operator chart with the rendered values",
             "commands": [helm_install_command(plan, values_file)],
             "proves": "the chart accepts the values (Helm validates the NFD subchart's values against its schema) "
                       f"and its CRDs ({'GPUCluster' if plan.intent.spec.cluster.allocation == 'dra' else 'ClusterPolicy'}"
                       ", NVIDIADriver, NodeFeatureRule) exist before the manifests use them"})
    queued = P.kueue_settings(plan.intent) is not None
    if queued:
        steps.append({"title": f"Install Kueue {P.kueue_settings(plan.intent).version} once (gpuconf does not install it)",
                      "commands": ["kubectl apply --server-side -f https://github.com/kubernetes-sigs/kueue/releases/"
                                   f"download/{P.kueue_settings(plan.intent).version}/manifests.yaml",
                                   "kubectl wait deploy/kueue-controller-manager -n kueue-system "
                                   "--for=condition=available --timeout=5m"],
                      "proves": "Kueue's CRDs and webhooks are in place before the queues are applied (Kueue's "
                                "installation guide; its Helm chart works as well)"})
    policy = openshift.CLUSTER_POLICY_NAME if openshift.olm(plan) else "cluster-policy"
    steps += [
        {"title": "Apply the manifests (or let Argo CD / Flux sync the folder)",
         "commands": [f"kubectl apply -k {folder}"],
         "proves": "namespaces, "
                   + ("DeviceClasses, claim templates" if plan.intent.spec.cluster.allocation == "dra"
                      else "sharing ConfigMaps")
                   + ", node labelling rules, quotas, RBAC and the probe Jobs are accepted "
                   "by the API server" + ("; the ClusterPolicy is the chart's, from values.yaml"
                                         if openshift.olm(plan) else "")},
        *_relabel_steps(plan),
        *([{"title": "Check that Kueue accepted the queues",
            "commands": ["kubectl wait clusterqueue --all --for=condition=Active --timeout=5m",
                         "kubectl get localqueues -A"],
            "proves": "Kueue's webhooks validated every ClusterQueue and each one found its ResourceFlavors (a "
                      "ClusterQueue is Active only then); every team namespace has the LocalQueue `default`"}]
          if queued else []),
        {"title": "Wait for the operator to finish",
         "commands": [f"kubectl wait clusterpolicy/{policy} --for=jsonpath='{{.status.state}}'=ready --timeout=30m"],
         "proves": "every operand the ClusterPolicy enables is running on every GPU node"},
    ]
    dra = plan.intent.spec.cluster.allocation == "dra"
    if dra:  # the GPUCluster instead of the ClusterPolicy; no mig-manager; devices in ResourceSlices
        from ...render.chart import GPUCLUSTER_NAME

        steps[-1] = {"title": "Wait for the operator to finish",
                     "commands": [f"kubectl wait gpucluster/{GPUCLUSTER_NAME} --for=jsonpath='{{.status.state}}'=ready "
                                  "--timeout=30m",
                                  "kubectl get resourceslices --field-selector spec.driver=gpu.nvidia.com"],
                     "proves": "the DRA driver, DCGM and the validator run on every GPU node (a ClusterPolicy left "
                               "over keeps the GPUCluster notReady with PrerequisiteNotMet), and the driver publishes "
                               "each node's devices in a ResourceSlice"}
    if not dra and any(p.mig_key is not None and P.mig_layout(p.profile, p.model) for p in plan.pools):
        steps.append({"title": "Check that MIG reconfiguration succeeded",
                      "commands": [f"kubectl get nodes -l {P.POOL_LABEL}={p.name} -L {P.MIG_LABEL}.state"
                                   for p in plan.pools if p.mig_key is not None and P.mig_layout(p.profile, p.model)],
                      "proves": f"mig-manager applied the layout: `{P.MIG_LABEL}.state` is `success` on every node "
                                "(`failed` or a stuck `pending` means the layout did not apply)"})
    for pool in plan.pools:
        mode = P.probe_mode(plan.intent, pool.pool)
        if mode == "off":
            continue
        job = job_name(pool.name)
        resource = pool.resource
        units = ", ".join(f"{n} {r}" for r, n in sorted(pool.capacity.per_node.items()))
        # A manual probe lies outside the kustomization (a pool that scales to zero would launch a node on every
        # sync): create it when the proof is wanted; it launches a node if the pool has none.
        create = ([f"kubectl -n {ns} delete job/{job} --ignore-not-found",
                   f"kubectl create -f {shell_word(f'probes/{pool.name}.yaml')}"] if mode == "manual" else [])
        steps.append({
            "title": f"Probe pool {pool.name}" + (" (manual: the pool scales to zero, or its probe is manual)"
                                                   if mode == "manual" else ""),
            "commands": [*create, f"kubectl -n {ns} wait job/{job} --for=condition=complete --timeout=15m",
                         f"kubectl -n {ns} logs job/{job}",
                         *([f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide | grep {job}"] if queued else []),
                         f"kubectl get nodes -l {P.POOL_LABEL}={pool.name} "
                         "-o custom-columns=NAME:.metadata.name,ALLOCATABLE:.status.allocatable"] if not dra else
                        [f"kubectl -n {ns} wait job/{job} --for=condition=complete --timeout=15m",
                         f"kubectl -n {ns} logs job/{job}",
                         *([f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide | grep {job}"] if queued else []),
                         f"kubectl -n {ns} get resourceclaims -l {P.POOL_LABEL}={pool.name} -o wide"],
            "proves": (f"a pod claiming 1 device of DeviceClass `{dra_class_of(resource)}` (claim template `{job}`) "
                       f"and tolerating only this pool's taints is scheduled onto a `{P.POOL_LABEL}={pool.name}` "
                       "node, so the node is labelled, the driver publishes its devices and the class selects them; "
                       "the DRA driver prepares a working device (`nvidia-smi -L` lists it in the log). The node's "
                       f"ResourceSlice should list what the pool promises per node: {units}"
                       + (f"; Kueue admitted the Job from queue `{K.ACCEPTANCE}`" if queued else "")) if dra else
                      ((f"Kueue admitted the Job from queue `{K.ACCEPTANCE}` on flavor `{K.flavor_name(pool.name)}` "
                        "(its Workload shows ADMITTED True; a Job that ran without a Workload was not queued: "
                        "Kueue's webhook is missing), and the flavor's tolerations took its pod, asking for "
                        f"1 `{resource}`, onto a " if queued else
                        f"a pod asking for 1 `{resource}` and tolerating only this pool's taints is scheduled onto a ")
                       + f"`{P.POOL_LABEL}={pool.name}` node, so the node is labelled and advertises the resource; the "
                       "device plugin, container toolkit and driver hand it a working device (`nvidia-smi -L` lists "
                       f"it in the log). Each node should show {units} allocatable"),
        })
    for team in sorted(spec.teams, key=lambda t: t.name):
        if team.quota:
            commands = [f"kubectl describe clusterqueue {K.cluster_queue_name(team.name)}"] if queued else []
            if P.resource_quotas(plan.intent):
                commands += [f"kubectl -n {ns_} describe resourcequota gpuconf-gpu-quota"
                             for ns_ in sorted(team.namespaces)]
            steps.append({"title": f"Check the quota of team {team.name}", "commands": commands,
                          "proves": "the team's namespaces are limited to the GPU units of the intent"
                                    + (", per pool (the ClusterQueue's flavors)" if queued else "")})
    if spec.monitoring is not None and spec.monitoring.service_monitor:
        steps.append({"title": "Check that Prometheus scrapes the DCGM exporter",
                      "commands": [f"kubectl -n {ns} get servicemonitor"],
                      "proves": "the ServiceMonitor exists; the Prometheus targets page should list the exporter pods"})
    steps.append({"title": "If a probe failed or timed out (the Jobs start as soon as they are applied)",
                  "commands": [f"kubectl -n {ns} delete job -l app.kubernetes.io/component=acceptance-probe",
                               f"kubectl apply -k {folder}"],
                  "proves": "a probe that ran before the operator was ready is run again"})
    return steps


def _relabel_steps(plan: P.Plan) -> list[dict]:
    """The checklist step for pools labelled by a node template, node-pool command or Karpenter NodePool: those
    label a node once, when it registers, so the nodes there now get the pool's labels and taints by hand."""
    from ...render.nodes import kubectl_label

    pools = [p for p in plan.pools if not p.nfd and p.pool.match.node_labels]
    if not pools:
        return []
    commands = []
    for pool in pools:
        selector = dict(pool.pool.match.node_labels)
        commands.append(kubectl_label(dict(pool.labels), selector=selector))
        commands += [f"kubectl taint nodes -l {','.join(f'{k}={v}' for k, v in sorted(selector.items()))} "
                     f"--overwrite {t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in pool.pool.taints]
    return [{"title": "Label the nodes that exist now of the pools whose node template, node-pool command or "
                      f"Karpenter NodePool labels only new nodes ({', '.join(p.name for p in pools)})",
             "commands": commands,
             "proves": "the running nodes carry the pool's labels and taints, which their template or NodePool gives "
                       "only to nodes created from now on; a changed nvidia.com/mig.config makes mig-manager "
                       "repartition the node, so drain it first where its layout changes (`gpuconf diff "
                       "--against-installation` lists those nodes)"}]


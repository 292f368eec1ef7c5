"""The commented starter intent that `gpuconf init` prints."""

#: The schema the starter's first line names, in the intent's own folder: `gpuconf init -o FILE` writes it there.
SCHEMA_FILE = "cluster-intent.schema.json"

STARTER = """\
# yaml-language-server: $schema=cluster-intent.schema.json
#
# A gpuconf cluster intent. Edit it, then run: gpuconf validate THIS-FILE
# Editors complete and check it with cluster-intent.schema.json beside it (`gpuconf init -o FILE` writes it;
# `gpuconf schema -o cluster-intent.schema.json` writes or refreshes it). `gpuconf catalog` lists the GPU models
# and their MIG profiles; the documentation's reference describes every field.
apiVersion: gpuconf.dev/v1alpha1
kind: ClusterIntent
metadata:
  name: my-cluster                 # DNS-1123 label; the output folder is named after it
spec:
  cluster:
    kubernetesVersion: "1.33"      # quoted: 1.30 unquoted would read as the number 1.3
    distribution: vanilla          # vanilla, openshift, rke2, k3s, eks, gke, aks, microk8s
  operator:
    chartVersion: v26.7.0          # a GPU Operator chart gpuconf ships base defaults for
    namespace: gpu-operator
  driver:
    version: "595.91.07"           # omit to take the chart's default driver
    upgrade:
      maxParallel: 1               # nodes upgraded at once
      maxUnavailable: "25%"
  sharingProfiles:                 # named ways to share GPUs; `exclusive` is built in
    shared-x4:
      timeSlicing:
        replicas: 4                # each GPU is advertised four times
  pools:
    - name: gpu-a                  # one pool per set of identical GPU nodes
      gpu: L40S                    # a model from `gpuconf catalog`
      gpusPerNode: 4
      nodes: 2
      match:
        pciDevice: true            # nodes whose GPU has this model's PCI device id
      sharing: shared-x4
      taints:                      # keep foreign pods off the GPUs
        - key: gpuconf.dev/pool
          value: gpu-a
          effect: NoSchedule
  teams:
    - name: ml
      namespaces: [ml]
      quota:
        gpu-a: 16                  # units of the pool's resource (here: time-sliced GPUs)
  access:
    admins: [group:gpu-platform]
    developers:
      ml: [group:ml-engineers]
    observers: [group:sre]
  monitoring:
    serviceMonitor: true
    prometheusSelector:
      release: kube-prometheus
    alerts:
      gpuTempCelsius: 85
  # queueing:                      # optional: queue the teams' Jobs with Kueue, a quota per pool (docs: Kueue)
  #   kueue:
  #     version: v0.19.2           # the Kueue release installed in the cluster
  #     teams:
  #       ml:
  #         otherResources: {cpu: 64, memory: 512Gi}   # Kueue counts every resource a pod requests
"""

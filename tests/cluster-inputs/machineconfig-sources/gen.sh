#!/usr/bin/env bash
# Writes ../machineconfig/*.yaml from the NMState files beside this script:
# base64 data URLs (as the OpenShift docs show) for most hosts, one
# percent-encoded `data:,` URL (as Butane writes for small files).
set -euo pipefail
cd "$(dirname "$0")"
out=../machineconfig
mkdir -p "$out"

b64() { printf 'data:text/plain;charset=utf-8;base64,%s' "$(base64 -w0 "$1")"; }
pct() { printf 'data:,%s' "$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(open(sys.argv[1], "rb").read(), safe=""), end="")' "$1")"; }

# $1 source URL, $2 path, $3 mode as written
file_entry() {
    cat <<YAML
      - contents:
          source: $1
        mode: $3
        overwrite: true
        path: $2
YAML
}

header() { # name role ignition-version
    cat <<YAML
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  labels:
    machineconfiguration.openshift.io/role: $2
  name: $1
spec:
  config:
    ignition:
      version: $3
    storage:
      files:
YAML
}

{
    header 10-br-ex-master master 3.2.0
    file_entry "$(b64 master-0.yml)" /etc/nmstate/openshift/master-0.yml 0644
    file_entry "$(b64 master-1.yml)" /etc/nmstate/openshift/master-1.yml 0644
    file_entry "$(pct master-2.yml)" /etc/nmstate/openshift/master-2.yml 0644
} >"$out/10-br-ex-master.yaml"

{
    header 10-br-ex-worker worker 3.4.0
    file_entry "$(b64 worker-0.yml)" /etc/nmstate/openshift/worker-0.yml 420
    file_entry "$(b64 worker-1.yml)" /etc/nmstate/openshift/worker-1.yml 420
} >"$out/10-br-ex-worker.yaml"

{
    header 11-br-ex-cluster-worker worker 3.2.0
    file_entry "$(b64 cluster.yml)" /etc/nmstate/openshift/cluster.yml 0644
} >"$out/11-br-ex-cluster-worker.yaml"

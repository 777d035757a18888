#!/usr/bin/env bash
# Provisioning N hosts against sushy-tools (fake driver) on 127.0.0.1:
# parallel (--parallel N) vs sequential (--parallel 1). Prints both times.
# Usage: crates/bmc/bench/provision.sh [N]   (needs target/release/nodenet
# and sushy-tools 2.2.0 in /opt/nodenet-ci/sushy, as .ci/run installs them)
set -euo pipefail
n=${1:-20}
nodenet=$(cd "$(dirname "$0")/../../.." && pwd)/target/release/nodenet
venv=${NODENET_SUSHY_VENV:-/opt/nodenet-ci/sushy}
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$venv/bin/python" -c "import bcrypt; print('admin:' + bcrypt.hashpw(b'bench', bcrypt.gensalt()).decode())" > "$dir/htpasswd"
systems=$(for i in $(seq 0 $((n-1))); do printf "{'uuid': '6f1c2a3b-0000-4000-8000-%012d', 'name': 'n%d', 'power_state': 'Off', 'nics': []}," "$i" "$i"; done)
cat > "$dir/conf" <<CONF
SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_AUTH_FILE = '$dir/htpasswd'
SUSHY_EMULATOR_STATE_DIR = '$dir/state'
SUSHY_EMULATOR_FAKE_SYSTEMS = [$systems]
CONF
"$venv/bin/sushy-emulator" --config "$dir/conf" --port "$port" >/dev/null 2>&1 &
mkdir -p "$dir/images"
{
  echo "nodenet: v1"
  echo "cluster: {name: bench, provisioning: {network: Disabled}}"
  echo "credentials: {bench: {username: admin, passwordEnv: BENCH_PW}}"
  echo "hosts:"
  for i in $(seq 0 $((n-1))); do
    printf -- "- {name: host-%d, bmc: {address: \"redfish-virtualmedia+http://127.0.0.1:%d/redfish/v1/Systems/6f1c2a3b-0000-4000-8000-%012d\", credentials: bench}}\n" "$i" "$port" "$i"
    echo "iso $i" > "$dir/images/host-$i.iso"
  done
} > "$dir/cluster.yaml"
"$nodenet" serve "$dir/images" --listen 127.0.0.1:0 > "$dir/serve.out" &
sleep 2
base=$(head -1 "$dir/serve.out" | sed 's/.* on //')
for p in "$n" 1; do
  # Back to power off between runs.
  BENCH_PW=bench "$nodenet" bmc power off "$dir/cluster.yaml" --all --parallel "$n" >/dev/null
  start=$(date +%s.%N)
  BENCH_PW=bench "$nodenet" provision "$dir/cluster.yaml" --all --image-url-base "$base" --parallel "$p" --timeout 120 >/dev/null 2>&1
  end=$(date +%s.%N)
  printf "provision %d hosts, --parallel %d: %.1f s\n" "$n" "$p" "$(echo "$end - $start" | bc)"
done

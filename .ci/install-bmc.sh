#!/usr/bin/env bash
# Redfish BMC emulator for the provisioning tests (crates/cli/tests/cli/bmc*.rs, discover.rs):
# sushy-tools 2.2.0 from PyPI in a venv, plus bcrypt for the htpasswd file
# the tests write (the emulator's basic auth accepts bcrypt hashes only).
# Idempotent: does nothing when the venv already holds sushy-tools 2.2.0
# and bcrypt. Prefix: $NODENET_SUSHY_PREFIX, default /opt/nodenet-ci/sushy;
# the tests find the emulator at $NODENET_SUSHY, default
# /opt/nodenet-ci/sushy/bin/sushy-emulator.
set -euo pipefail

prefix="${NODENET_SUSHY_PREFIX:-/opt/nodenet-ci/sushy}"
want="2.2.0"

have() {
    "$prefix/bin/python" - "$want" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version("sushy-tools") == sys.argv[1] and version("bcrypt") else 1)
PY
}

if have && [ -x "$prefix/bin/sushy-emulator" ]; then
    echo "sushy-tools $want already in $prefix"
    exit 0
fi

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q python3-venv
fi

python3 -m venv "$prefix"
"$prefix/bin/pip" install -q --disable-pip-version-check "sushy-tools==$want" bcrypt
have || { echo "sushy-tools $want not importable from $prefix" >&2; exit 1; }
echo "sushy-tools $want installed in $prefix: $prefix/bin/sushy-emulator"

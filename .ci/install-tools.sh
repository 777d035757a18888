#!/usr/bin/env bash
# Installs every tool the test suite runs (the real consumers nodenet's
# output is judged by, the lab's VMs, the BMC emulator) on Debian 12, as
# root. Idempotent: what is there already is kept. `make test` runs it
# first; CONTRIBUTING.md says which tests need which tool.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
export CARGO_TERM_COLOR=never

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }

step "nmstatectl 2.2.62 (peer for gc output and the benchmark; nmstate.service on the lab's OpenShift node): built in the background"
# The whole nmstatectl: gc offline, and `nmstatectl service`, which
# RHCOS's nmstate.service runs. It needs nothing apt installs, so its five
# minutes of compiling overlap apt's downloads and the builds below.
export PATH="$HOME/.cargo/bin:$PATH"
nmstatectl_pid=
nmstatectl_log=$(mktemp)
if ! nmstatectl --version 2>/dev/null | grep -q '2.2.62' \
    || ! grep -q '"nmstatectl 2.2.62[^}]*"no_default_features":false' "$HOME/.cargo/.crates2.json" 2>/dev/null; then
    cargo install nmstatectl --version 2.2.62 --locked --force >"$nmstatectl_log" 2>&1 &
    nmstatectl_pid=$!
else
    echo "nmstatectl 2.2.62 already installed"
fi

step "coreos-installer 0.27.0 (reads back the ISOs and initrds we write): its build dependencies, then built in the background"
# Its build needs pkg-config and libzstd-dev only: with those two first,
# its compiling overlaps apt's downloads and unpacking below.
coreos_pid=
coreos_log=$(mktemp)
trap 'rm -f "$nmstatectl_log" "$coreos_log"' EXIT
if ! coreos-installer --version 2>/dev/null | grep -q '0.27.0'; then
    if [ "$(dpkg-query -W -f '${db:Status-Status}\n' pkg-config libzstd-dev 2>/dev/null | grep -cx installed)" != 2 ]; then
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends pkg-config libzstd-dev >/dev/null
    fi
    cargo install coreos-installer --version 0.27.0 --locked >"$coreos_log" 2>&1 &
    coreos_pid=$!
else
    echo "coreos-installer 0.27.0 already installed"
fi

step "apt packages"
# network-manager: nmcli --offline judges keyfiles; ignition: ignition-validate;
# iproute2: network namespaces for `diff --live`; xorriso, cpio, xz-utils,
# zstd: test ISOs and initrds (initramfs members in every format); gdisk,
# e2fsprogs, qemu-utils: test disk images and the ext4/qcow2 tools `image
# disk` drives; libzstd-dev: to build coreos-installer.
packages=(network-manager ignition iproute2
    xorriso cpio xz-utils zstd libzstd-dev pkg-config gdisk e2fsprogs qemu-utils gzip
    qemu-system-x86 linux-image-amd64 debootstrap busybox-static
    systemd isolinux syslinux-common genisoimage curl python3-yaml pigz
    gettext-base golang-go golang-gopkg-yaml.v2-dev golang-gopkg-yaml.v3-dev
    make man-db chromium fonts-dejavu-core lldpd tcpdump buildah cloud-init netplan.io)
installed() { dpkg-query -W -f '${db:Status-Status} ${Version}\n' "$1" 2>/dev/null | awk '$1 == "installed" {print $2}'; }
missing=()
for p in "${packages[@]}"; do [ -n "$(installed "$p")" ] || missing+=("$p"); done
# Machines of this kind may come with qemu-utils from bookworm-backports,
# which Breaks bookworm's qemu-system-common: qemu-utils comes from the
# same release as qemu-system-x86 (a downgrade there; a no-op elsewhere).
if [ ${#missing[@]} -gt 0 ] || [ "$(installed qemu-utils)" != "$(installed qemu-system-x86)" ]; then
    apt-get update -qq
    qemu_version=$(apt-cache policy qemu-system-x86 | awk '/Candidate:/ {print $2}')
    apt-get install -y -qq --no-install-recommends --allow-downgrades \
        "${packages[@]/#qemu-utils/qemu-utils=$qemu_version}" >/dev/null
else
    echo "all ${#packages[@]} packages installed"
fi
# (qemu-system-x86, linux-image-amd64, debootstrap, busybox-static: the lab's
# VMs — Debian's kernel and a debootstrapped NetworkManager root; systemd:
# systemd-analyze verifies the shipped unit; isolinux, syslinux-common,
# genisoimage: the lab's bootable CoreOS-like live ISO; curl: the lab's
# Redfish-to-qemu adapter; python3-yaml: a YAML 1.1 reader to check that
# rendered YAML reads the same there; pigz: .gz disk images and initramfs
# members as pigz makes them; gettext-base: envsubst, the documented way to
# fill install-config's placeholders; golang-go, golang-gopkg-yaml.v2-dev,
# golang-gopkg-yaml.v3-dev: go-yaml, openshift-install's and kubectl's YAML
# reader, built offline from Debian's sources; make, man-db: `make install`
# and man(1) reading the pages it installs; chromium, fonts-dejavu-core:
# topology.html loaded from disk headless, for its DOM and a screenshot
# (the diagrams are laid out for DejaVu Sans Mono); lldpd, tcpdump: a real
# LLDP sender and real captures for `nodenet lldp`, in namespaces and in
# the lab's switch VM; buildah: the agent image of dist/Containerfile and a
# MachineOSConfig's containerFile, built offline; cloud-init: `cloud-init
# devel net-convert` judges the network_data.json render writes;
# netplan.io: `netplan generate` judges its netplan files.)



step ".ci/install-bmc.sh (sushy-tools, the Redfish BMC emulator)"
bash .ci/install-bmc.sh

step ".ci/install-lab.sh (NetworkManager with its OVS plugin, for the lab's OpenShift node)"
bash .ci/install-lab.sh

# A background `cargo install` (pid, log, name): waited for, its log's end
# shown when it failed.
installed_by() {
    [ -n "$1" ] || return 0
    if ! wait "$1"; then
        tail -40 "$2" >&2
        echo "cargo install $3 failed" >&2
        exit 1
    fi
    tail -1 "$2"
}

step "coreos-installer 0.27.0: waiting for the background build"
installed_by "$coreos_pid" "$coreos_log" coreos-installer
coreos-installer --version

step "nmstatectl 2.2.62: waiting for the background build"
installed_by "$nmstatectl_pid" "$nmstatectl_log" nmstatectl
nmstatectl --version

#!/usr/bin/env bash
# The lab's OpenShift node (crates/cli/tests/lab/openshift.rs) runs RHCOS's
# own network scripts, which make br-ex through NetworkManager's Open
# vSwitch support. Debian builds NetworkManager without it (no
# libnm-device-plugin-ovs.so), and the plugin needs the daemon it was
# built with: this builds both from Debian's own source package of the
# installed version, OVS on, everything the lab does not use off, and
# puts them under $NODENET_NM_OVS (default /opt/nodenet-ci/nm-ovs):
# sbin/NetworkManager, lib/NetworkManager/<version>/*.so, VERSION.
# About a minute of compiling on two cores; idempotent.
set -euo pipefail
prefix="${NODENET_NM_OVS:-/opt/nodenet-ci/nm-ovs}"
export DEBIAN_FRONTEND=noninteractive
version=$(dpkg-query -W -f '${Version}' network-manager 2>/dev/null || true)
if [ -z "$version" ]; then
    apt-get install -y -qq --no-install-recommends network-manager >/dev/null
    version=$(dpkg-query -W -f '${Version}' network-manager)
fi
stamp="$version run=/run"
if [ -x "$prefix/sbin/NetworkManager" ] && [ "$(cat "$prefix/VERSION" 2>/dev/null)" = "$stamp" ]; then
    echo "NetworkManager $version with OVS already in $prefix"
    exit 0
fi
# Debian's source packages, beside its binary ones.
if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            > /etc/apt/sources.list.d/debian-src.sources
    else
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/debian-src.list
    fi
    apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends dpkg-dev meson ninja-build pkg-config \
    gettext xsltproc libglib2.0-dev libudev-dev libsystemd-dev uuid-dev libndp-dev \
    libjansson-dev libgnutls28-dev libdbus-1-dev libcurl4-gnutls-dev >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get source -qq "network-manager=$version" >/dev/null 2>&1
src=$(find . -maxdepth 1 -type d -name 'network-manager-*' | head -1)
# Debian configures with autotools and --runstatedir=/run; the meson build
# derives it from localstatedir (/var/run), and NetworkManager then refuses
# to load keyfiles from /run/NetworkManager/system-connections, which is
# where configure-ovs writes br-ex's profiles.
sed -i "s|^nm_runstatedir = .*|nm_runstatedir = '/run'|" "$src/meson.build"
grep -q "^nm_runstatedir = '/run'" "$src/meson.build"
# Debian's own paths (debian/rules), so the daemon finds its plugins,
# configuration and state where the distribution's did.
meson setup build "$src" --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
    --libdir=lib/x86_64-linux-gnu --libexecdir=lib/NetworkManager \
    -Dsystemdsystemunitdir=/lib/systemd/system -Dudev_dir=/lib/udev \
    -Ddbus_conf_dir=/usr/share/dbus-1/system.d -Dbuildtype=release \
    -Dovs=true -Dppp=false -Dmodem_manager=false -Dwifi=false -Diwd=false \
    -Dteamdctl=false -Dbluez5_dun=false -Dnmcli=false -Dnmtui=false \
    -Dnm_cloud_setup=false -Dintrospection=false -Dvapi=false -Ddocs=false \
    -Dtests=no -Dselinux=false -Dlibaudit=no -Dpolkit=false -Dconcheck=false \
    -Debpf=false -Dqt=false -Dlibpsl=false -Dcrypto=gnutls -Difupdown=false \
    -Dreadline=none -Dfirewalld_zone=false -Dmore_logging=false >/dev/null
ninja -C build src/core/NetworkManager src/core/devices/ovs/libnm-device-plugin-ovs.so >/dev/null
upstream=${version%%-*}
rm -rf "$prefix.tmp"
mkdir -p "$prefix.tmp/sbin" "$prefix.tmp/lib/NetworkManager/$upstream"
install -m 0755 build/src/core/NetworkManager "$prefix.tmp/sbin/NetworkManager"
install -m 0644 build/src/core/devices/ovs/libnm-device-plugin-ovs.so \
    "$prefix.tmp/lib/NetworkManager/$upstream/"
echo "$stamp" > "$prefix.tmp/VERSION"
rm -rf "$prefix"
mv "$prefix.tmp" "$prefix"
echo "NetworkManager $version with OVS in $prefix"

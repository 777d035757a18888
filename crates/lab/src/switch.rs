//! The lab switch's `switch.sh` (run by lab-init as `lab.role=switch`),
//! from a [`Topology`]: a Linux bridge with `vlan_filtering` whose ports
//! carry each NIC's VLANs (tagged and native) at its MTU, a kernel
//! 802.3ad bond per host LACP bond, the gateway addresses on VLAN
//! interfaces of the bridge, dnsmasq for DHCP and DNS, and lldpd
//! announcing the inventory's switch and port names (plus the port VLAN
//! id, VLAN names and maximum frame size, which lldpd does not read from a
//! VLAN-aware bridge, as custom TLVs).

use std::fmt::Write;

use ipnet::IpNet;

use crate::topology::Topology;

/// What each port carries, announced as a switch does: the 802.3 maximum
/// frame size (MTU + 18), the 802.1 port VLAN id and a VLAN name TLV per
/// VLAN, read from the port's bridge membership (its bond's, when it is
/// in one).
pub const SWP_LLDP: &str = r#"#!/bin/sh
hex16() { printf '%02x,%02x' $(($1 >> 8)) $(($1 & 255)); }
for p in $(cd /sys/class/net && ls -d swp*); do
    lldpcli unconfigure ports $p lldp custom-tlv
    mfs=$(( $(cat /sys/class/net/$p/mtu) + 18 ))
    lldpcli configure ports $p lldp custom-tlv add oui 00,12,0f subtype 4 oui-info $(hex16 $mfs)
    member=$p
    [ -e /sys/class/net/$p/master/bonding ] && member=$(basename $(readlink /sys/class/net/$p/master))
    bridge vlan show dev $member | awk 'NR > 1 { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i, ($0 ~ /PVID/) ? "pvid" : "-" } }' |
    while read vid pvid; do
        [ "$pvid" = pvid ] && lldpcli configure ports $p lldp custom-tlv add oui 00,80,c2 subtype 1 oui-info $(hex16 $vid)
        name="vlan$vid"
        info="$(hex16 $vid),$(printf '%02x' ${#name})$(printf "$name" | od -An -tx1 | sed 's/ /,/g' | tr -d '\n')"
        lldpcli configure ports $p lldp custom-tlv add oui 00,80,c2 subtype 3 oui-info $info
    done
done
"#;

/// Quotes a value for sh (single quotes).
fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

pub fn script(t: &Topology) -> String {
    let mut s = String::from("set -x\n");
    // The switch VM's NICs come up as eth0..ethN in port order.
    for (i, p) in t.ports.iter().enumerate() {
        let _ = writeln!(s, "ip link set eth{i} name {}", p.name);
    }
    s.push_str("ip link add br0 type bridge vlan_filtering 1 stp_state 0\n");
    // Bridge members: a port, or the switch-side bond of its LACP group.
    let mut members: Vec<(String, &crate::topology::SwitchPort)> = Vec::new();
    for p in &t.ports {
        let _ = writeln!(s, "ip link set {} mtu {}", p.name, p.mtu);
        match &p.lacp {
            Some(bond) => {
                if !members.iter().any(|(m, _)| m == bond) {
                    let _ = writeln!(
                        s,
                        "ip link add {bond} type bond mode 802.3ad miimon 100 lacp_rate fast"
                    );
                    members.push((bond.clone(), p));
                }
                let _ = writeln!(
                    s,
                    "ip link set {} down; ip link set {} master {bond}; ip link set {bond} mtu {}",
                    p.name, p.name, p.mtu
                );
            }
            None => members.push((p.name.clone(), p)),
        }
    }
    for (m, p) in &members {
        let _ = writeln!(s, "ip link set {m} master br0");
        if p.native != 1 {
            let _ = writeln!(s, "bridge vlan del dev {m} vid 1");
        }
        let _ = writeln!(s, "bridge vlan add dev {m} vid {} pvid untagged", p.native);
        for v in &p.vlans {
            let _ = writeln!(s, "bridge vlan add dev {m} vid {v}");
        }
        let _ = writeln!(s, "ip link set {m} up");
    }
    for p in t.ports.iter().filter(|p| p.lacp.is_some()) {
        let _ = writeln!(s, "ip link set {} up", p.name);
    }
    s.push_str("ip link set br0 up\n");
    // The gateways: one VLAN interface of the bridge per VLAN with a network.
    let mut vlans: Vec<u16> = t.segments.iter().map(|g| g.vlan).collect();
    vlans.sort();
    vlans.dedup();
    for v in &vlans {
        let _ = writeln!(
            s,
            "bridge vlan add dev br0 vid {v} self\nip link add link br0 name gw{v} type vlan id {v}\nip link set gw{v} up"
        );
    }
    for g in &t.segments {
        let _ = writeln!(
            s,
            "ip addr add {}/{} dev gw{} nodad",
            g.gateway,
            g.network.prefix_len(),
            g.vlan
        );
    }
    // dnsmasq: DHCP where nodes ask for it, DNS for the cluster's names.
    let mut conf = String::from(
        "port=53\nno-resolv\nno-hosts\nbind-dynamic\nexcept-interface=lo\nlog-dhcp\ndhcp-authoritative\n",
    );
    for v in &vlans {
        let _ = writeln!(conf, "interface=gw{v}");
    }
    for (i, g) in t.segments.iter().enumerate() {
        let Some((from, to)) = g.dhcp else { continue };
        let tag = format!("n{i}");
        match g.network {
            IpNet::V4(n) => {
                let _ = writeln!(
                    conf,
                    "dhcp-range=set:{tag},{from},{to},{},1h\ndhcp-option=tag:{tag},option:router,{}\ndhcp-option=tag:{tag},option:dns-server,{}",
                    n.netmask(),
                    g.gateway,
                    g.gateway
                );
            }
            IpNet::V6(n) => {
                let _ = writeln!(
                    conf,
                    "enable-ra\ndhcp-range=set:{tag},{from},{to},{},1h\ndhcp-option=tag:{tag},option6:dns-server,[{}]",
                    n.prefix_len(),
                    g.gateway
                );
            }
        }
    }
    for (name, ip) in &t.dns {
        let _ = writeln!(conf, "host-record={name},{ip}");
    }
    if let Some((apps, ip)) = t.dns.iter().find(|(n, _)| n.starts_with("apps.")) {
        let _ = writeln!(conf, "address=/{apps}/{ip}");
    }
    let _ = write!(
        s,
        "cat > /run/dnsmasq.conf <<'EOF'\n{conf}EOF\ndnsmasq --conf-file=/run/dnsmasq.conf --user=root --pid-file=/run/dnsmasq.pid --log-facility=/run/dnsmasq.log\n"
    );
    // lldpd: the inventory's switch name, each port by its inventory name.
    let _ = write!(
        s,
        "mkdir -p /run/lldpd /etc/lldpd.d\ncat > /etc/lldpd.d/lab.conf <<'EOF'\nconfigure system hostname {}\nconfigure lldp tx-interval 2\nconfigure lldp portidsubtype ifname\n",
        t.switch
    );
    for p in &t.ports {
        if let Some(label) = &p.label {
            let _ = writeln!(
                s,
                "configure ports {} lldp portidsubtype local {} description {}",
                p.name,
                q(label),
                q(label)
            );
        }
    }
    let _ = write!(
        s,
        "EOF\ncat > /usr/local/bin/swp-lldp <<'EOF'\n{SWP_LLDP}EOF\nchmod +x /usr/local/bin/swp-lldp\nlldpd -I 'swp*'\nsleep 1\nswp-lldp\n"
    );
    s
}

#[cfg(test)]
mod tests;

//! One node's own checks: its state against the inventory, bonds, DHCP,
//! gateways, MTU, and the other nodes reached.

use super::*;

pub(super) fn node_checks(
    vm: &mut Vm,
    host: Option<&nodenet_model::Host>,
    pxe: Option<Pxe>,
    allow_lacp: bool,
    routed: &[Family],
) -> (Vec<Check>, Seen) {
    let name = vm.name.clone();
    let mut out = Vec::new();
    // The state: `nodenet diff --live` against the intent, until it is
    // empty (DHCP and LACP take a while) or two minutes pass.
    vm.shell("nm-online -s -q -t 120", Duration::from_secs(150));
    // The intent as the inventory says now (after a rehearsal, the new one).
    let intent_json = host
        .and_then(|h| h.network.as_ref())
        .map(|n| serde_json::to_string_pretty(&n.to_json()).expect("state serialises"))
        .unwrap_or_else(|| "{}".into());
    vm.shell(
        // (The terminator alone on its line: `run` appends to the last one.)
        &format!("cat > /tmp/intent.yml <<'NODENET_EOF'\n{intent_json}\nNODENET_EOF\ntrue"),
        Duration::from_secs(30),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last;
    loop {
        let (st, text) = vm.shell(
            "nodenet diff /tmp/intent.yml --live 2>&1",
            Duration::from_secs(120),
        );
        last = (st, text);
        if last.0 == 0 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_secs(3));
    }
    out.push(check(
        &name,
        "state",
        "diff --live",
        last.0 == 0,
        if last.0 == 0 {
            "the live state is the intent".to_string()
        } else {
            last.1.trim().to_string()
        },
    ));
    let intent = host.and_then(|h| h.network.as_ref());
    let net = intent.map(Network::read).unwrap_or_default();
    for bond in net
        .ifaces
        .iter()
        .filter(|i| !i.absent && i.bond_mode().as_deref() == Some("802.3ad"))
    {
        let result = bond_back(vm, &bond.name, bond.ports.len());
        out.push(match result {
            Ok(n) => check(
                &name,
                "bond",
                &bond.name,
                true,
                format!("LACP aggregated on both ends, {n} port(s)"),
            ),
            Err(e) => check(
                &name,
                "bond",
                &bond.name,
                false,
                format!("LACP not aggregated: {e}"),
            ),
        });
    }
    if let Some(pxe) = &pxe {
        out.extend(pxe_check(vm, pxe, allow_lacp));
    }
    let (_, text) = vm.shell("ip -j addr show", Duration::from_secs(30));
    let addresses = parse_addresses(&text);
    for i in net.ifaces.iter().filter(|i| !i.absent) {
        for fam in [Family::V4, Family::V6] {
            if i.family_enabled(fam) && i.family_dynamic(fam) {
                let got: Vec<String> = addresses
                    .get(&i.name)
                    .into_iter()
                    .flatten()
                    .filter(|a| Family::of(&a.addr()) == fam)
                    .map(|a| a.to_string())
                    .collect();
                out.push(check(
                    &name,
                    "dhcp",
                    format!("{} {}", i.name, fam.key()),
                    !got.is_empty(),
                    if got.is_empty() {
                        "no lease: no address from DHCP".to_string()
                    } else {
                        format!("lease {}", got.join(", "))
                    },
                ));
            }
        }
    }
    for fam in routed {
        let flag = match fam {
            Family::V4 => "-4",
            Family::V6 => "-6",
        };
        let (_, text) = vm.shell(
            &format!("ip -j {flag} route show default"),
            Duration::from_secs(30),
        );
        let routes = parse_default_routes(&text);
        out.push(check(
            &name,
            "route",
            format!("default {}", fam.key()),
            !routes.is_empty(),
            if routes.is_empty() {
                format!(
                    "no {} default route, though the cluster has a machine network of that family",
                    fam.name()
                )
            } else {
                routes.join(", ")
            },
        ));
    }
    // Every lab NIC is cabled to the switch, so listening ends as soon as
    // each has heard one LLDPDU (lldpd sends every 2 s); the 30 s bound is
    // for a loaded machine, where TCG may starve the switch VM for longer
    // than a few frames (8 s once heard nothing on all three NICs in CI).
    let (st, text) = vm.shell(
        "nodenet lldp --timeout 30 --format json -o /tmp/lldp.json >/dev/null 2>&1; cat /tmp/lldp.json",
        Duration::from_secs(90),
    );
    let observation = (st == 0)
        .then(|| Observation::from_json(&text).ok())
        .flatten();
    (
        out,
        Seen {
            name,
            addresses,
            observation,
        },
    )
}

pub(super) fn ping(vm: &mut Vm, to: IpAddr, size: Option<u32>) -> (bool, String) {
    let df = match size {
        Some(s) => format!("-M do -s {s} "),
        None => String::new(),
    };
    let (st, text) = vm.shell(
        &format!("ping -n -c 3 -i 0.3 -W 2 {df}{to} 2>&1 | tail -2"),
        Duration::from_secs(30),
    );
    (
        st == 0,
        text.lines().next().unwrap_or_default().trim().to_string(),
    )
}

pub(super) fn reachability(
    vm: &mut Vm,
    peers: &[(String, String, IpNet)],
    segments: &[crate::topology::Segment],
    jumbo: &BTreeMap<(String, String), u32>,
) -> Vec<Check> {
    let name = vm.name.clone();
    let mut out = Vec::new();
    let mine: Vec<(String, IpNet)> = peers
        .iter()
        .filter(|(n, _, _)| *n == name)
        .map(|(_, i, a)| (i.clone(), *a))
        .collect();
    for (iface, addr) in &mine {
        let net = addr.trunc();
        if let Some(seg) = segments.iter().find(|s| s.network == net) {
            let (ok, detail) = ping(vm, seg.gateway, None);
            out.push(check(
                &name,
                "ping",
                format!("{} (gateway, from {iface})", seg.gateway),
                ok,
                detail,
            ));
        }
        for (peer, peer_iface, peer_addr) in peers {
            if *peer == name || peer_addr.trunc() != net {
                continue;
            }
            let (ok, detail) = ping(vm, peer_addr.addr(), None);
            out.push(check(
                &name,
                "ping",
                format!("{} ({peer} {peer_iface})", peer_addr.addr()),
                ok,
                detail,
            ));
            let both = (
                jumbo.get(&(name.clone(), iface.clone())),
                jumbo.get(&(peer.clone(), peer_iface.clone())),
            );
            if let (Some(a), Some(b)) = both {
                let mtu = (*a).min(*b);
                let payload = mtu - if addr.addr().is_ipv4() { 28 } else { 48 };
                let (ok, detail) = ping(vm, peer_addr.addr(), Some(payload));
                out.push(check(
                    &name,
                    "mtu",
                    format!("{mtu} to {} ({peer})", peer_addr.addr()),
                    ok,
                    if ok {
                        format!("full-size frames pass: {detail}")
                    } else {
                        format!("full-size frames do not pass (DF set): {detail}")
                    },
                ));
            }
        }
    }
    out
}

//! What only a live system does: NICs found by burned-in MAC, OVS bridges
//! seen as their internal port, routes in the main table.

use super::*;

/// The permanent MAC of a live interface (a bond port shows its bond's
/// MAC as `mac-address`), else its MAC.
pub(super) fn burned_in_mac(iface: &J) -> Option<String> {
    ["permanent-mac-address", "mac-address"]
        .iter()
        .filter_map(|k| iface.get(*k).and_then(J::as_str))
        .find(|m| !m.is_empty())
        .map(str::to_ascii_uppercase)
}

/// `desired` with each interface bound by MAC (`identifier: mac-address`)
/// found live by that MAC: it takes the live interface's name (in port
/// lists, VLAN parents and routes too), and its `mac-address`, the NIC's
/// identity rather than a MAC to set, is met by the match and not compared
/// against the MAC the NIC has now (a bond port's is its bond's). One not
/// found stays as written and shows as missing.
pub(super) fn found_by_mac(desired: &J, actual: &J) -> J {
    let live = list(actual, &["interfaces"]);
    let mut renames: Vec<(String, String)> = Vec::new();
    let mut out = desired.clone();
    let Some(ifaces) = out.get_mut("interfaces").and_then(J::as_array_mut) else {
        return out;
    };
    for iface in ifaces.iter_mut() {
        if iface.get("identifier").and_then(J::as_str) != Some("mac-address") {
            continue;
        }
        let Some(mac) = iface
            .get("mac-address")
            .and_then(J::as_str)
            .map(str::to_ascii_uppercase)
        else {
            continue;
        };
        let Some(found) = live
            .iter()
            .find(|a| burned_in_mac(a).as_deref() == Some(&mac))
        else {
            continue;
        };
        let (live_name, _) = key(found);
        let Some(obj) = iface.as_object_mut() else {
            continue;
        };
        obj.remove("mac-address");
        let name = obj
            .get("name")
            .and_then(J::as_str)
            .unwrap_or("")
            .to_string();
        if name != live_name {
            obj.insert("name".into(), J::String(live_name.clone()));
            renames.push((name, live_name));
        }
    }
    if renames.is_empty() {
        return out;
    }
    let renamed = |v: &mut J| {
        if let Some(to) = v
            .as_str()
            .and_then(|n| renames.iter().find(|(from, _)| from == n))
        {
            *v = J::String(to.1.clone());
        }
    };
    for iface in ifaces.iter_mut() {
        for path in [
            &["link-aggregation", "port"][..],
            &["bridge", "port"],
            &["controller"],
            &["vlan", "base-iface"],
        ] {
            let mut at = Some(&mut *iface);
            for p in path {
                at = at.and_then(|v| v.get_mut(*p));
            }
            match at {
                Some(J::Array(items)) => {
                    for item in items {
                        match item.get_mut("name") {
                            Some(n) => renamed(n),
                            None => renamed(item),
                        }
                    }
                }
                Some(v) => renamed(v),
                None => {}
            }
        }
    }
    if let Some(routes) = out
        .get_mut("routes")
        .and_then(|r| r.get_mut("config"))
        .and_then(J::as_array_mut)
    {
        for r in routes {
            if let Some(v) = r.get_mut("next-hop-interface") {
                renamed(v);
            }
        }
    }
    out
}

/// An OVS bridge as far as the kernel can tell: it is ovsdb's, not a
/// kernel device, so what shows is that each of its ports (its internal
/// interface too) is there on the OVS datapath. Which bridge they are
/// in, and the bridge's options, the kernel does not know.
pub(super) fn live_ovs_bridge(desired: &J, actual: &[&J]) -> Option<IfaceDiff> {
    if is_absent(desired) {
        return None;
    }
    let (name, kind) = key(desired);
    let wanted: Vec<&str> = list(desired, &["bridge", "port"])
        .into_iter()
        .filter_map(|p| p.get("name").and_then(J::as_str))
        .collect();
    // A system port is attached to the datapath; an internal interface
    // is the datapath's own device (not attached: it has no controller).
    let attached = |port: &&str| {
        actual.iter().any(|a| {
            a.get("name").and_then(J::as_str) == Some(*port)
                && (a.get("controller").and_then(J::as_str) == Some(crate::live::OVS_DATAPATH)
                    || a.get("type").and_then(J::as_str) == Some("ovs-interface"))
        })
    };
    if wanted.iter().all(attached) {
        return None;
    }
    let names =
        |ports: Vec<&str>| J::Array(ports.into_iter().map(|p| json!({ "name": p })).collect());
    Some(IfaceDiff {
        name,
        kind,
        change: Change::Changed,
        fields: vec![FieldChange {
            path: "bridge.port".into(),
            actual: names(wanted.iter().copied().filter(attached).collect()),
            desired: names(wanted),
            implied: false,
        }],
    })
}

/// A route as nmstate means it: `table-id` 254 (main) or 0 is the main
/// table, as is no table at all.
pub(super) fn main_table(route: &J) -> J {
    let mut r = route.clone();
    if let Some(m) = r.as_object_mut() {
        if m.get("table-id")
            .and_then(J::as_u64)
            .is_some_and(|t| t == 254 || t == 0)
        {
            m.remove("table-id");
        }
    }
    r
}

pub(super) fn is_absent(v: &J) -> bool {
    v.get("state").and_then(J::as_str) == Some("absent")
}

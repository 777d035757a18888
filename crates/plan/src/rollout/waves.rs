//! What each host's change is, as a partial NMState state (the delta), and
//! the wave it goes out in: hosts whose change depends on another's wait
//! for it.

use super::*;

/// The part of a host's change of one risk, as a partial NMState state:
/// new interfaces whole, changed ones with only what changes (so hosts
/// whose change is the same share one policy whatever their addresses),
/// removed ones `absent`. Only the parts of the new state it takes are
/// made JSON, not the whole state for every host.
pub(super) fn delta(
    new_state: Option<&Node>,
    items: &[&Item],
    diff: &nodenet_import::diff::Diff,
) -> J {
    let mut state = Map::new();
    let new_ifaces: &[Node] = new_state
        .and_then(|s| s.get("interfaces"))
        .and_then(Node::as_seq)
        .unwrap_or_default();
    let new_iface = |name: &str| {
        new_ifaces
            .iter()
            .find(|i| i.get("name").and_then(Node::as_str) == Some(name))
    };
    let mut ifaces = Vec::new();
    let mut routes = Vec::new();
    for item in items {
        match item {
            Item::Iface {
                name, kind, change, ..
            } => match change {
                Change::Removed => {
                    ifaces.push(json!({"name": name, "type": kind, "state": "absent"}))
                }
                Change::Added => {
                    if let Some(i) = new_iface(name) {
                        ifaces.push(i.to_json());
                    }
                }
                Change::Changed => {
                    let mut entry = Map::new();
                    entry.insert("name".into(), json!(name));
                    entry.insert("type".into(), json!(kind));
                    for d in diff
                        .interfaces
                        .iter()
                        .filter(|d| &d.name == name && &d.kind == kind)
                    {
                        // A value left out whose default is the device's
                        // own cannot be written back (the plan says so).
                        for f in d.fields.iter().filter(|f| !f.desired.is_null()) {
                            let path: Vec<&str> = f.path.split('.').collect();
                            artifacts::set_at(&mut entry, &path, f.desired.clone());
                        }
                    }
                    // nmstate replaces a VLAN's settings as a whole when a
                    // state gives any (`VlanConfig::update`: base-iface,
                    // id and protocol all taken from the desired side), so
                    // a changed id goes with its base.
                    if entry.contains_key("vlan") {
                        if let Some(v) = new_iface(name).and_then(|i| i.get("vlan")) {
                            entry.insert("vlan".into(), v.to_json());
                        }
                    }
                    ifaces.push(J::Object(entry));
                }
            },
            Item::Route { route, added, .. } => {
                let mut r = route.clone();
                if !added {
                    if let Some(o) = r.as_object_mut() {
                        o.insert("state".into(), json!("absent"));
                    }
                }
                routes.push(r);
            }
            Item::Dns { .. } => {
                if let Some(dns) = new_state.and_then(|s| s.get("dns-resolver")) {
                    state.insert("dns-resolver".into(), dns.to_json());
                }
            }
        }
    }
    if !ifaces.is_empty() {
        state.insert("interfaces".into(), J::Array(ifaces));
    }
    if !routes.is_empty() {
        state.insert("routes".into(), json!({ "config": routes }));
    }
    J::Object(state)
}

/// The wave of each of a host's items (from 1). An item goes after what
/// it needs: a VLAN after its base is made, or after its base's MTU is
/// raised to hold the VLAN's; a base's MTU lowered after its VLANs'; a
/// route after the interface it leaves by; a removal after the host's
/// additions (what replaces it). Items that go out in one policy (same
/// risk, same wave) are ordered by nmstate; an item needed by one of
/// another risk class goes a wave earlier.
pub fn waves(items: &[Item], diff: &nodenet_import::diff::Diff, new_state: &Node) -> Vec<usize> {
    let net = Network::read(new_state);
    let index = |name: &str| {
        items
            .iter()
            .position(|i| matches!(i, Item::Iface { name: n, .. } if n == name))
    };
    let mtu_change = |name: &str| {
        diff.interfaces
            .iter()
            .filter(|d| d.name == name)
            .flat_map(|d| d.fields.iter())
            .find(|f| f.path == "mtu")
            .map(|f| (f.actual.as_i64(), f.desired.as_i64()))
    };
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for (x, item) in items.iter().enumerate() {
        match item {
            Item::Iface {
                name,
                change: Change::Added | Change::Changed,
                ..
            } => {
                let Some(iface) = net.iface(name) else {
                    continue;
                };
                let Some((base, p)) =
                    crate::risk::base_iface(iface.node).and_then(|b| Some((b.clone(), index(&b)?)))
                else {
                    continue;
                };
                match &items[p] {
                    Item::Iface {
                        change: Change::Added,
                        ..
                    } => edges.push((p, x)),
                    Item::Iface {
                        change: Change::Changed,
                        ..
                    } => {
                        let Some((base_old, base_new)) = mtu_change(&base) else {
                            continue;
                        };
                        // An unset MTU is the kernel's default 1500.
                        let base_old = base_old.unwrap_or(1500);
                        if iface.mtu().is_some_and(|(m, _)| m > base_old) {
                            edges.push((p, x));
                        }
                        let own_old = mtu_change(name).and_then(|(old, _)| old);
                        if let (Some(old), Some(new)) = (own_old, base_new) {
                            if old > new {
                                edges.push((x, p));
                            }
                        }
                    }
                    _ => {}
                }
            }
            Item::Route {
                route, added: true, ..
            } => {
                if let Some(p) = route["next-hop-interface"].as_str().and_then(index) {
                    if matches!(
                        items[p],
                        Item::Iface {
                            change: Change::Added,
                            ..
                        }
                    ) {
                        edges.push((p, x));
                    }
                }
            }
            Item::Iface {
                change: Change::Removed,
                ..
            } => {
                for (a, other) in items.iter().enumerate() {
                    if matches!(
                        other,
                        Item::Iface {
                            change: Change::Added,
                            ..
                        }
                    ) {
                        edges.push((a, x));
                    }
                }
            }
            _ => {}
        }
    }
    let mut wave = vec![1; items.len()];
    // Longest path; bounded, as a cycle (none is built above) must not hang.
    for _ in 0..=items.len() {
        let mut moved = false;
        for &(a, b) in &edges {
            let need = wave[a] + usize::from(items[a].risk() != items[b].risk());
            if wave[b] < need {
                wave[b] = need;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    wave
}

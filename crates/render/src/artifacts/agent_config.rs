//! agent-config.yaml: the rendezvous host and every host's interfaces
//! and network, as the agent installer reads them.

use rayon::prelude::*;

use super::*;
/// The rendezvous host's address: the inventory's, else the first
/// master's first static address in the primary machine network (any of
/// its addresses without machine networks). `addresses` per host.
pub fn rendezvous_ip(inv: &Inventory, addresses: &[Vec<IpAddr>]) -> Option<IpAddr> {
    let primary = inv.cluster.machine_networks.first().map(|m| m.value);
    let in_primary = |ip: &IpAddr| primary.is_none_or(|m| m.contains(ip));
    inv.rendezvous_ip.as_ref().map(|r| r.value).or_else(|| {
        inv.hosts
            .iter()
            .zip(addresses)
            .filter(|(h, _)| h.role.value == Role::Master)
            .find_map(|(_, a)| a.iter().copied().find(in_primary))
    })
}

/// agent-config.yaml; rendezvousIP is the inventory's, else the first
/// master's first static address in the primary machine network (the
/// first one's; any of its addresses without machine networks): the
/// other agents reach the rendezvous host there, not on a PXE or storage
/// network.
pub fn agent_config(
    inv: &Inventory,
    addresses: &[Vec<IpAddr>],
    texts: &[Option<String>],
) -> String {
    let rendezvous = rendezvous_ip(inv, addresses);
    // The agent installer identifies a listed host by a MAC and refuses
    // one without: a host with none is left out (it joins as any machine
    // that boots the ISO; check says so), one with only a boot MAC gets
    // the interface openshift-install gives it too (`boot`).
    let listed: Vec<(&Host, Vec<J>, Option<&str>)> = inv
        .hosts
        .iter()
        .zip(texts)
        .filter_map(|(h, text)| {
            let ifaces = agent_interfaces(h);
            (!ifaces.is_empty()).then_some((h, ifaces, text.as_deref()))
        })
        .collect();
    // What the user gave first, in its order; nodenet's fields set in place.
    let mut doc = match inv.cluster.agent_config.as_ref().map(|n| n.to_json()) {
        Some(J::Object(m)) => m,
        _ => Map::new(),
    };
    set_default(&mut doc, "apiVersion", json!("v1beta1"));
    set_default(&mut doc, "kind", json!("AgentConfig"));
    let name = inv.cluster.name.as_ref().map(|n| n.value.clone());
    match name {
        Some(name) => set_at(&mut doc, &["metadata", "name"], json!(name)),
        None => set_default(object_at(&mut doc, "metadata"), "name", json!("cluster")),
    }
    if let Some(ip) = rendezvous {
        set_at(&mut doc, &["rendezvousIP"], json!(ip.to_string()));
    }
    let host = |(h, ifaces, text): &(&Host, Vec<J>, Option<&str>)| {
        agent_host(h, ifaces.clone(), text.is_some())
    };
    if !listed.is_empty() {
        let mut doc = doc.clone();
        set_at(&mut doc, &["hosts"], J::Array(vec![Envelope::mark()]));
        if let Some(envelope) = Envelope::of(&J::Object(doc)) {
            // Each host's item on every core.
            let items: Vec<String> = listed
                .par_iter()
                .map(|listed| envelope.item(host(listed), listed.2))
                .collect();
            return envelope.with(items.iter().map(String::as_str));
        }
    }
    set_at(
        &mut doc,
        &["hosts"],
        J::Array(listed.iter().map(host).collect()),
    );
    let states: Vec<&str> = listed.iter().filter_map(|(_, _, t)| *t).collect();
    embed_all(&yaml(&J::Object(doc)), &states, Embed::Mapping)
}

/// A host as agent-config.yaml and nodes-config.yaml list one (the
/// installer's `agent.Host`); its `networkConfig` is embedded after.
pub(crate) fn agent_host(h: &Host, ifaces: Vec<J>, has_network: bool) -> J {
    let mut m = Map::new();
    m.insert("hostname".into(), json!(h.name.value));
    if h.role.value != Role::Unset {
        m.insert("role".into(), json!(h.role.value.as_str()));
    }
    m.insert("interfaces".into(), J::Array(ifaces));
    if let Some(hints) = &h.root_device_hints {
        m.insert("rootDeviceHints".into(), hints.to_json());
    }
    if has_network {
        m.insert("networkConfig".into(), json!(TOKEN));
    }
    J::Object(m)
}

/// A host's interfaces for agent-config.yaml: its NICs with a MAC, else
/// its boot MAC as openshift-install names it (`boot`).
pub fn agent_interfaces(h: &Host) -> Vec<J> {
    let nics: Vec<J> = h
        .nics
        .iter()
        .filter_map(|n| Some(json!({"name": n.name.value, "macAddress": n.mac.as_ref()?.value})))
        .collect();
    match (&h.boot_mac, nics.is_empty()) {
        (Some(mac), true) => vec![json!({"name": "boot", "macAddress": mac.value})],
        _ => nics,
    }
}

//! Per-host documents made once per shape, not once per host.
//!
//! Hosts made from one template differ in their addresses and MACs, and
//! the documents render makes from their states (the br-ex and day-2
//! states of the MachineConfigs, the policies' parts) differ in the same
//! values alone: for 10,000 hosts, making each one's br-ex plan, derived
//! state and YAML was a quarter of a render. Hosts are grouped by shape
//! (their intent's text with every address and MAC blanked, and every
//! other field of the host a document may read; see [`HostShapes::of`]),
//! the first host of each shape is made, its documents are cut at its
//! values (`nodenet_check::shapes::text`) and filled with each other
//! host's.
//!
//! Only where that gives the bytes making each host would:
//! - a host's values compare (as numbers and as text) and repeat among
//!   themselves as the first host's do, and each falls in the same
//!   networks of the cluster (machine networks, the provisioning CIDR,
//!   OVN's masquerade, the NAT'd ones, the VIPs): what a document decides
//!   by a value decides alike;
//! - a sample of each shape (its second host, its last, every 64th) is
//!   also made directly and must give exactly the filled bytes, else the
//!   whole shape is made host by host.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;

use rayon::prelude::*;

use nodenet_check::shapes::text::{alike, values_of, Both, Slot, Template, Values};
use nodenet_model::{Cluster, Host, Inventory};

/// Shapes smaller than this are made host by host.
const MIN_SHAPE: usize = 4;
/// Orders of values one shape is split into at most (the rest made alone).
const MAX_ORDERS: usize = 16;
/// Every this many hosts of a shape, one is made directly as well.
const SAMPLE_EVERY: usize = 64;

/// The hosts of an inventory grouped by shape.
pub struct HostShapes {
    /// Per host: its values, when it is in a shape of [`MIN_SHAPE`] or more.
    values: Vec<Option<Values>>,
    /// Each shape's hosts (inventory order), [`MIN_SHAPE`] or more.
    shapes: Vec<Vec<usize>>,
}

impl HostShapes {
    /// `texts`: each host's intent as YAML ([`crate::artifacts::intent_texts`]).
    pub fn of(inv: &Inventory, texts: &[Option<String>]) -> HostShapes {
        let keys = (RandomState::new(), RandomState::new());
        let keyed: Vec<Option<((u64, u64), Values)>> = inv
            .hosts
            .par_iter()
            .zip(texts)
            .map(|(h, text)| key(h, &inv.cluster, text.as_deref()?, &keys))
            .collect();
        let mut by_key: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        for (i, k) in keyed.iter().enumerate() {
            if let Some((k, _)) = k {
                by_key.entry(*k).or_default().push(i);
            }
        }
        let mut values: Vec<Option<Values>> = keyed.into_iter().map(|k| k.map(|k| k.1)).collect();
        let mut shapes = Vec::new();
        for members in by_key.into_values() {
            // Values ordered or repeated otherwise (10.0.0.9 and 10.0.0.10
            // sort apart as text) make a shape of their own.
            let mut alike_groups: Vec<Vec<usize>> = Vec::new();
            for i in members {
                let found = alike_groups.iter().position(
                    |g| matches!((&values[g[0]], &values[i]), (Some(a), Some(b)) if alike(a, b)),
                );
                match found {
                    Some(g) => alike_groups[g].push(i),
                    None if alike_groups.len() < MAX_ORDERS => alike_groups.push(vec![i]),
                    None => values[i] = None,
                }
            }
            for g in alike_groups {
                if g.len() < MIN_SHAPE {
                    g.iter().for_each(|&i| values[i] = None);
                } else {
                    shapes.push(g);
                }
            }
        }
        shapes.sort_unstable();
        HostShapes { values, shapes }
    }

    /// No shapes: every host made alone (what shapes must equal).
    #[cfg(test)]
    fn alone(n: usize) -> HostShapes {
        HostShapes {
            values: vec![None; n],
            shapes: Vec::new(),
        }
    }

    /// [`HostShapes::of`], the intents' texts made here.
    pub fn of_inventory(inv: &Inventory) -> HostShapes {
        HostShapes::of(inv, &crate::artifacts::intent_texts(inv))
    }

    /// `make(i)` for every one of `n` hosts: made for each shape's first
    /// host and its sample, filled in for the others when the sample
    /// agrees, else made for each.
    pub fn make<const K: usize>(
        &self,
        n: usize,
        make: &(dyn Fn(usize) -> [Option<String>; K] + Sync),
    ) -> Vec<[Option<String>; K]> {
        // Per shape: its first host's documents as templates, or none.
        let templates: Vec<Option<[Option<Template>; K]>> = self
            .shapes
            .par_iter()
            .map(|members| self.templates(members, make))
            .collect();
        let mut from: Vec<Option<usize>> = vec![None; n];
        for (s, members) in self.shapes.iter().enumerate() {
            if templates[s].is_some() {
                members.iter().for_each(|&i| from[i] = Some(s));
            }
        }
        (0..n)
            .into_par_iter()
            .map(|i| match (from[i], &self.values[i]) {
                (Some(s), Some(values)) => {
                    let t = templates[s].as_ref().expect("a shape with templates");
                    std::array::from_fn(|k| t[k].as_ref().map(|t| t.fill(values)))
                }
                _ => make(i),
            })
            .collect()
    }

    /// The first host's documents cut at its values, when every sampled
    /// host's made documents are those templates filled with its values.
    fn templates<const K: usize>(
        &self,
        members: &[usize],
        make: &(dyn Fn(usize) -> [Option<String>; K] + Sync),
    ) -> Option<[Option<Template>; K]> {
        let first = members[0];
        let values = self.values[first].as_ref()?;
        let made = make(first);
        let mut seen = vec![false; values.len()];
        let templates: [Option<Template>; K] = std::array::from_fn(|k| {
            made[k]
                .as_deref()
                .map(|text| Template::cut(text, values, &mut seen))
        });
        let last = members.len() - 1;
        let agrees = members
            .iter()
            .enumerate()
            .filter(|&(k, _)| k == 1 || k == last || k % SAMPLE_EVERY == 0)
            .filter(|&(k, _)| k > 0)
            .all(|(_, &i)| {
                let Some(other) = self.values[i].as_ref() else {
                    return false;
                };
                let direct = make(i);
                (0..K).all(|k| match (&templates[k], &direct[k]) {
                    (Some(t), Some(d)) => t.fill(other) == *d,
                    (None, None) => true,
                    _ => false,
                })
            });
        agrees.then_some(templates)
    }
}

/// A host's shape (128 bits) and values; `None` for a host made alone
/// (no intent, or a placeholder left unexpanded).
///
/// Besides the intent's text, the shape holds every field of the host a
/// shaped document may read. The host's name, BMC, boot mode, disk
/// hints, pool addresses and passthrough fields differ from host to host
/// and are not in it: the documents made by shape never read them (the
/// sample would show it).
fn key(
    h: &Host,
    cluster: &Cluster,
    text: &str,
    keys: &(RandomState, RandomState),
) -> Option<((u64, u64), Values)> {
    let Host {
        name: _,
        kind,
        applies_to,
        written_to,
        span: _,
        role,
        bmc: _,
        boot_mac,
        boot_mode: _,
        root_device_hints: _,
        install_config_extra: _,
        ztp: _,
        nics,
        nics_listed,
        network: _,
        projected_network,
        nic_binding,
        pxe_interface,
        br_ex_uplink,
        pool_ips: _,
        labels,
        policy,
        unresolved,
    } = h;
    if !unresolved.is_empty() {
        return None;
    }
    let mut hash = Both::new(keys);
    let values = values_of(text, &mut hash);
    if values.is_empty() {
        return None;
    }
    for (slot, _) in &values {
        if let Slot::Ip(ip) = slot {
            networks_of(cluster, ip).hash(&mut hash);
        }
    }
    (kind, applies_to, written_to, role.value).hash(&mut hash);
    for nic in nics {
        (&nic.name.value, nic.mac.is_some()).hash(&mut hash);
    }
    let boot_nic = boot_mac.as_ref().map(|m| {
        nics.iter().position(|n| {
            n.mac
                .as_ref()
                .is_some_and(|x| x.value.eq_ignore_ascii_case(&m.value))
        })
    });
    (boot_nic, nics_listed, projected_network).hash(&mut hash);
    nic_binding.as_ref().map(|b| b.value).hash(&mut hash);
    pxe_interface.as_ref().map(|p| &p.value).hash(&mut hash);
    br_ex_uplink.as_ref().map(|u| &u.value).hash(&mut hash);
    labels.hash(&mut hash);
    policy
        .as_ref()
        .map(|p| (&p.name, &p.selector))
        .hash(&mut hash);
    Some((hash.pair(), values))
}

/// Which of the cluster's own networks and addresses `ip` is in, as bits:
/// what a document may decide by an address.
fn networks_of(cluster: &Cluster, ip: &IpAddr) -> Vec<bool> {
    let nets = cluster
        .machine_networks
        .iter()
        .chain(cluster.provisioning.cidr.iter())
        .chain(&cluster.ovn_masquerade)
        .chain(&cluster.behind_nat)
        .map(|n| n.value.contains(ip));
    let vips = cluster
        .api_vips
        .iter()
        .chain(&cluster.ingress_vips)
        .map(|v| v.value == *ip);
    nets.chain(vips).collect()
}

#[cfg(test)]
mod tests;

//! The network comparison once per pair of shapes, not once per host.
//!
//! A day-2 change to a template (every MTU, a bond option) changes a
//! whole fleet alike: 10,000 hosts whose states differ only in their
//! addresses and MACs. Comparing a host goes through nmstate's canonical
//! form of both versions, and that was most of what `plan` does beyond
//! `check`. Hosts are grouped by the pair of their OLD and NEW states with
//! the addresses and MACs blanked (`nodenet_check::shapes::node_values`,
//! the positions `check` makes keyfiles once per shape by); the first
//! host of a group is compared as every host is, and the others take its
//! diff only where it is the diff they would get:
//! - the diff holds no address or MAC (it names interfaces and fields,
//!   `mtu: 9000 -> 8000`): nothing in it is the first host's own;
//! - a host's values (OLD's, then NEW's) are canonical and ordinary, and
//!   compare and repeat among themselves as the first host's do: whatever
//!   nmstate sorts or merges, and whatever the comparison finds equal
//!   from one version to the other, comes out alike;
//! - the second host of a group, its last and every 64th are compared as
//!   well and must give that same diff; a group that fails any of this is
//!   compared host by host.
//!
//! The risk of the change (`risk::classify`) is told once per subgroup
//! in the same way: hosts that took one diff, whose addresses fall in the
//! same machine networks and which boot from the same NIC and name the
//! same br-ex uplink ([`RiskKey`]: the rest of what the risk reads is the
//! shape's). A subgroup's first host is classified, and the others take
//! its items and reasons only where these name no address or MAC of a
//! host classified, and the second host, the last and every 64th got the
//! same.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use rayon::prelude::*;

use nodenet_check::fleet::pxe_interface;
use nodenet_check::shapes::node_values;
use nodenet_check::shapes::text::{alike, holds_value, values_of, Both, Slot};
use nodenet_import::diff::Diff;
use nodenet_model::{Cluster, Host};

use crate::{Item, Reason};

/// Groups smaller than this are compared host by host.
const MIN_GROUP: usize = 4;
/// Every this many hosts of a group, one is compared as well.
const SAMPLE_EVERY: usize = 64;

/// A host's OLD and NEW states, blanked and hashed, and their values
/// (OLD's `old_values` first).
struct PairShape {
    hash: (u64, u64),
    values: Vec<(Slot, String)>,
    old_values: usize,
}

/// What [`diffs`] found.
pub(crate) struct Diffs {
    /// Per NEW host, its network's diff when it was compared here or
    /// shares its group's.
    pub diffs: Vec<Option<Diff>>,
    /// How many hosts took their group's diff.
    pub shared: usize,
    /// Per host, the group whose diff it has (the group's first host,
    /// and the sampled hosts whose own diff agreed, too).
    group: Vec<Option<usize>>,
    shapes: Vec<Option<PairShape>>,
}

/// `None` when either version has no network, both are the same document
/// (nothing to compare), or a value is not one to share a diff over.
fn pair_shape(o: &Host, n: &Host, keys: &(RandomState, RandomState)) -> Option<PairShape> {
    let (old, new) = (o.network.as_ref()?, n.network.as_ref()?);
    if old.same_value(new) {
        return None;
    }
    let mut h = Both::new(keys);
    let mut values = node_values(old, &mut h)?;
    let old_values = values.len();
    // Where OLD ends: no state of one pair hashes as another's split
    // elsewhere.
    h.write_u8(0xff);
    values.extend(node_values(new, &mut h)?);
    Some(PairShape {
        hash: h.pair(),
        values,
        old_values,
    })
}

/// Per NEW host (`pairs[i]`, with its OLD host when it has one), its
/// network's diff when it was compared here or shares its group's.
/// `compare` is the host-by-host comparison (`None`: no change, or a
/// state it refuses; those hosts are compared again, and refused, by the
/// caller).
pub(crate) fn diffs(
    pairs: &[(Option<&Host>, &Host)],
    compare: &(dyn Fn(&Host, &Host) -> Option<Diff> + Sync),
) -> Diffs {
    let keys = (RandomState::new(), RandomState::new());
    let shapes: Vec<Option<PairShape>> = pairs
        .par_iter()
        .map(|(o, n)| pair_shape((*o)?, n, &keys))
        .collect();
    let groups = groups_of(shapes.iter().map(|s| s.as_ref().map(|s| s.hash)));
    // Each group's first host and its sample, compared as before.
    let compared: Vec<(usize, Option<Diff>)> = sample_of(&groups)
        .into_par_iter()
        .map(|i| (i, pairs[i].0.and_then(|o| compare(o, pairs[i].1))))
        .collect();
    let mut out: Vec<Option<Diff>> = (0..pairs.len()).map(|_| None).collect();
    for (i, diff) in compared {
        out[i] = diff;
    }
    let values = |i: usize| shapes[i].as_ref().map_or(&[][..], |s| &s.values[..]);
    let mut group = vec![None; pairs.len()];
    let mut shared: Vec<(usize, Diff)> = Vec::new();
    for (g, (m, first)) in groups
        .iter()
        .filter_map(|m| Some((m, out[m[0]].as_ref()?)))
        .filter(|(m, first)| group_agrees(m, first, &out, &values))
        .enumerate()
    {
        for &i in m.iter().filter(|&&i| alike(values(m[0]), values(i))) {
            match &out[i] {
                None => shared.push((i, first.clone())),
                Some(own) if own != first => continue,
                Some(_) => {}
            }
            group[i] = Some(g);
        }
    }
    let count = shared.len();
    for (i, diff) in shared {
        out[i] = Some(diff);
    }
    Diffs {
        diffs: out,
        shared: count,
        group,
        shapes,
    }
}

/// A change's items and reasons (`risk::classify`).
pub(crate) type Classified = (Vec<Item>, Vec<Reason>);

/// What a change's risk hangs on beyond its pair of shapes and its diff
/// (`risk::classify`, through `nodenet_check::traffic`): the machine
/// network each of the host's addresses is in (OLD's in OLD's networks,
/// NEW's in NEW's), and the NIC it boots from and the br-ex uplink it
/// names, in both versions. The rest it reads (interfaces, their kinds,
/// ports and bases, routes, DHCP) is the shape's.
#[derive(PartialEq, Eq, Hash)]
struct RiskKey {
    group: usize,
    networks: Vec<Option<usize>>,
    pxe: [Option<String>; 2],
    uplink: [Option<String>; 2],
}

fn risk_key(
    group: usize,
    shape: &PairShape,
    o: &Host,
    n: &Host,
    clusters: [&Cluster; 2],
) -> RiskKey {
    let networks = shape
        .values
        .iter()
        .enumerate()
        .map(|(k, (slot, _))| {
            let cluster = clusters[usize::from(k >= shape.old_values)];
            match slot {
                Slot::Ip(ip) => cluster
                    .machine_networks
                    .iter()
                    .position(|m| m.value.contains(ip)),
                Slot::Mac(_) => None,
            }
        })
        .collect();
    let uplink = |h: &Host| h.br_ex_uplink.as_ref().map(|u| u.value.clone());
    RiskKey {
        group,
        networks,
        pxe: [pxe_interface(clusters[0], o), pxe_interface(clusters[1], n)],
        uplink: [uplink(o), uplink(n)],
    }
}

/// Per NEW host, its change's items and reasons when they were worked out
/// here, or are its subgroup's: hosts that took one diff and whose
/// [`RiskKey`]s are equal. Each subgroup's first host is classified as
/// every host is, and the others take its outcome only where it names no
/// address or MAC and the second host, the last and every 64th, also
/// classified, got it too. The rest are left to the caller.
pub(crate) fn risks(
    pairs: &[(Option<&Host>, &Host)],
    found: &Diffs,
    clusters: [&Cluster; 2],
    classify: &(dyn Fn(&Host, &Host, &Diff) -> Classified + Sync),
) -> Risks {
    let keys: Vec<Option<RiskKey>> = (0..pairs.len())
        .into_par_iter()
        .map(|i| {
            let shape = found.shapes[i].as_ref()?;
            Some(risk_key(
                found.group[i]?,
                shape,
                pairs[i].0?,
                pairs[i].1,
                clusters,
            ))
        })
        .collect();
    let subgroups = groups_of(keys.iter().map(Option::as_ref));
    let classify_at = |i: usize| {
        let (o, n) = pairs[i];
        let diff = found.diffs[i]
            .as_ref()
            .expect("a host of a group has its diff");
        classify(o.expect("a host of a group has its OLD"), n, diff)
    };
    // The outcome names networks (`carries the machine network
    // 10.1.0.0/16`), never a host's own address or MAC.
    let values = |i: usize| found.shapes[i].as_ref().map_or(&[][..], |s| &s.values[..]);
    let (out, agreeing, count) = lend_per_group(
        pairs.len(),
        &subgroups,
        classify_at,
        |first, i, own| {
            let named = named_values(&format!("{first:?}"));
            own == first && !values(i).iter().any(|(v, _)| named.contains(v))
        },
        |first, _| first.clone(),
    );
    let mut subgroup = vec![None; pairs.len()];
    for (g, m) in agreeing.iter().enumerate() {
        m.iter().for_each(|&i| subgroup[i] = Some(g));
    }
    Risks {
        classified: out,
        subgroup,
        shared: count,
    }
}

/// What [`risks`] found.
pub(crate) struct Risks {
    /// Per NEW host, its change's items and reasons, where told here.
    pub classified: Vec<Option<Classified>>,
    /// Per host, the subgroup whose risk it has: hosts with one number
    /// have one diff and one outcome.
    pub subgroup: Vec<Option<usize>>,
    /// How many hosts took their subgroup's outcome.
    pub shared: usize,
}

/// Whether the first host's diff may stand for its group's: it holds no
/// address or MAC, and every sampled host whose values are alike got it
/// too (at least one did).
fn group_agrees<'a>(
    members: &[usize],
    first: &Diff,
    compared: &[Option<Diff>],
    values: &impl Fn(usize) -> &'a [(Slot, String)],
) -> bool {
    let text = serde_json::to_string(first).expect("a diff serialises");
    if holds_value(&text) {
        return false;
    }
    let mut checked = 0;
    let agree = members
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(k, _)| sampled(k, members.len()))
        .filter(|&(_, &i)| alike(values(members[0]), values(i)))
        .all(|(_, &i)| {
            checked += 1;
            compared[i].as_ref() == Some(first)
        });
    agree && checked > 0
}

/// The addresses and MACs a text names.
fn named_values(text: &str) -> Vec<Slot> {
    let mut ignored = std::collections::hash_map::DefaultHasher::new();
    values_of(text, &mut ignored)
        .into_iter()
        .map(|(slot, _)| slot)
        .collect()
}

/// The hosts (by index) of each key that at least [`MIN_GROUP`] hosts
/// have, in their order.
pub(crate) fn groups_of<K: Hash + Eq>(keys: impl Iterator<Item = Option<K>>) -> Vec<Vec<usize>> {
    let mut groups: HashMap<K, Vec<usize>> = HashMap::new();
    for (i, key) in keys.enumerate() {
        if let Some(key) = key {
            groups.entry(key).or_default().push(i);
        }
    }
    groups
        .into_values()
        .filter(|m| m.len() >= MIN_GROUP)
        .collect()
}

/// The hosts of `groups` that are worked out themselves (each group's
/// first and its sample).
fn sample_of(groups: &[Vec<usize>]) -> Vec<usize> {
    groups
        .iter()
        .flat_map(|m| {
            m.iter()
                .enumerate()
                .filter(|&(k, _)| sampled(k, m.len()))
                .map(|(_, &i)| i)
        })
        .collect()
}

/// Each group's first host and its sample worked out (`work`); the other
/// hosts of each group whose sample all `fits(first's, host, host's)`
/// given the first's (`lend(first's, host)`), the rest left `None`. With
/// the groups lent and how many hosts were.
pub(crate) fn lend_per_group<T: Send + Sync>(
    hosts: usize,
    groups: &[Vec<usize>],
    work: impl Fn(usize) -> T + Sync,
    fits: impl Fn(&T, usize, &T) -> bool + Sync,
    lend: impl Fn(&T, usize) -> T + Sync,
) -> (Vec<Option<T>>, Vec<&Vec<usize>>, usize) {
    let worked: Vec<(usize, T)> = sample_of(groups)
        .into_par_iter()
        .map(|i| (i, work(i)))
        .collect();
    let mut out: Vec<Option<T>> = (0..hosts).map(|_| None).collect();
    for (i, t) in worked {
        out[i] = Some(t);
    }
    let first = |m: &[usize]| out[m[0]].as_ref().expect("a first host is worked out");
    let lent_groups: Vec<&Vec<usize>> = groups
        .par_iter()
        .filter(|m| {
            m.iter()
                .enumerate()
                .filter(|&(k, _)| sampled(k, m.len()))
                .all(|(_, &i)| out[i].as_ref().is_some_and(|own| fits(first(m), i, own)))
        })
        .collect();
    let lent: Vec<(usize, T)> = lent_groups
        .par_iter()
        .flat_map_iter(|m| {
            m.iter()
                .filter(|&&i| out[i].is_none())
                .map(|&i| (i, lend(first(m), i)))
                .collect::<Vec<_>>()
        })
        .collect();
    let count = lent.len();
    for (i, t) in lent {
        out[i] = Some(t);
    }
    (out, lent_groups, count)
}

/// Whether the `k`-th host of a group of `len` is compared host by host.
fn sampled(k: usize, len: usize) -> bool {
    k <= 1 || k == len - 1 || k.is_multiple_of(SAMPLE_EVERY)
}

#[cfg(test)]
mod tests;

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

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::Hasher;

use rayon::prelude::*;

use nodenet_check::shapes::node_values;
use nodenet_check::shapes::text::{alike, holds_value, Both, Slot};
use nodenet_import::diff::Diff;
use nodenet_model::Host;

/// Groups smaller than this are compared host by host.
const MIN_GROUP: usize = 4;
/// Every this many hosts of a group, one is compared as well.
const SAMPLE_EVERY: usize = 64;

/// A host's OLD and NEW states, blanked and hashed, and their values.
struct PairShape {
    hash: (u64, u64),
    values: Vec<(Slot, String)>,
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
    // Where OLD ends: no state of one pair hashes as another's split
    // elsewhere.
    h.write_u8(0xff);
    values.extend(node_values(new, &mut h)?);
    Some(PairShape {
        hash: h.pair(),
        values,
    })
}

/// Per NEW host (`pairs[i]`, with its OLD host when it has one), its
/// network's diff when it was compared here or shares its group's, and
/// how many hosts shared one. `compare` is the host-by-host comparison
/// (`None`: no change, or a state it refuses; those hosts are compared
/// again, and refused, by the caller).
pub(crate) fn diffs(
    pairs: &[(Option<&Host>, &Host)],
    compare: &(dyn Fn(&Host, &Host) -> Option<Diff> + Sync),
) -> (Vec<Option<Diff>>, usize) {
    let keys = (RandomState::new(), RandomState::new());
    let shapes: Vec<Option<PairShape>> = pairs
        .par_iter()
        .map(|(o, n)| pair_shape((*o)?, n, &keys))
        .collect();
    let mut groups: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    for (i, shape) in shapes.iter().enumerate() {
        if let Some(shape) = shape {
            groups.entry(shape.hash).or_default().push(i);
        }
    }
    let groups: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|m| m.len() >= MIN_GROUP)
        .collect();
    // Each group's first host and its sample, compared as before.
    let to_compare: Vec<usize> = groups
        .iter()
        .flat_map(|m| {
            m.iter()
                .enumerate()
                .filter(|&(k, _)| sampled(k, m.len()))
                .map(|(_, &i)| i)
        })
        .collect();
    let compared: Vec<(usize, Option<Diff>)> = to_compare
        .into_par_iter()
        .map(|i| (i, pairs[i].0.and_then(|o| compare(o, pairs[i].1))))
        .collect();
    let mut out: Vec<Option<Diff>> = (0..pairs.len()).map(|_| None).collect();
    for (i, diff) in compared {
        out[i] = diff;
    }
    let values = |i: usize| shapes[i].as_ref().map_or(&[][..], |s| &s.values[..]);
    let shared: Vec<(usize, Diff)> = groups
        .iter()
        .filter_map(|m| Some((m, out[m[0]].as_ref()?)))
        .filter(|(m, first)| group_agrees(m, first, &out, &values))
        .flat_map(|(m, first)| {
            m.iter()
                .filter(|&&i| out[i].is_none() && alike(values(m[0]), values(i)))
                .map(|&i| (i, first.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let count = shared.len();
    for (i, diff) in shared {
        out[i] = Some(diff);
    }
    (out, count)
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

/// Whether the `k`-th host of a group of `len` is compared host by host.
fn sampled(k: usize, len: usize) -> bool {
    k <= 1 || k == len - 1 || k.is_multiple_of(SAMPLE_EVERY)
}

#[cfg(test)]
mod tests;

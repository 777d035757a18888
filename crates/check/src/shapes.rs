//! nmstate once per shape, not once per host.
//!
//! Hosts made from one template differ only in their addresses, and
//! nmstate's `gen_conf` is about half of a check's CPU: a 10,000-host
//! fleet would run it 10,000 times on what is one state with other
//! numbers. Hosts are grouped by shape — their state with the address at
//! every address position (an interface's `ip`, a route's
//! `next-hop-address`, a DNS `server`) blanked to its family and every
//! `mac-address` blanked, compared by a 128-bit keyed hash — nmstate
//! judges the first host of each shape, and the others get its keyfiles
//! with their own addresses (and MACs, in the letter case nmstate wrote
//! the first host's in) where the first host's stood.
//!
//! This is done only where it gives nmstate's own bytes:
//! - every address at an address position is written as nmstate writes it
//!   back (canonical) and is ordinary (not unspecified, loopback,
//!   multicast, link-local, broadcast or IPv4-in-IPv6), so none takes a
//!   special path in nmstate;
//! - a host's addresses compare (as numbers and as text) and repeat among
//!   themselves exactly as the first host's do, so whatever nmstate sorts
//!   or merges comes out in the same order;
//! - the first host was accepted without a warning, and each of its
//!   addresses stands in its keyfiles as a whole token;
//! - nmstate itself also judges a sample of every shape (the second host,
//!   the last, every 64th) and must give exactly the substituted bytes;
//!   a shape that fails any of this is judged host by host.

use std::borrow::Cow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use rayon::prelude::*;

use nodenet_model::yaml::{Node, Value};

use crate::nmstate_bridge::{judge_cached, Judged, Keyfile};

pub mod text;

use text::{alike, mac, ordinary, Both, Slot, Template};

/// Shapes smaller than this are judged host by host.
const MIN_SHAPE: usize = 4;
/// Every this many hosts of a shape, one is judged by nmstate as well.
const SAMPLE_EVERY: usize = 64;

/// What [`judge_fleet`] found for a fleet.
pub struct Fleet {
    /// nmstate's verdict per host (`None`: no network).
    pub judged: Vec<Option<Judged>>,
    /// Per host, its shape as people see it: hosts whose states differ
    /// only in their addresses and MACs (the values this module blanks)
    /// share one, whether or not their keyfiles could be made from one
    /// another. Numbered from 0 in the order of each shape's first host;
    /// `None` without a network.
    pub shapes: Vec<Option<usize>>,
}

impl Fleet {
    /// The verdicts of consecutive runs of hosts (`lengths`, one per
    /// cluster judged together), each run's shapes numbered from 0 in
    /// the order of its shapes' first hosts, as if judged alone.
    pub fn split(self, lengths: impl Iterator<Item = usize>) -> Vec<Fleet> {
        let mut judged = self.judged.into_iter();
        let mut shapes = self.shapes.into_iter();
        lengths
            .map(|n| {
                let mut numbers: HashMap<usize, usize> = HashMap::new();
                let shapes = shapes
                    .by_ref()
                    .take(n)
                    .map(|s| {
                        s.map(|s| {
                            let next = numbers.len();
                            *numbers.entry(s).or_insert(next)
                        })
                    })
                    .collect();
                Fleet {
                    judged: judged.by_ref().take(n).collect(),
                    shapes,
                }
            })
            .collect()
    }
}

/// The state nmstate judges for one host: most hosts' own, borrowed.
pub type StateOf<'a> = dyn Fn(usize) -> Option<Cow<'a, Node>> + Sync + 'a;

/// nmstate's verdict for each of `n` hosts; `state(i)` is the i-th host's
/// state (`None`: it has no network). Shapes are taken from the states as
/// loaded; only the hosts nmstate judges have their state made JSON (for
/// 10,000 hosts those JSONs were most of a check's shapes).
pub fn judge_fleet(n: usize, state: &StateOf<'_>) -> Fleet {
    judge_fleet_counted(n, state).0
}

/// [`judge_fleet`], and how many verdicts came from a shape.
fn judge_fleet_counted(n: usize, state: &StateOf<'_>) -> (Fleet, usize) {
    let keys = (RandomState::new(), RandomState::new());
    // Per host: whether it has a state, its shape if keyfiles can be made
    // from it, and its shape as people see it.
    type PerHost = (bool, Option<Shape>, Option<(u64, u64)>);
    let shapes: Vec<PerHost> = (0..n)
        .into_par_iter()
        .map(|i| match state(i) {
            None => (false, None, None),
            Some(s) => {
                let (shape, seen) = Shape::and_seen(&s, &keys);
                (true, shape, Some(seen))
            }
        })
        .collect();
    let mut numbers: HashMap<(u64, u64), usize> = HashMap::new();
    let seen: Vec<Option<usize>> = shapes
        .iter()
        .map(|(_, _, key)| {
            let next = numbers.len();
            key.map(|k| *numbers.entry(k).or_insert(next))
        })
        .collect();
    let shapes: Vec<(bool, Option<Shape>)> = shapes.into_iter().map(|(a, b, _)| (a, b)).collect();
    let mut groups: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    for (i, (_, shape)) in shapes.iter().enumerate() {
        if let Some(shape) = shape {
            groups.entry(shape.hash).or_default().push(i);
        }
    }
    // Hosts nmstate judges itself: every host outside a large shape, and
    // each shape's first host and its sample.
    let mut by_nmstate: Vec<bool> = shapes.iter().map(|(_, s)| s.is_none()).collect();
    let mut first_of = vec![None; n];
    let mut groups: Vec<Vec<usize>> = groups.into_values().collect();
    groups.sort_unstable();
    for members in &groups {
        if members.len() < MIN_SHAPE {
            members.iter().for_each(|&i| by_nmstate[i] = true);
            continue;
        }
        for (k, &i) in members.iter().enumerate() {
            first_of[i] = Some(members[0]);
            if k <= 1 || k == members.len() - 1 || k % SAMPLE_EVERY == 0 {
                by_nmstate[i] = true;
            }
        }
    }
    let mut judged: Vec<Option<Judged>> = (0..n)
        .into_par_iter()
        .map(|i| {
            if by_nmstate[i] && shapes[i].0 {
                state(i).map(|s| judge_cached(&s.to_json()))
            } else {
                None
            }
        })
        .collect();

    // A shape is used only when its first host's keyfiles, refilled with
    // each sampled host's addresses, are what nmstate gave that host.
    let mut templates: HashMap<usize, Vec<KeyfileTemplate>> = HashMap::new();
    for members in groups.iter().filter(|m| m.len() >= MIN_SHAPE) {
        let first = members[0];
        let Some(shape) = &shapes[first].1 else {
            continue;
        };
        let Some(template) = judged[first]
            .as_ref()
            .and_then(|j| KeyfileTemplate::of(j, shape))
        else {
            continue;
        };
        // Sampled hosts the shape would not take (other order, say) were
        // judged by nmstate anyway and prove nothing.
        let mut checked = 0;
        let sample_agrees = members[1..]
            .iter()
            .filter(|&&i| by_nmstate[i])
            .filter_map(|&i| Some((shapes[i].1.as_ref()?, judged[i].as_ref()?)))
            .filter(|(other, _)| shape.admits(other))
            .all(|(other, verdict)| {
                checked += 1;
                verdict.logs.is_empty()
                    && verdict
                        .result
                        .as_ref()
                        .is_ok_and(|keyfiles| fill(&template, other) == *keyfiles)
            });
        if sample_agrees && checked > 0 {
            templates.insert(first, template);
        }
    }

    let filled: Vec<(Option<Judged>, bool)> = (0..n)
        .into_par_iter()
        .map(|i| {
            let (Some(shape), Some(first), false) = (&shapes[i].1, first_of[i], by_nmstate[i])
            else {
                return (None, false);
            };
            let template = templates.get(&first).filter(|_| {
                shapes[first]
                    .1
                    .as_ref()
                    .is_some_and(|first| first.admits(shape))
            });
            match template {
                Some(template) => (
                    Some(Judged {
                        result: Ok(fill(template, shape)),
                        parsed: true,
                        logs: Vec::new(),
                    }),
                    true,
                ),
                None => (state(i).map(|s| judge_cached(&s.to_json())), false),
            }
        })
        .collect();
    let mut from_shape = 0;
    for (slot, (f, by_shape)) in judged.iter_mut().zip(filled) {
        if f.is_some() {
            *slot = f;
            from_shape += usize::from(by_shape);
        }
    }
    (
        Fleet {
            judged,
            shapes: seen,
        },
        from_shape,
    )
}

/// A state's addresses and MACs (at their positions, in document order)
/// and a 128-bit hash of everything else: hosts with equal hashes are one
/// shape.
struct Shape {
    hash: (u64, u64),
    addresses: Vec<(Slot, String)>,
}

/// Where a state holds an address: the value of these keys...
const ADDRESS_KEYS: [&str; 2] = ["ip", "next-hop-address"];
/// ...and the items of these lists.
const ADDRESS_LISTS: [&str; 1] = ["server"];
/// Where it holds a MAC.
const MAC_KEYS: [&str; 1] = ["mac-address"];

#[derive(Clone, Copy, PartialEq)]
enum At {
    Other,
    Address,
    AddressList,
    Mac,
}

impl At {
    /// Where the items of a list at this position stand.
    fn items(self) -> At {
        if self == At::AddressList {
            At::Address
        } else {
            At::Other
        }
    }
}

/// An address at an address position: hashed as its family, collected;
/// `None` when it is not canonical and ordinary.
fn address(s: &str, h: &mut impl Hasher, out: &mut Vec<(Slot, String)>) -> Option<()> {
    let ip = ordinary(s)?;
    (0u8, ip.is_ipv4()).hash(h);
    out.push((Slot::Ip(ip), s.to_string()));
    Some(())
}

/// A MAC at a MAC position: blanked, and collected with `out` (`None`
/// then when it is not one in one letter case).
fn mac_address(s: &str, h: &mut impl Hasher, out: Option<&mut Vec<(Slot, String)>>) -> Option<()> {
    7u8.hash(h);
    if let Some(out) = out {
        out.push((Slot::Mac(mac(s)?), s.to_string()));
    }
    Some(())
}

fn at(key: &str) -> At {
    if ADDRESS_KEYS.contains(&key) {
        At::Address
    } else if ADDRESS_LISTS.contains(&key) {
        At::AddressList
    } else if MAC_KEYS.contains(&key) {
        At::Mac
    } else {
        At::Other
    }
}

impl Shape {
    /// The state's shape, `None` when it has no address, or one that is
    /// not canonical and ordinary; and its shape as people see it (one
    /// walk for both where the first is found: the blanks hash alike).
    fn and_seen(state: &Node, keys: &(RandomState, RandomState)) -> (Option<Shape>, (u64, u64)) {
        let mut h = Both::new(keys);
        let mut addresses = Vec::new();
        if walk_node(state, At::Other, &mut h, Some(&mut addresses)).is_none() {
            return (None, seen_shape(state, keys));
        }
        let hash = h.pair();
        let shape = (!addresses.is_empty()).then_some(Shape { hash, addresses });
        (shape, hash)
    }

    /// Whether a host of this shape with `other`'s addresses has them
    /// ordered and repeated alike.
    fn admits(&self, other: &Shape) -> bool {
        self.hash == other.hash && alike(&self.addresses, &other.addresses)
    }
}

/// The 128-bit hash of a state with every value at an address or MAC
/// position blanked, whatever those values are: hosts that differ only
/// there are one shape to a person reading them.
fn seen_shape(state: &Node, keys: &(RandomState, RandomState)) -> (u64, u64) {
    let mut h = Both::new(keys);
    // Without `out`, nothing makes the walk give up.
    let _ = walk_node(state, At::Other, &mut h, None);
    h.pair()
}

/// A state as loaded (no JSON made of it): a 128-bit-worth hash of it
/// with its addresses and MACs blanked, fed into `h`, and those values in
/// document order; `None` when one of them is not canonical and ordinary
/// (an address) or not in one letter case (a MAC). The positions are
/// [`walk`]'s: hosts whose states give equal hashes and `alike` values
/// are one shape, and nmstate treats their values alike.
pub fn node_values(state: &Node, h: &mut impl Hasher) -> Option<Vec<(Slot, String)>> {
    let mut out = Vec::new();
    walk_node(state, At::Other, h, Some(&mut out))?;
    Some(out)
}

/// Hashes `v` with the values at address and MAC positions blanked.
/// With `out`, those values are collected and must be ones keyfiles can
/// be refilled with (`None` otherwise); without, any value is blanked (an
/// address to its family, as an ordinary one is with `out`).
fn walk_node(
    v: &Node,
    at_: At,
    h: &mut impl Hasher,
    mut out: Option<&mut Vec<(Slot, String)>>,
) -> Option<()> {
    match &v.value {
        Value::Str(s) if at_ == At::Address => match out {
            Some(out) => address(s, h, out)?,
            // As an address's family: IPv6 is the one written with `:`.
            None => (0u8, !s.contains(':')).hash(h),
        },
        Value::Str(s) if at_ == At::Mac => mac_address(s, h, out)?,
        Value::Null => 1u8.hash(h),
        Value::Bool(b) => (2u8, b).hash(h),
        Value::Int(i) => (3u8, i).hash(h),
        Value::Float(f) => (8u8, f.to_bits()).hash(h),
        Value::Str(s) => (4u8, s).hash(h),
        Value::Seq(items) => {
            (5u8, items.len()).hash(h);
            for item in items {
                walk_node(item, at_.items(), h, out.as_deref_mut())?;
            }
        }
        Value::Map(entries) => {
            (6u8, entries.len()).hash(h);
            for (k, x) in entries {
                // A key as `to_json` names it (no copy for a string).
                let key = match &k.value {
                    Value::Str(s) => std::borrow::Cow::Borrowed(s.as_str()),
                    _ => std::borrow::Cow::Owned(k.scalar_text().unwrap_or_default()),
                };
                key.hash(h);
                walk_node(x, at(&key), h, out.as_deref_mut())?;
            }
        }
    }
    Some(())
}

/// A keyfile with its addresses cut out.
struct KeyfileTemplate {
    name: String,
    template: Template,
}

impl KeyfileTemplate {
    /// The first host's keyfiles as templates; `None` when nmstate warned
    /// or refused, or an address is not in them as a whole token.
    fn of(judged: &Judged, shape: &Shape) -> Option<Vec<KeyfileTemplate>> {
        let Judged {
            result: Ok(keyfiles),
            logs,
            ..
        } = judged
        else {
            return None;
        };
        if !logs.is_empty() {
            return None;
        }
        let mut seen = vec![false; shape.addresses.len()];
        let templates: Vec<KeyfileTemplate> = keyfiles
            .iter()
            .map(|(name, content)| KeyfileTemplate {
                name: name.clone(),
                template: Template::cut(content, &shape.addresses, &mut seen),
            })
            .collect();
        // An address missing from the text may have been written in
        // another form; no guessing.
        seen.iter().all(|&s| s).then_some(templates)
    }
}

fn fill(templates: &[KeyfileTemplate], shape: &Shape) -> Vec<Keyfile> {
    templates
        .iter()
        .map(|t| (t.name.clone(), t.template.fill(&shape.addresses)))
        .collect()
}

#[cfg(test)]
mod tests;

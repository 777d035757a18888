//! Text made once per shape: a text with the values that differ from
//! host to host (addresses, MACs) cut out, filled in again with another
//! host's. nmstate's keyfiles are made so (`shapes.rs`), and so are the
//! documents render writes per host (`nodenet_render::shaped`).

use std::cmp::Ordering;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::net::IpAddr;

/// Two independently keyed hashers of the same bytes, gathered first and
/// hashed once each at the end: a state's walk writes its keys and values
/// a few bytes at a time, and each write through both hashers cost twice
/// what hashing the gathered bytes does.
pub struct Both<'k> {
    keys: &'k (RandomState, RandomState),
    bytes: Vec<u8>,
}

impl<'k> Both<'k> {
    /// A pair of hashers with the keys of `keys` (one pair per fleet: the
    /// hashes of one run compare, no others).
    pub fn new(keys: &'k (RandomState, RandomState)) -> Both<'k> {
        Both {
            keys,
            bytes: Vec::with_capacity(1024),
        }
    }

    /// Both hashes: 128 bits, where one could collide in a large fleet.
    pub fn pair(&self) -> (u64, u64) {
        (
            self.keys.0.hash_one(&self.bytes[..]),
            self.keys.1.hash_one(&self.bytes[..]),
        )
    }
}

impl Hasher for Both<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        let (a, b) = self.pair();
        a ^ b
    }
}

/// A value that differs from host to host of one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    Ip(IpAddr),
    Mac(u64),
}

/// A host's values, in the order they stand in its state, each with its
/// text as written.
pub type Values = Vec<(Slot, String)>;

/// The address `s` names, when written as nmstate writes it back and not
/// one nmstate treats specially (unspecified, loopback, multicast,
/// link-local, broadcast, IPv4-in-IPv6).
pub fn ordinary(s: &str) -> Option<IpAddr> {
    let ip: IpAddr = s.parse().ok()?;
    // Written back on the stack (every address of every host comes here):
    // the longest text an address is written as has 45 bytes.
    let mut back = [0u8; 45];
    let mut free = &mut back[..];
    std::io::Write::write_fmt(&mut free, format_args!("{ip}")).ok()?;
    let written = 45 - free.len();
    if &back[..written] != s.as_bytes() {
        return None;
    }
    let special = match ip {
        IpAddr::V4(v4) => {
            v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_link_local()
        }
        IpAddr::V6(v6) => {
            v6.segments()[..6].iter().all(|&s| s == 0)
                || v6.to_ipv4_mapped().is_some()
                || v6.is_multicast()
                || v6.is_unicast_link_local()
        }
    };
    (!special).then_some(ip)
}

/// Six colon-separated hex octets, all in one letter case (nmstate
/// writes them back in its own case; a mixed-case text is left to it).
pub fn mac(s: &str) -> Option<u64> {
    let lower = s.bytes().any(|b| b.is_ascii_lowercase());
    let upper = s.bytes().any(|b| b.is_ascii_uppercase());
    if s.len() != 17 || lower && upper {
        return None;
    }
    let mut v = 0u64;
    for (i, part) in s.split(':').enumerate() {
        if i > 5 || part.len() != 2 {
            return None;
        }
        v = v << 8 | u64::from(u8::from_str_radix(part, 16).ok()?);
    }
    Some(v)
}

/// Same order and the same repeats among `a` as among `b`, comparing
/// values both as numbers and as text: whatever sorts, merges or
/// deduplicates them does the same to both.
pub fn alike(a: &[(Slot, String)], b: &[(Slot, String)]) -> bool {
    let order = |x: &(Slot, String), y: &(Slot, String)| -> (Ordering, Ordering) {
        (x.0.cmp(&y.0), x.1.cmp(&y.1))
    };
    a.len() == b.len()
        && (0..a.len())
            .all(|i| (i + 1..a.len()).all(|j| order(&a[i], &a[j]) == order(&b[i], &b[j])))
}

/// Whether `b` may be part of a token an address or MAC is written with.
fn token_byte(b: u8) -> bool {
    b.is_ascii_hexdigit() || b == b'.' || b == b':'
}

/// The whole tokens of `text` (runs of hex digits, `.` and `:`), with
/// where each starts and ends.
fn tokens(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !token_byte(bytes[i]) {
            i += 1;
        }
        if i == bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && token_byte(bytes[i]) {
            i += 1;
        }
        Some((start, i))
    })
}

/// Whether `text` holds a whole token that is an address (in any form)
/// or a MAC: a text made from a host's state without one is the same for
/// every host of its shape.
pub fn holds_value(text: &str) -> bool {
    tokens(text).any(|(start, end)| {
        let token = &text[start..end];
        mac(&token.to_ascii_lowercase()).is_some() || token.parse::<IpAddr>().is_ok()
    })
}

/// The values a text holds (every whole token that is an ordinary
/// address, or a MAC), hashing into `h` the text with each of them
/// blanked to its kind: texts that hash alike differ in those values
/// alone.
pub fn values_of(text: &str, h: &mut impl Hasher) -> Values {
    let mut values = Values::new();
    let mut from = 0;
    for (start, end) in tokens(text) {
        let token = &text[start..end];
        let slot = match mac(token) {
            Some(m) => Slot::Mac(m),
            None => match ordinary(token) {
                Some(ip) => Slot::Ip(ip),
                None => continue,
            },
        };
        text[from..start].hash(h);
        match slot {
            Slot::Ip(ip) => (1u8, ip.is_ipv4()).hash(h),
            Slot::Mac(_) => 2u8.hash(h),
        }
        values.push((slot, token.to_string()));
        from = end;
    }
    text[from..].hash(h);
    values
}

/// A text with values cut out.
#[derive(Clone, Debug)]
pub struct Template {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    /// The i-th value of the shape, in this letter case.
    Value(usize, Case),
}

/// How a value stands in a text against how the state wrote it.
#[derive(Clone, Copy, Debug)]
enum Case {
    AsWritten,
    Upper,
    Lower,
}

impl Case {
    /// How `token` writes `written`, if it is that value at all: nmstate
    /// writes a MAC in upper case whatever case it was given in, so a
    /// token that is the upper-case form stands for that (even when the
    /// first host wrote it so, or with digits only).
    fn of(token: &str, written: &str) -> Option<Case> {
        if token == written.to_ascii_uppercase() {
            Some(Case::Upper)
        } else if token == written.to_ascii_lowercase() {
            Some(Case::Lower)
        } else if token == written {
            Some(Case::AsWritten)
        } else {
            None
        }
    }

    fn apply(self, s: &str, out: &mut String) {
        match self {
            Case::AsWritten => out.push_str(s),
            Case::Upper => out.push_str(&s.to_ascii_uppercase()),
            Case::Lower => out.push_str(&s.to_ascii_lowercase()),
        }
    }
}

impl Template {
    /// Splits `content` at every whole token that is one of `values`
    /// (addresses as written, MACs in either letter case), marking in
    /// `seen` every value (and its repeats) found.
    pub fn cut(content: &str, values: &[(Slot, String)], seen: &mut [bool]) -> Template {
        let mut pieces = Vec::new();
        let mut text_start = 0;
        for (start, end) in tokens(content) {
            let token = &content[start..end];
            let found = values
                .iter()
                .enumerate()
                .find_map(|(k, (slot, s))| match slot {
                    Slot::Ip(_) => (s == token).then_some((k, Case::AsWritten)),
                    Slot::Mac(_) => Case::of(token, s).map(|case| (k, case)),
                });
            let Some((k, case)) = found else { continue };
            for (found, (_, s)) in seen.iter_mut().zip(values) {
                *found |= s.eq_ignore_ascii_case(token);
            }
            if text_start < start {
                pieces.push(Piece::Text(content[text_start..start].to_string()));
            }
            pieces.push(Piece::Value(k, case));
            text_start = end;
        }
        if text_start < content.len() {
            pieces.push(Piece::Text(content[text_start..].to_string()));
        }
        Template { pieces }
    }

    /// The text with `values` where the first host's stood.
    pub fn fill(&self, values: &[(Slot, String)]) -> String {
        let mut out = String::with_capacity(
            self.pieces
                .iter()
                .map(|p| match p {
                    Piece::Text(s) => s.len(),
                    Piece::Value(..) => 40,
                })
                .sum(),
        );
        for piece in &self.pieces {
            match piece {
                Piece::Text(s) => out.push_str(s),
                Piece::Value(k, case) => case.apply(&values[*k].1, &mut out),
            }
        }
        out
    }
}

//! NetworkManager's value syntaxes as its keyfile reader accepts them
//! (libnm-core's nm-keyfile.c): addresses and routes in every form it
//! ever wrote, and MAC addresses as hex or as old decimal byte lists.

use std::net::IpAddr;

use crate::keyfile::Entry;

/// How an `address…`/`route…` key sorts and whether it is one at all
/// (`singular`: `address` or `route`): `address`, `address0`, `address7`,
/// `addresses12` are; `address01`, `address_x` are not. NetworkManager
/// reads the items ordered by number (none before 0), the singular
/// spelling before the plural one.
pub fn list_key(key: &str, singular: &str) -> Option<(i64, u8)> {
    let plural = match singular {
        "address" => "addresses",
        _ => "routes",
    };
    [(singular, 0u8), (plural, 1u8)]
        .into_iter()
        .find_map(|(base, kind)| {
            let rest = key.strip_prefix(base)?;
            let idx = match rest {
                "" => -1,
                "0" => 0,
                r if r.starts_with(|c: char| ('1'..='9').contains(&c))
                    && r.chars().all(|c| c.is_ascii_digit()) =>
                {
                    r.parse::<i32>().ok()? as i64
                }
                _ => return None,
            };
            Some((idx, kind))
        })
}

/// One address or route as NetworkManager reads it, with what it said
/// while reading (a missing or invalid prefix length it defaulted).
#[derive(Debug, Clone, PartialEq)]
pub struct IpItem {
    pub addr: IpAddr,
    pub prefix: u8,
    /// As written (an address's gateway is checked by the caller:
    /// NetworkManager rejects the profile for an invalid one).
    pub gateway: Option<String>,
    pub metric: Option<u32>,
    pub notes: Vec<String>,
}

const SEPARATORS: [char; 3] = ['/', ';', ','];

fn ip_char(c: char) -> bool {
    c.is_ascii_hexdigit() || matches!(c, ':' | '.' | '%')
}

fn digit(c: char) -> bool {
    c.is_ascii_digit()
}

/// nm-keyfile.c's `read_field`: the next field of `class` characters up
/// to a separator. `Ok(None)` when the input is used up; `Err(c)` (input
/// left as it was) at a character of neither kind.
fn read_field<'a>(
    cur: &mut Option<&'a str>,
    class: fn(char) -> bool,
) -> Result<Option<&'a str>, char> {
    let Some(s) = *cur else { return Ok(None) };
    if s.is_empty() {
        return Ok(None);
    }
    let end = s.find(|c: char| !class(c)).unwrap_or(s.len());
    if end == s.len() {
        *cur = None;
        return Ok(Some(s));
    }
    let c = s[end..].chars().next().expect("end is inside s");
    if SEPARATORS.contains(&c) {
        *cur = Some(&s[end + 1..]);
        Ok(Some(&s[..end]))
    } else {
        Err(c)
    }
}

fn parse_addr(s: &str, v6: bool) -> Option<IpAddr> {
    s.parse::<IpAddr>().ok().filter(|a| a.is_ipv6() == v6)
}

/// Reads `ADDR[/PLEN][,GATEWAY]` (address) or
/// `DEST[/PLEN][,NEXT-HOP[,METRIC]]` (route), where `/`, `;` and `,` are
/// interchangeable and a missing prefix length defaults to 24 (IPv4),
/// 64 (IPv6 address) or 128 (IPv6 route). `Err` says why NetworkManager
/// ignores the item.
pub fn read_ip_item(value: &str, v6: bool, route: bool) -> Result<IpItem, String> {
    let what = if route { "route" } else { "address" };
    let mut cur = Some(value);
    let addr = read_field(&mut cur, ip_char)
        .map_err(|c| format!("unexpected character `{c}` in the {what}"))?
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("no {what}"))?;
    // A prefix length is optional: a field that is not digits is the
    // gateway.
    let plen = read_field(&mut cur, digit).unwrap_or(None);
    let gateway = read_field(&mut cur, ip_char)
        .map_err(|c| format!("unexpected character `{c}` in the gateway"))?;
    let metric = if route {
        read_field(&mut cur, digit)
            .map_err(|c| format!("unexpected character `{c}` in the metric"))?
    } else {
        None
    };
    if cur.is_some_and(|rest| !rest.is_empty()) {
        return Err("garbage at the end of the value".into());
    }
    let max: u8 = if v6 { 128 } else { 32 };
    let default: u8 = match (route, v6) {
        (false, false) | (true, false) => 24,
        (false, true) => 64,
        (true, true) => 128,
    };
    let mut notes = Vec::new();
    let prefix = match plen {
        None => {
            notes.push(format!("no prefix length: NetworkManager reads /{default}"));
            default
        }
        Some(p) => match p.parse::<u8>().ok().filter(|p| *p <= max) {
            Some(p) => p,
            None => {
                notes.push(format!(
                    "invalid prefix length `{p}`: NetworkManager reads /{default}"
                ));
                default
            }
        },
    };
    let family = if v6 { "IPv6" } else { "IPv4" };
    let addr = parse_addr(addr, v6).ok_or_else(|| format!("`{addr}` is not an {family} {what}"))?;
    let mut gateway = gateway.filter(|g| !g.is_empty()).map(str::to_string);
    let mut metric_value = None;
    if route {
        if let Some(g) = gateway.clone() {
            match parse_addr(&g, v6) {
                Some(a) if a.is_unspecified() => gateway = None,
                Some(_) => {}
                // An old writer put the metric where the next hop goes
                // (`a:b::/64,5`); NetworkManager still reads that.
                None if v6 && metric.is_none() && g.parse::<u32>().is_ok() => {
                    metric_value = g.parse::<u32>().ok();
                    gateway = None;
                }
                None => return Err(format!("next hop `{g}` is not an {family} address")),
            }
        }
        if let Some(m) = metric {
            metric_value = Some(
                m.parse::<u32>()
                    .map_err(|_| format!("metric `{m}` is not a number"))?,
            );
        }
    }
    Ok(IpItem {
        addr,
        prefix,
        gateway,
        metric: metric_value,
        notes,
    })
}

/// A MAC address of `len` bytes as NetworkManager reads it: hex bytes
/// separated by `:` or `-` (one digit is a byte too), or the old list of
/// decimal bytes (`0;17;34;51;68;85;`). Upper-case, `:`-separated.
pub fn read_mac(entry: &Entry, len: usize) -> Option<String> {
    let bytes = hex_mac(&entry.value(), len).or_else(|| {
        let items = entry.items();
        (items.len() == len)
            .then(|| {
                items
                    .iter()
                    .map(|i| i.trim().parse::<u8>().ok())
                    .collect::<Option<Vec<u8>>>()
            })
            .flatten()
    })?;
    Some(
        bytes
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(":"),
    )
}

/// libnm's `nm_utils_hexstr2bin_full` as MACs use it.
fn hex_mac(s: &str, len: usize) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let hex = |i: usize| {
        b.get(i)
            .and_then(|c| (*c as char).to_digit(16))
            .map(|d| d as u8)
    };
    let mut out = Vec::new();
    let mut sep: Option<u8> = None;
    let mut i = 0;
    loop {
        let hi = hex(i)?;
        let next = match hex(i + 1) {
            Some(lo) => {
                out.push(hi << 4 | lo);
                i += 2;
                b.get(i)
            }
            None => {
                out.push(hi);
                i += 1;
                b.get(i)
            }
        };
        let Some(&c) = next else { break };
        if out.len() >= len {
            return None;
        }
        match sep {
            Some(s) if s != c => return None,
            None if c == b':' || c == b'-' => sep = Some(c),
            None => return None,
            _ => {}
        }
        i += 1;
    }
    (out.len() == len).then_some(out)
}

/// GLib's booleans as NetworkManager reads them.
pub fn bool_value(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// A decimal or `0x` hexadecimal integer.
pub fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// An 802.1X certificate or key as the keyfile names it: an absolute
/// path, or a `file://` URI of one. None: an embedded blob (`data:`) or a
/// relative path NetworkManager resolves against the keyfile's directory.
pub fn cert_path(v: &str) -> Option<&str> {
    let path = v.strip_prefix("file://").unwrap_or(v);
    path.starts_with('/').then_some(path)
}

#[cfg(test)]
mod tests;

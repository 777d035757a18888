//! NMState keys nmstate cannot read (nested at the wrong level, nmstate
//! 1's names), every one at its own line. nmstate's parser stops at the
//! first unknown field; nmstate stays the oracle: each field it names is
//! located, taken out, and the state handed back to it until it reads
//! the rest, so every key it would refuse is found, with its own words
//! and where the key belongs.

use nmstate::NetworkState;
use nodenet_model::{Code, Diagnostic, Node, Span, Value};

/// Keys of an interface itself (nmstate 2's `Interface` and the sections
/// of its types): found inside another section, they were indented one
/// level too deep.
const INTERFACE_KEYS: &[&str] = &[
    "name",
    "type",
    "state",
    "description",
    "mtu",
    "min-mtu",
    "max-mtu",
    "mac-address",
    "copy-mac-from",
    "accept-all-mac-addresses",
    "controller",
    "identifier",
    "profile-name",
    "ipv4",
    "ipv6",
    "ethtool",
    "lldp",
    "802.1x",
    "mptcp",
    "wait-ip",
    "dispatch",
    "link-aggregation",
    "bridge",
    "vlan",
    "vxlan",
    "ethernet",
    "infiniband",
    "mac-vlan",
    "mac-vtap",
    "vrf",
    "team",
    "veth",
    "hsr",
    "ipsec",
    "loopback",
    "macsec",
    "patch",
];

/// The sections that make an interface of one type.
const TYPE_SECTIONS: &[(&str, &[&str])] = &[
    ("link-aggregation", &["bond"]),
    ("vlan", &["vlan"]),
    ("bridge", &["linux-bridge", "ovs-bridge"]),
    ("vxlan", &["vxlan"]),
    ("mac-vlan", &["mac-vlan"]),
    ("mac-vtap", &["mac-vtap"]),
    ("vrf", &["vrf"]),
    ("infiniband", &["infiniband"]),
    ("veth", &["veth", "ethernet"]),
];

/// A key nmstate refused, where it is.
#[derive(Debug, Clone)]
pub struct Misplaced {
    pub key: String,
    pub span: Span,
    /// The section it was found in (`ipv6`, `link-aggregation`), or
    /// `interface` for an interface's own level.
    pub within: String,
    /// The interface it belongs to, by name.
    pub interface: Option<String>,
}

/// One key of the state: where it is in the JSON nmstate reads, its
/// section, its siblings.
struct Entry<'a> {
    pointer: String,
    key: &'a Node,
    within: String,
    interface: Option<String>,
    siblings: Vec<String>,
}

fn entries<'a>(
    node: &'a Node,
    pointer: &str,
    within: &str,
    interface: Option<&str>,
    out: &mut Vec<Entry<'a>>,
) {
    match &node.value {
        Value::Map(map) => {
            let siblings: Vec<String> = map.iter().filter_map(|(k, _)| k.scalar_text()).collect();
            for (k, v) in map {
                let Some(name) = k.scalar_text() else {
                    continue;
                };
                let here = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                out.push(Entry {
                    pointer: here.clone(),
                    key: k,
                    within: within.to_string(),
                    interface: interface.map(str::to_string),
                    siblings: siblings.clone(),
                });
                entries(v, &here, &name, interface, out);
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                let here = format!("{pointer}/{i}");
                let (within, iface) = if within == "interfaces" && pointer == "/interfaces" {
                    ("interface", item.get("name").and_then(Node::scalar_text))
                } else {
                    (within, interface.map(str::to_string))
                };
                entries(item, &here, within, iface.as_deref(), out);
            }
        }
        _ => {}
    }
}

/// The field serde names and the fields it expected there.
fn refused_field(msg: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .split_once("expected")
        .map(|(_, list)| {
            list.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Some((field.to_string(), expected))
}

/// Every key nmstate refuses in `network`, given its first complaint
/// (`unknown field ...`): each with nmstate's message, in order.
pub fn unknown_fields(network: &Node, first: &str) -> Vec<(Misplaced, String)> {
    let all = {
        let mut v = Vec::new();
        entries(network, "", "", None, &mut v);
        v
    };
    let mut json = network.to_json();
    let mut found: Vec<(Misplaced, String)> = Vec::new();
    // The sections whose fields nmstate lists: every key it would refuse
    // there, whatever serde meets first (a `missing field` in an address
    // the misplaced `prefix-length` belongs to stops it before).
    for e in &all {
        let Some(known) = section(&e.pointer).and_then(known_fields) else {
            continue;
        };
        let key = e.key.scalar_text().unwrap_or_default();
        if known.contains(&key) {
            continue;
        }
        repair(&mut json, &e.pointer, &e.within);
        let msg = format!(
            "unknown field `{key}`, expected one of {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        found.push((
            Misplaced {
                key,
                span: e.key.span,
                within: e.within.clone(),
                interface: e.interface.clone(),
            },
            msg,
        ));
    }
    let mut msg = if found.is_empty() {
        first.to_string()
    } else {
        match serde_json::from_value::<NetworkState>(json.clone()) {
            Err(e) => e.to_string(),
            Ok(_) => return found,
        }
    };
    // Each round takes one key out; a state has few.
    for _ in 0..32 {
        let Some((field, expected)) = refused_field(&msg) else {
            break;
        };
        let taken = |e: &&Entry| found.iter().any(|(m, _)| m.span == e.key.span);
        let candidates: Vec<&Entry> = all
            .iter()
            .filter(|e| e.key.scalar_text().as_deref() == Some(field.as_str()))
            .filter(|e| !taken(e))
            .collect();
        // Where the other keys are the ones serde expected there.
        let fits = |e: &&&Entry| {
            !expected.is_empty()
                && e.siblings
                    .iter()
                    .all(|s| *s == field || expected.contains(s))
        };
        let Some(entry) = candidates.iter().find(fits).or(candidates.first()) else {
            break;
        };
        repair(&mut json, &entry.pointer, &entry.within);
        found.push((
            Misplaced {
                key: field.clone(),
                span: entry.key.span,
                within: entry.within.clone(),
                interface: entry.interface.clone(),
            },
            strip_location(&msg),
        ));
        match serde_json::from_value::<NetworkState>(json.clone()) {
            Err(e) => msg = e.to_string(),
            Ok(_) => break,
        }
    }
    found
}

/// The section whose fields nmstate lists that a key's pointer is in:
/// `/interfaces/N/<ipv4|ipv6|link-aggregation|vlan>/KEY`, or an address
/// entry `/interfaces/N/<ipv4|ipv6>/address/M/KEY`.
fn section(pointer: &str) -> Option<&'static str> {
    let parts: Vec<&str> = pointer.split('/').skip(1).collect();
    match parts.as_slice() {
        ["interfaces", i, s, _] if i.parse::<usize>().is_ok() => match *s {
            "ipv4" => Some("ipv4"),
            "ipv6" => Some("ipv6"),
            "link-aggregation" => Some("link-aggregation"),
            "vlan" => Some("vlan"),
            _ => None,
        },
        ["interfaces", i, "ipv4" | "ipv6", "address", m, _]
            if i.parse::<usize>().is_ok() && m.parse::<usize>().is_ok() =>
        {
            Some("address")
        }
        _ => None,
    }
}

/// The fields nmstate reads in a section, in its own words: asked of the
/// nmstate crate once, with a field it cannot know.
fn known_fields(section: &str) -> Option<&'static [String]> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static KNOWN: OnceLock<HashMap<&'static str, Vec<String>>> = OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        const PROBE: &str = "__nodenet_probe__";
        let ask = |iface: serde_json::Value| -> Vec<String> {
            let state = serde_json::json!({ "interfaces": [iface] });
            match serde_json::from_value::<NetworkState>(state) {
                Err(e) => refused_field(&e.to_string())
                    .map(|(_, expected)| expected)
                    .unwrap_or_default(),
                Ok(_) => Vec::new(),
            }
        };
        let probe = serde_json::json!({ PROBE: 1 });
        [
            (
                "ipv4",
                serde_json::json!({"name": "p", "type": "ethernet", "ipv4": probe}),
            ),
            (
                "ipv6",
                serde_json::json!({"name": "p", "type": "ethernet", "ipv6": probe}),
            ),
            (
                "link-aggregation",
                serde_json::json!({"name": "p", "type": "bond", "link-aggregation": probe}),
            ),
            (
                "vlan",
                serde_json::json!({"name": "p", "type": "vlan", "vlan": probe}),
            ),
            (
                "address",
                serde_json::json!({"name": "p", "type": "ethernet", "ipv4": {"address": [probe]}}),
            ),
        ]
        .into_iter()
        .map(|(s, iface)| (s, ask(iface)))
        .filter(|(_, fields)| !fields.is_empty())
        .collect()
    });
    known.get(section).map(Vec::as_slice)
}

fn strip_location(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Takes the key at `pointer` out and, where its place is known, puts it
/// there (as the fix would), so that nmstate reads on to the next one
/// rather than stopping at what the key's absence leaves missing.
fn repair(json: &mut serde_json::Value, pointer: &str, within: &str) {
    use serde_json::Value as J;
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = key.replace("~1", "/").replace("~0", "~");
    let Some(value) = json
        .pointer_mut(parent)
        .and_then(J::as_object_mut)
        .and_then(|m| m.remove(&key))
    else {
        return;
    };
    // `/interfaces/N`: the interface the key is in.
    let iface: String = pointer.split('/').take(3).collect::<Vec<_>>().join("/");
    match (key.as_str(), within) {
        ("slaves", "link-aggregation") => {
            if let Some(m) = json.pointer_mut(parent).and_then(J::as_object_mut) {
                m.entry("port").or_insert(value);
            }
        }
        ("ip" | "prefix-length", "ipv4" | "ipv6") => {
            let addresses = json
                .pointer_mut(&format!("{parent}/address"))
                .and_then(J::as_array_mut);
            for a in addresses.into_iter().flatten().filter_map(J::as_object_mut) {
                a.entry(key.clone()).or_insert(value.clone());
            }
        }
        (k, w)
            if w != "interface"
                && INTERFACE_KEYS.contains(&k)
                && iface.starts_with("/interfaces/") =>
        {
            if let Some(m) = json.pointer_mut(&iface).and_then(J::as_object_mut) {
                m.entry(k).or_insert(value);
            }
        }
        _ => {}
    }
}

/// Where a refused key belongs, when that can be told.
pub fn belongs(m: &Misplaced, interface_type: Option<&str>) -> Option<String> {
    let key = m.key.as_str();
    let within = m.within.as_str();
    if key == "slaves" && within == "link-aggregation" {
        return Some("nmstate 2 names a bond's ports `port:` (`slaves` is nmstate 1's name, which nmstate 2 no longer reads)".into());
    }
    if matches!(key, "ip" | "prefix-length") && matches!(within, "ipv4" | "ipv6") {
        return Some(format!("`{key}` belongs in an entry of `{within}.address` (`address: [{{ip: ..., prefix-length: ...}}]`)"));
    }
    if within == "interface" {
        if let (Some((_, types)), Some(t)) = (
            TYPE_SECTIONS.iter().find(|(s, _)| *s == key),
            interface_type,
        ) {
            return Some(format!(
                "a `{key}:` section is read for an interface of `type: {}`; this one is `type: {t}`",
                types.join("` or `type: ")
            ));
        }
        return None;
    }
    if INTERFACE_KEYS.contains(&key) {
        let iface = m
            .interface
            .as_deref()
            .map(|i| format!(" `{i}`"))
            .unwrap_or_default();
        return Some(format!(
            "`{key}` belongs to the interface{iface} itself, at the level of its `name:` and `type:`, not under `{within}`: outdent it"
        ));
    }
    None
}

/// The findings for the keys nmstate refuses: each at its line, nmstate's
/// words, and where the key belongs.
pub fn diagnostics(network: &Node, first: &str, host: &str) -> (Vec<Diagnostic>, Vec<Misplaced>) {
    let found = unknown_fields(network, first);
    let type_of = |iface: &Option<String>| {
        let name = iface.as_deref()?;
        network
            .get("interfaces")?
            .as_seq()?
            .iter()
            .find(|i| i.get("name").and_then(Node::scalar_text).as_deref() == Some(name))?
            .get("type")?
            .scalar_text()
    };
    let diags = found
        .iter()
        .map(|(m, msg)| {
            let where_ = if m.within == "interface" {
                String::new()
            } else {
                format!(" under `{}`", m.within)
            };
            let mut d = Diagnostic::error(
                Code::UnknownField,
                format!("nmstate cannot read `{}`{where_}: {msg}", m.key),
            )
            .at(m.span)
            .host(host.to_string());
            if let Some(hint) = belongs(m, type_of(&m.interface).as_deref()) {
                d = d.help(hint);
            }
            d
        })
        .collect();
    (diags, found.into_iter().map(|(m, _)| m).collect())
}

/// Findings that follow from a misplaced section rather than cause
/// anything (a bond without ports because its `link-aggregation` was
/// nested under `ipv6`): marked as such, pointing at the cause.
pub fn mark_consequences(misplaced: &[Misplaced], diags: &mut [Diagnostic]) {
    const FOLLOW: &[(&str, &[Code])] = &[
        (
            "link-aggregation",
            &[Code::BondTooFewPorts, Code::PortUndefined],
        ),
        ("vlan", &[Code::VlanBaseMissing]),
        ("bridge", &[Code::PortUndefined]),
    ];
    for m in misplaced.iter().filter(|m| m.within != "interface") {
        let Some((_, codes)) = FOLLOW.iter().find(|(k, _)| *k == m.key) else {
            continue;
        };
        let Some(iface) = &m.interface else {
            continue;
        };
        let named = format!("`{iface}`");
        for d in diags
            .iter_mut()
            .filter(|d| codes.contains(&d.code) && d.message.contains(&named))
        {
            let line = m.span.line;
            d.message = format!(
                "{} (a consequence of `{}` nested under `{}` at line {line})",
                d.message, m.key, m.within
            );
            d.related = Some((m.span, "the cause".to_string()));
        }
    }
}

#[cfg(test)]
mod tests;

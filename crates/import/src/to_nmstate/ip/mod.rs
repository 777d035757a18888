//! `[ipv4]` and `[ipv6]`: an interface's IP settings, and the parts of
//! them NMState keeps document-wide (routes, routing rules, DNS).

use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::{json, Map, Value as J};

use nodenet_model::Code;

use crate::keyfile::{Entry, Group};
use crate::profile::Profile;
use crate::values::{bool_value, list_key, parse_int, read_ip_item};

use super::{dedup, is_default, option_value, Findings, Used};

mod other;
mod routes;

use other::*;
use routes::*;

/// Types whose profile gets `ipv4.method=auto` and `ipv6.method=auto`
/// from NetworkManager when it has no [ipv4]/[ipv6] group.
const IP_AUTO_BY_DEFAULT: &[&str] = &[
    "ethernet",
    "bond",
    "bridge",
    "vlan",
    "infiniband",
    "macvlan",
    "vxlan",
    "veth",
    "ovs-interface",
    "vpn",
    "macsec",
    "vrf",
];

/// What NMState keeps for the whole document rather than per interface.
#[derive(Default)]
pub(super) struct Doc {
    routes: Vec<J>,
    rules: Vec<J>,
    dns: Vec<String>,
    search: Vec<String>,
    options: Vec<String>,
}

impl Doc {
    /// `dns-resolver`, `routes` and `route-rules`, those that are set.
    pub(super) fn into_state(mut self) -> Map<String, J> {
        let mut doc = Map::new();

        // nmstate takes the IPv4 servers and the IPv6 servers as two runs;
        // each server, search domain and option once.
        dedup(&mut self.dns);
        dedup(&mut self.search);
        dedup(&mut self.options);
        self.dns.sort_by_key(|s| s.contains(':'));
        let mut config = Map::new();
        for (key, list) in [
            ("search", self.search),
            ("server", self.dns),
            ("options", self.options),
        ] {
            if !list.is_empty() {
                config.insert(key.into(), json!(list));
            }
        }
        if !config.is_empty() {
            doc.insert("dns-resolver".into(), json!({ "config": config }));
        }
        if !self.routes.is_empty() {
            doc.insert("routes".into(), json!({ "config": self.routes }));
        }
        if !self.rules.is_empty() {
            doc.insert("route-rules".into(), json!({ "config": self.rules }));
        }
        doc
    }
}

/// Both families of an interface, and `wait-ip` from their `may-fail`.
pub(super) fn families(
    c: &Profile,
    iface: &mut Map<String, J>,
    doc: &mut Doc,
    used: &mut Used,
    f: &mut Findings,
) {
    // nmstate writes both families disabled, and nothing else of its own
    // (no addr-gen-mode), for an interface whose state has no ip settings
    // at all: keep it so.
    let unset = |fam: &str| {
        c.kf.group(fam).is_some_and(|g| {
            g.entries.iter().all(|e| match e.key.as_str() {
                "method" => e.value() == "disabled",
                k => e.raw.is_empty() || k != "addr-gen-mode" && is_default(fam, k, &e.value()),
            })
        })
    };
    let no_ip = unset("ipv4") && unset("ipv6");
    // NetworkManager drops the IP settings of a port (VRF ports and
    // OVS interfaces keep them).
    let port = c.is_port() && c.port_type.as_deref() != Some("vrf") && c.kind != "ovs-interface";
    // An OVS bridge or patch has no kernel device: nmstate refuses IP
    // settings on it, NetworkManager applies none.
    let no_device = c.kind == "ovs-bridge"
        || c.kind == "ovs-interface"
            && c.kf.value("ovs-interface", "type").as_deref() == Some("patch");
    for fam in ["ipv4", "ipv6"] {
        used.push((fam, "*"));
        if no_ip {
            continue;
        }
        let group = c.kf.group(fam);
        if port {
            if let Some(g) = group.filter(|g| g.entries.iter().any(|e| !e.raw.is_empty())) {
                f.warn(
                    Code::KeyfileInvalid,
                    g.span,
                    format!("[{fam}] of a port: NetworkManager ignores it"),
                );
            }
            continue;
        }
        if no_device {
            let method = group.and_then(|g| g.get("method")).map(Entry::value);
            if let Some(g) = group.filter(|_| method.as_deref() != Some("disabled")) {
                f.warn(
                    Code::KeyfileInvalid,
                    g.span,
                    format!(
                        "[{fam}] of an OVS {}, which has no kernel device: NetworkManager \
                         applies no IP settings to it (imported as none)",
                        if c.kind == "ovs-bridge" {
                            "bridge"
                        } else {
                            "patch"
                        }
                    ),
                );
            }
            continue;
        }
        let small_mtu = iface.get("mtu").and_then(J::as_u64).filter(|m| *m < 1280);
        let v6_wanted = group.map_or(IP_AUTO_BY_DEFAULT.contains(&c.kind.as_str()), |g| {
            !matches!(
                g.get("method").map(Entry::value).as_deref(),
                Some("disabled" | "ignore")
            )
        });
        if let (true, Some(m), true) = (fam == "ipv6", small_mtu, v6_wanted) {
            let at = ["ethernet", "infiniband"]
                .iter()
                .find_map(|g| c.kf.get(g, "mtu"))
                .map_or_else(|| c.kf.header(), |e| e.span);
            let msg = format!(
                "an MTU of {m} leaves no IPv6 (the kernel turns it off below 1280, \
                 nmstate refuses it): [ipv6] is imported as disabled"
            );
            f.warn(Code::KeyfileUnmapped, at, msg);
            iface.insert(fam.into(), json!({"enabled": false}));
            continue;
        }
        match group {
            Some(g) => {
                let Some(ip) = ip_block(fam, g, &c.route_ref(), doc, f) else {
                    continue;
                };
                // nmstate writes IPv6 disabled without `addr-gen-mode` for
                // an interface whose state has no ipv6 at all.
                let bare = ip == json!({"enabled": false});
                if !(fam == "ipv6" && bare && g.get("addr-gen-mode").is_none()) {
                    iface.insert(fam.into(), ip);
                }
            }
            None if IP_AUTO_BY_DEFAULT.contains(&c.kind.as_str()) => {
                let mut ip = json!({"enabled": true, "dhcp": true});
                if fam == "ipv6" {
                    ip["autoconf"] = json!(true);
                    // NetworkManager's `addr-gen-mode=default` then.
                    ip["addr-gen-mode"] = json!("stable-privacy");
                }
                iface.insert(fam.into(), ip);
            }
            None => {}
        }
    }
    if !(no_ip || port || no_device) {
        wait_ip(c, iface, f);
    }
}

/// `may-fail=false` of a family → NMState's `wait-ip` (nmstate writes
/// `may-fail` of both families whenever it sets `wait-ip`).
fn wait_ip(c: &Profile, iface: &mut Map<String, J>, f: &mut Findings) {
    let may_fail = |fam: &str| {
        c.kf.get(fam, "may-fail")
            .filter(|e| !e.raw.is_empty())
            .map(|e| (e, bool_value(&e.value())))
    };
    let (v4, v6) = (may_fail("ipv4"), may_fail("ipv6"));
    for (fam, e) in [("ipv4", v4), ("ipv6", v6)] {
        if let Some((e, None)) = e {
            f.ignored(e, fam, "not a boolean: NetworkManager ignores it");
        }
    }
    let enabled = |fam: &str| iface.get(fam).and_then(|ip| ip.get("enabled")) == Some(&json!(true));
    // Whether an address of the family is waited for; asked of a family
    // that is not enabled, it is warned about and not.
    let mut wait_for = |fam: &str, v: Option<(&Entry, Option<bool>)>| match v {
        Some((e, Some(false))) if !enabled(fam) => {
            f.unmapped(
                e,
                fam,
                "NMState waits for an address only of an enabled family",
            );
            Some(false)
        }
        Some((_, b)) => b.map(|may_fail| !may_fail),
        None => None,
    };
    let wait = match (wait_for("ipv4", v4), wait_for("ipv6", v6)) {
        (Some(true), Some(true)) => "ipv4+ipv6",
        (Some(true), _) => "ipv4",
        (_, Some(true)) => "ipv6",
        (Some(false), Some(false)) => "any",
        _ => return,
    };
    iface.insert("wait-ip".into(), json!(wait));
}

fn default_route(v6: bool, gw: &str, iface: &str) -> J {
    json!({"destination": if v6 { "::/0" } else { "0.0.0.0/0" }, "next-hop-address": gw, "next-hop-interface": iface})
}

/// One family's group as NMState's `ipv4`/`ipv6`; its routes, rules and
/// DNS go to `doc`. None: NetworkManager rejects the profile (said in `f`).
fn ip_block(fam: &str, g: &Group, iface: &str, doc: &mut Doc, f: &mut Findings) -> Option<J> {
    let (method_entry, mut ip) = method(fam, g, f)?;
    let method = method_entry.value();
    let addresses = addresses(fam, g, f);
    if method == "manual" && addresses.items.is_empty() {
        f.invalid(
            method_entry.span,
            "`method=manual` without a usable address: NetworkManager rejects the profile",
        );
        return None;
    }
    if !addresses.items.is_empty()
        && matches!(method.as_str(), "disabled" | "link-local" | "ignore")
    {
        f.invalid(
            addresses.first_key.map_or(g.span, |e| e.span),
            format!("addresses with `method={method}`: NetworkManager rejects the profile"),
        );
        return None;
    }
    gateway(fam, g, iface, &addresses, doc, f)?;
    let option_keys = routes(fam, g, iface, doc, f);
    other_keys(fam, g, &method, &option_keys, &mut ip, doc, f);
    if !addresses.items.is_empty() {
        ip.insert("address".into(), J::Array(addresses.items));
    }
    Some(J::Object(ip))
}

/// `method=`: the family's switches (`enabled`, `dhcp`, `autoconf`), with
/// the entry itself; None when NetworkManager rejects it.
fn method<'g>(fam: &str, g: &'g Group, f: &mut Findings) -> Option<(&'g Entry, Map<String, J>)> {
    let v6 = fam == "ipv6";
    let mut ip = Map::new();
    let Some(method_entry) = g.get("method").filter(|e| !e.raw.is_empty()) else {
        f.invalid(
            g.span,
            format!("[{fam}] has no `method=`: NetworkManager rejects the profile"),
        );
        return None;
    };
    let method = method_entry.value();
    let known: &[&str] = if v6 {
        &[
            "auto",
            "dhcp",
            "manual",
            "link-local",
            "shared",
            "ignore",
            "disabled",
        ]
    } else {
        &["auto", "manual", "link-local", "shared", "disabled"]
    };
    if !known.contains(&method.as_str()) {
        f.invalid(
            method_entry.span,
            format!(
                "`method={method}` is not an {fam} method (one of {})",
                known.join(", ")
            ),
        );
        return None;
    }
    match method.as_str() {
        "disabled" => {
            ip.insert("enabled".into(), json!(false));
        }
        "auto" => {
            ip.insert("enabled".into(), json!(true));
            ip.insert("dhcp".into(), json!(true));
            if v6 {
                ip.insert("autoconf".into(), json!(true));
            }
        }
        "dhcp" => {
            ip.insert("enabled".into(), json!(true));
            ip.insert("dhcp".into(), json!(true));
            ip.insert("autoconf".into(), json!(false));
        }
        "manual" | "link-local" if method == "manual" || v6 => {
            ip.insert("enabled".into(), json!(true));
            ip.insert("dhcp".into(), json!(false));
            if v6 {
                ip.insert("autoconf".into(), json!(false));
            }
        }
        _ => {
            f.unmapped(
                method_entry,
                fam,
                "this method has no NMState equivalent; the family is imported as disabled",
            );
            ip.insert("enabled".into(), json!(false));
        }
    }
    Some((method_entry, ip))
}

/// A family's addresses, in NetworkManager's order.
struct Addresses<'g> {
    items: Vec<J>,
    /// The first `addressN=` key, usable or not (where its errors point).
    first_key: Option<&'g Entry>,
    /// The first gateway written with an address: the profile's gateway
    /// unless `gateway=` is set.
    gateway: Option<(String, &'g Entry)>,
}

fn addresses<'g>(fam: &str, g: &'g Group, f: &mut Findings) -> Addresses<'g> {
    let v6 = fam == "ipv6";
    let mut addr_keys: Vec<((i64, u8), &Entry)> = g
        .entries
        .iter()
        .filter_map(|e| list_key(&e.key, "address").map(|k| (k, e)))
        .collect();
    addr_keys.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
    let mut addresses: Vec<J> = Vec::new();
    let mut addr_gateway: Option<(String, &Entry)> = None;
    for (_, e) in &addr_keys {
        match read_ip_item(&e.value(), v6, false) {
            Ok(item) => {
                for note in &item.notes {
                    f.ignored(e, fam, note);
                }
                addresses.push(json!({"ip": item.addr.to_string(), "prefix-length": item.prefix}));
                if let (None, Some(gw)) = (&addr_gateway, item.gateway) {
                    addr_gateway = Some((gw, e));
                }
            }
            Err(why) => f.ignored(
                e,
                fam,
                &format!("{why}: NetworkManager ignores this address"),
            ),
        }
    }
    Addresses {
        items: addresses,
        first_key: addr_keys.first().map(|(_, e)| *e),
        gateway: addr_gateway,
    }
}

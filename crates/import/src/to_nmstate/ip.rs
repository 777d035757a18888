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

/// `gateway=` (or an address's): the default route, into `doc`. None when
/// NetworkManager rejects it.
fn gateway(
    fam: &str,
    g: &Group,
    iface: &str,
    addresses: &Addresses,
    doc: &mut Doc,
    f: &mut Findings,
) -> Option<()> {
    let v6 = fam == "ipv6";
    let addr_gateway = &addresses.gateway;
    let never_default = g
        .get("never-default")
        .is_some_and(|e| bool_value(&e.value()) == Some(true));
    let gateway_entry = g.get("gateway").filter(|e| !e.raw.is_empty());
    let gateway = match (gateway_entry, addr_gateway) {
        (Some(e), Some((old, _))) => {
            if e.value() != *old {
                f.ignored(
                    e,
                    fam,
                    &format!("NetworkManager uses it and ignores the gateway `{old}` of the address keys"),
                );
            }
            Some((e.value(), e))
        }
        (Some(e), None) => Some((e.value(), e)),
        (None, Some((gw, e))) => Some((gw.clone(), *e)),
        (None, None) => None,
    };
    if let Some((gw, e)) = &gateway {
        match gw.parse::<IpAddr>().ok().filter(|a| a.is_ipv6() == v6) {
            None => {
                f.invalid(
                    e.span,
                    format!("gateway `{gw}` is not an {fam} address: NetworkManager rejects the profile"),
                );
                return None;
            }
            Some(_) if addresses.items.is_empty() => {
                f.invalid(
                    e.span,
                    format!(
                        "gateway `{gw}` without an address: NetworkManager rejects the profile"
                    ),
                );
                return None;
            }
            // NetworkManager drops the gateway of a never-default profile.
            Some(_) if never_default => {}
            Some(a) => doc.routes.push(default_route(v6, &a.to_string(), iface)),
        }
    }
    Some(())
}

/// `routeN=` and `routeN_options=`, into `doc`; returns the option keys
/// (read here, skipped by [`other_keys`]).
fn routes(fam: &str, g: &Group, iface: &str, doc: &mut Doc, f: &mut Findings) -> Vec<String> {
    let v6 = fam == "ipv6";
    let mut route_keys: Vec<((i64, u8), &Entry)> = g
        .entries
        .iter()
        .filter_map(|e| list_key(&e.key, "route").map(|k| (k, e)))
        .collect();
    route_keys.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
    let option_keys: Vec<String> = route_keys
        .iter()
        .map(|(_, e)| format!("{}_options", e.key))
        .collect();
    for (_, e) in &route_keys {
        let item = match read_ip_item(&e.value(), v6, true) {
            Ok(item) => item,
            Err(why) => {
                f.ignored(e, fam, &format!("{why}: NetworkManager ignores this route"));
                continue;
            }
        };
        for note in &item.notes {
            f.ignored(e, fam, note);
        }
        let net = IpNet::new(item.addr, item.prefix)
            .map(|n| n.trunc().to_string())
            .unwrap_or_default();
        let mut r = Map::new();
        r.insert("destination".into(), json!(net));
        if let Some(hop) = &item.gateway {
            r.insert("next-hop-address".into(), json!(hop));
        }
        r.insert("next-hop-interface".into(), json!(iface));
        if let Some(m) = item.metric.filter(|m| *m != 0) {
            r.insert("metric".into(), json!(m));
        }
        if let Some(o) = g.get(&format!("{}_options", e.key)) {
            if !route_options(o, fam, &mut r, f) {
                continue;
            }
        }
        doc.routes.push(J::Object(r));
    }

    option_keys
}

/// Every other key of the group: DNS into `doc`, the rest onto `ip`, or a
/// finding for what NMState cannot say.
fn other_keys(
    fam: &str,
    g: &Group,
    method: &str,
    option_keys: &[String],
    ip: &mut Map<String, J>,
    doc: &mut Doc,
    f: &mut Findings,
) {
    let v6 = fam == "ipv6";
    let dynamic = matches!(method, "auto" | "dhcp");
    let send_hostname = g
        .get("dhcp-send-hostname")
        .and_then(|e| bool_value(&e.value()))
        .unwrap_or(true);
    let static_method = matches!(method, "manual" | "link-local");
    for e in &g.entries {
        let k = e.key.as_str();
        let v = e.value();
        if list_key(k, "address").is_some()
            || list_key(k, "route").is_some()
            || option_keys.iter().any(|o| o == k)
        {
            continue;
        }
        match (k, v.as_str()) {
            ("method" | "gateway", _) => {}
            (_, "") => {}
            ("dns", _) => {
                for s in e.list() {
                    match s.parse::<IpAddr>().ok().filter(|a| a.is_ipv6() == v6) {
                        Some(_) => doc.dns.push(s),
                        None => f.ignored(
                            e,
                            fam,
                            &format!("`{s}` is not an {fam} DNS server: NetworkManager ignores it"),
                        ),
                    }
                }
            }
            ("dns-search", _) => {
                let items = e.list();
                if let [one] = items.as_slice() {
                    if one.contains([',', ' ']) {
                        let why = "search domains separated by `,` or ` `: NetworkManager \
                                   splits them (only `;` separates)";
                        f.ignored(e, fam, why);
                        doc.search.extend(
                            one.split([',', ' '])
                                .filter(|s| !s.is_empty())
                                .map(str::to_string),
                        );
                        continue;
                    }
                }
                doc.search.extend(items);
            }
            ("ignore-auto-dns", "true") if dynamic => {
                ip.insert("auto-dns".into(), json!(false));
            }
            ("ignore-auto-routes", "true") if dynamic => {
                ip.insert("auto-routes".into(), json!(false));
            }
            ("never-default", "true") if dynamic => {
                ip.insert("auto-gateway".into(), json!(false));
            }
            ("never-default", "true") => {}
            ("route-table", n) if dynamic => {
                ip.insert("auto-route-table-id".into(), option_value(n));
            }
            ("route-metric", n) if dynamic => {
                ip.insert("auto-route-metric".into(), option_value(n));
            }
            ("route-metric", n) if static_method => match n.trim().parse::<i64>() {
                Ok(-1) => {}
                Ok(m) if (0..=i64::from(u32::MAX)).contains(&m) => {
                    ip.insert("prefix-route-metric".into(), json!(m));
                }
                _ => f.ignored(e, fam, "not a route metric: NetworkManager ignores it"),
            },
            // NetworkManager 1.54's per-interface IPv4 forwarding.
            ("forwarding", "0" | "1") if !v6 => {
                ip.insert("forwarding".into(), json!(v == "1"));
            }
            // Read with the other family's, as `wait-ip`.
            ("may-fail", _) => {}
            ("dhcp-send-hostname", "false") if dynamic => {
                ip.insert("dhcp-send-hostname".into(), json!(false));
            }
            ("dhcp-hostname" | "dhcp-fqdn", name) if dynamic => {
                // nmstate writes a name with a dot as IPv4's FQDN option,
                // one without as its host name option.
                let fqdn = !v6 && name.contains('.');
                if !send_hostname {
                    f.unmapped(
                        e,
                        fam,
                        "NMState sends no host name with `dhcp-send-hostname=false`",
                    );
                } else if k == "dhcp-fqdn" && (v6 || !fqdn) {
                    f.unmapped(
                        e,
                        fam,
                        "nmstate sends a name without a dot as `dhcp-hostname` (and none over DHCPv6 as FQDN)",
                    );
                } else if k == "dhcp-hostname" && fqdn {
                    f.unmapped(e, fam, "nmstate sends a name with a dot as `dhcp-fqdn`");
                } else if k == "dhcp-hostname"
                    && !v6
                    && g.get("dhcp-fqdn").is_some_and(|d| !d.raw.is_empty())
                {
                    f.unmapped(e, fam, "NetworkManager sends `dhcp-fqdn` instead");
                } else {
                    ip.insert("dhcp-custom-hostname".into(), json!(name));
                }
            }
            ("dhcp-client-id", id) if dynamic && !v6 && id != "mac" => {
                let id = if id == "duid" { "iaid+duid" } else { id };
                ip.insert("dhcp-client-id".into(), json!(id));
            }
            ("dhcp-duid", duid) if dynamic && v6 && duid != "ll" => {
                ip.insert("dhcp-duid".into(), json!(duid));
            }
            ("token", token) if dynamic && v6 => {
                if token.trim() != "::" {
                    ip.insert("token".into(), json!(token.trim()));
                }
            }
            ("dns-options", _) => doc.options.extend(e.list()),
            (k, _)
                if k.strip_prefix("routing-rule")
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty()) =>
            {
                if let Some(rule) = routing_rule(e, v6, f) {
                    doc.rules.push(rule);
                }
            }
            // `default` is NetworkManager's global default, stable-privacy.
            ("addr-gen-mode", "1" | "stable-privacy" | "default" | "default-or-eui64") if v6 => {
                ip.insert("addr-gen-mode".into(), json!("stable-privacy"));
            }
            (k, v) if is_default(fam, k, v) => {}
            _ => f.unmapped(e, fam, "no NMState equivalent handled by nodenet"),
        }
    }
}

/// `routeN_options=` onto an NMState route. False: the route has a type
/// NMState does not express and is not imported. As NetworkManager, an
/// option with an invalid value voids them all, an unknown one is
/// skipped.
fn route_options(o: &Entry, fam: &str, r: &mut Map<String, J>, f: &mut Findings) -> bool {
    let text = o.value();
    let pairs: Vec<(&str, &str)> = {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
            .collect()
    };
    let numeric = |k: &str| {
        matches!(
            k,
            "table"
                | "tos"
                | "scope"
                | "window"
                | "cwnd"
                | "initcwnd"
                | "initrwnd"
                | "mtu"
                | "advmss"
                | "rto_min"
                | "weight"
        )
    };
    let boolean = |k: &str| k == "onlink" || k == "quickack" || k.starts_with("lock-");
    if let Some((k, v)) = pairs.iter().find(|(k, v)| {
        numeric(k) && v.parse::<u32>().is_err() || boolean(k) && bool_value(v).is_none()
    }) {
        f.ignored(
            o,
            fam,
            &format!("`{k}={v}` is not valid: NetworkManager ignores all these options"),
        );
        return true;
    }
    for (k, v) in pairs {
        let num = || v.parse::<u32>().ok().map(|n| json!(n));
        let flag = || bool_value(v).map(|b| json!(b));
        let (key, value) = match k {
            "table" if v == "254" => continue,
            "table" => ("table-id", num()),
            "src" => ("source", Some(json!(v))),
            "weight" => ("weight", num()),
            "cwnd" => ("cwnd", num()),
            "initcwnd" => ("initcwnd", num()),
            "initrwnd" => ("initrwnd", num()),
            "mtu" => ("mtu", num()),
            "advmss" => ("advmss", num()),
            "quickack" => ("quickack", flag()),
            "lock-mtu" => ("lock-mtu", flag()),
            // nmstate locks the window whenever it sets one.
            "lock-cwnd" if bool_value(v) == Some(true) => continue,
            "type" if v == "unicast" => continue,
            "type" if matches!(v, "blackhole" | "unreachable" | "prohibit") => {
                // nmstate keeps such routes on no interface.
                r.remove("next-hop-interface");
                r.remove("next-hop-address");
                ("route-type", Some(json!(v)))
            }
            "type" => {
                f.unmapped(
                    o,
                    fam,
                    &format!("NMState has no `{v}` routes; the route is not imported"),
                );
                return false;
            }
            _ => {
                f.unmapped(o, fam, &format!("route option `{k}={v}` is not imported"));
                continue;
            }
        };
        if let Some(value) = value {
            r.insert(key.into(), value);
        }
    }
    true
}

/// The families of routing-rule selectors, by their address.
fn family_of(addr: &str) -> Option<bool> {
    let ip = addr.split('/').next()?;
    ip.parse::<IpAddr>().ok().map(|a| a.is_ipv6())
}

/// `routing-ruleN=` → an NMState route rule (NMState keeps rules for the
/// whole document; nmstate puts each on an interface again: that of its
/// `iif`, else one with routes in its table). None: a selector or action
/// NMState has not (warned; the rule is not imported) or a rule
/// NetworkManager ignores.
fn routing_rule(e: &Entry, v6: bool, f: &mut Findings) -> Option<J> {
    let fam = if v6 { "ipv6" } else { "ipv4" };
    let text = e.value();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut rule = Map::new();
    let mut from = None;
    let mut to = None;
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        let arg = words.get(i + 1).copied();
        let Some(arg) = arg.filter(|_| word != "not") else {
            let why = if word == "not" {
                "NMState has no inverted rules (`not`); the rule is not imported".to_string()
            } else {
                format!("`{word}` without a value: NetworkManager ignores the rule")
            };
            if word == "not" {
                f.unmapped(e, fam, &why);
            } else {
                f.ignored(e, fam, &why);
            }
            return None;
        };
        let bad = |f: &mut Findings| -> Option<J> {
            f.ignored(
                e,
                fam,
                &format!("`{word} {arg}` is not valid: NetworkManager ignores the rule"),
            );
            None
        };
        match word {
            "priority" => match arg.parse::<u32>() {
                Ok(p) => {
                    rule.insert("priority".into(), json!(p));
                }
                Err(_) => return bad(f),
            },
            "from" | "to" => {
                if family_of(arg) != Some(v6) {
                    return bad(f);
                }
                if word == "from" {
                    from = Some(arg);
                } else {
                    to = Some(arg);
                }
            }
            "iif" => {
                rule.insert("iif".into(), json!(arg));
            }
            "table" => match arg.parse::<u32>() {
                Ok(t) => {
                    rule.insert("route-table".into(), json!(t));
                }
                Err(_) => return bad(f),
            },
            "fwmark" => {
                let (mark, mask) = match arg.split_once('/') {
                    Some((m, k)) => (m, Some(k)),
                    None => (arg, None),
                };
                let hex = |s: &str| {
                    parse_int(s)
                        .and_then(|n| u32::try_from(n).ok())
                        .map(|n| json!(format!("{n:#x}")))
                };
                match (hex(mark), mask.map(hex)) {
                    (Some(m), None) => {
                        rule.insert("fwmark".into(), m);
                    }
                    (Some(m), Some(Some(k))) => {
                        rule.insert("fwmark".into(), m);
                        rule.insert("fwmask".into(), k);
                    }
                    _ => return bad(f),
                }
            }
            "suppress_prefixlength" => match arg.parse::<u32>() {
                Ok(n) => {
                    rule.insert("suppress-prefix-length".into(), json!(n));
                }
                Err(_) => return bad(f),
            },
            "type" if matches!(arg, "blackhole" | "unreachable" | "prohibit") => {
                rule.insert("action".into(), json!(arg));
            }
            _ => {
                f.unmapped(
                    e,
                    fam,
                    &format!("NMState has no routing rule `{word}`; the rule is not imported"),
                );
                return None;
            }
        }
        i += 2;
    }
    let all = if v6 { "::/0" } else { "0.0.0.0/0" };
    match (from, to) {
        // nmstate writes a rule without selectors as from everything.
        (Some(a), None) if a == all => {}
        (from, to) => {
            if let Some(a) = from {
                rule.insert("ip-from".into(), json!(a));
            }
            if let Some(a) = to {
                rule.insert("ip-to".into(), json!(a));
            }
        }
    }
    rule.insert("family".into(), json!(fam));
    Some(J::Object(rule))
}

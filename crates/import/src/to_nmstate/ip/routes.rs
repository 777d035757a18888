//! `gateway=`, `routeN=` with their `routeN_options=`, and `routing-ruleN=`:
//! NMState routes and route rules, or findings for what NetworkManager
//! rejects and NMState cannot say.

use super::*;

/// `gateway=` (or an address's): the default route, into `doc`. None when
/// NetworkManager rejects it.
pub(super) fn gateway(
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
pub(super) fn routes(
    fam: &str,
    g: &Group,
    iface: &str,
    doc: &mut Doc,
    f: &mut Findings,
) -> Vec<String> {
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

/// `routeN_options=` onto an NMState route. False: the route has a type
/// NMState does not express and is not imported. As NetworkManager, an
/// option with an invalid value voids them all, an unknown one is
/// skipped.
pub(super) fn route_options(
    o: &Entry,
    fam: &str,
    r: &mut Map<String, J>,
    f: &mut Findings,
) -> bool {
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
pub(super) fn family_of(addr: &str) -> Option<bool> {
    let ip = addr.split('/').next()?;
    ip.parse::<IpAddr>().ok().map(|a| a.is_ipv6())
}

/// `routing-ruleN=` → an NMState route rule (NMState keeps rules for the
/// whole document; nmstate puts each on an interface again: that of its
/// `iif`, else one with routes in its table). None: a selector or action
/// NMState has not (warned; the rule is not imported) or a rule
/// NetworkManager ignores.
pub(super) fn routing_rule(e: &Entry, v6: bool, f: &mut Findings) -> Option<J> {
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

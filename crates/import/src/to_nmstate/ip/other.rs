//! The rest of an `[ipv4]`/`[ipv6]` group: DNS, options NMState has a
//! place for, and findings for the others.

use super::*;

/// Every other key of the group: DNS into `doc`, the rest onto `ip`, or a
/// finding for what NMState cannot say.
pub(super) fn other_keys(
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

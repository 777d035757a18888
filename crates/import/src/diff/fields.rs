//! Field by field: what a desired interface says against the actual one,
//! with the defaults a live system fills in.

use super::*;
use std::borrow::Cow;

/// What a kernel exposes, for comparing against live state: settings
/// only NetworkManager knows (DHCP options, bond options, ...) are not
/// differences there.
pub const LIVE_FIELDS: &[&str] = &[
    "state",
    "mtu",
    "mac-address",
    "ipv4.enabled",
    "ipv4.address",
    "ipv6.address",
    "link-aggregation.mode",
    "link-aggregation.port",
    "vlan.base-iface",
    "vlan.id",
    "bridge.port",
];

/// How the actual state was obtained.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Actual {
    /// A complete description (keyfiles, an NMState file): interfaces and
    /// routes it has beyond the desired ones are differences.
    Complete,
    /// The running kernel: only what desired asks for, in [`LIVE_FIELDS`].
    Live,
    /// What nmstate on a running node reports (a NodeNetworkState): every
    /// field desired asks for; what it leaves out, and interfaces and
    /// routes it does not name, are the node's own.
    Running,
}

/// The value a new profile gets for a field a state leaves out, where
/// it does not depend on the device: nmstate's defaults for interfaces
/// (`state: up`; an IP family not mentioned is disabled, without DHCP or
/// autoconf, with automatic DNS, gateway and routes when enabled) and the
/// bond options' defaults (NetworkManager's `nm-setting-bond.c`, which
/// are the kernel's `Documentation/networking/bonding.rst` but for
/// `miimon`, 100 in NetworkManager). `path` is dotted, from the
/// interface. An MTU, a MAC, an LLDP or ethtool setting and the like
/// depend on the device or driver: none.
pub fn implied(path: &str) -> Option<J> {
    let v = match path {
        "state" => json!("up"),
        "ipv4.enabled" | "ipv6.enabled" => json!(false),
        "ipv4.dhcp" | "ipv6.dhcp" | "ipv6.autoconf" => json!(false),
        "ipv4.address" | "ipv6.address" => json!([]),
        "ipv4.auto-dns" | "ipv6.auto-dns" | "ipv4.auto-gateway" | "ipv6.auto-gateway"
        | "ipv4.auto-routes" | "ipv6.auto-routes" => json!(true),
        "accept-all-mac-addresses" => json!(false),
        "lldp.enabled" => json!(false),
        "description" => json!(""),
        "identifier" => json!("name"),
        "vlan.protocol" => json!("802.1q"),
        p => return bond_option_default(p.strip_prefix("link-aggregation.options.")?),
    };
    Some(v)
}

pub(super) fn bond_option_default(option: &str) -> Option<J> {
    let v = match option {
        "ad_actor_sys_prio" => json!(65535),
        "ad_select" => json!("stable"),
        "ad_user_port_key" => json!(0),
        "all_slaves_active" => json!("dropped"),
        "arp_all_targets" => json!("any"),
        "arp_interval" => json!(0),
        "arp_validate" => json!("none"),
        "downdelay" => json!(0),
        "fail_over_mac" => json!("none"),
        "lacp_rate" => json!("slow"),
        "lp_interval" => json!(1),
        "miimon" => json!(100),
        "min_links" => json!(0),
        "num_grat_arp" | "num_unsol_na" => json!(1),
        "packets_per_slave" => json!(1),
        "primary_reselect" => json!("always"),
        "resend_igmp" => json!(1),
        "tlb_dynamic_lb" => json!(true),
        "updelay" => json!(0),
        "use_carrier" => json!(true),
        "xmit_hash_policy" => json!("layer2"),
        _ => return None,
    };
    Some(v)
}

/// Fields that `actual` lacks or has otherwise than `desired`: with
/// `only` (live), the desired fields named there; without, every field
/// of either side, one left out meaning its [`implied`] value.
pub(super) fn fields(
    prefix: &str,
    desired: &Map<String, J>,
    actual: &Map<String, J>,
    how: Actual,
    out: &mut Vec<FieldChange>,
) {
    let only = (how == Actual::Live).then_some(LIVE_FIELDS);
    let both_ways = how == Actual::Complete;
    // Lists the node orders its own way: sets, unless both are
    // descriptions.
    let as_sets = !both_ways;
    let empty = Map::new();
    // What only actual has: every field of a complete description; of a
    // running node, those whose default a new profile gets is known (a
    // bond option set by hand), not what the node is left to choose.
    let running = how == Actual::Running;
    let only_actual = actual
        .keys()
        .filter(|k| (both_ways || running) && !desired.contains_key(*k));
    for k in desired.keys().chain(only_actual) {
        if k == "name" || k == "type" {
            continue;
        }
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let wanted = only.is_none_or(|o| {
            o.iter()
                .any(|f| *f == path || f.starts_with(&format!("{path}.")))
        });
        if !wanted {
            continue;
        }
        let Some(d) = desired.get(k) else {
            // Left out of desired (complete and running comparisons).
            match actual.get(k) {
                Some(J::Object(am)) => fields(&path, &empty, am, how, out),
                // What desired leaves of an IP family is the node's own
                // on a running node (DHCP's addresses, autoconf,
                // link-local, what configure-ovs gave br-ex).
                Some(_)
                    if running
                        && (implied(&path).is_none()
                            || path.starts_with("ipv4.")
                            || path.starts_with("ipv6.")) => {}
                Some(a) => {
                    let meant = implied(&path);
                    if meant.as_ref() != Some(a) {
                        out.push(FieldChange {
                            implied: meant.is_some(),
                            desired: meant.unwrap_or(J::Null),
                            actual: a.clone(),
                            path,
                        });
                    }
                }
                None => {}
            }
            continue;
        };
        // Live bridges show port names only. (Borrowed where it can be:
        // a copy of every field at every depth was a fifth of a plan's
        // comparison.)
        let d: Cow<J> = if only.is_some() && path == "bridge.port" {
            Cow::Owned(port_names(d))
        } else {
            Cow::Borrowed(d)
        };
        // The kernel lists ports, and addresses of different subnets, in
        // its own order: sets, live.
        let (d, a) = if as_sets
            && matches!(
                path.as_str(),
                "bridge.port" | "link-aggregation.port" | "ipv4.address" | "ipv6.address"
            ) {
            (
                Cow::Owned(sorted(&d)),
                actual.get(k).map(|a| Cow::Owned(sorted(a))),
            )
        } else {
            (d, actual.get(k).map(Cow::Borrowed))
        };
        // A NIC NetworkManager deactivated may keep its link up: the
        // kernel cannot tell `down` from "no profile active" for it.
        if only.is_some()
            && path == "state"
            && *d == "down"
            && desired.get("type").is_some_and(|t| t == "ethernet")
        {
            continue;
        }
        // Left out of a complete actual: what it means there.
        let a = match a {
            None if both_ways => implied(&path).map(Cow::Owned),
            a => a,
        };
        // A running node holds more than it was given: keepalived's VIPs
        // beside its addresses, OVN-Kubernetes' patch ports on br-ex.
        let within = |d: &J, a: &J| match (d, a) {
            (J::Array(d), J::Array(a)) => d.iter().all(|x| a.contains(x)),
            _ => false,
        };
        match (d.as_ref(), a.as_deref()) {
            (J::Object(dm), Some(J::Object(am))) => fields(&path, dm, am, how, out),
            (J::Object(dm), None) if both_ways => fields(&path, dm, &empty, how, out),
            (d, Some(a)) if d == a => {}
            (d, Some(a))
                if running
                    && (path.ends_with(".port") || path.ends_with(".address"))
                    && within(d, a) => {}
            (d, a) => out.push(FieldChange {
                path,
                actual: a.cloned().unwrap_or(J::Null),
                desired: d.clone(),
                implied: false,
            }),
        }
    }
}

/// An array sorted (by its items' text), anything else as it is.
pub(super) fn sorted(v: &J) -> J {
    match v {
        J::Array(items) => {
            let mut items = items.clone();
            items.sort_by_key(|i| i.to_string());
            J::Array(items)
        }
        other => other.clone(),
    }
}

pub(super) fn port_names(ports: &J) -> J {
    J::Array(
        ports
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| p.get("name"))
                    .map(|n| serde_json::json!({ "name": n }))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

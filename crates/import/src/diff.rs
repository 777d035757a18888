//! Desired vs actual NMState, per interface: what would be added, removed
//! or changed to go from actual to desired.
//!
//! Both sides go through nmstate's own parser and serializer first, so
//! spelling differences (`mtu: "1500"`, `mode: 4`, port lists under old
//! names) do not show up as changes.
//!
//! Against a complete description (keyfiles, another inventory) both
//! sides are whole: a field one side leaves out means what NetworkManager
//! and nmstate give a new profile ([`implied`]: `lacp_rate` `slow`,
//! `ipv4` disabled, `state` up), so leaving out a default is no change
//! and leaving out anything else is one. Against the live kernel only
//! what the desired state asks for is compared (NMState is partial:
//! absent means "leave as is").

use serde::Serialize;
use serde_json::{json, Map, Value as J};

#[derive(Debug, thiserror::Error)]
#[error("{side} state is not valid NMState: {message}")]
pub struct DiffError {
    pub side: &'static str,
    pub message: String,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Added,
    Removed,
    Changed,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct FieldChange {
    pub path: String,
    pub actual: J,
    /// What the desired side means: its value, or for a field it leaves
    /// out, what a new profile gets ([`implied`], `implied: true`), or
    /// null where that depends on the device (an MTU).
    pub desired: J,
    /// The desired side leaves the field out: nodes that run the actual
    /// value keep it (nmstate leaves what a state omits), nodes made from
    /// the desired description get `desired`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub implied: bool,
}

impl FieldChange {
    /// The desired side leaves the field out.
    pub fn left_out(&self) -> bool {
        self.implied || self.desired.is_null()
    }
}

#[derive(Debug, Serialize, PartialEq)]
pub struct IfaceDiff {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub change: Change,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
}

#[derive(Debug, Serialize, PartialEq, Default)]
pub struct ListDiff {
    pub added: Vec<J>,
    pub removed: Vec<J>,
}

impl ListDiff {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Diff {
    pub equal: bool,
    pub interfaces: Vec<IfaceDiff>,
    pub routes: ListDiff,
    #[serde(rename = "dns-servers")]
    pub dns_servers: ListDiff,
    #[serde(rename = "dns-search")]
    pub dns_search: ListDiff,
}

/// nmstate's canonical form of a state.
pub fn canonical(state: &J, side: &'static str) -> Result<J, DiffError> {
    let parsed: nmstate::NetworkState =
        serde_json::from_value(state.clone()).map_err(|e| DiffError {
            side,
            message: e.to_string(),
        })?;
    serde_json::to_value(&parsed).map_err(|e| DiffError {
        side,
        message: e.to_string(),
    })
}

fn key(iface: &J) -> (String, String) {
    let s = |k: &str| iface.get(k).and_then(J::as_str).unwrap_or("").to_string();
    (s("name"), s("type"))
}

/// A type left out (nmstate's `unknown`): whatever the interface of that
/// name is, as nmstate resolves it against the node.
fn unknown_type(kind: &str) -> bool {
    kind.is_empty() || kind == "unknown"
}

/// The entry of `others` that is `iface`: same name and type, else (a
/// type left out on either side) the same name.
fn counterpart<'a>(iface: &J, others: &[&'a J]) -> Option<&'a J> {
    let (name, kind) = key(iface);
    others
        .iter()
        .find(|o| key(o) == (name.clone(), kind.clone()))
        .or_else(|| {
            others.iter().find(|o| {
                let (n, k) = key(o);
                n == name && (unknown_type(&k) || unknown_type(&kind))
            })
        })
        .copied()
}

fn list<'a>(state: &'a J, path: &[&str]) -> Vec<&'a J> {
    let mut v = state;
    for p in path {
        match v.get(p) {
            Some(n) => v = n,
            None => return Vec::new(),
        }
    }
    v.as_array().map(|a| a.iter().collect()).unwrap_or_default()
}

fn list_diff(desired: Vec<&J>, actual: Vec<&J>) -> ListDiff {
    ListDiff {
        added: desired
            .iter()
            .filter(|d| !actual.contains(d))
            .map(|d| (*d).clone())
            .collect(),
        removed: actual
            .iter()
            .filter(|a| !desired.contains(a))
            .map(|a| (*a).clone())
            .collect(),
    }
}

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

fn bond_option_default(option: &str) -> Option<J> {
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
fn fields(
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
        // Live bridges show port names only.
        let d = if only.is_some() && path == "bridge.port" {
            port_names(d)
        } else {
            d.clone()
        };
        // The kernel lists ports, and addresses of different subnets, in
        // its own order: sets, live.
        let (d, a) = if as_sets
            && matches!(
                path.as_str(),
                "bridge.port" | "link-aggregation.port" | "ipv4.address" | "ipv6.address"
            ) {
            (sorted(&d), actual.get(k).map(sorted))
        } else {
            (d, actual.get(k).cloned())
        };
        // A NIC NetworkManager deactivated may keep its link up: the
        // kernel cannot tell `down` from "no profile active" for it.
        if only.is_some()
            && path == "state"
            && d == "down"
            && desired.get("type").is_some_and(|t| t == "ethernet")
        {
            continue;
        }
        // Left out of a complete actual: what it means there.
        let a = match a {
            None if both_ways => implied(&path),
            a => a,
        };
        // A running node holds more than it was given: keepalived's VIPs
        // beside its addresses, OVN-Kubernetes' patch ports on br-ex.
        let within = |d: &J, a: &J| match (d, a) {
            (J::Array(d), J::Array(a)) => d.iter().all(|x| a.contains(x)),
            _ => false,
        };
        match (&d, a.as_ref()) {
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
fn sorted(v: &J) -> J {
    match v {
        J::Array(items) => {
            let mut items = items.clone();
            items.sort_by_key(|i| i.to_string());
            J::Array(items)
        }
        other => other.clone(),
    }
}

fn port_names(ports: &J) -> J {
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

/// The diff of two NMState documents (both canonicalised by nmstate).
pub fn diff(desired: &J, actual: &J) -> Result<Diff, DiffError> {
    diff_with(desired, actual, Actual::Complete)
}

pub fn diff_with(desired: &J, actual: &J, how: Actual) -> Result<Diff, DiffError> {
    let partial = how != Actual::Complete;
    let desired = canonical(desired, "desired")?;
    let actual = canonical(actual, "actual")?;
    let desired = if partial {
        found_by_mac(&desired, &actual)
    } else {
        desired
    };
    let d_ifaces = list(&desired, &["interfaces"]);
    let a_ifaces = list(&actual, &["interfaces"]);
    let mut interfaces = Vec::new();
    for d in &d_ifaces {
        let (name, kind) = key(d);
        if how == Actual::Live && kind == "ovs-bridge" {
            interfaces.extend(live_ovs_bridge(d, &a_ifaces));
            continue;
        }
        match counterpart(d, &a_ifaces) {
            // Asked to be absent, and it is.
            None if is_absent(d) => {}
            None => interfaces.push(IfaceDiff {
                name,
                kind,
                change: Change::Added,
                fields: Vec::new(),
            }),
            Some(a) => {
                let mut changes = Vec::new();
                if let (Some(dm), Some(am)) = (d.as_object(), a.as_object()) {
                    fields("", dm, am, how, &mut changes);
                }
                // A type left out is the other side's, not a change.
                changes.retain(|c| {
                    c.path != "type"
                        || !(c.desired.as_str().is_some_and(unknown_type)
                            || c.actual.as_str().is_some_and(unknown_type))
                });
                if !changes.is_empty() {
                    interfaces.push(IfaceDiff {
                        name,
                        kind,
                        change: Change::Changed,
                        fields: changes,
                    });
                }
            }
        }
    }
    for a in a_ifaces.iter().filter(|_| how == Actual::Complete) {
        let k = key(a);
        if counterpart(a, &d_ifaces).is_none() {
            interfaces.push(IfaceDiff {
                name: k.0,
                kind: k.1,
                change: Change::Removed,
                fields: Vec::new(),
            });
        }
    }
    interfaces.sort_by(|a, b| (&a.name, &a.kind).cmp(&(&b.name, &b.kind)));
    let (d_absent, d_routes): (Vec<&J>, Vec<&J>) = list(&desired, &["routes", "config"])
        .into_iter()
        .partition(|r| is_absent(r));
    let a_routes = list(&actual, &["routes", "config"]);
    let (d_main, a_main): (Vec<J>, Vec<J>) = (
        d_routes.iter().map(|r| main_table(r)).collect(),
        a_routes.iter().map(|r| main_table(r)).collect(),
    );
    let mut routes = list_diff(d_main.iter().collect(), a_main.iter().collect());
    if partial {
        // The kernel has routes of its own making; only missing ones count,
        // and those the desired state says must be absent.
        routes.removed = a_routes
            .into_iter()
            .filter(|r| d_absent.iter().any(|gone| route_matches(gone, r)))
            .cloned()
            .collect();
    }
    // The kernel knows no DNS: a live comparison leaves it out. A running
    // node's name servers are what desired says only where it says any
    // (nmstate replaces the list as a whole).
    let dns_said = desired.pointer("/dns-resolver/config").is_some();
    let dns = |field: &str| match how {
        Actual::Live => ListDiff::default(),
        Actual::Running if !dns_said => ListDiff::default(),
        Actual::Complete | Actual::Running => list_diff(
            list(&desired, &["dns-resolver", "config", field]),
            list(&actual, &["dns-resolver", "config", field]),
        ),
    };
    let dns_servers = dns("server");
    let dns_search = dns("search");
    let equal = interfaces.is_empty()
        && routes.is_empty()
        && dns_servers.is_empty()
        && dns_search.is_empty();
    Ok(Diff {
        equal,
        interfaces,
        routes,
        dns_servers,
        dns_search,
    })
}

/// The permanent MAC of a live interface (a bond port shows its bond's
/// MAC as `mac-address`), else its MAC.
fn burned_in_mac(iface: &J) -> Option<String> {
    ["permanent-mac-address", "mac-address"]
        .iter()
        .filter_map(|k| iface.get(*k).and_then(J::as_str))
        .find(|m| !m.is_empty())
        .map(str::to_ascii_uppercase)
}

/// `desired` with each interface bound by MAC (`identifier: mac-address`)
/// found live by that MAC: it takes the live interface's name (in port
/// lists, VLAN parents and routes too), and its `mac-address`, the NIC's
/// identity rather than a MAC to set, is met by the match and not compared
/// against the MAC the NIC has now (a bond port's is its bond's). One not
/// found stays as written and shows as missing.
fn found_by_mac(desired: &J, actual: &J) -> J {
    let live = list(actual, &["interfaces"]);
    let mut renames: Vec<(String, String)> = Vec::new();
    let mut out = desired.clone();
    let Some(ifaces) = out.get_mut("interfaces").and_then(J::as_array_mut) else {
        return out;
    };
    for iface in ifaces.iter_mut() {
        if iface.get("identifier").and_then(J::as_str) != Some("mac-address") {
            continue;
        }
        let Some(mac) = iface
            .get("mac-address")
            .and_then(J::as_str)
            .map(str::to_ascii_uppercase)
        else {
            continue;
        };
        let Some(found) = live
            .iter()
            .find(|a| burned_in_mac(a).as_deref() == Some(&mac))
        else {
            continue;
        };
        let (live_name, _) = key(found);
        let Some(obj) = iface.as_object_mut() else {
            continue;
        };
        obj.remove("mac-address");
        let name = obj
            .get("name")
            .and_then(J::as_str)
            .unwrap_or("")
            .to_string();
        if name != live_name {
            obj.insert("name".into(), J::String(live_name.clone()));
            renames.push((name, live_name));
        }
    }
    if renames.is_empty() {
        return out;
    }
    let renamed = |v: &mut J| {
        if let Some(to) = v
            .as_str()
            .and_then(|n| renames.iter().find(|(from, _)| from == n))
        {
            *v = J::String(to.1.clone());
        }
    };
    for iface in ifaces.iter_mut() {
        for path in [
            &["link-aggregation", "port"][..],
            &["bridge", "port"],
            &["controller"],
            &["vlan", "base-iface"],
        ] {
            let mut at = Some(&mut *iface);
            for p in path {
                at = at.and_then(|v| v.get_mut(*p));
            }
            match at {
                Some(J::Array(items)) => {
                    for item in items {
                        match item.get_mut("name") {
                            Some(n) => renamed(n),
                            None => renamed(item),
                        }
                    }
                }
                Some(v) => renamed(v),
                None => {}
            }
        }
    }
    if let Some(routes) = out
        .get_mut("routes")
        .and_then(|r| r.get_mut("config"))
        .and_then(J::as_array_mut)
    {
        for r in routes {
            if let Some(v) = r.get_mut("next-hop-interface") {
                renamed(v);
            }
        }
    }
    out
}

/// An OVS bridge as far as the kernel can tell: it is ovsdb's, not a
/// kernel device, so what shows is that each of its ports (its internal
/// interface too) is there on the OVS datapath. Which bridge they are
/// in, and the bridge's options, the kernel does not know.
fn live_ovs_bridge(desired: &J, actual: &[&J]) -> Option<IfaceDiff> {
    if is_absent(desired) {
        return None;
    }
    let (name, kind) = key(desired);
    let wanted: Vec<&str> = list(desired, &["bridge", "port"])
        .into_iter()
        .filter_map(|p| p.get("name").and_then(J::as_str))
        .collect();
    // A system port is attached to the datapath; an internal interface
    // is the datapath's own device (not attached: it has no controller).
    let attached = |port: &&str| {
        actual.iter().any(|a| {
            a.get("name").and_then(J::as_str) == Some(*port)
                && (a.get("controller").and_then(J::as_str) == Some(crate::live::OVS_DATAPATH)
                    || a.get("type").and_then(J::as_str) == Some("ovs-interface"))
        })
    };
    if wanted.iter().all(attached) {
        return None;
    }
    let names =
        |ports: Vec<&str>| J::Array(ports.into_iter().map(|p| json!({ "name": p })).collect());
    Some(IfaceDiff {
        name,
        kind,
        change: Change::Changed,
        fields: vec![FieldChange {
            path: "bridge.port".into(),
            actual: names(wanted.iter().copied().filter(attached).collect()),
            desired: names(wanted),
            implied: false,
        }],
    })
}

/// A route as nmstate means it: `table-id` 254 (main) or 0 is the main
/// table, as is no table at all.
fn main_table(route: &J) -> J {
    let mut r = route.clone();
    if let Some(m) = r.as_object_mut() {
        if m.get("table-id")
            .and_then(J::as_u64)
            .is_some_and(|t| t == 254 || t == 0)
        {
            m.remove("table-id");
        }
    }
    r
}

fn is_absent(v: &J) -> bool {
    v.get("state").and_then(J::as_str) == Some("absent")
}

/// Whether `route` is one that `entry` names by the fields it gives (an
/// absent-route entry names the routes to remove this way; nmstate
/// matches desired routes so too). Both in nmstate's canonical form.
pub fn route_matches(entry: &J, route: &J) -> bool {
    entry.as_object().is_some_and(|m| {
        m.iter()
            .filter(|(k, _)| k.as_str() != "state")
            .all(|(k, v)| route.get(k) == Some(v))
    })
}

fn short(v: &J) -> String {
    match v {
        J::String(s) => s.clone(),
        J::Null => "(unset)".into(),
        v => v.to_string(),
    }
}

/// The readable form: `+` added, `-` removed, `~` changed.
pub fn render_text(d: &Diff) -> String {
    let mut s = String::new();
    for i in &d.interfaces {
        let sign = match i.change {
            Change::Added => '+',
            Change::Removed => '-',
            Change::Changed => '~',
        };
        s.push_str(&format!("{sign} {} ({})\n", i.name, i.kind));
        for f in &i.fields {
            let desired = match (f.implied, &f.desired) {
                (true, v) => format!("(unset: {})", short(v)),
                (false, J::Null) if !f.actual.is_null() => "(unset: the device's own)".into(),
                (false, v) => short(v),
            };
            s.push_str(&format!(
                "    {}: {} -> {desired}\n",
                f.path,
                short(&f.actual),
            ));
        }
    }
    for (title, l) in [
        ("route", &d.routes),
        ("dns server", &d.dns_servers),
        ("dns search", &d.dns_search),
    ] {
        for a in &l.added {
            s.push_str(&format!("+ {title} {}\n", short(a)));
        }
        for r in &l.removed {
            s.push_str(&format!("- {title} {}\n", short(r)));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spelling_differences_are_not_changes() {
        let a = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "mtu": "1500"}]});
        let b = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "mtu": 1500}]});
        assert!(diff(&a, &b).unwrap().equal);
    }

    /// The main table by number (254, or 0) is the main table unnamed;
    /// another table is another route.
    #[test]
    fn a_route_in_the_main_table_is_one_route_however_it_is_named() {
        let route = |table: Option<u64>| {
            let mut r = json!({"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "eth0"});
            if let Some(t) = table {
                r["table-id"] = json!(t);
            }
            json!({"interfaces": [], "routes": {"config": [r]}})
        };
        for how in [Actual::Complete, Actual::Live] {
            assert!(
                diff_with(&route(Some(254)), &route(None), how)
                    .unwrap()
                    .equal
            );
            assert!(
                diff_with(&route(None), &route(Some(254)), how)
                    .unwrap()
                    .equal
            );
            assert!(
                diff_with(&route(Some(0)), &route(Some(254)), how)
                    .unwrap()
                    .equal
            );
            assert!(
                !diff_with(&route(Some(100)), &route(None), how)
                    .unwrap()
                    .equal
            );
        }
    }

    #[test]
    fn live_comparison_checks_absent_routes_and_interfaces_and_not_dns() {
        let desired = json!({
            "interfaces": [{"name": "eth0.130", "type": "vlan", "state": "absent"}],
            "dns-resolver": {"config": {"server": ["10.0.0.1"]}},
            "routes": {"config": [
                {"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.254", "next-hop-interface": "eth0"},
                {"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "eth0", "state": "absent"}
            ]}
        });
        let new_route = json!({"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.254", "next-hop-interface": "eth0"});
        let old_route = json!({"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "eth0"});
        let live = |routes: Vec<J>| json!({"interfaces": [], "routes": {"config": routes}});
        let done = diff_with(&desired, &live(vec![new_route.clone()]), Actual::Live).unwrap();
        assert!(done.equal, "{}", render_text(&done));
        let stale = diff_with(
            &desired,
            &live(vec![new_route, old_route.clone()]),
            Actual::Live,
        )
        .unwrap();
        assert!(!stale.equal);
        assert_eq!(
            stale.routes.removed,
            vec![canonical(&live(vec![old_route]), "x").unwrap()["routes"]["config"][0].clone()]
        );
    }

    /// The kernel lists a bond's ports in its own order, and keeps the
    /// link of a NIC NetworkManager deactivated up: neither is a change.
    #[test]
    fn live_port_order_and_a_deactivated_nic_are_not_changes() {
        let desired = json!({"interfaces": [
            {"name": "bond0", "type": "bond", "link-aggregation": {"mode": "802.3ad", "port": ["eth0", "dummy0"]}},
            {"name": "eth1", "type": "ethernet", "state": "down"}
        ]});
        let live = json!({"interfaces": [
            {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "802.3ad", "port": ["dummy0", "eth0"]}},
            {"name": "eth1", "type": "ethernet", "state": "up"}
        ]});
        let d = diff_with(&desired, &live, Actual::Live).unwrap();
        assert!(d.equal, "{}", render_text(&d));
        // A missing port still is one; a complete comparison keeps order.
        let short = json!({"interfaces": [
            {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "802.3ad", "port": ["eth0"]}},
            {"name": "eth1", "type": "ethernet", "state": "up"}
        ]});
        assert!(!diff_with(&desired, &short, Actual::Live).unwrap().equal);
    }

    /// NICs bound by MAC are found live by their permanent MAC, whatever
    /// the kernel named them and whatever MAC their bond gave them; bound
    /// by name, the same live state is a bond without its ports.
    #[test]
    fn live_nics_bound_by_mac_are_found_by_permanent_mac_under_any_name() {
        let bound = |identifier: bool| {
            let nic = |name: &str, mac: &str| {
                let mut n = json!({"name": name, "type": "ethernet", "state": "up"});
                if identifier {
                    n["identifier"] = json!("mac-address");
                    n["mac-address"] = json!(mac);
                    n["profile-name"] = json!(name);
                }
                n
            };
            json!({"interfaces": [
                nic("eno1", "52:54:00:61:00:01"),
                nic("eno2", "52:54:00:61:00:02"),
                {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "active-backup", "port": ["eno1", "eno2"]}},
                {"name": "bond0.110", "type": "vlan", "state": "up", "vlan": {"base-iface": "bond0", "id": 110}}
            ], "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "bond0.110"}]}})
        };
        // net.ifnames=0: eth1 came first; both ports carry bond0's MAC.
        let live = json!({"interfaces": [
            {"name": "eth0", "type": "ethernet", "state": "up", "mac-address": "06:BA:C1:48:97:FE", "permanent-mac-address": "52:54:00:61:00:02"},
            {"name": "eth1", "type": "ethernet", "state": "up", "mac-address": "06:BA:C1:48:97:FE", "permanent-mac-address": "52:54:00:61:00:01"},
            {"name": "bond0", "type": "bond", "state": "up", "mac-address": "06:BA:C1:48:97:FE", "link-aggregation": {"mode": "active-backup", "port": ["eth0", "eth1"]}},
            {"name": "bond0.110", "type": "vlan", "state": "up", "vlan": {"base-iface": "bond0", "id": 110}}
        ], "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "bond0.110"}]}});
        let d = diff_with(&bound(true), &live, Actual::Live).unwrap();
        assert!(d.equal, "{}", render_text(&d));
        let by_name = diff_with(&bound(false), &live, Actual::Live).unwrap();
        assert!(!by_name.equal);
        let missing: Vec<&str> = by_name
            .interfaces
            .iter()
            .filter(|i| i.change == Change::Added)
            .map(|i| i.name.as_str())
            .collect();
        assert_eq!(missing, ["eno1", "eno2"], "{}", render_text(&by_name));
        // A NIC whose MAC is nowhere live is missing, bound or not.
        let gone = live
            .to_string()
            .replace("52:54:00:61:00:02", "52:54:00:61:00:09");
        let d = diff_with(
            &bound(true),
            &serde_json::from_str(&gone).unwrap(),
            Actual::Live,
        )
        .unwrap();
        assert!(!d.equal);
    }

    /// An OVS bridge is ovsdb's: live, it is its ports attached to the
    /// datapath, and its internal interface a kernel device.
    #[test]
    fn live_ovs_bridge_is_its_ports_on_the_datapath() {
        let desired = json!({"interfaces": [
            {"name": "br-ex", "type": "ovs-bridge", "bridge": {"port": [{"name": "enp2s0"}, {"name": "br-ex"}]}},
            {"name": "br-ex", "type": "ovs-interface", "ipv4": {"enabled": true, "address": [
                {"ip": "192.168.110.10", "prefix-length": 24}, {"ip": "169.254.0.2", "prefix-length": 17}]}}
        ]});
        let live = |enp2s0: J| {
            json!({"interfaces": [
                enp2s0,
                {"name": "br-ex", "type": "ovs-interface", "state": "up",
                 "ipv4": {"enabled": true, "address": [{"ip": "169.254.0.2", "prefix-length": 17}, {"ip": "192.168.110.10", "prefix-length": 24}]}}
            ]})
        };
        // The kernel's address order is not the desired one: not a change.
        let attached = live(
            json!({"name": "enp2s0", "type": "ethernet", "state": "up", "controller": "ovs-system"}),
        );
        let d = diff_with(&desired, &attached, Actual::Live).unwrap();
        assert!(d.equal, "{}", render_text(&d));
        let loose = live(json!({"name": "enp2s0", "type": "ethernet", "state": "up"}));
        let d = diff_with(&desired, &loose, Actual::Live).unwrap();
        assert!(!d.equal);
        assert_eq!(
            render_text(&d),
            "~ br-ex (ovs-bridge)\n    bridge.port: [{\"name\":\"br-ex\"}] -> [{\"name\":\"enp2s0\"},{\"name\":\"br-ex\"}]\n"
        );
        // Without its internal interface, neither bridge nor address.
        let none = json!({"interfaces": [{"name": "enp2s0", "type": "ethernet", "state": "up", "controller": "ovs-system"}]});
        let d = diff_with(&desired, &none, Actual::Live).unwrap();
        let text = render_text(&d);
        assert!(
            text.contains("+ br-ex (ovs-interface)") && text.contains("~ br-ex (ovs-bridge)"),
            "{text}"
        );
        // A missing address still is one.
        let short = json!({"interfaces": [
            {"name": "enp2s0", "type": "ethernet", "state": "up", "controller": "ovs-system"},
            {"name": "br-ex", "type": "ovs-interface", "state": "up",
             "ipv4": {"enabled": true, "address": [{"ip": "192.168.110.10", "prefix-length": 24}]}}
        ]});
        assert!(!diff_with(&desired, &short, Actual::Live).unwrap().equal);
    }

    #[test]
    fn added_removed_changed() {
        let desired = json!({"interfaces": [
            {"name": "eth0", "type": "ethernet", "mtu": 9000},
            {"name": "eth0.120", "type": "vlan", "vlan": {"base-iface": "eth0", "id": 120}}
        ]});
        let actual = json!({"interfaces": [
            {"name": "eth0", "type": "ethernet", "mtu": 1500},
            {"name": "eth1", "type": "ethernet"}
        ]});
        let d = diff(&desired, &actual).unwrap();
        assert!(!d.equal);
        let by_name = |n: &str| d.interfaces.iter().find(|i| i.name == n).unwrap();
        assert_eq!(by_name("eth0.120").change, Change::Added);
        assert_eq!(by_name("eth1").change, Change::Removed);
        let eth0 = by_name("eth0");
        assert_eq!(eth0.change, Change::Changed);
        assert_eq!(
            eth0.fields,
            vec![FieldChange {
                path: "mtu".into(),
                actual: json!(1500),
                desired: json!(9000),
                implied: false,
            }]
        );
        let text = render_text(&d);
        assert!(
            text.contains("~ eth0 (ethernet)\n    mtu: 1500 -> 9000"),
            "{text}"
        );
        assert!(text.contains("+ eth0.120 (vlan)"), "{text}");
        assert!(text.contains("- eth1 (ethernet)"), "{text}");
    }

    fn bond(options: J) -> J {
        json!({"interfaces": [{"name": "bond0", "type": "bond", "state": "up",
            "ipv4": {"enabled": false}, "ipv6": {"enabled": false},
            "link-aggregation": {"mode": "802.3ad", "port": ["eno1", "eno2"], "options": options}}]})
    }

    /// A bond option one side leaves out means its default there: a
    /// removed `lacp_rate: fast` is a change to `slow`, a removed
    /// `lacp_rate: slow` none.
    #[test]
    fn a_field_left_out_is_compared_as_the_value_a_new_profile_gets() {
        let old = bond(json!({"lacp_rate": "fast", "xmit_hash_policy": "layer3+4", "miimon": 100}));
        let new = bond(json!({"miimon": 100}));
        let d = diff(&new, &old).unwrap();
        assert!(!d.equal);
        let fields: Vec<(&str, &J, &J, bool)> = d.interfaces[0]
            .fields
            .iter()
            .map(|f| (f.path.as_str(), &f.actual, &f.desired, f.implied))
            .collect();
        assert_eq!(
            fields,
            vec![
                (
                    "link-aggregation.options.lacp_rate",
                    &json!("fast"),
                    &json!("slow"),
                    true
                ),
                (
                    "link-aggregation.options.xmit_hash_policy",
                    &json!("layer3+4"),
                    &json!("layer2"),
                    true
                ),
            ]
        );
        let text = render_text(&d);
        assert!(
            text.contains("link-aggregation.options.lacp_rate: fast -> (unset: slow)"),
            "{text}"
        );
        // Removed, the defaults themselves change nothing; added, neither.
        let defaults = bond(json!({"lacp_rate": "slow", "miimon": 100}));
        assert!(diff(&bond(json!({})), &defaults).unwrap().equal);
        assert!(diff(&defaults, &bond(json!({}))).unwrap().equal);
    }

    /// `[ipv4] method=disabled` imported beside a state that leaves ipv4
    /// out: the same to nmstate; `state: up` likewise. An MTU left out
    /// depends on the device: a change with no value to set.
    #[test]
    fn defaults_left_out_are_no_change_and_device_defaults_are_unknown() {
        let plain = json!({"interfaces": [{"name": "eth0", "type": "ethernet"}]});
        let spelled = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "state": "up",
            "ipv4": {"enabled": false}, "ipv6": {"enabled": false}}]});
        assert!(diff(&plain, &spelled).unwrap().equal);
        assert!(diff(&spelled, &plain).unwrap().equal);
        let mtu = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "mtu": 9000}]});
        let d = diff(&plain, &mtu).unwrap();
        let f = &d.interfaces[0].fields[0];
        assert_eq!(
            (f.path.as_str(), &f.desired, f.implied),
            ("mtu", &J::Null, false)
        );
        assert!(f.left_out());
        // Live, what desired leaves out is left as it is.
        assert!(diff_with(&plain, &mtu, Actual::Live).unwrap().equal);
    }

    /// A NodeNetworkState holds more than the node was given: a VIP beside
    /// its address, a patch port on br-ex, DHCP's address, IPv6 it was
    /// left to, its loopback and learned routes. None of that is drift; a
    /// bond option set by hand is, where its default is known.
    #[test]
    fn a_running_node_is_held_to_what_desired_says_and_known_defaults() {
        let desired = json!({"interfaces": [
            {"name": "br-ex", "type": "ovs-bridge", "state": "up", "bridge": {"port": [{"name": "eno1"}, {"name": "br-ex"}]}},
            {"name": "br-ex", "type": "ovs-interface", "state": "up",
             "ipv4": {"enabled": true, "address": [{"ip": "10.0.0.10", "prefix-length": 24}]}},
            {"name": "bond0", "type": "bond", "state": "up", "link-aggregation": {"mode": "802.3ad", "port": ["eno2", "eno3"]}},
            {"name": "eno4", "type": "ethernet", "state": "up", "ipv4": {"enabled": true, "dhcp": true}}
        ]});
        let running = |lacp_rate: &str| {
            json!({"interfaces": [
            {"name": "lo", "type": "loopback", "state": "up"},
            {"name": "br-ex", "type": "ovs-bridge", "state": "up", "bridge": {"port": [
                {"name": "br-ex"}, {"name": "eno1"}, {"name": "patch-br-ex_node-to-br-int"}]}},
            {"name": "br-ex", "type": "ovs-interface", "state": "up", "mtu": 1500,
             "ipv4": {"enabled": true, "dhcp": false, "address": [
                {"ip": "10.0.0.10", "prefix-length": 24}, {"ip": "10.0.0.5", "prefix-length": 32}]},
             "ipv6": {"enabled": true, "autoconf": true, "dhcp": true}},
            {"name": "bond0", "type": "bond", "state": "up", "mtu": 1500, "link-aggregation": {
                "mode": "802.3ad", "port": ["eno3", "eno2"],
                "options": {"lacp_rate": lacp_rate, "miimon": 100, "ad_select": "stable"}}},
            {"name": "eno4", "type": "ethernet", "state": "up",
             "ipv4": {"enabled": true, "dhcp": true, "address": [{"ip": "10.9.0.7", "prefix-length": 24}]}}
        ], "routes": {"config": [{"destination": "10.8.0.0/16", "next-hop-address": "10.9.0.1", "next-hop-interface": "eno4"}]}})
        };
        let d = diff_with(&desired, &running("slow"), Actual::Running).unwrap();
        assert!(d.equal, "{}", render_text(&d));
        let d = diff_with(&desired, &running("fast"), Actual::Running).unwrap();
        assert_eq!(
            render_text(&d),
            "~ bond0 (bond)\n    link-aggregation.options.lacp_rate: fast -> (unset: slow)\n"
        );
        // An address the node lacks is drift.
        let moved = running("slow")
            .to_string()
            .replace("10.0.0.10", "10.0.0.11");
        let d = diff_with(
            &desired,
            &serde_json::from_str(&moved).unwrap(),
            Actual::Running,
        )
        .unwrap();
        assert!(!d.equal);
    }
}

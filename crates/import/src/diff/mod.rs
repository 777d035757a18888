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

mod fields;
mod live;

pub use fields::*;
use live::*;

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

#[derive(Clone, Debug, Serialize, PartialEq)]
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

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IfaceDiff {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub change: Change,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Default)]
pub struct ListDiff {
    pub added: Vec<J>,
    pub removed: Vec<J>,
}

impl ListDiff {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
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
    // Read from the value in place (`&Value` is a serde Deserializer):
    // `from_value` would take a copy of every state first.
    let parsed =
        <nmstate::NetworkState as serde::Deserialize>::deserialize(state).map_err(|e| {
            DiffError {
                side,
                message: e.to_string(),
            }
        })?;
    serde_json::to_value(&parsed).map_err(|e| DiffError {
        side,
        message: e.to_string(),
    })
}

fn key(iface: &J) -> (String, String) {
    let (name, kind) = key_ref(iface);
    (name.to_string(), kind.to_string())
}

/// [`key`], borrowed: matching interfaces compares every pair.
fn key_ref(iface: &J) -> (&str, &str) {
    let s = |k: &str| iface.get(k).and_then(J::as_str).unwrap_or("");
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
    let (name, kind) = key_ref(iface);
    others
        .iter()
        .find(|o| key_ref(o) == (name, kind))
        .or_else(|| {
            others.iter().find(|o| {
                let (n, k) = key_ref(o);
                n == name && (unknown_type(k) || unknown_type(kind))
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
mod tests;

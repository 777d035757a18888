//! How dangerous a host's change is.
//!
//! - **additive**: new interfaces, VLANs or bridges on ports nothing else
//!   uses, new routes that do not touch the default route;
//! - **modifying**: addresses, MTU, DNS or non-default routes on
//!   interfaces that carry no cluster traffic, removing unused interfaces;
//! - **disruptive**: anything that touches an interface carrying cluster
//!   traffic (the machine network and everything beneath it, the default
//!   route, br-ex, the PXE/provisioning NIC: `nodenet_check::traffic`),
//!   removing a route through one (nmstate takes the interface down and
//!   up to do it), the default route, a new bond or bridge taking a port
//!   in use, or removing an interface in use.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as J;

use nodenet_check::network::Network;
use nodenet_import::diff::{Change, Diff};
use nodenet_model::{Host, Inventory, Node};

use crate::Reason;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Additive,
    Modifying,
    Disruptive,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Additive => "additive",
            Risk::Modifying => "modifying",
            Risk::Disruptive => "disruptive",
        }
    }
}

/// One change of a host's state, with its risk.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Iface {
        name: String,
        kind: String,
        change: Change,
        risk: Risk,
    },
    /// A route added (or, with `added` false, removed), canonical.
    Route { route: J, added: bool, risk: Risk },
    /// Name servers or search domains.
    Dns { risk: Risk },
}

impl Item {
    pub fn risk(&self) -> Risk {
        match self {
            Item::Iface { risk, .. } | Item::Route { risk, .. } | Item::Dns { risk } => *risk,
        }
    }
}

fn empty() -> Node {
    Node::new(nodenet_model::Value::Null, Default::default())
}

/// For each interface of a state that others use: how (an address, a
/// VLAN on it, a port of a bond).
fn uses(state: &Node) -> BTreeMap<String, String> {
    let net = Network::read(state);
    let mut used = BTreeMap::new();
    for a in &net.addresses {
        used.entry(a.iface.clone())
            .or_insert_with(|| format!("has the address {}", a.ip));
    }
    for i in net.ifaces.iter().filter(|i| !i.absent) {
        for p in &i.ports {
            used.entry(p.name.clone())
                .or_insert_with(|| format!("is a port of `{}`", i.name));
        }
        if let Some(base) = base_iface(i.node) {
            used.entry(base)
                .or_insert_with(|| format!("carries `{}`", i.name));
        }
    }
    used
}

/// The interface a VLAN (MACVLAN, IPVLAN, VXLAN) is made on.
pub fn base_iface(iface: &Node) -> Option<String> {
    ["vlan", "mac-vlan", "mac-vtap", "ipvlan", "vxlan"]
        .iter()
        .find_map(|section| iface.get(section)?.get("base-iface")?.scalar_text())
}

fn is_default(route: &J) -> bool {
    matches!(
        route.get("destination").and_then(J::as_str),
        Some("0.0.0.0/0" | "::/0")
    )
}

fn route_text(route: &J) -> String {
    let s = |k: &str| route.get(k).and_then(J::as_str).unwrap_or("");
    let via = s("next-hop-address");
    if via.is_empty() {
        format!("{} dev {}", s("destination"), s("next-hop-interface"))
    } else {
        format!(
            "{} via {via} dev {}",
            s("destination"),
            s("next-hop-interface")
        )
    }
}

fn value_text(v: &J) -> String {
    match v {
        J::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// What a field the new inventory leaves out means for the fleet: nmstate
/// keeps what a state leaves out, so running nodes keep the old value
/// while nodes provisioned from the inventory get the default. Policies
/// carry the default where it is known, so the fleet converges; where it
/// is the device's own (an MTU), nothing can set it back.
fn left_out(fields: &[nodenet_import::diff::FieldChange]) -> String {
    let mut s = String::new();
    for f in fields.iter().filter(|f| f.left_out()) {
        let was = value_text(&f.actual);
        s.push_str(&match f.implied {
            true => format!(
                "; `{}` is left out: running nodes keep `{was}`, nodes provisioned from this inventory get `{}`, and the policy sets `{}` so that the fleet converges",
                f.path,
                value_text(&f.desired),
                value_text(&f.desired),
            ),
            false => format!(
                "; `{}` is left out: running nodes keep `{was}`, nodes provisioned from this inventory get their device's default, which no policy can set: write the value in the inventory to keep the fleet alike",
                f.path
            ),
        });
    }
    s
}

/// Each change of `diff` (old `o` → new `n`) with its risk and reason.
/// A plan tells this once for hosts of one shape (`shaped.rs`): what it
/// reads of a host beyond its states' shape is in `shaped::RiskKey`, and
/// anything more it comes to read belongs there too.
pub fn classify(
    old: &Inventory,
    o: &Host,
    new: &Inventory,
    n: &Host,
    diff: &Diff,
) -> (Vec<Item>, Vec<Reason>) {
    let null = empty();
    let old_node = o.network.as_ref().unwrap_or(&null);
    let new_node = n.network.as_ref().unwrap_or(&null);
    let mut carriers = nodenet_check::traffic::cluster_traffic(o, &old.cluster, old_node);
    for (k, v) in nodenet_check::traffic::cluster_traffic(n, &new.cluster, new_node) {
        carriers.entry(k).or_insert(v);
    }
    let used = uses(old_node);
    let new_net = Network::read(new_node);
    let mut items = Vec::new();
    let mut reasons = Vec::new();
    let mut add = |items: &mut Vec<Item>, item: Item, what: String| {
        reasons.push(Reason {
            risk: item.risk(),
            what,
        });
        items.push(item);
    };
    for i in &diff.interfaces {
        let name = &i.name;
        let (risk, what) = iface_risk(i, &carriers, &used, &new_net);
        add(
            &mut items,
            Item::Iface {
                name: name.clone(),
                kind: i.kind.clone(),
                change: match i.change {
                    Change::Added => Change::Added,
                    Change::Removed => Change::Removed,
                    Change::Changed => Change::Changed,
                },
                risk,
            },
            what,
        );
    }
    for (list, added) in [(&diff.routes.added, true), (&diff.routes.removed, false)] {
        for r in list {
            let (risk, what) = route_risk(r, added, &carriers);
            add(
                &mut items,
                Item::Route {
                    route: r.clone(),
                    added,
                    risk,
                },
                what,
            );
        }
    }
    if !diff.dns_servers.added.is_empty()
        || !diff.dns_servers.removed.is_empty()
        || !diff.dns_search.added.is_empty()
        || !diff.dns_search.removed.is_empty()
    {
        let servers: Vec<String> = diff
            .dns_servers
            .added
            .iter()
            .map(|s| format!("+{}", s.as_str().unwrap_or_default()))
            .chain(
                diff.dns_servers
                    .removed
                    .iter()
                    .map(|s| format!("-{}", s.as_str().unwrap_or_default())),
            )
            .collect();
        add(
            &mut items,
            Item::Dns {
                risk: Risk::Modifying,
            },
            format!(
                "changes name servers or search domains ({})",
                servers.join(" ")
            ),
        );
    }
    (items, reasons)
}

/// An interface's change: disruptive when it touches what carries the
/// cluster's traffic (or takes, or removes, an interface in use),
/// additive when it is new on ports nothing uses.
fn iface_risk(
    i: &nodenet_import::diff::IfaceDiff,
    carriers: &BTreeMap<String, String>,
    used: &BTreeMap<String, String>,
    new_net: &Network,
) -> (Risk, String) {
    let name = &i.name;
    match i.change {
        Change::Added => {
            // A new bond or bridge may take ports that carry traffic.
            let taken = new_net
                .ifaces
                .iter()
                .filter(|x| &x.name == name)
                .flat_map(|x| x.ports.iter())
                .find_map(|p| {
                    carriers
                        .get(&p.name)
                        .or(used.get(&p.name))
                        .map(|why| (p.name.clone(), why.clone()))
                });
            // A VLAN (or another link) on an interface in use shares
            // its ports with what already runs there.
            let shared = new_net
                .ifaces
                .iter()
                .filter(|x| &x.name == name)
                .find_map(|x| base_iface(x.node))
                .and_then(|base| {
                    carriers
                        .get(&base)
                        .or(used.get(&base))
                        .map(|why| (base, why.clone()))
                });
            match (carriers.get(name), taken, shared) {
                (Some(why), _, _) => (Risk::Disruptive, format!("adds `{name}`, which {why}")),
                (None, Some((port, why)), _) => (
                    Risk::Disruptive,
                    format!("adds `{name}`, taking `{port}`, which {why}"),
                ),
                (None, None, Some((base, why))) => (
                    Risk::Modifying,
                    format!("adds `{name}` ({}) on `{base}`, which {why}", i.kind),
                ),
                (None, None, None) => (
                    Risk::Additive,
                    format!("adds `{name}` ({}) on ports nothing else uses", i.kind),
                ),
            }
        }
        Change::Removed => match (carriers.get(name), used.get(name)) {
            (Some(why), _) => (Risk::Disruptive, format!("removes `{name}`, which {why}")),
            (None, Some(how)) => (
                Risk::Disruptive,
                format!("removes `{name}`, which is in use: it {how}"),
            ),
            (None, None) => (Risk::Modifying, format!("removes unused `{name}`")),
        },
        Change::Changed => {
            let fields: Vec<&str> = i.fields.iter().map(|f| f.path.as_str()).collect();
            let (risk, mut what) = match carriers.get(name) {
                Some(why) => (
                    Risk::Disruptive,
                    format!("changes {} of `{name}`, which {why}", fields.join(", ")),
                ),
                None => (
                    Risk::Modifying,
                    format!(
                        "changes {} of `{name}`, which carries no cluster traffic",
                        fields.join(", ")
                    ),
                ),
            };
            what.push_str(&left_out(&i.fields));
            (risk, what)
        }
    }
}

/// What removing a route through `via` does on the node (see
/// [`route_risk`]).
fn down_and_up(via: &str) -> String {
    format!("nmstate takes `{via}` down and up to remove it (NetworkManager before 1.52 cannot by reapply)")
}

/// A route added or removed: the default route is disruptive either way.
/// Removing one takes its interface down and up: nmstate deactivates a
/// profile before it removes a route from it unless NetworkManager has
/// the `sync-route-with-table` capability (1.52; nmstate's
/// `nm/query_apply/apply.rs`, `gen_nm_conn_need_to_deactivate_first`,
/// RHEL-66262), so a route removed through an interface that carries
/// cluster traffic cuts it off for as long as it takes to come back up
/// (0.10-0.36 s of pings, and a new DHCP lease, on the lab's NetworkManager
/// 1.42). Adding one is a reapply, which leaves the interface up.
fn route_risk(r: &J, added: bool, carriers: &BTreeMap<String, String>) -> (Risk, String) {
    let via = r
        .get("next-hop-interface")
        .and_then(J::as_str)
        .unwrap_or_default();
    let verb = if added { "adds" } else { "removes" };
    if is_default(r) {
        (
            Risk::Disruptive,
            format!("{verb} the default route {}", route_text(r)),
        )
    } else if added {
        let what = match carriers.get(via) {
            Some(why) => format!("adds the route {} (`{via}` {why})", route_text(r)),
            None => format!("adds the route {}", route_text(r)),
        };
        (Risk::Additive, what)
    } else {
        let how = if via.is_empty() {
            String::new()
        } else {
            format!(": {}", down_and_up(via))
        };
        match carriers.get(via) {
            Some(why) => (
                Risk::Disruptive,
                format!(
                    "removes the route {}{how}, and `{via}` {why}",
                    route_text(r)
                ),
            ),
            None => (
                Risk::Modifying,
                format!("removes the route {}{how}", route_text(r)),
            ),
        }
    }
}

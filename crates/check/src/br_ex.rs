//! OpenShift's `br-ex` contract, as RHCOS's own scripts keep it.
//!
//! OVN-Kubernetes needs an OVS bridge `br-ex` on every node, holding the
//! node's address. Either `configure-ovs.sh` makes it at boot, from the
//! interface that holds the default route, or a state under
//! `/etc/nmstate/openshift` defines it: `nmstate-configuration.sh` applies
//! that state, marks it applied, and configure-ovs then does nothing. A
//! state there without br-ex leaves the node without one. So:
//!
//! - a state written to `/etc/nmstate/openshift` must define br-ex as
//!   OpenShift documents it ([`check_contract`]);
//! - an inventory may ask for br-ex to be derived from its intent
//!   ([`derive`]: what configure-ovs does, done declaratively);
//! - where configure-ovs makes it, the interface it takes over belongs to
//!   configure-ovs, and nodenet's day-2 states leave it out
//!   ([`day2_state`]).

use serde_json::{json, Map, Value as J};

use nodenet_model::{
    short_hostname, BrExSource, Cluster, Code, Diagnostic, Host, Node, Span, DEFAULT_OVN_MASQUERADE,
};

use crate::network::{Family, Network};

/// Where OpenShift's br-ex-by-NMState states live on a node.
pub const OPENSHIFT_DIR: &str = "/etc/nmstate/openshift";
/// Where nodenet's own day-2 states live on a node (applied by
/// `nodenet-apply.service` only: one file, one applier).
pub const NODENET_DIR: &str = "/etc/nodenet/nmstate";
pub const BR_EX: &str = "br-ex";
/// configure-ovs.sh's route metric for br-ex, which OpenShift's br-ex
/// example keeps (`auto-route-metric: 48`): its default route wins.
pub const BR_EX_ROUTE_METRIC: u32 = 48;

/// How br-ex comes to be on a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BrExPlan {
    /// The host has no network intent: the installer's DHCP defaults and
    /// configure-ovs.
    Nothing,
    /// The intent defines br-ex itself.
    Intent,
    /// nodenet derives it, taking over `uplink`.
    Derived { uplink: String },
    /// configure-ovs makes it at boot from one of `uplinks` (the one that
    /// holds the default route): nodenet leaves those alone.
    ConfigureOvs { uplinks: Vec<String> },
    /// No OVN-Kubernetes br-ex on these nodes (`brEx: none`): the intent
    /// is theirs whole.
    NotOpenShift,
}

impl BrExPlan {
    /// Whether `/etc/nmstate/openshift/<host>.yml` is written.
    pub fn writes_openshift_dir(&self) -> bool {
        matches!(self, BrExPlan::Intent | BrExPlan::Derived { .. })
    }
}

/// Whether a state defines any interface called br-ex. (Its names alone:
/// a plan asks this of each host's OLD and NEW states several times.)
pub fn defines_br_ex(state: &Node) -> bool {
    state
        .get("interfaces")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .any(|i| i.get("name").and_then(Node::as_str) == Some(BR_EX))
}

/// How br-ex comes to be on `host` (whole hosts only), or why it cannot be
/// derived as the inventory asks.
pub fn plan(host: &Host, cluster: &Cluster) -> Result<BrExPlan, Box<Diagnostic>> {
    let Some(state) = host.network.as_ref() else {
        return Ok(BrExPlan::Nothing);
    };
    let mode = cluster.br_ex.as_ref().map(|m| m.value);
    let defined = defines_br_ex(state);
    match (mode, defined) {
        (Some(BrExSource::None), _) => Ok(BrExPlan::NotOpenShift),
        (None, true) => Ok(BrExPlan::Intent),
        (Some(BrExSource::ConfigureOvs), true) => Err(Box::new(Diagnostic::error(
            Code::BrExInvalid,
            "`brEx: configure-ovs`, but the intent defines br-ex itself",
        )
        .at_opt(cluster.br_ex.as_ref().map(|m| m.span))
        .help("leave `brEx` out to have the intent's br-ex written under /etc/nmstate/openshift, or take br-ex out of the intent for configure-ovs to make it"))),
        (Some(BrExSource::Derive), true) => {
            let at = cluster.br_ex.as_ref().map(|m| m.span);
            Err(Box::new(Diagnostic::error(
                Code::BrExInvalid,
                "`brEx: derive`, but the intent defines br-ex itself",
            )
            .at_opt(at)
            .help("leave `brEx` out: the intent's own br-ex is written under /etc/nmstate/openshift as it is")))
        }
        (Some(BrExSource::Derive), false) => match uplink(host, cluster, state) {
            Uplink::One(name) => Ok(BrExPlan::Derived { uplink: name }),
            Uplink::Unknown(why) => Err(Box::new(Diagnostic::error(
                Code::BrExInvalid,
                format!("cannot derive br-ex: {why}"),
            )
            .at_opt(cluster.br_ex.as_ref().map(|m| m.span))
            .help("name the interface br-ex takes over with `brExUplink: <interface>` on the host or its template"))),
        },
        (_, false) => Ok(BrExPlan::ConfigureOvs {
            uplinks: match uplink(host, cluster, state) {
                Uplink::One(name) => vec![name],
                Uplink::Unknown(_) => dynamic_interfaces(state),
            },
        }),
    }
}

/// The interface configure-ovs would put under br-ex.
enum Uplink {
    One(String),
    Unknown(String),
}

/// What configure-ovs.sh takes: the interface of the default route, else
/// the one with the node's address (in a machine network), else the one
/// interface that gets an address by DHCP. `brExUplink` says it outright.
fn uplink(host: &Host, cluster: &Cluster, state: &Node) -> Uplink {
    if let Some(u) = &host.br_ex_uplink {
        return Uplink::One(u.value.clone());
    }
    let via = crate::network::default_route_interfaces(state);
    match via.as_slice() {
        [one] => return Uplink::One(one.clone()),
        [] => {}
        many => {
            return Uplink::Unknown(format!(
                "default routes leave through {}",
                many.join(" and ")
            ))
        }
    }
    let net = Network::read(state);
    let mut in_machine: Vec<String> = Vec::new();
    for a in &net.addresses {
        if cluster
            .machine_networks
            .iter()
            .any(|m| m.value.contains(&a.ip))
            && !in_machine.contains(&a.iface)
        {
            in_machine.push(a.iface.clone());
        }
    }
    match in_machine.as_slice() {
        [one] => return Uplink::One(one.clone()),
        [] => {}
        many => {
            return Uplink::Unknown(format!(
                "{} all hold machine-network addresses",
                many.join(" and ")
            ))
        }
    }
    match dynamic_interfaces(state).as_slice() {
        [one] => Uplink::One(one.clone()),
        [] => Uplink::Unknown(
            "no interface holds a default route, a machine-network address or DHCP".into(),
        ),
        many => Uplink::Unknown(format!(
            "{} all get addresses by DHCP and no default route tells them apart",
            many.join(" and ")
        )),
    }
}

/// Interfaces that get an address by DHCP or autoconf.
fn dynamic_interfaces(state: &Node) -> Vec<String> {
    let net = Network::read(state);
    let mut out: Vec<String> = Vec::new();
    for i in &net.ifaces {
        if !i.absent
            && (i.family_dynamic(Family::V4) || i.family_dynamic(Family::V6))
            && !out.contains(&i.name)
        {
            out.push(i.name.clone());
        }
    }
    out
}

/// Checks a br-ex definition as OpenShift needs it, in a state that RHCOS
/// applies from `/etc/nmstate/openshift` (`written_to`: that file, for the
/// messages). `whole`: the state is a whole host's (its machine-network
/// address must then be on br-ex).
pub fn check_contract(
    state: &Node,
    written_to: &str,
    cluster: &Cluster,
    at: Span,
    out: &mut Vec<Diagnostic>,
) {
    let net = Network::read(state);
    let bridge = net
        .ifaces
        .iter()
        .find(|i| i.name == BR_EX && i.is("ovs-bridge") && !i.absent);
    let internal = net
        .ifaces
        .iter()
        .find(|i| i.name == BR_EX && i.is("ovs-interface") && !i.absent);
    if bridge.is_none() && internal.is_none() {
        out.push(
            Diagnostic::error(
                Code::BrExMissing,
                format!("{written_to} defines no br-ex: RHCOS applies it and marks it applied, configure-ovs.sh then skips (\"Skipping configure-ovs due to manual network configuration\"), and the node has no br-ex for OVN-Kubernetes"),
            )
            .at(at)
            .help("define br-ex in the state (an ovs-bridge `br-ex` with the uplink and `br-ex` as ports, an ovs-interface `br-ex` with the node's addresses and `copy-mac-from` the uplink), or do not write the state there: day-1 networking goes through install-config/agent-config and configure-ovs makes br-ex"),
        );
        return;
    }
    let mut uplinks: Vec<String> = Vec::new();
    match bridge {
        None => out.push(
            Diagnostic::error(
                Code::BrExInvalid,
                format!("{written_to} defines an ovs-interface br-ex but no ovs-bridge br-ex for it"),
            )
            .at(internal.map(|i| i.name_span()).unwrap_or(at))
            .help("add `{name: br-ex, type: ovs-bridge, bridge: {port: [{name: <uplink>}, {name: br-ex}]}}`"),
        ),
        Some(b) => {
            let ports_at = b
                .get("bridge")
                .and_then(|br| br.get("port").or(br.get("ports")))
                .map(|p| p.span)
                .unwrap_or(b.name_span());
            if !b.ports.iter().any(|p| p.name == BR_EX) {
                out.push(
                    Diagnostic::error(
                        Code::BrExInvalid,
                        "the ovs-bridge br-ex does not list its own interface `br-ex` as a port",
                    )
                    .at(ports_at)
                    .help("add `- name: br-ex` to `bridge.port`: the ovs-interface br-ex is the bridge's port that holds the node's address"),
                );
            }
            uplinks = b
                .ports
                .iter()
                .filter(|p| p.name != BR_EX)
                .map(|p| p.name.clone())
                .collect();
            if uplinks.is_empty() {
                out.push(
                    Diagnostic::error(
                        Code::BrExInvalid,
                        "the ovs-bridge br-ex has no uplink port: the node's traffic cannot leave it",
                    )
                    .at(ports_at)
                    .help("add the interface that carries the machine network (a NIC, bond or VLAN) to `bridge.port`"),
                );
            }
        }
    }
    let Some(internal) = internal else {
        out.push(
            Diagnostic::error(
                Code::BrExInvalid,
                format!("{written_to} defines the ovs-bridge br-ex but no ovs-interface br-ex: nothing holds the node's address"),
            )
            .at(bridge.map(|b| b.name_span()).unwrap_or(at))
            .help("add `{name: br-ex, type: ovs-interface, copy-mac-from: <uplink>, ipv4: {...}}` with the node's addresses"),
        );
        return;
    };
    if !internal.family_enabled(Family::V4) && !internal.family_enabled(Family::V6) {
        out.push(
            Diagnostic::error(
                Code::BrExInvalid,
                "the ovs-interface br-ex has neither IPv4 nor IPv6 enabled: OVN-Kubernetes finds the node's address on br-ex",
            )
            .at(internal.name_span())
            .help("move the node's addresses (or `dhcp: true`) from the uplink to the ovs-interface br-ex"),
        );
    }
    for a in &net.addresses {
        if a.iface == BR_EX {
            continue;
        }
        if let Some(m) = cluster
            .machine_networks
            .iter()
            .find(|m| m.value.contains(&a.ip))
        {
            out.push(
                Diagnostic::error(
                    Code::BrExInvalid,
                    format!(
                        "the machine network {} is on `{}`, not on br-ex: OVN-Kubernetes takes the node's address from br-ex",
                        m.value, a.iface
                    ),
                )
                .at(a.span)
                .help("put the address on the ovs-interface br-ex (its uplink a port of the ovs-bridge br-ex without addresses)"),
            );
        }
    }
    match internal.get("copy-mac-from") {
        None => out.push(
            Diagnostic::warning(
                Code::BrExInvalid,
                "the ovs-interface br-ex has no `copy-mac-from`: it gets a MAC of its own, so DHCP reservations and neighbours' caches keyed on the uplink's MAC no longer match",
            )
            .at(internal.name_span())
            .help(match uplinks.first() {
                Some(u) => format!("add `copy-mac-from: {u}`, as OpenShift's br-ex does"),
                None => "add `copy-mac-from: <uplink>`, as OpenShift's br-ex does".to_string(),
            }),
        ),
        Some(src) => {
            let name = src.scalar_text().unwrap_or_default();
            if !uplinks.is_empty() && !under_any(&net, &name, &uplinks) {
                out.push(
                    Diagnostic::warning(
                        Code::BrExInvalid,
                        format!(
                            "br-ex copies the MAC of `{name}`, which is not its uplink ({})",
                            uplinks.join(", ")
                        ),
                    )
                    .at(src.span)
                    .help("copy the uplink's MAC, as configure-ovs does: the node keeps the address its NIC had"),
                );
            }
        }
    }
}

/// Whether `name` is one of `roots` or beneath one (a VLAN's base, a
/// bond's port).
fn under_any(net: &Network, name: &str, roots: &[String]) -> bool {
    let mut todo: Vec<String> = roots.to_vec();
    let mut seen: Vec<String> = Vec::new();
    while let Some(n) = todo.pop() {
        if n == name {
            return true;
        }
        if seen.contains(&n) {
            continue;
        }
        seen.push(n.clone());
        for i in net.ifaces.iter().filter(|i| i.name == n) {
            if let Some(base) = i
                .get("vlan")
                .and_then(|v| v.get("base-iface"))
                .and_then(Node::scalar_text)
            {
                todo.push(base);
            }
            todo.extend(i.ports.iter().map(|p| p.name.clone()));
        }
    }
    false
}

/// The whole-host checks of the contract: the br-ex the intent defines
/// (written under /etc/nmstate/openshift), the one derived from it, or
/// why it cannot be derived; and interfaces stacked on the interface
/// br-ex takes over (they receive nothing once it is an OVS port).
pub fn check_host(host: &Host, cluster: &Cluster, out: &mut Vec<Diagnostic>) {
    let Some(state) = host.network.as_ref() else {
        return;
    };
    let file = format!("{OPENSHIFT_DIR}/{}.yml", short_hostname(&host.name.value));
    let plan = match plan(host, cluster) {
        Ok(p) => p,
        Err(d) => {
            out.push(d.host(host.name.value.clone()));
            return;
        }
    };
    let mut found = Vec::new();
    match &plan {
        BrExPlan::Intent => check_contract(state, &file, cluster, state.span, &mut found),
        BrExPlan::Derived { uplink } => {
            let net = Network::read(state);
            let Some(u) = net.iface(uplink).filter(|i| !i.absent) else {
                found.push(
                    Diagnostic::error(
                        Code::BrExInvalid,
                        format!("cannot derive br-ex: its uplink `{uplink}` is not an interface of the state"),
                    )
                    .at(host.br_ex_uplink.as_ref().map(|u| u.span).unwrap_or(state.span)),
                );
                out.extend(found.into_iter().map(|d| d.host(host.name.value.clone())));
                return;
            };
            if !u.family_enabled(Family::V4) && !u.family_enabled(Family::V6) {
                found.push(
                    Diagnostic::error(
                        Code::BrExInvalid,
                        format!("cannot derive br-ex from `{uplink}`: it has no IP configuration to move onto br-ex"),
                    )
                    .at(u.name_span())
                    .help("br-ex takes over the interface that holds the node's address; name it with `brExUplink`"),
                );
            }
            if net.controller_of(uplink).is_some() {
                found.push(
                    Diagnostic::error(
                        Code::BrExInvalid,
                        format!("cannot derive br-ex from `{uplink}`: it is a port of another controller"),
                    )
                    .at(u.name_span()),
                );
            }
            for i in &net.ifaces {
                let base = i
                    .get("vlan")
                    .and_then(|v| v.get("base-iface"))
                    .and_then(Node::scalar_text);
                if !i.absent && base.as_deref() == Some(uplink.as_str()) {
                    found.push(
                        Diagnostic::warning(
                            Code::BrExInvalid,
                            format!("`{}` sits on `{uplink}`, which becomes a port of br-ex: once OVS takes `{uplink}`'s frames, `{}` receives nothing", i.name, i.name),
                        )
                        .at(i.name_span())
                        .help("put the VLAN on what lies beneath the uplink (its bond or NIC), or take another uplink"),
                    );
                }
            }
        }
        _ => {}
    }
    out.extend(found.into_iter().map(|d| d.host(host.name.value.clone())));
}

/// The intent with br-ex derived as configure-ovs.sh would make it:
/// `uplink` becomes the port of an ovs-bridge `br-ex` (its addresses
/// gone), an ovs-interface `br-ex` takes its IP configuration, MTU and
/// MAC (`copy-mac-from`), with route metric 48 for what it learns by
/// DHCP/autoconf; routes through `uplink` go through br-ex.
pub fn derive(state: &J, uplink: &str) -> J {
    let mut out = state.clone();
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let mut ip_blocks = Map::new();
    let mut mtu = None;
    if let Some(J::Array(ifaces)) = obj.get_mut("interfaces") {
        for iface in ifaces.iter_mut() {
            if iface["name"] != uplink || iface["state"] == "absent" {
                continue;
            }
            let Some(i) = iface.as_object_mut() else {
                continue;
            };
            for fam in ["ipv4", "ipv6"] {
                if let Some(block) = i.insert(fam.into(), json!({"enabled": false})) {
                    ip_blocks.insert(fam.to_string(), block);
                }
            }
            mtu = i.get("mtu").cloned();
        }
        let mut internal = Map::new();
        internal.insert("name".into(), json!(BR_EX));
        internal.insert("type".into(), json!("ovs-interface"));
        internal.insert("state".into(), json!("up"));
        internal.insert("copy-mac-from".into(), json!(uplink));
        if let Some(m) = mtu {
            internal.insert("mtu".into(), m);
        }
        for fam in ["ipv4", "ipv6"] {
            let mut block = ip_blocks
                .remove(fam)
                .unwrap_or_else(|| json!({"enabled": false}));
            if let Some(b) = block.as_object_mut() {
                let dynamic = b.get("dhcp") == Some(&J::Bool(true))
                    || b.get("autoconf") == Some(&J::Bool(true));
                if dynamic && !b.contains_key("auto-route-metric") {
                    b.insert("auto-route-metric".into(), json!(BR_EX_ROUTE_METRIC));
                }
            }
            internal.insert(fam.into(), block);
        }
        ifaces.push(json!({
            "name": BR_EX,
            "type": "ovs-bridge",
            "state": "up",
            "ipv4": {"enabled": false, "dhcp": false},
            "ipv6": {"enabled": false, "dhcp": false},
            "bridge": {
                "options": {"mcast-snooping-enable": true},
                "port": [{"name": uplink}, {"name": BR_EX}],
            },
        }));
        ifaces.push(J::Object(internal));
    }
    if let Some(J::Array(routes)) = obj.get_mut("routes").and_then(|r| r.get_mut("config")) {
        for r in routes.iter_mut() {
            if r["next-hop-interface"] == uplink {
                r["next-hop-interface"] = json!(BR_EX);
            }
        }
    }
    out
}

/// nmstate's verdict on the br-ex nodenet derives for `host` (an error
/// when nmstate rejects it); the MAC br-ex copies is pinned as the
/// inventory knows it, as for the intent.
pub fn judge_derived(host: &Host, cluster: &Cluster) -> Option<Diagnostic> {
    let Ok(BrExPlan::Derived { uplink }) = plan(host, cluster) else {
        return None;
    };
    let mut state = derive(&host.network.as_ref()?.to_json(), &uplink);
    // Offline, nmstate cannot read the MAC to copy: pinned where the
    // inventory knows it, else left to the node (which resolves it live).
    let mac = mac_behind(host, &state, &uplink);
    if let Some(J::Array(ifaces)) = state.get_mut("interfaces") {
        for i in ifaces.iter_mut() {
            if i["name"] == BR_EX && i["type"] == "ovs-interface" {
                if let Some(o) = i.as_object_mut() {
                    o.remove("copy-mac-from");
                    if let Some(mac) = &mac {
                        o.insert("mac-address".into(), json!(mac.to_ascii_uppercase()));
                    }
                }
            }
        }
    }
    let judged = crate::nmstate_bridge::judge_cached(&state);
    let why = judged.result.err()?;
    Some(
        Diagnostic::error(
            Code::BrExInvalid,
            format!("nmstate rejects the br-ex derived from `{uplink}`: {why}"),
        )
        .at_opt(
            host.br_ex_uplink
                .as_ref()
                .map(|u| u.span)
                .or(cluster.br_ex.as_ref().map(|m| m.span)),
        )
        .host(host.name.value.clone()),
    )
}

/// The MAC an interface has when it is up, as far as the inventory knows:
/// a NIC's own, a VLAN's base's, a bond's first port's (the kernel gives
/// a bond the MAC of the port it takes first).
pub fn mac_behind(host: &Host, state: &J, name: &str) -> Option<String> {
    let mut name = name.to_string();
    for _ in 0..8 {
        if let Some(m) = host.mac_of(&name) {
            return Some(m.value.clone());
        }
        let iface = state["interfaces"]
            .as_array()?
            .iter()
            .find(|i| i["name"] == name.as_str() && i["type"] != "ovs-bridge")?;
        if let Some(m) = iface["mac-address"].as_str() {
            return Some(m.to_string());
        }
        name = if let Some(base) = iface["vlan"]["base-iface"].as_str() {
            base.to_string()
        } else if let Some(first) = iface["link-aggregation"]["port"]
            .as_array()
            .and_then(|p| p.first())
            .and_then(J::as_str)
        {
            first.to_string()
        } else {
            return None;
        };
    }
    None
}

/// The state with br-ex that goes to `/etc/nmstate/openshift/<host>.yml`
/// (the intent's own br-ex, or the one derived), `None` when that file is
/// not written.
pub fn openshift_state(host: &Host, plan: &BrExPlan) -> Option<J> {
    let state = host.network.as_ref()?.to_json();
    match plan {
        BrExPlan::Intent => Some(state),
        BrExPlan::Derived { uplink } => Some(derive(&state, uplink)),
        _ => None,
    }
}

/// What nodenet applies on a running node for `host` (nodenet's own
/// directory, kubernetes-nmstate policies): where br-ex is the state's,
/// the state with br-ex, which also keeps OVN-Kubernetes' masquerade
/// addresses on br-ex (OpenShift's rule for day-2 br-ex changes: nmstate
/// would remove addresses a state does not list); where configure-ovs
/// makes br-ex, the state without the interface it takes over and the
/// routes through it.
pub fn day2_state(host: &Host, cluster: &Cluster, plan: &BrExPlan) -> Option<J> {
    let state = host.network.as_ref()?.to_json();
    Some(match plan {
        BrExPlan::Nothing => return None,
        BrExPlan::Intent => with_masquerade(state, cluster),
        BrExPlan::Derived { uplink } => with_masquerade(derive(&state, uplink), cluster),
        BrExPlan::ConfigureOvs { uplinks } => without(state, uplinks),
        BrExPlan::NotOpenShift => state,
    })
}

/// OVN-Kubernetes' masquerade addresses of br-ex (the cluster's, else
/// the defaults of 4.17 and later): the same on every node.
pub fn masquerade(cluster: &Cluster) -> Vec<ipnet::IpNet> {
    if cluster.ovn_masquerade.is_empty() {
        DEFAULT_OVN_MASQUERADE
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect()
    } else {
        cluster.ovn_masquerade.iter().map(|m| m.value).collect()
    }
}

/// An address every node may have at once: OVN-Kubernetes' masquerade
/// address on br-ex, or a link-local one.
pub fn shared_by_design(cluster: &Cluster, ip: &std::net::IpAddr) -> bool {
    let link_local = match ip {
        std::net::IpAddr::V4(v4) => v4.is_link_local(),
        std::net::IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    link_local || masquerade(cluster).iter().any(|m| m.addr() == *ip)
}

/// The masquerade addresses of br-ex, one per family br-ex has enabled.
fn with_masquerade(mut state: J, cluster: &Cluster) -> J {
    let masquerade = masquerade(cluster);
    if let Some(J::Array(ifaces)) = state.get_mut("interfaces") {
        for iface in ifaces.iter_mut() {
            if iface["name"] != BR_EX || iface["type"] != "ovs-interface" {
                continue;
            }
            for m in &masquerade {
                let fam = if m.addr().is_ipv4() { "ipv4" } else { "ipv6" };
                let Some(block) = iface.get_mut(fam).and_then(J::as_object_mut) else {
                    continue;
                };
                if block.get("enabled") != Some(&J::Bool(true)) {
                    continue;
                }
                let list = block
                    .entry("address")
                    .or_insert_with(|| J::Array(Vec::new()));
                if let J::Array(addrs) = list {
                    let ip = m.addr().to_string();
                    if !addrs.iter().any(|a| a["ip"] == ip.as_str()) {
                        addrs.push(json!({"ip": ip, "prefix-length": m.prefix_len()}));
                    }
                }
            }
        }
    }
    state
}

/// The state without the interfaces in `names` and the routes through
/// them.
fn without(mut state: J, names: &[String]) -> J {
    let gone = |v: &J| v.as_str().is_some_and(|n| names.iter().any(|x| x == n));
    if let Some(J::Array(ifaces)) = state.get_mut("interfaces") {
        ifaces.retain(|i| !gone(&i["name"]));
    }
    if let Some(J::Array(routes)) = state.get_mut("routes").and_then(|r| r.get_mut("config")) {
        routes.retain(|r| !gone(&r["next-hop-interface"]));
    }
    if let Some(J::Array(rules)) = state
        .get_mut("route-rules")
        .and_then(|r| r.get_mut("config"))
    {
        rules.retain(|r| !gone(&r["iif"]));
    }
    state
}

#[cfg(test)]
mod tests;

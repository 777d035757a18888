//! Several inputs describe one cluster: install-config and agent-config
//! name the same hosts, an NMStateConfig joins its host by MAC, a
//! BareMetalHost adds its BMC. Hosts are merged by name (and MAC), never
//! added up; where two inputs disagree about a host, a `conflict` says
//! where each said what. Partial states (NNCPs, MachineConfig files, bare
//! NMState) are changes applied to hosts, not descriptions of them: they
//! stay entries of their own.

use std::collections::HashMap;

use crate::diag::{Code, Diagnostic, SourceMap};
use crate::inventory::*;
use crate::yaml::{Node, Span, Value};

/// One inventory from the parts each document gave, in input order.
pub(crate) fn merge(
    parts: Vec<Inventory>,
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> Inventory {
    let mut into = Inventory::default();
    // Whole hosts of earlier documents, by name and by MAC.
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut by_mac: HashMap<String, usize> = HashMap::new();
    // Hosts before this index are in the maps: they are filled only when
    // a later document has hosts to merge (most inputs are one document
    // with every host, or hosts and then documents without any).
    let mut indexed = 0;
    for part in parts {
        merge_cluster(&mut into, &part);
        into.credentials.extend(part.credentials);
        into.rendezvous_ip = into.rendezvous_ip.take().or(part.rendezvous_ip);
        into.provided_units.extend(part.provided_units);
        into.disruption_units.extend(part.disruption_units);
        if part.hosts.is_empty() {
            continue;
        }
        // Hosts of one document with the same name stay two hosts: the
        // fleet check reports them as duplicates.
        for (i, host) in into.hosts.iter().enumerate().skip(indexed) {
            if host.scope() != Scope::FirstBoot {
                continue;
            }
            by_name.entry(host.name.value.clone()).or_insert(i);
            for mac in macs(host) {
                by_mac.entry(mac).or_insert(i);
            }
        }
        indexed = into.hosts.len();
        if by_name.is_empty() {
            // No whole host to merge into: moved over at once.
            if into.hosts.is_empty() {
                into.hosts = part.hosts;
            } else {
                into.hosts.extend(part.hosts);
            }
        } else {
            merge_hosts(
                &mut into.hosts,
                part.hosts,
                (&mut by_name, &mut by_mac),
                sources,
                diags,
            );
        }
    }
    apply_pins(&mut into, diags);
    into
}

/// Hosts whose NIC table holds a MAC a `.link` file pins are pinned
/// (`nicBinding: pin`, unless they say otherwise); a pin naming the NIC
/// otherwise than the table is a MAC mapped to two names.
fn apply_pins(inv: &mut Inventory, diags: &mut Vec<Diagnostic>) {
    if inv.cluster.pinned_nics.is_empty() {
        return;
    }
    let pins: HashMap<&str, &PinnedNic> = inv
        .cluster
        .pinned_nics
        .iter()
        .map(|p| (p.mac.as_str(), p))
        .collect();
    for host in &mut inv.hosts {
        let mut pinned = None;
        for nic in &host.nics {
            let Some(mac) = &nic.mac else { continue };
            let Some(pin) = pins.get(mac.value.to_ascii_uppercase().as_str()) else {
                continue;
            };
            if pin.name.value == nic.name.value {
                pinned = Some(pin.name.span);
                continue;
            }
            diags.push(
                Diagnostic::error(
                    Code::DuplicateMac,
                    format!(
                        "MAC {} is `{}` in the NIC table of `{}`, and a .link file pins it as `{}`",
                        mac.value, nic.name.value, host.name.value, pin.name.value
                    ),
                )
                .at(pin.name.span)
                .related(nic.name.span, "the NIC table's name")
                .help("one name per NIC: render the MachineConfig again from the inventory, or name the NIC as the .link file does"),
            );
        }
        if let (Some(span), None) = (pinned, &host.nic_binding) {
            if inv.cluster.nic_binding.is_none() {
                host.nic_binding = Some(Located::new(crate::nic_binding::NicBinding::Pin, span));
            }
        }
    }
}

/// The earlier host `host` describes too: the same name, or, when either
/// name is only an object's (NMStateConfig), a MAC in common.
/// `hosts` of a later document into `into`: each merged into the whole
/// host of an earlier one it names (or shares a MAC with), else added.
fn merge_hosts(
    into: &mut Vec<Host>,
    hosts: Vec<Host>,
    (by_name, by_mac): (&mut HashMap<String, usize>, &mut HashMap<String, usize>),
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) {
    for host in hosts {
        let target = (host.scope() == Scope::FirstBoot)
            .then(|| find(into, by_name, by_mac, &host))
            .flatten();
        match target {
            Some(i) => {
                merge_host(&mut into[i], host, sources, diags);
                // An object's name may have given way to the host's.
                let merged = &into[i];
                by_name.entry(merged.name.value.clone()).or_insert(i);
                for mac in macs(merged) {
                    by_mac.entry(mac).or_insert(i);
                }
            }
            None => into.push(host),
        }
    }
}

fn find(
    hosts: &[Host],
    by_name: &HashMap<String, usize>,
    by_mac: &HashMap<String, usize>,
    host: &Host,
) -> Option<usize> {
    if let Some(&i) = by_name.get(&host.name.value) {
        return Some(i);
    }
    macs(host)
        .filter_map(|m| by_mac.get(&m).copied())
        .find(|&i| weak_name(&hosts[i]) || weak_name(host))
}

/// An NMStateConfig's name is its object's, not its host's.
fn weak_name(host: &Host) -> bool {
    host.kind == InputKind::NmStateConfig
}

fn macs(host: &Host) -> impl Iterator<Item = String> + '_ {
    host.nics
        .iter()
        .filter_map(|n| n.mac.as_ref())
        .chain(host.boot_mac.as_ref())
        .map(|m| m.value.to_ascii_lowercase())
}

/// Cluster fields: the first input that gives one wins.
fn merge_cluster(into: &mut Inventory, part: &Inventory) {
    if into.kind.is_none() {
        into.kind = part.kind;
    }
    if let Some(k) = part.kind {
        if !into.kinds.contains(&k) {
            into.kinds.push(k);
        }
    }
    let c = &mut into.cluster;
    let p = &part.cluster;
    c.pinned_nics.extend(p.pinned_nics.iter().cloned());
    if c.name.is_none() {
        c.name = p.name.clone();
    }
    if c.base_domain.is_none() {
        c.base_domain = p.base_domain.clone();
    }
    // For an agent install the agent-config decides which hosts there
    // are (install-config's are used only when it lists none).
    c.hosts_span = if part.kind == Some(InputKind::AgentConfig) {
        p.hosts_span.or(c.hosts_span)
    } else {
        c.hosts_span.or(p.hosts_span)
    };
    c.control_plane_replicas = c.control_plane_replicas.or(p.control_plane_replicas);
    c.compute_replicas = c.compute_replicas.or(p.compute_replicas);
    if c.machine_networks.is_empty() {
        c.machine_networks = p.machine_networks.clone();
    }
    if c.api_vips.is_empty() {
        c.api_vips = p.api_vips.clone();
    }
    if c.ingress_vips.is_empty() {
        c.ingress_vips = p.ingress_vips.clone();
    }
    if c.provisioning.network.is_none() {
        c.provisioning.network = p.provisioning.network.clone();
    }
    if c.provisioning.cidr.is_none() {
        c.provisioning.cidr = p.provisioning.cidr.clone();
    }
    if c.provisioning.interface.is_none() {
        c.provisioning.interface = p.provisioning.interface.clone();
    }
    c.provisioning.allow_lacp |= p.provisioning.allow_lacp;
    if c.cluster_os_image.is_none() {
        c.cluster_os_image = p.cluster_os_image.clone();
    }
    if c.ssh_key.is_none() {
        c.ssh_key = p.ssh_key.clone();
    }
    if c.failure_domain.is_none() {
        c.failure_domain = p.failure_domain.clone();
    }
    if c.nic_binding.is_none() {
        c.nic_binding = p.nic_binding.clone();
    }
    if c.no_default_route.is_empty() {
        c.no_default_route = p.no_default_route.clone();
    }
    if part.kind == Some(InputKind::Inventory) {
        c.node_names = p.node_names;
    }
    if c.br_ex.is_none() {
        c.br_ex = p.br_ex.clone();
    }
    if c.ovn_masquerade.is_empty() {
        c.ovn_masquerade = p.ovn_masquerade.clone();
    }
    if c.node_agent.is_none() {
        c.node_agent = p.node_agent.clone();
    }
    merge_document(&mut c.install_config, p.install_config.as_ref());
    merge_document(&mut c.agent_config, p.agent_config.as_ref());
    c.span = c.span.or(p.span);
}

/// A carried-through document from a later input: its top-level fields
/// the first input lacks are added after the first input's.
fn merge_document(into: &mut Option<Node>, later: Option<&Node>) {
    let Some(later) = later else { return };
    let Some(first) = into else {
        *into = Some(later.clone());
        return;
    };
    let (Value::Map(entries), Some(more)) = (&mut first.value, later.as_map()) else {
        return;
    };
    for (k, v) in more {
        if !entries.iter().any(|(have, _)| have.as_str() == k.as_str()) {
            entries.push((k.clone(), v.clone()));
        }
    }
}

/// `b` (a later input) into `a`: what `a` lacks is filled in, what both
/// say differently is a conflict located at `b` and naming `a`'s place.
fn merge_host(a: &mut Host, mut b: Host, sources: &SourceMap, diags: &mut Vec<Diagnostic>) {
    let host = if weak_name(a) && !weak_name(&b) {
        b.name.value.clone()
    } else {
        a.name.value.clone()
    };
    let mut c = Conflicts {
        host,
        sources,
        diags,
    };
    if weak_name(a) && !weak_name(&b) {
        a.name = b.name.clone();
        a.kind = b.kind;
    }
    if a.role.value == Role::Unset {
        a.role = b.role.clone();
    } else if b.role.value != Role::Unset && b.role.value != a.role.value {
        c.report(
            "the role",
            &format!("`{}`", b.role.value.as_str()),
            b.role.span,
            &format!("`{}`", a.role.value.as_str()),
            a.role.span,
        );
    }
    merge_boot_mac(a, &mut b, &mut c);
    match (&a.bmc, b.bmc) {
        (None, bmc) => a.bmc = bmc,
        (Some(x), Some(y)) if x.address.value != y.address.value => c.report(
            "the BMC address",
            &format!("`{}`", y.address.value),
            y.address.span,
            &format!("`{}`", x.address.value),
            x.address.span,
        ),
        _ => {}
    }
    merge_nics(a, std::mem::take(&mut b.nics), &mut c);
    a.nics_listed |= b.nics_listed;
    let projected = b.projected_network;
    merge_network(a, b.network.take(), projected, &mut c);
    if a.boot_mode.is_none() {
        a.boot_mode = b.boot_mode;
    }
    if a.root_device_hints.is_none() {
        a.root_device_hints = b.root_device_hints;
    }
    if a.pxe_interface.is_none() {
        a.pxe_interface = b.pxe_interface;
    }
    if a.br_ex_uplink.is_none() {
        a.br_ex_uplink = b.br_ex_uplink;
    }
    for (pool, ip) in b.pool_ips {
        a.pool_ips.entry(pool).or_insert(ip);
    }
    for (key, value) in b.labels {
        a.labels.entry(key).or_insert(value);
    }
}

/// Where two inputs disagree about a host: each disagreement an error at
/// the later input's value, naming the earlier one's place.
struct Conflicts<'a> {
    host: String,
    sources: &'a SourceMap,
    diags: &'a mut Vec<Diagnostic>,
}

impl Conflicts<'_> {
    fn report(&mut self, what: &str, here: &str, here_at: Span, there: &str, there_at: Span) {
        let host = &self.host;
        self.diags.push(
            Diagnostic::error(
                Code::Conflict,
                format!(
                    "{what} of `{host}` is {here} here but {there} in {}",
                    place(self.sources, there_at)
                ),
            )
            .at(here_at)
            .related(there_at, format!("{what} {there}"))
            .host(host.clone())
            .help(
                "both inputs describe this host; make them agree (or leave the value out of one)",
            ),
        );
    }
}

/// The boot MAC: a stray one (no NIC the other input lists has it) is a
/// conflict and dropped; else the first input's, or the second's.
fn merge_boot_mac(a: &mut Host, b: &mut Host, c: &mut Conflicts) {
    // A boot MAC one input gives that no NIC the other lists has: the
    // conflict is reported, the boot MAC dropped (the NIC list is what the
    // installer finds the host by).
    let stray_boot_mac = |mac: &Located<String>, nics: &[Nic]| {
        !nics.iter().any(|n| {
            n.mac
                .as_ref()
                .is_some_and(|m| m.value.eq_ignore_ascii_case(&mac.value))
        })
    };
    let lists = |nics: &[Nic]| {
        nics.iter()
            .map(|n| match &n.mac {
                Some(m) => format!("{} {}", n.name.value, m.value),
                None => n.name.value.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if b.nics_listed && !b.nics.is_empty() {
        if let Some(mac) = a
            .boot_mac
            .clone()
            .filter(|m| stray_boot_mac(m, &a.nics) && stray_boot_mac(m, &b.nics))
        {
            let first = b.nics[0]
                .mac
                .as_ref()
                .map(|m| m.span)
                .unwrap_or(b.nics[0].name.span);
            c.report(
                "the boot MAC",
                &format!("none of its NICs ({})", lists(&b.nics)),
                first,
                &mac.value,
                mac.span,
            );
            a.boot_mac = None;
        }
    } else if a.nics_listed && !a.nics.is_empty() {
        if let Some(mac) = b
            .boot_mac
            .clone()
            .filter(|m| a.boot_mac.is_none() && stray_boot_mac(m, &a.nics))
        {
            let first = a.nics[0]
                .mac
                .as_ref()
                .map(|m| m.span)
                .unwrap_or(a.nics[0].name.span);
            c.report(
                "the boot MAC",
                &mac.value,
                mac.span,
                &format!("none of its NICs ({})", lists(&a.nics)),
                first,
            );
            b.boot_mac = None;
        }
    }
    match (&a.boot_mac, b.boot_mac.take()) {
        (None, mac) => a.boot_mac = mac,
        (Some(x), Some(y)) if !x.value.eq_ignore_ascii_case(&y.value) => {
            c.report("the boot MAC", &y.value, y.span, &x.value, x.span)
        }
        _ => {}
    }
}

/// The second input's NICs into the first's, by name: MACs must agree,
/// wiring is taken where the first has none.
fn merge_nics(a: &mut Host, nics: Vec<Nic>, c: &mut Conflicts) {
    for nic in nics {
        match a.nics.iter_mut().find(|n| n.name.value == nic.name.value) {
            None => a.nics.push(nic),
            Some(mine) => match (&mine.mac, nic.mac) {
                (None, mac) => {
                    mine.mac = mac;
                    if mine.wiring.is_empty() {
                        mine.wiring = nic.wiring;
                    }
                }
                (Some(x), Some(y)) if !x.value.eq_ignore_ascii_case(&y.value) => c.report(
                    &format!("the MAC of `{}`", nic.name.value),
                    &y.value,
                    y.span,
                    &x.value,
                    x.span,
                ),
                _ => {
                    if mine.wiring.is_empty() {
                        mine.wiring = nic.wiring;
                    }
                }
            },
        }
    }
}

/// The network state: one input's, or both agreeing (against a
/// network_data.json projection only the static addresses must agree,
/// and the richer state is kept).
fn merge_network(a: &mut Host, network: Option<Node>, projected: bool, c: &mut Conflicts) {
    // network_data.json says less than NMState (no disabled families, no
    // options it lacks): beside another description of the host, only its
    // static addresses must agree, and the richer state is kept.
    let projection = a.projected_network != projected;
    match (&a.network, network) {
        (None, net) => {
            a.projected_network = projected;
            a.network = net;
        }
        (Some(x), Some(y)) if projection => {
            let ips = |n: &Node| {
                let mut v: Vec<String> = addresses(n).into_iter().map(|(ip, _)| ip).collect();
                v.sort();
                v
            };
            if ips(x) != ips(&y) {
                if let Some((here, here_at, there, there_at)) = network_difference(x, &y) {
                    c.report("the network", &here, here_at, &there, there_at);
                }
            } else if a.projected_network {
                a.network = Some(y);
                a.projected_network = false;
            }
        }
        (Some(x), Some(y)) => {
            if let Some((here, here_at, there, there_at)) = network_difference(x, &y) {
                c.report("the network", &here, here_at, &there, there_at);
            }
        }
        _ => {}
    }
}

fn place(sources: &SourceMap, span: Span) -> String {
    let (span, _) = sources.resolve(span);
    format!("{}:{}:{}", sources.name(span.file), span.line, span.column)
}

/// How two states of one host differ: (what `b` says, where, what `a`
/// says, where), the static addresses first, else the first other
/// difference; `None` when they are the same state.
fn network_difference(a: &Node, b: &Node) -> Option<(String, Span, String, Span)> {
    if comparable(a) == comparable(b) {
        return None;
    }
    let (ips_a, ips_b) = (addresses(a), addresses(b));
    let texts = |ips: &[(String, Span)]| ips.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
    if texts(&ips_a) != texts(&ips_b) {
        let extra_b = ips_b.iter().find(|(t, _)| !texts(&ips_a).contains(t));
        let extra_a = ips_a.iter().find(|(t, _)| !texts(&ips_b).contains(t));
        let fmt = |ips: &[(String, Span)]| match ips.len() {
            0 => "no static address".to_string(),
            _ => format!("addresses {}", texts(ips).join(", ")),
        };
        return Some((
            fmt(&ips_b),
            extra_b.map(|(_, s)| *s).unwrap_or(b.span),
            fmt(&ips_a),
            extra_a.map(|(_, s)| *s).unwrap_or(a.span),
        ));
    }
    let (path, na, nb) = first_difference(a, b, String::new());
    Some((
        format!("different at `{path}` ({})", brief(nb)),
        nb.map(|n| n.span).unwrap_or(b.span),
        brief(na),
        na.map(|n| n.span).unwrap_or(a.span),
    ))
}

fn brief(n: Option<&Node>) -> String {
    match n {
        None => "unset".into(),
        Some(n) => {
            let s = n.to_string();
            if s.chars().count() > 40 {
                format!("{}…", s.chars().take(40).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// `ip/prefix` of every static address, with its place.
fn addresses(state: &Node) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    for iface in state
        .get("interfaces")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        for fam in ["ipv4", "ipv6"] {
            for a in iface
                .get(fam)
                .and_then(|f| f.get("address"))
                .and_then(Node::as_seq)
                .unwrap_or_default()
            {
                if let Some(ip) = a.get("ip") {
                    let prefix = a
                        .get("prefix-length")
                        .and_then(Node::scalar_text)
                        .unwrap_or_default();
                    out.push((format!("{}/{prefix}", ip), ip.span));
                }
            }
        }
    }
    out
}

/// A state as compared between inputs: a MAC pinned in it is the NIC
/// table's business (every pinned MAC is a NIC, compared on its own), so
/// one input may pin what the other leaves out.
fn comparable(n: &Node) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("mac-address");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut j = n.to_json();
    strip(&mut j);
    j
}

/// The path to the first place two trees differ, and the nodes there.
fn first_difference<'n>(
    a: &'n Node,
    b: &'n Node,
    path: String,
) -> (String, Option<&'n Node>, Option<&'n Node>) {
    use crate::yaml::Value;
    match (&a.value, &b.value) {
        (Value::Map(ea), Value::Map(eb)) => {
            let compared = |k: &Node| k.as_str() != Some("mac-address");
            for (k, va) in ea.iter().filter(|(k, _)| compared(k)) {
                let key = k.scalar_text().unwrap_or_default();
                let sub = join(&path, &key);
                match b.get(&key) {
                    None => return (sub, Some(va), None),
                    Some(vb) if comparable(vb) != comparable(va) => {
                        return first_difference(va, vb, sub)
                    }
                    _ => {}
                }
            }
            for (k, vb) in eb.iter().filter(|(k, _)| compared(k)) {
                let key = k.scalar_text().unwrap_or_default();
                if a.get(&key).is_none() {
                    return (join(&path, &key), None, Some(vb));
                }
            }
            (path, Some(a), Some(b))
        }
        (Value::Seq(sa), Value::Seq(sb)) => {
            for (i, (va, vb)) in sa.iter().zip(sb).enumerate() {
                if comparable(va) != comparable(vb) {
                    // Interfaces by name read better than by index.
                    let label = va
                        .get("name")
                        .and_then(Node::scalar_text)
                        .unwrap_or_else(|| i.to_string());
                    return first_difference(va, vb, format!("{path}[{label}]"));
                }
            }
            let i = sa.len().min(sb.len());
            (format!("{path}[{i}]"), sa.get(i), sb.get(i))
        }
        _ => (path, Some(a), Some(b)),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests;

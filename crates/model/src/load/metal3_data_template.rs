//! Cluster API Metal3's `Metal3DataTemplate` (v1beta1 and v1beta2) with
//! the ip-address-manager `IPPool`s it names: for each host the template
//! serves, the network_data.json CAPM3 would render, read as that host
//! (`network_data.rs`), each part located in the template or, for an
//! address, at the pool's `preAllocations` entry that gives it.
//!
//! Which hosts a template serves is decided by Metal3Machines at run time;
//! from files it is read:
//! - from the annotation `nodenet.io/hosts` (what `render --with metal3`
//!   writes), else
//! - from the pools' `preAllocations`, keyed `<host>-<pool>`: by
//!   BareMetalHost name (CAPM3's `--enable-bmh-name-based-preallocation`)
//!   or Metal3Data name (`<template>-<index>`). A BareMetalHost-named key
//!   belongs to the template whose static pools are exactly the host's;
//! - else one host, `<template>-0` (CAPM3's first Metal3Data), given each
//!   pool's first free address.
//!
//! A NIC's MAC comes from `macAddress.string`, or, for `fromHostInterface`,
//! from the BareMetalHost's inspection data (`status.hardware.nics`) when
//! the host is among the inputs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::{json, Map, Value as J};

use crate::diag::{Code, Diagnostic};
use crate::inventory::*;
use crate::yaml::{JsonSpans, Node, Span};

use super::Context;

/// The annotation naming the hosts a template serves.
pub const HOSTS_ANNOTATION: &str = "nodenet.io/hosts";

pub(super) fn s(n: &Node, key: &str) -> Option<String> {
    n.get(key).and_then(Node::scalar_text)
}

pub(super) fn seq<'n>(n: Option<&'n Node>, key: &str) -> &'n [Node] {
    n.and_then(|n| n.get(key))
        .and_then(Node::as_seq)
        .unwrap_or_default()
}

/// One IPPool as IPAM allocates from it.
struct Pool<'a> {
    name: String,
    node: &'a Node,
    /// Its ranges: (first, last, prefix, gateway, DNS), the pool-wide
    /// values where a range gives none.
    ranges: Vec<Range>,
    /// `preAllocations`: claim name → address, located.
    pre: Vec<(String, IpAddr, Span)>,
    /// Index into `pre` by claim name (a pool of 10,000 hosts).
    by_claim: HashMap<String, usize>,
}

struct Range {
    first: IpAddr,
    last: IpAddr,
    prefix: Option<u8>,
    gateway: Option<(String, Span)>,
    dns: Vec<(String, Span)>,
}

fn step(ip: IpAddr, by: u128) -> Option<IpAddr> {
    Some(match ip {
        IpAddr::V4(v) => IpAddr::V4(u32::from(v).checked_add(u32::try_from(by).ok()?)?.into()),
        IpAddr::V6(v) => IpAddr::V6(u128::from(v).checked_add(by)?.into()),
    })
}

impl<'a> Pool<'a> {
    fn read(name: &str, node: &'a Node, diags: &mut Vec<Diagnostic>) -> Pool<'a> {
        let spec = node.get("spec");
        let prefix = spec
            .and_then(|s| s.get("prefix"))
            .and_then(Node::scalar_text);
        let gateway = spec.and_then(|s| s.get("gateway"));
        let dns = |n: Option<&Node>| -> Vec<(String, Span)> {
            seq(n, "dnsServers")
                .iter()
                .filter_map(|d| Some((d.scalar_text()?, d.span)))
                .collect()
        };
        let mut ranges = Vec::new();
        for r in seq(spec, "pools") {
            let subnet: Option<IpNet> = s(r, "subnet").and_then(|t| t.parse().ok());
            // IPAM keeps the subnet's address as written and starts after it.
            let first = s(r, "start")
                .and_then(|t| t.parse().ok())
                .or_else(|| subnet.and_then(|n| step(n.addr(), 1)));
            let last = s(r, "end")
                .and_then(|t| t.parse().ok())
                .or_else(|| subnet.map(|n| n.broadcast()));
            let (Some(first), Some(last)) = (first, last) else {
                diags.push(
                    Diagnostic::error(
                        Code::MissingField,
                        format!("a range of IPPool `{name}` has neither `start` nor `subnet`"),
                    )
                    .at(r.span),
                );
                continue;
            };
            let own_gateway = r.get("gateway").or(gateway);
            let own_dns = dns(Some(r));
            ranges.push(Range {
                first,
                last,
                prefix: s(r, "prefix")
                    .or_else(|| prefix.clone())
                    .and_then(|p| p.parse().ok()),
                gateway: own_gateway.and_then(|g| Some((g.scalar_text()?, g.span))),
                dns: if own_dns.is_empty() {
                    dns(spec)
                } else {
                    own_dns
                },
            });
        }
        let mut pre = Vec::new();
        for (k, v) in spec
            .and_then(|s| s.get("preAllocations"))
            .and_then(Node::as_map)
            .unwrap_or_default()
        {
            let (Some(claim), Some(ip)) = (k.scalar_text(), v.scalar_text()) else {
                continue;
            };
            match ip.parse::<IpAddr>() {
                Ok(ip) => pre.push((claim, ip, v.span)),
                Err(_) => diags.push(
                    Diagnostic::error(Code::IpInvalid, format!("`{ip}` is no IP address"))
                        .at(v.span),
                ),
            }
        }
        let by_claim = pre
            .iter()
            .enumerate()
            .map(|(k, (c, _, _))| (c.clone(), k))
            .collect();
        let pool = Pool {
            name: name.to_string(),
            node,
            ranges,
            pre,
            by_claim,
        };
        for (claim, ip, at) in &pool.pre {
            if pool.range_of(*ip).is_none() {
                diags.push(
                    Diagnostic::error(
                        Code::IpInvalid,
                        format!("`{ip}`, preallocated to `{claim}`, is in none of IPPool `{name}`'s ranges (IPAM refuses the pool)"),
                    )
                    .at(*at),
                );
            }
        }
        pool
    }

    fn range_of(&self, ip: IpAddr) -> Option<&Range> {
        self.ranges
            .iter()
            .find(|r| r.first <= ip && ip <= r.last && r.first.is_ipv4() == ip.is_ipv4())
    }

    /// The address a claim gets: its preallocation, else the first address
    /// nobody holds (as IPAM's sequential strategy gives it).
    /// A claim's preallocated address.
    fn preallocated(&self, claim: &str) -> Option<(IpAddr, Span)> {
        let (_, ip, at) = &self.pre[*self.by_claim.get(claim)?];
        Some((*ip, *at))
    }

    fn address(&self, claim: &str, taken: &mut HashSet<IpAddr>) -> Option<(IpAddr, Span)> {
        if let Some(found) = self.preallocated(claim) {
            return Some(found);
        }
        let reserved: HashSet<IpAddr> = self.pre.iter().map(|(_, ip, _)| *ip).collect();
        for r in &self.ranges {
            let mut ip = r.first;
            for _ in 0..65536 {
                if ip > r.last {
                    break;
                }
                if !reserved.contains(&ip) && taken.insert(ip) {
                    return Some((ip, self.node.span));
                }
                ip = step(ip, 1)?;
            }
        }
        None
    }
}

/// A template's pool references by name: addresses, gateways and DNS.
fn pool_ref(n: &Node) -> Option<String> {
    s(n, "ipAddressFromIPPool")
        .or_else(|| n.get("fromPoolRef").and_then(|r| s(r, "name")))
        .or_else(|| s(n, "fromIPPool"))
}

pub(crate) fn load(root: &Node, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Inventory {
    super::metal3_crd::check(root, diags);
    let mut inv = Inventory::default();
    let meta = root.get("metadata");
    let Some(name) = meta.and_then(|m| m.get("name")).and_then(Node::scalar_text) else {
        diags.push(
            Diagnostic::error(
                Code::MissingField,
                "the Metal3DataTemplate has no `metadata.name`",
            )
            .at(root.span),
        );
        return inv;
    };
    let namespace = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Node::scalar_text)
        .unwrap_or_default();
    let Some(nd) = root.get("spec").and_then(|s| s.get("networkData")) else {
        return inv; // metaData only: no network
    };
    let networks = nd.get("networks");
    // Every pool the template names, read once.
    let mut names: Vec<(String, Span)> = Vec::new();
    let mut static_pools: Vec<String> = Vec::new();
    for kind in ["ipv4", "ipv6", "ipv4DHCP", "ipv6DHCP", "ipv6SLAAC"] {
        for n in seq(networks, kind) {
            if let Some(p) = pool_ref(n) {
                let at = n.get("ipAddressFromIPPool").unwrap_or(n).span;
                static_pools.push(p.clone());
                names.push((p, at));
            }
            if n.get("fromPoolAnnotation").is_some() {
                diags.push(
                    Diagnostic::warning(
                        Code::MissingField,
                        "`fromPoolAnnotation` names its pool on each BareMetalHost: nodenet does not follow it, and this network is not checked",
                    )
                    .at(n.get("fromPoolAnnotation").expect("present").span),
                );
            }
            for r in seq(Some(n), "routes") {
                if let Some(p) = r.get("gateway").and_then(pool_ref) {
                    names.push((p, r.span));
                }
                if let Some(p) = r.get("services").and_then(|s| s.get("dnsFromIPPool")) {
                    names.extend(p.scalar_text().map(|t| (t, p.span)));
                }
            }
        }
    }
    if let Some(p) = nd.get("services").and_then(|s| s.get("dnsFromIPPool")) {
        names.extend(p.scalar_text().map(|t| (t, p.span)));
    }
    let mut pools: BTreeMap<String, Pool> = BTreeMap::new();
    for (p, at) in &names {
        if pools.contains_key(p) {
            continue;
        }
        match ctx.objects.object("IPPool", &namespace, p) {
            Some(node) => {
                pools.insert(p.clone(), Pool::read(p, node, diags));
            }
            None => diags.push(
                Diagnostic::warning(
                    Code::MissingField,
                    format!("IPPool `{p}` is not among the inputs: the addresses it gives are not checked"),
                )
                .at(*at)
                .help("give the file or directory that holds the IPPool too"),
            ),
        }
    }
    static_pools.sort();
    static_pools.dedup();
    // Which pools each claim owner holds an address in, over every pool.
    let mut holdings: BTreeMap<String, (Vec<String>, Span)> = BTreeMap::new();
    for (pool, node) in ctx.objects.all("IPPool", &namespace) {
        let pre = node
            .get("spec")
            .and_then(|s| s.get("preAllocations"))
            .and_then(Node::as_map)
            .unwrap_or_default();
        for (k, v) in pre {
            let owner = k
                .scalar_text()
                .and_then(|c| c.strip_suffix(&format!("-{pool}")).map(str::to_string));
            if let Some(owner) = owner {
                let e = holdings.entry(owner).or_insert((Vec::new(), v.span));
                e.0.push(pool.to_string());
            }
        }
    }
    // Addresses of pools not among the inputs come at run time: such a
    // host's state is not what it runs, and is not judged as if it were.
    let unknown_pools: Vec<Span> = names
        .iter()
        .filter(|(p, _)| !pools.contains_key(p))
        .map(|(_, at)| *at)
        .collect();
    for (host, at) in hosts(root, &name, &static_pools, holdings) {
        let mut h = Host::new(
            Located::new(host.clone(), at),
            InputKind::Metal3DataTemplate,
        );
        let nics = ctx
            .host_nics
            .get(&(namespace.clone(), host.clone()))
            .or_else(|| ctx.host_nics.get(&(String::new(), host.clone())));
        let (data, spans) = render(
            nd,
            &host,
            nics.map(Vec::as_slice),
            &pools,
            &mut ctx.allocated,
        );
        let data = spans.node(&data, root.span);
        let mut found = Vec::new();
        // A VLAN's MAC is the template's to give (the CRD requires one);
        // inspection may give it only at run time.
        let state = super::network_data::read_state(&data, &mut h, &mut found, false);
        for mut f in found {
            f.host.get_or_insert_with(|| host.clone());
            diags.push(f);
        }
        h.network = Some(state);
        h.projected_network = true;
        h.unresolved.extend(&unknown_pools);
        inv.hosts.push(h);
    }
    inv
}

/// The hosts the template serves, each located where it is named;
/// `holdings`: the pools each claim owner holds an address in.
fn hosts(
    root: &Node,
    template: &str,
    static_pools: &[String],
    holdings: BTreeMap<String, (Vec<String>, Span)>,
) -> Vec<(String, Span)> {
    if let Some(a) = root
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(HOSTS_ANNOTATION))
    {
        return a
            .scalar_text()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(|h| (h.to_string(), a.span))
            .collect();
    }
    let mine: Vec<(String, Span)> = holdings
        .into_iter()
        .filter(|(owner, (held, _))| {
            let indexed = owner
                .strip_prefix(&format!("{template}-"))
                .is_some_and(|i| i.parse::<u32>().is_ok());
            let mut held = held.clone();
            held.sort();
            held.dedup();
            indexed || !static_pools.is_empty() && held == static_pools
        })
        .map(|(o, (_, at))| (o, at))
        .collect();
    if mine.is_empty() {
        let at = root
            .get("metadata")
            .and_then(|m| m.get("name"))
            .map_or(root.span, |n| n.span);
        // CAPM3's first Metal3Data name (`<template>-0`), made a valid
        // host name: a clusterctl template's `${CLUSTER_NAME}` is no
        // finding.
        return vec![(
            crate::names::host_name_from_file(&format!("{template}-0")),
            at,
        )];
    }
    mine
}

/// The network_data.json CAPM3 renders for `host` (links: bonds, NICs,
/// VLANs; networks; services), located at the template's parts.
fn render(
    nd: &Node,
    host: &str,
    nics: Option<&[(String, String)]>,
    pools: &BTreeMap<String, Pool>,
    taken: &mut HashSet<IpAddr>,
) -> (J, JsonSpans) {
    let r = Rendering { host, nics, pools };
    let mut spans = JsonSpans::default();
    let links = r.links(nd.get("links"), &mut spans);
    let networks = r.networks(nd.get("networks"), taken, &mut spans);
    let mut services: Vec<J> = Vec::new();
    let svc = nd.get("services");
    for d in seq(svc, "dns") {
        if let Some(a) = d.scalar_text() {
            spans.at(format!("/services/{}", services.len()), d.span);
            services.push(json!({"type": "dns", "address": a}));
        }
    }
    r.dns_from(
        svc.and_then(|s| s.get("dnsFromIPPool")),
        &mut services,
        &mut spans,
        "/services",
    );
    (
        json!({"links": links, "networks": networks, "services": services}),
        spans,
    )
}

/// One host's network_data.json being rendered from a template.
struct Rendering<'a> {
    host: &'a str,
    /// The host's NICs from inspection: (name, MAC).
    nics: Option<&'a [(String, String)]>,
    pools: &'a BTreeMap<String, Pool<'a>>,
}

fn mtu(l: &Node) -> u64 {
    s(l, "mtu")
        .and_then(|m| m.parse::<u64>().ok())
        .unwrap_or(1500)
}

impl Rendering<'_> {
    /// A link's MAC: given, or the inspected NIC's it names.
    fn mac(&self, l: &Node) -> Option<String> {
        let m = l.get("macAddress")?;
        s(m, "string").or_else(|| {
            let nic = s(m, "fromHostInterface")?;
            self.nics?
                .iter()
                .find(|(n, _)| *n == nic)
                .map(|(_, mac)| mac.clone())
        })
    }

    fn links(&self, links_node: Option<&Node>, spans: &mut JsonSpans) -> Vec<J> {
        let mut links: Vec<J> = Vec::new();
        let mut add = |node: &Node, link: Map<String, J>| {
            spans.at(format!("/links/{}", links.len()), node.span);
            links.push(J::Object(link));
        };
        for b in seq(links_node, "bonds") {
            add(b, self.bond(b));
        }
        for e in seq(links_node, "ethernets") {
            let mut o = Map::new();
            o.insert(
                "type".into(),
                json!(s(e, "type").unwrap_or_else(|| "phy".into())),
            );
            o.insert("id".into(), json!(s(e, "id")));
            o.insert("mtu".into(), json!(mtu(e)));
            // The NIC keeps the name the host gives it: the one inspection
            // found it under, or the template's `name`.
            let named = s(e, "name")
                .or_else(|| e.get("macAddress").and_then(|m| s(m, "fromHostInterface")));
            if let Some(n) = named {
                o.insert("name".into(), json!(n));
            }
            if let Some(m) = self.mac(e) {
                o.insert("ethernet_mac_address".into(), json!(m));
            }
            add(e, o);
        }
        for v in seq(links_node, "vlans") {
            let mut o = Map::new();
            o.insert("type".into(), json!("vlan"));
            o.insert("id".into(), json!(s(v, "id")));
            o.insert("mtu".into(), json!(mtu(v)));
            o.insert(
                "vlan_id".into(),
                json!(s(v, "vlanID").and_then(|i| i.parse::<u64>().ok())),
            );
            o.insert("vlan_link".into(), json!(s(v, "vlanLink")));
            if let Some(m) = self.mac(v) {
                o.insert("vlan_mac_address".into(), json!(m));
            }
            add(v, o);
        }
        links
    }

    fn bond(&self, b: &Node) -> Map<String, J> {
        let mut o = Map::new();
        o.insert("type".into(), json!("bond"));
        o.insert("id".into(), json!(s(b, "id")));
        o.insert("mtu".into(), json!(mtu(b)));
        o.insert("bond_mode".into(), json!(s(b, "bondMode")));
        if let Some(x) = s(b, "bondXmitHashPolicy") {
            o.insert("bond_xmit_hash_policy".into(), json!(x));
        }
        let ports: Vec<String> = seq(Some(b), "bondLinks")
            .iter()
            .filter_map(Node::scalar_text)
            .collect();
        o.insert("bond_links".into(), json!(ports));
        if let Some(m) = self.mac(b) {
            o.insert("ethernet_mac_address".into(), json!(m));
        }
        // v1beta1: a map; v1beta2: a list of {name, value}.
        match b.get("parameters") {
            Some(p) if p.as_map().is_some() => {
                for (k, v) in p.as_map().unwrap_or_default() {
                    if let (Some(k), Some(v)) = (k.scalar_text(), v.scalar_text()) {
                        o.insert(format!("bond_{k}"), json!(v));
                    }
                }
            }
            Some(p) => {
                for e in p.as_seq().unwrap_or_default() {
                    if let (Some(k), Some(v)) = (s(e, "name"), s(e, "value")) {
                        o.insert(format!("bond_{k}"), json!(v));
                    }
                }
            }
            None => {}
        }
        o
    }

    /// DNS servers of the pool `p` names (its first range's), located.
    fn dns_from(&self, p: Option<&Node>, out: &mut Vec<J>, spans: &mut JsonSpans, at: &str) {
        let Some(pool) = p
            .and_then(Node::scalar_text)
            .and_then(|p| self.pools.get(&p))
        else {
            return;
        };
        for (d, sp) in pool
            .ranges
            .first()
            .map(|r| r.dns.clone())
            .unwrap_or_default()
        {
            spans.at(format!("{at}/{}", out.len()), sp);
            out.push(json!({"type": "dns", "address": d}));
        }
    }

    fn networks(
        &self,
        networks_node: Option<&Node>,
        taken: &mut HashSet<IpAddr>,
        spans: &mut JsonSpans,
    ) -> Vec<J> {
        let mut networks: Vec<J> = Vec::new();
        for (kind, ty) in [
            ("ipv4", "ipv4"),
            ("ipv6", "ipv6"),
            ("ipv4DHCP", "ipv4_dhcp"),
            ("ipv6DHCP", "ipv6_dhcp"),
            ("ipv6SLAAC", "ipv6_slaac"),
        ] {
            for n in seq(networks_node, kind) {
                let at = format!("/networks/{}", networks.len());
                spans.at(at.clone(), n.span);
                let mut o = Map::new();
                o.insert("type".into(), json!(ty));
                o.insert("id".into(), json!(s(n, "id")));
                o.insert("link".into(), json!(s(n, "link")));
                if (ty == "ipv4" || ty == "ipv6") && !self.address(n, &at, &mut o, taken, spans) {
                    continue;
                }
                let routes = seq(Some(n), "routes")
                    .iter()
                    .enumerate()
                    .map(|(k, r)| self.route(r, &format!("{at}/routes/{k}"), spans))
                    .collect();
                o.insert("routes".into(), J::Array(routes));
                networks.push(J::Object(o));
            }
        }
        networks
    }

    /// A static network's address and netmask from its pool; false when
    /// there is none (said where the pool is named, or the pool is full).
    fn address(
        &self,
        n: &Node,
        at: &str,
        o: &mut Map<String, J>,
        taken: &mut HashSet<IpAddr>,
        spans: &mut JsonSpans,
    ) -> bool {
        let Some(pool) = pool_ref(n).and_then(|p| self.pools.get(&p)) else {
            return false;
        };
        let Some((ip, ip_at)) = pool.address(&format!("{}-{}", self.host, pool.name), taken) else {
            return false;
        };
        let range = pool.range_of(ip);
        o.insert("ip_address".into(), json!(ip.to_string()));
        spans.at(format!("{at}/ip_address"), ip_at);
        let prefix = range.and_then(|r| r.prefix).unwrap_or(0);
        o.insert("netmask".into(), json!(prefix.to_string()));
        true
    }

    fn route(&self, r: &Node, at: &str, spans: &mut JsonSpans) -> J {
        let g = r.get("gateway");
        let gateway = g.and_then(|g| s(g, "string")).or_else(|| {
            let p = g.and_then(pool_ref)?;
            let pool = self.pools.get(&p)?;
            // The gateway of the range the host's address is in.
            let claim = format!("{}-{}", self.host, pool.name);
            let ip = pool.preallocated(&claim).map(|x| x.0);
            let range = ip.and_then(|ip| pool.range_of(ip)).or(pool.ranges.first());
            range.and_then(|r| r.gateway.clone()).map(|g| g.0)
        });
        let mut ro = Map::new();
        ro.insert("network".into(), json!(s(r, "network")));
        ro.insert(
            "netmask".into(),
            json!(s(r, "prefix").unwrap_or_else(|| "0".into())),
        );
        ro.insert("gateway".into(), json!(gateway.unwrap_or_default()));
        let mut rs: Vec<J> = seq(r.get("services"), "dns")
            .iter()
            .filter_map(Node::scalar_text)
            .map(|d| json!({"type": "dns", "address": d}))
            .collect();
        self.dns_from(
            r.get("services").and_then(|s| s.get("dnsFromIPPool")),
            &mut rs,
            spans,
            &format!("{at}/services"),
        );
        ro.insert("services".into(), J::Array(rs));
        spans.at(at.to_string(), r.span);
        J::Object(ro)
    }
}

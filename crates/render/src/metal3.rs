//! Cluster API Metal3 templating: `Metal3DataTemplate`s and the
//! ip-address-manager `IPPool`s they draw addresses from, which CAPM3
//! renders into each machine's network_data.json. Built from the hosts'
//! NMState intent:
//!
//! - hosts whose networks differ only in MACs and addresses share one
//!   template; NICs are found by name in the BareMetalHost's inspection
//!   data (`macAddress.fromHostInterface`), so one template serves them all;
//! - each subnet with static addresses is an IPPool whose
//!   `preAllocations` give every host its own address, keyed
//!   `<BareMetalHost>-<pool>` (CAPM3's `--enable-bmh-name-based-preallocation`:
//!   without it claims are named after Metal3Data indexes, which follow
//!   the order machines are claimed in, and no file can pin an address
//!   to a host);
//! - routes through a pool's gateway take it `fromIPPool`, others are
//!   written as they are.
//!
//! Written as `infrastructure.cluster.x-k8s.io/v1beta1`, which every CAPM3
//! release serves (v1beta2, served since, would require parameters on
//! every bond). What network_data.json cannot carry cannot be templated
//! either: those hosts have the same `target-unsupported` errors as
//! `--with network-data`, and the templates hold the other hosts.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::{json, Map, Value as J};

use nodenet_model::{Diagnostic, Host, Inventory, Node, Scope};

use crate::artifacts::yaml;
use crate::intent::{text, Intent};
use crate::output::OutFile;

const FORMAT: &str = "Metal3DataTemplate";

/// The transmit hash policies `bondXmitHashPolicy` takes; others go
/// under `parameters`.
const XMIT_POLICIES: &[&str] = &["layer2", "layer3+4", "layer2+3"];

fn unsupported(host: &Host, at: &Node, what: String) -> Diagnostic {
    crate::intent::unsupported(host, at, FORMAT, what)
}

/// One subnet's pool: its addresses by host, and the gateway its hosts'
/// routes go through.
#[derive(Default)]
struct Pool {
    net: Option<IpNet>,
    addresses: BTreeMap<String, IpAddr>,
    gateway: Option<IpAddr>,
}

/// A host's template spec (`spec.networkData`), with the pools it draws
/// from; or why it cannot be templated.
fn network_data_spec(
    host: &Host,
    pools: &mut BTreeMap<String, Pool>,
    pool_name: &dyn Fn(&IpNet) -> String,
) -> Result<J, Vec<Diagnostic>> {
    // What network_data.json cannot carry, CAPM3 cannot render.
    crate::network_data::network_data(host)?;
    let Some(state) = &host.network else {
        return Ok(json!({}));
    };
    let intent = Intent::read(host, state);
    let mut errors = Vec::new();
    let mtu = |i: &Node, l: &mut Map<String, J>, errors: &mut Vec<Diagnostic>| {
        if let Some(m) = Intent::mtu(i) {
            if !(1280..=9000).contains(&m) {
                errors.push(unsupported(
                    host,
                    i.get("mtu").unwrap_or(i),
                    format!("MTU {m} (the CRD takes 1280 to 9000)"),
                ));
            }
            l.insert("mtu".into(), json!(m));
        }
    };
    let from_nic = |name: &str| json!({"fromHostInterface": intent.root_nic(name).unwrap_or_else(|| name.to_string())});
    let mut ethernets = Vec::new();
    let mut bonds = Vec::new();
    let mut vlans = Vec::new();
    for i in &intent.ifaces {
        let name = Intent::name(i);
        let mut l = Map::new();
        l.insert("id".into(), json!(name));
        match Intent::kind(i).as_str() {
            "ethernet" => {
                l.insert("type".into(), json!("phy"));
                l.insert("macAddress".into(), from_nic(&name));
                mtu(i, &mut l, &mut errors);
                ethernets.push(J::Object(l));
            }
            "bond" => {
                let la = i.get("link-aggregation");
                l.insert(
                    "bondMode".into(),
                    json!(
                        text(la.and_then(|l| l.get("mode"))).unwrap_or_else(|| "balance-rr".into())
                    ),
                );
                l.insert("bondLinks".into(), json!(Intent::ports(i)));
                l.insert("macAddress".into(), from_nic(&name));
                let parameters = bond_parameters(host, la, &name, &mut l, &mut errors);
                if !parameters.is_empty() {
                    l.insert("parameters".into(), J::Object(parameters));
                }
                mtu(i, &mut l, &mut errors);
                bonds.push(J::Object(l));
            }
            "vlan" => {
                let Some((base, id)) = Intent::vlan(i) else {
                    continue; // said by network_data above
                };
                l.insert("vlanID".into(), json!(id));
                l.insert("vlanLink".into(), json!(base));
                l.insert("macAddress".into(), from_nic(&base));
                mtu(i, &mut l, &mut errors);
                vlans.push(J::Object(l));
            }
            _ => {}
        }
    }
    for (p, _) in intent.port_only() {
        ethernets.push(json!({"type": "phy", "id": p, "macAddress": from_nic(&p)}));
    }
    let mut networks: BTreeMap<&str, Vec<J>> = BTreeMap::new();
    for i in &intent.ifaces {
        let name = Intent::name(i);
        for (fam, v6) in [("ipv4", false), ("ipv6", true)] {
            let (enabled, dhcp, autoconf) = Intent::family(i, fam);
            if !enabled {
                continue;
            }
            let routes: Vec<(&crate::intent::Route, IpAddr)> = intent
                .routes
                .iter()
                .filter(|r| r.destination.addr().is_ipv6() == v6)
                .filter(|r| r.dev.as_deref() == Some(name.as_str()))
                .filter_map(|r| Some((r, r.via?)))
                .collect();
            let mut entries: Vec<(&str, Map<String, J>, Option<String>)> = Vec::new();
            for (k, net) in Intent::addresses(i, fam).into_iter().enumerate() {
                let pool = pool_name(&net.trunc());
                let entry = pools.entry(pool.clone()).or_default();
                entry.net = Some(net.trunc());
                if entry
                    .addresses
                    .insert(host.name.value.clone(), net.addr())
                    .is_some()
                {
                    errors.push(unsupported(
                        host,
                        i,
                        format!(
                            "two addresses of `{name}` in {} (a host claims one address per pool)",
                            net.trunc()
                        ),
                    ));
                }
                let mut n = Map::new();
                n.insert("id".into(), json!(format!("{name}-{fam}-{k}")));
                n.insert("link".into(), json!(name));
                n.insert("ipAddressFromIPPool".into(), json!(pool));
                entries.push((fam, n, Some(pool)));
            }
            if dhcp || autoconf {
                let kind = match (v6, dhcp) {
                    (false, _) => "ipv4DHCP",
                    (true, true) => "ipv6DHCP",
                    (true, false) => "ipv6SLAAC",
                };
                let mut n = Map::new();
                n.insert("id".into(), json!(format!("{name}-{kind}")));
                n.insert("link".into(), json!(name));
                entries.push((kind, n, None));
            }
            let Some((_, first, pool)) = entries.first_mut() else {
                continue;
            };
            if !routes.is_empty() {
                let rs = pool_routes(routes, pool.as_deref(), pools);
                first.insert("routes".into(), J::Array(rs));
            }
            for (kind, n, _) in entries {
                networks.entry(kind).or_default().push(J::Object(n));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(spec_of([ethernets, bonds, vlans], networks, &intent.dns))
}

/// The spec from its parts: the links that are there, the networks, the
/// name servers.
fn spec_of(links: [Vec<J>; 3], networks: BTreeMap<&str, Vec<J>>, dns: &[String]) -> J {
    let mut by_kind = Map::new();
    for (k, v) in ["ethernets", "bonds", "vlans"].into_iter().zip(links) {
        if !v.is_empty() {
            by_kind.insert(k.into(), J::Array(v));
        }
    }
    let mut spec = Map::new();
    spec.insert("links".into(), J::Object(by_kind));
    spec.insert("networks".into(), json!(networks));
    if !dns.is_empty() {
        spec.insert("services".into(), json!({"dns": dns}));
    }
    J::Object(spec)
}

/// A bond's options as the CRD carries them: `xmit_hash_policy` as
/// `bondXmitHashPolicy` (into `l`), those network_data.json knows as
/// `parameters`; any other is an error.
fn bond_parameters(
    host: &Host,
    la: Option<&Node>,
    name: &str,
    l: &mut Map<String, J>,
    errors: &mut Vec<Diagnostic>,
) -> Map<String, J> {
    let mut parameters = Map::new();
    for (k, v) in la
        .and_then(|l| l.get("options"))
        .and_then(Node::as_map)
        .unwrap_or_default()
    {
        let (Some(k), Some(value)) = (k.as_str(), v.scalar_text()) else {
            continue;
        };
        if k == "xmit_hash_policy" && XMIT_POLICIES.contains(&value.as_str()) {
            l.insert("bondXmitHashPolicy".into(), json!(value));
        } else if k != "xmit_hash_policy" && crate::network_data::BOND_OPTIONS.contains(&k) {
            // CAPM3 renders each as `bond_<name>`, as
            // network_data.json carries them.
            let value = value
                .parse::<u64>()
                .map(J::from)
                .unwrap_or(J::String(value));
            parameters.insert(k.into(), value);
        } else {
            errors.push(unsupported(
                host,
                v,
                format!("the bond option `{k}: {value}` of `{name}`"),
            ));
        }
    }
    parameters
}

/// Routes through an interface: the gateway from the interface's pool
/// when it is in that pool's network (the first such gateway becomes the
/// pool's), else written out.
fn pool_routes(
    routes: Vec<(&crate::intent::Route, IpAddr)>,
    pool: Option<&str>,
    pools: &mut BTreeMap<String, Pool>,
) -> Vec<J> {
    let mut rs = Vec::new();
    for (r, via) in routes {
        let gateway = match pool.and_then(|p| pools.get_mut(p)) {
            Some(p) if p.net.is_some_and(|n| n.contains(&via)) => match p.gateway {
                None => {
                    p.gateway = Some(via);
                    json!({"fromIPPool": pool})
                }
                Some(g) if g == via => json!({"fromIPPool": pool}),
                Some(_) => json!({"string": via.to_string()}),
            },
            _ => json!({"string": via.to_string()}),
        };
        rs.push(json!({
            "network": r.destination.network().to_string(),
            "prefix": r.destination.prefix_len(),
            "gateway": gateway,
        }));
    }
    rs
}

/// The templates and pools for the hosts of `inv`: one file per template,
/// `metal3/ippools.yaml` for the pools; and the hosts left out, with why.
pub fn metal3(inv: &Inventory) -> (Vec<OutFile>, Vec<Diagnostic>) {
    let cluster = inv
        .cluster
        .name
        .as_ref()
        .map(|n| crate::artifacts::dns_label(&n.value))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "cluster".into());
    let pool_name = |net: &IpNet| {
        let fam = if net.addr().is_ipv6() { "v6" } else { "v4" };
        let addr = net.network().to_string().replace(['.', ':'], "-");
        let name = format!("{cluster}-{fam}-{addr}-{}", net.prefix_len());
        let mut squeezed = String::new();
        for c in name.chars() {
            if !(c == '-' && squeezed.ends_with('-')) {
                squeezed.push(c);
            }
        }
        crate::artifacts::dns_label(&squeezed)
    };
    let mut pools: BTreeMap<String, Pool> = BTreeMap::new();
    // Template spec (as text, to group by) → its hosts.
    let mut templates: Vec<(J, Vec<String>)> = Vec::new();
    let mut errors = Vec::new();
    for h in inv.hosts.iter().filter(|h| h.scope() == Scope::FirstBoot) {
        let mut mine = BTreeMap::new();
        match network_data_spec(h, &mut mine, &pool_name) {
            Err(e) => errors.extend(e),
            Ok(spec) => {
                for (name, p) in mine {
                    let pool = pools.entry(name).or_default();
                    pool.net = p.net;
                    pool.addresses.extend(p.addresses);
                    if pool.gateway.is_none() {
                        pool.gateway = p.gateway;
                    }
                }
                match templates.iter_mut().find(|(s, _)| *s == spec) {
                    Some((_, hosts)) => hosts.push(h.name.value.clone()),
                    None => templates.push((spec, vec![h.name.value.clone()])),
                }
            }
        }
    }
    let mut files = Vec::new();
    for (k, (spec, hosts)) in templates.into_iter().enumerate() {
        let name = format!("{cluster}-{k}");
        let doc = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "Metal3DataTemplate",
            "metadata": {
                "name": name,
                // Which hosts this template is for (CAPM3 decides at run
                // time; nodenet reads the template back by it).
                "annotations": {nodenet_model::load::METAL3_HOSTS_ANNOTATION: hosts.join(",")},
            },
            "spec": {"clusterName": cluster, "networkData": spec},
        });
        files.push(OutFile::new(
            format!("metal3/{name}.yaml"),
            format!("# hosts: {}\n{}", hosts.join(", "), yaml(&doc)),
            0o644,
        ));
    }
    let mut docs = Vec::new();
    for (name, p) in &pools {
        let Some(net) = p.net else { continue };
        let (lo, hi) = (
            p.addresses.values().min().copied(),
            p.addresses.values().max().copied(),
        );
        let (Some(lo), Some(hi)) = (lo, hi) else {
            continue;
        };
        let pre: Map<String, J> = p
            .addresses
            .iter()
            .map(|(h, ip)| {
                (
                    format!("{}-{name}", crate::artifacts::dns_label(h)),
                    json!(ip.to_string()),
                )
            })
            .collect();
        let mut spec = Map::new();
        spec.insert("clusterName".into(), json!(cluster));
        spec.insert("namePrefix".into(), json!(name));
        spec.insert(
            "pools".into(),
            json!([{"start": lo.to_string(), "end": hi.to_string(), "subnet": net.to_string()}]),
        );
        spec.insert("prefix".into(), json!(net.prefix_len()));
        if let Some(g) = p.gateway {
            spec.insert("gateway".into(), json!(g.to_string()));
        }
        spec.insert("preAllocations".into(), J::Object(pre));
        docs.push(json!({
            "apiVersion": "ipam.metal3.io/v1alpha1",
            "kind": "IPPool",
            "metadata": {"name": name},
            "spec": spec,
        }));
    }
    if !docs.is_empty() {
        let text: Vec<String> = docs.iter().map(yaml).collect();
        files.push(OutFile::new(
            "metal3/ippools.yaml".to_string(),
            format!(
                "# preAllocations are keyed <BareMetalHost>-<pool>: CAPM3 reads them with --enable-bmh-name-based-preallocation\n{}",
                text.join("---\n")
            ),
            0o644,
        ));
    }
    (files, errors)
}

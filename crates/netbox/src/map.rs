//! NetBox objects → a nodenet inventory (docs/netbox.md): a device is a
//! host, its interfaces the NIC table and the NMState intent, its IP
//! addresses static addresses, its out-of-band address the BMC, the
//! virtualization cluster the OpenShift cluster. What NetBox cannot say
//! comes from the device's config context (`nodenet:` key), merged over
//! what the objects say.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value as J};

use nodenet_model::{Code, Severity};

use crate::emit::{emit, Y};
use crate::objects::{Device, Interface, IpAddress, Snapshot, Vlan};
use crate::{Finding, Generated};

/// The config context key nodenet reads.
pub const CONTEXT_KEY: &str = "nodenet";
const CONTEXT: &str = "config context";
/// The device custom field that gives its BMC's address (`${oob_ip}` in
/// it filled in), over the config context's.
pub const BMC_FIELD: &str = "bmc_address";
/// The host label carrying the NetBox device's id.
pub const DEVICE_LABEL: &str = "netbox/device-id";

/// A finding before it has a place: said at a note line.
struct Pending {
    severity: Severity,
    message: String,
    help: Option<String>,
    host: Option<String>,
}

#[derive(Default)]
pub(crate) struct Findings(Vec<Pending>);

impl Findings {
    /// A note line for a finding about an object (its page in the text).
    pub(crate) fn note(
        &mut self,
        severity: Severity,
        host: Option<&str>,
        message: String,
        help: &str,
    ) -> Y {
        self.0.push(Pending {
            severity,
            message: message.clone(),
            help: (!help.is_empty()).then(|| help.to_string()),
            host: host.map(str::to_string),
        });
        Y::Note(
            format!(
                "{}: {message}",
                if severity == Severity::Error {
                    "error"
                } else {
                    "not read"
                }
            ),
            self.0.len() - 1,
        )
    }
}

/// The page of an object (`display_url`, or its API URL without `/api`).
pub(crate) fn page(url: &str, display_url: Option<&String>) -> String {
    match display_url {
        Some(u) if !u.is_empty() => u.clone(),
        _ => url.replacen("/api/", "/", 1),
    }
}

/// The device's `nodenet:` config context, if any.
fn context(d: &Device) -> Option<&Map<String, J>> {
    d.config_context.as_ref()?.get(CONTEXT_KEY)?.as_object()
}

pub fn inventory(source: &str, base: &str, snap: &Snapshot) -> Generated {
    let mut findings = Findings::default();
    let mut devices: Vec<&Device> = snap.devices.iter().collect();
    devices.sort_by(|a, b| a.name.cmp(&b.name));
    let mut top: Vec<(String, Y)> = vec![("nodenet".into(), Y::scalar("v1", None))];
    let mut notes = Vec::new();
    if devices.is_empty() {
        notes.push((
            "hosts-note".to_string(),
            findings.note(
                Severity::Error,
                None,
                format!("{source} selects no device in NetBox at {base}"),
                "check the filters (site and role slugs, the cluster's name) and the token's permissions",
            ),
        ));
    }
    top.push(("cluster".into(), cluster(snap, &devices, &mut findings)));
    if let Some(creds) = devices.iter().find_map(|d| context(d)?.get("credentials")) {
        top.push(("credentials".into(), Y::from_json(creds, CONTEXT)));
    }
    let index = Index::new(snap);
    let hosts: Vec<Y> = devices
        .iter()
        .filter_map(|d| host(d, &index, &mut findings, &mut notes))
        .collect();
    top.extend(notes);
    top.push(("hosts".into(), Y::Seq(hosts)));
    let header = format!(
        "nodenet inventory read from NetBox at {base} ({source}).\nEach value's source is on its line: a NetBox object's page, or the device's config context (`{CONTEXT_KEY}:`)."
    );
    let (text, placed) = emit(&top, &header);
    let mut out: Vec<Finding> = placed
        .into_iter()
        .map(|(i, at, len)| {
            let p = &findings.0[i];
            Finding {
                severity: p.severity,
                code: Code::NetboxUnmapped,
                message: p.message.clone(),
                help: p.help.clone(),
                at: (at, len),
                host: p.host.clone(),
            }
        })
        .collect();
    out.sort_by_key(|f| f.at);
    Generated {
        name: source.to_string(),
        text,
        findings: out,
        devices: 0,
        requests: 0,
    }
}

/// Lookups by id across the snapshot.
pub(crate) struct Index<'a> {
    interfaces: HashMap<u64, Vec<&'a Interface>>,
    pub(crate) by_interface: HashMap<u64, Vec<&'a IpAddress>>,
    pub(crate) vlans: HashMap<u64, &'a Vlan>,
    /// Prefixes whose custom field `gateway` names one: the prefix, its
    /// VRF, the gateway, and the prefix's page.
    gateways: Vec<(ipnet::IpNet, Option<u64>, std::net::IpAddr, String)>,
}

/// The prefix custom field that names a prefix's default gateway (NetBox
/// has no field of its own for it): text (`10.0.110.1`, a `/len` allowed)
/// or an object field pointing at an IP address.
pub const GATEWAY_FIELD: &str = "gateway";

impl Index<'_> {
    /// The default gateway of `a`'s most specific prefix (same VRF) that
    /// names one, and where it was read.
    pub(crate) fn gateway_of(&self, a: &IpAddress) -> Option<(std::net::IpAddr, &str)> {
        let ip: std::net::IpAddr = a.address.split('/').next()?.parse().ok()?;
        let vrf = a.vrf.as_ref().map(|v| v.id);
        self.gateways
            .iter()
            .filter(|(net, v, gw, _)| {
                *v == vrf && net.contains(&ip) && gw.is_ipv6() == ip.is_ipv6()
            })
            .max_by_key(|(net, ..)| net.prefix_len())
            .map(|(_, _, gw, page)| (*gw, page.as_str()))
    }
}

/// A prefix's gateway custom field, read.
fn gateway_field(p: &crate::objects::Prefix) -> Option<std::net::IpAddr> {
    let v = p.custom_fields.get(GATEWAY_FIELD)?;
    let text = v.as_str().or_else(|| v.get("address")?.as_str())?;
    text.trim().split('/').next()?.parse().ok()
}

impl<'a> Index<'a> {
    fn new(snap: &'a Snapshot) -> Index<'a> {
        let mut interfaces: HashMap<u64, Vec<&Interface>> = HashMap::new();
        for i in &snap.interfaces {
            interfaces.entry(i.device.id).or_default().push(i);
        }
        let mut by_interface: HashMap<u64, Vec<&IpAddress>> = HashMap::new();
        for a in &snap.addresses {
            if a.assigned_object_type.as_deref() == Some("dcim.interface") {
                if let Some(id) = a.assigned_object_id {
                    by_interface.entry(id).or_default().push(a);
                }
            }
        }
        let gateways = snap
            .prefixes
            .iter()
            .filter_map(|p| {
                Some((
                    p.prefix.parse().ok()?,
                    p.vrf.as_ref().map(|v| v.id),
                    gateway_field(p)?,
                    format!(
                        "{} (custom field `{GATEWAY_FIELD}`)",
                        page(&p.url, p.display_url.as_ref())
                    ),
                ))
            })
            .collect();
        Index {
            interfaces,
            by_interface,
            vlans: snap.vlans.iter().map(|v| (v.id, v)).collect(),
            gateways,
        }
    }
}

/// `cluster:`: its name from NetBox's cluster, the rest from the config
/// context, VIPs from addresses of role VIP named like OpenShift's.
fn cluster(snap: &Snapshot, devices: &[&Device], findings: &mut Findings) -> Y {
    let mut entries = Vec::new();
    let clusters: BTreeMap<&str, &crate::objects::Ref> = devices
        .iter()
        .filter_map(|d| d.cluster.as_ref())
        .map(|c| (c.name.as_deref().unwrap_or(""), c))
        .collect();
    let name = match (&snap.cluster, clusters.first_key_value()) {
        (Some(c), _) => Some((c.name.clone(), page(&c.url, c.display_url.as_ref()))),
        (None, Some((n, c))) => Some((n.to_string(), page(&c.url, c.display_url.as_ref()))),
        (None, None) => None,
    };
    if clusters.len() > 1 {
        entries.push((
            "clusters-note".to_string(),
            findings.note(
                Severity::Error,
                None,
                format!(
                    "the devices selected are in {} NetBox clusters ({}): an inventory is one cluster",
                    clusters.len(),
                    clusters.keys().copied().collect::<Vec<_>>().join(", ")
                ),
                "add `cluster=NAME` to the netbox: input",
            ),
        ));
    }
    let ctx = devices
        .iter()
        .find_map(|d| context(d)?.get("cluster")?.as_object());
    match (name, ctx.and_then(|c| c.get("name"))) {
        (_, Some(n)) => entries.push(("name".into(), Y::from_json(n, CONTEXT))),
        (Some((n, p)), None) => entries.push(("name".into(), Y::scalar(n, Some(p)))),
        (None, None) => {}
    }
    if let Some(ctx) = ctx {
        for (k, v) in ctx.iter().filter(|(k, _)| *k != "name") {
            entries.push((k.clone(), Y::from_json(v, CONTEXT)));
        }
    }
    let cluster_name = entries.iter().find_map(|(k, v)| match (k.as_str(), v) {
        ("name", Y::Scalar(J::String(s), _)) => Some(s.clone()),
        _ => None,
    });
    let domain = ctx.and_then(|c| c.get("baseDomain")?.as_str());
    if let (Some(name), Some(domain)) = (cluster_name, domain) {
        let zone = format!("{name}.{domain}");
        // The VIPs of the hosts' own VRFs (or the global table's): another
        // VRF may hold a cluster of the same name. Hosts on DHCP only
        // name no VRF: then any VIP of the cluster's DNS names.
        let vrfs: std::collections::HashSet<Option<u64>> = snap
            .addresses
            .iter()
            .map(|a| a.vrf.as_ref().map(|v| v.id))
            .collect();
        for (key, names) in [
            ("apiVIPs", vec![format!("api.{zone}")]),
            (
                "ingressVIPs",
                vec![format!("*.apps.{zone}"), format!("apps.{zone}")],
            ),
        ] {
            if ctx.is_some_and(|c| c.contains_key(key)) {
                continue;
            }
            let vips: Vec<Y> = snap
                .vips
                .iter()
                .filter(|a| vrfs.is_empty() || vrfs.contains(&a.vrf.as_ref().map(|v| v.id)))
                .filter(|a| names.iter().any(|n| a.dns_name.eq_ignore_ascii_case(n)))
                .map(|a| {
                    Y::scalar(
                        address_only(&a.address),
                        Some(page(&a.url, a.display_url.as_ref())),
                    )
                })
                .collect();
            if !vips.is_empty() {
                entries.push((key.to_string(), Y::Seq(vips)));
            }
        }
    }
    Y::Map(entries, None)
}

/// `10.0.0.5/24` → `10.0.0.5`.
fn address_only(cidr: &str) -> String {
    cidr.split('/').next().unwrap_or(cidr).to_string()
}

/// The cluster role of a device role's slug.
fn role_of(slug: &str) -> Option<&'static str> {
    let s = slug.to_ascii_lowercase();
    if s.contains("master") || s.contains("control") {
        Some("master")
    } else if s.contains("arbiter") {
        Some("arbiter")
    } else if s.contains("worker") || s.contains("compute") {
        Some("worker")
    } else {
        None
    }
}

/// One device as a host; `None` (and a finding) when it cannot be one.
fn host(
    d: &Device,
    index: &Index,
    findings: &mut Findings,
    notes: &mut Vec<(String, Y)>,
) -> Option<Y> {
    let device_page = page(&d.url, d.display_url.as_ref());
    let Some(name) = d.name.clone().filter(|n| !n.is_empty()) else {
        notes.push((
            format!("device-{}", d.id),
            findings.note(
                Severity::Error,
                None,
                format!("device {device_page} has no name: a host needs one"),
                "name the device in NetBox",
            ),
        ));
        return None;
    };
    let ctx = context(d);
    let host_ctx = ctx.and_then(|c| c.get("host")?.as_object());
    let role = match (host_ctx.and_then(|h| h.get("role")), &d.role) {
        (Some(r), _) => Y::from_json(r, CONTEXT),
        (None, Some(r)) => {
            let slug = r.slug.clone().or(r.name.clone()).unwrap_or_default();
            match role_of(&slug) {
                Some(role) => Y::scalar(role, Some(format!("device role `{slug}`"))),
                None => {
                    notes.push((
                        format!("device-{}", d.id),
                        findings.note(
                            Severity::Error,
                            Some(&name),
                            format!(
                                "device {name} ({device_page}): device role `{slug}` is no cluster role (master, worker, arbiter)"
                            ),
                            "name the role like the cluster role (`worker`, `control-plane`), or set `nodenet: {host: {role: worker}}` in its config context",
                        ),
                    ));
                    return None;
                }
            }
        }
        (None, None) => Y::scalar("worker", Some("no device role: worker".into())),
    };
    let mut entries = vec![
        (
            "name".to_string(),
            Y::scalar(name.clone(), Some(device_page)),
        ),
        ("role".to_string(), role),
        (
            "labels".to_string(),
            Y::Map(
                vec![(DEVICE_LABEL.into(), Y::scalar(d.id.to_string(), None))],
                None,
            ),
        ),
    ];
    if let Some(bmc) = bmc(d, host_ctx) {
        entries.push(("bmc".into(), bmc));
    }
    for (k, v) in host_ctx
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), "role" | "bmc" | "name"))
    {
        entries.push((k.clone(), Y::from_json(v, CONTEXT)));
    }
    let interfaces = index
        .interfaces
        .get(&d.id)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if let Some(nics) = nics(interfaces) {
        entries.push(("nics".into(), nics));
    }
    let (network, unread) = crate::map_network::network(d, &name, interfaces, index, findings);
    entries.extend(unread);
    let network = match ctx.and_then(|c| c.get("network")) {
        Some(over) => merge(network, Y::from_json(over, CONTEXT)),
        None => network,
    };
    entries.push(("network".into(), network));
    Some(Y::Map(entries, None))
}

/// `nics:`: each physical port's primary MAC address (empty without
/// one), and where its
/// cable ends (the switch's device name, its port) when NetBox has the
/// cable: then in the list form, for the wiring checks and `check
/// --observed` (docs/wires.md).
fn nics(interfaces: &[&Interface]) -> Option<Y> {
    let ports: Vec<&&Interface> = interfaces
        .iter()
        .filter(|i| physical(&i.kind.value) && !i.mgmt_only)
        .collect();
    let mac = |i: &Interface| {
        i.primary_mac_address
            .as_ref()
            .map(|m| m.mac_address.clone())
            .or(i.mac_address.clone())
            // NetBox shows MACs in capitals; the kernel, nmstate and the
            // agent's inventory in small letters.
            .map(|m| m.to_ascii_lowercase())
    };
    let src = |i: &Interface| Some(page(&i.url, i.display_url.as_ref()));
    if ports.iter().any(|i| i.cabled_to().is_some()) {
        let list: Vec<Y> = ports
            .iter()
            .map(|i| {
                let mut e = vec![("name".to_string(), Y::scalar(i.name.clone(), src(i)))];
                if let Some(m) = mac(i) {
                    e.push(("mac".into(), Y::scalar(m, None)));
                }
                if let Some((switch, port)) = i.cabled_to() {
                    e.push(("switch".into(), Y::scalar(switch, Some("cable".into()))));
                    e.push(("port".into(), Y::scalar(port, Some("cable".into()))));
                }
                Y::Map(e, None)
            })
            .collect();
        return Some(Y::Seq(list));
    }
    // A port NetBox holds without a MAC is listed with none: `discover`
    // asks its BMC (and `--write-netbox` records what it says).
    let map: Vec<(String, Y)> = ports
        .iter()
        .map(|i| {
            (
                i.name.clone(),
                Y::scalar(mac(i).unwrap_or_default(), src(i)),
            )
        })
        .collect();
    (!map.is_empty()).then_some(Y::Map(map, None))
}

/// `bmc:` from the config context (`${oob_ip}` in its address filled in)
/// or the out-of-band address (Redfish virtual media, system 1).
fn bmc(d: &Device, host_ctx: Option<&Map<String, J>>) -> Option<Y> {
    let oob = d.oob_ip.as_ref();
    let oob_ip = oob.map(|a| address_only(&a.address));
    let oob_page = oob.map(|a| page(&a.url, a.display_url.as_ref()));
    let ctx = host_ctx.and_then(|h| h.get("bmc")?.as_object());
    // The device's own custom field first, then the config context.
    let address = match d.custom_fields.get(BMC_FIELD).and_then(J::as_str) {
        Some(a) if !a.is_empty() => Some((a, format!("custom field `{BMC_FIELD}`"))),
        _ => ctx
            .and_then(|c| c.get("address")?.as_str())
            .map(|a| (a, CONTEXT.to_string())),
    };
    if ctx.is_none() && oob.is_none() && address.is_none() {
        return None;
    }
    let mut entries = Vec::new();
    match (address, &oob_ip) {
        (Some((a, from)), Some(ip)) if a.contains("${oob_ip}") => entries.push((
            "address".to_string(),
            Y::scalar(
                a.replace("${oob_ip}", ip),
                Some(format!("{from}, oob_ip {}", oob_page.clone().unwrap_or_default())),
            ),
        )),
        (Some((a, from)), _) => entries.push(("address".into(), Y::scalar(a, Some(from)))),
        (None, Some(ip)) => entries.push((
            "address".into(),
            Y::scalar(
                format!("redfish-virtualmedia://{ip}/redfish/v1/Systems/1"),
                Some(format!(
                    "oob_ip {} (Redfish system 1 assumed: `{CONTEXT_KEY}: {{host: {{bmc: {{address: …}}}}}}` in a config context says otherwise)",
                    oob_page.clone().unwrap_or_default()
                )),
            ),
        )),
        (None, None) => {}
    }
    for (k, v) in ctx.into_iter().flatten().filter(|(k, _)| *k != "address") {
        entries.push((k.clone(), Y::from_json(v, CONTEXT)));
    }
    if !entries.iter().any(|(k, _)| k == "credentials") {
        entries.push((
            "credentials".into(),
            Y::scalar("bmc", Some("default: credentials `bmc`".into())),
        ));
    }
    Some(Y::Map(entries, None))
}

/// A NetBox interface type of a physical port.
pub(crate) fn physical(kind: &str) -> bool {
    !matches!(
        kind,
        "virtual" | "lag" | "bridge" | "other" | "other-wireless"
    ) && !kind.starts_with("ieee802.11")
        && !matches!(kind, "gsm" | "cdma" | "lte" | "4g" | "5g")
}

/// `over` merged over `base`: mappings key by key, `interfaces` entry by
/// `name`, anything else replaced.
pub(crate) fn merge(base: Y, over: Y) -> Y {
    match (base, over) {
        (Y::Map(mut b, c), Y::Map(o, _)) => {
            for (k, v) in o {
                match b.iter_mut().find(|(bk, _)| *bk == k) {
                    // An equal value keeps the source it had.
                    Some((_, Y::Scalar(was, _))) if matches!(&v, Y::Scalar(now, _) if now == was) =>
                        {}
                    Some((_, slot)) => {
                        let old = std::mem::replace(slot, Y::Seq(Vec::new()));
                        *slot = if k == "interfaces" {
                            merge_by_name(old, v)
                        } else {
                            merge(old, v)
                        };
                    }
                    None => b.push((k, v)),
                }
            }
            Y::Map(b, c)
        }
        (_, over) => over,
    }
}

/// Interfaces merged as nmstate tells them apart: by name and type (an
/// OVS bridge and its internal interface share a name), an entry
/// without a type by name alone.
fn merge_by_name(base: Y, over: Y) -> Y {
    let field = |y: &Y, key: &str| match y {
        Y::Map(m, _) => m.iter().find_map(|(k, v)| match v {
            Y::Scalar(J::String(s), _) if k == key => Some(s.clone()),
            _ => None,
        }),
        _ => None,
    };
    match (base, over) {
        (Y::Seq(mut b), Y::Seq(o)) => {
            for item in o {
                let name = field(&item, "name");
                let kind = field(&item, "type");
                let same = |x: &Y| {
                    name.is_some()
                        && field(x, "name") == name
                        && (kind.is_none() || field(x, "type") == kind)
                };
                match b.iter().position(same) {
                    Some(i) => {
                        let old = std::mem::replace(&mut b[i], Y::Seq(Vec::new()));
                        b[i] = merge(old, item);
                    }
                    None => b.push(item),
                }
            }
            Y::Seq(b)
        }
        (_, over) => over,
    }
}

#[cfg(test)]
mod tests;

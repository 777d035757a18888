//! The NetBox objects a read uses, as NetBox 4's REST API returns them
//! (only the fields nodenet reads), and fetching them for a query.

use serde::Deserialize;
use serde_json::Value as J;

use crate::{Client, Error, Query};

/// Clusters of one name listed in the error that asks for `site=`.
const SAME_NAMED_SHOWN: usize = 3;

/// A nested reference to another object (`device`, `role`, `lag`, …).
#[derive(Clone, Debug, Deserialize)]
pub struct Ref {
    pub id: u64,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub slug: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
}

/// A choice field (`{"value": "lag", "label": "Link Aggregation Group (LAG)"}`).
#[derive(Clone, Debug, Deserialize)]
pub struct Choice {
    pub value: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Device {
    pub id: u64,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
    pub name: Option<String>,
    pub role: Option<Ref>,
    pub site: Option<Ref>,
    #[serde(default)]
    pub cluster: Option<Ref>,
    #[serde(default)]
    pub oob_ip: Option<AddressRef>,
    #[serde(default)]
    pub config_context: Option<J>,
    #[serde(default)]
    pub custom_fields: serde_json::Map<String, J>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct AddressRef {
    pub address: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct VlanRef {
    pub id: u64,
    pub vid: u16,
}

#[derive(Clone, Debug, Deserialize)]
pub struct MacRef {
    pub mac_address: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Interface {
    pub id: u64,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
    pub device: Ref,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: Choice,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub parent: Option<Ref>,
    #[serde(default)]
    pub bridge: Option<Ref>,
    #[serde(default)]
    pub lag: Option<Ref>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub mgmt_only: bool,
    #[serde(default)]
    pub mode: Option<Choice>,
    #[serde(default)]
    pub untagged_vlan: Option<VlanRef>,
    #[serde(default)]
    pub tagged_vlans: Vec<VlanRef>,
    /// NetBox 4.2+: the MAC address object the interface uses.
    #[serde(default)]
    pub primary_mac_address: Option<MacRef>,
    /// Before 4.2 a plain field (read-only since).
    #[serde(default)]
    pub mac_address: Option<String>,
    /// The far end of the cable path (through patch panels).
    #[serde(default)]
    pub connected_endpoints: Option<Vec<Endpoint>>,
    #[serde(default)]
    pub connected_endpoints_type: Option<String>,
    /// The cable's other end.
    #[serde(default)]
    pub link_peers: Vec<Endpoint>,
    #[serde(default)]
    pub link_peers_type: Option<String>,
}

/// A cable's end: an interface (or port) of a device.
#[derive(Clone, Debug, Deserialize)]
pub struct Endpoint {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub device: Option<Ref>,
}

impl Interface {
    /// The switch (device) and port its cable ends at: the path's far end,
    /// else the cable's other end when that is an interface.
    pub fn cabled_to(&self) -> Option<(String, String)> {
        let ends = match (
            &self.connected_endpoints,
            self.connected_endpoints_type.as_deref(),
        ) {
            (Some(ends), Some("dcim.interface")) if !ends.is_empty() => ends,
            _ if self.link_peers_type.as_deref() == Some("dcim.interface") => &self.link_peers,
            _ => return None,
        };
        let end = ends.first()?;
        Some((end.device.as_ref()?.name.clone()?, end.name.clone()?))
    }
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize)]
pub struct Vlan {
    pub id: u64,
    pub vid: u16,
    #[serde(default)]
    pub site: Option<Ref>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct IpAddress {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
    pub address: String,
    #[serde(default)]
    pub status: Option<Choice>,
    #[serde(default)]
    pub assigned_object_type: Option<String>,
    #[serde(default)]
    pub assigned_object_id: Option<u64>,
    #[serde(default)]
    pub dns_name: String,
    #[serde(default)]
    pub vrf: Option<Ref>,
}

/// A prefix, for the gateway its custom field `gateway` names.
#[derive(Clone, Debug, Deserialize)]
pub struct Prefix {
    pub prefix: String,
    #[serde(default)]
    pub vrf: Option<Ref>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
    #[serde(default)]
    pub custom_fields: serde_json::Map<String, J>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Cluster {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub display_url: Option<String>,
}

/// Everything one read uses.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub cluster: Option<Cluster>,
    pub devices: Vec<Device>,
    pub interfaces: Vec<Interface>,
    pub addresses: Vec<IpAddress>,
    pub vlans: Vec<Vlan>,
    /// Addresses of role VIP or anycast (the API and ingress VIPs).
    pub vips: Vec<IpAddress>,
    /// The prefixes of the addresses' VRFs (and the global table).
    pub prefixes: Vec<Prefix>,
}

/// Ids per list request (`?device_id=1&device_id=2…`), short of URL limits.
const IDS_PER_REQUEST: usize = 100;
/// Requests of one list sent at once: NetBox answers each on one of its
/// workers (a small deployment runs three or four), and more in flight
/// only queue there.
const IN_FLIGHT: usize = 4;

impl Snapshot {
    pub fn fetch(client: &Client, query: &Query) -> Result<Snapshot, Error> {
        let cluster = match &query.cluster {
            Some(name) => {
                // NetBox keeps cluster names unique per group and per
                // site only: the query's sites narrow them down.
                let mut filters = vec![("name", name.clone())];
                filters.extend(query.sites.iter().map(|s| ("site", s.clone())));
                let mut found: Vec<Cluster> = list(client, "virtualization/clusters", filters)?;
                match found.len() {
                    0 => {
                        return Err(Error::Query(format!(
                        "NetBox at {} has no cluster named `{name}`{} (Virtualization → Clusters)",
                        client.base(),
                        if query.sites.is_empty() {
                            ""
                        } else {
                            " at the sites named"
                        }
                    )))
                    }
                    1 => Some(found.swap_remove(0)),
                    n => {
                        // What to do first, then a few of them: a NetBox
                        // with dozens would push the advice out of a
                        // bounded message.
                        let mut pages: Vec<String> = found
                            .iter()
                            .take(SAME_NAMED_SHOWN)
                            .map(|c| crate::map::page(&c.url, c.display_url.as_ref()))
                            .collect();
                        if n > SAME_NAMED_SHOWN {
                            pages.push(format!("and {} more", n - SAME_NAMED_SHOWN));
                        }
                        return Err(Error::Query(format!(
                            "NetBox at {} has {n} clusters named `{name}`: add `site=` to the netbox: input to say which ({})",
                            client.base(),
                            pages.join(", ")
                        )));
                    }
                }
            }
            None => None,
        };
        let devices: Vec<Device> = list(
            client,
            "dcim/devices",
            query.device_filters(cluster.as_ref().map(|c| c.id)),
        )?;
        let ids: Vec<u64> = devices.iter().map(|d| d.id).collect();
        // What the devices hold, side by side (NetBox serves requests on
        // several workers; each is mostly its own serializing).
        let (interfaces, (addresses, vips)) = std::thread::scope(|s| {
            let addresses = s.spawn(|| by_ids(client, "ipam/ip-addresses", "device_id", &ids));
            let vips = s.spawn(|| {
                list(
                    client,
                    "ipam/ip-addresses",
                    vec![("role", "vip".to_string()), ("role", "anycast".to_string())],
                )
            });
            let interfaces = by_ids::<Interface, _>(client, "dcim/interfaces", "device_id", &ids);
            let joined = |h: std::thread::ScopedJoinHandle<'_, Result<Vec<IpAddress>, Error>>| {
                h.join().expect("a NetBox request does not panic")
            };
            (interfaces, (joined(addresses), joined(vips)))
        });
        let (interfaces, addresses, vips) = (interfaces?, addresses?, vips?);
        let mut vlan_ids: Vec<u64> = interfaces
            .iter()
            .flat_map(|i| i.untagged_vlan.iter().chain(&i.tagged_vlans).map(|v| v.id))
            .collect();
        vlan_ids.sort_unstable();
        vlan_ids.dedup();
        let vlans = by_ids(client, "ipam/vlans", "id", &vlan_ids)?;
        let prefixes = prefixes_of(client, &addresses)?;
        Ok(Snapshot {
            cluster,
            devices,
            interfaces,
            addresses,
            vlans,
            vips,
            prefixes,
        })
    }
}

/// The prefixes of the VRFs the addresses are in (`null`: the global
/// table), for their gateways.
fn prefixes_of(client: &Client, addresses: &[IpAddress]) -> Result<Vec<Prefix>, Error> {
    let mut vrfs: Vec<String> = addresses
        .iter()
        .map(|a| {
            a.vrf
                .as_ref()
                .map_or("null".to_string(), |v| v.id.to_string())
        })
        .collect();
    vrfs.sort();
    vrfs.dedup();
    if vrfs.is_empty() {
        return Ok(Vec::new());
    }
    list(
        client,
        "ipam/prefixes",
        vrfs.into_iter().map(|v| ("vrf_id", v)).collect(),
    )
}

/// The fields of an object a read uses: NetBox 4 serializes only those
/// (`?fields=`), which for interfaces is a quarter of the time (their
/// cable paths and counts are the rest: 1.24 s against 0.30 s for 500
/// interfaces here).
pub(crate) trait Fields: serde::de::DeserializeOwned {
    const FIELDS: &'static str;
}

impl Fields for Cluster {
    const FIELDS: &'static str = "id,name,url,display_url";
}

impl Fields for Device {
    const FIELDS: &'static str =
        "id,url,display_url,name,role,site,cluster,oob_ip,config_context,custom_fields";
}

impl Fields for Interface {
    const FIELDS: &'static str = "id,url,display_url,device,name,type,enabled,parent,bridge,lag,mtu,mgmt_only,mode,untagged_vlan,tagged_vlans,primary_mac_address,mac_address,connected_endpoints,connected_endpoints_type,link_peers,link_peers_type";
}

impl Fields for IpAddress {
    const FIELDS: &'static str =
        "url,display_url,address,status,assigned_object_type,assigned_object_id,dns_name,vrf";
}

impl Fields for Prefix {
    const FIELDS: &'static str = "prefix,vrf,url,display_url,custom_fields";
}

impl Fields for Vlan {
    const FIELDS: &'static str = "id,vid,site,url,display_url";
}

/// Every object of `endpoint` that `filters` select, with the fields a
/// read uses.
fn list<T: Fields>(
    client: &Client,
    endpoint: &str,
    mut filters: Vec<(&'static str, String)>,
) -> Result<Vec<T>, Error> {
    filters.push(("fields", T::FIELDS.to_string()));
    client.list(endpoint, &filters)
}

/// The objects of `endpoint` whose `key` is one of `ids`, a batch of ids
/// per request, [`IN_FLIGHT`] batches at a time, in the order of `ids`.
pub(crate) fn by_ids<T: Fields + Send, V: ToString + Sync>(
    client: &Client,
    endpoint: &str,
    key: &'static str,
    ids: &[V],
) -> Result<Vec<T>, Error> {
    let chunks: Vec<&[V]> = ids.chunks(IDS_PER_REQUEST).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut answers: Vec<(usize, Result<Vec<T>, Error>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..IN_FLIGHT.min(chunks.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(chunk) = chunks.get(k) else { break };
                        let filters = chunk.iter().map(|id| (key, id.to_string())).collect();
                        let answer = list(client, endpoint, filters);
                        let failed = answer.is_err();
                        mine.push((k, answer));
                        if failed {
                            break;
                        }
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a NetBox request does not panic"))
            .collect()
    });
    answers.sort_by_key(|(k, _)| *k);
    let mut out = Vec::new();
    for (_, answer) in answers {
        out.extend(answer?);
    }
    Ok(out)
}

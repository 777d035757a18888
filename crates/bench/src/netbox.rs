//! `--netbox 250,500,1000`: a cluster of N worker devices in the NetBox
//! of `NETBOX_URL`/`NETBOX_TOKEN` (filled through the bulk REST API once,
//! kept for the next run), read by `nodenet check` over REST, beside the
//! same objects asked for over NetBox's GraphQL API: which is faster.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use nodenet_netbox::Client;
use reqwest::Method;
use serde_json::{json, Value as J};

/// Objects per bulk request (one transaction each).
const BULK: usize = 500;
/// Devices per GraphQL request, and requests in flight: as the REST read
/// sends its lists (100 devices a request, four at a time).
const PER_REQUEST: usize = 100;
const IN_FLIGHT: usize = 4;

/// The first object of `endpoint` that `filters` select.
fn first(nb: &Client, endpoint: &str, filters: &[(&str, String)]) -> Result<Option<J>> {
    Ok(nb.list::<J>(endpoint, filters)?.into_iter().next())
}

fn post(nb: &Client, endpoint: &str, body: J) -> Result<J> {
    Ok(nb.write(Method::POST, endpoint, &body)?)
}

/// One object of `endpoint` named `name`, made with `body` if missing.
fn ensure(nb: &Client, endpoint: &str, name: &str, body: J) -> Result<J> {
    match first(nb, endpoint, &[("name", name.to_string())])? {
        Some(o) => Ok(o),
        None => post(nb, endpoint, body),
    }
}

/// Every object of `bodies` made (or changed) through the bulk endpoint:
/// the objects as NetBox answered them.
fn bulk(nb: &Client, endpoint: &str, method: Method, bodies: Vec<J>) -> Result<Vec<J>> {
    let mut made = Vec::with_capacity(bodies.len());
    for chunk in bodies.chunks(BULK) {
        let answer: Vec<J> = nb.write(method.clone(), endpoint, &J::Array(chunk.to_vec()))?;
        made.extend(answer);
    }
    Ok(made)
}

/// The cluster `nodenet-bench-N` and its site's slug: filled unless a
/// run before this one did.
fn fill(nb: &Client, n: usize) -> Result<(String, String)> {
    let name = format!("nodenet-bench-{n}");
    if let Some(c) = first(nb, "virtualization/clusters", &[("name", name.clone())])? {
        if c["device_count"].as_u64() != Some(n as u64) {
            bail!("{name} holds {} devices, not {n} (an interrupted fill): delete it in NetBox, or `.ci/netbox.sh reset`", c["device_count"]);
        }
        return Ok((name.clone(), name));
    }
    let start = Instant::now();
    let slug = |s: &str| json!({"name": s, "slug": s});
    let site = post(
        nb,
        "dcim/sites/",
        json!({"name": name, "slug": name, "status": "active"}),
    )?;
    let maker = ensure(
        nb,
        "dcim/manufacturers/",
        "nodenet-bench",
        slug("nodenet-bench"),
    )?;
    let dtype = match first(
        nb,
        "dcim/device-types",
        &[("model", "nodenet-bench".into())],
    )? {
        Some(t) => t,
        None => post(
            nb,
            "dcim/device-types/",
            json!({"manufacturer": maker["id"], "model": "nodenet-bench", "slug": "nodenet-bench"}),
        )?,
    };
    let role = ensure(
        nb,
        "dcim/device-roles/",
        "nodenet-bench-worker",
        json!({"name": "nodenet-bench-worker", "slug": "nodenet-bench-worker", "color": "2196f3"}),
    )?;
    let kind = ensure(
        nb,
        "virtualization/cluster-types/",
        "nodenet-bench",
        slug("nodenet-bench"),
    )?;
    let vrf = post(nb, "ipam/vrfs/", json!({"name": name}))?;
    let vlan = post(
        nb,
        "ipam/vlans/",
        json!({"vid": 110, "name": "v110", "site": site["id"], "status": "active"}),
    )?;
    let c = post(
        nb,
        "virtualization/clusters/",
        json!({"name": name, "type": kind["id"], "status": "active", "scope_type": "dcim.site", "scope_id": site["id"]}),
    )?;
    post(
        nb,
        "extras/config-contexts/",
        json!({"name": name, "weight": 1000, "clusters": [c["id"]], "data": {"nodenet": {
            "cluster": {"baseDomain": "example.com", "machineNetworks": ["10.20.0.0/16"]},
            "credentials": {"bmc": {"username": "admin", "passwordEnv": "BMC_PASSWORD"}},
            "host": {"bootMode": "UEFI"},
            "network": {
                "interfaces": [{"name": "bond0", "link-aggregation": {"options": {"miimon": "100"}}}],
                "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.20.0.1", "next-hop-interface": "bond0.110"}]},
                "dns-resolver": {"config": {"server": ["10.20.0.2"]}}}}}}),
    )?;
    for (vip, dns) in [
        ("10.20.0.5/32", format!("api.{name}.example.com")),
        ("10.20.0.4/32", format!("*.apps.{name}.example.com")),
    ] {
        post(
            nb,
            "ipam/ip-addresses/",
            json!({"address": vip, "vrf": vrf["id"], "role": "vip", "dns_name": dns, "status": "active"}),
        )?;
    }
    let post = Method::POST;
    let devices = bulk(
        nb, "dcim/devices/",
        post.clone(),
        (0..n)
            .map(|i| json!({"name": format!("worker-{i:05}"), "device_type": dtype["id"], "role": role["id"], "site": site["id"], "cluster": c["id"], "status": "active"}))
            .collect(),
    )?;
    let lags = bulk(
        nb,
        "dcim/interfaces/",
        post.clone(),
        devices
            .iter()
            .map(|d| json!({"device": d["id"], "name": "bond0", "type": "lag", "mtu": 9000}))
            .collect(),
    )?;
    let mut rest = Vec::new();
    for (d, lag) in devices.iter().zip(&lags) {
        for port in ["eno1", "eno2"] {
            rest.push(json!({"device": d["id"], "name": port, "type": "25gbase-x-sfp28", "mtu": 9000, "lag": lag["id"]}));
        }
        rest.push(json!({"device": d["id"], "name": "bond0.110", "type": "virtual", "parent": lag["id"], "mode": "access", "untagged_vlan": vlan["id"]}));
        rest.push(
            json!({"device": d["id"], "name": "bmc", "type": "1000base-t", "mgmt_only": true}),
        );
    }
    let rest = bulk(nb, "dcim/interfaces/", post.clone(), rest)?;
    let mut macs = Vec::new();
    let mut addresses = Vec::new();
    for (i, four) in rest.chunks(4).enumerate() {
        for (k, port) in four[..2].iter().enumerate() {
            macs.push(json!({"mac_address": format!("52:54:{:02x}:{:02x}:{:02x}:{:02x}", n % 256, i >> 8, i & 0xff, k + 1), "assigned_object_type": "dcim.interface", "assigned_object_id": port["id"]}));
        }
        let (a, b) = ((i + 10) / 250, (i + 10) % 250 + 1);
        addresses.push(json!({"address": format!("10.20.{a}.{b}/16"), "vrf": vrf["id"], "status": "active", "assigned_object_type": "dcim.interface", "assigned_object_id": four[2]["id"]}));
        addresses.push(json!({"address": format!("10.30.{a}.{b}/16"), "vrf": vrf["id"], "status": "active", "assigned_object_type": "dcim.interface", "assigned_object_id": four[3]["id"]}));
    }
    let macs = bulk(nb, "dcim/mac-addresses/", post.clone(), macs)?;
    let primaries: Vec<J> = macs
        .iter()
        .map(|m| json!({"id": m["assigned_object_id"], "primary_mac_address": m["id"]}))
        .collect();
    bulk(nb, "dcim/interfaces/", Method::PATCH, primaries)?;
    let addresses = bulk(nb, "ipam/ip-addresses/", post, addresses)?;
    let oob: Vec<J> = devices
        .iter()
        .zip(addresses.chunks(2))
        .map(|(d, two)| json!({"id": d["id"], "oob_ip": two[1]["id"]}))
        .collect();
    bulk(nb, "dcim/devices/", Method::PATCH, oob)?;
    println!(
        "  filled {name}: {n} devices, {} interfaces, {} MAC and {} IP address objects in {:.0} s",
        lags.len() + rest.len(),
        macs.len(),
        addresses.len() + 2,
        start.elapsed().as_secs_f64()
    );
    Ok((name.clone(), name))
}

/// What the REST read fetches, as one GraphQL query per `PER_REQUEST`
/// devices (`IN_FLIGHT` at once), plus the VIPs: seconds, requests, bytes.
fn graphql(nb: &Client, cluster_id: &J, n: usize) -> Result<(f64, usize, usize)> {
    const DEVICE: &str = "id name role { slug } site { slug } cluster { id name } oob_ip { address } config_context custom_fields interfaces { id name type enabled mtu mgmt_only mode lag { id name } parent { id name } bridge { id name } untagged_vlan { id vid site { id } } tagged_vlans { id vid site { id } } primary_mac_address { mac_address } ip_addresses { address status dns_name vrf { id } } link_peers { ... on InterfaceType { id name device { name } } } }";
    let id = cluster_id.to_string().trim_matches('"').to_string();
    let mut queries: Vec<String> = (0..n.div_ceil(PER_REQUEST))
        .map(|k| format!("query {{ device_list(filters: {{cluster_id: \"{id}\"}}, pagination: {{offset: {}, limit: {PER_REQUEST}}}) {{ {DEVICE} }} }}", k * PER_REQUEST))
        .collect();
    queries.push("query { ip_address_list(filters: {role: {exact: ROLE_VIP}}) { address dns_name vrf { id } } }".into());
    let start = Instant::now();
    let bytes = std::sync::atomic::AtomicUsize::new(0);
    let devices = std::sync::atomic::AtomicUsize::new(0);
    for batch in queries.chunks(IN_FLIGHT) {
        std::thread::scope(|s| -> Result<()> {
            let handles: Vec<_> = batch
                .iter()
                .map(|q| {
                    let (bytes, devices) = (&bytes, &devices);
                    s.spawn(move || -> Result<()> {
                        let answer = nb.graphql(q)?;
                        if let Some(e) = answer.get("errors").filter(|e| !e.is_null()) {
                            bail!("GraphQL: {e}");
                        }
                        bytes.fetch_add(
                            answer.to_string().len(),
                            std::sync::atomic::Ordering::Relaxed,
                        );
                        let got = answer["data"]["device_list"].as_array().map_or(0, Vec::len);
                        devices.fetch_add(got, std::sync::atomic::Ordering::Relaxed);
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("a request thread does not panic")?;
            }
            Ok(())
        })?;
    }
    let secs = start.elapsed().as_secs_f64();
    let got = devices.into_inner();
    if got != n {
        bail!("GraphQL returned {got} devices of {n}");
    }
    Ok((secs, queries.len(), bytes.into_inner()))
}

/// `nodenet check -v` of the cluster: the read's seconds and requests as
/// it says them, and the whole command's seconds.
fn rest(nodenet: &Path, cluster: &str, site: &str) -> Result<(f64, usize, f64)> {
    let start = Instant::now();
    let out = Command::new(nodenet)
        .args(["check", "-v", "--format", "json"])
        .arg(format!("netbox:?cluster={cluster}&site={site}"))
        .output()?;
    let whole = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    // `netbox: N device(s) read in R request(s), S s`
    let line = err
        .lines()
        .find(|l| l.contains("device(s) read in"))
        .with_context(|| format!("nodenet check said no read: {err}"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let requests = words[words.iter().position(|w| *w == "in").context("in")? + 1].parse()?;
    let secs = words[words.len() - 2].parse()?;
    Ok((secs, requests, whole))
}

pub fn run(nodenet: &Path, sizes: &[usize], runs: usize) -> Result<()> {
    let nb = Client::from_env()?;
    println!(
        "NetBox at {}: REST (nodenet check) and GraphQL, the same objects, best of {runs}:",
        nb.base()
    );
    println!(
        "  {:>8} {:>9} {:>9} {:>9} {:>12} {:>9} {:>9}",
        "devices", "REST s", "requests", "check s", "GraphQL s", "requests", "MiB"
    );
    for &n in sizes {
        let (cluster, site) = fill(&nb, n)?;
        let id = first(&nb, "virtualization/clusters", &[("name", cluster.clone())])?
            .context("the cluster just filled")?["id"]
            .clone();
        let (mut r, mut rq, mut whole) = (f64::MAX, 0, f64::MAX);
        let (mut g, mut gq, mut bytes) = (f64::MAX, 0, 0);
        for _ in 0..runs.max(1) {
            let (s, q, w) = rest(nodenet, &cluster, &site)?;
            (r, rq, whole) = (r.min(s), q, whole.min(w));
            let (s, q, b) = graphql(&nb, &id, n)?;
            (g, gq, bytes) = (g.min(s), q, b);
        }
        println!(
            "  {n:>8} {r:>9.2} {rq:>9} {whole:>9.2} {g:>12.2} {gq:>9} {:>9.1}",
            bytes as f64 / 1048576.0
        );
    }
    Ok(())
}

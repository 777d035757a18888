//! A real NetBox for the `netbox:` tests: `.ci/netbox.sh start` makes its
//! database, Redis and server ready (once per test process), and the tests
//! fill it through NetBox's own REST API, each under names of its own
//! (the database is kept between runs).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value as J};

use super::*;

/// Seconds a request to NetBox may take, the tests' own and nodenet's
/// (`NETBOX_TIMEOUT`): in the suite they run at the lowest priority beside
/// the lab, and NetBox's workers wait there for a core, a request for
/// minutes when the lab's VMs keep both busy.
const TIMEOUT_SECS: u64 = 600;

pub struct NetBox {
    pub url: String,
    pub token: String,
    addr: String,
}

/// The running NetBox, started on first use; `None` when it is not
/// installed (outside CI: the test is skipped; under `CI=true` it fails).
pub fn netbox() -> Option<&'static NetBox> {
    static NB: OnceLock<Option<NetBox>> = OnceLock::new();
    NB.get_or_init(start).as_ref()
}

fn cache() -> PathBuf {
    std::env::var_os("NODENET_NETBOX_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/nodenet-netbox")
        })
}

fn start() -> Option<NetBox> {
    if !cache().join("venv/bin/netbox").exists() {
        let ci = std::env::var_os("CI").is_some_and(|v| v == "true");
        assert!(
            !ci,
            "NetBox: required under CI=true (`make test-tools` installs it: .ci/netbox.sh install)"
        );
        eprintln!("SKIPPED netbox tests: NetBox is not installed (`bash .ci/netbox.sh install`)");
        return None;
    }
    let o = run(Command::new("bash")
        .arg(repo().join(".ci/netbox.sh"))
        .arg("start"));
    assert!(
        o.status.success(),
        ".ci/netbox.sh start: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let env = std::fs::read_to_string(cache().join("env")).expect("NetBox's env file");
    let get = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} in {env}"))
            .trim()
            .to_string()
    };
    let url = get("NETBOX_URL");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    Some(NetBox {
        url,
        token: get("NETBOX_TOKEN"),
        addr,
    })
}

impl NetBox {
    /// `METHOD /api/PATH` with a JSON body; the answer, which must be 2xx.
    pub fn call(&self, method: &str, path: &str, body: &J) -> J {
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        let request = format!(
            "{method} /api/{path} HTTP/1.0\r\nHost: {}\r\nAuthorization: Token {}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        );
        let timeout = std::time::Duration::from_secs(TIMEOUT_SECS);
        let (status, _, answer) = http_within(&self.addr, &request, timeout);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(
            (200..300).contains(&status),
            "{method} /api/{path} {body}: {status} {answer}"
        );
        serde_json::from_str(&answer).unwrap_or(J::Null)
    }

    pub fn post(&self, path: &str, body: J) -> J {
        self.call("POST", path, &body)
    }

    pub fn patch(&self, path: &str, body: J) -> J {
        self.call("PATCH", path, &body)
    }

    /// The binary under test, pointed at this NetBox.
    pub fn nodenet(&self) -> Command {
        let mut c = nodenet();
        c.env("NETBOX_URL", &self.url)
            .env("NETBOX_TOKEN", &self.token)
            .env("NETBOX_TIMEOUT", TIMEOUT_SECS.to_string())
            .env_remove("NETBOX_TOKEN_FILE");
        c
    }
}

/// Names no other test or run uses.
pub fn unique(what: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{what}-{}-{}-{}",
        std::process::id(),
        nanos % 100_000,
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// What a test's objects are: ids and pages as NetBox answered them.
pub struct Made {
    pub site: u64,
    pub site_slug: String,
    pub vrf: u64,
    pub cluster: String,
    pub device_type: u64,
    pub roles: std::collections::BTreeMap<&'static str, u64>,
    pub cluster_id: u64,
}

impl NetBox {
    /// A site, a VRF (addresses are unique per VRF, and the database is
    /// kept between runs), a device type, the roles, and a cluster of
    /// that site whose config context gives what NetBox does not hold.
    pub fn cluster(&self, context: J) -> Made {
        let tag = unique("t");
        let cluster = format!("ocp-{}", tag.replace('-', ""));
        self.cluster_of(tag, cluster, context)
    }

    /// [`NetBox::cluster`] under the name given (clusters are unique by
    /// name per site, and the site is new).
    pub fn cluster_named(&self, name: &str, context: J) -> Made {
        self.cluster_of(unique("t"), name.to_string(), context)
    }

    fn cluster_of(&self, tag: String, cluster: String, context: J) -> Made {
        let site = self.post(
            "dcim/sites/",
            json!({"name": tag, "slug": tag, "status": "active"}),
        );
        let vrf = self.post("ipam/vrfs/", json!({"name": tag}));
        let maker = self.post("dcim/manufacturers/", json!({"name": tag, "slug": tag}));
        let device_type = self.post(
            "dcim/device-types/",
            json!({"manufacturer": maker["id"], "model": tag, "slug": tag}),
        );
        let mut roles = std::collections::BTreeMap::new();
        for role in ["control-plane", "worker", "leaf"] {
            let name = format!("{role}-{tag}");
            let r = self.post(
                "dcim/device-roles/",
                json!({"name": name, "slug": name, "color": "2196f3"}),
            );
            roles.insert(role, r["id"].as_u64().unwrap());
        }
        let kind = self.post(
            "virtualization/cluster-types/",
            json!({"name": tag, "slug": tag}),
        );
        let c = self.post(
            "virtualization/clusters/",
            json!({"name": cluster, "type": kind["id"], "status": "active", "scope_type": "dcim.site", "scope_id": site["id"]}),
        );
        self.post(
            "extras/config-contexts/",
            json!({"name": tag, "weight": 1000, "clusters": [c["id"]], "data": context}),
        );
        Made {
            site: site["id"].as_u64().unwrap(),
            site_slug: tag,
            vrf: vrf["id"].as_u64().unwrap(),
            cluster,
            device_type: device_type["id"].as_u64().unwrap(),
            roles,
            cluster_id: c["id"].as_u64().unwrap(),
        }
    }

    pub fn device(&self, m: &Made, name: &str, role: &str) -> J {
        self.post(
            "dcim/devices/",
            json!({"name": name, "device_type": m.device_type, "role": m.roles[role],
                   "site": m.site, "cluster": m.cluster_id, "status": "active"}),
        )
    }

    /// A text custom field on `object_type`, made once for the database
    /// (kept between runs: a second make is refused as a duplicate).
    pub fn custom_field(&self, name: &str, object_type: &str) {
        let found = self.call(
            "GET",
            &format!("extras/custom-fields/?name={name}"),
            &J::Null,
        );
        if found["count"] == 0 {
            self.post(
                "extras/custom-fields/",
                json!({"name": name, "type": "text", "object_types": [object_type]}),
            );
        }
    }

    /// A switch of the cluster's site (in no cluster).
    pub fn switch(&self, m: &Made, name: &str) -> J {
        self.post(
            "dcim/devices/",
            json!({"name": name, "device_type": m.device_type, "role": m.roles["leaf"],
                   "site": m.site, "status": "active"}),
        )
    }

    /// A cable between two interfaces.
    pub fn cable(&self, a: &J, b: &J) {
        self.post(
            "dcim/cables/",
            json!({"a_terminations": [{"object_type": "dcim.interface", "object_id": a["id"]}],
                   "b_terminations": [{"object_type": "dcim.interface", "object_id": b["id"]}],
                   "status": "connected"}),
        );
    }

    /// An interface of `device`; `extra` fields as NetBox takes them.
    pub fn interface(&self, device: &J, name: &str, kind: &str, extra: J) -> J {
        let mut body = json!({"device": device["id"], "name": name, "type": kind});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        self.post("dcim/interfaces/", body)
    }

    /// A MAC address object, the interface's primary one.
    pub fn mac(&self, interface: &J, mac: &str) {
        let m = self.post(
            "dcim/mac-addresses/",
            json!({"mac_address": mac, "assigned_object_type": "dcim.interface", "assigned_object_id": interface["id"]}),
        );
        self.patch(
            &format!("dcim/interfaces/{}/", interface["id"]),
            json!({"primary_mac_address": m["id"]}),
        );
    }

    /// An address in the cluster's VRF, on `interface` (or none).
    pub fn address(&self, m: &Made, address: &str, interface: Option<&J>, extra: J) -> J {
        let mut body = json!({"address": address, "status": "active", "vrf": m.vrf});
        if let Some(i) = interface {
            body["assigned_object_type"] = json!("dcim.interface");
            body["assigned_object_id"] = i["id"].clone();
        }
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        self.post("ipam/ip-addresses/", body)
    }

    pub fn vlan(&self, site: u64, vid: u16) -> J {
        self.post(
            "ipam/vlans/",
            json!({"vid": vid, "name": format!("v{vid}"), "site": site, "status": "active"}),
        )
    }
}

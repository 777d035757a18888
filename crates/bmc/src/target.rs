//! Which BMCs a command acts on: each selected host's Redfish endpoint
//! and credentials, resolved from the inventory.

use nodenet_model::{Inventory, Secret};

use crate::Failure;

/// One host's BMC, resolved from the inventory.
pub struct Target {
    pub host: String,
    /// `http(s)://host[:port]`.
    pub base: String,
    /// The system's path when the address names it.
    pub system: Option<String>,
    pub username: String,
    pub password: Secret,
    pub insecure: bool,
}

/// Drivers that do virtual media over Redfish.
const VIRTUAL_MEDIA: &[&str] = &[
    "redfish-virtualmedia",
    "idrac-virtualmedia",
    "ilo5-virtualmedia",
    "redfish",
    "idrac-redfish",
    "ilo5-redfish",
];

/// `redfish-virtualmedia+http://10.0.0.1:8000/redfish/v1/Systems/U` →
/// (`http://10.0.0.1:8000`, `Some("/redfish/v1/Systems/U")`).
pub fn parse_address(address: &str) -> Result<(String, Option<String>), Failure> {
    let (scheme, rest) = address
        .split_once("://")
        .ok_or_else(|| Failure::Inventory(format!("`{address}` has no scheme")))?;
    let (driver, transport) = match scheme.rsplit_once('+') {
        Some((d, t @ ("http" | "https"))) => (d, t),
        _ => (scheme, "https"),
    };
    if !VIRTUAL_MEDIA.contains(&driver) {
        return Err(Failure::Inventory(format!(
            "`{driver}` is not a Redfish virtual-media driver"
        )));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(Failure::Inventory(format!(
            "`{address}` has no host (credentials belong in the inventory's `credentials`)"
        )));
    }
    let path = path.trim_end_matches('/');
    let system = path.contains("/Systems/").then(|| path.to_string());
    Ok((format!("{transport}://{authority}"), system))
}

impl Target {
    /// The BMC as the plan shows it: base URL and system path (never the
    /// credentials).
    pub fn bmc(&self) -> String {
        match &self.system {
            Some(s) => format!("{}{s}", self.base),
            None => format!("{} (its only system)", self.base),
        }
    }
}

/// Which hosts a BMC command acts on. There is no default: a command that
/// changes machines is told `All` or names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    All,
    Hosts(Vec<String>),
}

/// The BMC targets of the selected hosts, in inventory order.
pub fn targets(inv: &Inventory, select: &Select) -> Result<Vec<Target>, (String, Failure)> {
    let only: &[String] = match select {
        Select::All => &[],
        Select::Hosts(h) => h,
    };
    for h in only {
        if !inv.hosts.iter().any(|x| &x.name.value == h) {
            return Err((
                h.clone(),
                Failure::Inventory("no such host in the inventory".into()),
            ));
        }
    }
    let mut out = Vec::new();
    for host in inv
        .hosts
        .iter()
        .filter(|h| *select == Select::All || only.contains(&h.name.value))
    {
        let name = host.name.value.clone();
        let bmc = host.bmc.as_ref().ok_or_else(|| {
            (
                name.clone(),
                Failure::Inventory("the host has no `bmc`".into()),
            )
        })?;
        let (base, system) = parse_address(&bmc.address.value).map_err(|f| (name.clone(), f))?;
        let cred_name = bmc
            .credentials
            .as_ref()
            .map(|c| c.value.clone())
            .unwrap_or_default();
        let cred = inv.credentials.get(&cred_name).ok_or_else(|| {
            (
                name.clone(),
                Failure::Inventory(format!("no credentials `{cred_name}`")),
            )
        })?;
        let password = cred.value.resolve_password().ok_or_else(|| {
            (
                name.clone(),
                Failure::Inventory(format!(
                    "the password of credentials `{cred_name}` is not available"
                )),
            )
        })?;
        out.push(Target {
            host: name,
            base,
            system,
            username: cred.value.username.clone(),
            password,
            insecure: bmc.disable_certificate_verification,
        });
    }
    Ok(out)
}

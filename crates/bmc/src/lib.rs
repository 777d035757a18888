//! The BMC stage: Redfish virtual media for every host of an inventory —
//! power, boot override, insert/eject — and `provision`, which boots each
//! host from its own network-customised ISO, in parallel with a bound.
//!
//! The Redfish resources, the hosts' targets and errors need no network;
//! the client and the actions (feature `client`, on by default) bring
//! HTTP, TLS and tokio, which the fuzz targets leave out.

#[cfg(feature = "client")]
mod actions;
pub mod discovery;
pub mod redfish;

#[cfg(feature = "client")]
pub use actions::{discover, eject, power, provision, run_all, status};

use std::time::Duration;

use serde::{Deserialize, Serialize};

use nodenet_model::{Inventory, Secret};

/// What went wrong, without the host and step (see [`BmcError`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Failure {
    #[error("the BMC answered {status}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Http { status: u16, message: String },
    #[error("cannot reach the BMC ({0})")]
    Unreachable(String),
    /// Connected, then the BMC closed or reset the connection before its
    /// answer was complete.
    #[error("the BMC closed the connection before a complete answer ({0})")]
    Dropped(String),
    /// No (complete) answer: `waited` from the first send until given
    /// up; `deadline` when the last attempt was cut short by the host's
    /// deadline rather than ending at the per-request timeout.
    #[error("{}", timeout_text(*.waited, *.deadline))]
    Timeout { waited: Duration, deadline: bool },
    #[error("{0}")]
    Protocol(String),
    /// A change was sent, the answer was lost, and whether the BMC made
    /// it is unknown.
    #[error("{failure}; the BMC may have acted: {why}")]
    MayHaveActed { failure: Box<Failure>, why: String },
    #[error("{0}")]
    Inventory(String),
}

fn timeout_text(waited: Duration, deadline: bool) -> String {
    let secs = |d: Duration| {
        let s = d.as_secs_f64();
        if s >= 1.0 {
            format!("{s:.0} s")
        } else {
            format!("{s:.1} s")
        }
    };
    if waited.is_zero() {
        "the deadline passed before the request could be sent".into()
    } else if deadline {
        format!("no answer before the deadline (waited {})", secs(waited))
    } else {
        format!(
            "no answer within {} per attempt (waited {})",
            secs(redfish::REQUEST_TIMEOUT),
            secs(waited)
        )
    }
}

/// A failure at a named step (`powering off`, `inserting media`, ...),
/// with where it happened.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{step}: {failure}{}{}", hint(.failure), context(.at.as_deref(), *.attempts))]
pub struct BmcError {
    pub step: &'static str,
    pub failure: Failure,
    /// The request that failed (`GET http://bmc/redfish/v1/...`), else
    /// the BMC (`BMC http://bmc/...`); never credentials.
    pub at: Option<String>,
    /// How many times the request was sent (retries included).
    pub attempts: u32,
}

fn hint(f: &Failure) -> &'static str {
    match f {
        Failure::Http { status: 401, .. } => " (wrong username or password?)",
        Failure::Http { status: 404, .. } => " (unknown system or resource?)",
        _ => "",
    }
}

fn context(at: Option<&str>, attempts: u32) -> String {
    match (at, attempts) {
        (None, _) => String::new(),
        (Some(at), 0 | 1) => format!(" [{at}]"),
        (Some(at), n) => format!(" [{at}, {n} attempts]"),
    }
}

impl BmcError {
    pub fn new(step: &'static str, failure: Failure) -> BmcError {
        BmcError {
            step,
            failure,
            at: None,
            attempts: 0,
        }
    }

    /// The request that failed (`METHOD URL`) and how often it was sent.
    pub fn sent(mut self, request: String, attempts: u32) -> BmcError {
        self.at = Some(request);
        self.attempts = attempts;
        self
    }

    /// The BMC's address, unless the failed request already names it.
    pub fn at_bmc(mut self, bmc: &str) -> BmcError {
        if self.at.is_none() {
            self.at = Some(format!("BMC {bmc}"));
        }
        self
    }
}

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

/// What a BMC reports about a host.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Status {
    pub host: String,
    pub system: String,
    pub power: String,
    pub boot_target: String,
    pub boot_enabled: String,
    pub media_image: String,
    pub media_inserted: bool,
}

/// A NIC as the host's BMC reports it.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
pub struct HardwareNic {
    /// The BMC's id for it (`NIC.Integrated.1-1-1`, a MAC, …).
    pub id: String,
    /// Lower case, colon-separated.
    pub mac: String,
    /// `LinkUp`, `LinkDown`, `NoLink`, when the BMC says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
}

/// What `discover` read from one host's BMC.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
pub struct Discovery {
    pub host: String,
    pub system: String,
    pub nics: Vec<HardwareNic>,
}

/// Power action names of the CLI.
#[derive(Clone, Copy, Debug)]
pub enum Power {
    On,
    Off,
    Restart,
}

impl Power {
    /// What [`power`] does, for dry runs.
    pub fn plan(self) -> &'static str {
        match self {
            Power::On => "power on (Reset On), wait until the BMC reports On",
            Power::Off => "power off (Reset ForceOff), wait until the BMC reports Off",
            Power::Restart => "restart (Reset ForceRestart)",
        }
    }
}

/// What [`eject`] does, for dry runs.
pub const EJECT_PLAN: &str = "eject the virtual CD/DVD if one is inserted";

/// What [`provision`] does with `image`, for dry runs.
pub fn provision_plan(image: &str) -> String {
    format!(
        "power off (Reset ForceOff) unless Off, wait for Off; eject the virtual CD/DVD; \
         insert {image}; boot once from Cd; power on; wait for On with the media inserted"
    )
}

/// Where a host is while a command works on it: `(host, step)`.
pub type Progress = dyn Fn(&str, &str) + Send + Sync;

#[cfg(test)]
mod tests;

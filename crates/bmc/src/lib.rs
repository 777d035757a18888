//! The BMC stage: Redfish virtual media for every host of an inventory —
//! power, boot override, insert/eject — and `provision`, which boots each
//! host from its own network-customised ISO, in parallel with a bound.

pub mod discovery;
pub mod redfish;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use nodenet_model::{Inventory, Secret};
use redfish::{Client, Collection, Effect, EthernetInterface, Manager, System, VirtualMedia};

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

/// A connected BMC: its system and CD virtual media, found by links.
struct Session {
    client: Client,
    system_path: String,
    system: System,
    media_path: String,
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

/// The BMC's client and the host's system.
async fn connect(t: &Target, deadline: Instant) -> Result<(Client, String, System), BmcError> {
    let client = Client::new(
        &t.base,
        &t.username,
        t.password.clone(),
        t.insecure,
        deadline,
    )?;
    let system_path =
        match &t.system {
            Some(p) => p.clone(),
            None => {
                let c: Collection = client
                    .get("finding the system", "/redfish/v1/Systems")
                    .await?;
                match c.members.as_slice() {
                    [one] => one.id.clone(),
                    [] => {
                        return Err(BmcError::new(
                            "finding the system",
                            Failure::Protocol("the BMC lists no system".into()),
                        ))
                    }
                    _ => return Err(BmcError::new(
                        "finding the system",
                        Failure::Protocol(
                            "the BMC lists several systems: put the system's path in the address"
                                .into(),
                        ),
                    )),
                }
            }
        };
    let system: System = client.get("reading the system", &system_path).await?;
    Ok((client, system_path, system))
}

async fn open(t: &Target, deadline: Instant) -> Result<Session, BmcError> {
    let (client, system_path, system) = connect(t, deadline).await?;
    // Virtual media hang off the system or its manager: follow the links.
    let mut collection = system.virtual_media.clone();
    if collection.is_none() {
        if let Some(m) = system.links.managed_by.first() {
            let manager: Manager = client.get("reading the manager", &m.id).await?;
            collection = manager.virtual_media;
        }
    }
    let collection = collection.ok_or_else(|| {
        BmcError::new(
            "finding virtual media",
            Failure::Protocol("neither the system nor its manager has VirtualMedia".into()),
        )
    })?;
    let members: Collection = client.get("finding virtual media", &collection.id).await?;
    let mut media_path = None;
    for m in &members.members {
        let vm: VirtualMedia = client.get("finding virtual media", &m.id).await?;
        if vm.media_types.iter().any(|t| t == "CD" || t == "DVD")
            || vm.id.eq_ignore_ascii_case("cd")
        {
            media_path = Some(m.id.clone());
            break;
        }
    }
    let media_path = media_path.ok_or_else(|| {
        BmcError::new(
            "finding virtual media",
            Failure::Protocol("no CD/DVD virtual media".into()),
        )
    })?;
    Ok(Session {
        client,
        system_path,
        system,
        media_path,
    })
}

impl Session {
    async fn status(&self, host: &str) -> Result<Status, BmcError> {
        let sys: System = self
            .client
            .get("reading the system", &self.system_path)
            .await?;
        let vm: VirtualMedia = self
            .client
            .get("reading virtual media", &self.media_path)
            .await?;
        Ok(Status {
            host: host.to_string(),
            system: sys.id,
            power: sys.power_state.unwrap_or_default(),
            boot_target: sys.boot.target.unwrap_or_default(),
            boot_enabled: sys.boot.enabled.unwrap_or_default(),
            media_image: vm.image.unwrap_or_default(),
            media_inserted: vm.inserted.unwrap_or(false),
        })
    }

    async fn reset(&self, step: &'static str, kind: &str) -> Result<(), BmcError> {
        let target = self
            .system
            .actions
            .reset
            .as_ref()
            .map(|a| a.target.clone())
            .unwrap_or_else(|| format!("{}/Actions/ComputerSystem.Reset", self.system_path));
        let system = self.system_path.as_str();
        let effect = match kind {
            "On" => Effect::Power {
                system,
                reached: &["On", "PoweringOn"],
            },
            "ForceOff" => Effect::Power {
                system,
                reached: &["Off", "PoweringOff"],
            },
            _ => Effect::Unreadable("a restart"),
        };
        self.client
            .act(step, &target, json!({ "ResetType": kind }), effect)
            .await
    }

    /// BMCs apply power changes late: poll until `want` or the deadline.
    async fn wait_power(&self, step: &'static str, want: &str) -> Result<(), BmcError> {
        loop {
            let sys: System = self.client.get(step, &self.system_path).await?;
            if sys.power_state.as_deref() == Some(want) {
                return Ok(());
            }
            if Instant::now() + Duration::from_millis(500) >= self.client.deadline {
                return Err(BmcError::new(
                    step,
                    Failure::Protocol(format!(
                        "power is still {:?} at the deadline",
                        sys.power_state.unwrap_or_default()
                    )),
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn eject(&self) -> Result<(), BmcError> {
        let vm: VirtualMedia = self
            .client
            .get("reading virtual media", &self.media_path)
            .await?;
        if vm.inserted == Some(true) {
            let target =
                vm.actions.eject.map(|a| a.target).unwrap_or_else(|| {
                    format!("{}/Actions/VirtualMedia.EjectMedia", self.media_path)
                });
            let effect = Effect::Media {
                media: &self.media_path,
                image: None,
            };
            self.client
                .act("ejecting media", &target, json!({}), effect)
                .await?;
        }
        Ok(())
    }

    async fn insert(&self, url: &str) -> Result<(), BmcError> {
        let vm: VirtualMedia = self
            .client
            .get("reading virtual media", &self.media_path)
            .await?;
        let target = vm
            .actions
            .insert
            .map(|a| a.target)
            .unwrap_or_else(|| format!("{}/Actions/VirtualMedia.InsertMedia", self.media_path));
        let effect = Effect::Media {
            media: &self.media_path,
            image: Some(url),
        };
        self.client
            .act(
                "inserting media",
                &target,
                json!({"Image": url, "Inserted": true, "WriteProtected": true}),
                effect,
            )
            .await
    }
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

/// Past its deadline, a host's operation is given this long to end by
/// itself (every request is already cut to the deadline) before it is
/// dropped.
const GRACE: Duration = Duration::from_secs(1);

/// Runs `op` with the host's deadline (`timeout` from now); whatever
/// happens, returns by the deadline plus [`GRACE`], and every error names
/// the BMC.
async fn bounded<T, F>(
    t: &Target,
    timeout: Duration,
    op: impl FnOnce(Instant) -> F,
) -> Result<T, BmcError>
where
    F: std::future::Future<Output = Result<T, BmcError>>,
{
    let deadline = Instant::now() + timeout;
    let r = tokio::time::timeout_at((deadline + GRACE).into(), op(deadline))
        .await
        .unwrap_or_else(|_| {
            Err(BmcError::new(
                "running",
                Failure::Timeout {
                    waited: timeout,
                    deadline: true,
                },
            ))
        });
    r.map_err(|e| e.at_bmc(&t.bmc()))
}

/// The host's NICs as its BMC lists them (Redfish
/// `Systems/{id}/EthernetInterfaces`): MAC, link state, speed. A NIC the
/// BMC lists without a MAC is left out.
pub async fn discover(
    t: &Target,
    timeout: Duration,
    progress: &Progress,
) -> Result<Discovery, BmcError> {
    bounded(t, timeout, |deadline| async move {
        progress(&t.host, "connecting");
        let (client, _, system) = connect(t, deadline).await?;
        let link = system.ethernet_interfaces.clone().ok_or_else(|| {
            BmcError::new(
                "reading the NICs",
                Failure::Protocol("the system has no EthernetInterfaces".into()),
            )
        })?;
        progress(&t.host, "reading the NICs");
        let members: Collection = client.get("reading the NICs", &link.id).await?;
        let mut nics = Vec::new();
        for m in &members.members {
            let nic: EthernetInterface = client.get("reading a NIC", &m.id).await?;
            let Some(mac) = nic
                .mac
                .filter(|m| !m.is_empty())
                .or(nic.permanent_mac)
                .filter(|m| !m.is_empty())
            else {
                continue;
            };
            nics.push(HardwareNic {
                id: nic.id,
                mac: mac.to_ascii_lowercase().replace('-', ":"),
                link: nic.link_status.or_else(|| {
                    nic.enabled
                        .map(|e| if e { "Enabled" } else { "Disabled" }.to_string())
                }),
                speed_mbps: nic.speed_mbps,
            });
        }
        progress(&t.host, "done");
        Ok(Discovery {
            host: t.host.clone(),
            system: system.id,
            nics,
        })
    })
    .await
}

pub async fn status(
    t: &Target,
    timeout: Duration,
    progress: &Progress,
) -> Result<Status, BmcError> {
    bounded(t, timeout, |deadline| async move {
        progress(&t.host, "connecting");
        let s = open(t, deadline).await?;
        progress(&t.host, "reading status");
        s.status(&t.host).await
    })
    .await
}

pub async fn power(
    t: &Target,
    action: Power,
    timeout: Duration,
    progress: &Progress,
) -> Result<Status, BmcError> {
    bounded(t, timeout, |deadline| async move {
        let say = |step: &str| progress(&t.host, step);
        say("connecting");
        let s = open(t, deadline).await?;
        match action {
            Power::On => {
                say("powering on");
                s.reset("powering on", "On").await?;
                say("waiting for power on");
                s.wait_power("waiting for power on", "On").await?;
            }
            Power::Off => {
                say("powering off");
                s.reset("powering off", "ForceOff").await?;
                say("waiting for power off");
                s.wait_power("waiting for power off", "Off").await?;
            }
            Power::Restart => {
                say("restarting");
                s.reset("restarting", "ForceRestart").await?
            }
        }
        s.status(&t.host).await
    })
    .await
}

pub async fn eject(t: &Target, timeout: Duration, progress: &Progress) -> Result<Status, BmcError> {
    bounded(t, timeout, |deadline| async move {
        progress(&t.host, "connecting");
        let s = open(t, deadline).await?;
        progress(&t.host, "ejecting media");
        s.eject().await?;
        s.status(&t.host).await
    })
    .await
}

/// Power off, eject, insert `image`, one-time boot from CD, power on,
/// then wait until the BMC reports power on and the media inserted.
pub async fn provision(
    t: &Target,
    image: &str,
    timeout: Duration,
    progress: &Progress,
) -> Result<Status, BmcError> {
    bounded(t, timeout, |deadline| async move {
        let say = |step: &str| progress(&t.host, step);
        say("connecting");
        let s = open(t, deadline).await?;
        say("powering off");
        let sys: System = s.client.get("reading the system", &s.system_path).await?;
        if sys.power_state.as_deref() != Some("Off") {
            s.reset("powering off", "ForceOff").await?;
            s.wait_power("waiting for power off", "Off").await?;
        }
        say("ejecting old media");
        s.eject().await?;
        say("inserting media");
        s.insert(image).await?;
        say("setting boot override");
        s.client
            .patch("setting boot override", &s.system_path, json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}))
            .await?;
        say("powering on");
        s.reset("powering on", "On").await?;
        s.wait_power("waiting for power on", "On").await?;
        let st = s.status(&t.host).await?;
        if !st.media_inserted || st.media_image != image {
            return Err(BmcError::new(
                "verifying",
                Failure::Protocol(format!(
                    "the BMC reports media {:?} inserted={}",
                    st.media_image, st.media_inserted
                )),
            ));
        }
        say("done");
        Ok(st)
    })
    .await
}

/// Runs `job` for every target, at most `parallel` at once; one host's
/// failure never stops the others. Results in target order.
pub fn run_all<T, F, Fut>(
    targets: Vec<Target>,
    parallel: usize,
    job: F,
) -> Vec<(String, Result<T, BmcError>)>
where
    T: Send + 'static,
    F: Fn(Arc<Target>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, BmcError>> + Send + 'static,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async move {
        let sem = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
        let job = Arc::new(job);
        let mut handles = Vec::new();
        for t in targets {
            let t = Arc::new(t);
            let (sem, job) = (sem.clone(), job.clone());
            let host = t.host.clone();
            handles.push((
                host,
                tokio::spawn(async move {
                    let _permit = sem
                        .acquire_owned()
                        .await
                        .expect("semaphore is never closed");
                    job(t).await
                }),
            ));
        }
        let mut out = Vec::new();
        for (host, h) in handles {
            let r = h.await.unwrap_or_else(|e| {
                Err(BmcError::new("running", Failure::Protocol(e.to_string())))
            });
            out.push((host, r));
        }
        out
    })
}

#[cfg(test)]
mod tests;

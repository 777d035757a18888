//! The Redfish actions on many hosts at once: each host's session (its
//! system and virtual CD found by links), status, power, eject, provision
//! and discovery, each bounded by the host's deadline, run in parallel.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::redfish::{
    Client, Collection, Effect, EthernetInterface, Manager, System, VirtualMedia,
};
use crate::*;

/// A connected BMC: its system and CD virtual media, found by links.
struct Session {
    client: Client,
    system_path: String,
    system: System,
    media_path: String,
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

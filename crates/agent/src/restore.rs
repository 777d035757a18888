//! Putting the previous state back after a failed change: NetworkManager
//! rolls its checkpoint back, nodenet writes back the global DNS (which
//! NetworkManager 1.42's checkpoints do not cover) and brings up again
//! what was up before (its rollback may leave re-created devices down).

use std::path::Path;
use std::time::{Duration, Instant};

use nmstate::NetworkState;

use crate::dbus::{self, GlobalDns};
use crate::probes::{self, Probe};
use crate::AgentError;

/// What a restore must bring back beyond NetworkManager's checkpoint.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Saved {
    /// Interfaces that were up.
    pub up: Vec<String>,
    /// Interfaces the change creates (named in the desired state, not in
    /// the kernel before): gone again once a restore returns.
    #[serde(default)]
    pub new: Vec<String>,
    /// The global DNS configuration, when the change touched DNS.
    pub global_dns: Option<GlobalDns>,
}

/// Rolls the open checkpoint back, writes back the global DNS when it was
/// saved, then brings up again whatever was up and is not now:
/// NetworkManager's rollback restores the profiles but may leave
/// re-created devices down (NM 1.42 with VLANs).
pub(crate) fn restore(
    saved: &Saved,
    checkpoint: Option<&str>,
    probes: &[Probe],
    timeout: Duration,
) -> Result<(), AgentError> {
    match checkpoint {
        Some(path) => dbus::with_nm(async |nm| dbus::rollback_checkpoint(nm, path).await)?,
        None => NetworkState::checkpoint_rollback("").map_err(crate::nm)?,
    }
    if let Some(dns) = &saved.global_dns {
        dbus::with_nm(async |nm| {
            if GlobalDns::read(nm).await? != *dns {
                log::info!("writing back the global DNS configuration");
                dns.write(nm).await?;
            }
            Ok(())
        })?;
    }
    let up = &saved.up;
    // NetworkManager re-activates the restored profiles by itself: wait a
    // moment for the interfaces to be up in the kernel (operstate: a file
    // read, no netlink dump, no D-Bus) and for the probes that passed
    // before the change to pass again; activate what stays down.
    // NetworkManager deletes the devices the change created after its
    // rollback call has returned.
    let new: Vec<&str> = saved.new.iter().map(String::as_str).collect();
    let deadline = Instant::now() + timeout;
    while new.iter().any(|n| exists(n)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let names: Vec<&str> = up.iter().map(String::as_str).collect();
    if wait_up(&names, probes, RESTORE_GRACE).is_ok() {
        return Ok(());
    }
    // Something is down, or the probes do not pass yet. A link may also go
    // down a moment later: NetworkManager deletes the devices it takes for
    // new ones after the rollback call has returned, among them a VLAN
    // that nmstate re-created while applying. Whatever is down gets its
    // restored profile activated (once); done when every link is up and
    // the probes pass, or the links have stayed up for a while.
    let mut activated: Vec<&str> = Vec::new();
    let mut up_since: Option<Instant> = None;
    loop {
        let down: Vec<&str> = names.iter().copied().filter(|n| !link_up(n)).collect();
        let fresh: Vec<&str> = down
            .iter()
            .copied()
            .filter(|n| !activated.contains(n))
            .collect();
        if !fresh.is_empty() {
            log::warn!(
                "NetworkManager's rollback left {} down; activating their restored profiles",
                fresh.join(", ")
            );
            activate_profiles(&fresh)?;
            activated.extend(fresh);
        }
        if down.is_empty() {
            if probes::all_pass_now(probes) {
                return Ok(());
            }
            if up_since.get_or_insert_with(Instant::now).elapsed() >= RESTORE_SETTLE {
                return Ok(());
            }
        } else {
            up_since = None;
        }
        if Instant::now() >= deadline {
            return Err(AgentError::Nmstate(format!(
                "after the rollback, still down: {}",
                down.join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls until every interface in `names` is up and every probe passes;
/// after `within`, the interfaces still down.
fn wait_up<'a>(names: &[&'a str], probes: &[Probe], within: Duration) -> Result<(), Vec<&'a str>> {
    let deadline = Instant::now() + within;
    loop {
        let down: Vec<&str> = names.iter().copied().filter(|n| !link_up(n)).collect();
        if down.is_empty() && probes::all_pass_now(probes) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(down);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Activates, straight over D-Bus, the profile NetworkManager has for each
/// interface in `names` (the one whose id is the interface name, as
/// nmstate names them, else any bound to it). After a rollback the
/// profiles are right and only their activation is missing, so a full
/// nmstate apply (retrieve, checkpoint, verify) would cost seconds for
/// nothing.
fn activate_profiles(names: &[&str]) -> Result<(), AgentError> {
    dbus::with_nm(async |nm| {
        let paths: Vec<zvariant::OwnedObjectPath> = nm
            .settings
            .call("ListConnections", &())
            .await
            .map_err(dbus::dbus)?;
        // interface name -> (profile id is the interface name, path)
        let mut chosen: std::collections::HashMap<String, (bool, zvariant::OwnedObjectPath)> =
            Default::default();
        for path in paths {
            let conn = nm
                .proxy(
                    path.as_str().to_string(),
                    "org.freedesktop.NetworkManager.Settings.Connection",
                )
                .await?;
            let s: std::collections::HashMap<
                String,
                std::collections::HashMap<String, zvariant::OwnedValue>,
            > = conn.call("GetSettings", &()).await.map_err(dbus::dbus)?;
            let text = |k: &str| {
                s.get("connection")
                    .and_then(|c| c.get(k))
                    .and_then(|v| v.try_clone().ok())
                    .and_then(|v| String::try_from(v).ok())
            };
            let Some(iface) = text("interface-name").filter(|i| names.contains(&i.as_str())) else {
                continue;
            };
            let by_id = text("id").as_deref() == Some(iface.as_str());
            if chosen.get(&iface).is_none_or(|(best, _)| by_id && !best) {
                chosen.insert(iface, (by_id, path));
            }
        }
        for name in names {
            let Some((_, path)) = chosen.get(*name) else {
                return Err(AgentError::Nmstate(format!(
                    "after the rollback {name} is down and has no profile"
                )));
            };
            log::info!("activating {} for {name}", path.as_str());
            dbus::activate(nm, path).await?;
        }
        Ok(())
    })
}

/// How long NetworkManager gets to bring restored interfaces up itself
/// (when it does, it takes ~0.1 s here; when NM 1.42 forgets a VLAN,
/// waiting longer only delays the restore).
const RESTORE_GRACE: Duration = Duration::from_millis(500);

/// How long restored links must stay up, when the probes still fail, for
/// the restore to be done (NetworkManager deletes the devices it takes for
/// new ones within a second or two of its rollback).
const RESTORE_SETTLE: Duration = Duration::from_secs(5);

/// Whether the kernel has an interface called `name`.
pub(crate) fn exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// Whether the kernel reports `name` up (`unknown` is what interfaces
/// without carrier reporting, e.g. dummies, show when up).
pub(crate) fn link_up(name: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{name}/operstate"))
        .is_ok_and(|s| matches!(s.trim(), "up" | "unknown"))
}

//! One guard for every change, as nmstate's own `with_nm_checkpoint`:
//! the change runs under a NetworkManager checkpoint, its checks run, and
//! then success commits (or leaves the checkpoint open for `nodenet
//! commit`), while every error, wherever it happens, rolls back and puts
//! the previous state back. No failure path can forget the rollback, and
//! the error that caused it is the one reported (with the restore's own
//! failure beside it when the restore fails too).
//!
//! The record of the apply (`pending.rs`) is written before anything
//! changes, so a run killed at any point is rolled back by `nodenet
//! rollback --if-pending`.

use std::time::{Duration, Instant};

use nmstate::NetworkState;

use crate::dbus;
use crate::pending::Pending;
use crate::probes::Probe;
use crate::restore::restore;
use crate::{nm, AgentError};

/// What becomes of the checkpoint when the checks pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    Commit,
    /// Left open for `nodenet commit` / `nodenet rollback` (or
    /// NetworkManager's own timeout).
    LeaveOpen,
}

/// Runs `change` (which opens a checkpoint and activates the change under
/// it), then `check` (verification, probes), under one guard: see the
/// module. `probes` and `timeout` bound the restore.
pub(crate) fn guarded<C, T>(
    ctx: &mut C,
    mut pending: Pending,
    probes: &[Probe],
    timeout: Duration,
    finish: Finish,
    change: impl FnOnce(&mut C) -> Result<(), AgentError>,
    check: impl FnOnce(&mut C) -> Result<T, AgentError>,
) -> Result<T, AgentError> {
    pending.write();
    if let Err(cause) = change(ctx) {
        // nmstate and the direct path roll their own checkpoint back when
        // activating fails; what they leave (an open checkpoint, the
        // global DNS) is put back here.
        return Err(undo(&pending, cause, probes, timeout));
    }
    match dbus::with_nm(async |nm| dbus::checkpoints(nm).await) {
        Ok(open) => {
            pending.checkpoint = pending.ours(&open);
            pending.write();
        }
        Err(e) => return Err(undo(&pending, e, probes, timeout)),
    }
    let result = check(ctx);
    match (result, finish) {
        (Ok(t), Finish::LeaveOpen) => Ok(t),
        (Ok(t), Finish::Commit) => match commit_open(&pending) {
            Ok(()) => {
                pending.clear();
                Ok(t)
            }
            Err(e) => Err(undo(&pending, e, probes, timeout)),
        },
        (Err(cause), _) => Err(undo(&pending, cause, probes, timeout)),
    }
}

/// Rolls back what the apply of `pending` changed, keeping `cause` as
/// the error: [`AgentError::RolledBack`], or [`AgentError::RestoreFailed`]
/// (the record then stays, for another `rollback --if-pending`).
fn undo(pending: &Pending, cause: AgentError, probes: &[Probe], timeout: Duration) -> AgentError {
    let started = Instant::now();
    let open = dbus::with_nm(async |nm| dbus::checkpoints(nm).await);
    let ours = match &open {
        Ok(open) => pending.ours(open),
        // Cannot tell: the recorded one, if any.
        Err(_) => pending.checkpoint.clone(),
    };
    let restored = match (&ours, &open) {
        (Some(cp), _) => restore(&pending.saved, Some(cp), probes, timeout),
        // Nothing of ours is open (nmstate rolled its own back): only the
        // global DNS, which no checkpoint covers.
        (None, Ok(_)) => write_back_dns(pending),
        (None, Err(e)) => Err(AgentError::Nmstate(e.to_string())),
    };
    match restored {
        Ok(()) => {
            pending.clear();
            AgentError::RolledBack {
                cause: Box::new(cause),
                seconds: started.elapsed().as_secs_f64(),
            }
        }
        Err(r) => AgentError::RestoreFailed {
            cause: Box::new(cause),
            restore: Box::new(r),
        },
    }
}

fn write_back_dns(pending: &Pending) -> Result<(), AgentError> {
    let Some(dns) = &pending.saved.global_dns else {
        return Ok(());
    };
    dbus::with_nm(async |nm| {
        if dbus::GlobalDns::read(nm).await? != *dns {
            log::info!("writing back the global DNS configuration");
            dns.write(nm).await?;
        }
        Ok(())
    })
}

/// Destroys the apply's checkpoint: the change stays.
fn commit_open(pending: &Pending) -> Result<(), AgentError> {
    match &pending.checkpoint {
        Some(path) => dbus::with_nm(async |nm| commit_checkpoint(nm, path).await),
        None => NetworkState::checkpoint_commit("").map_err(nm),
    }
}

async fn commit_checkpoint(nm: &dbus::Nm, path: &str) -> Result<(), AgentError> {
    let path = zvariant::ObjectPath::try_from(path)
        .map_err(|e| AgentError::Nmstate(format!("checkpoint {path}: {e}")))?;
    nm.manager
        .call::<_, _, ()>("CheckpointDestroy", &(&path,))
        .await
        .map_err(dbus::dbus)
}

/// `nodenet commit`: keeps the change an apply left open.
pub fn commit() -> Result<(), AgentError> {
    crate::require_network_manager()?;
    match Pending::read()? {
        Some(p) => {
            let open = dbus::with_nm(async |nm| dbus::checkpoints(nm).await)?;
            if let Some(cp) = p.ours(&open) {
                dbus::with_nm(async |nm| commit_checkpoint(nm, &cp).await)?;
            }
            p.clear();
            Ok(())
        }
        None => NetworkState::checkpoint_commit("").map_err(nm),
    }
}

/// `nodenet rollback`: undoes the change an apply left open (and brings
/// back up what was up before).
pub fn rollback() -> Result<(), AgentError> {
    crate::require_network_manager()?;
    match Pending::read()? {
        Some(p) => {
            let open = dbus::with_nm(async |nm| dbus::checkpoints(nm).await)?;
            restore(
                &p.saved,
                p.ours(&open).as_deref(),
                &[],
                Duration::from_secs(60),
            )?;
            p.clear();
            Ok(())
        }
        None => NetworkState::checkpoint_rollback("").map_err(nm),
    }
}

/// Rolls back the checkpoint a killed or unfinished apply left open (what
/// `nodenet rollback --if-pending` does when nodenet-apply.service stops):
/// `true` when there was one. A record whose checkpoint NetworkManager no
/// longer has (committed, or rolled back on its own) is removed.
pub fn rollback_if_pending() -> Result<bool, AgentError> {
    let Some(p) = Pending::read()? else {
        return Ok(false);
    };
    crate::require_network_manager()?;
    let open = dbus::with_nm(async |nm| dbus::checkpoints(nm).await)?;
    let Some(cp) = p.ours(&open) else {
        p.clear();
        return Ok(false);
    };
    restore(&p.saved, Some(&cp), &[], Duration::from_secs(60))?;
    p.clear();
    Ok(true)
}

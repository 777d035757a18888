//! The on-node half: the current state as NMState, and a rebootless
//! apply guarded by a NetworkManager checkpoint.
//!
//! One concern a file: `apply.rs` (a change, verified and probed),
//! `checkpoint.rs` (the guard every change runs under: commit on success,
//! roll back on any error; `commit`/`rollback`), `pending.rs` (the record
//! that lets a later process roll back a killed apply), `restore.rs`
//! (the previous state back), `probes.rs` (running the checks),
//! `service.rs` (what nodenet-apply.service does: which file, whether it
//! changed, the status record), `direct.rs` (new virtual interfaces
//! without nmstate's full read) and `dbus.rs` (the few NetworkManager
//! calls nodenet makes itself).

mod apply;
mod checkpoint;
mod dbus;
mod direct;
mod pending;
mod probes;
mod restore;
pub mod service;

pub use apply::{apply, Applied, ApplyOptions, ApplyPath};
pub use checkpoint::{commit, rollback, rollback_if_pending};
pub use probes::{run_probe, Probe};

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// NetworkManager or nmstate refused or failed a call.
    #[error("NetworkManager/nmstate: {0}")]
    Nmstate(String),
    #[error("probe `{probe}` failed after the change ({why})")]
    ProbeFailed { probe: String, why: String },
    #[error("the kernel does not show the applied state after {seconds:.1} s:\n{diff}")]
    NotApplied { diff: String, seconds: f64 },
    /// A change that failed (`cause`) and was undone.
    #[error("{cause}; the previous state was restored in {seconds:.2} s")]
    RolledBack {
        cause: Box<AgentError>,
        seconds: f64,
    },
    /// A change that failed, and putting the previous state back failed
    /// too: the node may be neither.
    #[error("{cause}; restoring the previous state failed too: {restore}")]
    RestoreFailed {
        cause: Box<AgentError>,
        restore: Box<AgentError>,
    },
    #[error(transparent)]
    BadProbe(#[from] nodenet_model::probe::BadProbe),
    #[error("cannot reach NetworkManager over the system D-Bus (is NetworkManager running?): {0}")]
    NoNetworkManager(String),
    /// A record the agent keeps (the pending apply, the status) is
    /// unreadable or cannot be written.
    #[error("{path}: {why}")]
    Record { path: String, why: String },
}

impl AgentError {
    /// Stable code of the error (the `code` of `--format json` output).
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Nmstate(_) => "nmstate",
            AgentError::ProbeFailed { .. } => "probe-failed",
            AgentError::NotApplied { .. } => "not-applied",
            AgentError::RolledBack { cause, .. } => cause.code(),
            AgentError::RestoreFailed { .. } => "restore-failed",
            AgentError::BadProbe(_) => "bad-probe",
            AgentError::NoNetworkManager(_) => "network-manager-unreachable",
            AgentError::Record { .. } => "io",
        }
    }

    /// Nothing was tried: the node's NetworkManager is not there (exit 2,
    /// not a refused or failed change).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, AgentError::NoNetworkManager(_))
    }

    /// The failure that started it all (beneath a rollback or a failed
    /// restore).
    pub fn root_cause(&self) -> &AgentError {
        match self {
            AgentError::RolledBack { cause, .. } | AgentError::RestoreFailed { cause, .. } => {
                cause.root_cause()
            }
            e => e,
        }
    }
}

pub(crate) fn nm(e: nmstate::NmstateError) -> AgentError {
    // nmstate reports a missing bus as a "Bug" with its D-Bus error inside.
    if e.msg().contains("DbusConnectionError") {
        return AgentError::NoNetworkManager(
            e.msg()
                .trim_start_matches("DbusConnectionError: ")
                .to_string(),
        );
    }
    AgentError::Nmstate(format!("{}: {}", e.kind(), e.msg()))
}

/// Fails with [`AgentError::NoNetworkManager`] unless NetworkManager
/// answers on the system bus: said plainly before nmstate and nispor are
/// asked anything (they would log warnings and call it a bug).
pub fn require_network_manager() -> Result<(), AgentError> {
    dbus::reachable().map_err(AgentError::NoNetworkManager)
}

/// Library log records (nmstate, nispor) are shown only when `NODENET_LOG`
/// asks for them: their warnings are about their own probing (Wi-Fi
/// queries, unknown attributes) and read like nodenet's failures.
pub fn library_logs_only_if_asked() {
    if std::env::var_os("NODENET_LOG").is_none_or(|v| v.is_empty()) {
        log::set_max_level(log::LevelFilter::Off);
    }
}

/// The running state (NetworkManager profiles and kernel) as NMState.
pub fn show() -> Result<serde_json::Value, AgentError> {
    require_network_manager()?;
    let mut state = nmstate::NetworkState::new();
    state.set_kernel_only(false);
    state.set_include_status_data(false);
    state.retrieve().map_err(nm)?;
    serde_json::to_value(&state).map_err(|e| AgentError::Nmstate(e.to_string()))
}

/// The running host name, as the kernel has it (an FQDN on some nodes).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

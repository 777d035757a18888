//! What `nodenet-apply.service` does on a node: it runs at boot and again
//! whenever the Machine Config Operator restarts it after writing new
//! files under /etc/nodenet/nmstate (the node disruption policy that
//! `nodenet render` writes). It applies the node's own file (its short
//! host name, as RHCOS matches `hostname -s`; else `cluster.yml`) only
//! when its content differs from what was applied, and keeps a status
//! record the MCO-side operator can read with `nodenet status`.
//!
//! The node's side effects (NetworkManager, the check of a file, the
//! clock) are behind [`Node`], so this logic is tested without a node.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::{AgentError, Applied, ApplyOptions, Probe};

/// Where the record lives (StateDirectory=nodenet).
pub const STATUS: &str = "/var/lib/nodenet/status.json";

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Applied, probes passed, committed.
    Applied,
    /// The content is what was applied already: nothing done.
    Unchanged,
    /// No `<hostname>.yml` nor `cluster.yml`.
    NoFile,
    /// `nodenet check` rejects the state: nothing was applied.
    Refused,
    /// Applied, then a probe failed or the kernel did not show it: the
    /// previous state was restored.
    RolledBack,
    /// NetworkManager or nmstate failed.
    Failed,
}

impl Outcome {
    /// The service fails (the MCO degrades the node and stops the pool)
    /// unless the node has the desired state.
    pub fn ok(self) -> bool {
        matches!(
            self,
            Outcome::Applied | Outcome::Unchanged | Outcome::NoFile
        )
    }
}

/// The state in place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InPlace {
    pub sha256: String,
    pub file: String,
    pub at: String,
}

/// One run of the service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The probe that failed, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_probe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub started: String,
    pub finished: String,
    /// The kernel's boot id: a run of this boot or of an earlier one.
    pub boot_id: String,
}

/// `/var/lib/nodenet/status.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The last state applied and committed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<InPlace>,
    /// The last run, whatever its outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<Run>,
}

impl Status {
    /// The record at `path` (empty when there is none; what the service
    /// applied before status.json is read from its old record beside it).
    pub fn read(path: &Path) -> std::io::Result<Status> {
        match std::fs::read(path) {
            Ok(data) => serde_json::from_slice(&data)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The record before status.json: `<sha256>  <path>`.
                let legacy = path.with_file_name("applied");
                let applied = std::fs::read_to_string(legacy).ok().and_then(|r| {
                    let mut parts = r.split_whitespace();
                    Some(InPlace {
                        sha256: parts.next()?.to_string(),
                        file: parts.next().unwrap_or_default().to_string(),
                        at: String::new(),
                    })
                });
                Ok(Status {
                    applied,
                    last: None,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Written whole or not at all.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        nodenet_model::write_atomic(path, format!("{text}\n").as_bytes())
    }

    /// Whether `sha256` is the state in place.
    pub fn is_applied(&self, sha256: &str) -> bool {
        self.applied.as_ref().is_some_and(|a| a.sha256 == sha256)
    }
}

/// What identifies a state file's content in the record.
pub fn content_sha256(data: &[u8]) -> String {
    use sha2::Digest;
    nodenet_model::hex(&sha2::Sha256::digest(data))
}

/// Now, as RFC 3339 UTC.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// nodenet's own directory (`nodenet-apply.service`'s `--dir`).
pub const DIR: &str = "/etc/nodenet/nmstate";

/// Where the service looks, as render lays the files out and RHCOS names
/// them: `<dir>/<short hostname>.yml` (`hostname -s`: an FQDN's first
/// label), else `<dir>/cluster.yml`. An empty file is no file.
pub fn file_for(dir: &Path, hostname: &str) -> Option<PathBuf> {
    let short = nodenet_model::short_hostname(hostname);
    [format!("{short}.yml"), "cluster.yml".to_string()]
        .into_iter()
        .map(|f| dir.join(f))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0))
}

/// What the service needs from the node.
pub trait Node {
    /// The kernel's host name (an FQDN on some nodes).
    fn hostname(&self) -> String;
    /// Rolls back what a killed run left open; whether there was any.
    fn rollback_if_pending(&mut self) -> Result<bool, AgentError>;
    /// The state in `file` if `nodenet check` accepts it as a clean
    /// NMState file.
    fn desired(&mut self, file: &Path) -> Result<serde_json::Value, Refusal>;
    fn apply(
        &mut self,
        desired: &serde_json::Value,
        opts: &ApplyOptions,
    ) -> Result<Applied, AgentError>;
    /// The probes when none are given.
    fn default_probes(&self) -> Vec<Probe>;
    /// Now, RFC 3339.
    fn now(&self) -> String;
    fn boot_id(&self) -> String;
}

/// Why a file was not applied (nothing was).
#[derive(Debug)]
pub struct Refusal {
    pub message: String,
    /// What `nodenet check` found, to print.
    pub findings: Option<(nodenet_model::SourceMap, Vec<nodenet_model::Diagnostic>)>,
}

pub struct ServiceOptions {
    pub dir: PathBuf,
    pub status: PathBuf,
    /// Apply even a file whose content was applied already.
    pub force: bool,
    pub apply: ApplyOptions,
}

/// What one run did, for the CLI to tell.
#[derive(Debug)]
pub struct Report {
    /// A change an earlier run left open was rolled back first.
    pub rolled_back_left_open: bool,
    /// The record of this run, as written.
    pub run: Run,
    pub applied: Option<Applied>,
    pub refusal: Option<Refusal>,
    /// How the apply failed, when it did.
    pub error: Option<AgentError>,
}

impl Report {
    /// NetworkManager could not be reached: nothing was tried.
    pub fn unreachable(&self) -> bool {
        self.error.as_ref().is_some_and(AgentError::is_unreachable)
    }
}

/// A run that could not keep its record.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Unreachable(AgentError),
}

/// How an apply's failure ends the run: a rolled-back change (with the
/// probe that failed), or a failure (the restore failing too, or nothing
/// applied at all).
pub fn outcome_of(e: &AgentError) -> (Outcome, Option<String>) {
    let probe = match e.root_cause() {
        AgentError::ProbeFailed { probe, .. } => Some(probe.clone()),
        _ => None,
    };
    match e {
        AgentError::RolledBack { .. } => (Outcome::RolledBack, probe),
        _ => (Outcome::Failed, probe),
    }
}

/// One run of the service: see the module.
pub fn run(node: &mut impl Node, mut opts: ServiceOptions) -> Result<Report, ServiceError> {
    let started = node.now();
    let mut status = Status::read(&opts.status).map_err(io(&opts.status))?;
    let mut report = Report {
        rolled_back_left_open: false,
        run: Run {
            outcome: Outcome::NoFile,
            file: None,
            sha256: None,
            failed_probe: None,
            message: None,
            started,
            finished: String::new(),
            boot_id: node.boot_id(),
        },
        applied: None,
        refusal: None,
        error: None,
    };
    decide(node, &mut opts, &mut status, &mut report)?;
    report.run.finished = node.now();
    status.last = Some(report.run.clone());
    status.write(&opts.status).map_err(io(&opts.status))?;
    Ok(report)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ServiceError {
    let path = path.display().to_string();
    move |source| ServiceError::Io { path, source }
}

/// The run's steps, each ending it with its outcome in `report`.
fn decide(
    node: &mut impl Node,
    opts: &mut ServiceOptions,
    status: &mut Status,
    report: &mut Report,
) -> Result<(), ServiceError> {
    // A run stopped mid-apply (the unit restarted) may have left its
    // checkpoint open: rolled back before anything else.
    match node.rollback_if_pending() {
        Ok(left) => report.rolled_back_left_open = left,
        Err(e) if e.is_unreachable() => return Err(ServiceError::Unreachable(e)),
        Err(e) => {
            report.run.outcome = Outcome::Failed;
            report.run.message = Some(e.to_string());
            report.error = Some(e);
            return Ok(());
        }
    }
    let host = node.hostname();
    let Some(file) = file_for(&opts.dir, &host) else {
        report.run.outcome = Outcome::NoFile;
        report.run.message = Some(format!(
            "no {}.yml or cluster.yml in {}",
            nodenet_model::short_hostname(&host),
            opts.dir.display()
        ));
        return Ok(());
    };
    let data = std::fs::read(&file).map_err(io(&file))?;
    let sha = content_sha256(&data);
    report.run.file = Some(file.display().to_string());
    report.run.sha256 = Some(sha.clone());
    if !opts.force && status.is_applied(&sha) {
        report.run.outcome = Outcome::Unchanged;
        return Ok(());
    }
    let desired = match node.desired(&file) {
        Ok(d) => d,
        Err(refusal) => {
            report.run.outcome = Outcome::Refused;
            report.run.message = Some(refusal.message.clone());
            report.refusal = Some(refusal);
            return Ok(());
        }
    };
    if opts.apply.probes.is_empty() {
        opts.apply.probes = node.default_probes();
    }
    match node.apply(&desired, &opts.apply) {
        Ok(applied) => {
            status.applied = Some(InPlace {
                sha256: sha,
                file: file.display().to_string(),
                at: node.now(),
            });
            report.run.outcome = Outcome::Applied;
            report.applied = Some(applied);
        }
        Err(e) => {
            let (outcome, probe) = outcome_of(&e);
            report.run.outcome = outcome;
            report.run.failed_probe = probe;
            report.run.message = Some(e.to_string());
            report.error = Some(e);
        }
    }
    Ok(())
}

/// The node itself: NetworkManager, `nodenet check`, the clock.
pub struct System;

impl Node for System {
    fn hostname(&self) -> String {
        crate::hostname()
    }
    fn rollback_if_pending(&mut self) -> Result<bool, AgentError> {
        crate::rollback_if_pending()
    }
    fn desired(&mut self, file: &Path) -> Result<serde_json::Value, Refusal> {
        desired_state(file)
    }
    fn apply(
        &mut self,
        desired: &serde_json::Value,
        opts: &ApplyOptions,
    ) -> Result<Applied, AgentError> {
        crate::apply(desired, opts)
    }
    fn default_probes(&self) -> Vec<Probe> {
        let kubeconfigs: Vec<&Path> = KUBECONFIGS.iter().map(Path::new).collect();
        default_probes(&kubeconfigs)
    }
    fn now(&self) -> String {
        now()
    }
    fn boot_id(&self) -> String {
        boot_id()
    }
}

/// The state in `file` if `nodenet check` accepts it as a clean NMState
/// file (`nodenet apply` refuses what check rejects, too).
pub fn desired_state(file: &Path) -> Result<serde_json::Value, Refusal> {
    let loaded = nodenet_model::load_files(&[file]).map_err(|e| Refusal {
        message: e.to_string(),
        findings: None,
    })?;
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    if report.has_errors() || loaded.inventory.kind != Some(nodenet_model::InputKind::NmState) {
        return Err(Refusal {
            message: format!(
                "{} is not a clean NMState file (nodenet check); nothing was applied",
                file.display()
            ),
            findings: Some((loaded.sources, report.diagnostics)),
        });
    }
    Ok(loaded.inventory.hosts[0]
        .network
        .as_ref()
        .map(|n| n.to_json())
        .unwrap_or_default())
}

/// The probes the service runs when none are given, as kubernetes-nmstate
/// does: the default gateway answers, and the API server the kubelet
/// talks to (read from its kubeconfig) answers on TCP, its name resolving.
/// Probes that already fail before a change are skipped by the apply.
pub fn default_probes(kubeconfigs: &[&Path]) -> Vec<Probe> {
    let mut probes = vec![Probe::Gateway];
    if let Some((host, port)) = kubeconfigs.iter().find_map(|k| api_server(k)) {
        if host.parse::<std::net::IpAddr>().is_err() {
            probes.push(Probe::Dns(host.clone()));
        }
        probes.push(Probe::Tcp(host, port));
    }
    probes
}

/// Where the kubelet's kubeconfigs are on an OpenShift node.
pub const KUBECONFIGS: [&str; 2] = ["/var/lib/kubelet/kubeconfig", "/etc/kubernetes/kubeconfig"];

/// `server: https://HOST:PORT` of a kubeconfig.
fn api_server(kubeconfig: &Path) -> Option<(String, u16)> {
    let text = std::fs::read_to_string(kubeconfig).ok()?;
    let url = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server:"))?
        .trim()
        .trim_matches(['"', '\'']);
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.trim_matches(['[', ']']).to_string(), p.parse().ok()?)
        }
        _ => (authority.to_string(), 443),
    };
    Some((host, port))
}

#[cfg(test)]
mod tests;

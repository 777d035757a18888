//! On the node: `nodenet show`, `apply`, `commit`, `rollback`.

use nodenet_agent::ApplyPath;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::report::{self, Format};
use crate::ui::info;

#[derive(clap::Args)]
pub struct ShowArgs {
    #[arg(long, value_enum, default_value = "yaml")]
    format: ShowFormat,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ShowFormat {
    Yaml,
    Json,
}

/// The exit code and message of an agent error: 2 when NetworkManager
/// cannot be reached (nothing was tried), else 1.
fn agent_failed(e: nodenet_agent::AgentError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(if e.is_unreachable() {
        super::USAGE
    } else {
        super::PROBLEMS
    })
}

pub fn show(args: ShowArgs) -> ExitCode {
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    match nodenet_agent::show() {
        Ok(v) => {
            match args.format {
                ShowFormat::Yaml => {
                    print!("{}", serde_yaml::to_string(&v).expect("JSON serialises"))
                }
                ShowFormat::Json => println!("{v}"),
            }
            ExitCode::SUCCESS
        }
        Err(e) => match args.format {
            ShowFormat::Json => super::Failure {
                code: e.code(),
                message: e.to_string(),
                file: None,
                exit: if e.is_unreachable() {
                    super::USAGE
                } else {
                    super::PROBLEMS
                },
            }
            .report(Format::Json),
            ShowFormat::Yaml => agent_failed(e),
        },
    }
}

/// How a change is guarded: checkpoint timeout and probes.
#[derive(clap::Args)]
pub struct GuardArgs {
    /// Checkpoint rollback timeout in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Probes after the change: gateway, dns[:NAME], tcp:HOST:PORT, ping:ADDRESS, lldp (every bond port hears its switch; give --probe-timeout above the switch's LLDP interval) (comma-separated).
    #[arg(long, value_delimiter = ',')]
    probe: Vec<nodenet_agent::Probe>,
    /// Seconds each probe may take after the change.
    #[arg(long, default_value_t = 10)]
    probe_timeout: u64,
}

#[derive(clap::Args)]
pub struct ApplyArgs {
    /// Desired NMState.
    file: PathBuf,
    #[command(flatten)]
    guard: GuardArgs,
    /// Keep the checkpoint open; finish with `nodenet commit` or `nodenet rollback`.
    #[arg(long)]
    no_commit: bool,
    /// In memory only (lost at reboot).
    #[arg(long)]
    ephemeral: bool,
}

/// The desired state in `file`, if `nodenet check` accepts it as a clean
/// NMState file; otherwise the diagnostics are printed and the exit code
/// returned.
fn desired_state(file: &Path) -> Result<serde_json::Value, ExitCode> {
    let loaded = nodenet_model::load_files(&[file.to_path_buf()]).map_err(super::usage_error)?;
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    if report.has_errors() || loaded.inventory.kind != Some(nodenet_model::InputKind::NmState) {
        report::print(&loaded.sources, &report.diagnostics, Format::Human);
        eprintln!(
            "refused: {} is not a clean NMState file (nodenet check); nothing was applied",
            file.display()
        );
        return Err(super::problems());
    }
    Ok(loaded.inventory.hosts[0]
        .network
        .as_ref()
        .map(|n| n.to_json())
        .unwrap_or_default())
}

/// Applies and reports; `Ok` when the change is in place.
fn guarded_apply(
    desired: &serde_json::Value,
    guard: GuardArgs,
    no_commit: bool,
    ephemeral: bool,
) -> Result<(), ExitCode> {
    reported_apply(desired, guard, no_commit, ephemeral).map_err(agent_failed)
}

/// Applies, printing how it went; the agent's error when it did not.
fn reported_apply(
    desired: &serde_json::Value,
    guard: GuardArgs,
    no_commit: bool,
    ephemeral: bool,
) -> Result<(), nodenet_agent::AgentError> {
    let opts = nodenet_agent::ApplyOptions {
        timeout: Duration::from_secs(guard.timeout),
        probes: guard.probe,
        no_commit,
        ephemeral,
        probe_timeout: Duration::from_secs(guard.probe_timeout),
    };
    // nmstate's and nispor's own log lines only when NODENET_LOG asks (the
    // check above has taken nmstate's warnings about the state already).
    nodenet_agent::library_logs_only_if_asked();
    let a = nodenet_agent::apply(desired, &opts)?;
    for (p, why) in &a.skipped {
        info!("probe {p} already failed before the change ({why}): skipped");
    }
    for p in &a.passed {
        info!("probe {p}: ok");
    }
    let split: Vec<String> = a
        .phases
        .iter()
        .map(|(phase, s)| format!("{phase} {s:.2} s"))
        .collect();
    info!("timing: {}", split.join(", "));
    match &a.path {
        Some(ApplyPath::Direct) => {
            info!("new virtual interfaces only: their profiles were loaded directly");
            if let Some(why) = &a.quick_look_miss {
                info!("(found after nmstate's full read; the quick look could not tell: {why})");
            }
        }
        Some(ApplyPath::Nmstate { why }) => info!("merged and applied by nmstate ({why})"),
        None => {}
    }
    if a.unchanged {
        info!("already in the desired state: nothing to apply");
    } else if a.committed {
        info!("applied and committed in {:.2} s", a.seconds);
    } else {
        eprintln!(
            "applied in {:.2} s; checkpoint open: `nodenet commit` or `nodenet rollback` within {} s, else NetworkManager rolls back",
            a.seconds, guard.timeout
        );
    }
    Ok(())
}

pub fn apply(args: ApplyArgs) -> ExitCode {
    nodenet_check::nmstate_bridge::install_logger();
    let result = desired_state(&args.file)
        .and_then(|d| guarded_apply(&d, args.guard, args.no_commit, args.ephemeral));
    result.err().unwrap_or(ExitCode::SUCCESS)
}

#[derive(clap::Args)]
pub struct ServiceArgs {
    /// Where the MachineConfig writes the state: `<hostname>.yml`, else `cluster.yml`.
    #[arg(long, default_value = "/etc/nmstate/openshift")]
    dir: PathBuf,
    /// The status record: the sha256 of the state applied last (an
    /// unchanged file is not applied again) and how the last run ended.
    #[arg(long, default_value = nodenet_agent::service::STATUS)]
    status: PathBuf,
    /// Apply even if this file was applied already.
    #[arg(long)]
    force: bool,
    /// Without --probe: the default gateway, and the API server of the
    /// kubelet's kubeconfig (name and TCP), as kubernetes-nmstate probes.
    #[command(flatten)]
    guard: GuardArgs,
}

/// What nodenet-apply.service runs (dist/systemd), at boot and at each
/// restart by the Machine Config Operator: the node's file is applied
/// when its content changed; a run that rolled back exits 1, so the MCO
/// degrades the node and stops the pool.
pub fn service(mut args: ServiceArgs) -> ExitCode {
    use nodenet_agent::service::{self as svc, Outcome, Run, Status};
    nodenet_check::nmstate_bridge::install_logger();
    let started = svc::now();
    let mut status = match Status::read(&args.status) {
        Ok(s) => s,
        Err(e) => return super::usage_error(e),
    };
    let record = |status: &mut Status,
                  outcome: Outcome,
                  file: Option<&Path>,
                  sha: Option<&str>,
                  failed_probe: Option<String>,
                  message: Option<String>| {
        status.last = Some(Run {
            outcome,
            file: file.map(|f| f.display().to_string()),
            sha256: sha.map(str::to_string),
            failed_probe,
            message,
            started: started.clone(),
            finished: svc::now(),
            boot_id: svc::boot_id(),
        });
        if let Err(e) = status.write(&args.status) {
            eprintln!("error: {}: {e}", args.status.display());
            return ExitCode::from(super::USAGE);
        }
        if outcome.ok() {
            ExitCode::SUCCESS
        } else {
            super::problems()
        }
    };
    // A run stopped mid-apply (the unit restarted) may have left its
    // checkpoint open: rolled back before anything else.
    nodenet_agent::library_logs_only_if_asked();
    match nodenet_agent::rollback_if_pending() {
        Ok(true) => info!("rolled back the change an earlier run left open"),
        Ok(false) => {}
        Err(e) if e.is_unreachable() => return agent_failed(e),
        Err(e) => {
            let message = e.to_string();
            record(
                &mut status,
                Outcome::Failed,
                None,
                None,
                None,
                Some(message),
            );
            return agent_failed(e);
        }
    }
    let host = nodenet_agent::hostname();
    let Some(file) = svc::file_for(&args.dir, &host) else {
        info!(
            "no {host}.yml or cluster.yml in {}: nothing to apply",
            args.dir.display()
        );
        return record(&mut status, Outcome::NoFile, None, None, None, None);
    };
    let data = match std::fs::read(&file) {
        Ok(d) => d,
        Err(e) => return super::usage_error(format!("{}: {e}", file.display())),
    };
    let sha = svc::content_sha256(&data);
    if !args.force && status.is_applied(&sha) {
        info!(
            "{} (sha256 {sha}) was applied already: nothing to do",
            file.display()
        );
        return record(
            &mut status,
            Outcome::Unchanged,
            Some(&file),
            Some(&sha),
            None,
            None,
        );
    }
    info!("applying {} (sha256 {sha})", file.display());
    let desired = match desired_state(&file) {
        Ok(d) => d,
        Err(_) => {
            return record(
                &mut status,
                Outcome::Refused,
                Some(&file),
                Some(&sha),
                None,
                Some("nodenet check rejects the state; nothing was applied".into()),
            )
        }
    };
    if args.guard.probe.is_empty() {
        let kubeconfigs: Vec<&Path> = svc::KUBECONFIGS.iter().map(Path::new).collect();
        args.guard.probe = svc::default_probes(&kubeconfigs);
    }
    match reported_apply(&desired, args.guard, false, false) {
        Ok(()) => {
            status.applied = Some(svc::InPlace {
                sha256: sha.clone(),
                file: file.display().to_string(),
                at: svc::now(),
            });
            info!("recorded in {}", args.status.display());
            record(
                &mut status,
                Outcome::Applied,
                Some(&file),
                Some(&sha),
                None,
                None,
            )
        }
        Err(e) => {
            eprintln!("error: {e}");
            let (outcome, probe) = match &e {
                nodenet_agent::AgentError::ProbeFailed { probe, .. } => {
                    (Outcome::RolledBack, Some(probe.clone()))
                }
                nodenet_agent::AgentError::NotApplied { .. } => (Outcome::RolledBack, None),
                _ => (Outcome::Failed, None),
            };
            let code = record(
                &mut status,
                outcome,
                Some(&file),
                Some(&sha),
                probe,
                Some(e.to_string()),
            );
            if e.is_unreachable() {
                ExitCode::from(super::USAGE)
            } else {
                code
            }
        }
    }
}

#[derive(clap::Args)]
pub struct StatusArgs {
    #[arg(long, default_value = nodenet_agent::service::STATUS)]
    status: PathBuf,
    /// `json`: the record as it is.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// The service's record; exit 1 when its last run did not leave the
/// node in its desired state.
pub fn status(args: StatusArgs) -> ExitCode {
    use nodenet_agent::service::Status;
    let status = match Status::read(&args.status) {
        Ok(s) => s,
        Err(e) => return super::usage_error(e),
    };
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string(&status).expect("the record serialises")
        ),
        Format::Human => {
            match &status.applied {
                Some(a) => println!("applied: {} (sha256 {}) at {}", a.file, a.sha256, a.at),
                None => println!("applied: nothing yet"),
            }
            if let Some(r) = &status.last {
                let outcome = serde_json::to_value(r.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                println!(
                    "last run: {outcome}, {} .. {} (boot {}){}",
                    r.started,
                    r.finished,
                    r.boot_id,
                    r.file
                        .as_ref()
                        .map(|f| format!(", {f}"))
                        .unwrap_or_default()
                );
                if let Some(p) = &r.failed_probe {
                    println!("failed probe: {p}");
                }
                if let Some(m) = &r.message {
                    println!("{m}");
                }
            }
        }
    }
    if status.last.as_ref().is_none_or(|r| r.outcome.ok()) {
        ExitCode::SUCCESS
    } else {
        super::problems()
    }
}

pub fn commit() -> ExitCode {
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    match nodenet_agent::commit() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::usage_error(e),
    }
}

#[derive(clap::Args)]
pub struct RollbackArgs {
    /// Only the change an apply left open (killed, or --no-commit), and
    /// only if its checkpoint is still open; nothing to do is success
    /// (nodenet-apply.service's ExecStopPost).
    #[arg(long)]
    if_pending: bool,
}

pub fn rollback(args: RollbackArgs) -> ExitCode {
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    if args.if_pending {
        return match nodenet_agent::rollback_if_pending() {
            Ok(true) => {
                info!("rolled back the change left open");
                ExitCode::SUCCESS
            }
            Ok(false) => ExitCode::SUCCESS,
            Err(e) => agent_failed(e),
        };
    }
    match nodenet_agent::rollback() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::usage_error(e),
    }
}

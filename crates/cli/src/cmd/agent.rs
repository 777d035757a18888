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
    /// Probes after the change: gateway, dns[:NAME], tcp:HOST:PORT, ping:ADDRESS (comma-separated).
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
    let a = nodenet_agent::apply(desired, &opts).map_err(agent_failed)?;
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
    /// Records the sha256 of the file applied last; an unchanged file is not applied again.
    #[arg(long, default_value = "/var/lib/nodenet/applied")]
    record: PathBuf,
    /// Apply even if this file was applied already.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    guard: GuardArgs,
}

/// Boot-time, once: what nodenet-apply.service runs (dist/systemd).
pub fn service(args: ServiceArgs) -> ExitCode {
    nodenet_check::nmstate_bridge::install_logger();
    let host = nodenet_agent::hostname();
    let Some(file) = nodenet_agent::service_file(&args.dir, &host) else {
        info!(
            "no {host}.yml or cluster.yml in {}: nothing to apply",
            args.dir.display()
        );
        return ExitCode::SUCCESS;
    };
    let data = match std::fs::read(&file) {
        Ok(d) => d,
        Err(e) => return super::usage_error(format!("{}: {e}", file.display())),
    };
    let sha = nodenet_agent::AppliedRecord::sha256(&data);
    let record = nodenet_agent::AppliedRecord {
        path: args.record.clone(),
    };
    if !args.force && record.is_applied(&sha) {
        info!(
            "{} (sha256 {sha}) was applied already: nothing to do",
            file.display()
        );
        return ExitCode::SUCCESS;
    }
    info!("applying {} (sha256 {sha})", file.display());
    if let Err(code) =
        desired_state(&file).and_then(|d| guarded_apply(&d, args.guard, false, false))
    {
        return code;
    }
    match record.record(&sha, &file) {
        Ok(()) => {
            info!("recorded in {}", args.record.display());
            ExitCode::SUCCESS
        }
        Err(e) => super::usage_error(format!("{}: {e}", args.record.display())),
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

pub fn rollback() -> ExitCode {
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    match nodenet_agent::rollback() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::usage_error(e),
    }
}

//! On the node: `nodenet show`, `apply`, `commit`, `rollback`.

use nodenet_agent::ApplyPath;
use std::path::PathBuf;
use std::time::Duration;

use super::{CliError, Exit, Outcome};
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

/// An agent error: exit 2 when NetworkManager cannot be reached (nothing
/// was tried), else 1.
fn agent_failed(e: nodenet_agent::AgentError) -> CliError {
    let exit = if e.is_unreachable() {
        super::USAGE
    } else {
        super::PROBLEMS
    };
    CliError::usage(&e).code(e.code()).exit(exit)
}

pub fn show(args: ShowArgs) -> Outcome {
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    let v = nodenet_agent::show().map_err(agent_failed)?;
    match args.format {
        ShowFormat::Yaml => print!("{}", serde_yaml::to_string(&v).expect("JSON serialises")),
        ShowFormat::Json => println!("{v}"),
    }
    Ok(Exit::Success)
}

/// How a change is guarded: checkpoint timeout and probes. The defaults
/// are kubernetes-nmstate's (docs/openshift.md, Guards).
#[derive(clap::Args)]
pub struct GuardArgs {
    /// Checkpoint rollback timeout in seconds (NetworkManager rolls back by itself after it).
    #[arg(long, default_value_t = 480)]
    timeout: u64,
    /// Probes after the change: gateway, dns[:NAME], tcp:HOST:PORT, ping:ADDRESS, lldp (every bond port hears its switch; give --probe-timeout above the switch's LLDP interval) (comma-separated).
    #[arg(long, value_delimiter = ',')]
    probe: Vec<nodenet_agent::Probe>,
    /// Seconds each probe may take after the change (it passes as soon as it answers).
    #[arg(long, default_value_t = 120)]
    probe_timeout: u64,
}

impl GuardArgs {
    fn options(self, no_commit: bool, ephemeral: bool) -> nodenet_agent::ApplyOptions {
        nodenet_agent::ApplyOptions {
            timeout: Duration::from_secs(self.timeout),
            probes: self.probe,
            no_commit,
            ephemeral,
            probe_timeout: Duration::from_secs(self.probe_timeout),
        }
    }
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

fn print_refusal(refusal: &nodenet_agent::service::Refusal) {
    if let Some((sources, diagnostics)) = &refusal.findings {
        report::print(sources, diagnostics, Format::Human);
    }
    eprintln!("refused: {}", refusal.message);
}

/// Tells how an apply went.
fn print_applied(a: &nodenet_agent::Applied, timeout: Duration) {
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
            a.seconds,
            timeout.as_secs()
        );
    }
}

pub fn apply(args: ApplyArgs) -> Outcome {
    nodenet_check::nmstate_bridge::install_logger();
    // Applied only if `nodenet check` accepts it as a clean NMState file.
    let desired = match nodenet_agent::service::desired_state(&args.file) {
        Ok(d) => d,
        Err(refusal) => {
            print_refusal(&refusal);
            return Ok(Exit::Problems);
        }
    };
    let opts = args.guard.options(args.no_commit, args.ephemeral);
    // nmstate's and nispor's own log lines only when NODENET_LOG asks (the
    // check above has taken nmstate's warnings about the state already).
    nodenet_agent::library_logs_only_if_asked();
    let a = nodenet_agent::apply(&desired, &opts).map_err(agent_failed)?;
    print_applied(&a, opts.timeout);
    Ok(Exit::Success)
}

#[derive(clap::Args)]
pub struct ServiceArgs {
    /// Where the MachineConfig writes the state: `<short hostname>.yml`, else `cluster.yml`.
    #[arg(long, default_value = nodenet_agent::service::DIR)]
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
pub fn service(args: ServiceArgs) -> super::Outcome {
    use nodenet_agent::service::{self as svc, Outcome};
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    let opts = svc::ServiceOptions {
        dir: args.dir,
        status: args.status.clone(),
        force: args.force,
        apply: args.guard.options(false, false),
    };
    let timeout = opts.apply.timeout;
    let report = match svc::run(&mut svc::System, opts) {
        Ok(r) => r,
        Err(svc::ServiceError::Unreachable(e)) => return Err(agent_failed(e)),
        Err(e) => return Err(CliError::usage(e)),
    };
    if report.rolled_back_left_open {
        info!("rolled back the change an earlier run left open");
    }
    let run = &report.run;
    let file = run.file.as_deref().unwrap_or_default();
    let sha = run.sha256.as_deref().unwrap_or_default();
    match run.outcome {
        Outcome::NoFile => info!(
            "{}: nothing to apply",
            run.message.as_deref().unwrap_or("no file")
        ),
        Outcome::Unchanged => info!("{file} (sha256 {sha}) was applied already: nothing to do"),
        Outcome::Refused => {
            if let Some(r) = &report.refusal {
                print_refusal(r);
            }
        }
        Outcome::Applied => {
            info!("applied {file} (sha256 {sha})");
            if let Some(a) = &report.applied {
                print_applied(a, timeout);
            }
            info!("recorded in {}", args.status.display());
        }
        Outcome::RolledBack | Outcome::Failed => {}
    }
    let exit = if report.unreachable() {
        super::USAGE
    } else {
        super::PROBLEMS
    };
    let failed = matches!(run.outcome, Outcome::RolledBack | Outcome::Failed);
    match &report.error {
        Some(e) if failed || report.unreachable() => {
            Err(CliError::usage(e).code("apply-failed").exit(exit))
        }
        _ => Ok(Exit::problems_if(!run.outcome.ok())),
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
pub fn status(args: StatusArgs) -> Outcome {
    use nodenet_agent::service::Status;
    let status = Status::read(&args.status).map_err(CliError::usage)?;
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
    Ok(Exit::problems_if(
        !status.last.as_ref().is_none_or(|r| r.outcome.ok()),
    ))
}

pub fn commit() -> Outcome {
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    nodenet_agent::commit().map_err(CliError::usage)?;
    Ok(Exit::Success)
}

#[derive(clap::Args)]
pub struct RollbackArgs {
    /// Only the change an apply left open (killed, or --no-commit), and
    /// only if its checkpoint is still open; nothing to do is success
    /// (nodenet-apply.service's ExecStopPost).
    #[arg(long)]
    if_pending: bool,
}

pub fn rollback(args: RollbackArgs) -> Outcome {
    nodenet_check::nmstate_bridge::install_logger();
    nodenet_agent::library_logs_only_if_asked();
    if args.if_pending {
        if nodenet_agent::rollback_if_pending().map_err(agent_failed)? {
            info!("rolled back the change left open");
        }
        return Ok(Exit::Success);
    }
    nodenet_agent::rollback().map_err(CliError::usage)?;
    Ok(Exit::Success)
}

//! On the node: `nodenet show`, `apply`, `commit`, `rollback`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::report::{self, Format};

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

pub fn show(args: ShowArgs) -> ExitCode {
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
        Err(e) => super::usage_error(e),
    }
}

#[derive(clap::Args)]
pub struct ApplyArgs {
    /// Desired NMState.
    file: PathBuf,
    /// Checkpoint rollback timeout in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Probes after the change: gateway, dns[:NAME], tcp:HOST:PORT, ping:ADDRESS (comma-separated).
    #[arg(long, value_delimiter = ',')]
    probe: Vec<nodenet_agent::Probe>,
    /// Seconds each probe may take after the change.
    #[arg(long, default_value_t = 10)]
    probe_timeout: u64,
    /// Keep the checkpoint open; finish with `nodenet commit` or `nodenet rollback`.
    #[arg(long)]
    no_commit: bool,
    /// In memory only (lost at reboot).
    #[arg(long)]
    ephemeral: bool,
}

pub fn apply(args: ApplyArgs) -> ExitCode {
    let loaded = match nodenet_model::load_files(std::slice::from_ref(&args.file)) {
        Ok(l) => l,
        Err(e) => return super::usage_error(e),
    };
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    if report.has_errors() || loaded.inventory.kind != Some(nodenet_model::InputKind::NmState) {
        report::print(&loaded.sources, &report.diagnostics, Format::Human);
        eprintln!(
            "refused: {} is not a clean NMState file (nodenet check); nothing was applied",
            args.file.display()
        );
        return super::problems();
    }
    let desired = loaded.inventory.hosts[0]
        .network
        .as_ref()
        .map(|n| n.to_json())
        .unwrap_or_default();
    let opts = nodenet_agent::ApplyOptions {
        timeout: Duration::from_secs(args.timeout),
        probes: args.probe,
        no_commit: args.no_commit,
        ephemeral: args.ephemeral,
        probe_timeout: Duration::from_secs(args.probe_timeout),
    };
    match nodenet_agent::apply(&desired, &opts) {
        Ok(a) => {
            for (p, why) in &a.skipped {
                eprintln!("probe {p} already failed before the change ({why}): skipped");
            }
            for p in &a.passed {
                eprintln!("probe {p}: ok");
            }
            if a.committed {
                eprintln!("applied and committed in {:.2} s", a.seconds);
            } else {
                eprintln!(
                    "applied in {:.2} s; checkpoint open: `nodenet commit` or `nodenet rollback` within {} s, else NetworkManager rolls back",
                    a.seconds, args.timeout
                );
            }
            ExitCode::SUCCESS
        }
        Err(e @ nodenet_agent::AgentError::ProbeFailed { .. }) => {
            eprintln!("error: {e}");
            super::problems()
        }
        Err(e) => {
            eprintln!("error: {e}");
            super::problems()
        }
    }
}

pub fn commit() -> ExitCode {
    match nodenet_agent::commit() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::usage_error(e),
    }
}

pub fn rollback() -> ExitCode {
    match nodenet_agent::rollback() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::usage_error(e),
    }
}

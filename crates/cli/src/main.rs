//! `nodenet`: argument parsing and printing only; the work is in the
//! stage crates.

mod cmd;
mod report;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Many small allocations on two threads (YAML trees, keyfiles): glibc's
/// malloc showed up at ~15% of render time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "nodenet",
    version,
    about = "Declarative network configuration for bare-metal cluster nodes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate an inventory, install-config.yaml, agent-config.yaml or NMState file.
    Check(cmd::check::Args),
    /// Check, then write every artifact (keyfiles, install-config, MachineConfigs, ...).
    Render(cmd::render::Args),
    /// NMState to NetworkManager keyfiles (drop-in for `nmstatectl gc`).
    Gc(cmd::gc::Args),
    /// NetworkManager keyfiles (files or directories) to NMState YAML.
    Import(cmd::import::Args),
    /// What would change, per interface, to go from an actual state to a desired one.
    Diff(cmd::diff::Args),
    /// Put a host's keyfiles into its boot media (live ISO, PXE initrd).
    Image(cmd::image::Args),
    /// Serve an image directory over HTTP (GET/HEAD, ranges), printing ?sha256= URLs.
    Serve(cmd::serve::Args),
    /// Redfish BMC operations: status, power, media.
    Bmc(cmd::bmc::Args),
    /// Boot every selected host from its own ISO through its BMC (Redfish virtual media).
    Provision(cmd::provision::Args),
    /// On a node: the current network state as NMState.
    Show(cmd::agent::ShowArgs),
    /// On a node: apply a state under a NetworkManager checkpoint, probe, commit or roll back.
    Apply(cmd::agent::ApplyArgs),
    /// On a node: commit the checkpoint a `--no-commit` apply left open.
    Commit,
    /// On a node: roll back the checkpoint a `--no-commit` apply left open.
    Rollback,
    /// On a node, at boot (nodenet-apply.service): apply /etc/nmstate/openshift/<hostname>.yml, else cluster.yml, once per content.
    Service(cmd::agent::ServiceArgs),
    /// Explain a diagnostic code, or list them all.
    Explain(cmd::explain::Args),
}

fn main() -> ExitCode {
    // Like every Unix filter: a closed pipe (`nodenet gc x | head`) ends
    // the process quietly instead of panicking in println!.
    // SAFETY: restoring the default disposition of a signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::Check(args) => cmd::check::run(args),
        Command::Render(args) => cmd::render::run(args),
        Command::Gc(args) => cmd::gc::run(args),
        Command::Import(args) => cmd::import::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Image(args) => cmd::image::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Bmc(args) => cmd::bmc::run(args),
        Command::Provision(args) => cmd::provision::run(args),
        Command::Show(args) => cmd::agent::show(args),
        Command::Apply(args) => cmd::agent::apply(args),
        Command::Commit => cmd::agent::commit(),
        Command::Rollback => cmd::agent::rollback(),
        Command::Service(args) => cmd::agent::service(args),
        Command::Explain(args) => cmd::explain::run(args),
    }
}

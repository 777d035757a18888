//! `nodenet`: argument parsing and printing only; the work is in the
//! stage crates.

mod cmd;
mod log;
mod report;
mod sarif;
mod ui;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Many small allocations on two threads (YAML trees, keyfiles): glibc's
/// malloc showed up at ~15% of render time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The commands that read inputs, build their trees in memory and exit,
/// spawning nothing.
fn is_batch(command: &Command) -> bool {
    matches!(
        command,
        Command::Check(_)
            | Command::Render(_)
            | Command::Hosts(_)
            | Command::ShowHost(_)
            | Command::Gc(_)
            | Command::Import(_)
            | Command::Diff(_)
            | Command::Plan(_)
            | Command::Manifests(_)
            | Command::KrmFunction(_)
    )
}

/// mimalloc asks for transparent huge pages on its arenas
/// (`MADV_HUGEPAGE`); the kernel then zeroes 2 MiB at each first touch,
/// most of it never used by a batch command. At 10,000 hosts that was
/// 57 % of `check`'s CPU on this project's machines (perf:
/// `clear_page_erms` under huge-page faults), and `check` ran 1.2-2.6 s
/// with them against 1.1-1.2 s without. Off for the batch commands only:
/// the setting is inherited by child processes (the lab's qemu), and
/// servers and node-side commands keep the system's.
fn disable_huge_pages() {
    // SAFETY: prctl with integer arguments only; it changes this process's
    // memory policy, nothing Rust holds.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// `nodenet 0.1.0 (nmstate 2.2.62)`: the nmstate whose parser, validation
/// and keyfile generator are built in.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (nmstate ",
    env!("NODENET_NMSTATE_VERSION"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "nodenet",
    version = VERSION,
    about = "Declarative network configuration for bare-metal cluster nodes"
)]
pub struct Cli {
    /// Only errors and the results asked for: no progress, notes, summaries or warnings.
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        display_order = 900
    )]
    quiet: bool,
    /// More detail: per-step progress lines even when stderr is not a terminal.
    #[arg(short, long, global = true, display_order = 901)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate an inventory, install-config.yaml, agent-config.yaml or NMState file.
    Check(cmd::check::Args),
    /// Check, then write every artifact (keyfiles, install-config, MachineConfigs, ...).
    Render(cmd::render::Args),
    /// A starter inventory from a few flags: masters, workers, NICs, bond, VLAN, addresses.
    Init(cmd::init::Args),
    /// The hosts of an inventory at a glance: role, boot MAC, BMC, interfaces, gateway.
    Hosts(cmd::hosts::Args),
    /// One host's NMState, as render writes it (hosts/<host>/nmstate.yml).
    ShowHost(cmd::hosts::ShowArgs),
    /// NMState to NetworkManager keyfiles (drop-in for `nmstatectl gc`).
    Gc(cmd::gc::Args),
    /// NetworkManager keyfiles (files or directories) to NMState YAML.
    Import(cmd::import::Args),
    /// What would change, per interface, to go from an actual state to a desired one.
    Diff(cmd::diff::Args),
    /// Put a host's keyfiles into its boot media (live ISO, PXE initrd, disk image).
    Image(cmd::image::Args),
    /// Serve an image directory over HTTP (GET/HEAD, ranges), printing ?sha256= URLs.
    Serve(cmd::serve::Args),
    /// Redfish BMC operations: status, power, media.
    Bmc(cmd::bmc::Args),
    /// Every host's NICs as its BMC lists them (Redfish), held against the
    /// inventory: MACs it lacks filled in (`--write`), MACs the hardware
    /// does not have and boot MACs on no NIC reported.
    Discover(cmd::discover::Args),
    /// Boot every selected host from its own ISO through its BMC (Redfish virtual media).
    Provision(cmd::provision::Args),
    /// On a node: the current network state as NMState.
    Show(cmd::agent::ShowArgs),
    /// On a node: apply a state under a NetworkManager checkpoint, probe, commit or roll back.
    Apply(cmd::agent::ApplyArgs),
    /// On a node: commit the checkpoint a `--no-commit` apply left open.
    Commit,
    /// On a node: roll back the checkpoint a `--no-commit` apply left open.
    Rollback(cmd::agent::RollbackArgs),
    /// On a node, at boot (nodenet-apply.service): apply /etc/nmstate/openshift/<hostname>.yml, else cluster.yml, once per content.
    Service(cmd::agent::ServiceArgs),
    /// On a node: the LLDP neighbour (switch, port, VLANs, MTU, aggregation) of every NIC, no IP needed.
    Lldp(cmd::wires::LldpArgs),
    /// Verify the wires: probe frames on every planned VLAN between nodes (plan, run on each node, report).
    Netverify {
        #[command(subcommand)]
        command: cmd::wires::NetverifyCommand,
    },
    /// On a node: what nodenet-apply.service applied last and how its last run ended.
    Status(cmd::agent::StatusArgs),
    /// The cluster's Kubernetes objects as one YAML stream on stdout (what a GitOps engine applies: Argo CD's plugin runs it).
    Manifests(cmd::gitops::ManifestsArgs),
    /// Lay out the kustomize generator plugin (this binary) under DIR, for KUSTOMIZE_PLUGIN_HOME.
    PluginHome(cmd::gitops::PluginHomeArgs),
    /// A KRM function (kpt, kustomize): a ResourceList on stdin, the same with the rendered objects on stdout.
    KrmFunction(cmd::gitops::KrmArgs),
    /// What a new inventory version changes on which host, how risky each change is, and the rollout it implies.
    Plan(cmd::plan::Args),
    /// A small copy of the cluster's network on this machine (VMs, a switch): up, verify, status, console, down.
    Lab {
        #[command(subcommand)]
        command: cmd::lab::LabCommand,
    },
    /// Explain a diagnostic code, or list them all.
    Explain(cmd::explain::Args),
    /// Shell completion script for bash, zsh, fish, elvish or PowerShell, on stdout.
    Completions(cmd::install::CompletionsArgs),
    /// The manual page (roff) on stdout, or with -o DIR one page per command.
    Man(cmd::install::ManArgs),
}

/// Whether the command line asks for machine-read output (`--format json`
/// or `sarif`): errors are then the JSON object on stdout.
fn wants_json(args: &[std::ffi::OsString]) -> bool {
    let machine = |f: &std::ffi::OsStr| f == "json" || f == "sarif";
    args.windows(2)
        .any(|w| w[0] == "--format" && machine(&w[1]))
        || args
            .iter()
            .any(|a| a == "--format=json" || a == "--format=sarif")
}

/// Whether this binary runs as the kustomize generator: kustomize runs
/// the plugin by its path, named after the generator's kind.
fn is_kustomize_plugin(args: &[std::ffi::OsString]) -> bool {
    args.first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n == "Inventory")
}

fn main() -> ExitCode {
    // Like every Unix filter: a closed pipe (`nodenet gc x | head`) ends
    // the process quietly instead of panicking in println!.
    // SAFETY: restoring the default disposition of a signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Installed as kustomize's generator plugin (`nodenet plugin-home`).
    if is_kustomize_plugin(&args) {
        ui::set_verbosity(ui::Verbosity::Normal);
        log::init();
        disable_huge_pages();
        return match cmd::gitops::generator(&args) {
            Ok(exit) => exit.into(),
            Err(e) => e.report(report::Format::Human),
        };
    }
    let color = if ui::no_color() {
        clap::ColorChoice::Never
    } else {
        clap::ColorChoice::Auto
    };
    let matches = <Cli as clap::CommandFactory>::command()
        .color(color)
        .try_get_matches_from(&args);
    let cli = match matches.and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && wants_json(&args) => {
            let text = e.render().to_string();
            let message = text
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            return cmd::CliError::usage(message).report(report::Format::Json);
        }
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(cmd::USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    ui::set_verbosity(if cli.quiet {
        ui::Verbosity::Quiet
    } else if cli.verbose {
        ui::Verbosity::Verbose
    } else {
        ui::Verbosity::Normal
    });
    log::init();
    let format = if wants_json(&args) {
        report::Format::Json
    } else {
        report::Format::Human
    };
    if is_batch(&cli.command) {
        disable_huge_pages();
    }
    match run(cli.command) {
        Ok(exit) => exit.into(),
        Err(e) => e.report(format),
    }
}

/// The command's work; how it ended is said by `main` alone.
fn run(command: Command) -> cmd::Outcome {
    match command {
        Command::Check(args) => cmd::check::run(args),
        Command::Render(args) => cmd::render::run(args),
        Command::Init(args) => cmd::init::run(args),
        Command::Hosts(args) => cmd::hosts::run(args),
        Command::ShowHost(args) => cmd::hosts::show(args),
        Command::Gc(args) => cmd::gc::run(args),
        Command::Import(args) => cmd::import::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Image(args) => cmd::image::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Bmc(args) => cmd::bmc::run(args),
        Command::Discover(args) => cmd::discover::run(args),
        Command::Provision(args) => cmd::provision::run(args),
        Command::Show(args) => cmd::agent::show(args),
        Command::Apply(args) => cmd::agent::apply(args),
        Command::Commit => cmd::agent::commit(),
        Command::Rollback(args) => cmd::agent::rollback(args),
        Command::Service(args) => cmd::agent::service(args),
        Command::Status(args) => cmd::agent::status(args),
        Command::Plan(args) => cmd::plan::run(args),
        Command::Manifests(args) => cmd::gitops::manifests(args),
        Command::PluginHome(args) => cmd::gitops::plugin_home(args),
        Command::KrmFunction(args) => cmd::gitops::krm_function(args),
        Command::Lab { command } => cmd::lab::run(command),
        Command::Lldp(args) => cmd::wires::lldp(args),
        Command::Netverify { command } => cmd::wires::netverify(command),
        Command::Explain(args) => cmd::explain::run(args),
        Command::Completions(args) => cmd::install::completions(args),
        Command::Man(args) => cmd::install::man(args),
    }
}

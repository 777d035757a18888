//! `nodenet diff DESIRED ACTUAL`: what would change, per interface.

use std::path::{Path, PathBuf};

use nodenet_import::diff::Actual;

use super::{CliError, Exit, Outcome};
use crate::report::Format;
use crate::ui::info;

#[derive(clap::Args)]
pub struct Args {
    /// Desired state: an NMState file, or any input `check` reads (an
    /// NNCP, a MachineConfig, an inventory...) holding one host's state.
    desired: PathBuf,
    /// Actual state: an NMState file, a keyfile directory / keyfile, or
    /// what a node reports (its NodeNetworkState, `oc get nns NODE -o
    /// yaml`: only what DESIRED says is compared, as for `--live`, but
    /// every field of it).
    #[arg(required_unless_present = "live", conflicts_with = "live")]
    actual: Option<PathBuf>,
    /// Compare with the running kernel's state (this network namespace).
    #[arg(long)]
    live: bool,
    /// The host (or policy) whose state to take when an input holds several.
    #[arg(long)]
    host: Option<String>,
    /// `json`: one object on stdout, whatever the outcome (docs/output.md).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// One host's state from any input `check` reads, or keyfiles imported
/// on the fly, or a node's reported state; with how to hold a desired
/// state against it.
fn read_state(path: &Path, host: Option<&str>) -> Result<(serde_json::Value, Actual), CliError> {
    let is_keyfiles = path.is_dir()
        || path.extension().is_some_and(|e| e == "nmconnection")
        || std::fs::read_to_string(path).is_ok_and(|t| nodenet_model::load::looks_like_keyfile(&t));
    if is_keyfiles && !holds_yaml(path) {
        let imported = nodenet_import::import_paths(&[path], false)?;
        if imported.has_errors() {
            return Err(CliError::input(
                "keyfile-error",
                format!("{}: the keyfiles cannot be read", path.display()),
            )
            .with_findings(imported.sources, imported.diagnostics));
        }
        return Ok((imported.state, Actual::Complete));
    }
    let loaded = super::load_files(&[path])?;
    let refuse =
        |message: String| CliError::io(path.display().to_string(), message).code("not-a-state");
    if loaded.diagnostics.iter().any(|d| d.is_error()) {
        // The file's own findings, then why it is refused.
        return Err(refuse(format!("{} cannot be read", path.display()))
            .with_findings(loaded.sources, loaded.diagnostics));
    }
    // What nodes report (NodeNetworkStates): `--host` picks one by its
    // node name.
    if loaded.inventory.hosts.is_empty() && !loaded.running.is_empty() {
        let nodes: Vec<&nodenet_model::load::node_network_state::RunningNode> = loaded
            .running
            .iter()
            .filter(|n| host.is_none_or(|h| n.name.value == h) || loaded.running.len() == 1)
            .collect();
        return match nodes.as_slice() {
            [one] => Ok((one.state.clone(), Actual::Running)),
            [] => Err(refuse(format!(
                "{} reports no node named `{}`",
                path.display(),
                host.unwrap_or_default()
            ))),
            many => Err(refuse(format!(
                "{} reports {} nodes: choose one with --host",
                path.display(),
                many.len()
            ))),
        };
    }
    // Every cluster's hosts (a fleet of sites: `--host` picks one).
    let clusters = loaded.clusters();
    let with_state: Vec<&nodenet_model::Host> = clusters
        .iter()
        .flat_map(|c| &c.hosts)
        .filter(|h| h.network.is_some())
        .collect();
    // `--host` picks among several; a single state is taken as it is.
    let with_state: Vec<&nodenet_model::Host> = match host {
        Some(name) if with_state.len() > 1 => with_state
            .into_iter()
            .filter(|h| h.name.value == name)
            .collect(),
        _ => with_state,
    };
    match (with_state.as_slice(), host) {
        ([one], _) => Ok((
            one.network
                .as_ref()
                .map(|n| n.to_json())
                .unwrap_or_default(),
            Actual::Complete,
        )),
        ([], Some(name)) => Err(refuse(format!(
            "{} has no host or policy named `{name}` with a network state",
            path.display()
        ))),
        ([], None) => Err(refuse(format!("{} holds no network state", path.display()))),
        (many, _) => Err(refuse(format!(
            "{} holds {} states ({}): choose one with --host",
            path.display(),
            many.len(),
            many.iter()
                .take(8)
                .map(|h| h.name.value.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// A directory of manifests (YAML), as opposed to one of keyfiles.
fn holds_yaml(path: &Path) -> bool {
    path.is_dir()
        && std::fs::read_dir(path).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.path()
                    .extension()
                    .is_some_and(|x| x == "yaml" || x == "yml")
            })
        })
}

pub fn run(args: Args) -> Outcome {
    let (desired, _) = read_state(&args.desired, args.host.as_deref())?;
    let (actual, how) = match &args.actual {
        Some(path) => read_state(path, args.host.as_deref())?,
        None => (
            nodenet_import::live::current_state().map_err(CliError::usage)?,
            Actual::Live,
        ),
    };
    let d = nodenet_import::diff::diff_with(&desired, &actual, how)
        .map_err(|e| CliError::input("nmstate-error", e))?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string(&d).expect("diff serialises")),
        Format::Human => {
            print!("{}", nodenet_import::diff::render_text(&d));
            if d.equal {
                info!("no differences");
            }
        }
    }
    Ok(Exit::problems_if(!d.equal))
}

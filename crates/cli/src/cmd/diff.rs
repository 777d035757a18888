//! `nodenet diff DESIRED ACTUAL`: what would change, per interface.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use nodenet_import::diff::Actual;

use crate::report::{self, Format};

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
fn read_state(
    path: &Path,
    host: Option<&str>,
    format: Format,
) -> Result<(serde_json::Value, Actual), ExitCode> {
    let is_keyfiles = path.is_dir()
        || path.extension().is_some_and(|e| e == "nmconnection")
        || std::fs::read_to_string(path).is_ok_and(|t| nodenet_model::load::looks_like_keyfile(&t));
    if is_keyfiles && !holds_yaml(path) {
        let imported = nodenet_import::import_paths(&[path], false)
            .map_err(|e| super::Failure::from(e).report(format))?;
        if imported.has_errors() {
            report::print(&imported.sources, &imported.diagnostics, format);
            return Err(super::problems());
        }
        return Ok((imported.state, Actual::Complete));
    }
    let loaded = super::load_files(&[path]).map_err(|e| super::Failure::from(e).report(format))?;
    let refuse = |message: String| {
        super::Failure {
            code: "not-a-state",
            message,
            file: Some(path.display().to_string()),
            exit: super::USAGE,
        }
        .report(format)
    };
    if loaded.diagnostics.iter().any(|d| d.is_error()) {
        if format == Format::Json {
            // One object: the file's own findings, then why it is refused.
            let mut v = report::to_json(&loaded.sources, &loaded.diagnostics);
            let e = report::error_json(
                "not-a-state",
                &format!("{} cannot be read", path.display()),
                Some(&path.display().to_string()),
            );
            if let (Some(list), Some(err)) =
                (v["diagnostics"].as_array_mut(), e["diagnostics"].get(0))
            {
                list.push(err.clone());
            }
            println!("{v}");
            return Err(ExitCode::from(super::USAGE));
        }
        report::print(&loaded.sources, &loaded.diagnostics, format);
        return Err(refuse(format!("{} cannot be read", path.display())));
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

pub fn run(args: Args) -> ExitCode {
    let desired = match read_state(&args.desired, args.host.as_deref(), args.format) {
        Ok((s, _)) => s,
        Err(code) => return code,
    };
    let (actual, how) = match &args.actual {
        Some(path) => match read_state(path, args.host.as_deref(), args.format) {
            Ok(read) => read,
            Err(code) => return code,
        },
        None => match nodenet_import::live::current_state() {
            Ok(s) => (s, Actual::Live),
            Err(e) => return super::Failure::usage(e).report(args.format),
        },
    };
    let d = match nodenet_import::diff::diff_with(&desired, &actual, how) {
        Ok(d) => d,
        Err(e) => {
            return super::Failure {
                code: "nmstate-error",
                message: e.to_string(),
                file: None,
                exit: super::PROBLEMS,
            }
            .report(args.format)
        }
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string(&d).expect("diff serialises")),
        Format::Human => {
            print!("{}", nodenet_import::diff::render_text(&d));
            if d.equal {
                eprintln!("no differences");
            }
        }
    }
    if d.equal {
        ExitCode::SUCCESS
    } else {
        super::problems()
    }
}

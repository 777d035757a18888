//! `nodenet gc`: nmstatectl gc's output, byte for byte, plus `-o DIR`.

use super::{CliError, Exit, Outcome};
use crate::report::{self, Format};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// NMState file.
    file: PathBuf,
    /// Write the keyfiles (mode 0600) into this directory instead of
    /// printing nmstatectl's YAML.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(args: Args) -> Outcome {
    let loaded = super::load_files(&[&args.file]).map_err(CliError::usage)?;
    let mut diags = loaded.diagnostics;
    let Some(host) = loaded
        .inventory
        .hosts
        .first()
        .filter(|_| loaded.inventory.kind == Some(nodenet_model::InputKind::NmState))
    else {
        report::print(&loaded.sources, &diags, Format::Human);
        if diags.is_empty() {
            return Err(CliError::input(
                "not-nmstate",
                format!("{} is not an NMState file", args.file.display()),
            ));
        }
        return Ok(Exit::Problems);
    };
    let network = host
        .network
        .as_ref()
        .expect("an NMState host has its network");
    let keyfiles = nodenet_check::nmstate_bridge::evaluate(host, network, &mut diags).keyfiles;
    if keyfiles.is_some() {
        diags.extend(check_findings(&loaded.inventory, &diags));
        nodenet_model::diag::sort(&mut diags);
    }
    report::print(&loaded.sources, &diags, Format::Human);
    let Some(keyfiles) = keyfiles else {
        return Ok(Exit::Problems);
    };
    match args.output {
        None => {
            let mut map = std::collections::HashMap::new();
            map.insert("NetworkManager".to_string(), keyfiles);
            let text = serde_yaml::to_string(&map).expect("keyfiles serialise");
            // Exactly what nmstatectl prints.
            println!("{}", text.replace("\\n", "\n\n"));
        }
        Some(dir) => {
            let files = keyfiles
                .into_iter()
                .map(|(name, content)| nodenet_render::OutFile::new(name, content, 0o600))
                .collect();
            nodenet_render::output::write_tree(&dir, files, None).map_err(CliError::usage)?;
        }
    }
    Ok(Exit::Success)
}

/// What `nodenet check` finds in a state nmstate accepts (a VLAN id past
/// 4094, say): warnings with check's codes, since gc still writes what
/// nmstatectl writes. nmstate's own findings are already in `have`.
fn check_findings(
    inv: &nodenet_model::Inventory,
    have: &[nodenet_model::Diagnostic],
) -> Vec<nodenet_model::Diagnostic> {
    use nodenet_model::{Code, Severity};
    nodenet_check::check(inv, Vec::new())
        .diagnostics
        .into_iter()
        .filter(|d| !matches!(d.code, Code::NmstateError | Code::NmstateWarning))
        .filter(|d| !have.iter().any(|h| h.code == d.code && h.span == d.span))
        .map(|mut d| {
            if d.severity == Severity::Error {
                d.severity = Severity::Warning;
                d.message
                    .push_str(" (nodenet check refuses this state; nmstatectl writes it)");
            }
            d
        })
        .collect()
}

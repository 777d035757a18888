//! Loading every accepted input into one [`Inventory`]: files or whole
//! directories of manifests, each YAML document recognised by its content
//! (one file per format below), then merged into one cluster by host name
//! and MAC (`merge.rs`).

mod agent_config;
mod agent_manifests;
mod baremetal_host;
#[cfg(test)]
mod cluster_inputs_tests;
mod context;
mod files;
mod format;
mod install_config;
pub mod inventory_resource;
mod machine_config;
mod machine_configuration;
mod merge;
mod metal3_crd;
mod metal3_data_template;
mod native;
mod native_fleet;
mod netplan;
mod network_data;
mod nmstate;
mod nncp;
pub mod node_network_state;
mod nodes_config;
mod ztp;
mod ztp_refusals;

pub(crate) use context::{Context, Referenced};
pub use files::{max_input_bytes, LoadError, DEFAULT_MAX_INPUT_MIB, MAX_INPUT_ENV};
use files::{profile_dir, read_input, walk, Input};
pub use install_config::{OWNED as INSTALL_CONFIG_OWNED, ROOT_DEVICE_HINTS};
pub use machine_config::{decode_data_url, NODENET_DIR};
pub use metal3_data_template::HOSTS_ANNOTATION as METAL3_HOSTS_ANNOTATION;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rayon::prelude::*;

use crate::diag::{Code, Diagnostic, SourceMap};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::{self, FileId, Node, Span};

/// Result of loading: the inventory plus everything wrong with the input
/// that can be seen while loading it.
pub struct Loaded {
    pub sources: SourceMap,
    /// The cluster the inputs describe together (install-config +
    /// agent-config + manifests), or the one site of a fleet input.
    pub inventory: Inventory,
    /// The clusters of fleet inputs (ClusterInstance, SiteConfig) when
    /// there are several, or other inputs beside them: each a cluster of
    /// its own, checked alone and across the fleet.
    pub fleet: Vec<Inventory>,
    /// NodeNetworkStates among the inputs: what nodes run (read for
    /// `plan --running`, not checked as hosts).
    pub running: Vec<node_network_state::RunningNode>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Reads and loads files and directories into one inventory
/// (install-config + agent-config + a directory of manifests describe one
/// cluster). NetworkManager keyfiles among them are refused with a
/// finding: [`load_files_with`] reads them.
pub fn load_files(paths: &[impl AsRef<Path>]) -> Result<Loaded, LoadError> {
    load_files_with(paths, None)
}

mod config_drive;
/// Reads NetworkManager keyfiles (told by content, as NetworkManager's
/// keyfile plugin reads any file name) into the NMState they stand for;
mod documents;
mod shared;
mod spans;

use config_drive::*;
pub use documents::*;
use shared::*;
use spans::*;
/// the import stage has the one reader, the inventory stage says where.
pub trait ProfileReader: Sync {
    /// The keyfiles (file id in `sources`, name, text), all one host's,
    /// into one NMState state; findings located in them, secrets redacted
    /// in `sources`. `None` when they cannot be read.
    fn read(
        &self,
        files: &[(FileId, &str, &str)],
        sources: &mut SourceMap,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Option<serde_json::Value>;
}

/// Whether a text is a NetworkManager keyfile (a GKeyFile): its first
/// line that is not blank or a `#` comment is a `[group]` header, every
/// other one is a header or `key=value`, and there is one `key=value` at
/// least. No YAML or JSON document reads so.
pub fn looks_like_keyfile(text: &str) -> bool {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let header = |l: &str| l.starts_with('[') && l.ends_with(']') && !l.contains(',');
    if !lines.next().is_some_and(header) {
        return false;
    }
    let mut entries = 0;
    for l in lines {
        if header(l) {
            continue;
        }
        match l.split_once('=') {
            Some((key, _)) if !key.trim().is_empty() && !key.contains(':') => entries += 1,
            _ => return false,
        }
    }
    entries > 0
}

/// [`load_files`], with NetworkManager keyfiles among the inputs (or
/// `*.nmconnection` files in their directories) read by `keyfiles`: each
/// input's keyfiles are one host's profiles.
pub fn load_files_with(
    paths: &[impl AsRef<Path>],
    keyfiles: Option<&dyn ProfileReader>,
) -> Result<Loaded, LoadError> {
    load_files_and_texts(paths, Vec::new(), keyfiles)
}

/// [`load_files_with`], and texts that are no file (`(name, text)`: an
/// inventory read from NetBox) loaded beside them, first.
pub fn load_files_and_texts(
    paths: &[impl AsRef<Path>],
    texts: Vec<(String, String)>,
    keyfiles: Option<&dyn ProfileReader>,
) -> Result<Loaded, LoadError> {
    let limit = max_input_bytes()?;
    let mut inputs = text_inputs(texts);
    let mut dirs = Vec::new();
    for p in paths {
        let p = p.as_ref();
        let io = |source| LoadError::Io {
            path: p.display().to_string(),
            source,
        };
        if std::fs::metadata(p).map_err(io)?.is_dir() {
            let before = inputs.len();
            walk(p, 0, limit, &mut inputs)?;
            // A profile directory (`system-connections/`): its keyfiles.
            if inputs.len() == before && keyfiles.is_some() {
                profile_dir(p, limit, &mut inputs)?;
            }
            dirs.push((p.display().to_string(), before..inputs.len()));
        } else {
            inputs.push(read_input(p, limit, false)?);
        }
    }
    let mut loaded = load_inputs(inputs, keyfiles);
    for (dir, _) in dirs.iter().filter(|(_, r)| r.is_empty()) {
        loaded.diagnostics.push(Diagnostic::error(
            Code::UnknownFormat,
            format!("{dir} holds no .yaml, .yml or .json file (nor a NetworkManager keyfile)"),
        ));
    }
    Ok(loaded)
}

/// Named texts to load as if they were files given on the command line.
fn text_inputs(texts: Vec<(String, String)>) -> Vec<Input> {
    texts
        .into_iter()
        .map(|(name, text)| Input {
            name,
            text,
            in_dir: false,
            not_text: None,
        })
        .collect()
}

/// Loads named texts as if they were files given on the command line.
pub fn load_texts(texts: Vec<(String, String)>) -> Loaded {
    load_inputs(text_inputs(texts), None)
}

impl Loaded {
    /// Every cluster of the inputs: the one they describe together (when
    /// there is one) and the sites of a fleet.
    pub fn clusters(&self) -> Vec<&Inventory> {
        let together = &self.inventory;
        let any = self.fleet.is_empty()
            || !together.hosts.is_empty()
            || together.cluster.span.is_some()
            || together.kind.is_some();
        any.then_some(together)
            .into_iter()
            .chain(&self.fleet)
            .collect()
    }
}

fn load_inputs(inputs: Vec<Input>, keyfiles: Option<&dyn ProfileReader>) -> Loaded {
    let mut sources = SourceMap::default();
    let mut diagnostics = Vec::new();
    let inputs = add_sources(inputs, &mut sources, &mut diagnostics);
    let (profiles, inputs): (Vec<_>, Vec<_>) = inputs
        .into_iter()
        .partition(|&(file, _)| looks_like_keyfile(&sources.get(file).expect("added").text));
    let mut docs = read_keyfiles(&profiles, keyfiles, &mut sources, &mut diagnostics);
    docs.extend(parse_documents(&inputs, &mut sources, &mut diagnostics));
    let shapes: Vec<Shape> = docs
        .iter()
        .map(|doc| shape(&doc.root, sources.name(doc.file)))
        .collect();
    // Files in which some document is read: the others in them are
    // objects nodenet has no business with, not mistakes.
    let files_read: HashSet<FileId> = docs
        .iter()
        .zip(&shapes)
        .filter(|(_, s)| matches!(s, Shape::Input(_) | Shape::Running))
        .map(|(d, _)| d.file)
        .collect();
    // Secrets and IPPools are read where other objects name them; the
    // other documents are taken apart as they are loaded.
    type Shaped = Vec<(Document, Shape)>;
    let (referenced_docs, mut docs): (Shaped, Shaped) = docs
        .into_iter()
        .zip(shapes)
        .partition(|(_, s)| matches!(s, Shape::Referenced(_)));
    let objects = Referenced::of(&referenced_docs);
    let host_nics = inspected_nics(&docs);
    let mut ctx = Context {
        sources: &mut sources,
        objects: &objects,
        host_nics: &host_nics,
        allocated: Default::default(),
    };
    let mut read = Read::default();
    // What nodes report, on every core first: 10,000 NodeNetworkStates'
    // states are made JSON (their findings stay in the documents' order).
    type Reported = (Option<node_network_state::RunningNode>, Vec<Diagnostic>);
    let running: Vec<Option<Reported>> = docs
        .par_iter()
        .map(|(doc, shape)| {
            matches!(shape, Shape::Running).then(|| {
                let mut found = Vec::new();
                (node_network_state::load(&doc.root, &mut found), found)
            })
        })
        .collect();
    for ((doc, shape), running) in docs.iter_mut().zip(running) {
        match running {
            Some((node, found)) => {
                read.running.extend(node);
                diagnostics.extend(found);
            }
            None => read.document(doc, shape, &files_read, &mut ctx, &mut diagnostics),
        }
    }
    diagnostics.extend(read.unread_findings(!referenced_docs.is_empty()));
    for (doc, _) in docs.into_iter().chain(referenced_docs) {
        doc.root.drop_in_parallel();
    }
    let one_site = read.parts.is_empty() && read.sites.len() == 1;
    let (inventory, fleet) = if one_site {
        (read.sites.pop().expect("one"), Vec::new())
    } else {
        (
            merge::merge(read.parts, &sources, &mut diagnostics),
            read.sites,
        )
    };
    Loaded {
        sources,
        inventory,
        fleet,
        running: read.running,
        diagnostics,
    }
}

/// The inputs as source files; those that are not text are findings
/// (at the first byte that is not) and go no further.
fn add_sources(
    inputs: Vec<Input>,
    sources: &mut SourceMap,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(FileId, bool)> {
    let mut texts = Vec::new();
    for input in inputs {
        let file = sources.add(input.name, input.text);
        match input.not_text {
            Some(n) => {
                let text = &sources.get(file).expect("added").text;
                let at = span_of_offset(text, file, n.at.min(text.len()));
                diagnostics.push(Diagnostic::error(n.code, n.what).at(at));
            }
            None => texts.push((file, input.in_dir)),
        }
    }
    texts
}

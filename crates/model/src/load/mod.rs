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

/// Reads NetworkManager keyfiles (told by content, as NetworkManager's
/// keyfile plugin reads any file name) into the NMState they stand for;
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
    let limit = max_input_bytes()?;
    let mut inputs = Vec::new();
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

/// Loads named texts as if they were files given on the command line.
pub fn load_texts(texts: Vec<(String, String)>) -> Loaded {
    load_inputs(
        texts
            .into_iter()
            .map(|(name, text)| Input {
                name,
                text,
                in_dir: false,
                not_text: None,
            })
            .collect(),
        None,
    )
}

/// One YAML document of an input.
struct Document {
    root: Node,
    file: FileId,
    /// The file's name without directory and extension (a bare NMState
    /// file's host is named after it).
    stem: String,
    /// Position in its file (0 for the first document).
    index: usize,
    in_dir: bool,
}

/// What a document is.
#[derive(Debug, PartialEq)]
enum Shape {
    Input(InputKind),
    /// A Kubernetes object read where another names it: a Secret (by a
    /// BareMetalHost), an IPPool (by a Metal3DataTemplate).
    Referenced(&'static str),
    /// kubernetes-nmstate's report of what a node runs.
    Running,
    /// A Kubernetes object of a kind that carries no host networking.
    OtherObject(String),
    Unknown,
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
    for (doc, shape) in docs.iter_mut() {
        read.document(doc, shape, &files_read, &mut ctx, &mut diagnostics);
    }
    diagnostics.extend(read.unread_findings(!referenced_docs.is_empty()));
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

/// Every YAML (or JSON) document of the files, parsed in parallel (a
/// directory of 10,000 manifests); a `kind: List` gives its items.
fn parse_documents(
    files: &[(FileId, bool)],
    sources: &mut SourceMap,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Document> {
    use rayon::prelude::*;
    let parsed: Vec<Result<Vec<Node>, yaml::YamlError>> = files
        .par_iter()
        .map(|&(file, _)| yaml::parse_all(&sources.get(file).expect("added").text, file))
        .collect();
    let mut docs = Vec::new();
    for (&(file, in_dir), parsed) in files.iter().zip(parsed) {
        let stem = Path::new(sources.name(file))
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "host".into());
        let text = &sources.get(file).expect("added").text;
        let roots = match parsed {
            Ok(roots) => roots,
            Err(mut e) => {
                // The scanner reports a tab at the start of the token it was
                // reading; point at the tab itself.
                if e.message.contains("tab") {
                    if let Some(i) = text[e.span.offset as usize..].find('\t') {
                        e.span = span_of_offset(text, file, e.span.offset as usize + i);
                    }
                }
                diagnostics.push(Diagnostic::error(Code::YamlSyntax, e.message).at(e.span));
                continue;
            }
        };
        let secrets: Vec<(usize, usize)> = roots.iter().flat_map(secret_spans).collect();
        if !secrets.is_empty() {
            sources.redact(file, &secrets);
        }
        if roots.is_empty() && !in_dir {
            diagnostics.push(
                Diagnostic::error(Code::UnknownFormat, "the file holds no YAML document")
                    .at(file_start(file)),
            );
        }
        for (index, root) in roots.into_iter().enumerate() {
            // `kind: List` (kubectl get -o yaml) holds its objects in `items`.
            let items = match root.get("kind").and_then(Node::as_str) {
                Some(k) if k == "List" || k.ends_with("List") && root.get("items").is_some() => {
                    root.get("items")
                        .and_then(Node::as_seq)
                        .map(<[Node]>::to_vec)
                        .unwrap_or_default()
                }
                _ => vec![root],
            };
            docs.extend(items.into_iter().map(|root| Document {
                root,
                file,
                stem: stem.clone(),
                index,
                in_dir,
            }));
        }
    }
    docs
}

fn meta_field(root: &Node, key: &str) -> String {
    root.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Node::scalar_text)
        .unwrap_or_default()
}

/// The NICs inspection found on each BareMetalHost among the inputs
/// (`status.hardware.nics`: name, MAC), by namespace and name.
fn inspected_nics(docs: &[(Document, Shape)]) -> HashMap<(String, String), Vec<(String, String)>> {
    docs.iter()
        .filter(|(_, s)| *s == Shape::Input(InputKind::BareMetalHost))
        .map(|(doc, _)| {
            let nics = doc
                .root
                .get("status")
                .and_then(|s| s.get("hardware"))
                .and_then(|h| h.get("nics"))
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .filter_map(|n| Some((n.get("name")?.scalar_text()?, n.get("mac")?.scalar_text()?)))
                .collect();
            let id = (
                meta_field(&doc.root, "namespace"),
                meta_field(&doc.root, "name"),
            );
            (id, nics)
        })
        .collect()
}

/// What the documents were read into, as they are read one by one.
#[derive(Default)]
struct Read {
    /// Parts of the one cluster the inputs describe together.
    parts: Vec<Inventory>,
    /// Clusters of their own (ZTP sites, a native fleet's).
    sites: Vec<Inventory>,
    /// What nodes report they run (NodeNetworkStates).
    running: Vec<node_network_state::RunningNode>,
    /// Documents of directories that nodenet does not read, by kind.
    unread: std::collections::BTreeMap<String, usize>,
}

impl Read {
    fn document(
        &mut self,
        doc: &mut Document,
        shape: &Shape,
        files_read: &HashSet<FileId>,
        ctx: &mut Context,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        match shape {
            Shape::Input(kind) => match format::of_kind(*kind).load(doc, ctx, diagnostics) {
                format::Loads::Part(part) => {
                    let mut part = *part;
                    part.kind = Some(*kind);
                    part.hosts.iter_mut().for_each(add_nics_from_network);
                    self.parts.push(part);
                }
                format::Loads::Sites(clusters) => {
                    for mut site in clusters {
                        site.hosts.iter_mut().for_each(add_nics_from_network);
                        self.sites.push(site);
                    }
                }
            },
            Shape::Referenced(_) => {}
            Shape::Running => {
                self.running
                    .extend(node_network_state::load(&doc.root, diagnostics));
            }
            Shape::OtherObject(kind) if !doc.in_dir && !files_read.contains(&doc.file) => {
                diagnostics.push(
                    Diagnostic::error(
                        Code::UnknownFormat,
                        format!("a Kubernetes `{kind}` carries no host networking nodenet reads"),
                    )
                    .at(doc.root.get("kind").map(|k| k.span).unwrap_or(doc.root.span))
                    .help(READS),
                );
            }
            Shape::OtherObject(kind) => {
                if doc.in_dir && !RENDERED_BESIDE.contains(&kind.as_str()) {
                    *self.unread.entry(kind.clone()).or_default() += 1;
                }
            }
            Shape::Unknown if doc.in_dir && read_beside(ctx.sources.name(doc.file), &doc.root) => {}
            Shape::Unknown if doc.in_dir => {
                *self.unread.entry("not Kubernetes".to_string()).or_default() += 1;
            }
            Shape::Unknown => diagnostics.push(
                Diagnostic::error(
                    Code::UnknownFormat,
                    "not a nodenet inventory, install-config.yaml, agent-config.yaml, NMState state or Kubernetes manifest nodenet reads",
                )
                .at(doc.root.span)
                .help(READS),
            ),
        }
    }

    /// A directory of nothing nodenet reads must not pass as checked; one
    /// of manifests (a ZTP repository's kustomizations and extra
    /// manifests) holds more than host networking, and what was skipped
    /// is said once, not per file.
    fn unread_findings(&self, referenced_read: bool) -> Option<Diagnostic> {
        if self.unread.is_empty() {
            return None;
        }
        let named: Vec<String> = self
            .unread
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        let something_read = !(self.parts.is_empty() && self.sites.is_empty());
        if something_read {
            return Some(Diagnostic::warning(
                Code::UnknownFormat,
                format!(
                    "skipped {} document(s) of kinds nodenet does not read: {}",
                    self.unread.values().sum::<usize>(),
                    named.join(", ")
                ),
            ));
        }
        (!referenced_read && self.running.is_empty()).then(|| {
            Diagnostic::error(
                Code::UnknownFormat,
                format!(
                    "nothing in the inputs is something nodenet reads ({}): no host was checked",
                    named.join(", ")
                ),
            )
            .help(READS)
        })
    }
}

/// Files a directory holds beside what nodenet reads: a render's own
/// manifest.json, a config drive's other files beside its
/// network_data.json.
fn read_beside(name: &str, root: &Node) -> bool {
    let manifest = root.get("files").is_some() && name.ends_with("manifest.json");
    let drive = name.contains("/openstack/")
        && ["meta_data.json", "vendor_data.json", "vendor_data2.json"]
            .iter()
            .any(|f| name.ends_with(f));
    manifest || drive
}

/// The keyfiles among the inputs as one bare NMState document (one host's
/// profiles, named after the first file), or a finding when no reader
/// was given.
fn read_keyfiles(
    files: &[(FileId, bool)],
    reader: Option<&dyn ProfileReader>,
    sources: &mut SourceMap,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Document> {
    let Some(&(first, in_dir)) = files.first() else {
        return Vec::new();
    };
    let Some(reader) = reader else {
        for &(file, _) in files {
            diagnostics.push(
                Diagnostic::error(
                    Code::UnknownFormat,
                    "a NetworkManager keyfile: this command reads NMState and the formats that carry it",
                )
                .at(file_start(file))
                .help("`nodenet check` reads keyfiles as NetworkManager does; `nodenet import` turns them into NMState"),
            );
        }
        return Vec::new();
    };
    let texts: Vec<(FileId, String, String)> = files
        .iter()
        .map(|&(f, _)| {
            let src = sources.get(f).expect("added");
            (f, src.name.clone(), src.text.clone())
        })
        .collect();
    let views: Vec<(FileId, &str, &str)> = texts
        .iter()
        .map(|(f, n, t)| (*f, n.as_str(), t.as_str()))
        .collect();
    let Some(state) = reader.read(&views, sources, diagnostics) else {
        return Vec::new();
    };
    let stem = Path::new(sources.name(first))
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    vec![Document {
        root: Node::from_json(&state, file_start(first)),
        file: first,
        stem,
        index: 0,
        in_dir,
    }]
}

/// Kinds nodenet renders beside the networking it reads back (a render's
/// directory checks without a note about them).
const RENDERED_BESIDE: &[&str] = &["MachineOSConfig", "MachineConfigPool"];

const READS: &str = "nodenet reads: an inventory (`nodenet: v1`), install-config.yaml (`platform:`), agent-config.yaml, NMState (`interfaces:`, `routes:`, `dns-resolver:`, `hostname:` ...), the MachineConfig, NodeNetworkConfigurationPolicy, NMStateConfig, AgentClusterInstall, BareMetalHost and Secret manifests that carry host networking, GitOps ZTP SiteConfigs and ClusterInstances, OpenStack network_data.json, Cluster API Metal3DataTemplates with their IPPools, netplan YAML, and `oc adm node-image create`'s nodes-config.yaml";

/// What a document is: an input format's (the first of [`format::FORMATS`]
/// that detects it), or an object nodenet reads only where another names
/// it, or what nodes report, or something else.
fn shape(root: &Node, file_name: &str) -> Shape {
    let p = format::Probe::new(root, file_name);
    if let Some(f) = format::detect(&p) {
        return Shape::Input(f.kind());
    }
    match p.kind {
        k if node_network_state::is_node_network_state(k, p.group) => Shape::Running,
        Some("Secret") if p.group.is_empty() => Shape::Referenced("Secret"),
        Some("IPPool") if p.group == "ipam.metal3.io" => Shape::Referenced("IPPool"),
        Some(other) => Shape::OtherObject(other.to_string()),
        None => Shape::Unknown,
    }
}

/// Which format a document is, from its content alone.
pub fn detect(root: &Node) -> Option<InputKind> {
    match shape(root, "") {
        Shape::Input(kind) => Some(kind),
        _ => None,
    }
}

/// Whether a path is a config drive's `openstack/<version>/` file.
fn in_config_drive(path: &str) -> bool {
    matches!(drive_dirs(path, 2).as_slice(), [v, os] if drive_version(v) && os == "openstack")
}

/// The names of the `n` directories above a file, nearest first.
fn drive_dirs(path: &str, n: usize) -> Vec<String> {
    Path::new(path)
        .ancestors()
        .skip(1)
        .take(n)
        .map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect::<Option<_>>()
        .unwrap_or_default()
}

/// A config drive's `openstack/<version>` directory: `latest` or a date.
fn drive_version(v: &str) -> bool {
    v == "latest" || v.len() == 10 && v.as_bytes()[4] == b'-'
}

/// The host name a config drive gives beside its `network_data.json`:
/// `meta_data.json`'s `hostname`, which cloud-init sets.
fn meta_data_hostname(path: &str) -> Option<String> {
    if !in_config_drive(path) {
        return None;
    }
    let meta = Path::new(path).parent()?.join("meta_data.json");
    let text = std::fs::read_to_string(meta).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let name = json.get("hostname")?.as_str()?;
    (!name.is_empty()).then(|| name.to_string())
}

/// The host a `network_data.json` is named after: its directory, or the
/// directory holding a config drive's `openstack/<version>/` tree.
fn config_drive_host(path: &str) -> Option<String> {
    match drive_dirs(path, 3).as_slice() {
        [v, os, host] if drive_version(v) && os == "openstack" => Some(host.clone()),
        _ => parent_dir_name(path),
    }
}

fn parent_dir_name(path: &str) -> Option<String> {
    let parent = Path::new(path).parent()?.file_name()?;
    Some(parent.to_string_lossy().into_owned())
}

fn file_start(file: FileId) -> Span {
    Span {
        file,
        line: 1,
        column: 1,
        offset: 0,
        len: 1,
    }
}

fn span_of_offset(text: &str, file: FileId, offset: usize) -> Span {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    Span {
        file,
        line: line as u32,
        column: col as u32,
        offset: offset as u32,
        len: 1,
    }
}

/// Byte ranges of every `password:` value (and of a Secret's values), so
/// no snippet ever shows one.
fn secret_spans(root: &Node) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let is_secret = root.get("kind").and_then(Node::as_str) == Some("Secret");
    let mut visit = |n: &Node| {
        for (k, v) in n.as_map().unwrap_or_default() {
            if k.as_str()
                .is_some_and(|k| k.eq_ignore_ascii_case("password"))
            {
                // The value's length in the source (quotes included).
                out.push((v.span.offset as usize, v.span.len as usize));
            }
        }
        false
    };
    root.find(&mut visit);
    if is_secret {
        // A Secret's values other than the network (NMState,
        // network_data.json) are credentials.
        for key in ["data", "stringData"] {
            for (k, v) in root.get(key).and_then(Node::as_map).unwrap_or_default() {
                if !matches!(k.as_str(), Some("nmstate" | "networkData")) && v.as_str().is_some() {
                    out.push((v.span.offset as usize, v.span.len as usize));
                }
            }
        }
    }
    out
}

/// Ethernet interfaces that pin `mac-address` in NMState are NICs with a
/// known MAC even when the input lists no NICs (install-config).
fn add_nics_from_network(host: &mut Host) {
    let Some(ifaces) = host
        .network
        .as_ref()
        .and_then(|n| n.get("interfaces"))
        .and_then(Node::as_seq)
    else {
        return;
    };
    for iface in ifaces {
        let (Some(name), Some(mac)) = (iface.get("name"), iface.get("mac-address")) else {
            continue;
        };
        let is_eth = iface
            .get("type")
            .and_then(Node::as_str)
            .is_none_or(|t| t == "ethernet");
        let (Some(name_s), Some(mac_s)) = (name.scalar_text(), mac.scalar_text()) else {
            continue;
        };
        if !is_eth || !crate::fields::is_mac(&mac_s) {
            continue;
        }
        if !host.nics.iter().any(|n| n.name.value == name_s) {
            host.nics.push(Nic::new(
                Located::new(name_s, name.span),
                Some(Located::new(mac_s, mac.span)),
            ));
        }
    }
}

fn provisioning_mode(d: &mut Decoder, v: &Node) -> Option<Located<ProvisioningNetwork>> {
    let s = v.scalar_text()?;
    let mode = match s.as_str() {
        "Managed" => ProvisioningNetwork::Managed,
        "Unmanaged" => ProvisioningNetwork::Unmanaged,
        "Disabled" => ProvisioningNetwork::Disabled,
        _ => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("provisioning network `{s}` is not Managed, Unmanaged or Disabled"),
                )
                .at(v.span),
            );
            return None;
        }
    };
    Some(Located::new(mode, v.span))
}

/// In `cluster.installConfig` / `cluster.agentConfig` (`what`), a field
/// nodenet writes from the inventory is an error naming where the
/// inventory says it (`owned`: the field's path and that place).
fn refuse_owned(d: &mut Decoder, base: &Node, what: &str, owned: &[(&[&str], &str)]) {
    for (path, instead) in owned {
        let found = path.iter().try_fold(base, |n, k| n.get(k));
        if let Some(n) = found {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "`{}` in {what} is written by nodenet from {instead}",
                        path.join(".")
                    ),
                )
                .at(n.span)
                .help(format!("remove it here and set {instead}")),
            );
        }
    }
}

/// A host's BMC as install-config and agent-config write it (address,
/// username, password inline): the password kept as a secret under the
/// credentials `<host>-bmc`. `what` is the key it was under.
fn inline_bmc(
    d: &mut Decoder,
    b: &Node,
    what: &str,
    host: &str,
    credentials: &mut std::collections::BTreeMap<String, Located<Credentials>>,
) -> Option<Bmc> {
    let address = d.required_string(b, "address", what)?;
    let cred_name = format!("{host}-bmc");
    if let (Some(user), Some(pw)) = (d.string(b, "username"), d.string(b, "password")) {
        credentials.insert(
            cred_name.clone(),
            Located::new(
                Credentials {
                    username: user.value,
                    password: PasswordSource::Inline(Secret::new(pw.value)),
                },
                b.span,
            ),
        );
    }
    Some(Bmc {
        address,
        credentials: Some(Located::new(cred_name, b.span)),
        disable_certificate_verification: d
            .bool(b, "disableCertificateVerification")
            .unwrap_or(false),
    })
}

fn role(d: &mut Decoder, v: Option<&Node>, fallback: Span) -> Located<Role> {
    let Some(v) = v else {
        return Located::new(Role::Unset, fallback);
    };
    let s = v.scalar_text().unwrap_or_default();
    match Role::parse(&s) {
        Some(r) => Located::new(r, v.span),
        None => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("role `{s}` is not master, worker or arbiter"),
                )
                .at(v.span),
            );
            Located::new(Role::Unset, v.span)
        }
    }
}

/// `metadata.name` of a Kubernetes object, located.
fn object_name(d: &mut Decoder, root: &Node, what: &str) -> Option<Located<String>> {
    let name = root.get("metadata").and_then(|m| d.string(m, "name"));
    if name.is_none() {
        d.push(
            Diagnostic::error(Code::MissingField, format!("{what} has no `metadata.name`"))
                .at(root.get("metadata").map(|m| m.span).unwrap_or(root.span)),
        );
    }
    name
}

/// A value of `metadata.labels`.
fn label<'n>(root: &'n Node, key: &str) -> Option<&'n Node> {
    root.get("metadata")?.get("labels")?.get(key)
}

//! Loading every accepted input into one [`Inventory`]: files or whole
//! directories of manifests, each YAML document recognised by its content
//! (one file per format below), then merged into one cluster by host name
//! and MAC (`merge.rs`).

mod agent_config;
mod agent_manifests;
mod baremetal_host;
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

pub use install_config::{OWNED as INSTALL_CONFIG_OWNED, ROOT_DEVICE_HINTS};
pub use machine_config::{decode_data_url, NODENET_DIR};
pub use metal3_data_template::HOSTS_ANNOTATION as METAL3_HOSTS_ANNOTATION;

use std::collections::HashMap;
use std::path::Path;

use crate::diag::{Code, Diagnostic, Embedding, SourceMap};
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

/// Fatal problems: nothing can be checked.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is {} MiB; nodenet reads inputs of up to {} MiB (set {MAX_INPUT_ENV} to read larger ones)", .size.div_ceil(MIB), .limit / MIB)]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{MAX_INPUT_ENV}={value} is not a size in MiB (a whole number, at least 1)")]
    BadLimit { value: String },
}

/// The environment variable that sets the largest input read, in MiB.
pub const MAX_INPUT_ENV: &str = "NODENET_MAX_INPUT_MIB";
/// Inputs larger than this are refused unless [`MAX_INPUT_ENV`] says
/// otherwise: a 10,000-host install-config is 15 MiB, and a file is held
/// some twenty times over once parsed.
pub const DEFAULT_MAX_INPUT_MIB: u64 = 64;
const MIB: u64 = 1024 * 1024;

/// The largest input file read, in bytes.
pub fn max_input_bytes() -> Result<u64, LoadError> {
    match std::env::var(MAX_INPUT_ENV) {
        Err(_) => Ok(DEFAULT_MAX_INPUT_MIB * MIB),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n.saturating_mul(MIB)),
            _ => Err(LoadError::BadLimit { value: v }),
        },
    }
}

/// One text to load.
struct Input {
    name: String,
    text: String,
    /// Found by walking a directory: documents nodenet does not read are
    /// skipped there, not reported.
    in_dir: bool,
    /// Why the text is not YAML at all (binary, not UTF-8): reported at
    /// that place instead of parsing it.
    not_text: Option<NotText>,
}

/// A file that is no text: what it is and where that shows (byte offset).
struct NotText {
    what: String,
    code: Code,
    at: usize,
}

/// Directories are walked this deep at most (a symlink loop ends here).
const MAX_DIR_DEPTH: usize = 16;

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

/// Reads one file of at most `limit` bytes (checked before reading, and
/// while reading: a pipe or a device has no size), and tells binary or
/// non-UTF-8 content before anything parses it.
fn read_input(p: &Path, limit: u64, in_dir: bool) -> Result<Input, LoadError> {
    use std::io::Read;
    let path = p.display().to_string();
    let io = |source| LoadError::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::File::open(p).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > limit {
        return Err(LoadError::TooLarge { path, size, limit });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(LoadError::TooLarge {
            path,
            size: bytes.len() as u64,
            limit,
        });
    }
    let (text, not_text) = classify(bytes);
    Ok(Input {
        name: path,
        text,
        in_dir,
        not_text,
    })
}

/// The file's text, and why it is no YAML text when it is not: a NUL
/// byte (binary, or UTF-16/32 text) or bytes that are not UTF-8. YAML is
/// Unicode text; nothing else is worth a parser's time or a snippet.
fn classify(bytes: Vec<u8>) -> (String, Option<NotText>) {
    let utf16 = bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]);
    if let Some(at) = bytes.iter().position(|b| *b == 0) {
        let what = if utf16 {
            "the file is UTF-16 text: nodenet reads UTF-8 (convert it, e.g. `iconv -f UTF-16 -t UTF-8`)".to_string()
        } else {
            "the file is binary (a NUL byte here), not YAML".to_string()
        };
        // Only the text before the NUL is kept: the finding is at its end.
        let text = String::from_utf8_lossy(&bytes[..at]).into_owned();
        let at = text.len();
        return (
            text,
            Some(NotText {
                what,
                code: Code::UnknownFormat,
                at,
            }),
        );
    }
    match String::from_utf8(bytes) {
        Ok(s) => (s, None),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let byte = e.as_bytes()[at];
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            (
                text,
                Some(NotText {
                    what: format!("the file is not UTF-8 text: byte 0x{byte:02x} here is no UTF-8 character (YAML is Unicode; save the file as UTF-8)"),
                    code: Code::YamlSyntax,
                    at,
                }),
            )
        }
    }
}

/// The entries of a directory, in name order.
fn sorted_entries(dir: &Path) -> Result<Vec<std::path::PathBuf>, LoadError> {
    let io = |source| LoadError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    Ok(entries)
}

/// Manifest files under `dir`, in name order, as `kubectl apply -R -f`
/// takes them: `.yaml`, `.yml` and `.json`, hidden files and directories
/// left out.
fn walk(dir: &Path, depth: usize, limit: u64, out: &mut Vec<Input>) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: dir.display().to_string(),
        source,
    };
    if depth > MAX_DIR_DEPTH {
        return Err(io(std::io::Error::other(format!(
            "directories nested deeper than {MAX_DIR_DEPTH} levels (a symlink loop?)"
        ))));
    }
    for path in sorted_entries(dir)? {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref().is_none_or(|n| n.starts_with('.')) {
            continue;
        }
        if path.is_dir() {
            walk(&path, depth + 1, limit, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(read_input(&path, limit, true)?);
        }
    }
    Ok(())
}

/// The keyfiles of a directory with no manifest in it, as NetworkManager's
/// keyfile plugin reads its profile directory: every regular file but
/// hidden ones, told by content.
fn profile_dir(dir: &Path, limit: u64, out: &mut Vec<Input>) -> Result<(), LoadError> {
    for path in sorted_entries(dir)? {
        let hidden = path
            .file_name()
            .is_none_or(|n| n.to_string_lossy().starts_with('.'));
        if hidden || !path.is_file() {
            continue;
        }
        let input = read_input(&path, limit, true)?;
        if input.not_text.is_none() && looks_like_keyfile(&input.text) {
            out.push(input);
        }
    }
    Ok(())
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

/// Kubernetes objects other inputs name (Secrets, IPPools), by kind,
/// namespace and name.
pub(crate) struct Referenced<'a> {
    by_name: HashMap<(&'static str, String, String), &'a Node>,
}

impl<'a> Referenced<'a> {
    pub(crate) fn secret(&self, namespace: &str, name: &str) -> Option<&'a Node> {
        self.object("Secret", namespace, name)
    }

    /// Every object of a kind in a namespace (or written without one), by
    /// name.
    pub(crate) fn all(&self, kind: &str, namespace: &str) -> Vec<(&str, &'a Node)> {
        let mut v: Vec<(&str, &'a Node)> = self
            .by_name
            .iter()
            .filter(|((k, ns, _), _)| *k == kind && (ns == namespace || ns.is_empty()))
            .map(|((_, _, name), node)| (name.as_str(), *node))
            .collect();
        v.sort_by_key(|(name, _)| *name);
        v
    }

    pub(crate) fn object(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
    ) -> Option<&'a Node> {
        self.by_name
            .get(&(kind, namespace.to_string(), name.to_string()))
            .or_else(|| {
                // An object written without a namespace goes where it is applied.
                self.by_name.get(&(kind, String::new(), name.to_string()))
            })
            .copied()
    }
}

/// What a format loader may use besides its document.
pub(crate) struct Context<'a> {
    pub sources: &'a mut SourceMap,
    pub objects: &'a Referenced<'a>,
    /// The NICs of each BareMetalHost among the inputs as inspection found
    /// them (`status.hardware.nics`: name, MAC), by namespace and name.
    pub host_nics: &'a HashMap<(String, String), Vec<(String, String)>>,
    /// Addresses IPAM hands out from IPPools to hosts without a
    /// preallocation, across every template that draws from them (as
    /// ip-address-manager allocates: never one address twice).
    pub allocated: std::collections::HashSet<std::net::IpAddr>,
}

impl Context<'_> {
    /// Parses YAML carried inside a document (a data: URL, a Secret's
    /// value), so that findings inside it point back at its place.
    pub(crate) fn parse_embedded(
        &mut self,
        name: String,
        text: String,
        embedding: Embedding,
        d: &mut Decoder,
    ) -> Option<Node> {
        let parent = embedding.parent;
        let file = self.sources.add_embedded(name, text, embedding);
        let text = &self.sources.get(file).expect("just added").text;
        match yaml::parse(text, file) {
            Ok(node) if node.is_null() => {
                d.push(
                    Diagnostic::error(Code::InvalidValue, "the embedded NMState is empty")
                        .at(parent),
                );
                None
            }
            Ok(node) => {
                let secrets = secret_spans(&node);
                if !secrets.is_empty() {
                    self.sources.redact(file, &secrets);
                }
                Some(node)
            }
            Err(e) => {
                d.push(Diagnostic::error(Code::YamlSyntax, e.message).at(e.span));
                None
            }
        }
    }

    /// The YAML text of a string value: exact positions when it is a
    /// literal block (`|`), else findings point at the value itself.
    pub(crate) fn parse_string_value(
        &mut self,
        name: String,
        value: &Node,
        d: &mut Decoder,
    ) -> Option<Node> {
        let text = value.as_str()?.to_string();
        let embedding = self.sources.embedding_of(value.span, &text, &name);
        self.parse_embedded(name, text, embedding, d)
    }
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
    use rayon::prelude::*;
    let mut sources = SourceMap::default();
    let mut diagnostics = Vec::new();
    let mut not_text = Vec::new();
    let inputs: Vec<(FileId, bool)> = inputs
        .into_iter()
        .filter_map(|input| {
            let file = sources.add(input.name, input.text);
            match input.not_text {
                Some(n) => {
                    not_text.push((file, n));
                    None
                }
                None => Some((file, input.in_dir)),
            }
        })
        .collect();
    for (file, n) in not_text {
        let text = &sources.get(file).expect("added").text;
        let at = span_of_offset(text, file, n.at.min(text.len()));
        diagnostics.push(Diagnostic::error(n.code, n.what).at(at));
    }
    let (profiles, inputs): (Vec<_>, Vec<_>) = inputs
        .into_iter()
        .partition(|&(file, _)| looks_like_keyfile(&sources.get(file).expect("added").text));
    let mut docs = read_keyfiles(&profiles, keyfiles, &mut sources, &mut diagnostics);
    // Files are parsed in parallel (a directory of 10,000 manifests).
    let parsed: Vec<Result<Vec<Node>, yaml::YamlError>> = inputs
        .par_iter()
        .map(|&(file, _)| yaml::parse_all(&sources.get(file).expect("added").text, file))
        .collect();
    for ((file, in_dir), parsed) in inputs.into_iter().zip(parsed) {
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
            for root in items {
                docs.push(Document {
                    root,
                    file,
                    stem: stem.clone(),
                    index,
                    in_dir,
                });
            }
        }
    }
    let shapes: Vec<Shape> = docs
        .iter()
        .map(|doc| shape(&doc.root, sources.name(doc.file)))
        .collect();
    // Files in which some document is read: the others in them are
    // objects nodenet has no business with, not mistakes.
    let read: std::collections::HashSet<FileId> = docs
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
    let meta_field = |root: &Node, k: &str| {
        root.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Node::scalar_text)
            .unwrap_or_default()
    };
    let objects = Referenced {
        by_name: referenced_docs
            .iter()
            .filter_map(|(doc, shape)| match shape {
                Shape::Referenced(kind) => Some((
                    (
                        *kind,
                        meta_field(&doc.root, "namespace"),
                        meta_field(&doc.root, "name"),
                    ),
                    &doc.root,
                )),
                _ => None,
            })
            .collect(),
    };
    let host_nics: HashMap<(String, String), Vec<(String, String)>> = docs
        .iter()
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
            (
                (
                    meta_field(&doc.root, "namespace"),
                    meta_field(&doc.root, "name"),
                ),
                nics,
            )
        })
        .collect();
    let mut parts = Vec::new();
    // Documents of directories that nodenet does not read, by kind.
    let mut unread: std::collections::BTreeMap<String, usize> = Default::default();
    let mut ctx = Context {
        sources: &mut sources,
        objects: &objects,
        host_nics: &host_nics,
        allocated: Default::default(),
    };
    let mut sites: Vec<Inventory> = Vec::new();
    let mut running = Vec::new();
    for (doc, shape) in docs.iter_mut() {
        match shape {
            Shape::Input(kind)
                if kind.is_site()
                    || *kind == InputKind::Inventory && doc.root.get("sites").is_some() =>
            {
                let clusters = match kind {
                    InputKind::SiteConfig => ztp::load_site_config(&doc.root, &mut diagnostics),
                    InputKind::Inventory => native_fleet::load(&doc.root, &mut diagnostics),
                    _ => ztp::load_cluster_instance(&doc.root, &mut diagnostics),
                };
                for mut site in clusters {
                    for host in &mut site.hosts {
                        add_nics_from_network(host);
                    }
                    sites.push(site);
                }
            }
            Shape::Input(kind) => {
                let mut part = load_document(*kind, doc, &mut ctx, &mut diagnostics);
                part.kind = Some(*kind);
                for host in &mut part.hosts {
                    add_nics_from_network(host);
                }
                parts.push(part);
            }
            Shape::Referenced(_) => {}
            Shape::Running => {
                running.extend(node_network_state::load(&doc.root, &mut diagnostics));
            }
            Shape::OtherObject(kind) if !doc.in_dir && !read.contains(&doc.file) => {
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
                    *unread.entry(kind.clone()).or_default() += 1;
                }
            }
            // A render's own manifest.json, read back with its directory.
            Shape::Unknown
                if doc.in_dir
                    && doc.root.get("files").is_some()
                    && ctx.sources.name(doc.file).ends_with("manifest.json") => {}
            // A config drive's other files beside its network_data.json.
            Shape::Unknown
                if doc.in_dir && {
                    let name = ctx.sources.name(doc.file);
                    name.contains("/openstack/")
                        && ["meta_data.json", "vendor_data.json", "vendor_data2.json"]
                            .iter()
                            .any(|f| name.ends_with(f))
                } => {}
            Shape::Unknown if doc.in_dir => {
                *unread.entry("not Kubernetes".to_string()).or_default() += 1;
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
    // A directory of nothing nodenet reads must not pass as checked.
    let referenced_read = !referenced_docs.is_empty() || !running.is_empty();
    if parts.is_empty() && sites.is_empty() && !referenced_read && !unread.is_empty() {
        let named: Vec<String> = unread.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        diagnostics.push(
            Diagnostic::error(
                Code::UnknownFormat,
                format!(
                    "nothing in the inputs is something nodenet reads ({}): no host was checked",
                    named.join(", ")
                ),
            )
            .help(READS),
        );
    }
    let something_read = !(parts.is_empty() && sites.is_empty());
    if !unread.is_empty() && something_read {
        // A directory of manifests (a ZTP repository's kustomizations and
        // extra manifests) holds more than host networking: what was
        // skipped is said once, not per file.
        let named: Vec<String> = unread.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        diagnostics.push(Diagnostic::warning(
            Code::UnknownFormat,
            format!(
                "skipped {} document(s) of kinds nodenet does not read: {}",
                unread.values().sum::<usize>(),
                named.join(", ")
            ),
        ));
    }
    let one_site = parts.is_empty() && sites.len() == 1;
    let (inventory, fleet) = if one_site {
        (sites.pop().expect("one"), Vec::new())
    } else {
        (merge::merge(parts, &sources, &mut diagnostics), sites)
    };
    Loaded {
        sources,
        inventory,
        fleet,
        running,
        diagnostics,
    }
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

fn load_document(
    kind: InputKind,
    doc: &mut Document,
    ctx: &mut Context,
    diags: &mut Vec<Diagnostic>,
) -> Inventory {
    match kind {
        InputKind::InstallConfig => return install_config::load(&mut doc.root, diags),
        InputKind::AgentConfig => return agent_config::load(&mut doc.root, diags),
        InputKind::NodesConfig => return nodes_config::load(&doc.root, diags),
        _ => {}
    }
    let root = &doc.root;
    match kind {
        InputKind::Inventory => native::load(root, diags),
        InputKind::InstallConfig | InputKind::AgentConfig | InputKind::NodesConfig => {
            unreachable!("loaded above")
        }
        InputKind::NmState => {
            // `<host>/nmstate.yml` (as render writes it) is that host's.
            let stem = if doc.stem == "nmstate" {
                parent_dir_name(ctx.sources.name(doc.file)).unwrap_or_else(|| doc.stem.clone())
            } else {
                doc.stem.clone()
            };
            // Several states in one file: the second is `<stem>-2`, ...
            let name = match doc.index {
                0 => stem,
                i => format!("{stem}-{}", i + 1),
            };
            nmstate::load(root, doc.file, crate::names::host_name_from_file(&name))
        }
        InputKind::MachineConfig => machine_config::load(root, ctx, diags),
        InputKind::Nncp => nncp::load(root, diags),
        InputKind::NmStateConfig => agent_manifests::load_nmstate_config(root, diags),
        InputKind::AgentClusterInstall => agent_manifests::load_cluster_install(root, diags),
        InputKind::MachineConfiguration => machine_configuration::load(root, diags),
        InputKind::NetworkData => {
            // `<host>/network_data.json` (as render writes it) and
            // `<host>/openstack/latest/network_data.json` (a config drive's
            // tree) are that host's.
            let path = ctx.sources.name(doc.file);
            let name = if doc.stem != "network_data" {
                doc.stem.clone()
            } else if let Some(host) = meta_data_hostname(path) {
                host
            } else {
                // Its directory (`out/<host>/network_data.json`, several
                // given at once), made a valid name: never a finding.
                config_drive_host(path).unwrap_or_default()
            };
            network_data::load(root, crate::names::host_name_from_file(&name), diags)
        }
        InputKind::BareMetalHost => baremetal_host::load(root, ctx, diags),
        InputKind::Metal3DataTemplate => metal3_data_template::load(root, ctx, diags),
        // `netplan/<host>.yaml` (as render writes it) is that host's.
        InputKind::Netplan => {
            netplan::load(root, crate::names::host_name_from_file(&doc.stem), diags)
        }
        InputKind::ClusterInstance | InputKind::SiteConfig => {
            unreachable!("sites are loaded as clusters of their own")
        }
    }
}

/// What a document is, from its content (and, for agent-config written
/// without `kind:`, as openshift-install reads it by role, its file name).
fn shape(root: &Node, file_name: &str) -> Shape {
    let has = |k: &str| root.get(k).is_some();
    let kind = root.get("kind").and_then(Node::as_str);
    let api = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    let group = api.split_once('/').map(|(g, _)| g).unwrap_or("");
    let base = Path::new(file_name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match kind {
        _ if has("nodenet") => Shape::Input(InputKind::Inventory),
        Some("AgentConfig") => Shape::Input(InputKind::AgentConfig),
        Some("InstallConfig") => Shape::Input(InputKind::InstallConfig),
        Some("MachineConfig")
            if machine_config::writes_nmstate(root) || machine_config::has_units(root) =>
        {
            Shape::Input(InputKind::MachineConfig)
        }
        Some("MachineConfiguration") if group == "operator.openshift.io" => {
            Shape::Input(InputKind::MachineConfiguration)
        }
        Some("NodeNetworkConfigurationPolicy") => Shape::Input(InputKind::Nncp),
        k if node_network_state::is_node_network_state(k, group) => Shape::Running,
        Some("NMStateConfig") => Shape::Input(InputKind::NmStateConfig),
        Some("AgentClusterInstall") => Shape::Input(InputKind::AgentClusterInstall),
        Some("BareMetalHost") => Shape::Input(InputKind::BareMetalHost),
        Some(k) if ztp::kind_of(k, group).is_some() => {
            Shape::Input(ztp::kind_of(k, group).expect("matched"))
        }
        Some("Secret") if group.is_empty() => Shape::Referenced("Secret"),
        Some("IPPool") if group == "ipam.metal3.io" => Shape::Referenced("IPPool"),
        Some("Metal3DataTemplate") if group == "infrastructure.cluster.x-k8s.io" => {
            Shape::Input(InputKind::Metal3DataTemplate)
        }
        Some(other) => Shape::OtherObject(other.to_string()),
        None if has("platform") || (has("baseDomain") && has("metadata")) => {
            Shape::Input(InputKind::InstallConfig)
        }
        // openshift-install reads agent-config.yaml by its role; v1alpha1
        // files have no `kind:` line.
        None if agent_config::looks_like(root, &base) => Shape::Input(InputKind::AgentConfig),
        None if nodes_config::looks_like(root, &base) => Shape::Input(InputKind::NodesConfig),
        // A config drive's metadata (`hostname:` and all) is no NMState.
        None if base == "meta_data.json" => Shape::Unknown,
        None if netplan::looks_like(root) => Shape::Input(InputKind::Netplan),
        None if nmstate::looks_like(root) => Shape::Input(InputKind::NmState),
        None if network_data::looks_like(root) => Shape::Input(InputKind::NetworkData),
        None if has("hosts") && (has("cluster") || has("templates")) => {
            Shape::Input(InputKind::Inventory)
        }
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

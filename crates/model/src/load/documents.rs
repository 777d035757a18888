//! The inputs' YAML documents: parsed (in parallel), each told by its
//! content (or its name) and read by its format's loader.

use rayon::prelude::*;

use super::*;

/// One YAML document of an input.
pub(super) struct Document {
    pub(super) root: Node,
    pub(super) file: FileId,
    /// The file's name without directory and extension (a bare NMState
    /// file's host is named after it).
    pub(super) stem: String,
    /// Position in its file (0 for the first document).
    pub(super) index: usize,
    pub(super) in_dir: bool,
}

/// What a document is.
#[derive(Debug, PartialEq)]
pub(super) enum Shape {
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

/// The objects of a `kind: List`, moved out of it (10,000
/// NodeNetworkStates are 12 MB of tree: no copy).
fn list_items(root: Node) -> Vec<Node> {
    let yaml::Value::Map(entries) = root.value else {
        return Vec::new();
    };
    entries
        .into_iter()
        .find(|(k, _)| k.as_str() == Some("items"))
        .and_then(|(_, v)| match v.value {
            yaml::Value::Seq(items) => Some(items),
            _ => None,
        })
        .unwrap_or_default()
}

/// Every YAML (or JSON) document of the files, parsed in parallel (a
/// directory of 10,000 manifests); a `kind: List` gives its items.
pub(super) fn parse_documents(
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
            let list = match root.get("kind").and_then(Node::as_str) {
                Some(k) => k == "List" || k.ends_with("List") && root.get("items").is_some(),
                None => false,
            };
            let items = if list { list_items(root) } else { vec![root] };
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

pub(super) fn meta_field(root: &Node, key: &str) -> String {
    root.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Node::scalar_text)
        .unwrap_or_default()
}

/// The NICs inspection found on each BareMetalHost among the inputs
/// (`status.hardware.nics`: name, MAC), by namespace and name.
pub(super) fn inspected_nics(
    docs: &[(Document, Shape)],
) -> HashMap<(String, String), Vec<(String, String)>> {
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
pub(super) struct Read {
    /// Parts of the one cluster the inputs describe together.
    pub(super) parts: Vec<Inventory>,
    /// Clusters of their own (ZTP sites, a native fleet's).
    pub(super) sites: Vec<Inventory>,
    /// What nodes report they run (NodeNetworkStates).
    pub(super) running: Vec<node_network_state::RunningNode>,
    /// Documents of directories that nodenet does not read, by kind.
    pub(super) unread: std::collections::BTreeMap<String, usize>,
}

impl Read {
    pub(super) fn document(
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
                    // On every core: 10,000 hosts' states are read.
                    part.hosts.par_iter_mut().for_each(add_nics_from_network);
                    self.parts.push(part);
                }
                format::Loads::Sites(clusters) => {
                    for mut site in clusters {
                        site.hosts.iter_mut().for_each(add_nics_from_network);
                        self.sites.push(site);
                    }
                }
            },
            // NodeNetworkStates are loaded before, on every core
            // (`load_inputs`).
            Shape::Referenced(_) | Shape::Running => {}
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
    pub(super) fn unread_findings(&self, referenced_read: bool) -> Option<Diagnostic> {
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
pub(super) fn read_beside(name: &str, root: &Node) -> bool {
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
pub(super) fn read_keyfiles(
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
pub(super) const RENDERED_BESIDE: &[&str] = &["MachineOSConfig", "MachineConfigPool"];

pub(super) const READS: &str = "nodenet reads: an inventory (`nodenet: v1`), install-config.yaml (`platform:`), agent-config.yaml, NMState (`interfaces:`, `routes:`, `dns-resolver:`, `hostname:` ...), the MachineConfig, NodeNetworkConfigurationPolicy, NMStateConfig, AgentClusterInstall, BareMetalHost and Secret manifests that carry host networking, GitOps ZTP SiteConfigs and ClusterInstances, OpenStack network_data.json, Cluster API Metal3DataTemplates with their IPPools, netplan YAML, and `oc adm node-image create`'s nodes-config.yaml";

/// What a document is: an input format's (the first of [`format::FORMATS`]
/// that detects it), or an object nodenet reads only where another names
/// it, or what nodes report, or something else.
pub(super) fn shape(root: &Node, file_name: &str) -> Shape {
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

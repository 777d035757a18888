//! Every input format nodenet reads, in one table ([`FORMATS`]): how a
//! document of it is told by its content, which host it describes when it
//! names none, and how it is loaded. Each format's reading rules live in
//! its own file (`install_config.rs`, `nncp.rs`, ...); this file only
//! registers them, in the order detection tries them.

use std::path::Path;

use super::{
    agent_config, agent_manifests, baremetal_host, config_drive_host, install_config,
    inventory_resource, machine_config, machine_configuration, meta_data_hostname,
    metal3_data_template, native, native_fleet, netplan, network_data, nmstate, nncp, nodes_config,
    parent_dir_name, ztp, Context, Document,
};
use crate::diag::Diagnostic;
use crate::inventory::{InputKind, Inventory};
use crate::yaml::Node;

/// What a document loads into: a part of the one cluster the inputs
/// describe together, or clusters of their own (ZTP sites, a fleet).
pub(crate) enum Loads {
    Part(Box<Inventory>),
    Sites(Vec<Inventory>),
}

/// What detection looks at: the document, its `kind:` and API group,
/// and its file's base name (agent-config.yaml written without `kind:` is
/// known by its name, as openshift-install knows it).
pub(crate) struct Probe<'a> {
    pub root: &'a Node,
    pub kind: Option<&'a str>,
    pub group: &'a str,
    pub base: String,
}

impl<'a> Probe<'a> {
    pub fn new(root: &'a Node, file_name: &str) -> Probe<'a> {
        let api = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
        Probe {
            root,
            kind: root.get("kind").and_then(Node::as_str),
            group: api.split_once('/').map(|(g, _)| g).unwrap_or(""),
            base: Path::new(file_name)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.root.get(key).is_some()
    }

    /// A Kubernetes object of this kind.
    fn is(&self, kind: &str) -> bool {
        self.kind == Some(kind)
    }

    /// A file without `kind:` that holds network data, which a config
    /// drive's metadata (`hostname:` and all) beside it does not.
    fn kindless_data(&self) -> bool {
        self.kind.is_none() && self.base != "meta_data.json"
    }
}

/// One input format.
pub(crate) trait Format: Sync {
    fn kind(&self) -> InputKind;
    /// Whether the document is of this format, from its content (and, for
    /// files that carry no `kind:`, their name).
    fn detect(&self, p: &Probe) -> bool;
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads;
}

/// The formats in the order detection tries them: the first that
/// detects a document reads it. Kubernetes objects are told by `kind:`
/// (and group); files without `kind:` by their keys, most specific first.
pub(crate) static FORMATS: &[&dyn Format] = &[
    &NodenetInventory,
    &InventoryResource,
    &InstallConfig,
    &AgentConfig,
    &MachineConfig,
    &MachineConfiguration,
    &Nncp,
    &NmStateConfig,
    &AgentClusterInstall,
    &BareMetalHost,
    &SiteConfig,
    &ClusterInstance,
    &Metal3DataTemplate,
    &NodesConfig,
    &Netplan,
    &NmState,
    &NetworkData,
    &UnversionedInventory,
];

/// The format that reads a document, if any does.
pub(crate) fn detect(p: &Probe) -> Option<&'static dyn Format> {
    FORMATS.iter().copied().find(|f| f.detect(p))
}

/// The format of a kind (its first entry: an inventory with or without
/// `nodenet:` loads alike).
pub(crate) fn of_kind(kind: InputKind) -> &'static dyn Format {
    FORMATS
        .iter()
        .copied()
        .find(|f| f.kind() == kind)
        .expect("every kind is registered")
}

fn part(inv: Inventory) -> Loads {
    Loads::Part(Box::new(inv))
}

struct NodenetInventory;
impl Format for NodenetInventory {
    fn kind(&self) -> InputKind {
        InputKind::Inventory
    }
    fn detect(&self, p: &Probe) -> bool {
        p.has("nodenet")
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        // Documents are loaded by their kind's first format (this one).
        if inventory_resource::is_resource(&doc.root) {
            return InventoryResource.load(doc, ctx, diags);
        }
        // `sites:` makes it a fleet of clusters.
        if doc.root.get("sites").is_some() {
            Loads::Sites(native_fleet::load(&doc.root, diags))
        } else {
            part(native::load(&doc.root, diags))
        }
    }
}

/// nodenet's `Inventory` resource (a GitOps engine's config): the
/// inventory inside it, read with its lines. One naming its files is read
/// by name (`nodenet manifests`, the generator, the function), which
/// reads those files instead.
struct InventoryResource;
impl Format for InventoryResource {
    fn kind(&self) -> InputKind {
        InputKind::Inventory
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is(inventory_resource::KIND) && p.group == inventory_resource::API_GROUP
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        let Some(resource) = inventory_resource::read(&doc.root, diags) else {
            return part(Inventory::default());
        };
        let Some(inner) = resource.inventory else {
            diags.push(
                Diagnostic::error(
                    crate::diag::Code::InvalidValue,
                    "this Inventory names its files (`spec.files`): give it by name (nodenet manifests FILE, the kustomize generator, the KRM function) rather than in a directory, or give those files",
                )
                .at(resource.files[0].span),
            );
            return part(Inventory::default());
        };
        let mut inner = Document {
            root: inner.clone(),
            file: doc.file,
            stem: doc.stem.clone(),
            index: doc.index,
            in_dir: doc.in_dir,
        };
        NodenetInventory.load(&mut inner, ctx, diags)
    }
}

/// An inventory written without `nodenet: v1`: read as one, last, and
/// told what it lacks.
struct UnversionedInventory;
impl Format for UnversionedInventory {
    fn kind(&self) -> InputKind {
        InputKind::Inventory
    }
    fn detect(&self, p: &Probe) -> bool {
        p.kindless_data() && p.has("hosts") && (p.has("cluster") || p.has("templates"))
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        NodenetInventory.load(doc, ctx, diags)
    }
}

struct InstallConfig;
impl Format for InstallConfig {
    fn kind(&self) -> InputKind {
        InputKind::InstallConfig
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("InstallConfig")
            || p.kind.is_none() && (p.has("platform") || p.has("baseDomain") && p.has("metadata"))
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(install_config::load(&mut doc.root, diags))
    }
}

struct AgentConfig;
impl Format for AgentConfig {
    fn kind(&self) -> InputKind {
        InputKind::AgentConfig
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("AgentConfig") || p.kind.is_none() && agent_config::looks_like(p.root, &p.base)
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(agent_config::load(&mut doc.root, diags))
    }
}

/// A MachineConfig that writes NMState or the units that apply it; any
/// other MachineConfig carries no host networking.
struct MachineConfig;
impl Format for MachineConfig {
    fn kind(&self) -> InputKind {
        InputKind::MachineConfig
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("MachineConfig")
            && (machine_config::writes_nmstate(p.root) || machine_config::has_units(p.root))
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(machine_config::load(&doc.root, ctx, diags))
    }
}

struct MachineConfiguration;
impl Format for MachineConfiguration {
    fn kind(&self) -> InputKind {
        InputKind::MachineConfiguration
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("MachineConfiguration") && p.group == "operator.openshift.io"
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(machine_configuration::load(&doc.root, diags))
    }
}

struct Nncp;
impl Format for Nncp {
    fn kind(&self) -> InputKind {
        InputKind::Nncp
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("NodeNetworkConfigurationPolicy")
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(nncp::load(&doc.root, diags))
    }
}

struct NmStateConfig;
impl Format for NmStateConfig {
    fn kind(&self) -> InputKind {
        InputKind::NmStateConfig
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("NMStateConfig")
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(agent_manifests::load_nmstate_config(&doc.root, diags))
    }
}

struct AgentClusterInstall;
impl Format for AgentClusterInstall {
    fn kind(&self) -> InputKind {
        InputKind::AgentClusterInstall
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("AgentClusterInstall")
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(agent_manifests::load_cluster_install(&doc.root, diags))
    }
}

struct BareMetalHost;
impl Format for BareMetalHost {
    fn kind(&self) -> InputKind {
        InputKind::BareMetalHost
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("BareMetalHost")
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(baremetal_host::load(&doc.root, ctx, diags))
    }
}

struct SiteConfig;
impl Format for SiteConfig {
    fn kind(&self) -> InputKind {
        InputKind::SiteConfig
    }
    fn detect(&self, p: &Probe) -> bool {
        p.kind
            .is_some_and(|k| ztp::kind_of(k, p.group) == Some(InputKind::SiteConfig))
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        Loads::Sites(ztp::load_site_config(&doc.root, diags))
    }
}

struct ClusterInstance;
impl Format for ClusterInstance {
    fn kind(&self) -> InputKind {
        InputKind::ClusterInstance
    }
    fn detect(&self, p: &Probe) -> bool {
        p.kind
            .is_some_and(|k| ztp::kind_of(k, p.group) == Some(InputKind::ClusterInstance))
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        Loads::Sites(ztp::load_cluster_instance(&doc.root, diags))
    }
}

struct Metal3DataTemplate;
impl Format for Metal3DataTemplate {
    fn kind(&self) -> InputKind {
        InputKind::Metal3DataTemplate
    }
    fn detect(&self, p: &Probe) -> bool {
        p.is("Metal3DataTemplate") && p.group == "infrastructure.cluster.x-k8s.io"
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(metal3_data_template::load(&doc.root, ctx, diags))
    }
}

struct NodesConfig;
impl Format for NodesConfig {
    fn kind(&self) -> InputKind {
        InputKind::NodesConfig
    }
    fn detect(&self, p: &Probe) -> bool {
        p.kind.is_none() && nodes_config::looks_like(p.root, &p.base)
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        part(nodes_config::load(&doc.root, diags))
    }
}

/// `netplan/<host>.yaml` (as render writes it) is that host's.
struct Netplan;
impl Format for Netplan {
    fn kind(&self) -> InputKind {
        InputKind::Netplan
    }
    fn detect(&self, p: &Probe) -> bool {
        p.kindless_data() && netplan::looks_like(p.root)
    }
    fn load(&self, doc: &mut Document, _: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        let name = crate::names::host_name_from_file(&doc.stem);
        part(netplan::load(&doc.root, name, diags))
    }
}

/// A bare state is the host its file is named after: `<host>/nmstate.yml`
/// (as render writes it) that directory's; several states in one file
/// are `<stem>`, `<stem>-2`, ...
struct NmState;
impl Format for NmState {
    fn kind(&self) -> InputKind {
        InputKind::NmState
    }
    fn detect(&self, p: &Probe) -> bool {
        p.kindless_data() && nmstate::looks_like(p.root)
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, _: &mut Vec<Diagnostic>) -> Loads {
        let stem = if doc.stem == "nmstate" {
            parent_dir_name(ctx.sources.name(doc.file)).unwrap_or_else(|| doc.stem.clone())
        } else {
            doc.stem.clone()
        };
        let name = match doc.index {
            0 => stem,
            i => format!("{stem}-{}", i + 1),
        };
        let name = crate::names::host_name_from_file(&name);
        part(nmstate::load(&doc.root, doc.file, name))
    }
}

/// OpenStack network_data.json: the host its file is named after, else
/// the one its config drive's meta_data.json names, else its directory
/// (`out/<host>/network_data.json`), made a valid name (never a finding).
struct NetworkData;
impl Format for NetworkData {
    fn kind(&self) -> InputKind {
        InputKind::NetworkData
    }
    fn detect(&self, p: &Probe) -> bool {
        p.kindless_data() && network_data::looks_like(p.root)
    }
    fn load(&self, doc: &mut Document, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Loads {
        let path = ctx.sources.name(doc.file);
        let name = if doc.stem != "network_data" {
            doc.stem.clone()
        } else if let Some(host) = meta_data_hostname(path) {
            host
        } else {
            config_drive_host(path).unwrap_or_default()
        };
        let name = crate::names::host_name_from_file(&name);
        part(network_data::load(&doc.root, name, diags))
    }
}

#[cfg(test)]
mod tests;

//! The MachineConfigs that carry host networking to OpenShift nodes, and
//! the pools they go to.
//!
//! Two kinds of node file, each with one applier:
//!
//! - `/etc/nmstate/openshift/<host>.yml`, OpenShift's "br-ex by NMState"
//!   path, applied at boot by RHCOS's nmstate-configuration.service and
//!   nmstate.service: written only for hosts whose state defines br-ex
//!   (their own, or one nodenet derives: see `nodenet_check::br_ex`);
//! - `/etc/nodenet/nmstate/<host>.yml`, nodenet's own day-2 states,
//!   applied by `nodenet-apply.service`: written with `cluster.nodeAgent`.
//!
//! File contents are gzip-compressed (Ignition `compression: gzip`, which
//! the MCO decodes since 4.10). Every object stays under 1 MiB (etcd takes
//! 1.5 MiB), and so do a pool's MachineConfigs together (the MCO merges
//! them into one rendered MachineConfig, beside its own ~150 KB): a role
//! whose files do not fit is split into custom MachineConfigPools, by
//! failure domain when every host names one, else by count.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{json, Value as J};

use nodenet_check::br_ex::{self, NODENET_DIR, OPENSHIFT_DIR};
use nodenet_model::{short_hostname, Code, Diagnostic, Host, Inventory, Role};

use crate::artifacts::{dns_label, kube, yaml, Envelope};
use crate::output::OutFile;
use crate::shaped::HostShapes;

/// The most one rendered object may take, and a pool's MachineConfigs
/// together (etcd refuses requests over 1.5 MiB; the rendered
/// MachineConfig also holds the MCO's own templates).
pub const OBJECT_LIMIT: usize = 1 << 20;

/// What a pool's own MachineConfigs take besides the host files: two
/// MachineConfig envelopes and the agent's unit.
const POOL_OVERHEAD: usize = 8 * 1024;

/// The node files of one host, as YAML text.
#[derive(Clone, Debug, Default)]
pub struct NodeStates {
    /// `/etc/nmstate/openshift/<host>.yml`: the whole state with br-ex.
    pub openshift: Option<String>,
    /// `/etc/nodenet/nmstate/<host>.yml`: what nodenet-apply applies.
    pub nodenet: Option<String>,
}

/// Every whole host's node files, made once per shape of hosts.
pub fn node_states(inv: &Inventory, shapes: &HostShapes) -> Vec<NodeStates> {
    let agent = inv.cluster.node_agent.is_some();
    let made = shapes.make(inv.hosts.len(), &|i| {
        let h = &inv.hosts[i];
        let Ok(plan) = br_ex::plan(h, &inv.cluster) else {
            return [None, None];
        };
        [
            br_ex::openshift_state(h, &plan).map(|s| yaml(&s)),
            agent
                .then(|| br_ex::day2_state(h, &inv.cluster, &plan))
                .flatten()
                .map(|s| yaml(&s)),
        ]
    });
    made.into_iter()
        .map(|[openshift, nodenet]| NodeStates { openshift, nodenet })
        .collect()
}

/// Which nodes a custom pool takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Selector {
    /// Nodes with the failure-domain label `key=value`.
    Domain { key: String, value: String },
    /// Nodes by name (`kubernetes.io/hostname`).
    Names(Vec<String>),
}

/// A MachineConfigPool the node files go to.
#[derive(Clone, Debug)]
pub struct Pool {
    pub name: String,
    /// The role its nodes have (`master`, `worker`, `arbiter`).
    pub role: &'static str,
    /// `None`: the role's own pool; else a custom pool of that role.
    pub custom: Option<Selector>,
    /// Indices into the inventory's hosts.
    pub hosts: Vec<usize>,
}

/// An Ignition file entry as a JSON value: the text gzip-compressed in a
/// `data:` URL. What [`Entry`] is held to; render writes entries as text.
#[cfg(test)]
fn file_entry(path: &str, text: &str) -> J {
    entry_json(path, data_url(text))
}

fn data_url(text: &str) -> String {
    format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(gzip(text.as_bytes()))
    )
}

fn entry_json(path: &str, source: String) -> J {
    json!({
        "path": path,
        "mode": 0o644,
        "overwrite": true,
        "contents": {"source": source, "compression": "gzip"},
    })
}

/// An Ignition file entry (the text gzip-compressed in a `data:` URL) as
/// its MachineConfig's file list holds it: its YAML, written here (20,000
/// entries at 10,000 hosts were each built as a JSON value, emitted and
/// freed), and what it adds to the object.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The entry as a list of its own, at column 0: what the emitter
    /// writes for `[file_entry(path, text)]`.
    yaml: String,
    /// Its data URL, path and keys, indented in the file list.
    size: usize,
}

impl Entry {
    pub fn new(path: &str, text: &str) -> Entry {
        let source = data_url(text);
        let size = source.len() + path.len() + 160;
        let mut item = String::with_capacity(source.len() + path.len() + 96);
        let written = (|| {
            item.push_str("- path: ");
            crate::yaml_out::string(path, &mut item)?;
            item.push_str("\n  mode: 420\n  overwrite: true\n  contents:\n    source: ");
            crate::yaml_out::string(&source, &mut item)?;
            item.push_str("\n    compression: gzip\n");
            Some(())
        })();
        if written.is_none() {
            // A path the fast emitter is unsure of: the emitter decides.
            item = yaml(&J::Array(vec![entry_json(path, source)]));
        }
        Entry { yaml: item, size }
    }
}

/// `bytes` as `flate2::GzBuilder` writes them at `Compression::best()`
/// (no name, no time, `XFL` 2, OS unknown), through one compressor per
/// thread: a new one allocates and clears its tables (~300 KiB) for
/// every file (83 µs against 15 µs reused, for a 620-byte nmstate.yml),
/// and there are 30,000 files at 10,000 hosts, in `check` and `render`.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress, Status};
    thread_local! {
        static DEFLATE: std::cell::RefCell<Compress> =
            std::cell::RefCell::new(Compress::new(Compression::best(), false));
    }
    let mut out = Vec::with_capacity(bytes.len() / 2 + 64);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
    DEFLATE.with_borrow_mut(|deflate| {
        deflate.reset();
        let mut input = bytes;
        loop {
            out.reserve(input.len() / 2 + 64);
            let before = deflate.total_in();
            let status = deflate
                .compress_vec(input, &mut out, FlushCompress::Finish)
                .expect("deflate into memory");
            input = &input[(deflate.total_in() - before) as usize..];
            if status == Status::StreamEnd {
                break;
            }
        }
    });
    let mut crc = Crc::new();
    crc.update(bytes);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out
}

/// A MachineConfig for `role` (a pool name) carrying `config` (Ignition).
pub fn machine_config(name: &str, role: &str, config: J, os_image_url: Option<&str>) -> J {
    let labels = BTreeMap::from([(
        "machineconfiguration.openshift.io/role".to_string(),
        role.to_string(),
    )]);
    let mut doc = kube::Object {
        api_version: "machineconfiguration.openshift.io/v1",
        kind: "MachineConfig",
        metadata: kube::Metadata {
            name,
            namespace: None,
            labels: Some(&labels),
        },
        body: kube::SpecBody {
            spec: kube::MachineConfigSpec {
                os_image_url,
                config: J::Null,
            },
        },
    }
    .to_json();
    // Moved in after: serialising it with the envelope would copy it.
    doc["spec"]["config"] = config;
    doc
}

/// One host's Ignition file entries, one MachineConfig kind each.
#[derive(Clone, Debug, Default)]
pub struct HostEntries {
    /// `/etc/nmstate/openshift/<host>.yml`.
    pub br_ex: Option<Entry>,
    /// `/etc/nodenet/nmstate/<host>.yml`.
    pub nodenet: Option<Entry>,
    /// `/etc/systemd/network/*.link` pinning its NIC names: a pool's
    /// MachineConfig carries every host's, each matching one MAC.
    pub links: Vec<Entry>,
}

impl HostEntries {
    fn all(&self) -> impl Iterator<Item = &Entry> {
        self.br_ex.iter().chain(&self.nodenet).chain(&self.links)
    }
}

/// The MachineConfig kinds, in the order they are written.
const KINDS: [&str; 3] = ["br-ex", "nmstate", "nic-names"];

fn host_entries(host: &Host, cluster: &nodenet_model::Cluster, states: &NodeStates) -> HostEntries {
    let short = short_hostname(&host.name.value);
    HostEntries {
        br_ex: states
            .openshift
            .as_ref()
            .map(|t| Entry::new(&format!("{OPENSHIFT_DIR}/{short}.yml"), t)),
        nodenet: states
            .nodenet
            .as_ref()
            .map(|t| Entry::new(&format!("{NODENET_DIR}/{short}.yml"), t)),
        links: crate::artifacts::pinned_names(host, cluster)
            .iter()
            .map(|l| {
                Entry::new(
                    &format!("/{}/{}", nodenet_model::nic_binding::LINK_DIR, l.file_name),
                    &l.text,
                )
            })
            .collect(),
    }
}

/// The pools and what was decided, for check and render alike.
pub struct Layout {
    pub pools: Vec<Pool>,
    /// Per host (inventory order): its file entries.
    pub entries: Vec<HostEntries>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Lays the hosts' node files out in pools that fit.
pub fn layout(inv: &Inventory, states: &[NodeStates]) -> Layout {
    use rayon::prelude::*;
    let (entries, sizes): (Vec<HostEntries>, Vec<usize>) = inv
        .hosts
        .par_iter()
        .zip(states)
        .map(|(h, s)| {
            let e = host_entries(h, &inv.cluster, s);
            let size: usize = e.all().map(|e| e.size).sum();
            (e, size)
        })
        .unzip();
    let mut by_role: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
    for (i, h) in inv.hosts.iter().enumerate() {
        if sizes[i] > 0 {
            by_role.entry(h.role.value.pool()).or_default().push(i);
        }
    }
    let mut pools = Vec::new();
    let mut diagnostics = Vec::new();
    let mib = |n: usize| format!("{:.2} MiB", n as f64 / (1 << 20) as f64);
    for (role, hosts) in by_role {
        let total: usize = POOL_OVERHEAD + hosts.iter().map(|&i| sizes[i]).sum::<usize>();
        if total <= OBJECT_LIMIT {
            pools.push(Pool {
                name: role.to_string(),
                role,
                custom: None,
                hosts,
            });
            continue;
        }
        if role != Role::Worker.as_str() {
            diagnostics.push(
                Diagnostic::error(
                    Code::ObjectTooLarge,
                    format!(
                        "the {role} pool's MachineConfigs would take {} together ({} hosts' network files), past the {} a pool's rendered MachineConfig may hold in etcd; custom pools cannot take {role} nodes",
                        mib(total),
                        hosts.len(),
                        mib(OBJECT_LIMIT)
                    ),
                )
                .at_opt(inv.cluster.hosts_span.or(inv.cluster.span))
                .help("shorten the states (one `cluster.yml`-style state for hosts that share it), or give fewer hosts this role"),
            );
            continue;
        }
        let split = split_workers(inv, &hosts, &sizes);
        let how = match split.first().and_then(|p| p.custom.as_ref()) {
            Some(Selector::Domain { key, .. }) => format!(
                "one per value of the failure-domain label `{key}` (a node joins its pool by that label, which it must carry)"
            ),
            _ => "by count, each selecting its nodes by `kubernetes.io/hostname`".to_string(),
        };
        diagnostics.push(
            Diagnostic::warning(
                Code::PoolSplit,
                format!(
                    "the worker pool's MachineConfigs would take {} together ({} hosts), past {}: rendered as {} custom MachineConfigPools ({}), {how}",
                    mib(total),
                    hosts.len(),
                    mib(OBJECT_LIMIT),
                    split.len(),
                    split.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            )
            .at_opt(
                inv.cluster
                    .failure_domain
                    .as_ref()
                    .map(|f| f.span)
                    .or(inv.cluster.hosts_span)
                    .or(inv.cluster.span),
            )
            .help("apply openshift/machineconfigpool-*.yaml with the MachineConfigs; custom pools inherit the worker pool's MachineConfigs, so the worker role keeps only the unit"),
        );
        pools.extend(split);
    }
    Layout {
        pools,
        entries,
        diagnostics,
    }
}

/// Workers in custom pools that each fit: by failure domain when every
/// host has the label (a domain too large for one pool is split by
/// count within it), else by count.
fn split_workers(inv: &Inventory, hosts: &[usize], sizes: &[usize]) -> Vec<Pool> {
    let budget = OBJECT_LIMIT - POOL_OVERHEAD;
    let by_count = |prefix: &str, hosts: &[usize], selector: &dyn Fn(&[usize]) -> Selector| {
        let mut out: Vec<Pool> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        let mut used = 0;
        for &i in hosts {
            if used + sizes[i] > budget && !current.is_empty() {
                out.push(Pool {
                    name: String::new(),
                    role: "worker",
                    custom: Some(selector(&current)),
                    hosts: std::mem::take(&mut current),
                });
                used = 0;
            }
            used += sizes[i];
            current.push(i);
        }
        if !current.is_empty() {
            out.push(Pool {
                name: String::new(),
                role: "worker",
                custom: Some(selector(&current)),
                hosts: current,
            });
        }
        let n = out.len();
        for (k, p) in out.iter_mut().enumerate() {
            p.name = if n == 1 {
                prefix.to_string()
            } else {
                format!("{prefix}-{}", k + 1)
            };
        }
        out
    };
    let names = |set: &[usize]| {
        Selector::Names(
            set.iter()
                .map(|&i| inv.hosts[i].node_name(&inv.cluster))
                .collect(),
        )
    };
    let domains: Option<(String, BTreeMap<String, Vec<usize>>)> =
        inv.cluster.failure_domain.as_ref().and_then(|key| {
            let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for &i in hosts {
                groups
                    .entry(inv.hosts[i].labels.get(&key.value)?.clone())
                    .or_default()
                    .push(i);
            }
            Some((key.value.clone(), groups))
        });
    match domains {
        Some((key, groups)) => {
            let mut out = Vec::new();
            for (value, members) in groups {
                let prefix = format!("worker-{}", dns_label(&value));
                let total: usize = members.iter().map(|&i| sizes[i]).sum();
                if total <= budget {
                    out.push(Pool {
                        name: prefix,
                        role: "worker",
                        custom: Some(Selector::Domain {
                            key: key.clone(),
                            value,
                        }),
                        hosts: members,
                    });
                } else {
                    out.extend(by_count(&prefix, &members, &names));
                }
            }
            out
        }
        None => by_count("worker", hosts, &names),
    }
}

/// The pools' MachineConfigs (one per kind of node file and pool) and the
/// custom pools themselves. The hosts' entries are moved out of the
/// layout into their pool's MachineConfigs: they are the whole fleet's
/// node files (14 MB at 10,000 hosts), copied and then freed on one core
/// before.
pub fn files(layout: &mut Layout) -> Vec<OutFile> {
    use rayon::prelude::*;
    let per_pool: Vec<(&Pool, Vec<HostEntries>)> = layout
        .pools
        .iter()
        .map(|pool| {
            let entries = pool
                .hosts
                .iter()
                .map(|&i| std::mem::take(&mut layout.entries[i]))
                .collect();
            (pool, entries)
        })
        .collect();
    // Each pool's on every core.
    let made: Vec<Vec<OutFile>> = per_pool
        .into_par_iter()
        .map(|(pool, entries)| pool_files(pool, entries))
        .collect();
    made.into_iter().flatten().collect()
}

/// A pool's MachineConfigs (one per kind it has files of) and, for a
/// custom pool, the pool.
fn pool_files(pool: &Pool, entries: Vec<HostEntries>) -> Vec<OutFile> {
    let (mut br_ex, mut nodenet, mut links) = (Vec::new(), Vec::new(), Vec::new());
    for e in entries {
        br_ex.extend(e.br_ex);
        nodenet.extend(e.nodenet);
        links.extend(e.links);
    }
    let mut out = Vec::new();
    for (kind, files) in KINDS.into_iter().zip([br_ex, nodenet, links]) {
        if files.is_empty() {
            continue;
        }
        let name = format!("10-nodenet-{kind}-{}", pool.name);
        let config =
            json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [Envelope::mark()]}});
        let envelope = Envelope::of(&machine_config(&name, &pool.name, config, None))
            .expect("a MachineConfig's file list holds the mark");
        out.push(OutFile::new(
            format!("openshift/{name}.yaml"),
            envelope.with_emitted(files.iter().map(|e| e.yaml.as_str())),
            0o644,
        ));
    }
    if let Some(selector) = &pool.custom {
        out.push(machine_config_pool(pool, selector));
    }
    out
}

/// A custom pool: its own MachineConfigs and the worker role's, for the
/// nodes `selector` takes.
fn machine_config_pool(pool: &Pool, selector: &Selector) -> OutFile {
    let role_label = format!("node-role.kubernetes.io/{}", pool.role);
    let node_selector = match selector {
        Selector::Domain { key, value } => json!({"matchLabels": {role_label: "", key: value}}),
        Selector::Names(names) => json!({
            "matchLabels": {role_label: ""},
            "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": names}],
        }),
    };
    let mcp = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {"name": pool.name},
        "spec": {
            "machineConfigSelector": {"matchExpressions": [{
                "key": "machineconfiguration.openshift.io/role",
                "operator": "In",
                "values": [pool.role, pool.name],
            }]},
            "nodeSelector": node_selector,
        },
    });
    OutFile::new(
        format!("openshift/machineconfigpool-{}.yaml", pool.name),
        yaml(&mcp),
        0o644,
    )
}

/// Everything that goes to `openshift/`: the pools' MachineConfigs, custom
/// pools, and the node agent; with what laying them out decided, and
/// anything still past the limits.
pub fn openshift_files(inv: &Inventory, shapes: &HostShapes) -> (Vec<OutFile>, Vec<Diagnostic>) {
    let states = node_states(inv, shapes);
    let mut layout = layout(inv, &states);
    let mut files = files(&mut layout);
    files.extend(crate::node_agent::files(inv, &layout.pools));
    let mut diagnostics = layout.diagnostics;
    diagnostics.extend(oversized(&files, &layout.pools));
    (files, diagnostics)
}

/// Objects past [`OBJECT_LIMIT`] among `files`, and pools whose nodenet
/// MachineConfigs together pass it: what the layout could not avoid (a
/// single host's file that large).
pub fn oversized(files: &[OutFile], pools: &[Pool]) -> Vec<Diagnostic> {
    use rayon::prelude::*;
    let mut out = Vec::new();
    let mut by_pool: BTreeMap<&str, usize> = BTreeMap::new();
    let objects: Vec<(&OutFile, Vec<usize>)> = files
        .par_iter()
        .filter(|f| f.path.starts_with("openshift/") && f.path.ends_with(".yaml"))
        .map(|f| (f, split_documents(&f.content)))
        .collect();
    for (f, documents) in objects {
        for doc in documents {
            if doc > OBJECT_LIMIT {
                out.push(Diagnostic::error(
                    Code::ObjectTooLarge,
                    format!(
                        "{} would be {:.2} MiB, past the {} MiB kept per object",
                        f.path,
                        doc as f64 / (1 << 20) as f64,
                        OBJECT_LIMIT >> 20
                    ),
                ));
            }
        }
        for p in pools {
            if f.path.starts_with("openshift/10-nodenet-")
                && f.path.ends_with(&format!("-{}.yaml", p.name))
            {
                *by_pool.entry(&p.name).or_default() += f.content.len();
            }
        }
    }
    for (pool, total) in by_pool {
        if total > OBJECT_LIMIT {
            out.push(Diagnostic::error(
                Code::ObjectTooLarge,
                format!(
                    "the {pool} pool's MachineConfigs would take {:.2} MiB together, past {} MiB",
                    total as f64 / (1 << 20) as f64,
                    OBJECT_LIMIT >> 20
                ),
            ));
        }
    }
    out
}

/// Sizes of the `---`-separated documents of a file.
fn split_documents(content: &[u8]) -> Vec<usize> {
    // Checked as UTF-8 first: what render writes always is, and that check
    // is several times faster than the lossy reading (14 MB here).
    let text = std::str::from_utf8(content).map_or_else(
        |_| String::from_utf8_lossy(content),
        std::borrow::Cow::Borrowed,
    );
    text.split("\n---\n").map(str::len).collect()
}

#[cfg(test)]
mod tests;

//! Day 2 at fleet scale: what a new inventory version changes on which
//! host, per interface in nmstate's terms, how dangerous each change is
//! (`risk.rs`), and the rollout it implies through the engines a cluster
//! already runs — the Machine Config Operator's pools and
//! kubernetes-nmstate's policies (`rollout.rs`). nodenet drives them; it
//! does not orchestrate nodes itself.

pub mod cluster;
pub mod drift;
pub mod risk;
pub mod rollout;
mod shaped;

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value as J;

use nodenet_import::diff::Diff;
use nodenet_model::{Host, InputKind, Inventory, Scope};

pub use cluster::ClusterChange;
pub use risk::{Item, Risk};

/// What happens to a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HostChangeKind {
    Added,
    Removed,
    Modified,
}

/// One reason for a host's risk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub risk: Risk,
    pub what: String,
}

/// A host field other than its network that changes (role, boot MAC, BMC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    pub field: String,
    pub old: String,
    pub new: String,
}

#[derive(Debug, Serialize)]
pub struct HostChange {
    pub host: String,
    /// The machine-config pool / role the host is in (new one if added).
    pub role: String,
    pub change: HostChangeKind,
    pub risk: Risk,
    pub reasons: Vec<Reason>,
    /// Per interface, routes and DNS (old → new), for a modified host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Diff>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
    /// Each change with its risk, for the rollout.
    #[serde(skip)]
    pub items: Vec<Item>,
    /// Changes with one number here are one diff with one risk, each
    /// host's own (`shaped.rs`): the rollout works theirs out once.
    #[serde(skip)]
    pub alike: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct Plan {
    /// Changes to the cluster as a whole (networks, VIPs, provisioning,
    /// the fields install-config carries).
    pub cluster: Vec<ClusterChange>,
    /// Hosts in the new inventory.
    pub hosts: usize,
    pub unchanged: usize,
    pub changes: Vec<HostChange>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.cluster.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("`{host}`: {source}")]
    State {
        host: String,
        #[source]
        source: nodenet_import::diff::DiffError,
    },
}

/// Whole hosts by name (changes to hosts — NNCPs, MachineConfig files —
/// are day-2 states themselves, not what a plan compares).
fn whole_hosts(inv: &Inventory) -> Vec<&Host> {
    inv.hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .collect()
}

/// Every host's change from `old` to `new`, matched by name.
/// The hosts a change adds to a cluster the agent installer made, as
/// `oc adm node-image create` takes them: `nodes-config.yaml` (none for
/// an installer-provisioned cluster, whose hosts join by their
/// BareMetalHosts, `scale-out/`).
pub fn added_hosts_files(
    plan: &Plan,
    old: &Inventory,
    new: &Inventory,
) -> Vec<nodenet_render::OutFile> {
    let agent_installed = |inv: &Inventory| {
        nodenet_check::fleet::for_agent_installer(inv) || inv.cluster.agent_config.is_some()
    };
    if !(agent_installed(old) || agent_installed(new)) {
        return Vec::new();
    }
    let added: Vec<&Host> = plan
        .changes
        .iter()
        .filter(|c| c.change == HostChangeKind::Added)
        .filter_map(|c| new.hosts.iter().find(|h| h.name.value == c.host))
        .collect();
    nodenet_render::artifacts::nodes_config(&added)
        .map(|text| nodenet_render::OutFile::new("nodes-config.yaml", text, 0o644))
        .into_iter()
        .collect()
}

pub fn plan(old: &Inventory, new: &Inventory) -> Result<Plan, PlanError> {
    plan_with(old, new, true).map(|(plan, _)| plan)
}

/// How many hosts took their group's diff, and their subgroup's risk.
#[derive(Debug, Default, PartialEq)]
struct SharedCounts {
    diffs: usize,
    risks: usize,
}

/// [`plan`], comparing hosts and telling their changes' risks once per
/// pair of shapes where that gives each host its own (`shaped.rs`), or
/// every host alone.
fn plan_with(
    old: &Inventory,
    new: &Inventory,
    by_shape: bool,
) -> Result<(Plan, SharedCounts), PlanError> {
    let old_hosts = whole_hosts(old);
    let new_hosts = whole_hosts(new);
    let by_name: HashMap<&str, &Host> = old_hosts
        .iter()
        .map(|h| (h.name.value.as_str(), *h))
        .collect();
    // Inputs of one kind spell a state alike: a state written otherwise
    // is rendered otherwise. (A render's output read back as OLD spells
    // it as render wrote it.)
    let same_kind = old.kinds == new.kinds;
    let pairs: Vec<(Option<&Host>, &Host)> = new_hosts
        .iter()
        .map(|h| (by_name.get(h.name.value.as_str()).copied(), *h))
        .collect();
    let (known, risks, subgroups, shared) = if by_shape {
        let found = shaped::diffs(&pairs, &|o, n| network_diff(o, n).ok().flatten());
        let risks = shaped::risks(&pairs, &found, [&old.cluster, &new.cluster], &|o, n, d| {
            risk::classify(old, o, new, n, d)
        });
        let shared = SharedCounts {
            diffs: found.shared,
            risks: risks.shared,
        };
        (found.diffs, risks.classified, risks.subgroup, shared)
    } else {
        let n = pairs.len();
        let known = (0..n).map(|_| None).collect();
        (known, vec![None; n], vec![None; n], SharedCounts::default())
    };
    let compared: Vec<Option<HostChange>> = pairs
        .into_par_iter()
        .zip(known)
        .zip(risks)
        .zip(subgroups)
        .map(|((((o, h), known), risk), alike)| match o {
            None => Ok(Some(added(h))),
            Some(o) => modified(old, o, new, h, same_kind, (known, risk))
                .map(|c| c.map(|c| HostChange { alike, ..c })),
        })
        .collect::<Result<_, _>>()?;
    let mut changes: Vec<HostChange> = compared.into_iter().flatten().collect();
    let unchanged = new_hosts.len() - changes.len();
    let in_new: std::collections::HashSet<&str> =
        new_hosts.iter().map(|h| h.name.value.as_str()).collect();
    changes.extend(
        old_hosts
            .iter()
            .filter(|h| !in_new.contains(h.name.value.as_str()))
            .map(|h| removed(h)),
    );
    let plan = Plan {
        cluster: cluster::cluster_changes(old, new),
        hosts: new_hosts.len(),
        unchanged,
        changes,
    };
    Ok((plan, shared))
}

fn added(h: &Host) -> HostChange {
    HostChange {
        host: h.name.value.clone(),
        role: h.role.value.pool().to_string(),
        change: HostChangeKind::Added,
        risk: Risk::Additive,
        reasons: vec![Reason {
            risk: Risk::Additive,
            what: "a new host: it gets its network when it is provisioned".into(),
        }],
        network: None,
        fields: Vec::new(),
        items: Vec::new(),
        alike: None,
    }
}

fn removed(h: &Host) -> HostChange {
    HostChange {
        host: h.name.value.clone(),
        role: h.role.value.pool().to_string(),
        change: HostChangeKind::Removed,
        risk: Risk::Modifying,
        reasons: vec![Reason {
            risk: Risk::Modifying,
            what:
                "no longer in the inventory: its node keeps its network (nodenet removes no node)"
                    .into(),
        }],
        network: None,
        fields: Vec::new(),
        items: Vec::new(),
        alike: None,
    }
}

fn state(h: &Host) -> J {
    h.network
        .as_ref()
        .map(|n| n.to_json())
        .unwrap_or_else(|| J::Object(Default::default()))
}

/// The diff of a host's network from OLD to NEW, through nmstate's
/// canonical form; `None` when they mean the same.
fn network_diff(o: &Host, n: &Host) -> Result<Option<Diff>, PlanError> {
    let (old_state, new_state) = (state(o), state(n));
    states_diff(&old_state, &new_state, n)
}

fn states_diff(old_state: &J, new_state: &J, n: &Host) -> Result<Option<Diff>, PlanError> {
    if old_state == new_state {
        return Ok(None);
    }
    let d =
        nodenet_import::diff::diff(new_state, old_state).map_err(|source| PlanError::State {
            host: n.name.value.clone(),
            source,
        })?;
    Ok((!d.equal).then_some(d))
}

/// The change of a host in both versions; `None` when nothing changes.
/// `known`: its network's diff, when its group's was found to be it, and
/// that diff's items and reasons, when worked out already.
fn modified(
    old: &Inventory,
    o: &Host,
    new: &Inventory,
    n: &Host,
    same_kind: bool,
    (known, classified): (Option<Diff>, Option<shaped::Classified>),
) -> Result<Option<HostChange>, PlanError> {
    let fields = field_changes(old, o, new, n, same_kind);
    // Most hosts of a fleet do not change: their states are the same
    // document (no JSON made for them), or the same JSON; only the others
    // go through nmstate's canonical form.
    let written_alike = match (&o.network, &n.network) {
        (Some(a), Some(b)) => a.same_value(b),
        (None, None) => true,
        _ => false,
    };
    if written_alike && fields.is_empty() {
        return Ok(None);
    }
    let (diff, respelled) = match known {
        // A diff: not only a spelling.
        Some(d) => (Some(d), false),
        None => {
            let (old_state, new_state) = (state(o), state(n));
            let diff = states_diff(&old_state, &new_state, n)?;
            // Render writes a state's keys in their order: an order is a
            // spelling.
            let respelled = same_kind && diff.is_none() && !same_text(&old_state, &new_state);
            (diff, respelled)
        }
    };
    if diff.is_none() && fields.is_empty() && !respelled {
        return Ok(None);
    }
    let (items, mut reasons) = match (&diff, classified) {
        (Some(_), Some(classified)) => classified,
        (Some(d), None) => risk::classify(old, o, new, n, d),
        (None, _) => (Vec::new(), Vec::new()),
    };
    if respelled {
        reasons.push(Reason {
            risk: Risk::Additive,
            what: "its network is written otherwise with the same meaning: the files rendered from it change and roll out (the MCO renders a new config for a changed MachineConfig, kubernetes-nmstate applies a changed policy again on every node it selects), with no effect on the node".into(),
        });
    }
    for f in &fields {
        let risk = if f.field == "role" {
            Risk::Disruptive
        } else {
            Risk::Modifying
        };
        let what = match f.field.as_str() {
            "role" => format!(
                "moves from the {} pool to the {} pool: its MachineConfig and policies change",
                f.old, f.new
            ),
            "labels" => format!(
                "node labels {} -> {}: policies that select by them (and failure domains) change",
                f.old, f.new
            ),
            "NICs" | "NIC binding" | "PXE interface" | "br-ex uplink" => format!(
                "{} {} -> {}: the profiles that find NICs by name or MAC, the boot NIC and the uplink follow it",
                f.field, f.old, f.new
            ),
            _ => format!("{} {} -> {} (provisioning only)", f.field, f.old, f.new),
        };
        reasons.push(Reason { risk, what });
    }
    reasons.sort_by(|a, b| b.risk.cmp(&a.risk).then_with(|| a.what.cmp(&b.what)));
    reasons.dedup();
    let risk = reasons
        .iter()
        .map(|r| r.risk)
        .max()
        .unwrap_or(Risk::Additive);
    Ok(Some(HostChange {
        host: n.name.value.clone(),
        role: n.role.value.pool().to_string(),
        change: HostChangeKind::Modified,
        risk,
        reasons,
        network: diff,
        fields,
        items,
        alike: None,
    }))
}

/// Whether two documents are the same with their keys in the same order
/// (`serde_json`'s `==` ignores the order of a mapping's keys).
fn same_text(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, v), (l, w))| k == l && same_text(v, w))
        }
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_text(v, w))
        }
        (a, b) => a == b,
    }
}

fn field_changes(
    old: &Inventory,
    o: &Host,
    new: &Inventory,
    n: &Host,
    same_kind: bool,
) -> Vec<FieldChange> {
    let mut out = Vec::new();
    let mut push = |field: &str, a: String, b: String| {
        if a != b {
            out.push(FieldChange {
                field: field.into(),
                old: a,
                new: b,
            });
        }
    };
    push(
        "role",
        o.role.value.pool().to_string(),
        n.role.value.pool().to_string(),
    );
    let mac = |h: &Host| {
        h.boot_mac
            .as_ref()
            .map(|m| m.value.to_ascii_lowercase())
            .unwrap_or_default()
    };
    push("boot MAC", mac(o), mac(n));
    let bmc = |h: &Host| {
        h.bmc
            .as_ref()
            .map(|b| b.address.value.clone())
            .unwrap_or_default()
    };
    push("BMC", bmc(o), bmc(n));
    // Credentials by their username: each format names them its own way
    // (install-config's are `<host>-bmc`), and passwords are not compared.
    let username = |inv: &Inventory, h: &Host| {
        let name = h.bmc.as_ref()?.credentials.as_ref()?;
        Some(inv.credentials.get(&name.value)?.value.username.clone())
    };
    let credentials = |h: &Host| {
        h.bmc
            .as_ref()
            .and_then(|b| b.credentials.as_ref())
            .map(|c| c.value.clone())
            .unwrap_or_default()
    };
    match (username(old, o), username(new, n)) {
        (Some(a), Some(b)) => push("BMC username", a, b),
        // Credentials given or taken away (install-config's are named
        // for their host: only whether there are any is compared).
        (a, b) if a.is_some() != b.is_some() => {
            push("BMC credentials", credentials(o), credentials(n))
        }
        _ => {}
    }
    let text = |v: &Option<nodenet_model::Located<String>>| {
        v.as_ref().map(|v| v.value.clone()).unwrap_or_default()
    };
    push("boot mode", text(&o.boot_mode), text(&n.boot_mode));
    let hints = |h: &Host| {
        h.root_device_hints
            .as_ref()
            .map(|n| n.to_json().to_string())
            .unwrap_or_default()
    };
    push("root device hints", hints(o), hints(n));
    // Labels are the inventory's alone (no installer file has them).
    if o.kind == InputKind::Inventory && n.kind == InputKind::Inventory {
        let labels = |h: &Host| {
            h.labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        push("labels", labels(o), labels(n));
    }
    if !same_kind {
        // What an installer file does not carry (the NIC table, the PXE
        // NIC, the binding) cannot be compared with a render read back.
        return out;
    }
    let nics = |h: &Host| {
        h.nics
            .iter()
            .map(|nic| {
                let mac = nic.mac.as_ref().map(|m| m.value.to_ascii_lowercase());
                format!("{}={}", nic.name.value, mac.unwrap_or_default())
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    push("NICs", nics(o), nics(n));
    push(
        "PXE interface",
        text(&o.pxe_interface),
        text(&n.pxe_interface),
    );
    push("br-ex uplink", text(&o.br_ex_uplink), text(&n.br_ex_uplink));
    let binding = |h: &Host| {
        h.nic_binding
            .as_ref()
            .map(|b| b.value.as_str().to_string())
            .unwrap_or_default()
    };
    push("NIC binding", binding(o), binding(n));
    let tls = |h: &Host| {
        h.bmc
            .as_ref()
            .map(|b| b.disable_certificate_verification.to_string())
            .unwrap_or_default()
    };
    push("BMC certificate verification disabled", tls(o), tls(n));
    let extra = |h: &Host| {
        h.install_config_extra
            .as_ref()
            .map(|n| n.to_json().to_string())
            .unwrap_or_default()
    };
    push("install-config host fields", extra(o), extra(n));
    out
}

/// `worker-0` or `worker-0 and 99 more hosts` (`noun` "host"; "" names
/// nothing): a list too long to show.
pub(crate) fn first_and_more(names: &[impl AsRef<str>], noun: &str) -> String {
    match names {
        [one] => one.as_ref().to_string(),
        [first, rest @ ..] if noun.is_empty() => {
            format!("{} and {} more", first.as_ref(), rest.len())
        }
        [first, rest @ ..] => format!(
            "{} and {} more {}",
            first.as_ref(),
            rest.len(),
            nodenet_model::names::plural(rest.len(), noun)
        ),
        [] => String::new(),
    }
}

/// The human form: hosts with the same change and risk shown once, with
/// their count ("worker-00003 and 9,996 more hosts").
pub fn render_text(plan: &Plan) -> String {
    let mut s = String::new();
    for c in &plan.cluster {
        s.push_str(&format!(
            "~ cluster {}: {} -> {} ({})\n    {}\n",
            c.field,
            if c.old.is_empty() { "(none)" } else { &c.old },
            if c.new.is_empty() { "(none)" } else { &c.new },
            c.risk.as_str(),
            c.what
        ));
    }
    // Each change's text on every core (10,000 of them in a fleet-wide
    // change), then hosts of the same text grouped in the plan's order.
    let keys: Vec<String> = plan.changes.par_iter().map(change_key).collect();
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (c, key) in plan.changes.iter().zip(keys) {
        match index.get(&key) {
            Some(&i) => groups[i].1.push(&c.host),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push((key, vec![&c.host]));
            }
        }
    }
    for (key, hosts) in groups {
        let mut parts = key.splitn(3, '\u{1}');
        let (sign, role, body) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        let who = first_and_more(&hosts, "host");
        s.push_str(&format!("{sign} {who} ({role}) {body}\n"));
    }
    s
}

/// A change's sign, role and text: hosts whose keys are equal are shown
/// as one entry.
fn change_key(c: &HostChange) -> String {
    let mut body = format!("{:?}:", c.risk).to_lowercase();
    for r in &c.reasons {
        body.push_str(&format!(
            "\n    {} — {}",
            format!("{:?}", r.risk).to_lowercase(),
            r.what
        ));
    }
    for f in &c.fields {
        body.push_str(&format!("\n    {}: {} -> {}", f.field, f.old, f.new));
    }
    if let Some(d) = &c.network {
        for line in nodenet_import::diff::render_text(d).lines() {
            body.push_str(&format!("\n    {line}"));
        }
    }
    let sign = match c.change {
        HostChangeKind::Added => '+',
        HostChangeKind::Removed => '-',
        HostChangeKind::Modified => '~',
    };
    format!("{sign}\u{1}{}\u{1}{body}", c.role)
}

/// An inventory that loads without an error (the tests' inputs).
#[cfg(test)]
pub(crate) fn load_clean(text: String) -> Inventory {
    let l = nodenet_model::load_texts(vec![("c.yaml".into(), text)]);
    assert!(
        !l.diagnostics.iter().any(|d| d.is_error()),
        "{:?}",
        l.diagnostics
    );
    l.inventory
}

#[cfg(test)]
mod tests;

//! GitOps ZTP outputs of a fleet's sites: per cluster a ClusterInstance
//! (the SiteConfig operator's input; a SiteConfig's cluster converted to
//! it), and per node what the operator's default templates put on the hub
//! (NMStateConfig, BareMetalHost), so that what lands can be checked too.

use std::path::Path;

use serde_json::{json, Map, Value as J};

use nodenet_check::Report;
use nodenet_model::{Code, Diagnostic, Host, InputKind, Inventory, Span};

use crate::artifacts::{self, set_at, yaml};
use crate::output::{self, OutFile};
use crate::{Provenance, RenderError, Rendered, Replace};

pub const CLUSTER_INSTANCE_API: &str = "siteconfig.open-cluster-management.io/v1alpha1";
/// The SiteConfig operator's default templates (namespace
/// `open-cluster-management`): assisted-installer clusters and nodes.
const CLUSTER_TEMPLATES: &str = "ai-cluster-templates-v1";
const NODE_TEMPLATES: &str = "ai-node-templates-v1";
const TEMPLATES_NAMESPACE: &str = "open-cluster-management";

/// Fields with the same name and meaning in a SiteConfig and a
/// ClusterInstance (cluster, then node), converted both ways.
const SAME_CLUSTER: &[&str] = &[
    "clusterName",
    "holdInstallation",
    "baseDomain",
    "networkType",
    "installConfigOverrides",
    "clusterImageSetNameRef",
    "clusterNetwork",
    "machineNetwork",
    "apiVIPs",
    "ingressVIPs",
    "additionalNTPSources",
    "ignitionConfigOverride",
    "proxy",
    "cpuPartitioningMode",
];
const SAME_NODE: &[&str] = &[
    "hostName",
    "bmcAddress",
    "bmcCredentialsName",
    "bootMACAddress",
    "bootMode",
    "automatedCleaningMode",
    "role",
    "rootDeviceHints",
    "ignitionConfigOverride",
    "nodeLabels",
];
/// SiteConfig site-wide fields a ClusterInstance carries.
const SAME_SITE: &[&str] = &[
    "baseDomain",
    "pullSecretRef",
    "clusterImageSetNameRef",
    "sshPublicKey",
];

/// The cluster's name, the directory its files go to.
pub fn site_name(inv: &Inventory) -> String {
    inv.cluster
        .name
        .as_ref()
        .map(|n| artifacts::dns_label(&n.value))
        .unwrap_or_else(|| "cluster".into())
}

/// A ClusterInstance for the cluster: a ClusterInstance input's fields as
/// given, a SiteConfig's converted; what nodenet owns (names, networks,
/// VIPs, nodes and their networks) written from the model. The findings
/// are the SiteConfig fields a ClusterInstance cannot carry.
pub fn cluster_instance(inv: &Inventory) -> (J, Vec<Diagnostic>) {
    let mut found = Vec::new();
    let name = site_name(inv);
    let ztp = inv.cluster.ztp.as_ref();
    let from_site_config = inv.kind == Some(InputKind::SiteConfig);
    let mut spec = Map::new();
    match ztp {
        Some(z) if from_site_config => {
            if let Some(site) = &z.site {
                for (k, v) in site.as_map().unwrap_or_default() {
                    let key = k.as_str().unwrap_or_default();
                    if SAME_SITE.contains(&key) {
                        spec.insert(key.into(), v.to_json());
                    } else {
                        found.push(not_carried(key, "the SiteConfig's spec", k.span));
                    }
                }
            }
            convert_cluster(&z.entry, &mut spec, &mut found);
            let topology = if inv.hosts.len() == 1 {
                "SNO"
            } else {
                "HighlyAvailable"
            };
            spec.insert("clusterType".into(), json!(topology));
        }
        Some(z) => {
            if let J::Object(m) = z.entry.to_json() {
                spec = m;
            }
        }
        None => {}
    }
    // What nodenet owns, from the model.
    set_at(&mut spec, &["clusterName"], json!(name));
    if let Some(d) = &inv.cluster.base_domain {
        set_at(&mut spec, &["baseDomain"], json!(d.value));
    }
    let nets: Vec<J> = inv
        .cluster
        .machine_networks
        .iter()
        .map(|n| json!({"cidr": n.value.to_string()}))
        .collect();
    if !nets.is_empty() {
        set_at(&mut spec, &["machineNetwork"], J::Array(nets));
    }
    for (key, vips) in [
        ("apiVIPs", &inv.cluster.api_vips),
        ("ingressVIPs", &inv.cluster.ingress_vips),
    ] {
        if vips.is_empty() {
            spec.remove(key);
        } else {
            let list = vips.iter().map(|v| json!(v.value.to_string())).collect();
            set_at(&mut spec, &[key], J::Array(list));
        }
    }
    if !spec.contains_key("templateRefs") {
        spec.insert(
            "templateRefs".into(),
            json!([{"name": CLUSTER_TEMPLATES, "namespace": TEMPLATES_NAMESPACE}]),
        );
    }
    let nodes: Vec<J> = inv
        .hosts
        .iter()
        .map(|h| node(h, from_site_config, &mut found))
        .collect();
    spec.insert("nodes".into(), J::Array(nodes));
    let object = match ztp {
        Some(z) if !from_site_config => z.object_name.clone().unwrap_or_else(|| name.clone()),
        _ => name.clone(),
    };
    let namespace = site_namespace(inv);
    let doc = json!({
        "apiVersion": CLUSTER_INSTANCE_API,
        "kind": "ClusterInstance",
        "metadata": {"name": object, "namespace": namespace},
        "spec": J::Object(spec),
    });
    (doc, found)
}

/// A SiteConfig cluster's fields in a ClusterInstance's spec.
fn convert_cluster(
    entry: &nodenet_model::Node,
    spec: &mut Map<String, J>,
    found: &mut Vec<Diagnostic>,
) {
    for (k, v) in entry.as_map().unwrap_or_default() {
        let key = k.as_str().unwrap_or_default();
        match key {
            _ if SAME_CLUSTER.contains(&key) => {
                spec.insert(key.into(), v.to_json());
            }
            "apiVIP" | "ingressVIP" => {
                let list = format!("{key}s");
                if entry.get(&list).is_none() {
                    spec.insert(list, json!([v.to_json()]));
                }
            }
            // A list of strings there, of `{cidr}` here.
            "serviceNetwork" => {
                let nets: Vec<J> = v
                    .as_seq()
                    .unwrap_or_default()
                    .iter()
                    .map(|n| json!({"cidr": n.to_json()}))
                    .collect();
                spec.insert(key.into(), J::Array(nets));
            }
            "clusterLabels" => {
                spec.insert("extraLabels".into(), json!({"ManagedCluster": strings(v)}));
            }
            "crAnnotations" => match v.get("add") {
                Some(add) => {
                    spec.insert("extraAnnotations".into(), add.to_json());
                }
                None => found.push(not_carried(key, "a cluster", k.span)),
            },
            "crSuppression" => {
                spec.insert("suppressedManifests".into(), v.to_json());
            }
            "diskEncryption" => {
                let mut d = v.to_json();
                if let Some(m) = d.as_object_mut() {
                    m.remove("tpm2");
                }
                if let Some(tpm) = v.get("tpm2") {
                    found.push(not_carried("diskEncryption.tpm2", "a cluster", tpm.span));
                }
                spec.insert(key.into(), d);
            }
            "nodes" => {}
            _ => found.push(not_carried(key, "a cluster", k.span)),
        }
    }
}

/// A ClusterInstance node: the input's entry (a SiteConfig node converted)
/// with the fields nodenet owns written from the model.
fn node(host: &Host, from_site_config: bool, found: &mut Vec<Diagnostic>) -> J {
    let mut n = Map::new();
    if let Some(entry) = &host.ztp {
        if from_site_config {
            for (k, v) in entry.as_map().unwrap_or_default() {
                let key = k.as_str().unwrap_or_default();
                match key {
                    _ if SAME_NODE.contains(&key) => {
                        n.insert(key.into(), v.to_json());
                    }
                    // The CRD's list, or the JSON string the generator
                    // and its examples use: one string here.
                    "installerArgs" => {
                        let args = match v.as_str() {
                            Some(s) => s.to_string(),
                            None => v.to_json().to_string(),
                        };
                        n.insert(key.into(), json!(args));
                    }
                    // "" (inspect) or "disabled" here.
                    "ironicInspect" => {
                        let inspect = v.as_str().filter(|s| *s == "disabled").unwrap_or("");
                        n.insert(key.into(), json!(inspect));
                    }
                    "crAnnotations" if v.get("add").is_some() => {
                        n.insert(
                            "extraAnnotations".into(),
                            v.get("add").expect("some").to_json(),
                        );
                    }
                    "crSuppression" => {
                        n.insert("suppressedManifests".into(), v.to_json());
                    }
                    _ => found.push(not_carried(key, "a node", k.span)),
                }
            }
        } else if let J::Object(m) = entry.to_json() {
            n = m;
        }
    }
    set_at(&mut n, &["hostName"], json!(host.name.value));
    if host.role.value != nodenet_model::Role::Unset {
        set_at(&mut n, &["role"], json!(host.role.value.as_str()));
    }
    if let Some(bmc) = &host.bmc {
        set_at(&mut n, &["bmcAddress"], json!(bmc.address.value));
        set_at(
            &mut n,
            &["bmcCredentialsName"],
            json!({"name": bmc_secret_name(host)}),
        );
    }
    if let Some(mac) = &host.boot_mac {
        set_at(&mut n, &["bootMACAddress"], json!(mac.value));
    }
    if let Some(mode) = &host.boot_mode {
        set_at(&mut n, &["bootMode"], json!(mode.value));
    }
    if let Some(hints) = &host.root_device_hints {
        set_at(&mut n, &["rootDeviceHints"], hints.to_json());
    }
    if !host.labels.is_empty() {
        set_at(&mut n, &["nodeLabels"], json!(host.labels));
    }
    if let Some(state) = artifacts::intent(host) {
        let network = json!({"interfaces": mac_map(host), "config": state});
        set_at(&mut n, &["nodeNetwork"], network);
    }
    if !n.contains_key("templateRefs") {
        n.insert(
            "templateRefs".into(),
            json!([{"name": NODE_TEMPLATES, "namespace": TEMPLATES_NAMESPACE}]),
        );
    }
    J::Object(n)
}

/// A mapping's values as strings (`common: true` is `"true"` in a map
/// of strings).
fn strings(v: &nodenet_model::Node) -> J {
    let m: Map<String, J> = v
        .as_map()
        .unwrap_or_default()
        .iter()
        .filter_map(|(k, v)| Some((k.scalar_text()?, json!(v.scalar_text().unwrap_or_default()))))
        .collect();
    J::Object(m)
}

/// The namespace of a site's ClusterInstance, and of the objects beside it.
fn site_namespace(inv: &Inventory) -> String {
    match inv.cluster.ztp.as_ref() {
        Some(z) if inv.kind != Some(InputKind::SiteConfig) => {
            z.namespace.clone().unwrap_or_else(|| site_name(inv))
        }
        _ => site_name(inv),
    }
}

/// The name of the host's BMC credentials Secret on the hub.
fn bmc_secret_name(host: &Host) -> String {
    host.bmc
        .as_ref()
        .and_then(|b| b.credentials.as_ref())
        .map(|c| c.value.clone())
        .unwrap_or_else(|| format!("{}-bmc-secret", artifacts::dns_label(&host.name.value)))
}

/// The host's NICs with MACs: the logical names its state uses.
fn mac_map(host: &Host) -> Vec<J> {
    host.nics
        .iter()
        .filter_map(|n| {
            let mac = n.mac.as_ref()?;
            Some(json!({"name": n.name.value, "macAddress": mac.value}))
        })
        .collect()
}

fn not_carried(key: &str, what: &str, span: Span) -> Diagnostic {
    Diagnostic::warning(
        Code::SiteFieldNotCarried,
        format!("`{key}` of {what} has no ClusterInstance field: the rendered ClusterInstance does not carry it"),
    )
    .at(span)
    .help("carry it by other means (an extra manifest in a ConfigMap named by `extraManifestsRefs`, a template of your own in `templateRefs`), or drop it")
}

/// What converting the cluster to a ClusterInstance cannot carry (for
/// `check` to say before rendering).
pub fn conversion_findings(inv: &Inventory) -> Vec<Diagnostic> {
    if inv.kind != Some(InputKind::SiteConfig) {
        return Vec::new();
    }
    cluster_instance(inv).1
}

/// The NMStateConfig the SiteConfig operator's node template makes for a
/// node with a network, labelled for the node's own InfraEnv (named
/// after the node since stolostron/siteconfig's per-node InfraEnvs).
pub fn nmstate_config(cluster: &str, host: &Host) -> Option<J> {
    let state = artifacts::intent(host)?;
    let infra_env = &host.name.value;
    Some(json!({
        "apiVersion": "agent-install.openshift.io/v1beta1",
        "kind": "NMStateConfig",
        "metadata": {
            "name": host.name.value,
            "namespace": cluster,
            "labels": {"nmstate-label": infra_env},
        },
        "spec": {"config": state, "interfaces": mac_map(host)},
    }))
}

/// The BareMetalHost the node template makes (the assisted installer's
/// BMAC takes it by its annotations; inspection off unless asked).
pub fn baremetal_host(cluster: &str, host: &Host) -> Option<J> {
    let bmc = host.bmc.as_ref()?;
    let inspect = host
        .ztp
        .as_ref()
        .and_then(|n| n.get("ironicInspect"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let mut annotations = Map::new();
    if inspect == "disabled" {
        annotations.insert("inspect.metal3.io".into(), json!("disabled"));
    }
    annotations.insert(
        "bmac.agent-install.openshift.io/hostname".into(),
        json!(host.name.value),
    );
    annotations.insert(
        "bmac.agent-install.openshift.io/role".into(),
        json!(host.role.value.pool()),
    );
    for (k, v) in &host.labels {
        annotations.insert(
            format!("bmac.agent-install.openshift.io.node-label.{k}"),
            json!(v),
        );
    }
    let mut spec = json!({
        "bmc": {
            "address": bmc.address.value,
            "credentialsName": bmc_secret_name(host),
            "disableCertificateVerification": true,
        },
        "online": true,
        "automatedCleaningMode": host
            .ztp
            .as_ref()
            .and_then(|n| n.get("automatedCleaningMode"))
            .and_then(|v| v.as_str())
            .unwrap_or("disabled"),
    });
    let s = spec.as_object_mut().expect("an object");
    if let Some(mac) = &host.boot_mac {
        s.insert("bootMACAddress".into(), json!(mac.value));
    }
    if let Some(mode) = &host.boot_mode {
        s.insert("bootMode".into(), json!(mode.value));
    }
    if let Some(hints) = &host.root_device_hints {
        s.insert("rootDeviceHints".into(), hints.to_json());
    }
    Some(json!({
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {
            "name": host.name.value,
            "namespace": cluster,
            "annotations": annotations,
            "labels": {"infraenvs.agent-install.openshift.io": host.name.value},
        },
        "spec": spec,
    }))
}

/// The same site as a SiteConfig v2 (one cluster), for fleets still on the
/// ZTP kustomize plugin: made from the ClusterInstance, whose fields it
/// has (`templateRefs`, `extraManifestsRefs`, `clusterType` it has not:
/// the plugin brings its own templates and manifests).
pub fn site_config(ci: &J) -> Result<J, String> {
    let spec = &ci["spec"];
    if spec["serviceNetwork"]
        .as_array()
        .is_some_and(|n| n.len() > 1)
    {
        return Err("its service network is dual-stack, and a SiteConfig's `serviceNetwork` holds one network".into());
    }
    let mut cluster = Map::new();
    for k in SAME_CLUSTER.iter().chain(&["diskEncryption"]) {
        if let Some(v) = spec.get(*k) {
            cluster.insert(k.to_string(), v.clone());
        }
    }
    if let Some(nets) = spec["serviceNetwork"].as_array() {
        let cidrs: Vec<J> = nets.iter().map(|n| n["cidr"].clone()).collect();
        cluster.insert("serviceNetwork".into(), J::Array(cidrs));
    }
    if let Some(labels) = spec["extraLabels"].get("ManagedCluster") {
        cluster.insert("clusterLabels".into(), labels.clone());
    }
    if let Some(a) = spec.get("extraAnnotations") {
        cluster.insert("crAnnotations".into(), json!({"add": a}));
    }
    if let Some(s) = spec.get("suppressedManifests") {
        cluster.insert("crSuppression".into(), s.clone());
    }
    let nodes: Vec<J> = spec["nodes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|n| {
            let mut node = Map::new();
            for k in SAME_NODE.iter().chain(&["nodeNetwork"]) {
                if let Some(v) = n.get(*k) {
                    node.insert(k.to_string(), v.clone());
                }
            }
            // One JSON string there, a list of strings here.
            if let Some(args) = n["installerArgs"].as_str() {
                if let Ok(list @ J::Array(_)) = serde_json::from_str::<J>(args) {
                    node.insert("installerArgs".into(), list);
                }
            }
            if n["ironicInspect"] == "disabled" {
                node.insert("ironicInspect".into(), json!("disabled"));
            }
            J::Object(node)
        })
        .collect();
    cluster.insert("nodes".into(), J::Array(nodes));
    let mut site = Map::new();
    for k in [
        "baseDomain",
        "pullSecretRef",
        "clusterImageSetNameRef",
        "sshPublicKey",
    ] {
        if let Some(v) = spec.get(k) {
            site.insert(k.into(), v.clone());
        }
    }
    site.insert("clusters".into(), json!([J::Object(cluster)]));
    Ok(json!({
        "apiVersion": "ran.openshift.io/v2",
        "kind": "SiteConfig",
        "metadata": {"name": ci["metadata"]["name"], "namespace": ci["metadata"]["namespace"]},
        "spec": J::Object(site),
    }))
}

/// One site's files under `sites/<cluster>/`: its ClusterInstance (and
/// SiteConfig v2), and per node its keyfiles, state, NMStateConfig and
/// BareMetalHost.
pub fn site_files(inv: &Inventory, report: &Report) -> (Vec<OutFile>, Vec<Diagnostic>) {
    let name = site_name(inv);
    let dir = format!("sites/{name}");
    let (ci, mut found) = cluster_instance(inv);
    let mut files = vec![OutFile::new(
        format!("{dir}/clusterinstance.yaml"),
        yaml(&ci),
        0o644,
    )];
    match site_config(&ci) {
        Ok(sc) => files.push(OutFile::new(
            format!("{dir}/siteconfig.yaml"),
            yaml(&sc),
            0o644,
        )),
        Err(why) => {
            let mut d = Diagnostic::warning(
                Code::SiteFieldNotCarried,
                format!("no siteconfig.yaml for `{name}`: {why} (its ClusterInstance is written)"),
            );
            if let Some(span) = inv.cluster.span {
                d = d.at(span);
            }
            found.push(d);
        }
    }
    let texts = artifacts::intent_texts(inv);
    for ((host, r), text) in inv.hosts.iter().zip(&report.hosts).zip(&texts) {
        let mut own = Vec::new();
        artifacts::host_files(host, &inv.cluster, r, text.as_ref(), &mut own);
        let host_dir = format!("{dir}/hosts/{}", host.name.value.replace(['/', ':'], "-"));
        if let Some(doc) = nmstate_config(&name, host) {
            own.push(OutFile::new("nmstateconfig.yaml", yaml(&doc), 0o644));
        }
        if let Some(doc) = baremetal_host(&name, host) {
            own.push(OutFile::new("baremetalhost.yaml", yaml(&doc), 0o644));
        }
        for mut f in own {
            f.path = if f.path.starts_with("hosts/") {
                format!("{dir}/{}", f.path)
            } else {
                format!("{host_dir}/{}", f.path)
            };
            files.push(f);
        }
    }
    (files, found)
}

/// Writes every site of a fleet into `out` (replacing it as a whole).
pub fn render_sites(
    sites: &[(&Inventory, &Report)],
    out: &Path,
    provenance: &Provenance,
    replace: Replace,
) -> Result<Rendered, RenderError> {
    use rayon::prelude::*;
    output::guard_provenance(out, provenance, replace.force)?;
    let made: Vec<(Vec<OutFile>, Vec<Diagnostic>)> = sites
        .par_iter()
        .map(|(inv, report)| {
            let (mut files, found) = site_files(inv, report);
            if let (crate::BmcSecrets::ExternalSecret, Some(store)) =
                (replace.bmc_secrets, &replace.secret_store)
            {
                // Beside the ClusterInstance, in its namespace.
                files.extend(artifacts::external_secret::bmc_external_secrets(
                    format!("sites/{}/bmc-secrets.yaml", site_name(inv)),
                    inv,
                    &site_namespace(inv),
                    bmc_secret_name,
                    store,
                ));
            }
            (files, found)
        })
        .collect();
    let tree = output::Tree::begin(out)?;
    let mut warnings = Vec::new();
    let mut entries = Vec::new();
    for (files, found) in made {
        warnings.extend(found);
        entries.extend(
            files
                .par_iter()
                .map(|f| tree.write(f))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    let manifest = tree.commit(entries, Some(provenance))?;
    Ok(Rendered {
        manifest,
        warnings,
        hosts: sites.iter().map(|(inv, _)| inv.hosts.len()).sum(),
        changes_not_rendered: 0,
        target_errors: Vec::new(),
    })
}

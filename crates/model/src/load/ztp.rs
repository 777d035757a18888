//! GitOps ZTP's site descriptions: SiteConfig (`ran.openshift.io/v1` and
//! `v2`, several clusters in `spec.clusters`, site-wide defaults in
//! `spec`) and ClusterInstance (`siteconfig.open-cluster-management.io/
//! v1alpha1`, one cluster). Each cluster is a cluster of its own in the
//! fleet. A node's `nodeNetwork` is a MAC map (a logical name per MAC,
//! matched to the NICs at boot) plus its first-boot NMState `config`.

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::Node;

/// ClusterInstance `spec` fields (the CRD, stolostron/siteconfig).
const CLUSTER_INSTANCE: &[&str] = &[
    "additionalNTPSources",
    "apiVIPs",
    "baseDomain",
    "caBundleRef",
    "clusterImageSetNameRef",
    "clusterName",
    "clusterNetwork",
    "clusterType",
    "cpuArchitecture",
    "cpuPartitioningMode",
    "diskEncryption",
    "extraAnnotations",
    "extraLabels",
    "extraManifestsRefs",
    "holdInstallation",
    "ignitionConfigOverride",
    "ingressVIPs",
    "installConfigOverrides",
    "machineNetwork",
    "networkType",
    "nodes",
    "platformType",
    "proxy",
    "pruneManifests",
    "pullSecretRef",
    "reinstall",
    "serviceNetwork",
    "sshPublicKey",
    "suppressedManifests",
    "templateRefs",
];
const CLUSTER_INSTANCE_NODE: &[&str] = &[
    "automatedCleaningMode",
    "bmcAddress",
    "bmcCredentialsName",
    "bootMACAddress",
    "bootMode",
    "cpuArchitecture",
    "extraAnnotations",
    "extraLabels",
    "hostName",
    "hostRef",
    "ignitionConfigOverride",
    "installerArgs",
    "ironicInspect",
    "nodeLabels",
    "nodeNetwork",
    "pruneManifests",
    "role",
    "rootDeviceHints",
    "suppressedManifests",
    "templateRefs",
];
/// SiteConfig `spec` (site-wide defaults), a cluster and a node (the CRD
/// of openshift-kni/cnf-features-deploy; v2 adds `siteConfigMap` and
/// `cpuPartitioningMode` to a cluster).
pub(crate) const SITE_CONFIG: &[&str] = &[
    "baseDomain",
    "pullSecretRef",
    "clusterImageSetNameRef",
    "sshPublicKey",
    "sshPrivateKeySecretRef",
    "crTemplates",
    "crAnnotations",
    "biosConfigRef",
    "clusters",
];
/// A SiteConfig cluster: the generator's Go struct `Clusters`
/// (openshift-kni/cnf-features-deploy@ac7d09f7
/// `ztp/siteconfig-generator/siteConfig/siteConfig.go` L182-217), read
/// with `yaml.Unmarshal` (not strict): `extraManifestPath`,
/// `mergeDefaultMachineConfigs` and the untagged fields yaml.v3 names in
/// lower case are the generator's though the CRD lacks them; what the CRD
/// has and the struct does not is in [`SITE_CONFIG_CRD_ONLY`].
const SITE_CONFIG_CLUSTER: &[&str] = &[
    "clusterName",
    "extraManifestPath",
    "mergeDefaultMachineConfigs",
    "extramanifestonly",
    "nummasters",
    "numworkers",
    "clustertype",
    "manifestsconfigmaprefs",
    "holdInstallation",
    "biosConfigRef",
    "baseDomain",
    "networkType",
    "installConfigOverrides",
    "clusterImageSetNameRef",
    "clusterLabels",
    "siteConfigMap",
    "clusterNetwork",
    "machineNetwork",
    "serviceNetwork",
    "apiVIP",
    "ingressVIP",
    "apiVIPs",
    "ingressVIPs",
    "manifestsConfig",
    "additionalNTPSources",
    "ignitionConfigOverride",
    "proxy",
    "extraManifests",
    "cpuPartitioningMode",
    "diskEncryption",
    "crTemplates",
    "crAnnotations",
    "crSuppression",
    "nodes",
];
/// A SiteConfig node: the Go struct `Nodes` (same file, L457-478), which
/// has `diskPartition` (SNO only) and not the CRD's `hardwareProfile`.
const SITE_CONFIG_NODE: &[&str] = &[
    "hostName",
    "diskPartition",
    "biosConfigRef",
    "bmcAddress",
    "bmcCredentialsName",
    "bootMACAddress",
    "bootMode",
    "automatedCleaningMode",
    "role",
    "cpuset",
    "rootDeviceHints",
    "installerArgs",
    "ignitionConfigOverride",
    "userData",
    "hardwareProfile",
    "crTemplates",
    "crAnnotations",
    "crSuppression",
    "nodeNetwork",
    "nodeLabels",
    "ironicInspect",
];

/// Fields of the SiteConfig CRD the generator's structs do not have: it
/// drops them (`baseDomain` is read from `spec` only).
const SITE_CONFIG_CRD_ONLY: &[(&str, &str)] = &[
    ("baseDomain", "the generator reads `spec.baseDomain` only"),
    ("manifestsConfig", "the generator has no such field"),
    ("hardwareProfile", "the generator has no such field"),
];

/// What becomes of a key the SiteConfig generator does not know.
const GENERATOR_DROPS: &str = "the ZTP SiteConfig generator reads the file with Go's `yaml.Unmarshal`, which drops it without a word";
/// What becomes of a key the ClusterInstance CRD does not have.
const API_SERVER_PRUNES: &str =
    "the API server prunes it (the ClusterInstance CRD has no such field; `kubectl apply` warns)";

/// One cluster per ClusterInstance.
pub(crate) fn load_cluster_instance(root: &Node, diags: &mut Vec<Diagnostic>) -> Vec<Inventory> {
    let mut d = Decoder::new(diags);
    let Some(spec) = spec(&mut d, root, "the ClusterInstance") else {
        return Vec::new();
    };
    d.dropped_fields(
        spec,
        "a ClusterInstance's spec",
        CLUSTER_INSTANCE,
        API_SERVER_PRUNES,
    );
    vec![cluster(
        &mut d,
        root,
        spec,
        None,
        InputKind::ClusterInstance,
    )]
}

/// One cluster per entry of a SiteConfig's `spec.clusters`.
pub(crate) fn load_site_config(root: &Node, diags: &mut Vec<Diagnostic>) -> Vec<Inventory> {
    let mut d = Decoder::new(diags);
    let Some(spec) = spec(&mut d, root, "the SiteConfig") else {
        return Vec::new();
    };
    d.dropped_fields(spec, "a SiteConfig's spec", SITE_CONFIG, GENERATOR_DROPS);
    super::ztp_refusals::site_config(&mut d, root);
    let clusters = d.seq(spec, "clusters");
    if clusters.is_empty() {
        d.push(
            Diagnostic::error(Code::MissingField, "the SiteConfig has no `spec.clusters`")
                .at(spec.get("clusters").map(|c| c.span).unwrap_or(spec.span)),
        );
    }
    let mut out = Vec::new();
    for c in clusters {
        if d.dropped_fields(
            c,
            "a SiteConfig cluster",
            SITE_CONFIG_CLUSTER,
            GENERATOR_DROPS,
        ) {
            crd_only(&mut d, c);
            out.push(cluster(&mut d, root, c, Some(spec), InputKind::SiteConfig));
        }
    }
    out
}

fn spec<'n>(d: &mut Decoder, root: &'n Node, what: &str) -> Option<&'n Node> {
    let spec = root.get("spec").filter(|s| s.as_map().is_some());
    if spec.is_none() {
        d.push(
            Diagnostic::error(Code::MissingField, format!("{what} has no `spec` mapping"))
                .at(root.span),
        );
    }
    spec
}

/// A cluster of a ClusterInstance (`c` is its spec) or of a SiteConfig
/// (`c` is an entry of `spec.clusters`, `site` the SiteConfig's spec,
/// whose fields are the defaults of its clusters).
fn cluster(
    d: &mut Decoder,
    root: &Node,
    c: &Node,
    site: Option<&Node>,
    kind: InputKind,
) -> Inventory {
    let mut inv = Inventory {
        kind: Some(kind),
        kinds: vec![kind],
        ..Inventory::default()
    };
    let field = |k: &str| c.get(k).or_else(|| site.and_then(|s| s.get(k)));
    let cl = &mut inv.cluster;
    cl.span = Some(c.span);
    cl.name = d.string(c, "clusterName");
    if cl.name.is_none() {
        d.push(Diagnostic::error(Code::MissingField, "a cluster without `clusterName`").at(c.span));
    }
    let base_domain = match kind {
        InputKind::SiteConfig => site.and_then(|s| s.get("baseDomain")),
        _ => field("baseDomain"),
    };
    cl.base_domain =
        base_domain.and_then(|v| v.as_str().map(|s| Located::new(s.to_string(), v.span)));
    for n in d.seq(c, "machineNetwork") {
        match n.get("cidr") {
            Some(cidr) => cl.machine_networks.extend(d.network(cidr)),
            None => d.type_error(n, "machineNetwork[]", "a mapping with `cidr`"),
        }
    }
    // The list wins over the older single field it replaced.
    for (list, single, into) in [
        ("apiVIPs", "apiVIP", &mut cl.api_vips),
        ("ingressVIPs", "ingressVIP", &mut cl.ingress_vips),
    ] {
        if let Some(v) = c.get(list).or_else(|| c.get(single)) {
            into.extend(d.ips(v));
        }
    }
    cl.hosts_span = Some(c.get("nodes").map(|n| n.span).unwrap_or(c.span));
    let mut entry = c.clone();
    entry.remove("nodes");
    let mut defaults = site.cloned();
    if let Some(s) = &mut defaults {
        s.remove("clusters");
    }
    let meta = |k: &str| {
        root.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Node::scalar_text)
    };
    cl.ztp = Some(ZtpCluster {
        api_version: root
            .get("apiVersion")
            .and_then(Node::scalar_text)
            .unwrap_or_default(),
        object_name: meta("name"),
        namespace: meta("namespace"),
        entry,
        site: defaults,
    });
    let nodes = d.seq(c, "nodes");
    let (known, drops) = match kind {
        InputKind::SiteConfig => (SITE_CONFIG_NODE, GENERATOR_DROPS),
        _ => (CLUSTER_INSTANCE_NODE, API_SERVER_PRUNES),
    };
    for (i, n) in nodes.iter().enumerate() {
        if d.dropped_fields(n, "a node", known, drops) {
            if kind == InputKind::SiteConfig {
                crd_only(d, n);
            }
            let host = node(d, n, i, kind);
            inv.hosts.push(host);
        }
        d.host = None;
    }
    // A node without a role is a master: the generator's default
    // (siteConfig.go L481-494) and the ClusterInstance CRD's.
    for h in &mut inv.hosts {
        if h.role.value == Role::Unset {
            h.role.value = Role::Master;
        }
    }
    let masters = inv
        .hosts
        .iter()
        .filter(|h| h.role.value == Role::Master)
        .count();
    if kind == InputKind::SiteConfig {
        if masters != 1 {
            disk_partition_needs_sno(d, nodes, masters);
        }
        super::ztp_refusals::site_config_cluster(d, c, site, &inv.hosts);
    } else {
        super::ztp_refusals::cluster_instance(d, c, &inv.hosts);
    }
    inv.cluster.control_plane_replicas = Some(masters as u64);
    inv.cluster.compute_replicas = Some((inv.hosts.len() - masters) as u64);
    inv
}

/// SiteConfig fields of the CRD the generator ignores, each a warning.
fn crd_only(d: &mut Decoder, n: &Node) {
    for (key, why) in SITE_CONFIG_CRD_ONLY {
        if let Some((k, _)) = n.entry(key) {
            d.push(
                Diagnostic::warning(
                    Code::UnknownField,
                    format!(
                        "`{key}` is in the SiteConfig CRD but not read by the ZTP generator: {why}"
                    ),
                )
                .at(k.span),
            );
        }
    }
}

/// The generator partitions disks on a single-node cluster only
/// (siteConfig.go L301-308: "ClusterType must be SNO to do disk
/// partitioning using SiteConfig"), and then emits nothing for the file.
fn disk_partition_needs_sno(d: &mut Decoder, nodes: &[Node], masters: usize) {
    for n in nodes {
        if let Some((k, _)) = n.entry("diskPartition") {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`diskPartition` on a cluster of {masters} masters: the ZTP generator refuses the whole file (\"ClusterType must be SNO to do disk partitioning using SiteConfig\")"),
                )
                .at(k.span)
                .help("partition disks with a MachineConfig on a multi-node cluster, or make the site single-node"),
            );
        }
    }
}

fn node(d: &mut Decoder, n: &Node, i: usize, kind: InputKind) -> Host {
    let name = d
        .required_string(n, "hostName", "a node")
        .unwrap_or_else(|| Located::new(format!("nodes[{i}]"), n.span));
    d.host = Some(name.value.clone());
    let mut host = Host::new(name, kind);
    host.span = n.span;
    host.role = match kind {
        InputKind::SiteConfig => {
            super::ztp_refusals::site_config_node(d, n);
            super::ztp_refusals::site_config_role(d, n)
        }
        _ => super::role(d, n.get("role"), n.span),
    };
    // The credentials Secret lives on the hub: only its name is known.
    if let Some(address) = d.string(n, "bmcAddress") {
        let cred = n
            .get("bmcCredentialsName")
            .and_then(|c| d.string(c, "name"));
        host.bmc = Some(Bmc {
            address,
            credentials: cred,
            disable_certificate_verification: false,
        });
    }
    host.boot_mac = n.get("bootMACAddress").and_then(|m| d.mac(m));
    host.boot_mode = d.string(n, "bootMode");
    host.root_device_hints = n.get("rootDeviceHints").cloned();
    if let Some(labels) = n.get("nodeLabels").and_then(Node::as_map) {
        for (k, v) in labels {
            if let (Some(k), Some(v)) = (k.scalar_text(), v.scalar_text()) {
                host.labels.insert(k, v);
            }
        }
    }
    if let Some(net) = n.get("nodeNetwork") {
        let drops = match kind {
            InputKind::SiteConfig => GENERATOR_DROPS,
            _ => API_SERVER_PRUNES,
        };
        d.dropped_fields(net, "nodeNetwork", &["interfaces", "config"], drops);
        let ifaces = d.seq(net, "interfaces");
        let config_empty = net
            .get("config")
            .is_none_or(|c| c.is_null() || c.as_map().is_some_and(<[_]>::is_empty));
        // The generator leaves out the NMStateConfig of a node whose
        // `interfaces` and `config` are both empty (siteConfigBuilder.go
        // L185-188, its test `Test_nmstateConfig`): the host takes DHCP.
        // The ClusterInstance CRD refuses `interfaces: []` (minItems 1).
        let dhcp = kind == InputKind::SiteConfig && ifaces.is_empty() && config_empty;
        if ifaces.is_empty() && !dhcp {
            d.push(
                Diagnostic::error(
                    Code::InterfaceWithoutMac,
                    "`nodeNetwork` has no `interfaces`: assisted-service finds the host by a MAC of this list and maps the state's names to NICs with it",
                )
                .at(net.get("interfaces").map(|i| i.span).unwrap_or(net.span))
                .help("add `interfaces: [{name: eno1, macAddress: ...}]` naming each NIC the config uses"),
            );
        }
        host.nics = super::agent_config::nic_table(d, ifaces);
        host.nics_listed = !host.nics.is_empty();
        host.network = net.get("config").filter(|c| !c.is_null() && !dhcp).cloned();
    }
    // The generator's `installerArgs` is a string (a JSON list in it);
    // yaml.v3 fails the file on a YAML list (the CRD says array).
    if let Some(args) = n
        .get("installerArgs")
        .filter(|_| kind == InputKind::SiteConfig)
    {
        if args.as_seq().is_some() {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "`installerArgs` is a YAML list: the ZTP generator reads a string and refuses the whole file (yaml.v3: cannot unmarshal !!seq into string)",
                )
                .at(args.span)
                .help("write the list as a JSON string: installerArgs: '[\"--append-karg\", \"nameserver=8.8.8.8\"]'"),
            );
        }
    }
    let mut entry = n.clone();
    entry.remove("nodeNetwork");
    host.ztp = Some(entry);
    host
}

/// The inventory's `cluster.clusterInstance`: the ClusterInstance fields
/// nodenet does not own (`clusterImageSetNameRef`, `pullSecretRef`,
/// `templateRefs`, `extraManifestsRefs`, ...), carried into each site's
/// ClusterInstance as written; those nodenet writes are refused there.
pub(crate) fn base(d: &mut Decoder, given: &Node) -> Option<ZtpCluster> {
    if given.as_map().is_none() {
        d.type_error(given, "cluster.clusterInstance", "a mapping");
        return None;
    }
    d.check_fields(given, "cluster.clusterInstance", CLUSTER_INSTANCE);
    super::refuse_owned(
        d,
        given,
        "cluster.clusterInstance",
        &[
            (&["clusterName"], "cluster.name (a site's name)"),
            (&["baseDomain"], "cluster.baseDomain"),
            (&["machineNetwork"], "cluster.machineNetworks"),
            (&["apiVIPs"], "cluster.apiVIPs"),
            (&["ingressVIPs"], "cluster.ingressVIPs"),
            (&["nodes"], "hosts"),
        ],
    );
    Some(ZtpCluster {
        api_version: String::new(),
        object_name: None,
        namespace: None,
        entry: given.clone(),
        site: None,
    })
}

/// Whether a document is a SiteConfig or a ClusterInstance.
pub(crate) fn kind_of(kind: &str, group: &str) -> Option<InputKind> {
    match (kind, group) {
        ("SiteConfig", "ran.openshift.io") => Some(InputKind::SiteConfig),
        ("ClusterInstance", "siteconfig.open-cluster-management.io") => {
            Some(InputKind::ClusterInstance)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;

//! OpenShift's install-config.yaml: the cluster (machine networks, VIPs,
//! provisioning network, OS image) and `platform.baremetal.hosts`, each
//! with its BMC (password inline, kept as a secret) and `networkConfig`.

use rayon::prelude::*;

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::Node;

/// The fields of openshift-install's `InstallConfig` and of what it holds
/// (pkg/types: installconfig.go, machinepools.go, baremetal/platform.go),
/// as its JSON tags name them.
const TOP: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "additionalTrustBundle",
    "additionalTrustBundlePolicy",
    "sshKey",
    "baseDomain",
    "networking",
    "controlPlane",
    "arbiter",
    "compute",
    "platform",
    "pullSecret",
    "proxy",
    "imageContentSources",
    "imageDigestSources",
    "publish",
    "operatorPublishingStrategy",
    "fips",
    "cpuPartitioningMode",
    "credentialsMode",
    "bootstrapInPlace",
    "capabilities",
    "featureSet",
    "featureGates",
];
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const NETWORKING: &[&str] = &[
    "networkType",
    "machineNetwork",
    "clusterNetwork",
    "serviceNetwork",
    "clusterNetworkMTU",
    "ovnKubernetesConfig",
    // Deprecated, still read.
    "machineCIDR",
    "type",
    "serviceCIDR",
    "clusterNetworks",
];
const CLUSTER_NETWORK: &[&str] = &["cidr", "hostPrefix", "hostSubnetLength"];
const MACHINE_POOL: &[&str] = &[
    "name",
    "replicas",
    "platform",
    "hyperthreading",
    "architecture",
    "fencing",
    "diskSetup",
];
const PLATFORMS: &[&str] = &[
    "aws",
    "azure",
    "baremetal",
    "external",
    "gcp",
    "ibmcloud",
    "none",
    "nutanix",
    "openstack",
    "ovirt",
    "powervs",
    "vsphere",
];
const BAREMETAL: &[&str] = &[
    "libvirtURI",
    "clusterProvisioningIP",
    "provisioningHostIP",
    "bootstrapProvisioningIP",
    "externalBridge",
    "externalMACAddress",
    "provisioningNetwork",
    "provisioningBridge",
    "provisioningMACAddress",
    "provisioningNetworkInterface",
    "provisioningNetworkCIDR",
    "provisioningDHCPExternal",
    "provisioningDHCPRange",
    "hosts",
    "defaultMachinePlatform",
    "apiVIP",
    "apiVIPs",
    "ingressVIP",
    "ingressVIPs",
    "bootstrapOSImage",
    "clusterOSImage",
    "bootstrapExternalStaticIP",
    "bootstrapExternalStaticGateway",
    "bootstrapExternalStaticDNS",
    "loadBalancer",
    "additionalNTPServers",
];
const HOST: &[&str] = &[
    "name",
    "bmc",
    "role",
    "bootMACAddress",
    "hardwareProfile",
    "rootDeviceHints",
    "bootMode",
    "networkConfig",
];
const BMC: &[&str] = &[
    "username",
    "password",
    "address",
    "disableCertificateVerification",
];
/// baremetal's `RootDeviceHints` (install-config and agent-config).
pub const ROOT_DEVICE_HINTS: &[&str] = &[
    "deviceName",
    "hctl",
    "model",
    "vendor",
    "serialNumber",
    "minSizeGigabytes",
    "wwn",
    "wwnWithExtension",
    "wwnVendorExtension",
    "rotational",
];

/// Host fields nodenet reads into its model: the others
/// (`hardwareProfile`) are carried through as given.
const HOST_OWNED: &[&str] = &[
    "name",
    "bmc",
    "role",
    "bootMACAddress",
    "rootDeviceHints",
    "bootMode",
    "networkConfig",
];

/// install-config fields render writes from the inventory's model, with
/// where the inventory says them: in `cluster.installConfig` they are an
/// error (two places for one value), everything else is carried through
/// (and compared by `plan` as carried).
pub const OWNED: &[(&[&str], &str)] = &[
    (&["metadata", "name"], "cluster.name"),
    (&["baseDomain"], "cluster.baseDomain"),
    (&["sshKey"], "cluster.sshKey"),
    (
        &["pullSecret"],
        "the PULL_SECRET environment variable when the rendered install-config is filled in (a secret never goes into the inventory)",
    ),
    (&["networking", "machineNetwork"], "cluster.machineNetworks"),
    (&["networking", "machineCIDR"], "cluster.machineNetworks"),
    (&["platform", "baremetal", "apiVIPs"], "cluster.apiVIPs"),
    (&["platform", "baremetal", "apiVIP"], "cluster.apiVIPs"),
    (&["platform", "baremetal", "ingressVIPs"], "cluster.ingressVIPs"),
    (&["platform", "baremetal", "ingressVIP"], "cluster.ingressVIPs"),
    (
        &["platform", "baremetal", "provisioningNetwork"],
        "cluster.provisioning.network",
    ),
    (
        &["platform", "baremetal", "provisioningNetworkCIDR"],
        "cluster.provisioning.cidr",
    ),
    (
        &["platform", "baremetal", "provisioningNetworkInterface"],
        "cluster.provisioning.interface",
    ),
    (
        &["platform", "baremetal", "clusterOSImage"],
        "cluster.clusterOSImage",
    ),
    (&["platform", "baremetal", "hosts"], "hosts"),
];

/// The inventory's `cluster.installConfig`: install-config fields to
/// carry into the rendered install-config.yaml, read by the installer's
/// field rules; the fields nodenet writes from the inventory are refused
/// there, naming the inventory field that holds them.
pub(crate) fn base(d: &mut Decoder, given: &Node, cluster: &mut Cluster) -> Option<Node> {
    if given.as_map().is_none() {
        d.type_error(given, "cluster.installConfig", "a mapping");
        return None;
    }
    let mut base = given.clone();
    fields(d, &mut base);
    super::refuse_owned(d, &base, "cluster.installConfig", OWNED);
    let (cp, compute) = replicas(&base);
    cluster.control_plane_replicas = cluster.control_plane_replicas.or(cp);
    cluster.compute_replicas = cluster.compute_replicas.or(compute);
    Some(base)
}

/// `controlPlane.replicas` and the `worker` compute pool's.
fn replicas(root: &Node) -> (Option<u64>, Option<u64>) {
    let replicas = |pool: Option<&Node>| {
        pool.and_then(|p| p.get("replicas"))
            .and_then(Node::as_i64)
            .and_then(|n| u64::try_from(n).ok())
    };
    (
        replicas(root.get("controlPlane")),
        replicas(
            root.get("compute")
                .and_then(Node::as_seq)
                .and_then(|pools| {
                    pools
                        .iter()
                        .find(|p| p.get("name").and_then(Node::as_str) == Some("worker"))
                }),
        ),
    )
}

/// The document less `platform.baremetal.hosts` (the hosts stay in
/// `root`): what render carries through.
fn without_hosts(root: &mut Node) -> Node {
    let hosts = root
        .get_mut("platform")
        .and_then(|p| p.get_mut("baremetal"))
        .and_then(|b| b.take("hosts"));
    let mut base = root.clone();
    if let Some(bm) = base
        .get_mut("platform")
        .and_then(|p| p.get_mut("baremetal"))
    {
        bm.remove("hosts");
    }
    if let (Some(hosts), Some(slot)) = (
        hosts,
        root.get_mut("platform")
            .and_then(|p| p.get_mut("baremetal"))
            .and_then(|b| b.get_mut("hosts")),
    ) {
        *slot = hosts;
    }
    base
}

/// A host's entries whose keys nodenet does not read, as a mapping.
fn host_extra(h: &Node) -> Option<Node> {
    let extra: Vec<(Node, Node)> = h
        .as_map()?
        .iter()
        .filter(|(k, _)| !k.as_str().is_some_and(|k| HOST_OWNED.contains(&k)))
        .cloned()
        .collect();
    (!extra.is_empty()).then(|| Node::new(crate::yaml::Value::Map(extra), h.span))
}

/// Every key checked against the field it would fill (see
/// [`Decoder::go_fields`]); keys in another case renamed in place.
fn fields(d: &mut Decoder, root: &mut Node) {
    d.go_fields(root, "install-config.yaml", TOP);
    let at = |d: &mut Decoder, node: Option<&mut Node>, what: &str, known: &[&str]| {
        if let Some(n) = node {
            d.go_fields(n, what, known);
        }
    };
    at(d, root.get_mut("metadata"), "metadata", OBJECT_META);
    at(
        d,
        root.get_mut("proxy"),
        "proxy",
        &["httpProxy", "httpsProxy", "noProxy"],
    );
    at(
        d,
        root.get_mut("capabilities"),
        "capabilities",
        &["baselineCapabilitySet", "additionalEnabledCapabilities"],
    );
    at(
        d,
        root.get_mut("bootstrapInPlace"),
        "bootstrapInPlace",
        &["installationDisk"],
    );
    at(
        d,
        root.get_mut("operatorPublishingStrategy"),
        "operatorPublishingStrategy",
        &["ingress", "apiserver"],
    );
    at(
        d,
        root.get_mut("controlPlane"),
        "controlPlane",
        MACHINE_POOL,
    );
    at(d, root.get_mut("arbiter"), "arbiter", MACHINE_POOL);
    for pool in root.seq_at_mut(&["compute"]).into_iter().flatten() {
        d.go_fields(pool, "compute[]", MACHINE_POOL);
    }
    for (key, known) in [
        ("imageContentSources", &["source", "mirrors"][..]),
        (
            "imageDigestSources",
            &["source", "mirrors", "sourcePolicy"][..],
        ),
    ] {
        for entry in root.seq_at_mut(&[key]).into_iter().flatten() {
            d.go_fields(entry, &format!("{key}[]"), known);
        }
    }
    if let Some(net) = root.get_mut("networking") {
        d.go_fields(net, "networking", NETWORKING);
        for m in net.seq_at_mut(&["machineNetwork"]).into_iter().flatten() {
            d.go_fields(m, "networking.machineNetwork[]", &["cidr"]);
        }
        for c in net.seq_at_mut(&["clusterNetwork"]).into_iter().flatten() {
            d.go_fields(c, "networking.clusterNetwork[]", CLUSTER_NETWORK);
        }
    }
    let Some(platform) = root.get_mut("platform") else {
        return;
    };
    d.go_fields(platform, "platform", PLATFORMS);
    let Some(bm) = platform.get_mut("baremetal") else {
        return;
    };
    d.go_fields(bm, "platform.baremetal", BAREMETAL);
    for h in bm.seq_at_mut(&["hosts"]).into_iter().flatten() {
        d.go_fields(h, "a host", HOST);
        at(d, h.get_mut("bmc"), "bmc", BMC);
        at(
            d,
            h.get_mut("rootDeviceHints"),
            "rootDeviceHints",
            ROOT_DEVICE_HINTS,
        );
    }
}

pub(crate) fn load(root: &mut Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    fields(&mut d, root);
    // Each host's state is moved out of the tree, not copied: a real
    // install-config writes one out for every host.
    let mut networks: Vec<Option<Node>> = root
        .seq_at_mut(&["platform", "baremetal", "hosts"])
        .map(|hosts| hosts.iter_mut().map(|h| h.take("networkConfig")).collect())
        .unwrap_or_default();
    let base = without_hosts(root);
    let root = &*root;
    let mut inv = Inventory::default();
    let c = &mut inv.cluster;
    c.install_config = Some(base);
    c.span = Some(root.span);
    c.name = root.get("metadata").and_then(|m| d.string(m, "name"));
    c.base_domain = d.string(root, "baseDomain");
    if let Some(net) = root.get("networking") {
        for n in d.seq(net, "machineNetwork") {
            if let Some(cidr) = n.get("cidr") {
                c.machine_networks.extend(d.network(cidr));
            }
        }
        for n in d.seq(net, "clusterNetwork") {
            if let Some(cidr) = n.get("cidr") {
                d.network(cidr);
            }
        }
        for n in d.seq(net, "serviceNetwork") {
            d.network(n);
        }
    }
    c.ssh_key = d.string(root, "sshKey").map(|s| s.value);
    (c.control_plane_replicas, c.compute_replicas) = replicas(root);
    let Some(bm) = root.get("platform").and_then(|p| p.get("baremetal")) else {
        return inv;
    };
    // The list wins over the older single field it replaced.
    for key in ["apiVIPs", "apiVIP"] {
        if let Some(v) = bm.get(key) {
            c.api_vips.extend(d.ips(v));
            break;
        }
    }
    for key in ["ingressVIPs", "ingressVIP"] {
        if let Some(v) = bm.get(key) {
            c.ingress_vips.extend(d.ips(v));
            break;
        }
    }
    c.provisioning.network = bm
        .get("provisioningNetwork")
        .and_then(|v| super::provisioning_mode(&mut d, v));
    c.provisioning.cidr = bm.get("provisioningNetworkCIDR").and_then(|v| d.network(v));
    c.provisioning.interface = d.string(bm, "provisioningNetworkInterface");
    c.cluster_os_image = d.string(bm, "clusterOSImage");
    c.hosts_span = Some(bm.get("hosts").map(|h| h.span).unwrap_or(bm.span));
    let items = d.seq(bm, "hosts");
    networks.resize_with(items.len(), || None);
    // Each host on every core (its own findings and credentials), then
    // put together in the file's order.
    let made: Vec<HostLoaded> = items
        .par_iter()
        .zip(networks)
        .enumerate()
        .map(|(i, (h, network))| load_host(i, h, network))
        .collect();
    inv.hosts.reserve(made.len());
    for made in made {
        d.diags.extend(made.diags);
        inv.credentials.extend(made.credentials);
        inv.hosts.extend(made.host);
    }
    inv
}

/// One `platform.baremetal.hosts` item read.
struct HostLoaded {
    host: Option<Host>,
    credentials: std::collections::BTreeMap<String, Located<Credentials>>,
    diags: Vec<Diagnostic>,
}

/// The `i`-th host item `h`, its state (`networkConfig`) moved out of it
/// before.
fn load_host(i: usize, h: &Node, network: Option<Node>) -> HostLoaded {
    let mut diags = Vec::new();
    let mut credentials = std::collections::BTreeMap::new();
    let mut d = Decoder::new(&mut diags);
    let host = if h.as_map().is_none() {
        d.type_error(h, "hosts[]", "a mapping");
        None
    } else {
        let name = d.string(h, "name").unwrap_or_else(|| {
            d.push(Diagnostic::error(Code::MissingField, "host has no `name`").at(h.span));
            Located::new(format!("hosts[{i}]"), h.span)
        });
        d.host = Some(name.value.clone());
        let bmc = h
            .get("bmc")
            .and_then(|b| super::inline_bmc(&mut d, b, "bmc", &name.value, &mut credentials));
        let mut host = Host::new(name, InputKind::InstallConfig);
        host.span = h.span;
        host.role = super::role(&mut d, h.get("role"), h.span);
        host.bmc = bmc;
        host.boot_mac = h.get("bootMACAddress").and_then(|m| d.mac(m));
        host.boot_mode = d.string(h, "bootMode");
        host.root_device_hints = h.get("rootDeviceHints").cloned();
        host.install_config_extra = host_extra(h);
        host.network = network.filter(|n| !n.is_null());
        Some(host)
    };
    HostLoaded {
        host,
        credentials,
        diags,
    }
}

//! The cluster inventory every input format is loaded into.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::yaml::{Node, Span};

/// A value with the place it was written.
/// A `.link` file's pin: the NIC with this MAC is named so.
#[derive(Clone, Debug, PartialEq)]
pub struct PinnedNic {
    /// Upper case, as the NIC table's MACs compare.
    pub mac: String,
    /// The name, located at the file's path in its MachineConfig.
    pub name: Located<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Located<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Located<T> {
    pub fn new(value: T, span: Span) -> Self {
        Located { value, span }
    }
}

/// Which format an input document was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputKind {
    Inventory,
    InstallConfig,
    AgentConfig,
    NmState,
    /// A MachineConfig writing NMState files under `/etc/nmstate`.
    MachineConfig,
    /// kubernetes-nmstate's NodeNetworkConfigurationPolicy.
    Nncp,
    /// The agent installer's / assisted-service's NMStateConfig.
    NmStateConfig,
    /// Metal3's BareMetalHost, with its network Secret.
    BareMetalHost,
    /// The agent installer's AgentClusterInstall (cluster fields only).
    AgentClusterInstall,
    /// The Machine Config Operator's MachineConfiguration (the units its
    /// node disruption policy restarts).
    MachineConfiguration,
    /// GitOps ZTP's ClusterInstance (the SiteConfig operator's): one
    /// cluster of a fleet.
    ClusterInstance,
    /// GitOps ZTP's SiteConfig (v1, v2): clusters of a fleet.
    SiteConfig,
    /// OpenStack `network_data.json` (Ironic, Cluster API Metal3): one host.
    NetworkData,
    /// netplan YAML (Ubuntu servers, cloud-init's network-config v2): one
    /// host.
    Netplan,
    /// Cluster API Metal3's Metal3DataTemplate with the IPPools it draws
    /// addresses from: the hosts its pools hold addresses for.
    Metal3DataTemplate,
    /// `oc adm node-image create`'s nodes-config.yaml: hosts to add to a
    /// cluster the agent installer made.
    NodesConfig,
}

impl InputKind {
    /// Formats whose every cluster is a cluster of its own (a fleet of
    /// sites), not merged with the other inputs.
    pub fn is_site(self) -> bool {
        matches!(self, InputKind::ClusterInstance | InputKind::SiteConfig)
    }

    pub fn describe(self) -> &'static str {
        match self {
            InputKind::Inventory => "nodenet inventory",
            InputKind::InstallConfig => "install-config.yaml",
            InputKind::AgentConfig => "agent-config.yaml",
            InputKind::NmState => "NMState file",
            InputKind::MachineConfig => "MachineConfig",
            InputKind::Nncp => "NodeNetworkConfigurationPolicy",
            InputKind::NmStateConfig => "NMStateConfig",
            InputKind::BareMetalHost => "BareMetalHost",
            InputKind::AgentClusterInstall => "AgentClusterInstall",
            InputKind::MachineConfiguration => "MachineConfiguration",
            InputKind::NetworkData => "network_data.json",
            InputKind::Metal3DataTemplate => "Metal3DataTemplate",
            InputKind::Netplan => "netplan",
            InputKind::ClusterInstance => "ClusterInstance",
            InputKind::SiteConfig => "SiteConfig",
            InputKind::NodesConfig => "nodes-config.yaml",
        }
    }

    /// What a network state of this kind describes.
    pub fn scope(self) -> Scope {
        match self {
            InputKind::NmState | InputKind::MachineConfig | InputKind::Nncp => Scope::Partial,
            _ => Scope::FirstBoot,
        }
    }
}

/// Whether a state is the whole of a host's networking or a change to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything the host has at first boot: profiles not described here
    /// do not exist yet, so a name nothing defines is a mistake.
    FirstBoot,
    /// Applied by nmstate on a running node (a bare state, an NNCP, a
    /// MachineConfig's `/etc/nmstate` file): interfaces it does not name
    /// are left as they are, so they may exist on the node.
    Partial,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProvisioningNetwork {
    #[default]
    Managed,
    Unmanaged,
    Disabled,
}

impl ProvisioningNetwork {
    pub fn as_str(self) -> &'static str {
        match self {
            ProvisioningNetwork::Managed => "Managed",
            ProvisioningNetwork::Unmanaged => "Unmanaged",
            ProvisioningNetwork::Disabled => "Disabled",
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Provisioning {
    pub network: Option<Located<ProvisioningNetwork>>,
    pub cidr: Option<Located<IpNet>>,
    /// Name of the PXE/provisioning NIC on every host (hosts may override).
    pub interface: Option<Located<String>>,
    /// Fuel's escape hatch: the PXE NIC may be in an LACP bond because the
    /// switches do LACP fallback.
    pub allow_lacp: bool,
}

impl Provisioning {
    pub fn mode(&self) -> ProvisioningNetwork {
        self.network.as_ref().map(|n| n.value).unwrap_or_default()
    }
}

#[derive(Clone, Debug, Default)]
pub struct Cluster {
    pub name: Option<Located<String>>,
    pub base_domain: Option<Located<String>>,
    pub machine_networks: Vec<Located<IpNet>>,
    pub api_vips: Vec<Located<IpAddr>>,
    pub ingress_vips: Vec<Located<IpAddr>>,
    pub provisioning: Provisioning,
    pub cluster_os_image: Option<Located<String>>,
    pub ssh_key: Option<String>,
    /// How nodes are named in Kubernetes.
    pub node_names: NodeNames,
    /// The node label whose values are failure domains (rack, switch):
    /// disruptive policies go one node per domain at a time.
    pub failure_domain: Option<Located<String>>,
    /// The IP families (`ipv4`, `ipv6`) whose default route the cluster's
    /// hosts do without (`noDefaultRoute`): a dual-stack cluster needs one
    /// per family unless it says so.
    pub no_default_route: Vec<Located<String>>,
    /// How hosts' states name their NICs unless a host says (`nicBinding`).
    pub nic_binding: Option<Located<crate::nic_binding::NicBinding>>,
    /// NIC names pinned by `.link` files a MachineConfig writes (nodenet's
    /// `nicBinding: pin`, read back): the hosts with those MACs are pinned.
    pub pinned_nics: Vec<PinnedNic>,
    /// Who defines OVN-Kubernetes' external bridge `br-ex` on the nodes.
    pub br_ex: Option<Located<BrExSource>>,
    /// The addresses OVN-Kubernetes puts on br-ex for its masquerade
    /// network (a day-2 state that sets br-ex's addresses must keep them).
    pub ovn_masquerade: Vec<Located<IpNet>>,
    /// The on-node agent (`nodenet-apply.service`) and how it is shipped.
    pub node_agent: Option<NodeAgent>,
    /// install-config's `controlPlane.replicas` and `compute[worker]
    /// .replicas`, when given (an agent install may list no host).
    pub control_plane_replicas: Option<u64>,
    pub compute_replicas: Option<u64>,
    /// install-config.yaml as given, less its hosts (an install-config
    /// input's document, or the inventory's `cluster.installConfig`):
    /// render writes every field nodenet does not own (fips, proxy,
    /// clusterNetwork, ...) back unchanged and in its order.
    pub install_config: Option<Node>,
    /// The same for agent-config.yaml (`additionalNTPSources`, ...).
    pub agent_config: Option<Node>,
    /// Private ranges the cluster's addresses are in behind NAT (a site of
    /// a fleet): other sites may use them too.
    pub behind_nat: Vec<Located<IpNet>>,
    /// A GitOps ZTP site's cluster as given (ClusterInstance spec or
    /// SiteConfig cluster, less its nodes): written back unchanged.
    pub ztp: Option<ZtpCluster>,
    /// Where the cluster fields came from, to locate cluster-wide findings.
    pub span: Option<Span>,
    /// Where an input that lists the cluster's hosts for the installer
    /// (inventory `hosts:`, install-config `platform.baremetal.hosts`)
    /// lists them, or its document when it lists none.
    pub hosts_span: Option<Span>,
}

impl Cluster {
    /// Whether enough is known to render a complete install-config.yaml.
    pub fn is_complete(&self) -> bool {
        self.name.is_some() && self.base_domain.is_some() && !self.machine_networks.is_empty()
    }
}

/// Where a cluster of a ZTP site came from, and its fields as given.
#[derive(Clone, Debug)]
pub struct ZtpCluster {
    /// `ran.openshift.io/v1`, `ran.openshift.io/v2` or
    /// `siteconfig.open-cluster-management.io/v1alpha1`.
    pub api_version: String,
    /// The object's `metadata.name` and `metadata.namespace`.
    pub object_name: Option<String>,
    pub namespace: Option<String>,
    /// The ClusterInstance's spec or the SiteConfig's cluster, less nodes.
    pub entry: Node,
    /// A SiteConfig's spec less its clusters (the site-wide defaults).
    pub site: Option<Node>,
}

/// Who defines `br-ex`, the OVS bridge OVN-Kubernetes needs on every node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrExSource {
    /// RHCOS's `configure-ovs.sh` makes it at boot from the interface that
    /// holds the default route: nodenet writes nothing under
    /// `/etc/nmstate/openshift` and leaves that interface to it.
    ConfigureOvs,
    /// nodenet derives it from the intent (what configure-ovs would do,
    /// done declaratively) and writes it under `/etc/nmstate/openshift`.
    Derive,
    /// The nodes run no OVN-Kubernetes br-ex (not OpenShift nodes): the
    /// intent is theirs whole, nothing goes to `/etc/nmstate/openshift`.
    None,
}

impl BrExSource {
    pub fn as_str(self) -> &'static str {
        match self {
            BrExSource::ConfigureOvs => "configure-ovs",
            BrExSource::Derive => "derive",
            BrExSource::None => "none",
        }
    }
}

/// The OVN-Kubernetes masquerade addresses of br-ex on clusters installed
/// with OpenShift 4.17 or later (169.254.0.0/17 and fd69::/112; older
/// clusters keep 169.254.169.0/29 and fd69::/125: set
/// `cluster.ovnMasquerade` for them).
pub const DEFAULT_OVN_MASQUERADE: [&str; 2] = ["169.254.0.2/17", "fd69::2/112"];

/// How the image that carries the `nodenet` binary reaches the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Layering {
    /// A MachineOSConfig: the Machine Config Operator builds the node
    /// image itself (OpenShift 4.19 GA; 4.16-4.18 Tech Preview).
    #[default]
    OnCluster,
    /// An image built outside from the release's RHCOS image and set as
    /// the pool's `osImageURL` (OpenShift 4.13 and later).
    OutOfCluster,
}

/// `cluster.nodeAgent`: the nodenet agent on every node (the unit
/// `nodenet-apply.service`, the binary by image layering) and how it
/// guards a change.
#[derive(Clone, Debug, Default)]
pub struct NodeAgent {
    /// The image built from `dist/Containerfile` (it holds
    /// `/usr/bin/nodenet`).
    pub image: Option<Located<String>>,
    pub layering: Layering,
    /// On-cluster layering: where the built node image is pushed, and the
    /// Secret that may push there.
    pub rendered_image_push_spec: Option<Located<String>>,
    pub rendered_image_push_secret: Option<Located<String>>,
    pub base_image_pull_secret: Option<Located<String>>,
    /// Out-of-cluster layering: the node image built from the rendered
    /// Containerfile (by digest).
    pub os_image_url: Option<Located<String>>,
    /// NetworkManager checkpoint timeout, seconds.
    pub checkpoint_timeout: Option<Located<u64>>,
    /// How long each probe may take after a change, seconds.
    pub probe_timeout: Option<Located<u64>>,
    /// Probes (the agent's syntax: gateway, dns:NAME, tcp:HOST:PORT, ...).
    pub probes: Vec<Located<String>>,
    pub span: Span,
}

/// How a cluster's nodes are named in Kubernetes: what
/// `kubernetes.io/hostname` selectors must say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NodeNames {
    /// The short host name (what OpenShift sets when DHCP/DNS give none).
    #[default]
    Short,
    /// `<host>.<cluster name>.<base domain>`, or the host name as written
    /// when it has dots.
    Fqdn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Role {
    Master,
    Worker,
    Arbiter,
    #[default]
    Unset,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "master" | "control-plane" => Some(Role::Master),
            "worker" => Some(Role::Worker),
            "arbiter" => Some(Role::Arbiter),
            "" => Some(Role::Unset),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Worker => "worker",
            Role::Arbiter => "arbiter",
            Role::Unset => "",
        }
    }

    /// The MachineConfigPool / NNCP role name a host without a role joins.
    pub fn pool(self) -> &'static str {
        match self {
            Role::Unset => "worker",
            r => r.as_str(),
        }
    }
}

/// A password that never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: String) -> Self {
        Secret(s)
    }

    /// The clear text, for the one place it belongs (the BMC Secret).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Where a BMC password comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum PasswordSource {
    Env(String),
    File(String),
    /// Only from install-config.yaml, which carries passwords inline.
    Inline(Secret),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Credentials {
    pub username: String,
    pub password: PasswordSource,
}

impl Credentials {
    /// The clear password, read from the environment or file it refers to.
    pub fn resolve_password(&self) -> Option<Secret> {
        match &self.password {
            PasswordSource::Env(var) => std::env::var(var).ok().map(Secret),
            PasswordSource::File(path) => std::fs::read_to_string(path)
                .ok()
                .map(|s| Secret(s.trim_end_matches(['\n', '\r']).to_string())),
            PasswordSource::Inline(s) => Some(s.clone()),
        }
    }
}

/// The environment variable a BMC password is written as when it is not
/// written itself (`${VAR}`, to fill with `envsubst`): the one the
/// credentials read it from, else `BMC_PASSWORD_<NAME>`.
pub fn password_var(cred_name: &str, cred: Option<&Credentials>) -> String {
    if let Some(Credentials {
        password: PasswordSource::Env(var),
        ..
    }) = cred
    {
        return var.clone();
    }
    let mut v = String::from("BMC_PASSWORD_");
    v.extend(cred_name.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    v
}

#[derive(Clone, Debug, PartialEq)]
pub struct Bmc {
    pub address: Located<String>,
    /// Name of an entry in [`Inventory::credentials`].
    pub credentials: Option<Located<String>>,
    pub disable_certificate_verification: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Nic {
    pub name: Located<String>,
    pub mac: Option<Located<String>>,
    /// What the NIC's switch port is expected to be (the `nics:` list
    /// form's `switch`, `port`, `vlans`, `native`, `mtu`).
    pub wiring: Wiring,
}

impl Nic {
    pub fn new(name: Located<String>, mac: Option<Located<String>>) -> Nic {
        Nic {
            name,
            mac,
            wiring: Wiring::default(),
        }
    }
}

/// A NIC's expected cabling, as written in the inventory; anything not
/// written is not checked (the wire verification stage derives more from
/// the network intent: the VLANs of a bond on each of its ports, ...).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Wiring {
    /// The switch: its LLDP system name or chassis id.
    pub switch: Option<Located<String>>,
    /// The switch port: its LLDP port id or port description.
    pub port: Option<Located<String>>,
    /// VLANs the switch port must carry tagged.
    pub vlans: Vec<Located<u16>>,
    /// The untagged (native / port) VLAN of the switch port.
    pub native: Option<Located<u16>>,
    /// The MTU the host runs on the NIC: the switch port must carry it.
    pub mtu: Option<Located<u32>>,
}

impl Wiring {
    pub fn is_empty(&self) -> bool {
        self == &Wiring::default()
    }
}

#[derive(Clone, Debug)]
pub struct Host {
    pub name: Located<String>,
    /// The format the host was read from (the first one when several
    /// inputs describe it).
    pub kind: InputKind,
    /// For a partial state that applies to several nodes (an NNCP selecting
    /// by label, a MachineConfig's `cluster.yml`): what it applies to. Its
    /// name is then the policy's, not a host's.
    pub applies_to: Option<String>,
    /// For a change a MachineConfig writes: the file on the node
    /// (`/etc/nmstate/openshift/m0.yml`), whose reader decides what the
    /// state must hold.
    pub written_to: Option<String>,
    /// The host's entry in the input (or its generator / template).
    pub span: Span,
    pub role: Located<Role>,
    pub bmc: Option<Bmc>,
    pub boot_mac: Option<Located<String>>,
    pub boot_mode: Option<Located<String>>,
    pub root_device_hints: Option<Node>,
    /// The host's install-config fields nodenet does not own
    /// (`hardwareProfile`), as given: written back unchanged.
    pub install_config_extra: Option<Node>,
    /// A ZTP site's node entry as given, less its `nodeNetwork`
    /// (`templateRefs`, `installerArgs`, ...): written back unchanged.
    pub ztp: Option<Node>,
    pub nics: Vec<Nic>,
    /// The input lists the host's NICs (not only MACs pinned in its state).
    pub nics_listed: bool,
    /// Network intent as NMState, placeholders already expanded (and its
    /// NICs bound by MAC when `nicBinding: mac` says so).
    pub network: Option<Node>,
    /// The network was read from a format that says less than NMState
    /// (network_data.json, netplan, a Metal3DataTemplate: no disabled
    /// families, fewer options): beside another description of the host
    /// only its static addresses must agree.
    pub projected_network: bool,
    /// The host's own `nicBinding` (else the cluster's).
    pub nic_binding: Option<Located<crate::nic_binding::NicBinding>>,
    /// PXE/provisioning NIC name when it differs from the cluster's.
    pub pxe_interface: Option<Located<String>>,
    /// The interface whose addresses br-ex takes over (what configure-ovs
    /// would move under it), when the intent alone does not tell.
    pub br_ex_uplink: Option<Located<String>>,
    /// Addresses the host draws from pools, by pool name (for reporting).
    pub pool_ips: BTreeMap<String, IpAddr>,
    /// Kubernetes node labels the host carries (failure domains: rack,
    /// switch), as policies select nodes by them.
    pub labels: BTreeMap<String, String>,
    /// For a kubernetes-nmstate policy: its name and node selector.
    pub policy: Option<PolicyRef>,
    /// Values of the host left as written because a placeholder in them
    /// could not be expanded (reported where it failed): findings about
    /// them are consequences of that report, and the state is not what the
    /// template means.
    pub unresolved: Vec<Span>,
}

/// A NodeNetworkConfigurationPolicy's identity and node selector.
#[derive(Clone, Debug)]
pub struct PolicyRef {
    pub name: String,
    pub selector: BTreeMap<String, String>,
    /// Where the selector was written.
    pub span: Span,
    /// `spec.maxUnavailable` as written (a count or a percentage); none
    /// for kubernetes-nmstate's default, 50 %.
    pub max_unavailable: Option<Located<serde_json::Value>>,
}

impl Host {
    /// A host with only its name, read from `kind`; loaders fill in the rest.
    pub fn new(name: Located<String>, kind: InputKind) -> Host {
        Host {
            span: name.span,
            kind,
            applies_to: None,
            written_to: None,
            role: Located::new(Role::Unset, name.span),
            bmc: None,
            boot_mac: None,
            boot_mode: None,
            root_device_hints: None,
            install_config_extra: None,
            ztp: None,
            nics: Vec::new(),
            nics_listed: false,
            network: None,
            projected_network: false,
            nic_binding: None,
            pxe_interface: None,
            br_ex_uplink: None,
            pool_ips: BTreeMap::new(),
            labels: BTreeMap::new(),
            policy: None,
            unresolved: Vec::new(),
            name,
        }
    }

    /// The node labels Kubernetes gives this host: its role's, its node
    /// name's and the inventory's.
    pub fn node_labels(&self, cluster: &Cluster) -> BTreeMap<String, String> {
        let mut labels = self.labels.clone();
        labels.insert(
            format!("node-role.kubernetes.io/{}", self.role.value.pool()),
            String::new(),
        );
        labels.insert("kubernetes.io/hostname".into(), self.node_name(cluster));
        labels
    }

    /// The first DNS label of the host name: what RHCOS matches files
    /// against (`hostname -s`) and what names `/etc/nmstate/openshift/
    /// <host>.yml`.
    pub fn short_name(&self) -> &str {
        short_hostname(&self.name.value)
    }

    /// How this host's NICs are found: its own `nicBinding`, else the
    /// cluster's, else by name.
    pub fn binding(&self, cluster: &Cluster) -> crate::nic_binding::NicBinding {
        self.nic_binding
            .as_ref()
            .or(cluster.nic_binding.as_ref())
            .map(|b| b.value)
            .unwrap_or_default()
    }

    /// The node's name in Kubernetes (`kubernetes.io/hostname`): the short
    /// host name, or the FQDN when the cluster says nodes are named so.
    pub fn node_name(&self, cluster: &Cluster) -> String {
        let name = &self.name.value;
        let short = short_hostname(name);
        match cluster.node_names {
            NodeNames::Short => short.to_string(),
            NodeNames::Fqdn if name.contains('.') => name.clone(),
            NodeNames::Fqdn => match (&cluster.name, &cluster.base_domain) {
                (Some(c), Some(d)) => format!("{short}.{}.{}", c.value, d.value),
                _ => short.to_string(),
            },
        }
    }

    pub fn scope(&self) -> Scope {
        self.kind.scope()
    }

    /// Whether the host's NICs are listed (inventory `nics`, agent-config
    /// or NMStateConfig `interfaces`): only then is a name that is neither
    /// in the state nor a NIC known to be wrong.
    pub fn nics_known(&self) -> bool {
        self.scope() == Scope::FirstBoot && self.nics_listed
    }

    /// MAC of a NIC by interface name: the NIC list first, then an ethernet
    /// interface in the network state that pins `mac-address`.
    pub fn mac_of(&self, iface: &str) -> Option<&Located<String>> {
        if let Some(mac) = self
            .nics
            .iter()
            .find(|n| n.name.value == iface)
            .and_then(|n| n.mac.as_ref())
        {
            return Some(mac);
        }
        None
    }

    pub fn nic_with_mac(&self, mac: &str) -> Option<&Nic> {
        self.nics.iter().find(|n| {
            n.mac
                .as_ref()
                .is_some_and(|m| m.value.eq_ignore_ascii_case(mac))
        })
    }
}

/// What `hostname -s` prints for a host name: everything before the
/// first dot.
pub fn short_hostname(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

#[derive(Clone, Debug, Default)]
pub struct Inventory {
    /// The format of the first input (what a single-file command read).
    pub kind: Option<InputKind>,
    /// The formats of every input, in order of first appearance.
    pub kinds: Vec<InputKind>,
    pub cluster: Cluster,
    pub hosts: Vec<Host>,
    pub credentials: BTreeMap<String, Located<Credentials>>,
    /// agent-config's rendezvousIP.
    pub rendezvous_ip: Option<Located<IpAddr>>,
    /// systemd units the MachineConfigs among the inputs provide.
    pub provided_units: Vec<Located<String>>,
    /// Units a MachineConfiguration's node disruption policy restarts or
    /// reloads.
    pub disruption_units: Vec<Located<String>>,
}

impl Inventory {
    /// A GitOps ZTP site: a ClusterInstance or SiteConfig cluster, or a
    /// cluster of an inventory's `sites` (rendered as a ClusterInstance).
    pub fn is_site(&self) -> bool {
        self.kind.is_some_and(InputKind::is_site) || self.cluster.ztp.is_some()
    }

    /// Names of the credentials some host's BMC uses (a set: an
    /// install-config has one credential per host).
    pub fn used_credentials(&self) -> std::collections::HashSet<&str> {
        self.hosts
            .iter()
            .filter_map(|h| h.bmc.as_ref()?.credentials.as_ref())
            .map(|c| c.value.as_str())
            .collect()
    }
}

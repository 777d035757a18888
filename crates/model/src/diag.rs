//! Diagnostics: every problem nodenet finds, with a stable code and the
//! place in the input it comes from.

use std::sync::Arc;

use serde::Serialize;

use crate::yaml::{FileId, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

macro_rules! codes {
    ($($variant:ident = $text:literal : $doc:literal,)*) => {
        /// Stable diagnostic codes. The text form is the public contract
        /// (JSON output, tests, docs); never rename one.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text,)* }
            }

            /// One-line explanation (docs/codes.md).
            pub fn explain(self) -> &'static str {
                match self { $(Code::$variant => $doc,)* }
            }

            pub fn parse(s: &str) -> Option<Code> {
                match s { $($text => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    // input and structure
    Io = "io": "A file could not be read or written.",
    YamlSyntax = "yaml-syntax": "The file is not valid YAML.",
    UnknownFormat = "unknown-format": "The file is none of: nodenet inventory, install-config.yaml, agent-config.yaml, NMState.",
    UnknownField = "unknown-field": "A field nodenet or nmstate does not know (often a typo).",
    MissingField = "missing-field": "A required field is absent.",
    InvalidValue = "invalid-value": "A field has the wrong type or an impossible value.",
    HostNameInvalid = "host-name-invalid": "A host name is not a DNS-1123 label/subdomain.",
    MacInvalid = "mac-invalid": "A MAC address is not six hex octets.",
    TemplateUnknown = "template-unknown": "A host names a template that does not exist.",
    TemplateVariable = "template-variable": "A `${...}` placeholder names no known value, or its format is no format or runs past what it counts in (the last MAC, the address space).",
    PoolExhausted = "pool-exhausted": "An IP pool has fewer free addresses than the hosts that draw from it.",
    CredentialsUnknown = "credentials-unknown": "A BMC refers to credentials not defined in the inventory.",
    CredentialsUnresolved = "credentials-unresolved": "A BMC password's environment variable or file is not available (a warning: render writes a `${VAR}` placeholder in the BMC Secrets, to fill with envsubst; the baremetal-operator rejects a BMC Secret without a password).",
    // nmstate itself
    NmstateError = "nmstate-error": "nmstate rejected the host's network state.",
    NmstateWarning = "nmstate-warning": "nmstate warned about the host's network state.",
    // per host network
    UnknownInterfaceType = "unknown-interface-type": "An interface `type` nmstate would silently treat as ethernet.",
    InterfaceDuplicate = "interface-duplicate": "The same interface name and type is defined twice (nmstate keeps only the last).",
    VlanBaseMissing = "vlan-base-missing": "A VLAN has no `base-iface`, or its base is not an interface of the host.",
    VlanIdRange = "vlan-id-range": "A VLAN id is outside 1-4094.",
    PortUndefined = "port-undefined": "A bond/bridge port is not an interface of the host.",
    PortMultipleControllers = "port-multiple-controllers": "An interface is a port of two bonds/bridges.",
    BondTooFewPorts = "bond-too-few-ports": "A bond has fewer than two ports.",
    BondOptionMode = "bond-option-mode": "A bond option is not valid for the bond's mode (lacp_rate: 802.3ad only; xmit_hash_policy: 802.3ad, balance-xor, balance-tlb, balance-alb).",
    IpPrefixRange = "ip-prefix-range": "An IPv4 prefix is over 32 or an IPv6 prefix over 128.",
    IpInvalid = "ip-invalid": "A string that should be an IP address (or CIDR) is not one.",
    IpDuplicateOnHost = "ip-duplicate-on-host": "The same IP address is configured twice on one host.",
    RouteInterfaceMissing = "route-interface-missing": "A route's next-hop-interface is absent or not an interface of the host.",
    RouteInterfaceIpDisabled = "route-interface-ip-disabled": "A route uses an interface whose IP family is disabled.",
    RouteNextHopUnreachable = "route-next-hop-unreachable": "A route's next hop is inside no subnet of its (static) interface.",
    MtuExceedsParent = "mtu-exceeds-parent": "A VLAN/port MTU is larger than its parent's.",
    SegmentMtuMismatch = "segment-mtu-mismatch": "Hosts on one L2 segment (the same subnet or VLAN id) run it at different MTUs: frames larger than a neighbour's MTU are dropped (an error on the machine network, a warning elsewhere), at the odd host out.",
    ControlPlaneAtOnce = "control-plane-at-once": "A NodeNetworkConfigurationPolicy that kubernetes-nmstate would enact on two or more control-plane nodes at once (its `maxUnavailable`, 50 % by default, scaled to the inventory's nodes it selects and rounded up): etcd can lose quorum (a warning; fix: `maxUnavailable: 1`).",
    NodeUnknown = "node-unknown": "A NodeNetworkState (`plan --running`) reports a node that no host of the inventory in place is: the export is of another cluster, or the inventory lacks a node the cluster runs.",
    SegmentVlanMismatch = "segment-vlan-mismatch": "One subnet reached over different VLAN ids, or one VLAN id carrying different subnets, across hosts: a host on the wrong VLAN (a warning, at the odd host out).",
    CopyMacFromUnknown = "copy-mac-from-unknown": "`copy-mac-from` names no interface of the host with a known MAC.",
    InterfaceNameTooLong = "interface-name-too-long": "An interface or NIC name is longer than the kernel's 15 characters (a VLAN named `base.id` too): the kernel refuses it, and NetworkManager truncates the names it makes.",
    BootNicDown = "boot-nic-down": "The NIC with the boot MAC is taken down by the host's state (`state: down` or `absent`, or a port of a bond or bridge that is): the node is provisioned through it, then loses it.",
    Dhcpv6Duid = "dhcpv6-duid": "DHCPv6 with a DUID that is not the NIC's MAC (`uuid`, `en`, `stable-*`; nmstate writes `ll` when none is given): not the same in the installer's ramdisk and on the installed node, so a reservation by MAC does not match and the address changes across the install (a warning; fix: `dhcp-duid: ll` or `llt`).",
    Ipv6AddressSources = "ipv6-address-sources": "An interface takes IPv6 addresses from SLAAC, DHCPv6 and a static address at once (a warning: which one becomes the node IP is no longer the inventory's choice).",
    MacBoundByName = "mac-bound-by-name": "A VLAN's parent or a bond's `primary` names a NIC the state binds by MAC (`nicBinding: mac`, `identifier: mac-address`): NetworkManager finds a VLAN's parent, and the kernel a bond's primary, by name, so where the NIC is called otherwise the VLAN does not come up and the bond ignores its primary (a warning; fix: put the VLAN on a bond, or pin the names with `nicBinding: pin`).",
    MacBindingUnsupported = "mac-binding-unsupported": "A host's state binds a NIC by MAC (`identifier: mac-address`, as `nicBinding: mac` writes) and the site installs a release whose nmstate predates 2.2.10 (its image set names OpenShift 4.13 or earlier): that nmstate refuses the whole state as an unknown field (a warning, said once per site; fix: `nicBinding: pin`, or an image set of 4.14 or later).",
    TargetUnsupported = "target-unsupported": "The inventory uses something an output asked for with `render --with` cannot carry (a bridge or Open vSwitch in network_data.json, a NIC without a MAC): an error for that output of that host, located at the intent; the other outputs are still written.",
    // fleet
    DuplicateHostName = "duplicate-host-name": "Two hosts have the same name.",
    DuplicateBootMac = "duplicate-boot-mac": "Two hosts have the same boot MAC (compared case-insensitively).",
    DuplicateMac = "duplicate-mac": "Two hosts have a NIC with the same MAC, or one host's NIC table (MAC map) maps a MAC to two names.",
    DuplicateBmcAddress = "duplicate-bmc-address": "Two hosts have the same BMC address.",
    DuplicateIp = "duplicate-ip": "Two hosts (or a host and a VIP) use the same static IP.",
    IpOutsideMachineNetwork = "ip-outside-machine-network": "A host's static addresses are all outside the machine networks (and it takes none by DHCP): assisted-service's `belongs-to-machine-cidr` never passes. Not under user-managed networking (platform none or external, more than one master).",
    VipIsHostIp = "vip-is-host-ip": "An API/ingress VIP equals a host's IP.",
    BmcIsHostIp = "bmc-is-host-ip": "A host's static address is its own BMC's address: two devices answer for it, and the baremetal-operator reaches the OS or the BMC by chance.",
    NetworkOverlap = "network-overlap": "The cluster's machine, cluster (pod) and service networks overlap (openshift-install and assisted-service refuse it: pod, service and node addresses must be told apart).",
    ClusterNetworkTooSmall = "cluster-network-too-small": "A cluster network's hostPrefix leaves room for fewer node subnets than the cluster has hosts (at least 4), or is longer than /25 (/121 for IPv6): assisted-service refuses it.",
    DualStackHostFamily = "dual-stack-host-family": "On a dual-stack cluster a host has a static address in one family's machine network and no address (static or dynamic) in the other's: assisted-service requires each host in every machine network.",
    ApiVipEqualsIngressVip = "api-vip-equals-ingress-vip": "The API VIP and the ingress VIP are the same address.",
    VipOutsideMachineNetwork = "vip-outside-machine-network": "A VIP is inside no machine network.",
    PxeNicInLacpBond = "pxe-nic-in-lacp-bond": "The PXE/provisioning NIC is a port of an 802.3ad bond while the provisioning network is Managed/Unmanaged (PXE breaks on switches without LACP fallback).",
    BootMacNotOnHost = "boot-mac-not-on-host": "The boot MAC is no NIC of the host.",
    BootMacNotFirstPort = "boot-mac-not-first-port": "The PXE NIC is bonded and the boot MAC is not the MAC of the bond's first port.",
    BmcSchemeUnknown = "bmc-scheme-unknown": "A BMC address has a scheme the baremetal platform does not know.",
    BmcNeedsProvisioningNetwork = "bmc-needs-provisioning-network": "A BMC driver that PXE boots (ipmi, redfish, idrac-redfish, ...) with provisioningNetwork Disabled.",
    OsImageChecksum = "os-image-checksum": "clusterOSImage is not an http(s) URL ending in ?sha256=<64 hex>.",
    RendezvousIpIsWorker = "rendezvous-ip-is-worker": "agent-config's rendezvousIP is a worker's IP.",
    InterfaceWithoutMac = "interface-without-mac": "An agent-config interface has no MAC; an ethernet interface a host's state configures is not in its NIC table (inventory `nics`, the MAC map of agent-config, NMStateConfig, ZTP), has no `identifier: mac-address` and no systemd predictable name (`^en[PsvxXbucaipod]`, assisted-service's rule), for a host whose NICs are listed; or `identifier: mac-address` without a `mac-address`.",
    VipCount = "vip-count": "More than two API or ingress VIPs, or an API VIP without an ingress VIP.",
    VipFamily = "vip-family": "Two API (or ingress) VIPs of one IP family; two VIPs not in the machine networks' order (the primary family, the first machine network's, first: assisted-service and the cluster network operator require it); or on a dual-stack cluster a single VIP not of the primary family, as openshift-install refuses.",
    AddressPrefixMismatch = "address-prefix-mismatch": "A static address inside a machine network has a shorter prefix than it (an error: the node takes addresses outside the cluster for on-link), or a longer one while at least half the host addresses in that network use its prefix (a warning: the hosts off its subnet are reached through a router, or not at all; where none uses it, the network is a routed supernet of per-rack subnets, by design).",
    DefaultRouteMissing = "default-route-missing": "A host with a static address in a machine network of a family has no default route of that family and nothing dynamic (DHCP, SLAAC) to give one: OVN-Kubernetes takes the node's gateway per family from it. `cluster.noDefaultRoute: [ipv6]` says a family needs none.",
    RendezvousIpInvalid = "rendezvous-ip-invalid": "agent-config's rendezvousIP is not of the primary family (the first machine network's), lies inside no machine network, or is no host's address while every master is listed with static addresses only (no host would become the rendezvous host).",
    NoHosts = "no-hosts": "The inputs describe a cluster without hosts (`hosts: []`): a warning from check; render refuses an installer-provisioned one (openshift-install rejects it), and writes an agent install's agent-config.yaml without hosts (the agent installer takes the machines that boot its ISO).",
    BmcMissing = "bmc-missing": "A host for the installer (inventory, install-config) has no `bmc`: its BareMetalHost is never provisioned and installer-provisioned installs reject it (a warning; the agent-based install needs none).",
    RendezvousIpMissing = "rendezvous-ip-missing": "No rendezvousIP is given and no master has a static address, so agent-config.yaml has none (a warning; render refuses when the inputs are for the agent installer, which rejects it).",
    Conflict = "conflict": "Two inputs describe the same host (by name or MAC) and disagree about its role, a MAC, its BMC or its network.",
    DuplicateClusterName = "duplicate-cluster-name": "Two clusters of the fleet (ClusterInstances, SiteConfig clusters) have the same name.",
    SiteFieldNotCarried = "site-field-not-carried": "A SiteConfig field has no ClusterInstance field (`crTemplates`, `biosConfigRef`, `extraManifests`, `cpuset`, ...): the ClusterInstance render writes from it does not carry it; or a site has no SiteConfig v2 form (a dual-stack service network): render writes its ClusterInstance only (a warning).",
    SnoVip = "sno-vip": "A single-node site (one master in a SiteConfig; `clusterType: SNO`, or one master and no worker, in a ClusterInstance) gives API or ingress VIPs: it runs with user-managed networking, under which assisted-service refuses every VIP.",
    PolicyOverlap = "policy-overlap": "Two NodeNetworkConfigurationPolicies that can select the same node name the same interface (each would undo the other).",
    CaptureOnNode = "capture-on-node": "An NNCP's `capture` reads each node's state when it is applied: the parts of desiredState that use it are checked only there (a warning).",
    // OpenShift as its nodes run it
    BrExMissing = "br-ex-missing": "A state for /etc/nmstate/openshift defines no br-ex: RHCOS applies it and marks it applied, configure-ovs.sh then skips, and the node has no br-ex (OVN-Kubernetes cannot start).",
    BrExInvalid = "br-ex-invalid": "br-ex is defined, but not as OpenShift needs it: an ovs-bridge `br-ex` whose ports are the uplink and `br-ex`, an ovs-interface `br-ex` holding the node's addresses (copying the uplink's MAC: a warning otherwise), or br-ex cannot be derived from the intent.",
    RestartUnitMissing = "restart-unit-missing": "A MachineConfiguration's node disruption policy restarts or reloads a unit that no MachineConfig among the inputs provides (the node goes Degraded when the MCO restarts a unit that does not exist).",
    ObjectTooLarge = "object-too-large": "A rendered object, or a MachineConfigPool's MachineConfigs together, would pass etcd's limits (1 MiB kept per object; the MCO merges a pool's MachineConfigs into one).",
    PoolSplit = "pool-split": "A role's MachineConfigs are too large for one pool: its hosts are split into custom MachineConfigPools (a warning that says how nodes join them).",
    InstallConfigScaleOut = "install-config-scale-out": "install-config.yaml would pass 1 MiB (it is stored whole in a ConfigMap): the workers beyond it are left to the scale-out BareMetalHosts (a warning).",
    CidrNotNetwork = "cidr-not-network": "A network CIDR has host bits set (openshift-install: \"invalid network address. got 192.168.56.1/25, expecting 192.168.56.0/25\").",
    FieldCase = "field-case": "A field written in another case than documented: Go's decoder (openshift-install) reads it, a warning to write it as documented.",
    // wire verification: the inventory's expected cabling
    WiringNativeTagged = "wiring-native-tagged": "A NIC's native (untagged) VLAN is also one it carries tagged (its `vlans`, or a VLAN interface the host puts on it): a switch port sends a VLAN either tagged or untagged.",
    WiringMtuBelowIntent = "wiring-mtu-below-intent": "A NIC's `mtu` is smaller than the MTU the host's network runs over it (on the NIC, its bond or a VLAN on top).",
    WiringPortDuplicate = "wiring-port-duplicate": "Two NICs are expected on the same switch port.",
    // wire verification: LLDP observations (`check --observed`)
    LldpNoNeighbor = "lldp-no-neighbor": "A NIC with an expected switch port heard no LLDP frame while `nodenet lldp` listened (unplugged, link down, or the switch sends no LLDP) (a warning).",
    LldpWrongSwitch = "lldp-wrong-switch": "A NIC's LLDP neighbour is another switch than the inventory says.",
    LldpWrongPort = "lldp-wrong-port": "A NIC's LLDP neighbour is another port of its switch than the inventory says (\"looks swapped with NIC X\" when two NICs' neighbours are crossed).",
    LldpVlanMissing = "lldp-vlan-missing": "The switch port does not announce a VLAN the NIC needs (its `vlans`, or a VLAN the host puts on it or on its bond).",
    LldpNativeVlan = "lldp-native-vlan": "The switch port's port VLAN id is not the NIC's `native` VLAN.",
    LldpMtu = "lldp-mtu": "The switch port's maximum frame size is smaller than the MTU the host runs on the NIC.",
    LldpAggregation = "lldp-aggregation": "The ports of an 802.3ad bond are not in one link aggregation on the switch (aggregation off, or different aggregation ids on one switch); a warning when the switch aggregates the ports of a bond of another mode.",
    ObservedInvalid = "observed-invalid": "A `--observed` file is not an observation `nodenet lldp --format json` or `nodenet discover -o` wrote.",
    ObservedMacNotOnHardware = "observed-mac-not-on-hardware": "A NIC MAC of the inventory is none of the NICs the host's BMC lists (a typo, or another machine's NIC).",
    ObservedBootMacNotOnHardware = "observed-boot-mac-not-on-hardware": "The boot MAC is none of the NICs the host's BMC lists: the host would not PXE boot from it, nor be found by it.",
    ObservedMacMissing = "observed-mac-missing": "The inventory lists a NIC without a MAC that the host's BMC can give (`nodenet discover --write` fills it in when only one MAC fits; a warning).",
    ObservedUnmatched = "observed-unmatched": "An observation names a host (by name or NIC MACs) or a cabled NIC the inventory does not have, or misses a NIC the inventory expects on a switch port (a warning).",
    // wire verification: `netverify report`
    NetverifyVlanNotCarried = "netverify-vlan-not-carried": "Probe frames on a planned VLAN did not pass between two NICs that both use it (the switch port of one lacks the VLAN, or the NICs are on different segments).",
    NetverifySilentNic = "netverify-silent-nic": "A NIC heard no probe frame at all and none of its frames was heard (unplugged, link down, or no VLAN in common with anyone).",
    NetverifyOtherSegment = "netverify-other-segment": "A NIC heard probe frames of a VLAN it does not use, or a VLAN's frames with another tag or untagged: cabled into another segment, or the switch port carries more than it should (a warning).",
    NetverifyMtu = "netverify-mtu": "Small probe frames passed between two NICs on a VLAN but full-size ones (the planned MTU) did not: an MTU on the path is smaller.",
    NetverifyNoResult = "netverify-no-result": "A host of the plan has no result among those given to `netverify report`, or ran on a NIC the node does not have (a warning).",
    // NetBox (`netbox:` inputs)
    NetboxUnmapped = "netbox-unmapped": "A NetBox object nodenet cannot map into the inventory (an interface type it does not configure, a LAG member or subinterface parent on another device, a VLAN of another site, a VLAN interface its parent does not carry tagged, a device role that is no cluster role): named, with its page, where the inventory read from NetBox says so.",
    // import
    KeyfileSyntax = "keyfile-syntax": "A NetworkManager keyfile is not in keyfile format (binary, a line outside any group, too large).",
    KeyfileInvalid = "keyfile-invalid": "A keyfile setting has an impossible value (bad address, VLAN without parent or id, unknown type or controller).",
    KeyfileUnmapped = "keyfile-unmapped": "A keyfile setting nodenet does not import into NMState (a warning; an error with --strict).",
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    pub span: Option<Span>,
    pub host: Option<String>,
    pub help: Option<String>,
    /// A second place that explains the first (the other duplicate, ...).
    pub related: Option<(Span, String)>,
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span: None,
            host: None,
            help: None,
            related: None,
        }
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    pub fn at(mut self, span: Span) -> Self {
        self.span = Some(span);
        self
    }

    /// At `span` when there is one.
    pub fn at_opt(mut self, span: Option<Span>) -> Self {
        self.span = span.or(self.span);
        self
    }

    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn related(mut self, span: Span, label: impl Into<String>) -> Self {
        self.related = Some((span, label.into()));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// One input file's text, kept to print snippets.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    /// Byte ranges (offset, len) never shown in a snippet: secrets (BMC
    /// passwords written inline, as install-config does).
    redacted: Vec<(usize, usize)>,
    /// The text with those ranges blanked, made when first shown.
    display: std::sync::OnceLock<String>,
    /// Set for a text carried inside another file (a MachineConfig's
    /// data: URL, a Secret's value): where findings in it are shown.
    pub embedded: Option<Embedding>,
}

impl SourceFile {
    /// The text as it may be shown in a snippet.
    pub fn shown(&self) -> &str {
        if self.redacted.is_empty() {
            return &self.text;
        }
        self.display.get_or_init(|| {
            let mut shown = self.text.clone().into_bytes();
            for &(start, len) in &self.redacted {
                let end = (start + len).min(shown.len());
                for b in &mut shown[start.min(end)..end] {
                    if *b != b'\n' {
                        *b = b'*';
                    }
                }
            }
            // Checked, not copied again (15 MB of install-config): blanked
            // bytes make invalid UTF-8 only where a range cuts a character.
            String::from_utf8(shown)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        })
    }
}

/// Where a text embedded in another file sits in it.
#[derive(Clone, Debug)]
pub struct Embedding {
    /// The value that carries the text.
    pub parent: Span,
    /// What the text is, for messages ("/etc/nmstate/openshift/m0.yml").
    pub label: String,
    /// For a literal block (`|`) the text is the file's own lines: line 1
    /// of the text is line `first_line` of the file, shifted by `indent`
    /// columns. Otherwise findings point at the value and say where in
    /// the embedded text they are.
    pub block: Option<(u32, u32)>,
}

impl Embedding {
    /// Findings inside point at `parent`, naming their line in `label`.
    pub fn relocated(parent: Span, label: impl Into<String>) -> Self {
        Embedding {
            parent,
            label: label.into(),
            block: None,
        }
    }
}

/// All files of one run; spans refer to them by index.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<Arc<SourceFile>>,
}

impl SourceMap {
    pub fn add(&mut self, name: impl Into<String>, text: String) -> FileId {
        self.files.push(Arc::new(SourceFile {
            name: name.into(),
            text,
            redacted: Vec::new(),
            display: std::sync::OnceLock::new(),
            embedded: None,
        }));
        (self.files.len() - 1) as FileId
    }

    /// The span of bytes `offset..offset + len` of file `id` (1-based
    /// line and column in characters), for findings made on a text
    /// rather than read from its nodes.
    pub fn span_of(&self, id: FileId, offset: usize, len: usize) -> Option<Span> {
        let text = &self.get(id)?.text;
        let before = text.get(..offset)?;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Some(Span {
            file: id,
            line: before.matches('\n').count() as u32 + 1,
            column: before[line_start..].chars().count() as u32 + 1,
            offset: offset as u32,
            len: len as u32,
        })
    }

    /// The id of the file called `name`, the first added.
    pub fn find(&self, name: &str) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| f.name == name)
            .map(|i| i as FileId)
    }

    /// Adds a text carried inside another file.
    pub fn add_embedded(&mut self, name: impl Into<String>, text: String, at: Embedding) -> FileId {
        let id = self.add(name, text);
        if let Some(f) = self.files.last_mut().and_then(Arc::get_mut) {
            f.embedded = Some(at);
        }
        id
    }

    /// How the string `value` at `span` embeds its text: line for line
    /// when it is a literal block scalar (`|`, `|-`, `|+`), else
    /// relocated to the value.
    pub fn embedding_of(&self, span: Span, value: &str, label: &str) -> Embedding {
        let relocated = Embedding::relocated(span, label);
        let Some(file) = self.get(span.file) else {
            return relocated;
        };
        // The value's node starts at its first line of content; the line
        // before holds the block header.
        let before = &file.text[..(span.offset as usize).min(file.text.len())];
        let header = before.trim_end().rsplit('\n').next().unwrap_or("");
        let indicator = header.split_whitespace().last().unwrap_or("");
        // An explicit indentation indicator (`|2`) is rare: not mapped.
        if !indicator.starts_with('|') || indicator.chars().any(|c| c.is_ascii_digit()) {
            return relocated;
        }
        let blank_lines = value.len() - value.trim_start_matches('\n').len();
        Embedding {
            block: Some((
                span.line.saturating_sub(blank_lines as u32),
                span.column.saturating_sub(1),
            )),
            ..relocated
        }
    }

    /// Masks byte ranges (offset, len) of a file wherever it is shown.
    pub fn redact(&mut self, id: FileId, ranges: &[(usize, usize)]) {
        let Some(file) = self.files.get_mut(id as usize) else {
            return;
        };
        // Files are redacted while loading, before anyone shares them.
        let file = Arc::make_mut(file);
        file.redacted.extend_from_slice(ranges);
        file.display = std::sync::OnceLock::new();
    }

    pub fn get(&self, id: FileId) -> Option<&Arc<SourceFile>> {
        self.files.get(id as usize)
    }

    pub fn name(&self, id: FileId) -> &str {
        self.get(id).map(|f| f.name.as_str()).unwrap_or("<unknown>")
    }

    pub fn has_embedded(&self) -> bool {
        self.files.iter().any(|f| f.embedded.is_some())
    }

    /// The place in a real file that `span` shows at, and, when the text
    /// there is embedded (a data: URL), where inside it the span is.
    pub fn resolve(&self, span: Span) -> (Span, Option<String>) {
        let mut span = span;
        let mut note: Option<String> = None;
        // Embedded texts may nest (a Secret in a List): a few levels at most.
        for _ in 0..8 {
            let Some(embedding) = self.get(span.file).and_then(|f| f.embedded.as_ref()) else {
                break;
            };
            let parent = embedding.parent;
            match embedding.block {
                Some((first_line, indent)) => {
                    let line = first_line + span.line.saturating_sub(1);
                    let column = indent + span.column;
                    let offset = self
                        .get(parent.file)
                        .and_then(|f| byte_offset(&f.text, line, column))
                        .unwrap_or(parent.offset);
                    span = Span {
                        file: parent.file,
                        line,
                        column,
                        offset,
                        len: span.len,
                    };
                }
                None => {
                    if note.is_none() {
                        note = Some(format!(
                            "in `{}`, line {} column {}",
                            embedding.label, span.line, span.column
                        ));
                    }
                    span = parent;
                }
            }
        }
        (span, note)
    }

    /// Points every finding inside an embedded text at the real file
    /// (its message says where inside the embedded text it is), then
    /// sorts them again.
    pub fn relocate(&self, diags: &mut [Diagnostic]) {
        if !self.has_embedded() {
            return;
        }
        for d in diags.iter_mut() {
            if let Some(span) = d.span {
                let (span, note) = self.resolve(span);
                d.span = Some(span);
                if let Some(note) = note {
                    d.message = format!("{} ({note})", d.message);
                }
            }
            if let Some((span, _)) = &mut d.related {
                *span = self.resolve(*span).0;
            }
        }
        sort(diags);
    }
}

/// Byte offset of 1-based `line` and `column` (in characters) in `text`.
fn byte_offset(text: &str, line: u32, column: u32) -> Option<u32> {
    let start: usize = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line as usize - 2)?.0 + 1
    };
    let rest = &text[start..];
    let col: usize = rest
        .chars()
        .take(column.saturating_sub(1) as usize)
        .map(char::len_utf8)
        .sum();
    Some((start + col) as u32)
}

/// Sorts diagnostics by file and position so output is stable whatever
/// order the (parallel) checks ran in.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        let key = |d: &Diagnostic| {
            d.span
                .map(|s| (s.file, s.line, s.column))
                .unwrap_or((u32::MAX, 0, 0))
        };
        key(a)
            .cmp(&key(b))
            .then(a.code.cmp(&b.code))
            .then_with(|| a.message.cmp(&b.message))
    });
}

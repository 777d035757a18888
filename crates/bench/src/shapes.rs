//! The inputs the benchmark times, in the shapes people have: a nodenet
//! inventory with one template, and what OpenShift users write out host
//! by host — an install-config whose every host carries its own full
//! `networkConfig`, an install-config + agent-config pair, and a directory
//! of per-host scale-out manifests (BareMetalHost + Secrets).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

/// One input shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Native inventory, one template, static addresses from a pool.
    Template,
    /// Native inventory, one template, DHCP: every state equal.
    TemplateDhcp,
    /// install-config.yaml, every host's state written out.
    InstallConfig,
    /// install-config.yaml (cluster) + agent-config.yaml (hosts).
    AgentConfig,
    /// A directory with one BareMetalHost + BMC Secret + network Secret
    /// file per host.
    Manifests,
    /// A GitOps ZTP repository: one single-node ClusterInstance file per
    /// site (bond + VLAN + static address each), a fleet of clusters.
    Sites,
    /// The same fleet from one inventory: `sites:` with a count, each
    /// site's subnet, MACs and BMC from its index.
    SitesTemplate,
    /// Ironic config drives: `<host>/openstack/latest/network_data.json`
    /// per host (bond + VLAN + static address).
    NetworkData,
    /// One netplan file per host (the same network).
    Netplan,
    /// One Cluster API Metal3DataTemplate and its IPPool, preallocating
    /// every host's address by BareMetalHost name.
    Metal3Template,
}

impl Shape {
    pub const ALL: [Shape; 10] = [
        Shape::Template,
        Shape::TemplateDhcp,
        Shape::InstallConfig,
        Shape::AgentConfig,
        Shape::Manifests,
        Shape::Sites,
        Shape::SitesTemplate,
        Shape::NetworkData,
        Shape::Netplan,
        Shape::Metal3Template,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Shape::Template => "inventory template, static addresses",
            Shape::TemplateDhcp => "inventory template, DHCP (equal states)",
            Shape::InstallConfig => "install-config, full networkConfig per host",
            Shape::AgentConfig => "install-config + agent-config, full networkConfig per host",
            Shape::Manifests => "directory of per-host BareMetalHost + Secret manifests",
            Shape::Sites => "directory of single-node ClusterInstances, one site per file",
            Shape::SitesTemplate => "single-node sites from one inventory template",
            Shape::NetworkData => "config drives: a network_data.json per host",
            Shape::Netplan => "a netplan file per host",
            Shape::Metal3Template => "one Metal3DataTemplate + IPPool preallocating every host",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Shape::Template => "template",
            Shape::TemplateDhcp => "template-dhcp",
            Shape::InstallConfig => "install-config",
            Shape::AgentConfig => "agent-config",
            Shape::Manifests => "manifests",
            Shape::Sites => "sites",
            Shape::SitesTemplate => "sites-template",
            Shape::NetworkData => "network-data",
            Shape::Netplan => "netplan",
            Shape::Metal3Template => "metal3",
        }
    }

    /// Writes the input for `n` hosts under `dir`; returns what to give
    /// `nodenet check` / `render`.
    pub fn write(self, n: usize, dir: &Path) -> Result<Vec<PathBuf>> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        let file = |name: &str, text: String| -> Result<PathBuf> {
            let p = dir.join(name);
            std::fs::write(&p, text)?;
            Ok(p)
        };
        Ok(match self {
            Shape::Template => vec![file("cluster.yaml", inventory(n, false))?],
            Shape::TemplateDhcp => vec![file("cluster.yaml", inventory(n, true))?],
            Shape::InstallConfig => vec![
                file("install-config.yaml", install_config(n, true))?,
                file("openshift.yaml", OPENSHIFT.to_string())?,
            ],
            Shape::AgentConfig => vec![
                file("install-config.yaml", install_config(n, false))?,
                file("agent-config.yaml", agent_config(n))?,
            ],
            Shape::Manifests => {
                let hosts = dir.join("manifests");
                std::fs::create_dir_all(&hosts)?;
                for i in 0..n {
                    std::fs::write(hosts.join(format!("{}.yaml", name(i))), manifests(i))?;
                }
                vec![hosts]
            }
            Shape::Sites => {
                let sites = dir.join("sites");
                std::fs::create_dir_all(&sites)?;
                for i in 0..n {
                    std::fs::write(sites.join(format!("site-{i:05}.yaml")), cluster_instance(i))?;
                }
                vec![sites]
            }
            Shape::SitesTemplate => vec![file("fleet.yaml", site_fleet(n))?],
            Shape::NetworkData => {
                let drives = dir.join("config-drives");
                for i in 0..n {
                    let d = drives.join(name(i)).join("openstack/latest");
                    std::fs::create_dir_all(&d)?;
                    std::fs::write(d.join("network_data.json"), network_data(i))?;
                }
                vec![drives]
            }
            Shape::Netplan => {
                let files = dir.join("netplan");
                std::fs::create_dir_all(&files)?;
                for i in 0..n {
                    std::fs::write(files.join(format!("{}.yaml", name(i))), netplan(i))?;
                }
                vec![files]
            }
            Shape::Metal3Template => vec![file("metal3.yaml", metal3_template(n))?],
        })
    }
}

/// What an OpenShift cluster with nodenet's agent adds to an
/// install-config (br-ex derived by nodenet, the node agent shipped): the
/// MachineConfigs and their pools, at fleet scale.
const OPENSHIFT: &str = "nodenet: v1\ncluster:\n  brEx: derive\n  nodeAgent: {image: quay.io/example/nodenet:0.1.0, renderedImagePushSpec: quay.io/example/os-image:nodenet, renderedImagePushSecret: push}\n";

/// A worker template: 802.3ad bond of two 9000-MTU NICs, static address
/// from a pool (or DHCP: then every host has the same state), default
/// route and DNS; MACs and BMC from the index.
pub fn inventory(hosts: usize, dhcp: bool) -> String {
    let ipv4 = if dhcp {
        "{enabled: true, dhcp: true}"
    } else {
        "{enabled: true, dhcp: false, address: [{ip: \"${ip.machine}\", prefix-length: \"${prefix.machine}\"}]}"
    };
    let routes = if dhcp {
        "[]"
    } else {
        "[{destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: bond0}]"
    };
    format!(
        r#"nodenet: v1
cluster:
  name: bench
  baseDomain: example.com
  machineNetworks: [10.0.0.0/8]
  apiVIPs: [10.0.0.5]
  ingressVIPs: [10.0.0.4]
  provisioning: {{network: Disabled}}
  brEx: derive
  nodeAgent: {{image: quay.io/example/nodenet:0.1.0, renderedImagePushSpec: quay.io/example/os-image:nodenet, renderedImagePushSecret: push}}
credentials:
  bmc: {{username: admin, passwordEnv: BENCH_BMC_PASSWORD}}
pools:
  machine: {{range: 10.1.0.1-10.255.255.254, prefix: 8, gateway: 10.0.0.1, dns: [10.0.0.2]}}
templates:
  worker:
    role: worker
    bootMode: UEFI
    bootInterface: ens1f0
    bmc:
      address: redfish-virtualmedia+https://bmc-${{index}}.example.com/redfish/v1/Systems/1
      credentials: bmc
    nics:
      ens1f0: ${{index:mac b8:ce:f6:00:00:00}}
      ens1f1: ${{index:mac b8:ce:f6:80:00:00}}
    network:
      interfaces:
      - {{name: ens1f0, type: ethernet, state: up, mtu: 9000}}
      - {{name: ens1f1, type: ethernet, state: up, mtu: 9000}}
      - name: bond0
        type: bond
        state: up
        mtu: 9000
        link-aggregation:
          mode: 802.3ad
          options: {{miimon: "100", lacp_rate: fast, xmit_hash_policy: layer3+4}}
          port: [ens1f0, ens1f1]
        ipv4: {ipv4}
        ipv6: {{enabled: false}}
      dns-resolver:
        config: {{server: [10.0.0.2]}}
      routes:
        config: {routes}
hosts:
- name: worker-${{index:05}}
  template: worker
  count: {hosts}
"#
    )
}

fn name(i: usize) -> String {
    format!("worker-{i:05}")
}

/// The first three hosts run the control plane (the rendezvous host is one).
fn role(i: usize) -> &'static str {
    if i < 3 {
        "master"
    } else {
        "worker"
    }
}

fn mac(i: usize, nic: usize) -> String {
    format!(
        "b8:ce:f6:{:02x}:{:02x}:{:02x}",
        (i >> 16 & 0x7f) | nic << 7,
        i >> 8 & 0xff,
        i & 0xff
    )
}

fn ip(i: usize) -> String {
    let a = (10 << 24) + (1 << 16) + 10 + i;
    format!(
        "{}.{}.{}.{}",
        a >> 24 & 255,
        a >> 16 & 255,
        a >> 8 & 255,
        a & 255
    )
}

/// A host's state as people write it out: bond of two NICs pinned by MAC,
/// VLAN 110 with the static address, DNS and a default route; each line
/// indented by `indent`.
fn state(i: usize, indent: &str) -> String {
    let (m0, m1, ip) = (mac(i, 0), mac(i, 1), ip(i));
    let text = format!(
        r#"interfaces:
- name: ens1f0
  type: ethernet
  state: up
  mac-address: "{m0}"
  mtu: 9000
- name: ens1f1
  type: ethernet
  state: up
  mac-address: "{m1}"
  mtu: 9000
- name: bond0
  type: bond
  state: up
  mtu: 9000
  link-aggregation:
    mode: 802.3ad
    options:
      miimon: "100"
      lacp_rate: fast
    port:
    - ens1f0
    - ens1f1
  ipv4:
    enabled: false
  ipv6:
    enabled: false
- name: bond0.110
  type: vlan
  state: up
  mtu: 9000
  vlan:
    base-iface: bond0
    id: 110
  ipv4:
    enabled: true
    dhcp: false
    address:
    - ip: {ip}
      prefix-length: 8
  ipv6:
    enabled: false
dns-resolver:
  config:
    server:
    - 10.0.0.2
routes:
  config:
  - destination: 0.0.0.0/0
    next-hop-address: 10.0.0.1
    next-hop-interface: bond0.110
"#
    );
    let mut out = String::with_capacity(text.len() + 60 * indent.len());
    for line in text.lines() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

const CLUSTER: &str = r#"apiVersion: v1
baseDomain: example.com
metadata:
  name: bench
networking:
  machineNetwork:
  - cidr: 10.0.0.0/8
platform:
  baremetal:
    apiVIPs: [10.0.0.5]
    ingressVIPs: [10.0.0.4]
    provisioningNetwork: Disabled
"#;

/// install-config.yaml; with `hosts`, every host under
/// `platform.baremetal.hosts` with its BMC and full `networkConfig`.
pub fn install_config(n: usize, hosts: bool) -> String {
    let mut s = String::from(CLUSTER);
    if !hosts {
        return s;
    }
    s.reserve(n * 1700);
    s.push_str("    hosts:\n");
    for i in 0..n {
        let _ = write!(
            s,
            "    - name: {}\n      role: {}\n      bootMACAddress: \"{}\"\n      bootMode: UEFI\n      bmc:\n        address: redfish-virtualmedia+https://bmc-{i}.example.com/redfish/v1/Systems/1\n        username: admin\n        password: bench-{i}\n      rootDeviceHints:\n        deviceName: /dev/sda\n      networkConfig:\n",
            name(i),
            role(i),
            mac(i, 0)
        );
        s.push_str(&state(i, "        "));
    }
    s
}

/// agent-config.yaml: every host with its NIC table and full state.
pub fn agent_config(n: usize) -> String {
    let mut s = format!(
        "apiVersion: v1beta1\nkind: AgentConfig\nmetadata:\n  name: bench\nrendezvousIP: {}\nhosts:\n",
        ip(0)
    );
    s.reserve(n * 1700);
    for i in 0..n {
        let _ = write!(
            s,
            "- hostname: {}\n  role: {}\n  interfaces:\n  - name: ens1f0\n    macAddress: \"{}\"\n  - name: ens1f1\n    macAddress: \"{}\"\n  networkConfig:\n",
            name(i),
            role(i),
            mac(i, 0),
            mac(i, 1)
        );
        s.push_str(&state(i, "    "));
    }
    s
}

/// One host's scale-out manifests: BMC Secret, network Secret, BareMetalHost.
/// `n` single-node sites from one inventory: each site its own /24, MACs
/// and BMC from its index; the same node state as the other shapes.
pub fn site_fleet(n: usize) -> String {
    let state = r#"      interfaces:
      - {name: ens1f0, type: ethernet, state: up, mtu: 9000}
      - {name: ens1f1, type: ethernet, state: up, mtu: 9000}
      - name: bond0
        type: bond
        state: up
        mtu: 9000
        link-aggregation: {mode: 802.3ad, options: {miimon: "100", lacp_rate: fast}, port: [ens1f0, ens1f1]}
        ipv4: {enabled: false}
        ipv6: {enabled: false}
      - name: bond0.110
        type: vlan
        state: up
        mtu: 9000
        vlan: {base-iface: bond0, id: 110}
        ipv4:
          enabled: true
          dhcp: false
          address: [{ip: "${ip.machine}", prefix-length: "${prefix.machine}"}]
        ipv6: {enabled: false}
      dns-resolver:
        config: {server: "${dns.machine}"}
      routes:
        config:
        - {destination: 0.0.0.0/0, next-hop-address: "${gateway.machine}", next-hop-interface: bond0.110}
"#;
    format!(
        r#"nodenet: v1
cluster:
  baseDomain: ran.example.com
  clusterInstance:
    clusterImageSetNameRef: openshift-4.18
    pullSecretRef: {{name: pull-secret}}
    networkType: OVNKubernetes
    serviceNetwork: [{{cidr: 172.30.0.0/16}}]
templates:
  sno:
    role: master
    bootMode: UEFI
    bootInterface: ens1f0
    bmc:
      address: "redfish-virtualmedia+https://${{site.index:ip 10.200.0.10/32}}/redfish/v1/Systems/1"
    nics:
      ens1f0: "${{site.index:mac b8:ce:f6:00:00:00}}"
      ens1f1: "${{site.index:mac b8:ce:f7:00:00:00}}"
    network:
{state}sites:
- name: site-${{index:05}}
  count: {n}
  cluster:
    machineNetworks: ["${{site.index:net 10.0.0.0/24}}"]
  pools:
    machine:
      range: "${{site.index:ip 10.0.0.10/24}}-${{site.index:ip 10.0.0.10/24}}"
      prefix: 24
      gateway: "${{site.index:ip 10.0.0.1/24}}"
      dns: [10.255.0.2]
  hosts:
  - name: sno-${{site}}.ran.example.com
    template: sno
"#
    )
}

/// A single-node site as its ClusterInstance: the node's MAC map (two
/// NICs) and its state (bond, VLAN 110, static address).
pub fn cluster_instance(i: usize) -> String {
    format!(
        "apiVersion: siteconfig.open-cluster-management.io/v1alpha1\nkind: ClusterInstance\nmetadata:\n  name: site-{i:05}\n  namespace: site-{i:05}\nspec:\n  clusterName: site-{i:05}\n  baseDomain: ran.example.com\n  clusterImageSetNameRef: openshift-4.18\n  pullSecretRef: {{name: pull-secret}}\n  networkType: OVNKubernetes\n  machineNetwork:\n  - cidr: 10.0.0.0/8\n  serviceNetwork:\n  - cidr: 172.30.0.0/16\n  templateRefs:\n  - {{name: ai-cluster-templates-v1, namespace: open-cluster-management}}\n  nodes:\n  - hostName: sno-{i:05}.ran.example.com\n    role: master\n    bmcAddress: redfish-virtualmedia+https://bmc-{i}.example.com/redfish/v1/Systems/1\n    bmcCredentialsName: {{name: site-{i:05}-bmc}}\n    bootMACAddress: \"{m0}\"\n    bootMode: UEFI\n    templateRefs:\n    - {{name: ai-node-templates-v1, namespace: open-cluster-management}}\n    nodeNetwork:\n      interfaces:\n      - {{name: ens1f0, macAddress: \"{m0}\"}}\n      - {{name: ens1f1, macAddress: \"{m1}\"}}\n      config:\n{}",
        state(i, "        "),
        m0 = mac(i, 0),
        m1 = mac(i, 1),
    )
}

pub fn manifests(i: usize) -> String {
    let host = name(i);
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {host}-bmc-secret\n  namespace: openshift-machine-api\ntype: Opaque\nstringData:\n  username: admin\n  password: bench-{i}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {host}-network-config-secret\n  namespace: openshift-machine-api\ntype: Opaque\nstringData:\n  nmstate: |\n{}---\napiVersion: metal3.io/v1alpha1\nkind: BareMetalHost\nmetadata:\n  name: {host}\n  namespace: openshift-machine-api\nspec:\n  online: true\n  bootMACAddress: \"{}\"\n  bootMode: UEFI\n  bmc:\n    address: redfish-virtualmedia+https://bmc-{i}.example.com/redfish/v1/Systems/1\n    credentialsName: {host}-bmc-secret\n  preprovisioningNetworkDataName: {host}-network-config-secret\n",
        state(i, "    "),
        mac(i, 0)
    )
}

/// A host's config-drive network_data.json: two NICs, an 802.3ad bond,
/// VLAN 110 with its address, default route and DNS.
fn network_data(i: usize) -> String {
    let (m0, m1) = (mac(i, 0), mac(i, 1));
    format!(
        r#"{{"links": [
 {{"id": "ens1f0", "type": "phy", "ethernet_mac_address": "{m0}", "mtu": 9000}},
 {{"id": "ens1f1", "type": "phy", "ethernet_mac_address": "{m1}", "mtu": 9000}},
 {{"id": "bond0", "type": "bond", "bond_mode": "802.3ad", "bond_links": ["ens1f0", "ens1f1"], "bond_miimon": 100, "ethernet_mac_address": "{m0}", "mtu": 9000}},
 {{"id": "bond0.110", "type": "vlan", "vlan_link": "bond0", "vlan_id": 110, "vlan_mac_address": "{m0}"}}],
 "networks": [{{"id": "network0", "network_id": "machine", "type": "ipv4", "link": "bond0.110", "ip_address": "{}", "netmask": "255.0.0.0",
   "routes": [{{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "10.0.0.1"}}]}}],
 "services": [{{"type": "dns", "address": "10.0.0.2"}}]}}
"#,
        ip(i)
    )
}

/// The same network as netplan.
fn netplan(i: usize) -> String {
    format!(
        "network:\n  version: 2\n  ethernets:\n    ens1f0: {{match: {{macaddress: \"{}\"}}, set-name: ens1f0, mtu: 9000}}\n    ens1f1: {{match: {{macaddress: \"{}\"}}, set-name: ens1f1, mtu: 9000}}\n  bonds:\n    bond0:\n      interfaces: [ens1f0, ens1f1]\n      mtu: 9000\n      parameters: {{mode: 802.3ad, mii-monitor-interval: 100}}\n  vlans:\n    bond0.110:\n      id: 110\n      link: bond0\n      addresses: [{}/8]\n      routes: [{{to: default, via: 10.0.0.1}}]\n      nameservers: {{addresses: [10.0.0.2]}}\n",
        mac(i, 0),
        mac(i, 1),
        ip(i)
    )
}

/// One template for every host and the pool giving each its address.
fn metal3_template(n: usize) -> String {
    let mut out = String::from(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3DataTemplate\nmetadata: {name: workers}\nspec:\n  clusterName: bench\n  networkData:\n    links:\n      ethernets:\n      - {type: phy, id: ens1f0, mtu: 9000, macAddress: {fromHostInterface: ens1f0}}\n      - {type: phy, id: ens1f1, mtu: 9000, macAddress: {fromHostInterface: ens1f1}}\n      bonds:\n      - {id: bond0, mtu: 9000, bondMode: 802.3ad, bondLinks: [ens1f0, ens1f1], macAddress: {fromHostInterface: ens1f0}, parameters: {miimon: 100}}\n      vlans:\n      - {id: bond0.110, vlanID: 110, vlanLink: bond0, macAddress: {fromHostInterface: ens1f0}}\n    networks:\n      ipv4:\n      - {id: machine, link: bond0.110, ipAddressFromIPPool: machine, routes: [{network: 0.0.0.0, prefix: 0, gateway: {fromIPPool: machine}}]}\n    services: {dns: [10.0.0.2]}\n---\napiVersion: ipam.metal3.io/v1alpha1\nkind: IPPool\nmetadata: {name: machine}\nspec:\n  clusterName: bench\n  namePrefix: bench-machine\n  pools: [{start: 10.0.0.2, end: 10.255.255.254}]\n  prefix: 8\n  gateway: 10.0.0.1\n  preAllocations:\n",
    );
    for i in 0..n {
        let _ = writeln!(out, "    {}-machine: {}", name(i), ip(i));
    }
    out
}

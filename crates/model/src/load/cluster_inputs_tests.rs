//! The loader on real-shaped cluster inputs (`tests/cluster-inputs`, see
//! its README for what each scenario must give): every input kind, alone
//! and mixed, merged into one cluster by host name and MAC.

use std::path::{Path, PathBuf};

use crate::{Code, Host, InputKind, Loaded, Node, PasswordSource, Role, Scope};

fn inputs(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/cluster-inputs")
        .join(rel)
}

fn load(rels: &[&str]) -> Loaded {
    let paths: Vec<PathBuf> = rels.iter().map(|r| inputs(r)).collect();
    crate::load_files(&paths).expect("readable")
}

fn host<'a>(l: &'a Loaded, name: &str) -> &'a Host {
    l.inventory
        .hosts
        .iter()
        .find(|h| h.name.value == name)
        .unwrap_or_else(|| panic!("no host {name}: {:?}", names(l)))
}

fn names(l: &Loaded) -> Vec<String> {
    l.inventory
        .hosts
        .iter()
        .map(|h| h.name.value.clone())
        .collect()
}

/// The first IPv4 address of interface `iface`, and the line it is on.
fn address(h: &Host, iface: &str) -> (String, u32) {
    let ifaces = h.network.as_ref().unwrap().get("interfaces").unwrap();
    let i = ifaces
        .as_seq()
        .unwrap()
        .iter()
        .find(|i| {
            i.get("name").and_then(Node::as_str) == Some(iface)
                && i.get("ipv4").and_then(|v| v.get("address")).is_some()
        })
        .unwrap_or_else(|| panic!("{} has no {iface}", h.name.value));
    let a = &i
        .get("ipv4")
        .unwrap()
        .get("address")
        .unwrap()
        .as_seq()
        .unwrap()[0];
    let ip = a.get("ip").unwrap();
    let prefix = a.get("prefix-length").unwrap().as_i64().unwrap();
    (format!("{}/{prefix}", ip.as_str().unwrap()), ip.span.line)
}

fn errors(l: &Loaded) -> Vec<String> {
    l.diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect()
}

fn file_of(l: &Loaded, span: crate::Span) -> String {
    let (span, _) = l.sources.resolve(span);
    Path::new(l.sources.name(span.file))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn agent_config_v1alpha1_without_kind_is_read_by_its_role() {
    let l = load(&[
        "agent-v1alpha1/install-config.yaml",
        "agent-v1alpha1/agent-config.yaml",
    ]);
    assert!(errors(&l).is_empty(), "{:?}", errors(&l));
    assert_eq!(
        names(&l),
        ["master-0", "master-1", "master-2", "worker-0", "worker-1"]
    );
    assert_eq!(host(&l, "worker-1").role.value, Role::Worker);
    assert_eq!(
        address(host(&l, "master-1"), "bond0.110"),
        ("192.168.111.21/24".into(), 130)
    );
    assert_eq!(
        address(host(&l, "worker-1"), "bond0.120"),
        ("192.168.120.31/24".into(), 365)
    );
    assert_eq!(
        l.inventory
            .rendezvous_ip
            .as_ref()
            .unwrap()
            .value
            .to_string(),
        "192.168.111.20"
    );
    // The cluster comes from install-config, the hosts from agent-config.
    assert_eq!(
        l.inventory.cluster.api_vips[0].value.to_string(),
        "192.168.111.5"
    );
    assert!(l
        .inventory
        .hosts
        .iter()
        .all(|h| h.kind == InputKind::AgentConfig));
}

#[test]
fn install_config_and_agent_config_naming_the_same_hosts_merge() {
    let l = load(&["agent-v1beta1"]);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    assert_eq!(l.inventory.hosts.len(), 5, "{:?}", names(&l));
    let m1 = host(&l, "master-1");
    // The boot MAC (install-config, upper case) is ens1f0's (agent-config).
    assert_eq!(m1.boot_mac.as_ref().unwrap().value, "52:54:00:AA:01:00");
    assert!(m1.nic_with_mac("52:54:00:aa:01:00").is_some());
    assert!(m1.bmc.is_some());
    assert!(m1.nics_listed);
    // The first input's copy is kept: agent-config.yaml comes first in the
    // directory.
    assert_eq!(address(m1, "bond0.110"), ("192.168.111.21/24".into(), 131));
    assert_eq!(
        file_of(&l, m1.network.as_ref().unwrap().span),
        "agent-config.yaml"
    );
}

#[test]
fn one_disagreement_is_one_conflict_naming_both_places() {
    let l = load(&["conflict"]);
    let conflicts: Vec<_> = l
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::Conflict)
        .collect();
    assert_eq!(conflicts.len(), 1, "{:?}", l.diagnostics);
    let c = conflicts[0];
    assert_eq!(c.host.as_deref(), Some("master-2"));
    // agent-config.yaml comes first in the directory: the conflict is at
    // install-config's boot MAC and names agent-config's NIC line.
    let here = c.span.unwrap();
    assert_eq!(
        (file_of(&l, here).as_str(), here.line),
        ("install-config.yaml", 177)
    );
    let (there, _) = c.related.clone().unwrap();
    assert_eq!(
        (file_of(&l, there).as_str(), there.line),
        ("agent-config.yaml", 149)
    );
    assert!(c.message.contains("52:54:00:aa:12:00"), "{}", c.message);
    assert_eq!(l.inventory.hosts.len(), 5);
}

#[test]
fn machine_config_files_are_decoded_and_located_at_their_source() {
    let l = load(&["machineconfig"]);
    assert!(errors(&l).is_empty(), "{:?}", errors(&l));
    assert_eq!(
        names(&l),
        [
            "master-0",
            "master-1",
            "master-2",
            "worker-0",
            "worker-1",
            "11-br-ex-cluster-worker:cluster.yml"
        ]
    );
    for h in &l.inventory.hosts {
        assert_eq!(h.kind, InputKind::MachineConfig);
        assert_eq!(h.scope(), Scope::Partial);
    }
    let m1 = host(&l, "master-1");
    assert_eq!(m1.role.value, Role::Master);
    // Line 49 of the embedded file; in the MachineConfig, its source line.
    let (ip, line) = address(m1, "br-ex");
    assert_eq!((ip.as_str(), line), ("192.168.111.21/24", 49));
    let span = m1.network.as_ref().unwrap().span;
    let (at, note) = l.sources.resolve(span);
    assert_eq!(file_of(&l, at), "10-br-ex-master.yaml");
    assert!(note
        .unwrap()
        .contains("/etc/nmstate/openshift/master-1.yml"));
    // The percent-encoded one decodes to the same state as its source.
    let m2 = host(&l, "master-2");
    let source = std::fs::read_to_string(inputs("machineconfig-sources/master-2.yml")).unwrap();
    let expected = crate::yaml::parse(&source, 0).unwrap();
    assert_eq!(m2.network.as_ref().unwrap().to_json(), expected.to_json());
    let cluster = host(&l, "11-br-ex-cluster-worker:cluster.yml");
    assert_eq!(cluster.role.value, Role::Worker);
    assert!(cluster.applies_to.as_deref().unwrap().contains("worker"));
}

#[test]
fn policies_are_changes_named_after_their_node_or_policy() {
    let l = load(&["nncp"]);
    assert!(errors(&l).is_empty(), "{:?}", errors(&l));
    let mut n = names(&l);
    n.sort();
    assert_eq!(
        n,
        [
            "master-0",
            "master-1",
            "master-2",
            "nncp/lldp-on-bond-ports",
            "nncp/worker-storage-mtu",
            "nncp/worker-vm-bridge"
        ]
    );
    assert!(host(&l, "master-0").applies_to.is_none());
    assert_eq!(
        host(&l, "nncp/lldp-on-bond-ports").applies_to.as_deref(),
        Some("every node")
    );
    let mtu = host(&l, "nncp/worker-storage-mtu");
    assert_eq!(mtu.role.value, Role::Worker);
    // The interface whose addresses come from `capture` is left out, with
    // one warning at `capture:`.
    let state = mtu.network.as_ref().unwrap();
    let ifaces: Vec<&str> = state
        .get("interfaces")
        .unwrap()
        .as_seq()
        .unwrap()
        .iter()
        .filter_map(|i| i.get("name").and_then(Node::as_str))
        .collect();
    assert_eq!(ifaces, ["bond0"]);
    assert!(state.get("routes").is_none());
    let capture: Vec<_> = l
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::CaptureOnNode)
        .collect();
    assert_eq!(capture.len(), 1);
    assert!(
        capture[0].message.contains("bond0.120"),
        "{}",
        capture[0].message
    );
}

#[test]
fn nmstate_configs_are_hosts_known_by_their_macs() {
    let l = load(&["nmstateconfig"]);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    assert_eq!(names(&l), ["master-0", "master-1", "master-2"]);
    let m1 = host(&l, "master-1");
    assert_eq!(m1.kind, InputKind::NmStateConfig);
    assert!(m1.nic_with_mac("52:54:00:aa:01:01").is_some());
    assert_eq!(address(m1, "bond0.110"), ("192.168.111.21/24".into(), 130));
}

#[test]
fn bare_metal_hosts_take_their_network_and_bmc_from_their_secrets() {
    let l = load(&["baremetalhost"]);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    assert_eq!(l.inventory.hosts.len(), 5);
    assert_eq!(host(&l, "master-0").role.value, Role::Master);
    assert_eq!(host(&l, "worker-0").role.value, Role::Unset);
    let w1 = host(&l, "worker-1");
    assert_eq!(w1.boot_mac.as_ref().unwrap().value, "52:54:00:aa:04:00");
    // base64 `data.nmstate`.
    assert_eq!(address(w1, "bond0.110").0, "192.168.111.31/24");
    assert_eq!(address(w1, "bond0.120").0, "192.168.120.31/24");
    let cred = w1.bmc.as_ref().unwrap().credentials.as_ref().unwrap();
    let c = &l.inventory.credentials[&cred.value].value;
    assert_eq!(c.username, "admin");
    let PasswordSource::Inline(pw) = &c.password else {
        panic!("{:?}", c.password)
    };
    assert_eq!(pw.expose(), "fixture-worker-1");
    // The password never shows in a snippet.
    let file = l.sources.get(cred.span.file).unwrap();
    assert!(file.text.contains("Zml4dHVyZS13b3JrZXItMQ=="));
    assert!(!file.shown().contains("Zml4dHVyZS13b3JrZXItMQ=="));
    // A `stringData` block keeps its lines: worker-0's VLAN address is on
    // its own line of worker-0.yaml.
    let w0 = host(&l, "worker-0");
    let (ip, line) = address(w0, "bond0.110");
    let at = l
        .sources
        .resolve(crate::Span {
            line,
            ..w0.network.as_ref().unwrap().span
        })
        .0;
    let text = std::fs::read_to_string(inputs("baremetalhost/worker-0.yaml")).unwrap();
    let shown = text.lines().nth(at.line as usize - 1).unwrap();
    assert!(shown.contains(ip.split('/').next().unwrap()), "{shown}");
}

#[test]
fn a_directory_of_manifests_is_one_cluster() {
    let l = load(&["manifests"]);
    assert!(errors(&l).is_empty(), "{:?}", errors(&l));
    let hosts: Vec<&Host> = l
        .inventory
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .collect();
    assert_eq!(hosts.len(), 6, "{:?}", names(&l));
    assert!(host(&l, "worker-2").bmc.is_some());
    assert_eq!(
        address(host(&l, "worker-2"), "bond0.120").0,
        "192.168.120.32/24"
    );
    // AgentClusterInstall gives the machine network.
    assert_eq!(
        l.inventory.cluster.machine_networks[0].value.to_string(),
        "192.168.111.0/24"
    );
    assert!(host(&l, "nncp/worker-vm-bridge").scope() == Scope::Partial);
}

#[test]
fn nmstate_configs_join_the_agent_config_hosts_by_mac() {
    // The cluster-manifests NMStateConfigs are named ocp4-0..4; their MACs
    // are the agent-config hosts'.
    let l = load(&["agent-v1beta1", "manifests/cluster-manifests"]);
    assert!(errors(&l).is_empty(), "{:?}", errors(&l));
    assert_eq!(
        names(&l),
        ["master-0", "master-1", "master-2", "worker-0", "worker-1"]
    );
    // In the other order the host names still win over the objects'.
    let l = load(&["manifests/cluster-manifests", "agent-v1beta1"]);
    assert!(errors(&l).is_empty(), "{:?}", errors(&l));
    assert_eq!(
        names(&l),
        ["master-0", "master-1", "master-2", "worker-0", "worker-1"]
    );
}

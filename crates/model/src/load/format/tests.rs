use super::*;

#[test]
fn every_kind_is_registered_and_sites_are_the_site_kinds() {
    for kind in [
        InputKind::Inventory,
        InputKind::InstallConfig,
        InputKind::AgentConfig,
        InputKind::NodesConfig,
        InputKind::NmState,
        InputKind::MachineConfig,
        InputKind::Nncp,
        InputKind::NmStateConfig,
        InputKind::AgentClusterInstall,
        InputKind::MachineConfiguration,
        InputKind::NetworkData,
        InputKind::BareMetalHost,
        InputKind::Metal3DataTemplate,
        InputKind::Netplan,
        InputKind::ClusterInstance,
        InputKind::SiteConfig,
    ] {
        assert_eq!(of_kind(kind).kind(), kind);
    }
}

#[test]
fn kindless_files_are_told_most_specific_first() {
    let read = |text: &str, file: &str| {
        let root = crate::yaml::parse(text, 0).unwrap();
        detect(&Probe::new(&root, file)).map(|f| f.kind())
    };
    // Keys of two formats: the install-config's win over an inventory's.
    assert_eq!(
        read("platform: {none: {}}\nhosts: []\ncluster: {}\n", "x.yaml"),
        Some(InputKind::InstallConfig)
    );
    assert_eq!(
        read("hosts: []\ncluster: {}\n", "x.yaml"),
        Some(InputKind::Inventory)
    );
    assert_eq!(read("interfaces: []\n", "x.yaml"), Some(InputKind::NmState));
    // A config drive's metadata is none of them.
    assert_eq!(read("interfaces: []\n", "meta_data.json"), None);
    // A MachineConfig that carries no networking is no input.
    assert_eq!(
        read(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nspec: {}\n",
            "x.yaml"
        ),
        None
    );
}

use super::*;

fn found(text: &str) -> Vec<(String, String)> {
    let l = nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]);
    let mut out = Vec::new();
    for h in &l.inventory.hosts {
        check_host(h, &mut out);
    }
    out.iter()
        .map(|d| (d.code.as_str().to_string(), d.message.clone()))
        .collect()
}

fn host(fields: &str) -> String {
    format!("nodenet: v1\ncluster: {{name: c}}\nhosts:\n- name: w0\n  role: worker\n{fields}")
}

#[test]
fn boot_modes_are_the_enum_with_the_meant_one_suggested() {
    assert!(found(&host("  bootMode: UEFISecureBoot\n")).is_empty());
    assert!(found(&host("  bootMode: legacy\n")).is_empty());
    let f = found(&host("  bootMode: uefi\n"));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "invalid-value");
    let f = found(&host("  bootMode: UEFI-secure\n"));
    assert_eq!(f.len(), 1, "{f:?}");
}

#[test]
fn root_device_hints_have_known_keys_of_their_types() {
    assert!(found(&host(
        "  rootDeviceHints: {deviceName: /dev/sda, minSizeGigabytes: 100, rotational: false}\n"
    ))
    .is_empty());
    let f = found(&host("  rootDeviceHints: {device: /dev/sda}\n"));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "unknown-field");
    let f = found(&host(
        "  rootDeviceHints: {deviceName: sda, minSizeGigabytes: big, rotational: maybe}\n",
    ));
    let codes: Vec<&str> = f.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(codes, ["invalid-value"; 3], "{f:?}");
}

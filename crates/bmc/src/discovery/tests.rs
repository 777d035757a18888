use super::*;
use crate::HardwareNic;

fn inventory(text: &str) -> Inventory {
    nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]).inventory
}

fn hw(host: &str, macs: &[(&str, &str)]) -> Discovery {
    Discovery {
        host: host.into(),
        system: "1".into(),
        nics: macs
            .iter()
            .map(|(id, mac)| HardwareNic {
                id: id.to_string(),
                mac: mac.to_string(),
                link: None,
                speed_mbps: None,
            })
            .collect(),
    }
}

const INV: &str = "nodenet: v1
hosts:
- name: w0
  bootMACAddress: '52:54:00:00:00:09'
  nics: {eno1: '52:54:00:00:00:01', eno2: ''}
- name: w1
  nics: {eno1: '', eno2: ''}
- name: w2
  nics: {eno1: '', eno2: ''}
";

fn codes(f: &Findings) -> Vec<(&str, &str)> {
    f.diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.host.as_deref().unwrap_or("")))
        .collect()
}

#[test]
fn what_the_hardware_says_against_the_inventory() {
    let inv = inventory(INV);
    let f = compare(
        &inv,
        &[
            // eno1 right, eno2 unknown: the one MAC left is eno2's;
            // the boot MAC is on no NIC.
            hw(
                "w0",
                &[("1", "52:54:00:00:00:01"), ("2", "52:54:00:00:00:02")],
            ),
            // Two NICs, two MACs, ids that name no NIC: a guess, so none.
            hw(
                "w1",
                &[("1", "52:54:00:00:01:01"), ("2", "52:54:00:00:01:02")],
            ),
            // Ids that are the NICs' names: both filled.
            hw(
                "w2",
                &[("eno2", "52:54:00:00:02:02"), ("eno1", "52:54:00:00:02:01")],
            ),
            hw("w9", &[]),
        ],
        None,
    );
    assert_eq!(
        f.fills,
        vec![
            Fill {
                host: "w0".into(),
                nic: "eno2".into(),
                mac: "52:54:00:00:00:02".into()
            },
            Fill {
                host: "w2".into(),
                nic: "eno1".into(),
                mac: "52:54:00:00:02:01".into()
            },
            Fill {
                host: "w2".into(),
                nic: "eno2".into(),
                mac: "52:54:00:00:02:02".into()
            },
        ]
    );
    assert_eq!(
        codes(&f),
        vec![
            ("observed-boot-mac-not-on-hardware", "w0"),
            ("observed-mac-missing", "w0"),
            ("observed-mac-missing", "w1"),
            ("observed-mac-missing", "w1"),
            ("observed-mac-missing", "w2"),
            ("observed-mac-missing", "w2"),
            ("observed-unmatched", ""),
        ]
    );
    // A MAC the hardware does not have.
    let wrong = inventory(&INV.replace("52:54:00:00:00:01", "52:54:00:00:00:77"));
    let f = compare(&wrong, &[hw("w0", &[("1", "52:54:00:00:00:01")])], None);
    assert!(
        codes(&f).contains(&("observed-mac-not-on-hardware", "w0")),
        "{:?}",
        codes(&f)
    );
}

#[test]
fn a_saved_discovery_reads_back_and_other_files_are_not_one() {
    let file = DiscoveryFile::new(vec![hw("w0", &[("1", "52:54:00:00:00:01")])]);
    let text = serde_json::to_string(&file).unwrap();
    assert_eq!(DiscoveryFile::from_json(&text), Some(Ok(file)));
    assert!(DiscoveryFile::from_json(r#"{"kind": "nodenet-lldp"}"#).is_none());
}

use super::*;

fn starter() -> Starter {
    Starter {
        name: "ocp".into(),
        base_domain: "example.com".into(),
        masters: 3,
        workers: 2,
        nics: vec!["eno1".into(), "eno2".into()],
        bond: Some("802.3ad".into()),
        vlan: Some(110),
        machine_network: "192.168.111.0/24".parse().unwrap(),
        first_address: Some("192.168.111.20".parse().unwrap()),
        mtu: Some(9000),
    }
}

#[test]
fn every_shape_loads_without_an_error() {
    let shapes = [
        starter(),
        Starter {
            bond: None,
            vlan: None,
            first_address: None,
            mtu: None,
            ..starter()
        },
        Starter {
            masters: 1,
            workers: 0,
            nics: vec!["enp1s0".into()],
            bond: None,
            ..starter()
        },
        Starter {
            vlan: None,
            bond: Some("active-backup".into()),
            ..starter()
        },
    ];
    for s in shapes {
        let text = inventory(&s).unwrap();
        let loaded = crate::load_texts(vec![("cluster.yaml".into(), text.clone())]);
        let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert!(errors.is_empty(), "{s:?}\n{text}\n{errors:#?}");
        assert_eq!(
            loaded.inventory.hosts.len(),
            s.masters + s.workers,
            "{text}"
        );
    }
}

#[test]
fn what_cannot_be_written_is_said() {
    let bad = |f: fn(&mut Starter)| {
        let mut s = starter();
        f(&mut s);
        inventory(&s).unwrap_err()
    };
    assert_eq!(bad(|s| s.masters = 2), StarterError::Masters(2));
    assert_eq!(bad(|s| s.nics.truncate(1)), StarterError::BondNeedsTwo);
    assert_eq!(bad(|s| s.vlan = Some(4095)), StarterError::Vlan(4095));
    assert_eq!(
        bad(|s| s.name = "Big_Name".into()),
        StarterError::Name("Big_Name".into())
    );
    assert!(matches!(
        bad(|s| s.first_address = Some("192.168.111.252".parse().unwrap())),
        StarterError::Addresses { needed: 5, .. }
    ));
}

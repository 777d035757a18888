use super::*;
use crate::lldp::tests_sample;

#[test]
fn a_new_neighbour_keeps_the_old_one_under_others_and_ttl_0_forgets() {
    let mut nic = NicObservation::new("eth0");
    let a = tests_sample();
    let mut b = tests_sample();
    b.port_id.value = "swp9".into();
    nic.heard(a.clone(), 10);
    nic.heard(a.clone(), 20);
    assert_eq!(nic.first_ms, Some(10));
    assert_eq!(nic.neighbor.as_ref(), Some(&a));
    nic.heard(b.clone(), 30);
    assert_eq!(nic.neighbor.as_ref(), Some(&b));
    assert_eq!(nic.others, std::slice::from_ref(&a));
    let mut bye = b.clone();
    bye.ttl = 0;
    nic.heard(bye, 40);
    assert!(nic.neighbor.is_none());
    assert_eq!(nic.frames, 4);
}

#[test]
fn json_round_trip_and_other_files_refused() {
    let mut o = Observation::new("node-a", "listen");
    let mut nic = NicObservation::new("eth0");
    nic.heard(tests_sample(), 5);
    o.nics.push(nic);
    let text = serde_json::to_string_pretty(&o).unwrap();
    assert_eq!(Observation::from_json(&text).unwrap(), o);
    assert!(
        Observation::from_json("{\"kind\":\"nodenet-netverify-result\"}")
            .unwrap_err()
            .contains("not an LLDP observation")
    );
    assert!(Observation::from_json("[]")
        .unwrap_err()
        .contains("no `kind`"));
    assert!(Observation::from_json("nope")
        .unwrap_err()
        .contains("not JSON"));
    let t = o.table();
    assert!(
        t.contains("eth0 -: lab-switch port swp3 (node-b eth0)"),
        "{t}"
    );
    assert!(t.contains("VLANs 110,120"), "{t}");
    assert!(t.contains("max frame 9018 (MTU 9000)"), "{t}");
}

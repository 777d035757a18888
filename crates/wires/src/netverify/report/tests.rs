use super::super::probe::{Heard, NicResult};
use super::super::{plan, PlanOptions, RESULT_KIND, VERSION};
use super::*;

const INV: &str = r#"nodenet: v1
hosts:
- name: a
  nics: [{name: eth0, mac: "52:54:00:00:00:01"}]
  network:
    interfaces:
    - {name: eth0, type: ethernet, mtu: 9000}
    - {name: eth0.110, type: vlan, vlan: {base-iface: eth0, id: 110}}
- name: b
  nics: [{name: eth0, mac: "52:54:00:00:00:02"}]
  network:
    interfaces:
    - {name: eth0, type: ethernet, mtu: 9000}
    - {name: eth0.110, type: vlan, vlan: {base-iface: eth0, id: 110}}
- name: c
  nics: [{name: eth0, mac: "52:54:00:00:00:03"}]
  network:
    interfaces:
    - {name: eth0, type: ethernet, mtu: 9000}
    - {name: eth0.110, type: vlan, vlan: {base-iface: eth0, id: 110}}
"#;

fn inv() -> Inventory {
    crate::test_inventory(INV)
}

/// Results in which everyone hears everyone on VLAN 110 (full-size
/// frames too), but for the (sender, receiver) pairs in `lost` and
/// the full-size frames of `small_only`.
fn results(
    p: &Plan,
    hosts: &[&str],
    lost: &[(&str, &str)],
    small_only: &[(&str, &str)],
) -> Vec<RunResult> {
    hosts
        .iter()
        .map(|me| RunResult {
            kind: RESULT_KIND.into(),
            version: VERSION,
            host: me.to_string(),
            plan: p.clone(),
            window_ms: 1000,
            nics: vec![NicResult {
                name: "eth0".into(),
                interface: Some("eth0".into()),
                mac: None,
                sent: [(110, 10)].into(),
                send_error: None,
                heard: ["a", "b", "c"]
                    .iter()
                    .filter(|s| *s != me && !lost.contains(&(**s, *me)))
                    .map(|s| Heard {
                        host: s.to_string(),
                        nic: "eth0".into(),
                        mac: String::new(),
                        sent_vlan: 110,
                        seen_vlan: 110,
                        frames: 10,
                        full_frames: if small_only.contains(&(*s, *me)) {
                            0
                        } else {
                            5
                        },
                    })
                    .collect(),
            }],
            changed: Vec::new(),
            foreign_frames: 0,
        })
        .collect()
}

fn found(r: &Report) -> Vec<(Code, String)> {
    r.diagnostics
        .iter()
        .map(|d| (d.code, d.message.clone()))
        .collect()
}

#[test]
fn a_full_matrix_is_clean_and_one_lost_direction_is_named_and_located() {
    let p = plan(
        &inv(),
        &PlanOptions {
            mtu: true,
            ..Default::default()
        },
    )
    .unwrap();
    let r = report(&results(&p, &["a", "b", "c"], &[], &[]), &inv()).unwrap();
    assert!(r.diagnostics.is_empty(), "{:?}", found(&r));
    assert_eq!(r.matrix[&Segment::Tagged(110)].score(), (6, 6));
    let r = report(&results(&p, &["a", "b", "c"], &[("a", "c")], &[]), &inv()).unwrap();
    assert_eq!(
        found(&r),
        [(
            Code::NetverifyVlanNotCarried,
            "VLAN 110 does not pass between a eth0 and c eth0 (from a eth0 to c eth0)".to_string()
        )]
    );
    // At a's `id: 110`, with c's as the related place.
    let d = &r.diagnostics[0];
    assert_eq!(d.span.unwrap().line, 8);
    assert_eq!(d.related.as_ref().unwrap().0.line, 20);
    assert_eq!(r.matrix[&Segment::Tagged(110)].score(), (6, 5));
    assert!(
        r.matrix_text().contains("VLAN 110: 5/6 directions pass"),
        "{}",
        r.matrix_text()
    );
}

#[test]
fn silent_nics_missing_results_and_full_size_frames_lost() {
    let p = plan(
        &inv(),
        &PlanOptions {
            mtu: true,
            ..Default::default()
        },
    )
    .unwrap();
    // c heard nobody and nobody heard c; b has no result.
    let rs = results(
        &p,
        &["a", "c"],
        &[("a", "c"), ("c", "a"), ("b", "c")],
        &[("c", "a")],
    );
    let r = report(&rs, &inv()).unwrap();
    let codes: Vec<Code> = r.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [Code::NetverifyNoResult, Code::NetverifySilentNic],
        "{:?}",
        found(&r)
    );
    // Full-size frames from b to a lost, small ones pass.
    let rs = results(&p, &["a", "b", "c"], &[], &[("b", "a")]);
    let r = report(&rs, &inv()).unwrap();
    assert_eq!(
        found(&r),
        [(
            Code::NetverifyMtu,
            "VLAN 110: small frames pass from b eth0 to a eth0 but 9000-byte frames do not"
                .to_string()
        )]
    );
    assert_eq!(
        r.diagnostics[0].span.unwrap().line,
        13,
        "at b's `mtu: 9000`"
    );
    assert!(r.matrix_text().contains(" m"), "{}", r.matrix_text());
}

#[test]
fn results_of_two_plans_are_refused() {
    let p = plan(&inv(), &PlanOptions::default()).unwrap();
    let q = plan(
        &inv(),
        &PlanOptions {
            all_vlans: true,
            rate: 10,
            ..Default::default()
        },
    )
    .unwrap();
    let mut rs = results(&p, &["a"], &[], &[]);
    rs.extend(results(&q, &["b"], &[], &[]));
    assert!(report(&rs, &inv())
        .err()
        .unwrap()
        .contains("give the results of one plan"));
    assert!(report(&[], &inv()).is_err());
}

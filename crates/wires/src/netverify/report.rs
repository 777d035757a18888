//! `nodenet netverify report`: the nodes' results merged into a matrix per
//! VLAN (who heard whom) and findings located at the inventory lines that
//! plan each VLAN.

use std::collections::{BTreeMap, BTreeSet};

use nodenet_check::wiring;
use nodenet_model::{Code, Diagnostic, Inventory, Span};

use super::probe::RunResult;
use super::{Plan, PlanNic};

/// A NIC of the fleet: (host, plan NIC name).
type NicKey = (String, String);

/// A segment probed: a tagged VLAN, or the untagged frames of NICs with
/// one native VLAN (`None`: not stated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Segment {
    Tagged(u16),
    Untagged(Option<u16>),
}

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Segment::Tagged(v) => write!(f, "VLAN {v}"),
            Segment::Untagged(Some(v)) => write!(f, "untagged (native VLAN {v})"),
            Segment::Untagged(None) => f.write_str("untagged"),
        }
    }
}

/// The merged results.
pub struct Report {
    pub plan: Plan,
    /// Per segment: its planned NICs and, per (sender, receiver), whether
    /// small and full-size frames passed.
    pub matrix: BTreeMap<Segment, SegmentResult>,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Default)]
pub struct SegmentResult {
    pub nics: Vec<NicKey>,
    /// (sender, receiver) -> (small frames heard, full-size frames heard
    /// when the pair tests them)
    pub heard: BTreeMap<(NicKey, NicKey), (bool, Option<bool>)>,
}

impl SegmentResult {
    /// Pairs expected and pairs that passed (both directions count).
    pub fn score(&self) -> (usize, usize) {
        let mut total = 0;
        let mut ok = 0;
        for a in &self.nics {
            for b in &self.nics {
                if a != b {
                    total += 1;
                    if self.heard.get(&(a.clone(), b.clone())).is_some_and(|h| h.0) {
                        ok += 1;
                    }
                }
            }
        }
        (total, ok)
    }
}

fn segments_of(n: &PlanNic) -> Vec<Segment> {
    let mut s: Vec<Segment> = n.vlans.iter().map(|v| Segment::Tagged(*v)).collect();
    if n.untagged {
        s.push(Segment::Untagged(n.native));
    }
    s
}

/// Each planned NIC's expectations, worked out once, to locate findings:
/// a segment at the VLAN's (or native VLAN's) line, else the NIC's.
struct Places(BTreeMap<NicKey, wiring::Expected>);

impl Places {
    fn of(inv: &Inventory, plan: &Plan) -> Places {
        let mut map = BTreeMap::new();
        for ph in &plan.hosts {
            if let Some(h) = inv.hosts.iter().find(|h| h.name.value == ph.name) {
                for e in wiring::expected(h) {
                    map.insert((ph.name.clone(), e.nic.clone()), e);
                }
            }
        }
        Places(map)
    }

    fn segment(&self, host: &str, nic: &str, seg: Segment) -> Option<Span> {
        let e = self.0.get(&(host.to_string(), nic.to_string()))?;
        let span = match seg {
            Segment::Tagged(v) => e.vlans.iter().find(|x| x.id == v).map(|x| x.span),
            Segment::Untagged(_) => e.native.as_ref().map(|n| n.span),
        };
        Some(span.unwrap_or(e.span))
    }

    fn mtu(&self, host: &str, nic: &str) -> Option<Span> {
        let e = self.0.get(&(host.to_string(), nic.to_string()))?;
        Some(e.mtu.as_ref().map(|m| m.span).unwrap_or(e.span))
    }
}

/// Merges the results (all of one plan) into a report; `inv` locates the
/// findings.
pub fn report(results: &[RunResult], inv: &Inventory) -> Result<Report, String> {
    let Some(first) = results.first() else {
        return Err("no result given".into());
    };
    let plan = first.plan.clone();
    for r in results {
        if r.plan.run != plan.run {
            return Err(format!(
                "the result of {} is of run {}, the result of {} of run {}: give the results of one plan",
                first.host, plan.run, r.host, r.plan.run
            ));
        }
    }
    let places = Places::of(inv, &plan);
    let mut diagnostics = Vec::new();
    let by_host: BTreeMap<&str, &RunResult> =
        results.iter().map(|r| (r.host.as_str(), r)).collect();
    // NICs that ran: in a result, and present on their node.
    let mut ran: BTreeSet<NicKey> = BTreeSet::new();
    for h in &plan.hosts {
        match by_host.get(h.name.as_str()) {
            None => diagnostics.push(
                with_location(
                    Diagnostic::warning(
                        Code::NetverifyNoResult,
                        format!("{}: no result: its pairs are not tested", h.name),
                    ),
                    inv.hosts
                        .iter()
                        .find(|x| x.name.value == h.name)
                        .map(|x| x.span),
                )
                .host(&h.name),
            ),
            Some(r) => {
                for n in &r.nics {
                    if n.interface.is_none() {
                        diagnostics.push(
                            with_location(
                                Diagnostic::warning(
                                    Code::NetverifyNoResult,
                                    format!("{}: NIC {} is not on the node (no interface with its MAC or name)", h.name, n.name),
                                ),
                                places.segment(&h.name, &n.name, Segment::Untagged(None)),
                            )
                            .host(&h.name),
                        );
                    } else {
                        ran.insert((h.name.clone(), n.name.clone()));
                    }
                }
            }
        }
    }
    // Everything heard: (sender, receiver, sent VLAN) -> (seen VLAN, full).
    let mut heard: BTreeMap<(NicKey, NicKey, u16), (u16, bool)> = BTreeMap::new();
    for r in results {
        for n in &r.nics {
            for h in &n.heard {
                let e = heard
                    .entry((
                        (h.host.clone(), h.nic.clone()),
                        (r.host.clone(), n.name.clone()),
                        h.sent_vlan,
                    ))
                    .or_insert((h.seen_vlan, false));
                e.1 |= h.full_frames > 0;
            }
        }
    }
    let planned: BTreeMap<NicKey, &PlanNic> = plan
        .hosts
        .iter()
        .flat_map(|h| {
            h.nics
                .iter()
                .map(move |n| ((h.name.clone(), n.name.clone()), n))
        })
        .collect();
    // A NIC that heard nothing and was heard by no one.
    let heard_or_heard_of: BTreeSet<&NicKey> = heard.keys().flat_map(|(s, r, _)| [s, r]).collect();
    let silent: BTreeSet<NicKey> = ran
        .iter()
        .filter(|k| !heard_or_heard_of.contains(k))
        .cloned()
        .collect();
    for (h, n) in &silent {
        diagnostics.push(
            with_location(
                Diagnostic::error(
                    Code::NetverifySilentNic,
                    format!("{h}: NIC {n} heard no probe frame and none of its frames was heard"),
                ),
                places.segment(h, n, Segment::Untagged(None)),
            )
            .host(h)
            .help("unplugged, no link, or no VLAN in common with another NIC"),
        );
    }
    let mut matrix: BTreeMap<Segment, SegmentResult> = BTreeMap::new();
    for (key, n) in &planned {
        if !ran.contains(key) {
            continue;
        }
        for seg in segments_of(n) {
            matrix.entry(seg).or_default().nics.push(key.clone());
        }
    }
    for (seg, sr) in matrix.iter_mut() {
        let vlan = match seg {
            Segment::Tagged(v) => *v,
            Segment::Untagged(_) => 0,
        };
        for a in &sr.nics {
            for b in &sr.nics {
                if a == b {
                    continue;
                }
                let got = heard.get(&(a.clone(), b.clone(), vlan));
                // An untagged segment passes when the frame arrives
                // untagged; a tagged one when it arrives with its tag.
                let ok = got.is_some_and(|(seen, _)| *seen == vlan);
                // Full-size frames of a sender whose MTU the receiver also
                // runs (a larger one could never arrive).
                let tested = match (planned[a].mtu, planned[b].mtu) {
                    (Some(ma), Some(mb)) => plan.mtu && ma <= mb,
                    _ => false,
                };
                let full = tested.then(|| got.is_some_and(|g| ok && g.1));
                sr.heard.insert((a.clone(), b.clone()), (ok, full));
            }
        }
        // Findings per unordered pair, skipping silent NICs (said once).
        for (i, a) in sr.nics.iter().enumerate() {
            for b in &sr.nics[i + 1..] {
                if silent.contains(a) || silent.contains(b) {
                    continue;
                }
                let ab = sr.heard[&(a.clone(), b.clone())];
                let ba = sr.heard[&(b.clone(), a.clone())];
                let who = |k: &NicKey| format!("{} {}", k.0, k.1);
                if !ab.0 || !ba.0 {
                    let how = match (ab.0, ba.0) {
                        (false, false) => "in either direction".to_string(),
                        (true, false) => format!("from {} to {}", who(b), who(a)),
                        _ => format!("from {} to {}", who(a), who(b)),
                    };
                    let here = places.segment(&a.0, &a.1, *seg);
                    let there = places.segment(&b.0, &b.1, *seg);
                    let mut d = with_location(
                        Diagnostic::error(
                            Code::NetverifyVlanNotCarried,
                            format!(
                                "{seg} does not pass between {} and {} ({how})",
                                who(a),
                                who(b)
                            ),
                        ),
                        here,
                    )
                    .host(&a.0);
                    if let Some(s) = there {
                        d = d.related(s, format!("{} plans it here", who(b)));
                    }
                    diagnostics.push(d);
                } else {
                    for (s, r, got) in [(a, b, ab.1), (b, a, ba.1)] {
                        if got == Some(false) {
                            let m = planned[s].mtu.unwrap_or_default();
                            diagnostics.push(
                                with_location(
                                    Diagnostic::error(
                                        Code::NetverifyMtu,
                                        format!(
                                            "{seg}: small frames pass from {} to {} but {m}-byte frames do not",
                                            who(s),
                                            who(r)
                                        ),
                                    ),
                                    places.mtu(&s.0, &s.1),
                                )
                                .host(&s.0)
                                .help("a switch port or NIC on the path has a smaller MTU"),
                            );
                        }
                    }
                }
            }
        }
    }
    // Heard on a segment the receiver does not plan: wrong cable, or a
    // switch port carrying more than it should.
    let mut told: BTreeSet<(NicKey, u16, u16)> = BTreeSet::new();
    for ((sender, receiver, sent), (seen, _)) in &heard {
        let Some(rn) = planned.get(receiver) else {
            continue;
        };
        let plans = |v: u16| {
            if v == 0 {
                rn.untagged
            } else {
                rn.vlans.contains(&v)
            }
        };
        let odd_tag = *seen != *sent;
        // Untagged frames between NICs that send nothing untagged of their
        // own are the native VLAN doing its job: no finding.
        let plain_untagged = *sent == 0 && *seen == 0;
        if plain_untagged
            || (plans(*sent) && !odd_tag)
            || !told.insert((receiver.clone(), *sent, *seen))
        {
            continue;
        }
        let what = match (*sent, *seen) {
            (0, 0) => "untagged frames".to_string(),
            (s, x) if s == x => format!("VLAN {s}"),
            (0, x) => format!("untagged frames as VLAN {x}"),
            (s, 0) => format!("VLAN {s} frames untagged (the port's native VLAN?)"),
            (s, x) => format!("VLAN {s} frames as VLAN {x}"),
        };
        diagnostics.push(
            with_location(
                Diagnostic::warning(
                    Code::NetverifyOtherSegment,
                    format!(
                        "{}: NIC {} hears {what} from {} {}, which it does not plan",
                        receiver.0, receiver.1, sender.0, sender.1
                    ),
                ),
                places.segment(&receiver.0, &receiver.1, Segment::Untagged(None)),
            )
            .host(&receiver.0),
        );
    }
    nodenet_model::diag::sort(&mut diagnostics);
    Ok(Report {
        plan,
        matrix,
        diagnostics,
    })
}

fn with_location(d: Diagnostic, span: Option<Span>) -> Diagnostic {
    match span {
        Some(s) => d.at(s),
        None => d,
    }
}

impl Report {
    /// The matrix, one block per segment: a row per sender, a column per
    /// receiver; `+` heard, `-` not heard, `.` itself; `m` small frames
    /// only, where full-size frames were tested.
    pub fn matrix_text(&self) -> String {
        let mut out = String::new();
        for (seg, sr) in &self.matrix {
            let (total, ok) = sr.score();
            out.push_str(&format!("{seg}: {ok}/{total} directions pass\n"));
            if sr.nics.len() < 2 {
                out.push_str("  (one NIC plans it: nothing to pair)\n");
                continue;
            }
            let label = |k: &NicKey| format!("{}/{}", k.0, k.1);
            let w = sr.nics.iter().map(|k| label(k).len()).max().unwrap_or(4);
            out.push_str(&format!("  {:w$}  ", "from \\ to"));
            for (i, _) in sr.nics.iter().enumerate() {
                out.push_str(&format!("{:>3}", i + 1));
            }
            out.push('\n');
            for (i, a) in sr.nics.iter().enumerate() {
                out.push_str(&format!("  {:w$} {:>2}", label(a), i + 1));
                for b in &sr.nics {
                    let c = if a == b {
                        '.'
                    } else {
                        match sr.heard.get(&(a.clone(), b.clone())) {
                            Some((true, Some(false))) => 'm',
                            Some((true, _)) => '+',
                            _ => '-',
                        }
                    };
                    out.push_str(&format!("{c:>3}"));
                }
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
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
                "VLAN 110 does not pass between a eth0 and c eth0 (from a eth0 to c eth0)"
                    .to_string()
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
}

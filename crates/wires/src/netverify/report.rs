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

/// Everything heard: (sender, receiver, sent VLAN) -> (seen VLAN, whether
/// full-size frames came too).
type Heard = BTreeMap<(NicKey, NicKey, u16), (u16, bool)>;

/// Merges the results (all of one plan) into a report; `inv` locates the
/// findings.
pub fn report(results: &[RunResult], inv: &Inventory) -> Result<Report, String> {
    let plan = one_plan(results)?;
    let places = Places::of(inv, &plan);
    let mut diagnostics = Vec::new();
    let ran = nics_that_ran(results, inv, &plan, &places, &mut diagnostics);
    let heard = all_heard(results);
    let planned: BTreeMap<NicKey, &PlanNic> = plan
        .hosts
        .iter()
        .flat_map(|h| {
            h.nics
                .iter()
                .map(move |n| ((h.name.clone(), n.name.clone()), n))
        })
        .collect();
    let silent = silent_nics(&ran, &heard, &places, &mut diagnostics);
    let mut matrix: BTreeMap<Segment, SegmentResult> = BTreeMap::new();
    for (key, n) in &planned {
        if !ran.contains(key) {
            continue;
        }
        for seg in segments_of(n) {
            matrix.entry(seg).or_default().nics.push(key.clone());
        }
    }
    let judge = Judge {
        plan: &plan,
        planned: &planned,
        heard: &heard,
        silent: &silent,
        places: &places,
    };
    for (seg, sr) in matrix.iter_mut() {
        judge.fill(*seg, sr);
        judge.pair_findings(*seg, sr, &mut diagnostics);
    }
    other_segment_findings(&heard, &planned, &places, &mut diagnostics);
    nodenet_model::diag::sort(&mut diagnostics);
    Ok(Report {
        plan,
        matrix,
        diagnostics,
    })
}

/// The plan the results share; results of different runs are refused.
fn one_plan(results: &[RunResult]) -> Result<Plan, String> {
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
    Ok(plan)
}

/// NICs that ran: in a result, and present on their node. A host without
/// a result, and a NIC its node lacks, are warned about.
fn nics_that_ran(
    results: &[RunResult],
    inv: &Inventory,
    plan: &Plan,
    places: &Places,
    diagnostics: &mut Vec<Diagnostic>,
) -> BTreeSet<NicKey> {
    let by_host: BTreeMap<&str, &RunResult> =
        results.iter().map(|r| (r.host.as_str(), r)).collect();
    let mut ran: BTreeSet<NicKey> = BTreeSet::new();
    for h in &plan.hosts {
        let Some(r) = by_host.get(h.name.as_str()) else {
            diagnostics.push(
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
            );
            continue;
        };
        for n in &r.nics {
            if n.interface.is_some() {
                ran.insert((h.name.clone(), n.name.clone()));
                continue;
            }
            diagnostics.push(
                with_location(
                    Diagnostic::warning(
                        Code::NetverifyNoResult,
                        format!(
                            "{}: NIC {} is not on the node (no interface with its MAC or name)",
                            h.name, n.name
                        ),
                    ),
                    places.segment(&h.name, &n.name, Segment::Untagged(None)),
                )
                .host(&h.name),
            );
        }
    }
    ran
}

fn all_heard(results: &[RunResult]) -> Heard {
    let mut heard = Heard::new();
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
    heard
}

/// NICs that heard nothing and were heard by no one, each said once.
fn silent_nics(
    ran: &BTreeSet<NicKey>,
    heard: &Heard,
    places: &Places,
    diagnostics: &mut Vec<Diagnostic>,
) -> BTreeSet<NicKey> {
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
    silent
}

/// What a segment's matrix and findings are judged from.
struct Judge<'a> {
    plan: &'a Plan,
    planned: &'a BTreeMap<NicKey, &'a PlanNic>,
    heard: &'a Heard,
    silent: &'a BTreeSet<NicKey>,
    places: &'a Places,
}

impl Judge<'_> {
    /// Who heard whom on the segment, per ordered pair.
    fn fill(&self, seg: Segment, sr: &mut SegmentResult) {
        let vlan = match seg {
            Segment::Tagged(v) => v,
            Segment::Untagged(_) => 0,
        };
        for a in &sr.nics {
            for b in &sr.nics {
                if a == b {
                    continue;
                }
                let got = self.heard.get(&(a.clone(), b.clone(), vlan));
                // An untagged segment passes when the frame arrives
                // untagged; a tagged one when it arrives with its tag.
                let ok = got.is_some_and(|(seen, _)| *seen == vlan);
                // Full-size frames of a sender whose MTU the receiver also
                // runs (a larger one could never arrive).
                let tested = match (self.planned[a].mtu, self.planned[b].mtu) {
                    (Some(ma), Some(mb)) => self.plan.mtu && ma <= mb,
                    _ => false,
                };
                let full = tested.then(|| got.is_some_and(|g| ok && g.1));
                sr.heard.insert((a.clone(), b.clone()), (ok, full));
            }
        }
    }

    /// Findings per unordered pair, skipping silent NICs (said once).
    fn pair_findings(&self, seg: Segment, sr: &SegmentResult, diagnostics: &mut Vec<Diagnostic>) {
        for (i, a) in sr.nics.iter().enumerate() {
            for b in &sr.nics[i + 1..] {
                if self.silent.contains(a) || self.silent.contains(b) {
                    continue;
                }
                let ab = sr.heard[&(a.clone(), b.clone())];
                let ba = sr.heard[&(b.clone(), a.clone())];
                if !ab.0 || !ba.0 {
                    diagnostics.push(self.not_carried(seg, a, b, ab.0, ba.0));
                    continue;
                }
                for (s, r, got) in [(a, b, ab.1), (b, a, ba.1)] {
                    if got == Some(false) {
                        diagnostics.push(self.mtu_short(seg, s, r));
                    }
                }
            }
        }
    }

    fn not_carried(&self, seg: Segment, a: &NicKey, b: &NicKey, ab: bool, ba: bool) -> Diagnostic {
        let how = match (ab, ba) {
            (false, false) => "in either direction".to_string(),
            (true, false) => format!("from {} to {}", who(b), who(a)),
            _ => format!("from {} to {}", who(a), who(b)),
        };
        let here = self.places.segment(&a.0, &a.1, seg);
        let there = self.places.segment(&b.0, &b.1, seg);
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
        d
    }

    fn mtu_short(&self, seg: Segment, s: &NicKey, r: &NicKey) -> Diagnostic {
        let m = self.planned[s].mtu.unwrap_or_default();
        with_location(
            Diagnostic::error(
                Code::NetverifyMtu,
                format!(
                    "{seg}: small frames pass from {} to {} but {m}-byte frames do not",
                    who(s),
                    who(r)
                ),
            ),
            self.places.mtu(&s.0, &s.1),
        )
        .host(&s.0)
        .help("a switch port or NIC on the path has a smaller MTU")
    }
}

fn who(k: &NicKey) -> String {
    format!("{} {}", k.0, k.1)
}

/// Heard on a segment the receiver does not plan: wrong cable, or a
/// switch port carrying more than it should.
fn other_segment_findings(
    heard: &Heard,
    planned: &BTreeMap<NicKey, &PlanNic>,
    places: &Places,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut told: BTreeSet<(NicKey, u16, u16)> = BTreeSet::new();
    for ((sender, receiver, sent), (seen, _)) in heard {
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
mod tests;

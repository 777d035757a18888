//! `lab verify`'s report as one self-contained HTML page: the lab's
//! topology (each node's NICs cabled to the switch's ports) coloured by
//! result, then every check with its cause.

use std::fmt::Write;

use crate::topology::Topology;
use crate::verify::Report;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn class(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "pass",
        Some(false) => "fail",
        None => "none",
    }
}

/// `None` when nothing was checked; else whether everything passed.
fn all_ok<'a>(mut it: impl Iterator<Item = &'a crate::verify::Check>) -> Option<bool> {
    it.try_fold(None, |acc: Option<bool>, c| {
        Some(Some(acc.unwrap_or(true) && c.ok))
    })
    .flatten()
}

pub fn html(report: &Report, t: &Topology) -> String {
    let mut h = String::new();
    let verdict = if report.ok() { "pass" } else { "fail" };
    let _ = write!(
        h,
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>nodenet lab verify</title>
<style>
body {{ font-family: "DejaVu Sans Mono", monospace; margin: 1.5em; color: #222; }}
.node, .switch {{ border-style: solid; border-width: 3px; border-radius: 6px; padding: .5em 1em; min-width: 16em; }}
.pass {{ background: #dff5e1; border-color: #2e7d32; }}
.fail {{ background: #fde2e1; border-color: #c62828; }}
.none {{ background: #f2f2f2; border-color: #999; }}
.topology {{ display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }}
div.node, div.switch {{ background: #fff; }}
.nic {{ border: 1px solid; border-radius: 4px; margin: .3em 0; padding: .2em .5em; }}
table {{ border-collapse: collapse; margin-top: 1em; }}
td, th {{ border: 1px solid #bbb; padding: .25em .6em; text-align: left; vertical-align: top; }}
</style></head><body>
<h1 class="{verdict}">lab verify: {} passed, {} failed</h1>
<p>inventory {}; switch {}; {} in {:.0} s</p>
"#,
        report.passed,
        report.failed,
        esc(&report.inventory),
        esc(&report.switch),
        esc(&report.accel),
        report.seconds
    );
    for n in &report.notes {
        let _ = writeln!(h, "<p class=\"none\">note: {}</p>", esc(n));
    }
    h.push_str("<h2>Topology</h2>\n<div class=\"topology\">\n");
    for node in &t.nodes {
        let node_checks = || report.checks.iter().filter(|c| c.node == node.name);
        let _ = writeln!(
            h,
            "<div class=\"node {}\" id=\"node-{}\"><b>{}</b>",
            class(all_ok(node_checks())),
            esc(&node.name),
            esc(&node.name)
        );
        for nic in &node.nics {
            let nic_checks = || {
                node_checks().filter(|c| {
                    c.subject == nic.name || (c.check == "vlans" && c.detail.contains(&nic.name))
                })
            };
            let port = t.ports.iter().find(|p| p.name == nic.port);
            let label = port
                .and_then(|p| p.label.clone())
                .unwrap_or_else(|| nic.port.clone());
            let vlans = port
                .map(|p| {
                    let mut v = format!("native {}", p.native);
                    for id in &p.vlans {
                        let _ = write!(v, ", {id}");
                    }
                    v
                })
                .unwrap_or_default();
            let detail: Vec<String> = nic_checks().map(|c| esc(&c.detail)).collect();
            let _ = writeln!(
                h,
                "<div class=\"nic {}\" title=\"{}\">{} {} &rarr; {} {} [{}]{}</div>",
                class(all_ok(nic_checks())),
                detail.join("; "),
                esc(&nic.name),
                esc(&nic.mac),
                esc(&t.switch),
                esc(&label),
                esc(&vlans),
                port.and_then(|p| p.lacp.as_ref())
                    .map(|b| format!(" LACP {}", esc(b)))
                    .unwrap_or_default()
            );
        }
        h.push_str("</div>\n");
    }
    let _ = writeln!(
        h,
        "<div class=\"switch {}\"><b>{}</b>",
        class(all_ok(report.checks.iter().filter(|c| c.check == "vlans"))),
        esc(&t.switch)
    );
    for s in &t.segments {
        let _ = writeln!(
            h,
            "<div class=\"nic none\">VLAN {}: {} gateway {}{}</div>",
            s.vlan,
            s.network,
            s.gateway,
            s.dhcp
                .map(|(a, b)| format!(", DHCP {a}-{b}"))
                .unwrap_or_default()
        );
    }
    h.push_str("</div>\n</div>\n<h2>Checks</h2>\n<table><tr><th>node</th><th>check</th><th>what</th><th>result</th></tr>\n");
    let mut sorted: Vec<&crate::verify::Check> = report.checks.iter().collect();
    sorted.sort_by_key(|c| c.ok);
    for c in sorted {
        let _ = writeln!(
            h,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            class(Some(c.ok)),
            esc(&c.node),
            esc(&c.check),
            esc(&c.subject),
            esc(&c.detail)
        );
    }
    h.push_str("</table>\n</body></html>\n");
    h
}

/// The report for a terminal: failures first, then a count.
pub fn text(report: &Report) -> String {
    let mut s = String::new();
    for c in report.checks.iter().filter(|c| !c.ok) {
        let who = if c.node.is_empty() { "lab" } else { &c.node };
        let _ = writeln!(s, "FAIL {who} {} {}: {}", c.check, c.subject, c.detail);
    }
    for c in report.checks.iter().filter(|c| c.ok) {
        let who = if c.node.is_empty() { "lab" } else { &c.node };
        let _ = writeln!(s, "ok   {who} {} {}: {}", c.check, c.subject, c.detail);
    }
    let _ = writeln!(
        s,
        "{} passed, {} failed ({:.0} s)",
        report.passed, report.failed, report.seconds
    );
    s
}

//! `topology.html`: one self-contained page (no network access: inline
//! SVG, CSS and script, the data as JSON in the page) with a diagram per
//! host shape — NICs, then bonds, VLANs and bridges stacked on them, their
//! addresses and which NIC the host boots from — and the fleet table.
//!
//! Hosts of one shape (states that differ only in addresses and MACs, as
//! `check` groups them) share one diagram, drawn from the shape's first
//! host; the table lists every host and is paged in the browser, so the
//! page of a 10,000-host fleet stays a few diagrams and one JSON block.
//! Everything from the inputs is escaped; the page's Content-Security-
//! Policy allows only its own script and style (by hash) and no requests.

use std::collections::HashMap;
use std::fmt::Write as _;

use base64::Engine;
use rayon::prelude::*;
use serde_json::{json, Value as J};
use sha2::{Digest, Sha256};

use crate::views::{HostView, IfaceView, Views};
use nodenet_model::Inventory;

mod assets;
mod diagram;

use assets::*;
use diagram::*;

/// At most this many diagrams (the largest shapes); the table still lists
/// every host.
pub const MAX_DIAGRAMS: usize = 100;
/// Rows per page of the fleet table.
pub const PAGE_ROWS: usize = 100;

/// `s` with `&`, `<`, `>`, `"` and `'` as character references: safe in
/// element content and in quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON that can stand inside a `<script>` element: `<`, `>` and `&`
/// (only ever inside strings) as `\u` escapes, so no `</script>` or
/// `<!--` can end or bend the element.
fn script_json(text: String) -> String {
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }

    let mut out = String::with_capacity(text.len() + 64);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The page for a checked inventory.
pub fn page(inv: &Inventory, views: &Views) -> String {
    let shapes = group(&views.hosts);
    let title = match &inv.cluster.name {
        Some(n) => format!("{} — nodenet topology", n.value),
        None => "nodenet topology".to_string(),
    };
    let mut body = String::with_capacity(64 * 1024);
    let _ = write!(body, "<header><h1>{}</h1>", esc(&title));
    let with_network = views.hosts.iter().filter(|h| h.shape.is_some()).count();
    let _ = write!(
        body,
        "<p id=\"summary\">{} host(s), {} with a network state in {} shape(s); {} change(s) to hosts.",
        views.hosts.len(),
        with_network,
        shapes.len(),
        views.changes.len()
    );
    let drawn = shapes.len().min(MAX_DIAGRAMS);
    if drawn < shapes.len() {
        let _ = write!(
            body,
            " The {drawn} largest shapes are drawn; the table lists every host."
        );
    }
    body.push_str(
        " Hosts of one shape differ only in addresses and MACs; each diagram is drawn from the \
         shape's first host, with its addresses.</p>",
    );
    body.push_str(LEGEND);
    body.push_str("</header>\n<main>\n<section id=\"shapes\"><h2>Shapes</h2>\n");
    for shape in shapes.iter().take(MAX_DIAGRAMS) {
        diagram(shape, &views.hosts, &mut body);
    }
    body.push_str("</section>\n");
    fleet_section(&views.hosts, &mut body);
    changes_section(&views.changes, &mut body);
    body.push_str("</main>\n");
    let data = script_json(fleet_data(&views.hosts, &shapes));
    let _ = write!(
        body,
        "<script type=\"application/json\" id=\"fleet-data\">{data}</script>\n<script>{SCRIPT}</script>\n"
    );
    let mut html = String::with_capacity(body.len() + STYLE.len() + 1024);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src {}; script-src {}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"nodenet {}\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        csp_hash(STYLE),
        csp_hash(SCRIPT),
        env!("CARGO_PKG_VERSION"),
        esc(&title)
    );
    html.push_str(&body);
    html.push_str("</body>\n</html>\n");
    html
}

/// One shape: its number and its hosts (indices into the host list, in
/// input order).
struct Shape {
    number: usize,
    members: Vec<usize>,
}

/// Shapes, largest first (then by number).
fn group(hosts: &[HostView]) -> Vec<Shape> {
    let mut by_number: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, h) in hosts.iter().enumerate() {
        if let Some(n) = h.shape {
            by_number.entry(n).or_default().push(i);
        }
    }
    let mut shapes: Vec<Shape> = by_number
        .into_iter()
        .map(|(number, members)| Shape { number, members })
        .collect();
    shapes.sort_by(|a, b| {
        b.members
            .len()
            .cmp(&a.members.len())
            .then(a.number.cmp(&b.number))
    });
    shapes
}

const LEGEND: &str = "<p class=\"legend\"><span class=\"k ethernet\">NIC</span> \
<span class=\"k bond\">bond</span> <span class=\"k vlan\">VLAN</span> \
<span class=\"k bridge\">bridge</span> <span class=\"k other\">other</span> \
<span class=\"k missing\">not in the state</span> \
<span class=\"badge pxe\">PXE</span> the NIC the host PXE-boots from \
<span class=\"badge provisioning\">provisioning</span> the provisioning network's NIC \
<span class=\"badge boot\">boot MAC</span> the NIC with the boot MAC</p>";

/// The fleet table's frame; the script fills it from `#fleet-data`.
fn fleet_section(hosts: &[HostView], out: &mut String) {
    let _ = write!(
        out,
        "<section id=\"fleet\"><h2>Hosts</h2>\n\
         <div class=\"controls\"><label>Filter <input id=\"filter\" type=\"search\" placeholder=\"name, address, MAC, BMC…\"></label> \
         <label>Shape <select id=\"shape\"><option value=\"\">all</option></select></label> \
         <button id=\"prev\" type=\"button\">◀ previous</button> <span id=\"range\"></span> \
         <button id=\"next\" type=\"button\">next ▶</button></div>\n\
         <noscript><p>The host table needs JavaScript ({} hosts; `nodenet hosts` prints them).</p></noscript>\n\
         <table id=\"hosts\" data-total=\"{}\"><thead><tr><th>Host</th><th>Role</th><th>Shape</th>\
         <th>Boot MAC</th><th>BMC</th><th>Gateway</th><th>Interfaces</th></tr></thead><tbody></tbody></table>\n</section>\n",
        hosts.len(),
        hosts.len()
    );
}

/// Changes to hosts (NNCPs, MachineConfig files, bare NMState): few, so
/// written out.
fn changes_section(changes: &[HostView], out: &mut String) {
    if changes.is_empty() {
        return;
    }
    out.push_str(
        "<section id=\"changes\"><h2>Changes to hosts</h2>\n<p>Applied on running nodes (not whole hosts).</p>\n\
         <table><thead><tr><th>Change</th><th>From</th><th>Applies to</th><th>Gateway</th><th>Interfaces</th></tr></thead><tbody>\n",
    );
    for c in changes {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.name),
            esc(c.input),
            esc(c.applies_to.as_deref().unwrap_or(&c.name)),
            esc(&c.gateway_line()),
            esc(&c.interfaces_line())
        );
    }
    out.push_str("</tbody></table>\n</section>\n");
}

/// The table's data. Per shape, its interfaces' labels (name, type detail
/// and dynamic addressing, which every host of the shape shares); per
/// host `[name, role, shape, boot MAC, BMC, gateway, marks, addresses]`,
/// where marks index `markSets` (lists of `[interface index, "pxe, boot
/// MAC"]`, which most hosts share), addresses are one string per
/// interface, and a BMC address may be `[n, rest]`: the previous host's
/// first `n` UTF-16 units, then `rest` (BMC addresses of a fleet mostly
/// differ in a number). The script joins them as
/// [`HostView::interfaces_line`] does.
fn fleet_data(hosts: &[HostView], shapes: &[Shape]) -> String {
    let mut labels = serde_json::Map::new();
    for s in shapes {
        let rep = &hosts[s.members[0]];
        let ifaces: Vec<J> = rep
            .interfaces
            .iter()
            .map(|i| {
                let mut parts = Vec::new();
                let detail = i.detail();
                if !detail.is_empty() {
                    parts.push(detail);
                }
                if !i.is_up() {
                    parts.push(i.state.clone().unwrap_or_default());
                }
                json!([i.name, parts.join(", "), i.dynamic().join(" ")])
            })
            .collect();
        labels.insert(s.number.to_string(), J::Array(ifaces));
    }
    // Each host's row on every core; its marks then numbered in order.
    let rows: Vec<(J, J)> = hosts
        .par_iter()
        .enumerate()
        .map(|(n, h)| {
            let previous_bmc = n
                .checked_sub(1)
                .and_then(|p| hosts[p].bmc.as_deref())
                .unwrap_or("");
            (host_marks(h), host_row(h, previous_bmc))
        })
        .collect();
    let mut mark_sets: Vec<J> = Vec::new();
    let mut mark_index: HashMap<J, usize> = HashMap::new();
    let rows: Vec<J> = rows
        .into_iter()
        .map(|(marks, mut row)| {
            let marks = *mark_index.entry(marks).or_insert_with_key(|m| {
                mark_sets.push(m.clone());
                mark_sets.len() - 1
            });
            row[6] = marks.into();
            row
        })
        .collect();
    // `{"pageRows", "shapes", "markSets", "hosts"}`, the rows written on
    // every core.
    let rows: Vec<String> = rows.par_iter().map(J::to_string).collect();
    let head = json!({"pageRows": PAGE_ROWS, "shapes": labels, "markSets": mark_sets}).to_string();
    let mut text =
        String::with_capacity(head.len() + rows.iter().map(|r| r.len() + 1).sum::<usize>() + 16);
    text.push_str(&head[..head.len() - 1]);
    text.push_str(",\"hosts\":[");
    text.push_str(&rows.join(","));
    text.push_str("]}");
    text
}

/// A host's marks: `[interface index, "pxe, boot MAC"]` per marked one.
fn host_marks(h: &HostView) -> J {
    J::Array(
        h.interfaces
            .iter()
            .enumerate()
            .filter_map(|(k, i)| {
                let m = h.marks(&i.name);
                (!m.is_empty()).then(|| json!([k, m.join(", ")]))
            })
            .collect(),
    )
}

/// A host's row of the table's data, its marks' number left at 0.
fn host_row(h: &HostView, previous_bmc: &str) -> J {
    let bmc = h.bmc.as_deref().unwrap_or("");
    let shared: String = previous_bmc
        .chars()
        .zip(bmc.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let bmc_json = if shared.len() >= 8 {
        json!([shared.encode_utf16().count(), &bmc[shared.len()..]])
    } else {
        J::String(bmc.to_string())
    };
    let mut addresses: Vec<String> = h
        .interfaces
        .iter()
        .map(|i| i.addresses().collect::<Vec<_>>().join(" "))
        .collect();
    while addresses.last().is_some_and(String::is_empty) {
        addresses.pop();
    }
    json!([
        h.name,
        h.role.unwrap_or(""),
        h.shape,
        h.boot_mac.as_deref().unwrap_or(""),
        bmc_json,
        h.gateway_line(),
        0,
        addresses
    ])
}

#[cfg(test)]
mod tests;

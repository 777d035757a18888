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
use serde_json::{json, Value as J};
use sha2::{Digest, Sha256};

use crate::views::{HostView, IfaceView, Views};
use nodenet_model::Inventory;

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
fn script_json(v: &J) -> String {
    let text = v.to_string();
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
    let data = script_json(&fleet_data(&views.hosts, &shapes));
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

/// Monospace advance at the diagram's 12px font, with some slack.
const CHAR_W: f64 = 7.4;
/// At the badges' 11px bold.
const BADGE_CHAR_W: f64 = 6.9;
const PAD: f64 = 8.0;
const LINE: f64 = 16.0;
const BADGE_H: f64 = 16.0;
const COL_GAP: f64 = 64.0;
const ROW_GAP: f64 = 14.0;
const MAX_CHARS: usize = 34;
const MAX_ADDRESSES: usize = 3;

/// A box of the diagram.
struct NodeBox {
    name: String,
    class: &'static str,
    lines: Vec<String>,
    badges: Vec<(&'static str, String)>,
    layer: usize,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

fn class_of(i: &IfaceView) -> &'static str {
    match i.kind.as_deref() {
        Some("ethernet") | None => "ethernet",
        Some("bond") => "bond",
        Some("vlan") => "vlan",
        Some("linux-bridge") | Some("ovs-bridge") => "bridge",
        _ => "other",
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_CHARS {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_CHARS - 1).collect();
        t.push('…');
        t
    }
}

/// What a box says besides the name: type, MTU, state, addresses.
fn box_lines(i: &IfaceView) -> Vec<String> {
    let kind = i.kind.as_deref().unwrap_or("ethernet");
    let mut first = match (&i.bond, &i.vlan) {
        (Some(b), _) => format!("bond {}", b.mode.as_deref().unwrap_or("")),
        (_, Some(v)) => match v.id {
            Some(id) => format!("vlan {id}"),
            None => "vlan".to_string(),
        },
        _ => kind.to_string(),
    };
    if let Some(mtu) = i.mtu {
        let _ = write!(first, " · mtu {mtu}");
    }
    if !i.is_up() {
        let _ = write!(first, " · {}", i.state.as_deref().unwrap_or(""));
    }
    let mut lines = vec![first.trim().to_string()];
    let dynamic = i.dynamic();
    if !dynamic.is_empty() {
        lines.push(dynamic.join(" "));
    }
    let addresses: Vec<&str> = i.addresses().collect();
    for a in addresses.iter().take(MAX_ADDRESSES) {
        lines.push(a.to_string());
    }
    if addresses.len() > MAX_ADDRESSES {
        lines.push(format!("+{} more", addresses.len() - MAX_ADDRESSES));
    }
    lines
}

/// The diagram of one shape: boxes in columns (NICs first, each other
/// interface right of what it sits on), edges from port to controller
/// and from base to VLAN.
fn diagram(shape: &Shape, hosts: &[HostView], out: &mut String) {
    let rep = &hosts[shape.members[0]];
    let (mut boxes, edges) = boxes_and_edges(&rep.interfaces);
    assign_layers(&mut boxes, &edges);
    add_badges(shape, hosts, rep.interfaces.len(), &mut boxes);
    size_boxes(&mut boxes);
    let (width, height) = place_columns(&mut boxes, &edges);
    caption(shape, hosts, out);
    draw(shape.number, &boxes, &edges, (width, height), out);
}

/// An edge between two boxes: (lower, upper, kind of edge).
type Edge = (usize, usize, &'static str);

/// A box per interface (and per name the state refers to but lacks), and
/// the edges from port to controller and from base to VLAN.
fn boxes_and_edges(ifaces: &[IfaceView]) -> (Vec<NodeBox>, Vec<Edge>) {
    // Names to boxes; br-ex is both an OVS bridge and its interface: a
    // name refers to the one that is not the bridge.
    let mut boxes: Vec<NodeBox> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (k, i) in ifaces.iter().enumerate() {
        boxes.push(NodeBox {
            name: i.name.clone(),
            class: class_of(i),
            lines: box_lines(i),
            badges: Vec::new(),
            layer: 0,
            x: 0.0,
            y: 0.0,
            w: 0.0,
            h: 0.0,
        });
        let bridge = i.kind.as_deref() == Some("ovs-bridge");
        if !bridge || !by_name.contains_key(i.name.as_str()) {
            by_name.insert(i.name.as_str(), k);
        }
    }
    let mut missing: Vec<String> = Vec::new();
    let mut index_of = |name: &str, boxes: &mut Vec<NodeBox>| -> usize {
        if let Some(&k) = by_name.get(name) {
            return k;
        }
        if let Some(m) = missing.iter().position(|m| m == name) {
            return ifaces.len() + m;
        }
        missing.push(name.to_string());
        boxes.push(NodeBox {
            name: name.to_string(),
            class: "missing",
            lines: vec!["not in the state".to_string()],
            badges: Vec::new(),
            layer: 0,
            x: 0.0,
            y: 0.0,
            w: 0.0,
            h: 0.0,
        });
        boxes.len() - 1
    };
    let mut edges: Vec<Edge> = Vec::new();
    for (k, i) in ifaces.iter().enumerate() {
        let ports = i
            .bond
            .as_ref()
            .map(|b| &b.ports)
            .or(i.bridge.as_ref().map(|b| &b.ports));
        for p in ports.into_iter().flatten() {
            let j = index_of(p, &mut boxes);
            if j == k {
                continue;
            }
            let internal = j < ifaces.len() && ifaces[j].kind.as_deref() == Some("ovs-interface");
            if internal && i.kind.as_deref() == Some("ovs-bridge") {
                edges.push((k, j, "port"));
            } else {
                edges.push((j, k, "port"));
            }
        }
        if let Some(base) = i.lower() {
            let j = index_of(base, &mut boxes);
            if j != k {
                edges.push((j, k, "stack"));
            }
        }
    }
    (boxes, edges)
}

/// Layers: one right of the highest box below (a cycle, which check
/// reports, stops growing after as many rounds as there are boxes).
fn assign_layers(boxes: &mut [NodeBox], edges: &[Edge]) {
    for _ in 0..boxes.len() {
        let mut changed = false;
        for &(lo, up, _) in edges {
            if boxes[up].layer < boxes[lo].layer + 1 {
                boxes[up].layer = boxes[lo].layer + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Badges (PXE, provisioning, boot MAC), counted over the shape's hosts
/// when they disagree.
fn add_badges(shape: &Shape, hosts: &[HostView], drawn: usize, boxes: &mut [NodeBox]) {
    let n = shape.members.len();
    let mut counts: HashMap<(usize, &'static str), usize> = HashMap::new();
    for &m in &shape.members {
        let h = &hosts[m];
        for (k, i) in h.interfaces.iter().enumerate().take(drawn) {
            for mark in h.marks(&i.name) {
                *counts.entry((k, mark)).or_default() += 1;
            }
        }
    }
    // In the order `HostView::marks` gives them.
    let rank = |m: &str| {
        ["pxe", "provisioning", "boot MAC"]
            .iter()
            .position(|x| *x == m)
    };
    let mut marks: Vec<(&(usize, &'static str), &usize)> = counts.iter().collect();
    marks.sort_by_key(|((k, m), _)| (*k, rank(m)));
    for (&(k, mark), &c) in marks {
        let class = match mark {
            "pxe" => "pxe",
            "provisioning" => "provisioning",
            _ => "boot",
        };
        let label = if mark == "pxe" { "PXE" } else { mark };
        let text = if c == n {
            label.to_string()
        } else {
            format!("{label} ({c} of {n})")
        };
        boxes[k].badges.push((class, text));
    }
}

/// Each box as wide as its longest line (or its badges) and as tall as
/// its lines.
fn size_boxes(boxes: &mut [NodeBox]) {
    for b in boxes.iter_mut() {
        let chars = std::iter::once(clip(&b.name).chars().count())
            .chain(b.lines.iter().map(|l| clip(l).chars().count()))
            .chain(std::iter::once(
                (b.badges
                    .iter()
                    .map(|(_, t)| t.chars().count() as f64 * BADGE_CHAR_W + 16.0)
                    .sum::<f64>()
                    / CHAR_W) as usize,
            ))
            .max()
            .unwrap_or(1);
        b.w = (chars as f64 * CHAR_W + 2.0 * PAD).max(90.0);
        b.h = PAD * 2.0
            + LINE * (1 + b.lines.len()) as f64
            + if b.badges.is_empty() {
                0.0
            } else {
                BADGE_H + 4.0
            };
    }
}

/// Columns: NICs in state order; each further box near the middle of
/// what it sits on, in that order. Returns the drawing's width and height.
fn place_columns(boxes: &mut [NodeBox], edges: &[Edge]) -> (f64, f64) {
    let layers = boxes.iter().map(|b| b.layer).max().unwrap_or(0) + 1;
    let mut x = 10.0;
    let mut height: f64 = 0.0;
    for layer in 0..layers {
        let mut col: Vec<usize> = (0..boxes.len())
            .filter(|&k| boxes[k].layer == layer)
            .collect();
        if col.is_empty() {
            continue;
        }
        let center = |k: usize, boxes: &[NodeBox]| -> Option<f64> {
            let lows: Vec<f64> = edges
                .iter()
                .filter(|e| e.1 == k && boxes[e.0].layer < layer)
                .map(|e| boxes[e.0].y + boxes[e.0].h / 2.0)
                .collect();
            (!lows.is_empty()).then(|| lows.iter().sum::<f64>() / lows.len() as f64)
        };
        if layer > 0 {
            let keys: HashMap<usize, f64> = col
                .iter()
                .map(|&k| (k, center(k, boxes).unwrap_or(f64::MAX)))
                .collect();
            col.sort_by(|a, b| keys[a].total_cmp(&keys[b]).then(a.cmp(b)));
        }
        let w = col.iter().map(|&k| boxes[k].w).fold(0.0, f64::max);
        let mut y = 10.0;
        for &k in &col {
            let want = center(k, boxes).map(|c| c - boxes[k].h / 2.0);
            let top = match want {
                Some(t) if layer > 0 => t.max(y),
                _ => y,
            };
            boxes[k].x = x;
            boxes[k].y = top;
            boxes[k].w = w;
            y = top + boxes[k].h + ROW_GAP;
        }
        height = height.max(y);
        x += w + COL_GAP;
    }
    let width = x - COL_GAP + 10.0;
    let height = height - ROW_GAP + 10.0;

    (width, height)
}

/// The shape's heading: its number, host count, roles and first members.
fn caption(shape: &Shape, hosts: &[HostView], out: &mut String) {
    let rep = &hosts[shape.members[0]];
    let n = shape.members.len();
    // The caption.
    let mut roles: Vec<&str> = shape
        .members
        .iter()
        .filter_map(|&m| hosts[m].role)
        .collect();
    roles.sort();
    roles.dedup();
    let names: Vec<String> = shape
        .members
        .iter()
        .take(5)
        .map(|&m| esc(&hosts[m].name))
        .collect();
    let more = match n.saturating_sub(5) {
        0 => String::new(),
        k => format!(" and {k} more"),
    };
    let _ = write!(
        out,
        "<article class=\"shape\" id=\"shape-{num}\" data-shape=\"{num}\" data-hosts=\"{n}\">\n\
         <h3>Shape {num} · {n} host(s){roles}</h3>\n<p class=\"members\">{names}{more}. \
         Drawn from <b>{rep}</b>, with its addresses. <a href=\"#shape={num}\">List these hosts</a></p>\n",
        num = shape.number,
        roles = if roles.is_empty() {
            String::new()
        } else {
            format!(" · {}", esc(&roles.join(", ")))
        },
        names = names.join(", "),
        rep = esc(&rep.name),
    );
}

/// The SVG: edges under boxes, each box with its lines and badges.
fn draw(
    number: usize,
    boxes: &[NodeBox],
    edges: &[Edge],
    (width, height): (f64, f64),
    out: &mut String,
) {
    let _ = writeln!(
        out,
        "<svg class=\"diagram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"interfaces of shape {}\">",
        number
    );
    for &(lo, up, kind) in edges {
        let (a, b) = (&boxes[lo], &boxes[up]);
        let (x1, y1) = (a.x + a.w, a.y + a.h / 2.0);
        let (x2, y2) = (b.x, b.y + b.h / 2.0);
        let mid = (x2 - x1) / 2.0;
        let _ = writeln!(
            out,
            "<path class=\"edge {kind}\" data-from=\"{}\" data-to=\"{}\" d=\"M{x1:.1} {y1:.1} C{:.1} {y1:.1} {:.1} {y2:.1} {x2:.1} {y2:.1}\"/>",
            esc(&a.name),
            esc(&b.name),
            x1 + mid,
            x2 - mid
        );
    }
    for b in boxes {
        let _ = write!(
            out,
            "<g class=\"iface {class}\" data-name=\"{name}\"><title>{name}</title>\
             <rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" rx=\"6\"/>\
             <text x=\"{tx:.1}\" y=\"{ty:.1}\" class=\"name\">{shown}</text>",
            class = b.class,
            name = esc(&b.name),
            shown = esc(&clip(&b.name)),
            x = b.x,
            y = b.y,
            w = b.w,
            h = b.h,
            tx = b.x + PAD,
            ty = b.y + PAD + 12.0,
        );
        for (l, line) in b.lines.iter().enumerate() {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                b.x + PAD,
                b.y + PAD + 12.0 + LINE * (l + 1) as f64,
                esc(&clip(line))
            );
        }
        let mut bx = b.x + PAD;
        let by = b.y + PAD + LINE * (1 + b.lines.len()) as f64 + 2.0;
        for (class, text) in &b.badges {
            let bw = text.chars().count() as f64 * BADGE_CHAR_W + 10.0;
            let _ = write!(
                out,
                "<g class=\"badge {class}\"><rect x=\"{bx:.1}\" y=\"{by:.1}\" width=\"{bw:.1}\" height=\"{BADGE_H:.1}\" rx=\"8\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
                bx + 5.0,
                by + 12.0,
                esc(text)
            );
            bx += bw + 6.0;
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n</article>\n");
}

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
fn fleet_data(hosts: &[HostView], shapes: &[Shape]) -> J {
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
    let mut mark_sets: Vec<J> = Vec::new();
    let mut mark_index: HashMap<J, usize> = HashMap::new();
    let mut previous_bmc = "";
    let rows: Vec<J> = hosts
        .iter()
        .map(|h| {
            let marks = J::Array(
                h.interfaces
                    .iter()
                    .enumerate()
                    .filter_map(|(k, i)| {
                        let m = h.marks(&i.name);
                        (!m.is_empty()).then(|| json!([k, m.join(", ")]))
                    })
                    .collect(),
            );
            let marks = *mark_index.entry(marks).or_insert_with_key(|m| {
                mark_sets.push(m.clone());
                mark_sets.len() - 1
            });
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
            previous_bmc = bmc;
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
                marks,
                addresses
            ])
        })
        .collect();
    json!({"pageRows": PAGE_ROWS, "shapes": labels, "markSets": mark_sets, "hosts": rows})
}

const STYLE: &str = r#"
:root{--fg:#1d2330;--muted:#5b6475;--line:#c9ceda;--bg:#fff}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 24px 48px}
h1{font-size:22px;margin:18px 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line)}h3{font-size:15px;margin:18px 0 4px}
p{margin:4px 0}.members{color:var(--muted)}
.legend{color:var(--muted);font-size:12px;margin-top:8px}
.k{display:inline-block;padding:0 6px;border:1px solid #8a93a6;border-radius:4px;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.diagram{display:block;max-width:100%;height:auto;margin:6px 0 10px;font:12px ui-monospace,"DejaVu Sans Mono",monospace}
.diagram rect{stroke:#5b6475;stroke-width:1}
.diagram text{fill:#1d2330}.diagram text.name{font-weight:bold}
.ethernet rect,.k.ethernet{fill:#dce8fb;background:#dce8fb}
.bond rect,.k.bond{fill:#fde3cf;background:#fde3cf}
.vlan rect,.k.vlan{fill:#d9f2df;background:#d9f2df}
.bridge rect,.k.bridge{fill:#eadcf8;background:#eadcf8}
.other rect,.k.other{fill:#eceef2;background:#eceef2}
.missing rect,.k.missing{fill:#fff;stroke-dasharray:4 3;background:#fff;border-style:dashed}
.edge{fill:none;stroke:#5b6475;stroke-width:1.6}.edge.stack{stroke-dasharray:6 4}
.badge rect{stroke:none}.badge text{font-size:11px;font-weight:bold}
.badge.pxe rect,span.badge.pxe{fill:#c0392b;background:#c0392b}.badge.pxe text{fill:#fff}
.badge.provisioning rect,span.badge.provisioning{fill:#8e6c00;background:#8e6c00}.badge.provisioning text{fill:#fff}
.badge.boot rect,span.badge.boot{fill:#1f5fbf;background:#1f5fbf}.badge.boot text{fill:#fff}
span.badge{color:#fff;border-radius:8px;padding:0 6px;font-size:11px;font-weight:bold}
.controls{margin:6px 0 8px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
table{border-collapse:collapse;font-size:13px}
th,td{border-bottom:1px solid #e3e6ee;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6fa;position:sticky;top:0}
td{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
td.host{white-space:nowrap}td.ifaces{max-width:70ch}
"#;

const SCRIPT: &str = r##"
"use strict";
(function () {
  var data = JSON.parse(document.getElementById("fleet-data").textContent);
  var hosts = data.hosts, shapes = data.shapes, per = data.pageRows;
  var table = document.getElementById("hosts"), tbody = table.tBodies[0];
  var filter = document.getElementById("filter"), shapeSel = document.getElementById("shape");
  var prev = document.getElementById("prev"), next = document.getElementById("next");
  var range = document.getElementById("range");
  var state = {q: "", shape: "", page: 1}, rows = hosts, hay = null, bmc = "";
  hosts.forEach(function (h) {
    if (Array.isArray(h[4])) h[4] = bmc.slice(0, h[4][0]) + h[4][1];
    bmc = h[4];
    h[6] = data.markSets[h[6]];
  });

  function ifaces(h) {
    var labels = shapes[String(h[2])] || [], marks = {}, out = [];
    h[6].forEach(function (m) { marks[m[0]] = m[1]; });
    labels.forEach(function (l, k) {
      var parts = [];
      if (l[1]) parts.push(l[1]);
      if (marks[k]) parts.push(marks[k]);
      var s = l[0] + (parts.length ? "[" + parts.join(", ") + "]" : "");
      if (l[2]) s += " " + l[2];
      if (h[7][k]) s += " " + h[7][k];
      out.push(s);
    });
    return out.join(", ");
  }
  function text(h) {
    return [h[0], h[1], h[3], h[4], h[5], ifaces(h)].join(" ").toLowerCase();
  }
  function select() {
    var q = state.q.toLowerCase(), s = state.shape;
    if (!q && !s) { rows = hosts; return; }
    if (q && !hay) hay = hosts.map(text);
    rows = [];
    for (var i = 0; i < hosts.length; i++) {
      if (s && String(hosts[i][2]) !== s) continue;
      if (q && hay[i].indexOf(q) < 0) continue;
      rows.push(hosts[i]);
    }
  }
  function cell(tr, value, cls) {
    var td = document.createElement("td");
    td.textContent = value === null || value === "" ? "-" : String(value);
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(rows.length / per));
    state.page = Math.min(Math.max(1, state.page), pages);
    var from = (state.page - 1) * per, to = Math.min(rows.length, from + per);
    var frag = document.createDocumentFragment();
    for (var i = from; i < to; i++) {
      var h = rows[i], tr = document.createElement("tr");
      cell(tr, h[0], "host"); cell(tr, h[1]); cell(tr, h[2]); cell(tr, h[3]);
      cell(tr, h[4]); cell(tr, h[5]); cell(tr, ifaces(h), "ifaces");
      frag.appendChild(tr);
    }
    tbody.textContent = "";
    tbody.appendChild(frag);
    range.textContent = rows.length ? (from + 1) + "–" + to + " of " + rows.length +
      (rows.length < hosts.length ? " (of " + hosts.length + ")" : "") + ", page " + state.page + "/" + pages
      : "no host matches";
    prev.disabled = state.page <= 1;
    next.disabled = state.page >= pages;
    table.setAttribute("data-matching", String(rows.length));
    table.setAttribute("data-page", String(state.page));
  }
  function save() {
    var p = [];
    if (state.q) p.push("q=" + encodeURIComponent(state.q));
    if (state.shape) p.push("shape=" + encodeURIComponent(state.shape));
    if (state.page > 1) p.push("page=" + state.page);
    try { history.replaceState(null, "", p.length ? "#" + p.join("&") : location.pathname); } catch (e) {}
  }
  function load() {
    var h = location.hash.replace(/^#/, "");
    state = {q: "", shape: "", page: 1};
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("="); if (i < 0) return;
      var k = kv.slice(0, i), v = decodeURIComponent(kv.slice(i + 1));
      if (k === "q") state.q = v;
      else if (k === "shape") state.shape = v;
      else if (k === "page") state.page = parseInt(v, 10) || 1;
    });
    filter.value = state.q;
    shapeSel.value = state.shape;
    select(); draw();
  }
  Object.keys(shapes).sort(function (a, b) { return a - b; }).forEach(function (n) {
    var o = document.createElement("option");
    o.value = n; o.textContent = "shape " + n;
    shapeSel.appendChild(o);
  });
  filter.addEventListener("input", function () { state.q = filter.value; state.page = 1; select(); draw(); save(); });
  shapeSel.addEventListener("change", function () { state.shape = shapeSel.value; state.page = 1; select(); draw(); save(); });
  prev.addEventListener("click", function () { state.page--; draw(); save(); });
  next.addEventListener("click", function () { state.page++; draw(); save(); });
  window.addEventListener("hashchange", load);
  load();
  document.documentElement.setAttribute("data-ready", "1");
})();
"##;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::views;

    fn page_of(text: &str) -> String {
        let loaded = nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]);
        let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
        page(&loaded.inventory, &views(&loaded.inventory, &report))
    }

    const INV: &str = r#"nodenet: v1
cluster: {name: lab, provisioning: {network: Managed, interface: eno1}}
pools:
  p: {range: 10.0.0.10-10.0.0.200, prefix: 24, gateway: 10.0.0.1}
templates:
  node:
    role: worker
    bootInterface: eno1
    bmc: {address: "ipmi://10.1.0.${index}"}
    network:
      interfaces:
      - {name: eno1, type: ethernet, state: up}
      - {name: eno2, type: ethernet, state: up}
      - name: bond0
        type: bond
        state: up
        link-aggregation: {mode: active-backup, port: [eno1, eno2]}
      - name: bond0.10
        type: vlan
        state: up
        vlan: {base-iface: bond0, id: 10}
        ipv4: {enabled: true, address: [{ip: "${ip.p}", prefix-length: 24}]}
      - name: br0
        type: linux-bridge
        state: up
        bridge: {port: [{name: bond0.10}]}
hosts:
- {name: "w-${index}", template: node, count: 6, nics: {eno1: "52:54:00:00:00:${index:02x}"}}
- name: odd
  template: node
  nics: {eno1: "52:54:00:00:01:01"}
  bmc: {address: "ipmi://10.1.1.1"}
  network:
    interfaces:
    - {name: eno1, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}}
"#;

    #[test]
    fn one_diagram_per_shape_with_every_layer() {
        let html = page_of(INV);
        assert_eq!(html.matches("<svg class=\"diagram\"").count(), 2, "{html}");
        // The six hosts of the template are one shape, drawn first.
        let first = &html[html.find("<article").unwrap()..html.find("</article>").unwrap()];
        assert!(first.contains("data-hosts=\"6\""), "{first}");
        assert!(first.contains("Drawn from <b>w-0</b>"), "{first}");
        for name in ["eno1", "eno2", "bond0", "bond0.10", "br0"] {
            assert!(first.contains(&format!("data-name=\"{name}\"")), "{name}");
        }
        // Edges: ports to the bond, the bond to its VLAN, the VLAN to the bridge.
        for (from, to) in [
            ("eno1", "bond0"),
            ("eno2", "bond0"),
            ("bond0", "bond0.10"),
            ("bond0.10", "br0"),
        ] {
            assert!(
                first.contains(&format!("data-from=\"{from}\" data-to=\"{to}\"")),
                "{from} -> {to}"
            );
        }
        assert!(first.contains(">10.0.0.10/24<"), "the first host's address");
        assert!(first.contains(">PXE<") && first.contains(">boot MAC<"));
        // Columns left to right: NIC, bond, VLAN, bridge.
        let x = |name: &str| -> f64 {
            let at = first.find(&format!("data-name=\"{name}\"")).unwrap();
            let rest = &first[at..];
            let x = &rest[rest.find("<rect x=\"").unwrap() + 9..];
            x[..x.find('"').unwrap()].parse().unwrap()
        };
        assert!(x("eno1") < x("bond0") && x("bond0") < x("bond0.10") && x("bond0.10") < x("br0"));
        assert_eq!(x("eno1"), x("eno2"));
        // Every host in the data, none drawn as its own diagram.
        assert!(html.contains("[\"w-5\",\"worker\",1,"), "{html}");
        // BMC addresses after the first are coded against the previous one.
        assert!(html.contains("\"ipmi://10.1.0.0\""), "{html}");
        assert!(html.contains("[14,\"1\"]"), "{html}");
    }

    #[test]
    fn input_text_is_escaped_everywhere() {
        let hostile = "<script>alert(1)</script>\"'&";
        let mut host = nodenet_model::Host::new(
            nodenet_model::Located::new(hostile.to_string(), Default::default()),
            nodenet_model::InputKind::Inventory,
        );
        let net = format!(
            "interfaces:\n- name: '{}'\n  type: ethernet\n  state: up\n",
            "<img src=x onerror=alert(2)>".replace('\'', "''")
        );
        host.network = Some(nodenet_model::yaml::parse(&net, 0).unwrap());
        let inv = Inventory {
            hosts: vec![host],
            ..Inventory::default()
        };
        let mut cluster = inv.cluster.clone();
        cluster.name = Some(nodenet_model::Located::new(
            "</title><script>alert(3)</script>".into(),
            Default::default(),
        ));
        let inv = Inventory { cluster, ..inv };
        let report = nodenet_check::check(&inv, Vec::new());
        let html = page(&inv, &views(&inv, &report));
        // Exactly our two script elements, and no element from the input.
        assert_eq!(html.matches("<script").count(), 2, "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"));
        assert!(html.contains("&lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt;"));
        // In the JSON block, `<` never appears raw.
        let data = &html[html.find("id=\"fleet-data\">").unwrap()..];
        let data = &data[..data.find("</script>").unwrap()];
        assert!(!data.contains('<'), "{data}");
        let json: J = serde_json::from_str(&data[data.find('>').unwrap() + 1..]).unwrap();
        assert_eq!(json["hosts"][0][0], J::String(hostile.into()));
    }

    #[test]
    fn the_csp_names_the_pages_own_script_and_style() {
        let html = page_of(INV);
        let csp = &html[html.find("Content-Security-Policy").unwrap()..];
        let csp = &csp[..csp.find('>').unwrap()];
        assert!(csp.contains("default-src 'none'"));
        let script = &html[html.rfind("<script>").unwrap() + 8..html.rfind("</script>").unwrap()];
        assert_eq!(script, SCRIPT);
        assert!(csp.contains(&csp_hash(script)), "{csp}");
        assert!(csp.contains(&csp_hash(STYLE)), "{csp}");
        // Nothing to fetch: no src, and links only within the page.
        assert!(!html.contains(" src="));
        for href in html.split(" href=\"").skip(1) {
            assert!(href.starts_with('#'), "{}", &href[..40.min(href.len())]);
        }
    }

    #[test]
    fn the_page_is_byte_identical_on_rerun() {
        assert_eq!(page_of(INV), page_of(INV));
    }
}

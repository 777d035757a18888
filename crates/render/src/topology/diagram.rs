//! One diagram per shape of host: boxes for interfaces, edges from ports to
//! their controllers and VLANs to their bases, laid out in layers.

use super::*;

/// Monospace advance at the diagram's 12px font, with some slack.
pub(super) const CHAR_W: f64 = 7.4;
/// At the badges' 11px bold.
pub(super) const BADGE_CHAR_W: f64 = 6.9;
pub(super) const PAD: f64 = 8.0;
pub(super) const LINE: f64 = 16.0;
pub(super) const BADGE_H: f64 = 16.0;
pub(super) const COL_GAP: f64 = 64.0;
pub(super) const ROW_GAP: f64 = 14.0;
pub(super) const MAX_CHARS: usize = 34;
pub(super) const MAX_ADDRESSES: usize = 3;

/// A box of the diagram.
pub(super) struct NodeBox {
    pub(super) name: String,
    pub(super) class: &'static str,
    pub(super) lines: Vec<String>,
    pub(super) badges: Vec<(&'static str, String)>,
    pub(super) layer: usize,
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) w: f64,
    pub(super) h: f64,
}

pub(super) fn class_of(i: &IfaceView) -> &'static str {
    match i.kind.as_deref() {
        Some("ethernet") | None => "ethernet",
        Some("bond") => "bond",
        Some("vlan") => "vlan",
        Some("linux-bridge") | Some("ovs-bridge") => "bridge",
        _ => "other",
    }
}

pub(super) fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_CHARS {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_CHARS - 1).collect();
        t.push('…');
        t
    }
}

/// What a box says besides the name: type, MTU, state, addresses.
pub(super) fn box_lines(i: &IfaceView) -> Vec<String> {
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
pub(super) fn diagram(shape: &Shape, hosts: &[HostView], out: &mut String) {
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
pub(super) type Edge = (usize, usize, &'static str);

/// A box per interface (and per name the state refers to but lacks), and
/// the edges from port to controller and from base to VLAN.
pub(super) fn boxes_and_edges(ifaces: &[IfaceView]) -> (Vec<NodeBox>, Vec<Edge>) {
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
pub(super) fn assign_layers(boxes: &mut [NodeBox], edges: &[Edge]) {
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
pub(super) fn add_badges(shape: &Shape, hosts: &[HostView], drawn: usize, boxes: &mut [NodeBox]) {
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
pub(super) fn size_boxes(boxes: &mut [NodeBox]) {
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
pub(super) fn place_columns(boxes: &mut [NodeBox], edges: &[Edge]) -> (f64, f64) {
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
pub(super) fn caption(shape: &Shape, hosts: &[HostView], out: &mut String) {
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
pub(super) fn draw(
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

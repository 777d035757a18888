//! The page's style sheet and script, inline (one file, a CSP hash each).

pub(super) const STYLE: &str = r#"
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

pub(super) const SCRIPT: &str = r##"
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

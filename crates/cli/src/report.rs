//! Printing diagnostics: rustc/miette style for people, one JSON object
//! for machines (the format in DESIGN.md).

use std::borrow::Cow;
use std::io::Write;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteSpanContents, SourceCode,
    SourceSpan, SpanContents,
};
use nodenet_model::{Diagnostic, Severity, SourceFile, SourceMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    #[default]
    Human,
    Json,
}

/// What miette shows of a source file for one diagnostic: only the lines
/// around its labels, each cut to the screen's width and with control
/// characters escaped, so neither a 300 MB one-line file nor an escape
/// sequence in a name reaches the terminal. Offsets are this text's own.
#[derive(Debug)]
struct Snippet {
    name: String,
    text: String,
    /// Runs of consecutive lines: (start, end) in `text`, 0-based number
    /// of the first line in the file.
    chunks: Vec<(usize, usize, usize)>,
    /// Where each label starts in `text`, and its line and column in the
    /// file (0-based), for the `[file:line:column]` header.
    starts: Vec<(usize, usize, usize)>,
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, miette::MietteError> {
        let at = span.offset();
        let &(start, end, first_line) = self
            .chunks
            .iter()
            .find(|(s, e, _)| *s <= at && at <= *e)
            .ok_or(miette::MietteError::OutOfBounds)?;
        let data = &self.text.as_bytes()[start..end];
        let lines = data.iter().filter(|b| **b == b'\n').count() + 1;
        let (line, column) = match self.starts.iter().find(|(s, _, _)| *s == at) {
            Some(&(_, line, column)) if before == 0 && after == 0 => (line, column),
            _ => (first_line, 0),
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            data,
            SourceSpan::new(start.into(), end - start),
            line,
            column,
            lines,
        )))
    }
}

/// Whether a terminal would act on `c` rather than show it: C0 and C1
/// controls, DEL, and the bidirectional overrides that reorder what is
/// shown.
fn is_hostile(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` as it may be printed: itself, or `\x1b` / `\u{202e}`.
fn push_escaped(out: &mut String, c: char) {
    if !is_hostile(c) {
        out.push(c);
    } else if (c as u32) < 0x80 {
        out.push_str(&format!("\\x{:02x}", c as u32));
    } else {
        out.push_str(&format!("\\u{{{:x}}}", c as u32));
    }
}

/// Text from an input (a name, a value, a message quoting one) as it may
/// reach a terminal: control characters escaped, newlines kept when
/// `lines` (help text is written on several), and at most `max`
/// characters.
pub fn escape(s: &str, lines: bool, max: usize) -> Cow<'_, str> {
    let clean = |c: char| !is_hostile(c) || lines && c == '\n';
    if s.len() <= max && s.chars().all(clean) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().min(max) + 8);
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if lines && c == '\n' {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Longest message, name or help shown (characters); the JSON output has
/// them whole.
const MAX_TEXT: usize = 2000;

/// How far a line is looked into for its start or end (bytes): a file of
/// one 300 MB line is not scanned per diagnostic.
const LOOK: usize = 64 * 1024;

/// Characters of a snippet line shown: the screen's width less the gutter.
pub fn snippet_width() -> usize {
    let columns = terminal_columns()
        .or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .unwrap_or(120);
    columns.saturating_sub(12).max(40)
}

/// stderr's width when it is a terminal.
fn terminal_columns() -> Option<usize> {
    if !crate::ui::stderr_is_tty() {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills the winsize it is given, nothing else.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

/// One line of the file: byte range, and whether its ends were found
/// (a line longer than [`LOOK`] is cut where the looking stopped).
#[derive(Clone, Copy)]
struct LineAt {
    start: usize,
    end: usize,
    whole_start: bool,
    whole_end: bool,
}

/// The line around byte `at` of `text`.
fn line_around(text: &str, at: usize) -> LineAt {
    let bytes = text.as_bytes();
    let at = at.min(bytes.len());
    let lo = at.saturating_sub(LOOK);
    let (start, whole_start) = match memrchr(b'\n', &bytes[lo..at]) {
        Some(i) => (lo + i + 1, true),
        None => (lo, lo == 0),
    };
    let hi = (at + LOOK).min(bytes.len());
    let (end, whole_end) = match bytes[at..hi].iter().position(|b| *b == b'\n') {
        Some(i) => (at + i, true),
        None => (hi, hi == bytes.len()),
    };
    let mut line = LineAt {
        start: floor_char(text, start),
        end: floor_char(text, end),
        whole_start,
        whole_end,
    };
    if whole_end && line.end > line.start && bytes[line.end - 1] == b'\r' {
        line.end -= 1;
    }
    line
}

fn memrchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().rposition(|b| *b == needle)
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A label to place: byte range in the file, its text, primary or not,
/// and its (1-based) line and column.
struct Mark {
    offset: usize,
    len: usize,
    label: Option<String>,
    primary: bool,
    line: u32,
    column: u32,
}

/// The snippet of `file` around `marks`, and the marks placed in it (a
/// related mark that does not fit beside the primary one on its line is
/// left out).
fn snippet(file: &SourceFile, marks: &[Mark], width: usize) -> Option<(Snippet, Vec<LabeledSpan>)> {
    let text = file.shown();
    let mut lines: std::collections::BTreeMap<u32, (LineAt, Vec<&Mark>)> = Default::default();
    for m in marks
        .iter()
        .filter(|m| m.offset <= text.len() && m.line > 0)
    {
        let at = lines
            .entry(m.line)
            .or_insert_with(|| (line_around(text, m.offset), Vec::new()));
        at.1.push(m);
    }
    if lines.is_empty() {
        return None;
    }
    // One line of context either side, where its line is found whole.
    let marked: Vec<(u32, LineAt)> = lines.iter().map(|(n, (l, _))| (*n, *l)).collect();
    for (n, l) in marked {
        if n > 1 && l.whole_start && l.start > 0 {
            lines
                .entry(n - 1)
                .or_insert_with(|| (line_around(text, l.start - 1), Vec::new()));
        }
        if l.whole_end && l.end < text.len() {
            let next = text[l.end..].find('\n').map(|i| l.end + i + 1);
            if let Some(next) = next.filter(|&i| i < text.len()) {
                lines
                    .entry(n + 1)
                    .or_insert_with(|| (line_around(text, next), Vec::new()));
            }
        }
    }
    let mut out = Snippet {
        name: escape(&file.name, false, MAX_TEXT).into_owned(),
        text: String::new(),
        chunks: Vec::new(),
        starts: Vec::new(),
    };
    let mut placed = Vec::new();
    let mut prev: Option<u32> = None;
    let mut chunk_start = 0;
    let mut chunk_line = 0;
    for (&n, (line, on_line)) in &lines {
        match prev {
            Some(p) if p + 1 == n => out.text.push('\n'),
            Some(_) => {
                out.chunks.push((chunk_start, out.text.len(), chunk_line));
                out.text.push('\n');
                chunk_start = out.text.len();
                chunk_line = n as usize - 1;
            }
            None => chunk_line = n as usize - 1,
        }
        prev = Some(n);
        // The part of the line shown: all of it when it fits, else
        // `width` characters from a third of a width before the first
        // (primary) mark.
        let focus = on_line
            .iter()
            .find(|m| m.primary)
            .or(on_line.first())
            .map(|m| m.offset.clamp(line.start, line.end));
        let full = &text[line.start..line.end];
        let (from, to) = if line.whole_start && line.whole_end && full.chars().count() <= width {
            (line.start, line.end)
        } else {
            let focus = focus.unwrap_or(line.start);
            let from = text[line.start..focus]
                .char_indices()
                .rev()
                .nth(width / 3)
                .map(|(i, _)| line.start + i)
                .unwrap_or(line.start);
            let to = text[from..line.end]
                .char_indices()
                .nth(width)
                .map(|(i, _)| from + i)
                .unwrap_or(line.end);
            (from, to)
        };
        if from > line.start || !line.whole_start {
            out.text.push('…');
        }
        let base = out.text.len();
        let mut map: Vec<(usize, usize)> = Vec::new();
        for (i, c) in text[from..to].char_indices() {
            map.push((from + i, out.text.len()));
            push_escaped(&mut out.text, c);
        }
        map.push((to, out.text.len()));
        if to < line.end || !line.whole_end {
            out.text.push('…');
        }
        let place = |at: usize| {
            map.iter()
                .find(|(o, _)| *o >= at)
                .map(|(_, s)| *s)
                .unwrap_or(base)
        };
        for m in on_line {
            if m.offset < from || m.offset > to {
                continue;
            }
            let start = place(m.offset);
            let end = place((m.offset + m.len.max(1)).min(to)).max(start + 1);
            let end = end.min(out.text.len());
            let span = (start, end.saturating_sub(start).max(1));
            out.starts.push((
                start,
                m.line as usize - 1,
                m.column.saturating_sub(1) as usize,
            ));
            placed.push(if m.primary {
                LabeledSpan::new_primary_with_span(m.label.clone(), span)
            } else {
                LabeledSpan::new_with_span(m.label.clone(), span)
            });
        }
    }
    out.chunks.push((chunk_start, out.text.len(), chunk_line));
    if placed.is_empty() {
        return None;
    }
    Some((out, placed))
}

/// A diagnostic with its snippet, in the shape miette renders.
#[derive(Debug)]
struct Shown<'a> {
    d: &'a Diagnostic,
    src: Option<Snippet>,
    labels: Vec<LabeledSpan>,
    title: String,
    help: Option<String>,
}

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.title)
    }
}

impl std::error::Error for Shown<'_> {}

impl miette::Diagnostic for Shown<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.d.code.as_str()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.src.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        // Labels only where there is source text to put them on.
        self.src.as_ref()?;
        Some(Box::new(self.labels.clone().into_iter()))
    }
}

/// `hosts` are every host the same finding applies to (one template
/// mistake shows once, not once per generated host); `varies` when their
/// messages differ in the values they name (the first one's is shown).
fn title(d: &Diagnostic, hosts: &[&str], varies: bool, sources: &SourceMap) -> String {
    let loc = match d.span {
        Some(s) => format!("{}:{}:{}: ", sources.name(s.file), s.line, s.column),
        None => String::new(),
    };
    let who = match hosts {
        [] => String::new(),
        [h] => format!("[{h}] "),
        [a, b] => format!("[{a}, {b}] "),
        [a, b, rest @ ..] => format!(
            "[{a}, {b} and {} more {}] ",
            rest.len(),
            nodenet_model::names::plural(rest.len(), "host")
        ),
    };
    let values = match hosts.first() {
        Some(first) if varies => format!(" (shown for {first})"),
        _ => String::new(),
    };
    let message = escape(&d.message, false, MAX_TEXT);
    escape(&format!("{loc}{who}{message}{values}"), false, 3 * MAX_TEXT).into_owned()
}

/// Findings shown as one report: the same code at the same place with the
/// same severity, for different hosts (the hosts of one template line),
/// whatever per-host values their messages name; without a place or a
/// host, only identical ones.
fn group_key(
    d: &Diagnostic,
) -> (
    nodenet_model::Code,
    Option<nodenet_model::Span>,
    Severity,
    Option<&str>,
) {
    let per_host = d.span.is_some() && d.host.is_some();
    (
        d.code,
        d.span,
        d.severity,
        (!per_host).then_some(d.message.as_str()),
    )
}

/// Prints every diagnostic and a summary line to stderr (human) or one
/// JSON object to stdout (json).
/// The `--format json` object: `{"diagnostics": [...]}`.
pub fn to_json(sources: &SourceMap, diags: &[Diagnostic]) -> serde_json::Value {
    let list: Vec<serde_json::Value> = relocated(sources, diags)
        .iter()
        .map(|d| {
            let mut o = serde_json::json!({
                "severity": d.severity,
                "code": d.code,
                "message": d.message,
                "file": d.span.map(|s| sources.name(s.file).to_string()),
                "line": d.span.map(|s| s.line),
                "column": d.span.map(|s| s.column),
                "host": d.host,
            });
            if let Some(h) = &d.help {
                o["help"] = serde_json::json!(h);
            }
            o
        })
        .collect();
    serde_json::json!({ "diagnostics": list })
}

/// The JSON object of a command that could not do its work: one error
/// diagnostic without a place in an input, e.g. `{"diagnostics":[{"severity":
/// "error","code":"io","message":"cannot read nope.yaml: …","file":"nope.yaml",
/// "line":null,"column":null,"host":null}]}`.
pub fn error_json(code: &str, message: &str, file: Option<&str>) -> serde_json::Value {
    serde_json::json!({
        "diagnostics": [{
            "severity": "error",
            "code": code,
            "message": message,
            "file": file,
            "line": null,
            "column": null,
            "host": null,
        }]
    })
}

/// Findings inside embedded texts (a MachineConfig's data: URL, a
/// Secret's value) at their place in the real file.
pub(crate) fn relocated<'a>(sources: &SourceMap, diags: &'a [Diagnostic]) -> Cow<'a, [Diagnostic]> {
    if !sources.has_embedded() {
        return Cow::Borrowed(diags);
    }
    let mut moved = diags.to_vec();
    sources.relocate(&mut moved);
    Cow::Owned(moved)
}

pub fn print(sources: &SourceMap, diags: &[Diagnostic], format: Format) {
    let diags = &relocated(sources, diags)[..];
    match format {
        Format::Json => println!("{}", to_json(sources, diags)),
        Format::Human if !crate::ui::chatty() => {
            // --quiet: errors only.
            let errors: Vec<Diagnostic> = diags.iter().filter(|d| d.is_error()).cloned().collect();
            let text = human(sources, &errors, crate::ui::color_stderr());
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
        Format::Human => {
            let text = human(sources, diags, crate::ui::color_stderr());
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
    }
}

/// The diagnostics as people read them (rustc/miette style), one report
/// per finding with the hosts it applies to, in the order they come.
pub fn human(sources: &SourceMap, diags: &[Diagnostic], color: bool) -> String {
    let handler = GraphicalReportHandler::new_themed(if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    });
    let width = snippet_width();
    let mut order: Vec<Vec<usize>> = Vec::new();
    let mut groups: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    for (i, d) in diags.iter().enumerate() {
        match groups.entry(group_key(d)) {
            std::collections::hash_map::Entry::Occupied(g) => order[*g.get()].push(i),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(order.len());
                order.push(vec![i]);
            }
        }
    }
    let mut out = String::new();
    // Past SHOWN_PER_CODE reports of one code, the rest are named only.
    let mut shown_per_code: std::collections::HashMap<&str, usize> = Default::default();
    let mut unshown: Vec<(&str, Vec<String>)> = Vec::new();
    for group in order {
        let d = &diags[group[0]];
        let code = d.code.as_str();
        let n = shown_per_code.entry(code).or_default();
        *n += 1;
        if *n > SHOWN_PER_CODE {
            let at = match unshown.iter().position(|(c, _)| *c == code) {
                Some(i) => i,
                None => {
                    unshown.push((code, Vec::new()));
                    unshown.len() - 1
                }
            };
            unshown[at].1.push(where_said(d, sources));
            continue;
        }
        let mut seen = std::collections::HashSet::new();
        let hosts: Vec<&str> = group
            .iter()
            .filter_map(|&i| diags[i].host.as_deref())
            .filter(|h| seen.insert(*h))
            .collect();
        let hosts: Vec<String> = hosts
            .iter()
            .map(|h| escape(h, false, 200).into_owned())
            .collect();
        let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
        let varies = group.iter().any(|&i| diags[i].message != d.message);
        let marks: Vec<Mark> = d
            .span
            .into_iter()
            .map(|s| Mark {
                offset: s.offset as usize,
                len: s.len as usize,
                label: Some("here".into()),
                primary: true,
                line: s.line,
                column: s.column,
            })
            .chain(
                d.related
                    .iter()
                    .filter(|(r, _)| d.span.is_some_and(|s| s.file == r.file))
                    .map(|(r, label)| Mark {
                        offset: r.offset as usize,
                        len: r.len as usize,
                        label: Some(escape(label, false, 200).into_owned()),
                        primary: false,
                        line: r.line,
                        column: r.column,
                    }),
            )
            .collect();
        let shown_src = d
            .span
            .and_then(|s| sources.get(s.file))
            .and_then(|f| snippet(f, &marks, width));
        let (src, labels) = match shown_src {
            Some((s, l)) => (Some(s), l),
            None => (None, Vec::new()),
        };
        let shown = Shown {
            d,
            src,
            labels,
            title: title(d, &hosts, varies, sources),
            help: d
                .help
                .as_deref()
                .map(|h| escape(h, true, MAX_TEXT).into_owned()),
        };
        let mut buf = String::new();
        if handler.render_report(&mut buf, &shown).is_ok() {
            out.push_str(&buf);
            out.push('\n');
        }
    }
    for (code, wheres) in unshown {
        // Each place once, with how often (one host copied 1,000 times).
        let mut counts: Vec<(&str, usize)> = Vec::new();
        let mut at: std::collections::HashMap<&str, usize> = Default::default();
        for w in &wheres {
            match at.get(w.as_str()) {
                Some(&i) => counts[i].1 += 1,
                None => {
                    at.insert(w, counts.len());
                    counts.push((w, 1));
                }
            }
        }
        let named: Vec<String> = counts
            .iter()
            .take(5)
            .map(|(place, n)| match n {
                1 => place.to_string(),
                n => format!("{place} ×{n}"),
            })
            .collect();
        out.push_str(&format!(
            "… and {} more `{code}`: {}{} (`--format json` lists every one)\n",
            wheres.len(),
            named.join(", "),
            if counts.len() > named.len() {
                ", …"
            } else {
                ""
            }
        ));
    }
    out
}

/// Reports of one code shown in full; the rest are counted and named, so
/// a fleet of copies of one mistake prints a screen, not a report per copy.
const SHOWN_PER_CODE: usize = 20;

/// Where an unshown finding is: its host, else its file and line.
fn where_said(d: &Diagnostic, sources: &SourceMap) -> String {
    if let Some(h) = &d.host {
        return escape(h, false, 200).into_owned();
    }
    match d.span.and_then(|s| sources.get(s.file).map(|f| (f, s))) {
        Some((f, s)) => format!("{}:{}", escape(&f.name, false, 200), s.line),
        None => escape(&d.message, false, 80).into_owned(),
    }
}

/// "2 errors, 1 warning" for the closing line.
pub fn summary(diags: &[Diagnostic]) -> String {
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let warnings = diags.len() - errors;
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    )
}

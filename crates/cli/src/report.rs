//! Printing diagnostics: rustc/miette style for people, one JSON object
//! for machines (the format in DESIGN.md).

use std::borrow::Cow;
use std::io::Write;
use std::sync::Arc;

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

/// One source file as miette sees it: the text plus its name.
#[derive(Debug)]
struct Src(Arc<SourceFile>);

impl SourceCode for Src {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, miette::MietteError> {
        let inner = self.0.shown().read_span(span, before, after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.0.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line(),
            inner.column(),
            inner.line_count(),
        )))
    }
}

/// A diagnostic with its source, in the shape miette renders.
#[derive(Debug)]
struct Shown<'a> {
    d: &'a Diagnostic,
    src: Option<Src>,
    title: String,
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
        self.d
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.src.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.d.span?;
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            Some("here".into()),
            (span.offset as usize, span.len as usize),
        )];
        if let Some((rel, label)) = &self.d.related {
            if rel.file == span.file {
                labels.push(LabeledSpan::new_with_span(
                    Some(label.clone()),
                    (rel.offset as usize, rel.len as usize),
                ));
            }
        }
        Some(Box::new(labels.into_iter()))
    }
}

/// `hosts` are every host the same finding applies to (one template
/// mistake shows once, not once per generated host).
fn title(d: &Diagnostic, hosts: &[&str], sources: &SourceMap) -> String {
    let loc = match d.span {
        Some(s) => format!("{}:{}:{}: ", sources.name(s.file), s.line, s.column),
        None => String::new(),
    };
    let who = match hosts {
        [] => String::new(),
        [h] => format!("[{h}] "),
        [a, b] => format!("[{a}, {b}] "),
        [a, b, rest @ ..] => format!("[{a}, {b} and {} more hosts] ", rest.len()),
    };
    format!("{loc}{who}{}", d.message)
}

/// Same finding at the same place, differing only in host.
fn same_finding(a: &Diagnostic, b: &Diagnostic) -> bool {
    a.code == b.code && a.span == b.span && a.message == b.message && a.severity == b.severity
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
fn relocated<'a>(sources: &SourceMap, diags: &'a [Diagnostic]) -> Cow<'a, [Diagnostic]> {
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
/// per finding with the hosts it applies to.
pub fn human(sources: &SourceMap, diags: &[Diagnostic], color: bool) -> String {
    let handler = GraphicalReportHandler::new_themed(if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    });
    let mut out = String::new();
    let mut i = 0;
    while i < diags.len() {
        let d = &diags[i];
        let group = diags[i..].iter().take_while(|o| same_finding(d, o)).count();
        let hosts: Vec<&str> = diags[i..i + group]
            .iter()
            .filter_map(|o| o.host.as_deref())
            .collect();
        i += group;
        let shown = Shown {
            d,
            src: d
                .span
                .and_then(|s| sources.get(s.file))
                .map(|f| Src(f.clone())),
            title: title(d, &hosts, sources),
        };
        let mut buf = String::new();
        if handler.render_report(&mut buf, &shown).is_ok() {
            out.push_str(&buf);
            out.push('\n');
        }
    }
    out
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

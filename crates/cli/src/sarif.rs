//! `check --format sarif`: the findings as SARIF 2.1.0, the format
//! code-scanning UIs read, so that each shows on its file and line of a
//! pull request. Every code is a rule (its id the code, its text the
//! docs/codes.md's explanation); a finding is a result at its file, line and
//! column, paths relative to the working directory (the repository's root
//! in a CI job).

use nodenet_model::{Code, Diagnostic, Severity, SourceMap};
use serde_json::{json, Value};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// A path as a SARIF `uri`: relative to the working directory when it is
/// under it, percent-encoded where a URI needs it.
fn uri(path: &str) -> String {
    let p = std::path::Path::new(path);
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| p.strip_prefix(&cwd).ok().map(|r| r.to_path_buf()))
        .unwrap_or_else(|| p.to_path_buf());
    let text = shown.to_string_lossy();
    let mut out = String::with_capacity(text.len());
    if p.is_absolute() && shown.is_absolute() {
        out.push_str("file://");
    }
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn location(sources: &SourceMap, span: nodenet_model::Span) -> Value {
    json!({
        "physicalLocation": {
            "artifactLocation": {"uri": uri(sources.name(span.file))},
            "region": {"startLine": span.line.max(1), "startColumn": span.column.max(1)},
        }
    })
}

pub fn to_sarif(sources: &SourceMap, diags: &[Diagnostic]) -> Value {
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.as_str(),
                "shortDescription": {"text": c.explain()},
                "help": {"text": format!("nodenet explain {}", c.as_str())},
            })
        })
        .collect();
    let results: Vec<Value> = crate::report::relocated(sources, diags)
        .iter()
        .map(|d| {
            let index = Code::ALL.iter().position(|c| *c == d.code).unwrap_or(0);
            let mut text = d.message.clone();
            if let Some(h) = &d.help {
                text.push_str(&format!(" (help: {h})"));
            }
            if let Some(host) = &d.host {
                text = format!("{host}: {text}");
            }
            let mut r = json!({
                "ruleId": d.code.as_str(),
                "ruleIndex": index,
                "level": match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                },
                "message": {"text": text},
            });
            if let Some(span) = d.span {
                r["locations"] = json!([location(sources, span)]);
            }
            if let Some((span, what)) = &d.related {
                let mut l = location(sources, *span);
                l["id"] = json!(0);
                l["message"] = json!({"text": what});
                r["relatedLocations"] = json!([l]);
            }
            r
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "nodenet",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_and_encoded() {
        assert_eq!(uri("tests/bad/a b.yaml"), "tests/bad/a%20b.yaml");
        let cwd = std::env::current_dir().unwrap();
        let abs = cwd.join("x/y.yaml");
        assert_eq!(uri(abs.to_str().unwrap()), "x/y.yaml");
        assert_eq!(uri("/elsewhere/z.yaml"), "file:///elsewhere/z.yaml");
    }
}

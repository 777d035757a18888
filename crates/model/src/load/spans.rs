//! Places in the input files: a file's start, a byte offset's line and
//! column, and the spans of secrets (never quoted back).

use super::*;

pub(super) fn file_start(file: FileId) -> Span {
    Span {
        file,
        line: 1,
        column: 1,
        offset: 0,
        len: 1,
    }
}

pub(super) fn span_of_offset(text: &str, file: FileId, offset: usize) -> Span {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    Span {
        file,
        line: line as u32,
        column: col as u32,
        offset: offset as u32,
        len: 1,
    }
}

/// Byte ranges of every `password:` value (and of a Secret's values), so
/// no snippet ever shows one.
pub(super) fn secret_spans(root: &Node) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let is_secret = root.get("kind").and_then(Node::as_str) == Some("Secret");
    password_values(root, &mut out);
    if is_secret {
        // A Secret's values other than the network (NMState,
        // network_data.json) are credentials.
        for key in ["data", "stringData"] {
            for (k, v) in root.get(key).and_then(Node::as_map).unwrap_or_default() {
                if !matches!(k.as_str(), Some("nmstate" | "networkData")) && v.as_str().is_some() {
                    out.push((v.span.offset as usize, v.span.len as usize));
                }
            }
        }
    }
    out
}

/// The spans of `password:` values (the key in any case) at or below
/// `node`, in document order. A long sequence's items (10,000 hosts of
/// an install-config) are searched on every core.
fn password_values(node: &Node, out: &mut Vec<(usize, usize)>) {
    use crate::yaml::Value;
    use rayon::prelude::*;
    match &node.value {
        Value::Map(entries) => {
            for (k, v) in entries {
                if k.as_str()
                    .is_some_and(|k| k.eq_ignore_ascii_case("password"))
                {
                    // The value's length in the source (quotes included).
                    out.push((v.span.offset as usize, v.span.len as usize));
                }
                password_values(k, out);
                password_values(v, out);
            }
        }
        Value::Seq(items) if items.len() >= 256 => {
            let found: Vec<Vec<(usize, usize)>> = items
                .par_iter()
                .map(|item| {
                    let mut found = Vec::new();
                    password_values(item, &mut found);
                    found
                })
                .collect();
            out.extend(found.into_iter().flatten());
        }
        Value::Seq(items) => items.iter().for_each(|item| password_values(item, out)),
        _ => {}
    }
}

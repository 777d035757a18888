//! Parsing a large document on every core.
//!
//! A 10,000-host install-config is 15 MB, nearly all of it the items of one
//! block sequence (`platform.baremetal.hosts`, each with its own
//! `networkConfig`). Those items are parsed in parallel, each run of them
//! as a document of its own placed at its line and byte in the file, and
//! the rest of the file (the "skeleton": the text with the run of items
//! cut out but for their line breaks and a one-item `- ~`) serially; the
//! items then take the place of the `~`. The tree is the one a serial
//! parse gives, spans included (tested against it).
//!
//! Only plain cases are split: one document, no tab, no CR, items at one
//! indentation with everything between them indented deeper. Anything a
//! piece cannot parse on its own (an alias to an anchor in another piece,
//! a quoted scalar cut in two) is an error of that piece, and the whole
//! text is then parsed serially: the result (or the error) is always the
//! serial one.

use rayon::prelude::*;

use super::{parse_at, Base, Cut, FileId, Node, Value};

/// Smaller texts are parsed serially.
const MIN_BYTES: usize = 1 << 20;
/// A sequence with fewer items is not worth splitting.
const MIN_ITEMS: usize = 64;

/// The documents of `text`, or `None` when it is not worth splitting or
/// not plain enough (then the caller parses it serially).
pub(super) fn parse_in_parallel(text: &str, file: FileId) -> Option<Vec<Node>> {
    if text.len() < MIN_BYTES || memchr::memchr2(b'\t', b'\r', text.as_bytes()).is_some() {
        return None;
    }
    let run = longest_run(text)?;
    let pieces = pieces(&run, rayon::current_num_threads() * 4);
    let items: Vec<Vec<Node>> = pieces
        .par_iter()
        .map(|&(start, end, line)| {
            let base = Base {
                line: line - 1,
                offset: start as u32,
                ..Base::default()
            };
            let mut docs = parse_at(&text[start..end], file, base).ok()?;
            match (docs.pop(), docs.is_empty()) {
                (
                    Some(Node {
                        value: Value::Seq(items),
                        ..
                    }),
                    true,
                ) => Some(items),
                _ => None,
            }
        })
        .collect::<Option<_>>()?;
    let items: Vec<Node> = items.into_iter().flatten().collect();
    if items.len() != run.items.len() {
        return None;
    }
    let (skeleton, cut) = skeleton(text, &run)?;
    let base = Base {
        cut,
        ..Base::default()
    };
    let mut docs = parse_at(&skeleton, file, base).ok()?;
    let placeholder = run.items[0].0 + run.indent + 2;
    let mut items = Some(items);
    let placed = docs
        .iter_mut()
        .any(|doc| place(doc, placeholder, &mut items));
    placed.then_some(docs)
}

/// Consecutive items of one block sequence: where each starts (the byte
/// of its line and the line number), and where the last one ends.
struct Run {
    indent: usize,
    /// (byte offset of the item's line, 1-based line number)
    items: Vec<(usize, u32)>,
    end: usize,
}

/// The block sequence with the most items, if it has enough and the text
/// is one document.
fn longest_run(text: &str) -> Option<Run> {
    let mut best: Option<Run> = None;
    let mut current: Option<Run> = None;
    let bytes = text.as_bytes();
    let mut offset = 0;
    let mut line_no = 0u32;
    while offset < bytes.len() {
        let start = offset;
        offset = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |at| start + at + 1);
        line_no += 1;
        let content = &bytes[start..offset];
        let content = content.strip_suffix(b"\n").unwrap_or(content);
        // Most lines are inside the run's items: a line that begins with
        // more spaces than the run's indentation is inside it, or blank,
        // or a comment (all passed over), so no more of it is read.
        if let Some(r) = &current {
            if content.len() > r.indent && content[..=r.indent].iter().all(|&b| b == b' ') {
                continue;
            }
        }
        if content.starts_with(b"---") || content.starts_with(b"...") || content.starts_with(b"%") {
            return None;
        }
        let indent = content.iter().take_while(|&&b| b == b' ').count();
        let trimmed = &content[indent..];
        if trimmed.is_empty() || trimmed.starts_with(b"#") {
            continue;
        }
        let item = trimmed == b"-" || trimmed.starts_with(b"- ");
        let inside = current.as_ref().is_some_and(|r| indent > r.indent);
        if inside {
            continue;
        }
        let same_run = item && current.as_ref().is_some_and(|r| r.indent == indent);
        if let Some(r) = current.as_mut().filter(|_| same_run) {
            r.items.push((start, line_no));
            continue;
        }
        // This line ends the run in progress (and may start another).
        if let Some(mut r) = current.take() {
            r.end = start;
            if best.as_ref().is_none_or(|b| r.items.len() > b.items.len()) {
                best = Some(r);
            }
        }
        if item {
            current = Some(Run {
                indent,
                items: vec![(start, line_no)],
                end: 0,
            });
        }
    }
    if let Some(mut r) = current.take() {
        r.end = text.len();
        if best.as_ref().is_none_or(|b| r.items.len() > b.items.len()) {
            best = Some(r);
        }
    }
    best.filter(|r| r.items.len() >= MIN_ITEMS)
}

/// The run cut into about `n` pieces of whole items: (start, end, line of
/// the start).
fn pieces(run: &Run, n: usize) -> Vec<(usize, usize, u32)> {
    let per = run.items.len().div_ceil(n.max(1));
    run.items
        .chunks(per)
        .enumerate()
        .map(|(k, chunk)| {
            let end = run
                .items
                .get((k + 1) * per)
                .map(|&(start, _)| start)
                .unwrap_or(run.end);
            (chunk[0].0, end, chunk[0].1)
        })
        .collect()
}

/// The text with the run cut out but for its line breaks, and `- ~` where
/// the first item began: the same lines, and bytes from the cut on moved
/// back by what it took (the parse moves their spans forward again).
fn skeleton(text: &str, run: &Run) -> Option<(String, Cut)> {
    let start = run.items[0].0;
    // The items' line breaks stay (every line keeps its number); the rest
    // of their bytes go, so the serial parse reads no 15 MB of blanks.
    let breaks = memchr::memchr_iter(b'\n', &text.as_bytes()[start..run.end]).count();
    let mut out = String::with_capacity(start + run.indent + 3 + breaks + text.len() - run.end);
    out.push_str(&text[..start]);
    super::pad(&mut out, run.indent);
    out.push_str("- ~");
    out.extend(std::iter::repeat_n('\n', breaks));
    let at = out.len();
    out.push_str(&text[run.end..]);
    // (No run of 64 items is shorter than its line breaks and `- ~`.)
    let cut = Cut {
        at: at as u32,
        by: run.end.checked_sub(at)? as u32,
    };
    Some((out, cut))
}

/// Puts `items` in the place of the one-item sequence whose null item is at
/// byte `at`; whether it was found.
fn place(node: &mut Node, at: usize, items: &mut Option<Vec<Node>>) -> bool {
    match &mut node.value {
        Value::Seq(list)
            if list.len() == 1 && list[0].is_null() && list[0].span.offset as usize == at =>
        {
            match items.take() {
                Some(items) => {
                    *list = items;
                    true
                }
                None => false,
            }
        }
        Value::Seq(list) => list.iter_mut().any(|n| place(n, at, items)),
        Value::Map(entries) => entries.iter_mut().any(|(_, v)| place(v, at, items)),
        _ => false,
    }
}

#[cfg(test)]
mod tests;

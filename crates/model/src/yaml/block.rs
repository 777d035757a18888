//! Plain block YAML, read fast.
//!
//! Nearly every byte nodenet reads is YAML of one plain kind: block
//! mappings and sequences, one-line scalars and lists of them
//! (`server: [10.0.0.2]`), comments. A 10,000-host
//! install-config is 15 MB of it, and yaml-rust2 (a general scanner and
//! parser, character by character through a queue of tokens) took a
//! sixth of a render's CPU reading it.
//!
//! This reader takes that kind of text line by line and hands the
//! [`Builder`] the events yaml-rust2 would hand it, at the same marks
//! (yaml-rust2's own: a mapping starts at its first key's `:`, an
//! indentless sequence at its first item's content). At anything else
//! (other flow collections, block scalars, anchors, tags, a scalar over two
//! lines, an empty value, escapes, a tab or another control character,
//! non-ASCII text, a line yaml-rust2
//! would refuse) it stops, and the caller parses the text with
//! yaml-rust2 from the start: the tree, or the error, is always
//! yaml-rust2's. The `yaml_block` fuzz target and the tests below hold
//! the two to the same events.

use yaml_rust2::scanner::TScalarStyle;

use super::{fast_bytes, Builder, Mark, MAX_DEPTH, MAX_FAST_KEY};

/// The text is not of the plain kind this reader takes: parse it with
/// yaml-rust2.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct NotPlain;

/// An open collection and the column of its keys or dashes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Map(usize),
    /// A sequence; `true` when its dashes stand at its mapping key's
    /// column (an indentless sequence).
    Seq(usize, bool),
}

impl Open {
    fn indent(self) -> usize {
        match self {
            Open::Map(i) | Open::Seq(i, _) => i,
        }
    }
}

/// One line with content: where it starts, its number, its indentation.
#[derive(Clone, Copy)]
struct Line<'t> {
    start: usize,
    number: usize,
    indent: usize,
    /// From the indentation to the end of the line.
    content: &'t str,
}

/// Gives `builder` the events of `text` (one document), or stops at the
/// first thing this reader does not take. On [`NotPlain`] the builder
/// holds a partial tree and must be dropped.
pub(super) fn read(text: &str, builder: &mut Builder) -> Result<(), NotPlain> {
    if !fast_bytes(text) {
        return Err(NotPlain);
    }
    let mut reader = Reader {
        builder,
        stack: Vec::new(),
        pending: None,
        started: false,
    };
    let mut lines = lines(text).peekable();
    if lines.peek().is_none() {
        return Err(NotPlain);
    }
    for line in lines {
        reader.line(line)?;
    }
    if reader.pending.is_some() {
        return Err(NotPlain);
    }
    reader.end_document();
    Ok(())
}

/// The lines of `text` that hold more than a comment.
fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    text.split_inclusive('\n')
        .enumerate()
        .filter_map(move |(i, raw)| {
            let line_start = start;
            start += raw.len();
            let content = raw.strip_suffix('\n').unwrap_or(raw);
            let trimmed = content.trim_start_matches(' ');
            if trimmed.is_empty() || trimmed.starts_with('#') {
                return None;
            }
            Some(Line {
                start: line_start,
                number: i + 1,
                indent: content.len() - trimmed.len(),
                content: trimmed,
            })
        })
}

struct Reader<'b, 'a> {
    builder: &'b mut Builder<'a>,
    stack: Vec<Open>,
    /// A key written with no value on its line (`key:`): its column. Its
    /// value is the collection the next line starts.
    pending: Option<usize>,
    /// Whether the root collection has begun.
    started: bool,
}

impl Reader<'_, '_> {
    fn mark(line: &Line, col: usize) -> Mark {
        Mark {
            index: line.start + col,
            line: line.number,
            col,
        }
    }

    fn line(&mut self, line: Line) -> Result<(), NotPlain> {
        if line.indent == 0 && line.content.starts_with("---") {
            return self.next_document(line);
        }
        if line.indent == 0 && line.content.starts_with("...") {
            return Err(NotPlain);
        }
        let item = is_item(line.content);
        if !self.started {
            self.started = true;
            return if item {
                self.open_seq(line, false)
            } else {
                self.entry(line, line.indent, true)
            };
        }
        if let Some(key_col) = self.pending.take() {
            return self.value_below(line, key_col, item);
        }
        // Close what this line is left of (and an indentless sequence
        // that a key at its column ends).
        while let Some(&top) = self.stack.last() {
            let ends = top.indent() > line.indent
                || matches!(top, Open::Seq(i, true) if i == line.indent && !item);
            if !ends {
                break;
            }
            self.stack.pop();
            self.builder.close();
        }
        match self.stack.last() {
            // The root has ended and more follows: not one plain document.
            None => Err(NotPlain),
            Some(&Open::Map(i)) if i == line.indent && !item => {
                self.entry(line, line.indent, false)
            }
            Some(&Open::Seq(i, _)) if i == line.indent && item => self.item(line),
            // Deeper than its collection after a scalar (a scalar over two
            // lines), or between two columns.
            _ => Err(NotPlain),
        }
    }

    /// `---` alone: the document so far ends, another begins. (`---`
    /// with content after it is left to yaml-rust2.)
    fn next_document(&mut self, line: Line) -> Result<(), NotPlain> {
        let rest = &line.content[3..];
        let alone = rest.trim_start_matches(' ');
        if self.pending.is_some()
            || !(alone.is_empty() || (alone.len() < rest.len() && alone.starts_with('#')))
        {
            return Err(NotPlain);
        }
        self.end_document();
        self.started = false;
        Ok(())
    }

    /// Closes every collection still open.
    fn end_document(&mut self) {
        while self.stack.pop().is_some() {
            self.builder.close();
        }
    }

    /// The line after `key:` (at `key_col`): a collection deeper, or an
    /// indentless sequence at the key's column.
    fn value_below(&mut self, line: Line, key_col: usize, item: bool) -> Result<(), NotPlain> {
        if line.indent > key_col && item {
            self.open_seq(line, false)
        } else if line.indent > key_col {
            self.entry(line, line.indent, true)
        } else if line.indent == key_col && item {
            self.open_seq(line, true)
        } else {
            // An empty value (yaml-rust2 marks its null at the next token).
            Err(NotPlain)
        }
    }

    /// A sequence whose first item is `line`.
    fn open_seq(&mut self, line: Line, indentless: bool) -> Result<(), NotPlain> {
        if self.stack.len() + 1 >= MAX_DEPTH {
            return Err(NotPlain);
        }
        // yaml-rust2 marks a block sequence at its first dash, an
        // indentless one at what follows that dash.
        let col = if indentless {
            line.indent + after_dash(line.content)
        } else {
            line.indent
        };
        self.builder.open(true, 0, Self::mark(&line, col));
        self.stack.push(Open::Seq(line.indent, indentless));
        self.item(line)
    }

    /// `- something` at the open sequence's column.
    fn item(&mut self, line: Line) -> Result<(), NotPlain> {
        let skip = after_dash(line.content);
        let rest = &line.content[skip..];
        let col = line.indent + skip;
        if rest.is_empty() || rest.starts_with('#') || is_item(rest) {
            // An empty item, or a sequence in a sequence.
            return Err(NotPlain);
        }
        if key_end(rest).is_some() {
            // `- key: ...`: a mapping whose keys stand at this column.
            let item_line = Line {
                content: rest,
                indent: col,
                ..line
            };
            return self.entry(item_line, col, true);
        }
        self.value(rest, &line, col)
    }

    /// `key: value` or `key:` at column `col`, opening the mapping first
    /// when `opens`.
    fn entry(&mut self, line: Line, col: usize, opens: bool) -> Result<(), NotPlain> {
        let Some(end) = key_end(line.content) else {
            return Err(NotPlain);
        };
        let key = &line.content[..end];
        if !plain_key(key) {
            return Err(NotPlain);
        }
        if opens {
            if self.stack.len() + 1 >= MAX_DEPTH {
                return Err(NotPlain);
            }
            // yaml-rust2 marks a block mapping at its first key's `:`.
            self.builder.open(false, 0, Self::mark(&line, col + end));
            self.stack.push(Open::Map(col));
        }
        self.builder.scalar(
            key.to_string(),
            TScalarStyle::Plain,
            0,
            &None,
            Self::mark(&line, col),
        );
        let after = &line.content[end + 1..];
        let value = after.trim_start_matches(' ');
        if value.is_empty() || value.starts_with('#') {
            self.pending = Some(col);
            return Ok(());
        }
        let at = end + 1 + (after.len() - value.len());
        self.value(value, &line, col + at)
    }

    /// The value `s`, at column `col` of `line`, with nothing but a
    /// comment after it: a scalar, a flow sequence of scalars, or `{}`.
    fn value(&mut self, s: &str, line: &Line, col: usize) -> Result<(), NotPlain> {
        match s.as_bytes()[0] {
            b'[' => self.flow_seq(s, line, col),
            b'{' => {
                // An empty mapping (`config: {}`); any other is yaml-rust2's.
                let inner = s[1..].trim_start_matches(' ');
                let rest = inner.strip_prefix('}').ok_or(NotPlain)?;
                only_comment_after(rest)?;
                if self.stack.len() + 1 >= MAX_DEPTH {
                    return Err(NotPlain);
                }
                self.builder.open(false, 0, Self::mark(line, col));
                self.builder.close();
                Ok(())
            }
            _ => {
                let (text, style) = scalar(s)?;
                self.builder
                    .scalar(text, style, 0, &None, Self::mark(line, col));
                Ok(())
            }
        }
    }

    /// `[a, "b", 'c']` on one line (a trailing comma allowed, as YAML
    /// allows it), at column `col`; yaml-rust2 marks it at its `[`.
    fn flow_seq(&mut self, s: &str, line: &Line, col: usize) -> Result<(), NotPlain> {
        if self.stack.len() + 1 >= MAX_DEPTH {
            return Err(NotPlain);
        }
        self.builder.open(true, 0, Self::mark(line, col));
        let spaces = |from: usize| s[from..].len() - s[from..].trim_start_matches(' ').len();
        let mut i = 1;
        loop {
            i += spaces(i);
            if s.as_bytes().get(i) == Some(&b']') {
                break;
            }
            let (text, style, len) = flow_item(&s[i..])?;
            self.builder
                .scalar(text, style, 0, &None, Self::mark(line, col + i));
            i += len;
            i += spaces(i);
            match s.as_bytes().get(i) {
                Some(b',') => i += 1,
                Some(b']') => break,
                _ => return Err(NotPlain),
            }
        }
        self.builder.close();
        only_comment_after(&s[i + 1..])
    }
}

/// Whether `s` is a sequence item: a dash, then a space or nothing.
fn is_item(s: &str) -> bool {
    s == "-" || s.starts_with("- ")
}

/// Bytes from the dash of an item to what follows it on the line.
fn after_dash(item: &str) -> usize {
    1 + (item[1..].len() - item[1..].trim_start_matches(' ').len())
}

/// Where the key of `key: value` or `key:` ends (its `:`), when `s` is
/// one: the first `:` followed by a space or the end, before any comment.
fn key_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    if matches!(bytes.first(), Some(b'"' | b'\'')) {
        return None;
    }
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b':' if bytes.get(i + 1).is_none_or(|&n| n == b' ') => return Some(i),
            b'#' if i > 0 && bytes[i - 1] == b' ' => return None,
            _ => {}
        }
    }
    None
}

/// Keys this reader takes: a word of letters, digits, `-`, `_`, `.`,
/// `/`, beginning with a letter, a digit or `_`, shorter than
/// [`MAX_FAST_KEY`].
fn plain_key(key: &str) -> bool {
    key.len() < MAX_FAST_KEY
        && key
            .as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
}

/// A one-line scalar at the start of `s` with nothing but a comment
/// after it: its text and style (its mark is where `s` starts).
fn scalar(s: &str) -> Result<(String, TScalarStyle), NotPlain> {
    if matches!(s.as_bytes()[0], b'"' | b'\'') {
        let (text, style, len) = quoted(s)?;
        only_comment_after(&s[len..])?;
        return Ok((text, style));
    }
    if !plain_start(s.as_bytes()[0]) {
        return Err(NotPlain);
    }
    let end = s.find(" #").unwrap_or(s.len());
    let text = s[..end].trim_end_matches(' ');
    // `: ` inside (or at the end) is a mapping yaml-rust2 refuses here; a
    // plain scalar cannot hold it.
    if text.contains(": ") || text.ends_with(':') {
        return Err(NotPlain);
    }
    Ok((text.to_string(), TScalarStyle::Plain))
}

/// The quoted scalar `s` begins with (on its line, without escapes): its
/// text, style and length in `s`.
fn quoted(s: &str) -> Result<(String, TScalarStyle, usize), NotPlain> {
    let bytes = s.as_bytes();
    if bytes[0] == b'"' {
        let end = s[1..].find('"').ok_or(NotPlain)? + 1;
        if s[1..end].contains('\\') {
            return Err(NotPlain);
        }
        return Ok((s[1..end].to_string(), TScalarStyle::DoubleQuoted, end + 1));
    }
    let mut text = String::new();
    let mut i = 1;
    loop {
        let next = s[i..].find('\'').ok_or(NotPlain)? + i;
        text.push_str(&s[i..next]);
        if bytes.get(next + 1) == Some(&b'\'') {
            text.push('\'');
            i = next + 2;
        } else {
            return Ok((text, TScalarStyle::SingleQuoted, next + 1));
        }
    }
}

/// An item of a one-line flow sequence at the start of `s`: quoted, or
/// plain up to the next `,` or `]`. Its text, style and length in `s`.
fn flow_item(s: &str) -> Result<(String, TScalarStyle, usize), NotPlain> {
    let first = *s.as_bytes().first().ok_or(NotPlain)?;
    if matches!(first, b'"' | b'\'') {
        return quoted(s);
    }
    if !plain_start(first) {
        return Err(NotPlain);
    }
    let len = s.find([',', ']']).ok_or(NotPlain)?;
    let text = s[..len].trim_end_matches(' ');
    // Flow indicators and comments inside, a `key: value` pair, or a last
    // word `-` (yaml-rust2 refuses a `-` followed by `,` or `]` there).
    if text.contains(['[', '{', '}', '#'])
        || text.contains(": ")
        || text.ends_with(':')
        || text.ends_with(" -")
    {
        return Err(NotPlain);
    }
    Ok((text.to_string(), TScalarStyle::Plain, len))
}

/// What follows a closed scalar or flow collection on its line: spaces,
/// then a comment or nothing.
fn only_comment_after(rest: &str) -> Result<(), NotPlain> {
    let trimmed = rest.trim_start_matches(' ');
    let spaced = trimmed.len() < rest.len();
    if trimmed.is_empty() || (spaced && trimmed.starts_with('#')) {
        Ok(())
    } else {
        Err(NotPlain)
    }
}

/// Characters a plain scalar may begin with here (YAML's indicators,
/// `-` and `:` among them, are left to yaml-rust2).
fn plain_start(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'/' | b'.' | b'_' | b'+' | b'~' | b'$' | b'(' | b'=' | b'<' | b'^' | b';' | b')'
        )
}

#[cfg(test)]
mod tests;

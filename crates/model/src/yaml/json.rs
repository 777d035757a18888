//! JSON, read fast.
//!
//! JSON is YAML too, and nodenet is given large JSON files: `oc get nns
//! -o json` for 10,000 nodes is 12 MB, and so are config drives'
//! `network_data.json` by the thousand. yaml-rust2 reads JSON as flow
//! collections, holding every token of an open one in its queue: the
//! 10,000 NodeNetworkStates took 1 s on one core and 1 GB.
//!
//! This reader takes strict JSON with an object or array at the top (and
//! whitespace, spaces and newlines only, around it) and hands the
//! [`Builder`] the events yaml-rust2 hands it for that text, at the same
//! marks (a collection at its bracket, a scalar where it starts). At
//! anything else (an escape in a string, a number JSON does not write, a
//! trailing comma, a tab, a control character, non-ASCII text, a key of
//! 1,000 bytes or more, a key and its `:` on two lines, anything after
//! the value) it stops, and the caller parses the text with yaml-rust2:
//! the tree, or the error, is always yaml-rust2's. The `yaml_block` fuzz
//! target and the tests below hold the two to the same events.

use yaml_rust2::scanner::TScalarStyle;

use super::block::NotPlain;
use super::{fast_bytes, Builder, Mark, MAX_DEPTH, MAX_FAST_KEY};

/// Gives `builder` the events of `text`, one JSON object or array, or
/// stops at the first thing this reader does not take. On [`NotPlain`]
/// the builder holds a partial tree and must be dropped.
pub(super) fn read(text: &str, builder: &mut Builder) -> Result<(), NotPlain> {
    if !fast_bytes(text) {
        return Err(NotPlain);
    }
    let mut reader = Reader {
        text: text.as_bytes(),
        at: 0,
        line: 1,
        line_start: 0,
        depth: 0,
        builder,
    };
    reader.space();
    if !matches!(reader.peek(), Some(b'{' | b'[')) {
        return Err(NotPlain);
    }
    reader.value()?;
    reader.space();
    if reader.at != text.len() {
        return Err(NotPlain);
    }
    Ok(())
}

struct Reader<'t, 'b, 'a> {
    text: &'t [u8],
    at: usize,
    /// The line `at` is on (1-based) and where that line starts.
    line: usize,
    line_start: usize,
    depth: usize,
    builder: &'b mut Builder<'a>,
}

impl Reader<'_, '_, '_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn mark(&self) -> Mark {
        Mark {
            index: self.at,
            line: self.line,
            col: self.at - self.line_start,
        }
    }

    /// Spaces and newlines.
    fn space(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' => {}
                b'\n' => {
                    self.line += 1;
                    self.line_start = self.at + 1;
                }
                _ => return,
            }
            self.at += 1;
        }
    }

    /// `byte`, after any whitespace.
    fn expect(&mut self, byte: u8) -> Result<(), NotPlain> {
        self.space();
        if self.peek() != Some(byte) {
            return Err(NotPlain);
        }
        self.at += 1;
        Ok(())
    }

    fn value(&mut self) -> Result<(), NotPlain> {
        self.space();
        match self.peek().ok_or(NotPlain)? {
            b'{' => self.collection(false),
            b'[' => self.collection(true),
            b'"' => {
                let mark = self.mark();
                let text = self.string()?;
                self.builder
                    .scalar(text, TScalarStyle::DoubleQuoted, 0, &None, mark);
                Ok(())
            }
            _ => {
                let mark = self.mark();
                let text = self.plain()?;
                self.builder
                    .scalar(text, TScalarStyle::Plain, 0, &None, mark);
                Ok(())
            }
        }
    }

    /// An array (`seq`) or object, at its bracket.
    fn collection(&mut self, seq: bool) -> Result<(), NotPlain> {
        if self.depth + 1 >= MAX_DEPTH {
            return Err(NotPlain);
        }
        self.depth += 1;
        self.builder.open(seq, 0, self.mark());
        self.at += 1;
        let close = if seq { b']' } else { b'}' };
        self.space();
        if self.peek() == Some(close) {
            self.at += 1;
        } else {
            loop {
                if seq {
                    self.value()?;
                } else {
                    self.key()?;
                    self.value()?;
                }
                self.space();
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b) if b == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(NotPlain),
                }
            }
        }
        self.builder.close();
        self.depth -= 1;
        Ok(())
    }

    /// `"key":`, the key and its `:` on one line, not too long.
    fn key(&mut self) -> Result<(), NotPlain> {
        self.space();
        if self.peek() != Some(b'"') {
            return Err(NotPlain);
        }
        let (mark, line) = (self.mark(), self.line);
        let text = self.string()?;
        self.builder
            .scalar(text, TScalarStyle::DoubleQuoted, 0, &None, mark);
        self.expect(b':')?;
        if self.line != line || self.at - mark.index >= MAX_FAST_KEY {
            return Err(NotPlain);
        }
        Ok(())
    }

    /// A string without escapes (its quotes included in what is read).
    fn string(&mut self) -> Result<String, NotPlain> {
        let start = self.at + 1;
        let len = memchr::memchr(b'"', &self.text[start..]).ok_or(NotPlain)?;
        let body = &self.text[start..start + len];
        if memchr::memchr2(b'\\', b'\n', body).is_some() {
            return Err(NotPlain);
        }
        self.at = start + len + 1;
        Ok(String::from_utf8_lossy(body).into_owned())
    }

    /// `true`, `false`, `null`, or a number as JSON writes it.
    fn plain(&mut self) -> Result<String, NotPlain> {
        let rest = &self.text[self.at..];
        let len = rest
            .iter()
            .position(|b| matches!(b, b',' | b']' | b'}' | b' ' | b'\n'))
            .unwrap_or(rest.len());
        let token = &rest[..len];
        if !(matches!(token, b"true" | b"false" | b"null") || json_number(token)) {
            return Err(NotPlain);
        }
        self.at += len;
        Ok(String::from_utf8_lossy(token).into_owned())
    }
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
fn json_number(t: &[u8]) -> bool {
    let digits = |t: &[u8]| t.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = usize::from(t.first() == Some(&b'-'));
    match digits(&t[i..]) {
        0 => return false,
        n if n > 1 && t[i] == b'0' => return false,
        n => i += n,
    }
    if t.get(i) == Some(&b'.') {
        match digits(&t[i + 1..]) {
            0 => return false,
            n => i += 1 + n,
        }
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        match digits(&t[i..]) {
            0 => return false,
            n => i += n,
        }
    }
    i == t.len()
}

#[cfg(test)]
mod tests;

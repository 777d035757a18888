//! Documents assembled as text: YAML emitted once per host state and
//! spliced into every envelope that carries it, and secrets' placeholders
//! written the way `envsubst` fills them.

use serde_json::Value as J;

pub fn yaml(v: &J) -> String {
    crate::yaml_out::to_string(v)
}

/// Stand-in value replaced by [`embed`]: each host state is emitted as
/// YAML once and spliced into every envelope that carries it, instead of
/// being re-emitted (YAML emission dominated render time).
pub(crate) const TOKEN: &str = "__nodenet_embedded__";

/// How embedded text goes in.
#[derive(Clone, Copy)]
pub enum Embed {
    /// As a nested block mapping (a `networkConfig:` / `desiredState:`).
    Mapping,
    /// As a literal block scalar (a Secret's `stringData.nmstate: |`).
    Literal,
}

/// Replaces the i-th `key: TOKEN` line of `envelope` with `texts[i]`
/// indented under the key (one linear pass, for 10,000-host documents).
pub fn embed_all(envelope: &str, texts: &[&str], how: Embed) -> String {
    let needle = format!(": {TOKEN}\n");
    let mut out =
        String::with_capacity(envelope.len() + texts.iter().map(|t| t.len() * 2).sum::<usize>());
    let mut rest = envelope;
    for text in texts {
        let Some(pos) = rest.find(&needle) else { break };
        out.push_str(&rest[..pos]);
        out.push_str(match how {
            Embed::Mapping => ":\n",
            Embed::Literal => ": |\n",
        });
        push_under_key(text, key_column(&rest[..pos]), &mut out);
        rest = &rest[pos + needle.len()..];
    }
    out.push_str(rest);
    out
}

/// The column of the key whose line `before` ends in (after any `- `).
fn key_column(before: &str) -> usize {
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    line.len() - line.trim_start_matches([' ', '-']).len()
}

/// `text`'s lines pushed onto `out` two columns under a key at
/// `key_col`; empty lines stay empty.
fn push_under_key(text: &str, key_col: usize, out: &mut String) {
    for l in text.lines() {
        if !l.is_empty() {
            nodenet_model::yaml::pad(out, key_col + 2);
            out.push_str(l);
        }
        out.push('\n');
    }
}

pub fn embed(envelope: &str, text: &str, how: Embed) -> String {
    embed_all(envelope, &[text], how)
}

/// Stand-in for a `${VAR}` placeholder that [`placeholders`] turns into a
/// block scalar.
pub(crate) const PLACEHOLDER: &str = "__nodenet_placeholder__";

/// A value to be filled in later with `envsubst`: `${var}`.
pub fn placeholder(var: &str) -> J {
    J::String(format!("{PLACEHOLDER}{var}"))
}

/// Writes every [`placeholder`] value as a literal block scalar with an
/// explicit indentation indicator, the placeholder alone on its line:
///
/// ```yaml
/// password: |2-
///   ${BMC_PASSWORD}
/// ```
///
/// Whatever one-line text `envsubst` puts there is read back as that very
/// string by every YAML reader: no character is special inside a literal
/// block (`:`, `#`, quotes, backslashes, `{`, a leading `-` or space), and
/// the indicator keeps leading spaces as content. A plain, single- or
/// double-quoted scalar each break on some of those.
pub fn placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(pos) = rest.find(PLACEHOLDER) {
        let line_start = rest[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line = &rest[line_start..pos];
        let Some(before) = line.strip_suffix(": ") else {
            // Not a mapping value (never written so): leave it.
            out.push_str(&rest[..pos + PLACEHOLDER.len()]);
            rest = &rest[pos + PLACEHOLDER.len()..];
            continue;
        };
        // The key's column is the mapping's indentation, which the
        // indicator counts from (after `- ` too).
        let key_col = key_column(&rest[..line_start + before.len()]);
        let end = rest[pos..]
            .find('\n')
            .map(|i| pos + i)
            .unwrap_or(rest.len());
        let var = &rest[pos + PLACEHOLDER.len()..end];
        out.push_str(&rest[..pos]);
        out.push_str("|2-\n");
        nodenet_model::yaml::pad(&mut out, key_col + 2);
        out.push_str("${");
        out.push_str(var);
        out.push('}');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A YAML document one of whose lists is made item by item (on every
/// core, by the caller): the document emitted with one marked item, each
/// item emitted on its own and indented to stand in its place. 10,000
/// hosts' items emitted one after the other took a core for 0.1 s, in
/// check and render.
pub struct Envelope {
    text: String,
    /// The byte range of the marked item's line.
    mark: std::ops::Range<usize>,
    /// The list's indentation.
    indent: usize,
}

impl Envelope {
    /// The one item of the list an envelope is made around.
    pub fn mark() -> J {
        J::String(LIST_MARK.to_string())
    }

    /// `doc` (with [`placeholders`]), whose list holds only [`Self::mark`];
    /// `None` without it.
    pub fn of(doc: &J) -> Option<Envelope> {
        let text = placeholders(&yaml(doc));
        let line = format!("- {LIST_MARK}\n");
        let at = text.find(&line)?;
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        text[start..at]
            .bytes()
            .all(|b| b == b' ')
            .then(|| Envelope {
                mark: start..at + line.len(),
                indent: at - start,
                text,
            })
    }

    /// `item` as it stands in the list: emitted, its placeholders written,
    /// `state` embedded at its [`TOKEN`], every line indented.
    pub fn item(&self, item: J, state: Option<&str>) -> String {
        let text = placeholders(&yaml(&J::Array(vec![item])));
        let state_len = state.map_or(0, |s| 2 * s.len());
        let mut out = String::with_capacity(text.len() + state_len + 16 * self.indent);
        let needle = format!(": {TOKEN}\n");
        let (Some(state), Some(pos)) = (state, text.find(&needle)) else {
            self.indent_into(&text, &mut out);
            return out;
        };
        // As `embed` would, then indented, in one pass over the state.
        self.indent_into(&text[..pos], &mut out);
        out.push_str(":\n");
        push_under_key(state, self.indent + key_column(&text[..pos]), &mut out);
        self.indent_into(&text[pos + needle.len()..], &mut out);
        out
    }

    /// `text` (items emitted as a list of their own, at column 0) pushed
    /// onto `out` indented to stand in the list.
    fn indent_into(&self, text: &str, out: &mut String) {
        for line in text.split_inclusive('\n') {
            // Empty lines stay empty, as the whole document writes them.
            if line != "\n" {
                nodenet_model::yaml::pad(out, self.indent);
            }
            out.push_str(line);
        }
    }

    /// The document with `items` in the place of the mark, each emitted
    /// as a list of its own (at column 0) and indented here: one copy of
    /// every item, not two.
    pub fn with_emitted<'a>(&self, items: impl Iterator<Item = &'a str> + Clone) -> String {
        let lines: usize = items
            .clone()
            .map(|i| i.bytes().filter(|&b| b == b'\n').count())
            .sum();
        let mut out =
            String::with_capacity(self.len_with(items.clone().map(str::len)) + lines * self.indent);
        out.push_str(&self.text[..self.mark.start]);
        items.for_each(|i| self.indent_into(i, &mut out));
        out.push_str(&self.text[self.mark.end..]);
        out
    }

    /// Its length with items of these lengths.
    pub fn len_with(&self, items: impl Iterator<Item = usize>) -> usize {
        self.text.len() - self.mark.len() + items.sum::<usize>()
    }

    /// The document with `items` in the place of the mark.
    pub fn with<'a>(&self, items: impl Iterator<Item = &'a str> + Clone) -> String {
        let mut out = String::with_capacity(self.len_with(items.clone().map(str::len)));
        out.push_str(&self.text[..self.mark.start]);
        items.for_each(|i| out.push_str(i));
        out.push_str(&self.text[self.mark.end..]);
        out
    }
}

/// Stands for the items of an [`Envelope`]'s list.
const LIST_MARK: &str = "__nodenet_list__";

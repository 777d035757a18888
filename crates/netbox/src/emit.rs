//! The generated inventory's YAML: block style, a source comment on any
//! line, and the byte offset of every comment kept for findings located
//! there. Scalars are JSON where plain YAML could misread them (a MAC
//! as a sexagesimal number, `no` as false).

use serde_json::Value as J;

/// A value with, where known, the comment its line carries.
#[derive(Clone, Debug)]
pub enum Y {
    Scalar(J, Option<String>),
    Map(Vec<(String, Y)>, Option<String>),
    Seq(Vec<Y>),
    /// A comment line in a mapping (a finding's place); the index is the
    /// caller's, returned with the comment's offset.
    Note(String, usize),
}

impl Y {
    pub fn scalar(v: impl Into<J>, source: Option<String>) -> Y {
        Y::Scalar(v.into(), source)
    }

    /// A JSON value, all of it from one source (a config context).
    pub fn from_json(v: &J, source: &str) -> Y {
        match v {
            J::Object(m) => Y::Map(
                m.iter()
                    .map(|(k, v)| (k.clone(), Y::from_json(v, source)))
                    .collect(),
                Some(source.to_string()),
            ),
            J::Array(a) if !a.is_empty() => {
                Y::Seq(a.iter().map(|v| Y::from_json(v, source)).collect())
            }
            _ => Y::Scalar(v.clone(), Some(source.to_string())),
        }
    }
}

/// The text, and the offset of each [`Y::Note`] by its index.
pub fn emit(doc: &[(String, Y)], header: &str) -> (String, Vec<(usize, usize, usize)>) {
    let mut e = Emitter {
        out: String::new(),
        notes: Vec::new(),
    };
    for line in header.lines() {
        e.out.push_str("# ");
        e.out.push_str(line);
        e.out.push('\n');
    }
    e.map(doc, 0);
    (e.out, e.notes)
}

struct Emitter {
    out: String,
    /// (note index, offset, length).
    notes: Vec<(usize, usize, usize)>,
}

impl Emitter {
    fn indent(&mut self, n: usize) {
        nodenet_model::yaml::pad(&mut self.out, n);
    }

    fn comment(&mut self, c: &Option<String>) {
        if let Some(c) = c {
            self.out.push_str("  # ");
            self.out.push_str(c);
        }
        self.out.push('\n');
    }

    /// A mapping's entries at `indent`; the first line's indent is the
    /// caller's when `first_inline` (a sequence item's `- `).
    fn map_entries(&mut self, entries: &[(String, Y)], indent: usize, mut first_inline: bool) {
        for (key, value) in entries {
            if let Y::Note(text, index) = value {
                if !first_inline {
                    self.indent(indent);
                }
                let at = self.out.len();
                self.out.push_str("# ");
                self.out.push_str(text);
                self.notes.push((*index, at, text.len() + 2));
                self.out.push('\n');
                first_inline = false;
                continue;
            }
            if !first_inline {
                self.indent(indent);
            }
            first_inline = false;
            self.out.push_str(&scalar(&J::String(key.clone())));
            self.out.push(':');
            self.value(value, indent);
        }
    }

    fn map(&mut self, entries: &[(String, Y)], indent: usize) {
        self.map_entries(entries, indent, false);
    }

    /// After `key:`: the value on the line or below it.
    fn value(&mut self, value: &Y, indent: usize) {
        match value {
            Y::Scalar(v, c) => {
                self.out.push(' ');
                self.out.push_str(&scalar(v));
                self.comment(c);
            }
            Y::Map(m, c) if m.is_empty() => {
                self.out.push_str(" {}");
                self.comment(c);
            }
            Y::Map(m, c) => {
                self.comment(c);
                self.map(m, indent + 2);
            }
            Y::Seq(s) if s.is_empty() => self.out.push_str(" []\n"),
            Y::Seq(s) => {
                self.out.push('\n');
                self.seq(s, indent);
            }
            Y::Note(..) => self.out.push('\n'),
        }
    }

    fn seq(&mut self, items: &[Y], indent: usize) {
        for item in items {
            self.indent(indent);
            self.out.push_str("- ");
            match item {
                Y::Scalar(v, c) => {
                    self.out.push_str(&scalar(v));
                    self.comment(c);
                }
                Y::Map(m, _) if m.is_empty() => self.out.push_str("{}\n"),
                Y::Map(m, _) => self.map_entries(m, indent + 2, true),
                Y::Seq(s) => {
                    self.out.push('\n');
                    self.seq(s, indent + 2);
                }
                Y::Note(..) => self.out.push('\n'),
            }
        }
    }
}

/// A scalar as YAML: plain when nothing could read it otherwise, else
/// JSON (valid YAML).
fn scalar(v: &J) -> String {
    match v {
        J::String(s) if plain_is_safe(s) => s.clone(),
        J::Object(_) | J::Array(_) => serde_json::to_string(v).expect("JSON"),
        _ => v.to_string(),
    }
}

/// A word of letters, digits and `-_./` that starts with a letter and is
/// none of YAML 1.1's booleans or nulls.
fn plain_is_safe(s: &str) -> bool {
    const WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_yaml_with_sources_and_notes_reads_back_as_the_values() {
        let doc = vec![
            ("nodenet".to_string(), Y::scalar("v1", None)),
            (
                "hosts".to_string(),
                Y::Seq(vec![Y::Map(
                    vec![
                        (
                            "name".into(),
                            Y::scalar("w-0", Some("https://nb/dcim/devices/1/".into())),
                        ),
                        ("note".into(), Y::Note("not read: wlan0".into(), 4)),
                        (
                            "nics".into(),
                            Y::Map(
                                vec![("eno1".into(), Y::scalar("52:54:00:00:00:01", None))],
                                None,
                            ),
                        ),
                        ("flag".into(), Y::scalar("no", None)),
                        (
                            "ports".into(),
                            Y::Seq(vec![Y::scalar("eno1", None), Y::scalar("10", None)]),
                        ),
                        (
                            "ctx".into(),
                            Y::from_json(&json!({"a": {"b": [1, "x"]}, "e": {}}), "config context"),
                        ),
                    ],
                    None,
                )]),
            ),
        ];
        let (text, notes) = emit(&doc, "generated");
        let read: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        let read: J = serde_json::to_value(read).unwrap();
        assert_eq!(
            read,
            json!({"nodenet": "v1", "hosts": [{
                "name": "w-0", "nics": {"eno1": "52:54:00:00:00:01"}, "flag": "no",
                "ports": ["eno1", "10"], "ctx": {"a": {"b": [1, "x"]}, "e": {}}
            }]})
        );
        assert!(
            text.contains("name: w-0  # https://nb/dcim/devices/1/\n"),
            "{text}"
        );
        assert_eq!(notes.len(), 1);
        let (index, at, len) = notes[0];
        assert_eq!(index, 4);
        assert_eq!(&text[at..at + len], "# not read: wlan0");
    }
}

//! NetworkManager's keyfile format (GKeyFile): `[group]` headers,
//! `key=value` lines, `#` comments, `\s \n \t \r \\` escapes and
//! `;`-separated lists. Every key keeps its line for diagnostics.

use nodenet_model::{Code, Diagnostic, Span};

/// Keyfiles are a few hundred bytes; anything this large is not one.
pub const MAX_SIZE: usize = 1 << 20;

#[derive(Clone, Debug)]
pub struct Entry {
    /// Canonical key (`master` is read as `controller`, ...).
    pub key: String,
    pub raw: String,
    pub span: Span,
}

impl Entry {
    /// The value with GKeyFile escapes resolved.
    pub fn value(&self) -> String {
        unescape(&self.raw, false)
    }

    /// The value as a `;`-separated list (`\;` stays in its item).
    pub fn list(&self) -> Vec<String> {
        let mut items = Vec::new();
        let mut cur = String::new();
        let mut chars = self.raw.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(';') => cur.push(';'),
                    Some(n) => {
                        cur.push('\\');
                        cur.push(n);
                    }
                    None => {}
                },
                ';' => items.push(unescape(&std::mem::take(&mut cur), false)),
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            items.push(unescape(&cur, false));
        }
        items
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

#[derive(Clone, Debug)]
pub struct Group {
    /// Canonical group name (`802-3-ethernet` is read as `ethernet`).
    pub name: String,
    pub span: Span,
    pub entries: Vec<Entry>,
}

impl Group {
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().rev().find(|e| e.key == key)
    }
}

/// One parsed keyfile.
#[derive(Clone, Debug)]
pub struct Keyfile {
    pub name: String,
    pub groups: Vec<Group>,
}

impl Keyfile {
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    pub fn get(&self, group: &str, key: &str) -> Option<&Entry> {
        self.group(group)?.get(key)
    }

    pub fn value(&self, group: &str, key: &str) -> Option<String> {
        self.get(group, key).map(Entry::value)
    }
}

/// Group names NetworkManager accepts under two spellings.
pub fn canonical_group(name: &str) -> &str {
    match name {
        "802-3-ethernet" => "ethernet",
        "802-11-wireless" => "wifi",
        "802-11-wireless-security" => "wifi-security",
        "802-1x" => "802-1x",
        n => n,
    }
}

/// Connection keys with an old and a new name (NM 1.46 renamed them).
pub fn canonical_key<'a>(group: &str, key: &'a str) -> &'a str {
    match (group, key) {
        ("connection", "master") => "controller",
        ("connection", "slave-type") => "port-type",
        ("connection", "autoconnect-slaves") => "autoconnect-ports",
        (_, k) => k,
    }
}

/// Connection type names with an old and a new spelling.
pub fn canonical_type(t: &str) -> &str {
    match t {
        "802-3-ethernet" => "ethernet",
        "802-11-wireless" => "wifi",
        t => t,
    }
}

fn unescape(s: &str, _list: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('s') => out.push(' '),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => {}
        }
    }
    out
}

fn span(file: u32, line: usize, col: usize, offset: usize, len: usize) -> Span {
    Span {
        file,
        line: line as u32,
        column: col as u32,
        offset: offset as u32,
        len: len.max(1) as u32,
    }
}

/// Parses a keyfile. Errors are located; a file that is not text, is too
/// large, or has a line that is neither a group, a key nor a comment is
/// rejected.
pub fn parse(name: &str, bytes: &[u8], file: u32) -> Result<Keyfile, Box<Diagnostic>> {
    if bytes.len() > MAX_SIZE {
        return Err(Box::new(
            Diagnostic::error(
                Code::KeyfileSyntax,
                format!(
                    "{} bytes is too large for a keyfile (at most {MAX_SIZE})",
                    bytes.len()
                ),
            )
            .at(span(file, 1, 1, 0, 1)),
        ));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) if !t.contains('\0') => t,
        _ => {
            let bad = bytes.iter().position(|b| *b == 0).unwrap_or_else(|| {
                std::str::from_utf8(bytes)
                    .err()
                    .map(|e| e.valid_up_to())
                    .unwrap_or(0)
            });
            let line = bytes[..bad].iter().filter(|b| **b == b'\n').count() + 1;
            return Err(Box::new(
                Diagnostic::error(
                    Code::KeyfileSyntax,
                    "not a text file (NUL byte or invalid UTF-8)",
                )
                .at(span(file, line, 1, bad, 1)),
            ));
        }
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut offset = 0;
    for (i, raw_line) in text.split_inclusive('\n').enumerate() {
        let line_no = i + 1;
        let line = raw_line.trim_end_matches(['\n', '\r']);
        let start = offset;
        offset += raw_line.len();
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix('[') {
            let Some(end) = rest.find(']') else {
                return Err(Box::new(
                    Diagnostic::error(Code::KeyfileSyntax, "group header without closing `]`").at(
                        span(file, line_no, indent + 1, start + indent, trimmed.len()),
                    ),
                ));
            };
            let raw_name = &rest[..end];
            groups.push(Group {
                name: canonical_group(raw_name).to_string(),
                span: span(
                    file,
                    line_no,
                    indent + 1,
                    start + indent,
                    raw_name.len() + 2,
                ),
                entries: Vec::new(),
            });
            continue;
        }
        let Some(eq) = trimmed.find('=') else {
            return Err(Box::new(
                Diagnostic::error(
                    Code::KeyfileSyntax,
                    format!(
                        "`{}` is neither `[group]`, `key=value` nor a `#` comment",
                        truncate(trimmed)
                    ),
                )
                .at(span(
                    file,
                    line_no,
                    indent + 1,
                    start + indent,
                    trimmed.len(),
                )),
            ));
        };
        let key = trimmed[..eq].trim();
        let value = trimmed[eq + 1..].trim_start();
        let value_col = line.len() - value.len();
        let Some(group) = groups.last_mut() else {
            return Err(Box::new(
                Diagnostic::error(
                    Code::KeyfileSyntax,
                    format!("`{key}=` before any `[group]`"),
                )
                .at(span(file, line_no, indent + 1, start + indent, key.len()))
                .help("a keyfile starts with `[connection]`"),
            ));
        };
        group.entries.push(Entry {
            key: canonical_key(&group.name, key).to_string(),
            raw: value.to_string(),
            span: span(file, line_no, value_col + 1, start + value_col, value.len()),
        });
    }
    Ok(Keyfile {
        name: name.to_string(),
        groups,
    })
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keys_aliases_escapes_and_lists() {
        let text = "# made by hand\n[connection]\nid=bond0\\sslave\nmaster=bond0\nslave-type=bond\n\n[802-3-ethernet]\nmtu=9000\n[ipv4]\ndns=10.0.0.1;10.0.0.2;\ndns-search=a\\;b;c\n";
        let k = parse("x", text.as_bytes(), 0).unwrap();
        assert_eq!(k.value("connection", "id").as_deref(), Some("bond0 slave"));
        assert_eq!(
            k.value("connection", "controller").as_deref(),
            Some("bond0")
        );
        assert_eq!(k.value("connection", "port-type").as_deref(), Some("bond"));
        assert_eq!(k.value("ethernet", "mtu").as_deref(), Some("9000"));
        assert_eq!(
            k.get("ipv4", "dns").unwrap().list(),
            vec!["10.0.0.1", "10.0.0.2"]
        );
        assert_eq!(
            k.get("ipv4", "dns-search").unwrap().list(),
            vec!["a;b", "c"]
        );
        let mtu = k.get("ethernet", "mtu").unwrap();
        assert_eq!((mtu.span.line, mtu.span.column), (8, 5));
    }

    #[test]
    fn located_errors() {
        let e = parse("x", b"id=foo\n[connection]\n", 0).unwrap_err();
        assert_eq!((e.code, e.span.unwrap().line), (Code::KeyfileSyntax, 1));
        let e = parse("x", b"[connection]\nid=a\njunk line\n", 0).unwrap_err();
        assert_eq!(e.span.unwrap().line, 3);
        let e = parse("x", b"[connection\n", 0).unwrap_err();
        assert_eq!(e.span.unwrap().line, 1);
        let e = parse("x", b"[connection]\nid=\x00\xff\n", 0).unwrap_err();
        assert_eq!(e.span.unwrap().line, 2);
        let big = vec![b'#'; MAX_SIZE + 1];
        assert!(parse("x", &big, 0).is_err());
    }
}

//! NetworkManager's keyfile format, read as GLib's GKeyFile reads it:
//! `[group]` headers, `key=value` lines, `#` comments, `\s \n \t \r \\`
//! escapes and `;`-separated lists. A group that appears twice is one
//! group; a key that appears twice keeps its last value; `key[locale]=`
//! translations are dropped. Every key keeps its line for diagnostics.

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
        unescape(&self.raw)
    }

    /// The value as a `;`-separated list (`\;` stays in its item).
    pub fn list(&self) -> Vec<String> {
        self.items()
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The `;`-separated items exactly as GKeyFile splits them: an empty
    /// item in the middle stays, a trailing `;` ends the list.
    pub fn items(&self) -> Vec<String> {
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
                ';' => items.push(unescape(&std::mem::take(&mut cur))),
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            items.push(unescape(&cur));
        }
        items
    }
}

#[derive(Clone, Debug)]
pub struct Group {
    /// Canonical group name (`802-3-ethernet` is read as `ethernet`).
    pub name: String,
    /// The name as the file spells it.
    pub raw_name: String,
    pub span: Span,
    pub entries: Vec<Entry>,
}

impl Group {
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

/// One parsed keyfile.
#[derive(Clone, Debug)]
pub struct Keyfile {
    pub name: String,
    pub file: u32,
    pub groups: Vec<Group>,
    /// What NetworkManager would skip while reading (warnings).
    pub warnings: Vec<Diagnostic>,
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

    /// Where a finding about the whole profile is shown: its
    /// `[connection]` header, else its first group, else line 1.
    pub fn header(&self) -> Span {
        self.group("connection")
            .or(self.groups.first())
            .map(|g| g.span)
            .unwrap_or_else(|| span(self.file, 1, 1, 0, 1))
    }
}

/// Group names NetworkManager accepts under two spellings.
pub fn canonical_group(name: &str) -> &str {
    match name {
        "802-3-ethernet" => "ethernet",
        "802-11-wireless" => "wifi",
        "802-11-wireless-security" => "wifi-security",
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
        "802-11-olpc-mesh" => "olpc-mesh",
        t => t,
    }
}

/// Whether a key holds a secret (a password, a pre-shared key, a MACsec
/// CAK, anything in [vpn-secrets]): its value is never shown in a finding.
pub fn is_secret(group: &str, key: &str) -> bool {
    group == "vpn-secrets"
        || key.contains("password")
        || key.contains("psk")
        || matches!(key, "mka-cak" | "pin" | "private-key-password-raw")
        || key.starts_with("wep-key")
        || key.ends_with("preshared-key")
        || (group == "wireguard" && key == "private-key")
}

fn unescape(s: &str) -> String {
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

/// The first escape GKeyFile refuses (`\x`, or `\` ending the line).
fn bad_escape(raw: &str) -> Option<String> {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('s' | 'n' | 't' | 'r' | '\\' | ';') => {}
                Some(o) => return Some(format!("\\{o}")),
                None => return Some("\\".into()),
            }
        }
    }
    None
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

/// GLib's `g_ascii_isspace`.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// GKeyFile's key rule: no `[`/`]` except one trailing `[locale]`, no
/// leading or trailing space. Returns whether the key is a translation.
fn key_kind(key: &str) -> Option<bool> {
    let (base, locale) = match key.find('[') {
        Some(i) => (&key[..i], Some(&key[i + 1..])),
        None => (key, None),
    };
    if base.is_empty() || base.contains(']') || base.starts_with(' ') || base.ends_with(' ') {
        return None;
    }
    match locale {
        None => Some(false),
        Some(l) => {
            let inner = l.strip_suffix(']')?;
            inner
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
                .then_some(true)
        }
    }
}

fn syntax(
    file: u32,
    line: usize,
    col: usize,
    offset: usize,
    len: usize,
    msg: String,
) -> Box<Diagnostic> {
    Box::new(Diagnostic::error(Code::KeyfileSyntax, msg).at(span(file, line, col, offset, len)))
}

/// Parses a keyfile. Errors are located; a file that is not text, is too
/// large, or has a line GKeyFile refuses (neither a group, a key nor a
/// comment; a bad group or key name; a key before any group) is rejected.
pub fn parse(name: &str, bytes: &[u8], file: u32) -> Result<Keyfile, Box<Diagnostic>> {
    let text = as_text(bytes, file)?;
    let mut groups: Vec<Group> = Vec::new();
    let mut warnings = Vec::new();
    // Index in `groups` of the group keys go to.
    let mut current: Option<usize> = None;
    let mut offset = 0;
    for (i, raw_line) in text.split_inclusive('\n').enumerate() {
        let line_no = i + 1;
        let start = offset;
        offset += raw_line.len();
        let line = raw_line.strip_suffix('\n').unwrap_or(raw_line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim_start_matches(is_space);
        let indent = line.len() - trimmed.len();
        let at = |len: usize| (line_no, indent + 1, start + indent, len);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(k) = group_header(trimmed, &mut groups, file, at)? {
            current = Some(k);
            continue;
        }
        let Some(eq) = trimmed.find('=').filter(|&eq| eq > 0) else {
            let (l, c, o, n) = at(trimmed.len());
            return Err(syntax(
                file,
                l,
                c,
                o,
                n,
                format!(
                    "`{}` is neither `[group]`, `key=value` nor a `#` comment",
                    truncate(trimmed)
                ),
            ));
        };
        let key = trimmed[..eq].trim_end_matches(is_space);
        let Some(translation) = key_kind(key) else {
            let (l, c, o, _) = at(0);
            return Err(syntax(
                file,
                l,
                c,
                o,
                eq,
                format!("`{}` is not a valid key name", truncate(key)),
            ));
        };
        let Some(g) = current else {
            let (l, c, o, _) = at(0);
            return Err(Box::new(
                Diagnostic::error(
                    Code::KeyfileSyntax,
                    format!("`{}=` before any `[group]`", truncate(key)),
                )
                .at(span(file, l, c, o, key.len()))
                .help("a keyfile starts with `[connection]`"),
            ));
        };
        if translation {
            // GKeyFile keeps only the translations of the reader's
            // locale; NetworkManager reads none of them.
            continue;
        }
        let value = trimmed[eq + 1..].trim_start_matches(is_space);
        let value_col = line.len() - value.len();
        let entry_span = span(file, line_no, value_col + 1, start + value_col, value.len());
        let group = &mut groups[g];
        let key = canonical_key(&group.name, key).to_string();
        // GKeyFile: the last of a repeated key wins.
        group.entries.retain(|e| e.key != key);
        if let Some(esc) = bad_escape(value) {
            warnings.push(
                Diagnostic::warning(
                    Code::KeyfileInvalid,
                    format!(
                        "`{key}=` in [{}] has the invalid escape `{esc}`: NetworkManager ignores the key",
                        group.raw_name
                    ),
                )
                .at(entry_span),
            );
            continue;
        }
        group.entries.push(Entry {
            key,
            raw: value.to_string(),
            span: entry_span,
        });
    }
    if groups.is_empty() {
        return Err(no_groups(text, file));
    }
    merge_aliases(&mut groups, &mut warnings);
    Ok(Keyfile {
        name: name.to_string(),
        file,
        groups,
        warnings,
    })
}

/// The file's bytes as text: not too large, UTF-8, no NUL (GKeyFile's
/// own limits).
fn as_text(bytes: &[u8], file: u32) -> Result<&str, Box<Diagnostic>> {
    if bytes.len() > MAX_SIZE {
        return Err(syntax(
            file,
            1,
            1,
            0,
            1,
            format!(
                "{} bytes is too large for a keyfile (at most {MAX_SIZE})",
                bytes.len()
            ),
        ));
    }
    match std::str::from_utf8(bytes) {
        Ok(t) if !t.contains('\0') => Ok(t),
        _ => {
            let bad = bytes.iter().position(|b| *b == 0).unwrap_or_else(|| {
                std::str::from_utf8(bytes)
                    .err()
                    .map(|e| e.valid_up_to())
                    .unwrap_or(0)
            });
            let line = bytes[..bad].iter().filter(|b| **b == b'\n').count() + 1;
            Err(syntax(
                file,
                line,
                1,
                bad,
                1,
                "not a text file (NUL byte or invalid UTF-8)".into(),
            ))
        }
    }
}

/// A `[group]` line: the index of the group keys now go to (a group seen
/// again continues it, as in GKeyFile); `None` for a line that is no
/// group header.
fn group_header(
    trimmed: &str,
    groups: &mut Vec<Group>,
    file: u32,
    at: impl Fn(usize) -> (usize, usize, usize, usize),
) -> Result<Option<usize>, Box<Diagnostic>> {
    if let Some(rest) = trimmed.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            if rest[end + 1..].chars().all(|c| c == ' ' || c == '\t') {
                let raw_name = &rest[..end];
                if raw_name.is_empty()
                    || raw_name.contains('[')
                    || raw_name.chars().any(|c| c.is_control())
                {
                    let (l, c, o, n) = at(end + 2);
                    return Err(syntax(
                        file,
                        l,
                        c,
                        o,
                        n,
                        format!("`[{raw_name}]` is not a valid group name"),
                    ));
                }
                return Ok(Some(
                    match groups.iter().position(|g| g.raw_name == raw_name) {
                        // GKeyFile: a group seen again continues it.
                        Some(k) => k,
                        None => {
                            let (l, c, o, n) = at(raw_name.len() + 2);
                            groups.push(Group {
                                name: canonical_group(raw_name).to_string(),
                                raw_name: raw_name.to_string(),
                                span: span(file, l, c, o, n),
                                entries: Vec::new(),
                            });
                            groups.len() - 1
                        }
                    },
                ));
            }
        }
    }
    Ok(None)
}

/// A file without any group: NetworkManager loads no profile from it;
/// said as what it is rather than as a missing `type=`.
fn no_groups(text: &str, file: u32) -> Box<Diagnostic> {
    let what = if text.trim().is_empty() {
        "the file is empty"
    } else {
        "the file has only comments"
    };
    syntax(
        file,
        1,
        1,
        0,
        0,
        format!("{what}: a keyfile has a [connection] group with `id=` and `type=`"),
    )
}

fn is_long_spelling(raw: &str) -> bool {
    canonical_group(raw) != raw
}

/// Both spellings of one setting (`[802-3-ethernet]` and `[ethernet]`):
/// NetworkManager reads the values from the long one only.
fn merge_aliases(groups: &mut Vec<Group>, warnings: &mut Vec<Diagnostic>) {
    let mut i = 0;
    while i < groups.len() {
        let dup = groups
            .iter()
            .enumerate()
            .find(|(j, o)| *j != i && o.name == groups[i].name)
            .map(|(j, _)| j);
        match dup {
            Some(j) => {
                let short = if is_long_spelling(&groups[i].raw_name) {
                    j
                } else {
                    i
                };
                let long = if short == i { j } else { i };
                warnings.push(
                    Diagnostic::warning(
                        Code::KeyfileInvalid,
                        format!(
                            "[{}] is ignored: NetworkManager reads this setting from [{}]",
                            groups[short].raw_name, groups[long].raw_name
                        ),
                    )
                    .at(groups[short].span),
                );
                groups.remove(short);
                i = 0;
            }
            None => i += 1,
        }
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests;

//! YAML text for JSON values, as serde_yaml writes it, but fast — and
//! safe for YAML 1.1 readers.
//!
//! serde_yaml follows YAML 1.2, where `no`, `on` or `52:54:00:12:00:01`
//! are strings; the readers of these files often follow YAML 1.1
//! (openshift-install and kubectl through go-yaml v2 take `no`/`on` for
//! booleans; PyYAML takes `52:54:00:12:00:01` for a base-60 integer). Such
//! strings are single-quoted here; everything else is byte-identical to
//! serde_yaml.
//!
//! Rendering 10,000 hosts spent a fifth of its CPU in serde_yaml's
//! emitter, which asks its own parser whether every string scalar could be
//! read back as something else. Host states are block mappings and
//! sequences of names, addresses and small integers; for those this
//! module writes the same bytes directly. Anything it is not sure to write
//! exactly like serde_yaml (floats, strings with spaces or YAML indicators,
//! non-ASCII, nested sequences) makes it hand the whole value to
//! serde_yaml instead, so the output never depends on which path ran.

use nodenet_model::yaml::pad;
use serde_json::Value as J;

/// `v` as a YAML document, byte-identical to `serde_yaml::to_string`.
pub fn to_string(v: &J) -> String {
    let mut out = String::with_capacity(256);
    match emit_top(v, &mut out) {
        Some(()) => out,
        None => serde_yaml::to_string(v).expect("JSON values serialise to YAML"),
    }
}

fn emit_top(v: &J, out: &mut String) -> Option<()> {
    match v {
        J::Object(m) if !m.is_empty() => emit_map(m, 0, false, out),
        J::Array(a) if !a.is_empty() => emit_seq(a, 0, out),
        _ => {
            scalar(v, out)?;
            out.push('\n');
            Some(())
        }
    }
}

/// A block mapping at `indent`; with `inline_first`, the first key goes
/// on the current line (after a sequence's `- `).
fn emit_map(
    m: &serde_json::Map<String, J>,
    indent: usize,
    inline_first: bool,
    out: &mut String,
) -> Option<()> {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 || !inline_first {
            pad(out, indent);
        }
        // libyaml writes keys longer than 128 as `? key`.
        if k.len() > 128 {
            return None;
        }
        string(k, out)?;
        match v {
            J::Object(child) if !child.is_empty() => {
                out.push_str(":\n");
                emit_map(child, indent + 2, false, out)?;
            }
            // Block sequences sit at their key's indentation.
            J::Array(items) if !items.is_empty() => {
                out.push_str(":\n");
                emit_seq(items, indent, out)?;
            }
            _ => {
                out.push_str(": ");
                scalar(v, out)?;
                out.push('\n');
            }
        }
    }
    Some(())
}

fn emit_seq(items: &[J], indent: usize, out: &mut String) -> Option<()> {
    for item in items {
        pad(out, indent);
        out.push_str("- ");
        match item {
            J::Object(m) if !m.is_empty() => emit_map(m, indent + 2, true, out)?,
            J::Array(a) if !a.is_empty() => return None,
            _ => {
                scalar(item, out)?;
                out.push('\n');
            }
        }
    }
    Some(())
}

fn scalar(v: &J, out: &mut String) -> Option<()> {
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Number(n) if n.is_i64() || n.is_u64() => out.push_str(&n.to_string()),
        J::Number(_) => return None,
        J::String(s) => string(s, out)?,
        J::Object(_) => out.push_str("{}"),
        J::Array(_) => out.push_str("[]"),
    }
    Some(())
}

/// Plain when serde_yaml writes it plain, single-quoted when it would
/// read back as a number, boolean or null; `None` when unsure. For a
/// block-context scalar (a key, or a value after `key: ` or `- `).
pub(crate) fn string(s: &str, out: &mut String) -> Option<()> {
    if s.is_empty() {
        out.push_str("''");
        return Some(());
    }
    // Inside a block-context plain scalar, `,;=%{}` are ordinary (they
    // only matter in flow context, which is never written here) and need
    // no parse check: the data: URLs of MachineConfigs and `${VAR}`
    // placeholders stay on this path.
    let simple = !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'.' | b'_'
                        | b'/'
                        | b':'
                        | b'+'
                        | b'-'
                        | b','
                        | b';'
                        | b'='
                        | b'%'
                        | b'$'
                        | b'{'
                        | b'}'
                )
        })
        && (s.as_bytes()[0].is_ascii_alphanumeric()
            || matches!(s.as_bytes()[0], b'_' | b'/')
            || (s.as_bytes()[0] == b'$' && s.len() > 1)
            || (matches!(s.as_bytes()[0], b'-' | b'+')
                && s.as_bytes().get(1).is_some_and(u8::is_ascii_digit)))
        && !s.ends_with(':');
    if !simple {
        // A single-line string is written as serde_yaml writes it alone
        // (in block context its style does not depend on where it sits);
        // multi-line ones become block scalars, which do.
        // YAML 1.1 breaks lines at NEL, LS and PS too (libyaml does).
        if s.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']) || s.len() > 1000 {
            return None;
        }
        let alone = serde_yaml::to_string(s).ok()?;
        let alone = alone.strip_suffix('\n')?;
        if alone == s && yaml11_reads_as_non_string(s) {
            single_quoted(s, out);
        } else {
            out.push_str(alone);
        }
        return Some(());
    }
    if !plainly_a_string(s) && (reads_as_non_string(s) || yaml11_reads_as_non_string(s)) {
        single_quoted(s, out);
    } else {
        out.push_str(s);
    }
    Some(())
}

/// Whether `s` (made of `[A-Za-z0-9._/:+-,;=%${}]`) is a string to every
/// reader without the checks below: no boolean, null, number, base-60
/// number or timestamp of YAML 1.1 or 1.2 holds a `/` or two dots (a
/// float or a timestamp's seconds have one). Addresses and prefixes,
/// most of a state's scalars, take this path.
fn plainly_a_string(s: &str) -> bool {
    s.contains('/') || s.bytes().filter(|&b| b == b'.').nth(1).is_some()
}

/// `s` single-quoted: a quote inside is doubled (`it's` → `'it''s'`).
fn single_quoted(s: &str, out: &mut String) {
    out.push('\'');
    out.push_str(&s.replace('\'', "''"));
    out.push('\'');
}

/// Whether a YAML 1.1 reader takes `s` (made of `[A-Za-z0-9._/:+-,;=%${}]`) for
/// a boolean, or for an integer or float where YAML 1.2 does not: base 60
/// (`1:20`, MAC addresses of decimal digits) or with `_` separators.
fn yaml11_reads_as_non_string(s: &str) -> bool {
    // Every case below starts with one of these (most names do not).
    if !s.starts_with(|c: char| c.is_ascii_digit() || "yYnNoO=+-.<".contains(c)) {
        return false;
    }
    if matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) || s == "="
        || s == "<<"
    {
        return true;
    }
    // Timestamps: YYYY-M-D, alone or followed by a time.
    let date: Vec<&str> = s.splitn(3, '-').collect();
    if let [y, m, d] = date[..] {
        let day_len = d.bytes().take_while(u8::is_ascii_digit).count();
        let rest = &d[day_len..];
        if y.len() == 4
            && y.bytes().all(|b| b.is_ascii_digit())
            && matches!(m.len(), 1 | 2)
            && m.bytes().all(|b| b.is_ascii_digit())
            && matches!(day_len, 1 | 2)
            && (rest.is_empty() || rest.starts_with(['T', 't', ' ', '\t']))
        {
            return true;
        }
    }
    // PyYAML's int pattern takes `_` after a radix prefix (even `0x_`
    // alone); Go, behind go-yaml, takes upper-case prefixes (`0X1F`).
    if radix_int(s, &ANY_CASE_PREFIXES, true) {
        return true;
    }
    // go-yaml parses what follows `0b` (v2, v3) or `0o` (v3) as a signed
    // number: `0b-1` is -1.
    let body = s.trim_start_matches(['-', '+']);
    if [("0b", 2), ("0o", 8)].iter().any(|(prefix, radix)| {
        body.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix(['-', '+']))
            .is_some_and(|rest| radix_int(&format!("{prefix}{rest}"), &[(prefix, *radix)], true))
    }) {
        return true;
    }
    // Numbers with `_` anywhere (`1_000`, `.5_0`, `0_e9`): go-yaml drops
    // every `_` and parses what is left as Go does, and PyYAML's int and
    // float patterns allow them.
    if s.contains('_') {
        let plain = s.replace('_', "");
        if radix_int(&plain, &ANY_CASE_PREFIXES, false) || reads_as_non_string(&plain) {
            return true;
        }
    }
    let digits = s.trim_start_matches(['-', '+']);
    let numeric = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    // Base 60: [0-9][0-9_]*(:[0-5]?[0-9])+, optionally .[0-9_]* at the end.
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mut parts = whole.split(':');
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    !rest.is_empty()
        && numeric(first)
        && first.as_bytes()[0].is_ascii_digit()
        && fraction.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        && rest.iter().all(|p| {
            let b = p.as_bytes();
            matches!(b.len(), 1 | 2)
                && b.iter().all(u8::is_ascii_digit)
                && (b.len() == 1 || b[0] <= b'5')
        })
}

/// Radix prefixes of YAML's core schema, and of Go's integer syntax.
const CORE_PREFIXES: [(&str, u32); 3] = [("0x", 16), ("0o", 8), ("0b", 2)];
const ANY_CASE_PREFIXES: [(&str, u32); 6] = [
    ("0x", 16),
    ("0X", 16),
    ("0o", 8),
    ("0O", 8),
    ("0b", 2),
    ("0B", 2),
];

/// Whether `s` is a signed integer with one of `prefixes` and at least
/// one more character, every one a digit of its radix (or `_`, if
/// `underscores`).
fn radix_int(s: &str, prefixes: &[(&str, u32)], underscores: bool) -> bool {
    let body = s.trim_start_matches(['-', '+']);
    // Every prefix is `0` and a letter: most strings end here, without a
    // comparison per prefix (this runs for every key and value written).
    if body.as_bytes().first() != Some(&b'0') {
        return false;
    }
    prefixes.iter().any(|(prefix, radix)| {
        body.strip_prefix(prefix).is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .chars()
                    .all(|c| c.is_digit(*radix) || (underscores && c == '_'))
        })
    })
}

/// Whether YAML's core schema (as serde_yaml resolves plain scalars)
/// reads `s`, made of `[A-Za-z0-9._/:+-,;=%${}]`, as other than a string.
fn reads_as_non_string(s: &str) -> bool {
    if matches!(
        s,
        "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
    ) {
        return true;
    }
    if radix_int(s, &CORE_PREFIXES, false) {
        return true;
    }
    // Rust's float syntax covers YAML's decimal ints and floats here
    // (no `_`); "inf"/"nan" words without digits are strings to serde_yaml.
    s.bytes().any(|b| b.is_ascii_digit()) && s.parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests;

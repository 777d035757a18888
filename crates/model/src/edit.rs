//! Editing an inventory file in place: only the bytes of what changes are
//! written, every other byte (comments, flow maps, order) stays. The
//! places come from the parsed document's positions; the extent of a
//! block from its indentation, as YAML defines it.

use crate::yaml::Node;

pub fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Lines that hold nothing (blank or a comment alone).
pub fn is_filler(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// The index of the last line (from `first`, 0-based) of a block whose
/// lines are indented more than `column` (0-based): up to the next line
/// that is no filler and indented `column` or less, less the fillers
/// before it.
pub fn block_end(lines: &[&str], first: usize, column: usize) -> usize {
    let mut last = first;
    for (i, line) in lines.iter().enumerate().skip(first + 1) {
        if is_filler(line) {
            continue;
        }
        if indent_of(line) <= column {
            break;
        }
        last = i;
    }
    last
}

/// The column of the dash of the list item that starts at `item_col` of
/// `line` (the dash itself, or the last one before it with only spaces
/// between).
pub fn dash_before(line: &str, item_col: usize) -> Option<usize> {
    if line.get(item_col..)?.starts_with("- ") {
        return Some(item_col);
    }
    let head = line.get(..item_col)?;
    let dash = head.rfind('-')?;
    head[dash + 1..].chars().all(|c| c == ' ').then_some(dash)
}

/// 0-based line and column of a node.
fn place(n: &Node) -> (usize, usize) {
    (n.span.line as usize - 1, n.span.column as usize - 1)
}

/// Whether the value of the mapping key `key` is written in flow style
/// (`key: {…}` or `key: […]` on the key's line).
fn flow_value(lines: &[&str], key: &Node) -> bool {
    let (l, c) = place(key);
    lines
        .get(l)
        .and_then(|line| line.get(c..))
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(_, v)| v.trim_start().starts_with(['{', '[']))
}

/// The host entry of `root` named `host` (written as is, not generated).
pub fn host_entry<'n>(root: &'n Node, host: &str) -> Option<&'n Node> {
    root.get("hosts")?
        .as_seq()?
        .iter()
        .find(|h| h.get("name").and_then(Node::as_str) == Some(host))
}

/// Gives the NIC `nic` of host `host` the MAC `mac` where the inventory
/// lists the NIC without one (`nics: {eno2: ""}`, `eno2:` alone, or a list
/// entry without `mac`). `Err` says why this layout is not edited.
pub fn set_nic_mac(text: &str, host: &str, nic: &str, mac: &str) -> Result<String, String> {
    let root = crate::yaml::parse(text, 0).map_err(|e| e.message)?;
    let entry = host_entry(&root, host).ok_or_else(|| {
        format!("host `{host}` is not written out in the file (a template or a generated name)")
    })?;
    let (nics_key, nics) = entry
        .entry("nics")
        .ok_or_else(|| format!("host `{host}` has no `nics` of its own"))?;
    let lines: Vec<&str> = text.lines().collect();
    let value = format!("\"{mac}\"");
    // (first line, end line, what replaces them)
    let (start, end, with) = if let Some(map) = nics.as_map() {
        let (key, v) = map
            .iter()
            .find(|(k, _)| k.as_str() == Some(nic))
            .ok_or_else(|| format!("host `{host}` lists no NIC `{nic}`"))?;
        if !(v.is_null() || v.as_str() == Some("")) {
            return Err(format!("NIC `{nic}` of `{host}` has a MAC already"));
        }
        let (l, c) = place(key);
        let src = lines[l];
        // After `eno2:`, up to the next `,` or `}` in a flow map, else to
        // the end of the line or its comment.
        let colon = c + src[c..].find(':').ok_or("no `:` after the NIC")? + 1;
        let rest = &src[colon..];
        let end = if flow_value(&lines, nics_key) {
            rest.find([',', '}']).unwrap_or(rest.len())
        } else {
            rest.find(" #").unwrap_or(rest.len())
        };
        (
            l,
            l + 1,
            format!("{} {value}{}\n", &src[..colon], &rest[end..]),
        )
    } else if let Some(list) = nics.as_seq() {
        let item = list
            .iter()
            .find(|i| i.get("name").and_then(Node::as_str) == Some(nic))
            .ok_or_else(|| format!("host `{host}` lists no NIC `{nic}`"))?;
        if item
            .get("mac")
            .is_some_and(|m| !m.is_null() && m.as_str() != Some(""))
        {
            return Err(format!("NIC `{nic}` of `{host}` has a MAC already"));
        }
        if item.get("mac").is_some() {
            return Err(format!(
                "NIC `{nic}` of `{host}` has an empty `mac:`: write it there"
            ));
        }
        let (name_key, _) = item.entry("name").expect("found by name");
        let (l, c) = place(name_key);
        let src = lines[l];
        // `- {name: eno2}`: a `{` or `,` before the name key.
        if src[..c].trim_end().ends_with(['{', ',']) {
            // `- {name: eno2, …}`: before its closing brace.
            let close = src[c..]
                .find('}')
                .map(|i| c + i)
                .ok_or("the NIC's flow map goes on over several lines")?;
            (
                l,
                l + 1,
                format!("{}, mac: {value}{}\n", &src[..close], &src[close..]),
            )
        } else {
            // A block entry: a line after `name:`, at its indentation.
            (l + 1, l + 1, format!("{}mac: {value}\n", " ".repeat(c)))
        }
    } else {
        return Err(format!("`nics` of `{host}` is neither a map nor a list"));
    };
    Ok(splice(&lines, start, end, &with))
}

/// The lines with `lines[start..end]` replaced by `with` (whole lines,
/// each ending in a newline).
pub fn splice(lines: &[&str], start: usize, end: usize, with: &str) -> String {
    let mut out =
        String::with_capacity(lines.iter().map(|l| l.len() + 1).sum::<usize>() + with.len());
    for line in &lines[..start] {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(with);
    for line in &lines[end..] {
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;

//! An inventory's `sites:`: a fleet of clusters (GitOps ZTP sites) from
//! one description. Each entry makes `count` clusters; each cluster is the
//! inventory itself (its `cluster`, `credentials`, `pools`, `templates`)
//! with the entry's `cluster` fields, `pools` and `hosts` over it, and
//! `${site}` (the cluster's name) and `${site.index}` (with the integer
//! formats: `${site.index:net 10.0.0.0/24}` is the index-th /24 from
//! there) replaced everywhere. "1,000 single-node sites" is a few lines.

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::{Node, Value};

/// The most hosts an inventory's sites make together.
const MAX_FLEET_HOSTS: i64 = 100_000;

const SITE_FIELDS: &[&str] = &["name", "count", "start", "cluster", "pools", "hosts"];

/// Every cluster of the inventory's `sites`.
pub(crate) fn load(root: &Node, diags: &mut Vec<Diagnostic>) -> Vec<Inventory> {
    let mut base = root.clone();
    base.remove("sites");
    base.remove("hosts");
    let mut out = Vec::new();
    let mut hosts_so_far: i64 = 0;
    let entries: Vec<Node> = {
        let mut d = Decoder::new(diags);
        d.seq(root, "sites").to_vec()
    };
    for entry in &entries {
        let mut d = Decoder::new(diags);
        if !d.check_fields(entry, "a site", SITE_FIELDS) {
            continue;
        }
        let Some(name) = d.required_string(entry, "name", "a site") else {
            continue;
        };
        let (count, start) = match super::native::count_and_start(&mut d, entry) {
            Some(c) => c,
            None => continue,
        };
        // Hosts per site, as their entries count them: a fleet is held
        // whole in memory, so its size is bounded before it is made.
        let per_site: i64 = d
            .seq(entry, "hosts")
            .iter()
            .map(|h| h.get("count").and_then(Node::as_i64).unwrap_or(1).max(1))
            .sum();
        hosts_so_far += count.saturating_mul(per_site.max(1));
        if hosts_so_far > MAX_FLEET_HOSTS {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("the sites make more than {MAX_FLEET_HOSTS} hosts in all"),
                )
                .at(entry.get("count").map(|c| c.span).unwrap_or(entry.span))
                .help("split the fleet into several inventories (check them together: `nodenet check a.yaml b.yaml`)"),
            );
            break;
        }
        for index in start..start + count {
            let site_name = match substitute(&name.value, index, None) {
                Ok(n) => n,
                Err(bad) => {
                    d.push(
                        Diagnostic::error(Code::TemplateVariable, bad)
                            .at(name.span)
                            .help(
                                "a site's name may use `${index}` (with a format: `${index:04}`)",
                            ),
                    );
                    break;
                }
            };
            let mut doc = base.clone();
            over(&mut doc, "cluster", entry.get("cluster"));
            over(&mut doc, "pools", entry.get("pools"));
            set(
                &mut doc,
                &["cluster", "name"],
                Node::new(Value::Str(site_name.clone()), name.span),
            );
            let hosts = entry
                .get("hosts")
                .cloned()
                .unwrap_or_else(|| Node::new(Value::Seq(Vec::new()), entry.span));
            set(&mut doc, &["hosts"], hosts);
            let mut failed = Vec::new();
            replace_site(&mut doc, index, &site_name, &mut failed);
            for (span, message) in failed {
                d.push(Diagnostic::error(Code::TemplateVariable, message).at(span));
            }
            let mut inv = super::native::load(&doc, d.diags);
            if inv.cluster.ztp.is_none() {
                inv.cluster.ztp = Some(ZtpCluster {
                    api_version: String::new(),
                    object_name: None,
                    namespace: None,
                    entry: Node::new(Value::Map(Vec::new()), entry.span),
                    site: None,
                });
            }
            inv.cluster.span = Some(entry.span);
            out.push(inv);
        }
    }
    out
}

/// `doc[key]`'s entries with those of `given` over them (key by key).
fn over(doc: &mut Node, key: &str, given: Option<&Node>) {
    let Some(given) = given.and_then(Node::as_map) else {
        return;
    };
    let mut merged: Vec<(Node, Node)> = doc
        .get(key)
        .and_then(Node::as_map)
        .map(<[(Node, Node)]>::to_vec)
        .unwrap_or_default();
    for (k, v) in given {
        match merged.iter_mut().find(|(mk, _)| mk.as_str() == k.as_str()) {
            Some(slot) => slot.1 = v.clone(),
            None => merged.push((k.clone(), v.clone())),
        }
    }
    let span = doc.span;
    set(doc, &[key], Node::new(Value::Map(merged), span));
}

/// Sets `path` in the mapping `doc`, making mappings on the way.
fn set(doc: &mut Node, path: &[&str], value: Node) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = doc;
    for p in parents {
        if node.get(p).and_then(Node::as_map).is_none() {
            set(node, &[p], Node::new(Value::Map(Vec::new()), node.span));
        }
        node = node.get_mut(p).expect("made above");
    }
    let span = node.span;
    if let Value::Map(entries) = &mut node.value {
        match entries.iter_mut().find(|(k, _)| k.as_str() == Some(last)) {
            Some(slot) => slot.1 = value,
            None => entries.push((Node::new(Value::Str(last.to_string()), span), value)),
        }
    }
}

/// `${site}` and `${site.index[:FORMAT]}` in every string of `node`; what
/// cannot be replaced (a bad format) is said where it is written.
fn replace_site(node: &mut Node, index: i64, name: &str, failed: &mut Vec<(crate::Span, String)>) {
    match &mut node.value {
        Value::Str(s) if s.contains("${site") => match substitute(s, index, Some(name)) {
            Ok(new) => {
                // A value that is the index alone keeps its type.
                node.value = match new.parse::<i64>() {
                    Ok(i) if s.trim() == "${site.index}" => Value::Int(i),
                    _ => Value::Str(new),
                };
            }
            Err(message) => failed.push((node.span, message)),
        },
        Value::Seq(items) => items
            .iter_mut()
            .for_each(|i| replace_site(i, index, name, failed)),
        Value::Map(entries) => entries
            .iter_mut()
            .for_each(|(_, v)| replace_site(v, index, name, failed)),
        _ => {}
    }
}

/// `s` with `${index[:FORMAT]}` (`site` None: a site's name) or
/// `${site}` and `${site.index[:FORMAT]}` (`site` Some) replaced; other
/// placeholders are left for the hosts' expansion.
fn substitute(s: &str, index: i64, site: Option<&str>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let expr = rest[start + 2..start + len].trim();
        let (var, format) = match expr.split_once(':') {
            Some((v, f)) => (v.trim(), Some(f.trim())),
            None => (expr, None),
        };
        let value = match (site, var) {
            (Some(name), "site") if format.is_none() => Some(name.to_string()),
            (Some(_), "site.index") | (None, "index") => Some(match format {
                None => index.to_string(),
                Some(f) => {
                    crate::template::format_int(index, f).map_err(|e| e.message(index, f, expr))?
                }
            }),
            _ => None,
        };
        out.push_str(&rest[..start]);
        match value {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[start..start + len + 1]),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::substitute;

    #[test]
    fn site_placeholders_are_replaced_and_others_kept() {
        assert_eq!(substitute("sno-${index:04}", 7, None).unwrap(), "sno-0007");
        assert_eq!(
            substitute(
                "${site}.${site.index:net 10.0.0.0/24} ${ip.machine}",
                3,
                Some("s3")
            )
            .unwrap(),
            "s3.10.0.3.0/24 ${ip.machine}"
        );
        assert!(substitute("${site.index:zz}", 1, Some("s")).is_err());
    }
}

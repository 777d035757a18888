//! Reading typed fields out of a located YAML mapping, reporting every
//! unknown key and wrong type as a diagnostic instead of stopping.

use std::net::IpAddr;

use ipnet::IpNet;

use crate::diag::{Code, Diagnostic};
use crate::inventory::Located;
use crate::yaml::{Node, Value};

/// Collects diagnostics while decoding; the host name rides along so every
/// finding is attached to the host it belongs to.
pub struct Decoder<'a> {
    pub diags: &'a mut Vec<Diagnostic>,
    pub host: Option<String>,
}

impl<'a> Decoder<'a> {
    pub fn new(diags: &'a mut Vec<Diagnostic>) -> Self {
        Decoder { diags, host: None }
    }

    pub fn push(&mut self, mut d: Diagnostic) {
        if d.host.is_none() {
            d.host = self.host.clone();
        }
        self.diags.push(d);
    }

    /// Reports keys of `node` not in `known`, with a suggestion for typos.
    /// Returns false (and reports) when `node` is not a mapping.
    pub fn check_fields(&mut self, node: &Node, what: &str, known: &[&str]) -> bool {
        self.fields(node, what, known, None)
    }

    /// [`Decoder::check_fields`] for a consumer that reads the rest and
    /// drops unknown keys (a Go `yaml.Unmarshal`, an API server pruning
    /// what its CRD does not have): each is a warning that says what
    /// becomes of it (`dropped`), never an error.
    pub fn dropped_fields(
        &mut self,
        node: &Node,
        what: &str,
        known: &[&str],
        dropped: &str,
    ) -> bool {
        self.fields(node, what, known, Some(dropped))
    }

    fn fields(&mut self, node: &Node, what: &str, known: &[&str], dropped: Option<&str>) -> bool {
        let Some(entries) = node.as_map() else {
            if !node.is_null() {
                self.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("{what} must be a mapping, found {}", node.kind_name()),
                    )
                    .at(node.span),
                );
            }
            return false;
        };
        for (key, _) in entries {
            let name = key.scalar_text().unwrap_or_default();
            if !known.contains(&name.as_str()) {
                let mut d = match dropped {
                    None => Diagnostic::error(
                        Code::UnknownField,
                        format!("unknown field `{name}` in {what}"),
                    ),
                    Some(dropped) => Diagnostic::warning(
                        Code::UnknownField,
                        format!("unknown field `{name}` in {what}: {dropped}"),
                    ),
                }
                .at(key.span);
                if let Some(s) = suggest(&name, known) {
                    d = d.help(format!("did you mean `{s}`?"));
                } else {
                    d = d.help(format!("known fields: {}", known.join(", ")));
                }
                self.push(d);
            }
        }
        true
    }

    /// The keys of `node` as Go's `encoding/json` reads them for a struct
    /// with the fields `known` (install-config.yaml, agent-config.yaml):
    /// in any case. A key written in another case than documented is
    /// renamed to the documented spelling, with a warning; a key that is
    /// no field is an error (openshift-install drops it, and the setting
    /// with it; agent-config.yaml it refuses), with the field meant when
    /// it is a spelling slip away.
    pub fn go_fields(&mut self, node: &mut Node, what: &str, known: &[&str]) {
        let Value::Map(entries) = &mut node.value else {
            return;
        };
        for (key, _) in entries.iter_mut() {
            // Keys are nearly always known strings: nothing to allocate.
            if key.as_str().is_some_and(|k| known.contains(&k)) {
                continue;
            }
            let name = key.scalar_text().unwrap_or_default();
            if known.contains(&name.as_str()) {
                continue;
            }
            if let Some(field) = known.iter().find(|k| k.eq_ignore_ascii_case(&name)) {
                self.push(
                    Diagnostic::warning(
                        Code::FieldCase,
                        format!("`{name}` in {what} is read as `{field}` (Go matches field names in any case)"),
                    )
                    .at(key.span)
                    .help(format!("write it as documented: `{field}`")),
                );
                key.value = Value::Str(field.to_string());
                continue;
            }
            let mut d = Diagnostic::error(
                Code::UnknownField,
                format!("unknown field `{name}` in {what}: openshift-install ignores it, and the setting with it"),
            )
            .at(key.span);
            d = match suggest(&name, known) {
                Some(s) => d.help(format!("did you mean `{s}`?")),
                None => d.help(format!("known fields: {}", known.join(", "))),
            };
            self.push(d);
        }
    }

    /// A network in CIDR notation, which must be a network address (no
    /// host bits), as openshift-install requires.
    pub fn network(&mut self, v: &Node) -> Option<Located<IpNet>> {
        let net = self.cidr(v)?;
        if net.value.addr() != net.value.network() {
            self.push(
                Diagnostic::error(
                    Code::CidrNotNetwork,
                    format!(
                        "invalid network address: got {}, expecting {}",
                        net.value,
                        net.value.trunc()
                    ),
                )
                .at(v.span)
                .help(format!(
                    "write `{}`: openshift-install refuses a CIDR with host bits set",
                    net.value.trunc()
                )),
            );
        }
        Some(net)
    }

    pub fn string(&mut self, node: &Node, key: &str) -> Option<Located<String>> {
        let v = node.get(key)?;
        match &v.value {
            Value::Null => None,
            Value::Str(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                Some(Located::new(v.scalar_text().unwrap_or_default(), v.span))
            }
            _ => {
                self.type_error(v, key, "a string");
                None
            }
        }
    }

    pub fn required_string(
        &mut self,
        node: &Node,
        key: &str,
        what: &str,
    ) -> Option<Located<String>> {
        let s = self.string(node, key);
        if s.is_none() && node.get(key).is_none() {
            self.push(
                Diagnostic::error(Code::MissingField, format!("{what} has no `{key}`"))
                    .at(node.span),
            );
        }
        s
    }

    pub fn bool(&mut self, node: &Node, key: &str) -> Option<bool> {
        let v = node.get(key)?;
        match v.value {
            Value::Bool(b) => Some(b),
            Value::Null => None,
            _ => {
                self.type_error(v, key, "true or false");
                None
            }
        }
    }

    pub fn seq<'n>(&mut self, node: &'n Node, key: &str) -> &'n [Node] {
        match node.get(key) {
            None => &[],
            Some(v) => match &v.value {
                Value::Seq(items) => items,
                Value::Null => &[],
                _ => {
                    self.type_error(v, key, "a list");
                    &[]
                }
            },
        }
    }

    pub fn type_error(&mut self, v: &Node, key: &str, expected: &str) {
        self.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`{key}` must be {expected}, found {}", v.kind_name()),
            )
            .at(v.span),
        );
    }

    pub fn ip(&mut self, v: &Node) -> Option<Located<IpAddr>> {
        let text = v.scalar_text()?;
        match text.trim().parse::<IpAddr>() {
            Ok(ip) => Some(Located::new(ip, v.span)),
            Err(_) => {
                self.push(
                    Diagnostic::error(Code::IpInvalid, format!("`{text}` is not an IP address"))
                        .at(v.span),
                );
                None
            }
        }
    }

    pub fn cidr(&mut self, v: &Node) -> Option<Located<IpNet>> {
        let text = v.scalar_text()?;
        match text.trim().parse::<IpNet>() {
            Ok(net) => Some(Located::new(net, v.span)),
            Err(_) => {
                self.push(
                    Diagnostic::error(
                        Code::IpInvalid,
                        format!(
                            "`{text}` is not a network in CIDR notation (like 192.168.111.0/24)"
                        ),
                    )
                    .at(v.span),
                );
                None
            }
        }
    }

    /// One IP or a list of IPs (install-config has both `apiVIP` and `apiVIPs`).
    pub fn ips(&mut self, v: &Node) -> Vec<Located<IpAddr>> {
        match &v.value {
            Value::Seq(items) => items.iter().filter_map(|i| self.ip(i)).collect(),
            Value::Null => Vec::new(),
            _ => self.ip(v).into_iter().collect(),
        }
    }

    pub fn mac(&mut self, v: &Node) -> Option<Located<String>> {
        let text = v.scalar_text()?;
        if is_mac(&text) {
            Some(Located::new(text, v.span))
        } else {
            self.push(
                Diagnostic::error(
                    Code::MacInvalid,
                    format!(
                        "`{text}` is not a MAC address (six hex octets like 52:54:00:ab:cd:01)"
                    ),
                )
                .at(v.span),
            );
            None
        }
    }
}

pub fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Closest known name when it is close enough to be a typo.
pub fn suggest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs() {
        assert!(is_mac("52:54:00:AB:cd:01"));
        assert!(!is_mac("52:54:00:ab:cd"));
        assert!(!is_mac("52:54:00:ab:cd:0g"));
    }

    #[test]
    fn typo_suggestions() {
        assert_eq!(
            suggest("bootMacAddress", &["bootMACAddress", "name"]),
            Some("bootMACAddress")
        );
        assert_eq!(suggest("zzz", &["bootMACAddress", "name"]), None);
    }
}

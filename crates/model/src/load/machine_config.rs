//! A MachineConfig that writes NMState files: `/etc/nmstate/openshift/
//! <host>.yml` (one host), `cluster.yml` (every node of the role without
//! its own file), `/etc/nmstate/*.yml` (nmstate.service, every node of
//! the role) and nodenet's own `/etc/nodenet/nmstate/<host>.yml` (or
//! `cluster.yml`). Each file's `data:` URL is decoded and checked as a
//! partial state, its findings pointing at the MachineConfig's line.

use base64::Engine;

use crate::diag::{Code, Diagnostic, Embedding};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::{Node, Span};

use super::Context;

const NMSTATE_DIR: &str = "/etc/nmstate/";
/// nodenet-apply.service's directory (`nodenet service --dir`).
pub const NODENET_DIR: &str = "/etc/nodenet/nmstate/";
const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";
/// Where `.link` files pinning NIC names go (`nicBinding: pin`).
const LINK_DIR: &str = "/etc/systemd/network/";

fn files(root: &Node) -> &[Node] {
    root.get("spec")
        .and_then(|s| s.get("config"))
        .and_then(|c| c.get("storage"))
        .and_then(|s| s.get("files"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
}

fn path_of(file: &Node) -> Option<String> {
    file.get("path").and_then(Node::as_str).map(str::to_string)
}

/// `spec.config.systemd.units`.
fn units(root: &Node) -> &[Node] {
    root.get("spec")
        .and_then(|s| s.get("config"))
        .and_then(|c| c.get("systemd"))
        .and_then(|s| s.get("units"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
}

/// Whether the MachineConfig provides systemd units (what a node
/// disruption policy may restart).
pub(crate) fn has_units(root: &Node) -> bool {
    !units(root).is_empty()
}

/// Whether the MachineConfig writes any file under /etc/nmstate, or a
/// `.link` file (NIC names).
pub(crate) fn writes_nmstate(root: &Node) -> bool {
    files(root).iter().filter_map(path_of).any(|p| {
        p.starts_with(NMSTATE_DIR)
            || p.starts_with(NODENET_DIR)
            || (p.starts_with(LINK_DIR) && p.ends_with(".link"))
    })
}

pub(crate) fn load(root: &Node, ctx: &mut Context, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    let mut inv = Inventory::default();
    let mc = super::object_name(&mut d, root, "the MachineConfig")
        .map(|n| n.value)
        .unwrap_or_else(|| "machineconfig".into());
    let role_node = super::label(root, ROLE_LABEL);
    let role = role_node
        .and_then(Node::scalar_text)
        .and_then(|r| Role::parse(&r))
        .unwrap_or_default();
    let pool = role_node
        .and_then(Node::scalar_text)
        .unwrap_or_else(|| "(no role label)".into());
    for unit in units(root) {
        if let Some(name) = unit.get("name").filter(|n| n.scalar_text().is_some()) {
            inv.provided_units.push(Located::new(
                name.scalar_text().unwrap_or_default(),
                name.span,
            ));
        }
    }
    for file in files(root) {
        let Some(path) = path_of(file) else { continue };
        let path_span = file.get("path").map(|p| p.span).unwrap_or(file.span);
        if let Some(link) = path.strip_prefix(LINK_DIR) {
            if !link.contains('/') && link.ends_with(".link") {
                if let Some(text) = file_text(file, &path, &mut d) {
                    pinned_name(&text, path_span, &mut inv);
                }
            }
            continue;
        }
        // `openshift/<host>.yml`, nodenet's `<host>.yml`, or
        // nmstate.service's `<name>.yml`.
        let (per_host, file_name) = if let Some(f) = path.strip_prefix(NODENET_DIR) {
            (true, f)
        } else if let Some(rest) = path.strip_prefix(NMSTATE_DIR) {
            match rest.strip_prefix("openshift/") {
                Some(f) => (true, f),
                None => (false, rest),
            }
        } else {
            continue;
        };
        let dir = &path[..path.len() - file_name.len()];
        if file_name.contains('/') {
            continue;
        }
        let (stem, ext) = file_name.rsplit_once('.').unwrap_or((file_name, ""));
        let stem = stem.to_string();
        match ext {
            "yml" => {}
            "yaml" if per_host => d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`{path}` is never applied: the node reads only `.yml` files in {dir}"),
                )
                .at(path_span)
                .help(format!("name it `{dir}{stem}.yml`")),
            ),
            _ => continue,
        }
        let Some(text) = file_text(file, &path, &mut d) else {
            continue;
        };
        let source = file
            .get("contents")
            .and_then(|c| c.get("source"))
            .expect("file_text read it");
        let embedding = Embedding::relocated(source.span, path.clone());
        let Some(network) = ctx.parse_embedded(path.clone(), text, embedding, &mut d) else {
            continue;
        };
        // `<host>.yml` is that host's; `cluster.yml` and nmstate.service's
        // files reach every node of the pool.
        let (name, applies_to) = if per_host && stem != "cluster" {
            (stem.clone(), None)
        } else if per_host {
            (
                format!("{mc}:cluster.yml"),
                Some(format!("every {pool} node without its own file")),
            )
        } else {
            (
                format!("{mc}:{stem}.yml"),
                Some(format!("every {pool} node")),
            )
        };
        let mut host = Host::new(Located::new(name, path_span), InputKind::MachineConfig);
        host.role = Located::new(role, role_node.map(|n| n.span).unwrap_or(path_span));
        host.applies_to = applies_to;
        host.written_to = Some(path.clone());
        host.network = Some(network);
        inv.hosts.push(host);
    }
    inv
}

/// The text of an Ignition file entry whose contents are a `data:` URL
/// (gzip or not); a located finding, and `None`, where they cannot be read.
fn file_text(file: &Node, path: &str, d: &mut Decoder) -> Option<String> {
    let Some(contents) = file.get("contents") else {
        d.push(
            Diagnostic::error(Code::MissingField, format!("`{path}` has no `contents`"))
                .at(file.span),
        );
        return None;
    };
    let Some(source) = contents.get("source") else {
        d.push(
            Diagnostic::error(
                Code::MissingField,
                format!("`{path}` has no `contents.source`"),
            )
            .at(contents.span),
        );
        return None;
    };
    let url = source.scalar_text().unwrap_or_default();
    let compression = contents
        .get("compression")
        .and_then(Node::as_str)
        .unwrap_or("");
    let bytes = match decode_data_url(&url) {
        Some(bytes) => bytes,
        None if !url.starts_with("data:") => {
            d.push(
                Diagnostic::warning(
                    Code::InvalidValue,
                    format!(
                        "`{path}` is fetched from `{}` at boot: not checked here",
                        short(&url)
                    ),
                )
                .at(source.span),
            );
            return None;
        }
        None => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("the contents of `{path}` are not a valid data: URL"),
                )
                .at(source.span)
                .help("Ignition reads `data:[<mediatype>][;base64],<data>` (RFC 2397)"),
            );
            return None;
        }
    };
    let bytes = match compression {
        "" => bytes,
        "gzip" => match gunzip(&bytes) {
            Some(b) => b,
            None => {
                d.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("the contents of `{path}` are not valid gzip"),
                    )
                    .at(source.span),
                );
                return None;
            }
        },
        other => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("unknown compression `{other}` of `{path}` (Ignition knows gzip)"),
                )
                .at(contents
                    .get("compression")
                    .map(|c| c.span)
                    .unwrap_or(contents.span)),
            );
            return None;
        }
    };
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// One `.link` file's pin (`[Match] PermanentMACAddress=`/`MACAddress=`,
/// `[Link] Name=`), as nodenet writes for `nicBinding: pin`: recorded for
/// the hosts whose NIC table holds that MAC (`merge`).
fn pinned_name(text: &str, span: Span, inv: &mut Inventory) {
    let mut section = "";
    let (mut mac, mut name) = (None, None);
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match (section, k.trim()) {
            ("[Match]", "PermanentMACAddress") => mac = Some(v.trim().to_ascii_uppercase()),
            ("[Match]", "MACAddress") if mac.is_none() => mac = Some(v.trim().to_ascii_uppercase()),
            ("[Link]", "Name") => name = Some(v.trim().to_string()),
            _ => {}
        }
    }
    // Another kind of .link file (MTU, naming policy) pins nothing.
    if let (Some(mac), Some(name)) = (mac, name) {
        inv.cluster.pinned_nics.push(PinnedNic {
            mac,
            name: Located::new(name, span),
        });
    }
}

fn short(url: &str) -> String {
    if url.chars().count() > 60 {
        format!("{}…", url.chars().take(60).collect::<String>())
    } else {
        url.to_string()
    }
}

/// The bytes of an RFC 2397 `data:` URL (base64 or percent-encoded), as
/// Ignition reads them.
pub fn decode_data_url(url: &str) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if meta.split(';').any(|p| p.eq_ignore_ascii_case("base64")) {
        // Ignition accepts the data percent-encoded even in base64 form.
        let data = percent_decode(data)?;
        let data: Vec<u8> = data
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        base64::engine::general_purpose::STANDARD
            .decode(&data)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(&data))
            .ok()
    } else {
        percent_decode(data)
    }
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
    Some(percent_encoding::percent_decode_str(s).collect())
}

/// Decompressed contents, at most 64 MiB (a state is a few KiB).
fn gunzip(bytes: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(64 << 20)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_as_ignition_writes_them() {
        assert_eq!(
            decode_data_url("data:text/plain;charset=utf-8;base64,aW50ZXJmYWNlczogW10K").unwrap(),
            b"interfaces: []\n"
        );
        assert_eq!(
            decode_data_url("data:,interfaces%3A%20%5B%5D%0A").unwrap(),
            b"interfaces: []\n"
        );
        assert_eq!(decode_data_url("data:;base64,").unwrap(), b"");
        assert!(decode_data_url("data:;base64,!!!").is_none());
        assert!(decode_data_url("https://example.com/x.yml").is_none());
    }
}

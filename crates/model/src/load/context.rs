//! What a format's loader may use besides its document: the objects
//! other documents name (Secrets, IPPools), the NICs inspection found,
//! the addresses IPAM already handed out, and a way to parse YAML carried
//! inside a document with findings pointing back at its place.

use std::collections::HashMap;

use super::{meta_field, secret_spans, Document, Shape};
use crate::diag::{Code, Diagnostic, Embedding, SourceMap};
use crate::fields::Decoder;
use crate::yaml::{self, Node};

/// Kubernetes objects other inputs name (Secrets, IPPools), by kind,
/// namespace and name.
pub(crate) struct Referenced<'a> {
    by_name: HashMap<(&'static str, String, String), &'a Node>,
}

impl<'a> Referenced<'a> {
    /// The referenced documents by kind, namespace and name.
    pub(super) fn of(docs: &'a [(Document, Shape)]) -> Referenced<'a> {
        let by_name = docs
            .iter()
            .filter_map(|(doc, shape)| match shape {
                Shape::Referenced(kind) => Some((
                    (
                        *kind,
                        meta_field(&doc.root, "namespace"),
                        meta_field(&doc.root, "name"),
                    ),
                    &doc.root,
                )),
                _ => None,
            })
            .collect();
        Referenced { by_name }
    }

    pub(crate) fn secret(&self, namespace: &str, name: &str) -> Option<&'a Node> {
        self.object("Secret", namespace, name)
    }

    /// Every object of a kind in a namespace (or written without one), by
    /// name.
    pub(crate) fn all(&self, kind: &str, namespace: &str) -> Vec<(&str, &'a Node)> {
        let mut v: Vec<(&str, &'a Node)> = self
            .by_name
            .iter()
            .filter(|((k, ns, _), _)| *k == kind && (ns == namespace || ns.is_empty()))
            .map(|((_, _, name), node)| (name.as_str(), *node))
            .collect();
        v.sort_by_key(|(name, _)| *name);
        v
    }

    pub(crate) fn object(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
    ) -> Option<&'a Node> {
        self.by_name
            .get(&(kind, namespace.to_string(), name.to_string()))
            .or_else(|| {
                // An object written without a namespace goes where it is applied.
                self.by_name.get(&(kind, String::new(), name.to_string()))
            })
            .copied()
    }
}

/// What a format loader may use besides its document.
pub(crate) struct Context<'a> {
    pub sources: &'a mut SourceMap,
    pub objects: &'a Referenced<'a>,
    /// The NICs of each BareMetalHost among the inputs as inspection found
    /// them (`status.hardware.nics`: name, MAC), by namespace and name.
    pub host_nics: &'a HashMap<(String, String), Vec<(String, String)>>,
    /// Addresses IPAM hands out from IPPools to hosts without a
    /// preallocation, across every template that draws from them (as
    /// ip-address-manager allocates: never one address twice).
    pub allocated: std::collections::HashSet<std::net::IpAddr>,
}

impl Context<'_> {
    /// Parses YAML carried inside a document (a data: URL, a Secret's
    /// value), so that findings inside it point back at its place.
    pub(crate) fn parse_embedded(
        &mut self,
        name: String,
        text: String,
        embedding: Embedding,
        d: &mut Decoder,
    ) -> Option<Node> {
        let parent = embedding.parent;
        let file = self.sources.add_embedded(name, text, embedding);
        let text = &self.sources.get(file).expect("just added").text;
        match yaml::parse(text, file) {
            Ok(node) if node.is_null() => {
                d.push(
                    Diagnostic::error(Code::InvalidValue, "the embedded NMState is empty")
                        .at(parent),
                );
                None
            }
            Ok(node) => {
                let secrets = secret_spans(&node);
                if !secrets.is_empty() {
                    self.sources.redact(file, &secrets);
                }
                Some(node)
            }
            Err(e) => {
                d.push(Diagnostic::error(Code::YamlSyntax, e.message).at(e.span));
                None
            }
        }
    }

    /// The YAML text of a string value: exact positions when it is a
    /// literal block (`|`), else findings point at the value itself.
    pub(crate) fn parse_string_value(
        &mut self,
        name: String,
        value: &Node,
        d: &mut Decoder,
    ) -> Option<Node> {
        let text = value.as_str()?.to_string();
        let embedding = self.sources.embedding_of(value.span, &text, &name);
        self.parse_embedded(name, text, embedding, d)
    }
}

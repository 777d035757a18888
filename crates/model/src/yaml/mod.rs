//! A YAML tree that remembers where every node came from.
//!
//! serde_yaml forgets positions, and nmstate's own errors inside `interfaces`
//! always point at "line 2 column 1"; every diagnostic nodenet prints must
//! point at the node that is wrong, so all loading goes through this tree.

use std::collections::HashMap;
use std::fmt;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

mod block;
mod json;
mod split;

/// Index of a file in a [`crate::SourceMap`].
pub type FileId = u32;

/// A position in a source file: 1-based line and column, byte offset and
/// an approximate byte length (for the caret under the node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub line: u32,
    pub column: u32,
    pub offset: u32,
    pub len: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// A YAML node with its origin.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub span: Span,
    pub value: Value,
}

/// A syntax error with its position.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    pub message: String,
    pub span: Span,
}

impl Node {
    pub fn new(value: Value, span: Span) -> Self {
        Node { span, value }
    }

    /// Value of `key` when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// Key node and value node of `key` when this node is a mapping.
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        match &self.value {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// The values of `keys` when this node is a mapping, each as
    /// [`Node::get`] gives it, in one pass over the entries: reading a
    /// state looks up most keys of every interface.
    pub fn get_all<const N: usize>(&self, keys: [&str; N]) -> [Option<&Node>; N] {
        let mut found = [None; N];
        if let Value::Map(entries) = &self.value {
            for (k, v) in entries {
                let Some(k) = k.as_str() else { continue };
                if let Some(i) = keys.iter().position(|key| *key == k) {
                    found[i].get_or_insert(v);
                }
            }
        }
        found
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match &mut self.value {
            Value::Map(entries) => entries
                .iter_mut()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes the value of `key` out of this mapping (leaving null), to
    /// move a large subtree instead of copying it.
    pub fn take(&mut self, key: &str) -> Option<Node> {
        let v = self.get_mut(key)?;
        let span = v.span;
        Some(std::mem::replace(v, Node::new(Value::Null, span)))
    }

    /// Removes `key` and its value from this mapping.
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        match &mut self.value {
            Value::Map(entries) => {
                let i = entries.iter().position(|(k, _)| k.as_str() == Some(key))?;
                Some(entries.remove(i).1)
            }
            _ => None,
        }
    }

    /// The items of `path` (keys of nested mappings) when it is a list.
    pub fn seq_at_mut(&mut self, path: &[&str]) -> Option<&mut Vec<Node>> {
        let mut n = self;
        for k in path {
            n = n.get_mut(k)?;
        }
        match &mut n.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match &self.value {
            Value::Int(i) => Some(*i),
            Value::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match &self.value {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The scalar as text, whatever YAML type it resolved to (a VLAN id
    /// written `110` and one written `"110"` both read back as "110").
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Null | Value::Seq(_) | Value::Map(_) => None,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// Frees the tree, a long sequence's items on every core (the 10,000
    /// host items of an install-config took 26 ms on one, at the end of
    /// every load).
    pub fn drop_in_parallel(self) {
        use rayon::prelude::*;
        match self.value {
            Value::Seq(items) if items.len() >= 256 => items.into_par_iter().for_each(drop),
            Value::Seq(items) => items.into_iter().for_each(Node::drop_in_parallel),
            Value::Map(entries) => entries.into_iter().for_each(|(_, v)| v.drop_in_parallel()),
            _ => {}
        }
    }

    /// Depth-first search for the first node satisfying `pred`.
    pub fn find(&self, pred: &mut dyn FnMut(&Node) -> bool) -> Option<&Node> {
        if pred(self) {
            return Some(self);
        }
        match &self.value {
            Value::Seq(items) => items.iter().find_map(|n| n.find(pred)),
            Value::Map(entries) => entries
                .iter()
                .find_map(|(k, v)| k.find(pred).or_else(|| v.find(pred))),
            _ => None,
        }
    }

    /// The same document as `other`, wherever each was written: values
    /// and mapping keys equal in the same order, spans aside. Where this
    /// holds, both give the same [`Node::to_json`] (the converse need not:
    /// `1` and `'1'` as keys, a key order).
    pub fn same_value(&self, other: &Node) -> bool {
        match (&self.value, &other.value) {
            (Value::Seq(a), Value::Seq(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_value(y))
            }
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((k, v), (l, w))| k.same_value(l) && v.same_value(w))
            }
            (a, b) => a == b,
        }
    }

    /// Plain JSON for handing to serde-based consumers (nmstate, output).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or(J::Null),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.scalar_text().unwrap_or_default(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// Builds a node tree from JSON, every node at `span` (used for values
    /// nodenet synthesises, located at what caused them).
    pub fn from_json(json: &serde_json::Value, span: Span) -> Node {
        use serde_json::Value as J;
        let value = match json {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or_default()),
            },
            J::String(s) => Value::Str(s.clone()),
            J::Array(items) => Value::Seq(items.iter().map(|i| Node::from_json(i, span)).collect()),
            J::Object(map) => Value::Map(
                map.iter()
                    .map(|(k, v)| {
                        (
                            Node::new(Value::Str(k.clone()), span),
                            Node::from_json(v, span),
                        )
                    })
                    .collect(),
            ),
        };
        Node::new(value, span)
    }
}

/// Where the parts of a synthesised JSON value came from: a JSON pointer
/// (`/interfaces/0/ipv4/address/1`) to a span, inherited by everything
/// below it that has none of its own. A reader of another format (a
/// network_data.json, netplan) builds its NMState as JSON and locates each
/// part at what it was read from.
#[derive(Default, Debug)]
pub struct JsonSpans(HashMap<String, Span>);

impl JsonSpans {
    pub fn at(&mut self, pointer: impl Into<String>, span: Span) {
        self.0.insert(pointer.into(), span);
    }

    /// The node tree of `json`, located by these spans (`span` where none
    /// applies).
    pub fn node(&self, json: &serde_json::Value, span: Span) -> Node {
        self.build(json, span, &mut String::new())
    }

    fn build(&self, json: &serde_json::Value, inherited: Span, path: &mut String) -> Node {
        use serde_json::Value as J;
        let span = self.0.get(path.as_str()).copied().unwrap_or(inherited);
        let len = path.len();
        let value = match json {
            J::Array(items) => Value::Seq(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        path.push_str(&format!("/{i}"));
                        let n = self.build(item, span, path);
                        path.truncate(len);
                        n
                    })
                    .collect(),
            ),
            J::Object(map) => Value::Map(
                map.iter()
                    .map(|(k, v)| {
                        path.push('/');
                        path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                        let n = self.build(v, span, path);
                        path.truncate(len);
                        (Node::new(Value::Str(k.clone()), n.span), n)
                    })
                    .collect(),
            ),
            scalar => Node::from_json(scalar, span).value,
        };
        Node::new(value, span)
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scalar_text() {
            Some(s) => f.write_str(&s),
            None => write!(f, "{}", self.to_json()),
        }
    }
}

/// Deeper nesting is refused: no real network state comes close, and
/// recursive walks over the tree must not overflow the stack.
pub const MAX_DEPTH: usize = 128;

/// Keys at least this long are left to yaml-rust2 by the fast readers
/// (it refuses an implicit key past 1,024 characters).
const MAX_FAST_KEY: usize = 1000;

/// Text the fast readers may take: ASCII (yaml-rust2's marks count
/// characters), and no tab, CR or other control character (yaml-rust2
/// refuses some and ends the stream at a NUL).
fn fast_bytes(text: &str) -> bool {
    text.is_ascii() && !text.bytes().any(|b| (b < b' ' && b != b'\n') || b == 0x7f)
}

/// Aliases may copy this many nodes in all, or more in a large text (per
/// byte of it): far more than anchors in real inputs (a template's
/// interface written once and aliased per host) ever copy.
const MIN_ALIAS_NODES: usize = 1_000_000;
const ALIAS_NODES_PER_BYTE: usize = 4;

/// Nodes in a tree (a scalar is one).
fn node_count(node: &Node) -> usize {
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(node_count).sum(),
        Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| node_count(k) + node_count(v))
            .sum(),
        _ => 0,
    }
}

/// `n` spaces pushed onto `out`, for indentation: copied from a run of
/// spaces, where pushing them one `char` at a time (`extend` with
/// `repeat_n`) encoded and checked capacity for each (1 % of a render).
pub fn pad(out: &mut String, n: usize) {
    const SPACES: &str = "                                                                ";
    let mut left = n;
    while left > 0 {
        let k = left.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        left -= k;
    }
}

/// Parses one YAML document. An empty document is `Null`.
pub fn parse(text: &str, file: FileId) -> Result<Node, YamlError> {
    let mut docs = parse_all(text, file)?;
    if docs.len() > 1 {
        return Err(YamlError {
            message: "more than one YAML document in the file; nodenet reads one here".into(),
            span: docs[1].span,
        });
    }
    Ok(docs.pop().unwrap_or_else(|| empty_document(file)))
}

/// Parses every document of a YAML stream (`---`-separated, as
/// Kubernetes manifests are written). Documents that hold nothing are
/// left out; an empty stream gives no document. A large document whose
/// bulk is one long block sequence (an install-config's hosts) is parsed
/// in parallel, with the same result (`split.rs`).
pub fn parse_all(text: &str, file: FileId) -> Result<Vec<Node>, YamlError> {
    if let Some(docs) = split::parse_in_parallel(text, file) {
        return Ok(docs);
    }
    parse_at(text, file, Base::default())
}

/// Where a piece of text sits in its file: spans read from it are moved
/// by these many lines and bytes.
#[derive(Clone, Copy, Default)]
pub(crate) struct Base {
    pub line: u32,
    pub offset: u32,
    /// Text cut out of the middle (none when `by` is 0): what stands at
    /// byte `at` of the text or later stood `by` bytes later in the file.
    pub cut: Cut,
}

#[derive(Clone, Copy, Default)]
pub(crate) struct Cut {
    pub at: u32,
    pub by: u32,
}

/// [`parse_all`] of `text`, itself the part of a file that starts at `base`.
pub(crate) fn parse_at(text: &str, file: FileId, base: Base) -> Parsed {
    // Plain block YAML (nearly all of it) and JSON are read fast; anything
    // else, or anything those readers are unsure of, by yaml-rust2 from
    // the start.
    fast(text, file, base).unwrap_or_else(|| parse_by_yaml_rust2(text, file, base))
}

/// What the fast reader of `text`'s kind gives, when it takes it.
fn fast(text: &str, file: FileId, base: Base) -> Option<Parsed> {
    let json = matches!(
        text.trim_start_matches([' ', '\n']).as_bytes().first(),
        Some(b'{' | b'[')
    );
    let read = if json { json::read } else { block::read };
    read_fast(read, text, file, base)
}

/// A fast reader (`block::read`, `json::read`).
type FastRead = fn(&str, &mut Builder) -> Result<(), block::NotPlain>;

/// What `read` gives for `text`, when it takes it.
fn read_fast(read: FastRead, text: &str, file: FileId, base: Base) -> Option<Parsed> {
    let mut builder = Builder::new(text, file, base);
    read(text, &mut builder).ok()?;
    Some(builder.finish())
}

/// The documents of a text, or its first error.
pub type Parsed = Result<Vec<Node>, YamlError>;

/// For the `yaml_block` fuzz target: what the fast reader of `text`'s
/// kind (plain block YAML, or JSON) gives, when it takes it, beside what
/// yaml-rust2 gives.
#[doc(hidden)]
pub fn both_readers(text: &str) -> Option<(Parsed, Parsed)> {
    Some((
        fast(text, 0, Base::default())?,
        parse_by_yaml_rust2(text, 0, Base::default()),
    ))
}

/// [`parse_at`] by yaml-rust2 alone.
pub(crate) fn parse_by_yaml_rust2(text: &str, file: FileId, base: Base) -> Parsed {
    let mut builder = Builder::new(text, file, base);
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut builder, true) {
        let span = builder.span(Mark::from(e.marker()), 1);
        return Err(YamlError {
            message: e.info().to_string(),
            span,
        });
    }
    builder.finish()
}

fn empty_document(file: FileId) -> Node {
    Node::new(
        Value::Null,
        Span {
            file,
            line: 1,
            column: 1,
            offset: 0,
            len: 0,
        },
    )
}

fn span_at(file: FileId, m: Mark, len: usize) -> Span {
    Span {
        file,
        line: m.line as u32,
        // yaml-rust2 columns are 0-based.
        column: m.col as u32 + 1,
        offset: m.index as u32,
        len: len.max(1) as u32,
    }
}

/// An open collection. Its items wait in the builder's scratch lists
/// (from `start` on) and move into a vector of their exact size when it
/// closes: no vector grows item by item, none keeps spare room.
enum Frame {
    /// span, anchor, start in `seq_scratch`
    Seq(Span, usize, usize),
    /// span, anchor, start in `map_scratch`, key waiting for its value, and
    /// which entries (relative to start) came from `<<` merges (explicit
    /// keys override those).
    Map(Span, usize, usize, Option<Node>, Vec<usize>),
}

struct Builder<'a> {
    file: FileId,
    text: &'a str,
    base: Base,
    stack: Vec<Frame>,
    seq_scratch: Vec<Node>,
    map_scratch: Vec<(Node, Node)>,
    /// Anchored nodes with their size in nodes.
    anchors: Vec<(usize, Node, usize)>,
    /// Nodes aliases may still copy: a few bytes of `*a` naming an anchor
    /// of `*b`s naming … would otherwise copy billions (a "billion
    /// laughs").
    alias_budget: usize,
    /// One node per document.
    roots: Vec<Node>,
    line_starts: Option<Vec<usize>>,
    /// Whether character and byte positions agree (looked at once: the
    /// text can be 15 MB, and every node asks).
    ascii: bool,
    error: Option<YamlError>,
    /// Open collections below MAX_DEPTH, skipped.
    too_deep: usize,
}

impl<'a> Builder<'a> {
    fn new(text: &'a str, file: FileId, base: Base) -> Builder<'a> {
        Builder {
            file,
            text,
            base,
            stack: Vec::new(),
            seq_scratch: Vec::new(),
            map_scratch: Vec::new(),
            anchors: Vec::new(),
            alias_budget: MIN_ALIAS_NODES.max(ALIAS_NODES_PER_BYTE * text.len()),
            roots: Vec::new(),
            line_starts: None,
            ascii: text.is_ascii(),
            error: None,
            too_deep: 0,
        }
    }

    /// The documents read, or the first error found in them.
    fn finish(self) -> Parsed {
        if let Some(err) = self.error {
            return Err(err);
        }
        let mut roots = self.roots;
        roots.retain(|n| !n.is_null());
        Ok(roots)
    }

    /// The span of what starts at marker `m`, in the whole file.
    fn span(&mut self, m: Mark, len: usize) -> Span {
        let mut span = self.fix_offset(span_at(self.file, m, len));
        if span.offset >= self.base.cut.at {
            span.offset += self.base.cut.by;
        }
        span.line += self.base.line;
        span.offset += self.base.offset;
        span
    }

    /// yaml-rust2 markers count characters; diagnostics need byte offsets.
    fn fix_offset(&mut self, mut span: Span) -> Span {
        if self.ascii {
            return span;
        }
        let starts = self.line_starts.get_or_insert_with(|| {
            std::iter::once(0)
                .chain(self.text.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        });
        let start = starts.get(span.line as usize - 1).copied().unwrap_or(0);
        let line = &self.text[start..];
        let col_bytes: usize = line
            .chars()
            .take(span.column as usize - 1)
            .map(char::len_utf8)
            .sum();
        span.offset = (start + col_bytes) as u32;
        span
    }

    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.push((anchor, node.clone(), node_count(&node)));
        }
        match self.stack.last_mut() {
            None => self.roots.push(node),
            Some(Frame::Seq(..)) => self.seq_scratch.push(node),
            Some(Frame::Map(_, _, start, pending, merged)) => match pending.take() {
                None => *pending = Some(node),
                Some(key) => {
                    let entries = &mut self.map_scratch;
                    let start = *start;
                    // `<<: *anchor` merge keys: copy the anchored mapping's
                    // entries that are not set explicitly.
                    if key.as_str() == Some("<<") {
                        let merged_entries: Vec<(Node, Node)> = match node.value {
                            Value::Map(m) => m,
                            Value::Seq(maps) => maps
                                .into_iter()
                                .filter_map(|m| match m.value {
                                    Value::Map(m) => Some(m),
                                    _ => None,
                                })
                                .flatten()
                                .collect(),
                            _ => Vec::new(),
                        };
                        for (k, v) in merged_entries {
                            if !entries[start..].iter().any(|(ek, _)| ek.value == k.value) {
                                merged.push(entries.len() - start);
                                entries.push((k, v));
                            }
                        }
                    } else if let Some(i) = entries[start..]
                        .iter()
                        .position(|(k, _)| k.value == key.value)
                    {
                        if merged.contains(&i) {
                            merged.retain(|m| *m != i);
                            entries[start + i] = (key, node);
                        } else if self.error.is_none() {
                            self.error = Some(YamlError {
                                message: format!("duplicate key `{key}` in a mapping"),
                                span: key.span,
                            });
                        }
                    } else {
                        entries.push((key, node))
                    }
                }
            },
        }
    }
}

fn scalar_value(text: String, style: TScalarStyle, tag: &Option<Tag>) -> Value {
    if style != TScalarStyle::Plain {
        return Value::Str(text);
    }
    if let Some(tag) = tag {
        if tag.suffix == "str" {
            return Value::Str(text);
        }
    }
    // Only these can start a null, a boolean or a number: the rest (most
    // names and words) are strings without asking yaml-rust2.
    let may_be_other = matches!(
        text.as_bytes().first(),
        None | Some(
            b'0'..=b'9' | b'+' | b'-' | b'.' | b'~' | b't' | b'T' | b'f' | b'F' | b'n' | b'N'
        )
    );
    if !may_be_other {
        return Value::Str(text);
    }
    match yaml_rust2::Yaml::from_str(&text) {
        yaml_rust2::Yaml::Null => Value::Null,
        yaml_rust2::Yaml::Boolean(b) => Value::Bool(b),
        yaml_rust2::Yaml::Integer(i) => Value::Int(i),
        yaml_rust2::Yaml::Real(r) => r.parse().map(Value::Float).unwrap_or(Value::Str(text)),
        _ => Value::Str(text),
    }
}

/// Where an event starts, as yaml-rust2 counts it: characters from the
/// start of the text, 1-based line, 0-based column. (The fast reader of
/// plain block YAML, `block.rs`, counts the same way.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub index: usize,
    pub line: usize,
    pub col: usize,
}

impl From<&Marker> for Mark {
    fn from(m: &Marker) -> Mark {
        Mark {
            index: m.index(),
            line: m.line(),
            col: m.col(),
        }
    }
}

impl Builder<'_> {
    /// A scalar event.
    fn scalar(
        &mut self,
        text: String,
        style: TScalarStyle,
        anchor: usize,
        tag: &Option<Tag>,
        mark: Mark,
    ) {
        let quoted = matches!(
            style,
            TScalarStyle::SingleQuoted | TScalarStyle::DoubleQuoted
        );
        let len = text.chars().count() + if quoted { 2 } else { 0 };
        let span = self.span(mark, len);
        let node = Node::new(scalar_value(text, style, tag), span);
        self.push_node(node, anchor);
    }

    /// A sequence (`seq`) or mapping starts.
    fn open(&mut self, seq: bool, anchor: usize, mark: Mark) {
        if self.stack.len() >= MAX_DEPTH {
            if self.error.is_none() {
                self.error = Some(YamlError {
                    message: format!("nesting deeper than {MAX_DEPTH} levels"),
                    span: self.span(mark, 1),
                });
            }
            self.too_deep += 1;
            return;
        }
        let span = self.span(mark, 1);
        let frame = if seq {
            Frame::Seq(span, anchor, self.seq_scratch.len())
        } else {
            Frame::Map(span, anchor, self.map_scratch.len(), None, Vec::new())
        };
        self.stack.push(frame);
    }

    /// The innermost open sequence or mapping ends.
    fn close(&mut self) {
        if self.too_deep > 0 {
            self.too_deep -= 1;
            return;
        }
        if let Some(frame) = self.stack.pop() {
            let (node, anchor) = match frame {
                Frame::Seq(span, anchor, start) => {
                    let items = self.seq_scratch.drain(start..).collect();
                    (Node::new(Value::Seq(items), span), anchor)
                }
                Frame::Map(span, anchor, start, _, _) => {
                    let entries = self.map_scratch.drain(start..).collect();
                    (Node::new(Value::Map(entries), span), anchor)
                }
            };
            self.push_node(node, anchor);
        }
    }

    fn alias(&mut self, id: usize, mark: Mark) {
        let span = self.span(mark, 1);
        let found = self.anchors.iter().rev().find(|(a, _, _)| *a == id);
        let size = found.map(|(_, _, size)| *size).unwrap_or(1);
        if size > self.alias_budget {
            if self.error.is_none() {
                self.error = Some(YamlError {
                    message: format!(
                        "aliases expand to more than {} nodes (nested aliases multiply: a \"billion laughs\")",
                        MIN_ALIAS_NODES.max(ALIAS_NODES_PER_BYTE * self.text.len())
                    ),
                    span,
                });
            }
            self.push_node(Node::new(Value::Null, span), 0);
            return;
        }
        self.alias_budget -= size;
        let node = found
            .map(|(_, n, _)| n.clone())
            .unwrap_or(Node::new(Value::Null, span));
        self.push_node(node, 0);
    }
}

impl MarkedEventReceiver for Builder<'_> {
    fn on_event(&mut self, ev: Event, marker: Marker) {
        let mark = Mark::from(&marker);
        match ev {
            Event::DocumentStart => self.anchors.clear(),
            _ if self.too_deep > 0 => match ev {
                Event::SequenceStart(..) | Event::MappingStart(..) => self.too_deep += 1,
                Event::SequenceEnd | Event::MappingEnd => self.too_deep -= 1,
                _ => {}
            },
            Event::Scalar(text, style, anchor, tag) => self.scalar(text, style, anchor, &tag, mark),
            Event::SequenceStart(anchor, _) => self.open(true, anchor, mark),
            Event::MappingStart(anchor, _) => self.open(false, anchor, mark),
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            Event::Alias(id) => self.alias(id, mark),
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod compared;
#[cfg(test)]
mod tests;

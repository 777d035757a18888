//! Running a host's state through the nmstate crate: its parse, its
//! validation and its keyfile generator are the reference. Its errors and
//! its `log` warnings become located diagnostics.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Once;

use nmstate::NetworkState;
use nodenet_model::{Code, Diagnostic, Host, Node, Scope, Span, Value};

/// A generated keyfile: file name (`<id>.nmconnection`) and content.
pub type Keyfile = (String, String);

thread_local! {
    /// nmstate warnings logged on this thread while capturing.
    static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// nmstate's `log` records: warnings are captured while a check runs on
/// this thread; outside a capture (e.g. the agent's apply) records up to
/// the `NODENET_LOG` level go to stderr with the seconds since start.
struct CaptureLogger {
    start: std::time::Instant,
}

impl log::Log for CaptureLogger {
    fn enabled(&self, meta: &log::Metadata) -> bool {
        meta.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        let captured = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
            Some(buf) => {
                if record.level() <= log::Level::Warn {
                    buf.push(record.args().to_string());
                }
                true
            }
            None => false,
        });
        // nispor logs every unknown netlink attribute at info: only from debug.
        let noisy = record.target().starts_with("nispor") && record.level() > log::Level::Warn;
        let shown = if noisy {
            log::max_level() >= log::LevelFilter::Debug
        } else {
            self.enabled(record.metadata())
        };
        if !captured && shown {
            eprintln!(
                "{:8.3} {} {}: {}",
                self.start.elapsed().as_secs_f64(),
                record.level(),
                record.target(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}

static INSTALL: Once = Once::new();

/// Routes the `log` crate to the per-thread capture (once per process).
pub fn install_logger() {
    INSTALL.call_once(|| {
        let logger = Box::leak(Box::new(CaptureLogger {
            start: std::time::Instant::now(),
        }));
        if log::set_logger(logger).is_ok() {
            let level = match std::env::var("NODENET_LOG")
                .unwrap_or_default()
                .to_ascii_lowercase()
                .as_str()
            {
                "info" => log::LevelFilter::Info,
                "debug" => log::LevelFilter::Debug,
                "trace" => log::LevelFilter::Trace,
                _ => log::LevelFilter::Warn,
            };
            log::set_max_level(level);
        }
    });
}

fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    install_logger();
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let out = f();
    let logs = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (out, logs)
}

/// What nmstate made of one host.
pub struct Outcome {
    pub keyfiles: Option<Vec<Keyfile>>,
    /// The state the keyfiles were generated from, when it is not the
    /// host's network as written (copy-mac-from pinned to MACs). Kept only
    /// then: a 10,000-host fleet would otherwise hold every state twice.
    pub pinned_state: Option<serde_json::Value>,
    /// Keys nmstate refused to read, each found where it is.
    pub misplaced: Vec<crate::misplaced::Misplaced>,
}

fn has_copy_mac(network: &Node) -> bool {
    network
        .get("interfaces")
        .and_then(Node::as_seq)
        .is_some_and(|l| l.iter().any(|i| i.get("copy-mac-from").is_some()))
}

/// Parses and generates keyfiles for one host; every nmstate complaint is
/// pushed to `out` at the best location found.
pub fn evaluate(host: &Host, network: &Node, out: &mut Vec<Diagnostic>) -> Outcome {
    let Pinned {
        judged,
        written,
        stand_in,
    } = pin(host, network);
    outcome(host, network, written, stand_in, judge_cached(&judged), out)
}

/// A host's state with `copy-mac-from` pinned to MACs, which nmstate's
/// gen_conf cannot read from a node offline.
pub struct Pinned {
    /// What nmstate judges: pinned to the MACs the inventory knows, and to
    /// [`STAND_IN_MAC`] where the state creates the interface copied from.
    pub judged: serde_json::Value,
    /// What render writes when it is not the state as given: pinned to
    /// the MACs the inventory knows only.
    pub written: Option<serde_json::Value>,
    /// A stand-in was used: nmstate's keyfiles are not the node's.
    pub stand_in: bool,
}

pub fn pin(host: &Host, network: &Node) -> Pinned {
    match pinned_nodes(host, network) {
        None => Pinned {
            judged: network.to_json(),
            written: None,
            stand_in: false,
        },
        Some((known, judged, stand_in)) => Pinned {
            judged: judged.to_json(),
            written: Some(known.to_json()),
            stand_in,
        },
    }
}

/// With `copy-mac-from`: the state pinned to the MACs the inventory
/// knows, the state nmstate judges (stand-ins where it knows none) and
/// whether a stand-in was used. `None` without (most hosts).
fn pinned_nodes(host: &Host, network: &Node) -> Option<(Node, Node, bool)> {
    if !has_copy_mac(network) {
        return None;
    }
    let (known, _) = resolve_copy_mac(host, network, false);
    let (judged, stand_in) = match has_copy_mac(&known) {
        true => resolve_copy_mac(host, &known, true),
        false => (known.clone(), false),
    };
    Some((known, judged, stand_in))
}

/// What nmstate judges of a host's state, as loaded (no JSON made): the
/// state itself without `copy-mac-from` (most hosts), else pinned as
/// [`Pinned::judged`] says.
pub fn judged_node<'a>(host: &Host, network: &'a Node) -> Cow<'a, Node> {
    match pinned_nodes(host, network) {
        None => Cow::Borrowed(network),
        Some((_, judged, _)) => Cow::Owned(judged),
    }
}

/// What [`pin`] gives besides the state nmstate judges: the state
/// written with the MACs the inventory knows, and whether a stand-in was
/// used. Without `copy-mac-from` (most hosts) nothing is made.
pub fn pin_written(host: &Host, network: &Node) -> (Option<serde_json::Value>, bool) {
    match pinned_nodes(host, network) {
        None => (None, false),
        Some((known, _, stand_in)) => (Some(known.to_json()), stand_in),
    }
}

/// Turns nmstate's verdict on a host's state into its keyfiles and
/// located diagnostics.
/// (`written`, `stand_in`: of the host's [`Pinned`] state; keyfiles made
/// with a stand-in MAC are not given.)
pub fn outcome(
    host: &Host,
    network: &Node,
    written: Option<serde_json::Value>,
    stand_in: bool,
    judged: Judged,
    out: &mut Vec<Diagnostic>,
) -> Outcome {
    let Judged {
        result,
        parsed,
        logs,
    } = judged;
    let partial = host.scope() == Scope::Partial;
    let failure = result.as_ref().err().cloned().unwrap_or_default();
    for msg in logs {
        // nmstate logs the error it then returns: said once.
        if !failure.is_empty() && msg.contains(&failure) {
            continue;
        }
        // The host checks say what becomes of a port the state does not
        // define; in a change, an interface without `type` is the node's.
        if msg.starts_with("Assuming undefined port")
            || partial && msg.starts_with("Setting unknown type interface")
        {
            continue;
        }
        let span = locate(&msg, network);
        out.push(
            Diagnostic::warning(Code::NmstateWarning, format!("nmstate: {msg}"))
                .at(span)
                .host(host.name.value.clone()),
        );
    }
    // Keys nmstate cannot read, each at its line (its parser stops at
    // the first thing it cannot read, and that may be their consequence).
    let refused = match &result {
        Err(msg) if !parsed => crate::misplaced::diagnostics(network, msg, &host.name.value),
        _ => (Vec::new(), Vec::new()),
    };
    match result {
        Ok(keyfiles) => Outcome {
            keyfiles: (!stand_in).then_some(keyfiles),
            pinned_state: written,
            misplaced: Vec::new(),
        },
        Err(msg) if partial && parsed && needs_the_node(&msg) => {
            out.push(
                Diagnostic::warning(
                    Code::NmstateWarning,
                    format!(
                        "nmstate cannot write keyfiles for this change on its own ({}): applied on a node, it takes that from the node's current state",
                        strip_location(&msg)
                    ),
                )
                .at(locate(&msg, network))
                .host(host.name.value.clone()),
            );
            Outcome {
                keyfiles: None,
                pinned_state: None,
                misplaced: Vec::new(),
            }
        }
        Err(_) if !refused.0.is_empty() => {
            let (diags, misplaced) = refused;
            out.extend(diags);
            Outcome {
                keyfiles: None,
                pinned_state: None,
                misplaced,
            }
        }
        Err(msg) => {
            let span = locate(&msg, network);
            let what = if parsed {
                "nmstate rejected the state"
            } else {
                "nmstate cannot read the state"
            };
            let code = if !parsed && msg.starts_with("unknown field") {
                Code::UnknownField
            } else {
                Code::NmstateError
            };
            out.push(
                Diagnostic::error(code, format!("{what}: {}", strip_location(&msg)))
                    .at(span)
                    .host(host.name.value.clone()),
            );
            Outcome {
                keyfiles: None,
                pinned_state: None,
                misplaced: Vec::new(),
            }
        }
    }
}

/// gen_conf errors about what a partial state leaves to the node: an
/// interface it routes through or puts name servers on, a MAC it copies.
fn needs_the_node(msg: &str) -> bool {
    msg.contains("next hop interface") && msg.contains("not found")
        || msg.contains("Failed to find suitable(IP enabled) interface for DNS")
        || msg.contains("Failed to find mac address of interface")
        || msg.contains("is mandatory for new")
}

/// nmstate's verdict on one state.
#[derive(Clone)]
pub struct Judged {
    /// Keyfiles in nmstate's own order (which `nodenet gc` prints
    /// unchanged), or its error message.
    pub result: Result<Vec<Keyfile>, String>,
    /// Whether the state deserialised (the error came from gen_conf).
    pub parsed: bool,
    pub logs: Vec<String>,
}

pub fn judge(json: &serde_json::Value) -> Judged {
    let ((result, parsed), logs) =
        capture(
            || match serde_json::from_value::<NetworkState>(json.clone()) {
                Err(e) => (Err(e.to_string()), false),
                Ok(state) => (
                    state
                        .gen_conf()
                        .map(|mut confs| confs.remove("NetworkManager").unwrap_or_default())
                        .map_err(|e| e.msg().to_string()),
                    true,
                ),
            },
        );
    Judged {
        result,
        parsed,
        logs,
    }
}

/// gen_conf is a pure function of the state, and hosts of one template
/// with DHCP have identical states: judge each distinct state once.
pub fn judge_cached(json: &serde_json::Value) -> Judged {
    use std::collections::HashMap;
    use std::hash::{Hash, Hasher};
    use std::sync::{Mutex, OnceLock};
    type Cache = HashMap<u64, (serde_json::Value, Judged)>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    fn feed(v: &serde_json::Value, h: &mut std::collections::hash_map::DefaultHasher) {
        use serde_json::Value as J;
        match v {
            J::Null => 0u8.hash(h),
            J::Bool(b) => b.hash(h),
            J::Number(n) => n.to_string().hash(h),
            J::String(s) => s.hash(h),
            J::Array(a) => {
                a.len().hash(h);
                a.iter().for_each(|x| feed(x, h));
            }
            J::Object(o) => {
                o.len().hash(h);
                for (k, x) in o {
                    k.hash(h);
                    feed(x, h);
                }
            }
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    feed(json, &mut hasher);
    let key = hasher.finish();
    let cache = CACHE.get_or_init(Default::default);
    if let Some((seen, hit)) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        if seen == json {
            return hit.clone();
        }
    }
    let judged = judge(json);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    // Bounded: a fleet of all-distinct states pays only the hash.
    if map.len() < 1024 {
        map.insert(key, (json.clone(), judged.clone()));
    }
    judged
}

/// serde_yaml-style " at line 2 column 1" suffixes point nowhere useful.
fn strip_location(msg: &str) -> &str {
    match msg.find(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

/// The node an nmstate message is about: a backquoted field or value, or
/// an interface it names; else the network block itself.
pub fn locate(msg: &str, network: &Node) -> Span {
    let scalar = |text: &str| {
        network
            .find(&mut |n| {
                !matches!(n.value, Value::Map(_) | Value::Seq(_))
                    && n.scalar_text().as_deref() == Some(text)
            })
            .map(|n| n.span)
    };
    // serde: "unknown field `x`", "invalid value: integer `5000`".
    let backquoted: Vec<&str> = msg.split('`').skip(1).step_by(2).collect();
    if let Some(field) = backquoted.first() {
        if msg.starts_with("unknown field") {
            if let Some(n) = find_key(network, field) {
                return n.span;
            }
        }
        if let Some(span) = scalar(field) {
            return span;
        }
    }
    // "Port eth1 is overbooked …", "Assuming undefined port eno3 …": the
    // port reference (the last one: the second controller that took it).
    let words: Vec<&str> = msg
        .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
        .filter(|w| !w.is_empty())
        .collect();
    if let Some(i) = words.iter().position(|w| w.eq_ignore_ascii_case("port")) {
        if let Some(port) = words.get(i + 1) {
            if let Some(span) = last_port_reference(network, port.trim_matches(['\'', '"'])) {
                return span;
            }
        }
    }
    // nmstate quotes values with '…' or "…"; serde with "…".
    for q in msg
        .split('\'')
        .skip(1)
        .step_by(2)
        .chain(msg.split('"').skip(1).step_by(2))
    {
        if let Some(span) = scalar(q) {
            return span;
        }
    }
    // An address or network written in the message (a route's destination).
    for w in &words {
        let w = w.trim_matches(['\'', '"', '.', '(', ')']);
        if w.contains(['.', '/']) && w.parse::<ipnet::IpNet>().is_ok()
            || w.parse::<std::net::IpAddr>().is_ok()
        {
            if let Some(span) = scalar(w) {
                return span;
            }
        }
    }
    // The first interface the message names.
    if let Some(list) = network.get("interfaces").and_then(Node::as_seq) {
        let named = list.iter().filter_map(|iface| {
            let name = iface.get("name")?;
            let n = name.scalar_text()?;
            let at = first_mention(msg, &n)?;
            Some((at, name.span))
        });
        if let Some((_, span)) = named.min_by_key(|(at, _)| *at) {
            return span;
        }
    }
    // A top-level section named in the message (`hostname`, `routes`...).
    if let Some(entries) = network.as_map() {
        for (k, _) in entries {
            if k.as_str()
                .is_some_and(|k| mentions(&msg.to_ascii_lowercase(), k))
            {
                return k.span;
            }
        }
    }
    network.span
}

/// The last place `port` is listed as a port (not its own `name:`).
fn last_port_reference(network: &Node, port: &str) -> Option<Span> {
    let mut found = None;
    let ifaces = network.get("interfaces").and_then(Node::as_seq)?;
    for iface in ifaces {
        for section in ["link-aggregation", "bridge"] {
            if let Some(sec) = iface.get(section) {
                sec.find(&mut |n| {
                    if n.scalar_text().as_deref() == Some(port)
                        && !matches!(n.value, Value::Map(_) | Value::Seq(_))
                    {
                        found = Some(n.span);
                    }
                    false
                });
            }
        }
    }
    found
}

/// Whether `msg` names `word` as a whole token (bond0 is not in bond0.110).
fn mentions(msg: &str, word: &str) -> bool {
    first_mention(msg, word).is_some()
}

/// Byte position of the first whole-token occurrence of `word` in `msg`.
fn first_mention(msg: &str, word: &str) -> Option<usize> {
    if word.is_empty() {
        return None;
    }
    msg.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = msg[..i].chars().next_back();
        let rest = &msg[i + word.len()..];
        // A full stop ends a sentence; `bond0.110` is another name.
        let after = match rest.strip_prefix('.') {
            Some(r) if r.is_empty() || r.starts_with(char::is_whitespace) => None,
            _ => rest.chars().next(),
        };
        let sep = |c: Option<char>| {
            c.is_none_or(|c| !(c.is_alphanumeric() || c == '.' || c == '-' || c == '_'))
        };
        sep(before) && sep(after)
    })
}

fn find_key<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(k, _)| k)
            .or_else(|| entries.iter().find_map(|(_, v)| find_key(v, key))),
        Value::Seq(items) => items.iter().find_map(|i| find_key(i, key)),
        _ => None,
    }
}

/// A MAC nmstate is given, for judging only, where `copy-mac-from` names
/// an interface the state itself creates (a bond, a bridge: its MAC is
/// the one the node gives it when it comes up): the keyfiles made with it
/// are never written anywhere.
const STAND_IN_MAC: &str = "02:00:00:00:00:01";

/// `copy-mac-from` needs the live MAC, which gen_conf offline cannot see
/// ("Failed to find mac address"); the inventory knows it, so pin it.
/// With `stand_in`, an interface the state creates with ports gets
/// [`STAND_IN_MAC`]; the flag returned says one was used.
fn resolve_copy_mac(host: &Host, network: &Node, stand_in: bool) -> (Node, bool) {
    let mut n = network.clone();
    let mut used = false;
    let Some(Value::Seq(ifaces)) = n.get_mut("interfaces").map(|i| &mut i.value) else {
        return (n, used);
    };
    let macs: Vec<(String, String)> = ifaces
        .iter()
        .filter_map(|i| {
            Some((
                i.get("name")?.scalar_text()?,
                i.get("mac-address")?.scalar_text()?,
            ))
        })
        .collect();
    let created: Vec<String> = crate::network::Network::read(network)
        .ifaces
        .iter()
        .filter(|i| !i.ports.is_empty())
        .map(|i| i.name.clone())
        .collect();
    for iface in ifaces.iter_mut() {
        let Value::Map(entries) = &mut iface.value else {
            continue;
        };
        let Some(pos) = entries
            .iter()
            .position(|(k, _)| k.as_str() == Some("copy-mac-from"))
        else {
            continue;
        };
        let src = entries[pos].1.scalar_text().unwrap_or_default();
        let mac = host
            .mac_of(&src)
            .map(|m| m.value.clone())
            .or_else(|| {
                macs.iter()
                    .find(|(name, _)| *name == src)
                    .map(|(_, m)| m.clone())
            })
            .or_else(|| {
                (stand_in && created.contains(&src)).then(|| {
                    used = true;
                    STAND_IN_MAC.to_string()
                })
            });
        if let Some(mac) = mac {
            let span = entries[pos].1.span;
            entries.remove(pos);
            if !entries
                .iter()
                .any(|(k, _)| k.as_str() == Some("mac-address"))
            {
                entries.push((
                    Node::new(Value::Str("mac-address".into()), span),
                    Node::new(Value::Str(mac.to_ascii_uppercase()), span),
                ));
            }
        }
    }
    (n, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_whole_names_only() {
        assert!(mentions("Interface bond0 has no port", "bond0"));
        assert!(mentions("No port for bond0.", "bond0"));
        assert!(!mentions("Interface bond0.110 has no port", "bond0"));
    }
}

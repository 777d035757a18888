//! `${...}` placeholders and IP pools: how one template becomes 100 hosts.
//!
//! Expansion is deterministic: hosts expand in file order, each pool hands
//! out its addresses in ascending order, skipping every address written
//! explicitly anywhere in the inventory (host `ips`, gateways, DNS, VIPs).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use crate::diag::{Code, Diagnostic};
use crate::inventory::Located;
use crate::yaml::{Node, Span, Value};

/// An address pool.
#[derive(Clone, Debug)]
pub struct Pool {
    pub name: String,
    pub span: Span,
    pub first: IpAddr,
    pub last: IpAddr,
    pub prefix: u8,
    pub gateway: Option<IpAddr>,
    pub dns: Vec<IpAddr>,
}

/// Hands out pool addresses in order; one instance per inventory.
#[derive(Clone, Debug, Default)]
pub struct PoolAllocator {
    pools: BTreeMap<String, Pool>,
    next: BTreeMap<String, u128>,
    reserved: BTreeSet<IpAddr>,
    exhausted_reported: BTreeSet<String>,
    /// Pools written in the inventory that could not be read (reported
    /// there).
    broken: BTreeSet<String>,
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u32::from(v4) as u128,
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_u128(n: u128, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(n.into())
    } else {
        IpAddr::V4((n as u32).into())
    }
}

impl PoolAllocator {
    pub fn new(pools: Vec<Pool>) -> Self {
        let mut a = PoolAllocator::default();
        for p in pools {
            a.next.insert(p.name.clone(), to_u128(p.first));
            a.reserved.extend(p.gateway);
            a.reserved.extend(p.dns.iter().copied());
            a.pools.insert(p.name.clone(), p);
        }
        a
    }

    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.get(name)
    }

    pub fn reserve(&mut self, ip: IpAddr) {
        self.reserved.insert(ip);
    }

    /// A pool the inventory names but that could not be read: placeholders
    /// naming it stay unexpanded without a finding of their own.
    pub fn mark_broken(&mut self, name: String) {
        self.broken.insert(name);
    }

    /// Next free address of `pool`; `None` when the pool is exhausted
    /// (reported once, at the pool).
    pub fn allocate(&mut self, pool: &str, diags: &mut Vec<Diagnostic>) -> Option<IpAddr> {
        let p = self.pools.get(pool)?;
        let v6 = p.first.is_ipv6();
        let last = to_u128(p.last);
        let next = self.next.get_mut(pool)?;
        while *next <= last {
            let ip = from_u128(*next, v6);
            *next += 1;
            if self.reserved.insert(ip) {
                return Some(ip);
            }
        }
        if self.exhausted_reported.insert(pool.to_string()) {
            diags.push(
                Diagnostic::error(
                    Code::PoolExhausted,
                    format!(
                        "pool `{pool}` ({} - {}) has no free address left",
                        p.first, p.last
                    ),
                )
                .at(p.span)
                .help("widen the range or give some hosts explicit `ips`"),
            );
        }
        None
    }
}

/// Where `${ip.P}` placeholders draw their addresses from.
pub trait Draw {
    fn pool(&self, name: &str) -> Option<&Pool>;
    fn allocate(&mut self, pool: &str, diags: &mut Vec<Diagnostic>) -> Option<IpAddr>;
    /// Whether `name` is a pool the inventory writes but that could not be
    /// read (its finding is already made).
    fn broken(&self, name: &str) -> bool;
}

impl Draw for PoolAllocator {
    fn pool(&self, name: &str) -> Option<&Pool> {
        PoolAllocator::pool(self, name)
    }

    fn broken(&self, name: &str) -> bool {
        self.broken.contains(name)
    }

    fn allocate(&mut self, pool: &str, diags: &mut Vec<Diagnostic>) -> Option<IpAddr> {
        PoolAllocator::allocate(self, pool, diags)
    }
}

/// Draws from the allocator and notes which pools were drawn from, in
/// order: how one host of a `count` entry draws, which every other host
/// of it repeats.
pub struct Recording<'a> {
    pub inner: &'a mut PoolAllocator,
    pub drawn: Vec<String>,
}

impl Draw for Recording<'_> {
    fn pool(&self, name: &str) -> Option<&Pool> {
        self.inner.pool(name)
    }

    fn broken(&self, name: &str) -> bool {
        self.inner.broken(name)
    }

    fn allocate(&mut self, pool: &str, diags: &mut Vec<Diagnostic>) -> Option<IpAddr> {
        self.drawn.push(pool.to_string());
        self.inner.allocate(pool, diags)
    }
}

/// Addresses drawn in advance for one host, handed out in the order they
/// were drawn; a host that asks for another pool than the one next in
/// line has `diverged` (and must be expanded again, drawing live).
pub struct Predrawn<'a> {
    pub pools: &'a PoolAllocator,
    pub queue: &'a [(String, IpAddr)],
    pub next: usize,
    pub diverged: bool,
}

impl Draw for Predrawn<'_> {
    fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.pool(name)
    }

    fn broken(&self, name: &str) -> bool {
        self.pools.broken(name)
    }

    fn allocate(&mut self, pool: &str, _: &mut Vec<Diagnostic>) -> Option<IpAddr> {
        match self.queue.get(self.next) {
            Some((p, ip)) if p == pool => {
                self.next += 1;
                Some(*ip)
            }
            _ => {
                self.diverged = true;
                None
            }
        }
    }
}

/// Values placeholders can name for one host.
#[derive(Debug, Default)]
pub struct Vars {
    pub values: BTreeMap<String, Value>,
    /// Pool addresses this host already drew (the same `${ip.P}` twice in
    /// one host is one address).
    pub pool_ips: BTreeMap<String, IpAddr>,
    /// Where a host pins its address of a pool (`ips: {P: ADDRESS}`): a
    /// value that is that address alone is located there, at its cause,
    /// not at the template line every host shares.
    pub pinned: BTreeMap<String, Span>,
    /// Values left as written because a placeholder in them could not be
    /// expanded (reported where it failed): what is said about them is a
    /// consequence of that report.
    pub unresolved: Vec<Span>,
}

impl Vars {
    pub fn set(&mut self, key: impl Into<String>, v: Value) {
        self.values.insert(key.into(), v);
    }
}

/// Everything substitution needs besides the host's own values.
pub struct Expander<'a> {
    pub pools: &'a mut dyn Draw,
    pub diags: &'a mut Vec<Diagnostic>,
    pub host: String,
}

impl Expander<'_> {
    /// Replaces placeholders in every string of `node` (keys included). A
    /// string that is a single placeholder takes the value's own type, so
    /// `prefix-length: ${prefix.baremetal}` stays an integer and
    /// `server: ${dns.baremetal}` is the pool's list; a list item that is a
    /// single placeholder of a list is replaced by its items, so
    /// `server: ["${dns.baremetal}", 8.8.8.8]` is one flat list.
    ///
    /// The expanded copy is made in one walk: a template's tree is not
    /// cloned first and then rewritten (for 10,000 hosts of one template
    /// that clone was about 40 % of expanding them).
    pub fn expanded(&mut self, node: &Node, vars: &mut Vars) -> Node {
        let span = node.span;
        let value = match &node.value {
            Value::Str(s) if has_placeholder(s) => match self.expand_str(s, span, vars) {
                Some((v, at)) => {
                    return Node {
                        span: at.unwrap_or(span),
                        value: v,
                    }
                }
                None => {
                    vars.unresolved.push(span);
                    node.value.clone()
                }
            },
            Value::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let was_string = matches!(item.value, Value::Str(_));
                    match self.expanded(item, vars) {
                        Node {
                            value: Value::Seq(inner),
                            ..
                        } if was_string => out.extend(inner),
                        item => out.push(item),
                    }
                }
                Value::Seq(out)
            }
            Value::Map(entries) => Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| (self.expanded(k, vars), self.expanded(v, vars)))
                    .collect(),
            ),
            other => other.clone(),
        };
        Node { span, value }
    }

    pub fn expand_string(&mut self, s: &Located<String>, vars: &mut Vars) -> Located<String> {
        if !has_placeholder(&s.value) {
            return s.clone();
        }
        let value = match self.expand_str(&s.value, s.span, vars) {
            Some((v, _)) => Node::new(v, s.span).scalar_text().unwrap_or_default(),
            None => {
                vars.unresolved.push(s.span);
                s.value.clone()
            }
        };
        Located::new(value, s.span)
    }

    /// The value of `s` with its placeholders replaced, and, when it is one
    /// placeholder naming an address the host pins with `ips:`, where that
    /// address was written.
    fn expand_str(
        &mut self,
        s: &str,
        span: Span,
        vars: &mut Vars,
    ) -> Option<(Value, Option<Span>)> {
        let mut out = String::new();
        let mut rest = s;
        let mut whole: Option<Value> = None;
        let mut pinned_at = None;
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start..].find('}') else {
                break;
            };
            out.push_str(&rest[..start]);
            let expr = &rest[start + 2..start + len];
            let value = self.lookup(expr, span, vars)?;
            if start == 0 && start + len + 1 == rest.len() && out.is_empty() {
                whole = Some(value.clone());
                pinned_at = expr
                    .trim()
                    .strip_prefix("ip.")
                    .and_then(|pool| vars.pinned.get(pool.trim()))
                    .copied();
            }
            let text = match value {
                // Inside a longer string a list can stand only for its one item.
                Value::Seq(items) if whole.is_none() => match items.as_slice() {
                    [one] => one.scalar_text().unwrap_or_default(),
                    _ => {
                        self.report(
                            Diagnostic::error(
                                Code::TemplateVariable,
                                format!(
                                    "`${{{expr}}}` is a list of {} values inside a longer string",
                                    items.len()
                                ),
                            )
                            .at(span)
                            .help(format!(
                                "make the placeholder the whole value, or pick one: `${{{}[0]}}`",
                                expr.trim()
                            )),
                        );
                        return None;
                    }
                },
                v => Node::new(v, span).scalar_text().unwrap_or_default(),
            };
            out.push_str(&text);
            rest = &rest[start + len + 1..];
        }
        out.push_str(rest);
        match whole {
            Some(v) => Some((v, pinned_at)),
            None => Some((Value::Str(out), None)),
        }
    }

    fn lookup(&mut self, expr: &str, span: Span, vars: &mut Vars) -> Option<Value> {
        let (name, format) = match expr.split_once(':') {
            Some((n, f)) => (n.trim(), Some(f.trim())),
            None => (expr.trim(), None),
        };
        let value = if let Some(pool) = name.strip_prefix("ip.") {
            self.pool_ip(pool, span, vars)
                .map(|ip| Value::Str(ip.to_string()))
        } else if let Some(pool) = name.strip_prefix("prefix.") {
            self.pool_field(pool, span, |p| Some(Value::Int(p.prefix as i64)))
        } else if let Some(pool) = name.strip_prefix("gateway.") {
            self.pool_field(pool, span, |p| p.gateway.map(|g| Value::Str(g.to_string())))
        } else if let Some(pool) = name.strip_prefix("dns.") {
            self.dns(pool, span)
        } else {
            match vars.values.get(name) {
                // A variable whose own placeholder failed (reported at the
                // variable) leaves this value unexpanded too, silently.
                Some(Value::Str(s)) if has_placeholder(s) => return None,
                v => v.cloned(),
            }
        };
        let Some(value) = value else {
            if !name.starts_with("ip.")
                && !name.starts_with("prefix.")
                && !name.starts_with("gateway.")
                && !name.starts_with("dns.")
            {
                let known: Vec<&str> = vars.values.keys().map(String::as_str).collect();
                self.report(
                    Diagnostic::error(
                        Code::TemplateVariable,
                        format!("unknown placeholder `${{{name}}}`"),
                    )
                    .at(span)
                    .help(format!(
                        "known here: {}, ip.<pool>, prefix.<pool>, gateway.<pool>, dns.<pool>, dns.<pool>[N]",
                        known.join(", ")
                    )),
                );
            }
            return None;
        };
        match format {
            None => Some(value),
            Some(f) => match value {
                Value::Int(i) => match format_int(i, f) {
                    Ok(text) => Some(Value::Str(text)),
                    Err(e) => {
                        self.report(
                            Diagnostic::error(Code::TemplateVariable, e.message(i, f, expr))
                                .at(span),
                        );
                        None
                    }
                },
                other => Some(other),
            },
        }
    }

    /// `dns.P`: every name server of pool P, as a list; `dns.P[N]`: the
    /// N-th (from 0).
    fn dns(&mut self, pool: &str, span: Span) -> Option<Value> {
        let (pool, index) = match pool.strip_suffix(']').and_then(|p| p.split_once('[')) {
            Some((p, i)) => (p, Some(i)),
            None => (pool, None),
        };
        let index = match index.map(|i| i.trim().parse::<usize>()) {
            None => None,
            Some(Ok(i)) => Some(i),
            Some(Err(_)) => {
                self.report(
                    Diagnostic::error(
                        Code::TemplateVariable,
                        format!("`${{dns.{pool}[…]}}` needs a number: `[0]` is the first server"),
                    )
                    .at(span),
                );
                return None;
            }
        };
        let servers = self.pool_field(pool, span, |p| {
            (!p.dns.is_empty()).then(|| {
                Value::Seq(
                    p.dns
                        .iter()
                        .map(|ip| Node::new(Value::Str(ip.to_string()), span))
                        .collect(),
                )
            })
        })?;
        let servers = match servers {
            Value::Seq(s) => s,
            _ => return None,
        };
        match index {
            None => Some(Value::Seq(servers)),
            Some(i) => match servers.get(i) {
                Some(s) => Some(s.value.clone()),
                None => {
                    self.report(
                        Diagnostic::error(
                            Code::TemplateVariable,
                            format!(
                                "pool `{pool}` has {} DNS server(s): `[{i}]` is past the last (`[{}]`)",
                                servers.len(),
                                servers.len() - 1
                            ),
                        )
                        .at(span),
                    );
                    None
                }
            },
        }
    }

    fn report(&mut self, d: Diagnostic) {
        self.diags.push(d.host(self.host.clone()));
    }

    fn pool_field(
        &mut self,
        pool: &str,
        span: Span,
        f: impl Fn(&Pool) -> Option<Value>,
    ) -> Option<Value> {
        match self.pools.pool(pool) {
            None => {
                self.unknown_pool(pool, span);
                None
            }
            Some(p) => {
                let v = f(p);
                if v.is_none() {
                    self.report(
                        Diagnostic::error(
                            Code::TemplateVariable,
                            format!("pool `{pool}` defines no value for this placeholder"),
                        )
                        .at(span),
                    );
                }
                v
            }
        }
    }

    fn unknown_pool(&mut self, pool: &str, span: Span) {
        if self.pools.broken(pool) {
            return;
        }
        self.report(
            Diagnostic::error(Code::TemplateVariable, format!("no IP pool named `{pool}`"))
                .at(span),
        );
    }

    fn pool_ip(&mut self, pool: &str, span: Span, vars: &mut Vars) -> Option<IpAddr> {
        if let Some(ip) = vars.pool_ips.get(pool) {
            return Some(*ip);
        }
        if self.pools.pool(pool).is_none() {
            self.unknown_pool(pool, span);
            return None;
        }
        let ip = self.pools.allocate(pool, self.diags)?;
        vars.pool_ips.insert(pool.to_string(), ip);
        Some(ip)
    }
}

/// The `i`-th network of `net`'s size from `net` (its address moved by as
/// many whole networks), or none past the end of the address space.
fn nth_network(net: ipnet::IpNet, i: i64) -> Option<(std::net::IpAddr, ipnet::IpNet)> {
    use std::net::IpAddr;
    let i = u128::try_from(i).ok()?;
    let ip = match net {
        ipnet::IpNet::V4(n) => {
            let step = 1u128 << (32 - n.prefix_len());
            let v = u128::from(u32::from(n.addr())).checked_add(i.checked_mul(step)?)?;
            IpAddr::V4(u32::try_from(v).ok()?.into())
        }
        ipnet::IpNet::V6(n) => {
            let step = 1u128.checked_shl(128 - u32::from(n.prefix_len()))?;
            let v = u128::from(n.addr()).checked_add(i.checked_mul(step)?)?;
            IpAddr::V6(v.into())
        }
    };
    let moved = ipnet::IpNet::new(ip, net.prefix_len()).ok()?;
    Some((ip, moved))
}

/// The widest padding `${index:0N}` takes.
const MAX_WIDTH: usize = 32;

/// Why `${index:F}` has no text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FormatError {
    /// F is no format.
    Bad,
    /// The number runs past the last value F counts in (the text names
    /// it).
    Past(String),
}

impl FormatError {
    /// The diagnostic's message for `${expr}` (whose format is `f`) at
    /// number `i`.
    pub(crate) fn message(&self, i: i64, f: &str, expr: &str) -> String {
        match self {
            FormatError::Bad => format!("bad format `{f}` in `${{{expr}}}` (use e.g. `03`, `02x`, `mac 52:54:00:00:00:00`, `net 10.0.0.0/24` or `ip 10.0.0.10/24`)"),
            FormatError::Past(what) => format!("`${{{expr}}}` runs past {what} at index {i}"),
        }
    }
}

/// `03` → zero-padded decimal width 3; `02x` → zero-padded lowercase hex;
/// `mac 52:54:00:00:00:00` → that MAC plus the number (hosts beyond 255);
/// `net 10.0.0.0/24` → the number-th network of that size from there
/// (`10.0.3.0/24` for 3); `ip 10.0.0.10/24` → the same address in it
/// (`10.0.3.10`): a site's or a rack's own subnet.
pub(crate) fn format_int(i: i64, f: &str) -> Result<String, FormatError> {
    let net_or_ip = f
        .strip_prefix("net ")
        .map(|b| (b, true))
        .or_else(|| f.strip_prefix("ip ").map(|b| (b, false)));
    if let Some((base, whole)) = net_or_ip {
        let net: ipnet::IpNet = base.trim().parse().map_err(|_| FormatError::Bad)?;
        let (ip, moved) = nth_network(net, i)
            .ok_or_else(|| FormatError::Past(format!("the end of the address space from {net}")))?;
        return Ok(if whole {
            format!("{ip}/{}", moved.prefix_len())
        } else {
            ip.to_string()
        });
    }
    if let Some(base) = f.strip_prefix("mac ") {
        let base = base.trim();
        if !crate::fields::is_mac(base) {
            return Err(FormatError::Bad);
        }
        let past = || FormatError::Past("the last MAC address (ff:ff:ff:ff:ff:ff)".into());
        let n = u64::from_str_radix(&base.replace(':', ""), 16)
            .map_err(|_| FormatError::Bad)?
            .checked_add(u64::try_from(i).map_err(|_| past())?)
            .filter(|n| *n < 1 << 48)
            .ok_or_else(past)?;
        let b = n.to_be_bytes();
        return Ok(format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[2], b[3], b[4], b[5], b[6], b[7]
        ));
    }
    let (digits, hex) = match f.strip_suffix('x') {
        Some(d) => (d, true),
        None => (f, false),
    };
    // A padding wider than any name or MAC part needs is a typo (and
    // Rust's formatter panics past 65,535).
    let width: usize = if digits.is_empty() {
        0
    } else {
        digits
            .parse()
            .ok()
            .filter(|w| *w <= MAX_WIDTH)
            .ok_or(FormatError::Bad)?
    };
    Ok(if hex {
        format!("{i:0width$x}")
    } else {
        format!("{i:0width$}")
    })
}

/// Whether `s` holds a `${`: asked of every key and value of a template
/// for each of 10,000 hosts, most of them short and without a `$`.
fn has_placeholder(s: &str) -> bool {
    memchr::memchr_iter(b'$', s.as_bytes()).any(|at| s.as_bytes().get(at + 1) == Some(&b'{'))
}

/// Whether expanding left a whole placeholder (`${…}`) in `s`: the
/// expansion has said why (an unknown name, a bad format, a number past
/// the last MAC), so what reads the value says nothing more of it.
pub(crate) fn left_unexpanded(s: &str) -> bool {
    s.find("${").is_some_and(|at| s[at..].contains('}'))
}

#[cfg(test)]
mod tests;

//! The on-node half: the current state as NMState, and a rebootless
//! apply guarded by a NetworkManager checkpoint.
//!
//! nmstate's own apply does the NetworkManager work over D-Bus: it creates
//! a checkpoint with a rollback timeout, writes and activates the
//! profiles, and verifies the result against the desired state. With
//! `commit` off it leaves the checkpoint open, so nodenet runs its probes
//! first and only then destroys the checkpoint (commit) or rolls it back.
//! If nodenet dies in between, NetworkManager rolls back by itself when
//! the checkpoint times out. A change that only adds virtual interfaces
//! skips nmstate's apply ([`direct`]); the checkpoint is the same.

use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nmstate::NetworkState;

mod dbus;
mod direct;
pub mod service;

use dbus::GlobalDns;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("NetworkManager/nmstate: {0}")]
    Nmstate(String),
    #[error("probe `{probe}` failed after the change ({why}); the previous state was restored in {restore_seconds:.2} s")]
    ProbeFailed {
        probe: String,
        why: String,
        restore_seconds: f64,
    },
    #[error("the kernel does not show the applied state after {seconds:.1} s; the previous state was restored:\n{diff}")]
    NotApplied { diff: String, seconds: f64 },
    #[error("bad probe `{0}` (use gateway, dns[:NAME], tcp:HOST:PORT, ping:ADDRESS or lldp)")]
    BadProbe(String),
    #[error("cannot reach NetworkManager over the system D-Bus (is NetworkManager running?): {0}")]
    NoNetworkManager(String),
}

impl AgentError {
    /// Stable code of the error (the `code` of `--format json` output).
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Nmstate(_) => "nmstate",
            AgentError::ProbeFailed { .. } => "probe-failed",
            AgentError::NotApplied { .. } => "not-applied",
            AgentError::BadProbe(_) => "bad-probe",
            AgentError::NoNetworkManager(_) => "network-manager-unreachable",
        }
    }

    /// Nothing was tried: the node's NetworkManager is not there (exit 2,
    /// not a refused or failed change).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, AgentError::NoNetworkManager(_))
    }
}

fn nm(e: nmstate::NmstateError) -> AgentError {
    // nmstate reports a missing bus as a "Bug" with its D-Bus error inside.
    if e.msg().contains("DbusConnectionError") {
        return AgentError::NoNetworkManager(
            e.msg()
                .trim_start_matches("DbusConnectionError: ")
                .to_string(),
        );
    }
    AgentError::Nmstate(format!("{}: {}", e.kind(), e.msg()))
}

/// Fails with [`AgentError::NoNetworkManager`] unless NetworkManager
/// answers on the system bus: said plainly before nmstate and nispor are
/// asked anything (they would log warnings and call it a bug).
pub fn require_network_manager() -> Result<(), AgentError> {
    dbus::reachable().map_err(AgentError::NoNetworkManager)
}

/// Library log records (nmstate, nispor) are shown only when `NODENET_LOG`
/// asks for them: their warnings are about their own probing (Wi-Fi
/// queries, unknown attributes) and read like nodenet's failures.
pub fn library_logs_only_if_asked() {
    if std::env::var_os("NODENET_LOG").is_none_or(|v| v.is_empty()) {
        log::set_max_level(log::LevelFilter::Off);
    }
}

/// The running state (NetworkManager profiles and kernel) as NMState.
pub fn show() -> Result<serde_json::Value, AgentError> {
    require_network_manager()?;
    let mut state = NetworkState::new();
    state.set_kernel_only(false);
    state.set_include_status_data(false);
    state.retrieve().map_err(nm)?;
    serde_json::to_value(&state).map_err(|e| AgentError::Nmstate(e.to_string()))
}

/// A connectivity check, as kubernetes-nmstate runs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Ping the default gateway(s).
    Gateway,
    /// Resolve a name (default: the first name server answers for localhost).
    Dns(String),
    Tcp(String, u16),
    Ping(IpAddr),
    /// Every port of every bond hears its LLDP neighbour (its switch
    /// port is still up and cabled): listens up to the probe timeout. The
    /// ports are those of the bonds now and those named here: the bond
    /// ports before the change, so a port the change took down or out of
    /// its bond still counts.
    Lldp(Vec<String>),
}

impl Probe {
    /// Whether the probe waits for frames the network sends on its own
    /// schedule (an LLDP interval), so it cannot be polled.
    pub fn listens(&self) -> bool {
        matches!(self, Probe::Lldp(_))
    }

    /// The probe as it runs after the change: an LLDP probe also checks
    /// the bond ports there are now, before it.
    pub fn pinned(&self) -> Probe {
        match self {
            Probe::Lldp(ports) => {
                let mut all = ports.clone();
                all.extend(bond_ports());
                all.sort();
                all.dedup();
                Probe::Lldp(all)
            }
            p => p.clone(),
        }
    }
}

impl std::str::FromStr for Probe {
    type Err = AgentError;
    fn from_str(s: &str) -> Result<Probe, AgentError> {
        let bad = || AgentError::BadProbe(s.to_string());
        Ok(match s.split_once(':') {
            None if s == "gateway" => Probe::Gateway,
            None if s == "lldp" => Probe::Lldp(Vec::new()),
            None if s == "dns" => Probe::Dns("localhost".into()),
            Some(("dns", name)) => Probe::Dns(name.to_string()),
            Some(("ping", ip)) => Probe::Ping(ip.parse().map_err(|_| bad())?),
            Some(("tcp", rest)) => {
                let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
                Probe::Tcp(host.to_string(), port.parse().map_err(|_| bad())?)
            }
            _ => return Err(bad()),
        })
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Probe::Gateway => write!(f, "gateway"),
            Probe::Dns(n) => write!(f, "dns:{n}"),
            Probe::Tcp(h, p) => write!(f, "tcp:{h}:{p}"),
            Probe::Ping(ip) => write!(f, "ping:{ip}"),
            Probe::Lldp(_) => write!(f, "lldp"),
        }
    }
}

/// Default gateways of the main routing table.
fn gateways() -> Vec<String> {
    let out = Command::new("ip")
        .args(["route", "show", "default"])
        .output();
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                l.split_whitespace()
                    .skip_while(|w| *w != "via")
                    .nth(1)
                    .map(str::to_string)
            })
            .collect()
    })
    .unwrap_or_default()
}

fn ping(addr: &str) -> bool {
    Command::new("ping")
        .args(["-c", "1", "-W", "2", addr])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The kernel's bond ports: `/sys/class/net/<bond>/bonding/slaves`.
fn bond_ports() -> Vec<String> {
    let mut ports = Vec::new();
    for e in std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(e.path().join("bonding/slaves")) {
            ports.extend(s.split_whitespace().map(str::to_string));
        }
    }
    ports.sort();
    ports
}

/// Every bond port (and every one of `also`) hears an LLDP neighbour
/// within `within` (no bond: ok).
fn lldp_neighbours_on_bond_ports(also: &[String], within: Duration) -> Result<(), String> {
    let mut ports = bond_ports();
    ports.extend(also.iter().cloned());
    ports.sort();
    ports.dedup();
    if ports.is_empty() {
        return Ok(());
    }
    static NEVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let opts = nodenet_wires::listen::ListenOptions {
        nics: ports,
        timeout: within,
        host: String::new(),
        bring_up: false,
    };
    let obs = nodenet_wires::listen::listen(&opts, &NEVER).map_err(|e| e.to_string())?;
    let silent: Vec<&str> = obs
        .nics
        .iter()
        .filter(|n| n.neighbor.is_none())
        .map(|n| n.name.as_str())
        .collect();
    if silent.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "no LLDP neighbour within {:.0} s on bond port(s) {}",
            within.as_secs_f64(),
            silent.join(", ")
        ))
    }
}

/// Runs one probe, retrying until `within` (links need a moment).
pub fn run_probe(p: &Probe, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let result = match p {
            Probe::Gateway => {
                let gws = gateways();
                if gws.is_empty() {
                    Err("no default gateway".to_string())
                } else if gws.iter().all(|g| ping(g)) {
                    Ok(())
                } else {
                    Err(format!("no answer from {}", gws.join(", ")))
                }
            }
            Probe::Ping(ip) => ping(&ip.to_string())
                .then_some(())
                .ok_or(format!("no answer from {ip}")),
            // It listens for the whole time itself: no retry loop.
            Probe::Lldp(ports) => return lldp_neighbours_on_bond_ports(ports, within),
            Probe::Dns(name) => (name.as_str(), 0)
                .to_socket_addrs()
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Probe::Tcp(host, port) => (host.as_str(), *port)
                .to_socket_addrs()
                .map_err(|e| e.to_string())
                .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
                .and_then(|a| {
                    TcpStream::connect_timeout(&a, Duration::from_secs(2))
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }),
        };
        if result.is_ok() || Instant::now() >= deadline {
            return result;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub struct ApplyOptions {
    /// Checkpoint rollback timeout (NetworkManager restores on its own after it).
    pub timeout: Duration,
    pub probes: Vec<Probe>,
    /// Leave the checkpoint open for `commit`/`rollback` later.
    pub no_commit: bool,
    /// In memory only: lost at reboot.
    pub ephemeral: bool,
    /// How long each probe may take after the change.
    pub probe_timeout: Duration,
}

/// What happened, for the report.
#[derive(Debug, Default)]
pub struct Applied {
    /// Probes that already failed before the change (skipped).
    pub skipped: Vec<(String, String)>,
    pub passed: Vec<String>,
    pub committed: bool,
    /// The live state already was the desired one: nothing was touched.
    pub unchanged: bool,
    pub seconds: f64,
    /// Why the quick look (profiles + kernel) did not decide the change
    /// alone, when it did not.
    pub quick_look_miss: Option<String>,
    /// How the change was made (none when unchanged).
    pub path: Option<ApplyPath>,
    /// Where the time went, phase by phase.
    pub phases: Vec<(&'static str, f64)>,
}

/// How a change was made.
#[derive(Debug)]
pub enum ApplyPath {
    /// Only new virtual interfaces: their profiles loaded over D-Bus.
    Direct,
    /// Merged and applied by nmstate; `why` the direct path did not do.
    Nmstate { why: String },
}

/// Records how long each phase of an apply took.
struct Stopwatch {
    start: Instant,
    last: Instant,
    phases: Vec<(&'static str, f64)>,
}

impl Stopwatch {
    fn new() -> Stopwatch {
        let now = Instant::now();
        Stopwatch {
            start: now,
            last: now,
            phases: Vec::new(),
        }
    }

    fn lap(&mut self, phase: &'static str) {
        let now = Instant::now();
        self.phases
            .push((phase, now.duration_since(self.last).as_secs_f64()));
        self.last = now;
    }
}

/// What must change to get from `current` to `desired`, by nmstate's own
/// merge: applying only that keeps NetworkManager from re-applying every
/// unchanged profile (seconds in a slow VM, and needless churn on a node).
fn changes(
    desired: &NetworkState,
    current: &NetworkState,
) -> Result<Option<NetworkState>, AgentError> {
    let diff = desired.gen_diff(current).map_err(nm)?;
    if diff.is_empty() {
        return Ok(None);
    }
    direct::without_what_is_there(&diff, current).map_err(AgentError::Nmstate)
}

/// Applies `desired` under a checkpoint, probes, then commits or rolls back.
pub fn apply(desired_json: &serde_json::Value, opts: &ApplyOptions) -> Result<Applied, AgentError> {
    require_network_manager()?;
    let mut clock = Stopwatch::new();
    let mut out = Applied::default();
    let desired: NetworkState = serde_json::from_value(desired_json.clone())
        .map_err(|e| AgentError::Nmstate(e.to_string()))?;
    // Probes that fail now say nothing about the change: skip them.
    let mut probes = Vec::new();
    for p in &opts.probes {
        // A listening probe needs its time before the change as after.
        let now = if p.listens() {
            opts.probe_timeout
        } else {
            Duration::ZERO
        };
        match run_probe(p, now) {
            Ok(()) => probes.push(p.pinned()),
            Err(why) => out.skipped.push((p.to_string(), why)),
        }
    }
    clock.lap("probes before");
    let timeout = opts.timeout.as_secs().max(1) as u32;
    // The checkpoint this apply opens is the one not open before it.
    let open_before = dbus::with_nm(async |nm| dbus::checkpoints(nm).await)?;
    let new = new_interfaces(desired_json);
    let saved = match direct::quick_look(desired_json) {
        Ok(look) => {
            clock.lap("quick look");
            log::info!("only new virtual interfaces (quick look): loading their profiles directly");
            direct::apply(&look.keyfiles, timeout, opts.ephemeral)?;
            out.path = Some(ApplyPath::Direct);
            Saved {
                up: look.up,
                global_dns: None,
                new: Vec::new(),
            }
        }
        Err(why) => {
            log::info!("quick look: {why}; reading the whole state");
            out.quick_look_miss = Some(why);
            match apply_after_full_read(desired, opts, timeout, &mut clock, &mut out)? {
                Some(saved) => saved,
                None => {
                    out.unchanged = true;
                    out.seconds = clock.start.elapsed().as_secs_f64();
                    out.phases = clock.phases;
                    return Ok(out);
                }
            }
        }
    };
    clock.lap("checkpoint+activate");
    // Until it is committed or rolled back, the open checkpoint is written
    // down: a run killed here (a restart of nodenet-apply.service) is
    // rolled back by `nodenet rollback --if-pending` at once, not after
    // NetworkManager's timeout.
    let checkpoint = dbus::with_nm(async |nm| dbus::checkpoints(nm).await)?
        .into_iter()
        .find(|c| !open_before.contains(c));
    let pending = Pending {
        checkpoint: checkpoint.clone(),
        saved: Saved { new, ..saved },
    };
    pending.write();
    let saved = &pending.saved;
    let checkpoint = checkpoint.as_deref();
    if let Err(diff) = verify_live(desired_json, opts.timeout.min(VERIFY_WITHIN)) {
        let seconds = clock.last.elapsed().as_secs_f64();
        restore(saved, checkpoint, &probes, opts.timeout)?;
        Pending::clear();
        return Err(AgentError::NotApplied { diff, seconds });
    }
    clock.lap("verify");
    for p in &probes {
        if let Err(why) = run_probe(p, opts.probe_timeout) {
            let failed_at = Instant::now();
            restore(saved, checkpoint, &probes, opts.timeout)?;
            Pending::clear();
            return Err(AgentError::ProbeFailed {
                probe: p.to_string(),
                why,
                restore_seconds: failed_at.elapsed().as_secs_f64(),
            });
        }
        out.passed.push(p.to_string());
    }
    clock.lap("probes after");
    if !opts.no_commit {
        match checkpoint {
            Some(path) => dbus::with_nm(async |nm| commit_checkpoint(nm, path).await)?,
            None => NetworkState::checkpoint_commit("").map_err(nm)?,
        }
        Pending::clear();
        out.committed = true;
        clock.lap("commit");
    }
    out.seconds = clock.start.elapsed().as_secs_f64();
    out.phases = clock.phases;
    Ok(out)
}

/// The change against nmstate's full read of the running state, made
/// directly when it only adds virtual interfaces, else by nmstate; what a
/// restore needs, or `None` when nothing differs.
fn apply_after_full_read(
    desired: NetworkState,
    opts: &ApplyOptions,
    timeout: u32,
    clock: &mut Stopwatch,
    out: &mut Applied,
) -> Result<Option<Saved>, AgentError> {
    let mut before = NetworkState::new();
    before.set_kernel_only(false);
    before.retrieve().map_err(nm)?;
    let change = changes(&desired, &before)?;
    clock.lap("read state");
    let Some(mut state) = change else {
        return Ok(None);
    };
    let mut saved = Saved {
        up: up_interfaces(&before)?,
        global_dns: None,
        new: Vec::new(),
    };
    match direct::new_interfaces_only(&state, &before) {
        Ok(keyfiles) => {
            log::info!("only new virtual interfaces: loading their profiles directly");
            direct::apply(&keyfiles, timeout, opts.ephemeral)?;
            out.path = Some(ApplyPath::Direct);
        }
        Err(why) => {
            let change =
                serde_json::to_value(&state).map_err(|e| AgentError::Nmstate(e.to_string()))?;
            if !direct::is_empty(&change["dns-resolver"]) {
                saved.global_dns = Some(dbus::with_nm(async |nm| GlobalDns::read(nm).await)?);
            }
            state.set_commit(false);
            state.set_timeout(timeout);
            state.set_memory_only(opts.ephemeral);
            // nmstate's verification re-reads NetworkManager and the
            // kernel, with 1 s sleeps between attempts (~1 s or more of a
            // slow node's time); the kernel's view of the whole desired
            // state, polled every 0.1 s, is what has to be true before
            // the probes anyway.
            state.set_verify_change(false);
            if let Err(e) = state.apply() {
                // nmstate rolled its checkpoint back; not the global DNS.
                if let Some(dns) = &saved.global_dns {
                    dbus::with_nm(async |nm| dns.write(nm).await)?;
                }
                return Err(nm(e));
            }
            out.path = Some(ApplyPath::Nmstate { why });
        }
    }
    Ok(Some(saved))
}

/// How long the kernel may take to show an applied state: NetworkManager
/// on a loaded node (a busy hypervisor, the lab's emulated VMs next to a
/// build) was seen taking over 10 s to install a route; waiting longer
/// costs only when the state never shows.
const VERIFY_WITHIN: Duration = Duration::from_secs(30);

/// Polls the kernel (netlink, through nispor) until it shows `desired` in
/// every field the kernel can show (`nodenet diff --live`); the remaining
/// difference as text if it does not within `within`.
fn verify_live(desired: &serde_json::Value, within: Duration) -> Result<(), String> {
    use nodenet_import::diff::{diff_with, render_text, Actual};
    let deadline = Instant::now() + within;
    loop {
        let result = nodenet_import::live::current_state()
            .map_err(|e| e.to_string())
            .and_then(|live| diff_with(desired, &live, Actual::Live).map_err(|e| e.to_string()));
        match result {
            Ok(d) if d.equal => return Ok(()),
            Ok(d) if Instant::now() >= deadline => return Err(render_text(&d)),
            Err(e) if Instant::now() >= deadline => return Err(e),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// An apply in flight (or left open by `--no-commit`): its checkpoint and
/// what a restore needs, for `nodenet rollback` in a later process.
const PENDING: &str = "/run/nodenet/pending-rollback.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Pending {
    /// The NetworkManager checkpoint the apply opened.
    checkpoint: Option<String>,
    saved: Saved,
}

impl Pending {
    fn write(&self) {
        let written =
            std::fs::create_dir_all(Path::new(PENDING).parent().unwrap_or(Path::new("/")))
                .and_then(|()| {
                    nodenet_model::write_atomic(
                        Path::new(PENDING),
                        serde_json::to_string(self)?.as_bytes(),
                    )
                });
        if let Err(e) = written {
            log::warn!("{PENDING}: {e} (`nodenet rollback` will not re-activate interfaces or write back DNS)");
        }
    }

    fn read() -> Result<Option<Pending>, AgentError> {
        match std::fs::read(PENDING) {
            Ok(data) => serde_json::from_slice(&data)
                .map(Some)
                .map_err(|e| AgentError::Nmstate(format!("{PENDING}: {e}"))),
            Err(_) => Ok(None),
        }
    }

    fn clear() {
        let _ = std::fs::remove_file(PENDING);
    }
}

async fn commit_checkpoint(nm: &dbus::Nm, path: &str) -> Result<(), AgentError> {
    let path = zvariant::ObjectPath::try_from(path)
        .map_err(|e| AgentError::Nmstate(format!("checkpoint {path}: {e}")))?;
    nm.manager
        .call::<_, _, ()>("CheckpointDestroy", &(&path,))
        .await
        .map_err(dbus::dbus)
}

/// The interfaces up in `state` (what a restore must bring back).
fn up_interfaces(state: &NetworkState) -> Result<Vec<String>, AgentError> {
    let snapshot = serde_json::to_value(state).map_err(|e| AgentError::Nmstate(e.to_string()))?;
    Ok(snapshot["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| {
            i["state"] == "up" && !matches!(i["type"].as_str(), Some("loopback" | "unknown") | None)
        })
        .filter_map(|i| i["name"].as_str().map(str::to_string))
        .collect())
}

/// What a restore must bring back beyond NetworkManager's checkpoint.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    /// Interfaces that were up.
    up: Vec<String>,
    /// Interfaces the change creates (named in the desired state, not in
    /// the kernel before): gone again once a restore returns.
    #[serde(default)]
    new: Vec<String>,
    /// The global DNS configuration, when the change touched DNS.
    global_dns: Option<GlobalDns>,
}

/// Rolls the open checkpoint back, writes back the global DNS when it was
/// saved, then brings up again whatever was up and is not now:
/// NetworkManager's rollback restores the profiles but may leave
/// re-created devices down (NM 1.42 with VLANs).
fn restore(
    saved: &Saved,
    checkpoint: Option<&str>,
    probes: &[Probe],
    timeout: Duration,
) -> Result<(), AgentError> {
    match checkpoint {
        Some(path) => dbus::with_nm(async |nm| dbus::rollback_checkpoint(nm, path).await)?,
        None => NetworkState::checkpoint_rollback("").map_err(nm)?,
    }
    if let Some(dns) = &saved.global_dns {
        dbus::with_nm(async |nm| {
            if GlobalDns::read(nm).await? != *dns {
                log::info!("writing back the global DNS configuration");
                dns.write(nm).await?;
            }
            Ok(())
        })?;
    }
    let up = &saved.up;
    // NetworkManager re-activates the restored profiles by itself: wait a
    // moment for the interfaces to be up in the kernel (operstate: a file
    // read, no netlink dump, no D-Bus) and for the probes that passed
    // before the change to pass again; activate what stays down.
    // NetworkManager deletes the devices the change created after its
    // rollback call has returned.
    let new: Vec<&str> = saved.new.iter().map(String::as_str).collect();
    let deadline = Instant::now() + timeout;
    while new.iter().any(|n| exists(n)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let names: Vec<&str> = up.iter().map(String::as_str).collect();
    if wait_up(&names, probes, RESTORE_GRACE).is_ok() {
        return Ok(());
    }
    // Something is down, or the probes do not pass yet. A link may also go
    // down a moment later: NetworkManager deletes the devices it takes for
    // new ones after the rollback call has returned, among them a VLAN
    // that nmstate re-created while applying. Whatever is down gets its
    // restored profile activated (once); done when every link is up and
    // the probes pass, or the links have stayed up for a while.
    let mut activated: Vec<&str> = Vec::new();
    let mut up_since: Option<Instant> = None;
    loop {
        let down: Vec<&str> = names.iter().copied().filter(|n| !link_up(n)).collect();
        let fresh: Vec<&str> = down
            .iter()
            .copied()
            .filter(|n| !activated.contains(n))
            .collect();
        if !fresh.is_empty() {
            log::warn!(
                "NetworkManager's rollback left {} down; activating their restored profiles",
                fresh.join(", ")
            );
            activate_profiles(&fresh)?;
            activated.extend(fresh);
        }
        if down.is_empty() {
            if probes
                .iter()
                .filter(|p| !p.listens())
                .all(|p| run_probe(p, Duration::ZERO).is_ok())
            {
                return Ok(());
            }
            if up_since.get_or_insert_with(Instant::now).elapsed() >= RESTORE_SETTLE {
                return Ok(());
            }
        } else {
            up_since = None;
        }
        if Instant::now() >= deadline {
            return Err(AgentError::Nmstate(format!(
                "after the rollback, still down: {}",
                down.join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls until every interface in `names` is up and every probe passes;
/// after `within`, the interfaces still down.
fn wait_up<'a>(names: &[&'a str], probes: &[Probe], within: Duration) -> Result<(), Vec<&'a str>> {
    let deadline = Instant::now() + within;
    loop {
        let down: Vec<&str> = names.iter().copied().filter(|n| !link_up(n)).collect();
        let quick = || {
            probes
                .iter()
                .filter(|p| !p.listens())
                .all(|p| run_probe(p, Duration::ZERO).is_ok())
        };
        if down.is_empty() && quick() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(down);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Activates, straight over D-Bus, the profile NetworkManager has for each
/// interface in `names` (the one whose id is the interface name, as
/// nmstate names them, else any bound to it). After a rollback the
/// profiles are right and only their activation is missing, so a full
/// nmstate apply (retrieve, checkpoint, verify) would cost seconds for
/// nothing.
fn activate_profiles(names: &[&str]) -> Result<(), AgentError> {
    dbus::with_nm(async |nm| {
        let paths: Vec<zvariant::OwnedObjectPath> = nm
            .settings
            .call("ListConnections", &())
            .await
            .map_err(dbus::dbus)?;
        // interface name -> (profile id is the interface name, path)
        let mut chosen: std::collections::HashMap<String, (bool, zvariant::OwnedObjectPath)> =
            Default::default();
        for path in paths {
            let conn = nm
                .proxy(
                    path.as_str().to_string(),
                    "org.freedesktop.NetworkManager.Settings.Connection",
                )
                .await?;
            let s: std::collections::HashMap<
                String,
                std::collections::HashMap<String, zvariant::OwnedValue>,
            > = conn.call("GetSettings", &()).await.map_err(dbus::dbus)?;
            let text = |k: &str| {
                s.get("connection")
                    .and_then(|c| c.get(k))
                    .and_then(|v| v.try_clone().ok())
                    .and_then(|v| String::try_from(v).ok())
            };
            let Some(iface) = text("interface-name").filter(|i| names.contains(&i.as_str())) else {
                continue;
            };
            let by_id = text("id").as_deref() == Some(iface.as_str());
            if chosen.get(&iface).is_none_or(|(best, _)| by_id && !best) {
                chosen.insert(iface, (by_id, path));
            }
        }
        for name in names {
            let Some((_, path)) = chosen.get(*name) else {
                return Err(AgentError::Nmstate(format!(
                    "after the rollback {name} is down and has no profile"
                )));
            };
            log::info!("activating {} for {name}", path.as_str());
            dbus::activate(nm, path).await?;
        }
        Ok(())
    })
}

/// How long NetworkManager gets to bring restored interfaces up itself
/// (when it does, it takes ~0.1 s here; when NM 1.42 forgets a VLAN,
/// waiting longer only delays the restore).
const RESTORE_GRACE: Duration = Duration::from_millis(500);

/// How long restored links must stay up, when the probes still fail, for
/// the restore to be done (NetworkManager deletes the devices it takes for
/// new ones within a second or two of its rollback).
const RESTORE_SETTLE: Duration = Duration::from_secs(5);

/// Whether the kernel has an interface called `name`.
fn exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// The interfaces `desired` names (and does not remove) that the kernel
/// does not have yet.
fn new_interfaces(desired: &serde_json::Value) -> Vec<String> {
    desired["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| !matches!(i["state"].as_str(), Some("absent" | "down")))
        .filter_map(|i| i["name"].as_str())
        .filter(|n| !n.contains('/') && !exists(n))
        .map(str::to_string)
        .collect()
}

/// Whether the kernel reports `name` up (`unknown` is what interfaces
/// without carrier reporting, e.g. dummies, show when up).
fn link_up(name: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{name}/operstate"))
        .is_ok_and(|s| matches!(s.trim(), "up" | "unknown"))
}

pub fn commit() -> Result<(), AgentError> {
    require_network_manager()?;
    match Pending::read()?.and_then(|p| p.checkpoint) {
        Some(path) => dbus::with_nm(async |nm| commit_checkpoint(nm, &path).await)?,
        None => NetworkState::checkpoint_commit("").map_err(nm)?,
    }
    Pending::clear();
    Ok(())
}

pub fn rollback() -> Result<(), AgentError> {
    require_network_manager()?;
    match Pending::read()? {
        Some(p) => {
            restore(
                &p.saved,
                p.checkpoint.as_deref(),
                &[],
                Duration::from_secs(60),
            )?;
            Pending::clear();
            Ok(())
        }
        None => NetworkState::checkpoint_rollback("").map_err(nm),
    }
}

/// Rolls back the checkpoint a killed or unfinished apply left open (what
/// `nodenet rollback --if-pending` does when nodenet-apply.service stops):
/// `true` when there was one. A marker whose checkpoint NetworkManager
/// no longer has (committed, or rolled back on its own) is removed.
pub fn rollback_if_pending() -> Result<bool, AgentError> {
    let Some(p) = Pending::read()? else {
        return Ok(false);
    };
    require_network_manager()?;
    let open = dbus::with_nm(async |nm| dbus::checkpoints(nm).await)?;
    let Some(path) = p
        .checkpoint
        .as_deref()
        .filter(|c| open.iter().any(|o| o == c))
    else {
        Pending::clear();
        return Ok(false);
    };
    restore(&p.saved, Some(path), &[], Duration::from_secs(60))?;
    Pending::clear();
    Ok(true)
}

/// The running host name (what `<hostname>.yml` is named after).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_syntax() {
        assert_eq!("gateway".parse::<Probe>().unwrap(), Probe::Gateway);
        assert_eq!("lldp".parse::<Probe>().unwrap(), Probe::Lldp(Vec::new()));
        assert!(Probe::Lldp(Vec::new()).listens() && !Probe::Gateway.listens());
        assert_eq!(Probe::Lldp(vec!["eth1".into()]).to_string(), "lldp");
        assert_eq!(
            "tcp:api.example.com:6443".parse::<Probe>().unwrap(),
            Probe::Tcp("api.example.com".into(), 6443)
        );
        assert_eq!(
            "ping:10.0.0.1".parse::<Probe>().unwrap(),
            Probe::Ping("10.0.0.1".parse().unwrap())
        );
        assert!("tcp:nohost".parse::<Probe>().is_err());
        assert!("icmp".parse::<Probe>().is_err());
    }
}

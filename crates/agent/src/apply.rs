//! `nodenet apply`: a rebootless change under a NetworkManager
//! checkpoint, verified in the kernel and probed, then committed or rolled
//! back (the guard of `checkpoint.rs`).
//!
//! nmstate's own apply does the NetworkManager work over D-Bus: it creates
//! a checkpoint with a rollback timeout, writes and activates the
//! profiles. With `commit` off it leaves the checkpoint open, so nodenet
//! runs its checks first. If nodenet dies in between, NetworkManager rolls
//! back by itself when the checkpoint times out. A change that only adds
//! virtual interfaces skips nmstate's apply (`direct.rs`); the checkpoint
//! and guard are the same.

use std::time::{Duration, Instant};

use nmstate::NetworkState;

use crate::checkpoint::{guarded, Finish};
use crate::dbus::{self, GlobalDns};
use crate::direct;
use crate::pending::Pending;
use crate::probes::{self, run_probe, Probe};
use crate::restore::{exists, Saved};
use crate::{nm, require_network_manager, AgentError};

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

/// How the change will be made, decided before anything changes.
enum Change {
    /// New virtual interfaces only: their keyfiles.
    Direct(Vec<(String, String)>),
    /// Everything else, by nmstate (`why` not the direct way).
    Nmstate {
        state: Box<NetworkState>,
        why: String,
    },
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

/// What applies, the checks and the report share.
struct Run<'a> {
    opts: &'a ApplyOptions,
    desired: &'a serde_json::Value,
    probes: Vec<Probe>,
    clock: Stopwatch,
    out: Applied,
}

/// Applies `desired` under a checkpoint, probes, then commits or rolls back.
pub fn apply(desired_json: &serde_json::Value, opts: &ApplyOptions) -> Result<Applied, AgentError> {
    require_network_manager()?;
    let desired: NetworkState = serde_json::from_value(desired_json.clone())
        .map_err(|e| AgentError::Nmstate(e.to_string()))?;
    let mut run = Run {
        opts,
        desired: desired_json,
        probes: Vec::new(),
        clock: Stopwatch::new(),
        out: Applied::default(),
    };
    // Probes that fail now say nothing about the change: skip them.
    for p in &opts.probes {
        // A listening probe needs its time before the change as after.
        let now = if p.listens() {
            opts.probe_timeout
        } else {
            Duration::ZERO
        };
        match run_probe(p, now) {
            Ok(()) => run.probes.push(probes::pinned(p)),
            Err(why) => run.out.skipped.push((p.to_string(), why)),
        }
    }
    run.clock.lap("probes before");
    // The checkpoint this apply opens is the one not open before it.
    let open_before = dbus::with_nm(async |nm| dbus::checkpoints(nm).await)?;
    let new = new_interfaces(desired_json);
    let (change, saved) = match direct::quick_look(desired_json) {
        Ok(look) => {
            run.clock.lap("quick look");
            log::info!("only new virtual interfaces (quick look): loading their profiles directly");
            let saved = Saved {
                up: look.up,
                new,
                global_dns: None,
            };
            (Change::Direct(look.keyfiles), saved)
        }
        Err(why) => {
            log::info!("quick look: {why}; reading the whole state");
            run.out.quick_look_miss = Some(why);
            match after_full_read(desired, &mut run.clock)? {
                Some((change, mut saved)) => {
                    saved.new = new;
                    (change, saved)
                }
                None => {
                    run.out.unchanged = true;
                    run.out.seconds = run.clock.start.elapsed().as_secs_f64();
                    run.out.phases = run.clock.phases;
                    return Ok(run.out);
                }
            }
        }
    };
    let timeout = opts.timeout.as_secs().max(1) as u32;
    let finish = if opts.no_commit {
        Finish::LeaveOpen
    } else {
        Finish::Commit
    };
    let probes = run.probes.clone();
    guarded(
        &mut run,
        Pending::new(open_before, saved),
        &probes,
        opts.timeout,
        finish,
        |run| {
            match change {
                Change::Direct(keyfiles) => {
                    direct::apply(&keyfiles, timeout, run.opts.ephemeral)?;
                    run.out.path = Some(ApplyPath::Direct);
                }
                Change::Nmstate { mut state, why } => {
                    state.set_commit(false);
                    state.set_timeout(timeout);
                    state.set_memory_only(run.opts.ephemeral);
                    // nmstate's verification re-reads NetworkManager and
                    // the kernel, with 1 s sleeps between attempts (~1 s
                    // or more of a slow node's time); the kernel's view of
                    // the whole desired state, polled every 0.1 s, is what
                    // has to be true before the probes anyway.
                    state.set_verify_change(false);
                    state.apply().map_err(nm)?;
                    run.out.path = Some(ApplyPath::Nmstate { why });
                }
            }
            run.clock.lap("checkpoint+activate");
            Ok(())
        },
        |run| {
            let within = run.opts.timeout.min(VERIFY_WITHIN);
            if let Err(diff) = verify_live(run.desired, within) {
                let seconds = run.clock.last.elapsed().as_secs_f64();
                return Err(AgentError::NotApplied { diff, seconds });
            }
            run.clock.lap("verify");
            for p in &run.probes {
                if let Err(why) = run_probe(p, run.opts.probe_timeout) {
                    return Err(AgentError::ProbeFailed {
                        probe: p.to_string(),
                        why,
                    });
                }
                run.out.passed.push(p.to_string());
            }
            run.clock.lap("probes after");
            Ok(())
        },
    )?;
    if !opts.no_commit {
        run.out.committed = true;
        run.clock.lap("commit");
    }
    run.out.seconds = run.clock.start.elapsed().as_secs_f64();
    run.out.phases = run.clock.phases;
    Ok(run.out)
}

/// The change against nmstate's full read of the running state: made
/// directly when it only adds virtual interfaces, else by nmstate; and
/// what a restore needs. `None` when nothing differs.
fn after_full_read(
    desired: NetworkState,
    clock: &mut Stopwatch,
) -> Result<Option<(Change, Saved)>, AgentError> {
    let mut before = NetworkState::new();
    before.set_kernel_only(false);
    before.retrieve().map_err(nm)?;
    let change = changes(&desired, &before)?;
    clock.lap("read state");
    let Some(state) = change else {
        return Ok(None);
    };
    let mut saved = Saved {
        up: up_interfaces(&before)?,
        ..Saved::default()
    };
    let change = match direct::new_interfaces_only(&state, &before) {
        Ok(keyfiles) => {
            log::info!("only new virtual interfaces: loading their profiles directly");
            Change::Direct(keyfiles)
        }
        Err(why) => {
            let json =
                serde_json::to_value(&state).map_err(|e| AgentError::Nmstate(e.to_string()))?;
            if !direct::is_empty(&json["dns-resolver"]) {
                saved.global_dns = Some(dbus::with_nm(async |nm| GlobalDns::read(nm).await)?);
            }
            Change::Nmstate {
                state: Box::new(state),
                why,
            }
        }
    };
    Ok(Some((change, saved)))
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

//! `nodenet lldp`, `nodenet netverify plan|run|report`, and the
//! observation files `check --observed` reads: wire verification
//! (`crates/wires`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nodenet_model::{Diagnostic, SourceMap, Span};
use nodenet_wires::compare::Observed;
use nodenet_wires::listen::{self, ListenOptions};
use nodenet_wires::netverify::{self, probe, report, PlanOptions};
use nodenet_wires::observation::Observation;

use super::{CliError, Exit, Outcome};
use crate::report::Format;
use crate::ui::info;

/// Set by SIGINT/SIGTERM: listening and probing stop, links are put back.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn stop_on_signals() -> &'static AtomicBool {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    &STOP
}

/// The node's host name, for the observation and the plan's host.
fn hostname() -> String {
    Some(nodenet_agent::hostname())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

fn write_or_print(output: Option<&Path>, text: &str) -> Result<(), CliError> {
    match output {
        Some(p) => nodenet_model::write_atomic(p, format!("{text}\n").as_bytes())
            .map_err(|e| CliError::io(p.display().to_string(), e)),
        None => {
            println!("{text}");
            Ok(())
        }
    }
}

#[derive(clap::Args)]
pub struct LldpArgs {
    /// Listen on these NICs (default: every physical NIC).
    #[arg(short, long = "interface")]
    interfaces: Vec<String>,
    /// Listen at most this long, in seconds (switches send every 30 s by
    /// default); it stops early once every NIC has a neighbour.
    #[arg(long, default_value_t = 35)]
    timeout: u64,
    /// Decode the LLDP frames of this capture file (classic pcap, as
    /// `tcpdump -w` writes) instead of listening.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// With --pcap: the NIC the capture was taken on.
    #[arg(long, default_value = "capture", requires = "pcap")]
    nic: String,
    /// The node's name in the observation (default: its host name).
    #[arg(long)]
    host: Option<String>,
    /// `json`: the observation file `check --observed` reads.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Write the output here (atomically) instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Hold the cables heard against NetBox's (NETBOX_URL, NETBOX_TOKEN):
    /// the node is the device named like it (--host), each switch the
    /// device named by its LLDP system name. The cables NetBox lacks are
    /// shown as its change set.
    #[arg(long)]
    netbox: bool,
    /// Record those cables in NetBox (after showing them; each logged in
    /// its change log with a message naming nodenet; a port NetBox cables
    /// elsewhere is never re-cabled).
    #[arg(long)]
    write_netbox: bool,
}

pub fn lldp(args: LldpArgs) -> Outcome {
    let host = args.host.clone().unwrap_or_else(hostname);
    let obs = match &args.pcap {
        Some(file) => {
            let bytes =
                std::fs::read(file).map_err(|e| CliError::io(file.display().to_string(), e))?;
            listen::from_pcap(&bytes, &file.display().to_string(), &host, &args.nic)
                .map_err(|e| CliError::usage(e).exit(super::PROBLEMS))?
        }
        None => {
            let opts = ListenOptions {
                nics: args.interfaces.clone(),
                timeout: Duration::from_secs(args.timeout),
                host,
                bring_up: true,
            };
            listen::listen(&opts, stop_on_signals()).map_err(CliError::usage)?
        }
    };
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&obs).expect("an observation serialises"),
        Format::Human => obs.table().trim_end().to_string(),
    };
    write_or_print(args.output.as_deref(), &text)?;
    if args.netbox || args.write_netbox {
        cables_in_netbox(&obs, args.write_netbox)?;
    }
    Ok(Exit::Success)
}

/// The cables `obs` heard, held against NetBox's: the change set on
/// stderr, written with `write`.
fn cables_in_netbox(obs: &Observation, write: bool) -> Result<(), CliError> {
    let fills: Vec<nodenet_netbox::CableFill> = obs
        .nics
        .iter()
        .filter_map(|n| {
            let heard = n.neighbor.as_ref()?;
            Some(nodenet_netbox::CableFill {
                host: obs.host.clone(),
                nic: n.name.clone(),
                switch: heard.switch_name().to_string(),
                port: heard.port_name().to_string(),
            })
        })
        .collect();
    let client = nodenet_netbox::Client::from_env()?;
    let set = nodenet_netbox::plan_cables(&client, &fills)?;
    for c in &set.changes {
        info!(
            "NetBox: cable to add: {} {} ({}) -- {} {} ({})",
            c.fill.host, c.fill.nic, c.pages.0, c.fill.switch, c.fill.port, c.pages.1
        );
    }
    for r in &set.refused {
        info!(
            "warning: {} {} -- {} {} not recorded in NetBox: {}",
            r.fill.host, r.fill.nic, r.fill.switch, r.fill.port, r.why
        );
    }
    let held = set.present.len();
    if write && !set.changes.is_empty() {
        let n = nodenet_netbox::apply_cables(&client, &set)?;
        info!("wrote {n} cable(s) to NetBox ({held} there already); each is in its change log with the message `nodenet lldp: …`");
    } else if set.changes.is_empty() {
        info!("NetBox has every cable heard ({held}); nothing to write");
    } else {
        info!(
            "{} cable(s) to add ({held} there already): run again with --write-netbox to record them in NetBox",
            set.changes.len()
        );
    }
    Ok(())
}

/// Reads `--observed` files into the source map (so findings about them
/// are located) and the comparison's input; unreadable ones are
/// `observed-invalid` errors at the file.
/// The `--observed` files: LLDP observations and saved discoveries.
#[derive(Default)]
pub struct ObservedFiles {
    pub lldp: Vec<Observed>,
    /// Each with where to point at it.
    pub discoveries: Vec<(nodenet_bmc::discovery::DiscoveryFile, Span)>,
    pub diagnostics: Vec<Diagnostic>,
}

pub fn read_observed(
    files: &[PathBuf],
    sources: &mut SourceMap,
) -> Result<ObservedFiles, CliError> {
    let mut read = ObservedFiles::default();
    for path in expand_dirs(files)? {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| CliError::io(&name, e))?;
        let (line, column, offset) = position_of(&text, "\"host\"");
        let id = sources.add(name.clone(), text);
        let span = Span {
            file: id,
            line,
            column,
            offset,
            len: 0,
        };
        let text = &sources.get(id).expect("just added").text;
        let invalid = |e: String| {
            Diagnostic::error(nodenet_model::Code::ObservedInvalid, format!("{name}: {e}")).at(span)
        };
        match nodenet_bmc::discovery::DiscoveryFile::from_json(text) {
            Some(Ok(d)) => read.discoveries.push((d, span)),
            Some(Err(e)) => read.diagnostics.push(invalid(e)),
            None => match Observation::from_json(text) {
                Ok(obs) => read.lldp.push(Observed { obs, span }),
                Err(e) => read.diagnostics.push(invalid(e)),
            },
        }
    }
    Ok(read)
}

/// Directories stand for the `.json` files in them.
fn expand_dirs(files: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for f in files {
        if f.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(f)
                .map_err(|e| CliError::io(f.display().to_string(), e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            inner.sort();
            out.extend(inner);
        } else {
            out.push(f.clone());
        }
    }
    Ok(out)
}

/// 1-based line and column, and offset, of the first `needle` (else 1:1).
fn position_of(text: &str, needle: &str) -> (u32, u32, u32) {
    let Some(at) = text.find(needle) else {
        return (1, 1, 0);
    };
    let before = &text[..at];
    let line = before.matches('\n').count() as u32 + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    (line, column, at as u32)
}

#[derive(clap::Subcommand)]
pub enum NetverifyCommand {
    /// Per host and NIC, the VLANs to test (from the network intent and the NICs' `vlans`).
    Plan(PlanArgs),
    /// On a node: send probe frames on every planned VLAN of every NIC and record what is heard.
    Run(RunArgs),
    /// Merge the nodes' results: a matrix per VLAN and located findings.
    Report(ReportArgs),
}

#[derive(clap::Args)]
pub struct PlanArgs {
    /// The inventory (any input `check` reads).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Write the plan here (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Test every VLAN named anywhere in the fleet on every NIC.
    #[arg(long)]
    all_vlans: bool,
    /// Seconds each node sends and listens.
    #[arg(long, default_value_t = netverify::DEFAULT_WINDOW_S)]
    window: u32,
    /// Probe frames per second per NIC (at most 100).
    #[arg(long, default_value_t = netverify::DEFAULT_RATE)]
    rate: u32,
    /// Also send full-size frames (each NIC's MTU from the intent or `mtu:`).
    #[arg(long)]
    mtu: bool,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The plan `netverify plan` wrote (the same file on every node).
    plan: PathBuf,
    /// This node's host name in the plan (default: the host name).
    #[arg(long)]
    host: Option<String>,
    /// Override the plan's window, in seconds.
    #[arg(long)]
    window: Option<u64>,
    /// Write the result here (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The nodes' result files (or directories of them) and the inventory
    /// (any input `check` reads), in any order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// `json`: the diagnostics object (docs/output.md).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn netverify(cmd: NetverifyCommand) -> Outcome {
    match cmd {
        NetverifyCommand::Plan(a) => plan(a),
        NetverifyCommand::Run(a) => run(a),
        NetverifyCommand::Report(a) => report_cmd(a),
    }
}

fn plan(args: PlanArgs) -> Outcome {
    let loaded = super::load_files(&args.inputs)?;
    super::one_cluster(&loaded, "netverify plan")?;
    if loaded.diagnostics.iter().any(|d| d.is_error()) {
        crate::report::print(&loaded.sources, &loaded.diagnostics, Format::Human);
        return Ok(Exit::Problems);
    }
    let opts = PlanOptions {
        all_vlans: args.all_vlans,
        window_s: args.window,
        rate: args.rate,
        mtu: args.mtu,
    };
    let plan = netverify::plan(&loaded.inventory, &opts).map_err(CliError::usage)?;
    let text = serde_json::to_string_pretty(&plan).expect("a plan serialises");
    write_or_print(args.output.as_deref(), &text)?;
    let nics: usize = plan.hosts.iter().map(|h| h.nics.len()).sum();
    let vlans: usize = plan
        .hosts
        .iter()
        .flat_map(|h| &h.nics)
        .map(|n| n.vlans.len())
        .sum();
    info!(
        "plan {}: {} host(s), {nics} NIC(s), {vlans} tagged VLAN(s) in all; {} s window, {} frames/s per NIC",
        plan.run,
        plan.hosts.len(),
        plan.window_s,
        plan.rate
    );
    Ok(Exit::Success)
}

fn run(args: RunArgs) -> Outcome {
    let text = std::fs::read_to_string(&args.plan)
        .map_err(|e| CliError::io(args.plan.display().to_string(), e))?;
    let plan = netverify::Plan::from_json(&text)
        .map_err(|e| CliError::input("netverify-plan", format!("{}: {e}", args.plan.display())))?;
    let opts = probe::RunOptions {
        host: args.host.unwrap_or_else(hostname),
        window: args.window.map(Duration::from_secs),
    };
    let result = probe::run(&plan, &opts, stop_on_signals()).map_err(CliError::usage)?;
    let sent: u32 = result.nics.iter().flat_map(|n| n.sent.values()).sum();
    let heard: u32 = result
        .nics
        .iter()
        .flat_map(|n| n.heard.iter().map(|h| h.frames))
        .sum();
    info!(
        "{}: {} NIC(s), {sent} probe frames sent, {heard} heard in {:.1} s",
        result.host,
        result.nics.len(),
        result.window_ms as f64 / 1000.0
    );
    let text = serde_json::to_string_pretty(&result).expect("a result serialises");
    write_or_print(args.output.as_deref(), &text)?;
    Ok(Exit::Success)
}

fn report_cmd(args: ReportArgs) -> Outcome {
    let mut results = Vec::new();
    let mut inputs = Vec::new();
    let files = expand_dirs(&args.files)?;
    for f in files {
        let is_json = f.extension().is_some_and(|x| x == "json");
        if !is_json {
            inputs.push(f);
            continue;
        }
        let text =
            std::fs::read_to_string(&f).map_err(|e| CliError::io(f.display().to_string(), e))?;
        let result = probe::RunResult::from_json(&text)
            .map_err(|e| CliError::usage(format!("{}: {e}", f.display())).exit(super::PROBLEMS))?;
        results.push(result);
    }
    if inputs.is_empty() {
        return Err(CliError::usage(
            "give the inventory too: `netverify report results/*.json INVENTORY`",
        ));
    }
    let loaded = super::load_files(&inputs)?;
    super::one_cluster(&loaded, "netverify report")?;
    let rep = report::report(&results, &loaded.inventory)
        .map_err(|e| CliError::usage(e).exit(super::PROBLEMS))?;
    if args.format == Format::Human {
        print!("{}", rep.matrix_text());
    }
    crate::report::print(&loaded.sources, &rep.diagnostics, args.format);
    Ok(Exit::problems_if(
        rep.diagnostics.iter().any(|d| d.is_error()),
    ))
}

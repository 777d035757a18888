//! `nodenet bmc status|power|media`: one Redfish operation per host.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nodenet_bmc::{Power, Select, Status};

use super::{CliError, Exit, Outcome};
use crate::report::Format;
use crate::ui::{self, info};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    op: Op,
}

#[derive(clap::Subcommand)]
enum Op {
    /// Power state, boot override and inserted media, per host.
    Status {
        /// The inventory (or install-config.yaml).
        inventory: PathBuf,
        /// Hosts to query (default: all); repeat for more.
        #[arg(long, value_name = "HOST")]
        host: Vec<String>,
        #[command(flatten)]
        limits: Limits,
        /// `json`: one object on stdout, whatever the outcome (docs/output.md).
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Power hosts on, off, or restart them (name them with --host, or --all).
    Power {
        #[arg(value_enum)]
        action: PowerArg,
        #[command(flatten)]
        sel: Destructive,
    },
    /// Virtual media operations (name the hosts with --host, or --all).
    Media {
        #[arg(value_enum)]
        action: MediaArg,
        #[command(flatten)]
        sel: Destructive,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PowerArg {
    On,
    Off,
    Restart,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MediaArg {
    Eject,
}

/// How long and how many at once.
#[derive(clap::Args, Clone, Copy)]
pub struct Limits {
    /// Seconds allowed per host.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Hosts handled at once.
    #[arg(long, default_value_t = 8)]
    pub parallel: usize,
}

/// The hosts of an action that changes machines: named, or `--all`; never
/// all by default.
#[derive(clap::Args)]
pub struct Destructive {
    /// The inventory (or install-config.yaml).
    pub inventory: PathBuf,
    /// A host to act on; repeat for more (or --all).
    #[arg(long, value_name = "HOST", conflicts_with = "all")]
    pub host: Vec<String>,
    /// Act on every host of the inventory.
    #[arg(long)]
    pub all: bool,
    /// Print what would be done to which host and BMC; send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (asked on a terminal before acting on
    /// more than one host).
    #[arg(short = 'y', long)]
    pub yes: bool,
    #[command(flatten)]
    pub limits: Limits,
}

impl Destructive {
    /// The selection, or the usage error when there is none (`command` as
    /// typed, e.g. `bmc power off`).
    pub fn select(&self, command: &str) -> Result<Select, CliError> {
        if self.all {
            Ok(Select::All)
        } else if !self.host.is_empty() {
            Ok(Select::Hosts(self.host.clone()))
        } else {
            Err(CliError::usage(format!(
                "`nodenet {command}` changes machines: name them with --host H (repeat for more) or give --all"
            )))
        }
    }

    /// On a terminal, asks before acting on several hosts (unless --yes);
    /// `false` when the answer is no.
    pub fn confirmed(&self, what: &str, targets: &[nodenet_bmc::Target]) -> bool {
        if self.yes || targets.len() < 2 || !ui::interactive() {
            return true;
        }
        let names: Vec<&str> = targets.iter().map(|t| t.host.as_str()).collect();
        let shown = if names.len() > 10 {
            format!("{}, … ({} hosts)", names[..10].join(", "), names.len())
        } else {
            names.join(", ")
        };
        ui::confirm(&format!("{what} {} hosts: {shown}?", names.len()))
    }
}

/// Loads and checks the inventory, then resolves the selected hosts' BMCs.
pub fn targets(inventory: &PathBuf, select: &Select) -> Result<Vec<nodenet_bmc::Target>, CliError> {
    let loaded = load_checked(inventory)?;
    targets_in(&loaded, inventory, select)
}

/// The inventory, loaded and checked: nothing goes to a BMC from one with
/// errors (they are printed).
pub fn load_checked(inventory: &PathBuf) -> Result<nodenet_model::Loaded, CliError> {
    let mut loaded = super::load_files(std::slice::from_ref(inventory))?;
    super::one_cluster(&loaded, "bmc")?;
    // Its findings are the check's now.
    let report = nodenet_check::check(&loaded.inventory, std::mem::take(&mut loaded.diagnostics));
    if report.has_errors() {
        return Err(CliError::input(
            "check-failed",
            "the inventory has errors; nothing was sent to any BMC",
        )
        .with_findings(loaded.sources, report.diagnostics));
    }
    Ok(loaded)
}

/// The selected hosts' BMCs in a loaded inventory (`inventory`, its path).
pub fn targets_in(
    loaded: &nodenet_model::Loaded,
    inventory: &std::path::Path,
    select: &Select,
) -> Result<Vec<nodenet_bmc::Target>, CliError> {
    let targets = nodenet_bmc::targets(&loaded.inventory, select).map_err(|(host, f)| {
        CliError::io(inventory.display().to_string(), format!("{host}: {f}"))
            .code("bmc-target")
            .exit(super::PROBLEMS)
    })?;
    for t in targets.iter().filter(|t| t.insecure) {
        eprintln!(
            "warning: {}: TLS certificate verification is disabled for its BMC \
             (disableCertificateVerification: true in the inventory)",
            t.host
        );
    }
    Ok(targets)
}

/// `--dry-run`: per host, its BMC and what would be done; nothing is sent.
pub fn print_plan(targets: &[nodenet_bmc::Target], plan: &dyn Fn(&str) -> String, format: Format) {
    match format {
        Format::Json => {
            let rows: Vec<serde_json::Value> = targets
                .iter()
                .map(|t| serde_json::json!({"host": t.host, "bmc": t.bmc(), "plan": plan(&t.host)}))
                .collect();
            println!("{}", serde_json::json!({"dry_run": true, "hosts": rows}));
        }
        Format::Human => {
            println!("dry run: nothing is sent to any BMC");
            for t in targets {
                println!("{}: {}\n    BMC {}", t.host, plan(&t.host), t.bmc());
            }
        }
    }
}

type Results = Vec<(String, Result<Status, nodenet_bmc::BmcError>)>;

/// Runs `job` on every target, showing per-host progress on a terminal.
pub fn run_with_progress<T, F, Fut>(
    targets: Vec<nodenet_bmc::Target>,
    parallel: usize,
    job: F,
) -> Vec<(String, Result<T, nodenet_bmc::BmcError>)>
where
    T: Send + 'static,
    F: Fn(Arc<nodenet_bmc::Target>, Arc<nodenet_bmc::Progress>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, nodenet_bmc::BmcError>> + Send + 'static,
{
    let hosts: Vec<String> = targets.iter().map(|t| t.host.clone()).collect();
    let bars = Arc::new(ui::HostProgress::new(&hosts));
    let shown = bars.clone();
    let progress: Arc<nodenet_bmc::Progress> = Arc::new(move |h: &str, s: &str| shown.step(h, s));
    let finish = bars.clone();
    let job = Arc::new(job);
    let results = nodenet_bmc::run_all(targets, parallel, move |t| {
        let (job, progress, finish) = (job.clone(), progress.clone(), finish.clone());
        async move {
            let host = t.host.clone();
            let r = job(t, progress).await;
            finish.finish(
                &host,
                match &r {
                    Ok(_) => "done".to_string(),
                    Err(e) => format!("FAILED: {e}"),
                }
                .as_str(),
            );
            r
        }
    });
    bars.clear();
    results
}

/// The summary every BMC command ends with.
pub fn print_results(results: &Results, format: Format) -> Exit {
    match format {
        Format::Json => {
            let rows: Vec<serde_json::Value> = results
                .iter()
                .map(|(h, r)| match r {
                    Ok(s) => serde_json::json!({"host": h, "ok": true, "status": s}),
                    Err(e) => serde_json::json!({"host": h, "ok": false, "error": e.to_string()}),
                })
                .collect();
            println!("{}", serde_json::json!({ "hosts": rows }));
        }
        Format::Human => {
            println!(
                "{:<20} {:<6} {:<14} {:<8} IMAGE / ERROR",
                "HOST", "POWER", "BOOT", "MEDIA"
            );
            for (h, r) in results {
                match r {
                    Ok(s) => println!(
                        "{:<20} {:<6} {:<14} {:<8} {}",
                        h,
                        s.power,
                        format!("{}/{}", s.boot_target, s.boot_enabled),
                        if s.media_inserted { "inserted" } else { "-" },
                        s.media_image
                    ),
                    Err(e) => println!("{h:<20} FAILED {e}"),
                }
            }
        }
    }
    Exit::problems_if(!results.iter().all(|(_, r)| r.is_ok()))
}

fn status(inventory: &PathBuf, host: Vec<String>, limits: Limits, format: Format) -> Outcome {
    let select = if host.is_empty() {
        Select::All
    } else {
        Select::Hosts(host)
    };
    let targets = targets(inventory, &select)?;
    let timeout = Duration::from_secs(limits.timeout);
    let results = run_with_progress(targets, limits.parallel, move |t, p| async move {
        nodenet_bmc::status(&t, timeout, &*p).await
    });
    Ok(print_results(&results, format))
}

/// `command` as typed (`bmc power off`), `what` as asked (`power off`).
fn act(command: &str, what: &str, sel: Destructive, action: Action) -> Outcome {
    let select = sel.select(command)?;
    let targets = targets(&sel.inventory, &select)?;
    if sel.dry_run {
        let plan = match action {
            Action::Power(p) => p.plan().to_string(),
            Action::Eject => nodenet_bmc::EJECT_PLAN.to_string(),
        };
        print_plan(&targets, &|_| plan.clone(), Format::Human);
        return Ok(Exit::Success);
    }
    if !sel.confirmed(what, &targets) {
        return Err(CliError::usage("aborted: nothing was sent to any BMC").code("aborted"));
    }
    info!("{what}: {} host(s)", targets.len());
    let timeout = Duration::from_secs(sel.limits.timeout);
    let results = match action {
        Action::Power(p) => {
            run_with_progress(targets, sel.limits.parallel, move |t, pr| async move {
                nodenet_bmc::power(&t, p, timeout, &*pr).await
            })
        }
        Action::Eject => run_with_progress(targets, sel.limits.parallel, move |t, pr| async move {
            nodenet_bmc::eject(&t, timeout, &*pr).await
        }),
    };
    Ok(print_results(&results, Format::Human))
}

#[derive(Clone, Copy)]
enum Action {
    Power(Power),
    Eject,
}

pub fn run(args: Args) -> Outcome {
    match args.op {
        Op::Status {
            inventory,
            host,
            limits,
            format,
        } => status(&inventory, host, limits, format),
        Op::Power { action, sel } => {
            let (command, what, p) = match action {
                PowerArg::On => ("bmc power on", "power on", Power::On),
                PowerArg::Off => ("bmc power off", "power off", Power::Off),
                PowerArg::Restart => ("bmc power restart", "restart", Power::Restart),
            };
            act(command, what, sel, Action::Power(p))
        }
        Op::Media {
            action: MediaArg::Eject,
            sel,
        } => act(
            "bmc media eject",
            "eject the virtual media of",
            sel,
            Action::Eject,
        ),
    }
}

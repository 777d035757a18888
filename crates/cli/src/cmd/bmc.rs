//! `nodenet bmc status|power|media`: one Redfish operation per host.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use nodenet_bmc::{Power, Status};

use crate::report::Format;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    op: Op,
}

#[derive(clap::Subcommand)]
enum Op {
    /// Power state, boot override and inserted media, per host.
    Status {
        #[command(flatten)]
        sel: Selection,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Power a host on, off, or restart it.
    Power {
        #[arg(value_enum)]
        action: PowerArg,
        #[command(flatten)]
        sel: Selection,
    },
    /// Virtual media operations.
    Media {
        #[arg(value_enum)]
        action: MediaArg,
        #[command(flatten)]
        sel: Selection,
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

#[derive(clap::Args)]
pub struct Selection {
    /// The inventory (or install-config.yaml).
    pub inventory: PathBuf,
    /// Hosts to act on (default: all); repeat for more.
    #[arg(long)]
    pub host: Vec<String>,
    /// Seconds allowed per host.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Hosts handled at once.
    #[arg(long, default_value_t = 8)]
    pub parallel: usize,
}

/// Loads and checks the inventory, then resolves the selected hosts' BMCs.
pub fn targets(sel: &Selection) -> Result<Vec<nodenet_bmc::Target>, ExitCode> {
    nodenet_bmc::init_log();
    let loaded = nodenet_model::load_files(std::slice::from_ref(&sel.inventory))
        .map_err(super::usage_error)?;
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    if report.has_errors() {
        crate::report::print(&loaded.sources, &report.diagnostics, Format::Human);
        eprintln!("failed: the inventory has errors; nothing was sent to any BMC");
        return Err(super::problems());
    }
    let targets = nodenet_bmc::targets(&loaded.inventory, &sel.host).map_err(|(host, f)| {
        eprintln!("error: {host}: {f}");
        super::problems()
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

/// The summary every BMC command ends with.
pub fn print_results(
    results: &[(String, Result<Status, nodenet_bmc::BmcError>)],
    format: Format,
) -> ExitCode {
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
    if results.iter().all(|(_, r)| r.is_ok()) {
        ExitCode::SUCCESS
    } else {
        super::problems()
    }
}

pub fn run(args: Args) -> ExitCode {
    let (sel, format) = match &args.op {
        Op::Status { sel, format } => (sel, *format),
        Op::Power { sel, .. } | Op::Media { sel, .. } => (sel, Format::Human),
    };
    let targets = match targets(sel) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let timeout = Duration::from_secs(sel.timeout);
    let results = match args.op {
        Op::Status { .. } => nodenet_bmc::run_all(targets, sel.parallel, move |t| async move {
            nodenet_bmc::status(&t, timeout).await
        }),
        Op::Power { action, .. } => {
            let p = match action {
                PowerArg::On => Power::On,
                PowerArg::Off => Power::Off,
                PowerArg::Restart => Power::Restart,
            };
            nodenet_bmc::run_all(targets, sel.parallel, move |t| async move {
                nodenet_bmc::power(&t, p, timeout).await
            })
        }
        Op::Media {
            action: MediaArg::Eject,
            ..
        } => nodenet_bmc::run_all(targets, sel.parallel, move |t| async move {
            nodenet_bmc::eject(&t, timeout).await
        }),
    };
    print_results(&results, format)
}

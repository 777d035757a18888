//! `nodenet discover INVENTORY`: every host's NICs as its BMC lists them
//! (Redfish `EthernetInterfaces`), held against the inventory. `--write`
//! fills in the MACs the inventory lacks, edited in place; `-o FILE` saves
//! the discovery for `check --observed`. For an inventory read from
//! NetBox (or imported from it), the MACs are NetBox's to hold:
//! `--write-netbox` writes them there, after showing the change set.

use std::path::PathBuf;
use std::time::Duration;

use nodenet_bmc::discovery::{self, DiscoveryFile, Fill};
use nodenet_bmc::Select;

use super::{CliError, Exit, Outcome};
use crate::report::{self, Format};
use crate::ui::info;

#[derive(clap::Args)]
pub struct Args {
    /// The inventory.
    inventory: PathBuf,
    /// Hosts to read (default: all); repeat for more.
    #[arg(long, value_name = "HOST")]
    host: Vec<String>,
    #[command(flatten)]
    limits: super::bmc::Limits,
    /// Write the MACs found for NICs the inventory lists without one into
    /// the inventory (in place; shown as a diff without it).
    #[arg(long, conflicts_with = "write_netbox")]
    write: bool,
    /// Write them to the hosts' NetBox interfaces instead (MAC address
    /// objects, made primary; hosts read from NetBox or imported from it):
    /// the change set is shown first, each write is logged in NetBox's
    /// change log with a message naming nodenet, nothing is replaced or
    /// deleted. Without it, the change set is shown only.
    #[arg(long)]
    write_netbox: bool,
    /// Save the discovery here (JSON), for `check --observed`.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// `json`: one object on stdout.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Outcome {
    let select = if args.host.is_empty() {
        Select::All
    } else {
        Select::Hosts(args.host.clone())
    };
    let loaded = super::bmc::load_checked(&args.inventory)?;
    let targets = super::bmc::targets_in(&loaded, &args.inventory, &select)?;
    let timeout = Duration::from_secs(args.limits.timeout);
    let results =
        super::bmc::run_with_progress(targets, args.limits.parallel, move |t, p| async move {
            nodenet_bmc::discover(&t, timeout, &*p).await
        });
    let mut found = Vec::new();
    let mut failed = Vec::new();
    for (host, r) in results {
        match r {
            Ok(d) => found.push(d),
            Err(e) => failed.push((host, e.to_string())),
        }
    }
    let findings = discovery::compare(&loaded.inventory, &found, None);
    if let Some(path) = &args.output {
        let text = serde_json::to_string_pretty(&DiscoveryFile::new(found.clone()))
            .expect("a discovery serialises");
        nodenet_model::write_atomic(path, format!("{text}\n").as_bytes())
            .map_err(|e| CliError::io(path.display().to_string(), e))?;
    }
    let from_netbox = args
        .inventory
        .to_str()
        .is_some_and(nodenet_netbox::is_source);
    let netbox = netbox_changes(
        &loaded.inventory,
        &findings.fills,
        from_netbox,
        args.write_netbox,
    )?;
    let edit = if from_netbox {
        Edit::none()
    } else {
        fill_in(&args.inventory, &findings.fills)
    };
    let mut wrote = false;
    if let (true, Ok(Some(edited))) = (args.write, &edit.result) {
        nodenet_model::write_atomic(&args.inventory, edited.as_bytes())
            .map_err(|e| CliError::io(args.inventory.display().to_string(), e))?;
        wrote = true;
    }
    let errors = findings.diagnostics.iter().any(|d| d.is_error());
    match args.format {
        Format::Json => {
            let mut v = report::to_json(&loaded.sources, &findings.diagnostics);
            v["hosts"] = serde_json::json!(found);
            v["failed"] = serde_json::json!(failed
                .iter()
                .map(|(h, e)| serde_json::json!({"host": h, "error": e}))
                .collect::<Vec<_>>());
            v["fills"] = serde_json::json!(findings
                .fills
                .iter()
                .map(|f| serde_json::json!({"host": f.host, "nic": f.nic, "mac": f.mac}))
                .collect::<Vec<_>>());
            v["written"] = serde_json::json!(wrote);
            if let Some(n) = &netbox {
                v["netbox"] = n.to_json();
            }
            println!("{v}");
        }
        Format::Human => {
            println!("{:<20} {:<28} {:<18} LINK", "HOST", "NIC (BMC id)", "MAC");
            for d in &found {
                for n in &d.nics {
                    println!(
                        "{:<20} {:<28} {:<18} {}{}",
                        d.host,
                        n.id,
                        n.mac,
                        n.link.as_deref().unwrap_or("-"),
                        n.speed_mbps
                            .map(|s| format!(" {s} Mb/s"))
                            .unwrap_or_default()
                    );
                }
            }
            for (h, e) in &failed {
                println!("{h:<20} FAILED {e}");
            }
            report::print(&loaded.sources, &findings.diagnostics, args.format);
            if let Some(n) = &netbox {
                n.show();
            }
            match &edit.result {
                Ok(Some(_)) if wrote => info!(
                    "wrote {} MAC(s) into {}",
                    edit.applied.len(),
                    args.inventory.display()
                ),
                Ok(Some(_)) => {
                    print!("{}", edit.diff);
                    info!(
                        "{} MAC(s) to fill in: run again with --write to write them into {}",
                        edit.applied.len(),
                        args.inventory.display()
                    );
                }
                Ok(None) => {}
                Err(e) => info!("warning: {e}"),
            }
            for (fill, why) in &edit.skipped {
                info!(
                    "warning: {} of {} ({}) not written: {why}",
                    fill.nic, fill.host, fill.mac
                );
            }
            info!(
                "{}: {} host(s) read, {} failed: {}",
                if errors || !failed.is_empty() {
                    "failed"
                } else {
                    "ok"
                },
                found.len(),
                failed.len(),
                report::summary(&findings.diagnostics)
            );
        }
    }
    Ok(Exit::problems_if(errors || !failed.is_empty()))
}

/// What the fills change in NetBox, and whether it was written.
struct NetBoxWrite {
    set: nodenet_netbox::MacChangeSet,
    /// Fills of hosts that NetBox does not hold (no device label).
    outside: Vec<Fill>,
    written: Option<usize>,
}

/// The NetBox change set of the fills of hosts read from NetBox (read
/// when the inventory is a `netbox:` query or `--write-netbox` asks),
/// written with `write`.
fn netbox_changes(
    inv: &nodenet_model::Inventory,
    fills: &[Fill],
    from_netbox: bool,
    write: bool,
) -> Result<Option<NetBoxWrite>, CliError> {
    if !(from_netbox || write) {
        return Ok(None);
    }
    let device = |host: &str| {
        inv.hosts
            .iter()
            .find(|h| h.name.value == host)?
            .labels
            .get(nodenet_netbox::DEVICE_LABEL)?
            .parse::<u64>()
            .ok()
    };
    if write && !inv.hosts.iter().any(|h| device(&h.name.value).is_some()) {
        return Err(CliError::usage(format!(
            "--write-netbox: no host of the inventory is a NetBox device (label `{}`): read it from NetBox (`netbox:?cluster=NAME`) or import it (`nodenet import --from netbox:…`)",
            nodenet_netbox::DEVICE_LABEL
        )));
    }
    let (mut held, mut outside) = (Vec::new(), Vec::new());
    for f in fills {
        match device(&f.host) {
            Some(id) => held.push(nodenet_netbox::MacFill {
                host: f.host.clone(),
                device: id,
                nic: f.nic.clone(),
                mac: f.mac.clone(),
                why: "its BMC lists it (Redfish EthernetInterfaces)".into(),
            }),
            None => outside.push(f.clone()),
        }
    }
    let client = nodenet_netbox::Client::from_env()?;
    let set = nodenet_netbox::plan_macs(&client, &held)?;
    let written = if write && !set.changes.is_empty() {
        Some(nodenet_netbox::apply_macs(&client, &set)?)
    } else {
        write.then_some(0)
    };
    Ok(Some(NetBoxWrite {
        set,
        outside,
        written,
    }))
}

impl NetBoxWrite {
    fn action(a: &nodenet_netbox::MacAction) -> &'static str {
        match a {
            nodenet_netbox::MacAction::Create => "new MAC address object, made primary",
            nodenet_netbox::MacAction::Assign(_) => {
                "its unassigned MAC address object, made primary"
            }
            nodenet_netbox::MacAction::MakePrimary(_) => "its MAC address object, made primary",
        }
    }

    fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let fill =
            |f: &nodenet_netbox::MacFill| json!({"host": f.host, "nic": f.nic, "mac": f.mac});
        json!({
            "changes": self.set.changes.iter().map(|c| {
                let mut v = fill(&c.fill);
                v["interface"] = json!(c.page);
                v["action"] = json!(Self::action(&c.action));
                v
            }).collect::<Vec<_>>(),
            "refused": self.set.refused.iter().map(|r| {
                let mut v = fill(&r.fill);
                v["why"] = json!(r.why);
                v
            }).collect::<Vec<_>>(),
            "present": self.set.present.iter().map(fill).collect::<Vec<_>>(),
            "not_in_netbox": self.outside.iter().map(|f| json!({"host": f.host, "nic": f.nic, "mac": f.mac})).collect::<Vec<_>>(),
            "written": self.written.unwrap_or(0),
        })
    }

    /// The change set (stdout), then what was written (stderr).
    fn show(&self) {
        let set = &self.set;
        if !set.changes.is_empty() {
            println!("NetBox: {} interface(s) to change", set.changes.len());
            for c in &set.changes {
                println!(
                    "  {} {}: primary MAC address (none) -> {}  {} ({})",
                    c.fill.host,
                    c.fill.nic,
                    c.fill.mac,
                    c.page,
                    Self::action(&c.action)
                );
            }
        }
        for r in &set.refused {
            info!(
                "warning: {} of {} ({}) not written to NetBox: {}",
                r.fill.nic, r.fill.host, r.fill.mac, r.why
            );
        }
        for f in &self.outside {
            info!(
                "warning: {} of {} ({}) not written to NetBox: the host is no NetBox device (label `{}`)",
                f.nic,
                f.host,
                f.mac,
                nodenet_netbox::DEVICE_LABEL
            );
        }
        match self.written {
            Some(n) if n > 0 => info!(
                "wrote {n} MAC address(es) to NetBox; each change is in its change log with the message `nodenet discover: …`"
            ),
            Some(_) => info!("nothing to write to NetBox"),
            None if !set.changes.is_empty() => info!(
                "{} MAC address(es) to write: run again with --write-netbox to write them to NetBox",
                set.changes.len()
            ),
            None => {}
        }
    }
}

/// The inventory with the fills written in, and what it changes.
struct Edit {
    /// The new text (`None`: nothing to fill in), or why the file is not
    /// edited at all.
    result: Result<Option<String>, String>,
    applied: Vec<Fill>,
    skipped: Vec<(Fill, String)>,
    /// `-`/`+` lines with their line numbers.
    diff: String,
}

impl Edit {
    fn none() -> Edit {
        Edit {
            result: Ok(None),
            applied: Vec::new(),
            skipped: Vec::new(),
            diff: String::new(),
        }
    }
}

fn fill_in(inventory: &PathBuf, fills: &[Fill]) -> Edit {
    let mut edit = Edit::none();
    if fills.is_empty() {
        return edit;
    }
    let original = match std::fs::read_to_string(inventory) {
        Ok(t) => t,
        Err(e) => {
            edit.result = Err(format!("{} cannot be read: {e}", inventory.display()));
            return edit;
        }
    };
    let mut text = original.clone();
    for f in fills {
        match nodenet_model::edit::set_nic_mac(&text, &f.host, &f.nic, &f.mac) {
            Ok(t) => {
                text = t;
                edit.applied.push(f.clone());
            }
            Err(why) => edit.skipped.push((f.clone(), why)),
        }
    }
    if edit.applied.is_empty() {
        return edit;
    }
    edit.diff = line_diff(&original, &text);
    edit.result = Ok(Some(text));
    edit
}

/// The lines that differ, as `-N old` / `+N new` (the edits change lines
/// in place or insert them).
fn line_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            // An inserted line: the next old line is the one after it.
            (Some(x), Some(y)) if b.get(j + 1) == Some(x) => {
                out.push_str(&format!("+{:<5} {y}\n", j + 1));
                j += 1;
            }
            (Some(x), Some(y)) => {
                out.push_str(&format!("-{:<5} {x}\n+{:<5} {y}\n", i + 1, j + 1));
                i += 1;
                j += 1;
            }
            (None, Some(y)) => {
                out.push_str(&format!("+{:<5} {y}\n", j + 1));
                j += 1;
            }
            (Some(x), None) => {
                out.push_str(&format!("-{:<5} {x}\n", i + 1));
                i += 1;
            }
            (None, None) => break,
        }
    }
    out
}

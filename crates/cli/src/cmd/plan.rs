//! `nodenet plan OLD NEW`: what a new inventory version changes on which
//! host, how risky each change is, and the rollout it implies.

use std::path::PathBuf;

use super::{CliError, Exit, Outcome};
use crate::report::Format;
use crate::ui::{info, Phases};

#[derive(clap::Args)]
pub struct Args {
    /// The version in place: an input `check` reads (file or directory),
    /// or a previous render's output directory.
    old: PathBuf,
    /// The new version (must check without errors).
    new: PathBuf,
    /// Write the manifests that carry the change here: the policies by
    /// risk (nncp/<risk>-<role>.yaml), the MachineConfigs that change and
    /// the MachineConfiguration that keeps them from rebooting nodes.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace the output directory even if it holds the output of other
    /// inputs (as `render --force`).
    #[arg(long)]
    force: bool,
    /// `json`: one object on stdout (docs/plan.md).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// `rehearse.json` from `nodenet lab rehearse OLD NEW`: the disruption
    /// measured in the lab, shown beside each risk class.
    #[arg(long, value_name = "REHEARSE.json")]
    measured: Option<PathBuf>,
    /// What the nodes run: NodeNetworkStates (`oc get nns -o yaml`, a
    /// List, or a directory of them), held against OLD to say which node
    /// drifted from it, apart from what NEW changes.
    #[arg(long, value_name = "NNS")]
    running: Vec<PathBuf>,
}

pub fn run(args: Args) -> Outcome {
    let mut phases = Phases::start();
    let load = |path: &PathBuf| super::load_files(&[rendered_carrier(path)]);
    // The two versions are read side by side (each a large file, often).
    let (old, new) = std::thread::scope(|s| {
        let old = s.spawn(|| load(&args.old));
        let new = load(&args.new);
        (old.join().expect("loading does not panic"), new)
    });
    let (old, new) = (old?, new?);
    phases.mark("load");
    // The old version is what runs: read as it is. The new one must be
    // sound before anything is rolled out.
    if let Some(e) = old.diagnostics.iter().find(|d| d.is_error()) {
        let message = format!(
            "{} cannot be read as an inventory: {}",
            args.old.display(),
            e.message
        );
        return Err(CliError::usage(message).with_findings(old.sources, old.diagnostics));
    }
    if old.clusters().len() > 1 || new.clusters().len() > 1 {
        return plan_sites(&args, old, new, phases);
    }
    // NEW checked as `check` says it, render's findings included (a state
    // past etcd's limits is refused here as there), and the versions
    // compared, side by side: each on every core, filling the others'
    // serial stretches. The comparison counts only for a NEW that checks
    // clean. What the nodes report (`--running`) is read and held against
    // OLD beside them too; a NEW that does not check clean is said first.
    let loading = new.diagnostics;
    let (mut report, (found, openshift), plan, drift) = std::thread::scope(|s| {
        let report = s.spawn(|| nodenet_check::check(&new.inventory, loading));
        let found = s.spawn(|| super::check::render_findings(&new.inventory));
        let drift = s.spawn(|| running(&args, &old.inventory));
        let plan = nodenet_plan::plan(&old.inventory, &new.inventory);
        let report = report.join().expect("checking does not panic");
        let found = found.join().expect("checking does not panic");
        (
            report,
            found,
            plan,
            drift.join().expect("comparing does not panic"),
        )
    });
    report.diagnostics.extend(found);
    phases.mark("check and compare");
    if report.has_errors() {
        return Err(not_clean(&args, new.sources, report.diagnostics));
    }
    let plan = plan.map_err(CliError::usage)?;
    let rollout = nodenet_plan::rollout::rollout(&plan, &new.inventory);
    phases.mark("rollout");
    let drift = drift?;
    if args.output.is_some() {
        let mut files = rollout.files_with(&new.inventory, openshift);
        files.extend(nodenet_plan::added_hosts_files(
            &plan,
            &old.inventory,
            &new.inventory,
        ));
        write_plan(&args, &new.sources, files)?;
        phases.mark("write");
    }
    let measured = match &args.measured {
        None => None,
        Some(p) => {
            let text =
                std::fs::read_to_string(p).map_err(|e| CliError::io(p.display().to_string(), e))?;
            let m = nodenet_lab::rehearse::read_measured(&text)
                .map_err(|e| CliError::usage(format!("{}: {e}", p.display())))?;
            Some(m)
        }
    };
    phases.print();
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::json!({
                "cluster": plan.cluster,
                "hosts": plan.hosts,
                "unchanged": plan.unchanged,
                "changes": plan.changes,
                "rollout": rollout,
                "measured": measured,
                "drift": drift,
            })
        ),
        Format::Human => {
            if let Some(d) = &drift {
                print!("{}", nodenet_plan::drift::render_text(d));
            }
            print!("{}", nodenet_plan::render_text(&plan));
            if !plan.changes.is_empty() {
                println!("rollout:\n{}", rollout.render_text());
            }
            if let Some(m) = &measured {
                print!("{}", measured_text(&plan, m));
            }
            let count = |k: nodenet_plan::HostChangeKind| {
                plan.changes.iter().filter(|c| c.change == k).count()
            };
            info!(
                "{} cluster field(s) changed; {} host(s): {} changed, {} added, {} removed, {} unchanged",
                plan.cluster.len(),
                plan.hosts,
                count(nodenet_plan::HostChangeKind::Modified),
                count(nodenet_plan::HostChangeKind::Added),
                count(nodenet_plan::HostChangeKind::Removed),
                plan.unchanged
            );
            if let Some(d) = &drift {
                info!(
                    "running: {} node(s) drifted from {}, {} as it says, {} host(s) not reported{}",
                    d.drifted.len(),
                    args.old.display(),
                    d.as_described,
                    d.unreported.len(),
                    if d.is_empty() {
                        ""
                    } else {
                        " (this plan's policies carry what NEW changes, not what drifted: `nodenet render NEW` writes whole states, nncp/, that bring the drifted nodes back)"
                    }
                );
            }
        }
    }
    let changed = !plan.is_empty() || drift.as_ref().is_some_and(|d| !d.is_empty());
    super::drop_at_exit((old, new.inventory, report.hosts, plan, rollout));
    Ok(Exit::problems_if(changed))
}

/// `--running`: the NodeNetworkStates read and held against OLD; their
/// problems (YAML, a state cut short, a node OLD lacks) are said at their
/// lines, and nothing is planned (exit 2).
fn running(
    args: &Args,
    old: &nodenet_model::Inventory,
) -> Result<Option<nodenet_plan::drift::Drift>, CliError> {
    if args.running.is_empty() {
        return Ok(None);
    }
    let loaded = super::load_files(&args.running)?;
    let refuse = |diags: Vec<nodenet_model::Diagnostic>| {
        CliError::usage(format!(
            "{} cannot be read as what the nodes run: nothing planned",
            args.running[0].display()
        ))
        .with_findings(loaded.sources.clone(), diags)
    };
    if loaded.diagnostics.iter().any(|d| d.is_error()) {
        return Err(refuse(loaded.diagnostics.clone()));
    }
    if loaded.running.is_empty() || !loaded.inventory.hosts.is_empty() {
        return Err(CliError::usage(format!(
            "{}: --running takes NodeNetworkStates (`oc get nns -o yaml`) and nothing else",
            args.running[0].display()
        )));
    }
    nodenet_plan::drift::drift(old, &loaded.running)
        .map(Some)
        .map_err(refuse)
}

/// NEW has errors: they are said, nothing is planned (exit 2).
fn not_clean(
    args: &Args,
    sources: nodenet_model::SourceMap,
    mut diags: Vec<nodenet_model::Diagnostic>,
) -> CliError {
    // In order, as `check` says them (render's findings come last).
    nodenet_model::diag::sort(&mut diags);
    CliError::usage(format!(
        "{} does not check clean: nothing planned",
        args.new.display()
    ))
    .with_findings(sources, diags)
}

/// The rollout's manifests into `-o DIR`, with a manifest as render's:
/// planning the same versions again replaces the directory; another plan
/// or a render needs --force.
fn write_plan(
    args: &Args,
    sources: &nodenet_model::SourceMap,
    files: Vec<nodenet_render::OutFile>,
) -> Result<(), CliError> {
    let Some(dir) = &args.output else {
        return Ok(());
    };
    let provenance = nodenet_render::Provenance::new(
        vec![
            nodenet_render::Provenance::input_name(&args.old),
            nodenet_render::Provenance::input_name(&args.new),
        ],
        sources,
    );
    nodenet_render::output::guard_provenance(dir, &provenance, args.force)
        .and_then(|()| nodenet_render::output::write_tree(dir, files, Some(&provenance)))
        .map(drop)
        .map_err(CliError::from)
}

/// A fleet of sites (ZTP): sites matched by cluster name, each planned as
/// a cluster (its rollout under `sites/<cluster>/` with `-o`); sites only
/// in NEW are added, sites only in OLD removed, whole.
fn plan_sites(
    args: &Args,
    old: nodenet_model::Loaded,
    mut new: nodenet_model::Loaded,
    mut phases: Phases,
) -> Outcome {
    use nodenet_render::ztp::site_name;
    let loading = std::mem::take(&mut new.diagnostics);
    let new_clusters = new.clusters();
    let mut report = nodenet_check::check_clusters(&new_clusters, loading);
    for inv in &new_clusters {
        report
            .diagnostics
            .extend(super::check::render_findings(inv).0);
    }
    phases.mark("check");
    if report.has_errors() {
        return Err(not_clean(args, new.sources.clone(), report.diagnostics));
    }
    let old_clusters = old.clusters();
    let before: std::collections::HashMap<String, &nodenet_model::Inventory> =
        old_clusters.iter().map(|c| (site_name(c), *c)).collect();
    let after: std::collections::HashSet<String> =
        new_clusters.iter().map(|c| site_name(c)).collect();
    let mut sites = Vec::new();
    let mut files = Vec::new();
    let mut changed = false;
    for inv in &new_clusters {
        let name = site_name(inv);
        let Some(was) = before.get(&name) else {
            changed = true;
            sites.push(
                serde_json::json!({"cluster": name, "site": "added", "hosts": inv.hosts.len()}),
            );
            continue;
        };
        let plan = nodenet_plan::plan(was, inv)
            .map_err(|e| CliError::usage(format!("site `{name}`: {e}")))?;
        let rollout = nodenet_plan::rollout::rollout(&plan, inv);
        if args.output.is_some() {
            for mut f in rollout.files(inv) {
                f.path = format!("sites/{name}/{}", f.path);
                files.push(f);
            }
        }
        changed |= !plan.is_empty();
        if args.format == Format::Human && !plan.is_empty() {
            println!("site {name}:");
            print!("{}", nodenet_plan::render_text(&plan));
            println!("rollout:\n{}", rollout.render_text());
        }
        sites.push(serde_json::json!({
            "cluster": name,
            "site": if plan.is_empty() { "unchanged" } else { "changed" },
            "plan": {"cluster": plan.cluster, "hosts": plan.hosts, "unchanged": plan.unchanged, "changes": plan.changes},
            "rollout": rollout,
        }));
    }
    let mut removed: Vec<&String> = before.keys().filter(|n| !after.contains(*n)).collect();
    removed.sort();
    for name in removed {
        changed = true;
        sites.push(serde_json::json!({"cluster": name, "site": "removed", "hosts": before[name].hosts.len()}));
    }
    phases.mark("plan");
    if args.output.is_some() {
        write_plan(args, &new.sources, files)?;
        phases.mark("write");
    }
    phases.print();
    let count = |what: &str| sites.iter().filter(|s| s["site"] == what).count();
    match args.format {
        Format::Json => println!("{}", serde_json::json!({"sites": sites})),
        Format::Human => {
            for s in sites
                .iter()
                .filter(|s| s["site"] == "added" || s["site"] == "removed")
            {
                println!(
                    "site {}: {} ({} host(s))",
                    s["cluster"].as_str().unwrap_or("?"),
                    s["site"].as_str().unwrap_or("?"),
                    s["hosts"]
                );
            }
            info!(
                "{} site(s): {} changed, {} added, {} removed, {} unchanged",
                sites.len(),
                count("changed"),
                count("added"),
                count("removed"),
                count("unchanged")
            );
        }
    }
    drop(old_clusters);
    drop(new_clusters);
    super::drop_at_exit((old, new, report.clusters));
    Ok(Exit::problems_if(changed))
}

/// A render's output directory is read through its install-config.yaml:
/// it holds every host with its role, boot MAC, BMC and network, which
/// the directory's other files (host states, MachineConfigs, policies,
/// scale-out manifests) repeat five times over.
fn rendered_carrier(path: &std::path::Path) -> PathBuf {
    let install_config = path.join("install-config.yaml");
    if path.join("manifest.json").is_file() && install_config.is_file() {
        install_config
    } else {
        path.to_path_buf()
    }
}

/// The lab's measurements beside each risk class: per class, each host the
/// plan changes with how its rehearsal ended and the most connectivity it
/// lost (docs/lab.md).
fn measured_text(plan: &nodenet_plan::Plan, m: &[nodenet_lab::rehearse::Measured]) -> String {
    let mut out = String::from("measured in the lab (lab rehearse):\n");
    for risk in [
        nodenet_plan::Risk::Additive,
        nodenet_plan::Risk::Modifying,
        nodenet_plan::Risk::Disruptive,
    ] {
        let hosts: Vec<String> = plan
            .changes
            .iter()
            .filter(|c| c.risk == risk)
            .map(|c| match m.iter().find(|x| x.host == c.host) {
                Some(x) => format!(
                    "{} {}, {} ms lost{}",
                    c.host,
                    x.outcome,
                    x.lost_ms,
                    if x.converged {
                        ""
                    } else {
                        ", not as intended after"
                    }
                ),
                None => format!("{} not rehearsed", c.host),
            })
            .collect();
        if !hosts.is_empty() {
            out.push_str(&format!("  {}: {}\n", risk.as_str(), hosts.join("; ")));
        }
    }
    out
}

use std::path::PathBuf;

use super::{Exit, Outcome};
use crate::report::{self, Format};
use crate::ui::{info, Phases};

#[derive(clap::Args)]
pub struct Args {
    /// Inventory, install-config.yaml, agent-config.yaml or NMState files
    /// (several files form one cluster, e.g. install-config + agent-config).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// `json`: one object on stdout, whatever the outcome
    /// (docs/output.md); `sarif`: SARIF 2.1.0 on stdout, for code-scanning UIs.
    #[arg(long, value_enum, default_value_t)]
    format: CheckFormat,
    /// Observations (`nodenet lldp --format json` files, `nodenet discover
    /// -o` files, or directories of them): compare each node's cabling and
    /// its NICs' MACs with the inventory.
    #[arg(long, num_args = 1..)]
    observed: Vec<PathBuf>,
    /// Say the findings of these files' clusters only (the sites a change
    /// touches, `git diff --name-only`), plus the fleet's rules across
    /// every cluster of PATH (a MAC, BMC, address or cluster name used
    /// twice).
    #[arg(long, num_args = 1..)]
    only: Vec<PathBuf>,
    /// `--only` the files changed since the git revision REF (committed
    /// since, staged, unstaged or new): a pull request's sites against its
    /// base (`--changed-since origin/main`), a commit's in a pre-commit hook
    /// (`--changed-since HEAD`).
    #[arg(long, value_name = "REF", conflicts_with = "only")]
    changed_since: Option<String>,
}

/// The files changed since `rev` in the git work tree holding `path`,
/// absolute: what `git diff REF` names, and the files git does not track
/// yet (not ignored).
fn changed_since(rev: &str, path: &std::path::Path) -> Result<Vec<PathBuf>, super::CliError> {
    let dir = if path.is_dir() {
        path
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."))
    };
    let git = |args: &[&str]| -> Result<String, super::CliError> {
        let o = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .map_err(|e| super::CliError::usage(format!("--changed-since runs git: {e}")))?;
        if !o.status.success() {
            return Err(super::CliError::usage(format!(
                "--changed-since {rev}: git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?.trim());
    let mut names = git(&["diff", "--name-only", "-z", rev, "--"])?;
    names.push_str(&git(&[
        "ls-files",
        "--others",
        "--exclude-standard",
        "-z",
        "--full-name",
    ])?);
    Ok(names
        .split('\0')
        .filter(|n| !n.is_empty())
        .map(|n| top.join(n))
        .collect())
}

#[derive(Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
enum CheckFormat {
    #[default]
    Human,
    Json,
    Sarif,
}

pub fn run(args: Args) -> Outcome {
    let sarif = args.format == CheckFormat::Sarif;
    // What cannot be checked at all is said as JSON in SARIF mode too.
    let format = match args.format {
        CheckFormat::Human => Format::Human,
        CheckFormat::Json | CheckFormat::Sarif => Format::Json,
    };
    let mut phases = Phases::start();
    let mut loaded = super::load_files(&args.files)?;
    if !args.observed.is_empty() {
        super::one_cluster(&loaded, "check --observed")?;
    }
    let observed = super::wires::read_observed(&args.observed, &mut loaded.sources)?;
    phases.mark("load");
    let loading = std::mem::take(&mut loaded.diagnostics);
    let clusters = loaded.clusters();
    let only = match &args.changed_since {
        Some(rev) => Some(changed_since(rev, &args.files[0])?),
        None => (!args.only.is_empty()).then(|| args.only.clone()),
    };
    let mut report = if let Some(only) = only {
        let touched: std::collections::HashSet<PathBuf> =
            only.iter().filter_map(|p| p.canonicalize().ok()).collect();
        let sources = &loaded.sources;
        // The input files the change touches, each looked at once.
        let told: std::collections::HashSet<u32> = (0..u32::MAX)
            .take_while(|id| sources.get(*id).is_some())
            .filter(|id| {
                std::fs::canonicalize(sources.name(*id)).is_ok_and(|p| touched.contains(&p))
            })
            .collect();
        let in_touched = |span: Option<nodenet_model::Span>| {
            span.is_none_or(|s| told.contains(&sources.resolve(s).0.file))
        };
        let loading = loading.into_iter().filter(|d| in_touched(d.span)).collect();
        nodenet_check::check_clusters_where(&clusters, loading, &|inv| in_touched(inv.cluster.span))
    } else {
        nodenet_check::check_clusters(&clusters, loading)
    };
    // What render would do to stay within etcd's limits (or refuse),
    // said before anything is rendered.
    for inv in &clusters {
        report.diagnostics.extend(render_findings(inv).0);
    }
    let checked = what_was_checked(&clusters);
    drop(clusters);
    nodenet_model::diag::sort(&mut report.diagnostics);
    if !args.observed.is_empty() {
        let mut observed_diags = observed.diagnostics;
        observed_diags.extend(nodenet_wires::compare::compare(
            &loaded.inventory,
            &observed.lldp,
        ));
        for (d, span) in &observed.discoveries {
            observed_diags.extend(
                nodenet_bmc::discovery::compare(&loaded.inventory, &d.hosts, Some(*span))
                    .diagnostics,
            );
        }
        report.diagnostics.extend(observed_diags);
        nodenet_model::diag::sort(&mut report.diagnostics);
        phases.mark("compare observations");
    }
    phases.mark("check");
    phases.print();
    if sarif {
        println!(
            "{}",
            crate::sarif::to_sarif(&loaded.sources, &report.diagnostics)
        );
    } else {
        report::print(&loaded.sources, &report.diagnostics, format);
    }
    if format == Format::Human {
        info!(
            "{}: {} checked: {}",
            if report.has_errors() { "failed" } else { "ok" },
            checked,
            report::summary(&report.diagnostics)
        );
    }
    let failed = report.has_errors();
    super::drop_at_exit((loaded, report));
    Ok(Exit::problems_if(failed))
}

/// What render would decide or refuse for `inv` (etcd's limits, the
/// conversions of ZTP's inputs), for `check` and `plan` to say before
/// anything is rendered; with the `openshift/` files made on the way,
/// when they were.
pub(super) fn render_findings(
    inv: &nodenet_model::Inventory,
) -> (
    Vec<nodenet_model::Diagnostic>,
    Option<Vec<nodenet_render::OutFile>>,
) {
    let (mut found, openshift) = nodenet_render::fleet_findings(inv);
    found.extend(nodenet_render::ztp::conversion_findings(inv));
    (found, openshift)
}

/// "5 host(s)", or "5 host(s) and 2 change(s)" when partial states (NNCPs,
/// MachineConfig files, bare NMState) were among the inputs; "3
/// cluster(s), ..." for a fleet.
fn what_was_checked(clusters: &[&nodenet_model::Inventory]) -> String {
    let all = || clusters.iter().flat_map(|c| &c.hosts);
    let changes = all()
        .filter(|h| h.scope() == nodenet_model::Scope::Partial)
        .count();
    let hosts = all().count() - changes;
    let what = match (hosts, changes) {
        (_, 0) => format!("{hosts} host(s)"),
        (0, _) => format!("{changes} change(s) to hosts"),
        _ => format!("{hosts} host(s) and {changes} change(s) to hosts"),
    };
    match clusters.len() {
        0 | 1 => what,
        n => format!("{n} cluster(s), {what}"),
    }
}

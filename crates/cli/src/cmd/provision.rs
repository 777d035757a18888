//! `nodenet provision`: every selected host boots its own ISO through its
//! BMC (Redfish virtual media), in parallel.

use std::path::PathBuf;
use std::time::Duration;

use super::{CliError, Exit, Outcome};
use crate::report::Format;
use crate::ui::info;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sel: super::bmc::Destructive,
    /// Where the BMCs fetch the images: host H boots `<base>/H.iso`.
    #[arg(long, required_unless_present = "lab")]
    image_url_base: Option<String>,
    /// Provision the VMs of `nodenet lab up` through the lab's BMCs (each
    /// host's BMC address stands for its lab BMC); the image URL base,
    /// --build-from and --image-dir default to the lab's.
    #[arg(long)]
    lab: bool,
    /// The lab's directory [default: $XDG_CACHE_HOME/nodenet/lab].
    #[arg(long, requires = "lab")]
    lab_dir: Option<PathBuf>,
    /// Build each host's ISO first from this CoreOS live ISO, into --image-dir.
    #[arg(long, requires = "image_dir")]
    build_from: Option<PathBuf>,
    /// Directory for the built ISOs (serve it with `nodenet serve`).
    #[arg(long)]
    image_dir: Option<PathBuf>,
    /// `json`: one object on stdout, whatever the outcome (docs/output.md).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(mut args: Args) -> Outcome {
    let format = args.format;
    let select = args.sel.select("provision")?;
    let lab = if args.lab {
        let dir = args
            .lab_dir
            .clone()
            .unwrap_or_else(nodenet_lab::state::default_dir);
        let (dir, bmcs) = lab_bmcs(&dir)?;
        args.image_url_base.get_or_insert(bmcs.image_url.clone());
        args.build_from
            .get_or_insert(dir.join(nodenet_lab::bmc::LIVE_ISO));
        args.image_dir
            .get_or_insert(dir.join(nodenet_lab::bmc::IMAGES_DIR));
        Some((dir, bmcs))
    } else {
        None
    };
    // The live ISO is read for every host: a wrong path is said at once,
    // before any BMC is touched.
    if let Some(base) = &args.build_from {
        std::fs::File::open(base).map_err(|e| {
            CliError::io(
                base.display().to_string(),
                format!("--build-from {}: {e}", base.display()),
            )
        })?;
    }
    let targets = match &lab {
        Some((dir, bmcs)) => lab_targets(&args.sel.inventory, &select, dir, bmcs)?,
        None => super::bmc::targets(&args.sel.inventory, &select)?,
    };
    let base = args
        .image_url_base
        .as_deref()
        .expect("required unless --lab, which sets it")
        .trim_end_matches('/')
        .to_string();
    if args.sel.dry_run {
        let build = |host: &str| match (&args.build_from, &args.image_dir) {
            (Some(live), Some(dir)) => format!(
                "build {} from {} (its keyfiles embedded); ",
                dir.join(format!("{host}.iso")).display(),
                live.display()
            ),
            _ => String::new(),
        };
        let plan = |host: &str| {
            format!(
                "{}{}",
                build(host),
                nodenet_bmc::provision_plan(&format!("{base}/{host}.iso"))
            )
        };
        super::bmc::print_plan(&targets, &plan, format);
        return Ok(Exit::Success);
    }
    if !args
        .sel
        .confirmed("provision (power off, boot from new media)", &targets)
    {
        return Err(CliError::usage("aborted: nothing was sent to any BMC").code("aborted"));
    }
    if let (Some(live), Some(dir)) = (&args.build_from, &args.image_dir) {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::io(dir.display().to_string(), format!("{}: {e}", dir.display()))
        })?;
        for t in &targets {
            let boot = nodenet_render::boot_network_for_host(
                std::slice::from_ref(&args.sel.inventory),
                &t.host,
            )
            .map_err(|e| CliError::usage(format!("{}: {e}", t.host)).exit(super::PROBLEMS))?;
            let e = nodenet_image::iso::Embed {
                keyfiles: &boot.keyfiles,
                links: &boot.links,
                ignition: None,
                drop_ignition: false,
            };
            let out = dir.join(format!("{}.iso", t.host));
            if let Err(err) = nodenet_image::iso::embed_to(live, &out, &e) {
                let code = if err.is_input_problem() {
                    super::PROBLEMS
                } else {
                    super::USAGE
                };
                return Err(CliError::io(
                    live.display().to_string(),
                    format!(
                        "{}: building {} from {}: {err}",
                        t.host,
                        out.display(),
                        live.display()
                    ),
                )
                .exit(code));
            }
            info!("{}: built {}", t.host, out.display());
        }
    }
    let timeout = Duration::from_secs(args.sel.limits.timeout);
    let results = super::bmc::run_with_progress(targets, args.sel.limits.parallel, move |t, p| {
        let url = format!("{base}/{}.iso", t.host);
        async move { nodenet_bmc::provision(&t, &url, timeout, &*p).await }
    });
    Ok(super::bmc::print_results(&results, format))
}

/// The lab in `dir` and its BMCs; none (no lab, a lab without BMCs) is a
/// usage error.
fn lab_bmcs(dir: &std::path::Path) -> Result<(PathBuf, nodenet_lab::bmc::LabBmcs), CliError> {
    let dir = dir.canonicalize().unwrap_or(dir.to_path_buf());
    let st = nodenet_lab::state::LabState::load(&dir)
        .map_err(|e| CliError::usage(format!("--lab: {e}")))?;
    let bmcs = st.bmc.ok_or_else(|| {
        CliError::usage(format!(
            "--lab: the lab in {} has no BMCs (sushy-emulator was not found when it came up)",
            dir.display()
        ))
    })?;
    Ok((dir, bmcs))
}

/// The selected hosts' lab BMCs (the inventory, loaded and checked, says
/// which hosts; the lab says where their BMCs are and how to log in). With
/// --all, the hosts the lab has; a host named that the lab lacks is an
/// error.
fn lab_targets(
    inventory: &PathBuf,
    select: &nodenet_bmc::Select,
    dir: &std::path::Path,
    bmcs: &nodenet_lab::bmc::LabBmcs,
) -> Result<Vec<nodenet_bmc::Target>, CliError> {
    let loaded = super::bmc::load_checked(inventory)?;
    let password = nodenet_lab::bmc::password(dir)
        .map_err(|e| CliError::io(dir.display().to_string(), e.to_string()))?;
    let usage = |m: String| Err(CliError::usage(m));
    let hosts = &loaded.inventory.hosts;
    if let nodenet_bmc::Select::Hosts(named) = select {
        for name in named {
            if !hosts.iter().any(|h| &h.name.value == name) {
                return usage(format!("{name}: no such host in {}", inventory.display()));
            }
            if bmcs.system(name).is_none() {
                return usage(format!(
                    "{name} is not in the lab in {} (`nodenet lab up --hosts`)",
                    dir.display()
                ));
            }
        }
    }
    // In inventory order: with --all, the hosts the lab has.
    let out: Vec<nodenet_bmc::Target> = hosts
        .iter()
        .filter(|h| match select {
            nodenet_bmc::Select::All => true,
            nodenet_bmc::Select::Hosts(named) => named.contains(&h.name.value),
        })
        .filter_map(|h| bmcs.system(&h.name.value))
        .map(|sys| nodenet_bmc::Target {
            host: sys.host.clone(),
            base: bmcs.base.clone(),
            system: Some(bmcs.system_path(sys)),
            username: nodenet_lab::bmc::USER.into(),
            password: nodenet_model::Secret::new(password.clone()),
            insecure: false,
        })
        .collect();
    if out.is_empty() {
        return usage(format!(
            "none of the hosts of {} is in the lab in {}",
            inventory.display(),
            dir.display()
        ));
    }
    Ok(out)
}

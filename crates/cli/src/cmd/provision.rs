//! `nodenet provision`: every selected host boots its own ISO through its
//! BMC (Redfish virtual media), in parallel.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::report::Format;
use crate::ui::info;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sel: super::bmc::Destructive,
    /// Where the BMCs fetch the images: host H boots `<base>/H.iso`.
    #[arg(long)]
    image_url_base: String,
    /// Build each host's ISO first from this CoreOS live ISO, into --image-dir.
    #[arg(long, requires = "image_dir")]
    build_from: Option<PathBuf>,
    /// Directory for the built ISOs (serve it with `nodenet serve`).
    #[arg(long)]
    image_dir: Option<PathBuf>,
    /// `json`: one object on stdout, whatever the outcome (README: JSON output).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> ExitCode {
    let format = args.format;
    let select = match args.sel.select("provision") {
        Ok(s) => s,
        Err(f) => return f.report(format),
    };
    // The live ISO is read for every host: a wrong path is said at once,
    // before any BMC is touched.
    if let Some(base) = &args.build_from {
        if let Err(e) = std::fs::File::open(base) {
            return super::Failure::io(
                base.display().to_string(),
                format!("--build-from {}: {e}", base.display()),
            )
            .report(format);
        }
    }
    let targets = match super::bmc::targets(&args.sel.inventory, &select, format) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let base = args.image_url_base.trim_end_matches('/').to_string();
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
        return ExitCode::SUCCESS;
    }
    if !args
        .sel
        .confirmed("provision (power off, boot from new media)", &targets)
    {
        eprintln!("aborted: nothing was sent to any BMC");
        return ExitCode::from(super::USAGE);
    }
    if let (Some(live), Some(dir)) = (&args.build_from, &args.image_dir) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return super::Failure::io(
                dir.display().to_string(),
                format!("{}: {e}", dir.display()),
            )
            .report(format);
        }
        for t in &targets {
            let keyfiles = match nodenet_render::keyfiles_for_host(
                std::slice::from_ref(&args.sel.inventory),
                &t.host,
            ) {
                Ok(k) => k
                    .into_iter()
                    .map(|(n, c)| (n, c.into_bytes()))
                    .collect::<Vec<_>>(),
                Err(e) => {
                    return super::Failure::usage(format!("{}: {e}", t.host))
                        .exit(super::PROBLEMS)
                        .report(format)
                }
            };
            let e = nodenet_image::iso::Embed {
                keyfiles: &keyfiles,
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
                return super::Failure::io(
                    live.display().to_string(),
                    format!(
                        "{}: building {} from {}: {err}",
                        t.host,
                        out.display(),
                        live.display()
                    ),
                )
                .exit(code)
                .report(format);
            }
            info!("{}: built {}", t.host, out.display());
        }
    }
    let timeout = Duration::from_secs(args.sel.limits.timeout);
    let results = super::bmc::run_with_progress(targets, args.sel.limits.parallel, move |t, p| {
        let url = format!("{base}/{}.iso", t.host);
        async move { nodenet_bmc::provision(&t, &url, timeout, &*p).await }
    });
    super::bmc::print_results(&results, format)
}

//! `nodenet provision`: every selected host boots its own ISO through its
//! BMC (Redfish virtual media), in parallel.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::report::Format;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sel: super::bmc::Selection,
    /// Where the BMCs fetch the images: host H boots `<base>/H.iso`.
    #[arg(long)]
    image_url_base: String,
    /// Build each host's ISO first from this CoreOS live ISO, into --image-dir.
    #[arg(long, requires = "image_dir")]
    build_from: Option<PathBuf>,
    /// Directory for the built ISOs (serve it with `nodenet serve`).
    #[arg(long)]
    image_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> ExitCode {
    let targets = match super::bmc::targets(&args.sel) {
        Ok(t) => t,
        Err(c) => return c,
    };
    if let (Some(base), Some(dir)) = (&args.build_from, &args.image_dir) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return super::usage_error(format!("{}: {e}", dir.display()));
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
                    eprintln!("error: {}: {e}", t.host);
                    return super::problems();
                }
            };
            let e = nodenet_image::iso::Embed {
                keyfiles: &keyfiles,
                ignition: None,
                drop_ignition: false,
            };
            if let Err(err) =
                nodenet_image::iso::embed_to(base, &dir.join(format!("{}.iso", t.host)), &e)
            {
                eprintln!("error: {}: building the ISO: {err}", t.host);
                return super::problems();
            }
            eprintln!(
                "{}: built {}",
                t.host,
                dir.join(format!("{}.iso", t.host)).display()
            );
        }
    }
    let base = args.image_url_base.trim_end_matches('/').to_string();
    let timeout = Duration::from_secs(args.sel.timeout);
    let start = Instant::now();
    let results = nodenet_bmc::run_all(targets, args.sel.parallel, move |t| {
        let url = format!("{base}/{}.iso", t.host);
        async move {
            let progress = move |host: &str, step: &str| {
                eprintln!("[{:>6.1}s] {host}: {step}", start.elapsed().as_secs_f64())
            };
            nodenet_bmc::provision(&t, &url, timeout, &progress).await
        }
    });
    super::bmc::print_results(&results, args.format)
}

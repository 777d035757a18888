//! `nodenet image iso|pxe`: a host's keyfiles into its boot media.

use std::path::PathBuf;
use std::process::ExitCode;

use nodenet_image::{iso, pxe, ImageError};

#[derive(clap::Subcommand)]
pub enum Kind {
    /// Embed into a CoreOS live ISO's embed area (a copy with -o, or --in-place).
    Iso {
        #[command(flatten)]
        source: Source,
        /// The CoreOS live ISO.
        iso: PathBuf,
        #[arg(
            short,
            long,
            required_unless_present = "in_place",
            conflicts_with = "in_place"
        )]
        output: Option<PathBuf>,
        /// Modify the ISO itself (only the embed area is written).
        #[arg(long)]
        in_place: bool,
        /// Remove an Ignition config already embedded (it is kept by default).
        #[arg(long, conflicts_with = "ignition")]
        drop_ignition: bool,
    },
    /// Write into the `boot` partition of a disk image (raw, qcow2, or .gz of either).
    Disk {
        #[command(flatten)]
        source: Source,
        /// The disk image (e.g. rhcos-openstack.x86_64.qcow2.gz).
        image: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// Base URL the image will be served from, for the clusterOSImage line.
        #[arg(long, default_value = "http://127.0.0.1:8080/")]
        url_base: String,
    },
    /// Write the extra PXE initrd (cpio.xz), or with --append-to the one-file form.
    Pxe {
        #[command(flatten)]
        source: Source,
        #[arg(short, long)]
        output: PathBuf,
        /// A CoreOS live initramfs to append the payload to.
        #[arg(long)]
        append_to: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
pub struct Source {
    /// Host of the inventory whose keyfiles go in.
    #[arg(long, requires = "inventory", conflicts_with = "keyfile")]
    host: Option<String>,
    /// The inventory (with --host).
    #[arg(long, short = 'c')]
    inventory: Option<PathBuf>,
    /// A keyfile to embed as it is (instead of --host); repeat for more.
    #[arg(long)]
    keyfile: Vec<PathBuf>,
    /// An Ignition config to embed too.
    #[arg(long)]
    ignition: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    kind: Kind,
}

type Keyfiles = Vec<(String, Vec<u8>)>;

fn load(source: &Source) -> Result<(Keyfiles, Option<Vec<u8>>), ExitCode> {
    let keyfiles = match (&source.host, &source.inventory) {
        (Some(host), Some(inv)) => {
            match nodenet_render::keyfiles_for_host(std::slice::from_ref(inv), host) {
                Ok(k) => k.into_iter().map(|(n, c)| (n, c.into_bytes())).collect(),
                Err(nodenet_render::HostKeyfilesError::Load(e)) => {
                    return Err(super::usage_error(e))
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return Err(super::problems());
                }
            }
        }
        _ if !source.keyfile.is_empty() => {
            let mut v = Vec::new();
            for p in &source.keyfile {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let data = std::fs::read(p)
                    .map_err(|e| super::usage_error(format!("{}: {e}", p.display())))?;
                v.push((name, data));
            }
            v
        }
        _ => {
            return Err(super::usage_error(
                "give --host H --inventory FILE, or --keyfile F…",
            ))
        }
    };
    let ignition = match &source.ignition {
        Some(p) => Some(
            std::fs::read(p).map_err(|e| super::usage_error(format!("{}: {e}", p.display())))?,
        ),
        None => None,
    };
    Ok((keyfiles, ignition))
}

fn fail(e: ImageError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(if e.is_input_problem() {
        super::PROBLEMS
    } else {
        super::USAGE
    })
}

pub fn run(args: Args) -> ExitCode {
    match args.kind {
        Kind::Iso {
            source,
            iso: input,
            output,
            in_place,
            drop_ignition,
        } => {
            let (keyfiles, ignition) = match load(&source) {
                Ok(x) => x,
                Err(c) => return c,
            };
            let e = iso::Embed {
                keyfiles: &keyfiles,
                ignition: ignition.as_deref(),
                drop_ignition,
            };
            let (result, target) = if in_place {
                (iso::embed_in_place(&input, &e), input.clone())
            } else {
                let out = output.expect("clap requires -o without --in-place");
                (iso::embed_to(&input, &out, &e), out)
            };
            match result {
                Ok(n) => {
                    eprintln!(
                        "embedded {} keyfile(s){} ({n} bytes) into {}",
                        keyfiles.len(),
                        if ignition.is_some() {
                            " and an Ignition config"
                        } else {
                            ""
                        },
                        target.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        Kind::Disk {
            source,
            image,
            output,
            url_base,
        } => {
            let (keyfiles, ignition) = match load(&source) {
                Ok(x) => x,
                Err(c) => return c,
            };
            // A spinner on a terminal, nothing when stderr is redirected.
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            let progress = |step: &str| bar.set_message(step.to_string());
            let result = nodenet_image::disk::inject(
                &image,
                &output,
                &keyfiles,
                ignition.as_deref(),
                &progress,
            );
            bar.finish_and_clear();
            match result {
                Ok(w) => {
                    let name = output.file_name().unwrap_or_default().to_string_lossy();
                    eprintln!(
                        "wrote {} keyfile(s) into the boot partition (offset {}) of {}",
                        keyfiles.len(),
                        w.partition.offset,
                        output.display()
                    );
                    match &w.method {
                        nodenet_image::disk::Method::Patched {
                            changed,
                            appended,
                            recompressed,
                        } => eprintln!(
                            "patched: {changed} bytes changed in place, {appended} appended, {recompressed} compressed anew"
                        ),
                        nodenet_image::disk::Method::Rewritten { reason } => {
                            eprintln!("rewrote the whole image ({reason})")
                        }
                    }
                    println!("sha256: {}", w.sha256);
                    println!(
                        "clusterOSImage: {}/{name}?sha256={}",
                        url_base.trim_end_matches('/'),
                        w.sha256
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        Kind::Pxe {
            source,
            output,
            append_to,
        } => {
            let (keyfiles, ignition) = match load(&source) {
                Ok(x) => x,
                Err(c) => return c,
            };
            let payload = nodenet_image::initrd::network_payload(&keyfiles, ignition.as_deref());
            let data = match append_to {
                None => payload,
                Some(base) => {
                    let initramfs = match std::fs::read(&base) {
                        Ok(b) => b,
                        Err(e) => return super::usage_error(format!("{}: {e}", base.display())),
                    };
                    match pxe::append(&base, &initramfs, &payload) {
                        Ok(d) => d,
                        Err(e) => return fail(e),
                    }
                }
            };
            match nodenet_image::write_atomic(&output, &data) {
                Ok(()) => {
                    eprintln!(
                        "wrote {} ({} bytes, {} keyfile(s))",
                        output.display(),
                        data.len(),
                        keyfiles.len()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
    }
}

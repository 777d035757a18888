//! `nodenet image iso|disk|pxe`: a host's keyfiles into its boot media.

use std::path::{Path, PathBuf};

use nodenet_image::{iso, pxe, ImageError};

use super::{CliError, Exit, Outcome};
use crate::ui::{self, info};

/// The inventory comes first, as in check/render/bmc/provision:
/// `nodenet image iso INVENTORY --host H LIVE.ISO -o OUT`; without an
/// inventory, `--keyfile F…` names the keyfiles. `-c/--inventory` is the
/// old spelling, still accepted.
#[derive(clap::Subcommand)]
pub enum Kind {
    /// Embed into a CoreOS live ISO's embed area (a copy with -o, or --in-place).
    #[command(
        override_usage = "nodenet image iso [OPTIONS] [INVENTORY] ISO (-o OUT | --in-place)\n       \
                          (INVENTORY with --host H, or --keyfile F… alone)"
    )]
    Iso {
        /// `[INVENTORY] ISO`: the inventory (with --host), then the CoreOS
        /// live ISO; the ISO alone with --keyfile.
        #[arg(value_name = "PATH", num_args = 1..=2, required = true)]
        paths: Vec<PathBuf>,
        #[command(flatten)]
        source: Source,
        /// Where to write the customised ISO (a copy; the input is not changed).
        #[arg(
            short,
            long,
            value_name = "OUT",
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
    #[command(
        override_usage = "nodenet image disk [OPTIONS] [INVENTORY] IMAGE -o OUT\n       \
                          (INVENTORY with --host H, or --keyfile F… alone)"
    )]
    Disk {
        /// `[INVENTORY] IMAGE`: the inventory (with --host), then the disk
        /// image (e.g. rhcos-openstack.x86_64.qcow2.gz); the image alone
        /// with --keyfile.
        #[arg(value_name = "PATH", num_args = 1..=2, required = true)]
        paths: Vec<PathBuf>,
        #[command(flatten)]
        source: Source,
        /// Where to write the customised image (same format as the input).
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Base URL the image will be served from, for the clusterOSImage line.
        #[arg(long, default_value = "http://127.0.0.1:8080/")]
        url_base: String,
    },
    /// Write the extra PXE initrd (cpio.xz), or with --append-to the one-file form.
    #[command(
        override_usage = "nodenet image pxe [OPTIONS] [INVENTORY] -o OUT\n       \
                          (INVENTORY with --host H, or --keyfile F… alone)"
    )]
    Pxe {
        /// The inventory (with --host).
        #[arg(value_name = "INVENTORY")]
        inventory: Option<PathBuf>,
        #[command(flatten)]
        source: Source,
        /// Where to write the initrd (or, with --append-to, the combined initramfs).
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// A CoreOS live initramfs to append the payload to.
        #[arg(long)]
        append_to: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
pub struct Source {
    /// Host of the inventory whose keyfiles go in.
    #[arg(long, conflicts_with = "keyfile")]
    host: Option<String>,
    /// The old spelling of the INVENTORY argument.
    #[arg(long = "inventory", short = 'c', hide = true, value_name = "INVENTORY")]
    inventory_flag: Option<PathBuf>,
    /// A keyfile to embed as it is (instead of an inventory and --host); repeat for more.
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

/// What goes into the media: keyfiles, `.link` files pinning NIC names
/// (from an inventory whose host has `nicBinding: pin`), Ignition.
struct Payload {
    keyfiles: Keyfiles,
    links: Keyfiles,
    ignition: Option<Vec<u8>>,
}

fn load(inventory: Option<PathBuf>, source: &Source) -> Result<Payload, CliError> {
    let inventory = match (inventory, &source.inventory_flag) {
        (Some(_), Some(_)) => {
            return Err(CliError::usage(
                "the inventory is given twice (as an argument and with -c)",
            ))
        }
        (Some(i), None) => Some(i),
        (None, flag) => flag.clone(),
    };
    if inventory.is_some() && !source.keyfile.is_empty() {
        return Err(CliError::usage(
            "give an inventory and --host, or --keyfile F…, not both",
        ));
    }
    let mut links = Keyfiles::new();
    let keyfiles = match (&source.host, &inventory) {
        (Some(host), Some(inv)) => {
            match nodenet_render::boot_network_for_host(std::slice::from_ref(inv), host) {
                Ok(b) => {
                    links = b.links;
                    b.keyfiles
                }
                Err(nodenet_render::HostKeyfilesError::Load(e)) => {
                    return Err(CliError::usage(e))
                }
                Err(e) => return Err(CliError::input("host-keyfiles", e)),
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
                    .map_err(|e| CliError::usage(format!("{}: {e}", p.display())))?;
                v.push((name, data));
            }
            // What goes into boot media must be a keyfile NetworkManager
            // loads: each is read as `import` reads it (an ELF binary, or
            // `address1=10.1.1.300/24`, is refused here, not at boot).
            let imported = nodenet_import::import_bytes(
                source.keyfile.iter().cloned().zip(v.iter().map(|(_, d)| d.clone())).collect(),
                false,
            );
            if imported.diagnostics.iter().any(|d| d.is_error()) {
                let errors: Vec<_> = imported
                    .diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .cloned()
                    .collect();
                return Err(CliError::input(
                    "keyfile-error",
                    "not a keyfile NetworkManager would load; nothing written",
                )
                .with_findings(imported.sources, errors));
            }
            v
        }
        (Some(_), None) => {
            return Err(CliError::usage(
                "--host names a host of an inventory: give the inventory first (`nodenet image iso INVENTORY --host H …`)",
            ))
        }
        (None, Some(inv)) => {
            return Err(CliError::usage(format!(
                "which host of {}? give --host H",
                inv.display()
            )))
        }
        _ => {
            return Err(CliError::usage(
                "give an inventory and --host H, or --keyfile F…",
            ))
        }
    };
    let ignition = match &source.ignition {
        Some(p) => {
            Some(std::fs::read(p).map_err(|e| CliError::usage(format!("{}: {e}", p.display())))?)
        }
        None => None,
    };
    Ok(Payload {
        keyfiles,
        links,
        ignition,
    })
}

/// ", N .link file(s)" when NIC names are pinned.
fn pinned(links: &Keyfiles) -> String {
    if links.is_empty() {
        String::new()
    } else {
        format!(", {} .link file(s) pinning NIC names", links.len())
    }
}

/// `[INVENTORY] MEDIA`: clap gives one or two paths.
fn split(mut paths: Vec<PathBuf>) -> (Option<PathBuf>, PathBuf) {
    let media = paths.pop().expect("clap requires one path");
    (paths.pop(), media)
}

/// The input media must be readable: said with its name before any work.
fn readable(path: &std::path::Path) -> Result<(), CliError> {
    std::fs::File::open(path)
        .map(drop)
        .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))
}

/// Exit 1 when the media given is at fault, else 2.
fn failed(e: ImageError) -> CliError {
    let exit = if e.is_input_problem() {
        super::PROBLEMS
    } else {
        super::USAGE
    };
    CliError::usage(e).code("image").exit(exit)
}

pub fn run(args: Args) -> Outcome {
    match args.kind {
        Kind::Iso {
            paths,
            source,
            output,
            in_place,
            drop_ignition,
        } => iso(paths, &source, output, in_place, drop_ignition),
        Kind::Disk {
            paths,
            source,
            output,
            url_base,
        } => disk(paths, &source, &output, &url_base),
        Kind::Pxe {
            inventory,
            source,
            output,
            append_to,
        } => pxe(inventory, &source, &output, append_to),
    }
}
/// `nodenet image iso`: the payload into a live ISO's embed area.
fn iso(
    paths: Vec<PathBuf>,
    source: &Source,
    output: Option<PathBuf>,
    in_place: bool,
    drop_ignition: bool,
) -> Outcome {
    let (inventory, input) = split(paths);
    readable(&input)?;
    let Payload {
        keyfiles,
        links,
        ignition,
    } = load(inventory, source)?;
    let e = iso::Embed {
        keyfiles: &keyfiles,
        links: &links,
        ignition: ignition.as_deref(),
        drop_ignition,
    };
    let (result, target) = if in_place {
        (iso::embed_in_place(&input, &e), input.clone())
    } else {
        let out = output.expect("clap requires -o without --in-place");
        (iso::embed_to(&input, &out, &e), out)
    };
    let n = result.map_err(failed)?;
    info!(
        "embedded {} keyfile(s){}{} ({n} bytes) into {}",
        keyfiles.len(),
        pinned(&links),
        if ignition.is_some() {
            " and an Ignition config"
        } else {
            ""
        },
        target.display()
    );
    Ok(Exit::Success)
}

/// `nodenet image disk`: the payload into a disk image's boot partition.
fn disk(paths: Vec<PathBuf>, source: &Source, output: &Path, url_base: &str) -> Outcome {
    let (inventory, image) = split(paths);
    readable(&image)?;
    let Payload {
        keyfiles,
        links,
        ignition,
    } = load(inventory, source)?;
    if !links.is_empty() {
        // The boot partition's firstboot network is keyfiles only.
        info!(
            "note: the {} .link file(s) pinning NIC names are not written into a disk image: the installed system gets them from Ignition (openshift/10-nodenet-nic-names-*.yaml)",
            links.len()
        );
    }
    // A spinner on a terminal, nothing when stderr is redirected.
    let bar = if ui::chatty() {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let progress = |step: &str| bar.set_message(step.to_string());
    let result =
        nodenet_image::disk::inject(&image, output, &keyfiles, ignition.as_deref(), &progress);
    bar.finish_and_clear();
    let w = result.map_err(failed)?;
    let name = output.file_name().unwrap_or_default().to_string_lossy();
    info!(
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
        } => info!(
            "patched: {changed} bytes changed in place, {appended} appended, {recompressed} compressed anew"
        ),
        nodenet_image::disk::Method::Rewritten { reason } => {
            info!("rewrote the whole image ({reason})")
        }
    }
    println!("sha256: {}", w.sha256);
    println!(
        "clusterOSImage: {}/{name}?sha256={}",
        url_base.trim_end_matches('/'),
        w.sha256
    );
    Ok(Exit::Success)
}

/// `nodenet image pxe`: the payload as an initramfs, alone or appended.
fn pxe(
    inventory: Option<PathBuf>,
    source: &Source,
    output: &Path,
    append_to: Option<PathBuf>,
) -> Outcome {
    let Payload {
        keyfiles,
        links,
        ignition,
    } = load(inventory, source)?;
    let payload = nodenet_image::initrd::network_payload(&keyfiles, &links, ignition.as_deref());
    let data = match append_to {
        None => payload,
        Some(base) => {
            let initramfs = std::fs::read(&base)
                .map_err(|e| CliError::usage(format!("{}: {e}", base.display())))?;
            pxe::append(&base, &initramfs, &payload).map_err(failed)?
        }
    };
    nodenet_image::write_atomic(output, &data).map_err(failed)?;
    info!(
        "wrote {} ({} bytes, {} keyfile(s){})",
        output.display(),
        data.len(),
        keyfiles.len(),
        pinned(&links)
    );
    Ok(Exit::Success)
}

//! Disk images (raw, qcow2, and either gzipped): keyfiles into
//! `/coreos-firstboot-network/` (and Ignition into `/ignition/config.ign`)
//! of the ext4 partition labelled `boot`, which CoreOS copies to
//! /run/NetworkManager/system-connections on first boot.
//!
//! No root, mounts, nbd or guestfish. The usual way (`patch`): the image
//! is read in-process (gzip decoded once, qcow2 mapped by `qcow2`, the GPT
//! by gptman), the `boot` partition is copied out to a sparse file and
//! written by e2fsprogs' `debugfs -w`, and only the guest clusters that
//! changed go back: in place in a copy of a plain image, or spliced into
//! the original gzip stream (`gzip_splice`), so a 2 GiB `.qcow2.gz` costs
//! one decompression and a few hundred KiB of compression.
//!
//! Images that way cannot handle (see `qcow2` and `gzip_splice` for what
//! they refuse) are rewritten whole (`rewrite`): `qemu-img convert` to raw
//! and back, gzip on all cores (gzp, pigz-style single member).

// Public for the fuzz targets (`fuzz/`), which drive them directly.
pub mod gzip_splice;
pub mod qcow2;

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use gzp::{deflate::Gzip, ZBuilder, ZWriter};
use nodenet_model::scratch::{self, ScratchDir};
use sha2::{Digest, Sha256};

use crate::ImageError;

mod patch;

use patch::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Raw,
    Qcow2,
}

/// What was found in the input.
#[derive(Clone, Copy, Debug)]
pub struct Detected {
    pub gzip: bool,
    pub format: Format,
}

/// The `boot` partition's byte range in a raw image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub offset: u64,
    pub length: u64,
}

pub fn detect(path: &Path) -> Result<Detected, ImageError> {
    let mut head = [0u8; 4];

    let mut f = File::open(path)?;
    let n = f.read(&mut head)?;
    let gzip = n >= 2 && head[..2] == [0x1f, 0x8b];
    let inner = if gzip {
        let mut d = flate2::read::MultiGzDecoder::new(BufReader::new(File::open(path)?));
        let mut h = [0u8; 4];
        d.read_exact(&mut h)
            .map_err(|_| ImageError::NotDiskImage("gzip data too short".into()))?;
        h
    } else {
        head
    };
    let format = if &inner == b"QFI\xfb" {
        Format::Qcow2
    } else {
        Format::Raw
    };
    Ok(Detected { gzip, format })
}

/// Bytes of an image (the decompressed data, for a `.gz`) to replace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub at: u64,
    pub bytes: Vec<u8>,
}

/// Why an image cannot be patched in place (`Layout`: it is rewritten
/// whole instead), or what is wrong with it either way (`Image`).
#[derive(Debug)]
pub enum Unpatchable {
    Layout(String),
    Image(ImageError),
}

impl From<std::io::Error> for Unpatchable {
    fn from(e: std::io::Error) -> Self {
        Unpatchable::Image(ImageError::Io(e))
    }
}

/// How the output was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// Only what changed was written: `changed` bytes in place,
    /// `appended` after the end (new qcow2 clusters), and for a `.gz`
    /// `recompressed` bytes compressed anew around them.
    Patched {
        changed: u64,
        appended: u64,
        recompressed: u64,
    },
    /// The whole image was converted and rewritten, for this reason.
    Rewritten { reason: String },
}

/// Finds the GPT partition named `boot` in a raw image file.
pub fn boot_partition(raw: &Path) -> Result<Partition, ImageError> {
    boot_partition_in(&mut File::open(raw)?)
}

fn boot_partition_in<R: Read + Seek>(f: &mut R) -> Result<Partition, ImageError> {
    for sector in [512u64, 4096] {
        f.seek(SeekFrom::Start(0))?;
        let Ok(gpt) = gptman::GPT::read_from(f, sector) else {
            continue;
        };
        for (_, p) in gpt.iter() {
            if p.is_used() && p.partition_name.as_str() == "boot" {
                return Ok(Partition {
                    offset: p.starting_lba * sector,
                    length: (p.ending_lba - p.starting_lba + 1) * sector,
                });
            }
        }
        return Err(ImageError::NotDiskImage(
            "the GPT has no partition labelled `boot`".into(),
        ));
    }
    Err(ImageError::NotDiskImage("no GUID partition table".into()))
}

/// e2fsprogs and qemu-utils install into sbin, which a user's PATH may
/// lack.
fn program(name: &str) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    Command::new(found.unwrap_or_else(|| PathBuf::from(name)))
}

fn tool(cmd: &mut Command, what: &str) -> Result<String, ImageError> {
    let out = cmd
        .output()
        .map_err(|e| ImageError::Io(std::io::Error::new(e.kind(), format!("{what}: {e}"))))?;
    if !out.status.success() {
        return Err(ImageError::Verify(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes files into the ext4 at `part` of `raw` with debugfs.
pub fn write_into_boot(
    raw: &Path,
    part: Partition,
    keyfiles: &[(String, Vec<u8>)],
    ignition: Option<&[u8]>,
    scratch: &Path,
) -> Result<(), ImageError> {
    let device = format!("{}?offset={}", raw.display(), part.offset);
    // It must be ext4 with a usable superblock before anything is written.
    tool(
        program("debugfs").arg("-R").arg("stats").arg(&device),
        "debugfs (reading the boot filesystem)",
    )
    .map_err(|_| {
        ImageError::NotDiskImage("the `boot` partition is not an ext2/3/4 filesystem".into())
    })?;
    let mut cmds = String::new();
    let mut put = |dir: &str, name: &str, data: &[u8], mode: u32| -> Result<(), ImageError> {
        if name.contains(['/', '\n', '"', ' ']) || name.is_empty() {
            return Err(ImageError::NotDiskImage(format!(
                "unusable file name `{name}`"
            )));
        }
        let local = scratch.join(format!("f{}", cmds.len()));
        std::fs::write(&local, data)?;
        let target = format!("/{dir}/{name}");
        cmds.push_str(&format!(
            "rm {target}\nwrite {} {target}\nsif {target} mode 0{mode:o}\nsif {target} uid 0\nsif {target} gid 0\n",
            local.display()
        ));
        Ok(())
    };
    for (name, data) in keyfiles {
        put("coreos-firstboot-network", name, data, 0o100600)?;
    }
    if let Some(ign) = ignition {
        put("ignition", "config.ign", ign, 0o100600)?;
    }
    // debugfs 1.47's `mkdir` of a directory that exists fails, but only
    // after allocating an inode it never links: e2fsck then finds an
    // unconnected directory. So only what is missing is made.
    let root = tool(
        program("debugfs").arg("-R").arg("ls -p /").arg(&device),
        "debugfs (listing the boot filesystem)",
    )?;
    // `ls -p` lines: /inode/mode/uid/gid/name/size/
    let exists = |dir: &str| {
        root.lines().any(|l| {
            let f: Vec<&str> = l.split('/').collect();
            f.get(5) == Some(&dir) && f.get(2).is_some_and(|m| m.starts_with("04"))
        })
    };
    let mut header = String::new();
    if !exists("coreos-firstboot-network") {
        header.push_str(
            "mkdir /coreos-firstboot-network\nsif /coreos-firstboot-network mode 040755\n",
        );
    }
    if !exists("ignition") {
        header.push_str("mkdir /ignition\n");
    }
    let script = scratch.join("debugfs.cmds");
    std::fs::write(&script, format!("{header}{cmds}"))?;
    tool(
        program("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&script)
            .arg(&device),
        "debugfs -w",
    )?;
    // Read one file back to be sure the writes landed.
    if let Some((name, data)) = keyfiles.first() {
        let back = tool(
            program("debugfs")
                .arg("-R")
                .arg(format!("cat /coreos-firstboot-network/{name}"))
                .arg(&device),
            "debugfs (verifying)",
        )?;
        if back.as_bytes() != data.as_slice() {
            return Err(ImageError::Verify(format!(
                "{name} does not read back from the boot filesystem (is the `boot` partition full?)"
            )));
        }
    }
    Ok(())
}

/// A writer that hashes what passes through.
struct Hashing<W: Write> {
    inner: W,
    hash: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Result of a disk run.
pub struct Written {
    pub sha256: String,
    pub detected: Detected,
    pub partition: Partition,
    pub method: Method,
}

/// Writes the keyfiles (and Ignition) into the image's `boot` partition;
/// the output appears under its name only when complete, with its sha256.
pub fn inject(
    input: &Path,
    output: &Path,
    keyfiles: &[(String, Vec<u8>)],
    ignition: Option<&[u8]>,
    progress: &dyn Fn(&str),
) -> Result<Written, ImageError> {
    let job = Job {
        input,
        output,
        detected: detect(input)?,
        keyfiles,
        ignition,
        progress,
    };
    let scratch = scratch_beside(output)?;
    let patched = patch(&job, scratch.path());
    // Its decompressed copy can be as big as the image: gone before a
    // rewrite makes its own.
    drop(scratch);
    match patched {
        Ok(written) => Ok(written),
        Err(Unpatchable::Image(e)) => Err(e),
        Err(Unpatchable::Layout(reason)) => {
            progress(&format!("{reason}: rewriting the whole image"));
            let mut written = rewrite(&job, scratch_beside(output)?.path())?;
            written.method = Method::Rewritten { reason };
            Ok(written)
        }
    }
    .map_err(|e| naming_output(e, output))
}

/// Scratch copies and the temp file live beside the output: a full or
/// read-only filesystem there is the output's, and the error says so.
fn naming_output(e: ImageError, output: &Path) -> ImageError {
    use std::io::ErrorKind::{QuotaExceeded, ReadOnlyFilesystem, StorageFull};
    match e {
        ImageError::Io(source)
            if matches!(
                source.kind(),
                StorageFull | ReadOnlyFilesystem | QuotaExceeded
            ) =>
        {
            ImageError::IoAt {
                path: output.to_path_buf(),
                source,
            }
        }
        e => e,
    }
}

/// A scratch directory on the output's filesystem (the final rename stays
/// on it), gone when dropped, swept by a later run when this one is killed.
fn scratch_beside(output: &Path) -> Result<ScratchDir, ImageError> {
    scratch::dir_beside(output, scratch::Kind::Disk).map_err(ImageError::at(output))
}

/// The whole-rewrite path alone, the way `inject` falls back to: the
/// independent reference the in-place patch is tested against.
pub fn inject_by_rewriting(
    input: &Path,
    output: &Path,
    keyfiles: &[(String, Vec<u8>)],
    ignition: Option<&[u8]>,
) -> Result<Written, ImageError> {
    let job = Job {
        input,
        output,
        detected: detect(input)?,
        keyfiles,
        ignition,
        progress: &|_| {},
    };
    rewrite(&job, scratch_beside(output)?.path())
}

/// The fallback: input → (gunzip) → (qcow2 → raw) → write into `boot` →
/// (raw → qcow2) → (gzip on all cores) → output, sha256 on the way.
fn rewrite(job: &Job, scratch: &Path) -> Result<Written, ImageError> {
    let work: PathBuf = scratch.join("image");
    // 1. An uncompressed working copy.
    (job.progress)(if job.detected.gzip {
        "decompressing"
    } else {
        "copying"
    });
    if job.detected.gzip {
        let mut d = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            1 << 20,
            File::open(job.input)?,
        ));
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&work)?);
        std::io::copy(&mut d, &mut w)
            .map_err(|e| ImageError::NotDiskImage(format!("gzip: {e}")))?;
        w.flush()?;
    } else {
        std::fs::copy(job.input, &work)?;
    }
    // 2. Raw for the partition table and debugfs.
    (job.progress)("writing into the boot partition");
    let raw = if job.detected.format == Format::Qcow2 {
        let raw = scratch.join("image.raw");
        tool(
            program("qemu-img")
                .args(["convert", "-O", "raw"])
                .arg(&work)
                .arg(&raw),
            "qemu-img convert (qcow2 to raw)",
        )?;
        std::fs::remove_file(&work)?;
        raw
    } else {
        work.clone()
    };
    let partition = boot_partition(&raw)?;
    write_into_boot(&raw, partition, job.keyfiles, job.ignition, scratch)?;
    // 3. Back to the input's format.
    (job.progress)(if job.detected.gzip {
        "compressing and hashing"
    } else {
        "writing and hashing"
    });
    let image = if job.detected.format == Format::Qcow2 {
        let q = scratch.join("image.qcow2");
        tool(
            program("qemu-img")
                .args(["convert", "-O", "qcow2"])
                .arg(&raw)
                .arg(&q),
            "qemu-img convert (raw to qcow2)",
        )?;
        q
    } else {
        raw
    };
    // 4. Compress (if the input was) and hash into a temp file, rename.
    let tmp_out = scratch.join("out");
    let file = File::create(&tmp_out)?;
    let mut hashing = Hashing {
        inner: BufWriter::with_capacity(1 << 20, file),
        hash: Sha256::new(),
    };
    let mut src = BufReader::with_capacity(1 << 20, File::open(&image)?);
    if job.detected.gzip {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let mut gz: Box<dyn ZWriter<Hashing<BufWriter<File>>>> = ZBuilder::<Gzip, _>::new()
            .num_threads(threads)
            .from_writer(hashing);
        std::io::copy(&mut src, &mut gz)?;
        hashing = gz
            .finish()
            .map_err(|e| ImageError::Io(std::io::Error::other(e.to_string())))?;
    } else {
        std::io::copy(&mut src, &mut hashing)?;
    }
    hashing.flush()?;
    let Hashing { inner, hash } = hashing;
    inner.get_ref().sync_data()?;
    drop(inner);
    let sha256 = nodenet_model::hex(&hash.finalize());
    std::fs::rename(&tmp_out, job.output)?;
    Ok(Written {
        sha256,
        detected: job.detected,
        partition,
        method: Method::Rewritten {
            reason: String::new(),
        },
    })
}

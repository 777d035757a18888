//! Writing into a disk image's boot partition in place: only the chunks
//! the new files change, through the guest's own blocks (raw or qcow2),
//! else the whole image rewritten.

use super::*;

/// One run's request, the same for both ways.
#[derive(Clone, Copy)]
pub(super) struct Job<'a> {
    pub(super) input: &'a Path,
    pub(super) output: &'a Path,
    pub(super) detected: Detected,
    pub(super) keyfiles: &'a [(String, Vec<u8>)],
    pub(super) ignition: Option<&'a [u8]>,
    pub(super) progress: &'a dyn Fn(&str),
}

/// The guest's view of an image file: a raw disk, or a qcow2 mapped.
pub(super) struct Guest<'a> {
    pub(super) file: &'a File,
    pub(super) qcow2: Option<qcow2::Qcow2>,
    pub(super) size: u64,
}

impl<'a> Guest<'a> {
    pub(super) fn open(file: &'a File, format: Format) -> Result<Self, Unpatchable> {
        Ok(match format {
            Format::Raw => Guest {
                file,
                qcow2: None,
                size: file.metadata()?.len(),
            },
            Format::Qcow2 => {
                let q = qcow2::Qcow2::open(file).map_err(Unpatchable::Layout)?;
                Guest {
                    file,
                    size: q.size,
                    qcow2: Some(q),
                }
            }
        })
    }

    /// The unit changes are tracked in: the qcow2 cluster, or 64 KiB.
    pub(super) fn chunk(&self) -> u64 {
        self.qcow2.as_ref().map_or(64 * 1024, |q| q.cluster)
    }

    /// Whether the chunk may hold data (false: reads as zeros).
    pub(super) fn stored(&mut self, chunk: u64) -> Result<bool, Unpatchable> {
        Ok(match &mut self.qcow2 {
            None => true,
            Some(q) => {
                q.backing(self.file, chunk).map_err(Unpatchable::Layout)? != qcow2::Backing::Zeros
            }
        })
    }

    /// Guest bytes at `at`; zeros past the end.
    pub(super) fn read(&mut self, mut at: u64, mut buf: &mut [u8]) -> Result<(), Unpatchable> {
        let c = self.chunk();
        while !buf.is_empty() {
            let n = ((c - at % c) as usize).min(buf.len());
            let (piece, rest) = buf.split_at_mut(n);
            let host = match &mut self.qcow2 {
                None => Some(at),
                Some(q) => match q.backing(self.file, at / c).map_err(Unpatchable::Layout)? {
                    qcow2::Backing::Zeros => None,
                    qcow2::Backing::Host(h) => Some(h + at % c),
                },
            };
            piece.fill(0);
            if let Some(h) = host.filter(|_| at < self.size) {
                let mut done = 0;
                while done < piece.len() {
                    match self.file.read_at(&mut piece[done..], h + done as u64)? {
                        0 => break,
                        r => done += r,
                    }
                }
            }
            at += n as u64;
            buf = rest;
        }
        Ok(())
    }
}

/// `Read + Seek` over a guest, for gptman; keeps the reason a read
/// failed, which gptman would turn into "no partition table".
pub(super) struct GuestCursor<'g, 'a> {
    pub(super) guest: &'g mut Guest<'a>,
    pub(super) pos: u64,
    pub(super) failure: Option<Unpatchable>,
}

impl Read for GuestCursor<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (self.guest.size.saturating_sub(self.pos) as usize).min(buf.len());
        if let Err(e) = self.guest.read(self.pos, &mut buf[..n]) {
            self.failure = Some(e);
            return Err(std::io::Error::other("unreadable guest data"));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for GuestCursor<'_, '_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => self.guest.size.saturating_add_signed(d),
            SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

/// Guest chunks overlapping the partition.
pub(super) fn chunks_of(part: Partition, chunk: u64) -> Range<u64> {
    part.offset / chunk..(part.offset + part.length).div_ceil(chunk)
}

/// The guest byte range of chunk `k` that lies inside the partition.
pub(super) fn inside(part: Partition, chunk: u64, k: u64) -> Range<u64> {
    (k * chunk).max(part.offset)..((k + 1) * chunk).min(part.offset + part.length)
}

/// Copies the partition out to a sparse file (stored, non-zero chunks).
pub(super) fn extract(guest: &mut Guest, part: Partition, to: &Path) -> Result<File, Unpatchable> {
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(to)?;
    f.set_len(part.length)?;
    let c = guest.chunk();
    let mut buf = vec![0u8; c as usize];
    for k in chunks_of(part, c) {
        if !guest.stored(k)? {
            continue;
        }
        guest.read(k * c, &mut buf)?;
        let r = inside(part, c, k);
        let piece = &buf[(r.start - k * c) as usize..(r.end - k * c) as usize];
        if piece.iter().any(|&b| b != 0) {
            f.write_all_at(piece, r.start - part.offset)?;
        }
    }
    Ok(f)
}

/// Chunks whose bytes differ between the guest and the partition file:
/// (chunk, its new contents, the changed byte range inside it). Only the
/// file's data extents are compared: holes are chunks nobody wrote.
pub(super) type Change = (u64, Vec<u8>, Range<usize>);

pub(super) fn changed_chunks(
    guest: &mut Guest,
    part: Partition,
    file: &File,
) -> Result<Vec<Change>, Unpatchable> {
    use rustix::fs::{seek, SeekFrom as S};
    let c = guest.chunk();
    let mut out: Vec<Change> = Vec::new();
    let mut pos = 0u64;
    let mut old = vec![0u8; c as usize];
    while pos < part.length {
        // No data after `pos` ends the scan; a filesystem that cannot tell
        // data from holes has every byte compared.
        let (data, hole) = match seek(file, S::Data(pos)) {
            Err(rustix::io::Errno::NXIO) => break,
            Err(_) => (pos, part.length),
            Ok(data) => (data, seek(file, S::Hole(data)).unwrap_or(part.length)),
        };
        let chunks = chunks_of(
            Partition {
                offset: part.offset + data,
                length: hole - data,
            },
            c,
        );
        for k in chunks {
            if out.last().is_some_and(|l| l.0 >= k) {
                continue;
            }
            guest.read(k * c, &mut old)?;
            let mut new = old.clone();
            let r = inside(part, c, k);
            file.read_exact_at(
                &mut new[(r.start - k * c) as usize..(r.end - k * c) as usize],
                r.start - part.offset,
            )?;
            let first = old.iter().zip(&new).position(|(a, b)| a != b);
            if let Some(first) = first {
                let last = old.iter().zip(&new).rposition(|(a, b)| a != b).unwrap();
                out.push((k, new, first..last + 1));
            }
        }
        pos = hole;
    }
    Ok(out)
}

/// Sorts edits and joins overlapping or touching ones.
pub(super) fn coalesce(mut edits: Vec<Edit>) -> Vec<Edit> {
    edits.sort_by_key(|e| e.at);
    let mut out: Vec<Edit> = Vec::with_capacity(edits.len());
    for e in edits {
        match out.last_mut() {
            Some(last) if e.at <= last.at + last.bytes.len() as u64 => {
                let start = (e.at - last.at) as usize;
                let end = start + e.bytes.len();
                if end > last.bytes.len() {
                    last.bytes.resize(end, 0);
                }
                last.bytes[start..end].copy_from_slice(&e.bytes);
            }
            _ => out.push(e),
        }
    }
    out
}

/// The usual way (module docs): change only what debugfs changed.
pub(super) fn patch(job: &Job, scratch: &Path) -> Result<Written, Unpatchable> {
    let source = File::open(job.input)?;
    let decoded_path = scratch.join("image");
    let member = if job.detected.gzip {
        (job.progress)("decompressing");
        let mut out = File::create(&decoded_path)?;
        Some(gzip_splice::decode(&source, &mut out)?)
    } else {
        None
    };
    let image = match member {
        Some(_) => File::open(&decoded_path)?,
        None => source.try_clone()?,
    };
    let mut guest = Guest::open(&image, job.detected.format)?;
    let mut cursor = GuestCursor {
        guest: &mut guest,
        pos: 0,
        failure: None,
    };
    let found = boot_partition_in(&mut cursor);
    if let Some(failure) = cursor.failure {
        return Err(failure);
    }
    let partition = found.map_err(Unpatchable::Image)?;
    (job.progress)("writing into the boot partition");
    let part_path = scratch.join("boot.part");
    let part_file = extract(&mut guest, partition, &part_path)?;
    write_into_boot(
        &part_path,
        Partition {
            offset: 0,
            length: partition.length,
        },
        job.keyfiles,
        job.ignition,
        scratch,
    )
    .map_err(Unpatchable::Image)?;
    let changes = changed_chunks(&mut guest, partition, &part_file)?;
    let c = guest.chunk();
    let (edits, appended) = match &mut guest.qcow2 {
        None => (
            changes
                .into_iter()
                .map(|(k, data, r)| Edit {
                    at: k * c + r.start as u64,
                    bytes: data[r].to_vec(),
                })
                .collect(),
            Vec::new(),
        ),
        Some(q) => q.plan(&image, &changes).map_err(Unpatchable::Layout)?,
    };
    let edits = coalesce(edits);
    (job.progress)(if job.detected.gzip {
        "compressing the changes and hashing"
    } else {
        "writing the changes and hashing"
    });
    let tmp_out = scratch.join("out");
    let mut recompressed = 0;
    let mut hash = Sha256::new();
    if let Some(member) = &member {
        let mut hashing = Hashing {
            inner: BufWriter::with_capacity(1 << 20, File::create(&tmp_out)?),
            hash,
        };
        recompressed =
            gzip_splice::splice(&source, member, &image, &edits, &appended, &mut hashing)
                .map_err(Unpatchable::Image)?
                .recompressed;
        hashing.flush()?;
        let Hashing { inner, hash: h } = hashing;
        inner.get_ref().sync_data()?;
        hash = h;
    } else {
        // One pass: read, edit, hash, write; all-zero chunks stay holes.
        let out = File::create(&tmp_out)?;
        let end = source.metadata()?.len();
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0;
        while at < end {
            let chunk = &mut buf[..((end - at) as usize).min(1 << 20)];
            source.read_exact_at(chunk, at)?;
            overlay(&edits, at, chunk);
            hash.update(&*chunk);
            if chunk.iter().any(|&b| b != 0) {
                out.write_all_at(chunk, at)?;
            }
            at += chunk.len() as u64;
        }
        out.set_len(end)?;
        hash.update(&appended);
        out.write_all_at(&appended, end)?;
        out.sync_data()?;
    }
    std::fs::rename(&tmp_out, job.output)?;
    Ok(Written {
        sha256: nodenet_model::hex(&hash.finalize()),
        detected: job.detected,
        partition,
        method: Method::Patched {
            changed: edits.iter().map(|e| e.bytes.len() as u64).sum(),
            appended: appended.len() as u64,
            recompressed,
        },
    })
}

/// Puts the bytes `edits` (sorted, disjoint) give for `[at, at + len)`
/// into `buf`.
pub(super) fn overlay(edits: &[Edit], at: u64, buf: &mut [u8]) {
    let end = at + buf.len() as u64;
    let first = edits.partition_point(|e| e.at + (e.bytes.len() as u64) <= at);
    for e in edits[first..].iter().take_while(|e| e.at < end) {
        let (s, t) = (e.at.max(at), (e.at + e.bytes.len() as u64).min(end));
        buf[(s - at) as usize..(t - at) as usize]
            .copy_from_slice(&e.bytes[(s - e.at) as usize..(t - e.at) as usize]);
    }
}

//! Just enough qcow2 (docs/interop/qcow2.txt in QEMU) to read guest data
//! and to change a few guest clusters in place: existing clusters are
//! overwritten where they are, missing ones (and any L2 table or refcount
//! block they need) are appended at the end of the file with refcount 1,
//! so `qemu-img check` finds neither leaks nor corruption.
//!
//! Anything this does not handle — backing files, encryption, snapshots,
//! compressed or shared clusters in the way, extended L2 entries, external
//! data files, refcounts other than 16 bits — is reported as a reason, and
//! the caller converts the whole image with qemu-img instead.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use super::Edit;

const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
const COPIED: u64 = 1 << 63;
const COMPRESSED: u64 = 1 << 62;
const ZERO: u64 = 1;

/// What a guest cluster is backed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Reads as zeros (unallocated, or a zero cluster).
    Zeros,
    /// Data at this host offset.
    Host(u64),
}

#[derive(Debug)]
pub struct Qcow2 {
    pub cluster: u64,
    /// Virtual disk size.
    pub size: u64,
    l2_entries: u64,
    l1: Vec<u64>,
    l1_offset: u64,
    refcount_table: Vec<u64>,
    refcount_table_offset: u64,
    autoclear: Option<u64>,
    file_len: u64,
    l2_cache: HashMap<u64, Vec<u64>>,
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// A table of `entries` big-endian u64s; refused (before allocating)
/// when the header says it lies beyond the file.
fn read_table(file: &File, file_len: u64, offset: u64, entries: u64) -> Result<Vec<u64>, String> {
    if offset
        .checked_add(entries.saturating_mul(8))
        .is_none_or(|end| end > file_len)
    {
        return Err(format!(
            "qcow2 table at {offset} ({entries} entries) lies beyond the end of the file"
        ));
    }
    let mut raw = vec![0u8; (entries * 8) as usize];
    file.read_exact_at(&mut raw, offset)
        .map_err(|e| format!("qcow2 table at {offset}: {e}"))?;
    Ok(raw.chunks_exact(8).map(|c| be64(c, 0)).collect())
}

impl Qcow2 {
    /// Reads the header and top-level tables; `Err` says why this image
    /// cannot be patched in place.
    pub fn open(file: &File) -> Result<Qcow2, String> {
        let file_len = file.metadata().map_err(|e| e.to_string())?.len();
        let mut h = [0u8; 104];
        file.read_exact_at(&mut h[..72], 0)
            .map_err(|_| "qcow2 header truncated".to_string())?;
        let version = be32(&h, 4);
        if &h[..4] != b"QFI\xfb" || !(2..=3).contains(&version) {
            return Err(format!("qcow2 version {version}"));
        }
        if be64(&h, 8) != 0 {
            return Err("the qcow2 image has a backing file".into());
        }
        let cluster_bits = be32(&h, 20);
        if !(9..=21).contains(&cluster_bits) {
            return Err(format!("qcow2 cluster_bits {cluster_bits}"));
        }
        if be32(&h, 32) != 0 {
            return Err("the qcow2 image is encrypted".into());
        }
        if be32(&h, 60) != 0 {
            return Err("the qcow2 image has snapshots".into());
        }
        let mut autoclear = None;
        if version == 3 {
            file.read_exact_at(&mut h[72..104], 72)
                .map_err(|_| "qcow2 header truncated".to_string())?;
            // Bit 3 (compression type) only concerns compressed clusters,
            // which are refused one by one below.
            let incompatible = be64(&h, 72) & !(1 << 3);
            if incompatible != 0 {
                return Err(format!("qcow2 incompatible features {incompatible:#x}"));
            }
            if be32(&h, 96) != 4 {
                return Err(format!("qcow2 refcount width {} bits", 1 << be32(&h, 96)));
            }
            autoclear = Some(be64(&h, 88));
        }
        let cluster = 1u64 << cluster_bits;
        for (what, at) in [("L1 table", be64(&h, 40)), ("refcount table", be64(&h, 48))] {
            if !at.is_multiple_of(cluster) || at < cluster {
                return Err(format!(
                    "qcow2 {what} offset {at} is not a cluster after the header"
                ));
            }
        }
        let l1_size = be32(&h, 36) as u64;
        let l1_offset = be64(&h, 40);
        let refcount_table_offset = be64(&h, 48);
        let refcount_entries = be32(&h, 56) as u64 * cluster / 8;
        Ok(Qcow2 {
            cluster,
            size: be64(&h, 24),
            l2_entries: cluster / 8,
            l1: read_table(file, file_len, l1_offset, l1_size)?,
            l1_offset,
            refcount_table: read_table(file, file_len, refcount_table_offset, refcount_entries)?,
            refcount_table_offset,
            autoclear,
            file_len,
            l2_cache: HashMap::new(),
        })
    }

    fn l2_entry(&mut self, file: &File, guest_cluster: u64) -> Result<u64, String> {
        let (l1i, l2i) = (
            guest_cluster / self.l2_entries,
            guest_cluster % self.l2_entries,
        );
        let l1e = *self
            .l1
            .get(l1i as usize)
            .ok_or_else(|| format!("guest cluster {guest_cluster} beyond the L1 table"))?;
        let l2 = l1e & OFFSET_MASK;
        if l2 == 0 {
            return Ok(0);
        }
        if !self.l2_cache.contains_key(&l1i) {
            let l2 = self.cluster_at(l2, "L2 table")?;
            let table = read_table(file, self.file_len, l2, self.l2_entries)?;
            self.l2_cache.insert(l1i, table);
        }
        Ok(self.l2_cache[&l1i][l2i as usize])
    }

    /// `offset` when it is a whole cluster inside the file and not the
    /// header's: metadata pointing elsewhere is a damaged image, never
    /// something to write through.
    fn cluster_at(&self, offset: u64, what: &str) -> Result<u64, String> {
        if !offset.is_multiple_of(self.cluster)
            || offset < self.cluster
            || offset
                .checked_add(self.cluster)
                .is_none_or(|end| end > self.file_len)
        {
            return Err(format!(
                "qcow2 {what} at {offset} is not a cluster inside the file (a damaged image)"
            ));
        }
        Ok(offset)
    }

    /// Where the guest cluster's data is.
    pub fn backing(&mut self, file: &File, guest_cluster: u64) -> Result<Backing, String> {
        let e = self.l2_entry(file, guest_cluster)?;
        if e & COMPRESSED != 0 {
            return Err("the qcow2 image has compressed clusters".into());
        }
        let host = e & OFFSET_MASK;
        Ok(if e & ZERO != 0 || host == 0 {
            Backing::Zeros
        } else {
            Backing::Host(self.cluster_at(host, "data cluster")?)
        })
    }

    /// New contents for whole guest clusters: `(guest cluster, data, changed
    /// byte range inside it)`. Returns in-place edits of the file and the
    /// bytes to append after its current end.
    pub fn plan(
        &mut self,
        file: &File,
        changes: &[(u64, Vec<u8>, std::ops::Range<usize>)],
    ) -> Result<(Vec<Edit>, Vec<u8>), String> {
        let first_new = self.file_len.div_ceil(self.cluster) * self.cluster;
        let mut p = Planner {
            edits: Vec::new(),
            file_len: self.file_len,
            first_new,
            appended: vec![0u8; (first_new - self.file_len) as usize],
            cluster: self.cluster,
            new_clusters: Vec::new(),
        };
        for (guest, data, range) in changes {
            let e = self.l2_entry(file, *guest)?;
            let (l1i, l2i) = (guest / self.l2_entries, guest % self.l2_entries);
            if e & COMPRESSED != 0 {
                return Err("a cluster to change is compressed".into());
            }
            let host = e & OFFSET_MASK;
            if host != 0 {
                self.cluster_at(host, "data cluster")?;
            }
            if host != 0 && e & COPIED == 0 {
                return Err("a cluster to change is shared (refcount > 1)".into());
            }
            if host != 0 && e & ZERO == 0 {
                p.edits.push(Edit {
                    at: host + range.start as u64,
                    bytes: data[range.clone()].to_vec(),
                });
                continue;
            }
            let target = if host != 0 {
                // A preallocated zero cluster: fill it, drop the zero flag.
                p.edits.push(Edit {
                    at: host,
                    bytes: data.clone(),
                });
                host
            } else {
                p.allocate(data.clone())
            };
            // The L2 table to point at it, made if missing.
            if self.l1[l1i as usize] & OFFSET_MASK == 0 {
                let table = p.allocate(vec![0u8; self.cluster as usize]);
                self.l1[l1i as usize] = table | COPIED;
                p.set_u64(self.l1_offset + 8 * l1i, table | COPIED);
                self.l2_cache.insert(l1i, vec![0; self.l2_entries as usize]);
            } else if self.l1[l1i as usize] & COPIED == 0 {
                return Err("an L2 table to change is shared (refcount > 1)".into());
            }
            let l2 = self.l1[l1i as usize] & OFFSET_MASK;
            self.l2_cache.get_mut(&l1i).unwrap()[l2i as usize] = target | COPIED;
            p.set_u64(l2 + 8 * l2i, target | COPIED);
        }
        // Refcount 1 for every new cluster, refcount blocks made as needed
        // (each new block is itself a new cluster, counted in turn).
        let per_block = self.cluster / 2;
        let mut i = 0;
        while i < p.new_clusters.len() {
            let index = p.new_clusters[i] / self.cluster;
            let t = (index / per_block) as usize;
            if t >= self.refcount_table.len() {
                return Err("the qcow2 refcount table is full".into());
            }
            if self.refcount_table[t] & OFFSET_MASK == 0 {
                let block = p.allocate(vec![0u8; self.cluster as usize]);
                self.refcount_table[t] = block;
                p.set_u64(self.refcount_table_offset + 8 * t as u64, block);
            }
            let mut block = self.refcount_table[t] & OFFSET_MASK;
            if !p.new_clusters.contains(&block) {
                block = self.cluster_at(block, "refcount block")?;
            }
            let entry = block + 2 * (index % per_block);
            p.set(entry, &1u16.to_be_bytes());
            i += 1;
        }
        // Bits a writer unaware of them must clear (e.g. bitmaps).
        if self.autoclear.is_some_and(|a| a != 0) {
            p.set_u64(88, 0);
        }
        p.edits.sort_by_key(|e| e.at);
        Ok((p.edits, p.appended))
    }
}

/// Collects the changes of one plan.
struct Planner {
    edits: Vec<Edit>,
    file_len: u64,
    /// Host offset of the first appended cluster.
    first_new: u64,
    /// Everything after the old end of file (padding, then new clusters).
    appended: Vec<u8>,
    cluster: u64,
    new_clusters: Vec<u64>,
}

impl Planner {
    fn allocate(&mut self, data: Vec<u8>) -> u64 {
        let at = self.first_new + (self.new_clusters.len() as u64) * self.cluster;
        self.new_clusters.push(at);
        self.appended.extend_from_slice(&data);
        at
    }

    fn set(&mut self, at: u64, bytes: &[u8]) {
        if at >= self.first_new {
            let i = (at - self.file_len) as usize;
            self.appended[i..i + bytes.len()].copy_from_slice(bytes);
        } else {
            self.edits.push(Edit {
                at,
                bytes: bytes.to_vec(),
            });
        }
    }

    fn set_u64(&mut self, at: u64, value: u64) {
        self.set(at, &value.to_be_bytes());
    }
}

#[cfg(test)]
mod tests;

//! Changing a few bytes inside a big `.gz` without recompressing it.
//!
//! A deflate stream is a chain of blocks; a block that starts at output
//! offset P only looks back into the 32 KiB before P. So when bytes
//! change in `[s, e)`, every block that starts at or after `e + 32 KiB`
//! still decodes to the same data. The new member is: the original bits
//! up to the last block start before `s`, a freshly compressed stretch
//! covering the change, then the original bits again from the first block
//! start after `e + 32 KiB` — shifted to the new bit alignment — and a
//! trailer whose CRC is derived from the old one (CRC-32 is linear over
//! GF(2), so only the changed bytes need hashing).
//!
//! zlib finds the block starts (`inflate` with `Z_BLOCK`, as its `zran.c`
//! example does) and compresses the new stretches, primed with the odd
//! bits of the byte they start in (`deflatePrime`, as `gzappend.c` does).
//! Both exist only in zlib's C API, which flate2 does not expose; it is
//! used through libz-rs-sys (zlib-rs, the Rust port, already in the tree
//! under flate2): end to end 2.2–2.5 s instead of 2.7 s with the system
//! zlib on the 2 GiB benchmark image.
//!
//! Copied bits keep their alignment (stored blocks among them pad to byte
//! boundaries relative to it): a new stretch ends byte-aligned, then empty
//! 10-bit fixed blocks reach the next even-aligned block start.

use std::ffi::c_int;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use libz_rs_sys as z;

use super::{Edit, Unpatchable};
use crate::ImageError;

const WINDOW: u64 = 32 * 1024;
const CHUNK: usize = 1 << 20;

/// Where a deflate block starts: its first output byte and its first bit
/// in the file (bit 0 = least significant bit of byte 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockStart {
    pub out: u64,
    pub bit: u64,
}

/// What one pass over a single-member gzip file learns.
#[derive(Debug)]
pub struct Member {
    /// Block starts in stream order; the first is the start of the data.
    pub blocks: Vec<BlockStart>,
    /// The bit just after the final block.
    pub end_bit: u64,
    /// Decompressed length and CRC-32 (checked against the trailer).
    pub size: u64,
    pub crc: u32,
}

fn corrupt(what: impl Into<String>) -> Unpatchable {
    Unpatchable::Image(ImageError::NotDiskImage(format!("gzip: {}", what.into())))
}

fn new_stream() -> Box<z::z_stream> {
    Box::default()
}

/// A raw inflate stream, ended on drop.
struct Inflater(Box<z::z_stream>);

impl Inflater {
    fn new() -> Self {
        let mut s = new_stream();
        // SAFETY: `s` is a fully initialised z_stream with valid allocators;
        // the version and size are the ones libz-sys was built against.
        let rc = unsafe {
            z::inflateInit2_(
                &mut *s,
                -15,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            )
        };
        assert_eq!(rc, z::Z_OK, "inflateInit2 failed");
        Inflater(s)
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`.
        unsafe { z::inflateEnd(&mut *self.0) };
    }
}

/// A raw deflate stream, ended on drop.
struct Deflater(Box<z::z_stream>);

impl Deflater {
    fn new() -> Self {
        let mut s = new_stream();
        // SAFETY: as in `Inflater::new`.
        let rc = unsafe {
            z::deflateInit2_(
                &mut *s,
                6,
                z::Z_DEFLATED,
                -15,
                8,
                z::Z_DEFAULT_STRATEGY,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            )
        };
        assert_eq!(rc, z::Z_OK, "deflateInit2 failed");
        Deflater(s)
    }

    /// Compresses `input` (all of it) and appends what comes out to `out`.
    fn run(&mut self, input: &[u8], flush: c_int, out: &mut Vec<u8>) {
        let s = &mut *self.0;
        s.next_in = input.as_ptr();
        s.avail_in = input.len() as z::uInt;
        loop {
            let start = out.len();
            out.reserve(CHUNK);
            let room = (out.capacity() - start).min(1 << 30);
            // SAFETY: next_out points at `room` writable bytes of `out`'s
            // spare capacity; only what zlib reports written is kept.
            let rc = unsafe {
                s.next_out = out.as_mut_ptr().add(start);
                s.avail_out = room as z::uInt;
                let rc = z::deflate(s, flush);
                out.set_len(start + room - s.avail_out as usize);
                rc
            };
            assert!(
                rc == z::Z_OK || rc == z::Z_STREAM_END || rc == z::Z_BUF_ERROR,
                "deflate: {rc}"
            );
            if s.avail_in == 0 && s.avail_out != 0 {
                break;
            }
        }
    }
}

impl Drop for Deflater {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`.
        unsafe { z::deflateEnd(&mut *self.0) };
    }
}

/// Length of the gzip member header at the start of `head`.
fn header_len(head: &[u8]) -> Result<usize, Unpatchable> {
    if head.len() < 10 || head[..3] != [0x1f, 0x8b, 8] {
        return Err(corrupt("not a gzip file"));
    }
    let flags = head[3];
    if flags & 0xe0 != 0 {
        return Err(corrupt("reserved header flags set"));
    }
    let mut at = 10;
    if flags & 4 != 0 {
        let xlen = head
            .get(at..at + 2)
            .ok_or_else(|| corrupt("truncated header"))?;
        at += 2 + u16::from_le_bytes([xlen[0], xlen[1]]) as usize;
    }
    for flag in [8u8, 16] {
        if flags & flag != 0 {
            let nul = head
                .get(at..)
                .and_then(|r| r.iter().position(|&b| b == 0))
                .ok_or_else(|| corrupt("header name or comment is not terminated"))?;
            at += nul + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    if at > head.len() {
        return Err(corrupt("truncated header"));
    }
    Ok(at)
}

/// Decompresses the single gzip member in `input` into `out`, noting every
/// block start. Checks the trailer; a second member or trailing bytes make
/// the file unspliceable. Writing (and the CRC) run on a second thread.
pub fn decode(input: &File, out: &mut (dyn Write + Send)) -> Result<Member, Unpatchable> {
    let (full, filled) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
    let (empty, recycled) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> std::io::Result<u32> {
            let mut crc = crc32fast::Hasher::new();
            for buf in filled {
                crc.update(&buf);
                out.write_all(&buf)?;
                let _ = empty.send(buf);
            }
            Ok(crc.finalize())
        });
        let inflated = inflate_indexed(input, |buf| {
            let next = recycled
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
            // A closed channel means the writer failed; its error wins below.
            let _ = full.send(std::mem::replace(buf, next));
        });
        drop(full);
        let crc = writer.join().expect("decode writer panicked")?;
        let (member, trailer_crc) = inflated?;
        if trailer_crc != crc {
            return Err(corrupt("CRC does not match the data"));
        }
        Ok(Member { crc, ..member })
    })
}

/// The inflate half of `decode`: hands over full output buffers, returns
/// the member (crc still 0) and the trailer's CRC.
fn inflate_indexed(
    input: &File,
    mut hand_over: impl FnMut(&mut Vec<u8>),
) -> Result<(Member, u32), Unpatchable> {
    let file_len = input.metadata()?.len();
    let mut head = vec![0u8; (64 * 1024).min(file_len as usize)];
    input.read_exact_at(&mut head, 0)?;
    let start = header_len(&head)? as u64;
    let mut inf = Inflater::new();
    let mut inbuf = vec![0u8; CHUNK];
    let mut outbuf: Vec<u8> = Vec::with_capacity(CHUNK);
    let mut read_at = start;
    let mut blocks = vec![BlockStart {
        out: 0,
        bit: start * 8,
    }];
    let mut size = 0u64;
    let mut final_end = None;
    let s = &mut *inf.0;
    loop {
        if s.avail_in == 0 {
            let n = input.read_at(&mut inbuf, read_at)?;
            if n == 0 {
                return Err(corrupt("unexpected end of file"));
            }
            read_at += n as u64;
            s.next_in = inbuf.as_mut_ptr();
            s.avail_in = n as z::uInt;
        }
        let filled = outbuf.len();
        let room = CHUNK - filled;
        // SAFETY: next_in points at `avail_in` bytes of `inbuf`; next_out at
        // `room` bytes of `outbuf`'s spare capacity, of which only what
        // zlib reports written is kept.
        let rc = unsafe {
            s.next_out = outbuf.as_mut_ptr().add(filled);
            s.avail_out = room as z::uInt;
            let rc = z::inflate(s, z::Z_BLOCK);
            outbuf.set_len(CHUNK - s.avail_out as usize);
            rc
        };
        size += (outbuf.len() - filled) as u64;
        if outbuf.len() == CHUNK || rc == z::Z_STREAM_END {
            hand_over(&mut outbuf);
            outbuf.clear();
        }
        let consumed = start + s.total_in;
        let pending = (s.data_type & 63) as u64;
        match rc {
            z::Z_STREAM_END => {
                // zlib skips the final byte's padding before reporting the
                // end, so the exact end was noted when the block ended.
                let end_bit = final_end.ok_or_else(|| corrupt("final block end not seen"))?;
                let mut trailer = [0u8; 8];
                input
                    .read_exact_at(&mut trailer, consumed)
                    .map_err(|_| corrupt("truncated trailer"))?;
                if u32::from_le_bytes(trailer[4..].try_into().unwrap()) != size as u32 {
                    return Err(corrupt("length does not match the data"));
                }
                if consumed + 8 != file_len {
                    return Err(Unpatchable::Layout(
                        "more than one gzip member (or data after it)".into(),
                    ));
                }
                let member = Member {
                    blocks,
                    end_bit,
                    size,
                    crc: 0,
                };
                return Ok((member, u32::from_le_bytes(trailer[..4].try_into().unwrap())));
            }
            z::Z_OK | z::Z_BUF_ERROR => {}
            rc => return Err(corrupt(format!("invalid deflate data (zlib {rc})"))),
        }
        // Just after a block's end-of-block code: the next block starts
        // here, or (after the final block) the padding before the trailer.
        if s.data_type & 128 != 0 {
            let bit = consumed * 8 - pending;
            if s.data_type & 64 == 0 {
                blocks.push(BlockStart { out: size, bit });
            } else {
                final_end = Some(bit);
            }
        }
    }
}

/// Bits into a byte stream, least significant first, as deflate packs them.
struct BitWriter<'a> {
    out: &'a mut dyn Write,
    buf: Vec<u8>,
    /// Fewer than 8 bits not yet in `buf`.
    acc: u64,
    n: u32,
}

impl<'a> BitWriter<'a> {
    fn new(out: &'a mut dyn Write) -> Self {
        BitWriter {
            out,
            buf: Vec::with_capacity(2 * CHUNK),
            acc: 0,
            n: 0,
        }
    }

    fn spill(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn put_bits(&mut self, value: u64, count: u32) {
        debug_assert!(count <= 56);
        self.acc |= (value & ((1u64 << count) - 1)) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.buf.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn put_bytes(&mut self, bytes: &[u8]) {
        if self.n == 0 {
            self.buf.extend_from_slice(bytes);
            return;
        }
        let mut words = bytes.chunks_exact(7);
        for w in &mut words {
            let mut v = [0u8; 8];
            v[..7].copy_from_slice(w);
            let all = self.acc | (u64::from_le_bytes(v) << self.n);
            self.buf.extend_from_slice(&all.to_le_bytes()[..7]);
            self.acc = all >> 56;
        }
        for &b in words.remainder() {
            self.put_bits(b as u64, 8);
        }
    }

    /// Copies bits `[from, to)` of `src`, which must land at the same
    /// alignment (so whole bytes are copied as they are).
    fn copy_bits(&mut self, src: &File, from: u64, to: u64) -> std::io::Result<()> {
        if from >= to {
            return Ok(());
        }
        assert_eq!(self.n as u64, from % 8, "copy at a different alignment");
        let mut byte = from / 8;
        let lead = (from % 8) as u32;
        if lead != 0 {
            let mut b = [0u8];
            src.read_exact_at(&mut b, byte)?;
            let count = (8 - lead).min((to - from) as u32);
            self.put_bits((b[0] >> lead) as u64, count);
            byte += 1;
        }
        let whole_end = to / 8;
        let mut chunk = vec![0u8; CHUNK];
        while byte < whole_end {
            let n = ((whole_end - byte) as usize).min(CHUNK);
            src.read_exact_at(&mut chunk[..n], byte)?;
            self.put_bytes(&chunk[..n]);
            self.spill()?;
            byte += n as u64;
        }
        let tail = (to % 8) as u32;
        if tail != 0 && to / 8 >= from.div_ceil(8) {
            let mut b = [0u8];
            src.read_exact_at(&mut b, to / 8)?;
            self.put_bits(b[0] as u64, tail);
        }
        Ok(())
    }

    /// Hands the odd bits over (to prime a compressor).
    fn take_odd_bits(&mut self) -> (u32, u64) {
        let odd = (self.n, self.acc);
        self.acc = 0;
        self.n = 0;
        odd
    }

    fn finish(mut self) -> std::io::Result<()> {
        if self.n > 0 {
            self.buf.push(self.acc as u8);
        }
        self.out.write_all(&self.buf)
    }
}

/// `crc` as if followed by `zeros` zero bytes, minus the effect of the
/// CRC's pre/post conditioning: the linear part that moves with the data.
fn shift(crc: u32, zeros: u64) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial_len(crc, 0);
    h.combine(&crc32fast::Hasher::new_with_initial_len(0, zeros));
    h.finalize()
}

fn crc(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(bytes);
    h.finalize()
}

/// The decompressed data with the edits applied, read from `decoded`.
fn read_new(decoded: &File, edits: &[Edit], at: u64, buf: &mut [u8]) -> std::io::Result<()> {
    decoded.read_exact_at(buf, at)?;
    super::overlay(edits, at, buf);
    Ok(())
}

/// A stretch to compress anew: from one block start to the next block
/// start that is clear of every change (None: to the end of the data).
#[derive(Debug)]
struct Stretch {
    from: BlockStart,
    to: Option<BlockStart>,
}

fn stretches(member: &Member, edits: &[Edit], appending: bool) -> Vec<Stretch> {
    let mut out: Vec<Stretch> = Vec::new();
    let mut add = |from: BlockStart, to: Option<BlockStart>| {
        if let Some(last) = out.last_mut() {
            if last.to.is_none_or(|t| t.out >= from.out) {
                if to.is_none_or(|t| last.to.is_some_and(|l| t.out > l.out)) {
                    last.to = to;
                }
                return;
            }
        }
        out.push(Stretch { from, to });
    };
    for e in edits {
        let first = member.blocks.partition_point(|b| b.out <= e.at) - 1;
        let clear = e.at + e.bytes.len() as u64 + WINDOW;
        // The original bits are copied at their original alignment (stored
        // blocks among them pad to byte boundaries), which empty 10-bit
        // blocks can reach from a byte boundary only for even offsets.
        let next = member.blocks.partition_point(|b| b.out < clear);
        let to = member.blocks[next..].iter().find(|b| b.bit % 2 == 0);
        add(member.blocks[first], to.copied());
    }
    if appending {
        add(*member.blocks.last().expect("at least one block"), None);
    }
    out
}

/// How much the splice compressed anew.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpliceStats {
    pub recompressed: u64,
    pub stretches: usize,
}

/// Writes the edited member to `out`: `edits` (sorted, disjoint, inside
/// the data) replace bytes in place and `appended` follows the data.
pub fn splice(
    input: &File,
    member: &Member,
    decoded: &File,
    edits: &[Edit],
    appended: &[u8],
    out: &mut dyn Write,
) -> Result<SpliceStats, ImageError> {
    let header = member.blocks[0].bit / 8;
    let mut head = vec![0u8; header as usize];
    input.read_exact_at(&mut head, 0)?;
    // The CRC of the edited data, from the old one and the changes alone.
    let mut new_crc = member.crc;
    for e in edits {
        let mut old = vec![0u8; e.bytes.len()];
        decoded.read_exact_at(&mut old, e.at)?;
        let delta: Vec<u8> = old.iter().zip(&e.bytes).map(|(a, b)| a ^ b).collect();
        let linear = crc(&delta) ^ crc(&vec![0u8; delta.len()]);
        new_crc ^= shift(linear, member.size - e.at - e.bytes.len() as u64);
    }
    let mut total_crc = crc32fast::Hasher::new_with_initial_len(new_crc, member.size);
    total_crc.update(appended);

    let mut w = BitWriter::new(out);
    w.put_bytes(&head);
    let mut stats = SpliceStats::default();
    let mut bit = member.blocks[0].bit;
    let mut buf = vec![0u8; CHUNK];
    for s in stretches(member, edits, !appended.is_empty()) {
        w.copy_bits(input, bit, s.from.bit)?;
        let mut d = Deflater::new();
        let (n, odd) = w.take_odd_bits();
        let end = s.to.map_or(member.size, |t| t.out);
        // SAFETY: the stream is fresh; prime and dictionary come before
        // the first deflate call, as zlib requires.
        unsafe {
            if n > 0 {
                z::deflatePrime(&mut *d.0, n as c_int, odd as c_int);
            }
            let dict_from = s.from.out.saturating_sub(WINDOW);
            let dict = &mut buf[..(s.from.out - dict_from) as usize];
            read_new(decoded, edits, dict_from, dict)?;
            z::deflateSetDictionary(&mut *d.0, dict.as_ptr(), dict.len() as z::uInt);
        }
        let mut at = s.from.out;
        let mut compressed = Vec::new();
        while at < end {
            let n = ((end - at) as usize).min(CHUNK);
            read_new(decoded, edits, at, &mut buf[..n])?;
            d.run(&buf[..n], z::Z_NO_FLUSH, &mut compressed);
            w.put_bytes(&compressed);
            compressed.clear();
            w.spill()?;
            at += n as u64;
        }
        stats.recompressed += end - s.from.out;
        stats.stretches += 1;
        match s.to {
            Some(to) => {
                // A byte boundary (empty stored block), then empty fixed
                // blocks of 10 bits up to the alignment the copy needs.
                d.run(&[], z::Z_SYNC_FLUSH, &mut compressed);
                w.put_bytes(&compressed);
                compressed.clear();
                for _ in 0..(to.bit % 8) / 2 {
                    w.put_bits(0b010, 10);
                }
                bit = to.bit;
            }
            None => {
                d.run(appended, z::Z_FINISH, &mut compressed);
                stats.recompressed += appended.len() as u64;
                bit = member.end_bit;
            }
        }
        w.put_bytes(&compressed);
    }
    w.copy_bits(input, bit, member.end_bit)?;
    let size = member.size + appended.len() as u64;
    let mut trailer = total_crc.finalize().to_le_bytes().to_vec();
    trailer.extend_from_slice(&(size as u32).to_le_bytes());
    w.finish()?;
    out.write_all(&trailer)?;
    Ok(stats)
}

#[cfg(test)]
mod tests;

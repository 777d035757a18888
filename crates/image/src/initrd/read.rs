//! Reading an initrd the way the kernel unpacks it and coreos-installer
//! reads it: a sequence of members, each one newc cpio archive, raw or
//! compressed (gzip, xz, zstd), with any number of zero bytes between
//! members. dracut writes exactly that (a raw early-microcode archive,
//! then the compressed main one), and `--append-to` adds one more member.
//!
//! The same rules as coreos-installer (`Initrd::from_reader`), so that
//! what we accept it accepts: a member starts wherever the zero padding
//! ends, is recognised by its magic, and must end with its `TRAILER!!!`
//! entry; after the trailer a compressed member may hold only zeros. A
//! zstd member is a run of zstd frames (one archive may span frames), a
//! gzip or xz member is one gzip member or one xz stream. Names may carry
//! extra NULs (dracut-cpio's `--data-align` pads the name so that file
//! data starts on a block boundary); only the bytes before the first NUL
//! are the name. A path repeated later replaces the earlier copy, as the
//! kernel overwrites it.
//!
//! Stricter than coreos-installer: names must stay below the root (no
//! absolute paths, no `..`), and a name field longer than PATH_MAX (which
//! the kernel silently skips) is refused; `./` and `//` in names are
//! normalised, so `./etc/x` and `etc/x` are one path, as for the kernel.
//!
//! Our own newc parser rather than the `cpio` crate's reader: that one
//! reads a name field of whatever length the header declares (up to
//! 4 GiB, from a decompression bomb), and its errors are untyped strings
//! without a position; here every length is checked before use, memory is
//! bounded (PATH_MAX names, [`MAX_KEPT`] of kept contents, decoder memory
//! limits), and each problem names the member, the entry and the byte.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};

use super::Member;

/// Longest name field read: the kernel's PATH_MAX (it skips entries with
/// longer names; dracut-cpio keeps its padded names within it).
pub const PATH_MAX: u32 = 4096;
/// File contents kept in memory at most, so that a decompression bomb
/// fails cleanly instead of exhausting memory.
pub const MAX_KEPT: u64 = 512 << 20;
/// Memory the xz decoder may use (presets up to -9 need 65 MiB).
const XZ_MEMLIMIT: u64 = 256 << 20;
/// Largest zstd window accepted (2^27 = 128 MiB, zstd's own default).
const ZSTD_WINDOW_LOG_MAX: u32 = 27;
/// Size of a newc header.
const HEADER: usize = 110;

/// What a member of the initrd is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Cpio,
    Gzip,
    Xz,
    Zstd,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Format::Cpio => "cpio",
            Format::Gzip => "gzip",
            Format::Xz => "xz",
            Format::Zstd => "zstd",
        })
    }
}

/// Where in the initrd a problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The member's number, from 1.
    pub member: usize,
    /// The byte of the file where the member starts.
    pub offset: u64,
    /// What the member is, once recognised.
    pub format: Option<Format>,
    /// The cpio entry (numbered from 1) and its byte: in the file for a
    /// raw member, in the decompressed data for a compressed one.
    pub entry: Option<(usize, u64)>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let Some(format) = self.format else {
            return write!(f, "member {} (at byte {})", self.member, self.offset);
        };
        write!(
            f,
            "member {} ({format} at byte {})",
            self.member, self.offset
        )?;
        if let Some((n, at)) = self.entry {
            write!(f, ", entry {n} at byte {at}")?;
            if format != Format::Cpio {
                f.write_str(" of its decompressed data")?;
            }
        }
        Ok(())
    }
}

/// A problem with an initrd, and where it is.
#[derive(Debug, thiserror::Error)]
#[error("{location}: {problem}")]
pub struct InitrdError {
    pub location: Location,
    pub problem: Problem,
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("{0} data, which coreos-installer does not read (only raw cpio, gzip, xz and zstd)")]
    Unsupported(&'static str),
    #[error("an old portable (odc) cpio archive: the kernel reads only newc (070701, 070702)")]
    Odc,
    #[error("neither a newc cpio archive nor gzip, xz or zstd data (it starts with {0})")]
    Unknown(String),
    #[error("cannot decompress: {0}")]
    Decompress(io::Error),
    #[error("the archive ends without its cpio trailer (TRAILER!!!)")]
    NoTrailer,
    #[error("the data ends inside the cpio {0}")]
    Truncated(&'static str),
    #[error("no cpio magic (070701 or 070702) where an entry should start")]
    BadMagic,
    #[error("the cpio header's {0} field is not 8 hex digits")]
    BadField(&'static str),
    #[error("the name field is {0} bytes, more than PATH_MAX ({PATH_MAX}); the kernel would skip the entry")]
    NameTooLong(u32),
    #[error("the name is not NUL-terminated")]
    NameUnterminated,
    #[error("the name has a NUL byte inside it")]
    NameNul,
    #[error("the name is not UTF-8")]
    NameNotUtf8,
    #[error("path {0:?} is absolute; paths must stay below the root")]
    Absolute(String),
    #[error("path {0:?} has a `..` component; paths must stay below the root")]
    ParentDir(String),
    #[error("name {0:?} is the root itself, but the entry is not a directory")]
    Root(String),
    #[error("data other than zero padding follows the cpio trailer inside the compressed stream (at byte {0} of its decompressed data)")]
    TrailingData(u64),
    #[error("more than {} MiB of file contents to keep", MAX_KEPT >> 20)]
    TooMuchData,
}

/// Every entry of the initrd `data`, one per path (the last copy), sorted
/// by path; the root directory entry (`.`) is left out. Contents are kept
/// for the paths `keep` accepts and left empty for the others, so a whole
/// live initramfs can be listed without holding it decompressed.
pub fn read_initrd(data: &[u8], keep: &dyn Fn(&str) -> bool) -> Result<Vec<Member>, InitrdError> {
    let mut r = Reading {
        keep,
        kept: 0,
        found: BTreeMap::new(),
    };
    let mut pos = 0;
    let mut member = 0;
    loop {
        pos += data[pos..].iter().take_while(|b| **b == 0).count();
        if pos == data.len() {
            return Ok(r.found.into_values().collect());
        }
        member += 1;
        let rest = &data[pos..];
        let mut loc = Location {
            member,
            offset: pos as u64,
            format: None,
            entry: None,
        };
        let format = sniff(rest).map_err(|problem| InitrdError {
            location: loc.clone(),
            problem,
        })?;
        loc.format = Some(format);
        let left = match format {
            Format::Cpio => {
                let mut src = rest;
                r.archive(&mut src, &mut loc)?;
                src.len()
            }
            Format::Gzip => {
                let mut d = flate2::bufread::GzDecoder::new(rest);
                r.archive(&mut d, &mut loc)?;
                d.get_ref().len()
            }
            Format::Xz => {
                let mut d = XzMember::new(rest).map_err(|e| InitrdError {
                    location: loc.clone(),
                    problem: Problem::Decompress(e),
                })?;
                r.archive(&mut d, &mut loc)?;
                d.input.len()
            }
            Format::Zstd => {
                let mut d = ZstdMember::new(rest).map_err(|e| InitrdError {
                    location: loc.clone(),
                    problem: Problem::Decompress(e),
                })?;
                r.archive(&mut d, &mut loc)?;
                d.input.len()
            }
        };
        // Each member consumes at least its 110-byte first header.
        debug_assert!(left < rest.len());
        pos += rest.len() - left;
    }
}

/// What the bytes at the start of a member are.
fn sniff(d: &[u8]) -> Result<Format, Problem> {
    Ok(if d.starts_with(b"070701") || d.starts_with(b"070702") {
        Format::Cpio
    } else if d.starts_with(&[0x1f, 0x8b]) {
        Format::Gzip
    } else if d.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Format::Xz
    } else if d.get(..4).is_some_and(is_zstd_magic) {
        Format::Zstd
    } else if d.starts_with(b"070707") {
        return Err(Problem::Odc);
    } else if d.starts_with(b"BZh") {
        return Err(Problem::Unsupported("bzip2"));
    } else if d.starts_with(&[0x5d, 0, 0]) {
        return Err(Problem::Unsupported("lzma"));
    } else if d.starts_with(&[0x89, b'L', b'Z', b'O']) {
        return Err(Problem::Unsupported("lzop"));
    } else if d.starts_with(&[0x02, 0x21, 0x4c, 0x18]) || d.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        return Err(Problem::Unsupported("lz4"));
    } else {
        let head: Vec<String> = d.iter().take(8).map(|b| format!("{b:02x}")).collect();
        return Err(Problem::Unknown(head.join(" ")));
    })
}

/// A zstd frame or a skippable frame (which the decoder skips).
fn is_zstd_magic(b: &[u8]) -> bool {
    let Ok(b) = <[u8; 4]>::try_from(b) else {
        return false;
    };
    let v = u32::from_le_bytes(b);
    v == 0xfd2f_b528 || v & 0xffff_fff0 == 0x184d_2a50
}

struct Reading<'k> {
    keep: &'k dyn Fn(&str) -> bool,
    /// Bytes of contents held in `found`.
    kept: u64,
    found: BTreeMap<String, Member>,
}

/// One parsed newc header.
struct Header {
    mode: u32,
    size: u32,
    namesize: u32,
}

impl Reading<'_> {
    /// Reads one cpio archive, up to and including its trailer, from the
    /// start of `src`; for a compressed member, then checks that only
    /// zeros follow until the end of the compressed stream.
    fn archive(&mut self, src: &mut dyn Read, loc: &mut Location) -> Result<(), InitrdError> {
        let compressed = loc.format != Some(Format::Cpio);
        let mut src = Counter { inner: src, n: 0 };
        for n in 1.. {
            let at = if compressed {
                src.n
            } else {
                loc.offset + src.n
            };
            loc.entry = Some((n, at));
            match self.entry(&mut src) {
                Ok(true) => {}
                Ok(false) => break,
                Err(problem) => {
                    return Err(InitrdError {
                        location: loc.clone(),
                        problem,
                    })
                }
            }
        }
        if compressed {
            let fail = |problem| InitrdError {
                location: Location {
                    entry: None,
                    ..loc.clone()
                },
                problem,
            };
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let got = read_full(&mut src, &mut buf).map_err(fail)?;
                if let Some(i) = buf[..got].iter().position(|b| *b != 0) {
                    return Err(fail(Problem::TrailingData(src.n - (got - i) as u64)));
                }
                if got < buf.len() {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Reads one entry; false once it was the trailer.
    fn entry(&mut self, src: &mut Counter) -> Result<bool, Problem> {
        let mut raw = [0u8; HEADER];
        match read_full(src, &mut raw)? {
            0 => return Err(Problem::NoTrailer),
            HEADER => {}
            _ => return Err(Problem::Truncated("header")),
        }
        let h = header(&raw)?;
        if h.namesize > PATH_MAX {
            return Err(Problem::NameTooLong(h.namesize));
        }
        let mut name = vec![0u8; h.namesize as usize];
        if read_full(src, &mut name)? < name.len() {
            return Err(Problem::Truncated("name"));
        }
        if name.last() != Some(&0) {
            return Err(Problem::NameUnterminated);
        }
        // dracut-cpio's data alignment pads the name field with NULs.
        while name.last() == Some(&0) {
            name.pop();
        }
        if name.contains(&0) {
            return Err(Problem::NameNul);
        }
        let name = String::from_utf8(name).map_err(|_| Problem::NameNotUtf8)?;
        skip(
            src,
            pad4(HEADER as u64 + u64::from(h.namesize)),
            "name padding",
        )?;

        let size = u64::from(h.size);
        if name == "TRAILER!!!" {
            skip(src, size + pad4(size), "trailer")?;
            return Ok(false);
        }
        let is_dir = h.mode & 0o170000 == 0o040000;
        let path = match normalize(&name)? {
            Some(p) => p,
            None if is_dir => {
                skip(src, size + pad4(size), "file contents")?;
                return Ok(true);
            }
            None => return Err(Problem::Root(name)),
        };
        let data = if (self.keep)(&path) {
            let budget = MAX_KEPT - self.kept;
            let mut data = Vec::new();
            src.take(size.min(budget + 1))
                .read_to_end(&mut data)
                .map_err(Problem::Decompress)?;
            if data.len() as u64 > budget {
                return Err(Problem::TooMuchData);
            }
            if (data.len() as u64) < size {
                return Err(Problem::Truncated("file contents"));
            }
            self.kept += size;
            data
        } else {
            skip(src, size, "file contents")?;
            Vec::new()
        };
        skip(src, pad4(size), "file contents' padding")?;
        let member = Member {
            path: path.clone(),
            mode: h.mode,
            data,
        };
        if let Some(old) = self.found.insert(path, member) {
            self.kept -= old.data.len() as u64;
        }
        Ok(true)
    }
}

/// The fields of a newc header the reader needs, after checking the magic
/// and that every field is 8 hex digits (as coreos-installer does).
fn header(raw: &[u8; HEADER]) -> Result<Header, Problem> {
    match &raw[..6] {
        b"070701" | b"070702" => {}
        b"070707" => return Err(Problem::Odc),
        _ => return Err(Problem::BadMagic),
    }
    const FIELDS: [&str; 13] = [
        "ino",
        "mode",
        "uid",
        "gid",
        "nlink",
        "mtime",
        "filesize",
        "devmajor",
        "devminor",
        "rdevmajor",
        "rdevminor",
        "namesize",
        "check",
    ];
    let mut v = [0u32; 13];
    for (i, name) in FIELDS.iter().enumerate() {
        let digits = &raw[6 + 8 * i..14 + 8 * i];
        v[i] = digits.iter().try_fold(0u32, |acc, d| {
            let d = (*d as char).to_digit(16).ok_or(Problem::BadField(name))?;
            Ok((acc << 4) | d)
        })?;
    }
    Ok(Header {
        mode: v[1],
        size: v[6],
        namesize: v[11],
    })
}

/// The path a name stands for, relative to the root with `.` components
/// and repeated slashes dropped; None for the root itself.
fn normalize(name: &str) -> Result<Option<String>, Problem> {
    if name.starts_with('/') {
        return Err(Problem::Absolute(name.to_string()));
    }
    let mut parts = Vec::new();
    for c in name.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err(Problem::ParentDir(name.to_string())),
            c => parts.push(c),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}

/// Bytes after `len` up to the next multiple of 4.
fn pad4(len: u64) -> u64 {
    (4 - len % 4) % 4
}

/// Reads until `buf` is full or the data ends; how many bytes were read.
fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> Result<usize, Problem> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Problem::Decompress(e)),
        }
    }
    Ok(got)
}

/// Reads and drops `n` bytes that must be there.
fn skip(src: &mut Counter, n: u64, what: &'static str) -> Result<(), Problem> {
    let copied = io::copy(&mut src.take(n), &mut io::sink()).map_err(Problem::Decompress)?;
    if copied < n {
        return Err(Problem::Truncated(what));
    }
    Ok(())
}

/// Counts the bytes read through it (entry positions for messages).
struct Counter<'a> {
    inner: &'a mut dyn Read,
    n: u64,
}

impl Read for Counter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let got = self.inner.read(buf)?;
        self.n += got as u64;
        Ok(got)
    }
}

/// One xz stream from the start of `input`, leaving `input` just after
/// it. (xz2's readers either run on into the next stream or fail on the
/// bytes after the first one.)
struct XzMember<'a> {
    input: &'a [u8],
    stream: xz2::stream::Stream,
    done: bool,
}

impl<'a> XzMember<'a> {
    fn new(input: &'a [u8]) -> io::Result<Self> {
        let stream =
            xz2::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, 0).map_err(io::Error::other)?;
        Ok(XzMember {
            input,
            stream,
            done: false,
        })
    }
}

impl Read for XzMember<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use xz2::stream::{Action, Error, Status};
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        loop {
            let (in0, out0) = (self.stream.total_in(), self.stream.total_out());
            let action = if self.input.is_empty() {
                Action::Finish
            } else {
                Action::Run
            };
            let status = self
                .stream
                .process(self.input, buf, action)
                .map_err(|e| match e {
                    Error::MemLimit => io::Error::other(format!(
                        "the xz data needs more than {} MiB of memory to decompress",
                        XZ_MEMLIMIT >> 20
                    )),
                    e => io::Error::new(io::ErrorKind::InvalidData, format!("xz: {e}")),
                })?;
            let used = (self.stream.total_in() - in0) as usize;
            let out = (self.stream.total_out() - out0) as usize;
            self.input = &self.input[used..];
            if status == Status::StreamEnd {
                self.done = true;
                return Ok(out);
            }
            if out > 0 {
                return Ok(out);
            }
            if used == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the xz stream is cut short",
                ));
            }
        }
    }
}

/// zstd frames from the start of `input` while they follow one another,
/// leaving `input` just after the last.
struct ZstdMember<'a> {
    input: &'a [u8],
    decoder: zstd::stream::raw::Decoder<'static>,
    in_frame: bool,
}

impl<'a> ZstdMember<'a> {
    fn new(input: &'a [u8]) -> io::Result<Self> {
        let mut decoder = zstd::stream::raw::Decoder::new()?;
        decoder.set_parameter(zstd::stream::raw::DParameter::WindowLogMax(
            ZSTD_WINDOW_LOG_MAX,
        ))?;
        Ok(ZstdMember {
            input,
            decoder,
            in_frame: false,
        })
    }
}

impl Read for ZstdMember<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use zstd::stream::raw::Operation;
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.in_frame {
                if !self.input.get(..4).is_some_and(is_zstd_magic) {
                    return Ok(0);
                }
                self.in_frame = true;
            }
            if self.input.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the zstd frame is cut short",
                ));
            }
            let st = self
                .decoder
                .run_on_buffers(self.input, buf)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}")))?;
            self.input = &self.input[st.bytes_read..];
            if st.remaining == 0 {
                self.in_frame = false;
            }
            if st.bytes_written > 0 {
                return Ok(st.bytes_written);
            }
            if st.bytes_read == 0 && self.in_frame {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "zstd: the decoder makes no progress",
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;

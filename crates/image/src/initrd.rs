//! The initrd payloads CoreOS reads at first boot: a newc cpio archive
//! compressed with xz (CRC32 check, as the kernel's decompressor wants),
//! holding `etc/coreos-firstboot-network/<name>` keyfiles (0600) and
//! optionally `config.ign`.

use std::io::{Read, Write};

use crate::ImageError;

/// Directory CoreOS copies to /run/NetworkManager/system-connections.
pub const NETWORK_DIR: &str = "etc/coreos-firstboot-network";
/// Marker file of a CoreOS live initramfs.
pub const LIVE_MARKER: &str = "etc/coreos-live-initramfs";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub path: String,
    /// Full st_mode (file type and permissions).
    pub mode: u32,
    pub data: Vec<u8>,
}

impl Member {
    pub fn file(path: impl Into<String>, perm: u32, data: Vec<u8>) -> Member {
        Member {
            path: path.into(),
            mode: 0o100000 | perm,
            data,
        }
    }

    pub fn dir(path: impl Into<String>) -> Member {
        Member {
            path: path.into(),
            mode: 0o040755,
            data: Vec::new(),
        }
    }

    pub fn is_dir(&self) -> bool {
        self.mode & 0o170000 == 0o040000
    }
}

/// A newc archive of `members`: uid/gid 0, mtime 0, so the same input
/// always gives the same bytes.
pub fn cpio(members: &[Member]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, m) in members.iter().enumerate() {
        let b = cpio::newc::Builder::new(&m.path)
            .ino(i as u32 + 1)
            .mode(m.mode)
            .uid(0)
            .gid(0)
            .mtime(0)
            .nlink(if m.is_dir() { 2 } else { 1 });
        let mut w = b.write(&mut out, m.data.len() as u32);
        w.write_all(&m.data).expect("writing to memory");
        w.finish().expect("writing to memory");
    }
    cpio::newc::trailer(&mut out).expect("writing to memory");
    out
}

/// xz with a CRC32 check (the kernel's xz decoder has no CRC64/SHA256).
/// Preset 6: payloads are kilobytes, and preset 9 would reserve ~670 MiB.
pub fn xz(data: &[u8]) -> Vec<u8> {
    let stream = xz2::stream::Stream::new_easy_encoder(6, xz2::stream::Check::Crc32)
        .expect("xz preset 6 is valid");
    let mut enc = xz2::write::XzEncoder::new_stream(Vec::new(), stream);
    enc.write_all(data).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// The network (and Ignition) payload as CoreOS wants it.
pub fn network_payload(keyfiles: &[(String, Vec<u8>)], ignition: Option<&[u8]>) -> Vec<u8> {
    let mut members = Vec::new();
    if let Some(ign) = ignition {
        members.push(Member::file("config.ign", 0o644, ign.to_vec()));
    }
    if !keyfiles.is_empty() {
        members.push(Member::dir("etc"));
        members.push(Member::dir(NETWORK_DIR));
        for (name, data) in keyfiles {
            members.push(Member::file(
                format!("{NETWORK_DIR}/{name}"),
                0o600,
                data.clone(),
            ));
        }
    }
    xz(&cpio(&members))
}

/// Reads every member of an initrd: a sequence of cpio archives, each raw
/// or compressed (xz, gzip, zstd), with zero padding between them.
pub fn read_members(mut data: &[u8]) -> Result<Vec<Member>, ImageError> {
    let mut members = Vec::new();
    loop {
        while let Some((&0, rest)) = data.split_first() {
            data = rest;
        }
        if data.is_empty() {
            return Ok(members);
        }
        let bad = |e: std::io::Error| ImageError::BadInitrd(e.to_string());
        let (archive, used): (Vec<u8>, usize) =
            if data.starts_with(b"070701") || data.starts_with(b"070702") {
                (data.to_vec(), 0)
            } else if data.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
                // Multi-stream mode accepts the zero "stream padding" that
                // fills the rest of an embed area after the payload.
                let mut dec = xz2::bufread::XzDecoder::new_multi_decoder(data);
                let mut out = Vec::new();
                dec.read_to_end(&mut out).map_err(bad)?;
                (out, dec.total_in() as usize)
            } else if data.starts_with(&[0x1f, 0x8b]) {
                let mut dec = flate2::bufread::GzDecoder::new(data);
                let mut out = Vec::new();
                dec.read_to_end(&mut out).map_err(bad)?;
                let rest = dec.get_ref().len();
                (out, data.len() - rest)
            } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
                let mut out = Vec::new();
                zstd::stream::read::Decoder::new(data)
                    .and_then(|mut d| d.read_to_end(&mut out))
                    .map_err(bad)?;
                // A zstd frame is the last thing in every initramfs seen.
                (out, data.len())
            } else {
                return Err(ImageError::BadInitrd(
                    "neither cpio nor xz/gzip/zstd data".into(),
                ));
            };
        let consumed = parse_cpio(&archive, &mut members)?;
        data = &data[if used == 0 { consumed } else { used }..];
    }
}

/// Parses newc members until the trailer; returns bytes consumed
/// (4-byte aligned).
fn parse_cpio(data: &[u8], out: &mut Vec<Member>) -> Result<usize, ImageError> {
    let mut pos = 0;
    let field = |d: &[u8], at: usize| -> Result<u32, ImageError> {
        let s = d
            .get(at..at + 8)
            .ok_or_else(|| ImageError::BadInitrd("truncated cpio header".into()))?;
        u32::from_str_radix(std::str::from_utf8(s).unwrap_or("x"), 16)
            .map_err(|_| ImageError::BadInitrd("bad cpio header".into()))
    };
    loop {
        let h = &data[pos..];
        if !(h.starts_with(b"070701") || h.starts_with(b"070702")) {
            return Err(ImageError::BadInitrd(format!(
                "bad cpio magic at byte {pos}"
            )));
        }
        let mode = field(h, 14)?;
        let size = field(h, 54)? as usize;
        let namesize = field(h, 94)? as usize;
        let name_start = 110;
        let name = h
            .get(name_start..name_start + namesize.saturating_sub(1))
            .ok_or_else(|| ImageError::BadInitrd("truncated cpio name".into()))?;
        let name = String::from_utf8_lossy(name).into_owned();
        let data_start = (name_start + namesize + 3) & !3;
        let body = h
            .get(data_start..data_start + size)
            .ok_or_else(|| ImageError::BadInitrd(format!("truncated cpio member {name}")))?;
        pos += (data_start + size + 3) & !3;
        if name == "TRAILER!!!" {
            return Ok(pos.min(data.len()));
        }
        out.push(Member {
            path: name.trim_start_matches("./").to_string(),
            mode,
            data: body.to_vec(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips_through_our_reader() {
        let kf = vec![(
            "bond0.nmconnection".to_string(),
            b"[connection]\nid=bond0\n".to_vec(),
        )];
        let p = network_payload(&kf, Some(b"{\"ignition\":{\"version\":\"3.2.0\"}}"));
        assert_eq!(&p[..6], &[0xfd, b'7', b'z', b'X', b'Z', 0]);
        let m = read_members(&p).unwrap();
        let kfm = m
            .iter()
            .find(|m| m.path == "etc/coreos-firstboot-network/bond0.nmconnection")
            .unwrap();
        // As it sits in an embed area: followed by zeros.
        let mut padded = p.clone();
        padded.resize(p.len() + 4096, 0);
        assert_eq!(read_members(&padded).unwrap(), m);
        assert_eq!(kfm.mode, 0o100600);
        assert_eq!(kfm.data, kf[0].1);
        assert!(m.iter().any(|m| m.path == "config.ign"));
        // Deterministic.
        assert_eq!(
            p,
            network_payload(&kf, Some(b"{\"ignition\":{\"version\":\"3.2.0\"}}"))
        );
    }
}

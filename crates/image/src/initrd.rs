//! The initrd payloads CoreOS reads at first boot: a newc cpio archive
//! compressed with xz (CRC32 check, as the kernel's decompressor wants),
//! holding `etc/coreos-firstboot-network/<name>` keyfiles (0600) and
//! optionally `config.ign`.

use std::io::Write;

use crate::ImageError;

mod read;
pub use read::{read_initrd, Format, InitrdError, Location, Problem, MAX_KEPT, PATH_MAX};

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

    /// A regular file (what `coreos-installer dev show initrd` lists).
    pub fn is_file(&self) -> bool {
        self.mode & 0o170000 == 0o100000
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

/// Where the payload puts `.link` files (pinned NIC names): the live
/// ramdisk's udev reads them there before it names the NICs.
pub const LINK_DIR: &str = "etc/systemd/network";

/// The network (and Ignition) payload as CoreOS wants it: keyfiles, and
/// `.link` files pinning NIC names.
pub fn network_payload(
    keyfiles: &[(String, Vec<u8>)],
    links: &[(String, Vec<u8>)],
    ignition: Option<&[u8]>,
) -> Vec<u8> {
    let mut members = Vec::new();
    if let Some(ign) = ignition {
        members.push(Member::file("config.ign", 0o644, ign.to_vec()));
    }
    if !keyfiles.is_empty() || !links.is_empty() {
        members.push(Member::dir("etc"));
    }
    if !links.is_empty() {
        members.push(Member::dir("etc/systemd"));
        members.push(Member::dir(LINK_DIR));
        for (name, data) in links {
            members.push(Member::file(
                format!("{LINK_DIR}/{name}"),
                0o644,
                data.clone(),
            ));
        }
    }
    if !keyfiles.is_empty() {
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

/// Every entry of an initrd, with its contents (see [`read_initrd`]).
pub fn read_members(data: &[u8]) -> Result<Vec<Member>, ImageError> {
    Ok(read_initrd(data, &|_| true)?)
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
        let p = network_payload(&kf, &[], Some(b"{\"ignition\":{\"version\":\"3.2.0\"}}"));
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
            network_payload(&kf, &[], Some(b"{\"ignition\":{\"version\":\"3.2.0\"}}"))
        );
    }
}

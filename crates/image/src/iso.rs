//! Embedding network keyfiles (and Ignition) into a CoreOS live ISO's
//! embed area, the way `coreos-installer iso network embed` does: the area
//! is a file of zeros inside the ISO9660 tree (`images/ignition.img`, or
//! what `coreos/igninfo.json` names); the payload is one xz cpio, the rest
//! of the area zero-filled. Only the area's bytes change, so in place the
//! work does not grow with the ISO.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::initrd::{self, Member, NETWORK_DIR};
use crate::ImageError;

const SECTOR: u64 = 2048;

/// Where the embed area lies in the ISO file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Area {
    pub offset: u64,
    pub length: u64,
}

#[derive(Clone, Debug)]
struct Record {
    name: String,
    extent: u64,
    size: u64,
    dir: bool,
}

fn read_at(f: &mut File, offset: u64, len: usize) -> Result<Vec<u8>, ImageError> {
    let mut buf = vec![0; len];
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(&mut buf).map_err(|_| {
        ImageError::NotCoreOsIso("the file ends inside the ISO9660 structures".into())
    })?;
    Ok(buf)
}

fn u32le(b: &[u8], at: usize) -> u64 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as u64
}

/// Records of a directory extent (`.` and `..` skipped).
fn list_dir(f: &mut File, dir: &Record) -> Result<Vec<Record>, ImageError> {
    if dir.size > 16 << 20 {
        return Err(ImageError::NotCoreOsIso(
            "implausible directory size".into(),
        ));
    }
    let buf = read_at(f, dir.extent * SECTOR, dir.size as usize)?;
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < buf.len() {
        let len = buf[pos] as usize;
        if len == 0 {
            // Records do not cross sectors: skip to the next one.
            pos = (pos / SECTOR as usize + 1) * SECTOR as usize;
            continue;
        }
        if pos + len > buf.len() || len < 34 {
            return Err(ImageError::NotCoreOsIso("corrupt directory record".into()));
        }
        let r = &buf[pos..pos + len];
        let name_len = r[32] as usize;
        if 33 + name_len > len {
            return Err(ImageError::NotCoreOsIso("corrupt directory record".into()));
        }
        let raw = &r[33..33 + name_len];
        if !(name_len == 1 && (raw[0] == 0 || raw[0] == 1)) {
            let mut name = String::from_utf8_lossy(raw).into_owned();
            if let Some(n) = name.strip_suffix(";1") {
                name = n.to_string();
            }
            if let Some(n) = name.strip_suffix('.') {
                name = n.to_string();
            }
            out.push(Record {
                name,
                extent: u32le(r, 2),
                size: u32le(r, 10),
                dir: r[25] & 2 != 0,
            });
        }
        pos += len;
    }
    Ok(out)
}

/// ISO9660 level-1 form of a name: 8.3, upper case.
fn short_name(name: &str) -> String {
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) => (s, Some(e)),
        None => (name, None),
    };
    let stem: String = stem.chars().take(8).collect();
    match ext {
        Some(e) => {
            format!("{}.{}", stem, e.chars().take(3).collect::<String>()).to_ascii_uppercase()
        }
        None => stem.to_ascii_uppercase(),
    }
}

/// Finds `path` (lower case, as CoreOS names it) in the primary tree,
/// whose names may be stored upper case and truncated to 8.3.
fn lookup(f: &mut File, root: &Record, path: &str) -> Result<Option<Record>, ImageError> {
    let mut cur = root.clone();
    for comp in path.trim_matches('/').split('/') {
        let entries = list_dir(f, &cur)?;
        let found = entries
            .into_iter()
            .find(|e| e.name.eq_ignore_ascii_case(comp) || e.name == short_name(comp));
        match found {
            Some(e) => cur = e,
            None => return Ok(None),
        }
    }
    Ok(Some(cur))
}

fn read_file(f: &mut File, r: &Record) -> Result<Vec<u8>, ImageError> {
    if r.size > 1 << 20 {
        return Err(ImageError::NotCoreOsIso("metadata file too large".into()));
    }
    read_at(f, r.extent * SECTOR, r.size as usize)
}

/// The embed area of a CoreOS live ISO, and whether it takes network
/// keyfiles (`coreos/features.json`: `"live-initrd-network": true`).
pub fn embed_area(f: &mut File) -> Result<(Area, bool), ImageError> {
    let pvd = read_at(f, 16 * SECTOR, SECTOR as usize)?;
    if &pvd[1..6] != b"CD001" || pvd[0] != 1 {
        return Err(ImageError::NotCoreOsIso(
            "no ISO9660 primary volume descriptor".into(),
        ));
    }
    let root_rec = &pvd[156..156 + 34];
    let root = Record {
        name: ".".into(),
        extent: u32le(root_rec, 2),
        size: u32le(root_rec, 10),
        dir: true,
    };
    let features = match lookup(f, &root, "coreos/features.json")? {
        Some(r) if !r.dir => serde_json::from_slice::<serde_json::Value>(&read_file(f, &r)?).ok(),
        _ => None,
    };
    let network = features
        .as_ref()
        .and_then(|v| v.get("live-initrd-network"))
        .and_then(|v| v.as_bool())
        == Some(true);
    // igninfo.json may point at another file, and at a part of it.
    let (file, sub) = match lookup(f, &root, "coreos/igninfo.json")? {
        Some(r) if !r.dir => {
            let info: serde_json::Value = serde_json::from_slice(&read_file(f, &r)?)
                .map_err(|e| ImageError::NotCoreOsIso(format!("coreos/igninfo.json: {e}")))?;
            let path = info
                .get("file")
                .and_then(|v| v.as_str())
                .unwrap_or("images/ignition.img")
                .to_string();
            let off = info.get("offset").and_then(|v| v.as_u64());
            let len = info.get("length").and_then(|v| v.as_u64());
            (path, off.zip(len))
        }
        _ => ("images/ignition.img".to_string(), None),
    };
    let Some(rec) = lookup(f, &root, &file)?.filter(|r| !r.dir) else {
        return Err(ImageError::NotCoreOsIso(format!(
            "no embed area: `{file}` is not in the ISO (not a CoreOS live ISO?)"
        )));
    };
    let base = rec.extent * SECTOR;
    let area = match sub {
        Some((off, len)) if off + len <= rec.size => Area {
            offset: base + off,
            length: len,
        },
        Some(_) => {
            return Err(ImageError::NotCoreOsIso(
                "coreos/igninfo.json points outside its file".into(),
            ))
        }
        None => Area {
            offset: base,
            length: rec.size,
        },
    };
    if area.length == 0 || base + rec.size > f.metadata()?.len() {
        return Err(ImageError::NotCoreOsIso(
            "embed area is empty or past the end of the file".into(),
        ));
    }
    Ok((area, network))
}

/// What to put into the area.
pub struct Embed<'a> {
    pub keyfiles: &'a [(String, Vec<u8>)],
    /// `.link` files pinning NIC names (`nicBinding: pin`).
    pub links: &'a [(String, Vec<u8>)],
    pub ignition: Option<&'a [u8]>,
    /// Drop an Ignition config already embedded (instead of keeping it).
    pub drop_ignition: bool,
}

/// The members already in the area (none when it is all zeros).
pub fn embedded(f: &mut File, area: Area) -> Result<Vec<Member>, ImageError> {
    let data = read_at(f, area.offset, area.length as usize)?;
    if data.iter().all(|b| *b == 0) {
        return Ok(Vec::new());
    }
    initrd::read_members(&data)
}

/// Writes the payload into the ISO at `path` (in place), keeping an
/// embedded Ignition config unless replaced or dropped; verifies by
/// reading the area back.
pub fn embed_in_place(path: &Path, e: &Embed) -> Result<usize, ImageError> {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(ImageError::at(path))?;
    let (area, network) = embed_area(&mut f)?;
    if !e.keyfiles.is_empty() && !network {
        return Err(ImageError::NotCoreOsIso(
            "this ISO does not read network keyfiles from its embed area (coreos/features.json lacks live-initrd-network)".into(),
        ));
    }
    let existing = embedded(&mut f, area)?;
    let kept_ign = existing
        .iter()
        .find(|m| m.path == "config.ign")
        .map(|m| m.data.clone());
    let ignition = match (e.ignition, e.drop_ignition) {
        (Some(i), _) => Some(i.to_vec()),
        (None, false) => kept_ign,
        (None, true) => None,
    };
    let payload = initrd::network_payload(e.keyfiles, e.links, ignition.as_deref());
    if payload.len() as u64 > area.length {
        return Err(ImageError::PayloadTooLarge {
            payload: payload.len() as u64,
            area: area.length,
        });
    }
    let mut buf = payload.clone();
    buf.resize(area.length as usize, 0);
    f.seek(SeekFrom::Start(area.offset))
        .and_then(|_| f.write_all(&buf))
        .and_then(|_| f.sync_data())
        .map_err(ImageError::at(path))?;
    if read_at(&mut f, area.offset, buf.len())? != buf {
        return Err(ImageError::Verify(
            "the embed area does not read back as written".into(),
        ));
    }
    Ok(payload.len())
}

/// Embeds into a copy: the input is copied beside `out` (reflinked where
/// the filesystem can), embedded, then renamed to `out`.
pub fn embed_to(input: &Path, out: &Path, e: &Embed) -> Result<usize, ImageError> {
    let tmp = nodenet_model::scratch::file_beside(out, nodenet_model::scratch::Kind::Iso)
        .map_err(ImageError::at(out))?;
    std::fs::copy(input, tmp.path()).map_err(ImageError::at(out))?;
    let n = embed_in_place(tmp.path(), e)?;
    tmp.persist(out).map_err(|e| ImageError::at(out)(e.error))?;
    Ok(n)
}

/// The keyfiles embedded in an ISO, by name (what `iso network extract`
/// shows).
pub fn embedded_keyfiles(path: &Path) -> Result<Vec<(String, Vec<u8>)>, ImageError> {
    let mut f = File::open(path)?;
    let (area, _) = embed_area(&mut f)?;
    Ok(embedded(&mut f, area)?
        .into_iter()
        .filter_map(|m| {
            Some((
                m.path.strip_prefix(&format!("{NETWORK_DIR}/"))?.to_string(),
                m.data,
            ))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_one_names() {
        assert_eq!(short_name("features.json"), "FEATURES.JSO");
        assert_eq!(short_name("ignition.img"), "IGNITION.IMG");
        assert_eq!(short_name("coreos"), "COREOS");
    }
}

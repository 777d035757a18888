//! Where a VM's console log is written. qemu appends to it from the vCPU
//! that prints, holding its global lock, so a write that waits on a busy
//! disk stops the whole VM meanwhile (a 30 s `fsfreeze` of the filesystem
//! holding a lab's folder stopped a node's clock for 29.9 s). The log is
//! therefore kept in memory (`/dev/shm`) and linked from the lab's folder,
//! where everything reads it; a lab whose folder is already in memory, or
//! a machine without `/dev/shm`, keeps it in the folder.

use std::path::{Path, PathBuf};

/// `name`'s console log as the lab's folder shows it (a link to the log
/// in memory, or the log).
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}-console.log"))
}

/// The console of `name`'s boot before it was started again.
pub fn previous(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}-console.prev.log"))
}

/// The file qemu is to append `name`'s console to, with [`path`] linked
/// to it when it is in memory.
pub fn prepare(dir: &Path, name: &str) -> PathBuf {
    let shown = path(dir, name);
    let Some(memory) = memory_dir(dir) else {
        return shown;
    };
    let kept = path(&memory, name);
    let linked = std::fs::create_dir_all(&memory).is_ok()
        && std::fs::remove_file(&shown)
            .map_or_else(|e| e.kind() == std::io::ErrorKind::NotFound, |_| true)
        && std::os::unix::fs::symlink(&kept, &shown).is_ok();
    if linked {
        kept
    } else {
        shown
    }
}

/// Keeps `name`'s console as its previous boot's, before the VM is
/// started again: the log itself, wherever it is, and what the folder
/// shows of it.
pub fn keep_previous(dir: &Path, name: &str) {
    let shown = path(dir, name);
    let before = previous(dir, name);
    let _ = std::fs::remove_file(&before);
    match std::fs::read_link(&shown) {
        Ok(kept) => {
            let kept_before = previous(kept.parent().unwrap_or(dir), name);
            let _ = std::fs::rename(&kept, &kept_before);
            let _ = std::fs::remove_file(&shown);
            let _ = std::os::unix::fs::symlink(&kept_before, &before);
        }
        Err(_) => {
            let _ = std::fs::rename(&shown, &before);
        }
    }
}

/// Removes the logs the lab in `dir` keeps in memory (`lab down`, before
/// the folder goes).
pub fn remove_kept(dir: &Path) {
    if let Some(memory) = memory_dir(dir) {
        let _ = std::fs::remove_dir_all(memory);
    }
}

/// The lab's folder in memory, named after the lab's own folder (so
/// `ls /dev/shm` tells whose it is); `None` where the lab's folder is in
/// memory already or there is no `/dev/shm`.
fn memory_dir(dir: &Path) -> Option<PathBuf> {
    let shm = Path::new("/dev/shm");
    let folder = dir.canonicalize().ok()?;
    if !shm.is_dir() || folder.starts_with(shm) {
        return None;
    }
    let named: String = folder
        .to_string_lossy()
        .trim_start_matches('/')
        .chars()
        .map(|c| if c == '/' { '_' } else { c })
        .collect();
    Some(shm.join(format!("nodenet-lab-{named}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under `base`, removed with what it holds when dropped.
    struct Folder(PathBuf);

    impl Folder {
        fn under(base: &Path, test: &str) -> Folder {
            let p = base.join(format!("nodenet-console-log-{test}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Folder(p)
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_log_off_memory_is_kept_in_memory_and_linked_and_a_restart_keeps_both() {
        let base = std::env::temp_dir();
        if !Path::new("/dev/shm").is_dir() || base.starts_with("/dev/shm") {
            return;
        }
        let lab = Folder::under(&base, "disk");
        let kept = prepare(&lab.0, "master-0");
        assert!(kept.starts_with("/dev/shm"), "{}", kept.display());
        std::fs::write(&kept, "first boot\n").unwrap();
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(path(&lab.0, "master-0")), "first boot\n");
        keep_previous(&lab.0, "master-0");
        let again = prepare(&lab.0, "master-0");
        assert_eq!(again, kept);
        std::fs::write(&again, "second boot\n").unwrap();
        assert_eq!(read(previous(&lab.0, "master-0")), "first boot\n");
        assert_eq!(read(path(&lab.0, "master-0")), "second boot\n");
        remove_kept(&lab.0);
        assert!(!kept.parent().unwrap().exists());
    }

    #[test]
    fn a_lab_in_memory_keeps_its_log_in_its_folder() {
        if !Path::new("/dev/shm").is_dir() {
            return;
        }
        let lab = Folder::under(Path::new("/dev/shm"), "memory");
        let kept = prepare(&lab.0, "switch");
        assert_eq!(kept, path(&lab.0, "switch"));
        assert!(std::fs::symlink_metadata(&kept).is_err());
    }
}

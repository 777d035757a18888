//! The record of an apply in flight (or left open by `--no-commit`):
//! which NetworkManager checkpoints were open before it, the one it
//! opened, and what a restore needs, for `nodenet rollback` in a later
//! process (the unit's `ExecStopPost` after the agent was killed).
//!
//! It is written before anything changes: whatever point a run is killed
//! at, the checkpoint it opened is the one open now that was not open
//! before, and a later `rollback --if-pending` finds it.

use std::path::{Path, PathBuf};

use crate::restore::Saved;
use crate::AgentError;

/// Where the record lives (tmpfs: gone at reboot, as the checkpoint is).
pub const PENDING: &str = "/run/nodenet/pending-rollback.json";

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Pending {
    /// The NetworkManager checkpoint the apply opened, once known.
    pub checkpoint: Option<String>,
    /// The checkpoints that were open before the apply (someone else's).
    #[serde(default)]
    pub open_before: Vec<String>,
    pub saved: Saved,
    /// Where the record is kept.
    #[serde(skip)]
    path: PathBuf,
}

impl Pending {
    pub fn new(open_before: Vec<String>, saved: Saved) -> Pending {
        Pending {
            checkpoint: None,
            open_before,
            saved,
            path: PathBuf::from(PENDING),
        }
    }

    /// Writes the record (whole or not at all); a record that cannot be
    /// written only costs a killed run its quick rollback (NetworkManager
    /// still rolls back when the checkpoint times out), so it is said, not
    /// fatal.
    pub fn write(&self) {
        let written = std::fs::create_dir_all(self.path.parent().unwrap_or(Path::new("/")))
            .and_then(|()| {
                nodenet_model::write_atomic(&self.path, serde_json::to_string(self)?.as_bytes())
            });
        if let Err(e) = written {
            log::warn!(
                "{}: {e} (`nodenet rollback --if-pending` will not find this apply's checkpoint)",
                self.path.display()
            );
        }
    }

    pub fn read() -> Result<Option<Pending>, AgentError> {
        Self::read_from(Path::new(PENDING))
    }

    fn read_from(path: &Path) -> Result<Option<Pending>, AgentError> {
        match std::fs::read(path) {
            Ok(data) => serde_json::from_slice::<Pending>(&data)
                .map(|mut p| {
                    p.path = path.to_path_buf();
                    Some(p)
                })
                .map_err(|e| AgentError::Record {
                    path: path.display().to_string(),
                    why: e.to_string(),
                }),
            Err(_) => Ok(None),
        }
    }

    pub fn clear(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// The checkpoint this apply opened, among those open now: the one
    /// recorded, else the one that was not open before.
    pub fn ours(&self, open_now: &[String]) -> Option<String> {
        match &self.checkpoint {
            Some(c) => open_now.iter().find(|o| *o == c).cloned(),
            None => open_now
                .iter()
                .find(|o| !self.open_before.contains(o))
                .cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_written_before_the_checkpoint_still_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        let mut p = Pending::new(vec!["/cp/1".into()], Saved::default());
        p.path = path.clone();
        p.write();
        let back = Pending::read_from(&path).unwrap().unwrap();
        // Killed between the record and knowing the checkpoint: the one
        // that was not open before is ours; someone else's is left alone.
        assert_eq!(
            back.ours(&["/cp/1".into(), "/cp/7".into()]),
            Some("/cp/7".into())
        );
        assert_eq!(back.ours(&["/cp/1".into()]), None);
        let mut known = back.clone();
        known.checkpoint = Some("/cp/7".into());
        assert_eq!(known.ours(&["/cp/9".into()]), None);
        back.clear();
        assert!(Pending::read_from(&path).unwrap().is_none());
    }
}

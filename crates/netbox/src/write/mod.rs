//! Writing back to NetBox, explicitly and reversibly: the change set is
//! computed from what NetBox holds now and shown before anything is
//! written; each write carries a change-log message naming nodenet (one
//! journalled change per object, NetBox 4.4+); only the fields named are
//! touched; nothing is ever deleted or replaced.

pub mod cables;
pub mod macs;

use crate::Error;

/// Objects written (or ids asked for) in one request.
const BATCH: usize = 100;

/// NetBox keeps at most this much of a change-log message.
const MESSAGE_MAX: usize = 200;

/// A fill that is not written, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused<F> {
    pub fill: F,
    pub why: String,
}

/// What writing would change in NetBox, from what it holds now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeSet<C, F> {
    pub changes: Vec<C>,
    pub refused: Vec<Refused<F>>,
    /// What NetBox holds already (nothing to write).
    pub present: Vec<F>,
}

impl<C, F> Default for ChangeSet<C, F> {
    fn default() -> Self {
        ChangeSet {
            changes: Vec::new(),
            refused: Vec::new(),
            present: Vec::new(),
        }
    }
}

/// A change-log message NetBox keeps whole.
fn capped(message: String) -> String {
    message.chars().take(MESSAGE_MAX).collect()
}

/// A failed write said with what it means: the requests before it were
/// written (each whole, one transaction), this one and the rest were not.
fn refused(e: Error, done: usize, needs: &str) -> Error {
    let before = if done == 0 {
        "nothing was written".to_string()
    } else {
        format!("{done} object(s) were written before it; the rest was not")
    };
    let before = format!("{before} (a second run finishes it: what was made is reused)");
    match e {
        Error::Status {
            url,
            status: status @ (401 | 403),
            ..
        } => Error::Setup(format!(
            "NetBox at {url} refused the write ({status}): the token needs write permission (`write_enabled`) and the object permissions to {needs}; {before}"
        )),
        e => Error::Setup(format!("{e}; {before}")),
    }
}

//! What goes wrong with a BMC: the failure, the step it happened at,
//! where and after how many attempts, and a hint for each kind.

use std::time::Duration;

use crate::redfish;

/// What went wrong, without the host and step (see [`BmcError`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Failure {
    #[error("the BMC answered {status}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Http { status: u16, message: String },
    #[error("cannot reach the BMC ({0})")]
    Unreachable(String),
    /// Connected, then the BMC closed or reset the connection before its
    /// answer was complete.
    #[error("the BMC closed the connection before a complete answer ({0})")]
    Dropped(String),
    /// No (complete) answer: `waited` from the first send until given
    /// up; `deadline` when the last attempt was cut short by the host's
    /// deadline rather than ending at the per-request timeout.
    #[error("{}", timeout_text(*.waited, *.deadline))]
    Timeout { waited: Duration, deadline: bool },
    #[error("{0}")]
    Protocol(String),
    /// A change was sent, the answer was lost, and whether the BMC made
    /// it is unknown.
    #[error("{failure}; the BMC may have acted: {why}")]
    MayHaveActed { failure: Box<Failure>, why: String },
    #[error("{0}")]
    Inventory(String),
}

fn timeout_text(waited: Duration, deadline: bool) -> String {
    let secs = |d: Duration| {
        let s = d.as_secs_f64();
        if s >= 1.0 {
            format!("{s:.0} s")
        } else {
            format!("{s:.1} s")
        }
    };
    if waited.is_zero() {
        "the deadline passed before the request could be sent".into()
    } else if deadline {
        format!("no answer before the deadline (waited {})", secs(waited))
    } else {
        format!(
            "no answer within {} per attempt (waited {})",
            secs(redfish::REQUEST_TIMEOUT),
            secs(waited)
        )
    }
}

/// A failure at a named step (`powering off`, `inserting media`, ...),
/// with where it happened.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{step}: {failure}{}{}", hint(.failure), context(.at.as_deref(), *.attempts))]
pub struct BmcError {
    pub step: &'static str,
    pub failure: Failure,
    /// The request that failed (`GET http://bmc/redfish/v1/...`), else
    /// the BMC (`BMC http://bmc/...`); never credentials.
    pub at: Option<String>,
    /// How many times the request was sent (retries included).
    pub attempts: u32,
}

fn hint(f: &Failure) -> &'static str {
    match f {
        Failure::Http { status: 401, .. } => " (wrong username or password?)",
        Failure::Http { status: 404, .. } => " (unknown system or resource?)",
        _ => "",
    }
}

fn context(at: Option<&str>, attempts: u32) -> String {
    match (at, attempts) {
        (None, _) => String::new(),
        (Some(at), 0 | 1) => format!(" [{at}]"),
        (Some(at), n) => format!(" [{at}, {n} attempts]"),
    }
}

impl BmcError {
    pub fn new(step: &'static str, failure: Failure) -> BmcError {
        BmcError {
            step,
            failure,
            at: None,
            attempts: 0,
        }
    }

    /// The request that failed (`METHOD URL`) and how often it was sent.
    pub fn sent(mut self, request: String, attempts: u32) -> BmcError {
        self.at = Some(request);
        self.attempts = attempts;
        self
    }

    /// The BMC's address, unless the failed request already names it.
    pub fn at_bmc(mut self, bmc: &str) -> BmcError {
        if self.at.is_none() {
            self.at = Some(format!("BMC {bmc}"));
        }
        self
    }
}

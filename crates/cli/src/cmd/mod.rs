//! One module per subcommand: arguments, a call into a stage crate, output.

pub mod agent;
pub mod bmc;
pub mod check;
pub mod diff;
pub mod explain;
pub mod gc;
pub mod image;
pub mod import;
pub mod provision;
pub mod render;
pub mod serve;

use std::process::ExitCode;

/// Exit codes of every subcommand (DESIGN.md's CLI contract).
pub const PROBLEMS: u8 = 1;
pub const USAGE: u8 = 2;

pub fn problems() -> ExitCode {
    ExitCode::from(PROBLEMS)
}

pub fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(USAGE)
}

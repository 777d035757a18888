//! One module per subcommand: arguments, a call into a stage crate, output.

pub mod agent;
pub mod bmc;
pub mod check;
pub mod diff;
pub mod discover;
pub mod explain;
pub mod gc;
pub mod hosts;
pub mod image;
pub mod import;
pub mod install;
pub mod lab;
pub mod plan;
pub mod provision;
pub mod render;
pub mod serve;
pub mod wires;

use std::process::ExitCode;

use crate::report::Format;

/// Exit codes of every subcommand (README: 1 problems in the input, 2
/// usage or IO).
pub const PROBLEMS: u8 = 1;
pub const USAGE: u8 = 2;

/// Loads inputs as every command that reads them does: the formats the
/// inventory stage reads, and NetworkManager keyfiles (told by content)
/// read by the import stage.
pub fn load_files(
    paths: &[impl AsRef<std::path::Path>],
) -> Result<nodenet_model::Loaded, nodenet_model::LoadError> {
    nodenet_model::load::load_files_with(paths, Some(&nodenet_import::KeyfileReader))
}

pub fn problems() -> ExitCode {
    ExitCode::from(PROBLEMS)
}

pub fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!(
        "error: {}",
        crate::report::escape(&msg.to_string(), false, 2000)
    );
    ExitCode::from(USAGE)
}

/// A failure that stops a command (exit 2 unless said otherwise): `error:
/// MESSAGE` on stderr, or in JSON mode the one object on stdout,
/// `{"diagnostics":[{"severity":"error","code":CODE,"message":...,"file":...}]}`.
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub file: Option<String>,
    pub exit: u8,
}

/// Commands about one cluster refuse a fleet (several ZTP sites) rather
/// than work on one of its clusters and stay silent about the others.
pub fn one_cluster(loaded: &nodenet_model::Loaded, command: &str) -> Result<(), Failure> {
    match loaded.clusters().len() {
        0 | 1 => Ok(()),
        n => Err(Failure::usage(format!(
            "the inputs hold {n} clusters (ZTP sites); `nodenet {command}` works on one: give one site's file (`nodenet check` and `nodenet render` take the fleet)"
        ))),
    }
}

impl Failure {
    pub fn usage(message: impl std::fmt::Display) -> Failure {
        Failure {
            code: "usage",
            message: message.to_string(),
            file: None,
            exit: USAGE,
        }
    }

    pub fn io(file: impl Into<String>, message: impl std::fmt::Display) -> Failure {
        Failure {
            code: "io",
            message: message.to_string(),
            file: Some(file.into()),
            exit: USAGE,
        }
    }

    pub fn exit(mut self, code: u8) -> Failure {
        self.exit = code;
        self
    }

    pub fn report(self, format: Format) -> ExitCode {
        match format {
            Format::Human => eprintln!(
                "error: {}",
                crate::report::escape(&self.message, false, 2000)
            ),
            Format::Json => println!(
                "{}",
                crate::report::error_json(self.code, &self.message, self.file.as_deref())
            ),
        }
        ExitCode::from(self.exit)
    }
}

impl From<nodenet_model::LoadError> for Failure {
    fn from(e: nodenet_model::LoadError) -> Failure {
        match &e {
            nodenet_model::LoadError::Io { path, .. } => Failure::io(path.clone(), &e),
            nodenet_model::LoadError::TooLarge { path, .. } => Failure {
                code: "input-too-large",
                file: Some(path.clone()),
                message: e.to_string(),
                exit: USAGE,
            },
            nodenet_model::LoadError::BadLimit { .. } => Failure::usage(&e),
        }
    }
}

impl From<nodenet_import::ImportError> for Failure {
    fn from(e: nodenet_import::ImportError) -> Failure {
        match &e {
            nodenet_import::ImportError::Io { path, .. } => Failure::io(path.clone(), &e),
            nodenet_import::ImportError::Empty(path) => Failure {
                code: "no-keyfiles",
                file: Some(path.clone()),
                message: e.to_string(),
                exit: USAGE,
            },
        }
    }
}

impl From<nodenet_render::RenderError> for Failure {
    fn from(e: nodenet_render::RenderError) -> Failure {
        Failure {
            code: e.code(),
            file: Some(e.path().to_string()),
            message: e.to_string(),
            exit: USAGE,
        }
    }
}

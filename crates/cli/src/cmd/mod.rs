//! One module per subcommand: arguments, a call into a stage crate, output.

pub mod agent;
pub mod bmc;
pub mod check;
pub mod diff;
pub mod discover;
pub mod explain;
pub mod gc;
pub mod gitops;
pub mod hosts;
pub mod image;
pub mod import;
pub mod init;
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

/// How every command ends: it ran to its end ([`Exit`]), or it stopped
/// ([`CliError`], which `main` says once).
pub type Outcome = Result<Exit, CliError>;

/// How a command that ran to its end exits: 0, or 1 when what it read
/// has problems (its output has already said which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success,
    Problems,
}

impl Exit {
    /// `Problems` when `failed`.
    pub fn problems_if(failed: bool) -> Exit {
        if failed {
            Exit::Problems
        } else {
            Exit::Success
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        match e {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Problems => ExitCode::from(PROBLEMS),
        }
    }
}

/// Loads inputs as every command that reads them does: the formats the
/// inventory stage reads, and NetworkManager keyfiles (told by content)
/// read by the import stage.
pub fn load_files(
    paths: &[impl AsRef<std::path::Path>],
) -> Result<nodenet_model::Loaded, CliError> {
    let (netbox, files): (Vec<&std::path::Path>, Vec<&std::path::Path>) = paths
        .iter()
        .map(AsRef::as_ref)
        .partition(|p| p.to_str().is_some_and(nodenet_netbox::is_source));
    let generated = netbox
        .iter()
        .map(|p| {
            let start = std::time::Instant::now();
            let g = nodenet_netbox::read(p.to_str().expect("told as UTF-8"))?;
            if crate::ui::verbose() {
                eprintln!(
                    "netbox: {} device(s) read in {} request(s), {:.2} s",
                    g.devices,
                    g.requests,
                    start.elapsed().as_secs_f64()
                );
            }
            Ok(g)
        })
        .collect::<Result<Vec<_>, nodenet_netbox::Error>>()?;
    load_with_generated(&files, &generated)
}

/// Files, and inventories read from NetBox, loaded together; what the
/// mapping could not read said at its line of the inventory.
pub fn load_with_generated(
    files: &[&std::path::Path],
    generated: &[nodenet_netbox::Generated],
) -> Result<nodenet_model::Loaded, CliError> {
    let texts = generated
        .iter()
        .map(|g| (g.name.clone(), g.text.clone()))
        .collect();
    let mut loaded = nodenet_model::load::load_files_and_texts(
        files,
        texts,
        Some(&nodenet_import::KeyfileReader),
    )?;
    for g in generated {
        let file = loaded.sources.find(&g.name);
        for f in &g.findings {
            let mut d = nodenet_model::Diagnostic {
                severity: f.severity,
                ..nodenet_model::Diagnostic::error(f.code, f.message.clone())
            }
            .at_opt(file.and_then(|id| loaded.sources.span_of(id, f.at.0, f.at.1)));
            if let Some(help) = &f.help {
                d = d.help(help.clone());
            }
            if let Some(host) = &f.host {
                d = d.host(host.clone());
            }
            loaded.diagnostics.push(d);
        }
    }
    Ok(loaded)
}

impl From<nodenet_netbox::Error> for CliError {
    fn from(e: nodenet_netbox::Error) -> CliError {
        CliError {
            code: e.code(),
            message: e.to_string(),
            file: None,
            exit: USAGE,
            findings: None,
        }
    }
}

/// Freed as the process ends, not node by node: the kernel reclaims a
/// 10,000-host inventory and its report at exit faster than their drop
/// walks them (a thread dropping them still took a core from the last of
/// the work). Every caller is a command about to exit.
pub fn drop_at_exit<T>(value: T) {
    std::mem::forget(value);
}

/// A failure that stops a command (exit 2 unless said otherwise). `main`
/// says it, once: `error: MESSAGE` on stderr, or with `--format json` the
/// one object on stdout,
/// `{"diagnostics":[{"severity":"error","code":CODE,"message":...,"file":...}]}`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CliError {
    pub code: &'static str,
    pub message: String,
    pub file: Option<String>,
    pub exit: u8,
    /// The input's own findings, said before the error (in JSON, the
    /// error is the last of the one object's diagnostics).
    pub findings: Option<Box<(nodenet_model::SourceMap, Vec<nodenet_model::Diagnostic>)>>,
}

/// Commands about one cluster refuse a fleet (several ZTP sites) rather
/// than work on one of its clusters and stay silent about the others.
pub fn one_cluster(loaded: &nodenet_model::Loaded, command: &str) -> Result<(), CliError> {
    match loaded.clusters().len() {
        0 | 1 => Ok(()),
        n => Err(CliError::usage(format!(
            "the inputs hold {n} clusters (ZTP sites); `nodenet {command}` works on one: give one site's file (`nodenet check` and `nodenet render` take the fleet)"
        ))),
    }
}

impl CliError {
    pub fn usage(message: impl std::fmt::Display) -> CliError {
        CliError {
            code: "usage",
            message: message.to_string(),
            file: None,
            exit: USAGE,
            findings: None,
        }
    }

    pub fn io(file: impl Into<String>, message: impl std::fmt::Display) -> CliError {
        CliError {
            code: "io",
            message: message.to_string(),
            file: Some(file.into()),
            exit: USAGE,
            findings: None,
        }
    }

    /// A problem in the input that stops the command (exit 1).
    pub fn input(code: &'static str, message: impl std::fmt::Display) -> CliError {
        CliError {
            code,
            message: message.to_string(),
            file: None,
            exit: PROBLEMS,
            findings: None,
        }
    }

    /// With another code than its constructor's.
    pub fn code(mut self, code: &'static str) -> CliError {
        self.code = code;
        self
    }

    pub fn exit(mut self, code: u8) -> CliError {
        self.exit = code;
        self
    }

    /// With the input's findings that led to it.
    pub fn with_findings(
        mut self,
        sources: nodenet_model::SourceMap,
        diagnostics: Vec<nodenet_model::Diagnostic>,
    ) -> CliError {
        self.findings = Some(Box::new((sources, diagnostics)));
        self
    }

    /// Says the error (only `main` calls this) and gives the exit code.
    pub fn report(self, format: Format) -> ExitCode {
        let error = crate::report::error_json(self.code, &self.message, self.file.as_deref());
        match (format, self.findings) {
            (Format::Human, findings) => {
                if let Some((sources, diagnostics)) = findings.as_deref() {
                    crate::report::print(sources, diagnostics, Format::Human);
                }
                eprintln!(
                    "error: {}",
                    crate::report::escape(&self.message, false, 2000)
                );
            }
            (Format::Json, None) => println!("{error}"),
            (Format::Json, Some(findings)) => {
                let (sources, diagnostics) = &*findings;
                let mut v = crate::report::to_json(sources, diagnostics);
                if let (Some(list), Some(e)) =
                    (v["diagnostics"].as_array_mut(), error["diagnostics"].get(0))
                {
                    list.push(e.clone());
                }
                println!("{v}");
            }
        }
        ExitCode::from(self.exit)
    }
}

impl From<nodenet_model::LoadError> for CliError {
    fn from(e: nodenet_model::LoadError) -> CliError {
        match &e {
            nodenet_model::LoadError::Io { path, .. } => CliError::io(path.clone(), &e),
            nodenet_model::LoadError::TooLarge { path, .. } => CliError {
                code: "input-too-large",
                file: Some(path.clone()),
                message: e.to_string(),
                exit: USAGE,
                findings: None,
            },
            nodenet_model::LoadError::BadLimit { .. } => CliError::usage(&e),
        }
    }
}

impl From<nodenet_import::ImportError> for CliError {
    fn from(e: nodenet_import::ImportError) -> CliError {
        match &e {
            nodenet_import::ImportError::Io { path, .. } => CliError::io(path.clone(), &e),
            nodenet_import::ImportError::Empty(path) => CliError {
                code: "no-keyfiles",
                file: Some(path.clone()),
                message: e.to_string(),
                exit: USAGE,
                findings: None,
            },
        }
    }
}

impl From<nodenet_render::RenderError> for CliError {
    fn from(e: nodenet_render::RenderError) -> CliError {
        CliError {
            code: e.code(),
            file: Some(e.path().to_string()),
            message: e.to_string(),
            exit: USAGE,
            findings: None,
        }
    }
}

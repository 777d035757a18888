//! `nodenet completions SHELL` and `nodenet man`: what `make install`
//! puts beside the binary (shell completion, manual pages).

use super::{CliError, Exit, Outcome};
use clap::CommandFactory;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn completions(args: CompletionsArgs) -> Outcome {
    let mut cmd = crate::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "nodenet", &mut std::io::stdout());
    Ok(Exit::Success)
}

#[derive(clap::Args)]
pub struct ManArgs {
    /// Write nodenet.1 and one nodenet-<command>.1 per command into this
    /// directory instead of printing nodenet.1.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn man(args: ManArgs) -> Outcome {
    let cmd = crate::Cli::command();
    let result = match &args.output {
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout()),
        Some(dir) => std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(cmd, dir)),
    };
    match result {
        Ok(()) => Ok(Exit::Success),
        Err(e) => Err(CliError::usage(format!(
            "{}: {e}",
            args.output
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "stdout".into())
        ))),
    }
}

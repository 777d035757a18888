//! `nodenet explain [CODE]`: what a diagnostic code means.

use std::process::ExitCode;

use nodenet_model::Code;

#[derive(clap::Args)]
pub struct Args {
    /// A code such as `vlan-id-range`; without one, all codes as a
    /// Markdown table.
    code: Option<String>,
}

pub fn run(args: Args) -> ExitCode {
    match args.code {
        Some(c) => match Code::parse(&c) {
            Some(code) => {
                println!("{}: {}", code.as_str(), code.explain());
                ExitCode::SUCCESS
            }
            None => {
                super::usage_error(format!("unknown code `{c}` (`nodenet explain` lists them)"))
            }
        },
        None => {
            println!("| code | meaning |\n|---|---|");
            for code in Code::ALL {
                println!("| `{}` | {} |", code.as_str(), code.explain());
            }
            ExitCode::SUCCESS
        }
    }
}

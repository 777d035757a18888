//! `nodenet explain [CODE]`: what a diagnostic code means, with an input
//! that has it (from the catalogue of bad inputs, tests/bad) and what
//! `nodenet check` says about that input.

use std::process::ExitCode;

use nodenet_model::Code;

/// `(code, catalogue file, its text)`, from tests/bad at build time.
mod catalogue {
    include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));
}

#[derive(clap::Args)]
pub struct Args {
    /// A code such as `vlan-id-range` (any case, `_` for `-`); without
    /// one, all codes as a Markdown table.
    code: Option<String>,
}

pub fn run(args: Args) -> ExitCode {
    let Some(c) = args.code else {
        println!("| code | meaning |\n|---|---|");
        for code in Code::ALL {
            println!("| `{}` | {} |", code.as_str(), code.explain());
        }
        return ExitCode::SUCCESS;
    };
    let Some(code) = Code::parse(&c.trim().to_ascii_lowercase().replace('_', "-")) else {
        return super::usage_error(format!("unknown code `{c}` (`nodenet explain` lists them)"));
    };
    println!("{}: {}", code.as_str(), code.explain());
    let Some((_, file, text)) = catalogue::EXAMPLES
        .iter()
        .find(|(name, _, _)| *name == code.as_str())
    else {
        println!("\n(no example input in the catalogue for this code)");
        return ExitCode::SUCCESS;
    };
    // What check reports on it, this very code only; the text as snippets
    // show it (passwords masked).
    let loaded = nodenet_model::load_texts(vec![(file.to_string(), text.to_string())]);
    let shown = loaded.sources.get(0).map(|f| f.shown().to_string());
    println!("\nAn input that has it ({file}):\n");
    for (i, line) in shown.as_deref().unwrap_or(text).lines().enumerate() {
        println!("{:>4} | {line}", i + 1);
    }
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    let found: Vec<_> = report
        .diagnostics
        .into_iter()
        .filter(|d| d.code == code)
        .collect();
    println!("\n`nodenet check {file}` reports:\n");
    print!(
        "{}",
        crate::report::human(&loaded.sources, &found, crate::ui::color_stdout())
    );
    ExitCode::SUCCESS
}

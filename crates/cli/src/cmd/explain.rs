//! `nodenet explain [CODE]`: what a diagnostic code means, with an input
//! that has it (from the catalogue of bad inputs, tests/bad), what
//! `nodenet check` says about that input, and the input fixed (the
//! file's `# fix: N: TEXT` lines applied; see crates/cli/build.rs).

use super::{CliError, Exit, Outcome};
use nodenet_model::Code;

/// `(code, catalogue file, its text, its text fixed or "", the fixes)`,
/// from tests/bad at build time.
mod catalogue {
    include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));
}

#[derive(clap::Args)]
pub struct Args {
    /// A code such as `vlan-id-range` (any case, `_` for `-`); without
    /// one, all codes as a Markdown table.
    code: Option<String>,
}

pub fn run(args: Args) -> Outcome {
    let Some(c) = args.code else {
        println!("| code | meaning |\n|---|---|");
        for code in Code::ALL {
            println!("| `{}` | {} |", code.as_str(), code.explain());
        }
        return Ok(Exit::Success);
    };
    let Some(code) = Code::parse(&c.trim().to_ascii_lowercase().replace('_', "-")) else {
        return Err(CliError::usage(format!(
            "unknown code `{c}` (`nodenet explain` lists them)"
        )));
    };
    println!("{}: {}", code.as_str(), code.explain());
    let Some((_, file, text, fixed, fixes)) = catalogue::EXAMPLES
        .iter()
        .find(|(name, ..)| *name == code.as_str())
    else {
        println!("\n(no example input in the catalogue for this code)");
        return Ok(Exit::Success);
    };
    // What check reports on it, this very code only; the text as snippets
    // show it (passwords masked).
    let loaded = nodenet_model::load_texts(vec![(file.to_string(), text.to_string())]);
    let shown = loaded.sources.get(0).map(|f| f.shown().to_string());
    println!("\nAn input that has it ({file}):\n");
    // The `# fix:` lines come last: leaving them out keeps the numbers.
    for (i, line) in shown.as_deref().unwrap_or(text).lines().enumerate() {
        if !line.starts_with("# fix:") {
            println!("{:>4} | {line}", i + 1);
        }
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
    if fixes.is_empty() {
        println!("\n(no fixed example in the catalogue for this code)");
        return Ok(Exit::Success);
    }
    show_fix(code, file, text, fixed, fixes);
    Ok(Exit::Success)
}

/// The fixed input as a before/after of the changed lines (`-` with the
/// line's number in the file, `+` with its number in the fixed file), and
/// whether `check` still reports the code on it.
fn show_fix(code: Code, file: &str, text: &str, fixed: &str, fixes: &[(usize, &[&str])]) {
    let numbers: Vec<String> = fixes.iter().map(|(n, _)| n.to_string()).collect();
    let which = if numbers.len() == 1 { "line" } else { "lines" };
    println!(
        "\nFixed ({file}, {which} {} changed):\n",
        numbers.join(", ")
    );
    let old: Vec<&str> = text.lines().collect();
    // Lines the fixes before this one added (or removed: none, a fix
    // gives at least one line).
    let mut shift = 0usize;
    for (n, new) in fixes {
        let was = old.get(n - 1).copied().unwrap_or("");
        // A fix that keeps the line and adds after it shows it as context.
        let kept = new.first() == Some(&was);
        if kept {
            println!(" {n:>4} | {was}");
        } else {
            println!("-{n:>4} | {was}");
        }
        for (i, l) in new.iter().enumerate().skip(usize::from(kept)) {
            println!("+{:>4} | {l}", n + shift + i);
        }
        shift += new.len() - 1;
    }
    let loaded = nodenet_model::load_texts(vec![(file.to_string(), fixed.to_string())]);
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    if report.diagnostics.iter().any(|d| d.code == code) {
        println!(
            "\n`nodenet check` still reports {} on it here (see the catalogue test for the environment it is checked in).",
            code.as_str()
        );
    } else {
        println!(
            "\n`nodenet check` no longer reports {} on it.",
            code.as_str()
        );
    }
}

//! `nodenet --version` names the nmstate it embeds: the version Cargo.lock
//! resolved (the workspace pins it exactly).

fn main() {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let version = text
        .split("[[package]]")
        .filter(|p| p.lines().any(|l| l.trim() == "name = \"nmstate\""))
        .find_map(|p| {
            p.lines()
                .find_map(|l| l.trim().strip_prefix("version = \""))
                .map(|v| v.trim_end_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=NODENET_NMSTATE_VERSION={version}");
    catalogue();
}

/// `nodenet explain CODE` shows an input that has the code (the shortest
/// file of tests/bad whose first `# expect:` line names it, preferring
/// files that carry a fix) and, when the file carries one, the same input
/// fixed.
///
/// A fix is a comment line `# fix: N: TEXT`, appended at the end of the
/// file (so the line numbers of `# expect:` stay as they are): replace line
/// N of the file as written (1-based) with TEXT. One space after `N:`
/// separates it from TEXT; the rest is kept as is, indentation included;
/// `# fix: N:` with nothing after makes the line empty. Several `# fix:`
/// lines with the same N replace that line with their TEXTs in order (to
/// add a line, repeat the line as it is, then the new one). Files that are
/// not UTF-8 text are skipped: they cannot take a comment.
fn catalogue() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bad");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    // code -> (has no fix, length, name, text, fixed text, fixes)
    type Entry = (
        bool,
        usize,
        String,
        String,
        String,
        Vec<(usize, Vec<String>)>,
    );
    let mut best: std::collections::BTreeMap<String, Entry> = Default::default();
    for f in files {
        println!("cargo:rerun-if-changed={}", f.display());
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let Some(code) = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect:"))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
        else {
            continue;
        };
        let name = format!("tests/bad/{}", f.file_name().unwrap().to_string_lossy());
        let fixes = fixes(&name, &text);
        let fixed = if fixes.is_empty() {
            String::new()
        } else {
            apply(&text, &fixes)
        };
        let len = text.len();
        let entry = (fixes.is_empty(), len, name, text, fixed, fixes);
        match best.get(&code) {
            Some(e) if (e.0, e.1) <= (entry.0, entry.1) => {}
            _ => {
                best.insert(code, entry);
            }
        }
    }
    let mut out = String::from(
        "/// A fix: line N of the file and the lines that replace it.\n\
         pub type Fix = (usize, &'static [&'static str]);\n\
         /// `(code, file, text, fixed text or \"\", fixes)`.\n\
         pub type Example = (&'static str, &'static str, &'static str, &'static str, &'static [Fix]);\n\
         pub const EXAMPLES: &[Example] = &[\n",
    );
    for (code, (_, _, name, text, fixed, fixes)) in best {
        let fixes: Vec<String> = fixes
            .iter()
            .map(|(n, lines)| format!("({n}, &{lines:?})"))
            .collect();
        out += &format!(
            "    ({code:?}, {name:?}, {text:?}, {fixed:?}, &[{}]),\n",
            fixes.join(", ")
        );
    }
    out += "];\n";
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("catalogue.rs");
    std::fs::write(dest, out).unwrap();
}

/// The `# fix: N: TEXT` lines of a catalogue file, grouped by N in file
/// order; a malformed one or an N past the end fails the build.
fn fixes(name: &str, text: &str) -> Vec<(usize, Vec<String>)> {
    let count = text.lines().count();
    let mut out: Vec<(usize, Vec<String>)> = Vec::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix("# fix:") else {
            continue;
        };
        let (n, new) = rest
            .split_once(':')
            .unwrap_or_else(|| panic!("{name}: `{l}` is not `# fix: N: TEXT`"));
        let n: usize = n
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=count).contains(n))
            .unwrap_or_else(|| panic!("{name}: `{l}`: no line {n:?}"));
        let new = new.strip_prefix(' ').unwrap_or(new).to_string();
        match out.iter_mut().find(|(m, _)| *m == n) {
            Some((_, lines)) => lines.push(new),
            None => out.push((n, vec![new])),
        }
    }
    out.sort_by_key(|(n, _)| *n);
    out
}

/// The text with each fixed line replaced by its new lines.
fn apply(text: &str, fixes: &[(usize, Vec<String>)]) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        match fixes.iter().find(|(n, _)| *n == i + 1) {
            Some((_, lines)) => {
                for l in lines {
                    out += l;
                    out.push('\n');
                }
            }
            None => {
                out += line;
                out.push('\n');
            }
        }
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    out
}

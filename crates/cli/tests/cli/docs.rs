//! The commands the README, CONTRIBUTING.md and docs/ show are the
//! binary's own: every `nodenet …` they write (inline or in a shell
//! block) names a command that exists, and every long option they give it
//! is one that command takes. A renamed command or flag fails here, not
//! in a reader's terminal.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use crate::common::*;

/// The repository's pages `top` and every page of docs/.
fn doc_pages(top: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = top.iter().map(|f| repo().join(f)).collect();
    files.extend(
        files_under(&repo().join("docs"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );
    files
}

/// Every `nodenet …` the documentation writes, with the file it is in.
fn documented_commands() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in doc_pages(&["README.md", "CONTRIBUTING.md"]) {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let mut in_shell = false;
        for line in text.lines() {
            if line.starts_with("```") {
                // Shell examples, and synopses (`text`) of what runs elsewhere.
                in_shell = matches!(
                    line.trim(),
                    "```sh" | "```bash" | "```console" | "```shell" | "```text"
                );
                continue;
            }
            if in_shell {
                let line = line.strip_prefix("$ ").unwrap_or(line);
                let command = line.split(" #").next().unwrap_or("").trim();
                if command.starts_with("nodenet ") {
                    out.push((name.clone(), command.to_string()));
                }
                continue;
            }
            // Inline code spans: every other backtick opens one.
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 1 && span.starts_with("nodenet ") {
                    out.push((name.clone(), span.to_string()));
                }
            }
        }
    }
    out
}

/// `nodenet PATH… --help`, if PATH is a command.
fn help(path: &[&str], cache: &mut HashMap<Vec<String>, Option<String>>) -> Option<String> {
    let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    cache
        .entry(key)
        .or_insert_with(|| {
            let o = run(nodenet().args(path).arg("--help"));
            o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
        })
        .clone()
}

fn is_word(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && t.chars().all(|c| c.is_ascii_lowercase() || c == '-')
}

#[test]
fn every_documented_command_and_option_exists() {
    let commands = documented_commands();
    assert!(commands.len() > 50, "only {} found", commands.len());
    let mut cache = HashMap::new();
    let mut wrong = Vec::new();
    for (file, command) in &commands {
        let tokens: Vec<&str> = command.split_whitespace().skip(1).collect();
        // The command: the longest run of leading words that is one.
        let words: Vec<&str> = tokens.iter().copied().take_while(|t| is_word(t)).collect();
        let mut path: &[&str] = &[];
        for n in (1..=words.len()).rev() {
            if help(&words[..n], &mut cache).is_some() {
                path = &words[..n];
                break;
            }
        }
        if path.is_empty() && !words.is_empty() {
            wrong.push(format!("{file}: `{command}`: no command `{}`", words[0]));
            continue;
        }
        let text = help(path, &mut cache).expect("nodenet --help");
        for t in &tokens {
            let Some(flag) = t.strip_prefix("--") else {
                continue;
            };
            let flag: String = flag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if flag.is_empty() {
                continue;
            }
            let known = text.match_indices(&format!("--{flag}")).any(|(i, m)| {
                !text[i + m.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            if !known {
                wrong.push(format!(
                    "{file}: `{command}`: `nodenet {}` takes no --{flag}",
                    path.join(" ")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One `$ command` of a ```console block, with the output shown under it.
struct Example {
    /// `file:line` of the command.
    at: String,
    command: String,
    /// The exit status a trailing `# exit N` gives (else 0).
    exit: i32,
    expected: Vec<String>,
}

/// Every ```console block of the README, CONTRIBUTING.md and docs/, as
/// its examples: each block runs in a directory of its own.
fn console_blocks() -> Vec<Vec<Example>> {
    let mut blocks = Vec::new();
    for f in doc_pages(&["README.md", "CONTRIBUTING.md"]) {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.strip_prefix(repo()).unwrap().display().to_string();
        let mut block: Option<Vec<Example>> = None;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                match block.take() {
                    Some(b) => blocks.push(b),
                    None if line.trim() == "```console" => block = Some(Vec::new()),
                    None => {}
                }
                continue;
            }
            let Some(b) = block.as_mut() else { continue };
            if let Some(command) = line.strip_prefix("$ ") {
                let (command, exit) = match command.rsplit_once(" # exit ") {
                    Some((c, code)) => (c, code.trim().parse().expect("# exit N")),
                    None => (command, 0),
                };
                b.push(Example {
                    at: format!("{name}:{}", n + 1),
                    command: command.trim().to_string(),
                    exit,
                    expected: Vec::new(),
                });
            } else {
                let example = b.last_mut().unwrap_or_else(|| {
                    panic!("{name}:{}: a console block starts with `$ `", n + 1)
                });
                example.expected.push(line.trim_end().to_string());
            }
        }
    }
    blocks
}

/// `line` as shown, where `[..]` stands for any text.
fn line_matches(shown: &str, actual: &str) -> bool {
    let mut parts = shown.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The output as shown, where a line `...` stands for any lines.
fn output_matches(shown: &[String], actual: &[&str]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((dots, rest)) if dots == "..." => {
            (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]))
        }
        Some((line, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| line_matches(line, a) && output_matches(rest, more)),
    }
}

/// Runs a console block's commands in order in one `sh` (so `export` and
/// `cd` carry on, as in a terminal) in `dir`; per command, what it printed
/// (stdout and stderr as a terminal shows them) and its exit status.
fn run_block(block: &[Example], dir: &std::path::Path) -> Vec<(String, i32)> {
    let mut script = String::from("exec 2>&1\n");
    for (i, e) in block.iter().enumerate() {
        script.push_str(&format!(
            "printf '@@begin {i}\\n'\n{}\nprintf '\\n@@end {i} %d\\n' $?\n",
            e.command
        ));
    }
    let out = run(Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", dir.join("bin").display()),
        )
        .env("HOME", dir)
        .env("LANG", "C.UTF-8"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (0..block.len())
        .map(|i| {
            let begin = format!("@@begin {i}\n");
            let end = format!("\n@@end {i} ");
            let Some(from) = text.find(&begin).map(|at| at + begin.len()) else {
                return (
                    format!("(the block stopped before this command)\n{text}"),
                    -1,
                );
            };
            let Some(to) = text[from..].find(&end).map(|at| from + at) else {
                return (format!("(the block stopped in this command)\n{text}"), -1);
            };
            let code = text[to + end.len()..]
                .lines()
                .next()
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or(-1);
            (text[from..to].to_string(), code)
        })
        .collect()
}

/// The docs' console examples are runs of the binary: each block's `$ …`
/// lines run in order (by one `sh`, in a directory of the block's own
/// holding the repository's `examples/`, with only `nodenet` and the
/// system's tools on PATH), each printing what the lines under it show
/// (stdout and stderr as on a terminal) and exiting as a trailing
/// `# exit N` says (else 0).
#[test]
fn console_examples_print_what_the_docs_show() {
    let blocks = console_blocks();
    let examples: usize = blocks.iter().map(Vec::len).sum();
    assert!(examples >= 10, "only {examples} console examples found");
    let bin = nodenet_path();
    let mut wrong = Vec::new();
    for block in blocks {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(&bin, dir.path().join("bin/nodenet")).unwrap();
        std::os::unix::fs::symlink(repo().join("examples"), dir.path().join("examples")).unwrap();
        for (e, (printed, code)) in block.iter().zip(run_block(&block, dir.path())) {
            let trim = |lines: &mut Vec<&str>| {
                while lines.last().is_some_and(|l| l.is_empty()) {
                    lines.pop();
                }
            };
            let mut actual: Vec<&str> = printed.lines().map(str::trim_end).collect();
            trim(&mut actual);
            let mut shown: Vec<&str> = e.expected.iter().map(String::as_str).collect();
            trim(&mut shown);
            let shown: Vec<String> = shown.into_iter().map(String::from).collect();
            if code != e.exit || !output_matches(&shown, &actual) {
                wrong.push(format!(
                    "{}: `$ {}` exited {code} (shown: {}) and printed:\n{}\n--- the docs show:\n{}",
                    e.at,
                    e.command,
                    e.exit,
                    actual.join("\n"),
                    shown.join("\n")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn the_console_matcher_tells_what_is_shown_from_what_is_not() {
    let shown = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
    assert!(output_matches(&shown("a\n...\nz"), &["a", "b", "c", "z"]));
    assert!(output_matches(&shown("a\n...\nz"), &["a", "z"]));
    assert!(!output_matches(&shown("a\n...\nz"), &["a", "b"]));
    assert!(!output_matches(&shown("a\nz"), &["a", "b", "z"]));
    assert!(output_matches(
        &shown("wrote [..] (5 host(s))"),
        &["wrote x.yaml (5 host(s))"]
    ));
    assert!(!output_matches(
        &shown("wrote [..] (5 host(s))"),
        &["wrote x.yaml (6 host(s))"]
    ));
    assert!(!output_matches(&shown("ok"), &["ok", "more"]));
}

/// A heading's anchor as GitHub (and mdBook) make it: lower case, spaces
/// to `-`, punctuation other than `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The targets of a line's Markdown links (`[text](target)`).
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            let end = rest.find(')')?;
            let target = &rest[..end];
            (!target.is_empty() && !target.contains(char::is_whitespace)).then_some(target)
        })
        .collect()
}

/// Every relative link of the README, CONTRIBUTING.md, BENCHMARKS.md,
/// RELIABILITY.md and docs/ leads to a file of the repository, and its
/// `#anchor` to a heading of that file.
#[test]
fn every_relative_link_leads_to_a_file_and_heading() {
    let files = doc_pages(&[
        "README.md",
        "CONTRIBUTING.md",
        "BENCHMARKS.md",
        "RELIABILITY.md",
    ]);
    let anchors = |path: &std::path::Path| -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut fenced = false;
        text.lines()
            .filter(|l| {
                fenced ^= l.starts_with("```");
                !fenced && l.starts_with('#')
            })
            .map(|l| anchor(l.trim_start_matches('#')))
            .collect()
    };
    let mut wrong = Vec::new();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
                let dest = if path.is_empty() {
                    f.clone()
                } else {
                    f.parent().unwrap().join(path)
                };
                let at = format!("{}:{}", f.strip_prefix(repo()).unwrap().display(), n + 1);
                if !dest.exists() {
                    wrong.push(format!("{at}: `{target}`: no such file"));
                } else if !fragment.is_empty() && !anchors(&dest).iter().any(|a| a == fragment) {
                    wrong.push(format!("{at}: `{target}`: no such heading"));
                }
            }
        }
    }
    assert!(checked > 30, "only {checked} links found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The book (book.toml, `make docs`) has every page of docs/ in its
/// table of contents, and nothing else.
#[test]
fn the_book_lists_every_page_of_docs() {
    let summary = std::fs::read_to_string(repo().join("docs/SUMMARY.md")).unwrap();
    let listed: std::collections::BTreeSet<String> = summary
        .lines()
        .flat_map(link_targets)
        .map(String::from)
        .collect();
    let pages: std::collections::BTreeSet<String> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "SUMMARY.md")
        .collect();
    assert_eq!(listed, pages, "docs/SUMMARY.md and the pages of docs/");
}

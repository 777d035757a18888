//! The commands the README, CONTRIBUTING.md and docs/ show are the
//! binary's own: every `nodenet …` they write (inline or in a shell
//! block) names a command that exists, and every long option they give it
//! is one that command takes. A renamed command or flag fails here, not
//! in a reader's terminal.

use std::collections::HashMap;

use crate::common::*;

/// Every `nodenet …` the documentation writes, with the file it is in.
fn documented_commands() -> Vec<(String, String)> {
    let mut files = vec![repo().join("README.md"), repo().join("CONTRIBUTING.md")];
    files.extend(
        files_under(&repo().join("docs"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let mut in_shell = false;
        for line in text.lines() {
            if line.starts_with("```") {
                in_shell = matches!(line.trim(), "```sh" | "```bash" | "```console" | "```shell");
                continue;
            }
            if in_shell {
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

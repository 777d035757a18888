//! How much the CLI says and how: `--quiet`/`--verbose`, colour
//! (`NO_COLOR`), terminals, confirmation prompts and per-host progress.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::OnceLock;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

static VERBOSITY: OnceLock<Verbosity> = OnceLock::new();

pub fn set_verbosity(v: Verbosity) {
    let _ = VERBOSITY.set(v);
}

pub fn verbosity() -> Verbosity {
    *VERBOSITY.get().unwrap_or(&Verbosity::Normal)
}

/// Progress and summaries are for people: not with `--quiet`.
pub fn chatty() -> bool {
    verbosity() > Verbosity::Quiet
}

pub fn verbose() -> bool {
    verbosity() == Verbosity::Verbose
}

/// An informational line on stderr, silenced by `--quiet`.
macro_rules! info {
    ($($arg:tt)*) => {
        if $crate::ui::chatty() {
            eprintln!($($arg)*);
        }
    };
}
pub(crate) use info;

/// <https://no-color.org>: a non-empty `NO_COLOR` turns colour off.
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Colour on stderr: a terminal, and not `NO_COLOR`.
pub fn color_stderr() -> bool {
    !no_color() && std::io::stderr().is_terminal()
}

/// Colour on stdout: a terminal, and not `NO_COLOR`.
pub fn color_stdout() -> bool {
    !no_color() && std::io::stdout().is_terminal()
}

pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Asks `question` on the terminal; true only for an answer starting with
/// `y`. Only asked when stdin and stderr are terminals (the caller checks).
pub fn confirm(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim_start().chars().next(), Some('y' | 'Y'))
}

/// Whether a prompt can be answered: stdin and stderr are terminals.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Per-host progress while BMCs work: one live line per host on a
/// terminal; nothing otherwise, or timestamped lines with `--verbose`.
pub struct HostProgress {
    bars: Option<(
        indicatif::MultiProgress,
        Vec<(String, indicatif::ProgressBar)>,
    )>,
    lines: bool,
    start: Instant,
}

impl HostProgress {
    pub fn new(hosts: &[String]) -> HostProgress {
        let start = Instant::now();
        if chatty() && stderr_is_tty() {
            let multi = indicatif::MultiProgress::new();
            let style = indicatif::ProgressStyle::with_template(if no_color() {
                "{spinner} {prefix} {elapsed:>4} {msg}"
            } else {
                "{spinner:.cyan} {prefix:.bold} {elapsed:>4} {msg}"
            })
            .expect("static template");
            let width = hosts.iter().map(String::len).max().unwrap_or(0);
            let bars = hosts
                .iter()
                .map(|h| {
                    let bar = multi.add(indicatif::ProgressBar::new_spinner());
                    bar.set_style(style.clone());
                    bar.set_prefix(format!("{h:<width$}"));
                    bar.set_message("waiting");
                    bar.enable_steady_tick(std::time::Duration::from_millis(120));
                    (h.clone(), bar)
                })
                .collect();
            HostProgress {
                bars: Some((multi, bars)),
                lines: false,
                start,
            }
        } else {
            HostProgress {
                bars: None,
                lines: verbose(),
                start,
            }
        }
    }

    /// `host` is now at `step`.
    pub fn step(&self, host: &str, step: &str) {
        if let Some((_, bars)) = &self.bars {
            if let Some((_, bar)) = bars.iter().find(|(h, _)| h == host) {
                bar.set_message(step.to_string());
            }
        } else if self.lines {
            eprintln!(
                "[{:>6.1}s] {host}: {step}",
                self.start.elapsed().as_secs_f64()
            );
        }
    }

    /// `host` is done (its line stays with `outcome`).
    pub fn finish(&self, host: &str, outcome: &str) {
        if let Some((_, bars)) = &self.bars {
            if let Some((_, bar)) = bars.iter().find(|(h, _)| h == host) {
                bar.finish_with_message(outcome.to_string());
            }
        } else if self.lines {
            self.step(host, outcome);
        }
    }

    /// Removes the live lines before the summary is printed.
    pub fn clear(&self) {
        if let Some((multi, _)) = &self.bars {
            let _ = multi.clear();
        }
    }
}

/// Where a command's time went, printed with `--verbose`
/// (`timing: load 0.41 s, check 0.20 s, render 0.90 s`).
pub struct Phases {
    last: Instant,
    done: Vec<(&'static str, f64, u64)>,
}

impl Phases {
    pub fn start() -> Phases {
        Phases {
            last: Instant::now(),
            done: Vec::new(),
        }
    }

    /// Ends the phase called `name`.
    pub fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.done
            .push((name, (now - self.last).as_secs_f64(), resident_mib()));
        self.last = now;
    }

    pub fn print(&self) {
        if verbose() {
            let parts: Vec<String> = self
                .done
                .iter()
                .map(|(n, s, rss)| format!("{n} {s:.3} s (RSS {rss} MiB)"))
                .collect();
            eprintln!("timing: {}", parts.join(", "));
        }
    }
}

/// The process's resident set now, in MiB (0 where /proc says nothing).
fn resident_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kib| kib / 1024)
        .unwrap_or(0)
}

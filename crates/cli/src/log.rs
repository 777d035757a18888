//! The `tracing` records of nodenet's crates on stderr, for every command.
//! `NODENET_LOG` (`error`, `warn`, `info`, `debug`, `trace`) sets the level
//! and shows the libraries' records too; without it, only nodenet's own
//! warnings (`serve` failing to accept connections), as the libraries'
//! warnings are about their own probing and read like nodenet's failures.
//! The Redfish client logs requests and answers at `debug` by method, URL
//! and status (credentials go only in the Authorization header, which is
//! never logged). nmstate's own `log` records have their own route
//! (`nodenet_check::nmstate_bridge`).

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

pub fn init() {
    let asked = std::env::var("NODENET_LOG").unwrap_or_default();
    let level = match asked.to_ascii_lowercase().as_str() {
        "error" => Some(LevelFilter::ERROR),
        "warn" => Some(LevelFilter::WARN),
        "info" => Some(LevelFilter::INFO),
        "debug" => Some(LevelFilter::DEBUG),
        "trace" => Some(LevelFilter::TRACE),
        _ => None,
    };
    let targets = match level {
        Some(level) => Targets::new().with_default(level),
        None => Targets::new().with_target("nodenet", LevelFilter::WARN),
    };
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_target(true)
                .with_writer(std::io::stderr),
        )
        .with(targets)
        .try_init();
}

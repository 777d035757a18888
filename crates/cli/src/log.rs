//! The library crates' `tracing` records on stderr, for every command:
//! the level from `NODENET_LOG` (`error`, `warn` (default), `info`,
//! `debug`, `trace`). The Redfish client logs requests and answers at
//! `debug` by method, URL and status (credentials go only in the
//! Authorization header, which is never logged); `serve` warns of accept
//! errors. nmstate's own `log` records have their own route
//! (`nodenet_check::nmstate_bridge`).

pub fn init() {
    let level = match std::env::var("NODENET_LOG")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "error" => tracing::Level::ERROR,
        "info" => tracing::Level::INFO,
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        _ => tracing::Level::WARN,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_target(true)
        .with_writer(std::io::stderr)
        .try_init();
}

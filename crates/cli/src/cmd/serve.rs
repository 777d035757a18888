//! `nodenet serve DIR`: the image server.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Directory of images to serve.
    dir: PathBuf,
    /// Address to bind (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
}

pub fn run(args: Args) -> ExitCode {
    if !args.dir.is_dir() {
        return super::usage_error(format!("{} is not a directory", args.dir.display()));
    }
    let dir = args.dir.clone();
    let result = nodenet_image::serve::serve(&args.dir, &args.listen, |addr| {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        println!("serving {} on http://{addr}/", dir.display());
        for f in files {
            let name = f
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            match nodenet_image::serve::sha256_file(&f) {
                Ok(sha) => println!("http://{addr}/{name}?sha256={sha}"),
                Err(e) => eprintln!("warning: {}: {e}", f.display()),
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::usage_error(e),
    }
}

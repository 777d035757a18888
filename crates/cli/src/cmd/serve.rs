//! `nodenet serve DIR`: the image server.

use super::{CliError, Exit, Outcome};
use crate::ui::info;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Directory of images to serve.
    dir: PathBuf,
    /// Address to bind (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
}

pub fn run(args: Args) -> Outcome {
    if !args.dir.is_dir() {
        return Err(CliError::usage(format!(
            "{} is not a directory",
            args.dir.display()
        )));
    }
    let server = nodenet_image::serve::bind(&args.dir, &args.listen).map_err(CliError::usage)?;
    let addr = server.addr;
    println!("serving {} on http://{addr}/", args.dir.display());
    // Requests are answered at once; each file's URL follows when its
    // sha256 is known (a 1 GiB image takes a few seconds).
    let files = nodenet_image::serve::servable(&args.dir);
    std::thread::spawn(move || {
        let mut listed = 0;
        for (name, path) in files {
            match nodenet_image::serve::sha256_file(&path) {
                Ok(sha) => {
                    println!("http://{addr}/{name}?sha256={sha}");
                    listed += 1;
                }
                Err(e) => info!("warning: {}: {e}", path.display()),
            }
        }
        info!("listed {listed} file(s)");
    });
    server.run(|access| info!("{access}"));
    Ok(Exit::Success)
}

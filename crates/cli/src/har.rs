//! `stampede har FILE.har`: a journey written from a browser's recording, with the
//! values its answers handed out turned into captures and templates
//! ([`stampede_journey::har`]), ready for `stampede load URL --journey`.

use clap::Args;
use stampede_journey::har::{read_file, HarOptions};

use crate::common::Exit;

/// Arguments of `stampede har`.
#[derive(Args, Debug)]
pub struct HarArgs {
    /// The recording: a HAR file, as a browser's developer tools export it
    #[arg(value_name = "FILE.har")]
    pub file: String,
    /// Write the journey to FILE (standard output when absent)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
    /// Keep the requests for images, styles, scripts and fonts
    #[arg(long = "include-static")]
    pub include_static: bool,
    /// Keep the requests to this origin (https://host:port) instead of the first
    /// request's
    #[arg(long = "origin", value_name = "URL")]
    pub origin: Option<String>,
    /// Keep the recorded pauses between requests as think times
    #[arg(long = "think")]
    pub think: bool,
}

/// Reads the recording, writes the journey, and says what it made of it.
pub fn main(a: HarArgs) -> Result<(), Exit> {
    let opts = HarOptions {
        include_static: a.include_static,
        origin: a.origin.clone(),
        think: a.think,
    };
    let r = read_file(&a.file, &opts).map_err(Exit::usage)?;
    match &a.output {
        Some(path) => {
            if std::path::Path::new(path).exists() {
                return Err(Exit::usage(format!(
                    "-o {path}: the file exists; name another, or remove it first"
                )));
            }
            std::fs::write(path, &r.toml)
                .map_err(|e| Exit::fail(format!("-o {path}: cannot be written: {e}")))?;
        }
        None => crate::common::out(&r.toml),
    }
    for n in &r.notes {
        eprintln!("stampede: har: {n}");
    }
    let file = a.output.as_deref().unwrap_or("FILE");
    eprintln!(
        "stampede: har: run it with: stampede load {}/ --journey {file}",
        r.origin
    );
    Ok(())
}

//! `microshard doctor`: which backends are usable on this machine, and why not. The checks live
//! beside the backends they probe; the CLI only prints the report.

use std::fmt::Write as _;
use std::path::Path;

use super::{docker, process};

/// True when a Docker engine answers and already has the default MongoDB image (scripts use
/// this to choose the Docker backend without pulling).
pub(crate) async fn docker_ready() -> bool {
    let image = crate::topology::spec_default_image();
    match docker::connect(None).await {
        Ok(engine) => docker::image_present(&engine, image).await,
        Err(_) => false,
    }
}

/// The whole report: one section per backend, each line saying what was found or why not.
pub(crate) async fn report(bin_dir: Option<&Path>) -> String {
    let mut text = process_section(bin_dir).await;
    text.push_str(&docker_section().await);
    text.push_str("existing backend:\n");
    text.push_str(
        "  usable with any topology that sets uri = \"mongodb://...\" (see topologies/existing.toml)\n",
    );
    text
}

/// `mongod` and `mongos` as found (in `bin_dir` or on PATH) and their versions, with a note
/// when none is found or what is found is the stand-in.
async fn process_section(bin_dir: Option<&Path>) -> String {
    let mut text = String::from("process backend:\n");
    let mut standin_only = false;
    let mut found_any = false;
    for name in ["mongod", "mongos"] {
        let path = match crate::topology::find_program(name, bin_dir) {
            Ok(path) => path,
            Err(e) => {
                let _ = writeln!(text, "  {name}: not usable: {e}");
                continue;
            }
        };
        found_any = true;
        match process::binary_version(&path.display().to_string()).await {
            Ok(v) => {
                standin_only |= v.to_ascii_lowercase().contains("standin");
                let _ = writeln!(text, "  {name}: {} ({v})", path.display());
            }
            Err(e) => {
                let _ = writeln!(
                    text,
                    "  {name}: {} does not answer --version: {e:#}",
                    path.display()
                );
            }
        }
    }
    if !found_any {
        text.push_str("  note: without MongoDB binaries, the microshard stand-in can play mongod/mongos for tests and demos (not for MongoDB figures)\n");
    }
    if standin_only {
        text.push_str("  note: the binaries found are the microshard stand-in, not MongoDB; figures measured against them are stand-in figures\n");
    }
    text
}

/// Whether a Docker engine answers, its version, and whether the default MongoDB image and the
/// stand-in image are present.
async fn docker_section() -> String {
    let mut text = String::from("docker backend:\n");
    let engine = match docker::connect(None).await {
        Ok(engine) => engine,
        Err(e) => {
            let _ = writeln!(text, "  not usable: {e}");
            return text;
        }
    };
    let version = engine
        .version()
        .await
        .ok()
        .and_then(|v| v.version)
        .unwrap_or_else(|| "unknown".into());
    let _ = writeln!(text, "  engine: reachable, version {version}");
    for image in [crate::topology::spec_default_image(), docker::STANDIN_IMAGE] {
        let state = if docker::image_present(&engine, image).await {
            "present"
        } else if image == docker::STANDIN_IMAGE {
            "absent (the Docker tests build it from the microshard binary; no registry needed)"
        } else {
            "absent (pulled on first use when a registry is reachable)"
        };
        let _ = writeln!(text, "  image {image}: {state}");
    }
    text
}

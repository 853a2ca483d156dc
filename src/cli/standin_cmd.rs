//! `microshard standin mongod|mongos <flags>`, and the same when the binary is invoked as `mongod`/`mongos`.

use clap::Args;

use crate::standin::Role;

/// The stand-in's arguments: the role, then the same flags real `mongod`/`mongos` take.
#[derive(Debug, Args)]
#[command(after_help = CAPACITY_HELP)]
pub(crate) struct StandinArgs {
    /// `mongod` or `mongos` followed by mongod/mongos flags (`--port`, `--replSet`, `--configdb`, ...), or `image [--tag T]` to build the stand-in Docker image.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub args: Vec<String>,
}

/// What the capacity model is, said where a user looks for it (`standin --help`).
const CAPACITY_HELP: &str = "\
The capacity model (stand-in only): `--workers W --service-time-us T` give a stand-in W workers,
each CRUD operation holding one for T µs, so it serves at most W × 10^6 / T operations per second
(2 workers × 1000 µs = 2,000 ops/s). A worker is a slot, not a thread: operations beyond W wait
their turn, and that queue is the latency that rises at the ceiling. Without --service-time-us a
stand-in answers as fast as the machine lets it, which measures this machine, not sharding.
In a topology, --mongod-arg=--service-time-us=T (or `mongod_args`) gives every mongod the model,
config servers included (off the data path, they only hold metadata); a stand-in mongos has none
unless the topology's `mongos_args` give it one, so the routing hop costs only its own work.
Every stand-in-only flag: `microshard standin mongod --help`.";

/// Returns the role when the program was started under the name `mongod` or `mongos`.
pub(crate) fn role_from_argv0(argv0: Option<&std::ffi::OsString>) -> Option<Role> {
    role(std::path::Path::new(argv0?).file_name()?.to_str()?)
}

/// The role a program name stands for: `mongod` or `mongos`.
fn role(name: &str) -> Option<Role> {
    match name {
        "mongod" => Some(Role::Mongod),
        "mongos" => Some(Role::Mongos),
        _ => None,
    }
}

/// Runs `microshard standin ...`.
pub(crate) async fn run(args: StandinArgs) -> anyhow::Result<()> {
    if args.args.first().map(String::as_str) == Some("image") {
        return image(&args.args[1..]).await;
    }
    let mut it = args.args.into_iter();
    let role = match it.next() {
        Some(given) => role(&given).ok_or_else(|| {
            crate::error::bad_input(format!(
                "standin: the first argument must be 'mongod', 'mongos' or 'image', not '{given}'"
            ))
        })?,
        None => {
            return Err(crate::error::bad_input(
                "standin: give the role ('mongod' or 'mongos') then its flags",
            ));
        }
    };
    run_as(role, it.collect()).await
}

/// Runs the stand-in in `role` with mongod/mongos-style flags.
pub(crate) async fn run_as(role: Role, flags: Vec<String>) -> anyhow::Result<()> {
    if flags.iter().any(|f| f == "--help" || f == "-h") {
        crate::output::println(crate::standin::help_text(role))?;
        return Ok(());
    }
    if flags.iter().any(|f| f == "--version") {
        crate::output::print(&crate::standin::version_text(role))?;
        return Ok(());
    }
    let cfg = crate::standin::StandinConfig::from_args(role, &flags).map_err(to_anyhow)?;
    // The signal handlers are installed before the stand-in listens: a SIGTERM as soon as it
    // says "Waiting for connections" is a clean shutdown, never the default action's death.
    let signal = crate::signals::install().cancelled_owned();
    crate::standin::run_foreground(cfg, signal)
        .await
        .map_err(to_anyhow)
}

fn to_anyhow(e: crate::standin::StandinError) -> anyhow::Error {
    if e.is_bad_input() {
        crate::error::as_bad_input(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// The tag `microshard standin image` gives the image unless `--tag` says otherwise.
/// It is also the default `client_image` of a topology's client containers: one image is both.
pub(crate) const DEFAULT_IMAGE_TAG: &str = crate::topology::DEFAULT_CLIENT_IMAGE;

/// `microshard standin image [--tag T]`: builds the FROM-scratch Docker image of the stand-in
/// (this binary and the libraries it needs), so `--backend docker --image T` runs topologies on
/// it where no MongoDB image can be pulled.
async fn image(args: &[String]) -> anyhow::Result<()> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        crate::output::println(&format!(
            "microshard standin image [--tag T]: build the stand-in's FROM-scratch Docker image (default tag {DEFAULT_IMAGE_TAG}); then --backend docker --image T runs topologies on it"
        ))?;
        return Ok(());
    }
    let mut tag = DEFAULT_IMAGE_TAG.to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--tag" => match it.next() {
                Some(t) if !t.trim().is_empty() => tag = t.clone(),
                _ => return Err(crate::error::bad_input("--tag: give an image tag")),
            },
            other => match other.strip_prefix("--tag=") {
                Some(t) if !t.trim().is_empty() => tag = t.to_string(),
                _ => {
                    return Err(crate::error::bad_input(format!(
                        "standin image: unknown argument {other} (only --tag T)"
                    )));
                }
            },
        }
    }
    crate::backend::docker::check_reference(&tag)
        .map_err(|e| crate::error::bad_input(format!("--tag {tag}: {e}")))?;
    // `DOCKER_HOST` names the engine, as for the docker CLI (the hint for a remote client engine).
    let host = std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty());
    let docker = crate::backend::docker::connect(host.as_deref())
        .await
        .map_err(|e| anyhow::anyhow!("no Docker engine: {e}"))?;
    let binary = crate::standin::standin_executable()?;
    crate::backend::docker::build_standin_image(&docker, &binary, &tag).await?;
    crate::output::println(&format!(
        "built {tag}: the stand-in (not MongoDB) as a FROM-scratch image; use it with --backend docker --image {tag}"
    ))?;
    Ok(())
}

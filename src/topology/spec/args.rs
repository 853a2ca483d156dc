//! The server arguments and CPU sets a topology file gives: flags the plan sets itself or mongos refuses are refused, CPU lists parsed.

use toml::Spanned;

use super::Ctx;
use crate::topology::TopologyError;

/// Flags the plan sets itself; giving them in `mongod_args`/`mongos_args` would contradict it.
pub(super) const MANAGED_FLAGS: &[&str] = &[
    "--port",
    "--replSet",
    "--dbpath",
    "--configsvr",
    "--shardsvr",
    "--bind_ip",
    "--bind_ip_all",
    "--logpath",
    "--configdb",
    "--unixSocketPrefix",
    "--fork",
    "--wiredTigerCacheSizeGB",
];

/// Flags mongos refuses.
pub(super) const MONGOS_REFUSES: &[&str] =
    &["--wiredTigerCacheSizeGB", "--storageEngine", "--auth"];

pub(super) fn check_cpuset_opt(
    ctx: &Ctx<'_>,
    c: Option<&Spanned<String>>,
    key: &str,
) -> Result<Option<String>, TopologyError> {
    let checked = |c: &Spanned<String>| match parse_cpuset(c.get_ref()) {
        Ok(_) => Ok(c.get_ref().clone()),
        Err(m) => Err(ctx.err(&c.span(), key, m)),
    };
    c.map(checked).transpose()
}

pub(super) fn check_args(
    ctx: &Ctx<'_>,
    args: &Spanned<Vec<String>>,
    key: &str,
    refused: &[&str],
) -> Result<(), TopologyError> {
    refused_args(args.get_ref(), refused).map_err(|m| ctx.err(&args.span(), key, m))
}

/// Refuses the first argument whose flag (`--port=1` → `--port`) is in `refused`.
pub(super) fn refused_args(args: &[String], refused: &[&str]) -> Result<(), String> {
    let mut flags = args.iter().map(|a| a.split('=').next().unwrap_or(a));
    match flags.find(|f| refused.contains(f)) {
        Some(flag) => Err(format!(
            "{flag} is not allowed here: the plan sets it (or the server refuses it)"
        )),
        None => Ok(()),
    }
}

/// Checks extra mongod arguments given outside a topology file (`--mongod-arg`) by the same rule
/// as a topology's `mongod_args`, so a flag the plan manages is refused before anything starts
/// instead of making bring-up wait on a port nobody listens on.
pub(crate) fn check_managed_args(args: &[String]) -> Result<(), String> {
    refused_args(args, MANAGED_FLAGS)
}

/// Parses a CPU list (`"0-3,6"`) into CPU numbers; the error says what is wrong.
pub(crate) fn parse_cpuset(s: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let bad = || format!("{s:?} is not a CPU list like \"0-3,6\"");
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b || b > 4095 {
                return Err(bad());
            }
            cpus.extend(a..=b);
        } else {
            let c: usize = part.parse().map_err(|_| bad())?;
            if c > 4095 {
                return Err(bad());
            }
            cpus.push(c);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

//! The `[[hosts]]` entries of a topology file: each host's address, Docker engine, CPU sets and memory budget, and the checks across hosts.

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::{Ctx, HostSpec, RawHost, parse_cpuset};
use crate::topology::TopologyError;

/// Every `[[hosts]]` entry, or this machine alone when there is none.
pub(super) fn hosts(
    raw: &[Spanned<RawHost>],
    ctx: &Ctx<'_>,
    per_host_dirs: u32,
) -> Result<Vec<HostSpec>, TopologyError> {
    let mut hosts = Vec::new();
    let mut seen = HashSet::new();
    for (i, h) in raw.iter().enumerate() {
        hosts.push(host(i, h, ctx, per_host_dirs, &mut seen)?);
    }
    if hosts.is_empty() {
        hosts.push(HostSpec {
            address: "localhost".into(),
            ..HostSpec::default()
        });
    }
    Ok(hosts)
}

/// One `[[hosts]]` entry (`hosts[i]`).
fn host(
    i: usize,
    raw: &Spanned<RawHost>,
    ctx: &Ctx<'_>,
    per_host_dirs: u32,
    seen: &mut HashSet<(String, String)>,
) -> Result<HostSpec, TopologyError> {
    let span = raw.span();
    let h = raw.get_ref();
    let address = h.address.get_ref().trim().to_string();
    let key = format!("hosts[{i}]");
    if address.is_empty() || address.contains(['/', ' ', ':']) {
        return Err(ctx.err(
            &h.address.span(),
            &format!("{key}.address"),
            "must be a host name or IP address without port",
        ));
    }
    let docker = h.docker.as_ref().map(|d| d.get_ref().clone());
    // No `docker` and `docker = ""` name the same engine here (the endpoint is checked below).
    if !seen.insert((address.clone(), docker.clone().unwrap_or_default())) {
        return Err(ctx.err(
            &span,
            &format!("{key}.address"),
            format!("host {address:?} is listed twice"),
        ));
    }
    check_docker_endpoint(h, &key, ctx)?;
    let budget = memory_budget(h, &key, ctx)?;
    check_host_lists(h, &key, ctx, per_host_dirs)?;
    if let Some(d) = h.log_dir.as_ref().filter(|d| !d.is_absolute()) {
        return Err(relative(ctx, &span, &format!("{key}.log_dir"), d));
    }
    let publish = match &h.publish_address {
        Some(p) if p.get_ref().parse::<std::net::IpAddr>().is_err() => {
            return Err(ctx.err(
                &p.span(),
                &format!("{key}.publish_address"),
                "must be an IP address",
            ));
        }
        Some(p) => Some(p.get_ref().clone()),
        None => None,
    };
    Ok(HostSpec {
        address,
        address_line: ctx.line(&h.address.span()),
        docker,
        memory_budget_gb: budget,
        shard_cpusets: h.shard_cpusets.get_ref().clone(),
        data_dirs: h.data_dirs.get_ref().clone(),
        log_dir: h.log_dir.clone(),
        publish_address: publish,
    })
}

/// A host's `docker` endpoint, when given: a unix socket or a plain TCP/HTTP URL.
fn check_docker_endpoint(h: &RawHost, key: &str, ctx: &Ctx<'_>) -> Result<(), TopologyError> {
    match &h.docker {
        Some(d)
            if !["unix://", "tcp://", "http://"]
                .iter()
                .any(|s| d.get_ref().starts_with(s)) =>
        {
            Err(ctx.err(
                &d.span(),
                &format!("{key}.docker"),
                "must be a unix:// socket or a tcp:// / http:// URL (TLS endpoints: tunnel them, e.g. over SSH, to a local socket)",
            ))
        }
        _ => Ok(()),
    }
}

/// A host's `memory_budget_gb`, when given: a positive number of GB.
fn memory_budget(h: &RawHost, key: &str, ctx: &Ctx<'_>) -> Result<Option<f64>, TopologyError> {
    match &h.memory_budget_gb {
        Some(b) if !(b.get_ref().is_finite() && *b.get_ref() > 0.0) => Err(ctx.err(
            &b.span(),
            &format!("{key}.memory_budget_gb"),
            "must be a positive number of GB",
        )),
        Some(b) => Ok(Some(*b.get_ref())),
        None => Ok(None),
    }
}

/// A host's `shard_cpusets` and `data_dirs`: one per mongod on it, each valid (absolute
/// directories).
fn check_host_lists(
    h: &RawHost,
    key: &str,
    ctx: &Ctx<'_>,
    per_host_dirs: u32,
) -> Result<(), TopologyError> {
    let count = |list: &str, span: Range<usize>, len: usize, what: &str| {
        if len == 0 || len == per_host_dirs as usize {
            return Ok(());
        }
        Err(ctx.err(
            &span,
            &format!("{key}.{list}"),
            format!("gives {len} {what} for {per_host_dirs} mongod(s) on this host"),
        ))
    };
    let cpusets = h.shard_cpusets.get_ref();
    count(
        "shard_cpusets",
        h.shard_cpusets.span(),
        cpusets.len(),
        "CPU sets",
    )?;
    for c in cpusets {
        parse_cpuset(c)
            .map_err(|m| ctx.err(&h.shard_cpusets.span(), &format!("{key}.shard_cpusets"), m))?;
    }
    count(
        "data_dirs",
        h.data_dirs.span(),
        h.data_dirs.get_ref().len(),
        "directories",
    )?;
    // A relative directory would be resolved against whatever directory microshard (or
    // the Docker engine, for a bind mount) happens to run in: refuse it here.
    if let Some(d) = h.data_dirs.get_ref().iter().find(|d| !d.is_absolute()) {
        return Err(relative(
            ctx,
            &h.data_dirs.span(),
            &format!("{key}.data_dirs"),
            d,
        ));
    }
    Ok(())
}

/// The refusal of a relative directory.
fn relative(ctx: &Ctx<'_>, span: &Range<usize>, key: &str, dir: &Path) -> TopologyError {
    let shown = dir.display().to_string();
    ctx.err(
        span,
        key,
        format!("{shown:?} is relative; give an absolute path"),
    )
}

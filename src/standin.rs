//! The stand-in as the tool sees it: the `microshard-standin` crate (a MongoDB-wire-protocol server that
//! plays mongod, replica-set member or mongos, never presented as MongoDB), re-exported under this path,
//! plus what concerns the `microshard` *executable*, which the stand-in crate cannot know about: the
//! `mongod`/`mongos` symlinks that make the binary act as the stand-in (see `cli::standin_cmd`).

use std::path::Path;

pub use microshard_standin::*;

/// Creates `mongod` and `mongos` symlinks to the microshard executable in `dir`, so the directory works
/// as a `--bin-dir` (the binary acts as the stand-in when invoked under those names).
///
/// The executable is `$MICROSHARD_STANDIN_EXE` when set, else the running program when it is
/// `microshard`, else (a test or bench harness under `target/<profile>/deps/`) the `microshard` binary
/// next to it in `target/<profile>/`.
pub fn link_binaries(dir: &Path) -> std::io::Result<()> {
    link_binaries_to(dir, &standin_executable()?)
}

/// Like [`link_binaries`], with an explicit executable to link to.
pub(crate) fn link_binaries_to(dir: &Path, exe: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for name in ["mongod", "mongos"] {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_ok() {
            std::fs::remove_file(&link)?;
        }
        std::os::unix::fs::symlink(exe, &link)?;
    }
    Ok(())
}

/// The executable that becomes the stand-in when invoked as `mongod`/`mongos` (see [`link_binaries`]).
pub(crate) fn standin_executable() -> std::io::Result<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("MICROSHARD_STANDIN_EXE") {
        return Ok(std::path::PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    if exe.file_name().is_some_and(|n| n == "microshard") {
        return Ok(exe);
    }
    let candidates = [
        exe.parent().map(|d| d.join("microshard")),
        exe.parent()
            .and_then(|d| d.parent())
            .map(|d| d.join("microshard")),
    ];
    for c in candidates.into_iter().flatten() {
        if c.is_file() {
            return Ok(c);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!(
            "{} is not the microshard binary and no microshard binary was found beside it; set MICROSHARD_STANDIN_EXE",
            exe.display()
        ),
    ))
}

/// What `mongod --help` / `mongos --help` print when the binary plays the stand-in: which of
/// the real server's flags it takes, and its own.
pub(crate) fn help_text(role: Role) -> &'static str {
    match role {
        Role::Mongod => {
            "microshard stand-in mongod (a MongoDB-wire-protocol test server, not MongoDB)\n\
             Flags as real mongod: --port, --bind_ip, --bind_ip_all, --dbpath, --logpath, --logappend,\n\
             --replSet, --configsvr, --shardsvr, --wiredTigerCacheSizeGB, --unixSocketPrefix, --setParameter, --quiet,\n\
             --tlsMode requireTLS|disabled, --tlsCertificateKeyFile FILE, --tlsCAFile FILE, --maxConns N (reported only)\n\
             Stand-in only: --service-time-us T, --workers W, --command-log FILE, --primary-delay-ms MS, --election-winner N, --election-delay-ms MS,\n\
             --stall D/P, --write-concern-error, --step-down [SET:]T/D, --zero-counters,\n\
             --resident-mib MIB, --no-hello (answers `hello` CommandNotFound, as 4.4.0-4.4.1)\n\
             Security (stand-in only): --tls-cert FILE --tls-key FILE (PEM chain and key: TLS required on every connection),\n\
             --auth-user NAME:PASSWORD (repeatable: users of admin, SCRAM-SHA-256 required; the first is the one the\n\
             stand-in dials its peers as, with --tlsCAFile as the CA it trusts them with; passwords never shown)"
        }
        Role::Mongos => {
            "microshard stand-in mongos (a MongoDB-wire-protocol test server, not MongoDB)\n\
             Flags as real mongos: --configdb rs/host:port,..., --port, --bind_ip, --bind_ip_all, --logpath,\n\
             --logappend, --unixSocketPrefix, --setParameter, --quiet, --tlsMode requireTLS|disabled,\n\
             --tlsCertificateKeyFile FILE, --tlsCAFile FILE\n\
             Stand-in only: --service-time-us T, --workers W, --command-log FILE, --zero-counters, --resident-mib MIB,\n\
             --no-hello, --balancer-on-after-ms MS (the balancer back on MS ms after the first data command)\n\
             Security (stand-in only): --tls-cert FILE --tls-key FILE (TLS required), --auth-user NAME:PASSWORD (repeatable:\n\
             SCRAM-SHA-256 required; the mongos dials its shards and config servers as the first user, over TLS\n\
             trusting --tlsCAFile)"
        }
    }
}

/// What `--version` prints, shaped like mongod's own first line so tools that parse it see a
/// version ending in -standin.
pub(crate) fn version_text(role: Role) -> String {
    let first = match role {
        Role::Mongod => "db version",
        Role::Mongos => "mongos version",
    };
    format!(
        "{first} v{STANDIN_VERSION}\nBuild Info: microshard stand-in (a MongoDB-wire-protocol test server, not MongoDB)\n"
    )
}

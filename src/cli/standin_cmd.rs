//! `microshard standin mongod|mongos <flags>`, and the same when the binary is invoked as `mongod`/`mongos`.

use clap::Args;

/// The role the stand-in plays, chosen the way real MongoDB chooses it: by the program name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A `mongod` (standalone, replica-set member, config server or shard server, by its flags).
    Mongod,
    /// A `mongos` router.
    Mongos,
}

/// The stand-in's arguments: the role, then the same flags real `mongod`/`mongos` take.
#[derive(Debug, Args)]
pub struct StandinArgs {
    /// `mongod` or `mongos`, followed by mongod/mongos flags (`--port`, `--replSet`, `--configdb`, ...).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub args: Vec<String>,
}

/// Returns the role when the program was started under the name `mongod` or `mongos`.
pub fn role_from_argv0(argv0: Option<&std::ffi::OsString>) -> Option<Role> {
    let name = std::path::Path::new(argv0?).file_name()?.to_str()?;
    match name {
        "mongod" => Some(Role::Mongod),
        "mongos" => Some(Role::Mongos),
        _ => None,
    }
}

/// Runs `microshard standin ...`.
pub async fn run(_args: StandinArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}

/// Runs the stand-in in `role` with mongod/mongos-style flags.
pub async fn run_as(_role: Role, _flags: Vec<String>) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}

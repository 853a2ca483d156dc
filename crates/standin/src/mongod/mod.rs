//! mongod's data commands over the in-memory store, one file per command family: `write`
//! (insert, update, delete), `read` (find, cursors, count), `aggregate`, `ddl` (create, drop,
//! indexes) and `catalog` (listings and statistics); replica-set commands are `repl`'s.

mod aggregate;
mod catalog;
mod ddl;
mod read;
mod write;

use std::sync::Arc;

use mongodb::bson::{Document, doc};

use crate::cmderr::{CmdError, CmdResult, command_not_found};
use crate::fields::require_admin;
use crate::repl;
use crate::state::ServerState;
use crate::store::Store;
pub(crate) use aggregate::run_pipeline;
pub(crate) use read::{get_more, kill_cursors};

/// The commands mongod answers besides those every role answers (`common`), each name listed
/// once; [`command`] dispatches on it.
const COMMANDS: &[(&str, Cmd)] = &[
    ("insert", Cmd::Insert),
    ("find", Cmd::Find),
    ("getMore", Cmd::GetMore),
    ("killCursors", Cmd::KillCursors),
    ("update", Cmd::Update),
    ("delete", Cmd::Delete),
    ("count", Cmd::Count),
    ("aggregate", Cmd::Aggregate),
    ("create", Cmd::Create),
    ("drop", Cmd::Drop),
    ("dropDatabase", Cmd::DropDatabase),
    ("createIndexes", Cmd::CreateIndexes),
    ("listIndexes", Cmd::ListIndexes),
    ("listDatabases", Cmd::ListDatabases),
    ("listCollections", Cmd::ListCollections),
    ("dbStats", Cmd::DbStats),
    ("collStats", Cmd::CollStats),
    ("replSetInitiate", Cmd::ReplSetInitiate),
    ("replSetGetStatus", Cmd::ReplSetGetStatus),
    ("_standinReplSetJoin", Cmd::StandinReplSetJoin),
    ("_standinReplSetFailover", Cmd::StandinReplSetFailover),
    ("replSetGetConfig", Cmd::ReplSetGetConfig),
    ("flushRouterConfig", Cmd::FlushRouterConfig),
];

/// A mongod command, so the `match` in [`command`] is checked for exhaustiveness against [`COMMANDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    Insert,
    Find,
    GetMore,
    KillCursors,
    Update,
    Delete,
    Count,
    Aggregate,
    Create,
    Drop,
    DropDatabase,
    CreateIndexes,
    ListIndexes,
    ListDatabases,
    ListCollections,
    DbStats,
    CollStats,
    ReplSetInitiate,
    ReplSetGetStatus,
    StandinReplSetJoin,
    StandinReplSetFailover,
    ReplSetGetConfig,
    FlushRouterConfig,
}

/// The table entry for `name`.
fn lookup(name: &str) -> Option<Cmd> {
    COMMANDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, cmd)| *cmd)
}

/// Dispatches one mongod command.
pub(crate) async fn command(
    shared: &Arc<ServerState>,
    name: &str,
    db: &str,
    body: &Document,
) -> CmdResult {
    let Some(cmd) = lookup(name) else {
        return Err(command_not_found(name));
    };
    match cmd {
        Cmd::Insert => write::insert(shared, db, body).await,
        Cmd::Find => read::find(shared, db, body).await,
        Cmd::GetMore => read::get_more(shared, db, body).await,
        Cmd::KillCursors => read::kill_cursors(shared, body),
        Cmd::Update => write::update(shared, db, body).await,
        Cmd::Delete => write::delete(shared, db, body).await,
        Cmd::Count => read::count(shared, db, body).await,
        Cmd::Aggregate => aggregate::aggregate(shared, db, body).await,
        Cmd::Create => ddl::create(shared, db, body),
        Cmd::Drop => ddl::drop(shared, db, body),
        Cmd::DropDatabase => ddl::drop_database(shared, db),
        Cmd::CreateIndexes => ddl::create_indexes(shared, db, body),
        Cmd::ListIndexes => catalog::list_indexes(shared, db, body),
        Cmd::ListDatabases => catalog::list_databases(shared, body),
        Cmd::ListCollections => catalog::list_collections(shared, db, body),
        Cmd::DbStats => catalog::db_stats(shared, db, body),
        Cmd::CollStats => catalog::coll_stats_command(shared, db, body),
        Cmd::ReplSetInitiate => {
            require_admin(name, db)?;
            repl::initiate(shared, body).await
        }
        Cmd::ReplSetGetStatus => repl::get_status(shared),
        Cmd::StandinReplSetJoin => repl::join(shared, body),
        Cmd::StandinReplSetFailover => repl::failover(shared, body),
        Cmd::ReplSetGetConfig => repl::get_config(shared),
        Cmd::FlushRouterConfig => Ok(doc! {"ok": 1.0}),
    }
}

/// Runs `f` on the store under its lock (InternalError when a panic poisoned it).
fn with_store<T>(shared: &ServerState, f: impl FnOnce(&mut Store) -> CmdResult<T>) -> CmdResult<T> {
    let mut s = shared
        .store
        .lock()
        .map_err(|_| CmdError::poisoned("storage lock"))?;
    f(&mut s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_names_are_listed_once() {
        let mut names: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
        assert_eq!(lookup("getMore"), Some(Cmd::GetMore));
        assert_eq!(lookup("_standinReplSetJoin"), Some(Cmd::StandinReplSetJoin));
        // Every role answers these itself (`common`), so mongod's table never sees them.
        assert_eq!(lookup("hello"), None);
        assert_eq!(lookup("serverStatus"), None);
    }
}

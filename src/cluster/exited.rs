//! A member that exits during start-up says why in its own words: the one log line that gives
//! the reason (mongod's `Error parsing command line: unrecognised option '--bogus'`, or the
//! last fatal/error entry of its JSON log), where its log is, and whether a flag the user gave
//! is to blame (then the error is bad input, exit 2).

use crate::topology::Member;

/// The flags microshard itself passes to members (`topology::plan`): an unrecognised one is
/// this version's fault, not the user's.
const OWN_FLAGS: &[&str] = &[
    "--port",
    "--bind_ip",
    "--bind_ip_all",
    "--logpath",
    "--unixSocketPrefix",
    "--nounixsocket",
    "--dbpath",
    "--configsvr",
    "--shardsvr",
    "--replSet",
    "--wiredTigerCacheSizeGB",
    "--configdb",
];

/// Why a member's start-up failed, read from the tail of its log (lines joined with " | ").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExitReason {
    /// The line that says why (or the last line when none stands out).
    pub line: String,
    /// A flag of the user's that the server refused (`--bogus`).
    pub user_flag: Option<String>,
}

/// Picks the line that gives the reason out of `tail`.
pub(crate) fn reason(tail: &str) -> ExitReason {
    let lines: Vec<&str> = tail
        .split(" | ")
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("try '"))
        .collect();
    let parsing = lines
        .iter()
        .rev()
        .find(|l| l.contains("Error parsing command line") || l.contains("Error parsing option"));
    let line = parsing
        .map(|l| l.to_string())
        .or_else(|| lines.iter().rev().find_map(|l| json_error(l)))
        .or_else(|| lines.last().map(|l| l.to_string()))
        .unwrap_or_else(|| "(no log output)".into());
    let user_flag = parsing
        .and_then(|l| refused_flag(l))
        .filter(|f| !OWN_FLAGS.contains(&f.as_str()));
    ExitReason { line, user_flag }
}

/// The flag in `... unrecognised option '--bogus' ...`.
fn refused_flag(line: &str) -> Option<String> {
    let rest = line
        .split_once("unrecognised option '")
        .or_else(|| line.split_once("unrecognized option '"))?
        .1;
    let flag = rest.split('\'').next()?;
    let flag = flag.split('=').next().unwrap_or(flag);
    (!flag.is_empty()).then(|| flag.to_string())
}

/// A fatal or error entry of mongod's JSON log (`{"s":"F","msg":…,"attr":{"error":…}}`), as
/// one line: its message and error.
fn json_error(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if !matches!(v.get("s")?.as_str()?, "F" | "E") {
        return None;
    }
    let msg = v.get("msg")?.as_str()?;
    Some(match v.pointer("/attr/error") {
        Some(serde_json::Value::String(e)) => format!("{msg}: {e}"),
        Some(e) => format!("{msg}: {e}"),
        None => msg.to_string(),
    })
}

/// Where the member's log is: `docker logs <container>`, or its log files.
pub(crate) fn log_location(member: &Member) -> String {
    if let Some(c) = &member.container {
        return format!("docker logs {c}");
    }
    let stdout = member.dir.as_ref().map(|d| d.join("stdout.log"));
    let files: Vec<String> = stdout
        .into_iter()
        .chain(member.log_path.clone())
        .map(|f| f.display().to_string())
        .collect();
    if files.is_empty() {
        "no log file".into()
    } else {
        files.join(" and ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_s_own_reason_is_quoted() {
        let real = "Error parsing command line: unrecognised option '--bogus' | try 'mongod --help' for more information";
        assert_eq!(
            reason(real),
            ExitReason {
                line: "Error parsing command line: unrecognised option '--bogus'".into(),
                user_flag: Some("--bogus".into()),
            }
        );
        let own = "Error parsing command line: unrecognised option '--nounixsocket'";
        assert_eq!(reason(own).user_flag, None);
        let json = r#"{"t":{"$date":"x"},"s":"I","msg":"start"} | {"t":{"$date":"x"},"s":"E","c":"STORAGE","msg":"Failed to start up WiredTiger under any compatibility version.","attr":{"error":"No space left"}} | {"s":"I","msg":"shutting down"}"#;
        let r = reason(json);
        assert_eq!(
            r.line,
            "Failed to start up WiredTiger under any compatibility version.: No space left"
        );
        assert_eq!(r.user_flag, None);
        assert_eq!(reason("a | b").line, "b");
        assert_eq!(reason("").line, "(no log output)");
    }
}

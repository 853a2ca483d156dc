//! Where the Kubernetes backend puts a plan's members: every replica set (and the routers) is a
//! StatefulSet whose pods are named `<topology>-<set>-<ordinal>` and reached at
//! `<pod>.<set's headless Service>:27017` inside the namespace; a host is a node
//! (`kubernetes.io/hostname` = its `address`, unless it is `localhost`: any node).

use std::path::PathBuf;

use crate::topology::{
    Layout, Member, MemberRole, Placement, Plan, PlanOptions, Seat, TopologyError, TopologySpec,
    is_local,
};

/// The port every member listens on inside its pod: each pod has an address of its own.
pub(super) const PORT: u16 = 27017;

/// The Kubernetes backend's plan of `spec`: one pod per member, sized without this machine's RAM.
pub(crate) fn plan(spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
    let mut notes = Vec::new();
    if spec
        .hosts
        .iter()
        .any(|h| !h.data_dirs.is_empty() || h.log_dir.is_some())
    {
        notes.push("data_dirs and log_dir do not apply to pods: /data/db is an emptyDir, logs go to the pod's output".into());
    }
    let multi_host = spec.hosts.len() > 1 || spec.hosts.iter().any(|h| !is_local(&h.address));
    let layout = Layout {
        multi_host,
        memory_limit_gb: spec.memory_limit_gb,
        notes,
        machine_ram: false,
        placement: &Pods { spec },
    };
    Plan::new(spec, opts, layout)
}

/// The name of the StatefulSet (and headless Service) of the group `group`.
pub(super) fn set_name(topology: &str, group: &str) -> String {
    format!("{topology}-{group}")
}

/// The group a member's pod belongs to: its replica set, the routers, or the lone standalone.
pub(super) fn group(m: &Member) -> &str {
    match (&m.replica_set, m.role) {
        (Some(set), _) => set,
        (None, MemberRole::Mongos) => "mongos",
        (None, _) => &m.name,
    }
}

/// A member's ordinal in its group: `sh0-2` → 2, `cfg1` → 1, `mongos0` → 0, `sh0` → 0.
fn ordinal(name: &str, group: &str) -> usize {
    (name.strip_prefix(group))
        .map(|rest| rest.trim_start_matches('-'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Members as pods of StatefulSets of one topology.
struct Pods<'a> {
    spec: &'a TopologySpec,
}

impl Placement for Pods<'_> {
    /// A pod: its stable name and DNS name, and the command line the image runs.
    fn place(&self, m: &mut Member, seat: &Seat) {
        m.port = PORT;
        let set = set_name(&self.spec.name, group(m));
        let pod = format!("{set}-{}", ordinal(&m.name, group(m)));
        m.member_host = format!("{pod}.{set}:{PORT}");
        m.argv = vec![
            seat.role.program().into(),
            "--port".into(),
            PORT.to_string(),
            "--bind_ip_all".into(),
        ];
        if seat.role != MemberRole::Mongos {
            m.argv.extend(["--dbpath".into(), "/data/db".into()]);
            m.dbpath = Some(PathBuf::from("/data/db"));
        }
        m.container = Some(pod);
        m.memory_limit_gb = self.spec.memory_limit_gb;
        let address = &self.spec.hosts[seat.host_index].address;
        m.node = (!is_local(address)).then(|| address.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_follow_member_names() {
        assert_eq!(ordinal("sh0", "sh0"), 0);
        assert_eq!(ordinal("sh0-2", "sh0"), 2);
        assert_eq!(ordinal("cfg1", "cfg"), 1);
        assert_eq!(ordinal("mongos3", "mongos"), 3);
        assert_eq!(ordinal("single", "rs0"), 0);
    }
}

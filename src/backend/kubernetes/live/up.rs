//! `up --backend kubernetes`: the run's namespace, Lease and server objects created, its pods
//! waited for until Ready, a port-forward opened to each, then the shared assembly
//! ([`crate::cluster::assemble`]) through them, as for every other backend. The state file is
//! written before anything is created, so a run that crashed is found by `down --all`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;

use super::{cpus, forward, held, lease, pods, provision};
use crate::backend::{BackendError, MemberState, RunningCluster, UpOptions, state};
use crate::cluster::{LaunchError, Launcher};
use crate::events::Event;
use crate::topology::{Member, Plan};

/// Brings `plan` up in a namespace of its own; on failure or Ctrl-C the namespace is deleted
/// (kept with `--keep`, and said) before the error returns.
pub(crate) async fn up(plan: &Plan, opts: &UpOptions) -> Result<RunningCluster, BackendError> {
    let client = super::connect_current().await?;
    let mut record = RunningCluster::from_plan(plan, opts.keep);
    record.kube_context = crate::backend::kubernetes::connect::current_context();
    state::write(&record)?;
    let work = bring_up(&client, plan, opts, &mut record);
    let outcome = match &opts.cancel {
        Some(token) => tokio::select! {
            r = work => r,
            _ = token.cancelled() => Err(crate::error::Interrupted(format!(
                "during bring-up of {}; its namespace was {}",
                plan.name,
                if opts.keep { "kept (--keep)" } else { "deleted" }
            )).into()),
        },
        None => work.await,
    };
    // A run its state file does not record could not be torn down by `down`: none is left.
    match outcome.and_then(|()| state::write(&record)) {
        Ok(()) => Ok(record),
        Err(err) => {
            let (kept, err) = provision::abandon(&client, plan, opts.keep, err).await;
            if let Some(ns) = kept {
                opts.events.event(Event::Warning(format!(
                    "microshard: namespace {ns} kept (--keep); delete it with: kubectl delete namespace {ns}"
                )));
            }
            state::remove(&record.state_file);
            Err(err)
        }
    }
}

/// Every step of [`up`] after the state file, recording what it learns in `record`.
async fn bring_up(
    client: &kube::Client,
    plan: &Plan,
    opts: &UpOptions,
    record: &mut RunningCluster,
) -> Result<(), BackendError> {
    let say = |s: String| opts.events.event(Event::BringUp(s));
    let holder = lease::holder();
    let ns = provision::provision(client, plan, &holder, Timestamp::now()).await?;
    let stop = held::token(&plan.run_id);
    let renewal = lease::Renewal {
        client: client.clone(),
        ns: ns.clone(),
        holder,
        every: lease::RENEW_EVERY,
    };
    lease::keep_renewed(renewal, stop.clone(), opts.events.clone());
    let names: Vec<String> = plan
        .members
        .iter()
        .filter_map(|m| m.container.clone())
        .collect();
    say(format!(
        "namespace {ns}: waiting for {} pods to be Ready",
        names.len()
    ));
    pods::wait_ready(
        client,
        &ns,
        &plan.run_id,
        &names,
        opts.assembly.ready_timeout,
    )
    .await?;
    let images = pods::image_ids(client, &ns, &names).await;
    for m in &plan.members {
        if let Some(id) = m.container.as_ref().and_then(|pod| images.get(pod)) {
            record.images.insert(m.name.clone(), id.clone());
        }
    }
    if let Some(caveat) = cpus::verify(client, &ns, plan).await {
        opts.events
            .event(Event::Warning(format!("microshard: {caveat}")));
        record.caveats.push(caveat);
    }
    let launcher = Forwarded::open(client, &ns, plan, stop).await?;
    let assembly = crate::cluster::assemble(plan, &launcher, &opts.assembly, &*opts.events)
        .await
        .map_err(BackendError::from_assembly)?;
    for m in &mut record.members {
        m.state = MemberState::Ready;
        if let Some(address) = launcher.addresses.get(&m.name) {
            m.address = address.clone();
            m.direct_uri = crate::cluster::direct_uri(address);
        }
    }
    record.standin = assembly.servers.values().any(|s| s.standin);
    record.servers = assembly.servers;
    record.chunks = assembly.chunks;
    record.primaries = assembly.primaries;
    record.entry_uri = crate::backend::entry_uri_via(plan, |m| launcher.address(m))?;
    Ok(())
}

/// The run's members as the assembly reaches them: each at the local end of a port-forward to
/// its pod. Their pods were started by their StatefulSets, so `start` has nothing to do.
struct Forwarded {
    /// Member name → `127.0.0.1:port`.
    addresses: BTreeMap<String, String>,
    /// The API, to ask whether a member's pod crashed.
    client: kube::Client,
    /// The run's namespace.
    ns: String,
    /// When each member's pod was last asked about: at most every [`ASK_EVERY`].
    asked: Mutex<HashMap<String, Instant>>,
}

/// How often a waited-for member's pod is asked whether it crashed.
const ASK_EVERY: Duration = Duration::from_secs(2);

impl Forwarded {
    /// A port-forward listener per member pod of `plan` in `ns`, stopped by `stop`.
    async fn open(
        client: &kube::Client,
        ns: &str,
        plan: &Plan,
        stop: tokio_util::sync::CancellationToken,
    ) -> Result<Forwarded, BackendError> {
        let mut addresses = BTreeMap::new();
        for m in &plan.members {
            let Some(pod) = &m.container else { continue };
            let dial = forward::to_pod(client, ns, pod, m.port);
            let address = forward::listen(pod, dial, stop.clone()).await?;
            addresses.insert(m.name.clone(), address);
        }
        Ok(Forwarded {
            addresses,
            client: client.clone(),
            ns: ns.to_string(),
            asked: Mutex::default(),
        })
    }

    /// Whether `m`'s pod is due to be asked again (and, if so, notes that it is asked now).
    fn due(&self, m: &Member) -> bool {
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match asked.get(&m.name) {
            Some(last) if now.duration_since(*last) < ASK_EVERY => false,
            _ => {
                asked.insert(m.name.clone(), now);
                true
            }
        }
    }

    /// Where `m` is reached from here (its in-cluster address when it has no pod).
    fn address(&self, m: &Member) -> String {
        self.addresses
            .get(&m.name)
            .cloned()
            .unwrap_or_else(|| m.member_host.clone())
    }
}

impl Launcher for Forwarded {
    fn start<'a>(&'a self, _member: &'a Member) -> BoxFuture<'a, Result<(), LaunchError>> {
        Box::pin(async { Ok(()) })
    }

    /// A member's pod is restarted by its StatefulSet when its server exits: one that exited
    /// once has crashed, and its previous log's tail says why.
    fn exited<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let pod = member.container.as_deref()?;
            if !self.due(member) {
                return None;
            }
            pods::crashed(&self.client, &self.ns, pod).await
        })
    }

    fn admin_address(&self, member: &Member) -> String {
        self.address(member)
    }

    /// The pod's previous container's log, while its namespace lives.
    fn log_location(&self, member: &Member) -> String {
        let pod = member.container.as_deref().unwrap_or(&member.name);
        format!(
            "kubectl logs -n {} {pod} --previous (deleted with the namespace unless --keep)",
            self.ns
        )
    }
}

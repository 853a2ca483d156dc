//! The seam between the experiment logic and the machinery it drives (topologies, backends,
//! the runner). `compare` and `sweep` are written against [`Lab`], so their bookkeeping
//! (resume, teardown, result files) is tested without servers, and the live implementation
//! plugs in the real modules.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use super::metrics::Watched;
use super::model::CellSummary;
use crate::runner::Phase;

/// A topology that is up, as the experiment sees it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deployment {
    /// Topology name.
    pub topology: String,
    /// Connection string of the entry point (mongos or the single mongod).
    pub entry_uri: String,
    /// The entry point and every shard primary, for server metrics.
    pub watched: Vec<Watched>,
    /// Every member (config servers, shard members, mongos, the single mongod), probed for
    /// liveness while each cell runs.
    pub members: Vec<crate::db::probe::ProbeTarget>,
    /// The plan it was brought up from (every member's command line, cache, cpuset), credentials
    /// redacted; `None` for fakes.
    pub plan: Option<crate::topology::Plan>,
    /// `buildInfo.version` per member.
    pub server_versions: std::collections::BTreeMap<String, String>,
    /// The server's default write concern, read once at bring-up (`None` for fakes).
    pub default_write_concern: Option<super::model::DefaultWriteConcernRecord>,
    /// The members whose CPU their backend reads (containers), for each cell's server CPU.
    pub member_cpu: crate::backend::MemberCpu,
    /// What its backend could not show and every cell's figure must say (exclusive CPUs not
    /// verified): each cell measured on it is degraded with it.
    pub caveats: Vec<String>,
    /// Each member's image by digest, where its backend reports it.
    pub server_images: std::collections::BTreeMap<String, String>,
}

/// One phase's outcome: the figures reports need and the full result document.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    /// Figures for reports.
    pub summary: CellSummary,
    /// The runner's result document.
    pub document: crate::measure::RunDocument,
}

impl Measured {
    /// Degraded for `why`, in the figures reports read and in the document alike.
    pub(crate) fn degrade(&mut self, why: String) {
        self.summary.validity.degrade(why.clone());
        self.document.validity.degrade(why);
    }

    /// Invalid for `why`, in both.
    pub(crate) fn invalid(&mut self, why: String) {
        self.summary.validity.invalid(why.clone());
        self.document.validity.invalid(why);
    }
}

/// What every step of an experiment runs with: the lab it drives, the Ctrl-C it stops at and the
/// progress it shows. One value, so that a function of the experiment takes what it works on
/// and the session, not the same three references each time.
pub(crate) struct Session<'a, L> {
    /// The topologies, backends and runner (or a fake).
    pub lab: &'a mut L,
    /// Ctrl-C: stop at the next safe point, tearing down what was started.
    pub cancel: &'a CancellationToken,
    /// Where bring-up, phases and lines are shown.
    pub progress: &'a super::progress::Progress,
}

impl<'a, L> Session<'a, L> {
    /// A session over `lab`.
    pub(crate) fn new(
        lab: &'a mut L,
        cancel: &'a CancellationToken,
        progress: &'a super::progress::Progress,
    ) -> Self {
        Session {
            lab,
            cancel,
            progress,
        }
    }
}

/// What an experiment needs from the world.
pub(crate) trait Lab {
    /// Whatever must be kept to tear the topology down again.
    type Handle: Send;

    /// Brings a topology up (or attaches to one) and returns how to reach it.
    fn up(
        &mut self,
        topology: &str,
        cancel: &CancellationToken,
    ) -> impl Future<Output = anyhow::Result<(Deployment, Self::Handle)>> + Send;

    /// Runs one phase with these properties against the deployment.
    fn run(
        &mut self,
        deployment: &Deployment,
        properties: &crate::workload::Properties,
        phase: Phase,
        cancel: &CancellationToken,
    ) -> impl Future<Output = anyhow::Result<Measured>> + Send;

    /// Deletes the documents of the keys a phase with these properties inserted, so the next
    /// phase starts from the same data; returns how many were deleted. Fakes keep no data.
    fn remove_inserted(
        &mut self,
        _deployment: &Deployment,
        _properties: &crate::workload::Properties,
        _keys: crate::measure::KeySpan,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send {
        async { Ok(0) }
    }

    /// Tears down what `up` started; must not leak even after errors.
    fn down(&mut self, handle: Self::Handle) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Whether server metrics are collected (off for fakes).
    fn collects_server_metrics(&self) -> bool {
        true
    }
}

/// The member found dead in a topology's cell or sweep point, if its run ended because of one,
/// as the reason the rest of the topology is not run (`not run: sh0 (localhost:41110) dead since
/// S3 at 3.0 s`); `during` names the cell or point (`S3`, `8 threads`).
pub(crate) fn dead_member(doc: &crate::measure::RunDocument, during: &str) -> Option<String> {
    let d = doc.timeline.dead_member.as_ref()?;
    let since = crate::measure::timeline::seconds(d.from_s);
    Some(format!(
        "not run: {} dead since {during} at {since}",
        d.subject
    ))
}

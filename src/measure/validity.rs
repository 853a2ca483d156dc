//! The validity verdict every result carries: `valid`, `degraded` or `invalid`, with one sentence
//! per reason naming what went wrong and where (member, `host:port`, seconds into the run).
//!
//! It is computed by the runner from the run's own evidence (the per-second timeline, the
//! liveness probes, error counts, client CPU) and travels as this type to every report; it is
//! written to JSON only at the file boundary. `docs/result-schema.md` and `docs/reliability.md`
//! describe the rules.

use serde::{Deserialize, Serialize};

use super::timeline::StallCount;

/// How far a result can be trusted. Ordered: a worse verdict compares greater.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing found that would make the figure misleading.
    #[default]
    Valid,
    /// The figure stands, but with a caveat a reader must see (a few errors, a saturated client).
    Degraded,
    /// The figure does not measure what it claims (a member stopped answering, the run stalled,
    /// too many operations failed): never publish it as a normal result.
    Invalid,
    /// Nothing was measured (a member of the topology died before the cell, or the run was
    /// interrupted first): neither valid nor invalid, and never a figure. Only a report row
    /// carries it; a measured result's worst reason is one of the three above.
    #[serde(rename = "not run")]
    NotRun,
}

impl Verdict {
    /// The lower-case word used in tables and files.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Degraded => "degraded",
            Verdict::Invalid => "invalid",
            Verdict::NotRun => "not run",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding: its weight and the sentence that explains it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// What this finding makes of the result on its own.
    pub severity: Verdict,
    /// One sentence naming what went wrong and where.
    pub message: String,
}

/// A result's verdict and every reason behind it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// The worst severity among the reasons (`valid` when there are none).
    pub verdict: Verdict,
    /// Every finding, in the order found.
    #[serde(default)]
    pub reasons: Vec<Reason>,
    /// The server's stalls (no operation completed while every member answered its probe),
    /// counted: a property of the server a reader must see (`docs/result-schema.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_stalls: Option<StallCount>,
}

impl Validity {
    /// A verdict with no findings.
    pub fn valid() -> Validity {
        Validity::default()
    }

    /// Records a finding; the verdict becomes the worse of the two.
    pub(crate) fn add(&mut self, severity: Verdict, message: impl Into<String>) {
        self.verdict = self.verdict.max(severity);
        self.reasons.push(Reason {
            severity,
            message: message.into(),
        });
    }

    /// Shorthand for an `invalid` finding.
    pub fn invalid(&mut self, message: impl Into<String>) {
        self.add(Verdict::Invalid, message);
    }

    /// Shorthand for a `degraded` finding.
    pub fn degrade(&mut self, message: impl Into<String>) {
        self.add(Verdict::Degraded, message);
    }

    /// Folds another result's findings into this one (repeats, several clients).
    pub(crate) fn merge(&mut self, other: &Validity) {
        for r in &other.reasons {
            if !self.reasons.contains(r) {
                self.add(r.severity, r.message.clone());
            }
        }
        self.verdict = self.verdict.max(other.verdict);
        self.server_stalls = match (self.server_stalls, other.server_stalls) {
            (Some(a), Some(b)) => Some(a.add(&b)),
            (a, b) => a.or(b),
        };
    }

    /// True when nothing was found.
    pub(crate) fn is_valid(&self) -> bool {
        self.verdict == Verdict::Valid
    }

    /// The reasons as one line (`; `-separated), for stderr and table notes.
    pub fn summary(&self) -> String {
        self.reasons
            .iter()
            .map(|r| r.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_finding_decides() {
        let mut v = Validity::valid();
        assert!(v.is_valid());
        v.degrade("client CPU 95 % of 2 cores");
        assert_eq!(v.verdict, Verdict::Degraded);
        v.invalid("sh0 (localhost:1) stopped answering at 5.0 s");
        v.degrade("3 errors");
        assert_eq!(v.verdict, Verdict::Invalid);
        assert_eq!(v.reasons.len(), 3);
        assert!(v.summary().starts_with("client CPU 95 %"));
    }

    #[test]
    fn merge_keeps_each_reason_once() {
        let mut a = Validity::valid();
        a.degrade("x");
        let mut b = Validity::valid();
        b.degrade("x");
        b.invalid("y");
        a.merge(&b);
        assert_eq!(a.verdict, Verdict::Invalid);
        assert_eq!(a.reasons.len(), 2);
    }

    #[test]
    fn serialises_as_the_schema_says() {
        let mut v = Validity::valid();
        v.invalid("m");
        let json = serde_json::to_value(&v).unwrap_or_default();
        assert_eq!(json["verdict"], "invalid");
        assert_eq!(json["reasons"][0]["severity"], "invalid");
        assert_eq!(json["reasons"][0]["message"], "m");
    }
}

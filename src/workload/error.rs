//! Why a workload cannot be built (a property, the field-length histogram file) or continue (too
//! many unacknowledged inserts); every message names the property or file at fault.

use std::path::PathBuf;

use super::generators::TooManyUnacknowledged;
use super::properties::PropertyError;

/// Why a workload cannot be built or continue.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A property is missing its mark (the message names property and origin).
    #[error(transparent)]
    Property(#[from] PropertyError),
    /// The `fieldlengthhistogram` file is unreadable or malformed.
    #[error("{}{}: {message} (property 'fieldlengthhistogram')", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    HistogramFile {
        /// The file as named by the property.
        path: PathBuf,
        /// 1-based line, when the content is at fault.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// More than 2^20 run-phase inserts outstanding (YCSB aborts the run with this).
    #[error(transparent)]
    TooManyUnacknowledged(#[from] TooManyUnacknowledged),
}

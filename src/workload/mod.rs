//! Workload definition: properties, keys, generators, field values and the operation chooser (YCSB CoreWorkload).
//!
//! Typical use by the runner:
//! ```no_run
//! # use microshard::workload::*;
//! # use std::{path::Path, sync::Arc};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut props = Properties::new();
//! props.load_file(Path::new("workloads/S2"))?;          // every -P file first, in order
//! props.apply_override("recordcount=1000")?;            // then every -p and flag
//! let workload = Arc::new(CoreWorkload::from_properties(&props)?);
//! let (per_thread, _warning) = split_operations(run_operation_count(&props)?, 32);
//! let mut state = workload.client_state(0);
//! let op = workload.next_transaction_op(&mut state);
//! # let _ = (per_thread, op);
//! # Ok(()) }
//! ```

pub(crate) mod core;
mod error;
pub mod generators;
pub(crate) mod java_only;
pub mod keys;
pub(crate) mod operation;
mod settings;
pub(crate) mod values;

/// The properties live in [`crate::props`]; the workload is their first reader.
pub(crate) use crate::props::{prop, properties};

#[cfg(test)]
mod tests;

pub use self::core::{
    ClientState, CoreWorkload, load_operation_count, run_operation_count, split_operations,
};
pub use crate::props::{
    KNOWN_PROPERTIES, KnownProperty, Origin, Properties, PropertyError, PropertyValue,
    ResolvedProperty,
};
pub use error::WorkloadError;
pub use keys::build_key_name;
pub(crate) use operation::FieldSelection;
pub use operation::{FieldValue, Operation};

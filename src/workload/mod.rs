//! Workload definition: properties, keys, generators, field values and the operation chooser (YCSB CoreWorkload).

pub mod operation;

pub use operation::{FieldSelection, FieldValue, Operation};

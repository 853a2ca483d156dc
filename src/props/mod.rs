//! Run settings as YCSB gives them: Java `.properties` files and `-p` overrides merged with their
//! origins ([`Properties`]), and the table declaring every property once ([`prop`]). Every layer
//! reads them (workload, runner, db, measure, experiment), so they sit below all of them.

pub(crate) mod flag_values;
pub(crate) mod prop;
pub(crate) mod properties;

pub use prop::{KNOWN_PROPERTIES, KnownProperty};
pub use properties::{Origin, Properties, PropertyError, PropertyValue, ResolvedProperty};
pub(crate) use properties::{at_least, between};

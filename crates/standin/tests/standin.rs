//! The stand-in's end-to-end tests, in one binary over one support module (`util.rs`), driven by
//! the official `mongodb` driver: as a plain mongod, as a replica-set member, as mongos over
//! shards. The capacity model's tests are the second binary (`capacity.rs`).

mod util;

mod cursors;
mod mongod;
mod replset;
mod secured;
mod sharded;

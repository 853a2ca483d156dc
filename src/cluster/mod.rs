//! Replica-set and sharding administration shared by every backend.

//! The MongoDB binding: turns workload operations into driver calls and YCSB statuses.

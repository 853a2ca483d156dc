//! Experiments: compare, sweep, calibrate and demo, with results that are never lost.

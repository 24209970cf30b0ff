//! Without the `probes` feature there is no ring: these are the same
//! functions as in `ring.rs`, doing nothing, so callers compile unchanged.

use crate::record::Record;

/// Does nothing; returns thread number 0.
pub fn init_thread(capacity: usize) -> u16 {
    let _ = capacity;
    0
}

/// Always empty.
pub fn drain_thread() -> Vec<Record> {
    Vec::new()
}

/// Does nothing.
pub fn reset_thread() {}

/// Always 0.
pub fn dropped() -> u64 {
    0
}

/// Always 0.
pub fn recorded() -> usize {
    0
}

/// Always 0.
pub fn capacity() -> usize {
    0
}

/// Always 0.
pub fn thread_id() -> u16 {
    0
}

/// Always 0.
pub fn dropped_after_exit() -> u64 {
    0
}

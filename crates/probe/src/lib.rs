//! Probe recorder (filled by issue 2).

//! Converters from a [`Trace`](crate::Trace) to other formats.
//!
//! Both validate the trace first, so a record never names a location the
//! table lacks.

mod csv;
mod perfetto;
mod perfetto_proto;

pub use csv::write_csv;
pub use perfetto::{
    process_name, thread_names, write_perfetto, write_perfetto_annotated, write_timeline,
    Annotation, PerfettoSummary, TimelineFormat, TimelineProcess,
};

use crate::record::Record;

/// Turns counter values into time since the earliest record.
struct Timebase {
    start: u64,
    hz: f64,
}

impl Timebase {
    fn of(records: &[Record], hz: f64) -> Timebase {
        Timebase {
            start: records.iter().map(|r| r.tsc).min().unwrap_or(0),
            hz,
        }
    }

    fn ns(&self, tsc: u64) -> f64 {
        crate::clock::cycles_to_ns(tsc.saturating_sub(self.start) as f64, self.hz)
    }
}

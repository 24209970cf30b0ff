//! Hand-built traces for the analysis tests: a location table written as
//! `loc(...)` entries, records named by location, a 1 GHz counter (one
//! cycle is one nanosecond).

#![allow(dead_code)] // each test file uses some of these

use analysis::TraceView;
use probe::{Category, Kind, Layer, Location, Record, Trace, TraceHeader};

/// A location of a test table.
pub const fn loc(
    name: &'static str,
    layer: Layer,
    kind: Kind,
    category: Category,
    queue: Option<&'static str>,
) -> Location {
    Location {
        name,
        layer,
        kind,
        category,
        queue,
    }
}

/// The location called `name` in `table`.
pub fn at(table: &[Location], name: &str) -> probe::Loc {
    let index = table
        .iter()
        .position(|l| l.name == name)
        .unwrap_or_else(|| panic!("no location {name} in the test table"));
    probe::Loc(index as u16)
}

/// Records of one thread: (name, tsc, len, flow, aux).
pub fn records(
    table: &[Location],
    thread: u16,
    events: &[(&str, u64, u32, u32, u64)],
) -> Vec<Record> {
    events
        .iter()
        .map(|&(name, tsc, len, flow, aux)| {
            Record::new(tsc, at(table, name), len, flow, aux, thread)
        })
        .collect()
}

/// The trace of `records` over `table`, with a probe overhead of
/// `overhead` cycles, ready for analysis.
pub fn view(table: &'static [Location], overhead: f64, records: Vec<Record>) -> TraceView {
    let trace = Trace::new(TraceHeader::new(1e9, overhead, 0, "test"), table, records);
    TraceView::new(&trace).unwrap()
}

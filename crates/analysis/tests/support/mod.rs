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

/// The probe mode is process-wide and each run sets it and puts it back:
/// runs take turns, or one's end would stop the other's recording.
static PROBE_MODE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Traced messages on the reference stack over `topology` (a topology
/// file's text), as the lab sends them: every message delivered, no
/// record dropped; the trace (probe cost 0) ready for analysis, and the
/// run.
pub fn traced_run(
    topology: &str,
    spec: &traffic::reference::messages::MessagesSpec,
) -> (TraceView, traffic::reference::messages::MessagesRun) {
    let _turn = PROBE_MODE.lock().unwrap_or_else(|e| e.into_inner());
    let topology = stack::topology::Topology::from_toml_str(topology).expect("topology");
    let run = traffic::reference::messages::run(&topology, spec).expect("the run");
    assert!(
        run.outcomes.iter().all(|o| o.delivered),
        "{:?}",
        run.outcomes
    );
    let hz = probe::clock::calibrate(std::time::Duration::from_millis(20));
    let trace = run.trace(hz, 0.0, "real run");
    assert_eq!(trace.header.dropped, 0, "the rings were large enough");
    (TraceView::new(&trace).expect("a valid trace"), run)
}

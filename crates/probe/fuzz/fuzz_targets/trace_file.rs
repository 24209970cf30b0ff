//! Arbitrary bytes read as a trace file: reading never panics, and a
//! trace that reads writes back to exactly the same bytes (the format has
//! one encoding per trace), which read again give the same trace.
#![no_main]

use libfuzzer_sys::fuzz_target;
use probe::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::from_bytes(data) else {
        return;
    };
    let bytes = trace
        .to_bytes()
        .expect("a trace that was read can be written");
    assert_eq!(bytes, data, "re-encoding changed the bytes");
    let again = Trace::from_bytes(&bytes).expect("a written trace reads back");
    assert_eq!(again, trace);
});

//! Shared by the integration tests.
#![allow(dead_code)]

use probe::{locations, Category, Kind, Layer, Loc, Record, Trace, TraceHeader};
use std::sync::{Mutex, MutexGuard};

locations! {
    /// A small stack-like table for the tests.
    pub static SITES;
    SEND_ENTER = ("send.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
    SEND_EXIT = ("send.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
    CSUM_ENTER = ("checksum.enter", Layer::Transport, Kind::SpanEnter, Category::Checksum, None);
    CSUM_EXIT = ("checksum.exit", Layer::Transport, Kind::SpanExit, Category::Checksum, None);
    TXQ_IN = ("ifq.enqueue", Layer::Link, Kind::Enqueue, Category::Link, Some("ifq"));
    TXQ_OUT = ("ifq.dequeue", Layer::Link, Kind::Dequeue, Category::Link, Some("ifq"));
    WIRE = ("link.tx", Layer::Link, Kind::Point, Category::Link, None);
}

/// Serialises tests that change the global gate mode.
pub fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` on a fresh thread, so it owns a fresh ring.
pub fn on_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().expect("test thread panicked")
}

pub fn rec(tsc: u64, loc: Loc, thread: u16) -> Record {
    Record::new(tsc, loc, 100, 7, tsc, thread)
}

/// A small valid trace touching every part of the format.
pub fn sample_trace() -> Trace {
    let records = vec![
        rec(1000, SEND_ENTER, 1),
        rec(1100, CSUM_ENTER, 1),
        rec(1300, CSUM_EXIT, 1),
        rec(1400, TXQ_IN, 1),
        rec(1500, SEND_EXIT, 1),
        rec(1600, TXQ_OUT, 2),
        rec(1700, WIRE, 2),
    ];
    Trace::new(
        TraceHeader::new(1e9, 25.0, 3, "unit-test host / reference stack"),
        SITES,
        records,
    )
}

//! The recorder with probes compiled in: gate modes, full rings, span
//! guards, and a recorded trace surviving a write/read round trip.
#![cfg(feature = "probes")]

mod common;

use common::*;
use probe::{Flow, Mode, Trace, TraceHeader};

#[test]
fn mode_off_records_nothing() {
    let _g = lock();
    probe::set_mode(Mode::Off);
    let records = on_thread(|| {
        probe::init_thread(64);
        probe::record(WIRE, 1, Flow::traced(1), 0);
        probe::record(WIRE, 1, Flow::untraced(2), 0);
        drop(probe::span(SEND_ENTER, SEND_EXIT, 1, Flow::traced(1), 0));
        probe::drain_thread()
    });
    assert!(records.is_empty());
}

#[test]
fn mode_traced_flows_records_only_traced_flows() {
    let _g = lock();
    probe::set_mode(Mode::TracedFlows);
    let records = on_thread(|| {
        probe::init_thread(64);
        probe::record(WIRE, 1, Flow::traced(1), 10);
        probe::record(WIRE, 1, Flow::untraced(2), 20);
        probe::record(WIRE, 1, Flow::traced(3), 30);
        probe::drain_thread()
    });
    probe::set_mode(Mode::Off);
    let flows: Vec<u32> = records.iter().map(|r| r.flow).collect();
    assert_eq!(flows, [1, 3]);
}

#[test]
fn mode_all_records_every_flow() {
    let _g = lock();
    probe::set_mode(Mode::All);
    let records = on_thread(|| {
        probe::init_thread(64);
        probe::record(WIRE, 1, Flow::traced(1), 10);
        probe::record(WIRE, 1, Flow::untraced(2), 20);
        probe::drain_thread()
    });
    probe::set_mode(Mode::Off);
    assert_eq!(records.len(), 2);
    assert_eq!((records[1].flow, records[1].aux), (2, 20));
}

#[test]
fn a_full_ring_counts_drops_and_keeps_the_first_records() {
    let _g = lock();
    probe::set_mode(Mode::All);
    let (records, dropped, after_reset) = on_thread(|| {
        probe::init_thread(100);
        for i in 0..250u64 {
            probe::record(WIRE, i as u32, Flow::NONE, i);
        }
        let records = probe::drain_thread();
        let dropped = probe::dropped();
        probe::reset_thread();
        (records, dropped, probe::dropped())
    });
    probe::set_mode(Mode::Off);
    assert_eq!(records.len(), 100);
    assert!(records.iter().enumerate().all(|(i, r)| r.aux == i as u64));
    assert_eq!(dropped, 150);
    assert_eq!(after_reset, 0);
}

#[test]
fn span_guard_records_enter_and_exit() {
    let _g = lock();
    probe::set_mode(Mode::All);
    let records = on_thread(|| {
        probe::init_thread(64);
        {
            let mut outer = probe::span(SEND_ENTER, SEND_EXIT, 10, Flow::traced(4), 77);
            {
                let _inner = probe::span(CSUM_ENTER, CSUM_EXIT, 10, Flow::traced(4), 78);
            }
            outer.set_len(1460);
        }
        probe::drain_thread()
    });
    probe::set_mode(Mode::Off);
    let locs: Vec<_> = records.iter().map(|r| r.location()).collect();
    assert_eq!(locs, [SEND_ENTER, CSUM_ENTER, CSUM_EXIT, SEND_EXIT]);
    assert_eq!(records[3].aux, 77);
    assert_eq!(records[3].len, 1460);
    assert_eq!(records[0].len, 10);
    assert!(records.windows(2).all(|w| w[0].tsc <= w[1].tsc));
}

#[test]
fn span_exit_follows_the_enter_not_the_current_mode() {
    let _g = lock();
    let records = on_thread(|| {
        probe::init_thread(64);
        probe::set_mode(Mode::All);
        let recorded = probe::span(SEND_ENTER, SEND_EXIT, 0, Flow::NONE, 1);
        probe::set_mode(Mode::Off);
        let skipped = probe::span(CSUM_ENTER, CSUM_EXIT, 0, Flow::NONE, 2);
        probe::set_mode(Mode::All);
        drop(skipped);
        probe::set_mode(Mode::Off);
        drop(recorded);
        probe::drain_thread()
    });
    let locs: Vec<_> = records.iter().map(|r| r.location()).collect();
    assert_eq!(locs, [SEND_ENTER, SEND_EXIT]);
}

#[test]
fn threads_record_into_their_own_rings() {
    let _g = lock();
    probe::set_mode(Mode::All);
    let workers: Vec<_> = (0..3)
        .map(|t| {
            std::thread::spawn(move || {
                let id = probe::init_thread(16);
                for i in 0..5 {
                    probe::record(WIRE, 0, Flow::untraced(t), i);
                }
                (id, probe::drain_thread())
            })
        })
        .collect();
    let results: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    probe::set_mode(Mode::Off);
    for (t, (id, records)) in results.iter().enumerate() {
        assert_eq!(records.len(), 5);
        assert!(records
            .iter()
            .all(|r| r.thread == *id && r.flow == t as u32));
    }
    assert_ne!(results[0].0, results[1].0);
}

#[test]
fn recorded_trace_round_trips_through_a_file() {
    let _g = lock();
    probe::set_mode(Mode::All);
    let (records, dropped) = on_thread(|| {
        probe::init_thread(1024);
        for i in 0..10 {
            let _send = probe::span(SEND_ENTER, SEND_EXIT, 1000 + i, Flow::traced(9), i as u64);
            probe::record(TXQ_IN, 1000 + i, Flow::traced(9), i as u64);
        }
        (probe::drain_thread(), probe::dropped())
    });
    probe::set_mode(Mode::Off);
    assert_eq!(records.len(), 30);

    let hz = probe::clock::calibrate(std::time::Duration::from_millis(10));
    let trace = Trace::new(
        TraceHeader::new(hz, 20.0, dropped, "round trip"),
        SITES,
        records,
    );
    let mut file = Vec::new();
    trace.write(&mut file).unwrap();
    let back = Trace::read(&file[..]).unwrap();
    assert_eq!(back, trace);
    assert_eq!(back.location(&back.records[0]).unwrap().name, "send.enter");
}

#[test]
fn drain_leaves_the_ring_ready_for_more() {
    let _g = lock();
    probe::set_mode(Mode::All);
    let (first, second, capacity) = on_thread(|| {
        probe::init_thread(8);
        probe::record(WIRE, 0, Flow::NONE, 1);
        let first = probe::drain_thread();
        probe::record(WIRE, 0, Flow::NONE, 2);
        (first, probe::drain_thread(), probe::capacity())
    });
    probe::set_mode(Mode::Off);
    assert_eq!((first.len(), first[0].aux), (1, 1));
    assert_eq!((second.len(), second[0].aux), (1, 2));
    assert_eq!(capacity, 8);
}

/// A value whose destructor fires a probe, as a host or socket kept in a
/// thread-local might.
struct ProbesOnDrop;

impl Drop for ProbesOnDrop {
    fn drop(&mut self) {
        probe::record(WIRE, 1, Flow::traced(1), 0);
    }
}

thread_local! {
    static PROBES_ON_DROP: ProbesOnDrop = const { ProbesOnDrop };
}

#[test]
fn a_probe_after_the_ring_is_destroyed_is_counted_not_fatal() {
    let _g = lock();
    probe::set_mode(Mode::All);
    let before = probe::dropped_after_exit();
    on_thread(|| {
        // Registered first, destroyed last: after the ring, which this
        // thread creates next. Before the fix this aborted the process.
        PROBES_ON_DROP.with(|_| ());
        probe::init_thread(16);
        probe::record(WIRE, 1, Flow::traced(1), 0);
    });
    probe::set_mode(Mode::Off);
    assert!(probe::dropped_after_exit() > before);
}

#[test]
fn span_guards_stay_on_their_thread() {
    // Compile-time check: this only builds if SpanGuard is not Send.
    trait AmbiguousIfSend<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSend<()> for T {}
    impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}
    <probe::SpanGuard as AmbiguousIfSend<_>>::check();
}

#[test]
fn lazy_arguments_are_computed_only_when_the_probe_records() {
    let _g = lock();
    let run = |mode: Mode| {
        probe::set_mode(mode);
        let (records, calls) = on_thread(|| {
            probe::init_thread(64);
            let calls = std::cell::Cell::new(0);
            let args = |len, aux| {
                calls.set(calls.get() + 1);
                (len, aux)
            };
            probe::record_with(WIRE, Flow::untraced(2), || args(5, 50));
            probe::record_with(WIRE, Flow::traced(3), || args(6, 60));
            {
                let mut span =
                    probe::span_with(SEND_ENTER, SEND_EXIT, Flow::traced(4), || args(7, 70));
                span.set_len(700);
            }
            (probe::drain_thread(), calls.get())
        });
        probe::set_mode(Mode::Off);
        let seen: Vec<_> = records
            .iter()
            .map(|r| (r.location(), r.len, r.flow, r.aux))
            .collect();
        (seen, calls)
    };
    assert_eq!(run(Mode::Off), (vec![], 0));
    assert_eq!(
        run(Mode::TracedFlows),
        (
            vec![
                (WIRE, 6, 3, 60),
                (SEND_ENTER, 7, 4, 70),
                (SEND_EXIT, 700, 4, 70)
            ],
            2
        )
    );
    let (all, calls) = run(Mode::All);
    assert_eq!(all[0], (WIRE, 5, 2, 50));
    assert_eq!((all.len(), calls), (4, 3));
}

#[test]
fn lazy_arguments_respect_the_level() {
    let _g = lock();
    probe::set_mode(Mode::All);
    probe::set_level(probe::Level::Layers);
    let (records, calls) = on_thread(|| {
        probe::init_thread(64);
        let calls = std::cell::Cell::new(0);
        drop(probe::span_with(CSUM_ENTER, CSUM_EXIT, Flow::NONE, || {
            calls.set(calls.get() + 1);
            (1, 1)
        }));
        (probe::drain_thread(), calls.get())
    });
    probe::set_level(probe::Level::Functions);
    probe::set_mode(Mode::Off);
    assert!(
        records.is_empty(),
        "a cost centre is below the layers level"
    );
    assert_eq!(calls, 0);
}

#[test]
fn records_made_with_one_stamp_share_one_counter_read() {
    let _g = lock();
    probe::set_mode(Mode::TracedFlows);
    let records = on_thread(|| {
        probe::init_thread(64);
        let flow = Flow::traced(1);
        // A dequeue and the next stage's start at one read.
        let mut dequeued = probe::Stamp::new();
        dequeued.record(TXQ_OUT, 1, flow, 0);
        let span = dequeued.span_with(SEND_ENTER, SEND_EXIT, flow, || (1, 0));
        probe::record(WIRE, 1, flow, 0);
        // The stage's end and an enqueue at another.
        let mut ended = probe::Stamp::new();
        span.end_at(&mut ended);
        ended.record(TXQ_IN, 1, flow, 0);
        // A stamp whose records are all gated off never reads.
        let mut unread = probe::Stamp::new();
        unread.record(WIRE, 1, Flow::untraced(2), 0);
        probe::drain_thread()
    });
    probe::set_mode(Mode::Off);
    let names: Vec<_> = records.iter().map(|r| r.loc).collect();
    let locs = [TXQ_OUT, SEND_ENTER, WIRE, SEND_EXIT, TXQ_IN].map(|l| l.index() as u16);
    assert_eq!(names, locs, "the exit is recorded once, by end_at");
    let tsc: Vec<u64> = records.iter().map(|r| r.tsc).collect();
    assert_eq!(tsc[0], tsc[1], "dequeue and enter share a read");
    assert_eq!(tsc[3], tsc[4], "exit and enqueue share a read");
    assert!(
        tsc[1] < tsc[2] && tsc[2] < tsc[3],
        "separate reads: {tsc:?}"
    );
}

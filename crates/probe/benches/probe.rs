//! Cost of one probe: gate open, gate closed, untraced flow under
//! `traced_flows`, a span guard, and doubled/tripled groups (whose
//! difference is one probe, the figure calibration subtracts).
//!
//! Built with `--no-default-features` the same benches time empty calls.

use criterion::{criterion_group, criterion_main, Criterion};
use probe::{calibrate, Flow, Mode};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Calls per timed chunk; the ring is emptied between chunks (untimed) so
/// the record path is measured, never the drop path.
const CHUNK: u64 = 4096;

/// Times `iters` repetitions of `body`, in chunks of [`CHUNK`].
fn timed(iters: u64, mut body: impl FnMut(u64)) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = (iters - done).min(CHUNK);
        probe::reset_thread();
        let start = Instant::now();
        for i in 0..n {
            body(i);
        }
        total += start.elapsed();
        done += n;
    }
    total
}

fn record(c: &mut Criterion) {
    probe::init_thread(CHUNK as usize * 4);
    let mut g = c.benchmark_group("record");
    let cases = [
        ("gate_on", Mode::All, Flow::traced(1)),
        ("gate_off", Mode::Off, Flow::traced(1)),
        (
            "untraced_under_traced_flows",
            Mode::TracedFlows,
            Flow::untraced(1),
        ),
        (
            "traced_under_traced_flows",
            Mode::TracedFlows,
            Flow::traced(1),
        ),
    ];
    for (name, mode, flow) in cases {
        probe::set_mode(mode);
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(iters, |i| {
                    probe::record(
                        black_box(calibrate::POINT),
                        black_box(i as u32),
                        black_box(flow),
                        black_box(i),
                    )
                })
            })
        });
    }
    probe::set_mode(Mode::All);
    g.bench_function("span_guard_enter_exit", |b| {
        b.iter_custom(|iters| {
            timed(iters, |i| {
                let _span = probe::span(
                    black_box(calibrate::DOUBLED),
                    black_box(calibrate::TRIPLED),
                    black_box(i as u32),
                    black_box(Flow::traced(1)),
                    black_box(i),
                );
            })
        })
    });
    g.finish();
    probe::set_mode(Mode::Off);
}

fn doubled_tripled(c: &mut Criterion) {
    probe::init_thread(CHUNK as usize * 4);
    probe::set_mode(Mode::All);
    let flow = Flow::traced(1);
    let mut g = c.benchmark_group("groups");
    g.bench_function("doubled", |b| {
        b.iter_custom(|iters| {
            timed(iters, |i| {
                probe::record(calibrate::DOUBLED, 0, flow, black_box(i));
                probe::record(calibrate::DOUBLED, 0, flow, black_box(i));
            })
        })
    });
    g.bench_function("tripled", |b| {
        b.iter_custom(|iters| {
            timed(iters, |i| {
                probe::record(calibrate::TRIPLED, 0, flow, black_box(i));
                probe::record(calibrate::TRIPLED, 0, flow, black_box(i));
                probe::record(calibrate::TRIPLED, 0, flow, black_box(i));
            })
        })
    });
    g.finish();
    probe::set_mode(Mode::Off);

    // The in-trace figure: per-probe overhead in counter units.
    let hz = probe::clock::calibrate(Duration::from_millis(200));
    let o = calibrate::overhead(calibrate::DEFAULT_GROUPS);
    eprintln!(
        "overhead ({} samples): median {:.1} cycles ({:.2} ns at {:.3} GHz), mean {:.1}, min {:.0}, p99 {:.0}; doubled median {:.1}, tripled median {:.1}",
        o.samples,
        o.median_cycles,
        probe::clock::cycles_to_ns(o.median_cycles, hz),
        hz / 1e9,
        o.mean_cycles,
        o.min_cycles,
        o.p99_cycles,
        o.doubled_median_cycles,
        o.tripled_median_cycles,
    );
}

criterion_group!(benches, record, doubled_tripled);
criterion_main!(benches);

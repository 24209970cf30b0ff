//! What a pcapng capture costs inside the measured windows (issue 15):
//! the lab's traced TCP messages over IPv6 on `fast-ethernet` (the
//! `xie1999` recipe's run, one size), with every interface captured and
//! without, in interleaved runs. Per run and over all runs of each kind it
//! prints the median exclusive time of the sender's `link.transmit` spans
//! (probe cost removed, the analysis' own span rebuilding), the median
//! send stop latency, and the time in `instrumentation` spans.
//!
//! ```sh
//! cargo run --release -p stackscope-analysis --example capture_overhead -- [PAIRS] [SIZE] [REPS]
//! ```
//!
//! The last lines give the verdict with its uncertainty: the paired on/off
//! ratio of the runs' medians with its 95 % interval, and Welch's test on
//! the runs' medians (the `stats` crate). On a machine whose core-to-core
//! round trip switches between states (`traffic::core_trip`), the sender's
//! `link.transmit` (a hand-over to the wire's thread on the other CPU)
//! switches with it: the round trip is measured before and after each run,
//! and the paired verdict is also given over the pairs whose four
//! measurements are all in one state.
//!
//! Defaults: 6 pairs of runs, 20 000 B messages, 30 messages per run (after
//! the recipe's 10 warm-up messages). It lives with the analysis because it
//! needs it; the runs are `traffic::reference::messages`, as the lab's.

use std::time::Duration;

use analysis::{all_spans, TraceView};
use probe::{Category, Kind};
use stack::topology::Topology;
use traffic::reference::messages::{self, MessagesSpec};
use traffic::spec::Protocol;

#[derive(Default)]
struct Samples {
    /// Sender's `link.transmit` exclusive times, ns.
    link_exclusive: Vec<f64>,
    /// Send stop latencies, ns.
    stop: Vec<f64>,
    /// Instrumentation spans' inclusive time on the sender, ns per span.
    instrumentation: Vec<f64>,
    /// Core-to-core round trips before and after the run, ns.
    core_trips: Vec<f64>,
}

fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

/// The mean of the values between the first and the third quartile.
fn middle_mean(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let (lo, hi) = (v.len() / 4, v.len() * 3 / 4);
    let middle = &v[lo..hi.max(lo)];
    middle.iter().sum::<f64>() / middle.len().max(1) as f64
}

fn one_run(capture: bool, size: usize, reps: u32, hz: f64, overhead: f64) -> Samples {
    let topology = Topology::from_toml_str(include_str!("../../../topologies/fast-ethernet.toml"))
        .expect("the fast-ethernet topology");
    let dir = std::env::temp_dir().join(format!(
        "stackscope-capture-overhead-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    if capture {
        std::fs::create_dir_all(&dir).expect("capture directory");
    }
    let spec = MessagesSpec {
        pcap_dir: capture.then(|| dir.clone()),
        warmup: 10,
        ..MessagesSpec::new(Protocol::Tcp, vec![size], reps, 1 << 20)
    };
    let before = traffic::core_trip::measure();
    let run = messages::run(&topology, &spec).expect("the run");
    let after = traffic::core_trip::measure();
    let trace = run.trace(hz, overhead, "capture overhead");
    let view = TraceView::new(&trace).expect("a valid trace");
    let spans = all_spans(&view);
    let found = analysis::messages::analyse(&view, &spans, analysis::messages::StopAt::OnTheWire)
        .expect("messages");
    let mut out = Samples {
        core_trips: [before, after].iter().flatten().map(|t| t.ns).collect(),
        ..Samples::default()
    };
    let sender = found.sender_thread.expect("a sender thread");
    let link = view.loc("link.transmit.enter").expect("link.transmit");
    // Warm-up messages are numbered first: leave them out, as the lab does.
    let measured: Vec<u64> = run
        .outcomes
        .iter()
        .filter(|o| !o.warmup)
        .map(|o| o.index)
        .collect();
    let first = measured.first().copied().unwrap_or(0);
    let mut window = (usize::MAX, 0usize);
    for m in &found.messages {
        if m.index < first {
            continue;
        }
        if let Some(send) = &m.send {
            out.stop.push(send.stop_ns);
        }
    }
    // The measured part of the sender's records: from the first measured
    // message's mark on.
    if let (Some(mark), Some(records)) = (view.loc("app.message.send"), view.threads.get(&sender)) {
        if let Some(at) = records.iter().position(|r| r.loc == mark && r.aux == first) {
            window = (at, records.len());
        }
    }
    if let Some(thread) = spans.get(&sender) {
        for s in &thread.spans {
            if s.enter_index < window.0 || s.enter_index >= window.1 {
                continue;
            }
            if s.enter == link {
                out.link_exclusive.push(view.ns(s.exclusive));
            }
            if s.category == Category::Instrumentation && view.site(s.enter).kind == Kind::SpanEnter
            {
                out.instrumentation.push(view.ns(s.inclusive));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (pairs, size, reps) = (arg(0, 6), arg(1, 20_000), arg(2, 30) as u32);
    let hz = probe::clock::calibrate(Duration::from_millis(200));
    let overhead = probe::calibrate::overhead(4096).median_cycles;
    println!(
        "counter {:.3} GHz, probe overhead {overhead:.1} cycles; {pairs} pairs of runs, {reps} messages of {size} B each",
        hz / 1e9
    );
    let mut all = [Samples::default(), Samples::default()];
    // Per pair: the on/off ratio of the two runs' medians (the machine's
    // state changes between runs more than capture changes anything).
    let mut ratios = Vec::new();
    // The same, over the pairs run in one machine state throughout.
    let mut steady_ratios = Vec::new();
    // Per run: the median of its link.transmit exclusive times.
    let mut run_medians: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for pair in 0..pairs {
        // Interleaved, starting with the other kind every second pair.
        let order = if pair % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut pair_medians = [f64::NAN; 2];
        let mut trips = Vec::new();
        for capture in order {
            let s = one_run(capture, size, reps, hz, overhead);
            pair_medians[usize::from(capture)] = median(&s.link_exclusive);
            run_medians[usize::from(capture)].push(median(&s.link_exclusive));
            println!(
                "pair {pair} capture {:>3}: link.transmit excl median {:7.0} ns (n {:4}), send stop median {:8.1} us (n {:3}), instrumentation {:5} spans median {:5.0} ns sum {:8.1} us",
                if capture { "on" } else { "off" },
                median(&s.link_exclusive),
                s.link_exclusive.len(),
                median(&s.stop) / 1e3,
                s.stop.len(),
                s.instrumentation.len(),
                median(&s.instrumentation),
                s.instrumentation.iter().sum::<f64>() / 1e3,
            );
            println!(
                "        core round trips before and after: {:?} ns",
                s.core_trips.iter().map(|t| t.round()).collect::<Vec<_>>()
            );
            trips.extend_from_slice(&s.core_trips);
            let into = &mut all[usize::from(capture)];
            into.link_exclusive.extend(s.link_exclusive);
            into.stop.extend(s.stop);
            into.instrumentation.extend(s.instrumentation);
        }
        ratios.push(pair_medians[1] / pair_medians[0]);
        let lo = trips.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = trips.iter().copied().fold(0.0, f64::max);
        if trips.len() == 4 && !traffic::core_trip::states_differ(lo, hi) {
            steady_ratios.push(pair_medians[1] / pair_medians[0]);
        }
    }
    for (capture, s) in all.iter().enumerate() {
        println!(
            "ALL capture {:>3}: link.transmit excl median {:7.0} ns (n {}), send stop median {:8.1} us (n {}), instrumentation spans {} median {:.0} ns",
            if capture == 1 { "on" } else { "off" },
            median(&s.link_exclusive),
            s.link_exclusive.len(),
            median(&s.stop) / 1e3,
            s.stop.len(),
            s.instrumentation.len(),
            median(&s.instrumentation),
        );
    }
    for (capture, s) in all.iter().enumerate() {
        // The counter's resolution shows in the values: their spread.
        let mut counts = std::collections::BTreeMap::<i64, usize>::new();
        for v in &s.link_exclusive {
            *counts.entry(v.round() as i64).or_default() += 1;
        }
        let mut common: Vec<(i64, usize)> = counts.into_iter().collect();
        common.sort_by_key(|c| std::cmp::Reverse(c.1));
        common.truncate(8);
        println!(
            "capture {:>3}: link.transmit exclusive, most common values (ns: count) {common:?}; mean of the middle half {:.1} ns",
            if capture == 1 { "on" } else { "off" },
            middle_mean(&s.link_exclusive)
        );
    }
    println!(
        "per pair on/off ratio of link.transmit exclusive medians: median {:.3} over {} pairs; lower quartile of all values off {:.0} ns, on {:.0} ns",
        median(&ratios),
        ratios.len(),
        quantile(&all[0].link_exclusive, 0.25),
        quantile(&all[1].link_exclusive, 0.25)
    );
    let (off, on) = (
        median(&all[0].link_exclusive),
        median(&all[1].link_exclusive),
    );
    println!(
        "link.transmit exclusive median: on/off = {:.3} ({:+.1} %)",
        on / off,
        100.0 * (on / off - 1.0)
    );
    // The verdict with its uncertainty: the runs' medians are the
    // samples. Paired: the geometric mean of the per-pair ratios and its
    // 95 % interval (log ratios are the samples); unpaired: Welch on the
    // runs' medians.
    paired_verdict("all pairs", &ratios);
    paired_verdict("pairs in one machine state", &steady_ratios);
    let [off_runs, on_runs] = &run_medians;
    if let (Some(a), Some(b)) = (stats::Estimate::of(off_runs), stats::Estimate::of(on_runs)) {
        if let Some(d) = stats::Difference::welch(&a, &b) {
            println!(
                "Welch on run medians: off {:.0} ns, on {:.0} ns, ratio {:.3} [{:.3}, {:.3}], p {:.3}{}",
                a.mean,
                b.mean,
                d.ratio,
                d.ratio_ci95.lo,
                d.ratio_ci95.hi,
                d.p_value,
                if d.significant { " (significant)" } else { "" }
            );
        }
    }
}

/// The paired verdict: the geometric mean of the per-pair on/off ratios
/// and its 95 % interval (log ratios are the samples).
fn paired_verdict(which: &str, ratios: &[f64]) {
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let Some(e) = stats::Estimate::of(&logs) else {
        println!("paired on/off ratio of run medians, {which}: no pairs");
        return;
    };
    match e.ci95 {
        Some(ci) => println!(
            "paired on/off ratio of run medians, {which}: {:.3}, 95 % CI [{:.3}, {:.3}] (n {} pairs){}",
            e.mean.exp(),
            ci.lo.exp(),
            ci.hi.exp(),
            e.n,
            if ci.lo.exp() >= 0.9 && ci.hi.exp() <= 1.1 {
                ": within ±10 %"
            } else {
                ": NOT shown within ±10 %"
            }
        ),
        None => println!(
            "paired on/off ratio, {which}: {:.3} (one pair: no interval)",
            e.mean.exp()
        ),
    }
}

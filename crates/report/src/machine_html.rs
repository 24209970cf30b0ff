//! The run's facts: the machine as a small table, the clock and probe
//! cost every figure rests on, and the files beside the page.

use std::fmt::Write;

use crate::html::escape;
use crate::model::Report;

/// The machine as a small table (rows that could not be read are left
/// out), the clock and probe cost, and the files beside the page.
pub(crate) fn render(h: &mut String, report: &Report) {
    let m = &report.machine;
    let c = &report.calibration;
    h.push_str("<section id=\"machine\"><h2>The run</h2><table>");
    let mut row = |name: &str, value: String| {
        let _ = write!(
            h,
            "<tr><th class=\"l\">{name}</th><td class=\"l\">{}</td></tr>",
            escape(&value)
        );
    };
    if let Some(cpu) = &m.cpu_model {
        row("CPU", cpu.clone());
    }
    if let Some(cores) = m.cores {
        row("cores", cores.to_string());
    }
    if let Some(bytes) = m.memory_bytes {
        row(
            "memory",
            format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30)),
        );
    }
    if let Some(kernel) = &m.kernel {
        row("kernel", kernel.clone());
    }
    if let Some([one, five, fifteen]) = m.load_average {
        row(
            "load average at start",
            format!("{one:.2} (1 min), {five:.2} (5 min), {fifteen:.2} (15 min)"),
        );
    }
    if let Some((lo, hi, n)) = core_trips(report) {
        row(
            "core-to-core round trip",
            format!(
                "{lo:.0}–{hi:.0} ns over the {n} points and runs that measured it (before each repetition and pass, outside every window): the machine's state, which on a virtual machine moves cross-thread figures with it; stackscope compare gives figures measured more than 1.5× apart no verdict"
            ),
        );
    }
    if c.counter_hz.is_finite() && c.counter_hz > 0.0 {
        row("counter", format!("{:.4} GHz", c.counter_hz / 1e9));
    }
    if c.overhead_ns.is_finite() {
        row(
            "probe cost",
            format!(
                "{:.1} cycles ({:.1} ns), subtracted once per probe inside every latency and span",
                c.overhead_cycles, c.overhead_ns
            ),
        );
    }
    if let Some(v) = &m.stackscope_version {
        row("stackscope", v.clone());
    }
    row("started", crate::model::utc(report.generated_unix));
    h.push_str("</table><p class=\"note\">Files beside this page: <code>summary.json</code> (every figure, the summary above included), a CSV per table, <code>trace.pcapng</code> (every interface of the traced runs; each traced packet names its message in a comment), <code>timeline.pftrace</code> (Perfetto&#39;s native trace of the first run and the kernel runs: open in ui.perfetto.dev or trace_processor; <code>timeline.json</code> instead with <code>--timeline-format json</code>; <code>timelines/</code> has every run&#39;s), the probe traces (<code>stackscope trace info</code>) and each interface&#39;s capture under <code>pcap/</code>.</p></section>");
}

/// The least and greatest core-to-core round trip (ns) the run's points
/// and messages runs measured, and how many did.
fn core_trips(report: &Report) -> Option<(f64, f64, usize)> {
    let runs = report
        .experiments
        .iter()
        .flat_map(|e| e.runs.iter().filter_map(|r| r.gauges.core_trip_ns));
    let points = report.experiments.iter().flat_map(|e| {
        e.sweeps.iter().flat_map(|s| {
            s.points
                .iter()
                .filter_map(|p| p.get("core_trip_ns")?.as_f64())
        })
    });
    let trips: Vec<f64> = runs
        .chain(points)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let lo = trips.iter().copied().reduce(f64::min)?;
    let hi = trips.iter().copied().reduce(f64::max)?;
    Some((lo, hi, trips.len()))
}

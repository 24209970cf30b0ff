//! `compare.html`: two result directories side by side (`stackscope
//! compare A B`). The comparison itself is made by the CLI; this module
//! holds its shape (also the `--json` output) and draws it as one
//! self-contained page.

use std::fmt::Write;

use serde::Serialize;
use stats::{Difference, Interval};

use crate::html::escape;

/// Everything `stackscope compare` found.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    /// Significance level of every test after the correction.
    pub alpha: f64,
    /// Noise threshold: a significant difference's 95 % interval of B/A
    /// lies wholly outside 1 ± this (0.02 is 2 %).
    pub threshold: f64,
    /// How the p-values were corrected for testing many figures at once,
    /// e.g. "Holm–Bonferroni (family-wise error rate)".
    pub correction: String,
    /// Differences between the two runs' set-ups worth knowing before
    /// reading the figures (quick against full, recipes only on one side).
    pub warnings: Vec<String>,
    /// Figures with a spread on both sides, each tested.
    pub tested: Vec<TestedFigure>,
    /// Figures without a spread on at least one side: ratio only.
    pub untested: Vec<UntestedFigure>,
    /// Paths of the figures only one side has.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// Trend lines both sides have whose intercept is below zero on
    /// either side (`intercept_below_zero`), with each side's mark.
    pub intercept_marks: Vec<InterceptMark>,
}

/// A linear trend line (`analysis::trend::Fit`) marked
/// `intercept_below_zero` on at least one side: its intercept — the
/// latency at size 0 — lies below zero beyond doubt, so the line is not
/// "fixed cost + cost per byte" there and its intercept is no result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InterceptMark {
    /// The trend line's path (its intercept is `PATH.b`).
    pub path: String,
    /// Marked on A, on B.
    pub marked: [bool; 2],
}

impl InterceptMark {
    /// `on A and on B`, `on A only (B's is not)` or `on B only (A's is
    /// not)`: where the mark is.
    pub fn sides(&self) -> &'static str {
        marked_sides(self.marked)
    }
}

fn marked_sides(marked: [bool; 2]) -> &'static str {
    match marked {
        [true, true] => "on A and on B",
        [true, false] => "on A only (B's is not)",
        [false, true] => "on B only (A's is not)",
        [false, false] => "on neither",
    }
}

/// One result directory.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub dir: String,
    pub title: String,
    pub command: String,
    /// When the run began, `YYYYMMDD-HHMMSS` UTC (as results/ names it).
    pub date: Option<String>,
    pub quick: Option<bool>,
    /// The recipes it ran.
    pub experiments: Vec<String>,
}

/// A figure measured `n` times (or fitted to `n` points) on one side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    pub n: usize,
    pub value: f64,
    pub ci95: Option<Interval>,
}

/// A figure present on both sides with a spread on both: tested.
#[derive(Debug, Clone, Serialize)]
pub struct TestedFigure {
    /// Where it is in summary.json, jq-like (`experiments[xie1999].runs[tcp]…`).
    pub path: String,
    /// "means" (Welch's t-test of two estimates) or "coefficient" (a fitted
    /// slope or intercept, tested from its interval).
    pub kind: String,
    pub a: Measured,
    pub b: Measured,
    /// B against A: difference, ratio, their 95 % intervals (not widened
    /// by the correction) and the uncorrected p-value.
    pub difference: Difference,
    /// The smallest rise relative to A that this comparison (its
    /// correction and threshold) would have marked, with these spreads
    /// (0.05 is 5 %): what "not significant" could have seen.
    pub detectable: Option<f64>,
    /// The p-value after the correction.
    pub p_adjusted: f64,
    /// `p_adjusted < alpha` and B/A's interval outside 1 ± threshold, and
    /// both sides ran in one machine state.
    pub significant: bool,
    /// The gauge of the machine's state that differed, with A's and B's
    /// ranges, when the figure was not measured in one machine state on
    /// both sides (`traffic::core_trip`, `traffic::wake_trip`): a
    /// difference here is the machine's, so the figure gets no verdict.
    pub machine_differed: Option<StateDiff>,
    /// A side measured the figure in one pass (its gauges read twice:
    /// before the window and after) or read no gauges around it: its n
    /// counts values within that pass,
    /// which share the run's state, so its interval is no measure of how
    /// far a second run would land. No verdict.
    pub one_pass: bool,
    /// The figure is the intercept of a trend line marked
    /// `intercept_below_zero` on A, on B ([`InterceptMark`]): no result on
    /// that side, so no verdict.
    pub intercept_below_zero: [bool; 2],
    /// "faster" or "slower" for a significant difference of a time or a
    /// rate (read from the figure's unit), else `None`.
    pub verdict: Option<String>,
}

/// A's and B's ranges of a gauge's readings (ns, or ns per KiB for the
/// CPUs' speed): `[[lo, hi]; 2]`.
pub type StateRanges = [[f64; 2]; 2];

/// What tells a machine's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gauge {
    /// A cache line's round trip between two running threads on two CPUs.
    CoreTrip,
    /// A wake-up's round trip between two blocked threads on two CPUs.
    WakeTrip,
    /// The CPUs' time to copy and checksum a KiB.
    CpuSpeed,
    /// CPUs' worth of time other processes used.
    OthersCpu,
}

/// A gauge that differed between the runs (or within one), with each
/// side's range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StateDiff {
    pub gauge: Gauge,
    pub ranges: StateRanges,
    /// A's and B's medians.
    pub medians: [f64; 2],
}

/// A figure present on both sides without a spread on at least one.
#[derive(Debug, Clone, Serialize)]
pub struct UntestedFigure {
    pub path: String,
    pub a: f64,
    pub b: f64,
    /// `b / a`; `None` when `a` is zero.
    pub ratio: Option<f64>,
    /// As [`TestedFigure::intercept_below_zero`]: the ratio is of no
    /// result.
    pub intercept_below_zero: [bool; 2],
}

impl TestedFigure {
    /// Whether either side marks it `intercept_below_zero`.
    pub fn intercept_marked(&self) -> bool {
        self.intercept_below_zero.contains(&true)
    }
}

impl UntestedFigure {
    /// Whether either side marks it `intercept_below_zero`.
    pub fn intercept_marked(&self) -> bool {
        self.intercept_below_zero.contains(&true)
    }
}

/// `intercept below 0 on A only (B's is not): no result`, or `None`
/// for a figure no side marks.
pub fn intercept_text(marked: [bool; 2]) -> Option<String> {
    marked
        .contains(&true)
        .then(|| format!("intercept below 0 {}: no result", marked_sides(marked)))
}

impl Comparison {
    pub fn significant(&self) -> impl Iterator<Item = &TestedFigure> {
        self.tested.iter().filter(|f| f.significant)
    }

    /// Intercepts of trend lines marked `intercept_below_zero` on a
    /// side: no result there, whatever the machine's state.
    pub fn below_zero(&self) -> impl Iterator<Item = &TestedFigure> {
        self.tested.iter().filter(|f| f.intercept_marked())
    }

    /// Figures whose runs' machine states differed.
    pub fn machine_differed(&self) -> impl Iterator<Item = &TestedFigure> {
        self.tested
            .iter()
            .filter(|f| f.machine_differed.is_some() && !f.intercept_marked())
    }

    /// Figures measured in one pass on a side, in one machine state.
    pub fn one_pass(&self) -> impl Iterator<Item = &TestedFigure> {
        self.tested
            .iter()
            .filter(|f| f.one_pass && f.machine_differed.is_none() && !f.intercept_marked())
    }

    /// Tested figures with a verdict of "no significant difference".
    pub fn not_significant(&self) -> impl Iterator<Item = &TestedFigure> {
        self.tested.iter().filter(|f| {
            !f.significant && f.machine_differed.is_none() && !f.one_pass && !f.intercept_marked()
        })
    }

    /// The median of the tested figures' smallest marked changes (a
    /// figure no change could mark counts as infinite): how blind "not
    /// significant" is for a typical figure.
    pub fn median_detectable(&self) -> Option<f64> {
        let mut d: Vec<f64> = self
            .tested
            .iter()
            .map(|f| f.detectable.unwrap_or(f64::INFINITY))
            .collect();
        if d.is_empty() {
            return None;
        }
        d.sort_by(f64::total_cmp);
        let mid = d.len() / 2;
        Some(if d.len() % 2 == 1 {
            d[mid]
        } else {
            (d[mid - 1] + d[mid]) / 2.0
        })
    }
}

/// How large a change had to be to be marked, for half the figures.
pub fn blindness(c: &Comparison) -> Option<String> {
    c.median_detectable().map(|d| {
        if d.is_finite() {
            format!(
                "for half the tested figures only a change of {} % or more could have been marked",
                percent(d)
            )
        } else {
            "for half the tested figures no change of any size could have been marked".to_string()
        }
    })
}

/// A figure's smallest marked change, for a table or a line.
pub fn detectable(f: &TestedFigure) -> String {
    match f.detectable {
        Some(d) => format!("≥ {} %", percent(d)),
        None => "none".to_string(),
    }
}

/// `x` with four significant digits, in exponent form outside
/// 0.001..10⁶ (a figure's magnitude varies from ns to bit/s).
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let magnitude = x.abs();
    if magnitude != 0.0 && !(1e-3..1e6).contains(&magnitude) {
        return format!("{x:.3e}");
    }
    let decimals = if magnitude == 0.0 {
        0
    } else {
        (3 - magnitude.log10().floor() as i32).max(0) as usize
    };
    format!("{x:.decimals$}")
}

/// A share as per cent without trailing zeros (`0.02` is `2`).
pub fn percent(share: f64) -> String {
    let text = number(share * 100.0);
    if text.contains('.') && !text.contains('e') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `mean ± half-width (n N)`, or `mean (n N)` without an interval.
pub fn measured(m: &Measured) -> String {
    match m.ci95 {
        Some(ci) => format!(
            "{} ± {} (n {})",
            number(m.value),
            number(ci.half_width()),
            m.n
        ),
        None => format!("{} (n {})", number(m.value), m.n),
    }
}

/// A p-value: two significant digits, exponent form below 0.001; below
/// the t distribution's double precision it is no number but a bound.
pub fn p_value(p: f64) -> String {
    if p < 1e-15 {
        "< 1e-15".to_string()
    } else if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// `ratio [lo, hi]`.
pub fn ratio(d: &Difference) -> String {
    format!(
        "{} [{}, {}]",
        number(d.ratio),
        number(d.ratio_ci95.lo),
        number(d.ratio_ci95.hi)
    )
}

/// The report's stylesheet and what only this page needs: a wider page,
/// figures on one line, a figure column wide enough for its paths (which
/// break anywhere), significant rows shaded.
const EXTRA_STYLE: &str = "body{max-width:1500px}td{white-space:nowrap}td.l,th.l{white-space:normal}td.path{min-width:22em}td.path code{word-break:break-all}tr.sig td{background:#fff4e0}";

/// The whole page.
pub fn render(c: &Comparison) -> String {
    let mut h = String::new();
    let title = format!("stackscope compare: {} against {}", c.b.dir, c.a.dir);
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}{EXTRA_STYLE}</style></head><body><h1>{}</h1>",
        escape(&title),
        crate::html::STYLE,
        escape(&title)
    );
    sides(&mut h, c);
    for warning in &c.warnings {
        let _ = write!(h, "<p><strong>Note:</strong> {}</p>", escape(warning));
    }
    let significant: Vec<&TestedFigure> = c.significant().collect();
    let _ = write!(
        h,
        "<p>{} shared figures: {} with a spread on both sides, each tested B against A (Welch&#39;s t-test) at the {:.0} % level, p-values corrected by {} over those {} tests, and a change called significant only if its B/A interval also lies outside 1 ± {} % and both runs measured it in one machine state — {} significant, {} intercepts of trend lines below zero, {} measured in different machine states and {} in one pass on a side (no verdict); {} without a spread (ratio only, never called significant). {} only in A, {} only in B. Intervals are 95 % and not widened by the correction.</p>",
        c.tested.len() + c.untested.len(),
        c.tested.len(),
        c.alpha * 100.0,
        escape(&c.correction),
        c.tested.len(),
        percent(c.threshold),
        significant.len(),
        c.below_zero().count(),
        c.machine_differed().count(),
        c.one_pass().count(),
        c.untested.len(),
        c.only_a.len(),
        c.only_b.len(),
    );
    if let Some(blind) = blindness(c) {
        let _ = write!(
            h,
            "<p class=\"note\">Not significant is not unchanged: {}.</p>",
            escape(&blind)
        );
    }
    let _ = write!(
        h,
        "<h2>Significant differences ({})</h2>",
        significant.len()
    );
    if significant.is_empty() {
        h.push_str("<p>None: no figure differs beyond its noise.</p>");
    } else {
        tested_table(&mut h, &significant);
    }
    if !c.intercept_marks.is_empty() {
        let _ = write!(
            h,
            "<h2>Trend lines with their intercept below zero ({})</h2><p class=\"note\">{}</p><table><tr><th class=\"l\">trend line</th><th class=\"l\">intercept below 0</th></tr>",
            c.intercept_marks.len(),
            escape(INTERCEPT_NOTE)
        );
        for m in &c.intercept_marks {
            let _ = write!(
                h,
                "<tr><td class=\"l path\"><code>{}</code></td><td class=\"l\"><b>{}</b></td></tr>",
                escape(&m.path),
                escape(m.sides())
            );
        }
        h.push_str("</table>");
    }
    // Tested figures that get no verdict, each kind with its reason.
    let no_verdict: [(&str, &str, Vec<&TestedFigure>); 3] = [
        (
            "Intercepts below zero",
            INTERCEPT_NOTE,
            c.below_zero().collect(),
        ),
        (
            "Measured in different machine states",
            MACHINE_NOTE,
            c.machine_differed().collect(),
        ),
        (
            "Measured in one pass on a side",
            ONE_PASS_NOTE,
            c.one_pass().collect(),
        ),
    ];
    for (title, note, figures) in no_verdict {
        if !figures.is_empty() {
            let _ = write!(
                h,
                "<h2>{title} ({})</h2><p class=\"note\">{}</p>",
                figures.len(),
                escape(note)
            );
            tested_table(&mut h, &figures);
        }
    }
    let rest: Vec<&TestedFigure> = c.not_significant().collect();
    let _ = write!(h, "<h2>Tested, not significant ({})</h2>", rest.len());
    if !rest.is_empty() {
        tested_table(&mut h, &rest);
    }
    let _ = write!(
        h,
        "<h2>Without a spread ({})</h2><p class=\"note\">Single numbers (or a spread on one side only): the ratio says how far they moved, but without a spread no test can say whether that is noise.</p>",
        c.untested.len()
    );
    if !c.untested.is_empty() {
        untested_table(&mut h, &c.untested);
    }
    for (side, paths) in [("A", &c.only_a), ("B", &c.only_b)] {
        let _ = write!(h, "<h2>Only in {side} ({})</h2>", paths.len());
        if !paths.is_empty() {
            h.push_str("<ul>");
            for path in paths {
                let _ = write!(h, "<li><code>{}</code></li>", escape(path));
            }
            h.push_str("</ul>");
        }
    }
    h.push_str("</body></html>\n");
    h
}

fn sides(h: &mut String, c: &Comparison) {
    h.push_str("<table><tr><th></th><th class=\"l\">directory</th><th class=\"l\">title</th><th class=\"l\">command</th><th class=\"l\">began (UTC)</th><th class=\"l\">recipes</th></tr>");
    for (name, side) in [("A", &c.a), ("B", &c.b)] {
        let _ = write!(
            h,
            "<tr><th>{name}</th><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            escape(&side.dir),
            escape(&side.title),
            escape(&side.command),
            if side.quick == Some(true) { " (quick)" } else { "" },
            escape(side.date.as_deref().unwrap_or("?")),
            escape(&side.experiments.join(", ")),
        );
    }
    h.push_str("</table>");
}

fn tested_table(h: &mut String, figures: &[&TestedFigure]) {
    h.push_str("<table><tr><th class=\"l\">figure</th><th>A (mean ± 95 % CI, n)</th><th>B</th><th>B/A [95 % CI]</th><th>p</th><th>p corrected</th><th>smallest markable change</th><th class=\"l\">verdict</th></tr>");
    for f in figures {
        if f.intercept_marked() {
            // No result on a side: no ratio, p-value or markable change.
            let _ = write!(
                h,
                "<tr><td class=\"l path\"><code>{}</code>{}</td><td>{}</td><td>{}</td><td>not compared</td><td>—</td><td>—</td><td>—</td><td class=\"l\"><b>{}</b></td></tr>",
                escape(&f.path),
                if f.kind == "coefficient" { " <span class=\"note\">(fit)</span>" } else { "" },
                escape(&measured(&f.a)),
                escape(&measured(&f.b)),
                escape(&no_verdict(f)),
            );
            continue;
        }
        let _ = write!(
            h,
            "<tr{}><td class=\"l path\"><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            if f.significant { " class=\"sig\"" } else { "" },
            escape(&f.path),
            if f.kind == "coefficient" { " <span class=\"note\">(fit)</span>" } else { "" },
            escape(&measured(&f.a)),
            escape(&measured(&f.b)),
            escape(&ratio(&f.difference)),
            escape(&p_value(f.difference.p_value)),
            escape(&p_value(f.p_adjusted)),
            escape(&detectable(f)),
            match (&f.verdict, f.significant) {
                (Some(v), true) => format!("B {}", escape(v)),
                (None, true) => "differs".to_string(),
                _ => no_verdict(f),
            },
        );
    }
    h.push_str("</table>");
}

/// Why figures measured in different machine states get no verdict.
pub const MACHINE_NOTE: &str = "The two runs did not measure these figures with the machine in one state. Three gauges are read before each repetition and after the last, outside every window. The round trip of a cache line between two CPUs: its readings differed by more than 1.5× between the runs or within one; on a virtual machine it moves with where the hypervisor places the vCPUs, and every figure whose threads talk across CPUs moves with it (kernel UDP over loopback ran at 21.7 Gbit/s in one state and 9.5 in the other). The round trip of a wake-up between two threads on the two CPUs: the runs' medians differed by more than 1.25×; it moves with how busy the CPUs are, and so do figures that hand work between blocked threads. The CPUs' time to copy and checksum a KiB: the runs' medians differed by more than 1.25×; the host runs the vCPUs at different speeds (in one of two labs whose other gauges agreed, the copying UDP send path ran three times slower in every category). And the CPU time other processes used meanwhile: the runs' differed by more than half a CPU (one ran beside a build, the other alone). A difference here is the machine's, not the code's: run both again to compare them.";

/// Why figures measured in one pass get no verdict.
pub const ONE_PASS_NOTE: &str = "A side measured these figures in one pass (or read no gauge around them, so neither its passes nor its state are known): its messages or events came one after another in one run, in the machine's state of that moment, so their interval says how much they vary within a run, not how far a second run would land. Two full labs of the same code on a quiet machine differed by up to 30 % in such figures (a kernel UDP receive by 7×, one run's receiver waking from sleep, the other's not). Runs that take their passes in turn with others' (the slope runs) and sweeps' repetitions are tested.";

/// What a trend line's intercept below zero means in a comparison.
pub const INTERCEPT_NOTE: &str = "A linear trend line's intercept is the latency at size 0. Where its 95 % interval lies wholly below 0 (from two sizes, without an interval: where it is below 0) a zero-byte message would take negative time: the sizes are not on one straight line down to zero, or too few, and the report marks the line \"not linear near zero\" and does not draw it. Its intercept is no result on that side, so its change between the runs is none either: no verdict, and its ratio is not to be read. A line marked on one side only changed shape between the runs (or its sizes did).";

/// What a tested figure without a verdict says instead.
pub fn no_verdict(f: &TestedFigure) -> String {
    if let Some(text) = intercept_text(f.intercept_below_zero) {
        return text;
    }
    match f.machine_differed {
        Some(diff) => machine_text(diff),
        None if f.one_pass => "one pass: no verdict".to_string(),
        None => "—".to_string(),
    }
}

/// `… (core round trip A 58 ns, B 61–340 ns)`: each side's range (a
/// wake round trip in µs); for the gauges judged by their medians, the
/// median and then the range.
pub fn machine_text(diff: StateDiff) -> String {
    let (what, scale, unit, by_median) = match diff.gauge {
        Gauge::CoreTrip => ("core round trip", 1.0, "ns", false),
        Gauge::WakeTrip => ("wake round trip", 1e-3, "µs", true),
        Gauge::CpuSpeed => ("CPU copy and checksum", 1.0, "ns/KiB", true),
        Gauge::OthersCpu => {
            return format!(
                "machine state differed (other processes used A {:.2}, B {:.2} CPUs)",
                diff.medians[0], diff.medians[1]
            )
        }
    };
    // Two significant digits: a wake trip of 77 ns is 0.077 µs, not 0.
    let g = |x: f64| crate::plot::fmt_sig(x, 2);
    let side = |[lo, hi]: [f64; 2], median: f64| {
        let (lo, hi, median) = (lo * scale, hi * scale, median * scale);
        let one = g(lo) == g(hi);
        let range = if one {
            format!("{} {unit}", g(lo))
        } else {
            format!("{}–{} {unit}", g(lo), g(hi))
        };
        if by_median && !one {
            format!("median {} {unit} of {range}", g(median))
        } else {
            range
        }
    };
    format!(
        "machine state differed ({what} A {}, B {})",
        side(diff.ranges[0], diff.medians[0]),
        side(diff.ranges[1], diff.medians[1])
    )
}

fn untested_table(h: &mut String, figures: &[UntestedFigure]) {
    h.push_str("<table><tr><th class=\"l\">figure</th><th>A</th><th>B</th><th>B/A</th></tr>");
    for f in figures {
        let _ = write!(
            h,
            "<tr><td class=\"l path\"><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&f.path),
            intercept_text(f.intercept_below_zero)
                .map_or(String::new(), |t| format!(" <b>{}</b>", escape(&t))),
            number(f.a),
            number(f.b),
            f.ratio
                .filter(|_| !f.intercept_marked())
                .map_or_else(|| "—".to_string(), number),
        );
    }
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(number(1.234567), "1.235");
        assert_eq!(number(123.4567), "123.5");
        assert_eq!(number(0.012345), "0.01235");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(94_247_138.0), "9.425e7");
        assert_eq!(number(7_922_842.0), "7.923e6");
        assert_eq!(number(999_999.0), "999999");
        assert_eq!(number(-2.5e-5), "-2.500e-5");
        assert_eq!(p_value(0.0312), "0.031");
        assert_eq!(percent(0.02), "2");
        assert_eq!(percent(0.125), "12.5");
        assert_eq!(percent(0.0), "0");
        assert_eq!(p_value(2.3e-7), "2.3e-7");
        assert_eq!(p_value(0.0), "< 1e-15");
        assert_eq!(p_value(1.0), "1.000");
    }
}

//! The comparison as text: a header naming A and B, the significant
//! differences, then counts of the rest (`--all`: every figure).

use std::fmt::Write;

use report::compare_html::{
    blindness, detectable, intercept_text, measured, no_verdict, number, p_value, percent, ratio,
    Comparison, Side, TestedFigure, INTERCEPT_NOTE, MACHINE_NOTE, ONE_PASS_NOTE,
};

pub fn render(c: &Comparison, all: bool) -> String {
    let mut t = String::new();
    side(&mut t, "A", &c.a);
    side(&mut t, "B", &c.b);
    for warning in &c.warnings {
        let _ = writeln!(t, "note: {warning}");
    }
    let significant: Vec<&TestedFigure> = c.significant().collect();
    let _ = writeln!(
        t,
        "\nFigures both have: {}\n  tested (a spread on both sides): {} by Welch's t-test, B against A, at the {:.0} % level with p-values corrected by {} over the {} tests; significant only if B/A's 95 % interval also lies outside 1 ± {} % and both runs measured it in one machine state, each in more than one pass\n  single numbers (ratio only, never significant): {}\nOnly in A: {}; only in B: {}",
        c.tested.len() + c.untested.len(),
        c.tested.len(),
        c.alpha * 100.0,
        c.correction,
        c.tested.len(),
        percent(c.threshold),
        c.untested.len(),
        c.only_a.len(),
        c.only_b.len()
    );
    if let Some(blind) = blindness(c) {
        let _ = writeln!(t, "Not significant is not unchanged: {blind}.");
    }
    let _ = writeln!(t, "\nSignificant differences: {}", significant.len());
    for f in &significant {
        figure(&mut t, f);
    }
    if !c.intercept_marks.is_empty() {
        let _ = writeln!(
            t,
            "\nTrend lines with their intercept below zero: {}\n  {INTERCEPT_NOTE}",
            c.intercept_marks.len()
        );
        for m in &c.intercept_marks {
            let _ = writeln!(t, "  {}  intercept below 0 {}", m.path, m.sides());
        }
    }
    let below: Vec<&TestedFigure> = c.below_zero().collect();
    if !below.is_empty() {
        let _ = writeln!(t, "\nIntercepts below zero (no verdict): {}", below.len());
        for f in &below {
            figure(&mut t, f);
        }
    }
    let machine: Vec<&TestedFigure> = c.machine_differed().collect();
    if !machine.is_empty() {
        let _ = writeln!(
            t,
            "\nMeasured in different machine states (no verdict): {}\n  {MACHINE_NOTE}",
            machine.len()
        );
        for f in &machine {
            figure(&mut t, f);
        }
    }
    let one_pass: Vec<&TestedFigure> = c.one_pass().collect();
    if !one_pass.is_empty() {
        let _ = writeln!(
            t,
            "\nMeasured in one pass on a side (no verdict): {}\n  {ONE_PASS_NOTE}",
            one_pass.len()
        );
        for f in &one_pass {
            figure(&mut t, f);
        }
    }
    let rest = c.not_significant().count();
    if !all {
        let _ = writeln!(
            t,
            "\nNot significant: {rest} tested figures. Without a spread: {}. (--all lists them, and the figures only one side has.)",
            c.untested.len()
        );
        return t;
    }
    let _ = writeln!(t, "\nTested, not significant: {rest}");
    for f in c.not_significant() {
        figure(&mut t, f);
    }
    let _ = writeln!(t, "\nWithout a spread: {}", c.untested.len());
    for f in &c.untested {
        let _ = writeln!(
            t,
            "  {}{}\n      A {}   B {}   B/A {}",
            f.path,
            intercept_text(f.intercept_below_zero).map_or(String::new(), |m| format!("  {m}")),
            number(f.a),
            number(f.b),
            f.ratio
                .filter(|_| !f.intercept_marked())
                .map_or_else(|| "-".to_string(), number)
        );
    }
    for (name, paths) in [("A", &c.only_a), ("B", &c.only_b)] {
        let _ = writeln!(t, "\nOnly in {name}: {}", paths.len());
        for path in paths.iter() {
            let _ = writeln!(t, "  {path}");
        }
    }
    t
}

fn side(t: &mut String, name: &str, s: &Side) {
    let _ = writeln!(
        t,
        "{name}: {}  {}, began {} UTC, `{}`{}; recipes {}",
        s.dir,
        s.title,
        s.date.as_deref().unwrap_or("?"),
        s.command,
        if s.quick == Some(true) {
            " (quick)"
        } else {
            ""
        },
        s.experiments.join(", ")
    );
}

fn figure(t: &mut String, f: &TestedFigure) {
    if f.intercept_marked() {
        // No result on a side: its ratio, p-value and markable change
        // are of nothing.
        let _ = writeln!(
            t,
            "  {} (fit)  {}\n      A {}   B {}   B/A not compared",
            f.path,
            no_verdict(f),
            measured(&f.a),
            measured(&f.b),
        );
        return;
    }
    let could = if f.significant {
        String::new()
    } else {
        format!("; markable change {}", detectable(f))
    };
    let verdict = match (&f.verdict, f.significant) {
        (Some(v), true) => format!("  B {v}"),
        (_, false) if f.machine_differed.is_some() || f.one_pass || f.intercept_marked() => {
            format!("  {}", no_verdict(f))
        }
        _ => String::new(),
    };
    let _ = writeln!(
        t,
        "  {}{}{verdict}\n      A {}   B {}   B/A {}   p {}, corrected {}{could}",
        f.path,
        if f.kind == "coefficient" {
            " (fit)"
        } else {
            ""
        },
        measured(&f.a),
        measured(&f.b),
        ratio(&f.difference),
        p_value(f.difference.p_value),
        p_value(f.p_adjusted)
    );
}

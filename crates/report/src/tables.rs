//! The CSV tables: one row per message size, and one per function of the
//! CPU share table. Plain RFC 4180 CSV with a header row.

use std::io::Write;

use probe::Category;

use crate::model::MessagesRun;

/// Quotes a field when it needs it.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn number(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.3}"),
        _ => String::new(),
    }
}

/// Per size: latencies (µs), throughput (KB/s), frames and the mean time
/// per category (µs) on both paths. A latency's 95 % interval is its
/// mean's, left empty where it would reach below zero; its `reading`
/// column says which figure stands (`mean`, `median` where the mean is
/// too skewed, or `too_noisy`); the median's distribution-free 95 %
/// interval follows (empty below six values).
pub fn write_sizes(run: &MessagesRun, mut out: impl Write) -> std::io::Result<()> {
    let mut header = vec!["size_bytes".to_string(), "messages".to_string()];
    for path in ["send", "receive"] {
        for column in [
            "n",
            "start_us_mean",
            "start_us_median",
            "start_us_stdev",
            "start_us_ci95_lo",
            "start_us_ci95_hi",
            "start_us_reading",
            "start_us_median_ci95_lo",
            "start_us_median_ci95_hi",
            "stop_us_mean",
            "stop_us_median",
            "stop_us_stdev",
            "stop_us_ci95_lo",
            "stop_us_ci95_hi",
            "stop_us_reading",
            "stop_us_median_ci95_lo",
            "stop_us_median_ci95_hi",
            "throughput_kbps",
            "frames",
        ] {
            header.push(format!("{path}_{column}"));
        }
        for c in Category::ALL {
            header.push(format!("{path}_{}_us", c.as_str()));
        }
        header.push(format!("{path}_other_us"));
    }
    header.push("one_way_us_mean".into());
    writeln!(out, "{}", header.join(","))?;
    for p in &run.points {
        let mut row = vec![p.size.to_string(), p.messages.to_string()];
        for path in [&p.send, &p.receive] {
            let f = path.as_ref();
            row.push(f.map_or(String::new(), |f| f.stop_us.n.to_string()));
            for stat in [f.map(|f| &f.start_us), f.map(|f| &f.stop_us)] {
                row.push(number(stat.map(|s| s.mean)));
                row.push(number(stat.map(|s| s.median)));
                row.push(number(stat.and_then(|s| s.stdev)));
                // A latency's interval that reaches below zero is left
                // out, and the reading column says what stands instead.
                let ci = stat.and_then(|s| s.positive_ci95());
                row.push(number(ci.map(|c| c.lo)));
                row.push(number(ci.map(|c| c.hi)));
                row.push(stat.map_or(String::new(), |s| s.positive_reading().name().to_string()));
                let median_ci = stat.and_then(|s| s.median_ci95);
                row.push(number(median_ci.map(|c| c.lo)));
                row.push(number(median_ci.map(|c| c.hi)));
            }
            row.push(number(f.map(|f| f.throughput_kbps)));
            row.push(number(f.map(|f| f.frames)));
            for c in Category::ALL {
                row.push(number(
                    f.map(|f| f.categories_us.get(c).copied().unwrap_or(0.0)),
                ));
            }
            row.push(number(f.map(|f| f.other_us)));
        }
        row.push(number(p.one_way_us.map(|s| s.mean)));
        writeln!(out, "{}", row.join(","))?;
    }
    Ok(())
}

/// The CPU share table of both threads: role, function, category, calls,
/// exclusive µs, share of stack time, share of wall time.
pub fn write_cpu(run: &MessagesRun, mut out: impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "role,function,category,calls,exclusive_us,share_of_stack,share_of_wall"
    )?;
    for (role, profile) in [
        ("sender", &run.sender_profile),
        ("receiver", &run.receiver_profile),
    ] {
        let Some(profile) = profile else { continue };
        for f in &profile.functions {
            writeln!(
                out,
                "{role},{},{},{},{:.3},{:.6},{:.6}",
                field(&f.name),
                f.category,
                f.calls,
                f.exclusive_ns / 1e3,
                f.share_of_stack,
                f.share_of_wall
            )?;
        }
    }
    Ok(())
}

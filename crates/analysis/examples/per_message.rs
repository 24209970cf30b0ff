//! One line per message of a traced messages run (a lab's
//! `traces/<recipe>-<run>.sstrace`): its send and receive windows and the
//! receive path's time per category, tab-separated, for looking at what
//! moved between two runs message by message rather than in a summary.
//!
//! ```sh
//! cargo run --release -p stackscope-analysis --example per_message -- TRACE [acknowledged|wire|device]
//! ```
//!
//! The stop event (default `acknowledged`) is where send windows end, as
//! the recipes' `stop` says. Times in ns, with the probes' cost removed
//! (the trace's own calibration).

use analysis::messages::StopAt;
use analysis::{all_spans, TraceView};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: per_message TRACE [acknowledged|wire|device]")?;
    let stop = match args.next().as_deref() {
        None | Some("acknowledged") => StopAt::Acknowledged,
        Some("wire") => StopAt::OnTheWire,
        Some("device") => StopAt::HandedToDevice,
        Some(other) => return Err(format!("unknown stop event {other:?}").into()),
    };
    let file = std::io::BufReader::new(std::fs::File::open(&path)?);
    let trace = probe::trace_file::Trace::read(file)?;
    let view = TraceView::new(&trace)?;
    let found = analysis::messages::analyse(&view, &all_spans(&view), stop)?;
    println!(
        "index\tsize\tsend_start\tsend_stop\treceive_start\treceive_other\treceive_categories"
    );
    let ns = |v: Option<f64>| v.map_or(String::from("-"), |v| format!("{v:.0}"));
    for m in &found.messages {
        let receive = m.receive.as_ref();
        let categories = receive.map_or(String::new(), |r| {
            r.categories
                .by_category
                .iter()
                .map(|(c, v)| format!("{}={v:.0}", c.as_str()))
                .collect::<Vec<_>>()
                .join(" ")
        });
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{categories}",
            m.index,
            m.size,
            ns(m.send.as_ref().map(|s| s.start_ns)),
            ns(m.send.as_ref().map(|s| s.stop_ns)),
            ns(receive.map(|r| r.start_ns)),
            ns(receive.map(|r| r.categories.other)),
        );
    }
    Ok(())
}

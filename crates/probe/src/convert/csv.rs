//! Trace → CSV, one row per record, in file order.

use super::Timebase;
use crate::trace_file::{Trace, TraceError};
use std::io::Write;

const HEADER: &str = "tsc,ns,thread,loc,name,layer,kind,category,queue,len,flow,aux";

/// Writes the records as CSV with a header row. `ns` is the time since
/// the earliest record; `queue` is empty for locations without one.
pub fn write_csv(trace: &Trace, out: impl Write) -> Result<(), TraceError> {
    trace.validate()?;
    let mut out = std::io::BufWriter::new(out);
    let time = Timebase::of(&trace.records, trace.header.counter_hz);
    writeln!(out, "{HEADER}")?;
    for r in &trace.records {
        // Validated above: every record's location exists.
        let Some(l) = trace.location(r) else { continue };
        writeln!(
            out,
            "{},{:.1},{},{},{},{},{},{},{},{},{},{}",
            r.tsc,
            time.ns(r.tsc),
            r.thread,
            r.loc,
            field(&l.name),
            l.layer,
            l.kind,
            l.category,
            field(l.queue.as_deref().unwrap_or("")),
            r.len,
            r.flow,
            r.aux,
        )?;
    }
    out.flush()?;
    Ok(())
}

/// Quotes a field that contains a separator, quote or line break (names
/// come from a file and may contain anything).
fn field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("plain.name"), "plain.name");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}

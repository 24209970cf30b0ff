//! Probe resolution: how many spans of each category were finer than the
//! probes can tell. A span's time is its counter difference less one probe
//! cost per record inside it; when that is below the cost of one probe,
//! the span is mostly the probes' own doing and its time says little (the
//! IPv6 study's calibration, `000_…` §4.3.5, sets the same floor).

use std::collections::BTreeMap;

use probe::Category;
use serde::Serialize;

use crate::spans::ThreadSpans;
use crate::view::TraceView;

/// Spans of one category, and of those the ones below the resolution.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Resolution {
    pub spans: u64,
    pub below: u64,
}

impl Resolution {
    /// The share of spans below the resolution (0 when there are none).
    pub fn share_below(&self) -> f64 {
        if self.spans == 0 {
            0.0
        } else {
            self.below as f64 / self.spans as f64
        }
    }
}

/// Per category, over the spans of `threads`: how many were recorded and
/// how many took less than one probe's cost once the probes were removed.
pub fn by_category<'a>(
    view: &TraceView,
    threads: impl IntoIterator<Item = &'a ThreadSpans>,
) -> BTreeMap<Category, Resolution> {
    let floor = view.overhead_cycles.max(0.0);
    let mut out: BTreeMap<Category, Resolution> = BTreeMap::new();
    for spans in threads {
        for span in &spans.spans {
            let entry = out.entry(span.category).or_default();
            entry.spans += 1;
            if span.inclusive < floor {
                entry.below += 1;
            }
        }
    }
    out
}

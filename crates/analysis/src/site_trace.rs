//! Packet traces per probe site (the SunOS study's Figures 10 and 12): at
//! each site, the bytes that have passed it so far against time, so the
//! curves of successive sites show where data waits, and the gaps in them
//! show where the flow stopped.

use probe::Record;
use serde::Serialize;

use crate::view::TraceView;

/// One site on one thread: cumulative bytes against time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteTrace {
    /// The location's name.
    pub site: String,
    pub thread: u16,
    /// Records that passed (and were kept by the filter).
    pub events: u64,
    pub bytes: u64,
    /// (ns since the trace's first record, bytes so far), at most
    /// `max_points`, the last event always kept.
    pub points: Vec<(f64, u64)>,
}

/// The trace of `site` on `thread`, counting the records `keep` accepts;
/// `None` when the trace has no such site or thread.
pub fn site_trace(
    view: &TraceView,
    site: &str,
    thread: u16,
    keep: impl Fn(&Record) -> bool,
    max_points: usize,
) -> Option<SiteTrace> {
    let loc = view.loc(site)?;
    let records = view.threads.get(&thread)?;
    let origin = view.first_tsc();
    let mut points = Vec::new();
    let mut bytes = 0u64;
    for r in records.iter().filter(|r| r.loc == loc && keep(r)) {
        bytes += u64::from(r.len);
        points.push((view.ns(r.tsc.saturating_sub(origin) as f64), bytes));
    }
    let events = points.len() as u64;
    Some(SiteTrace {
        site: site.to_string(),
        thread,
        events,
        bytes,
        points: thin(points, max_points),
    })
}

/// Every `k`-th point of a rising series and its last one: the curve's
/// shape survives, its size is bounded.
fn thin(points: Vec<(f64, u64)>, max_points: usize) -> Vec<(f64, u64)> {
    let max_points = max_points.max(2);
    if points.len() <= max_points {
        return points;
    }
    let stride = points.len().div_ceil(max_points - 1);
    let last = points.last().copied();
    let mut out: Vec<(f64, u64)> = points.into_iter().step_by(stride).collect();
    if out.last().copied() != last {
        out.extend(last);
    }
    out
}

/// Counter times (ns since the trace's first record) of `site` records on
/// `thread` that `keep` accepts: e.g. the pure ACKs a receiver sent.
pub fn times_at(
    view: &TraceView,
    site: &str,
    thread: u16,
    keep: impl Fn(&Record) -> bool,
    max: usize,
) -> Vec<f64> {
    let (Some(loc), Some(records)) = (view.loc(site), view.threads.get(&thread)) else {
        return Vec::new();
    };
    let origin = view.first_tsc();
    records
        .iter()
        .filter(|r| r.loc == loc && keep(r))
        .take(max)
        .map(|r| view.ns(r.tsc.saturating_sub(origin) as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::thin;

    #[test]
    fn thinning_keeps_the_ends_and_bounds_the_size() {
        let points: Vec<(f64, u64)> = (0..1000).map(|i| (i as f64, i * 10)).collect();
        let thinned = thin(points.clone(), 100);
        assert!(thinned.len() <= 101, "{}", thinned.len());
        assert_eq!(thinned.first(), points.first());
        assert_eq!(thinned.last(), points.last());
        assert!(thinned
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(thin(points[..50].to_vec(), 100).len(), 50);
    }
}

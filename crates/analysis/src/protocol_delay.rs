//! Protocol processing delay per packet in linear bins, as the SunOS study
//! drew it (Papadopoulos 1993, `001_…` §4.2.1, Figure 14: 50 µs bins,
//! packets per bin, send side and receive side).
//!
//! * **Send side**: the gaps between successive packets of a window burst.
//!   The study's reason holds here too: the protocol cuts one write into
//!   segments, so no record marks where one packet's processing begins;
//!   the gap between two packets handed to the link is the time the stack
//!   took to make the second. A burst is a run of the traced flow's
//!   `link.transmit.enter` records on the sender's thread with no frame
//!   received (an acknowledgement) and no new message between them.
//! * **Receive side**: each packet's time from the link handing it up
//!   (`link.receive.enter`, the packet's flow) to its bytes reaching the
//!   socket's receive queue (the next `socket.recv_queue.enqueue`, which
//!   carries the receiving socket's flow), for the packets that bring
//!   bytes, with no other frame taken up in between.
//!
//! Both subtract the probes' own cost as the span analysis does (one
//! overhead per record step between the two timestamps) and the tool's
//! own work between them (`instrumentation` spans: a capture's copy, the
//! runner waking the other host).
//!
//! The bins are linear; their width is a round number (1, 2 or 5 × 10ⁿ
//! ns) that spreads the samples up to their 99th percentile over about
//! [`TARGET_BINS`] bins — the study's 50 µs would hold every packet of a
//! stack a hundred times faster in its first bin. Samples beyond the last
//! bin are counted, not drawn.

use serde::Serialize;

use crate::histogram::Summary;
use crate::messages::sites;
use crate::spans::ThreadSpans;
use crate::view::TraceView;
use probe::Record;

/// About this many bins up to the 99th percentile.
pub const TARGET_BINS: f64 = 40.0;

/// One bin: samples in `[lo_ns, lo_ns + width)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinearBin {
    pub lo_ns: f64,
    pub count: u64,
}

/// Samples in equal-width bins from zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinearHistogram {
    pub width_ns: f64,
    /// Every bin from zero to the one holding the 99th percentile, empty
    /// ones included.
    pub bins: Vec<LinearBin>,
    /// Samples beyond the last bin.
    pub beyond: u64,
    pub summary: Summary,
}

impl LinearHistogram {
    /// Bins the finite, non-negative `samples` (ns); `None` when there
    /// are none.
    pub fn of(samples: &[f64]) -> Option<Self> {
        let finite: Vec<f64> = samples
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .collect();
        let summary = Summary::of(finite.iter().copied())?;
        let width_ns = round_width(summary.p99 / TARGET_BINS);
        let count = (summary.p99 / width_ns).floor() as usize + 1;
        let mut bins: Vec<LinearBin> = (0..count)
            .map(|k| LinearBin {
                lo_ns: k as f64 * width_ns,
                count: 0,
            })
            .collect();
        let mut beyond = 0;
        for v in finite {
            match bins.get_mut((v / width_ns).floor() as usize) {
                Some(bin) => bin.count += 1,
                None => beyond += 1,
            }
        }
        Some(Self {
            width_ns,
            bins,
            beyond,
            summary,
        })
    }
}

/// The smallest of 1, 2, 5 × 10ⁿ ns at or above `raw` (at least 1 ns).
fn round_width(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 1.0) {
        return 1.0;
    }
    let decade = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * decade)
        .find(|w| *w >= raw * (1.0 - 1e-12))
        .unwrap_or(10.0 * decade)
}

/// Figure 14's two histograms, ours.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolDelay {
    /// Gaps between packets of a burst on the sender.
    pub send: Option<LinearHistogram>,
    /// Link to socket queue per packet on the receiver.
    pub receive: Option<LinearHistogram>,
}

/// One host thread's records (file order) and the spans rebuilt from
/// them.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub records: &'a [Record],
    pub spans: &'a ThreadSpans,
}

impl Side<'_> {
    /// ns of work between records `i < j`: probe cost and the tool's own
    /// work removed.
    fn work_ns(&self, view: &TraceView, i: usize, j: usize) -> Option<f64> {
        let cycles = self.records[j].tsc.checked_sub(self.records[i].tsc)? as f64;
        let o = view.overhead_cycles.max(0.0);
        let tool = self.spans.instrumentation_between(i, j);
        let steps = view.probe_steps(self.records, i, j) as f64;
        Some(view.ns((cycles - o * steps - tool).max(0.0)))
    }
}

/// The send and receive protocol delays of `flow` on its sender's and
/// receiver's threads, for packets from counter value `from` on (the
/// warm-up left out).
pub fn analyse(
    view: &TraceView,
    sender: Side<'_>,
    receiver: Side<'_>,
    flow: u32,
    from: u64,
) -> ProtocolDelay {
    ProtocolDelay {
        send: LinearHistogram::of(&send_gaps(view, sender, flow, from)),
        receive: LinearHistogram::of(&receive_times(view, receiver, flow, from)),
    }
}

fn send_gaps(view: &TraceView, side: Side<'_>, flow: u32, from: u64) -> Vec<f64> {
    let records = side.records;
    let (Some(transmit), Some(receive)) = (
        view.loc(sites::LINK_TRANSMIT_ENTER),
        view.loc(sites::LINK_RECEIVE_ENTER),
    ) else {
        return Vec::new();
    };
    let message = view.loc(sites::MESSAGE_SEND);
    let mut gaps = Vec::new();
    let mut last: Option<usize> = None;
    for (i, r) in records.iter().enumerate() {
        if r.loc == transmit && r.flow == flow {
            if let Some(before) = last.filter(|&b| records[b].tsc >= from) {
                gaps.extend(side.work_ns(view, before, i));
            }
            last = Some(i);
        } else if r.loc == receive || Some(r.loc) == message {
            // An acknowledgement came in, or a new message began: the
            // burst is over.
            last = None;
        }
    }
    gaps
}

fn receive_times(view: &TraceView, side: Side<'_>, flow: u32, from: u64) -> Vec<f64> {
    let records = side.records;
    let (Some(receive), Some(enqueue)) = (
        view.loc(sites::LINK_RECEIVE_ENTER),
        view.loc(sites::RECV_QUEUE_ENQUEUE),
    ) else {
        return Vec::new();
    };
    let mut times = Vec::new();
    let mut taken_up: Option<usize> = None;
    for (i, r) in records.iter().enumerate() {
        if r.loc == receive {
            // Another flow's frame ends the packet's window too: its work
            // is not this packet's.
            taken_up = (r.flow == flow).then_some(i);
        } else if r.loc == enqueue {
            // The socket's records carry the receiving socket's own flow,
            // not the packet's: the frame taken up just before is the
            // one whose bytes these are.
            if let Some(at) = taken_up.take().filter(|&at| records[at].tsc >= from) {
                times.extend(side.work_ns(view, at, i));
            }
        }
    }
    times
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_round_and_cover_the_range() {
        assert_eq!(round_width(0.3), 1.0);
        assert_eq!(round_width(1.5), 2.0);
        assert_eq!(round_width(3.0), 5.0);
        assert_eq!(round_width(7.0), 10.0);
        assert_eq!(round_width(50.0), 50.0);
        assert_eq!(round_width(51.0), 100.0);
        assert_eq!(round_width(1234.0), 2000.0);
    }

    #[test]
    fn samples_fall_in_linear_bins_and_the_tail_is_counted() {
        // 100 samples 0..=990 ns in steps of 10, and one far out.
        let mut samples: Vec<f64> = (0..100).map(|k| f64::from(k) * 10.0).collect();
        samples.push(1e6);
        samples.push(f64::NAN);
        samples.push(-5.0);
        let h = LinearHistogram::of(&samples).unwrap();
        // p99 of 101 samples is the 100th, 990 ns: 990 / 40 → 50 ns bins.
        assert_eq!(h.width_ns, 50.0);
        assert_eq!(h.bins.len(), 20);
        assert!(h.bins.iter().all(|b| b.count == 5), "{:?}", h.bins);
        assert_eq!(h.bins[3].lo_ns, 150.0);
        assert_eq!(h.beyond, 1);
        assert_eq!(h.summary.count, 101);
        assert_eq!(LinearHistogram::of(&[f64::NAN]), None);
    }
}

//! What a transfer did, shaped like iperf3's JSON (`start`, `intervals`,
//! `end` with `sum_sent` / `sum_received` and `cpu_utilization_percent`)
//! so tools that read iperf3 output read ours, plus the receiver's checks.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::cpu::{CpuPercent, CpuUsage};
use crate::env::Environment;
use crate::meter::Interval;
use crate::spec::TransferSpec;
use crate::verify::{DatagramCounts, StreamChecks, StreamCounts};

/// What the sending side did.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderSide {
    /// Bytes the application handed to the stack.
    pub bytes: u64,
    /// Data datagrams or frames sent (datagram protocols).
    pub datagrams: u64,
    /// From the first write to the last write's return; for a paced
    /// sender, to the end of its last datagram's slot at the rate.
    pub elapsed: Duration,
    pub cpu: CpuUsage,
    /// TCP segments the sender's stack sent again, when it says.
    pub retransmits: Option<u64>,
}

/// What the receiver checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Received {
    Stream(StreamCounts),
    Datagrams(DatagramCounts),
}

/// What the receiving side did.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiverSide {
    /// Good bytes received (duplicates and corrupted data excluded).
    pub bytes: u64,
    /// From the first arrival (or start sentinel) to the last (or end
    /// sentinel).
    pub elapsed: Duration,
    /// Bytes of the arrival that opened the window: they came at its
    /// first instant, so the receiver's rate counts only the rest (n
    /// arrivals span n - 1 gaps; counting all of them reads a paced
    /// flow faster than it was sent).
    pub opening_bytes: u64,
    pub cpu: CpuUsage,
    pub checks: Received,
    /// Packets the stack or the kernel dropped during the run, per place
    /// (see [`crate::losses`]); datagram protocols, where counted.
    pub drops: Option<BTreeMap<String, u64>>,
}

/// A whole transfer report.
#[derive(Debug, Clone, Serialize)]
pub struct TransferReport {
    pub start: Start,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Interval>,
    pub end: End,
}

#[derive(Debug, Clone, Serialize)]
pub struct Start {
    /// The parameters, under iperf3's name for them.
    pub test_start: TransferSpec,
    /// Where it ran.
    pub target: Environment,
    pub timestamp: Timestamp,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timestamp {
    /// Seconds since the Unix epoch when the test started.
    pub timesecs: u64,
}

impl Timestamp {
    pub fn now() -> Self {
        Self {
            timesecs: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct End {
    /// Absent when this process only received (`-r`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_sent: Option<SentSum>,
    /// Absent when this process only sent (`-t`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_received: Option<ReceivedSum>,
    pub cpu_utilization_percent: CpuUtilization,
}

#[derive(Debug, Clone, Serialize)]
pub struct SentSum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    /// Data datagrams sent (UDP and raw).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// TCP: segments retransmitted (iperf3's field; the kernel's
    /// `tcpi_total_retrans`, the reference stack's counter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReceivedSum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    /// UDP and raw: iperf3's datagram fields and our extra checks.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<DatagramSum>,
    /// TCP: the stream checks.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamChecks>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DatagramSum {
    /// Distinct good datagrams received.
    pub packets: u64,
    pub lost_packets: u64,
    pub lost_percent: f64,
    pub out_of_order: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    /// Data datagrams the sender reported in its end sentinel (null when
    /// the sentinel never arrived and loss is counted up to the highest
    /// sequence number seen).
    pub sent_by_sender: Option<u64>,
    pub unverifiable_late: u64,
    pub foreign: u64,
    /// Where the lost datagrams died: places that add up to
    /// `lost_packets`, `unattributed` the part no counter explains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_where: Option<BTreeMap<String, u64>>,
    /// The packets each place dropped during the run (fragments count
    /// one each; control traffic too), from which `lost_where` is made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drops_counted: Option<BTreeMap<String, u64>>,
}

/// iperf3's CPU block: `host` is this process's local side (the sender
/// when both run here), `remote` the other side when it ran here too.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct CpuUtilization {
    pub host_total: f64,
    pub host_user: f64,
    pub host_system: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_user: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_system: Option<f64>,
    /// Which side `host` is.
    pub host_role: &'static str,
    /// The reference stack: how its runner waited when idle. With
    /// `spin-then-block` the threads keep polling for a moment after each
    /// packet, so the percentages include that polling and are not load;
    /// with `block` they are the work done. Absent for the kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_wait: Option<&'static str>,
}

fn rate(bytes: u64, elapsed: Duration) -> f64 {
    let s = elapsed.as_secs_f64();
    if s > 0.0 {
        bytes as f64 * 8.0 / s
    } else {
        0.0
    }
}

impl SentSum {
    pub fn from_side(side: &SenderSide, datagram_protocol: bool) -> Self {
        let seconds = side.elapsed.as_secs_f64();
        Self {
            start: 0.0,
            end: seconds,
            seconds,
            bytes: side.bytes,
            bits_per_second: rate(side.bytes, side.elapsed),
            packets: datagram_protocol.then_some(side.datagrams),
            retransmits: side.retransmits,
        }
    }
}

impl ReceivedSum {
    pub fn from_side(side: &ReceiverSide) -> Self {
        let seconds = side.elapsed.as_secs_f64();
        let (datagrams, stream) = match side.checks {
            Received::Stream(counts) => (None, Some(counts.into())),
            Received::Datagrams(c) => {
                let expected = c.datagrams + c.lost;
                (
                    Some(DatagramSum {
                        packets: c.datagrams,
                        lost_packets: c.lost,
                        lost_percent: if expected > 0 {
                            c.lost as f64 * 100.0 / expected as f64
                        } else {
                            0.0
                        },
                        out_of_order: c.out_of_order,
                        duplicated: c.duplicated,
                        corrupted: c.corrupted,
                        sent_by_sender: c.sent,
                        unverifiable_late: c.unverifiable_late,
                        foreign: c.foreign,
                        lost_where: side
                            .drops
                            .as_ref()
                            .map(|d| crate::losses::attribute(c.lost, d)),
                        drops_counted: side.drops.clone(),
                    }),
                    None,
                )
            }
        };
        Self {
            start: 0.0,
            end: seconds,
            seconds,
            bytes: side.bytes,
            bits_per_second: rate(side.bytes.saturating_sub(side.opening_bytes), side.elapsed),
            datagrams,
            stream,
        }
    }
}

impl CpuUtilization {
    /// From whichever sides ran in this process.
    pub fn from_sides(sender: Option<&SenderSide>, receiver: Option<&ReceiverSide>) -> Self {
        let pct = |p: CpuPercent| (p.total, p.user, p.system);
        let (host, remote, role) = match (sender, receiver) {
            (Some(s), r) => (
                pct(s.cpu.percent()),
                r.map(|r| pct(r.cpu.percent())),
                "sender",
            ),
            (None, Some(r)) => (pct(r.cpu.percent()), None, "receiver"),
            (None, None) => ((0.0, 0.0, 0.0), None, "none"),
        };
        Self {
            host_total: host.0,
            host_user: host.1,
            host_system: host.2,
            remote_total: remote.map(|r| r.0),
            remote_user: remote.map(|r| r.1),
            remote_system: remote.map(|r| r.2),
            host_role: role,
            runner_wait: None,
        }
    }
}

impl TransferReport {
    /// Assembles a report from the sides that ran here.
    pub fn new(
        spec: &TransferSpec,
        target: Environment,
        timestamp: Timestamp,
        intervals: Vec<Interval>,
        sender: Option<&SenderSide>,
        receiver: Option<&ReceiverSide>,
    ) -> Self {
        let datagram_protocol = !spec.protocol.is_stream();
        let mut sum_received = receiver.map(ReceivedSum::from_side);
        // One window for both rates where both sides ran here: the longer
        // of the two. A receiver's window can be the shorter by its first
        // datagram's extra delay (a thread woken late), and over it a
        // loss-free paced run read 0.02–0.13 % faster than it was sent.
        if let (Some(sent), Some(received)) = (sender, sum_received.as_mut()) {
            let seconds = sent.elapsed.as_secs_f64();
            if seconds > received.seconds {
                received.seconds = seconds;
                received.end = received.start + seconds;
                received.bits_per_second = rate(received.bytes, sent.elapsed);
            }
        }
        Self {
            start: Start {
                test_start: spec.clone(),
                target,
                timestamp,
            },
            intervals,
            end: End {
                sum_sent: sender.map(|s| SentSum::from_side(s, datagram_protocol)),
                sum_received,
                cpu_utilization_percent: CpuUtilization::from_sides(sender, receiver),
            },
        }
    }

    /// Names how the reference stack's runner waited beside the CPU
    /// figures ([`CpuUtilization::runner_wait`]).
    pub fn with_runner_wait(mut self, wait: &'static str) -> Self {
        self.end.cpu_utilization_percent.runner_wait = Some(wait);
        self
    }

    /// What makes this report impossible rather than a measurement: a
    /// receiver with more bytes than were sent, or a rate above the
    /// link's. Empty when it is possible.
    pub fn impossible(&self) -> Vec<String> {
        let mut found = Vec::new();
        let sent = self.end.sum_sent.as_ref();
        let received = self.end.sum_received.as_ref();
        if let (Some(s), Some(r)) = (sent, received) {
            if r.bytes > s.bytes {
                found.push(format!(
                    "impossible: {} bytes received of {} sent",
                    r.bytes, s.bytes
                ));
            }
        }
        // A paced sender hands a datagram over no sooner than its slot at
        // the offered rate, and its window runs to the last one's slot
        // end, so it never sends faster than offered (by more than the
        // nanosecond rounding of a short window). Its receiver may: a
        // first datagram held back (neighbour resolution, a queue) makes
        // the receiver's window shorter than the sender's.
        if let (Some(rate), Some(s)) = (self.start.test_start.rate_bps, sent) {
            if s.bits_per_second > rate as f64 * (1.0 + 1e-4) {
                found.push(format!(
                    "impossible: sent {} when {} was offered",
                    crate::units::bits_per_second(s.bits_per_second),
                    crate::units::bits_per_second(rate as f64)
                ));
            }
        }
        if let Some(link) = self.start.target.link_rate_bps {
            // A datagram sender's rate is the load it offered, which may
            // well exceed the link; a stream's is what the link carried
            // (its window ends at the last acknowledgement).
            let tcp = self.start.test_start.protocol.is_stream();
            let rates = [
                ("sent", sent.filter(|_| tcp).map(|s| s.bits_per_second)),
                ("received", received.map(|r| r.bits_per_second)),
            ];
            for (side, bps) in rates {
                if let Some(bps) = bps.filter(|&b| b > link as f64) {
                    found.push(format!(
                        "impossible: {side} {} through a {} link",
                        crate::units::bits_per_second(bps),
                        crate::units::bits_per_second(link as f64)
                    ));
                }
            }
        }
        found
    }

    /// The shorter of the sender's and the receiver's windows, when both
    /// ran here.
    pub fn shortest_window(&self) -> Option<Duration> {
        let sent = self.end.sum_sent.as_ref()?.seconds;
        let received = self.end.sum_received.as_ref()?.seconds;
        Some(Duration::from_secs_f64(sent.min(received).max(0.0)))
    }

    /// True when the receiver found every byte or datagram it should have
    /// and nothing wrong.
    pub fn is_clean(&self) -> bool {
        let Some(received) = &self.end.sum_received else {
            return true;
        };
        if let Some(stream) = &received.stream {
            let all_there = self
                .end
                .sum_sent
                .as_ref()
                .is_none_or(|sent| sent.bytes == received.bytes);
            return stream.is_clean() && all_there;
        }
        received
            .datagrams
            .as_ref()
            .is_none_or(|d| d.corrupted == 0 && d.duplicated == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Family, Protocol, StackKind};

    fn report(sent: Duration, received: Duration) -> TransferReport {
        let spec = TransferSpec::new(Protocol::Udp, Family::V6);
        TransferReport::new(
            &spec,
            Environment::detect(StackKind::Kernel, "loopback"),
            Timestamp::now(),
            Vec::new(),
            Some(&SenderSide {
                bytes: 1_000_000,
                datagrams: 1000,
                elapsed: sent,
                cpu: CpuUsage::default(),
                retransmits: None,
            }),
            Some(&ReceiverSide {
                bytes: 1_000_000,
                elapsed: received,
                opening_bytes: 0,
                cpu: CpuUsage::default(),
                checks: Received::Stream(StreamCounts::default()),
                drops: None,
            }),
        )
    }

    #[test]
    fn a_receiver_never_reads_faster_than_the_sender_sent() {
        // The receiver's window 0.1 % shorter (its first datagram late):
        // both rates over the sender's longer window.
        let r = report(Duration::from_millis(1000), Duration::from_millis(999));
        let (sent, received) = (r.end.sum_sent.unwrap(), r.end.sum_received.unwrap());
        assert_eq!(received.bits_per_second, sent.bits_per_second);
        assert_eq!(received.seconds, 1.0);
        // A longer receiver window is its own.
        let r = report(Duration::from_millis(1000), Duration::from_millis(1250));
        let received = r.end.sum_received.unwrap();
        assert_eq!(received.seconds, 1.25);
        assert_eq!(received.bits_per_second, 6_400_000.0);
    }
}

//! A test's streams sampled as iperf3 reports them, for either end (the
//! client, and the server's `-s -J`): per interval each stream's bytes,
//! datagrams, losses and jitter, and a sending TCP stream's state
//! (`Transport::tcp_info`); at the end each stream's totals with the
//! RTT's range and mean over the samples.

use std::net::SocketAddr;
use std::time::Duration;

use stack::time::Instant;

use super::measured::{Interval, StreamInterval, StreamTotals};
use super::stream::{Channel, DataStream};
use crate::transport::Transport;

/// What is told each interval as it ends.
pub type IntervalHook = Box<dyn FnMut(&Interval) + Send>;

/// Per-stream state between samples.
#[derive(Debug, Clone, Default)]
struct Marks {
    /// Counts at the last interval's end: bytes, packets, lost, retransmits.
    last: [u64; 4],
    retrans_base: u64,
    rtt_samples: Vec<u64>,
    max_cwnd: u64,
}

/// The sampler of one test, from TEST_RUNNING.
#[derive(Debug)]
pub struct Sampler {
    every: Option<Duration>,
    running_at: Instant,
    next: Option<Instant>,
    /// Seconds from the start to the last interval's end.
    mark_at: f64,
    marks: Vec<Marks>,
    pub intervals: Vec<Interval>,
}

/// This end's counts of `s`: bytes, datagrams, lost datagrams.
fn counts<S, D>(s: &DataStream<S, D>, sending: bool) -> (u64, u64, u64) {
    if sending {
        (s.sent_bytes, s.sent_datagrams, 0)
    } else {
        (s.received.bytes, s.received.highest, s.received.lost)
    }
}

impl Sampler {
    /// Starts at `now` with the streams as they are (their retransmission
    /// counters so far are not the test's).
    pub fn start<N: Transport>(
        net: &mut N,
        streams: &[DataStream<N::Stream, N::Datagrams>],
        every: Option<Duration>,
        now: Instant,
    ) -> Self {
        let marks = streams
            .iter()
            .map(|s| Marks {
                retrans_base: match s.channel {
                    Channel::Tcp(h) => net.retransmits(h).unwrap_or(0),
                    Channel::Udp { .. } => 0,
                },
                ..Marks::default()
            })
            .collect();
        Self {
            every,
            running_at: now,
            next: every.map(|e| now + e),
            mark_at: 0.0,
            marks,
            intervals: Vec::new(),
        }
    }

    /// When the next interval ends.
    pub fn next(&self) -> Option<Instant> {
        self.next
    }

    fn seconds(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.running_at).as_secs_f64()
    }

    /// Segments stream `i` retransmitted since the start.
    pub fn retransmits<N: Transport>(
        &self,
        net: &mut N,
        i: usize,
        s: &DataStream<N::Stream, N::Datagrams>,
    ) -> Option<u64> {
        let Channel::Tcp(h) = s.channel else {
            return None;
        };
        let base = self.marks.get(i).map_or(0, |m| m.retrans_base);
        net.retransmits(h).map(|r| r.saturating_sub(base))
    }

    /// Closes the intervals that ended by `now`.
    pub fn tick<N: Transport>(
        &mut self,
        net: &mut N,
        streams: &[DataStream<N::Stream, N::Datagrams>],
        sending: bool,
        now: Instant,
        hook: &mut Option<IntervalHook>,
    ) {
        while let (Some(at), Some(every)) = (self.next, self.every) {
            if now < at {
                break;
            }
            self.close(net, streams, sending, at, hook);
            self.next = Some(at + every);
        }
    }

    /// The last, shorter interval at the test's end, as iperf3 (when it
    /// is not a sliver).
    pub fn finish<N: Transport>(
        &mut self,
        net: &mut N,
        streams: &[DataStream<N::Stream, N::Datagrams>],
        sending: bool,
        now: Instant,
        hook: &mut Option<IntervalHook>,
    ) {
        if self.every.is_some() && self.seconds(now) - self.mark_at > 0.01 {
            self.close(net, streams, sending, now, hook);
        }
    }

    /// Records the interval from the last mark to `at`.
    fn close<N: Transport>(
        &mut self,
        net: &mut N,
        streams: &[DataStream<N::Stream, N::Datagrams>],
        sending: bool,
        at: Instant,
        hook: &mut Option<IntervalHook>,
    ) {
        let end = self.seconds(at);
        if end - self.mark_at <= 0.0 {
            return;
        }
        let mut interval = Interval::default();
        for (i, s) in streams.iter().enumerate() {
            let (bytes, packets, lost) = counts(s, sending);
            let mut tcp = None;
            let mut retrans = 0;
            if let (Channel::Tcp(h), true) = (s.channel, sending) {
                tcp = net.tcp_info(h);
                retrans = self.retransmits(net, i, s).unwrap_or(0);
            }
            let Some(mark) = self.marks.get_mut(i) else {
                continue; // a stream added after the start: not sampled
            };
            if let Some(info) = tcp {
                mark.rtt_samples.push(info.rtt_us);
                mark.max_cwnd = mark.max_cwnd.max(info.snd_cwnd);
            }
            let last = mark.last;
            interval.streams.push(StreamInterval {
                socket: 5 + i as u32,
                start: self.mark_at,
                end,
                bytes: bytes.saturating_sub(last[0]),
                packets: packets.saturating_sub(last[1]),
                lost: lost.saturating_sub(last[2]),
                jitter: s.received.jitter,
                retransmits: retrans.saturating_sub(last[3]),
                tcp,
            });
            mark.last = [bytes, packets, lost, retrans];
        }
        self.mark_at = end;
        if let Some(f) = hook {
            f(&interval);
        }
        self.intervals.push(interval);
    }

    /// Each stream's whole-test totals on this end, with its addresses;
    /// `duration` is the test's window here.
    pub fn totals<N: Transport>(
        &self,
        net: &mut N,
        streams: &[DataStream<N::Stream, N::Datagrams>],
        addrs: &[(Option<SocketAddr>, Option<SocketAddr>)],
        sending: bool,
        duration: f64,
    ) -> Vec<StreamTotals> {
        streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (bytes, packets, lost) = counts(s, sending);
                let mark = self.marks.get(i).cloned().unwrap_or_default();
                let samples = &mark.rtt_samples;
                let (local, remote) = addrs.get(i).copied().unwrap_or((None, None));
                StreamTotals {
                    id: s.id,
                    socket: 5 + i as u32,
                    local,
                    remote,
                    bytes,
                    packets,
                    lost,
                    out_of_order: s.received.out_of_order,
                    jitter: s.received.jitter,
                    retransmits: if sending {
                        self.retransmits(net, i, s)
                    } else {
                        None
                    },
                    max_cwnd: mark.max_cwnd,
                    max_snd_wnd: 0,
                    rtt_min: samples.iter().copied().min().unwrap_or(0),
                    rtt_max: samples.iter().copied().max().unwrap_or(0),
                    rtt_mean: if samples.is_empty() {
                        0
                    } else {
                        samples.iter().sum::<u64>() / samples.len() as u64
                    },
                    end: duration,
                }
            })
            .collect()
    }
}

//! A wiretap on a simulated host's link: records every frame the host
//! sends (with when) and every TCP segment it takes in, puts forged frames
//! in front of it, holds arriving frames back on the wire (so a whole
//! flight reaches the host in one poll), and loses chosen arriving
//! segments.
//!
//! [`Wiretap::splice`] wraps a host's eth0 in a [`Splice`]; the test keeps
//! the [`Wiretap`], its side of the splice.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};

use stack::phy::{Link, LinkError, LinkStats, Loopback, Medium};
use stack::runner::Simulator;
use stack::time::Instant;
use wire::ethernet::{EtherType, EthernetFrame};
use wire::ip::{ChecksumMode, IpProtocol};
use wire::ipv4::Ipv4Packet;
use wire::ipv6::Ipv6Packet;
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr};

use super::host_mut;

#[derive(Default)]
struct State {
    /// Every frame the host transmitted, with when.
    sent: Vec<(Instant, Vec<u8>)>,
    /// When each TCP segment the host took from the wire arrived.
    received: Vec<Instant>,
    /// Frames to hand the host as received, each from its instant on,
    /// ahead of the wire's.
    inject: VecDeque<(Instant, Vec<u8>)>,
    /// Arriving frames are held on the wire.
    held: bool,
    /// Sequence numbers of arriving segments to lose, once each.
    lose: Vec<u32>,
}

/// The test's side of a [`Splice`].
#[derive(Clone, Default)]
pub struct Wiretap(Arc<Mutex<State>>);

/// How much a [`Wiretap`] had seen at one point, for the `_since` calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mark {
    sent: usize,
    received: usize,
}

impl Wiretap {
    /// Wraps the link of `name`'s eth0 in a [`Splice`] and returns its tap.
    pub fn splice(sim: &mut Simulator, name: &str) -> Wiretap {
        let h = host_mut(sim, name);
        let id = h.interface_id("eth0").unwrap();
        let iface = h.interface_mut(id).unwrap();
        let inner = std::mem::replace(&mut iface.link, Box::new(Loopback::default()));
        let tap = Wiretap::default();
        iface.link = Box::new(Splice {
            inner,
            tap: tap.clone(),
        });
        tap
    }

    /// Hands `frame` to the host as received, at its next receive.
    pub fn inject(&self, frame: Vec<u8>) {
        self.inject_at(Instant::ZERO, frame);
    }

    /// Hands `frame` to the host as received, from `at` on.
    pub fn inject_at(&self, at: Instant, frame: Vec<u8>) {
        self.0.lock().unwrap().inject.push_back((at, frame));
    }

    /// Holds arriving frames on the wire (`true`) or lets them in.
    pub fn hold(&self, held: bool) {
        self.0.lock().unwrap().held = held;
    }

    /// Loses the next arriving segment that starts at `seq`.
    pub fn lose(&self, seq: u32) {
        self.0.lock().unwrap().lose.push(seq);
    }

    /// What the tap has seen so far (a mark for the `_since` calls).
    pub fn mark(&self) -> Mark {
        let state = self.0.lock().unwrap();
        Mark {
            sent: state.sent.len(),
            received: state.received.len(),
        }
    }

    /// The TCP segments among the frames the host sent since `mark`.
    pub fn sent_since(&self, mark: Mark) -> Vec<Seen> {
        self.0.lock().unwrap().sent[mark.sent..]
            .iter()
            .filter_map(|(at, frame)| parse_segment(*at, frame))
            .collect()
    }

    /// Every frame the host sent since `mark`, whole.
    pub fn frames_sent_since(&self, mark: Mark) -> Vec<Vec<u8>> {
        self.0.lock().unwrap().sent[mark.sent..]
            .iter()
            .map(|(_, frame)| frame.clone())
            .collect()
    }

    /// When the TCP segments the host took from the wire since `mark`
    /// arrived.
    pub fn received_since(&self, mark: Mark) -> Vec<Instant> {
        self.0.lock().unwrap().received[mark.received..].to_vec()
    }
}

/// A host's link with a tap: what the host sends is recorded before it
/// goes on the wire; injected frames arrive ahead of the wire's; while
/// held, nothing arrives. Every other [`Link`] method is the inner link's.
pub struct Splice {
    inner: Box<dyn Link + Send>,
    tap: Wiretap,
}

impl Link for Splice {
    fn medium(&self) -> Medium {
        self.inner.medium()
    }

    fn mtu(&self) -> usize {
        self.inner.mtu()
    }

    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        self.tap.0.lock().unwrap().sent.push((now, parts.concat()));
        self.inner.transmit(now, parts)
    }

    fn transmitted(&mut self, now: Instant, parts: &[&[u8]]) {
        self.inner.transmitted(now, parts);
    }

    fn flush(&mut self, now: Instant) {
        self.inner.flush(now);
    }

    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let mut state = self.tap.0.lock().unwrap();
        if state.held {
            return None;
        }
        if state.inject.front().is_some_and(|(at, _)| *at <= now) {
            let (_, frame) = state.inject.pop_front()?;
            buf[..frame.len()].copy_from_slice(&frame);
            return Some(frame.len());
        }
        drop(state);
        loop {
            let n = self.inner.receive(now, buf)?;
            let Some(seg) = parse_segment(now, &buf[..n]) else {
                return Some(n);
            };
            let mut state = self.tap.0.lock().unwrap();
            if let Some(i) = state.lose.iter().position(|s| *s == seg.seq()) {
                state.lose.swap_remove(i);
                continue;
            }
            state.received.push(now);
            return Some(n);
        }
    }

    fn transmit_ring(&self) -> Option<usize> {
        self.inner.transmit_ring()
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        self.inner.transmit_complete_at()
    }

    fn received_at(&self) -> Option<Instant> {
        None
    }

    fn next_arrival(&self) -> Option<Instant> {
        let state = self.tap.0.lock().unwrap();
        if state.held {
            return None;
        }
        let injected = state.inject.front().map(|(at, _)| *at);
        drop(state);
        match (injected, self.inner.next_arrival()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn may_receive(&self, now: Instant) -> bool {
        let state = self.tap.0.lock().unwrap();
        if state.held {
            return false;
        }
        if state.inject.front().is_some_and(|(at, _)| *at <= now) {
            return true;
        }
        drop(state);
        self.inner.may_receive(now)
    }

    fn interface_id(&self) -> Option<[u8; 8]> {
        self.inner.interface_id()
    }

    fn readable_fd(&self) -> Option<RawFd> {
        self.inner.readable_fd()
    }

    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }
}

/// A TCP segment seen on the wire.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The IP packet's length, header included.
    pub ip_len: usize,
    /// The IP header and the TCP segment, as an ICMP error would quote
    /// them.
    pub packet: Vec<u8>,
    pub repr: TcpRepr,
}

impl Seen {
    pub fn seq(&self) -> u32 {
        self.repr.seq_number
    }

    pub fn payload_len(&self) -> usize {
        self.repr.payload_len
    }

    pub fn is(&self, flags: TcpFlags) -> bool {
        self.repr.flags.contains(flags)
    }

    /// A bare ACK: no data and no SYN, FIN or RST.
    pub fn is_pure_ack(&self) -> bool {
        self.repr.ack_number.is_some()
            && self.repr.payload_len == 0
            && !self
                .repr
                .flags
                .intersects(TcpFlags::SYN.union(TcpFlags::FIN).union(TcpFlags::RST))
    }
}

/// The TCP segment in the Ethernet `frame`, seen at `at`, if it holds one.
/// Panics on a segment with a bad checksum: every segment a host sends
/// must carry a valid one.
pub fn parse_segment(at: Instant, frame: &[u8]) -> Option<Seen> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let (src, dst, ip_len, tcp): (IpAddr, IpAddr, usize, Vec<u8>) = match eth.ethertype() {
        EtherType::Ipv6 => {
            let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
            if ip.next_header() != IpProtocol::Tcp {
                return None;
            }
            let len = wire::ipv6::HEADER_LEN + usize::from(ip.payload_len());
            (
                ip.src_addr().into(),
                ip.dst_addr().into(),
                len,
                ip.payload().to_vec(),
            )
        }
        EtherType::Ipv4 => {
            let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
            if ip.protocol() != IpProtocol::Tcp {
                return None;
            }
            let len = usize::from(ip.total_len());
            (
                ip.src_addr().into(),
                ip.dst_addr().into(),
                len,
                ip.payload().to_vec(),
            )
        }
        _ => return None,
    };
    let segment = TcpPacket::new_checked(&tcp[..]).ok()?;
    let repr = TcpRepr::parse(&segment, &src, &dst, ChecksumMode::Full).expect("a valid segment");
    Some(Seen {
        at,
        src: SocketAddr::new(src, repr.src_port),
        dst: SocketAddr::new(dst, repr.dst_port),
        ip_len,
        packet: eth.payload()[..ip_len].to_vec(),
        repr,
    })
}

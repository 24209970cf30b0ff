//! `ping`: ICMP Echo Requests from a raw socket, replies matched by
//! identifier and sequence number, round-trip times on the virtual clock.

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;
use wire::ip::IpProtocol;

use super::{resolve, Family, ToolError};
use crate::runner::Simulator;
use crate::socket::RawFamily;
use crate::time::Instant;

/// What `ping` does.
#[derive(Debug, Clone)]
pub struct PingOptions {
    pub count: u16,
    /// Bytes of Echo data after the 8-byte ICMP header; a size above the
    /// path MTU makes the sender fragment.
    pub size: usize,
    pub interval: Duration,
    /// How long to wait for the last reply.
    pub timeout: Duration,
    pub family: Family,
}

impl Default for PingOptions {
    fn default() -> Self {
        Self {
            count: 3,
            size: 56,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(2),
            family: Family::Any,
        }
    }
}

/// What came back.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PingReport {
    pub destination: String,
    pub sent: u16,
    pub received: u16,
    /// Round-trip times of the replies, in microseconds of simulated time,
    /// in sequence order.
    pub rtt_us: Vec<f64>,
    /// Each reply, in sequence order.
    pub replies: Vec<EchoReply>,
    /// ICMP errors about our requests (Destination Unreachable, Time
    /// Exceeded), as they came.
    pub errors: Vec<EchoError>,
}

/// One Echo Reply: its sequence number (from 1, as iputils counts), who
/// sent it, its size (ICMP header and data), the hop limit or TTL it
/// arrived with and its round trip.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EchoReply {
    pub icmp_seq: u16,
    pub from: String,
    pub bytes: usize,
    pub ttl: u8,
    pub rtt_us: f64,
}

/// An ICMP error quoting one of our requests.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EchoError {
    pub icmp_seq: u16,
    pub from: String,
    /// iputils' words: "Destination Host Unreachable", "Time to live
    /// exceeded", …
    pub message: &'static str,
}

const ECHO_IDENT: u16 = 0x5353;

/// Pings `dest` from host `from` on the simulated network.
pub fn ping(
    sim: &mut Simulator,
    from: &str,
    dest: &str,
    options: &PingOptions,
) -> Result<PingReport, ToolError> {
    let target = resolve(sim, from, dest, options.family)?;
    let (family, protocol, request_type, reply_type) = match target {
        IpAddr::V6(_) => (RawFamily::Ipv6, IpProtocol::Icmpv6, 128u8, 129u8),
        IpAddr::V4(_) => (RawFamily::Ipv4, IpProtocol::Icmp, 8, 0),
    };
    let host = sim
        .host_mut(from)
        .ok_or_else(|| ToolError::UnknownHost(from.to_string()))?;
    let socket = host.raw_open(family, protocol);
    let mut sent_at: Vec<Option<Instant>> = vec![None; usize::from(options.count)];
    let mut seen = Seen {
        replies: vec![None; usize::from(options.count)],
        errors: Vec::new(),
    };
    for seq in 0..options.count {
        let mut message = vec![0u8; 8 + options.size];
        message[0] = request_type;
        message[4..6].copy_from_slice(&ECHO_IDENT.to_be_bytes());
        // icmp_seq counts from 1, as iputils sends it.
        message[6..8].copy_from_slice(&(seq + 1).to_be_bytes());
        for (i, byte) in message[8..].iter_mut().enumerate() {
            *byte = (i as u8).wrapping_add(seq as u8);
        }
        if protocol == IpProtocol::Icmp {
            let sum = wire::checksum::checksum(&message);
            message[2..4].copy_from_slice(&sum.to_be_bytes());
        }
        let host = sim.host_mut(from).expect("checked above");
        host.raw_send_to(socket, &message, target, None)
            .map_err(|e| ToolError::Send(e.to_string()))?;
        sent_at[usize::from(seq)] = Some(sim.now());
        let wait = if seq + 1 == options.count {
            options.timeout
        } else {
            options.interval
        };
        let end = sim.now() + wait;
        let last = seq + 1 == options.count;
        sim.run_until_with(wait, |sim| {
            collect(sim, from, socket, reply_type, &sent_at, &mut seen);
            // The last probe ends the run as soon as every request is
            // answered, by a reply or an error.
            last && (0..options.count).all(|s| seen.answered(s + 1))
        });
        if !last {
            sim.run_until(end);
        }
    }
    let replies: Vec<EchoReply> = seen.replies.into_iter().flatten().collect();
    Ok(PingReport {
        destination: target.to_string(),
        sent: options.count,
        received: replies.len() as u16,
        rtt_us: replies.iter().map(|r| r.rtt_us).collect(),
        replies,
        errors: seen.errors,
    })
}

/// The answers so far.
struct Seen {
    /// By icmp_seq − 1.
    replies: Vec<Option<EchoReply>>,
    errors: Vec<EchoError>,
}

impl Seen {
    fn answered(&self, icmp_seq: u16) -> bool {
        self.replies
            .get(usize::from(icmp_seq) - 1)
            .is_some_and(Option::is_some)
            || self.errors.iter().any(|e| e.icmp_seq == icmp_seq)
    }
}

/// Reads every queued message on the socket: each Echo Reply of ours
/// with its round trip, and each ICMP error that quotes one of our
/// requests.
fn collect(
    sim: &mut Simulator,
    from: &str,
    socket: crate::iface::host::RawHandle,
    reply_type: u8,
    sent_at: &[Option<Instant>],
    seen: &mut Seen,
) {
    let now = sim.now();
    let Some(host) = sim.host_mut(from) else {
        return;
    };
    while let Some(packet) = host.raw(socket).recv() {
        let mut message = vec![0u8; packet.payload.len().min(128)];
        packet.payload.copy_out(0, &mut message);
        if message.len() < 8 {
            continue;
        }
        if message[0] == reply_type {
            let ident = u16::from_be_bytes([message[4], message[5]]);
            let icmp_seq = u16::from_be_bytes([message[6], message[7]]);
            let index = usize::from(icmp_seq.wrapping_sub(1));
            if ident != ECHO_IDENT {
                continue;
            }
            if let (Some(Some(sent)), Some(slot @ None)) =
                (sent_at.get(index), seen.replies.get_mut(index))
            {
                *slot = Some(EchoReply {
                    icmp_seq,
                    from: packet.remote.to_string(),
                    bytes: packet.payload.len(),
                    ttl: packet.hop_limit,
                    rtt_us: (now - *sent).as_nanos() as f64 / 1_000.0,
                });
            }
        } else if let Some((icmp_seq, text)) = quoted_request(&message, packet.remote) {
            if usize::from(icmp_seq) <= sent_at.len() && icmp_seq > 0 {
                seen.errors.push(EchoError {
                    icmp_seq,
                    from: packet.remote.to_string(),
                    message: text,
                });
            }
        }
    }
}

/// The icmp_seq of our request an ICMP error quotes, and iputils' words
/// for the error. The quoted packet follows the error's 8-byte header: an
/// IP header (RFC 792; RFC 4443 §3), then our Echo Request's header.
fn quoted_request(message: &[u8], from: IpAddr) -> Option<(u16, &'static str)> {
    let (kind, code) = (message[0], message[1]);
    let quoted = message.get(8..)?;
    let (echo_at, text) = match from {
        IpAddr::V4(_) => {
            let text = match (kind, code) {
                (3, 0) => "Destination Net Unreachable",
                (3, 1) => "Destination Host Unreachable",
                (3, 2) => "Destination Protocol Unreachable",
                (3, 3) => "Destination Port Unreachable",
                (3, 4) => "Frag needed and DF set",
                (3, 9 | 10 | 13) => "Packet filtered",
                (3, _) => "Destination Unreachable",
                (11, _) => "Time to live exceeded",
                _ => return None,
            };
            // Our request: protocol 1.
            if quoted.get(9) != Some(&1) {
                return None;
            }
            (usize::from(quoted.first()? & 0x0f) * 4, text)
        }
        IpAddr::V6(_) => {
            let text = match (kind, code) {
                (1, 0) => "Destination unreachable: No route",
                (1, 1) => "Destination unreachable: Administratively prohibited",
                (1, 3) => "Destination unreachable: Address unreachable",
                (1, 4) => "Destination unreachable: Port unreachable",
                (1, _) => "Destination unreachable",
                (3, _) => "Time exceeded: Hop limit",
                _ => return None,
            };
            // Our requests carry no extension headers: ICMPv6 next.
            if quoted.get(6) != Some(&58) {
                return None;
            }
            (wire::ipv6::HEADER_LEN, text)
        }
    };
    let echo = quoted.get(echo_at..echo_at + 8)?;
    if u16::from_be_bytes([echo[4], echo[5]]) != ECHO_IDENT {
        return None;
    }
    Some((u16::from_be_bytes([echo[6], echo[7]]), text))
}

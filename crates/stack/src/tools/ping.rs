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
    let mut rtts: Vec<Option<f64>> = vec![None; usize::from(options.count)];
    for seq in 0..options.count {
        let mut message = vec![0u8; 8 + options.size];
        message[0] = request_type;
        message[4..6].copy_from_slice(&ECHO_IDENT.to_be_bytes());
        message[6..8].copy_from_slice(&seq.to_be_bytes());
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
            collect_replies(sim, from, socket, reply_type, &sent_at, &mut rtts);
            // The last probe ends the run as soon as every reply is in.
            last && rtts.iter().all(Option::is_some)
        });
        if !last {
            sim.run_until(end);
        }
    }
    Ok(PingReport {
        destination: target.to_string(),
        sent: options.count,
        received: rtts.iter().filter(|r| r.is_some()).count() as u16,
        rtt_us: rtts.into_iter().flatten().collect(),
    })
}

/// Reads every queued message on the socket, noting the RTT of each Echo
/// Reply of ours.
fn collect_replies(
    sim: &mut Simulator,
    from: &str,
    socket: crate::iface::host::RawHandle,
    reply_type: u8,
    sent_at: &[Option<Instant>],
    rtts: &mut [Option<f64>],
) {
    let now = sim.now();
    let Some(host) = sim.host_mut(from) else {
        return;
    };
    let mut header = [0u8; 8];
    while let Some(packet) = host.raw(socket).recv() {
        if packet.payload.copy_out(0, &mut header) < 8 || header[0] != reply_type {
            continue;
        }
        let ident = u16::from_be_bytes([header[4], header[5]]);
        let seq = usize::from(u16::from_be_bytes([header[6], header[7]]));
        if ident != ECHO_IDENT {
            continue;
        }
        if let (Some(Some(sent)), Some(slot @ None)) = (sent_at.get(seq), rtts.get_mut(seq)) {
            *slot = Some((now - *sent).as_nanos() as f64 / 1_000.0);
        }
    }
}

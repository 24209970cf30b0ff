//! `traceroute`: UDP probes with growing hop limits to unlikely ports; each
//! router on the path answers Time Exceeded, the destination Port
//! Unreachable (RFC 1393's classic method, RFC 4443 §3.3 and §3.1).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::Serialize;
use wire::ip::IpProtocol;

use super::{resolve, unspecified_like, Family, ToolError};
use crate::runner::Simulator;
use crate::socket::{RawFamily, UdpConfig};

/// The first destination port, as in the classic traceroute.
pub const BASE_PORT: u16 = 33434;

/// What `traceroute` does.
#[derive(Debug, Clone)]
pub struct TracerouteOptions {
    pub max_hops: u8,
    /// How long to wait for each hop's answer.
    pub wait: Duration,
    pub family: Family,
}

impl Default for TracerouteOptions {
    fn default() -> Self {
        Self {
            max_hops: 30,
            wait: Duration::from_secs(3),
            family: Family::Any,
        }
    }
}

/// One hop: who answered the probe with this hop limit (`None`: nobody),
/// and traceroute's mark for a Destination Unreachable that ended the
/// trace short of the destination's port (`!N` no route, `!H` host or
/// address unreachable, `!A` administratively prohibited, `!P` protocol,
/// `!F` fragmentation needed, `!S` beyond the source's scope).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Hop {
    pub ttl: u8,
    pub addr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TracerouteReport {
    pub destination: String,
    pub hops: Vec<Hop>,
    pub reached: bool,
}

/// What an ICMP message said about one of our probes.
enum Answer {
    TimeExceeded(IpAddr),
    /// Destination Unreachable: from the destination (`port`) or a router
    /// that cannot go on (no route, address unreachable): the trace ends.
    Unreachable {
        from: IpAddr,
        port: bool,
        mark: Option<&'static str>,
    },
}

/// Traces the path from host `from` to `dest`.
pub fn traceroute(
    sim: &mut Simulator,
    from: &str,
    dest: &str,
    options: &TracerouteOptions,
) -> Result<TracerouteReport, ToolError> {
    let target = resolve(sim, from, dest, options.family)?;
    let host = sim
        .host_mut(from)
        .ok_or_else(|| ToolError::UnknownHost(from.to_string()))?;
    let (family, protocol) = match target {
        IpAddr::V6(_) => (RawFamily::Ipv6, IpProtocol::Icmpv6),
        IpAddr::V4(_) => (RawFamily::Ipv4, IpProtocol::Icmp),
    };
    let icmp = host.raw_open(family, protocol);
    let udp = host.udp_open(UdpConfig::default());
    let local = host.udp_bind(udp, SocketAddr::new(unspecified_like(target), 0));
    let mut hops = Vec::new();
    let mut reached = false;
    for ttl in 1..=options.max_hops {
        let port = BASE_PORT.wrapping_add(u16::from(ttl) - 1);
        let host = sim.host_mut(from).expect("checked above");
        host.udp(udp).set_hop_limit(Some(ttl));
        host.udp_send_to(udp, &[0u8; 32], SocketAddr::new(target, port))
            .map_err(|e| ToolError::Send(e.to_string()))?;
        let mut answer = None;
        sim.run_until_with(options.wait, |sim| {
            if let Some(host) = sim.host_mut(from) {
                while let Some(packet) = host.raw(icmp).recv() {
                    let mut bytes = vec![0u8; packet.payload.len().min(256)];
                    packet.payload.copy_out(0, &mut bytes);
                    if let Some(a) = classify(&bytes, packet.remote, local.port(), port) {
                        answer = Some(a);
                    }
                }
            }
            answer.is_some()
        });
        match answer {
            Some(Answer::TimeExceeded(addr)) => hops.push(Hop {
                ttl,
                addr: Some(addr.to_string()),
                unreachable: None,
            }),
            Some(Answer::Unreachable { from, port, mark }) => {
                hops.push(Hop {
                    ttl,
                    addr: Some(from.to_string()),
                    unreachable: mark,
                });
                reached = port && from == target;
                break;
            }
            None => hops.push(Hop {
                ttl,
                addr: None,
                unreachable: None,
            }),
        }
    }
    Ok(TracerouteReport {
        destination: target.to_string(),
        hops,
        reached,
    })
}

/// Whether an ICMP message is about our probe from `src_port` to
/// `dst_port`, and what it says. The invoking packet follows the 8-byte
/// ICMP header: an IP header, then our UDP header.
fn classify(message: &[u8], from: IpAddr, src_port: u16, dst_port: u16) -> Option<Answer> {
    let (kind, code) = (*message.first()?, *message.get(1)?);
    let invoking = message.get(8..)?;
    let udp_at = match from {
        IpAddr::V6(_) => {
            // RFC 4443: type 3 Time Exceeded, type 1 Destination
            // Unreachable (code 4: the port, so the destination itself).
            if !(kind == 3 || kind == 1) {
                return None;
            }
            if invoking.len() < wire::ipv6::HEADER_LEN {
                return None;
            }
            // Past any extension headers (a traced probe carries the trace
            // destination option).
            let first = wire::ipv6::Ipv6Packet::new_unchecked(invoking).next_header();
            let chain = &invoking[wire::ipv6::HEADER_LEN..];
            let end = wire::ipv6_ext_header::walk_chain(chain, first).ok()?;
            if end.protocol != IpProtocol::Udp {
                return None;
            }
            wire::ipv6::HEADER_LEN + end.offset
        }
        IpAddr::V4(_) => {
            // RFC 792: type 11 Time Exceeded, type 3 Destination
            // Unreachable (code 3: the port).
            if !(kind == 11 || kind == 3) {
                return None;
            }
            let ihl = usize::from(invoking.first()? & 0x0f) * 4;
            if invoking.get(9) != Some(&17) {
                return None;
            }
            ihl
        }
    };
    let udp = invoking.get(udp_at..udp_at + 4)?;
    if u16::from_be_bytes([udp[0], udp[1]]) != src_port
        || u16::from_be_bytes([udp[2], udp[3]]) != dst_port
    {
        return None;
    }
    let port_unreachable = match from {
        IpAddr::V6(_) => kind == 1 && code == 4,
        IpAddr::V4(_) => kind == 3 && code == 3,
    };
    Some(if kind == 3 && from.is_ipv6() || kind == 11 {
        Answer::TimeExceeded(from)
    } else {
        Answer::Unreachable {
            from,
            port: port_unreachable,
            mark: (!port_unreachable).then(|| unreachable_mark(from, code)),
        }
    })
}

/// Traceroute's mark for a Destination Unreachable code: RFC 792 and
/// RFC 1812 §5.2.7.1 for ICMPv4, RFC 4443 §3.1 for ICMPv6.
fn unreachable_mark(from: IpAddr, code: u8) -> &'static str {
    match (from, code) {
        (IpAddr::V4(_), 0 | 6 | 11) | (IpAddr::V6(_), 0) => "!N",
        (IpAddr::V4(_), 1 | 7 | 12) | (IpAddr::V6(_), 3) => "!H",
        (IpAddr::V4(_), 2) => "!P",
        (IpAddr::V4(_), 4) => "!F",
        (IpAddr::V4(_), 9 | 10 | 13) | (IpAddr::V6(_), 1 | 5 | 6) => "!A",
        (IpAddr::V6(_), 2) => "!S",
        _ => "!?",
    }
}

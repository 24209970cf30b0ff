//! UDP over the kernel's sockets, as the XTP study ran it: a start
//! sentinel, `count` sequence-numbered datagrams (paced with `--rate`),
//! then repeated end sentinels carrying the number sent; the receiver
//! counts loss, duplication, reordering and corruption.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::socket::{self, bind, peer_error};
use super::SocketFacts;
use crate::cpu::{CpuMeter, CpuUsage};
use crate::datagram::{self, Kind};
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pace::Pacer;
use crate::pattern::Pattern;
use crate::report::{ReceiverSide, SenderSide};
use crate::session::ReceiveSession;
use crate::spec::{Protocol, TransferSpec};
use crate::verify::Arrival;

/// Start sentinels are sent this many times, `SENTINEL_GAP` apart, so
/// one lost sentinel does not lose the run.
pub const SENTINEL_REPEATS: usize = 5;
pub const SENTINEL_GAP: Duration = Duration::from_millis(2);
/// The end sentinel is repeated every `SENTINEL_GAP` until the receiver
/// acknowledges it (it echoes the sentinel back) or this long has passed:
/// a backlog in a queue can swallow any fixed number of sentinels, and a
/// receiver without one counts no loss after the last datagram it saw.
pub const END_WAIT: Duration = Duration::from_secs(2);
/// A bound receiver, ready before the sender starts.
pub struct Bound {
    socket: UdpSocket,
    pub facts: SocketFacts,
}

pub fn bind_receiver(spec: &TransferSpec, addr: SocketAddr) -> Result<Bound, TrafficError> {
    let socket = socket::open(Protocol::Udp, addr, spec.sockbuf)?;
    bind(&socket, addr)?;
    let facts = SocketFacts {
        granted: socket::granted(&socket),
        congestion_control: None,
    };
    Ok(Bound {
        socket: socket.into(),
        facts,
    })
}

/// Receives until the end sentinel, or until `spec.timeout` passes without
/// a datagram once traffic started (every end sentinel lost).
pub fn receive(
    bound: Bound,
    spec: &TransferSpec,
    pattern: &Pattern,
    meter: &Meter,
) -> Result<ReceiverSide, TrafficError> {
    let socket = bound.socket;
    // Short reads keep the deadlines responsive.
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
    let mut buf = vec![0u8; 65_536];
    let mut session = ReceiveSession::new(spec.circuit);
    loop {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                if let Arrival::End { .. } = session.arrival(pattern, &buf[..n], meter) {
                    // The acknowledgement: the sentinel, echoed.
                    let _ = socket.send_to(&buf[..n], from);
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if session.quiet(spec.timeout, "waiting for the first datagram")? {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TrafficError::io("receive", e)),
        }
    }
    Ok(session.finish())
}

/// Sends the start sentinels and the data datagrams (paced with
/// `--rate`) through `send`, the part every datagram sender shares: at
/// least `count`, and on until the minimum duration has passed. Returns
/// the number sent, the sender's window (first datagram to the last one
/// handed to the stack) and the CPU it took.
pub(super) fn send_start_and_data(
    spec: &TransferSpec,
    pattern: &Pattern,
    meter: &Meter,
    buf: &mut [u8],
    send: impl Fn(&[u8]) -> Result<(), TrafficError>,
) -> Result<(u64, Duration, CpuUsage), TrafficError> {
    for _ in 0..SENTINEL_REPEATS {
        datagram::write(buf, Kind::Start, spec.count, spec.circuit, pattern);
        send(buf)?;
        std::thread::sleep(SENTINEL_GAP);
    }
    let cpu = CpuMeter::start();
    let start = Instant::now();
    let mut pacer = spec.rate_bps.map(Pacer::new);
    let mut seq = 0;
    while spec.keep_sending(seq, start.elapsed()) {
        if let Some(pacer) = &mut pacer {
            pacer.wait();
            pacer.sent(spec.len);
        }
        datagram::write(buf, Kind::Data, seq, spec.circuit, pattern);
        send(buf)?;
        meter.add_sent(spec.len as u64);
        seq += 1;
    }
    Ok((seq, start.elapsed(), cpu.stop()))
}

/// Repeats the end sentinel until the receiver echoes it back, for at
/// most [`END_WAIT`]. A receiver that never acknowledges (lost answer, or
/// gone) costs that wait, nothing more.
fn end_until_acknowledged(
    socket: &UdpSocket,
    buf: &mut [u8],
    spec: &TransferSpec,
    sent: u64,
    pattern: &Pattern,
) {
    datagram::write(buf, Kind::End, sent, spec.circuit, pattern);
    let _ = socket.set_read_timeout(Some(SENTINEL_GAP));
    let mut answer = [0u8; 64];
    let start = Instant::now();
    while start.elapsed() < END_WAIT {
        // Errors (the receiver's port already closed) end nothing early:
        // the acknowledgement may still be on its way.
        let _ = socket.send(buf);
        if let Ok(n) = socket.recv(&mut answer) {
            if matches!(datagram::parse_header(&answer[..n]), Ok(h) if h.kind == Kind::End) {
                return;
            }
        }
    }
}

/// Sends the start sentinels, `count` data datagrams and the end
/// sentinels to `dest`.
pub fn transmit(
    spec: &TransferSpec,
    dest: SocketAddr,
    pattern: &Pattern,
    meter: &Meter,
) -> Result<(SenderSide, SocketFacts), TrafficError> {
    let local: SocketAddr = match dest {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = socket::open(Protocol::Udp, local, spec.sockbuf)?;
    // Connected, so ICMP errors (port unreachable) come back as errors.
    socket
        .connect(&dest.into())
        .map_err(|e| peer_error(e, dest, spec.timeout))?;
    let facts = SocketFacts {
        granted: socket::granted(&socket),
        congestion_control: None,
    };
    let socket: UdpSocket = socket.into();
    let mut buf = vec![0u8; spec.len];
    let send = |buf: &[u8]| -> Result<(), TrafficError> {
        let mut full_since: Option<Instant> = None;
        loop {
            match socket.send(buf) {
                Ok(_) => return Ok(()),
                // The device queue is full: wait for it, as a blocking
                // socket waits for its buffer, but not forever.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    let since = *full_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= spec.timeout {
                        return Err(TrafficError::timeout(
                            spec.timeout,
                            "waiting for the device queue to take a datagram",
                        ));
                    }
                    std::thread::yield_now();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(peer_error(e, dest, spec.timeout)),
            }
        }
    };
    let (sent, elapsed, cpu) = send_start_and_data(spec, pattern, meter, &mut buf, send)?;
    end_until_acknowledged(&socket, &mut buf, spec, sent, pattern);
    Ok((
        SenderSide {
            bytes: sent * spec.len as u64,
            datagrams: sent,
            elapsed,
            cpu,
            retransmits: None,
        },
        facts,
    ))
}

//! TCP over the kernel's sockets: ttcp's transmitter writes `count`
//! buffers of `len` pattern bytes; the receiver reads `len`-byte buffers
//! until the sender closes, checking every byte.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use socket2::Socket;

use super::socket::{self, bind, peer_error};
use super::SocketFacts;
use crate::cpu::CpuMeter;
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pattern::Pattern;
use crate::report::{Received, ReceiverSide, SenderSide};
use crate::spec::{Protocol, TransferSpec};
use crate::verify::StreamVerifier;

/// A bound, listening receiver, ready before the sender starts.
pub struct Listening {
    listener: TcpListener,
    pub facts: SocketFacts,
}

/// Binds and listens on `addr` with the spec's buffer sizes (set on the
/// listener, so accepted connections inherit them and the window scale
/// in the SYN-ACK covers them).
pub fn listen(spec: &TransferSpec, addr: SocketAddr) -> Result<Listening, TrafficError> {
    let socket = socket::open(Protocol::Tcp, addr, spec.sockbuf)?;
    socket
        .set_reuse_address(true)
        .map_err(|e| TrafficError::io("set SO_REUSEADDR", e))?;
    bind(&socket, addr)?;
    socket
        .listen(1)
        .map_err(|e| TrafficError::io(format!("listen on {addr}"), e))?;
    let facts = SocketFacts {
        granted: socket::granted(&socket),
        congestion_control: socket::congestion_control(&socket),
    };
    Ok(Listening {
        listener: socket.into(),
        facts,
    })
}

/// Accepts one connection and receives until the sender closes.
pub fn receive(
    listening: Listening,
    spec: &TransferSpec,
    pattern: &Pattern,
    meter: &Meter,
) -> Result<ReceiverSide, TrafficError> {
    let mut stream = accept(listening, spec.timeout)?;
    stream
        .set_read_timeout(Some(spec.timeout))
        .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
    let mut buf = vec![0u8; spec.len];
    let mut verifier = StreamVerifier::new();
    let cpu = CpuMeter::start();
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                last = Instant::now();
                first.get_or_insert(last);
                verifier.check(pattern, &buf[..n]);
                meter.add_received(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(TrafficError::timeout(
                    spec.timeout,
                    format!(
                        "waiting for data ({} of {} bytes received)",
                        verifier.counts().bytes,
                        spec.total_bytes()
                    ),
                ));
            }
            Err(e) => return Err(TrafficError::io("receive", e)),
        }
    }
    let cpu = cpu.stop();
    let counts = verifier.finish(pattern);
    let good = counts.bytes - counts.corrupted_bytes - counts.duplicated_bytes;
    Ok(ReceiverSide {
        bytes: good,
        elapsed: first.map_or(Duration::ZERO, |f| last - f),
        cpu,
        checks: Received::Stream(counts),
        drops: None,
    })
}

/// Accepts with a deadline (std's accept has none): the listener polls
/// non-blocking, which costs nothing measurable before the transfer.
pub(super) fn accept(listening: Listening, timeout: Duration) -> Result<TcpStream, TrafficError> {
    let listener = listening.listener;
    listener
        .set_nonblocking(true)
        .map_err(|e| TrafficError::io("set the listener non-blocking", e))?;
    let deadline = Instant::now() + timeout;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| TrafficError::io("set the connection blocking", e))?;
                return Ok(stream);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(TrafficError::timeout(
                        timeout,
                        "waiting for the sender to connect",
                    ));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TrafficError::io("accept", e)),
        }
    }
}

/// Opens a TCP connection to `dest` with the given buffer sizes and
/// TCP_NODELAY, waiting at most `timeout`; also what the socket was
/// granted.
pub(super) fn connect(
    dest: SocketAddr,
    sockbuf: Option<usize>,
    nodelay: bool,
    timeout: Duration,
) -> Result<(TcpStream, SocketFacts), TrafficError> {
    let socket: Socket = socket::open(Protocol::Tcp, dest, sockbuf)?;
    socket
        .set_tcp_nodelay(nodelay)
        .map_err(|e| TrafficError::io("set TCP_NODELAY", e))?;
    socket
        .connect_timeout(&dest.into(), timeout)
        .map_err(|e| peer_error(e, dest, timeout))?;
    let facts = SocketFacts {
        granted: socket::granted(&socket),
        congestion_control: socket::congestion_control(&socket),
    };
    Ok((socket.into(), facts))
}

/// Waits until the kernel says every byte written was acknowledged
/// (`SIOCOUTQ` at 0). Spins with yields: the wait is part of the measured
/// window, and a sleep would add its own granularity to it.
fn wait_until_acknowledged(stream: &TcpStream, timeout: Duration) -> Result<(), TrafficError> {
    let since = Instant::now();
    while socket::unacknowledged_bytes(stream).is_some_and(|n| n > 0) {
        if since.elapsed() > timeout {
            return Err(TrafficError::timeout(
                timeout,
                "waiting for the receiver to acknowledge the last bytes",
            ));
        }
        std::thread::yield_now();
    }
    Ok(())
}

/// Connects to `dest` and writes `count` buffers of `len` pattern bytes
/// (more while the minimum duration has not passed).
pub fn transmit(
    spec: &TransferSpec,
    dest: SocketAddr,
    pattern: &Pattern,
    meter: &Meter,
) -> Result<(SenderSide, SocketFacts), TrafficError> {
    let (mut stream, facts) = connect(dest, spec.sockbuf, spec.nodelay, spec.timeout)?;
    stream
        .set_write_timeout(Some(spec.timeout))
        .map_err(|e| TrafficError::io("set SO_SNDTIMEO", e))?;
    let cpu = CpuMeter::start();
    let start = Instant::now();
    let mut offset = 0u64;
    let mut writes = 0u64;
    while spec.keep_sending(writes, start.elapsed()) {
        stream
            .write_all(pattern.at(offset, spec.len))
            .map_err(|e| match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => TrafficError::timeout(
                    spec.timeout,
                    format!("sending: the receiver stopped reading after {offset} bytes"),
                ),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                    TrafficError::Invalid(format!(
                        "the receiver closed the connection after {offset} of {} bytes \
                         (is it a stackscope ttcp -r?)",
                        spec.total_bytes()
                    ))
                }
                _ => TrafficError::io(format!("send (after {offset} bytes)"), e),
            })?;
        offset += spec.len as u64;
        writes += 1;
        meter.add_sent(spec.len as u64);
    }
    // iperf3's sender window ends when the last byte is acknowledged,
    // not when the last write returns (that only filled the buffer).
    wait_until_acknowledged(&stream, spec.timeout)?;
    let elapsed = start.elapsed();
    let cpu = cpu.stop();
    // Close our half and wait for the receiver's close, so both sides are
    // done when this returns.
    let _ = stream.shutdown(Shutdown::Write);
    stream
        .set_read_timeout(Some(spec.timeout))
        .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
    let mut sink = [0u8; 64];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    let retransmits = socket::total_retransmits(&stream);
    Ok((
        SenderSide {
            bytes: offset,
            datagrams: 0,
            elapsed,
            cpu,
            retransmits,
        },
        facts,
    ))
}

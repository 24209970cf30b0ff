//! Delay mode on the kernel's sockets: a server thread echoes every
//! request back (in the receiver's namespace with `--netns`), the client
//! times each round trip.
//!
//! TCP: requests and answers are `len` pattern bytes on one connection
//! with TCP_NODELAY on both ends (otherwise Nagle and delayed ACKs would
//! be what is measured). UDP: each request is a test datagram of kind
//! Echo numbered by its exchange; a late answer to an earlier exchange is
//! ignored, a missing one counts as lost after [`answer_wait`].

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::netns::Side;
use super::socket::{self, bind, peer_error};
use super::{joined, pattern_for, KernelPath, PathSetup, SocketFacts};
use crate::datagram::{self, Kind};
use crate::echo::{answer_wait, EchoReport};
use crate::env::Environment;
use crate::error::TrafficError;
use crate::pattern::Pattern;
use crate::spec::{EchoSpec, Protocol, StackKind};

/// Runs `spec.count` exchanges between a server and a client thread over
/// `path`.
pub fn run_pair(spec: &EchoSpec, path: KernelPath) -> Result<EchoReport, TrafficError> {
    spec.validate()?;
    if spec.protocol == Protocol::Raw {
        return Err(TrafficError::Unsupported(
            "raw-frame echo runs on the reference stack (--stack ref); the kernel target \
             measures raw frames in throughput mode"
                .into(),
        ));
    }
    let setup = PathSetup::new(path)?;
    let addr = SocketAddr::new(setup.receiver_ip(spec.family), spec.port);
    let pattern = Arc::new(pattern_for(spec.len));
    let (ready_tx, ready_rx) = mpsc::channel();
    let server = {
        let (spec, setup) = (spec.clone(), setup.clone());
        std::thread::spawn(move || -> Result<(), TrafficError> {
            setup.enter(Side::A)?;
            let served = match spec.protocol {
                Protocol::Tcp => serve_tcp(&spec, addr, &ready_tx),
                _ => serve_udp(&spec, addr, &ready_tx),
            };
            // Unblock the client even if the server failed before it
            // was ready.
            let _ = ready_tx.send(false);
            served
        })
    };
    let ready = ready_rx.recv().unwrap_or(false);
    let client = if ready {
        let (spec, setup, pattern) = (spec.clone(), setup.clone(), pattern.clone());
        let client = std::thread::spawn(move || -> Result<Exchanges, TrafficError> {
            setup.enter(Side::B)?;
            match spec.protocol {
                Protocol::Tcp => exchange_tcp(&spec, addr, &pattern),
                _ => exchange_udp(&spec, addr, &pattern),
            }
        });
        joined(client, "echo client")
    } else {
        Err(TrafficError::Invalid(
            "the echo server did not start".into(),
        ))
    };
    // The server's error explains a client failure, not the reverse.
    joined(server, "echo server")?;
    let Exchanges {
        rtt_ns,
        lost,
        corrupted,
        facts,
    } = client?;
    let mut target = Environment::detect(StackKind::Kernel, setup.description());
    target.mtu = Some(setup.mtu());
    target.sockbuf_granted = facts.granted;
    target.congestion_control = facts.congestion_control;
    Ok(EchoReport {
        spec: spec.clone(),
        target,
        rtt_ns,
        lost,
        corrupted,
    })
}

/// What the client measured, and what its socket was granted.
struct Exchanges {
    rtt_ns: Vec<u64>,
    lost: u64,
    corrupted: u64,
    facts: SocketFacts,
}

fn serve_tcp(
    spec: &EchoSpec,
    addr: SocketAddr,
    ready: &mpsc::Sender<bool>,
) -> Result<(), TrafficError> {
    let listening = super::stream::listen_socket(&spec.as_transfer(), addr)?;
    let _ = ready.send(true);
    let mut stream = super::stream::accept(listening, spec.timeout)?;
    stream
        .set_nodelay(true)
        .map_err(|e| TrafficError::io("set TCP_NODELAY", e))?;
    stream
        .set_read_timeout(Some(spec.timeout))
        .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
    let mut buf = vec![0u8; spec.len];
    loop {
        match read_exact_or_eof(&mut stream, &mut buf) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(TrafficError::io("echo server: receive", e)),
        }
        stream
            .write_all(&buf)
            .map_err(|e| TrafficError::io("echo server: send", e))?;
    }
}

/// Fills `buf`; false on a clean end of stream before its first byte.
fn read_exact_or_eof(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn exchange_tcp(
    spec: &EchoSpec,
    addr: SocketAddr,
    pattern: &Pattern,
) -> Result<Exchanges, TrafficError> {
    let (mut stream, facts) = super::stream::connect(addr, spec.sockbuf, true, spec.timeout)?;
    stream
        .set_read_timeout(Some(spec.timeout))
        .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
    let mut answer = vec![0u8; spec.len];
    let mut rtts = Vec::with_capacity(spec.count as usize);
    let mut corrupted = 0;
    for i in 0..spec.count {
        let request = pattern.at(i * spec.len as u64, spec.len);
        let start = Instant::now();
        stream
            .write_all(request)
            .map_err(|e| TrafficError::io("echo: send request", e))?;
        match read_exact_or_eof(&mut stream, &mut answer) {
            Ok(true) => {}
            Ok(false) => {
                return Err(TrafficError::Invalid(
                    "echo: the server closed the connection".into(),
                ))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(TrafficError::timeout(
                    spec.timeout,
                    format!("waiting for the answer to exchange {i}"),
                ))
            }
            Err(e) => return Err(TrafficError::io("echo: receive answer", e)),
        }
        rtts.push(start.elapsed().as_nanos() as u64);
        if answer != request {
            corrupted += 1;
        }
    }
    Ok(Exchanges {
        rtt_ns: rtts,
        lost: 0,
        corrupted,
        facts,
    })
}

fn serve_udp(
    spec: &EchoSpec,
    addr: SocketAddr,
    ready: &mpsc::Sender<bool>,
) -> Result<(), TrafficError> {
    let socket = socket::open(Protocol::Udp, addr, spec.sockbuf)?;
    bind(&socket, addr)?;
    let socket: UdpSocket = socket.into();
    socket
        .set_read_timeout(Some(spec.timeout))
        .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
    let _ = ready.send(true);
    let mut buf = vec![0u8; 65_536];
    loop {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => match datagram::parse_header(&buf[..n]) {
                Ok(header) if header.kind == Kind::End => return Ok(()),
                // Echo anything else, damaged or not: the client judges.
                _ => {
                    let _ = socket.send_to(&buf[..n], from);
                }
            },
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                // The client went quiet without saying goodbye.
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TrafficError::io("echo server: receive", e)),
        }
    }
}

fn exchange_udp(
    spec: &EchoSpec,
    addr: SocketAddr,
    pattern: &Pattern,
) -> Result<Exchanges, TrafficError> {
    let local: SocketAddr = match addr {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = socket::open(Protocol::Udp, local, spec.sockbuf)?;
    socket
        .connect(&addr.into())
        .map_err(|e| peer_error(e, addr, spec.timeout))?;
    let facts = SocketFacts {
        granted: socket::granted(&socket),
        congestion_control: None,
    };
    let socket: UdpSocket = socket.into();
    let wait = answer_wait(spec);
    let mut request = vec![0u8; spec.len];
    let mut answer = vec![0u8; 65_536];
    let mut rtts = Vec::with_capacity(spec.count as usize);
    let (mut lost, mut corrupted) = (0, 0);
    for seq in 0..spec.count {
        datagram::write(&mut request, Kind::Echo, seq, 0, pattern);
        let start = Instant::now();
        socket
            .send(&request)
            .map_err(|e| peer_error(e, addr, spec.timeout))?;
        loop {
            let left = wait.saturating_sub(start.elapsed());
            if left.is_zero() {
                lost += 1;
                break;
            }
            socket
                .set_read_timeout(Some(left.max(Duration::from_micros(1))))
                .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
            match socket.recv(&mut answer) {
                Ok(n) => {
                    let elapsed = start.elapsed();
                    match datagram::check(&answer[..n], pattern) {
                        Ok(h) if h.kind == Kind::Echo && h.seq == seq && n == spec.len => {
                            rtts.push(elapsed.as_nanos() as u64);
                            break;
                        }
                        // A late answer to an earlier exchange.
                        Ok(h) if h.kind == Kind::Echo && h.seq < seq => {}
                        _ => corrupted += 1,
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(peer_error(e, addr, spec.timeout)),
            }
        }
    }
    datagram::write(&mut request, Kind::End, spec.count, 0, pattern);
    for _ in 0..super::udp::SENTINEL_REPEATS {
        let _ = socket.send(&request);
    }
    Ok(Exchanges {
        rtt_ns: rtts,
        lost,
        corrupted,
        facts,
    })
}

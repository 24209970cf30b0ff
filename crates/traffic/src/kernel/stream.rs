//! TCP over the kernel's sockets: the stream programs
//! ([`crate::program::stream`]) driven on the calling thread, the
//! receiver reading `len`-byte buffers as ttcp does.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;

use super::net::{drive, KernelNet};
use super::socket::{self, bind, peer_error};
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pattern::Pattern;
use crate::program::stream::{Shared, StreamReceiver, StreamSender};
use crate::program::{Program, Rendezvous, Step};
use crate::report::{ReceiverSide, SenderSide};
use crate::spec::{Protocol, TransferSpec};
use crate::transport::{Peer, SocketFacts};

/// A receiver listening, ready before the sender starts.
pub struct Receiving {
    net: KernelNet,
    program: StreamReceiver<KernelNet>,
}

impl Receiving {
    /// What the listener was granted.
    pub fn facts(&self) -> SocketFacts {
        self.program.facts().clone()
    }
}

fn shared(
    spec: &TransferSpec,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
    rendezvous: Rendezvous,
) -> Shared {
    Shared {
        spec: spec.clone(),
        pattern: pattern.clone(),
        meter: meter.clone(),
        rendezvous: Arc::new(rendezvous),
        address_grace: Duration::ZERO,
    }
}

/// Listens on `addr` (the first step of the receiving program), so a
/// port in use or an address not here is reported before the sender
/// starts.
pub fn listen(
    spec: &TransferSpec,
    addr: SocketAddr,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
) -> Result<Receiving, TrafficError> {
    let mut net = KernelNet::new();
    let mut program = StreamReceiver::new(
        shared(spec, pattern, meter, Rendezvous::default()),
        addr,
        spec.len,
    );
    if let Step::Done(Err(e)) = program.step(&mut net) {
        return Err(e);
    }
    Ok(Receiving { net, program })
}

/// Accepts one connection and receives until the sender closes.
pub fn receive(mut receiving: Receiving) -> Result<(ReceiverSide, SocketFacts), TrafficError> {
    let ended = drive(&mut receiving.net, &mut receiving.program)?;
    Ok((ended.side, ended.facts))
}

/// Connects to `dest` and writes `count` buffers of `len` pattern bytes
/// (more while the minimum duration has not passed).
pub fn transmit(
    spec: &TransferSpec,
    dest: SocketAddr,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
) -> Result<(SenderSide, SocketFacts), TrafficError> {
    let rendezvous = Rendezvous::with_receiver(Peer::Ip(dest));
    let mut program = StreamSender::new(shared(spec, pattern, meter, rendezvous));
    let ended = drive(&mut KernelNet::new(), &mut program)?;
    Ok((ended.side, ended.facts))
}

/// A bound, listening socket (the echo server's).
pub struct Listening {
    listener: TcpListener,
    pub facts: SocketFacts,
}

/// Binds and listens on `addr` with the spec's buffer sizes (set on the
/// listener, so accepted connections inherit them and the window scale
/// in the SYN-ACK covers them).
pub fn listen_socket(spec: &TransferSpec, addr: SocketAddr) -> Result<Listening, TrafficError> {
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

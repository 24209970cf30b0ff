//! A traced kernel transfer across a veth pair: messages from namespace B
//! to namespace A over IPv6 or IPv4, with the flow registered with the probes
//! after the sockets exist and before the first byte. Used by the tests
//! and by `stackscope ktrace`.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc;
use std::time::Duration;

use traffic::kernel::netns::{Side, VethPair};
use traffic::spec::Family;

use crate::error::KernelProbeError;
use crate::session::{netns_inode, KernelProbes};
use crate::transfer_io::{accept_within, entered, failed, gone};

/// How long a side waits for the other (connect, a datagram, a read).
const TIMEOUT: Duration = Duration::from_secs(5);

/// What a transfer moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    /// Messages sent.
    pub sent: usize,
    /// Messages received whole.
    pub received: usize,
}

/// The inodes of the pair's namespaces, receiver (A) first.
pub fn namespace_inodes(pair: &VethPair) -> Result<[u32; 2], KernelProbeError> {
    Ok([
        netns_inode(format!("/run/netns/{}", pair.namespace(Side::A)))?,
        netns_inode(format!("/run/netns/{}", pair.namespace(Side::B)))?,
    ])
}

/// `count` TCP messages of `len` bytes from B to A over `family`
/// (no-delay, one write each), traced as `flow`.
pub fn tcp(
    pair: &VethPair,
    probes: &mut KernelProbes,
    family: Family,
    len: usize,
    count: usize,
    flow: u32,
) -> Result<Moved, KernelProbeError> {
    run(&Tcp, pair, probes, family, len, count, flow)
}

/// `count` UDP datagrams of `len` bytes from B to A over `family`, traced
/// as `flow`.
/// A datagram lost (none arrives for five seconds) ends the count.
pub fn udp(
    pair: &VethPair,
    probes: &mut KernelProbes,
    family: Family,
    len: usize,
    count: usize,
    flow: u32,
) -> Result<Moved, KernelProbeError> {
    run(&Udp, pair, probes, family, len, count, flow)
}

/// What differs between a TCP and a UDP transfer: how each side opens its
/// socket and moves the messages. The rest (namespaces, the flow's
/// registration before the first byte, the threads) is [`run`]'s.
trait Carrier: Sync {
    /// The receiver's socket once bound (TCP: the listener).
    type Bound: Send;
    /// The sender's socket.
    type Sending: Send;
    /// Sockets without a peer (UDP's `send_to`): their socket-level
    /// events carry no peer port, so each is also registered by its own.
    const UNCONNECTED: bool;

    /// Binds the receiver to `addr` and says the address it got.
    fn bind(&self, addr: SocketAddr) -> Result<(Self::Bound, SocketAddr), KernelProbeError>;
    /// Receives up to `count` messages of `len` bytes: how many came whole.
    fn receive(
        &self,
        bound: Self::Bound,
        len: usize,
        count: usize,
    ) -> Result<usize, KernelProbeError>;
    /// Opens the sender's socket from `local` to `server`, with its port.
    fn open(
        &self,
        local: IpAddr,
        server: SocketAddr,
    ) -> Result<(Self::Sending, u16), KernelProbeError>;
    /// Sends `count` copies of `message`.
    fn send(
        &self,
        socket: &mut Self::Sending,
        server: SocketAddr,
        message: &[u8],
        count: usize,
    ) -> Result<(), KernelProbeError>;
}

struct Tcp;

impl Carrier for Tcp {
    type Bound = TcpListener;
    type Sending = TcpStream;
    const UNCONNECTED: bool = false;

    fn bind(&self, addr: SocketAddr) -> Result<(TcpListener, SocketAddr), KernelProbeError> {
        let listener = TcpListener::bind(addr).map_err(failed("bind"))?;
        let local = listener.local_addr().map_err(failed("address"))?;
        Ok((listener, local))
    }

    fn receive(
        &self,
        listener: TcpListener,
        len: usize,
        count: usize,
    ) -> Result<usize, KernelProbeError> {
        let mut conn = accept_within(&listener, TIMEOUT)?;
        conn.set_read_timeout(Some(TIMEOUT))
            .map_err(failed("timeout"))?;
        let mut buf = vec![0u8; len];
        for done in 0..count {
            if conn.read_exact(&mut buf).is_err() {
                return Ok(done);
            }
        }
        Ok(count)
    }

    fn open(
        &self,
        _local: IpAddr,
        server: SocketAddr,
    ) -> Result<(TcpStream, u16), KernelProbeError> {
        let conn = TcpStream::connect_timeout(&server, TIMEOUT).map_err(failed("connect"))?;
        conn.set_nodelay(true).map_err(failed("no-delay"))?;
        let port = conn.local_addr().map_err(failed("address"))?.port();
        Ok((conn, port))
    }

    fn send(
        &self,
        conn: &mut TcpStream,
        _server: SocketAddr,
        message: &[u8],
        count: usize,
    ) -> Result<(), KernelProbeError> {
        for _ in 0..count {
            conn.write_all(message).map_err(failed("write"))?;
        }
        Ok(())
    }
}

struct Udp;

impl Carrier for Udp {
    type Bound = UdpSocket;
    type Sending = UdpSocket;
    const UNCONNECTED: bool = true;

    fn bind(&self, addr: SocketAddr) -> Result<(UdpSocket, SocketAddr), KernelProbeError> {
        let socket = UdpSocket::bind(addr).map_err(failed("bind"))?;
        socket
            .set_read_timeout(Some(TIMEOUT))
            .map_err(failed("timeout"))?;
        let local = socket.local_addr().map_err(failed("address"))?;
        Ok((socket, local))
    }

    fn receive(
        &self,
        socket: UdpSocket,
        len: usize,
        count: usize,
    ) -> Result<usize, KernelProbeError> {
        let mut buf = vec![0u8; len + 1];
        let mut whole = 0;
        for _ in 0..count {
            match socket.recv(&mut buf) {
                Ok(got) if got == len => whole += 1,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        Ok(whole)
    }

    fn open(
        &self,
        local: IpAddr,
        _server: SocketAddr,
    ) -> Result<(UdpSocket, u16), KernelProbeError> {
        let socket = UdpSocket::bind(SocketAddr::new(local, 0)).map_err(failed("bind"))?;
        let port = socket.local_addr().map_err(failed("address"))?.port();
        Ok((socket, port))
    }

    fn send(
        &self,
        socket: &mut UdpSocket,
        server: SocketAddr,
        message: &[u8],
        count: usize,
    ) -> Result<(), KernelProbeError> {
        for _ in 0..count {
            socket.send_to(message, server).map_err(failed("send"))?;
        }
        Ok(())
    }
}

/// The transfer: the receiver in A binds and says its address; the sender
/// in B opens its socket and says its port; the flow is registered in both
/// namespaces; only then does the sender send. The sender's socket is kept
/// open until the receiver is done.
fn run<C: Carrier>(
    carrier: &C,
    pair: &VethPair,
    probes: &mut KernelProbes,
    family: Family,
    len: usize,
    count: usize,
    flow: u32,
) -> Result<Moved, KernelProbeError> {
    let ns = namespace_inodes(pair)?;
    let (server_tx, server_rx) = mpsc::channel();
    let (client_tx, client_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let server = s.spawn(move || -> Result<usize, KernelProbeError> {
            entered(pair, Side::A)?;
            let (bound, local) = carrier.bind(SocketAddr::new(pair.addr(Side::A, family), 0))?;
            let _ = server_tx.send(local);
            carrier.receive(bound, len, count)
        });
        let client = s.spawn(move || -> Result<C::Sending, KernelProbeError> {
            let server_addr: SocketAddr = server_rx.recv().map_err(|_| gone("receiver"))?;
            entered(pair, Side::B)?;
            let (mut socket, port) = carrier.open(pair.addr(Side::B, family), server_addr)?;
            let _ = client_tx.send((server_addr.port(), port));
            go_rx.recv().map_err(|_| gone("main"))?;
            carrier.send(&mut socket, server_addr, &vec![0x5au8; len], count)?;
            Ok(socket)
        });
        let registered = client_rx
            .recv()
            .map_err(|_| gone("sender"))
            .and_then(|ports| register(probes, ns, ports, flow, C::UNCONNECTED));
        // Dropping the go channel on failure releases the sender.
        if registered.is_ok() {
            let _ = go_tx.send(());
        }
        drop(go_tx);
        let received = server.join().map_err(|_| gone("receiver"))?;
        let sent = client.join().map_err(|_| gone("sender"))?;
        registered?;
        let (received, _socket) = (received?, sent?);
        Ok(Moved {
            sent: count,
            received,
        })
    })
}

/// Registers the port pair in both namespaces; an unconnected socket also
/// by its own port (receiver's first, in A).
fn register(
    probes: &mut KernelProbes,
    ns: [u32; 2],
    ports: (u16, u16),
    flow: u32,
    unconnected: bool,
) -> Result<(), KernelProbeError> {
    for inode in ns {
        probes.trace_flow(inode, ports.0, ports.1, flow)?;
    }
    if unconnected {
        probes.trace_socket(ns[0], ports.0, flow)?;
        probes.trace_socket(ns[1], ports.1, flow)?;
    }
    Ok(())
}

//! The kernel's sockets as a [`Transport`]: non-blocking, readiness by
//! `ppoll` between a program's steps ([`KernelNet::wait`]). `ppoll` rather than
//! epoll: a program holds one to three sockets, so registration buys
//! nothing, and its nanosecond time-out keeps paced sends and sentinels
//! on time where epoll's millisecond one would not.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::Socket;
use stack::time::Instant as Time;
use wire::ethernet::EthernetAddress;

use super::congestion;
use super::packet::PacketSocket;
use super::socket::{self, bind, peer_error};
use crate::congestion::Congestion;
use crate::error::TrafficError;
use crate::spec::{Family, Protocol, StackKind};
use crate::transport::{
    DatagramKind, DatagramOptions, Peer, Read, SocketFacts, StreamOptions, StreamProtocol,
    Transport,
};

/// A socket of the table.
struct Entry {
    socket: Sock,
    /// What it was granted, read when it was made.
    facts: SocketFacts,
    /// The last send found the buffer full (or a connect is under way):
    /// wait for it to become writable too.
    want_write: bool,
    /// Connected to this address, not yet known to be established.
    connecting: Option<SocketAddr>,
    /// The congestion control asked for (`-C`): a listener's connections
    /// must run it too.
    congestion: Option<Congestion>,
}

/// A stream socket (socket2's, for the TCP options) or a UDP one (std's,
/// whose `recv_from` reads into an initialised buffer).
enum Sock {
    Stream(Socket),
    /// A sender's socket (bound to port 0) is connected to its first
    /// destination, so ICMP errors (port unreachable) come back as errors.
    Udp {
        socket: std::net::UdpSocket,
        sender: bool,
        connected: Option<SocketAddr>,
    },
    Packet(PacketSocket),
}

impl Sock {
    fn fd(&self) -> std::os::fd::RawFd {
        match self {
            Sock::Stream(s) => s.as_raw_fd(),
            Sock::Udp { socket, .. } => socket.as_raw_fd(),
            Sock::Packet(p) => p.socket.as_raw_fd(),
        }
    }
}

/// The calling thread's kernel sockets, and the clock its programs read
/// (nanoseconds since it was made).
pub struct KernelNet {
    sockets: Vec<Option<Entry>>,
    epoch: std::time::Instant,
    /// `ppoll`'s array, kept between waits: a wait sits between every
    /// request and answer of an echo, so it allocates nothing.
    fds: Vec<libc::pollfd>,
}

impl Default for KernelNet {
    fn default() -> Self {
        Self {
            sockets: Vec::new(),
            epoch: std::time::Instant::now(),
            fds: Vec::new(),
        }
    }
}

/// Handles into [`KernelNet`]'s table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle(usize);

/// Waits shorter than this are spun, not slept: about what a wake-up
/// from a sleep costs here. Longer ones sleep, with the thread's timer
/// slack cut to 1 µs so the sleep ends near its time; the paced sender's
/// schedule is absolute, so a late wake-up sends the datagrams then due
/// back to back and the long-run rate stays exact. (Spinning every wait
/// under 200 µs, and the last 100 µs of longer ones, kept the schedule to
/// the microsecond but burnt 98 % of a CPU at 200 Mbit/s in 1400-byte
/// datagrams, where iperf3 takes 9 %.)
const SPIN_BELOW: Duration = Duration::from_micros(20);
/// The longest one wait lasts, so a program sees its time-outs and the
/// other side's failure.
const LONGEST_WAIT: Duration = Duration::from_millis(50);

impl KernelNet {
    pub fn new() -> Self {
        Self::default()
    }

    fn add(&mut self, socket: Sock, facts: SocketFacts) -> Handle {
        let entry = Entry {
            socket,
            facts,
            want_write: false,
            connecting: None,
            congestion: None,
        };
        match self.sockets.iter().position(Option::is_none) {
            Some(i) => {
                self.sockets[i] = Some(entry);
                Handle(i)
            }
            None => {
                self.sockets.push(Some(entry));
                Handle(self.sockets.len() - 1)
            }
        }
    }

    /// The stream socket behind `handle`, and its entry's flags.
    fn stream(&mut self, handle: Handle) -> Result<&mut Entry, TrafficError> {
        let entry = self.entry(handle)?;
        match entry.socket {
            Sock::Stream(_) => Ok(entry),
            _ => Err(TrafficError::Invalid(
                "a datagram socket used as a stream".into(),
            )),
        }
    }

    fn entry(&mut self, handle: Handle) -> Result<&mut Entry, TrafficError> {
        self.sockets
            .get_mut(handle.0)
            .and_then(Option::as_mut)
            .ok_or_else(|| TrafficError::Invalid("a closed socket was used".into()))
    }

    fn remove(&mut self, handle: Handle) {
        if let Some(slot) = self.sockets.get_mut(handle.0) {
            *slot = None;
        }
    }

    /// Waits until a socket is readable (or writable, where a send found
    /// it full), or `until`; at most 50 ms (`LONGEST_WAIT`).
    pub fn wait(&mut self, until: Option<Time>) {
        let until = until.map(|t| self.epoch + Duration::from_nanos(t.as_nanos()));
        let now = Instant::now();
        let longest = now + LONGEST_WAIT;
        let until = until.map_or(longest, |u| u.min(longest));
        if until <= now {
            return;
        }
        let left = until - now;
        if left < SPIN_BELOW {
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            return;
        }
        precise_sleeps();
        let fds = &mut self.fds;
        fds.clear();
        fds.extend(self.sockets.iter().flatten().map(|e| libc::pollfd {
            fd: e.socket.fd(),
            events: libc::POLLIN | if e.want_write { libc::POLLOUT } else { 0 },
            revents: 0,
        }));
        // Wake a little early and spin the rest, for the same reason.
        let sleep = left - SPIN_BELOW / 2;
        let timeout = libc::timespec {
            tv_sec: sleep.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(sleep.subsec_nanos() as i32),
        };
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds for the
        // call, `timeout` outlives it, and a null signal mask keeps the
        // thread's own.
        unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &timeout,
                std::ptr::null(),
            );
        }
    }
}

/// Cuts this thread's timer slack from the default 50 µs to 1 µs, once:
/// a paced sender's sleeps would otherwise end up to 50 µs late.
fn precise_sleeps() {
    thread_local! {
        static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    DONE.with(|done| {
        if !done.replace(true) {
            // SAFETY: PR_SET_TIMERSLACK takes a plain integer (ns) and
            // changes only the calling thread's slack; a refusal leaves
            // the default, which is only less precise.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0);
            }
        }
    });
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

fn nonblocking(socket: &Socket) -> Result<(), TrafficError> {
    socket
        .set_nonblocking(true)
        .map_err(|e| TrafficError::io("set the socket non-blocking", e))
}

/// Sends one UDP datagram (on the connected path when `connected`);
/// false when the socket buffer or the device queue is full.
fn udp_send(
    socket: &std::net::UdpSocket,
    data: &[u8],
    dest: SocketAddr,
    connected: bool,
) -> Result<bool, TrafficError> {
    loop {
        let sent = if connected {
            socket.send(data)
        } else {
            socket.send_to(data, dest)
        };
        match sent {
            Ok(_) => return Ok(true),
            // ENOBUFS: the device queue is full; wait for it as a blocking
            // socket waits for its buffer.
            Err(e) if would_block(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                return Ok(false)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(peer_error(e, dest, Duration::ZERO)),
        }
    }
}

/// The kernel's streams are TCP's.
fn refuse_xtp(options: StreamOptions) -> Result<(), TrafficError> {
    if options.protocol == StreamProtocol::Xtp {
        return Err(TrafficError::Unsupported(
            "the kernel has no XTP: run XTP on the reference stack (--stack ref)".into(),
        ));
    }
    Ok(())
}

/// The socket2 socket of a stream entry.
fn tcp(entry: &Entry) -> &Socket {
    match &entry.socket {
        Sock::Stream(socket) => socket,
        _ => unreachable!("checked by KernelNet::stream"),
    }
}

/// What a stream socket was granted and runs, read back from the kernel;
/// an error if it does not run the congestion control asked for.
fn stream_facts(socket: &Socket, asked: Option<Congestion>) -> Result<SocketFacts, TrafficError> {
    Ok(SocketFacts {
        congestion_control: congestion::running(socket, asked)?,
        granted: socket::granted(socket),
    })
}

/// A new TCP socket for `addr` with `options`' buffers and congestion
/// control, both set before connect or listen.
fn tcp_socket(addr: SocketAddr, options: StreamOptions) -> Result<Socket, TrafficError> {
    let socket = socket::open(Protocol::Tcp, addr, options.buffer)?;
    if let Some(c) = options.congestion {
        congestion::set(&socket, c)?;
    }
    Ok(socket)
}

/// Adds a stream socket that runs `options`' congestion control.
fn add_stream(
    net: &mut KernelNet,
    socket: Socket,
    asked: Option<Congestion>,
) -> Result<Handle, TrafficError> {
    let facts = stream_facts(&socket, asked)?;
    let handle = net.add(Sock::Stream(socket), facts);
    net.entry(handle)?.congestion = asked;
    Ok(handle)
}

impl Transport for KernelNet {
    type Listener = Handle;
    type Stream = Handle;
    type Datagrams = Handle;

    fn stack(&self) -> StackKind {
        StackKind::Kernel
    }

    fn now(&self) -> Time {
        Time::from_nanos(self.epoch.elapsed().as_nanos() as u64)
    }

    /// The kernel picks the source address per route: a program binds or
    /// connects to addresses it was given, so this says only that the
    /// family is usable.
    fn local_ip(&self, family: Family) -> Option<IpAddr> {
        Some(family.unspecified())
    }

    /// Read through an open packet socket on the interface (the
    /// program opens its socket before it asks).
    fn link_address(&self, interface: &str) -> Option<EthernetAddress> {
        self.sockets.iter().flatten().find_map(|e| match &e.socket {
            Sock::Packet(p) if interface.is_empty() || p.name() == interface => {
                p.hardware_address().ok().map(EthernetAddress)
            }
            _ => None,
        })
    }

    fn listen(
        &mut self,
        local: SocketAddr,
        options: StreamOptions,
    ) -> Result<Handle, TrafficError> {
        refuse_xtp(options)?;
        // The buffer sizes and congestion control on the listener, so
        // accepted connections inherit them and the window scale in the
        // SYN-ACK covers the buffers.
        let socket = tcp_socket(local, options)?;
        socket
            .set_reuse_address(true)
            .map_err(|e| TrafficError::io("set SO_REUSEADDR", e))?;
        if options.nodelay {
            socket
                .set_tcp_nodelay(true)
                .map_err(|e| TrafficError::io("set TCP_NODELAY", e))?;
        }
        bind(&socket, local)?;
        socket
            .listen(16)
            .map_err(|e| TrafficError::io(format!("listen on {local}"), e))?;
        nonblocking(&socket)?;
        add_stream(self, socket, options.congestion)
    }

    fn accept(&mut self, listener: Handle) -> Result<Option<Handle>, TrafficError> {
        let entry = self.stream(listener)?;
        let asked = entry.congestion;
        match tcp(entry).accept() {
            Ok((conn, _)) => {
                nonblocking(&conn)?;
                add_stream(self, conn, asked).map(Some)
            }
            Err(e) if would_block(&e) || e.kind() == io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(TrafficError::io("accept", e)),
        }
    }

    fn connect(
        &mut self,
        remote: SocketAddr,
        options: StreamOptions,
    ) -> Result<Handle, TrafficError> {
        refuse_xtp(options)?;
        let socket = tcp_socket(remote, options)?;
        socket
            .set_tcp_nodelay(options.nodelay)
            .map_err(|e| TrafficError::io("set TCP_NODELAY", e))?;
        nonblocking(&socket)?;
        match socket.connect(&remote.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) || would_block(&e) => {}
            Err(e) => return Err(peer_error(e, remote, Duration::ZERO)),
        }
        // Read after connect: a route may have chosen for the connection.
        let handle = add_stream(self, socket, options.congestion)?;
        let entry = self.entry(handle)?;
        entry.want_write = true;
        entry.connecting = Some(remote);
        Ok(handle)
    }

    fn established(&mut self, stream: Handle) -> Result<bool, TrafficError> {
        let entry = self.stream(stream)?;
        let Some(remote) = entry.connecting else {
            return Ok(true);
        };
        let socket = tcp(entry);
        if let Ok(Some(e)) | Err(e) = socket.take_error() {
            return Err(peer_error(e, remote, Duration::ZERO));
        }
        if socket.peer_addr().is_err() {
            return Ok(false);
        }
        entry.connecting = None;
        entry.want_write = false;
        Ok(true)
    }

    fn send(&mut self, stream: Handle, data: &[u8]) -> Result<usize, TrafficError> {
        let entry = self.stream(stream)?;
        loop {
            match tcp(entry).send_with_flags(data, libc::MSG_NOSIGNAL) {
                Ok(n) => {
                    entry.want_write = false;
                    return Ok(n);
                }
                Err(e) if would_block(&e) => {
                    entry.want_write = true;
                    return Ok(0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TrafficError::io("send", e)),
            }
        }
    }

    fn recv(&mut self, stream: Handle, buf: &mut [u8]) -> Result<Read, TrafficError> {
        let entry = self.stream(stream)?;
        loop {
            match io::Read::read(&mut tcp(entry), buf) {
                Ok(0) => return Ok(Read::End),
                Ok(n) => return Ok(Read::Data(n)),
                Err(e) if would_block(&e) => return Ok(Read::Nothing),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TrafficError::io("receive", e)),
            }
        }
    }

    fn shutdown(&mut self, stream: Handle) -> Result<(), TrafficError> {
        let entry = self.stream(stream)?;
        // A connection the peer reset already has nothing left to close.
        let _ = tcp(entry).shutdown(std::net::Shutdown::Write);
        Ok(())
    }

    fn unacknowledged(&mut self, stream: Handle) -> Option<u64> {
        let entry = self.stream(stream).ok()?;
        socket::unacknowledged_bytes(tcp(entry))
    }

    fn retransmits(&mut self, stream: Handle) -> Option<u64> {
        let entry = self.stream(stream).ok()?;
        socket::total_retransmits(tcp(entry))
    }

    fn tcp_info(&mut self, stream: Handle) -> Option<crate::transport::TcpInfo> {
        let entry = self.stream(stream).ok()?;
        socket::tcp_info(tcp(entry))
    }

    fn stream_addrs(&mut self, stream: Handle) -> Option<(SocketAddr, SocketAddr)> {
        let entry = self.stream(stream).ok()?;
        let socket = tcp(entry);
        let local = socket.local_addr().ok()?.as_socket()?;
        let remote = socket.peer_addr().ok()?.as_socket()?;
        Some((local, remote))
    }

    fn datagram_addr(&mut self, socket: Handle) -> Option<SocketAddr> {
        match &self.entry(socket).ok()?.socket {
            Sock::Udp { socket, .. } => socket.local_addr().ok(),
            _ => None,
        }
    }

    fn stream_facts(&mut self, stream: Handle) -> SocketFacts {
        self.entry(stream)
            .map(|e| e.facts.clone())
            .unwrap_or_default()
    }

    fn listener_facts(&mut self, listener: Handle) -> SocketFacts {
        self.stream_facts(listener)
    }

    fn close(&mut self, stream: Handle) {
        self.remove(stream);
    }

    fn close_listener(&mut self, listener: Handle) {
        self.remove(listener);
    }

    fn open_datagrams(
        &mut self,
        kind: &DatagramKind,
        options: DatagramOptions,
    ) -> Result<Handle, TrafficError> {
        let (socket, facts) = match kind {
            DatagramKind::Udp(local) => {
                let socket = socket::open(Protocol::Udp, *local, options.buffer)?;
                bind(&socket, *local)?;
                nonblocking(&socket)?;
                let facts = SocketFacts {
                    granted: socket::granted(&socket),
                    congestion_control: None,
                };
                let udp = Sock::Udp {
                    socket: socket.into(),
                    sender: local.port() == 0,
                    connected: None,
                };
                (udp, facts)
            }
            DatagramKind::Link {
                interface,
                ethertype,
            } => {
                if interface.is_empty() {
                    return Err(TrafficError::Invalid(
                        "link-level frames on the kernel need an interface".into(),
                    ));
                }
                let packet = PacketSocket::open(interface, *ethertype, options.buffer)?;
                let facts = SocketFacts {
                    granted: socket::granted(&packet.socket),
                    congestion_control: None,
                };
                (Sock::Packet(packet), facts)
            }
        };
        Ok(self.add(socket, facts))
    }

    fn send_to(&mut self, socket: Handle, data: &[u8], to: Peer) -> Result<bool, TrafficError> {
        let entry = self.entry(socket)?;
        let sent = match (&mut entry.socket, to) {
            (Sock::Packet(packet), Peer::Mac(mac)) => packet.send_to(data, mac.0)?,
            (
                Sock::Udp {
                    socket,
                    sender,
                    connected,
                },
                Peer::Ip(dest),
            ) => {
                if *sender && connected.is_none() {
                    socket
                        .connect(dest)
                        .map_err(|e| peer_error(e, dest, Duration::ZERO))?;
                    *connected = Some(dest);
                }
                udp_send(socket, data, dest, *connected == Some(dest))?
            }
            _ => {
                return Err(TrafficError::Invalid(
                    "a datagram for another kind of address".into(),
                ))
            }
        };
        entry.want_write = !sent;
        Ok(sent)
    }

    fn recv_from(
        &mut self,
        socket: Handle,
        buf: &mut [u8],
    ) -> Result<Option<(usize, Peer)>, TrafficError> {
        let entry = self.entry(socket)?;
        match &entry.socket {
            Sock::Packet(packet) => Ok(packet
                .recv_from(buf)?
                .map(|(n, mac)| (n, Peer::Mac(EthernetAddress(mac))))),
            Sock::Udp { socket, .. } => loop {
                match socket.recv_from(buf) {
                    Ok((n, from)) => return Ok(Some((n, Peer::Ip(from)))),
                    Err(e) if would_block(&e) => return Ok(None),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // A port unreachable for an earlier send: not this
                    // read's business.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                    Err(e) => return Err(TrafficError::io("receive", e)),
                }
            },
            Sock::Stream(_) => Err(TrafficError::Invalid(
                "a stream used as a datagram socket".into(),
            )),
        }
    }

    fn receive_queue_drops(&mut self, socket: Handle) -> Option<u64> {
        match &self.entry(socket).ok()?.socket {
            Sock::Packet(packet) => packet.drops(),
            _ => None,
        }
    }

    fn datagram_facts(&mut self, socket: Handle, _options: DatagramOptions) -> SocketFacts {
        self.entry(socket)
            .map(|e| e.facts.clone())
            .unwrap_or_default()
    }

    fn close_datagrams(&mut self, socket: Handle) {
        self.remove(socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A congestion control other than the system's default, so that
    /// running it shows the choice took.
    fn not_the_default() -> Congestion {
        let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
            .unwrap_or_default();
        let name = if default.trim() == "reno" {
            "cubic"
        } else {
            "reno"
        };
        Congestion::parse(name).unwrap()
    }

    /// The listener's choice is its accepted connection's (Linux keeps a
    /// choice made by setsockopt, `tcp_ca_openreq_child`), the
    /// connector's its own: both ends run it and say so.
    #[test]
    fn both_ends_of_a_connection_run_the_congestion_control_asked_for() {
        let asked = not_the_default();
        let options = StreamOptions {
            congestion: Some(asked),
            ..StreamOptions::default()
        };
        let mut net = KernelNet::new();
        let listener = net.listen("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let local = tcp(net.entry(listener).unwrap())
            .local_addr()
            .unwrap()
            .as_socket()
            .unwrap();
        let client = net.connect(local, options).unwrap();
        let began = Instant::now();
        let server = loop {
            if let Some(server) = net.accept(listener).unwrap() {
                break server;
            }
            assert!(began.elapsed() < Duration::from_secs(5), "no connection");
            net.wait(None);
        };
        for facts in [
            net.listener_facts(listener),
            net.stream_facts(client),
            net.stream_facts(server),
        ] {
            assert_eq!(facts.congestion_control.as_deref(), Some(asked.name()));
        }
    }
}

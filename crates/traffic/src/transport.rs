//! What a traffic program needs from a stack, and nothing more: streams
//! (listen, accept, connect, send, receive, shutdown), datagrams (UDP and
//! link-level frames), addresses, the clock and the counters a report
//! records. Every operation returns at once: "not now" is `Ok(None)` or
//! `Ok(0)`, never a blocked thread, so one program runs the same inside
//! the reference stack's poll loop (`reference::net`) and over the
//! kernel's non-blocking sockets (`kernel::net`).
//!
//! The shape follows smoltcp's socket API (poll-driven, handles into a
//! socket set) rather than `std::net`'s blocking one, because the
//! reference host is single-threaded and poll-driven: the trait adapts to
//! it, and the kernel adapter waits for readiness between steps.

use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use stack::time::Instant;

use wire::ethernet::EthernetAddress;

use crate::env::GrantedBuffers;
use crate::error::TrafficError;
use crate::spec::{Family, StackKind};

/// Where a datagram goes or came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A UDP socket address.
    Ip(SocketAddr),
    /// A link-level frame's station.
    Mac(EthernetAddress),
}

/// Which stream protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamProtocol {
    #[default]
    Tcp,
    /// XTP's connection service.
    Xtp,
}

/// Stream socket settings a program asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub protocol: StreamProtocol,
    /// XTP's association options (XTP only).
    pub xtp: crate::spec::XtpOptions,
    /// Send and receive buffer bytes (`-b`); the stack's default if `None`.
    pub buffer: Option<usize>,
    /// Nagle off (`-D`, and every echo).
    pub nodelay: bool,
    /// TCP's congestion control (`-C`); the stack's default if `None`.
    pub congestion: Option<crate::congestion::Congestion>,
}

/// What a datagram socket carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatagramKind {
    /// UDP bound to this address (port 0: any port).
    Udp(SocketAddr),
    /// Link-level frames of `ethertype` on `interface` (the stack's first
    /// interface when empty).
    Link { interface: String, ethertype: u16 },
}

/// Datagram socket settings a program asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DatagramOptions {
    /// Receive buffer bytes (`-b`); the stack's default if `None`.
    pub buffer: Option<usize>,
    /// The datagram size the program sends, so a stack that queues by
    /// count can size its queues.
    pub datagram_len: usize,
}

/// What a stream read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// This many bytes (at least one).
    Data(usize),
    /// Nothing now; more may come.
    Nothing,
    /// The peer closed its sending half: no more will come.
    End,
}

/// What a socket was granted and runs with, for the run's record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketFacts {
    pub granted: GrantedBuffers,
    pub congestion_control: Option<String>,
}

/// A TCP connection's state as iperf3 reports it per interval: from
/// `TCP_INFO` on the kernel, from the connection's control block on the
/// reference stack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Congestion window, bytes.
    pub snd_cwnd: u64,
    /// The peer's advertised window, bytes (0 when the stack does not say).
    pub snd_wnd: u64,
    /// Smoothed round-trip time and its variation, microseconds.
    pub rtt_us: u64,
    pub rttvar_us: u64,
    /// Segments retransmitted so far.
    pub retransmits: u64,
    /// The path MTU the connection uses (0 when unknown).
    pub pmtu: u64,
    /// The largest segment payload it sends, bytes.
    pub mss: u64,
}

/// A stack as traffic programs use it. Handles are small copies into the
/// stack's own socket table.
pub trait Transport {
    type Listener: Copy + Send + 'static;
    type Stream: Copy + Send + 'static;
    type Datagrams: Copy + Send + 'static;

    /// Which stack this is.
    fn stack(&self) -> StackKind;

    /// The stack's clock, read now: the real one (nanoseconds since the
    /// transport or its runner began), or a simulator's virtual one.
    /// Programs time everything with it, so they run under either.
    fn now(&self) -> Instant;

    /// The address of `family` this end uses, once it has one (the
    /// reference stack configures its addresses after it starts).
    fn local_ip(&self, family: Family) -> Option<IpAddr>;

    /// `interface`'s station address (the first interface when empty),
    /// once the link is up.
    fn link_address(&self, interface: &str) -> Option<EthernetAddress>;

    /// Listens on `local` for one or more connections.
    fn listen(
        &mut self,
        local: SocketAddr,
        options: StreamOptions,
    ) -> Result<Self::Listener, TrafficError>;

    /// A connection that arrived, if one did.
    fn accept(&mut self, listener: Self::Listener) -> Result<Option<Self::Stream>, TrafficError>;

    /// Starts connecting to `remote`; [`established`](Self::established)
    /// says when it is done.
    fn connect(
        &mut self,
        remote: SocketAddr,
        options: StreamOptions,
    ) -> Result<Self::Stream, TrafficError>;

    /// True once the connection is open; an error if it failed.
    fn established(&mut self, stream: Self::Stream) -> Result<bool, TrafficError>;

    /// Takes as much of `data` as the send buffer holds (0 when full).
    fn send(&mut self, stream: Self::Stream, data: &[u8]) -> Result<usize, TrafficError>;

    /// Reads what has arrived into `buf`.
    fn recv(&mut self, stream: Self::Stream, buf: &mut [u8]) -> Result<Read, TrafficError>;

    /// Whether the stream's interface lends and posts the application's
    /// buffers instead of copying them (XTP's character driver): then
    /// [`send_shared`](Self::send_shared) returns a write's whole length
    /// once the peer's reader took it, and [`recv_into`](Self::recv_into)
    /// hands back its own buffer.
    fn lends_buffers(&self, _stream: Self::Stream) -> bool {
        false
    }

    /// Writes `data`, held in a shared buffer. A lending interface
    /// references it (no copy) and returns 0 until the peer's reader took
    /// all of it, then its length: the caller offers the same bytes
    /// until then. Others copy, exactly as [`send`](Self::send).
    fn send_shared(&mut self, stream: Self::Stream, data: &Bytes) -> Result<usize, TrafficError> {
        self.send(stream, data)
    }

    /// Reads up to `len` bytes; after `Read::Data(n)` they are `buf[..n]`.
    /// A lending interface posts `buf` itself (it is empty meanwhile) and
    /// hands it back holding exactly what it got; others read into it as
    /// [`recv`](Self::recv), growing it to `len` first if shorter.
    fn recv_into(
        &mut self,
        stream: Self::Stream,
        buf: &mut Vec<u8>,
        len: usize,
    ) -> Result<Read, TrafficError> {
        if buf.len() < len {
            buf.resize(len, 0);
        }
        self.recv(stream, &mut buf[..len])
    }

    /// Closes the sending half (a FIN after what is queued).
    fn shutdown(&mut self, stream: Self::Stream) -> Result<(), TrafficError>;

    /// Bytes sent but not yet acknowledged by the peer (queued ones
    /// included), if the stack says.
    fn unacknowledged(&mut self, stream: Self::Stream) -> Option<u64>;

    /// Segments the connection retransmitted so far, if the stack says.
    fn retransmits(&mut self, stream: Self::Stream) -> Option<u64>;

    /// The connection's congestion window, RTT and retransmissions, if
    /// the stack says.
    fn tcp_info(&mut self, _stream: Self::Stream) -> Option<TcpInfo> {
        None
    }

    /// The connection's local and remote addresses, once it has them.
    fn stream_addrs(&mut self, _stream: Self::Stream) -> Option<(SocketAddr, SocketAddr)> {
        None
    }

    /// What the connection was granted.
    fn stream_facts(&mut self, stream: Self::Stream) -> SocketFacts;

    /// What the listener was granted (its connections inherit it).
    fn listener_facts(&mut self, listener: Self::Listener) -> SocketFacts;

    /// Releases a connection.
    fn close(&mut self, stream: Self::Stream);

    /// Stops listening.
    fn close_listener(&mut self, listener: Self::Listener);

    /// Opens a datagram socket.
    fn open_datagrams(
        &mut self,
        kind: &DatagramKind,
        options: DatagramOptions,
    ) -> Result<Self::Datagrams, TrafficError>;

    /// Queues one datagram for `to`; false when the socket or device
    /// queue is full (try again after a wait).
    fn send_to(
        &mut self,
        socket: Self::Datagrams,
        data: &[u8],
        to: Peer,
    ) -> Result<bool, TrafficError>;

    /// The next datagram into `buf` (cut to its length), with its sender.
    fn recv_from(
        &mut self,
        socket: Self::Datagrams,
        buf: &mut [u8],
    ) -> Result<Option<(usize, Peer)>, TrafficError>;

    /// What the datagram socket opened with `options` was granted (a
    /// stack that queues by count gives its queues in bytes of the
    /// program's datagrams).
    fn datagram_facts(&mut self, socket: Self::Datagrams, options: DatagramOptions) -> SocketFacts;

    /// Datagrams the socket's own receive queue dropped for want of room,
    /// where the stack counts them for the socket alone (and nowhere a
    /// run's other loss counters would count them again).
    fn receive_queue_drops(&mut self, _socket: Self::Datagrams) -> Option<u64> {
        None
    }

    /// The address a datagram socket is bound to, if the stack says.
    fn datagram_addr(&mut self, _socket: Self::Datagrams) -> Option<SocketAddr> {
        None
    }

    /// Releases a datagram socket.
    fn close_datagrams(&mut self, socket: Self::Datagrams);

    /// Tells programs on the other threads of the run that something they
    /// wait for changed (an address published, a side finished). Stacks
    /// whose threads wait on sockets need nothing.
    fn notify(&mut self) {}

    /// Says whether this end is in a series of request/response
    /// exchanges (delay mode's client, from its start to its last
    /// answer): a runner that would otherwise put its threads to sleep
    /// between polls keeps them polling meanwhile, so no exchange waits
    /// for a thread to wake. Stacks that run in their own threads (the
    /// kernel's) need nothing.
    fn awaiting(&mut self, _on: bool) {}

    /// One measured exchange begins (`true`: its request is offered) or
    /// ends (`false`: its answer is in), so the runner can count the naps
    /// its threads took inside it ([`naps_in_exchanges`](Self::naps_in_exchanges)).
    fn exchange(&mut self, _in_flight: bool) {}

    /// Times a runner thread of this stack blocked inside a measured
    /// exchange, over the run so far; `None` where the stack has no such
    /// runner (the kernel's).
    fn naps_in_exchanges(&self) -> Option<u64> {
        None
    }
}

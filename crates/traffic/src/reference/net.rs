//! The reference stack's host as a [`Transport`]: its sockets API taken as
//! it is (poll-driven, handles into the host's tables), so a program steps
//! inside the host's own loop on whichever runner drives it
//! (`crate::run::host`).

use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use stack::iface::host::{Host, LinkHandle, TcpError, TcpHandle, UdpHandle, XtpError};
use stack::socket::tcp::congestion::Algorithm;
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::udp::UdpConfig;
use stack::socket::xtp::{ErrorControl, RateLimit, XtpConfig, XtpHandle};
use stack::socket::{LinkConfig, SendError};
use stack::time::Instant;
use wire::ethernet::EthernetAddress;

use crate::congestion::Congestion;
use crate::env::GrantedBuffers;
use crate::error::TrafficError;
use crate::spec::{Family, StackKind};
use crate::transport::{
    DatagramKind, DatagramOptions, Peer, Read, SocketFacts, StreamOptions, StreamProtocol,
    Transport,
};

/// Socket buffers when `-b` is not given: 4 MiB each way, enough for the
/// default network's bandwidth-delay product many times over (the kernel
/// autotunes to similar sizes).
pub const DEFAULT_BUFFER: usize = 4 << 20;

/// Datagrams a sender's socket queues before sends are refused.
pub const SEND_QUEUE: usize = 256;

/// A host's stream socket (or listener): TCP or an XTP association, the
/// latter through the socket interface or the character driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStream {
    Tcp(TcpHandle),
    Xtp(XtpHandle),
    XtpDriver(XtpHandle),
}

/// An XTP association's settings for `options`: the connection service
/// with the buffers a TCP connection would get, everything else XTP's
/// defaults (selective retransmission, implicit setup).
pub fn xtp_config(options: StreamOptions) -> XtpConfig {
    let size = options.buffer.unwrap_or(DEFAULT_BUFFER);
    let xtp = options.xtp;
    XtpConfig {
        send_buffer: size,
        recv_buffer: xtp.alloc_bytes.map_or(size, |a| a as usize),
        error_control: if xtp.go_back_n {
            ErrorControl::GoBackN
        } else {
            ErrorControl::Selective
        },
        nocheck: xtp.nocheck,
        reservation: xtp.reservation,
        // The character driver's writes end on delivery confirmations.
        delivery_requests: xtp.driver,
        // Validated to fit: bytes per second in 32 bits.
        rate: xtp.rate_bps.map(|bps| RateLimit {
            rate: u32::try_from(bps / 8).unwrap_or(u32::MAX),
            burst: xtp.burst_bytes.unwrap_or(DEFAULT_BURST),
        }),
        ..XtpConfig::default()
    }
}

/// How a new association's handle is wrapped: the interface `options`
/// asked for.
fn xtp_stream(options: StreamOptions) -> fn(XtpHandle) -> HostStream {
    if options.xtp.driver {
        HostStream::XtpDriver
    } else {
        HostStream::Xtp
    }
}

/// An XTP burst when a rate is given without one: 16 KiB, the study's
/// XTP queue size (`002_…` §5.1).
pub const DEFAULT_BURST: u32 = 16 * 1024;

fn xtp_facts(config: &XtpConfig) -> SocketFacts {
    SocketFacts {
        granted: GrantedBuffers {
            send: Some(config.send_buffer),
            recv: Some(config.recv_buffer),
        },
        // XTP has rate control, not congestion control.
        congestion_control: None,
    }
}

fn xtp_error(what: &str, e: XtpError) -> TrafficError {
    TrafficError::Invalid(format!("{what}: {e}"))
}

/// A host's datagram socket: UDP or link-level frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datagrams {
    Udp(UdpHandle),
    Link(LinkHandle),
}

/// The connection settings for `options`; an error if the stack lacks
/// the congestion control asked for.
pub fn tcp_config(options: StreamOptions) -> Result<TcpConfig, TrafficError> {
    let size = options.buffer.unwrap_or(DEFAULT_BUFFER);
    let mut config = TcpConfig {
        send_buffer: size,
        recv_buffer: size,
        nodelay: options.nodelay,
        ..TcpConfig::default()
    };
    if let Some(c) = options.congestion {
        config.congestion.algorithm = algorithm(c)?;
    }
    Ok(config)
}

/// The stack's algorithm of a Linux name. Linux's `reno` is RFC 5681's
/// window with, without SACK, RFC 6582's NewReno recovery (tcp_input.c):
/// the stack's NewReno, which both names take.
pub fn algorithm(congestion: Congestion) -> Result<Algorithm, TrafficError> {
    match congestion.name() {
        "cubic" => Ok(Algorithm::Cubic),
        "reno" | "newreno" => Ok(Algorithm::NewReno),
        other => Err(TrafficError::Unsupported(format!(
            "the reference stack has no congestion control `{other}`: it has cubic (its \
             default) and reno (NewReno, also named newreno)"
        ))),
    }
}

/// The congestion control's name as Linux spells it.
pub fn algorithm_name(config: &TcpConfig) -> &'static str {
    match config.congestion.algorithm {
        Algorithm::Cubic => "cubic",
        Algorithm::NewReno => "reno",
    }
}

/// What a connection opened with `options` is granted, known before it
/// exists (for a run's record).
pub fn stream_facts_for(options: StreamOptions) -> Result<SocketFacts, TrafficError> {
    tcp_config(options).map(|config| config_facts(&config))
}

/// What a datagram socket for `spec` is granted (the sender's queue in
/// bytes of its datagrams), known before it exists.
pub fn datagram_granted(spec: &crate::spec::TransferSpec) -> GrantedBuffers {
    GrantedBuffers {
        send: Some(SEND_QUEUE * spec.len),
        recv: Some(spec.sockbuf.unwrap_or(DEFAULT_BUFFER)),
    }
}

fn config_facts(config: &TcpConfig) -> SocketFacts {
    SocketFacts {
        granted: GrantedBuffers {
            send: Some(config.send_buffer),
            recv: Some(config.recv_buffer),
        },
        congestion_control: Some(algorithm_name(config).into()),
    }
}

fn stack_error(what: &str, e: TcpError) -> TrafficError {
    TrafficError::Invalid(format!("{what}: {e}"))
}

/// The first address of `family` a host has (global IPv6 only once DAD
/// is done).
pub fn address_of(host: &Host, family: Family) -> Option<IpAddr> {
    match family {
        Family::V6 => host
            .global_ipv6_addresses()
            .first()
            .copied()
            .map(IpAddr::V6),
        Family::V4 => host.ipv4_addresses().first().copied().map(IpAddr::V4),
    }
}

/// `interface`'s id, the host's first interface when empty.
fn interface(host: &Host, name: &str) -> Option<stack::iface::route::InterfaceId> {
    if name.is_empty() {
        host.interfaces().first().map(|i| i.id)
    } else {
        host.interface_id(name)
    }
}

impl Transport for Host {
    type Listener = HostStream;
    type Stream = HostStream;
    type Datagrams = Datagrams;

    fn stack(&self) -> StackKind {
        StackKind::Ref
    }

    fn now(&self) -> Instant {
        Host::now(self)
    }

    fn local_ip(&self, family: Family) -> Option<IpAddr> {
        address_of(self, family)
    }

    fn link_address(&self, name: &str) -> Option<EthernetAddress> {
        interface(self, name).and_then(|id| self.interface_mac(id))
    }

    fn listen(
        &mut self,
        local: SocketAddr,
        options: StreamOptions,
    ) -> Result<HostStream, TrafficError> {
        let what = format!("{}: listen on {local}", self.name());
        match options.protocol {
            StreamProtocol::Tcp => self
                .tcp_listen(local, tcp_config(options)?, ListenerConfig::default())
                .map(HostStream::Tcp)
                .map_err(|e| stack_error(&what, e)),
            StreamProtocol::Xtp => self
                .xtp_listen(local, xtp_config(options))
                .map(xtp_stream(options))
                .map_err(|e| xtp_error(&what, e)),
        }
    }

    fn accept(&mut self, listener: HostStream) -> Result<Option<HostStream>, TrafficError> {
        match listener {
            HostStream::Tcp(h) => match self.tcp_accept(h) {
                Ok(conn) => Ok(Some(HostStream::Tcp(conn))),
                Err(TcpError::WouldBlock) => Ok(None),
                Err(e) => Err(stack_error("accept", e)),
            },
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => match self.xtp_accept(h) {
                // The listener's interface is its associations'.
                Ok(assoc) => Ok(Some(match listener {
                    HostStream::XtpDriver(_) => HostStream::XtpDriver(assoc),
                    _ => HostStream::Xtp(assoc),
                })),
                Err(XtpError::WouldBlock) => Ok(None),
                Err(e) => Err(xtp_error("accept", e)),
            },
        }
    }

    fn connect(
        &mut self,
        remote: SocketAddr,
        options: StreamOptions,
    ) -> Result<HostStream, TrafficError> {
        let what = format!("connect to {remote}");
        match options.protocol {
            StreamProtocol::Tcp => self
                .tcp_connect(remote, tcp_config(options)?)
                .map(HostStream::Tcp)
                .map_err(|e| stack_error(&what, e)),
            StreamProtocol::Xtp => self
                .xtp_connect(remote, xtp_config(options))
                .map(xtp_stream(options))
                .map_err(|e| xtp_error(&what, e)),
        }
    }

    fn established(&mut self, stream: HostStream) -> Result<bool, TrafficError> {
        let (established, error) = match stream {
            HostStream::Tcp(h) => {
                let ready = self
                    .tcp_readiness(h)
                    .map_err(|e| stack_error("connect", e))?;
                (ready.established, ready.error.map(|e| e.to_string()))
            }
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => {
                let ready = self.xtp_readiness(h).map_err(|e| xtp_error("connect", e))?;
                (ready.established, ready.error.map(|e| e.to_string()))
            }
        };
        if let Some(e) = error {
            return Err(TrafficError::Invalid(format!(
                "connect: {e} (is the receiver listening?)"
            )));
        }
        Ok(established)
    }

    fn send(&mut self, stream: HostStream, data: &[u8]) -> Result<usize, TrafficError> {
        match stream {
            HostStream::Tcp(h) => match self.tcp_send(h, data) {
                Ok(n) => Ok(n),
                Err(TcpError::WouldBlock) => Ok(0),
                Err(e) => Err(stack_error("send", e)),
            },
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => match self.xtp_send(h, data) {
                Ok(n) => Ok(n),
                Err(XtpError::WouldBlock) => Ok(0),
                Err(e) => Err(xtp_error("send", e)),
            },
        }
    }

    fn recv(&mut self, stream: HostStream, buf: &mut [u8]) -> Result<Read, TrafficError> {
        let read = match stream {
            HostStream::Tcp(h) => match self.tcp_recv(h, buf) {
                Err(TcpError::WouldBlock) => return Ok(Read::Nothing),
                other => other.map_err(|e| stack_error("receive", e))?,
            },
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => match self.xtp_recv(h, buf) {
                Err(XtpError::WouldBlock) => return Ok(Read::Nothing),
                other => other.map_err(|e| xtp_error("receive", e))?,
            },
        };
        Ok(if read == 0 {
            Read::End
        } else {
            Read::Data(read)
        })
    }

    fn lends_buffers(&self, stream: HostStream) -> bool {
        matches!(stream, HostStream::XtpDriver(_))
    }

    fn send_shared(&mut self, stream: HostStream, data: &Bytes) -> Result<usize, TrafficError> {
        let HostStream::XtpDriver(h) = stream else {
            return self.send(stream, data);
        };
        // The write in progress is `data` (the caller offers the same
        // bytes until it ends): done, its length; not yet, 0.
        match self.xtp_driver_write_done(h) {
            Ok(n) => return Ok(n),
            Err(XtpError::WouldBlock) => return Ok(0),
            Err(XtpError::NotInProgress) => {}
            Err(e) => return Err(xtp_error("send", e)),
        }
        match self.xtp_driver_write(h, data.clone()) {
            Ok(()) | Err(XtpError::WouldBlock) => Ok(0),
            Err(e) => Err(xtp_error("send", e)),
        }
    }

    fn recv_into(
        &mut self,
        stream: HostStream,
        buf: &mut Vec<u8>,
        len: usize,
    ) -> Result<Read, TrafficError> {
        let HostStream::XtpDriver(h) = stream else {
            if buf.len() < len {
                buf.resize(len, 0);
            }
            return self.recv(stream, &mut buf[..len]);
        };
        if let Err(e) = self.xtp_driver_read(h, std::mem::take(buf), len) {
            if e != XtpError::WouldBlock {
                return Err(xtp_error("receive", e));
            }
            // Posted already: `buf` was the empty stand-in, dropped.
        }
        match self.xtp_driver_read_done(h) {
            Ok(got) => {
                *buf = got;
                Ok(if buf.is_empty() {
                    Read::End
                } else {
                    Read::Data(buf.len())
                })
            }
            Err(XtpError::WouldBlock) => Ok(Read::Nothing),
            Err(e) => Err(xtp_error("receive", e)),
        }
    }

    fn shutdown(&mut self, stream: HostStream) -> Result<(), TrafficError> {
        match stream {
            HostStream::Tcp(h) => self.tcp_shutdown(h).map_err(|e| stack_error("shutdown", e)),
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => {
                self.xtp_shutdown(h).map_err(|e| xtp_error("shutdown", e))
            }
        }
    }

    fn unacknowledged(&mut self, stream: HostStream) -> Option<u64> {
        match stream {
            HostStream::Tcp(h) => self.tcp_connection(h).map(|c| c.send_queued() as u64),
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => {
                self.xtp_association(h).map(|a| a.send_queued() as u64)
            }
        }
    }

    fn retransmits(&mut self, stream: HostStream) -> Option<u64> {
        match stream {
            HostStream::Tcp(h) => self
                .tcp_connection(h)
                .map(|c| c.counters().segments_retransmitted),
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => self
                .xtp_association(h)
                .map(|a| a.counters().retransmitted_packets),
        }
    }

    /// The socket's port, with the host's address of the family where it
    /// is bound to any (the address a peer sees, on a one-address host).
    fn datagram_addr(&mut self, socket: Datagrams) -> Option<SocketAddr> {
        let Datagrams::Udp(h) = socket else {
            return None;
        };
        let local = self.udp(h).local()?;
        if !local.ip().is_unspecified() {
            return Some(local);
        }
        let family = if local.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        };
        Some(SocketAddr::new(self.local_ip(family)?, local.port()))
    }

    fn tcp_info(&mut self, stream: HostStream) -> Option<crate::transport::TcpInfo> {
        use stack::socket::tcp::congestion::CongestionControl;
        let HostStream::Tcp(h) = stream else {
            return None;
        };
        let c = self.tcp_connection(h)?;
        let cc = c.congestion();
        let rtt = c.rtt();
        Some(crate::transport::TcpInfo {
            snd_cwnd: cc.cwnd() as u64,
            snd_wnd: 0,
            rtt_us: rtt.srtt().map_or(0, |d| d.as_micros() as u64),
            rttvar_us: rtt.rttvar().as_micros() as u64,
            retransmits: c.counters().segments_retransmitted,
            pmtu: 0,
            mss: c.negotiated().map_or(cc.mss(), |n| n.send_mss) as u64,
        })
    }

    fn stream_addrs(&mut self, stream: HostStream) -> Option<(SocketAddr, SocketAddr)> {
        let HostStream::Tcp(h) = stream else {
            return None;
        };
        let c = self.tcp_connection(h)?;
        Some((c.local(), c.remote()))
    }

    fn stream_facts(&mut self, stream: HostStream) -> SocketFacts {
        match stream {
            HostStream::Tcp(h) => self.tcp_connection(h).map(|c| config_facts(c.config())),
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => {
                self.xtp_association(h).map(|a| xtp_facts(a.config()))
            }
        }
        .unwrap_or_default()
    }

    /// The listener's connections get the options it was opened with.
    fn listener_facts(&mut self, listener: HostStream) -> SocketFacts {
        match listener {
            HostStream::Tcp(h) => self
                .tcp_listener(h)
                .map(|l| config_facts(l.connection_config())),
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => {
                self.xtp_listener(h).map(|l| xtp_facts(&l.config))
            }
        }
        .unwrap_or_default()
    }

    fn close(&mut self, stream: HostStream) {
        match stream {
            HostStream::Tcp(h) => {
                let _ = self.tcp_close(h);
            }
            HostStream::Xtp(h) | HostStream::XtpDriver(h) => {
                let _ = self.xtp_close(h);
            }
        }
    }

    fn close_listener(&mut self, listener: HostStream) {
        self.close(listener);
    }

    fn open_datagrams(
        &mut self,
        kind: &DatagramKind,
        options: DatagramOptions,
    ) -> Result<Datagrams, TrafficError> {
        let recv_bytes = options.buffer.unwrap_or(DEFAULT_BUFFER);
        let recv_entries = (recv_bytes / options.datagram_len.max(1)).clamp(64, 1 << 16);
        match kind {
            DatagramKind::Udp(local) => {
                let socket = self.udp_open(UdpConfig {
                    send_queue_datagrams: SEND_QUEUE,
                    recv_queue_datagrams: recv_entries,
                    recv_queue_bytes: recv_bytes,
                    ..UdpConfig::default()
                });
                if *local != unspecified_port(local) {
                    self.udp_bind(socket, *local);
                }
                Ok(Datagrams::Udp(socket))
            }
            DatagramKind::Link {
                interface: name,
                ethertype,
            } => {
                let id = interface(self, name).ok_or_else(|| {
                    TrafficError::Invalid(format!("{} has no interface {name}", self.name()))
                })?;
                let config = LinkConfig {
                    send_queue_frames: SEND_QUEUE,
                    recv_queue_frames: recv_entries,
                    recv_queue_bytes: recv_bytes,
                };
                self.link_open_with(id, *ethertype, config)
                    .map(Datagrams::Link)
                    .map_err(|e| TrafficError::Invalid(format!("{}: {e}", self.name())))
            }
        }
    }

    fn send_to(&mut self, socket: Datagrams, data: &[u8], to: Peer) -> Result<bool, TrafficError> {
        let sent = match (socket, to) {
            (Datagrams::Udp(h), Peer::Ip(dest)) => self.udp_send_to(h, data, dest),
            (Datagrams::Link(h), Peer::Mac(dest)) => self.link_send_to(h, data, dest),
            _ => Err(SendError::FamilyMismatch),
        };
        match sent {
            Ok(()) => Ok(true),
            // Back-pressure: the host drains the queue at its next poll.
            Err(SendError::QueueFull | SendError::PoolExhausted) => Ok(false),
            Err(e) => Err(TrafficError::Invalid(format!("send: {e}"))),
        }
    }

    fn recv_from(
        &mut self,
        socket: Datagrams,
        buf: &mut [u8],
    ) -> Result<Option<(usize, Peer)>, TrafficError> {
        Ok(match socket {
            Datagrams::Udp(h) => self
                .udp(h)
                .recv_from(buf)
                .map(|(n, from)| (n, Peer::Ip(from))),
            Datagrams::Link(h) => self
                .link(h)
                .recv_from(buf)
                .map(|(n, from)| (n, Peer::Mac(from))),
        })
    }

    fn datagram_facts(&mut self, socket: Datagrams, options: DatagramOptions) -> SocketFacts {
        let (send_entries, recv) = match socket {
            Datagrams::Udp(h) => {
                let c = self.udp(h).config();
                (c.send_queue_datagrams, c.recv_queue_bytes)
            }
            Datagrams::Link(h) => {
                let c = self.link(h).config();
                (c.send_queue_frames, c.recv_queue_bytes)
            }
        };
        SocketFacts {
            granted: GrantedBuffers {
                send: Some(send_entries * options.datagram_len),
                recv: Some(recv),
            },
            congestion_control: None,
        }
    }

    /// The host keeps its datagram sockets until it stops (it has no call
    /// to close one); a closed handle is simply not used again.
    fn close_datagrams(&mut self, _socket: Datagrams) {}

    fn notify(&mut self) {
        stack::runner::threaded::wake_peers();
    }

    fn awaiting(&mut self, on: bool) {
        stack::runner::threaded::awaiting(on);
        stack::runner::realtime::awaiting(on);
    }

    fn exchange(&mut self, in_flight: bool) {
        if in_flight {
            stack::runner::threaded::exchange_begins();
        } else {
            stack::runner::threaded::exchange_ends();
        }
    }

    fn naps_in_exchanges(&self) -> Option<u64> {
        stack::runner::threaded::naps_in_exchanges()
    }
}

/// `local` with port 0: a sender's socket, which needs no bind.
fn unspecified_port(local: &SocketAddr) -> SocketAddr {
    SocketAddr::new(local.ip(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(name: &str) -> StreamOptions {
        StreamOptions {
            congestion: Some(Congestion::parse(name).unwrap()),
            ..StreamOptions::default()
        }
    }

    /// Each name the stack has selects its algorithm, and the report
    /// names it as Linux does.
    #[test]
    fn linux_names_select_the_stack_s_algorithms() {
        for (name, algorithm, reported) in [
            ("cubic", Algorithm::Cubic, "cubic"),
            ("reno", Algorithm::NewReno, "reno"),
            ("newreno", Algorithm::NewReno, "reno"),
        ] {
            let config = tcp_config(options(name)).unwrap();
            assert_eq!(config.congestion.algorithm, algorithm, "{name}");
            assert_eq!(algorithm_name(&config), reported, "{name}");
        }
        // Without -C: the stack's default, CUBIC.
        let config = tcp_config(StreamOptions::default()).unwrap();
        assert_eq!(algorithm_name(&config), "cubic");
    }

    #[test]
    fn other_names_are_refused_with_what_the_stack_has() {
        for name in ["bbr", "Cubic", "vegas"] {
            let e = tcp_config(options(name)).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "reference stack has no congestion control `{name}`"
                )) && e.contains("cubic")
                    && e.contains("reno"),
                "{name}: {e}"
            );
        }
    }
}

//! The services of `stackscope host`, on the reference stack's socket API:
//! UDP and TCP echo (port 7, RFC 862), discard (port 9, RFC 863) and a
//! ttcp sink (port 5001: read everything, count it). ICMP echo needs no
//! service: the stack answers Echo Requests itself.
//!
//! Every service listens on both families (the stack demultiplexes by
//! family: a wildcard socket of one family takes only that family's
//! packets). Everything is non-blocking; [`Services::run`] does what can be
//! done now and says whether it did anything, so the host's loop knows
//! when it may sleep.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::{Context, Result};
use stack::iface::host::{Host, TcpError, TcpHandle, UdpHandle};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::{UdpConfig, MAX_UDP4_PAYLOAD, MAX_UDP6_PAYLOAD};

/// Echo (RFC 862).
pub const ECHO_PORT: u16 = 7;
/// Discard (RFC 863).
pub const DISCARD_PORT: u16 = 9;
/// ttcp's and iperf2's customary port.
pub const SINK_PORT: u16 = 5001;

/// Connections served at once; more wait in the listeners' accept queues.
const MAX_CONNECTIONS: usize = 1024;
/// Reads (or datagrams) per socket per run, so one busy peer cannot keep
/// the others (and the host's poll) waiting.
const BUDGET: usize = 64;
/// Bytes an echo connection holds that its send queue did not take yet;
/// it stops reading until they are sent (back-pressure to the peer).
const ECHO_PENDING_LIMIT: usize = 256 * 1024;
/// The services' read buffer: it holds the largest UDP datagram of either
/// family whole (a read into a shorter one would cut it, and the echo
/// would send back less than came).
const BUF_LEN: usize = 64 * 1024;
const _: () = assert!(BUF_LEN >= MAX_UDP6_PAYLOAD && BUF_LEN >= MAX_UDP4_PAYLOAD);

/// What a service does with what it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Echo,
    Discard,
    Sink,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Echo, Kind::Discard, Kind::Sink];

    pub fn port(self) -> u16 {
        match self {
            Kind::Echo => ECHO_PORT,
            Kind::Discard => DISCARD_PORT,
            Kind::Sink => SINK_PORT,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Echo => "echo",
            Kind::Discard => "discard",
            Kind::Sink => "ttcp sink",
        }
    }

    fn index(self) -> usize {
        match self {
            Kind::Echo => 0,
            Kind::Discard => 1,
            Kind::Sink => 2,
        }
    }
}

/// Counters of one service (one kind, one transport, both families).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServiceStats {
    /// TCP: connections accepted.
    pub connections: u64,
    /// TCP: connections that ended with an error (reset, timed out).
    pub connection_errors: u64,
    /// UDP: datagrams received.
    pub datagrams_in: u64,
    /// UDP echo: datagrams sent back.
    pub datagrams_out: u64,
    /// UDP echo: answers the socket refused (queue full, no buffer).
    pub echo_dropped: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// A UDP service's socket.
struct UdpService {
    kind: Kind,
    handle: UdpHandle,
}

/// A TCP service's listener.
struct Listener {
    kind: Kind,
    handle: TcpHandle,
}

/// A connection being served.
struct Connection {
    kind: Kind,
    handle: TcpHandle,
    /// Echo: read and not yet taken by the send queue.
    pending: Vec<u8>,
    /// The peer closed its side: finish (echo the rest) and close.
    peer_closed: bool,
}

/// Every service of the host.
pub struct Services {
    udp: Vec<UdpService>,
    listeners: Vec<Listener>,
    connections: Vec<Connection>,
    udp_stats: [ServiceStats; 3],
    tcp_stats: [ServiceStats; 3],
    buf: Vec<u8>,
}

impl Services {
    /// Opens every service's sockets on `host`, both families.
    pub fn open(host: &mut Host) -> Result<Services> {
        let mut services = Services {
            udp: Vec::new(),
            listeners: Vec::new(),
            connections: Vec::new(),
            udp_stats: Default::default(),
            tcp_stats: Default::default(),
            buf: vec![0; BUF_LEN],
        };
        let any: [IpAddr; 2] = [Ipv6Addr::UNSPECIFIED.into(), Ipv4Addr::UNSPECIFIED.into()];
        for kind in Kind::ALL {
            for ip in any {
                let local = SocketAddr::new(ip, kind.port());
                let config = match kind {
                    // A sink takes what a fast sender offers: a deeper
                    // queue loses less.
                    Kind::Sink => UdpConfig {
                        recv_queue_datagrams: 1024,
                        recv_queue_bytes: 4 * 1024 * 1024,
                        ..UdpConfig::default()
                    },
                    // The default sends what the peer's family carries:
                    // up to 65 527 bytes back over IPv6 (RFC 8200 §3,
                    // without jumbograms), 65 507 over IPv4 (RFC 791).
                    Kind::Echo | Kind::Discard => UdpConfig::default(),
                };
                let handle = host.udp_open(config);
                host.udp_bind(handle, local);
                services.udp.push(UdpService { kind, handle });
                let handle = host
                    .tcp_listen(local, TcpConfig::default(), ListenerConfig::default())
                    .map_err(anyhow::Error::new)
                    .with_context(|| format!("TCP {} service: listen on {local}", kind.name()))?;
                services.listeners.push(Listener { kind, handle });
            }
        }
        Ok(services)
    }

    /// Serves what can be served now; true if anything moved.
    pub fn run(&mut self, host: &mut Host) -> bool {
        let mut moved = self.run_udp(host);
        moved |= self.accept(host);
        moved |= self.serve_connections(host);
        moved
    }

    fn run_udp(&mut self, host: &mut Host) -> bool {
        let mut moved = false;
        for service in &self.udp {
            let stats = &mut self.udp_stats[service.kind.index()];
            for _ in 0..BUDGET {
                let Some((len, from)) = host.udp(service.handle).recv_from(&mut self.buf) else {
                    break;
                };
                moved = true;
                stats.datagrams_in += 1;
                stats.bytes_in += len as u64;
                if service.kind == Kind::Echo {
                    match host.udp_send_to(service.handle, &self.buf[..len], from) {
                        Ok(()) => {
                            stats.datagrams_out += 1;
                            stats.bytes_out += len as u64;
                        }
                        Err(_) => stats.echo_dropped += 1,
                    }
                }
            }
        }
        moved
    }

    fn accept(&mut self, host: &mut Host) -> bool {
        let mut moved = false;
        for listener in &self.listeners {
            while self.connections.len() < MAX_CONNECTIONS {
                match host.tcp_accept(listener.handle) {
                    Ok(handle) => {
                        moved = true;
                        self.tcp_stats[listener.kind.index()].connections += 1;
                        self.connections.push(Connection {
                            kind: listener.kind,
                            handle,
                            pending: Vec::new(),
                            peer_closed: false,
                        });
                    }
                    Err(_) => break,
                }
            }
        }
        moved
    }

    fn serve_connections(&mut self, host: &mut Host) -> bool {
        let mut moved = false;
        let mut index = 0;
        while index < self.connections.len() {
            let conn = &mut self.connections[index];
            let stats = &mut self.tcp_stats[conn.kind.index()];
            let step = serve(host, conn, stats, &mut self.buf);
            moved |= step.moved;
            if step.done {
                // Gives the handle up: a clean end closes in the
                // background (FIN, TIME-WAIT); an errored one is gone.
                let _ = host.tcp_close(conn.handle);
                self.connections.swap_remove(index);
            } else {
                index += 1;
            }
        }
        moved
    }

    /// Connections being served now.
    pub fn open_connections(&self) -> usize {
        self.connections.len()
    }

    /// Closes every connection (FIN, or RST if data was left unread) and
    /// gives one last chance to send; the caller polls the host after.
    pub fn close_all(&mut self, host: &mut Host) {
        for conn in self.connections.drain(..) {
            let _ = host.tcp_close(conn.handle);
        }
    }

    /// Per service: (transport, kind, stats), in a stable order.
    pub fn stats(&self) -> impl Iterator<Item = (&'static str, Kind, ServiceStats)> + '_ {
        Kind::ALL.into_iter().flat_map(move |kind| {
            [
                ("udp", kind, self.udp_stats[kind.index()]),
                ("tcp", kind, self.tcp_stats[kind.index()]),
            ]
        })
    }
}

/// What serving a connection did.
struct Step {
    moved: bool,
    /// Finished (or failed): close and forget it.
    done: bool,
}

fn serve(host: &mut Host, conn: &mut Connection, stats: &mut ServiceStats, buf: &mut [u8]) -> Step {
    let mut moved = false;
    for _ in 0..BUDGET {
        // Echo first sends what it owes, and reads only when it can.
        while !conn.pending.is_empty() {
            match host.tcp_send(conn.handle, &conn.pending) {
                Ok(n) => {
                    moved = true;
                    stats.bytes_out += n as u64;
                    conn.pending.drain(..n);
                }
                Err(TcpError::WouldBlock) => break,
                Err(_) => {
                    stats.connection_errors += 1;
                    return Step { moved, done: true };
                }
            }
        }
        if conn.peer_closed {
            // Everything echoed: our FIN follows (tcp_close).
            let done = conn.pending.is_empty();
            return Step { moved, done };
        }
        if conn.pending.len() >= ECHO_PENDING_LIMIT {
            return Step { moved, done: false };
        }
        match host.tcp_recv(conn.handle, buf) {
            Ok(0) => {
                moved = true;
                conn.peer_closed = true;
            }
            Ok(n) => {
                moved = true;
                stats.bytes_in += n as u64;
                if conn.kind == Kind::Echo {
                    conn.pending.extend_from_slice(&buf[..n]);
                }
            }
            Err(TcpError::WouldBlock) => return Step { moved, done: false },
            Err(_) => {
                stats.connection_errors += 1;
                return Step { moved, done: true };
            }
        }
    }
    Step { moved, done: false }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use stack::runner::Simulator;
    use stack::socket::SendError;
    use stack::topology::Topology;

    use super::*;

    /// The default network, SLAAC done, with the services on host-b.
    fn network() -> (Simulator, Services) {
        let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
        let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
            ["host-a", "host-b"]
                .iter()
                .all(|n| !sim.host(n).unwrap().global_ipv6_addresses().is_empty())
        });
        assert!(ready, "SLAAC did not finish");
        let services = Services::open(sim.host_mut("host-b").unwrap()).unwrap();
        (sim, services)
    }

    /// Sends `len` bytes from host-a to host-b's UDP echo; what came back.
    fn udp_echo(sim: &mut Simulator, services: &mut Services, v6: bool, len: usize) -> Vec<u8> {
        let b = sim.host("host-b").unwrap();
        let to: IpAddr = if v6 {
            b.global_ipv6_addresses()[0].into()
        } else {
            b.ipv4_addresses()[0].into()
        };
        let a = sim.host_mut("host-a").unwrap();
        let socket = a.udp_open(UdpConfig::default());
        let sent: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        a.udp_send_to(socket, &sent, SocketAddr::new(to, ECHO_PORT))
            .unwrap();
        let mut back = None;
        sim.run_until_with(Duration::from_secs(2), |sim| {
            services.run(sim.host_mut("host-b").unwrap());
            back = sim.host_mut("host-a").unwrap().udp(socket).recv();
            back.is_some()
        });
        let datagram = back.expect("an echo");
        let mut data = vec![0; datagram.payload.len()];
        datagram.payload.copy_out(0, &mut data);
        assert!(data == sent, "the echo of {len} bytes differs");
        data
    }

    #[test]
    fn udp_echo_returns_the_largest_datagram_of_each_family() {
        let (mut sim, mut services) = network();
        for (v6, len) in [
            (true, MAX_UDP6_PAYLOAD),
            (true, 65_508),
            (false, MAX_UDP4_PAYLOAD),
        ] {
            assert_eq!(udp_echo(&mut sim, &mut services, v6, len).len(), len);
        }
        let echo = services
            .stats()
            .find(|(t, k, _)| *t == "udp" && *k == Kind::Echo);
        let (_, _, stats) = echo.unwrap();
        assert_eq!(stats.datagrams_out, 3);
        assert_eq!(stats.echo_dropped, 0);
        // One byte more is refused at the sender, saying why.
        let a = sim.host_mut("host-a").unwrap();
        let socket = a.udp_open(UdpConfig::default());
        let far: SocketAddr = "[2001:db8:b::1]:7".parse().unwrap();
        let err = a.udp_send_to(socket, &vec![0; MAX_UDP6_PAYLOAD + 1], far);
        assert_eq!(
            err,
            Err(SendError::DatagramTooLarge {
                len: MAX_UDP6_PAYLOAD + 1,
                max: MAX_UDP6_PAYLOAD,
                family: "IPv6"
            })
        );
    }
}

//! The lab's kernel transfers: single messages one at a time (each read
//! whole by the receiver before the next is written, as the reference
//! stack's messages runs), and a bulk TCP transfer for the probes' cost.
//! Sender in namespace B, receiver in A, across the veth pair; or both in
//! A over its loopback. The probes are optional (the cost's detached
//! transfers run without), and each host's events are registered under a
//! flow id of its own, so an ACK's events stay apart from the data's. TCP
//! messages may name a congestion control, set on both ends before listen
//! and connect and read back after accept and connect
//! (`traffic::kernel::congestion`, as ttcp's and sweep's `-C`): a
//! connection that runs another fails the transfer.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use traffic::congestion::Congestion;
use traffic::cpu::CpuMeter;
use traffic::kernel::congestion;
use traffic::kernel::netns::{Side, VethPair};
use traffic::spec::Family;

use crate::error::KernelProbeError;
use crate::session::KernelProbes;
use crate::transfer::namespace_inodes;
use crate::transfer_io::{accept_within, entered, failed, gone, refused};

/// How long a side waits for the other.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Which path the messages take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// From namespace B to A across the veth pair.
    Veth,
    /// Inside namespace A over its loopback interface.
    Loopback,
}

impl Path {
    pub fn name(self) -> &'static str {
        match self {
            Path::Veth => "veth",
            Path::Loopback => "loopback",
        }
    }
}

/// The flow ids the hosts' events are recorded under. Over loopback both
/// hosts are one namespace, so both ids are the sender's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFlows {
    pub sender: u32,
    pub receiver: u32,
}

impl HostFlows {
    /// `base` for the sender, `base + 1` for the receiver (over the veth).
    pub fn of(base: u32, path: Path) -> HostFlows {
        match path {
            Path::Veth => HostFlows {
                sender: base,
                receiver: base + 1,
            },
            Path::Loopback => HostFlows {
                sender: base,
                receiver: base,
            },
        }
    }
}

/// What a transfer did.
#[derive(Debug, Clone, PartialEq)]
pub struct Transferred {
    /// Messages (or writes) sent and received whole.
    pub sent: usize,
    pub received: usize,
    pub bytes: u64,
    /// From the first write to the receiver having everything.
    pub wall: Duration,
    /// CPU time of the sending and the receiving thread (on veth the
    /// receive path runs mostly in the sender's system calls).
    pub sender_cpu: Duration,
    pub receiver_cpu: Duration,
    /// TCP's congestion control, as read back from the sender's socket
    /// (the one that governs the data; with one asked for, both ends
    /// were checked to run it). None for UDP.
    pub congestion_control: Option<String>,
}

/// The sides' namespaces and addresses for `path`.
fn ends(pair: &VethPair, path: Path, family: Family) -> ([Side; 2], [IpAddr; 2]) {
    match path {
        Path::Veth => (
            [Side::A, Side::B],
            [pair.addr(Side::A, family), pair.addr(Side::B, family)],
        ),
        Path::Loopback => {
            let lo = match family {
                Family::V4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
                Family::V6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
            };
            ([Side::A, Side::A], [lo, lo])
        }
    }
}

/// Once the sender has said its ports, registers the run's flows with
/// the probes (if any) and lets both sides go; on failure the sides see
/// the go channel closed and stop. A sender that ends before it says its
/// ports has failed (or its receiver has) and its own result says why:
/// that is no failure of the registration.
fn register_then_go(
    ports_rx: &mpsc::Receiver<(u16, u16)>,
    go_tx: mpsc::Sender<()>,
    probes: Option<&mut KernelProbes>,
    pair: &VethPair,
    path: Path,
    flows: HostFlows,
    unconnected: bool,
) -> Result<(), KernelProbeError> {
    let Ok(ports) = ports_rx.recv() else {
        return Ok(());
    };
    let registered = match probes {
        Some(p) => register(p, pair, path, flows, ports, unconnected),
        None => Ok(()),
    };
    if registered.is_ok() {
        let _ = go_tx.send(());
    }
    registered
}

/// Registers the connection's port pair: the receiver's namespace under
/// the receiver's id and the sender's under the sender's (over loopback
/// one namespace, one id); unconnected sockets (UDP) by their own port too.
fn register(
    probes: &mut KernelProbes,
    pair: &VethPair,
    path: Path,
    flows: HostFlows,
    ports: (u16, u16),
    unconnected: bool,
) -> Result<(), KernelProbeError> {
    let ns = namespace_inodes(pair)?;
    let hosts: Vec<(u32, u32, u16)> = match path {
        Path::Veth => vec![
            (ns[0], flows.receiver, ports.0),
            (ns[1], flows.sender, ports.1),
        ],
        Path::Loopback => vec![(ns[0], flows.sender, ports.0)],
    };
    for (inode, flow, own_port) in hosts {
        probes.trace_flow(inode, ports.0, ports.1, flow)?;
        if unconnected {
            probes.trace_socket(inode, own_port, flow)?;
            if path == Path::Loopback {
                probes.trace_socket(inode, ports.1, flow)?;
            }
        }
    }
    Ok(())
}

/// TCP messages of `sizes` bytes in order (no-delay, one write each), each
/// read whole before the next is written, with `congestion` on both ends
/// (none: the kernel's default, `net.ipv4.tcp_congestion_control`).
pub fn tcp_messages(
    pair: &VethPair,
    probes: Option<&mut KernelProbes>,
    path: Path,
    family: Family,
    sizes: &[u32],
    flows: HostFlows,
    congestion: Option<Congestion>,
) -> Result<Transferred, KernelProbeError> {
    tcp(
        pair,
        probes,
        path,
        family,
        Load::Messages(sizes),
        flows,
        congestion,
    )
}

/// `total` bytes over TCP in writes of `chunk`, as fast as they go.
pub fn tcp_bulk(
    pair: &VethPair,
    probes: Option<&mut KernelProbes>,
    family: Family,
    total: u64,
    chunk: usize,
    flows: HostFlows,
) -> Result<Transferred, KernelProbeError> {
    tcp(
        pair,
        probes,
        Path::Veth,
        family,
        Load::Bulk { total, chunk },
        flows,
        None,
    )
}

#[derive(Clone, Copy)]
enum Load<'a> {
    Messages(&'a [u32]),
    Bulk { total: u64, chunk: usize },
}

impl Load<'_> {
    /// The writes, in order.
    fn writes(self) -> Vec<usize> {
        match self {
            Load::Messages(sizes) => sizes.iter().map(|&s| s as usize).collect(),
            Load::Bulk { total, chunk } => {
                let chunk = chunk.max(1) as u64;
                let mut writes = vec![chunk as usize; (total / chunk) as usize];
                if total % chunk > 0 {
                    writes.push((total % chunk) as usize);
                }
                writes
            }
        }
    }

    /// Whether the sender waits for each message to be read.
    fn one_at_a_time(self) -> bool {
        matches!(self, Load::Messages(_))
    }
}

/// A TCP socket for `addr`'s family, with `asked` set before it listens
/// or connects: a listener's choice is its accepted connections' too.
fn tcp_socket(addr: SocketAddr, asked: Option<Congestion>) -> Result<Socket, KernelProbeError> {
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .map_err(failed("socket"))?;
    if let Some(c) = asked {
        congestion::set(&socket, c).map_err(refused)?;
    }
    Ok(socket)
}

/// What a TCP sender reports: its wall and CPU time, and the congestion
/// control its connection runs.
type Sent = (Duration, Duration, Option<String>);

fn tcp(
    pair: &VethPair,
    probes: Option<&mut KernelProbes>,
    path: Path,
    family: Family,
    load: Load,
    flows: HostFlows,
    asked: Option<Congestion>,
) -> Result<Transferred, KernelProbeError> {
    let ([rx_side, tx_side], [rx_addr, _]) = ends(pair, path, family);
    let writes = load.writes();
    let (addr_tx, addr_rx) = mpsc::channel();
    let (ports_tx, ports_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (read_tx, read_rx) = mpsc::channel::<()>();
    let writes = &writes;
    std::thread::scope(|s| {
        let receiver = s.spawn(move || -> Result<(usize, Duration), KernelProbeError> {
            entered(pair, rx_side)?;
            let local = SocketAddr::new(rx_addr, 0);
            let socket = tcp_socket(local, asked)?;
            socket.bind(&local.into()).map_err(failed("bind"))?;
            socket.listen(16).map_err(failed("listen"))?;
            let listener = TcpListener::from(socket);
            let _ = addr_tx.send(listener.local_addr().map_err(failed("address"))?);
            let mut conn = accept_within(&listener, TIMEOUT)?;
            congestion::running(&conn, asked).map_err(refused)?;
            conn.set_read_timeout(Some(TIMEOUT))
                .map_err(failed("timeout"))?;
            let meter = CpuMeter::start();
            let mut buf = vec![0u8; writes.iter().copied().max().unwrap_or(0)];
            let mut done = 0;
            for &len in writes {
                if conn.read_exact(&mut buf[..len]).is_err() {
                    break;
                }
                done += 1;
                let _ = read_tx.send(());
            }
            let used = meter.stop();
            Ok((done, used.user + used.system))
        });
        let sender = s.spawn(move || -> Result<Sent, KernelProbeError> {
            let server: SocketAddr = addr_rx.recv().map_err(|_| gone("receiver"))?;
            entered(pair, tx_side)?;
            let socket = tcp_socket(server, asked)?;
            socket
                .connect_timeout(&server.into(), TIMEOUT)
                .map_err(failed("connect"))?;
            let mut conn = TcpStream::from(socket);
            // Read after connect: a route's congctl may have chosen.
            let running = congestion::running(&conn, asked).map_err(refused)?;
            conn.set_nodelay(true).map_err(failed("no-delay"))?;
            let local = conn.local_addr().map_err(failed("address"))?.port();
            let _ = ports_tx.send((server.port(), local));
            go_rx.recv().map_err(|_| gone("main"))?;
            let message = vec![0x5au8; writes.iter().copied().max().unwrap_or(0)];
            let meter = CpuMeter::start();
            let began = Instant::now();
            for &len in writes {
                conn.write_all(&message[..len]).map_err(failed("write"))?;
                if load.one_at_a_time() {
                    read_rx
                        .recv_timeout(TIMEOUT)
                        .map_err(|_| gone("receiver"))?;
                }
            }
            if !load.one_at_a_time() {
                // The wall time ends when the receiver has the last byte.
                while read_rx.recv_timeout(TIMEOUT).is_ok() {}
            }
            let used = meter.stop();
            Ok((began.elapsed(), used.user + used.system, running))
        });
        let registered = register_then_go(&ports_rx, go_tx, probes, pair, path, flows, false);
        let received = receiver.join().map_err(|_| gone("receiver"))?;
        let sent = sender.join().map_err(|_| gone("sender"))?;
        registered?;
        let (received, receiver_cpu) = received?;
        let (wall, sender_cpu, congestion_control) = sent?;
        Ok(Transferred {
            sent: writes.len(),
            received,
            bytes: writes.iter().map(|&w| w as u64).sum(),
            wall,
            sender_cpu,
            receiver_cpu,
            congestion_control,
        })
    })
}

/// UDP datagrams of `sizes` bytes in order, each received before the next
/// is sent; a datagram lost (none for five seconds) ends the run.
pub fn udp_messages(
    pair: &VethPair,
    probes: Option<&mut KernelProbes>,
    path: Path,
    family: Family,
    sizes: &[u32],
    flows: HostFlows,
) -> Result<Transferred, KernelProbeError> {
    let ([rx_side, tx_side], [rx_addr, tx_addr]) = ends(pair, path, family);
    let (addr_tx, addr_rx) = mpsc::channel();
    let (ports_tx, ports_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (read_tx, read_rx) = mpsc::channel::<()>();
    let largest = sizes.iter().copied().max().unwrap_or(0) as usize;
    std::thread::scope(|s| {
        let receiver = s.spawn(move || -> Result<(usize, Duration), KernelProbeError> {
            entered(pair, rx_side)?;
            let socket = UdpSocket::bind(SocketAddr::new(rx_addr, 0)).map_err(failed("bind"))?;
            socket
                .set_read_timeout(Some(TIMEOUT))
                .map_err(failed("timeout"))?;
            let _ = addr_tx.send(socket.local_addr().map_err(failed("address"))?);
            let meter = CpuMeter::start();
            let mut buf = vec![0u8; largest + 1];
            let mut whole = 0;
            for &len in sizes {
                match socket.recv(&mut buf) {
                    Ok(got) if got == len as usize => whole += 1,
                    Ok(_) => {}
                    Err(_) => break,
                }
                let _ = read_tx.send(());
            }
            let used = meter.stop();
            Ok((whole, used.user + used.system))
        });
        let sender = s.spawn(move || -> Result<(Duration, Duration), KernelProbeError> {
            let server: SocketAddr = addr_rx.recv().map_err(|_| gone("receiver"))?;
            entered(pair, tx_side)?;
            let socket = UdpSocket::bind(SocketAddr::new(tx_addr, 0)).map_err(failed("bind"))?;
            let local = socket.local_addr().map_err(failed("address"))?.port();
            let _ = ports_tx.send((server.port(), local));
            go_rx.recv().map_err(|_| gone("main"))?;
            let message = vec![0xa5u8; largest];
            let meter = CpuMeter::start();
            let began = Instant::now();
            for &len in sizes {
                socket
                    .send_to(&message[..len as usize], server)
                    .map_err(failed("send"))?;
                if read_rx.recv_timeout(TIMEOUT).is_err() {
                    break;
                }
            }
            let used = meter.stop();
            Ok((began.elapsed(), used.user + used.system))
        });
        let registered = register_then_go(&ports_rx, go_tx, probes, pair, path, flows, true);
        let sent = sender.join().map_err(|_| gone("sender"))?;
        let received = receiver.join().map_err(|_| gone("receiver"))?;
        registered?;
        let (received, receiver_cpu) = received?;
        let (wall, sender_cpu) = sent?;
        Ok(Transferred {
            sent: sizes.len(),
            received,
            bytes: sizes.iter().map(|&s| u64::from(s)).sum(),
            wall,
            sender_cpu,
            receiver_cpu,
            congestion_control: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_writes_cover_the_total() {
        let w = Load::Bulk {
            total: 10,
            chunk: 4,
        }
        .writes();
        assert_eq!(w, vec![4, 4, 2]);
        assert_eq!(Load::Messages(&[3, 5]).writes(), vec![3, 5]);
    }

    #[test]
    fn loopback_uses_one_flow_for_both_hosts() {
        let f = HostFlows::of(7, Path::Loopback);
        assert_eq!((f.sender, f.receiver), (7, 7));
        let f = HostFlows::of(7, Path::Veth);
        assert_eq!((f.sender, f.receiver), (7, 8));
    }
}

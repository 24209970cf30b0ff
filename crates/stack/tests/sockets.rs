//! Sockets: bounded queues with counted refusals and drops, FIFO order,
//! datagram truncation, demultiplexing rules, pool accounting and the
//! queue probes; and `Packet::from_payload`, which every send relies on.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use probe::Flow;
use stack::buffer::{Packet, PacketError, Pool, PoolConfig};
use stack::socket::{
    RawConfig, RawFamily, RawPacket, RawSocket, ReceivedDatagram, SendError, UdpConfig, UdpSocket,
};
use wire::ip::IpProtocol;

fn small_pool(buffers: usize) -> Pool {
    Pool::new(PoolConfig {
        buffer_size: 64,
        headroom: 16,
        buffers,
    })
    .unwrap()
}

fn default_pool() -> Pool {
    Pool::new(PoolConfig {
        buffers: 256,
        ..PoolConfig::default()
    })
    .unwrap()
}

fn flatten(packet: &Packet) -> Vec<u8> {
    packet.parts().flatten().copied().collect()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn v6(last: u16, port: u16) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, last)),
        port,
    )
}

fn v4(last: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)), port)
}

fn received(pool: &Pool, data: &[u8], remote: SocketAddr, local: SocketAddr) -> ReceivedDatagram {
    ReceivedDatagram {
        remote,
        local,
        payload: Packet::from_payload(pool, Flow::NONE, data).unwrap(),
    }
}

// ---------------------------------------------------------------- from_payload

#[test]
fn from_payload_chains_a_large_payload_and_returns_every_buffer() {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let data = pattern(20_000, 7);
    let packet = Packet::from_payload(&pool, Flow::NONE, &data).unwrap();
    assert_eq!(packet.len(), 20_000);
    assert_eq!(flatten(&packet), data);
    // The head keeps its headroom for headers; the rest fills whole
    // buffers: 2048 bytes in the head, then 2304 per buffer.
    assert_eq!(packet.headroom(), 256);
    let parts: Vec<usize> = packet.parts().map(<[u8]>::len).collect();
    assert_eq!(parts[0], 2304 - 256);
    assert!(parts[1..parts.len() - 1].iter().all(|&n| n == 2304));
    assert_eq!(parts.len(), 1 + (20_000 - 2048usize).div_ceil(2304));
    assert_eq!(pool.in_use(), parts.len());
    drop(packet);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn from_payload_small_and_empty_payloads_use_one_buffer() {
    let pool = small_pool(4);
    let packet = Packet::from_payload(&pool, Flow::NONE, b"hello").unwrap();
    assert_eq!(flatten(&packet), b"hello");
    assert_eq!(pool.in_use(), 1);
    let empty = Packet::from_payload(&pool, Flow::NONE, &[]).unwrap();
    assert!(empty.is_empty());
    assert_eq!(pool.in_use(), 2);
    // Exactly filling the head (64 - 16 = 48 bytes) needs no second buffer.
    let full = Packet::from_payload(&pool, Flow::NONE, &[9; 48]).unwrap();
    assert_eq!(full.parts().count(), 1);
    assert_eq!(pool.in_use(), 3);
}

#[test]
fn from_payload_fails_cleanly_when_the_pool_runs_out_midway() {
    let pool = small_pool(3);
    // 48 in the head + 64 + 64 = 176 bytes fit three buffers exactly.
    let fits = Packet::from_payload(&pool, Flow::NONE, &pattern(176, 1)).unwrap();
    assert_eq!(flatten(&fits), pattern(176, 1));
    assert_eq!(pool.in_use(), 3);
    drop(fits);
    assert_eq!(
        Packet::from_payload(&pool, Flow::NONE, &pattern(177, 1)).unwrap_err(),
        PacketError::PoolExhausted
    );
    assert_eq!(pool.in_use(), 0);
    assert_eq!(
        Packet::from_payload(&pool, Flow::NONE, &pattern(500, 1)).unwrap_err(),
        PacketError::PoolExhausted
    );
    assert_eq!(pool.in_use(), 0);
    assert_eq!(pool.stats().allocated, pool.stats().freed);
}

// ---------------------------------------------------------------- UDP send

#[test]
fn send_queue_is_bounded_and_refusals_are_counted() {
    let pool = default_pool();
    let config = UdpConfig {
        send_queue_datagrams: 3,
        ..UdpConfig::default()
    };
    let mut socket = UdpSocket::new(config, Flow::untraced(1));
    for i in 0..3 {
        socket.send_to(&pool, &[i; 10], v6(2, 9)).unwrap();
    }
    assert_eq!(
        socket.send_to(&pool, &[3; 10], v6(2, 9)),
        Err(SendError::QueueFull)
    );
    assert_eq!(
        socket.send_to(&pool, &[4; 10], v6(2, 9)),
        Err(SendError::QueueFull)
    );
    assert_eq!(socket.send_queue_len(), 3);
    // A refused send holds no buffer.
    assert_eq!(pool.in_use(), 3);
    let c = socket.counters();
    assert_eq!((c.send_queue_full, c.send_queue_high_water), (2, 3));
    assert_eq!(c.sent_datagrams, 0);

    // Taking one makes room for exactly one more.
    assert!(socket.dequeue_outgoing().is_some());
    socket.send_to(&pool, &[5; 10], v6(2, 9)).unwrap();
    assert_eq!(
        socket.send_to(&pool, &[6; 10], v6(2, 9)),
        Err(SendError::QueueFull)
    );
    assert_eq!(socket.counters().send_queue_full, 3);
}

#[test]
fn a_zero_sized_send_queue_refuses_everything() {
    let pool = default_pool();
    let config = UdpConfig {
        send_queue_datagrams: 0,
        ..UdpConfig::default()
    };
    let mut socket = UdpSocket::new(config, Flow::NONE);
    assert_eq!(
        socket.send_to(&pool, b"x", v4(2, 7)),
        Err(SendError::QueueFull)
    );
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn oversized_datagrams_are_refused() {
    let pool = default_pool();
    let config = UdpConfig {
        max_datagram: 100,
        ..UdpConfig::default()
    };
    let mut socket = UdpSocket::new(config, Flow::NONE);
    assert_eq!(
        socket.send_to(&pool, &[0; 101], v6(2, 9)),
        Err(SendError::TooLarge { len: 101, max: 100 })
    );
    assert_eq!(socket.send_queue_len(), 0);
    assert_eq!(pool.in_use(), 0);
    socket.send_to(&pool, &[0; 100], v6(2, 9)).unwrap();
    // By default the bound is the destination family's: the largest UDP
    // payload over IPv6 (65 535 - 8, RFC 8200 §3) or IPv4 (65 535 - 20 -
    // 8, RFC 791), whatever the socket sent to before.
    let mut big = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    big.send_to(&pool, &vec![0; 65_527], v6(2, 9)).unwrap();
    assert_eq!(
        big.send_to(&pool, &vec![0; 65_528], v6(2, 9)),
        Err(SendError::DatagramTooLarge {
            len: 65_528,
            max: 65_527,
            family: "IPv6"
        })
    );
    big.send_to(&pool, &vec![0; 65_507], v4(2, 9)).unwrap();
    assert_eq!(
        big.send_to(&pool, &vec![0; 65_508], v4(2, 9)),
        Err(SendError::DatagramTooLarge {
            len: 65_508,
            max: 65_507,
            family: "IPv4"
        })
    );
    assert_eq!(big.send_queue_len(), 2);
}

#[test]
fn send_fails_cleanly_when_the_pool_is_exhausted() {
    let pool = small_pool(2);
    let mut socket = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    socket.send_to(&pool, &[1; 40], v6(2, 9)).unwrap();
    // 48 + 64 bytes would need two more buffers; only one is left.
    assert_eq!(
        socket.send_to(&pool, &[2; 100], v6(2, 9)),
        Err(SendError::PoolExhausted)
    );
    assert_eq!(socket.send_queue_len(), 1);
    assert_eq!(pool.in_use(), 1);
}

#[test]
fn datagrams_leave_in_order_with_their_metadata() {
    let pool = default_pool();
    let mut socket = UdpSocket::new(UdpConfig::default(), Flow::untraced(3));
    socket.bind(v6(0, 0).with_unspecified());
    socket.send_to(&pool, b"first", v6(2, 1000)).unwrap();
    socket.set_hop_limit(Some(7));
    assert_eq!(socket.hop_limit(), Some(7));
    let second = pattern(5000, 3);
    socket.send_to(&pool, &second, v6(3, 2000)).unwrap();
    socket.set_hop_limit(None);
    socket.send_to(&pool, b"", v6(4, 3000)).unwrap();
    // The host assigns an ephemeral port after the sends.
    socket.set_local_port(49_152);

    let a = socket.dequeue_outgoing().unwrap();
    assert_eq!(flatten(&a.payload), b"first");
    assert_eq!(a.remote, v6(2, 1000));
    assert_eq!(a.hop_limit, None);
    assert_eq!(a.local, Some(v6(0, 49_152).with_unspecified()));
    // The payload is only payload: the head keeps all its headroom.
    assert_eq!(a.payload.headroom(), PoolConfig::default().headroom);
    assert_eq!(a.payload.flow(), Flow::untraced(3));

    let b = socket.dequeue_outgoing().unwrap();
    assert_eq!(flatten(&b.payload), second);
    assert_eq!((b.remote, b.hop_limit), (v6(3, 2000), Some(7)));

    let c = socket.dequeue_outgoing().unwrap();
    assert!(c.payload.is_empty());
    assert_eq!((c.remote, c.hop_limit), (v6(4, 3000), None));
    assert!(socket.dequeue_outgoing().is_none());

    let counters = socket.counters();
    assert_eq!(counters.sent_datagrams, 3);
    assert_eq!(counters.sent_bytes, 5 + 5000);
}

#[test]
fn an_unbound_socket_sends_without_a_local_address() {
    let pool = default_pool();
    let mut socket = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    assert_eq!(socket.local(), None);
    socket.send_to(&pool, b"x", v4(2, 53)).unwrap();
    // Without a binding there is no family to give a port to.
    socket.set_local_port(1234);
    assert_eq!(socket.local(), None);
    assert_eq!(socket.dequeue_outgoing().unwrap().local, None);
}

#[test]
fn a_bound_socket_sends_only_to_its_family() {
    let pool = default_pool();
    let mut socket = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    socket.bind(v4(1, 5000));
    assert_eq!(
        socket.send_to(&pool, b"x", v6(2, 9)),
        Err(SendError::FamilyMismatch)
    );
    socket.send_to(&pool, b"x", v4(2, 9)).unwrap();
    assert_eq!(socket.send_queue_len(), 1);
}

// ---------------------------------------------------------------- UDP receive

#[test]
fn recv_queue_is_bounded_by_count_with_counted_drops() {
    let pool = default_pool();
    let config = UdpConfig {
        recv_queue_datagrams: 2,
        ..UdpConfig::default()
    };
    let mut socket = UdpSocket::new(config, Flow::NONE);
    let (remote, local) = (v6(2, 9), v6(1, 5000));
    assert!(socket.deliver(received(&pool, b"one", remote, local)));
    assert!(socket.deliver(received(&pool, b"two", remote, local)));
    assert!(!socket.deliver(received(&pool, b"three", remote, local)));
    assert_eq!(socket.recv_queue_len(), 2);
    // The dropped datagram's buffer went back to the pool.
    assert_eq!(pool.in_use(), 2);
    let c = socket.counters();
    assert_eq!(c.recv_queue_full, 1);
    assert_eq!((c.received_datagrams, c.received_bytes), (2, 6));
    assert_eq!(c.recv_queue_high_water, 2);

    let first = socket.recv().unwrap();
    assert_eq!(flatten(&first.payload), b"one");
    assert_eq!((first.remote, first.local), (remote, local));
    assert!(socket.deliver(received(&pool, b"four", remote, local)));
    let mut out = [0u8; 16];
    assert_eq!(socket.recv_from(&mut out), Some((3, remote)));
    assert_eq!(&out[..3], b"two");
    assert_eq!(socket.recv_from(&mut out), Some((4, remote)));
    assert_eq!(&out[..4], b"four");
    assert_eq!(socket.recv_from(&mut out), None);
    assert!(socket.recv().is_none());
}

#[test]
fn recv_queue_is_bounded_by_bytes_with_counted_drops() {
    let pool = default_pool();
    let config = UdpConfig {
        recv_queue_datagrams: 10,
        recv_queue_bytes: 100,
        ..UdpConfig::default()
    };
    let mut socket = UdpSocket::new(config, Flow::NONE);
    let (remote, local) = (v4(2, 9), v4(1, 5000));
    assert!(socket.deliver(received(&pool, &[1; 60], remote, local)));
    assert!(!socket.deliver(received(&pool, &[2; 41], remote, local)));
    assert!(socket.deliver(received(&pool, &[3; 40], remote, local)));
    assert!(!socket.deliver(received(&pool, &[4; 1], remote, local)));
    // Larger than the whole bound: never accepted.
    assert!(!socket.deliver(received(&pool, &[5; 101], remote, local)));
    assert_eq!(socket.counters().recv_queue_full, 3);
    assert_eq!(socket.counters().received_bytes, 100);
    assert_eq!(socket.recv_queue_len(), 2);

    // Reading frees its bytes.
    assert_eq!(socket.recv().unwrap().payload.len(), 60);
    assert!(socket.deliver(received(&pool, &[6; 60], remote, local)));
    assert!(!socket.deliver(received(&pool, &[7; 1], remote, local)));
}

#[test]
fn recv_from_truncates_and_discards_the_rest() {
    let pool = default_pool();
    let mut socket = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    let (remote, local) = (v6(2, 9), v6(1, 5000));
    let long = pattern(5000, 9);
    assert!(socket.deliver(received(&pool, &long, remote, local)));
    assert!(socket.deliver(received(&pool, b"next", remote, local)));
    let mut out = [0u8; 4];
    assert_eq!(socket.recv_from(&mut out), Some((4, remote)));
    assert_eq!(out, long[..4]);
    // The rest of the long datagram is gone: the next read is the next one.
    let mut out = [0u8; 64];
    assert_eq!(socket.recv_from(&mut out), Some((4, remote)));
    assert_eq!(&out[..4], b"next");

    // A chained payload is read whole into a buffer large enough.
    assert!(socket.deliver(received(&pool, &long, remote, local)));
    let mut all = vec![0u8; 6000];
    assert_eq!(socket.recv_from(&mut all), Some((5000, remote)));
    assert_eq!(&all[..5000], &long[..]);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn accepts_matches_port_address_and_family() {
    let mut any6 = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    assert!(!any6.accepts(v6(1, 0)), "an unbound socket accepts nothing");
    any6.bind(v6(0, 5000).with_unspecified());
    assert!(any6.accepts(v6(1, 5000)));
    assert!(any6.accepts(v6(7, 5000)));
    assert!(!any6.accepts(v6(1, 5001)));
    assert!(!any6.accepts(v4(1, 5000)), "an IPv6 wildcard is not IPv4");

    let mut specific = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    specific.bind(v6(1, 5000));
    assert!(specific.accepts(v6(1, 5000)));
    assert!(!specific.accepts(v6(2, 5000)));
    assert!(!specific.accepts(v6(1, 5001)));

    let mut any4 = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    any4.bind(v4(0, 53).with_unspecified());
    assert!(any4.accepts(v4(9, 53)));
    assert!(!any4.accepts(v6(9, 53)));

    // Port 0 waits for the host's ephemeral port.
    let mut ephemeral = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    ephemeral.bind(v4(1, 0));
    ephemeral.set_local_port(49_999);
    assert_eq!(ephemeral.local(), Some(v4(1, 49_999)));
    assert!(ephemeral.accepts(v4(1, 49_999)));
    assert!(!ephemeral.accepts(v4(1, 0)));
}

#[test]
fn dropping_sockets_returns_every_buffer() {
    let pool = default_pool();
    let mut udp = UdpSocket::new(UdpConfig::default(), Flow::NONE);
    let mut raw = RawSocket::new(
        RawConfig::default(),
        RawFamily::Ipv6,
        IpProtocol::Icmpv6,
        Flow::NONE,
    );
    for i in 0..5 {
        udp.send_to(&pool, &pattern(3000, i), v6(2, 9)).unwrap();
        assert!(udp.deliver(received(&pool, &pattern(2500, i), v6(2, 9), v6(1, 1))));
        raw.send_to(&pool, &[128, 0, 0, 0], v6(2, 0).ip(), None)
            .unwrap();
    }
    assert!(pool.in_use() > 0);
    // One taken by the host and dropped: its buffers come back too.
    drop(udp.dequeue_outgoing());
    drop((udp, raw));
    assert_eq!(pool.in_use(), 0);
    assert_eq!(pool.stats().allocated, pool.stats().freed);
}

// ---------------------------------------------------------------- raw

fn icmpv6_socket(config: RawConfig) -> RawSocket {
    RawSocket::new(
        config,
        RawFamily::Ipv6,
        IpProtocol::Icmpv6,
        Flow::untraced(4),
    )
}

#[test]
fn raw_accepts_by_family_and_protocol_number() {
    let socket = icmpv6_socket(RawConfig::default());
    assert_eq!(socket.family(), RawFamily::Ipv6);
    assert_eq!(socket.protocol(), IpProtocol::Icmpv6);
    assert!(socket.accepts(RawFamily::Ipv6, IpProtocol::Icmpv6));
    assert!(socket.accepts(RawFamily::Ipv6, IpProtocol::Unknown(58)));
    assert!(socket.accepts(RawFamily::Ipv6, IpProtocol::from(58)));
    assert!(!socket.accepts(RawFamily::Ipv4, IpProtocol::Icmpv6));
    assert!(!socket.accepts(RawFamily::Ipv6, IpProtocol::Icmp));
    assert!(!socket.accepts(RawFamily::Ipv6, IpProtocol::Udp));

    let icmp4 = RawSocket::new(
        RawConfig::default(),
        RawFamily::Ipv4,
        IpProtocol::Icmp,
        Flow::NONE,
    );
    assert!(icmp4.accepts(RawFamily::Ipv4, IpProtocol::Icmp));
    assert!(!icmp4.accepts(RawFamily::Ipv6, IpProtocol::Icmp));
    assert!(!icmp4.accepts(RawFamily::Ipv4, IpProtocol::Icmpv6));
}

#[test]
fn raw_send_checks_family_size_and_queue() {
    let pool = default_pool();
    let config = RawConfig {
        send_queue_packets: 2,
        max_packet: 1000,
        ..RawConfig::default()
    };
    let mut socket = icmpv6_socket(config);
    let echo = [128u8, 0, 0, 0, 0, 1, 0, 1];
    let dest = v6(2, 0).ip();
    assert_eq!(
        socket.send_to(&pool, &echo, v4(2, 0).ip(), None),
        Err(SendError::FamilyMismatch)
    );
    assert_eq!(
        socket.send_to(&pool, &[0; 1001], dest, None),
        Err(SendError::TooLarge {
            len: 1001,
            max: 1000
        })
    );
    socket.send_to(&pool, &echo, dest, Some(255)).unwrap();
    socket.send_to(&pool, &[1; 3000], dest, None).unwrap_err();
    socket.send_to(&pool, &[1; 1000], dest, None).unwrap();
    assert_eq!(
        socket.send_to(&pool, &echo, dest, None),
        Err(SendError::QueueFull)
    );
    assert_eq!(socket.counters().send_queue_full, 1);
    assert_eq!(pool.in_use(), 2);

    let first = socket.dequeue_outgoing().unwrap();
    assert_eq!(flatten(&first.payload), echo);
    assert_eq!(first.remote, dest);
    assert_eq!(first.local, IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    assert_eq!(first.hop_limit, 255);
    let second = socket.dequeue_outgoing().unwrap();
    assert_eq!(second.payload.len(), 1000);
    assert_eq!(second.hop_limit, 0, "0 asks for the host's default");
    assert!(socket.dequeue_outgoing().is_none());
    assert_eq!(socket.counters().sent_datagrams, 2);
    assert_eq!(socket.counters().sent_bytes, 1008);
}

#[test]
fn raw_receive_is_bounded_and_truncates() {
    let pool = default_pool();
    let config = RawConfig {
        recv_queue_packets: 2,
        recv_queue_bytes: 64,
        ..RawConfig::default()
    };
    let mut socket = icmpv6_socket(config);
    let packet = |data: &[u8], hop_limit| RawPacket {
        remote: v6(2, 0).ip(),
        local: v6(1, 0).ip(),
        hop_limit,
        payload: Packet::from_payload(&pool, Flow::NONE, data).unwrap(),
    };
    assert!(socket.deliver(packet(&[136; 32], 255)));
    assert!(
        !socket.deliver(packet(&[1; 33], 255)),
        "over the byte bound"
    );
    assert!(socket.deliver(packet(&[129; 8], 64)));
    assert!(!socket.deliver(packet(&[1; 1], 64)), "over the count bound");
    assert_eq!(socket.counters().recv_queue_full, 2);
    assert_eq!(socket.recv_queue_len(), 2);

    let first = socket.recv().unwrap();
    assert_eq!((first.hop_limit, first.payload.len()), (255, 32));
    assert_eq!(first.local, v6(1, 0).ip());
    let mut out = [0u8; 4];
    assert_eq!(socket.recv_from(&mut out), Some((4, v6(2, 0).ip())));
    assert_eq!(out, [129; 4]);
    assert_eq!(socket.recv_from(&mut out), None);
    drop(first);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn raw_family_helpers() {
    assert_eq!(RawFamily::of(v4(1, 0).ip()), RawFamily::Ipv4);
    assert_eq!(RawFamily::of(v6(1, 0).ip()), RawFamily::Ipv6);
    assert!(RawFamily::Ipv4.unspecified().is_ipv4());
    assert!(RawFamily::Ipv6.unspecified().is_unspecified());
}

// ---------------------------------------------------------------- probes

trait WithUnspecified {
    fn with_unspecified(self) -> Self;
}

impl WithUnspecified for SocketAddr {
    /// The same port on the family's unspecified address.
    fn with_unspecified(self) -> Self {
        let ip = match self {
            SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        SocketAddr::new(ip, self.port())
    }
}

/// (location name, len, flow id, aux) of each record this thread made.
type Seen = Vec<(&'static str, u32, u32, u64)>;

/// Runs `f` on a fresh thread with probes on for traced flows, returning
/// the socket-layer records (buffer and copy probes left out).
fn socket_records(f: impl FnOnce() + Send + 'static) -> Seen {
    // The mode is global: tests that switch it take turns.
    static MODE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = MODE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    std::thread::spawn(move || {
        probe::init_thread(4096);
        // Only traced flows record: the other tests running in parallel
        // use untraced flows and stay silent.
        probe::set_mode(probe::Mode::TracedFlows);
        f();
        probe::set_mode(probe::Mode::Off);
        probe::drain_thread()
            .iter()
            .map(|r| {
                (
                    stack::probes::LOCATIONS[r.loc as usize].name,
                    r.len,
                    r.flow,
                    r.aux,
                )
            })
            .filter(|(name, ..)| name.starts_with("socket."))
            .collect()
    })
    .join()
    .unwrap()
}

#[test]
fn udp_queue_probes_pair_enqueue_and_dequeue() {
    let seen = socket_records(|| {
        let pool = default_pool();
        let mut socket = UdpSocket::new(UdpConfig::default(), Flow::untraced(21));
        // Untraced: nothing recorded.
        socket.send_to(&pool, b"quiet", v6(2, 9)).unwrap();
        drop(socket.dequeue_outgoing());
        socket.set_traced(true);
        assert_eq!(socket.flow(), Flow::traced(21));
        socket.send_to(&pool, b"hello", v6(2, 9)).unwrap();
        socket.send_to(&pool, &[0; 300], v6(2, 9)).unwrap();
        // Turning tracing off between enqueue and dequeue still closes
        // the pair.
        socket.set_traced(false);
        drop(socket.dequeue_outgoing());
        socket.set_traced(true);
        drop(socket.dequeue_outgoing());

        socket.bind(v6(1, 5000));
        assert!(socket.deliver(received(&pool, b"reply!", v6(2, 9), v6(1, 5000))));
        let mut out = [0u8; 4];
        assert_eq!(socket.recv_from(&mut out), Some((4, v6(2, 9))));
    });
    #[cfg(not(feature = "probes"))]
    assert!(seen.is_empty());
    #[cfg(feature = "probes")]
    {
        // Message numbers count every send call, the quiet one included.
        let expected: Seen = vec![
            ("socket.send.enter", 5, 21, 2),
            ("socket.send_queue.enqueue", 5, 21, 2),
            ("socket.send.exit", 5, 21, 2),
            ("socket.send.enter", 300, 21, 3),
            ("socket.send_queue.enqueue", 300, 21, 3),
            ("socket.send.exit", 300, 21, 3),
            ("socket.send_queue.dequeue", 5, 21, 2),
            ("socket.send_queue.dequeue", 300, 21, 3),
            ("socket.recv_queue.enqueue", 6, 21, 1),
            ("socket.recv.enter", 4, 21, 1),
            ("socket.recv_queue.dequeue", 6, 21, 1),
            // The exit carries the bytes copied.
            ("socket.recv.exit", 4, 21, 1),
        ];
        assert_eq!(seen, expected);
    }
}

#[test]
fn a_traced_packet_is_traced_through_an_untraced_socket_under_the_senders_flow() {
    let seen = socket_records(|| {
        let pool = default_pool();
        let mut socket = UdpSocket::new(UdpConfig::default(), Flow::untraced(22));
        socket.bind(v4(1, 7));
        // The host set the packet's flow from a received trace option.
        let payload = Packet::from_payload(&pool, Flow::traced(99), b"traced").unwrap();
        assert!(socket.deliver(ReceivedDatagram {
            remote: v4(2, 7),
            local: v4(1, 7),
            payload,
        }));
        assert!(socket.deliver(received(&pool, b"plain", v4(2, 7), v4(1, 7))));
        // It keeps the sender's flow id, so the message can be followed
        // through both stacks.
        let first = socket.recv().unwrap();
        assert_eq!(first.payload.flow(), Flow::traced(99));
        let second = socket.recv().unwrap();
        assert_eq!(second.payload.flow(), Flow::untraced(22));
    });
    #[cfg(feature = "probes")]
    assert_eq!(
        seen,
        vec![
            ("socket.recv_queue.enqueue", 6, 99, 1),
            ("socket.recv_queue.dequeue", 6, 99, 1),
        ]
    );
    #[cfg(not(feature = "probes"))]
    assert!(seen.is_empty());
}

#[test]
fn raw_queue_probes_pair_enqueue_and_dequeue() {
    let seen = socket_records(|| {
        let pool = default_pool();
        let mut socket = RawSocket::new(
            RawConfig::default(),
            RawFamily::Ipv6,
            IpProtocol::Icmpv6,
            Flow::untraced(23),
        );
        socket.set_traced(true);
        assert!(socket.flow().traced);
        socket
            .send_to(&pool, &[128, 0, 0, 0], v6(2, 0).ip(), None)
            .unwrap();
        // A refused send still shows as a socket.send span, with no
        // enqueue.
        socket
            .send_to(&pool, &[0; 4], v4(2, 0).ip(), None)
            .unwrap_err();
        drop(socket.dequeue_outgoing());
        assert!(socket.deliver(RawPacket {
            remote: v6(2, 0).ip(),
            local: v6(1, 0).ip(),
            hop_limit: 64,
            payload: Packet::from_payload(&pool, Flow::NONE, &[129, 0, 0, 0, 0, 1]).unwrap(),
        }));
        let mut out = [0u8; 64];
        assert_eq!(socket.recv_from(&mut out), Some((6, v6(2, 0).ip())));
    });
    #[cfg(feature = "probes")]
    assert_eq!(
        seen,
        vec![
            ("socket.send.enter", 4, 23, 1),
            ("socket.send_queue.enqueue", 4, 23, 1),
            ("socket.send.exit", 4, 23, 1),
            ("socket.send.enter", 4, 23, 2),
            ("socket.send.exit", 4, 23, 2),
            ("socket.send_queue.dequeue", 4, 23, 1),
            ("socket.recv_queue.enqueue", 6, 23, 1),
            ("socket.recv.enter", 64, 23, 1),
            ("socket.recv_queue.dequeue", 6, 23, 1),
            ("socket.recv.exit", 6, 23, 1),
        ]
    );
    #[cfg(not(feature = "probes"))]
    assert!(seen.is_empty());
}

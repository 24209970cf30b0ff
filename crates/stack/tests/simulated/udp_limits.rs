//! The largest UDP datagram of each family, end to end through the
//! default network (host-a — router — host-b): 65 527 payload bytes over
//! IPv6 (Payload Length 65 535 less the UDP header, RFC 8200 §3, no
//! jumbograms) and 65 507 over IPv4 (Total Length 65 535 less the IPv4 and
//! UDP headers, RFC 791, RFC 768), fragmented by host-a and reassembled by
//! host-b; one byte more is refused at the sender with an error naming
//! the family's limit. The limit follows the destination's family, also
//! for a socket not bound before its first send.

use crate::network_support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::{host, host_mut, pattern, udp_listen, warm_up};
use stack::iface::host::UdpHandle;
use stack::runner::Simulator;
use stack::socket::{SendError, UdpConfig, MAX_UDP4_PAYLOAD, MAX_UDP6_PAYLOAD};
use stack::topology::Topology;

const PORT: u16 = 7000;

/// The default network once SLAAC has given both hosts a global address,
/// every neighbour resolved both ways and for both families.
fn network() -> (Simulator, IpAddr, IpAddr) {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
        ["host-a", "host-b"]
            .iter()
            .all(|n| !host(sim, n).global_ipv6_addresses().is_empty())
    });
    assert!(ready, "SLAAC did not finish");
    let a6 = IpAddr::V6(host(&sim, "host-a").global_ipv6_addresses()[0]);
    let b6 = IpAddr::V6(host(&sim, "host-b").global_ipv6_addresses()[0]);
    let a4 = IpAddr::V4(host(&sim, "host-a").ipv4_addresses()[0]);
    let b4 = IpAddr::V4(host(&sim, "host-b").ipv4_addresses()[0]);
    warm_up(&mut sim, "host-a", "host-b", b6, a6);
    warm_up(&mut sim, "host-a", "host-b", b4, a4);
    (sim, b6, b4)
}

/// Sends `data` from `socket` on host-a to `to` and returns what host-b's
/// `rx` received.
fn deliver(
    sim: &mut Simulator,
    socket: UdpHandle,
    rx: UdpHandle,
    to: SocketAddr,
    data: &[u8],
) -> Vec<u8> {
    host_mut(sim, "host-a")
        .udp_send_to(socket, data, to)
        .unwrap_or_else(|e| panic!("{} bytes to {to}: {e}", data.len()));
    let arrived = sim.run_until_with(Duration::from_secs(2), |sim| {
        host_mut(sim, "host-b").udp(rx).recv_queue_len() > 0
    });
    assert!(arrived, "{} bytes to {to} did not arrive", data.len());
    let datagram = host_mut(sim, "host-b").udp(rx).recv().unwrap();
    let mut got = vec![0; datagram.payload.len()];
    datagram.payload.copy_out(0, &mut got);
    got
}

#[test]
fn the_largest_datagram_of_each_family_crosses_and_one_byte_more_is_refused() {
    let (mut sim, b6, b4) = network();
    let rx6 = udp_listen(&mut sim, "host-b", true, PORT);
    let rx4 = udp_listen(&mut sim, "host-b", false, PORT);
    let to6 = SocketAddr::new(b6, PORT);
    let to4 = SocketAddr::new(b4, PORT);
    assert_eq!(MAX_UDP6_PAYLOAD, 65_527);
    assert_eq!(MAX_UDP4_PAYLOAD, 65_507);

    // A socket bound to IPv6, one bound to IPv4, and an unbound one that
    // sends to both.
    let h = host_mut(&mut sim, "host-a");
    let bound6 = h.udp_open(UdpConfig::default());
    h.udp_bind(bound6, SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0));
    let bound4 = h.udp_open(UdpConfig::default());
    h.udp_bind(bound4, SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0));
    let cases = [
        (bound6, to6, rx6, MAX_UDP6_PAYLOAD),
        (bound4, to4, rx4, MAX_UDP4_PAYLOAD),
    ];
    for (socket, to, rx, max) in cases {
        for len in [max, max - 19] {
            let data = pattern(len);
            assert!(
                deliver(&mut sim, socket, rx, to, &data) == data,
                "{len} to {to}"
            );
        }
        let family = if to.is_ipv6() { "IPv6" } else { "IPv4" };
        let refused = host_mut(&mut sim, "host-a").udp_send_to(socket, &pattern(max + 1), to);
        assert_eq!(
            refused,
            Err(SendError::DatagramTooLarge {
                len: max + 1,
                max,
                family
            })
        );
        assert_eq!(
            refused.unwrap_err().to_string(),
            format!(
                "a {}-byte payload exceeds the {max} bytes a UDP datagram over {family} carries",
                max + 1
            )
        );
    }

    // An unbound socket takes the family of its first destination: over
    // IPv6, the IPv6 limit.
    let unbound = host_mut(&mut sim, "host-a").udp_open(UdpConfig::default());
    let data = pattern(MAX_UDP6_PAYLOAD);
    assert!(deliver(&mut sim, unbound, rx6, to6, &data) == data);

    // A smaller limit of the socket's own still applies to both.
    let capped = host_mut(&mut sim, "host-a").udp_open(UdpConfig {
        max_datagram: 1000,
        ..UdpConfig::default()
    });
    let refused = host_mut(&mut sim, "host-a").udp_send_to(capped, &pattern(1001), to6);
    assert_eq!(
        refused,
        Err(SendError::TooLarge {
            len: 1001,
            max: 1000
        })
    );
    // Nothing was dropped on the way (frames for other hosts' MACs on the
    // shared link aside).
    for name in ["host-a", "host-b", "router"] {
        let drops = host(&sim, name).drops().clone();
        let kept = drops.keys().all(|&k| k == "ethernet_not_for_us");
        assert!(kept, "{name} dropped {drops:?}");
    }
}

//! The host's side of tunnels over its own IPv4 (`iface::tunnel`): adding
//! a tunnel interface, encapsulation into IPv4 output (RFC 4213 §3.5),
//! decapsulation from IPv4 input with the ingress checks (§3.6), and
//! ICMPv4 errors about encapsulated packets relayed to the IPv6 source
//! (§3.4).
//!
//! The encapsulation is the `tunnel.transmit` span, which holds the
//! encapsulating IPv4 output (`ipv4.output`); the decapsulation and its
//! checks are `tunnel.receive`, inside the outer packet's `ipv4.input`.
//! The IPv6 packet then waits on the IP input queue like a received one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use probe::Flow;
use wire::ethernet::EthernetAddress;
use wire::icmpv4::Icmpv4Repr;
use wire::icmpv6::DstUnreachableReason;
use wire::ip::IpProtocol;
use wire::ipv4::{Ipv4Options, Ipv4Repr};

use super::ipv4::{Ipv4Meta, Ipv4Route, Ipv4Send};
use super::ipv6_input::{leading_bytes, Ipv6Meta};
use super::{Host, DEFAULT_HOP_LIMIT};
use crate::buffer::Packet;
use crate::iface::address::{AddressConfig, InterfaceAddresses};
use crate::iface::icmp_error::Icmpv6ErrorKind;
use crate::iface::interface::{AdvertisedPrefix, Advertiser, Interface, Ipv6Interface};
use crate::iface::mld::{MldConfig, MldListener};
use crate::iface::neighbor::{NeighborCache, NeighborConfig};
use crate::iface::route::{InterfaceId, Origin, Route};
use crate::iface::tunnel::configured::{self, Relayed, ENCAPSULATION_LEN};
use crate::iface::tunnel::{automatic, six_over_four};
use crate::iface::tunnel::{HostIpv4Link, MtuMode, Tunnel, TunnelConfig, TunnelError, TunnelKind};
use crate::probes::{
    IPV4_OUTPUT_ENTER, IPV4_OUTPUT_EXIT, NEIGHBOR_LOOKUP_ENTER, NEIGHBOR_LOOKUP_EXIT,
    TUNNEL_RECEIVE_ENTER, TUNNEL_RECEIVE_EXIT, TUNNEL_TRANSMIT_ENTER, TUNNEL_TRANSMIT_EXIT,
};
use crate::time::Instant;

impl Host {
    /// Adds a tunnel interface whose link layer is this host's own IPv4
    /// (see `iface::tunnel`), before the host's first poll: its addresses
    /// then get DAD like every interface's. Its link-local address holds
    /// `config.local` (RFC 4213 §3.7); its prefixes are on-link through
    /// it, and with `default_route` so is `::/0`, via the endpoint.
    pub fn add_tunnel(&mut self, config: TunnelConfig) -> Result<InterfaceId, TunnelError> {
        if self.started {
            return Err(TunnelError::HostStarted);
        }
        config.validate()?;
        if !self.ipv4_addresses().contains(&config.local) {
            return Err(TunnelError::LocalNotOurs(config.local));
        }
        if !config.advertise.is_empty() && !self.router {
            return Err(TunnelError::AdvertiseOnHost);
        }
        if self.interfaces.iter().any(|i| i.name == config.name) {
            return Err(TunnelError::DuplicateName(config.name));
        }
        // One tunnel per endpoint, and one automatic and one 6-over-4
        // interface per IPv4 address.
        let key = |kind: TunnelKind| match kind {
            TunnelKind::Configured { remote, .. } => (kind.name(), remote),
            _ => (kind.name(), Ipv4Addr::UNSPECIFIED),
        };
        let (_, remote) = key(config.kind);
        if self
            .tunnels
            .iter()
            .any(|t| t.config.local == config.local && key(t.config.kind) == key(config.kind))
        {
            return Err(TunnelError::Duplicate {
                local: config.local,
                remote,
            });
        }
        let id = InterfaceId(self.interfaces.len());
        let address_config = AddressConfig {
            random_seed: Some(self.rng.next_u64()),
            solicit_routers: !self.router,
            dup_addr_detect_transmits: config
                .dad_transmits
                .unwrap_or(AddressConfig::default().dup_addr_detect_transmits),
            ..AddressConfig::default()
        };
        let neighbors = NeighborCache::new(NeighborConfig {
            random_seed: Some(self.rng.next_u64()),
            ..NeighborConfig::default()
        });
        let mld = MldListener::new(MldConfig {
            random_seed: self.rng.next_u64(),
            ..MldConfig::default()
        });
        let v6 = Ipv6Interface {
            addresses: InterfaceAddresses::new(
                address_config,
                configured::interface_id(config.local),
            ),
            neighbors,
            mld,
            mtu: config.mtu,
            hop_limit: DEFAULT_HOP_LIMIT,
            // Router mode on the tunnel, as on a topology interface.
            advertiser: (!config.advertise.is_empty()).then(|| Advertiser {
                prefixes: config
                    .advertise
                    .iter()
                    .map(|a| AdvertisedPrefix {
                        prefix: a.prefix.network(),
                        prefix_len: a.prefix.prefix_len,
                        valid_lifetime: a.valid_lifetime,
                        preferred_lifetime: a.preferred_lifetime,
                        on_link: a.on_link,
                        autonomous: a.autonomous,
                    })
                    .collect(),
                sent: 0,
                next: None,
                last: None,
            }),
        };
        let link = HostIpv4Link::new(config.mtu, config.local);
        // A tunnel has no MAC: the link gives the interface identifier. A
        // 6-over-4 link's ND carries its IPv4 address in the MAC's place
        // (RFC 2529 §5).
        let mac = match config.kind {
            TunnelKind::SixOverFour => six_over_four::link_address(config.local),
            _ => EthernetAddress([0; 6]),
        };
        let mut interface = Interface::new(id, config.name.clone(), Box::new(link), mac, v6, None);
        interface.pending_manual = config.ipv6.clone();
        let tunnel = Tunnel::new(id, config);
        let mut routes = vec![Route {
            prefix: Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
            prefix_len: 64,
            next_hop: None,
            interface: id,
            metric: 256,
            origin: Origin::Connected,
        }];
        for cidr in &tunnel.config.ipv6 {
            routes.push(Route {
                prefix: cidr.network(),
                prefix_len: cidr.prefix_len,
                next_hop: None,
                interface: id,
                metric: 0,
                origin: Origin::Connected,
            });
        }
        if let (true, Some(endpoint)) = (tunnel.config.default_route, tunnel.endpoint) {
            // The paper's RLE: the endpoint as a default router.
            routes.push(Route {
                prefix: Ipv6Addr::UNSPECIFIED,
                prefix_len: 0,
                next_hop: Some(endpoint.neighbor),
                interface: id,
                metric: 1024,
                origin: Origin::Static,
            });
        }
        self.interfaces.push(interface);
        self.tunnels.push(tunnel);
        for route in routes {
            self.routes6
                .insert(route)
                .map_err(|e| TunnelError::Route(e.to_string()))?;
        }
        Ok(id)
    }

    /// The host's tunnels over its own IPv4.
    pub fn tunnels(&self) -> &[Tunnel] {
        &self.tunnels
    }

    /// The tunnel whose interface is `interface`.
    pub(super) fn tunnel_index(&self, interface: InterfaceId) -> Option<usize> {
        self.tunnels.iter().position(|t| t.interface == interface)
    }

    /// Sends a finished IPv6 `packet` for next hop `neighbor` through
    /// tunnel `index`: a configured tunnel's endpoint NCE is in its
    /// permanent state and an automatic tunnel's endpoint is in the
    /// address, so neither runs Neighbor Discovery; a 6-over-4 link
    /// resolves unicast neighbours by ND (RFC 2529 §5) and sends multicast
    /// to its IPv4 group (§6).
    pub(super) fn tunnel_transmit(
        &mut self,
        now: Instant,
        index: usize,
        neighbor: Ipv6Addr,
        packet: Packet,
    ) {
        let tunnel = &self.tunnels[index];
        let interface = tunnel.interface;
        let _span = probe::span_with(
            TUNNEL_TRANSMIT_ENTER,
            TUNNEL_TRANSMIT_EXIT,
            packet.flow(),
            || (packet.len() as u32, interface.0 as u64),
        );
        if tunnel.config.kind == TunnelKind::SixOverFour && !neighbor.is_multicast() {
            let resolution = {
                let _span = probe::span_with(
                    NEIGHBOR_LOOKUP_ENTER,
                    NEIGHBOR_LOOKUP_EXIT,
                    packet.flow(),
                    || (packet.len() as u32, 0),
                );
                self.interfaces[interface.0]
                    .v6
                    .neighbors
                    .lookup(now, neighbor, packet)
            };
            if let Some((lladdr, packet)) = self.resolved(now, interface, neighbor, resolution) {
                match six_over_four::ipv4_of_link_address(lladdr) {
                    Some(remote) => self.tunnel_encapsulate(now, index, remote, packet),
                    None => self.count_drop("tunnel_6over4_bad_link_address"),
                }
            }
            return;
        }
        match tunnel.remote_for(neighbor) {
            Ok(remote) => self.tunnel_encapsulate(now, index, remote, packet),
            Err(reason) => self.count_drop(reason),
        }
    }

    /// Sends a packet the host's ND code addressed to link-layer address
    /// `mac` (a queued packet whose neighbour was just resolved) through
    /// tunnel `index`.
    pub(super) fn tunnel_transmit_to(
        &mut self,
        index: usize,
        mac: EthernetAddress,
        packet: Packet,
    ) {
        let tunnel = &self.tunnels[index];
        let _span = probe::span_with(
            TUNNEL_TRANSMIT_ENTER,
            TUNNEL_TRANSMIT_EXIT,
            packet.flow(),
            || (packet.len() as u32, tunnel.interface.0 as u64),
        );
        let remote = match tunnel.config.kind {
            TunnelKind::Configured { remote, .. } => Some(remote),
            TunnelKind::SixOverFour => six_over_four::ipv4_of_mac(mac),
            TunnelKind::Automatic => None,
        };
        match remote {
            Some(remote) => self.tunnel_encapsulate(self.clock, index, remote, packet),
            None => self.count_drop("tunnel_no_endpoint_for_link_address"),
        }
    }

    /// Wraps `packet` in IPv4 to `remote` (§3.5) and hands it to the
    /// host's IPv4 output; a packet over a dynamic tunnel MTU is refused
    /// with a Packet Too Big to its source (§3.2.2).
    fn tunnel_encapsulate(&mut self, now: Instant, index: usize, remote: Ipv4Addr, packet: Packet) {
        let flow = packet.flow();
        let len = packet.len();
        let tunnel = &self.tunnels[index];
        let interface = tunnel.interface;
        let local = tunnel.config.local;
        let ttl = tunnel.config.ttl;
        let configured_mtu = tunnel.config.mtu;
        let mode = match tunnel.config.kind {
            TunnelKind::Configured { mtu_mode, .. } => mtu_mode,
            TunnelKind::Automatic | TunnelKind::SixOverFour => MtuMode::Static,
        };
        // IPv4 routes name only interfaces with IPv4, which a tunnel has
        // not: the encapsulated packet cannot come back into a tunnel. A
        // 6-over-4 group leaves by the interface of the tunnel's address.
        let route = if remote.is_multicast() {
            self.interface_of_address(IpAddr::V4(local))
                .and_then(|out| self.multicast_route_v4(out, remote))
        } else {
            self.ipv4_route(now, remote, flow)
        };
        let Some(route) = route else {
            return self.count_drop("tunnel_no_ipv4_route");
        };
        let dont_frag = configured::dont_fragment(mode, len);
        if dont_frag && len + ENCAPSULATION_LEN > route.mtu {
            // §3.2.2: the IPv4 path MTU learnt since makes the tunnel MTU
            // smaller than this packet: the source hears of it.
            let mtu = configured::dynamic_mtu(route.mtu, configured_mtu);
            self.tunnels[index].counters.too_big += 1;
            self.count_drop("tunnel_packet_too_big");
            let quoted = leading_bytes(&packet, wire::ipv6::MIN_MTU);
            self.tunnel_relay(
                now,
                index,
                &quoted,
                Relayed::PacketTooBig { mtu: mtu as u32 },
            );
            return;
        }
        let counters = &mut self.interfaces[interface.0].counters;
        counters.tx_frames += 1;
        counters.tx_bytes += len as u64;
        self.tunnels[index].counters.encapsulated += 1;
        let send = Ipv4Send {
            src: local,
            dst: remote,
            protocol: IpProtocol::Ipv6,
            ttl,
            dont_frag,
        };
        self.tunnel_ipv4_output(now, route, send, packet);
    }

    /// IPv4 output of an encapsulated packet. §3.5: the header has no
    /// options, so a traced flow's trace option stays in the IPv6 packet
    /// inside (where the receiving link finds it) and a packet of the
    /// tunnel MTU fits the IPv4 link whole. One too big for the IPv4 path
    /// (only with DF clear) is fragmented by the ordinary IPv4 output.
    fn tunnel_ipv4_output(
        &mut self,
        now: Instant,
        route: Ipv4Route,
        send: Ipv4Send,
        mut packet: Packet,
    ) {
        if ENCAPSULATION_LEN + packet.len() > route.mtu {
            self.ipv4_output(now, route, send, packet);
            return;
        }
        let _span = probe::span_with(IPV4_OUTPUT_ENTER, IPV4_OUTPUT_EXIT, packet.flow(), || {
            (packet.len() as u32, 0)
        });
        self.counters.ipv4_sent += 1;
        let ident = self.ipv4_ident;
        self.ipv4_ident = self.ipv4_ident.wrapping_add(1);
        let repr = Ipv4Repr {
            src: send.src,
            dst: send.dst,
            protocol: send.protocol,
            dscp_ecn: 0,
            ident,
            dont_frag: send.dont_frag,
            more_frags: false,
            frag_offset: 0,
            ttl: send.ttl,
            payload_len: packet.len(),
            options: Ipv4Options::EMPTY,
        };
        if self.ipv4_prepend_header(&mut packet, &repr).is_ok() {
            self.ipv4_link_output(now, route.interface, route.neighbor, packet);
        }
    }

    /// Takes an IPv4 packet of protocol 41 for us (`pos`: where its
    /// payload starts): the tunnel it belongs to, the ingress checks of
    /// §3.6, then the IPv6 packet on the IP input queue as the tunnel
    /// interface's.
    pub(super) fn tunnel_receive(
        &mut self,
        _now: Instant,
        meta: Ipv4Meta,
        mut packet: Packet,
        pos: usize,
    ) {
        let _span = probe::span_with(
            TUNNEL_RECEIVE_ENTER,
            TUNNEL_RECEIVE_EXIT,
            packet.flow(),
            || (packet.len() as u32, meta.interface.0 as u64),
        );
        if packet.strip(pos).is_err() {
            self.count_drop("tunnel_truncated");
            return;
        }
        let mut header = [0u8; wire::ipv6::HEADER_LEN];
        if packet.copy_out(0, &mut header) < header.len() || header[0] >> 4 != 6 {
            self.count_drop("tunnel_not_ipv6");
            return;
        }
        let src = ipv6_at(&header, 8);
        let dst = ipv6_at(&header, 24);
        // §3.6: only a configured endpoint's packets (or, automatic and
        // 6-over-4, any unicast IPv4 node's), to the tunnel's own address
        // or, 6-over-4, its groups.
        let Some(index) = self.tunnel_for(&meta, src) else {
            self.count_drop("tunnel_no_endpoint");
            return;
        };
        let verdict = self.tunnels[index]
            .ingress_check(meta.src, src, dst)
            .and_then(|()| {
                // A packet in one of our own addresses' name is spoofed.
                let own = self
                    .interfaces
                    .iter()
                    .any(|i| i.v6.addresses.is_assigned(src));
                if own {
                    Err("tunnel_ingress_own_source")
                } else {
                    Ok(())
                }
            });
        if let Err(reason) = verdict {
            self.tunnels[index].counters.ingress_dropped += 1;
            self.count_drop(reason);
            return;
        }
        // IPv6 input reads the packet from the first part, as a link
        // delivers it: a reassembled datagram's payload is in later ones.
        if packet.parts().next().map_or(0, <[u8]>::len) < packet.len() {
            let Some(whole) = self.pull_up(&packet) else {
                self.count_drop("tunnel_pull_up_failed");
                return;
            };
            packet = whole;
        }
        let interface = self.tunnels[index].interface;
        self.tunnels[index].counters.decapsulated += 1;
        let counters = &mut self.interfaces[interface.0].counters;
        counters.rx_frames += 1;
        counters.rx_bytes += packet.len() as u64;
        self.enqueue_ip_input(interface, packet, meta.dst.is_multicast());
    }

    /// The tunnel an IPv4 packet with `meta` whose IPv6 source is `src`
    /// belongs to: a configured tunnel's endpoint first, then an automatic
    /// tunnel for an IPv4-compatible source, then a 6-over-4 link.
    fn tunnel_for(&self, meta: &Ipv4Meta, src: Ipv6Addr) -> Option<usize> {
        let arrival = self
            .interfaces
            .get(meta.interface.0)
            .and_then(|i| i.v4.as_ref())
            .map(|v4| v4.address);
        let compatible = automatic::ipv4_of_compatible(src).is_some();
        let rank = |tunnel: &Tunnel| -> Option<u8> {
            if meta.dst.is_multicast() {
                return tunnel
                    .accepts_multicast(arrival, meta.src, meta.dst)
                    .then_some(0);
            }
            if !tunnel.accepts_outer(meta.src, meta.dst) {
                return None;
            }
            Some(match tunnel.config.kind {
                TunnelKind::Configured { .. } => 0,
                TunnelKind::Automatic if compatible => 1,
                TunnelKind::SixOverFour => 2,
                TunnelKind::Automatic => 3,
            })
        };
        self.tunnels
            .iter()
            .enumerate()
            .filter_map(|(index, tunnel)| rank(tunnel).map(|rank| (rank, index)))
            .min()
            .map(|(_, index)| index)
    }

    /// Whether the IPv4 interface `interface` receives `group` for a
    /// 6-over-4 link on its address: the link's interface listens to an
    /// IPv6 group that maps to it (RFC 2529 §6). The IPv4 side of the
    /// membership is local: the stack sends no IGMP.
    pub(super) fn six_over_four_member(&self, interface: InterfaceId, group: Ipv4Addr) -> bool {
        if self.tunnels.is_empty() || !six_over_four::is_mapped_group(group) {
            return false;
        }
        let Some(address) = self
            .interfaces
            .get(interface.0)
            .and_then(|i| i.v4.as_ref())
            .map(|v4| v4.address)
        else {
            return false;
        };
        self.tunnels
            .iter()
            .filter(|t| t.config.kind == TunnelKind::SixOverFour && t.config.local == address)
            .any(|t| {
                self.interfaces[t.interface.0]
                    .v6
                    .mld
                    .groups()
                    .iter()
                    .any(|g| six_over_four::ipv4_group(g.group) == group)
            })
    }

    /// Whether a multicast MAC is that of a 6-over-4 group `interface`
    /// receives (01:00:5e and 239.192.X.Y's low 23 bits, RFC 1112 §6.4).
    pub(super) fn six_over_four_accepts_mac(
        &self,
        interface: InterfaceId,
        mac: EthernetAddress,
    ) -> bool {
        let b = mac.0;
        b[..4] == [0x01, 0x00, 0x5e, 0x40]
            && self.six_over_four_member(interface, Ipv4Addr::new(239, 192, b[4], b[5]))
    }

    /// `packet` copied into one buffer (`from_parts` times the copy as
    /// `data.copy`); `None` when no buffer holds it whole (a reassembled
    /// datagram beyond the pool's buffer size).
    fn pull_up(&self, packet: &Packet) -> Option<Packet> {
        let parts: Vec<&[u8]> = packet.parts().collect();
        let whole = Packet::from_parts(&self.pool, packet.flow(), &parts).ok()?;
        let head = whole.parts().next().map_or(0, <[u8]>::len);
        (head == whole.len()).then_some(whole)
    }

    /// An ICMPv4 error that arrived: if it quotes a packet one of our
    /// tunnels sent, relays it to the IPv6 source (§3.4) and says it was
    /// the tunnel's. A Fragmentation Needed also lowers the IPv4 path MTU
    /// to the endpoint, and so the dynamic tunnel MTU (§3.2.2).
    pub(super) fn tunnel_icmpv4_error(&mut self, now: Instant, repr: &Icmpv4Repr<'_>) -> bool {
        if self.tunnels.is_empty() {
            return false;
        }
        let invoking = match repr {
            Icmpv4Repr::DstUnreachable { invoking, .. }
            | Icmpv4Repr::TimeExceeded { invoking, .. }
            | Icmpv4Repr::ParamProblem { invoking, .. } => *invoking,
            _ => return false,
        };
        let Some((src, dst, inner)) = configured::quoted_encapsulation(invoking) else {
            return false;
        };
        // Ours: from a tunnel's address to its endpoint.
        let Some(index) = self.tunnels.iter().position(|t| t.accepts_outer(dst, src)) else {
            return false;
        };
        let Some(relayed) = configured::relay_kind(repr) else {
            self.count_drop("tunnel_icmpv4_not_relayed");
            return true;
        };
        if let Icmpv4Repr::DstUnreachable { next_hop_mtu, .. } = repr {
            if matches!(relayed, Relayed::PacketTooBig { .. }) {
                // RFC 1191 §4: only a datagram with Don't Fragment earns
                // one; a quote without it is forged or garbled, and would
                // shrink the tunnel for nothing.
                let dont_frag = invoking.get(6).is_some_and(|flags| flags & 0x40 != 0);
                if !dont_frag {
                    self.count_drop("tunnel_icmpv4_frag_needed_without_df");
                    return true;
                }
                if *next_hop_mtu >= 68 {
                    let _ = self
                        .dest4
                        .on_packet_too_big(now, dst, u32::from(*next_hop_mtu));
                }
            }
        }
        self.tunnels[index].counters.icmpv4_relayed += 1;
        self.tunnel_relay(now, index, inner, relayed);
        true
    }

    /// Tells the IPv6 source of `inner` (the leading bytes of a packet that
    /// went into tunnel `index`) what the tunnel could not do: our own
    /// packet's path MTU is lowered here as a Packet Too Big would; a
    /// forwarded packet's source gets the ICMPv6 error (§3.4).
    fn tunnel_relay(&mut self, now: Instant, index: usize, inner: &[u8], relayed: Relayed) {
        if inner.len() < wire::ipv6::HEADER_LEN || inner[0] >> 4 != 6 {
            // §3.4: an ICMPv4 error that quotes 8 bytes (RFC 792's
            // minimum) cannot name the IPv6 source.
            self.count_drop("tunnel_icmpv4_quote_too_short");
            return;
        }
        let src = ipv6_at(inner, 8);
        let dst = ipv6_at(inner, 24);
        let ours = self
            .interfaces
            .iter()
            .any(|i| i.v6.addresses.is_assigned(src));
        if ours {
            match relayed {
                Relayed::PacketTooBig { mtu } => self.icmpv6_packet_too_big(now, mtu, inner),
                Relayed::Unreachable => self.count_drop("tunnel_unreachable_own_packet"),
            }
            return;
        }
        let meta = Ipv6Meta {
            interface: self.tunnels[index].interface,
            src,
            dst,
            hop_limit: inner[7],
            link_multicast: false,
        };
        let Ok(packet) = Packet::from_payload(&self.pool, Flow::NONE, inner) else {
            self.count_drop("tunnel_no_buffer");
            return;
        };
        let kind = match relayed {
            Relayed::PacketTooBig { mtu } => Icmpv6ErrorKind::PacketTooBig { mtu },
            Relayed::Unreachable => {
                Icmpv6ErrorKind::DstUnreachable(DstUnreachableReason::AddrUnreachable)
            }
        };
        self.send_icmpv6_error(now, &meta, &packet, kind);
    }
}

/// The IPv6 address at `at` in `bytes` (the caller checked the length).
fn ipv6_at(bytes: &[u8], at: usize) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&bytes[at..at + 16]);
    Ipv6Addr::from(octets)
}

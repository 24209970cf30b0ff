//! Neighbor Discovery (RFC 4861) and its companions on the wire: receiving
//! RS/RA/NS/NA/Redirect into the interface's state machines, carrying out
//! their actions (solicitations, DAD, SLAAC routes, MLD reports), and in
//! router mode sending Router Advertisements and Redirects.

use std::net::Ipv6Addr;
use std::time::Duration;

use probe::Flow;
use wire::ethernet::EthernetAddress;
use wire::icmpv6::Icmpv6Repr;
use wire::mld::{MldAddressRecord, MldRepr};
use wire::ndisc::{NdiscOption, NdiscOptions, NdiscRepr, NeighborFlags, RouterFlags};

use super::ipv6_input::{leading_bytes, Ipv6Meta};
use super::{random_delay, Host};
use crate::buffer::Packet;
use crate::iface::address::{AddressAction, PrefixInformation, RouterAdvertisement};
use crate::iface::interface::{
    ADV_DEFAULT_LIFETIME, MAX_INITIAL_RTR_ADVERTISEMENTS, MAX_INITIAL_RTR_ADVERT_INTERVAL,
    MAX_RA_DELAY_TIME, MAX_RTR_ADV_INTERVAL, MIN_RTR_ADV_INTERVAL,
};
use crate::iface::mld::MldAction;
use crate::iface::neighbor::{Action, AdvertisementFlags};
use crate::iface::route::{InterfaceId, NextHop, Origin, Route};
use crate::time::Instant;

/// RFC 4861 §10: multicast RAs at least this far apart.
const MIN_DELAY_BETWEEN_RAS: Duration = Duration::from_secs(3);
/// Hop limit of every ND message (RFC 4861 §4, checked on receipt).
const ND_HOP_LIMIT: u8 = 255;

/// The link-layer address option of an ND message, if any.
fn link_layer_option(options: &NdiscOptions<'_>, source: bool) -> Option<EthernetAddress> {
    options.iter().flatten().find_map(|option| match option {
        NdiscOption::SourceLinkLayerAddr(mac) if source => Some(mac),
        NdiscOption::TargetLinkLayerAddr(mac) if !source => Some(mac),
        _ => None,
    })
}

impl Host {
    pub(super) fn ndisc_input(&mut self, now: Instant, meta: &Ipv6Meta, message: NdiscRepr<'_>) {
        // RFC 4861 §6.1, §7.1, §8.1: a hop limit of 255 proves the message
        // was not forwarded.
        if meta.hop_limit != ND_HOP_LIMIT {
            self.count_drop("ndisc_bad_hop_limit");
            return;
        }
        let id = meta.interface;
        match message {
            NdiscRepr::RouterSolicit { options } => {
                // RFC 4861 §6.2.6: hosts discard solicitations.
                if self.interfaces[id.0].v6.advertiser.is_none() {
                    return;
                }
                let slla = link_layer_option(&options, true);
                if !meta.src.is_unspecified() {
                    let actions = self.interfaces[id.0]
                        .v6
                        .neighbors
                        .on_router_solicitation(now, meta.src, slla);
                    self.neighbor_actions(now, id, actions);
                }
                // §6.2.6: answer after a random delay, and no sooner than
                // MIN_DELAY_BETWEEN_RAS after the last advertisement.
                let delay = random_delay(&mut self.rng, MAX_RA_DELAY_TIME);
                if let Some(advertiser) = self.interfaces[id.0].v6.advertiser.as_mut() {
                    let mut at = now + delay;
                    if let Some(last) = advertiser.last {
                        at = at.max(last + MIN_DELAY_BETWEEN_RAS);
                    }
                    advertiser.next = Some(advertiser.next.map_or(at, |n| n.min(at)));
                }
            }
            NdiscRepr::RouterAdvert {
                hop_limit,
                router_lifetime,
                reachable_time,
                retrans_time,
                options,
                ..
            } => {
                if self.router {
                    return;
                }
                // RFC 4861 §6.1.2: an RA from other than a link-local
                // address is invalid and MUST be silently discarded, all
                // of it (hop limit, timers and MTU included).
                if !meta.src.is_unicast_link_local()
                    || self.interfaces[id.0].v6.addresses.is_disabled()
                {
                    self.count_drop("ndisc_ra_invalid");
                    return;
                }
                let slla = link_layer_option(&options, true);
                let prefixes: Vec<PrefixInformation> = options
                    .iter()
                    .flatten()
                    .filter_map(|o| PrefixInformation::from_option(&o))
                    .take(crate::topology::MAX_ADVERTISED_PREFIXES * 4)
                    .collect();
                let ra = RouterAdvertisement {
                    source: meta.src,
                    router_lifetime,
                    retrans_timer_ms: retrans_time,
                };
                let actions = self.interfaces[id.0]
                    .v6
                    .addresses
                    .on_router_advertisement(now, &ra, prefixes);
                self.address_actions(now, id, actions);
                // RFC 4861 §6.3.4: every RA resets the default router's
                // invalidation timer; the route follows the Router List.
                let refreshed = self.interfaces[id.0]
                    .v6
                    .addresses
                    .routers()
                    .find(|r| r.address == meta.src)
                    .map(|r| r.expires);
                if let Some(expires) = refreshed {
                    self.install_default_route(id, meta.src, expires);
                }
                let v6 = &mut self.interfaces[id.0].v6;
                // RFC 4861 §6.3.4: Cur Hop Limit, Reachable Time, Retrans
                // Timer and MTU, each when specified.
                if hop_limit != 0 {
                    v6.hop_limit = hop_limit;
                }
                if reachable_time != 0 {
                    v6.neighbors
                        .set_base_reachable_time(Duration::from_millis(u64::from(reachable_time)));
                }
                if retrans_time != 0 {
                    v6.neighbors
                        .set_retrans_timer(Duration::from_millis(u64::from(retrans_time)));
                }
                let link_mtu = self.interfaces[id.0].link.mtu();
                for option in options.iter().flatten() {
                    if let NdiscOption::Mtu(mtu) = option {
                        let mtu = mtu as usize;
                        if (wire::ipv6::MIN_MTU..=link_mtu).contains(&mtu) {
                            self.interfaces[id.0].v6.mtu = mtu;
                        }
                    }
                }
                let actions = self.interfaces[id.0]
                    .v6
                    .neighbors
                    .on_router_advertisement(now, meta.src, slla);
                self.neighbor_actions(now, id, actions);
            }
            NdiscRepr::NeighborSolicit { target, options } => {
                let slla = link_layer_option(&options, true);
                // RFC 4861 §7.1.1: from the unspecified address only to a
                // solicited-node group and without a link-layer option.
                if meta.src.is_unspecified()
                    && (!wire::ipv6::is_solicited_node(&meta.dst) || slla.is_some())
                {
                    self.count_drop("ndisc_ns_invalid");
                    return;
                }
                let (disposition, actions) = self.interfaces[id.0]
                    .v6
                    .addresses
                    .on_neighbor_solicitation(now, meta.src, target);
                self.address_actions(now, id, actions);
                if disposition != crate::iface::address::NsDisposition::Assigned {
                    return;
                }
                if !meta.src.is_unspecified() {
                    let actions = self.interfaces[id.0]
                        .v6
                        .neighbors
                        .on_solicitation(now, meta.src, slla);
                    self.neighbor_actions(now, id, actions);
                }
                // RFC 4861 §7.2.4: solicited NA to the source, or to
                // all-nodes with S clear when the source is unspecified.
                let (dst, solicited) = if meta.src.is_unspecified() {
                    (wire::ipv6::ALL_NODES, false)
                } else {
                    (meta.src, true)
                };
                let mac = self.interfaces[id.0].mac;
                let tlla = [NdiscOption::TargetLinkLayerAddr(mac)];
                let advert = Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert {
                    flags: NeighborFlags {
                        router: self.router,
                        solicited,
                        override_: true,
                    },
                    target,
                    options: NdiscOptions::from_list(&tlla),
                });
                // RFC 4861 §7.2.4: on the arrival link, to the solicitor's
                // link-layer address when it gave one.
                let mac = if solicited { slla } else { None };
                self.send_icmpv6_direct(now, id, target, dst, mac, &advert);
            }
            NdiscRepr::NeighborAdvert {
                flags,
                target,
                options,
            } => {
                // RFC 4861 §7.1.2: a multicast NA cannot be solicited.
                if meta.dst.is_multicast() && flags.solicited {
                    self.count_drop("ndisc_na_invalid");
                    return;
                }
                let tlla = link_layer_option(&options, false);
                let actions = self.interfaces[id.0]
                    .v6
                    .addresses
                    .on_neighbor_advertisement(now, target);
                self.address_actions(now, id, actions);
                let actions = self.interfaces[id.0].v6.neighbors.on_advertisement(
                    now,
                    target,
                    tlla,
                    AdvertisementFlags {
                        router: flags.router,
                        solicited: flags.solicited,
                        override_: flags.override_,
                    },
                );
                self.neighbor_actions(now, id, actions);
            }
            NdiscRepr::Redirect {
                target,
                destination,
                options,
            } => self.redirect_input(now, meta, target, destination, &options),
        }
    }

    /// RFC 4861 §8.1 validity, then §8.3: the destination's next hop
    /// becomes `target`.
    fn redirect_input(
        &mut self,
        now: Instant,
        meta: &Ipv6Meta,
        target: Ipv6Addr,
        destination: Ipv6Addr,
        options: &NdiscOptions<'_>,
    ) {
        if self.router || !meta.src.is_unicast_link_local() {
            self.count_drop("redirect_invalid");
            return;
        }
        // The source must be the current first hop for the destination.
        let Some(current) = self.ipv6_route(now, destination, None, Flow::NONE) else {
            self.count_drop("redirect_invalid");
            return;
        };
        if current.neighbor != meta.src || current.interface != meta.interface {
            self.count_drop("redirect_not_from_first_hop");
            return;
        }
        let on_link = target == destination;
        if !on_link && !target.is_unicast_link_local() {
            self.count_drop("redirect_invalid");
            return;
        }
        let generation = self.routes6.generation();
        let link_mtu = self.interfaces[meta.interface.0].v6.mtu as u32;
        let source = self.select_source_v6(meta.interface, destination);
        let _ = self.dest6.insert(
            now,
            destination,
            NextHop {
                neighbor: target,
                interface: meta.interface,
                source,
                link_mtu,
            },
            generation,
        );
        let tlla = link_layer_option(options, false);
        let actions = self.interfaces[meta.interface.0]
            .v6
            .neighbors
            .on_redirect(now, target, tlla, !on_link);
        self.neighbor_actions(now, meta.interface, actions);
    }

    /// Sends a Redirect for a packet we forward back onto its own link
    /// (RFC 4861 §8.2), rate limited like an ICMP error.
    pub(super) fn send_redirect(
        &mut self,
        now: Instant,
        meta: &Ipv6Meta,
        packet: &Packet,
        next_hop: Ipv6Addr,
    ) {
        // The target must be a link-local router address or the
        // destination itself (§8.2); a global next hop cannot be named.
        let target = if next_hop == meta.dst || next_hop.is_unicast_link_local() {
            next_hop
        } else {
            return;
        };
        // RFC 4861 §4.5: from the link-local address of the interface.
        let Some(source) = self.select_source_v6(meta.interface, wire::ipv6::ALL_NODES) else {
            return;
        };
        if !self.icmp6_limiter.allow(now) {
            self.counters.icmp_errors_suppressed += 1;
            return;
        }
        // The redirected packet, as much as fits the minimum MTU.
        // RFC 4861 §4.5: the whole Redirect within the minimum MTU: IPv6
        // header, the fixed part (40), a TLLA option (8) and the
        // Redirected Header option's own 8 bytes.
        let invoking = leading_bytes(packet, wire::ipv6::MIN_MTU - 40 - 40 - 8 - 8);
        let padded = invoking.len() - invoking.len() % 8;
        let mut option_list = Vec::with_capacity(2);
        if let Some(entry) = self.interfaces[meta.interface.0].v6.neighbors.get(target) {
            if let Some(mac) = entry.lladdr {
                option_list.push(NdiscOption::TargetLinkLayerAddr(mac));
            }
        }
        option_list.push(NdiscOption::RedirectedHeader {
            header_and_data: &invoking[..padded],
        });
        let redirect = Icmpv6Repr::Ndisc(NdiscRepr::Redirect {
            target,
            destination: meta.dst,
            options: NdiscOptions::from_list(&option_list),
        });
        if self.send_icmpv6(
            now,
            Some(source),
            meta.src,
            Some(meta.interface),
            Some(ND_HOP_LIMIT),
            Flow::NONE,
            &redirect,
        ) {
            self.counters.redirects_sent += 1;
        }
    }

    /// Sends a Neighbor Solicitation for `target`: multicast to its
    /// solicited-node group, or unicast to `unicast_to` (NUD probe).
    pub(super) fn send_neighbor_solicitation(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        target: Ipv6Addr,
        unicast_to: Option<EthernetAddress>,
    ) {
        let Some(source) = self.select_source_v6(interface, target) else {
            // No usable address yet: NS from :: is only for DAD (§7.2.2).
            self.count_drop("ndisc_no_source");
            return;
        };
        let mac = self.interfaces[interface.0].mac;
        let slla = [NdiscOption::SourceLinkLayerAddr(mac)];
        let solicit = Icmpv6Repr::Ndisc(NdiscRepr::NeighborSolicit {
            target,
            options: NdiscOptions::from_list(&slla),
        });
        let dst = if unicast_to.is_some() {
            target
        } else {
            wire::ipv6::solicited_node(&target)
        };
        self.send_icmpv6_direct(now, interface, source, dst, unicast_to, &solicit);
    }

    /// Sends an ND message on `interface`, never routed (ND is link-local
    /// by nature): straight to `mac` when given (a NUD probe must not wait
    /// on the very entry it probes), else to the destination's multicast
    /// MAC or through the neighbour cache.
    fn send_icmpv6_direct(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        mac: Option<EthernetAddress>,
        repr: &Icmpv6Repr<'_>,
    ) {
        let len = repr.buffer_len();
        let mut bytes = vec![0; len];
        if repr
            .emit(
                &mut wire::icmpv6::Icmpv6Packet::new_unchecked(&mut bytes[..]),
                &src,
                &dst,
                wire::ip::ChecksumMode::Full,
            )
            .is_err()
        {
            return;
        }
        let Ok(mut packet) = Packet::from_payload(&self.pool, Flow::NONE, &bytes) else {
            self.count_drop("ndisc_no_buffer");
            return;
        };
        let Ok(header) = packet.prepend(wire::ipv6::HEADER_LEN) else {
            return;
        };
        let repr = wire::ipv6::Ipv6Repr {
            src,
            traffic_class: 0,
            flow_label: 0,
            dst,
            next_header: wire::ip::IpProtocol::Icmpv6,
            payload_len: len,
            hop_limit: ND_HOP_LIMIT,
        };
        if repr
            .emit(&mut wire::ipv6::Ipv6Packet::new_unchecked(header))
            .is_ok()
        {
            self.counters.ipv6_sent += 1;
            match mac {
                Some(mac) => {
                    self.ethernet_output(interface, mac, wire::ethernet::EtherType::Ipv6, packet)
                }
                // On the link: a multicast MAC, or the neighbour cache.
                None => self.ipv6_link_output(now, interface, dst, dst, packet),
            }
        }
    }

    // ----- Actions of the state machines -----------------------------------

    pub(super) fn address_actions(
        &mut self,
        now: Instant,
        id: InterfaceId,
        actions: Vec<AddressAction>,
    ) {
        for action in actions {
            match action {
                AddressAction::JoinGroup(group) => {
                    if self.interfaces[id.0].v6.mld.join(now, group).is_err() {
                        self.count_drop("mld_group_table_full");
                    }
                    let actions = self.interfaces[id.0].v6.mld.poll(now);
                    self.mld_actions(now, id, actions);
                }
                AddressAction::LeaveGroup(group) => {
                    let _ = self.interfaces[id.0].v6.mld.leave(now, group);
                    let actions = self.interfaces[id.0].v6.mld.poll(now);
                    self.mld_actions(now, id, actions);
                }
                AddressAction::SendNeighborSolicitation { target } => {
                    // DAD (RFC 4862 §5.4.2): from ::, to the solicited-node
                    // group, no source link-layer address option.
                    let solicit = Icmpv6Repr::Ndisc(NdiscRepr::NeighborSolicit {
                        target,
                        options: NdiscOptions::EMPTY,
                    });
                    self.send_icmpv6_direct(
                        now,
                        id,
                        Ipv6Addr::UNSPECIFIED,
                        wire::ipv6::solicited_node(&target),
                        None,
                        &solicit,
                    );
                }
                AddressAction::SendRouterSolicitation { source } => {
                    let mac = self.interfaces[id.0].mac;
                    let slla = [NdiscOption::SourceLinkLayerAddr(mac)];
                    // RFC 4861 §4.1: no SLLA option from the unspecified
                    // address.
                    let options = if source.is_unspecified() {
                        NdiscOptions::EMPTY
                    } else {
                        NdiscOptions::from_list(&slla)
                    };
                    let solicit = Icmpv6Repr::Ndisc(NdiscRepr::RouterSolicit { options });
                    self.send_icmpv6_direct(
                        now,
                        id,
                        source,
                        wire::ipv6::ALL_ROUTERS,
                        None,
                        &solicit,
                    );
                }
                AddressAction::AddressAssigned(address) => {
                    // A router starts advertising once its link-local
                    // address is usable (RFC 4861 §6.2.2 sends from it).
                    if address.is_unicast_link_local() {
                        if let Some(advertiser) = self.interfaces[id.0].v6.advertiser.as_mut() {
                            advertiser.next.get_or_insert(now);
                        }
                    }
                }
                AddressAction::AddressDuplicate(_) => self.count_drop("dad_duplicate_address"),
                AddressAction::DisableInterface => self.count_drop("dad_interface_disabled"),
                AddressAction::AddressDeprecated(_)
                | AddressAction::AddressPreferredAgain(_)
                | AddressAction::AddressRemoved(_) => {}
                AddressAction::RouterAdded(router) => {
                    let expires = self.interfaces[id.0]
                        .v6
                        .addresses
                        .routers()
                        .find(|r| r.address == router)
                        .map_or(now, |r| r.expires);
                    self.install_default_route(id, router, expires);
                }
                AddressAction::RouterExpired(router) => {
                    self.routes6.retain(|r| {
                        !(r.prefix_len == 0 && r.next_hop == Some(router) && r.interface == id)
                    });
                }
                AddressAction::PrefixAdded { prefix, prefix_len } => {
                    let _ = self.routes6.insert(Route {
                        prefix,
                        prefix_len,
                        next_hop: None,
                        interface: id,
                        metric: 256,
                        origin: Origin::Connected,
                    });
                }
                AddressAction::PrefixExpired { prefix, prefix_len } => {
                    self.routes6.retain(|r| {
                        !(r.prefix == prefix
                            && r.prefix_len == prefix_len
                            && r.next_hop.is_none()
                            && r.interface == id
                            && r.origin == Origin::Connected
                            && r.metric == 256)
                    });
                }
            }
        }
    }

    pub(super) fn neighbor_actions(
        &mut self,
        now: Instant,
        id: InterfaceId,
        actions: Vec<Action<Ipv6Addr, EthernetAddress, Packet>>,
    ) {
        for action in actions {
            match action {
                Action::SendSolicitation { target, unicast_to } => {
                    self.send_neighbor_solicitation(now, id, target, unicast_to)
                }
                Action::Transmit {
                    lladdr, packets, ..
                } => {
                    for packet in packets {
                        self.ethernet_output(id, lladdr, wire::ethernet::EtherType::Ipv6, packet);
                    }
                }
                Action::Unreachable {
                    target,
                    is_router,
                    packets,
                } => {
                    // RFC 4861 §7.2.2: Destination Unreachable code 3 for
                    // each queued packet (to its source, if not us).
                    for packet in packets {
                        self.count_drop("neighbor_unreachable");
                        let Some(head) = packet.parts().next() else {
                            continue;
                        };
                        let Ok(ip) = wire::ipv6::Ipv6Packet::new_checked(head) else {
                            continue;
                        };
                        let meta = Ipv6Meta {
                            interface: id,
                            src: ip.src_addr(),
                            dst: ip.dst_addr(),
                            hop_limit: ip.hop_limit(),
                            link_multicast: false,
                        };
                        if self
                            .interfaces
                            .iter()
                            .any(|i| i.v6.addresses.is_assigned(meta.src))
                        {
                            continue;
                        }
                        self.send_icmpv6_error(
                            now,
                            &meta,
                            &packet,
                            crate::iface::icmp_error::Icmpv6ErrorKind::DstUnreachable(
                                wire::icmpv6::DstUnreachableReason::AddrUnreachable,
                            ),
                        );
                    }
                    if is_router {
                        self.forget_router(id, target);
                    }
                }
                Action::Evicted(evicted) => {
                    for _ in evicted.packets {
                        self.count_drop("neighbor_evicted");
                    }
                }
                Action::RouterLost { target } => self.forget_router(id, target),
            }
        }
    }

    /// The default route through an advertising router, until `expires`
    /// (inserting it again replaces the old expiry).
    fn install_default_route(&mut self, id: InterfaceId, router: Ipv6Addr, expires: Instant) {
        let _ = self.routes6.insert(Route {
            prefix: Ipv6Addr::UNSPECIFIED,
            prefix_len: 0,
            next_hop: Some(router),
            interface: id,
            metric: 1024,
            origin: Origin::RouterAdvertisement { expires },
        });
    }

    /// RFC 4861 §7.2.5, §7.3.3: a neighbour that stopped being a router
    /// (or became unreachable) leaves the default router routes.
    fn forget_router(&mut self, id: InterfaceId, router: Ipv6Addr) {
        self.routes6.retain(|r| {
            !(r.prefix_len == 0
                && r.next_hop == Some(router)
                && r.interface == id
                && matches!(r.origin, Origin::RouterAdvertisement { .. }))
        });
    }

    pub(super) fn mld_actions(&mut self, now: Instant, id: InterfaceId, actions: Vec<MldAction>) {
        for action in actions {
            // RFC 3810 §5: link-local source (:: before one is assigned,
            // §5.2.13), hop limit 1, Router Alert.
            let source = self
                .select_source_v6(id, wire::ipv6::ALL_NODES)
                .unwrap_or(Ipv6Addr::UNSPECIFIED);
            let (dst, bytes) = match action {
                MldAction::SendReportV2 { records } => {
                    let list: Vec<MldAddressRecord<'_>> = records
                        .iter()
                        .map(|(kind, group)| MldAddressRecord::new(*kind, *group, &[]))
                        .collect();
                    let repr = Icmpv6Repr::Mld(MldRepr::report_v2(&list));
                    (
                        wire::ipv6::ALL_MLDV2_ROUTERS,
                        emit_icmpv6(&repr, source, wire::ipv6::ALL_MLDV2_ROUTERS),
                    )
                }
                MldAction::SendReportV1 { group } => {
                    let repr = Icmpv6Repr::Mld(MldRepr::ReportV1 { group });
                    (group, emit_icmpv6(&repr, source, group))
                }
                MldAction::SendDone { group } => {
                    let repr = Icmpv6Repr::Mld(MldRepr::Done { group });
                    (
                        wire::ipv6::ALL_ROUTERS,
                        emit_icmpv6(&repr, source, wire::ipv6::ALL_ROUTERS),
                    )
                }
            };
            let Some(bytes) = bytes else { continue };
            let Ok(packet) = Packet::from_payload(&self.pool, Flow::NONE, &bytes) else {
                self.count_drop("mld_no_buffer");
                continue;
            };
            let Some(route) = self.ipv6_route(now, dst, Some(id), Flow::NONE) else {
                continue;
            };
            self.ipv6_output(
                now,
                route,
                super::ipv6_output::Ipv6Send {
                    src: source,
                    dst,
                    next_header: wire::ip::IpProtocol::Icmpv6,
                    hop_limit: 1,
                    router_alert: true,
                },
                packet,
            );
        }
    }

    /// Sends a due Router Advertisement and schedules the next (RFC 4861
    /// §6.2.4: the first MAX_INITIAL_RTR_ADVERTISEMENTS at most
    /// MAX_INITIAL_RTR_ADVERT_INTERVAL apart, then uniformly between
    /// MinRtrAdvInterval and MaxRtrAdvInterval).
    pub(super) fn poll_advertiser(&mut self, now: Instant, id: InterfaceId) {
        let due = self.interfaces[id.0]
            .v6
            .advertiser
            .as_ref()
            .and_then(|a| a.next)
            .is_some_and(|next| next <= now);
        if !due {
            return;
        }
        if !self.send_router_advertisement(now, id) {
            // No usable link-local address yet: wait for DAD to finish
            // (AddressAssigned re-arms the timer).
            if let Some(advertiser) = self.interfaces[id.0].v6.advertiser.as_mut() {
                advertiser.next = None;
            }
            return;
        }
        let spread = MAX_RTR_ADV_INTERVAL - MIN_RTR_ADV_INTERVAL;
        let mut interval = MIN_RTR_ADV_INTERVAL + random_delay(&mut self.rng, spread);
        if let Some(advertiser) = self.interfaces[id.0].v6.advertiser.as_mut() {
            advertiser.sent += 1;
            advertiser.last = Some(now);
            if advertiser.sent <= MAX_INITIAL_RTR_ADVERTISEMENTS {
                interval = interval.min(MAX_INITIAL_RTR_ADVERT_INTERVAL);
            }
            advertiser.next = Some(now + interval);
        }
    }

    /// Sends one advertisement; false if the interface has no link-local
    /// address to send it from yet.
    fn send_router_advertisement(&mut self, now: Instant, id: InterfaceId) -> bool {
        let Some(source) = self.select_source_v6(id, wire::ipv6::ALL_NODES) else {
            return false;
        };
        let interface = &self.interfaces[id.0];
        let Some(advertiser) = &interface.v6.advertiser else {
            return false;
        };
        let mut options = vec![
            NdiscOption::SourceLinkLayerAddr(interface.mac),
            NdiscOption::Mtu(interface.v6.mtu as u32),
        ];
        for prefix in &advertiser.prefixes {
            options.push(NdiscOption::PrefixInformation {
                prefix_len: prefix.prefix_len,
                on_link: prefix.on_link,
                autonomous: prefix.autonomous,
                valid_lifetime: prefix.valid_lifetime,
                preferred_lifetime: prefix.preferred_lifetime,
                prefix: prefix.prefix,
            });
        }
        let advert = Icmpv6Repr::Ndisc(NdiscRepr::RouterAdvert {
            hop_limit: super::DEFAULT_HOP_LIMIT,
            flags: RouterFlags::default(),
            router_lifetime: ADV_DEFAULT_LIFETIME,
            reachable_time: 0,
            retrans_time: 0,
            options: NdiscOptions::from_list(&options),
        });
        if self.send_icmpv6(
            now,
            Some(source),
            wire::ipv6::ALL_NODES,
            Some(id),
            Some(ND_HOP_LIMIT),
            Flow::NONE,
            &advert,
        ) {
            self.counters.router_advertisements_sent += 1;
        }
        true
    }
}

/// An ICMPv6 message as bytes, checksum filled.
fn emit_icmpv6(repr: &Icmpv6Repr<'_>, src: Ipv6Addr, dst: Ipv6Addr) -> Option<Vec<u8>> {
    let mut bytes = vec![0; repr.buffer_len()];
    repr.emit(
        &mut wire::icmpv6::Icmpv6Packet::new_unchecked(&mut bytes[..]),
        &src,
        &dst,
        wire::ip::ChecksumMode::Full,
    )
    .ok()?;
    Some(bytes)
}

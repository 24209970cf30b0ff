//! ARP (RFC 826) for IPv4 over Ethernet, run through the neighbour cache.
//!
//! Address resolution, queueing, retransmission, reachability states and
//! the memory bound are the [`NeighborCache`]'s (RFC 4861's NUD machinery,
//! as Linux runs ARP through its NUD state machine); this module only maps
//! ARP onto it:
//!
//! * sending ([`ArpCache::lookup`]): an unknown next hop creates an
//!   INCOMPLETE entry and a broadcast ARP Request (RFC 826, "Packet
//!   Generation"); retransmissions, the unicast probes of PROBE (as Linux
//!   sends them) and the final failure come from [`ArpCache::poll`];
//! * receiving ([`ArpCache::on_arp`]): RFC 826's "Packet Reception"
//!   algorithm, with each cache update expressed as the neighbour-cache
//!   event it is equivalent to:
//!   - a Reply addressed to us for an entry we hold ≈ a solicited Neighbor
//!     Advertisement with Override (→ REACHABLE);
//!   - a Request naming us ≈ a Neighbor Solicitation with a source
//!     link-layer address (creates or updates the entry, → STALE);
//!   - any other ARP whose sender we already hold (RFC 826 "Merge_flag",
//!     including gratuitous ARP, RFC 5227 §3) ≈ an unsolicited Neighbor
//!     Advertisement with Override (→ STALE if the address changed).
//!
//! The module never sends, never reads a clock: every input carries `now`
//! and every output is an [`ArpAction`] (or [`ArpLookup`]) whose ARP message,
//! if any, is an [`ArpMessage`] the caller frames and transmits.

use core::net::Ipv4Addr;
use std::collections::VecDeque;

use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::ethernet::EthernetAddress;

use crate::iface::neighbor::{
    Action, AdvertisementFlags, EntryView, Evicted, NeighborCache, NeighborConfig,
    NeighborCounters, Resolution,
};
use crate::time::Instant;

/// One IPv4 address of the interface with its prefix length, so that the
/// sender protocol address of a request is the one on the target's subnet
/// and directed broadcasts are recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpAddress {
    pub addr: Ipv4Addr,
    /// 0..=32; larger values count as 32.
    pub prefix_len: u8,
}

impl ArpAddress {
    pub const fn new(addr: Ipv4Addr, prefix_len: u8) -> Self {
        Self { addr, prefix_len }
    }

    fn mask(&self) -> u32 {
        let len = u32::from(self.prefix_len.min(32));
        u32::MAX.checked_shl(32 - len).unwrap_or(0)
    }

    /// `other` is on this address's subnet.
    fn contains(&self, other: Ipv4Addr) -> bool {
        let mask = self.mask();
        u32::from(self.addr) & mask == u32::from(other) & mask
    }

    /// The subnet-directed broadcast address (RFC 919, RFC 922), for
    /// prefixes shorter than /31 (RFC 3021: a /31 has none).
    fn directed_broadcast(&self) -> Option<Ipv4Addr> {
        if self.prefix_len >= 31 {
            return None;
        }
        Some(Ipv4Addr::from(u32::from(self.addr) | !self.mask()))
    }
}

/// Parameters of an [`ArpCache`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpConfig {
    /// Our Ethernet address: the sender hardware address of what we send.
    pub hardware_addr: EthernetAddress,
    /// Our IPv4 addresses; the first is the default sender protocol address.
    pub addresses: Vec<ArpAddress>,
    /// The neighbour cache's bound and timers (RETRANS_TIMER is the request
    /// retransmission interval, MAX_MULTICAST_SOLICIT the number of
    /// broadcast requests, MAX_UNICAST_SOLICIT of unicast probes).
    pub neighbor: NeighborConfig,
}

/// An ARP message to transmit: the Ethernet destination and the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpMessage {
    /// Ethernet destination: broadcast for a request (RFC 826), the
    /// cached address for a unicast probe, the requester for a reply.
    pub eth_dst: EthernetAddress,
    pub repr: ArpRepr,
}

impl ArpMessage {
    /// Bytes of the ARP packet (the Ethernet payload).
    pub const fn buffer_len(&self) -> usize {
        self.repr.buffer_len()
    }

    /// Writes the ARP packet into `buffer` through the wire crate; returns
    /// the bytes written.
    pub fn emit(&self, buffer: &mut [u8]) -> wire::Result<usize> {
        let len = self.buffer_len();
        let Some(region) = buffer.get_mut(..len) else {
            return Err(wire::Error::Truncated);
        };
        self.repr.emit(&mut ArpPacket::new_unchecked(region))?;
        Ok(len)
    }

    /// The ARP packet as a fresh byte vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = vec![0; self.buffer_len()];
        // The buffer is exactly buffer_len() long, so emit cannot fail.
        match self.emit(&mut bytes) {
            Ok(_) => bytes,
            Err(_) => Vec::new(),
        }
    }
}

/// Work for the interface layer, from [`ArpCache::on_arp`] and
/// [`ArpCache::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArpAction<P> {
    /// Send an ARP Request for `target`: broadcast when `unicast_to` is
    /// `None` (address resolution, RFC 826), otherwise unicast to the cached
    /// address (a PROBE-state reachability check, as Linux does).
    SendRequest {
        target: Ipv4Addr,
        unicast_to: Option<EthernetAddress>,
        message: ArpMessage,
    },
    /// Send an ARP Reply (RFC 826: we were the target of a Request).
    SendReply { message: ArpMessage },
    /// Resolution completed: transmit `packets`, in queue order, to `lladdr`.
    Transmit {
        target: Ipv4Addr,
        lladdr: EthernetAddress,
        packets: VecDeque<P>,
    },
    /// Resolution failed or the neighbour stopped answering probes: the
    /// entry is gone, and the caller answers each of `packets` with an
    /// ICMP Destination Unreachable, code 1 (Host Unreachable; RFC 1812
    /// §4.3.3.1, RFC 1122 §3.2.2.1).
    Unreachable {
        target: Ipv4Addr,
        packets: VecDeque<P>,
    },
    /// An entry evicted by the cache's bound, with any packets it queued.
    Evicted(Evicted<Ipv4Addr, P>),
}

impl<P> ArpAction<P> {
    /// The ARP message this action sends, if any.
    pub fn message(&self) -> Option<&ArpMessage> {
        match self {
            ArpAction::SendRequest { message, .. } | ArpAction::SendReply { message } => {
                Some(message)
            }
            _ => None,
        }
    }
}

/// What [`ArpCache::lookup`] decided for an outgoing IPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArpLookup<P> {
    /// Transmit `packet` to `lladdr` now.
    Send { lladdr: EthernetAddress, packet: P },
    /// The packet waits for a resolution in progress; `dropped` is the
    /// oldest queued packet it displaced, for the caller to release.
    Queued { dropped: Option<P> },
    /// The packet waits for a new resolution: transmit `request` (a
    /// broadcast ARP Request) now. `evicted` is an entry the bound displaced.
    Requested {
        request: ArpMessage,
        evicted: Option<Evicted<Ipv4Addr, P>>,
    },
    /// No link-layer address can exist for the destination (0.0.0.0, or
    /// one of our own addresses, which the caller loops back instead).
    Rejected { packet: P },
}

/// What ARP has seen and done, beside the neighbour cache's own counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArpCounters {
    pub requests_received: u64,
    pub replies_received: u64,
    /// Broadcast requests sent (first ones and retransmissions).
    pub requests_sent: u64,
    /// Unicast probes sent (PROBE state).
    pub probes_sent: u64,
    pub replies_sent: u64,
    /// ARP with sender protocol address = target protocol address
    /// (RFC 5227 §3 announcements, "gratuitous ARP").
    pub gratuitous_received: u64,
    /// ARP from another host claiming one of our addresses (RFC 5227 §2.4
    /// conflict detection; we do not defend).
    pub conflicts: u64,
    /// ARP whose sender hardware address is broadcast or multicast, or
    /// whose sender protocol address cannot be a host's; ignored.
    pub invalid_sender: u64,
    /// ARP with an opcode other than Request or Reply; ignored.
    pub unknown_operation: u64,
    /// Our own ARP looped back to us; ignored.
    pub own_packets: u64,
    /// Entries updated by RFC 826's merge step (sender already cached).
    pub merged: u64,
    /// ARP Probes (sender 0.0.0.0, RFC 5227 §1.1) received.
    pub probes_received: u64,
}

/// ARP for one interface: RFC 826 over a [`NeighborCache`] keyed by IPv4
/// address.
#[derive(Debug)]
pub struct ArpCache<P> {
    hardware_addr: EthernetAddress,
    addresses: Vec<ArpAddress>,
    cache: NeighborCache<Ipv4Addr, EthernetAddress, P>,
    counters: ArpCounters,
}

impl<P> ArpCache<P> {
    pub fn new(config: ArpConfig) -> Self {
        Self {
            hardware_addr: config.hardware_addr,
            addresses: config.addresses,
            cache: NeighborCache::new(config.neighbor),
            counters: ArpCounters::default(),
        }
    }

    pub fn hardware_addr(&self) -> EthernetAddress {
        self.hardware_addr
    }

    pub fn addresses(&self) -> &[ArpAddress] {
        &self.addresses
    }

    /// Replaces our IPv4 addresses (address added or removed).
    pub fn set_addresses(&mut self, addresses: Vec<ArpAddress>) {
        self.addresses = addresses;
    }

    pub fn counters(&self) -> &ArpCounters {
        &self.counters
    }

    /// The underlying neighbour cache's counters.
    pub fn neighbor_counters(&self) -> &NeighborCounters {
        self.cache.counters()
    }

    pub fn len(&self) -> usize {
        self.cache.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.cache.capacity()
    }

    /// The entry for `addr`, if any.
    pub fn get(&self, addr: Ipv4Addr) -> Option<EntryView<Ipv4Addr, EthernetAddress>> {
        self.cache.get(addr)
    }

    /// Changes whenever an entry is created, changes state or goes (see
    /// [`NeighborCache::generation`]).
    pub fn generation(&self) -> u64 {
        self.cache.generation()
    }

    /// Every entry, for the state dump.
    pub fn entries(&self) -> impl Iterator<Item = EntryView<Ipv4Addr, EthernetAddress>> + '_ {
        self.cache.entries()
    }

    /// When [`ArpCache::poll`] next has work.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.cache.next_deadline()
    }

    /// Deletes an entry (administrative flush), returning queued packets.
    pub fn remove(&mut self, addr: Ipv4Addr) -> Option<VecDeque<P>> {
        self.cache.remove(addr)
    }

    /// Upper-layer reachability confirmation (RFC 4861 §7.3.1, as Linux's
    /// `dst_confirm` does for ARP).
    pub fn on_reachability_confirmation(&mut self, now: Instant, addr: Ipv4Addr) -> bool {
        self.cache.on_reachability_confirmation(now, addr)
    }

    /// `addr` is one of ours.
    pub fn is_ours(&self, addr: Ipv4Addr) -> bool {
        self.addresses.iter().any(|a| a.addr == addr)
    }

    /// The sender protocol address for a request about `target`: our
    /// address on its subnet, else our first address, else 0.0.0.0.
    fn source_for(&self, target: Ipv4Addr) -> Ipv4Addr {
        self.addresses
            .iter()
            .find(|a| a.contains(target))
            .or_else(|| self.addresses.first())
            .map_or(Ipv4Addr::UNSPECIFIED, |a| a.addr)
    }

    /// An ARP Request for `target` (RFC 826 "Packet Generation"): our
    /// addresses as sender, target hardware address zero (RFC 826 leaves it
    /// unspecified; RFC 5227 §2.1.1 asks for zero).
    fn request(&self, target: Ipv4Addr, unicast_to: Option<EthernetAddress>) -> ArpMessage {
        ArpMessage {
            eth_dst: unicast_to.unwrap_or(EthernetAddress::BROADCAST),
            repr: ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Request,
                source_hardware_addr: self.hardware_addr,
                source_protocol_addr: self.source_for(target),
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: target,
            },
        }
    }

    /// A gratuitous ARP announcing `addr` (RFC 5227 §2.3: a broadcast
    /// Request with sender and target protocol address both `addr`).
    pub fn announcement(&self, addr: Ipv4Addr) -> ArpMessage {
        ArpMessage {
            eth_dst: EthernetAddress::BROADCAST,
            repr: ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Request,
                source_hardware_addr: self.hardware_addr,
                source_protocol_addr: addr,
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: addr,
            },
        }
    }

    /// Whether `dst` has a fixed mapping, never resolved: the limited and
    /// subnet-directed broadcasts (RFC 919 §7, RFC 922 §7) and multicast
    /// (RFC 1112 §6.4); or is refused: unspecified, or ours.
    pub fn is_fixed_or_refused(&self, dst: Ipv4Addr) -> bool {
        self.is_broadcast(dst) || dst.is_multicast() || dst.is_unspecified() || self.is_ours(dst)
    }

    fn is_broadcast(&self, dst: Ipv4Addr) -> bool {
        dst.is_broadcast()
            || self
                .addresses
                .iter()
                .any(|a| a.directed_broadcast() == Some(dst))
    }

    /// Resolves the next hop `dst` for `packet`.
    pub fn lookup(&mut self, now: Instant, dst: Ipv4Addr, packet: P) -> ArpLookup<P> {
        // Destinations with a fixed mapping are never resolved: the limited
        // and subnet-directed broadcasts go to the Ethernet broadcast
        // address (RFC 919 §7, RFC 922 §7), multicast to 01:00:5e plus the
        // low 23 bits of the group (RFC 1112 §6.4).
        if self.is_broadcast(dst) {
            return ArpLookup::Send {
                lladdr: EthernetAddress::BROADCAST,
                packet,
            };
        }
        if dst.is_multicast() {
            let o = dst.octets();
            return ArpLookup::Send {
                lladdr: EthernetAddress([0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]]),
                packet,
            };
        }
        if dst.is_unspecified() || self.is_ours(dst) {
            return ArpLookup::Rejected { packet };
        }
        match self.cache.lookup(now, dst, packet) {
            Resolution::Send { lladdr, packet } => ArpLookup::Send { lladdr, packet },
            Resolution::Queued { dropped } => ArpLookup::Queued { dropped },
            Resolution::Solicit { evicted } => {
                // RFC 826: "it generates an Ethernet packet with a type field
                // of ether_type$ADDRESS_RESOLUTION ... broadcast".
                self.counters.requests_sent += 1;
                ArpLookup::Requested {
                    request: self.request(dst, None),
                    evicted,
                }
            }
        }
    }

    /// A received ARP packet (RFC 826 "Packet Reception").
    pub fn on_arp(&mut self, now: Instant, repr: &ArpRepr) -> Vec<ArpAction<P>> {
        let ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr: sha,
            source_protocol_addr: spa,
            target_hardware_addr: _,
            target_protocol_addr: tpa,
        } = *repr;
        let mut actions = Vec::new();
        match operation {
            ArpOperation::Request => self.counters.requests_received += 1,
            ArpOperation::Reply => self.counters.replies_received += 1,
            ArpOperation::Unknown(_) => {
                // RFC 826 checks the opcode only after merging, but an
                // opcode we do not know is not ARP we trust to update state.
                self.counters.unknown_operation += 1;
                return actions;
            }
        }
        // A broadcast or multicast sender hardware address is never a
        // host's (IEEE 802: group addresses are not sources; Linux and
        // RFC 1812 §3.3.2 likewise refuse to cache them).
        if sha.is_multicast() {
            self.counters.invalid_sender += 1;
            return actions;
        }
        if sha == self.hardware_addr {
            // Our own transmission reflected back.
            self.counters.own_packets += 1;
            return actions;
        }
        // RFC 5227 §2.4: ARP from another host with our address as sender
        // protocol address is a conflict. Detection only: count it, and
        // keep it out of the cache.
        if self.is_ours(spa) {
            self.counters.conflicts += 1;
            return actions;
        }
        // RFC 5227 §1.1 ARP Probe: sender protocol address 0.0.0.0. It must
        // not touch the cache (RFC 5227 §2.5); a probe for one of our
        // addresses is answered, the reply sent to the prober with target
        // protocol address 0.0.0.0 (as Linux's arp_process does).
        if spa.is_unspecified() {
            self.counters.probes_received += 1;
            if operation == ArpOperation::Request && self.is_ours(tpa) {
                actions.push(self.reply(sha, spa, tpa));
            }
            return actions;
        }
        // A sender protocol address no host owns cannot be cached.
        if spa.is_broadcast() || spa.is_multicast() {
            self.counters.invalid_sender += 1;
            return actions;
        }
        if spa == tpa {
            self.counters.gratuitous_received += 1;
        }
        let for_us = self.is_ours(tpa);
        // RFC 826: "If the pair <protocol type, sender protocol address> is
        // already in my translation table, update the sender hardware
        // address field of the entry with the new information in the packet
        // and set Merge_flag to true."
        let merged = self.cache.get(spa).is_some();
        if merged {
            self.counters.merged += 1;
        }
        let events = match (operation, for_us, merged) {
            // A Reply to us for an entry we hold answers our request (or
            // unicast probe): a solicited advertisement with Override,
            // → REACHABLE, queued packets sent (RFC 4861 §7.2.5 mapping).
            (ArpOperation::Reply, true, true) => self.cache.on_advertisement(
                now,
                spa,
                Some(sha),
                AdvertisementFlags {
                    solicited: true,
                    override_: true,
                    router: false,
                },
            ),
            // RFC 826: "If Merge_flag is false, add the triplet <protocol
            // type, sender protocol address, sender hardware address> to the
            // translation table" — only when we are the target. A Request
            // naming us (and, by RFC 826, a Reply naming us for a sender we
            // do not hold) is a solicitation with a source link-layer
            // address: create the entry STALE or update it (RFC 4861 §7.2.3).
            (_, true, _) => self.cache.on_solicitation(now, spa, Some(sha)),
            // Not for us but the sender is cached: RFC 826's merge. This is
            // where gratuitous ARP lands: an unsolicited advertisement with
            // Override, → STALE with the new address if it changed.
            (_, false, true) => self.cache.on_advertisement(
                now,
                spa,
                Some(sha),
                AdvertisementFlags {
                    solicited: false,
                    override_: true,
                    router: false,
                },
            ),
            // RFC 826: not the target and not merged: nothing to learn. No
            // entry is ever created by ARP naming someone else.
            (_, false, false) => Vec::new(),
        };
        self.map_actions(events, &mut actions);
        // RFC 826: "If opcode is ares_op$REQUEST ... swap hardware and
        // protocol fields, putting the local hardware and protocol addresses
        // in the sender fields. Set the opcode field to ares_op$REPLY. Send
        // the packet to the (new) target hardware address."
        if for_us && operation == ArpOperation::Request {
            actions.push(self.reply(sha, spa, tpa));
        }
        actions
    }

    /// An ARP Reply from our address `ours` to `to_hw`/`to_ip`.
    fn reply(&mut self, to_hw: EthernetAddress, to_ip: Ipv4Addr, ours: Ipv4Addr) -> ArpAction<P> {
        self.counters.replies_sent += 1;
        ArpAction::SendReply {
            message: ArpMessage {
                eth_dst: to_hw,
                repr: ArpRepr::EthernetIpv4 {
                    operation: ArpOperation::Reply,
                    source_hardware_addr: self.hardware_addr,
                    source_protocol_addr: ours,
                    target_hardware_addr: to_hw,
                    target_protocol_addr: to_ip,
                },
            },
        }
    }

    /// Fires every timer due at `now`: request retransmissions, unicast
    /// probes, failures.
    pub fn poll(&mut self, now: Instant) -> Vec<ArpAction<P>> {
        let events = self.cache.poll(now);
        let mut actions = Vec::with_capacity(events.len());
        self.map_actions(events, &mut actions);
        actions
    }

    /// Maps neighbour-cache actions to ARP actions.
    fn map_actions(
        &mut self,
        events: Vec<Action<Ipv4Addr, EthernetAddress, P>>,
        actions: &mut Vec<ArpAction<P>>,
    ) {
        for event in events {
            match event {
                Action::SendSolicitation { target, unicast_to } => {
                    if unicast_to.is_some() {
                        self.counters.probes_sent += 1;
                    } else {
                        self.counters.requests_sent += 1;
                    }
                    actions.push(ArpAction::SendRequest {
                        target,
                        unicast_to,
                        message: self.request(target, unicast_to),
                    });
                }
                Action::Transmit {
                    target,
                    lladdr,
                    packets,
                } => actions.push(ArpAction::Transmit {
                    target,
                    lladdr,
                    packets,
                }),
                Action::Unreachable {
                    target, packets, ..
                } => actions.push(ArpAction::Unreachable { target, packets }),
                Action::Evicted(evicted) => actions.push(ArpAction::Evicted(evicted)),
                // ARP has no IsRouter flag; it is never set, so never lost.
                Action::RouterLost { .. } => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> ArpCache<u32> {
        ArpCache::new(ArpConfig {
            hardware_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            addresses: vec![
                ArpAddress::new(Ipv4Addr::new(192, 0, 2, 1), 24),
                ArpAddress::new(Ipv4Addr::new(198, 51, 100, 1), 24),
            ],
            neighbor: NeighborConfig::default(),
        })
    }

    #[test]
    fn source_address_follows_the_subnet() {
        let c = cache();
        assert_eq!(
            c.source_for(Ipv4Addr::new(198, 51, 100, 7)),
            Ipv4Addr::new(198, 51, 100, 1)
        );
        assert_eq!(
            c.source_for(Ipv4Addr::new(203, 0, 113, 7)),
            Ipv4Addr::new(192, 0, 2, 1)
        );
    }

    #[test]
    fn fixed_mappings_are_not_resolved() {
        let mut c = cache();
        let now = Instant::ZERO;
        for dst in [
            Ipv4Addr::BROADCAST,
            Ipv4Addr::new(192, 0, 2, 255),
            Ipv4Addr::new(224, 0, 0, 251),
        ] {
            assert!(matches!(c.lookup(now, dst, 0), ArpLookup::Send { .. }));
        }
        assert_eq!(
            c.lookup(now, Ipv4Addr::new(239, 129, 2, 3), 0),
            ArpLookup::Send {
                lladdr: EthernetAddress([0x01, 0, 0x5e, 1, 2, 3]),
                packet: 0
            }
        );
        assert_eq!(
            c.lookup(now, Ipv4Addr::new(192, 0, 2, 1), 5),
            ArpLookup::Rejected { packet: 5 }
        );
        assert!(c.is_empty());
    }

    #[test]
    fn prefix_masks() {
        assert_eq!(ArpAddress::new(Ipv4Addr::UNSPECIFIED, 0).mask(), 0);
        assert_eq!(ArpAddress::new(Ipv4Addr::UNSPECIFIED, 32).mask(), u32::MAX);
        assert_eq!(ArpAddress::new(Ipv4Addr::UNSPECIFIED, 40).mask(), u32::MAX);
        assert_eq!(
            ArpAddress::new(Ipv4Addr::new(10, 0, 0, 0), 31).directed_broadcast(),
            None
        );
    }

    #[test]
    fn message_emits_into_short_buffer_as_error() {
        let c = cache();
        let message = c.announcement(Ipv4Addr::new(192, 0, 2, 1));
        let mut short = [0u8; 10];
        assert_eq!(message.emit(&mut short), Err(wire::Error::Truncated));
        assert_eq!(message.to_bytes().len(), wire::arp::ETHERNET_IPV4_LEN);
    }
}

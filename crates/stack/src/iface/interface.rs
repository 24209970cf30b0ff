//! One interface of a host: its link, its IPv6 state (NTEs, neighbour
//! cache, MLD listener, and in router mode the advertising state), its
//! optional IPv4 address with the ARP cache, the interface queue of frames
//! waiting for the link (DESIGN.md: the third of the five queues), and the
//! device's transmit ring after it (the fifth, [`DeviceRing`]).

use std::collections::VecDeque;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use wire::ethernet::EthernetAddress;

use crate::buffer::Packet;
use crate::iface::address::InterfaceAddresses;
use crate::iface::arp::ArpCache;
use crate::iface::device::{DeviceRing, DEFAULT_RING_FRAMES};
use crate::iface::mld::MldListener;
use crate::iface::neighbor::NeighborCache;
use crate::iface::offload::{self, Offload};
use crate::iface::route::InterfaceId;
use crate::phy::{Link, Medium};
use crate::probes::{INTERFACE_QUEUE_DEQUEUE, INTERFACE_QUEUE_ENQUEUE};
use crate::time::Instant;

/// Frames the interface queue holds at most; more are tail-dropped.
pub const DEFAULT_QUEUE_FRAMES: usize = 1024;

/// RFC 4861 §6.2.1 defaults for an advertising interface.
pub const MAX_RTR_ADV_INTERVAL: Duration = Duration::from_secs(600);
/// MinRtrAdvInterval default: 0.33 × MaxRtrAdvInterval (RFC 4861 §6.2.1).
pub const MIN_RTR_ADV_INTERVAL: Duration = Duration::from_secs(198);
/// RFC 4861 §10: the first few unsolicited advertisements come faster.
pub const MAX_INITIAL_RTR_ADVERT_INTERVAL: Duration = Duration::from_secs(16);
pub const MAX_INITIAL_RTR_ADVERTISEMENTS: u32 = 3;
/// RFC 4861 §10: a solicited advertisement waits up to this long.
pub const MAX_RA_DELAY_TIME: Duration = Duration::from_millis(500);
/// AdvDefaultLifetime: 3 × MaxRtrAdvInterval (RFC 4861 §6.2.1).
pub const ADV_DEFAULT_LIFETIME: u16 = 1800;

/// A prefix an advertising interface puts in its Router Advertisements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdvertisedPrefix {
    pub prefix: Ipv6Addr,
    pub prefix_len: u8,
    pub valid_lifetime: u32,
    pub preferred_lifetime: u32,
    pub on_link: bool,
    pub autonomous: bool,
}

/// Router mode on one interface (RFC 4861 §6.2).
#[derive(Debug, Clone)]
pub struct Advertiser {
    pub prefixes: Vec<AdvertisedPrefix>,
    /// Unsolicited advertisements sent so far.
    pub sent: u32,
    /// When the next one goes out (unsolicited or answering a solicitation).
    pub next: Option<Instant>,
    /// When the last one went out: RFC 4861 §6.2.6 keeps multicast
    /// advertisements at least MIN_DELAY_BETWEEN_RAS apart.
    pub last: Option<Instant>,
}

/// The IPv4 side of an interface.
pub struct Ipv4Interface {
    pub address: Ipv4Addr,
    pub prefix_len: u8,
    pub arp: ArpCache<Packet>,
    /// The host's IGMPv2 membership reports for the interface's groups
    /// (RFC 2236 §3).
    pub igmp: crate::iface::igmp::IgmpMember,
    /// A multicast router's querier and members on the interface (§7);
    /// `None` on a host.
    pub querier: Option<crate::iface::igmp::IgmpQuerier>,
}

impl Ipv4Interface {
    /// Whether `addr` is on this interface's subnet.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len.min(32)))
            .unwrap_or(0);
        u32::from(self.address) & mask == u32::from(addr) & mask
    }

    /// The subnet's directed broadcast address (none for /31 and /32).
    pub fn broadcast(&self) -> Option<Ipv4Addr> {
        if self.prefix_len >= 31 {
            return None;
        }
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0);
        Some(Ipv4Addr::from(u32::from(self.address) | !mask))
    }
}

/// The IPv6 side of an interface (RFC 4861 §5.1 conceptual model).
pub struct Ipv6Interface {
    /// NTEs, Prefix List and Router List.
    pub addresses: InterfaceAddresses,
    /// NCEs.
    pub neighbors: NeighborCache<Ipv6Addr, EthernetAddress, Packet>,
    pub mld: MldListener,
    /// The link MTU for IPv6: the link's, or less if an RA said so
    /// (RFC 4861 §6.3.4).
    pub mtu: usize,
    /// Cur Hop Limit (RFC 4861 §6.3.2), 64 until an RA says otherwise.
    pub hop_limit: u8,
    /// Set in router mode.
    pub advertiser: Option<Advertiser>,
}

/// Counters of an interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct InterfaceCounters {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Frames refused by the link (queue full, too big).
    pub tx_link_errors: u64,
    /// Frames tail-dropped because the interface queue was full.
    pub queue_drops: u64,
    pub queue_high_water: usize,
    /// TSO super-segments handed whole to a link that takes GSO.
    pub gso_sent: u64,
    /// Wire frames the device stage cut from TSO super-segments.
    pub gso_segments: u64,
    /// TSO super-segments the device stage could not cut (dropped).
    pub offload_refused: u64,
}

/// One interface.
pub struct Interface {
    pub id: InterfaceId,
    pub name: String,
    pub link: Box<dyn Link + Send>,
    pub medium: Medium,
    pub mac: EthernetAddress,
    pub v6: Ipv6Interface,
    pub v4: Option<Ipv4Interface>,
    queue: VecDeque<Packet>,
    queue_limit: usize,
    /// The device's transmit ring: frames on their way out of the link.
    pub device: DeviceRing,
    pub counters: InterfaceCounters,
    /// Manual IPv6 addresses, configured (with DAD) when the host starts.
    pub(crate) pending_manual: Vec<crate::topology::Ipv6Cidr>,
    /// Multicast groups an application joined.
    pub multicast: crate::iface::host::Memberships,
    /// Segmentation and receive offload (`ethtool -K`), off by default.
    pub offload: Offload,
    /// Where the device stage cuts a super-segment's frames, and where
    /// each one is in it.
    cut_buffer: Vec<u8>,
    cut_lens: Vec<(usize, usize, std::ops::Range<usize>)>,
}

impl Interface {
    pub fn new(
        id: InterfaceId,
        name: String,
        link: Box<dyn Link + Send>,
        mac: EthernetAddress,
        v6: Ipv6Interface,
        v4: Option<Ipv4Interface>,
    ) -> Self {
        let ring = link.transmit_ring().unwrap_or(DEFAULT_RING_FRAMES);
        let device = DeviceRing::new(ring, id.0 as u64);
        Self {
            id,
            name,
            medium: link.medium(),
            link,
            mac,
            v6,
            v4,
            queue: VecDeque::new(),
            queue_limit: DEFAULT_QUEUE_FRAMES,
            device,
            counters: InterfaceCounters::default(),
            pending_manual: Vec::new(),
            multicast: Default::default(),
            offload: Offload::NONE,
            cut_buffer: Vec::new(),
            cut_lens: Vec::new(),
        }
    }

    /// The link MTU.
    pub fn link_mtu(&self) -> usize {
        self.link.mtu()
    }

    /// Frames waiting in the interface queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Puts a finished frame on the interface queue, or drops it (counted)
    /// when the queue is full. Inlined: the frame (a `Packet` of 80 bytes)
    /// is then moved once, into the queue, not once more into a call (a
    /// hint was not enough: issue 22).
    #[inline(always)]
    pub fn enqueue(&mut self, frame: Packet) {
        if self.queue.len() >= self.queue_limit {
            self.counters.queue_drops += 1;
            return;
        }
        // The frame's length is a walk of its parts: made only for a
        // record that is kept. Recorded once the frame is in the queue:
        // the output that queued it ends at this record.
        let enqueued = probe::defer(INTERFACE_QUEUE_ENQUEUE, frame.flow(), || {
            (frame.len() as u32, self.id.0 as u64)
        });
        self.queue.push_back(frame);
        self.counters.queue_high_water = self.counters.queue_high_water.max(self.queue.len());
        enqueued.record();
    }

    /// Whether the interface has frames to hand to the link now: some are
    /// queued and the device has a free slot.
    pub fn can_transmit(&self) -> bool {
        !self.queue.is_empty() && self.device.has_room()
    }

    /// When the device next completes a transmission, if it holds a frame.
    pub fn next_completion(&self) -> Option<Instant> {
        self.device.next_completion()
    }

    /// Frees the device slots of frames whose last bit has left by `now`,
    /// then hands queued frames to the link while the device has room; the
    /// link tail-drops what it cannot take (counted by the link and here).
    /// What the full device leaves queued goes in a later poll. `wall`, on
    /// a runner whose clock moves during a poll, gives each frame the time
    /// it is really handed over.
    pub fn transmit_queued(&mut self, now: Instant, wall: Option<&dyn Fn() -> Instant>) {
        let at = || wall.map_or(now, |wall| wall().max(now));
        let now = at();
        self.device.retire(now);
        // Each frame is sent where it lies at the queue's head and taken
        // off after: not moved out of the queue and again into a closure
        // (issue 22).
        while let Some(frame) = self.queue.front() {
            if !self.device.has_room() {
                self.device.note_full();
                break;
            }
            let wire_frames = self.wire_frames(frame);
            if wire_frames > 1 && self.device.free() < wire_frames.min(self.device.capacity()) {
                // A super-segment's frames go together (as a NIC takes
                // one descriptor chain): wait for room for all of them.
                self.device.note_full();
                break;
            }
            let len = frame.len();
            let flow = frame.flow();
            // Read before the dequeue: the clock is the runner's, not the
            // interface's or the link's.
            let handed = at();
            // The dequeue and the link's start share a counter read, as
            // its end and the device's enqueue do.
            let mut dequeued = probe::Stamp::new();
            dequeued.record(INTERFACE_QUEUE_DEQUEUE, len as u32, flow, self.id.0 as u64);
            // The frame's parts are laid out once, for the link and then
            // for the capture's hook.
            let mut parts: [&[u8]; PARTS] = [&[]; PARTS];
            let count = if wire_frames > 1 {
                None
            } else {
                frame.parts_into(&mut parts)
            };
            let Some(count) = count else {
                self.transmit_rare(handed, wire_frames, &mut dequeued);
                continue;
            };
            let parts = &parts[..count];
            let span = self.transmit_span(len, flow, &mut dequeued);
            transmit_frame(
                &mut *self.link,
                &mut self.device,
                &mut self.counters,
                span,
                handed,
                parts,
                len,
                flow,
            );
            // Freed after the link and the capture are done with it.
            drop(self.queue.pop_front());
        }
        let now = at();
        self.link.flush(now);
        // Frames of a link that sends at once complete in this poll.
        self.device.retire(now);
    }
}

/// Parts of a frame [`Interface::transmit_queued`] hands the link as they
/// lie: a head and the payload segments of an MSS-sized segment (two pool
/// buffers at most). A frame of more is gathered. Each slot more is two
/// stores per frame sent (issue 22).
const PARTS: usize = 4;

/// The link's work on one wire frame (`parts`, `len` bytes) handed at
/// `handed` in the `link.transmit` span `span`: counted and put in the
/// device's ring if the link took it, then shown to its capture.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn transmit_frame(
    link: &mut (dyn Link + Send),
    device: &mut DeviceRing,
    counters: &mut InterfaceCounters,
    span: probe::SpanGuard,
    handed: Instant,
    parts: &[&[u8]],
    len: usize,
    flow: probe::Flow,
) {
    let result = link.transmit(handed, parts);
    let mut transmitted = probe::Stamp::new();
    span.end_at(&mut transmitted);
    match result {
        Ok(()) => {
            counters.tx_frames += 1;
            counters.tx_bytes += len as u64;
            let complete = link.transmit_complete_at();
            device.push(handed, len, flow, complete, &mut transmitted);
            // Outside the span: a capture's copy is not the link's.
            link.transmitted(handed, parts);
        }
        Err(_) => counters.tx_link_errors += 1,
    }
}

impl Interface {
    /// The frame at the queue's head that is not one wire frame of a few
    /// parts: a TSO super-segment (`wire_frames` of them), or a frame of
    /// more parts than [`PARTS`], gathered flat. Taken off the queue and
    /// freed after, as the usual frame is.
    #[cold]
    #[inline(never)]
    fn transmit_rare(&mut self, handed: Instant, wire_frames: usize, dequeued: &mut probe::Stamp) {
        let Some(frame) = self.queue.pop_front() else {
            return;
        };
        if wire_frames > 1 {
            self.transmit_super(handed, &frame, dequeued);
            return;
        }
        let len = frame.len();
        let flow = frame.flow();
        with_gathered(&frame, |parts| {
            let span = self.transmit_span(len, flow, dequeued);
            transmit_frame(
                &mut *self.link,
                &mut self.device,
                &mut self.counters,
                span,
                handed,
                parts,
                len,
                flow,
            );
        });
    }

    /// The `link.transmit` span of a frame of `len` bytes: the link's
    /// own work on it, whatever the path (a frame, a super-frame).
    #[inline]
    fn transmit_span(
        &self,
        len: usize,
        flow: probe::Flow,
        stamp: &mut probe::Stamp,
    ) -> probe::SpanGuard {
        let id = self.id.0 as u64;
        stamp.span_with(
            crate::probes::LINK_TRANSMIT_ENTER,
            crate::probes::LINK_TRANSMIT_EXIT,
            flow,
            || (len as u32, id),
        )
    }

    /// How many wire frames `frame` makes: a super-segment of TSO (longer
    /// than the link's MTU) is cut into segments, unless the link takes it
    /// whole; anything else is one frame.
    fn wire_frames(&self, frame: &Packet) -> usize {
        let gso_size = usize::from(frame.offload().gso_size);
        // An ordinary frame's length (a walk of its parts) is not needed.
        if gso_size == 0 {
            return 1;
        }
        let headers = self.medium.header_len();
        let len = frame.len();
        if len <= self.link.mtu() + headers {
            return 1;
        }
        if self.link.takes_gso() {
            return 2;
        }
        // Headers are at most a few hundred bytes; the count only sizes
        // the wait for ring room.
        len.div_ceil(gso_size).max(2)
    }

    /// The device stage's work on a TSO super-segment (see
    /// [`offload`]): handed whole behind a `virtio_net_hdr` to a link that
    /// takes GSO, else cut into MSS-sized frames, each checksummed and
    /// handed to the link in turn. All of it is one `link.transmit` span
    /// (the cutting is the device's cost); each wire frame takes a device
    /// slot and is counted as a frame sent.
    fn transmit_super(&mut self, handed: Instant, frame: &Packet, dequeued: &mut probe::Stamp) {
        let len = frame.len();
        let flow = frame.flow();
        let gso_size = frame.offload().gso_size;
        with_parts_wide(frame, |parts| {
            let span = self.transmit_span(len, flow, dequeued);
            let Some((header, mut segmenter)) = offload::super_frame(parts, gso_size) else {
                drop(span);
                self.counters.tx_link_errors += 1;
                self.counters.offload_refused += 1;
                return;
            };
            if self.link.takes_gso() {
                let result = self.link.transmit_gso(handed, &header, parts);
                let mut transmitted = probe::Stamp::new();
                span.end_at(&mut transmitted);
                match result {
                    Ok(()) => {
                        self.counters.tx_frames += 1;
                        self.counters.tx_bytes += len as u64;
                        self.counters.gso_sent += 1;
                        let complete = self.link.transmit_complete_at();
                        self.device
                            .push(handed, len, flow, complete, &mut transmitted);
                        self.link.transmitted(handed, parts);
                    }
                    Err(_) => self.counters.tx_link_errors += 1,
                }
                return;
            }
            // Each frame is its own headers (made in a buffer kept from
            // super-segment to super-segment) and its payload where it
            // lies in the super-segment, handed to the link as parts, as a
            // NIC's TSO engine reads it: the link's copy is the only one.
            let mut headers = std::mem::take(&mut self.cut_buffer);
            let mut cuts = std::mem::take(&mut self.cut_lens);
            cuts.clear();
            let room = segmenter.header_len();
            headers.resize(room * segmenter.segments_left(), 0);
            let mut at = 0;
            while let Some(cut) = segmenter.next_header_from_parts(parts, &mut headers[at..]) {
                let Ok((header_len, payload)) = cut else {
                    self.counters.tx_link_errors += 1;
                    continue;
                };
                let cut = (at, header_len, payload);
                let result = with_frame_parts(&headers, parts, &cut, |frame| {
                    self.link.transmit(handed, frame)
                });
                let frame_len = cut.1 + cut.2.len();
                match result {
                    Ok(()) => {
                        self.counters.tx_frames += 1;
                        self.counters.tx_bytes += frame_len as u64;
                        self.counters.gso_segments += 1;
                        let complete = self.link.transmit_complete_at();
                        // Inside the span: each enqueue its own read.
                        let mut stamp = probe::Stamp::new();
                        self.device
                            .push(handed, frame_len, flow, complete, &mut stamp);
                        cuts.push(cut);
                    }
                    Err(_) => self.counters.tx_link_errors += 1,
                }
                at += room;
            }
            drop(span);
            // Outside the span: a capture's copy is not the link's.
            for cut in &cuts {
                with_frame_parts(&headers, parts, cut, |frame| {
                    self.link.transmitted(handed, frame)
                });
            }
            self.cut_buffer = headers;
            self.cut_lens = cuts;
        });
    }
}

/// Calls `f` with one wire frame the device stage cut as parts: its
/// headers at `cut.0` (`cut.1` bytes) in `headers`, then its payload,
/// the bytes `cut.2` of the super-segment `parts`.
fn with_frame_parts<R>(
    headers: &[u8],
    parts: &[&[u8]],
    cut: &(usize, usize, std::ops::Range<usize>),
    f: impl FnOnce(&[&[u8]]) -> R,
) -> R {
    let (at, len, payload) = cut;
    let mut frame: [&[u8]; 8] = [&[]; 8];
    frame[0] = &headers[*at..at + len];
    let mut count = 1;
    for piece in crate::buffer::pieces(parts, payload.clone()) {
        if count == frame.len() {
            // More pieces than a segment's payload takes of pool buffers
            // (tiny buffers): gathered.
            return with_flat(headers, parts, cut, f);
        }
        frame[count] = piece;
        count += 1;
    }
    f(&frame[..count])
}

/// [`with_frame_parts`]'s rare case: the frame copied flat.
fn with_flat<R>(
    headers: &[u8],
    parts: &[&[u8]],
    cut: &(usize, usize, std::ops::Range<usize>),
    f: impl FnOnce(&[&[u8]]) -> R,
) -> R {
    let (at, len, payload) = cut;
    let mut flat = Vec::with_capacity(len + payload.len());
    flat.extend_from_slice(&headers[*at..at + len]);
    crate::buffer::pieces(parts, payload.clone()).for_each(|piece| flat.extend_from_slice(piece));
    f(&[&flat])
}

/// Calls `f` with a super-segment as scatter-gather parts: a head and up
/// to some 30 pool buffers of payload, flattened only beyond 64 parts.
fn with_parts_wide<R>(frame: &Packet, f: impl FnOnce(&[&[u8]]) -> R) -> R {
    with_parts_up_to::<64, R>(frame, f)
}

/// Calls `f` with `frame` as at most `N` scatter-gather parts, flattened
/// into one when it has more.
fn with_parts_up_to<const N: usize, R>(frame: &Packet, f: impl FnOnce(&[&[u8]]) -> R) -> R {
    if let Some((parts, count)) = frame.parts_array::<N>() {
        return f(&parts[..count]);
    }
    with_gathered(frame, f)
}

/// The frame copied flat, for a link that is handed more parts than the
/// caller lays out.
#[cold]
#[inline(never)]
fn with_gathered<R>(frame: &Packet, f: impl FnOnce(&[&[u8]]) -> R) -> R {
    let mut flat = Vec::with_capacity(frame.len());
    frame.parts().for_each(|p| flat.extend_from_slice(p));
    f(&[&flat])
}

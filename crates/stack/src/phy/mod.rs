//! Links: what carries frames between interfaces.
//!
//! A link copies a frame in on [`Link::transmit`] and out on
//! [`Link::receive`], as a NIC's DMA does, so links never hold the stack's
//! packet buffers and can sit between hosts on different threads. Two
//! exceptions avoid the copy out. A link that hands GSO super-frames out
//! whole (a virtual wire made for them, AF_PACKET) lends the memory one
//! arrived in to the receiving host ([`WholeFrame::Lent`]), which gives
//! it back when done. And a link whose frame already lies as the host's
//! buffer would hold it (a virtual wire) exchanges the two memories in
//! [`Link::receive_into`] (page flipping): the frame's memory becomes the
//! host's buffer, and the buffer's goes back to the sender for a later
//! frame; the stack still holds only its own buffers, one for one. Probes
//! at the link boundary are the interface layer's job (it knows the flow);
//! links count frames and drops in [`LinkStats`].

use crate::buffer::Lent;
use crate::time::Instant;

/// A frame [`Link::receive_whole`] hands out.
pub enum WholeFrame<'a> {
    /// Bytes the link keeps (a ring slot it reuses): the host copies them.
    Borrowed(&'a [u8]),
    /// The memory the frame crossed in, lent: a host may make it the
    /// packet's storage, which goes back to the link when the packet is
    /// dropped (a veth hands its peer the `sk_buff` itself); dropped
    /// unused, it goes back at once.
    Lent(Lent),
}

impl WholeFrame<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            WholeFrame::Borrowed(bytes) => bytes,
            WholeFrame::Lent(lent) => lent.bytes(),
        }
    }
}

/// A host's empty pool buffer handed to [`Link::receive_into`]: the frame
/// goes after its headroom, copied into [`room`](Self::room), or, by a
/// link whose frame already lies so in memory of the same size, by
/// [`exchange`](Self::exchange) of the two memories.
pub struct RxBuffer<'a> {
    /// A pool buffer's memory: its length and capacity never change, so
    /// the pool's bound in bytes holds whichever memory it ends up with.
    memory: &'a mut Vec<u8>,
    headroom: usize,
}

impl<'a> RxBuffer<'a> {
    /// `memory`'s frame goes at `headroom` (at most its length).
    pub(crate) fn new(memory: &'a mut Vec<u8>, headroom: usize) -> Self {
        debug_assert!(headroom <= memory.len(), "headroom past the buffer");
        Self { memory, headroom }
    }

    /// Bytes in front of the frame, for headers a router prepends.
    pub fn headroom(&self) -> usize {
        self.headroom
    }

    /// The buffer's size, headroom included: what memory exchanged for it
    /// must hold.
    pub fn size(&self) -> usize {
        self.memory.len()
    }

    /// Where a frame is copied: everything after the headroom.
    pub fn room(&mut self) -> &mut [u8] {
        &mut self.memory[self.headroom..]
    }

    /// Makes `frame`, memory holding a frame after [`headroom`](Self::headroom)
    /// bytes, the buffer's, and hands the buffer's old memory back in its
    /// place, if the two have the same length and capacity (so the pool's
    /// bound in bytes is unchanged); else changes nothing and says false,
    /// for the caller to copy.
    #[inline]
    pub fn exchange(&mut self, frame: &mut Vec<u8>) -> bool {
        if frame.len() != self.memory.len() || frame.capacity() != self.memory.capacity() {
            return false;
        }
        std::mem::swap(self.memory, frame);
        true
    }
}

/// What a link's frames are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    /// Ethernet II frames (with the 14-byte header, without FCS).
    Ethernet,
    /// Bare IPv4 or IPv6 packets (loopback, tunnels).
    Ip,
}

/// Ethernet's frame check sequence (IEEE 802.3 §3.2.9): on the wire, not
/// in the frames the stack hands over.
const ETHERNET_FCS_LEN: usize = 4;
/// Ethernet's shortest frame, FCS included (IEEE 802.3 §4.4.2,
/// minFrameSize: 512 bits).
const ETHERNET_MIN_FRAME_LEN: usize = 64;
/// Preamble (7 octets) and start frame delimiter (1), before each frame
/// (IEEE 802.3 §3.2.1, §3.2.2).
const ETHERNET_PREAMBLE_LEN: usize = 8;
/// The idle time between frames, in octets (IEEE 802.3 §4.4.2,
/// interFrameGap: 96 bits).
const ETHERNET_INTER_FRAME_GAP: usize = 12;

impl Medium {
    /// Bytes of link header in front of the IP packet.
    pub const fn header_len(self) -> usize {
        match self {
            Medium::Ethernet => wire::ethernet::HEADER_LEN,
            Medium::Ip => 0,
        }
    }

    /// Octets a frame of `len` bytes (as the stack hands it over: link
    /// header and payload) holds the medium for at its bit rate. Ethernet
    /// (IEEE 802.3 §3.2, the frame's fields; §4.4.2, minFrameSize and
    /// interFrameGap) pads the frame to its 64-octet minimum with the
    /// 4-octet FCS, sends 8 octets of preamble and start delimiter before
    /// it and keeps 12 octets of inter-frame gap after it: 24 octets more
    /// than a full frame's bytes, so a 100 Mbit/s wire carries 1500-byte IP
    /// packets at 97.5 % of its rate, not 99.1 %, and a minimum frame
    /// takes 84 octets' time, not 60. Bare IP (tunnels, loopback) has no
    /// framing.
    pub const fn wire_octets(self, len: usize) -> usize {
        match self {
            Medium::Ethernet => {
                let framed = len + ETHERNET_FCS_LEN;
                let padded = if framed < ETHERNET_MIN_FRAME_LEN {
                    ETHERNET_MIN_FRAME_LEN
                } else {
                    framed
                };
                padded + ETHERNET_PREAMBLE_LEN + ETHERNET_INTER_FRAME_GAP
            }
            Medium::Ip => len,
        }
    }

    /// The pcapng link type of captures of this medium.
    pub const fn pcapng_link_type(self) -> wire::pcapng::LinkType {
        match self {
            Medium::Ethernet => wire::pcapng::LinkType::Ethernet,
            Medium::Ip => wire::pcapng::LinkType::RawIp,
        }
    }
}

/// Why a link refused a frame at transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The frame exceeds the link's MTU plus its header.
    #[error("frame of {len} bytes exceeds the link's maximum of {max}")]
    TooBig { len: usize, max: usize },
    /// The transmit queue is full (tail drop).
    #[error("link transmit queue full")]
    QueueFull,
    /// The interface is down (a real link whose kernel side is not up).
    #[error("link down")]
    Down,
    /// The link cannot carry this kind of frame (a tunnel: anything but
    /// IPv6).
    #[error("the link cannot carry this kind of frame")]
    Unsupported,
    /// The operating system refused the frame for another reason (errno).
    #[error("the operating system refused the frame: {}", std::io::Error::from_raw_os_error(*.0))]
    Os(i32),
}

/// Frame and byte counters, and drops by reason. Never reset by the link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub rx_frames: u64,
    pub rx_bytes: u64,
    /// Refused at transmit: larger than the MTU.
    pub dropped_too_big: u64,
    /// Refused at transmit: queue full.
    pub dropped_queue_full: u64,
    /// Lost on the wire (impairment).
    pub dropped_loss: u64,
    /// Frames delivered twice (impairment).
    pub duplicated: u64,
    /// Frames delivered with a flipped bit (impairment).
    pub corrupted: u64,
    /// Frames held back so that later ones overtook them (impairment).
    pub reordered: u64,
    /// Received frames longer than the buffer offered to `receive`.
    pub dropped_rx_too_long: u64,
    /// Refused at transmit: the interface is down (real links).
    pub dropped_link_down: u64,
    /// Refused at transmit: a kind of frame the link does not carry.
    pub dropped_unsupported: u64,
    /// Refused at transmit by the operating system for another reason.
    pub dropped_os_error: u64,
    /// Arrived at the operating system but dropped there before this link
    /// read them: its queue for the link was full (real links).
    pub dropped_rx_overrun: u64,
}

/// Copies an arrived `frame` into the receiver's `buf` and counts it, or
/// drops and counts it when `buf` is too small (never truncates). Shared
/// by every link's `receive`.
pub(crate) fn deliver(frame: &[u8], buf: &mut [u8], stats: &mut LinkStats) -> Option<usize> {
    let Some(dest) = buf.get_mut(..frame.len()) else {
        stats.dropped_rx_too_long += 1;
        return None;
    };
    dest.copy_from_slice(frame);
    stats.rx_frames += 1;
    stats.rx_bytes += frame.len() as u64;
    Some(frame.len())
}

/// Hands the next wire-sized frame `link.receive` gives to `take`, as
/// [`Link::receive_whole`] of a link that was cutting a super-frame for
/// `receive` when its host asked for whole frames: the segments cut so
/// far are followed by the rest, in order. `max` is the longest frame.
pub(crate) fn receive_one_cut(
    link: &mut impl Link,
    now: Instant,
    max: usize,
    take: &mut dyn FnMut(WholeFrame<'_>, Option<&vnet::VnetHeaderRepr>),
) -> bool {
    let mut segment = vec![0; max];
    match link.receive(now, &mut segment) {
        Some(len) => {
            take(WholeFrame::Borrowed(&segment[..len]), None);
            true
        }
        None => false,
    }
}

/// The length of the frame made of `parts`, or `TooBig` (counted in
/// `dropped_too_big`) when it exceeds `max`. Shared by every link's
/// `transmit`.
pub(crate) fn frame_len(
    parts: &[&[u8]],
    max: usize,
    stats: &mut LinkStats,
) -> Result<usize, LinkError> {
    let len = parts
        .iter()
        .fold(0usize, |sum, part| sum.saturating_add(part.len()));
    if len > max {
        stats.dropped_too_big += 1;
        return Err(LinkError::TooBig { len, max });
    }
    Ok(len)
}

/// One end of a link, as an interface sees it.
pub trait Link {
    /// Framing of the frames it carries.
    fn medium(&self) -> Medium;

    /// Largest IP packet it carries (the MTU); frames may add
    /// `medium().header_len()` bytes of link header.
    fn mtu(&self) -> usize;

    /// Copies the frame made of `parts` (scatter-gather, concatenated in
    /// order) onto the link at `now`.
    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError>;

    /// Whether the link takes a TCP super-frame (longer than the MTU)
    /// whole, with a `virtio_net_hdr` telling the far side how to cut it
    /// and where to finish its checksum (segmentation offload to the
    /// operating system: an AF_PACKET socket with `PACKET_VNET_HDR`, a TAP
    /// with `IFF_VNET_HDR`). A link that says no gets the device stage's
    /// segments instead ([`crate::iface::offload`]). A wrapper forwards it.
    fn takes_gso(&self) -> bool {
        false
    }

    /// Copies the GSO super-frame made of `parts` onto the link, behind
    /// `header` (virtio 1.2 §5.1.6.2, "Packet Transmission"). Only called
    /// where [`takes_gso`](Link::takes_gso) says yes; a link that does
    /// not refuses it. A wrapper forwards it.
    fn transmit_gso(
        &mut self,
        now: Instant,
        header: &vnet::VnetHeaderRepr,
        parts: &[&[u8]],
    ) -> Result<(), LinkError> {
        let _ = (now, header, parts);
        Err(LinkError::Unsupported)
    }

    /// Told, after [`transmit`](Link::transmit) took the frame made of
    /// `parts` and after the frame's measured `link.transmit` span has
    /// closed, that the frame left at `now`: where a wrapper keeps its
    /// bookkeeping (a capture's copy), so that no link window holds it. A
    /// wrapper forwards it; a link has nothing to do.
    fn transmitted(&mut self, now: Instant, parts: &[&[u8]]) {
        let _ = (now, parts);
    }

    /// Sends what [`transmit`](Link::transmit) gathered, for links that
    /// batch frames into one system call; the host calls it after handing
    /// over each poll's frames. A link that sends at once has nothing to do.
    fn flush(&mut self, now: Instant) {
        let _ = now;
    }

    /// Copies the next frame that has arrived by `now` into `buf` and
    /// returns its length, or `None` if none has. A frame longer than `buf`
    /// is dropped and counted (`dropped_rx_too_long`), never truncated.
    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize>;

    /// As [`receive`](Link::receive), into a host's buffer after its
    /// headroom: the frame's length, or `None` if none has arrived. A link
    /// whose frames lie in memory like the buffer's may
    /// [exchange](RxBuffer::exchange) it instead of copying (a virtual
    /// wire: a NIC that DMAs into the host's buffer); the default copies,
    /// as every link to the operating system and every wrapper (a capture
    /// sees the frame in `receive`) does.
    fn receive_into(&mut self, now: Instant, buf: &mut RxBuffer<'_>) -> Option<usize> {
        self.receive(now, buf.room())
    }

    /// Whether frames may arrive that only
    /// [`receive_whole`](Link::receive_whole) hands out: GSO super-frames,
    /// longer than any buffer `receive` is given (a virtual wire that
    /// carries them whole, as a veth pair; AF_PACKET with the kernel's GSO
    /// frames). A host whose interface merges (GRO) then receives with
    /// `receive_whole`; `receive` still hands out wire-sized frames, a
    /// super-frame cut. A wrapper forwards it.
    fn carries_gso(&self) -> bool {
        false
    }

    /// Hands the next frame that has arrived by `now` to `take`, whole,
    /// with the `virtio_net_hdr` saying how to cut it if it is a GSO
    /// super-frame (`None` for an ordinary frame), and counts it; false if
    /// none has arrived. For links that [`carry GSO`](Link::carries_gso);
    /// others have nothing to hand out this way. A super-frame may come
    /// [lent](WholeFrame::Lent) (the memory it arrived in, given back
    /// when dropped), an ordinary frame borrowed. A wrapper forwards it.
    fn receive_whole(
        &mut self,
        now: Instant,
        take: &mut dyn FnMut(WholeFrame<'_>, Option<&vnet::VnetHeaderRepr>),
    ) -> bool {
        let _ = (now, take);
        false
    }

    /// When the last bit of the frame [`transmit`](Link::transmit) last
    /// accepted leaves this end: the transmit-complete event (NDIS's send
    /// completion, a NIC's descriptor write-back), which the interface's
    /// device stage reports. A link that serialises at a rate says when
    /// (frames queue behind each other); one that hands frames to the
    /// operating system or to another queue at once says `None`: complete
    /// when handed over. No default: a wrapper must forward it.
    fn transmit_complete_at(&self) -> Option<Instant>;

    /// Frames the link's transmitter queues at most (a virtual wire's
    /// `queue_frames`): the interface's device ring is that deep. `None`
    /// for links to the operating system, whose queues are the kernel's;
    /// the ring then has [`DEFAULT_RING_FRAMES`](crate::iface::device::DEFAULT_RING_FRAMES)
    /// slots. No default: a wrapper must forward it.
    fn transmit_ring(&self) -> Option<usize>;

    /// When the next frame in flight towards this end arrives, if any: the
    /// runner may sleep until then.
    fn next_arrival(&self) -> Option<Instant>;

    /// When the frame [`receive`](Link::receive) last returned had arrived
    /// whole (its last bit), on the link's clock, if the link knows: a
    /// virtual wire does. The host records how long the frame then waited
    /// for it (`link.receive.arrival`), so a receive path is timed from the
    /// arrival, however late the receiver looked. Links to the operating
    /// system say `None`. No default: a wrapper must forward it.
    fn received_at(&self) -> Option<Instant>;

    /// Whether `receive` may find a frame at `now`: the host skips taking
    /// a buffer (and recording its probes) for a receive that would find
    /// nothing. A link that cannot tell says `true`.
    fn may_receive(&self, now: Instant) -> bool {
        let _ = now;
        true
    }

    /// The IPv6 interface identifier the link prescribes for the
    /// interface's link-local and SLAAC addresses, if it has no MAC address
    /// to make one from (RFC 4213 §3.7: a configured tunnel's is its IPv4
    /// address); `None` takes the modified EUI-64 of the interface's MAC
    /// (RFC 4291 §2.5.1).
    fn interface_id(&self) -> Option<[u8; 8]> {
        None
    }

    /// A descriptor that becomes readable when a frame arrives, for a
    /// runner that sleeps in `poll` until then (links to the operating
    /// system); `None` for links inside this process, which say when with
    /// [`next_arrival`](Link::next_arrival) instead.
    fn readable_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    /// Counters of this end.
    fn stats(&self) -> LinkStats;
}

pub mod capture;
pub mod hub;
pub mod loopback;
#[cfg(target_os = "linux")]
mod os;
#[cfg(target_os = "linux")]
pub mod packet;
#[cfg(target_os = "linux")]
mod rx_ring;
#[cfg(target_os = "linux")]
pub mod tap;
#[cfg(target_os = "linux")]
pub mod tunnel;
#[cfg(target_os = "linux")]
pub mod tx_batch;
pub mod virtual_wire;
pub mod vnet;

pub use capture::{CaptureConfig, CaptureStats, Captured, WhenFull};
pub use hub::{Hub, HubStats};
pub use loopback::Loopback;
pub use virtual_wire::{ConfigError, VirtualWire, WireConfig, WireEnd};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ethernet_frame_holds_the_wire_with_its_framing() {
        // Full frame: 1514 bytes, FCS, preamble and delimiter, gap.
        assert_eq!(Medium::Ethernet.wire_octets(1514), 1538);
        // The shortest a stack sends (60) and shorter ones are padded.
        assert_eq!(Medium::Ethernet.wire_octets(60), 84);
        assert_eq!(Medium::Ethernet.wire_octets(14), 84);
        assert_eq!(Medium::Ethernet.wire_octets(61), 85);
        assert_eq!(Medium::Ip.wire_octets(100), 100);
    }
}

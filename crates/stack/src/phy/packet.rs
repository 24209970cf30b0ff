//! AF_PACKET: the stack on an existing Ethernet interface of the host (a
//! veth end or a real NIC), as the MSR study's LAN link module sat on a
//! NIC driver (DESIGN.md, "Links").
//!
//! [`PacketLink`] is a `SOCK_RAW` packet socket bound to one interface for
//! every protocol (`ETH_P_ALL`), non-blocking. It moves whole Ethernet
//! frames (header included, no FCS):
//!
//! * **transmit** hands the frame's parts to the kernel in one `sendmsg`
//!   (an I/O vector: the gather happens in the kernel's copy, not here);
//! * **receive** takes up to [`PacketConfig::batch`] frames per system call
//!   (`recvmmsg`) into a ring of slots and hands them out one per
//!   [`Link::receive`], so a burst costs one call per batch
//!   ([`RingStats`] shows how well batching went);
//! * a packet socket also gets the frames others send out of the
//!   interface (the kernel's own stack, other sockets), marked
//!   `PACKET_OUTGOING`; they are not arrivals: the kernel is asked not to
//!   deliver them (`PACKET_IGNORE_OUTGOING`, Linux 4.20) and any that
//!   still come are skipped by their `sll_pkttype` (a socket never gets
//!   its own frames back);
//! * with `PACKET_VNET_HDR` each received frame comes with a
//!   `virtio_net_hdr`: a frame whose transport checksum the sender left to
//!   "hardware" (`CHECKSUM_PARTIAL`, the default for a kernel sending over
//!   veth) has its checksum completed here, as a NIC would have done;
//!   a GSO super-frame (TCP from a kernel peer over veth, which leaves
//!   segmentation to "hardware", or what GRO merged on a real NIC) is cut
//!   here into segments of the size the sender asked for, one per
//!   `receive`, written straight into the caller's buffer, as the
//!   kernel's software GSO would have done (TCP and UDP over IPv4 and
//!   IPv6; anything else is dropped and counted). For that the ring's
//!   slots hold 64 KiB each ([`PacketConfig::segment_gso`]). A host that
//!   merges (GRO) takes the super-frame whole instead
//!   ([`Link::receive_whole`]): the slot's own buffer is lent to it, a
//!   spare taking its place in the ring, and comes back as a spare when
//!   the host drops the packet (at most one spare per slot is kept). The parsing
//!   and segmenting are [`super::vnet`]'s; this module is the socket I/O
//!   around them.
//!
//! The interface is not made promiscuous: the host should use the
//! interface's own address ([`PacketLink::mac`]). The kernel of the
//! namespace the interface is in still sees every frame too; it should
//! have no addresses there (`sysctl net.ipv6.conf.IFACE.disable_ipv6=1`,
//! no IPv4 address), or it answers for the same link-local address.

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use wire::ethernet::EthernetAddress;

use super::os::{
    bind_packet, context, interface_name, invalid, read_flags, read_mac, read_mtu, send_error,
    send_parts, set_int_option, set_socket_buffers,
};
use super::rx_ring::{RxFrame, RxRing};
use super::tx_batch::TxBatch;
// The bytes of `struct virtio_net_hdr` in front of each frame with
// `PACKET_VNET_HDR`.
use super::vnet::{self, TooLong, HEADER_LEN as VNET_HDR_LEN};
use super::{Link, LinkError, LinkStats, Medium};
use crate::time::Instant;

/// Frames taken per system call by default.
pub const DEFAULT_BATCH: usize = 32;
/// Most frames one system call may take (the receive ring's size bound).
pub const MAX_BATCH: usize = 64;
/// System calls one `receive` makes at most when every frame it finds is
/// skipped (its own, malformed), so a flood of those cannot hold it.
const MAX_REFILLS: usize = 4;
/// One 802.1Q tag: a tagged frame may be this much longer.
const VLAN_TAG_LEN: usize = 4;
/// The largest GSO frame a slot takes: Linux's default `gso_max_size`
/// (the packet from the network header on) plus a tagged Ethernet header.
const GSO_FRAME_MAX: usize = 65536 + 18;

/// How to open a [`PacketLink`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketConfig {
    /// The MTU to use; `None` reads the interface's (`SIOCGIFMTU`).
    pub mtu: Option<usize>,
    /// Frames taken per system call, 1..=[`MAX_BATCH`].
    pub batch: usize,
    /// `SO_RCVBUF` and `SO_SNDBUF` (forced past the system limit when
    /// running as root); `None` keeps the system's defaults.
    pub socket_buffer_bytes: Option<usize>,
    /// Cut GSO super-frames into segments (slots of 64 KiB, about 2 MiB
    /// for a batch of 32); without it slots fit the MTU and such frames
    /// are dropped as too long.
    pub segment_gso: bool,
}

impl Default for PacketConfig {
    fn default() -> Self {
        Self {
            mtu: None,
            batch: DEFAULT_BATCH,
            socket_buffer_bytes: Some(DEFAULT_SOCKET_BUFFER),
            segment_gso: true,
        }
    }
}

/// The socket buffers a link asks for by default: deep enough for a burst
/// of a TCP window (a reference host offers 4 MiB) in GSO super-frames,
/// which cost their whole 64 KiB of buffer each, to wait while the host is
/// busy. With the system's default (about 200 KiB) the kernel dropped
/// hundreds of super-frames per 100 MiB sent to a reference host that
/// checks every byte, about 15 000 segments to retransmit; with this, none
/// (`stackscope ttcp --pair --stack ref --link packet -n 12800`).
pub const DEFAULT_SOCKET_BUFFER: usize = 16 << 20;

/// What a packet link counts beyond [`LinkStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// Frames sent out of the interface by others (the kernel, other
    /// sockets) that reached this socket and were skipped.
    pub outgoing_skipped: u64,
    /// `sendmmsg` calls that sent the frames transmitted.
    pub tx_batches: u64,
    /// Received frames whose transport checksum was completed here.
    pub checksums_completed: u64,
    /// GSO super-frames cut into segments, and the segments made.
    pub gso_frames: u64,
    pub gso_segments: u64,
    /// GSO super-frames of the stack's own (segmentation offload) sent
    /// whole, behind a `virtio_net_hdr`.
    pub gso_sent: u64,
    /// GSO super-frames dropped: segmentation off, or a kind or layout it
    /// does not handle (also counted as `dropped_rx_too_long`).
    pub gso_dropped: u64,
    /// Frames with an impossible `virtio_net_hdr` (checksum offsets
    /// outside the frame), dropped.
    pub malformed: u64,
    /// Sends the kernel refused for a reason other than a full queue or
    /// the frame's size (interface down, ...): returned as
    /// [`LinkError::Down`] or [`LinkError::Os`].
    pub tx_errors: u64,
    /// The errno of the latest failed send or receive.
    pub last_error: Option<i32>,
}

/// How batched receiving went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingStats {
    /// `recvmmsg` calls that returned at least one frame.
    pub batches: u64,
    /// Frames those calls returned (before the link's own checks).
    pub frames: u64,
    /// The most frames one call returned.
    pub largest_batch: usize,
    /// Calls that found nothing.
    pub empty: u64,
    /// Calls that failed otherwise.
    pub errors: u64,
    /// Frames handed to the host in their slot's own buffer (GSO
    /// super-frames received whole), a spare put in its place.
    pub lent: u64,
    /// Spares made because none had come back yet.
    pub spares_made: u64,
}

/// A link on an existing Ethernet interface through an AF_PACKET socket.
pub struct PacketLink {
    fd: OwnedFd,
    interface: String,
    ifindex: u32,
    mac: EthernetAddress,
    mtu: usize,
    ignores_outgoing: bool,
    vnet_header: bool,
    segment_gso: bool,
    /// The GSO frame being cut into segments, if any.
    segmenter: Option<Segmenter>,
    /// Frames waiting for the next `sendmmsg`.
    tx: TxBatch,
    /// Where a GSO super-frame of more parts than one I/O vector takes is
    /// gathered (kept, so as not to allocate per frame).
    gso_scratch: Vec<u8>,
    /// Frames the kernel dropped before we read them, summed (the kernel
    /// resets its count on every read).
    kernel_drops: std::cell::Cell<u64>,
    /// Behind a `RefCell` so that `may_receive(&self)` can fill it: the
    /// same system call both answers "is there a frame?" and fetches it.
    ring: RefCell<RxRing>,
    stats: LinkStats,
    packet_stats: PacketStats,
}

impl PacketLink {
    /// Opens a link on `interface` (in the calling thread's network
    /// namespace) with the default configuration: the interface's MTU,
    /// [`DEFAULT_BATCH`] frames per system call.
    pub fn open(interface: &str) -> io::Result<Self> {
        Self::open_with(interface, &PacketConfig::default())
    }

    /// Opens a link on `interface` as `config` says. Needs `CAP_NET_RAW`.
    pub fn open_with(interface: &str, config: &PacketConfig) -> io::Result<Self> {
        check_batch(config.batch)?;
        if let Some(mtu) = config.mtu {
            if !(1..=65535).contains(&mtu) {
                return Err(invalid(format!(
                    "an MTU of {mtu} is impossible on Ethernet (1..=65535)"
                )));
            }
        }
        let name = interface_name(interface)?;
        // SAFETY: `name` is a NUL-terminated string that outlives the call;
        // if_nametoindex only reads it.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(context(
                format!("find interface {interface} in this network namespace"),
                io::Error::last_os_error(),
            ));
        }
        // Protocol 0: the socket receives nothing until `bind` names both
        // the protocol and the interface, so no frame of another interface
        // slips in between the two calls.
        // SAFETY: socket takes no pointers; the result is checked below.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(context(
                "open an AF_PACKET socket (needs CAP_NET_RAW)",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: `raw` is a descriptor socket just returned, owned by
        // nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mac = read_mac(fd.as_raw_fd(), &name, interface)?;
        let mtu = match config.mtu {
            Some(mtu) => mtu,
            None => read_mtu(fd.as_raw_fd(), &name, interface)?,
        };
        // Linux 4.20 and later: frames sent out of the interface (by the
        // kernel or other sockets) are not delivered to us.
        let ignores_outgoing = set_int_option(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            1,
        )
        .is_ok();
        let vnet_header =
            set_int_option(fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_VNET_HDR, 1).is_ok();
        if let Some(bytes) = config.socket_buffer_bytes {
            set_socket_buffers(fd.as_raw_fd(), bytes)?;
        }
        bind_packet(fd.as_raw_fd(), ifindex)
            .map_err(|e| context(format!("bind an AF_PACKET socket to {interface}"), e))?;
        let header = if vnet_header { VNET_HDR_LEN } else { 0 };
        let segment_gso = config.segment_gso && vnet_header;
        let mut slot = wire::ethernet::HEADER_LEN + VLAN_TAG_LEN + mtu;
        if segment_gso {
            slot = slot.max(GSO_FRAME_MAX);
        }
        let slot = header + slot;
        Ok(Self {
            fd,
            interface: interface.to_string(),
            ifindex,
            mac,
            mtu,
            ignores_outgoing,
            vnet_header,
            segment_gso,
            segmenter: None,
            tx: TxBatch::new(config.batch, header + wire::ethernet::HEADER_LEN + mtu),
            gso_scratch: Vec::new(),
            kernel_drops: std::cell::Cell::new(0),
            ring: RefCell::new(RxRing::new(config.batch, slot)),
            stats: LinkStats::default(),
            packet_stats: PacketStats::default(),
        })
    }

    /// The interface's Ethernet address: what the host on this link
    /// should use, since the interface is not promiscuous.
    pub fn mac(&self) -> EthernetAddress {
        self.mac
    }

    /// The interface's name.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// Whether the interface is up (`IFF_UP`), asked through the link's own
    /// socket, so in the namespace the link was opened in.
    pub fn is_up(&self) -> io::Result<bool> {
        let name = interface_name(&self.interface)?;
        let flags = read_flags(self.fd.as_raw_fd(), &name, &self.interface)?;
        Ok(flags & libc::IFF_UP != 0)
    }

    /// The interface's index in its namespace.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Whether the kernel keeps frames sent out of the interface from this
    /// socket (`PACKET_IGNORE_OUTGOING`); skipped by type otherwise.
    pub fn ignores_outgoing(&self) -> bool {
        self.ignores_outgoing
    }

    /// Whether frames arrive with a `virtio_net_hdr`, so partial checksums
    /// are completed and GSO frames recognised.
    pub fn vnet_header(&self) -> bool {
        self.vnet_header
    }

    pub fn packet_stats(&self) -> PacketStats {
        self.packet_stats
    }

    pub fn ring_stats(&self) -> RingStats {
        self.ring.borrow().stats
    }

    /// Largest frame carried: the MTU plus the Ethernet header.
    pub fn max_frame_len(&self) -> usize {
        self.mtu + wire::ethernet::HEADER_LEN
    }
}

impl Link for PacketLink {
    fn medium(&self) -> Medium {
        Medium::Ethernet
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    /// Queues the frame for the next `sendmmsg` (when the batch is full or
    /// the host flushes); a frame the kernel then refuses is counted in the
    /// stats by reason, as it cannot be returned here any more.
    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        let max = self.max_frame_len();
        super::frame_len(parts, max, &mut self.stats)?;
        if self.tx.is_full() {
            self.flush(now);
        }
        // A zeroed virtio_net_hdr: no checksum to complete, no GSO.
        let header = [0u8; VNET_HDR_LEN];
        let prefix: &[u8] = if self.vnet_header { &header } else { &[] };
        self.tx.push(prefix, parts);
        Ok(())
    }

    /// With `PACKET_VNET_HDR` the kernel takes a GSO super-frame whole and
    /// cuts it (or hands it whole to a peer that takes GSO, as a veth
    /// does).
    fn takes_gso(&self) -> bool {
        self.vnet_header
    }

    /// Sends the super-frame at once, with one `sendmsg` behind its
    /// header, after the frames queued before it (so the order holds).
    fn transmit_gso(
        &mut self,
        now: Instant,
        header: &vnet::VnetHeaderRepr,
        parts: &[&[u8]],
    ) -> Result<(), LinkError> {
        if !self.vnet_header {
            self.stats.dropped_unsupported += 1;
            return Err(LinkError::Unsupported);
        }
        let len = super::frame_len(parts, GSO_FRAME_MAX, &mut self.stats)?;
        self.flush(now);
        let mut bytes = [0u8; VNET_HDR_LEN];
        if header.emit(&mut bytes).is_err() {
            self.stats.dropped_unsupported += 1;
            return Err(LinkError::Unsupported);
        }
        let mut scratch = std::mem::take(&mut self.gso_scratch);
        let sent = send_parts(self.fd.as_raw_fd(), &bytes, parts, &mut scratch);
        self.gso_scratch = scratch;
        match sent {
            Ok(()) => {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += len as u64;
                self.packet_stats.gso_sent += 1;
                Ok(())
            }
            Err(error) => {
                self.packet_stats.last_error = error.raw_os_error();
                Err(send_error(
                    &error,
                    len,
                    GSO_FRAME_MAX,
                    &mut self.stats,
                    &mut self.packet_stats.tx_errors,
                ))
            }
        }
    }

    fn flush(&mut self, _now: Instant) {
        if self.tx.is_empty() {
            return;
        }
        let prefix = if self.vnet_header { VNET_HDR_LEN } else { 0 };
        let (max, stats, packet_stats) = (
            self.max_frame_len(),
            &mut self.stats,
            &mut self.packet_stats,
        );
        let flushed = self.tx.flush(self.fd.as_raw_fd(), |len, error| {
            packet_stats.last_error = error.raw_os_error();
            send_error(error, len - prefix, max, stats, &mut packet_stats.tx_errors);
        });
        self.stats.tx_frames += flushed.frames;
        self.stats.tx_bytes += flushed.bytes - flushed.frames * prefix as u64;
        self.packet_stats.tx_batches += flushed.calls;
    }

    fn receive(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        let mut refills = 0;
        loop {
            if let Some(segmenter) = &mut self.segmenter {
                let ring = self.ring.get_mut();
                match segmenter.next_into(ring.slot_bytes(segmenter.slot), buf) {
                    Some(Ok(len)) => {
                        self.packet_stats.gso_segments += 1;
                        self.stats.rx_frames += 1;
                        self.stats.rx_bytes += len as u64;
                        return Some(len);
                    }
                    Some(Err(TooLong)) => self.stats.dropped_rx_too_long += 1,
                    None => self.segmenter = None,
                }
                continue;
            }
            match self.next_frame(&mut refills, |bytes, stats| {
                super::deliver(bytes, buf, stats)
            }) {
                Next::Frame(len) => return Some(len),
                Next::Gso(segmenter) => self.segmenter = Some(segmenter),
                Next::Empty => return None,
            }
        }
    }

    /// With GSO segmentation on, super-frames can be handed out whole.
    fn carries_gso(&self) -> bool {
        self.segment_gso
    }

    /// Like [`receive`](Link::receive), but a GSO super-frame goes out
    /// whole with its header, for a host that merges, instead of being cut
    /// here. A frame whose checksum the sender left partial and that is no
    /// super-frame is completed, as `receive` does.
    fn receive_whole(
        &mut self,
        now: Instant,
        take: &mut dyn FnMut(super::WholeFrame<'_>, Option<&vnet::VnetHeaderRepr>),
    ) -> bool {
        if self.segmenter.is_some() {
            // The host turned GRO on while `receive` was cutting.
            let max = self.ring.get_mut().slot;
            return super::receive_one_cut(self, now, max, take);
        }
        let mut refills = 0;
        loop {
            let next = self.next_frame(&mut refills, |bytes, stats| {
                stats.rx_frames += 1;
                stats.rx_bytes += bytes.len() as u64;
                take(super::WholeFrame::Borrowed(bytes), None);
                Some(())
            });
            let slot = match next {
                Next::Frame(()) => return true,
                Next::Empty => return false,
                Next::Gso(segmenter) => segmenter.slot,
            };
            // Checked by the segmenter; handed out as it came, in the
            // slot's own buffer, lent.
            let ring = self.ring.get_mut();
            let packet = ring.slot_bytes(slot);
            let Ok(header) = vnet::VnetHeaderRepr::parse(packet) else {
                continue;
            };
            let len = packet.len();
            let Some(frame) = ring.lend(slot, VNET_HDR_LEN..len) else {
                continue;
            };
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += frame.bytes().len() as u64;
            take(super::WholeFrame::Lent(frame), Some(&header));
            return true;
        }
    }

    fn transmit_ring(&self) -> Option<usize> {
        None
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        None
    }

    fn received_at(&self) -> Option<Instant> {
        None
    }

    fn next_arrival(&self) -> Option<Instant> {
        None
    }

    fn readable_fd(&self) -> Option<RawFd> {
        Some(self.as_raw_fd())
    }

    fn may_receive(&self, _now: Instant) -> bool {
        if self.segmenter.is_some() {
            return true;
        }
        let Ok(mut ring) = self.ring.try_borrow_mut() else {
            return true;
        };
        ring.has_frames() || matches!(ring.refill(self.fd.as_raw_fd()), Ok(n) if n > 0)
    }

    fn stats(&self) -> LinkStats {
        let mut stats = self.stats;
        stats.dropped_rx_overrun = self.kernel_drops();
        stats
    }
}

impl PacketLink {
    /// Frames the kernel dropped for this socket because its receive queue
    /// was full (`PACKET_STATISTICS`' `tp_drops`), since the link opened.
    /// The kernel resets its count on every read, so they are summed here.
    fn kernel_drops(&self) -> u64 {
        let mut stats = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `stats` is a live tpacket_stats whose size is passed in
        // `len`; the kernel writes at most that many bytes into it.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut stats as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.kernel_drops
                .set(self.kernel_drops.get() + u64::from(stats.tp_drops));
        }
        self.kernel_drops.get()
    }
}

impl AsFd for PacketLink {
    /// The socket, for a runner that waits for it to become readable.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for PacketLink {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl fmt::Debug for PacketLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacketLink")
            .field("interface", &self.interface)
            .field("ifindex", &self.ifindex)
            .field("mac", &self.mac)
            .field("mtu", &self.mtu)
            .field("ignores_outgoing", &self.ignores_outgoing)
            .field("vnet_header", &self.vnet_header)
            .field("stats", &self.stats)
            .field("packet_stats", &self.packet_stats)
            .field("ring_stats", &self.ring_stats())
            .finish()
    }
}

/// Refills the ring for a receive that found it empty, at most
/// [`MAX_REFILLS`] times per receive: whether frames came (a failed call
/// is noted in `last_error`).
fn refill_once_more(
    ring: &mut RxRing,
    fd: RawFd,
    refills: &mut usize,
    packet_stats: &mut PacketStats,
) -> bool {
    if *refills == MAX_REFILLS {
        return false;
    }
    *refills += 1;
    match ring.refill(fd) {
        Ok(0) => false,
        Ok(_) => true,
        Err(error) => {
            packet_stats.last_error = error.raw_os_error();
            false
        }
    }
}

/// What [`PacketLink::next_frame`] found.
enum Next<R> {
    /// An ordinary frame, and what its handler made of it.
    Frame(R),
    /// A GSO frame, still in its slot, for the caller to cut or lend.
    Gso(Segmenter),
    /// Nothing more within the refill bound.
    Empty,
}

impl PacketLink {
    /// Takes frames off the ring, refilling it as it runs dry (at most
    /// [`MAX_REFILLS`] times over `refills`), until one passes the link's
    /// checks: an ordinary frame goes to `frame`, whose `Some` ends the
    /// search (`None`: it was dropped, go on); a GSO frame is returned for
    /// the caller. What `receive` and `receive_whole` share.
    fn next_frame<R>(
        &mut self,
        refills: &mut usize,
        mut frame: impl FnMut(&[u8], &mut LinkStats) -> Option<R>,
    ) -> Next<R> {
        let options = Accept {
            vnet_header: self.vnet_header,
            segment_gso: self.segment_gso,
        };
        let ring = self.ring.get_mut();
        loop {
            if let Some(popped) = ring.pop() {
                match accept_frame(popped, options, &mut self.stats, &mut self.packet_stats) {
                    Accepted::Frame(bytes) => {
                        if let Some(made) = frame(bytes, &mut self.stats) {
                            return Next::Frame(made);
                        }
                    }
                    Accepted::Gso(segmenter) => return Next::Gso(segmenter),
                    Accepted::Skipped => {}
                }
                continue;
            }
            if !refill_once_more(ring, self.fd.as_raw_fd(), refills, &mut self.packet_stats) {
                return Next::Empty;
            }
        }
    }
}

/// How received frames are read.
#[derive(Debug, Clone, Copy)]
struct Accept {
    vnet_header: bool,
    segment_gso: bool,
}

/// What became of a received frame.
enum Accepted<'a> {
    /// An ordinary frame: these bytes.
    Frame(&'a [u8]),
    /// A GSO frame, to be cut into segments.
    Gso(Segmenter),
    /// Dropped or skipped (counted).
    Skipped,
}

/// Checks one received frame: skips the socket's own and truncated ones,
/// and has [`vnet::accept`] read its `virtio_net_hdr`.
fn accept_frame<'a>(
    frame: RxFrame<'a>,
    options: Accept,
    stats: &mut LinkStats,
    packet_stats: &mut PacketStats,
) -> Accepted<'a> {
    if frame.packet_type() == Some(libc::PACKET_OUTGOING) {
        packet_stats.outgoing_skipped += 1;
        return Accepted::Skipped;
    }
    if frame.truncated {
        stats.dropped_rx_too_long += 1;
        return Accepted::Skipped;
    }
    if !options.vnet_header {
        return Accepted::Frame(frame.bytes);
    }
    let slot = frame.slot;
    match vnet::accept(frame.bytes, options.segment_gso) {
        vnet::Accepted::Frame {
            frame,
            checksum_completed,
        } => {
            if checksum_completed {
                packet_stats.checksums_completed += 1;
            }
            Accepted::Frame(frame)
        }
        vnet::Accepted::Gso(cut) => {
            packet_stats.gso_frames += 1;
            Accepted::Gso(Segmenter { slot, cut })
        }
        vnet::Accepted::GsoRefused(_) => {
            packet_stats.gso_dropped += 1;
            stats.dropped_rx_too_long += 1;
            Accepted::Skipped
        }
        vnet::Accepted::Malformed => {
            packet_stats.malformed += 1;
            Accepted::Skipped
        }
    }
}

/// A GSO super-frame of the ring being cut into segments: the slot it is
/// in (it stays there until the segments are out: the ring is refilled
/// only when its frames are all handed out) and its [`vnet::Segmenter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segmenter {
    slot: usize,
    cut: vnet::Segmenter,
}

impl Segmenter {
    /// Writes the next segment of `slot` (the ring slot the frame is in,
    /// `virtio_net_hdr` first) into `buf`: its length, `TooLong` when it
    /// does not fit (that segment is skipped), `None` when all are out.
    fn next_into(&mut self, slot: &[u8], buf: &mut [u8]) -> Option<Result<usize, TooLong>> {
        self.cut.next_into(slot.get(VNET_HDR_LEN..)?, buf)
    }
}

// ----- Shared with the tunnel ----------------------------------------------

pub(super) fn check_batch(batch: usize) -> io::Result<()> {
    if (1..=MAX_BATCH).contains(&batch) {
        Ok(())
    } else {
        Err(invalid(format!(
            "a batch of {batch} frames per system call is outside 1..={MAX_BATCH}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_checked_before_any_system_call() {
        let bad_batch = PacketConfig {
            batch: 0,
            ..PacketConfig::default()
        };
        let error = PacketLink::open_with("lo", &bad_batch).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        let long = "x".repeat(libc::IFNAMSIZ);
        assert_eq!(
            PacketLink::open(&long).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            PacketLink::open("a\0b").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn packet_links_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<PacketLink>();
    }
}

//! TCP in the host: segments in (checksum, demultiplexing to a connection
//! or listener, RST for a closed port), segments out (header into the
//! packet's headroom, payload referenced from the send queue, checksum
//! across the segments, IP output), timers, and the stream-queue probes.

use std::net::{IpAddr, SocketAddr};

use probe::Flow;
use wire::checksum;
use wire::ip::{ChecksumMode, IpProtocol};
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr};

use super::ipv4::Ipv4Send;
use super::ipv6_input::read_at;
use super::ipv6_output::Ipv6Send;
use super::transport::{pseudo_header, sum_range, IpMeta};
use super::Host;
use crate::buffer::Packet;
use crate::iface::icmp_error::Quoted;
use crate::probes::{
    CHECKSUM_ENTER, CHECKSUM_EXIT, IPV4_OUTPUT_EXIT, IPV6_OUTPUT_EXIT, RECV_QUEUE_ENQUEUE,
    SEND_QUEUE_DEQUEUE, TCP_INPUT_ENTER, TCP_INPUT_EXIT, TCP_OUTPUT_ENTER, TCP_OUTPUT_EXIT,
    TCP_TIMER_ENTER, TCP_TIMER_EXIT,
};
use crate::socket::probe_len;
use crate::socket::tcp::connection::{Connection, Outgoing, Reply};
use crate::socket::tcp::listener::ListenerReply;
use crate::socket::tcp::options;
use crate::socket::tcp::seq::Seq;
use crate::socket::tcp::sockets::{Demux, TcpSocket};
use crate::socket::tcp::state::State;
use crate::time::Instant;

/// Segments one connection sends per poll at most, so one fast sender
/// cannot starve the host's other work (the rest go at the next poll).
const OUTPUT_BUDGET: usize = 64;

impl Host {
    /// A TCP segment at `pos` of a packet for us. The packet is borrowed,
    /// not moved in: TCP only reads it (the payload is copied into the
    /// receive buffer), and the caller drops it after.
    pub(super) fn tcp_input(&mut self, now: Instant, meta: &IpMeta, packet: &Packet, pos: usize) {
        let span = probe::span_with(TCP_INPUT_ENTER, TCP_INPUT_EXIT, packet.flow(), || {
            (packet.len() as u32, 0)
        });
        self.tcp_input_segment(now, meta, packet, pos);
        // A segment whose data or acknowledgment was the last work (no
        // reply sent) ends at its stream queue's record.
        span.end_after(&[RECV_QUEUE_ENQUEUE, SEND_QUEUE_DEQUEUE]);
    }

    /// [`tcp_input`](Self::tcp_input)'s work, inside its span.
    #[inline(always)]
    fn tcp_input_segment(&mut self, now: Instant, meta: &IpMeta, packet: &Packet, pos: usize) {
        let Some(total) = packet.len().checked_sub(pos) else {
            self.tcp_drop("tcp_truncated");
            return;
        };
        let (src, dst) = (meta.src(), meta.dst());
        // The segment in place when one buffer holds it all (a frame
        // received whole, the common case): summed in one call and its
        // header read where it lies, with no walk over the packet's parts
        // for each. Else each is gathered across the parts.
        let whole = contiguous(packet, pos, total);
        // GRO verified a merged segment's checksum segment by segment.
        if !packet.offload().csum_verified {
            let _span = probe::span(
                CHECKSUM_ENTER,
                CHECKSUM_EXIT,
                total as u32,
                packet.flow(),
                0,
            );
            let pseudo = pseudo_header(src, dst, IpProtocol::Tcp, total);
            let sum = match whole {
                Some(segment) => checksum::sum(segment),
                None => sum_range(packet, pos, total),
            };
            if checksum::add(pseudo, sum) != 0xffff {
                self.tcp_drop("tcp_bad_checksum");
                return;
            }
        }
        // Pull up the header (options included) to parse it.
        let mut scratch = [0u8; wire::tcp::MAX_HEADER_LEN];
        let Some(fixed) = leading(whole, packet, pos, wire::tcp::HEADER_LEN, &mut scratch) else {
            self.tcp_drop("tcp_truncated");
            return;
        };
        let header_len = usize::from(fixed[12] >> 4) * 4;
        if header_len < wire::tcp::HEADER_LEN || header_len > total {
            self.tcp_drop("tcp_bad_header_length");
            return;
        }
        let Some(header) = leading(whole, packet, pos, header_len, &mut scratch) else {
            self.tcp_drop("tcp_truncated");
            return;
        };
        let Ok(view) = TcpPacket::new_checked(header) else {
            self.tcp_drop("tcp_malformed");
            return;
        };
        // The repr (130 bytes) is used where the parse left it, inside the
        // result: moving it out cost a copy per segment.
        let mut parsed = TcpRepr::parse(&view, &src, &dst, ChecksumMode::Skip);
        let Ok(repr) = &mut parsed else {
            self.tcp_drop("tcp_malformed");
            return;
        };
        repr.payload_len = total - header_len;
        self.counters.tcp_received += 1;
        // RFC 9293 §3.9.1.2 / RFC 1122 §4.2.3.10: TCP is unicast only;
        // nothing addressed to a group or a broadcast is processed or
        // answered.
        let broadcast = match dst {
            IpAddr::V6(a) => a.is_multicast(),
            IpAddr::V4(a) => a.is_multicast() || self.is_ipv4_broadcast(a),
        };
        if meta.link_multicast() || broadcast {
            self.tcp_drop("tcp_not_unicast");
            return;
        }
        // The payload where it lies, copied only into the receive buffer:
        // in place for a segment received whole (the common case), else
        // from the buffers it lies in.
        let payload_at = pos + header_len;
        let payload = match whole {
            Some(segment) => segment.get(header_len..),
            None => contiguous(packet, payload_at, repr.payload_len),
        };
        match payload {
            Some(bytes) => self.tcp_deliver(now, (dst, src), repr, &[bytes], packet.flow()),
            None => self.tcp_deliver_parted(now, (dst, src), repr, packet, payload_at),
        }
    }

    /// [`tcp_deliver`](Self::tcp_deliver) for a segment whose payload, at
    /// `payload_at` of `packet`, spans several of its buffers (GRO merged
    /// it, or IP reassembled it): handed over as the pieces of those
    /// buffers, or, from a packet of more than [`MAX_PAYLOAD_PARTS`]
    /// parts (tiny segments merged, tiny fragments), gathered into the
    /// host's scratch buffer first (a copy of its own). Out of line: its
    /// piece arrays and second call site stay off the path of the segment
    /// received whole.
    #[inline(never)]
    fn tcp_deliver_parted(
        &mut self,
        now: Instant,
        ips: (IpAddr, IpAddr),
        seg: &TcpRepr,
        packet: &Packet,
        payload_at: usize,
    ) {
        let (len, flow) = (seg.payload_len, packet.flow());
        let delivered = with_pieces(packet, payload_at..payload_at + len, |pieces| {
            self.tcp_deliver(now, ips, seg, pieces, flow);
        });
        if delivered.is_some() {
            return;
        }
        let mut gathered = std::mem::take(&mut self.scratch);
        // An IP payload is at most 65 535 bytes: the scratch holds it
        // (grown here only if a caller had taken it).
        if gathered.len() < len {
            gathered.resize(len, 0);
        }
        let n = packet.copy_out(payload_at, &mut gathered[..len]);
        self.tcp_deliver(now, ips, seg, &[&gathered[..n]], flow);
        self.scratch = gathered;
    }

    /// Counts a segment dropped. Out of line and cold: every drop branch
    /// of the TCP paths then leaves their hot code (and the compiler lays
    /// it apart).
    #[cold]
    #[inline(never)]
    fn tcp_drop(&mut self, reason: &'static str) {
        self.count_drop(reason);
    }

    /// Hands a parsed segment, from `remote_ip` to our `local_ip`, to its
    /// socket and sends what it asks for. Socket addresses are made of
    /// the addresses and the segment's ports only for a listener or for
    /// no socket: a connection's segment is matched, and answered, without
    /// them.
    fn tcp_deliver(
        &mut self,
        now: Instant,
        (local_ip, remote_ip): (IpAddr, IpAddr),
        seg: &TcpRepr,
        payload: &[&[u8]],
        flow: Flow,
    ) {
        let ips = (local_ip, remote_ip);
        let demux = self
            .tcp
            .demux_parts((&local_ip, seg.dst_port), (&remote_ip, seg.src_port));
        let syn = seg.flags.contains(TcpFlags::SYN) && !seg.flags.contains(TcpFlags::RST);
        // SYN+FIN opens nothing: RFC 9293 leaves it open, Linux and the
        // BSDs drop it (it only serves scanners and IDS evasion), and so do
        // we — no SYN-ACK, no state.
        if syn && seg.flags.contains(TcpFlags::FIN) && matches!(demux, Demux::Listener(_)) {
            self.tcp_drop("tcp_syn_fin");
            return;
        }
        // A SYN (or SYN-ACK) for a socket whose MSS option is below the
        // floor: the connection takes MIN_PEER_MSS instead
        // (`options::negotiate`).
        if syn && demux != Demux::None && options::clamped_peer_mss(seg).is_some() {
            self.counters.tcp_mss_clamped += 1;
        }
        match demux {
            Demux::Connection(index) => {
                let Some(slot) = self.tcp.get_mut(index) else {
                    return;
                };
                let TcpSocket::Connection(conn) = &mut slot.socket else {
                    return;
                };
                let reply = conn.input(now, seg, payload, &mut self.tcp_challenges);
                // The ACKs arriving data is owed (every second segment, each
                // out-of-order one: RFC 5681 §4.2) leave as it is taken, not
                // once per poll: see `poll_ack`.
                // Built where it is sent from: returned by value, the
                // segment (200 bytes) was copied on its way here.
                let mut ack = conn.ack_due().then(Outgoing::empty);
                if let Some(out) = &mut ack {
                    if !conn.poll_ack_into(now, out) {
                        ack = None;
                    }
                }
                let flow = conn.flow();
                self.tcp_observe(index);
                if let Reply::Rst(rst) = reply {
                    let mut rst = Outgoing::header_only(rst);
                    self.tcp_emit(now, flow, ips, &mut rst, Some(index));
                }
                if let Some(ack) = &mut ack {
                    self.tcp_emit(now, flow, ips, ack, Some(index));
                }
            }
            Demux::Listener(index) => {
                let Some(slot) = self.tcp.get_mut(index) else {
                    return;
                };
                let TcpSocket::Listener(listener) = &mut slot.socket else {
                    return;
                };
                let local = SocketAddr::new(local_ip, seg.dst_port);
                let remote = SocketAddr::new(remote_ip, seg.src_port);
                let reply =
                    listener.input(now, local, remote, seg, payload, &mut self.tcp_challenges);
                let flow = listener.flow();
                if let ListenerReply::Send(repr) = reply {
                    let mut repr = Outgoing::header_only(repr);
                    self.tcp_emit(now, flow, ips, &mut repr, None);
                }
            }
            Demux::None => {
                self.tcp_drop("tcp_no_socket");
                if let Some(rst) = reset_for_closed(seg) {
                    self.counters.tcp_resets_sent += 1;
                    let mut rst = Outgoing::header_only(rst);
                    self.tcp_emit(now, flow, ips, &mut rst, None);
                }
            }
        }
    }

    /// Records the stream-queue probes for what changed in a connection's
    /// queues since it was last looked at: bytes the peer acknowledged
    /// left the send queue, bytes that arrived in order joined the receive
    /// queue. Frees a released connection that reached CLOSED.
    pub(super) fn tcp_observe(&mut self, index: usize) {
        let Some(slot) = self.tcp.get_mut(index) else {
            return;
        };
        let TcpSocket::Connection(conn) = &slot.socket else {
            return;
        };
        let flow = conn.flow();
        let marks = &mut slot.marks;
        let queued = conn.send_queued();
        let mut dequeued = probe::Deferred::none();
        if queued < marks.send_queued {
            let acked = marks.send_queued - queued;
            marks.acked += acked as u64;
            let offset = marks.acked;
            dequeued = probe::defer(SEND_QUEUE_DEQUEUE, flow, || (probe_len(acked), offset));
        }
        marks.send_queued = queued;
        let readable = conn.readable();
        let mut enqueued = probe::Deferred::none();
        if readable > marks.readable {
            let arrived = readable - marks.readable;
            marks.delivered += arrived as u64;
            let offset = marks.delivered;
            enqueued = probe::defer(RECV_QUEUE_ENQUEUE, flow, || (probe_len(arrived), offset));
        }
        marks.readable = readable;
        if conn.state() == State::Closed {
            let released = slot.released;
            self.tcp.unregister(index);
            if released {
                self.tcp.remove(index);
            }
        }
        // Recorded last, after any teardown: TCP input ends at these
        // records (`SpanGuard::end_after`).
        dequeued.record();
        enqueued.record();
    }

    /// Sends what every TCP socket has to send.
    pub(super) fn tcp_output(&mut self, now: Instant) {
        self.tcp_output_pending = false;
        // One segment, reused: each is built in it and sent from it.
        let mut out = Outgoing::empty();
        for index in 0..self.tcp.slot_count() {
            self.tcp_clamp_to_path(now, index);
            for sent in 0..=OUTPUT_BUDGET {
                if sent == OUTPUT_BUDGET {
                    self.tcp_output_pending = true;
                    break;
                }
                let Some(slot) = self.tcp.get_mut(index) else {
                    break;
                };
                let (flow, local, remote) = match &mut slot.socket {
                    TcpSocket::Connection(conn) => {
                        if !conn.poll_output_into(now, &mut out) {
                            break;
                        }
                        (conn.flow(), conn.local().ip(), conn.remote().ip())
                    }
                    TcpSocket::Listener(listener) => {
                        let Some((local, remote, segment)) = listener.poll_output(now) else {
                            break;
                        };
                        out = segment;
                        (listener.flow(), local.ip(), remote.ip())
                    }
                };
                self.tcp_emit(now, flow, (local, remote), &mut out, Some(index));
            }
            self.tcp_observe(index);
        }
    }

    /// Runs the timers that are due.
    pub(super) fn tcp_timers(&mut self, now: Instant) {
        for index in 0..self.tcp.slot_count() {
            let Some(slot) = self.tcp.get_mut(index) else {
                continue;
            };
            match &mut slot.socket {
                TcpSocket::Connection(conn) => {
                    if conn.next_deadline().is_some_and(|t| t <= now) {
                        let _span = probe::span(TCP_TIMER_ENTER, TCP_TIMER_EXIT, 0, conn.flow(), 0);
                        conn.poll_timers(now);
                    }
                }
                TcpSocket::Listener(listener) => {
                    if listener.next_deadline().is_some_and(|t| t <= now) {
                        let _span =
                            probe::span(TCP_TIMER_ENTER, TCP_TIMER_EXIT, 0, listener.flow(), 1);
                        listener.poll_timers(now);
                    }
                }
            }
            self.tcp_observe(index);
        }
    }

    /// The earliest TCP timer.
    pub(super) fn tcp_next_deadline(&self) -> Option<Instant> {
        self.tcp
            .indices()
            .filter_map(|i| match &self.tcp.get(i)?.socket {
                TcpSocket::Connection(c) => c.next_deadline(),
                TcpSocket::Listener(l) => l.next_deadline(),
            })
            .min()
    }

    /// Builds and sends `out` from local address `src` to `dst`, leaving
    /// it spent (its payload taken): the header goes into the headroom of
    /// a packet whose payload is the send queue's shared segments, and the
    /// checksum is summed across them (no copy of the payload here). A
    /// super-segment (`gso_size` > 0) leaves its checksum partial. A
    /// connection's segments (`path_slot`: its socket slot) go by its
    /// cached path while it is current (`path`), and learn it anew when
    /// it is not.
    pub(super) fn tcp_emit(
        &mut self,
        now: Instant,
        flow: Flow,
        (src, dst): (IpAddr, IpAddr),
        out: &mut Outgoing,
        path_slot: Option<usize>,
    ) {
        // The segment is the caller's scratch: its payload is taken and
        // its repr read in place, not copied.
        let payload = std::mem::take(&mut out.payload);
        let gso_size = out.gso_size;
        let repr = &out.repr;
        let payload_len = repr.payload_len;
        let span = probe::span(
            TCP_OUTPUT_ENTER,
            TCP_OUTPUT_EXIT,
            payload_len as u32,
            flow,
            0,
        );
        let Ok(mut packet) = Packet::new(&self.pool, flow) else {
            self.tcp_drop("tcp_no_buffer");
            return;
        };
        packet.append_segment_list(payload);
        if packet.len() != payload_len {
            self.tcp_drop("tcp_payload_mismatch");
            return;
        }
        // The header is emitted alone into the scratch: a segment with
        // timestamps alone field by field, any other through the repr's
        // general emit.
        let mut scratch = [0u8; wire::tcp::MAX_HEADER_LEN];
        let Ok(header_len) = repr.emit_header(&mut scratch) else {
            self.tcp_drop("tcp_emit_failed");
            return;
        };
        let total = header_len + payload_len;
        let Some(header) = scratch.get_mut(..header_len) else {
            self.tcp_drop("tcp_emit_failed");
            return;
        };
        if gso_size > 0 {
            // A super-segment's checksum is left partial, the
            // pseudo-header sum only (Linux's CHECKSUM_PARTIAL): the device
            // stage completes each wire segment's (`iface::offload`).
            let partial = pseudo_header(src, dst, IpProtocol::Tcp, total);
            header[16..18].copy_from_slice(&partial.to_be_bytes());
            packet.set_offload(crate::buffer::PacketOffload {
                gso_size,
                csum_verified: false,
            });
        } else {
            // The header is a whole number of 32-bit words, so the
            // payload's sum joins it without a byte swap.
            let _span = probe::span(CHECKSUM_ENTER, CHECKSUM_EXIT, total as u32, flow, 0);
            let sum = checksum::combine(&[
                pseudo_header(src, dst, IpProtocol::Tcp, total),
                checksum::sum(header),
                sum_range(&packet, 0, payload_len),
            ]);
            header[16..18].copy_from_slice(&checksum::finish(sum).to_be_bytes());
        }
        let Ok(room) = packet.prepend(header_len) else {
            self.tcp_drop("tcp_no_headroom");
            return;
        };
        room.copy_from_slice(header);
        self.counters.tcp_sent += 1;
        // Whether the slot's path is current (then kept, even where it
        // gives no route: see `path`), read in place.
        let mut cached = false;
        let output_exit = match (src, dst) {
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let route = path_slot
                    .and_then(|slot| self.current_path_at(now, slot, IpAddr::V6(dst)))
                    .and_then(|path| {
                        cached = true;
                        path.ipv6_route()
                    });
                let route = match route {
                    Some(route) => Some(route),
                    None => self.ipv6_route(now, dst, None, flow),
                };
                let Some(route) = route else {
                    self.tcp_drop("tcp_no_route");
                    return;
                };
                let hop_limit = self.interfaces[route.interface.0].v6.hop_limit;
                self.ipv6_output(
                    now,
                    route,
                    Ipv6Send {
                        src,
                        dst,
                        next_header: IpProtocol::Tcp,
                        hop_limit,
                        router_alert: false,
                    },
                    packet,
                );
                IPV6_OUTPUT_EXIT
            }
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let route = path_slot
                    .and_then(|slot| self.current_path_at(now, slot, IpAddr::V4(dst)))
                    .and_then(|path| {
                        cached = true;
                        self.cached_ipv4_route(path)
                    });
                let route = match route {
                    Some(route) => Some(route),
                    None => self.ipv4_route(now, dst, flow),
                };
                let Some(route) = route else {
                    self.tcp_drop("tcp_no_route");
                    return;
                };
                self.ipv4_output(
                    now,
                    route,
                    Ipv4Send {
                        src,
                        dst,
                        protocol: IpProtocol::Tcp,
                        ttl: super::DEFAULT_HOP_LIMIT,
                        // RFC 1191 §3: TCP discovers the path MTU.
                        dont_frag: true,
                    },
                    packet,
                );
                IPV4_OUTPUT_EXIT
            }
            _ => return self.tcp_drop("tcp_family_mismatch"),
        };
        // A path that needs the full output path (no link-layer address)
        // is kept as it is: it says so until a table changes.
        if let (Some(slot), false) = (path_slot, cached) {
            let learnt = self.learn_path(now, dst);
            self.tcp_paths.set(slot, learnt);
            return;
        }
        // The IP output was the segment's last work.
        span.end_after(&[output_exit]);
    }

    /// Lowers a connection's send MSS when the path MTU (learned from
    /// Packet Too Big / Fragmentation Needed) is below what it uses; done
    /// before its segments are built, so none needs fragmenting. Checked
    /// once the handshake is done and again whenever a path MTU changed.
    fn tcp_clamp_to_path(&mut self, now: Instant, index: usize) {
        let changes = self.path_mtu_changes;
        let Some(slot) = self.tcp.get_mut(index) else {
            return;
        };
        let TcpSocket::Connection(conn) = &slot.socket else {
            return;
        };
        if !conn.state().is_synchronized() || slot.path_mtu_seen == Some(changes) {
            return;
        }
        slot.path_mtu_seen = Some(changes);
        let offload = self.tcp_path_offload(now, index);
        if let Some(conn) = self.tcp_connection_at(index) {
            conn.set_segment_offload(offload);
        }
        let Some(mss) = self.tcp_path_mss(now, index) else {
            return;
        };
        if let Some(conn) = self.tcp_connection_at(index) {
            conn.clamp_to_path_mss(mss);
        }
    }

    /// The MSS the path MTU to connection `index`'s peer allows: the path
    /// MTU less the IP and TCP headers, and less the trace option when the
    /// flow is traced (or every full-sized segment would be fragmented in
    /// two).
    fn tcp_path_mss(&mut self, now: Instant, index: usize) -> Option<usize> {
        let Some(TcpSocket::Connection(conn)) = self.tcp.get(index).map(|s| &s.socket) else {
            return None;
        };
        let (flow, remote) = (conn.flow(), conn.remote().ip());
        let mtu = match remote {
            IpAddr::V6(dst) => self.ipv6_route(now, dst, None, flow).map(|r| r.mtu),
            IpAddr::V4(dst) => self.ipv4_route(now, dst, flow).map(|r| r.mtu),
        }?;
        let trace_option = match (flow.traced, remote) {
            (false, _) => 0,
            (true, IpAddr::V6(_)) => wire::trace_option::IPV6_HEADER_LEN,
            (true, IpAddr::V4(_)) => wire::trace_option::IPV4_OPTIONS_LEN,
        };
        let mss = usize::from(options::mss_for_mtu(mtu, remote.is_ipv6()));
        Some(mss.saturating_sub(trace_option))
    }

    /// Whether connection `index`'s route leaves by an interface with
    /// segmentation offload on (an Ethernet one: the device stage cuts
    /// Ethernet frames).
    fn tcp_path_offload(&mut self, now: Instant, index: usize) -> bool {
        let Some(TcpSocket::Connection(conn)) = self.tcp.get(index).map(|s| &s.socket) else {
            return false;
        };
        let (flow, remote) = (conn.flow(), conn.remote().ip());
        let interface = match remote {
            IpAddr::V6(dst) => self.ipv6_route(now, dst, None, flow).map(|r| r.interface),
            IpAddr::V4(dst) => self.ipv4_route(now, dst, flow).map(|r| r.interface),
        };
        interface
            .and_then(|id| self.interfaces.get(id.0))
            .is_some_and(|i| i.offload.tso && i.medium == crate::phy::Medium::Ethernet)
    }

    fn tcp_connection_at(&mut self, index: usize) -> Option<&mut Connection> {
        match &mut self.tcp.get_mut(index)?.socket {
            TcpSocket::Connection(conn) => Some(conn),
            TcpSocket::Listener(_) => None,
        }
    }

    /// Whom an ICMP error quoting `quoted` (a packet we sent) concerns.
    /// RFC 4443 §2.4(d) and RFC 1122 §3.2.2 hand an error to the upper
    /// layer of the packet it quotes; for TCP, RFC 5927 §7.2 asks that
    /// the quote name a connection that exists and a sequence number it
    /// has in flight (SND.UNA ≤ SEG.SEQ < SND.NXT), else the error is
    /// most likely forged (or very late) and is ignored. A TCP quote too
    /// short to show its ports and sequence number, or of a fragment
    /// other than the first, cannot be checked and is ignored too.
    pub(super) fn icmp_error_target(&self, quoted: &Quoted<'_>) -> ErrorTarget {
        if quoted.protocol != IpProtocol::Tcp {
            return ErrorTarget::Destination;
        }
        let Some(tcp) = quoted.tcp() else {
            return ErrorTarget::Unmatched;
        };
        let Demux::Connection(index) = self.tcp.demux(tcp.local, tcp.remote) else {
            return ErrorTarget::Unmatched;
        };
        let seq = Seq(tcp.seq);
        match self.tcp.get(index).map(|s| &s.socket) {
            Some(TcpSocket::Connection(conn)) if conn.has_in_flight(seq) => {
                ErrorTarget::Connection { index, seq }
            }
            _ => ErrorTarget::Unmatched,
        }
    }

    /// A Packet Too Big / Fragmentation Needed about connection `index`'s
    /// segment at `seq`, once the destination's path MTU took it: the
    /// connection lowers its MSS now (not at its next output) and resends
    /// what the path dropped (RFC 1191 §6.5), in this poll.
    pub(super) fn tcp_packet_too_big(&mut self, now: Instant, index: usize, seq: Seq) {
        let Some(mss) = self.tcp_path_mss(now, index) else {
            return;
        };
        if let Some(conn) = self.tcp_connection_at(index) {
            conn.on_packet_too_big(mss, seq);
        }
        self.tcp_output_pending = true;
    }
}

/// Whom an ICMP error about a packet we sent concerns: see
/// [`Host::icmp_error_target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ErrorTarget {
    /// Not TCP: the destination alone. A datagram protocol has no state
    /// to check the error against; the path MTU is the destination's, for
    /// every protocol (RFC 8201 §5.2).
    Destination,
    /// A TCP connection (its slot), and the sequence number quoted, which
    /// it has in flight.
    Connection { index: usize, seq: Seq },
    /// TCP matching no connection, or not in flight: nothing is changed
    /// (RFC 5927 §7.2), not even the destination's path MTU.
    Unmatched,
}

/// RFC 9293 §3.10.7.1, CLOSED: the reset answering a segment for no
/// connection, or none for a reset.
pub(super) fn reset_for_closed(seg: &TcpRepr) -> Option<TcpRepr> {
    if seg.flags.contains(TcpFlags::RST) {
        return None;
    }
    let (src, dst) = (seg.dst_port, seg.src_port);
    Some(match seg.ack_number {
        // <SEQ=SEG.ACK><CTL=RST>
        Some(ack) => crate::socket::tcp::bare_header(src, dst, Seq(ack), None, TcpFlags::RST),
        // <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>
        None => crate::socket::tcp::bare_header(
            src,
            dst,
            Seq(0),
            Some(Seq(seg.seq_number) + seg.segment_len()),
            TcpFlags::RST,
        ),
    })
}

/// Parts of a packet [`Host::tcp_input`] hands a connection the payload
/// from at most, before it gathers the payload instead: a merged
/// super-segment of up to 64 KiB in segments of 1 KiB or more, or a
/// reassembled packet of as many fragments.
const MAX_PAYLOAD_PARTS: usize = 64;

/// Calls `f` with the bytes `range` of `packet` as the pieces of its parts
/// they lie in (`buffer::pieces`), unless the packet has more than
/// [`MAX_PAYLOAD_PARTS`] parts (then `None`).
fn with_pieces<R>(
    packet: &Packet,
    range: std::ops::Range<usize>,
    f: impl FnOnce(&[&[u8]]) -> R,
) -> Option<R> {
    let (parts, count) = packet.parts_array::<MAX_PAYLOAD_PARTS>()?;
    let mut pieces: [&[u8]; MAX_PAYLOAD_PARTS] = [&[]; MAX_PAYLOAD_PARTS];
    let mut taken = 0;
    // At most one piece per part: `taken` stays within `count`.
    for (slot, piece) in pieces
        .iter_mut()
        .zip(crate::buffer::pieces(&parts[..count], range))
    {
        *slot = piece;
        taken += 1;
    }
    Some(f(&pieces[..taken]))
}

/// The first `len` bytes of the segment at `pos` of `packet`: in place in
/// `whole` (the segment, when one part holds it), else pulled up. Inline:
/// for a segment received whole it is one bounds check.
#[inline]
fn leading<'a>(
    whole: Option<&'a [u8]>,
    packet: &'a Packet,
    pos: usize,
    len: usize,
    scratch: &'a mut [u8],
) -> Option<&'a [u8]> {
    match whole {
        Some(segment) => segment.get(..len),
        None => read_at(packet, pos, len, scratch),
    }
}

/// `len` bytes at `at` when they lie in one part of the packet.
#[inline]
fn contiguous(packet: &Packet, at: usize, len: usize) -> Option<&[u8]> {
    let mut skip = at;
    for part in packet.parts() {
        if skip < part.len() {
            return part.get(skip..skip + len);
        }
        skip -= part.len();
    }
    (len == 0).then_some(&[][..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{Pool, PoolConfig, Segment};

    /// A segment at `pos` of a packet held in one buffer is read in place
    /// (`tcp_input`'s fast path); split across two buffers anywhere, it is
    /// pulled up and summed part by part: both must give the same header
    /// bytes, checksum and payload.
    #[test]
    fn a_segment_in_one_part_reads_as_one_in_two() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let pos = 40;
        // An odd length, so some splits leave a part of odd length.
        let bytes: Vec<u8> = (0..pos + 32 + 101).map(|i| (i * 7 + 3) as u8).collect();
        let total = bytes.len() - pos;
        let one = Packet::from_payload(&pool, Flow::NONE, &bytes).unwrap();
        let whole = contiguous(&one, pos, total);
        let segment = &bytes[pos..];
        assert_eq!(whole, Some(segment));
        for split in 1..bytes.len() {
            let mut two = Packet::from_payload(&pool, Flow::NONE, &bytes[..split]).unwrap();
            let (rest, _) = Segment::copy_from(&pool, Flow::NONE, &bytes[split..]).unwrap();
            two.append_segment(rest);
            let parted = contiguous(&two, pos, total);
            assert_eq!(parted.is_some(), split <= pos, "split {split}");
            assert_eq!(
                sum_range(&two, pos, total),
                checksum::sum(segment),
                "split {split}"
            );
            for len in [wire::tcp::HEADER_LEN, 32, wire::tcp::MAX_HEADER_LEN] {
                let (mut a, mut b) = ([0u8; 60], [0u8; 60]);
                assert_eq!(
                    leading(parted, &two, pos, len, &mut a),
                    leading(whole, &one, pos, len, &mut b),
                    "split {split}, {len} bytes"
                );
            }
        }
    }
}

//! IPv6 input (RFC 8200): header checks, the extension-header chain in
//! order with the option-type action bits, reassembly, and dispatch to
//! forwarding, ICMPv6, UDP or raw sockets.

use std::net::Ipv6Addr;

use probe::Flow;
use wire::icmpv6::{ParamProblemReason, TimeExceededReason};
use wire::ip::IpProtocol;
use wire::ipv6::Ipv6Packet;
use wire::ipv6_option::{Ipv6Option, UnrecognizedAction};

use super::{FirstFragment, Host, Received};
use crate::buffer::{Cursor, Packet};
use crate::iface::icmp_error::Icmpv6ErrorKind;
use crate::iface::reassembly::{DropReason, Expired, Fragment, Outcome};
use crate::iface::route::InterfaceId;
use crate::probes::{
    IPV6_INPUT_ENTER, IPV6_INPUT_EXIT, REASSEMBLE_ENTER, REASSEMBLE_EXIT, TRACE_OPTION_SEEN,
};
use crate::time::Instant;

/// What the input path knows of a received IPv6 packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ipv6Meta {
    pub interface: InterfaceId,
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub hop_limit: u8,
    pub link_multicast: bool,
}

/// The outcome of one options header.
enum OptionsVerdict {
    Continue,
    Discard,
    ParamProblem { pointer: u32, option_type: u8 },
}

/// Bytes `pos..pos + len` of `packet`, contiguous (pulled up into
/// `scratch` only if they straddle segments).
#[inline]
pub(crate) fn read_at<'a>(
    packet: &'a Packet,
    pos: usize,
    len: usize,
    scratch: &'a mut [u8],
) -> Option<&'a [u8]> {
    let mut cursor = Cursor::new(packet);
    cursor.advance(pos).ok()?;
    cursor.pull_up(len, scratch).ok()
}

/// The first `max` bytes of a packet, for an ICMP error's invoking packet.
pub(crate) fn leading_bytes(packet: &Packet, max: usize) -> Vec<u8> {
    let mut out = vec![0; packet.len().min(max)];
    let n = packet.copy_out(0, &mut out);
    out.truncate(n);
    out
}

impl Host {
    /// `dequeued`: the IP input queue's dequeue, whose counter read
    /// the input span's start shares.
    pub(super) fn ipv6_input(
        &mut self,
        now: Instant,
        received: Received,
        dequeued: &mut probe::Stamp,
    ) {
        let Received {
            interface,
            packet,
            link_multicast,
        } = received;
        let _span = dequeued.span_with(IPV6_INPUT_ENTER, IPV6_INPUT_EXIT, packet.flow(), || {
            (packet.len() as u32, interface.0 as u64)
        });
        // Bound after the span, so freed before its end on every return.
        let mut packet = packet;
        self.counters.ipv6_received += 1;
        let (meta, next, total) = {
            let Some(head) = packet.parts().next() else {
                self.count_drop("ipv6_truncated");
                return;
            };
            // The payload may go on past the head buffer (a segment GRO
            // merged, `iface::offload`): its length is checked against
            // the whole packet.
            let Some(fixed) = head.get(..wire::ipv6::HEADER_LEN) else {
                self.count_drop("ipv6_truncated");
                return;
            };
            let ip = Ipv6Packet::new_unchecked(fixed);
            // The Payload Length field read once, for the check and the
            // truncation.
            let total = wire::ipv6::HEADER_LEN + usize::from(ip.payload_len());
            if ip.version() != wire::ipv6::VERSION || total > packet.len() {
                self.count_drop("ipv6_truncated");
                return;
            }
            (
                Ipv6Meta {
                    interface,
                    src: ip.src_addr(),
                    dst: ip.dst_addr(),
                    hop_limit: ip.hop_limit(),
                    link_multicast,
                },
                ip.next_header(),
                total,
            )
        };
        // Link-layer padding after the payload is not part of the packet.
        packet.truncate(total);
        // RFC 4291 §2.7: multicast addresses must not be used as sources.
        if meta.src.is_multicast() {
            self.count_drop("ipv6_multicast_source");
            return;
        }
        let mut pos = wire::ipv6::HEADER_LEN;
        let mut next = next;
        // RFC 8200 §4.3: the Hop-by-Hop header is examined by every node on
        // the path, so it is processed before the forwarding decision.
        if next == IpProtocol::HopByHop {
            let Some((following, len)) = self.options_header(now, &mut packet, &meta, pos) else {
                return;
            };
            next = following;
            pos += len;
        }
        if !self.is_local_ipv6(interface, meta.dst) {
            if self.router && !meta.dst.is_multicast() {
                self.ipv6_forward(now, meta, packet);
            } else {
                // Another's address, or a group this interface has not
                // joined (whose MAC it may share: RFC 2464 §7 keeps 32
                // bits, and a group being left is still listened to).
                self.count_drop("ipv6_not_for_us");
            }
            return;
        }
        // TCP next (the data path): delivered here, as the header walk's
        // first step would, without the call into it and the move of the
        // packet (issue 22).
        if next == IpProtocol::Tcp {
            self.counters.ipv6_delivered += 1;
            self.tcp_input(now, &super::transport::IpMeta::V6(meta), &packet, pos);
            // Inside the input span, as the walk frees it.
            drop(packet);
            return;
        }
        // The offset of the Next Header field that named the header at
        // `pos`, for Parameter Problem code 1 (RFC 8200 §4).
        let previous_field = if pos == wire::ipv6::HEADER_LEN {
            6
        } else {
            wire::ipv6::HEADER_LEN
        };
        self.ipv6_local(now, meta, packet, next, pos, previous_field);
    }

    /// Walks the headers from `pos` (named by the field at `previous_field`)
    /// to the upper layer and delivers the packet.
    pub(super) fn ipv6_local(
        &mut self,
        now: Instant,
        meta: Ipv6Meta,
        mut packet: Packet,
        mut next: IpProtocol,
        mut pos: usize,
        mut previous_field: usize,
    ) {
        let mut scratch = [0u8; 8];
        for _ in 0..=wire::ipv6_ext_header::MAX_CHAIN_HEADERS {
            match next {
                IpProtocol::HopByHop => {
                    // RFC 8200 §4.1: only immediately after the IPv6 header.
                    self.count_drop("ipv6_hop_by_hop_not_first");
                    self.send_icmpv6_error(
                        now,
                        &meta,
                        &packet,
                        Icmpv6ErrorKind::ParamProblem {
                            reason: ParamProblemReason::UnrecognizedNextHeader,
                            pointer: previous_field as u32,
                            option_type: None,
                        },
                    );
                    return;
                }
                IpProtocol::Ipv6Opts => {
                    let Some((following, len)) = self.options_header(now, &mut packet, &meta, pos)
                    else {
                        return;
                    };
                    previous_field = pos;
                    next = following;
                    pos += len;
                }
                IpProtocol::Ipv6Route => {
                    let Some(header) = read_at(&packet, pos, 4, &mut scratch) else {
                        self.count_drop("ipv6_truncated");
                        return;
                    };
                    let (following, len_units, routing_type, segments_left) =
                        (header[0], header[1], header[2], header[3]);
                    let header_len = wire::ipv6_ext_header::header_len_of(len_units);
                    if pos + header_len > packet.len() {
                        self.count_drop("ipv6_truncated");
                        return;
                    }
                    if segments_left != 0 {
                        // RFC 8200 §4.4: an unrecognised Routing Type with
                        // segments left is answered with Parameter Problem
                        // code 0 at the type; RFC 5095 §3 makes type 0 one.
                        self.count_drop(if routing_type == 0 {
                            "ipv6_rh0_refused"
                        } else {
                            "ipv6_routing_type_unknown"
                        });
                        self.send_icmpv6_error(
                            now,
                            &meta,
                            &packet,
                            Icmpv6ErrorKind::ParamProblem {
                                reason: ParamProblemReason::ErroneousHeaderField,
                                pointer: (pos + 2) as u32,
                                option_type: None,
                            },
                        );
                        return;
                    }
                    // Segments left 0: ignore the header and go on (§4.4).
                    previous_field = pos;
                    next = IpProtocol::from(following);
                    pos += header_len;
                }
                IpProtocol::Ipv6Frag => {
                    self.ipv6_fragment(now, meta, packet, pos, previous_field);
                    return;
                }
                IpProtocol::Icmpv6 => {
                    self.counters.ipv6_delivered += 1;
                    self.icmpv6_input(now, meta, packet, pos);
                    return;
                }
                IpProtocol::Udp => {
                    self.counters.ipv6_delivered += 1;
                    self.udp_input(now, super::transport::IpMeta::V6(meta), packet, pos);
                    return;
                }
                IpProtocol::Tcp => {
                    self.counters.ipv6_delivered += 1;
                    self.tcp_input(now, &super::transport::IpMeta::V6(meta), &packet, pos);
                    return;
                }
                IpProtocol::Unknown(wire::xtp::IP_PROTOCOL) => {
                    self.counters.ipv6_delivered += 1;
                    self.xtp_input(now, super::transport::IpMeta::V6(meta), packet, pos);
                    return;
                }
                IpProtocol::Ipv6NoNxt => {
                    self.count_drop("ipv6_no_next_header");
                    return;
                }
                other => {
                    if self.raw_deliver(
                        crate::socket::RawFamily::Ipv6,
                        other,
                        &super::transport::IpMeta::V6(meta),
                        &packet,
                        pos,
                    ) {
                        return;
                    }
                    self.count_drop("ipv6_unknown_next_header");
                    self.send_icmpv6_error(
                        now,
                        &meta,
                        &packet,
                        Icmpv6ErrorKind::ParamProblem {
                            reason: ParamProblemReason::UnrecognizedNextHeader,
                            pointer: previous_field as u32,
                            option_type: None,
                        },
                    );
                    return;
                }
            }
        }
        self.count_drop("ipv6_header_chain_too_long");
    }

    /// Processes the Hop-by-Hop or Destination Options header at `pos`
    /// (RFC 8200 §4.2): returns the next header, the header's length and
    /// what to do. A trace option marks the packet's flow as traced.
    fn ipv6_options(
        &mut self,
        packet: &mut Packet,
        meta: &Ipv6Meta,
        pos: usize,
    ) -> Option<(IpProtocol, usize, OptionsVerdict)> {
        let mut scratch = [0u8; 2048];
        let Some(fixed) = read_at(packet, pos, 2, &mut scratch) else {
            self.count_drop("ipv6_truncated");
            return None;
        };
        let (next, len) = (
            IpProtocol::from(fixed[0]),
            wire::ipv6_ext_header::header_len_of(fixed[1]),
        );
        let Some(header) = read_at(packet, pos, len, &mut scratch) else {
            self.count_drop("ipv6_truncated");
            return None;
        };
        let area = &header[2..];
        let mut options = wire::ipv6_option::iter_options(area);
        let mut traced = None;
        loop {
            let offset = options.offset();
            let Some(option) = options.next() else { break };
            let option = match option {
                Ok(option) => option,
                Err(_) => {
                    self.count_drop("ipv6_bad_option");
                    return Some((next, len, OptionsVerdict::Discard));
                }
            };
            match option {
                Ipv6Option::Pad1 | Ipv6Option::PadN(_) | Ipv6Option::RouterAlert(_) => {}
                Ipv6Option::Trace(trace) => traced = Some(trace.flow),
                Ipv6Option::Unknown { option_type, .. } => {
                    match UnrecognizedAction::of(option_type) {
                        UnrecognizedAction::Skip => {}
                        UnrecognizedAction::Discard => {
                            self.count_drop("ipv6_option_discard");
                            return Some((next, len, OptionsVerdict::Discard));
                        }
                        UnrecognizedAction::DiscardSendParamProblem => {
                            self.count_drop("ipv6_option_discard");
                            return Some((
                                next,
                                len,
                                OptionsVerdict::ParamProblem {
                                    pointer: (pos + 2 + offset) as u32,
                                    option_type,
                                },
                            ));
                        }
                        UnrecognizedAction::DiscardSendParamProblemUnlessMulticast => {
                            self.count_drop("ipv6_option_discard");
                            if meta.dst.is_multicast() {
                                return Some((next, len, OptionsVerdict::Discard));
                            }
                            return Some((
                                next,
                                len,
                                OptionsVerdict::ParamProblem {
                                    pointer: (pos + 2 + offset) as u32,
                                    option_type,
                                },
                            ));
                        }
                    }
                }
            }
        }
        if let Some(flow) = traced {
            // The sender traces this flow: trace it here too (DESIGN.md,
            // "Probe events").
            packet.set_flow(Flow::traced(flow));
            probe::record_with(TRACE_OPTION_SEEN, packet.flow(), || {
                (packet.len() as u32, u64::from(flow))
            });
        }
        Some((next, len, OptionsVerdict::Continue))
    }

    /// Processes an options header and carries out its verdict: the next
    /// header and the header's length to go on, or `None` when the packet
    /// was discarded (with a Parameter Problem if the action bits say so).
    fn options_header(
        &mut self,
        now: Instant,
        packet: &mut Packet,
        meta: &Ipv6Meta,
        pos: usize,
    ) -> Option<(IpProtocol, usize)> {
        match self.ipv6_options(packet, meta, pos)? {
            (next, len, OptionsVerdict::Continue) => Some((next, len)),
            (_, _, OptionsVerdict::Discard) => None,
            (
                _,
                _,
                OptionsVerdict::ParamProblem {
                    pointer,
                    option_type,
                },
            ) => {
                self.option_param_problem(now, meta, packet, pointer, option_type);
                None
            }
        }
    }

    fn option_param_problem(
        &mut self,
        now: Instant,
        meta: &Ipv6Meta,
        packet: &Packet,
        pointer: u32,
        option_type: u8,
    ) {
        self.send_icmpv6_error(
            now,
            meta,
            packet,
            Icmpv6ErrorKind::ParamProblem {
                reason: ParamProblemReason::UnrecognizedOption,
                pointer,
                option_type: Some(option_type),
            },
        );
    }

    /// Whether `dst` is one of ours: an address assigned to any interface
    /// (the weak host model, RFC 1122 §3.3.4.2) or a group joined on the
    /// arrival interface. Tentative addresses are not (RFC 4862 §5.4).
    pub(super) fn is_local_ipv6(&self, interface: InterfaceId, dst: Ipv6Addr) -> bool {
        if dst.is_multicast() {
            return self.interfaces[interface.0].v6.mld.is_member(dst);
        }
        self.interfaces
            .iter()
            .any(|i| i.v6.addresses.is_assigned(dst))
    }

    /// A Fragment header at `pos`, named by the Next Header field at
    /// `previous_field` (RFC 8200 §4.5).
    fn ipv6_fragment(
        &mut self,
        now: Instant,
        meta: Ipv6Meta,
        packet: Packet,
        pos: usize,
        previous_field: usize,
    ) {
        // The span covers reassembly alone: it ends before the datagram
        // goes up the stack.
        let span = probe::span_with(REASSEMBLE_ENTER, REASSEMBLE_EXIT, packet.flow(), || {
            (packet.len() as u32, 0)
        });
        let mut scratch = [0u8; 8];
        let Some(header) = read_at(&packet, pos, 8, &mut scratch) else {
            self.count_drop("ipv6_truncated");
            return;
        };
        let Ok(fragment) = wire::ipv6_fragment::Ipv6FragmentRepr::parse(
            &wire::ipv6_fragment::Ipv6FragmentHeader::new_unchecked(header),
        ) else {
            self.count_drop("ipv6_truncated");
            return;
        };
        let payload_start = pos + 8;
        let payload_len = packet.len() - payload_start;
        // RFC 8200 §4.5: a fragment with M set whose length is not a
        // multiple of 8 gets Parameter Problem code 0 at Payload Length.
        if fragment.more_frags && !payload_len.is_multiple_of(8) {
            self.count_drop("ipv6_fragment_bad_length");
            self.send_icmpv6_error(
                now,
                &meta,
                &packet,
                Icmpv6ErrorKind::ParamProblem {
                    reason: ParamProblemReason::ErroneousHeaderField,
                    pointer: 4,
                    option_type: None,
                },
            );
            return;
        }
        // RFC 8200 §4.5: the reassembled Payload Length (unfragmentable
        // headers after the IPv6 header, offset and length) must fit.
        if (pos - wire::ipv6::HEADER_LEN) + fragment.frag_offset + payload_len > 65_535 {
            self.count_drop("ipv6_fragment_too_long");
            self.send_icmpv6_error(
                now,
                &meta,
                &packet,
                Icmpv6ErrorKind::ParamProblem {
                    reason: ParamProblemReason::ErroneousHeaderField,
                    pointer: (pos + 2) as u32,
                    option_type: None,
                },
            );
            return;
        }
        // RFC 8200 §4.5 (after RFC 7112): the first fragment carries the
        // whole header chain up to and including the upper-layer header's
        // start; otherwise Parameter Problem code 3.
        if fragment.frag_offset == 0
            && !first_fragment_has_chain(&packet, payload_start, fragment.next_header)
        {
            self.count_drop("ipv6_first_fragment_incomplete_chain");
            self.send_icmpv6_error(
                now,
                &meta,
                &packet,
                Icmpv6ErrorKind::ParamProblem {
                    reason: ParamProblemReason::Unknown(3),
                    pointer: 0,
                    option_type: None,
                },
            );
            return;
        }
        // An atomic fragment (RFC 6946) is processed at once, alone.
        if fragment.frag_offset == 0 && !fragment.more_frags {
            let next = fragment.next_header;
            drop(span);
            self.ipv6_local(now, meta, packet, next, payload_start, pos);
            return;
        }
        let Ok(payload) = packet.segments(payload_start..packet.len()) else {
            self.count_drop("ipv6_truncated");
            return;
        };
        let first = (fragment.frag_offset == 0).then(|| {
            let mut header = vec![0; pos];
            packet.copy_out(0, &mut header);
            FirstFragment {
                interface: meta.interface,
                header,
                next: fragment.next_header,
                flow: packet.flow(),
                invoking: leading_bytes(&packet, wire::ipv6::MIN_MTU - 48),
                next_field: previous_field,
            }
        });
        // Only the first fragment's header is kept; the others pass a
        // placeholder that reassembly drops at once.
        let header = first.unwrap_or(FirstFragment {
            interface: meta.interface,
            header: Vec::new(),
            next: IpProtocol::Ipv6NoNxt,
            flow: packet.flow(),
            invoking: Vec::new(),
            next_field: 0,
        });
        let key = (meta.src, meta.dst, fragment.ident);
        let evicted = self.reassembly6.stats().evicted;
        let outcome = self.reassembly6.insert(
            now,
            key,
            Fragment {
                offset: fragment.frag_offset,
                more: fragment.more_frags,
                payload,
                header,
            },
        );
        drop(packet);
        drop(span);
        self.count_evictions(
            "ipv6_reassembly_evicted",
            evicted,
            self.reassembly6.stats().evicted,
        );
        match outcome {
            Outcome::Incomplete => {}
            Outcome::Dropped(reason) => self.count_drop(reassembly_drop_name(reason)),
            Outcome::Complete {
                mut header,
                payload,
                len,
            } => {
                // RFC 8200 §4.5: the reassembled packet's Payload Length
                // covers the unfragmentable part and the payload, and the
                // last unfragmentable header names what the Fragment
                // header named, so errors quote a consistent packet.
                let payload_len = header.header.len() - wire::ipv6::HEADER_LEN + len;
                let Ok(payload_len) = u16::try_from(payload_len) else {
                    self.count_drop("ipv6_reassembled_too_long");
                    return;
                };
                header.header[4..6].copy_from_slice(&payload_len.to_be_bytes());
                if let Some(field) = header.header.get_mut(header.next_field) {
                    *field = header.next.into();
                }
                let Ok(mut whole) = Packet::new(&self.pool, header.flow) else {
                    self.count_drop("ipv6_reassembly_no_buffer");
                    return;
                };
                if whole.append_copy(&header.header).is_err() {
                    self.count_drop("ipv6_reassembly_no_buffer");
                    return;
                }
                for segment in payload {
                    whole.append_segment(segment);
                }
                let pos = header.header.len();
                self.ipv6_local(now, meta, whole, header.next, pos, header.next_field);
            }
        }
    }

    /// A datagram whose timer ran out: Time Exceeded code 1 to its source
    /// if the first fragment had arrived (RFC 8200 §4.5).
    pub(super) fn reassembly6_expired(
        &mut self,
        now: Instant,
        expired: Expired<super::FragKey6, FirstFragment>,
    ) {
        self.count_drop("ipv6_reassembly_timeout");
        let Some(first) = expired.first else { return };
        let (src, dst, _) = expired.key;
        let meta = Ipv6Meta {
            interface: first.interface,
            src,
            dst,
            hop_limit: 0,
            link_multicast: false,
        };
        let Ok(packet) = Packet::from_payload(&self.pool, first.flow, &first.invoking) else {
            return;
        };
        self.send_icmpv6_error(
            now,
            &meta,
            &packet,
            Icmpv6ErrorKind::TimeExceeded(TimeExceededReason::FragReassemblyExceeded),
        );
    }
}

/// Whether the payload of a first fragment (from `start`) holds the whole
/// extension-header chain starting with `first` and the start of the upper
/// layer header: a chain cut by the fragment's end is an incomplete one.
fn first_fragment_has_chain(packet: &Packet, start: usize, first: IpProtocol) -> bool {
    let mut scratch = [0u8; 2048];
    let len = packet.len().saturating_sub(start).min(scratch.len());
    let Some(bytes) = read_at(packet, start, len, &mut scratch) else {
        return false;
    };
    match wire::ipv6_ext_header::walk_chain(bytes, first) {
        // Nothing follows, or the upper layer starts inside the fragment.
        Ok(end) => end.protocol == IpProtocol::Ipv6NoNxt || end.offset < bytes.len(),
        // A chain longer than what was looked at is not proven cut.
        Err(_) => len == scratch.len(),
    }
}

pub(super) fn reassembly_drop_name(reason: DropReason) -> &'static str {
    match reason {
        DropReason::Overlap => "reassembly_overlap",
        DropReason::Inconsistent => "reassembly_inconsistent",
        DropReason::TooLong => "reassembly_too_long",
        DropReason::BadLength => "reassembly_bad_length",
        DropReason::Empty => "reassembly_empty",
        DropReason::NoMemory => "reassembly_no_memory",
        DropReason::DuplicateIgnored => "reassembly_duplicate",
        DropReason::DatagramDiscarded => "reassembly_datagram_discarded",
    }
}

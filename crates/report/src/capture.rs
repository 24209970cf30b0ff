//! `trace.pcapng`: every interface's capture of a report in one file.
//!
//! [`merge`] reads the per-interface pcapng files the runs left behind
//! (the threaded runner writes one per interface, timestamps on its clock,
//! which starts near zero in every run), shifts each by its run's start, and
//! writes them as one section with one interface per input interface and
//! every packet in timestamp order. A packet that carries the stackscope
//! trace option (DESIGN.md "Probe events") of one of its run's flows gets a
//! comment naming the message the application was sending then:
//! `"<label> (flow N)"`, Wireshark's `frame.comment`.
//!
//! Memory stays bounded: inputs are streamed block by block
//! ([`wire::pcapng::PcapngReader`]), and only a small window of packets per
//! input is held at a time, which also puts right a file whose packets are
//! slightly out of order.

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};

use serde::Serialize;
use wire::ethernet::{EtherType, EthernetFrame};
use wire::ipv4::{Ipv4Options, Ipv4Packet};
use wire::ipv6::Ipv6Packet;
use wire::ipv6_ext_header::{Ipv6ExtHeader, MAX_CHAIN_HEADERS};
use wire::ipv6_fragment::Ipv6FragmentHeader;
use wire::ipv6_option::Ipv6Option;
use wire::pcapng::{
    Block, CapturedPacket, Direction, InterfaceId, PcapngReader, PcapngWriter, ReadError,
};
use wire::IpProtocol;

/// Packets held per input to put a slightly disordered file right: one
/// that arrives more than this many packets late is written late (and
/// counted in [`MergeStats::late`]).
pub const REORDER_WINDOW: usize = 64;

/// First fragments remembered per input, so that the later fragments of a
/// traced datagram (which do not carry the option) get its comment too.
const FRAGMENT_MEMORY: usize = 64;

/// Longest comment the pcapng writer takes.
const MAX_COMMENT_LEN: usize = u16::MAX as usize - 3;

/// One message of a run: when its application began sending it, on the
/// runner clock of the run's captures (`MessageOutcome::sent_at_ns`), and
/// what to call it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub sent_at_ns: u64,
    /// E.g. `"xie1999/tcp message 12: 1500 B, rep 2"`.
    pub label: String,
}

/// How to name the traced packets of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunMessages {
    /// The run's traced flow ids (what its packets' trace options carry).
    pub flows: Vec<u32>,
    /// Its messages, sorted by `sent_at_ns` (sorted here if they are not).
    pub messages: Vec<Message>,
}

/// One pcapng file to merge.
#[derive(Debug, Clone)]
pub struct CaptureInput<'a> {
    pub path: PathBuf,
    /// Name of the file's (first) interface in the merged file, e.g.
    /// `"xie1999/tcp host-a eth0"`; a further interface of the same file is
    /// named `"<prefix> <its if_name>"`.
    pub prefix: String,
    /// Added to every timestamp of the file: the run's start, so that runs
    /// whose clocks each start near zero come out one after the other.
    pub offset_ns: u64,
    /// The run's flows and messages; `None`: no packet is labelled.
    pub messages: Option<&'a RunMessages>,
}

/// What [`merge`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MergeStats {
    /// Packets written.
    pub packets: u64,
    /// Packets commented with a message's label.
    pub labelled: u64,
    /// Packets of a run's traced flows (labelled, or sent before the run's
    /// first message), later fragments included.
    pub traced: u64,
    /// Packets written after a packet with a later timestamp: disorder in an
    /// input beyond [`REORDER_WINDOW`] packets.
    pub late: u64,
    /// Per input, in the order given.
    pub inputs: Vec<InputStats>,
}

/// What one input contributed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InputStats {
    pub path: PathBuf,
    /// Interfaces it described (each one an interface of the merged file).
    pub interfaces: u32,
    pub packets: u64,
    pub traced: u64,
    pub labelled: u64,
    /// Later IPv6 fragments labelled after their traced first fragment.
    pub fragments_labelled: u64,
    /// Packets whose timestamp is earlier than the one before them.
    pub out_of_order: u64,
    /// Blocks of other types (statistics, name resolution...) left out.
    pub skipped_blocks: u64,
}

/// Why the merge failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: ReadError,
    },
    #[error("writing {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Writes `out`: every interface and packet of `inputs`, packets in order
/// of their timestamp plus their input's offset, traced packets commented
/// (see the module documentation). Interfaces are numbered in the order of
/// the inputs. Equal timestamps keep the order of the inputs.
pub fn merge(inputs: &[CaptureInput], out: &Path) -> Result<MergeStats, CaptureError> {
    let write_error = |source| CaptureError::Write {
        path: out.to_path_buf(),
        source,
    };
    let file = File::create(out).map_err(write_error)?;
    let mut writer =
        PcapngWriter::new(BufWriter::new(file), "stackscope report").map_err(write_error)?;
    let mut sources = Vec::with_capacity(inputs.len());
    for (index, input) in inputs.iter().enumerate() {
        let file = File::open(&input.path).map_err(|e| CaptureError::Read {
            path: input.path.clone(),
            source: ReadError::Io(e),
        })?;
        let mut source = Source::new(index, input, BufReader::new(file));
        // Reads the file's interface descriptions, so the merged file
        // describes its interfaces in the order of the inputs.
        source.fill(&mut writer, out)?;
        sources.push(source);
    }

    let mut heads: BinaryHeap<Reverse<Key>> = sources
        .iter()
        .filter_map(|s| s.head().map(Reverse))
        .collect();
    let mut stats = MergeStats::default();
    let mut last = 0;
    while let Some(Reverse(key)) = heads.pop() {
        let source = &mut sources[key.source];
        let Some(Reverse(packet)) = source.state.window.pop() else {
            continue;
        };
        if packet.key.at_ns < last {
            stats.late += 1;
        }
        last = last.max(packet.key.at_ns);
        writer
            .write_packet(
                packet.interface,
                &CapturedPacket {
                    timestamp_ns: packet.key.at_ns,
                    data: &packet.data,
                    original_len: Some(packet.original_len),
                    comment: packet.comment.as_deref(),
                    direction: packet.direction,
                },
            )
            .map_err(write_error)?;
        stats.packets += 1;
        source.fill(&mut writer, out)?;
        heads.extend(source.head().map(Reverse));
    }
    writer
        .into_inner()
        .and_then(|buffered| {
            buffered
                .into_inner()
                .map_err(io::IntoInnerError::into_error)
        })
        .map_err(write_error)?;

    stats.inputs = sources.into_iter().map(|s| s.state.stats).collect();
    stats.labelled = stats.inputs.iter().map(|i| i.labelled).sum();
    stats.traced = stats.inputs.iter().map(|i| i.traced).sum();
    Ok(stats)
}

/// Merge order: time, then input, then position in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    at_ns: u64,
    source: usize,
    seq: u64,
}

/// A packet read and not yet written.
struct Pending {
    key: Key,
    interface: InterfaceId,
    data: Vec<u8>,
    original_len: u32,
    direction: Option<Direction>,
    comment: Option<String>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// One input being merged.
struct Source<'a> {
    reader: PcapngReader<BufReader<File>>,
    state: SourceState<'a>,
}

/// Everything of an input but its reader (which the block being handled
/// borrows).
struct SourceState<'a> {
    index: usize,
    input: &'a CaptureInput<'a>,
    flows: &'a [u32],
    messages: Cow<'a, [Message]>,
    /// This section's interfaces: id in the merged file, link type.
    interfaces: Vec<(InterfaceId, u16)>,
    window: BinaryHeap<Reverse<Pending>>,
    eof: bool,
    seq: u64,
    last_read_ns: Option<u64>,
    /// Recent traced first fragments: key, flow, message.
    fragments: VecDeque<(FragmentKey, u32, Option<usize>)>,
    stats: InputStats,
}

impl<'a> Source<'a> {
    fn new(index: usize, input: &'a CaptureInput<'a>, file: BufReader<File>) -> Self {
        let (flows, messages): (&[u32], Cow<[Message]>) = match input.messages {
            None => (&[], Cow::Borrowed(&[])),
            Some(run) if run.messages.is_sorted_by_key(|m| m.sent_at_ns) => {
                (&run.flows, Cow::Borrowed(&run.messages))
            }
            Some(run) => {
                let mut sorted = run.messages.clone();
                sorted.sort_by_key(|m| m.sent_at_ns);
                (&run.flows, Cow::Owned(sorted))
            }
        };
        Self {
            reader: PcapngReader::new(file),
            state: SourceState {
                index,
                input,
                flows,
                messages,
                interfaces: Vec::new(),
                window: BinaryHeap::new(),
                eof: false,
                seq: 0,
                last_read_ns: None,
                fragments: VecDeque::new(),
                stats: InputStats {
                    path: input.path.clone(),
                    ..InputStats::default()
                },
            },
        }
    }

    /// The earliest packet held, if any.
    fn head(&self) -> Option<Key> {
        self.state.window.peek().map(|Reverse(p)| p.key)
    }

    /// Reads until the window is full or the input ends, adding the
    /// interfaces it meets to `writer`.
    fn fill(
        &mut self,
        writer: &mut PcapngWriter<BufWriter<File>>,
        out: &Path,
    ) -> Result<(), CaptureError> {
        let state = &mut self.state;
        while !state.eof && state.window.len() < REORDER_WINDOW {
            let block = self
                .reader
                .next_block()
                .map_err(|source| CaptureError::Read {
                    path: state.input.path.clone(),
                    source,
                })?;
            match block {
                None => state.eof = true,
                Some(Block::SectionHeader(_)) => state.interfaces.clear(),
                Some(Block::InterfaceDescription(description)) => {
                    let name = state.interface_name(description.name);
                    let id = writer
                        .add_interface_with_code(&name, description.link_type, description.snap_len)
                        .map_err(|source| CaptureError::Write {
                            path: out.to_path_buf(),
                            source,
                        })?;
                    state.interfaces.push((id, description.link_type));
                    state.stats.interfaces += 1;
                }
                Some(Block::EnhancedPacket(packet)) => {
                    // The reader checked that the interface was described.
                    let Some(&(interface, link_type)) =
                        state.interfaces.get(packet.interface.0 as usize)
                    else {
                        continue;
                    };
                    if state
                        .last_read_ns
                        .is_some_and(|last| packet.timestamp_ns < last)
                    {
                        state.stats.out_of_order += 1;
                    }
                    state.last_read_ns = Some(packet.timestamp_ns);
                    let label = state.label(link_type, packet.data, packet.timestamp_ns);
                    let comment = match (label, packet.comment) {
                        (Some(label), Some(own)) => Some(format!("{label}; {own}")),
                        (label, own) => label.or_else(|| own.map(str::to_owned)),
                    };
                    let key = Key {
                        at_ns: packet.timestamp_ns.saturating_add(state.input.offset_ns),
                        source: state.index,
                        seq: state.seq,
                    };
                    state.seq += 1;
                    state.stats.packets += 1;
                    state.window.push(Reverse(Pending {
                        key,
                        interface,
                        data: packet.data.to_vec(),
                        original_len: packet.original_len,
                        direction: packet.direction,
                        comment: comment.map(truncate_comment),
                    }));
                }
                Some(Block::Other { .. }) => state.stats.skipped_blocks += 1,
            }
        }
        Ok(())
    }
}

impl SourceState<'_> {
    /// The first interface of the input is `prefix`; any further one
    /// `prefix if_name` (or `prefix #n` without a name).
    fn interface_name(&self, if_name: Option<&str>) -> String {
        let n = self.stats.interfaces;
        let prefix = self.input.prefix.as_str();
        let own = if_name
            .filter(|name| !name.is_empty())
            .map_or_else(|| format!("#{n}"), str::to_owned);
        match (prefix.is_empty(), n) {
            (false, 0) => prefix.to_owned(),
            (false, _) => format!("{prefix} {own}"),
            (true, _) => own,
        }
    }

    /// The comment of a packet read at `at_ns` (runner clock, no offset),
    /// if it belongs to one of the run's traced flows.
    fn label(&mut self, link_type: u16, frame: &[u8], at_ns: u64) -> Option<String> {
        if self.flows.is_empty() {
            return None;
        }
        let (flow, message) = match mark(link_type, frame) {
            Mark::Untraced => return None,
            Mark::Traced { flow, fragment } => {
                if !self.flows.contains(&flow) {
                    return None;
                }
                let message = self
                    .messages
                    .partition_point(|m| m.sent_at_ns <= at_ns)
                    .checked_sub(1);
                if let Some(key) = fragment {
                    if self.fragments.len() == FRAGMENT_MEMORY {
                        self.fragments.pop_front();
                    }
                    self.fragments.push_back((key, flow, message));
                }
                (flow, message)
            }
            Mark::LaterFragment(key) => {
                let &(_, flow, message) = self.fragments.iter().rev().find(|f| f.0 == key)?;
                self.stats.fragments_labelled += 1;
                (flow, message)
            }
        };
        self.stats.traced += 1;
        Some(match message.and_then(|i| self.messages.get(i)) {
            Some(message) => {
                self.stats.labelled += 1;
                format!("{} (flow {flow})", message.label)
            }
            None => format!("traced flow {flow}, before the first message"),
        })
    }
}

fn truncate_comment(mut comment: String) -> String {
    if comment.len() > MAX_COMMENT_LEN {
        let mut end = MAX_COMMENT_LEN;
        while !comment.is_char_boundary(end) {
            end -= 1;
        }
        comment.truncate(end);
    }
    comment
}

/// What names a fragmented IPv6 datagram (RFC 8200 §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentKey {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub ident: u32,
}

/// What a captured frame says about tracing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// No trace option (or not a frame this module reads).
    Untraced,
    /// A trace option with the sender's flow id; `fragment` if the packet
    /// is the first fragment of a datagram with more to come.
    Traced {
        flow: u32,
        fragment: Option<FragmentKey>,
    },
    /// A later IPv6 fragment: the option, if any, was in the first one.
    LaterFragment(FragmentKey),
}

/// Reads the trace option of a frame of LINKTYPE_ `link_type`: Ethernet
/// (an 802.1Q tag is stepped over) or raw IP, then the IPv4 options or the
/// IPv6 destination options headers, including those after the fragment
/// header of a first fragment. Never panics; whatever does not parse is
/// untraced.
pub fn mark(link_type: u16, frame: &[u8]) -> Mark {
    match link_type {
        // LINKTYPE_ETHERNET
        1 => {
            let Ok(ethernet) = EthernetFrame::new_checked(frame) else {
                return Mark::Untraced;
            };
            let payload = &frame[ethernet.header_len()..];
            match ethernet.ethertype() {
                EtherType::Ipv6 => mark_ipv6(payload),
                EtherType::Ipv4 => mark_ipv4(payload),
                _ => Mark::Untraced,
            }
        }
        // LINKTYPE_RAW and the DLT values some systems write for it.
        101 | 12 | 14 => match frame.first().map(|b| b >> 4) {
            Some(6) => mark_ipv6(frame),
            Some(4) => mark_ipv4(frame),
            _ => Mark::Untraced,
        },
        228 => mark_ipv4(frame),
        229 => mark_ipv6(frame),
        _ => Mark::Untraced,
    }
}

fn mark_ipv4(packet: &[u8]) -> Mark {
    let Ok(ipv4) = Ipv4Packet::new_checked(packet) else {
        return Mark::Untraced;
    };
    // The option's copied flag puts it in every fragment.
    match Ipv4Options::parse(ipv4.options()).map(|o| o.trace()) {
        Ok(Some(trace)) => Mark::Traced {
            flow: trace.flow,
            fragment: None,
        },
        _ => Mark::Untraced,
    }
}

/// IP protocol number of the authentication header, whose length counts
/// 4-octet units.
const AUTHENTICATION_HEADER: u8 = 51;

fn mark_ipv6(packet: &[u8]) -> Mark {
    let Ok(ipv6) = Ipv6Packet::new_checked(packet) else {
        return Mark::Untraced;
    };
    let (src, dst) = (ipv6.src_addr(), ipv6.dst_addr());
    let mut protocol = ipv6.next_header();
    let mut rest = ipv6.payload();
    let mut fragment = None;
    for _ in 0..MAX_CHAIN_HEADERS {
        let len = match protocol {
            IpProtocol::HopByHop
            | IpProtocol::Ipv6Opts
            | IpProtocol::Ipv6Route
            | IpProtocol::Unknown(135 | 139 | 140) => {
                let Ok(header) = Ipv6ExtHeader::new_checked(rest) else {
                    break;
                };
                if protocol == IpProtocol::Ipv6Opts {
                    for option in header.iter_options() {
                        match option {
                            Ok(Ipv6Option::Trace(trace)) => {
                                return Mark::Traced {
                                    flow: trace.flow,
                                    fragment,
                                }
                            }
                            Ok(_) => {}
                            Err(_) => break,
                        }
                    }
                }
                protocol = header.next_header();
                header.header_len()
            }
            IpProtocol::Ipv6Frag => {
                let Ok(header) = Ipv6FragmentHeader::new_checked(rest) else {
                    break;
                };
                let key = FragmentKey {
                    src,
                    dst,
                    ident: header.ident(),
                };
                if header.frag_offset() != 0 {
                    return Mark::LaterFragment(key);
                }
                if header.more_frags() {
                    fragment = Some(key);
                }
                protocol = header.next_header();
                header.header_len()
            }
            IpProtocol::Unknown(AUTHENTICATION_HEADER) => {
                let Some(&units) = rest.get(1) else {
                    break;
                };
                let Some(&next) = rest.first() else {
                    break;
                };
                protocol = IpProtocol::from(next);
                (usize::from(units) + 2) * 4
            }
            _ => break,
        };
        let Some(after) = rest.get(len..) else {
            break;
        };
        rest = after;
    }
    Mark::Untraced
}

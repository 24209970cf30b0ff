//! Per message: start and stop latency on the send and the receive path,
//! the cost categories inside them, and the one-way delay (the IPv6
//! study's §2.1 and ch. 5, automated).
//!
//! * **Send path** (the sender's thread): from the first
//!   `socket.send.enter` of the message's flow after its
//!   `app.message.send` mark (the first byte enters the top of the stack)
//!   to `link.transmit.enter` of the first frame carrying its payload
//!   (start latency) and to `link.transmit.exit` of the last (stop
//!   latency). A frame carries payload when it was queued on the interface
//!   inside a transport output span (`*.output`, category
//!   `protocol_send`, transport layer) of the flow with a non-zero length;
//!   frames are followed through each interface queue in FIFO order.
//! * **Receive path** (the receiver's thread): from `link.receive.enter`
//!   of the first frame of the sender's flow after the previous message
//!   was received (the trace option gives received frames the sender's
//!   flow) to the first `socket.recv_queue.enqueue` (start) and the last
//!   before `app.message.received` (stop).
//!
//! Latencies have the probes' cost taken out: one overhead per record
//! between the two ends. Category times are the exclusive times of the
//! spans wholly inside the window; what no span covers is `other` (the
//! application, the poll loop, waiting for acknowledgements).

use std::collections::{BTreeMap, VecDeque};

use probe::{Category, Kind, Layer, Record};
use serde::Serialize;

use crate::spans::ThreadSpans;
use crate::view::TraceView;
use crate::AnalysisError;

/// The location names this analysis relies on (the trace's table must
/// have them; their numbers come from the table).
pub mod sites {
    pub const MESSAGE_SEND: &str = "app.message.send";
    pub const MESSAGE_RECEIVED: &str = "app.message.received";
    pub const SOCKET_SEND: &str = "socket.send.enter";
    pub const LINK_TRANSMIT_ENTER: &str = "link.transmit.enter";
    pub const LINK_TRANSMIT_EXIT: &str = "link.transmit.exit";
    pub const LINK_RECEIVE_ENTER: &str = "link.receive.enter";
    pub const RECV_QUEUE_ENQUEUE: &str = "socket.recv_queue.enqueue";
    pub const INTERFACE_QUEUE: &str = "interface";
}

/// Time per cost category inside a window, nanoseconds; `other` is the
/// window's time in no span.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CategoryTimes {
    pub by_category: BTreeMap<Category, f64>,
    pub other: f64,
}

/// One path (send or receive) of one message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathLatency {
    /// Nanoseconds, probe overhead removed.
    pub start_ns: f64,
    pub stop_ns: f64,
    /// Counter values where the window begins and where it stops (raw, for
    /// placing the message on a timeline).
    pub begin_tsc: u64,
    pub stop_tsc: u64,
    /// Frames carrying the message's payload (send: transmitted, with
    /// retransmissions; receive: received).
    pub frames: u32,
    /// Probe records inside the window (their cost was removed).
    pub probes: u64,
    pub categories: CategoryTimes,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageLatency {
    pub index: u64,
    pub size: u32,
    pub send: Option<PathLatency>,
    pub receive: Option<PathLatency>,
    /// From the first byte entering the sender's stack to the last byte
    /// reaching the receiver's socket (one counter, so comparable across
    /// threads of one machine).
    pub one_way_ns: Option<f64>,
}

/// Every message of a trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Messages {
    pub messages: Vec<MessageLatency>,
    pub sender_thread: Option<u16>,
    pub receiver_thread: Option<u16>,
    /// The sender's flow id.
    pub flow: Option<u32>,
}

/// Finds the messages of `view` and measures them. `spans` holds each
/// thread's rebuilt spans.
pub fn analyse(
    view: &TraceView,
    spans: &BTreeMap<u16, ThreadSpans>,
) -> Result<Messages, AnalysisError> {
    let need = |name: &str| {
        view.loc(name)
            .ok_or_else(|| AnalysisError::MissingLocation(name.to_string()))
    };
    let mark_send = need(sites::MESSAGE_SEND)?;
    let Some(sender_thread) = view.thread_with(mark_send, None) else {
        return Ok(Messages::default());
    };
    let sender = &view.threads[&sender_thread];
    let flow = sender
        .iter()
        .find(|r| r.loc == mark_send)
        .map(|r| r.flow)
        .unwrap_or_default();
    let send_paths = send_path(view, sender, flow, spans.get(&sender_thread))?;
    let mark_received = need(sites::MESSAGE_RECEIVED)?;
    let receiver_thread = view.thread_with(mark_received, None);
    let receive_paths = match receiver_thread {
        Some(t) => receive_path(view, &view.threads[&t], flow, spans.get(&t))?,
        None => BTreeMap::new(),
    };
    let messages = send_paths
        .into_iter()
        .map(|(index, (size, start_tsc, send))| {
            let received = receive_paths.get(&index);
            let one_way_ns = match (start_tsc, received) {
                (Some(t0), Some((stop_tsc, _))) if *stop_tsc >= t0 => {
                    Some(view.ns((*stop_tsc - t0) as f64))
                }
                _ => None,
            };
            MessageLatency {
                index,
                size,
                send,
                receive: received.map(|(_, path)| path.clone()),
                one_way_ns,
            }
        })
        .collect();
    Ok(Messages {
        messages,
        sender_thread: Some(sender_thread),
        receiver_thread,
        flow: Some(flow),
    })
}

/// A frame on its way through an interface queue.
#[derive(Clone, Copy)]
struct Queued {
    /// The message whose payload it carries.
    message: Option<u64>,
}

/// Per message of the sender: (size, counter value of its first byte
/// entering the stack, send path).
type SendPaths = BTreeMap<u64, (u32, Option<u64>, Option<PathLatency>)>;

struct Building {
    index: u64,
    size: u32,
    /// Position and counter value of the first `socket.send.enter`.
    began: Option<(usize, u64)>,
    first_tx: Option<(usize, u64)>,
    last_tx: Option<(usize, u64)>,
    frames: u32,
}

fn send_path(
    view: &TraceView,
    records: &[Record],
    flow: u32,
    spans: Option<&ThreadSpans>,
) -> Result<SendPaths, AnalysisError> {
    let loc = |name: &str| view.loc(name);
    let mark = loc(sites::MESSAGE_SEND);
    let socket_send = loc(sites::SOCKET_SEND);
    let tx_enter = loc(sites::LINK_TRANSMIT_ENTER);
    let tx_exit = loc(sites::LINK_TRANSMIT_EXIT);
    let mut out = SendPaths::new();
    let mut current: Option<Building> = None;
    let mut fifos: BTreeMap<u64, VecDeque<Queued>> = BTreeMap::new();
    // Open transport-output spans: (enter location, flow, len).
    let mut transport: Vec<(u16, u32, u32)> = Vec::new();
    // The frame between its dequeue and its transmission.
    let mut on_link: Option<Queued> = None;
    let finish = |b: Building, out: &mut SendPaths| {
        let path = match (b.began, b.first_tx, b.last_tx) {
            (Some(began), Some(first), Some(last)) => Some(PathLatency {
                start_ns: latency(view, began, first),
                stop_ns: latency(view, began, last),
                begin_tsc: began.1,
                stop_tsc: last.1,
                frames: b.frames,
                probes: (last.0 - began.0) as u64,
                categories: categories(view, spans, began, last),
            }),
            _ => None,
        };
        out.insert(b.index, (b.size, b.began.map(|b| b.1), path));
    };
    for (i, r) in records.iter().enumerate() {
        let site = view.site(r.loc);
        if Some(r.loc) == mark && r.flow == flow {
            if let Some(done) = current.take() {
                finish(done, &mut out);
            }
            current = Some(Building {
                index: r.aux,
                size: r.len,
                began: None,
                first_tx: None,
                last_tx: None,
                frames: 0,
            });
            continue;
        }
        match site.kind {
            Kind::SpanEnter if is_transport_send(site) => transport.push((r.loc, r.flow, r.len)),
            Kind::SpanExit if site.layer == Layer::Transport => {
                if let Some(enter) = site.partner {
                    if let Some(at) = transport.iter().rposition(|t| t.0 == enter) {
                        transport.truncate(at);
                    }
                }
            }
            Kind::Enqueue if site.queue.as_deref() == Some(sites::INTERFACE_QUEUE) => {
                let payload = transport
                    .last()
                    .is_some_and(|&(_, f, len)| f == flow && len > 0);
                let message = current.as_ref().filter(|_| payload).map(|b| b.index);
                fifos
                    .entry(r.aux)
                    .or_default()
                    .push_back(Queued { message });
            }
            Kind::Dequeue if site.queue.as_deref() == Some(sites::INTERFACE_QUEUE) => {
                on_link = fifos.get_mut(&r.aux).and_then(VecDeque::pop_front);
            }
            _ => {}
        }
        let Some(b) = current.as_mut() else { continue };
        if Some(r.loc) == socket_send && r.flow == flow && b.began.is_none() {
            b.began = Some((i, r.tsc));
        }
        let ours = on_link.is_some_and(|q| q.message == Some(b.index));
        if ours && Some(r.loc) == tx_enter && b.first_tx.is_none() {
            b.first_tx = Some((i, r.tsc));
        }
        if ours && Some(r.loc) == tx_exit {
            b.last_tx = Some((i, r.tsc));
            b.frames += 1;
            on_link = None;
        }
    }
    if let Some(done) = current.take() {
        finish(done, &mut out);
    }
    Ok(out)
}

fn is_transport_send(site: &crate::view::Site) -> bool {
    site.layer == Layer::Transport
        && site.category == Category::ProtocolSend
        && site.span.as_deref().is_some_and(|s| s.ends_with(".output"))
}

/// Per message of the receiver: counter value of its last byte reaching
/// the socket, and the receive path.
type ReceivePaths = BTreeMap<u64, (u64, PathLatency)>;

fn receive_path(
    view: &TraceView,
    records: &[Record],
    flow: u32,
    spans: Option<&ThreadSpans>,
) -> Result<ReceivePaths, AnalysisError> {
    let loc = |name: &str| view.loc(name);
    let mark = loc(sites::MESSAGE_RECEIVED);
    let rx_enter = loc(sites::LINK_RECEIVE_ENTER);
    let enqueue = loc(sites::RECV_QUEUE_ENQUEUE);
    let mut out = ReceivePaths::new();
    let mut first_rx: Option<(usize, u64)> = None;
    let mut first_up: Option<(usize, u64)> = None;
    let mut last_up: Option<(usize, u64)> = None;
    let mut frames = 0u32;
    for (i, r) in records.iter().enumerate() {
        if Some(r.loc) == rx_enter && r.flow == flow {
            if first_rx.is_none() {
                first_rx = Some((i, r.tsc));
            }
            frames += 1;
        } else if Some(r.loc) == enqueue && first_rx.is_some() {
            if first_up.is_none() {
                first_up = Some((i, r.tsc));
            }
            last_up = Some((i, r.tsc));
        } else if Some(r.loc) == mark {
            if let (Some(began), Some(first), Some(last)) = (first_rx, first_up, last_up) {
                out.insert(
                    r.aux,
                    (
                        last.1,
                        PathLatency {
                            start_ns: latency(view, began, first),
                            stop_ns: latency(view, began, last),
                            begin_tsc: began.1,
                            stop_tsc: last.1,
                            frames,
                            probes: (last.0 - began.0) as u64,
                            categories: categories(view, spans, began, last),
                        },
                    ),
                );
            }
            first_rx = None;
            first_up = None;
            last_up = None;
            frames = 0;
        }
    }
    Ok(out)
}

/// Nanoseconds between two records of one thread, less one probe
/// overhead per record between them.
fn latency(view: &TraceView, from: (usize, u64), to: (usize, u64)) -> f64 {
    let raw = to.1.saturating_sub(from.1) as f64;
    let probes = to.0.saturating_sub(from.0) as f64;
    view.ns((raw - view.overhead_cycles.max(0.0) * probes).max(0.0))
}

/// Exclusive time per category of the spans wholly inside the window.
fn categories(
    view: &TraceView,
    spans: Option<&ThreadSpans>,
    from: (usize, u64),
    to: (usize, u64),
) -> CategoryTimes {
    let mut times = CategoryTimes::default();
    let total = latency(view, from, to);
    let mut covered = 0.0;
    if let Some(spans) = spans {
        let first = spans.spans.partition_point(|s| s.enter_index < from.0);
        for span in &spans.spans[first..] {
            if span.enter_index > to.0 {
                break;
            }
            if span.exit_index > to.0 {
                continue;
            }
            let ns = view.ns(span.exclusive);
            *times.by_category.entry(span.category).or_default() += ns;
            covered += ns;
        }
    }
    times.other = (total - covered).max(0.0);
    times
}

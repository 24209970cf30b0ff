//! Per message: start and stop latency on the send and the receive path,
//! the cost categories inside them, and the one-way delay (the IPv6
//! study's §2.1 and ch. 5, automated).
//!
//! * **Send path** (the sender's thread): from the first
//!   `socket.send.enter` of the message's flow after its
//!   `app.message.send` mark (the first byte enters the top of the stack)
//!   to `link.transmit.enter` of the first frame carrying its payload
//!   (start latency) and to where [`StopAt`] says the last one is done
//!   (stop latency): handed to the device (`link.transmit.exit`), on the
//!   wire (the device's transmit complete, `device.queue.dequeue`: the
//!   NDIS send completion the study's stop latency included), or, for
//!   TCP, acknowledged (the send queue's `socket.send_queue.dequeue`
//!   reaching the message's last byte). A frame carries payload when it
//!   was queued on the interface inside a transport output span
//!   (`*.output`, category `protocol_send`, transport layer) of the flow
//!   with a non-zero length; frames are followed through each interface
//!   queue and device ring in FIFO order.
//! * **Receive path** (the receiver's thread): from the arrival of the
//!   first frame of the sender's flow after the previous message was
//!   received (the trace option gives received frames the sender's flow):
//!   its `link.receive.enter`, less the wait `link.receive.arrival` says
//!   the frame had in the device before the receiver looked — to the first
//!   `socket.recv_queue.enqueue` (start) and the last before
//!   `app.message.received` (stop).
//!
//! Latencies have the probes' cost taken out: one overhead per record
//! between the two ends. Category times are the exclusive times of the
//! spans wholly inside the window; time in no span is `wire` while a frame
//! of the path is on its way (send: the device holds a frame; receive:
//! between the first frame's arrival and the last one's) and `other`
//! otherwise (the application, the poll loop, waiting for an
//! acknowledgement), so the categories add up to the whole window. The
//! same span times split by the layer of their probe site (socket,
//! transport, network, link, and host for buffers and copies): with
//! `wire` and `other` the layers add up to the window too.
//!
//! Nothing here names a transport protocol: a transport's output span is
//! any `*.output` span of the transport layer and category
//! `protocol_send` (`tcp.output`, `udp.output`, `xtp.output`), and a
//! stream's send queue is recognised by its offsets (TCP's and XTP's
//! advance by each enqueue's length).

use std::collections::{BTreeMap, VecDeque};

use probe::{Category, Kind, Layer, Record};
use serde::{Deserialize, Serialize};

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
    /// Optional: how long a frame waited for the receiver (aux, ns).
    pub const LINK_RECEIVE_ARRIVAL: &str = "link.receive.arrival";
    pub const RECV_QUEUE_ENQUEUE: &str = "socket.recv_queue.enqueue";
    pub const DEVICE_QUEUE_DEQUEUE: &str = "device.queue.dequeue";
    pub const SEND_QUEUE_DEQUEUE: &str = "socket.send_queue.dequeue";
    pub const INTERFACE_QUEUE: &str = "interface";
    pub const DEVICE_QUEUE: &str = "device";
    pub const SEND_QUEUE: &str = "send_socket";
}

/// Where the send path's stop latency ends: the IPv6 study's definitions
/// (`000_…` §2.1, §5.1), named in every table that shows one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopAt {
    /// The last payload frame handed to the device (`link.transmit.exit`).
    HandedToDevice,
    /// Its last bit has left: the device's transmit complete
    /// (`device.queue.dequeue`), as NDIS's send completion.
    #[default]
    OnTheWire,
    /// TCP only: the acknowledgement of the message's last byte has come
    /// back (`socket.send_queue.dequeue` reaching it).
    Acknowledged,
}

impl StopAt {
    pub const ALL: [StopAt; 3] = [
        StopAt::HandedToDevice,
        StopAt::OnTheWire,
        StopAt::Acknowledged,
    ];

    /// The name used in recipes, JSON and tables.
    pub const fn as_str(self) -> &'static str {
        match self {
            StopAt::HandedToDevice => "handed_to_device",
            StopAt::OnTheWire => "on_the_wire",
            StopAt::Acknowledged => "acknowledged",
        }
    }

    /// Parses [`as_str`](StopAt::as_str)'s names.
    pub fn from_name(name: &str) -> Option<StopAt> {
        StopAt::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The window in words, for captions.
    pub const fn describe(self) -> &'static str {
        match self {
            StopAt::HandedToDevice => {
                "first byte written → last payload frame handed to the device"
            }
            StopAt::OnTheWire => {
                "first byte written → last payload bit on the wire (transmit complete)"
            }
            StopAt::Acknowledged => {
                "first byte written → acknowledgement of the last byte processed"
            }
        }
    }
}

impl std::fmt::Display for StopAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Time per cost category inside a window, nanoseconds; `other` is the
/// window's time in no span and not waiting for the wire.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CategoryTimes {
    pub by_category: BTreeMap<Category, f64>,
    /// The stack's span time (every category but `wire` and
    /// `instrumentation`) by the layer of its probe site: it sums to the
    /// same total, so layers, `wire` and `other` make up the window.
    pub by_layer: BTreeMap<Layer, f64>,
    /// The part of `by_layer` that is a tunnel's work (IPv6 over the
    /// host's own IPv4: the encapsulation or decapsulation under `link`,
    /// the encapsulating IPv4 output or the outer IPv4 input under
    /// `network`; `tunnel_part`), by the same layers. Empty without a
    /// tunnel.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tunnel: BTreeMap<Layer, f64>,
    pub other: f64,
}

impl CategoryTimes {
    /// The stack's own work in the window: its spans' time, every layer.
    pub fn stack_ns(&self) -> f64 {
        self.by_layer.values().sum()
    }

    /// Time on the wire's side (`wire`), 0 when none.
    pub fn wire_ns(&self) -> f64 {
        self.by_category
            .get(&Category::Wire)
            .copied()
            .unwrap_or(0.0)
    }
}

/// The send path's stop latency under each definition the trace allows,
/// nanoseconds, probe overhead removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StopLatencies {
    pub handed_to_device: Option<f64>,
    pub on_the_wire: Option<f64>,
    pub acknowledged: Option<f64>,
}

impl StopLatencies {
    pub fn get(&self, at: StopAt) -> Option<f64> {
        match at {
            StopAt::HandedToDevice => self.handed_to_device,
            StopAt::OnTheWire => self.on_the_wire,
            StopAt::Acknowledged => self.acknowledged,
        }
    }
}

/// One path (send or receive) of one message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathLatency {
    /// Nanoseconds, probe overhead removed.
    pub start_ns: f64,
    /// Under the definition the analysis was asked for (send path), or to
    /// the last byte queued for the application (receive path).
    pub stop_ns: f64,
    /// Send path: every definition's stop latency (the one above is among
    /// them); `None` on the receive path.
    pub stops: Option<StopLatencies>,
    /// Counter values where the window begins and where it stops (raw, for
    /// placing the message on a timeline).
    pub begin_tsc: u64,
    pub stop_tsc: u64,
    /// Frames carrying the message's payload (send: transmitted, with
    /// retransmissions; receive: received).
    pub frames: u32,
    /// Probe counter reads inside the window (their cost was removed;
    /// records that shared a read count once).
    pub probes: u64,
    /// The stop window's time by category and by layer.
    pub categories: CategoryTimes,
    /// The start window's, the same way.
    pub start_categories: CategoryTimes,
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
    /// Where the send path's stop latency ends.
    pub stop_at: StopAt,
}

/// Finds the messages of `view` and measures them, the send path's stop
/// latency ending where `stop_at` says. `spans` holds each thread's
/// rebuilt spans.
pub fn analyse(
    view: &TraceView,
    spans: &BTreeMap<u16, ThreadSpans>,
    stop_at: StopAt,
) -> Result<Messages, AnalysisError> {
    let need = |name: &str| {
        view.loc(name)
            .ok_or_else(|| AnalysisError::MissingLocation(name.to_string()))
    };
    let mark_send = need(sites::MESSAGE_SEND)?;
    match stop_at {
        StopAt::HandedToDevice => {}
        StopAt::OnTheWire => {
            need(sites::DEVICE_QUEUE_DEQUEUE)?;
        }
        StopAt::Acknowledged => {
            need(sites::SEND_QUEUE_DEQUEUE)?;
        }
    }
    let Some(sender_thread) = view.thread_with(mark_send, None) else {
        return Ok(Messages {
            stop_at,
            ..Messages::default()
        });
    };
    let sender = &view.threads[&sender_thread];
    let flow = sender
        .iter()
        .find(|r| r.loc == mark_send)
        .map(|r| r.flow)
        .unwrap_or_default();
    let send_paths = send_path(view, sender, flow, spans.get(&sender_thread), stop_at);
    let mark_received = need(sites::MESSAGE_RECEIVED)?;
    let receiver_thread = view.thread_with(mark_received, None);
    let receive_paths = match receiver_thread {
        Some(t) => receive_path(view, &view.threads[&t], flow, spans.get(&t)),
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
        stop_at,
    })
}

/// A frame on its way through an interface queue or a device ring: the
/// message whose payload it carries, if any.
type Queued = Option<u64>;

/// Per message of the sender: (size, counter value of its first byte
/// entering the stack, send path).
type SendPaths = BTreeMap<u64, (u32, Option<u64>, Option<PathLatency>)>;

/// A record's position in its thread and its counter value.
type At = (usize, u64);

#[derive(Default)]
struct Building {
    size: u32,
    /// The first `socket.send.enter` of the message.
    began: Option<At>,
    first_tx: Option<At>,
    last_tx: Option<At>,
    /// Payload frames handed to the device, and of those completed.
    frames: u32,
    completed: u32,
    last_complete: Option<At>,
    /// Stream offset just past the message's last byte (TCP), and when an
    /// acknowledgement first covered it.
    end_offset: Option<u64>,
    acked: Option<At>,
}

impl Building {
    fn stop(&self, at: StopAt) -> Option<At> {
        match at {
            StopAt::HandedToDevice => self.last_tx,
            // Every payload frame must have completed: the last completion
            // seen is then the last frame's (rings are FIFO).
            StopAt::OnTheWire => self.last_complete.filter(|_| self.completed == self.frames),
            StopAt::Acknowledged => self.acked,
        }
    }
}

fn send_path(
    view: &TraceView,
    records: &[Record],
    flow: u32,
    spans: Option<&ThreadSpans>,
    stop_at: StopAt,
) -> SendPaths {
    let loc = |name: &str| view.loc(name);
    let mark = loc(sites::MESSAGE_SEND);
    let socket_send = loc(sites::SOCKET_SEND);
    let tx_enter = loc(sites::LINK_TRANSMIT_ENTER);
    let tx_exit = loc(sites::LINK_TRANSMIT_EXIT);
    let mut messages: BTreeMap<u64, Building> = BTreeMap::new();
    let mut current: Option<u64> = None;
    let mut interface_fifos: BTreeMap<u64, VecDeque<Queued>> = BTreeMap::new();
    let mut device_fifos: BTreeMap<u64, VecDeque<Queued>> = BTreeMap::new();
    // Open transport-output spans: (enter location, flow, len).
    let mut transport: Vec<(u16, u32, u32)> = Vec::new();
    // The frame between its interface dequeue and the device taking it.
    let mut on_link: Option<Queued> = None;
    // Whether the flow's send queue is a byte stream (TCP: each enqueue
    // advances the offset in `aux` by its length); a datagram queue
    // numbers datagrams in `aux`, and nothing acknowledges them.
    let mut stream = true;
    let mut last_offset: Option<u64> = None;
    for (i, r) in records.iter().enumerate() {
        let site = view.site(r.loc);
        if Some(r.loc) == mark && r.flow == flow {
            current = Some(r.aux);
            messages.insert(
                r.aux,
                Building {
                    size: r.len,
                    ..Building::default()
                },
            );
            continue;
        }
        let queue = site.queue.as_deref();
        match site.kind {
            Kind::SpanEnter if is_transport_send(site) => transport.push((r.loc, r.flow, r.len)),
            Kind::SpanExit if site.layer == Layer::Transport => {
                if let Some(enter) = site.partner {
                    if let Some(at) = transport.iter().rposition(|t| t.0 == enter) {
                        transport.truncate(at);
                    }
                }
            }
            Kind::Enqueue if queue == Some(sites::INTERFACE_QUEUE) => {
                let payload = transport
                    .last()
                    .is_some_and(|&(_, f, len)| f == flow && len > 0);
                let message = current.filter(|_| payload);
                interface_fifos.entry(r.aux).or_default().push_back(message);
            }
            Kind::Dequeue if queue == Some(sites::INTERFACE_QUEUE) => {
                on_link = interface_fifos
                    .get_mut(&r.aux)
                    .and_then(VecDeque::pop_front);
            }
            Kind::Enqueue if queue == Some(sites::DEVICE_QUEUE) => {
                let frame = on_link.take().flatten();
                device_fifos.entry(r.aux).or_default().push_back(frame);
            }
            Kind::Dequeue if queue == Some(sites::DEVICE_QUEUE) => {
                let frame = device_fifos.get_mut(&r.aux).and_then(VecDeque::pop_front);
                if let Some(b) = frame.flatten().and_then(|m| messages.get_mut(&m)) {
                    b.completed += 1;
                    b.last_complete = Some((i, r.tsc));
                }
            }
            // The send queue's offsets are the stream's: enqueues end at the
            // bytes written so far, dequeues at the bytes acknowledged.
            Kind::Enqueue if queue == Some(sites::SEND_QUEUE) && r.flow == flow => {
                let len = u64::from(r.len);
                if r.len == 0 || r.aux < len || last_offset.is_some_and(|o| r.aux != o + len) {
                    stream = false;
                }
                last_offset = Some(r.aux);
                if let Some(b) = current.and_then(|m| messages.get_mut(&m)) {
                    if b.end_offset.is_none() {
                        let start = r.aux.saturating_sub(u64::from(r.len));
                        b.end_offset = Some(start + u64::from(b.size));
                    }
                }
            }
            Kind::Dequeue if queue == Some(sites::SEND_QUEUE) && r.flow == flow => {
                for b in messages.values_mut() {
                    if b.acked.is_none() && b.end_offset.is_some_and(|end| end <= r.aux) {
                        b.acked = Some((i, r.tsc));
                    }
                }
            }
            _ => {}
        }
        let Some(b) = current.and_then(|m| messages.get_mut(&m)) else {
            continue;
        };
        if Some(r.loc) == socket_send && r.flow == flow && b.began.is_none() {
            b.began = Some((i, r.tsc));
        }
        // A frame belongs to the message it was queued for, which may be
        // an earlier one than the current (a retransmission).
        let Some(Some(message)) = on_link else {
            continue;
        };
        let Some(b) = messages.get_mut(&message) else {
            continue;
        };
        if Some(r.loc) == tx_enter && b.first_tx.is_none() {
            b.first_tx = Some((i, r.tsc));
        }
        if Some(r.loc) == tx_exit {
            b.last_tx = Some((i, r.tsc));
            b.frames += 1;
        }
    }
    if !stream {
        messages.values_mut().for_each(|b| b.acked = None);
    }
    let busy = device_busy(view, records);
    messages
        .into_iter()
        .map(|(index, b)| {
            let path = match (b.began, b.first_tx, b.stop(stop_at)) {
                (Some(began), Some(first), Some(stop)) if stop.0 >= began.0 => {
                    let latency_to = |at: At| measure(view, records, spans, began, at, &busy).0;
                    let at_definition =
                        |at: Option<At>| at.filter(|at| at.0 >= began.0).map(latency_to);
                    let (stop_ns, categories) = measure(view, records, spans, began, stop, &busy);
                    let (start_ns, start_categories) =
                        measure(view, records, spans, began, first, &busy);
                    Some(PathLatency {
                        start_ns,
                        stop_ns,
                        stops: Some(StopLatencies {
                            handed_to_device: at_definition(b.stop(StopAt::HandedToDevice)),
                            on_the_wire: at_definition(b.stop(StopAt::OnTheWire)),
                            acknowledged: at_definition(b.stop(StopAt::Acknowledged)),
                        }),
                        begin_tsc: began.1,
                        stop_tsc: stop.1,
                        frames: b.frames,
                        probes: view.probe_steps(records, began.0, stop.0.max(began.0)) as u64,
                        categories,
                        start_categories,
                    })
                }
                _ => None,
            };
            (index, (b.size, b.began.map(|b| b.1), path))
        })
        .collect()
}

/// The counter intervals during which some device ring of the thread held
/// a frame (from a `device.queue.enqueue` that found them all empty to the
/// dequeue that emptied them).
fn device_busy(view: &TraceView, records: &[Record]) -> Vec<(u64, u64)> {
    let mut busy = Vec::new();
    let mut held = 0u64;
    let mut since = 0u64;
    for r in records {
        let site = view.site(r.loc);
        if site.queue.as_deref() != Some(sites::DEVICE_QUEUE) {
            continue;
        }
        match site.kind {
            Kind::Enqueue => {
                if held == 0 {
                    since = r.tsc;
                }
                held += 1;
            }
            // A dequeue of a frame enqueued before the trace began is not
            // counted: the ring's state then is unknown.
            Kind::Dequeue if held > 0 => {
                held -= 1;
                if held == 0 {
                    busy.push((since, r.tsc));
                }
            }
            _ => {}
        }
    }
    if held > 0 {
        busy.push((since, u64::MAX));
    }
    busy
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
) -> ReceivePaths {
    let loc = |name: &str| view.loc(name);
    let mark = loc(sites::MESSAGE_RECEIVED);
    let rx_enter = loc(sites::LINK_RECEIVE_ENTER);
    let rx_arrival = loc(sites::LINK_RECEIVE_ARRIVAL);
    let enqueue = loc(sites::RECV_QUEUE_ENQUEUE);
    let mut out = ReceivePaths::new();
    let mut first_rx: Option<At> = None;
    let mut last_rx: Option<At> = None;
    let mut first_up: Option<At> = None;
    let mut last_up: Option<At> = None;
    // The latest frame of the flow (the stack gives later IPv6 fragments
    // their first fragment's flow).
    let mut latest_rx: Option<At> = None;
    // The flow's last arrival record: (index, counter units it waited).
    let mut waited: Option<(usize, u64)> = None;
    for (i, r) in records.iter().enumerate() {
        if Some(r.loc) == rx_arrival && r.flow == flow {
            waited = Some((i, (r.aux as f64 * view.counter_hz / 1e9) as u64));
            continue;
        }
        if Some(r.loc) == rx_enter && r.flow == flow {
            latest_rx = Some((i, r.tsc));
            if first_rx.is_none() {
                // From the arrival of the first frame's last bit, however
                // late the receiver looked: the frame's wait in the device
                // is time on the wire's side, and what the receiver did
                // meanwhile (taking the frame off the link into a buffer,
                // a capture's copy of it, other work) is inside the window,
                // each span in its category.
                let wait = waited.filter(|&(at, _)| at + 1 == i).map_or(0, |(_, c)| c);
                let arrived = r.tsc.saturating_sub(wait);
                let from = records[..i]
                    .iter()
                    .rposition(|p| p.tsc < arrived)
                    .map_or(0, |p| p + 1);
                first_rx = Some((from, arrived));
            }
            waited = None;
        } else if Some(r.loc) == enqueue && first_rx.is_some() {
            if first_up.is_none() {
                first_up = Some((i, r.tsc));
            }
            last_up = Some((i, r.tsc));
            // The frame that brought these bytes had arrived.
            last_rx = latest_rx;
        } else if Some(r.loc) == mark {
            if let (Some(began), Some(arrived), Some(first), Some(last)) =
                (first_rx, last_rx, first_up, last_up)
            {
                // Until the last frame has arrived, time in no span is the
                // later frames' time on the wire.
                let on_the_wire = [(began.1, arrived.1)];
                let (stop_ns, categories) =
                    measure(view, records, spans, began, last, &on_the_wire);
                let (start_ns, start_categories) =
                    measure(view, records, spans, began, first, &on_the_wire);
                // Every frame of the flow from the first to the one that
                // completed the message.
                let frames = records[began.0..=arrived.0.max(began.0)]
                    .iter()
                    .filter(|r| Some(r.loc) == rx_enter && r.flow == flow)
                    .count() as u32;
                out.insert(
                    r.aux,
                    (
                        last.1,
                        PathLatency {
                            start_ns,
                            stop_ns,
                            stops: None,
                            begin_tsc: began.1,
                            stop_tsc: last.1,
                            frames,
                            probes: view.probe_steps(records, began.0, last.0.max(began.0)) as u64,
                            categories,
                            start_categories,
                        },
                    ),
                );
            }
            first_rx = None;
            last_rx = None;
            first_up = None;
            last_up = None;
        }
    }
    out
}

/// Nanoseconds between two records of one thread (`records`), less one
/// probe overhead per counter read between them.
fn latency(view: &TraceView, records: &[Record], from: At, to: At) -> f64 {
    let raw = to.1.saturating_sub(from.1) as f64;
    let probes = view.probe_steps(records, from.0, to.0.max(from.0)) as f64;
    view.ns((raw - view.overhead_cycles.max(0.0) * probes).max(0.0))
}

/// A window's latency and the time of each category inside it.
///
/// Categories are the exclusive times of the spans wholly inside the
/// window; of the time in no span, what falls in a `wire` interval (a
/// frame of the path on its way) is `wire`, the rest `other`. The tool's
/// own work (instrumentation spans: capture copies, the runner's wake-ups)
/// is taken out of the latency where it held the path up; where a frame
/// was on the wire meanwhile, the wire set the pace and that time is
/// `wire`. `instrumentation` in the categories is what was taken out. The
/// stack's categories, `wire` and `other` add up to the latency, and so
/// do its layers, `wire` and `other`.
fn measure(
    view: &TraceView,
    records: &[Record],
    spans: Option<&ThreadSpans>,
    from: At,
    to: At,
    wire: &[(u64, u64)],
) -> (f64, CategoryTimes) {
    let mut times = CategoryTimes::default();
    let total = latency(view, records, from, to);
    let mut covered = 0.0;
    let (mut tool_overlapped, mut tool_alone) = (0.0, 0.0);
    // The outermost spans inside the window, in order: what they leave
    // uncovered is time in no span.
    let mut outer: Vec<(u64, u64)> = Vec::new();
    if let Some(spans) = spans {
        let mut tunnel = crate::tunnel_part::TunnelSpans::new(&spans.spans, |loc| {
            let site = view.site(loc);
            (site.name.as_str(), site.layer)
        });
        let first = spans.spans.partition_point(|s| s.enter_index < from.0);
        for (index, span) in spans.spans.iter().enumerate().skip(first) {
            if span.enter_index > to.0 {
                break;
            }
            if span.exit_index > to.0 {
                continue;
            }
            if outer.last().is_none_or(|&(_, end)| span.start >= end) {
                outer.push((span.start, span.end));
            }
            if !span.is_instrumentation() {
                let ns = view.ns(span.exclusive);
                *times.by_category.entry(span.category).or_default() += ns;
                let layer = view.site(span.enter).layer;
                *times.by_layer.entry(layer).or_default() += ns;
                if tunnel.contains(index) {
                    *times.tunnel.entry(layer).or_default() += ns;
                }
                covered += ns;
                continue;
            }
            // Nested instrumentation is inside its outermost one.
            let nested = span
                .parent
                .and_then(|p| spans.spans.get(p))
                .is_some_and(|p| p.is_instrumentation());
            if nested {
                continue;
            }
            let ns = view.ns(span.inclusive);
            let length = span.end.saturating_sub(span.start).max(1) as f64;
            let share = overlap((span.start, span.end), wire) as f64 / length;
            tool_overlapped += ns * share;
            tool_alone += ns * (1.0 - share);
        }
    }
    let mut gaps = Vec::with_capacity(outer.len() + 1);
    let mut cursor = from.1;
    for &(start, end) in &outer {
        if start > cursor {
            gaps.push((cursor, start));
        }
        cursor = cursor.max(end);
    }
    if to.1 > cursor {
        gaps.push((cursor, to.1));
    }
    let window = (total - tool_alone).max(0.0);
    let waiting: u64 = gaps.iter().map(|&gap| overlap(gap, wire)).sum();
    let uncovered = (window - covered).max(0.0);
    let wire_ns = (view.ns(waiting as f64) + tool_overlapped).min(uncovered);
    if wire_ns > 0.0 {
        *times.by_category.entry(Category::Wire).or_default() += wire_ns;
    }
    if tool_alone > 0.0 {
        *times
            .by_category
            .entry(Category::Instrumentation)
            .or_default() += tool_alone;
    }
    times.other = uncovered - wire_ns;
    (window, times)
}

/// Counter units of `gap` inside any of `intervals` (sorted, disjoint).
fn overlap(gap: (u64, u64), intervals: &[(u64, u64)]) -> u64 {
    intervals
        .iter()
        .map(|&(start, end)| gap.1.min(end).saturating_sub(gap.0.max(start)))
        .sum()
}

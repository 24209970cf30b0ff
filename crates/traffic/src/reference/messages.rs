//! Traced single messages on the reference stack: the IPv6 study's
//! measurement (`000_…` §4.3, ch. 5), over TCP, UDP or an XTP association
//! (socket interface). The sender writes one message of
//! each size at a time and waits until the receiver's application has it
//! whole before the next, so every message crosses an idle stack and its
//! start and stop latency are its own. Both sockets are traced; the run
//! returns every host thread's probe records with the message boundaries
//! (`app.message.send` / `app.message.received`) for the analysis.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use probe::Flow;
use stack::iface::host::{Host, UdpHandle, XtpError};
use stack::probes::{APP_MESSAGE_RECEIVED, APP_MESSAGE_SEND};
use stack::runner::threaded::{
    self, wake_peers, Poll, Progress, RunOptions, Workload, WorkloadFactory,
};
use stack::socket::udp::UdpConfig;
use stack::topology::Topology;

use super::hosts;
use super::net::{address_of, HostStream};
use crate::affinity::{Placement, SideCpus};
use crate::cpu::{CpuMeter, CpuUsage};
use crate::error::TrafficError;
use crate::spec::{Family, Protocol, XtpOptions};
use crate::transport::{Read, StreamOptions, StreamProtocol, Transport};

/// What to send.
#[derive(Debug, Clone)]
pub struct MessagesSpec {
    /// TCP, UDP or XTP (an association through the socket interface).
    pub protocol: Protocol,
    pub family: Family,
    /// Message sizes in bytes, in the order they are sent: `reps` rounds,
    /// each sending every size once.
    pub sizes: Vec<usize>,
    pub reps: u32,
    /// TCP's or XTP's send and receive buffers (the default is 4 MiB
    /// each way).
    pub sockbuf: Option<usize>,
    pub port: u16,
    /// How long the sender waits for the receiver to have a message
    /// before counting it lost and going on.
    pub wait: Duration,
    /// Records each host thread's ring holds.
    pub trace_capacity: usize,
    /// What records: `all` also catches what a traced flow's option does
    /// not mark (an IPv6 datagram's later fragments carry it only once
    /// reassembled: the option sits in the fragmentable part, RFC 8200
    /// §4.5), `traced_flows` only the two sockets' flows.
    pub gate: probe::Mode,
    /// Writes every interface's pcapng capture into this directory.
    pub pcap_dir: Option<std::path::PathBuf>,
    /// Messages of the largest size sent first and left out of the
    /// figures: the first messages pay for cold caches and a congestion
    /// window still opening.
    pub warmup: u32,
    /// Counts messages as they finish (for a progress bar).
    pub progress: Option<Arc<AtomicU64>>,
    /// How the host threads wait: [`Poll::Block`] makes their CPU time
    /// the work done, so a CPU share of wall time means load (the lab's
    /// CPU-share tables); [`Poll::Spin`] gives the lowest latency.
    pub poll: Poll,
    /// Pins the receiver's host thread and the sender's to these CPUs
    /// (a run under a load on one side); `None` leaves them to the
    /// scheduler.
    pub cpus: Option<SideCpus>,
}

/// Largest UDP message: a datagram's payload over IPv6 without jumbograms.
pub const MAX_MESSAGE: usize = 65_527;
/// Largest TCP or XTP message: a stream has no datagram limit; 16 MiB
/// keeps the sender's pattern buffer bounded.
pub const MAX_TCP_MESSAGE: usize = 16 << 20;

impl MessagesSpec {
    /// `sizes` over `protocol` and IPv6, `reps` times each after one
    /// warm-up message, every probe recording into rings of
    /// `trace_capacity` records; port 5001, 10 s to wait for each message,
    /// the 4 MiB default buffers, no capture, spin-then-block. Change the
    /// fields for anything else.
    pub fn new(protocol: Protocol, sizes: Vec<usize>, reps: u32, trace_capacity: usize) -> Self {
        Self {
            protocol,
            family: Family::V6,
            sizes,
            reps,
            sockbuf: None,
            port: 5001,
            wait: Duration::from_secs(10),
            trace_capacity,
            gate: probe::Mode::All,
            pcap_dir: None,
            warmup: 1,
            progress: None,
            poll: Poll::Spin,
            cpus: None,
        }
    }

    /// Refuses what cannot run, in words.
    pub fn validate(&self) -> Result<(), TrafficError> {
        if self.protocol == Protocol::Raw {
            return Err(TrafficError::Invalid(
                "traced messages run over TCP, UDP or XTP".into(),
            ));
        }
        if self.sizes.is_empty() || self.reps == 0 {
            return Err(TrafficError::Invalid(
                "traced messages need at least one size and one repetition".into(),
            ));
        }
        let max = match (self.protocol, self.family) {
            (Protocol::Udp, Family::V4) => 65_507,
            (p, _) if p.is_stream() => MAX_TCP_MESSAGE,
            _ => MAX_MESSAGE,
        };
        if let Some(&bad) = self.sizes.iter().find(|&&s| s == 0 || s > max) {
            return Err(TrafficError::Invalid(format!(
                "message size {bad} is outside 1..={max} for {:?} over {}",
                self.protocol, self.family
            )));
        }
        Ok(())
    }

    fn messages(&self) -> u64 {
        self.sizes.len() as u64 * u64::from(self.reps) + u64::from(self.warmup)
    }

    /// Every message in sending order: (size, repetition, warm-up).
    ///
    /// Rounds over the sizes rather than each size's repetitions in a
    /// row: a disturbance of a few milliseconds (another thread's burst,
    /// a page fault) then lands on one repetition of several sizes, which
    /// their spread shows, instead of on every repetition of one size,
    /// which it hides (two full labs differed only in one UDP size whose
    /// three back-to-back messages all started 3 µs late in one run).
    fn plan(&self) -> Vec<(usize, u32, bool)> {
        let largest = self.sizes.iter().copied().max().unwrap_or(1);
        let sizes = &self.sizes;
        (0..self.warmup)
            .map(|rep| (largest, rep, true))
            .chain((0..self.reps).flat_map(|rep| sizes.iter().map(move |&size| (size, rep, false))))
            .collect()
    }
}

/// One message as the application saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageOutcome {
    /// Its number (`aux` of its `app.message.*` records).
    pub index: u64,
    pub size: usize,
    pub rep: u32,
    /// The receiver had it whole before the wait ran out.
    pub delivered: bool,
    /// A warm-up message, not part of the figures.
    pub warmup: bool,
    /// When the application began sending it: the sender thread's runner
    /// clock (`now` of the threaded runner, ns since the run's start), the
    /// clock the pcapng captures' timestamps use.
    pub sent_at_ns: u64,
}

/// One host thread of the run.
#[derive(Debug, Clone)]
pub struct TracedThread {
    pub host: String,
    pub thread: u16,
    pub records: Vec<probe::Record>,
    pub dropped: u64,
}

/// Everything the run produced.
#[derive(Debug, Clone)]
pub struct MessagesRun {
    pub sender: String,
    pub receiver: String,
    /// The sender's socket's flow id (what its packets carry).
    pub sender_flow: u32,
    pub receiver_flow: u32,
    pub outcomes: Vec<MessageOutcome>,
    pub threads: Vec<TracedThread>,
    /// CPU of the sender's and the receiver's thread over the messages.
    pub sender_cpu: CpuUsage,
    pub receiver_cpu: CpuUsage,
    /// How the host threads waited: with [`Poll::Spin`] their CPU time
    /// includes polling with nothing to do.
    pub poll: Poll,
    pub elapsed: Duration,
    /// Where the two host threads ran, when the spec pinned them.
    pub placement: Option<Placement>,
}

impl MessagesRun {
    /// The numbers of the warm-up messages (left out of the figures).
    pub fn warmup_indices(&self) -> Vec<u64> {
        self.outcomes
            .iter()
            .filter(|o| o.warmup)
            .map(|o| o.index)
            .collect()
    }

    /// The run as a self-describing trace file: the stack's location
    /// table, every thread's records (each thread's in order), the clock
    /// and probe overhead the caller measured, and a JSON description
    /// naming each thread's host and role.
    pub fn trace(&self, counter_hz: f64, overhead_cycles: f64, run: &str) -> probe::Trace {
        let threads: serde_json::Map<String, serde_json::Value> = self
            .threads
            .iter()
            .map(|t| {
                let role = if t.host == self.sender {
                    "sender"
                } else if t.host == self.receiver {
                    "receiver"
                } else {
                    "forwarder"
                };
                (
                    t.thread.to_string(),
                    serde_json::json!({ "host": t.host, "role": role }),
                )
            })
            .collect();
        let description = serde_json::json!({
            "stack": "reference",
            "run": run,
            "threads": threads,
        });
        let records: Vec<probe::Record> = self
            .threads
            .iter()
            .flat_map(|t| t.records.iter().copied())
            .collect();
        let dropped = self.threads.iter().map(|t| t.dropped).sum();
        probe::Trace::new(
            probe::TraceHeader::new(
                counter_hz,
                overhead_cycles,
                dropped,
                description.to_string(),
            ),
            stack::probes::LOCATIONS,
            records,
        )
    }
}

/// What crosses between the two host threads.
#[derive(Default)]
struct Shared {
    receiver_addr: OnceLock<SocketAddr>,
    /// Messages the receiver has whole, counted in order.
    received: AtomicU64,
    /// Set by either side on failure or by the sender when finished.
    stop: AtomicBool,
    error: Mutex<Option<TrafficError>>,
    outcomes: Mutex<Vec<MessageOutcome>>,
    flows: Mutex<(u32, u32)>,
    cpu: Mutex<(CpuUsage, CpuUsage)>,
}

impl Shared {
    fn fail(&self, error: TrafficError) -> Progress {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(error);
        self.stop.store(true, Ordering::Release);
        wake_peers();
        Progress::Done
    }
}

/// Runs the messages between the first and last host of `topology` with
/// probes gated by `spec.gate`, and returns the records. The global
/// gate is restored afterwards.
pub fn run(topology: &Topology, spec: &MessagesSpec) -> Result<MessagesRun, TrafficError> {
    spec.validate()?;
    let ends = hosts(topology)?;
    let shared = Arc::new(Shared::default());
    let held = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
    let pin = |factory, side: Option<(usize, usize)>| match side {
        Some((cpu, slot)) => super::pinned::pinning(factory, cpu, Arc::clone(&held), slot),
        None => factory,
    };
    let mut workloads = std::collections::BTreeMap::new();
    workloads.insert(
        ends.sender.clone(),
        pin(
            sender(spec.clone(), Arc::clone(&shared)),
            spec.cpus.map(|c| (c.sender, 1)),
        ),
    );
    workloads.insert(
        ends.receiver.clone(),
        pin(
            receiver(spec.clone(), Arc::clone(&shared)),
            spec.cpus.map(|c| (c.receiver, 0)),
        ),
    );
    // Address configuration and the connection happen inside the run;
    // the limit covers them and every message's wait, generously.
    let limit = Duration::from_secs(30)
        + spec
            .wait
            .saturating_mul(u32::try_from(spec.messages()).unwrap_or(u32::MAX));
    let previous = probe::mode();
    probe::set_mode(spec.gate);
    let began = Instant::now();
    let reports = threaded::run_with(
        topology,
        Duration::ZERO,
        limit,
        workloads,
        RunOptions {
            trace_capacity: Some(spec.trace_capacity),
            pcap_dir: spec.pcap_dir.clone(),
            poll: spec.poll,
        },
    );
    let elapsed = began.elapsed();
    probe::set_mode(previous);
    let reports =
        reports.map_err(|e| TrafficError::Invalid(format!("building the network: {e}")))?;
    if let Some(error) = shared
        .error
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        return Err(error);
    }
    let outcomes = std::mem::take(&mut *shared.outcomes.lock().unwrap_or_else(|e| e.into_inner()));
    if (outcomes.len() as u64) < spec.messages() {
        return Err(TrafficError::timeout(
            limit,
            format!(
                "sending traced messages ({} of {} sent)",
                outcomes.len(),
                spec.messages()
            ),
        ));
    }
    let (sender_flow, receiver_flow) = *shared.flows.lock().unwrap_or_else(|e| e.into_inner());
    let (sender_cpu, receiver_cpu) = *shared.cpu.lock().unwrap_or_else(|e| e.into_inner());
    let threads = reports
        .into_iter()
        .filter_map(|r| {
            r.trace.map(|t| TracedThread {
                host: r.name,
                thread: t.thread,
                records: t.records,
                dropped: t.dropped,
            })
        })
        .collect();
    Ok(MessagesRun {
        sender: ends.sender,
        receiver: ends.receiver,
        sender_flow,
        receiver_flow,
        outcomes,
        threads,
        sender_cpu,
        receiver_cpu,
        poll: spec.poll,
        elapsed,
        placement: spec.cpus.map(|c| {
            c.placement(
                held[0].load(Ordering::Acquire),
                held[1].load(Ordering::Acquire),
            )
        }),
    })
}

/// The sender's socket, once it can send.
enum Socket {
    /// TCP or XTP: one sequence of calls through the host's stream
    /// interface ([`Transport`]), the protocol inside the handle.
    Stream(HostStream),
    Udp(UdpHandle, SocketAddr),
}

fn sender(spec: MessagesSpec, shared: Arc<Shared>) -> WorkloadFactory {
    Box::new(move |_host: &mut Host| -> Workload {
        let pattern: Vec<u8> = (0..spec.sizes.iter().copied().max().unwrap_or(0))
            .map(|i| (i % 251) as u8)
            .collect();
        let plan = spec.plan();
        let began = Instant::now();
        let mut socket: Option<Socket> = None;
        let mut connecting: Option<HostStream> = None;
        let mut next = 0usize;
        // The message being written: bytes taken so far, when it began.
        let mut writing: Option<(usize, Instant)> = None;
        // The runner clock when the current message began.
        let mut sent_at_ns = 0u64;
        let mut cpu: Option<CpuMeter> = None;
        Box::new(move |host: &mut Host, now: stack::time::Instant| {
            if shared.stop.load(Ordering::Acquire) {
                return Progress::Done;
            }
            let Some(sock) = socket.as_ref() else {
                if began.elapsed() > Duration::from_secs(20) {
                    return shared.fail(TrafficError::timeout(
                        Duration::from_secs(20),
                        "waiting for both hosts' addresses and the connection",
                    ));
                }
                match open(host, &spec, &shared, &mut connecting) {
                    Ok(Some(s)) => {
                        cpu = Some(CpuMeter::start());
                        socket = Some(s);
                    }
                    Ok(None) => {}
                    Err(e) => return shared.fail(e),
                }
                // The receiver's address comes by `wake_peers`, the
                // connection by frames; only the time-out is ours.
                return Progress::at(now, began + Duration::from_secs(20));
            };
            let Some(&(size, rep, warmup)) = plan.get(next) else {
                if let Some(meter) = cpu.take() {
                    shared.cpu.lock().unwrap_or_else(|e| e.into_inner()).0 = meter.stop();
                }
                shared.stop.store(true, Ordering::Release);
                wake_peers();
                return Progress::Done;
            };
            let index = next as u64;
            match writing {
                None => {
                    let flow = socket_flow(host, sock);
                    probe::record(APP_MESSAGE_SEND, size as u32, flow, index);
                    sent_at_ns = now.as_nanos();
                    writing = Some((0, Instant::now()));
                    if let Err(e) = write_some(host, sock, &pattern[..size], &mut writing) {
                        return shared.fail(e);
                    }
                }
                Some((taken, since)) if taken < size => {
                    if since.elapsed() > spec.wait {
                        return shared.fail(TrafficError::timeout(
                            spec.wait,
                            format!("writing message {index} ({size} bytes)"),
                        ));
                    }
                    if let Err(e) = write_some(host, sock, &pattern[..size], &mut writing) {
                        return shared.fail(e);
                    }
                }
                Some((_, since)) => {
                    let delivered = shared.received.load(Ordering::Acquire) > index;
                    let timed_out = since.elapsed() > spec.wait;
                    if delivered || timed_out {
                        // A stream loses nothing: a message not there in
                        // time is a broken run, not a lost datagram.
                        if timed_out && spec.protocol.is_stream() {
                            return shared.fail(TrafficError::timeout(
                                spec.wait,
                                format!("the receiver reading message {index} ({size} bytes)"),
                            ));
                        }
                        shared
                            .outcomes
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(MessageOutcome {
                                index,
                                size,
                                rep,
                                delivered,
                                warmup,
                                sent_at_ns,
                            });
                        if !delivered {
                            // A lost datagram: the receiver counts from here.
                            shared.received.store(index + 1, Ordering::Release);
                        }
                        writing = None;
                        next += 1;
                        if let Some(progress) = &spec.progress {
                            progress.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            match writing {
                // The next message goes at once.
                None => Progress::Running { next: Some(now) },
                // Delivery comes by `wake_peers`, room in the send queue
                // by frames; the message's time-out is ours.
                Some((_, since)) => Progress::at(now, since + spec.wait),
            }
        })
    })
}

/// Opens the sender's socket once both ends have addresses.
fn open(
    host: &mut Host,
    spec: &MessagesSpec,
    shared: &Shared,
    connecting: &mut Option<HostStream>,
) -> Result<Option<Socket>, TrafficError> {
    let (Some(_), Some(&dest)) = (address_of(host, spec.family), shared.receiver_addr.get()) else {
        return Ok(None);
    };
    match stream_options(spec) {
        Some(options) => {
            let stream = match *connecting {
                Some(s) => s,
                None => {
                    let s = Transport::connect(host, dest, options)?;
                    trace(host, s)?;
                    *connecting = Some(s);
                    s
                }
            };
            if !Transport::established(host, stream)? {
                return Ok(None);
            }
            shared.flows.lock().unwrap_or_else(|e| e.into_inner()).0 = stream_flow(host, stream).id;
            Ok(Some(Socket::Stream(stream)))
        }
        None => {
            let handle = host.udp_open(UdpConfig::default());
            host.udp(handle).set_traced(true);
            host.udp_bind(handle, SocketAddr::new(spec.family.unspecified(), 0));
            shared.flows.lock().unwrap_or_else(|e| e.into_inner()).0 = host.udp(handle).flow().id;
            Ok(Some(Socket::Udp(handle, dest)))
        }
    }
}

fn socket_flow(host: &mut Host, socket: &Socket) -> Flow {
    match *socket {
        Socket::Stream(s) => stream_flow(host, s),
        Socket::Udp(h, _) => host.udp(h).flow(),
    }
}

/// The stream settings of a TCP or XTP run (`None` for UDP): the run's
/// buffers, Nagle off, XTP's socket interface with its default modes.
///
/// Nagle off: with it on, a message's first segment would wait for the
/// ACK of the previous message's last one, and the start latency would
/// measure the peer's delayed-ACK timer instead of the stack.
fn stream_options(spec: &MessagesSpec) -> Option<StreamOptions> {
    let protocol = match spec.protocol {
        Protocol::Tcp => StreamProtocol::Tcp,
        Protocol::Xtp => StreamProtocol::Xtp,
        Protocol::Udp | Protocol::Raw => return None,
    };
    Some(StreamOptions {
        protocol,
        xtp: XtpOptions::default(),
        buffer: spec.sockbuf,
        nodelay: true,
        congestion: None,
    })
}

/// Traces a stream socket (`SO_LOG`): its probes record under a traced
/// flow and its packets carry the trace option. A TCP listener hands the
/// mark to its connections; an XTP listener takes none, its associations
/// are marked when accepted.
fn trace(host: &mut Host, stream: HostStream) -> Result<(), TrafficError> {
    let failed = |e: String| TrafficError::Invalid(format!("trace: {e}"));
    match stream {
        HostStream::Tcp(h) => host
            .tcp_set_traced(h, true)
            .map_err(|e| failed(e.to_string())),
        HostStream::Xtp(h) | HostStream::XtpDriver(h) => match host.xtp_set_traced(h, true) {
            Ok(()) | Err(XtpError::IsListener) => Ok(()),
            Err(e) => Err(failed(e.to_string())),
        },
    }
}

/// A connection's or association's flow (what its probes record).
fn stream_flow(host: &Host, stream: HostStream) -> Flow {
    match stream {
        HostStream::Tcp(h) => host.tcp_connection(h).map(|c| c.flow()),
        HostStream::Xtp(h) | HostStream::XtpDriver(h) => host.xtp_association(h).map(|a| a.flow()),
    }
    .unwrap_or(Flow::untraced(0))
}

/// Writes what the socket takes of the current message.
fn write_some(
    host: &mut Host,
    socket: &Socket,
    message: &[u8],
    writing: &mut Option<(usize, Instant)>,
) -> Result<(), TrafficError> {
    let Some((taken, _)) = writing.as_mut() else {
        return Ok(());
    };
    match *socket {
        // A full send buffer takes nothing (0) and empties as
        // acknowledgements come.
        Socket::Stream(s) => *taken += Transport::send(host, s, &message[*taken..])?,
        Socket::Udp(h, dest) => match host.udp_send_to(h, message, dest) {
            Ok(()) => *taken = message.len(),
            // A full send queue empties at the next poll.
            Err(stack::socket::SendError::QueueFull) => {}
            Err(e) => return Err(TrafficError::Invalid(format!("UDP send to {dest}: {e}"))),
        },
    }
    Ok(())
}

fn receiver(spec: MessagesSpec, shared: Arc<Shared>) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let local = SocketAddr::new(spec.family.unspecified(), spec.port);
        enum Side {
            Listening(HostStream),
            Stream(HostStream),
            Udp(UdpHandle),
        }
        let side = match stream_options(&spec) {
            Some(options) => {
                match Transport::listen(host, local, options)
                    .and_then(|l| trace(host, l).map(|()| l))
                {
                    Ok(l) => Side::Listening(l),
                    Err(e) => return fail_factory(&shared, e),
                }
            }
            None => {
                let h = host.udp_open(UdpConfig {
                    recv_queue_bytes: 4 << 20,
                    ..UdpConfig::default()
                });
                host.udp(h).set_traced(true);
                host.udp_bind(h, local);
                shared.flows.lock().unwrap_or_else(|e| e.into_inner()).1 = host.udp(h).flow().id;
                Side::Udp(h)
            }
        };
        let mut side = side;
        let sizes: Vec<usize> = spec.plan().into_iter().map(|(size, _, _)| size).collect();
        let mut buf = vec![0u8; MAX_MESSAGE.max(64 * 1024)];
        // Bytes of the current message read so far (a stream).
        let mut have = 0usize;
        let mut cpu: Option<CpuMeter> = None;
        Box::new(move |host: &mut Host, _now| {
            if shared.stop.load(Ordering::Acquire) {
                if let Some(meter) = cpu.take() {
                    shared.cpu.lock().unwrap_or_else(|e| e.into_inner()).1 = meter.stop();
                }
                return Progress::Done;
            }
            if shared.receiver_addr.get().is_none() {
                if let Some(ip) = address_of(host, spec.family) {
                    let _ = shared.receiver_addr.set(SocketAddr::new(ip, spec.port));
                    wake_peers();
                }
            }
            let expected = shared.received.load(Ordering::Acquire);
            let Some(&size) = sizes.get(expected as usize) else {
                return Progress::WAITING;
            };
            match &mut side {
                Side::Listening(l) => match Transport::accept(host, *l) {
                    Ok(Some(conn)) => {
                        if let Err(e) = trace(host, conn) {
                            return shared.fail(e);
                        }
                        shared.flows.lock().unwrap_or_else(|e| e.into_inner()).1 =
                            stream_flow(host, conn).id;
                        cpu = Some(CpuMeter::start());
                        side = Side::Stream(conn);
                    }
                    Ok(None) => {}
                    Err(e) => return shared.fail(e),
                },
                Side::Stream(conn) => loop {
                    // A message larger than the buffer is read in pieces.
                    let want = (size - have).min(buf.len());
                    match Transport::recv(host, *conn, &mut buf[..want]) {
                        Ok(Read::End) => {
                            return shared.fail(TrafficError::Invalid(
                                "the sender closed the connection early".into(),
                            ))
                        }
                        Ok(Read::Data(n)) => {
                            have += n;
                            if have == size {
                                have = 0;
                                let flow = stream_flow(host, *conn);
                                probe::record(APP_MESSAGE_RECEIVED, size as u32, flow, expected);
                                shared.received.store(expected + 1, Ordering::Release);
                                wake_peers();
                                break;
                            }
                        }
                        Ok(Read::Nothing) => break,
                        Err(e) => return shared.fail(e),
                    }
                },
                Side::Udp(h) => {
                    if cpu.is_none() {
                        cpu = Some(CpuMeter::start());
                    }
                    while let Some((n, _)) = host.udp(*h).recv_from(&mut buf) {
                        // Only the expected size counts: a late copy of a
                        // message given up on is not the next one.
                        let now_expected = shared.received.load(Ordering::Acquire);
                        if sizes.get(now_expected as usize) == Some(&n) {
                            let flow = host.udp(*h).flow();
                            probe::record(APP_MESSAGE_RECEIVED, n as u32, flow, now_expected);
                            shared.received.store(now_expected + 1, Ordering::Release);
                            wake_peers();
                        }
                    }
                }
            }
            Progress::WAITING
        })
    })
}

fn fail_factory(shared: &Arc<Shared>, error: TrafficError) -> Workload {
    shared.fail(error);
    Box::new(|_, _| Progress::Done)
}

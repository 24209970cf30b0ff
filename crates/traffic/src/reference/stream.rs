//! TCP on the reference stack, as workloads of the threaded runner: the
//! ttcp transfer (the sender writes `count` buffers of `len` pattern
//! bytes, the receiver checks every byte until the sender's FIN) and the
//! delay mode's echo (one `len`-byte request at a time, answered whole).
//! The same checks and figures as the kernel target (`kernel::stream`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stack::iface::host::{Host, TcpError, TcpHandle};
use stack::runner::threaded::{Progress, Workload, WorkloadFactory};
use stack::socket::tcp::congestion::Algorithm;
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;

use super::datagrams::{failed, unspecified, PeerAddr, ADDRESS_GRACE};
use super::{address_of, Outcome, Shared};
use crate::cpu::{CpuMeter, CpuUsage};
use crate::env::GrantedBuffers;
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pattern::Pattern;
use crate::report::{Received, ReceiverSide, SenderSide};
use crate::spec::TransferSpec;
use crate::verify::StreamVerifier;

/// Socket buffers when `-b` is not given: 4 MiB each way, enough for the
/// default network's bandwidth-delay product many times over (the kernel
/// autotunes to similar sizes).
pub(super) const DEFAULT_BUFFER: usize = 4 << 20;

/// The connection settings for a spec: `-b` sizes both buffers, `-D`
/// turns Nagle off. Returns what that grants, for the run record.
pub(super) fn tcp_config(spec: &TransferSpec) -> (TcpConfig, GrantedBuffers) {
    let size = spec.sockbuf.unwrap_or(DEFAULT_BUFFER);
    let config = TcpConfig {
        send_buffer: size,
        recv_buffer: size,
        nodelay: spec.nodelay,
        ..TcpConfig::default()
    };
    let granted = GrantedBuffers {
        send: Some(size),
        recv: Some(size),
    };
    (config, granted)
}

/// The congestion control's name as Linux spells it.
pub(super) fn algorithm_name(config: &TcpConfig) -> &'static str {
    match config.congestion.algorithm {
        Algorithm::Cubic => "cubic",
        Algorithm::NewReno => "reno",
    }
}

/// Records a side's outcome; the workload is done.
pub(super) fn finish<T>(
    slot: &std::sync::Mutex<Option<Result<T, TrafficError>>>,
    result: Result<T, TrafficError>,
) -> Progress {
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    stack::runner::threaded::wake_peers();
    Progress::Done
}

pub(super) fn stack_error(what: &str, e: TcpError) -> TrafficError {
    TrafficError::Invalid(format!("{what}: {e}"))
}

/// Listens on the spec's port; once the host has an address of the
/// family, publishes it for the peer. `Ok(None)` while waiting.
pub(super) struct Listening {
    listener: TcpHandle,
    began: Instant,
}

impl Listening {
    pub(super) fn open(
        host: &mut Host,
        spec: &TransferSpec,
        config: TcpConfig,
    ) -> Result<Self, TrafficError> {
        let local = SocketAddr::new(unspecified(spec.family), spec.port);
        let listener = host
            .tcp_listen(local, config, ListenerConfig::default())
            .map_err(|e| stack_error(&format!("{}: listen on {local}", host.name()), e))?;
        Ok(Self {
            listener,
            began: Instant::now(),
        })
    }

    /// Publishes the address once there is one, then accepts.
    pub(super) fn accept<S, R>(
        &mut self,
        host: &mut Host,
        spec: &TransferSpec,
        outcome: &Outcome<S, R>,
    ) -> Result<Option<TcpHandle>, TrafficError> {
        if outcome.receiver_addr.get().is_none() {
            if let Some(ip) = address_of(host, spec.family) {
                let _ = outcome
                    .receiver_addr
                    .set(PeerAddr::Ip(SocketAddr::new(ip, spec.port)));
                stack::runner::threaded::wake_peers();
            }
        }
        match host.tcp_accept(self.listener) {
            Ok(conn) => {
                let _ = host.tcp_close(self.listener);
                Ok(Some(conn))
            }
            Err(TcpError::WouldBlock) => {
                if self.began.elapsed() > spec.timeout + ADDRESS_GRACE {
                    return Err(TrafficError::timeout(
                        spec.timeout + ADDRESS_GRACE,
                        "waiting for the sender to connect",
                    ));
                }
                Ok(None)
            }
            Err(e) => Err(stack_error("accept", e)),
        }
    }
}

/// Connects to the published address once the own host has one too.
pub(super) struct Connecting {
    since: Instant,
    handle: Option<TcpHandle>,
}

impl Connecting {
    pub(super) fn new() -> Self {
        Self {
            since: Instant::now(),
            handle: None,
        }
    }

    /// `Some` once established.
    pub(super) fn step<S, R>(
        &mut self,
        host: &mut Host,
        spec: &TransferSpec,
        config: TcpConfig,
        outcome: &Outcome<S, R>,
    ) -> Result<Option<TcpHandle>, TrafficError> {
        let limit = spec.timeout + ADDRESS_GRACE;
        if self.since.elapsed() > limit {
            return Err(TrafficError::timeout(
                limit,
                format!("connecting over {} to the receiving host", spec.family),
            ));
        }
        let Some(handle) = self.handle else {
            let own = address_of(host, spec.family);
            if let (Some(_), Some(&PeerAddr::Ip(dest))) = (own, outcome.receiver_addr.get()) {
                let handle = host
                    .tcp_connect(dest, config)
                    .map_err(|e| stack_error(&format!("connect to {dest}"), e))?;
                self.handle = Some(handle);
            }
            return Ok(None);
        };
        let ready = host
            .tcp_readiness(handle)
            .map_err(|e| stack_error("connect", e))?;
        if let Some(e) = ready.error {
            return Err(TrafficError::Invalid(format!(
                "connect: {e} (is the receiver listening?)"
            )));
        }
        Ok(ready.established.then_some(handle))
    }
}

/// The receiving side of a transfer.
pub(super) fn receiver(
    spec: TransferSpec,
    config: TcpConfig,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let mut listening = match Listening::open(host, &spec, config) {
            Ok(l) => l,
            Err(e) => return failed(&outcome.receiver, e),
        };
        let mut conn: Option<TcpHandle> = None;
        let mut buf = vec![0u8; spec.len.max(64 * 1024)];
        let mut verifier = StreamVerifier::new();
        let mut cpu: Option<CpuMeter> = None;
        let mut first: Option<Instant> = None;
        let mut last = Instant::now();
        Box::new(move |host: &mut Host, _now| {
            if outcome.failed() {
                return Progress::Done;
            }
            let handle = match conn {
                Some(h) => h,
                None => match listening.accept(host, &spec, &outcome) {
                    Ok(Some(h)) => {
                        conn = Some(h);
                        cpu = Some(CpuMeter::start());
                        last = Instant::now();
                        h
                    }
                    Ok(None) => return Progress::WAITING,
                    Err(e) => return finish(&outcome.receiver, Err(e)),
                },
            };
            loop {
                match host.tcp_recv(handle, &mut buf) {
                    Ok(0) => {
                        let _ = host.tcp_close(handle);
                        let cpu = cpu.take().map_or(CpuUsage::default(), |c| c.stop());
                        let counts = verifier.finish(&pattern);
                        let good = counts.bytes - counts.corrupted_bytes - counts.duplicated_bytes;
                        return finish(
                            &outcome.receiver,
                            Ok(ReceiverSide {
                                bytes: good,
                                elapsed: first.map_or(Duration::ZERO, |f| last - f),
                                cpu,
                                checks: Received::Stream(counts),
                                drops: None,
                            }),
                        );
                    }
                    Ok(n) => {
                        last = Instant::now();
                        first.get_or_insert(last);
                        verifier.check(&pattern, &buf[..n]);
                        meter.add_received(n as u64);
                    }
                    Err(TcpError::WouldBlock) => break,
                    Err(e) => return finish(&outcome.receiver, Err(stack_error("receive", e))),
                }
            }
            if last.elapsed() > spec.timeout {
                return finish(
                    &outcome.receiver,
                    Err(TrafficError::timeout(
                        spec.timeout,
                        format!(
                            "waiting for data ({} of {} bytes received)",
                            verifier.counts().bytes,
                            spec.total_bytes()
                        ),
                    )),
                );
            }
            Progress::WAITING
        })
    })
}

/// Where the sender is.
enum Sending {
    Connecting(Connecting),
    Writing {
        conn: TcpHandle,
        offset: u64,
        started: Instant,
        cpu: CpuMeter,
        stalled_since: Option<Instant>,
    },
    /// Everything written; waiting until the receiver has acknowledged
    /// it all (the end of iperf3's sender window).
    Draining {
        conn: TcpHandle,
        offset: u64,
        started: Instant,
        cpu: CpuMeter,
        since: Instant,
    },
    /// Our FIN is queued; waiting for the receiver's close.
    Closing {
        conn: TcpHandle,
        side: SenderSide,
        since: Instant,
    },
}

/// The sending side of a transfer.
pub(super) fn sender(
    spec: TransferSpec,
    config: TcpConfig,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |_host: &mut Host| -> Workload {
        let total = spec.total_bytes();
        let mut state = Sending::Connecting(Connecting::new());
        let mut sink = [0u8; 64];
        Box::new(move |host: &mut Host, now| {
            if outcome.failed() {
                return Progress::Done;
            }
            match &mut state {
                Sending::Connecting(connecting) => {
                    match connecting.step(host, &spec, config, &outcome) {
                        Ok(Some(conn)) => {
                            state = Sending::Writing {
                                conn,
                                offset: 0,
                                started: Instant::now(),
                                cpu: CpuMeter::start(),
                                stalled_since: None,
                            };
                            // Writing starts at once.
                            return Progress::Running { next: Some(now) };
                        }
                        Ok(None) => {}
                        Err(e) => return finish(&outcome.sender, Err(e)),
                    }
                }
                Sending::Writing {
                    conn,
                    offset,
                    started,
                    cpu,
                    stalled_since,
                } => {
                    let conn = *conn;
                    // Whole `len`-byte writes at pattern offsets, as the
                    // kernel target's write_all; a partial take continues
                    // mid-buffer at the next turn.
                    // At least `total` bytes, and on until the minimum
                    // duration has passed, in whole writes.
                    let writes = |offset: u64| offset.div_ceil(spec.len as u64);
                    while *offset < total
                        || (*offset % spec.len as u64 != 0)
                        || spec.keep_sending(writes(*offset), started.elapsed())
                    {
                        let in_buffer = (*offset % spec.len as u64) as usize;
                        let data = pattern.at(*offset, spec.len - in_buffer);
                        match host.tcp_send(conn, data) {
                            Ok(n) => {
                                *offset += n as u64;
                                meter.add_sent(n as u64);
                                *stalled_since = None;
                            }
                            Err(TcpError::WouldBlock) => {
                                let since = *stalled_since.get_or_insert_with(Instant::now);
                                if since.elapsed() > spec.timeout {
                                    return finish(
                                        &outcome.sender,
                                        Err(TrafficError::timeout(
                                            spec.timeout,
                                            format!(
                                                "sending: the receiver stopped reading after \
                                                 {offset} bytes"
                                            ),
                                        )),
                                    );
                                }
                                return Progress::WAITING;
                            }
                            Err(e) => {
                                return finish(
                                    &outcome.sender,
                                    Err(stack_error(&format!("send (after {offset} bytes)"), e)),
                                )
                            }
                        }
                    }
                    state = Sending::Draining {
                        conn,
                        offset: *offset,
                        started: *started,
                        cpu: *cpu,
                        since: Instant::now(),
                    };
                }
                Sending::Draining {
                    conn,
                    offset,
                    started,
                    cpu,
                    since,
                } => {
                    let conn = *conn;
                    let queued = host.tcp_connection(conn).map_or(0, |c| c.send_queued());
                    if queued > 0 {
                        if since.elapsed() > spec.timeout {
                            return finish(
                                &outcome.sender,
                                Err(TrafficError::timeout(
                                    spec.timeout,
                                    "waiting for the receiver to acknowledge the last bytes",
                                )),
                            );
                        }
                        // The acknowledgements arrive as frames, which wake
                        // the host.
                        return Progress::WAITING;
                    }
                    let side = SenderSide {
                        bytes: *offset,
                        datagrams: 0,
                        elapsed: started.elapsed(),
                        cpu: cpu.stop(),
                        retransmits: None,
                    };
                    if let Err(e) = host.tcp_shutdown(conn) {
                        return finish(&outcome.sender, Err(stack_error("shutdown", e)));
                    }
                    state = Sending::Closing {
                        conn,
                        side,
                        since: Instant::now(),
                    };
                    return Progress::Running { next: Some(now) };
                }
                Sending::Closing { conn, side, since } => {
                    let conn = *conn;
                    match host.tcp_recv(conn, &mut sink) {
                        Ok(0) | Err(TcpError::Connection(_)) => {
                            let mut side = side.clone();
                            // Counted to the end: retransmissions go on
                            // after the last write.
                            side.retransmits = host
                                .tcp_connection(conn)
                                .map(|c| c.counters().segments_retransmitted);
                            let _ = host.tcp_close(conn);
                            return finish(&outcome.sender, Ok(side));
                        }
                        Ok(_) | Err(TcpError::WouldBlock) => {}
                        Err(e) => return finish(&outcome.sender, Err(stack_error("close", e))),
                    }
                    if since.elapsed() > spec.timeout {
                        return finish(
                            &outcome.sender,
                            Err(TrafficError::timeout(
                                spec.timeout,
                                "waiting for the receiver to close",
                            )),
                        );
                    }
                }
            }
            Progress::WAITING
        })
    })
}

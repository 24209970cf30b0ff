//! Delay mode on the reference stack: the client host sends one echo
//! datagram (UDP, or a link-level frame to its neighbour) at a time and
//! times the answer the server host returns (TCP: `stream_echo`). Both run as workloads of the
//! threaded runner, on the real clock.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stack::iface::host::Host;
use stack::runner::threaded::{self, Progress, Workload, WorkloadFactory};

use super::datagrams::{failed, PeerAddr, Transport, ADDRESS_GRACE};
use super::{plan, take, Outcome};
use crate::datagram::{self, Kind};
use crate::echo::{answer_wait, EchoReport};
use crate::error::TrafficError;
use crate::kernel::pattern_for;
use crate::pattern::Pattern;
use crate::spec::{EchoSpec, Protocol, TransferSpec};

/// The client's result: round trips, lost and corrupted answers.
pub(super) type ClientResult = (Vec<u64>, u64, u64);
pub(super) type Shared = Arc<Outcome<ClientResult, ()>>;

/// Runs `spec.count` exchanges between the topology's first and last host
/// (UDP) or the first host and its neighbour (raw).
pub fn run_pair(spec: &EchoSpec, topology: Option<&Path>) -> Result<EchoReport, TrafficError> {
    spec.validate()?;
    let topology = super::load(topology)?;
    let (ends, mut target) = plan(spec.protocol, spec.len, &topology)?;
    let transfer = spec.as_transfer();
    let pattern = Arc::new(pattern_for(spec.len));
    let outcome: Shared = Arc::new(Outcome::default());
    let (server, client) = if spec.protocol == Protocol::Tcp {
        // Nagle off on both ends, as the kernel target sets TCP_NODELAY.
        let (config, granted) = super::stream::tcp_config(&TransferSpec {
            nodelay: true,
            ..transfer.clone()
        });
        target.sockbuf_granted = granted;
        target.congestion_control = Some(super::stream::algorithm_name(&config).into());
        (
            super::stream_echo::server(transfer.clone(), config, outcome.clone()),
            super::stream_echo::client(spec.clone(), config, pattern, outcome.clone()),
        )
    } else {
        let (transport, granted) = Transport::for_spec(&transfer);
        target.sockbuf_granted = granted;
        (
            server(
                transfer.clone(),
                transport,
                ends.receiver_interface.clone(),
                outcome.clone(),
            ),
            client(
                spec.clone(),
                transport,
                ends.sender_interface.clone(),
                pattern,
                outcome.clone(),
            ),
        )
    };
    let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
    workloads.insert(ends.receiver.clone(), super::with_timeouts(server));
    workloads.insert(ends.sender.clone(), super::with_timeouts(client));
    threaded::run(
        &topology,
        Duration::ZERO,
        Duration::from_secs(24 * 3600),
        workloads,
    )
    .map_err(|e| TrafficError::Invalid(format!("the network did not start: {e}")))?;
    let served = take(&outcome.receiver, "echo server");
    let (rtt_ns, lost, corrupted) = take(&outcome.sender, "echo client")?;
    served?;
    Ok(EchoReport {
        spec: spec.clone(),
        target,
        rtt_ns,
        lost,
        corrupted,
    })
}

fn server(
    spec: TransferSpec,
    transport: Transport,
    interface: String,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let channel = match transport.open(host, &spec, &interface, true) {
            Ok(channel) => channel,
            Err(e) => return failed(&outcome.receiver, e),
        };
        let began = Instant::now();
        let mut buf = vec![0u8; 65_536];
        Box::new(move |host: &mut Host, _now| {
            if outcome.rendezvous.receiver().is_none() {
                match channel.address(host, &spec, &interface) {
                    Some(addr) => {
                        outcome.rendezvous.publish(addr);
                        stack::runner::threaded::wake_peers();
                    }
                    None if began.elapsed() > spec.timeout + ADDRESS_GRACE => {
                        return finish(
                            &outcome.receiver,
                            Err(TrafficError::timeout(
                                spec.timeout + ADDRESS_GRACE,
                                "waiting for the echo server's host to get an address",
                            )),
                        )
                    }
                    None => return Progress::WAITING,
                }
            }
            while let Some((n, from)) = channel.recv(host, &mut buf) {
                // Echo anything, damaged or not: the client judges. A
                // full send queue drops the answer, which the client then
                // counts as lost.
                let _ = channel.send(host, &buf[..n], from);
            }
            // The client is done (or failed): so is the server.
            if outcome
                .sender
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some()
            {
                return finish(&outcome.receiver, Ok(()));
            }
            Progress::WAITING
        })
    })
}

fn finish<T>(
    slot: &std::sync::Mutex<Option<Result<T, TrafficError>>>,
    result: Result<T, TrafficError>,
) -> Progress {
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    stack::runner::threaded::wake_peers();
    Progress::Done
}

/// Where the client is.
enum State {
    WaitingForPeer {
        since: Instant,
    },
    /// Exchange `seq` is outstanding since `sent` (None: not yet sent,
    /// the send queue was full).
    Exchange {
        dest: PeerAddr,
        seq: u64,
        sent: Option<Instant>,
    },
}

fn client(
    echo: EchoSpec,
    transport: Transport,
    interface: String,
    pattern: Arc<Pattern>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let spec = echo.as_transfer();
        let channel = match transport.open(host, &spec, &interface, false) {
            Ok(channel) => channel,
            Err(e) => return failed(&outcome.sender, e),
        };
        let wait = answer_wait(&echo);
        let mut state = State::WaitingForPeer {
            since: Instant::now(),
        };
        let mut request = vec![0u8; spec.len];
        let mut answer = vec![0u8; 65_536];
        let mut rtts = Vec::with_capacity(spec.count as usize);
        let (mut lost, mut corrupted) = (0u64, 0u64);
        Box::new(move |host: &mut Host, runner_now| {
            if outcome.failed() {
                return finish(&outcome.sender, Ok((Vec::new(), 0, 0)));
            }
            match &mut state {
                State::WaitingForPeer { since } => {
                    let own = channel.address(host, &spec, &interface);
                    match (own, outcome.rendezvous.receiver()) {
                        (Some(_), Some(dest)) => {
                            state = State::Exchange {
                                dest,
                                seq: 0,
                                sent: None,
                            }
                        }
                        _ if since.elapsed() > spec.timeout + ADDRESS_GRACE => {
                            return finish(
                                &outcome.sender,
                                Err(TrafficError::timeout(
                                    spec.timeout + ADDRESS_GRACE,
                                    "waiting for both hosts to get an address",
                                )),
                            )
                        }
                        _ => {}
                    }
                }
                State::Exchange { dest, seq, sent } => {
                    if *seq == spec.count {
                        let result = (std::mem::take(&mut rtts), lost, corrupted);
                        return finish(&outcome.sender, Ok(result));
                    }
                    let Some(at) = *sent else {
                        datagram::write(&mut request, Kind::Echo, *seq, 0, &pattern);
                        let now = Instant::now();
                        if channel.send(host, &request, *dest).is_ok() {
                            *sent = Some(now);
                            // The answer comes by frame; a lost one is
                            // given up on at `wait`.
                            return Progress::at(runner_now, now + wait);
                        }
                        // A full send queue drains at the next poll.
                        return Progress::WAITING;
                    };
                    while let Some((n, _from)) = channel.recv(host, &mut answer) {
                        let elapsed = at.elapsed();
                        match datagram::check(&answer[..n], &pattern) {
                            Ok(h) if h.kind == Kind::Echo && h.seq == *seq && n == spec.len => {
                                rtts.push(elapsed.as_nanos() as u64);
                                *seq += 1;
                                *sent = None;
                                // The next exchange starts at once.
                                return Progress::Running {
                                    next: Some(runner_now),
                                };
                            }
                            // A late answer to an earlier exchange.
                            Ok(h) if h.kind == Kind::Echo && h.seq < *seq => {}
                            _ => corrupted += 1,
                        }
                    }
                    if at.elapsed() > wait {
                        lost += 1;
                        *seq += 1;
                        *sent = None;
                        return Progress::Running {
                            next: Some(runner_now),
                        };
                    }
                    return Progress::at(runner_now, at + wait);
                }
            }
            Progress::WAITING
        })
    })
}

//! Delay mode over TCP on the reference stack: one connection, the client
//! writes a `len`-byte request and times until the whole echo is back;
//! the server writes back whatever it reads. Both turn Nagle off, as the
//! kernel target does, so a request never waits for an ACK.

use std::sync::Arc;
use std::time::Instant;

use stack::iface::host::{Host, TcpError, TcpHandle};
use stack::runner::threaded::{Progress, Workload, WorkloadFactory};
use stack::socket::tcp::connection::TcpConfig;

use super::datagrams::failed;
use super::echo::{ClientResult, Shared};
use super::stream::{finish, stack_error, Connecting, Listening};
use crate::error::TrafficError;
use crate::pattern::Pattern;
use crate::spec::{EchoSpec, TransferSpec};

/// The echo server: accepts one connection and echoes until its end.
pub(super) fn server(spec: TransferSpec, config: TcpConfig, outcome: Shared) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let mut listening = match Listening::open(host, &spec, config) {
            Ok(l) => l,
            Err(e) => return failed(&outcome.receiver, e),
        };
        let mut conn: Option<TcpHandle> = None;
        let mut buf = vec![0u8; 64 * 1024];
        // Read but not yet echoed (the send queue was full).
        let mut pending: Vec<u8> = Vec::new();
        Box::new(move |host: &mut Host, _now| {
            if outcome.failed() {
                return Progress::Done;
            }
            let handle = match conn {
                Some(h) => h,
                None => match listening.accept(host, &spec, &outcome) {
                    Ok(Some(h)) => {
                        conn = Some(h);
                        h
                    }
                    Ok(None) => return Progress::WAITING,
                    Err(e) => return finish(&outcome.receiver, Err(e)),
                },
            };
            loop {
                while !pending.is_empty() {
                    match host.tcp_send(handle, &pending) {
                        Ok(n) => {
                            pending.drain(..n);
                        }
                        Err(TcpError::WouldBlock) => return Progress::WAITING,
                        Err(e) => return finish(&outcome.receiver, Err(stack_error("echo", e))),
                    }
                }
                match host.tcp_recv(handle, &mut buf) {
                    Ok(0) => {
                        let _ = host.tcp_close(handle);
                        return finish(&outcome.receiver, Ok(()));
                    }
                    Ok(n) => pending.extend_from_slice(&buf[..n]),
                    Err(TcpError::WouldBlock) => return Progress::WAITING,
                    Err(e) => return finish(&outcome.receiver, Err(stack_error("echo", e))),
                }
            }
        })
    })
}

/// Where the client is.
enum State {
    Connecting(Connecting),
    /// Exchange `seq`: `written` bytes of the request queued, `read` of
    /// the answer back, since `began`.
    Exchange {
        conn: TcpHandle,
        seq: u64,
        written: usize,
        read: usize,
        began: Instant,
    },
}

/// The echo client: `count` exchanges, one at a time.
pub(super) fn client(
    echo: EchoSpec,
    config: TcpConfig,
    pattern: Arc<Pattern>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |_host: &mut Host| -> Workload {
        let spec = echo.as_transfer();
        let len = spec.len;
        let mut state = State::Connecting(Connecting::new());
        let mut answer = vec![0u8; len];
        let mut rtts = Vec::with_capacity(spec.count.min(1 << 24) as usize);
        let mut corrupted = 0u64;
        Box::new(move |host: &mut Host, now| {
            if outcome.failed() {
                return finish(&outcome.sender, Ok((Vec::new(), 0, 0)));
            }
            match &mut state {
                State::Connecting(connecting) => {
                    match connecting.step(host, &spec, config, &outcome) {
                        Ok(Some(conn)) => {
                            state = State::Exchange {
                                conn,
                                seq: 0,
                                written: 0,
                                read: 0,
                                began: Instant::now(),
                            };
                            // The first exchange starts at once.
                            return Progress::Running { next: Some(now) };
                        }
                        Ok(None) => {}
                        Err(e) => return finish(&outcome.sender, Err(e)),
                    }
                }
                State::Exchange {
                    conn,
                    seq,
                    written,
                    read,
                    began,
                } => {
                    let conn = *conn;
                    if *seq == spec.count {
                        let _ = host.tcp_close(conn);
                        let result: ClientResult = (std::mem::take(&mut rtts), 0, corrupted);
                        return finish(&outcome.sender, Ok(result));
                    }
                    let request = pattern.at(*seq * len as u64, len);
                    if *written == 0 {
                        *began = Instant::now();
                    }
                    while *written < len {
                        match host.tcp_send(conn, &request[*written..]) {
                            Ok(n) => *written += n,
                            Err(TcpError::WouldBlock) => break,
                            Err(e) => return finish(&outcome.sender, Err(stack_error("echo", e))),
                        }
                    }
                    loop {
                        match host.tcp_recv(conn, &mut answer[*read..]) {
                            Ok(0) => {
                                return finish(
                                    &outcome.sender,
                                    Err(TrafficError::Invalid(
                                        "echo: the server closed the connection".into(),
                                    )),
                                )
                            }
                            Ok(n) => *read += n,
                            Err(TcpError::WouldBlock) => break,
                            Err(e) => return finish(&outcome.sender, Err(stack_error("echo", e))),
                        }
                        if *read == len {
                            break;
                        }
                    }
                    if *read == len {
                        rtts.push(began.elapsed().as_nanos() as u64);
                        if answer[..] != *request {
                            corrupted += 1;
                        }
                        *seq += 1;
                        *written = 0;
                        *read = 0;
                        // The next exchange starts at once.
                        return Progress::Running { next: Some(now) };
                    } else if began.elapsed() > spec.timeout {
                        return finish(
                            &outcome.sender,
                            Err(TrafficError::timeout(
                                spec.timeout,
                                format!("waiting for the answer to exchange {seq}"),
                            )),
                        );
                    }
                }
            }
            Progress::WAITING
        })
    })
}

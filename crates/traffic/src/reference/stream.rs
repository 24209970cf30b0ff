//! TCP helpers of the reference stack's echo workloads (`stream_echo`):
//! listening, connecting and the settings a spec asks for.

use std::net::SocketAddr;
use std::time::Instant;

use stack::iface::host::{Host, TcpError, TcpHandle};
use stack::runner::threaded::Progress;
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;

use super::datagrams::{unspecified, PeerAddr, ADDRESS_GRACE};
use super::{address_of, Outcome};
use crate::env::GrantedBuffers;
use crate::error::TrafficError;
use crate::spec::TransferSpec;
use crate::transport::StreamOptions;

pub(super) use super::net::{algorithm_name, DEFAULT_BUFFER};

/// The connection settings for a spec: `-b` sizes both buffers, `-D`
/// turns Nagle off. Returns what that grants, for the run record.
pub(super) fn tcp_config(spec: &TransferSpec) -> (TcpConfig, GrantedBuffers) {
    let config = super::net::tcp_config(StreamOptions {
        buffer: spec.sockbuf,
        nodelay: spec.nodelay,
    });
    let granted = GrantedBuffers {
        send: Some(config.send_buffer),
        recv: Some(config.recv_buffer),
    };
    (config, granted)
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
        if outcome.rendezvous.receiver().is_none() {
            if let Some(ip) = address_of(host, spec.family) {
                outcome
                    .rendezvous
                    .publish(PeerAddr::Ip(SocketAddr::new(ip, spec.port)));
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
            if let (Some(_), Some(PeerAddr::Ip(dest))) = (own, outcome.rendezvous.receiver()) {
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

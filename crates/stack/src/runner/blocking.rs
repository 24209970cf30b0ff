//! Blocking TCP calls for tools and tests on the simulator: each runs the
//! virtual clock until the call can complete (or its time limit passes),
//! like a blocking socket call on a real stack.

use std::net::SocketAddr;
use std::time::Duration;

use super::Simulator;
use crate::iface::host::{Host, TcpError, TcpHandle};
use crate::socket::tcp::connection::TcpConfig;

/// Why a blocking call gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockingError {
    #[error("the simulator has no host {0:?}")]
    NoSuchHost(String),
    #[error("{0}")]
    Tcp(#[from] TcpError),
    #[error("timed out after {0:?} of virtual time")]
    TimedOut(Duration),
}

fn host<'a>(sim: &'a mut Simulator, name: &str) -> Result<&'a mut Host, BlockingError> {
    sim.host_mut(name)
        .ok_or_else(|| BlockingError::NoSuchHost(name.to_string()))
}

/// Runs `sim` until `step` on host `name` gives a result other than
/// `WouldBlock`, or `limit` passes.
fn block_on<T>(
    sim: &mut Simulator,
    name: &str,
    limit: Duration,
    mut step: impl FnMut(&mut Host) -> Result<T, TcpError>,
) -> Result<T, BlockingError> {
    host(sim, name)?;
    let mut outcome: Option<Result<T, TcpError>> = None;
    sim.run_until_with(limit, |sim| {
        let Some(h) = sim.host_mut(name) else {
            return true;
        };
        match step(h) {
            Err(TcpError::WouldBlock) => false,
            other => {
                outcome = Some(other);
                true
            }
        }
    });
    match outcome {
        Some(result) => Ok(result?),
        None => Err(BlockingError::TimedOut(limit)),
    }
}

/// Connects from host `name` to `remote`; returns once established.
pub fn connect(
    sim: &mut Simulator,
    name: &str,
    remote: SocketAddr,
    config: TcpConfig,
    limit: Duration,
) -> Result<TcpHandle, BlockingError> {
    let handle = host(sim, name)?.tcp_connect(remote, config)?;
    block_on(sim, name, limit, |h| {
        let ready = h.tcp_readiness(handle)?;
        match ready.error {
            Some(error) => Err(TcpError::Connection(error)),
            None if ready.established => Ok(handle),
            None => Err(TcpError::WouldBlock),
        }
    })
}

/// Waits for a connection on a listener.
pub fn accept(
    sim: &mut Simulator,
    name: &str,
    listener: TcpHandle,
    limit: Duration,
) -> Result<TcpHandle, BlockingError> {
    block_on(sim, name, limit, |h| h.tcp_accept(listener))
}

/// Queues all of `data`, running the simulator while the send queue is
/// full.
pub fn write_all(
    sim: &mut Simulator,
    name: &str,
    handle: TcpHandle,
    data: &[u8],
    limit: Duration,
) -> Result<(), BlockingError> {
    let mut sent = 0;
    block_on(sim, name, limit, |h| {
        while sent < data.len() {
            sent += h.tcp_send(handle, &data[sent..])?;
        }
        Ok(())
    })
}

/// Reads until the peer's end of stream; returns everything read.
pub fn read_to_end(
    sim: &mut Simulator,
    name: &str,
    handle: TcpHandle,
    limit: Duration,
) -> Result<Vec<u8>, BlockingError> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    block_on(sim, name, limit, |h| loop {
        match h.tcp_recv(handle, &mut buf)? {
            0 => return Ok(()),
            n => out.extend_from_slice(&buf[..n]),
        }
    })?;
    Ok(out)
}

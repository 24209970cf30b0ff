//! What the traced transfers' threads share (`transfer` for the tests'
//! single-flow runs, `messages` for the lab's): their error texts, entering
//! a side's namespace, and an accept that gives up.

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use traffic::kernel::netns::{Side, VethPair};

use crate::error::KernelProbeError;

/// An I/O error of the transfer, naming the step.
pub(crate) fn failed(what: &str) -> impl Fn(std::io::Error) -> KernelProbeError + '_ {
    move |e| KernelProbeError::Invalid(format!("transfer: {what}: {e}"))
}

/// The other side's thread ended before it said what it had to.
pub(crate) fn gone(what: &str) -> KernelProbeError {
    KernelProbeError::Invalid(format!("transfer: the {what} thread ended early"))
}

/// A refusal of the traffic crate's (a congestion control the kernel
/// lacks or the connection does not run), in its own words.
pub(crate) fn refused(e: traffic::TrafficError) -> KernelProbeError {
    KernelProbeError::Invalid(e.to_string())
}

/// Moves the calling thread into `side`'s network namespace.
pub(crate) fn entered(pair: &VethPair, side: Side) -> Result<(), KernelProbeError> {
    pair.enter(side)
        .map_err(|e| KernelProbeError::Invalid(format!("transfer: enter namespace: {e}")))
}

/// Accepts one connection, giving up after `timeout` (a sender that never
/// connects must not hang the run).
pub(crate) fn accept_within(
    listener: &TcpListener,
    timeout: Duration,
) -> Result<TcpStream, KernelProbeError> {
    listener
        .set_nonblocking(true)
        .map_err(failed("non-blocking"))?;
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                conn.set_nonblocking(false).map_err(failed("blocking"))?;
                return Ok(conn);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && start.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(failed("accept")(e)),
        }
    }
}

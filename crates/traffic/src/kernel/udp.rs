//! UDP over the kernel's sockets: the datagram programs
//! ([`crate::program::datagrams`]) driven on the calling thread.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::net::{drive, KernelNet};
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pattern::Pattern;
use crate::program::datagrams::{DatagramReceiver, DatagramSender, Shared};
use crate::program::{Program, Rendezvous, Step};
use crate::report::{ReceiverSide, SenderSide};
use crate::spec::TransferSpec;
use crate::transport::{Peer, SocketFacts};

pub use crate::program::datagrams::{END_WAIT, SENTINEL_GAP, SENTINEL_REPEATS};

/// The program's parameters for a kernel side: no address to wait for,
/// frames on `interface` (raw) or UDP.
pub(super) fn shared(
    spec: &TransferSpec,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
    rendezvous: Arc<Rendezvous>,
    interface: &str,
) -> Shared {
    Shared {
        spec: spec.clone(),
        pattern: pattern.clone(),
        meter: meter.clone(),
        rendezvous,
        address_grace: Duration::ZERO,
        interface: interface.to_string(),
    }
}

/// A bound receiver, ready before the sender starts.
pub struct Bound {
    net: KernelNet,
    program: DatagramReceiver<KernelNet>,
}

impl Bound {
    /// What the socket was granted.
    pub fn facts(&self) -> SocketFacts {
        self.program.facts().clone()
    }
}

/// Opens the receiving program's socket (its first steps), so a port in
/// use is reported before the sender starts.
pub(super) fn bind(shared: Shared, addr: SocketAddr) -> Result<Bound, TrafficError> {
    let rendezvous = shared.rendezvous.clone();
    let mut net = KernelNet::new();
    let mut program = DatagramReceiver::new(shared, addr);
    // Open, then publish: two steps, each `Again` when it worked.
    while rendezvous.receiver().is_none() {
        match program.step(&mut net) {
            Step::Done(Err(e)) => return Err(e),
            Step::Done(Ok(_)) => {
                return Err(TrafficError::Invalid(
                    "the receiver ended before it was ready".into(),
                ))
            }
            _ => {}
        }
    }
    Ok(Bound { net, program })
}

pub fn bind_receiver(
    spec: &TransferSpec,
    addr: SocketAddr,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
) -> Result<Bound, TrafficError> {
    bind(shared(spec, pattern, meter, Arc::default(), ""), addr)
}

/// Receives until the end sentinel, or until the spec's time-out passes
/// without a datagram once traffic started (every end sentinel lost).
pub fn receive(mut bound: Bound) -> Result<ReceiverSide, TrafficError> {
    drive(&mut bound.net, &mut bound.program).map(|ended| ended.side)
}

/// Sends the start sentinels, the data datagrams and the end sentinels
/// to `dest`.
pub fn transmit(
    spec: &TransferSpec,
    dest: SocketAddr,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
) -> Result<(SenderSide, SocketFacts), TrafficError> {
    let rendezvous = Arc::new(Rendezvous::with_receiver(Peer::Ip(dest)));
    let mut program = DatagramSender::new(shared(spec, pattern, meter, rendezvous, ""));
    let ended = drive(&mut KernelNet::new(), &mut program)?;
    Ok((ended.side, ended.facts))
}

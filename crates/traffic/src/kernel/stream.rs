//! TCP over the kernel's sockets: the stream programs
//! ([`crate::program::stream`]) driven on the calling thread, the
//! receiver reading `len`-byte buffers as ttcp does.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::net::{drive, KernelNet};
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pattern::Pattern;
use crate::program::stream::{Shared, StreamReceiver, StreamSender};
use crate::program::{Program, Rendezvous, Step};
use crate::report::{ReceiverSide, SenderSide};
use crate::spec::TransferSpec;
use crate::transport::{Peer, SocketFacts};

/// A receiver listening, ready before the sender starts.
pub struct Receiving {
    net: KernelNet,
    program: StreamReceiver<KernelNet>,
}

impl Receiving {
    /// What the listener was granted.
    pub fn facts(&self) -> SocketFacts {
        self.program.facts().clone()
    }
}

fn shared(
    spec: &TransferSpec,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
    rendezvous: Rendezvous,
) -> Shared {
    Shared {
        spec: spec.clone(),
        pattern: pattern.clone(),
        meter: meter.clone(),
        rendezvous: Arc::new(rendezvous),
        address_grace: Duration::ZERO,
    }
}

/// Listens on `addr` (the first step of the receiving program), so a
/// port in use or an address not here is reported before the sender
/// starts.
pub fn listen(
    spec: &TransferSpec,
    addr: SocketAddr,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
) -> Result<Receiving, TrafficError> {
    let mut net = KernelNet::new();
    let mut program = StreamReceiver::new(
        shared(spec, pattern, meter, Rendezvous::default()),
        addr,
        spec.len,
    );
    if let Step::Done(Err(e)) = program.step(&mut net) {
        return Err(e);
    }
    Ok(Receiving { net, program })
}

/// Accepts one connection and receives until the sender closes.
pub fn receive(mut receiving: Receiving) -> Result<(ReceiverSide, SocketFacts), TrafficError> {
    let ended = drive(&mut receiving.net, &mut receiving.program)?;
    Ok((ended.side, ended.facts))
}

/// Connects to `dest` and writes `count` buffers of `len` pattern bytes
/// (more while the minimum duration has not passed).
pub fn transmit(
    spec: &TransferSpec,
    dest: SocketAddr,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
) -> Result<(SenderSide, SocketFacts), TrafficError> {
    let rendezvous = Rendezvous::with_receiver(Peer::Ip(dest));
    let mut program = StreamSender::new(shared(spec, pattern, meter, rendezvous));
    let ended = drive(&mut KernelNet::new(), &mut program)?;
    Ok((ended.side, ended.facts))
}

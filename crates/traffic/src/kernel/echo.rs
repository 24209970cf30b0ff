//! Delay mode on the kernel's sockets: the echo programs
//! ([`crate::program::echo`]), the server on a thread in the receiver's
//! namespace (with `--netns`), the client on another.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::net::{drive, KernelNet};
use super::netns::Side;
use super::{joined, pattern_for, KernelPath, PathSetup};
use crate::echo::EchoReport;
use crate::env::Environment;
use crate::error::TrafficError;
use crate::program::echo::{EchoClient, EchoServer, Shared};
use crate::program::Rendezvous;
use crate::spec::{EchoSpec, Protocol, StackKind};

/// Runs `spec.count` exchanges between a server and a client thread over
/// `path`.
pub fn run_pair(spec: &EchoSpec, path: KernelPath) -> Result<EchoReport, TrafficError> {
    spec.validate()?;
    if spec.protocol == Protocol::Raw && path == KernelPath::Loopback {
        return Err(TrafficError::Unsupported(
            "raw frames need a link: use --netns (kernel) or --stack ref".into(),
        ));
    }
    let setup = PathSetup::new(path)?;
    let addr = SocketAddr::new(setup.receiver_ip(spec.family), spec.port);
    let rendezvous = Arc::new(Rendezvous::default());
    let shared = |side: Side| Shared {
        spec: spec.clone(),
        pattern: Arc::new(pattern_for(spec.len)),
        rendezvous: rendezvous.clone(),
        address_grace: Duration::ZERO,
        interface: setup.interface(side).unwrap_or_default().to_string(),
    };
    let server = {
        let (setup, shared, rendezvous) = (setup.clone(), shared(Side::A), rendezvous.clone());
        std::thread::spawn(move || -> Result<(), TrafficError> {
            setup.enter(Side::A)?;
            let served = drive(&mut KernelNet::new(), &mut EchoServer::new(shared, addr));
            rendezvous.watch(served)
        })
    };
    let client = match rendezvous.wait_for_receiver(spec.timeout) {
        Some(_) => {
            let (setup, shared, rendezvous) = (setup.clone(), shared(Side::B), rendezvous.clone());
            let client = std::thread::spawn(move || {
                setup.enter(Side::B)?;
                let asked = drive(&mut KernelNet::new(), &mut EchoClient::new(shared));
                rendezvous.watch(asked)
            });
            joined(client, "echo client")
        }
        None => Err(TrafficError::Invalid(
            "the echo server did not start".into(),
        )),
    };
    // The server's error explains a client failure, not the reverse.
    joined(server, "echo server")?;
    let exchanges = client?;
    let mut target = Environment::detect(StackKind::Kernel, setup.description());
    target.mtu = Some(setup.mtu());
    target.sockbuf_granted = exchanges.facts.granted;
    target.congestion_control = exchanges.facts.congestion_control;
    Ok(EchoReport {
        spec: spec.clone(),
        target,
        rtt_ns: exchanges.rtt_ns,
        lost: exchanges.lost,
        corrupted: exchanges.corrupted,
    })
}

//! Delay mode on the reference stack: the echo programs
//! ([`crate::program::echo`]) as workloads of the threaded runner, the
//! client on the first host (raw frames: its neighbour), the server on
//! the last, on the real clock.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stack::runner::threaded::{self, WorkloadFactory};

use super::datagrams::{unspecified, ADDRESS_GRACE};
use super::{drive, plan, take, Outcome};
use crate::echo::EchoReport;
use crate::error::TrafficError;
use crate::kernel::pattern_for;
use crate::program::echo::{self, EchoClient, EchoServer, Exchanges};
use crate::spec::{EchoSpec, Protocol};
use crate::transport::StreamOptions;

/// The client's result: round trips, lost and corrupted answers.
type Shared = Arc<Outcome<Exchanges, ()>>;

/// Runs `spec.count` exchanges between the topology's first and last host
/// (UDP) or the first host and its neighbour (raw).
pub fn run_pair(spec: &EchoSpec, topology: Option<&Path>) -> Result<EchoReport, TrafficError> {
    spec.validate()?;
    let topology = super::load(topology)?;
    let (ends, mut target) = plan(spec.protocol, spec.len, &topology)?;
    if spec.protocol == Protocol::Tcp {
        let planned = super::net::stream_facts_for(StreamOptions {
            buffer: spec.sockbuf,
            nodelay: true,
        });
        target.sockbuf_granted = planned.granted;
        target.congestion_control = planned.congestion_control;
    } else {
        target.sockbuf_granted = super::net::datagram_granted(&spec.as_transfer());
    }
    let outcome: Shared = Arc::new(Outcome::default());
    let shared = |interface: &str| echo::Shared {
        spec: spec.clone(),
        pattern: Arc::new(pattern_for(spec.len)),
        rendezvous: outcome.rendezvous.clone(),
        address_grace: ADDRESS_GRACE,
        interface: interface.to_string(),
    };
    let bind = SocketAddr::new(unspecified(spec.family), spec.port);
    let server = EchoServer::new(shared(&ends.receiver_interface), bind);
    let client = EchoClient::new(shared(&ends.sender_interface));
    let (served, asked) = (outcome.clone(), outcome.clone());
    let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
    workloads.insert(
        ends.receiver.clone(),
        super::with_timeouts(drive::workload(server, move |r| served.receiver_done(r))),
    );
    workloads.insert(
        ends.sender.clone(),
        super::with_timeouts(drive::workload(client, move |r| asked.sender_done(r))),
    );
    threaded::run(
        &topology,
        Duration::ZERO,
        Duration::from_secs(24 * 3600),
        workloads,
    )
    .map_err(|e| TrafficError::Invalid(format!("the network did not start: {e}")))?;
    let served = take(&outcome.receiver, "echo server");
    let exchanges = match take(&outcome.sender, "echo client") {
        Ok(exchanges) => exchanges,
        Err(e) => return Err(super::cause(e, served.err())),
    };
    served?;
    Ok(EchoReport {
        spec: spec.clone(),
        target,
        rtt_ns: exchanges.rtt_ns,
        lost: exchanges.lost,
        corrupted: exchanges.corrupted,
    })
}

//! One flow's or echo series' two ends while a run lasts: their jobs,
//! meter and interval reports, and their results turned into what a
//! report needs, whatever the target.

use std::sync::Arc;

use super::role::{Job, Outcome};
use super::{echo_roles, transfer_roles, EndPlan};
use crate::echo::EchoReport;
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::program::echo::Exchanges;
use crate::program::stream::Ended;
use crate::program::Rendezvous;
use crate::report::{ReceiverSide, SenderSide, Timestamp, TransferReport};
use crate::spec::{EchoSpec, TransferSpec};

/// A finished flow: the sender's and receiver's results and the interval
/// reports.
pub(super) type FlowEnds = (
    Ended<SenderSide>,
    Ended<ReceiverSide>,
    Vec<crate::meter::Interval>,
);

/// One flow of a run: its two ends, its meter and interval reports.
pub(super) struct FlowRun {
    pub spec: TransferSpec,
    pub meter: Arc<Meter>,
    pub rendezvous: Arc<Rendezvous>,
    pub receiver: Job,
    pub sender: Job,
    recorder: Option<IntervalRecorder>,
}

impl FlowRun {
    pub fn new(spec: &TransferSpec, plan: &EndPlan) -> Self {
        let meter = Arc::new(Meter::default());
        let rendezvous = Arc::new(Rendezvous::default());
        let (receiver, sender) = transfer_roles(spec, plan, &meter, &rendezvous);
        Self {
            spec: spec.clone(),
            meter,
            rendezvous,
            receiver: Job::new(receiver),
            sender: Job::new(sender),
            recorder: None,
        }
    }

    /// Waits until the receiver listens (or a side failed, or its
    /// set-up time passed); interval reports start then.
    pub fn wait_until_listening(&mut self, grace: std::time::Duration, print: bool) -> bool {
        let listening = self
            .rendezvous
            .wait_for_receiver(self.spec.timeout + grace)
            .is_some();
        self.recorder = self
            .spec
            .interval
            .map(|every| IntervalRecorder::start(self.meter.clone(), every, print));
        listening
    }

    /// The two ends' results, or the error that caused the failure.
    pub fn ends(&mut self) -> Result<FlowEnds, TrafficError> {
        let intervals = self
            .recorder
            .take()
            .map(IntervalRecorder::finish)
            .unwrap_or_default();
        let sent = self.sender.take("sender");
        let received = self.receiver.take("receiver");
        match (sent, received) {
            (Ok(Outcome::Sent(s)), Ok(Outcome::Received(r))) => Ok((s, r, intervals)),
            (Err(e), other) => Err(cause(e, other.err())),
            (_, Err(e)) => Err(e),
            _ => Err(TrafficError::Invalid(
                "the ends of a transfer ended the wrong way round".into(),
            )),
        }
    }
}

impl FlowRun {
    /// The flow's report on `target`: both ends' results, what their
    /// sockets were granted and the sender's congestion control; `adjust`
    /// adds what only the target knows (placement, drops, names).
    pub fn report(
        &mut self,
        mut target: Environment,
        timestamp: &Timestamp,
        adjust: impl FnOnce(&mut Environment, &Ended<SenderSide>, &mut Ended<ReceiverSide>),
    ) -> Result<TransferReport, TrafficError> {
        let (sent, mut received, intervals) = self.ends()?;
        describe(&mut target, &sent, &received);
        adjust(&mut target, &sent, &mut received);
        Ok(TransferReport::new(
            &self.spec,
            target,
            timestamp.clone(),
            intervals,
            Some(&sent.side),
            Some(&received.side),
        ))
    }
}

/// Of two ends' errors, the cause: an end that stopped because the other
/// failed is not it.
pub(super) fn cause(first: TrafficError, second: Option<TrafficError>) -> TrafficError {
    match (first, second) {
        (TrafficError::PeerFailed, Some(other)) => other,
        (first, _) => first,
    }
}

/// What both ends' sockets were granted, and the sender's congestion
/// control.
pub(super) fn describe(
    target: &mut Environment,
    sent: &Ended<SenderSide>,
    received: &Ended<ReceiverSide>,
) {
    target.sockbuf_granted = GrantedBuffers {
        send: sent.facts.granted.send,
        recv: received.facts.granted.recv,
    };
    target.congestion_control = sent.facts.congestion_control.clone();
}

/// An echo series' two ends and their results.
pub(super) struct EchoRun {
    pub spec: EchoSpec,
    pub rendezvous: Arc<Rendezvous>,
    pub server: Job,
    pub client: Job,
}

impl EchoRun {
    pub fn new(spec: &EchoSpec, plan: &EndPlan) -> Self {
        let rendezvous = Arc::new(Rendezvous::default());
        let (server, client) = echo_roles(spec, plan, &rendezvous);
        Self {
            spec: spec.clone(),
            rendezvous,
            server: Job::new(server),
            client: Job::new(client),
        }
    }

    /// The client's exchanges, or the error that caused the failure (the
    /// server's explains a client's, not the reverse).
    pub fn exchanges(&self) -> Result<Exchanges, TrafficError> {
        let served = self.server.take("echo server");
        let asked = self.client.take("echo client");
        match (served, asked) {
            (Ok(_), Ok(Outcome::Asked(exchanges))) => Ok(exchanges),
            (Err(e), other) => Err(cause(e, other.err())),
            (Ok(_), Err(e)) => Err(e),
            _ => Err(TrafficError::Invalid(
                "the ends of an echo ended the wrong way round".into(),
            )),
        }
    }

    pub fn report(&self, mut target: Environment) -> Result<EchoReport, TrafficError> {
        let exchanges = self.exchanges()?;
        target.sockbuf_granted = exchanges.facts.granted;
        target.congestion_control = exchanges.facts.congestion_control;
        Ok(EchoReport {
            spec: self.spec.clone(),
            target,
            rtt_ns: exchanges.rtt_ns,
            lost: exchanges.lost,
            corrupted: exchanges.corrupted,
            runner_naps: exchanges.runner_naps,
        })
    }
}

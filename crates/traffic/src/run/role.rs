//! What one end of a run does: a program of either kind, built for
//! whichever stack that end is on, and where its result goes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::TrafficError;
use crate::meter::Meter;
use crate::program::datagrams::{self, DatagramReceiver, DatagramSender};
use crate::program::echo::{self, EchoClient, EchoServer, Exchanges};
use crate::program::stream::{self, Ended, StreamReceiver, StreamSender};
use crate::program::{Program, Rendezvous, Step};
use crate::report::{ReceiverSide, SenderSide};
use crate::spec::{EchoSpec, StackKind, TransferSpec};
use crate::transport::Transport;

/// A program to run at one end.
#[derive(Debug, Clone)]
pub enum Role {
    /// Receives a stream on the address, reading at most this many bytes
    /// a call.
    StreamReceiver(stream::Shared, SocketAddr, usize),
    StreamSender(stream::Shared),
    DatagramReceiver(datagrams::Shared, SocketAddr),
    DatagramSender(datagrams::Shared),
    EchoServer(echo::Shared, SocketAddr),
    EchoClient(echo::Shared),
}

/// What an end's program gave back.
#[derive(Debug, Clone)]
pub enum Outcome {
    Received(Ended<ReceiverSide>),
    Sent(Ended<SenderSide>),
    Served,
    Asked(Exchanges),
}

/// A program of any role on stack `N`.
pub type Boxed<N> = Box<dyn Program<N, Output = Outcome> + Send>;

impl<N: Transport> Program<N> for Boxed<N> {
    type Output = Outcome;

    fn step(&mut self, net: &mut N) -> Step<Outcome> {
        (**self).step(net)
    }
}

/// A program whose output is turned into an [`Outcome`].
struct Mapped<P, O> {
    program: P,
    map: fn(O) -> Outcome,
}

impl<N, P, O> Program<N> for Mapped<P, O>
where
    N: Transport,
    P: Program<N, Output = O>,
{
    type Output = Outcome;

    fn step(&mut self, net: &mut N) -> Step<Outcome> {
        match self.program.step(net) {
            Step::Again => Step::Again,
            Step::Wait(until) => Step::Wait(until),
            Step::Recheck => Step::Recheck,
            Step::Done(result) => Step::Done(result.map(self.map)),
        }
    }
}

fn boxed<N, P, O>(program: P, map: fn(O) -> Outcome) -> Boxed<N>
where
    N: Transport + 'static,
    P: Program<N, Output = O> + Send + 'static,
    O: 'static,
{
    Box::new(Mapped { program, map })
}

impl Role {
    /// The program for stack `N`.
    pub fn build<N: Transport + 'static>(self) -> Boxed<N> {
        match self {
            Role::StreamReceiver(shared, bind, read_len) => boxed(
                StreamReceiver::<N>::new(shared, bind, read_len),
                Outcome::Received,
            ),
            Role::StreamSender(shared) => boxed(StreamSender::<N>::new(shared), Outcome::Sent),
            Role::DatagramReceiver(shared, bind) => {
                boxed(DatagramReceiver::<N>::new(shared, bind), Outcome::Received)
            }
            Role::DatagramSender(shared) => boxed(DatagramSender::<N>::new(shared), Outcome::Sent),
            Role::EchoServer(shared, bind) => {
                boxed(EchoServer::<N>::new(shared, bind), |()| Outcome::Served)
            }
            Role::EchoClient(shared) => boxed(EchoClient::<N>::new(shared), Outcome::Asked),
        }
    }

    /// The run's rendezvous this role meets its peer at.
    pub fn rendezvous(&self) -> &Arc<Rendezvous> {
        match self {
            Role::StreamReceiver(s, ..) | Role::StreamSender(s) => &s.rendezvous,
            Role::DatagramReceiver(s, _) | Role::DatagramSender(s) => &s.rendezvous,
            Role::EchoServer(s, _) | Role::EchoClient(s) => &s.rendezvous,
        }
    }

    /// True for the end that waits for the other (receiver, server).
    pub fn is_receiving(&self) -> bool {
        matches!(
            self,
            Role::StreamReceiver(..) | Role::DatagramReceiver(..) | Role::EchoServer(..)
        )
    }
}

/// How long a stack may take to configure its addresses, on top of a
/// spec's time-outs: the reference stack's SLAAC and DAD take about a
/// second; the kernel's are configured before the run.
pub fn address_grace(stack: StackKind) -> Duration {
    match stack {
        StackKind::Kernel => Duration::ZERO,
        StackKind::Ref => Duration::from_secs(10),
    }
}

/// Where each end of one flow listens or sends from, per stack.
#[derive(Debug, Clone)]
pub struct EndPlan {
    /// The receiver's (server's) bind address.
    pub bind: SocketAddr,
    /// Link-level frames: the receiver's and the sender's interfaces.
    pub receiver_interface: String,
    pub sender_interface: String,
    /// Address grace of the receiving end's stack and the sending end's.
    pub receiver_grace: Duration,
    pub sender_grace: Duration,
    /// Stream reads per call at the receiver: ttcp's `-l` on the kernel,
    /// at least 64 KiB on the reference stack (each step reads what the
    /// host has).
    pub read_len: usize,
}

/// The receiver's and sender's roles of a transfer.
pub fn transfer_roles(
    spec: &TransferSpec,
    plan: &EndPlan,
    meter: &Arc<Meter>,
    rendezvous: &Arc<Rendezvous>,
) -> (Role, Role) {
    let pattern = Arc::new(crate::kernel::pattern_for(spec.len));
    if spec.protocol.is_stream() {
        let shared = |grace| stream::Shared {
            spec: spec.clone(),
            pattern: pattern.clone(),
            meter: meter.clone(),
            rendezvous: rendezvous.clone(),
            address_grace: grace,
        };
        (
            Role::StreamReceiver(shared(plan.receiver_grace), plan.bind, plan.read_len),
            Role::StreamSender(shared(plan.sender_grace)),
        )
    } else {
        let shared = |grace, interface: &str| datagrams::Shared {
            spec: spec.clone(),
            pattern: pattern.clone(),
            meter: meter.clone(),
            rendezvous: rendezvous.clone(),
            address_grace: grace,
            interface: interface.to_string(),
        };
        (
            Role::DatagramReceiver(
                shared(plan.receiver_grace, &plan.receiver_interface),
                plan.bind,
            ),
            Role::DatagramSender(shared(plan.sender_grace, &plan.sender_interface)),
        )
    }
}

/// The server's and client's roles of an echo series.
pub fn echo_roles(spec: &EchoSpec, plan: &EndPlan, rendezvous: &Arc<Rendezvous>) -> (Role, Role) {
    let pattern = Arc::new(crate::kernel::pattern_for(spec.len));
    let shared = |grace, interface: &str| echo::Shared {
        spec: spec.clone(),
        pattern: pattern.clone(),
        rendezvous: rendezvous.clone(),
        address_grace: grace,
        interface: interface.to_string(),
    };
    (
        Role::EchoServer(
            shared(plan.receiver_grace, &plan.receiver_interface),
            plan.bind,
        ),
        Role::EchoClient(shared(plan.sender_grace, &plan.sender_interface)),
    )
}

/// Where an end's result goes: filled once, read after the run.
pub type Slot = Arc<Mutex<Option<Result<Outcome, TrafficError>>>>;

/// A role and its slot.
#[derive(Debug, Clone)]
pub struct Job {
    pub role: Role,
    pub slot: Slot,
}

impl Job {
    pub fn new(role: Role) -> Self {
        Self {
            role,
            slot: Slot::default(),
        }
    }

    /// Records the end's result; a failure stops the other end too.
    pub fn finish(&self, result: Result<Outcome, TrafficError>) {
        let result = self.role.rendezvous().watch(result);
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    }

    /// True once the end has its result.
    pub fn finished(&self) -> bool {
        self.slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The end's result, once the run is over.
    pub fn take(&self, what: &str) -> Result<Outcome, TrafficError> {
        self.slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| {
                Err(TrafficError::Invalid(format!(
                    "the {what} did not finish (its stack failed to start?)"
                )))
            })
    }
}

//! The traffic programs, each written once over [`Transport`]: the ttcp
//! stream sender and receiver ([`stream`]), an iperf3 server
//! ([`iperf3`]), and what they share. A program
//! is a state machine stepped by its target's driver — the kernel's
//! (wait for socket readiness between steps) or the reference stack's
//! runners (step inside the host's poll loop) — and never blocks.

pub mod datagrams;
pub mod echo;
pub mod iperf3;
pub mod stream;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant as WallInstant};

use stack::time::Instant;

use crate::error::TrafficError;
use crate::spec::{Family, Protocol, RAW_ETHERTYPE};
use crate::transport::{DatagramKind, Peer, Transport};

/// What a program's step wants next.
#[derive(Debug)]
pub enum Step<T> {
    /// It did work: step again at once.
    Again,
    /// Nothing to do until a socket has something, or until the instant
    /// (a paced send, a sentinel, a time-out).
    Wait(Option<Instant>),
    /// It waits for something the stack does not signal to applications
    /// (the peer acknowledging sent bytes): look again soon. The kernel's
    /// driver yields the CPU and steps again; a reference host steps it
    /// when packets move.
    Recheck,
    /// Finished, with its side's result.
    Done(Result<T, TrafficError>),
}

/// A traffic program on stack `N`.
pub trait Program<N: Transport> {
    type Output;

    /// Does what can be done now.
    fn step(&mut self, net: &mut N) -> Step<Self::Output>;
}

/// What the two sides of one run share in this process: where the
/// receiver listens, once it does, and whether a side failed (the other
/// then stops instead of waiting out its time-outs).
#[derive(Debug, Default)]
pub struct Rendezvous {
    receiver: Mutex<Option<Peer>>,
    published: Condvar,
    failed: AtomicBool,
    receiver_finished: AtomicBool,
    sender_finished: AtomicBool,
}

impl Rendezvous {
    /// A rendezvous whose receiver is known before anything runs (a
    /// sender to a remote host).
    pub fn with_receiver(peer: Peer) -> Self {
        let rendezvous = Self::default();
        rendezvous.publish(peer);
        rendezvous
    }

    /// The receiver says where it listens (once; later calls change
    /// nothing).
    pub fn publish(&self, peer: Peer) {
        let mut slot = self.receiver.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(peer);
            self.published.notify_all();
        }
    }

    /// Where the receiver listens, if it said.
    pub fn receiver(&self) -> Option<Peer> {
        *self.receiver.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks the calling thread until the receiver has published, a side
    /// failed, or `timeout` passed.
    pub fn wait_for_receiver(&self, timeout: Duration) -> Option<Peer> {
        let deadline = WallInstant::now() + timeout;
        let mut slot = self.receiver.lock().unwrap_or_else(|e| e.into_inner());
        while slot.is_none() && !self.failed() {
            let left = deadline.saturating_duration_since(WallInstant::now());
            if left.is_zero() {
                break;
            }
            // Woken by a publication; a failure is seen within the slice.
            let slice = left.min(Duration::from_millis(20));
            slot = self
                .published
                .wait_timeout(slot, slice)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *slot
    }

    /// The receiver has finished (a sender repeating end sentinels may
    /// stop: its peer is in this process and says so).
    pub fn receiver_finished(&self) {
        self.receiver_finished.store(true, Ordering::Release);
    }

    pub fn has_receiver_finished(&self) -> bool {
        self.receiver_finished.load(Ordering::Acquire)
    }

    /// The sender (echo client) has finished: a server in this process
    /// may stop.
    pub fn sender_finished(&self) {
        self.sender_finished.store(true, Ordering::Release);
    }

    pub fn has_sender_finished(&self) -> bool {
        self.sender_finished.load(Ordering::Acquire)
    }

    /// A side failed.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
        self.published.notify_all();
    }

    /// Passes a side's result on, failing the rendezvous if it failed.
    pub fn watch<T>(&self, result: Result<T, TrafficError>) -> Result<T, TrafficError> {
        if result.is_err() {
            self.fail();
        }
        result
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
}

/// A program's result when it stopped because the other side failed: the
/// other side's error is the cause, this one is not reported.
pub fn peer_failed<T>() -> Step<T> {
    Step::Done(Err(TrafficError::PeerFailed))
}

/// The stream protocol a spec's protocol names (TCP unless XTP).
pub fn stream_protocol(protocol: Protocol) -> crate::transport::StreamProtocol {
    match protocol {
        Protocol::Xtp => crate::transport::StreamProtocol::Xtp,
        _ => crate::transport::StreamProtocol::Tcp,
    }
}

/// Where a datagram program's end is: its protocol (UDP or link frames),
/// family and, for frames, interface (empty: the stack's first).
#[derive(Debug, Clone, Copy)]
pub struct DatagramEnd<'a> {
    pub protocol: Protocol,
    pub family: Family,
    pub interface: &'a str,
}

impl DatagramEnd<'_> {
    /// The socket of this end: UDP bound to `bind` (a receiver or
    /// server) or to any port (a sender or client), or link-level frames
    /// of the raw Ethertype.
    pub fn socket(&self, bind: Option<SocketAddr>) -> DatagramKind {
        match self.protocol {
            Protocol::Raw => DatagramKind::Link {
                interface: self.interface.to_string(),
                ethertype: RAW_ETHERTYPE,
            },
            _ => DatagramKind::Udp(
                bind.unwrap_or_else(|| SocketAddr::new(self.family.unspecified(), 0)),
            ),
        }
    }

    /// This end's address once it has one (`bind`'s port for a receiver):
    /// what a receiver publishes, and a sender's sign it can send.
    pub fn address<N: Transport>(&self, net: &N, bind: Option<SocketAddr>) -> Option<Peer> {
        match self.protocol {
            Protocol::Raw => net.link_address(self.interface).map(Peer::Mac),
            _ => {
                let port = bind.map_or(0, |b| b.port());
                match bind {
                    Some(b) if !b.ip().is_unspecified() => Some(b.ip()),
                    _ => net.local_ip(self.family),
                }
                .map(|ip| Peer::Ip(SocketAddr::new(ip, port)))
            }
        }
    }
}

//! The simulator: every host of a topology in one thread, on a virtual
//! clock that jumps from one deadline to the next. Nothing reads the real
//! clock and every random choice is seeded, so a topology replays the same
//! run, packet for packet.

use std::path::Path;
use std::time::Duration;

use super::{BuildError, NetworkBuilder};
use crate::iface::host::Host;
use crate::phy::{CaptureConfig, Hub};
use crate::time::Instant;
use crate::topology::Topology;

/// Polls at one instant at most this many rounds: a bound against a host
/// that keeps reporting work without making progress.
const MAX_ROUNDS_PER_INSTANT: usize = 10_000;

/// Why a simulation could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// What the step of [`Simulator::drive`] wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Its work is done: stop.
    Done,
    /// Step again at this instant, or (`None`) whenever anything happens.
    At(Option<Instant>),
}

/// Hosts and wires on a virtual clock.
pub struct Simulator {
    now: Instant,
    hosts: Vec<Host>,
    hubs: Vec<Hub>,
    /// Instants at which the round bound cut polling short.
    stalls: u64,
}

impl Simulator {
    /// Builds every node of `topology`; with `pcap_dir`, every interface
    /// writes a pcapng capture there, losing no frame (complete once the
    /// simulator is dropped).
    pub fn new(topology: &Topology, pcap_dir: Option<&Path>) -> Result<Self, SimError> {
        let mut builder =
            NetworkBuilder::with_capture(topology, pcap_dir, CaptureConfig::lossless())?;
        let hosts = (0..topology.nodes().len())
            .map(|index| builder.host(topology, index))
            .collect::<Result<Vec<_>, _>>()?;
        let hubs = (0..topology.hubs().len())
            .map(|index| builder.hub(topology, index))
            .collect();
        Ok(Self {
            now: Instant::ZERO,
            hosts,
            hubs,
            stalls: 0,
        })
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name() == name)
    }

    pub fn host_mut(&mut self, name: &str) -> Option<&mut Host> {
        self.hosts.iter_mut().find(|h| h.name() == name)
    }

    /// The topology's hubs, in file order.
    pub fn hubs(&self) -> &[Hub] {
        &self.hubs
    }

    /// How often polling at one instant hit its round bound.
    pub fn stalls(&self) -> u64 {
        self.stalls
    }

    /// Polls every host with work at the current instant until none has.
    fn settle(&mut self) {
        for _ in 0..MAX_ROUNDS_PER_INSTANT {
            let mut busy = false;
            for host in &mut self.hosts {
                if host.next_deadline(self.now).is_some_and(|t| t <= self.now) {
                    host.poll(self.now);
                    busy = true;
                }
            }
            for hub in &mut self.hubs {
                if hub.next_deadline().is_some_and(|t| t <= self.now) {
                    hub.poll(self.now);
                    busy = true;
                }
            }
            if !busy {
                return;
            }
        }
        self.stalls += 1;
    }

    /// The earliest deadline of any host or hub, if any.
    fn next_deadline(&self) -> Option<Instant> {
        let hosts = self.hosts.iter().filter_map(|h| h.next_deadline(self.now));
        let hubs = self.hubs.iter().filter_map(Hub::next_deadline);
        hosts.chain(hubs).min()
    }

    /// Runs until the virtual clock reaches `end`.
    pub fn run_until(&mut self, end: Instant) {
        loop {
            self.settle();
            match self.next_deadline() {
                Some(next) if next <= end => self.now = next.max(self.now),
                _ => {
                    self.now = end.max(self.now);
                    self.settle();
                    return;
                }
            }
        }
    }

    /// Runs with a driver of its own events — applications stepped on the
    /// hosts' sockets between polls: `step` runs at every instant with
    /// work, and its `Next::At` instant counts as a deadline like the
    /// hosts' own. Stops when `step` says [`Next::Done`] (true) or after
    /// `limit` of virtual time (false).
    pub fn drive(&mut self, limit: Duration, mut step: impl FnMut(&mut Simulator) -> Next) -> bool {
        let end = self.now + limit;
        loop {
            self.settle();
            let own = match step(self) {
                Next::Done => return true,
                Next::At(at) => at,
            };
            // What the step queued moves at this instant.
            self.settle();
            let next = [self.next_deadline(), own].into_iter().flatten().min();
            match next {
                Some(next) if next <= end => self.now = next.max(self.now),
                _ => {
                    self.now = end.max(self.now);
                    self.settle();
                    return step(self) == Next::Done;
                }
            }
        }
    }

    /// Runs for `duration` of virtual time.
    pub fn run_for(&mut self, duration: Duration) {
        self.run_until(self.now + duration);
    }

    /// Runs until `done` holds (checked after every instant with work) or
    /// `limit` of virtual time has passed; returns whether `done` held.
    pub fn run_until_with(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&mut Simulator) -> bool,
    ) -> bool {
        let end = self.now + limit;
        loop {
            self.settle();
            if done(self) {
                return true;
            }
            match self.next_deadline() {
                Some(next) if next <= end => self.now = next.max(self.now),
                _ => {
                    self.now = end.max(self.now);
                    self.settle();
                    return done(self);
                }
            }
        }
    }
}

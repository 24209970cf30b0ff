//! A hub: the shared medium of a multi-access segment, as a 10BASE-T
//! repeater was. Every frame that arrives on one port leaves on every
//! other, whatever its destination; stations filter by destination MAC
//! themselves (IEEE 802.3 clause 9 repeaters forward without looking at
//! the frame).
//!
//! Each port is the hub's end of an ordinary link (a virtual wire), so a
//! port keeps its wire's rate, delay and impairments: a frame from A to B
//! crosses A's wire, then B's, and is repeated once it has arrived whole
//! (store-and-forward timing: it pays both wires' serialisation, where a
//! real repeater passes bits through). Unlike a real repeater this one never
//! collides: frames arriving together on two ports are both repeated, each
//! outgoing wire serialising them one after the other (its transmit ring
//! is the only buffer; a full one drops the copy for that port and counts
//! it in [`HubStats::dropped`]).
//!
//! Like a host, a hub is polled: [`Hub::poll`] repeats what has arrived by
//! `now` (the simulator polls at [`Hub::next_deadline`], the frames'
//! arrival instants; the threaded runner when its thread wakes, so there
//! the repeat happens when the thread looks).

use super::{Link, LinkStats};
use crate::time::Instant;

/// What a hub did, over all its ports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HubStats {
    /// Frames received on any port.
    pub received: u64,
    /// Copies sent out of other ports.
    pub repeated: u64,
    /// Copies an outgoing port refused (its transmit ring full).
    pub dropped: u64,
}

/// A repeater joining the links of its ports.
pub struct Hub {
    name: String,
    ports: Vec<Box<dyn Link + Send>>,
    buffer: Vec<u8>,
    stats: HubStats,
}

impl Hub {
    /// A hub repeating between `ports` (its ends of the ports' links).
    pub fn new(name: &str, ports: Vec<Box<dyn Link + Send>>) -> Self {
        let largest = ports
            .iter()
            .map(|port| port.mtu().saturating_add(port.medium().header_len()))
            .max()
            .unwrap_or(0);
        Self {
            name: name.to_owned(),
            ports,
            buffer: vec![0; largest],
            stats: HubStats::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn stats(&self) -> HubStats {
        self.stats
    }

    /// Each port's link counters (frames received from its station and
    /// sent towards it), in port order.
    pub fn port_stats(&self) -> Vec<LinkStats> {
        self.ports.iter().map(|port| port.stats()).collect()
    }

    /// Repeats every frame that has arrived by `now` out of every port but
    /// the one it came in on; returns whether any frame moved.
    pub fn poll(&mut self, now: Instant) -> bool {
        let mut moved = false;
        for from in 0..self.ports.len() {
            while let Some(len) = self.ports[from].receive(now, &mut self.buffer) {
                moved = true;
                self.stats.received += 1;
                let frame = &self.buffer[..len];
                for (to, port) in self.ports.iter_mut().enumerate() {
                    if to == from {
                        continue;
                    }
                    match port.transmit(now, &[frame]) {
                        Ok(()) => {
                            port.transmitted(now, &[frame]);
                            self.stats.repeated += 1;
                        }
                        Err(_) => self.stats.dropped += 1,
                    }
                }
            }
        }
        if moved {
            // The doorbell: wakes the stations' threads.
            self.ports.iter_mut().for_each(|port| port.flush(now));
        }
        moved
    }

    /// When the next frame arrives at one of its ports, if any is on its
    /// way.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.ports
            .iter()
            .filter_map(|port| port.next_arrival())
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::{VirtualWire, WireConfig, WireEnd};

    fn three_ports() -> (Hub, Vec<WireEnd>) {
        let mut stations = Vec::new();
        let mut ports: Vec<Box<dyn Link + Send>> = Vec::new();
        for seed in 0..3 {
            let config = WireConfig {
                seed,
                ..WireConfig::default()
            };
            let (station, port) = VirtualWire::pair(config).unwrap();
            stations.push(station);
            ports.push(Box::new(port));
        }
        (Hub::new("lan", ports), stations)
    }

    #[test]
    fn a_frame_leaves_on_every_other_port_once() {
        let (mut hub, mut stations) = three_ports();
        let frame = [0xabu8; 60];
        stations[1].transmit(Instant::ZERO, &[&frame]).unwrap();
        assert_eq!(hub.next_deadline(), Some(Instant::ZERO));
        assert!(hub.poll(Instant::ZERO));
        let mut buf = [0u8; 1514];
        for (index, station) in stations.iter_mut().enumerate() {
            let got = station.receive(Instant::ZERO, &mut buf);
            if index == 1 {
                assert_eq!(got, None, "the sender hears no echo");
            } else {
                assert_eq!(got, Some(60));
                assert_eq!(buf[..60], frame);
                assert_eq!(station.receive(Instant::ZERO, &mut buf), None);
            }
        }
        assert_eq!(
            hub.stats(),
            HubStats {
                received: 1,
                repeated: 2,
                dropped: 0
            }
        );
        assert!(!hub.poll(Instant::ZERO));
        assert_eq!(hub.next_deadline(), None);
    }
}

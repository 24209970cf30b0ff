//! Runners: what drives hosts' [`poll`](crate::iface::host::Host::poll)
//! (DESIGN.md, "Runners").
//!
//! * [`Simulator`]: every host of a topology in one thread on a virtual
//!   clock. The same topology and seed give the same run, packet for
//!   packet; tests and the tools use it.
//! * [`threaded`]: a thread per host on the real clock, for measurement.
//! * [`realtime`]: one host on links to the operating system (TAP,
//!   AF_PACKET, tunnel) on the real clock, sleeping on their descriptors
//!   when idle.
//!
//! Both build their network from a [`Topology`] the same way
//! ([`NetworkBuilder`]): one virtual wire per topology wire, an optional
//! pcapng capture per wire end, a host per node and a
//! [`Hub`](crate::phy::Hub) per hub (polled like a host: in the
//! simulator's loop, on a thread of its own in the threaded runner).

pub mod blocking;
mod exchange;
mod idle;
#[cfg(target_os = "linux")]
pub mod realtime;
mod simulator;
pub mod threaded;
pub mod wake;

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

pub use simulator::{Next, SimError, Simulator};

use crate::iface::host::{Host, HostConfig, HostError, InterfaceConfig, StaticRoute};
use crate::iface::interface::AdvertisedPrefix;
use crate::phy::{CaptureConfig, Captured, Hub, Link, Loopback, VirtualWire};
use crate::topology::{NodeKind, Topology};

/// Flow ids of node `i` start at `(i + 1) << FLOW_BITS`, so flows of
/// different hosts never collide in one trace.
pub const FLOW_BITS: u32 = 20;

/// Why a network could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("wire {index}: {source}")]
    Wire {
        index: usize,
        source: crate::phy::ConfigError,
    },
    #[error("capture file {path}: {source}")]
    Capture {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("node {node}: {source}")]
    Host { node: String, source: HostError },
    #[error("interface {node}:{interface}: {source}")]
    Offload {
        node: String,
        interface: String,
        source: crate::iface::host::OffloadError,
    },
    #[error("node {node}: {source}")]
    Tunnel {
        node: String,
        source: crate::iface::tunnel::TunnelError,
    },
}

/// The links of every interface of a topology, ready to hand to hosts
/// (possibly on other threads: every link is `Send`).
pub struct NetworkBuilder {
    links: HashMap<(String, String), Box<dyn Link + Send>>,
}

impl NetworkBuilder {
    /// One virtual wire per topology wire; with `pcap_dir`, each interface
    /// writes `NODE-INTERFACE.pcapng` there, with the default capture ring
    /// (a full ring drops capture copies and counts them: the threaded
    /// runner measures).
    pub fn new(topology: &Topology, pcap_dir: Option<&Path>) -> Result<Self, BuildError> {
        Self::build(topology, pcap_dir, CaptureConfig::default(), None)
    }

    /// [`new`](Self::new) with captures of `config` (the simulator's are
    /// lossless: its clock stands still while a capture waits).
    pub fn with_capture(
        topology: &Topology,
        pcap_dir: Option<&Path>,
        capture_config: CaptureConfig,
    ) -> Result<Self, BuildError> {
        Self::build(topology, pcap_dir, capture_config, None)
    }

    /// [`new`](Self::new), with each wire end waking `wakers[i]` (node `i`
    /// of the topology owns the end; hub `h` is `i = nodes + h`) when a
    /// frame is pushed towards it.
    pub fn with_wakers(
        topology: &Topology,
        pcap_dir: Option<&Path>,
        wakers: &[std::task::Waker],
    ) -> Result<Self, BuildError> {
        Self::build(topology, pcap_dir, CaptureConfig::default(), Some(wakers))
    }

    fn build(
        topology: &Topology,
        pcap_dir: Option<&Path>,
        capture_config: CaptureConfig,
        wakers: Option<&[std::task::Waker]>,
    ) -> Result<Self, BuildError> {
        let names = topology.nodes().iter().map(|n| n.name.as_str());
        let names = names.chain(topology.hubs().iter().map(|h| h.name.as_str()));
        let node_index: HashMap<&str, usize> = names.enumerate().map(|(i, n)| (n, i)).collect();
        let mut links: HashMap<(String, String), Box<dyn Link + Send>> = HashMap::new();
        for (index, (wire, config)) in topology.wire_configs().enumerate() {
            let (a, b) =
                VirtualWire::pair(config).map_err(|source| BuildError::Wire { index, source })?;
            for (end, endpoint) in [(a, &wire.a), (b, &wire.b)] {
                let waker = wakers.and_then(|w| w.get(*node_index.get(endpoint.node.as_str())?));
                if let Some(waker) = waker {
                    end.wake_on_arrival(waker.clone());
                }
                let link = capture(
                    end,
                    pcap_dir,
                    capture_config,
                    &endpoint.node,
                    &endpoint.interface,
                )?;
                links.insert((endpoint.node.clone(), endpoint.interface.clone()), link);
            }
        }
        Ok(Self { links })
    }

    /// Builds node `index` of `topology`, taking its links.
    pub fn host(&mut self, topology: &Topology, index: usize) -> Result<Host, BuildError> {
        let interfaces = self.interfaces(topology, index);
        build_host(topology, index, interfaces)
    }

    /// Builds hub `index` of `topology`, taking its ports' links (a port
    /// without a wire is left out: nothing arrives on it).
    pub fn hub(&mut self, topology: &Topology, index: usize) -> Hub {
        let hub = &topology.hubs()[index];
        let ports = (1..=hub.ports)
            .filter_map(|port| self.links.remove(&(hub.name.clone(), port.to_string())))
            .collect();
        Hub::new(&hub.name, ports)
    }

    /// The interfaces of node `index` with their links: `Send`, so a host
    /// can be built from them on its own thread.
    pub fn interfaces(&mut self, topology: &Topology, index: usize) -> Vec<InterfaceConfig> {
        let node = &topology.nodes()[index];
        node.interfaces
            .iter()
            .map(|spec| {
                let link: Box<dyn Link + Send> =
                    match self.links.remove(&(node.name.clone(), spec.name.clone())) {
                        Some(link) => link,
                        // An interface without a wire: a loopback of its MTU.
                        None => Box::new(Loopback::with_limits(spec.mtu, 64).unwrap_or_default()),
                    };
                InterfaceConfig {
                    name: spec.name.clone(),
                    link,
                    mac: spec.mac,
                    ipv4: spec.ipv4,
                    ipv6: spec.ipv6.clone(),
                    dad_transmits: spec.dad_transmits,
                    advertise: spec
                        .advertise
                        .iter()
                        .map(|a| AdvertisedPrefix {
                            prefix: a.prefix.network(),
                            prefix_len: a.prefix.prefix_len,
                            valid_lifetime: a.valid_lifetime,
                            preferred_lifetime: a.preferred_lifetime,
                            on_link: a.on_link,
                            autonomous: a.autonomous,
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// Builds node `index` of `topology` on the given interfaces.
pub fn build_host(
    topology: &Topology,
    index: usize,
    interfaces: Vec<InterfaceConfig>,
) -> Result<Host, BuildError> {
    let node = &topology.nodes()[index];
    let mut config = HostConfig::new(&node.name, node.kind == NodeKind::Router);
    config.seed = crate::random::SplitMix64::nth(topology.seed(), index as u64 + 1);
    config.flow_base = (index as u32 + 1) << FLOW_BITS;
    config.fragmentation = node.fragmentation;
    let routes: Vec<StaticRoute> = node
        .routes
        .iter()
        .map(|r| StaticRoute {
            to: r.to,
            via: r.via,
        })
        .collect();
    let mut host = Host::new(config, interfaces, &routes).map_err(|source| BuildError::Host {
        node: node.name.clone(),
        source,
    })?;
    for (index, spec) in node.interfaces.iter().enumerate() {
        if !spec.offload.is_none() {
            host.set_offload(crate::iface::route::InterfaceId(index), spec.offload)
                .map_err(|source| BuildError::Offload {
                    node: node.name.clone(),
                    interface: spec.name.clone(),
                    source,
                })?;
        }
    }
    for tunnel in &node.tunnels {
        host.add_tunnel(tunnel.clone())
            .map_err(|source| BuildError::Tunnel {
                node: node.name.clone(),
                source,
            })?;
    }
    Ok(host)
}

fn capture<L: Link + Send + 'static>(
    link: L,
    pcap_dir: Option<&Path>,
    config: CaptureConfig,
    node: &str,
    interface: &str,
) -> Result<Box<dyn Link + Send>, BuildError> {
    let Some(dir) = pcap_dir else {
        return Ok(Box::new(link));
    };
    let path = dir.join(format!("{node}-{interface}.pcapng"));
    let file = File::create(&path).map_err(|source| BuildError::Capture { path, source })?;
    Ok(Box::new(Captured::with_config(
        link,
        BufWriter::new(file),
        &format!("{node}:{interface}"),
        config,
    )))
}

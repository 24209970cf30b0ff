//! Topologies: the hosts, routers, interfaces and wires of a simulated
//! network, read from a TOML file or built in (issue 3, item 3).
//!
//! ```toml
//! seed = 7                        # seeds every wire that names no seed
//!
//! [[host]]
//! name = "host-a"                 # [a-z0-9-]{1,32}
//! [[host.interface]]
//! name = "eth0"                   # [a-z0-9-]{1,15}
//! ipv4 = "192.0.2.10/24"          # IPv6: SLAAC from the router's RAs
//! [[host.route]]
//! to = "0.0.0.0/0"
//! via = "192.0.2.1"
//!
//! [[router]]
//! name = "router"
//! [[router.interface]]
//! name = "eth0"
//! mac = "02:00:5e:00:53:01"       # default: derived from the names
//! mtu = 1500                      # default 1500, at least 1280
//! dad_transmits = 0               # RFC 4862 DupAddrDetectTransmits, default 1
//! offload = ["tso", "gro"]        # segmentation / receive offload, default none;
//!                                 # a wire between two GRO ends with no rate
//!                                 # or impairment carries super-frames whole
//! ipv4 = "192.0.2.1/24"
//! ipv6 = ["2001:db8:a::1/64"]
//! [[router.interface.advertise]]
//! prefix = "2001:db8:a::/64"      # lifetimes default per RFC 4861 §6.2.1
//!
//! [[wire]]
//! a = "host-a:eth0"
//! b = "router:eth0"
//! rate = "100Mbit"                # or bits per second; default unlimited
//! delay = "2ms"                   # ns, us, ms, s
//! loss = 0.01                     # also duplicate, reorder, corrupt
//! reorder_delay = "150us"
//! queue_frames = 1024
//! seed = 42                       # default: derived from `seed` and the index
//!
//! [[hub]]                         # a shared segment, as 10BASE-T's hubs were
//! name = "lan"                    # in the nodes' namespace
//! ports = 4                       # ports `lan:1` … `lan:4`, at most 64
//! [[wire]]                        # each port by an ordinary wire
//! a = "host-c:eth0"
//! b = "lan:1"
//! ```
//!
//! Choices:
//! * IPv4 is static: every interface that speaks IPv4 has an `ipv4`
//!   address, and hosts reach other subnets through a `route` (there is no
//!   DHCP). IPv6 is on every interface: hosts get addresses by SLAAC, and
//!   routers (or hosts, if wanted) list configured `ipv6` addresses. Only
//!   routers `advertise` prefixes.
//! * Routes are static, with a next hop (`via`) on one of the node's
//!   subnets; a router needs them for prefixes beyond its neighbours.
//! * The MTU belongs to the interface and both ends of a wire must agree.
//! * Nodes are kept hosts first, then routers, each in file order.
//! * A [`Hub`] is a repeater, not a switch: every frame that arrives on one
//!   port leaves on every other, whatever its destination, so stations see
//!   each other's unicast frames (and drop them) and multicast needs no
//!   snooping. Each port keeps its own wire's rate, delay and impairments.
//!   Hubs are joined to interfaces only: a wire between two hubs is
//!   refused, which also rules out loops that would repeat frames forever.
//!   All interfaces on one hub have one MTU.
//!
//! Files are untrusted: they are limited in size and in every count, and
//! every refusal names the item and its line.

mod addr;
mod error;
mod file;
mod units;
mod validate;

use core::fmt;
use core::time::Duration;
use std::io::Read;
use std::net::IpAddr;
use std::path::Path;

pub use addr::{derived_mac, IpCidr, Ipv4Cidr, Ipv6Cidr};
pub use error::{At, SourceLocation, TopologyError};
pub use units::{
    format_duration, format_rate, parse_duration, parse_rate, MAX_DELAY, MAX_RATE_BITS_PER_S,
};
use wire::ethernet::EthernetAddress;

use crate::phy::{Medium, WireConfig};

/// Largest topology file read (1 MiB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most nodes (hosts and routers) in a topology.
pub const MAX_NODES: usize = 256;
/// Most interfaces on one node.
pub const MAX_INTERFACES_PER_NODE: usize = 64;
/// Most configured IPv6 addresses on one interface.
pub const MAX_IPV6_ADDRESSES_PER_INTERFACE: usize = 16;
/// Most prefixes one interface advertises (they must fit one RA).
pub const MAX_ADVERTISED_PREFIXES: usize = 16;
/// Most ports of one hub.
pub const MAX_HUB_PORTS: usize = 64;
/// Most static routes of one node.
pub const MAX_ROUTES_PER_NODE: usize = 256;
/// Most frames all wires may hold in flight per direction, together: each
/// wire allocates its queues up front.
pub const MAX_TOTAL_QUEUE_FRAMES: usize = 1 << 21;
/// Longest node name.
pub const MAX_NODE_NAME_LEN: usize = 32;
/// Longest interface name (as Linux's IFNAMSIZ allows).
pub const MAX_INTERFACE_NAME_LEN: usize = 15;
/// An interface's MTU when the file gives none (Ethernet, RFC 894).
pub const DEFAULT_MTU: usize = 1500;
/// IPv6's minimum link MTU (RFC 8200 §5).
pub const IPV6_MIN_MTU: usize = 1280;
/// Largest MTU: the largest IPv6 payload without jumbograms, and IPv4's
/// largest total length.
pub const MAX_MTU: usize = 65535;
/// AdvValidLifetime default: 30 days (RFC 4861 §6.2.1).
pub const DEFAULT_VALID_LIFETIME: u32 = 2_592_000;
/// AdvPreferredLifetime default: 7 days (RFC 4861 §6.2.1).
pub const DEFAULT_PREFERRED_LIFETIME: u32 = 604_800;
/// A lifetime of all ones is infinite (RFC 4861 §4.6.2).
pub const INFINITE_LIFETIME: u32 = u32::MAX;

/// A validated network: nodes with unique names and interfaces, wires
/// joining interfaces that exist, each at most once.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    seed: u64,
    nodes: Vec<Node>,
    hubs: Vec<Hub>,
    wires: Vec<Wire>,
}

/// A multi-access segment: a repeater with `ports` ports, named `1` to
/// `ports` in wire endpoints (`"lan:3"`). See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hub {
    pub name: String,
    pub ports: usize,
}

impl Hub {
    /// The endpoint of port `port` (1-based).
    pub fn port(&self, port: usize) -> Endpoint {
        Endpoint::new(&self.name, &port.to_string())
    }
}

/// A host or a router.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub interfaces: Vec<InterfaceSpec>,
    /// Static routes (hosts learn IPv6 default routers from RAs instead).
    pub routes: Vec<Route>,
    /// How its IP layer fragments (`fragmentation = "copy"` in the file;
    /// scatter-gather by default).
    pub fragmentation: crate::iface::host::Fragmentation,
    /// Tunnels over the node's own IPv4 (`[[host.tunnel]]`, docs/tunnels.md).
    pub tunnels: Vec<crate::iface::tunnel::TunnelConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    Host,
    /// Forwards, and sends router advertisements for its `advertise` prefixes.
    Router,
}

/// One interface of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct InterfaceSpec {
    pub name: String,
    /// Given, or [`derived_mac`] of the node and interface names.
    pub mac: EthernetAddress,
    pub mtu: usize,
    /// Static IPv4 address and subnet; `None` leaves the interface IPv6-only.
    pub ipv4: Option<Ipv4Cidr>,
    /// Configured IPv6 addresses, besides the link-local and SLAAC ones.
    pub ipv6: Vec<Ipv6Cidr>,
    /// Prefixes put in router advertisements (routers only).
    pub advertise: Vec<PrefixAdvertisement>,
    /// DupAddrDetectTransmits (RFC 4862 §5.1); `None` for the default, 1.
    pub dad_transmits: Option<u32>,
    /// Segmentation and receive offload (`offload = ["tso", "gro"]`),
    /// none by default.
    pub offload: crate::iface::offload::Offload,
}

/// A Prefix Information option a router sends (RFC 4861 §4.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixAdvertisement {
    pub prefix: Ipv6Cidr,
    /// Seconds; [`INFINITE_LIFETIME`] is infinite.
    pub valid_lifetime: u32,
    /// Seconds; at most `valid_lifetime` (RFC 4862 §5.5.3 c).
    pub preferred_lifetime: u32,
    /// The L flag: the prefix is on-link.
    pub on_link: bool,
    /// The A flag: hosts may form addresses from it by SLAAC.
    pub autonomous: bool,
}

impl PrefixAdvertisement {
    /// `prefix` with the defaults of RFC 4861 §6.2.1: valid 30 days,
    /// preferred 7 days, on-link and autonomous.
    pub const fn new(prefix: Ipv6Cidr) -> Self {
        Self {
            prefix,
            valid_lifetime: DEFAULT_VALID_LIFETIME,
            preferred_lifetime: DEFAULT_PREFERRED_LIFETIME,
            on_link: true,
            autonomous: true,
        }
    }
}

/// A static route: packets to `to` go to the neighbour `via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub to: IpCidr,
    /// On one of the node's subnets, in the family of `to`.
    pub via: IpAddr,
}

/// One end of a wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub node: String,
    pub interface: String,
}

impl Endpoint {
    pub fn new(node: &str, interface: &str) -> Self {
        Self {
            node: node.to_owned(),
            interface: interface.to_owned(),
        }
    }
}

impl fmt::Display for Endpoint {
    /// `node:interface`, as files write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.node, self.interface)
    }
}

/// A virtual wire between two interfaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Wire {
    pub a: Endpoint,
    pub b: Endpoint,
    pub params: WireParams,
}

/// How a wire behaves: [`WireConfig`] less what the topology supplies (the
/// MTU from the interfaces, the seed when none is given).
#[derive(Debug, Clone, PartialEq)]
pub struct WireParams {
    pub rate_bits_per_s: Option<u64>,
    pub delay: Duration,
    pub loss: f64,
    pub duplicate: f64,
    pub reorder: f64,
    pub reorder_delay: Duration,
    pub corrupt: f64,
    pub queue_frames: usize,
    /// `None`: derived from the topology's seed and the wire's index.
    pub seed: Option<u64>,
}

impl Default for WireParams {
    /// Those of [`WireConfig::default`]: unimpaired and unlimited.
    fn default() -> Self {
        let config = WireConfig::default();
        Self {
            rate_bits_per_s: config.rate_bits_per_s,
            delay: config.delay,
            loss: config.loss,
            duplicate: config.duplicate,
            reorder: config.reorder,
            reorder_delay: config.reorder_delay,
            corrupt: config.corrupt,
            queue_frames: config.queue_frames,
            seed: None,
        }
    }
}

impl WireParams {
    /// The wire configuration for a link of `mtu` seeded with `seed`.
    pub fn to_config(&self, mtu: usize, seed: u64) -> WireConfig {
        WireConfig {
            medium: Medium::Ethernet,
            mtu,
            rate_bits_per_s: self.rate_bits_per_s,
            delay: self.delay,
            loss: self.loss,
            duplicate: self.duplicate,
            reorder: self.reorder,
            reorder_delay: self.reorder_delay,
            corrupt: self.corrupt,
            queue_frames: self.queue_frames,
            seed,
            carries_gso: false,
        }
    }
}

/// The seed of wire `index` in a topology seeded with `seed`: SplitMix64
/// (Steele et al., 2014) of the `index + 1`-th step of its sequence, so
/// distinct for distinct wires and stable for a given seed.
pub fn derived_wire_seed(seed: u64, index: usize) -> u64 {
    crate::random::SplitMix64::nth(seed, index as u64)
}

/// The built-in default, `host-a — router — host-b`: topologies/default.toml.
const DEFAULT_NETWORK: &str = include_str!("../../../../topologies/default.toml");

const PRINTED_HEADER: &str = "\
# A stackscope topology (see `stack::topology` for every key).
# Wire keys: rate (\"100Mbit\"), delay (\"2ms\"), loss, duplicate, reorder,
# reorder_delay, corrupt (probabilities in [0, 1]), queue_frames, seed.

";

impl Topology {
    /// Validates a topology built in code.
    pub fn new(seed: u64, nodes: Vec<Node>, wires: Vec<Wire>) -> Result<Self, TopologyError> {
        Self::with_hubs(seed, nodes, Vec::new(), wires)
    }

    /// Validates a topology with hubs built in code.
    pub fn with_hubs(
        seed: u64,
        nodes: Vec<Node>,
        hubs: Vec<Hub>,
        wires: Vec<Wire>,
    ) -> Result<Self, TopologyError> {
        let unchecked = Self {
            seed,
            nodes,
            hubs,
            wires,
        };
        validate::validate(file::TopologyFile::from(&unchecked), None)
    }

    /// Reads and validates a topology file's text.
    pub fn from_toml_str(text: &str) -> Result<Self, TopologyError> {
        let size = text.len() as u64;
        if size > MAX_FILE_BYTES {
            return Err(TopologyError::TooLarge {
                size,
                max: MAX_FILE_BYTES,
            });
        }
        let file: file::TopologyFile = toml::from_str(text).map_err(|error| {
            let location = error
                .span()
                .map(|span| SourceLocation::of_offset(text, span.start));
            TopologyError::Parse {
                message: parse_message(text, error.message(), location),
                at: At(location),
            }
        })?;
        validate::validate(file, Some(text))
    }

    /// Reads a topology file, refusing one above [`MAX_FILE_BYTES`] without
    /// reading it all.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TopologyError> {
        let path = path.as_ref();
        let io_error = |error: std::io::Error| TopologyError::Io {
            path: path.to_owned(),
            message: error.to_string(),
        };
        let file = std::fs::File::open(path).map_err(io_error)?;
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(TopologyError::TooLarge {
                size: bytes.len() as u64,
                max: MAX_FILE_BYTES,
            });
        }
        let text = String::from_utf8(bytes).map_err(|_| TopologyError::Io {
            path: path.to_owned(),
            message: "not UTF-8 text".to_owned(),
        })?;
        Self::from_toml_str(&text)
    }

    /// The built-in default: `host-a — router — host-b`. The router
    /// advertises 2001:db8:a::/64 and 2001:db8:b::/64 and is 192.0.2.1/24
    /// and 198.51.100.1/24; the hosts are 192.0.2.10/24 and 198.51.100.10/24
    /// with the router as IPv4 default route. Wires are unimpaired.
    pub fn default_network() -> Self {
        Self::from_toml_str(DEFAULT_NETWORK).expect("the built-in default topology is valid")
    }

    /// The topology as a file, leaving out defaults; reading it back gives
    /// an equal topology.
    pub fn to_toml_string(&self) -> String {
        // Validated values are all representable in TOML (seeds fit in i64,
        // probabilities are finite).
        let body = toml::to_string(&file::TopologyFile::from(self))
            .expect("a validated topology is representable in TOML");
        format!("{PRINTED_HEADER}{body}")
    }

    /// Seeds the wires that name no seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Hosts first, then routers, each in file order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn wires(&self) -> &[Wire] {
        &self.wires
    }

    /// The hubs, in file order.
    pub fn hubs(&self) -> &[Hub] {
        &self.hubs
    }

    pub fn hub(&self, name: &str) -> Option<&Hub> {
        self.hubs.iter().find(|hub| hub.name == name)
    }

    /// Every node fragments as `mode` says (a recipe's stack variant).
    pub fn set_fragmentation(&mut self, mode: crate::iface::host::Fragmentation) {
        for node in &mut self.nodes {
            node.fragmentation = mode;
        }
    }

    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|node| node.name == name)
    }

    pub fn hosts(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|node| node.kind == NodeKind::Host)
    }

    pub fn routers(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(|node| node.kind == NodeKind::Router)
    }

    /// The interface an endpoint names.
    pub fn interface(&self, endpoint: &Endpoint) -> Option<&InterfaceSpec> {
        self.node(&endpoint.node)?.interface(&endpoint.interface)
    }

    /// The wire's interface end (a wire to a hub has one; others two): it
    /// gives the wire its MTU.
    fn interface_end(&self, wire: &Wire) -> Option<&InterfaceSpec> {
        self.interface(&wire.a).or_else(|| self.interface(&wire.b))
    }

    /// The index of the wire `endpoint` is on, if any.
    pub fn wire_of(&self, endpoint: &Endpoint) -> Option<usize> {
        self.wires
            .iter()
            .position(|wire| wire.a == *endpoint || wire.b == *endpoint)
    }

    /// The seed of wire `index`: its own, or [`derived_wire_seed`].
    pub fn wire_seed(&self, index: usize) -> Option<u64> {
        let wire = self.wires.get(index)?;
        Some(
            wire.params
                .seed
                .unwrap_or_else(|| derived_wire_seed(self.seed, index)),
        )
    }

    /// The configuration of wire `index`: its parameters, the MTU of its
    /// interfaces and its seed.
    pub fn wire_config(&self, index: usize) -> Option<WireConfig> {
        let wire = self.wires.get(index)?;
        let mtu = self.interface_end(wire)?.mtu;
        let mut config = wire.params.to_config(mtu, self.wire_seed(index)?);
        // A wire between two interfaces that both merge what they receive
        // (GRO) carries TSO's super-frames whole, as a veth pair does; one
        // to a hub, or to an interface without GRO, carries wire-sized
        // frames the sender's device stage cut.
        let gro = |end: &Endpoint| self.interface(end).is_some_and(|i| i.offload.gro);
        config.carries_gso = gro(&wire.a) && gro(&wire.b);
        Some(config)
    }

    /// Every wire with its configuration, in order.
    pub fn wire_configs(&self) -> impl Iterator<Item = (&Wire, WireConfig)> + '_ {
        self.wires
            .iter()
            .enumerate()
            .filter_map(|(index, wire)| Some((wire, self.wire_config(index)?)))
    }
}

/// toml's message, quoting the offending line so that it names the key.
fn parse_message(text: &str, message: &str, location: Option<SourceLocation>) -> String {
    let message = message.trim_end();
    let line = location.and_then(|location| text.lines().nth(location.line - 1));
    match line.map(str::trim) {
        Some(line) if !line.is_empty() => {
            let quoted: String = line.chars().take(80).collect();
            format!("{message}, in `{quoted}`")
        }
        _ => message.to_owned(),
    }
}

impl Node {
    pub fn interface(&self, name: &str) -> Option<&InterfaceSpec> {
        self.interfaces
            .iter()
            .find(|interface| interface.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_network_is_valid_and_prints_back() {
        let topology = Topology::default_network();
        let printed = topology.to_toml_string();
        assert_eq!(Topology::from_toml_str(&printed), Ok(topology), "{printed}");
    }

    #[test]
    fn derived_wire_seeds_differ_by_index_and_seed() {
        let seeds: Vec<u64> = (0..100).map(|index| derived_wire_seed(7, index)).collect();
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), seeds.len());
        assert_ne!(derived_wire_seed(7, 0), derived_wire_seed(8, 0));
        assert_eq!(derived_wire_seed(7, 3), derived_wire_seed(7, 3));
    }
}
